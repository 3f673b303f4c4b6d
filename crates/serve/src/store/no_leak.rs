//! What the no-leak pages ([`crate::no_leak`]) count beside the groups.

use std::cmp::Reverse;

use futures_util::TryStreamExt;
use sqlx::Row;

use super::{DbResult, Filter, Fold, LeakRef, Store};
use crate::top_n::TopN;
use hprof_shrink_analyze::model::SIGNATURE_VERSION;

/// Per no-leak group of the packages a filter admits ($1-$3): its signature, packages,
/// and the time its latest package was received. The database groups (spilling to disk
/// past its cache); one row per group.
const RANKED: &str = "SELECT r.signature, COUNT(*), MAX(p.received_ms) \
     FROM retainers r JOIN packages p ON p.id = r.package_id \
     WHERE ($1 IS NULL OR p.sdk = $1) AND ($2 IS NULL OR p.manufacturer = $2) \
     AND ($3 IS NULL OR p.app_version = $3) GROUP BY r.signature";

/// Packages whose recorded analysis has a triage and found no leak, yet are in no no-leak
/// group: none of their top retainers has a path from a GC root. By the primary and
/// unique keys of `triages`, `retainers` and the `leaks_by_package` index.
const UNGROUPED: &str = "SELECT COUNT(*) FROM triages t \
     WHERE NOT EXISTS (SELECT 1 FROM retainers r WHERE r.package_id = t.package_id) \
     AND NOT EXISTS (SELECT 1 FROM leaks l WHERE l.package_id = t.package_id)";

/// The same of the packages a filter admits ($1-$3): one more lookup per triage, by the
/// packages' primary key, which the unfiltered list does without.
const UNGROUPED_OF: &str = "SELECT COUNT(*) FROM triages t \
     JOIN packages p ON p.id = t.package_id \
     WHERE ($1 IS NULL OR p.sdk = $1) AND ($2 IS NULL OR p.manufacturer = $2) \
     AND ($3 IS NULL OR p.app_version = $3) \
     AND NOT EXISTS (SELECT 1 FROM retainers r WHERE r.package_id = t.package_id) \
     AND NOT EXISTS (SELECT 1 FROM leaks l WHERE l.package_id = t.package_id)";

/// Of the packages of no-leak group $1: those whose dump was shrunk, and those recorded
/// before that was kept. By `retainers_by_signature`.
const SHRUNK: &str = "SELECT \
     COALESCE(SUM(CASE WHEN shrunk THEN 1 ELSE 0 END), 0), \
     COALESCE(SUM(CASE WHEN shrunk IS NULL THEN 1 ELSE 0 END), 0) \
     FROM retainers WHERE signature = $1";

/// How many of a no-leak group's packages have retained sizes without their dropped
/// arrays' bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Shrunk {
    /// Packages whose dump was shrunk with its primitive arrays dropped.
    pub packages: u64,
    /// Packages recorded before this was kept: not known.
    pub unknown: u64,
}

impl Store {
    /// Of the packages of no-leak group `signature`, those whose dump was shrunk.
    pub async fn no_leak_shrunk(&self, signature: &str) -> DbResult<Shrunk> {
        let (packages, unknown): (i64, i64) = on!(self, pool => {
            let r = sqlx::query(SHRUNK).bind(signature).fetch_one(pool).await?;
            (r.try_get(0)?, r.try_get(1)?)
        });
        Ok(Shrunk {
            packages: packages.max(0) as u64,
            unknown: unknown.max(0) as u64,
        })
    }

    /// Sends `fold` the packages `f` admits of the first `n` no-leak groups in the order
    /// of [`Fold::top`] (most packages, then the most recent, then by signature), ranked
    /// by the database; returns how many groups there are. Memory: the `n` places kept
    /// and one row at a time, then those groups' rows.
    pub async fn ranked_no_leak(&self, f: &Filter, n: usize, fold: &mut Fold) -> DbResult<u64> {
        on!(self, pool => {
            let mut tx = pool.begin().await?;
            let mut top: TopN<(Reverse<i64>, Reverse<i64>, String)> = TopN::new(n);
            let mut rows = sqlx::query(RANKED)
                .bind(&f.sdk)
                .bind(&f.manufacturer)
                .bind(&f.app_version)
                .fetch(&mut *tx);
            while let Some(r) = rows.try_next().await? {
                top.offer((
                    Reverse(r.try_get(1)?),
                    Reverse(r.try_get(2)?),
                    r.try_get(0)?,
                ));
            }
            drop(rows);
            let groups = top.offered();
            for (_, _, sig) in top.into_sorted() {
                let mut rows = sqlx::query(super::NO_LEAK_ROWS)
                    .bind(&sig)
                    .bind(i64::MAX)
                    .bind(&f.sdk)
                    .bind(&f.manufacturer)
                    .bind(&f.app_version)
                    .fetch(&mut *tx);
                while let Some(r) = rows.try_next().await? {
                    fold.add(&no_leak_row!(&r));
                }
            }
            tx.commit().await?;
            Ok(groups)
        })
    }

    /// How many packages without a leak that `f` admits are in no no-leak group: those
    /// with a triage and no leak whose top retainers have no path.
    pub async fn no_leak_ungrouped(&self, f: &Filter) -> DbResult<u64> {
        let n: i64 = if f.is_none() {
            on!(self, pool => sqlx::query_scalar(UNGROUPED).fetch_one(pool).await)?
        } else {
            on!(self, pool => sqlx::query_scalar(UNGROUPED_OF)
                .bind(&f.sdk)
                .bind(&f.manufacturer)
                .bind(&f.app_version)
                .fetch_one(pool)
                .await)?
        };
        Ok(n.max(0) as u64)
    }
}
