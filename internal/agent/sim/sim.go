// Package sim is the simulated coding agent behind `cadence agent sim`. It
// speaks Claude Code's stream-json protocol and follows a scenario file that
// says, per step and attempt, what to answer: valid or broken JSON, a handoff
// file, a help request, a rate limit, an overload, a hang, a crash, a flood.
// It lets the demo run without an API key and the tests reach every failure
// path without a network.
package sim

import (
	"context"
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Environment variables the simulated agent reads.
const (
	EnvStep        = "CADENCE_STEP"
	EnvAttempt     = "CADENCE_ATTEMPT"
	EnvItem        = "CADENCE_ITEM_KEY"
	EnvHandoffPath = "CADENCE_HANDOFF_PATH"
	EnvIteration   = "CADENCE_LOOP_ITERATION"
	EnvKey         = "CADENCE_IDEMPOTENCY_KEY"
	EnvRunID       = "CADENCE_RUN_ID"
)

// Exit statuses of Main besides an entry's own.
const (
	exitOK    = 0
	exitError = 1 // the simulated agent failed, as a real one would
	exitUsage = 2 // bad flags, scenario or ledger: the simulation itself failed
)

// fillerChunk is the size of each filler text block for stdout_bytes.
const fillerChunk = 64 << 10

type options struct {
	scenario  string
	sessionID string
	resume    string
	ledger    string
	prompt    string
}

// Main runs `cadence agent sim --scenario FILE [--session-id ID | --resume ID]
// [--ledger FILE] [PROMPT]` and returns the exit status. The prompt is the
// positional argument, else stdin. The step and attempt come from
// CADENCE_STEP and CADENCE_ATTEMPT (via env). ctx ending stops a hang or a
// sleep.
func Main(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, env func(string) string) int {
	opts, err := parseFlags(args, stderr)
	if err != nil {
		return exitUsage
	}
	prompt := opts.prompt
	if prompt == "" && stdin != nil {
		data, err := io.ReadAll(stdin)
		if err != nil {
			fmt.Fprintf(stderr, "cadence agent sim: read prompt: %v\n", err)
			return exitUsage
		}
		prompt = string(data)
	}
	step := stepPath(env)
	attempt, err := strconv.Atoi(env(EnvAttempt))
	if err != nil || attempt < 1 {
		attempt = 1
	}
	resume := opts.resume != ""
	session := opts.sessionID
	if resume {
		session = opts.resume
	}
	if session == "" {
		session = newSessionID()
	}
	if opts.ledger != "" {
		rec := LedgerRecord{
			Step: step, Item: env(EnvItem), Attempt: attempt, SessionID: session, Resume: resume,
			PID: os.Getpid(), PGID: syscall.Getpgrp(), Time: time.Now().UTC().Format(time.RFC3339Nano), Prompt: prompt,
		}
		if err := appendLedger(opts.ledger, rec); err != nil {
			fmt.Fprintf(stderr, "cadence agent sim: %v\n", err)
			return exitUsage
		}
	}
	sc, err := LoadScenario(opts.scenario)
	if err != nil {
		fmt.Fprintf(stderr, "cadence agent sim: %v\n", err)
		return exitUsage
	}
	a := &run{
		ctx: ctx, out: &stream{w: stdout, sessionID: session, started: time.Now()},
		stderr: stderr, env: env, prompt: prompt, resume: resume,
	}
	entry, err := sc.ItemEntry(step, env(EnvItem), attempt)
	if errors.Is(err, ErrNoEntry) && step != env(EnvStep) {
		// A step inside a loop: the scenario may name its iteration
		// (LOOP/N/STEP), else the step.
		entry, err = sc.ItemEntry(env(EnvStep), env(EnvItem), attempt)
	}
	if err != nil {
		return a.fail(err.Error(), "", 0)
	}
	return a.play(entry)
}

// stepPath is the path of the step instance the sim plays: CADENCE_STEP,
// or, inside a loop, LOOP/N/STEP as its idempotency key names it
// (RUN/PATH, or RUN/PATH/ITEM for an item).
func stepPath(env func(string) string) string {
	step := env(EnvStep)
	if env(EnvIteration) == "" {
		return step
	}
	path, ok := strings.CutPrefix(env(EnvKey), env(EnvRunID)+"/")
	if item := env(EnvItem); ok && item != "" {
		path, ok = strings.CutSuffix(path, "/"+item)
	}
	if !ok || !strings.HasSuffix(path, "/"+step) {
		return step
	}
	return path
}

func parseFlags(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("cadence agent sim", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.scenario, "scenario", "", "scenario `FILE` (YAML)")
	fs.StringVar(&o.sessionID, "session-id", "", "start the session `ID`")
	fs.StringVar(&o.resume, "resume", "", "continue the session `ID`")
	fs.StringVar(&o.ledger, "ledger", "", "append one JSON line per invocation to `FILE`")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	switch {
	case o.scenario == "":
		err := errors.New("--scenario is required")
		fmt.Fprintf(stderr, "cadence agent sim: %v\n", err)
		return o, err
	case o.sessionID != "" && o.resume != "":
		err := errors.New("--session-id and --resume exclude each other")
		fmt.Fprintf(stderr, "cadence agent sim: %v\n", err)
		return o, err
	case fs.NArg() > 1:
		err := fmt.Errorf("one prompt argument expected, got %d", fs.NArg())
		fmt.Fprintf(stderr, "cadence agent sim: %v\n", err)
		return o, err
	}
	o.prompt = fs.Arg(0)
	return o, nil
}

// run is one invocation acting out a scenario entry.
type run struct {
	ctx    context.Context
	out    *stream
	stderr io.Writer
	env    func(string) string
	prompt string
	resume bool
}

func (r *run) play(e Entry) int {
	if e.SessionNotFound && r.resume {
		msg := "No conversation found with session ID: " + r.out.sessionID
		fmt.Fprintln(r.stderr, msg)
		r.out.result(resultEvent{Subtype: "error_during_execution", IsError: true, Errors: []string{msg}}, 0)
		return exitError
	}
	if e.SilentStart {
		<-r.ctx.Done()
		return exitError
	}
	cwd, _ := os.Getwd()
	r.out.init(cwd)
	if e.Hang {
		<-r.ctx.Done()
		return exitError
	}
	if e.Sleep > 0 && !r.sleep(time.Duration(e.Sleep)) {
		return exitError
	}
	if !r.filler(e.StdoutBytes) {
		return exitError
	}
	switch {
	case e.RateLimit != nil:
		if e.RateLimit.RetryAfter > 0 {
			reset := time.Now().Add(time.Duration(e.RateLimit.RetryAfter)).Truncate(time.Second).Add(time.Second)
			r.out.rateLimitRejected(reset)
		}
		r.out.assistant("API Error: Request rejected (429) · rate limit reached", "rate_limit", usage{})
		return r.fail(`API Error: 429 {"type":"error","error":{"type":"rate_limit_error","message":"Rate limit reached"}}`, "", 429)
	case e.Overloaded:
		r.out.assistant("API Error: Repeated 529 Overloaded errors", "overloaded", usage{})
		return r.fail(`API Error: 529 {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`, "", 529)
	case e.AuthError:
		r.out.assistant("Invalid API key · Please run /login", "authentication_failed", usage{})
		return r.fail("Invalid API key · Please run /login", "", 0)
	case e.UsageLimit != nil:
		msg := "Claude AI usage limit reached"
		if e.UsageLimit.ResetAfter > 0 {
			reset := time.Now().Add(time.Duration(e.UsageLimit.ResetAfter)).Truncate(time.Second).Add(time.Second)
			msg += "|" + strconv.FormatInt(reset.Unix(), 10)
		}
		r.out.assistant(msg, "", usage{})
		r.out.result(resultEvent{NumTurns: 1, Result: &msg}, 0)
		return 0
	}
	if e.Help != nil {
		if !r.help(e.Help) {
			return exitError
		}
	}
	for _, path := range slices.Sorted(maps.Keys(e.Edit)) {
		if err := writeAtomic(path, e.Edit[path]); err != nil {
			return r.fail("edit: "+err.Error(), "", 0)
		}
	}
	answer := e.Answer
	if e.WriteFile != nil {
		if err := r.writeHandoff(*e.WriteFile); err != nil {
			return r.fail(err.Error(), "", 0)
		}
		if answer == "" {
			answer = "done"
		}
		if e.Linger > 0 && !r.sleep(time.Duration(e.Linger)) {
			return exitError
		}
	}
	u := usage{InputTokens: e.InputTokens, OutputTokens: e.OutputTokens}
	if u.InputTokens == 0 {
		u.InputTokens = int64(len(r.prompt)/4 + 1)
	}
	if u.OutputTokens == 0 {
		u.OutputTokens = int64(len(answer)/4 + 1)
	}
	if e.Crash != nil {
		cut := min(e.Crash.AfterBytes, len(answer))
		r.out.assistant(answer[:cut], "", u)
		if e.Crash.ExitCode == 0 {
			return exitError
		}
		return e.Crash.ExitCode
	}
	if answer != "" || e.Help == nil {
		r.out.assistant(answer, "", u)
	}
	turns := max(e.Turns, 1)
	if e.Help != nil && answer == "" {
		answer = helpText(e.Help)
	}
	r.out.result(resultEvent{NumTurns: turns, Result: &answer, TotalCostUSD: e.CostUSD, Usage: u}, 0)
	if r.out.err != nil {
		fmt.Fprintf(r.stderr, "cadence agent sim: %v\n", r.out.err)
		return exitError
	}
	return e.ExitCode
}

// fail ends the invocation with an error result, the way Claude Code reports
// a failed request: subtype "success" with is_error true.
func (r *run) fail(msg, subtype string, status int) int {
	r.out.result(resultEvent{Subtype: subtype, IsError: true, Result: &msg}, status)
	return exitError
}

func (r *run) sleep(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-r.ctx.Done():
		return false
	}
}

// filler emits n bytes of assistant text in blocks, checking ctx between
// blocks so that a stopped agent stops writing.
func (r *run) filler(n int64) bool {
	if n <= 0 {
		return true
	}
	chunk := strings.Repeat("lorem ipsum ", fillerChunk/12)
	start := r.out.written
	for r.out.written-start < n {
		if r.ctx.Err() != nil || r.out.err != nil {
			return false
		}
		text := chunk
		if rest := n - (r.out.written - start); rest < int64(len(text)) {
			text = text[:rest]
		}
		r.out.assistant(text, "", usage{})
	}
	return r.out.err == nil
}

func helpText(h *Help) string {
	text := ">>>HELP<<<"
	if h.Context != nil {
		if ctx, err := jsonContext(h.Context); err == nil {
			text += "\n" + ctx
		}
	}
	return text
}

func (r *run) help(h *Help) bool {
	if h.Context != nil {
		if _, err := jsonContext(h.Context); err != nil {
			fmt.Fprintf(r.stderr, "cadence agent sim: help context: %v\n", err)
			return false
		}
	}
	r.out.assistant(helpText(h), "", usage{})
	return r.out.err == nil
}

// writeHandoff writes the handoff file the way a careful agent would: a
// temporary file in the same directory, synced, then renamed into place.
func (r *run) writeHandoff(content string) error {
	path := r.env(EnvHandoffPath)
	if path == "" {
		return fmt.Errorf("write_file: %s is not set", EnvHandoffPath)
	}
	if err := writeAtomic(path, content); err != nil {
		return fmt.Errorf("write_file: %w", err)
	}
	return nil
}

// writeAtomic writes content to path through a synced temporary file in
// the same directory, renamed into place, the directory synced: as an
// agent that makes its handoff durable does, so that it survives a power
// cut.
func writeAtomic(path, content string) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // fails harmlessly once renamed
	if _, err := tmp.WriteString(content); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("%s: %w", tmp.Name(), err)
	}
	if err := tmp.Sync(); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("%s: %w", tmp.Name(), err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("%s: %w", tmp.Name(), err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// newSessionID returns a random version 4 UUID.
func newSessionID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
