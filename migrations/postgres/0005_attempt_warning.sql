-- 0004_attempt_warning: the same column as SQLite's 0010_attempt_warning.sql;
-- see there.
ALTER TABLE attempts ADD COLUMN warning TEXT NOT NULL DEFAULT '';
