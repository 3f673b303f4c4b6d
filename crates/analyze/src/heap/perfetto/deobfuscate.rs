//! A trace's own deobfuscation mapping (`TracePacket.deobfuscation_mapping`, R8's names
//! for the app's obfuscated classes and fields, which Perfetto's tools can add to a
//! trace): read into a [`Mapping`], the table `--mapping` fills, and applied as the heap
//! is read, so the analysis shows the names as the code has them. `--mapping` still
//! applies, after it, to the names it leaves.
//!
//! Bounds: each packet is decoded whole (as a heap-graph packet is); what is kept is the
//! names' text, at most [`MAX_MAPPING_BYTES`] in all (an error past that), and 24 bytes a
//! class and 16 a field beside it.

use super::wire::{self, Packets};
use crate::base::error::TraceError;
use crate::heap::mapping::{Builder, Mapping, MAX_MAPPING_BYTES};

/// The field number of `TracePacket.deobfuscation_mapping`.
const DEOBFUSCATION_FIELD: u64 = 64;

/// `TracePacket`, for its deobfuscation mapping.
#[derive(Clone, PartialEq, prost::Message)]
struct Packet {
    #[prost(message, optional, tag = "64")]
    deobfuscation_mapping: Option<DeobfuscationMapping>,
}

/// `DeobfuscationMapping`: its classes (its package and version are not read).
#[derive(Clone, PartialEq, prost::Message)]
struct DeobfuscationMapping {
    #[prost(message, repeated, tag = "3")]
    obfuscated_classes: Vec<ObfuscatedClass>,
}

/// `ObfuscatedClass`: its names and its fields' (its methods are not read).
#[derive(Clone, PartialEq, prost::Message)]
struct ObfuscatedClass {
    #[prost(bytes = "vec", optional, tag = "1")]
    obfuscated_name: Option<Vec<u8>>,
    #[prost(bytes = "vec", optional, tag = "2")]
    deobfuscated_name: Option<Vec<u8>>,
    #[prost(message, repeated, tag = "3")]
    obfuscated_members: Vec<ObfuscatedMember>,
}

/// `ObfuscatedMember`: a field's names.
#[derive(Clone, PartialEq, prost::Message)]
struct ObfuscatedMember {
    #[prost(bytes = "vec", optional, tag = "1")]
    obfuscated_name: Option<Vec<u8>>,
    /// Its name, or `Class.name` when declared by another class (its last part is taken).
    #[prost(bytes = "vec", optional, tag = "2")]
    deobfuscated_name: Option<Vec<u8>>,
}

/// The mapping the trace's deobfuscation packets give, all of them together (a later
/// packet's class overrides an earlier one's); `None` when it has none.
pub fn read(bytes: &[u8]) -> Result<Option<Mapping>, TraceError> {
    let mut b = Builder::default();
    for p in Packets::new(bytes) {
        let (offset, packet) = p?;
        if !wire::has_field(packet, offset, DEOBFUSCATION_FIELD)? {
            continue;
        }
        let decoded =
            <Packet as prost::Message>::decode(packet).map_err(|e| TraceError::BadPacket {
                offset,
                what: e.to_string(),
            })?;
        let too_large = |_| TraceError::BadPacket {
            offset,
            what: format!(
                "the deobfuscation mappings hold more than {MAX_MAPPING_BYTES} bytes of names"
            ),
        };
        let mapping = decoded.deobfuscation_mapping.unwrap_or_default();
        for c in mapping.obfuscated_classes {
            let (Some(obfuscated), Some(original)) = (c.obfuscated_name, c.deobfuscated_name)
            else {
                continue;
            };
            b.class(&text(&original), &text(&obfuscated))
                .map_err(too_large)?;
            for m in c.obfuscated_members {
                let (Some(obfuscated), Some(original)) = (m.obfuscated_name, m.deobfuscated_name)
                else {
                    continue;
                };
                let original = text(&original);
                let name = original.rsplit('.').next().unwrap_or(&original);
                b.field(name, &text(&obfuscated)).map_err(too_large)?;
            }
        }
    }
    Ok(b.finish())
}

fn text(bytes: &[u8]) -> std::borrow::Cow<'_, str> {
    String::from_utf8_lossy(bytes)
}

/// `name` (a type's, as a heap graph spells it: `a.b`, `a.b[]`, `java.lang.Class<a.b>`)
/// with its class deobfuscated; `None` when the mapping does not name it.
pub fn class(m: &Mapping, name: &str) -> Option<String> {
    match name
        .strip_prefix("java.lang.Class<")
        .and_then(|n| n.strip_suffix('>'))
    {
        Some(inner) => m.class(inner).map(|n| format!("java.lang.Class<{n}>")),
        None => m.class(name),
    }
}

/// A field name as a heap graph spells it (`a.b.c`, `int a.b.c`): its field's name,
/// deobfuscated by its class's entry when the mapping has one.
pub fn field(m: &Mapping, text: &str) -> Option<String> {
    let text = text.rsplit(' ').next().unwrap_or(text);
    let (class, field) = text.rsplit_once('.')?;
    m.field(class, field)
}
