package checkpoint

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// TestCheckLeaseVerdicts gives a write under a lease each state the lease's
// row can be in, on both engines, and checks that it commits exactly when
// the lease is held (expiry counts on PostgreSQL only, see CheckLease) and
// otherwise is refused with ErrLeaseLost and a message saying why.
func TestCheckLeaseVerdicts(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		s := e.newStore(t)
		seedRun(t, s, "r", t0, "plan")
		held := Lease{RunID: "r", StepID: "plan", Owner: "a", Host: "host-a", PID: 100, Epoch: 3}
		tests := []struct {
			name string
			row  *Lease // the lease's row; nil: none was ever taken
			// expiresIn sets the row's expiry from now; nullExpiry
			// stores NULL there instead.
			expiresIn  time.Duration
			nullExpiry bool
			commits    bool // on SQLite; on PostgreSQL unless expired
			expired    bool
			message    string
		}{
			{name: "held", row: &held, expiresIn: time.Hour, commits: true},
			{name: "never taken", message: "the lease of step r/plan (epoch 3)"},
			{name: "taken at a higher epoch", row: &Lease{RunID: "r", StepID: "plan", Owner: "b", Host: "host-b", PID: 7, Epoch: 4},
				expiresIn: time.Hour, message: "pid 7 on host host-b holds it at epoch 4"},
			{name: "same epoch, other owner", row: &Lease{RunID: "r", StepID: "plan", Owner: "b", Host: "host-b", PID: 7, Epoch: 3},
				expiresIn: time.Hour, message: "holds it at epoch 3"},
			{name: "expired", row: &held, expiresIn: -time.Second, commits: true, expired: true, message: "it expired at"},
			{name: "no expiry stored", row: &held, nullExpiry: true, commits: true, expired: true, message: "it expired at 0001-01-01"},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				update(t, s, func(tx *Tx) error {
					if _, err := tx.exec(`DELETE FROM leases WHERE run_id = ? AND step_id = ?`, "r", "plan"); err != nil {
						return err
					}
					if tt.row == nil {
						return nil
					}
					now, err := tx.Now()
					if err != nil {
						return err
					}
					row := leaseToRow(*tt.row)
					row.ExpiresAt = toNullTime(ptr(now.Add(tt.expiresIn)))
					if tt.nullExpiry {
						row.ExpiresAt = nullTime{}
					}
					_, err = tx.namedExec(putLeaseQuery, row)
					return err
				})
				ctx := WithLease(context.Background(), held)
				err := s.Update(ctx, func(tx *Tx) error { return tx.AddEvent(Event{RunID: "r", At: t0, Kind: "fenced " + tt.name}) })
				want := tt.commits && !(tt.expired && e.name == "postgres")
				if want {
					if err != nil {
						t.Fatalf("write under the lease: %v, want it to commit", err)
					}
					return
				}
				if !errors.Is(err, ErrLeaseLost) {
					t.Fatalf("write under the lease: %v, want ErrLeaseLost", err)
				}
				if !strings.Contains(err.Error(), tt.message) {
					t.Errorf("message %q lacks %q", err, tt.message)
				}
			})
		}
	})
}
