package checkpoint

import (
	"errors"
	"testing"
)

// Agent output may hold NUL bytes and invalid UTF-8, which PostgreSQL's
// text type refuses: every field that can carry it is stored with each
// such byte as U+FFFD, on both engines alike, and the write succeeds.
func TestAgentTextWithNULAndInvalidUTF8IsStored(t *testing.T) {
	const raw = "ok\x00then\xff\xfebad"
	// A run of invalid bytes becomes one U+FFFD, as strings.ToValidUTF8 does.
	const want = "ok\uFFFDthen\uFFFDbad"
	forEachEngine(t, func(t *testing.T, e testEngine) {
		s := e.newStore(t)
		seedRun(t, s, "r", t0, "plan")
		u := Unit{RunID: "r", StepID: "plan"}
		update(t, s, func(tx *Tx) error {
			a := sampleAttempt("r", "plan", 1)
			a.Error, a.Prompt, a.HelpContext, a.SessionID = raw, raw, raw, raw
			if err := tx.InsertAttempt(a); err != nil {
				return err
			}
			if err := tx.InsertCheck(Check{RunID: "r", StepID: "plan", N: 1, Seq: 1, Name: "c", Command: "true",
				Status: CheckRunning, StartedAt: t0, Tail: raw}); err != nil {
				return err
			}
			if err := tx.AppendMessages([]Message{{SessionID: "s", RunID: "r", StepID: "plan", Attempt: 1,
				Role: "assistant", Content: raw, CreatedAt: t0}}); err != nil {
				return err
			}
			if err := tx.AddEvent(Event{RunID: "r", At: t0, Kind: "k", Detail: raw}); err != nil {
				return err
			}
			return tx.PutDocument(u, 1, DocFailedHandoff, []byte(raw))
		})
		view(t, s, func(tx *Tx) error {
			a, err := tx.UnitAttempt(u, 1)
			if err != nil {
				return err
			}
			for name, got := range map[string]string{"error": a.Error, "prompt": a.Prompt, "help context": a.HelpContext, "session": a.SessionID} {
				if got != want {
					t.Errorf("attempt %s = %q, want %q", name, got, want)
				}
			}
			checks, err := tx.Checks("r", "plan", "", 1)
			if err != nil {
				return err
			}
			if len(checks) != 1 || checks[0].Tail != want {
				t.Errorf("check tail = %+v, want %q", checks, want)
			}
			msgs, err := tx.Messages("s")
			if err != nil {
				return err
			}
			if len(msgs) != 1 || msgs[0].Content != want {
				t.Errorf("session message = %+v, want %q", msgs, want)
			}
			ev, err := tx.Events("r")
			if err != nil {
				return err
			}
			if len(ev) != 1 || ev[0].Detail != want {
				t.Errorf("event = %+v, want %q", ev, want)
			}
			doc, err := tx.Document(u, 1, DocFailedHandoff)
			if err != nil {
				return err
			}
			if string(doc) != want {
				t.Errorf("document = %q, want %q", doc, want)
			}
			if _, err := tx.Document(u, 1, DocCandidate); !errors.Is(err, ErrNotFound) {
				t.Errorf("a document never stored: %v, want ErrNotFound", err)
			}
			return nil
		})
		// A document is replaced by one of the same kind.
		update(t, s, func(tx *Tx) error { return tx.PutDocument(u, 1, DocFailedHandoff, []byte("second")) })
		view(t, s, func(tx *Tx) error {
			doc, err := tx.Document(u, 1, DocFailedHandoff)
			if err == nil && string(doc) != "second" {
				t.Errorf("replaced document = %q, want %q", doc, "second")
			}
			return err
		})
	})
}
