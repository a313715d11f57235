package orchestrator

import (
	"path/filepath"
	"strconv"

	"github.com/cadence-dev/cadence/internal/checkpoint"
)

// mapItem is one work item of a map step as it was frozen when the step
// started (SPEC §12). A nil *mapItem stands for a step that runs once; the
// attempt machinery serves both alike.
type mapItem struct {
	key   string
	value any // the item, decoded
	// dir is the key made safe as one file name: the key may come from an
	// agent's handoff, and no path under .cadence/ is derived from agent
	// output as it is.
	dir string
	// workdir is the directory the item's agent and checks run in: its git
	// worktree, or "" for the project directory.
	workdir string
}

// unitOf names the unit a step or one of its items is.
func unitOf(runID, stepID string, it *mapItem) checkpoint.Unit {
	u := checkpoint.Unit{RunID: runID, StepID: stepID}
	if it != nil {
		u.Item = it.key
	}
	return u
}

// unit is the unit of the attempt.
func (t *try) unit() checkpoint.Unit { return unitOf(t.run.ID, t.ws.ID, t.item) }

// unitDir is the directory of a unit's files under base (attempts,
// failed_handoffs): base/RUN/STEP for a step, base/RUN/STEP/KEY for an
// item.
func (p *project) unitDir(base, runID, stepID string, it *mapItem) string {
	return checkpoint.UnitDir(p.dir, base, unitOf(runID, stepID, it))
}

// envelopePath is where a unit's accepted handoff is written:
// handoffs/RUN/STEP.json for a step, handoffs/RUN/STEP/KEY.json for an
// item.
func (p *project) envelopePath(runID, stepID string, it *mapItem) string {
	return filepath.Join(p.dir, checkpoint.EnvelopePath(unitOf(runID, stepID, it)))
}

// workDir is where an attempt's agent and checks run.
func (p *project) workDir(it *mapItem) string {
	if it != nil && it.workdir != "" {
		return it.workdir
	}
	return p.dir
}

// itemIndexKey is the key of an item keyed by its position (no key:).
func itemIndexKey(i int) string { return strconv.Itoa(i) }

// itemKey is the key of an item, "" for a step.
func itemKey(it *mapItem) string {
	if it == nil {
		return ""
	}
	return it.key
}

// unitLabel names a unit in messages: "step fix" or "item 7 of step fix".
func unitLabel(u checkpoint.Unit) string {
	if u.Item == "" {
		return "step " + u.StepID
	}
	return "item " + strconv.Quote(u.Item) + " of step " + u.StepID
}
