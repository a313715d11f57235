package sim

import (
	"encoding/json"
	"fmt"
	"os"
)

// LedgerRecord is one line of the ledger: a real execution of the simulated
// agent, written before it acts so that it is counted even if then killed.
type LedgerRecord struct {
	Step      string `json:"step"`
	Item      string `json:"item,omitempty"` // the map item's key, for an item's attempt
	Attempt   int    `json:"attempt"`
	SessionID string `json:"session_id"`
	Resume    bool   `json:"resume"`
	PID       int    `json:"pid"`
	// PGID is the process group the sim runs in: the group cadence made
	// for the attempt, whose leader's pid cadence records.
	PGID   int    `json:"pgid"`
	Time   string `json:"time"` // RFC 3339 with nanoseconds, UTC
	Prompt string `json:"prompt"`
}

// appendLedger appends rec as one JSON line and syncs it to disk. O_APPEND
// keeps lines whole when several agents share a ledger.
func appendLedger(path string, rec LedgerRecord) error {
	line, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("encode ledger record: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("open ledger: %w", err)
	}
	if _, err := f.Write(append(line, '\n')); err != nil {
		_ = f.Close()
		return fmt.Errorf("write ledger %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		_ = f.Close()
		return fmt.Errorf("sync ledger %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("close ledger %s: %w", path, err)
	}
	return nil
}
