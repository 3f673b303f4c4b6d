//! Every object's strong references as node numbers, in one array: built once, on all
//! threads (each reference's id looked up in the index once), so that the path search
//! and the depth-first search that follow walk plain numbers. 4 bytes a reference and 8
//! an object.

use rayon::prelude::*;

use crate::base::offsets::{split_at_lengths, Offsets};
use crate::base::spare::Spare;
use crate::heap::graph::{Broken, Graph};
use crate::heap::index::Node;

pub struct Edges {
    /// Node → where its references start in `targets` (one more at the end).
    starts: Offsets,
    targets: Vec<Node>,
}

/// One run of nodes' references, and what the caller's visit made of those nodes.
struct Chunk<S> {
    degrees: Vec<u32>,
    targets: Vec<Node>,
    seen: S,
}

impl Edges {
    /// Every object's references, and `visit(state, node, class key, shallow size, why its
    /// references could not be read, its references)` (see [`Graph::for_each_ref`]) called
    /// on every node in the same pass, from the same look at its record: each run of nodes
    /// has a state from `init(its length)`, and the runs' states are joined in node order
    /// by `merge`.
    pub fn build<S: Send>(
        g: &Graph<'_, '_>,
        init: impl Fn(usize) -> S + Sync,
        visit: impl Fn(&mut S, Node, (u8, u64), u64, Option<Broken>, &[Node]) + Sync,
        merge: impl Fn(S, S) -> S,
    ) -> (Edges, S) {
        let n = g.ix.len();
        let threads = rayon::current_num_threads().max(1);
        let per = (n / (threads * 16)).max(1 << 14);
        let chunks: Vec<Chunk<S>> = (0..n.div_ceil(per))
            .into_par_iter()
            .map(|c| {
                let range = c * per..((c + 1) * per).min(n);
                let mut chunk = Chunk {
                    degrees: Vec::with_capacity(range.len()),
                    targets: Vec::with_capacity(range.len() * 2),
                    seen: init(range.len()),
                };
                for node in range {
                    let before = chunk.targets.len();
                    let (key, size, unread) =
                        g.for_each_ref(node as Node, |t| chunk.targets.push(t));
                    chunk.degrees.push((chunk.targets.len() - before) as u32);
                    let refs = &chunk.targets[before..];
                    visit(&mut chunk.seen, node as Node, key, size, unread, refs);
                }
                chunk
            })
            .collect();
        let total: usize = chunks.iter().map(|c| c.targets.len()).sum();
        let mut seen = init(0);
        let mut runs = Vec::with_capacity(chunks.len());
        for chunk in chunks {
            seen = merge(seen, chunk.seen);
            runs.push((chunk.degrees, chunk.targets));
        }
        let (starts, targets) = join(runs, n, total);
        (Edges { starts, targets }, seen)
    }

    /// The references out of `node`.
    #[inline]
    pub fn of(&self, node: Node) -> &[Node] {
        &self.targets[self.starts.run(node as usize)]
    }

    pub fn len(&self) -> u64 {
        self.targets.len() as u64
    }

    /// Edges from successor lists (tests).
    #[cfg(test)]
    pub fn from_lists(lists: &[Vec<Node>]) -> Edges {
        let total: usize = lists.iter().map(Vec::len).sum();
        let mut starts = Offsets::zeros(lists.len() + 1, total as u64);
        let mut at = 0;
        for (i, l) in lists.iter().enumerate() {
            at += l.len();
            starts.set(i + 1, at as u64);
        }
        Edges {
            starts,
            targets: lists.concat(),
        }
    }

    /// Ends the references, keeping their arrays for the next step.
    pub fn into_spare(self, spare: &mut Spare) {
        spare.give(self.targets);
        if let Offsets::Narrow(starts) = self.starts {
            spare.give(starts);
        }
    }

    /// Bytes held.
    pub fn memory(&self) -> u64 {
        self.starts.bytes() + (self.targets.capacity() * 4) as u64
    }
}

/// The runs' references in one array, and where each node's start, copied on all
/// threads. The runs were made on the worker threads, whose heaps keep what is freed:
/// each eighth of them goes back to the system once copied, or the join would hold two
/// copies of the references at its end (below 16 MiB, not worth the calls).
fn join(runs: Vec<(Vec<u32>, Vec<Node>)>, n: usize, total: usize) -> (Offsets, Vec<Node>) {
    let mut starts = Offsets::zeros(n + 1, total as u64);
    // Fresh zero pages, faulted in by the threads that fill them.
    let mut targets: Vec<Node> = vec![0; total];
    let held: usize = runs.iter().map(|(d, t)| d.capacity() + t.capacity()).sum();
    let trim = held >= (16 << 20) / 4;
    // Each run's stretch of the starts (past the first, 0) and of the targets, and where
    // its references start in the whole.
    let mut at = 0u64;
    let firsts: Vec<u64> = runs
        .iter()
        .map(|(_, t)| {
            at += t.len() as u64;
            at - t.len() as u64
        })
        .collect();
    let mut lengths = vec![1];
    lengths.extend(runs.iter().map(|(d, _)| d.len()));
    let starts_of = starts.split_mut(&lengths).into_iter().skip(1);
    let targets_of = split_at_lengths(&mut targets, runs.iter().map(|(_, t)| t.len()));
    let mut work: Vec<_> = runs
        .into_iter()
        .zip(firsts)
        .zip(starts_of)
        .zip(targets_of)
        .collect();
    // A group at a time: an eighth of what the runs hold.
    while !work.is_empty() {
        let mut size = 0usize;
        let take = work
            .iter()
            .take_while(|((((d, t), _), _), _)| {
                let first = size == 0;
                size += d.capacity() + t.capacity();
                first || size * 8 <= held
            })
            .count();
        let group: Vec<_> = work.drain(..take).collect();
        group
            .into_par_iter()
            .for_each(|((((degrees, run), first), mut starts), targets)| {
                let mut at = first;
                for (i, &d) in degrees.iter().enumerate() {
                    at += d as u64;
                    starts.set(i, at);
                }
                targets.copy_from_slice(&run);
            });
        if trim {
            crate::base::spare::give_back_freed_memory();
        }
    }
    (starts, targets)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn joined_runs_give_each_node_its_own_references() {
        // Nodes with 0 to 4 references each, in runs of unequal sizes (some empty).
        let lists: Vec<Vec<Node>> = (0..500u32)
            .map(|u| (0..u % 5).map(|k| u * 10 + k).collect())
            .collect();
        let mut runs = Vec::new();
        let mut rest = &lists[..];
        for len in [0, 1, 7, 0, 100, 3, 250, 139] {
            let (run, tail) = rest.split_at(len);
            rest = tail;
            runs.push((run.iter().map(|l| l.len() as u32).collect(), run.concat()));
        }
        assert!(rest.is_empty());
        let total = lists.iter().map(Vec::len).sum();
        let (starts, targets) = join(runs, lists.len(), total);
        let edges = Edges { starts, targets };
        for (u, l) in lists.iter().enumerate() {
            assert_eq!(edges.of(u as Node), &l[..], "node {u}");
        }
        assert_eq!(edges.len(), total as u64);
    }
}
