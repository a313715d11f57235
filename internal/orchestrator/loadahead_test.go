package orchestrator

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestLoadAhead starts the load a resume begins before it has chosen its
// workflow, then asks open's question with the file it chose: the load
// ahead is taken only when it is the same file named the same way, and
// what it found (a broken default file) never shows when another file was
// chosen.
func TestLoadAhead(t *testing.T) {
	dir := writeProject(t, map[string]string{
		".cadence/workflow.yaml": "version: 1\nname: default\nsteps:\n  - {id: a, run: [/bin/true]}\n",
		".cadence/other.yaml":    "version: 1\nname: other\nsteps:\n  - {id: b, run: [/bin/true]}\n",
		".cadence/broken.yaml":   "version: 1\nsteps:\n  - {id: a, run: [/bin/true], needs: [zz]}\n",
	})
	abs := func(name string) string { return filepath.Join(dir, ".cadence", name) }
	tests := []struct {
		name          string
		given, chosen string // WorkflowPath before and after chooseWorkflow
		wantName      string // the loaded workflow's name
		wantErr       string
		taken         bool // the workflow loaded ahead is the one returned
	}{
		{"the run's file is the default", "", abs("workflow.yaml"), "default", "", true},
		{"the run's file is another", "", abs("other.yaml"), "other", "", false},
		{"no run found: the default, named relatively", "", "", "default", "", false},
		{"--workflow given", abs("other.yaml"), abs("other.yaml"), "other", "", true},
		{"a broken file chosen", abs("broken.yaml"), abs("broken.yaml"), "", `unknown step "zz"`, false},
		{"a broken default, another file chosen", abs("broken.yaml"), abs("other.yaml"), "other", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := startLoadAhead(Options{Dir: dir, WorkflowPath: tt.given})
			if a == nil {
				t.Fatal("no load ahead")
			}
			<-a.done
			wf, err := a.load(dir, Options{Dir: dir, WorkflowPath: tt.chosen})
			switch {
			case tt.wantErr != "":
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("load = %v, want an error with %q", err, tt.wantErr)
				}
			case err != nil:
				t.Fatalf("load: %v", err)
			case wf.Name != tt.wantName:
				t.Errorf("loaded workflow %q, want %q", wf.Name, tt.wantName)
			}
			if taken := wf != nil && wf == a.wf; err == nil && taken != tt.taken {
				t.Errorf("load ahead taken: %v, want %v", taken, tt.taken)
			}
		})
	}
	var none *loadAhead
	if wf, err := none.load(dir, Options{Dir: dir}); err != nil || wf.Name != "default" {
		t.Errorf("without a load ahead: %v, %v; want the default workflow", wf, err)
	}
}
