//! An index of the dump's classes: names from LOAD_CLASS, superclass and field lists from
//! CLASS_DUMP. It keeps ids and file offsets only; field lists are decoded from the mapped
//! file when asked for. Instance field values resolve through the whole class hierarchy:
//! an instance holds its class's own fields first, then its superclass's, and so on.

/// Keyed by class ids, which a dump chooses: seeded at random, so that no dump can make
/// its ids collide.
type Map<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;

use super::error::{FormatError, Result};
use super::heap::{field_decls, static_fields, ClassDump, FieldDecl, Instance, StaticField, Value};
use super::tags::BasicType;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
/// What pass 1 keeps of a CLASS_DUMP: its ids and where its fields are, never its bytes.
pub struct ClassInfo {
    /// The class object's id.
    pub class_id: u64,
    /// The superclass's id (0 for java.lang.Object).
    pub super_id: u64,
    /// Instance size as the VM counts it.
    pub instance_size: u32,
    /// Offset of the CLASS_DUMP sub-record.
    pub offset: u64,
    fields_offset: u64,
    field_count: u16,
    statics_offset: u64,
    statics_len: u32,
    static_count: u16,
}

/// One field of a flattened instance layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LayoutField {
    /// STRING id of the field's name.
    pub name_id: u64,
    /// The field's type.
    pub ty: BasicType,
    /// Byte offset within the instance's field data.
    pub offset: u64,
    /// The class that declares the field (the instance's class or an ancestor).
    pub declared_by: u64,
}

/// The fields of a class's instances, in the order their values appear.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    /// The class.
    pub class_id: u64,
    /// Every field, the class's own first, then its superclass's, and so on.
    pub fields: Vec<LayoutField>,
    /// Bytes of field data every instance of the class must have.
    pub size: u64,
    id_size: u8,
}

impl Layout {
    /// The first field (nearest the class itself) whose name id satisfies `is_name`.
    pub fn find(&self, is_name: impl Fn(u64) -> bool) -> Option<LayoutField> {
        self.fields.iter().copied().find(|f| is_name(f.name_id))
    }

    /// Checks that an instance carries exactly the bytes its layout needs, so reading a
    /// field cannot run past its data.
    pub fn check(&self, instance: &Instance<'_>, offset: u64) -> Result<()> {
        if instance.data.len() as u64 != self.size {
            return Err(FormatError::InstanceLayout {
                offset,
                class_id: self.class_id,
                expected: self.size,
                actual: instance.data.len() as u64,
            });
        }
        Ok(())
    }

    /// Reads a field of an instance that passed [`Layout::check`].
    pub fn value(&self, field: LayoutField, data: &[u8]) -> Value {
        Value::read(field.ty, &data[field.offset as usize..], self.id_size)
    }

    /// Every field with its value, for an instance that passed [`Layout::check`].
    pub fn values<'s, 'd>(
        &'s self,
        data: &'d [u8],
    ) -> impl Iterator<Item = (LayoutField, Value)> + use<'s, 'd> {
        self.fields.iter().map(move |f| (*f, self.value(*f, data)))
    }
}

#[derive(Debug, Default)]
/// Every class of a dump by id: its CLASS_DUMP's place, its name, its layout on demand.
pub struct ClassIndex {
    id_size: u8,
    classes: Map<u64, ClassInfo>,
    names: Map<u64, u64>,
}

impl ClassIndex {
    /// An empty index for a dump with `id_size`-byte ids.
    pub fn new(id_size: u8) -> Self {
        ClassIndex {
            id_size,
            ..Default::default()
        }
    }

    /// Classes dumped.
    pub fn len(&self) -> usize {
        self.classes.len()
    }

    /// No class dumped.
    pub fn is_empty(&self) -> bool {
        self.classes.is_empty()
    }

    /// Records a LOAD_CLASS: class object id → name string id.
    pub fn add_name(&mut self, class_id: u64, name_id: u64) {
        self.names.entry(class_id).or_insert(name_id);
    }

    /// Records a CLASS_DUMP found at `offset`. A second dump of the same class id is
    /// ignored: the first one wins, as in the analyzers.
    pub fn add_class_dump(&mut self, dump: &ClassDump<'_>, offset: u64) {
        self.classes.entry(dump.class_id).or_insert(ClassInfo {
            class_id: dump.class_id,
            super_id: dump.super_id,
            instance_size: dump.instance_size,
            offset,
            fields_offset: dump.fields_offset,
            field_count: dump.field_count,
            statics_offset: dump.statics_offset,
            statics_len: dump.statics.len() as u32,
            static_count: dump.static_count,
        });
    }

    /// Folds in an index of a later part of the dump; what this one has wins.
    pub fn merge(&mut self, later: ClassIndex) {
        for (id, c) in later.classes {
            self.classes.entry(id).or_insert(c);
        }
        for (id, n) in later.names {
            self.names.entry(id).or_insert(n);
        }
    }

    /// The class dumped with this id.
    pub fn get(&self, class_id: u64) -> Option<&ClassInfo> {
        self.classes.get(&class_id)
    }

    /// STRING id of the class's name (from LOAD_CLASS).
    pub fn name_id(&self, class_id: u64) -> Option<u64> {
        self.names.get(&class_id).copied()
    }

    /// Class ids whose LOAD_CLASS name id satisfies `is_name`.
    pub fn classes_named(&self, is_name: impl Fn(u64) -> bool) -> Vec<u64> {
        let mut ids: Vec<u64> = self
            .names
            .iter()
            .filter(|(_, name)| is_name(**name))
            .map(|(class, _)| *class)
            .collect();
        ids.sort_unstable();
        ids
    }

    /// Every class dumped, in no particular order.
    pub fn classes(&self) -> impl Iterator<Item = &ClassInfo> {
        self.classes.values()
    }

    /// The class's own instance field declarations, decoded from `data` (the whole dump the
    /// index was built from).
    pub fn own_fields<'d>(
        &self,
        data: &'d [u8],
        class: &ClassInfo,
    ) -> impl Iterator<Item = FieldDecl> + 'd {
        let start = class.fields_offset as usize;
        let len = class.field_count as usize * (self.id_size as usize + 1);
        field_decls(&data[start..start + len], class.field_count, self.id_size)
    }

    /// The class's static fields with their values, decoded from `data`.
    pub fn static_fields<'d>(
        &self,
        data: &'d [u8],
        class: &ClassInfo,
    ) -> impl Iterator<Item = StaticField> + 'd {
        let start = class.statics_offset as usize;
        let bytes = &data[start..start + class.statics_len as usize];
        static_fields(bytes, class.static_count, self.id_size)
    }

    /// The class and its ancestors, nearest first. Fails on a superclass cycle or a missing
    /// superclass dump. Linear in the depth of the hierarchy (the classes met are kept in a
    /// set to find a cycle).
    pub fn hierarchy(&self, class_id: u64) -> Result<Vec<&ClassInfo>> {
        let mut chain = Vec::new();
        let mut met = std::collections::HashSet::<u64, foldhash::fast::RandomState>::default();
        let mut id = class_id;
        while id != 0 {
            let class = self.classes.get(&id).ok_or(FormatError::MissingClass {
                offset: chain.last().map_or(0, |c: &&ClassInfo| c.offset),
                class_id: id,
                what: "a class hierarchy",
            })?;
            if !met.insert(id) {
                return Err(FormatError::SuperclassCycle {
                    class_id: id,
                    offset: class.offset,
                });
            }
            chain.push(class);
            id = class.super_id;
        }
        Ok(chain)
    }

    /// The flattened instance layout of a class: its own fields, then its superclass's, …
    pub fn layout(&self, data: &[u8], class_id: u64) -> Result<Layout> {
        let mut fields = Vec::new();
        let mut offset = 0u64;
        for class in self.hierarchy(class_id)? {
            for f in self.own_fields(data, class) {
                fields.push(LayoutField {
                    name_id: f.name_id,
                    ty: f.ty,
                    offset,
                    declared_by: class.class_id,
                });
                offset += f.ty.size(self.id_size) as u64;
            }
        }
        Ok(Layout {
            class_id,
            fields,
            size: offset,
            id_size: self.id_size,
        })
    }
}
