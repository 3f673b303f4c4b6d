//! A Perfetto trace's framing and the few messages the analysis reads of it.
//!
//! A trace is a run of `Trace.packet` records (field 1, length-delimited), so it is read
//! one packet at a time from the mapped bytes: a record's length is checked against what
//! remains before its bytes are taken, and a varint is at most 10 bytes. Only packets that
//! hold a heap graph (`TracePacket` field 56) are decoded, by prost, through the structs
//! below: each names only the fields read, prost skips the others.

use crate::base::error::TraceError;

/// The tag byte of `Trace.packet`: field 1, length-delimited.
pub const PACKET_TAG: u8 = 0x0a;

/// The field number of `TracePacket.heap_graph` (an extension of ART's).
const HEAP_GRAPH_FIELD: u64 = 56;

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
    let mut at = 0;
    let bad = |at: usize| TraceError::BadPacket {
        offset: offset + at as u64,
        what: "a field runs past its packet".into(),
    };
    while at < packet.len() {
        let (key, n) = varint(packet, at).map_err(|e| e.shifted(offset))?;
        at += n;
        if key >> 3 == HEAP_GRAPH_FIELD {
            return Ok(true);
        }
        match key & 7 {
            0 => at += varint(packet, at).map_err(|e| e.shifted(offset))?.1,
            1 => at += 8,
            2 => {
                let (len, n) = varint(packet, at).map_err(|e| e.shifted(offset))?;
                let len = usize::try_from(len).map_err(|_| bad(at))?;
                at = at.checked_add(n + len).ok_or_else(|| bad(at))?;
            }
            5 => at += 4,
            _ => {
                return Err(TraceError::BadPacket {
                    offset: offset + at as u64,
                    what: format!("wire type {} of field {}", key & 7, key >> 3),
                })
            }
        }
        if at > packet.len() {
            return Err(bad(at));
        }
    }
    Ok(false)
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
}
