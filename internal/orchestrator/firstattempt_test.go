package orchestrator

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// TestBeforeFirstAttempt runs real command steps, each creating a file
// of its own, and checks that Options.BeforeFirstAttempt is called once
// per process, before any step's process ran (no file exists yet), also
// when steps start side by side.
func TestBeforeFirstAttempt(t *testing.T) {
	for _, tt := range []struct {
		name  string
		steps string
		files []string
	}{
		{
			name:  "a chain",
			steps: "  - {id: a, run: [\"touch\", \"a.done\"]}\n  - {id: b, needs: [a], run: [\"touch\", \"b.done\"]}\n",
			files: []string{"a.done", "b.done"},
		},
		{
			name:  "three steps at once",
			steps: "  - {id: a, run: [\"touch\", \"a.done\"]}\n  - {id: b, needs: [], run: [\"touch\", \"b.done\"]}\n  - {id: c, needs: [], run: [\"touch\", \"c.done\"]}\n",
			files: []string{"a.done", "b.done", "c.done"},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := writeProject(t, map[string]string{".cadence/workflow.yaml": "version: 1\nsteps:\n" + tt.steps})
			var (
				mu    sync.Mutex
				calls int
				seen  []string // files that existed at a call
			)
			hook := func() {
				mu.Lock()
				defer mu.Unlock()
				calls++
				for _, f := range tt.files {
					if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
						seen = append(seen, f)
					}
				}
			}
			res, err := Run(context.Background(), Options{Dir: dir, SelfExe: selfExe(t), BeforeFirstAttempt: hook,
				Env: append(os.Environ(), "GORACE=atexit_sleep_ms=0")})
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != StatusSucceeded {
				t.Fatalf("run ended %v (%s), want succeeded", res.Status, res.Message)
			}
			for _, f := range tt.files {
				if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
					t.Errorf("step's file %s: %v", f, err)
				}
			}
			if calls != 1 || len(seen) > 0 {
				t.Errorf("BeforeFirstAttempt called %d times, with %v already made; want once, before any step ran", calls, seen)
			}
		})
	}
}
