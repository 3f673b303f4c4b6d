//! Class objects as classes: in a heap graph a class's static references are the
//! references of its class object, an object of the type `java.lang.Class<X>` (with its
//! own field names: `X.sInstance`). Such an object is described as class `X` itself (its
//! id the class's, its references the class's static fields, its size its own), so a
//! path through it reads as a dump's, `static X.sInstance`, and the rules that read a
//! class's static references read them.
//!
//! The first pass offers every object of a `java.lang.Class<…>` type (or of a type not
//! named yet: a trace may name types after their objects) and keeps their references:
//! at most [`MAX_HELD`] in all, the rest left to be described as instances (a note-free
//! bound: what is left keeps its size and references, not its reading as statics).

use super::wire::GraphObject;
use crate::base::map::{Map, Set};

/// The name of a class object's type: `java.lang.Class<X>`.
const PREFIX: &str = "java.lang.Class<";

/// References the class objects kept may hold together (16 bytes each).
pub const MAX_HELD: usize = 1 << 24;

/// A class object: its id, its size, its references' field names and targets.
#[derive(Debug, Default, Clone)]
pub struct ClassObject {
    /// Its id, which the class takes.
    pub id: u64,
    /// Its `self_size`, else its type's `object_size` (0: neither says).
    pub size: u64,
    /// Its references' field names (keys), as many as it gives.
    pub fields: Vec<u64>,
    /// Its references (0: null).
    pub refs: Vec<u64>,
}

/// The class objects the first pass offers.
#[derive(Debug, Default)]
pub struct Found {
    offered: Vec<(u64, ClassObject)>,
    held: usize,
}

/// Whether a type's name is that of a class object, and the class's: `X`.
pub fn class_of(name: &str) -> Option<&str> {
    name.strip_prefix(PREFIX)?.strip_suffix('>')
}

impl Found {
    /// Offers object `id` of type `t` (named `name`, when named yet), its references
    /// `refs` (with their base): kept when it may be a class object.
    pub fn offer(&mut self, o: &GraphObject, id: u64, name: Option<&str>, refs: Vec<u64>) {
        if name.is_some_and(|n| class_of(n).is_none()) || self.held + refs.len() > MAX_HELD {
            return;
        }
        self.held += refs.len();
        let object = ClassObject {
            id,
            size: o.self_size.unwrap_or(0),
            fields: o.reference_field_id.clone(),
            refs,
        };
        self.offered.push((o.type_id.unwrap_or(0), object));
    }

    /// The class object of each type (by its key), among those offered: `types` are the
    /// types' keys, names and object sizes. A class named by several types (several class loaders), or
    /// an id already taken, keeps its class object an instance.
    pub fn resolve<'t>(
        self,
        types: impl Iterator<Item = (u64, &'t str, u64)>,
    ) -> Map<u64, ClassObject> {
        let mut by_name: Map<&str, Option<u64>> = Map::default();
        let mut class_types: Map<u64, (&str, u64)> = Map::default();
        for (t, name, size) in types {
            by_name
                .entry(name)
                .and_modify(|e| *e = None)
                .or_insert(Some(t));
            if let Some(class) = class_of(name) {
                class_types.insert(t, (class, size));
            }
        }
        let mut out: Map<u64, ClassObject> = Map::default();
        let mut ids: Set<u64> = Set::default();
        for (t, mut object) in self.offered {
            let Some(&(name, size)) = class_types.get(&t) else {
                continue;
            };
            let Some(Some(class)) = by_name.get(name) else {
                continue;
            };
            if object.size == 0 {
                object.size = size;
            }
            if out.contains_key(class) || !ids.insert(object.id) {
                continue;
            }
            out.insert(*class, object);
        }
        out
    }
}
