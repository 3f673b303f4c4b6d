//! Checking a package: the zip and its manifest, the hprof entry parsed end to end, and,
//! given the original dump, that the shrink kept what it must. The comparison walks input
//! and output side by side and names the first difference that the strip mode does not
//! allow.

use std::fs::File;
use std::io::{Read, Write};
use std::path::Path;

use rustc_hash::{FxHashMap, FxHashSet};
use serde::Serialize;

use crate::control::{Control, Stage};
use crate::error::{Error, Result, Violation};
use crate::hprof::{
    tags, Event, Events, Hprof, Instance, MappedFile, ObjectArray, PrimitiveArray, Sub, SubRecord,
    Tag, Visitor,
};
use crate::kind::FileKind;
use crate::options::{DroppedMode, StripMode};
use crate::package::manifest::{KEYS, RESULT_INFO};
use crate::package::reader::{self, PackageError, PackageReader};
use crate::passes::dedup::md5;
use crate::passes::plan::{Buffers, KeptAs, Policy, Private, Replaced};
use crate::passes::{Collected, Location, Target};
use crate::pipeline::{analyze, AnalyzeOptions};
use crate::space::Unpack;

#[derive(Debug, Clone, Default, Serialize)]
/// What a verified hprof holds, counted as it was walked.
pub struct Counts {
    /// Top-level records (heap dump segments included).
    pub records: u64,
    /// Heap dump records and segments.
    pub segments: u64,
    /// Heap dumps: a file can hold several one after another (the old `-agentlib:hprof`
    /// wrote them so); the other counts are of all of them.
    pub dumps: u64,
    #[serde(skip)]
    dump_counter: crate::hprof::DumpCounter,
    /// GC roots.
    pub roots: u64,
    /// CLASS_DUMP sub-records.
    pub classes: u64,
    /// INSTANCE_DUMP sub-records.
    pub instances: u64,
    /// OBJECT_ARRAY_DUMP sub-records.
    pub object_arrays: u64,
    /// Primitive arrays (with or without their elements).
    pub primitive_arrays: u64,
}

impl Visitor for Counts {
    type Error = Error;

    fn record(&mut self, r: &crate::hprof::Record<'_>) -> Result<()> {
        self.records += 1;
        self.dump_counter.record(r);
        self.dumps = self.dump_counter.count() as u64;
        Ok(())
    }
    fn heap_dump_begin(&mut self, s: &crate::hprof::Record<'_>, _l: u32) -> Result<()> {
        self.records += 1;
        self.segments += 1;
        self.dump_counter.record(s);
        self.dumps = self.dump_counter.count() as u64;
        Ok(())
    }
    fn sub_record(&mut self, sub: &SubRecord<'_>) -> Result<()> {
        match sub.kind {
            Sub::Root(_) => self.roots += 1,
            Sub::ClassDump(_) => self.classes += 1,
            Sub::Instance(_) => self.instances += 1,
            Sub::ObjectArray(_) => self.object_arrays += 1,
            Sub::PrimitiveArray(_) | Sub::PrimitiveArrayNoData(_) => self.primitive_arrays += 1,
            Sub::HeapDumpInfo(_) => {}
        }
        Ok(())
    }
}

#[derive(Debug, Clone, Serialize)]
/// What `verify` found in a package (or a bare shrunk hprof) that passed.
pub struct Verified {
    /// The zip's entry names, in order (empty for a bare hprof).
    pub entries: Vec<String>,
    /// `result.info`'s properties, in file order.
    pub manifest: Vec<(String, String)>,
    /// `extra.info`'s properties, in file order.
    pub extra: Vec<(String, String)>,
    /// The hprof entry's name.
    pub hprof_entry: String,
    /// The hprof's size, unpacked.
    pub hprof_bytes: u64,
    /// From the zip comment hprof-shrink writes; absent for zips made elsewhere.
    pub strip: Option<StripMode>,
    /// From the zip comment too.
    pub dropped: Option<DroppedMode>,
    /// What the hprof holds.
    pub counts: Counts,
    /// The comparison with the original dump, when one was given.
    pub comparison: Option<Comparison>,
}

#[derive(Debug, Clone, Default, Serialize)]
/// What the comparison with the original dump found: every kept record identical, each dropped array one the mode may drop.
pub struct Comparison {
    /// The mode the comparison assumed.
    pub strip: Option<StripMode>,
    /// Primitive arrays in both.
    pub kept_arrays: u64,
    /// Primitive arrays of the original that the shrunk hprof dropped.
    pub dropped_arrays: u64,
    /// Their element bytes.
    pub dropped_bytes: u64,
    /// String value arrays, every one of which was kept.
    pub string_values: u64,
    /// Bitmaps whose buffer was checked.
    pub bitmaps_checked: u64,
    /// Bitmaps pointed at an identical buffer's kept copy.
    pub repointed_bitmaps: u64,
    /// Android 14+ DumpData images checked.
    pub images_checked: u64,
    /// DumpData `buffers` elements pointed at an identical image's kept copy.
    pub repointed_images: u64,
    /// A private package: its replaced values were checked as such.
    pub private: bool,
    /// Private packages: String values replaced (each where it must be, equal values
    /// alike and distinct ones distinct).
    pub replaced_strings: u64,
    /// Private packages: Bitmap buffers and images replaced.
    pub replaced_pixels: u64,
}

/// What a comparison assumes of the package.
#[derive(Debug, Clone, Copy, Default)]
pub struct Against {
    /// The strip mode it was made with (`None`: unknown; only String values must survive).
    pub strip: Option<StripMode>,
    /// The input was cut off and shrunk with `--salvage`.
    pub salvaged: bool,
    /// A private package: String values and pixels are replaced where [`crate::private`]
    /// says, and only there.
    pub private: bool,
}

/// A fault of the package or of the whole hprof, at no one record.
pub(crate) fn violation(message: String) -> Error {
    Error::Verify(Violation {
        message,
        offset: None,
        tag: None,
    })
}

/// A fault at the record or sub-record at `offset` of the input dump, with tag `tag`.
fn violation_at(offset: u64, tag: Tag, message: String) -> Error {
    Error::Verify(Violation {
        message,
        offset: Some(offset),
        tag: Some(tag),
    })
}

/// Verifies a package, or a raw shrunk hprof (told apart by their first bytes); with
/// `against`, compares it with the dump it was made from. `strip` is the mode it was made
/// with (default: what the zip comment says).
///
/// ```
/// use hprof_shrink_core::verify::verify_path;
/// use hprof_shrink_core::{shrink_file, Control, Outputs, ShrinkOptions};
/// # let input = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../fixtures/art-api26.hprof"));
/// # let dir = tempfile::tempdir()?;
/// # let zip = dir.path().join("leak.zip");
/// let outputs = Outputs { zip: Some(&zip), hprof: None };
/// shrink_file(input, outputs, &ShrinkOptions::new(), &Control::default())?;
/// verify_path(&zip, Some(input), None, &Control::default())?;
///
/// // Another dump is not what the package was made from.
/// # let other = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../fixtures/art-api25.hprof"));
/// assert!(verify_path(&zip, Some(other), None, &Control::default()).is_err());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn verify_path(
    path: &Path,
    against: Option<&Path>,
    strip: Option<StripMode>,
    control: &Control,
) -> Result<Verified> {
    verify_path_within(path, against, strip, &Unpack::default(), control)
}

/// [`verify_path`], inflating a deflated hprof entry within `unpack`'s bounds (a server's:
/// the most it may inflate to, the free space to keep, where): a zip that declares more is
/// refused before a byte is written, one whose stream holds more than it declares is cut
/// at what it declares. An error past a bound is an [`Error::Io`] of kind
/// [`std::io::ErrorKind::FileTooLarge`] or [`std::io::ErrorKind::StorageFull`].
pub fn verify_path_within(
    path: &Path,
    against: Option<&Path>,
    strip: Option<StripMode>,
    unpack: &Unpack,
    control: &Control,
) -> Result<Verified> {
    let mut magic = [0u8; 4];
    let mut f = crate::hprof::open_regular(path).map_err(|e| Error::io(path, e))?;
    let n = f.read(&mut magic).map_err(|e| Error::io(path, e))?;
    if FileKind::of(&magic[..n]) == FileKind::Zip {
        return verify_package_within(path, against, strip, unpack, control);
    }
    let map = MappedFile::open(path)?;
    let out = map.hprof()?;
    let verdict = verify_hprof(&out, against, strip, control, Contents::default());
    // A file written to while it was read says nothing about itself.
    map.check_intact()?;
    verdict
}

/// What a package holds besides its hprof; empty for a raw hprof.
#[derive(Debug, Default)]
pub(crate) struct Contents {
    pub(crate) entries: Vec<String>,
    pub(crate) manifest: Vec<(String, String)>,
    pub(crate) extra: Vec<(String, String)>,
    pub(crate) hprof_entry: String,
    /// From the zip comment.
    dropped: Option<DroppedMode>,
    /// The zip comment or `extra.info` says private.
    private: bool,
}

fn verify_hprof(
    out: &Hprof<'_>,
    against: Option<&Path>,
    strip: Option<StripMode>,
    control: &Control,
    contents: Contents,
) -> Result<Verified> {
    let mut counts = Counts::default();
    out.accept(&mut counts, &mut control.ticker(Stage::Read, out.len()))?;
    let comparison = match against {
        Some(input) => {
            let in_map = MappedFile::open(input)?;
            // An input cut off at its end can only have been shrunk with --salvage: compare
            // with the part of it that parses.
            let (input, cut) = Hprof::salvage(in_map.bytes())?;
            let against = Against {
                strip,
                salvaged: cut.is_some(),
                private: contents.private,
            };
            let compared = compare(out, &input, &against, control);
            in_map.check_intact()?;
            Some(compared?)
        }
        None => None,
    };
    let Contents {
        entries,
        manifest,
        extra,
        hprof_entry,
        dropped,
        ..
    } = contents;
    Ok(Verified {
        entries,
        manifest,
        extra,
        hprof_entry,
        hprof_bytes: out.len(),
        strip,
        dropped,
        counts,
        comparison,
    })
}

/// Verifies the package at `zip_path`; with `against`, compares its hprof with the
/// original dump. `strip` overrides the mode read from the zip comment.
pub fn verify_package(
    zip_path: &Path,
    against: Option<&Path>,
    strip: Option<StripMode>,
    control: &Control,
) -> Result<Verified> {
    verify_package_within(zip_path, against, strip, &Unpack::default(), control)
}

fn verify_package_within(
    zip_path: &Path,
    against: Option<&Path>,
    strip: Option<StripMode>,
    unpack: &Unpack,
    control: &Control,
) -> Result<Verified> {
    let zip = PackageReader::open(zip_path)
        .map_err(|e| violation(format!("{}: {e}", zip_path.display())))?;
    let contents = checked_contents(&zip)?;
    let comment = zip.tool_comment();
    let strip = strip.or(comment.and_then(|c| c.strip));

    // A stored hprof entry is read where it is in the zip, no copy; a deflated one is
    // unpacked into an anonymous file to map.
    if let Some(mapped) = zip
        .map_stored(&contents.hprof_entry)
        .map_err(package_violation)?
    {
        trace_is_not_hprof(&contents.hprof_entry, mapped.bytes())?;
        let out = Hprof::new(mapped.bytes())?;
        return verify_hprof(&out, against, strip, control, contents);
    }
    let dir = zip_path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let tmp = unpack_entry(&zip, &contents.hprof_entry, dir, unpack, FileKind::Hprof)?;
    let map = MappedFile::from_file(&tmp, zip_path.join(&contents.hprof_entry))?;
    let out = Hprof::new(map.bytes())?;
    verify_hprof(&out, against, strip, control, contents)
}

/// A package whose dump entry is a Perfetto trace is not one this check reads (it checks
/// HPROF): said as such rather than as a bad HPROF header.
fn trace_is_not_hprof(entry: &str, head: &[u8]) -> Result<()> {
    if FileKind::of(head) == FileKind::Trace {
        return Err(violation(format!(
            "{entry} is a Perfetto trace, not an HPROF dump: `verify` checks HPROF packages; \
             `analyze` reads a trace's package (and checks its trace)"
        )));
    }
    Ok(())
}

/// The package's structure, checked: `result.info` first, its four keys present, none
/// twice, the `hprofEntry` it names a plain file name that is in the zip; `extra.info`
/// read. What the dump entry holds is the caller's to check.
pub(crate) fn checked_contents(zip: &PackageReader) -> Result<Contents> {
    let entries: Vec<String> = zip.names().map(str::to_string).collect();
    if entries.first().map(String::as_str) != Some(RESULT_INFO) {
        return Err(violation(format!(
            "the first zip entry is {:?}, not {RESULT_INFO}",
            entries.first()
        )));
    }
    let manifest = zip.manifest().map_err(package_violation)?;
    for key in KEYS {
        match reader::value(&manifest, key) {
            Some(v) if !v.trim().is_empty() => {}
            Some(_) => return Err(violation(format!("{RESULT_INFO}: {key} is empty"))),
            None => return Err(violation(format!("{RESULT_INFO}: {key} is missing"))),
        }
    }
    // Java's Properties keeps the last of a repeated key, and we would read the first: a
    // repeat lets two readers see two manifests, so it is refused.
    let mut keys = FxHashSet::default();
    if let Some((k, _)) = manifest.iter().find(|(k, _)| !keys.insert(k.as_str())) {
        return Err(violation(format!(
            "{RESULT_INFO}: {k} is given more than once"
        )));
    }
    let hprof_entry = reader::value(&manifest, "hprofEntry")
        .unwrap_or_default()
        .to_string();
    if let Err(why) = crate::package::manifest::check_entry_name(&hprof_entry) {
        return Err(violation(format!("{RESULT_INFO}: {why}")));
    }
    if !zip.contains(&hprof_entry) {
        return Err(violation(format!(
            "{RESULT_INFO} names hprofEntry {hprof_entry:?}, which is not in the zip"
        )));
    }
    let extra = zip.extra().map_err(package_violation)?;
    let comment = zip.tool_comment();
    let private = comment.as_ref().is_some_and(|c| c.private)
        || reader::value(&extra, crate::PRIVATE_KEY) == Some("true");
    Ok(Contents {
        entries,
        manifest,
        extra,
        hprof_entry,
        dropped: comment.as_ref().and_then(|c| c.dropped),
        private,
    })
}

/// Decompresses the deflated entry `name` (its size and CRC-32 checked) into an anonymous
/// file to map: the parser wants the dump as one slice, and a dump need not fit in memory.
/// The first bytes must be what `expect` says (an HPROF header, a trace's first packet tag), and the declared size must be within
/// `unpack`'s limit and fit on the disk before anything is written, so a bomb of zeros
/// costs nothing; no more than the declared size is ever written (a stream that holds more
/// is damaged: sizes in a zip can lie). A local write failure (a full disk) is said as
/// such, not as a damaged package.
pub(crate) fn unpack_entry(
    zip: &PackageReader,
    name: &str,
    dir: &Path,
    unpack: &Unpack,
    expect: FileKind,
) -> Result<File> {
    let mut entry = zip.stream(name).map_err(package_violation)?;
    let damaged = |e: std::io::Error| violation(format!("{name} does not decompress: {e}"));
    let mut head = Vec::with_capacity(64);
    (&mut entry)
        .take(64)
        .read_to_end(&mut head)
        .map_err(damaged)?;
    if expect == FileKind::Hprof {
        trace_is_not_hprof(name, &head)?;
        crate::hprof::Header::parse(&head).map_err(|e| violation(format!("{name}: {e}")))?;
    } else if FileKind::of(&head) != expect {
        return Err(violation(format!(
            "{name} does not start as a Perfetto trace (its first byte is not 0x0a)"
        )));
    }

    // Where the caller says, else beside the package, else the system's temporary
    // directory.
    let (tmp, dir) = match &unpack.dir {
        Some(d) => (
            tempfile::tempfile_in(d).map_err(|e| Error::io(d, e))?,
            d.clone(),
        ),
        None => match tempfile::tempfile_in(dir) {
            Ok(f) => (f, dir.to_path_buf()),
            Err(_) => (
                tempfile::tempfile().map_err(|e| Error::io(dir, e))?,
                std::env::temp_dir(),
            ),
        },
    };
    let declared = zip.declared_size(name).unwrap_or(0);
    let what = format!("the hprof entry {name}");
    unpack
        .admit(&what, declared, &tmp)
        .map_err(|e| Error::io(&dir, e))?;
    let written = |e: std::io::Error| {
        Error::io(
            &dir,
            std::io::Error::new(e.kind(), format!("unpacking {name} to check it: {e}")),
        )
    };
    // hprof-shrink's own packages inflate on all cores, block by block (exactly the
    // declared size); anything else (or a block that does not inflate as it should) as
    // one stream, whose reader names the fault.
    #[cfg(unix)]
    if let Some(d) = zip.map_deflated(name).map_err(package_violation)? {
        let threads = crate::pipeline::ShrinkOptions::default().threads();
        if crate::package::inflate::inflate_to_file(&d, &tmp, threads).map_err(written)? {
            return Ok(tmp);
        }
        tmp.set_len(0).map_err(written)?;
    }
    let too_long = || {
        violation(format!(
            "{name} inflates to more than the {declared} bytes the zip declares"
        ))
    };
    if head.len() as u64 > declared {
        return Err(too_long());
    }
    let mut out = unpack.bounded(&what, &tmp, Some(declared));
    out.write_all(&head).map_err(written)?;
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = match entry.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(damaged(e)),
        };
        if out.written() + n as u64 > declared {
            return Err(too_long());
        }
        out.write_all(&buf[..n]).map_err(written)?;
    }
    Ok(tmp)
}

fn package_violation(e: PackageError) -> Error {
    violation(e.to_string())
}

/// How an input primitive array came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fate {
    Kept,
    Dropped,
    /// Same id, type and count, other elements: a private package's replaced value.
    Replaced,
}

/// Compares a shrunk dump with its input. Every record and sub-record must come out byte
/// for byte and in order, except primitive arrays (which may be dropped, emptied or
/// zeroed), a Bitmap's `mBuffer` and the DumpData `buffers` elements (which may name
/// another array with the same bytes). What was dropped must be droppable under `strip`
/// (when unknown, only String values must survive), and every live Bitmap's buffer that
/// the mode keeps must resolve to an array holding the original bytes.
/// A private package's String values and pixels must differ from the input's exactly
/// where [`crate::private`] replaces them, String values equal in the input equal in the
/// output and distinct ones distinct; a changed kept value is a violation.
pub fn compare(
    out: &Hprof<'_>,
    input: &Hprof<'_>,
    against: &Against,
    control: &Control,
) -> Result<Comparison> {
    let Against {
        strip,
        salvaged,
        private,
    } = *against;
    if out.header().raw != input.header().raw {
        return Err(violation(
            "the output's header differs from the input's".into(),
        ));
    }
    let threads = crate::pipeline::ShrinkOptions::default().threads();
    let opts = AnalyzeOptions {
        salvaged,
        private,
        ..AnalyzeOptions::new(StripMode::Bitmaps, DroppedMode::Remove, threads)
    };
    let analysis = analyze(input, &opts, control)?;
    let c = &analysis.collected;
    let id_size = input.id_size();
    let bitmap_at: FxHashMap<u64, usize> = analysis
        .info
        .targets
        .iter()
        .filter_map(|(class, t)| match t.target {
            Target::Bitmap {
                buffer: Some(f), ..
            } => Some((*class, Instance::data_start(id_size) + f.offset as usize)),
            _ => None,
        })
        .collect();
    let watched: FxHashSet<u64> = c
        .bitmap_buffers
        .iter()
        .map(|b| b.buffer_id)
        .chain(c.dump_data_images.iter().copied())
        .collect();

    let policy = strip.map(Policy::of);
    let mut walk = SideBySide {
        c,
        id_size,
        bitmap_at: &bitmap_at,
        watched: &watched,
        keeps_all: policy.is_some_and(|p| p.keeps_all),
        cmp: Comparison {
            strip,
            private,
            ..Default::default()
        },
        dropped_watched: FxHashSet::default(),
        bitmap_points_to: FxHashMap::default(),
        images_out: None,
        private: analysis.plan.private(),
        replaced: Replacements::default(),
    };
    walk.run(out, input, control)?;
    let SideBySide {
        mut cmp,
        dropped_watched,
        bitmap_points_to,
        images_out,
        ..
    } = walk;

    // Where the watched arrays are in the output: one more walk, over the (small) output.
    let mut out_arrays: FxHashMap<u64, Location> = FxHashMap::default();
    let mut locate = Locate {
        watched: &watched,
        found: &mut out_arrays,
        id_size,
    };
    out.accept(&mut locate, &mut control.ticker(Stage::Read, out.len()))?;
    out_arrays.retain(|id, _| !dropped_watched.contains(id));

    let buffers = Buffered {
        c,
        private,
        policy,
        in_data: input.data(),
        out_data: out.data(),
        out_arrays: &out_arrays,
    };
    buffers.check_bitmaps(&bitmap_points_to, &mut cmp)?;
    buffers.check_images(images_out, &mut cmp)?;
    cmp.string_values = c.string_values.len();
    Ok(cmp)
}

/// The side-by-side walk of [`compare`]: input and output records in step, and what it
/// saw of the arrays that Bitmaps and DumpData name.
struct SideBySide<'a> {
    c: &'a Collected,
    id_size: u8,
    /// Where a Bitmap class's `mBuffer` id is in its instances' raw bytes.
    bitmap_at: &'a FxHashMap<u64, usize>,
    /// The arrays Bitmaps and DumpData name.
    watched: &'a FxHashSet<u64>,
    keeps_all: bool,
    cmp: Comparison,
    // Watched arrays dropped (an emptied or zeroed one is still in the output, but is no
    // longer the buffer), and repointed references, seen in the side-by-side walk.
    dropped_watched: FxHashSet<u64>,
    bitmap_points_to: FxHashMap<u64, u64>,
    images_out: Option<Vec<u64>>,
    /// A private package: what is replaced.
    private: Option<&'a Private>,
    replaced: Replacements,
}

/// The String values a private package replaced, by digest: each input value one output
/// value and each output value one input value.
#[derive(Default)]
struct Replacements {
    to: FxHashMap<[u8; 16], [u8; 16]>,
    from: FxHashMap<[u8; 16], [u8; 16]>,
}

impl Replacements {
    /// Notes that `original` became `now`; false when that breaks the correspondence.
    fn note(&mut self, original: &[u8], now: &[u8]) -> bool {
        let (a, b) = (md5(original), md5(now));
        *self.to.entry(a).or_insert(b) == b && *self.from.entry(b).or_insert(a) == a
    }
}

/// Below this many bytes a replacement may equal its original by chance (a 1-byte
/// String's is its bytes XORed with a constant of the key); from it on, by a chance of
/// 2^-64 or less.
const SURELY_CHANGED: usize = 8;

type Outs<'o> = std::iter::Peekable<Events<'o>>;

impl SideBySide<'_> {
    fn run(&mut self, out: &Hprof<'_>, input: &Hprof<'_>, control: &Control) -> Result<()> {
        let mut outs = Events::new(out).peekable();
        let mut ticker = control.ticker(Stage::Read, input.len());
        for ev in Events::new(input) {
            let ev = ev?;
            match ev {
                Event::Record(r) => {
                    ticker.tick(r.offset)?;
                    match outs.next().transpose()? {
                        Some(Event::Record(o)) if o.raw == r.raw => {}
                        other => {
                            return Err(violation_at(r.offset, r.tag(), format!(
                                "record at input offset {} ({}) is {}",
                                r.offset,
                                r.tag(),
                                describe(other.as_ref())
                            )))
                        }
                    }
                }
                Event::SegmentBegin(r) => match outs.next().transpose()? {
                    Some(Event::SegmentBegin(o)) if o.tag == r.tag && o.time == r.time => {}
                    other => {
                        return Err(violation_at(r.offset, r.tag(), format!(
                            "heap dump segment at input offset {} is {}",
                            r.offset,
                            describe(other.as_ref())
                        )))
                    }
                },
                Event::SegmentEnd(r) => match outs.next().transpose()? {
                    Some(Event::SegmentEnd(_)) => {}
                    other => {
                        return Err(violation_at(r.offset, r.tag(), format!(
                            "the output's segment for the one at input offset {} does not end with it: it has {} more",
                            r.offset,
                            describe(other.as_ref())
                        )))
                    }
                },
                Event::Sub(s) => {
                    ticker.tick(s.offset)?;
                    if let Sub::PrimitiveArray(a) = &s.kind {
                        self.primitive_array(&s, a, &mut outs)?;
                    } else {
                        self.other_sub(&s, &mut outs)?;
                    }
                }
            }
        }
        if let Some(extra) = outs.next() {
            let extra = extra?;
            return Err(violation(format!(
                "the output has {} past the end of the input",
                describe(Some(&extra))
            )));
        }
        Ok(())
    }

    /// An input primitive array: kept (the output's next sub-record is it), or dropped,
    /// which the mode must allow.
    fn primitive_array(
        &mut self,
        s: &SubRecord<'_>,
        a: &PrimitiveArray<'_>,
        outs: &mut Outs<'_>,
    ) -> Result<()> {
        let fate = match outs.peek() {
            Some(Ok(Event::Sub(o))) if o.object_id() == Some(a.id) && o.tag() == s.tag() => {
                let o = o.clone();
                outs.next();
                let fate = array_fate(s, a, &o, self.id_size, self.private.is_some())?;
                if let (Some(p), Sub::PrimitiveArray(b)) = (self.private, &o.kind) {
                    self.check_private(p, s, a, b.data, fate)?;
                }
                fate
            }
            _ => Fate::Dropped,
        };
        match fate {
            Fate::Kept | Fate::Replaced => self.cmp.kept_arrays += 1,
            Fate::Dropped => {
                if self.watched.contains(&a.id) {
                    self.dropped_watched.insert(a.id);
                }
                self.cmp.dropped_arrays += 1;
                self.cmp.dropped_bytes += a.data.len() as u64;
                if self.keeps_all {
                    return Err(violation_at(
                        s.offset,
                        Tag::heap(s.tag()),
                        format!(
                            "{} array 0x{:X} at input offset {} was dropped under --strip none",
                            a.element_type.name(),
                            a.id,
                            s.offset
                        ),
                    ));
                }
                if self.c.string_values.contains(a.id) {
                    return Err(violation_at(
                        s.offset,
                        Tag::heap(s.tag()),
                        format!(
                            "String value array 0x{:X} at input offset {} was dropped",
                            a.id, s.offset
                        ),
                    ));
                }
            }
        }
        Ok(())
    }

    /// A kept array of a private package: replaced where the plan replaces, as it was
    /// elsewhere; a replaced String value in correspondence with its original.
    fn check_private(
        &mut self,
        p: &Private,
        s: &SubRecord<'_>,
        a: &PrimitiveArray<'_>,
        now: &[u8],
        fate: Fate,
    ) -> Result<()> {
        let how = if self.c.string_values.contains(a.id) {
            KeptAs::String
        } else {
            KeptAs::Other
        };
        let at = |what: String| {
            violation_at(
                s.offset,
                Tag::heap(s.tag()),
                format!(
                    "{} array 0x{:X} at input offset {} {what}",
                    a.element_type.name(),
                    a.id,
                    s.offset
                ),
            )
        };
        match (p.replaced(a.id, how, a.data), fate) {
            (None, Fate::Replaced) => Err(at(
                "is a value a private package keeps as it is, but its bytes changed".into(),
            )),
            (Some(what), Fate::Kept) if a.data.len() >= SURELY_CHANGED => Err(at(format!(
                "is left as it was: a private package replaces {}",
                match what {
                    Replaced::String => "every String value but the kept ones",
                    Replaced::Pixels => "every Bitmap's pixels",
                }
            ))),
            (Some(Replaced::String), _) => {
                if !self.replaced.note(a.data, now) {
                    return Err(at(
                        "is replaced out of step: equal values must stay equal, distinct ones distinct"
                            .into(),
                    ));
                }
                self.cmp.replaced_strings += 1;
                Ok(())
            }
            (Some(Replaced::Pixels), _) => {
                self.cmp.replaced_pixels += 1;
                Ok(())
            }
            (None, _) => Ok(()),
        }
    }

    /// Any other input sub-record: the output's next one, byte for byte, except a Bitmap's
    /// `mBuffer` and the DumpData `buffers` elements.
    fn other_sub(&mut self, s: &SubRecord<'_>, outs: &mut Outs<'_>) -> Result<()> {
        let id_size = self.id_size;
        let o = match outs.next().transpose()? {
            Some(Event::Sub(o)) => o,
            other => {
                return Err(violation_at(
                    s.offset,
                    Tag::heap(s.tag()),
                    format!(
                        "{} at input offset {} is {}",
                        crate::hprof::tags::heap_tag_name(s.tag()),
                        s.offset,
                        describe(other.as_ref())
                    ),
                ))
            }
        };
        if o.raw == s.raw {
            return Ok(());
        }
        let differs = || {
            violation_at(
                s.offset,
                Tag::heap(s.tag()),
                format!(
                    "{} at input offset {} differs in the output (offset {})",
                    tags::heap_tag_name(s.tag()),
                    s.offset,
                    o.offset
                ),
            )
        };
        match (&s.kind, &o.kind) {
            (Sub::Instance(i), Sub::Instance(_)) if self.bitmap_at.contains_key(&i.class_id) => {
                let at = self.bitmap_at[&i.class_id];
                let n = id_size as usize;
                if o.raw.len() != s.raw.len()
                    || o.raw[..at] != s.raw[..at]
                    || o.raw[at + n..] != s.raw[at + n..]
                {
                    return Err(differs());
                }
                let new = crate::hprof::id_at(o.raw, at, id_size).unwrap_or(0);
                self.bitmap_points_to.insert(i.id, new);
                self.cmp.repointed_bitmaps += 1;
            }
            (Sub::ObjectArray(a), Sub::ObjectArray(b))
                if Some(a.id) == self.c.dump_data_buffers && a.count == b.count =>
            {
                let head = ObjectArray::elements_start(id_size);
                if o.raw[..head] != s.raw[..head] {
                    return Err(differs());
                }
                self.images_out = Some(b.element_ids().collect());
                self.cmp.repointed_images += a
                    .element_ids()
                    .zip(b.element_ids())
                    .filter(|(x, y)| x != y)
                    .count() as u64;
            }
            _ => return Err(differs()),
        }
        Ok(())
    }
}

/// The last checks of [`compare`]: each Bitmap's buffer, and the DumpData images, found in
/// the output with their original bytes where the mode keeps them.
struct Buffered<'a> {
    c: &'a Collected,
    /// A private package: a buffer's bytes are replaced, only its length is the original's.
    private: bool,
    policy: Option<Policy>,
    in_data: &'a [u8],
    out_data: &'a [u8],
    /// Where the watched arrays that the output still holds are in it.
    out_arrays: &'a FxHashMap<u64, Location>,
}

impl Buffered<'_> {
    /// Whether a kept buffer holds what it must: the original's bytes, or in a private
    /// package as many.
    fn same(&self, now: &[u8], original: &[u8]) -> bool {
        if self.private {
            now.len() == original.len()
        } else {
            now == original
        }
    }

    fn in_bytes(&self, id: u64) -> Option<&[u8]> {
        self.c.arrays.get(&id).map(|l| l.bytes(self.in_data))
    }

    fn check_bitmaps(
        &self,
        bitmap_points_to: &FxHashMap<u64, u64>,
        cmp: &mut Comparison,
    ) -> Result<()> {
        let c = self.c;
        let out_data = self.out_data;
        // Contents among live buffers, to tell a unique buffer (droppable in duplicates mode).
        let mut contents: FxHashMap<(u64, [u8; 16]), u32> = FxHashMap::default();
        let mut seen = FxHashSet::default();
        for b in &c.bitmap_buffers {
            if seen.insert(b.buffer_id) {
                if let Some(bytes) = self.in_bytes(b.buffer_id) {
                    *contents
                        .entry((bytes.len() as u64, md5(bytes)))
                        .or_default() += 1;
                }
            }
        }
        let must_resolve = |original: &[u8]| match self.policy.map(|p| p.buffers) {
            Some(Buffers::All) => true,
            Some(Buffers::Duplicated) => contents
                .get(&(original.len() as u64, md5(original)))
                .is_some_and(|n| *n > 1),
            _ => false,
        };
        let instance = Tag::heap(tags::INSTANCE_DUMP);
        for b in &c.bitmap_buffers {
            cmp.bitmaps_checked += 1;
            let original = self.in_bytes(b.buffer_id).ok_or_else(|| {
                violation_at(
                    b.instance_offset,
                    instance,
                    format!("Bitmap 0x{:X}'s buffer is not in the input", b.bitmap_id),
                )
            })?;
            let now = bitmap_points_to
                .get(&b.bitmap_id)
                .copied()
                .unwrap_or(b.buffer_id);
            match self.out_arrays.get(&now) {
                Some(loc) if self.same(loc.bytes(out_data), original) => {}
                Some(_) => {
                    return Err(violation_at(b.instance_offset, instance, format!(
                        "Bitmap 0x{:X} (input offset {}) names buffer 0x{now:X}, whose bytes differ from its original buffer 0x{:X}",
                        b.bitmap_id, b.instance_offset, b.buffer_id
                    )))
                }
                None if must_resolve(original) => {
                    return Err(violation_at(b.instance_offset, instance, format!(
                        "Bitmap 0x{:X} (input offset {}) names buffer 0x{now:X}, which is not in the output",
                        b.bitmap_id, b.instance_offset
                    )))
                }
                None => {}
            }
        }
        Ok(())
    }

    fn check_images(&self, images_out: Option<Vec<u64>>, cmp: &mut Comparison) -> Result<()> {
        let c = self.c;
        // Under a mode that keeps everything, the walk above already found every array.
        if self.policy.is_some_and(|p| p.images && !p.keeps_all) {
            let now = images_out.unwrap_or_else(|| c.dump_data_images.clone());
            for (orig, new) in c.dump_data_images.iter().zip(now) {
                cmp.images_checked += 1;
                let original = self.in_bytes(*orig).unwrap_or_default();
                let now = self.out_arrays.get(&new).map(|l| l.bytes(self.out_data));
                if !now.is_some_and(|now| self.same(now, original)) {
                    return Err(violation(format!(
                        "DumpData image 0x{orig:X} is not in the output with its bytes (element now 0x{new:X})"
                    )));
                }
            }
        }
        Ok(())
    }
}

/// How the input array `s` came out as `o`; in a `private` package, other elements of the
/// same count are a replacement (which [`SideBySide::check_private`] judges).
fn array_fate(
    s: &SubRecord<'_>,
    a: &PrimitiveArray<'_>,
    o: &SubRecord<'_>,
    id_size: u8,
    private: bool,
) -> Result<Fate> {
    if o.raw == s.raw {
        return Ok(Fate::Kept);
    }
    let head = PrimitiveArray::header_len(id_size);
    if let Sub::PrimitiveArray(b) = &o.kind {
        let same_head =
            |x: &[u8], y: &[u8]| x[..head - 5] == y[..head - 5] && x[head - 1] == y[head - 1];
        if same_head(o.raw, s.raw) {
            if b.count == 0 {
                return Ok(Fate::Dropped);
            }
            if b.count == a.count && b.data.iter().all(|&x| x == 0) {
                return Ok(Fate::Dropped);
            }
            if private && b.count == a.count {
                return Ok(Fate::Replaced);
            }
        }
    }
    Err(violation_at(s.offset, Tag::heap(s.tag()), format!(
        "{} array 0x{:X} at input offset {} changed in the output (offset {}) in a way no --dropped mode makes",
        a.element_type.name(),
        a.id,
        s.offset,
        o.offset
    )))
}

fn describe(ev: Option<&Event<'_>>) -> String {
    match ev {
        None => "missing from the output (it ends early)".into(),
        Some(Event::Record(r)) => format!("a {} record at output offset {}", r.tag(), r.offset),
        Some(Event::SegmentBegin(r)) => {
            format!("a heap dump segment at output offset {}", r.offset)
        }
        Some(Event::SegmentEnd(_)) => "the end of a segment in the output".into(),
        Some(Event::Sub(s)) => format!(
            "a {} at output offset {}",
            tags::heap_tag_name(s.tag()),
            s.offset
        ),
    }
}

struct Locate<'a> {
    watched: &'a FxHashSet<u64>,
    found: &'a mut FxHashMap<u64, Location>,
    id_size: u8,
}

impl Visitor for Locate<'_> {
    type Error = Error;

    fn sub_record(&mut self, sub: &SubRecord<'_>) -> Result<()> {
        if let Sub::PrimitiveArray(a) = &sub.kind {
            if self.watched.contains(&a.id) {
                self.found.insert(
                    a.id,
                    Location {
                        offset: sub.offset,
                        data: sub.offset + PrimitiveArray::header_len(self.id_size) as u64,
                        len: a.data.len() as u64,
                        ty: a.element_type,
                    },
                );
            }
        }
        Ok(())
    }
}
