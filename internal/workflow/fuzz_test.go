package workflow

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// FuzzLoad: whatever the bytes, Load returns either a usable workflow or
// located errors, and never panics. The seeds are every workflow fixture
// and the starter workflow. Files the fuzzed workflow names resolve against
// the fixture project.
func FuzzLoad(f *testing.F) {
	for _, pattern := range []string{"testdata/project/*.yaml", "testdata/project/errors/*.yaml"} {
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
			for _, s := range w.Steps {
				if s.Template == nil || w.Agents[s.Agent] == nil || s.Retry.MaxAttempts < 1 {
					t.Fatalf("step %s incomplete: %+v", s.ID, s)
				}
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
