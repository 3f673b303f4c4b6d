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

    /// The record or sub-record tag at [`Error::offset`], when the error names one.
    pub fn tag(&self) -> Option<Tag> {
        match self {
            Error::Format(f) => f.tag(),
            Error::MissingBuffer { .. } => Some(Tag::heap(crate::hprof::tags::INSTANCE_DUMP)),
            Error::Verify(v) => v.tag,
            _ => None,
        }
    }

    /// Whose fault the error is, as the interfaces for apps (the C ABI, JNI) report it.
    pub fn kind(&self) -> ErrorKind {
        // Exhaustive on purpose: a new variant must be placed.
        match self {
            Error::Format(f) => format_kind(f),
            Error::Cancelled => ErrorKind::Cancelled,
            Error::Invalid(_) => ErrorKind::InvalidArgument,
            Error::Io(_) | Error::Write(_) | Error::Thread(_) => ErrorKind::Io,
            Error::MissingBuffer { .. } | Error::Unsupported(_) => ErrorKind::BadInput,
            // Zip errors other than I/O are misuse of the zip writer, and a shrink never
            // verifies: both would be bugs here.
            Error::Zip(_) | Error::Verify(_) => ErrorKind::Internal,
        }
    }
}

/// The kind of an error of the format layer; exhaustive too.
fn format_kind(e: &FormatError) -> ErrorKind {
    match e {
        FormatError::BadRewrite(_) => ErrorKind::InvalidArgument,
        FormatError::Io(_) | FormatError::Write(_) => ErrorKind::Io,
        FormatError::NotHprof { .. }
        | FormatError::UnsupportedVersion { .. }
        | FormatError::UnsupportedIdSize { .. }
        | FormatError::Truncated { .. }
        | FormatError::Incomplete { .. }
        | FormatError::UnknownSubTag { .. }
        | FormatError::BadType { .. }
        | FormatError::LengthMismatch { .. }
        | FormatError::SuperclassCycle { .. }
        | FormatError::InstanceLayout { .. }
        | FormatError::MissingClass { .. } => ErrorKind::BadInput,
    }
}

/// Whose fault an [`Error`] is: what the C ABI's status codes and the JNI library's
/// exception kinds say.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// The caller's cancellation flag was set.
    Cancelled,
    /// The caller's arguments cannot work.
    InvalidArgument,
    /// Reading the input or writing an output failed.
    Io,
    /// The input is not a dump this library can shrink (its offset and tag, where known).
    BadInput,
    /// A bug in this library.
    Internal,
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hprof::tags::{HEAP_DUMP_SEGMENT, INSTANCE_DUMP};
    use crate::hprof::Truncation;

    #[test]
    fn bad_input_names_its_offset_and_tag_and_other_errors_none() {
        let cut = Error::from(FormatError::Truncated {
            offset: 77,
            tag: Tag::record(HEAP_DUMP_SEGMENT),
            what: "record body",
            needed: 9,
            available: 3,
            kind: Truncation::FileEnd,
        });
        assert_eq!(
            (cut.kind(), cut.offset(), cut.tag()),
            (
                ErrorKind::BadInput,
                Some(77),
                Some(Tag::record(HEAP_DUMP_SEGMENT))
            )
        );
        let sub = Error::from(FormatError::UnknownSubTag {
            offset: 5,
            tag: 0x42,
        });
        assert_eq!(sub.tag(), Some(Tag::heap(0x42)));
        let bitmap = Error::MissingBuffer {
            offset: 9,
            bitmap_id: 1,
            buffer_id: 2,
        };
        assert_eq!(bitmap.tag(), Some(Tag::heap(INSTANCE_DUMP)));
        let not = Error::from(FormatError::NotHprof { reason: "x".into() });
        assert_eq!(
            (not.kind(), not.offset(), not.tag()),
            (ErrorKind::BadInput, None, None)
        );
        assert_eq!(
            (Error::Cancelled.kind(), Error::Cancelled.tag()),
            (ErrorKind::Cancelled, None)
        );
    }
}
