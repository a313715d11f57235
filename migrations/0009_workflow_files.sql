-- The files a run's workflow names (prompt files, handoff schemas, sim
-- scenarios), as a JSON object of path to sha256, so that resume can name
-- the one that changed (G8). NULL for a run an older cadence stored: its
-- workflow_sha256 is that of the workflow file alone.
ALTER TABLE runs ADD COLUMN workflow_files TEXT;
