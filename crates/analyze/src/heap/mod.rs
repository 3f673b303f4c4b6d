//! The dump as a graph: the file or package opened ([`input`]), one walk that indexes
//! every object ([`index`], with progress: [`progress`]), classes, their reference fields
//! and the references out of an object ([`graph`], names through R8's [`mapping`]), and
//! the strong references as arrays ([`edges`]); a String's text ([`java_string`]).
//! A heap in another format comes in through one seam ([`source`]): it describes itself,
//! and [`encode`] lays it out as the index reads a dump; [`perfetto`] is such a source (a
//! Perfetto trace's heap graph). Uses `base` and the core's format
//! layer.

pub mod edges;
pub mod encode;
pub mod graph;
pub mod index;
pub mod input;
pub mod java_string;
pub mod mapping;
pub mod perfetto;
pub mod progress;
pub mod source;
