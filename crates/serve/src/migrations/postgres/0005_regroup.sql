-- The schema of migrations/sqlite/0005_regroup.sql, in PostgreSQL's types.
ALTER TABLE jobs ADD COLUMN signature_version BIGINT;
ALTER TABLE jobs ADD COLUMN analysis_schema BIGINT;
ALTER TABLE jobs ADD COLUMN regroup BOOLEAN NOT NULL DEFAULT FALSE;
CREATE INDEX jobs_by_queue ON jobs(state, regroup, package_id);

ALTER TABLE leaks ADD COLUMN title TEXT;
ALTER TABLE leaks ADD COLUMN signature_version BIGINT;

CREATE TABLE leak_removals (
    generation BIGINT NOT NULL,
    signature TEXT NOT NULL,
    at_ms BIGINT NOT NULL
);
CREATE INDEX leak_removals_by_generation ON leak_removals(generation);
CREATE INDEX leak_removals_by_time ON leak_removals(at_ms);
