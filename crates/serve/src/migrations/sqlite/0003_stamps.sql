-- Each leak row carries the generation its transaction set (generation.n after the bump),
-- so that the groups can be brought up to date by folding in only the rows of the
-- generations since (see src/serve/cache.rs). Rows recorded before: 0, older than any.
ALTER TABLE leaks ADD COLUMN generation INTEGER NOT NULL DEFAULT 0;
CREATE INDEX leaks_by_generation ON leaks(generation);

-- Bumped with n whenever a transaction removes leak rows (an analysis recorded again
-- replaces the earlier one's): folding in new rows cannot take old ones out, so a cache
-- that sees it change starts over.
ALTER TABLE generation ADD COLUMN removals BIGINT NOT NULL DEFAULT 0;

-- The filter menus list each column's distinct values: from an index, not from a scan of
-- every package's row (manifest and extra included).
CREATE INDEX packages_by_sdk ON packages(sdk);
CREATE INDEX packages_by_manufacturer ON packages(manufacturer);
CREATE INDEX packages_by_app_version ON packages(app_version);
