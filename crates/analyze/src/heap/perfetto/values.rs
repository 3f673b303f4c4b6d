//! The few field values a heap graph carries beside references (`HeapGraphObject`'s
//! "object value fields"), described as the fields a dump would hold them in, so that
//! the analysis's one reader of each fact reads them as it reads a dump's:
//! `native_allocation_registry_size_field` as `NativeAllocationRegistry.size` (the
//! registered native sizes), `bitmap_width_field` and `bitmap_height_field` as a Bitmap's
//! `mWidth` and `mHeight` (its size in pixels). A type declares, after its references,
//! those its objects carry (any of them; the others' are zero).

use hprof_shrink_core::hprof::{BasicType, Value};

use super::wire::GraphObject;
use crate::heap::source::Field;

/// Each carried value's field: its name and type, in the order a class declares them.
const FIELDS: [(&str, BasicType); 3] = [
    ("size", BasicType::Long),
    ("mWidth", BasicType::Int),
    ("mHeight", BasicType::Int),
];

/// The values `o` carries, a bit each (in [`FIELDS`]' order).
pub fn carried(o: &GraphObject) -> u8 {
    let has = [
        o.native_allocation_registry_size_field.is_some(),
        o.bitmap_width_field.is_some(),
        o.bitmap_height_field.is_some(),
    ];
    has.iter()
        .enumerate()
        .fold(0, |m, (i, &h)| m | (u8::from(h) << i))
}

/// The fields of the values `mask` names.
pub fn fields(mask: u8) -> impl Iterator<Item = Field<'static>> {
    FIELDS
        .iter()
        .enumerate()
        .filter(move |(i, _)| mask & (1 << i) != 0)
        .map(|(_, &(name, ty))| Field { name, ty })
}

/// `o`'s values of the fields `mask` names, in their order (zero where it has none).
pub fn values(o: &GraphObject, mask: u8, out: &mut Vec<Value>) {
    let all = [
        Value::Long(o.native_allocation_registry_size_field.unwrap_or(0)),
        // Past i32 (no Bitmap is), the largest an int field holds.
        Value::Int(int(o.bitmap_width_field)),
        Value::Int(int(o.bitmap_height_field)),
    ];
    out.extend(
        all.into_iter()
            .enumerate()
            .filter(|(i, _)| mask & (1 << i) != 0)
            .map(|(_, v)| v),
    );
}

fn int(v: Option<u32>) -> i32 {
    i32::try_from(v.unwrap_or(0)).unwrap_or(i32::MAX)
}

/// Bytes the values `mask` names take.
pub fn bytes(mask: u8) -> u64 {
    fields(mask).map(|f| u64::from(f.ty.size(4))).sum()
}
