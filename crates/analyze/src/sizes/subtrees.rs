//! The retained size of every reachable object, from the dominator tree: what the triage
//! reads (the largest subtrees under the roots, where their memory accumulates, the
//! largest arrays), and the leaks' retained sizes.
//!
//! One parallel pass over the nodes adds each object's shallow size into its number (a
//! leaf into its dominator's), from the size the references' pass left for it (a byte an
//! object, [`SizeCodes`]: the record is read again only for the objects too large for it,
//! and for the unreachable, which are tallied by class); one pass over the numbers
//! from the last adds each into its immediate dominator. 8 bytes per numbered object (9
//! with leaks to count objects for), where semi-NCA's arrays, gone by then, took 12.
//! Registered native bytes are carried up apart, from the few objects that have them.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use hprof_shrink_core::hprof::tags;

use crate::base::map::Map;
use crate::heap::graph::Graph;
use crate::heap::index::{Node, NONE};
use crate::sizes::dominators::{Dominators, Fold, Place, Pre, Retained};

/// MAT's `big_drop_ratio`: the walk to an accumulation point goes down to the largest
/// child while it keeps at least this share of its parent.
const BIG_DROP: f64 = 0.7;
/// MAT's bound on that walk.
const MAX_WALK: usize = 1000;

/// Class key → (objects, bytes retained with native, native).
pub type ByClass = Map<(u8, u64), (u64, u64, u64)>;

/// Each object's shallow size in a byte, as the references' pass found it: an object
/// other than an array below 128 bytes as its size; a primitive array below 64 bytes as
/// `0x80 | size`; an object array below 48 bytes as `0xC0 + size`; a larger one as
/// [`BIG_PRIMITIVE_ARRAY`], [`BIG_OBJECT_ARRAY`] or [`BIG`], whose record is read again.
pub struct SizeCodes;

const BIG_PRIMITIVE_ARRAY: u8 = 0xFD;
const BIG_OBJECT_ARRAY: u8 = 0xFE;
const BIG: u8 = 0xFF;

/// What a size code says: the array kind (its tag, or 0) and the size, if it holds it.
#[inline]
fn decode(code: u8) -> (u8, Option<u64>) {
    match code {
        0..=0x7F => (0, Some(code as u64)),
        0x80..=0xBF => (tags::PRIMITIVE_ARRAY_DUMP, Some((code & 0x3F) as u64)),
        0xC0..=0xEF => (tags::OBJECT_ARRAY_DUMP, Some((code - 0xC0) as u64)),
        BIG_PRIMITIVE_ARRAY => (tags::PRIMITIVE_ARRAY_DUMP, None),
        BIG_OBJECT_ARRAY => (tags::OBJECT_ARRAY_DUMP, None),
        _ => (0, None),
    }
}

impl SizeCodes {
    /// The code of an object of class key `key` and shallow size `size`.
    #[inline]
    pub fn code(key: (u8, u64), size: u64) -> u8 {
        match key.0 {
            tags::PRIMITIVE_ARRAY_DUMP if size < 0x40 => 0x80 | size as u8,
            tags::PRIMITIVE_ARRAY_DUMP => BIG_PRIMITIVE_ARRAY,
            tags::OBJECT_ARRAY_DUMP if size < 0x30 => 0xC0 + size as u8,
            tags::OBJECT_ARRAY_DUMP => BIG_OBJECT_ARRAY,
            _ if size < 0x80 => size as u8,
            _ => BIG,
        }
    }
}

pub struct Subtrees {
    /// Number → Java bytes retained (shallow sizes of its dominator subtree).
    total: Vec<u64>,
    /// Number → registered native bytes retained, for the numbers that retain any.
    native: Map<Pre, u64>,
    /// The objects the super-root dominates directly (MAT's top-level dominators, leaves
    /// included): (bytes retained with native, native, node, number or 0 for a leaf),
    /// largest first (ties: the lower node).
    pub top: Vec<(u64, u64, Node, Pre)>,
    /// The largest reachable arrays by shallow size: (bytes, node), largest first, `keep`
    /// at most.
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

/// What one run of nodes found.
struct Run<S> {
    prims: Largest,
    objs: Largest,
    /// (node, number or 0 for a leaf) of the top-level dominators.
    top: Vec<(Node, Pre)>,
    /// Objects by the slot of their nearest wanted dominator (0: none).
    objects: Vec<u64>,
    state: S,
}

impl<S> Run<S> {
    /// Two runs' findings as one: the `keep` largest arrays of both, their states joined
    /// by `merge`.
    fn join(mut self, b: Run<S>, keep: usize, merge: &impl Fn(S, S) -> S) -> Run<S> {
        self.prims = self.prims.merge(b.prims, keep);
        self.objs = self.objs.merge(b.objs, keep);
        self.top.extend(b.top);
        for (x, y) in self.objects.iter_mut().zip(b.objects) {
            *x += y;
        }
        self.state = merge(self.state, b.state);
        self
    }
}

/// Native bytes, carried up from their owners to every number above them: sparse,
/// numbers last to first.
fn carried(doms: &Dominators, native: &Map<Node, u64>) -> Map<Pre, u64> {
    let idom = doms.idoms();
    let mut pending: std::collections::BTreeMap<Pre, u64> = Default::default();
    for (&owner, &bytes) in native {
        let at = match doms.place(owner) {
            Some(Place::Vertex(p)) => p,
            Some(Place::Leaf(d)) => d,
            None => continue,
        };
        // Saturating: sizes from the dump, summed up the tree (see native_size).
        let e = pending.entry(at).or_default();
        *e = e.saturating_add(bytes);
    }
    let mut out: Map<Pre, u64> = Map::default();
    while let Some((k, v)) = pending.pop_last() {
        out.insert(k, v);
        if k != 0 {
            let e = pending.entry(idom[k as usize]).or_default();
            *e = e.saturating_add(v);
        }
    }
    out
}

/// The numbers the super-root dominates directly, as bits: the subtrees' pass asks of
/// each object in node order, whose numbers are scattered, and a bit table stays in cache
/// where the dominators' array would not.
fn top_level_bits(idom: &[Pre]) -> Vec<u64> {
    let mut bits = vec![0u64; idom.len().div_ceil(64)];
    for (k, &d) in idom.iter().enumerate().skip(1) {
        if d == 0 {
            bits[k / 64] |= 1 << (k % 64);
        }
    }
    bits
}

/// Where each number's objects are counted: the slot of its nearest wanted dominator
/// (itself included), 0 for none; one byte a number, made only when there are leaks.
struct Slots {
    of: Vec<u8>,
    /// Wanted number → its slot.
    slot: Map<Pre, u8>,
}

impl Slots {
    fn new(doms: &Dominators, wanted: &[Place]) -> Option<Slots> {
        let mut slot: Map<Pre, u8> = Map::default();
        for place in wanted {
            if let Place::Vertex(p) = *place {
                let next = slot.len() + 1;
                // Leaks are at most `limits::MAX_LEAKS` (50): a byte holds their slots.
                let Ok(next) = u8::try_from(next) else {
                    break;
                };
                slot.entry(p).or_insert(next);
            }
        }
        if slot.is_empty() {
            return None;
        }
        let idom = doms.idoms();
        let mut of = vec![0u8; idom.len()];
        // Parents come before children in preorder.
        for k in 1..idom.len() {
            of[k] = match slot.get(&(k as Pre)) {
                Some(&s) => s,
                None => of[idom[k] as usize],
            };
        }
        Some(Slots { of, slot })
    }
}

/// Sums on their way into the numbers' totals, a few dozen at a time. Numbers follow the
/// depth-first search and nodes the dump (a copying collector's order), so consecutive
/// objects go into numbers far apart: each locked add alone would wait for its own cache
/// miss. The lines of a batch are read together first, their misses overlapping, and the
/// adds then find them in cache.
struct Pending<'t> {
    total: &'t [AtomicU64],
    adds: [(Pre, u64); 32],
    len: usize,
}

impl<'t> Pending<'t> {
    fn new(total: &'t [AtomicU64]) -> Self {
        Pending {
            total,
            adds: [(0, 0); 32],
            len: 0,
        }
    }

    #[inline]
    fn push(&mut self, to: Pre, bytes: u64) {
        self.adds[self.len] = (to, bytes);
        self.len += 1;
        if self.len == self.adds.len() {
            self.flush();
        }
    }

    #[inline]
    fn flush(&mut self) {
        let adds = &self.adds[..self.len];
        let mut touched = 0u64;
        for &(to, _) in adds {
            touched |= self.total[to as usize].load(Relaxed);
        }
        std::hint::black_box(touched);
        for &(to, bytes) in adds {
            self.total[to as usize].fetch_add(bytes, Relaxed);
        }
        self.len = 0;
    }
}

/// The shallow sizes the sums are made of: a [`SizeCodes`] byte per node (empty when they
/// could not be kept: every size is read again), and the native bytes registered for
/// objects.
pub struct Sizes<'s> {
    pub codes: &'s [u8],
    pub native: &'s Map<Node, u64>,
}

impl Subtrees {
    /// Sums every number's subtree from the `sizes`; `gone` tallies each unreachable
    /// object (class key, shallow size) into the runs' states. Returns with it what each
    /// of `wanted` retains. `keep`: how many of the largest arrays of each kind to keep.
    pub fn compute<S: Send>(
        g: &Graph<'_, '_>,
        doms: &Dominators,
        sizes: Sizes<'_>,
        keep: usize,
        wanted: &[Node],
        gone: Fold<
            impl Fn() -> S + Sync + Send,
            impl Fn(&mut S, (u8, u64), u64) + Sync,
            impl Fn(S, S) -> S + Sync + Send,
        >,
    ) -> (Subtrees, Vec<Retained>, S) {
        use rayon::prelude::*;
        let Sizes { codes, native } = sizes;
        let Fold { init, add, merge } = gone;
        let numbered = doms.numbered();
        let idom = doms.idoms();
        let places: Vec<Option<Place>> = wanted.iter().map(|&w| doms.place(w)).collect();
        // The sums' pages are faulted in while one core marks the numbers below.
        let (total, (top_level, slots)) = rayon::join(
            // Made on every core: 8 bytes a number are fresh pages, each faulted in and
            // zeroed.
            || -> Vec<AtomicU64> {
                (0..numbered)
                    .into_par_iter()
                    .map(|_| AtomicU64::new(0))
                    .collect()
            },
            || {
                let wanted: Vec<Place> = places.iter().flatten().copied().collect();
                (top_level_bits(idom), Slots::new(doms, &wanted))
            },
        );
        let slot_count = slots.as_ref().map_or(1, |s| s.slot.len() + 1);
        const RUN: usize = 1 << 16;
        let nodes = doms.nodes();
        let empty = || Run {
            prims: Largest::default(),
            objs: Largest::default(),
            top: Vec::new(),
            objects: vec![0; slot_count],
            state: init(),
        };
        let found = (0..nodes.div_ceil(RUN))
            .into_par_iter()
            .map(|c| {
                let mut run = empty();
                let mut last = None;
                // Neighbours mostly go into one number (an object and its leaves): added
                // once a stretch.
                let (mut into, mut bytes) = (0 as Pre, 0u64);
                let mut pending = Pending::new(&total);
                for u in (c * RUN)..((c + 1) * RUN).min(nodes) {
                    let u = u as Node;
                    let Some(place) = doms.place(u) else {
                        let (key, size) = g.sized_with(u, &mut last);
                        add(&mut run.state, key, size);
                        continue;
                    };
                    // Without codes (unreadable), every size is read again.
                    let (array, known) = decode(codes.get(u as usize).copied().unwrap_or(BIG));
                    let size = match known {
                        Some(s) => s,
                        None => g.sized_with(u, &mut last).1,
                    };
                    let to = match place {
                        Place::Vertex(p) => {
                            if top_level[p as usize / 64] & (1 << (p % 64)) != 0 {
                                run.top.push((u, p));
                            }
                            p
                        }
                        Place::Leaf(d) => {
                            if d == 0 {
                                run.top.push((u, 0));
                            }
                            d
                        }
                    };
                    if to != into {
                        pending.push(into, bytes);
                        (into, bytes) = (to, 0);
                    }
                    bytes += size;
                    if let Some(s) = &slots {
                        run.objects[s.of[to as usize] as usize] += 1;
                    }
                    match array {
                        tags::PRIMITIVE_ARRAY_DUMP => run.prims.offer(keep, size, u),
                        tags::OBJECT_ARRAY_DUMP => run.objs.offer(keep, size, u),
                        _ => {}
                    }
                }
                pending.push(into, bytes);
                pending.flush();
                run
            })
            .reduce(empty, |a, b| a.join(b, keep, &merge));
        let mut total: Vec<u64> = total.into_iter().map(AtomicU64::into_inner).collect();
        // Each number into its dominator, children (higher numbers) first.
        for k in (1..numbered).rev() {
            let v = total[k];
            total[idom[k] as usize] += v;
        }
        let mut trees = Subtrees {
            total,
            native: carried(doms, native),
            top: Vec::new(),
            primitive_arrays: found.prims.0,
            object_arrays: found.objs.0,
        };
        trees.top = trees.ranked(g, found.top, native);
        let retained = trees.wanted(g, doms, wanted, slots.as_ref(), found.objects);
        (trees, retained, found.state)
    }

    /// The top-level dominators with what they retain, largest first (ties: the lower
    /// node).
    fn ranked(
        &self,
        g: &Graph<'_, '_>,
        top: Vec<(Node, Pre)>,
        native: &Map<Node, u64>,
    ) -> Vec<(u64, u64, Node, Pre)> {
        let mut top: Vec<(u64, u64, Node, Pre)> = top
            .into_iter()
            .map(|(u, p)| {
                let (with, nat) = match p {
                    0 => self.leaf(g, u, native),
                    p => self.of(p),
                };
                (with, nat, u, p)
            })
            .collect();
        top.sort_unstable_by(|a, b| b.0.cmp(&a.0).then(a.2.cmp(&b.2)));
        top
    }

    /// What each wanted object retains: Java bytes from the sums; objects from the slots,
    /// nested wanted ones added into those above them, children first.
    fn wanted(
        &self,
        g: &Graph<'_, '_>,
        doms: &Dominators,
        wanted: &[Node],
        slots: Option<&Slots>,
        mut objects: Vec<u64>,
    ) -> Vec<Retained> {
        let idom = doms.idoms();
        let places = wanted.iter().map(|&w| doms.place(w));
        if let Some(s) = slots {
            let mut order: Vec<(Pre, u8)> = s.slot.iter().map(|(&p, &k)| (p, k)).collect();
            order.sort_unstable_by_key(|o| std::cmp::Reverse(o.0));
            for (p, k) in order {
                let above = s.of[idom[p as usize] as usize];
                if above != 0 {
                    objects[above as usize] += objects[k as usize];
                }
            }
        }
        wanted
            .iter()
            .zip(places)
            .map(|(&w, place)| match place {
                None => Retained::default(),
                Some(Place::Leaf(_)) => Retained {
                    bytes: g.shallow_size(w),
                    objects: 1,
                },
                Some(Place::Vertex(p)) => Retained {
                    bytes: self.total[p as usize],
                    objects: slots
                        .and_then(|s| s.slot.get(&p))
                        .map_or(0, |&k| objects[k as usize]),
                },
            })
            .collect()
    }

    /// Everything reachable: bytes (native included) and the native part.
    pub fn reachable(&self) -> (u64, u64) {
        self.of(0)
    }

    /// The reachable objects' Java bytes.
    pub fn reachable_java(&self) -> u64 {
        self.total[0]
    }

    /// The Java bytes number `p` retains (native left out).
    pub fn java(&self, p: Pre) -> u64 {
        self.total[p as usize]
    }

    /// A numbered object's retained bytes (native included) and native part.
    pub fn of(&self, p: Pre) -> (u64, u64) {
        let n = self.native.get(&p).copied().unwrap_or(0);
        (self.total[p as usize].saturating_add(n), n)
    }

    /// A leaf retains itself.
    fn leaf(&self, g: &Graph<'_, '_>, node: Node, native: &Map<Node, u64>) -> (u64, u64) {
        let n = native.get(&node).copied().unwrap_or(0);
        (g.shallow_size(node).saturating_add(n), n)
    }

    /// What a reachable node retains: (bytes with native, native).
    pub fn of_node(
        &self,
        g: &Graph<'_, '_>,
        doms: &Dominators,
        node: Node,
        native: &Map<Node, u64>,
    ) -> (u64, u64) {
        match doms.place(node) {
            Some(Place::Vertex(p)) => self.of(p),
            Some(Place::Leaf(_)) => self.leaf(g, node, native),
            None => (0, 0),
        }
    }

    /// MAT's accumulation point under each of `from`: down the largest child while it
    /// keeps at least 70% of its parent's retained size; `None` past MAT's 1000 steps.
    /// One pass over the numbers after the first of `from`: a child keeping 70% is the
    /// only one that can (the children's sums are at most the parent's), and it comes
    /// after its parent in preorder, its own children after it.
    pub fn accumulation_points(&self, doms: &Dominators, from: &[Pre]) -> Vec<Option<Pre>> {
        let idom = doms.idoms();
        // Each walk's last number (`NONE` once past MAX_WALK), and its steps.
        let mut tails: Vec<Pre> = from.to_vec();
        let mut steps = vec![0usize; from.len()];
        let Some(&first) = from.iter().min() else {
            return Vec::new();
        };
        // The tails as bits, for a test per number that costs no more for more walks (the
        // walks run down disjoint subtrees: no two share a tail).
        let mut is_tail = vec![0u64; idom.len().div_ceil(64)];
        let flip = |bits: &mut [u64], p: Pre| bits[p as usize / 64] ^= 1 << (p % 64);
        for &p in from {
            flip(&mut is_tail, p);
        }
        for (k, &d) in idom.iter().enumerate().skip(first as usize + 1) {
            if is_tail[d as usize / 64] & (1 << (d % 64)) == 0 {
                continue;
            }
            let child = self.of(k as Pre).0;
            if (child as f64) < BIG_DROP * self.of(d).0 as f64 {
                continue;
            }
            flip(&mut is_tail, d);
            for (t, s) in tails.iter_mut().zip(&mut steps).filter(|(t, _)| **t == d) {
                *s += 1;
                *t = if *s >= MAX_WALK { NONE } else { k as Pre };
                if *t != NONE {
                    flip(&mut is_tail, k as Pre);
                }
            }
        }
        tails
            .into_iter()
            .map(|t| (t != NONE).then_some(t))
            .collect()
    }

    /// The objects `points` dominate directly, by class: (class key) → (objects, bytes
    /// retained with native, native), per point, and each point's own object (`NONE` if
    /// none). One pass over the numbers to mark the points' children, one over the nodes
    /// (on every core) for both.
    pub fn dominated_by_class(
        &self,
        g: &Graph<'_, '_>,
        doms: &Dominators,
        native: &Map<Node, u64>,
        points: &[Pre],
    ) -> (Vec<Node>, Vec<ByClass>) {
        use rayon::prelude::*;
        if points.is_empty() {
            return (Vec::new(), Vec::new());
        }
        let idom = doms.idoms();
        let at: Map<Pre, usize> = points.iter().enumerate().map(|(i, &p)| (p, i)).collect();
        let mut point = vec![0u64; idom.len().div_ceil(64)];
        for &p in points {
            point[p as usize / 64] |= 1 << (p % 64);
        }
        let is = |bits: &[u64], p: Pre| bits[p as usize / 64] & (1 << (p % 64)) != 0;
        let mut child = vec![0u64; idom.len().div_ceil(64)];
        for (k, &d) in idom.iter().enumerate().skip(1) {
            if is(&point, d) {
                child[k / 64] |= 1 << (k % 64);
            }
        }
        const RUN: usize = 1 << 16;
        let empty = || {
            (
                vec![NONE; points.len()],
                vec![ByClass::default(); points.len()],
            )
        };
        (0..doms.nodes().div_ceil(RUN))
            .into_par_iter()
            .map(|c| {
                let (mut nodes, mut out) = empty();
                for u in (c * RUN) as Node..((c + 1) * RUN).min(doms.nodes()) as Node {
                    let (d, sizes) = match doms.place(u) {
                        Some(Place::Vertex(p)) if is(&point, p) => {
                            nodes[at[&p]] = u;
                            if !is(&child, p) {
                                continue;
                            }
                            (idom[p as usize], self.of(p))
                        }
                        Some(Place::Vertex(p)) if is(&child, p) => (idom[p as usize], self.of(p)),
                        Some(Place::Leaf(d)) if is(&point, d) => (d, self.leaf(g, u, native)),
                        _ => continue,
                    };
                    let e = out[at[&d]].entry(g.class_key(u)).or_default();
                    e.0 += 1;
                    e.1 = e.1.saturating_add(sizes.0);
                    e.2 = e.2.saturating_add(sizes.1);
                }
                (nodes, out)
            })
            .reduce(empty, |(mut na, mut oa), (nb, ob)| {
                for (a, b) in na.iter_mut().zip(nb) {
                    // A number is one node: at most one run finds it.
                    if b != NONE {
                        *a = b;
                    }
                }
                for (a, b) in oa.iter_mut().zip(ob) {
                    for (key, v) in b {
                        let e = a.entry(key).or_default();
                        e.0 += v.0;
                        e.1 = e.1.saturating_add(v.1);
                        e.2 = e.2.saturating_add(v.2);
                    }
                }
                (na, oa)
            })
    }
}
