//! The upload package, written and read: a zip holding `result.info` (the manifest Matrix's
//! analyzer reads), the shrunk hprof and, optionally, `extra.info`; its comment names the
//! tool and the modes it was made with.
//!
//! Reading goes through `rawzip`; writing is our own
//! ([`records`](crate::package::records)): the writer brings its own compressed bytes
//! (deflated on several cores, see [`deflate`](crate::package::deflate)), and a stored
//! entry must carry its sizes in its local header, which rawzip's writer never does (it
//! always writes a data descriptor) and the `zip` crate does only compressing itself, on
//! one thread. For reading, rawzip reads with positioned reads, hands out a stored entry's byte range (so
//! the verifier maps it instead of copying it) and checks size and CRC-32 as an entry is
//! decompressed (flate2 over zlib-rs; the writer compresses with libdeflate).

pub mod comment;
pub mod deflate;
pub mod inflate;
pub mod manifest;
pub mod properties;
pub mod reader;
pub mod records;
mod reopen;
pub mod trace;
pub mod writer;

pub use comment::ToolComment;
pub use manifest::{Manifest, ManifestValues, Source, EXTRA_INFO, RESULT_INFO};
pub use reader::{DeflatedEntry, MappedEntry, PackageError, PackageReader};
pub use writer::{PackageWriter, Rewrite};
