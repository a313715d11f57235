package orchestrator

import (
	"path/filepath"

	"github.com/cadence-dev/cadence/internal/workflow"
)

// loadAhead is a load of a workflow file started before the command knows
// that it is the file it needs: a resume first reads the state to find
// which workflow its run was started from (chooseWorkflow), which on a
// machine with a core to spare need not wait for the file that is almost
// always the answer to be loaded.
type loadAhead struct {
	path string        // the WorkflowPath it loads
	done chan struct{} // closed when wf and err are set
	wf   *workflow.Workflow
	err  error
}

// startLoadAhead starts loading the file a resume with options o most
// likely continues: the one o names, or else the project's default
// workflow file under the absolute path chooseWorkflow gives it when the
// run it finds was started from that file. It returns nil when the
// project directory cannot be made absolute (open reports that).
func startLoadAhead(o Options) *loadAhead {
	path := o.WorkflowPath
	if path == "" {
		dir, err := filepath.Abs(o.Dir)
		if err != nil {
			return nil
		}
		path = filepath.Join(dir, filepath.FromSlash(workflow.DefaultPath))
	}
	a := &loadAhead{path: path, done: make(chan struct{})}
	go func() {
		defer close(a.done)
		// What open would load: the same directory argument (open makes
		// it absolute too) and path.
		a.wf, a.err = workflow.Load(o.Dir, path)
	}()
	return a
}

// load returns the workflow open loads for options o: the one loaded
// ahead when it is the same file, named the same way; otherwise it loads
// it now. Nothing the load ahead did is visible when it is not used.
func (a *loadAhead) load(dir string, o Options) (*workflow.Workflow, error) {
	if a != nil && o.WorkflowPath == a.path {
		<-a.done
		return a.wf, a.err
	}
	return workflow.Load(dir, o.WorkflowPath)
}
