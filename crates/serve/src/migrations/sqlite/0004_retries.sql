-- A job failed by a passing fault (I/O, the store, the database, a crashed analysis) goes
-- back to the queue, and is claimed again only from this time on (ms since the epoch).
ALTER TABLE jobs ADD COLUMN not_before INTEGER NOT NULL DEFAULT 0;
