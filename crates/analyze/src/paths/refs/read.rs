//! The readers of collections and queues: each walks its structure's fields and
//! chains (bounded: a chain stops at a node seen before) and gives its elements as one
//! step each, in the order Shark gives them.

use super::*;

impl PathRefs {
    /// (declaring class, field) of a node field the readers read.
    fn key_field(&self, key: NodeField) -> (&str, &'static str) {
        match key {
            NodeField::LinkedNext => ("", "next"),
            NodeField::LinkedItem => ("", "item"),
            NodeField::MapKey => (self.map_node, "key"),
            NodeField::MapValue => (self.map_node, "value"),
            NodeField::MapNext => (self.map_node, "next"),
            NodeField::MapTable => (HASH_MAP, "table"),
            NodeField::ChmKey => ("java.util.concurrent.ConcurrentHashMap$Node", "key"),
            NodeField::ChmVal => ("java.util.concurrent.ConcurrentHashMap$Node", "val"),
            NodeField::ChmNext => ("java.util.concurrent.ConcurrentHashMap$Node", "next"),
            NodeField::SimNext => (SAFE_MAP_ENTRY, "mNext"),
            NodeField::SimKey => (SAFE_MAP_ENTRY, "mKey"),
            NodeField::SimValue => (SAFE_MAP_ENTRY, "mValue"),
            NodeField::MessageNext => (MESSAGE, "next"),
            NodeField::RecordNextIdle => (CLIENT_RECORD, "nextIdle"),
            NodeField::RecordActivity => (CLIENT_RECORD, "activity"),
            NodeField::ActivityDestroyed => (ACTIVITY, "mDestroyed"),
            NodeField::Referent => (REFERENCE, "referent"),
            NodeField::WhmNext => ("java.util.WeakHashMap$Entry", "next"),
            NodeField::WhmValue => ("java.util.WeakHashMap$Entry", "value"),
            NodeField::WhmIsNull => ("java.util.WeakHashMap$Entry", "isNull"),
        }
    }

    /// A field of an instance node, by what it is to a reader (`None`: not an instance,
    /// or its class has no such field).
    fn value(
        &self,
        g: &Graph<'_, '_>,
        node: Node,
        key: NodeField,
        harmony: bool,
        scratch: &mut Scratch,
    ) -> Option<Value> {
        let (class, data) = g.instance_data(node)?;
        let slot = self.slot(g, class, key, harmony, scratch);
        self.read_slot(data, slot)
    }

    /// Where a field a reader reads sits in the instances of `class` (found once a class).
    fn slot(
        &self,
        g: &Graph<'_, '_>,
        class: u64,
        key: NodeField,
        harmony: bool,
        scratch: &mut Scratch,
    ) -> Option<(u32, BasicType)> {
        *scratch.slots.entry((class, key)).or_insert_with(|| {
            let (declared_by, name) = match (key, harmony) {
                (NodeField::LinkedNext, false) => ("java.util.LinkedList$Node", "next"),
                (NodeField::LinkedItem, false) => ("java.util.LinkedList$Node", "item"),
                (NodeField::LinkedNext, true) => ("java.util.LinkedList$Link", "next"),
                (NodeField::LinkedItem, true) => ("java.util.LinkedList$Link", "data"),
                _ => self.key_field(key),
            };
            g.field_slot(class, declared_by, name)
        })
    }

    /// The value at `slot` of an instance's field bytes (`None`: no slot, or past them).
    #[inline]
    fn read_slot(&self, data: &[u8], slot: Option<(u32, BasicType)>) -> Option<Value> {
        let (at, ty) = slot?;
        let at = at as usize;
        let need = at + ty.size(self.id_size as u8) as usize;
        if need > data.len() {
            return None;
        }
        Some(Value::read(ty, &data[at..], self.id_size as u8))
    }

    /// The object fields `keys` of a hash table's entry (0 each: null or none, as
    /// [`PathRefs::object`] reads them), from one look at its record: the entries of one
    /// table are mostly of one class, whose slots are kept from one entry to the next.
    fn entry_objects(
        &self,
        g: &Graph<'_, '_>,
        node: Node,
        keys: [NodeField; 3],
        scratch: &mut Scratch,
    ) -> [u64; 3] {
        let Some((class, data)) = g.instance_data(node) else {
            return [0; 3];
        };
        let slots = match scratch.entry_slots {
            Some((c, k, slots)) if c == class && k == keys => slots,
            _ => {
                let slots = keys.map(|k| self.slot(g, class, k, false, scratch));
                scratch.entry_slots = Some((class, keys, slots));
                slots
            }
        };
        slots.map(|slot| match self.read_slot(data, slot) {
            Some(Value::Object(id)) => id,
            _ => 0,
        })
    }

    /// An object field of an instance node (0: null or none).
    fn object(
        &self,
        g: &Graph<'_, '_>,
        node: Node,
        key: NodeField,
        harmony: bool,
        scratch: &mut Scratch,
    ) -> u64 {
        match self.value(g, node, key, harmony, scratch) {
            Some(Value::Object(id)) => id,
            _ => 0,
        }
    }

    /// The node of an id when it is an instance (Shark's `valueAsInstance`).
    fn instance(&self, g: &Graph<'_, '_>, id: u64) -> Option<Node> {
        self.node(g, id)
            .filter(|&n| g.ix.tag(n) == tags::INSTANCE_DUMP)
    }

    /// Follows a chain of instances from `first` through `next`, giving each node and its
    /// position, stopping at null, at a non-instance, at a node seen before or when `each`
    /// says so (`false`).
    fn chain(
        &self,
        g: &Graph<'_, '_>,
        first: Option<Node>,
        next: Link,
        scratch: &mut Scratch,
        mut each: impl FnMut(&mut Scratch, Node, u32) -> bool,
    ) {
        self.chain_by(g, first, scratch, |s, node, i| {
            each(s, node, i).then(|| self.object(g, node, next.field, next.harmony, s))
        });
    }

    /// [`PathRefs::chain`] where `each` gives the id of the next link (`None`: stop).
    fn chain_by(
        &self,
        g: &Graph<'_, '_>,
        first: Option<Node>,
        scratch: &mut Scratch,
        mut each: impl FnMut(&mut Scratch, Node, u32) -> Option<u64>,
    ) {
        // The first links are checked against a short array, the rest against a set: most
        // chains (a hash table's buckets) are a link or two, and a set costs a hash a link.
        const SHORT: usize = 8;
        let mut short = [0 as Node; SHORT];
        scratch.seen.clear();
        let mut at = first;
        let mut i = 0u32;
        while let Some(node) = at {
            let k = i as usize;
            if k < SHORT {
                if short[..k].contains(&node) {
                    break;
                }
                short[k] = node;
            } else {
                if k == SHORT {
                    scratch.seen.extend(short.iter().map(|&n| n as u64));
                }
                if !scratch.seen.insert(node as u64) {
                    break;
                }
            }
            let Some(id) = each(scratch, node, i) else {
                break;
            };
            i = i.saturating_add(1);
            at = self.instance(g, id);
        }
        scratch.seen.clear();
    }

    /// The virtual references of a collection (or queue, thread, animator).
    pub(super) fn read(
        &self,
        g: &Graph<'_, '_>,
        special: Special<'_>,
        scratch: &mut Scratch,
        ctx: &mut Ctx,
        f: &mut impl Targets,
    ) {
        let Special { node, data, reader } = special;
        let n = self.id_size;
        let field = |at: u32| id_at(data, at as usize, n as u8).unwrap_or(0);
        match reader {
            Reader::List { tag, array, size } => {
                let take = |len: usize| match size {
                    Some(at) if at as usize + 4 <= data.len() => {
                        (u4_at(data, at as usize).unwrap_or(0) as i32).max(0) as usize
                    }
                    _ => len,
                };
                self.read_array(g, field(array), tag, take, f);
            }
            Reader::LinkedList { harmony, head } => {
                self.read_linked_list(g, field(head), harmony, scratch, f);
            }
            Reader::Map { tag, table } => {
                let table = Table {
                    id: field(table),
                    tag,
                    keys_only: false,
                };
                self.read_map(g, table, scratch, f);
            }
            Reader::Set { harmony, map } => {
                let Some(map) = self.instance(g, field(map)) else {
                    return;
                };
                let table = self.object(g, map, NodeField::MapTable, false, scratch);
                let table = Table {
                    id: table,
                    tag: Tag::HashSet { harmony },
                    keys_only: true,
                };
                self.read_map(g, table, scratch, f);
            }
            Reader::ArraySet { array } => {
                self.read_array(g, field(array), Tag::ArraySet, |len| len, f);
            }
            Reader::SafeIterableMap { start } => {
                self.read_safe_map(g, field(start), scratch, f);
            }
            Reader::MessageQueue { messages } => {
                self.read_message_queue(g, field(messages), scratch, f);
            }
            Reader::ActivityThread { new_activities } => {
                self.read_new_activities(g, field(new_activities), ctx, f);
            }
            Reader::ClientRecord => self.read_client_record(g, node, scratch, ctx, f),
            Reader::ObjectAnimator { target } => {
                self.read_animator(g, field(target), scratch, f);
            }
            Reader::WeakHashMap { harmony, table } => {
                self.read_weak_map(g, field(table), harmony, scratch, f);
            }
        }
    }

    /// A list backed by an array (`ArrayList`, `CopyOnWriteArrayList`, `ArraySet`): the
    /// first `take(length)` elements of the array `array`.
    #[inline]
    fn read_array(
        &self,
        g: &Graph<'_, '_>,
        array: u64,
        tag: Tag,
        take: impl FnOnce(usize) -> usize,
        f: &mut impl Targets,
    ) {
        let Some(arr) = self.node(g, array) else {
            return;
        };
        let Some(len) = g.array_len(arr) else { return };
        for i in 0..len.min(take(len)) {
            if f.done() {
                break;
            }
            if let Some(t) = f.target(g, g.array_id(arr, i)) {
                f.emit(Emit {
                    target: t,
                    low: false,
                    library: None,
                    via: entry(tag, Role::Element, i as u32, 0, i as u32, 0),
                });
            }
        }
    }

    /// A `LinkedList`'s items, from the link `head` on.
    #[inline]
    fn read_linked_list(
        &self,
        g: &Graph<'_, '_>,
        head: u64,
        harmony: bool,
        scratch: &mut Scratch,
        f: &mut impl Targets,
    ) {
        let first = self.instance(g, head);
        self.chain(
            g,
            first,
            Link {
                field: NodeField::LinkedNext,
                harmony,
            },
            scratch,
            |s, link, i| {
                let item = self.object(g, link, NodeField::LinkedItem, harmony, s);
                if let Some(t) = f.target(g, item) {
                    f.emit(Emit {
                        target: t,
                        low: false,
                        library: None,
                        via: entry(Tag::LinkedList { harmony }, Role::Element, i, 0, i, 0),
                    });
                }
                !f.done()
            },
        );
    }

    /// A `SafeIterableMap`'s keys and values, from the entry `start` on.
    #[inline]
    fn read_safe_map(
        &self,
        g: &Graph<'_, '_>,
        start: u64,
        scratch: &mut Scratch,
        f: &mut impl Targets,
    ) {
        let first = self.instance(g, start);
        self.chain(
            g,
            first,
            Link::of(NodeField::SimNext),
            scratch,
            |s, e, i| {
                let key = self.object(g, e, NodeField::SimKey, false, s);
                let value = self.object(g, e, NodeField::SimValue, false, s);
                let tag = Tag::SafeIterableMap;
                if let Some(t) = f.target(g, key) {
                    let via = entry(tag, Role::Key, i, 0, i, key);
                    f.emit(Emit {
                        target: t,
                        low: false,
                        library: None,
                        via,
                    });
                }
                if let Some(t) = f.target(g, value) {
                    let via = entry(tag, Role::Value, i, 0, i, key);
                    f.emit(Emit {
                        target: t,
                        low: false,
                        library: None,
                        via,
                    });
                }
                !f.done()
            },
        );
    }

    /// A `MessageQueue`'s messages, from `messages` on.
    #[inline]
    fn read_message_queue(
        &self,
        g: &Graph<'_, '_>,
        messages: u64,
        scratch: &mut Scratch,
        f: &mut impl Targets,
    ) {
        let first = self.instance(g, messages);
        self.chain(
            g,
            first,
            Link::of(NodeField::MessageNext),
            scratch,
            |_, m, i| {
                f.known(Emit {
                    target: m,
                    low: false,
                    library: None,
                    via: entry(Tag::MessageQueue, Role::Element, i, 0, i, 0),
                });
                !f.done()
            },
        );
    }

    /// `ActivityThread.mNewActivities` (`head`), remembered in `ctx` so that its records
    /// are read as its entries.
    #[inline]
    fn read_new_activities(
        &self,
        g: &Graph<'_, '_>,
        head: u64,
        ctx: &mut Ctx,
        f: &mut impl Targets,
    ) {
        if head == 0 {
            return;
        }
        ctx.new_activities = Some(head);
        if let Some(t) = f.target(g, head) {
            f.emit(Emit {
                target: t,
                low: false,
                library: self.new_activities_row,
                via: Via::NewActivities,
            });
        }
    }

    /// The destroyed activities down the `nextIdle` chain of the record that heads
    /// `mNewActivities` (other records give none).
    #[inline]
    fn read_client_record(
        &self,
        g: &Graph<'_, '_>,
        node: Node,
        scratch: &mut Scratch,
        ctx: &Ctx,
        f: &mut impl Targets,
    ) {
        if ctx.new_activities != Some(g.ix.id(node)) {
            return;
        }
        self.chain(
            g,
            Some(node),
            Link::of(NodeField::RecordNextIdle),
            scratch,
            |s, r, i| {
                let activity = self.object(g, r, NodeField::RecordActivity, false, s);
                let Some(a) = self.instance(g, activity) else {
                    return true;
                };
                if self.value(g, a, NodeField::ActivityDestroyed, false, s)
                    != Some(Value::Boolean(true))
                {
                    return true;
                }
                f.known(Emit {
                    target: a,
                    low: false,
                    library: None,
                    via: entry(Tag::NewActivities, Role::Element, i, 0, i, 0),
                });
                !f.done()
            },
        );
    }

    /// An `ObjectAnimator`'s target, through its `WeakReference` (followed last).
    #[inline]
    fn read_animator(
        &self,
        g: &Graph<'_, '_>,
        target: u64,
        scratch: &mut Scratch,
        f: &mut impl Targets,
    ) {
        let Some(weak) = self.instance(g, target) else {
            return;
        };
        if g.class_of(weak) != Some(self.weak_reference) {
            return;
        }
        let referent = self.object(g, weak, NodeField::Referent, false, scratch);
        if let Some(t) = f.target(g, referent) {
            f.emit(Emit {
                target: t,
                low: true,
                library: None,
                via: Via::AnimatorTarget,
            });
        }
    }

    /// A `WeakHashMap`'s values whose keys are not cleared, bucket by bucket.
    #[inline]
    fn read_weak_map(
        &self,
        g: &Graph<'_, '_>,
        table: u64,
        harmony: bool,
        scratch: &mut Scratch,
        f: &mut impl Targets,
    ) {
        let Some(arr) = self.node(g, table) else {
            return;
        };
        let Some(len) = g.array_len(arr) else { return };
        let mut position = 0u32;
        for b in 0..len {
            if f.done() {
                break;
            }
            let first = self.instance(g, g.array_id(arr, b));
            self.chain(
                g,
                first,
                Link::of(NodeField::WhmNext),
                scratch,
                |s, e, k| {
                    let null_key = if harmony {
                        self.value(g, e, NodeField::WhmIsNull, false, s)
                            == Some(Value::Boolean(true))
                    } else {
                        self.object(g, e, NodeField::Referent, false, s) == self.null_key
                    };
                    let key = if null_key {
                        0
                    } else {
                        let key = self.object(g, e, NodeField::Referent, false, s);
                        if key == 0 {
                            return true; // a cleared key
                        }
                        key
                    };
                    let value = self.object(g, e, NodeField::WhmValue, false, s);
                    if let Some(t) = f.target(g, value) {
                        let tag = Tag::WeakHashMap { harmony };
                        let via = entry(tag, Role::Value, position, b as u32, k, key);
                        f.emit(Emit {
                            target: t,
                            low: false,
                            library: None,
                            via,
                        });
                    }
                    position = position.saturating_add(1);
                    !f.done()
                },
            );
        }
    }

    /// A hash table's entries, bucket by bucket and down each bucket's `next` links: the
    /// key then the value of each (keys only for a set).
    ///
    /// In batches of [`MAP_BATCH`] buckets, each step over the whole batch before the next
    /// (the buckets' first entries found, the chains read, the keys' and values' nodes
    /// found, the steps given): a node found by its id is a few dependent cache misses,
    /// and lookups one after the other in a short loop overlap in the CPU where lookups
    /// between one entry's other work would wait one by one. The steps come in the same
    /// order as entry by entry. A walk that names steps stops at the entry, or before the
    /// batch, after which its picks cannot change ([`Targets::done`]).
    fn read_map(
        &self,
        g: &Graph<'_, '_>,
        table: Table,
        scratch: &mut Scratch,
        f: &mut impl Targets,
    ) {
        let Table {
            id: table,
            tag,
            keys_only,
        } = table;
        let Some(arr) = self.node(g, table) else {
            return;
        };
        let Some(len) = g.array_len(arr) else { return };
        let fields = match tag {
            Tag::ConcurrentHashMap => [NodeField::ChmKey, NodeField::ChmVal, NodeField::ChmNext],
            _ => [NodeField::MapKey, NodeField::MapValue, NodeField::MapNext],
        };
        let role = if keys_only { Role::Element } else { Role::Key };
        let mut heads = std::mem::take(&mut scratch.heads);
        let mut entries = std::mem::take(&mut scratch.entries);
        let mut position = 0u32;
        for start in (0..len).step_by(MAP_BATCH) {
            if f.done() {
                break;
            }
            let buckets = start..(start + MAP_BATCH).min(len);
            heads.clear();
            heads.extend(
                buckets
                    .clone()
                    .map(|b| self.instance(g, g.array_id(arr, b))),
            );
            entries.clear();
            for (b, &first) in buckets.zip(&heads) {
                self.chain_by(g, first, scratch, |s, e, chain| {
                    let [key, value, next] = self.entry_objects(g, e, fields, s);
                    entries.push(MapEntry {
                        bucket: b as u32,
                        chain,
                        key,
                        value: if keys_only { 0 } else { value },
                        key_node: None,
                        value_node: None,
                    });
                    Some(next)
                });
            }
            for e in entries.iter_mut() {
                e.key_node = f.target(g, e.key);
                if !keys_only {
                    e.value_node = f.target(g, e.value);
                }
            }
            for e in &entries {
                let via = |role| Via::Entry {
                    tag,
                    role,
                    position,
                    bucket: e.bucket,
                    chain: e.chain,
                    key: e.key,
                };
                for (node, role) in [(e.key_node, role), (e.value_node, Role::Value)] {
                    if let Some(t) = node {
                        f.emit(Emit {
                            target: t,
                            low: false,
                            library: None,
                            via: via(role),
                        });
                    }
                }
                position = position.saturating_add(1);
                if f.done() {
                    break;
                }
            }
        }
        scratch.heads = heads;
        scratch.entries = entries;
    }
}

/// Buckets of a hash table read as one batch by `read_map`: enough lookups at once to
/// overlap, few enough that the batch's entries stay in the cache.
const MAP_BATCH: usize = 64;

/// A collection's entry as a step of a path.
#[inline]
fn entry(tag: Tag, role: Role, position: u32, bucket: u32, chain: u32, key: u64) -> Via {
    Via::Entry {
        tag,
        role,
        position,
        bucket,
        chain,
        key,
    }
}

/// The link a chain of instances follows: the field, and whether it is read with
/// Harmony's (Android's older collections') field names.
#[derive(Clone, Copy)]
struct Link {
    field: NodeField,
    harmony: bool,
}

impl Link {
    /// A link read by its OpenJDK field name.
    const fn of(field: NodeField) -> Link {
        Link {
            field,
            harmony: false,
        }
    }
}

/// An instance of a class with a reader: its node, its field data, and the reader.
pub(super) struct Special<'d> {
    pub(super) node: Node,
    pub(super) data: &'d [u8],
    pub(super) reader: Reader,
}

/// A hash table to read: the id of its bucket array, the collection's tag, and whether
/// only keys are taken (a set).
struct Table {
    id: u64,
    tag: Tag,
    keys_only: bool,
}
