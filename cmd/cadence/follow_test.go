package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cadence-dev/cadence/internal/history"
)

// followWorkflow has a schema retry, a check, a map step of three items two
// at once (one retried), and agents that take a moment, so that a follower
// started once the run exists sees transitions both already committed and
// still to come.
const followWorkflow = `version: 1
defaults:
  agent: sim
  retry: {max_attempts: 3, backoff: fixed, initial: 100ms, jitter: none}
agents:
  sim:
    preset: sim
    scenario: scenario.yaml
steps:
  - id: plan
    prompt: plan
    handoff: {schema: s.json}
  - id: build
    prompt: build
    handoff: {schema: s.json}
    checks:
      - {name: ok, run: 'sleep 0.1; true'}
  - id: each
    prompt: 'each {{ .Item.Key }}'
    handoff: {schema: s.json}
    map: {items: {file: items.json}, key: /id, max_parallel: 2}
`

const followScenario = `steps:
  plan:
    - {sleep: 200ms, answer: '{"ok": "no"}'}
    - {sleep: 200ms, answer: '{"ok": true}'}
  build:
    - {sleep: 200ms, answer: '{"ok": true}'}
  each:
    - {sleep: 150ms, answer: '{"ok": true}'}
  each/b:
    - {sleep: 100ms, answer: '{"ok": 1}'}
    - {sleep: 100ms, answer: '{"ok": true}'}
`

// TestInspectFollow runs `cadence inspect --follow --json` from another
// process while `cadence run --json` works: the follower sees every
// transition the run emitted, each once, each unit's in order, and ends
// when the run ends, with its exit code.
func TestInspectFollow(t *testing.T) {
	p := newProject(t, followWorkflow, map[string]string{"s.json": boolSchema, "scenario.yaml": followScenario,
		"items.json": `[{"id": "a"}, {"id": "b"}, {"id": "c"}]`})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	run := p.command(ctx, nil, "run", "--json")
	var runOut bytes.Buffer
	run.Stdout = &runOut
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	runDone := make(chan error, 1)
	go func() { runDone <- run.Wait() }()
	waitFor(t, "the run to be recorded", func() bool {
		_, err := history.Inspect(ctx, p.dir, "", "", false)
		return err == nil
	})
	follow := p.command(ctx, nil, "inspect", "--follow", "--json")
	var followOut, followErr bytes.Buffer
	follow.Stdout, follow.Stderr = &followOut, &followErr
	if err := follow.Run(); err != nil {
		t.Fatalf("inspect --follow: %v\n%s", err, followErr.String())
	}
	if err := <-runDone; err != nil {
		t.Fatalf("run: %v", err)
	}

	got := followEvents(t, followOut.String())
	want := followEvents(t, runOut.String())
	if len(got) == 0 || got[len(got)-1].Type != history.EventRunFinished || got[len(got)-1].Status != "succeeded" {
		t.Fatalf("the follow did not end with the run's end: %v", got)
	}
	// Every attempt's start and end the run emitted, the follower saw once.
	key := func(e history.Event) string {
		return fmt.Sprintf("%s %s/%s #%d %s", e.Type, e.Step, e.Item, e.Attempt, e.Status)
	}
	count := map[string]int{}
	for _, e := range got {
		count[key(e)]++
	}
	for _, e := range want {
		switch e.Type {
		case history.EventAttemptStarted, history.EventAttemptFinished, history.EventCheckFinished,
			history.EventItemDead, history.EventRunFinished:
			if count[key(e)] != 1 {
				t.Errorf("the run emitted %q; the follower saw it %d times", key(e), count[key(e)])
			}
		}
	}
	for k, n := range count {
		if n != 1 {
			t.Errorf("the follower printed %q %d times", k, n)
		}
	}
	// Each unit's attempts in order: started n, finished n, started n+1...
	next := map[string]int{}
	for _, e := range got {
		u := e.Step + "/" + e.Item
		switch e.Type {
		case history.EventAttemptStarted:
			if want := next[u] + 1; e.Attempt != want {
				t.Errorf("%s: attempt %d started after attempt %d's events", u, e.Attempt, next[u])
			}
		case history.EventAttemptFinished:
			next[u] = e.Attempt
		}
	}
	// The human view prints the same, and ends with the run.
	r := p.cadence(nil, "inspect", "--follow")
	r.exits(t, 0)
	if !strings.Contains(r.stdout, "each[b]") || !strings.HasSuffix(strings.TrimSpace(r.stdout), "succeeded") {
		t.Errorf("inspect --follow after the run:\n%s", r.stdout)
	}
}

func followEvents(t *testing.T, out string) []history.Event {
	t.Helper()
	var evs []history.Event
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		var e history.Event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("not a JSON event: %q: %v", sc.Text(), err)
		}
		evs = append(evs, e)
	}
	return evs
}

// startFollow starts `cadence inspect --follow` in the background; the
// returned function waits for it to end.
func startFollow(t *testing.T, p *project) (stdout, stderr *syncBuffer, wait func() result) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	cmd := p.command(ctx, nil, "inspect", "--follow")
	stdout, stderr = &syncBuffer{}, &syncBuffer{}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	return stdout, stderr, func() result {
		defer cancel()
		return p.finish(cmd, cmd.Wait(), stdout.String(), stderr.String())
	}
}

// A run whose cadence was killed stays recorded as running; the follower
// sees that no process holds the project, says so once, and waits: the
// `cadence resume` that continues the run is followed to the run's end,
// and a failed run ends the follow with exit 1.
func TestInspectFollowEnds(t *testing.T) {
	p := newProject(t, simWorkflow(`{max_attempts: 2, backoff: fixed, initial: 10ms, jitter: none}`,
		"  - {id: one, prompt: go, handoff: {schema: s.json}}\n"),
		map[string]string{"s.json": boolSchema, "scenario.yaml": "steps:\n  one: [{answer: '{\"ok\": 1}'}]\n"})
	r := p.cadence([]string{"CADENCE_FAILPOINT=after-agent-start:1"}, "run")
	if r.code == 0 {
		t.Fatalf("the failpoint did not stop the run: %s", r.stdout)
	}
	out, errOut, wait := startFollow(t, p)
	waitFor(t, "the follower to see that nothing works on the run", func() bool {
		return strings.Contains(out.String(), "no cadence process is working on the run") &&
			strings.Contains(errOut.String(), "waiting for it to be resumed")
	})
	p.cadence(nil, "resume").exits(t, 1)
	r = wait()
	r.exits(t, 1)
	if strings.Count(r.stdout, "no cadence process is working on the run") != 1 {
		t.Errorf("the follower should report the stop once:\n%s", r.stdout)
	}
	if !strings.Contains(r.stdout, "one          attempt 2 failed") || !strings.Contains(r.stdout, "FAILED") {
		t.Errorf("the follower did not follow the resume to the run's end:\n%s", r.stdout)
	}
	// Opened on the failed run, the follow replays it and ends at once.
	r = p.cadence(nil, "inspect", "--follow")
	r.exits(t, 1)
	if !strings.Contains(r.stdout, "FAILED") {
		t.Errorf("follow of a failed run:\n%s", r.stdout)
	}
}

// Opened before any run, the follow waits for one to start and follows it
// to its end, through a stop (SIGINT) and the resume that continues it.
func TestInspectFollowWaitsForTheRun(t *testing.T) {
	p := newProject(t, simWorkflow(`{max_attempts: 2, backoff: fixed, initial: 10ms, jitter: none}`,
		"  - {id: one, prompt: go, handoff: {schema: s.json}}\n  - {id: two, prompt: go, handoff: {schema: s.json}}\n"),
		map[string]string{"s.json": boolSchema, "scenario.yaml": "steps:\n  one: [{answer: '{\"ok\": true}'}]\n" +
			"  two: [{sleep: 30s, answer: '{\"ok\": true}'}, {answer: '{\"ok\": true}'}]\n"})
	out, errOut, wait := startFollow(t, p)
	waitFor(t, "the follower to wait for a run", func() bool {
		return strings.Contains(errOut.String(), "waiting for a run to start")
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	run := p.command(ctx, nil, "run")
	var runOut bytes.Buffer
	run.Stdout = &runOut
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the follower to see step two's agent start", func() bool {
		return strings.Contains(out.String(), "two          attempt 1 started")
	})
	_ = run.Process.Signal(syscall.SIGINT)
	p.finish(run, run.Wait(), runOut.String(), "").exits(t, 3)
	if !regexp.MustCompile(`(?m)^run \S+ interrupted$`).MatchString(runOut.String()) {
		t.Errorf("the stopped run should say only that it was interrupted:\n%s", runOut.String())
	}
	waitFor(t, "the follower to see the stop", func() bool {
		return strings.Contains(out.String(), "interrupted")
	})
	p.cadence(nil, "resume").exits(t, 0)
	r := wait()
	r.exits(t, 0)
	for _, want := range []string{"one          attempt 1 succeeded", "run .* interrupted", "two          attempt 2 succeeded", "run .* succeeded$"} {
		if !regexp.MustCompile("(?m)" + want).MatchString(r.stdout) {
			t.Errorf("the follow lacks %q:\n%s", want, r.stdout)
		}
	}
}
