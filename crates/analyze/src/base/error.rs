//! Why an analysis failed. Errors from the dump carry the format layer's byte offset and
//! record tag; the rest name the file.

use std::path::PathBuf;

use hprof_shrink_core::hprof::FormatError;
use hprof_shrink_core::package::PackageError;

/// Why an analysis (or a `diff`, a `growth`, a mapping's reading) failed.
#[derive(Debug, thiserror::Error)]
pub enum AnalyzeError {
    /// The dump's bytes break the HPROF format (the format layer's offset and tag).
    #[error(transparent)]
    Format(FormatError),

    /// A package (zip) that cannot be read.
    #[error("{path}: {source}")]
    Package {
        /// The package's file.
        path: PathBuf,
        /// What is wrong with it.
        #[source]
        source: PackageError,
    },

    /// Reading or writing a file failed.
    #[error("{path}: {source}")]
    Io {
        /// The file; empty where the error came without one (see [`AnalyzeError::in_file`]).
        path: PathBuf,
        /// The system's error.
        #[source]
        source: std::io::Error,
    },

    /// A package holding a Perfetto trace whose structure is wrong (a second entry beside
    /// the trace, a `result.info` that does not check, an entry that does not inflate).
    #[error("{path}: {source}")]
    TracePackage {
        /// The package's file.
        path: PathBuf,
        /// What is wrong with it.
        #[source]
        source: Box<hprof_shrink_core::Error>,
    },

    /// The file is none of the inputs the analyzer reads.
    #[error("{path}: not a heap dump, a .hprof.gz, a package zip or a Perfetto heap-graph trace ({})", if start.is_empty() { "the file is empty".to_string() } else { format!("it starts with {start:?}") })]
    Unknown {
        /// The file.
        path: PathBuf,
        /// Its first bytes, as lossy UTF-8; empty for an empty file.
        start: String,
    },

    /// A line of `--mapping` that is not R8/ProGuard's format.
    #[error("{path}:{line}: not an R8/ProGuard mapping line: {what}")]
    Mapping {
        /// The mapping file.
        path: PathBuf,
        /// The line's number, from 1.
        line: usize,
        /// What is wrong with it.
        what: String,
    },

    /// A `--mapping` file over the size the analyzer reads.
    #[error("{path}: the mapping file is {bytes} bytes, over the limit of {max}")]
    MappingTooLarge {
        /// The mapping file.
        path: PathBuf,
        /// Its size in bytes (or what was read of it).
        bytes: u64,
        /// The limit in bytes.
        max: u64,
    },

    /// A dump with more objects than a 32-bit node number holds (the objects counted).
    #[error("the dump holds {0} objects; the analyzer numbers at most 4,294,967,294")]
    TooManyObjects(u64),

    /// `--dump N` past the file's heap dumps.
    #[error("the file holds {found} heap dump{}: there is no dump {asked} (--dump counts from 1)", if *found == 1 { "" } else { "s" })]
    NoSuchDump {
        /// The dump asked for, from 1.
        asked: usize,
        /// Heap dumps in the file.
        found: usize,
    },

    /// `growth`: a dump's path tree over `--max-paths` nodes.
    #[error("{path}: the dump's path tree passed {limit} node{} (its objects are reached in too many different ways to compare; --max-paths raises the limit)", if *limit == 1 { "" } else { "s" })]
    TooManyPaths {
        /// The dump.
        path: PathBuf,
        /// The limit, in path nodes.
        limit: usize,
    },

    /// `--pid` for an input that is not a Perfetto trace.
    #[error("{path}: not a Perfetto trace, so --pid has no process to pick (an HPROF dump or package holds one process's heap)")]
    PidOfDump {
        /// The input.
        path: PathBuf,
    },

    /// Inputs of both kinds compared: HPROF dumps (or packages) and Perfetto traces.
    #[error("{dump} is an HPROF heap dump and {trace} a Perfetto heap graph: {command} compares inputs of one kind (a heap graph has no field values, so the leaks found and the sizes counted differ by format, not by heap)")]
    MixedKinds {
        /// The command (`diff`, `growth`).
        command: &'static str,
        /// The first HPROF input.
        dump: PathBuf,
        /// The first trace.
        trace: PathBuf,
    },

    /// The caller's [`Control`](hprof_shrink_core::Control) asked to stop.
    #[error("cancelled")]
    Cancelled,

    /// A Perfetto trace's heap graph that cannot be read (the byte offset in the trace).
    #[error(transparent)]
    Trace(#[from] TraceError),

    /// An error of a dump's content, with the file it is in (see [`AnalyzeError::in_file`]).
    #[error("{path}: {source}")]
    InFile {
        /// The file.
        path: PathBuf,
        /// The error in it.
        #[source]
        source: Box<AnalyzeError>,
    },
}

impl AnalyzeError {
    /// Names `path` in an error that does not name its file already: what the dump's
    /// bytes made wrong, where a command reads several files (or one the user named).
    #[must_use]
    pub fn in_file(self, path: &std::path::Path) -> AnalyzeError {
        match self {
            e @ (AnalyzeError::Format(_)
            | AnalyzeError::TooManyObjects(_)
            | AnalyzeError::NoSuchDump { .. }) => AnalyzeError::InFile {
                path: path.to_path_buf(),
                source: Box::new(e),
            },
            AnalyzeError::Io { path: p, source } if p.as_os_str().is_empty() => AnalyzeError::Io {
                path: path.to_path_buf(),
                source,
            },
            other => other,
        }
    }
}

impl From<hprof_shrink_core::Error> for AnalyzeError {
    fn from(e: hprof_shrink_core::Error) -> Self {
        match e {
            hprof_shrink_core::Error::Cancelled => AnalyzeError::Cancelled,
            hprof_shrink_core::Error::Format(f) => AnalyzeError::Format(f),
            other => AnalyzeError::Io {
                path: PathBuf::new(),
                source: std::io::Error::other(other.to_string()),
            },
        }
    }
}

/// What is wrong with a heap-graph trace: the byte offset (in the file) where it was found.
#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    /// The file ends inside a varint.
    #[error("the trace ends inside a varint at byte {offset}")]
    Truncated {
        /// Where the varint starts.
        offset: u64,
    },
    /// A varint of more than 10 bytes, or past 64 bits.
    #[error("a varint at byte {offset} is longer than 10 bytes or over 64 bits")]
    BadVarint {
        /// Where the varint starts.
        offset: u64,
    },
    /// A top-level record that is not a packet (`Trace.packet`, tag byte 0x0a).
    #[error("byte {offset}: tag {tag:#04x} where a trace packet (0x0a) was expected")]
    NotAPacket {
        /// Where the record starts.
        offset: u64,
        /// Its tag byte.
        tag: u8,
    },
    /// A packet whose length runs past the end of the file.
    #[error("the packet at byte {offset} says it has {len} bytes; {remaining} remain")]
    PacketPastEnd {
        /// Where the packet's record starts.
        offset: u64,
        /// The length it states.
        len: u64,
        /// The bytes that follow its length.
        remaining: u64,
    },
    /// A heap-graph packet that does not decode, or states something impossible.
    #[error("the heap-graph packet at byte {offset}: {what}")]
    BadPacket {
        /// Where the packet's bytes (or the fault in them) start.
        offset: u64,
        /// What is wrong.
        what: String,
    },
    /// No packet holds a heap graph.
    #[error("the trace holds no Java heap graph (no TracePacket.heap_graph)")]
    NoHeapGraph,
    /// Several processes' heap graphs and none chosen.
    #[error(
        "the trace holds the heap graphs of several processes (pids {pids}): choose one with --pid"
    )]
    SeveralProcesses {
        /// The pids, comma-separated, each with its process's name when the trace's
        /// process tree gives it.
        pids: String,
    },
    /// The chosen process has no heap graph in the trace.
    #[error("the trace holds no heap graph of pid {pid} (it holds pids {pids})")]
    NoSuchProcess {
        /// The pid asked for.
        pid: i32,
        /// The pids it holds, as [`TraceError::SeveralProcesses`] lists them.
        pids: String,
    },
    /// An object id too large to leave room for the types' class ids after it.
    #[error("object id {id:#x} is past 2^63 (ART's ids are heap addresses)")]
    IdTooLarge {
        /// The largest id the trace states.
        id: u64,
    },
}

impl TraceError {
    /// The error with its offsets moved by `by` (an offset in a packet made one in the
    /// file).
    pub fn shifted(self, by: u64) -> TraceError {
        match self {
            TraceError::Truncated { offset } => TraceError::Truncated {
                offset: offset + by,
            },
            TraceError::BadVarint { offset } => TraceError::BadVarint {
                offset: offset + by,
            },
            other => other,
        }
    }
}
