//! Dominators of the strongly reachable graph, and retained sizes from them.
//!
//! A depth-first search from a super-root above every GC root numbers the objects; then
//! semi-NCA (Georgiadis; Lengauer and Tarjan's semidominators with path compression, then
//! each immediate dominator as the nearest ancestor no deeper than the semidominator)
//! finds each object's immediate dominator in near-linear time, with no rounds to
//! converge.
//!
//! Memory is what bounds the analysis of object-heavy dumps, so the arrays are few and
//! short-lived. The search gives each object its number and its tree parent, and lists
//! only the references other than the tree's, as it meets them: in most heaps most
//! objects are referenced once, so there are no predecessor lists to build. Semi-NCA
//! keeps two numbers per object beside those, and stores each semidominator over the
//! first of its object's other references once read. Retained sizes are summed only for
//! the objects asked about.

use hprof_shrink_core::Control;

use super::edges::Edges;
use super::error::AnalyzeError;
use super::index::{Node, NONE};
use super::spare::Spare;
use rayon::slice::ParallelSliceMut;

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

/// What the search yields.
struct Search {
    /// Node → number.
    pre: Vec<Pre>,
    /// Which nodes are leaves (their `pre` entry names a dominator, not a number).
    leaf: Bits,
    /// Number → the number of its depth-first tree parent (0, the super-root, for 0).
    parent: Vec<Pre>,
    /// Every other reference between numbers, as (to, from), sorted: most objects are
    /// referenced by their tree parent alone, and need nothing here.
    others: Vec<(Pre, Pre)>,
    /// The arrays of the references, for semi-NCA's.
    spare: Spare,
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
/// preorder numbering (node → number), each number's tree parent and every other
/// reference between numbers. Each reference is met once, so the predecessors come out
/// of the search itself, and the edges go as it ends.
fn search(
    nodes: usize,
    roots: &[Node],
    edges: Edges,
    mut spare: Spare,
    check: &(dyn Fn(usize) -> Result<(), AnalyzeError> + Sync),
) -> Result<Search, AnalyzeError> {
    let is_leaf = |t: Node| edges.of(t).is_empty();
    let mut pre = spare.take(nodes, NONE);
    // Leaves seen (a GC root is never taken for one: the super-root numbers it).
    let mut leaf = Bits::new(nodes);
    let mut root = Bits::new(nodes);
    for &r in roots {
        root.set(r as usize);
    }
    let mut leaves: Vec<Node> = Vec::new();
    let mut more: Vec<(Node, Pre)> = Vec::new();
    let mut others: Vec<(Pre, Pre)> = Vec::new();
    let mut followed = 0u64;
    // Reserved, not touched: only the numbers given take memory.
    let mut parent: Vec<Pre> = spare.with_capacity(nodes + 1);
    parent.push(0);
    // (node, the number of the object that reached it): visiting an entry pushes all of
    // the node's children not numbered yet, and an entry already numbered when popped is
    // a reference other than the tree's. The entry that numbers a node is the last pushed
    // for it, from the largest number among its predecessors visited so far: a
    // depth-first tree (children are visited in reverse order).
    let mut stack: Vec<(Node, Pre)> = roots.iter().rev().map(|&r| (r, 0)).collect();
    while let Some((v, from)) = stack.pop() {
        let seen = pre[v as usize];
        if seen != NONE {
            others.push((seen, from));
            continue;
        }
        let me = parent.len() as Pre;
        if parent.len().is_multiple_of(65536) {
            check(parent.len())?;
        }
        pre[v as usize] = me;
        parent.push(from);
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
                match pre[t as usize] {
                    NONE => stack.push((t, me)),
                    k => others.push((k, me)),
                }
            }
        }
    }
    drop(stack);
    drop(root);
    edges.into_spare(&mut spare);
    check(parent.len())?;
    others.par_sort_unstable();
    Ok(Search {
        pre,
        leaf,
        parent,
        others,
        spare,
        leaves,
        more,
        followed,
    })
}

/// Semi-NCA over a depth-first tree: the immediate dominator of every number, given each
/// number's tree parent and the other references between numbers as (to, from), sorted.
/// The first reference into each number is overwritten with its semidominator once read.
fn semi_nca(parent: &[Pre], others: &mut [(Pre, Pre)], spare: &mut Spare) -> Vec<Pre> {
    let n = parent.len();
    let mut label = spare.with_capacity(n);
    label.extend(0..n as Pre);
    // The forest of numbers already processed (those above `w`), each linked to its tree
    // parent when processed, with paths compressed as they are walked.
    let mut anc = spare.take(n, 0);
    let mut path: Vec<Pre> = Vec::new();
    // `others[..end]` holds the references into numbers up to `w`.
    let mut end = others.len();
    for w in (1..n).rev() {
        let p = parent[w];
        let mut start = end;
        while start > 0 && others[start - 1].0 as usize == w {
            start -= 1;
        }
        // The parent is numbered below `w`: a candidate as it is.
        let mut s = p;
        for &(_, v) in &others[start..end] {
            let cand = if (v as usize) < w {
                v
            } else {
                compress(&mut anc, &mut label, &mut path, v, w as Pre);
                label[v as usize]
            };
            s = s.min(cand);
        }
        label[w] = s;
        anc[w] = p;
        if start < end {
            others[start].1 = s;
        }
        end = start;
    }
    drop(label);
    // The immediate dominator is the nearest tree ancestor not below the semidominator;
    // ancestors' are final first, in preorder. A number referenced by its parent alone
    // has the parent for both.
    let mut idom = anc;
    idom[0] = 0;
    let mut at = 0;
    for w in 1..n {
        let mut semi = parent[w];
        if others.get(at).is_some_and(|o| o.0 as usize == w) {
            semi = others[at].1;
            while others.get(at).is_some_and(|o| o.0 as usize == w) {
                at += 1;
            }
        }
        let mut d = parent[w];
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
        spare: Spare,
        control: &Control<'_>,
    ) -> Result<Dominators, AnalyzeError> {
        let check = |_: usize| control.check().map_err(|_| AnalyzeError::Cancelled);
        let found = search(nodes, roots, edges, spare, &check)?;
        control.check()?;
        Ok(Dominators::from_search(found))
    }

    /// Semi-NCA on what the search found.
    fn from_search(found: Search) -> Dominators {
        let Search {
            mut pre,
            leaf,
            parent,
            mut others,
            mut spare,
            leaves,
            more,
            followed,
        } = found;
        let numbered = parent.len();
        let peak_bytes = pre.len() as u64 * 4 // pre
            + numbered as u64 * 4 * 3 // parent, label, anc
            + others.len() as u64 * 8;
        let idom = semi_nca(&parent, &mut others, &mut spare);
        drop((parent, others, spare));
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
    /// reachable objects come to, given the shallow bytes of all objects in the dump.
    /// Only the objects the sums need are looked at: `size(node)` gives the shallow size
    /// of one retained by a wanted object; `gone(state, node)` that of one not reachable
    /// (each thread keeps a `state` from `init`, joined by `merge`: the caller's tally of
    /// what the dump holds beyond the reachable). The rest are counted, not sized: most
    /// objects go into the super-root's sum, whose bytes are `total_bytes` less the others'.
    /// Consumes the dominator tree: the sums need no array of their own.
    pub fn retained<S: Send>(
        self,
        wanted: &[Node],
        total_bytes: u64,
        size: impl Fn(Node) -> u64 + Sync,
        init: impl Fn() -> S + Sync + Send,
        gone: impl Fn(&mut S, Node) -> u64 + Sync,
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
        // What the runs find: the sums by slot, and the bytes of the unreachable.
        let empty = || (vec![Retained::default(); slots.len()], 0u64, init());
        const RUN: usize = 1 << 16;
        let (mut sums, unreachable, state) = (0..pre.len().div_ceil(RUN))
            .into_par_iter()
            .map(|c| {
                let (mut sums, mut unreachable, mut state) = empty();
                let first = c * RUN;
                let run = &pre[first..((c + 1) * RUN).min(pre.len())];
                for (u, &p) in (first..).zip(run) {
                    if p == NONE {
                        unreachable += gone(&mut state, u as Node);
                        continue;
                    }
                    // A numbered object goes into itself when marked, else into its
                    // nearest marked dominator; a leaf's entry is its dominator, which it
                    // goes into the same way.
                    let s = slot(into(p));
                    if s != 0 {
                        sums[s].bytes += size(u as Node);
                    }
                    sums[s].objects += 1;
                }
                (sums, unreachable, state)
            })
            .reduce(empty, |(mut a, ua, sa), (b, ub, sb)| {
                for (x, y) in a.iter_mut().zip(b) {
                    x.bytes += y.bytes;
                    x.objects += y.objects;
                }
                (a, ua + ub, merge(sa, sb))
            });
        // The super-root's own: all the reachable but what went into the wanted ones.
        let wanted_bytes: u64 = sums[1..].iter().map(|r| r.bytes).sum();
        sums[0].bytes = total_bytes
            .saturating_sub(unreachable)
            .saturating_sub(wanted_bytes);
        // Marked numbers into their nearest marked dominators, children first.
        let mut order: Vec<Pre> = slots.keys().copied().filter(|&k| k != 0).collect();
        order.sort_unstable_by(|a, b| b.cmp(a));
        for k in order {
            let from = sums[slot(k)];
            let to = &mut sums[slot(near[k as usize])];
            to.bytes += from.bytes;
            to.objects += from.objects;
        }
        let of = wanted
            .iter()
            .zip(places)
            .map(|(&w, place)| match place {
                None => Retained::default(),
                Some(Place::Leaf(_)) => Retained {
                    bytes: size(w),
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
        let found = search(
            succ.len(),
            roots,
            Edges::from_lists(succ),
            Spare::default(),
            &|_| Ok(()),
        )
        .unwrap();
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
            // Every object is sized once at most: an unreachable one as gone, a reachable
            // one only when a wanted one retains it.
            let sized = std::sync::atomic::AtomicUsize::new(0);
            let (of, all, gone) = compute(&succ, &roots).retained(
                &wanted,
                (1..=20).sum(),
                |v| {
                    sized.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    v as u64 + 1
                },
                Vec::new,
                |g: &mut Vec<u32>, v| {
                    g.push(v);
                    v as u64 + 1
                },
                |mut a, b| {
                    a.extend(b);
                    a
                },
            );
            let reachable: Vec<u32> = (0..20).filter(|&v| idom[v as usize].is_some()).collect();
            let unreachable: Vec<u32> = (0..20).filter(|&v| idom[v as usize].is_none()).collect();
            prop_assert_eq!(gone, unreachable);
            let retained_by_wanted = (0..20u32)
                .filter(|&v| wanted.iter().any(|&w| idom[w as usize].is_some() && idom[v as usize].is_some() && dominates(w, v)))
                .count();
            prop_assert!(sized.into_inner() <= retained_by_wanted + wanted.len());
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
