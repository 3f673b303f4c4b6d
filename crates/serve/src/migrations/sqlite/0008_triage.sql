-- Issue 32: the triage kept, and packages without a leak grouped.

-- What a package's page shows of its analysis's triage (JSON, each list cut as the page
-- shows it: see src/triage.rs); no row for a package analyzed before the triage existed.
CREATE TABLE triages (
    package_id INTEGER PRIMARY KEY REFERENCES packages(id),
    triage TEXT NOT NULL
);

-- A package whose analysis found no leak, by its first top retainer's path from a GC root:
-- the no-leak groups (see src/triage.rs for the signature). At most one row per package.
CREATE TABLE retainers (
    id INTEGER PRIMARY KEY,
    package_id INTEGER NOT NULL UNIQUE REFERENCES packages(id),
    signature TEXT NOT NULL,
    class_name TEXT NOT NULL,
    -- The path in one line (`Root → Class.field → … → Class`), cut: the group's title.
    title TEXT NOT NULL,
    retained_bytes INTEGER NOT NULL,
    retained_native_bytes INTEGER NOT NULL,
    -- The path as the analysis JSON has it.
    path TEXT NOT NULL
);
CREATE INDEX retainers_by_signature ON retainers(signature);
