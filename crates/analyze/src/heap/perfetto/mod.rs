//! Perfetto heap graphs: a trace's `HeapGraph` packets (ART's Java heap, as Android's
//! `ProfilingManager` and `am dumpheap`'s Perfetto route give it) read as a heap source.
//! [`wire`] walks the trace's packets and decodes the heap-graph ones; [`graph`] gathers a
//! process's types, field names and roots in one pass and describes its objects to the
//! seam in a second ([`TraceSource`]); [`about`] reads which processes a trace holds heap
//! graphs of, and the app the chosen one runs.
//!
//! Its errors are [`TraceError`]s (in `base`, beside the analysis's).
//!
//! Bounds: a packet's length is checked against what remains and a varint is at most 10
//! bytes; a packet is walked field by field and one object (type, name, root) decoded at a
//! time into a message reused from one to the next (memory: 8 bytes a byte of the largest
//! object's references, never a packet's objects decoded together); nothing is kept
//! per object, in either pass (the second keeps one entry per type met); what is
//! kept across packets is the types, the field names and the roots (16 bytes a root, 8 a
//! type's field: a few times the trace's bytes that state them), at most [`graph::MAX_LAYOUTS`] object layouts,
//! the class objects' references (at most `statics::MAX_HELD`) and the trace's own
//! deobfuscation names (at most `mapping::MAX_MAPPING_BYTES`).

pub mod about;
mod deobfuscate;
pub mod graph;
mod statics;
mod values;
pub mod wire;

pub use graph::TraceSource;

/// What the analysis calls a heap graph's format (its `dump.format`).
pub const FORMAT: &str = "Perfetto heap graph";

pub use crate::base::error::TraceError;
