//! The plain records of the server's metadata: what the store reads and writes and the
//! grouping folds, with no pool and no query, so that the store, the grouping and the
//! cache all name them without naming each other.

use serde::Serialize;

use crate::limits::Cut;

/// A package as the lists show it: without its `result.info` and `extra.info` (see
/// [`Package`]), each column within [`limits`](crate::limits).
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PackageRow {
    pub id: i64,
    pub md5: String,
    pub name: String,
    pub bytes: i64,
    pub received_ms: i64,
    pub sdk: String,
    pub manufacturer: String,
    pub app_version: String,
    pub state: String,
    pub error: Option<String>,
    pub attempts: i64,
    /// Analyses recorded for this package: 1 once done, whatever the attempts; one more
    /// for each re-analysis.
    pub analyses: i64,
    /// The recorded analysis's `signatureVersion`; None when recorded by a server that did
    /// not keep it (an older analyzer's), or not analyzed yet.
    pub signature_version: Option<i64>,
    /// The job was queued again because its analysis was older than the analyzer's (see
    /// [`Regrouping`]): it waits behind every other job.
    pub reanalysis: bool,
}

/// One package with its `result.info` and `extra.info` as recorded (cut to
/// [`limits`](crate::limits); `manifestCut` and `extraCut` say what was cut).
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Package {
    #[serde(flatten)]
    pub row: PackageRow,
    pub manifest: Vec<(String, String)>,
    pub manifest_cut: Option<Cut>,
    pub extra: Vec<(String, String)>,
    pub extra_cut: Option<Cut>,
}

/// What is recorded of a new package: its properties whole, cut where they are recorded.
pub struct NewPackage<'a> {
    pub md5: &'a str,
    pub name: &'a str,
    pub bytes: u64,
    pub manifest: &'a [(String, String)],
    pub extra: &'a [(String, String)],
}

/// A job taken by a worker: the package, and the lease that lets it record the result.
#[derive(Debug, Clone)]
pub struct Claim {
    pub id: i64,
    pub md5: String,
    pub attempt: i64,
    /// The claimer's token: the job's result is recorded only by whoever holds it while
    /// the job still names it.
    pub token: String,
    /// A re-analysis of a package analyzed by an older analyzer (the lowest priority).
    pub regroup: bool,
}

/// Packages analyzed by an older analyzer, queued to be analyzed again so that their leaks
/// join the groups of the current signatures: how far that has come. Present while any is
/// still queued or under way.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Regrouping {
    /// Packages queued for re-analysis in this regrouping.
    pub packages: i64,
    /// Of those, analyzed again (their leaks in their new groups).
    pub reanalyzed: i64,
    /// Of those, whose re-analysis failed: their leaks stay under their old signatures.
    pub failed: i64,
    /// The signature version the packages are analyzed again with.
    pub signature_version: i64,
}

/// The analysis queue as the groups page shows it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Queue {
    /// (state, jobs) of every job.
    pub states: Vec<(String, i64)>,
    pub regrouping: Option<Regrouping>,
}

/// One leak of one package, with what the grouping needs of its package.
#[derive(Debug, Clone)]
pub struct LeakRow {
    pub leak_id: i64,
    pub package_id: i64,
    pub package_name: String,
    pub received_ms: i64,
    pub sdk: String,
    pub manufacturer: String,
    pub app_version: String,
    pub signature: String,
    pub class_name: String,
    pub library: Option<String>,
    pub retained_bytes: i64,
    /// LeakCanary's short description; None in rows recorded before it was kept.
    pub title: Option<String>,
    /// The signature's version; None in rows recorded before it was kept.
    pub signature_version: Option<i64>,
    /// Registered native bytes retained, apart from `retained_bytes`; 0 in rows recorded
    /// before they were kept.
    pub retained_native_bytes: i64,
}

impl LeakRow {
    /// `l`, owned, in the package named `package_name`.
    pub(crate) fn of(l: &LeakRef<'_>, package_name: String) -> LeakRow {
        LeakRow {
            leak_id: l.leak_id,
            package_id: l.package_id,
            package_name,
            received_ms: l.received_ms,
            sdk: l.sdk.to_string(),
            manufacturer: l.manufacturer.to_string(),
            app_version: l.app_version.to_string(),
            signature: l.signature.to_string(),
            class_name: l.class_name.to_string(),
            library: l.library.map(str::to_string),
            retained_bytes: l.retained_bytes,
            title: l.title.map(str::to_string),
            signature_version: l.signature_version,
            retained_native_bytes: l.retained_native_bytes,
        }
    }

    pub fn leak(&self) -> LeakRef<'_> {
        LeakRef {
            leak_id: self.leak_id,
            package_id: self.package_id,
            received_ms: self.received_ms,
            sdk: &self.sdk,
            manufacturer: &self.manufacturer,
            app_version: &self.app_version,
            signature: &self.signature,
            class_name: &self.class_name,
            library: self.library.as_deref(),
            retained_bytes: self.retained_bytes,
            title: self.title.as_deref(),
            signature_version: self.signature_version,
            retained_native_bytes: self.retained_native_bytes,
        }
    }
}

/// What the grouping takes of one leak, borrowed from wherever it is (a [`LeakRow`], or
/// a database row as it is read: 10,000 packages' leaks need no string of their own).
#[derive(Debug, Clone, Copy)]
pub struct LeakRef<'a> {
    pub leak_id: i64,
    pub package_id: i64,
    pub received_ms: i64,
    pub sdk: &'a str,
    pub manufacturer: &'a str,
    pub app_version: &'a str,
    pub signature: &'a str,
    pub class_name: &'a str,
    pub library: Option<&'a str>,
    pub retained_bytes: i64,
    pub title: Option<&'a str>,
    pub signature_version: Option<i64>,
    pub retained_native_bytes: i64,
}

/// What takes the leak rows a store reads ([`Store::leaks_since`](crate::store::Store::leaks_since)):
/// the groups ([`Fold`](crate::groups::Fold)), the per-app-version view
/// ([`Versions`](crate::versions::Versions)).
pub trait LeakSink {
    /// Takes one more leak.
    fn add(&mut self, l: &LeakRef<'_>);
    /// Forgets every leak taken, before every row is sent again.
    fn clear(&mut self);
    /// Forgets the leaks of one signature, before its rows are sent again (some of them
    /// removed: a package re-analyzed).
    fn forget(&mut self, signature: &str);
}

/// The state of the leak rows: the generation (bumped by every change), and how many
/// changes removed rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Version {
    pub generation: i64,
    pub removals: i64,
}

#[derive(Debug, Clone)]
pub struct BitmapRow {
    pub package_id: i64,
    pub hash: String,
    pub width: i64,
    pub height: i64,
    pub buffer_bytes: i64,
    pub copies: i64,
    pub wasted_bytes: i64,
    pub format: String,
    pub has_picture: bool,
}

/// Restricts the leaks looked at to packages with these values.
#[derive(Debug, Clone, Default, serde::Deserialize)]
pub struct Filter {
    pub sdk: Option<String>,
    pub manufacturer: Option<String>,
    pub app_version: Option<String>,
}

impl Filter {
    /// An empty field (an unselected `<select>`) is no restriction.
    pub fn normalized(self) -> Filter {
        let f = |v: Option<String>| v.filter(|s| !s.is_empty());
        Filter {
            sdk: f(self.sdk),
            manufacturer: f(self.manufacturer),
            app_version: f(self.app_version),
        }
    }
}

/// The value of the first of `keys` present in `props`, or "".
pub fn prop(props: &[(String, String)], keys: &[&str]) -> String {
    keys.iter()
        .find_map(|k| props.iter().find(|(pk, _)| pk == k).map(|(_, v)| v.clone()))
        .unwrap_or_default()
}

/// The `extra.info` keys an app version is read from, first found wins.
pub const APP_VERSION_KEYS: &[&str] = &["appVersion", "versionName", "app_version"];

/// One filter menu: the values seen on the most packages
/// ([`limits::MENU`](crate::limits::MENU)), in order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Menu {
    pub values: Vec<String>,
    /// Distinct values not listed.
    pub left_out: u64,
}

/// The filter menus of the groups page, one per column a filter restricts.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Menus {
    pub sdk: Menu,
    pub manufacturer: Menu,
    pub app_version: Menu,
}
