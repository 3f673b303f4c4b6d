//! Every object's strong references as node numbers, in one array: built once, on all
//! threads (each reference's id looked up in the index once), so that the path search
//! and the depth-first search that follow walk plain numbers. 4 bytes a reference and 8
//! an object.

use rayon::prelude::*;

use super::graph::Graph;
use super::index::Node;
use super::offsets::Offsets;
use super::spare::Spare;

pub struct Edges {
    /// Node → where its references start in `targets` (one more at the end).
    starts: Offsets,
    targets: Vec<Node>,
    /// Positions in `targets` of references that are known framework leaks, sorted,
    /// with their table entry. Few.
    library: Vec<(u64, u16)>,
}

/// One run of nodes' references, and what the caller's visit made of those nodes.
struct Chunk<S> {
    degrees: Vec<u32>,
    targets: Vec<Node>,
    library: Vec<(u64, u16)>,
    seen: S,
}

impl Edges {
    /// Every object's references, and `visit(state, node, class key, shallow size)` (see
    /// [`Graph::sized`]) called on every node in the same pass, from the same look at its
    /// record: each run of nodes has a state from `init`, and the runs' states are joined
    /// in node order by `merge`.
    pub fn build<S: Send>(
        g: &Graph<'_, '_>,
        init: impl Fn() -> S + Sync,
        visit: impl Fn(&mut S, Node, (u8, u64), u64) + Sync,
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
                    library: Vec::new(),
                    seen: init(),
                };
                for node in range {
                    let before = chunk.targets.len();
                    let (key, size) = g.for_each_ref(node as Node, |t, lib| {
                        if let Some(e) = lib {
                            chunk.library.push((chunk.targets.len() as u64, e));
                        }
                        chunk.targets.push(t);
                    });
                    chunk.degrees.push((chunk.targets.len() - before) as u32);
                    visit(&mut chunk.seen, node as Node, key, size);
                }
                chunk
            })
            .collect();
        let total: usize = chunks.iter().map(|c| c.targets.len()).sum();
        let mut starts = Offsets::zeros(n + 1, total as u64);
        let mut targets = Vec::with_capacity(total);
        let mut library = Vec::new();
        let mut seen = init();
        let mut node = 0usize;
        let mut at = 0u64;
        for chunk in chunks {
            let base = targets.len() as u64;
            for d in chunk.degrees {
                at += d as u64;
                node += 1;
                starts.set(node, at);
            }
            library.extend(chunk.library.into_iter().map(|(p, e)| (base + p, e)));
            targets.extend_from_slice(&chunk.targets);
            seen = merge(seen, chunk.seen);
        }
        (
            Edges {
                starts,
                targets,
                library,
            },
            seen,
        )
    }

    /// The references out of `node`.
    #[inline]
    pub fn of(&self, node: Node) -> &[Node] {
        &self.targets[self.starts.run(node as usize)]
    }

    /// The references out of `node` with their known-leak entry, if any.
    #[inline]
    pub fn with_library(&self, node: Node) -> impl Iterator<Item = (Node, Option<u16>)> + '_ {
        let run = self.starts.run(node as usize);
        let (start, end) = (run.start as u64, run.end as u64);
        // Known leaks are rare: look them up only where the run has any.
        let from = self.library.partition_point(|(p, _)| *p < start);
        let has = self.library.get(from).is_some_and(|(p, _)| *p < end);
        (start..end).map(move |p| {
            let lib = if has {
                self.library
                    .binary_search_by_key(&p, |(q, _)| *q)
                    .ok()
                    .map(|i| self.library[i].1)
            } else {
                None
            };
            (self.targets[p as usize], lib)
        })
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
            library: Vec::new(),
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
        self.starts.bytes() + (self.targets.capacity() * 4 + self.library.capacity() * 16) as u64
    }
}
