//! Tag and type numbers of the HPROF format (Java HPROF notes, HotSpot's heapDumper.cpp,
//! ART's runtime/hprof/hprof.cc).

use std::fmt;

// Top-level records.
pub const STRING: u8 = 0x01;
pub const LOAD_CLASS: u8 = 0x02;
pub const UNLOAD_CLASS: u8 = 0x03;
pub const STACK_FRAME: u8 = 0x04;
pub const STACK_TRACE: u8 = 0x05;
pub const ALLOC_SITES: u8 = 0x06;
pub const HEAP_SUMMARY: u8 = 0x07;
pub const START_THREAD: u8 = 0x0A;
pub const END_THREAD: u8 = 0x0B;
pub const HEAP_DUMP: u8 = 0x0C;
pub const CPU_SAMPLES: u8 = 0x0D;
pub const CONTROL_SETTINGS: u8 = 0x0E;
pub const HEAP_DUMP_SEGMENT: u8 = 0x1C;
pub const HEAP_DUMP_END: u8 = 0x2C;

/// True for the top-level record tags of the format (HPROF 1.0.1–1.0.3).
pub fn is_record_tag(tag: u8) -> bool {
    matches!(tag, STRING..=HEAP_SUMMARY | START_THREAD..=CONTROL_SETTINGS)
        || tag == HEAP_DUMP_SEGMENT
        || tag == HEAP_DUMP_END
}

// Heap dump sub-records.
pub const ROOT_UNKNOWN: u8 = 0xFF;
pub const ROOT_JNI_GLOBAL: u8 = 0x01;
pub const ROOT_JNI_LOCAL: u8 = 0x02;
pub const ROOT_JAVA_FRAME: u8 = 0x03;
pub const ROOT_NATIVE_STACK: u8 = 0x04;
pub const ROOT_STICKY_CLASS: u8 = 0x05;
pub const ROOT_THREAD_BLOCK: u8 = 0x06;
pub const ROOT_MONITOR_USED: u8 = 0x07;
pub const ROOT_THREAD_OBJECT: u8 = 0x08;
pub const CLASS_DUMP: u8 = 0x20;
pub const INSTANCE_DUMP: u8 = 0x21;
pub const OBJECT_ARRAY_DUMP: u8 = 0x22;
pub const PRIMITIVE_ARRAY_DUMP: u8 = 0x23;
// Android additions.
pub const ROOT_INTERNED_STRING: u8 = 0x89;
pub const ROOT_FINALIZING: u8 = 0x8A;
pub const ROOT_DEBUGGER: u8 = 0x8B;
pub const ROOT_REFERENCE_CLEANUP: u8 = 0x8C;
pub const ROOT_VM_INTERNAL: u8 = 0x8D;
pub const ROOT_JNI_MONITOR: u8 = 0x8E;
pub const ROOT_UNREACHABLE: u8 = 0x90;
pub const PRIMITIVE_ARRAY_NODATA: u8 = 0xC3;
pub const HEAP_DUMP_INFO: u8 = 0xFE;

/// A record tag, with the level it was read at (top-level record or heap-dump sub-record),
/// so it prints with its name: `0x21 INSTANCE_DUMP`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tag {
    pub value: u8,
    pub heap: bool,
}

impl Tag {
    pub const HEADER: Tag = Tag {
        value: 0,
        heap: false,
    };
    pub fn record(value: u8) -> Tag {
        Tag { value, heap: false }
    }
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
    Object,
    Boolean,
    Char,
    Float,
    Double,
    Byte,
    Short,
    Int,
    Long,
}

impl BasicType {
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
