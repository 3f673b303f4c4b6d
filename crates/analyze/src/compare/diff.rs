//! `diff BASE NEW`: what changed between two dumps. Each is analyzed in turn and only its
//! census (see [`crate::report::census`]), its leaks and its summary are kept, so the two graphs
//! are never in memory together. The comparison is by name: classes by class name, leaks
//! by signature, retainers by their path from a GC root.

use std::path::Path;

use hprof_shrink_core::Control;
use serde::Serialize;

use crate::base::error::AnalyzeError;
use crate::heap::mapping::Mapping;
use crate::report::census::{Census, RetainerCensus};
use crate::run::{analyze_path_census, Options, Timings};

/// Classes a diff lists by default (largest retained change first); the rest are counted.
pub const DEFAULT_MAX_CLASSES: usize = 50;

/// Leak groups a diff lists on each side (new, gone); the rest are counted.
pub const MAX_LEAK_GROUPS: usize = 50;

/// Retainers a diff lists; the rest are counted.
pub const MAX_RETAINERS: usize = 20;

/// A retainer is listed when its retained bytes grew by at least this share of the base
/// dump's reachable bytes (Eclipse MAT's threshold for a suspect in its comparison
/// report), and by at least one byte.
pub const RETAINER_GROWTH_PERCENT: f64 = 2.0;

/// The version of the JSON below.
pub const DIFF_SCHEMA: u32 = 1;

/// What `diff` compares and how much it lists.
#[derive(Debug, Clone)]
pub struct DiffOptions {
    /// R8/ProGuard names applied to both dumps before they are compared by name.
    pub mapping: Option<Mapping>,
    /// Classes listed.
    pub max_classes: usize,
    /// The process whose heap graph is read in each trace (`None`: each trace's only
    /// one); an error for an HPROF input.
    pub pid: Option<i32>,
}

impl Default for DiffOptions {
    fn default() -> Self {
        DiffOptions {
            mapping: None,
            max_classes: DEFAULT_MAX_CLASSES,
            pid: None,
        }
    }
}

/// Which dump.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// The first dump given (`BASE`).
    Base,
    /// The second dump given (`NEW`).
    New,
}

/// What `diff` found (the JSON of docs/diff.md, schema [`DIFF_SCHEMA`]).
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DiffReport {
    /// [`DIFF_SCHEMA`] when written.
    pub schema: u32,
    /// `hprof-shrink VERSION`.
    pub tool: String,
    /// The first dump.
    pub base: DumpSide,
    /// The second dump.
    pub new: DumpSide,
    /// Classes whose reachable instances changed, largest change of retained bytes first.
    pub classes: Vec<ClassChange>,
    /// Changed classes beyond the `max_classes` listed.
    pub omitted_classes: u64,
    /// Leaks in the new dump whose signature the base has not.
    pub new_leaks: Vec<LeakGroup>,
    /// New signatures beyond the [`MAX_LEAK_GROUPS`] listed.
    pub omitted_new_leaks: u64,
    /// Leaks in the base whose signature the new dump has not.
    pub gone_leaks: Vec<LeakGroup>,
    /// Gone signatures beyond the [`MAX_LEAK_GROUPS`] listed.
    pub omitted_gone_leaks: u64,
    /// Signatures in both dumps.
    pub kept_leak_signatures: u64,
    /// Retainers under the GC roots that are new or grew by the threshold.
    pub retainers: Vec<RetainerChange>,
    /// Grown retainers beyond the [`MAX_RETAINERS`] listed.
    pub omitted_retainers: u64,
    /// The growth a retainer needed to be listed, in bytes.
    pub retainer_threshold_bytes: u64,
    /// Each analysis's notes, prefixed `base: ` or `new: `.
    pub notes: Vec<String>,
}

/// One of the two dumps: what it is and what its analysis counted.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DumpSide {
    /// The file as given.
    pub path: String,
    /// `package`, `hprof`, `hprof.gz` or `perfetto` (a trace's heap graph).
    pub kind: String,
    /// The dump's header timestamp: milliseconds since the Unix epoch.
    pub timestamp_ms: u64,
    /// Bytes of the HPROF data read ([`crate::DumpSummary::bytes`]).
    pub bytes: u64,
    /// Objects strongly reachable from the GC roots.
    pub reachable_objects: u64,
    /// Their shallow bytes.
    pub reachable_bytes: u64,
    /// Leaks the analysis lists (one per signature, at most [`MAX_LEAKS`](crate::base::limits::MAX_LEAKS)).
    pub leaks: u64,
    /// Wall-clock seconds its analysis took, census included.
    pub seconds: f64,
}

/// A class's reachable instances and their bytes in one dump.
#[derive(Debug, Clone, Copy, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ClassCounts {
    /// Reachable instances of the class (arrays for an array class).
    pub instances: u64,
    /// Their shallow bytes.
    pub shallow_bytes: u64,
    /// Their retained bytes, counted as [`crate::census`] says.
    pub retained_bytes: u64,
}

/// A class in both dumps (by name) and the change, new less base.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ClassChange {
    /// The class name (classes of one name from several loaders count as one).
    pub class_name: String,
    /// Its counts in the base dump (0s when absent there).
    pub base: ClassCounts,
    /// Its counts in the new dump (0s when absent there).
    pub new: ClassCounts,
    /// Instances, new less base.
    pub instances: i64,
    /// Shallow bytes, new less base.
    pub shallow_bytes: i64,
    /// Retained bytes, new less base.
    pub retained_bytes: i64,
}

/// The leaks of one signature in one dump.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LeakGroup {
    /// The leak's signature ([`crate::Leak::signature`]).
    pub signature: String,
    /// The leaking object's class.
    pub class_name: String,
    /// The leaking objects with this signature (the leak's `traceCount`).
    pub count: u64,
    /// What they retain together (the leak's `totalRetainedBytes`: objects several of
    /// them retain counted for each, as LeakCanary sums them).
    pub retained_bytes: u64,
    /// Why the first of them is a leak.
    pub reason: String,
    /// The leak goes through a known framework leak.
    pub library_leak: bool,
}

/// A path of NEW's largest retainers that is new or grew.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RetainerChange {
    /// Its path in [`RetainerCensus::path`]'s form.
    pub path: Vec<String>,
    /// The retainers' class.
    pub class_name: String,
    /// Top-level objects of the new dump with this path.
    pub objects: u64,
    /// Bytes they retain in the new dump.
    pub retained_bytes: u64,
    /// Its retained bytes in the base; `null` when the base's largest retainers do not
    /// include its path (it was smaller than all of them, or absent).
    pub base_retained_bytes: Option<u64>,
    /// `retained_bytes` less `base_retained_bytes` (0 when null), in bytes.
    pub change: i64,
}

/// What is kept of one analysis.
struct Kept {
    side: DumpSide,
    census: Census,
    leaks: Vec<LeakGroup>,
    notes: Vec<String>,
}

/// Compares the dumps or packages at `base` and `new`. `on_side` hears when each
/// analysis is done, with its timings.
pub fn diff_paths(
    base: &Path,
    new: &Path,
    options: &DiffOptions,
    control: &Control<'_>,
    on_side: &mut dyn FnMut(Side, &DumpSide, &Timings),
) -> Result<DiffReport, AnalyzeError> {
    // Both of one kind, before either is analyzed.
    crate::heap::input::one_kind("diff", &[base.to_path_buf(), new.to_path_buf()])?;
    let b = keep(base, options, control)?;
    on_side(Side::Base, &b.0.side, &b.1);
    let n = keep(new, options, control)?;
    on_side(Side::New, &n.0.side, &n.1);
    Ok(compare(b.0, n.0, options))
}

fn keep(
    path: &Path,
    options: &DiffOptions,
    control: &Control<'_>,
) -> Result<(Kept, Timings), AnalyzeError> {
    let started = std::time::Instant::now();
    let (outcome, census) = analyze_path_census(
        path,
        &Options {
            mapping: options.mapping.clone(),
            pictures: false,
            // Duplicate bitmaps are not compared: none is looked for (their buffers are
            // not hashed).
            min_bitmap_bytes: u64::MAX,
            pid: options.pid,
            ..Options::default()
        },
        control,
    )
    .map_err(|e| e.in_file(path))?;
    let a = outcome.analysis;
    let mut leaks: Vec<LeakGroup> = Vec::new();
    for leak in &a.leaks {
        // One leak a signature since schema 2: its trace count and total are the group's
        // (an older analysis's leak, without a total, counts its own trace).
        let (count, bytes) = (
            leak.trace_count.max(1),
            leak.total_retained_bytes.max(leak.retained_bytes),
        );
        match leaks.iter_mut().find(|g| g.signature == leak.signature) {
            Some(g) => {
                g.count += count;
                g.retained_bytes += bytes;
            }
            None => leaks.push(LeakGroup {
                signature: leak.signature.clone(),
                class_name: leak.class_name.clone(),
                count,
                retained_bytes: bytes,
                reason: leak.reason.clone(),
                library_leak: leak.library_leak.is_some(),
            }),
        }
    }
    let side = DumpSide {
        path: a.input.path.clone(),
        kind: a.input.kind.clone(),
        timestamp_ms: a.dump.timestamp_ms,
        bytes: a.dump.bytes,
        reachable_objects: a.dump.reachable_objects,
        reachable_bytes: a.dump.reachable_bytes,
        leaks: a.leaks.len() as u64,
        seconds: started.elapsed().as_secs_f64(),
    };
    let kept = Kept {
        side,
        census,
        leaks,
        // What could not run on a heap without values is said as a note of its side.
        notes: a
            .notes
            .into_iter()
            .chain(
                a.dump
                    .not_run
                    .iter()
                    .map(|n| format!("{} {} not run: needs {}", n.kind, n.rule, n.needs)),
            )
            .collect(),
    };
    Ok((kept, outcome.timings))
}

fn compare(base: Kept, new: Kept, options: &DiffOptions) -> DiffReport {
    let (classes, omitted_classes) = class_changes(&base, &new, options.max_classes);
    let LeakChanges {
        new_leaks,
        omitted_new_leaks,
        gone_leaks,
        omitted_gone_leaks,
        kept_leak_signatures,
    } = leak_changes(&base, &new);
    let (retainers, omitted_retainers, threshold) = retainer_changes(&base, &new);
    let mut notes = Vec::new();
    for (which, kept) in [("base", &base), ("new", &new)] {
        for n in &kept.notes {
            notes.push(format!("{which}: {n}"));
        }
    }
    DiffReport {
        schema: DIFF_SCHEMA,
        tool: format!("hprof-shrink {}", env!("CARGO_PKG_VERSION")),
        base: base.side,
        new: new.side,
        classes,
        omitted_classes,
        new_leaks,
        omitted_new_leaks,
        gone_leaks,
        omitted_gone_leaks,
        kept_leak_signatures,
        retainers,
        omitted_retainers,
        retainer_threshold_bytes: threshold,
        notes,
    }
}

/// The change of one number from base to new.
fn delta(a: u64, b: u64) -> i64 {
    b as i64 - a as i64
}

/// The classes that changed, by name, largest change of retained bytes first: the first
/// `max`, and how many were left out.
fn class_changes(base: &Kept, new: &Kept, max: usize) -> (Vec<ClassChange>, u64) {
    // Classes by name (two loaders' classes of one name count as one).
    let mut by_name: std::collections::BTreeMap<String, (ClassCounts, ClassCounts)> =
        Default::default();
    for (census, is_new) in [(&base.census, false), (&new.census, true)] {
        for c in &census.classes {
            let e = by_name.entry(c.class_name.clone()).or_default();
            let counts = if is_new { &mut e.1 } else { &mut e.0 };
            counts.instances += c.instances;
            counts.shallow_bytes += c.shallow_bytes;
            counts.retained_bytes += c.retained_bytes;
        }
    }
    let mut classes: Vec<ClassChange> = by_name
        .into_iter()
        .map(|(class_name, (b, n))| ClassChange {
            class_name,
            instances: delta(b.instances, n.instances),
            shallow_bytes: delta(b.shallow_bytes, n.shallow_bytes),
            retained_bytes: delta(b.retained_bytes, n.retained_bytes),
            base: b,
            new: n,
        })
        .filter(|c| c.instances != 0 || c.shallow_bytes != 0 || c.retained_bytes != 0)
        .collect();
    classes.sort_by(|a, b| {
        b.retained_bytes
            .unsigned_abs()
            .cmp(&a.retained_bytes.unsigned_abs())
            .then(
                b.shallow_bytes
                    .unsigned_abs()
                    .cmp(&a.shallow_bytes.unsigned_abs()),
            )
            .then(b.instances.unsigned_abs().cmp(&a.instances.unsigned_abs()))
            .then_with(|| a.class_name.cmp(&b.class_name))
    });
    let omitted_classes = classes.len().saturating_sub(max) as u64;
    classes.truncate(max);

    (classes, omitted_classes)
}

/// The leak signatures of one dump and not the other.
struct LeakChanges {
    new_leaks: Vec<LeakGroup>,
    omitted_new_leaks: u64,
    gone_leaks: Vec<LeakGroup>,
    omitted_gone_leaks: u64,
    kept_leak_signatures: u64,
}

/// The new and the gone leak signatures, largest retained first, each list cut to
/// [`MAX_LEAK_GROUPS`].
fn leak_changes(base: &Kept, new: &Kept) -> LeakChanges {
    let has = |list: &[LeakGroup], sig: &str| list.iter().any(|g| g.signature == sig);
    let mut new_leaks: Vec<LeakGroup> = new
        .leaks
        .iter()
        .filter(|g| !has(&base.leaks, &g.signature))
        .cloned()
        .collect();
    let mut gone_leaks: Vec<LeakGroup> = base
        .leaks
        .iter()
        .filter(|g| !has(&new.leaks, &g.signature))
        .cloned()
        .collect();
    let kept_leak_signatures = (new.leaks.len() - new_leaks.len()) as u64;
    for list in [&mut new_leaks, &mut gone_leaks] {
        list.sort_by(|a, b| {
            b.retained_bytes
                .cmp(&a.retained_bytes)
                .then_with(|| a.signature.cmp(&b.signature))
        });
    }
    let omitted_new_leaks = new_leaks.len().saturating_sub(MAX_LEAK_GROUPS) as u64;
    new_leaks.truncate(MAX_LEAK_GROUPS);
    let omitted_gone_leaks = gone_leaks.len().saturating_sub(MAX_LEAK_GROUPS) as u64;
    gone_leaks.truncate(MAX_LEAK_GROUPS);

    LeakChanges {
        new_leaks,
        omitted_new_leaks,
        gone_leaks,
        omitted_gone_leaks,
        kept_leak_signatures,
    }
}

/// The retainers (by path) that grew by [`RETAINER_GROWTH_PERCENT`] of the base's
/// reachable bytes or more, largest growth first, cut to [`MAX_RETAINERS`]: with how many
/// were left out and the threshold in bytes.
fn retainer_changes(base: &Kept, new: &Kept) -> (Vec<RetainerChange>, u64, u64) {
    let threshold =
        ((base.side.reachable_bytes as f64 * RETAINER_GROWTH_PERCENT / 100.0) as u64).max(1);
    let before: std::collections::HashMap<&[String], &RetainerCensus> = base
        .census
        .retainers
        .iter()
        .map(|r| (r.path.as_slice(), r))
        .collect();
    let mut retainers: Vec<RetainerChange> = new
        .census
        .retainers
        .iter()
        .filter_map(|r| {
            let was = before.get(r.path.as_slice()).map(|b| b.retained_bytes);
            let change = delta(was.unwrap_or(0), r.retained_bytes);
            (change >= threshold as i64).then(|| RetainerChange {
                path: r.path.clone(),
                class_name: r.class_name.clone(),
                objects: r.objects,
                retained_bytes: r.retained_bytes,
                base_retained_bytes: was,
                change,
            })
        })
        .collect();
    retainers.sort_by(|a, b| b.change.cmp(&a.change).then_with(|| a.path.cmp(&b.path)));
    let omitted_retainers = retainers.len().saturating_sub(MAX_RETAINERS) as u64;
    retainers.truncate(MAX_RETAINERS);

    (retainers, omitted_retainers, threshold)
}
