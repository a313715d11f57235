-- 0009_fallback: the same change as SQLite's 0015_fallback.sql; see there.
ALTER TABLE attempts ADD COLUMN agent TEXT COLLATE "C" NOT NULL DEFAULT '';
ALTER TABLE attempts DROP CONSTRAINT attempts_kind_check;
ALTER TABLE attempts ADD CONSTRAINT attempts_kind_check
    CHECK (kind IN ('initial', 'followup', 'fresh', 'help', 'fallback'));
