package checkpoint

import (
	"fmt"
	"time"
)

// Message is one message of a session whose history cadence keeps (the
// openai preset): appended after each attempt, resent on a follow-up.
type Message struct {
	SessionID string
	Seq       int
	RunID     string
	StepID    string
	ItemKey   string // "" for a step's own session
	Attempt   int
	Role      string // system | user | assistant
	Content   string
	CreatedAt time.Time
}

// AppendMessages adds msgs to the end of a session's history, numbering
// them after the messages already stored.
func (t *Tx) AppendMessages(msgs []Message) error {
	if len(msgs) == 0 {
		return nil
	}
	if err := t.mustWrite("append session messages"); err != nil {
		return err
	}
	var next int
	if err := t.getRow(&next, `SELECT COALESCE(MAX(seq), 0) + 1 FROM session_messages WHERE session_id = ?`,
		msgs[0].SessionID); err != nil {
		return fmt.Errorf("read the history of session %s: %w", msgs[0].SessionID, err)
	}
	for i, m := range msgs {
		if m.SessionID != msgs[0].SessionID {
			return fmt.Errorf("append session messages: messages of sessions %s and %s in one call", msgs[0].SessionID, m.SessionID)
		}
		if _, err := t.exec(`INSERT INTO session_messages
			(session_id, seq, run_id, step_id, item_key, attempt, role, content, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			m.SessionID, next+i, m.RunID, m.StepID, m.ItemKey, m.Attempt, m.Role, cleanText(m.Content), formatTime(m.CreatedAt)); err != nil {
			return fmt.Errorf("append a message to session %s: %w", m.SessionID, err)
		}
	}
	return nil
}

// Messages returns a session's history in order.
func (t *Tx) Messages(sessionID string) ([]Message, error) {
	var rows []struct {
		SessionID string `db:"session_id"`
		Seq       int    `db:"seq"`
		RunID     string `db:"run_id"`
		StepID    string `db:"step_id"`
		ItemKey   string `db:"item_key"`
		Attempt   int    `db:"attempt"`
		Role      string `db:"role"`
		Content   string `db:"content"`
		CreatedAt string `db:"created_at"`
	}
	if err := t.selectRows(&rows, `SELECT session_id, seq, run_id, step_id, item_key, attempt, role, content, created_at
		FROM session_messages WHERE session_id = ? ORDER BY seq`, sessionID); err != nil {
		return nil, fmt.Errorf("read the history of session %s: %w", sessionID, err)
	}
	out := make([]Message, len(rows))
	for i, r := range rows {
		at, err := parseTime(r.CreatedAt)
		if err != nil {
			return nil, fmt.Errorf("session %s message %d: %w", sessionID, r.Seq, err)
		}
		out[i] = Message{SessionID: r.SessionID, Seq: r.Seq, RunID: r.RunID, StepID: r.StepID, ItemKey: r.ItemKey, Attempt: r.Attempt,
			Role: r.Role, Content: r.Content, CreatedAt: at}
	}
	return out, nil
}
