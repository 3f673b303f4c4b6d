-- The per-app-version view orders versions by their first package's time: one scan of
-- this index per change (it covers the query), not of the packages' rows.
CREATE INDEX packages_by_app_version_received ON packages(app_version, received_ms);
