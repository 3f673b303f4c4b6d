//! The heap-source seam: what the analysis needs of a heap, whatever format holds it.
//!
//! A heap is classes (a name, a superclass, the instance size, instance fields with
//! their types, static fields with their values), objects (instances with their field
//! values, object arrays with their elements, primitive arrays with their elements), GC
//! roots, and the heap each object is in (ART's app, zygote and image heaps). Names are
//! text; references are object ids; sizes follow from the class's instance size and the
//! arrays' lengths. That is the whole interface: [`HeapSource`] describes a heap to a
//! [`HeapSink`], in calls of these few kinds.
//!
//! An HPROF file is its own description (the index reads it in place, mapped, with no
//! copy). Any other source describes its heap once into the encoder (`heap::encode`), which
//! lays it out in the same record form in an unnamed temporary file (within the
//! analysis's disk bounds), so the paths, the sizes and LeakCanary's knowledge read it as
//! they read a dump: none of them knows which source it came from.

use hprof_shrink_core::hprof::{BasicType, Value};

use crate::base::error::AnalyzeError;

/// A heap in a format other than HPROF, as the analysis reads it.
pub trait HeapSource {
    /// The input's name, as the analysis's `input.path` shows it.
    fn name(&self) -> String;
    /// What the analysis calls the format (its `dump.format`).
    fn format(&self) -> String;
    /// Bytes an object id takes in sizes (4 or 8): an object array's element, a reference
    /// field.
    fn id_size(&self) -> u8;
    /// When the heap was taken, in milliseconds since the epoch (0: unknown).
    fn timestamp_ms(&self) -> u64;
    /// Whether it describes its objects' field values. A source that describes only
    /// references (a heap graph) says no: the analysis then does not run the rules that
    /// read values, and says which it did not run.
    fn field_values(&self) -> bool {
        true
    }
    /// Describes the heap to `sink`, class by class and object by object. Where two
    /// objects share an id, the first described is the one the analysis keeps.
    fn describe(&self, sink: &mut dyn HeapSink) -> Result<(), AnalyzeError>;
}

/// What a [`HeapSource`] describes its heap to.
pub trait HeapSink {
    /// The objects described from here on are in heap `id` (ART's: `'A'` app, `'Z'`
    /// zygote, `'I'` image), named `name`. Without a call, objects are in no heap.
    fn heap(&mut self, id: u32, name: &str) -> Result<(), AnalyzeError>;
    /// A class (also an object of the heap: its static fields hold references).
    fn class(&mut self, class: &Class<'_>) -> Result<(), AnalyzeError>;
    /// An object that is not a class.
    fn object(&mut self, object: &Object<'_>) -> Result<(), AnalyzeError>;
    /// A GC root.
    fn root(&mut self, root: &Root) -> Result<(), AnalyzeError>;
}

/// A class as a heap holds it.
#[derive(Debug, Clone, Copy)]
pub struct Class<'a> {
    /// The class object's id.
    pub id: u64,
    /// The class's name, as the format spells it (a JVM's binary name, `java/lang/String`,
    /// or its Java name, `java.lang.String`; arrays as `[I` or `int[]`).
    pub name: &'a str,
    /// The superclass's id (0: none).
    pub super_id: u64,
    /// The class loader's id (0: the boot loader).
    pub loader_id: u64,
    /// Bytes an instance takes (0: unknown; then an instance's field bytes count).
    pub instance_size: u32,
    /// The class's static fields and their values.
    pub statics: &'a [Static<'a>],
    /// The instance fields the class itself declares, in their order.
    pub fields: &'a [Field<'a>],
    /// Bytes the class object itself takes, where the source says (a heap graph's
    /// `self_size` of it); 0: as a dump's is counted, its static values and
    /// java.lang.Class's instance size. (HPROF has no place for it: the input carries it
    /// beside the laid-out file, `Input::class_sizes`.)
    pub object_size: u64,
}

/// An instance field a class declares.
#[derive(Debug, Clone, Copy)]
pub struct Field<'a> {
    /// The field's name.
    pub name: &'a str,
    /// Its type.
    pub ty: BasicType,
}

/// A static field and its value.
#[derive(Debug, Clone, Copy)]
pub struct Static<'a> {
    /// The field's name.
    pub name: &'a str,
    /// Its value (its type is the value's).
    pub value: Value,
}

/// An object that is not a class.
#[derive(Debug, Clone, Copy)]
pub enum Object<'a> {
    /// An instance: the values of its class's own fields in their order, then its
    /// superclass's, up the hierarchy.
    Instance {
        /// The instance's id.
        id: u64,
        /// Its class's id.
        class_id: u64,
        /// Its field values, in the order above.
        values: &'a [Value],
        /// Zero bytes after the values, counted in the instance's size: what a format
        /// that gives an object's size but not its field values says of the rest.
        padding: u64,
    },
    /// An array of references: its elements' ids (0: null).
    ObjectArray {
        /// The array's id.
        id: u64,
        /// The array class's id.
        class_id: u64,
        /// The elements, in order.
        elements: &'a [u64],
    },
    /// An array of `ty`: `count` elements, their bytes big-endian when the source has
    /// them (`None`: only the length is known).
    PrimitiveArray {
        /// The array's id.
        id: u64,
        /// The elements' type.
        ty: BasicType,
        /// How many elements it has.
        count: u32,
        /// The elements' bytes, big-endian (`None`: not in the source).
        elements: Option<&'a [u8]>,
    },
}

/// A GC root: its kind, named by its HPROF sub-record tag
/// ([`hprof_shrink_core::hprof::tags`]`::ROOT_*`), the object it holds, and what the kind
/// says beside it.
#[derive(Debug, Clone, Copy)]
pub struct Root {
    /// The kind, as an HPROF root tag.
    pub tag: u8,
    /// The object the root holds.
    pub object_id: u64,
    /// The thread it belongs to, for the kinds of a thread (a Java frame, a JNI local, a
    /// native stack, a blocked thread, a thread object, a JNI monitor).
    pub thread_serial: u32,
    /// A JNI global's reference id, a frame's number, a thread object's stack trace
    /// serial, a monitor's depth; 0 otherwise.
    pub extra: u64,
}
