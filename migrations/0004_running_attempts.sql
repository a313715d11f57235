-- The attempts still marked running, which resume settles first (G5). They
-- are at most one per step, but without this index SQLite reads the run's
-- whole attempt history to find them: the primary key gives the order
-- "ORDER BY step_id, n" asks for, so the planner prefers it to a scan plus
-- a sort. The partial index holds only running attempts, in that order.
CREATE INDEX attempts_running ON attempts (run_id, step_id, n)
    WHERE status = 'running';
