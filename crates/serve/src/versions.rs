//! Leak groups per app version: which groups are new in a version (seen in no version
//! before it), and how each group's packages, occurrences and retained sizes move from one
//! version to the next: the view that `/versions` and `GET /api/versions` show.
//!
//! Versions are ordered by the time their first package was received (not by their text:
//! "1.10" comes after "1.9" when it was released after it). Packages without an app
//! version are no version: kept out of the order, so that nothing is new in them nor
//! before a version because of them, and shown apart. The leak rows are folded in
//! change by change as the groups cache does ([`Store::leaks_since`]): one cell per
//! (group, version) with its packages and retained sizes, so a request after a change
//! reads only the rows recorded since, and the versions' order from an index; a request
//! with no change since serves the view as last made. Past [`limits::FOLD_GROUPS`] groups
//! the view is ranked by the database instead ([`ranked`]).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard};

use serde::Serialize;

use crate::groups::Distribution;
use crate::limits;
use crate::rows::{Filter, LeakRef, LeakSink, Version};
use crate::store::{AppVersion, DbResult, Store};

pub mod ranked;

/// One group's leaks in one app version.
#[derive(Debug, Clone, Default)]
struct Cell {
    occurrences: u64,
    packages: HashSet<i64>,
    /// Retained size → occurrences: the percentiles need every value.
    retained: BTreeMap<i64, u64>,
    /// The same of the registered native bytes retained.
    native: BTreeMap<i64, u64>,
}

impl Cell {
    fn counts(&self) -> Counts {
        Counts {
            packages: self.packages.len() as u64,
            occurrences: self.occurrences,
            retained_bytes: Distribution::of_counts(&self.retained, self.occurrences),
            retained_native_bytes: Distribution::of_counts(&self.native, self.occurrences),
        }
    }
}

/// One group across versions.
#[derive(Debug, Clone)]
struct Group {
    /// (received, package, leak id) of the most recent occurrence, whose class and
    /// library the view shows.
    latest: (i64, i64, i64),
    class_name: String,
    library: Option<String>,
    /// By app version as the lists show it (cut to [`limits::COLUMN_BYTES`]).
    by_version: HashMap<String, Cell>,
}

/// Every leak folded in so far, by group and app version.
#[derive(Debug, Clone, Default)]
pub struct Versions {
    by_sig: HashMap<String, Group>,
    /// The most groups it follows ([`Versions::capped`]); none: no cap.
    cap: Option<usize>,
    /// A leak of one group past the cap came: it dropped every group and takes no more
    /// until cleared (the view is ranked by the database instead, [`ranked`]).
    over: bool,
}

impl Versions {
    /// A fold of at most `groups` groups: a leak of one more makes it over its cap.
    pub fn capped(groups: usize) -> Versions {
        Versions {
            cap: Some(groups),
            ..Versions::default()
        }
    }
}

impl LeakSink for Versions {
    fn add(&mut self, l: &LeakRef<'_>) {
        if self.over {
            return;
        }
        if self.cap.is_some_and(|cap| self.by_sig.len() >= cap)
            && !self.by_sig.contains_key(l.signature)
        {
            self.by_sig = HashMap::new();
            self.over = true;
            return;
        }
        let g = self
            .by_sig
            .entry(l.signature.to_string())
            .or_insert_with(|| Group {
                latest: (i64::MIN, i64::MIN, i64::MIN),
                class_name: String::new(),
                library: None,
                by_version: HashMap::new(),
            });
        let key = (l.received_ms, l.package_id, l.leak_id);
        if key > g.latest {
            g.latest = key;
            g.class_name = limits::cut(l.class_name, limits::NAME_BYTES).into_owned();
            g.library = l
                .library
                .map(|d| limits::cut(d, limits::NAME_BYTES).into_owned());
        }
        let version = limits::column(l.app_version);
        let cell = match g.by_version.get_mut(version.as_ref()) {
            Some(c) => c,
            None => g.by_version.entry(version.into_owned()).or_default(),
        };
        cell.occurrences += 1;
        cell.packages.insert(l.package_id);
        *cell.retained.entry(l.retained_bytes).or_default() += 1;
        *cell.native.entry(l.retained_native_bytes).or_default() += 1;
    }

    fn clear(&mut self) {
        self.by_sig.clear();
        self.over = false;
    }
    fn forget(&mut self, signature: &str) {
        self.by_sig.remove(signature);
    }
    fn full(&self) -> bool {
        self.over
    }
}

/// A group's leaks in one version.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Counts {
    /// Distinct packages (devices) with the leak.
    pub packages: u64,
    /// Leaks of the group in this version.
    pub occurrences: u64,
    /// The retained sizes of those leaks.
    pub retained_bytes: Distribution,
    /// Registered native bytes retained (0 in leaks recorded before they were kept),
    /// their percentiles taken apart from the Java bytes'.
    pub retained_native_bytes: Distribution,
}

/// A group as one version's list shows it.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct VersionGroup {
    /// The group's signature.
    pub signature: String,
    /// The leaking object's class in its most recent occurrence.
    pub class_name: String,
    /// The known framework leak's description, for a library leak.
    pub library_leak: Option<String>,
    /// Seen in this version and in none before it.
    pub new: bool,
    /// Seen in an earlier version but not in the one before: a leak fixed that came back.
    pub back: bool,
    /// For a group back, the latest version before this one with its leaks; else null.
    pub last_seen_in: Option<String>,
    /// Its leaks in this version.
    #[serde(flatten)]
    pub here: Counts,
    /// The same in the version before (`previousVersion`); null where it was not seen.
    pub previous: Option<Counts>,
}

/// A group of the version before that this version has no leak of.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct GoneGroup {
    /// The group's signature.
    pub signature: String,
    /// The leaking object's class in its most recent occurrence.
    pub class_name: String,
    /// The known framework leak's description, for a library leak.
    pub library_leak: Option<String>,
    /// Its leaks in the version before (`previousVersion`).
    #[serde(flatten)]
    pub previous: Counts,
}

/// One app version.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct VersionShown {
    /// The version's name.
    pub app_version: String,
    /// When its first package was recorded (milliseconds since the Unix epoch).
    pub first_received_ms: i64,
    /// Packages of this version, analyzed or not.
    pub packages: i64,
    /// The version before this one, shown or not.
    pub previous_version: Option<String>,
    /// Groups with a leak in this version, and of those the new ones.
    pub groups_seen: u64,
    /// Groups seen in this version and in none before it.
    pub new_groups: u64,
    /// The first [`limits::VERSION_GROUPS`]: the new groups, then the others, each by
    /// packages, then occurrences (most first), then signature.
    pub groups: Vec<VersionGroup>,
    /// Groups not in `groups`.
    pub groups_left_out: u64,
    /// The first [`limits::VERSION_GROUPS`] groups of the version before with no leak in
    /// this one, each by its packages, then occurrences there (most first), then signature.
    pub gone: Vec<GoneGroup>,
    /// Gone groups not in `gone`.
    pub gone_left_out: u64,
}

/// The view: the latest [`limits::VERSIONS`] versions, oldest first.
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct View {
    /// The versions shown, oldest first.
    pub versions: Vec<VersionShown>,
    /// Older versions not shown.
    pub versions_left_out: u64,
    /// The packages without an app version, apart (`appVersion` ""; no group new, no
    /// version before); `None` when every package has one.
    pub no_version: Option<VersionShown>,
}

/// Most packages first, then most occurrences.
fn by_size(a: &Counts, b: &Counts) -> std::cmp::Ordering {
    b.packages
        .cmp(&a.packages)
        .then(b.occurrences.cmp(&a.occurrences))
}

/// One version's lists: its groups ordered (new ones first, then those back, then by
/// packages, then occurrences, then signature) and the gone ones (by their counts in the
/// version before), the first `max_groups` of each kept, the rest counted.
fn listed(
    (value, first, packages): &Listed,
    previous_version: Option<String>,
    mut groups: Vec<VersionGroup>,
    mut gone: Vec<GoneGroup>,
    max_groups: usize,
) -> VersionShown {
    groups.sort_by(|a, b| {
        b.new
            .cmp(&a.new)
            .then(b.back.cmp(&a.back))
            .then(by_size(&a.here, &b.here))
            .then_with(|| a.signature.cmp(&b.signature))
    });
    gone.sort_by(|a, b| {
        by_size(&a.previous, &b.previous).then_with(|| a.signature.cmp(&b.signature))
    });
    let seen = groups.len();
    let new = groups.iter().filter(|g| g.new).count();
    groups.truncate(max_groups);
    let gone_all = gone.len();
    gone.truncate(max_groups);
    VersionShown {
        app_version: value.clone(),
        first_received_ms: *first,
        packages: *packages,
        previous_version,
        groups_seen: seen as u64,
        new_groups: new as u64,
        groups_left_out: (seen - groups.len()) as u64,
        groups,
        gone_left_out: (gone_all - gone.len()) as u64,
        gone,
    }
}

/// A version as the lists show it: (value, first package's time, packages).
type Listed = (String, i64, i64);

/// The versions as the lists show them, ordered by their first package's time (ties by
/// value); and the (first package's time, packages) of those without a version. Values
/// recorded before the caps, cut, may fall together.
fn ordered(recorded: &[AppVersion]) -> (Vec<Listed>, Option<(i64, i64)>) {
    let mut merged: HashMap<String, (i64, i64)> = HashMap::new();
    let mut unversioned: Option<(i64, i64)> = None;
    for v in recorded {
        let value = limits::column(&v.value);
        let e = if value.is_empty() {
            unversioned.get_or_insert((i64::MAX, 0))
        } else {
            merged.entry(value.into_owned()).or_insert((i64::MAX, 0))
        };
        e.0 = e.0.min(v.first_received_ms);
        e.1 += v.packages;
    }
    let mut order: Vec<Listed> = merged.into_iter().map(|(v, (t, n))| (v, t, n)).collect();
    order.sort_by(|a, b| a.1.cmp(&b.1).then_with(|| a.0.cmp(&b.0)));
    (order, unversioned)
}

impl Versions {
    /// The view of what was folded in, the versions ordered as `recorded` says (their
    /// first package's time, ties by value): the latest `max_versions`, each listing at
    /// most `max_groups` groups and as many gone; the packages without a version apart.
    pub fn view(&self, recorded: &[AppVersion], max_versions: usize, max_groups: usize) -> View {
        let (order, unversioned) = ordered(recorded);
        let rank: HashMap<&str, usize> = order
            .iter()
            .enumerate()
            .map(|(i, (v, _, _))| (v.as_str(), i))
            .collect();
        let first_shown = order.len().saturating_sub(max_versions);
        let mut lists: Vec<Vec<VersionGroup>> = vec![Vec::new(); order.len() - first_shown];
        let mut gone: Vec<Vec<GoneGroup>> = vec![Vec::new(); order.len() - first_shown];
        let mut apart: Vec<VersionGroup> = Vec::new();
        for (sig, g) in &self.by_sig {
            // A leak's package is recorded before the leak, and never removed: every
            // version folded in is in `recorded`, read after the fold.
            let mut ranks: Vec<usize> = g
                .by_version
                .keys()
                .filter_map(|v| rank.get(v.as_str()).copied())
                .collect();
            ranks.sort_unstable();
            for (v, cell) in &g.by_version {
                if v.is_empty() {
                    apart.push(VersionGroup {
                        signature: sig.clone(),
                        class_name: g.class_name.clone(),
                        library_leak: g.library.clone(),
                        new: false,
                        back: false,
                        last_seen_in: None,
                        here: cell.counts(),
                        previous: None,
                    });
                    continue;
                }
                let Some(&i) = rank.get(v.as_str()) else {
                    continue;
                };
                // Gone from the next version when it has none: listed there with its
                // counts here, even when this version is older than the ones shown.
                let next = i + 1;
                if next >= first_shown
                    && next < order.len()
                    && !g.by_version.contains_key(&order[next].0)
                {
                    gone[next - first_shown].push(GoneGroup {
                        signature: sig.clone(),
                        class_name: g.class_name.clone(),
                        library_leak: g.library.clone(),
                        previous: cell.counts(),
                    });
                }
                if i < first_shown {
                    continue;
                }
                // The latest version before this one with the group's leaks: none, it is
                // new; the previous one, its counts beside; an older one, it is back.
                let before = ranks[..ranks.partition_point(|&r| r < i)].last().copied();
                let back = before.filter(|&b| b + 1 < i);
                let previous = before
                    .filter(|&b| b + 1 == i)
                    .and_then(|b| g.by_version.get(&order[b].0))
                    .map(Cell::counts);
                lists[i - first_shown].push(VersionGroup {
                    signature: sig.clone(),
                    class_name: g.class_name.clone(),
                    library_leak: g.library.clone(),
                    new: before.is_none(),
                    back: back.is_some(),
                    last_seen_in: back.map(|b| order[b].0.clone()),
                    here: cell.counts(),
                    previous,
                });
            }
        }
        let versions = lists
            .into_iter()
            .zip(gone)
            .enumerate()
            .map(|(k, (groups, gone))| {
                let i = first_shown + k;
                let previous = i.checked_sub(1).map(|p| order[p].0.clone());
                listed(&order[i], previous, groups, gone, max_groups)
            })
            .collect();
        View {
            versions,
            versions_left_out: first_shown as u64,
            no_version: unversioned.map(|(first, n)| {
                listed(
                    &(String::new(), first, n),
                    None,
                    apart,
                    Vec::new(),
                    max_groups,
                )
            }),
        }
    }
}

/// How the view is brought up to date.
enum Making {
    /// Every group followed in memory: the rows recorded since `Version` are folded in.
    Folded(Version, Versions),
    /// More groups than [`limits::FOLD_GROUPS`]: ranked by the database at each change
    /// ([`ranked`]).
    Ranked,
}

/// The view kept between requests, brought up to date change by change.
pub struct Kept {
    /// (generation, view): read by every request.
    shown: Mutex<Option<(i64, Arc<View>)>>,
    /// Taken by the one request that brings the view up to date; the others wait for it.
    /// None: to be made from every row.
    fold: tokio::sync::Mutex<Option<Making>>,
    /// Groups followed in memory: [`limits::FOLD_GROUPS`] (less in tests).
    fold_groups: usize,
    /// Views ranked by the database, the groups being too many to follow.
    ranked: std::sync::atomic::AtomicU64,
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
    /// A view following at most `groups` groups in memory.
    pub fn with_fold_groups(groups: usize) -> Kept {
        Kept {
            shown: Mutex::default(),
            fold: tokio::sync::Mutex::default(),
            fold_groups: groups,
            ranked: std::sync::atomic::AtomicU64::new(0),
        }
    }

    /// How many times the view was ranked by the database.
    pub fn ranked(&self) -> u64 {
        self.ranked.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The view as of the database's generation now.
    pub async fn current(&self, store: &Store) -> DbResult<Arc<View>> {
        let now = store.generation().await?;
        if let Some(v) = self.since(now) {
            return Ok(v);
        }
        let mut fold = self.fold.lock().await;
        if let Some(v) = self.since(now) {
            return Ok(v);
        }
        // Taken out while it changes: a failed read leaves nothing half folded.
        let (version, view, making) = self.make(store, fold.take()).await?;
        let view = Arc::new(view);
        *fold = making;
        *lock(&self.shown) = Some((version.generation, view.clone()));
        Ok(view)
    }

    /// The view brought up to date from how it was last made: the rows since folded in,
    /// or every row when there is nothing to build on; ranked by the database instead
    /// once the groups are more than the cap, until they are half as many again (then
    /// folded from every row at the next change).
    async fn make(
        &self,
        store: &Store,
        was: Option<Making>,
    ) -> DbResult<(Version, View, Option<Making>)> {
        let was = match was {
            Some(Making::Ranked) => None,
            Some(Making::Folded(v, acc)) => Some((Some(v), acc)),
            None => Some((None, Versions::capped(self.fold_groups))),
        };
        if let Some((since, mut acc)) = was {
            let (version, _) = store
                .leaks_since(&Filter::default(), since, &mut acc)
                .await?;
            if !acc.over {
                // After the leaks: every version they name is recorded by then.
                let recorded = store.app_versions().await?;
                let view = acc.view(&recorded, limits::VERSIONS, limits::VERSION_GROUPS);
                return Ok((version, view, Some(Making::Folded(version, acc))));
            }
        }
        self.ranked
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let mut ranking = ranked::Ranking::new(limits::VERSIONS, limits::VERSION_GROUPS);
        let mut acc = Versions::default();
        let (version, recorded) = store.ranked_versions(&mut ranking, &mut acc).await?;
        let mut view = acc.view(&recorded, limits::VERSIONS, limits::VERSION_GROUPS);
        ranking.count(&mut view);
        let many = ranking.groups() > (self.fold_groups / 2) as u64;
        Ok((version, view, many.then_some(Making::Ranked)))
    }

    fn since(&self, now: i64) -> Option<Arc<View>> {
        lock(&self.shown)
            .as_ref()
            .filter(|(g, _)| *g >= now)
            .map(|(_, v)| v.clone())
    }
}

impl View {
    /// The `/versions` page of this view.
    pub fn page(&self) -> String {
        html::versions(self)
    }
}

mod html {
    use maud::{html, Markup};

    use super::{Counts, GoneGroup, VersionGroup, VersionShown, View};
    use crate::limits;
    use crate::pages::{page, plural, when};
    use hprof_shrink_analyze::render::{shown, with_native};

    /// "3 → 5", or "5" (and "new") where the previous version had none.
    fn moved(now: u64, before: Option<u64>) -> Markup {
        html! {
            @match before {
                Some(b) => { (b) " → " (now) }
                None => { (now) }
            }
        }
    }

    /// The median's Java bytes, with their native bytes when any.
    fn median(c: &Counts) -> String {
        with_native(
            c.retained_bytes.p50.max(0) as u64,
            c.retained_native_bytes.p50.max(0) as u64,
        )
    }

    fn retained(c: &Counts, before: Option<&Counts>) -> Markup {
        html! {
            @if let Some(b) = before { (median(b)) " → " }
            (median(c)) " (max " (with_native(
                c.retained_bytes.max.max(0) as u64,
                c.retained_native_bytes.max.max(0) as u64,
            )) ")"
        }
    }

    /// The leaking class (a link to the group), its signature, its library leak.
    fn class(signature: &str, class_name: &str, library_leak: Option<&str>) -> Markup {
        html! {
            td {
                a href={ "/groups/" (signature) } { (shown(class_name)) }
                br; span.sig { (signature) }
                @if let Some(lib) = library_leak { br; small { "library leak: " (lib) } }
            }
        }
    }

    fn row(g: &VersionGroup) -> Markup {
        let before = g.previous.as_ref();
        html! {
            tr {
                td {
                    @if g.new { strong.new { "new" } }
                    @if g.back {
                        strong.back { "back" }
                        @if let Some(last) = &g.last_seen_in { " (last in " (last) ")" }
                    }
                }
                (class(&g.signature, &g.class_name, g.library_leak.as_deref()))
                td.n { (moved(g.here.packages, before.map(|b| b.packages))) }
                td.n { (moved(g.here.occurrences, before.map(|b| b.occurrences))) }
                td.n { (retained(&g.here, before)) }
            }
        }
    }

    /// A version's groups, and how many more it has.
    fn groups(ver: &VersionShown) -> Markup {
        html! {
            @if !ver.groups.is_empty() {
                table {
                    tr {
                        th { "" } th { "leaking class" } th { "packages" } th { "occurrences" }
                        th { "retained (median, max)" }
                    }
                    @for g in &ver.groups { (row(g)) }
                }
            }
            @if ver.groups_left_out > 0 {
                p.more { (plural(ver.groups_left_out, "more group", "more groups")) " not shown (the first " (limits::VERSION_GROUPS) ": new ones first, then those back, then by packages)." }
            }
        }
    }

    /// The groups of the version before with no leak in this one, with their counts there.
    fn gone(ver: &VersionShown) -> Markup {
        let Some(before) = &ver.previous_version else {
            return html! {};
        };
        html! {
            @if !ver.gone.is_empty() {
                h3.gone { "Gone since " (before) }
                table.gone {
                    tr {
                        th { "leaking class" } th { "packages in " (before) }
                        th { "occurrences in " (before) } th { "retained (median, max)" }
                    }
                    @for g in &ver.gone { (gone_row(g)) }
                }
            }
            @if ver.gone_left_out > 0 {
                p.more { (plural(ver.gone_left_out, "more gone group", "more gone groups")) " not shown (the first " (limits::VERSION_GROUPS) " by packages)." }
            }
        }
    }

    fn gone_row(g: &GoneGroup) -> Markup {
        html! {
            tr {
                (class(&g.signature, &g.class_name, g.library_leak.as_deref()))
                td.n { (g.previous.packages) }
                td.n { (g.previous.occurrences) }
                td.n { (retained(&g.previous, None)) }
            }
        }
    }

    pub fn versions(v: &View) -> String {
        let body = html! {
            p {
                "Leak groups by app version (" code { "appVersion" } ", else " code { "versionName" }
                ", else " code { "app_version" } " of " code { "extra.info" } ", else a heap-graph trace's "
                code { "versionCode" } "), the versions in the order their first package was received, oldest first. "
                "A group is new in a version when no package of an earlier version has it, back "
                "when an earlier version had it and the version before did not. "
                "Each count is shown beside the version before's (before → now); the groups the "
                "version before had and this one has not are listed as gone, with their counts "
                "there. "
                a href="/api/versions" { "JSON" }
            }
            @if v.versions_left_out > 0 {
                p.more { "The latest " (limits::VERSIONS) " versions shown; " (v.versions_left_out) " older not shown." }
            }
            @if v.versions.is_empty() { p { "No package yet." } }
            @for ver in &v.versions {
                h2 id={ "v-" (ver.app_version) } { "App version " (ver.app_version) }
                p {
                    "First package received " (when(ver.first_received_ms)) "; "
                    (plural(ver.packages, "package", "packages")) "; "
                    (plural(ver.groups_seen, "leak group", "leak groups")) ", " (ver.new_groups) " new"
                    @let went = ver.gone.len() as u64 + ver.gone_left_out;
                    @if went > 0 { ", " (went) " gone" }
                    @if let Some(p) = &ver.previous_version { " (before: " (p) ")" }
                    "."
                }
                (groups(ver))
                (gone(ver))
            }
            @if let Some(ver) = &v.no_version {
                h2 id="no-version" { "No app version" }
                p {
                    (plural(ver.packages, "package", "packages")) " without an app version, the first received "
                    (when(ver.first_received_ms)) "; " (plural(ver.groups_seen, "leak group", "leak groups")) ". "
                    "They are no version: kept out of the order above, so no group is new in them "
                    "and none is new later because of them."
                }
                (groups(ver))
            }
        };
        page("Leak groups by app version", body)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn leak(
        id: i64,
        pkg: i64,
        ms: i64,
        version: &str,
        sig: &str,
        retained: i64,
    ) -> LeakRef<'static> {
        LeakRef {
            leak_id: id,
            package_id: pkg,
            received_ms: ms,
            sdk: "25",
            manufacturer: "acme",
            app_version: Box::leak(version.to_string().into_boxed_str()),
            signature: Box::leak(sig.to_string().into_boxed_str()),
            class_name: "com.example.A",
            library: None,
            retained_bytes: retained,
            title: None,
            signature_version: None,
            retained_native_bytes: 0,
        }
    }

    fn recorded(v: &[(&str, i64, i64)]) -> Vec<AppVersion> {
        v.iter()
            .map(|(value, t, n)| AppVersion {
                value: value.to_string(),
                first_received_ms: *t,
                packages: *n,
            })
            .collect()
    }

    /// Versions by their first package's time, not by text; a group new where it first
    /// appears in that order, even when its first occurrence came later in time.
    #[test]
    fn new_groups_and_moves_by_first_received_order() {
        let mut f = Versions::default();
        f.add(&leak(1, 1, 160, "1.10", "a", 10));
        // "b" was seen in 1.9 only after 1.10 came out: still 1.9's.
        f.add(&leak(2, 2, 300, "1.9", "b", 20));
        f.add(&leak(3, 3, 200, "1.10", "b", 30));
        f.add(&leak(4, 3, 200, "1.10", "b", 40));
        let order = recorded(&[("1.10", 150, 2), ("1.9", 50, 1), ("2.0", 400, 1)]);
        let v = f.view(&order, 20, 50);
        let names: Vec<_> = v.versions.iter().map(|v| v.app_version.as_str()).collect();
        assert_eq!(names, ["1.9", "1.10", "2.0"]);
        let (nine, ten) = (&v.versions[0], &v.versions[1]);
        assert_eq!((nine.groups_seen, nine.new_groups), (1, 1));
        assert!(nine.groups[0].new && nine.groups[0].previous.is_none());
        assert_eq!((ten.groups_seen, ten.new_groups), (2, 1));
        assert_eq!(ten.previous_version.as_deref(), Some("1.9"));
        // New first.
        assert_eq!(ten.groups[0].signature, "a");
        assert!(ten.groups[0].new);
        let b = &ten.groups[1];
        assert!(!b.new);
        assert_eq!((b.here.packages, b.here.occurrences), (1, 2));
        assert_eq!(
            (b.here.retained_bytes.p50, b.here.retained_bytes.max),
            (30, 40)
        );
        assert_eq!(b.previous.as_ref().map(|p| p.packages), Some(1));
        // A version with packages and no leak.
        assert_eq!((v.versions[2].groups_seen, v.versions[2].packages), (0, 1));
    }

    /// Packages without an app version are no version: a group first seen in one is new
    /// in the first version that has it, the version before 2.2 is 2.1, not "".
    #[test]
    fn packages_without_a_version_are_not_a_version() {
        let mut f = Versions::default();
        f.add(&leak(1, 1, 100, "", "a", 10));
        f.add(&leak(2, 2, 150, "2.1", "b", 10));
        f.add(&leak(3, 3, 200, "2.2", "a", 20));
        f.add(&leak(4, 4, 250, "", "b", 30));
        let order = recorded(&[("", 100, 2), ("2.1", 150, 1), ("2.2", 200, 1)]);
        let v = f.view(&order, 20, 50);
        let names: Vec<_> = v.versions.iter().map(|v| v.app_version.as_str()).collect();
        assert_eq!(names, ["2.1", "2.2"]);
        let two = &v.versions[1];
        assert_eq!(two.previous_version.as_deref(), Some("2.1"));
        assert_eq!((two.groups_seen, two.new_groups), (1, 1));
        let a = &two.groups[0];
        assert_eq!(a.signature, "a");
        assert!(a.new && a.previous.is_none(), "{a:?}");
        // Apart: their packages and groups, nothing new there.
        let none = v.no_version.as_ref().expect("packages without a version");
        assert_eq!((none.packages, none.first_received_ms), (2, 100));
        assert_eq!((none.groups_seen, none.new_groups), (2, 0));
        assert!(none.previous_version.is_none());
        assert!(none.groups.iter().all(|g| !g.new && g.previous.is_none()));
        let page = html::versions(&v);
        assert!(!page.contains("before: ?") && !page.contains("App version ?"));
        let apart = page.find("id=\"no-version\"").expect("a section apart");
        assert!(
            apart > page.find("id=\"v-2.2\"").unwrap(),
            "after the versions"
        );
        // Every package with a version: no section apart.
        let mut f = Versions::default();
        f.add(&leak(1, 1, 100, "2.1", "a", 10));
        let order = recorded(&[("2.1", 100, 1)]);
        assert!(f.view(&order, 20, 50).no_version.is_none());
    }

    /// Across three versions: a group the version before had and this one has not is
    /// listed as gone, with its counts there (capped like the groups, and from a version
    /// not shown too); one seen earlier but not in the version before is back, first
    /// after the new ones. Read as the JSON and the page show them.
    #[test]
    fn gone_and_back_groups() {
        let mut f = Versions::default();
        f.add(&leak(1, 1, 100, "1.0", "a", 10));
        f.add(&leak(2, 1, 100, "1.0", "b", 10));
        f.add(&leak(3, 2, 110, "1.0", "a", 20));
        f.add(&leak(4, 2, 110, "1.0", "c", 30));
        f.add(&leak(5, 3, 200, "1.1", "b", 10));
        f.add(&leak(6, 4, 300, "1.2", "a", 40));
        f.add(&leak(7, 4, 300, "1.2", "b", 10));
        f.add(&leak(8, 5, 310, "1.2", "b", 10));
        let order = recorded(&[("1.0", 100, 2), ("1.1", 200, 1), ("1.2", 300, 2)]);
        let view = f.view(&order, 20, 50);
        let v = serde_json::to_value(&view).unwrap();
        let sigs = |list: &serde_json::Value| -> Vec<String> {
            list.as_array()
                .unwrap_or_else(|| panic!("a list: {v}"))
                .iter()
                .map(|g| g["signature"].as_str().unwrap().to_string())
                .collect()
        };
        let [one, two, three] = [0, 1, 2].map(|k| &v["versions"][k]);
        // 1.0 has no version before: nothing gone.
        assert_eq!(sigs(&one["gone"]), Vec::<String>::new(), "{one}");
        // 1.1: a and c gone, each with its counts in 1.0 (a in 2 packages first).
        assert_eq!(sigs(&two["gone"]), ["a", "c"], "{two}");
        assert_eq!(two["goneLeftOut"], 0, "{two}");
        let a = &two["gone"][0];
        assert_eq!((&a["packages"], &a["occurrences"]), (&2.into(), &2.into()));
        assert_eq!(a["retainedBytes"]["max"], 20, "{a}");
        assert_eq!(two["groups"][0]["back"], false, "{two}");
        // 1.2: a back (last in 1.0), no counts beside; b steady; nothing gone.
        assert_eq!(sigs(&three["groups"]), ["a", "b"], "back first: {three}");
        let (a, b) = (&three["groups"][0], &three["groups"][1]);
        assert_eq!(
            (&a["new"], &a["back"]),
            (&false.into(), &true.into()),
            "{a}"
        );
        assert_eq!(
            (&a["lastSeenIn"], &a["previous"]),
            (&"1.0".into(), &serde_json::Value::Null)
        );
        assert_eq!(
            (&b["back"], &b["lastSeenIn"]),
            (&false.into(), &serde_json::Value::Null)
        );
        assert_eq!(b["previous"]["packages"], 1, "{b}");
        assert_eq!(sigs(&three["gone"]), Vec::<String>::new(), "{three}");
        // The page: 1.1 says what went, 1.2 what came back.
        let page = html::versions(&view);
        let (at1, at2) = (
            page.find("id=\"v-1.1\"").unwrap(),
            page.find("id=\"v-1.2\"").unwrap(),
        );
        let (s1, s2) = (&page[at1..at2], &page[at2..]);
        assert!(
            s1.contains("1 package; 1 leak group, 0 new, 2 gone"),
            "{s1}"
        );
        assert!(
            s1.contains("Gone since 1.0") && s1.contains("/groups/c"),
            "{s1}"
        );
        assert!(
            s2.contains("<strong class=\"back\">back</strong> (last in 1.0)"),
            "{s2}"
        );
        assert!(!s2.contains("Gone since"), "{s2}");
        // The latest two versions, one group each: 1.1's gone from 1.0 (not shown) still
        // listed, the rest counted; a still back in 1.2.
        let v = serde_json::to_value(f.view(&order, 2, 1)).unwrap();
        assert_eq!(v["versionsLeftOut"], 1, "{v}");
        let (two, three) = (&v["versions"][0], &v["versions"][1]);
        assert_eq!(two["previousVersion"], "1.0", "{two}");
        assert_eq!(
            (sigs(&two["gone"]), &two["goneLeftOut"]),
            (vec!["a".to_string()], &1.into())
        );
        assert_eq!(
            (&three["groups"][0]["back"], &three["groupsLeftOut"]),
            (&true.into(), &1.into())
        );
    }

    /// At most so many versions (the latest) and groups per version; what was cut is
    /// counted; a group is new in its first version even when that one is not shown.
    #[test]
    fn versions_and_groups_are_bounded() {
        let mut f = Versions::default();
        let mut order = Vec::new();
        for k in 0..25i64 {
            let version = format!("v{k}");
            order.push((version.clone(), k * 10, 1));
            f.add(&leak(k, k, k * 10, &version, "old", 1));
        }
        for s in 0..60i64 {
            f.add(&leak(100 + s, 100 + s, 1000, "v24", &format!("s{s:02}"), 1));
        }
        let order: Vec<_> = order.iter().map(|(v, t, n)| (v.as_str(), *t, *n)).collect();
        let v = f.view(&recorded(&order), 20, 50);
        assert_eq!(v.versions.len(), 20);
        assert_eq!(v.versions_left_out, 5);
        assert_eq!(v.versions[0].app_version, "v5");
        assert_eq!(v.versions[0].new_groups, 0, "'old' is v0's");
        let last = &v.versions[19];
        assert_eq!((last.groups_seen, last.new_groups), (61, 60));
        assert_eq!((last.groups.len(), last.groups_left_out), (50, 11));
        assert!(last.groups.iter().all(|g| g.new));
        f.clear();
        assert!(f.view(&[], 20, 50).versions.is_empty());
    }

    /// Past its cap, the view is ranked by the database: the same view as a fold of every
    /// row (25 versions, one of them none, some listed and some counted; groups new, back
    /// and gone), while the fold holds only the groups listed; and once the groups are
    /// few again it is folded from every row.
    #[tokio::test]
    async fn a_view_past_its_cap_is_ranked_and_the_same() {
        use crate::test_rows::record;
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("meta.sqlite")).await.unwrap();
        record(&store, 0, 6000, 1000).await;
        let folded = Kept::default();
        let ranked = Kept::with_fold_groups(100);
        let view = |v: &View| serde_json::to_value(v).unwrap();
        let all = folded.current(&store).await.unwrap();
        assert_eq!(view(&ranked.current(&store).await.unwrap()), view(&all));
        assert_eq!((folded.ranked(), ranked.ranked()), (0, 1));
        // The view lists, cuts and counts: what makes the ranking pick.
        assert_eq!(all.versions_left_out, 4);
        let last = &all.versions[19];
        assert!(
            last.groups_left_out > 0 && last.gone_left_out > 0,
            "{last:?}"
        );
        assert!(all.versions.iter().any(|v| v.groups.iter().any(|g| g.back)));
        assert!(all
            .no_version
            .as_ref()
            .is_some_and(|v| v.groups_left_out > 0));
        // A change: ranked again, still the same.
        record(&store, 6000, 6100, 1000).await;
        let all = folded.current(&store).await.unwrap();
        assert_eq!(view(&ranked.current(&store).await.unwrap()), view(&all));
        assert_eq!(ranked.ranked(), 2);
        // A fold of every row once the groups are half the cap.
        let Store::Sqlite(pool) = &store else {
            unreachable!()
        };
        sqlx::query("DELETE FROM leaks WHERE signature >= 's000050'")
            .execute(pool)
            .await
            .unwrap();
        sqlx::query("UPDATE generation SET n = n + 1, removals = removals + 1")
            .execute(pool)
            .await
            .unwrap();
        ranked.current(&store).await.unwrap();
        record(&store, 6100, 6101, 10).await;
        let all = folded.current(&store).await.unwrap();
        assert_eq!(view(&ranked.current(&store).await.unwrap()), view(&all));
        assert_eq!(ranked.ranked(), 3);
    }
}
