//! The app versions' order, for the per-app-version view ([`crate::versions`]).

use sqlx::Row;

use super::{DbResult, Store};

/// One app version as the packages table has it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AppVersion {
    /// As recorded (cut to [`crate::limits::COLUMN_BYTES`] where it was recorded; rows
    /// recorded before the caps may hold more).
    pub value: String,
    /// When the first package of this version was received (ms since the epoch).
    pub first_received_ms: i64,
    /// Packages of this version, analyzed or not.
    pub packages: i64,
}

/// Every app version, with its first package's time and its packages: one scan of the
/// `packages_by_app_version_received` index (version, received), which covers it on
/// SQLite; one row per distinct version.
const APP_VERSIONS: &str = "SELECT app_version, MIN(received_ms), COUNT(*) \
     FROM packages GROUP BY app_version";

impl Store {
    /// Every app version recorded, in no particular order.
    pub async fn app_versions(&self) -> DbResult<Vec<AppVersion>> {
        on!(self, pool => {
            let rows = sqlx::query(APP_VERSIONS).fetch_all(pool).await?;
            rows.iter()
                .map(|r| {
                    Ok(AppVersion {
                        value: r.try_get(0)?,
                        first_received_ms: r.try_get(1)?,
                        packages: r.try_get(2)?,
                    })
                })
                .collect()
        })
    }
}
