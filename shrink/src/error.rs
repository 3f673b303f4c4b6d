//! The one error type of the core: the format layer's errors (which name the byte offset and
//! record tag of the damage) wrapped, and what the passes, the package and the caller add.

use std::path::PathBuf;

use crate::hprof::{FileError, FormatError, Tag};

/// Everything the core's work can fail with, as one line that says where.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Reading or writing the dump: damage in the dump names its offset and tag.
    #[error(transparent)]
    Format(#[from] FormatError),

    /// Reading or writing a named file other than through the format layer.
    #[error(transparent)]
    Io(FileError),

    /// Writing an output failed (the message names the output where it can).
    #[error("writing output: {0}")]
    Write(#[source] std::io::Error),

    /// The package could not be written as a zip.
    #[error("zip: {0}")]
    Zip(String),

    /// A dump the shrink does not handle.
    #[error("{0}")]
    Unsupported(String),

    /// A live Bitmap whose buffer is no primitive array of the dump.
    #[error("Bitmap 0x{bitmap_id:X} at offset {offset} names buffer 0x{buffer_id:X}, which is not a primitive array in the dump")]
    MissingBuffer {
        /// Offset of the Bitmap's INSTANCE_DUMP.
        offset: u64,
        /// The Bitmap.
        bitmap_id: u64,
        /// What its `mBuffer` names.
        buffer_id: u64,
    },

    /// `verify` found the package or its hprof wrong.
    #[error("verification failed: {0}")]
    Verify(Violation),

    /// The caller's options cannot work.
    #[error("invalid option: {0}")]
    Invalid(String),

    /// The caller's cancellation flag was set.
    #[error("cancelled")]
    Cancelled,

    /// The system would not start a thread the work cannot do without.
    #[error("cannot start a thread: {0}")]
    Thread(#[source] std::io::Error),
}

impl Error {
    /// A dump cut off at its end, which `--salvage` can shrink.
    pub fn is_cut_off(&self) -> bool {
        matches!(self, Error::Format(f) if f.is_cut_off())
    }

    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Error {
        Error::Io(FileError {
            path: path.into(),
            source,
        })
    }

    /// The file this error names in its own message (an I/O error on a path), so that a
    /// caller does not name it again.
    pub fn path(&self) -> Option<&std::path::Path> {
        match self {
            Error::Io(f) | Error::Format(FormatError::Io(f)) => Some(&f.path),
            _ => None,
        }
    }

    /// The byte offset in the dump this error points at, when it points at one.
    pub fn offset(&self) -> Option<u64> {
        match self {
            Error::Format(f) => f.offset(),
            Error::MissingBuffer { offset, .. } => Some(*offset),
            Error::Verify(v) => v.offset,
            _ => None,
        }
    }
}

/// What `verify` found wrong: one line, and, where the fault is at one record of the
/// dump compared against, that record's byte offset in it and its tag, as the format
/// layer's errors name them.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct Violation {
    /// What is wrong (it names the offset too, where there is one).
    pub message: String,
    /// Byte offset in the input dump of the record or sub-record at fault.
    pub offset: Option<u64>,
    /// Its tag.
    pub tag: Option<Tag>,
}

/// The core's results.
pub type Result<T, E = Error> = std::result::Result<T, E>;
