//! The pass that reads every object for its references ([`edges::Edges::build`]), and
//! what the later steps take from each object on the way ([`Seen`]): shallow sizes by
//! class, the instances the finders and the path search read, each object's size code
//! for the subtrees, the String instances for the duplicates, and the objects whose
//! references could not be read.

use std::sync::atomic::{AtomicU8, Ordering::Relaxed};

use hprof_shrink_core::hprof::tags;
use hprof_shrink_core::space::Unpack;

use crate::base::map::Map;
use crate::base::{parked, spare};
use crate::heap::graph::{self, Graph, Instances};
use crate::heap::{edges, index};
use crate::knowledge::inspect::{heap::Heap, kinds::Kinds};
use crate::knowledge::{finders, leaks};
use crate::paths::refs;
use crate::report::strings;
use crate::sizes::by_class::{slot_of, Histogram, Sizer, SLOTS};
use crate::sizes::subtrees;

/// What the references' pass hands on.
pub(crate) struct Passed {
    pub edges: edges::Edges,
    /// The instances the path search reads from the dump, in node order.
    pub special: Vec<index::Node>,
    /// Every object's shallow size in a byte ([`subtrees::SizeCodes`]), by node, parked
    /// through the peak for the subtrees.
    pub sizes: parked::Parked<u8>,
    /// The String instances and their value arrays, for the duplicate Strings after
    /// the dominators.
    pub strings: strings::Strings,
    /// Every object's shallow size, by class.
    pub all_objects: Histogram,
    /// The instances of the classes the finders and the triage look at.
    pub instances: Instances,
    pub unread: Unread,
}

/// The classes whose instances the pass keeps: those the finders and the triage look at
/// (`triage_classes`), and those the path search reads.
pub(crate) fn wanted(
    g: &Graph<'_, '_>,
    heap: &Heap<'_>,
    kinds: &Kinds,
    triage_classes: &[u64],
    path_refs: &refs::PathRefs,
) -> Map<u64, u8> {
    let mut wanted: Map<u64, u8> = Map::default();
    for c in leaks::destroyed_info_classes(g)
        .into_iter()
        .chain(finders::wanted(kinds, heap))
        .chain(g.class_named("android.graphics.Bitmap"))
        .chain(triage_classes.iter().copied())
    {
        *wanted.entry(c).or_default() |= WANTED;
    }
    for c in g.ix.classes.classes().map(|c| c.class_id) {
        if path_refs.special_class(c) {
            *wanted.entry(c).or_default() |= SPECIAL;
        }
    }
    wanted
}

/// Reads every object's references once (the graph's edges) and takes from each what
/// [`Seen`] keeps; what the triage reads after the dominators is parked (see
/// [`parked`]), and the memory the pass's threads freed goes back to the system.
pub(crate) fn pass(
    g: &Graph<'_, '_>,
    wanted: Map<u64, u8>,
    string_values: &Option<strings::StringValues>,
    unpack: &Unpack,
) -> Passed {
    let string_class = string_values.as_ref().map_or(u64::MAX, |v| v.class);
    let string_nodes = strings::NodeBits::new(if string_values.is_some() {
        g.ix.len()
    } else {
        0
    });
    // Every object's shallow size in a byte ([`subtrees::SizeCodes`]), by node.
    let codes: Vec<AtomicU8> = std::iter::repeat_with(|| AtomicU8::new(0))
        .take(g.ix.len())
        .collect();
    let (edges, seen) = edges::Edges::build(
        g,
        |_| Seen::default(),
        |seen, node, key, size, unread, refs| {
            seen.add(&wanted, node, key, size, unread);
            codes[node as usize].store(subtrees::SizeCodes::code(key, size), Relaxed);
            if key == (tags::INSTANCE_DUMP, string_class) {
                if let Some(v) = string_values {
                    string_nodes.add(node);
                    seen.string_arrays.push(node, v.array(g, node, refs));
                }
            }
        },
        Seen::merge,
    );
    let special = seen.special;
    // What the triage reads after the dominators waits on disk through the peak.
    let codes: Vec<u8> = codes.into_iter().map(AtomicU8::into_inner).collect();
    let sizes = parked::Parked::park(codes, unpack, "the objects' sizes");
    let arrays = seen.string_arrays.finish(&string_nodes);
    let strings = strings::Strings {
        nodes: string_nodes,
        arrays,
    };
    let (all_objects, instances) = (seen.sizer.finish(), Instances::from_pairs(seen.instances));
    let unread = seen.unread;
    spare::give_back_freed_memory();
    Passed {
        edges,
        special,
        sizes,
        strings,
        all_objects,
        instances,
        unread,
    }
}

/// Objects whose references could not be read, by (class, why).
pub(crate) type Unread = Map<(u64, graph::Broken), u64>;

/// A class whose instances the finders look at.
const WANTED: u8 = 1;
/// In [`Seen`]'s slots: the class was looked up.
const KNOWN: u8 = 0x80;
/// A class whose instances the path search reads from the dump ([`refs`]).
const SPECIAL: u8 = 2;

/// What the references' pass takes from each object: its shallow size by class, the
/// instances of the classes the finders look at (class, node) and those the path search
/// reads, in node order, and the objects whose references could not be read.
struct Seen {
    sizer: Sizer,
    instances: Vec<(u64, index::Node)>,
    special: Vec<index::Node>,
    /// Each String's value array, in node order ([`strings::Arrays`]).
    string_arrays: strings::Arrays,
    /// Instance classes asked about, and what each is (`KNOWN` set), by [`slot_of`].
    wants: Box<[(u64, u8); SLOTS]>,
    unread: Unread,
}

impl Default for Seen {
    fn default() -> Seen {
        Seen {
            sizer: Sizer::default(),
            instances: Vec::new(),
            special: Vec::new(),
            string_arrays: strings::Arrays::default(),
            wants: Box::new([(0, 0); SLOTS]),
            unread: Unread::default(),
        }
    }
}

impl Seen {
    #[inline]
    fn add(
        &mut self,
        wanted: &Map<u64, u8>,
        node: index::Node,
        key: (u8, u64),
        size: u64,
        unread: Option<graph::Broken>,
    ) {
        self.sizer.add_sized(key, size);
        if let Some(why) = unread {
            *self.unread.entry((key.1, why)).or_default() += 1;
        }
        if key.0 == tags::INSTANCE_DUMP {
            // Neighbours are mostly of a few classes: the map is asked once a class
            // while it keeps its slot.
            let slot = &mut self.wants[slot_of(key.1)];
            let want = if slot.0 == key.1 && slot.1 & KNOWN != 0 {
                slot.1
            } else {
                let want = wanted.get(&key.1).copied().unwrap_or(0) | KNOWN;
                *slot = (key.1, want);
                want
            };
            if want & WANTED != 0 {
                self.instances.push((key.1, node));
            }
            if want & SPECIAL != 0 {
                self.special.push(node);
            }
        }
    }

    fn merge(mut a: Seen, b: Seen) -> Seen {
        a.instances.extend(b.instances);
        a.string_arrays.append(b.string_arrays);
        a.special.extend(b.special);
        for (k, n) in b.unread {
            *a.unread.entry(k).or_default() += n;
        }
        Seen {
            sizer: Sizer::merge(a.sizer, b.sizer),
            instances: a.instances,
            special: a.special,
            string_arrays: a.string_arrays,
            wants: a.wants,
            unread: a.unread,
        }
    }
}
