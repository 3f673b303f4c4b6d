//! A Perfetto trace's framing and the few messages the analysis reads of it.
//!
//! A trace is a run of `Trace.packet` records (field 1, length-delimited), so it is read
//! one packet at a time from the mapped bytes: a record's length is checked against what
//! remains before its bytes are taken, and a varint is at most 10 bytes. Only packets that
//! hold a heap graph (`TracePacket` field 56) are decoded, by prost, through the structs
//! below: each names only the fields read, prost skips the others.

use crate::base::error::TraceError;

/// The tag byte of `Trace.packet`: field 1, length-delimited (the core's file-kind sniffer
/// tells a trace by it).
pub use hprof_shrink_core::kind::TRACE_PACKET_TAG as PACKET_TAG;

/// The field number of `TracePacket.heap_graph` (an extension of ART's).
pub(crate) const HEAP_GRAPH_FIELD: u64 = 56;

/// A varint at `at` of `bytes`: its value and its length (at most 10 bytes).
pub fn varint(bytes: &[u8], at: usize) -> Result<(u64, usize), TraceError> {
    let mut value = 0u64;
    for i in 0..10 {
        let Some(&b) = bytes.get(at + i) else {
            return Err(TraceError::Truncated { offset: at as u64 });
        };
        value |= u64::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            // The tenth byte may carry only the top bit of a u64.
            if i == 9 && b > 1 {
                break;
            }
            return Ok((value, i + 1));
        }
    }
    Err(TraceError::BadVarint { offset: at as u64 })
}

/// The packets of a trace, as (offset of the packet's bytes, its bytes).
pub struct Packets<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Packets<'a> {
    /// The packets of `bytes`, from its start.
    pub fn new(bytes: &'a [u8]) -> Packets<'a> {
        Packets { bytes, at: 0 }
    }
}

impl<'a> Iterator for Packets<'a> {
    type Item = Result<(u64, &'a [u8]), TraceError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.at >= self.bytes.len() {
            return None;
        }
        let start = self.at;
        let r = self.packet(start);
        if r.is_err() {
            // One error ends the walk: what follows a broken frame cannot be found.
            self.at = self.bytes.len();
        }
        Some(r)
    }
}

impl<'a> Packets<'a> {
    fn packet(&mut self, start: usize) -> Result<(u64, &'a [u8]), TraceError> {
        let tag = self.bytes[start];
        if tag != PACKET_TAG {
            return Err(TraceError::NotAPacket {
                offset: start as u64,
                tag,
            });
        }
        let (len, n) = varint(self.bytes, start + 1)?;
        let body = start + 1 + n;
        let remaining = (self.bytes.len() - body) as u64;
        if len > remaining {
            return Err(TraceError::PacketPastEnd {
                offset: start as u64,
                len,
                remaining,
            });
        }
        self.at = body + len as usize;
        Ok((body as u64, &self.bytes[body..self.at]))
    }
}

/// Whether `packet` holds a heap graph: a walk over its top-level fields' tags, without
/// decoding them (most packets of a trace are something else).
pub fn has_heap_graph(packet: &[u8], offset: u64) -> Result<bool, TraceError> {
    has_field(packet, offset, HEAP_GRAPH_FIELD)
}

/// Whether `packet` has a top-level field `wanted`.
pub fn has_field(packet: &[u8], offset: u64, wanted: u64) -> Result<bool, TraceError> {
    for field in fields(packet, offset) {
        if field?.number == wanted {
            return Ok(true);
        }
    }
    Ok(false)
}

/// One field of a message: its number, its wire type and its value's bytes (a varint's
/// bytes, a fixed value's, or what a length-delimited field holds).
#[derive(Debug, Clone, Copy)]
pub struct Field<'a> {
    /// The field number.
    pub number: u64,
    /// The wire type (0 varint, 1 fixed64, 2 length-delimited, 5 fixed32).
    pub wire: u8,
    /// The value's bytes.
    pub value: &'a [u8],
    /// Where the value starts in the file.
    pub offset: u64,
}

impl Field<'_> {
    /// A varint field's value; `None` for any other wire type.
    pub fn varint(&self) -> Option<u64> {
        if self.wire != 0 {
            return None;
        }
        varint(self.value, 0).ok().map(|(v, _)| v)
    }
}

/// The fields of `msg` (whose bytes start at `offset` in the file), in order; the first
/// fault ends them.
pub fn fields(msg: &[u8], offset: u64) -> impl Iterator<Item = Result<Field<'_>, TraceError>> {
    let mut at = 0;
    std::iter::from_fn(move || {
        if at >= msg.len() {
            return None;
        }
        let r = field_at(msg, at, offset);
        at = match &r {
            Ok((_, next)) => *next,
            Err(_) => msg.len(),
        };
        Some(r.map(|(f, _)| f))
    })
}

/// The field at `at` of `packet` (whose bytes start at `offset` in the file) and where
/// the next field starts (within the packet, or an error).
fn field_at(packet: &[u8], at: usize, offset: u64) -> Result<(Field<'_>, usize), TraceError> {
    let (key, n) = varint(packet, at).map_err(|e| e.shifted(offset))?;
    let body = at + n;
    let past = |what: String| TraceError::BadPacket {
        offset: offset + at as u64,
        what,
    };
    let (start, next) = match key & 7 {
        0 => (
            body,
            body + varint(packet, body).map_err(|e| e.shifted(offset))?.1,
        ),
        1 => (body, body + 8),
        2 => {
            let (len, n) = varint(packet, body).map_err(|e| e.shifted(offset))?;
            let left = (packet.len() - body - n) as u64;
            if len > left {
                return Err(past(format!("field {} runs past its packet", key >> 3)));
            }
            (body + n, body + n + len as usize)
        }
        5 => (body, body + 4),
        wire => return Err(past(format!("wire type {wire} of field {}", key >> 3))),
    };
    if next > packet.len() || key >> 3 == 0 {
        return Err(past(format!("field {} runs past its packet", key >> 3)));
    }
    let field = Field {
        number: key >> 3,
        wire: (key & 7) as u8,
        value: &packet[start..next],
        offset: offset + start as u64,
    };
    Ok((field, next))
}

/// Bytes [`is_trace`] looks at.
pub const SNIFF_WINDOW: usize = 64 << 10;

/// Whether `bytes` (a whole file) start as a Perfetto trace does: every packet within the
/// first [`SNIFF_WINDOW`] bytes is a `Trace.packet` record whose fields parse exactly to
/// its end, and the record that crosses the window's end (if any) has the packet's tag and
/// a length within the file. A trace has no magic: this is what stands for one. HPROF, zip
/// and gzip files never pass (their first byte is not 0x0a); other bytes pass only where
/// each of their records lines up, key by key, with the next.
pub fn is_trace(bytes: &[u8]) -> bool {
    sniff(bytes, true)
}

/// [`is_trace`] of a file's first bytes only (`head`, at most [`SNIFF_WINDOW`] of them):
/// the packet that runs past them is taken as [`is_trace`] takes the one crossing the
/// window, its length unchecked (the file's is unknown).
pub fn starts_as_trace(head: &[u8]) -> bool {
    sniff(head, false)
}

/// [`is_trace`] (`whole`: `bytes` is the whole file) or [`starts_as_trace`].
fn sniff(bytes: &[u8], whole: bool) -> bool {
    if bytes.first() != Some(&PACKET_TAG) {
        return false;
    }
    let window = bytes.len().min(SNIFF_WINDOW);
    let mut packets = Packets::new(bytes);
    let mut seen = false;
    while packets.at < window {
        let start = packets.at;
        let (offset, packet) = match packets.next() {
            Some(Ok(p)) => p,
            // The head ends inside a packet whose tag and length read.
            Some(Err(TraceError::PacketPastEnd { .. })) if !whole && start != 0 => return true,
            _ => return false,
        };
        if packets.at > window && start != 0 {
            // Crossing the window's end: its tag and length were checked; its fields are
            // past what a sniff reads (unless it is the first).
            return true;
        }
        let mut at = 0;
        while at < packet.len() {
            match field_at(packet, at, offset) {
                Ok((_, next)) => at = next,
                Err(_) => return false,
            }
        }
        seen = true;
    }
    seen
}

/// `TracePacket`, for its heap graph.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Packet {
    /// Field 56.
    #[prost(message, optional, tag = "56")]
    pub heap_graph: Option<Graph>,
}

/// `HeapGraph`: one packet's part of a process's heap.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Graph {
    /// The process the heap is of.
    #[prost(int32, optional, tag = "1")]
    pub pid: Option<i32>,
    /// Objects.
    #[prost(message, repeated, tag = "2")]
    pub objects: Vec<GraphObject>,
    /// Interned field names (`Class.field`, or `type Class.field` in old traces).
    #[prost(message, repeated, tag = "4")]
    pub field_names: Vec<InternedString>,
    /// GC roots.
    #[prost(message, repeated, tag = "7")]
    pub roots: Vec<GraphRoot>,
    /// Types.
    #[prost(message, repeated, tag = "9")]
    pub types: Vec<GraphType>,
}

/// `InternedString`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct InternedString {
    /// Its key (from 1).
    #[prost(uint64, optional, tag = "1")]
    pub iid: Option<u64>,
    /// Its text.
    #[prost(bytes = "vec", optional, tag = "2")]
    pub str: Option<Vec<u8>>,
}

/// `HeapGraphRoot`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct GraphRoot {
    /// The objects it holds.
    #[prost(uint64, repeated, tag = "1")]
    pub object_ids: Vec<u64>,
    /// `HeapGraphRoot.Type`.
    #[prost(int32, optional, tag = "2")]
    pub root_type: Option<i32>,
}

/// `HeapGraphType`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct GraphType {
    /// Its key.
    #[prost(uint64, optional, tag = "1")]
    pub id: Option<u64>,
    /// Its Java name.
    #[prost(string, optional, tag = "3")]
    pub class_name: Option<String>,
    /// Bytes an instance takes.
    #[prost(uint64, optional, tag = "4")]
    pub object_size: Option<u64>,
    /// The superclass's type key.
    #[prost(uint64, optional, tag = "5")]
    pub superclass_id: Option<u64>,
    /// The field names (keys) of the references the class itself declares.
    #[prost(uint64, repeated, tag = "6")]
    pub reference_field_id: Vec<u64>,
    /// `HeapGraphType.Kind`.
    #[prost(int32, optional, tag = "7")]
    pub kind: Option<i32>,
    /// The class loader's object id.
    #[prost(uint64, optional, tag = "8")]
    pub classloader_id: Option<u64>,
}

/// `HeapGraphObject`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct GraphObject {
    /// Its id.
    #[prost(uint64, optional, tag = "1")]
    pub id: Option<u64>,
    /// Its id less the previous object's.
    #[prost(uint64, optional, tag = "7")]
    pub id_delta: Option<u64>,
    /// Its type's key.
    #[prost(uint64, optional, tag = "2")]
    pub type_id: Option<u64>,
    /// Bytes it takes (absent: its type's object size).
    #[prost(uint64, optional, tag = "3")]
    pub self_size: Option<u64>,
    /// The field names of its references, when the object gives them itself.
    #[prost(uint64, repeated, tag = "4")]
    pub reference_field_id: Vec<u64>,
    /// The objects it refers to (0: null), less `reference_field_id_base`.
    #[prost(uint64, repeated, tag = "5")]
    pub reference_object_id: Vec<u64>,
    /// Added to every non-zero `reference_object_id`.
    #[prost(uint64, optional, tag = "6")]
    pub reference_field_id_base: Option<u64>,
    /// The heap it and the objects after it are in, when it changes.
    #[prost(int32, optional, tag = "9")]
    pub heap_type_delta: Option<i32>,
    /// `NativeAllocationRegistry.size`, on a registry.
    #[prost(int64, optional, tag = "8")]
    pub native_allocation_registry_size_field: Option<i64>,
    /// `Bitmap.mWidth`, on a Bitmap.
    #[prost(uint32, optional, tag = "13")]
    pub bitmap_width_field: Option<u32>,
    /// `Bitmap.mHeight`, on a Bitmap.
    #[prost(uint32, optional, tag = "14")]
    pub bitmap_height_field: Option<u32>,
}
