//! hprof-shrink core: reads Java/Android heap dumps (HPROF), shrinks them in three passes
//! (info collect, kept-buffer collect, buffer shrink + write) and packages the result as the
//! zip Matrix's analyzer reads. No network, no CLI: this is what a phone links.

pub mod control;
pub mod error;
pub mod hprof;

pub use control::{Control, Progress, Stage};
pub use error::{Error, Result, Tag};
