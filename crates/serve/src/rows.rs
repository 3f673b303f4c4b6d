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
    /// The package's id in the store.
    pub id: i64,
    /// The MD5 of the package's bytes (hex): its key in the blob store.
    pub md5: String,
    /// The file name it was uploaded under, as shown.
    pub name: String,
    /// The package's size in bytes.
    pub bytes: i64,
    /// When the server recorded it (milliseconds since the Unix epoch).
    pub received_ms: i64,
    /// The device's Android SDK version, from its `result.info` ("" when absent).
    pub sdk: String,
    /// The device's manufacturer, from its `result.info` ("" when absent).
    pub manufacturer: String,
    /// The app's version, from its `extra.info` ([`APP_VERSION_KEYS`]; "" when absent).
    pub app_version: String,
    /// The analysis job's state: `received`, `analyzing`, `done` or `failed`.
    pub state: String,
    /// Why the last attempt failed, when it did.
    pub error: Option<String>,
    /// Attempts at the analysis so far.
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
    /// A LeakCanary report (`POST /api/leakcanary`), not a package: its download is the
    /// text as received.
    pub report: bool,
}

/// One package with its `result.info` and `extra.info` as recorded (cut to
/// [`limits`](crate::limits); `manifestCut` and `extraCut` say what was cut).
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Package {
    /// The package as the lists show it.
    #[serde(flatten)]
    pub row: PackageRow,
    /// `result.info`'s pairs, in the package's order.
    pub manifest: Vec<(String, String)>,
    /// What was cut of `result.info`, if anything.
    pub manifest_cut: Option<Cut>,
    /// `extra.info`'s pairs, in the package's order.
    pub extra: Vec<(String, String)>,
    /// What was cut of `extra.info`, if anything.
    pub extra_cut: Option<Cut>,
}

impl Package {
    /// Made with `--private`: its `extra.info` says so (String values and pixels replaced
    /// on the phone).
    pub fn is_private(&self) -> bool {
        self.extra
            .iter()
            .any(|(k, v)| k == hprof_shrink_core::PRIVATE_KEY && v == "true")
    }
}

/// What is recorded of a new package: its properties whole, cut where they are recorded.
pub struct NewPackage<'a> {
    /// The MD5 of the package's bytes (hex).
    pub md5: &'a str,
    /// The file name it was uploaded under.
    pub name: &'a str,
    /// The package's size in bytes.
    pub bytes: u64,
    /// `result.info`'s pairs.
    pub manifest: &'a [(String, String)],
    /// `extra.info`'s pairs.
    pub extra: &'a [(String, String)],
}

/// A job taken by a worker: the package, and the lease that lets it record the result.
#[derive(Debug, Clone)]
pub struct Claim {
    /// The package's id.
    pub id: i64,
    /// The MD5 of the package's bytes: its key in the blob store.
    pub md5: String,
    /// Which attempt this is (1 for the first).
    pub attempt: i64,
    /// The claimer's token: the job's result is recorded only by whoever holds it while
    /// the job still names it.
    pub token: String,
    /// A re-analysis of a package analyzed by an older analyzer, or before its app
    /// version's mapping arrived (the lowest priority).
    pub regroup: bool,
    /// The mapping of the package's app version, when one was uploaded.
    pub mapping: Option<MappingRef>,
}

/// An app version's mapping as recorded: the key of its text in the package store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MappingRef {
    /// The MD5 of the mapping's text (`mappings/<md5>.txt`).
    pub md5: String,
    /// The app version it is the mapping of.
    pub app_version: String,
}

/// A mapping to record ([`Store::put_mapping`](crate::store::Store::put_mapping)).
#[derive(Debug, Clone, Copy)]
pub struct NewMapping<'a> {
    /// The app version, as packages record it.
    pub app_version: &'a str,
    /// The MD5 of the text, hex.
    pub md5: &'a str,
    /// Its length.
    pub bytes: u64,
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
    /// The regrouping under way, if any.
    pub regrouping: Option<Regrouping>,
}

/// One leak of one package, with what the grouping needs of its package.
#[derive(Debug, Clone)]
pub struct LeakRow {
    /// The leak's id in the store.
    pub leak_id: i64,
    /// The package it was found in.
    pub package_id: i64,
    /// That package's file name.
    pub package_name: String,
    /// When that package was recorded (milliseconds since the Unix epoch).
    pub received_ms: i64,
    /// That package's SDK version ("" when unknown).
    pub sdk: String,
    /// That package's device manufacturer ("" when unknown).
    pub manufacturer: String,
    /// That package's app version ("" when unknown).
    pub app_version: String,
    /// The leak's signature: what groups it with the same bug elsewhere.
    pub signature: String,
    /// The leaking object's class.
    pub class_name: String,
    /// The known framework leak it runs through (a library leak), if any.
    pub library: Option<String>,
    /// Bytes the leaking object retains.
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

    /// The row as the grouping takes it, borrowed.
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
    /// The leak's id in the store.
    pub leak_id: i64,
    /// The package it was found in.
    pub package_id: i64,
    /// When that package was recorded (milliseconds since the Unix epoch).
    pub received_ms: i64,
    /// That package's SDK version ("" when unknown).
    pub sdk: &'a str,
    /// That package's device manufacturer ("" when unknown).
    pub manufacturer: &'a str,
    /// That package's app version ("" when unknown).
    pub app_version: &'a str,
    /// The leak's signature.
    pub signature: &'a str,
    /// The leaking object's class.
    pub class_name: &'a str,
    /// The known framework leak it runs through (a library leak), if any.
    pub library: Option<&'a str>,
    /// Bytes the leaking object retains.
    pub retained_bytes: i64,
    /// LeakCanary's short description; None in rows recorded before it was kept.
    pub title: Option<&'a str>,
    /// The signature's version; None in rows recorded before it was kept.
    pub signature_version: Option<i64>,
    /// Registered native bytes the leaking object retains (0 in rows recorded before
    /// they were kept).
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
    /// Whether it takes no more: the store stops reading (a fold past its groups' cap,
    /// whose entry ranks the groups in the database instead).
    fn full(&self) -> bool {
        false
    }
}

/// The state of the leak rows: the generation (bumped by every change), and how many
/// changes removed rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Version {
    /// Bumped by every change of the leak rows.
    pub generation: i64,
    /// Changes that removed rows (a package re-analyzed): a fold cannot just add those.
    pub removals: i64,
}

/// One group of duplicated bitmaps of one package, as recorded from its analysis.
#[derive(Debug, Clone)]
pub struct BitmapRow {
    /// The package whose analysis found it.
    pub package_id: i64,
    /// The MD5 of the buffer the copies share (hex).
    pub hash: String,
    /// The bitmap's width in pixels.
    pub width: i64,
    /// The bitmap's height in pixels.
    pub height: i64,
    /// Bytes of one copy's buffer.
    pub buffer_bytes: i64,
    /// Copies of the buffer in the package.
    pub copies: i64,
    /// Bytes the copies beyond the first take.
    pub wasted_bytes: i64,
    /// The buffer's format as the analysis named it (a pixel layout, an image format, or
    /// `unknown`).
    pub format: String,
    /// Whether a picture of it was stored (`pictures/<hash>.png`).
    pub has_picture: bool,
}

/// Restricts the leaks looked at to packages with these values.
#[derive(Debug, Clone, Default, serde::Deserialize)]
pub struct Filter {
    /// Only packages of this SDK version.
    pub sdk: Option<String>,
    /// Only packages from this manufacturer.
    pub manufacturer: Option<String>,
    /// Only packages of this app version.
    pub app_version: Option<String>,
}

impl Filter {
    /// Whether it restricts nothing.
    pub fn is_none(&self) -> bool {
        self.sdk.is_none() && self.manufacturer.is_none() && self.app_version.is_none()
    }

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

/// The `extra.info` keys an app version is read from, first found wins: a heap-graph
/// trace's `versionCode` (its packages list's) last.
pub const APP_VERSION_KEYS: &[&str] = &["appVersion", "versionName", "app_version", "versionCode"];

/// One filter menu: the values seen on the most packages
/// ([`limits::MENU`](crate::limits::MENU)), in order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Menu {
    /// The values listed, most packages first.
    pub values: Vec<String>,
    /// Distinct values not listed.
    pub left_out: u64,
}

/// The filter menus of the groups page, one per column a filter restricts.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Menus {
    /// The SDK versions.
    pub sdk: Menu,
    /// The device manufacturers.
    pub manufacturer: Menu,
    /// The app versions.
    pub app_version: Menu,
}
