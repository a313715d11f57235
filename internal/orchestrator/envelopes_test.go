package orchestrator

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cadence-dev/cadence/internal/checkpoint"
)

// countHandler counts the files restoreEnvelopes says it rewrote.
type countHandler struct{ files *int64 }

func (h countHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h countHandler) Handle(_ context.Context, r slog.Record) error {
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "files" {
			*h.files = a.Value.Int64()
		}
		return true
	})
	return nil
}
func (h countHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h countHandler) WithGroup(string) slog.Handler      { return h }

// TestRestoreEnvelopesMany restores the envelope files of 300 succeeded
// units, a quarter of each missing, intact, emptied and overwritten by a
// stale envelope of the same size:
// every file ends as its row says (the envelope indented by two spaces,
// a newline after it), and exactly the damaged ones are counted as
// rewritten. A row whose envelope is not JSON fails the restore, naming
// the first such unit in order.
func TestRestoreEnvelopesMany(t *testing.T) {
	const n = 300
	dir := t.TempDir()
	units := make([]checkpoint.Step, n)
	want := make([]string, n)
	for i := range units {
		units[i] = checkpoint.Step{RunID: "r1", ID: fmt.Sprintf("s%03d", i),
			HandoffJSON: fmt.Appendf(nil, `{"component":"s%03d","data":{"n":%d}}`, i, i%10)}
		want[i] = fmt.Sprintf("{\n  \"component\": \"s%03d\",\n  \"data\": {\n    \"n\": %d\n  }\n}\n", i, i%10)
	}
	path := func(i int) string { return filepath.Join(dir, checkpoint.EnvelopePath(units[i].Unit())) }
	if err := os.MkdirAll(filepath.Dir(path(0)), 0o755); err != nil {
		t.Fatal(err)
	}
	damaged := 0
	for i := range units {
		var body string
		switch i % 4 {
		case 0:
			damaged++
			continue // missing
		case 1:
			body = want[i]
		case 2:
			damaged++
			body = ""
		case 3:
			damaged++
			body = strings.Replace(want[i], fmt.Sprint(i%10), fmt.Sprint((i+1)%10), 1) // same size, stale
		}
		if err := os.WriteFile(path(i), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var rewritten int64
	if err := restoreEnvelopes(slog.New(countHandler{&rewritten}), dir, units); err != nil {
		t.Fatalf("restoreEnvelopes: %v", err)
	}
	for i := range units {
		got, err := os.ReadFile(path(i))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, []byte(want[i])) {
			t.Errorf("%s holds %q, want %q", units[i].ID, got, want[i])
		}
	}
	if rewritten != int64(damaged) {
		t.Errorf("%d files reported rewritten, want %d", rewritten, damaged)
	}

	units[250].HandoffJSON = []byte(`{"component":`)
	units[170].HandoffJSON = []byte(`not json`)
	err := restoreEnvelopes(slog.New(slog.DiscardHandler), dir, units)
	if err == nil || !strings.Contains(err.Error(), "step s170") {
		t.Errorf("restoreEnvelopes with broken rows 170 and 250 = %v, want the error of step s170", err)
	}
}
