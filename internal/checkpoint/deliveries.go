package checkpoint

import (
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// Statuses of a delivery of the notification outbox (SPEC §17).
const (
	DeliveryPending   = "pending"   // to send, at NextTryAt or later
	DeliveryDelivered = "delivered" // the target took it: never sent again
	DeliveryFailed    = "failed"    // every try failed: given up
)

// Delivery is one row of the notification outbox: one event of a run for
// one notify target, and how its delivery went.
type Delivery struct {
	RunID string
	// Seq numbers the run's events from 1; the rows of one event, one per
	// target, share it. TargetIdx is the target's place in the workflow's
	// notify list.
	Seq       int
	TargetIdx int
	Event     string
	// Subject, when set, names what the event is about (the wait a
	// long_wait announces): an event of the run with the same name and
	// subject is not added again (HasDeliverySubject).
	Subject string
	// Target is what may be shown of the target (a webhook's host, not
	// its secret path); TargetJSON is the target itself, which the
	// delivery uses.
	Target         string
	TargetJSON     []byte
	BodyJSON       []byte
	IdempotencyKey string
	CreatedAt      time.Time
	Status         string
	Attempts       int    // tries begun
	LastError      string // why the last try failed
	NextTryAt      time.Time
	DeliveredAt    *time.Time
	// Claim names the process trying the delivery now (its Owner, Host
	// and PID, as a lease's holder does), until NextTryAt; zero when no
	// try is under way. A row claimed by a process known to be dead is
	// due at once (DueDeliveries), not at NextTryAt.
	Claim Lease
}

const deliveryColumns = `run_id, seq, target_idx, event, subject, target, target_json, body_json, idempotency_key,
	created_at, status, attempts, last_error, next_try_at, delivered_at`

// deliveryClaimColumns are read and written only by the process that
// sends (DueDeliveries, UpdateDelivery), which migrates the state first:
// the reads of inspect do without them, so that an older state is still
// read as it is.
const deliveryClaimColumns = `claim_owner, claim_host, claim_pid`

const (
	insertDeliveryQuery = `INSERT INTO deliveries (` + deliveryColumns + `) VALUES (:run_id, :seq, :target_idx, :event,
		:subject, :target, :target_json, :body_json, :idempotency_key, :created_at, :status, :attempts, :last_error,
		:next_try_at, :delivered_at)`
	// Only a pending row changes: a delivered or failed one is final.
	updateDeliveryQuery = `UPDATE deliveries SET status = :status, attempts = :attempts, last_error = :last_error,
		next_try_at = :next_try_at, delivered_at = :delivered_at, claim_owner = :claim_owner, claim_host = :claim_host,
		claim_pid = :claim_pid
		WHERE run_id = :run_id AND seq = :seq AND target_idx = :target_idx AND status = 'pending'`
	nextDeliverySeqQuery = `SELECT COALESCE(MAX(seq), 0) + 1 FROM deliveries WHERE run_id = ?`
	deliverySubjectQuery = `SELECT COUNT(*) FROM (SELECT 1 FROM deliveries
		WHERE run_id = ? AND event = ? AND subject = ? LIMIT 1) d`
	// The outbox queries that name no run read the deliveries of the
	// store's project's runs only: another project's targets are sent by
	// that project, from its own checkout and environment.
	dueDeliveriesQuery = `SELECT ` + deliveryColumns + `, ` + deliveryClaimColumns + ` FROM deliveries
		WHERE status = 'pending' AND next_try_at <= ? AND run_id IN (SELECT id FROM runs WHERE project = ?) ORDER BY next_try_at, run_id, seq, target_idx LIMIT ?`
	// claimedDeliveriesQuery finds the rows whose try is under way (not
	// due yet), for DueDeliveries to take those of dead holders.
	claimedDeliveriesQuery = `SELECT ` + deliveryColumns + `, ` + deliveryClaimColumns + ` FROM deliveries
		WHERE status = 'pending' AND claim_owner <> '' AND next_try_at > ?
		AND run_id IN (SELECT id FROM runs WHERE project = ?) ORDER BY next_try_at, run_id, seq, target_idx`
	nextDeliveryAtQuery = `SELECT MIN(next_try_at) FROM deliveries WHERE status = 'pending'
		AND run_id IN (SELECT id FROM runs WHERE project = ?)`
	runDeliveriesQuery = `SELECT ` + deliveryColumns + ` FROM deliveries WHERE run_id = ? ORDER BY seq, target_idx`
)

type deliveryRow struct {
	RunID          string   `db:"run_id"`
	Seq            int64    `db:"seq"`
	TargetIdx      int64    `db:"target_idx"`
	Event          string   `db:"event"`
	Subject        string   `db:"subject"`
	Target         string   `db:"target"`
	TargetJSON     string   `db:"target_json"`
	BodyJSON       string   `db:"body_json"`
	IdempotencyKey string   `db:"idempotency_key"`
	CreatedAt      dbTime   `db:"created_at"`
	Status         string   `db:"status"`
	Attempts       int64    `db:"attempts"`
	LastError      string   `db:"last_error"`
	NextTryAt      dbTime   `db:"next_try_at"`
	DeliveredAt    nullTime `db:"delivered_at"`
	ClaimOwner     string   `db:"claim_owner"`
	ClaimHost      string   `db:"claim_host"`
	ClaimPID       int64    `db:"claim_pid"`
}

func deliveryToRow(d Delivery) deliveryRow {
	return deliveryRow{RunID: d.RunID, Seq: int64(d.Seq), TargetIdx: int64(d.TargetIdx), Event: d.Event, Subject: d.Subject,
		Target: cleanText(d.Target), TargetJSON: cleanText(string(d.TargetJSON)), BodyJSON: cleanText(string(d.BodyJSON)),
		IdempotencyKey: d.IdempotencyKey, CreatedAt: dbTime(d.CreatedAt), Status: d.Status, Attempts: int64(d.Attempts),
		LastError: cleanText(d.LastError), NextTryAt: dbTime(d.NextTryAt), DeliveredAt: toNullTime(d.DeliveredAt),
		ClaimOwner: d.Claim.Owner, ClaimHost: d.Claim.Host, ClaimPID: int64(d.Claim.PID)}
}

func (r deliveryRow) delivery() Delivery {
	return Delivery{RunID: r.RunID, Seq: int(r.Seq), TargetIdx: int(r.TargetIdx), Event: r.Event, Subject: r.Subject,
		Target: r.Target, TargetJSON: []byte(r.TargetJSON), BodyJSON: []byte(r.BodyJSON), IdempotencyKey: r.IdempotencyKey,
		CreatedAt: time.Time(r.CreatedAt), Status: r.Status, Attempts: int(r.Attempts), LastError: r.LastError,
		NextTryAt: time.Time(r.NextTryAt), DeliveredAt: r.DeliveredAt.t, Claim: r.claim()}
}

// claim is the holder of the row's try under way, zero when there is none.
func (r deliveryRow) claim() Lease {
	if r.ClaimOwner == "" {
		return Lease{}
	}
	return Lease{RunID: r.RunID, Owner: r.ClaimOwner, Host: r.ClaimHost, PID: int(r.ClaimPID), ExpiresAt: time.Time(r.NextTryAt)}
}

func deliveryName(d Delivery) string {
	return fmt.Sprintf("delivery %d/%d of run %s", d.Seq, d.TargetIdx, d.RunID)
}

// NextDeliverySeq returns the number the run's next event gets.
func (t *Tx) NextDeliverySeq(runID string) (int, error) {
	var n int64
	if err := t.getRow(&n, nextDeliverySeqQuery, runID); err != nil {
		return 0, fmt.Errorf("read the next event number of run %s: %w", runID, err)
	}
	return int(n), nil
}

// HasDeliverySubject reports whether the run has an event of this name
// about subject in the outbox already.
func (t *Tx) HasDeliverySubject(runID, event, subject string) (bool, error) {
	var n int64
	if err := t.getRow(&n, deliverySubjectQuery, runID, event, subject); err != nil {
		return false, fmt.Errorf("look for %s %q of run %s: %w", event, subject, runID, err)
	}
	return n > 0, nil
}

// AddDelivery puts one event for one target into the outbox, pending, in
// the caller's transaction: the transaction of the transition that caused
// the event, so that the event is committed with it or not at all.
func (t *Tx) AddDelivery(d Delivery) error {
	what := deliveryName(d)
	if err := t.mustWrite("add " + what); err != nil {
		return err
	}
	if d.Seq < 1 || d.Event == "" || d.IdempotencyKey == "" {
		return fmt.Errorf("add %s: want a sequence number, an event and an idempotency key", what)
	}
	if d.Status != DeliveryPending || d.Attempts != 0 || d.DeliveredAt != nil {
		return fmt.Errorf("add %s: %w: a new delivery is pending and untried", what, ErrInvalidTransition)
	}
	if _, err := t.namedExec(insertDeliveryQuery, deliveryToRow(d)); err != nil {
		return fmt.Errorf("add %s: %w", what, err)
	}
	return nil
}

// UpdateDelivery records a try of a pending delivery: its attempts, its
// last error, when it is tried next, who is trying it (Claim), and its
// new status. A delivery that
// is no longer pending (delivered, or given up) is never changed again:
// updating one is ErrInvalidTransition, so a delivery marked delivered is
// never sent twice by this store.
func (t *Tx) UpdateDelivery(d Delivery) error {
	what := deliveryName(d)
	if err := t.mustWrite("update " + what); err != nil {
		return err
	}
	switch d.Status {
	case DeliveryPending, DeliveryFailed:
	case DeliveryDelivered:
		if d.DeliveredAt == nil {
			return fmt.Errorf("update %s: delivered without a time", what)
		}
	default:
		return fmt.Errorf("update %s: unknown status %q", what, d.Status)
	}
	err := t.execOne(what, updateDeliveryQuery, deliveryToRow(d))
	if errors.Is(err, ErrNotFound) {
		return fmt.Errorf("update %s: %w: it is not pending", what, ErrInvalidTransition)
	}
	return err
}

// DueDeliveries returns at most limit pending deliveries due at now: first
// those whose try is under way in a process that gone says is dead (a
// process killed during the try, whose claim would otherwise hold the
// row until its NextTryAt), then those whose next try is due, soonest
// first. gone is called with each claim's holder (as AcquireLease's is);
// nil takes no claim early.
func (t *Tx) DueDeliveries(now time.Time, limit int, gone func(holder Lease) bool) ([]Delivery, error) {
	var out []Delivery
	if gone != nil {
		var claimed []deliveryRow
		if err := t.selectRows(&claimed, claimedDeliveriesQuery, formatTime(now), t.project); err != nil {
			return nil, fmt.Errorf("read the deliveries under way: %w", err)
		}
		for _, r := range claimed {
			if d := r.delivery(); len(out) < limit && gone(d.Claim) {
				out = append(out, d)
			}
		}
	}
	if len(out) == limit {
		return out, nil
	}
	var rows []deliveryRow
	if err := t.selectRows(&rows, dueDeliveriesQuery, formatTime(now), t.project, limit-len(out)); err != nil {
		return nil, fmt.Errorf("read the deliveries due: %w", err)
	}
	for _, r := range rows {
		out = append(out, r.delivery())
	}
	return out, nil
}

// NextDeliveryAt returns when the soonest pending delivery is due, or nil
// when none is pending.
func (t *Tx) NextDeliveryAt() (*time.Time, error) {
	var at nullTime
	if err := t.getRow(&at, nextDeliveryAtQuery, t.project); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("read the next delivery: %w", err)
	}
	return at.t, nil
}

// RunDeliveries returns the deliveries of a run's events, in their order.
func (t *Tx) RunDeliveries(runID string) ([]Delivery, error) {
	var rows []deliveryRow
	if err := t.selectRows(&rows, runDeliveriesQuery, runID); err != nil {
		return nil, fmt.Errorf("read the deliveries of run %s: %w", runID, err)
	}
	out := make([]Delivery, len(rows))
	for i, r := range rows {
		out[i] = r.delivery()
	}
	return out, nil
}
