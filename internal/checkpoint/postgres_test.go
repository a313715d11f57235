package checkpoint

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/cadence-dev/cadence/internal/pgtest"
)

// The tests in this file are about PostgreSQL's side of the store:
// serializable writes run again on conflict, synchronous_commit,
// passwords kept out of messages.

// Two stores on one database move the same running attempt at the same
// moment, one to succeeded, the other to failed. Each reads "running",
// which allows either move; only one may land: the other's commit would
// turn succeeded into failed (or the reverse), which the transition table
// forbids. A barrier makes both read before either writes, every time.
// SERIALIZABLE fails the late writer with a serialization failure, its
// function runs again, reads the winner's status and is refused with
// ErrInvalidTransition: so the functions run three times in all.
func TestPostgresConcurrentTransitionsNeverBothSucceed(t *testing.T) {
	for _, swallow := range []bool{false, true} {
		t.Run(fmt.Sprintf("error swallowed=%v", swallow), func(t *testing.T) {
			ctx := context.Background()
			target := postgresEngine.target(t)
			stores := [2]*Store{openStore(t, target), openStore(t, target)}
			seedRun(t, stores[0], "r", t0, "plan")
			const rounds = 5
			update(t, stores[0], func(tx *Tx) error {
				for n := 1; n <= rounds; n++ {
					if err := tx.InsertAttempt(sampleAttempt("r", "plan", n)); err != nil {
						return err
					}
				}
				return nil
			})
			want := [2]AttemptStatus{AttemptSucceeded, AttemptFailed}
			for n := 1; n <= rounds; n++ {
				var calls atomic.Int32
				read := [2]chan struct{}{make(chan struct{}), make(chan struct{})}
				errs := [2]error{}
				var wg sync.WaitGroup
				for i := range stores {
					wg.Add(1)
					go func() {
						defer wg.Done()
						first := true
						errs[i] = stores[i].Update(ctx, func(tx *Tx) error {
							calls.Add(1)
							a, err := tx.Attempt("r", "plan", n)
							if err != nil {
								return err
							}
							if first { // both read before either writes
								first = false
								close(read[i])
								<-read[1-i]
							}
							a.status = want[i]
							err = tx.UpdateAttempt(*a)
							if err != nil && swallow && !errors.Is(err, ErrInvalidTransition) {
								// A caller that hides the store's error: the
								// conflict is still seen and the function
								// still runs again.
								return errors.New("something else went wrong")
							}
							return err
						})
					}()
				}
				wg.Wait()
				winner := -1
				for i, err := range errs {
					switch {
					case err == nil:
						if winner >= 0 {
							t.Fatalf("attempt %d: both moves succeeded", n)
						}
						winner = i
					case !errors.Is(err, ErrInvalidTransition):
						t.Fatalf("attempt %d: store %d: %v, want success or ErrInvalidTransition", n, i, err)
					}
				}
				if winner < 0 {
					t.Fatalf("attempt %d: neither move succeeded: %v", n, errs)
				}
				if got := calls.Load(); got != 3 {
					t.Errorf("attempt %d: the functions ran %d times, want 3 (the loser twice)", n, got)
				}
				view(t, stores[0], func(tx *Tx) error {
					a, err := tx.Attempt("r", "plan", n)
					if err == nil && a.Status() != want[winner] {
						t.Errorf("attempt %d: stored %s, want the winner's %s", n, a.Status(), want[winner])
					}
					return err
				})
			}
		})
	}
}

// Two cadence processes race over the same running attempts, one moving
// each to succeeded, the other to failed, without any coordination but
// the database's: every attempt ends with exactly one of the two moves
// accepted, and holds the status of the process that was.
func TestPostgresProcessesRaceOnAttempts(t *testing.T) {
	target := postgresEngine.target(t)
	s := openStore(t, target)
	seedRun(t, s, "r", t0, "plan")
	const attempts = 60
	update(t, s, func(tx *Tx) error {
		for n := 1; n <= attempts; n++ {
			if err := tx.InsertAttempt(sampleAttempt("r", "plan", n)); err != nil {
				return err
			}
		}
		return nil
	})
	statuses := []AttemptStatus{AttemptSucceeded, AttemptFailed}
	procs := make([]*raceProcess, len(statuses))
	for i, status := range statuses {
		procs[i] = startRaceProcess(t, target, status, attempts)
	}
	for _, p := range procs {
		if _, err := io.WriteString(p.stdin, "go\n"); err != nil {
			t.Fatal(err)
		}
	}
	accepted := map[int][]AttemptStatus{}
	for i, p := range procs {
		for n, outcome := range p.results(t) {
			if outcome == "ok" {
				accepted[n] = append(accepted[n], statuses[i])
			}
		}
	}
	view(t, s, func(tx *Tx) error {
		all, err := tx.Attempts("r", "plan")
		if err != nil {
			return err
		}
		for _, a := range all {
			if got := accepted[a.N]; len(got) != 1 || got[0] != a.Status() {
				t.Errorf("attempt %d: accepted moves %v, stored %s; want exactly one, the stored one", a.N, got, a.Status())
			}
		}
		return nil
	})
}

// raceProcess is a helper process of TestPostgresProcessesRaceOnAttempts.
type raceProcess struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout *bufio.Reader
}

func startRaceProcess(t *testing.T, target string, status AttemptStatus, attempts int) *raceProcess {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"=race", helperPathEnv+"="+target,
		"CHECKPOINT_TEST_STATUS="+string(status), "CHECKPOINT_TEST_COUNT="+strconv.Itoa(attempts))
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	p := &raceProcess{cmd: cmd, stdin: stdin, stdout: bufio.NewReader(stdout)}
	if line, err := p.stdout.ReadString('\n'); strings.TrimSpace(line) != "ready" {
		t.Fatalf("race helper did not get ready: %q, %v", line, err)
	}
	return p
}

// results reads the helper's "N ok" and "N refused" lines until it exits.
func (p *raceProcess) results(t *testing.T) map[int]string {
	t.Helper()
	out := map[int]string{}
	sc := bufio.NewScanner(p.stdout)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 2 {
			t.Fatalf("race helper printed %q", sc.Text())
		}
		n, err := strconv.Atoi(f[0])
		if err != nil {
			t.Fatal(err)
		}
		out[n] = f[1]
	}
	if err := p.cmd.Wait(); err != nil {
		t.Fatalf("race helper: %v", err)
	}
	return out
}

// runRaceHelper opens the store at target and, once told "go" on stdin,
// moves each running attempt of r/plan to the status in
// CHECKPOINT_TEST_STATUS, printing "N ok" or "N refused" for each.
func runRaceHelper(target string) error {
	ctx := context.Background()
	status := os.Getenv("CHECKPOINT_TEST_STATUS")
	count, err := strconv.Atoi(os.Getenv("CHECKPOINT_TEST_COUNT"))
	if err != nil {
		return err
	}
	s, err := Open(ctx, target)
	if err != nil {
		return err
	}
	defer s.Close()
	fmt.Println("ready")
	if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
		return err
	}
	for n := 1; n <= count; n++ {
		err := s.Update(ctx, func(tx *Tx) error {
			a, err := tx.Attempt("r", "plan", n)
			if err != nil {
				return err
			}
			a.status = AttemptStatus(status)
			return tx.UpdateAttempt(*a)
		})
		switch {
		case err == nil:
			fmt.Println(n, "ok")
		case errors.Is(err, ErrInvalidTransition):
			fmt.Println(n, "refused")
		default:
			return err
		}
	}
	return nil
}

// A function that keeps meeting serialization failures is run
// postgresWriteTries times, then Update gives up with ErrBusy. A function
// that met some and then succeeded commits once, and counts as one write
// transaction for InjectFault.
func TestPostgresConflictRetries(t *testing.T) {
	ctx := context.Background()
	s := postgresEngine.newStore(t)
	conflict := &pgconn.PgError{Code: pgSerializationFailure, Message: "could not serialize access"}
	calls := 0
	err := s.Update(ctx, func(tx *Tx) error {
		calls++
		return fmt.Errorf("write something: %w", conflict)
	})
	if !errors.Is(err, ErrBusy) || !errors.Is(err, conflict) {
		t.Errorf("Update that always conflicts: %v, want ErrBusy wrapping the serialization failure", err)
	}
	if calls != postgresWriteTries {
		t.Errorf("the function ran %d times, want %d", calls, postgresWriteTries)
	}

	s.InjectFault(Fault{Tx: 2})
	calls = 0
	update(t, s, func(tx *Tx) error {
		calls++
		if err := tx.CreateRun(sampleRun("r1", t0), nil); err != nil {
			return err
		}
		if calls < 3 {
			return &pgconn.PgError{Code: pgDeadlockDetected, Message: "deadlock detected"}
		}
		return nil
	})
	if calls != 3 {
		t.Errorf("the function ran %d times, want 3", calls)
	}
	err = s.Update(ctx, func(tx *Tx) error { return tx.CreateRun(sampleRun("r2", t0), nil) })
	if !errors.Is(err, ErrInjectedFault) {
		t.Errorf("second write transaction: %v, want the fault injected into it", err)
	}
}

// A function that goes on after a failed statement, as if it had not
// failed, cannot commit on PostgreSQL (the failure aborted the
// transaction); Update says what the failed statement violated.
func TestPostgresSwallowedStatementErrorFailsCommit(t *testing.T) {
	s := postgresEngine.newStore(t)
	seedRun(t, s, "r", t0, "plan")
	err := s.Update(context.Background(), func(tx *Tx) error {
		_ = tx.InsertStep(sampleStep("r", "plan", 0)) // a duplicate: refused
		return nil
	})
	if err == nil || !strings.Contains(err.Error(), "steps_pkey") || !strings.Contains(err.Error(), "23505") {
		t.Fatalf("Update after a swallowed failure: %v, want an error naming the failed statement", err)
	}
}

// UpdateRelaxed commits with synchronous_commit off, for its transaction
// only; Update keeps the server's setting.
func TestPostgresUpdateRelaxed(t *testing.T) {
	ctx := context.Background()
	s := postgresEngine.newStore(t)
	setting := func(update func(context.Context, func(*Tx) error) error) string {
		var v string
		if err := update(ctx, func(tx *Tx) error {
			if err := tx.CreateRun(sampleRun(fmt.Sprintf("r%p", &v), t0), nil); err != nil {
				return err
			}
			return tx.tx.GetContext(ctx, &v, "SHOW synchronous_commit")
		}); err != nil {
			t.Fatal(err)
		}
		return v
	}
	if got := setting(s.UpdateRelaxed); got != "off" {
		t.Errorf("inside UpdateRelaxed synchronous_commit is %q, want off", got)
	}
	if got := setting(s.Update); got != "on" {
		t.Errorf("inside Update after UpdateRelaxed synchronous_commit is %q, want on", got)
	}
	view(t, s, func(tx *Tx) error {
		runs, err := tx.Runs()
		if err == nil && len(runs) != 2 {
			t.Errorf("%d runs committed, want 2", len(runs))
		}
		return err
	})
}

// A password in the URL appears in no message and not in Path; a
// database that does not exist is named and the user told to create it.
func TestPostgresURLs(t *testing.T) {
	ctx := context.Background()
	c := pg.Cluster(t)
	withPassword := strings.Replace(c.URL("no_such_database"), "postgres@", "postgres:s3cret@", 1)
	_, err := Open(ctx, withPassword)
	if err == nil || strings.Contains(err.Error(), "s3cret") || !strings.Contains(err.Error(), "no_such_database") ||
		!strings.Contains(err.Error(), "create it first") {
		t.Errorf("Open of a missing database: %v, want a message naming it, saying to create it, without the password", err)
	}
	target := postgresEngine.target(t)
	s := openStore(t, strings.Replace(target, "postgres@", "postgres:s3cret@", 1)+"&password=s3cret")
	if strings.Contains(s.Path(), "s3cret") || !strings.HasPrefix(s.Path(), "postgres://postgres:xxxxx@") {
		t.Errorf("Path() = %q, want the URL with its password hidden", s.Path())
	}
	for _, u := range []string{"postgres://localhost/x", "postgresql://h/db", "postgres://"} {
		if !IsPostgresURL(u) {
			t.Errorf("IsPostgresURL(%q) = false", u)
		}
	}
	for _, p := range []string{"state.db", ".cadence/postgres://x", "/tmp/postgres"} {
		if IsPostgresURL(p) {
			t.Errorf("IsPostgresURL(%q) = true", p)
		}
	}
}

// A store rides out a restart of its server (pg_ctl restart: sessions
// ended, then a new server on the same port): a write whose server is
// away waits for it and then succeeds. The one thing it cannot know is
// whether a commit the server cut off landed: such a write fails, saying
// so, and is stored at most once. Every write that succeeded is stored
// once, none twice.
func TestPostgresRidesOutARestart(t *testing.T) {
	ctx := context.Background()
	// A cluster of its own: the shared one serves tests running at once.
	c, err := pgtest.Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Stop() })
	dbURL, _, err := c.CreateDatabase(ctx)
	if err != nil {
		t.Fatal(err)
	}
	s := openStore(t, dbURL)
	seedRun(t, s, "r", t0, "plan")

	restarted := make(chan error, 1)
	go func() { restarted <- c.Restart(ctx) }()
	restartDone := false
	// Runs before Stop, even when the test fails during the restart.
	t.Cleanup(func() {
		if !restartDone {
			<-restarted
		}
	})
	var (
		ok, cut []int // writes that succeeded; writes whose commit was cut off
		waited  int   // writes that found the server away and ran again
	)
	// Write until well after the restart: some writes fall while the
	// server is stopped or starting.
	for n := 0; !restartDone || len(ok) < 5; n++ {
		select {
		case err := <-restarted:
			restartDone = true
			if err != nil {
				t.Fatal(err)
			}
		default:
		}
		tries := 0
		err := s.Update(ctx, func(tx *Tx) error {
			tries++
			return tx.AddEvent(Event{RunID: "r", At: t0, Kind: "write", Detail: strconv.Itoa(n)})
		})
		switch {
		case err == nil:
			ok = append(ok, n)
		case strings.HasPrefix(err.Error(), "commit to ") && isUnavailable(err):
			cut = append(cut, n)
		default:
			t.Fatalf("write %d during the restart: %v", n, err)
		}
		if tries > 1 {
			waited++
		}
	}
	t.Logf("%d writes succeeded, %d ran again after losing the server, %d commits were cut off", len(ok), waited, len(cut))
	view(t, s, func(tx *Tx) error {
		events, err := tx.Events("r")
		if err != nil {
			return err
		}
		stored := map[int]int{}
		for _, e := range events {
			n, _ := strconv.Atoi(e.Detail)
			stored[n]++
		}
		for _, n := range ok {
			if stored[n] != 1 {
				t.Errorf("write %d succeeded and is stored %d times", n, stored[n])
			}
		}
		for _, n := range cut {
			if stored[n] > 1 {
				t.Errorf("write %d, cut off at its commit, is stored %d times", n, stored[n])
			}
		}
		if len(events) > len(ok)+len(cut) {
			t.Errorf("%d events stored, from %d writes", len(events), len(ok)+len(cut))
		}
		return nil
	})
}

// UpdateSyncedByStart is Update on PostgreSQL: another session may act
// on an attempt's row as soon as it is committed, so the commit waits
// for the server's WAL flush (synchronous_commit stays on).
func TestPostgresUpdateSyncedByStart(t *testing.T) {
	ctx := context.Background()
	s := postgresEngine.newStore(t)
	var v string
	if err := s.UpdateSyncedByStart(ctx, func(tx *Tx) error {
		if err := tx.CreateRun(sampleRun("r1", t0), nil); err != nil {
			return err
		}
		return tx.tx.GetContext(ctx, &v, "SHOW synchronous_commit")
	}); err != nil {
		t.Fatal(err)
	}
	if v != "on" {
		t.Errorf("inside UpdateSyncedByStart synchronous_commit is %q, want on", v)
	}
	view(t, s, func(tx *Tx) error {
		_, err := tx.Run("r1")
		return err
	})
}
