//! The heap as a graph over the index: class names, each class's reference fields, the
//! strong references out of an object, and an object's shallow size. Everything is read
//! back from the mapping; per class, the byte offsets of its reference fields are worked
//! out once.

use hprof_shrink_core::hprof::heap::{parse_sub_record, Sub};
use hprof_shrink_core::hprof::{id_at, tags, u4_at, BasicType, Value};
use rustc_hash::FxHashMap;

use super::index::{Index, Node};
use super::mapping::Mapping;

/// One reference field of a class's instances.
#[derive(Debug, Clone, Copy)]
pub struct RefField {
    /// Byte offset in the instance's field data.
    pub at: u32,
    pub name_id: u64,
    pub declared_by: u64,
}

#[derive(Debug, Default)]
struct ClassRefs {
    /// Bytes of field data an instance must have.
    size: u64,
    /// Sorted by field name (UTF-16 order), the class's own before its superclasses' for
    /// one name: the order LeakCanary's Shark reads them in, which decides between paths
    /// of equal length.
    fields: Vec<RefField>,
    /// The class's instance size, as its class dump gives it.
    instance_size: u64,
}

pub struct Graph<'i, 'a> {
    pub ix: &'i Index<'a>,
    names: FxHashMap<u64, String>,
    refs: FxHashMap<u64, ClassRefs>,
    mapping: Option<&'i Mapping>,
    /// Class ids whose instances are java.lang.ref.Reference (weak, soft, phantom, …).
    references: rustc_hash::FxHashSet<u64>,
    /// Instance sizes ahat adds to shallow sizes: `java.lang.Class`'s (to every class
    /// object) and each primitive array class's (by element type code).
    class_instance_size: u64,
    primitive_array_size: [u64; 12],
}

/// Turns HotSpot's internal class names into the Java form ART writes:
/// `java/lang/String` → `java.lang.String`, `[Ljava/lang/Object;` → `java.lang.Object[]`,
/// `[[I` → `int[][]`.
pub fn java_name(raw: &str) -> String {
    let dims = raw.bytes().take_while(|&b| b == b'[').count();
    if dims == 0 {
        return raw.replace('/', ".");
    }
    let elem = &raw[dims..];
    let base = match elem {
        "Z" => "boolean".to_string(),
        "B" => "byte".to_string(),
        "C" => "char".to_string(),
        "S" => "short".to_string(),
        "I" => "int".to_string(),
        "J" => "long".to_string(),
        "F" => "float".to_string(),
        "D" => "double".to_string(),
        _ if elem.starts_with('L') && elem.ends_with(';') => {
            elem[1..elem.len() - 1].replace('/', ".")
        }
        _ => elem.replace('/', "."),
    };
    format!("{base}{}", "[]".repeat(dims))
}

impl<'i, 'a> Graph<'i, 'a> {
    pub fn new(ix: &'i Index<'a>, mapping: Option<&'i Mapping>) -> Graph<'i, 'a> {
        let mut names = FxHashMap::default();
        for class in ix.classes.classes() {
            let raw = ix
                .classes
                .name_id(class.class_id)
                .and_then(|n| ix.string(n))
                .map(|s| java_name(&s))
                .unwrap_or_else(|| format!("<class {:#x}>", class.class_id));
            let name = match mapping {
                Some(m) => m.class(&raw).unwrap_or(raw),
                None => raw,
            };
            names.insert(class.class_id, name);
        }
        let mut g = Graph {
            ix,
            names,
            refs: FxHashMap::default(),
            mapping,
            references: Default::default(),
            class_instance_size: 0,
            primitive_array_size: [0; 12],
        };
        let size_of = |g: &Graph<'_, '_>, name: &str| {
            g.class_named(name)
                .and_then(|c| ix.classes.get(c))
                .map_or(0, |c| c.instance_size as u64)
        };
        g.class_instance_size = size_of(&g, "java.lang.Class");
        for ty in BasicType::PRIMITIVES {
            g.primitive_array_size[ty.code() as usize] = size_of(&g, &format!("{}[]", ty.name()));
        }
        let reference = g.class_named("java.lang.ref.Reference");
        let ids: Vec<u64> = ix.classes.classes().map(|c| c.class_id).collect();
        for class_id in ids {
            let refs = g.class_refs(class_id, reference);
            g.refs.insert(class_id, refs);
            if let Some(r) = reference {
                if g.is_subclass(class_id, r) {
                    g.references.insert(class_id);
                }
            }
        }
        g
    }

    fn class_refs(&self, class_id: u64, reference: Option<u64>) -> ClassRefs {
        let instance_size = self
            .ix
            .classes
            .get(class_id)
            .map_or(0, |c| c.instance_size as u64);
        // A class whose layout cannot be made (a superclass missing from a cut dump) has
        // no references to follow, but its instances still have their size.
        let Ok(layout) = self.ix.classes.layout(self.ix.data, class_id) else {
            return ClassRefs {
                instance_size,
                ..ClassRefs::default()
            };
        };
        let mut fields = Vec::new();
        for f in &layout.fields {
            if f.ty != BasicType::Object {
                continue;
            }
            let name = self.field_name(f.declared_by, f.name_id);
            // The referent of a java.lang.ref.Reference is not a strong reference.
            if Some(f.declared_by) == reference && name == "referent" {
                continue;
            }
            let field = RefField {
                at: f.offset as u32,
                name_id: f.name_id,
                declared_by: f.declared_by,
            };
            fields.push((name, field));
        }
        // Stable: for one name, the class's own field stays before its superclass's.
        fields.sort_by(|(a, _), (b, _)| utf16_cmp(a, b));
        let fields = fields.into_iter().map(|(_, f)| f).collect();
        ClassRefs {
            size: layout.size,
            fields,
            instance_size,
        }
    }

    /// The class's name, dotted, deobfuscated when a mapping is given.
    pub fn class_name(&self, class_id: u64) -> &str {
        self.names
            .get(&class_id)
            .map(String::as_str)
            .unwrap_or("<unknown class>")
    }

    /// A field's name, deobfuscated when a mapping is given.
    pub fn field_name(&self, declared_by: u64, name_id: u64) -> String {
        let raw = self
            .ix
            .string(name_id)
            .map(|s| s.into_owned())
            .unwrap_or_else(|| format!("<field {name_id:#x}>"));
        match self.mapping {
            Some(m) => {
                let class = self
                    .ix
                    .classes
                    .name_id(declared_by)
                    .and_then(|n| self.ix.string(n));
                match class {
                    Some(c) => m.field(&java_name(&c), &raw).unwrap_or(raw),
                    None => raw,
                }
            }
            None => raw,
        }
    }

    /// The first class with this (deobfuscated) name.
    pub fn class_named(&self, name: &str) -> Option<u64> {
        let mut ids: Vec<u64> = self
            .names
            .iter()
            .filter(|(_, n)| n.as_str() == name)
            .map(|(id, _)| *id)
            .collect();
        ids.sort_unstable();
        ids.first().copied()
    }

    /// Classes whose name satisfies `f`.
    pub fn classes_where(&self, f: impl Fn(&str) -> bool) -> Vec<u64> {
        let mut ids: Vec<u64> = self
            .names
            .iter()
            .filter(|(_, n)| f(n))
            .map(|(id, _)| *id)
            .collect();
        ids.sort_unstable();
        ids
    }

    /// Whether `class_id` is `ancestor` or descends from it.
    pub fn is_subclass(&self, class_id: u64, ancestor: u64) -> bool {
        let mut id = class_id;
        for _ in 0..=self.ix.classes.len() {
            if id == ancestor {
                return true;
            }
            match self.ix.classes.get(id) {
                Some(c) if c.super_id != 0 => id = c.super_id,
                _ => return false,
            }
        }
        false
    }

    pub fn is_reference_class(&self, class_id: u64) -> bool {
        self.references.contains(&class_id)
    }

    /// The class of an instance or array node (for a class object: the class itself).
    pub fn class_of(&self, node: Node) -> Option<u64> {
        let raw = self.ix.raw(node);
        let n = self.ix.id_size as usize;
        match raw[0] {
            tags::INSTANCE_DUMP => id_at(raw, 5 + n, n as u8),
            tags::OBJECT_ARRAY_DUMP => id_at(raw, 9 + n, n as u8),
            tags::CLASS_DUMP => id_at(raw, 1, n as u8),
            _ => None,
        }
    }

    /// A name for what a node is: its class, `byte[]` for a primitive array.
    pub fn node_class_name(&self, node: Node) -> String {
        let raw = self.ix.raw(node);
        let n = self.ix.id_size as usize;
        match raw[0] {
            tags::INSTANCE_DUMP | tags::OBJECT_ARRAY_DUMP => self
                .class_name(self.class_of(node).unwrap_or(0))
                .to_string(),
            tags::CLASS_DUMP => self
                .class_name(id_at(raw, 1, n as u8).unwrap_or(0))
                .to_string(),
            tags::PRIMITIVE_ARRAY_DUMP | tags::PRIMITIVE_ARRAY_NODATA => {
                let ty = raw.get(9 + n).and_then(|&t| BasicType::from_u8(t));
                format!("{}[]", ty.map_or("?", |t| t.name()))
            }
            _ => "<unknown>".into(),
        }
    }

    /// What to count a node under in a class histogram: (tag, class id or element type).
    pub fn class_key(&self, node: Node) -> (u8, u64) {
        let raw = self.ix.raw(node);
        let n = self.ix.id_size as usize;
        match raw[0] {
            tags::INSTANCE_DUMP => (raw[0], id_at(raw, 5 + n, n as u8).unwrap_or(0)),
            tags::OBJECT_ARRAY_DUMP => (raw[0], id_at(raw, 9 + n, n as u8).unwrap_or(0)),
            tags::PRIMITIVE_ARRAY_DUMP | tags::PRIMITIVE_ARRAY_NODATA => (
                tags::PRIMITIVE_ARRAY_DUMP,
                raw.get(9 + n).copied().unwrap_or(0) as u64,
            ),
            t => (t, 0),
        }
    }

    /// The name of a [`Graph::class_key`].
    pub fn class_key_name(&self, key: (u8, u64)) -> String {
        match key.0 {
            tags::INSTANCE_DUMP | tags::OBJECT_ARRAY_DUMP => self.class_name(key.1).to_string(),
            tags::PRIMITIVE_ARRAY_DUMP => format!(
                "{}[]",
                BasicType::from_u8(key.1 as u8).map_or("?", |t| t.name())
            ),
            tags::CLASS_DUMP => "java.lang.Class".into(),
            _ => "<unknown>".into(),
        }
    }

    /// `instance`, `class` or `array`.
    pub fn node_kind(&self, node: Node) -> &'static str {
        match self.ix.tag(node) {
            tags::INSTANCE_DUMP => "instance",
            tags::CLASS_DUMP => "class",
            _ => "array",
        }
    }

    /// The strong references out of `node`, to objects the dump holds, in LeakCanary's
    /// order (instance fields by name, array elements, static fields as the class dump
    /// lists them). A reference to an id the dump lacks (null, or an array a shrink
    /// dropped) is no reference. Returns what [`Graph::sized`] would, from the same look
    /// at the record.
    #[inline]
    pub fn for_each_ref(&self, node: Node, mut f: impl FnMut(Node)) -> ((u8, u64), u64) {
        let raw = self.ix.raw(node);
        let n = self.ix.id_size as usize;
        // An instance's class, once looked up here, is not looked up again for its size.
        let mut known: Option<(u64, u64)> = None;
        match raw[0] {
            tags::INSTANCE_DUMP => {
                let class = id_at(raw, 5 + n, n as u8).unwrap_or(0);
                let len = u4_at(raw, 5 + 2 * n).unwrap_or(0) as usize;
                let data = &raw[9 + 2 * n..9 + 2 * n + len];
                let refs = self.refs.get(&class);
                known = Some((class, refs.map_or(0, |r| r.instance_size)));
                // An instance shorter than its class's layout holds no reference we can
                // trust.
                if let Some(refs) = refs.filter(|r| r.size as usize <= data.len()) {
                    for r in &refs.fields {
                        let id = id_at(data, r.at as usize, n as u8).unwrap_or(0);
                        if id != 0 {
                            if let Some(t) = self.ix.node(id) {
                                f(t);
                            }
                        }
                    }
                }
            }
            tags::OBJECT_ARRAY_DUMP => {
                let count = u4_at(raw, 5 + n).unwrap_or(0) as usize;
                let start = 9 + 2 * n;
                for i in 0..count {
                    let id = id_at(raw, start + i * n, n as u8).unwrap_or(0);
                    if id != 0 {
                        if let Some(t) = self.ix.node(id) {
                            f(t);
                        }
                    }
                }
            }
            tags::CLASS_DUMP => {
                let class_id = id_at(raw, 1, n as u8).unwrap_or(0);
                if let Some(class) = self.ix.classes.get(class_id) {
                    for s in self.ix.classes.static_fields(self.ix.data, class) {
                        if let Value::Object(id) = s.value {
                            if id != 0 {
                                if let Some(t) = self.ix.node(id) {
                                    f(t);
                                }
                            }
                        }
                    }
                    // A class keeps its superclass loaded; ahat and Shark do not follow it
                    // as a field, and neither do we.
                }
            }
            _ => {}
        }
        self.sized_raw(raw, |class| match known {
            Some((c, size)) if c == class => size,
            _ => self.instance_size(class),
        })
    }

    /// The reference fields of a class's instances, in LeakCanary's order (see
    /// [`ClassRefs::fields`]).
    pub fn ref_fields(&self, class_id: u64) -> &[RefField] {
        self.refs.get(&class_id).map_or(&[], |r| &r.fields)
    }

    /// An instance's class and field bytes, when they are as long as its class's layout
    /// says (an instance shorter than that holds no reference to trust).
    #[inline]
    pub fn instance_data(&self, node: Node) -> Option<(u64, &'a [u8])> {
        let raw = self.ix.raw(node);
        if raw[0] != tags::INSTANCE_DUMP {
            return None;
        }
        let n = self.ix.id_size as usize;
        let class = id_at(raw, 5 + n, n as u8).unwrap_or(0);
        let len = u4_at(raw, 5 + 2 * n).unwrap_or(0) as usize;
        let data = &raw[9 + 2 * n..9 + 2 * n + len];
        let need = self.refs.get(&class).map_or(0, |r| r.size);
        (need as usize <= data.len()).then_some((class, data))
    }

    /// Where the field `name` declared by the class named `declared_by` sits in the
    /// instances of `class_id` (the class or an ancestor declaring it): its byte offset and
    /// type. Looks the layout up: callers keep what it finds.
    pub fn field_slot(
        &self,
        class_id: u64,
        declared_by: &str,
        name: &str,
    ) -> Option<(u32, BasicType)> {
        let layout = self.ix.classes.layout(self.ix.data, class_id).ok()?;
        layout
            .fields
            .iter()
            .find(|f| {
                self.class_name(f.declared_by) == declared_by
                    && self.field_name(f.declared_by, f.name_id) == name
            })
            .map(|f| (f.offset as u32, f.ty))
    }

    /// Whether the class (not its ancestors) declares an instance field of this name.
    pub fn declares_field(&self, class_id: u64, name: &str) -> bool {
        let Ok(layout) = self.ix.classes.layout(self.ix.data, class_id) else {
            return false;
        };
        layout
            .fields
            .iter()
            .any(|f| f.declared_by == class_id && self.field_name(class_id, f.name_id) == name)
    }

    /// The number of elements of an object array node (`None`: not one), read without a
    /// copy; [`Graph::array_id`] reads one.
    #[inline]
    pub fn array_len(&self, node: Node) -> Option<usize> {
        let raw = self.ix.raw(node);
        (raw[0] == tags::OBJECT_ARRAY_DUMP)
            .then(|| u4_at(raw, 5 + self.ix.id_size as usize).unwrap_or(0) as usize)
    }

    /// Element `i` of an object array node (below [`Graph::array_len`]).
    #[inline]
    pub fn array_id(&self, node: Node, i: usize) -> u64 {
        let raw = self.ix.raw(node);
        let n = self.ix.id_size as usize;
        id_at(raw, 9 + 2 * n + i * n, n as u8).unwrap_or(0)
    }

    /// The class and its superclasses, nearest first, without `java.lang.Object` (the
    /// chain LeakCanary matches instance-field patterns on); empty on a broken hierarchy.
    pub fn class_chain(&self, class_id: u64) -> Vec<u64> {
        let mut out = Vec::new();
        let mut id = class_id;
        while id != 0 && out.len() <= self.ix.classes.len() {
            if self.class_name(id) == "java.lang.Object" || out.contains(&id) {
                break;
            }
            out.push(id);
            id = self.ix.classes.get(id).map_or(0, |c| c.super_id);
        }
        out
    }

    /// A class's instance size, as its class dump gives it.
    fn instance_size(&self, class: u64) -> u64 {
        self.refs.get(&class).map_or(0, |r| r.instance_size)
    }

    /// An object's shallow size, as ahat counts it: an instance is its class's instance
    /// size; an array is its elements (ids for object arrays) plus its class's instance
    /// size; a class object is java.lang.Class's instance size plus its static values.
    pub fn shallow_size(&self, node: Node) -> u64 {
        self.sized(node).1
    }

    /// A node's [`Graph::class_key`] and shallow size, from one look at its record.
    pub fn sized(&self, node: Node) -> ((u8, u64), u64) {
        self.sized_with(node, &mut None)
    }

    /// [`Graph::sized`] for a walk over many objects: `last` keeps the last class's
    /// instance size, since neighbours are mostly of one class.
    pub fn sized_with(&self, node: Node, last: &mut Option<(u64, u64)>) -> ((u8, u64), u64) {
        self.sized_raw(self.ix.raw(node), |class| match *last {
            Some((c, size)) if c == class => size,
            _ => {
                let size = self.instance_size(class);
                *last = Some((class, size));
                size
            }
        })
    }

    /// The class key and shallow size of the object record `raw`, given how to find a
    /// class's instance size.
    fn sized_raw(&self, raw: &[u8], mut instance_size: impl FnMut(u64) -> u64) -> ((u8, u64), u64) {
        let n = self.ix.id_size as u64;
        match raw[0] {
            tags::INSTANCE_DUMP => {
                let class = id_at(raw, 5 + n as usize, n as u8).unwrap_or(0);
                // A class dump that gives no size (or no class dump at all): the instance's
                // own field bytes, rather than nothing. ART and HotSpot give every class
                // with fields a size, so their sizes stay ahat's.
                let size = match instance_size(class) {
                    0 => u4_at(raw, 5 + 2 * n as usize).unwrap_or(0) as u64,
                    size => size,
                };
                ((raw[0], class), size)
            }
            tags::OBJECT_ARRAY_DUMP => {
                let count = u4_at(raw, 5 + n as usize).unwrap_or(0) as u64;
                let class = id_at(raw, 9 + n as usize, n as u8).unwrap_or(0);
                ((raw[0], class), count * n + instance_size(class))
            }
            tags::PRIMITIVE_ARRAY_DUMP | tags::PRIMITIVE_ARRAY_NODATA => {
                let count = u4_at(raw, 5 + n as usize).unwrap_or(0) as u64;
                let code = raw.get(9 + n as usize).copied().unwrap_or(0);
                let ty = BasicType::from_u8(code);
                let class_size = self
                    .primitive_array_size
                    .get(code as usize)
                    .copied()
                    .unwrap_or(0);
                (
                    (tags::PRIMITIVE_ARRAY_DUMP, code as u64),
                    class_size + count * ty.map_or(0, |t| t.size(n as u8) as u64),
                )
            }
            tags::CLASS_DUMP => {
                let class_id = id_at(raw, 1, n as u8).unwrap_or(0);
                let size = self.ix.classes.get(class_id).map_or(0, |c| {
                    self.ix
                        .classes
                        .static_fields(self.ix.data, c)
                        .map(|s| s.ty.size(n as u8) as u64)
                        .sum()
                });
                ((tags::CLASS_DUMP, 0), self.class_instance_size + size)
            }
            t => ((t, 0), 0),
        }
    }

    /// An instance's field values by name (nearest class first), for the leak finders and
    /// the status rules. `None` for anything not an instance.
    pub fn fields(&self, node: Node) -> Option<Vec<(String, Value)>> {
        let raw = self.ix.raw(node);
        if raw[0] != tags::INSTANCE_DUMP {
            return None;
        }
        let (sub, _) = parse_sub_record(raw, self.ix.offset(node), self.ix.id_size).ok()?;
        let Sub::Instance(inst) = sub else {
            return None;
        };
        let layout = self.ix.classes.layout(self.ix.data, inst.class_id).ok()?;
        layout.check(&inst, self.ix.offset(node)).ok()?;
        Some(
            layout
                .values(inst.data)
                .map(|(f, v)| (self.field_name(f.declared_by, f.name_id), v))
                .collect(),
        )
    }

    /// One field of an instance, by name (the nearest class's, if two share it).
    pub fn field(&self, node: Node, name: &str) -> Option<Value> {
        self.fields(node)?
            .into_iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v)
    }

    /// A class's static field values by name.
    pub fn statics(&self, class_id: u64) -> Vec<(String, Value)> {
        let Some(class) = self.ix.classes.get(class_id) else {
            return Vec::new();
        };
        self.ix
            .classes
            .static_fields(self.ix.data, class)
            .map(|s| (self.field_name(class_id, s.name_id), s.value))
            .collect()
    }

    /// The elements of an object array node.
    pub fn elements(&self, node: Node) -> Option<Vec<u64>> {
        let raw = self.ix.raw(node);
        if raw[0] != tags::OBJECT_ARRAY_DUMP {
            return None;
        }
        let n = self.ix.id_size as usize;
        let count = u4_at(raw, 5 + n).unwrap_or(0) as usize;
        let start = 9 + 2 * n;
        Some(
            (0..count)
                .map(|i| id_at(raw, start + i * n, n as u8).unwrap_or(0))
                .collect(),
        )
    }

    /// A primitive array's element type and bytes.
    pub fn primitive(&self, node: Node) -> Option<(BasicType, &'a [u8])> {
        let raw = self.ix.raw(node);
        if raw[0] != tags::PRIMITIVE_ARRAY_DUMP {
            return None;
        }
        let n = self.ix.id_size as usize;
        let count = u4_at(raw, 5 + n).unwrap_or(0) as usize;
        let ty = BasicType::from_u8(*raw.get(9 + n)?)?;
        let start = 10 + n;
        raw.get(start..start + count * ty.size(n as u8) as usize)
            .map(|b| (ty, b))
    }

    /// The text of a java.lang.String instance (ART's char[]/byte[] value, JDK 9+'s byte[]
    /// with `coder`).
    pub fn string_value(&self, id: u64) -> Option<String> {
        let node = self.ix.node(id)?;
        let fields = self.fields(node)?;
        let value = fields.iter().find(|(n, _)| n == "value")?.1.as_object()?;
        let coder = fields
            .iter()
            .find(|(n, _)| n == "coder")
            .and_then(|(_, v)| v.as_i64());
        let (ty, bytes) = self.primitive(self.ix.node(value)?)?;
        hprof_shrink_core::hprof::javastring::decode(ty, bytes, coder)
    }
}

/// Orders two strings as Java's `String.compareTo` does (UTF-16 code units), as LeakCanary
/// sorts names.
pub fn utf16_cmp(a: &str, b: &str) -> std::cmp::Ordering {
    if a.is_ascii() && b.is_ascii() {
        return a.cmp(b);
    }
    a.encode_utf16().cmp(b.encode_utf16())
}

#[cfg(test)]
mod tests {
    use super::java_name;

    #[test]
    fn hotspot_names_become_java_names() {
        assert_eq!(java_name("java/lang/String"), "java.lang.String");
        assert_eq!(java_name("[Ljava/lang/Object;"), "java.lang.Object[]");
        assert_eq!(java_name("[[I"), "int[][]");
        assert_eq!(java_name("[B"), "byte[]");
        assert_eq!(
            java_name("android.graphics.Bitmap"),
            "android.graphics.Bitmap"
        );
        assert_eq!(java_name("byte[]"), "byte[]");
    }
}

/// Instances of some classes, found in the pass that reads every object.
#[derive(Default)]
pub struct Instances {
    by_class: FxHashMap<u64, Vec<Node>>,
}

impl Instances {
    /// Instances from (class, node) pairs in node order.
    pub fn from_pairs(pairs: impl IntoIterator<Item = (u64, Node)>) -> Instances {
        let mut by_class: FxHashMap<u64, Vec<Node>> = FxHashMap::default();
        for (class, node) in pairs {
            by_class.entry(class).or_default().push(node);
        }
        Instances { by_class }
    }

    /// The instances of any of `classes`, in id order.
    pub fn of(&self, classes: &[u64]) -> Vec<Node> {
        let mut out: Vec<Node> = classes
            .iter()
            .filter_map(|c| self.by_class.get(c))
            .flatten()
            .copied()
            .collect();
        out.sort_unstable();
        out
    }
}
