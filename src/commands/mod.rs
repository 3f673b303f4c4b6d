//! The commands, one module each: each takes its parsed arguments, does the work and says
//! how it went; `main` only dispatches and reports.

pub mod analyze;
pub mod batch;
pub mod compare;
pub mod docs;
pub mod inspect;
pub mod package_trace;
pub mod serve;
pub mod shrink;
pub mod upload;
pub mod verify;
