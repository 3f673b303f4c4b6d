//! What the workspace's tests share: [`fence`], the check that a crate's dependency tree
//! holds none of the crates it must not reach, [`layers`], which modules of a crate use
//! which (read from its sources), [`entry_names`], the hprof entry names every
//! interface refuses, and [`trace`], Perfetto traces written by hand. A
//! dev-dependency only; it depends on none of the workspace's
//! library crates, so no test sees two copies of a type.

pub mod entry_names;
pub mod fence;
pub mod layers;
pub mod trace;
