-- The schema of migrations/sqlite/0003_stamps.sql, in PostgreSQL's types.
ALTER TABLE leaks ADD COLUMN generation BIGINT NOT NULL DEFAULT 0;
CREATE INDEX leaks_by_generation ON leaks(generation);

ALTER TABLE generation ADD COLUMN removals BIGINT NOT NULL DEFAULT 0;

CREATE INDEX packages_by_sdk ON packages(sdk);
CREATE INDEX packages_by_manufacturer ON packages(manufacturer);
CREATE INDEX packages_by_app_version ON packages(app_version);
