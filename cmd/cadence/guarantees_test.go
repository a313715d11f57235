package main

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// simWorkflow is a workflow on the sim agent with a ledger, so tests count
// real executions. retry is the defaults' retry section.
func simWorkflow(retry, steps string) string {
	return `version: 1
defaults:
  agent: sim
  retry: ` + retry + `
agents:
  sim:
    preset: sim
    scenario: scenario.yaml
    args: [--ledger, ledger.jsonl]
steps:
` + steps
}

const boolSchema = `{"type": "object", "required": ["ok"], "properties": {"ok": {"type": "boolean"}}}`

// TestG2SucceededStepNeverRunsAgain kills cadence right after a step's
// success was committed; resume must run only the next step.
func TestG2SucceededStepNeverRunsAgain(t *testing.T) {
	for _, fp := range []string{"after-outcome-commit", "after-outcome-commit:2"} {
		t.Run(fp, func(t *testing.T) {
			p := newProject(t, simWorkflow(`{max_attempts: 3, backoff: fixed, initial: 10ms, jitter: none}`, `
  - {id: one, prompt: one, handoff: {schema: s.json}}
  - {id: two, prompt: two, handoff: {schema: s.json}}
`), map[string]string{"s.json": boolSchema, "scenario.yaml": `
steps:
  one: [{answer: '{"ok": true}'}]
  two: [{answer: '{"ok": true}'}]
`})
			p.cadence([]string{"CADENCE_FAILPOINT=" + fp}, "run").killed(t)
			p.cadence(nil, "resume").exits(t, 0)
			for _, s := range []string{"one", "two"} {
				if n := len(p.executions(s)); n != 1 {
					t.Errorf("step %s executed %d times, want exactly 1", s, n)
				}
			}
			rep := p.inspect()
			if rep.Run.Status != "succeeded" {
				t.Errorf("run status %s, want succeeded", rep.Run.Status)
			}
		})
	}
}

// TestG3ExactCountsAcrossProcesses kills cadence after every committed
// outcome of a step that never succeeds: exhaustion must come at exactly
// max_attempts executions over all the processes.
func TestG3ExactCountsAcrossProcesses(t *testing.T) {
	p := newProject(t, simWorkflow(`{max_attempts: 3, backoff: fixed, initial: 10ms, jitter: none}`, `
  - {id: bad, prompt: go, handoff: {schema: s.json}}
`), map[string]string{"s.json": boolSchema, "scenario.yaml": `
steps:
  bad: [{answer: '{"ok": "no"}'}]
`})
	env := []string{"CADENCE_FAILPOINT=after-outcome-commit"}
	p.cadence(env, "run").killed(t)
	p.cadence(env, "resume").killed(t)
	p.cadence(env, "resume").killed(t) // third attempt's failure committed, then killed
	r := p.cadence(env, "resume")
	r.exits(t, 1)
	if n := len(p.executions("bad")); n != 3 {
		t.Fatalf("executions = %d, want exactly max_attempts = 3", n)
	}
	s := step(p.inspect(), "bad")
	if s.AttemptsUsed != 3 || s.Status != "failed" {
		t.Fatalf("inspect: attempts_used %d status %s, want 3 failed", s.AttemptsUsed, s.Status)
	}
	for i, a := range s.Attempts {
		if a.Class != "schema" || a.Status != "failed" {
			t.Errorf("attempt %d: %s/%s, want failed/schema", i+1, a.Status, a.Class)
		}
	}
	// Each retry continued the first attempt's session.
	recs := p.executions("bad")
	for _, r := range recs[1:] {
		if !r.Resume || r.SessionID != recs[0].SessionID {
			t.Errorf("attempt %d: resume=%v session %s, want a resume of %s", r.Attempt, r.Resume, r.SessionID, recs[0].SessionID)
		}
	}
}

// TestG1CommandKilledBeforeItStarted kills cadence after committing a
// command step's attempt row, which names the supervisor the command is to
// run under (a command has no session, so no commit of its pid follows):
// the command never ran, the supervisor died with cadence (G6), and resume
// counts the attempt as interrupted and runs the command once.
func TestG1CommandKilledBeforeItStarted(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e stateEngine) {
		p := newEngineProject(t, e, `version: 1
defaults:
  retry: {max_attempts: 3, backoff: fixed, initial: 10ms, jitter: none}
steps:
  - {id: build, run: [sh, -c, 'echo ran >> ran.txt']}
`, nil)
		p.cadence([]string{"CADENCE_FAILPOINT=after-attempt-commit"}, "run").killed(t)
		s := step(p.inspect(), "build")
		if len(s.Attempts) != 1 || s.Attempts[0].Status != "running" || s.Attempts[0].PID == nil {
			t.Fatalf("after the kill: attempts %+v, want one running attempt naming its supervisor", s.Attempts)
		}
		sup := *s.Attempts[0].PID
		waitFor(t, "the attempt's supervisor to end with cadence", func() bool { return !alive(sup) })
		if _, err := os.Stat(filepath.Join(p.dir, "ran.txt")); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("the command ran although cadence was killed before starting it (ran.txt: %v)", err)
		}
		p.cadence(nil, "resume").exits(t, 0)
		s = step(p.inspect(), "build")
		if len(s.Attempts) != 2 || s.Attempts[0].Status != "interrupted" || s.Attempts[1].Status != "succeeded" || s.AttemptsUsed != 2 {
			t.Fatalf("after resume: %d used of %+v, want interrupted then succeeded, both counted", s.AttemptsUsed, s.Attempts)
		}
		if b, err := os.ReadFile(filepath.Join(p.dir, "ran.txt")); err != nil || string(b) != "ran\n" {
			t.Errorf("ran.txt %q (%v), want the command run once", b, err)
		}
	})
}

// TestG1G5KilledBeforeTheAgentStarted kills cadence after committing the
// attempt row and before starting the agent: the attempt is settled as
// interrupted with no pid, counts, and the next one starts a new session.
func TestG1G5KilledBeforeTheAgentStarted(t *testing.T) {
	p := newProject(t, simWorkflow(`{max_attempts: 3, backoff: fixed, initial: 10ms, jitter: none}`, `
  - {id: one, prompt: go, handoff: {schema: s.json}}
`), map[string]string{"s.json": boolSchema, "scenario.yaml": `
steps:
  one: [{answer: '{"ok": true}'}]
`})
	p.cadence([]string{"CADENCE_FAILPOINT=after-attempt-commit"}, "run").killed(t)
	s := step(p.inspect(), "one")
	if len(s.Attempts) != 1 || s.Attempts[0].Status != "running" || s.Attempts[0].PID != nil {
		t.Fatalf("after the kill: attempts %+v, want one running attempt with no pid", s.Attempts)
	}
	if len(p.executions("one")) != 0 {
		t.Fatal("the agent ran although cadence was killed before starting it")
	}
	p.cadence(nil, "resume").exits(t, 0)
	s = step(p.inspect(), "one")
	if len(s.Attempts) != 2 || s.Attempts[0].Status != "interrupted" || s.Attempts[1].Status != "succeeded" {
		t.Fatalf("after resume: %+v, want interrupted then succeeded", s.Attempts)
	}
	if s.AttemptsUsed != 2 {
		t.Errorf("attempts_used = %d, want 2 (the interrupted attempt counts)", s.AttemptsUsed)
	}
	if recs := p.executions("one"); len(recs) != 1 || recs[0].Resume {
		t.Errorf("executions %+v, want one fresh execution", recs)
	}
}

// TestG5AdoptsALandedHandoff kills cadence after the handoff landed but
// before the outcome was committed: resume adopts it without running the
// agent again.
func TestG5AdoptsALandedHandoff(t *testing.T) {
	for _, tc := range []struct {
		name, failpoint, from string
		// losePID clears the attempt's pid after the kill, as a power cut
		// would when that commit had not reached the disk: the file the
		// agent wrote is evidence enough that it ran (G5).
		losePID bool
	}{
		{"stdout handoff, envelope written", "after-handoff-written", "stdout", false},
		{"stdout handoff, before commit", "before-outcome-commit", "stdout", false},
		{"file handoff, agent still running", "after-agent-start", "file", false},
		{"file handoff, the agent's pid lost", "after-agent-start", "file", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			handoff := `{schema: s.json}`
			answer := `[{answer: '{"ok": true}'}]`
			if tc.from == "file" {
				handoff = `{from: file, path: out/h.json, schema: s.json}`
				// The agent goes on working once its file is written, so
				// cadence cannot finish the attempt before it is killed.
				answer = `[{write_file: '{"ok": true}', answer: done, linger: 1m}]`
			}
			p := newProject(t, simWorkflow(`{max_attempts: 3, backoff: fixed, initial: 10ms, jitter: none}`,
				"  - {id: one, prompt: go, handoff: "+handoff+"}\n"),
				map[string]string{"s.json": boolSchema, "scenario.yaml": "steps:\n  one: " + answer + "\n"})
			if tc.from == "file" {
				// Kill cadence once the agent has written its handoff.
				p.killWhen(t, "run", func() bool {
					_, err := os.Stat(filepath.Join(p.dir, "out", "h.json"))
					return err == nil
				})
			} else {
				p.cadence([]string{"CADENCE_FAILPOINT=" + tc.failpoint}, "run").killed(t)
			}
			if tc.losePID {
				forgetPIDs(t, p)
			}
			p.cadence(nil, "resume").exits(t, 0)
			if n := len(p.executions("one")); n != 1 {
				t.Fatalf("executions = %d, want 1: the landed handoff must be adopted", n)
			}
			s := step(p.inspect(), "one")
			if len(s.Attempts) != 1 || s.Attempts[0].Status != "adopted" || s.Status != "succeeded" {
				t.Fatalf("attempts %+v, want one adopted attempt", s.Attempts)
			}
			if _, err := os.Stat(filepath.Join(p.dir, ".cadence", "handoffs")); err != nil {
				t.Errorf("no stored envelope: %v", err)
			}
		})
	}
}

// forgetPIDs clears the pid of every attempt in the project's state
// database, as a power cut loses a commit that had not reached the disk.
func forgetPIDs(t *testing.T, p *project) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(p.dir, ".cadence", "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	res, err := db.Exec("UPDATE attempts SET pid = NULL WHERE pid IS NOT NULL")
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		t.Fatal("no attempt had a pid to forget")
	}
}

// TestG5InterruptedAttemptContinuesItsSession kills cadence while the agent
// runs and has not answered: the attempt counts as interrupted, and the next
// attempt resumes the same agent session.
func TestG5InterruptedAttemptContinuesItsSession(t *testing.T) {
	p := newProject(t, simWorkflow(`{max_attempts: 3, backoff: fixed, initial: 10ms, jitter: none}`, `
  - {id: one, prompt: go, handoff: {schema: s.json}}
`), map[string]string{"s.json": boolSchema, "scenario.yaml": `
steps:
  one:
    - {hang: true}
    - {answer: '{"ok": true}'}
`})
	p.killWhen(t, "run", func() bool { return len(p.executions("one")) == 1 })
	p.cadence(nil, "resume").exits(t, 0)
	recs := p.executions("one")
	if len(recs) != 2 || !recs[1].Resume || recs[1].SessionID != recs[0].SessionID {
		t.Fatalf("executions %+v, want the second to resume the first's session", recs)
	}
	s := step(p.inspect(), "one")
	if s.AttemptsUsed != 2 || s.Attempts[0].Status != "interrupted" || s.Attempts[1].Kind != "followup" {
		t.Fatalf("attempts %+v, want interrupted then a follow-up", s.Attempts)
	}
}

// TestG4ResumeWaitsOnlyTheRemainingBackoff kills cadence during a backoff
// and checks that the resumed process starts the retry at the stored
// next_retry_at — not a full delay later, and not earlier.
func TestG4ResumeWaitsOnlyTheRemainingBackoff(t *testing.T) {
	p := newProject(t, simWorkflow(`{max_attempts: 3, backoff: fixed, initial: 3s, jitter: none}`, `
  - {id: one, prompt: go, handoff: {schema: s.json}}
`), map[string]string{"s.json": boolSchema, "scenario.yaml": `
steps:
  one:
    - {answer: '{"ok": "no"}'}
    - {answer: '{"ok": true}'}
`})
	p.cadence([]string{"CADENCE_FAILPOINT=during-backoff"}, "run").killed(t)
	before := step(p.inspect(), "one")
	if before.NextRetryAt == nil || before.Attempts[0].DelayMS == nil || *before.Attempts[0].DelayMS != 3000 {
		t.Fatalf("after the kill: %+v, want a stored 3000 ms delay and deadline", before)
	}
	deadline := *before.NextRetryAt
	// Let part of the backoff pass while no cadence runs.
	waitFor(t, "a second of the backoff to pass", func() bool { return time.Until(deadline) < 2*time.Second })
	p.cadence(nil, "resume").exits(t, 0)
	if recs := p.executions("one"); len(recs) != 2 {
		t.Fatalf("executions = %d, want 2", len(recs))
	}
	after := step(p.inspect(), "one")
	// started_at is committed just before the agent is launched, so it
	// measures the wait itself, without the process start.
	started := after.Attempts[1].StartedAt
	if started.Before(deadline) {
		t.Fatalf("retry started at %s, before the stored deadline %s", started, deadline)
	}
	if late := started.Sub(deadline); late > 500*time.Millisecond {
		t.Fatalf("retry started %s after the deadline: the backoff was not shortened to what remained", late)
	}
	if *after.Attempts[0].DelayMS != 3000 || !after.Attempts[0].NextRetryAt.Equal(deadline) {
		t.Fatalf("the stored delay or deadline changed: %v %v", *after.Attempts[0].DelayMS, after.Attempts[0].NextRetryAt)
	}
}

// TestG6NoOrphanAgent checks that an agent never outlives cadence: not
// after SIGKILL of cadence (parent-death signal), and not after Ctrl-C
// (the group is terminated, the attempt recorded as interrupted, exit 3).
func TestG6NoOrphanAgent(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGKILL, syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			p, cmd, out, errb := startHangingAgent(t)
			agentPID := p.executions("one")[0].PID
			if !alive(agentPID) {
				t.Fatalf("agent %d is not running", agentPID)
			}
			_ = cmd.Process.Signal(sig)
			r := p.finish(cmd, cmd.Wait(), out.String(), errb.String())
			waitFor(t, "the agent to be gone", func() bool { return !alive(agentPID) })
			if sig == syscall.SIGKILL {
				r.killed(t)
				return
			}
			r.exits(t, 3)
			if !strings.Contains(r.stderr, "cadence resume") {
				t.Errorf("no resume hint in stderr:\n%s", r.stderr)
			}
			s := step(p.inspect(), "one")
			if len(s.Attempts) != 1 || s.Attempts[0].Status != "interrupted" {
				t.Fatalf("attempts %+v, want one interrupted", s.Attempts)
			}
		})
	}
}

// startHangingAgent starts `cadence run` of a one-step workflow whose agent
// hangs, and returns once the agent has started; the process ends with
// the test at the latest.
func startHangingAgent(t *testing.T) (p *project, cmd *exec.Cmd, stdout, stderr *bytes.Buffer) {
	t.Helper()
	p = newProject(t, simWorkflow(`{max_attempts: 3}`, `
  - {id: one, prompt: go}
`), map[string]string{"scenario.yaml": "steps:\n  one: [{hang: true}]\n"})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	cmd = p.command(ctx, nil, "run")
	stdout, stderr = &bytes.Buffer{}, &bytes.Buffer{}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the agent to start", func() bool { return len(p.executions("one")) == 1 })
	return p, cmd, stdout, stderr
}

// TestG7SecondProcessGetsExit4 runs a second cadence while the first holds
// the lock: run and resume get exit 4 naming the holder's pid, while
// inspect reads the live state without the lock.
func TestG7SecondProcessGetsExit4(t *testing.T) {
	p := newProject(t, simWorkflow(`{max_attempts: 3}`, `
  - {id: one, prompt: go}
`), map[string]string{"scenario.yaml": "steps:\n  one: [{hang: true}]\n"})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := p.command(ctx, nil, "run")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGKILL)
		_ = cmd.Wait()
	}()
	waitFor(t, "the agent to start", func() bool { return len(p.executions("one")) == 1 })
	for _, args := range [][]string{{"run"}, {"resume"}, {"run", "--new"}} {
		r := p.cadence(nil, args...)
		r.exits(t, 4)
		if want := "pid " + itoa(cmd.Process.Pid); !strings.Contains(r.stderr, want) {
			t.Errorf("%v: stderr %q does not name the holder (%s)", args, r.stderr, want)
		}
	}
	s := step(p.inspect(), "one")
	if s.Status != "running" || len(s.Attempts) != 1 || s.Attempts[0].PID == nil {
		t.Fatalf("inspect during the run: %+v", s)
	}
}

// helpProject is a step whose agent asks for help once, gets advice from an
// advisor round (attempt 2), and then answers. advisor is the scenario entry
// of the advisor's attempt.
func helpProject(t *testing.T, advisor string) *project {
	return newProject(t, simWorkflow(`{max_attempts: 3, backoff: fixed, initial: 10ms, jitter: none}`, `
  - id: ask
    prompt: build it
    handoff: {schema: s.json}
    on_help: {prompt: 'Advise: {{ .Help.Context }}'}
`), map[string]string{"s.json": `{"type": "object", "required": ["db"]}`, "scenario.yaml": `
steps:
  ask:
    - help: {context: {question: which database?}}
    - ` + advisor + `
    - answer: '{"db": "postgres"}'
`})
}

// TestHelpRoundSurvivesResume kills cadence right after an advisor's answer
// was committed: the resumed run continues the agent's session with the
// stored advice and never asks the advisor again for that round.
func TestHelpRoundSurvivesResume(t *testing.T) {
	p := helpProject(t, "answer: Use PostgreSQL.")
	// Outcome commits: 1 = the help request, 2 = the advisor round.
	p.cadence([]string{"CADENCE_FAILPOINT=after-outcome-commit:2"}, "run").killed(t)
	p.cadence(nil, "resume").exits(t, 0)
	recs := p.executions("ask")
	if len(recs) != 3 {
		t.Fatalf("executions %+v, want 3: request, advisor once, answer", recs)
	}
	if recs[2].Attempt != 3 || !recs[2].Resume || recs[2].SessionID != recs[0].SessionID || !strings.Contains(recs[2].Prompt, "Use PostgreSQL.") {
		t.Fatalf("the answer attempt %+v did not continue the session with the stored advice", recs[2])
	}
	s := step(p.inspect(), "ask")
	if s.AttemptsUsed != 2 || s.Attempts[1].Kind != "help" || s.Attempts[1].Status != "succeeded" {
		t.Fatalf("attempts %+v", s.Attempts)
	}
}

// TestHelpRoundCutShortIsAskedAgain kills cadence while the advisor runs:
// the round never finished, so the resumed run asks again, once.
func TestHelpRoundCutShortIsAskedAgain(t *testing.T) {
	p := helpProject(t, "{hang: true}")
	p.killWhen(t, "run", func() bool { return len(p.executions("ask")) == 2 })
	// The advisor is asked again as attempt 3; the scenario answers it with
	// the JSON, which is fine advice, and the agent then answers as attempt 4
	// (the last scenario entry repeats).
	p.cadence(nil, "resume").exits(t, 0)
	s := step(p.inspect(), "ask")
	kinds := []string{}
	for _, a := range s.Attempts {
		kinds = append(kinds, a.Kind+"/"+string(a.Status))
	}
	want := "initial/failed help/interrupted help/succeeded followup/succeeded"
	if strings.Join(kinds, " ") != want {
		t.Fatalf("attempts %v, want %s", kinds, want)
	}
	if s.AttemptsUsed != 2 {
		t.Fatalf("attempts_used %d, want 2: help rounds do not count", s.AttemptsUsed)
	}
}

// TestUsageLimitWaitSurvivesResume kills cadence while it waits out a usage
// limit: the refused attempt used up no attempt, the circuit stays open
// until the reset across the restart, and the resumed run waits for the
// stored deadline before asking again.
func TestUsageLimitWaitSurvivesResume(t *testing.T) {
	p := newProject(t, simWorkflow(`{max_attempts: 2, backoff: fixed, initial: 10ms, jitter: none}`, `
  - {id: one, prompt: go}
`), map[string]string{"scenario.yaml": `
steps:
  one:
    - rate_limit: {retry_after: 2s}
    - answer: '{"ok": true}'
`})
	p.cadence([]string{"CADENCE_FAILPOINT=during-backoff"}, "run").killed(t)
	rep := p.inspect()
	s := step(rep, "one")
	if s.AttemptsUsed != 0 || !s.Attempts[0].Uncounted || s.Attempts[0].Class != "transient" || s.NextRetryAt == nil {
		t.Fatalf("after the kill: %+v", s)
	}
	if len(rep.Circuits) != 1 || rep.Circuits[0].State != "open" || rep.Circuits[0].OpenUntil == nil {
		t.Fatalf("circuit after the kill: %+v, want open until the reset", rep.Circuits)
	}
	deadline := *s.NextRetryAt
	p.cadence(nil, "resume").exits(t, 0)
	s = step(p.inspect(), "one")
	if s.AttemptsUsed != 1 || len(s.Attempts) != 2 || s.Attempts[1].StartedAt.Before(deadline) {
		t.Fatalf("after resume: %+v (deadline %s)", s, deadline)
	}
}

// TestG6GrandchildrenDieWithCadence runs an agent that leaves its work to a
// child, as launchers do, and kills cadence with SIGKILL: the parent-death
// signal reaches only the process cadence started, so the supervisor that
// leads the agent's group must take the grandchild down too — at once, not
// only when a resume comes.
func TestG6GrandchildrenDieWithCadence(t *testing.T) {
	p := newProject(t, `version: 1
defaults: {agent: launcher}
agents:
  launcher:
    preset: exec
    command: [sh, -c, 'sleep 300 & echo $! > grandchild.pid; wait']
steps:
  - {id: one, prompt: go}
`, nil)
	pidFile := filepath.Join(p.dir, "grandchild.pid")
	var grandchild int
	p.killWhen(t, "run", func() bool {
		b, err := os.ReadFile(pidFile)
		if err != nil || !bytes.HasSuffix(b, []byte("\n")) {
			return false
		}
		grandchild, err = strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil && alive(grandchild)
	})
	waitFor(t, "the agent's child to be gone", func() bool { return !alive(grandchild) })
}

// One supervisor serves attempts one after another. What an attempt left
// running, in a session of its own too, is killed at that attempt's end,
// before the supervisor serves the next; and the next attempt's agent,
// under that same supervisor, dies with cadence as a first attempt's does.
func TestG6ReusedSupervisor(t *testing.T) {
	p := newProject(t, `version: 1
steps:
  - id: zero
    run: [sh, -c, 'setsid sleep 300 & echo $! > left.pid']
  - id: one
    needs: [zero]
    run: [sh, -c, 'sleep 300 & echo $! > grandchild.pid; wait']
`, nil)
	var grandchild int
	p.killWhen(t, "run", func() bool {
		b, err := os.ReadFile(filepath.Join(p.dir, "grandchild.pid"))
		if err != nil || !bytes.HasSuffix(b, []byte("\n")) {
			return false
		}
		grandchild, err = strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil && alive(grandchild)
	})
	b, err := os.ReadFile(filepath.Join(p.dir, "left.pid"))
	if err != nil {
		t.Fatal(err)
	}
	left, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	if alive(left) {
		t.Errorf("step zero's setsid child (pid %d) is alive while step one runs", left)
	}
	run := p.inspect()
	zero, one := step(run, "zero").Attempts, step(run, "one").Attempts
	if len(zero) != 1 || len(one) != 1 || zero[0].PID == nil || one[0].PID == nil {
		t.Fatalf("attempts: zero %+v, one %+v", zero, one)
	}
	if *zero[0].PID != *one[0].PID {
		t.Errorf("step one ran under supervisor %d, step zero under %d: want the same one", *one[0].PID, *zero[0].PID)
	}
	waitFor(t, "step one's agent's child to be gone", func() bool { return !alive(grandchild) })
	waitFor(t, "the supervisor to be gone", func() bool { return !alive(*one[0].PID) })
}

// TestGuaranteesWithABigTranscriptInFlight kills cadence with SIGKILL while
// a 200 MB agent transcript streams through it, twice, at different points
// of the stream, and resumes: every guarantee holds as it does for a small
// session (each kill settled as one interrupted attempt, the session
// continued, no agent left behind, counts exact against the ledger), and
// the attempt's .out copy stops at transcript_max_bytes.
func TestGuaranteesWithABigTranscriptInFlight(t *testing.T) {
	const transcript = 200_000_000
	const outCap = 16 << 20
	p := newProject(t, simWorkflow(`{max_attempts: 4, backoff: fixed, initial: 100ms, jitter: none}`,
		"  - {id: one, prompt: go, handoff: {schema: s.json, transcript_max_bytes: "+strconv.Itoa(outCap)+"}}\n"),
		map[string]string{"s.json": boolSchema, "scenario.yaml": `steps:
  one:
    - {stdout_bytes: 200000000, answer: '{"ok": "no"}'}
    - {stdout_bytes: 200000000, answer: '{"ok": true}'}
`})
	d := newDurability(t, p, nil)
	for i, at := range []int64{60 << 20, 150 << 20} {
		// Kill once the agent has streamed `at` bytes of its attempt.
		n := i + 1
		p.killWhen(t, map[bool]string{true: "run", false: "resume"}[i == 0], func() bool {
			return streamed(p, n) >= at
		})
		d.afterKill()
	}
	r := p.cadence(nil, "resume")
	r.exits(t, 0)
	d.finish("succeeded")

	s := step(p.inspect(), "one")
	statuses := make([]string, len(s.Attempts))
	for i, a := range s.Attempts {
		statuses[i] = string(a.Status)
	}
	if want := []string{"interrupted", "interrupted", "succeeded"}; !slices.Equal(statuses, want) {
		t.Fatalf("attempts %v, want %v", statuses, want)
	}
	last := s.Attempts[2]
	if last.SessionID == "" || last.SessionID != s.Attempts[1].SessionID {
		t.Errorf("the attempt after an interrupted one runs in session %q, want %q (G5)", last.SessionID, s.Attempts[1].SessionID)
	}
	fi, err := os.Stat(filepath.Join(p.dir, last.OutputFile))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() > outCap+outputCapSlack || fi.Size() < outCap {
		t.Errorf("the .out copy of a %d-byte transcript is %d bytes, want it cut at %d", transcript, fi.Size(), outCap)
	}
}

// streamed is how many bytes the agent of attempt n of step one has
// written so far: the wchar of its process (/proc/PID/io), found through
// the sim's ledger; 0 until it runs.
func streamed(p *project, n int) int64 {
	for _, r := range p.ledger() {
		if r.Step != "one" || r.Attempt != n {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", itoa(r.PID), "io"))
		if err != nil {
			return 0
		}
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "wchar: "); ok {
				w, _ := strconv.ParseInt(v, 10, 64)
				return w
			}
		}
	}
	return 0
}

// TestChecksRunAgainNeverTheAgent kills cadence before, during and after
// the first check of an attempt. Resume runs the attempt's checks again on
// its stored handoff and never its agent: attempt 1 executed once, its
// check ran again (a row for every run, no run without its row), and the
// follow-up fixed the project in attempt 2.
func TestChecksRunAgainNeverTheAgent(t *testing.T) {
	for _, fp := range []string{"before-check", "during-check", "after-check-commit"} {
		t.Run(fp, func(t *testing.T) {
			p := newProject(t, simWorkflow(`{max_attempts: 3, backoff: fixed, initial: 10ms, jitter: none}`, `
  - id: one
    prompt: go
    handoff: {schema: s.json}
    checks:
      - {name: fixed, run: 'echo "$CADENCE_ATTEMPT" >> checks.ledger; sleep 0.2; grep -q fixed state.txt'}
`), map[string]string{"s.json": boolSchema, "scenario.yaml": `steps:
  one:
    - {edit: {state.txt: broken}, answer: '{"ok": true}'}
    - {edit: {state.txt: fixed}, answer: '{"ok": true}'}
`})
			r := p.cadence([]string{"CADENCE_FAILPOINT=" + fp}, "run")
			if r.signal != syscall.SIGKILL {
				t.Fatalf("cadence was not killed at %s: exit %d\n%s", fp, r.code, r.stderr)
			}
			before := checkLedger(t, p)
			r = p.cadence(nil, "resume")
			r.exits(t, 0)

			if n := len(p.executions("one")); n != 2 {
				t.Fatalf("the agent ran %d times, want 2 (attempt 1 once, its follow-up once)", n)
			}
			s := step(p.inspect(), "one")
			if len(s.Attempts) != 2 || s.Attempts[0].Class != "check" || s.Attempts[1].Status != "succeeded" {
				t.Fatalf("attempts %+v, want a failed check, then a success", s.Attempts)
			}
			var statuses []string
			for _, c := range s.Attempts[0].Checks {
				statuses = append(statuses, c.Status)
			}
			// The run cut short by the kill, if it had started, is
			// interrupted; the one after the resume failed.
			want := map[string][]string{
				"before-check":       {"interrupted", "failed"},
				"during-check":       {"interrupted", "failed"},
				"after-check-commit": {"failed", "failed"},
			}[fp]
			if !slices.Equal(statuses, want) {
				t.Errorf("attempt 1's check runs %v, want %v", statuses, want)
			}
			ran := checkLedger(t, p)
			// Killed during the check, cadence's supervisor takes the check
			// down with it: whether its first line had run is timing.
			switch {
			case fp == "before-check" && before["1"] != 0,
				fp == "after-check-commit" && before["1"] != 1,
				fp == "during-check" && before["1"] > 1:
				t.Errorf("before the resume, attempt 1's check ran %d times", before["1"])
			}
			if ran["1"] != before["1"]+1 || ran["2"] != 1 {
				t.Errorf("check runs by attempt %v, want attempt 1 run once more after the resume and attempt 2 once", ran)
			}
			if ran["1"] > len(s.Attempts[0].Checks) {
				t.Errorf("G1: %d check runs of attempt 1 but %d rows", ran["1"], len(s.Attempts[0].Checks))
			}
		})
	}
}

// checkLedger counts the check runs recorded in checks.ledger, by attempt.
func checkLedger(t *testing.T, p *project) map[string]int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(p.dir, "checks.ledger"))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, line := range strings.Fields(string(b)) {
		out[line]++
	}
	return out
}

// TestG5OperatorStopIsNotCounted stops cadence with Ctrl-C (and SIGTERM)
// while the only attempt a step allows runs: the attempt is recorded as
// interrupted but not counted, so `cadence resume` runs the step again,
// continuing the agent's session, and the run succeeds.
func TestG5OperatorStopIsNotCounted(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			p := newProject(t, simWorkflow(`{max_attempts: 1}`, `
  - {id: one, prompt: go, handoff: {schema: s.json}}
`), map[string]string{"s.json": boolSchema, "scenario.yaml": `
steps:
  one:
    - {hang: true}
    - answer: '{"ok": true}'
`})
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			cmd := p.command(ctx, nil, "run")
			var out, errb bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &errb
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "the agent to start", func() bool { return len(p.executions("one")) == 1 })
			_ = cmd.Process.Signal(sig)
			stopped := p.finish(cmd, cmd.Wait(), out.String(), errb.String())
			stopped.exits(t, 3)
			if !strings.Contains(stopped.stdout, "interrupted") || !strings.Contains(stopped.stdout, "(stopped by cadence: not counted against max_attempts)") {
				t.Errorf("the live view does not say the stopped attempt is not counted:\n%s", stopped.stdout)
			}

			s := step(p.inspect(), "one")
			if s.AttemptsUsed != 0 || len(s.Attempts) != 1 || s.Attempts[0].Status != "interrupted" || !s.Attempts[0].Uncounted {
				t.Fatalf("after %v: used %d, attempts %+v; want one interrupted attempt that is not counted", sig, s.AttemptsUsed, s.Attempts)
			}

			r := p.cadence(nil, "resume")
			r.exits(t, 0)
			s = step(p.inspect(), "one")
			if s.Status != "succeeded" || s.AttemptsUsed != 1 || len(s.Attempts) != 2 {
				t.Fatalf("after resume: status %s, used %d, attempts %+v", s.Status, s.AttemptsUsed, s.Attempts)
			}
			runs := p.executions("one")
			if len(runs) != 2 || runs[1].SessionID != runs[0].SessionID || !runs[1].Resume || s.Attempts[1].Kind != "followup" {
				t.Fatalf("the second attempt did not continue the first one's session: executions %+v, attempt %+v", runs, s.Attempts[1])
			}
		})
	}
}
