-- The work tree around an attempt (SPEC §19): snapshot is the commit
-- object recording the step's work tree before the attempt ran,
-- snapshot_after the one recording it after the attempt (before its
-- outcome was committed, and before a restore_on_retry put the tree
-- back). '' when not recorded: the work dir is not in a git repository,
-- the attempt ended before, or the row was written before snapshots.
ALTER TABLE attempts ADD COLUMN snapshot TEXT NOT NULL DEFAULT '';
ALTER TABLE attempts ADD COLUMN snapshot_after TEXT NOT NULL DEFAULT '';
