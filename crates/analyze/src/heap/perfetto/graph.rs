//! A process's heap graph as a [`HeapSource`]: the first pass over the trace gathers the
//! types, the field names and the roots (they may come in any packet, after the objects
//! that use them); describing the heap is a second pass that hands each packet's objects
//! to the sink as it decodes them.
//!
//! How a heap graph maps onto the seam:
//! - a type is a class (id: after every object id of the trace), named as the trace names
//!   it, with its own reference fields (their names without the `Class.` prefix);
//! - an instance's size is its own `self_size` (else its type's `object_size`): its
//!   references are its values, padded with zero bytes to that size (a class size of 0
//!   makes the analysis count an instance's bytes);
//! - an object that gives its references' field names itself (old traces, class objects),
//!   or whose references do not fit its type's fields, is an instance of a layout of its
//!   own: a class of the same name with those fields (and no superclass);
//! - an instance of a reference type (its kind, or a superclass's, soft, weak, finalizer or
//!   phantom) that the trace does not place under java.lang.ref.Reference is described
//!   under it, its `referent` as that class's field: the analysis knows a reference by
//!   that class, as in a dump;
//! - the values an object carries beside its references (a registry's native size, a
//!   Bitmap's width and height: `values`) are fields its type declares after its
//!   references;
//! - an array of references is an object array; its header bytes (its size less its
//!   elements') are its layout's instance size, so its size is the trace's;
//! - an array of primitives has no elements in a heap graph: its length is its size over
//!   the element's, and its size that, short of the trace's by less than an element;
//! - roots map to HPROF's root tags, heap types to ART's heaps (app, zygote, image); an
//!   object of the zygote's or the image's heap is a root too (VM-internal): ART's
//!   collector never frees them, and Perfetto's trace processor counts them so.

use hprof_shrink_core::hprof::{tags, BasicType, Value};

use super::about::{chosen, Chosen};
use super::statics::{self, ClassObject};
use super::values;
use super::wire::{self, part, GraphObject, GraphPacket, GraphRoot, GraphType, InternedString};
use crate::base::error::AnalyzeError;
use crate::base::error::TraceError;
use crate::base::map::Map;
use crate::heap::mapping::Mapping;
use crate::heap::source::{Class, Field, HeapSink, HeapSource, Object, Root, Static};

/// `HeapGraphType.Kind`s of reference types: soft, weak, finalizer, phantom. The
/// analysis knows their `referent` as it knows a dump's, by java.lang.ref.Reference's.
const REFERENCE_KINDS: [i32; 4] = [8, 9, 10, 11];

/// The class a reference type descends from, and the field it does not hold strongly.
const REFERENCE: &str = "java.lang.ref.Reference";
const REFERENT: &str = "referent";

/// Object layouts beyond the types' (old traces, class objects, arrays' headers) a trace
/// may need; more is an error rather than memory without bound.
pub const MAX_LAYOUTS: usize = 1 << 20;

/// Field names all layouts (the types', worked out, and those of their own) may hold
/// together.
pub const MAX_LAYOUT_FIELDS: usize = 1 << 24;

/// Reference fields an instance may have (HPROF's class dump counts them in 16 bits).
pub const MAX_FIELDS: usize = u16::MAX as usize;

/// Classes a type's layout walks up (a superclass chain longer than any Java's, or a cycle,
/// ends there).
pub const MAX_DEPTH: usize = 256;

/// A type as the first pass keeps it.
#[derive(Debug, Default)]
struct Type {
    name: String,
    super_type: u64,
    loader_id: u64,
    object_size: u64,
    /// The field-name keys of the references the class itself declares.
    fields: Vec<u64>,
    /// `HeapGraphType.Kind`.
    kind: i32,
}

/// What the first pass finds of the chosen process's graph.
#[derive(Debug, Default)]
struct Meta {
    types: Map<u64, Type>,
    field_names: Map<u64, String>,
    /// (HPROF root tag, object id).
    roots: Vec<(u8, u64)>,
    /// The largest id any object, reference or root states.
    max_id: u64,
    /// The values (besides references) each type's objects carry: see [`values`].
    carried: Map<u64, u8>,
    /// Each type's class object, described as the class: see [`statics`].
    class_objects: Map<u64, ClassObject>,
}

/// A process's heap graph in a mapped Perfetto trace.
pub struct TraceSource<'a> {
    name: String,
    bytes: &'a [u8],
    chosen: Chosen,
    meta: Meta,
    /// The types, in the order they are described.
    order: Vec<u64>,
    /// Each type's class id: its class object's, else after every object id (by rank).
    class_ids: Map<u64, u64>,
    /// The ids of the class objects described as classes.
    class_object_ids: crate::base::map::Set<u64>,
    id_size: u8,
}

impl<'a> TraceSource<'a> {
    /// Reads the trace `bytes` (named `name`) for the heap graph of `pid`, or of the only
    /// process it holds one of.
    pub fn open(name: &str, bytes: &'a [u8], pid: Option<i32>) -> Result<Self, TraceError> {
        let chosen = chosen(bytes, pid)?;
        let mapping = super::deobfuscate::read(bytes)?;
        let meta = gather(bytes, chosen, mapping.as_ref())?;
        // Class ids follow the largest object id: room for them, with no overflow.
        if meta.max_id > u64::MAX / 2 {
            return Err(TraceError::IdTooLarge { id: meta.max_id });
        }
        let mut order: Vec<u64> = meta.types.keys().copied().collect();
        order.sort_unstable();
        let top = meta.max_id as u128 + order.len() as u128 + MAX_LAYOUTS as u128;
        let id_size = if top < u32::MAX as u128 { 4 } else { 8 };
        let class_ids = order
            .iter()
            .enumerate()
            .map(|(rank, &t)| match meta.class_objects.get(&t) {
                Some(c) => (t, c.id),
                None => (t, meta.max_id + 1 + rank as u64),
            })
            .collect();
        let class_object_ids = meta.class_objects.values().map(|c| c.id).collect();
        Ok(TraceSource {
            name: name.to_string(),
            bytes,
            chosen,
            meta,
            order,
            class_ids,
            class_object_ids,
            id_size,
        })
    }

    /// The process whose heap it is.
    pub fn pid(&self) -> i32 {
        self.chosen.pid
    }
}

/// The heap-graph packets of `bytes` that are the `chosen` process's, undecoded (each
/// packet's pid read only where the trace holds other processes' graphs too).
fn graphs(
    bytes: &[u8],
    chosen: Chosen,
) -> impl Iterator<Item = Result<GraphPacket<'_>, TraceError>> + '_ {
    wire::heap_graphs(bytes).filter_map(move |g| {
        let g = match g {
            Ok(g) if chosen.only => return Some(Ok(g)),
            Ok(g) => g,
            Err(e) => return Some(Err(e)),
        };
        match g.pid() {
            Ok(p) => (p == chosen.pid).then_some(Ok(g)),
            Err(e) => Some(Err(e)),
        }
    })
}

/// The messages a graph's parts are decoded into, one of each, reused: no allocation an
/// object once their buffers have grown.
#[derive(Default)]
struct Parts {
    object: GraphObject,
    ty: GraphType,
    name: InternedString,
    root: GraphRoot,
}

/// The first pass: the types, field names, roots and largest id of the `chosen` graph; the
/// names deobfuscated by the trace's own `mapping`.
fn gather(bytes: &[u8], chosen: Chosen, mapping: Option<&Mapping>) -> Result<Meta, TraceError> {
    let mut meta = Meta::default();
    let mut last_id = 0u64;
    let mut class_objects = statics::Found::default();
    let mut parts = Parts::default();
    for g in graphs(bytes, chosen) {
        let g = g?;
        let offset = g.offset;
        for p in g.parts() {
            let p = p?;
            match p.number {
                part::TYPE => {
                    wire::decode_into(&p, &mut parts.ty)?;
                    meta.ty(std::mem::take(&mut parts.ty), mapping);
                    continue;
                }
                part::FIELD_NAME => {
                    wire::decode_into(&p, &mut parts.name)?;
                    meta.field_name(&parts.name, mapping);
                    continue;
                }
                part::ROOT => {
                    wire::decode_into(&p, &mut parts.root)?;
                    meta.roots(&parts.root);
                    continue;
                }
                _ => parts.object.read(&p)?,
            }
            let o = &parts.object;
            let carried = values::carried(o);
            if carried != 0 {
                *meta.carried.entry(o.type_id.unwrap_or(0)).or_default() |= carried;
            }
            let id = object_id(o, &mut last_id);
            let base = o.reference_field_id_base.unwrap_or(0);
            let top = o.reference_object_id.iter().max().copied().unwrap_or(0);
            let top = top.checked_add(base).ok_or_else(|| TraceError::BadPacket {
                offset,
                what: format!("object {id:#x}'s references pass 64 bits"),
            })?;
            meta.max_id = meta.max_id.max(id).max(top);
            // A class object names its references' fields itself (with none, it has no
            // statics to show): only such objects are looked at.
            let name = match o.reference_field_id.is_empty() {
                true => continue,
                false => meta.types.get(&o.type_id.unwrap_or(0)),
            };
            if name.is_none_or(|ty| statics::class_of(&ty.name).is_some()) {
                let refs = o.reference_object_id.iter();
                let refs = refs.map(|&r| if r == 0 { 0 } else { r + base }).collect();
                class_objects.offer(o, id, name.map(|ty| ty.name.as_str()), refs);
            }
        }
    }
    let types = meta
        .types
        .iter()
        .map(|(&t, ty)| (t, ty.name.as_str(), ty.object_size));
    meta.class_objects = class_objects.resolve(types);
    Ok(meta)
}

impl Meta {
    /// A type, named as the trace's own `mapping` deobfuscates it (the first of a key kept).
    fn ty(&mut self, t: GraphType, mapping: Option<&Mapping>) {
        let id = t.id.unwrap_or(0);
        let name = t.class_name.unwrap_or_else(|| format!("<type {id}>"));
        self.types.entry(id).or_insert(Type {
            name: mapping
                .and_then(|m| super::deobfuscate::class(m, &name))
                .unwrap_or(name),
            super_type: t.superclass_id.unwrap_or(0),
            loader_id: t.classloader_id.unwrap_or(0),
            object_size: t.object_size.unwrap_or(0),
            fields: t.reference_field_id,
            kind: t.kind.unwrap_or(0),
        });
    }

    /// A field name, as HPROF gives it, deobfuscated by `mapping`.
    fn field_name(&mut self, s: &InternedString, mapping: Option<&Mapping>) {
        let text = String::from_utf8_lossy(s.str.as_deref().unwrap_or_default());
        self.field_names
            .entry(s.iid.unwrap_or(0))
            .or_insert_with(|| {
                mapping
                    .and_then(|m| super::deobfuscate::field(m, &text))
                    .unwrap_or_else(|| field_name(&text).to_string())
            });
    }

    fn roots(&mut self, r: &GraphRoot) {
        let tag = root_tag(r.root_type.unwrap_or(0));
        for &id in &r.object_ids {
            self.max_id = self.max_id.max(id);
            self.roots.push((tag, id));
        }
    }
}

/// An object's id: its own, or the previous object's plus its delta.
fn object_id(o: &GraphObject, last: &mut u64) -> u64 {
    let id = match (o.id, o.id_delta) {
        (Some(id), _) => id,
        (None, delta) => last.wrapping_add(delta.unwrap_or(0)),
    };
    *last = id;
    id
}

/// A field's name as HPROF gives it: `int a.b` and `a.b` are `b`.
fn field_name(text: &str) -> &str {
    let text = text.rsplit(' ').next().unwrap_or(text);
    text.rsplit('.').next().unwrap_or(text)
}

/// `HeapGraphRoot.Type` as an HPROF root tag.
fn root_tag(kind: i32) -> u8 {
    match kind {
        1 => tags::ROOT_JNI_GLOBAL,
        2 => tags::ROOT_JNI_LOCAL,
        3 => tags::ROOT_JAVA_FRAME,
        4 => tags::ROOT_NATIVE_STACK,
        5 => tags::ROOT_STICKY_CLASS,
        6 => tags::ROOT_THREAD_BLOCK,
        7 => tags::ROOT_MONITOR_USED,
        8 => tags::ROOT_THREAD_OBJECT,
        9 => tags::ROOT_INTERNED_STRING,
        10 => tags::ROOT_FINALIZING,
        11 => tags::ROOT_DEBUGGER,
        12 => tags::ROOT_REFERENCE_CLEANUP,
        13 => tags::ROOT_VM_INTERNAL,
        14 => tags::ROOT_JNI_MONITOR,
        _ => tags::ROOT_UNKNOWN,
    }
}

/// `HeapGraphObject.HeapType` as ART's heap id and name (`None`: unknown, no change).
fn heap_of(kind: i32) -> Option<(u32, &'static str)> {
    match kind {
        1 => Some((u32::from(b'A'), "app")),
        2 => Some((u32::from(b'Z'), "zygote")),
        3 => Some((u32::from(b'I'), "image")),
        _ => None,
    }
}

/// The element type of a primitive array type's name (`int[]`).
fn primitive_element(name: &str) -> Option<BasicType> {
    Some(match name.strip_suffix("[]")? {
        "boolean" => BasicType::Boolean,
        "byte" => BasicType::Byte,
        "char" => BasicType::Char,
        "short" => BasicType::Short,
        "int" => BasicType::Int,
        "long" => BasicType::Long,
        "float" => BasicType::Float,
        "double" => BasicType::Double,
        _ => return None,
    })
}

impl HeapSource for TraceSource<'_> {
    fn name(&self) -> String {
        self.name.clone()
    }

    fn format(&self) -> String {
        super::FORMAT.into()
    }

    fn id_size(&self) -> u8 {
        self.id_size
    }

    fn timestamp_ms(&self) -> u64 {
        // A packet's timestamp counts from boot, not from the epoch.
        0
    }

    fn field_values(&self) -> bool {
        // A heap graph holds each object's references and size, no primitive values.
        false
    }

    fn describe(&self, sink: &mut dyn HeapSink) -> Result<(), AnalyzeError> {
        let mut d = Describer {
            source: self,
            sink,
            layouts: Map::default(),
            layout_fields: 0,
            type_layouts: Map::default(),
            entries: Map::default(),
            carriers: Vec::new(),
            values: Vec::new(),
            reference: None,
            last_id: 0,
            heap: None,
        };
        d.types()?;
        let mut o = GraphObject::default();
        for g in graphs(self.bytes, self.chosen) {
            let g = g?;
            for p in g.parts() {
                let p = p?;
                if p.number == part::OBJECT {
                    o.read(&p)?;
                    let id = d.object(&mut o, g.offset)?;
                    d.uncollected(id)?;
                }
            }
        }
        for &(tag, object_id) in &self.meta.roots {
            d.sink.root(&Root {
                tag,
                object_id,
                thread_serial: 0,
                extra: 0,
            })?;
        }
        Ok(())
    }
}

/// What a type's objects are described as, worked out at its first object: the one
/// lookup an object makes (its name, size, class id and facts in one place).
#[derive(Debug, Clone, Copy)]
struct Entry {
    shape: Shape,
    /// Its `object_size`: an object's size where it states none.
    object_size: u64,
    /// Its class id.
    class_id: u64,
    /// A reference type its superclasses do not place under java.lang.ref.Reference (see
    /// [`Describer::under_reference`]).
    detached: bool,
    /// The values its classes declare, an index of [`Describer::carriers`]' (`None`:
    /// none does, the common case).
    carriers: Option<u32>,
    /// Its layout's reference count, once an instance needed it (see [`Describer::layout`]).
    layout_len: Option<usize>,
    /// The last header size its arrays had, and that layout's class id.
    array_header: Option<(u64, u64)>,
}

/// What a type's objects are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shape {
    /// Instances (of a `java.lang.Class<X>` type: `class_type`, maybe described as X).
    Instance { class_type: bool },
    /// An array of references.
    ObjectArray,
    /// An array of primitives.
    PrimitiveArray(BasicType),
}

/// A layout of its own: the type and its references' names, or the type and an array's
/// header size.
#[derive(Debug, PartialEq, Eq, Hash)]
enum LayoutKey {
    Fields(u64, Vec<String>),
    ArrayHeader(u64, u64),
    /// A reference type's fields less java.lang.ref.Reference's, under it (see
    /// [`Describer::under_reference`]).
    UnderReference(u64, Vec<String>),
    /// java.lang.ref.Reference with its `referent`, for a trace that has no such type.
    Reference,
}

/// The second pass's state.
struct Describer<'s, 'a> {
    source: &'s TraceSource<'a>,
    sink: &'s mut dyn HeapSink,
    /// Layouts of their own described so far, and their class ids.
    layouts: Map<LayoutKey, u64>,
    layout_fields: usize,
    /// Each type's references' names, its superclasses' after its own.
    type_layouts: Map<u64, std::rc::Rc<[u64]>>,
    /// Each type met, as its objects are described: one lookup an object.
    entries: Map<u64, Entry>,
    /// The classes of a type's layout, each with its references' count and the values it
    /// declares after them (see [`Describer::carriers`]), for the types with values.
    carriers: Vec<Vec<(usize, u8)>>,
    /// An object's values, reused from one object to the next.
    values: Vec<Value>,
    /// java.lang.ref.Reference's class id and fields, once needed.
    reference: Option<(u64, std::rc::Rc<[String]>)>,
    last_id: u64,
    heap: Option<i32>,
}

impl Describer<'_, '_> {
    /// The class id of type `t` (its rank, after every object id).
    fn class_id(&self, t: u64) -> u64 {
        let ids = &self.source.class_ids;
        ids.get(&t).copied().unwrap_or(self.source.meta.max_id + 1)
    }

    fn name_of(&self, field: u64) -> String {
        match self.source.meta.field_names.get(&field) {
            Some(name) => name.clone(),
            None => format!("<field {field}>"),
        }
    }

    /// Every type, as a class.
    fn types(&mut self) -> Result<(), AnalyzeError> {
        let meta = &self.source.meta;
        for &t in &self.source.order {
            let ty = &meta.types[&t];
            let names: Vec<String> = ty.fields.iter().map(|&f| self.name_of(f)).collect();
            let mut fields = reference_fields(&names);
            for f in values::fields(self.carried(t)) {
                fields.push(Field { name: f.name, ..f });
            }
            let super_id = match meta.types.contains_key(&ty.super_type) {
                true => self.class_id(ty.super_type),
                false => 0,
            };
            let class_object = meta.class_objects.get(&t);
            let names: Vec<String> = class_object.map_or_else(Vec::new, |c| {
                (0..c.refs.len())
                    .map(|i| match c.fields.get(i) {
                        Some(&f) => self.name_of(f),
                        None => format!("<reference {i}>"),
                    })
                    .collect()
            });
            let statics: Vec<Static<'_>> = class_object.map_or_else(Vec::new, |c| {
                names
                    .iter()
                    .zip(&c.refs)
                    .map(|(name, &r)| Static {
                        name,
                        value: Value::Object(r),
                    })
                    .collect()
            });
            let object_size = class_object.map_or(0, |c| c.size);
            self.sink.class(&Class {
                id: self.class_id(t),
                name: &ty.name,
                super_id,
                loader_id: ty.loader_id,
                instance_size: 0,
                statics: &statics,
                object_size,
                fields: &fields,
            })?;
        }
        Ok(())
    }

    /// The names of the references an instance of type `t` holds, nearest class first:
    /// worked out once a type, at most [`MAX_DEPTH`] classes up and as many names as an
    /// instance may have fields; counted against [`MAX_LAYOUT_FIELDS`].
    fn layout(&mut self, t: u64, offset: u64) -> Result<std::rc::Rc<[u64]>, AnalyzeError> {
        if let Some(fields) = self.type_layouts.get(&t) {
            return Ok(fields.clone());
        }
        let types = &self.source.meta.types;
        let mut fields = Vec::new();
        for c in chain(types, t) {
            fields.extend_from_slice(&types[&c].fields);
        }
        self.count_fields(fields.len(), offset)?;
        let fields: std::rc::Rc<[u64]> = fields.into();
        self.type_layouts.insert(t, fields.clone());
        Ok(fields)
    }

    /// The length of type `t`'s layout ([`Describer::layout`]), kept in its entry.
    fn layout_len(&mut self, t: u64, offset: u64) -> Result<usize, AnalyzeError> {
        if let Some(n) = self.entries.get(&t).and_then(|e| e.layout_len) {
            return Ok(n);
        }
        let n = self.layout(t, offset)?.len();
        if let Some(e) = self.entries.get_mut(&t) {
            e.layout_len = Some(n);
        }
        Ok(n)
    }

    /// The values objects of type `t` carry (a mask of [`values`]' fields).
    fn carried(&self, t: u64) -> u8 {
        self.source.meta.carried.get(&t).copied().unwrap_or(0)
    }

    /// Type `t`'s entry, worked out at its first object (`id`, in the packet at `offset`):
    /// an error when the trace does not name the type.
    fn entry(&mut self, t: u64, id: u64, offset: u64) -> Result<Entry, AnalyzeError> {
        if let Some(e) = self.entries.get(&t) {
            return Ok(*e);
        }
        let Some(ty) = self.source.meta.types.get(&t) else {
            return Err(TraceError::BadPacket {
                offset,
                what: format!("object {id:#x} is of type {t}, which the trace does not name"),
            }
            .into());
        };
        let shape = match primitive_element(&ty.name) {
            Some(element) => Shape::PrimitiveArray(element),
            None if ty.name.ends_with("[]") => Shape::ObjectArray,
            None => Shape::Instance {
                class_type: statics::class_of(&ty.name).is_some(),
            },
        };
        let carriers = self.carriers(t).map(|c| {
            self.carriers.push(c);
            (self.carriers.len() - 1) as u32
        });
        let e = Entry {
            shape,
            object_size: ty.object_size,
            class_id: self.class_id(t),
            detached: self.is_detached(t),
            carriers,
            layout_len: None,
            array_header: None,
        };
        self.entries.insert(t, e);
        Ok(e)
    }

    /// The classes of `t`'s layout with, for each, its references' count and the values it
    /// declares after them; `None` when none declares a value (the common case).
    fn carriers(&self, t: u64) -> Option<Vec<(usize, u8)>> {
        let types = &self.source.meta.types;
        let classes: Vec<(usize, u8)> = chain(types, t)
            .into_iter()
            .map(|c| (types[&c].fields.len(), self.carried(c)))
            .collect();
        classes.iter().any(|c| c.1 != 0).then_some(classes)
    }

    /// Counts `n` more names held by layouts: an error past [`MAX_LAYOUT_FIELDS`].
    fn count_fields(&mut self, n: usize, offset: u64) -> Result<(), AnalyzeError> {
        self.layout_fields += n;
        if self.layout_fields > MAX_LAYOUT_FIELDS {
            return Err(TraceError::BadPacket {
                offset,
                what: format!(
                    "the objects' layouts need more than {MAX_LAYOUT_FIELDS} field names"
                ),
            }
            .into());
        }
        Ok(())
    }

    /// Describes `o` (its references rebased in place); its id.
    fn object(&mut self, o: &mut GraphObject, offset: u64) -> Result<u64, AnalyzeError> {
        let id = object_id(o, &mut self.last_id);
        if let Some(kind) = o.heap_type_delta {
            if self.heap != Some(kind) {
                self.heap = Some(kind);
                if let Some((heap, name)) = heap_of(kind) {
                    self.sink.heap(heap, name)?;
                }
            }
        }
        let t = o.type_id.unwrap_or(0);
        let e = self.entry(t, id, offset)?;
        if e.shape == (Shape::Instance { class_type: true })
            && self.source.class_object_ids.contains(&id)
        {
            // Described as its class, with the types.
            return Ok(id);
        }
        let base = o.reference_field_id_base.unwrap_or(0);
        if base != 0 {
            // `gather` checked that no reference passes 64 bits with its base.
            for r in o.reference_object_id.iter_mut().filter(|r| **r != 0) {
                *r += base;
            }
        }
        let o = &*o;
        self.shaped(o, (t, e), id, &o.reference_object_id, offset)
            .map(|()| id)
    }

    /// Describes `o` (object `id` of type `t` and its entry `e`, its references `refs`)
    /// as its type's shape says.
    fn shaped(
        &mut self,
        o: &GraphObject,
        (t, e): (u64, Entry),
        id: u64,
        refs: &[u64],
        offset: u64,
    ) -> Result<(), AnalyzeError> {
        let size = o.self_size.unwrap_or(e.object_size);
        let id_size = u64::from(self.source.id_size);
        match e.shape {
            Shape::PrimitiveArray(ty) => {
                let count = size / u64::from(ty.size(self.source.id_size));
                return self.sink.object(&Object::PrimitiveArray {
                    id,
                    ty,
                    count: u32::try_from(count).unwrap_or(u32::MAX),
                    elements: None,
                });
            }
            Shape::ObjectArray => {
                let header = size.saturating_sub(refs.len() as u64 * id_size);
                let class_id = match e.array_header {
                    Some((h, class_id)) if h == header => class_id,
                    _ => {
                        let class_id =
                            self.own_layout(LayoutKey::ArrayHeader(t, header), offset)?;
                        if let Some(e) = self.entries.get_mut(&t) {
                            e.array_header = Some((header, class_id));
                        }
                        class_id
                    }
                };
                return self.sink.object(&Object::ObjectArray {
                    id,
                    class_id,
                    elements: refs,
                });
            }
            Shape::Instance { .. } => {}
        }
        let mut values = std::mem::take(&mut self.values);
        values.clear();
        let class_id = match e.detached {
            true => {
                let (class_id, v) = self.under_reference(o, t, refs, offset)?;
                values = v;
                class_id
            }
            false => {
                values.extend(refs.iter().map(|&r| Value::Object(r)));
                self.instance_class(o, (t, e), refs.len(), offset)?
            }
        };
        let mut held = refs.len() as u64 * id_size;
        match e.carriers {
            Some(c) if class_id == e.class_id => {
                let classes = &self.carriers[c as usize];
                values.clear();
                with_carried(o, refs, classes, &mut values);
                held += classes.iter().map(|c| values::bytes(c.1)).sum::<u64>();
            }
            // A layout of its own, under its type's class (see `own_layout`): its type's
            // classes' references are null (the object named its own), their values its.
            Some(c) if !e.detached => {
                for &(n, mask) in &self.carriers[c as usize] {
                    values.extend(std::iter::repeat_n(Value::Object(0), n));
                    values::values(o, mask, &mut values);
                    held += n as u64 * id_size + values::bytes(mask);
                }
            }
            _ => {}
        }
        // Zero bytes up to the object's size (at most the size the trace states), which
        // the encoder writes without holding them.
        let padding = size.saturating_sub(held);
        let r = self.sink.object(&Object::Instance {
            id,
            class_id,
            values: &values,
            padding,
        });
        self.values = values;
        r
    }

    /// A root for an object of the zygote's or the boot image's heap, which ART's
    /// collector never frees (Perfetto's trace processor roots them too, as VM-internal).
    fn uncollected(&mut self, id: u64) -> Result<(), AnalyzeError> {
        if !matches!(self.heap, Some(2 | 3)) {
            return Ok(());
        }
        self.sink.root(&Root {
            tag: tags::ROOT_VM_INTERNAL,
            object_id: id,
            thread_serial: 0,
            extra: 0,
        })
    }

    /// The class an instance is described as: its type's, when its references are the
    /// type's fields; else a layout of its own.
    fn instance_class(
        &mut self,
        o: &GraphObject,
        (t, e): (u64, Entry),
        count: usize,
        offset: u64,
    ) -> Result<u64, AnalyzeError> {
        if o.reference_field_id.is_empty() {
            let len = match e.layout_len {
                Some(n) => n,
                None => self.layout_len(t, offset)?,
            };
            if len == count {
                return Ok(e.class_id);
            }
        }
        let names = self.reference_names(o, t, count, offset)?;
        self.own_layout(LayoutKey::Fields(t, names), offset)
    }

    /// The names of an instance's `count` references: its own field names, else its
    /// type's layout (`<reference N>` past either).
    fn reference_names(
        &mut self,
        o: &GraphObject,
        t: u64,
        count: usize,
        offset: u64,
    ) -> Result<Vec<String>, AnalyzeError> {
        let layout = match o.reference_field_id.is_empty() {
            true => self.layout(t, offset)?,
            false => o.reference_field_id.as_slice().into(),
        };
        Ok((0..count)
            .map(|i| match layout.get(i) {
                Some(&f) => self.name_of(f),
                None => format!("<reference {i}>"),
            })
            .collect())
    }

    /// Whether type `t` is a reference type (its kind, or a superclass's, is weak, soft,
    /// finalizer or phantom) whose superclasses do not reach a type named
    /// java.lang.ref.Reference, [`MAX_DEPTH`] classes up at most.
    fn is_detached(&self, t: u64) -> bool {
        let types = &self.source.meta.types;
        let (mut kind, mut under) = (false, false);
        let mut at = t;
        for _ in 0..MAX_DEPTH {
            let Some(ty) = types.get(&at) else { break };
            kind |= REFERENCE_KINDS.contains(&ty.kind);
            under |= ty.name == REFERENCE;
            at = ty.super_type;
        }
        kind && !under
    }

    /// An instance of a reference type the trace does not place under
    /// java.lang.ref.Reference (a renamed class, a hierarchy the trace leaves out), as
    /// the analysis knows references, by the class java.lang.ref.Reference declaring
    /// `referent`: its class is a layout of its own under java.lang.ref.Reference (the
    /// trace's type of that name, else one with `referent` alone), holding the references
    /// whose names the latter's fields do not take; their values come first, then those
    /// of java.lang.ref.Reference's fields, matched by name (null where the instance has
    /// none).
    fn under_reference(
        &mut self,
        o: &GraphObject,
        t: u64,
        refs: &[u64],
        offset: u64,
    ) -> Result<(u64, Vec<Value>), AnalyzeError> {
        let names = self.reference_names(o, t, refs.len(), offset)?;
        let (_, base_names) = self.reference_base(offset)?;
        let mut taken = vec![false; names.len()];
        let mut tail = Vec::with_capacity(base_names.len());
        for b in base_names.iter() {
            let found = (0..names.len()).find(|&i| !taken[i] && names[i] == *b);
            if let Some(i) = found {
                taken[i] = true;
            }
            tail.push(Value::Object(found.map_or(0, |i| refs[i])));
        }
        let own: Vec<usize> = (0..names.len()).filter(|&i| !taken[i]).collect();
        let mut values: Vec<Value> = own.iter().map(|&i| Value::Object(refs[i])).collect();
        values.extend(tail);
        let own_names = own.iter().map(|&i| names[i].clone()).collect();
        let class_id = self.own_layout(LayoutKey::UnderReference(t, own_names), offset)?;
        Ok((class_id, values))
    }

    /// The class java.lang.ref.Reference is described as, and its instances' reference
    /// names: the trace's type of that name (with its superclasses' fields), else a
    /// class of its own declaring `referent` alone.
    fn reference_base(
        &mut self,
        offset: u64,
    ) -> Result<(u64, std::rc::Rc<[String]>), AnalyzeError> {
        if let Some(base) = &self.reference {
            return Ok(base.clone());
        }
        let meta = &self.source.meta;
        let named = self
            .source
            .order
            .iter()
            .copied()
            .find(|t| meta.types[t].name == REFERENCE);
        let base = match named {
            Some(t) => {
                let layout = self.layout(t, offset)?;
                let names = layout.iter().map(|&f| self.name_of(f)).collect();
                (self.class_id(t), names)
            }
            None => (
                self.own_layout(LayoutKey::Reference, offset)?,
                [REFERENT.to_string()].into(),
            ),
        };
        self.reference = Some(base.clone());
        Ok(base)
    }

    /// The class id of a layout of its own, described the first time it is met.
    fn own_layout(&mut self, key: LayoutKey, offset: u64) -> Result<u64, AnalyzeError> {
        if let Some(&id) = self.layouts.get(&key) {
            return Ok(id);
        }
        let super_id = match &key {
            LayoutKey::UnderReference(..) => self.reference_base(offset)?.0,
            _ => 0,
        };
        let meta = &self.source.meta;
        let referent = [REFERENT.to_string()];
        let (t, names, instance_size) = match &key {
            LayoutKey::Fields(t, names) | LayoutKey::UnderReference(t, names) => {
                (Some(*t), names.as_slice(), 0)
            }
            LayoutKey::ArrayHeader(t, header) => (Some(*t), &[][..], *header),
            LayoutKey::Reference => (None, &referent[..], 0),
        };
        self.count_fields(names.len(), offset)?;
        if self.layouts.len() >= MAX_LAYOUTS || names.len() > MAX_FIELDS {
            return Err(TraceError::BadPacket {
                offset,
                what: format!(
                    "the objects need more layouts than their types' ({MAX_LAYOUTS} at most, {MAX_FIELDS} fields each)"
                ),
            }
            .into());
        }
        let id = meta.max_id + 1 + self.source.order.len() as u64 + self.layouts.len() as u64;
        let fields = reference_fields(names);
        let ty = t.map(|t| &meta.types[&t]);
        let carries = |t: &u64| self.entries.get(t).is_some_and(|e| e.carriers.is_some());
        let super_id = match (&key, ty) {
            // An array's layout keeps its type's place in the hierarchy.
            (LayoutKey::ArrayHeader(..), Some(ty)) if meta.types.contains_key(&ty.super_type) => {
                self.class_id(ty.super_type)
            }
            // One of a type whose classes declare values (a registry's size, a Bitmap's
            // width and height) is under the type's class, which declares them: its
            // instances are read as the type's are (the readers know a class by its
            // superclasses).
            (LayoutKey::Fields(t, _), _) if carries(t) => self.class_id(*t),
            _ => super_id,
        };
        self.sink.class(&Class {
            id,
            name: ty.map_or(REFERENCE, |ty| &ty.name),
            super_id,
            loader_id: ty.map_or(0, |ty| ty.loader_id),
            instance_size: u32::try_from(instance_size).unwrap_or(u32::MAX),
            statics: &[],
            object_size: 0,
            fields: &fields,
        })?;
        self.layouts.insert(key, id);
        Ok(id)
    }
}

/// The classes an instance of `t` holds the fields of, nearest first: up its
/// superclasses while the trace names them, [`MAX_DEPTH`] at most, not past a cycle nor
/// (much) past [`MAX_FIELDS`] references.
fn chain(types: &Map<u64, Type>, t: u64) -> Vec<u64> {
    let (mut seen, mut fields, mut at) = (Vec::new(), 0, t);
    while let Some(ty) = types.get(&at) {
        if seen.contains(&at) || seen.len() >= MAX_DEPTH || fields > MAX_FIELDS {
            break;
        }
        seen.push(at);
        fields += ty.fields.len();
        at = ty.super_type;
    }
    seen
}

/// An instance's values where its classes declare carried values: each class's
/// references, then its values, nearest class first.
fn with_carried(o: &GraphObject, refs: &[u64], classes: &[(usize, u8)], out: &mut Vec<Value>) {
    let mut at = 0;
    for &(n, mask) in classes {
        let end = (at + n).min(refs.len());
        out.extend(refs[at..end].iter().map(|&r| Value::Object(r)));
        values::values(o, mask, out);
        at = end;
    }
}

/// Fields of these names, each a reference: a heap graph knows no other kind.
fn reference_fields(names: &[String]) -> Vec<Field<'_>> {
    names
        .iter()
        .map(|name| Field {
            name,
            ty: BasicType::Object,
        })
        .collect()
}
