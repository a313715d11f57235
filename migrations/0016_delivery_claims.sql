-- Who is trying a delivery (SPEC §17). A try is claimed before it begins:
-- its next_try_at moves past the try's timeout, so that another process
-- leaves it alone meanwhile. A process killed during the try left that
-- claim behind, and the row waited out the whole margin before anyone
-- sent it. The claim now names its holder, as a lease does (owner, host,
-- pid: see leases): a process that finds a row claimed by a holder known
-- to be dead (on its machine, a pid that no longer runs) takes it at once;
-- a holder on another machine is still waited for until next_try_at.
-- claim_owner is '' when no try is under way.
ALTER TABLE deliveries ADD COLUMN claim_owner TEXT NOT NULL DEFAULT '';
ALTER TABLE deliveries ADD COLUMN claim_host TEXT NOT NULL DEFAULT '';
ALTER TABLE deliveries ADD COLUMN claim_pid INTEGER NOT NULL DEFAULT 0;

-- The rows whose try is under way, for the look for claims left by dead
-- processes.
CREATE INDEX deliveries_claimed ON deliveries (next_try_at) WHERE status = 'pending' AND claim_owner <> '';
