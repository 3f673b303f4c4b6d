//! Packages whose analysis found no leak (out-of-memory dumps, most of them), grouped by
//! the path of their first top retainer that has one ([`crate::triage::path_signature`]):
//! the list that `/no-leak` and `/api/no-leak` show, kept between requests.
//!
//! A group is made as a leak group is ([`Fold`]), each package one occurrence. The list
//! is made again from every no-leak package's row (one per package, a few hundred bytes)
//! when the database's generation moved since it was last made, and kept until it moves
//! again: one tiny query per request otherwise. It holds the first [`limits::GROUPS`]
//! groups, and how many packages without a leak are in none (no top retainer with a
//! path), so that they are not left out silently.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use crate::groups::{Fold, Top};
use crate::limits;
use crate::store::{DbResult, Store};

/// The no-leak groups as the list shows them.
#[derive(Debug, Default)]
pub struct Groups {
    /// The first [`limits::GROUPS`] groups (in `app`), most packages first.
    pub top: Top,
    /// Packages without a leak in no group: none of their top retainers has a path.
    pub ungrouped: u64,
}

/// The groups as last made, with the generation they were made at.
pub struct Kept {
    shown: Mutex<Option<(i64, Arc<Groups>)>>,
    /// Taken by the one request that makes the groups again; the others wait for it.
    making: tokio::sync::Mutex<()>,
    /// Groups folded in memory: [`limits::FOLD_GROUPS`] (less in tests); past it, they
    /// are ranked by the database.
    fold_groups: usize,
    /// Lists ranked by the database, the groups being too many to fold.
    ranked: AtomicU64,
}

impl Default for Kept {
    fn default() -> Kept {
        Kept::with_fold_groups(limits::FOLD_GROUPS)
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Kept {
    /// Groups folding at most `groups` groups in memory.
    pub fn with_fold_groups(groups: usize) -> Kept {
        Kept {
            shown: Mutex::default(),
            making: tokio::sync::Mutex::default(),
            fold_groups: groups,
            ranked: AtomicU64::new(0),
        }
    }

    /// How many times the list was ranked by the database.
    pub fn ranked(&self) -> u64 {
        self.ranked.load(Ordering::Relaxed)
    }

    /// The first [`limits::GROUPS`] groups as of the database's generation now.
    pub async fn current(&self, store: &Store) -> DbResult<Arc<Groups>> {
        let now = store.generation().await?;
        if let Some(t) = self.since(now) {
            return Ok(t);
        }
        let _making = self.making.lock().await;
        if let Some(t) = self.since(now) {
            return Ok(t);
        }
        let mut fold = Fold::capped(self.fold_groups);
        // Read after the generation: the rows are at least as new as `now`.
        store.fold_no_leak(None, &mut fold).await?;
        let top = if fold.over() {
            // Too many groups to hold: the first ranked by the database, the rest counted.
            self.ranked.fetch_add(1, Ordering::Relaxed);
            let mut fold = Fold::default();
            let groups = store.ranked_no_leak(limits::GROUPS, &mut fold).await?;
            let mut top = fold.top();
            top.app_left_out = groups.saturating_sub(top.app.len() as u64);
            top
        } else {
            fold.top()
        };
        let groups = Arc::new(Groups {
            top,
            ungrouped: store.no_leak_ungrouped().await?,
        });
        *lock(&self.shown) = Some((now, groups.clone()));
        Ok(groups)
    }

    fn since(&self, now: i64) -> Option<Arc<Groups>> {
        lock(&self.shown)
            .as_ref()
            .filter(|(g, _)| *g >= now)
            .map(|(_, t)| t.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_rows::record_no_leak;
    use serde_json::json;

    /// Past its cap the list is ranked by the database: the same groups and counts as a
    /// fold of every row, the first 200 of them listed.
    #[tokio::test]
    async fn a_list_past_its_cap_is_ranked_and_the_same() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("meta.sqlite")).await.unwrap();
        record_no_leak(&store, 0, 600, 250).await;
        let folded = Kept::default();
        let ranked = Kept::with_fold_groups(20);
        let json = |g: &Groups| json!([g.top.app, g.top.app_left_out, g.ungrouped]);
        let all = folded.current(&store).await.unwrap();
        assert_eq!(json(&ranked.current(&store).await.unwrap()), json(&all));
        assert_eq!((all.top.app.len(), all.top.app_left_out), (200, 50));
        assert_eq!((folded.ranked(), ranked.ranked()), (0, 1));
    }
}
