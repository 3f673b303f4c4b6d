//! Dominators of the strongly reachable graph, and retained sizes from them.
//!
//! A depth-first search from a super-root above every GC root numbers the objects; then
//! semi-NCA (Georgiadis; Lengauer and Tarjan's semidominators with path compression, then
//! each immediate dominator as the nearest ancestor no deeper than the semidominator)
//! finds each object's immediate dominator in near-linear time, with no rounds to
//! converge. It keeps five numbers per reachable object and one per reference (the
//! predecessor lists); the graph itself is read back from the mapping.

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
    pub pre: Vec<Pre>,
    /// The reachable objects with no references of their own, not numbered.
    pub leaves: Vec<Node>,
    /// Preorder number → node (`NONE` at 0).
    pub vertex: Vec<Node>,
    /// Preorder number → preorder number of its immediate dominator.
    pub idom: Vec<Pre>,
    /// References followed.
    pub edges: u64,
    /// Bytes the computation held at its peak.
    pub peak_bytes: u64,
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
}

/// What the search yields.
struct Search {
    /// Node → number.
    pre: Vec<Pre>,
    /// Number → node.
    vertex: Vec<Node>,
    /// Number → its tree parent's number.
    parent: Vec<Pre>,
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

/// A depth-first search from `roots` (all children of the super-root): the preorder
/// numbering (node → number, number → node), each number's tree parent, and the
/// predecessor lists by number. `succ(node, f)` calls `f` with each strong reference.
fn search(
    nodes: usize,
    roots: &[Node],
    succ: impl Fn(Node, &mut dyn FnMut(Node)) + Sync,
    is_leaf: impl Fn(Node) -> bool,
    check: &(dyn Fn(usize) -> Result<(), AnalyzeError> + Sync),
) -> Result<Search, AnalyzeError> {
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
    let mut vertex: Vec<Node> = vec![NONE];
    let mut parent: Vec<Pre> = vec![0];
    // References into each node (by node), counted as the search meets them.
    let mut indeg = vec![0u32; nodes];
    // (node, the number of the object that reached it): visiting an entry pushes all of
    // the node's children, and an entry already visited is dropped when popped. The tree
    // this makes is a depth-first tree (children are visited in reverse order).
    let mut stack: Vec<(Node, Pre)> = roots.iter().rev().map(|&r| (r, 0)).collect();
    for &r in roots {
        indeg[r as usize] += 1;
    }
    while let Some((v, p)) = stack.pop() {
        if pre[v as usize] != NONE {
            continue;
        }
        let me = vertex.len() as Pre;
        if (me as usize).is_multiple_of(65536) {
            check(me as usize)?;
        }
        pre[v as usize] = me;
        vertex.push(v);
        parent.push(p);
        succ(v, &mut |t| {
            if t == v {
                return;
            }
            followed += 1;
            if leaf.get(t as usize) {
                more.push((t, me));
            } else if is_leaf(t) && !root.get(t as usize) {
                leaf.set(t as usize);
                pre[t as usize] = me;
                leaves.push(t);
            } else {
                indeg[t as usize] += 1;
                if pre[t as usize] == NONE {
                    stack.push((t, me));
                }
            }
        });
    }
    drop(stack);
    drop(root);
    let n = vertex.len();
    // `ends[k + 1]` starts as the end of k's list; each entry is put just below it and
    // moves it down, so it ends as the list's start (one array, not two).
    let total: u64 = vertex[1..].iter().map(|&v| indeg[v as usize] as u64).sum();
    let mut ends = Offsets::zeros(n + 1, total);
    let mut at = 0u64;
    for (k, &v) in vertex.iter().enumerate().skip(1) {
        at += indeg[v as usize] as u64;
        ends.set(k + 1, at);
    }
    drop(indeg);
    let mut list = vec![0 as Pre; total as usize];
    let mut put = |ends: &mut Offsets, target: usize, from: Pre| {
        let at = ends.decrement(target + 1);
        list[at as usize] = from;
    };
    for &r in roots {
        put(&mut ends, pre[r as usize] as usize, 0);
    }
    for (k, &u) in vertex.iter().enumerate().skip(1) {
        if k.is_multiple_of(65536) {
            check(k)?;
        }
        succ(u, &mut |t| {
            if t != u && !leaf.get(t as usize) {
                put(&mut ends, pre[t as usize] as usize, k as Pre);
            }
        });
    }
    ends.shift_append(total);
    let starts = ends;
    Ok(Search {
        pre,
        vertex,
        parent,
        preds: Preds { starts, list },
        leaves,
        more,
        followed,
    })
}

/// Semi-NCA over a depth-first tree: the immediate dominator of every number.
fn semi_nca(parent: &[Pre], preds: &Preds) -> Vec<Pre> {
    let n = parent.len();
    let mut semi: Vec<Pre> = (0..n as Pre).collect();
    let mut label: Vec<Pre> = (0..n as Pre).collect();
    // The forest of numbers already processed (those above `w`), each linked to its tree
    // parent, with paths compressed as they are walked.
    let mut anc: Vec<Pre> = parent.to_vec();
    let mut path: Vec<Pre> = Vec::new();
    for w in (1..n).rev() {
        let mut s = semi[w];
        for &v in preds.of(w) {
            let cand = if (v as usize) <= w {
                v
            } else {
                compress(&mut anc, &mut label, &mut path, v, w as Pre);
                label[v as usize]
            };
            s = s.min(cand);
        }
        semi[w] = s;
        label[w] = s;
    }
    drop(label);
    // The immediate dominator is the nearest tree ancestor not below the semidominator;
    // ancestors' are final first, in preorder.
    let mut idom = anc;
    idom[0] = 0;
    for w in 1..n {
        let mut d = parent[w];
        while d > semi[w] {
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
    /// `edges` are dropped as soon as the predecessor lists are made.
    pub fn compute(
        edges: Edges,
        nodes: usize,
        roots: &[Node],
        control: &Control<'_>,
    ) -> Result<Dominators, AnalyzeError> {
        let check = |_: usize| control.check().map_err(|_| AnalyzeError::Cancelled);
        let Search {
            mut pre,
            vertex,
            parent,
            preds,
            leaves,
            more,
            followed,
        } = search(
            nodes,
            roots,
            |node, f| edges.of(node).iter().for_each(|&t| f(t)),
            |node| edges.of(node).is_empty(),
            &check,
        )?;
        let v = vertex.len() as u64;
        let peak_bytes = nodes as u64 * 4 // pre
            + v * 4 * 5 // vertex, parent, semi, label, anc
            + preds.starts.bytes()
            + preds.list.len() as u64 * 4;
        drop(edges);
        control.check()?;
        let idom = semi_nca(&parent, &preds);
        for (t, p) in more {
            pre[t as usize] = intersect(&idom, pre[t as usize], p);
        }
        Ok(Dominators {
            pre,
            vertex,
            idom,
            leaves,
            edges: followed,
            peak_bytes,
        })
    }

    /// A reachable node's place: `Vertex(number)`, or `Leaf(its dominator's number)`.
    pub fn place(&self, node: Node) -> Option<Place> {
        let p = self.pre[node as usize];
        if p == NONE {
            return None;
        }
        // A leaf's entry names another number, whose vertex is not the leaf.
        if self.vertex.get(p as usize) == Some(&node) {
            Some(Place::Vertex(p))
        } else {
            Some(Place::Leaf(p))
        }
    }

    /// Retained bytes and object counts of every number: its shallow size plus
    /// everything it dominates. `shallow` gives each number's own size, and becomes the
    /// retained bytes; `leaf_sizes` the leaves' (in the order of `leaves`).
    pub fn retained(&self, shallow: Vec<u64>, leaf_sizes: &[u64]) -> (Vec<u64>, Vec<u32>) {
        let mut bytes = shallow;
        let mut count = vec![1u32; bytes.len()];
        count[0] = 0;
        for (&leaf, &size) in self.leaves.iter().zip(leaf_sizes) {
            let d = self.pre[leaf as usize] as usize;
            bytes[d] += size;
            count[d] = count[d].saturating_add(1);
        }
        // Children have larger preorder numbers than their dominators.
        for k in (1..self.idom.len()).rev() {
            let d = self.idom[k] as usize;
            bytes[d] += bytes[k];
            count[d] = count[d].saturating_add(count[k]);
        }
        (bytes, count)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Immediate dominators (as node numbers) of a graph given as successor lists, the
    /// super-root's children being `roots`: the search and semi-NCA the analyzer runs.
    fn dominators(succ: &[Vec<u32>], roots: &[u32]) -> Vec<Option<u32>> {
        let Search {
            mut pre,
            vertex,
            parent,
            preds,
            more,
            ..
        } = search(
            succ.len(),
            roots,
            |n, f| succ[n as usize].iter().for_each(|&t| f(t)),
            |n| succ[n as usize].is_empty(),
            &|_| Ok(()),
        )
        .unwrap();
        let idom = semi_nca(&parent, &preds);
        for (t, p) in more {
            pre[t as usize] = intersect(&idom, pre[t as usize], p);
        }
        let name = |d: Pre| if d == 0 { NONE } else { vertex[d as usize] };
        (0..succ.len())
            .map(|v| match pre[v] {
                NONE => None,
                // A leaf: its entry is its dominator's number.
                k if vertex[k as usize] != v as u32 => Some(name(k)),
                k => Some(name(idom[k as usize])),
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
