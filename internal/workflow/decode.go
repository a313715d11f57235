package workflow

import "fmt"

// Decode reads a workflow file as stored with a run, without reading the
// files it names (prompt files, schemas, scenarios), which may have changed
// or gone since. It is how `resume --allow-changed` learns what the run was
// started with, to apply only what changed.
func Decode(raw []byte) (*Workflow, error) {
	w, errs := build(raw, "stored workflow", "")
	if len(errs) > 0 {
		return nil, fmt.Errorf("decode the stored workflow: %w", errs)
	}
	return w, nil
}
