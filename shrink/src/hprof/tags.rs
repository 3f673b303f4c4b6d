//! Tag and type numbers of the HPROF format (Java HPROF notes, HotSpot's heapDumper.cpp,
//! ART's runtime/hprof/hprof.cc).

use std::fmt;

// Top-level records.
/// A string (Modified UTF-8) and the id other records name it by.
pub const STRING: u8 = 0x01;
/// A class loaded: its serial number, object id and name's string id.
pub const LOAD_CLASS: u8 = 0x02;
/// A class unloaded.
pub const UNLOAD_CLASS: u8 = 0x03;
/// A stack frame: method, signature, source file and line.
pub const STACK_FRAME: u8 = 0x04;
/// A stack trace: its serial number, thread and frame ids.
pub const STACK_TRACE: u8 = 0x05;
/// Allocation sites (HotSpot's old hprof agent).
pub const ALLOC_SITES: u8 = 0x06;
/// Heap totals (HotSpot's old hprof agent).
pub const HEAP_SUMMARY: u8 = 0x07;
/// A thread started.
pub const START_THREAD: u8 = 0x0A;
/// A thread ended.
pub const END_THREAD: u8 = 0x0B;
/// A whole heap dump in one record (sub-records follow).
pub const HEAP_DUMP: u8 = 0x0C;
/// CPU samples (HotSpot's old hprof agent).
pub const CPU_SAMPLES: u8 = 0x0D;
/// Allocation and stack-trace settings.
pub const CONTROL_SETTINGS: u8 = 0x0E;
/// One segment of a heap dump (sub-records follow); dumps are written as many of these.
pub const HEAP_DUMP_SEGMENT: u8 = 0x1C;
/// The end of a segmented heap dump.
pub const HEAP_DUMP_END: u8 = 0x2C;

/// True for the top-level record tags of the format (HPROF 1.0.1–1.0.3).
pub fn is_record_tag(tag: u8) -> bool {
    matches!(tag, STRING..=HEAP_SUMMARY | START_THREAD..=CONTROL_SETTINGS)
        || tag == HEAP_DUMP_SEGMENT
        || tag == HEAP_DUMP_END
}

// Heap dump sub-records.
/// GC root of an unknown kind.
pub const ROOT_UNKNOWN: u8 = 0xFF;
/// GC root: a JNI global reference.
pub const ROOT_JNI_GLOBAL: u8 = 0x01;
/// GC root: a JNI local reference.
pub const ROOT_JNI_LOCAL: u8 = 0x02;
/// GC root: a local variable of a Java frame.
pub const ROOT_JAVA_FRAME: u8 = 0x03;
/// GC root: held by native code's stack.
pub const ROOT_NATIVE_STACK: u8 = 0x04;
/// GC root: a system class.
pub const ROOT_STICKY_CLASS: u8 = 0x05;
/// GC root: a thread block.
pub const ROOT_THREAD_BLOCK: u8 = 0x06;
/// GC root: an object whose monitor is held.
pub const ROOT_MONITOR_USED: u8 = 0x07;
/// GC root: a thread object.
pub const ROOT_THREAD_OBJECT: u8 = 0x08;
/// A class: its ids, constant pool, static fields with values, instance field declarations.
pub const CLASS_DUMP: u8 = 0x20;
/// An object and its field values.
pub const INSTANCE_DUMP: u8 = 0x21;
/// An array of references.
pub const OBJECT_ARRAY_DUMP: u8 = 0x22;
/// An array of one primitive type, elements in place.
pub const PRIMITIVE_ARRAY_DUMP: u8 = 0x23;
// Android additions.
/// ART GC root: an interned string.
pub const ROOT_INTERNED_STRING: u8 = 0x89;
/// ART GC root: an object waiting for finalization.
pub const ROOT_FINALIZING: u8 = 0x8A;
/// ART GC root: held by the debugger.
pub const ROOT_DEBUGGER: u8 = 0x8B;
/// ART GC root: a reference being cleaned up.
pub const ROOT_REFERENCE_CLEANUP: u8 = 0x8C;
/// ART GC root: held by the runtime itself.
pub const ROOT_VM_INTERNAL: u8 = 0x8D;
/// ART GC root: a JNI monitor.
pub const ROOT_JNI_MONITOR: u8 = 0x8E;
/// ART: an object no root reaches (kept by the dumper anyway).
pub const ROOT_UNREACHABLE: u8 = 0x90;
/// ART's obsolete array header without elements.
pub const PRIMITIVE_ARRAY_NODATA: u8 = 0xC3;
/// ART: the heap (app, zygote, image) the following objects belong to.
pub const HEAP_DUMP_INFO: u8 = 0xFE;

/// A record tag, with the level it was read at (top-level record or heap-dump sub-record),
/// so it prints with its name: `0x21 INSTANCE_DUMP`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tag {
    /// The tag byte.
    pub value: u8,
    /// Read as a heap-dump sub-record tag, not a top-level record tag.
    pub heap: bool,
}

impl Tag {
    /// Not a tag: the file header, where an error before the first record is.
    pub const HEADER: Tag = Tag {
        value: 0,
        heap: false,
    };
    /// A top-level record tag.
    pub fn record(value: u8) -> Tag {
        Tag { value, heap: false }
    }
    /// A heap-dump sub-record tag.
    pub fn heap(value: u8) -> Tag {
        Tag { value, heap: true }
    }
}

impl fmt::Display for Tag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if *self == Tag::HEADER {
            return f.write_str("file header");
        }
        let name = if self.heap {
            heap_tag_name(self.value)
        } else {
            record_tag_name(self.value)
        };
        write!(f, "0x{:02X} {}", self.value, name)
    }
}

/// The name of a top-level record tag (`UNKNOWN` for others).
pub fn record_tag_name(tag: u8) -> &'static str {
    match tag {
        STRING => "STRING",
        LOAD_CLASS => "LOAD_CLASS",
        UNLOAD_CLASS => "UNLOAD_CLASS",
        STACK_FRAME => "STACK_FRAME",
        STACK_TRACE => "STACK_TRACE",
        ALLOC_SITES => "ALLOC_SITES",
        HEAP_SUMMARY => "HEAP_SUMMARY",
        START_THREAD => "START_THREAD",
        END_THREAD => "END_THREAD",
        HEAP_DUMP => "HEAP_DUMP",
        CPU_SAMPLES => "CPU_SAMPLES",
        CONTROL_SETTINGS => "CONTROL_SETTINGS",
        HEAP_DUMP_SEGMENT => "HEAP_DUMP_SEGMENT",
        HEAP_DUMP_END => "HEAP_DUMP_END",
        _ => "UNKNOWN",
    }
}

/// The name of a heap-dump sub-record tag (`UNKNOWN` for others).
pub fn heap_tag_name(tag: u8) -> &'static str {
    match tag {
        ROOT_UNKNOWN => "ROOT_UNKNOWN",
        ROOT_JNI_GLOBAL => "ROOT_JNI_GLOBAL",
        ROOT_JNI_LOCAL => "ROOT_JNI_LOCAL",
        ROOT_JAVA_FRAME => "ROOT_JAVA_FRAME",
        ROOT_NATIVE_STACK => "ROOT_NATIVE_STACK",
        ROOT_STICKY_CLASS => "ROOT_STICKY_CLASS",
        ROOT_THREAD_BLOCK => "ROOT_THREAD_BLOCK",
        ROOT_MONITOR_USED => "ROOT_MONITOR_USED",
        ROOT_THREAD_OBJECT => "ROOT_THREAD_OBJECT",
        CLASS_DUMP => "CLASS_DUMP",
        INSTANCE_DUMP => "INSTANCE_DUMP",
        OBJECT_ARRAY_DUMP => "OBJECT_ARRAY_DUMP",
        PRIMITIVE_ARRAY_DUMP => "PRIMITIVE_ARRAY_DUMP",
        ROOT_INTERNED_STRING => "ROOT_INTERNED_STRING",
        ROOT_FINALIZING => "ROOT_FINALIZING",
        ROOT_DEBUGGER => "ROOT_DEBUGGER",
        ROOT_REFERENCE_CLEANUP => "ROOT_REFERENCE_CLEANUP",
        ROOT_VM_INTERNAL => "ROOT_VM_INTERNAL",
        ROOT_JNI_MONITOR => "ROOT_JNI_MONITOR",
        ROOT_UNREACHABLE => "ROOT_UNREACHABLE",
        PRIMITIVE_ARRAY_NODATA => "PRIMITIVE_ARRAY_NODATA",
        HEAP_DUMP_INFO => "HEAP_DUMP_INFO",
        _ => "UNKNOWN",
    }
}

/// What follows the tag of a GC root sub-record, after its object id: how many u4s and
/// how many more ids. `None` for tags that are not roots.
pub fn root_layout(tag: u8) -> Option<(u8, u8)> {
    match tag {
        ROOT_UNKNOWN
        | ROOT_STICKY_CLASS
        | ROOT_MONITOR_USED
        | ROOT_INTERNED_STRING
        | ROOT_FINALIZING
        | ROOT_DEBUGGER
        | ROOT_REFERENCE_CLEANUP
        | ROOT_VM_INTERNAL
        | ROOT_UNREACHABLE => Some((0, 0)),
        // object id, JNI global ref id
        ROOT_JNI_GLOBAL => Some((0, 1)),
        // object id, thread serial, frame number
        ROOT_JNI_LOCAL | ROOT_JAVA_FRAME | ROOT_JNI_MONITOR => Some((2, 0)),
        // object id, thread serial
        ROOT_NATIVE_STACK | ROOT_THREAD_BLOCK => Some((1, 0)),
        // thread object id, thread serial, stack trace serial
        ROOT_THREAD_OBJECT => Some((2, 0)),
        _ => None,
    }
}

/// The basic types of fields and array elements.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum BasicType {
    /// A reference (an identifier, 4 or 8 bytes).
    Object,
    /// boolean, 1 byte.
    Boolean,
    /// char, 2 bytes (UTF-16).
    Char,
    /// float, 4 bytes.
    Float,
    /// double, 8 bytes.
    Double,
    /// byte, 1 byte.
    Byte,
    /// short, 2 bytes.
    Short,
    /// int, 4 bytes.
    Int,
    /// long, 8 bytes.
    Long,
}

impl BasicType {
    /// The eight primitive types, in the order of their type codes.
    pub const PRIMITIVES: [BasicType; 8] = [
        BasicType::Boolean,
        BasicType::Char,
        BasicType::Float,
        BasicType::Double,
        BasicType::Byte,
        BasicType::Short,
        BasicType::Int,
        BasicType::Long,
    ];

    /// The type with HPROF type code `value` (2 object, 4 boolean ... 11 long).
    pub fn from_u8(value: u8) -> Option<BasicType> {
        Some(match value {
            2 => BasicType::Object,
            4 => BasicType::Boolean,
            5 => BasicType::Char,
            6 => BasicType::Float,
            7 => BasicType::Double,
            8 => BasicType::Byte,
            9 => BasicType::Short,
            10 => BasicType::Int,
            11 => BasicType::Long,
            _ => return None,
        })
    }

    /// Its HPROF type code.
    pub fn code(self) -> u8 {
        match self {
            BasicType::Object => 2,
            BasicType::Boolean => 4,
            BasicType::Char => 5,
            BasicType::Float => 6,
            BasicType::Double => 7,
            BasicType::Byte => 8,
            BasicType::Short => 9,
            BasicType::Int => 10,
            BasicType::Long => 11,
        }
    }

    /// Size in bytes of one value; objects take the dump's id size.
    pub fn size(self, id_size: u8) -> u8 {
        match self {
            BasicType::Object => id_size,
            BasicType::Boolean | BasicType::Byte => 1,
            BasicType::Char | BasicType::Short => 2,
            BasicType::Float | BasicType::Int => 4,
            BasicType::Double | BasicType::Long => 8,
        }
    }

    /// Its Java name (`int`, `byte`...).
    pub fn name(self) -> &'static str {
        match self {
            BasicType::Object => "object",
            BasicType::Boolean => "boolean",
            BasicType::Char => "char",
            BasicType::Float => "float",
            BasicType::Double => "double",
            BasicType::Byte => "byte",
            BasicType::Short => "short",
            BasicType::Int => "int",
            BasicType::Long => "long",
        }
    }

    /// Index 0..8 of a primitive type, for per-type tables.
    pub fn primitive_index(self) -> Option<usize> {
        BasicType::PRIMITIVES.iter().position(|t| *t == self)
    }
}
