//! What `analyze` reads: a package zip (its hprof entry, `result.info`, `extra.info`), a
//! raw `.hprof`, a `.hprof.gz`, or a Perfetto trace holding a heap graph (laid out as a
//! dump through the heap-source seam), told apart by their first bytes. The dump ends up
//! mapped: a raw dump or a stored entry in place, anything compressed inflated once into
//! an unnamed temporary file (random access is what a graph walk needs).

use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use hprof_shrink_core::hprof::{open_regular, MappedFile};
use hprof_shrink_core::kind::FileKind;
use hprof_shrink_core::package::{trace, MappedEntry, PackageReader};
use hprof_shrink_core::space::Unpack;

use super::encode;
use super::perfetto::{self, wire, TraceSource};
use crate::base::error::AnalyzeError;

/// The dump's bytes, mapped: a file, or a package's stored entry.
pub enum Bytes {
    /// A raw dump, or a compressed one inflated into an unnamed temporary file.
    File(MappedFile),
    /// A package's dump entry, stored (not deflated), mapped in place.
    Entry(MappedEntry),
}

impl Bytes {
    /// The dump's bytes.
    pub fn bytes(&self) -> &[u8] {
        match self {
            Bytes::File(m) => m.bytes(),
            Bytes::Entry(e) => e.bytes(),
        }
    }
}

/// An input opened: the dump's bytes and what the file says around them.
pub struct Input {
    /// The dump.
    pub bytes: Bytes,
    /// `package`, `hprof`, `hprof.gz`, `perfetto` (a trace's heap graph) or `source` (a
    /// heap described through the seam).
    pub kind: &'static str,
    /// A package's `result.info` pairs, in file order; empty for a raw dump.
    pub manifest: Vec<(String, String)>,
    /// A package's `extra.info` pairs, in file order; a trace's app (`processName`,
    /// `packageName`, `versionCode`: [`perfetto::about::App::pairs`]); empty for a raw dump.
    pub extra: Vec<(String, String)>,
    /// A package whose zip comment says hprof-shrink dropped arrays from it.
    pub shrunk: bool,
    /// A private package: its zip comment or `extra.info` says so.
    pub private: bool,
    /// Bytes of the compressed file, when the dump was inflated.
    pub compressed_bytes: Option<u64>,
    /// What the analysis calls the format when the file is not HPROF (a Perfetto trace
    /// laid out as one); `None`: the dump's own header says.
    pub format: Option<&'static str>,
    /// Whether the heap holds its objects' field values: false for a heap graph, which
    /// holds references only (the rules that read values cannot run on it).
    pub field_values: bool,
    /// The class objects' own sizes, by class id, where the heap's description gives them
    /// (a heap graph's `self_size`); the others', and a dump's, are their static values
    /// and java.lang.Class's instance size.
    pub class_sizes: crate::base::map::Map<u64, u64>,
}

impl Input {
    /// The first `result.info` value of `key`.
    pub fn manifest_value(&self, key: &str) -> Option<&str> {
        self.manifest
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }
}

/// Opens `path` (a package, a `.hprof` or a `.hprof.gz`, told apart by their first bytes),
/// inflating without bounds beyond the disk's: [`open_within`] is a server's.
pub fn open(path: &Path) -> Result<Input, AnalyzeError> {
    open_within(path, &Unpack::default())
}

/// [`open`], inflating within `unpack`'s bounds (a server's: the most a dump may inflate
/// to, the free space to keep, where the temporary file goes): a package that declares
/// more than the limit is refused before a byte is written, a stream is cut at the limit
/// (or at what its zip declares). An error past a bound is an [`AnalyzeError::Io`] of
/// kind [`std::io::ErrorKind::FileTooLarge`] or [`std::io::ErrorKind::StorageFull`].
pub fn open_within(path: &Path, unpack: &Unpack) -> Result<Input, AnalyzeError> {
    open_process(path, unpack, None)
}

/// [`open_within`], a Perfetto trace's heap graph of process `pid` (`None`: the trace's
/// only one). `pid` for an input that is not a trace is an [`AnalyzeError::PidOfDump`]:
/// it would pick nothing, and saying so beats ignoring what was asked.
pub fn open_process(path: &Path, unpack: &Unpack, pid: Option<i32>) -> Result<Input, AnalyzeError> {
    let not_a_trace = || match pid {
        Some(_) => Err(AnalyzeError::PidOfDump {
            path: path.to_path_buf(),
        }),
        None => Ok(()),
    };
    let io = |source| AnalyzeError::Io {
        path: path.to_path_buf(),
        source,
    };
    let (mut file, start, n) = sniff(path)?;
    let start = &start[..n];
    if is_zip(start) {
        return open_package(path, unpack, pid);
    }
    if is_gzip(start) {
        let len = file.metadata().map_err(io)?.len();
        file.seek(SeekFrom::Start(0)).map_err(io)?;
        let decoder =
            flate2::read::MultiGzDecoder::new(std::io::BufReader::with_capacity(1 << 16, file));
        let bytes = inflate(decoder, path, None, unpack)?;
        if FileKind::of(bytes.bytes()) == FileKind::Trace && wire::is_trace(bytes.bytes()) {
            // A gzip'd trace: laid out from its inflated copy, which goes when it is.
            let mut input = open_trace(path, bytes.bytes(), unpack, pid, Vec::new())?;
            input.compressed_bytes = Some(len);
            return Ok(input);
        }
        not_a_trace()?;
        return Ok(Input {
            bytes,
            kind: "hprof.gz",
            manifest: Vec::new(),
            extra: Vec::new(),
            shrunk: false,
            private: false,
            compressed_bytes: Some(len),
            format: None,
            field_values: true,
            class_sizes: Default::default(),
        });
    }
    if FileKind::of(start) == FileKind::Hprof {
        not_a_trace()?;
        return Ok(Input {
            bytes: Bytes::File(MappedFile::from_file(&file, path.to_path_buf())?),
            kind: "hprof",
            manifest: Vec::new(),
            extra: Vec::new(),
            shrunk: false,
            private: false,
            compressed_bytes: None,
            format: None,
            field_values: true,
            class_sizes: Default::default(),
        });
    }
    if FileKind::of(start) == FileKind::Trace {
        let mapped = MappedFile::from_file(&file, path.to_path_buf())?;
        if wire::is_trace(mapped.bytes()) {
            return open_trace(path, mapped.bytes(), unpack, pid, Vec::new());
        }
    }
    Err(AnalyzeError::Unknown {
        path: path.to_path_buf(),
        start: String::from_utf8_lossy(start).into_owned(),
    })
}

/// A Perfetto trace's heap graph (of process `pid`, or its only one; `bytes`, the trace,
/// read from `path`), laid out as a dump within `unpack`'s bounds; its extra is `given`
/// (a package's `extra.info`) before what the trace says of its app.
fn open_trace(
    path: &Path,
    bytes: &[u8],
    unpack: &Unpack,
    pid: Option<i32>,
    given: Vec<(String, String)>,
) -> Result<Input, AnalyzeError> {
    let in_file = |e: AnalyzeError| AnalyzeError::InFile {
        path: path.to_path_buf(),
        source: Box::new(e),
    };
    let name = path.display().to_string();
    let source = TraceSource::open(&name, bytes, pid).map_err(|e| in_file(e.into()))?;
    // What the trace says of its app stands where a package's extra.info does.
    let app = perfetto::about::app(bytes, source.pid()).map_err(|e| in_file(e.into()))?;
    let mut input = encode::to_input(&source, unpack)?;
    input.extra = app.under(given);
    input.kind = "perfetto";
    input.format = Some(perfetto::FORMAT);
    Ok(input)
}

/// A trace's package (`pkg`, at `path`): its structure checked as `verify` checks a
/// package's, the trace unpacked within `unpack`'s bounds and read as a raw trace is;
/// `result.info` is the input's manifest, and `extra.info` its extra before what the trace
/// says of its app ([`perfetto::about::App::under`]: the package's word wins, key by key).
fn open_trace_package(
    path: &Path,
    pkg: &PackageReader,
    unpack: &Unpack,
    pid: Option<i32>,
) -> Result<Input, AnalyzeError> {
    let opened = trace::open_checked(pkg, path, unpack).map_err(|e| core_error(path, e))?;
    let label = path.join(&opened.entry);
    let mut input = open_trace(&label, opened.trace(), unpack, pid, opened.extra.clone())?;
    input.manifest = opened.manifest.clone();
    input.private = opened.private;
    input.compressed_bytes = std::fs::metadata(path).ok().map(|m| m.len());
    Ok(input)
}

/// A core error of a trace's package: an I/O error as the analyzer's own (so that a bound
/// passed keeps its kind), the rest as what is wrong with the package.
fn core_error(path: &Path, e: hprof_shrink_core::Error) -> AnalyzeError {
    use hprof_shrink_core::hprof::FormatError;
    match e {
        hprof_shrink_core::Error::Io(f) | hprof_shrink_core::Error::Format(FormatError::Io(f)) => {
            AnalyzeError::Io {
                path: f.path,
                source: f.source,
            }
        }
        other => AnalyzeError::TracePackage {
            path: path.to_path_buf(),
            source: Box::new(other),
        },
    }
}

/// What an input holds, as far as comparing inputs needs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HeapKind {
    /// An HPROF dump (raw, gzip'd or in a package).
    Hprof,
    /// A Perfetto trace (raw or gzip'd).
    Trace,
    /// Neither: its opening says what it is not.
    Other,
}

/// The kind of the input at `path`, from its first bytes (inflated when it is compressed,
/// at most [`wire::SNIFF_WINDOW`] of them): cheap enough to ask of every input before
/// any is analyzed.
pub fn heap_kind(path: &Path) -> Result<HeapKind, AnalyzeError> {
    let start = head(path, wire::SNIFF_WINDOW)?;
    Ok(if FileKind::of(&start) == FileKind::Hprof {
        HeapKind::Hprof
    } else if wire::starts_as_trace(&start) {
        HeapKind::Trace
    } else {
        HeapKind::Other
    })
}

/// Refuses `paths` (the inputs of `command`) when some are HPROF dumps and some traces:
/// before any is analyzed. Inputs of neither kind are left to their opening's error.
pub fn one_kind(command: &'static str, paths: &[PathBuf]) -> Result<(), AnalyzeError> {
    let (mut dump, mut trace) = (None, None);
    for path in paths {
        match heap_kind(path)? {
            HeapKind::Hprof => dump = dump.or(Some(path)),
            HeapKind::Trace => trace = trace.or(Some(path)),
            HeapKind::Other => {}
        }
        if let (Some(dump), Some(trace)) = (dump, trace) {
            return Err(AnalyzeError::MixedKinds {
                command,
                dump: dump.clone(),
                trace: trace.clone(),
            });
        }
    }
    Ok(())
}

/// `path` opened (a regular file only), with its first bytes (how many were read): what
/// tells a package, a `.hprof.gz` and a `.hprof` apart.
fn sniff(path: &Path) -> Result<(File, [u8; FileKind::PREFIX_LEN], usize), AnalyzeError> {
    let io = |source| AnalyzeError::Io {
        path: path.to_path_buf(),
        source,
    };
    let mut file = open_regular(path).map_err(io)?;
    let mut start = [0u8; FileKind::PREFIX_LEN];
    let n = read_up_to(&mut file, &mut start).map_err(io)?;
    Ok((file, start, n))
}

/// A zip's first bytes: a local file header, or the end record of an empty zip.
fn is_zip(start: &[u8]) -> bool {
    FileKind::of(start).is_zip()
}

fn is_gzip(start: &[u8]) -> bool {
    FileKind::of(start) == FileKind::Gzip
}

fn read_up_to(file: &mut File, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match file.read(&mut buf[n..])? {
            0 => break,
            k => n += k,
        }
    }
    Ok(n)
}

/// The first `len` bytes (or fewer, if it is shorter) of the dump at `path`, a package,
/// a `.hprof.gz` or a `.hprof`, inflating no more than those: enough for its header
/// (what `growth` orders a directory's dumps by) without unpacking gigabytes.
pub fn head(path: &Path, len: usize) -> Result<Vec<u8>, AnalyzeError> {
    let io = |source| AnalyzeError::Io {
        path: path.to_path_buf(),
        source,
    };
    let (mut file, start, n) = sniff(path)?;
    let mut out = Vec::with_capacity(len);
    if is_zip(&start[..n]) {
        let pkg_err = |source| AnalyzeError::Package {
            path: path.to_path_buf(),
            source,
        };
        let pkg = PackageReader::open(path).map_err(pkg_err)?;
        let manifest = pkg.manifest().map_err(pkg_err)?;
        let entry = hprof_entry(&pkg, &manifest).map_err(pkg_err)?;
        let stream = pkg.stream(&entry).map_err(pkg_err)?;
        stream.take(len as u64).read_to_end(&mut out).map_err(io)?;
        return Ok(out);
    }
    file.seek(SeekFrom::Start(0)).map_err(io)?;
    if is_gzip(&start[..n]) {
        flate2::read::MultiGzDecoder::new(file)
            .take(len as u64)
            .read_to_end(&mut out)
            .map_err(io)?;
    } else {
        file.take(len as u64).read_to_end(&mut out).map_err(io)?;
    }
    Ok(out)
}

/// The package's hprof entry: the one its `result.info` names, else the first `.hprof`.
fn hprof_entry(
    pkg: &PackageReader,
    manifest: &[(String, String)],
) -> Result<String, hprof_shrink_core::package::PackageError> {
    manifest
        .iter()
        .find(|(k, _)| k == "hprofEntry")
        .map(|(_, v)| v.clone())
        .or_else(|| {
            pkg.names()
                .find(|n| n.ends_with(".hprof"))
                .map(str::to_string)
        })
        .ok_or_else(|| hprof_shrink_core::package::PackageError::Missing("hprof".into()))
}

/// A package: its HPROF entry, or the trace a trace's package holds (of process `pid`).
fn open_package(path: &Path, unpack: &Unpack, pid: Option<i32>) -> Result<Input, AnalyzeError> {
    let pkg_err = |source| AnalyzeError::Package {
        path: path.to_path_buf(),
        source,
    };
    let pkg = PackageReader::open(path).map_err(pkg_err)?;
    let manifest = pkg.manifest().map_err(pkg_err)?;
    let entry = hprof_entry(&pkg, &manifest).map_err(pkg_err)?;
    if trace::holds_trace(&pkg, &entry) {
        return open_trace_package(path, &pkg, unpack, pid);
    }
    if pid.is_some() {
        return Err(AnalyzeError::PidOfDump {
            path: path.to_path_buf(),
        });
    }
    let extra = pkg.extra().map_err(pkg_err)?;
    let shrunk = pkg.tool_comment().is_some_and(|c| {
        c.strip
            .is_some_and(|s| s != hprof_shrink_core::StripMode::None)
    });
    let private = pkg.tool_comment().is_some_and(|c| c.private)
        || extra
            .iter()
            .any(|(k, v)| k == hprof_shrink_core::PRIVATE_KEY && v == "true");
    let compressed = std::fs::metadata(path).ok().map(|m| m.len());
    let label = path.join(&entry);
    let bytes = match pkg.map_stored(&entry).map_err(pkg_err)? {
        Some(mapped) => Bytes::Entry(mapped),
        None => {
            // Within the limit and the free space before a byte is written; never more
            // than declared after (the stream's reader stops there too).
            let declared = pkg.declared_size(&entry).unwrap_or(0);
            let admitted = unpack.tempfile(None).and_then(|file| {
                unpack.admit(&format!("the hprof entry {entry}"), declared, &file)?;
                Ok(file)
            });
            let file = admitted.map_err(|source| AnalyzeError::Io {
                path: label.clone(),
                source,
            })?;
            let blocks = match pkg.map_deflated(&entry).map_err(pkg_err)? {
                Some(d) => inflate_mapped(&d, &label, &file)?,
                None => None,
            };
            match blocks {
                Some(bytes) => bytes,
                // Not hprof-shrink's blocks, or not what the directory says: read as one
                // stream, whose reader names the fault.
                None => {
                    file.set_len(0).map_err(|source| AnalyzeError::Io {
                        path: label.clone(),
                        source,
                    })?;
                    let stream = pkg.stream(&entry).map_err(pkg_err)?;
                    inflate_into(stream, &label, file, Some(declared), unpack)?
                }
            }
        }
    };
    Ok(Input {
        bytes,
        kind: "package",
        manifest,
        extra,
        shrunk,
        private,
        compressed_bytes: compressed,
        format: None,
        field_values: true,
        class_sizes: Default::default(),
    })
}

/// Inflates a deflated entry on all cores into `file` (each block written at its place)
/// and maps it; `None` when the entry is not made of hprof-shrink's independent blocks, or
/// does not inflate to the size and CRC-32 the directory declares.
fn inflate_mapped(
    d: &hprof_shrink_core::package::DeflatedEntry,
    label: &Path,
    file: &File,
) -> Result<Option<Bytes>, AnalyzeError> {
    let tmp = |source| AnalyzeError::Io {
        path: label.to_path_buf(),
        source,
    };
    let threads = rayon::current_num_threads();
    if !hprof_shrink_core::package::inflate::inflate_to_file(d, file, threads).map_err(tmp)? {
        return Ok(None);
    }
    Ok(Some(Bytes::File(MappedFile::from_file(
        file,
        PathBuf::from(label),
    )?)))
}

/// Inflates a stream into an unnamed temporary file and maps it.
fn inflate(
    from: impl Read,
    label: &Path,
    max: Option<u64>,
    unpack: &Unpack,
) -> Result<Bytes, AnalyzeError> {
    let file = unpack.tempfile(None).map_err(|source| AnalyzeError::Io {
        path: unpack.dir.clone().unwrap_or_else(std::env::temp_dir),
        source,
    })?;
    inflate_into(from, label, file, max, unpack)
}

/// Inflates a stream into `file`, at most `max` bytes (and `unpack`'s bounds), and maps it.
fn inflate_into(
    mut from: impl Read,
    label: &Path,
    file: File,
    max: Option<u64>,
    unpack: &Unpack,
) -> Result<Bytes, AnalyzeError> {
    let io = |source| AnalyzeError::Io {
        path: label.to_path_buf(),
        source,
    };
    let what = label.display().to_string();
    let mut out = std::io::BufWriter::with_capacity(1 << 20, unpack.bounded(&what, &file, max));
    std::io::copy(&mut from, &mut out).map_err(io)?;
    out.flush().map_err(io)?;
    drop(out);
    Ok(Bytes::File(MappedFile::from_file(
        &file,
        PathBuf::from(label),
    )?))
}
