-- R8/ProGuard mappings per app version (PUT /api/mappings/{appVersion}): the latest one
-- of each version, its text at mappings/<md5>.txt in the package store (by content, so
-- that a worker reading the one before while another arrives reads whole bytes).
CREATE TABLE mappings (
    app_version TEXT PRIMARY KEY,
    md5 TEXT NOT NULL,
    bytes INTEGER NOT NULL,
    received_ms INTEGER NOT NULL
);
-- The mapping (its md5) the recorded analysis was made with; NULL: none. A job whose
-- version's mapping is another is analyzed again (a re-analysis, as regrouping's).
ALTER TABLE jobs ADD COLUMN mapping_md5 TEXT;
