//! Duplicate Strings: strongly reachable `java.lang.String`s whose value arrays hold the
//! same bytes, grouped, by the bytes the copies beyond the first waste. The value array
//! is the String's primitive array among its references (read from the references'
//! arrays, no id lookup); contents are told apart by a hash seeded at random per run (64
//! bits, the length included), so a dump cannot make two values collide on purpose.

use hprof_shrink_core::hprof::tags;

use super::edges::Edges;
use super::graph::Graph;
use super::index::Node;
use super::limits::MAX_NAME_BYTES;
use super::reach::Reach;
use super::shown::clipped;
use super::triage::{DuplicateString, LIST_CAP, STRING_SHOWN};

pub fn duplicates(
    g: &Graph<'_, '_>,
    edges: &Edges,
    reach: &Reach,
    strings: &[Node],
) -> (Vec<DuplicateString>, u64) {
    use rayon::prelude::*;
    let seed = foldhash::fast::RandomState::default();
    // (hash of the value's bytes, value array, String).
    let mut rows: Vec<(u64, Node, Node)> = strings
        .par_iter()
        .filter(|&&s| reach.on_path(s))
        .filter_map(|&s| {
            let array = edges
                .of(s)
                .iter()
                .copied()
                .find(|&t| g.ix.tag(t) == tags::PRIMITIVE_ARRAY_DUMP)?;
            let (_, bytes) = g.primitive(array)?;
            Some((std::hash::BuildHasher::hash_one(&seed, bytes), array, s))
        })
        .collect();
    rows.par_sort_unstable();
    // Strings sharing one array are one copy.
    rows.dedup_by(|a, b| a.0 == b.0 && a.1 == b.1);
    let mut groups: Vec<(u64, u64, Node, Node)> = rows
        .chunk_by(|a, b| a.0 == b.0)
        .filter(|run| run.len() > 1)
        .map(|run| {
            let (_, array, s) = run[0];
            let each = g.shallow_size(s) + g.shallow_size(array);
            (each * (run.len() as u64 - 1), run.len() as u64, s, array)
        })
        .collect();
    groups.sort_unstable_by(|a, b| b.0.cmp(&a.0).then(a.2.cmp(&b.2)));
    let left = groups.len().saturating_sub(LIST_CAP) as u64;
    groups.truncate(LIST_CAP);
    let list = groups
        .into_iter()
        .map(|(wasted, count, s, array)| {
            let value = g.string_value(g.ix.id(s)).unwrap_or_default();
            let length = value.chars().count() as u64;
            DuplicateString {
                value: clipped(
                    &value.chars().take(STRING_SHOWN).collect::<String>(),
                    MAX_NAME_BYTES,
                ),
                length,
                count,
                bytes_each: g.shallow_size(s) + g.shallow_size(array),
                wasted_bytes: wasted,
            }
        })
        .collect();
    (list, left)
}
