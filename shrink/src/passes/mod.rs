//! The three passes: info collect, kept-buffer collect (with dedup), buffer shrink.

pub mod collect;
pub mod dedup;
pub mod info;
pub mod pieces;
pub mod plan;
pub mod shrink;

// Helpers of the passes alone.
pub(crate) mod filter;
pub(crate) mod idset;
pub(crate) mod names;
pub(crate) mod parallel;

pub use collect::{BitmapRef, Collected, Collector, Location};
pub use dedup::{Candidate, Groups};
pub use info::{DumpInfo, EarlyInfo, InfoCollector, Target, TargetClass};
pub use pieces::write_shrunk_parallel;
pub use plan::Plan;
pub use shrink::{write_shrunk, ShrinkFilter, Tally, WriteStats};
