//! A package holding a Perfetto heap-graph trace instead of an HPROF dump: `result.info`
//! (its `hprofEntry` naming the trace), the trace as it is (nothing to shrink: a heap
//! graph has no field values or array contents) and `extra.info`. Written from a trace
//! file, and opened with its structure checked as [`crate::verify`] checks a package's;
//! what the trace itself holds is the analyzer's trace reader's to check (the core reads
//! no trace).

use std::fs::File;
use std::io::{BufWriter, Read, Write};
use std::path::Path;

use crate::error::{Error, Result};
use crate::hprof::MappedFile;
use crate::kind::FileKind;
use crate::output::{check_destination, same_file, Named, PendingFile, Writeback};
use crate::package::manifest::{self, Manifest, ManifestValues, EXTRA_INFO, RESULT_INFO};
use crate::package::reader::{self, MappedEntry, PackageReader};
use crate::package::PackageWriter;
use crate::pipeline::ShrinkOptions;
use crate::space::Unpack;

/// What a trace package's zip comment says after the tool's name and version: no strip
/// mode (nothing was stripped), so readers take it as not shrunk.
pub const COMMENT_WORD: &str = "trace";

/// The endings a trace's entry name keeps; another name gets `.perfetto-trace` after it.
pub const TRACE_ENDINGS: [&str; 2] = [".pftrace", ".perfetto-trace"];

/// A trace packaged.
#[derive(Debug)]
pub struct Packaged {
    /// `result.info` as written.
    pub manifest: Manifest,
    /// Placeholders written, each naming its flag.
    pub warnings: Vec<String>,
    /// The trace's bytes (the entry's, uncompressed).
    pub trace_bytes: u64,
    /// The zip's bytes.
    pub zip_bytes: u64,
}

/// The entry name of the trace at `input`: its file name when it ends as a trace's does,
/// else that name with `.perfetto-trace` after it.
pub fn entry_name(input: &Path) -> String {
    let name: String = input
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "heap".into())
        .chars()
        .map(|c| if c == '\\' || c.is_control() { '_' } else { c })
        .collect();
    if TRACE_ENDINGS.iter().any(|e| name.ends_with(e)) {
        name
    } else {
        format!("{name}.perfetto-trace")
    }
}

/// Packages the trace at `input` into `out`: `result.info` (the caller's values, else
/// placeholders with a warning each), the trace as it is, deflated at `opts.level` (0
/// stores) on `opts.threads()` cores, and `extra.info` (`opts.extra`). Written under a
/// temporary name and renamed into place when complete. The input must start as a trace
/// does ([`FileKind::Trace`]); that it is one process's heap graph is the caller's to
/// check (the analyzer's trace reader), before calling. Options that change a dump's
/// content (a strip mode that drops arrays, `private`, `salvage`) have nothing to act on
/// in a trace and are refused, rather than ignored.
pub fn write(input: &Path, out: &Path, opts: &ShrinkOptions) -> Result<Packaged> {
    check_options(opts)?;
    if same_file(input, out) {
        return Err(Error::Invalid(format!(
            "the output {} is the input: it would be overwritten",
            out.display()
        )));
    }
    check_destination(out)?;
    let map = MappedFile::open(input)?;
    let bytes = map.bytes();
    if FileKind::of(bytes) != FileKind::Trace {
        return Err(Error::Invalid(format!(
            "{} is not a Perfetto trace (its first byte is not 0x0a)",
            input.display()
        )));
    }
    let entry = match &opts.hprof_entry {
        Some(name) => name.clone(),
        None => entry_name(input),
    };
    manifest::check_entry_name(&entry).map_err(|e| Error::Invalid(e.to_string()))?;
    let mut warnings = Vec::new();
    let manifest = manifest::resolve(
        &opts.manifest,
        &ManifestValues::default(),
        entry.clone(),
        &mut warnings,
    );
    // The file's time stands for the dump's (a trace's clock counts from the device's
    // boot): the same file gives the same zip.
    let timestamp_ms = std::fs::metadata(input)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_millis() as u64);
    let mut pending = PendingFile::create(out)?;
    {
        let file =
            BufWriter::with_capacity(1 << 20, Named::new(Writeback::new(pending.file()), out));
        let mut package = PackageWriter::new(file, opts.level, timestamp_ms)?;
        package.add_manifest(&manifest)?;
        package.add_stream(&entry, opts.threads(), bytes.len() as u64, |w| {
            w.write_all(bytes).map_err(Error::Write)
        })?;
        package.add_extra(&opts.extra)?;
        let comment = format!("hprof-shrink {} {COMMENT_WORD}", env!("CARGO_PKG_VERSION"));
        package.finish(&comment)?.flush().map_err(Error::Write)?;
    }
    // A trace rewritten while it was read says nothing about itself.
    map.check_intact()?;
    let zip_bytes = pending.commit()?;
    Ok(Packaged {
        manifest,
        warnings,
        trace_bytes: bytes.len() as u64,
        zip_bytes,
    })
}

/// Refuses the options that act on a dump's content: a trace has none of it.
fn check_options(opts: &ShrinkOptions) -> Result<()> {
    let defaults = ShrinkOptions::default();
    let refused = [
        (
            opts.strip != defaults.strip,
            "--strip (a trace holds no array contents to drop)",
        ),
        (
            opts.dropped != defaults.dropped,
            "--dropped (a trace holds no array contents to drop)",
        ),
        (
            opts.private,
            "--private (a trace holds no String values or pixels to replace)",
        ),
        (
            opts.salvage,
            "--salvage (a trace cut off is not one to send: its last packet is lost)",
        ),
    ];
    match refused.iter().find(|(given, _)| *given) {
        Some((_, what)) => Err(Error::Invalid(format!(
            "{what}: a Perfetto trace is packaged as it is"
        ))),
        None => Ok(()),
    }
}

/// A trace package opened: its structure checked, the trace's bytes at hand.
pub struct TracePackage {
    /// `result.info`'s pairs, in file order.
    pub manifest: Vec<(String, String)>,
    /// `extra.info`'s pairs, in file order (empty without one).
    pub extra: Vec<(String, String)>,
    /// The trace's entry name (`hprofEntry`).
    pub entry: String,
    /// The zip comment or `extra.info` says private.
    pub private: bool,
    trace: Trace,
}

/// The trace's bytes: a stored entry in place, a deflated one unpacked.
enum Trace {
    Stored(MappedEntry),
    Unpacked(MappedFile),
}

impl TracePackage {
    /// The trace, as the zip holds it uncompressed (its size and CRC-32 checked).
    pub fn trace(&self) -> &[u8] {
        match &self.trace {
            Trace::Stored(e) => e.bytes(),
            Trace::Unpacked(m) => m.bytes(),
        }
    }
}

/// Whether the package's entry `name` starts as a Perfetto trace does: the test that
/// sends a package to [`open`] rather than to the HPROF readers. False for an entry that
/// cannot be read (the HPROF readers say why).
pub fn holds_trace(zip: &PackageReader, name: &str) -> bool {
    let Ok(stream) = zip.stream(name) else {
        return false;
    };
    let mut head = Vec::with_capacity(FileKind::PREFIX_LEN);
    stream
        .take(FileKind::PREFIX_LEN as u64)
        .read_to_end(&mut head)
        .is_ok()
        && FileKind::of(&head) == FileKind::Trace
}

/// The package at `zip_path` when its dump entry (the one `result.info`'s `hprofEntry`
/// names) is a trace; `None` when it is not (or `result.info` names none: the HPROF
/// readers say what is wrong). Checked as `verify` checks a package (`result.info` first,
/// its four keys once each, `hprofEntry` a plain name in the zip), and more: nothing
/// beside `result.info`, the trace and `extra.info` (a second trace would be a second
/// heap, and which one is the package's would be a guess). A deflated trace is unpacked
/// into an unnamed file within `unpack`'s bounds (its declared size admitted before a byte
/// is written, never more than that written: an error of kind `FileTooLarge` or
/// `StorageFull` past them), a stored one mapped in place.
pub fn open(zip_path: &Path, unpack: &Unpack) -> Result<Option<TracePackage>> {
    let zip = PackageReader::open(zip_path).map_err(|e| violation(zip_path, e))?;
    let Some(entry) = zip
        .manifest()
        .ok()
        .and_then(|m| reader::value(&m, "hprofEntry").map(str::to_string))
    else {
        return Ok(None);
    };
    if !zip.contains(&entry) || !holds_trace(&zip, &entry) {
        return Ok(None);
    }
    open_checked(&zip, zip_path, unpack).map(Some)
}

/// [`open`] of a package already known to hold a trace ([`holds_trace`]).
pub fn open_checked(zip: &PackageReader, zip_path: &Path, unpack: &Unpack) -> Result<TracePackage> {
    let contents = crate::verify::checked_contents(zip)?;
    let entry = contents.hprof_entry;
    if let Some(other) = contents
        .entries
        .iter()
        .find(|n| ![RESULT_INFO, EXTRA_INFO, entry.as_str()].contains(&n.as_str()))
    {
        return Err(crate::verify::violation(format!(
            "the package holds {other:?} beside its trace {entry:?}: a trace's package holds \
             {RESULT_INFO}, the trace and {EXTRA_INFO} only"
        )));
    }
    let private = zip.tool_comment().is_some_and(|c| c.private)
        || reader::value(&contents.extra, crate::PRIVATE_KEY) == Some("true");
    let trace = match zip.map_stored(&entry).map_err(|e| violation(zip_path, e))? {
        Some(mapped) => Trace::Stored(mapped),
        None => {
            let dir = zip_path
                .parent()
                .filter(|p| !p.as_os_str().is_empty())
                .unwrap_or(Path::new("."));
            let file: File =
                crate::verify::unpack_entry(zip, &entry, dir, unpack, FileKind::Trace)?;
            Trace::Unpacked(MappedFile::from_file(&file, zip_path.join(&entry))?)
        }
    };
    Ok(TracePackage {
        manifest: contents.manifest,
        extra: contents.extra,
        entry,
        private,
        trace,
    })
}

fn violation(zip_path: &Path, e: reader::PackageError) -> Error {
    crate::verify::violation(format!("{}: {e}", zip_path.display()))
}
