package attempt

import (
	"path/filepath"
	"strconv"

	"github.com/cadence-dev/cadence/internal/checkpoint"
	"github.com/cadence-dev/cadence/internal/workflow"
)

// Instance is one step instance: the unit of work that attempts belong to
// and the run loop schedules. Its identity is its unit (Unit): the run,
// the step's path and, for a map item, the item's key. Everything an
// attempt needs to know about the work travels in this one value.
type Instance struct {
	Run  *checkpoint.Run
	Step *workflow.Step
	// Path names the step's place in the workflow, and so its rows: the
	// step's id for a step of the workflow's top level; for a step inside
	// a loop, LOOP/ITERATION/STEP, so that each iteration of the loop has
	// rows, counts and files of its own. "" means Step.ID.
	Path string
	// Iteration is the loop iteration the instance runs in, from 1; 0
	// outside a loop.
	Iteration int
	// Previous are the outputs of the previous iteration's inner steps,
	// as .Loop.Previous.ID.Output; nil in a loop's first iteration and
	// outside a loop.
	Previous map[string]any
	// Item is the map item the instance works on; nil for a step that runs
	// once.
	Item *Item
	// Outputs are the outputs of the finished steps its templates may
	// read, as .Steps.ID.Output.
	Outputs map[string]any
	// Inputs are the run's input values (SPEC §16.1), as .Inputs.NAME.
	Inputs map[string]any
	// State, when set, is the instance's committed state, read by the
	// caller in the transaction that claimed it (ReadState) with nothing
	// committed to the instance since: Runner.Run decides its next
	// attempt from it instead of reading it again, once.
	State *State
}

// Item is one work item of a map step as it was frozen when the step
// started (SPEC §12).
type Item struct {
	Key   string
	Value any // the item, decoded
	// Dir is the key made safe as one file name (checkpoint.SafeName): the
	// key may come from an agent's handoff, and no path under .cadence/ or
	// branch name is derived from agent output as it is.
	Dir string
	// Workdir is the directory the item's agent and checks run in: its git
	// worktree, or "" for the project directory.
	Workdir string
}

// NewItem is the item with the key and value.
func NewItem(key string, value any) *Item {
	return &Item{Key: key, Value: value, Dir: checkpoint.SafeName(key)}
}

// StepPath is the path of the instance's step (Instance.Path).
func (in *Instance) StepPath() string {
	if in.Path != "" {
		return in.Path
	}
	return in.Step.ID
}

// Unit names the instance's rows in the store.
func (in *Instance) Unit() checkpoint.Unit {
	u := checkpoint.Unit{RunID: in.Run.ID, StepID: in.StepPath()}
	if in.Item != nil {
		u.Item = in.Item.Key
	}
	return u
}

// ItemKey is the key of the instance's item, "" for a step.
func (in *Instance) ItemKey() string {
	if in.Item == nil {
		return ""
	}
	return in.Item.Key
}

// Label names the instance in messages: "step fix" or "item 7 of step
// fix".
func (in *Instance) Label() string { return UnitLabel(in.Unit()) }

// UnitLabel names a unit in messages: "step fix" or "item 7 of step fix".
func UnitLabel(u checkpoint.Unit) string {
	if u.Item == "" {
		return "step " + u.StepID
	}
	return "item " + strconv.Quote(u.Item) + " of step " + u.StepID
}

// unitDir is the directory of the instance's files under base (attempts,
// failed_handoffs).
func (r *Runner) unitDir(base string, in *Instance) string {
	return checkpoint.UnitDir(r.Dir, base, in.Unit())
}

// envelopePath is where the instance's accepted handoff is written.
func (r *Runner) envelopePath(in *Instance) string {
	return filepath.Join(r.Dir, checkpoint.EnvelopePath(in.Unit()))
}

// WorkDir is where the instance's agent and checks run: its item's
// worktree, or the project directory.
func (r *Runner) WorkDir(in *Instance) string {
	if in.Item != nil && in.Item.Workdir != "" {
		return in.Item.Workdir
	}
	return r.Dir
}

// WithItem is the instance of item it of the map step in is.
func (in *Instance) WithItem(it *Item) *Instance {
	c := *in
	c.Item = it
	return &c
}
