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
use crate::sizes::dominators::{Dominators, Place, Pre};
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

/// What the first pass gives: each number's class code, and the numbered objects right
/// under the GC roots (number, object).
struct Numbered {
    class_of: Vec<u32>,
    top: Vec<(Pre, Node)>,
}

/// Number → the code of its object's class, on every core (each number has one object:
/// the stores never meet), with the numbered objects right under the GC roots. `Err` with
/// the keys of reachable objects that `codes` lacks (the reachable classes hold them all:
/// only a census of inconsistent counts gets here).
fn number_classes(
    doms: &Dominators,
    g: &Graph<'_, '_>,
    codes: &Codes,
) -> Result<Numbered, Vec<(u8, u64)>> {
    use rayon::prelude::*;
    use std::sync::atomic::{AtomicU32, Ordering::Relaxed};
    let class_of: Vec<AtomicU32> = (0..doms.numbered())
        .into_par_iter()
        .map(|_| AtomicU32::new(u32::MAX))
        .collect();
    let (missing, top) = runs(doms.nodes())
        .map(|run| {
            let (mut missing, mut top) = (Vec::new(), Vec::new());
            let mut last = None;
            for u in run {
                let Some(place) = doms.place(u) else {
                    continue;
                };
                let key = g.class_key(u);
                match (codes.get(key, &mut last), place) {
                    (Some(code), Place::Vertex(p)) => {
                        class_of[p as usize].store(code, Relaxed);
                        if doms.idom_of(p) == 0 {
                            top.push((p, u));
                        }
                    }
                    (Some(_), Place::Leaf(_)) => {}
                    // Once a run per class (neighbours share one).
                    (None, _) if missing.last() != Some(&key) => missing.push(key),
                    (None, _) => {}
                }
            }
            (missing, top)
        })
        .reduce(
            || (Vec::new(), Vec::new()),
            |(mut m, mut t), (m2, t2)| {
                m.extend(m2);
                t.extend(t2);
                (m, t)
            },
        );
    if !missing.is_empty() {
        return Err(missing);
    }
    let class_of = class_of.into_iter().map(AtomicU32::into_inner).collect();
    Ok(Numbered { class_of, top })
}

/// Runs of [`RUN`] consecutive nodes (or numbers) below `n`, in parallel.
fn runs(n: usize) -> impl rayon::iter::IndexedParallelIterator<Item = std::ops::Range<Node>> {
    use rayon::prelude::*;
    (0..n.div_ceil(RUN))
        .into_par_iter()
        .map(move |c| (c * RUN) as Node..((c + 1) * RUN).min(n) as Node)
}

/// Nodes or numbers a task of the passes takes.
const RUN: usize = 1 << 16;

/// The census of one analysis: `reachable` is its reachable objects by class, `trees`
/// what each number retains. One pass over the objects gives each number its class's
/// code; then each reachable object's retained bytes go to its class unless its immediate
/// dominator is of the same class: the numbered objects in number order (their class, size
/// and dominator read from arrays in that order, the dominator mostly just before), the
/// others (leaves, which retain themselves) in object order.
pub(crate) fn take(
    doms: &Dominators,
    g: &Graph<'_, '_>,
    reach: &Reach,
    trees: &Subtrees,
    reachable: &Histogram,
) -> Census {
    let mut codes = Codes::new(reachable.keys().copied());
    let Numbered { class_of, top } = loop {
        match number_classes(doms, g, &codes) {
            Ok(numbered) => break numbered,
            Err(missing) => missing.into_iter().for_each(|k| codes.add(k)),
        }
    };
    let (sums, mut top_leaves) = class_sums(doms, g, trees, &codes, &class_of);
    drop(class_of);
    let mut top: Vec<(u64, Node)> = top.into_iter().map(|(p, u)| (trees.java(p), u)).collect();
    top.append(&mut top_leaves);
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

/// Each class's retained bytes (by code), each object adding its own unless its immediate
/// dominator is of its class; and the leaves right under the GC roots (size, object).
fn class_sums(
    doms: &Dominators,
    g: &Graph<'_, '_>,
    trees: &Subtrees,
    codes: &Codes,
    class_of: &[u32],
) -> (Vec<u64>, Vec<(u64, Node)>) {
    use rayon::prelude::*;
    let classes = codes.keys.len();
    let add = |sums: &mut Vec<u64>, code: u32, size: u64, dom: Pre| {
        if let Some(sum) = sums.get_mut(code as usize) {
            if dom == 0 || class_of[dom as usize] != code {
                *sum += size;
            }
        }
    };
    // Number 0 is the super-root, no object's.
    let numbered = runs(doms.numbered()).fold(
        || vec![0u64; classes],
        |mut sums, run| {
            for p in run.start.max(1)..run.end {
                add(
                    &mut sums,
                    class_of[p as usize],
                    trees.java(p),
                    doms.idom_of(p),
                );
            }
            sums
        },
    );
    let leaves = runs(doms.nodes()).fold(
        || (vec![0u64; classes], Vec::<(u64, Node)>::new()),
        |(mut sums, mut top), run| {
            let (mut last_class, mut last_code) = (None, None);
            for u in run {
                let Some(Place::Leaf(dom)) = doms.place(u) else {
                    continue;
                };
                let (key, size) = g.sized_with(u, &mut last_class);
                // Every reachable object's key has a code (the first pass).
                let code = codes.get(key, &mut last_code).unwrap_or(u32::MAX);
                if dom == 0 {
                    top.push((size, u));
                }
                add(&mut sums, code, size, dom);
            }
            (sums, top)
        },
    );
    let sum = |mut a: Vec<u64>, b: Vec<u64>| {
        a.iter_mut().zip(b).for_each(|(x, y)| *x += y);
        a
    };
    let numbered = numbered.reduce(|| vec![0u64; classes], sum);
    let (leaves, top_leaves) = leaves.reduce(
        || (vec![0u64; classes], Vec::new()),
        |(a, mut ta), (b, tb)| {
            ta.extend(tb);
            (sum(a, b), ta)
        },
    );
    (sum(numbered, leaves), top_leaves)
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
