//! Duplicate Strings: strongly reachable `java.lang.String`s whose value arrays hold the
//! same bytes, grouped, by the bytes the copies beyond the first waste.
//!
//! Cheap by design, since a heap may hold millions of Strings: each String's value is
//! hashed in the references' pass, as that pass reaches the String (its `value` array is
//! most often the next object in the dump), by a hash seeded at random per run (64 bits,
//! the length included), so that a dump cannot make two values collide on purpose; the
//! pass keeps 16 bytes per String. Right after it, one pass over those hashes with two
//! bits per slot of a table of 4 slots per String (1 byte a String) drops the values seen
//! once (most of them); only the rest are kept, and sorted and grouped after the path
//! search.

use hprof_shrink_core::hprof::{id_at, BasicType};

use super::graph::Graph;
use super::index::Node;
use super::limits::MAX_NAME_BYTES;
use super::reach::Reach;
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

    /// The value array of the String `s`.
    #[inline]
    fn array(&self, g: &Graph<'_, '_>, s: Node) -> Option<Node> {
        let (_, data) = g.instance_data(s)?;
        let id = id_at(data, self.at, g.ix.id_size)?;
        // Most often allocated right after its String: the next node, without a search.
        let next = s + 1;
        if (next as usize) < g.ix.len() && id != 0 && g.ix.id(next) == id {
            return Some(next);
        }
        g.ix.node(id)
    }

    /// The hash of the String `s`'s value (`None` without a readable one).
    #[inline]
    pub fn hash(&self, g: &Graph<'_, '_>, s: Node) -> Option<u64> {
        let (_, bytes) = g.primitive(self.array(g, s)?)?;
        Some(std::hash::BuildHasher::hash_one(&self.seed, bytes))
    }
}

/// `rows` ((hash of the value, String), from the references' pass) without the values
/// seen once: two bits per slot (seen, seen again), 4 slots per String. Run right after
/// that pass, so that the path search's memory does not come on top of every String's.
pub fn seen_twice(mut rows: Vec<(u64, Node)>) -> Vec<(u64, Node)> {
    let slots = (rows.len() * 4).next_power_of_two().max(64);
    let mask = (slots - 1) as u64;
    let mut seen = vec![0u64; slots / 64];
    let mut again = vec![0u64; slots / 64];
    for &(h, _) in &rows {
        let (w, b) = ((h & mask) as usize / 64, 1u64 << (h & 63));
        if seen[w] & b != 0 {
            again[w] |= b;
        }
        seen[w] |= b;
    }
    rows.retain(|&(h, _)| again[(h & mask) as usize / 64] & (1u64 << (h & 63)) != 0);
    rows.shrink_to_fit();
    rows
}

/// The groups of duplicate values among `rows` (from [`seen_twice`]), the strongly
/// reachable Strings only: the [`LIST_CAP`] that waste the most, and how many groups
/// were left out.
pub fn duplicates(
    g: &Graph<'_, '_>,
    reach: &Reach,
    values: &StringValues,
    rows: Vec<(u64, Node)>,
) -> (Vec<DuplicateString>, u64) {
    // (hash, value array, String), sorted: runs of one hash are one value.
    let mut full: Vec<(u64, Node, Node)> = rows
        .into_iter()
        .filter(|&(_, s)| reach.on_path(s))
        .filter_map(|(h, s)| Some((h, values.array(g, s)?, s)))
        .collect();
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
