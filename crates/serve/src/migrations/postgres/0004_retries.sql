-- The schema of migrations/sqlite/0004_retries.sql, in PostgreSQL's types.
ALTER TABLE jobs ADD COLUMN not_before BIGINT NOT NULL DEFAULT 0;
