-- The changes of migrations/sqlite/0011_mappings.sql, in PostgreSQL's types.
CREATE TABLE mappings (
    app_version TEXT PRIMARY KEY,
    md5 TEXT NOT NULL,
    bytes BIGINT NOT NULL,
    received_ms BIGINT NOT NULL
);
ALTER TABLE jobs ADD COLUMN mapping_md5 TEXT;
