package report

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/cadence-dev/cadence/internal/handoff"
)

// maxRecordBytes bounds how much of one failed-handoff record is read. A
// record holds a diagnosis, a 500-byte output sample and a follow-up
// prompt; one larger than this is not one cadence wrote, and is skipped.
const maxRecordBytes = 1 << 20

// errRecordTooLarge reports a record over maxRecordBytes.
var errRecordTooLarge = errors.New("failed-handoff record too large")

// readRecord reads the failed-handoff record an attempt names, rel being
// its path relative to the project directory as stored in the state
// database (".cadence/failed_handoffs/RUN/STEP/N.json"). A path that would
// leave the project's .cadence directory is refused rather than followed.
func readRecord(dir, rel string) (*handoff.FailedRecord, error) {
	clean := filepath.Clean(filepath.FromSlash(rel))
	if !filepath.IsLocal(clean) || !strings.HasPrefix(filepath.ToSlash(clean), ".cadence/") {
		return nil, fmt.Errorf("failed-handoff record %q is not under .cadence/", rel)
	}
	f, err := os.Open(filepath.Join(dir, clean))
	if err != nil {
		return nil, fmt.Errorf("read failed-handoff record: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxRecordBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read failed-handoff record %s: %w", rel, err)
	}
	if len(b) > maxRecordBytes {
		return nil, fmt.Errorf("%w: %s is over %d bytes", errRecordTooLarge, rel, maxRecordBytes)
	}
	var rec handoff.FailedRecord
	if err := json.Unmarshal(b, &rec); err != nil {
		return nil, fmt.Errorf("decode failed-handoff record %s: %w", rel, err)
	}
	return &rec, nil
}
