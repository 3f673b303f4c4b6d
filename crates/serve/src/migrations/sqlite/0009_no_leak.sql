-- Packages without a leak: grouped by their first top retainer that has a path from a GC
-- root, no longer only by the first one (src/triage.rs); each row says whether the dump
-- was shrunk.

-- The dump was shrunk with its primitive arrays dropped: the retained size leaves out
-- their bytes. NULL in rows recorded before.
ALTER TABLE retainers ADD COLUMN shrunk INTEGER;

-- Packages without a leak recorded before (those left in no group, and those whose row
-- does not say whether they were shrunk) have their analysis counted as older (see
-- 0005): the next start queues them for re-analysis, after every new package, which
-- records them so.
UPDATE jobs SET analysis_schema = NULL
WHERE state = 'done'
    AND package_id IN (SELECT package_id FROM triages)
    AND package_id NOT IN (SELECT package_id FROM leaks);
