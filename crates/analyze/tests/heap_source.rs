//! The heap-source seam holds: a heap the test holds in memory, described to the analysis
//! through `HeapSource`, gives the same analysis as the same heap written as HPROF. The
//! heaps are the fixtures' and the corpus's dumps, read by the test into plain data
//! (classes, instances with decoded values, arrays, roots, heaps: nothing of HPROF's
//! layout is kept), so what is compared is everything the analysis finds: leaks, traces,
//! statuses, signatures, retained sizes, triage, duplicate bitmaps, counts.

use std::path::{Path, PathBuf};

use hprof_shrink_analyze::source::{
    Class, Field, HeapSink, HeapSource, Object, Root as SourceRoot, Static,
};
use hprof_shrink_analyze::{analyze_path, analyze_source, AnalyzeError, Options};
use hprof_shrink_core::hprof::{tags, BasicType, Event, Events, Hprof, Sub, Value};
use hprof_shrink_core::space::Unpack;
use hprof_shrink_core::Control;

/// A class as the test keeps it.
struct OwnedClass {
    id: u64,
    name: String,
    super_id: u64,
    loader_id: u64,
    instance_size: u32,
    statics: Vec<(String, Value)>,
    fields: Vec<(String, BasicType)>,
}

/// One thing of the heap, in the order the dump had it.
enum Entry {
    Heap(u32, String),
    Class(usize),
    Instance(u64, u64, Vec<Value>),
    ObjectArray(u64, u64, Vec<u64>),
    PrimitiveArray(u64, BasicType, u32, Option<Vec<u8>>),
    Root(SourceRoot),
}

/// Class id → (superclass id, its own instance fields' types).
type Layouts = std::collections::HashMap<u64, (u64, Vec<(u64, BasicType)>)>;

/// An instance's values, class by class up the hierarchy, as its data holds them.
fn values_of(
    i: &hprof_shrink_core::hprof::Instance<'_>,
    layouts: &Layouts,
    id_size: u8,
) -> Result<Vec<Value>, String> {
    let mut values = Vec::new();
    let mut at = 0usize;
    let mut class = i.class_id;
    while let Some((super_id, fields)) = layouts.get(&class) {
        for &(_, ty) in fields {
            let size = ty.size(id_size) as usize;
            let Some(b) = i.data.get(at..at + size) else {
                return Err(format!("instance {:#x} is cut short", i.id));
            };
            values.push(Value::read(ty, b, id_size));
            at += size;
        }
        class = *super_id;
    }
    if at != i.data.len() {
        return Err(format!("instance {:#x}'s layout is unreadable", i.id));
    }
    Ok(values)
}

/// A root sub-record as the seam's root: what its kind says beside the object.
fn root_of(
    s: &hprof_shrink_core::hprof::SubRecord<'_>,
    tag: u8,
    object_id: u64,
    id_size: u8,
) -> SourceRoot {
    let n = id_size as usize;
    let u4 = |at: usize| {
        s.raw
            .get(at..at + 4)
            .map_or(0, |b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    };
    let (thread_serial, extra) = match tag {
        tags::ROOT_JNI_GLOBAL => (
            0,
            hprof_shrink_core::hprof::id_at(s.raw, 1 + n, id_size).unwrap_or(0),
        ),
        tags::ROOT_JNI_LOCAL
        | tags::ROOT_JAVA_FRAME
        | tags::ROOT_THREAD_OBJECT
        | tags::ROOT_JNI_MONITOR => (u4(1 + n), u4(5 + n) as u64),
        tags::ROOT_NATIVE_STACK | tags::ROOT_THREAD_BLOCK => (u4(1 + n), 0),
        _ => (0, 0),
    };
    SourceRoot {
        tag,
        object_id,
        thread_serial,
        extra,
    }
}

/// A heap held in memory.
struct MemoryHeap {
    name: String,
    id_size: u8,
    timestamp_ms: u64,
    format: String,
    classes: Vec<OwnedClass>,
    entries: Vec<Entry>,
}

impl MemoryHeap {
    /// The heap of a dump holding one heap dump, or why the test cannot hold it.
    fn read(path: &Path, bytes: &[u8]) -> Result<MemoryHeap, String> {
        let hprof = Hprof::new(bytes).map_err(|e| e.to_string())?;
        let dumps = hprof.heap_dumps().map_err(|e| e.to_string())?;
        if dumps.len() != 1 {
            return Err(format!("{} heap dumps in one file", dumps.len()));
        }
        let id_size = hprof.id_size();
        let mut strings = std::collections::HashMap::new();
        let mut names = std::collections::HashMap::new();
        let mut layouts = Layouts::new();
        // First the names and every class's layout: an instance may come before its class.
        for event in Events::new(&hprof) {
            match event.map_err(|e| e.to_string())? {
                Event::Record(r) if r.tag == tags::STRING => {
                    if let Some(s) = r.as_string().map_err(|e| e.to_string())? {
                        strings.insert(s.id, String::from_utf8_lossy(s.bytes).into_owned());
                    }
                }
                Event::Record(r) if r.tag == tags::LOAD_CLASS => {
                    if let Some(c) = r.as_load_class().map_err(|e| e.to_string())? {
                        names.insert(c.class_id, c.name_id);
                    }
                }
                Event::Sub(s) => {
                    if let Sub::ClassDump(c) = &s.kind {
                        let fields: Vec<(u64, BasicType)> =
                            c.instance_fields().map(|f| (f.name_id, f.ty)).collect();
                        layouts.insert(c.class_id, (c.super_id, fields));
                    }
                }
                _ => {}
            }
        }
        let text = |id: u64| strings.get(&id).cloned().unwrap_or_default();
        let mut heap = MemoryHeap {
            name: path.display().to_string(),
            id_size,
            timestamp_ms: hprof.header().timestamp_ms,
            format: format!("JAVA PROFILE {}", hprof.header().version),
            classes: Vec::new(),
            entries: Vec::new(),
        };
        for event in Events::new(&hprof) {
            let Event::Sub(s) = event.map_err(|e| e.to_string())? else {
                continue;
            };
            let entry = match &s.kind {
                Sub::HeapDumpInfo(h) => Entry::Heap(h.heap_id, text(h.name_id)),
                Sub::ClassDump(c) => {
                    heap.classes.push(OwnedClass {
                        id: c.class_id,
                        name: names.get(&c.class_id).map(|&n| text(n)).unwrap_or_default(),
                        super_id: c.super_id,
                        loader_id: c.loader_id,
                        instance_size: c.instance_size,
                        statics: c
                            .static_fields()
                            .map(|f| (text(f.name_id), f.value))
                            .collect(),
                        fields: c
                            .instance_fields()
                            .map(|f| (text(f.name_id), f.ty))
                            .collect(),
                    });
                    Entry::Class(heap.classes.len() - 1)
                }
                Sub::Instance(i) => {
                    Entry::Instance(i.id, i.class_id, values_of(i, &layouts, id_size)?)
                }
                Sub::ObjectArray(a) => {
                    Entry::ObjectArray(a.id, a.class_id, a.element_ids().collect())
                }
                Sub::PrimitiveArray(a) => {
                    Entry::PrimitiveArray(a.id, a.element_type, a.count, Some(a.data.to_vec()))
                }
                Sub::PrimitiveArrayNoData(a) => {
                    Entry::PrimitiveArray(a.id, a.element_type, a.count, None)
                }
                Sub::Root(r) => Entry::Root(root_of(&s, r.tag, r.object_id, id_size)),
            };
            heap.entries.push(entry);
        }
        Ok(heap)
    }
}

impl HeapSource for MemoryHeap {
    fn name(&self) -> String {
        self.name.clone()
    }
    fn format(&self) -> String {
        self.format.clone()
    }
    fn id_size(&self) -> u8 {
        self.id_size
    }
    fn timestamp_ms(&self) -> u64 {
        self.timestamp_ms
    }
    fn describe(&self, sink: &mut dyn HeapSink) -> Result<(), AnalyzeError> {
        for entry in &self.entries {
            match entry {
                Entry::Heap(id, name) => sink.heap(*id, name)?,
                Entry::Class(k) => {
                    let c = &self.classes[*k];
                    let statics: Vec<Static<'_>> = c
                        .statics
                        .iter()
                        .map(|(name, value)| Static {
                            name,
                            value: *value,
                        })
                        .collect();
                    let fields: Vec<Field<'_>> = c
                        .fields
                        .iter()
                        .map(|(name, ty)| Field { name, ty: *ty })
                        .collect();
                    sink.class(&Class {
                        id: c.id,
                        name: &c.name,
                        super_id: c.super_id,
                        loader_id: c.loader_id,
                        instance_size: c.instance_size,
                        statics: &statics,
                        object_size: 0,
                        fields: &fields,
                    })?
                }
                Entry::Instance(id, class_id, values) => sink.object(&Object::Instance {
                    id: *id,
                    class_id: *class_id,
                    values,
                    padding: 0,
                })?,
                Entry::ObjectArray(id, class_id, elements) => {
                    sink.object(&Object::ObjectArray {
                        id: *id,
                        class_id: *class_id,
                        elements,
                    })?
                }
                Entry::PrimitiveArray(id, ty, count, elements) => {
                    sink.object(&Object::PrimitiveArray {
                        id: *id,
                        ty: *ty,
                        count: *count,
                        elements: elements.as_deref(),
                    })?
                }
                Entry::Root(r) => sink.root(r)?,
            }
        }
        Ok(())
    }
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The dumps: the fixtures', and the corpus's when `../shared` is beside the workspace.
fn dumps() -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(repo().join("fixtures"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "hprof"))
        .collect();
    let corpus = repo().join("../shared/corpus");
    match std::fs::read_dir(&corpus) {
        Ok(dir) => out.extend(
            dir.map(|e| e.unwrap().path())
                .filter(|p| p.extension().is_some_and(|x| x == "hprof")),
        ),
        Err(_) => eprintln!(
            "the corpus is not beside the workspace ({}): fixtures only",
            corpus.display()
        ),
    }
    out.sort();
    out
}

/// An analysis as JSON, without what says where it came from (the input, the file's
/// length).
fn findings(a: &hprof_shrink_analyze::Analysis) -> serde_json::Value {
    let mut v = serde_json::to_value(a).unwrap();
    let o = v.as_object_mut().unwrap();
    o.remove("input");
    o["dump"].as_object_mut().unwrap().remove("bytes");
    v
}

#[test]
fn a_described_heap_is_analyzed_as_the_same_heap_written_as_hprof() {
    let options = Options {
        all_leaks: true,
        ..Options::default()
    };
    let control = Control::default();
    let mut compared = 0;
    for path in dumps() {
        let bytes = std::fs::read(&path).unwrap();
        let heap = match MemoryHeap::read(&path, &bytes) {
            Ok(heap) => heap,
            Err(why) => {
                eprintln!("skipping {}: {why}", path.display());
                continue;
            }
        };
        let from_file = analyze_path(&path, &options, &control).unwrap().analysis;
        let described = analyze_source(&heap, &options, &Unpack::default(), &control)
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert_eq!(described.analysis.input.kind, "source");
        assert_eq!(
            findings(&described.analysis),
            findings(&from_file),
            "{}: the described heap's analysis differs",
            path.display()
        );
        compared += 1;
    }
    assert!(compared >= 7, "compared only {compared} heaps");
}
