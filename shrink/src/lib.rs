//! hprof-shrink core: reads Java/Android heap dumps (HPROF), shrinks them in three passes
//! (info collect, kept-buffer collect, buffer shrink + write) and packages the result as the
//! zip Matrix's analyzer reads. No network, no CLI: this is what a phone links.
//!
//! The public API is what the CLI, the C ABI, the fuzz targets and the tests use: the whole
//! job ([`shrink_file`]) and its steps ([`analyze`], [`write_shrunk`]), the format layer
//! ([`hprof`]), the passes, and the package's parts the host reads back
//! ([`package::PackageReader`], [`verify::verify_path`]). The rest is private.
//!
//! # Example
//!
//! Shrink a dump into a package, then read the package back as Matrix's analyzer would:
//!
//! ```
//! use hprof_shrink_core::package::{reader::value, PackageReader};
//! use hprof_shrink_core::{shrink_file, Control, Outputs, ShrinkOptions, StripMode};
//! use std::io::Read;
//! # let input = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../fixtures/art-api25.hprof"));
//! # let dir = tempfile::tempdir()?;
//! # let zip = dir.path().join("leak.zip");
//!
//! // `input` is an Android heap dump (`am dumpheap`), `zip` where the package goes.
//! let opts = ShrinkOptions::new().with_strip(StripMode::Bitmaps);
//! let outputs = Outputs { zip: Some(&zip), hprof: None };
//! let report = shrink_file(input, outputs, &opts, &Control::default())?;
//! assert!(report.output.zip_bytes.unwrap() < report.input.bytes);
//!
//! let package = PackageReader::open(&zip)?;
//! let manifest = package.manifest()?;
//! let entry = value(&manifest, "hprofEntry").unwrap();
//! assert_eq!(entry, "art-api25_shrink.hprof");
//! let mut hprof = Vec::new();
//! package.stream(entry)?.read_to_end(&mut hprof)?;
//! assert!(hprof.starts_with(b"JAVA PROFILE 1.0"));
//! assert_eq!(hprof.len() as u64, report.output.hprof_bytes);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Long work takes a [`Control`]: a cancellation flag another thread (or a signal handler)
//! may set, and a progress callback.

#![warn(missing_docs)]

/// Progress reports and cancellation for long walks.
pub mod control;
/// The C ABI (`include/hprof_shrink.h`), for C and Android (JNI) callers.
#[cfg(feature = "ffi")]
pub mod ffi;
/// The HPROF format: views, reader, visitor, writer; a leaf the rest builds on.
pub mod hprof;
/// What an unknown dump holds, by record, tag and class.
pub mod inspect;
/// What kind of file this is (a dump, gzip, a zip), by its first bytes.
pub mod kind;
/// Output files that appear complete or not at all.
pub mod output;
/// The upload package: the zip's writer and reader, `result.info`, `extra.info`, the
/// zip comment, the parallel deflate.
pub mod package;
/// The three passes: info collect, kept-buffer collect (with dedup), buffer shrink.
pub mod passes;
/// Private packages: what is kept of String values and pixels, and what replaces the rest.
pub mod private;
/// Free space on a filesystem, asked before unpacking.
pub mod space;
/// Checking a package, alone or against the dump it came from.
pub mod verify;

mod error;
mod options;
mod pipeline;
mod report;
mod threads;

pub use control::{Control, Progress, Stage};
pub use error::{Error, ErrorKind, Result, Violation};
pub use hprof::Tag;
pub use options::{DroppedMode, StripMode};
pub use package::{Manifest, ManifestValues};
pub use passes::write_shrunk;
pub use pipeline::{
    analyze, check_request, shrink_file, Analysis, AnalyzeOptions, Outputs, ShrinkOptions,
    MAX_THREADS, PRIVATE_KEY,
};
pub use report::Report;
