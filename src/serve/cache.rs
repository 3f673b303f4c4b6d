//! The leak-groups page and `GET /api/leaks` computed once per change, not once per
//! request: grouping scans every leak, while the data changes only when a package is
//! recorded or a job changes state. Each such change bumps a generation in the database,
//! in the same transaction, so every process sharing the database sees it; an entry made
//! under an older one is not served. Reading the generation is one tiny query per request.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use super::groups::LeakGroup;
use super::pages::Menus;
use super::store::Filter;

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

#[derive(Default)]
pub struct Cache {
    entries: Mutex<HashMap<Key, (i64, Arc<Groups>)>>,
}

/// Filters remembered at most; past it the map starts over (a crawler trying every
/// combination must not grow it without end).
const MAX_ENTRIES: usize = 256;

fn key(f: &Filter) -> Key {
    (f.sdk.clone(), f.manufacturer.clone(), f.app_version.clone())
}

impl Cache {
    /// The entry for `f` if it was made under generation `now` (read from the database
    /// before the data: a change committed in between makes the entry older than it is,
    /// never newer).
    pub fn get(&self, f: &Filter, now: i64) -> Option<Arc<Groups>> {
        let entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        entries
            .get(&key(f))
            .filter(|(g, _)| *g == now)
            .map(|(_, v)| v.clone())
    }

    pub fn put(&self, f: &Filter, generation: i64, v: Arc<Groups>) {
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        if entries.len() >= MAX_ENTRIES {
            entries.clear();
        }
        entries.insert(key(f), (generation, v));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn empty() -> Groups {
        Groups {
            app: vec![],
            library: vec![],
            menus: Menus {
                sdk: vec![],
                manufacturer: vec![],
                app_version: vec![],
            },
            jobs: vec![],
        }
    }

    #[test]
    fn an_entry_is_served_until_the_next_change() {
        let c = Cache::default();
        let f = Filter::default();
        c.put(&f, 7, Arc::new(empty()));
        assert!(c.get(&f, 7).is_some());
        let other = Filter {
            sdk: Some("25".into()),
            ..Filter::default()
        };
        assert!(c.get(&other, 7).is_none());
        // The database moved on: the entry is stale.
        assert!(c.get(&f, 8).is_none());
        // Computed before a change, stored after it: never served.
        c.put(&f, 7, Arc::new(empty()));
        assert!(c.get(&f, 8).is_none());
    }
}
