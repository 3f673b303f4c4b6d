//! `analyze`: why is this Activity still alive, and which bitmaps are duplicated? The
//! server half of the pipeline, on the core's format layer:
//!
//! 1. `index`: one walk over the mapped dump: every object's id and offset, classes,
//!    GC roots;
//! 2. `reach`: breadth-first search from the roots over strong references (shortest
//!    paths, known framework leaks last);
//! 3. `dominators`: immediate dominators from that search, retained sizes from them;
//! 4. `leaks` finds the leaking objects, `trace` explains each one (statuses from
//!    `status`, known leaks from [`library`]), [`bitmaps`] groups duplicate buffers;
//! 5. `native_size` credits each object the native bytes registered for it
//!    (NativeAllocationRegistry), counted in every retained size apart from the Java
//!    bytes, and [`triage`] says what the dump holds for a reader without a leak (top
//!    retainers, accumulation points, the largest arrays, counts, Bitmaps, duplicate
//!    Strings), from the dominator tree and passes that run anyway;
//! 6. [`render`] writes text, JSON, Matrix's `result.json` or one HTML page.
//!
//! What an analysis keeps is bounded whatever the dump ([`limits`]), and every name it
//! takes from the dump is escaped and cut ([`shown`]).

pub mod bitmaps;
pub mod census;
mod counts;
mod device;
pub mod diff;
mod dominators;
mod edges;
pub mod error;
mod finders;
mod found;
pub mod gate;
mod graph;
pub mod growth;
mod index;
pub mod input;
mod inspect;
pub mod leakcanary_text;
mod leaks;
pub mod library;
pub mod limits;
mod map;
pub mod mapping;
mod metadata;
pub mod model;
mod native_size;
mod offsets;
mod parked;
mod private;
mod reach;
#[cfg(test)]
mod reach_tests;
mod references;
mod refs;
pub mod render;
pub mod shown;
mod spare;
mod strings;
mod subtrees;
mod summary;
mod trace;
pub mod triage;

use std::path::Path;
use std::time::{Duration, Instant};

use hprof_shrink_core::hprof::{Hprof, Tick};
use hprof_shrink_core::space::Unpack;
use hprof_shrink_core::{Control, Stage};

pub use error::AnalyzeError;
pub use graph::java_name;
pub use library::LibraryTable;
pub use mapping::Mapping;
pub use model::*;

use graph::{Graph, Instances};
use index::Index;
use map::Map;
use reach::Reach;
use references::{Histogram, Sizer, Unread};

/// Buffers smaller than this are not reported as duplicates (Matrix's default).
pub const DEFAULT_MIN_BITMAP_BYTES: u64 = 5000;

/// What to look for.
#[derive(Debug, Clone)]
pub struct Options {
    /// The key of the leaked Activity (Matrix's `leakedActivityKey`); `None` takes the
    /// package's, and without one leaks are found LeakCanary's way: the objects it watched
    /// and found retained, or, when none is, what its inspectors' rules flag.
    pub key: Option<String>,
    pub min_bitmap_bytes: u64,
    pub mapping: Option<Mapping>,
    /// `--all-leaks`: the package's key ignored, every leaking object is found: the
    /// retained watched objects and what the inspectors' rules flag, both.
    pub all_leaks: bool,
    /// Make pictures of the duplicated bitmaps (for the HTML and Matrix outputs).
    pub pictures: bool,
    /// Which heap dump of a file holding several to analyze, from 1; `None`: the last.
    pub dump: Option<usize>,
    /// The screen (width, height in pixels) large Bitmaps are measured against when the
    /// heap holds no DisplayMetrics.
    pub screen: Option<(u64, u64)>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            key: None,
            min_bitmap_bytes: DEFAULT_MIN_BITMAP_BYTES,
            mapping: None,
            all_leaks: false,
            pictures: true,
            dump: None,
            screen: None,
        }
    }
}

/// An analysis and what goes with it.
pub struct Outcome {
    pub analysis: Analysis,
    /// Pictures of the duplicated bitmaps: (file name, bytes), the names the groups give.
    pub pictures: Vec<(String, Vec<u8>)>,
    pub timings: Timings,
}

/// Where the time and memory went, for `--verbose` and the benchmark.
#[derive(Debug, Clone, Default)]
pub struct Timings {
    /// Every step of the analysis, in order: what it is, how long it took, and the
    /// process's anonymous memory after it (Linux; `None` elsewhere).
    pub steps: Vec<StepTime>,
    /// Bytes of the id index.
    pub index_bytes: u64,
    /// Bytes of the reference arrays.
    pub edge_bytes: u64,
    /// Bytes the dominator computation held.
    pub dominator_bytes: u64,
    /// Steps it walked up its trees beyond one pass over the graph (see
    /// `docs/analyze.md`): a measure of its work, O((n + m) log n) at most.
    pub dominator_steps: u64,
    /// The most entries the dominators' depth-first search held on its stack at once
    /// (8 bytes each): references waiting to be followed.
    pub dominator_depth: u64,
    /// References read to name the steps of the traces and paths (each collection a list
    /// of paths passes walked once): a measure of their work, linear in the dump.
    pub step_reads: u64,
}

/// One step of an analysis and what it took.
#[derive(Debug, Clone)]
pub struct StepTime {
    pub name: &'static str,
    pub took: Duration,
    pub memory: Option<u64>,
}

impl Timings {
    /// How long the step `name` took (zero if there was none).
    pub fn of(&self, name: &str) -> Duration {
        self.steps
            .iter()
            .filter(|s| s.name == name)
            .map(|s| s.took)
            .sum()
    }

    /// Records a step that began at `since` and ends now.
    fn step(&mut self, name: &'static str, since: Instant) -> Instant {
        self.steps.push(StepTime {
            name,
            took: since.elapsed(),
            memory: anonymous_memory(),
        });
        Instant::now()
    }
}

/// Analyzes the dump or package at `path`. `control` may cancel it; its progress
/// callback sees the walk over the dump (stage `read`).
pub fn analyze_path(
    path: &Path,
    options: &Options,
    control: &Control<'_>,
) -> Result<Outcome, AnalyzeError> {
    analyze_path_within(path, options, &Unpack::default(), control)
}

/// [`analyze_path`], inflating the dump within `unpack`'s bounds (see [`input::open_within`]):
/// what `serve` runs, so that a package cannot fill its disk.
pub fn analyze_path_within(
    path: &Path,
    options: &Options,
    unpack: &Unpack,
    control: &Control<'_>,
) -> Result<Outcome, AnalyzeError> {
    let mut timings = Timings::default();
    let t = Instant::now();
    let input = input::open_within(path, unpack)?;
    timings.step("open", t);
    analyze_input(&input, path, options, unpack, control, timings, false).map(|(o, _)| o)
}

/// [`analyze_path`], with the census `diff` compares (see [`census`]): it keeps every
/// object's retained size past the triage (8 bytes a number) for the census's pass.
pub fn analyze_path_census(
    path: &Path,
    options: &Options,
    control: &Control<'_>,
) -> Result<(Outcome, census::Census), AnalyzeError> {
    let mut timings = Timings::default();
    let t = Instant::now();
    let input = input::open(path)?;
    timings.step("open", t);
    let (outcome, census) = analyze_input(
        &input,
        path,
        options,
        &Unpack::default(),
        control,
        timings,
        true,
    )?;
    Ok((outcome, census.unwrap_or_default()))
}

/// The process's anonymous resident memory now (RssAnon), where /proc tells it: the
/// analysis's own memory, without the mapped dump's pages.
fn anonymous_memory() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("RssAnon:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

struct Ticks<'c>(hprof_shrink_core::control::Ticker<'c>);

impl Tick for Ticks<'_> {
    type Error = AnalyzeError;
    #[inline]
    fn tick(&mut self, offset: u64) -> Result<(), AnalyzeError> {
        Ok(self.0.tick(offset)?)
    }
    fn finish_at(&mut self, end: u64) -> Result<(), AnalyzeError> {
        Ok(self.0.finish_at(end)?)
    }
}

/// The index of `hprof`'s heap dump at `dump` (`None`: of the whole file), built on every
/// thread, its progress told to `control` as the reading of `total` bytes.
fn build_index<'a>(
    hprof: &Hprof<'a>,
    total: u64,
    dump: Option<std::ops::Range<u64>>,
    control: &Control<'_>,
) -> Result<Index<'a>, AnalyzeError> {
    let done = std::sync::atomic::AtomicU64::new(0);
    Index::build(hprof, rayon::current_num_threads(), dump, |start| {
        Ticks(control.shared_ticker(Stage::Read, total, &done, start))
    })
}

/// At most this many classes are named in the note on unreadable references.
const UNREAD_NAMED: usize = 10;

/// Steps' timings, each from the end of the one before.
struct Clock {
    timings: Timings,
    since: Instant,
}

impl Clock {
    /// Records the step `name`, ending now.
    fn step(&mut self, name: &'static str) {
        self.since = self.timings.step(name, self.since);
    }
}

/// What one analysis is asked, for its steps.
struct Run<'r> {
    input: &'r input::Input,
    options: &'r Options,
    unpack: &'r Unpack,
    control: &'r Control<'r>,
    /// Keep the path search through the dominators for a census (see [`census`]).
    take_census: bool,
}

fn analyze_input(
    input: &input::Input,
    path: &Path,
    options: &Options,
    unpack: &Unpack,
    control: &Control<'_>,
    timings: Timings,
    take_census: bool,
) -> Result<(Outcome, Option<census::Census>), AnalyzeError> {
    let data = input.bytes.bytes();
    let hprof = Hprof::new(data)?;
    let mut notes = Vec::new();
    let mut clock = Clock {
        timings,
        since: Instant::now(),
    };
    let run = Run {
        input,
        options,
        unpack,
        control,
        take_census,
    };
    // A file can hold several heap dumps one after another; one is analyzed, the last
    // unless asked, as Eclipse MAT asks which to open.
    let dumps = hprof.heap_dumps()?;
    let chosen = choose_dump(dumps.len(), options.dump, &mut notes)?;
    clock.step("heap dumps");
    let mut ix = build_index(
        &hprof,
        data.len() as u64,
        dumps.get(chosen - 1).cloned(),
        control,
    )?;
    clock.timings.index_bytes = ix.memory();
    clock.step("index");

    let metadata = metadata::read(&ix);
    let (listed, traced) = find_leaks(&ix, &metadata, &run, &mut clock, &mut notes)?;
    // The id lookup goes too (2 bytes an object), and the graph and the inspectors are
    // made again on what remains, with the same per-class tables: the triage's and the
    // census's paths look their few ids up without it (the paths of one list walk each
    // collection they pass once, see [`reach::StepNames`]).
    ix.release_lookup();
    let weighed = weigh(&ix, traced, &run, &mut clock)?;
    let chosen = summary::Chosen {
        bytes: data.len() as u64,
        dumps: dumps.len(),
        chosen,
    };
    let dump = summary::dump(&ix, &chosen, weighed.totals);
    let omitted_notes = limits::keep_first(&mut notes, limits::MAX_NOTES);
    let bitmaps::Duplicates {
        groups: duplicate_bitmaps,
        omitted: omitted_duplicate_bitmaps,
        pictures,
    } = listed.duplicates;
    let analysis = Analysis {
        schema: SCHEMA_VERSION,
        signature_version: SIGNATURE_VERSION,
        tool: format!("hprof-shrink {}", env!("CARGO_PKG_VERSION")),
        input: input_summary(input, path),
        dump,
        metadata,
        finder: listed.mode.name().into(),
        key: listed
            .key
            .map(|k| shown::clipped(&k, limits::MAX_NAME_BYTES)),
        keys_found: listed.keys_found,
        omitted_keys_found: listed.more_keys,
        leaks: weighed.leaks,
        omitted_leaks: listed.more_leaks,
        unreachable: listed.unreachable,
        omitted_unreachable: listed.more_unreachable,
        duplicate_bitmaps,
        omitted_duplicate_bitmaps,
        triage: Some(weighed.triage),
        notes,
        omitted_notes,
    };
    // A private package's replaced Strings show as garbage: they read as redacted.
    let analysis = if input.private {
        private::redact(analysis)
    } else {
        analysis
    };
    clock.step("summary");
    if let input::Bytes::File(m) = &input.bytes {
        m.check_intact()?;
    }
    clock.step("check");
    let outcome = Outcome {
        analysis,
        pictures,
        timings: clock.timings,
    };
    Ok((outcome, weighed.census))
}

/// What the analysis says of its input.
fn input_summary(input: &input::Input, path: &Path) -> InputSummary {
    InputSummary {
        path: path.display().to_string(),
        kind: input.kind.into(),
        manifest: input.manifest.clone(),
        extra: input.extra.clone(),
        shrunk: input.shrunk,
        private: input.private,
    }
}

/// Which of the file's `found` heap dumps to analyze, from 1: the one `asked`, else the
/// last; a note says so when there are several.
fn choose_dump(
    found: usize,
    asked: Option<usize>,
    notes: &mut Vec<String>,
) -> Result<usize, AnalyzeError> {
    let chosen = match asked {
        Some(k) if k == 0 || k > found.max(1) => {
            return Err(AnalyzeError::NoSuchDump { asked: k, found })
        }
        Some(k) => k,
        None => found.max(1),
    };
    if found > 1 {
        notes.push(format!(
            "the file holds {} heap dumps, one after another; this is dump {chosen}{}",
            found,
            if asked.is_none() { ", the last" } else { "" }
        ));
    }
    Ok(chosen)
}

/// What the analysis lists as the steps up to the dominators found it.
struct Listed {
    /// The key looked for, if any (see [`leak_key`]).
    key: Option<String>,
    /// Which finders ran.
    mode: finders::Mode,
    keys_found: Vec<String>,
    more_keys: u64,
    more_leaks: u64,
    unreachable: Vec<UnreachableObject>,
    more_unreachable: u64,
    duplicates: bitmaps::Duplicates,
}

/// What the steps up to the dominators hand to those after: the graph's edges and roots,
/// the path search (unless spilled), and what the retained sizes and the triage need.
struct Traced {
    edges: edges::Edges,
    roots: Vec<index::Node>,
    spare: spare::Spare,
    reach: Option<Reach>,
    classes: graph::Classes,
    /// The leaks traced, their retained sizes still zero, and their nodes in that order.
    leaks: Vec<Leak>,
    leak_nodes: Vec<index::Node>,
    all_objects: Histogram,
    for_triage: ForTriage,
}

/// What the triage takes after the dominators.
struct ForTriage {
    sizes: parked::Parked<u8>,
    /// The String instances and where their values are, when duplicate Strings are
    /// looked for (not by a census, and only in a heap whose Strings have a `value`).
    strings: Option<(strings::StringValues, strings::Strings)>,
    native: Map<index::Node, u64>,
    counted: triage::Counted,
    kinds: inspect::kinds::Kinds,
    watched: inspect::watch::Watched,
}

/// The steps on the whole graph, up to the dominators: classes and known leaks, the
/// references' pass, the finders, the path search, the leaks' traces, the duplicate
/// bitmaps and the triage's counts. The graph made on `ix` goes at the end, before its id
/// lookup does.
fn find_leaks(
    ix: &Index<'_>,
    metadata: &HeapMetadata,
    run: &Run<'_>,
    clock: &mut Clock,
    notes: &mut Vec<String>,
) -> Result<(Listed, Traced), AnalyzeError> {
    // The device, from the heap and the package; the known leaks depend on it.
    let (sdk, manufacturer, device_notes) = metadata::device(
        run.input.manifest_value("sdkVersion"),
        run.input.manifest_value("manufacturer"),
        metadata,
    );
    let manufacturer = manufacturer.as_deref();
    let library = LibraryTable::builtin();
    let g = Graph::new(ix, run.options.mapping.as_ref());
    clock.step("classes");
    run.control.check()?;
    // The known-leak rows that hold for this device, as the path search applies them.
    let device = device::device(&g, sdk, manufacturer);
    let path_refs = refs::PathRefs::new(&g, library, &device);
    clock.step("known leaks");
    // The instances every finder looks at, the instances the path search reads from the
    // dump, and the shallow sizes of all objects by class, are taken in the pass that
    // reads every object for its references.
    let heap = inspect::heap::Heap::new(g.ix, &g);
    let kinds = inspect::kinds::Kinds::new(&heap);
    let triaged = TriageClasses::new(&g, &kinds, !run.take_census);
    let wanted = references::wanted(&g, &heap, &kinds, &triaged.all(), &path_refs);
    clock.step("finder classes");
    let references::Passed {
        edges,
        special,
        sizes,
        strings,
        all_objects,
        instances,
        unread,
    } = references::pass(&g, wanted, &triaged.strings, run.unpack);
    clock.timings.edge_bytes = edges.memory();
    clock.step("references");
    run.control.check()?;
    let sought = seek(&g, heap, kinds, &instances, run, notes, device_notes);
    clock.step("finders");
    let (leaves, max) = (sought.leaves, limits::MAX_LEAKS);
    let reach = Reach::compute(&g, &edges, path_refs, &special, &leaves, max, run.control)?;
    drop((special, leaves));
    clock.step("paths");
    let key = sought.key.as_deref();
    let found = found::found(&g, &reach, &instances, key, sought.candidates, notes);
    clock.step("leaks");
    let ins = sought.ins;
    let (leaks, leak_nodes) = found::traces(&g, &reach, &ins, library, found.to_trace);
    clock.step("traces");
    let unreachable = found::unreachable(&g, &ins, found.unreachable_nodes);
    clock.step("unreachable");
    // A private package's pixels are a pattern: there is no picture to draw.
    let pictures = run.options.pictures && !run.input.private;
    let min_bytes = run.options.min_bitmap_bytes;
    let duplicates = bitmaps::duplicates(&g, &reach, &ins, &instances, min_bytes, pictures);
    clock.step("bitmaps");
    let (native, counted) = count(&g, &reach, &ins, instances, &triaged, run, notes);
    if let Some(note) = unread_note(&g, &unread, leaks.is_empty()) {
        notes.push(note);
    }
    clock.step("counts");
    clock.timings.step_reads = reach.step_reads();
    let (roots, spare, reach) = spill_paths(reach, ix, run, notes);
    let (kinds, watched) = ins.into_parts();
    let listed = Listed {
        key: sought.key,
        mode: sought.mode,
        keys_found: found.keys_found,
        more_keys: found.more_keys,
        more_leaks: found.more_leaks,
        unreachable,
        more_unreachable: found.more_unreachable,
        duplicates,
    };
    let for_triage = ForTriage {
        sizes,
        strings: triaged.strings.map(|values| (values, strings)),
        native,
        counted,
        kinds,
        watched,
    };
    let traced = Traced {
        edges,
        roots,
        spare,
        reach,
        classes: g.classes(),
        leaks,
        leak_nodes,
        all_objects,
        for_triage,
    };
    Ok((listed, traced))
}

/// The classes whose instances the triage reads: Cleaners (native sizes), the classes it
/// counts, Strings.
struct TriageClasses {
    cleaners: Vec<u64>,
    counted: counts::Classes,
    strings: Option<strings::StringValues>,
}

impl TriageClasses {
    /// `strings`: whether duplicate Strings are looked for (not for `diff`, which does
    /// not compare them: their hashing is a tenth of the references' pass).
    fn new(g: &Graph<'_, '_>, kinds: &inspect::kinds::Kinds, strings: bool) -> TriageClasses {
        TriageClasses {
            cleaners: native_size::cleaner_classes(g),
            counted: counts::Classes::new(g, kinds),
            strings: strings.then(|| strings::StringValues::new(g)).flatten(),
        }
    }

    /// The classes whose instances the references' pass keeps for the triage.
    fn all(&self) -> Vec<u64> {
        self.cleaners
            .iter()
            .copied()
            .chain(self.counted.all())
            .collect()
    }
}

/// The key, the inspectors, and the leaking objects found before the path search.
struct Sought<'h> {
    key: Option<String>,
    mode: finders::Mode,
    ins: inspect::Inspectors<'h>,
    /// The finders' candidates (none with a key).
    candidates: Vec<finders::Candidate>,
    /// Every leaking object: the path search's leaves.
    leaves: Vec<index::Node>,
}

/// The key to look for, the inspectors on `heap`, and the leaking objects, with the
/// notes of the key, the device and the watchers.
fn seek<'h>(
    g: &Graph<'_, '_>,
    heap: inspect::heap::Heap<'h>,
    kinds: inspect::kinds::Kinds,
    instances: &Instances,
    run: &Run<'_>,
    notes: &mut Vec<String>,
    device_notes: Vec<String>,
) -> Sought<'h> {
    let asked = leak_key(run.options, run.input);
    let watched = inspect::watch::Watched::read(&heap, instances);
    notes.extend(asked.note);
    notes.extend(device_notes);
    notes.extend(watched.notes.iter().cloned());
    let mode = match &asked.key {
        Some(_) => finders::Mode::MatrixKey,
        None => finders::Mode::without_key(asked.all_leaks, &watched),
    };
    let ins = inspect::Inspectors::new(heap, kinds, watched);
    // Every leaking object, before the search: a path never goes through one (LeakCanary
    // HEAD's leaves). Without a key the finders of the mode find them.
    let candidates = finders::candidates(mode, &ins, instances);
    let leaves: Vec<index::Node> = match &asked.key {
        Some(k) => leaks::by_key(g, &|_| true, instances, k).all,
        None => candidates.iter().map(|c| c.node).collect(),
    };
    Sought {
        key: asked.key,
        mode,
        ins,
        candidates,
        leaves,
    }
}

/// The native bytes registered for each object and the triage's counts, from the pass's
/// `instances`, which go here; with the inspectors' notes and the shrunk dump's.
fn count(
    g: &Graph<'_, '_>,
    reach: &Reach,
    ins: &inspect::Inspectors<'_>,
    instances: Instances,
    triaged: &TriageClasses,
    run: &Run<'_>,
    notes: &mut Vec<String>,
) -> (Map<index::Node, u64>, triage::Counted) {
    let registered = native_size::registered(g, &instances, &triaged.cleaners);
    notes.extend(registered.note());
    let native = registered.bytes;
    let mut counted = counts::take(
        g,
        reach,
        ins,
        &instances,
        &triaged.counted,
        &native,
        run.options.screen,
    );
    drop(instances);
    notes.append(&mut counted.notes);
    notes.extend(ins.take_notes());
    if run.input.private {
        notes.push(
            "the package is private: String values the analysis does not read, and pixels, were replaced on the phone (same lengths, equal values alike); a map key or a duplicate String reads as redacted, a bitmap's digest is the pattern's"
                .into(),
        );
    }
    if run.input.shrunk {
        notes.push(
            "the dump was shrunk: references to dropped primitive arrays read as null, and retained sizes leave out their bytes"
                .into(),
        );
    }
    (native, counted)
}

/// The GC roots in the dump's order, and the path search's memory made spare for the
/// dominators: the search is spilled to a file (when that fails, a census keeps it in
/// memory, else it is `None` and the triage's objects are shown without paths).
fn spill_paths(
    reach: Reach,
    ix: &Index<'_>,
    run: &Run<'_>,
    notes: &mut Vec<String>,
) -> (Vec<index::Node>, spare::Spare, Option<Reach>) {
    // The paths are made; their memory goes before the dominators take theirs.
    let roots: Vec<index::Node> = {
        let mut r: Vec<index::Node> = reach.gc_roots().to_vec();
        r.sort_unstable_by_key(|&n| ix.offset(n));
        r
    };
    // Its arrays go to the next step rather than back to the system: the search is
    // written to an unnamed file (5 bytes an object) for the triage's and the census's
    // paths, read back a few entries a path once the dominators are known.
    let mut spare = spare::Spare::default();
    let unpack = run.unpack;
    let mut held = reach;
    let spilled = unpack.tempfile(None).and_then(|file| {
        unpack.admit("the path search", ix.len() as u64 * 5, &file)?;
        held.spill(file, &mut spare)
    });
    let reach = match spilled {
        Ok(()) => Some(held),
        // A census names its retainers by their paths: it keeps the search in memory.
        Err(e) if run.take_census => {
            notes.push(format!(
                "the path search stayed in memory through the dominators ({} MiB more at the peak): it could not be written to a temporary file ({e})",
                (ix.len() as u64 * 5).div_ceil(1 << 20)
            ));
            Some(held)
        }
        Err(e) => {
            notes.push(format!(
                "the triage's objects are shown without paths: the path search could not be written to a temporary file ({e})"
            ));
            held.into_spare(&mut spare);
            None
        }
    };
    (roots, spare, reach)
}

/// What the steps from the dominators on hand to the summary.
struct Weighed {
    /// Largest first, one per signature.
    leaks: Vec<Leak>,
    triage: triage::Triage,
    census: Option<census::Census>,
    totals: summary::Totals,
}

/// The dominators on the graph made again on `ix` (its lookup released), the duplicate
/// Strings, the retained sizes and the triage, the census if asked, and the reachable
/// objects by class.
fn weigh(
    ix: &Index<'_>,
    traced: Traced,
    run: &Run<'_>,
    clock: &mut Clock,
) -> Result<Weighed, AnalyzeError> {
    let Traced {
        edges,
        roots,
        spare,
        reach,
        classes,
        mut leaks,
        leak_nodes,
        all_objects,
        mut for_triage,
    } = traced;
    let g = Graph::with_classes(ix, classes, run.options.mapping.as_ref());
    let doms = dominators::Dominators::compute(edges, ix.len(), &roots, spare, run.control)?;
    clock.timings.dominator_bytes = doms.peak_bytes;
    clock.timings.dominator_steps = doms.steps;
    clock.timings.dominator_depth = doms.depth;
    clock.step("dominators");
    // Before the subtrees' arrays are made: its maps and tables go when it ends.
    if let Some((values, strings)) = for_triage.strings.take() {
        let counted = &mut for_triage.counted;
        (
            counted.duplicate_strings,
            counted.duplicate_strings_left_out,
        ) = strings::duplicates(&g, &values, &strings, |s| doms.place(s).is_some());
    }
    clock.step("strings");
    let triaged = subtrees_and_triage(&g, &doms, reach.as_ref(), &leak_nodes, for_triage, clock);
    // Only a census reads every retained size from here on.
    let trees = run.take_census.then_some(triaged.trees);
    let (reachable_objects, reachable_edges) = (doms.reachable, doms.edges);
    let heap_bytes: u64 = all_objects.values().map(|&(_, bytes)| bytes).sum();
    let by_class = summary::reachable_by_class(all_objects, triaged.gone);
    let census = match (trees, &reach) {
        (Some(trees), Some(reach)) => {
            let c = census::take(&doms, &g, reach, &trees, &by_class);
            clock.step("census");
            Some(c)
        }
        _ => None,
    };
    if let Some(r) = &reach {
        clock.timings.step_reads = r.step_reads();
    }
    drop((reach, doms));
    let retained = triaged.retained.into_iter().zip(triaged.leak_native);
    for (leak, (r, native)) in leaks.iter_mut().zip(retained) {
        (leak.retained_bytes, leak.retained_objects) = (r.bytes, r.objects);
        leak.retained_native_bytes = native;
    }
    clock.step("retained sizes");
    run.control.check()?;
    let leaks = found::largest_first(leaks);
    let (top_classes, omitted_top_classes) = summary::top_classes(&g, by_class);
    let totals = summary::Totals {
        heap_bytes,
        reachable_objects,
        reachable_bytes: triaged.reachable_bytes,
        reachable_native_bytes: triaged.triage.heap_native_bytes,
        reachable_edges,
        top_classes,
        omitted_top_classes,
    };
    Ok(Weighed {
        leaks,
        triage: triaged.triage,
        census,
        totals,
    })
}

/// What the subtrees and the triage measured.
struct Triaged {
    triage: triage::Triage,
    /// The reachable objects' Java bytes.
    reachable_bytes: u64,
    /// The leaks' retained sizes (Java, then native), in the order of their nodes.
    retained: Vec<dominators::Retained>,
    leak_native: Vec<u64>,
    /// The unreachable objects' shallow sizes by class.
    gone: Sizer,
    /// Every number's retained size (for a census).
    trees: subtrees::Subtrees,
}

/// Every object's retained size from the dominators (the leaks' among them), then the
/// triage on them and on what the earlier steps counted.
fn subtrees_and_triage(
    g: &Graph<'_, '_>,
    doms: &dominators::Dominators,
    reach: Option<&Reach>,
    leak_nodes: &[index::Node],
    parts: ForTriage,
    clock: &mut Clock,
) -> Triaged {
    let ForTriage {
        sizes,
        strings: _,
        native,
        counted,
        kinds,
        watched,
    } = parts;
    // Every number's retained size, the leaks' among them, and the shallow bytes of the
    // unreachable objects by class.
    // Unreadable, the sizes are read from the dump again.
    let sizes = sizes.take().unwrap_or_default();
    let (trees, retained, gone) = subtrees::Subtrees::compute(
        g,
        doms,
        &sizes,
        &native,
        triage::LIST_CAP,
        leak_nodes,
        Sizer::default,
        |sizer, key, size| sizer.add_sized(key, size),
        Sizer::merge,
    );
    drop(sizes);
    clock.step("subtrees");
    let ins = inspect::Inspectors::new(inspect::heap::Heap::new(g.ix, g), kinds, watched);
    let leak_native: Vec<u64> = leak_nodes
        .iter()
        .map(|&n| trees.of_node(g, doms, n, &native).1)
        .collect();
    let triage = triage::assemble(g, reach, &ins, doms, &trees, &native, counted);
    let reachable_bytes = trees.reachable_java();
    drop((native, ins));
    clock.step("triage");
    Triaged {
        triage,
        reachable_bytes,
        retained,
        leak_native,
        gone,
        trees,
    }
}

/// What the reader must know when some objects' references could not be read: which
/// classes (the first few by the objects they hold), how many objects, and that a path
/// through them is missing from the graph, so "no leak" may be wrong.
fn unread_note(g: &Graph<'_, '_>, unread: &Unread, no_leak: bool) -> Option<String> {
    if unread.is_empty() {
        return None;
    }
    let objects: u64 = unread.values().sum();
    let mut classes: Vec<(&(u64, graph::Broken), &u64)> = unread.iter().collect();
    classes.sort_by(|a, b| b.1.cmp(a.1).then(a.0 .0.cmp(&b.0 .0)));
    let named: Vec<String> = classes
        .iter()
        .take(UNREAD_NAMED)
        .map(|((class, why), n)| {
            format!(
                "{} ({}; {n} object{})",
                g.known_class_name(*class).map_or_else(
                    || format!("class {class:#x}"),
                    |name| shown::clipped(name, limits::MAX_NAME_BYTES)
                ),
                why.describe(),
                if **n == 1 { "" } else { "s" }
            )
        })
        .collect();
    let more = classes.len().saturating_sub(UNREAD_NAMED);
    Some(format!(
        "the references of {objects} object{} of {} class{} could not be read: {}{}. What only they hold counts as unreachable{}",
        if objects == 1 { "" } else { "s" },
        classes.len(),
        if classes.len() == 1 { "" } else { "es" },
        named.join(", "),
        match more {
            0 => String::new(),
            1 => ", and 1 more class".into(),
            n => format!(", and {n} more classes"),
        },
        if no_leak {
            ", so \"no leak\" may be wrong: a leak held through them is not seen"
        } else {
            ": a leak held only through them is not seen"
        },
    ))
}

/// What the options and the package ask to look for.
struct Asked {
    /// The key (see [`leak_key`]).
    key: Option<String>,
    /// Every leaking object, whatever LeakCanary watched (`--all-leaks`).
    all_leaks: bool,
    /// Said when the package's key is the placeholder.
    note: Option<String>,
}

/// The key to look for, and a note when the package's key is the placeholder its writer
/// puts when it knew none: `--key`; else, unless `--all-leaks`, the package's
/// `leakedActivityKey`. No key, or the placeholder, finds leaks LeakCanary's way;
/// `--all-leaks` every leaking object.
fn leak_key(options: &Options, input: &input::Input) -> Asked {
    let asked = |key: Option<String>, all_leaks, note| Asked {
        key,
        all_leaks,
        note,
    };
    if options.all_leaks {
        return asked(options.key.clone(), true, None);
    }
    if let Some(k) = &options.key {
        return asked(Some(k.clone()).filter(|k| !k.is_empty()), false, None);
    }
    match input.manifest_value("leakedActivityKey") {
        Some(k) if k == hprof_shrink_core::package::manifest::PLACEHOLDER_KEY => asked(
            None,
            false,
            Some(format!(
                "the package's leakedActivityKey is the placeholder {k:?} (no key was known when it was made): leaks are looked for as in a dump without a key (--all-leaks finds every leaking object)"
            )),
        ),
        Some(k) if !k.is_empty() => asked(Some(k.to_string()), false, None),
        _ => asked(None, false, None),
    }
}
