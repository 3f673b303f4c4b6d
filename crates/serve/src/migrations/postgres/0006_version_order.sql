-- The schema of migrations/sqlite/0006_version_order.sql.
CREATE INDEX packages_by_app_version_received ON packages(app_version, received_ms);
