//! `analyze`: why is this Activity still alive, and which bitmaps are duplicated? The
//! server half of the pipeline, on the core's format layer. Its rooms, bottom first; each
//! uses only rooms below it (`tests/layers.rs` holds that):
//!
//! - `base`: what every room uses: the error, the output's bounds ([`limits`]), how a
//!   name from the dump is shown ([`shown`]), hash maps and the compact arrays.
//! - [`model`]: what an analysis finds, as the JSON says it.
//! - `heap`: the dump as a graph: opening a file or package ([`input`]), the index of its
//!   objects, classes and their reference fields, the strong edges, R8 names
//!   ([`mapping`]).
//! - `knowledge`: LeakCanary's knowledge: the inspectors, the finders, the known
//!   library leaks ([`library`]), the device and the app's metadata.
//! - `sizes`: dominators, retained sizes, native sizes.
//! - `paths`: the path search from the GC roots and the leaks' traces.
//! - `report`: what the heap holds for a reader without a leak: the triage, its counts,
//!   duplicate [`bitmaps`] and Strings, the summary, the
//!   [`census`] `diff` compares.
//! - `run`: the pipeline: one pass over every object, then the steps in order.
//! - `compare`: two dumps or more: [`diff`] (of two [`census`]es), [`growth`].
//! - [`render`]: text, JSON, HTML, Matrix's `result.json`, and LeakCanary's text read back.
//! - [`gate`]: the CI gate and its JUnit report.
//!
//! What an analysis keeps is bounded whatever the dump ([`limits`]), and every name it
//! takes from the dump is escaped and cut ([`shown`]).

#![warn(missing_docs)]

mod base;
mod compare;
pub mod gate;
mod heap;
mod knowledge;
pub mod model;
mod paths;
pub mod render;
mod report;
mod run;
mod sizes;

pub use base::{error, limits, shown};
pub use compare::{diff, growth};
pub use heap::{input, mapping};
pub use knowledge::library;
pub use render::leakcanary_text;
pub use report::{bitmaps, census};

pub use error::AnalyzeError;
pub use heap::graph::java_name;
/// Perfetto heap graphs (a trace's `HeapGraph` packets) as a heap source.
pub use heap::perfetto;
/// The heap-source seam: a heap in another format describes itself to the analysis.
pub use heap::source;
pub use library::LibraryTable;
pub use mapping::Mapping;
pub use model::*;
pub use run::{
    analyze_path, analyze_path_census, analyze_path_within, analyze_source, Options, Outcome, Skip,
    StepTime, Timings, DEFAULT_MIN_BITMAP_BYTES,
};
