//! The leak-groups page and `GET /api/leaks` kept up to date per filter, not computed per
//! request: grouping 10,000 packages' leaks from scratch takes tens of milliseconds, while
//! each change adds only a few. Every change bumps a generation in the database, in the
//! same transaction, so every process sharing the database sees it; each leak row carries
//! the generation that recorded it. A request reads the generation (one tiny query): if
//! the entry was made under it, it is served as is; otherwise only the rows recorded since
//! are folded in (see [`Store::leaks_since`]), or every row when some were removed.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use super::groups::{Fold, LeakGroup};
use super::pages::Menus;
use super::store::{Column, DbResult, Filter, Store, Version};

/// What the groups page and API show for one filter.
pub struct Groups {
    pub app: Vec<LeakGroup>,
    pub library: Vec<LeakGroup>,
    /// The filter menus' values.
    pub menus: Menus,
    /// The analysis queue: (state, jobs).
    pub jobs: Vec<(String, i64)>,
}

type Key = (Option<String>, Option<String>, Option<String>);

/// One filter's groups: as last shown, and what they were made from.
#[derive(Default)]
struct Entry {
    /// (generation, groups): read by every request.
    shown: Mutex<Option<(i64, Arc<Groups>)>>,
    /// Taken by the one request that brings the entry up to date; the others wait for it
    /// rather than fold the same rows again.
    fold: tokio::sync::Mutex<Option<(Version, Fold)>>,
}

#[derive(Default)]
pub struct Cache {
    entries: Mutex<HashMap<Key, Arc<Entry>>>,
    /// Folds of every row (a filter seen first, rows removed), not of the changes only.
    full_folds: AtomicU64,
}

/// Filters remembered at most; past it the map starts over (a crawler trying every
/// combination must not grow it without end).
const MAX_ENTRIES: usize = 256;

fn key(f: &Filter) -> Key {
    (f.sdk.clone(), f.manufacturer.clone(), f.app_version.clone())
}

impl Cache {
    fn entry(&self, f: &Filter) -> Arc<Entry> {
        let key = key(f);
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        if entries.len() >= MAX_ENTRIES && !entries.contains_key(&key) {
            entries.clear();
        }
        entries.entry(key).or_default().clone()
    }

    /// The groups for `f` as of the database's generation now.
    pub async fn current(&self, store: &Store, f: &Filter) -> DbResult<Arc<Groups>> {
        let now = store.generation().await?;
        self.get(store, f, now).await
    }

    /// The groups for `f` as of generation `now` or later.
    pub async fn get(&self, store: &Store, f: &Filter, now: i64) -> DbResult<Arc<Groups>> {
        let entry = self.entry(f);
        if let Some(g) = shown_since(&entry, now) {
            return Ok(g);
        }
        let mut fold = entry.fold.lock().await;
        // Brought up to date while this request waited.
        if let Some(g) = shown_since(&entry, now) {
            return Ok(g);
        }
        // Taken out while it changes: if reading fails or the request is dropped half way,
        // the next request starts over rather than build on half a fold.
        let (since, mut acc) = fold
            .take()
            .map_or((None, Fold::default()), |(v, a)| (Some(v), a));
        let (version, full) = store.leaks_since(f, since, &mut acc).await?;
        if full {
            self.full_folds.fetch_add(1, Ordering::Relaxed);
        }
        let (app, library) = acc
            .groups()
            .into_iter()
            .partition(|g| g.library_leak.is_none());
        *fold = Some((version, acc));
        let groups = Arc::new(Groups {
            app,
            library,
            menus: menus(store).await?,
            jobs: store.job_counts().await?,
        });
        *entry.shown.lock().unwrap_or_else(|e| e.into_inner()) =
            Some((version.generation, groups.clone()));
        Ok(groups)
    }

    /// How many times every row was folded, rather than those recorded since.
    pub fn full_folds(&self) -> u64 {
        self.full_folds.load(Ordering::Relaxed)
    }
}

/// The entry's groups if made under generation `now` or a later one.
fn shown_since(entry: &Entry, now: i64) -> Option<Arc<Groups>> {
    let shown = entry.shown.lock().unwrap_or_else(|e| e.into_inner());
    shown
        .as_ref()
        .filter(|(g, _)| *g >= now)
        .map(|(_, groups)| groups.clone())
}

async fn menus(store: &Store) -> DbResult<Menus> {
    Ok(Menus {
        sdk: store.distinct(Column::Sdk).await?,
        manufacturer: store.distinct(Column::Manufacturer).await?,
        app_version: store.distinct(Column::AppVersion).await?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::NewPackage;

    #[tokio::test]
    async fn an_entry_is_served_until_the_next_change() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("meta.sqlite")).await.unwrap();
        let c = Cache::default();
        let f = Filter::default();
        let now = store.generation().await.unwrap();
        let first = c.get(&store, &f, now).await.unwrap();
        // Nothing changed: the same groups, not made again.
        assert!(Arc::ptr_eq(&first, &c.get(&store, &f, now).await.unwrap()));
        let other = Filter {
            sdk: Some("25".into()),
            ..Filter::default()
        };
        assert!(!Arc::ptr_eq(
            &first,
            &c.get(&store, &other, now).await.unwrap()
        ));
        store
            .insert_package(&NewPackage {
                md5: &"a".repeat(32),
                name: "p.zip",
                bytes: 1,
                manifest: &[],
                extra: &[],
            })
            .await
            .unwrap()
            .unwrap();
        // The database moved on: made again, from the change alone.
        let later = store.generation().await.unwrap();
        assert!(later > now);
        let second = c.get(&store, &f, later).await.unwrap();
        assert!(!Arc::ptr_eq(&first, &second));
        assert_eq!(second.jobs, [("received".to_string(), 1)]);
        assert_eq!(c.full_folds(), 2, "one per filter, the first time");
        // An older generation read before the change is served the newer entry.
        assert!(Arc::ptr_eq(&second, &c.get(&store, &f, now).await.unwrap()));
    }
}
