-- 0003_circuit_config: the same column as SQLite's 0009_circuit_config.sql;
-- see there.
ALTER TABLE circuits ADD COLUMN config_hash TEXT COLLATE "C" NOT NULL DEFAULT '';
