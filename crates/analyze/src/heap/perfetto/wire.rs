//! A Perfetto trace's framing and the few messages the analysis reads of it.
//!
//! A trace is a run of `Trace.packet` records (field 1, length-delimited), so it is read
//! one packet at a time from the mapped bytes: a record's length is checked against what
//! remains before its bytes are taken, and a varint is at most 10 bytes. Only packets that
//! hold a heap graph (`TracePacket` field 56) are read: [`heap_graphs`] walks their parts
//! (objects, types, names, roots) without decoding them, and each part is decoded by
//! prost when it is used, through the structs below (each names only the fields read,
//! prost skips the others), into a message the caller reuses: a heap graph's millions of
//! objects cost no allocation each, and no packet is decoded whole.

use crate::base::error::TraceError;

/// The tag byte of `Trace.packet`: field 1, length-delimited (the core's file-kind sniffer
/// tells a trace by it).
pub use hprof_shrink_core::kind::TRACE_PACKET_TAG as PACKET_TAG;

/// The field number of `TracePacket.heap_graph` (an extension of ART's).
pub(crate) const HEAP_GRAPH_FIELD: u64 = 56;

/// A varint at `at` of `bytes`: its value and its length (at most 10 bytes).
#[inline]
pub fn varint(bytes: &[u8], at: usize) -> Result<(u64, usize), TraceError> {
    match quick_varint(bytes, at) {
        (_, 0) => Err(varint_fault(bytes, at)),
        read => Ok(read),
    }
}

/// [`varint`] as the hot loops read it: (value, length), the length 0 where the varint
/// does not read ([`varint_fault`] says why). Two words, no error to carry: most of a heap
/// graph's varints (keys, lengths, small deltas) are one byte, most of the rest two, and
/// both are read inline.
#[inline(always)]
fn quick_varint(bytes: &[u8], at: usize) -> (u64, usize) {
    if let Some(&a) = bytes.get(at) {
        if a < 0x80 {
            return (u64::from(a), 1);
        }
        if let Some(&b) = bytes.get(at + 1) {
            if b < 0x80 {
                return (u64::from(a & 0x7f) | u64::from(b) << 7, 2);
            }
        }
    }
    long_varint(bytes, at)
}

/// [`quick_varint`] of any length.
#[inline(never)]
fn long_varint(bytes: &[u8], at: usize) -> (u64, usize) {
    let mut value = 0u64;
    for i in 0..10 {
        let Some(&b) = bytes.get(at + i) else {
            return (0, 0);
        };
        value |= u64::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            // The tenth byte may carry only the top bit of a u64.
            if i == 9 && b > 1 {
                break;
            }
            return (value, i + 1);
        }
    }
    (0, 0)
}

/// Why the varint at `at` does not read: the bytes end inside it, or it is too long.
#[cold]
fn varint_fault(bytes: &[u8], at: usize) -> TraceError {
    let rest = bytes.get(at..).unwrap_or_default();
    match rest.len() < 10 && rest.iter().all(|&b| b & 0x80 != 0) {
        true => TraceError::Truncated { offset: at as u64 },
        false => TraceError::BadVarint { offset: at as u64 },
    }
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
#[inline(always)]
fn field_at(packet: &[u8], at: usize, offset: u64) -> Result<(Field<'_>, usize), TraceError> {
    let key = read_varint(packet, at, offset)?;
    let body = at + key.1;
    let key = key.0;
    let (start, next) = match key & 7 {
        0 => (body, body + read_varint(packet, body, offset)?.1),
        1 => (body, body + 8),
        2 => {
            let (len, n) = read_varint(packet, body, offset)?;
            let left = (packet.len() - body - n) as u64;
            if len > left {
                return Err(past_packet(offset + at as u64, key));
            }
            (body + n, body + n + len as usize)
        }
        5 => (body, body + 4),
        _ => return Err(bad_wire(offset + at as u64, key)),
    };
    if next > packet.len() || key >> 3 == 0 {
        return Err(past_packet(offset + at as u64, key));
    }
    let field = Field {
        number: key >> 3,
        wire: (key & 7) as u8,
        value: &packet[start..next],
        offset: offset + start as u64,
    };
    Ok((field, next))
}

/// [`varint`] of a message's `bytes` that start at `offset` in the file (the error's
/// offset the file's), read inline.
#[inline(always)]
fn read_varint(bytes: &[u8], at: usize, offset: u64) -> Result<(u64, usize), TraceError> {
    match quick_varint(bytes, at) {
        (_, 0) => Err(varint_fault(bytes, at).shifted(offset)),
        read => Ok(read),
    }
}

/// A field (`key`, at `offset`) that runs past its packet (or numbered 0).
#[cold]
fn past_packet(offset: u64, key: u64) -> TraceError {
    TraceError::BadPacket {
        offset,
        what: format!("field {} runs past its packet", key >> 3),
    }
}

/// A field (`key`, at `offset`) of a wire type protobuf does not have.
#[cold]
fn bad_wire(offset: u64, key: u64) -> TraceError {
    TraceError::BadPacket {
        offset,
        what: format!("wire type {} of field {}", key & 7, key >> 3),
    }
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

/// `HeapGraph`'s fields the analysis reads: its pid, and its repeated parts.
pub mod part {
    /// The process the heap is of (an int32).
    pub const PID: u64 = 1;
    /// An object (`HeapGraphObject`).
    pub const OBJECT: u64 = 2;
    /// An interned field name (`Class.field`, or `type Class.field` in old traces).
    pub const FIELD_NAME: u64 = 4;
    /// A GC root (`HeapGraphRoot`).
    pub const ROOT: u64 = 7;
    /// A type (`HeapGraphType`).
    pub const TYPE: u64 = 9;
}

/// One packet's heap graph, undecoded: the packet's offset and its `HeapGraph` fields
/// (one, unless the packet repeats field 56, whose messages protobuf merges: their
/// parts in order, the last pid).
#[derive(Debug)]
pub struct GraphPacket<'a> {
    /// Where the packet's bytes start in the file.
    pub offset: u64,
    graphs: Vec<Field<'a>>,
}

impl<'a> GraphPacket<'a> {
    /// The process the graph is of (the last pid its messages state; 0 without one).
    pub fn pid(&self) -> Result<i32, TraceError> {
        let mut pid = 0;
        // A plain loop over the fields (every object's frame is passed over).
        for g in &self.graphs {
            let mut at = 0;
            while at < g.value.len() {
                let (f, next) = field_at(g.value, at, g.offset)?;
                if f.number == part::PID {
                    // An int32, as protobuf truncates it.
                    pid = f.varint().ok_or_else(|| wire_type(&f))? as i32;
                }
                at = next;
            }
        }
        Ok(pid)
    }

    /// The parts the analysis reads (objects, field names, roots, types), in order, each
    /// a length-delimited field whose bytes its message's decoder takes; the first fault
    /// ends them.
    pub fn parts(&self) -> Parts<'a, '_> {
        Parts {
            graphs: &self.graphs,
            at: 0,
        }
    }
}

/// The parts of a packet's heap graph ([`GraphPacket::parts`]): a plain loop over its
/// fields (a heap graph has millions), the others passed over.
pub struct Parts<'a, 'g> {
    /// The `HeapGraph` messages left, the first being read.
    graphs: &'g [Field<'a>],
    /// Where the next field of the first starts.
    at: usize,
}

impl<'a> Iterator for Parts<'a, '_> {
    type Item = Result<Field<'a>, TraceError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            let g = self.graphs.first()?;
            if self.at >= g.value.len() {
                self.graphs = &self.graphs[1..];
                self.at = 0;
                continue;
            }
            let f = match field_at(g.value, self.at, g.offset) {
                Ok((f, next)) => {
                    self.at = next;
                    f
                }
                Err(e) => {
                    self.graphs = &[];
                    return Some(Err(e));
                }
            };
            if !matches!(
                f.number,
                part::OBJECT | part::FIELD_NAME | part::ROOT | part::TYPE
            ) {
                continue;
            }
            if f.wire != 2 {
                self.graphs = &[];
                return Some(Err(wire_type(&f)));
            }
            return Some(Ok(f));
        }
    }
}

/// A field of a wire type its message does not declare it with.
fn wire_type(f: &Field<'_>) -> TraceError {
    TraceError::BadPacket {
        offset: f.offset,
        what: format!("wire type {} of heap graph field {}", f.wire, f.number),
    }
}

/// The packets of `bytes` that hold a heap graph, in order.
pub fn heap_graphs(bytes: &[u8]) -> impl Iterator<Item = Result<GraphPacket<'_>, TraceError>> + '_ {
    Packets::new(bytes).filter_map(|p| {
        let (offset, packet) = match p {
            Ok(p) => p,
            Err(e) => return Some(Err(e)),
        };
        let mut graphs = Vec::new();
        for f in fields(packet, offset) {
            match f {
                Ok(f) if f.number != HEAP_GRAPH_FIELD => {}
                Ok(f) if f.wire != 2 => return Some(Err(wire_type(&f))),
                Ok(f) => graphs.push(f),
                Err(e) => return Some(Err(e)),
            }
        }
        (!graphs.is_empty()).then_some(Ok(GraphPacket { offset, graphs }))
    })
}

/// Decodes `part`'s message into `into` (cleared first, its buffers kept).
pub fn decode_into<M: prost::Message>(part: &Field<'_>, into: &mut M) -> Result<(), TraceError> {
    into.clear();
    into.merge(part.value).map_err(|e| TraceError::BadPacket {
        offset: part.offset,
        what: e.to_string(),
    })
}

/// A field of an object (`key`, at `offset`) of another wire type than its own.
#[cold]
fn object_wire(offset: u64, key: u64) -> TraceError {
    TraceError::BadPacket {
        offset,
        what: format!("wire type {} of object field {}", key & 7, key >> 3),
    }
}

/// The varints of a packed repeated field (`bytes`, at `offset` in the file), added to
/// `into` (room made first: at most one a byte).
fn packed(bytes: &[u8], offset: u64, into: &mut Vec<u64>) -> Result<(), TraceError> {
    into.reserve(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let (v, n) = read_varint(bytes, i, offset)?;
        into.push(v);
        i += n;
    }
    Ok(())
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

/// `HeapGraphObject`, read by [`GraphObject::read`] (by hand, not by prost: a heap graph
/// holds millions, and prost's generic decoding of each cost more than the rest of their
/// reading; the other messages, a few each, are prost's).
#[derive(Debug, Default, Clone, PartialEq)]
pub struct GraphObject {
    /// Its id (field 1).
    pub id: Option<u64>,
    /// Its id less the previous object's (field 7).
    pub id_delta: Option<u64>,
    /// Its type's key (field 2).
    pub type_id: Option<u64>,
    /// Bytes it takes (absent: its type's object size; field 3).
    pub self_size: Option<u64>,
    /// The field names of its references, when the object gives them itself (field 4).
    pub reference_field_id: Vec<u64>,
    /// The objects it refers to (0: null), less `reference_field_id_base` (field 5).
    pub reference_object_id: Vec<u64>,
    /// Added to every non-zero `reference_object_id` (field 6).
    pub reference_field_id_base: Option<u64>,
    /// The heap it and the objects after it are in, when it changes (field 9, an int32).
    pub heap_type_delta: Option<i32>,
    /// `NativeAllocationRegistry.size`, on a registry (field 8, an int64).
    pub native_allocation_registry_size_field: Option<i64>,
    /// `Bitmap.mWidth`, on a Bitmap (field 13, a uint32).
    pub bitmap_width_field: Option<u32>,
    /// `Bitmap.mHeight`, on a Bitmap (field 14, a uint32).
    pub bitmap_height_field: Option<u32>,
}

impl GraphObject {
    /// Reads the object `part` holds into `self`, cleared first (its buffers kept): as
    /// protobuf reads it (the last value of a field, repeated fields packed or not, ints
    /// truncated to their type, other fields skipped); a field of another wire type than
    /// its own, or a frame that does not parse, is an error at its offset.
    pub fn read(&mut self, part: &Field<'_>) -> Result<(), TraceError> {
        self.clear();
        let (msg, offset) = (part.value, part.offset);
        let mut at = 0;
        while at < msg.len() {
            let (key, n) = read_varint(msg, at, offset)?;
            let body = at + n;
            // Matched on the whole key (one byte for every field read): one jump.
            match key {
                // Fields 1 to 9, 13 and 14 as varints (4 and 5 unpacked).
                0x08 | 0x10 | 0x18 | 0x20 | 0x28 | 0x30 | 0x38 | 0x40 | 0x48 | 0x68 | 0x70 => {
                    let (v, n) = read_varint(msg, body, offset)?;
                    self.set(key >> 3, v);
                    at = body + n;
                }
                // Fields 4 and 5 packed.
                0x22 | 0x2a => {
                    // As `field_at` frames it, read in place.
                    let (len, n) = read_varint(msg, body, offset)?;
                    let start = body + n;
                    if len > (msg.len() - start) as u64 {
                        return Err(past_packet(offset + at as u64, key));
                    }
                    let end = start + len as usize;
                    let into = match key >> 3 {
                        4 => &mut self.reference_field_id,
                        _ => &mut self.reference_object_id,
                    };
                    packed(&msg[start..end], offset + start as u64, into)?;
                    at = end;
                }
                _ if matches!(key >> 3, 1..=9 | 13 | 14) => {
                    return Err(object_wire(offset + at as u64, key))
                }
                // Another field: skipped, its frame checked.
                _ => at = field_at(msg, at, offset)?.1,
            }
        }
        Ok(())
    }

    /// Field `number`'s varint `v`.
    fn set(&mut self, number: u64, v: u64) {
        match number {
            1 => self.id = Some(v),
            2 => self.type_id = Some(v),
            3 => self.self_size = Some(v),
            4 => self.reference_field_id.push(v),
            5 => self.reference_object_id.push(v),
            6 => self.reference_field_id_base = Some(v),
            7 => self.id_delta = Some(v),
            8 => self.native_allocation_registry_size_field = Some(v as i64),
            9 => self.heap_type_delta = Some(v as i32),
            13 => self.bitmap_width_field = Some(v as u32),
            14 => self.bitmap_height_field = Some(v as u32),
            _ => {}
        }
    }

    fn clear(&mut self) {
        // Field by field: the buffers stay where they are.
        let GraphObject {
            id,
            id_delta,
            type_id,
            self_size,
            reference_field_id,
            reference_object_id,
            reference_field_id_base,
            heap_type_delta,
            native_allocation_registry_size_field,
            bitmap_width_field,
            bitmap_height_field,
        } = self;
        (*id, *id_delta, *type_id, *self_size) = (None, None, None, None);
        reference_field_id.clear();
        reference_object_id.clear();
        (*reference_field_id_base, *heap_type_delta) = (None, None);
        *native_allocation_registry_size_field = None;
        (*bitmap_width_field, *bitmap_height_field) = (None, None);
    }
}
