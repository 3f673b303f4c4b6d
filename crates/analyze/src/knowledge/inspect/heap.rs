//! Reading objects the way LeakCanary's inspectors do: a field is named by the class that
//! declares it and its name (`android.view.View.mContext`), found once per instance class
//! and then read at its offset; strings, statics and an object's one-line description.
//! Works on the bare index (for the metadata, read before the graph is made) and on the
//! graph (names deobfuscated by a mapping).

use std::borrow::Cow;
use std::cell::RefCell;

use hprof_shrink_core::hprof::{id_at, tags, u4_at, BasicType, Value};
use rustc_hash::FxHashMap;

use crate::base::map::{Map, Set};
use crate::heap::java_string::StringFields;

use crate::heap::graph::{java_name, Graph};
use crate::heap::index::{Index, Node};

/// Class and field names as an analysis shows them.
pub trait Names {
    fn class_name(&self, class_id: u64) -> Cow<'_, str>;
    fn field_name(&self, declared_by: u64, name_id: u64) -> Cow<'_, str>;
}

impl Names for Graph<'_, '_> {
    fn class_name(&self, class_id: u64) -> Cow<'_, str> {
        Cow::Borrowed(Graph::class_name(self, class_id))
    }
    fn field_name(&self, declared_by: u64, name_id: u64) -> Cow<'_, str> {
        Cow::Owned(Graph::field_name(self, declared_by, name_id))
    }
}

/// The dump's own names (no mapping): what the metadata reads, before the graph exists.
pub struct RawNames<'i, 'a>(pub &'i Index<'a>);

impl Names for RawNames<'_, '_> {
    fn class_name(&self, class_id: u64) -> Cow<'_, str> {
        let ix = self.0;
        match ix.classes.name_id(class_id).and_then(|n| ix.string(n)) {
            Some(raw) => Cow::Owned(java_name(&raw)),
            None => Cow::Borrowed("<unknown class>"),
        }
    }
    fn field_name(&self, _declared_by: u64, name_id: u64) -> Cow<'_, str> {
        self.0.string(name_id).unwrap_or(Cow::Borrowed(""))
    }
}

/// Where a field is in an instance's data.
#[derive(Debug, Clone, Copy)]
struct Slot {
    at: u32,
    ty: BasicType,
}

/// A field looked for: the class that declares it and its name.
type FieldKey = (u64, &'static str, &'static str);

/// A field as its declaring class has it: that class, the field's place among the class's
/// own fields, its type.
type Declared = (u64, u32, BasicType);

pub struct Heap<'h> {
    pub ix: &'h Index<'h>,
    pub names: &'h dyn Names,
    /// (instance class, declaring class name, field name) → where it is, or absent.
    slots: RefCell<Map<FieldKey, Option<Slot>>>,
    /// (class, declaring class name, field name) → the nearest class of the hierarchy of
    /// that name that declares the field: (that class, the field's place among its own
    /// fields, its type). Each class is settled once per field asked for.
    declaring: RefCell<Map<FieldKey, Option<Declared>>>,
    /// Bytes of field data of a class's instances (its own fields and its ancestors');
    /// `None` when its hierarchy cannot be read (a superclass missing, or a cycle).
    data_sizes: RefCell<Map<u64, Option<u64>>>,
    /// Class name → the first class id of that name (by id), for the names asked about.
    by_name: RefCell<FxHashMap<&'static str, Option<u64>>>,
    /// Every class name, built on the first name looked up.
    all_names: RefCell<Option<Map<String, u64>>>,
}

impl<'h> Heap<'h> {
    pub fn new(ix: &'h Index<'h>, names: &'h dyn Names) -> Heap<'h> {
        Heap {
            ix,
            names,
            slots: Default::default(),
            declaring: Default::default(),
            data_sizes: Default::default(),
            by_name: Default::default(),
            all_names: Default::default(),
        }
    }

    /// The first class (by id) of this name.
    pub fn class(&self, name: &'static str) -> Option<u64> {
        if let Some(&c) = self.by_name.borrow().get(name) {
            return c;
        }
        let mut all = self.all_names.borrow_mut();
        let all = all.get_or_insert_with(|| {
            let mut m: Map<String, u64> = Map::default();
            for c in self.ix.classes.classes() {
                let name = self.names.class_name(c.class_id).into_owned();
                m.entry(name)
                    .and_modify(|id| *id = (*id).min(c.class_id))
                    .or_insert(c.class_id);
            }
            m
        });
        let found = all.get(name).copied();
        self.by_name.borrow_mut().insert(name, found);
        found
    }

    pub fn class_name(&self, class_id: u64) -> Cow<'_, str> {
        self.names.class_name(class_id)
    }

    /// The superclass of a class (none for java.lang.Object, or a class not dumped).
    pub fn superclass(&self, class_id: u64) -> Option<u64> {
        self.ix
            .classes
            .get(class_id)
            .map(|c| c.super_id)
            .filter(|&s| s != 0)
    }

    /// An instance's class and field data; `None` for anything else.
    pub fn instance_data(&self, node: Node) -> Option<(u64, &'h [u8])> {
        let raw = self.ix.raw(node);
        if raw.first() != Some(&tags::INSTANCE_DUMP) {
            return None;
        }
        let n = self.ix.id_size as usize;
        let class = id_at(raw, 5 + n, n as u8).unwrap_or(0);
        let len = u4_at(raw, 5 + 2 * n).unwrap_or(0) as usize;
        Some((class, raw.get(9 + 2 * n..9 + 2 * n + len)?))
    }

    /// The class of an instance node.
    pub fn instance_class(&self, node: Node) -> Option<u64> {
        self.instance_data(node).map(|(c, _)| c)
    }

    /// Where `declared_by.field` is in the instances of `class`: found from tables each
    /// class enters once (its data size, the nearest class declaring the field), never by
    /// making the class's whole layout, which would cost a deep hierarchy its depth for
    /// every class in it.
    fn slot(&self, class: u64, declared_by: &'static str, field: &'static str) -> Option<Slot> {
        let key = (class, declared_by, field);
        if let Some(s) = self.slots.borrow().get(&key) {
            return *s;
        }
        let found = self.declaring(key).and_then(|(d, own, ty)| {
            // The class's own fields come first, then its superclass's, and so on: the
            // declaring class's own fields start where the classes below it end.
            let below = self.data_size(class)? - self.data_size(d)?;
            Some(Slot {
                at: u32::try_from(below + own as u64).ok()?,
                ty,
            })
        });
        self.slots.borrow_mut().insert(key, found);
        found
    }

    /// The nearest class of `key.0`'s hierarchy named `key.1` that declares the field
    /// `key.2`, with the field's place among its own fields. The walk up stops at a class
    /// already settled, and settles every class it passed.
    fn declaring(&self, key: FieldKey) -> Option<Declared> {
        let (class, declared_by, field) = key;
        let mut walk: Vec<u64> = Vec::new();
        let mut on_walk: Set<u64> = Set::default();
        let mut c = Some(class);
        let mut found = None;
        while let Some(id) = c {
            if let Some(&known) = self.declaring.borrow().get(&(id, declared_by, field)) {
                found = known;
                break;
            }
            if !on_walk.insert(id) {
                break; // a superclass cycle: no layout, no field
            }
            walk.push(id);
            let Some(info) = self.ix.classes.get(id) else {
                break;
            };
            if self.names.class_name(id) == declared_by {
                let mut at = 0u32;
                let mut hit = None;
                for f in self.ix.classes.own_fields(self.ix.data, info) {
                    if self.names.field_name(id, f.name_id) == field {
                        hit = Some((id, at, f.ty));
                        break;
                    }
                    at = at.saturating_add(f.ty.size(self.ix.id_size) as u32);
                }
                if hit.is_some() {
                    found = hit;
                    break;
                }
            }
            c = self.superclass(id);
        }
        let mut memo = self.declaring.borrow_mut();
        for id in walk {
            memo.insert((id, declared_by, field), found);
        }
        found
    }

    /// Bytes of field data of `class`'s instances, from its superclass's: each class is
    /// worked out once.
    fn data_size(&self, class: u64) -> Option<u64> {
        if let Some(&known) = self.data_sizes.borrow().get(&class) {
            return known;
        }
        let mut walk: Vec<u64> = Vec::new();
        let mut on_walk: Set<u64> = Set::default();
        let mut id = class;
        // What the top of the walk stands on: the top of the hierarchy (0 bytes), a class
        // already settled, or nothing readable.
        let mut base: Option<u64> = Some(0);
        while id != 0 {
            if let Some(&known) = self.data_sizes.borrow().get(&id) {
                base = known;
                break;
            }
            let Some(info) = self.ix.classes.get(id) else {
                base = None;
                break;
            };
            if !on_walk.insert(id) {
                base = None;
                break;
            }
            walk.push(id);
            id = info.super_id;
        }
        let mut memo = self.data_sizes.borrow_mut();
        for &c in walk.iter().rev() {
            base = base.and_then(|up| {
                let info = self.ix.classes.get(c)?;
                let own: u64 = self
                    .ix
                    .classes
                    .own_fields(self.ix.data, info)
                    .map(|f| f.ty.size(self.ix.id_size) as u64)
                    .sum();
                Some(up + own)
            });
            memo.insert(c, base);
        }
        base
    }

    /// Whether instances of `class` have the field `declared_by.field`.
    pub fn has_field(&self, class: u64, declared_by: &'static str, field: &'static str) -> bool {
        self.slot(class, declared_by, field).is_some()
    }

    /// The field `declared_by.field` of an instance: `None` when the instance has no such
    /// field (or is no instance, or its data is short).
    pub fn field(
        &self,
        node: Node,
        declared_by: &'static str,
        field: &'static str,
    ) -> Option<Value> {
        let (class, data) = self.instance_data(node)?;
        let slot = self.slot(class, declared_by, field)?;
        let at = slot.at as usize;
        let size = slot.ty.size(self.ix.id_size) as usize;
        let bytes = data.get(at..at + size)?;
        Some(Value::read(slot.ty, bytes, self.ix.id_size))
    }

    /// A static field of a class, by name.
    pub fn static_field(&self, class: u64, name: &str) -> Option<Value> {
        let c = self.ix.classes.get(class)?;
        self.ix
            .classes
            .static_fields(self.ix.data, c)
            .find(|s| self.names.field_name(class, s.name_id) == name)
            .map(|s| s.value)
    }

    /// The node of an object id the dump holds.
    pub fn node(&self, id: u64) -> Option<Node> {
        if id == 0 {
            return None;
        }
        self.ix.node(id)
    }

    /// An object id's node when it is an instance.
    pub fn instance(&self, id: u64) -> Option<Node> {
        self.node(id)
            .filter(|&n| self.ix.tag(n) == tags::INSTANCE_DUMP)
    }

    /// The text of a java.lang.String instance, at most `max_units` UTF-16 units of it,
    /// and how many units it has in all. Honours Android's old `offset`/`count` (a String
    /// sharing a char[]), JDK 9+'s `coder`, ART's compressed byte[] strings.
    pub fn string_head(&self, id: u64, max_units: usize) -> Option<(String, usize)> {
        let node = self.instance(id)?;
        const S: &str = "java.lang.String";
        let int = |name| self.field(node, S, name).and_then(|v| v.as_i64());
        let fields = StringFields {
            value: self.field(node, S, "value")?.as_object()?,
            coder: int("coder"),
            offset: int("offset"),
            count: int("count"),
        };
        fields.head(self.ix, max_units)
    }

    /// A String's text, cut (and escaped) to `max` bytes as an analysis shows it.
    pub fn string(&self, id: u64, max: usize) -> Option<String> {
        let (head, total) = self.string_head(id, max)?;
        let more = total.saturating_sub(max) as u64;
        Some(crate::base::shown::clipped_more(&head, max, more))
    }

    /// Whether `class` is `ancestor_name` or descends from it (by name, as Shark matches).
    pub fn is_named_subclass(&self, class: u64, ancestor_name: &str) -> bool {
        let mut c = Some(class);
        for _ in 0..=self.ix.classes.len() {
            let Some(id) = c else { return false };
            if self.class_name(id) == ancestor_name {
                return true;
            }
            c = self.superclass(id);
        }
        false
    }

    /// An object's class name as a label shows it: the class for an instance or an array,
    /// the class itself for a class object, `int[]` for a primitive array.
    pub fn object_class_name(&self, node: Node) -> String {
        let raw = self.ix.raw(node);
        let n = self.ix.id_size as usize;
        match raw.first() {
            Some(&tags::INSTANCE_DUMP) => self
                .class_name(id_at(raw, 5 + n, n as u8).unwrap_or(0))
                .into_owned(),
            Some(&tags::OBJECT_ARRAY_DUMP) => self
                .class_name(id_at(raw, 9 + n, n as u8).unwrap_or(0))
                .into_owned(),
            Some(&tags::CLASS_DUMP) => self
                .class_name(id_at(raw, 1, n as u8).unwrap_or(0))
                .into_owned(),
            Some(&tags::PRIMITIVE_ARRAY_DUMP) | Some(&tags::PRIMITIVE_ARRAY_NODATA) => {
                let ty = raw.get(9 + n).and_then(|&t| BasicType::from_u8(t));
                format!("{}[]", ty.map_or("?", |t| t.name()))
            }
            _ => "<unknown>".into(),
        }
    }

    /// An object as Shark's `toString` of a heap object writes it: `instance @ID of CLASS`,
    /// `class CLASS`, `object array @ID of CLASS`, `primitive array @ID of CLASS`; `null`.
    pub fn object_text(&self, id: u64) -> String {
        let Some(node) = self.node(id) else {
            return "null".into();
        };
        let name = self.object_class_name(node);
        match self.ix.tag(node) {
            tags::INSTANCE_DUMP => format!("instance @{id} of {name}"),
            tags::CLASS_DUMP => format!("class {name}"),
            tags::OBJECT_ARRAY_DUMP => format!("object array @{id} of {name}"),
            _ => format!("primitive array @{id} of {name}"),
        }
    }

    /// The elements of an `int[]`, big-endian as the dump holds them.
    pub fn ints(&self, node: Node) -> Option<&'h [u8]> {
        let raw = self.ix.raw(node);
        if raw.first() != Some(&tags::PRIMITIVE_ARRAY_DUMP) {
            return None;
        }
        let n = self.ix.id_size as usize;
        const INT: u8 = 10;
        if raw.get(9 + n) != Some(&INT) {
            return None;
        }
        let count = u4_at(raw, 5 + n).unwrap_or(0) as usize;
        raw.get(10 + n..10 + n + count.checked_mul(4)?)
    }

    /// The elements of an object array.
    pub fn elements(&self, node: Node) -> Option<impl Iterator<Item = u64> + 'h> {
        let raw = self.ix.raw(node);
        if raw.first() != Some(&tags::OBJECT_ARRAY_DUMP) {
            return None;
        }
        let n = self.ix.id_size as usize;
        let count = u4_at(raw, 5 + n).unwrap_or(0) as usize;
        let start = 9 + 2 * n;
        raw.get(start..start + count * n)?;
        Some((0..count).map(move |i| id_at(raw, start + i * n, n as u8).unwrap_or(0)))
    }
}

/// A class's simple name: the text after the last `.` (`ActivityThread$H`, `Object[]`).
pub fn simple_name(class: &str) -> &str {
    class.rsplit('.').next().unwrap_or(class)
}
