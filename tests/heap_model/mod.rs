//! A small in-memory model of a heap dump, read with the core's HPROF reader and nothing of
//! the analyzer: enough to follow references by name and check what a fixture's truth says
//! of its dump (tests/fixtures_faithful.rs, tests/scenarios.rs).
#![allow(dead_code)] // each test file uses part of this

use hprof_shrink_core::hprof::{BasicType, Event, Events, Hprof, Sub, Value};
use std::collections::{HashMap, HashSet};

/// A class name as Java writes it: dotted, arrays as `java.lang.Object[]` (HotSpot writes
/// `java/lang/String` and `[Ljava/lang/Object;`).
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

pub struct Class {
    pub name: String,
    pub super_id: u64,
    pub instance_size: u32,
    pub statics: Vec<(String, Value)>,
    pub fields: Vec<(String, BasicType)>,
}

/// A small in-memory model of a dump: enough to follow references by name.
#[derive(Default)]
pub struct Model {
    pub id_size: u8,
    pub classes: HashMap<u64, Class>,
    pub instances: HashMap<u64, (u64, Vec<u8>)>,
    pub object_arrays: HashMap<u64, (u64, Vec<u64>)>,
    pub primitive_arrays: HashMap<u64, (BasicType, Vec<u8>)>,
    /// Primitive array element types used.
    pub primitive_types: HashSet<BasicType>,
    /// (tag, object, thread serial of frame and thread roots).
    pub roots: Vec<(u8, u64, Option<u32>)>,
    pub sub_tags: HashSet<u8>,
}

impl Model {
    pub fn load(data: &[u8]) -> Model {
        let hprof = Hprof::new(data).unwrap();
        let id_size = hprof.id_size();
        let mut strings: HashMap<u64, String> = HashMap::new();
        let mut class_names: HashMap<u64, u64> = HashMap::new();
        let mut dumps = Vec::new();
        let mut m = Model {
            id_size,
            ..Default::default()
        };
        for ev in Events::new(&hprof) {
            match ev.unwrap() {
                Event::Record(r) => {
                    if let Some(s) = r.as_string().unwrap() {
                        strings.insert(s.id, String::from_utf8_lossy(s.bytes).into_owned());
                    }
                    if let Some(lc) = r.as_load_class().unwrap() {
                        class_names.insert(lc.class_id, lc.name_id);
                    }
                }
                Event::Sub(sub) => {
                    m.sub_tags.insert(sub.tag());
                    match &sub.kind {
                        Sub::Root(r) => {
                            // The thread serial follows the object id in the frame and
                            // thread roots.
                            let serial = matches!(r.tag, 0x03 | 0x08).then(|| {
                                let at = 1 + id_size as usize;
                                u32::from_be_bytes(sub.raw[at..at + 4].try_into().unwrap())
                            });
                            m.roots.push((r.tag, r.object_id, serial));
                        }
                        Sub::ClassDump(c) => {
                            let statics: Vec<(u64, Value)> =
                                c.static_fields().map(|s| (s.name_id, s.value)).collect();
                            let fields: Vec<(u64, BasicType)> =
                                c.instance_fields().map(|f| (f.name_id, f.ty)).collect();
                            dumps.push((c.class_id, c.super_id, c.instance_size, statics, fields));
                        }
                        Sub::Instance(i) => {
                            m.instances.insert(i.id, (i.class_id, i.data.to_vec()));
                        }
                        Sub::ObjectArray(a) => {
                            m.object_arrays
                                .insert(a.id, (a.class_id, a.element_ids().collect()));
                        }
                        Sub::PrimitiveArray(a) => {
                            m.primitive_types.insert(a.element_type);
                            m.primitive_arrays
                                .insert(a.id, (a.element_type, a.data.to_vec()));
                        }
                        Sub::PrimitiveArrayNoData(a) => {
                            m.primitive_types.insert(a.element_type);
                        }
                        Sub::HeapDumpInfo(_) => {}
                    }
                }
                _ => {}
            }
        }
        let name = |id: u64| strings.get(&id).cloned().unwrap_or_default();
        for (id, super_id, instance_size, statics, fields) in dumps {
            let class_name = class_names.get(&id).map(|n| name(*n)).unwrap_or_default();
            m.classes.insert(
                id,
                Class {
                    name: java_name(&class_name),
                    super_id,
                    instance_size,
                    statics: statics.into_iter().map(|(n, v)| (name(n), v)).collect(),
                    fields: fields.into_iter().map(|(n, t)| (name(n), t)).collect(),
                },
            );
        }
        m
    }

    pub fn class_named(&self, name: &str) -> Vec<u64> {
        self.classes
            .iter()
            .filter(|(_, c)| c.name == name)
            .map(|(id, _)| *id)
            .collect()
    }

    /// The class name of an instance or array object.
    pub fn class_name(&self, object: u64) -> Option<&str> {
        if let Some((class, _)) = self.instances.get(&object) {
            return self.classes.get(class).map(|c| c.name.as_str());
        }
        if let Some((class, _)) = self.object_arrays.get(&object) {
            return self.classes.get(class).map(|c| c.name.as_str());
        }
        None
    }

    pub fn is_subclass(&self, mut class: u64, ancestor: &str) -> bool {
        let mut seen = HashSet::new();
        while class != 0 && seen.insert(class) {
            let Some(c) = self.classes.get(&class) else {
                return false;
            };
            if c.name == ancestor {
                return true;
            }
            class = c.super_id;
        }
        false
    }

    /// An instance field by name: the nearest class declaring it wins, as in Java.
    pub fn field(&self, object: u64, name: &str) -> Option<Value> {
        self.field_of(object, None, name)
    }

    /// An instance field by name, declared by the class named `owner` (any class when None).
    pub fn field_of(&self, object: u64, owner: Option<&str>, name: &str) -> Option<Value> {
        let (mut class, data) = self.instances.get(&object)?;
        let mut at = 0usize;
        while class != 0 {
            let c = self.classes.get(&class)?;
            for (n, ty) in &c.fields {
                if n == name && owner.is_none_or(|o| o == c.name) {
                    return Some(Value::read(*ty, &data[at..], self.id_size));
                }
                at += ty.size(self.id_size) as usize;
            }
            class = c.super_id;
        }
        None
    }

    pub fn object_field(&self, object: u64, name: &str) -> Option<u64> {
        self.field(object, name).and_then(|v| v.as_object())
    }

    /// A static field of the class named `class`.
    pub fn static_value(&self, class: &str, name: &str) -> Option<Value> {
        self.class_named(class).iter().find_map(|id| {
            self.classes[id]
                .statics
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, v)| *v)
        })
    }

    /// Whether `class` (by id) declares an instance field `name` of its own.
    pub fn declares(&self, class: u64, name: &str) -> bool {
        self.classes
            .get(&class)
            .is_some_and(|c| c.fields.iter().any(|(n, _)| n == name))
    }

    /// The text of a java.lang.String (Latin-1/ASCII byte[] or UTF-16 char[] value).
    pub fn string(&self, object: u64) -> Option<String> {
        let value = self.object_field(object, "value")?;
        let (ty, data) = self.primitive_arrays.get(&value)?;
        Some(match ty {
            BasicType::Byte => data.iter().map(|&b| b as char).collect(),
            BasicType::Char => String::from_utf16_lossy(
                &data
                    .chunks(2)
                    .map(|c| u16::from_be_bytes([c[0], c[1]]))
                    .collect::<Vec<_>>(),
            ),
            _ => return None,
        })
    }

    pub fn instances_of(&self, class_name: &str) -> Vec<u64> {
        let mut v: Vec<u64> = self
            .instances
            .iter()
            .filter(|(_, (c, _))| self.is_subclass(*c, class_name))
            .map(|(id, _)| *id)
            .collect();
        v.sort();
        v
    }

    /// Instances whose class is exactly `class_name`.
    pub fn direct_instances_of(&self, class_name: &str) -> Vec<u64> {
        let ids = self.class_named(class_name);
        let mut v: Vec<u64> = self
            .instances
            .iter()
            .filter(|(_, (c, _))| ids.contains(c))
            .map(|(id, _)| *id)
            .collect();
        v.sort();
        v
    }

    /// Every object reference an instance holds, with the field's name.
    pub fn references(&self, object: u64) -> Vec<(String, u64)> {
        let mut out = Vec::new();
        let Some((mut class, data)) = self.instances.get(&object) else {
            return out;
        };
        let mut at = 0usize;
        while class != 0 {
            let Some(c) = self.classes.get(&class) else {
                break;
            };
            for (n, ty) in &c.fields {
                if *ty == BasicType::Object {
                    if let Some(id) = Value::read(*ty, &data[at..], self.id_size).as_object() {
                        if id != 0 {
                            out.push((n.clone(), id));
                        }
                    }
                }
                at += ty.size(self.id_size) as usize;
            }
            class = c.super_id;
        }
        out
    }

    /// The objects that hold `target` other than through `java.lang.ref.Reference.referent`
    /// (a weak, soft or phantom reference's): instances' fields, array elements, statics.
    pub fn strong_holders(&self, target: u64) -> Vec<u64> {
        let mut out = Vec::new();
        for (&id, (class, _)) in &self.instances {
            let weak = self.is_subclass(*class, "java.lang.ref.Reference");
            if self
                .references(id)
                .iter()
                .any(|(n, to)| *to == target && !(weak && n == "referent"))
            {
                out.push(id);
            }
        }
        for (&id, (_, elements)) in &self.object_arrays {
            if elements.contains(&target) {
                out.push(id);
            }
        }
        for (&id, c) in &self.classes {
            if c.statics.iter().any(|(_, v)| v.as_object() == Some(target)) {
                out.push(id);
            }
        }
        out
    }
}
