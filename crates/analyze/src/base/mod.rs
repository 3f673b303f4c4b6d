//! What every room uses and nothing of the analysis: the error an analysis fails with,
//! the bounds of what it writes, how a name taken from the dump is shown, hash maps, and
//! the compact arrays its big steps hand each other or park on disk. Uses nothing of the
//! crate.

pub mod error;
pub mod limits;
pub mod map;
pub mod offsets;
pub mod parked;
pub mod shown;
pub mod spare;
