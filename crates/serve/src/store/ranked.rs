//! The leak groups ranked by the database, for a filter whose groups are too many to follow
//! in memory ([`crate::cache`]): one pass over the filter's rows gives each group's
//! occurrences, last time seen and kind (that of its most recent occurrence), of which only
//! the first ones of each kind are kept; then only those groups' rows are read.

use std::cmp::Reverse;

use futures_util::TryStreamExt;
use sqlx::Row;

use super::{DbResult, Filter, Fold, LeakRef, Store, Version};
use crate::top_n::TopN;

/// Per group of the rows a filter admits ($1-$3): its signature, occurrences, the time
/// its most recent occurrence was received, and whether that one is a library leak. The
/// most recent by (received, package, leak id), as a fold takes it; the database sorts
/// (spilling to disk past its cache), one row per group comes back.
const RANKED: &str = "SELECT signature, n, received_ms, lib FROM ( \
     SELECT l.signature, p.received_ms, \
     CAST(CASE WHEN l.library IS NULL THEN 0 ELSE 1 END AS BIGINT) AS lib, \
     COUNT(*) OVER (PARTITION BY l.signature) AS n, \
     ROW_NUMBER() OVER (PARTITION BY l.signature \
     ORDER BY p.received_ms DESC, l.package_id DESC, l.id DESC) AS rn \
     FROM leaks l JOIN packages p ON p.id = l.package_id \
     WHERE ($1 IS NULL OR p.sdk = $1) AND ($2 IS NULL OR p.manufacturer = $2) \
     AND ($3 IS NULL OR p.app_version = $3)) t \
     WHERE rn = 1";

/// How many groups of each kind the rows make.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Kinds {
    /// App leak groups.
    pub app: u64,
    /// Library leak groups.
    pub library: u64,
}

/// A group's place: most occurrences first, then the most recently seen, then by
/// signature (the order of [`Fold::top`]).
type Rank = (Reverse<i64>, Reverse<i64>, String);

impl Store {
    /// Sends `fold` every row, of the packages the filter admits, of the first `n` app
    /// groups and the first `n` library groups in the order of [`Fold::top`], and returns
    /// how many groups of each kind there are; all read in one snapshot, with its version.
    /// Memory: the `2 n` places kept and one row at a time, then those groups' rows.
    pub async fn ranked_groups(
        &self,
        f: &Filter,
        n: usize,
        fold: &mut Fold,
    ) -> DbResult<(Version, Kinds)> {
        on!(self, pool => {
            let (mut tx, now) = snapshot!(self, pool);
            let mut app: TopN<Rank> = TopN::new(n);
            let mut library: TopN<Rank> = TopN::new(n);
            let mut rows = sqlx::query(RANKED)
                .bind(&f.sdk)
                .bind(&f.manufacturer)
                .bind(&f.app_version)
                .fetch(&mut *tx);
            while let Some(r) = rows.try_next().await? {
                let rank = (
                    Reverse(r.try_get::<i64, _>(1)?),
                    Reverse(r.try_get::<i64, _>(2)?),
                    r.try_get::<String, _>(0)?,
                );
                if r.try_get::<i64, _>(3)? == 0 {
                    app.offer(rank);
                } else {
                    library.offer(rank);
                }
            }
            drop(rows);
            let kinds = Kinds {
                app: app.offered(),
                library: library.offered(),
            };
            for (_, _, sig) in app.into_sorted().into_iter().chain(library.into_sorted()) {
                let mut rows = sqlx::query(concat!(grouped_leaks!(""), " AND l.signature = $4"))
                    .bind(&f.sdk)
                    .bind(&f.manufacturer)
                    .bind(&f.app_version)
                    .bind(&sig)
                    .fetch(&mut *tx);
                while let Some(r) = rows.try_next().await? {
                    fold.add(&leak_row!(&r));
                }
            }
            tx.commit().await?;
            Ok((now, kinds))
        })
    }
}
