-- LeakCanary's reports (POST /api/leakcanary): recorded as packages whose job is done at
-- once with the leaks the text names; nothing to analyze, so never queued again (neither
-- by a regrouping nor by a mapping).
ALTER TABLE jobs ADD COLUMN report INTEGER NOT NULL DEFAULT 0;
