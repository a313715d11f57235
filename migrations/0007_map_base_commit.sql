-- The commit a map step with workspace: worktree started at: each item's
-- branch is created from it, on the first run and on every resume alike.
ALTER TABLE steps ADD COLUMN base_commit TEXT NOT NULL DEFAULT '';
