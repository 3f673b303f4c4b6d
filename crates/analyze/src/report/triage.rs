//! Triage without a watcher: what an out-of-memory dump (or any dump) holds, for the
//! reader who has no leak to look at. Eclipse MAT's leak suspects (the largest dominator
//! subtrees under the roots, over 10% of the heap, and where their memory accumulates),
//! a retained histogram, the largest arrays, KOOM's counts (Activities, Fragments,
//! Windows, Bitmaps, threads), the Bitmaps with their sizes, and duplicate Strings. Every
//! list is cut to a few entries and says how many it left out.

use crate::model::triage::{
    Accumulation, BitmapCounts, ClassRetained, Counts, DuplicateString, Retainer, ThreadGroup,
    Triage, TriageObject, LIST_CAP, SUSPECT_SHARE,
};

use crate::base::limits::MAX_NAME_BYTES;
use crate::base::map::Map;
use crate::base::shown::{clipped, clipped_more};
use crate::heap::graph::Graph;
use crate::heap::index::Node;
use crate::knowledge::inspect::Inspectors;
use crate::model::Trace;
use crate::paths::reach::Reach;
use crate::sizes::dominators::{Dominators, Pre};
use crate::sizes::subtrees::Subtrees;

/// The parts of the triage made before the dominators (they need the id lookup and
/// the paths' statuses' classes): counts, threads, Bitmaps, duplicate Strings.
#[derive(Default)]
pub struct Counted {
    pub counts: Counts,
    pub threads: Vec<ThreadGroup>,
    pub threads_left_out: u64,
    pub bitmaps: BitmapCounts,
    pub duplicate_strings: Vec<DuplicateString>,
    pub duplicate_strings_left_out: u64,
    /// What the counts left out as implausible, for the analysis's notes.
    pub notes: Vec<String>,
}

/// Threads by name, each run of digits as `#` when several share the pattern; most
/// first. The names come raw from the dump: grouped first, then escaped and cut, so an
/// escape's or a cut mark's digits never become `#`. Each is read to its first
/// `MAX_NAME_BYTES` bytes, so a group costs at most that whatever the names' lengths.
pub fn thread_groups(names: impl IntoIterator<Item = String>) -> (Vec<ThreadGroup>, u64) {
    struct Group {
        count: u64,
        first: String,
        first_more: u64,
    }
    let mut groups: Map<String, Group> = Map::default();
    for name in names {
        let (head, more) = head_of(&name, MAX_NAME_BYTES);
        let mut pattern = String::with_capacity(head.len());
        let mut in_digits = false;
        for c in head.chars() {
            if c.is_ascii_digit() {
                if !in_digits {
                    pattern.push('#');
                }
                in_digits = true;
            } else {
                pattern.push(c);
                in_digits = false;
            }
        }
        groups
            .entry(pattern)
            .or_insert_with(|| Group {
                count: 0,
                first: head.to_owned(),
                first_more: more,
            })
            .count += 1;
    }
    let mut out: Vec<ThreadGroup> = groups
        .into_iter()
        .map(|(pattern, g)| ThreadGroup {
            name: if g.count == 1 {
                clipped_more(&g.first, MAX_NAME_BYTES, g.first_more)
            } else {
                // Names cut alike: the first's count of what was cut.
                clipped_more(&pattern, MAX_NAME_BYTES, g.first_more)
            },
            count: g.count,
        })
        .collect();
    out.sort_by(|a, b| b.count.cmp(&a.count).then(a.name.cmp(&b.name)));
    let left = out.len().saturating_sub(LIST_CAP) as u64;
    out.truncate(LIST_CAP);
    (out, left)
}

/// The first `max` bytes of `s` (to a character boundary) and how many characters follow.
fn head_of(s: &str, max: usize) -> (&str, u64) {
    if s.len() <= max {
        return (s, 0);
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    (&s[..end], s[end..].chars().count() as u64)
}

/// A triage object, its path left to [`with_paths`]; `traced` gets its node.
fn object(
    g: &Graph<'_, '_>,
    node: Node,
    (total, native): (u64, u64),
    traced: &mut Vec<Node>,
) -> TriageObject {
    traced.push(node);
    TriageObject {
        object_id: g.ix.id(node),
        class_name: clipped(&g.node_class_name(node), MAX_NAME_BYTES),
        kind: g.node_kind(node).into(),
        shallow_bytes: g.shallow_size(node),
        retained_bytes: total.saturating_sub(native),
        retained_native_bytes: native,
        path: None,
    }
}

/// The paths of every object of `t`, made together (one walk of a collection however
/// many of them it holds) from the nodes `traced`.
fn with_paths(
    g: &Graph<'_, '_>,
    reach: Option<&Reach>,
    ins: &Inspectors<'_>,
    mut traced: Vec<Node>,
    t: &mut Triage,
) {
    let Some(reach) = reach else { return };
    traced.sort_unstable();
    traced.dedup();
    let made: Map<u64, Trace> = traced
        .iter()
        .zip(crate::paths::trace::traces(g, reach, ins, &traced))
        .filter_map(|(&n, p)| Some((g.ix.id(n), p?)))
        .collect();
    let retainers = t.top_retainers.iter_mut().flat_map(|r| {
        std::iter::once(&mut r.object).chain(r.accumulation.as_mut().map(|a| &mut a.object))
    });
    let arrays = t
        .largest_primitive_arrays
        .iter_mut()
        .chain(&mut t.largest_object_arrays);
    for o in retainers.chain(arrays) {
        o.path = made.get(&o.object_id).cloned();
    }
}

/// What the triage weighs objects with: the dominator tree, every number's retained
/// size, and the native bytes registered for objects.
#[derive(Clone, Copy)]
pub struct Weights<'w> {
    pub doms: &'w Dominators,
    pub trees: &'w Subtrees,
    pub native: &'w Map<Node, u64>,
}

/// The dominator tree's parts of the triage, with the counts made earlier.
pub fn assemble(
    g: &Graph<'_, '_>,
    reach: Option<&Reach>,
    ins: &Inspectors<'_>,
    weights: Weights<'_>,
    counted: Counted,
) -> Triage {
    let Weights {
        doms,
        trees,
        native,
    } = weights;
    let (heap_total, heap_native) = trees.reachable();
    let threshold = SUSPECT_SHARE * heap_total as f64;
    let shown = &trees.top[..trees.top.len().min(LIST_CAP)];
    let suspects: Vec<Pre> = shown
        .iter()
        .filter(|&&(with, _, _, p)| p != 0 && with as f64 > threshold)
        .map(|&(_, _, _, p)| p)
        .collect();
    // Each suspect's accumulation point (none past MAT's walk), what it dominates by class.
    let walked = trees.accumulation_points(doms, &suspects);
    let points: Vec<Pre> = walked.iter().flatten().copied().collect();
    let (point_nodes, by_class) = trees.dominated_by_class(g, doms, native, &points);
    let mut found = point_nodes.into_iter().zip(by_class);
    let mut traced: Vec<Node> = Vec::new();
    let mut accumulations: Map<Pre, Accumulation> = Map::default();
    for (&s, a) in suspects.iter().zip(walked) {
        let (Some(a), Some((a_node, classes))) = (a, a.and_then(|_| found.next())) else {
            continue;
        };
        let (dominated_by_class, left) = class_list(
            g,
            classes.into_iter().map(|(k, (n, b, nat))| (k, n, b, nat)),
        );
        accumulations.insert(
            s,
            Accumulation {
                object: object(g, a_node, trees.of(a), &mut traced),
                dominated_by_class,
                dominated_by_class_left_out: left,
            },
        );
    }
    let mut top_retainers = Vec::new();
    for &(with, nat, node, p) in shown {
        let suspect = with as f64 > threshold;
        let accumulation = match (suspect, p) {
            (false, _) => None,
            // A suspect leaf dominates nothing: it is its own accumulation point.
            (true, 0) => Some(Accumulation {
                object: object(g, node, (with, nat), &mut traced),
                ..Accumulation::default()
            }),
            (true, _) => accumulations.remove(&p),
        };
        top_retainers.push(Retainer {
            object: object(g, node, (with, nat), &mut traced),
            suspect,
            accumulation,
        });
    }
    // The top-level dominators by class.
    let mut by_class: Map<(u8, u64), (u64, u64, u64)> = Map::default();
    for &(with, nat, node, _) in &trees.top {
        let e = by_class.entry(g.class_key(node)).or_default();
        e.0 += 1;
        e.1 = e.1.saturating_add(with);
        e.2 = e.2.saturating_add(nat);
    }
    let (retained_by_class, retained_by_class_left_out) = class_list(
        g,
        by_class.into_iter().map(|(k, (n, t, nat))| (k, n, t, nat)),
    );
    let mut arrays = |list: &[(u64, Node)]| -> Vec<TriageObject> {
        list.iter()
            .map(|&(_, node)| {
                let sizes = trees.of_node(g, doms, node, native);
                object(g, node, sizes, &mut traced)
            })
            .collect()
    };
    let left = |all: u64, shown: usize| all.saturating_sub(shown as u64);
    let prims = arrays(&trees.primitive_arrays);
    let objs = arrays(&trees.object_arrays);
    let mut triage = Triage {
        heap_bytes: heap_total.saturating_sub(heap_native),
        heap_native_bytes: heap_native,
        top_retainers_left_out: left(trees.top.len() as u64, top_retainers.len()),
        top_retainers,
        retained_by_class,
        retained_by_class_left_out,
        largest_primitive_arrays_left_out: left(g.ix.counts.primitive_arrays, prims.len()),
        largest_primitive_arrays: prims,
        largest_object_arrays_left_out: left(g.ix.counts.object_arrays, objs.len()),
        largest_object_arrays: objs,
        counts: counted.counts,
        threads: counted.threads,
        threads_left_out: counted.threads_left_out,
        bitmaps: counted.bitmaps,
        duplicate_strings: counted.duplicate_strings,
        duplicate_strings_left_out: counted.duplicate_strings_left_out,
    };
    with_paths(g, reach, ins, traced, &mut triage);
    triage
}

/// (class key, objects, bytes with native, native) → the largest classes by bytes, and
/// how many were left out.
fn class_list(
    g: &Graph<'_, '_>,
    rows: impl Iterator<Item = ((u8, u64), u64, u64, u64)>,
) -> (Vec<ClassRetained>, u64) {
    let mut rows: Vec<((u8, u64), u64, u64, u64)> = rows.collect();
    rows.sort_by(|a, b| b.2.cmp(&a.2).then(a.0.cmp(&b.0)));
    let left = rows.len().saturating_sub(LIST_CAP) as u64;
    rows.truncate(LIST_CAP);
    let list = rows
        .into_iter()
        .map(|(k, objects, total, native)| ClassRetained {
            class_name: clipped(&g.class_key_name(k), MAX_NAME_BYTES),
            objects,
            retained_bytes: total.saturating_sub(native),
            retained_native_bytes: native,
        })
        .collect();
    (list, left)
}

/// The `keep` largest items offered, by key (ties: the first offered), and how many were
/// offered: a list of the triage without holding all candidates (a heap of `keep`).
pub struct Top<K: Ord, T> {
    keep: usize,
    offered: u64,
    heap: std::collections::BinaryHeap<std::cmp::Reverse<Ranked<K, T>>>,
}

/// An item ranked by its key, then by the order it was offered in (earlier is larger).
pub struct Ranked<K, T> {
    key: K,
    order: std::cmp::Reverse<u64>,
    item: T,
}

impl<K: Ord, T> PartialEq for Ranked<K, T> {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == std::cmp::Ordering::Equal
    }
}
impl<K: Ord, T> Eq for Ranked<K, T> {}
impl<K: Ord, T> PartialOrd for Ranked<K, T> {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl<K: Ord, T> Ord for Ranked<K, T> {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (&self.key, self.order).cmp(&(&other.key, other.order))
    }
}

impl<K: Ord, T> Top<K, T> {
    pub fn new(keep: usize) -> Top<K, T> {
        Top {
            keep,
            offered: 0,
            heap: std::collections::BinaryHeap::with_capacity(keep + 1),
        }
    }

    pub fn offer(&mut self, key: K, item: T) {
        let r = Ranked {
            key,
            order: std::cmp::Reverse(self.offered),
            item,
        };
        self.offered += 1;
        if self.heap.len() < self.keep {
            self.heap.push(std::cmp::Reverse(r));
        } else if self.heap.peek().is_some_and(|m| r > m.0) {
            self.heap.pop();
            self.heap.push(std::cmp::Reverse(r));
        }
    }

    /// The kept items, largest first, and how many were left out.
    pub fn finish(self) -> (Vec<T>, u64) {
        let left = self.offered - self.heap.len() as u64;
        let mut v: Vec<Ranked<K, T>> = self.heap.into_iter().map(|r| r.0).collect();
        v.sort_unstable_by(|a, b| b.cmp(a));
        (v.into_iter().map(|r| r.item).collect(), left)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn top_keeps_the_largest_first_offered_on_ties() {
        let mut t = Top::new(3);
        for (k, v) in [(5, 'a'), (9, 'b'), (5, 'c'), (1, 'd'), (9, 'e'), (7, 'f')] {
            t.offer(k, v);
        }
        assert_eq!(t.finish(), (vec!['b', 'e', 'f'], 3));
        let mut t = Top::new(10);
        t.offer(1, ());
        assert_eq!(t.finish(), (vec![()], 0));
    }

    #[test]
    fn threads_group_by_their_names_digits() {
        let names = [
            "pool-1-thread-1",
            "pool-1-thread-2",
            "pool-2-thread-1",
            "main",
        ];
        let (groups, left) = thread_groups(names.iter().map(|s| s.to_string()));
        assert_eq!(left, 0);
        assert_eq!(groups[0].name, "pool-#-thread-#");
        assert_eq!(groups[0].count, 3);
        assert_eq!(groups[1].name, "main");
    }

    /// An escape's digits and a cut mark's count are not a name's digits: grouped on the
    /// raw names, then shown.
    #[test]
    fn thread_names_are_grouped_raw_then_escaped_and_cut() {
        let long = |more| "w".repeat(MAX_NAME_BYTES + more);
        let names = ["evil\u{1b}[31m".to_string(), long(12), long(12)];
        let (groups, _) = thread_groups(names);
        let shown: Vec<&str> = groups.iter().map(|g| g.name.as_str()).collect();
        assert!(shown.contains(&"evil\\u{1b}[31m"), "{shown:?}");
        let cut = groups.iter().find(|g| g.name.starts_with('w')).unwrap();
        assert!(cut.name.ends_with("…[+12 chars]"), "{}", cut.name);
        assert_eq!(cut.count, 2);
        // Several names differing in digits still share a pattern.
        let (groups, _) = thread_groups(["t\u{1b}1", "t\u{1b}2"].map(String::from));
        assert_eq!(groups[0].name, "t\\u{1b}#");
        assert_eq!(groups[0].count, 2);
    }
}
