package sim

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/goccy/go-yaml"
)

// Scenario scripts the simulated agent: for each step id, what to do on each
// attempt. Attempts past the end of a list reuse its last entry.
type Scenario struct {
	Steps map[string][]Entry `yaml:"steps"`
}

// Entry is what the simulated agent does on one attempt. Kinds combine where
// that is natural: Sleep then Answer, WriteFile plus Answer, Help then Answer,
// StdoutBytes of filler before the answer.
type Entry struct {
	// Answer is the final result text (it may be broken JSON, prose, …).
	Answer string `yaml:"answer"`
	// CostUSD, Turns and the token counts are reported in the result.
	CostUSD      float64 `yaml:"cost_usd"`
	Turns        int     `yaml:"turns"`
	InputTokens  int64   `yaml:"input_tokens"`
	OutputTokens int64   `yaml:"output_tokens"`

	// WriteFile is written to CADENCE_HANDOFF_PATH (temp file, fsync,
	// rename); the answer then defaults to "done".
	WriteFile *string `yaml:"write_file"`
	// Edit writes files of the project (paths relative to the working
	// directory, which they may not leave) before answering, as an agent
	// doing its task edits the code.
	Edit map[string]string `yaml:"edit"`
	// Help prints the help marker, then its context as JSON on the next line.
	Help *Help `yaml:"help"`
	// RateLimit fails with api_error_status 429, announced by a rejected
	// rate_limit_event carrying resetsAt when RetryAfter is set.
	RateLimit *RateLimit `yaml:"rate_limit"`
	// Overloaded fails with api_error_status 529.
	Overloaded bool `yaml:"overloaded"`
	// AuthError fails with a synthetic authentication_failed error.
	AuthError bool `yaml:"auth_error"`
	// UsageLimit ends with exit 0 and a result of subtype success,
	// is_error false, whose text is the usage-limit message ("Claude AI
	// usage limit reached|EPOCH" with ResetAfter, else without a reset),
	// as Claude Code does (anthropics/claude-code#79500).
	UsageLimit *UsageLimit `yaml:"usage_limit"`
	// SessionNotFound, on --resume, fails the way Claude Code does for an
	// unknown session.
	SessionNotFound bool `yaml:"session_not_found"`
	// Hang prints system/init and then nothing until killed.
	Hang bool `yaml:"hang"`
	// SilentStart prints nothing at all, not even system/init, until
	// killed: a CLI hung at its start (anthropics/claude-code#75613).
	SilentStart bool `yaml:"silent_start"`
	// Sleep waits this long before answering.
	Sleep Duration `yaml:"sleep"`
	// Linger waits this long after writing the handoff file (write_file)
	// and before answering, as an agent that goes on working once its
	// handoff is on disk.
	Linger Duration `yaml:"linger"`
	// Crash prints part of the answer and exits without a result.
	Crash *Crash `yaml:"crash"`
	// StdoutBytes emits this many bytes of filler text before answering.
	StdoutBytes int64 `yaml:"stdout_bytes"`
	// ExitCode is the exit status after a normal answer.
	ExitCode int `yaml:"exit_code"`
}

// Help is a help request.
type Help struct {
	Context any `yaml:"context"`
}

// RateLimit is a rejected request.
type RateLimit struct {
	RetryAfter Duration `yaml:"retry_after"`
}

// UsageLimit is an exhausted usage limit, reported as a success.
type UsageLimit struct {
	// ResetAfter is how long after the answer the limit resets; zero
	// leaves the reset out of the message.
	ResetAfter Duration `yaml:"reset_after"`
}

// Crash cuts the answer after AfterBytes bytes and exits with ExitCode (1
// when zero).
type Crash struct {
	AfterBytes int `yaml:"after_bytes"`
	ExitCode   int `yaml:"exit_code"`
}

// ErrNoEntry means the scenario has nothing for the requested step.
var ErrNoEntry = errors.New("no scenario entry")

// LoadScenario reads and strictly decodes a scenario file: unknown keys and
// wrong types are errors naming the line and the key.
func LoadScenario(path string) (*Scenario, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read scenario: %w", err)
	}
	return ParseScenario(path, data)
}

// ParseScenario decodes a scenario; name is used in error messages.
func ParseScenario(name string, data []byte) (sc *Scenario, err error) {
	sc = &Scenario{}
	defer func() {
		// go-yaml v1.19.2 panics on some malformed input (a tag followed
		// by an orphaned, more indented sequence); a bad scenario must be
		// an error, never a crash of the agent.
		if r := recover(); r != nil {
			sc, err = nil, fmt.Errorf("scenario %s: the YAML cannot be decoded (%v); check its indentation and tags", name, r)
		}
	}()
	if err := yaml.UnmarshalWithOptions(data, sc, yaml.Strict()); err != nil {
		return nil, fmt.Errorf("scenario %s: %s", name, yaml.FormatError(err, false, true))
	}
	for step, entries := range sc.Steps {
		for i, e := range entries {
			if err := e.check(); err != nil {
				return nil, fmt.Errorf("scenario %s: steps.%s[%d]: %w", name, step, i, err)
			}
		}
	}
	return sc, nil
}

func (e Entry) check() error {
	switch {
	case e.Sleep < 0:
		return errors.New("sleep: negative duration")
	case e.Linger < 0:
		return errors.New("linger: negative duration")
	case e.StdoutBytes < 0:
		return errors.New("stdout_bytes: negative")
	case e.Crash != nil && e.Crash.AfterBytes < 0:
		return errors.New("crash.after_bytes: negative")
	case e.RateLimit != nil && e.RateLimit.RetryAfter < 0:
		return errors.New("rate_limit.retry_after: negative duration")
	case e.UsageLimit != nil && e.UsageLimit.ResetAfter < 0:
		return errors.New("usage_limit.reset_after: negative duration")
	case e.ExitCode < 0 || e.ExitCode > 255:
		return fmt.Errorf("exit_code: %d out of range 0..255", e.ExitCode)
	case e.Crash != nil && (e.Crash.ExitCode < 0 || e.Crash.ExitCode > 255):
		return fmt.Errorf("crash.exit_code: %d out of range 0..255", e.Crash.ExitCode)
	}
	for path := range e.Edit {
		if !filepath.IsLocal(path) {
			return fmt.Errorf("edit: %q is not a path inside the project", path)
		}
	}
	return nil
}

// ItemEntry returns what to do for attempt (1-based) of one item of a map
// step: the entries under "STEP/KEY" when the scenario has them, else the
// step's own, which every item then follows alike.
func (sc *Scenario) ItemEntry(step, item string, attempt int) (Entry, error) {
	if item != "" {
		if _, ok := sc.Steps[step+"/"+item]; ok {
			return sc.Entry(step+"/"+item, attempt)
		}
	}
	return sc.Entry(step, attempt)
}

// Entry returns what to do for attempt (1-based) of step.
func (sc *Scenario) Entry(step string, attempt int) (Entry, error) {
	entries := sc.Steps[step]
	if len(entries) == 0 {
		return Entry{}, fmt.Errorf("%w for step %s", ErrNoEntry, step)
	}
	i := min(max(attempt, 1), len(entries)) - 1
	return entries[i], nil
}
