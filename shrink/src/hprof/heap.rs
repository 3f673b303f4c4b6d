//! Zero-copy views of heap dump sub-records (GC roots, class dumps, instances, arrays and
//! ART's additions). Parsing a sub-record checks every count and length against the bytes
//! that are there before trusting it.

use super::bytes::{id_at, u4_at};
use super::cursor::Cursor;
use super::error::{FormatError, Result};
use super::tags::Tag;
use super::tags::{self, BasicType};

/// Offset of the object id in an instance or array sub-record: right after the tag byte.
pub const OBJECT_ID_AT: usize = 1;

/// One heap dump sub-record: where it is, its bytes, and its parsed view.
#[derive(Debug, Clone)]
pub struct SubRecord<'a> {
    /// Offset of the sub-record's tag byte in the file.
    pub offset: u64,
    /// The whole sub-record, tag included, exactly as in the file.
    pub raw: &'a [u8],
    /// The parsed view.
    pub kind: Sub<'a>,
}

#[derive(Debug, Clone)]
/// A sub-record's parsed view, by kind.
pub enum Sub<'a> {
    /// A GC root of any kind (the tag says which).
    Root(Root),
    /// Boxed: class dumps are few, and a large variant would make every sub-record large.
    ClassDump(Box<ClassDump<'a>>),
    /// INSTANCE_DUMP.
    Instance(Instance<'a>),
    /// OBJECT_ARRAY_DUMP.
    ObjectArray(ObjectArray<'a>),
    /// PRIMITIVE_ARRAY_DUMP.
    PrimitiveArray(PrimitiveArray<'a>),
    /// ART's obsolete PRIMITIVE_ARRAY_NODATA: the header of an array without its elements.
    PrimitiveArrayNoData(PrimitiveArrayNoData),
    /// ART's HEAP_DUMP_INFO: the following objects belong to this heap.
    HeapDumpInfo(HeapDumpInfo),
}

impl<'a> SubRecord<'a> {
    /// The sub-record's tag byte.
    pub fn tag(&self) -> u8 {
        self.raw[0]
    }

    /// The id of the object this sub-record dumps or roots, if any.
    pub fn object_id(&self) -> Option<u64> {
        match &self.kind {
            Sub::Root(r) => Some(r.object_id),
            Sub::ClassDump(c) => Some(c.class_id),
            Sub::Instance(i) => Some(i.id),
            Sub::ObjectArray(a) => Some(a.id),
            Sub::PrimitiveArray(a) => Some(a.id),
            Sub::PrimitiveArrayNoData(a) => Some(a.id),
            Sub::HeapDumpInfo(_) => None,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
/// A GC root: which kind (its sub-record tag) and the object it holds.
pub struct Root {
    /// The root's sub-record tag (0xFF unknown, 0x01 JNI global, ... ART's 0x89-0x8E, 0x90).
    pub tag: u8,
    /// The object held.
    pub object_id: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
/// ART's HEAP_DUMP_INFO: the heap the following objects belong to.
pub struct HeapDumpInfo {
    /// 'A' app, 'Z' zygote, 'I' image, 0 default.
    pub heap_id: u32,
    /// STRING id of the heap's name ("app", "zygote", "image").
    pub name_id: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
/// ART's PRIMITIVE_ARRAY_NODATA: an array's header without its elements.
pub struct PrimitiveArrayNoData {
    /// The array's object id.
    pub id: u64,
    /// Serial number of the stack trace where it was allocated.
    pub stack_serial: u32,
    /// Number of elements.
    pub count: u32,
    /// Type of the elements.
    pub element_type: BasicType,
}

#[derive(Debug, Clone, Copy)]
/// INSTANCE_DUMP: an object and its field values.
pub struct Instance<'a> {
    /// The object's id.
    pub id: u64,
    /// Serial number of the stack trace where it was allocated.
    pub stack_serial: u32,
    /// The id of its class (a CLASS_DUMP).
    pub class_id: u64,
    /// Field values: the class's own fields, then its superclass's, and so on.
    pub data: &'a [u8],
}

impl Instance<'_> {
    /// Offset of the class id within the sub-record's raw bytes (after tag, id, stack serial).
    pub fn class_id_at(id_size: u8) -> usize {
        1 + id_size as usize + 4
    }

    /// Offset of the field data within the sub-record's raw bytes.
    pub fn data_start(id_size: u8) -> usize {
        1 + id_size as usize + 4 + id_size as usize + 4
    }
}

#[derive(Debug, Clone, Copy)]
/// OBJECT_ARRAY_DUMP: an array of references.
pub struct ObjectArray<'a> {
    /// The array's object id.
    pub id: u64,
    /// Serial number of the stack trace where it was allocated.
    pub stack_serial: u32,
    /// Number of elements.
    pub count: u32,
    /// The id of the array's class.
    pub class_id: u64,
    /// The elements: `count` ids, big-endian.
    pub elements: &'a [u8],
    /// The dump's identifier size (4 or 8), to read `elements`.
    pub id_size: u8,
}

impl<'a> ObjectArray<'a> {
    /// The element ids, in order (0 is null).
    pub fn element_ids(&self) -> impl Iterator<Item = u64> + 'a {
        let n = self.id_size as usize;
        self.elements
            .chunks_exact(n)
            .map(move |c| id_at(c, 0, n as u8).expect("chunks of an id's size"))
    }

    /// Offset of the array class id within the sub-record's raw bytes (after tag, id, stack
    /// serial, count).
    pub fn class_id_at(id_size: u8) -> usize {
        1 + id_size as usize + 4 + 4
    }

    /// Offset of the elements within the sub-record's raw bytes.
    pub fn elements_start(id_size: u8) -> usize {
        1 + id_size as usize + 4 + 4 + id_size as usize
    }
}

#[derive(Debug, Clone, Copy)]
/// PRIMITIVE_ARRAY_DUMP: an array of one primitive type, elements in place.
pub struct PrimitiveArray<'a> {
    /// The array's object id.
    pub id: u64,
    /// Serial number of the stack trace where it was allocated.
    pub stack_serial: u32,
    /// Number of elements.
    pub count: u32,
    /// Type of the elements.
    pub element_type: BasicType,
    /// The elements: `count` × the type's size bytes, big-endian.
    pub data: &'a [u8],
}

impl PrimitiveArray<'_> {
    /// Length of the sub-record header (tag, id, stack serial, count, type).
    pub fn header_len(id_size: u8) -> usize {
        1 + id_size as usize + 4 + 4 + 1
    }
}

/// A field or constant value.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Value {
    /// An object id (0 is null).
    Object(u64),
    /// A boolean.
    Boolean(bool),
    /// A UTF-16 code unit.
    Char(u16),
    /// A float.
    Float(f32),
    /// A double.
    Double(f64),
    /// A byte.
    Byte(i8),
    /// A short.
    Short(i16),
    /// An int.
    Int(i32),
    /// A long.
    Long(i64),
}

impl Value {
    /// Decodes a value of type `ty` from the start of `b` (long enough, checked by callers).
    pub fn read(ty: BasicType, b: &[u8], id_size: u8) -> Value {
        match ty {
            BasicType::Object => Value::Object(id_at(b, 0, id_size).expect("checked by callers")),
            BasicType::Boolean => Value::Boolean(b[0] != 0),
            BasicType::Byte => Value::Byte(b[0] as i8),
            BasicType::Char => Value::Char(u16::from_be_bytes([b[0], b[1]])),
            BasicType::Short => Value::Short(i16::from_be_bytes([b[0], b[1]])),
            BasicType::Int => Value::Int(i32::from_be_bytes([b[0], b[1], b[2], b[3]])),
            BasicType::Float => Value::Float(f32::from_be_bytes([b[0], b[1], b[2], b[3]])),
            BasicType::Long => Value::Long(i64::from_be_bytes([
                b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7],
            ])),
            BasicType::Double => Value::Double(f64::from_be_bytes([
                b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7],
            ])),
        }
    }

    /// The object id, if this is a reference.
    pub fn as_object(&self) -> Option<u64> {
        match self {
            Value::Object(id) => Some(*id),
            _ => None,
        }
    }

    /// Integral values widened to i64 (for SDK_INT, counts, native pointers).
    pub fn as_i64(&self) -> Option<i64> {
        match *self {
            Value::Boolean(b) => Some(b as i64),
            Value::Char(v) => Some(v as i64),
            Value::Byte(v) => Some(v as i64),
            Value::Short(v) => Some(v as i64),
            Value::Int(v) => Some(v as i64),
            Value::Long(v) => Some(v),
            _ => None,
        }
    }
}

/// CLASS_DUMP, with its three variable parts kept as checked slices.
#[derive(Debug, Clone, Copy)]
pub struct ClassDump<'a> {
    /// The class object's id.
    pub class_id: u64,
    /// Serial number of the stack trace where it was loaded.
    pub stack_serial: u32,
    /// The superclass's id (0 for java.lang.Object).
    pub super_id: u64,
    /// The class loader's id.
    pub loader_id: u64,
    /// The signers' id.
    pub signers_id: u64,
    /// The protection domain's id.
    pub protection_domain_id: u64,
    /// Reserved (0).
    pub reserved1: u64,
    /// Reserved (0).
    pub reserved2: u64,
    /// Size of an instance in bytes (as the VM counts it).
    pub instance_size: u32,
    /// Number of constant pool entries.
    pub constant_pool_count: u16,
    /// The constant pool entries, unparsed (see [`ClassDump::constant_pool`]).
    pub constant_pool: &'a [u8],
    /// Number of static fields.
    pub static_count: u16,
    /// The static fields with their values, unparsed (see [`ClassDump::static_fields`]).
    pub statics: &'a [u8],
    /// Number of instance field declarations (this class's own, not inherited).
    pub field_count: u16,
    /// The instance field declarations, unparsed (see [`ClassDump::instance_fields`]).
    pub fields: &'a [u8],
    /// Absolute file offset of `fields`, so an index can keep the offset, not the bytes.
    pub fields_offset: u64,
    /// Absolute file offset of `statics`.
    pub statics_offset: u64,
    /// The dump's identifier size (4 or 8).
    pub id_size: u8,
}

#[derive(Debug, Clone, Copy, PartialEq)]
/// One constant pool entry of a CLASS_DUMP.
pub struct ConstantPoolEntry {
    /// The constant pool index.
    pub index: u16,
    /// The value's type.
    pub ty: BasicType,
    /// The value.
    pub value: Value,
}

#[derive(Debug, Clone, Copy, PartialEq)]
/// One static field of a CLASS_DUMP, with its value.
pub struct StaticField {
    /// STRING id of the field's name.
    pub name_id: u64,
    /// The field's type.
    pub ty: BasicType,
    /// Its value.
    pub value: Value,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
/// One instance field declaration of a CLASS_DUMP.
pub struct FieldDecl {
    /// STRING id of the field's name.
    pub name_id: u64,
    /// The field's type.
    pub ty: BasicType,
}

impl<'a> ClassDump<'a> {
    /// The constant pool entries, decoded.
    pub fn constant_pool(&self) -> impl Iterator<Item = ConstantPoolEntry> + 'a {
        let id_size = self.id_size;
        let mut b = self.constant_pool;
        (0..self.constant_pool_count).map(move |_| {
            let index = u16::from_be_bytes([b[0], b[1]]);
            let ty = BasicType::from_u8(b[2]).expect("checked when parsed");
            let value = Value::read(ty, &b[3..], id_size);
            b = &b[3 + ty.size(id_size) as usize..];
            ConstantPoolEntry { index, ty, value }
        })
    }

    /// The static fields, decoded.
    pub fn static_fields(&self) -> impl Iterator<Item = StaticField> + 'a {
        static_fields(self.statics, self.static_count, self.id_size)
    }

    /// This class's own instance field declarations, in the order instances hold them.
    pub fn instance_fields(&self) -> impl Iterator<Item = FieldDecl> + 'a {
        field_decls(self.fields, self.field_count, self.id_size)
    }
}

/// Decodes `count` static field entries from checked bytes.
pub fn static_fields(
    mut b: &[u8],
    count: u16,
    id_size: u8,
) -> impl Iterator<Item = StaticField> + '_ {
    let n = id_size as usize;
    (0..count).map(move |_| {
        let name_id = id_at(b, 0, id_size).expect("checked when parsed");
        let ty = BasicType::from_u8(b[n]).expect("checked when parsed");
        let value = Value::read(ty, &b[n + 1..], id_size);
        b = &b[n + 1 + ty.size(id_size) as usize..];
        StaticField { name_id, ty, value }
    })
}

/// Decodes `count` instance field declarations from checked bytes.
pub fn field_decls(b: &[u8], count: u16, id_size: u8) -> impl Iterator<Item = FieldDecl> + '_ {
    let n = id_size as usize;
    b.chunks_exact(n + 1)
        .take(count as usize)
        .map(move |c| FieldDecl {
            name_id: id_at(c, 0, id_size).expect("checked when parsed"),
            ty: BasicType::from_u8(c[n]).expect("checked when parsed"),
        })
}

/// Iterates the sub-records of one heap dump (segment) body. Stops after the first error.
pub struct SubRecords<'a> {
    body: &'a [u8],
    pos: usize,
    base: u64,
    id_size: u8,
    failed: bool,
}

impl<'a> SubRecords<'a> {
    /// Sub-records of `body`, which starts at file offset `base`.
    pub fn new(body: &'a [u8], base: u64, id_size: u8) -> Self {
        SubRecords {
            body,
            pos: 0,
            base,
            id_size,
            failed: false,
        }
    }

    /// Absolute offset of the next sub-record.
    pub fn offset(&self) -> u64 {
        self.base + self.pos as u64
    }
}

impl<'a> Iterator for SubRecords<'a> {
    type Item = Result<SubRecord<'a>>;

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        if self.failed || self.pos >= self.body.len() {
            return None;
        }
        let rest = &self.body[self.pos..];
        let offset = self.base + self.pos as u64;
        match parse_sub_record(rest, offset, self.id_size) {
            Ok((kind, len)) => {
                let raw = &rest[..len];
                self.pos += len;
                Some(Ok(SubRecord { offset, raw, kind }))
            }
            Err(e) => {
                self.failed = true;
                Some(Err(e))
            }
        }
    }
}

fn basic_type(at: u64, tag: u8, what: &'static str, v: u8) -> Result<BasicType> {
    BasicType::from_u8(v).ok_or_else(|| FormatError::BadType {
        offset: at,
        tag: Tag::heap(tag),
        what,
        value: v,
    })
}

/// Parses the sub-record at the start of `b` (at absolute `offset`), returning its view and
/// its length in bytes.
#[inline]
pub fn parse_sub_record(b: &[u8], offset: u64, id_size: u8) -> Result<(Sub<'_>, usize)> {
    match parse_common(b, id_size) {
        Some(parsed) => Ok(parsed),
        None => parse_checked(b, offset, id_size),
    }
}

/// The fast path for the sub-records that make up almost all of a heap: instances, arrays,
/// roots and heap info, read with plain bounds checks. `None` for anything else, and for
/// anything malformed: [`parse_checked`] then parses again and names the problem.
#[inline(always)]
pub(crate) fn parse_common(b: &[u8], id_size: u8) -> Option<(Sub<'_>, usize)> {
    let n = id_size as usize;
    let tag = *b.first()?;
    match tag {
        tags::INSTANCE_DUMP => {
            let len = u4_at(b, 5 + 2 * n)? as usize;
            let start = 9 + 2 * n;
            let end = start.checked_add(len)?;
            let data = b.get(start..end)?;
            let inst = Instance {
                id: id_at(b, 1, id_size)?,
                stack_serial: u4_at(b, 1 + n)?,
                class_id: id_at(b, 5 + n, id_size)?,
                data,
            };
            Some((Sub::Instance(inst), end))
        }
        tags::PRIMITIVE_ARRAY_DUMP => {
            let count = u4_at(b, 5 + n)?;
            let ty = BasicType::from_u8(*b.get(9 + n)?)?;
            if ty == BasicType::Object {
                return None;
            }
            let start = 10 + n;
            let size = usize::try_from(count as u64 * ty.size(id_size) as u64).ok()?;
            let end = start.checked_add(size)?;
            let data = b.get(start..end)?;
            let a = PrimitiveArray {
                id: id_at(b, 1, id_size)?,
                stack_serial: u4_at(b, 1 + n)?,
                count,
                element_type: ty,
                data,
            };
            Some((Sub::PrimitiveArray(a), end))
        }
        tags::OBJECT_ARRAY_DUMP => {
            let count = u4_at(b, 5 + n)?;
            let start = 9 + 2 * n;
            let size = usize::try_from(count as u64 * n as u64).ok()?;
            let end = start.checked_add(size)?;
            let elements = b.get(start..end)?;
            let a = ObjectArray {
                id: id_at(b, 1, id_size)?,
                stack_serial: u4_at(b, 1 + n)?,
                count,
                class_id: id_at(b, 9 + n, id_size)?,
                elements,
                id_size,
            };
            Some((Sub::ObjectArray(a), end))
        }
        tags::HEAP_DUMP_INFO => {
            let info = HeapDumpInfo {
                heap_id: u4_at(b, 1)?,
                name_id: id_at(b, 5, id_size)?,
            };
            Some((Sub::HeapDumpInfo(info), 5 + n))
        }
        tags::CLASS_DUMP | tags::PRIMITIVE_ARRAY_NODATA => None,
        _ => {
            let (u4s, ids) = tags::root_layout(tag)?;
            let len = 1 + n + u4s as usize * 4 + ids as usize * n;
            if b.len() < len {
                return None;
            }
            let root = Root {
                tag,
                object_id: id_at(b, 1, id_size)?,
            };
            Some((Sub::Root(root), len))
        }
    }
}

/// The length of the sub-record at the start of `b` from its header alone, for walks that
/// only need to step over records. `None` for class dumps, ART's no-data arrays and
/// anything malformed: parse those with [`parse_sub_record`].
#[inline(always)]
pub fn quick_len(b: &[u8], id_size: u8) -> Option<usize> {
    let n = id_size as usize;
    let len = match *b.first()? {
        tags::INSTANCE_DUMP => 9 + 2 * n + u4_at(b, 5 + 2 * n)? as usize,
        tags::PRIMITIVE_ARRAY_DUMP => {
            let ty = BasicType::from_u8(*b.get(9 + n)?)?;
            if ty == BasicType::Object {
                return None;
            }
            10 + n + usize::try_from(u4_at(b, 5 + n)? as u64 * ty.size(id_size) as u64).ok()?
        }
        tags::OBJECT_ARRAY_DUMP => {
            9 + 2 * n + usize::try_from(u4_at(b, 5 + n)? as u64 * n as u64).ok()?
        }
        tags::HEAP_DUMP_INFO => 5 + n,
        tags::CLASS_DUMP | tags::PRIMITIVE_ARRAY_NODATA => return None,
        tag => {
            let (u4s, ids) = tags::root_layout(tag)?;
            1 + n + u4s as usize * 4 + ids as usize * n
        }
    };
    (len <= b.len()).then_some(len)
}

/// The primitive array `id` whose sub-record ends exactly at `end` in `data`, looked for in
/// the `window` bytes before `end`: HotSpot writes a String's value array just before the
/// String, so a String met late has its value at hand without another walk. The record
/// must parse whole and end at `end`, with that id: a byte pattern inside another record
/// cannot pass for it unless it copies all three. Costs at most `window` bytes read.
pub fn primitive_array_ending_at<'d>(
    data: &'d [u8],
    end: usize,
    id: u64,
    id_size: u8,
    window: usize,
) -> Option<(usize, PrimitiveArray<'d>)> {
    let header = PrimitiveArray::header_len(id_size);
    let last = end.checked_sub(header)?;
    let first = end.saturating_sub(header + window);
    let before = data.get(..end)?;
    memchr::memrchr_iter(tags::PRIMITIVE_ARRAY_DUMP, &before[first..=last])
        .map(|at| first + at)
        .filter(|&start| id_at(before, start + 1, id_size) == Some(id))
        .find_map(|start| match parse_common(&before[start..], id_size)? {
            (Sub::PrimitiveArray(a), len) if start + len == end => Some((start, a)),
            _ => None,
        })
}

/// Parses any sub-record with every field checked, naming what is wrong and where.
#[cold]
pub(crate) fn parse_checked(b: &[u8], offset: u64, id_size: u8) -> Result<(Sub<'_>, usize)> {
    let tag = b[0];
    let what = match tag {
        tags::CLASS_DUMP => "CLASS_DUMP",
        tags::INSTANCE_DUMP => "INSTANCE_DUMP",
        tags::OBJECT_ARRAY_DUMP => "OBJECT_ARRAY_DUMP",
        tags::PRIMITIVE_ARRAY_DUMP => "PRIMITIVE_ARRAY_DUMP",
        _ => "heap dump sub-record",
    };
    let mut c = Cursor::new(b, offset, Tag::heap(tag), what);
    c.skip(1)?;
    let ids = id_size as u64;
    let kind = match tag {
        tags::INSTANCE_DUMP => {
            let id = c.id(id_size)?;
            let stack_serial = c.u4()?;
            let class_id = c.id(id_size)?;
            let len = c.u4()?;
            let data = c.take(len as u64)?;
            Sub::Instance(Instance {
                id,
                stack_serial,
                class_id,
                data,
            })
        }
        tags::PRIMITIVE_ARRAY_DUMP => {
            let id = c.id(id_size)?;
            let stack_serial = c.u4()?;
            let count = c.u4()?;
            let at = c.offset();
            let ty = basic_type(at, tag, "primitive array element type", c.u1()?)?;
            if ty == BasicType::Object {
                return Err(FormatError::BadType {
                    offset: at,
                    tag: Tag::heap(tag),
                    what: "primitive array element type",
                    value: 2,
                });
            }
            // u64 arithmetic: count × 8 passes u32 for large arrays.
            let data = c.take(count as u64 * ty.size(id_size) as u64)?;
            Sub::PrimitiveArray(PrimitiveArray {
                id,
                stack_serial,
                count,
                element_type: ty,
                data,
            })
        }
        tags::OBJECT_ARRAY_DUMP => {
            let id = c.id(id_size)?;
            let stack_serial = c.u4()?;
            let count = c.u4()?;
            let class_id = c.id(id_size)?;
            let elements = c.take(count as u64 * ids)?;
            Sub::ObjectArray(ObjectArray {
                id,
                stack_serial,
                count,
                class_id,
                elements,
                id_size,
            })
        }
        tags::CLASS_DUMP => Sub::ClassDump(Box::new(parse_class_dump(&mut c, id_size)?)),
        tags::HEAP_DUMP_INFO => {
            let heap_id = c.u4()?;
            let name_id = c.id(id_size)?;
            Sub::HeapDumpInfo(HeapDumpInfo { heap_id, name_id })
        }
        tags::PRIMITIVE_ARRAY_NODATA => {
            let id = c.id(id_size)?;
            let stack_serial = c.u4()?;
            let count = c.u4()?;
            let at = c.offset();
            let v = c.u1()?;
            let ty = basic_type(at, tag, "primitive array element type", v)?;
            Sub::PrimitiveArrayNoData(PrimitiveArrayNoData {
                id,
                stack_serial,
                count,
                element_type: ty,
            })
        }
        _ => match tags::root_layout(tag) {
            Some((u4s, extra_ids)) => {
                let object_id = c.id(id_size)?;
                c.skip(u4s as u64 * 4 + extra_ids as u64 * ids)?;
                Sub::Root(Root { tag, object_id })
            }
            None => return Err(FormatError::UnknownSubTag { offset, tag }),
        },
    };
    Ok((kind, c.pos()))
}

fn parse_class_dump<'a>(c: &mut Cursor<'a>, id_size: u8) -> Result<ClassDump<'a>> {
    let tag = tags::CLASS_DUMP;
    let class_id = c.id(id_size)?;
    let stack_serial = c.u4()?;
    let super_id = c.id(id_size)?;
    let loader_id = c.id(id_size)?;
    let signers_id = c.id(id_size)?;
    let protection_domain_id = c.id(id_size)?;
    let reserved1 = c.id(id_size)?;
    let reserved2 = c.id(id_size)?;
    let instance_size = c.u4()?;

    let constant_pool_count = c.u2()?;
    let start = c.pos();
    let mut probe = c.clone();
    for _ in 0..constant_pool_count {
        probe.skip(2)?;
        let at = probe.offset();
        let ty = basic_type(at, tag, "constant pool entry type", probe.u1()?)?;
        probe.skip(ty.size(id_size) as u64)?;
    }
    let constant_pool = c.take((probe.pos() - start) as u64)?;

    let static_count = c.u2()?;
    let statics_offset = c.offset();
    let start = c.pos();
    let mut probe = c.clone();
    for _ in 0..static_count {
        probe.skip(id_size as u64)?;
        let at = probe.offset();
        let ty = basic_type(at, tag, "static field type", probe.u1()?)?;
        probe.skip(ty.size(id_size) as u64)?;
    }
    let statics = c.take((probe.pos() - start) as u64)?;

    let field_count = c.u2()?;
    let fields_offset = c.offset();
    let fields = c.take(field_count as u64 * (id_size as u64 + 1))?;
    for (i, f) in fields.chunks_exact(id_size as usize + 1).enumerate() {
        let v = f[id_size as usize];
        let at = fields_offset + (i * (id_size as usize + 1) + id_size as usize) as u64;
        basic_type(at, tag, "instance field type", v)?;
    }
    Ok(ClassDump {
        class_id,
        stack_serial,
        super_id,
        loader_id,
        signers_id,
        protection_domain_id,
        reserved1,
        reserved2,
        instance_size,
        constant_pool_count,
        constant_pool,
        static_count,
        statics,
        field_count,
        fields,
        fields_offset,
        statics_offset,
        id_size,
    })
}
