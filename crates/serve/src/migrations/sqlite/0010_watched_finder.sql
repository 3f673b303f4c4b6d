-- A dump holding objects LeakCanary watched and found retained is analyzed as LeakCanary
-- analyzes it on the phone (docs/analyze.md "Finders"): those objects alone are its leaks
-- and the leaves of its path search; an analyzer before ran every finder on it, so one
-- bug could be several groups (a toast's ViewRootImpl and TextView beside its Activity)
-- and another's path.
--
-- Which packages that changes: the stored rows say it of those whose analysis traced a
-- watched object (its status reason "ObjectWatcher was watching this", the KeyedWeakReference
-- inspector's) or named a leaking object behind another ("Also retains", "Also retained
-- by": the leaves decided the paths). Their analysis is counted as older (see 0005): the
-- next start queues them for re-analysis, after every new package.
UPDATE jobs SET analysis_schema = NULL
WHERE state = 'done'
    AND package_id IN (
        SELECT package_id FROM leaks
        WHERE trace LIKE '%ObjectWatcher was watching this%'
            OR trace LIKE '%Also retain%'
    );
