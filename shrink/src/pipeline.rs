//! The whole job in one call — [`shrink_file`]: input path in, zip (and/or raw hprof) out,
//! report back — and the steps beneath it for callers that bring their own reader or
//! writer: [`analyze`] (passes 1 and 2) and [`write_shrunk`] (pass 3).

use std::io::{BufWriter, Write};
use std::path::Path;
use std::time::Instant;

use crate::control::{Control, Stage};
use crate::error::{Error, Result};
use crate::hprof::javastring;
use crate::hprof::{BasicType, Hprof, MappedFile, Salvage};
use crate::options::{DroppedMode, StripMode};
use crate::output::{
    check_destination, clean_stale, output_error, same_file, Named, PendingFile, Writeback,
};
use crate::package::manifest::{self, Manifest, ManifestValues};
use crate::package::{comment, PackageWriter};
use crate::passes::collect::{collect, collect_with_info};
use crate::passes::dedup::{self, Candidate, Groups};
use crate::passes::parallel::{self, Order};
use crate::passes::{
    write_shrunk, write_shrunk_parallel, Collected, DumpInfo, EarlyInfo, InfoCollector, Plan,
    WriteStats,
};
use crate::private::{KeptFields, Key};
use crate::report::{
    ArraysReport, BitmapsReport, ImagesReport, InputReport, OptionsReport, OutputReport,
    PrivateReport, Report, StringsReport, Timings, TypeRow, SCHEMA,
};

/// Everything a shrink can be told. It will grow: start from [`Default`] (or
/// [`ShrinkOptions::new`]) and set what differs, with the `with_*` methods or by field.
///
/// ```
/// use hprof_shrink_core::{ShrinkOptions, StripMode};
///
/// let opts = ShrinkOptions::new()
///     .with_strip(StripMode::Strings)
///     .with_level(9)
///     .with_extra("uin", "7");
/// assert_eq!(opts.level, 9);
/// assert_eq!(opts.extra, [("uin".to_string(), "7".to_string())]);
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ShrinkOptions {
    /// Which primitive arrays survive.
    pub strip: StripMode,
    /// How a dropped array disappears.
    pub dropped: DroppedMode,
    /// Deflate level 0-9 of the zip (0 stores).
    pub level: u32,
    /// Manifest values; `None` ones are read from the dump.
    pub manifest: ManifestValues,
    /// Properties for `extra.info`, in order.
    pub extra: Vec<(String, String)>,
    /// Name of the hprof entry; default: the input's stem + `_shrink.hprof`.
    pub hprof_entry: Option<String>,
    /// Threads for compression; 0 means one per core.
    pub threads: usize,
    /// Shrink a dump that was cut off while being written, up to its last complete record
    /// (`extra.info` then says `truncated=true` and where).
    pub salvage: bool,
    /// A private package: no String value and no pixel but those the analysis reads
    /// (see [`crate::private`]); `extra.info` and `result.info` say `private=true`.
    pub private: bool,
}

/// The most threads a shrink uses: more would only cost memory and start-up (and a
/// count near `usize::MAX` must not reach an allocation).
pub const MAX_THREADS: usize = 256;

impl ShrinkOptions {
    /// The defaults: `--strip bitmaps`, `--dropped remove`, level 6, manifest values read
    /// from the dump, one thread per core.
    pub fn new() -> Self {
        Self::default()
    }

    /// With `strip`.
    pub fn with_strip(mut self, strip: StripMode) -> Self {
        self.strip = strip;
        self
    }

    /// With `dropped`.
    pub fn with_dropped(mut self, dropped: DroppedMode) -> Self {
        self.dropped = dropped;
        self
    }

    /// With deflate level `level` (0 stores; at most 9, checked when the shrink starts).
    pub fn with_level(mut self, level: u32) -> Self {
        self.level = level;
        self
    }

    /// With these manifest values (`None` ones are read from the dump).
    pub fn with_manifest(mut self, manifest: ManifestValues) -> Self {
        self.manifest = manifest;
        self
    }

    /// With one more `extra.info` property, after those already there.
    pub fn with_extra(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.extra.push((key.into(), value.into()));
        self
    }

    /// With `name` for the hprof entry.
    pub fn with_hprof_entry(mut self, name: impl Into<String>) -> Self {
        self.hprof_entry = Some(name.into());
        self
    }

    /// With `threads` threads (0: one per core).
    pub fn with_threads(mut self, threads: usize) -> Self {
        self.threads = threads;
        self
    }

    /// Salvaging a cut-off dump, or not.
    pub fn with_salvage(mut self, salvage: bool) -> Self {
        self.salvage = salvage;
        self
    }

    /// A private package, or not.
    pub fn with_private(mut self, private: bool) -> Self {
        self.private = private;
        self
    }

    /// The number of threads to use: `threads`, or one per core when 0; at most
    /// [`MAX_THREADS`].
    pub fn threads(&self) -> usize {
        match self.threads {
            0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
            n => n,
        }
        .min(MAX_THREADS)
    }
}

impl Default for ShrinkOptions {
    fn default() -> Self {
        ShrinkOptions {
            strip: StripMode::default(),
            dropped: DroppedMode::default(),
            level: 6,
            manifest: ManifestValues::default(),
            extra: Vec::new(),
            hprof_entry: None,
            threads: 0,
            salvage: false,
            private: false,
        }
    }
}

/// Passes 1 and 2 over a dump: what it holds, what to keep, and the manifest values
/// found in it.
#[derive(Debug)]
pub struct Analysis {
    /// Pass 1: classes, layouts, names, targets.
    pub info: DumpInfo,
    /// Pass 2: String values, Bitmap buffers, DumpData images.
    pub collected: Collected,
    /// Bitmap buffers grouped by content.
    pub buffers: Groups,
    /// DumpData images grouped by content.
    pub images: Groups,
    /// What pass 3 keeps, drops and repoints.
    pub plan: Plan,
    /// Manifest values read from the dump.
    pub from_dump: ManifestValues,
    /// What the caller should know.
    pub warnings: Vec<String>,
    /// Milliseconds in each pass.
    pub timings: Timings,
}

/// What passes 1 and 2 need to know. It will grow: make it with
/// [`AnalyzeOptions::new`] and set the rest by field or `with_*`.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct AnalyzeOptions {
    /// Which primitive arrays survive.
    pub strip: StripMode,
    /// How a dropped array disappears.
    pub dropped: DroppedMode,
    /// Threads for the walks.
    pub threads: usize,
    /// The dump was cut off and trimmed by [`Hprof::salvage`]: a missing end is expected
    /// and a Bitmap buffer that was cut away is a warning, not an error.
    pub salvaged: bool,
    /// A private package: the plan replaces what [`crate::private`] says.
    pub private: bool,
}

impl AnalyzeOptions {
    /// Options for a whole, uncut dump.
    pub fn new(strip: StripMode, dropped: DroppedMode, threads: usize) -> Self {
        AnalyzeOptions {
            strip,
            dropped,
            threads,
            salvaged: false,
            private: false,
        }
    }

    /// For a dump trimmed by [`Hprof::salvage`], or not.
    pub fn with_salvaged(mut self, salvaged: bool) -> Self {
        self.salvaged = salvaged;
        self
    }

    /// For a private package, or not.
    pub fn with_private(mut self, private: bool) -> Self {
        self.private = private;
        self
    }
}

/// Pass 1 over the whole dump, on `threads` threads.
fn whole_info(
    hprof: &Hprof<'_>,
    threads: usize,
    salvaged: bool,
    control: &Control,
) -> Result<DumpInfo> {
    let id_size = hprof.id_size();
    let runs = parallel::walk(hprof, threads, Stage::Info, control, Order::Forward, |_| {
        InfoCollector::new(id_size)
    })?;
    InfoCollector::merged(runs).finish(hprof.data(), salvaged)
}

/// Passes 1 and 2, each walking parts of the dump on `threads` threads.
pub fn analyze(hprof: &Hprof<'_>, opts: &AnalyzeOptions, control: &Control) -> Result<Analysis> {
    let AnalyzeOptions {
        strip,
        dropped,
        threads,
        salvaged,
        private,
    } = *opts;
    let data = hprof.data();
    let mut timings = Timings::default();

    // Pass 1 over the start of the dump, up to its first object; where the classes all
    // came first (HotSpot), the rest of pass 1 rides along with pass 2's walk.
    let t = Instant::now();
    let id_size = hprof.id_size();
    let mut early = EarlyInfo::new(id_size);
    let early = match hprof.accept(&mut early, &mut control.ticker(Stage::Info, hprof.len())) {
        Ok(()) => early.finish(data).ok(),
        Err(Error::Cancelled) => return Err(Error::Cancelled),
        // Whatever it is, the whole pass 1 below meets it again and says what it is.
        Err(_) => None,
    };
    // Every target class the dump names was dumped before the first object: the classes
    // come first. (ART's start names them but dumps them among the objects.)
    let early = early.filter(|e| e.has_string_class && e.undumped_targets.is_empty());
    if early.is_some() {
        control.ticker(Stage::Info, hprof.len()).finish()?;
    }
    timings.info = ms(t);
    let t = Instant::now();
    let folded = match &early {
        Some(early) => collect_with_info(hprof, early, private, threads, control, |whole| {
            whole.finish(data, salvaged)
        })?,
        None => None,
    };
    let (info, collected) = match folded {
        Some(done) => {
            timings.collect = ms(t);
            done
        }
        None => {
            let info = whole_info(hprof, threads, salvaged, control)?;
            timings.info += ms(t);
            let t = Instant::now();
            let kept = private.then(|| KeptFields::resolve(&info, data));
            let collected = collect(hprof, &info, kept.as_ref(), threads, control)?;
            timings.collect = ms(t);
            (info, collected)
        }
    };

    let t = Instant::now();
    let mut warnings = info.warnings.clone();
    let grouping = Grouping {
        data,
        collected: &collected,
        control,
        salvaged,
        threads,
    };
    let buffers = group(&grouping, Grouped::BitmapBuffers, &mut warnings)?;
    let images = group(&grouping, Grouped::DumpDataImages, &mut warnings)?;
    timings.dedup = ms(t);

    let mut plan = Plan::new(&info, &collected, &buffers, &images, strip, dropped);
    if private {
        plan = plan.with_private(Key::random(), &collected, data);
    }
    let from_dump = manifest_from_dump(data, &info, &collected, &mut warnings);
    Ok(Analysis {
        info,
        collected,
        buffers,
        images,
        plan,
        from_dump,
        warnings,
        timings,
    })
}

/// Which references [`group`] groups by content.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Grouped {
    BitmapBuffers,
    DumpDataImages,
}

/// What grouping by content needs, the same for the buffers and the images.
struct Grouping<'a> {
    data: &'a [u8],
    collected: &'a Collected,
    control: &'a Control<'a>,
    /// The dump was salvaged: a buffer may have been cut away.
    salvaged: bool,
    threads: usize,
}

/// Groups the live Bitmaps' buffers (or the DumpData images) by content. Every buffer a
/// live Bitmap names must be a primitive array in the dump (in a salvaged dump it may
/// have been cut away: then it is left out, with a warning).
fn group(g: &Grouping<'_>, what: Grouped, warnings: &mut Vec<String>) -> Result<Groups> {
    let Grouping {
        data,
        collected: c,
        control,
        salvaged,
        threads,
    } = *g;
    let mut candidates = Vec::new();
    let mut missing = 0;
    let refs: Vec<(u64, u64, u64)> = if what == Grouped::DumpDataImages {
        let owner = c.dump_data_buffers.unwrap_or(0);
        c.dump_data_images
            .iter()
            .map(|id| (c.dump_data_offset, owner, *id))
            .collect()
    } else {
        c.bitmap_buffers
            .iter()
            .map(|b| (b.instance_offset, b.bitmap_id, b.buffer_id))
            .collect()
    };
    for (offset, owner, id) in refs {
        match c.arrays.get(&id) {
            Some(loc) => candidates.push(Candidate { id, loc: *loc }),
            None if salvaged => missing += 1,
            None => {
                return Err(Error::MissingBuffer {
                    offset,
                    bitmap_id: owner,
                    buffer_id: id,
                })
            }
        }
    }
    if missing > 0 {
        warnings.push(format!(
            "{missing} Bitmap buffers are not in the salvaged part of the dump"
        ));
    }
    control.check()?;
    let groups = dedup::group(data, &candidates, &dedup::md5, threads);
    if let Some(p) = control.progress {
        p(crate::control::Progress {
            stage: Stage::Dedup,
            done: groups.compared_bytes + groups.hashed_bytes,
            total: groups.compared_bytes + groups.hashed_bytes,
        });
    }
    Ok(groups)
}

fn manifest_from_dump(
    data: &[u8],
    info: &DumpInfo,
    c: &Collected,
    warnings: &mut Vec<String>,
) -> ManifestValues {
    let text = |string_id: u64| -> Option<String> {
        let s = c.strings.get(&string_id)?;
        let loc = c.arrays.get(&s.value)?;
        javastring::decode(loc.ty, loc.bytes(data), s.coder)
    };
    let leaked_activity_key = match c.destroyed_keys.len() {
        0 => None,
        1 => text(c.destroyed_keys[0]),
        n => {
            warnings.push(format!(
                "the dump holds {n} DestroyedActivityInfo records; which leak to report is ambiguous"
            ));
            None
        }
    };
    ManifestValues {
        sdk_version: info.sdk_int.map(|v| v.to_string()),
        manufacturer: info.manufacturer.and_then(text),
        leaked_activity_key,
    }
}

/// Where a shrink writes: a zip package, a raw hprof, or both.
#[derive(Debug, Clone, Copy, Default)]
pub struct Outputs<'a> {
    /// Where the package goes.
    pub zip: Option<&'a Path>,
    /// Where the bare shrunk hprof goes.
    pub hprof: Option<&'a Path>,
}

/// Writes to two sinks at once (the zip entry and the raw hprof).
struct Tee<A, B>(A, B);

impl<A: Write, B: Write> Write for Tee<A, B> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.write_all(buf)?;
        self.1.write_all(buf)?;
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.0.flush()?;
        self.1.flush()
    }
}

const BUF: usize = 1 << 20;

/// The `extra.info` (and `result.info`) key that says a package is private.
pub const PRIVATE_KEY: &str = "private";

/// Shrinks the dump at `input` into `outputs`. Each output is written beside its
/// destination under a temporary name and renamed into place only when complete and
/// synced: on any error (or cancellation) no output file appears. The input is never
/// written to.
///
/// ```
/// use hprof_shrink_core::{shrink_file, Control, Outputs, ShrinkOptions};
/// # let input = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../fixtures/hotspot-android.hprof"));
/// # let dir = tempfile::tempdir()?;
/// let raw = dir.path().join("small.hprof");
/// // Only the shrunk hprof, no zip.
/// let outputs = Outputs { zip: None, hprof: Some(&raw) };
/// let report = shrink_file(input, outputs, &ShrinkOptions::new(), &Control::default())?;
/// assert_eq!(std::fs::metadata(&raw)?.len(), report.output.hprof_bytes);
/// assert!(report.arrays.dropped.count > 0);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn shrink_file(
    input: &Path,
    outputs: Outputs<'_>,
    opts: &ShrinkOptions,
    control: &Control,
) -> Result<Report> {
    let started = Instant::now();
    check_request(input, outputs, opts)?;
    let map = MappedFile::open(input)?;
    let result = shrink_mapped(&map, input, outputs, opts, control, started);
    if result.is_err() {
        // Zeros read where the file shrank under us explain any error better than the
        // error itself (an unknown tag 0x00...).
        map.check_intact()?;
    }
    result.map_err(output_error)
}

/// Everything about the arguments that can be known wrong before any work: an output
/// that is missing, is the input (through symlinks, `./` and hard links), is the other
/// output, or cannot be replaced (a device, FIFO, socket or directory, or in a directory
/// that does not exist); a compression level or an hprof entry name that cannot be.
pub fn check_request(input: &Path, outputs: Outputs<'_>, opts: &ShrinkOptions) -> Result<()> {
    if outputs.zip.is_none() && outputs.hprof.is_none() {
        return Err(Error::Invalid(
            "no output: give a zip path, an hprof path, or both".into(),
        ));
    }
    for out in [outputs.zip, outputs.hprof].into_iter().flatten() {
        if same_file(input, out) {
            return Err(Error::Invalid(format!(
                "the output {} is the input: it would be overwritten",
                out.display()
            )));
        }
    }
    if let (Some(zip), Some(hprof)) = (outputs.zip, outputs.hprof) {
        if same_file(zip, hprof) {
            return Err(Error::Invalid(format!(
                "the zip and the hprof output are the same file ({}): give two paths",
                zip.display()
            )));
        }
    }
    for out in [outputs.zip, outputs.hprof].into_iter().flatten() {
        check_destination(out)?;
    }
    if opts.level > 9 {
        return Err(Error::Invalid(format!(
            "compression level {} is not 0-9",
            opts.level
        )));
    }
    if let Some(entry) = &opts.hprof_entry {
        manifest::check_entry_name(entry).map_err(|e| Error::Invalid(e.to_string()))?;
    }
    if opts.private && opts.strip == StripMode::None {
        return Err(Error::Invalid(
            "--private needs a strip mode that drops arrays (--strip none keeps every array: \
             the user's bytes beyond Strings and pixels)"
                .into(),
        ));
    }
    Ok(())
}

/// [`shrink_file`] once the input is mapped.
fn shrink_mapped(
    map: &MappedFile,
    input: &Path,
    outputs: Outputs<'_>,
    opts: &ShrinkOptions,
    control: &Control,
    started: Instant,
) -> Result<Report> {
    let (hprof, salvage) = if opts.salvage {
        Hprof::salvage(map.bytes())?
    } else {
        (map.hprof()?, None)
    };
    let analyze_opts = AnalyzeOptions {
        salvaged: salvage.is_some(),
        private: opts.private,
        ..AnalyzeOptions::new(opts.strip, opts.dropped, opts.threads())
    };
    let analysis = analyze(&hprof, &analyze_opts, control)?;
    let (mut warnings, extra, manifest) = described(input, opts, &analysis, salvage.as_ref());

    let t = Instant::now();
    clean_stale_beside(&outputs, &mut warnings)?;
    let mut zip_file = outputs.zip.map(PendingFile::create).transpose()?;
    let raw_file = outputs.hprof.map(PendingFile::create).transpose()?;
    // Beside a zip, the raw hprof is written through a buffer of its own.
    let mut raw = raw_file
        .as_ref()
        .filter(|_| zip_file.is_some())
        .map(|f| BufWriter::with_capacity(BUF, Named::new(Writeback::new(f.as_file()), f.dest())));
    let plan = &analysis.plan;
    let (stats, hprof_bytes) = match zip_file.as_mut() {
        Some(zf) => {
            let timestamp = hprof.header().timestamp_ms;
            let dest = outputs.zip.expect("a zip file was created for it");
            let out = BufWriter::with_capacity(BUF, Named::new(Writeback::new(zf.file()), dest));
            let mut package = PackageWriter::new(out, opts.level, timestamp)?;
            package.add_manifest(&manifest)?;
            let threads = opts.threads();
            // The shrunk hprof is never longer than the dump it comes from.
            let most = hprof.len();
            let (stats, n) = package.add_stream(&manifest.hprof_entry, threads, most, |entry| {
                let (stats, n) = match raw.as_mut() {
                    Some(raw) => {
                        let (_, stats, n) = write_shrunk(&hprof, plan, Tee(entry, raw), control)?;
                        (stats, n)
                    }
                    None => {
                        let (_, stats, n) = write_shrunk(&hprof, plan, entry, control)?;
                        (stats, n)
                    }
                };
                Ok((stats, n))
            })?;
            package.add_extra(&extra)?;
            let modes = comment::Modes {
                strip: plan.strip,
                dropped: plan.dropped,
                private: plan.private().is_some(),
            };
            let mut out = package.finish(&comment::render(&modes))?;
            out.flush().map_err(Error::Write)?;
            (stats, n)
        }
        None => {
            // Unbuffered: the parallel writer gathers its own large writes.
            let file = raw_file.as_ref().expect("an output was checked for");
            let out = Named::new(Writeback::new(file.as_file()), file.dest());
            let (_, stats, n) = write_shrunk_parallel(&hprof, plan, out, control, opts.threads())?;
            (stats, n)
        }
    };
    if let Some(raw) = raw.take() {
        raw.into_inner().map_err(|e| Error::Write(e.into_error()))?;
    }
    // Ends the buffer's borrow of the raw file, which is committed below.
    drop(raw);
    control.check()?;
    // Nothing read from a file that changed under us is committed.
    map.check_intact()?;
    let synced = Instant::now();
    let zip_bytes = zip_file.map(PendingFile::commit).transpose()?;
    if let Some(raw) = raw_file {
        if let Err(e) = raw.commit() {
            // Both outputs or neither: the zip already in place goes too.
            if let Some(zip) = outputs.zip {
                let _ = std::fs::remove_file(zip);
            }
            return Err(e);
        }
    }
    let mut timings = analysis.timings.clone();
    timings.sync = ms(synced);
    timings.write = ms(t);
    timings.total = ms(started);
    Ok(build_report(Finished {
        input,
        hprof: &hprof,
        outputs,
        opts,
        analysis: &analysis,
        stats: &stats,
        hprof_bytes,
        zip_bytes,
        manifest,
        warnings,
        timings,
        salvage,
    }))
}

/// What the package says besides the dump: the warnings so far, `extra.info` and
/// `result.info`.
fn described(
    input: &Path,
    opts: &ShrinkOptions,
    analysis: &Analysis,
    salvage: Option<&Salvage>,
) -> (Vec<String>, Vec<(String, String)>, Manifest) {
    let mut warnings = analysis.warnings.clone();
    let mut extra = opts.extra.clone();
    if let Some(s) = salvage {
        note_salvage(s, &mut warnings, &mut extra);
    }
    note_private(opts.private, &mut extra);
    let entry = opts
        .hprof_entry
        .clone()
        .unwrap_or_else(|| manifest::entry_name(input));
    let manifest = Manifest {
        private: opts.private,
        ..manifest::resolve(&opts.manifest, &analysis.from_dump, entry, &mut warnings)
    };
    (warnings, extra, manifest)
}

/// What a salvaged shrink says about the cut: a warning, and the `extra.info` properties.
fn note_salvage(s: &Salvage, warnings: &mut Vec<String>, extra: &mut Vec<(String, String)>) {
    warnings.push(format!(
        "the dump was cut off at offset {} of {}: shrank the {} bytes before it",
        s.damaged_at, s.file_bytes, s.damaged_at
    ));
    extra.push(("truncated".into(), "true".into()));
    extra.push(("truncatedAt".into(), s.damaged_at.to_string()));
    extra.push(("originalBytes".into(), s.file_bytes.to_string()));
}

/// What a private package's `extra.info` says: `private=true`, whatever the caller gave
/// under that key.
fn note_private(private: bool, extra: &mut Vec<(String, String)>) {
    if private {
        extra.retain(|(k, _)| k != PRIVATE_KEY);
        extra.push((PRIVATE_KEY.into(), "true".into()));
    }
}

/// Removes what a killed run left beside the outputs, before anything new is written.
fn clean_stale_beside(outputs: &Outputs<'_>, warnings: &mut Vec<String>) -> Result<()> {
    for out in [outputs.zip, outputs.hprof].into_iter().flatten() {
        let dir = out.parent().filter(|p| !p.as_os_str().is_empty());
        for stale in clean_stale(dir.unwrap_or(Path::new(".")))? {
            warnings.push(format!(
                "removed {}, a temporary file a killed run left behind",
                stale.display()
            ));
        }
    }
    Ok(())
}

/// A finished shrink, what [`build_report`] reports on.
struct Finished<'a> {
    input: &'a Path,
    hprof: &'a Hprof<'a>,
    outputs: Outputs<'a>,
    opts: &'a ShrinkOptions,
    analysis: &'a Analysis,
    /// What pass 3 kept and dropped.
    stats: &'a WriteStats,
    /// Bytes written: the shrunk hprof, and the zip when there is one.
    hprof_bytes: u64,
    zip_bytes: Option<u64>,
    manifest: Manifest,
    warnings: Vec<String>,
    timings: Timings,
    salvage: Option<Salvage>,
}

fn build_report(run: Finished<'_>) -> Report {
    let a = run.analysis;
    let stats = run.stats;
    let input_bytes = run.hprof.len().max(1);
    let by_type = BasicType::PRIMITIVES
        .iter()
        .enumerate()
        .map(|(i, t)| TypeRow {
            element_type: *t,
            kept: stats.kept[i],
            dropped: stats.dropped[i],
        })
        .filter(|r| r.kept.count + r.dropped.count > 0)
        .collect();
    let c = &a.collected;
    let policy = a.plan.policy();
    let dump_data = c.dump_data_buffers.map(|_| {
        let (n, b) = if policy.merges && policy.images {
            merged(&a.images, c)
        } else {
            (0, 0)
        };
        ImagesReport {
            images: c.dump_data_images.len() as u64,
            distinct_contents: a.images.size.len() as u64,
            merged: n,
            merged_bytes: b,
            repointed: stats.images_repointed,
        }
    });
    Report {
        schema: SCHEMA,
        tool: format!("hprof-shrink {}", env!("CARGO_PKG_VERSION")),
        input: InputReport {
            path: run.input.display().to_string(),
            bytes: run.hprof.len(),
            format: run.hprof.header().version.to_string(),
            id_size: run.hprof.id_size(),
            timestamp_ms: run.hprof.header().timestamp_ms,
        },
        output: OutputReport {
            zip: run.outputs.zip.map(|p| p.display().to_string()),
            zip_bytes: run.zip_bytes,
            hprof: run.outputs.hprof.map(|p| p.display().to_string()),
            hprof_bytes: run.hprof_bytes,
            hprof_ratio: run.hprof_bytes as f64 / input_bytes as f64,
            zip_ratio: run.zip_bytes.map(|z| z as f64 / input_bytes as f64),
            zip_compressor: run.zip_bytes.map(|_| match run.opts.level {
                0 => "stored",
                _ => crate::package::deflate::BACKEND,
            }),
        },
        options: OptionsReport {
            strip: run.opts.strip,
            dropped: run.opts.dropped,
            level: run.opts.level,
            private: run.opts.private,
        },
        arrays: ArraysReport {
            kept: stats.kept_total(),
            dropped: stats.dropped_total(),
            by_type,
        },
        strings: StringsReport {
            instances: c.string_instances,
            values: c.string_values.len(),
        },
        bitmaps: bitmaps_report(a, stats),
        dump_data,
        manifest: run.manifest,
        warnings: run.warnings,
        timings_ms: run.timings,
        salvage: run.salvage,
        private: a.plan.private().map(|p| PrivateReport {
            kept_values: p.kept_values() as u64,
            strings_replaced: stats.strings_replaced,
            pixels_replaced: stats.pixels_replaced,
        }),
    }
}

/// Arrays merged into another with the same bytes, and their bytes.
fn merged(g: &Groups, c: &Collected) -> (u64, u64) {
    g.duplicates().fold((0, 0), |(n, b), (id, _)| {
        let len = c.arrays.get(&id).map_or(0, |l| l.len);
        (n + 1, b + len)
    })
}

fn bitmaps_report(a: &Analysis, stats: &WriteStats) -> BitmapsReport {
    let c = &a.collected;
    let bitmaps_merged = if a.plan.policy().merges {
        merged(&a.buffers, c)
    } else {
        (0, 0)
    };
    let kept_buffers = a
        .buffers
        .size
        .iter()
        .filter(|(id, _)| a.plan.keeps(**id))
        .count() as u64;
    BitmapsReport {
        instances: c.bitmaps,
        recycled: c.recycled_bitmaps,
        with_buffer: c.bitmap_buffers.len() as u64,
        buffers: a.buffers.canonical.len() as u64,
        distinct_contents: a.buffers.size.len() as u64,
        kept: kept_buffers,
        merged: bitmaps_merged.0,
        merged_bytes: bitmaps_merged.1,
        repointed: stats.bitmaps_repointed,
        compared_bytes: a.buffers.compared_bytes,
        hashed: a.buffers.hashed,
        hashed_bytes: a.buffers.hashed_bytes,
    }
}

fn ms(t: Instant) -> u64 {
    t.elapsed().as_millis() as u64
}
