//! Duplicate Strings: strongly reachable `java.lang.String`s whose value arrays hold the
//! same bytes, grouped, by the bytes the copies beyond the first waste.
//!
//! Cheap by design, since a heap may hold millions of Strings: each String's value is
//! hashed in the references' pass, as that pass reaches the String (its `value` array is
//! among the references the pass has just read: no id is looked up), by a hash seeded at
//! random per run (64 bits, the length included), so that a dump cannot make two values
//! collide on purpose; the pass keeps 8 bytes per String ([`Pending`]: the String and its
//! hash's top half), in one array a run. Before the pass joins its runs' references, the
//! runs are ordered in place into [`BUCKETS`] lists by hash, and each list, with two tables of two bits per slot and 16 to 32 slots
//! per String (8 to 16 bytes a String of the two lists in work at a time), drops the
//! values seen once (all but 1 to 4 in a thousand of them, simulated on random hashes),
//! the lists in parallel; the rest are hashed again whole from their references
//! (16 bytes a row) and kept (in a temporary file
//! through the path search and the dominators, [`super::parked`]), and sorted and grouped
//! after the dominators, which say which Strings are strongly reachable.

use hprof_shrink_core::hprof::{id_at, BasicType};

use super::edges::Edges;
use super::graph::Graph;
use super::index::Node;
use super::limits::MAX_NAME_BYTES;
use super::shown::clipped;
use super::triage::{DuplicateString, Top, LIST_CAP, STRING_SHOWN};

/// Where `java.lang.String` keeps its value: the class and the byte offset of its
/// `value` field in an instance's data.
pub struct StringValues {
    pub class: u64,
    at: usize,
    seed: foldhash::fast::RandomState,
}

impl StringValues {
    /// `None` when the dump has no String class with an object `value` field.
    pub fn new(g: &Graph<'_, '_>) -> Option<StringValues> {
        let class = g.class_named("java.lang.String")?;
        let (at, ty) = g.field_slot(class, "java.lang.String", "value")?;
        (ty == BasicType::Object).then(|| StringValues {
            class,
            at: at as usize,
            seed: foldhash::fast::RandomState::default(),
        })
    }

    /// The hash of the String `s`'s value and its value array, given the objects `s`
    /// references (`None` without a readable value).
    #[inline(always)]
    pub fn hash(&self, g: &Graph<'_, '_>, s: Node, refs: &[Node]) -> Option<(u64, Node)> {
        let array = match refs {
            [] => return None,
            // A String references its value alone (ART, JDK): no need to ask which.
            [only] => *only,
            _ => {
                let (_, data) = g.instance_data(s)?;
                let id = id_at(data, self.at, g.ix.id_size)?;
                *refs.iter().find(|&&t| g.ix.id(t) == id)?
            }
        };
        let (_, bytes) = g.primitive(array)?;
        Some((std::hash::BuildHasher::hash_one(&self.seed, bytes), array))
    }
}

/// A String's row: (hash of its value, its value array, the String).
pub type Row = (u64, Node, Node);

/// What the references' pass keeps of a String, 8 bytes: the top 32 bits of its value's
/// hash above the String's node. The value array and the whole hash are read again, from
/// the pass's references, for the few Strings whose values may repeat ([`rows`]).
pub type Pending = u64;

/// The pending entry of String `node` whose value hashes to `h`.
#[inline]
pub fn pending(h: u64, node: Node) -> Pending {
    (h & !0xFFFF_FFFF) | node as u64
}

/// The entries go to this many lists by their hash's top bits, so that the values seen
/// once are dropped list by list, in parallel, each with a table small enough to stay in
/// a core's cache.
pub const BUCKETS: usize = 64;

/// The list of a pending entry.
#[inline]
pub fn bucket(p: Pending) -> usize {
    (p >> 58) as usize
}

/// `runs` (the references' pass's entries, a list a run) without the values seen once
/// ([`once_dropped`]). Run before the pass joins its runs' references, so that the
/// entries are not held through it. Each run is first ordered by list (a counting sort,
/// the runs in parallel): the pass appends to one array a run, where a list each would
/// grow and copy thousands of small arrays.
pub fn seen_twice(runs: Vec<Vec<Pending>>) -> Vec<Pending> {
    use rayon::prelude::*;
    let sorted: Vec<(Vec<Pending>, [usize; BUCKETS + 1])> =
        runs.into_par_iter().map(by_list).collect();
    let kept: Vec<Vec<Pending>> = (0..BUCKETS)
        .into_par_iter()
        .map(|k| {
            let lists: Vec<&[Pending]> = sorted
                .iter()
                .map(|(run, at)| &run[at[k]..at[k + 1]])
                .collect();
            once_dropped(&lists)
        })
        .collect();
    kept.concat()
}

/// A run's entries ordered by list, in place, and where each list starts (one more at
/// the end).
fn by_list(mut run: Vec<Pending>) -> (Vec<Pending>, [usize; BUCKETS + 1]) {
    let mut at = [0usize; BUCKETS + 1];
    for &p in &run {
        at[bucket(p) + 1] += 1;
    }
    for k in 0..BUCKETS {
        at[k + 1] += at[k];
    }
    // Each entry is swapped into the next free place of its list until the one that
    // belongs here comes back.
    let mut next = at;
    for k in 0..BUCKETS {
        while next[k] < at[k + 1] {
            let mut p = run[next[k]];
            loop {
                let b = bucket(p);
                if b == k {
                    break;
                }
                std::mem::swap(&mut p, &mut run[next[b]]);
                next[b] += 1;
            }
            run[next[k]] = p;
            next[k] += 1;
        }
    }
    (run, at)
}

/// One list's entries (in pieces) without the values seen once in it. Two tables, each
/// of two bits per slot (seen, seen again) and 16 to 32 slots an entry, read from
/// different bits of the hash's 26 below the list's: a value seen once stays only when
/// it shares a slot with another in both (1 to 4 in a thousand, simulated on random
/// hashes). Each kept one is hashed again from the dump at random: on a heap of 7.7
/// million unique Strings, 4 to 8 slots an entry (2 to 4 in a hundred kept) cost 0.1 s
/// more than these.
fn once_dropped(lists: &[&[Pending]]) -> Vec<Pending> {
    let all: usize = lists.iter().map(|l| l.len()).sum();
    let slots = (all * 16).next_power_of_two().clamp(64, 1 << 26);
    let mask = (slots - 1) as u64;
    // The second table's slot from the 26 bits' top end, the first's from their bottom.
    let bits = slots.trailing_zeros();
    let at = |p: Pending| {
        let h = (p >> 32) & 0x3FF_FFFF;
        [h & mask, ((h >> (26 - bits)) & mask) + slots as u64]
    };
    let mut seen = vec![0u64; slots * 2 / 64];
    let mut again = vec![0u64; slots * 2 / 64];
    for &p in lists.iter().copied().flatten() {
        for k in at(p) {
            let (w, b) = (k as usize / 64, 1u64 << (k % 64));
            if seen[w] & b != 0 {
                again[w] |= b;
            }
            seen[w] |= b;
        }
    }
    drop(seen);
    let twice = |p: Pending| {
        at(p)
            .iter()
            .all(|&k| again[k as usize / 64] & (1u64 << (k % 64)) != 0)
    };
    // A list at a time: one flattened filter cost a call per entry kept.
    let mut kept = Vec::new();
    for list in lists {
        kept.extend(list.iter().copied().filter(|&p| twice(p)));
    }
    kept
}

/// The rows of the `kept` Strings, their values hashed again whole from their references
/// in `edges`, in parallel.
pub fn rows(g: &Graph<'_, '_>, values: &StringValues, kept: &[Pending], edges: &Edges) -> Vec<Row> {
    use rayon::prelude::*;
    kept.par_iter()
        .filter_map(|&p| {
            let s = p as Node;
            let (h, array) = values.hash(g, s, edges.of(s))?;
            Some((h, array, s))
        })
        .collect()
}

/// `rows` in the order `sort_unstable` gives them: put in lists by their hash's top bits
/// (in place, as [`by_list`] does; the lists follow the hashes' order), and each list
/// sorted on its own, the lists in parallel: fewer comparisons an entry than one sort of
/// them all, and on every core.
fn sorted(mut rows: Vec<Row>) -> Vec<Row> {
    use rayon::prelude::*;
    const BITS: u32 = 8;
    const LISTS: usize = 1 << BITS;
    let list = |r: &Row| (r.0 >> (64 - BITS)) as usize;
    let mut at = [0usize; LISTS + 1];
    for r in &rows {
        at[list(r) + 1] += 1;
    }
    for k in 0..LISTS {
        at[k + 1] += at[k];
    }
    let mut next = at;
    for k in 0..LISTS {
        while next[k] < at[k + 1] {
            let mut r = rows[next[k]];
            loop {
                let b = list(&r);
                if b == k {
                    break;
                }
                std::mem::swap(&mut r, &mut rows[next[b]]);
                next[b] += 1;
            }
            rows[next[k]] = r;
            next[k] += 1;
        }
    }
    let mut lists = Vec::with_capacity(LISTS);
    let mut rest = rows.as_mut_slice();
    for k in 0..LISTS {
        let (one, after) = rest.split_at_mut(at[k + 1] - at[k]);
        lists.push(one);
        rest = after;
    }
    lists.into_par_iter().for_each(|l| l.sort_unstable());
    rows
}

/// The groups of duplicate values among `rows` (from [`seen_twice`]), the strongly
/// reachable Strings only: the [`LIST_CAP`] that waste the most, and how many groups
/// were left out.
pub fn duplicates(
    g: &Graph<'_, '_>,
    reachable: impl Fn(Node) -> bool,
    mut rows: Vec<Row>,
) -> (Vec<DuplicateString>, u64) {
    // (hash, value array, String), sorted: runs of one hash are one value.
    rows.retain(|&(_, _, s)| reachable(s));
    let mut full = sorted(rows);
    // Strings sharing one array are one copy.
    full.dedup_by(|a, b| a.0 == b.0 && a.1 == b.1);
    // The groups that waste the most (ties: the lower String, so that the seed does not
    // change the list).
    let mut top: Top<(u64, std::cmp::Reverse<Node>), (u64, Node, Node)> = Top::new(LIST_CAP);
    for run in full.chunk_by(|a, b| a.0 == b.0).filter(|run| run.len() > 1) {
        let (_, array, s) = run[0];
        let each = g.shallow_size(s) + g.shallow_size(array);
        top.offer(
            (each * (run.len() as u64 - 1), std::cmp::Reverse(s)),
            (run.len() as u64, s, array),
        );
    }
    let (groups, left) = top.finish();
    let list = groups
        .into_iter()
        .map(|(count, s, array)| {
            let value = g.string_value(g.ix.id(s)).unwrap_or_default();
            let length = value.chars().count() as u64;
            let each = g.shallow_size(s) + g.shallow_size(array);
            DuplicateString {
                value: clipped(
                    &value.chars().take(STRING_SHOWN).collect::<String>(),
                    MAX_NAME_BYTES,
                ),
                length,
                count,
                bytes_each: each,
                wasted_bytes: each * (count - 1),
            }
        })
        .collect();
    (list, left)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// splitmix64: well-spread hashes from a counter, the same on every run.
    fn mix(mut x: u64) -> u64 {
        x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
        x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        x ^ (x >> 31)
    }

    #[test]
    fn rows_sorted_by_lists_as_one_sort_sorts_them() {
        let mut rows: Vec<Row> = (0..50_000u64)
            .map(|i| (mix(i % 7_000), (mix(i) % 1_000) as Node, i as Node))
            .collect();
        rows.push((0, 1, 2));
        rows.push((u64::MAX, 3, 4));
        let mut one = rows.clone();
        one.sort_unstable();
        assert_eq!(sorted(rows), one);
    }

    #[test]
    fn a_run_ordered_by_list_keeps_every_entry_and_bounds_each_list() {
        let run: Vec<Pending> = (0..10_000u64).map(|i| pending(mix(i), i as Node)).collect();
        let (sorted, at) = by_list(run.clone());
        for k in 0..BUCKETS {
            assert!(sorted[at[k]..at[k + 1]].iter().all(|&p| bucket(p) == k));
        }
        assert_eq!(at[BUCKETS], run.len());
        let (mut a, mut b) = (run, sorted);
        a.sort_unstable();
        b.sort_unstable();
        assert_eq!(a, b);
    }

    #[test]
    fn every_value_seen_twice_stays_and_few_seen_once_do() {
        // 200,000 Strings of one list (the list's top bits alike), 1,000 values twice.
        let list = 5u64 << 58;
        let mut runs = [Vec::new(), Vec::new()];
        for i in 0..200_000u64 {
            let h = list | (mix(i) >> 6);
            runs[(i % 2) as usize].push(pending(h, i as Node));
        }
        let twice: Vec<Pending> = (0..1_000u64)
            .map(|i| pending(list | (mix(i) >> 6), 1_000_000 + i as Node))
            .collect();
        runs[1].extend(&twice);
        let kept = once_dropped(&[&runs[0], &runs[1]]);
        let kept_nodes: std::collections::HashSet<Node> = kept.iter().map(|&p| p as Node).collect();
        for (i, p) in twice.iter().enumerate() {
            assert!(
                kept_nodes.contains(&(*p as Node)),
                "second copy {i} dropped"
            );
            assert!(kept_nodes.contains(&(i as Node)), "first copy {i} dropped");
        }
        let singles_kept = kept.len() - 2 * twice.len();
        // 16 to 32 slots an entry keep 1 to 4 in a thousand (4 to 8 kept 4 in a hundred).
        assert!(
            singles_kept < 199_000 / 200,
            "{singles_kept} of 199,000 values seen once stayed"
        );
    }
}
