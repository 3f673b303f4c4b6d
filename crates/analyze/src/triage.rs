//! Triage without a watcher: what an out-of-memory dump (or any dump) holds, for the
//! reader who has no leak to look at. Eclipse MAT's leak suspects (the largest dominator
//! subtrees under the roots, over 10% of the heap, and where their memory accumulates),
//! a retained histogram, the largest arrays, KOOM's counts (Activities, Fragments,
//! Windows, Bitmaps, threads), the Bitmaps with their sizes, and duplicate Strings. Every
//! list is cut to a few entries and says how many it left out.

use serde::{Deserialize, Serialize};

use super::dominators::{Dominators, Pre};
use super::graph::Graph;
use super::index::Node;
use super::inspect::Inspectors;
use super::limits::MAX_NAME_BYTES;
use super::map::Map;
use super::model::Trace;
use super::reach::Reach;
use super::shown::{clipped, clipped_more};
use super::subtrees::Subtrees;

/// Entries kept in each list of the triage.
pub const LIST_CAP: usize = 10;
/// MAT's leak suspect threshold: a top retainer over this share of the heap.
pub const SUSPECT_SHARE: f64 = 0.10;
/// Characters of a duplicated String's value shown.
pub const STRING_SHOWN: usize = 100;

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Triage {
    /// What the shares are of: the reachable objects' bytes (Java) and the registered
    /// native bytes they own.
    pub heap_bytes: u64,
    pub heap_native_bytes: u64,
    /// The objects the GC roots dominate directly (MAT's top-level dominators), by
    /// retained size (Java and native together), largest first.
    pub top_retainers: Vec<Retainer>,
    pub top_retainers_left_out: u64,
    /// The top-level dominators by class: what each class's instances among them
    /// retain together, largest first.
    pub retained_by_class: Vec<ClassRetained>,
    pub retained_by_class_left_out: u64,
    pub largest_primitive_arrays: Vec<TriageObject>,
    pub largest_primitive_arrays_left_out: u64,
    pub largest_object_arrays: Vec<TriageObject>,
    pub largest_object_arrays_left_out: u64,
    pub counts: Counts,
    /// Threads by name, names that differ only in their digits together.
    pub threads: Vec<ThreadGroup>,
    pub threads_left_out: u64,
    pub bitmaps: BitmapCounts,
    pub duplicate_strings: Vec<DuplicateString>,
    pub duplicate_strings_left_out: u64,
}

/// An object the triage names.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TriageObject {
    pub object_id: u64,
    pub class_name: String,
    /// `instance`, `class` or `array`.
    pub kind: String,
    pub shallow_bytes: u64,
    /// Java bytes retained (its dominator subtree's shallow sizes).
    pub retained_bytes: u64,
    /// Registered native bytes retained.
    pub retained_native_bytes: u64,
    /// Its shortest path from a GC root (no leaking statuses: `UNKNOWN` throughout).
    pub path: Option<Trace>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Retainer {
    #[serde(flatten)]
    pub object: TriageObject,
    /// Retains more than 10% of the heap (Java and native): MAT's leak suspect.
    pub suspect: bool,
    /// Where its memory accumulates: the end of the walk down its largest dominated
    /// object while that keeps at least 70% of its parent (MAT's rule); for suspects.
    pub accumulation: Option<Accumulation>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Accumulation {
    #[serde(flatten)]
    pub object: TriageObject,
    /// The objects it dominates directly, by class, largest first.
    pub dominated_by_class: Vec<ClassRetained>,
    pub dominated_by_class_left_out: u64,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClassRetained {
    pub class_name: String,
    pub objects: u64,
    pub retained_bytes: u64,
    pub retained_native_bytes: u64,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Counts {
    /// Strongly reachable instances of each (subclasses included).
    pub activities: u64,
    pub destroyed_activities: u64,
    pub fragments: u64,
    pub windows: u64,
    pub bitmaps: u64,
    /// Threads the dump lists.
    pub threads: u64,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ThreadGroup {
    /// The name, or for several the name with each run of digits as `#`.
    pub name: String,
    pub count: u64,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BitmapCounts {
    /// Strongly reachable Bitmaps of the app (not the zygote's or boot image's).
    pub count: u64,
    /// Pixels on the Java heap (`mBuffer`, API < 26).
    pub java_bytes: u64,
    /// Registered native bytes (API 26+).
    pub native_bytes: u64,
    /// The screen "large" is measured against, when known.
    pub screen: Option<Screen>,
    /// A Bitmap is large over this many pixels (width × height).
    pub large_threshold_pixels: u64,
    /// `screen` (Shark's: the screen's pixels × 1.1) or `koom` (KOOM's constant 768 ×
    /// 1366, when no screen is known).
    pub large_rule: String,
    pub large_count: u64,
    pub large_bytes: u64,
    /// The largest by bytes (Java and native), largest first.
    pub largest: Vec<BitmapInfo>,
    pub largest_left_out: u64,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Screen {
    pub width: u64,
    pub height: u64,
    /// `DisplayMetrics` (the largest in the heap) or `--screen`.
    pub source: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BitmapInfo {
    pub object_id: u64,
    pub width: i64,
    pub height: i64,
    /// Inferred from bytes per pixel (no dump records it): `ALPHA_8`, `RGB_565`,
    /// `ARGB_8888` (also HARDWARE or RGBA_1010102), `RGBA_F16`; `unknown` otherwise.
    pub config: String,
    pub java_bytes: u64,
    pub native_bytes: u64,
    pub recycled: bool,
    pub large: bool,
    pub path: Option<Trace>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DuplicateString {
    /// The value, cut to 100 characters.
    pub value: String,
    /// Its length in characters.
    pub length: u64,
    pub count: u64,
    /// Bytes of one copy (the String and its value array).
    pub bytes_each: u64,
    /// Bytes the copies beyond the first take.
    pub wasted_bytes: u64,
}

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
        .zip(super::trace::traces(g, reach, ins, &traced))
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

/// The dominator tree's parts of the triage, with the counts made earlier.
#[allow(clippy::too_many_arguments)]
pub fn assemble(
    g: &Graph<'_, '_>,
    reach: Option<&Reach>,
    ins: &Inspectors<'_>,
    doms: &Dominators,
    trees: &Subtrees,
    native: &Map<Node, u64>,
    counted: Counted,
) -> Triage {
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
