package main

import (
	"bytes"
	"errors"
	"log/slog"
	"testing"
)

// TestWarnHandler: a log record among the human output is one line in the
// words of cadence check's warnings, its values cleaned of terminal
// control codes, and records below warning are dropped.
func TestWarnHandler(t *testing.T) {
	for _, tc := range []struct {
		name string
		log  func(l *slog.Logger)
		want string
	}{
		{"message only", func(l *slog.Logger) { l.Warn("the state file is gone; stopping") },
			"cadence: warning: the state file is gone; stopping\n"},
		{"attributes", func(l *slog.Logger) {
			l.Warn("could not renew a lease; trying again", "lease", "run/fix/a", "err", errors.New("connection refused"))
		}, "cadence: warning: could not renew a lease; trying again (lease run/fix/a, err connection refused)\n"},
		{"an error", func(l *slog.Logger) { l.Error("boom") }, "cadence: error: boom\n"},
		{"with attributes and a group", func(l *slog.Logger) { l.With("run", "r1").WithGroup("g").Warn("w", "k", 1) },
			"cadence: warning: w (run r1, g.k 1)\n"},
		{"escape codes from an agent", func(l *slog.Logger) { l.Warn("step output not written", "step", "a\x1b]0;pwned\x07b\x1b[31m") },
			"cadence: warning: step output not written (step ab)\n"},
		{"below warning", func(l *slog.Logger) { l.Info("noise"); l.Debug("more") }, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			tc.log(slog.New(newWarnHandler(&buf, slog.LevelWarn)))
			if buf.String() != tc.want {
				t.Fatalf("got %q, want %q", buf.String(), tc.want)
			}
		})
	}
}
