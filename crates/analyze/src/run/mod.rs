//! The pipeline: one analysis as a run of steps over one state ([`Run`]), from the
//! opened input to the [`Outcome`]: the index, then one pass over every object
//! ([`references`]), the finders, the path search, the traces, the duplicate bitmaps and
//! the counts (`search`), then the dominators, the duplicate Strings, the retained sizes
//! and the triage (`weigh`). Each step's time and memory are recorded ([`Timings`]).
//! Uses every room below it.

mod analysis;
mod asked;
mod notes;
#[cfg(test)]
mod reach_tests;
pub mod references;
mod search;
mod weigh;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use hprof_shrink_core::space::Unpack;
use hprof_shrink_core::Control;

use crate::base::error::AnalyzeError;
use crate::heap::mapping::Mapping;
use crate::heap::source::HeapSource;
use crate::heap::{encode, input};
use crate::model::Analysis;
use crate::report::census;
use analysis::{Request, Run};

/// Buffers smaller than this are not reported as duplicates (Matrix's default).
pub const DEFAULT_MIN_BITMAP_BYTES: u64 = 5000;

/// What to look for.
#[derive(Debug, Clone)]
pub struct Options {
    /// The key of the leaked Activity (Matrix's `leakedActivityKey`); `None` takes the
    /// package's, and without one leaks are found LeakCanary's way: the objects it watched
    /// and found retained, or, when none is, what its inspectors' rules flag.
    pub key: Option<String>,
    /// Buffers smaller than this many bytes are not reported as duplicates
    /// ([`DEFAULT_MIN_BITMAP_BYTES`]).
    pub min_bitmap_bytes: u64,
    /// R8/ProGuard names: the analysis shows classes and fields deobfuscated.
    pub mapping: Option<Mapping>,
    /// `--all-leaks`: the package's key ignored, every leaking object is found: the
    /// retained watched objects and what the inspectors' rules flag, both.
    pub all_leaks: bool,
    /// Make pictures of the duplicated bitmaps (for the HTML and Matrix outputs).
    pub pictures: bool,
    /// Which heap dump of a file holding several to analyze, from 1; `None`: the last.
    pub dump: Option<usize>,
    /// Which process's heap graph to analyze in a Perfetto trace holding several; `None`:
    /// the trace's only one. An error for an input that is not a trace.
    pub pid: Option<i32>,
    /// The screen (width, height in pixels) large Bitmaps are measured against when the
    /// heap holds no DisplayMetrics.
    pub screen: Option<(u64, u64)>,
    /// Parts of the analysis left out, to save their time (`--skip`).
    pub skip: Skip,
}

/// Parts of the analysis a user may leave out (`analyze --skip`): each costs time on
/// every object and is read by some users only. What is left out is named in the
/// analysis (`dump.skipped`), never silently missing.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Skip {
    /// The triage (top retainers, accumulation points, retained by class, the largest
    /// arrays, counts, duplicate Strings): the retained sizes are summed as ever (the
    /// leaks' and the totals need them), the triage's paths, walks and lists are not made.
    pub triage: bool,
    /// The triage's duplicate Strings alone: no String value is hashed.
    pub duplicate_strings: bool,
}

impl Skip {
    /// The names `dump.skipped` gives the parts left out: the triage covers its duplicate
    /// Strings.
    pub fn names(&self) -> Vec<String> {
        match (self.triage, self.duplicate_strings) {
            (true, _) => vec!["triage".into()],
            (false, true) => vec!["duplicateStrings".into()],
            (false, false) => Vec::new(),
        }
    }

    /// Whether the duplicate Strings are looked for.
    pub fn strings(&self) -> bool {
        !(self.triage || self.duplicate_strings)
    }
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
            pid: None,
            screen: None,
            skip: Skip::default(),
        }
    }
}

/// An analysis and what goes with it.
pub struct Outcome {
    /// The analysis.
    pub analysis: Analysis,
    /// Pictures of the duplicated bitmaps: (file name, bytes), the names the groups give.
    pub pictures: Vec<(String, Vec<u8>)>,
    /// Where its time and memory went.
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
    /// The step's name (`index`, `references`, `paths`, `dominators`, …).
    pub name: &'static str,
    /// Its wall-clock time.
    pub took: Duration,
    /// The process's anonymous memory after it, in bytes (Linux; `None` elsewhere).
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
    let (input, timings) = timed_open(|| input::open_process(path, unpack, options.pid))?;
    let request = Request::new(&input, path, options, unpack, control);
    Run::new(request, timings).analyze().map(|(o, _)| o)
}

/// Analyzes a heap in a format other than HPROF, which `source` describes (see
/// [`crate::heap::source`]): laid out once in an unnamed temporary file within `unpack`'s
/// bounds, then analyzed as a dump is.
pub fn analyze_source(
    source: &dyn HeapSource,
    options: &Options,
    unpack: &Unpack,
    control: &Control<'_>,
) -> Result<Outcome, AnalyzeError> {
    let (input, timings) = timed_open(|| encode::to_input(source, unpack))?;
    let (path, format) = (PathBuf::from(source.name()), source.format());
    let request = Request {
        format: Some(&format),
        ..Request::new(&input, &path, options, unpack, control)
    };
    Run::new(request, timings).analyze().map(|(o, _)| o)
}

/// [`analyze_path`], with the census `diff` compares (see [`census`]): it keeps every
/// object's retained size past the triage (8 bytes a number) for the census's pass.
pub fn analyze_path_census(
    path: &Path,
    options: &Options,
    control: &Control<'_>,
) -> Result<(Outcome, census::Census), AnalyzeError> {
    let unpack = Unpack::default();
    let (input, timings) = timed_open(|| input::open_process(path, &unpack, options.pid))?;
    let request = Request {
        take_census: true,
        ..Request::new(&input, path, options, &unpack, control)
    };
    let (outcome, census) = Run::new(request, timings).analyze()?;
    Ok((outcome, census.unwrap_or_default()))
}

/// The input `open` gives, and the timings that start with its step, `open`.
fn timed_open(
    open: impl FnOnce() -> Result<input::Input, AnalyzeError>,
) -> Result<(input::Input, Timings), AnalyzeError> {
    let mut timings = Timings::default();
    let t = Instant::now();
    let input = open()?;
    timings.step("open", t);
    Ok((input, timings))
}

/// The process's anonymous resident memory now (RssAnon), where /proc tells it: the
/// analysis's own memory, without the mapped dump's pages.
fn anonymous_memory() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("RssAnon:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}
