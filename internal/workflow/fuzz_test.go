package workflow

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// FuzzLoad: whatever the bytes, Load returns either a usable workflow or
// located errors, and never panics. The seeds are every workflow fixture
// (the graph's included) and the starter workflow. Files the fuzzed workflow names resolve against
// the fixture project.
func FuzzLoad(f *testing.F) {
	for _, pattern := range []string{"testdata/project/*.yaml", "testdata/project/errors/*.yaml", "testdata/graph/*.yaml", "testdata/graph/errors/*.yaml"} {
		paths, err := filepath.Glob(pattern)
		if err != nil {
			f.Fatal(err)
		}
		for _, p := range paths {
			b, err := os.ReadFile(p)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(b)
		}
	}
	f.Add(Template())
	f.Fuzz(func(t *testing.T, data []byte) {
		file := filepath.Join(t.TempDir(), "workflow.yaml")
		if err := os.WriteFile(file, data, 0o644); err != nil {
			t.Fatal(err)
		}
		w, err := Load(project, file)
		if err == nil {
			if w == nil || len(w.Steps) == 0 || w.Version != 1 {
				t.Fatalf("Load succeeded with %+v", w)
			}
			for _, s := range w.All() {
				var complete bool
				switch s.Kind {
				case KindAgent:
					complete = s.Template != nil && w.Agents[s.Agent] != nil && s.Retry.MaxAttempts >= 1
				case KindCommand:
					complete = s.Run != nil && len(s.Run.Templates) > 0 && s.Retry.MaxAttempts >= 1
				case KindLoop:
					complete = s.Loop != nil && len(s.Loop.Steps) > 0 && s.Loop.Until != nil && s.Loop.MaxIterations >= 1
				case KindApproval:
					complete = s.Approval != nil && s.Approval.Template != nil
				}
				if !complete {
					t.Fatalf("step %s incomplete: %+v", s.ID, s)
				}
				for _, a := range w.Ancestors(s.ID) {
					if a == s.ID {
						t.Fatalf("step %s is its own ancestor", s.ID)
					}
				}
			}
			if len(w.Order()) != len(w.Steps) {
				t.Fatalf("Order() has %d of %d steps", len(w.Order()), len(w.Steps))
			}
			return
		}
		var errs Errors
		if !errors.As(err, &errs) || len(errs) == 0 {
			t.Fatalf("Load = %v, want Errors", err)
		}
		for _, e := range errs {
			if e.Line < 1 || e.Column < 1 || e.Msg == "" || e.File != file {
				t.Fatalf("error without a location: %+v", e)
			}
		}
		_ = Changes(data, w2bytes(data))
	})
}

// w2bytes returns a copy, so Changes compares two distinct slices.
func w2bytes(b []byte) []byte { return append([]byte(nil), b...) }
