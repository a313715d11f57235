package checkpoint

import (
	"errors"
	"testing"
	"time"
)

func TestParseFault(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Fault
		bad  bool
	}{
		{in: "", want: Fault{}},
		{in: "before-commit:3", want: Fault{Tx: 3}},
		{in: "after-commit:1", want: Fault{Tx: 1, AfterCommit: true}},
		{in: "unsynced-starts", want: Fault{UnsyncedStarts: true}},
		{in: "unsynced-starts:1", bad: true},
		{in: "after-commit:0", bad: true},
		{in: "during-commit:2", bad: true},
		{in: "before-commit", bad: true},
		{in: "before-commit:x", bad: true},
	} {
		got, err := ParseFault(tc.in)
		if (err != nil) != tc.bad || got != tc.want {
			t.Errorf("ParseFault(%q) = %+v, %v", tc.in, got, err)
		}
	}
}

// TestInjectedFaults checks both kinds of injected failure on the second
// write transaction: before commit nothing lands; after commit the write
// lands although Update reported an error.
func TestInjectedFaults(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		for _, after := range []bool{false, true} {
			s := e.newStore(t)
			at := time.Now().UTC()
			s.InjectFault(Fault{Tx: 2, AfterCommit: after})
			update(t, s, func(tx *Tx) error { return tx.CreateRun(sampleRun("r1", at), nil) })
			err := s.Update(t.Context(), func(tx *Tx) error { return tx.CreateRun(sampleRun("r2", at.Add(time.Second)), nil) })
			if !errors.Is(err, ErrInjectedFault) {
				t.Fatalf("after=%v: second write returned %v, want the injected fault", after, err)
			}
			var landed bool
			view(t, s, func(tx *Tx) error {
				_, err := tx.Run("r2")
				landed = err == nil
				return nil
			})
			if landed != after {
				t.Fatalf("after=%v: the faulted write landed=%v", after, landed)
			}
			// The third write is not faulted.
			update(t, s, func(tx *Tx) error { return tx.CreateRun(sampleRun("r3", at.Add(2*time.Second)), nil) })
		}
	})
}
