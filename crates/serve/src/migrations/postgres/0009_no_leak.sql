-- The changes of migrations/sqlite/0009_no_leak.sql, in PostgreSQL's types.
ALTER TABLE retainers ADD COLUMN shrunk BOOLEAN;

UPDATE jobs SET analysis_schema = NULL
WHERE state = 'done'
    AND package_id IN (SELECT package_id FROM triages)
    AND package_id NOT IN (SELECT package_id FROM leaks);
