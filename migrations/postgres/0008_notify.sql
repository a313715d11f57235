-- 0008_notify: the same table as SQLite's 0014_notify.sql; see there.
CREATE TABLE deliveries (
    run_id          TEXT COLLATE "C" NOT NULL REFERENCES runs (id),
    seq             BIGINT  NOT NULL CHECK (seq >= 1),
    target_idx      BIGINT  NOT NULL CHECK (target_idx >= 0),
    event           TEXT    NOT NULL,
    subject         TEXT    NOT NULL DEFAULT '',
    target          TEXT    NOT NULL,
    target_json     TEXT    NOT NULL,
    body_json       TEXT    NOT NULL,
    idempotency_key TEXT    NOT NULL,
    created_at      TEXT COLLATE "C" NOT NULL,
    status          TEXT COLLATE "C" NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'delivered', 'failed')),
    attempts        BIGINT  NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    last_error      TEXT    NOT NULL DEFAULT '',
    next_try_at     TEXT COLLATE "C" NOT NULL,
    delivered_at    TEXT COLLATE "C",
    PRIMARY KEY (run_id, seq, target_idx)
);
CREATE INDEX deliveries_due ON deliveries (next_try_at) WHERE status = 'pending';
