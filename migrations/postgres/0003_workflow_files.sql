-- 0003_workflow_files: the same column as SQLite's 0009_workflow_files.sql;
-- see there.
ALTER TABLE runs ADD COLUMN workflow_files TEXT;
