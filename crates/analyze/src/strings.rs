//! Duplicate Strings: strongly reachable `java.lang.String`s whose value arrays hold the
//! same bytes, grouped, by the bytes the copies beyond the first waste.
//!
//! Cheap by design, since a heap may hold millions of Strings: each String's value is
//! hashed in the references' pass, as that pass reaches the String (its `value` array is
//! among the references the pass has just read: no id is looked up), by a hash seeded at
//! random per run (64 bits, the length included), so that a dump cannot make two values
//! collide on purpose; the pass keeps 16 bytes per String, in one of [`BUCKETS`] lists by
//! its hash. Right after it, each list's hashes, with two tables of two bits per slot and
//! 4 slots per String (2 bytes a String), drop the values seen once (all but about 1 in
//! 20 of them), the lists in parallel; only the rest are kept (in a temporary file
//! through the path search and the dominators, [`super::parked`]), and sorted and grouped
//! after the dominators, which say which Strings are strongly reachable.

use hprof_shrink_core::hprof::{id_at, BasicType};

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
    #[inline]
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

/// The rows of each run of the references' pass go to this many lists by their hash's
/// top bits, so that the values seen once are dropped list by list, in parallel, each
/// with a table small enough to stay in a core's cache.
pub const BUCKETS: usize = 64;

/// The list of a row of hash `h`.
#[inline]
pub fn bucket(h: u64) -> usize {
    (h >> 58) as usize
}

/// `runs` (from the references' pass: [`BUCKETS`] lists a run, the `k`-th of each holding
/// the hashes of list `k`) without the values seen once ([`once_dropped`]). Run right
/// after that pass, so that the path search's memory does not come on top of every
/// String's.
pub fn seen_twice(runs: Vec<Vec<Row>>) -> Vec<Row> {
    use rayon::prelude::*;
    let mut lists: Vec<Vec<Vec<Row>>> = (0..BUCKETS).map(|_| Vec::new()).collect();
    for (i, run) in runs.into_iter().enumerate() {
        lists[i % BUCKETS].push(run);
    }
    let kept: Vec<Vec<Row>> = lists.into_par_iter().map(once_dropped).collect();
    kept.concat()
}

/// One list's rows without the values seen once in it. Two tables, each of two bits per
/// slot (seen, seen again) and 4 slots a row, read from different bits of the hash: a
/// value seen once stays only when it shares a slot with another in both (about 1 in 20).
fn once_dropped(runs: Vec<Vec<Row>>) -> Vec<Row> {
    let all: usize = runs.iter().map(Vec::len).sum();
    let slots = (all * 4).next_power_of_two().max(64);
    let mask = (slots - 1) as u64;
    // The second table's slot from bits above the first's (the list's are the top 6).
    let at = |h: u64| [h & mask, ((h >> 29) & mask) + slots as u64];
    let mut seen = vec![0u64; slots * 2 / 64];
    let mut again = vec![0u64; slots * 2 / 64];
    for &(h, _, _) in runs.iter().flatten() {
        for k in at(h) {
            let (w, b) = (k as usize / 64, 1u64 << (k % 64));
            if seen[w] & b != 0 {
                again[w] |= b;
            }
            seen[w] |= b;
        }
    }
    drop(seen);
    let twice = |h: u64| {
        at(h)
            .iter()
            .all(|&k| again[k as usize / 64] & (1u64 << (k % 64)) != 0)
    };
    let mut out = Vec::new();
    for run in runs {
        out.extend(run.into_iter().filter(|r| twice(r.0)));
    }
    out
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
    let mut full = rows;
    full.sort_unstable();
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
