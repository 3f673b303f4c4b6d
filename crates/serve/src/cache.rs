//! The leak-groups page and `GET /api/leaks` kept up to date per filter, not computed per
//! request: grouping 10,000 packages' leaks from scratch takes tens of milliseconds, while
//! each change adds only a few. Every change bumps a generation in the database, in the
//! same transaction, so every process sharing the database sees it; each leak row carries
//! the generation that recorded it. A request reads the generation (one tiny query): if
//! the entry was made under it, it is served as is; otherwise only the rows recorded since
//! are folded in (see [`Store::leaks_since`]); when some were removed (a package analyzed
//! again), the groups that lost rows are made again from their rows alone, or every group
//! when the removals are too old to be known one by one.
//!
//! Memory is bounded by a budget, not only a count: each entry's bytes are estimated as it
//! is made ([`Fold::bytes`], [`Top::bytes`]); the filtered entries share
//! [`limits::CACHE_BYTES`], the least recently used going first; the unfiltered entry is
//! kept apart; a filter that no package matches is answered without an entry; the menus
//! are kept once for all filters. And whatever the number of groups: an entry follows at
//! most [`limits::FOLD_GROUPS`] of them; past that they are ranked by the database at
//! each change and only those shown are kept ([`Store::ranked_groups`]).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use super::groups::{Fold, LeakGroup, Top};
use super::limits;
use super::store::{Column, DbResult, Filter, Menu, Menus, Queue, Regrouping, Store, Version};

/// What the groups page and API show for one filter.
pub struct Shown {
    /// The first [`limits::GROUPS`] app leak groups, and how many more there are.
    pub app: Vec<LeakGroup>,
    /// App leak groups not in `app`.
    pub app_left_out: u64,
    /// The first [`limits::GROUPS`] library leak groups.
    pub library: Vec<LeakGroup>,
    /// Library leak groups not in `library`.
    pub library_left_out: u64,
    /// The filter menus' values: the same for every filter, so shared.
    pub menus: Arc<Menus>,
    /// The analysis queue: (state, jobs).
    pub jobs: Vec<(String, i64)>,
    /// Packages being analyzed again for new signatures, while any is left.
    pub regrouping: Option<Regrouping>,
}

impl Shown {
    fn new(top: Top, menus: Arc<Menus>, queue: Queue) -> Shown {
        Shown {
            app: top.app,
            app_left_out: top.app_left_out,
            library: top.library,
            library_left_out: top.library_left_out,
            menus,
            jobs: queue.states,
            regrouping: queue.regrouping,
        }
    }
}

type Key = (Option<String>, Option<String>, Option<String>);

/// What a key holds in memory, estimated, with its entry's fixed part.
fn key_bytes(k: &Key) -> usize {
    const ENTRY: usize = 512;
    let len = |v: &Option<String>| v.as_ref().map_or(0, String::len);
    ENTRY + len(&k.0) + len(&k.1) + len(&k.2)
}

/// How an entry's groups are brought up to date.
enum Making {
    /// Every group followed in memory: the rows recorded since `Version` are folded in.
    Folded(Version, Fold),
    /// More groups than [`limits::FOLD_GROUPS`]: ranked by the database at each change,
    /// only the groups shown folded ([`Store::ranked_groups`]).
    Ranked,
}

/// One filter's groups: as last shown, and what they were made from.
#[derive(Default)]
struct Entry {
    /// (generation, groups): read by every request.
    shown: Mutex<Option<(i64, Arc<Shown>)>>,
    /// Taken by the one request that brings the entry up to date; the others wait for it
    /// rather than fold the same rows again. None: to be made from every row.
    fold: tokio::sync::Mutex<Option<Making>>,
}

/// A filtered entry with what it costs and when it was last used.
struct Slot {
    entry: Arc<Entry>,
    bytes: usize,
    used: u64,
}

/// The filtered entries, within a budget: the least recently used go first.
#[derive(Default)]
struct Others {
    map: HashMap<Key, Slot>,
    /// The sum of the slots' bytes.
    bytes: usize,
    /// Counts uses, for "least recently used".
    clock: u64,
}

/// The leak groups per filter, each brought up to date with the rows recorded since it was
/// made, within a memory budget.
pub struct Cache {
    /// The unfiltered groups, every reader's first page: kept apart, so that no number of
    /// other filters evicts them.
    all: Arc<Entry>,
    /// Every other filter's, within [`Cache::budget`].
    others: Mutex<Others>,
    /// (generation, menus): shared by every entry made under that generation or before.
    menus: Mutex<Option<(i64, Arc<Menus>)>>,
    /// Estimated bytes the filtered entries may hold together; at most
    /// [`limits::CACHE_ENTRIES`] of them.
    budget: usize,
    /// Folds of every row (a filter seen first, rows removed), not of the changes only.
    full_folds: AtomicU64,
    /// Groups ranked by the database, an entry's being too many to follow.
    ranked: AtomicU64,
    /// Bytes of the unfiltered entry, estimated.
    all_bytes: AtomicU64,
    /// Groups an entry follows in memory: [`limits::FOLD_GROUPS`] (less in tests).
    fold_groups: usize,
}

impl Default for Cache {
    fn default() -> Cache {
        Cache::with_budget(limits::CACHE_BYTES)
    }
}

/// What the cache holds, estimated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Usage {
    /// Filtered entries kept.
    pub entries: usize,
    /// Their bytes together.
    pub bytes: usize,
    /// The unfiltered entry's bytes.
    pub unfiltered_bytes: usize,
}

fn key(f: &Filter) -> Key {
    (f.sdk.clone(), f.manufacturer.clone(), f.app_version.clone())
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Cache {
    /// A cache whose filtered entries hold about `budget` bytes at most.
    pub fn with_budget(budget: usize) -> Cache {
        Cache {
            all: Arc::default(),
            others: Mutex::default(),
            menus: Mutex::default(),
            budget,
            full_folds: AtomicU64::new(0),
            ranked: AtomicU64::new(0),
            all_bytes: AtomicU64::new(0),
            fold_groups: limits::FOLD_GROUPS,
        }
    }

    /// The same, each entry following at most `groups` groups in memory.
    pub fn with_fold_groups(self, groups: usize) -> Cache {
        Cache {
            fold_groups: groups,
            ..self
        }
    }

    /// The entry of a filtered key, marked used; none if it is not kept.
    fn kept(&self, key: &Key) -> Option<Arc<Entry>> {
        let mut o = lock(&self.others);
        o.clock += 1;
        let now = o.clock;
        o.map.get_mut(key).map(|slot| {
            slot.used = now;
            slot.entry.clone()
        })
    }

    /// The entry of a filtered key, made if missing.
    fn keep(&self, key: &Key) -> Arc<Entry> {
        let mut o = lock(&self.others);
        o.clock += 1;
        let now = o.clock;
        if let Some(slot) = o.map.get_mut(key) {
            slot.used = now;
            return slot.entry.clone();
        }
        let entry = Arc::new(Entry::default());
        let bytes = key_bytes(key);
        o.bytes += bytes;
        o.map.insert(
            key.clone(),
            Slot {
                entry: entry.clone(),
                bytes,
                used: now,
            },
        );
        self.trim(&mut o);
        entry
    }

    /// Records what an entry holds now, then trims the others to the budget. An entry
    /// evicted meanwhile (or replaced) is not counted.
    fn settle(&self, key: &Key, entry: &Arc<Entry>, bytes: usize) {
        let mut o = lock(&self.others);
        let Some(slot) = o.map.get_mut(key) else {
            return;
        };
        if !Arc::ptr_eq(&slot.entry, entry) {
            return;
        }
        let before = std::mem::replace(&mut slot.bytes, bytes);
        o.bytes = o.bytes + bytes - before;
        self.trim(&mut o);
    }

    /// Evicts the least recently used entries until the rest fit the budget and the
    /// count. An entry larger than the budget alone goes too, once it has been served.
    fn trim(&self, o: &mut Others) {
        while o.bytes > self.budget || o.map.len() > limits::CACHE_ENTRIES {
            let Some(oldest) = o
                .map
                .iter()
                .min_by_key(|(_, slot)| slot.used)
                .map(|(k, _)| k.clone())
            else {
                return;
            };
            if let Some(slot) = o.map.remove(&oldest) {
                o.bytes -= slot.bytes;
            }
        }
    }

    /// What the cache holds now, estimated.
    pub fn usage(&self) -> Usage {
        let o = lock(&self.others);
        Usage {
            entries: o.map.len(),
            bytes: o.bytes,
            unfiltered_bytes: self.all_bytes.load(Ordering::Relaxed) as usize,
        }
    }

    /// The groups for `f` as of the database's generation now.
    pub async fn current(&self, store: &Store, f: &Filter) -> DbResult<Arc<Shown>> {
        let now = store.generation().await?;
        self.get(store, f, now).await
    }

    /// The groups for `f` as of generation `now` or later.
    pub async fn get(&self, store: &Store, f: &Filter, now: i64) -> DbResult<Arc<Shown>> {
        let key = key(f);
        let unfiltered = key == (None, None, None);
        let entry = if unfiltered {
            self.all.clone()
        } else {
            match self.kept(&key) {
                Some(entry) => entry,
                // A filter no package matches shows nothing, and is not kept: a crawler
                // trying values costs a lookup per request, not an entry per value.
                None if !store.admits_any(f).await? => {
                    let queue = store.queue().await?;
                    let menus = self.menus(store, now).await?;
                    return Ok(Arc::new(Shown::new(Top::default(), menus, queue)));
                }
                None => self.keep(&key),
            }
        };
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
        let (version, top, making) = self.make(store, f, fold.take()).await?;
        let bytes = key_bytes(&key)
            + top.bytes()
            + match &making {
                Some(Making::Folded(_, acc)) => acc.bytes(),
                _ => 0,
            };
        *fold = making;
        let groups = Arc::new(Shown::new(
            top,
            self.menus(store, version.generation).await?,
            store.queue().await?,
        ));
        *lock(&entry.shown) = Some((version.generation, groups.clone()));
        drop(fold);
        if unfiltered {
            self.all_bytes.store(bytes as u64, Ordering::Relaxed);
        } else {
            self.settle(&key, &entry, bytes);
        }
        Ok(groups)
    }

    /// The groups of `f` brought up to date from how they were last made: the rows since
    /// folded in, or every row when there is nothing to build on; ranked by the database
    /// instead once they are more than [`limits::FOLD_GROUPS`], until they are half as
    /// many again (then folded from every row at the next change).
    async fn make(
        &self,
        store: &Store,
        f: &Filter,
        was: Option<Making>,
    ) -> DbResult<(Version, Top, Option<Making>)> {
        let was = match was {
            Some(Making::Ranked) => None,
            Some(Making::Folded(v, acc)) => Some((Some(v), acc)),
            None => Some((None, Fold::capped(self.fold_groups))),
        };
        if let Some((since, mut acc)) = was {
            let (version, full) = store.leaks_since(f, since, &mut acc).await?;
            if full {
                self.full_folds.fetch_add(1, Ordering::Relaxed);
            }
            if !acc.over() {
                let top = acc.top();
                return Ok((version, top, Some(Making::Folded(version, acc))));
            }
        }
        self.ranked.fetch_add(1, Ordering::Relaxed);
        let mut acc = Fold::default();
        let (version, kinds) = store.ranked_groups(f, limits::GROUPS, &mut acc).await?;
        let mut top = acc.top();
        top.app_left_out = kinds.app.saturating_sub(top.app.len() as u64);
        top.library_left_out = kinds.library.saturating_sub(top.library.len() as u64);
        let many = kinds.app + kinds.library > (self.fold_groups / 2) as u64;
        Ok((version, top, many.then_some(Making::Ranked)))
    }

    /// The menus as of generation `now` or later: read once per generation, whichever
    /// filter (or the no-leak list) asks first.
    pub(crate) async fn menus(&self, store: &Store, now: i64) -> DbResult<Arc<Menus>> {
        if let Some((g, m)) = &*lock(&self.menus) {
            if *g >= now {
                return Ok(m.clone());
            }
        }
        let m = Arc::new(menus(store).await?);
        let mut kept = lock(&self.menus);
        if kept.as_ref().is_none_or(|(g, _)| *g < now) {
            *kept = Some((now, m.clone()));
        }
        Ok(m)
    }

    /// How many times every row was folded, rather than those recorded since.
    pub fn full_folds(&self) -> u64 {
        self.full_folds.load(Ordering::Relaxed)
    }

    /// How many times an entry's groups were ranked by the database.
    pub fn ranked(&self) -> u64 {
        self.ranked.load(Ordering::Relaxed)
    }
}

/// The entry's groups if made under generation `now` or a later one.
fn shown_since(entry: &Entry, now: i64) -> Option<Arc<Shown>> {
    let shown = lock(&entry.shown);
    shown
        .as_ref()
        .filter(|(g, _)| *g >= now)
        .map(|(_, groups)| groups.clone())
}

async fn menus(store: &Store) -> DbResult<Menus> {
    let menu = |column| async move {
        let (values, seen) = store.menu(column, limits::MENU as i64).await?;
        Ok::<_, sqlx::Error>(Menu {
            left_out: seen.saturating_sub(values.len() as u64),
            values,
        })
    };
    Ok(Menus {
        sdk: menu(Column::Sdk).await?,
        manufacturer: menu(Column::Manufacturer).await?,
        app_version: menu(Column::AppVersion).await?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::NewPackage;
    use crate::test_rows::record;

    async fn queue(store: &Store, n: u32, sdk: &str, maker: &str) {
        let manifest = [
            ("sdkVersion".to_string(), sdk.to_string()),
            ("manufacturer".to_string(), maker.to_string()),
        ];
        store
            .insert_package(&NewPackage {
                md5: &format!("{n:032x}"),
                name: "p.zip",
                bytes: 1,
                manifest: &manifest,
                extra: &[],
            })
            .await
            .unwrap()
            .unwrap();
    }

    fn sdk(v: &str) -> Filter {
        Filter {
            sdk: Some(v.into()),
            ..Filter::default()
        }
    }

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
        queue(&store, 1, "25", "acme").await;
        // The database moved on: made again, from the change alone.
        let later = store.generation().await.unwrap();
        assert!(later > now);
        let second = c.get(&store, &f, later).await.unwrap();
        assert!(!Arc::ptr_eq(&first, &second));
        assert_eq!(second.jobs, [("received".to_string(), 1)]);
        assert_eq!(second.menus.sdk.values, ["25"]);
        let filtered = c.get(&store, &sdk("25"), later).await.unwrap();
        assert!(!Arc::ptr_eq(&second, &filtered));
        assert!(Arc::ptr_eq(&second.menus, &filtered.menus), "menus shared");
        assert_eq!(c.full_folds(), 2, "one per filter, the first time");
        assert_eq!(c.ranked(), 0, "a few groups are followed in memory");
        // An older generation read before the change is served the newer entry.
        assert!(Arc::ptr_eq(&second, &c.get(&store, &f, now).await.unwrap()));
    }

    #[tokio::test]
    async fn a_filter_no_package_matches_is_answered_but_not_kept() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("meta.sqlite")).await.unwrap();
        queue(&store, 1, "25", "acme").await;
        let c = Cache::default();
        for i in 0..100 {
            let g = c.current(&store, &sdk(&format!("x{i}"))).await.unwrap();
            assert!(g.app.is_empty() && g.library.is_empty());
            assert_eq!(g.menus.sdk.values, ["25"]);
        }
        assert_eq!(c.usage().entries, 0);
        assert_eq!(c.full_folds(), 0);
        // Once a package has the value, the filter is kept like any other.
        queue(&store, 2, "x7", "acme").await;
        c.current(&store, &sdk("x7")).await.unwrap();
        assert_eq!(c.usage().entries, 1);
    }

    #[tokio::test]
    async fn filtered_entries_stay_within_the_budget_and_the_unfiltered_one_stays() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("meta.sqlite")).await.unwrap();
        for i in 0..40 {
            queue(&store, i, &format!("{i}"), &"m".repeat(60)).await;
        }
        // Room for a few entries only.
        let budget = 6 * key_bytes(&(Some("10".into()), None, None));
        let c = Cache::with_budget(budget);
        let all = c.current(&store, &Filter::default()).await.unwrap();
        for i in 0..40 {
            c.current(&store, &sdk(&format!("{i}"))).await.unwrap();
            let u = c.usage();
            assert!(u.bytes <= budget, "{u:?} over {budget}");
            // The entry used last is kept.
            if i > 0 {
                c.current(&store, &sdk("0")).await.unwrap();
            }
        }
        let u = c.usage();
        assert!(u.entries >= 2 && u.entries < 40, "{u:?}");
        assert!(u.unfiltered_bytes > 0);
        // The one used all along was never evicted: folded once.
        let folds = c.full_folds();
        c.current(&store, &sdk("0")).await.unwrap();
        assert_eq!(c.full_folds(), folds);
        // Nor the unfiltered one, whatever the others cost.
        assert!(Arc::ptr_eq(
            &all,
            &c.current(&store, &Filter::default()).await.unwrap()
        ));
    }

    /// The groups `f` shows made from every row at once, as JSON: (app, app left out,
    /// library, library left out).
    async fn shown_of_every_row(store: &Store, f: &Filter) -> serde_json::Value {
        let groups = crate::groups::leak_groups(&store.leaks(f, None).await.unwrap());
        let (app, library): (Vec<_>, Vec<_>) =
            groups.into_iter().partition(|g| g.library_leak.is_none());
        let (app, app_left_out) = limits::first(app, limits::GROUPS);
        let (library, library_left_out) = limits::first(library, limits::GROUPS);
        serde_json::json!([app, app_left_out, library, library_left_out])
    }

    fn json(s: &Shown) -> serde_json::Value {
        serde_json::json!([s.app, s.app_left_out, s.library, s.library_left_out])
    }

    /// Issue 53: 100,000 signatures (101,000 leaks of 2,020 packages; a thousand groups
    /// with two, some of those a library leak only in their latest occurrence). The cache
    /// holds the groups it shows, not one accumulator per group (the estimate was about
    /// 90 MB before), and shows what a fold of every row shows; after a change too.
    #[tokio::test]
    async fn a_hundred_thousand_groups_are_ranked_not_held() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("meta.sqlite")).await.unwrap();
        record(&store, 0, 101_000, 100_000).await;
        let c = Cache::default();
        let all = Filter::default();
        let g = c.current(&store, &all).await.unwrap();
        let u = c.usage();
        assert!(u.unfiltered_bytes < 1 << 20, "{u:?}");
        assert_eq!(c.ranked(), 1);
        assert_eq!(g.app.len() + g.library.len(), 2 * limits::GROUPS);
        assert_eq!(
            g.app_left_out + g.library_left_out,
            100_000 - 2 * limits::GROUPS as u64
        );
        assert_eq!(json(&g), shown_of_every_row(&store, &all).await);
        // A filter's entry likewise, within the budget.
        let f = sdk("22");
        let g = c.current(&store, &f).await.unwrap();
        let u = c.usage();
        assert!(u.entries == 1 && u.bytes < 1 << 20, "{u:?}");
        assert_eq!(json(&g), shown_of_every_row(&store, &f).await);
        // A change: three more leaks of one group, which climbs to the top.
        record(&store, 150_001, 150_004, 1).await;
        let g = c.current(&store, &all).await.unwrap();
        assert_eq!(
            (g.library[0].signature.as_str(), g.library[0].occurrences),
            ("s000000", 5)
        );
        assert_eq!(json(&g), shown_of_every_row(&store, &all).await);
        assert_eq!((c.ranked(), c.full_folds()), (3, 2));
    }

    /// An entry follows its groups in memory up to its cap, is ranked by the database past
    /// it, and follows them again once they are half as many: the same groups every time
    /// as a fold of every row.
    #[tokio::test]
    async fn an_entry_past_its_cap_is_ranked_and_comes_back() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("meta.sqlite")).await.unwrap();
        let c = Cache::default().with_fold_groups(10);
        let all = Filter::default();
        let st = &store;
        let same = |g: Arc<Shown>| async move {
            assert_eq!(json(&g), shown_of_every_row(st, &Filter::default()).await)
        };
        record(&store, 0, 8, 1000).await;
        same(c.current(&store, &all).await.unwrap()).await;
        assert_eq!((c.full_folds(), c.ranked()), (1, 0));
        // Past the cap as the change is folded in.
        record(&store, 8, 20, 1000).await;
        same(c.current(&store, &all).await.unwrap()).await;
        assert_eq!((c.full_folds(), c.ranked()), (1, 1));
        assert_eq!(c.usage().unfiltered_bytes, {
            let g = c.current(&store, &all).await.unwrap();
            key_bytes(&key(&all))
                + g.app
                    .iter()
                    .chain(&g.library)
                    .map(LeakGroup::bytes)
                    .sum::<usize>()
        });
        record(&store, 20, 22, 1000).await;
        same(c.current(&store, &all).await.unwrap()).await;
        assert_eq!((c.full_folds(), c.ranked()), (1, 2));
        // Rows removed: five groups left, half the cap; ranked once more, then folded.
        let Store::Sqlite(pool) = &store else {
            unreachable!()
        };
        sqlx::query("DELETE FROM leaks WHERE signature > 's000004'")
            .execute(pool)
            .await
            .unwrap();
        sqlx::query("UPDATE generation SET n = n + 1, removals = removals + 1")
            .execute(pool)
            .await
            .unwrap();
        same(c.current(&store, &all).await.unwrap()).await;
        assert_eq!((c.full_folds(), c.ranked()), (1, 3));
        record(&store, 22, 23, 1000).await;
        same(c.current(&store, &all).await.unwrap()).await;
        assert_eq!((c.full_folds(), c.ranked()), (2, 3));
    }
}
