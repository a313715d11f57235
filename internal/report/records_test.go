package report

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cadence-dev/cadence/internal/handoff"
)

// TestReadRecord checks that a record is read only from under .cadence/ and
// only up to maxRecordBytes.
func TestReadRecord(t *testing.T) {
	dir := t.TempDir()
	writeRecord(t, dir, ".cadence/failed_handoffs/r/s/1.json", handoff.FailedRecord{FollowupPrompt: "fix it"})
	big := filepath.Join(dir, ".cadence", "failed_handoffs", "r", "s", "2.json")
	if err := os.WriteFile(big, []byte(`{"followup_prompt": "`+strings.Repeat("x", maxRecordBytes)+`"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "secret.json"), []byte(`{"followup_prompt": "secret"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		rel      string
		followup string
		err      string
	}{
		{".cadence/failed_handoffs/r/s/1.json", "fix it", ""},
		{".cadence/failed_handoffs/r/s/2.json", "", "too large"},
		{".cadence/failed_handoffs/r/s/3.json", "", "no such file"},
		{"secret.json", "", "not under .cadence/"},
		{".cadence/../secret.json", "", "not under .cadence/"},
		{"../outside.json", "", "not under .cadence/"},
		{filepath.Join(dir, "secret.json"), "", "not under .cadence/"},
	}
	for _, tc := range tests {
		rec, err := readRecord(dir, tc.rel)
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("%s: %v", tc.rel, err)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s: error %v, want one saying %q", tc.rel, err, tc.err)
		case tc.err == "" && rec.FollowupPrompt != tc.followup:
			t.Errorf("%s: follow-up %q, want %q", tc.rel, rec.FollowupPrompt, tc.followup)
		}
		if tc.err == "too large" && !errors.Is(err, errRecordTooLarge) {
			t.Errorf("%s: error %v is not errRecordTooLarge", tc.rel, err)
		}
	}
}

// TestUnreadableRecordKeepsStoredDiagnosis checks that a failed attempt
// whose record is gone still shows the diagnosis stored in the database.
func TestUnreadableRecordKeepsStoredDiagnosis(t *testing.T) {
	out := render(t, smallRun(), Options{Dir: t.TempDir()})
	if !strings.Contains(out, `<pre class="diagnosis">stored diagnosis</pre>`) {
		t.Error("the stored diagnosis is not shown when the record cannot be read")
	}
}
