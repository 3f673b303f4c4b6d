-- Packages without a leak are grouped by their first top retainer that has a path from a
-- GC root, no longer only by the first one (src/triage.rs). Those recorded before in no
-- group have their analysis counted as older (see 0005): the next start queues them for
-- re-analysis, after every new package, and the re-analysis groups them.
UPDATE jobs SET analysis_schema = NULL
WHERE state = 'done'
    AND package_id IN (SELECT package_id FROM triages)
    AND package_id NOT IN (SELECT package_id FROM retainers)
    AND package_id NOT IN (SELECT package_id FROM leaks);
