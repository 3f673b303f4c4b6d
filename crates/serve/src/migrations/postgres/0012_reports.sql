-- The changes of migrations/sqlite/0012_reports.sql, in PostgreSQL's types.
ALTER TABLE jobs ADD COLUMN report BOOLEAN NOT NULL DEFAULT FALSE;
