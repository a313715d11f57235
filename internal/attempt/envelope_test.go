package attempt

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cadence-dev/cadence/internal/checkpoint"
	"github.com/cadence-dev/cadence/internal/handoff"
	"github.com/cadence-dev/cadence/internal/jsonvalue"
	"github.com/cadence-dev/cadence/internal/workflow"
)

// The envelope file WriteEnvelope writes is exactly what RestoreEnvelope
// makes of the envelope as its row stores it (json.Marshal of the same
// envelope): a resume after a clean stop rewrites nothing, and the file
// reads back as the envelope.
func TestWriteEnvelopeMatchesTheRow(t *testing.T) {
	r := &Runner{Dir: t.TempDir()}
	for _, in := range []*Instance{
		{Run: &checkpoint.Run{ID: "r1"}, Step: &workflow.Step{ID: "plan"}},
		{Run: &checkpoint.Run{ID: "r1"}, Step: &workflow.Step{ID: "fan"}, Item: NewItem("a/../b", "x")},
		{Run: &checkpoint.Run{ID: "r1"}, Step: &workflow.Step{ID: "fix"}, Path: "loop/2/fix", Iteration: 2},
	} {
		env := handoff.Envelope{Component: in.Step.ID, SessionID: "s-1", Timestamp: time.Date(2026, 11, 27, 15, 0, 0, 123456789, time.UTC),
			Status: "success", Data: json.RawMessage(`{"ok": true, "list": [1, 2.50, "é\u00e9"], "nested": {"k": null}}`),
			Metadata: handoff.EnvelopeMetadata{Attempts: 2, Repairs: []string{"trailing comma"}, PreviousErrors: []string{"schema: ok missing"}, CostUSD: 0.25}}
		if err := r.WriteEnvelope(in, env); err != nil {
			t.Fatal(err)
		}
		row, err := json.Marshal(env)
		if err != nil {
			t.Fatal(err)
		}
		rewrote, err := RestoreEnvelope(r.Dir, in.Unit(), row)
		if err != nil || rewrote {
			t.Fatalf("%s: RestoreEnvelope after WriteEnvelope: rewrote %v, %v", in.Label(), rewrote, err)
		}
		b, err := os.ReadFile(filepath.Join(r.Dir, checkpoint.EnvelopePath(in.Unit())))
		if err != nil {
			t.Fatal(err)
		}
		indented, err := json.MarshalIndent(env, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != string(indented)+"\n" {
			t.Errorf("%s: the file is not the envelope indented:\n%s\nwant\n%s", in.Label(), b, indented)
		}
		var back handoff.Envelope
		if err := json.Unmarshal(b, &back); err != nil || back.Component != in.Step.ID || !back.Timestamp.Equal(env.Timestamp) {
			t.Errorf("%s: read back %+v, %v", in.Label(), back, err)
		}
	}
}

// RestoreEnvelope rewrites the file of a succeeded unit whatever a power
// cut or a person left at its path, and nothing else.
func TestRestoreEnvelope(t *testing.T) {
	row := []byte(`{"component":"plan","timestamp":"2026-11-27T15:00:00Z","status":"success","data":{"n":1},"metadata":{"attempts":1}}`)
	want := "{\n  \"component\": \"plan\",\n  \"timestamp\": \"2026-11-27T15:00:00Z\",\n  \"status\": \"success\",\n  \"data\": {\n    \"n\": 1\n  },\n" +
		"  \"metadata\": {\n    \"attempts\": 1\n  }\n}\n"
	u := checkpoint.Unit{RunID: "r1", StepID: "plan"}
	tests := []struct {
		name    string
		row     []byte
		before  func(path string) error // what is at the path before
		rewrote bool
		want    string // the file after; "" for no file
		wantErr bool
	}{
		{name: "missing", row: row, before: func(string) error { return nil }, rewrote: true, want: want},
		{name: "empty, its name made durable without its data", row: row, rewrote: true, want: want,
			before: func(p string) error { return os.WriteFile(p, nil, 0o644) }},
		{name: "an earlier envelope of the same length", row: row, rewrote: true, want: want,
			before: func(p string) error { return os.WriteFile(p, []byte(want[:len(want)-4]+"2 }\n"), 0o644) }},
		{name: "half of it", row: row, rewrote: true, want: want,
			before: func(p string) error { return os.WriteFile(p, []byte(want[:40]), 0o644) }},
		// A directory cannot be renamed over: an error naming the unit,
		// not a panic and not a silent success.
		{name: "a directory in its place", row: row, wantErr: true,
			before: func(p string) error { return os.Mkdir(p, 0o755) }},
		{name: "already the row's", row: row, rewrote: false, want: want,
			before: func(p string) error { return os.WriteFile(p, []byte(want), 0o644) }},
		{name: "no envelope stored", row: nil, rewrote: false, want: "", before: func(string) error { return nil }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &Runner{Dir: t.TempDir()}
			path := filepath.Join(r.Dir, checkpoint.EnvelopePath(u))
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := tt.before(path); err != nil {
				t.Fatal(err)
			}
			rewrote, err := RestoreEnvelope(r.Dir, u, tt.row)
			if tt.wantErr {
				if err == nil || !strings.Contains(err.Error(), UnitLabel(u)) {
					t.Fatalf("err = %v, want an error naming %s", err, UnitLabel(u))
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if rewrote != tt.rewrote {
				t.Errorf("rewrote = %v, want %v", rewrote, tt.rewrote)
			}
			b, err := os.ReadFile(path)
			if tt.want == "" {
				if !os.IsNotExist(err) {
					t.Errorf("a file was written for a unit with no envelope: %q, %v", b, err)
				}
				return
			}
			if err != nil || string(b) != tt.want {
				t.Errorf("file = %q, %v; want %q", b, err, tt.want)
			}
			entries, _ := os.ReadDir(filepath.Dir(path))
			if len(entries) != 1 {
				t.Errorf("temporary files left beside it: %v", entries)
			}
		})
	}
}

// A stored envelope that is not JSON is reported with the unit, and no
// file is written from it.
func TestRestoreEnvelopeBadRow(t *testing.T) {
	r := &Runner{Dir: t.TempDir()}
	u := checkpoint.Unit{RunID: "r1", StepID: "fan", Item: "k"}
	_, err := RestoreEnvelope(r.Dir, u, []byte(`{"component": "fan", "data": `))
	if err == nil {
		t.Fatal("a cut-short stored envelope was restored")
	}
	if want := UnitLabel(u); !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not name %s", err, want)
	}
	if _, err := os.Stat(filepath.Join(r.Dir, checkpoint.EnvelopePath(u))); !os.IsNotExist(err) {
		t.Errorf("a file was written from a bad row: %v", err)
	}
}

// TestEnvelopeData: the data of a stored envelope, decoded as templates
// read it (objects and arrays wrapped, numbers exact), whatever else the
// envelope holds; a row that is not an envelope is an error.
func TestEnvelopeData(t *testing.T) {
	tests := []struct {
		name    string
		row     string
		want    string // the value marshalled back; "" for nil
		wantErr bool
	}{
		{name: "no envelope", row: ""},
		{name: "an object", row: `{"component":"a","timestamp":"2026-11-27T15:00:00Z","data":{"n":12345678901234567890,"s":"x"},"metadata":{"attempts":2}}`,
			want: `{"n":12345678901234567890,"s":"x"}`},
		{name: "an array", row: `{"data":[1,"two",null]}`, want: `[1,"two",null]`},
		{name: "a string", row: `{"data":"done"}`, want: `"done"`},
		{name: "null", row: `{"data":null}`, want: "null"},
		{name: "other fields of any shape", row: `{"timestamp":"not a time","metadata":[1],"data":{"ok":true}}`, want: `{"ok":true}`},
		{name: "no data", row: `{"component":"a"}`, wantErr: true},
		{name: "cut short", row: `{"data":{"n":`, wantErr: true},
		{name: "not JSON", row: `data: 1`, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, err := EnvelopeData([]byte(tt.row))
			if tt.wantErr {
				if err == nil {
					t.Fatalf("EnvelopeData = %v, want an error", v)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tt.want == "" {
				if v != nil {
					t.Fatalf("EnvelopeData = %v, want nil", v)
				}
				return
			}
			b, err := jsonvalue.Marshal(v)
			if err != nil || string(b) != tt.want {
				t.Fatalf("EnvelopeData = %s (%v), want %s", b, err, tt.want)
			}
			if obj, ok := v.(map[string]any); ok {
				t.Fatalf("an object was left a plain map: %v", obj)
			}
		})
	}
}
