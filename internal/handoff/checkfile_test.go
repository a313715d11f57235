package handoff

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCheckFile(t *testing.T) {
	plan := mustSchema(t, "plan.json")
	tests := []struct {
		name  string
		setup func(t *testing.T, dir string) string // returns the handoff path
		opts  Options
		class Class // "" when the handoff is accepted
		want  string
	}{
		{"valid file", func(t *testing.T, dir string) string {
			return write(t, dir, "out.json", planJSON+"\n")
		}, Options{}, "", "the handoff file is read and accepted"},
		{"missing", func(t *testing.T, dir string) string {
			return filepath.Join(dir, "out.json")
		}, Options{}, ClassMissing, "does not exist"},
		{"symbolic link", func(t *testing.T, dir string) string {
			target := write(t, t.TempDir(), "elsewhere.json", planJSON)
			link := filepath.Join(dir, "out.json")
			if err := os.Symlink(target, link); err != nil {
				t.Fatal(err)
			}
			return link
		}, Options{}, ClassMissing, "symbolic link"},
		{"directory", func(t *testing.T, dir string) string {
			p := filepath.Join(dir, "out.json")
			if err := os.Mkdir(p, 0o755); err != nil {
				t.Fatal(err)
			}
			return p
		}, Options{}, ClassMissing, "not a regular file"},
		{"empty file", func(t *testing.T, dir string) string {
			return write(t, dir, "out.json", "")
		}, Options{}, ClassEmpty, "is empty"},
		{"over max_bytes", func(t *testing.T, dir string) string {
			return write(t, dir, "out.json", planJSON)
		}, Options{MaxBytes: 16}, ClassTooLarge, "over the limit of 16 bytes"},
		{"repairable content", func(t *testing.T, dir string) string {
			return write(t, dir, "out.json", "{'tasks': [{'id': 't1', 'title': 'Write the parser'}], 'success': True}")
		}, Options{Repair: true}, "", "repaired"},
		{"schema failure names the file", func(t *testing.T, dir string) string {
			return write(t, dir, "out.json", `{"success": true}`)
		}, Options{}, ClassSchema, "tasks"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := tt.setup(t, t.TempDir())
			r := CheckFile(path, plan, tt.opts)
			if tt.class == "" {
				wantOK(t, r, planJSON)
				return
			}
			d := wantClass(t, r, tt.class)
			if !strings.Contains(d.Details, tt.want) {
				t.Errorf("Details %q do not contain %q", d.Details, tt.want)
			}
			if d.Path != path {
				t.Errorf("Path = %q, want %q", d.Path, path)
			}
		})
	}
}

// write creates a file in dir and returns its path.
func write(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}
