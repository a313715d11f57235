-- 0010_delivery_claims: the same change as SQLite's 0016_delivery_claims.sql; see there.
ALTER TABLE deliveries ADD COLUMN claim_owner TEXT COLLATE "C" NOT NULL DEFAULT '';
ALTER TABLE deliveries ADD COLUMN claim_host TEXT NOT NULL DEFAULT '';
ALTER TABLE deliveries ADD COLUMN claim_pid BIGINT NOT NULL DEFAULT 0;
CREATE INDEX deliveries_claimed ON deliveries (next_try_at) WHERE status = 'pending' AND claim_owner <> '';
