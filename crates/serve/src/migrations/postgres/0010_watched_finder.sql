-- The changes of migrations/sqlite/0010_watched_finder.sql, in PostgreSQL's types.
UPDATE jobs SET analysis_schema = NULL
WHERE state = 'done'
    AND package_id IN (
        SELECT package_id FROM leaks
        WHERE trace LIKE '%ObjectWatcher was watching this%'
            OR trace LIKE '%Also retain%'
    );
