package checkpoint

// InsertStep adds one step to an existing run: a step that a changed
// workflow added, accepted by `resume --allow-changed`.
func (t *Tx) InsertStep(s Step) error { return t.insertStep(s) }
