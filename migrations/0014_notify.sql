-- Notifications (SPEC §17): an outbox of the events to send, one row per
-- (event, target). A row is written in the transaction of the transition
-- that caused its event (a run that ended, an item dead-lettered, a login
-- needed, a long wait), and sent after that commit; each try is recorded
-- here, so a crash neither loses an event (the row stays pending and the
-- next process sends it) nor repeats one marked delivered.
--
-- seq numbers the run's events from 1 (the rows of one event, one per
-- target, share it); idempotency_key is RUN/EVENT/SEQ, sent with every
-- try so that a receiver can drop a repeat. subject names what a long
-- wait was for, so that the same wait is announced once. target is what
-- inspect shows of the target (a webhook's secret path left out);
-- target_json the target itself as the workflow named it when the event
-- was committed, which the delivery uses.
CREATE TABLE deliveries (
    run_id          TEXT    NOT NULL REFERENCES runs (id),
    seq             INTEGER NOT NULL CHECK (seq >= 1),
    target_idx      INTEGER NOT NULL CHECK (target_idx >= 0),
    event           TEXT    NOT NULL,
    subject         TEXT    NOT NULL DEFAULT '',
    target          TEXT    NOT NULL,
    target_json     TEXT    NOT NULL,
    body_json       TEXT    NOT NULL,
    idempotency_key TEXT    NOT NULL,
    created_at      TEXT    NOT NULL,
    status          TEXT    NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'delivered', 'failed')),
    attempts        INTEGER NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    last_error      TEXT    NOT NULL DEFAULT '',
    next_try_at     TEXT    NOT NULL,
    delivered_at    TEXT,
    PRIMARY KEY (run_id, seq, target_idx)
) STRICT;

-- The rows still to send, soonest first.
CREATE INDEX deliveries_due ON deliveries (next_try_at) WHERE status = 'pending';
