//! The format layer's error: every variant that comes from the dump names where (byte
//! offset) and in what (record tag), so a user can find the spot with a hex editor.

use std::path::PathBuf;

use super::tags::Tag;

/// What a truncation cut short.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Truncation {
    /// Contents shorter than their record declares: damage inside the dump.
    Contents,
    /// The file ends inside a top-level record (its header or its body): a dump cut off
    /// while being written.
    FileEnd,
}

/// An I/O error on a named file; the path leads the message.
#[derive(Debug, thiserror::Error)]
#[error("{path}: {source}")]
pub struct FileError {
    /// The file.
    pub path: PathBuf,
    /// What the system said.
    #[source]
    pub source: std::io::Error,
}

/// What can go wrong reading a dump (or writing one with [`HprofWriter`](super::HprofWriter)).
/// Every field named `offset` is a byte offset in the file, `tag` the record or
/// sub-record it is in, `what` the part of it that was being read.
#[derive(Debug, thiserror::Error)]
pub enum FormatError {
    /// The first bytes are not an HPROF header.
    #[error("not an HPROF file: {reason}")]
    NotHprof {
        /// Why not.
        reason: String,
    },

    /// A header version other than 1.0.1, 1.0.2 or 1.0.3.
    #[error("unsupported HPROF version {version:?} (supported: JAVA PROFILE 1.0.1, 1.0.2, 1.0.3)")]
    UnsupportedVersion {
        /// The version the header gives.
        version: String,
    },

    /// An identifier size other than 4 or 8.
    #[error("unsupported identifier size {size} at offset {offset} (HPROF ids are 4 or 8 bytes)")]
    UnsupportedIdSize {
        /// Byte offset in the file.
        offset: u64,
        /// The identifier size given.
        size: u32,
    },

    /// Something is shorter than what it declares; `kind` says whether the file ends there.
    #[error(
        "truncated {what} at offset {offset} ({tag}): needs {needed} bytes, {available} available"
    )]
    Truncated {
        /// Byte offset in the file.
        offset: u64,
        /// The record or sub-record it is in.
        tag: Tag,
        /// The part being read.
        what: &'static str,
        /// Bytes it needs.
        needed: u64,
        /// Bytes there are.
        available: u64,
        /// Whether the file ends there.
        kind: Truncation,
    },

    /// The file ends at a record boundary, before the records every dump closes with.
    #[error(
        "the dump ends at offset {offset} without {missing}: it was cut off while being written"
    )]
    Incomplete {
        /// Byte offset in the file.
        offset: u64,
        /// The record that should have come (`HEAP_DUMP_END`...).
        missing: &'static str,
    },

    /// A sub-record tag the format does not define: it has no length, so nothing after it
    /// in the segment can be read.
    #[error("unknown heap dump sub-record tag 0x{tag:02X} at offset {offset}: it has no length, so the rest of the segment cannot be read")]
    UnknownSubTag {
        /// Byte offset in the file.
        offset: u64,
        /// The record or sub-record it is in.
        tag: u8,
    },

    /// A basic type code that is not one (`value`).
    #[error("invalid basic type {value} in {what} at offset {offset} ({tag})")]
    BadType {
        /// Byte offset in the file.
        offset: u64,
        /// The record or sub-record it is in.
        tag: Tag,
        /// The part being read.
        what: &'static str,
        /// The code found.
        value: u8,
    },

    /// A length that disagrees with the content it measures.
    #[error("{what} at offset {offset} ({tag}): declared {declared} bytes, content is {actual}")]
    LengthMismatch {
        /// Byte offset in the file.
        offset: u64,
        /// The record or sub-record it is in.
        tag: Tag,
        /// The part being read.
        what: &'static str,
        /// The length declared.
        declared: u64,
        /// The length found.
        actual: u64,
    },

    /// A class that is its own ancestor.
    #[error("superclass cycle through class 0x{class_id:X} (CLASS_DUMP at offset {offset})")]
    SuperclassCycle {
        /// The class.
        class_id: u64,
        /// Byte offset in the file.
        offset: u64,
    },

    /// An instance whose field data does not fit its class's layout.
    #[error("instance at offset {offset} of class 0x{class_id:X} has {actual} bytes of field data, its class layout needs {expected}")]
    InstanceLayout {
        /// Byte offset in the file.
        offset: u64,
        /// The class.
        class_id: u64,
        /// The length its layout needs.
        expected: u64,
        /// The length found.
        actual: u64,
    },

    /// An object whose class has no CLASS_DUMP.
    #[error("class 0x{class_id:X} of {what} at offset {offset} has no CLASS_DUMP in the dump")]
    MissingClass {
        /// Byte offset in the file.
        offset: u64,
        /// The class.
        class_id: u64,
        /// The part being read.
        what: &'static str,
    },

    /// Opening or mapping a dump file.
    #[error(transparent)]
    Io(#[from] FileError),

    /// The writer's sink failed.
    #[error("writing output: {0}")]
    Write(#[source] std::io::Error),

    /// A filter handed the writer a rewrite that does not fit the sub-record: a bug in the
    /// filter, not in the dump.
    #[error("invalid option: {0}")]
    BadRewrite(String),
}

impl FormatError {
    /// A dump cut off at its end, which salvaging can shrink.
    pub fn is_cut_off(&self) -> bool {
        matches!(
            self,
            FormatError::Truncated {
                kind: Truncation::FileEnd,
                ..
            } | FormatError::Incomplete { .. }
        )
    }

    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> FormatError {
        FormatError::Io(FileError {
            path: path.into(),
            source,
        })
    }

    /// The byte offset in the dump this error points at, when it points at one.
    pub fn offset(&self) -> Option<u64> {
        match self {
            FormatError::UnsupportedIdSize { offset, .. }
            | FormatError::Truncated { offset, .. }
            | FormatError::UnknownSubTag { offset, .. }
            | FormatError::BadType { offset, .. }
            | FormatError::LengthMismatch { offset, .. }
            | FormatError::SuperclassCycle { offset, .. }
            | FormatError::InstanceLayout { offset, .. }
            | FormatError::MissingClass { offset, .. }
            | FormatError::Incomplete { offset, .. } => Some(*offset),
            FormatError::NotHprof { .. }
            | FormatError::UnsupportedVersion { .. }
            | FormatError::Io(_)
            | FormatError::Write(_)
            | FormatError::BadRewrite(_) => None,
        }
    }

    /// The record or sub-record tag of the damage, when the error names one (the one its
    /// message names; for a class or an instance, the sub-record it is read from).
    pub fn tag(&self) -> Option<Tag> {
        match self {
            FormatError::Truncated { tag, .. }
            | FormatError::BadType { tag, .. }
            | FormatError::LengthMismatch { tag, .. } => Some(*tag),
            FormatError::UnknownSubTag { tag, .. } => Some(Tag::heap(*tag)),
            FormatError::SuperclassCycle { .. } => Some(Tag::heap(super::tags::CLASS_DUMP)),
            FormatError::InstanceLayout { .. } => Some(Tag::heap(super::tags::INSTANCE_DUMP)),
            // An instance or an array: the message says which.
            FormatError::MissingClass { .. }
            | FormatError::UnsupportedIdSize { .. }
            | FormatError::Incomplete { .. }
            | FormatError::NotHprof { .. }
            | FormatError::UnsupportedVersion { .. }
            | FormatError::Io(_)
            | FormatError::Write(_)
            | FormatError::BadRewrite(_) => None,
        }
    }
}

/// The format layer's results.
pub type Result<T, E = FormatError> = std::result::Result<T, E>;
