//! hprof-shrink core: reads Java/Android heap dumps (HPROF), shrinks them in three passes
//! (info collect, kept-buffer collect, buffer shrink + write) and packages the result as the
//! zip Matrix's analyzer reads. No network, no CLI: this is what a phone links.

pub mod control;
pub mod error;
#[cfg(feature = "ffi")]
pub mod ffi;
pub mod hprof;

pub use control::{Control, Progress, Stage};
pub use error::{Error, Result, Tag};
pub mod names;
pub mod options;
pub mod passes;

pub use options::{DroppedMode, StripMode};
pub mod javastring;
pub mod output;
pub mod package;
pub mod pipeline;
pub mod report;

pub use package::{Manifest, ManifestValues};
pub use pipeline::{
    analyze, shrink_file, write_shrunk, Analysis, AnalyzeOptions, Outputs, ShrinkOptions,
};
pub use report::Report;
pub mod idset;
pub mod inspect;
pub mod parallel;
pub mod verify;
