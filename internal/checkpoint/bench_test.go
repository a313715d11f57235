package checkpoint

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func reportMS(b *testing.B) {
	b.ReportMetric(float64(b.Elapsed())/float64(time.Millisecond)/float64(b.N), "ms/op")
}

// BenchmarkAttemptBookkeeping measures the durable writes of one attempt at
// synchronous=FULL: the commit before the agent starts (attempt row + step)
// and the commit of its outcome (attempt + step + circuit). Each is one
// fsynced transaction, so this is the floor cadence adds to every attempt.
func BenchmarkAttemptBookkeeping(b *testing.B) {
	benchAttemptBookkeeping(b, filepath.Join(b.TempDir(), "state.db"))
}

// BenchmarkPostgresAttemptBookkeeping is BenchmarkAttemptBookkeeping on
// PostgreSQL: two SERIALIZABLE transactions per attempt, each a few round
// trips to a server on loopback that fsyncs nothing (the test cluster).
func BenchmarkPostgresAttemptBookkeeping(b *testing.B) {
	benchAttemptBookkeeping(b, pg.NewDatabase(b))
}

func benchAttemptBookkeeping(b *testing.B, target string) {
	ctx := context.Background()
	s, err := Open(ctx, target)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	step := sampleStep("r", "implement", 0)
	step.status = StepRunning
	if err := s.Update(ctx, func(tx *Tx) error { return tx.CreateRun(sampleRun("r", t0), []Step{step}) }); err != nil {
		b.Fatal(err)
	}
	circuit := Circuit{Agent: "sim", State: "closed", UpdatedAt: t0}

	b.ResetTimer()
	for i := range b.N {
		a := sampleAttempt("r", "implement", i+1)
		if err := s.Update(ctx, func(tx *Tx) error {
			if err := tx.InsertAttempt(a); err != nil {
				return err
			}
			step.SessionID = fmt.Sprintf("sess-%d", i)
			return tx.UpdateStep(step)
		}); err != nil {
			b.Fatal(err)
		}
		if err := s.Update(ctx, func(tx *Tx) error {
			a.status, a.Class, a.FinishedAt, a.CostUSD = AttemptFailed, "schema", ptr(t0.Add(time.Second)), ptr(0.01)
			if err := tx.UpdateAttempt(a); err != nil {
				return err
			}
			step.NextRetryAt, step.DelayMS = ptr(t0.Add(2*time.Second)), ptr(int64(2000))
			if err := tx.UpdateStep(step); err != nil {
				return err
			}
			circuit.Failures = 0
			return tx.PutCircuit(circuit)
		}); err != nil {
			b.Fatal(err)
		}
	}
	reportMS(b)
}

// BenchmarkLatestState measures what resume reads to find where it stands:
// the latest unfinished run, its steps, each step's last attempt and the
// attempts left running. The cost must stay flat as the project's attempt
// history grows, since none of it scans the history.
func BenchmarkLatestState(b *testing.B) {
	benchLatestState(b, func() string { return filepath.Join(b.TempDir(), "state.db") }, 10_000, 100_000)
}

// BenchmarkPostgresLatestState is BenchmarkLatestState on PostgreSQL.
func BenchmarkPostgresLatestState(b *testing.B) {
	benchLatestState(b, func() string { return pg.NewDatabase(b) }, 10_000)
}

func benchLatestState(b *testing.B, target func() string, histories ...int) {
	for _, history := range histories {
		ctx := context.Background()
		s, err := Open(ctx, target())
		if err != nil {
			b.Fatal(err)
		}
		if err := seedHistory(ctx, s, history); err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("attempts=%d", history), func(b *testing.B) {
			for range b.N {
				if err := s.View(ctx, readLatestState); err != nil {
					b.Fatal(err)
				}
			}
			reportMS(b)
		})
		if err := s.Close(); err != nil {
			b.Fatal(err)
		}
	}
}

func readLatestState(tx *Tx) error {
	run, err := tx.LatestUnfinishedRun()
	if err != nil {
		return err
	}
	steps, err := tx.Steps(run.ID)
	if err != nil {
		return err
	}
	for _, st := range steps {
		if _, err := tx.LastAttempt(run.ID, st.ID); err != nil {
			return err
		}
	}
	running, err := tx.RunningAttempts(run.ID)
	if err != nil {
		return err
	}
	if len(running) != 1 {
		return fmt.Errorf("%d running attempts, want 1", len(running))
	}
	return nil
}

// seedHistory writes total attempts: finished runs of 5 steps × 20 attempts,
// then one interrupted run, started last, with one attempt left running.
func seedHistory(ctx context.Context, s *Store, total int) error {
	const steps, perStep = 5, 20
	return s.Update(ctx, func(tx *Tx) error {
		// The store's own INSERT, so that the seed keeps up with the columns
		// later migrations add.
		insert, err := tx.tx.PrepareNamedContext(ctx, insertAttemptQuery)
		if err != nil {
			return err
		}
		defer insert.Close()
		seedRun := func(id string, started time.Time, status RunStatus, attempts int, lastRunning bool) error {
			r := sampleRun(id, started)
			r.status = status
			st := make([]Step, steps)
			for i := range st {
				st[i] = sampleStep(id, fmt.Sprintf("step-%d", i), i)
			}
			if err := tx.CreateRun(r, st); err != nil {
				return err
			}
			for i := range st {
				for n := 1; n <= attempts; n++ {
					a := fullAttempt(id, st[i].ID)
					a.N = n
					if lastRunning && i == 0 && n == attempts {
						a.status, a.FinishedAt = AttemptRunning, nil
					}
					row, err := attemptToRow(a)
					if err != nil {
						return err
					}
					if _, err := insert.ExecContext(ctx, row); err != nil {
						return err
					}
				}
			}
			return nil
		}
		for i := range total / (steps * perStep) {
			if err := seedRun(fmt.Sprintf("done-%06d", i), t0.Add(time.Duration(i)*time.Minute), RunSucceeded, perStep, false); err != nil {
				return err
			}
		}
		return seedRun("current", t0.Add(time.Duration(total)*time.Minute), RunInterrupted, 3, true)
	})
}

// BenchmarkOpen measures opening an existing, current database: what every
// command pays before its first query, including preparing the store's
// statements.
func BenchmarkOpen(b *testing.B) {
	ctx := context.Background()
	path := filepath.Join(b.TempDir(), "state.db")
	s, err := Open(ctx, path)
	if err != nil {
		b.Fatal(err)
	}
	if err := s.Close(); err != nil {
		b.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		open func(context.Context, string) (*Store, error)
	}{{"read-write", Open}, {"read-only", OpenReadOnly}} {
		b.Run(tt.name, func(b *testing.B) {
			for range b.N {
				s, err := tt.open(ctx, path)
				if err != nil {
					b.Fatal(err)
				}
				if err := s.Close(); err != nil {
					b.Fatal(err)
				}
			}
			reportMS(b)
		})
	}
}

// BenchmarkAllAttempts measures reading a run of 10,000 attempts whole, as
// inspect does, with and without the prompts and diagnoses.
func BenchmarkAllAttempts(b *testing.B) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(b.TempDir(), "state.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	const steps, perStep = 100, 100
	if err := seedRun10k(ctx, s, steps, perStep); err != nil {
		b.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		read func(*Tx, string) ([]Attempt, error)
	}{{"all", (*Tx).AllAttempts}, {"brief", (*Tx).AllAttemptsBrief}} {
		b.Run(tt.name, func(b *testing.B) {
			for range b.N {
				if err := s.View(ctx, func(tx *Tx) error {
					as, err := tt.read(tx, "r")
					if err == nil && len(as) != steps*perStep {
						err = fmt.Errorf("%d attempts, want %d", len(as), steps*perStep)
					}
					return err
				}); err != nil {
					b.Fatal(err)
				}
			}
			reportMS(b)
		})
	}
}

// seedRun10k writes run "r" with steps × perStep attempts, each with a
// prompt and a diagnosis of realistic size.
func seedRun10k(ctx context.Context, s *Store, steps, perStep int) error {
	prompt := strings.Repeat("Read TASKS.md and reply with a JSON object listing the tasks. ", 8)
	details := []byte(`{"class":"schema","violations":[{"pointer":"/tasks","message":"missing required field \"tasks\""}]}`)
	return s.Update(ctx, func(tx *Tx) error {
		st := make([]Step, steps)
		for i := range st {
			st[i] = sampleStep("r", fmt.Sprintf("step-%03d", i), i)
		}
		if err := tx.CreateRun(sampleRun("r", t0), st); err != nil {
			return err
		}
		for i := range st {
			for n := 1; n <= perStep; n++ {
				a := fullAttempt("r", st[i].ID)
				a.N, a.Prompt, a.DetailsJSON = n, prompt, details
				if err := tx.InsertAttempt(a); err != nil {
					return err
				}
			}
		}
		return nil
	})
}
