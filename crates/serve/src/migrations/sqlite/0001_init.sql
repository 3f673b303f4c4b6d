-- Packages received: one row per distinct content (md5), the zip at packages/<md5>.zip.
CREATE TABLE packages (
    id INTEGER PRIMARY KEY,
    md5 TEXT NOT NULL UNIQUE,
    name TEXT NOT NULL,
    bytes INTEGER NOT NULL,
    received_ms INTEGER NOT NULL,
    sdk TEXT NOT NULL,
    manufacturer TEXT NOT NULL,
    app_version TEXT NOT NULL,
    -- result.info and extra.info as JSON arrays of [key, value], in file order.
    manifest TEXT NOT NULL,
    extra TEXT NOT NULL
);

-- The analysis queue: received -> analyzing -> done | failed.
CREATE TABLE jobs (
    package_id INTEGER PRIMARY KEY REFERENCES packages(id),
    state TEXT NOT NULL,
    error TEXT,
    attempts INTEGER NOT NULL DEFAULT 0,
    updated_ms INTEGER NOT NULL
);
CREATE INDEX jobs_by_state ON jobs(state, package_id);

CREATE TABLE leaks (
    id INTEGER PRIMARY KEY,
    package_id INTEGER NOT NULL REFERENCES packages(id),
    signature TEXT NOT NULL,
    class_name TEXT NOT NULL,
    -- The known framework leak's description; NULL for an app leak.
    library TEXT,
    retained_bytes INTEGER NOT NULL,
    -- The leak trace as the analysis JSON has it.
    trace TEXT NOT NULL
);
CREATE INDEX leaks_by_signature ON leaks(signature);
CREATE INDEX leaks_by_package ON leaks(package_id);

CREATE TABLE bitmaps (
    id INTEGER PRIMARY KEY,
    package_id INTEGER NOT NULL REFERENCES packages(id),
    hash TEXT NOT NULL,
    width INTEGER NOT NULL,
    height INTEGER NOT NULL,
    buffer_bytes INTEGER NOT NULL,
    copies INTEGER NOT NULL,
    wasted_bytes INTEGER NOT NULL,
    format TEXT NOT NULL,
    -- Set when a picture was made: pictures/<hash>.png.
    has_picture INTEGER NOT NULL
);
CREATE INDEX bitmaps_by_hash ON bitmaps(hash);
CREATE INDEX bitmaps_by_package ON bitmaps(package_id);
