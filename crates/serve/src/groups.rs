//! Leaks grouped by signature across packages, and duplicate bitmaps by buffer hash: what
//! the pages and `GET /api/leaks` show. Pure: rows in, groups out.

use std::collections::{BTreeMap, HashMap, HashSet};

use serde::Serialize;

use super::store::{BitmapRow, Leak, LeakRow};

/// One bug seen on many devices: every leak with this signature.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LeakGroup {
    pub signature: String,
    /// The leaking object's class in the most recent occurrence.
    pub class_name: String,
    /// The known framework leak's description: a library leak, not the app's bug.
    pub library_leak: Option<String>,
    pub occurrences: u64,
    /// Distinct packages.
    pub packages: u64,
    pub first_seen_ms: i64,
    pub last_seen_ms: i64,
    /// (value, occurrences), most frequent first.
    pub sdk_versions: Vec<(String, u64)>,
    pub manufacturers: Vec<(String, u64)>,
    pub app_versions: Vec<(String, u64)>,
    pub retained_bytes: Distribution,
}

/// Nearest-rank percentiles of the retained sizes.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct Distribution {
    pub min: i64,
    pub p50: i64,
    pub p90: i64,
    pub max: i64,
}

impl Distribution {
    /// From the values themselves: the tests' oracle for [`Distribution::of_counts`].
    #[cfg(test)]
    pub fn of(mut v: Vec<i64>) -> Distribution {
        if v.is_empty() {
            return Distribution::default();
        }
        v.sort_unstable();
        let rank = |p: usize| v[(v.len() * p).div_ceil(100).max(1) - 1];
        Distribution {
            min: v[0],
            p50: rank(50),
            p90: rank(90),
            max: v[v.len() - 1],
        }
    }

    /// The same of `n` values given as value → how many times.
    fn of_counts(counts: &BTreeMap<i64, u64>, n: u64) -> Distribution {
        let (Some((&min, _)), Some((&max, _))) =
            (counts.first_key_value(), counts.last_key_value())
        else {
            return Distribution::default();
        };
        // The value at 1-based position `rank` in sorted order.
        let at = |rank: u64| {
            let mut seen = 0;
            for (&v, &k) in counts {
                seen += k;
                if seen >= rank {
                    return v;
                }
            }
            max
        };
        let rank = |p: u64| (n * p).div_ceil(100).max(1);
        Distribution {
            min,
            p50: at(rank(50)),
            p90: at(rank(90)),
            max,
        }
    }
}

/// The spread of one value: (value, occurrences), most frequent first.
fn spread(counts: &BTreeMap<String, u64>) -> Vec<(String, u64)> {
    let mut v: Vec<(String, u64)> = counts.iter().map(|(k, n)| (k.clone(), *n)).collect();
    sort_spread(&mut v);
    v
}

/// Most frequent first; ties by value, so the order is stable.
fn sort_spread(v: &mut [(String, u64)]) {
    v.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
}

/// Most occurrences first, then the most recently seen, then by signature.
fn sort_groups(groups: &mut [LeakGroup]) {
    groups.sort_by(|a, b| {
        b.occurrences
            .cmp(&a.occurrences)
            .then(b.last_seen_ms.cmp(&a.last_seen_ms))
            .then_with(|| a.signature.cmp(&b.signature))
    });
}

/// Counts one more `value`, allocating only for a value not seen yet.
fn count(m: &mut BTreeMap<String, u64>, value: &str) {
    match m.get_mut(value) {
        Some(n) => *n += 1,
        None => {
            m.insert(value.to_string(), 1);
        }
    }
}

/// Everything a group is made from, kept so that more leaks can be added to it later.
#[derive(Debug, Clone)]
struct Acc {
    occurrences: u64,
    packages: HashSet<i64>,
    first_seen_ms: i64,
    last_seen_ms: i64,
    /// (received, package, leak id) of the most recent occurrence, whose class and
    /// library the group shows.
    latest: (i64, i64, i64),
    class_name: String,
    library: Option<String>,
    sdk: BTreeMap<String, u64>,
    manufacturer: BTreeMap<String, u64>,
    app_version: BTreeMap<String, u64>,
    /// Retained size → occurrences: the percentiles need every value.
    retained: BTreeMap<i64, u64>,
    /// The group as last made; `None` once a leak was added since.
    made: Option<LeakGroup>,
}

impl Acc {
    /// Nothing added yet: the first leak added sets every bound.
    fn empty() -> Acc {
        Acc {
            occurrences: 0,
            packages: HashSet::new(),
            first_seen_ms: i64::MAX,
            last_seen_ms: i64::MIN,
            latest: (i64::MIN, i64::MIN, i64::MIN),
            class_name: String::new(),
            library: None,
            sdk: BTreeMap::new(),
            manufacturer: BTreeMap::new(),
            app_version: BTreeMap::new(),
            retained: BTreeMap::new(),
            made: None,
        }
    }

    fn add(&mut self, l: &Leak<'_>) {
        self.occurrences += 1;
        self.packages.insert(l.package_id);
        self.first_seen_ms = self.first_seen_ms.min(l.received_ms);
        self.last_seen_ms = self.last_seen_ms.max(l.received_ms);
        let key = (l.received_ms, l.package_id, l.leak_id);
        if key > self.latest {
            self.latest = key;
            l.class_name.clone_into(&mut self.class_name);
            self.library = l.library.map(str::to_string);
        }
        count(&mut self.sdk, l.sdk);
        count(&mut self.manufacturer, l.manufacturer);
        count(&mut self.app_version, l.app_version);
        *self.retained.entry(l.retained_bytes).or_default() += 1;
        self.made = None;
    }

    fn group(&mut self, signature: &str) -> &LeakGroup {
        self.made.get_or_insert_with(|| LeakGroup {
            signature: signature.to_string(),
            class_name: self.class_name.clone(),
            library_leak: self.library.clone(),
            occurrences: self.occurrences,
            packages: self.packages.len() as u64,
            first_seen_ms: self.first_seen_ms,
            last_seen_ms: self.last_seen_ms,
            sdk_versions: spread(&self.sdk),
            manufacturers: spread(&self.manufacturer),
            app_versions: spread(&self.app_version),
            retained_bytes: Distribution::of_counts(&self.retained, self.occurrences),
        })
    }
}

/// The groups of every leak added so far. Adding leaks later gives the same groups as
/// adding them all at once (in any order): the cache folds in only the leaks recorded
/// since its last look, and remakes only the groups they touch.
#[derive(Debug, Clone, Default)]
pub struct Fold {
    by_sig: HashMap<String, Acc>,
}

impl Fold {
    pub fn add(&mut self, l: &Leak<'_>) {
        match self.by_sig.get_mut(l.signature) {
            Some(acc) => acc.add(l),
            None => {
                let mut acc = Acc::empty();
                acc.add(l);
                self.by_sig.insert(l.signature.to_string(), acc);
            }
        }
    }

    /// Forgets every leak added.
    pub fn clear(&mut self) {
        self.by_sig.clear();
    }

    /// The groups, most occurrences first (ties: most recent first, then by signature).
    pub fn groups(&mut self) -> Vec<LeakGroup> {
        let mut groups: Vec<LeakGroup> = self
            .by_sig
            .iter_mut()
            .map(|(sig, acc)| acc.group(sig).clone())
            .collect();
        sort_groups(&mut groups);
        groups
    }
}

/// Groups leak rows by signature, most occurrences first (ties: most recent first).
pub fn leak_groups(rows: &[LeakRow]) -> Vec<LeakGroup> {
    let mut fold = Fold::default();
    for r in rows {
        fold.add(&r.leak());
    }
    fold.groups()
}

/// One buffer duplicated, across every package it was found in.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BitmapGroup {
    pub hash: String,
    pub width: i64,
    pub height: i64,
    pub format: String,
    pub buffer_bytes: i64,
    /// Packages holding duplicates of this buffer.
    pub packages: Vec<i64>,
    /// Copies in all those packages together.
    pub copies: i64,
    pub wasted_bytes: i64,
    /// `/pictures/<hash>.png`, when a picture was made.
    pub picture: Option<String>,
}

/// Groups by buffer hash, most wasted bytes first.
pub fn bitmap_groups(rows: &[BitmapRow]) -> Vec<BitmapGroup> {
    let mut by_hash: BTreeMap<&str, BitmapGroup> = BTreeMap::new();
    for r in rows {
        let g = by_hash.entry(&r.hash).or_insert_with(|| BitmapGroup {
            hash: r.hash.clone(),
            width: r.width,
            height: r.height,
            format: r.format.clone(),
            buffer_bytes: r.buffer_bytes,
            packages: Vec::new(),
            copies: 0,
            wasted_bytes: 0,
            picture: None,
        });
        if !g.packages.contains(&r.package_id) {
            g.packages.push(r.package_id);
        }
        g.copies += r.copies;
        g.wasted_bytes += r.wasted_bytes;
        if r.has_picture {
            g.picture = Some(format!("/pictures/{}.png", r.hash));
        }
    }
    let mut v: Vec<BitmapGroup> = by_hash.into_values().collect();
    v.sort_by(|a, b| {
        b.wasted_bytes
            .cmp(&a.wasted_bytes)
            .then_with(|| a.hash.cmp(&b.hash))
    });
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(pkg: i64, ms: i64, sig: &str, sdk: &str, maker: &str, retained: i64) -> LeakRow {
        LeakRow {
            leak_id: pkg * 10 + retained,
            package_id: pkg,
            package_name: format!("p{pkg}.zip"),
            received_ms: ms,
            sdk: sdk.into(),
            manufacturer: maker.into(),
            app_version: "1.0".into(),
            signature: sig.into(),
            class_name: "com.example.A".into(),
            library: None,
            retained_bytes: retained,
        }
    }

    #[test]
    fn groups_count_spread_and_order() {
        let rows = vec![
            row(1, 100, "b", "25", "samsung", 10),
            row(2, 200, "a", "25", "samsung", 30),
            row(2, 200, "a", "25", "samsung", 20),
            row(3, 300, "a", "26", "google", 10),
        ];
        let g = leak_groups(&rows);
        assert_eq!(g.len(), 2);
        assert_eq!(g[0].signature, "a");
        assert_eq!((g[0].occurrences, g[0].packages), (3, 2));
        assert_eq!((g[0].first_seen_ms, g[0].last_seen_ms), (200, 300));
        assert_eq!(
            g[0].sdk_versions,
            [("25".to_string(), 2), ("26".to_string(), 1)]
        );
        assert_eq!(
            g[0].manufacturers,
            [("samsung".to_string(), 2), ("google".to_string(), 1)]
        );
        assert_eq!(
            g[0].retained_bytes,
            Distribution {
                min: 10,
                p50: 20,
                p90: 30,
                max: 30
            }
        );
        assert_eq!(g[1].occurrences, 1);
    }

    #[test]
    fn percentiles_by_nearest_rank() {
        let d = Distribution::of((1..=10).collect());
        assert_eq!((d.min, d.p50, d.p90, d.max), (1, 5, 9, 10));
        assert_eq!(Distribution::of(vec![]), Distribution::default());
    }

    #[test]
    fn percentiles_of_counts_are_those_of_the_values() {
        let mut rng = fastrand::Rng::with_seed(7);
        for n in 1..60 {
            let v: Vec<i64> = (0..n).map(|_| rng.i64(0..20)).collect();
            let mut counts = BTreeMap::new();
            for x in &v {
                *counts.entry(*x).or_default() += 1;
            }
            assert_eq!(
                Distribution::of_counts(&counts, n as u64),
                Distribution::of(v.clone()),
                "{v:?}"
            );
        }
        assert_eq!(
            Distribution::of_counts(&BTreeMap::new(), 0),
            Distribution::default()
        );
    }

    /// The cache's use: leaks added in several parts, the groups taken between the
    /// parts, give the groups of all of them added at once, in any order.
    #[test]
    fn a_fold_in_parts_equals_one_of_everything() {
        let mut rng = fastrand::Rng::with_seed(11);
        let sdks = ["24", "25", "26"];
        let makers = ["google", "samsung"];
        let rows: Vec<LeakRow> = (0..300)
            .map(|i| {
                let pkg = i / 3;
                let mut r = row(
                    pkg,
                    1000 + rng.i64(0..50),
                    ["a", "b", "c", "d"][rng.usize(0..4)],
                    sdks[rng.usize(0..3)],
                    makers[rng.usize(0..2)],
                    rng.i64(1..100),
                );
                r.leak_id = i;
                r.class_name = format!("C{i}");
                if rng.bool() {
                    r.library = Some(format!("lib {i}"));
                }
                r
            })
            .collect();
        let all = serde_json::to_value(leak_groups(&rows)).unwrap();
        let mut shuffled = rows.clone();
        rng.shuffle(&mut shuffled);
        assert_eq!(serde_json::to_value(leak_groups(&shuffled)).unwrap(), all);
        let mut fold = Fold::default();
        for part in rows.chunks(37) {
            for r in part {
                fold.add(&r.leak());
            }
            fold.groups();
        }
        assert_eq!(serde_json::to_value(fold.groups()).unwrap(), all);
        fold.clear();
        assert!(fold.groups().is_empty());
    }

    #[test]
    fn bitmaps_by_hash_across_packages() {
        let b = |pkg, hash: &str, copies, pic| BitmapRow {
            package_id: pkg,
            hash: hash.into(),
            width: 10,
            height: 10,
            buffer_bytes: 400,
            copies,
            wasted_bytes: (copies - 1) * 400,
            format: "ARGB_8888".into(),
            has_picture: pic,
        };
        let g = bitmap_groups(&[b(1, "x", 2, false), b(2, "x", 3, true), b(2, "y", 2, false)]);
        assert_eq!(g[0].hash, "x");
        assert_eq!((g[0].copies, g[0].wasted_bytes), (5, 1200));
        assert_eq!(g[0].packages, [1, 2]);
        assert_eq!(g[0].picture.as_deref(), Some("/pictures/x.png"));
        assert_eq!(g[1].picture, None);
    }
}
