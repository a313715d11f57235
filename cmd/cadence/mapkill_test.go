package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestKillWithItemsRunning sends SIGKILL to cadence while N items of a map
// step have their agents running (N = 1, 4, 16) and two items have already
// succeeded. After the kill no agent of any item survives (G6); the resume
// settles each of the N attempts as interrupted and continues each item's own
// session; no item that succeeded runs again; and every item's count is
// exact (G3), as the durability checker verifies against the sim's ledger.
// It runs once per state engine, each project on a database of its own.
func TestKillWithItemsRunning(t *testing.T) {
	forEachEngine(t, killWithItemsRunning)
}

// killWithItemsRunning runs the test with the state on engine e.
func killWithItemsRunning(t *testing.T, e stateEngine) {
	for _, n := range []int{1, 4, 16} {
		t.Run("items="+strconv.Itoa(n), func(t *testing.T) {
			items := []string{`{"id": "q1"}`, `{"id": "q2"}`}
			for i := range n {
				items = append(items, fmt.Sprintf(`{"id": "s%d"}`, i))
			}
			wf := `version: 1
defaults:
  agent: sim
  retry: {max_attempts: 3, backoff: fixed, initial: 10ms, jitter: none}
agents:
  sim:
    preset: sim
    scenario: scenario.yaml
    args: [--ledger, ledger.jsonl]
steps:
  - id: fix
    prompt: 'fix {{ .Item.Key }}'
    handoff: {schema: s.json}
    map: {items: {file: items.json}, key: /id, max_parallel: ` + strconv.Itoa(n) + `}
`
			// The quick items answer at once; the others work for a minute
			// on their first attempt, and answer at once when resumed.
			scenario := `steps:
  fix/q1: [{answer: '{"ok": true}'}]
  fix/q2: [{answer: '{"ok": true}'}]
  fix:
    - {sleep: 60s, answer: '{"ok": true}'}
    - {answer: '{"ok": true}'}
`
			p := newEngineProject(t, e, wf, map[string]string{"s.json": boolSchema, "scenario.yaml": scenario,
				"items.json": "[" + strings.Join(items, ", ") + "]"})
			d := newDurability(t, p, nil)

			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cmd := p.command(ctx, nil, "run")
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			waitFor(t, fmt.Sprintf("%d slow items running and 2 quick ones done", n), func() bool {
				rep, ok := d.report()
				if !ok {
					return false
				}
				running, succeeded := 0, 0
				for _, u := range units(rep) {
					for _, a := range u.Attempts {
						switch {
						case a.Status == "running" && a.PID != nil:
							running++
						case a.Status == "succeeded":
							succeeded++
						}
					}
				}
				started := 0
				for _, r := range p.ledger() {
					if strings.HasPrefix(r.Item, "s") {
						started++
					}
				}
				return running == n && succeeded == 2 && started == n
			})
			if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			<-done
			d.afterKill() // G6: every item's agent is gone with cadence

			r := p.cadence(nil, "resume")
			r.exits(t, 0)
			if got := strings.Count(r.stdout, "interrupted: cadence stopped during the attempt"); got != n {
				t.Errorf("resume settled %d attempts as interrupted, want %d:\n%s", got, n, r.stdout)
			}
			d.finish("succeeded")

			rep := p.inspect()
			for _, u := range units(rep) {
				want := 2
				if strings.HasSuffix(u.ID, "/q1") || strings.HasSuffix(u.ID, "/q2") {
					want = 1
				}
				if u.AttemptsUsed != want || len(u.Attempts) != want {
					t.Errorf("%s: %d attempts (%d counted), want %d", u.ID, len(u.Attempts), u.AttemptsUsed, want)
					continue
				}
				if want == 2 && (u.Attempts[0].Status != "interrupted" || u.Attempts[1].SessionID != u.Attempts[0].SessionID) {
					t.Errorf("%s: attempts %s then %s in sessions %s, %s; want interrupted, then the same session continued",
						u.ID, u.Attempts[0].Status, u.Attempts[1].Status, u.Attempts[0].SessionID, u.Attempts[1].SessionID)
				}
			}
		})
	}
}
