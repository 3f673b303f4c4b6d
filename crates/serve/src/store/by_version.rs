//! The app versions' order, for the per-app-version view ([`crate::versions`]).

use futures_util::TryStreamExt;
use sqlx::Row;

use super::{DbResult, LeakRef, LeakSink, Store, Version};

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

/// What picks, from every group's counts per app version, the groups whose rows
/// [`Store::ranked_versions`] then reads: the per-version view's ranking, which the store
/// only feeds (it lives with the view, `versions::ranked`).
pub trait VersionRanking {
    /// The versions recorded, before any group.
    fn versions(&mut self, recorded: &[AppVersion]);
    /// One group's (version as recorded, occurrences, packages), every version it has.
    fn group(&mut self, signature: &str, cells: &[(String, i64, i64)]);
    /// The signatures of the groups whose rows are wanted, each once.
    fn listed(&self) -> Vec<String>;
}

/// Every app version, with its first package's time and its packages: one scan of the
/// `packages_by_app_version_received` index (version, received), which covers it on
/// SQLite; one row per distinct version.
const APP_VERSIONS: &str = "SELECT app_version, MIN(received_ms), COUNT(*) \
     FROM packages GROUP BY app_version";

/// Every group's occurrences and packages per app version, a group's rows together. The
/// database groups and sorts (spilling to disk past its cache); one row per (group,
/// version) comes back.
const VERSION_CELLS: &str = "SELECT l.signature, p.app_version, COUNT(*), \
     COUNT(DISTINCT l.package_id) FROM leaks l JOIN packages p ON p.id = l.package_id \
     GROUP BY l.signature, p.app_version ORDER BY l.signature";

impl Store {
    /// Gives `ranking` the versions recorded, then every group's counts per version; then
    /// sends `sink` every row of the groups it lists. All read in one snapshot, with its
    /// version and the versions recorded. Memory: one group's versions at a time, what the
    /// ranking keeps, then those groups' rows.
    pub async fn ranked_versions(
        &self,
        ranking: &mut impl VersionRanking,
        sink: &mut impl LeakSink,
    ) -> DbResult<(Version, Vec<AppVersion>)> {
        on!(self, pool => {
            let (mut tx, now) = snapshot!(self, pool);
            let rows = sqlx::query(APP_VERSIONS).fetch_all(&mut *tx).await?;
            let recorded = rows
                .iter()
                .map(|r| {
                    Ok(AppVersion {
                        value: r.try_get(0)?,
                        first_received_ms: r.try_get(1)?,
                        packages: r.try_get(2)?,
                    })
                })
                .collect::<DbResult<Vec<_>>>()?;
            ranking.versions(&recorded);
            let mut rows = sqlx::query(VERSION_CELLS).fetch(&mut *tx);
            let mut signature = String::new();
            let mut cells: Vec<(String, i64, i64)> = Vec::new();
            while let Some(r) = rows.try_next().await? {
                let sig: &str = r.try_get(0)?;
                if sig != signature {
                    if !cells.is_empty() {
                        ranking.group(&signature, &cells);
                        cells.clear();
                    }
                    sig.clone_into(&mut signature);
                }
                cells.push((r.try_get(1)?, r.try_get(2)?, r.try_get(3)?));
            }
            if !cells.is_empty() {
                ranking.group(&signature, &cells);
            }
            drop(rows);
            for sig in ranking.listed() {
                let mut rows = sqlx::query(concat!(grouped_leaks!(""), " AND l.signature = $4"))
                    .bind(None::<String>)
                    .bind(None::<String>)
                    .bind(None::<String>)
                    .bind(&sig)
                    .fetch(&mut *tx);
                while let Some(r) = rows.try_next().await? {
                    sink.add(&leak_row!(&r));
                }
            }
            tx.commit().await?;
            Ok((now, recorded))
        })
    }

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
