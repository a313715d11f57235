package checkpoint

import "fmt"

// Kinds of attempt documents: what another machine needs to continue a
// run whose attempt began here (SPEC section 13).
const (
	// DocCandidate is a handoff that passed its schema, stored before its
	// checks run: a resume on any machine runs the checks again on it.
	DocCandidate = "candidate"
	// DocFailedHandoff is a failed attempt's failed-handoff record.
	DocFailedHandoff = "failed_handoff"
)

const (
	putDocumentQuery = `INSERT INTO attempt_documents (run_id, step_id, item_key, n, kind, body)
		VALUES (?, ?, ?, ?, ?, ?)
		ON CONFLICT (run_id, step_id, item_key, n, kind) DO UPDATE SET body = excluded.body`
	documentQuery = `SELECT body FROM attempt_documents
		WHERE run_id = ? AND step_id = ? AND item_key = ? AND n = ? AND kind = ?`
)

// PutDocument stores a document of attempt n of unit u, replacing one of
// the same kind. Its text is made safe to store first (see cleanText).
func (t *Tx) PutDocument(u Unit, n int, kind string, body []byte) error {
	what := fmt.Sprintf("the %s of %s", kind, attemptName(u, n))
	if err := t.mustWrite("store " + what); err != nil {
		return err
	}
	if _, err := t.exec(putDocumentQuery, u.RunID, u.StepID, u.Item, n, kind, cleanText(string(body))); err != nil {
		return fmt.Errorf("store %s: %w", what, err)
	}
	return nil
}

// Document returns a document of attempt n of unit u, or ErrNotFound.
func (t *Tx) Document(u Unit, n int, kind string) ([]byte, error) {
	var body string
	if err := t.get(&body, fmt.Sprintf("the %s of %s", kind, attemptName(u, n)), documentQuery, u.RunID, u.StepID, u.Item, n, kind); err != nil {
		return nil, err
	}
	return []byte(body), nil
}
