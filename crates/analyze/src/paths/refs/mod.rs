//! What the path search follows out of each object, and in which order, as LeakCanary's
//! Shark reads it, and how each followed reference is named in a trace.
//!
//! Most objects need nothing but their plain references (the graph's, already in Shark's
//! order: instance fields by name, array elements, static fields): the search walks those
//! from the reference arrays. The rest are *special*, and [`PathRefs::for_each`] reads
//! them from the dump:
//!
//! - instances with a field that the known-leak table ignores (never followed) or marks as
//!   a library leak (followed last), matched by name over the instance's class chain;
//!   `java.lang.ref.Reference` subclasses whose `referent` Shark follows (finalizer
//!   references: only weak, soft and phantom referents are ignored);
//! - class objects with such a static field;
//! - thread objects (GC roots) with Java frames: the frames' objects become `<Java Local>`
//!   references of the thread, always followed last, none at all when the thread's name
//!   is ignored (`main`, `FinalizerWatchdogDaemon`, LeakCanary's dump thread);
//! - collections and queues read as one step, before their fields: `ArrayList`,
//!   `CopyOnWriteArrayList`, `LinkedList`, `HashMap`/`LinkedHashMap`, `ConcurrentHashMap`,
//!   `HashSet`/`LinkedHashSet`, `WeakHashMap` (LeakCanary HEAD), each on the OpenJDK or
//!   the Apache Harmony (Android 6 and before) layout the dump has; Android's `ArraySet`,
//!   androidx `SafeIterableMap`/`FastSafeIterableMap`, a `MessageQueue`'s messages,
//!   `ActivityThread.mNewActivities` (with its own library-leak match) and an
//!   `ObjectAnimator`'s weakly held target (followed last). Exact classes only, as Shark
//!   matches them; Shark reads neither `ArrayMap` nor `SparseArray`, and neither does this.
//!
//! Every chain walked here (linked lists, buckets, queues) stops at a node seen before, so
//! a cyclic structure in a hostile dump costs its length, not forever.

mod names;
mod read;

pub use names::thread_name;
use read::Special;

use crate::base::map::{Map, Set};
use crate::heap::java_string::StringFields;
use hprof_shrink_core::hprof::{id_at, tags, u4_at, BasicType, Value};

use crate::heap::graph::{utf16_cmp, Graph};
use crate::heap::index::Node;
use crate::knowledge::library::{Device, LibraryTable, Mark, Matchers};
use crate::model::{CollectionStep, Reference};

/// One field the search follows (or not) out of a special class's instances.
#[derive(Debug, Clone, Copy)]
struct PathField {
    at: u32,
    name_id: u64,
    declared_by: u64,
    mark: Option<Mark>,
}

/// The fields of a special class's instances as the search follows them: which rows of
/// the known-leak table hold for the class (an index in [`PathRefs::marks`]) and whether its
/// `referent` is followed; the list itself is made when the first instance of the class
/// whose data holds its whole layout is read, so it costs no more than that instance.
#[derive(Debug)]
struct Fields {
    marks: Option<u32>,
    referent: bool,
    /// `None` inside: the graph's plain references are the same.
    list: std::sync::OnceLock<Option<Box<[PathField]>>>,
}

/// A collection read as one step: which reader, and where its own fields sit in the
/// collection's class (the readers match exact classes, so these offsets are fixed).
#[derive(Debug, Clone, Copy)]
enum Reader {
    /// The first `size` entries of an Object[] field (all of them without `size`).
    List {
        tag: Tag,
        array: u32,
        size: Option<u32>,
    },
    LinkedList {
        harmony: bool,
        head: u32,
    },
    /// HashMap, LinkedHashMap, ConcurrentHashMap: keys and values.
    Map {
        tag: Tag,
        table: u32,
    },
    /// HashSet, LinkedHashSet: the keys of the backing map.
    Set {
        harmony: bool,
        map: u32,
    },
    ArraySet {
        array: u32,
    },
    SafeIterableMap {
        start: u32,
    },
    MessageQueue {
        messages: u32,
    },
    ActivityThread {
        new_activities: u32,
    },
    ClientRecord,
    ObjectAnimator {
        target: u32,
    },
    WeakHashMap {
        harmony: bool,
        table: u32,
    },
}

/// Which collection a virtual step read, and on which layout: what its internal path is
/// made of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tag {
    ArrayList { harmony: bool },
    CopyOnWriteArrayList { harmony: bool },
    LinkedList { harmony: bool },
    HashMap,
    ConcurrentHashMap,
    HashSet { harmony: bool },
    ArraySet,
    SafeIterableMap,
    MessageQueue,
    NewActivities,
    WeakHashMap { harmony: bool },
}

impl Tag {
    fn layout(self) -> &'static str {
        match self {
            Tag::ArrayList { harmony: true }
            | Tag::CopyOnWriteArrayList { harmony: true }
            | Tag::LinkedList { harmony: true }
            | Tag::HashSet { harmony: true }
            | Tag::WeakHashMap { harmony: true } => "harmony",
            Tag::ArraySet | Tag::SafeIterableMap | Tag::MessageQueue | Tag::NewActivities => {
                "android"
            }
            _ => "openjdk",
        }
    }
}

/// What an entry of a collection is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// A list, set or queue element (named by its index, or `element()` for sets).
    Element,
    /// A map's key (`key()`).
    Key,
    /// A map's value (named by its key).
    Value,
}

/// How a reference was made, enough to name it.
#[derive(Debug, Clone, Copy)]
pub enum Via {
    Field {
        name_id: u64,
        declared_by: u64,
    },
    Static {
        name_id: u64,
    },
    Element(u32),
    Local,
    /// An entry of a collection read as one step.
    Entry {
        tag: Tag,
        role: Role,
        /// The entry's position in the order read (list index, queue position, the
        /// entry's ordinal in a map).
        position: u32,
        /// The bucket of a hash table.
        bucket: u32,
        /// `next` links followed from the bucket (or the list's head) to the entry.
        chain: u32,
        /// The key of a map value (0: null).
        key: u64,
    },
    /// `ActivityThread.mNewActivities`, read before the fields.
    NewActivities,
    /// The object an `ObjectAnimator`'s `mTarget` WeakReference refers to.
    AnimatorTarget,
}

/// One reference the search follows.
#[derive(Debug, Clone, Copy)]
pub struct Emit {
    pub target: Node,
    /// Followed last (library leak, Java local, animator target).
    pub low: bool,
    /// The known leak it matches (a table row).
    pub library: Option<u16>,
    pub via: Via,
}

/// Where the readers put the references they find. The search resolves every target;
/// naming a step wants a few targets and leaves the others unresolved: by then the id
/// lookup is gone (each id a search of all objects), and a collection's entries are many.
pub(super) trait Targets {
    /// The node of a reference's target `id`, if it is given (0: null).
    fn target(&mut self, g: &Graph<'_, '_>, id: u64) -> Option<Node>;
    /// A reference whose target was resolved by [`Targets::target`].
    fn emit(&mut self, e: Emit);
    /// A reference whose target is known as a node already.
    fn known(&mut self, e: Emit) {
        self.emit(e)
    }
    /// Whether no reference still to come can change what is kept: the readers stop
    /// walking (between entries, or a hash table's batches of buckets).
    fn done(&self) -> bool {
        false
    }
}

/// Every target, resolved.
struct All<F>(F);

impl<F: FnMut(Emit)> Targets for All<F> {
    #[inline]
    fn target(&mut self, g: &Graph<'_, '_>, id: u64) -> Option<Node> {
        if id == 0 {
            None
        } else {
            g.ix.node(id)
        }
    }

    #[inline]
    fn emit(&mut self, e: Emit) {
        (self.0)(e)
    }
}

/// Only the targets among `ids` (id → node), each with the priority its step wants; the
/// rest are counted as read, unresolved. Done once every wanted target's pick is known.
struct Only<'m> {
    ids: &'m Map<u64, Node>,
    reads: u64,
    picks: Map<Node, Pick>,
    /// Targets whose pick could still change.
    open: usize,
}

impl<'m> Only<'m> {
    fn new(ids: &'m Map<u64, Node>, wants: impl Iterator<Item = (Node, Option<bool>)>) -> Self {
        let picks: Map<Node, Pick> = wants
            .map(|(to, want)| (to, Pick { want, firsts: None }))
            .collect();
        Only {
            ids,
            reads: 0,
            open: picks.len(),
            picks,
        }
    }

    /// Each target met, with the reference its step takes.
    fn picked(self) -> impl Iterator<Item = (Node, Emit)> {
        self.picks
            .into_iter()
            .filter_map(|(to, p)| Some((to, p.firsts?.pick(p.want))))
    }
}

impl Targets for Only<'_> {
    #[inline]
    fn target(&mut self, _: &Graph<'_, '_>, id: u64) -> Option<Node> {
        if id == 0 {
            return None;
        }
        self.reads += 1;
        self.ids.get(&id).copied()
    }

    #[inline]
    fn emit(&mut self, e: Emit) {
        let Some(p) = self.picks.get_mut(&e.target) else {
            return;
        };
        let was = p.settled();
        match p.firsts.as_mut() {
            Some(f) => f.take(e),
            None => p.firsts = Some(Firsts::new(e)),
        }
        if !was && p.settled() {
            self.open -= 1;
        }
    }

    #[inline]
    fn known(&mut self, e: Emit) {
        self.reads += 1;
        self.emit(e)
    }

    #[inline]
    fn done(&self) -> bool {
        self.open == 0
    }
}

/// A wanted target of a naming walk: the priority its step wants, and what was met so far.
struct Pick {
    want: Option<bool>,
    firsts: Option<Firsts>,
}

impl Pick {
    /// Whether [`Firsts::pick`] gives the same whatever comes next: the first of the
    /// wanted priority (of any, without one) is met.
    fn settled(&self) -> bool {
        self.firsts.as_ref().is_some_and(|f| match self.want {
            None => true,
            Some(true) => f.low.is_some(),
            Some(false) => f.high.is_some(),
        })
    }
}

/// The first references from one object to one target: of all, and of each priority.
#[derive(Debug, Clone, Copy)]
struct Firsts {
    any: Emit,
    low: Option<Emit>,
    high: Option<Emit>,
}

impl Firsts {
    fn new(e: Emit) -> Firsts {
        let mut f = Firsts {
            any: e,
            low: None,
            high: None,
        };
        f.take(e);
        f
    }

    /// Takes `e` where it is the first of its priority.
    fn take(&mut self, e: Emit) {
        let slot = if e.low { &mut self.low } else { &mut self.high };
        slot.get_or_insert(e);
    }

    /// The first of the priority `want` (`None`: any), else the first of all.
    fn pick(&self, want: Option<bool>) -> Emit {
        match want {
            Some(true) => self.low,
            Some(false) => self.high,
            None => None,
        }
        .unwrap_or(self.any)
    }
}

/// The locals of a thread object.
#[derive(Debug, Clone)]
struct Locals {
    frames: Vec<Node>,
    mark: Option<Mark>,
}

/// State that readers keep between objects: the `mNewActivities` list head the last
/// `ActivityThread` read pointed to (Shark keeps it the same way).
#[derive(Debug, Default, Clone, Copy)]
pub struct Ctx {
    pub new_activities: Option<u64>,
}

/// Fields of nodes read by the readers, by (declaring class, field name); the map node
/// class is the dump's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum NodeField {
    LinkedNext,
    LinkedItem,
    MapKey,
    MapValue,
    MapNext,
    MapTable,
    ChmKey,
    ChmVal,
    ChmNext,
    SimNext,
    SimKey,
    SimValue,
    MessageNext,
    RecordNextIdle,
    RecordActivity,
    ActivityDestroyed,
    Referent,
    WhmNext,
    WhmValue,
    WhmIsNull,
}

/// What a reader keeps while it reads: the slots of fields found per class, and the
/// nodes of the chain being walked. Reused from object to object.
#[derive(Default)]
pub struct Scratch {
    slots: Map<(u64, NodeField), Option<(u32, BasicType)>>,
    seen: Set<u64>,
    /// A batch of a hash table's buckets (see `read_map`).
    heads: Vec<Option<Node>>,
    entries: Vec<MapEntry>,
    /// The slots of the last hash table entries' class (see `entry_objects`).
    entry_slots: Option<EntrySlots>,
}

/// A class, three fields a reader reads from its instances, and where they sit.
type EntrySlots = (u64, [NodeField; 3], [Option<(u32, BasicType)>; 3]);

/// A hash table's entry as `read_map` gathers it: its bucket, place in the bucket's
/// chain, key and value ids, then the nodes of those.
#[derive(Clone, Copy)]
struct MapEntry {
    bucket: u32,
    chain: u32,
    key: u64,
    value: u64,
    key_node: Option<Node>,
    value_node: Option<Node>,
}

/// The search's rules for one dump.
pub struct PathRefs {
    pub table: &'static LibraryTable,
    pub matchers: Matchers,
    /// Instances of these classes are special: their fields as the search follows them
    /// (when they may differ from the graph's) and their reader.
    classes: Map<u64, (Option<Fields>, Option<Reader>)>,
    /// The known-leak table's instance-field rows that hold for a class (see
    /// [`PathRefs::chain_marks`]), each list shared by a class and its subclasses that add
    /// no row of their own.
    marks: Vec<Vec<(String, Mark)>>,
    /// Class objects with matched statics: class id → (static name id, mark).
    statics: Map<u64, Vec<(u64, Mark)>>,
    /// Thread objects with Java frames.
    threads: Map<Node, Locals>,
    /// The table row `ActivityThread.mNewActivities` matches, whatever the SDK.
    new_activities_row: Option<u16>,
    /// The node class of HashMap's table on this dump (Shark's choice).
    map_node: &'static str,
    /// `java.lang.ref.WeakReference`'s class id.
    weak_reference: u64,
    /// `WeakHashMap.NULL_KEY` (OpenJDK).
    null_key: u64,
    id_size: usize,
    /// References read by the walks that name paths' steps ([`PathRefs::name`] and the
    /// like): their cost, for `Timings` and the tests that bound it.
    step_reads: std::sync::atomic::AtomicU64,
}

/// Shark's names of the classes the readers read.
const ARRAY_LIST: &str = "java.util.ArrayList";
const COWAL: &str = "java.util.concurrent.CopyOnWriteArrayList";
const LINKED_LIST: &str = "java.util.LinkedList";
const HASH_MAP: &str = "java.util.HashMap";
const LINKED_HASH_MAP: &str = "java.util.LinkedHashMap";
const CHM: &str = "java.util.concurrent.ConcurrentHashMap";
const HASH_SET: &str = "java.util.HashSet";
const LINKED_HASH_SET: &str = "java.util.LinkedHashSet";
const WEAK_HASH_MAP: &str = "java.util.WeakHashMap";
const ARRAY_SET: &str = "android.util.ArraySet";
const SAFE_MAP: &str = "androidx.arch.core.internal.SafeIterableMap";
const FAST_SAFE_MAP: &str = "androidx.arch.core.internal.FastSafeIterableMap";
const SAFE_MAP_ENTRY: &str = "androidx.arch.core.internal.SafeIterableMap$Entry";
const MESSAGE_QUEUE: &str = "android.os.MessageQueue";
const MESSAGE: &str = "android.os.Message";
const ACTIVITY_THREAD: &str = "android.app.ActivityThread";
const CLIENT_RECORD: &str = "android.app.ActivityThread$ActivityClientRecord";
const ACTIVITY: &str = "android.app.Activity";
const OBJECT_ANIMATOR: &str = "android.animation.ObjectAnimator";
const REFERENCE: &str = "java.lang.ref.Reference";
const WEAK_REFERENCE: &str = "java.lang.ref.WeakReference";

impl PathRefs {
    pub fn new(g: &Graph<'_, '_>, table: &'static LibraryTable, device: &Device) -> PathRefs {
        let matchers = table.matchers(device);
        let mut refs = PathRefs {
            table,
            matchers,
            classes: Map::default(),
            marks: Vec::new(),
            statics: Map::default(),
            threads: Map::default(),
            new_activities_row: table.by_id("ACTIVITY_THREAD__M_NEW_ACTIVITIES"),
            map_node: "java.util.HashMap$Node",
            weak_reference: g.class_named(WEAK_REFERENCE).unwrap_or(0),
            null_key: 0,
            id_size: g.ix.id_size as usize,
            step_reads: Default::default(),
        };
        let readers = refs.readers(g);
        let mut ids: Vec<u64> = g.ix.classes.classes().map(|c| c.class_id).collect();
        ids.sort_unstable();
        let chain_marks = refs.chain_marks(g, &ids);
        for class in ids {
            let (marks, own_referent) = chain_marks.get(&class).copied().unwrap_or_default();
            let rows: &[(String, Mark)] = marks.map_or(&[], |m| &refs.marks[m as usize]);
            // Shark follows a Reference's referent unless a row ignores it (weak, soft and
            // phantom references): the graph never does.
            let referent = g.is_reference_class(class)
                && !rows
                    .iter()
                    .any(|(f, m)| f == "referent" && *m == Mark::Ignored);
            // A row can change what the graph follows only through a field of the class's
            // layout: a row on `referent` (the weak, soft and phantom references' rows) only
            // when a class below Reference declares a field of that name itself, since the
            // graph never follows Reference's own. So the many weak references of a heap
            // stay plain objects of the search.
            let matter = rows.iter().any(|(f, _)| f != "referent" || own_referent);
            let fields = (matter || referent).then(|| Fields {
                marks,
                referent,
                list: std::sync::OnceLock::new(),
            });
            let reader = readers.get(&class).copied();
            if fields.is_some() || reader.is_some() {
                refs.classes.insert(class, (fields, reader));
            }
            let name = g.class_name(class);
            if refs.matchers.has_statics(name) {
                let mut marks = Vec::new();
                if let Some(c) = g.ix.classes.get(class) {
                    for s in g.ix.classes.static_fields(g.ix.data, c) {
                        let field = g.field_name(class, s.name_id);
                        if let Some(m) = refs.matchers.static_field(name, &field) {
                            marks.push((s.name_id, m));
                        }
                    }
                }
                if !marks.is_empty() {
                    refs.statics.insert(class, marks);
                }
            }
        }
        refs.threads = refs.locals(g);
        refs
    }

    /// For each class, the known-leak table's instance-field rows that hold for it: the
    /// rows of its own name, then those of its superclasses' not already named (nearest
    /// first, as LeakCanary matches them over the class chain, without
    /// `java.lang.Object`). Made top down, each class from its superclass's (a class
    /// without rows of its own shares its superclass's list), each class walked once: a
    /// hierarchy thousands deep costs its classes, not their square. A walk up stops at a
    /// class done, the top, a class missing from the dump or a superclass cycle.
    /// With each class's rows, whether a class of its chain other than Reference declares
    /// a field named `referent` (looked for in the classes below Reference only).
    fn chain_marks(&mut self, g: &Graph<'_, '_>, ids: &[u64]) -> Map<u64, (Option<u32>, bool)> {
        let mut memo: Map<u64, (Option<u32>, bool)> = Map::default();
        for &class in ids {
            if memo.contains_key(&class) {
                continue;
            }
            let mut walk: Vec<u64> = Vec::new();
            let mut on_walk: Set<u64> = Set::default();
            let mut id = class;
            let mut base: Option<u32> = None;
            let mut referent = false;
            while id != 0 {
                if let Some(&(m, r)) = memo.get(&id) {
                    (base, referent) = (m, r);
                    break;
                }
                if g.ix.classes.get(id).is_none()
                    || g.class_name(id) == "java.lang.Object"
                    || !on_walk.insert(id)
                {
                    break;
                }
                walk.push(id);
                id = g.ix.classes.get(id).map_or(0, |c| c.super_id);
            }
            for &c in walk.iter().rev() {
                let mut own = self
                    .matchers
                    .instance_fields(std::iter::once(g.class_name(c)));
                if !own.is_empty() {
                    if let Some(b) = base {
                        for (f, m) in &self.marks[b as usize] {
                            if !own.iter().any(|(o, _)| o == f) {
                                own.push((f.clone(), *m));
                            }
                        }
                    }
                    self.marks.push(own);
                    base = Some((self.marks.len() - 1) as u32);
                }
                referent |= g.is_reference_class(c)
                    && g.class_name(c) != REFERENCE
                    && g.declares_field(c, "referent");
                memo.insert(c, (base, referent));
            }
        }
        memo
    }

    /// The fields of `class`'s instances as the search follows them, when they differ
    /// from the graph's plain references (made once per class, on its first instance).
    fn fields<'s>(
        &'s self,
        g: &Graph<'_, '_>,
        class: u64,
        spec: &'s Fields,
    ) -> Option<&'s [PathField]> {
        spec.list
            .get_or_init(|| self.make_fields(g, class, spec))
            .as_deref()
    }

    fn make_fields(
        &self,
        g: &Graph<'_, '_>,
        class: u64,
        spec: &Fields,
    ) -> Option<Box<[PathField]>> {
        let marks: &[(String, Mark)] = spec.marks.map_or(&[], |m| &self.marks[m as usize]);
        let mark_of = |name: &str| marks.iter().find(|(f, _)| f == name).map(|(_, m)| *m);
        let referent = spec
            .referent
            .then(|| g.field_slot(class, REFERENCE, "referent"))
            .flatten()
            .filter(|(_, ty)| *ty == BasicType::Object);
        if marks.is_empty() && referent.is_none() {
            return None;
        }
        let mut out: Vec<(String, PathField)> = Vec::new();
        let mut differs = referent.is_some();
        for f in g.ref_fields(class) {
            let name = g.field_name(f.declared_by, f.name_id);
            let mark = mark_of(&name);
            differs |= mark.is_some();
            out.push((
                name,
                PathField {
                    at: f.at,
                    name_id: f.name_id,
                    declared_by: f.declared_by,
                    mark,
                },
            ));
        }
        if !differs {
            return None;
        }
        if let Some((at, _)) = referent {
            let reference = g.class_named(REFERENCE).unwrap_or(0);
            let name_id =
                g.ix.classes
                    .get(reference)
                    .and_then(|info| {
                        g.ix.classes
                            .own_fields(g.ix.data, info)
                            .find(|f| g.field_name(reference, f.name_id) == "referent")
                    })
                    .map_or(0, |f| f.name_id);
            out.push((
                "referent".into(),
                PathField {
                    at,
                    name_id,
                    declared_by: reference,
                    mark: None,
                },
            ));
            // Stable: the class's own fields before its superclasses' for one name.
            out.sort_by(|(a, _), (b, _)| utf16_cmp(a, b));
        }
        Some(out.into_iter().map(|(_, f)| f).collect())
    }

    /// The collection readers that apply to this dump, by exact class id, as Shark's
    /// factories decide (a class's own field names tell the layout).
    fn readers(&mut self, g: &Graph<'_, '_>) -> Map<u64, Reader> {
        let mut out = Map::default();
        let class = |name: &str| g.class_named(name);
        // The node class of HashMap's table: JDK 7's Entry, Android's HashMapEntry, else
        // JDK 8's Node (Shark's order of preference).
        self.map_node = if class("java.util.HashMap$Entry").is_some() {
            "java.util.HashMap$Entry"
        } else if class("java.util.HashMap$HashMapEntry").is_some() {
            "java.util.HashMap$HashMapEntry"
        } else {
            "java.util.HashMap$Node"
        };
        list_readers(g, &mut out);
        self.map_readers(g, &mut out);
        self.android_readers(g, &mut out);
        out
    }

    /// The readers of hash tables (maps, sets, weak maps); a Harmony `HashMap` sets the
    /// node class of its table.
    fn map_readers(&mut self, g: &Graph<'_, '_>, out: &mut Map<u64, Reader>) {
        let slot = |class: u64, declared_by: &str, name: &str| {
            g.field_slot(class, declared_by, name).map(|(at, _)| at)
        };
        let class = |name: &str| g.class_named(name);
        let declares = |c: u64, f: &str| g.declares_field(c, f);
        if let Some(c) = class(HASH_MAP) {
            // Harmony's HashMap has no loadFactor; its entries are always HashMapEntry.
            if !declares(c, "loadFactor") {
                self.map_node = "java.util.HashMap$HashMapEntry";
            }
            for m in std::iter::once(c).chain(class(LINKED_HASH_MAP)) {
                if let Some(table) = slot(m, HASH_MAP, "table") {
                    out.insert(
                        m,
                        Reader::Map {
                            tag: Tag::HashMap,
                            table,
                        },
                    );
                }
            }
        }
        if let Some(c) = class(CHM) {
            // Harmony's (Android 4) is made of segments: not read.
            if declares(c, "table") {
                if let Some(table) = slot(c, CHM, "table") {
                    out.insert(
                        c,
                        Reader::Map {
                            tag: Tag::ConcurrentHashMap,
                            table,
                        },
                    );
                }
            }
        }
        if let Some(c) = class(HASH_SET) {
            for (harmony, map) in [(false, "map"), (true, "backingMap")] {
                if declares(c, map) {
                    for s in std::iter::once(c).chain(class(LINKED_HASH_SET)) {
                        if let Some(map) = slot(s, HASH_SET, map) {
                            out.insert(s, Reader::Set { harmony, map });
                        }
                    }
                    break;
                }
            }
        }
        if let Some(c) = class(WEAK_HASH_MAP) {
            let harmony = !declares(c, "table");
            let null_key = g
                .statics(c)
                .into_iter()
                .find(|(n, _)| n == "NULL_KEY")
                .and_then(|(_, v)| v.as_object())
                .filter(|&id| id != 0);
            let table = slot(
                c,
                WEAK_HASH_MAP,
                if harmony { "elementData" } else { "table" },
            );
            // OpenJDK's reader needs NULL_KEY (Shark fails without it).
            if let (Some(table), true) = (table, harmony || null_key.is_some()) {
                self.null_key = null_key.unwrap_or(0);
                out.insert(c, Reader::WeakHashMap { harmony, table });
            }
        }
    }

    /// The readers of Android's own structures (new activities, message queues, animator
    /// targets, `SafeIterableMap`, `ArraySet`).
    fn android_readers(&self, g: &Graph<'_, '_>, out: &mut Map<u64, Reader>) {
        let slot = |class: u64, declared_by: &str, name: &str| {
            g.field_slot(class, declared_by, name).map(|(at, _)| at)
        };
        let class = |name: &str| g.class_named(name);
        let declares = |c: u64, f: &str| g.declares_field(c, f);
        if let (Some(at), Some(record)) = (class(ACTIVITY_THREAD), class(CLIENT_RECORD)) {
            if declares(at, "mNewActivities")
                && declares(record, "nextIdle")
                && declares(record, "activity")
            {
                if let Some(new_activities) = slot(at, ACTIVITY_THREAD, "mNewActivities") {
                    out.insert(at, Reader::ActivityThread { new_activities });
                    out.insert(record, Reader::ClientRecord);
                }
            }
        }
        if let Some(c) = class(MESSAGE_QUEUE) {
            if let Some(messages) = slot(c, MESSAGE_QUEUE, "mMessages") {
                out.insert(c, Reader::MessageQueue { messages });
            }
        }
        if let (Some(c), true) = (class(OBJECT_ANIMATOR), self.weak_reference != 0) {
            if let Some(target) = slot(c, OBJECT_ANIMATOR, "mTarget") {
                out.insert(c, Reader::ObjectAnimator { target });
            }
        }
        if let Some(c) = class(SAFE_MAP) {
            for m in std::iter::once(c).chain(class(FAST_SAFE_MAP)) {
                if let Some(start) = slot(m, SAFE_MAP, "mStart") {
                    out.insert(m, Reader::SafeIterableMap { start });
                }
            }
        }
        if let Some(c) = class(ARRAY_SET) {
            if let Some(array) = slot(c, ARRAY_SET, "mArray") {
                out.insert(c, Reader::ArraySet { array });
            }
        }
    }

    /// Each thread object (a GC root, an instance of `java.lang.Thread`) with the objects
    /// of its thread's Java frames, in the dump's order.
    fn locals(&self, g: &Graph<'_, '_>) -> Map<Node, Locals> {
        let mut out = Map::default();
        let Some(thread_class) = g.class_named("java.lang.Thread") else {
            return out;
        };
        let mut frames: Map<u32, Vec<Node>> = Map::default();
        for r in &g.ix.roots {
            if r.tag == tags::ROOT_JAVA_FRAME {
                if let (Some(serial), Some(node)) = (r.thread_serial, g.ix.node(r.object_id)) {
                    frames.entry(serial).or_default().push(node);
                }
            }
        }
        for r in &g.ix.roots {
            if r.tag != tags::ROOT_THREAD_OBJECT {
                continue;
            }
            let (Some(serial), Some(node)) = (r.thread_serial, g.ix.node(r.object_id)) else {
                continue;
            };
            // A thread without Java frames has no locals to give: no entry (a dump of a
            // million threads kept 80 bytes each here, and read each one's name).
            let Some(list) = frames.get(&serial) else {
                continue;
            };
            let Some(class) = g.class_of(node) else {
                continue;
            };
            if g.ix.tag(node) != tags::INSTANCE_DUMP || !g.is_subclass(class, thread_class) {
                continue;
            }
            let mark = thread_name(g, node).and_then(|n| self.matchers.thread(&n));
            out.insert(
                node,
                Locals {
                    frames: list.clone(),
                    mark,
                },
            );
        }
        out
    }

    /// Whether `node` is an `ActivityThread` whose `mNewActivities` is read first (with
    /// its own library-leak match).
    pub fn names_new_activities(&self, g: &Graph<'_, '_>, node: Node) -> bool {
        g.class_of(node)
            .and_then(|c| self.classes.get(&c))
            .is_some_and(|(_, r)| matches!(r, Some(Reader::ActivityThread { .. })))
    }

    /// Whether the instances of `class` need [`PathRefs::for_each`].
    pub fn special_class(&self, class: u64) -> bool {
        self.classes.contains_key(&class)
    }

    /// The nodes other than instances of special classes that need
    /// [`PathRefs::for_each`]: class objects with matched statics, thread objects.
    pub fn special_nodes(&self, g: &Graph<'_, '_>) -> Vec<Node> {
        self.statics
            .keys()
            .filter_map(|&c| g.ix.node(c))
            .chain(self.threads.keys().copied())
            .collect()
    }

    /// Whether a thread object's Java frames are made references of it (Shark's thread
    /// roots with frames); their `JAVA_FRAME` roots are then not roots of their own.
    pub fn thread_serials(g: &Graph<'_, '_>) -> Set<u32> {
        g.ix.roots
            .iter()
            .filter(|r| r.tag == tags::ROOT_THREAD_OBJECT)
            .filter_map(|r| r.thread_serial)
            .collect()
    }

    /// Every reference the search follows out of `node`, in Shark's order: the virtual
    /// ones (a thread's locals, a collection's entries) first, then fields (or array
    /// elements, or static fields). Ignored references are not given.
    pub fn for_each(
        &self,
        g: &Graph<'_, '_>,
        node: Node,
        scratch: &mut Scratch,
        ctx: &mut Ctx,
        f: impl FnMut(Emit),
    ) {
        self.each(g, node, scratch, ctx, &mut All(f));
    }

    /// [`PathRefs::for_each`], giving what it finds to `f`, which resolves (or skips)
    /// each target.
    fn each(
        &self,
        g: &Graph<'_, '_>,
        node: Node,
        scratch: &mut Scratch,
        ctx: &mut Ctx,
        f: &mut impl Targets,
    ) {
        match g.ix.tag(node) {
            tags::INSTANCE_DUMP => self.instance_refs(g, node, scratch, ctx, f),
            tags::OBJECT_ARRAY_DUMP => self.element_refs(g, node, f),
            tags::CLASS_DUMP => self.static_refs(g, node, f),
            _ => {}
        }
    }

    /// An instance's references: a thread's locals or a collection's entries, then its
    /// fields (as its class's marks and referent say, or the graph's plain ones).
    #[inline]
    fn instance_refs(
        &self,
        g: &Graph<'_, '_>,
        node: Node,
        scratch: &mut Scratch,
        ctx: &mut Ctx,
        f: &mut impl Targets,
    ) {
        let Some((class, data)) = g.instance_data(node) else {
            return;
        };
        let special = self.classes.get(&class);
        if let Some(locals) = self.threads.get(&node) {
            local_refs(locals, f);
        } else if let Some((_, Some(reader))) = special {
            let special = Special {
                node,
                data,
                reader: *reader,
            };
            self.read(g, special, scratch, ctx, f);
        }
        if f.done() {
            return;
        }
        match special
            .and_then(|(fields, _)| fields.as_ref())
            .and_then(|spec| self.fields(g, class, spec))
        {
            Some(fields) => self.marked_field_refs(g, data, fields, f),
            None => self.field_refs(g, class, data, f),
        }
    }

    /// The fields of an instance whose class has marked fields or a referent to follow:
    /// ignored ones left out, library leaks followed last.
    #[inline]
    fn marked_field_refs(
        &self,
        g: &Graph<'_, '_>,
        data: &[u8],
        fields: &[PathField],
        f: &mut impl Targets,
    ) {
        for pf in fields {
            if pf.mark == Some(Mark::Ignored) {
                continue;
            }
            let id = id_at(data, pf.at as usize, self.id_size as u8).unwrap_or(0);
            if let Some(t) = f.target(g, id) {
                let library = match pf.mark {
                    Some(Mark::Library(e)) => Some(e),
                    _ => None,
                };
                f.emit(Emit {
                    target: t,
                    low: library.is_some(),
                    library,
                    via: Via::Field {
                        name_id: pf.name_id,
                        declared_by: pf.declared_by,
                    },
                });
            }
        }
    }

    /// The plain reference fields of an instance, in the graph's order.
    #[inline]
    fn field_refs(&self, g: &Graph<'_, '_>, class: u64, data: &[u8], f: &mut impl Targets) {
        for rf in g.ref_fields(class) {
            let id = id_at(data, rf.at as usize, self.id_size as u8).unwrap_or(0);
            if let Some(t) = f.target(g, id) {
                f.emit(Emit {
                    target: t,
                    low: false,
                    library: None,
                    via: Via::Field {
                        name_id: rf.name_id,
                        declared_by: rf.declared_by,
                    },
                });
            }
        }
    }

    /// An object array's non-null elements, in order.
    #[inline]
    fn element_refs(&self, g: &Graph<'_, '_>, node: Node, f: &mut impl Targets) {
        let len = g.array_len(node).unwrap_or(0);
        for i in 0..len {
            if f.done() {
                break;
            }
            if let Some(t) = f.target(g, g.array_id(node, i)) {
                f.emit(Emit {
                    target: t,
                    low: false,
                    library: None,
                    via: Via::Element(i as u32),
                });
            }
        }
    }

    /// A class object's static object fields: ignored ones left out, library leaks
    /// followed last.
    #[inline]
    fn static_refs(&self, g: &Graph<'_, '_>, node: Node, f: &mut impl Targets) {
        let raw = g.ix.raw(node);
        let class_id = id_at(raw, 1, self.id_size as u8).unwrap_or(0);
        let Some(class) = g.ix.classes.get(class_id) else {
            return;
        };
        let marks = self.statics.get(&class_id);
        for s in g.ix.classes.static_fields(g.ix.data, class) {
            let Value::Object(id) = s.value else { continue };
            let Some(t) = f.target(g, id) else { continue };
            let mark = marks
                .and_then(|m| m.iter().find(|(name, _)| *name == s.name_id))
                .map(|(_, m)| *m);
            let library = match mark {
                Some(Mark::Ignored) => continue,
                Some(Mark::Library(e)) => Some(e),
                None => None,
            };
            f.emit(Emit {
                target: t,
                low: library.is_some(),
                library,
                via: Via::Static { name_id: s.name_id },
            });
        }
    }

    /// The node of an id, if the dump holds it (0: null).
    #[inline]
    fn node(&self, g: &Graph<'_, '_>, id: u64) -> Option<Node> {
        if id == 0 {
            None
        } else {
            g.ix.node(id)
        }
    }
}

/// The readers of lists (`LinkedList`, `ArrayList`, `CopyOnWriteArrayList`), each by the
/// layout its class's own fields tell.
fn list_readers(g: &Graph<'_, '_>, out: &mut Map<u64, Reader>) {
    let class = |name: &str| g.class_named(name);
    // The field holding class `c`'s contents under OpenJDK's name or, when `c` does not
    // declare that, Android's older (harmony) one: whether harmony's, and its slot.
    let contents = |c: u64, owner: &str, [openjdk, harmony]: [&str; 2]| {
        let (is_harmony, name) = [(false, openjdk), (true, harmony)]
            .into_iter()
            .find(|&(_, f)| g.declares_field(c, f))?;
        g.field_slot(c, owner, name).map(|(at, _)| (is_harmony, at))
    };
    if let Some(c) = class(LINKED_LIST) {
        if let Some((harmony, head)) = contents(c, LINKED_LIST, ["first", "voidLink"]) {
            out.insert(c, Reader::LinkedList { harmony, head });
        }
    }
    if let Some(c) = class(ARRAY_LIST) {
        if let Some((harmony, array)) = contents(c, ARRAY_LIST, ["elementData", "array"]) {
            let size = g.field_slot(c, ARRAY_LIST, "size").map(|(at, _)| at);
            out.insert(
                c,
                Reader::List {
                    tag: Tag::ArrayList { harmony },
                    array,
                    size,
                },
            );
        }
    }
    if let Some(c) = class(COWAL) {
        if let Some((harmony, array)) = contents(c, COWAL, ["array", "elements"]) {
            out.insert(
                c,
                Reader::List {
                    tag: Tag::CopyOnWriteArrayList { harmony },
                    array,
                    size: None,
                },
            );
        }
    }
}

/// A thread's Java frames as its references (followed last), unless the thread is ignored.
#[inline]
fn local_refs(locals: &Locals, f: &mut impl Targets) {
    if locals.mark == Some(Mark::Ignored) {
        return;
    }
    let library = match locals.mark {
        Some(Mark::Library(e)) => Some(e),
        _ => None,
    };
    for &t in &locals.frames {
        if f.done() {
            break;
        }
        f.known(Emit {
            target: t,
            low: true,
            library,
            via: Via::Local,
        });
    }
}
