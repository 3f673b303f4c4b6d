//! The HPROF format: views over the bytes (header, records, heap sub-records), the reader
//! that walks them, the visitor trait, the writer, and an index of classes.

pub mod classes;
pub(crate) mod cursor;
pub mod events;
pub mod heap;
pub mod reader;
pub mod record;
pub mod tags;
pub mod visitor;
pub mod writer;

pub use classes::{ClassIndex, ClassInfo, Layout, LayoutField};
pub use events::{Event, Events};
pub use heap::{
    ClassDump, FieldDecl, HeapDumpInfo, Instance, ObjectArray, PrimitiveArray,
    PrimitiveArrayNoData, Root, StaticField, Sub, SubRecord, SubRecords, Value,
};
pub use reader::{Hprof, MappedFile, Salvage};
pub use record::{Header, LoadClass, Record, Records, StringRecord, RECORD_HEADER_LEN};
pub use tags::BasicType;
pub use visitor::{Interest, Rewrite, Visitor};
pub use writer::HprofWriter;
