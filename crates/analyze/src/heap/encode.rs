//! A [`HeapSource`]'s description laid out as the index reads a dump: HPROF 1.0.3
//! records, in an unnamed temporary file within the analysis's disk bounds, then mapped.
//! Its size is the described heap's: each object's values and ids, a few bytes of header
//! each, and its names once.
//!
//! The sub-records of a heap dump are gathered in segments of at most [`SEGMENT`] bytes
//! (the memory this holds); a class's names are written as string records between
//! segments, before the class that uses them.

use std::io::Write;
use std::path::PathBuf;

use hprof_shrink_core::hprof::{tags, BasicType, MappedFile, Value};
use hprof_shrink_core::space::Unpack;

use super::input::{Bytes, Input};
use super::source::{Class, HeapSink, HeapSource, Object, Root};
use crate::base::error::AnalyzeError;
use crate::base::map::Map;

/// Bytes of sub-records gathered before they are written as one segment.
pub const SEGMENT: usize = 1 << 20;

/// Describes `source` into an unnamed temporary file of `unpack`'s and maps it, as the
/// analysis's input (kind `source`).
pub fn to_input(source: &dyn HeapSource, unpack: &Unpack) -> Result<Input, AnalyzeError> {
    let label = PathBuf::from(source.name());
    let io = |source| AnalyzeError::Io {
        path: label.clone(),
        source,
    };
    let file = unpack.tempfile(None).map_err(io)?;
    let what = label.display().to_string();
    let out = std::io::BufWriter::with_capacity(1 << 20, unpack.bounded(&what, &file, None));
    let mut encoder = Encoder::new(out, source.id_size(), source.timestamp_ms()).map_err(io)?;
    source.describe(&mut encoder)?;
    let class_sizes = std::mem::take(&mut encoder.class_sizes);
    encoder.finish().map_err(io)?;
    Ok(Input {
        bytes: Bytes::File(MappedFile::from_file(&file, label.clone())?),
        kind: "source",
        manifest: Vec::new(),
        extra: Vec::new(),
        shrunk: false,
        private: false,
        compressed_bytes: None,
        format: None,
        field_values: source.field_values(),
        class_sizes,
    })
}

/// Writes a description as HPROF records.
struct Encoder<W: Write> {
    out: W,
    id_size: u8,
    /// Names written so far, and their string ids.
    names: Map<String, u64>,
    /// The sub-records of the segment being gathered.
    segment: Vec<u8>,
    class_serial: u32,
    /// The class objects' own sizes the description gives ([`Class::object_size`]).
    class_sizes: Map<u64, u64>,
}

impl<W: Write> Encoder<W> {
    fn new(mut out: W, id_size: u8, timestamp_ms: u64) -> std::io::Result<Encoder<W>> {
        out.write_all(b"JAVA PROFILE 1.0.3\0")?;
        out.write_all(&u32::from(id_size).to_be_bytes())?;
        out.write_all(&timestamp_ms.to_be_bytes())?;
        Ok(Encoder {
            out,
            id_size: if id_size == 4 { 4 } else { 8 },
            names: Map::default(),
            segment: Vec::new(),
            class_serial: 0,
            class_sizes: Map::default(),
        })
    }

    fn record(&mut self, tag: u8, body: &[u8]) -> std::io::Result<()> {
        // A description's records are small (names), or segments of at most SEGMENT bytes.
        let len = u32::try_from(body.len()).unwrap_or(u32::MAX);
        self.out.write_all(&[tag])?;
        self.out.write_all(&0u32.to_be_bytes())?;
        self.out.write_all(&len.to_be_bytes())?;
        self.out.write_all(body)
    }

    /// Writes the gathered sub-records as one segment.
    fn flush_segment(&mut self) -> std::io::Result<()> {
        if self.segment.is_empty() {
            return Ok(());
        }
        let segment = std::mem::take(&mut self.segment);
        self.record(tags::HEAP_DUMP_SEGMENT, &segment)?;
        self.segment = segment;
        self.segment.clear();
        Ok(())
    }

    /// The string id of `name`, its string record written first if it is new (between
    /// segments: a record cannot sit inside one).
    fn name(&mut self, name: &str) -> std::io::Result<u64> {
        if let Some(&id) = self.names.get(name) {
            return Ok(id);
        }
        self.flush_segment()?;
        let id = self.names.len() as u64 + 1;
        let mut body = Vec::with_capacity(self.id_size as usize + name.len());
        put_id(&mut body, id, self.id_size);
        body.extend_from_slice(name.as_bytes());
        self.record(tags::STRING, &body)?;
        self.names.insert(name.to_string(), id);
        Ok(id)
    }

    fn id(&mut self, id: u64) {
        put_id(&mut self.segment, id, self.id_size);
    }

    fn u4(&mut self, v: u32) {
        self.segment.extend_from_slice(&v.to_be_bytes());
    }

    fn value(&mut self, v: Value) {
        match v {
            Value::Object(id) => self.id(id),
            Value::Boolean(b) => self.segment.push(b as u8),
            Value::Byte(b) => self.segment.push(b as u8),
            Value::Char(c) => self.segment.extend_from_slice(&c.to_be_bytes()),
            Value::Short(s) => self.segment.extend_from_slice(&s.to_be_bytes()),
            Value::Int(i) => self.segment.extend_from_slice(&i.to_be_bytes()),
            Value::Float(f) => self.segment.extend_from_slice(&f.to_be_bytes()),
            Value::Long(l) => self.segment.extend_from_slice(&l.to_be_bytes()),
            Value::Double(d) => self.segment.extend_from_slice(&d.to_be_bytes()),
        }
    }

    /// Ends a sub-record: the segment is written once it is full.
    fn end_sub(&mut self) -> std::io::Result<()> {
        if self.segment.len() >= SEGMENT {
            self.flush_segment()?;
        }
        Ok(())
    }

    /// One sub-record as a segment of its own: its `head`, then `zeros` zero bytes
    /// written a block at a time.
    fn streamed(&mut self, head: &[u8], zeros: u64) -> std::io::Result<()> {
        self.flush_segment()?;
        let len = u32::try_from(head.len() as u64 + zeros).unwrap_or(u32::MAX);
        self.out.write_all(&[tags::HEAP_DUMP_SEGMENT])?;
        self.out.write_all(&0u32.to_be_bytes())?;
        self.out.write_all(&len.to_be_bytes())?;
        self.out.write_all(head)?;
        let block = [0u8; 1 << 16];
        let mut left = zeros;
        while left > 0 {
            let n = left.min(block.len() as u64) as usize;
            self.out.write_all(&block[..n])?;
            left -= n as u64;
        }
        Ok(())
    }

    fn finish(mut self) -> std::io::Result<()> {
        self.flush_segment()?;
        self.record(tags::HEAP_DUMP_END, &[])?;
        self.out.flush()
    }
}

/// An id of `id_size` bytes, big-endian.
fn put_id(out: &mut Vec<u8>, id: u64, id_size: u8) {
    match id_size {
        4 => out.extend_from_slice(&(id as u32).to_be_bytes()),
        _ => out.extend_from_slice(&id.to_be_bytes()),
    }
}

/// The type a value is written as.
fn type_of(v: Value) -> BasicType {
    match v {
        Value::Object(_) => BasicType::Object,
        Value::Boolean(_) => BasicType::Boolean,
        Value::Byte(_) => BasicType::Byte,
        Value::Char(_) => BasicType::Char,
        Value::Short(_) => BasicType::Short,
        Value::Int(_) => BasicType::Int,
        Value::Float(_) => BasicType::Float,
        Value::Long(_) => BasicType::Long,
        Value::Double(_) => BasicType::Double,
    }
}

/// The sink's write errors, as the analysis's.
fn written(r: std::io::Result<()>) -> Result<(), AnalyzeError> {
    r.map_err(|source| AnalyzeError::Io {
        path: PathBuf::from("the described heap"),
        source,
    })
}

impl<W: Write> HeapSink for Encoder<W> {
    fn heap(&mut self, id: u32, name: &str) -> Result<(), AnalyzeError> {
        let name = match self.name(name) {
            Ok(id) => id,
            Err(e) => return written(Err(e)),
        };
        self.segment.push(tags::HEAP_DUMP_INFO);
        self.u4(id);
        self.id(name);
        written(self.end_sub())
    }

    fn class(&mut self, c: &Class<'_>) -> Result<(), AnalyzeError> {
        if c.object_size > 0 {
            self.class_sizes.entry(c.id).or_insert(c.object_size);
        }
        written(self.class_records(c))
    }

    fn object(&mut self, o: &Object<'_>) -> Result<(), AnalyzeError> {
        match *o {
            Object::Instance {
                id,
                class_id,
                values,
                padding,
            } => {
                let n = self.id_size;
                let held: u64 = values.iter().map(|v| type_of(*v).size(n) as u64).sum();
                let Some(len) = held
                    .checked_add(padding)
                    .and_then(|len| u32::try_from(len).ok())
                else {
                    return Err(AnalyzeError::Io {
                        path: PathBuf::from("the described heap"),
                        source: std::io::Error::new(
                            std::io::ErrorKind::InvalidData,
                            format!(
                                "instance {id:#x} of {held} bytes and {padding} more: over the 4 GiB a record holds"
                            ),
                        ),
                    });
                };
                let start = self.segment.len();
                self.segment.push(tags::INSTANCE_DUMP);
                self.id(id);
                self.u4(0);
                self.id(class_id);
                self.u4(len);
                for &v in values {
                    self.value(v);
                }
                if padding as usize > SEGMENT {
                    // A large rest is streamed as a segment of its own, never held.
                    let head = self.segment.split_off(start);
                    return written(self.streamed(&head, padding));
                }
                self.segment
                    .resize(self.segment.len() + padding as usize, 0);
            }
            Object::ObjectArray {
                id,
                class_id,
                elements,
            } => {
                self.segment.push(tags::OBJECT_ARRAY_DUMP);
                self.id(id);
                self.u4(0);
                self.u4(u32::try_from(elements.len()).unwrap_or(u32::MAX));
                self.id(class_id);
                for &e in elements {
                    self.id(e);
                }
            }
            Object::PrimitiveArray {
                id,
                ty,
                count,
                elements,
            } => {
                let tag = match elements {
                    Some(_) => tags::PRIMITIVE_ARRAY_DUMP,
                    None => tags::PRIMITIVE_ARRAY_NODATA,
                };
                self.segment.push(tag);
                self.id(id);
                self.u4(0);
                self.u4(count);
                self.segment.push(ty.code());
                if let Some(bytes) = elements {
                    // Exactly `count` elements: the description's bytes, cut or padded.
                    let want = count as usize * ty.size(self.id_size) as usize;
                    let have = bytes.len().min(want);
                    self.segment.extend_from_slice(&bytes[..have]);
                    self.segment.resize(self.segment.len() + (want - have), 0);
                }
            }
        }
        written(self.end_sub())
    }

    fn root(&mut self, r: &Root) -> Result<(), AnalyzeError> {
        self.segment.push(r.tag);
        self.id(r.object_id);
        match r.tag {
            tags::ROOT_JNI_GLOBAL => self.id(r.extra),
            tags::ROOT_JNI_LOCAL
            | tags::ROOT_JAVA_FRAME
            | tags::ROOT_THREAD_OBJECT
            | tags::ROOT_JNI_MONITOR => {
                self.u4(r.thread_serial);
                self.u4(r.extra as u32);
            }
            tags::ROOT_NATIVE_STACK | tags::ROOT_THREAD_BLOCK => self.u4(r.thread_serial),
            _ => {}
        }
        written(self.end_sub())
    }
}

impl<W: Write> Encoder<W> {
    /// A class's names, its LOAD_CLASS record, then its CLASS_DUMP.
    fn class_records(&mut self, c: &Class<'_>) -> std::io::Result<()> {
        let name = self.name(c.name)?;
        let statics = c
            .statics
            .iter()
            .map(|s| Ok((self.name(s.name)?, s.value)))
            .collect::<std::io::Result<Vec<_>>>()?;
        let fields = c
            .fields
            .iter()
            .map(|f| Ok((self.name(f.name)?, f.ty)))
            .collect::<std::io::Result<Vec<_>>>()?;
        if !self.segment.is_empty() {
            self.flush_segment()?;
        }
        self.class_serial += 1;
        let mut load = Vec::new();
        load.extend_from_slice(&self.class_serial.to_be_bytes());
        put_id(&mut load, c.id, self.id_size);
        load.extend_from_slice(&0u32.to_be_bytes());
        put_id(&mut load, name, self.id_size);
        self.record(tags::LOAD_CLASS, &load)?;

        self.segment.push(tags::CLASS_DUMP);
        self.id(c.id);
        self.u4(0);
        for id in [c.super_id, c.loader_id, 0, 0, 0, 0] {
            self.id(id);
        }
        self.u4(c.instance_size);
        self.segment.extend_from_slice(&0u16.to_be_bytes());
        let count = |n: usize| u16::try_from(n).unwrap_or(u16::MAX);
        self.segment
            .extend_from_slice(&count(statics.len()).to_be_bytes());
        for &(name, value) in statics.iter().take(u16::MAX as usize) {
            self.id(name);
            self.segment.push(type_of(value).code());
            self.value(value);
        }
        self.segment
            .extend_from_slice(&count(fields.len()).to_be_bytes());
        for &(name, ty) in fields.iter().take(u16::MAX as usize) {
            self.id(name);
            self.segment.push(ty.code());
        }
        self.end_sub()
    }
}
