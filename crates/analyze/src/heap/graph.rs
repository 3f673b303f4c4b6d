//! The heap as a graph over the index: class names, each class's reference fields, the
//! strong references out of an object, and an object's shallow size. Everything is read
//! back from the mapping; per class, the byte offsets of its reference fields are worked
//! out once.

use crate::base::map::{Map, Set};
use hprof_shrink_core::hprof::heap::{parse_sub_record, Sub};
use hprof_shrink_core::hprof::{self, tags, BasicType, Value};

use crate::heap::index::{Index, Node};
use crate::heap::java_string::StringFields;
use crate::heap::mapping::Mapping;

/// One reference field of a class's instances, where it sits in their field data, in
/// the order the path search reads them (see [`Graph::ref_fields`]).
#[derive(Debug, Clone, Copy)]
pub struct RefField {
    /// Byte offset in the instance's field data.
    pub at: u32,
    pub name_id: u64,
    pub declared_by: u64,
}

/// What a reference is, by name: a field of an instance, a static field of a class, or
/// an element of an array.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RefName {
    /// An instance field: the class that declares it and the id of its name's string.
    Field { declared_by: u64, name_id: u64 },
    /// A static field of `class`.
    Static { class: u64, name_id: u64 },
    /// The element at this index.
    Element(u64),
}

/// The classes whose instances [`Graph::named_refs`] read last, a few by class id (a
/// list's links and their Strings alternate): each one's layout (`None`: unreadable), and
/// its reference fields once an instance held them all.
#[derive(Default)]
pub struct RecentLayouts<'t> {
    slots: [Option<KnownLayout<'t>>; LAYOUT_SLOTS],
}

const LAYOUT_SLOTS: usize = 4;

/// One class's entry in [`RecentLayouts`].
#[derive(Clone, Copy)]
struct KnownLayout<'t> {
    class: u64,
    refs: Option<&'t ClassRefs>,
    fields: Option<&'t [RefField]>,
}

/// The named references out of one node: see [`Graph::named_refs`].
pub struct NamedRefs<'t, 'a> {
    ix: &'t Index<'a>,
    /// Bytes an id takes.
    n: usize,
    kind: NamedKind<'t, 'a>,
}

/// Where the references still to come are read from.
enum NamedKind<'t, 'a> {
    /// An instance's field bytes, and its class's reference fields left.
    Fields {
        data: &'a [u8],
        fields: std::slice::Iter<'t, RefField>,
    },
    /// An object array's record: the next element's offset, the end, its index.
    Elements {
        raw: &'a [u8],
        at: usize,
        end: usize,
        index: u64,
    },
    /// Read all at once: a class's statics (few, as classes are), or none.
    Listed(std::vec::IntoIter<(Node, RefName)>),
}

/// One step of [`NamedRefs`]: a reference as its record holds it, or one already looked up.
enum Step {
    /// The id as read (0 for null), not yet looked up.
    Id(u64, RefName),
    /// A reference read with its target (a class's statics).
    Target(Node, RefName),
    End,
}

impl NamedRefs<'_, '_> {
    /// The next reference as the record holds it.
    #[inline(always)]
    fn step(&mut self) -> Step {
        let n = self.n;
        match &mut self.kind {
            NamedKind::Fields { data, fields } => match fields.next() {
                Some(r) => Step::Id(
                    id_at(data, r.at as usize, n),
                    RefName::Field {
                        declared_by: r.declared_by,
                        name_id: r.name_id,
                    },
                ),
                None => Step::End,
            },
            NamedKind::Elements {
                raw,
                at,
                end,
                index,
            } => {
                if *at >= *end {
                    return Step::End;
                }
                let id = id_at(raw, *at, n);
                *at += n;
                *index += 1;
                Step::Id(id, RefName::Element(*index - 1))
            }
            NamedKind::Listed(listed) => match listed.next() {
                Some((t, name)) => Step::Target(t, name),
                None => Step::End,
            },
        }
    }

    /// The name of the first reference to `to`, told by its id: no id is looked up, which
    /// in an array of a million elements is a million lookups saved.
    fn first_to(mut self, to: Node) -> Option<RefName> {
        let want = self.ix.id(to);
        loop {
            match self.step() {
                Step::Id(id, name) if id == want && id != 0 => return Some(name),
                Step::Target(t, name) if t == to => return Some(name),
                Step::End => return None,
                _ => {}
            }
        }
    }
}

impl Iterator for NamedRefs<'_, '_> {
    type Item = (Node, RefName);

    /// The next reference to an object the dump holds (null and missing ids skipped).
    #[inline]
    fn next(&mut self) -> Option<(Node, RefName)> {
        loop {
            match self.step() {
                Step::Id(0, _) => {}
                Step::Id(id, name) => {
                    if let Some(t) = self.ix.node(id) {
                        return Some((t, name));
                    }
                }
                Step::Target(t, name) => return Some((t, name)),
                Step::End => return None,
            }
        }
    }
}

/// One reference field of a class's instances, in a run (see [`Run`]).
#[derive(Debug, Clone, Copy)]
struct RunField {
    /// Where the field is, in bytes back from the end of the instance's layout: the same
    /// in every subclass (a subclass's own fields come first), so that a class shares its
    /// superclass's list rather than copying it.
    from_end: u32,
    name_id: u64,
    declared_by: u64,
}

/// A run of reference fields in [`Graph::ref_fields`], followed by another run (the
/// superclass's) or none.
#[derive(Debug, Clone, Copy)]
struct Run {
    start: u32,
    end: u32,
    next: u32,
    /// Fields in this run and the ones after it.
    total: u32,
}

/// No run: a class without reference fields.
const NO_RUN: u32 = u32::MAX;

/// A hierarchy's reference fields are copied into one run while they are this few (one
/// loop over them for each instance); past that a class's own run links to its
/// superclass's, so that a deep hierarchy costs its fields once, not once per subclass.
const FLAT_FIELDS: u32 = 64;

/// Why a class's instances cannot be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Broken {
    /// A superclass (this one) is not in the dump.
    MissingSuperclass(u64),
    /// The class is on or below a superclass cycle.
    SuperclassCycle,
    /// Its fields come to more bytes than an instance record can hold.
    TooLarge,
    /// No CLASS_DUMP for the class.
    NoClassDump,
    /// The instance holds fewer bytes than its class's fields need.
    ShortInstance,
}

impl Broken {
    /// Why, in words.
    pub fn describe(self) -> String {
        match self {
            Broken::MissingSuperclass(id) => format!("superclass {id:#x} is not in the dump"),
            Broken::SuperclassCycle => "its superclasses form a cycle".into(),
            Broken::TooLarge => "its fields need more bytes than an instance can have".into(),
            Broken::NoClassDump => "the class is not in the dump".into(),
            Broken::ShortInstance => "instances shorter than their class's fields".into(),
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct ClassRefs {
    /// Bytes of field data an instance must have: its own fields, then its ancestors'.
    size: u64,
    /// The first run of its reference fields (`NO_RUN`: none).
    run: u32,
    /// The class's instance size, as its class dump gives it.
    instance_size: u64,
    /// The nearest class of its hierarchy (itself first) that declares instance fields:
    /// where reading an instance's values starts.
    fielded: Option<u64>,
    /// Why its instances cannot be read, if they cannot.
    broken: Option<Broken>,
    /// Its list of reference fields in the search's order, in [`Tables::sorted`]
    /// (`u32::MAX`: none, the class is broken).
    sorted: u32,
    /// Its place in a walk over the class tree, and the end of its subclasses' places
    /// (`u32::MAX` for a class on or below a superclass cycle, in no tree).
    enter: u32,
    leave: u32,
}

impl ClassRefs {
    /// A class whose instances cannot be read: no references to follow, but its instances
    /// keep their size.
    fn broken(instance_size: u64, why: Broken) -> ClassRefs {
        ClassRefs {
            size: 0,
            run: NO_RUN,
            instance_size,
            fielded: None,
            broken: Some(why),
            sorted: u32::MAX,
            enter: u32::MAX,
            leave: u32::MAX,
        }
    }
}

pub struct Graph<'i, 'a> {
    pub ix: &'i Index<'a>,
    /// What is known of each class, worked out once and shared by the graphs made again
    /// on the same index (see [`Graph::classes`]).
    t: std::sync::Arc<Tables>,
    mapping: Option<&'i Mapping>,
}

/// A graph's per-class tables, kept while its index changes (see [`Graph::classes`]).
pub struct Classes(std::sync::Arc<Tables>);

/// The graph's per-class tables: nothing in them looks an object id up.
#[derive(Default)]
struct Tables {
    names: Map<u64, String>,
    refs: Map<u64, ClassRefs>,
    /// Every class's reference fields, in runs (see [`Run`]).
    ref_fields: Vec<RunField>,
    runs: Vec<Run>,
    /// Each class's reference fields sorted as the path search reads them, made when an
    /// instance of the class whose data holds them all is first read (see
    /// [`Graph::ref_fields`]): only classes that have such an instance pay for a list,
    /// and no list is longer than one instance's data.
    sorted: Vec<std::sync::OnceLock<Box<[RefField]>>>,
    /// Class ids whose instances are java.lang.ref.Reference (weak, soft, phantom, …).
    references: Set<u64>,
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
    /// The graph's tables, built once per class: names, each class's reference fields
    /// (from its superclass's, each class visited once), its place in the class tree, the
    /// Linear in the classes and their fields.
    pub fn new(ix: &'i Index<'a>, mapping: Option<&'i Mapping>) -> Graph<'i, 'a> {
        let mut names = Map::default();
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
            t: std::sync::Arc::new(Tables {
                names,
                ..Tables::default()
            }),
            mapping,
        };
        let size_of = |g: &Graph<'_, '_>, name: &str| {
            g.class_named(name)
                .and_then(|c| ix.classes.get(c))
                .map_or(0, |c| c.instance_size as u64)
        };
        let size = size_of(&g, "java.lang.Class");
        g.tm().class_instance_size = size;
        for ty in BasicType::PRIMITIVES {
            let size = size_of(&g, &format!("{}[]", ty.name()));
            g.tm().primitive_array_size[ty.code() as usize] = size;
        }
        let reference = g.class_named("java.lang.ref.Reference");
        // In id order, so that the tables come out the same on every run.
        let mut ids: Vec<u64> = ix.classes.classes().map(|c| c.class_id).collect();
        ids.sort_unstable();
        for &class_id in &ids {
            g.build_refs(class_id, reference);
        }
        g.place_in_tree(&ids);
        for &class_id in &ids {
            if let Some(r) = reference {
                if g.is_subclass(class_id, r) {
                    g.tm().references.insert(class_id);
                }
            }
        }
        g
    }

    /// The per-class tables, to make the graph again with [`Graph::with_classes`] on an
    /// index whose lookup table has gone since.
    pub fn classes(&self) -> Classes {
        Classes(self.t.clone())
    }

    /// The graph over `ix` with tables made before: nothing is worked out again.
    pub fn with_classes(
        ix: &'i Index<'a>,
        classes: Classes,
        mapping: Option<&'i Mapping>,
    ) -> Graph<'i, 'a> {
        Graph {
            ix,
            t: classes.0,
            mapping,
        }
    }

    /// The tables while they are being built (before any other graph shares them).
    fn tm(&mut self) -> &mut Tables {
        std::sync::Arc::get_mut(&mut self.t)
            .expect("a graph's tables are built before they are shared")
    }

    /// Builds the entry of `class_id` and of every superclass not built yet, top down:
    /// each from its superclass's. The walk up stops at a class already built, the top of
    /// the hierarchy, a superclass missing from the dump, or a class already on the walk
    /// (a cycle), so every class is walked once.
    fn build_refs(&mut self, class_id: u64, reference: Option<u64>) {
        if self.t.refs.contains_key(&class_id) {
            return;
        }
        let mut walk: Vec<u64> = Vec::new();
        let mut on_walk: Set<u64> = Default::default();
        let mut id = class_id;
        // What the top of the walk stands on: nothing, a built class, or a fault.
        let mut base: Result<Option<u64>, Broken> = Ok(None);
        while id != 0 {
            if self.t.refs.contains_key(&id) {
                base = Ok(Some(id));
                break;
            }
            if self.ix.classes.get(id).is_none() {
                base = Err(if walk.is_empty() {
                    Broken::NoClassDump
                } else {
                    Broken::MissingSuperclass(id)
                });
                break;
            }
            if !on_walk.insert(id) {
                base = Err(Broken::SuperclassCycle);
                break;
            }
            walk.push(id);
            id = self.ix.classes.get(id).map_or(0, |c| c.super_id);
        }
        if walk.is_empty() {
            return;
        }
        for &c in walk.iter().rev() {
            let info = *self.ix.classes.get(c).expect("walked classes are dumped");
            let instance_size = info.instance_size as u64;
            let up = match base {
                Err(why) => Err(why),
                Ok(None) => Ok(None),
                Ok(Some(s)) => match self.t.refs[&s].broken {
                    Some(why) => Err(why),
                    None => Ok(Some(self.t.refs[&s])),
                },
            };
            let entry = match up {
                Err(why) => ClassRefs::broken(instance_size, why),
                Ok(up) => self.class_entry(&info, up, reference),
            };
            self.tm().refs.insert(c, entry);
            base = Ok(Some(c));
        }
    }

    /// A class's entry from its superclass's (`None` at the top of the hierarchy).
    fn class_entry(
        &mut self,
        info: &hprof_shrink_core::hprof::ClassInfo,
        up: Option<ClassRefs>,
        reference: Option<u64>,
    ) -> ClassRefs {
        let class_id = info.class_id;
        let id_size = self.ix.id_size;
        let up_size = up.map_or(0, |u| u.size);
        let up_run = up.map_or(NO_RUN, |u| u.run);
        let own: Vec<(u64, BasicType, u64)> = {
            let mut at = 0u64;
            self.ix
                .classes
                .own_fields(self.ix.data, info)
                .map(|f| {
                    let here = at;
                    at += f.ty.size(id_size) as u64;
                    (f.name_id, f.ty, here)
                })
                .collect()
        };
        let own_size: u64 = own.iter().map(|f| f.1.size(id_size) as u64).sum();
        let size = own_size + up_size;
        if size > u32::MAX as u64 {
            return ClassRefs::broken(info.instance_size as u64, Broken::TooLarge);
        }
        let start = self.t.ref_fields.len();
        for &(name_id, ty, at) in &own {
            if ty != BasicType::Object {
                continue;
            }
            let name = self.field_name(class_id, name_id);
            // The referent of a java.lang.ref.Reference is not a strong reference.
            if Some(class_id) == reference && name == "referent" {
                continue;
            }
            self.tm().ref_fields.push(RunField {
                from_end: (size - at) as u32,
                name_id,
                declared_by: class_id,
            });
        }
        let mine = (self.t.ref_fields.len() - start) as u32;
        let after = if up_run == NO_RUN {
            0
        } else {
            self.t.runs[up_run as usize].total
        };
        let run = if mine == 0 {
            up_run
        } else {
            let total = mine.saturating_add(after);
            let next = if total <= FLAT_FIELDS {
                // Few: the superclass's fields copied after the class's own, one run.
                let mut r = up_run;
                while r != NO_RUN {
                    let Run {
                        start, end, next, ..
                    } = self.t.runs[r as usize];
                    self.tm()
                        .ref_fields
                        .extend_from_within(start as usize..end as usize);
                    r = next;
                }
                NO_RUN
            } else {
                up_run
            };
            let end = self.t.ref_fields.len() as u32;
            self.tm().runs.push(Run {
                start: start as u32,
                end,
                next,
                total,
            });
            (self.t.runs.len() - 1) as u32
        };
        self.tm().sorted.push(std::sync::OnceLock::new());
        ClassRefs {
            size,
            sorted: (self.t.sorted.len() - 1) as u32,
            run,
            instance_size: info.instance_size as u64,
            fielded: if own.is_empty() {
                up.and_then(|u| u.fielded)
            } else {
                Some(class_id)
            },
            broken: None,
            enter: u32::MAX,
            leave: u32::MAX,
        }
    }

    /// Numbers the classes in a depth-first walk over the class tree (each class under
    /// its superclass), so that a class descends from another when its number falls in
    /// the other's range. Classes on or below a superclass cycle are in no tree.
    fn place_in_tree(&mut self, ids: &[u64]) {
        let mut children: Map<u64, Vec<u64>> = Map::default();
        let mut tops: Vec<u64> = Vec::new();
        for &c in ids {
            let Some(entry) = self.t.refs.get(&c) else {
                continue;
            };
            if entry.broken == Some(Broken::SuperclassCycle) {
                continue;
            }
            let up = self.ix.classes.get(c).map_or(0, |i| i.super_id);
            if up != 0 && self.t.refs.contains_key(&up) {
                children.entry(up).or_default().push(c);
            } else {
                tops.push(c);
            }
        }
        let mut next = 0u32;
        // (class, whether its subclasses are done).
        let mut stack: Vec<(u64, bool)> = tops.iter().rev().map(|&c| (c, false)).collect();
        while let Some((c, done)) = stack.pop() {
            let entry = self
                .tm()
                .refs
                .get_mut(&c)
                .expect("placed classes have entries");
            if done {
                entry.leave = next;
                continue;
            }
            entry.enter = next;
            next += 1;
            stack.push((c, true));
            if let Some(kids) = children.get(&c) {
                stack.extend(kids.iter().rev().map(|&k| (k, false)));
            }
        }
    }

    /// The class's name, if the dump has its class.
    pub fn known_class_name(&self, class_id: u64) -> Option<&str> {
        self.t.names.get(&class_id).map(String::as_str)
    }

    /// The class's name, dotted, deobfuscated when a mapping is given.
    pub fn class_name(&self, class_id: u64) -> &str {
        self.t
            .names
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
            .t
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
            .t
            .names
            .iter()
            .filter(|(_, n)| f(n))
            .map(|(id, _)| *id)
            .collect();
        ids.sort_unstable();
        ids
    }

    /// Whether `class_id` is `ancestor` or descends from it: one comparison of their places
    /// in the class tree.
    pub fn is_subclass(&self, class_id: u64, ancestor: u64) -> bool {
        if class_id == ancestor {
            return true;
        }
        match (self.t.refs.get(&class_id), self.t.refs.get(&ancestor)) {
            (Some(c), Some(a)) => a.enter < c.enter && c.enter < a.leave,
            _ => false,
        }
    }

    pub fn is_reference_class(&self, class_id: u64) -> bool {
        self.t.references.contains(&class_id)
    }

    /// The class of an instance or array node (for a class object: the class itself).
    pub fn class_of(&self, node: Node) -> Option<u64> {
        let raw = self.ix.raw(node);
        let n = self.ix.id_size as usize;
        match raw[0] {
            tags::INSTANCE_DUMP => Some(id_at(raw, 5 + n, n)),
            tags::OBJECT_ARRAY_DUMP => Some(id_at(raw, 9 + n, n)),
            tags::CLASS_DUMP => Some(id_at(raw, 1, n)),
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
            tags::CLASS_DUMP => self.class_name(id_at(raw, 1, n)).to_string(),
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
            tags::INSTANCE_DUMP => (raw[0], id_at(raw, 5 + n, n)),
            tags::OBJECT_ARRAY_DUMP => (raw[0], id_at(raw, 9 + n, n)),
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
    /// at the record, and why the node's references could not be read, when they could not
    /// (an instance of a class whose layout is broken, or that is shorter than its layout).
    #[inline]
    pub fn for_each_ref(
        &self,
        node: Node,
        mut f: impl FnMut(Node),
    ) -> ((u8, u64), u64, Option<Broken>) {
        let raw = self.ix.raw(node);
        let n = self.ix.id_size as usize;
        // An instance's class, once looked up here, is not looked up again for its size.
        let mut known: Option<(u64, u64)> = None;
        let mut unread = None;
        match raw[0] {
            tags::INSTANCE_DUMP => {
                let class = id_at(raw, 5 + n, n);
                let len = u4_at(raw, 5 + 2 * n) as usize;
                let data = &raw[9 + 2 * n..9 + 2 * n + len];
                match self.t.refs.get(&class) {
                    None => unread = Some(Broken::NoClassDump),
                    Some(refs) => {
                        known = Some((class, refs.instance_size));
                        if refs.broken.is_some() {
                            unread = refs.broken;
                        } else if refs.size as usize > data.len() {
                            // An instance shorter than its class's layout holds no
                            // reference we can trust.
                            unread = Some(Broken::ShortInstance);
                        } else {
                            for r in self.sorted(refs).iter() {
                                let id = id_at(data, r.at as usize, n);
                                if id != 0 {
                                    if let Some(t) = self.ix.node(id) {
                                        f(t);
                                    }
                                }
                            }
                        }
                    }
                }
            }
            tags::OBJECT_ARRAY_DUMP => {
                let count = u4_at(raw, 5 + n) as usize;
                let start = 9 + 2 * n;
                for i in 0..count {
                    let id = id_at(raw, start + i * n, n);
                    if id != 0 {
                        if let Some(t) = self.ix.node(id) {
                            f(t);
                        }
                    }
                }
            }
            tags::CLASS_DUMP => {
                let class_id = id_at(raw, 1, n);
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
        let (key, size) = self.sized_raw(raw, |class| match known {
            Some((c, size)) if c == class => size,
            _ => self.instance_size(class),
        });
        (key, size, unread)
    }

    /// The strong references out of `node`, as [`Graph::for_each_ref`] follows them and in
    /// its order, each with its name (a field, a static, an array element). What `growth`
    /// keys its path tree by, and how `diff` names a retainer's path; slower than
    /// `for_each_ref`, so the analysis does not use it.
    pub fn for_each_named_ref(&self, node: Node, mut f: impl FnMut(Node, RefName)) {
        for (t, r) in self.named_refs(node, &mut RecentLayouts::default()) {
            f(t, r);
        }
    }

    /// [`Graph::for_each_named_ref`] as an iterator (a loop over it keeps its body inline),
    /// for a caller reading many instances of a few classes in turn: `recent` keeps the
    /// layouts of the classes read last, so that a run of instances of one class (a
    /// list's links) looks the class up once.
    #[inline]
    pub fn named_refs<'t>(
        &'t self,
        node: Node,
        recent: &mut RecentLayouts<'t>,
    ) -> NamedRefs<'t, 'a> {
        let raw = self.ix.raw(node);
        let n = self.ix.id_size as usize;
        let kind = match raw[0] {
            tags::INSTANCE_DUMP => self.instance_fields(raw, recent).map_or(
                NamedKind::Listed(Vec::new().into_iter()),
                |(data, fields)| NamedKind::Fields {
                    data,
                    fields: fields.iter(),
                },
            ),
            tags::OBJECT_ARRAY_DUMP => {
                let count = u4_at(raw, 5 + n) as usize;
                let at = 9 + 2 * n;
                NamedKind::Elements {
                    raw,
                    at,
                    end: at + count * n,
                    index: 0,
                }
            }
            tags::CLASS_DUMP => {
                let class_id = id_at(raw, 1, n);
                let mut statics = Vec::new();
                if let Some(class) = self.ix.classes.get(class_id) {
                    for s in self.ix.classes.static_fields(self.ix.data, class) {
                        if let Value::Object(id) = s.value {
                            if let Some(t) = self.ix.node(id) {
                                let name_id = s.name_id;
                                statics.push((
                                    t,
                                    RefName::Static {
                                        class: class_id,
                                        name_id,
                                    },
                                ));
                            }
                        }
                    }
                }
                NamedKind::Listed(statics.into_iter())
            }
            _ => NamedKind::Listed(Vec::new().into_iter()),
        };
        NamedRefs {
            ix: self.ix,
            n,
            kind,
        }
    }

    /// An instance's field bytes and its class's reference fields (in the search's
    /// order), `recent` saving the class's look-up; `None` when the class has no readable
    /// layout or the instance is shorter than it (no reference to trust).
    #[inline]
    fn instance_fields<'t>(
        &'t self,
        raw: &'a [u8],
        recent: &mut RecentLayouts<'t>,
    ) -> Option<(&'a [u8], &'t [RefField])> {
        let n = self.ix.id_size as usize;
        let class = id_at(raw, 5 + n, n);
        let len = u4_at(raw, 5 + 2 * n) as usize;
        let data = &raw[9 + 2 * n..9 + 2 * n + len];
        // Class ids are aligned: the bits above the alignment pick the slot.
        let slot = &mut recent.slots[(class >> 3) as usize % LAYOUT_SLOTS];
        let known = match slot {
            Some(k) if k.class == class => k,
            _ => slot.insert(KnownLayout {
                class,
                refs: self.t.refs.get(&class).filter(|r| r.broken.is_none()),
                fields: None,
            }),
        };
        let refs = known.refs.filter(|r| r.size as usize <= data.len())?;
        // Made only for a class with a whole instance (see `sorted`).
        Some((data, *known.fields.get_or_insert_with(|| self.sorted(refs))))
    }

    /// The first reference from `from` to `to`, named; `None` when `from` holds none
    /// (a path step through a collection read as one step).
    pub fn reference_between(&self, from: Node, to: Node) -> Option<RefName> {
        self.named_refs(from, &mut RecentLayouts::default())
            .first_to(to)
    }

    /// A readable class's reference fields sorted by name (UTF-16 order), the class's own
    /// before its superclasses' for one name: the order LeakCanary's Shark reads them in,
    /// which decides between paths of equal length. Made on first need from the class's
    /// runs (one stable sort of the hierarchy's reference fields) and kept. Callers ask
    /// only for the class of an instance whose data holds the whole layout, so that a
    /// list costs no more than that instance's size (a hierarchy thousands deep with no
    /// such instance never has one made).
    fn sorted(&self, refs: &ClassRefs) -> &[RefField] {
        let Some(cell) = self.t.sorted.get(refs.sorted as usize) else {
            return &[];
        };
        cell.get_or_init(|| {
            let end = refs.size as usize;
            let mut fields: Vec<(String, RefField)> = Vec::new();
            let mut run = refs.run;
            while run != NO_RUN {
                let Run {
                    start,
                    end: stop,
                    next,
                    ..
                } = self.t.runs[run as usize];
                for r in &self.t.ref_fields[start as usize..stop as usize] {
                    let field = RefField {
                        at: (end - r.from_end as usize) as u32,
                        name_id: r.name_id,
                        declared_by: r.declared_by,
                    };
                    fields.push((self.field_name(r.declared_by, r.name_id), field));
                }
                run = next;
            }
            // Stable: for one name, the class's own field stays before its superclass's
            // (a class's run lists its own fields before its superclass's).
            fields.sort_by(|(a, _), (b, _)| utf16_cmp(a, b));
            fields.into_iter().map(|(_, f)| f).collect()
        })
    }

    /// The reference fields of a class's instances, in LeakCanary's order (see
    /// [`Graph::sorted`]); none for a class whose instances cannot be read. For the class
    /// of an instance whose data holds its whole layout ([`Graph::instance_data`]).
    pub fn ref_fields(&self, class_id: u64) -> &[RefField] {
        match self.t.refs.get(&class_id) {
            Some(refs) if refs.broken.is_none() => self.sorted(refs),
            _ => &[],
        }
    }

    /// An instance's class, its field bytes and its class's layout (`None`: unreadable),
    /// from one look-up of the class; `None` for any other record.
    #[inline]
    fn instance_record(&self, node: Node) -> Option<(u64, &'a [u8], Option<&ClassRefs>)> {
        let raw = self.ix.raw(node);
        if raw[0] != tags::INSTANCE_DUMP {
            return None;
        }
        let n = self.ix.id_size as usize;
        let class = id_at(raw, 5 + n, n);
        let len = u4_at(raw, 5 + 2 * n) as usize;
        let data = &raw[9 + 2 * n..9 + 2 * n + len];
        let refs = self.t.refs.get(&class).filter(|r| r.broken.is_none());
        Some((class, data, refs))
    }

    /// An instance's class and field bytes, when its class can be read and the data is as
    /// long as its layout says (an instance shorter than that holds no reference to trust).
    #[inline]
    pub fn instance_data(&self, node: Node) -> Option<(u64, &'a [u8])> {
        let (class, data, refs) = self.instance_record(node)?;
        let need = refs.map_or(0, |r| r.size);
        (need as usize <= data.len()).then_some((class, data))
    }

    /// Where the field `name` declared by the class named `declared_by` sits in the
    /// instances of `class_id` (the class or an ancestor declaring it): its byte offset and
    /// type. Reads only the classes of the hierarchy that declare fields, so the cost is
    /// the size of the class's layout, however deep it is; callers keep what it finds.
    pub fn field_slot(
        &self,
        class_id: u64,
        declared_by: &str,
        name: &str,
    ) -> Option<(u32, BasicType)> {
        let refs = self.t.refs.get(&class_id)?;
        if refs.broken.is_some() {
            return None;
        }
        let id_size = self.ix.id_size;
        let mut at = 0u64;
        let mut class = refs.fielded;
        while let Some(c) = class {
            let info = self.ix.classes.get(c)?;
            let named = self.class_name(c) == declared_by;
            for f in self.ix.classes.own_fields(self.ix.data, info) {
                if named && self.field_name(c, f.name_id) == name {
                    return Some((at as u32, f.ty));
                }
                at += f.ty.size(id_size) as u64;
            }
            class = self.t.refs.get(&info.super_id).and_then(|r| r.fielded);
        }
        None
    }

    /// Whether the class (not its ancestors) declares an instance field of this name.
    pub fn declares_field(&self, class_id: u64, name: &str) -> bool {
        let Some(info) = self.ix.classes.get(class_id) else {
            return false;
        };
        self.ix
            .classes
            .own_fields(self.ix.data, info)
            .any(|f| self.field_name(class_id, f.name_id) == name)
    }

    /// The number of elements of an object array node (`None`: not one), read without a
    /// copy; [`Graph::array_id`] reads one.
    #[inline]
    pub fn array_len(&self, node: Node) -> Option<usize> {
        let raw = self.ix.raw(node);
        (raw[0] == tags::OBJECT_ARRAY_DUMP)
            .then(|| u4_at(raw, 5 + self.ix.id_size as usize) as usize)
    }

    /// Element `i` of an object array node (below [`Graph::array_len`]).
    #[inline]
    pub fn array_id(&self, node: Node, i: usize) -> u64 {
        let raw = self.ix.raw(node);
        let n = self.ix.id_size as usize;
        id_at(raw, 9 + 2 * n + i * n, n)
    }

    /// A class's instance size, as its class dump gives it.
    fn instance_size(&self, class: u64) -> u64 {
        self.t.refs.get(&class).map_or(0, |r| r.instance_size)
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
    // Inlined: in the references' pass, a call per object cost 2% of the analysis.
    #[inline(always)]
    fn sized_raw(&self, raw: &[u8], mut instance_size: impl FnMut(u64) -> u64) -> ((u8, u64), u64) {
        let n = self.ix.id_size as u64;
        match raw[0] {
            tags::INSTANCE_DUMP => {
                let class = id_at(raw, 5 + n as usize, n as usize);
                // A class dump that gives no size (or no class dump at all): the instance's
                // own field bytes, rather than nothing. ART and HotSpot give every class
                // with fields a size, so their sizes stay ahat's.
                let size = match instance_size(class) {
                    0 => u4_at(raw, 5 + 2 * n as usize) as u64,
                    size => size,
                };
                ((raw[0], class), size)
            }
            tags::OBJECT_ARRAY_DUMP => {
                let count = u4_at(raw, 5 + n as usize) as u64;
                let class = id_at(raw, 9 + n as usize, n as usize);
                ((raw[0], class), count * n + instance_size(class))
            }
            tags::PRIMITIVE_ARRAY_DUMP | tags::PRIMITIVE_ARRAY_NODATA => {
                let count = u4_at(raw, 5 + n as usize) as u64;
                let code = raw.get(9 + n as usize).copied().unwrap_or(0);
                let ty = BasicType::from_u8(code);
                let class_size = self
                    .t
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
                let class_id = id_at(raw, 1, n as usize);
                // A described heap's own size of the class object (a heap graph's).
                if let Some(&size) = self.ix.class_sizes.get(&class_id) {
                    return ((tags::CLASS_DUMP, 0), size);
                }
                let size = self.ix.classes.get(class_id).map_or(0, |c| {
                    self.ix
                        .classes
                        .static_fields(self.ix.data, c)
                        .map(|s| s.ty.size(n as u8) as u64)
                        .sum()
                });
                ((tags::CLASS_DUMP, 0), self.t.class_instance_size + size)
            }
            t => ((t, 0), 0),
        }
    }

    /// An instance's field values by name (nearest class first), for the leak finders and
    /// the status rules. `None` for anything not an instance, or an instance whose fields
    /// cannot be read. Reads only the classes of the hierarchy that declare fields: the
    /// cost is the instance's own size, however deep its class.
    pub fn fields(&self, node: Node) -> Option<Vec<(String, Value)>> {
        let raw = self.ix.raw(node);
        if raw[0] != tags::INSTANCE_DUMP {
            return None;
        }
        let (sub, _) = parse_sub_record(raw, self.ix.offset(node), self.ix.id_size).ok()?;
        let Sub::Instance(inst) = sub else {
            return None;
        };
        let refs = self.t.refs.get(&inst.class_id)?;
        // Bytes past the fields are not read (a heap graph's object is padded to its size).
        if refs.broken.is_some() || (inst.data.len() as u64) < refs.size {
            return None;
        }
        let id_size = self.ix.id_size;
        let mut out = Vec::new();
        let mut at = 0usize;
        let mut class = refs.fielded;
        while let Some(c) = class {
            let info = self.ix.classes.get(c)?;
            for f in self.ix.classes.own_fields(self.ix.data, info) {
                let value = Value::read(f.ty, &inst.data[at..], id_size);
                at += f.ty.size(id_size) as usize;
                out.push((self.field_name(c, f.name_id), value));
            }
            class = self.t.refs.get(&info.super_id).and_then(|r| r.fielded);
        }
        Some(out)
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
        let count = u4_at(raw, 5 + n) as usize;
        let start = 9 + 2 * n;
        Some((0..count).map(|i| id_at(raw, start + i * n, n)).collect())
    }

    /// A primitive array's element type and bytes.
    pub fn primitive(&self, node: Node) -> Option<(BasicType, &'a [u8])> {
        self.ix.primitive(node)
    }

    /// The text of a java.lang.String instance (ART's char[]/byte[] value, JDK 9+'s byte[]
    /// with `coder`).
    pub fn string_value(&self, id: u64) -> Option<String> {
        let fields = self.fields(self.ix.node(id)?)?;
        let text = StringFields::from_named(&fields).head(self.ix, usize::MAX)?;
        Some(text.0)
    }
}

/// The id at `at` of a record the index has checked whole, read by the core's one id
/// reader; 0 (null) past the end, which a checked record never reaches.
#[inline(always)]
fn id_at(b: &[u8], at: usize, n: usize) -> u64 {
    hprof::id_at(b, at, n as u8).unwrap_or(0)
}

/// The u4 at `at` of a checked record, by the core's reader; 0 past the end.
#[inline(always)]
fn u4_at(b: &[u8], at: usize) -> u32 {
    hprof::u4_at(b, at).unwrap_or(0)
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
    use super::{java_name, Graph, RefName};
    use crate::heap::index::Node;
    use hprof_fixtures::{ArtBuilder, Heap, Options, Ty, Val};
    use hprof_shrink_core::hprof::Hprof;
    use hprof_shrink_core::Control;

    /// A Holder (fields `a`, `b`, `c`; a static `s`), an Object[] and their targets.
    struct Made {
        bytes: Vec<u8>,
        ids: [u64; 5],
    }

    fn made() -> Made {
        let mut b = ArtBuilder::new(Options::default());
        let object = b.declare_class("java.lang.Object", 0, &[], &[]);
        let holder = b.declare_class(
            "com.example.Holder",
            object,
            &[("a", Ty::Object), ("b", Ty::Object), ("c", Ty::Object)],
            &[],
        );
        let array = b.declare_class("java.lang.Object[]", object, &[], &[]);
        let target = b.instance(object, Heap::App, &[]);
        let other = b.instance(object, Heap::App, &[]);
        b.set_static(holder, "s", Val::Obj(target));
        for c in [object, holder, array] {
            b.dump_class(c, Heap::App);
        }
        // `a` is null, `b` another object, `c` and the elements 2 and 3 the target.
        let h = b.instance(
            holder,
            Heap::App,
            &[
                ("a", Val::Obj(0)),
                ("b", Val::Obj(other)),
                ("c", Val::Obj(target)),
            ],
        );
        let arr = b.object_array(Heap::App, array, &[0, other, target, target]);
        Made {
            bytes: b.finish(),
            ids: [holder, h, arr, target, other],
        }
    }

    /// An old Android String (`offset`, `count`) is its window of a shared `char[]`, not
    /// the whole array: the text a duplicate String or a map key shows.
    #[test]
    fn an_old_android_string_is_its_window_of_a_shared_char_array() {
        let mut b = ArtBuilder::new(Options::default());
        let object = b.declare_class("java.lang.Object", 0, &[], &[]);
        let string = b.declare_class(
            "java.lang.String",
            object,
            &[
                ("value", Ty::Object),
                ("offset", Ty::Int),
                ("count", Ty::Int),
            ],
            &[],
        );
        for c in [object, string] {
            b.dump_class(c, Heap::App);
        }
        let chars: Vec<u8> = "xxabc\0y"
            .encode_utf16()
            .flat_map(u16::to_be_bytes)
            .collect();
        let shared = b.primitive_array(Heap::App, Ty::Char, &chars);
        let window = |b: &mut ArtBuilder, offset: i32, count: i32| {
            let values = [
                ("value", Val::Obj(shared)),
                ("offset", Val::Int(offset)),
                ("count", Val::Int(count)),
            ];
            b.instance(string, Heap::App, &values)
        };
        let abc = window(&mut b, 2, 3);
        let empty = window(&mut b, 0, 0);
        let outside = window(&mut b, 5, 9);
        let bytes = b.finish();
        let hprof = Hprof::new(&bytes).unwrap();
        let control = Control::default();
        let total = bytes.len() as u64;
        let ix = crate::heap::progress::build_index(&hprof, total, None, &control).unwrap();
        let g = Graph::new(&ix, None);
        assert_eq!(g.string_value(abc).as_deref(), Some("abc"));
        assert_eq!(g.string_value(empty).as_deref(), Some(""));
        // A window past the array's end is not trusted: the whole array.
        assert_eq!(g.string_value(outside).as_deref(), Some("xxabc\0y"));
    }

    #[test]
    fn the_reference_between_two_objects_is_the_first_to_the_target() {
        let m = made();
        let hprof = Hprof::new(&m.bytes).unwrap();
        let ix = crate::heap::progress::build_index(
            &hprof,
            m.bytes.len() as u64,
            None,
            &Control::default(),
        )
        .unwrap();
        let g = Graph::new(&ix, None);
        let node = |id: u64| -> Node { ix.node(id).unwrap() };
        let [holder_class, h, arr, target, other] = m.ids;
        let named = |from: u64, to: u64| match g.reference_between(node(from), node(to)) {
            Some(RefName::Field {
                declared_by,
                name_id,
            }) => format!("field {}", g.field_name(declared_by, name_id)),
            Some(RefName::Static { class, name_id }) => {
                format!("static {}", g.field_name(class, name_id))
            }
            Some(RefName::Element(i)) => format!("element {i}"),
            None => "none".into(),
        };
        assert_eq!(named(h, target), "field c");
        assert_eq!(named(h, other), "field b");
        assert_eq!(named(arr, target), "element 2");
        assert_eq!(named(arr, other), "element 1");
        assert_eq!(named(holder_class, target), "static s");
        assert_eq!(named(target, other), "none");
        assert_eq!(named(arr, h), "none");
    }

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
    by_class: Map<u64, Vec<Node>>,
}

impl Instances {
    /// Instances from (class, node) pairs in node order.
    pub fn from_pairs(pairs: impl IntoIterator<Item = (u64, Node)>) -> Instances {
        let mut by_class: Map<u64, Vec<Node>> = Map::default();
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
