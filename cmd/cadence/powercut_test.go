package main

import (
	"bufio"
	"context"
	"errors"
	"math/rand"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cadence-dev/cadence/internal/history"
	"github.com/cadence-dev/cadence/internal/powercut"
)

// powerCutSchedule is the configuration of TestPowerCutSchedule, from the
// environment so that a schedule can be replayed, lengthened, or run on a
// build broken on purpose.
type powerCutSchedule struct {
	seed   int64
	trials int // per model
	// fault is the CADENCE_STOREFAULT of every cadence process ("" for
	// none): unsynced-starts is the broken build the schedule must catch.
	fault string
}

// defaultPowerCutTrials keeps the schedule near half a minute on two
// shared cores; CADENCE_POWERCUT_TRIALS runs a long one.
const defaultPowerCutTrials = 1

func powerCutScheduleFromEnv(t *testing.T) powerCutSchedule {
	t.Helper()
	s := powerCutSchedule{seed: time.Now().UnixNano(), trials: defaultPowerCutTrials, fault: os.Getenv("CADENCE_POWERCUT_FAULT")}
	if v := os.Getenv("CADENCE_POWERCUT_SEED"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			t.Fatalf("CADENCE_POWERCUT_SEED=%q: %v", v, err)
		}
		s.seed = n
	}
	if v := os.Getenv("CADENCE_POWERCUT_TRIALS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("CADENCE_POWERCUT_TRIALS=%q: want a positive number", v)
		}
		s.trials = n
	}
	return s
}

// TestPowerCutSchedule runs the kill schedule's workflow (agents, retries
// with backoff, a schema failure and its follow-up, a file handoff, a
// when, a command step, checks, a map, a loop, a gate) with its project,
// state database and .cadence on the power-cut filesystem, and cuts the
// power 1 to 3 times a trial at random moments: every process of the
// project is killed, everything not fsynced is dropped, the filesystem is
// mounted again, and the run is resumed. After each cut and at the end,
// the guarantees G1–G5 and the decisions of SPEC 16.7 are checked against
// the sim agents' ledger, kept outside the filesystem, as in the kill
// schedule; and every command step's attempt must have found in
// CADENCE_OUTPUTS_DIR exactly the outputs of the steps it may read (SPEC
// 16.2). It runs on both models of the filesystem (POSIX, ext4).
//
// CADENCE_POWERCUT_TRIALS sets the trials per model, CADENCE_POWERCUT_SEED
// replays a schedule (its moments, not the machine's timing), and
// CADENCE_POWERCUT_FAULT=unsynced-starts runs it on a cadence that commits
// an attempt's row and pid without an fsync, which it must fail.
func TestPowerCutSchedule(t *testing.T) {
	if err := powercut.Available(); err != nil {
		t.Fatalf("the power-cut schedule needs a FUSE filesystem, and this machine cannot mount one: %v", err)
	}
	s := powerCutScheduleFromEnv(t)
	for i, model := range []powercut.Model{powercut.POSIX, powercut.Ext4} {
		t.Run(model.String(), func(t *testing.T) {
			seed := s.seed + int64(i)
			t.Logf("power-cut schedule on %s: seed %d (CADENCE_POWERCUT_SEED=%d to replay), %d trials, fault %q", model, s.seed, s.seed, s.trials, s.fault)
			rnd := rand.New(rand.NewSource(seed))
			start := time.Now()
			var trials, cuts, execs, adopted, interrupted, failed, violations int
			for trial := 1; trial <= s.trials; trial++ {
				var d *durability
				ok := t.Run("trial"+strconv.Itoa(trial), func(t *testing.T) {
					d = powerCutTrial(t, model, rnd, s.fault, &execs)
				})
				if d != nil {
					t.Logf("trial %d on %s: %d cuts, ended %s, violations: %v", trial, model, d.kills,
						map[bool]string{false: "succeeded", true: "failed"}[d.failed], !ok)
					cuts += d.kills
					adopted += d.adopted
					interrupted += d.interrupted
					if d.failed {
						failed++
					}
				}
				if !ok {
					violations++
				}
				trials++
			}
			t.Logf("power-cut schedule on %s: seed %d, %d trials, %d cuts, %d executions, %d attempts adopted, %d interrupted, %d runs failed by exhaustion, %d trials with violations, %s",
				model, s.seed, trials, cuts, execs, adopted, interrupted, failed, violations, time.Since(start).Round(time.Millisecond))
		})
	}
}

// powerCutTrial takes one project on the power-cut filesystem from run to
// finish through 1 to 3 power cuts, adding the executions of its agents
// and commands to execs.
func powerCutTrial(t *testing.T, model powercut.Model, rnd *rand.Rand, fault string, execs *int) *durability {
	outside := t.TempDir()
	ledger, seen := filepath.Join(outside, "ledger.jsonl"), filepath.Join(outside, "seen.txt")
	wf := strings.ReplaceAll(killWorkflow, "[--ledger, ledger.jsonl]", "[--ledger, "+ledger+"]")
	command := strings.ReplaceAll(ledgerCommand, ">> ledger.jsonl", ">> "+ledger) +
		// One write of the whole line: a cut in the middle of the
		// listing leaves no part of a line for the next attempt's to
		// follow.
		`seen=$(cd "$CADENCE_OUTPUTS_DIR" && for f in *; do printf '%s=%s ' "$f" "$(cat "$f")"; done)` + "\n" +
		`echo "$seen" >> ` + seen + "\n"
	backing := newProject(t, wf, map[string]string{"s.json": boolSchema, "scenario.yaml": killScenario, "items.json": killItems,
		"command.sh": command})
	fs := mountPowerCut(t, backing.dir, model)
	p := &project{t: t, dir: fs.Dir(), ledgerFile: ledger, cwd: outside}
	if fault != "" {
		p.env = []string{"CADENCE_STOREFAULT=" + fault}
	}
	d := newDurability(t, p, map[string]string{"write": "out/write.json"})
	d.byProcess = true
	defer func() { *execs += len(p.ledger()) }()
	cuts := 1 + rnd.Intn(3)
	cmd := "run"
	for {
		var after time.Duration
		if d.kills < cuts {
			after = time.Duration(rnd.Int63n(int64(1500*time.Millisecond))) + 20*time.Millisecond
		}
		r := startAndKill(t, p, cmd, after)
		if r.signal != syscall.SIGKILL && r.code == exitAwaiting {
			d.checkDecisions(p.inspect())
			p.cadence(nil, "approve", "gate", "--by", "schedule").exits(t, 0)
			cmd = "resume"
			continue
		}
		if r.signal != syscall.SIGKILL {
			if r.code != 0 && r.code != 1 {
				r.exits(t, 0)
			}
			d.finish(map[int]string{0: "succeeded", 1: "failed"}[r.code])
			d.failed = r.code == 1
			checkOutputsSeen(t, p.inspect(), seen)
			return d
		}
		cutPower(t, fs)
		d.afterKill()
		var ended string
		if cmd, ended = d.next(); ended != "" {
			d.finish(ended)
			d.failed = ended == "failed"
			checkOutputsSeen(t, p.inspect(), seen)
			return d
		}
	}
}

// mountPowerCut mounts the power-cut filesystem over backing, on a
// directory of its own, until the test ends.
func mountPowerCut(t *testing.T, backing string, model powercut.Model) *powercut.FS {
	t.Helper()
	fs, err := powercut.Mount(backing, t.TempDir(), model)
	if err != nil {
		t.Fatalf("the power-cut filesystem cannot be mounted on this machine: %v", err)
	}
	t.Cleanup(func() {
		killUnder(t, fs.Dir())
		if err := fs.Unmount(); err != nil {
			t.Error(err)
		}
	})
	return fs
}

// cutPower cuts the power of the project: every process working in it is
// killed, what was not durable is dropped, and the filesystem comes back.
func cutPower(t *testing.T, fs *powercut.FS) {
	t.Helper()
	killUnder(t, fs.Dir())
	if err := fs.Cut(); err != nil {
		t.Fatal(err)
	}
}

// killUnder sends SIGKILL to every process that works in dir (cadence, its
// supervisors, agents, commands and checks), until none is left.
func killUnder(t *testing.T, dir string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		pids := processesUnder(dir)
		if len(pids) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("processes %v still work in %s", pids, dir)
		}
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// processesUnder lists the live processes whose working directory, or a
// file they hold open, is dir or below it.
func processesUnder(dir string) []int {
	under := func(path string) bool { return path == dir || strings.HasPrefix(path, dir+"/") }
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		uses := false
		if cwd, err := os.Readlink(filepath.Join("/proc", e.Name(), "cwd")); err == nil && under(cwd) {
			uses = true
		}
		fds, _ := os.ReadDir(filepath.Join("/proc", e.Name(), "fd"))
		for _, fd := range fds {
			if uses {
				break
			}
			if target, err := os.Readlink(filepath.Join("/proc", e.Name(), "fd", fd.Name())); err == nil && under(target) {
				uses = true
			}
		}
		if uses && alive(pid) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// checkOutputsSeen checks what each attempt of the command step build
// found in its CADENCE_OUTPUTS_DIR (recorded in seen, outside the
// filesystem): exactly the outputs of the steps it may read that
// succeeded, whole (SPEC 16.2); every agent step's accepted answer in
// this workflow is {"ok":true}.
func checkOutputsSeen(t *testing.T, rep history.Report, seen string) {
	t.Helper()
	var want strings.Builder
	for _, id := range []string{"docs", "fetch", "plan", "review", "write"} { // build's ancestors, as ls sorts them
		if step(rep, id).Status == "succeeded" {
			want.WriteString(id + `.json={"ok":true} `)
		}
	}
	f, err := os.Open(seen)
	if errors.Is(err, os.ErrNotExist) {
		return // build never ran
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		if sc.Text() != want.String() {
			t.Errorf("SPEC 16.2: attempt %d of build found in CADENCE_OUTPUTS_DIR\n  %s\nwant\n  %s", n, sc.Text(), want.String())
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
}

// TestPowerCutKeepsTheAgentsSession cuts the power while an agent runs
// and nothing else commits: its attempt's pid must have been durable
// before it ran, so resume knows the agent ran, continues its session
// with a follow-up (G5) rather than a fresh session with the original
// prompt, and inspect does not call it "interrupted before the agent
// started". On both models of the filesystem, and for a file handoff
// the agent wrote and fsynced before the cut, which resume adopts.
func TestPowerCutKeepsTheAgentsSession(t *testing.T) {
	if err := powercut.Available(); err != nil {
		t.Fatalf("this test needs a FUSE filesystem, and this machine cannot mount one: %v", err)
	}
	for _, model := range []powercut.Model{powercut.POSIX, powercut.Ext4} {
		t.Run(model.String(), func(t *testing.T) {
			outside := t.TempDir()
			ledger := filepath.Join(outside, "ledger.jsonl")
			wf := strings.ReplaceAll(simWorkflow(`{max_attempts: 3, backoff: fixed, initial: 10ms, jitter: none}`, `
  - {id: one, prompt: go, handoff: {schema: s.json}}
  - {id: two, needs: [one], prompt: go, handoff: {from: file, path: out/two.json, schema: s.json}}
`), "[--ledger, ledger.jsonl]", "[--ledger, "+ledger+"]")
			backing := newProject(t, wf, map[string]string{"s.json": boolSchema, "scenario.yaml": `
steps:
  one:
    - {hang: true}
    - {answer: '{"ok": true}'}
  two:
    - {write_file: '{"ok": true}', answer: done, linger: 1m}
`})
			fs := mountPowerCut(t, backing.dir, model)
			p := &project{t: t, dir: fs.Dir(), ledgerFile: ledger, cwd: outside}

			// Cut while one's agent hangs.
			run := powerCutStart(t, p, "run")
			waitFor(t, "step one's agent to run", func() bool { return len(p.executions("one")) == 1 })
			cutPower(t, fs)
			run.wait(t)
			// Cut while two's agent lingers after writing its file.
			resume := powerCutStart(t, p, "resume")
			waitFor(t, "step two's agent to write its handoff", func() bool {
				_, err := os.Stat(filepath.Join(backing.dir, "out", "two.json"))
				return err == nil
			})
			cutPower(t, fs)
			resume.wait(t)
			p.cadence(nil, "resume").exits(t, 0)

			recs := p.executions("one")
			if len(recs) != 2 || !recs[1].Resume || recs[1].SessionID != recs[0].SessionID {
				t.Errorf("executions of one %+v, want the second to resume the first's session", recs)
			}
			rep := p.inspect()
			one := step(rep, "one")
			if len(one.Attempts) != 2 || one.Attempts[0].Status != "interrupted" || one.Attempts[0].PID == nil ||
				strings.Contains(one.Attempts[0].Error, "before the agent started") || one.Attempts[1].Kind != "followup" {
				t.Errorf("attempts of one %+v, want attempt 1 interrupted with its pid, then a follow-up", one.Attempts)
			}
			if n := len(p.executions("two")); n != 1 {
				t.Errorf("step two's agent ran %d times, want once: its fsynced handoff is adopted", n)
			}
			if two := step(rep, "two"); len(two.Attempts) != 1 || two.Attempts[0].Status != "adopted" {
				t.Errorf("attempts of two %+v, want one adopted", two.Attempts)
			}
		})
	}
}

// powerCutStart starts cadence in the background; wait returns once the
// power cut (or anything else) ended it.
func powerCutStart(t *testing.T, p *project, name string) *proc {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	cmd := p.command(ctx, nil, name)
	pr := &proc{cmd: cmd, out: &syncBuffer{}, err: &syncBuffer{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = pr.out, pr.err
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	go func() {
		defer cancel()
		pr.res = p.finish(cmd, cmd.Wait(), pr.out.String(), pr.err.String())
		close(pr.done)
	}()
	return pr
}
