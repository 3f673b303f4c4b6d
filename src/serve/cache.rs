//! The leak-groups page and `GET /api/leaks` computed once per change, not once per
//! request: grouping scans every leak, while the data changes only when a package is
//! recorded or an analysis ends. Each change bumps a generation; an entry made under an
//! older one is not served.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
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
    generation: AtomicU64,
    entries: Mutex<HashMap<Key, (u64, Arc<Groups>)>>,
}

/// Filters remembered at most; past it the map starts over (a crawler trying every
/// combination must not grow it without end).
const MAX_ENTRIES: usize = 256;

fn key(f: &Filter) -> Key {
    (f.sdk.clone(), f.manufacturer.clone(), f.app_version.clone())
}

impl Cache {
    /// Something the groups depend on changed.
    pub fn invalidate(&self) {
        self.generation.fetch_add(1, Ordering::SeqCst);
    }

    /// The generation to tag a computation with: read it before reading the database.
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::SeqCst)
    }

    pub fn get(&self, f: &Filter) -> Option<Arc<Groups>> {
        let now = self.generation();
        let entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        entries
            .get(&key(f))
            .filter(|(g, _)| *g == now)
            .map(|(_, v)| v.clone())
    }

    pub fn put(&self, f: &Filter, generation: u64, v: Arc<Groups>) {
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
        let g = c.generation();
        c.put(&f, g, Arc::new(empty()));
        assert!(c.get(&f).is_some());
        assert!(c
            .get(&Filter {
                sdk: Some("25".into()),
                ..Filter::default()
            })
            .is_none());
        c.invalidate();
        assert!(c.get(&f).is_none());
        // Computed before a change, stored after it: never served.
        let stale = c.generation() - 1;
        c.put(&f, stale, Arc::new(empty()));
        assert!(c.get(&f).is_none());
    }
}
