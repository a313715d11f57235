package checkpoint

import (
	"context"
	"fmt"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// BenchmarkFencedWrite measures one write transaction made under a step's
// lease, as each of an attempt's three writes is: the lease checked
// (CheckLease), the step read and updated. On SQLite the transaction
// commits relaxed (UpdateRelaxed, no fsync), so that the figure is the
// process's CPU rather than the disk's latency; on PostgreSQL it is
// Update, round trips to a server on loopback. cpu-µs/op is the CPU this
// process used (getrusage: the server's is not counted), which a loaded
// machine disturbs far less than the time; allocs/op is what the garbage
// collector is given per write.
func BenchmarkFencedWrite(b *testing.B) {
	b.Run("sqlite", func(b *testing.B) {
		benchFencedWrite(b, filepath.Join(b.TempDir(), "state.db"), true)
	})
	b.Run("postgres", func(b *testing.B) {
		benchFencedWrite(b, pg.NewDatabase(b), false)
	})
}

func benchFencedWrite(b *testing.B, target string, relaxed bool) {
	ctx := context.Background()
	s, err := Open(ctx, target)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	step := sampleStep("r", "implement", 0)
	step.status = StepRunning
	var lease Lease
	if err := s.Update(ctx, func(tx *Tx) error {
		if err := tx.CreateRun(sampleRun("r", t0), []Step{step}); err != nil {
			return err
		}
		lease, _, err = tx.AcquireLease(Lease{RunID: "r", StepID: "implement", Owner: "a", Host: "host-a", PID: 100}, time.Hour, nil)
		return err
	}); err != nil {
		b.Fatal(err)
	}
	update := s.Update
	if relaxed {
		update = s.UpdateRelaxed
	}
	fenced := WithLease(ctx, lease)
	b.ReportAllocs()
	cpu0 := processCPU(b)
	for i := 0; b.Loop(); i++ {
		if err := update(fenced, func(tx *Tx) error {
			cur, err := tx.Unit(step.Unit())
			if err != nil {
				return err
			}
			cur.SessionID = fmt.Sprintf("sess-%d", i)
			return tx.UpdateStep(*cur)
		}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64((processCPU(b)-cpu0).Microseconds())/float64(b.N), "cpu-µs/op")
}

// processCPU is the user and system CPU time this process has used.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
