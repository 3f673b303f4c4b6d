//! The retained size of every reachable object, from the dominator tree: what the triage
//! reads (the largest subtrees under the roots, where their memory accumulates, the
//! largest arrays). One parallel pass sizes each object into its number (a leaf into its
//! dominator's), one pass over the numbers from the last adds each into its immediate
//! dominator and keeps each number's largest child; registered native bytes are carried
//! up apart, from the few objects that have them.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering::Relaxed};

use hprof_shrink_core::hprof::tags;

use super::dominators::{Dominators, Place, Pre};
use super::graph::Graph;
use super::index::{Node, NONE};
use super::map::Map;

/// MAT's `big_drop_ratio`: the walk to an accumulation point goes down to the largest
/// child while it keeps at least this share of its parent.
const BIG_DROP: f64 = 0.7;
/// MAT's bound on that walk.
const MAX_WALK: usize = 1000;

/// Class key → (objects, bytes retained with native, native).
pub type ByClass = Map<(u8, u64), (u64, u64, u64)>;

pub struct Subtrees {
    /// Number → retained bytes, registered native bytes included.
    total: Vec<u64>,
    /// Number → its largest dominated number (0: it dominates no numbered object).
    best: Vec<Pre>,
    /// Number → its node.
    node_of: Vec<Node>,
    /// Number → registered native bytes retained, for the numbers that retain any.
    native: Map<Pre, u64>,
    /// The objects the super-root dominates directly (MAT's top-level dominators).
    pub top: Vec<Pre>,
    /// The largest arrays by shallow size: (bytes, node), largest first, `keep` at most.
    pub primitive_arrays: Vec<(u64, Node)>,
    pub object_arrays: Vec<(u64, Node)>,
}

/// The `keep` largest (bytes, node) seen, largest first (ties: lower node first).
#[derive(Default, Clone)]
struct Largest(Vec<(u64, Node)>);

impl Largest {
    #[inline]
    fn offer(&mut self, keep: usize, bytes: u64, node: Node) {
        if self.0.len() == keep && self.0.last().is_some_and(|&(b, _)| b >= bytes) {
            return;
        }
        let at = self
            .0
            .partition_point(|&(b, n)| b > bytes || (b == bytes && n < node));
        self.0.insert(at, (bytes, node));
        self.0.truncate(keep);
    }

    fn merge(mut self, other: Largest, keep: usize) -> Largest {
        for (b, n) in other.0 {
            self.offer(keep, b, n);
        }
        self
    }
}

impl Subtrees {
    /// `keep`: how many of the largest arrays of each kind to keep.
    pub fn compute(
        g: &Graph<'_, '_>,
        doms: &Dominators,
        native: &Map<Node, u64>,
        keep: usize,
    ) -> Subtrees {
        use rayon::prelude::*;
        let numbered = doms.numbered();
        let idom = doms.idoms();
        let total: Vec<AtomicU64> = (0..numbered).map(|_| AtomicU64::new(0)).collect();
        let node_of: Vec<AtomicU32> = (0..numbered).map(|_| AtomicU32::new(NONE)).collect();
        const RUN: usize = 1 << 16;
        let nodes = doms.nodes();
        let (prims, objs) = (0..nodes.div_ceil(RUN))
            .into_par_iter()
            .map(|c| {
                let (mut prims, mut objs) = (Largest::default(), Largest::default());
                let mut last = None;
                for u in (c * RUN)..((c + 1) * RUN).min(nodes) {
                    let u = u as Node;
                    let Some(place) = doms.place(u) else {
                        continue;
                    };
                    let (key, size) = g.sized_with(u, &mut last);
                    let into = match place {
                        Place::Vertex(p) => {
                            node_of[p as usize].store(u, Relaxed);
                            p
                        }
                        Place::Leaf(d) => d,
                    };
                    total[into as usize].fetch_add(size, Relaxed);
                    match key.0 {
                        tags::PRIMITIVE_ARRAY_DUMP => prims.offer(keep, size, u),
                        tags::OBJECT_ARRAY_DUMP => objs.offer(keep, size, u),
                        _ => {}
                    }
                }
                (prims, objs)
            })
            .reduce(
                || (Largest::default(), Largest::default()),
                |(a, b), (c, d)| (a.merge(c, keep), b.merge(d, keep)),
            );
        let mut total: Vec<u64> = total.into_iter().map(AtomicU64::into_inner).collect();
        let node_of: Vec<Node> = node_of.into_iter().map(AtomicU32::into_inner).collect();
        // Native bytes, carried up from their owners: sparse, numbers last to first.
        let mut pending: std::collections::BTreeMap<Pre, u64> = Default::default();
        for (&owner, &bytes) in native {
            let at = match doms.place(owner) {
                Some(Place::Vertex(p)) => p,
                Some(Place::Leaf(d)) => d,
                None => continue,
            };
            total[at as usize] += bytes;
            *pending.entry(at).or_default() += bytes;
        }
        let mut carried: Map<Pre, u64> = Map::default();
        while let Some((k, v)) = pending.pop_last() {
            carried.insert(k, v);
            if k != 0 {
                *pending.entry(idom[k as usize]).or_default() += v;
            }
        }
        // Each number into its dominator, children (higher numbers) first; a number's
        // own sum is complete when it is reached.
        let mut best: Vec<Pre> = vec![0; numbered];
        let mut top = Vec::new();
        for k in (1..numbered).rev() {
            let d = idom[k] as usize;
            let v = total[k];
            total[d] += v;
            let b = best[d] as usize;
            if b == 0 || v > total[b] || (v == total[b] && k < b) {
                best[d] = k as Pre;
            }
            if d == 0 {
                top.push(k as Pre);
            }
        }
        top.sort_unstable_by(|&a, &b| total[b as usize].cmp(&total[a as usize]).then(a.cmp(&b)));
        Subtrees {
            total,
            best,
            node_of,
            native: carried,
            top,
            primitive_arrays: prims.0,
            object_arrays: objs.0,
        }
    }

    /// Everything reachable: bytes (native included) and the native part.
    pub fn reachable(&self) -> (u64, u64) {
        (self.total[0], self.native.get(&0).copied().unwrap_or(0))
    }

    /// A numbered object's retained bytes (native included) and native part.
    pub fn of(&self, p: Pre) -> (u64, u64) {
        (
            self.total[p as usize],
            self.native.get(&p).copied().unwrap_or(0),
        )
    }

    /// What a reachable node retains: (bytes with native, native). A leaf retains itself.
    pub fn of_node(
        &self,
        g: &Graph<'_, '_>,
        doms: &Dominators,
        node: Node,
        native: &Map<Node, u64>,
    ) -> (u64, u64) {
        match doms.place(node) {
            Some(Place::Vertex(p)) => self.of(p),
            Some(Place::Leaf(_)) => {
                let n = native.get(&node).copied().unwrap_or(0);
                (g.shallow_size(node) + n, n)
            }
            None => (0, 0),
        }
    }

    pub fn node(&self, p: Pre) -> Node {
        self.node_of[p as usize]
    }

    /// MAT's accumulation point under `p`: down the largest child while it keeps at
    /// least 70% of its parent's retained size; `None` past MAT's 1000 steps.
    pub fn accumulation_point(&self, mut p: Pre) -> Option<Pre> {
        for _ in 0..MAX_WALK {
            let c = self.best[p as usize];
            if c == 0 || (self.total[c as usize] as f64) < BIG_DROP * self.total[p as usize] as f64
            {
                return Some(p);
            }
            p = c;
        }
        None
    }

    /// The objects `points` dominate directly, by class: (class key) → (objects, bytes
    /// retained with native, native), per point. One pass over the nodes.
    pub fn dominated_by_class(
        &self,
        g: &Graph<'_, '_>,
        doms: &Dominators,
        native: &Map<Node, u64>,
        points: &[Pre],
    ) -> Vec<ByClass> {
        let mut out = vec![Map::default(); points.len()];
        if points.is_empty() {
            return out;
        }
        let idom = doms.idoms();
        let at: Map<Pre, usize> = points.iter().enumerate().map(|(i, &p)| (p, i)).collect();
        for u in 0..doms.nodes() as Node {
            let (d, vertex) = match doms.place(u) {
                Some(Place::Vertex(p)) => (idom[p as usize], Some(p)),
                Some(Place::Leaf(d)) => (d, None),
                None => continue,
            };
            let Some(&i) = at.get(&d) else {
                continue;
            };
            let (bytes, nat) = match vertex {
                Some(p) => self.of(p),
                None => {
                    let n = native.get(&u).copied().unwrap_or(0);
                    (g.shallow_size(u) + n, n)
                }
            };
            let e = out[i].entry(g.class_key(u)).or_default();
            e.0 += 1;
            e.1 += bytes;
            e.2 += nat;
        }
        out
    }
}
