-- The schema of migrations/sqlite/0002_leases.sql, in PostgreSQL's types.
ALTER TABLE jobs ADD COLUMN lease_owner TEXT;
ALTER TABLE jobs ADD COLUMN lease_until BIGINT NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN analyses BIGINT NOT NULL DEFAULT 0;
UPDATE jobs SET analyses = 1 WHERE state = 'done';

CREATE TABLE generation (
    id INTEGER PRIMARY KEY,
    n BIGINT NOT NULL
);
INSERT INTO generation (id, n) VALUES (1, 0);
