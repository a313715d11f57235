package history

import (
	"errors"

	"github.com/cadence-dev/cadence/internal/checkpoint"
	"github.com/cadence-dev/cadence/internal/holder"
)

// Holder is the cadence process that works an unfinished run.
type Holder struct {
	PID  int    `json:"pid"`
	Host string `json:"host"`
}

// runHolder returns the process that holds run now, or nil when none does:
// the run is over, its holder released it (an orderly stop), or the holder
// died (kill -9, a crash, a power cut) and the run waits for a resume. A
// holder on this machine is judged by its pid and start time, one
// elsewhere by the expiry of its lease, as a resume judges it.
func runHolder(tx *checkpoint.Tx, run *checkpoint.Run, self holder.Identity) (*Holder, error) {
	if run.Status() != checkpoint.RunRunning {
		return nil, nil
	}
	l, err := tx.LeaseOf(run.ID, "", "")
	if errors.Is(err, checkpoint.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if l.Owner == "" {
		return nil, nil
	}
	if self.Local(l.Owner) {
		if self.Gone(l.Owner, l.PID) {
			return nil, nil
		}
	} else {
		now, err := tx.Now()
		if err != nil {
			return nil, err
		}
		if !l.HeldAt(now) {
			return nil, nil
		}
	}
	return &Holder{PID: l.PID, Host: l.Host}, nil
}
