//! Dominators of the strongly reachable graph, and retained sizes from them.
//!
//! A depth-first search from a super-root above every GC root numbers the objects; then
//! semi-NCA (Georgiadis; Lengauer and Tarjan's semidominators with path compression, then
//! each immediate dominator as the nearest ancestor no deeper than the semidominator)
//! finds each object's immediate dominator in near-linear time, with no rounds to
//! converge.
//!
//! Memory is what bounds the analysis of object-heavy dumps, so the arrays are few and
//! short-lived: the search keeps each object's number and in-degree; semi-NCA keeps two
//! numbers per object beside the predecessor lists, and stores each object's tree parent
//! and semidominator in that object's own list once the list is read (the parent is the
//! largest predecessor numbered below it: in a depth-first tree every such predecessor is
//! an ancestor). Retained sizes are summed only for the objects asked about.

use hprof_shrink_core::Control;

use super::edges::Edges;
use super::error::AnalyzeError;
use super::index::{Node, NONE};
use super::offsets::Offsets;

/// A preorder number: 0 is the super-root; objects count from 1.
pub type Pre = u32;

pub struct Dominators {
    /// Node → preorder number (`NONE` when not strongly reachable); for a leaf, the
    /// number of its immediate dominator (see [`Dominators::place`]).
    pre: Vec<Pre>,
    /// Which nodes are leaves: reachable, with no references of their own, not numbered.
    leaf: Bits,
    /// Preorder number → preorder number of its immediate dominator.
    idom: Vec<Pre>,
    /// Strongly reachable objects.
    pub reachable: u64,
    /// References followed.
    pub edges: u64,
    /// Bytes the computation held at its peak.
    pub peak_bytes: u64,
}

/// Retained bytes and objects.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Retained {
    pub bytes: u64,
    pub objects: u64,
}

/// Where a reachable object is in the result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Place {
    /// Numbered: its retained size is that of its number.
    Vertex(Pre),
    /// A leaf under this number: it retains itself alone.
    Leaf(Pre),
}

/// A bit per node.
struct Bits(Vec<u64>);

impl Bits {
    fn new(n: usize) -> Bits {
        Bits(vec![0; n.div_ceil(64)])
    }
    #[inline]
    fn get(&self, i: usize) -> bool {
        self.0[i / 64] & (1 << (i % 64)) != 0
    }
    #[inline]
    fn set(&mut self, i: usize) {
        self.0[i / 64] |= 1 << (i % 64);
    }
}

/// A count per node: a byte each, and the few past 254 (popular objects, classes) in
/// a map: the search holds these beside everything else.
struct Counts {
    small: Vec<u8>,
    big: rustc_hash::FxHashMap<Node, u64>,
}

impl Counts {
    fn new(n: usize) -> Counts {
        Counts {
            small: vec![0; n],
            big: Default::default(),
        }
    }
    #[inline]
    fn add(&mut self, node: Node) {
        let c = &mut self.small[node as usize];
        if *c < u8::MAX {
            *c += 1;
        } else {
            *self.big.entry(node).or_insert(u8::MAX as u64) += 1;
        }
    }
    #[inline]
    fn get(&self, node: Node) -> u64 {
        match self.small[node as usize] {
            // Exactly 255 has no entry: the map takes the count from the 256th on.
            u8::MAX => self.big.get(&node).copied().unwrap_or(u8::MAX as u64),
            c => c as u64,
        }
    }
}

/// The nearest common ancestor of `a` and `b` in the tree `idom`, whose parents have
/// smaller numbers than their children (preorder).
#[inline]
fn intersect(idom: &[Pre], mut a: Pre, mut b: Pre) -> Pre {
    while a != b {
        while a > b {
            a = idom[a as usize];
        }
        while b > a {
            b = idom[b as usize];
        }
    }
    a
}

/// Predecessor lists by preorder number, in one array.
struct Preds {
    starts: Offsets,
    list: Vec<Pre>,
}

impl Preds {
    #[inline]
    fn of(&self, k: usize) -> &[Pre] {
        &self.list[self.starts.run(k)]
    }
    #[inline]
    fn of_mut(&mut self, k: usize) -> &mut [Pre] {
        &mut self.list[self.starts.run(k)]
    }
}

/// What the search yields.
struct Search {
    /// Node → number.
    pre: Vec<Pre>,
    /// How many numbers (the super-root's 0 included).
    numbered: usize,
    /// Which nodes are leaves (their `pre` entry names a dominator, not a number).
    leaf: Bits,
    /// Every number's predecessors (each number has one at least: its tree parent).
    preds: Preds,
    /// Objects without references of their own (mostly primitive arrays): left out of the
    /// numbering. A leaf's immediate dominator is the common dominator of the objects
    /// that reference it, worked out after the rest; `pre` holds the first of those.
    leaves: Vec<Node>,
    /// (leaf, number of another object that references it).
    more: Vec<(Node, Pre)>,
    /// References followed.
    followed: u64,
}

/// A depth-first search from `roots` (all children of the super-root) over `edges`: the
/// preorder numbering (node → number) and the predecessor lists by number. The edges
/// are spent on the way.
fn search(
    nodes: usize,
    roots: &[Node],
    edges: Edges,
    check: &(dyn Fn(usize) -> Result<(), AnalyzeError> + Sync),
) -> Result<Search, AnalyzeError> {
    let is_leaf = |t: Node| edges.of(t).is_empty();
    let mut pre = vec![NONE; nodes];
    // Leaves seen (a GC root is never taken for one: the super-root numbers it).
    let mut leaf = Bits::new(nodes);
    let mut root = Bits::new(nodes);
    for &r in roots {
        root.set(r as usize);
    }
    let mut leaves: Vec<Node> = Vec::new();
    let mut more: Vec<(Node, Pre)> = Vec::new();
    let mut followed = 0u64;
    let mut numbered = 1usize;
    // References into each node (by node), counted as the search meets them.
    let mut indeg = Counts::new(nodes);
    // (node, the number of the object that reached it): visiting an entry pushes all of
    // the node's children, and an entry already visited is dropped when popped. The tree
    // this makes is a depth-first tree (children are visited in reverse order).
    let mut stack: Vec<(Node, Pre)> = roots.iter().rev().map(|&r| (r, 0)).collect();
    for &r in roots {
        indeg.add(r);
    }
    while let Some((v, _)) = stack.pop() {
        if pre[v as usize] != NONE {
            continue;
        }
        let me = numbered as Pre;
        if numbered.is_multiple_of(65536) {
            check(numbered)?;
        }
        pre[v as usize] = me;
        numbered += 1;
        for &t in edges.of(v) {
            if t == v {
                continue;
            }
            followed += 1;
            if leaf.get(t as usize) {
                more.push((t, me));
            } else if is_leaf(t) && !root.get(t as usize) {
                leaf.set(t as usize);
                pre[t as usize] = me;
                leaves.push(t);
            } else {
                indeg.add(t);
                if pre[t as usize] == NONE {
                    stack.push((t, me));
                }
            }
        }
    }
    drop(stack);
    drop(root);
    // From here the references are walked in node order only.
    let rows = edges.into_rows();
    let n = numbered;
    // Numbered (not a leaf, reached).
    let is_vertex = |pre: &[Pre], leaf: &Bits, u: usize| pre[u] != NONE && !leaf.get(u);
    // (number, in-degree) of every numbered node.
    let degrees = || {
        (0..nodes)
            .filter(|&u| is_vertex(&pre, &leaf, u))
            .map(|u| (pre[u] as usize, indeg.get(u as Node)))
    };
    // `ends[k + 1]` starts as the end of k's list; each entry is put just below it and
    // moves it down, so it ends as the list's start (one array, not two).
    let total: u64 = degrees().map(|(_, d)| d).sum();
    let mut ends = Offsets::zeros(n + 1, total);
    for (k, d) in degrees() {
        ends.set(k + 1, d);
    }
    drop(indeg);
    ends.accumulate();
    let mut list = vec![0 as Pre; total as usize];
    let mut put = |ends: &mut Offsets, target: usize, from: Pre| {
        let at = ends.decrement(target + 1);
        list[at as usize] = from;
    };
    for &r in roots {
        put(&mut ends, pre[r as usize] as usize, 0);
    }
    rows.for_each(|u, refs| {
        let u = u as usize;
        if u.is_multiple_of(1 << 20) {
            check(u)?;
        }
        if !is_vertex(&pre, &leaf, u) {
            return Ok::<(), AnalyzeError>(());
        }
        let k = pre[u];
        for &t in refs {
            if t as usize != u && !leaf.get(t as usize) {
                put(&mut ends, pre[t as usize] as usize, k);
            }
        }
        Ok(())
    })?;
    drop(rows);
    ends.shift_append(total);
    let starts = ends;
    Ok(Search {
        pre,
        numbered: n,
        leaf,
        preds: Preds { starts, list },
        leaves,
        more,
        followed,
    })
}

/// Semi-NCA over a depth-first tree: the immediate dominator of every number. Each list
/// of `preds` is overwritten once read: the parent first, then the semidominator.
fn semi_nca(preds: &mut Preds, n: usize) -> Vec<Pre> {
    let mut label: Vec<Pre> = (0..n as Pre).collect();
    // The forest of numbers already processed (those above `w`), each linked to its tree
    // parent when processed, with paths compressed as they are walked.
    let mut anc: Vec<Pre> = vec![0; n];
    let mut path: Vec<Pre> = Vec::new();
    for w in (1..n).rev() {
        let mut s = w as Pre;
        let mut parent = 0;
        for &v in preds.of(w) {
            let cand = if (v as usize) < w {
                parent = parent.max(v);
                v
            } else {
                compress(&mut anc, &mut label, &mut path, v, w as Pre);
                label[v as usize]
            };
            s = s.min(cand);
        }
        label[w] = s;
        anc[w] = parent;
        // The list is not read again: it keeps what the second pass needs. With one
        // predecessor, that is the parent, and the semidominator too.
        let run = preds.of_mut(w);
        run[0] = parent;
        if let Some(second) = run.get_mut(1) {
            *second = s;
        }
    }
    drop(label);
    // The immediate dominator is the nearest tree ancestor not below the semidominator;
    // ancestors' are final first, in preorder.
    let mut idom = anc;
    idom[0] = 0;
    for w in 1..n {
        let run = preds.of(w);
        let semi = run.get(1).copied().unwrap_or(run[0]);
        let mut d = run[0];
        while d > semi {
            d = idom[d as usize];
        }
        idom[w] = d;
    }
    idom
}

/// Compresses the forest path from `v` up to the last number above `w`, leaving in
/// `label[v]` the smallest semidominator on it.
#[inline]
fn compress(anc: &mut [Pre], label: &mut [Pre], path: &mut Vec<Pre>, v: Pre, w: Pre) {
    let mut x = v;
    while anc[x as usize] > w {
        path.push(x);
        x = anc[x as usize];
    }
    // `x` is the topmost on the path still above `w`; walk back down.
    while let Some(y) = path.pop() {
        let a = anc[y as usize];
        if a > w {
            if label[a as usize] < label[y as usize] {
                label[y as usize] = label[a as usize];
            }
            anc[y as usize] = anc[a as usize];
        }
    }
}

impl Dominators {
    /// `edges` are spent making the predecessor lists.
    pub fn compute(
        edges: Edges,
        nodes: usize,
        roots: &[Node],
        control: &Control<'_>,
    ) -> Result<Dominators, AnalyzeError> {
        let check = |_: usize| control.check().map_err(|_| AnalyzeError::Cancelled);
        let found = search(nodes, roots, edges, &check)?;
        control.check()?;
        Ok(Dominators::from_search(found))
    }

    /// Semi-NCA on what the search found.
    fn from_search(found: Search) -> Dominators {
        let Search {
            mut pre,
            numbered,
            leaf,
            mut preds,
            leaves,
            more,
            followed,
        } = found;
        let peak_bytes = pre.len() as u64 * 4 // pre
            + numbered as u64 * 4 * 2 // label, anc
            + preds.starts.bytes()
            + preds.list.len() as u64 * 4;
        let idom = semi_nca(&mut preds, numbered);
        drop(preds);
        for (t, p) in more {
            pre[t as usize] = intersect(&idom, pre[t as usize], p);
        }
        Dominators {
            pre,
            leaf,
            idom,
            reachable: (numbered - 1 + leaves.len()) as u64,
            edges: followed,
            peak_bytes,
        }
    }

    /// A reachable node's place: `Vertex(number)`, or `Leaf(its dominator's number)`.
    pub fn place(&self, node: Node) -> Option<Place> {
        match self.pre[node as usize] {
            NONE => None,
            p if self.leaf.get(node as usize) => Some(Place::Leaf(p)),
            p => Some(Place::Vertex(p)),
        }
    }

    /// What each of `wanted` retains (itself and everything it dominates), and what all
    /// reachable objects come to. `size(state, node)` gives a node's shallow size; each
    /// thread keeps a `state` from `init`, and `merge` joins them (the caller's
    /// histogram). Consumes the dominator tree: the sums need no array of their own.
    pub fn retained<S: Send>(
        self,
        wanted: &[Node],
        init: impl Fn() -> S + Sync + Send,
        size: impl Fn(&mut S, Node) -> u64 + Sync + Send,
        merge: impl Fn(S, S) -> S + Sync + Send,
    ) -> (Vec<Retained>, Retained, S) {
        use rayon::prelude::*;
        let places: Vec<Option<Place>> = wanted.iter().map(|&w| self.place(w)).collect();
        let Dominators {
            pre,
            leaf: _,
            mut idom,
            ..
        } = self;
        // The numbers sums are kept for: the super-root (everything) and each wanted one.
        let mut slots: rustc_hash::FxHashMap<Pre, usize> = Default::default();
        slots.insert(0, 0);
        let mut marked = Bits::new(idom.len());
        marked.set(0);
        for place in &places {
            if let Some(Place::Vertex(p)) = *place {
                let next = slots.len();
                slots.entry(p).or_insert(next);
                marked.set(p as usize);
            }
        }
        // Each number's dominator becomes its nearest marked dominator, in place: parents
        // come before children in preorder.
        for k in 1..idom.len() {
            let d = idom[k];
            if !marked.get(d as usize) {
                idom[k] = idom[d as usize];
            }
        }
        let near = idom;
        let into = |k: Pre| {
            if marked.get(k as usize) {
                k
            } else {
                near[k as usize]
            }
        };
        let slot = |k: Pre| if k == 0 { 0 } else { slots[&k] };
        const RUN: usize = 1 << 16;
        let (mut sums, state) = (0..pre.len().div_ceil(RUN))
            .into_par_iter()
            .map(|c| {
                let mut state = init();
                let mut sums = vec![Retained::default(); slots.len()];
                let first = c * RUN;
                let run = &pre[first..((c + 1) * RUN).min(pre.len())];
                for (u, &p) in (first..).zip(run) {
                    if p == NONE {
                        continue;
                    }
                    // A numbered object goes into itself when marked, else into its
                    // nearest marked dominator; a leaf's entry is its dominator, which it
                    // goes into the same way.
                    let to = into(p);
                    let bytes = size(&mut state, u as Node);
                    let s = &mut sums[slot(to)];
                    s.bytes += bytes;
                    s.objects += 1;
                }
                (sums, state)
            })
            .reduce(
                || (vec![Retained::default(); slots.len()], init()),
                |(mut a, sa), (b, sb)| {
                    for (x, y) in a.iter_mut().zip(b) {
                        x.bytes += y.bytes;
                        x.objects += y.objects;
                    }
                    (a, merge(sa, sb))
                },
            );
        // Marked numbers into their nearest marked dominators, children first.
        let mut order: Vec<Pre> = slots.keys().copied().filter(|&k| k != 0).collect();
        order.sort_unstable_by(|a, b| b.cmp(a));
        for k in order {
            let from = sums[slot(k)];
            let to = &mut sums[slot(near[k as usize])];
            to.bytes += from.bytes;
            to.objects += from.objects;
        }
        let mut own = init();
        let of = wanted
            .iter()
            .zip(places)
            .map(|(&w, place)| match place {
                None => Retained::default(),
                Some(Place::Leaf(_)) => Retained {
                    bytes: size(&mut own, w),
                    objects: 1,
                },
                Some(Place::Vertex(p)) => sums[slot(p)],
            })
            .collect();
        (of, sums[0], state)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn compute(succ: &[Vec<u32>], roots: &[u32]) -> Dominators {
        let found = search(succ.len(), roots, Edges::from_lists(succ), &|_| Ok(())).unwrap();
        Dominators::from_search(found)
    }

    /// Immediate dominators (as node numbers) of a graph given as successor lists, the
    /// super-root's children being `roots`: the search and semi-NCA the analyzer runs.
    fn dominators(succ: &[Vec<u32>], roots: &[u32]) -> Vec<Option<u32>> {
        let d = compute(succ, roots);
        let mut vertex = vec![NONE; d.idom.len()];
        for (u, &k) in d.pre.iter().enumerate() {
            if k != NONE && !d.leaf.get(u) {
                vertex[k as usize] = u as u32;
            }
        }
        let name = |k: Pre| if k == 0 { NONE } else { vertex[k as usize] };
        (0..succ.len() as u32)
            .map(|v| match d.place(v)? {
                Place::Leaf(k) => Some(name(k)),
                Place::Vertex(k) => Some(name(d.idom[k as usize])),
            })
            .collect()
    }

    /// By the definition: d dominates v when v cannot be reached without d.
    fn by_definition(succ: &[Vec<u32>], roots: &[u32]) -> Vec<Option<u32>> {
        let n = succ.len();
        let reach = |skip: u32| {
            let mut seen = vec![false; n];
            let mut stack: Vec<u32> = roots.iter().copied().filter(|&r| r != skip).collect();
            for &r in &stack {
                seen[r as usize] = true;
            }
            while let Some(u) = stack.pop() {
                for &v in &succ[u as usize] {
                    if v != skip && !seen[v as usize] {
                        seen[v as usize] = true;
                        stack.push(v);
                    }
                }
            }
            seen
        };
        let all = reach(NONE);
        let without: Vec<Vec<bool>> = (0..n as u32).map(reach).collect();
        (0..n)
            .map(|v| {
                if !all[v] {
                    return None;
                }
                let strict: Vec<u32> = (0..n as u32)
                    .filter(|&d| d as usize != v && all[d as usize] && !without[d as usize][v])
                    .collect();
                // The immediate one is dominated by every other strict dominator.
                Some(
                    strict
                        .iter()
                        .copied()
                        .find(|&d| {
                            strict
                                .iter()
                                .all(|&o| o == d || !without[o as usize][d as usize])
                        })
                        .unwrap_or(NONE),
                )
            })
            .collect()
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(500))]
        #[test]
        fn semi_nca_finds_the_dominators(
            edges in proptest::collection::vec((0u32..20, 0u32..20), 0..60),
            roots in proptest::collection::btree_set(0u32..20, 1..4),
        ) {
            let mut succ = vec![Vec::new(); 20];
            for (a, b) in edges {
                succ[a as usize].push(b);
            }
            let roots: Vec<u32> = roots.into_iter().collect();
            prop_assert_eq!(dominators(&succ, &roots), by_definition(&succ, &roots));
        }

        #[test]
        fn retained_sizes_are_what_each_object_dominates(
            edges in proptest::collection::vec((0u32..20, 0u32..20), 0..60),
            roots in proptest::collection::btree_set(0u32..20, 1..4),
            wanted in proptest::collection::vec(0u32..20, 0..6),
        ) {
            let mut succ = vec![Vec::new(); 20];
            for (a, b) in edges {
                succ[a as usize].push(b);
            }
            let roots: Vec<u32> = roots.into_iter().collect();
            let idom = by_definition(&succ, &roots);
            // Node v weighs v + 1 bytes; w retains v when w is v or dominates it.
            let dominates = |w: u32, mut v: u32| loop {
                if v == w {
                    return true;
                }
                match idom[v as usize] {
                    Some(d) if d != NONE => v = d,
                    _ => return false,
                }
            };
            let expect = |w: u32| {
                let mut r = Retained::default();
                for v in 0..20u32 {
                    if idom[w as usize].is_some() && idom[v as usize].is_some() && dominates(w, v) {
                        r.bytes += v as u64 + 1;
                        r.objects += 1;
                    }
                }
                r
            };
            let (of, all, sized) = compute(&succ, &roots).retained(
                &wanted,
                || 0u64,
                |n: &mut u64, v| {
                    *n += 1;
                    v as u64 + 1
                },
                |a, b| a + b,
            );
            let reachable: Vec<u32> = (0..20).filter(|&v| idom[v as usize].is_some()).collect();
            prop_assert_eq!(sized, reachable.len() as u64);
            prop_assert_eq!(all, Retained {
                bytes: reachable.iter().map(|&v| v as u64 + 1).sum(),
                objects: reachable.len() as u64,
            });
            for (w, r) in wanted.iter().zip(of) {
                prop_assert_eq!(r, expect(*w), "node {}", w);
            }
        }
    }

    #[test]
    fn counts_are_exact_around_a_byte() {
        let mut c = Counts::new(4);
        for (node, n) in [(0, 254u64), (1, 255), (2, 256), (3, 1000)] {
            for _ in 0..n {
                c.add(node);
            }
        }
        assert_eq!(
            (0..4).map(|n| c.get(n)).collect::<Vec<_>>(),
            vec![254, 255, 256, 1000]
        );
    }

    #[test]
    fn an_object_referenced_exactly_255_times_has_its_dominator() {
        // 255 objects, each a root, all referencing object 255: the super-root dominates it.
        let mut succ: Vec<Vec<u32>> = (0..255).map(|_| vec![255, 256]).collect();
        succ.push(vec![256]);
        succ.push(Vec::new());
        let roots: Vec<u32> = (0..255).collect();
        assert_eq!(dominators(&succ, &roots)[255], Some(NONE));
    }

    #[test]
    fn a_diamond_a_loop_and_two_roots() {
        // 0 → 1 → {2, 3} → 4 → 1 (back), 4 → 5; root 6 → 5 too.
        let succ = vec![
            vec![1],
            vec![2, 3],
            vec![4],
            vec![4],
            vec![1, 5],
            vec![],
            vec![5],
        ];
        let d = dominators(&succ, &[0, 6]);
        assert_eq!(
            d,
            vec![
                Some(NONE),
                Some(0),
                Some(1),
                Some(1),
                Some(1),
                Some(NONE),
                Some(NONE)
            ]
        );
    }
}
