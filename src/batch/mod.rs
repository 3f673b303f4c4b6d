//! `hprof-shrink batch`: shrink many dumps into packages, in parallel, resumable. Each
//! worker takes the next input; an output that already exists and verifies is skipped;
//! outputs appear only when complete (temporary name, then rename), so an interrupted
//! batch leaves nothing partial and running it again finishes the rest. A failing input
//! never stops the batch.

pub mod discover;
mod error;
pub mod prepare;
pub mod state;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Instant;

use hprof_shrink_core::output::clean_stale;
use hprof_shrink_core::verify::verify_path;
use hprof_shrink_core::{shrink_file, Control, Outputs, ShrinkOptions};
use indicatif::{HumanBytes, ProgressBar};
use serde::Serialize;

use crate::cli::BatchArgs;
use crate::error::{salvage_hint, HostError};
use crate::json;
use crate::progress::{self, Label};
use crate::say::{say, say_raw};
use crate::summary::n;
use crate::uploads::{drain, recover, uploaded, uploader};
use discover::{discover, shard_of, Input};
pub use error::{BatchError, InputsError};
use hprof_shrink_upload::{AfterUpload, Outbox, Uploader};
use state::{InputId, PackageId, State};

/// Exit codes, documented in `--help` and the README.
pub const EXIT_ALL_DONE: u8 = 0;
pub const EXIT_PARTIAL: u8 = 3;
pub const EXIT_NOTHING_DONE: u8 = 4;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Shrunk and packaged now.
    Done,
    /// The package was already there and verifies.
    Exists,
    Failed,
    /// Not a heap dump.
    Skipped,
}

#[derive(Debug, Clone, Serialize)]
pub struct Entry {
    pub input: String,
    pub kind: Option<&'static str>,
    pub output: Option<String>,
    pub status: Status,
    /// The input file's size (compressed, for a `.gz` or a zip).
    pub input_bytes: u64,
    /// The dump's own size, where the input held it compressed (a `.gz`, a zip's entry)
    /// and this run unpacked it.
    pub dump_bytes: Option<u64>,
    pub output_bytes: Option<u64>,
    /// output_bytes / the dump's size (`dump_bytes`, else `input_bytes`).
    pub ratio: Option<f64>,
    pub seconds: f64,
    pub error: Option<String>,
    /// Where the package was put for upload (`--outbox`).
    pub outbox: Option<String>,
    /// Whether the upload (`--upload` without `--outbox`) succeeded.
    pub uploaded: Option<bool>,
    /// `--salvage` of a dump cut off while written: what was kept.
    pub salvaged: Option<String>,
    /// `--analyze`: the analysis written beside the package, and the leaks it found.
    pub analysis: Option<String>,
    pub leaks: Option<usize>,
    /// `--analyze` failed for this package (the package itself is fine).
    pub analysis_error: Option<String>,
    /// The hand-off (outbox or upload) happened in this run, for a package made earlier
    /// whose hand-off had not been confirmed.
    #[serde(skip)]
    pub handed_on_now: bool,
}

impl Entry {
    /// An entry for `input` with nothing done yet.
    fn new(input: String, status: Status, input_bytes: u64) -> Entry {
        Entry {
            input,
            kind: None,
            output: None,
            status,
            input_bytes,
            dump_bytes: None,
            output_bytes: None,
            ratio: None,
            seconds: 0.0,
            error: None,
            outbox: None,
            uploaded: None,
            salvaged: None,
            analysis: None,
            leaks: None,
            analysis_error: None,
            handed_on_now: false,
        }
    }
}

#[derive(Debug, Serialize)]
pub struct BatchReport {
    pub schema: u32,
    pub tool: String,
    pub out_dir: String,
    pub shard: Option<String>,
    pub jobs: usize,
    pub seconds: f64,
    pub done: usize,
    pub exists: usize,
    pub failed: usize,
    pub skipped: usize,
    /// Packages whose upload failed (they stay in the output directory or outbox).
    pub upload_failed: usize,
    pub input_bytes: u64,
    pub output_bytes: u64,
    /// A signal stopped the batch: the inputs not listed were not done (a package being
    /// made was dropped, its temporary file removed); the next run takes them up.
    pub cancelled: bool,
    pub entries: Vec<Entry>,
}

/// Why a `--shard` is not `K/N`; each names what was given.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum ShardError {
    #[error("{0:?} is not K/N")]
    NotKN(String),
    #[error("{0:?}: K is not a number")]
    K(String),
    #[error("{0:?}: N is not a number")]
    N(String),
    #[error("{0:?}: needs 0 <= K < N")]
    Range(String),
}

/// Parses `K/N` (0 ≤ K < N).
pub fn parse_shard(s: &str) -> Result<(u32, u32), ShardError> {
    let (k, n) = s
        .split_once('/')
        .ok_or_else(|| ShardError::NotKN(s.into()))?;
    let k: u32 = k.trim().parse().map_err(|_| ShardError::K(s.into()))?;
    let n: u32 = n.trim().parse().map_err(|_| ShardError::N(s.into()))?;
    if n == 0 || k >= n {
        return Err(ShardError::Range(s.into()));
    }
    Ok((k, n))
}

struct Progress {
    bar: Option<ProgressBar>,
    total: usize,
    done: AtomicUsize,
    /// Input bytes accounted for, across workers: whole files finished, plus the part of
    /// each file in work that its passes have walked.
    advanced: AtomicU64,
}

/// One file's share of the bar while it is worked on.
struct FileShare {
    bytes: u64,
    /// What this file has added to [`Progress::advanced`] so far.
    added: AtomicU64,
}

/// How far through a shrink a progress report is, from 0 to 1: the three passes count
/// alike (pass 2's stages share the middle third), each by the bytes it has walked.
fn fraction(p: hprof_shrink_core::Progress) -> Option<f64> {
    use hprof_shrink_core::Stage;
    let pass = match p.stage {
        Stage::Info => 0.0,
        Stage::Collect | Stage::Resolve | Stage::Dedup => 1.0,
        Stage::Write => 2.0,
        Stage::Read => return None,
    };
    let within = if p.total == 0 {
        0.0
    } else {
        (p.done as f64 / p.total as f64).min(1.0)
    };
    Some((pass + within) / 3.0)
}

impl Progress {
    fn new(inputs: &[Input], quiet: bool) -> Progress {
        let total_bytes: u64 = inputs.iter().map(|i| i.bytes).sum();
        let bar = progress::bar(!quiet, total_bytes, Label::Free);
        if let Some(bar) = &bar {
            bar.set_message(format!("0/{} files", inputs.len()));
        }
        Progress {
            bar,
            total: inputs.len(),
            done: AtomicUsize::new(0),
            advanced: AtomicU64::new(0),
        }
    }

    fn share(&self, bytes: u64) -> FileShare {
        FileShare {
            bytes,
            added: AtomicU64::new(0),
        }
    }

    /// Moves the bar as a pass of `share`'s file advances. Reports come from several
    /// threads and stages, so each file's share only ever grows, and stays short of the
    /// whole file until it is finished.
    fn advance(&self, share: &FileShare, p: hprof_shrink_core::Progress) {
        let Some(bar) = &self.bar else { return };
        let Some(f) = fraction(p) else { return };
        let want = ((share.bytes as f64 * f) as u64).min(share.bytes.saturating_sub(1));
        let before = share.added.fetch_max(want, Ordering::Relaxed);
        if want > before {
            let now = self.advanced.fetch_add(want - before, Ordering::Relaxed) + want - before;
            bar.set_position(now);
        }
    }

    /// One line per file without a terminal; the bar moves with one.
    fn finished(&self, e: &Entry, share: &FileShare, quiet: bool) {
        let k = self.done.fetch_add(1, Ordering::Relaxed) + 1;
        let line = describe(e);
        match &self.bar {
            Some(bar) => {
                // The rest of the file, whatever its passes reported.
                let before = share.added.swap(share.bytes, Ordering::Relaxed);
                let rest = share.bytes.saturating_sub(before);
                let now = self.advanced.fetch_add(rest, Ordering::Relaxed) + rest;
                bar.set_position(now);
                bar.set_message(format!("{k}/{} files", self.total));
                if e.status == Status::Failed || e.error.is_some() {
                    bar.println(format!("[{k}/{}] {line}", self.total));
                }
            }
            // Under -q only what went wrong (a failure, or a package made but not
            // handed on).
            None if !quiet || e.error.is_some() => say!("[{k}/{}] {line}", self.total),
            None => {}
        }
    }

    fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

fn describe(e: &Entry) -> String {
    let analysis = match (&e.analysis_error, e.leaks) {
        (Some(err), _) => format!("; analysis failed: {err}"),
        (None, Some(n)) => format!("; analyzed: {n} leak{}", if n == 1 { "" } else { "s" }),
        _ => String::new(),
    };
    let line = describe_shrink(e);
    format!("{line}{analysis}")
}

fn describe_shrink(e: &Entry) -> String {
    match e.status {
        Status::Done => format!(
            "done    {} -> {} ({} -> {}, {:.1}%) {:.1} s{}{}",
            e.input,
            e.output.as_deref().unwrap_or("-"),
            match e.dump_bytes {
                Some(d) => format!(
                    "{} {}, {} unpacked",
                    HumanBytes(e.input_bytes),
                    e.kind.unwrap_or("file"),
                    HumanBytes(d)
                ),
                None => HumanBytes(e.input_bytes).to_string(),
            },
            HumanBytes(e.output_bytes.unwrap_or(0)),
            e.ratio.unwrap_or(0.0) * 100.0,
            e.seconds,
            e.salvaged
                .as_deref()
                .map(|s| format!("; {s}"))
                .unwrap_or_default(),
            e.error
                .as_deref()
                .map(|err| format!("; but {err}"))
                .unwrap_or_default()
        ),
        Status::Exists => format!(
            "exists  {} (kept {}, it verifies){}",
            e.input,
            e.output.as_deref().unwrap_or("-"),
            match (e.handed_on_now, &e.outbox, e.uploaded) {
                (true, Some(o), _) => format!("; put into the outbox now as {o}"),
                (true, None, Some(true)) => "; uploaded now".to_string(),
                _ => e
                    .error
                    .as_deref()
                    .map(|err| format!("; but {err}"))
                    .unwrap_or_default(),
            }
        ),
        Status::Failed => format!("FAILED  {}: {}", e.input, e.error.as_deref().unwrap_or("?")),
        Status::Skipped => format!("skipped {}: {}", e.input, e.error.as_deref().unwrap_or("?")),
    }
}

/// Where a finished package goes next.
struct Handoff<'a> {
    outbox: Option<&'a Outbox>,
    /// Upload each package right away (no outbox).
    uploader: Option<&'a Uploader>,
}

impl Handoff<'_> {
    /// Finishes what `state` says is not done yet: admission into the outbox, or the
    /// upload; records each step in the package's state as soon as it is confirmed.
    fn pass_on(&self, out: &Path, entry: &mut Entry, st: &mut State, quiet: bool) {
        if let Some(ob) = self.outbox {
            if let Some(queued) = st.queued.as_ref().filter(|q| queued_in(q, ob)) {
                entry.outbox = Some(queued.clone());
                return;
            }
            let placed = ob.incoming(out).and_then(|inc| {
                std::fs::copy(out, inc.path())?;
                std::fs::File::open(inc.path())?.sync_all()?;
                ob.admit(inc)
            });
            match placed {
                Ok(p) => {
                    entry.outbox = Some(p.display().to_string());
                    entry.handed_on_now = true;
                    st.queued = Some(p.display().to_string());
                    record(out, st, entry);
                }
                Err(e) => {
                    entry.status = Status::Failed;
                    entry.error = Some(format!(
                        "putting the package into {}: {e}",
                        ob.dir().display()
                    ));
                }
            }
        } else if let Some(up) = self.uploader {
            if st.uploaded {
                entry.uploaded = Some(true);
                return;
            }
            match up.upload(out) {
                Ok(o) => {
                    entry.uploaded = Some(true);
                    entry.handed_on_now = true;
                    st.uploaded = true;
                    record(out, st, entry);
                    uploaded(&o, None, quiet);
                }
                Err(e) => {
                    entry.uploaded = Some(false);
                    // The next run sends it (its state says it was not uploaded).
                    entry.error = Some(format!(
                        "upload: {e} (the package stays at {}; the next batch run, or `hprof-shrink upload`, sends it)",
                        out.display()
                    ));
                }
            }
        }
    }
}

/// True when `queued` (where a package was admitted) is in this outbox: a run with another
/// `--outbox` admits it there too.
fn queued_in(queued: &str, ob: &Outbox) -> bool {
    Path::new(queued)
        .parent()
        .is_some_and(|dir| hprof_shrink_core::output::same_file(dir, ob.dir()))
}

impl Handoff<'_> {
    /// True when this run would still hand the package `st` describes on.
    fn pending(&self, st: &State) -> bool {
        match (self.outbox, self.uploader) {
            (Some(ob), _) => !st.queued.as_deref().is_some_and(|q| queued_in(q, ob)),
            (None, Some(_)) => !st.uploaded,
            (None, None) => false,
        }
    }
}

/// Saves a package's state; a failure is the entry's error (the next run then redoes what
/// it could not see recorded, which loses nothing).
fn record(out: &Path, st: &State, entry: &mut Entry) {
    if let Err(e) = state::save(out, st) {
        entry.error = Some(format!(
            "recording the state of {}: {e} (a re-run will redo it)",
            out.display()
        ));
    }
}

/// The options a package depends on, as its state records them.
fn options_key(args: &BatchArgs) -> String {
    // ` private` only when set: the keys of earlier runs' states stay what they were.
    let private = if args.mode.private { " private" } else { "" };
    format!(
        "strip={} dropped={} level={} salvage={}{private}",
        args.mode.strip, args.mode.dropped, args.mode.level, args.mode.salvage
    )
}

/// Processes one input into `out`.
fn run_one(
    input: &Input,
    out: &Path,
    args: &BatchArgs,
    threads: usize,
    handoff: &Handoff<'_>,
    progress: &(dyn Fn(hprof_shrink_core::Progress) + Sync),
) -> Entry {
    let started = Instant::now();
    let mut entry = Entry {
        kind: Some(input.kind.name()),
        output: Some(out.display().to_string()),
        ..Entry::new(
            input.path.display().to_string(),
            Status::Failed,
            input.bytes,
        )
    };
    let job = Job {
        input,
        out,
        args,
        threads,
        handoff,
        progress,
    };
    let result = job.package(&mut entry);
    match result {
        Ok((status, mut st)) => {
            entry.status = status;
            entry.output_bytes = std::fs::metadata(out).ok().map(|m| m.len());
            // Against the dump, not the .gz or zip it came in: what the shrink achieved.
            // A package kept from an earlier run (not unpacked now) of a compressed input
            // has no ratio.
            let dump = entry
                .dump_bytes
                .or((input.kind == discover::Kind::Hprof).then_some(input.bytes));
            entry.ratio = entry
                .output_bytes
                .zip(dump)
                .map(|(o, d)| o as f64 / d.max(1) as f64);
            if args.analyze {
                analyze_beside(out, status == Status::Done, &mut entry);
            }
            handoff.pass_on(out, &mut entry, &mut st, args.quiet);
        }
        Err(e) => entry.error = Some(e.to_string()),
    }
    entry.seconds = started.elapsed().as_secs_f64();
    entry
}

/// One input of [`run_one`] and what its package is made with.
struct Job<'a> {
    input: &'a Input,
    out: &'a Path,
    args: &'a BatchArgs,
    threads: usize,
    handoff: &'a Handoff<'a>,
    progress: &'a (dyn Fn(hprof_shrink_core::Progress) + Sync),
}

impl Job<'_> {
    /// The package at `out`: found done, or made now. Sets the entry's `salvaged` and
    /// `dump_bytes` as it learns them.
    fn package(&self, entry: &mut Entry) -> Result<(Status, State), BatchError> {
        let (input, out, args) = (self.input, self.out, self.args);
        if let Some(dir) = out.parent() {
            std::fs::create_dir_all(dir).map_err(|e| BatchError::io(dir, e))?;
        }
        if hprof_shrink_core::output::same_file(&input.path, out) {
            return Err(BatchError::OverwritesInput);
        }
        // Who the input is now, before it is read: if it changes while it is shrunk, the
        // next run sees another input and redoes it.
        let id = InputId::of(&input.path).map_err(|source| BatchError::Unreadable {
            path: input.path.clone(),
            source,
        })?;
        let options = options_key(args);
        // Done only if this package was made from this input with these options, and
        // still verifies.
        if !args.force {
            if let Some(st) = state::load(out) {
                if st.describes(out, &id, &options)
                    && verify_path(out, None, None, &Control::default()).is_ok()
                {
                    return Ok((Status::Exists, st));
                }
            }
        }
        self.deliver_earlier(entry)?;
        state::forget(out);
        let (report, unpacked) = self.shrink()?;
        if unpacked {
            entry.dump_bytes = Some(report.input.bytes);
        }
        entry.salvaged = report.salvage.map(|s| {
            format!(
                "salvaged: cut off at offset {} of {}, the part before it kept",
                s.damaged_at, s.file_bytes
            )
        });
        let package = PackageId::of(out).map_err(|e| BatchError::io(out, e))?;
        let st = State {
            schema: state::SCHEMA,
            input: id,
            options,
            package,
            queued: None,
            uploaded: false,
        };
        state::save(out, &st).map_err(|source| BatchError::State {
            package: out.to_path_buf(),
            source,
        })?;
        Ok((Status::Done, st))
    }

    /// A package of an earlier dump still waiting for its hand-off is delivered before it
    /// is replaced: its dump may be gone, and it may be the only copy.
    fn deliver_earlier(&self, entry: &Entry) -> Result<(), BatchError> {
        let (out, handoff) = (self.out, self.handoff);
        if let Some(mut old) = state::load(out) {
            let same = PackageId::of(out).is_ok_and(|p| p == old.package);
            if same && handoff.pending(&old) {
                let mut scratch = entry.clone();
                handoff.pass_on(out, &mut scratch, &mut old, self.args.quiet);
                if handoff.pending(&old) {
                    return Err(BatchError::Undelivered {
                        package: out.to_path_buf(),
                        why: scratch
                            .error
                            .unwrap_or_else(|| "the hand-off failed".to_string()),
                    });
                }
            }
        }
        Ok(())
    }

    /// The input, unpacked if it must be, shrunk into the package at `out`; true when it
    /// was unpacked (the report's input is then the dump unpacked, not the input).
    fn shrink(&self) -> Result<(hprof_shrink_core::Report, bool), BatchError> {
        let (out, args) = (self.out, self.args);
        let dir = out.parent().unwrap_or(Path::new("."));
        let prepared =
            prepare::prepare(self.input, dir, args.max_input_size).map_err(BatchError::Prepare)?;
        let mut opts = ShrinkOptions::new()
            .with_strip(args.mode.strip)
            .with_dropped(args.mode.dropped)
            .with_level(args.mode.level)
            .with_manifest(prepared.manifest.clone())
            .with_threads(self.threads)
            .with_salvage(args.mode.salvage)
            .with_private(args.mode.private);
        opts.extra = prepared.extra.clone();
        opts.hprof_entry = prepared.hprof_entry.clone();
        let outputs = Outputs {
            zip: Some(out),
            hprof: None,
        };
        let control = Control {
            cancel: Some(crate::signals::flag()),
            progress: Some(self.progress),
        };
        let report = shrink_file(&prepared.hprof, outputs, &opts, &control).map_err(|source| {
            BatchError::Shrink {
                hint: salvage_hint(&source, args.mode.salvage),
                source,
            }
        })?;
        Ok((report, prepared.hprof != self.input.path))
    }
}

/// Where `--analyze` puts a package's analysis: `NAME.analysis.json` beside `NAME.zip`.
pub fn analysis_path(package: &Path) -> PathBuf {
    package.with_extension("analysis.json")
}

/// Analyzes the package at `out` into the file beside it, unless a package found done
/// already has one. A failure is the entry's `analysis_error`; the package stands.
fn analyze_beside(out: &Path, made_now: bool, entry: &mut Entry) {
    let target = analysis_path(out);
    if !made_now && target.exists() {
        entry.analysis = Some(target.display().to_string());
        return;
    }
    let options = hprof_shrink_analyze::Options {
        pictures: false,
        ..Default::default()
    };
    match hprof_shrink_analyze::analyze_path(out, &options, &Control::default()) {
        Ok(outcome) => match crate::json::write(&target, &outcome.analysis) {
            Ok(()) => {
                entry.analysis = Some(target.display().to_string());
                entry.leaks = Some(outcome.analysis.leaks.len());
            }
            Err(e) => entry.analysis_error = Some(e.to_string()),
        },
        Err(e) => entry.analysis_error = Some(e.to_string()),
    }
}

/// Locks a directory for this batch: an OS lock on the directory itself (no file to leave
/// behind or to take for a package).
fn lock_dir(dir: &Path) -> Result<Option<std::fs::File>, HostError> {
    let file = std::fs::File::open(dir).map_err(|e| HostError::io(dir, e))?;
    match file.try_lock() {
        Ok(()) => Ok(Some(file)),
        Err(std::fs::TryLockError::WouldBlock) => Err(HostError::Busy {
            dir: dir.to_path_buf(),
        }),
        // A filesystem without such locks (some network filesystems): run unguarded.
        Err(std::fs::TryLockError::Error(e)) => {
            say!(
                "hprof-shrink: warning: {}: cannot lock it ({e}); make sure no other batch uses it",
                dir.display()
            );
            Ok(None)
        }
    }
}

/// `--report` must not name an input, which it would replace.
fn report_replaces_input(args: &BatchArgs, found: &discover::Found) -> Result<(), HostError> {
    if let Some(report) = &args.report {
        let clash = found
            .inputs
            .iter()
            .map(|i| &i.path)
            .chain(found.skipped.iter().map(|s| &s.path))
            .find(|p| hprof_shrink_core::output::same_file(p, report));
        if let Some(input) = clash {
            return Err(HostError::Inputs(InputsError::ReportIsInput {
                report: report.clone(),
                input: input.clone(),
            }));
        }
    }
    Ok(())
}

/// `--report` must not name a package of this batch either.
fn report_replaces_package(args: &BatchArgs, found: &discover::Found) -> Result<(), HostError> {
    if let Some(report) = &args.report {
        let package = found
            .inputs
            .iter()
            .map(|i| args.out_dir.join(&i.out_rel))
            .find(|p| hprof_shrink_core::output::same_file(p, report) || p == report);
        if let Some(p) = package {
            return Err(HostError::Inputs(InputsError::ReportIsPackage {
                report: report.clone(),
                package: p,
            }));
        }
    }
    Ok(())
}

/// Removes the temporary files a killed run left behind (ones no live process holds) in
/// the output directory and every directory a package goes to.
fn sweep_stale(args: &BatchArgs, inputs: &[Input]) -> Result<(), HostError> {
    let mut dirs: Vec<PathBuf> = inputs
        .iter()
        .filter_map(|i| {
            args.out_dir
                .join(&i.out_rel)
                .parent()
                .map(Path::to_path_buf)
        })
        .collect();
    dirs.push(args.out_dir.clone());
    dirs.sort();
    dirs.dedup();
    for d in &dirs {
        for stale in clean_stale(d)? {
            if !args.quiet {
                say!("removed a stale temporary file: {}", stale.display());
            }
        }
    }
    Ok(())
}

/// Makes every input's package on `jobs` workers; returns the entries in input order
/// (inputs a signal stopped are left out, for the next run).
fn run_all(
    args: &BatchArgs,
    inputs: &[Input],
    jobs: usize,
    cores: usize,
    handoff: &Handoff<'_>,
) -> Vec<Entry> {
    // Cores left over when there are fewer files than workers go to compression.
    let threads = (cores / jobs.min(inputs.len().max(1))).max(1);
    let progress = Progress::new(inputs, args.quiet);
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<Entry>>> = Mutex::new(vec![None; inputs.len()]);
    let cancel = crate::signals::flag();
    let cancelled = || cancel.load(Ordering::Relaxed);
    let work = || loop {
        let i = next.fetch_add(1, Ordering::Relaxed);
        let Some(input) = inputs.get(i) else {
            return;
        };
        if cancelled() {
            return;
        }
        let out = args.out_dir.join(&input.out_rel);
        let share = progress.share(input.bytes);
        let advance = |p| progress.advance(&share, p);
        let entry = run_one(input, &out, args, threads, handoff, &advance);
        // A shrink the signal stopped did not fail: it is left out, for the next run.
        if cancelled() && entry.status == Status::Failed {
            return;
        }
        progress.finished(&entry, &share, args.quiet);
        results.lock().unwrap_or_else(|e| e.into_inner())[i] = Some(entry);
    };
    std::thread::scope(|s| {
        for _ in 1..jobs.min(inputs.len().max(1)) {
            // A worker the system will not give is one fewer: the rest take its inputs.
            if std::thread::Builder::new().spawn_scoped(s, work).is_err() {
                break;
            }
        }
        work();
    });
    progress.finish();
    results
        .into_inner()
        .unwrap_or_else(|e| e.into_inner())
        .into_iter()
        .flatten()
        .collect()
}

/// The batch's report, its totals counted from the entries.
fn batch_report(
    args: &BatchArgs,
    jobs: usize,
    started: Instant,
    cancelled: bool,
    entries: Vec<Entry>,
) -> BatchReport {
    let count = |st: Status| entries.iter().filter(|e| e.status == st).count();
    BatchReport {
        schema: 1,
        tool: format!("hprof-shrink {}", env!("CARGO_PKG_VERSION")),
        out_dir: args.out_dir.display().to_string(),
        shard: args.shard.clone(),
        jobs,
        seconds: started.elapsed().as_secs_f64(),
        done: count(Status::Done),
        exists: count(Status::Exists),
        failed: count(Status::Failed),
        skipped: count(Status::Skipped),
        upload_failed: entries.iter().filter(|e| e.uploaded == Some(false)).count(),
        input_bytes: entries
            .iter()
            .filter(|e| matches!(e.status, Status::Done | Status::Exists))
            .map(|e| e.input_bytes)
            .sum(),
        output_bytes: entries.iter().filter_map(|e| e.output_bytes).sum(),
        cancelled,
        entries,
    }
}

/// Runs a batch; returns the exit code.
pub fn run(args: &BatchArgs) -> Result<u8, HostError> {
    let started = Instant::now();
    // The batch's own outputs are never inputs, even below an input directory.
    let own_dirs: Vec<PathBuf> = std::iter::once(args.out_dir.clone())
        .chain(args.outbox.iter().cloned())
        .collect();
    // A bad K/N is bad usage, said before anything about the inputs.
    let shard = args
        .shard
        .as_deref()
        .map(parse_shard)
        .transpose()
        .map_err(|e| HostError::Usage(format!("--shard {e}")))?;
    let mut found = discover(&args.inputs, &own_dirs)?;
    // The report must not replace an input (nor, below, a package).
    report_replaces_input(args, &found)?;
    // Names before the shard split, so every shard of the archive agrees on them.
    discover::resolve_collisions(&mut found.inputs, |rel| {
        state::load(&args.out_dir.join(rel)).map(|st| PathBuf::from(st.input.path))
    });
    if let Some((k, n)) = shard {
        found.inputs.retain(|i| shard_of(&i.path, n) == k);
        found.skipped.retain(|s| shard_of(&s.path, n) == k);
        found.failed.retain(|s| shard_of(&s.path, n) == k);
    }
    std::fs::create_dir_all(&args.out_dir).map_err(|e| HostError::io(&args.out_dir, e))?;
    report_replaces_package(args, &found)?;
    // One batch at a time per output directory and outbox: two would make, and queue,
    // every package twice. Held until this run ends (the OS drops it if the run dies).
    let mut locks = vec![lock_dir(&args.out_dir)?];
    if let Some(ob) = &args.outbox {
        std::fs::create_dir_all(ob).map_err(|e| HostError::io(ob, e))?;
        if !hprof_shrink_core::output::same_file(ob, &args.out_dir) {
            locks.push(lock_dir(ob)?);
        }
    }
    sweep_stale(args, &found.inputs)?;

    // Set up before any work, so a bad upload option fails first.
    let uploader = match &args.upload {
        Some(url) => Some(uploader(url.clone(), &args.upload_opts, args.quiet)?),
        None => None,
    };
    let outbox = args.outbox.as_ref().map(Outbox::new);
    if let Some(ob) = &outbox {
        std::fs::create_dir_all(ob.dir()).map_err(|e| HostError::io(ob.dir(), e))?;
        // What a killed run left there is taken up before anything new goes in.
        recover(ob, args.quiet)?;
    }
    let handoff = Handoff {
        outbox: outbox.as_ref(),
        uploader: if outbox.is_some() {
            None
        } else {
            uploader.as_ref()
        },
    };
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let jobs = if args.jobs == 0 { cores } else { args.jobs }.max(1);
    let mut entries = run_all(args, &found.inputs, jobs, cores, &handoff);
    let cancelled = || crate::signals::flag().load(Ordering::Relaxed);
    let not_dumps = found.skipped.iter().map(|s| (s, Status::Skipped));
    let unreadable = found.failed.iter().map(|s| (s, Status::Failed));
    for (s, status) in not_dumps.chain(unreadable) {
        entries.push(Entry {
            error: Some(s.reason.clone()),
            ..Entry::new(
                s.path.display().to_string(),
                status,
                std::fs::metadata(&s.path).map(|m| m.len()).unwrap_or(0),
            )
        });
    }
    let report = batch_report(args, jobs, started, cancelled(), entries);
    if let Some(path) = &args.report {
        json::write(path, &report)?;
    }
    if !args.quiet {
        say_raw!("{}", summary(&report));
    }
    if report.cancelled {
        return Err(HostError::Cancelled);
    }
    // With an outbox, what waits there goes now (this run's packages and earlier ones).
    let drained = match (&outbox, &uploader) {
        (Some(ob), Some(up)) => drain(ob, up, AfterUpload::MoveToSent, args.quiet),
        _ => Ok(()),
    };
    if let Err(e) = &drained {
        say!("hprof-shrink: error: {e}");
    }
    let ok = report.done + report.exists;
    let failed = report.failed + report.upload_failed + drained.is_err() as usize;
    drop(locks);
    Ok(if failed == 0 && ok > 0 {
        EXIT_ALL_DONE
    } else if ok > 0 {
        EXIT_PARTIAL
    } else {
        EXIT_NOTHING_DONE
    })
}

fn summary(r: &BatchReport) -> String {
    let mut o = String::from("\n");
    o += &format!(
        "{:8} {:>14} {:>14} {:>7} {:>8}  input\n",
        "status", "input", "output", "ratio", "time"
    );
    for e in &r.entries {
        let status = match e.status {
            Status::Done => "done",
            Status::Exists => "exists",
            Status::Failed => "FAILED",
            Status::Skipped => "skipped",
        };
        o += &format!(
            "{:8} {:>14} {:>14} {:>7} {:>7.1}s  {}{}{}\n",
            status,
            n(e.dump_bytes.unwrap_or(e.input_bytes)),
            e.output_bytes.map(n).unwrap_or_else(|| "-".into()),
            e.ratio
                .map(|r| format!("{:.1}%", r * 100.0))
                .unwrap_or_else(|| "-".into()),
            e.seconds,
            e.input,
            match e.dump_bytes {
                Some(_) => format!(" ({} bytes as found)", n(e.input_bytes)),
                None => String::new(),
            },
            e.error
                .as_ref()
                .map(|x| format!(": {x}"))
                .unwrap_or_default()
        );
    }
    o += &format!(
        "batch: {} done, {} already there, {} failed, {} not dumps{}; {} -> {} bytes in {:.1} s with {} jobs\n",
        r.done,
        r.exists,
        r.failed,
        r.skipped,
        match r.upload_failed {
            0 => String::new(),
            n => format!(", {n} uploads failed"),
        },
        n(r.input_bytes),
        n(r.output_bytes),
        r.seconds,
        r.jobs
    );
    o
}
