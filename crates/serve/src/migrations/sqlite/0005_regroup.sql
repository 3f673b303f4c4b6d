-- Regrouping: leaks are grouped by signature, and a new analyzer may sign the same bug
-- differently (signatureVersion). Packages analyzed by an older one are analyzed again in
-- the background, at the lowest priority, so that their leaks join the new groups.

-- What the recorded analysis was made with; NULL: recorded before these columns, by an
-- analyzer that did not say (so taken as older than any).
ALTER TABLE jobs ADD COLUMN signature_version INTEGER;
ALTER TABLE jobs ADD COLUMN analysis_schema INTEGER;
-- Set on a job queued again because its analysis was older than the analyzer's: claimed
-- only when no other job is waiting.
ALTER TABLE jobs ADD COLUMN regroup INTEGER NOT NULL DEFAULT 0;
-- The claim's order (new uploads, then re-analyses) and the queue's counts, by index.
CREATE INDEX jobs_by_queue ON jobs(state, regroup, package_id);

-- LeakCanary's short description of the leak (the first suspect reference, or a library
-- leak's pattern): the group's title. NULL in rows recorded before.
ALTER TABLE leaks ADD COLUMN title TEXT;
-- The signature's version (signatureVersion of the analysis); NULL in rows recorded before.
ALTER TABLE leaks ADD COLUMN signature_version INTEGER;

-- The signatures of leak rows removed (an analysis recorded again over an earlier one),
-- with the generation that removed them: a cache that sees removals remakes only those
-- groups rather than every one. Rows older than an hour are dropped; a cache that looked
-- before that starts over.
CREATE TABLE leak_removals (
    generation INTEGER NOT NULL,
    signature TEXT NOT NULL,
    at_ms INTEGER NOT NULL
);
CREATE INDEX leak_removals_by_generation ON leak_removals(generation);
CREATE INDEX leak_removals_by_time ON leak_removals(at_ms);
