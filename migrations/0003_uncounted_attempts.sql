-- An attempt that does not count against max_attempts although it is
-- recorded: a budget stop (no process ran) or an attempt the provider
-- refused with a usage limit and a reset time (cadence waits for the reset
-- instead of burning attempts). Help rounds are told apart by their kind.
ALTER TABLE attempts ADD COLUMN uncounted INTEGER NOT NULL DEFAULT 0 CHECK (uncounted IN (0, 1));
