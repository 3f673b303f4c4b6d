//! Packages whose analysis found no leak (out-of-memory dumps and heap-graph traces, most
//! of them), grouped by the path of their first top retainer that has one
//! ([`crate::triage::path_signature`]): the list that `/no-leak` and `/api/no-leak` show,
//! kept between requests, and one group across the app versions.
//!
//! A group is made as a leak group is ([`Fold`]), each package one occurrence. The list
//! is made again from every no-leak package's row (one per package, a few hundred bytes)
//! when the database's generation moved since it was last made, and kept until it moves
//! again: one tiny query per request otherwise. It holds the first [`limits::GROUPS`]
//! groups, and how many packages without a leak are in none (no top retainer with a
//! path), so that they are not left out silently. A filtered list (SDK, manufacturer, app
//! version: [`Filter`]) is made for its request the same way from the rows the filter
//! admits, and not kept: bounded as the unfiltered one is while it is made.
//!
//! A group's page shows it per app version ([`ByVersion`]): its packages and retained
//! sizes in each of the latest [`limits::VERSIONS`] versions, which is the first with it
//! (new there) or has it back, by the per-app-version view's own rules
//! ([`Versions`]).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use serde::Serialize;

use crate::groups::{Fold, LeakGroup, Top};
use crate::limits;
use crate::rows::{Filter, LeakRef, LeakSink};
use crate::store::{DbResult, Store};
use crate::versions::{Counts, Versions};

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
        self.at(store, &Filter::default(), now).await
    }

    /// The first [`limits::GROUPS`] groups of the packages `f` admits, as of generation
    /// `now` or later. Unfiltered: as kept. Filtered: made for this request (a filter no
    /// package matches, by one lookup, without reading any no-leak row).
    pub async fn at(&self, store: &Store, f: &Filter, now: i64) -> DbResult<Arc<Groups>> {
        if !f.is_none() {
            if !store.admits_any(f).await? {
                return Ok(Arc::default());
            }
            return Ok(Arc::new(self.make(store, f).await?));
        }
        if let Some(t) = self.since(now) {
            return Ok(t);
        }
        let _making = self.making.lock().await;
        if let Some(t) = self.since(now) {
            return Ok(t);
        }
        // Read after the generation: the rows are at least as new as `now`.
        let groups = Arc::new(self.make(store, f).await?);
        *lock(&self.shown) = Some((now, groups.clone()));
        Ok(groups)
    }

    /// The groups of the packages `f` admits, from their rows: at most
    /// [`Kept::with_fold_groups`] groups folded in memory, past that ranked by the
    /// database.
    async fn make(&self, store: &Store, f: &Filter) -> DbResult<Groups> {
        let mut fold = Fold::capped(self.fold_groups);
        store.fold_no_leak(None, f, &mut fold).await?;
        let top = if fold.over() {
            // Too many groups to hold: the first ranked by the database, the rest counted.
            self.ranked.fetch_add(1, Ordering::Relaxed);
            let mut fold = Fold::default();
            let groups = store.ranked_no_leak(f, limits::GROUPS, &mut fold).await?;
            let mut top = fold.top();
            top.app_left_out = groups.saturating_sub(top.app.len() as u64);
            top
        } else {
            fold.top()
        };
        Ok(Groups {
            top,
            ungrouped: store.no_leak_ungrouped(f).await?,
        })
    }

    fn since(&self, now: i64) -> Option<Arc<Groups>> {
        lock(&self.shown)
            .as_ref()
            .filter(|(g, _)| *g >= now)
            .map(|(_, t)| t.clone())
    }
}

/// One no-leak group in one app version.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct VersionRow {
    /// The version's name.
    pub app_version: String,
    /// When its first package was recorded (milliseconds since the Unix epoch).
    pub first_received_ms: i64,
    /// Packages of this version, analyzed or not, with a leak or without.
    pub version_packages: i64,
    /// The group's packages in this version and their retained sizes (`occurrences` =
    /// `packages`); null when it has none there.
    pub group: Option<Counts>,
    /// The first version with the group: none before it (of every version, shown or not).
    pub new: bool,
    /// Back: seen in an earlier version, not in the one before this.
    pub back: bool,
    /// For a group back, the latest version before this one with it.
    pub last_seen_in: Option<String>,
}

/// One no-leak group across the app versions, versions ordered as `/versions` orders them
/// (by their first package's time).
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ByVersion {
    /// The latest [`limits::VERSIONS`] versions, oldest first, each whether it has the
    /// group or not.
    pub versions: Vec<VersionRow>,
    /// Older versions not in `versions`.
    pub versions_left_out: u64,
    /// The group's packages without an app version; null when it has none.
    pub no_version: Option<Counts>,
    /// The latest version is the first with the group: new there.
    pub new_in_latest: bool,
}

impl ByVersion {
    /// From a [`Versions`] fold of one group's rows, the versions recorded being `recorded`.
    fn of(v: &Versions, recorded: &[crate::store::AppVersion]) -> ByVersion {
        // One group: each version lists it, or not.
        let view = v.view(recorded, limits::VERSIONS, 1);
        let versions: Vec<VersionRow> = view
            .versions
            .into_iter()
            .map(|s| {
                let g = s.groups.into_iter().next();
                VersionRow {
                    app_version: s.app_version,
                    first_received_ms: s.first_received_ms,
                    version_packages: s.packages,
                    new: g.as_ref().is_some_and(|g| g.new),
                    back: g.as_ref().is_some_and(|g| g.back),
                    last_seen_in: g.as_ref().and_then(|g| g.last_seen_in.clone()),
                    group: g.map(|g| g.here),
                }
            })
            .collect();
        ByVersion {
            new_in_latest: versions.last().is_some_and(|v| v.new),
            versions,
            versions_left_out: view.versions_left_out,
            no_version: view
                .no_version
                .and_then(|s| s.groups.into_iter().next())
                .map(|g| g.here),
        }
    }
}

/// One no-leak group: as the list shows it, and per app version.
#[derive(Debug, Clone)]
pub struct Group {
    /// Its summary, of every package.
    pub group: LeakGroup,
    /// Its packages per app version.
    pub versions: ByVersion,
}

/// Takes a group's rows into its summary and its per-version counts at once: one read.
struct Both<'a>(&'a mut Fold, &'a mut Versions);

impl LeakSink for Both<'_> {
    fn add(&mut self, l: &LeakRef<'_>) {
        self.0.add(l);
        self.1.add(l);
    }
    fn clear(&mut self) {
        self.0.clear();
        LeakSink::clear(self.1);
    }
    fn forget(&mut self, signature: &str) {
        self.0.forget(signature);
        LeakSink::forget(self.1, signature);
    }
}

/// The no-leak group of `signature`, or None when no package is in it. Reads the group's
/// rows once (by `retainers_by_signature`) and the app versions' order (one `GROUP BY`
/// over an index, as `/versions` does); holds what a fold of its packages holds.
pub async fn group(store: &Store, signature: &str) -> DbResult<Option<Group>> {
    let (mut fold, mut versions) = (Fold::default(), Versions::default());
    store
        .fold_no_leak(
            Some(signature),
            &Filter::default(),
            &mut Both(&mut fold, &mut versions),
        )
        .await?;
    let Some(group) = fold.groups().into_iter().next() else {
        return Ok(None);
    };
    // After the rows: every version they name is recorded by then.
    let recorded = store.app_versions().await?;
    Ok(Some(Group {
        group,
        versions: ByVersion::of(&versions, &recorded),
    }))
}

/// The group-per-version section of a no-leak group's page.
mod html {
    use maud::{html, Markup};

    use super::ByVersion;
    use crate::pages::{more, plural, sized, when};

    impl ByVersion {
        /// Whether the latest version is the group's first, then each version shown with
        /// the group's packages there (or none), new or back.
        pub fn html(&self) -> Markup {
            html! {
                h2 { "By app version" }
                @if let Some(latest) = self.versions.last() {
                    p.latest {
                        @if self.new_in_latest {
                            strong { "New in the latest app version, " (latest.app_version) } ": in no version before it."
                        } @else if latest.group.is_some() {
                            "In the latest app version, " (latest.app_version) ", and in versions before it."
                        } @else {
                            "Not in the latest app version, " (latest.app_version) "."
                        }
                    }
                    table {
                        tr {
                            th { "app version" } th { "first package" } th { "packages of the version" }
                            th { "of this group" } th { "retained (median / max)" } th { "" }
                        }
                        @for r in &self.versions {
                            tr {
                                td { (r.app_version) }
                                td { (when(r.first_received_ms)) }
                                td.n { (r.version_packages) }
                                @if let Some(c) = &r.group {
                                    td.n { (c.packages) }
                                    td.n {
                                        (sized(c.retained_bytes.p50, c.retained_native_bytes.p50)) " / "
                                        (sized(c.retained_bytes.max, c.retained_native_bytes.max))
                                    }
                                } @else {
                                    td.n { "0" } td {}
                                }
                                td {
                                    @if r.new { strong.new { "new" } }
                                    @if let Some(b) = &r.last_seen_in { span.back { "back (last in " (b) ")" } }
                                }
                            }
                        }
                    }
                    (more(self.versions_left_out, "older version", "older versions", "by their first package"))
                } @else {
                    p { "No package has an app version." }
                }
                @if let Some(c) = &self.no_version {
                    p { (plural(c.packages, "package", "packages")) " of this group without an app version." }
                }
            }
        }
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
