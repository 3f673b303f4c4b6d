-- Several processes on one database: a claimed job carries a lease (its claimer's token
-- and when it runs out); only the holder of the current lease records a result.
ALTER TABLE jobs ADD COLUMN lease_owner TEXT;
ALTER TABLE jobs ADD COLUMN lease_until INTEGER NOT NULL DEFAULT 0;
-- How many times an analysis of this package was recorded: 1 for every done job.
ALTER TABLE jobs ADD COLUMN analyses INTEGER NOT NULL DEFAULT 0;
UPDATE jobs SET analyses = 1 WHERE state = 'done';

-- Bumped in every transaction that changes what the leak-groups page shows, so that each
-- process's cache of that page knows when it is stale.
CREATE TABLE generation (
    id INTEGER PRIMARY KEY,
    n BIGINT NOT NULL
);
INSERT INTO generation (id, n) VALUES (1, 0);
