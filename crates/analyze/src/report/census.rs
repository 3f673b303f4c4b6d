//! What `diff` keeps of one analysis once its graph is gone: every class's reachable
//! instances with their shallow and retained bytes, and the largest retainers under the
//! GC roots, each named by its path rather than by object ids, so that the same holder in
//! two dumps has the same name.
//!
//! A class's retained bytes are the sum of the retained sizes of its reachable instances
//! whose immediate dominator is not an instance of the same class (so a linked list's
//! nodes count once, not once per node above them): exact where a class's instances nest
//! directly in each other, a bound from above where they nest through another class.

use hprof_shrink_core::hprof::tags;
use serde::Serialize;

use crate::base::limits::MAX_NAME_BYTES;
use crate::base::map::Map;
use crate::base::shown::clipped;
use crate::heap::graph::Graph;
use crate::heap::index::Node;
use crate::paths::reach::{Reach, StepNames};
use crate::paths::tree_text::{clip, edge_text, root_text, simple, target_text};
use crate::sizes::by_class::Histogram;
use crate::sizes::dominators::{Dominators, Place};
use crate::sizes::subtrees::Subtrees;

/// Retainers a census keeps: the largest objects right under the GC roots (those no other
/// object dominates), grouped by path. Enough that a retainer of the new dump missing
/// from the base's list is small there.
pub const MAX_CENSUS_RETAINERS: usize = 1000;

/// Top-level objects whose paths are made: the largest, before grouping by path.
const MAX_TOP_LEVEL: usize = 4 * MAX_CENSUS_RETAINERS;

/// Steps of a retainer's path kept: the first [`PATH_HEAD`] and last [`PATH_TAIL`], the
/// ones between counted in one step.
pub const PATH_HEAD: usize = 20;
/// See [`PATH_HEAD`].
pub const PATH_TAIL: usize = 20;

/// What `diff` keeps of one dump: its classes and its largest retainers.
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Census {
    /// Every class with reachable instances.
    pub classes: Vec<ClassCensus>,
    /// The largest retainers under the GC roots, by path: at most [`MAX_CENSUS_RETAINERS`].
    pub retainers: Vec<RetainerCensus>,
}

/// One class's reachable instances (see the module's text for its retained bytes).
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ClassCensus {
    /// Its name, deobfuscated with `--mapping`, escaped and cut.
    pub class_name: String,
    /// Its strongly reachable instances (arrays for an array class).
    pub instances: u64,
    /// Their shallow bytes.
    pub shallow_bytes: u64,
    /// Their retained bytes, each nest of the class counted once (the module's text).
    pub retained_bytes: u64,
}

/// Top-level objects (dominated by no other object) of one path, added up.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RetainerCensus {
    /// From the GC root (`GcRoot(StickyClass) -> class com.example.Cache`) down to the
    /// retainer, one reference per step, as `growth` names them.
    pub path: Vec<String>,
    /// Its class, deobfuscated with `--mapping`, escaped and cut.
    pub class_name: String,
    /// Top-level objects with this path.
    pub objects: u64,
    /// Bytes they retain together.
    pub retained_bytes: u64,
}

/// The class keys of a census, each with a code: an index into `keys`. Codes make the
/// per-object pass compare and add by array index instead of reading each dominator's
/// record in the dump and hashing its key.
struct Codes {
    of: Map<(u8, u64), u32>,
    keys: Vec<(u8, u64)>,
}

impl Codes {
    fn new(keys: impl Iterator<Item = (u8, u64)>) -> Codes {
        let mut codes = Codes {
            of: Map::default(),
            keys: Vec::new(),
        };
        for key in keys {
            codes.add(key);
        }
        codes
    }

    fn add(&mut self, key: (u8, u64)) {
        let next = self.keys.len() as u32;
        if let std::collections::hash_map::Entry::Vacant(e) = self.of.entry(key) {
            e.insert(next);
            self.keys.push(key);
        }
    }

    /// The code of `key`, asked of the map only when it is not the last one asked
    /// (neighbours in a dump mostly share a class).
    #[inline]
    fn get(&self, key: (u8, u64), last: &mut Option<((u8, u64), u32)>) -> Option<u32> {
        match *last {
            Some((k, code)) if k == key => Some(code),
            _ => {
                let code = *self.of.get(&key)?;
                *last = Some((key, code));
                Some(code)
            }
        }
    }
}

/// Number → the code of its object's class, on every core (each number has one object:
/// the stores never meet). `Err` with the keys of reachable objects that `codes` lacks
/// (the reachable classes hold them all: only a census of inconsistent counts gets here).
fn class_of_each_number(
    doms: &Dominators,
    g: &Graph<'_, '_>,
    codes: &Codes,
) -> Result<Vec<u32>, Vec<(u8, u64)>> {
    use rayon::prelude::*;
    use std::sync::atomic::{AtomicU32, Ordering::Relaxed};
    const RUN: usize = 1 << 16;
    let class_of: Vec<AtomicU32> = (0..doms.numbered())
        .into_par_iter()
        .map(|_| AtomicU32::new(u32::MAX))
        .collect();
    let missing: Vec<(u8, u64)> = (0..doms.nodes().div_ceil(RUN))
        .into_par_iter()
        .flat_map_iter(|c| {
            let mut missing = Vec::new();
            let mut last = None;
            for u in (c * RUN)..((c + 1) * RUN).min(doms.nodes()) {
                let Some(place) = doms.place(u as Node) else {
                    continue;
                };
                let key = g.class_key(u as Node);
                match (codes.get(key, &mut last), place) {
                    (Some(code), Place::Vertex(p)) => class_of[p as usize].store(code, Relaxed),
                    (Some(_), Place::Leaf(_)) => {}
                    (None, _) => missing.push(key),
                }
            }
            missing
        })
        .collect();
    if !missing.is_empty() {
        return Err(missing);
    }
    Ok(class_of.into_iter().map(AtomicU32::into_inner).collect())
}

/// The census of one analysis: `reachable` is its reachable objects by class, `trees`
/// what each number retains. One pass over the objects gives each number its class's
/// code; one more, in parallel runs, adds each reachable object's retained bytes to its
/// class unless its immediate dominator is of the same class.
pub(crate) fn take(
    doms: &Dominators,
    g: &Graph<'_, '_>,
    reach: &Reach,
    trees: &Subtrees,
    reachable: &Histogram,
) -> Census {
    use rayon::prelude::*;
    const RUN: usize = 1 << 16;
    let mut codes = Codes::new(reachable.keys().copied());
    let class_of = loop {
        match class_of_each_number(doms, g, &codes) {
            Ok(class_of) => break class_of,
            Err(missing) => missing.into_iter().for_each(|k| codes.add(k)),
        }
    };
    let classes = codes.keys.len();
    let empty = || (vec![0u64; classes], Vec::<(u64, Node)>::new());
    let (sums, mut top) = (0..doms.nodes().div_ceil(RUN))
        .into_par_iter()
        .fold(empty, |(mut sums, mut top), c| {
            let (mut last_class, mut last_code) = (None, None);
            for u in (c * RUN)..((c + 1) * RUN).min(doms.nodes()) {
                let u = u as Node;
                let (code, size, dom) = match doms.place(u) {
                    None => continue,
                    Some(Place::Vertex(p)) => {
                        (class_of[p as usize], trees.java(p), doms.idom_of(p))
                    }
                    Some(Place::Leaf(p)) => {
                        let (key, size) = g.sized_with(u, &mut last_class);
                        // Every reachable object's key has a code (the pass above).
                        let code = codes.get(key, &mut last_code).unwrap_or(u32::MAX);
                        (code, size, p)
                    }
                };
                let Some(sum) = sums.get_mut(code as usize) else {
                    continue;
                };
                if dom == 0 {
                    top.push((size, u));
                    *sum += size;
                } else if class_of[dom as usize] != code {
                    *sum += size;
                }
            }
            (sums, top)
        })
        .reduce(empty, |(mut a, mut ta), (b, tb)| {
            for (x, y) in a.iter_mut().zip(b) {
                *x += y;
            }
            ta.extend(tb);
            (a, ta)
        });
    drop(class_of);
    let retained: Map<(u8, u64), u64> = codes.keys.iter().copied().zip(sums).collect();
    let mut classes: Vec<ClassCensus> = reachable
        .iter()
        .map(|(key, &(instances, shallow_bytes))| ClassCensus {
            class_name: clipped(&g.class_key_name(*key), MAX_NAME_BYTES),
            instances,
            shallow_bytes,
            retained_bytes: retained.get(key).copied().unwrap_or(0),
        })
        .collect();
    classes.sort_by(|a, b| a.class_name.cmp(&b.class_name));

    let order = |a: &(u64, Node), b: &(u64, Node)| b.0.cmp(&a.0).then(a.1.cmp(&b.1));
    if top.len() > MAX_TOP_LEVEL {
        top.select_nth_unstable_by(MAX_TOP_LEVEL, order);
        top.truncate(MAX_TOP_LEVEL);
    }
    top.sort_unstable_by(order);
    let mut by_path: Map<Vec<String>, usize> = Map::default();
    let names = collection_steps(g, reach, &top);
    let mut retainers: Vec<RetainerCensus> = Vec::new();
    for (size, node) in top {
        let path = path_of(g, reach, node, &names);
        match by_path.get(&path) {
            Some(&i) => {
                retainers[i].objects += 1;
                retainers[i].retained_bytes += size;
            }
            None => {
                by_path.insert(path.clone(), retainers.len());
                retainers.push(RetainerCensus {
                    path,
                    class_name: clipped(&g.node_class_name(node), MAX_NAME_BYTES),
                    objects: 1,
                    retained_bytes: size,
                });
            }
        }
    }
    retainers.sort_by(|a, b| {
        b.retained_bytes
            .cmp(&a.retained_bytes)
            .then_with(|| a.path.cmp(&b.path))
    });
    retainers.truncate(MAX_CENSUS_RETAINERS);
    Census { classes, retainers }
}

/// A node's path from its GC root, named without ids or indices.
/// The steps out of collections that the paths to `top` show, named by one walk of each
/// collection (their other steps are fields and elements, named from the graph).
fn collection_steps(g: &Graph<'_, '_>, reach: &Reach, top: &[(u64, Node)]) -> StepNames {
    reach.step_names(
        g,
        top.iter().flat_map(|&(_, node)| {
            let nodes = reach.path(node);
            let steps = nodes.len().saturating_sub(1);
            (0..steps)
                .filter(move |&i| shown(steps, i))
                .map(move |i| (nodes[i], nodes[i + 1]))
                .filter(|&(from, _)| g.ix.tag(from) == tags::INSTANCE_DUMP)
        }),
    )
}

/// Whether a path of `steps` steps shows its step `i`: all of a short one, the first
/// [`PATH_HEAD`] and last [`PATH_TAIL`] of a long one.
fn shown(steps: usize, i: usize) -> bool {
    steps <= PATH_HEAD + PATH_TAIL || i < PATH_HEAD || i >= steps - PATH_TAIL
}

fn path_of(g: &Graph<'_, '_>, reach: &Reach, node: Node, names: &StepNames) -> Vec<String> {
    let nodes = reach.path(node);
    let Some(&first) = nodes.first() else {
        return vec![format!("(no path) -> {}", g.node_class_name(node))];
    };
    let tag = reach.root_of(first).map_or(0xFF, |(r, _)| r.tag);
    let mut out = vec![root_text(g, tag, first)];
    let steps = nodes.len() - 1;
    for (i, pair) in nodes.windows(2).enumerate() {
        if !shown(steps, i) {
            if i == PATH_HEAD {
                out.push(format!("... {} steps ...", steps - PATH_HEAD - PATH_TAIL));
            }
            continue;
        }
        let text = match g.reference_between(pair[0], pair[1]) {
            Some(r) => edge_text(g, pair[0], pair[1], r),
            // A step the search took through a collection, read as one step: named as
            // the search names it, with its generic name (no key or index).
            None => match reach.reference_named(g, pair[0], pair[1], names) {
                Some((r, _)) => clip(format!(
                    "{} {}.{} -> {}",
                    r.reference_type.as_deref().unwrap_or("REFERENCE"),
                    simple(r.owning_class_name().unwrap_or("?")),
                    r.generic(),
                    target_text(g, pair[1])
                )),
                None => format!("-> {}", g.node_class_name(pair[1])),
            },
        };
        out.push(text);
    }
    out
}
