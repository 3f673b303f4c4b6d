//! Leaks grouped by signature across packages, and duplicate bitmaps by buffer hash: what
//! the pages and `GET /api/leaks` show. Pure: rows in, groups out. What a group shows is
//! bounded ([`limits`]): its spreads list the most frequent values, its names are cut.

use std::collections::{BTreeMap, HashMap, HashSet};

use serde::Serialize;

use super::limits;
use super::rows::{BitmapRow, LeakRef, LeakRow, LeakSink};
use hprof_shrink_analyze::model::SIGNATURE_VERSION;

/// One bug seen on many devices: every leak with this signature.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LeakGroup {
    /// The signature all its leaks share.
    pub signature: String,
    /// LeakCanary's short description of the leak in the most recent occurrence (the first
    /// suspect reference, `Listener$1.this$0`; a library leak's pattern), or the leaking
    /// class where that occurrence was recorded before it was kept.
    pub title: String,
    /// The leaking object's class in the most recent occurrence.
    pub class_name: String,
    /// The known framework leak's description: a library leak, not the app's bug.
    pub library_leak: Option<String>,
    /// Leaks in the group (a package may hold several).
    pub occurrences: u64,
    /// Distinct packages.
    pub packages: u64,
    /// When the first package with it was recorded (milliseconds since the Unix epoch).
    pub first_seen_ms: i64,
    /// When the latest package with it was recorded (milliseconds since the Unix epoch).
    pub last_seen_ms: i64,
    /// (value, occurrences), most frequent first: the first [`limits::SPREAD`].
    pub sdk_versions: Vec<(String, u64)>,
    /// Distinct values not listed in `sdk_versions`.
    pub sdk_versions_left_out: u64,
    /// (manufacturer, occurrences), most frequent first: the first [`limits::SPREAD`].
    pub manufacturers: Vec<(String, u64)>,
    /// Distinct values not listed in `manufacturers`.
    pub manufacturers_left_out: u64,
    /// (app version, occurrences), most frequent first: the first [`limits::SPREAD`].
    pub app_versions: Vec<(String, u64)>,
    /// Distinct values not listed in `app_versions`.
    pub app_versions_left_out: u64,
    /// The retained sizes of its leaks.
    pub retained_bytes: Distribution,
    /// The registered native bytes retained (0 in rows recorded before they were kept),
    /// their percentiles taken apart from the Java bytes'.
    pub retained_native_bytes: Distribution,
    /// Occurrences recorded with an older signature version than the analyzer's: their
    /// packages are to be analyzed again, and their leaks will move to the groups of their
    /// new signatures (see [`crate::rows::Regrouping`]).
    pub older_signatures: u64,
}

/// Bytes a structure of the groups holds besides its strings (allocation headers, map
/// nodes, hash slots), as the cache's budget counts them: estimates, not measures.
mod cost {
    /// An accumulator with its signature's slot in the fold's map.
    pub const ACC: usize = 400;
    /// A made group besides its strings and spreads.
    pub const GROUP: usize = 200;
    /// One package id in a group's set.
    pub const PACKAGE: usize = 16;
    /// One (value, count) of a spread map or list, besides the value's bytes.
    pub const VALUE: usize = 64;
    /// One retained size of a group's counts.
    pub const RETAINED: usize = 48;
}

impl LeakGroup {
    /// Roughly what this group holds in memory, in bytes.
    pub fn bytes(&self) -> usize {
        let spread =
            |v: &[(String, u64)]| -> usize { v.iter().map(|(s, _)| s.len() + cost::VALUE).sum() };
        cost::GROUP
            + self.signature.len()
            + self.title.len()
            + self.class_name.len()
            + self.library_leak.as_ref().map_or(0, String::len)
            + spread(&self.sdk_versions)
            + spread(&self.manufacturers)
            + spread(&self.app_versions)
    }
}

/// Nearest-rank percentiles of the retained sizes.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct Distribution {
    /// The smallest.
    pub min: i64,
    /// The median.
    pub p50: i64,
    /// The 90th percentile.
    pub p90: i64,
    /// The largest.
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
    pub(crate) fn of_counts(counts: &BTreeMap<i64, u64>, n: u64) -> Distribution {
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

/// The spread of one value: the first [`limits::SPREAD`] (value, occurrences), most
/// frequent first (ties by value, so the order is stable), and how many were left out.
fn spread(counts: &BTreeMap<String, u64>) -> (Vec<(String, u64)>, u64) {
    let mut v: Vec<(&String, u64)> = counts.iter().map(|(k, n)| (k, *n)).collect();
    let order = |a: &(&String, u64), b: &(&String, u64)| b.1.cmp(&a.1).then_with(|| a.0.cmp(b.0));
    if v.len() > limits::SPREAD {
        v.select_nth_unstable_by(limits::SPREAD, order);
        v.truncate(limits::SPREAD);
    }
    v.sort_by(order);
    let left_out = counts.len() - v.len();
    (
        v.into_iter().map(|(k, n)| (k.clone(), n)).collect(),
        left_out as u64,
    )
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

/// Counts one more `value` (cut as the lists show it: rows recorded before the caps may
/// hold more), allocating only for a value not seen yet. Returns the bytes added.
fn count(m: &mut BTreeMap<String, u64>, value: &str) -> usize {
    let value = limits::column(value);
    match m.get_mut(value.as_ref()) {
        Some(n) => {
            *n += 1;
            0
        }
        None => {
            let bytes = value.len() + cost::VALUE;
            m.insert(value.into_owned(), 1);
            bytes
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
    title: Option<String>,
    /// Occurrences with an older signature version.
    older: u64,
    sdk: BTreeMap<String, u64>,
    manufacturer: BTreeMap<String, u64>,
    app_version: BTreeMap<String, u64>,
    /// Retained size → occurrences: the percentiles need every value.
    retained: BTreeMap<i64, u64>,
    /// The same of the registered native bytes retained.
    native: BTreeMap<i64, u64>,
    /// The group as last made; `None` once a leak was added since.
    made: Option<LeakGroup>,
    /// What this holds, estimated ([`cost`]): kept up to date as leaks are added.
    bytes: usize,
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
            title: None,
            older: 0,
            sdk: BTreeMap::new(),
            manufacturer: BTreeMap::new(),
            app_version: BTreeMap::new(),
            retained: BTreeMap::new(),
            native: BTreeMap::new(),
            made: None,
            bytes: cost::ACC,
        }
    }

    fn add(&mut self, l: &LeakRef<'_>) {
        self.occurrences += 1;
        if self.packages.insert(l.package_id) {
            self.bytes += cost::PACKAGE;
        }
        self.first_seen_ms = self.first_seen_ms.min(l.received_ms);
        self.last_seen_ms = self.last_seen_ms.max(l.received_ms);
        let key = (l.received_ms, l.package_id, l.leak_id);
        if key > self.latest {
            self.latest = key;
            let names = |a: &Acc| {
                a.class_name.len()
                    + a.library.as_ref().map_or(0, String::len)
                    + a.title.as_ref().map_or(0, String::len)
            };
            let before = names(self);
            limits::cut(l.class_name, limits::NAME_BYTES)
                .as_ref()
                .clone_into(&mut self.class_name);
            self.library = l
                .library
                .map(|d| limits::cut(d, limits::NAME_BYTES).into_owned());
            self.title = l
                .title
                .map(|t| limits::cut(t, limits::NAME_BYTES).into_owned());
            self.bytes = self.bytes - before + names(self);
        }
        if l.signature_version
            .is_none_or(|v| v < i64::from(SIGNATURE_VERSION))
        {
            self.older += 1;
        }
        self.bytes += count(&mut self.sdk, l.sdk);
        self.bytes += count(&mut self.manufacturer, l.manufacturer);
        self.bytes += count(&mut self.app_version, l.app_version);
        let n = self.retained.entry(l.retained_bytes).or_default();
        if *n == 0 {
            self.bytes += cost::RETAINED;
        }
        *n += 1;
        let n = self.native.entry(l.retained_native_bytes).or_default();
        if *n == 0 {
            self.bytes += cost::RETAINED;
        }
        *n += 1;
        if let Some(made) = self.made.take() {
            self.bytes -= made.bytes();
        }
    }

    fn group(&mut self, signature: &str) -> &LeakGroup {
        if self.made.is_none() {
            let (sdk_versions, sdk_versions_left_out) = spread(&self.sdk);
            let (manufacturers, manufacturers_left_out) = spread(&self.manufacturer);
            let (app_versions, app_versions_left_out) = spread(&self.app_version);
            let made = LeakGroup {
                signature: signature.to_string(),
                title: self
                    .title
                    .clone()
                    .unwrap_or_else(|| self.class_name.clone()),
                class_name: self.class_name.clone(),
                library_leak: self.library.clone(),
                occurrences: self.occurrences,
                packages: self.packages.len() as u64,
                first_seen_ms: self.first_seen_ms,
                last_seen_ms: self.last_seen_ms,
                sdk_versions,
                sdk_versions_left_out,
                manufacturers,
                manufacturers_left_out,
                app_versions,
                app_versions_left_out,
                retained_bytes: Distribution::of_counts(&self.retained, self.occurrences),
                retained_native_bytes: Distribution::of_counts(&self.native, self.occurrences),
                older_signatures: self.older,
            };
            self.bytes += made.bytes();
            self.made = Some(made);
        }
        self.made.as_ref().expect("made above")
    }

    /// The order of the groups: most occurrences first, then the most recently seen.
    fn rank(&self) -> (std::cmp::Reverse<u64>, std::cmp::Reverse<i64>) {
        (
            std::cmp::Reverse(self.occurrences),
            std::cmp::Reverse(self.last_seen_ms),
        )
    }
}

/// The groups of every leak added so far. Adding leaks later gives the same groups as
/// adding them all at once (in any order): the cache folds in only the leaks recorded
/// since its last look, and remakes only the groups they touch.
#[derive(Debug, Clone, Default)]
pub struct Fold {
    by_sig: HashMap<String, Acc>,
    /// The sum of the accumulators' bytes and their signatures'.
    bytes: usize,
    /// The most groups it follows ([`Fold::capped`]); none: no cap.
    cap: Option<usize>,
    /// A leak of one group past the cap came: it dropped every group and takes no more
    /// until cleared (its owner ranks the groups in the database instead).
    over: bool,
}

/// The groups of a fold as the pages show them: the first [`limits::GROUPS`] of each kind.
#[derive(Debug, Clone, Default)]
pub struct Top {
    /// The first [`limits::GROUPS`] app leak groups, most occurrences first.
    pub app: Vec<LeakGroup>,
    /// App leak groups not in `app`.
    pub app_left_out: u64,
    /// The first [`limits::GROUPS`] library leak groups, most occurrences first.
    pub library: Vec<LeakGroup>,
    /// Library leak groups not in `library`.
    pub library_left_out: u64,
}

impl Top {
    /// Roughly what the groups hold in memory, in bytes.
    pub fn bytes(&self) -> usize {
        self.app
            .iter()
            .chain(&self.library)
            .map(LeakGroup::bytes)
            .sum()
    }
}

impl Fold {
    /// A fold of at most `groups` groups: a leak of one more makes it [over](Fold::over).
    pub fn capped(groups: usize) -> Fold {
        Fold {
            cap: Some(groups),
            ..Fold::default()
        }
    }

    /// Whether a leak of more groups than its cap came: it holds nothing then.
    pub fn over(&self) -> bool {
        self.over
    }

    /// Takes one more leak into its signature's group.
    pub fn add(&mut self, l: &LeakRef<'_>) {
        if self.over {
            return;
        }
        let at_cap = self.cap.is_some_and(|cap| self.by_sig.len() >= cap);
        match self.by_sig.get_mut(l.signature) {
            Some(acc) => {
                let before = acc.bytes;
                acc.add(l);
                // The accumulator may hold less now (its made group dropped).
                self.bytes = self.bytes + acc.bytes - before;
            }
            None if at_cap => {
                // Given back now, not kept for a refill: the groups are ranked elsewhere.
                self.by_sig = HashMap::new();
                self.bytes = 0;
                self.over = true;
            }
            None => {
                let mut acc = Acc::empty();
                acc.add(l);
                self.bytes += acc.bytes + l.signature.len();
                self.by_sig.insert(l.signature.to_string(), acc);
            }
        }
    }

    /// Forgets every leak added with this signature (its group is to be made again from
    /// its rows: some were removed).
    pub fn forget(&mut self, signature: &str) {
        if let Some(acc) = self.by_sig.remove(signature) {
            self.bytes -= acc.bytes + signature.len();
        }
    }

    /// Forgets every leak added (and that it was over its cap).
    pub fn clear(&mut self) {
        self.by_sig.clear();
        self.bytes = 0;
        self.over = false;
    }

    /// Roughly what this holds in memory, in bytes (the groups as last made included).
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// Every group, most occurrences first (ties: most recent first, then by signature).
    pub fn groups(&mut self) -> Vec<LeakGroup> {
        let mut groups = Vec::with_capacity(self.by_sig.len());
        for (sig, acc) in &mut self.by_sig {
            let before = acc.bytes;
            groups.push(acc.group(sig).clone());
            self.bytes += acc.bytes - before;
        }
        sort_groups(&mut groups);
        groups
    }

    /// The first [`limits::GROUPS`] app leak groups and library leak groups, in the order
    /// of [`Fold::groups`]; only those are made.
    pub fn top(&mut self) -> Top {
        let mut app = Vec::new();
        let mut library = Vec::new();
        for (sig, acc) in &mut self.by_sig {
            if acc.library.is_none() {
                app.push((sig, acc));
            } else {
                library.push((sig, acc));
            }
        }
        let mut made = 0;
        let mut first = |mut v: Vec<(&String, &mut Acc)>| -> (Vec<LeakGroup>, u64) {
            let order = |a: &(&String, &mut Acc), b: &(&String, &mut Acc)| {
                a.1.rank().cmp(&b.1.rank()).then_with(|| a.0.cmp(b.0))
            };
            let left_out = v.len().saturating_sub(limits::GROUPS);
            if left_out > 0 {
                v.select_nth_unstable_by(limits::GROUPS, order);
                v.truncate(limits::GROUPS);
            }
            v.sort_by(order);
            let groups = v
                .into_iter()
                .map(|(sig, acc)| {
                    let before = acc.bytes;
                    let g = acc.group(sig).clone();
                    made += acc.bytes - before;
                    g
                })
                .collect();
            (groups, left_out as u64)
        };
        let (app, app_left_out) = first(app);
        let (library, library_left_out) = first(library);
        self.bytes += made;
        Top {
            app,
            app_left_out,
            library,
            library_left_out,
        }
    }
}

impl LeakSink for Fold {
    fn add(&mut self, l: &LeakRef<'_>) {
        Fold::add(self, l);
    }
    fn clear(&mut self) {
        Fold::clear(self);
    }
    fn forget(&mut self, signature: &str) {
        Fold::forget(self, signature);
    }
    fn full(&self) -> bool {
        self.over
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
pub struct DuplicateBuffer {
    /// The MD5 of the buffer (hex).
    pub hash: String,
    /// The bitmap's width in pixels.
    pub width: i64,
    /// The bitmap's height in pixels.
    pub height: i64,
    /// The buffer's format as the analyses named it.
    pub format: String,
    /// Bytes of one copy's buffer.
    pub buffer_bytes: i64,
    /// Packages holding duplicates of this buffer (the first
    /// [`limits::BITMAP_PACKAGES`] by id).
    pub packages: Vec<i64>,
    /// Packages holding them not listed in `packages`.
    pub packages_left_out: u64,
    /// Copies in all those packages together.
    pub copies: i64,
    /// Bytes the copies beyond the first take, summed over the packages.
    pub wasted_bytes: i64,
    /// `/pictures/<hash>.png`, when a picture was made.
    pub picture: Option<String>,
}

/// Groups by buffer hash, most wasted bytes first.
pub fn bitmap_groups(rows: &[BitmapRow]) -> Vec<DuplicateBuffer> {
    let mut by_hash: BTreeMap<&str, DuplicateBuffer> = BTreeMap::new();
    for r in rows {
        let g = by_hash.entry(&r.hash).or_insert_with(|| DuplicateBuffer {
            hash: r.hash.clone(),
            width: r.width,
            height: r.height,
            format: r.format.clone(),
            buffer_bytes: r.buffer_bytes,
            packages: Vec::new(),
            packages_left_out: 0,
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
    let mut v: Vec<DuplicateBuffer> = by_hash.into_values().collect();
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
            title: None,
            signature_version: Some(i64::from(SIGNATURE_VERSION)),
            retained_native_bytes: 0,
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

    /// The cache's use when rows were removed: a group forgotten and its remaining rows
    /// added again gives the groups of those rows added at once, bytes included; a
    /// group with no rows left is gone.
    #[test]
    fn a_group_forgotten_and_made_again_equals_one_made_once() {
        let rows: Vec<LeakRow> = (0..120)
            .map(|i| {
                let mut r = row(i / 2, i, ["a", "b", "c"][i as usize % 3], "25", "m", i);
                r.leak_id = i;
                r.signature_version = (i % 4 != 0).then_some(i64::from(SIGNATURE_VERSION));
                r.title = (i % 5 != 0).then(|| format!("T{i}.f"));
                r
            })
            .collect();
        // Package 7's rows removed: "a" and "b" lose a row each; "c" loses all of its.
        let kept: Vec<LeakRow> = rows
            .iter()
            .filter(|r| r.package_id != 7 && r.signature != "c")
            .cloned()
            .collect();
        let mut fold = Fold::default();
        for r in &rows {
            fold.add(&r.leak());
        }
        fold.top();
        for sig in ["a", "b", "c"] {
            fold.forget(sig);
        }
        for r in kept.iter().filter(|r| r.signature != "c") {
            fold.add(&r.leak());
        }
        let mut once = Fold::default();
        for r in &kept {
            once.add(&r.leak());
        }
        assert_eq!(
            serde_json::to_value(fold.groups()).unwrap(),
            serde_json::to_value(once.groups()).unwrap()
        );
        assert_eq!(fold.bytes(), once.bytes());
        let g = fold.groups();
        assert_eq!(g.len(), 2, "the emptied group is gone");
        assert!(g
            .iter()
            .all(|g| g.older_signatures > 0 && g.title.starts_with('T')));
    }

    /// What a page shows of a fold is bounded: spreads list the most frequent values,
    /// names are cut, the groups are the most frequent; what was left out is counted.
    #[test]
    fn spreads_names_and_groups_are_bounded() {
        let mut fold = Fold::default();
        let long = "x".repeat(10_000);
        for i in 0..300i64 {
            let sig = format!("s{}", i % (limits::GROUPS as i64 + 5));
            let mut r = row(
                i,
                i,
                &sig,
                &format!("{}", 20 + i % 3),
                &format!("m{i}{long}"),
                i,
            );
            r.class_name = long.clone();
            fold.add(&r.leak());
        }
        let top = fold.top();
        assert_eq!(top.app.len(), limits::GROUPS);
        assert_eq!(top.app_left_out, 5);
        let g = &top.app[0];
        assert!(g.class_name.len() <= limits::NAME_BYTES);
        assert_eq!(g.occurrences, 2);
        assert_eq!(g.manufacturers.len(), 2);
        assert!(g
            .manufacturers
            .iter()
            .all(|(m, _)| m.len() <= limits::COLUMN_BYTES));

        let mut one = Fold::default();
        for i in 0..100i64 {
            one.add(&row(i, i, "a", &format!("{}", i % 25), "acme", i).leak());
        }
        let g = &one.top().app[0];
        assert_eq!(g.sdk_versions.len(), limits::SPREAD);
        assert_eq!(g.sdk_versions_left_out, 25 - limits::SPREAD as u64);
        // Most frequent first, ties by value: each value 4 times.
        assert_eq!(g.sdk_versions[0], ("0".to_string(), 4));
        assert_eq!(g.sdk_versions[1], ("1".to_string(), 4));
        assert_eq!(g.manufacturers, [("acme".to_string(), 100)]);
    }

    /// The estimate a fold keeps as leaks are added equals that of the same leaks added at
    /// once, and grows with what it holds.
    #[test]
    fn a_folds_bytes_are_kept_as_it_changes() {
        let rows: Vec<LeakRow> = (0..200)
            .map(|i| {
                row(
                    i / 2,
                    i,
                    ["a", "b", "c"][i as usize % 3],
                    &format!("{}", i % 7),
                    "m",
                    i,
                )
            })
            .collect();
        let mut parts = Fold::default();
        for part in rows.chunks(23) {
            for r in part {
                parts.add(&r.leak());
            }
            parts.top();
        }
        let mut whole = Fold::default();
        for r in &rows {
            whole.add(&r.leak());
        }
        whole.top();
        assert_eq!(parts.bytes(), whole.bytes());
        let small = whole.bytes();
        for i in 0..1000 {
            whole.add(&row(1000 + i, i, "a", "25", &format!("maker {i}"), i).leak());
        }
        assert!(
            whole.bytes() > small + 1000 * 64,
            "{} {small}",
            whole.bytes()
        );
        whole.clear();
        assert_eq!(whole.bytes(), 0);
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
