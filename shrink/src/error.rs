//! The one error type of the core: every variant that comes from the dump names where
//! (byte offset) and in what (record tag), so a user can find the spot with a hex editor.

use std::fmt;
use std::path::PathBuf;

use crate::hprof::tags;

/// A record tag, with the level it was read at (top-level record or heap-dump sub-record),
/// so it prints with its name: `0x21 INSTANCE_DUMP`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tag {
    pub value: u8,
    pub heap: bool,
}

impl Tag {
    pub const HEADER: Tag = Tag {
        value: 0,
        heap: false,
    };
    pub fn record(value: u8) -> Tag {
        Tag { value, heap: false }
    }
    pub fn heap(value: u8) -> Tag {
        Tag { value, heap: true }
    }
}

impl fmt::Display for Tag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if *self == Tag::HEADER {
            return f.write_str("file header");
        }
        let name = if self.heap {
            tags::heap_tag_name(self.value)
        } else {
            tags::record_tag_name(self.value)
        };
        write!(f, "0x{:02X} {}", self.value, name)
    }
}

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("not an HPROF file: {reason}")]
    NotHprof { reason: String },

    #[error("unsupported HPROF version {version:?} (supported: JAVA PROFILE 1.0.1, 1.0.2, 1.0.3)")]
    UnsupportedVersion { version: String },

    #[error("unsupported identifier size {size} at offset {offset} (HPROF ids are 4 or 8 bytes)")]
    UnsupportedIdSize { offset: u64, size: u32 },

    #[error(
        "truncated {what} at offset {offset} ({tag}): needs {needed} bytes, {available} available"
    )]
    Truncated {
        offset: u64,
        tag: Tag,
        what: &'static str,
        needed: u64,
        available: u64,
    },

    #[error(
        "the dump ends at offset {offset} without {missing}: it was cut off while being written"
    )]
    Incomplete { offset: u64, missing: &'static str },

    #[error("unknown heap dump sub-record tag 0x{tag:02X} at offset {offset}: it has no length, so the rest of the segment cannot be read")]
    UnknownSubTag { offset: u64, tag: u8 },

    #[error("invalid basic type {value} in {what} at offset {offset} ({tag})")]
    BadType {
        offset: u64,
        tag: Tag,
        what: &'static str,
        value: u8,
    },

    #[error("{what} at offset {offset} ({tag}): declared {declared} bytes, content is {actual}")]
    LengthMismatch {
        offset: u64,
        tag: Tag,
        what: &'static str,
        declared: u64,
        actual: u64,
    },

    #[error("superclass cycle through class 0x{class_id:X} (CLASS_DUMP at offset {offset})")]
    SuperclassCycle { class_id: u64, offset: u64 },

    #[error("instance at offset {offset} of class 0x{class_id:X} has {actual} bytes of field data, its class layout needs {expected}")]
    InstanceLayout {
        offset: u64,
        class_id: u64,
        expected: u64,
        actual: u64,
    },

    #[error("class 0x{class_id:X} of {what} at offset {offset} has no CLASS_DUMP in the dump")]
    MissingClass {
        offset: u64,
        class_id: u64,
        what: &'static str,
    },

    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },

    #[error("writing output: {0}")]
    Write(#[source] std::io::Error),

    #[error("zip: {0}")]
    Zip(String),

    #[error("{0}")]
    Unsupported(String),

    #[error("Bitmap 0x{bitmap_id:X} at offset {offset} names buffer 0x{buffer_id:X}, which is not a primitive array in the dump")]
    MissingBuffer {
        offset: u64,
        bitmap_id: u64,
        buffer_id: u64,
    },

    #[error("verification failed: {0}")]
    Verify(String),

    #[error("invalid option: {0}")]
    Invalid(String),

    #[error("cancelled")]
    Cancelled,
}

impl Error {
    /// A dump cut off at its end, which `--salvage` can shrink.
    pub fn is_cut_off(&self) -> bool {
        matches!(
            self,
            Error::Truncated {
                what: "record body" | "record header",
                ..
            } | Error::Incomplete { .. }
        )
    }

    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Error {
        Error::Io {
            path: path.into(),
            source,
        }
    }

    /// The byte offset in the dump this error points at, when it points at one.
    pub fn offset(&self) -> Option<u64> {
        match self {
            Error::UnsupportedIdSize { offset, .. }
            | Error::Truncated { offset, .. }
            | Error::UnknownSubTag { offset, .. }
            | Error::BadType { offset, .. }
            | Error::LengthMismatch { offset, .. }
            | Error::SuperclassCycle { offset, .. }
            | Error::InstanceLayout { offset, .. }
            | Error::MissingClass { offset, .. }
            | Error::MissingBuffer { offset, .. }
            | Error::Incomplete { offset, .. } => Some(*offset),
            _ => None,
        }
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
