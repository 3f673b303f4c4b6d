//! `analyze`: why is this Activity still alive, and which bitmaps are duplicated? The
//! server half of the pipeline, on the core's format layer:
//!
//! 1. [`index`]: one walk over the mapped dump: every object's id and offset, classes,
//!    GC roots;
//! 2. [`reach`]: breadth-first search from the roots over strong references (shortest
//!    paths, known framework leaks last);
//! 3. [`dominators`]: immediate dominators from that search, retained sizes from them;
//! 4. [`leaks`] finds the leaking objects, [`trace`] explains each one (statuses from
//!    [`status`], known leaks from [`library`]), [`bitmaps`] groups duplicate buffers;
//! 5. [`render`] writes text, JSON, Matrix's `result.json` or one HTML page.

pub mod bitmaps;
pub mod census;
pub mod diff;
mod dominators;
mod edges;
pub mod error;
mod graph;
pub mod growth;
mod index;
pub mod input;
mod leaks;
pub mod library;
mod map;
pub mod mapping;
pub mod model;
mod offsets;
mod reach;
pub mod render;
mod spare;
mod status;
mod trace;

use std::path::Path;
use std::time::{Duration, Instant};

use hprof_shrink_core::hprof::{tags, Hprof, Tick};
use hprof_shrink_core::{Control, Stage};

pub use error::AnalyzeError;
pub use graph::java_name;
pub use library::LibraryTable;
pub use mapping::Mapping;
pub use model::*;

use graph::{Graph, Instances};
use index::Index;
use map::{Map, Set};
use reach::Reach;

/// Buffers smaller than this are not reported as duplicates (Matrix's default).
pub const DEFAULT_MIN_BITMAP_BYTES: u64 = 5000;

/// What to look for.
#[derive(Debug, Clone)]
pub struct Options {
    /// The key of the leaked Activity (Matrix's `leakedActivityKey`); `None` takes the
    /// package's, and without one every leaking object is found LeakCanary's way.
    pub key: Option<String>,
    pub min_bitmap_bytes: u64,
    pub mapping: Option<Mapping>,
    /// Find leaks the LeakCanary way even when the package names a key.
    pub ignore_package_key: bool,
    /// Make pictures of the duplicated bitmaps (for the HTML and Matrix outputs).
    pub pictures: bool,
    /// Which heap dump of a file holding several to analyze, from 1; `None`: the last.
    pub dump: Option<usize>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            key: None,
            min_bitmap_bytes: DEFAULT_MIN_BITMAP_BYTES,
            mapping: None,
            ignore_package_key: false,
            pictures: true,
            dump: None,
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
    let mut timings = Timings::default();
    let t = Instant::now();
    let input = input::open(path)?;
    timings.step("open", t);
    analyze_input(&input, path, options, control, timings, false).map(|(o, _)| o)
}

/// [`analyze_path`], with the census `diff` compares (see [`census`]): it keeps the path
/// search through the dominators (5 bytes more per object at that step) and takes 12
/// bytes per object more for every object's retained size.
pub fn analyze_path_census(
    path: &Path,
    options: &Options,
    control: &Control<'_>,
) -> Result<(Outcome, census::Census), AnalyzeError> {
    let mut timings = Timings::default();
    let t = Instant::now();
    let input = input::open(path)?;
    timings.step("open", t);
    let (outcome, census) = analyze_input(&input, path, options, control, timings, true)?;
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

/// At most this many classes are named in the note on unreadable references.
const UNREAD_NAMED: usize = 10;

fn analyze_input(
    input: &input::Input,
    path: &Path,
    options: &Options,
    control: &Control<'_>,
    mut timings: Timings,
    take_census: bool,
) -> Result<(Outcome, Option<census::Census>), AnalyzeError> {
    let data = input.bytes.bytes();
    let hprof = Hprof::new(data)?;
    let mut notes = Vec::new();
    let t = Instant::now();
    // A file can hold several heap dumps one after another; one is analyzed, the last
    // unless asked, as Eclipse MAT asks which to open.
    let dumps = hprof.heap_dumps()?;
    let chosen = match options.dump {
        Some(k) if k == 0 || k > dumps.len().max(1) => {
            return Err(AnalyzeError::NoSuchDump {
                asked: k,
                found: dumps.len(),
            })
        }
        Some(k) => k,
        None => dumps.len().max(1),
    };
    if dumps.len() > 1 {
        notes.push(format!(
            "the file holds {} heap dumps, one after another; this is dump {chosen}{} (--dump N analyzes another)",
            dumps.len(),
            if options.dump.is_none() {
                ", the last"
            } else {
                ""
            }
        ));
    }
    let t = timings.step("heap dumps", t);
    let done = std::sync::atomic::AtomicU64::new(0);
    let total = data.len() as u64;
    let threads = rayon::current_num_threads();
    let mut ix = Index::build(&hprof, threads, dumps.get(chosen - 1).cloned(), |start| {
        Ticks(control.shared_ticker(Stage::Read, total, &done, start))
    })?;
    timings.index_bytes = ix.memory();
    let t = timings.step("index", t);

    let sdk = input
        .manifest_value("sdkVersion")
        .and_then(|s| s.trim().parse::<i64>().ok());
    let manufacturer = input.manifest_value("manufacturer");
    let library = LibraryTable::builtin();
    let g = Graph::new(&ix, options.mapping.as_ref(), &library, sdk, manufacturer);
    let t = timings.step("classes", t);
    control.check()?;

    // The instances every finder looks at, and the shallow sizes of all objects by class,
    // are taken in the pass that reads every object for its references.
    let rules = status::Rules::new(&g);
    let wanted: Set<u64> = leaks::destroyed_info_classes(&g)
        .into_iter()
        .chain(leaks::keyed_reference_classes(&g))
        .chain(leaks::activity_classes(&g, &rules))
        .chain(g.class_named("android.graphics.Bitmap"))
        .collect();
    let t = timings.step("finder classes", t);
    let (edges, seen) = edges::Edges::build(
        &g,
        Seen::default,
        |seen, node, key, size, unread| seen.add(&wanted, node, key, size, unread),
        Seen::merge,
    );
    let (all_objects, instances) = (seen.sizer.finish(), Instances::from_pairs(seen.instances));
    let unread = seen.unread;
    give_back_freed_memory();
    timings.edge_bytes = edges.memory();
    let t = timings.step("references", t);
    control.check()?;
    let reach = Reach::compute(&g, &edges, sdk, manufacturer, control)?;
    let t = timings.step("paths", t);

    let key = if options.ignore_package_key {
        options.key.clone()
    } else {
        options
            .key
            .clone()
            .or_else(|| {
                input
                    .manifest_value("leakedActivityKey")
                    .map(str::to_string)
            })
            .filter(|k| !k.is_empty())
    };
    let found = match &key {
        Some(k) => leaks::by_key(&g, &reach, &instances, k),
        None => leaks::watched_and_destroyed(&g, &reach, &rules, &instances),
    };
    notes.extend(found.notes);
    let t = timings.step("leaks", t);
    let mut leaks_out = Vec::new();
    let mut leak_nodes = Vec::new();
    let thread_roots = trace::ThreadRoots::new(&g);
    for s in found.suspects {
        let Some(trace) = trace::trace(&g, &reach, &rules, &thread_roots, s.node, Some(&s.reason))
        else {
            continue;
        };
        let library_leak = reach
            .through_library(s.node)
            .then(|| library_entry_on(&g, &reach, s.node, sdk, manufacturer))
            .flatten()
            .map(|e| {
                let entry = library.get(e);
                LibraryLeak {
                    pattern: entry.name(),
                    description: entry.description.clone(),
                }
            });
        leak_nodes.push(s.node);
        leaks_out.push(Leak {
            object_id: ix.id(s.node),
            class_name: g.node_class_name(s.node),
            reason: s.reason,
            library_leak,
            signature: trace::signature(&trace),
            retained_bytes: 0,
            retained_objects: 0,
            trace,
        });
    }
    let t = timings.step("traces", t);
    let (duplicate_bitmaps, pictures) = bitmaps::duplicates(
        &g,
        &reach,
        &rules,
        &thread_roots,
        &instances,
        options.min_bitmap_bytes,
        options.pictures,
    );
    drop(instances);
    if input.shrunk {
        notes.push(
            "the dump was shrunk: references to dropped primitive arrays read as null, and retained sizes leave out their bytes"
                .into(),
        );
    }
    if let Some(note) = unread_note(&g, &unread, leaks_out.is_empty()) {
        notes.push(note);
    }
    let t = timings.step("bitmaps", t);

    // The paths are made; their memory goes before the dominators take theirs.
    let roots: Vec<index::Node> = {
        let mut r: Vec<index::Node> = reach.roots.keys().copied().collect();
        r.sort_unstable_by_key(|&n| ix.offset(n));
        r
    };
    // Its arrays go to the next step rather than back to the system.
    let mut spare = spare::Spare::default();
    // A census names its retainers by their paths: it keeps the search.
    let reach = if take_census {
        Some(reach)
    } else {
        reach.into_spare(&mut spare);
        None
    };
    // Nothing below looks an id up: the lookup table goes too, and the graph is made again
    // on what remains, with the same per-class tables.
    drop(thread_roots);
    drop(rules);
    let classes = g.classes();
    drop(g);
    ix.release_lookup();
    let g = Graph::with_classes(&ix, classes, options.mapping.as_ref(), &library);
    let doms = dominators::Dominators::compute(edges, ix.len(), &roots, spare, control)?;
    timings.dominator_bytes = doms.peak_bytes;
    timings.dominator_steps = doms.steps;
    let mut t = timings.step("dominators", t);
    let (reachable_objects, reachable_edges) = (doms.reachable, doms.edges);
    let census = match &reach {
        Some(reach) => {
            let mut reachable = all_objects.clone();
            for (key, (objects, bytes)) in gone_by_class(&doms, &g) {
                if let Some(e) = reachable.get_mut(&key) {
                    e.0 = e.0.saturating_sub(objects);
                    e.1 = e.1.saturating_sub(bytes);
                }
            }
            reachable.retain(|_, (objects, _)| *objects > 0);
            let c = census::take(&doms, &g, reach, &reachable);
            t = timings.step("census", t);
            Some(c)
        }
        None => None,
    };
    drop(reach);
    // Retained sizes, and the shallow bytes of the reachable objects by class.
    let total_bytes = all_objects.values().map(|&(_, bytes)| bytes).sum();
    let (retained, all, gone) = doms.retained(
        &leak_nodes,
        total_bytes,
        |node| g.shallow_size(node),
        Sizer::default,
        |sizer, node| sizer.add(&g, node),
        Sizer::merge,
    );
    // The reachable by class: all objects but the unreachable.
    let mut by_class = all_objects;
    for (key, (objects, bytes)) in gone.finish() {
        if let Some(e) = by_class.get_mut(&key) {
            e.0 = e.0.saturating_sub(objects);
            e.1 = e.1.saturating_sub(bytes);
        }
    }
    by_class.retain(|_, (objects, _)| *objects > 0);
    for (leak, r) in leaks_out.iter_mut().zip(retained) {
        (leak.retained_bytes, leak.retained_objects) = (r.bytes, r.objects);
    }
    let t = timings.step("retained sizes", t);
    control.check()?;
    leaks_out.sort_by(|a, b| {
        b.retained_bytes
            .cmp(&a.retained_bytes)
            .then(a.object_id.cmp(&b.object_id))
    });

    // Top classes by the shallow bytes of their reachable objects.
    let mut top: Vec<ClassSummary> = by_class
        .into_iter()
        .map(|(key, (instances, shallow_bytes))| ClassSummary {
            class_name: g.class_key_name(key),
            instances,
            shallow_bytes,
        })
        .collect();
    top.sort_by(|a, b| {
        b.shallow_bytes
            .cmp(&a.shallow_bytes)
            .then(a.class_name.cmp(&b.class_name))
    });
    top.truncate(20);

    let mut heaps: Vec<HeapSummary> = Vec::new();
    if !ix.heaps.is_empty() {
        // Counted by heap, named once at the end.
        let mut per: Map<(u32, u64), u64> = Default::default();
        for node in ix.nodes() {
            *per.entry(ix.heap_of(ix.offset(node))).or_default() += 1;
        }
        let mut named: std::collections::BTreeMap<String, u64> = Default::default();
        for ((id, name_id), objects) in per {
            let name = ix
                .string(name_id)
                .map(|s| s.into_owned())
                .unwrap_or_else(|| heap_name(id).to_string());
            *named.entry(name).or_default() += objects;
        }
        heaps = named
            .into_iter()
            .map(|(name, objects)| HeapSummary { name, objects })
            .collect();
    }

    let dump = DumpSummary {
        format: ix.format.clone(),
        id_size: ix.id_size,
        timestamp_ms: ix.timestamp_ms,
        bytes: data.len() as u64,
        instances: ix.counts.instances,
        object_arrays: ix.counts.object_arrays,
        primitive_arrays: ix.counts.primitive_arrays,
        classes: ix.counts.classes,
        gc_roots: ix.roots.len() as u64,
        reachable_objects,
        reachable_bytes: all.bytes,
        reachable_edges,
        heaps,
        top_classes: top,
        heap_dumps: dumps.len() as u64,
        heap_dump: if dumps.is_empty() { 0 } else { chosen as u64 },
    };
    let analysis = Analysis {
        schema: SCHEMA_VERSION,
        tool: format!("hprof-shrink {}", env!("CARGO_PKG_VERSION")),
        input: InputSummary {
            path: path.display().to_string(),
            kind: input.kind.into(),
            manifest: input.manifest.clone(),
            extra: input.extra.clone(),
            shrunk: input.shrunk,
        },
        dump,
        finder: if key.is_some() {
            "matrix-key"
        } else {
            "leakcanary"
        }
        .into(),
        key,
        keys_found: found.keys,
        leaks: leaks_out,
        duplicate_bitmaps,
        notes,
    };
    let t = timings.step("summary", t);
    if let input::Bytes::File(m) = &input.bytes {
        m.check_intact()?;
    }
    timings.step("check", t);
    Ok((
        Outcome {
            analysis,
            pictures,
            timings,
        },
        census,
    ))
}

/// The unreachable objects by class, for a census taken before the retained sizes (which
/// count them on the way).
fn gone_by_class(doms: &dominators::Dominators, g: &Graph<'_, '_>) -> Histogram {
    let mut sizer = Sizer::default();
    for node in 0..g.ix.len() as index::Node {
        if doms.place(node).is_none() {
            sizer.add(g, node);
        }
    }
    sizer.finish()
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
                g.known_class_name(*class)
                    .map_or_else(|| format!("class {class:#x}"), str::to_string),
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

/// Hands the memory the references' pass freed on its worker threads back to the system:
/// glibc keeps what its per-thread heaps free below a block still in use, and the analysis
/// would carry those megabytes to its peak.
fn give_back_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only returns free pages of malloc's own heaps to the system.
    unsafe {
        libc::malloc_trim(0);
    }
}

type Histogram = Map<(u8, u64), (u64, u64)>;

/// Shallow sizes on one thread, counted by class: a run of one class is added up before it
/// goes into the map, since neighbours are mostly of one class.
#[derive(Default)]
struct Sizer {
    histogram: Histogram,
    /// The run being added up: (class key, objects, bytes).
    run: Option<((u8, u64), u64, u64)>,
    last_class: Option<(u64, u64)>,
}

impl Sizer {
    fn add(&mut self, g: &Graph<'_, '_>, node: index::Node) -> u64 {
        let (key, size) = g.sized_with(node, &mut self.last_class);
        self.add_sized(key, size);
        size
    }

    fn add_sized(&mut self, key: (u8, u64), size: u64) {
        match &mut self.run {
            Some((k, n, bytes)) if *k == key => {
                *n += 1;
                *bytes += size;
            }
            run => {
                if let Some((k, n, bytes)) = run.replace((key, 1, size)) {
                    tally(&mut self.histogram, k, n, bytes);
                }
            }
        }
    }

    fn finish(mut self) -> Histogram {
        if let Some((k, n, bytes)) = self.run.take() {
            tally(&mut self.histogram, k, n, bytes);
        }
        self.histogram
    }

    fn merge(a: Sizer, b: Sizer) -> Sizer {
        let mut h = a.finish();
        merge_histograms(&mut h, b.finish());
        Sizer {
            histogram: h,
            ..Sizer::default()
        }
    }
}

/// Objects whose references could not be read, by (class, why).
type Unread = Map<(u64, graph::Broken), u64>;

/// What the references' pass takes from each object: its shallow size by class, the
/// instances of the classes the finders look at (class, node), in node order, and the
/// objects whose references could not be read.
#[derive(Default)]
struct Seen {
    sizer: Sizer,
    instances: Vec<(u64, index::Node)>,
    /// The last instance class asked about, and whether it is wanted.
    last: Option<(u64, bool)>,
    unread: Unread,
}

impl Seen {
    fn add(
        &mut self,
        wanted: &Set<u64>,
        node: index::Node,
        key: (u8, u64),
        size: u64,
        unread: Option<graph::Broken>,
    ) {
        self.sizer.add_sized(key, size);
        if let Some(why) = unread {
            *self.unread.entry((key.1, why)).or_default() += 1;
        }
        if key.0 == tags::INSTANCE_DUMP {
            // Neighbours are mostly of one class: ask the set once a run.
            let want = match self.last {
                Some((class, want)) if class == key.1 => want,
                _ => {
                    let want = wanted.contains(&key.1);
                    self.last = Some((key.1, want));
                    want
                }
            };
            if want {
                self.instances.push((key.1, node));
            }
        }
    }

    fn merge(mut a: Seen, b: Seen) -> Seen {
        a.instances.extend(b.instances);
        for (k, n) in b.unread {
            *a.unread.entry(k).or_default() += n;
        }
        Seen {
            sizer: Sizer::merge(a.sizer, b.sizer),
            instances: a.instances,
            last: None,
            unread: a.unread,
        }
    }
}

fn merge_histograms(into: &mut Histogram, from: Histogram) {
    for (k, (n, bytes)) in from {
        tally(into, k, n, bytes);
    }
}

/// Adds `n` objects of `bytes` in all to class `key`.
fn tally(h: &mut Histogram, key: (u8, u64), n: u64, bytes: u64) {
    let e = h.entry(key).or_default();
    e.0 += n;
    e.1 += bytes;
}

/// The known-leak entry of the first library reference on `node`'s path.
fn library_entry_on(
    g: &Graph<'_, '_>,
    reach: &Reach,
    node: index::Node,
    sdk: Option<i64>,
    manufacturer: Option<&str>,
) -> Option<u16> {
    let path = reach.path(node);
    for pair in path.windows(2) {
        if let Some(e) = g.library_between(pair[0], pair[1]) {
            return Some(e);
        }
    }
    // A root in a known leaking thread.
    let first = *path.first()?;
    let root = reach.roots.get(&first)?;
    let name = root
        .thread_serial
        .and_then(|s| g.ix.threads.get(&s))
        .and_then(|&t| reach::thread_name(g, t))?;
    g.library
        .find(library::LibraryMatch::Thread(&name), sdk, manufacturer)
}

fn heap_name(id: u32) -> &'static str {
    match id {
        0x41 => "app",
        0x5A => "zygote",
        0x49 => "image",
        _ => "default",
    }
}
