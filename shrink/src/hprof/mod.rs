//! The HPROF format: views over the bytes (header, records, heap sub-records), the reader
//! that walks them, the visitor trait, the writer, and an index of classes.
//!
//! A leaf: nothing here imports from the rest of the crate, so anything that reads dumps
//! can build on it. Inside, dependencies go one way: `tags`, `bytes` (the id reader),
//! `error`, `cursor` and `tick` at the bottom (with `mapguard`, which keeps a shrinking
//! input from killing the process, and `javastring`, the text of a String's value array),
//! then `heap`, `record`, `visitor` and `classes`, then `reader` and `writer`, and
//! `events` on top. `tests/layers.rs` holds both rules.

pub mod bytes;
pub mod classes;
pub(crate) mod cursor;
pub mod error;
pub mod events;
pub mod heap;
pub mod javastring;
mod mapguard;
pub mod reader;
pub mod record;
pub mod tags;
pub mod tick;
pub mod visitor;
pub mod writer;

pub use bytes::{id_at, u4_at};
pub use classes::{ClassIndex, ClassInfo, Layout, LayoutField};
pub use error::{FileError, FormatError, Truncation};
pub use events::{Event, Events};
pub use heap::{
    ClassDump, FieldDecl, HeapDumpInfo, Instance, ObjectArray, PrimitiveArray,
    PrimitiveArrayNoData, Root, StaticField, Sub, SubRecord, SubRecords, Value,
};
pub use reader::{open_regular, DumpCounter, Hprof, MappedFile, Salvage, TickFor};
pub use record::{Header, LoadClass, Record, Records, StringRecord, RECORD_HEADER_LEN};
pub use tags::{BasicType, Tag};
pub use tick::{Tick, Unwatched};
pub use visitor::{Interest, Rewrite, Visitor};
pub use writer::HprofWriter;
