//! The host side of hprof-shrink as a library: what the command line does beyond the core
//! (`hprof-shrink-core`), for other host tools (a batch job, tests) to call. Nothing here
//! is linked into a phone.

pub use hprof_shrink_analyze as analyze;
pub mod progress;
pub use hprof_shrink_serve as serve;
pub use hprof_shrink_upload as upload;
