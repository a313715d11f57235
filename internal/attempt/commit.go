package attempt

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/cadence-dev/cadence/internal/agent"
	"github.com/cadence-dev/cadence/internal/checkpoint"
	"github.com/cadence-dev/cadence/internal/handoff"
	"github.com/cadence-dev/cadence/internal/history"
	"github.com/cadence-dev/cadence/internal/jsonvalue"
)

// try is one attempt in progress, from its committed row to its committed
// outcome: the context every stage of the attempt machinery (launching the
// agent, judging its handoff, running the checks, committing the outcome)
// needs, whoever began the attempt: the step loop, the settling of an
// interrupted attempt, a help round.
type try struct {
	r    *Runner
	in   *Instance
	row  *checkpoint.Attempt
	plan attemptPlan
	// counted is how many attempts count against max_attempts with this
	// one, max the step's max_attempts; both 0 for a help round.
	counted, max int
	// round is the help round an advisor's attempt answers (0 otherwise).
	round int
	// settling marks an attempt a crash left running, settled on resume:
	// a success adopts it (G5).
	settling bool
	// candidate is the handoff that passed its schema, stored for its
	// checks: committed to the database with the first check's start, so
	// that a process on another machine can settle the attempt.
	candidate []byte
	// supervisor, when set, is the supervisor the attempt's process runs
	// under, named by its row (reserveSupervisor).
	supervisor *agent.Reserved
}

// storeError marks a failure of the checkpoint store inside a callback of
// the agent launcher, so the run loop can tell it from the agent's own.
type storeError struct{ err error }

func (e *storeError) Error() string { return e.err.Error() }
func (e *storeError) Unwrap() error { return e.err }

// WriteEnvelope writes an instance's accepted handoff to its envelope
// file (.cadence/handoffs/…), just before the commit that stores the same
// envelope in the unit's row (tx.StepSucceeded). The row is the durable
// copy, so the file is published whole by a rename but not fsynced: a
// crash of the process leaves it whole, a power cut may lose it or leave
// it empty. Cadence reads the file only to adopt an attempt a crash cut
// short between the two (Settle), where a lost file is the same as a
// crash just before it was written; the files of succeeded units are
// checked against their rows, and rewritten, on resume
// (RestoreEnvelope). Two fsyncs (the file's and its directory's) per
// step are saved.
func (r *Runner) WriteEnvelope(in *Instance, env handoff.Envelope) error {
	b, err := json.Marshal(env)
	if err != nil {
		return fmt.Errorf("encode envelope: %w", err)
	}
	return r.writeEnvelopeJSON(in, b)
}

// writeEnvelopeJSON is WriteEnvelope of the envelope encoded as b.
func (r *Runner) writeEnvelopeJSON(in *Instance, b []byte) error {
	text, err := envelopeText(b)
	if err != nil {
		return err
	}
	if err := checkpoint.WriteFileAtomicNoSync(r.envelopePath(in), text, 0o644); err != nil {
		return fmt.Errorf("write handoff of %s: %w", in.Label(), err)
	}
	return nil
}

// envelopeText is the content of the envelope file of an envelope stored
// as envJSON: the same JSON indented by two spaces, with a final newline,
// byte for byte what json.MarshalIndent of the envelope gives (it
// indents what json.Marshal gives).
func envelopeText(envJSON []byte) ([]byte, error) {
	var buf bytes.Buffer
	if err := json.Indent(&buf, envJSON, "", "  "); err != nil {
		return nil, fmt.Errorf("indent envelope: %w", err)
	}
	buf.WriteByte('\n')
	return buf.Bytes(), nil
}

// RestoreEnvelope makes the envelope file of unit u in the project
// directory dir, whose row holds the accepted envelope envJSON, say what
// the row says: a file a power cut
// lost, emptied or left from an earlier attempt is rewritten (without an
// fsync, as WriteEnvelope writes it; the next resume checks it again). It
// reports whether the file was rewritten. A unit without an envelope
// (envJSON empty) has no file to restore.
func RestoreEnvelope(dir string, u checkpoint.Unit, envJSON []byte) (bool, error) {
	if len(envJSON) == 0 {
		return false, nil
	}
	want, err := envelopeText(envJSON)
	if err != nil {
		return false, fmt.Errorf("stored handoff of %s: %w", UnitLabel(u), err)
	}
	path := filepath.Join(dir, checkpoint.EnvelopePath(u))
	if holds(path, want) {
		return false, nil
	}
	if err := checkpoint.WriteFileAtomicNoSync(path, want, 0o644); err != nil {
		return false, fmt.Errorf("restore handoff of %s: %w", UnitLabel(u), err)
	}
	return true, nil
}

// holds reports whether path is a regular file holding exactly want. The
// file is opened once and read only when its size is right.
func holds(path string, want []byte) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() || fi.Size() != int64(len(want)) {
		return false
	}
	return readsAs(f, want)
}

// readsAs reports whether what is left to read of f is exactly want. It
// reads one byte more than want at most, which tells a longer file without
// reading all of it: the files checked are in directories an agent could
// write.
func readsAs(f *os.File, want []byte) bool {
	cur, err := io.ReadAll(io.LimitReader(f, int64(len(want))+1))
	return err == nil && bytes.Equal(cur, want)
}

// commit decides what follows a finished attempt judged j and records
// it. On success the envelope is written to handoffs/ first and then
// committed; on failure the failed-handoff record is written, and the
// backoff deadline committed with the outcome and the circuit's new
// state, in one transaction.
func (t *try) commit(ctx context.Context, res *agent.Result, j judgement) (Outcome, error) {
	now := t.r.now()
	t.row.FinishedAt = &now
	t.recordUsage(res)
	note := attemptNote(t.in.Step, t.plan, res)
	if j.ok {
		// An accepted handoff succeeds whatever the step's row says:
		// the row is read in the transaction that records the success.
		v := verdict{ok: true, class: j.class, now: now}
		c := &closing{r: t.r, t: t, res: res, j: j, v: v, d: decide(t.in.Step, v), note: note, now: now}
		return c.succeeded(ctx)
	}
	var (
		st   *checkpoint.Step
		used int
	)
	if err := t.r.Store.View(ctx, func(tx *checkpoint.Tx) error {
		var err error
		if st, err = tx.Unit(t.in.Unit()); err != nil {
			return err
		}
		used, err = tx.UnitCountCounted(t.in.Unit())
		return err
	}); err != nil {
		return Outcome{}, fmt.Errorf("read %s: %w", t.in.Label(), err)
	}
	v := verdict{ok: j.ok, class: j.class, permanent: j.permanent, retryAfter: j.retryAfter, resetAt: j.resetAt,
		fresh: j.class == handoff.ClassTimeout || j.class == handoff.ClassStuck || j.lostSess ||
			(res != nil && (res.SessionNotFound || res.SessionNotSaved || res.SessionIDRejected != "")),
		used: used, maxAttempts: st.MaxAttempts, helpRounds: st.HelpRounds, prevNext: st.NextRetryAt, now: now}
	if j.class != handoff.ClassInterrupted {
		v.jitter = t.r.Rand()
	}
	c := &closing{r: t.r, t: t, res: res, j: j, v: v, d: decide(t.in.Step, v), note: note, now: now}
	if endOf(c.d.Decision) == endStopped {
		return c.stopped(ctx)
	}
	return c.failed(ctx)
}

// closing is an attempt being recorded: its judgement, the decision
// taken on it and what the record needs besides.
type closing struct {
	r    *Runner
	t    *try
	res  *agent.Result
	j    judgement
	v    verdict
	d    decided
	note string // attemptNote
	now  time.Time
}

func (c *closing) event(typ string) history.Event {
	t, a := c.t, c.t.row
	return history.Event{Time: c.now, Type: typ, RunID: t.in.Run.ID, Step: t.in.StepPath(), Item: t.in.ItemKey(), Agent: t.plan.agent,
		Attempt: a.N, Counted: t.counted, MaxAttempts: c.v.maxAttempts, Kind: a.Kind, Status: string(a.Status()), Class: a.Class,
		Error: a.Error, Repairs: a.Repairs, Provenance: a.Provenance, Elapsed: elapsedOf(c.res), Uncounted: a.Uncounted, Warning: a.Warning}
}

// stopped records an attempt cadence stopped itself, on the operator's
// SIGINT or SIGTERM: that is not the agent's failure, so it does not use
// up one of max_attempts (G5). An attempt found running after a crash is
// settled, and counted, by Settle instead.
func (c *closing) stopped(ctx context.Context) (Outcome, error) {
	a := c.t.row
	a.Class = string(c.j.class)
	a.Error = withNote(c.j.diag.Summary(), c.note)
	a.Uncounted = true
	err := c.r.Store.Update(ctx, func(tx *checkpoint.Tx) error {
		return c.r.finish(tx, c.t, c.t.ending(endStopped, endFacts{class: a.Class}, c.now), c.now)
	})
	if err != nil {
		return Outcome{}, fmt.Errorf("record interrupted attempt %d of %s: %w", a.N, c.t.in.Label(), err)
	}
	ev := c.event(history.EventAttemptFinished)
	ev.Counted, ev.MaxAttempts, ev.Kind, ev.Error = c.t.counted-1, 0, "", ""
	c.r.Sink.Emit(ev)
	return Outcome{}, ErrInterrupted
}

// failed records a failed attempt, and the retry decided or the step's
// failure.
func (c *closing) failed(ctx context.Context) (Outcome, error) {
	t, a, ws := c.t, c.t.row, c.t.in.Step
	a.Class = string(c.j.class)
	a.Error = withNote(c.j.diag.Summary(), c.note)
	a.Repairs = c.j.result.Repairs
	if c.j.diag != nil {
		a.Provenance = string(c.j.diag.Provenance)
	}
	a.HelpContext = c.j.helpContext
	a.Uncounted = c.d.uncounted
	details, err := json.Marshal(c.j.diag)
	if err != nil {
		return Outcome{}, fmt.Errorf("encode diagnosis: %w", err)
	}
	a.DetailsJSON = details
	if c.j.retryAfter > 0 {
		ms := c.j.retryAfter.Milliseconds()
		a.RetryAfterMS = &ms
	}
	if c.d.next != nil {
		ms := c.d.delay.Milliseconds()
		a.DelayMS, a.NextRetryAt = &ms, c.d.next
	}
	recJSON, err := c.writeRecord(ctx)
	if err != nil {
		return Outcome{}, err
	}
	c.r.Failpoint.Hit(FailAfterHandoffWritten)
	c.r.Failpoint.Hit(FailBeforeOutcomeCommit)
	// Synced by the next start (see succeeded), or within the store's
	// bound while the step waits for its retry.
	err = c.r.Store.UpdateSyncedByNext(ctx, func(tx *checkpoint.Tx) error {
		// The record in the database is what another machine reads; the
		// file is this machine's copy.
		if err := tx.PutDocument(t.in.Unit(), a.N, checkpoint.DocFailedHandoff, recJSON); err != nil {
			return err
		}
		f := endFacts{class: a.Class, resetAt: c.j.resetAt, fresh: c.d.fresh}
		return c.r.finish(tx, t, t.ending(endOf(c.d.Decision), f, c.now), c.now)
	})
	if err != nil {
		return Outcome{}, fmt.Errorf("record failed attempt %d of %s: %w", a.N, t.in.Label(), err)
	}
	c.r.Failpoint.Hit(FailAfterOutcomeCommit)
	ev := c.event(history.EventAttemptFinished)
	ev.Until, ev.Stderr, ev.Warning = a.NextRetryAt, stderrCause(c.j.class, c.res), ""
	if c.j.tail != "" {
		ev.Stderr, ev.Tail = "", c.j.tail
	}
	c.r.Sink.Emit(ev)
	switch endOf(c.d.Decision) {
	case endLoginNeeded:
		// A fallback that can serve takes the next attempt instead of
		// a person logging in (SPEC §17).
		if ok, err := c.r.canFallBack(ctx, t.in); err != nil || ok {
			return Outcome{}, err
		}
		return Outcome{}, &LoginError{Agent: t.plan.agent, Step: t.in.StepPath(), Detail: c.j.diag.Summary()}
	case endFailed:
	default:
		return Outcome{}, nil
	}
	c.r.Sink.Emit(history.Event{Time: c.now, Type: history.EventStepFailed, RunID: t.in.Run.ID, Step: t.in.StepPath(), Item: t.in.ItemKey(), Agent: t.plan.agent,
		Class: a.Class, Message: failMessage(ws, c.v, a.Error)})
	return Outcome{Failed: true}, nil
}

// writeRecord writes the failed-handoff record of a failed attempt (SPEC
// §5.5), with the follow-up the next attempt will send when it is one,
// and returns it.
func (c *closing) writeRecord(ctx context.Context) ([]byte, error) {
	t, a, ws := c.t, c.t.row, c.t.in.Step
	var followup string
	if c.d.next != nil && c.j.class.IsAnswerFailure() && !t.in.isCommand() {
		task := a.Prompt
		if t.plan.kind == checkpoint.KindFollowup {
			task, _ = c.r.originalTask(ctx, t.in.Unit())
		}
		followup = handoff.BuildFollowup(c.r.followupInput(ws, task, c.j.diag, c.d.countedAfter(c.v)))
	}
	rec := handoff.FailedRecord{
		RunID: t.in.Run.ID, StepID: t.in.Unit().StepID, Item: t.in.ItemKey(), Attempt: a.N, Agent: t.plan.agent, SessionID: a.SessionID,
		Class: c.j.class, Details: c.j.diag.Details, Violations: c.j.diag.Violations, Repairs: c.j.result.Repairs,
		OutputSample: c.j.diag.OutputSample, OutputFile: a.OutputFile, FollowupPrompt: followup, CreatedAt: c.now,
		Check: c.j.diag.Check,
	}
	if rec.Violations == nil {
		rec.Violations = []handoff.Violation{}
	}
	if rec.Repairs == nil {
		rec.Repairs = []string{}
	}
	recPath := filepath.Join(c.r.unitDir("failed_handoffs", t.in), strconv.Itoa(a.N)+".json")
	recJSON, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode failed-handoff record: %w", err)
	}
	if err := checkpoint.WriteFileAtomic(recPath, append(recJSON, '\n'), 0o644); err != nil {
		return nil, fmt.Errorf("write failed-handoff record: %w", err)
	}
	a.FailedHandoff = checkpoint.RelPath(c.r.Dir, recPath)
	return recJSON, nil
}

// countedAfter is the number the next attempt has against max_attempts.
func (d decided) countedAfter(v verdict) int {
	if d.uncounted {
		return v.used
	}
	return v.used + 1
}

// succeeded writes the accepted handoff's envelope and commits the
// attempt, the step and the circuit, in the transaction that reads what
// the envelope reports (the instance's usage, its earlier errors): one
// transaction for the outcome, and the file written before its commit.
func (c *closing) succeeded(ctx context.Context) (Outcome, error) {
	t, a, ws := c.t, c.t.row, c.t.in.Step
	a.Error = c.note
	a.Repairs = c.j.result.Repairs
	a.Provenance = string(c.j.result.Provenance)
	if c.j.warning != "" {
		a.Warning = c.j.warning
		c.r.Log.Warn(c.j.warning, "step", ws.ID, "item", t.in.ItemKey(), "attempt", a.N)
	}
	var env handoff.Envelope
	reached := false // the failpoints count one commit, however often PostgreSQL runs it
	// Without an fsync of its own: the next step runs only after its
	// pid's commit, whose fsync makes this one durable too, and the run's
	// end is committed at FULL. A power cut before either leaves the state
	// a cut before this commit leaves: the attempt is settled from what
	// landed (G5), and nothing that read its success had run.
	err := c.r.Store.UpdateSyncedByNext(ctx, func(tx *checkpoint.Tx) error {
		var (
			envJSON []byte
			st      *checkpoint.Step
			err     error
		)
		if env, envJSON, st, err = c.envelopeIn(tx); err != nil {
			return err
		}
		c.v.maxAttempts = st.MaxAttempts
		if err := c.r.writeEnvelopeJSON(t.in, envJSON); err != nil {
			return err
		}
		if !reached {
			reached = true
			c.r.Failpoint.Hit(FailAfterHandoffWritten)
			c.r.Failpoint.Hit(FailBeforeOutcomeCommit)
		}
		return c.r.finish(tx, t, t.ending(endSucceeded, endFacts{envelope: envJSON, row: st}, c.now), c.now)
	})
	if err != nil {
		if !reached {
			c.land(ctx)
		}
		return Outcome{}, fmt.Errorf("record the success of %s: %w", t.in.Label(), err)
	}
	c.r.Failpoint.Hit(FailAfterOutcomeCommit)
	ev := c.event(history.EventAttemptFinished)
	ev.Class, ev.Error, ev.Uncounted = "", "", false
	c.r.Sink.Emit(ev)
	c.r.Sink.Emit(history.Event{Time: c.now, Type: history.EventStepSucceeded, RunID: t.in.Run.ID, Step: t.in.StepPath(), Item: t.in.ItemKey(), Agent: t.plan.agent,
		Attempt: a.N, Counted: t.counted, MaxAttempts: c.v.maxAttempts, CostUSD: env.Metadata.CostUSD})
	data, _ := jsonvalue.Decode(c.j.result.JSON)
	return Outcome{Done: true, Output: data}, nil
}

// envelopeIn is the accepted handoff's envelope as the unit's row and
// earlier attempts read in tx make it, encoded, and that row.
func (c *closing) envelopeIn(tx *checkpoint.Tx) (handoff.Envelope, []byte, *checkpoint.Step, error) {
	u := c.t.in.Unit()
	st, err := tx.Unit(u)
	if err != nil {
		return handoff.Envelope{}, nil, nil, err
	}
	prev, err := previousErrors(tx, u)
	if err != nil {
		return handoff.Envelope{}, nil, nil, err
	}
	env := envelope(c.t, c.j.result, st, prev)
	envJSON, err := json.Marshal(env)
	if err != nil {
		return handoff.Envelope{}, nil, nil, fmt.Errorf("encode envelope: %w", err)
	}
	return env, envJSON, st, nil
}

// land writes the accepted handoff's envelope when the outcome's
// transaction failed before it did (the write lock held past the busy
// timeout by another process, the store gone): from a read of its own,
// which the write lock does not block, so that the handoff has landed
// and resume adopts the attempt (G5) instead of running it again. The
// error reported is the commit's; this one is only logged.
func (c *closing) land(ctx context.Context) {
	var envJSON []byte
	err := c.r.Store.View(context.WithoutCancel(ctx), func(tx *checkpoint.Tx) error {
		var err error
		_, envJSON, _, err = c.envelopeIn(tx)
		return err
	})
	if err == nil {
		err = c.r.writeEnvelopeJSON(c.t.in, envJSON)
	}
	if err != nil {
		c.r.Log.Warn("the accepted handoff was not written", "step", c.t.in.Label(), "err", err)
	}
}

// envelope is the envelope of an accepted handoff (SPEC §5.6): the
// instance's usage, as its row st holds it, with this attempt's added,
// and prev, the errors of its earlier attempts.
func envelope(t *try, hr handoff.Result, st *checkpoint.Step, prev []string) handoff.Envelope {
	a := t.row
	step := *st
	addUsage(&step, a)
	return handoff.Envelope{
		Component: t.in.Step.ID, SessionID: firstNonEmpty(a.SessionID, st.SessionID), Timestamp: *a.FinishedAt, Status: "success",
		Data: json.RawMessage(hr.JSON),
		Metadata: handoff.EnvelopeMetadata{Attempts: t.counted, Repairs: nonNil(hr.Repairs), Provenance: hr.Provenance,
			PreviousErrors: nonNil(prev), CostUSD: step.CostUSD, Turns: step.Turns},
	}
}

// previousErrors returns the errors of the unit's attempts that ended
// with a class, help rounds aside: an envelope's previous_errors.
func previousErrors(tx *checkpoint.Tx, u checkpoint.Unit) ([]string, error) {
	list, err := tx.UnitAttempts(u)
	var prev []string
	for _, x := range list {
		if x.Status() != checkpoint.AttemptRunning && x.Class != "" && x.Kind != checkpoint.KindHelp {
			prev = append(prev, x.Error)
		}
	}
	return prev, err
}

// originalTask returns the task prompt of the unit's current session.
func (r *Runner) originalTask(ctx context.Context, u checkpoint.Unit) (string, error) {
	var task string
	err := r.Store.View(ctx, func(tx *checkpoint.Tx) error {
		list, err := tx.UnitAttempts(u)
		task = sessionTask(list)
		return err
	})
	return task, err
}

// sessionTask returns the prompt of the latest attempt that started a
// session (kind initial, fresh or fallback): the task the session's follow-ups refer
// to. It is "" when there is none.
func sessionTask(list []checkpoint.Attempt) string {
	var task string
	for _, x := range list {
		if x.Kind == checkpoint.KindInitial || x.Kind == checkpoint.KindFresh || x.Kind == checkpoint.KindFallback {
			task = x.Prompt
		}
	}
	return task
}

func addUsage(s *checkpoint.Step, a *checkpoint.Attempt) {
	if a.CostUSD != nil {
		s.CostUSD += *a.CostUSD
	} else if a.FinishedAt != nil {
		s.CostKnown = false
	}
	s.Turns += a.Turns
	s.InputTokens += a.InputTokens
	s.CachedTokens += a.CachedTokens
	s.OutputTokens += a.OutputTokens
}

func isProtocolCost(preset string) bool { return preset == "claude" || preset == "sim" }

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func firstNonEmpty(s ...string) string {
	for _, x := range s {
		if x != "" {
			return x
		}
	}
	return ""
}
