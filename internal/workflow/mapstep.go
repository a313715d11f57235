package workflow

import (
	"strings"

	"github.com/goccy/go-yaml/ast"
)

// Map makes a step run once per work item (SPEC §12).
type Map struct {
	// Exactly one source: ItemsStep with ItemsPointer (a JSON array in an
	// earlier step's handoff), or ItemsFile (a JSON array or JSON Lines).
	ItemsStep    string
	ItemsPointer string // JSON pointer into ItemsStep's handoff; "" is the whole handoff
	ItemsFile    string // relative to the project directory, cleaned; inside it
	// Key is a JSON pointer to each item's unique key; "" keys items by
	// their index.
	Key         string
	MaxParallel int    // items running at once (default 1)
	MaxFailures int    // items allowed to end dead-lettered before the step fails (default 0)
	Workspace   string // shared | worktree (default shared)
	Merge       bool   // worktree only: merge each succeeded item's branch back
}

// Workspace kinds of a map step.
const (
	WorkspaceShared   = "shared"
	WorkspaceWorktree = "worktree"
)

var workspaces = []string{WorkspaceShared, WorkspaceWorktree}

// MaxParallelLimit bounds max_parallel: each item may be an agent process
// of hundreds of MB.
const MaxParallelLimit = 256

// rawMap is a map: mapping as written.
type rawMap struct {
	itemsStep, itemsPointer, itemsFile field[string]
	itemsAt                            at
	key                                field[string]
	maxParallel, maxFailures           field[int]
	workspace                          field[string]
	merge                              field[bool]
	at                                 at
}

func (d *decoder) mapSection(e entry) *rawMap {
	r := &rawMap{at: e.keyAt()}
	d.fields(e.val, e.path, []string{"items", "key", "max_parallel", "max_failures", "workspace", "merge"}, func(e entry) {
		switch e.name {
		case "items":
			r.itemsAt = e.keyAt()
			if _, ok := unwrap(e.val).(*ast.MappingNode); !ok {
				d.fail(e.valAt(), "want {step: ID, pointer: /path} or {file: PATH}, got %s", describe(e.val))
				return
			}
			d.fields(e.val, e.path, []string{"step", "pointer", "file"}, func(e entry) {
				switch e.name {
				case "step":
					r.itemsStep = d.nonEmpty(e)
				case "pointer":
					r.itemsPointer = d.pointer(e)
				case "file":
					r.itemsFile = d.nonEmpty(e)
				}
			})
		case "key":
			r.key = d.pointer(e)
		case "max_parallel":
			r.maxParallel = d.integer(e, 1, MaxParallelLimit)
		case "max_failures":
			r.maxFailures = d.integer(e, 0, 1<<30)
		case "workspace":
			r.workspace = d.enum(e, workspaces)
		case "merge":
			r.merge = d.boolean(e)
		}
	})
	return r
}

// pointer decodes a JSON pointer (RFC 6901): "" or starting with "/".
func (d *decoder) pointer(e entry) field[string] {
	s := d.str(e)
	if s.set && s.v != "" && !strings.HasPrefix(s.v, "/") {
		d.fail(s.at, "invalid JSON pointer %q (want \"\" or a path starting with /, such as /tasks)", s.v)
		return field[string]{}
	}
	return s
}

// buildMap checks a step's map: section; c checks that the step may read
// the items' source step, one of its ancestors.
func (l *loader) buildMap(r *rawMap, s *Step, c *refChecker) *Map {
	m := &Map{
		ItemsStep: r.itemsStep.v, ItemsPointer: r.itemsPointer.v, Key: r.key.v,
		MaxParallel: r.maxParallel.get(1), MaxFailures: r.maxFailures.get(0),
		Workspace: r.workspace.get(WorkspaceShared), Merge: r.merge.get(false),
	}
	itemsAt := r.itemsAt
	if itemsAt.line == 0 {
		itemsAt = r.at
	}
	switch {
	case r.itemsStep.set && r.itemsFile.set:
		l.fail(r.itemsFile.at, "items has both step and file (want one source)")
	case r.itemsStep.set:
		c.errs = c.errs[:0]
		if !c.readStep(r.itemsStep.v, "items come from") {
			l.fail(r.itemsStep.at, "%s", c.errs[0])
		}
	case r.itemsFile.set:
		if r.itemsPointer.set {
			l.fail(r.itemsPointer.at, "pointer is only used with items from a step")
		}
		if rel, _, ok := l.file(r.itemsFile, false); ok {
			m.ItemsFile = rel
		}
	case !l.hasErrorAt(itemsAt.key) && !l.hasErrorAt(itemsAt.key+".step") && !l.hasErrorAt(itemsAt.key+".file"):
		l.fail(itemsAt, "missing items (want {step: ID, pointer: /path} or {file: PATH})")
	}
	if s.Handoff.From == "file" && m.MaxParallel > 1 && m.Workspace == WorkspaceShared {
		l.fail(r.at, "items running at once in a shared workspace would write the same handoff file %s (use max_parallel: 1, workspace: worktree or from: stdout)", s.Handoff.Path)
	}
	if r.merge.set && r.merge.v && m.Workspace != WorkspaceWorktree {
		l.fail(r.merge.at, "merge needs workspace: worktree")
	}
	return m
}
