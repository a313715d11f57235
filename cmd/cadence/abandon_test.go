package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/cadence-dev/cadence/internal/history"
)

// TestAbandonSettlesAttempts kills cadence with SIGKILL while the only
// place of an agent capped at max_concurrent: 1 is taken by a running
// attempt, then starts over with `run --new`. Abandoning the dead run
// settles its attempt in the same commit (interrupted) and kills its
// agent, so the new run takes the place at once and succeeds: left
// running, the attempt would hold the place for ever. Once per state
// engine (on PostgreSQL, the attempt's step is held by no live process).
func TestAbandonSettlesAttempts(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e stateEngine) {
		wf := `version: 1
agents:
  worker: {preset: exec, command: [sh, agent.sh], max_concurrent: 1}
defaults: {agent: worker, retry: {max_attempts: 1}}
steps:
  - {id: fix, prompt: fix}
`
		// The first attempt works for a minute; any later one answers.
		agent := "cat > /dev/null\nif mkdir slow.once 2>/dev/null; then sleep 60; fi\necho '{\"ok\": true}'\n"
		p := newEngineProject(t, e, wf, map[string]string{"agent.sh": agent})
		var old history.Report
		p.killWhen(t, "run", func() bool {
			if _, err := os.Stat(filepath.Join(p.dir, "slow.once")); err != nil {
				return false // its agent is not in its slow work yet
			}
			r := p.cadence(nil, "inspect", "--json")
			if r.code != 0 || json.Unmarshal([]byte(r.stdout), &old) != nil {
				return false
			}
			a := step(old, "fix").Attempts
			return len(a) == 1 && a[0].Status == "running" && a[0].PID != nil && alive(*a[0].PID)
		})
		pid := *step(old, "fix").Attempts[0].PID

		// Bounded: before the fix this run waited for the place for ever.
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		cmd := p.command(ctx, nil, "run", "--new")
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		p.finish(cmd, cmd.Run(), out.String(), errb.String()).exits(t, 0)
		if alive(pid) {
			t.Errorf("the agent of the abandoned run's attempt (pgid %d) still runs", pid)
		}

		r := p.cadence(nil, "inspect", "--json", "--run", old.Run.ID)
		r.exits(t, 0)
		var got history.Report
		if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
			t.Fatal(err)
		}
		a := step(got, "fix").Attempts
		if got.Run.Status != "abandoned" || len(a) != 1 || a[0].Status != "interrupted" || a[0].Class != "interrupted" || a[0].FinishedAt == nil {
			t.Errorf("the abandoned run: status %s, attempts %+v; want abandoned with its attempt interrupted", got.Run.Status, a)
		}
		if rep := p.inspect(); rep.Run.Status != "succeeded" || rep.Run.ID == old.Run.ID {
			t.Errorf("the new run %s is %s, want a new run succeeded", rep.Run.ID, rep.Run.Status)
		}
	})
}
