//! The one reader of a `java.lang.String`'s text in the analyzer: which fields say it
//! (`value`, JDK 9+'s `coder`, old Android's `offset`/`count` window on a shared
//! `char[]`) and how they become text, through the core's decoder
//! ([`hprof_shrink_core::hprof::javastring::decode`]). Callers read the fields as they
//! already do (by name, or through a cached field slot) and hand them here.

use hprof_shrink_core::hprof::javastring;
use hprof_shrink_core::hprof::{BasicType, Value};

use super::index::Index;

/// The fields of a String instance that say its text.
#[derive(Debug, Clone, Copy, Default)]
pub struct StringFields {
    /// The id of the value array (0: none).
    pub value: u64,
    pub coder: Option<i64>,
    pub offset: Option<i64>,
    pub count: Option<i64>,
}

impl StringFields {
    /// From an instance's fields read by name (the nearest class's, if two share one).
    pub fn from_named(fields: &[(String, Value)]) -> StringFields {
        let get = |name: &str| fields.iter().find(|(n, _)| n == name).map(|(_, v)| *v);
        StringFields {
            value: get("value").and_then(|v| v.as_object()).unwrap_or(0),
            coder: get("coder").and_then(|v| v.as_i64()),
            offset: get("offset").and_then(|v| v.as_i64()),
            count: get("count").and_then(|v| v.as_i64()),
        }
    }

    /// The text: at most `max_units` of its UTF-16 units, and how many it has in all.
    /// Reading a head keeps each look at a String as cheap as the head, however long the
    /// String. `None` when the value is not a `char[]` or `byte[]` of the dump.
    pub fn head(&self, ix: &Index<'_>, max_units: usize) -> Option<(String, usize)> {
        if self.count == Some(0) {
            return Some((String::new(), 0));
        }
        let (ty, bytes) = ix.primitive(ix.node(self.value)?)?;
        let unit = match (ty, self.coder) {
            (BasicType::Char, _) | (BasicType::Byte, Some(1)) => 2,
            (BasicType::Byte, _) => 1,
            _ => return None,
        };
        let mut units = bytes.len() / unit;
        let mut start = 0;
        // An old Android String: a window on a shared char[].
        if let (BasicType::Char, Some(o), Some(c)) = (ty, self.offset, self.count) {
            if o >= 0 && c >= 0 && (o as u64).saturating_add(c as u64) <= units as u64 {
                start = o as usize;
                units = c as usize;
            }
        }
        let take = units.min(max_units);
        let text = javastring::decode(ty, &bytes[start * unit..(start + take) * unit], self.coder)?;
        Some((text, units))
    }
}
