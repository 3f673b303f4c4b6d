//! What an unknown dump holds: its header, records and heap sub-records by tag, objects by
//! kind, primitive arrays by element type, heaps (ART), and the classes with the most
//! instances. One walk; memory grows with the number of classes and STRING records.

use rustc_hash::FxHashMap;
use serde::Serialize;

use crate::control::{Control, Stage};
use crate::error::{Error, Result};
use crate::hprof::{tags, BasicType, Header, Hprof, Record, Sub, SubRecord, Visitor};
use crate::passes::Tally;

#[derive(Debug, Clone, Serialize)]
/// What `inspect` found in a dump (the JSON of `hprof-shrink inspect --json`).
pub struct Inspection {
    /// Size of the dump.
    pub bytes: u64,
    /// Its header's version (`1.0.2`, `1.0.3`).
    pub format: String,
    /// Its identifier size, 4 or 8.
    pub id_size: u8,
    /// The dump's timestamp, milliseconds since the Unix epoch.
    pub timestamp_ms: u64,
    /// Top-level records by tag: count and bytes.
    pub records: Vec<TagRow>,
    /// Heap-dump sub-records by tag: count and bytes.
    pub heap_records: Vec<TagRow>,
    /// Heap dump records and segments.
    pub segments: u64,
    /// The largest segment's body, in bytes.
    pub largest_segment: u64,
    /// CLASS_DUMP sub-records.
    pub classes: u64,
    /// INSTANCE_DUMP sub-records and their field data bytes.
    pub instances: Tally,
    /// OBJECT_ARRAY_DUMP sub-records and their element bytes.
    pub object_arrays: Tally,
    /// PRIMITIVE_ARRAY_DUMP sub-records and their element bytes.
    pub primitive_arrays: Tally,
    /// Primitive arrays by element type.
    pub primitive_by_type: Vec<TypeRow>,
    /// ART's heaps (app, zygote, image): objects and bytes in each.
    pub heaps: Vec<HeapRow>,
    /// The classes with the most instances, most first.
    pub top_classes: Vec<ClassRow>,
}

#[derive(Debug, Clone, Serialize)]
/// One tag's share of a dump.
pub struct TagRow {
    /// The tag byte.
    pub tag: u8,
    /// Its name (`INSTANCE_DUMP`).
    pub name: &'static str,
    /// Records or sub-records with it.
    pub count: u64,
    /// Their bytes, headers included.
    pub bytes: u64,
}

#[derive(Debug, Clone, Serialize)]
/// One element type's share of the primitive arrays.
pub struct TypeRow {
    /// The element type.
    pub element_type: BasicType,
    /// Arrays of it.
    pub count: u64,
    /// Their element bytes.
    pub bytes: u64,
}

#[derive(Debug, Clone, Serialize)]
/// One ART heap's share of the objects.
pub struct HeapRow {
    /// The heap's name (`app`, `zygote`, `image`, `default`).
    pub name: String,
    /// Objects dumped in it.
    pub objects: u64,
    /// Their bytes.
    pub bytes: u64,
}

#[derive(Debug, Clone, Serialize)]
/// One class's instances.
pub struct ClassRow {
    /// The class's name, as the dump writes it.
    pub name: String,
    /// The class object's id.
    pub class_id: u64,
    /// Its instances.
    pub instances: u64,
    /// Bytes of field data of those instances.
    pub bytes: u64,
}

struct Stats {
    records: Vec<Tally>,
    heap_records: Vec<Tally>,
    segments: u64,
    largest_segment: u64,
    primitive: [Tally; 8],
    instances: Tally,
    object_arrays: Tally,
    /// STRING id → (offset of its text, length), to name classes at the end.
    strings: FxHashMap<u64, (u64, u32)>,
    class_names: FxHashMap<u64, u64>,
    per_class: FxHashMap<u64, Tally>,
    classes: u64,
    /// heap id → (name string id, objects, bytes)
    heaps: Vec<(u32, u64, Tally)>,
    current_heap: Option<usize>,
}

impl Visitor for Stats {
    type Error = Error;

    fn record(&mut self, r: &Record<'_>) -> Result<()> {
        self.records[r.tag as usize].add(r.raw.len() as u64);
        if let Some(s) = r.as_string()? {
            let text_at = r.body_offset() + (r.body.len() - s.bytes.len()) as u64;
            self.strings.insert(s.id, (text_at, s.bytes.len() as u32));
        } else if let Some(lc) = r.as_load_class()? {
            self.class_names.insert(lc.class_id, lc.name_id);
        }
        Ok(())
    }

    fn heap_dump_begin(&mut self, s: &Record<'_>, _length: u32) -> Result<()> {
        self.records[s.tag as usize].add(s.raw.len() as u64);
        self.segments += 1;
        self.largest_segment = self.largest_segment.max(s.raw.len() as u64);
        // ART resets to the default heap at each segment.
        self.current_heap = None;
        Ok(())
    }

    fn sub_record(&mut self, sub: &SubRecord<'_>) -> Result<()> {
        let len = sub.raw.len() as u64;
        self.heap_records[sub.tag() as usize].add(len);
        let is_object = match &sub.kind {
            Sub::ClassDump(_) => {
                self.classes += 1;
                true
            }
            Sub::Instance(i) => {
                self.instances.add(len);
                self.per_class
                    .entry(i.class_id)
                    .or_default()
                    .add(i.data.len() as u64);
                true
            }
            Sub::ObjectArray(_) => {
                self.object_arrays.add(len);
                true
            }
            Sub::PrimitiveArray(a) => {
                let slot = a.element_type.primitive_index().unwrap_or(0);
                self.primitive[slot].add(a.data.len() as u64);
                true
            }
            Sub::PrimitiveArrayNoData(_) => true,
            Sub::HeapDumpInfo(h) => {
                let at = self.heaps.iter().position(|(id, _, _)| *id == h.heap_id);
                let at = at.unwrap_or_else(|| {
                    self.heaps.push((h.heap_id, h.name_id, Tally::default()));
                    self.heaps.len() - 1
                });
                self.current_heap = Some(at);
                false
            }
            Sub::Root(_) => false,
        };
        if is_object {
            if let Some(h) = self.current_heap {
                self.heaps[h].2.add(len);
            }
        }
        Ok(())
    }
}

fn rows(t: &[Tally], name: fn(u8) -> &'static str) -> Vec<TagRow> {
    t.iter()
        .enumerate()
        .filter(|(_, t)| t.count > 0)
        .map(|(tag, t)| TagRow {
            tag: tag as u8,
            name: name(tag as u8),
            count: t.count,
            bytes: t.bytes,
        })
        .collect()
}

/// Inspects a dump; `top` is how many classes to list by instance count.
pub fn inspect(hprof: &Hprof<'_>, top: usize, control: &Control) -> Result<Inspection> {
    let mut s = Stats {
        records: vec![Tally::default(); 256],
        heap_records: vec![Tally::default(); 256],
        segments: 0,
        largest_segment: 0,
        primitive: [Tally::default(); 8],
        instances: Tally::default(),
        object_arrays: Tally::default(),
        strings: FxHashMap::default(),
        class_names: FxHashMap::default(),
        per_class: FxHashMap::default(),
        classes: 0,
        heaps: Vec::new(),
        current_heap: None,
    };
    hprof.accept(&mut s, &mut control.ticker(Stage::Read, hprof.len()))?;
    let data = hprof.data();
    let text = |string_id: u64| -> Option<String> {
        let (at, len) = *s.strings.get(&string_id)?;
        let bytes = &data[at as usize..at as usize + len as usize];
        Some(String::from_utf8_lossy(bytes).into_owned())
    };
    let mut classes: Vec<(u64, Tally)> = s.per_class.iter().map(|(k, v)| (*k, *v)).collect();
    classes.sort_unstable_by(|a, b| b.1.count.cmp(&a.1.count).then(a.0.cmp(&b.0)));
    let top_classes = classes
        .into_iter()
        .take(top)
        .map(|(class_id, t)| ClassRow {
            name: s
                .class_names
                .get(&class_id)
                .and_then(|n| text(*n))
                .unwrap_or_else(|| format!("0x{class_id:X}")),
            class_id,
            instances: t.count,
            bytes: t.bytes,
        })
        .collect();
    let heaps = s
        .heaps
        .iter()
        .map(|(id, name, t)| HeapRow {
            name: text(*name).unwrap_or_else(|| format!("heap {id}")),
            objects: t.count,
            bytes: t.bytes,
        })
        .collect();
    let header: &Header<'_> = hprof.header();
    Ok(Inspection {
        bytes: hprof.len(),
        format: header.version.to_string(),
        id_size: header.id_size,
        timestamp_ms: header.timestamp_ms,
        records: rows(&s.records, tags::record_tag_name),
        heap_records: rows(&s.heap_records, tags::heap_tag_name),
        segments: s.segments,
        largest_segment: s.largest_segment,
        classes: s.classes,
        instances: s.instances,
        object_arrays: s.object_arrays,
        primitive_arrays: s.primitive.iter().fold(Tally::default(), |a, b| Tally {
            count: a.count + b.count,
            bytes: a.bytes + b.bytes,
        }),
        primitive_by_type: BasicType::PRIMITIVES
            .iter()
            .zip(s.primitive.iter())
            .filter(|(_, t)| t.count > 0)
            .map(|(ty, t)| TypeRow {
                element_type: *ty,
                count: t.count,
                bytes: t.bytes,
            })
            .collect(),
        heaps,
        top_classes,
    })
}
