-- 0012_projects: the same change as SQLite's 0018_projects.sql; see there.
ALTER TABLE runs ADD COLUMN project TEXT COLLATE "C" NOT NULL DEFAULT '';

CREATE INDEX runs_project ON runs (project, started_at, id);
CREATE INDEX runs_project_unfinished ON runs (project, started_at, id)
    WHERE status IN ('running', 'interrupted');
DROP INDEX runs_started;
DROP INDEX runs_unfinished;

ALTER TABLE circuits ADD COLUMN project TEXT COLLATE "C" NOT NULL DEFAULT '';
ALTER TABLE circuits DROP CONSTRAINT circuits_pkey;
ALTER TABLE circuits ADD PRIMARY KEY (project, agent);

ALTER TABLE events ADD COLUMN project TEXT COLLATE "C" NOT NULL DEFAULT '';

ALTER TABLE runs DROP CONSTRAINT runs_status_check;
ALTER TABLE runs ADD CONSTRAINT runs_status_check
    CHECK (status IN ('running', 'succeeded', 'failed', 'interrupted', 'abandoned', 'cancelled'));
