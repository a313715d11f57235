-- The configuration of the agent a breaker was recorded under (a hash of
-- its preset, command, args, environment keys and circuit settings): a
-- breaker recorded under another configuration is read as closed, so a
-- fixed workflow does not wait out the circuit its mistake opened. ''
-- for a breaker recorded before this column existed.
ALTER TABLE circuits ADD COLUMN config_hash TEXT NOT NULL DEFAULT '';
