//! Pass 1, info collect: the string ids of the names the shrink looks for, every class's
//! name, superclass and field list, and from those the layouts of the classes whose
//! instances pass 2 reads (String, Bitmap, Bitmap$DumpData, DestroyedActivityInfo), plus
//! the statics the manifest is read from (SDK_INT, MANUFACTURER) and `Bitmap.dumpData`.

use rustc_hash::FxHashMap;

use super::names::{Name, NameIds, NameTable};
use crate::error::{Error, Result};
use crate::hprof::{
    tags, BasicType, ClassIndex, FormatError, Interest, Layout, LayoutField, Record, Sub,
    SubRecord, Value, Visitor,
};

/// What pass 2 reads from an instance of a target class.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// `java.lang.String`.
    String {
        /// Its value array field.
        value: LayoutField,
        /// JDK 9+: 0 Latin-1, 1 UTF-16 (only for decoding manifest strings).
        coder: Option<LayoutField>,
    },
    /// `android.graphics.Bitmap`.
    Bitmap {
        /// `mBuffer` (absent from Android 8 on, where pixels are native).
        buffer: Option<LayoutField>,
        /// `mRecycled`.
        recycled: Option<LayoutField>,
    },
    /// `android.graphics.Bitmap$DumpData` (Android 14+ `am dumpheap -b`).
    DumpData {
        /// `natives`: the long[] of native pointers.
        natives: Option<LayoutField>,
        /// `buffers`: the byte[][] of compressed images.
        buffers: Option<LayoutField>,
    },
    /// Matrix's `DestroyedActivityInfo`.
    DestroyedActivityInfo {
        /// `mKey`, the leaked Activity's key.
        key: Option<LayoutField>,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
/// A class pass 2 reads instances of: how large they are and which fields to read.
pub struct TargetClass {
    /// Field data bytes each instance must have.
    pub size: u64,
    /// What to read.
    pub target: Target,
}

/// The result of pass 1.
#[derive(Debug)]
pub struct DumpInfo {
    /// The dump's identifier size.
    pub id_size: u8,
    /// Every class's layout.
    pub classes: ClassIndex,
    /// String ids of the names the passes look for.
    pub names: NameIds,
    /// Target class id → what to read from its instances.
    pub targets: FxHashMap<u64, TargetClass>,
    /// Named target classes that have no CLASS_DUMP: an instance of one is an error.
    pub undumped_targets: Vec<u64>,
    /// The dump names `java.lang.String`.
    pub has_string_class: bool,
    /// The dump names `android.graphics.Bitmap`.
    pub has_bitmap_class: bool,
    /// `android.os.Build$VERSION.SDK_INT`.
    pub sdk_int: Option<i64>,
    /// The String object of `android.os.Build.MANUFACTURER`.
    pub manufacturer: Option<u64>,
    /// The `Bitmap$DumpData` object of `android.graphics.Bitmap.dumpData` (Android 14+).
    pub dump_data: Option<u64>,
    /// What pass 1 warns about (a target class without a field it expects...).
    pub warnings: Vec<String>,
}

impl DumpInfo {
    /// Whether pass 2 would read the same from the dump with `other` as with this info.
    pub fn same_targets(&self, other: &DumpInfo) -> bool {
        let sorted = |v: &[u64]| {
            let mut v = v.to_vec();
            v.sort_unstable();
            v
        };
        self.id_size == other.id_size
            && self.targets == other.targets
            && sorted(&self.undumped_targets) == sorted(&other.undumped_targets)
            && self.manufacturer == other.manufacturer
            && self.dump_data == other.dump_data
    }
}

/// Pass 1 over the start of a dump only: it stops at the first instance or array.
pub struct EarlyInfo(InfoCollector, bool);

impl EarlyInfo {
    /// Pass 1 over the start of a dump with `id_size`-byte ids.
    pub fn new(id_size: u8) -> Self {
        EarlyInfo(InfoCollector::new(id_size), false)
    }

    /// Like [`InfoCollector::finish`] for the start of the dump: the end is not checked,
    /// and a target class named but not (yet) dumped is listed in `undumped_targets`, even
    /// in a salvaged dump.
    pub fn finish(self, data: &[u8]) -> Result<DumpInfo> {
        self.0.resolve(data, false)
    }
}

impl Visitor for EarlyInfo {
    type Error = Error;

    fn interest(&self) -> Interest {
        self.0
            .interest()
            .with(tags::INSTANCE_DUMP)
            .with(tags::OBJECT_ARRAY_DUMP)
            .with(tags::PRIMITIVE_ARRAY_DUMP)
    }

    fn heap_dump_begin(&mut self, segment: &Record<'_>, length: u32) -> Result<()> {
        self.0.heap_dump_begin(segment, length)
    }

    fn record(&mut self, record: &Record<'_>) -> Result<()> {
        self.0.record(record)
    }

    fn sub_record(&mut self, sub: &SubRecord<'_>) -> Result<()> {
        match sub.tag() {
            tags::INSTANCE_DUMP | tags::OBJECT_ARRAY_DUMP | tags::PRIMITIVE_ARRAY_DUMP => {
                self.1 = true;
                Ok(())
            }
            _ => self.0.sub_record(sub),
        }
    }

    fn is_done(&self) -> bool {
        self.1
    }
}

/// The pass 1 visitor.
pub struct InfoCollector {
    table: NameTable,
    names: NameIds,
    classes: ClassIndex,
    id_size: u8,
    /// Offsets of the last heap dump record and of the last HEAP_DUMP_END, to tell a dump
    /// that was cut off at a record boundary.
    last_heap: Option<(u64, u8)>,
    last_end: Option<u64>,
}

impl InfoCollector {
    /// Pass 1 over a dump (or a part of it) with `id_size`-byte ids.
    pub fn new(id_size: u8) -> Self {
        InfoCollector {
            table: NameTable::default(),
            names: NameIds::default(),
            classes: ClassIndex::new(id_size),
            id_size,
            last_heap: None,
            last_end: None,
        }
    }

    /// The visitors of the parts of one walk, in file order, folded into one.
    pub fn merged(runs: impl IntoIterator<Item = InfoCollector>) -> InfoCollector {
        let mut runs = runs.into_iter();
        let mut all = runs.next().expect("a walk has a run");
        for later in runs {
            all.merge(later);
        }
        all
    }

    /// Folds in what a visitor of a later part of the dump found (the first CLASS_DUMP or
    /// LOAD_CLASS of an id wins, as in a single walk).
    pub fn merge(&mut self, later: InfoCollector) {
        self.names.merge(later.names);
        self.classes.merge(later.classes);
        self.last_heap = self.last_heap.max(later.last_heap);
        self.last_end = self.last_end.max(later.last_end);
    }

    /// Fails for a dump whose end is missing: no heap dump at all, or segments without the
    /// HEAP_DUMP_END that HotSpot and ART write after the last one.
    fn check_complete(&self, len: u64) -> Result<()> {
        match self.last_heap {
            None => Err(FormatError::Incomplete {
                offset: len,
                missing: "a heap dump",
            }
            .into()),
            Some((at, tags::HEAP_DUMP_SEGMENT)) if self.last_end.is_none_or(|end| end < at) => {
                Err(FormatError::Incomplete {
                    offset: len,
                    missing: "the HEAP_DUMP_END record after its heap dump segments",
                }
                .into())
            }
            _ => Ok(()),
        }
    }

    /// Resolves the targets against `data`, the dump this visitor walked. A dump cut off
    /// at its end is an error unless `salvaged` (it is known to be cut, and was trimmed).
    pub fn finish(self, data: &[u8], salvaged: bool) -> Result<DumpInfo> {
        if !salvaged {
            self.check_complete(data.len() as u64)?;
        }
        self.resolve(data, salvaged)
    }

    fn resolve(self, data: &[u8], salvaged: bool) -> Result<DumpInfo> {
        let mut info = DumpInfo {
            id_size: self.id_size,
            classes: self.classes,
            names: self.names,
            targets: FxHashMap::default(),
            undumped_targets: Vec::new(),
            has_string_class: false,
            has_bitmap_class: false,
            sdk_int: None,
            manufacturer: None,
            dump_data: None,
            warnings: Vec::new(),
        };
        // Classes with the name that have a CLASS_DUMP.
        let named = |info: &DumpInfo, name: Name| {
            let mut ids = info.classes.classes_named(|id| info.names.is(id, name));
            ids.retain(|c| info.classes.get(*c).is_some());
            ids
        };
        let kinds = [
            Name::StringClass,
            Name::BitmapClass,
            Name::DumpDataClass,
            Name::DestroyedActivityInfoClass,
        ];
        for kind in kinds {
            let all = info.classes.classes_named(|id| info.names.is(id, kind));
            for class_id in all {
                if info.classes.get(class_id).is_none() {
                    if !salvaged {
                        info.undumped_targets.push(class_id);
                    }
                    continue;
                }
                let layout = match info.classes.layout(data, class_id) {
                    Ok(layout) => layout,
                    // The part of a cut-off dump that is left may lack a superclass.
                    Err(e @ FormatError::MissingClass { .. }) if salvaged => {
                        info.warnings.push(format!(
                            "instances of a class the shrink reads are left as they are: {e}"
                        ));
                        continue;
                    }
                    Err(e) => return Err(e.into()),
                };
                let target = target_for(&info, kind, &layout, class_id)?;
                match kind {
                    Name::StringClass => info.has_string_class = true,
                    Name::BitmapClass => info.has_bitmap_class = true,
                    _ => {}
                }
                info.targets.insert(
                    class_id,
                    TargetClass {
                        size: layout.size,
                        target,
                    },
                );
            }
        }
        if !info.has_string_class {
            info.warnings.push(
                "no java.lang.String class in the dump: no String values to keep".to_string(),
            );
        }
        for (class_name, field, slot) in [
            (Name::BuildVersionClass, Name::SdkInt, 0),
            (Name::BuildClass, Name::Manufacturer, 1),
            (Name::BitmapClass, Name::DumpData, 2),
        ] {
            for class_id in named(&info, class_name) {
                let class = *info.classes.get(class_id).expect("dumped");
                for f in info.classes.static_fields(data, &class) {
                    if !info.names.is(f.name_id, field) {
                        continue;
                    }
                    match (slot, f.value) {
                        (0, v) => info.sdk_int = v.as_i64().or(info.sdk_int),
                        (1, Value::Object(id)) if id != 0 => info.manufacturer = Some(id),
                        (2, Value::Object(id)) if id != 0 => info.dump_data = Some(id),
                        _ => {}
                    }
                }
            }
        }
        Ok(info)
    }
}

fn field(info: &DumpInfo, layout: &Layout, name: Name, ty: BasicType) -> Option<LayoutField> {
    layout
        .find(|id| info.names.is(id, name))
        .filter(|f| f.ty == ty)
}

fn target_for(info: &DumpInfo, kind: Name, layout: &Layout, class_id: u64) -> Result<Target> {
    Ok(match kind {
        Name::StringClass => Target::String {
            value: field(info, layout, Name::Value, BasicType::Object).ok_or_else(|| {
                Error::Unsupported(format!(
                    "java.lang.String (class 0x{class_id:X}) has no object field 'value', so String values cannot be found; use --strip none"
                ))
            })?,
            coder: field(info, layout, Name::Coder, BasicType::Byte),
        },
        Name::BitmapClass => Target::Bitmap {
            buffer: field(info, layout, Name::MBuffer, BasicType::Object),
            recycled: field(info, layout, Name::MRecycled, BasicType::Boolean),
        },
        Name::DumpDataClass => Target::DumpData {
            natives: field(info, layout, Name::Natives, BasicType::Object),
            buffers: field(info, layout, Name::Buffers, BasicType::Object),
        },
        _ => Target::DestroyedActivityInfo {
            key: field(info, layout, Name::MKey, BasicType::Object),
        },
    })
}

impl Visitor for InfoCollector {
    type Error = Error;

    fn interest(&self) -> Interest {
        Interest::NONE.with(tags::CLASS_DUMP)
    }

    fn heap_dump_begin(&mut self, segment: &Record<'_>, _length: u32) -> Result<()> {
        self.last_heap = self.last_heap.max(Some((segment.offset, segment.tag)));
        Ok(())
    }

    fn record(&mut self, record: &Record<'_>) -> Result<()> {
        if record.tag == tags::HEAP_DUMP_END {
            self.last_end = self.last_end.max(Some(record.offset));
        }
        if let Some(s) = record.as_string()? {
            let (name, kept) = self.table.lookup(s.bytes);
            if let Some(name) = name {
                self.names.insert(s.id, name);
            }
            if let Some(kept) = kept {
                self.names.insert_kept(s.id, kept);
            }
        } else if let Some(lc) = record.as_load_class()? {
            self.classes.add_name(lc.class_id, lc.name_id);
        }
        Ok(())
    }

    fn sub_record(&mut self, sub: &SubRecord<'_>) -> Result<()> {
        if let Sub::ClassDump(dump) = &sub.kind {
            self.classes.add_class_dump(dump, sub.offset);
        }
        Ok(())
    }
}
