//! Duplicate Strings: strongly reachable `java.lang.String`s whose value arrays hold the
//! same bytes, grouped, by the bytes the copies beyond the first waste.
//!
//! Done after the dominators, which say which Strings are strongly reachable, from what
//! the references' pass kept of each String instance ([`Strings`]): a bit a node, and
//! its value array (read from the references the pass has in hand) as its distance from
//! the String ([`Arrays`]: 1 byte a String, 4 at most) held through the path search and
//! the dominators. Then two walks of the
//! reachable Strings in node order (the order their records lie in the dump), the
//! nodes split between the cores:
//! 1. each value is hashed (64 bits, the length included, seeded at random per run so
//!    that a dump cannot make values collide on purpose), the hash kept by its String
//!    (8 bytes a String);
//! 2. a copy of the hashes is put in 256 lists by their top bits, and each list goes
//!    through a table of its own that stays in a core's cache, the lists in parallel:
//!    the values held twice (8 bytes a String more, freed at once; a table of all values
//!    asked at random would cost a cache miss a String, a sort ten times the
//!    instructions);
//! 3. the values held twice are summed by hash in a map a thread: the arrays counted once
//!    each (Strings may share one: a bit a node marks an array counted) and the lowest
//!    (array, String) of the value kept.
//!
//! The maps hold an entry a value held twice: a few hundred on a heap of repeated names,
//! at worst one for every two Strings (each value held twice).

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use hprof_shrink_core::hprof::{id_at, BasicType};
use rayon::prelude::*;

use crate::base::limits::MAX_NAME_BYTES;
use crate::base::map::{Map, Set};
use crate::base::shown::clipped;
use crate::heap::graph::Graph;
use crate::heap::index::Node;
use crate::model::triage::DuplicateString;
use crate::model::triage::{LIST_CAP, STRING_SHOWN};
use crate::report::triage::Top;

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

    /// The value array of the String `s`, among the objects it references (`refs`);
    /// `None` without one.
    #[inline]
    pub fn array(&self, g: &Graph<'_, '_>, s: Node, refs: &[Node]) -> Option<Node> {
        match refs {
            [] => None,
            // A String references its value alone (ART, JDK): no need to ask which.
            [only] => Some(*only),
            _ => {
                let (_, data) = g.instance_data(s)?;
                let id = id_at(data, self.at, g.ix.id_size)?;
                refs.iter().copied().find(|&t| g.ix.id(t) == id)
            }
        }
    }

    /// The hash of a value array's bytes (`None` when it is not a primitive array).
    #[inline]
    fn hash(&self, g: &Graph<'_, '_>, array: Node) -> Option<u64> {
        let (_, bytes) = g.primitive(array)?;
        Some(std::hash::BuildHasher::hash_one(&self.seed, bytes))
    }
}

/// A String without a value array, in [`Arrays`].
const NO_ARRAY: Node = Node::MAX;

/// What the references' pass keeps of the String instances: a bit a node, and each one's
/// value array, in node order.
pub struct Strings {
    pub nodes: NodeBits,
    pub arrays: Arrays,
}

/// In [`Arrays::near`]: the array is in [`Arrays::far`].
const FAR: i8 = i8::MIN;

/// Each String's value array, in node order, kept through the path search and the
/// dominators: a byte a String, the array's distance from it in nodes when within ±127
/// (a String and its array are mostly neighbours: allocated together, copied together),
/// else [`FAR`] and the array (or [`NO_ARRAY`]) in `far`, in the same order. 1 byte a
/// String when they are neighbours; when most are not, every array in `far` and `near`
/// empty ([`Arrays::finish`]): 4 bytes a String at most.
#[derive(Default)]
pub struct Arrays {
    near: Vec<i8>,
    far: Vec<Node>,
}

impl Arrays {
    /// Adds String `s`'s array, after those of the Strings before it.
    #[inline]
    pub fn push(&mut self, s: Node, array: Option<Node>) {
        let d = array.map(|a| a as i64 - s as i64);
        match d.and_then(|d| i8::try_from(d).ok()).filter(|&d| d != FAR) {
            Some(d) => self.near.push(d),
            None => {
                self.near.push(FAR);
                self.far.push(array.unwrap_or(NO_ARRAY));
            }
        }
    }

    /// Adds `more`'s Strings, which follow these.
    pub fn append(&mut self, more: Arrays) {
        self.near.extend(more.near);
        self.far.extend(more.far);
    }

    /// The arrays of the Strings `nodes` (all pushed), held through the peak: every one in
    /// `far` when that is smaller, and what the lists' growth left unused given back.
    pub fn finish(mut self, nodes: &NodeBits) -> Arrays {
        if self.far.len() * 4 > self.near.len() * 3 {
            let mut all = Vec::with_capacity(self.near.len());
            let mut from = self.from(0, 0);
            let mut i = 0;
            nodes.each_in(0..nodes.0.len(), |s| {
                all.push(from.of(i, s));
                i += 1;
            });
            self = Arrays {
                near: Vec::new(),
                far: all,
            };
        }
        self.near.shrink_to_fit();
        self.far.shrink_to_fit();
        self
    }

    /// The arrays of the Strings from rank `first` on; `far` of them lie before it.
    fn from(&self, first: usize, far: usize) -> ArraysFrom<'_> {
        ArraysFrom {
            near: self.near.get(first..).unwrap_or_default(),
            far: self.far[far..].iter(),
        }
    }

    /// How many of the Strings `ranks` have their array in `far`.
    fn far_in(&self, ranks: std::ops::Range<usize>) -> usize {
        match self.near.is_empty() {
            true => ranks.len(),
            false => self.near[ranks].iter().map(|&d| (d == FAR) as usize).sum(),
        }
    }
}

/// The arrays of consecutive Strings, one after the other ([`Arrays::from`]).
struct ArraysFrom<'a> {
    near: &'a [i8],
    far: std::slice::Iter<'a, Node>,
}

impl ArraysFrom<'_> {
    /// The array of the `i`th String from the first, `s` ([`NO_ARRAY`] for none): asked
    /// of each String in turn (the far ones are taken in order).
    #[inline]
    fn of(&mut self, i: usize, s: Node) -> Node {
        match self.near.get(i) {
            Some(&FAR) | None => self.far.next().copied().unwrap_or(NO_ARRAY),
            Some(&d) => (s as i64 + d as i64) as Node,
        }
    }
}

/// A set of nodes, a bit each, that threads may add to at once.
pub struct NodeBits(Vec<AtomicU64>);

impl NodeBits {
    pub fn new(nodes: usize) -> NodeBits {
        NodeBits(
            std::iter::repeat_with(|| AtomicU64::new(0))
                .take(nodes.div_ceil(64))
                .collect(),
        )
    }

    /// Adds `n`; whether it was not in the set yet.
    #[inline]
    pub fn add(&self, n: Node) -> bool {
        let bit = 1u64 << (n % 64);
        self.0[n as usize / 64].fetch_or(bit, Relaxed) & bit == 0
    }

    /// How many nodes of the set are among `words` (a range of its words).
    fn count_in(&self, words: std::ops::Range<usize>) -> usize {
        self.0[words]
            .iter()
            .map(|w| w.load(Relaxed).count_ones() as usize)
            .sum()
    }

    /// The nodes of the set among `words` (a range of its words), in order.
    fn each_in(&self, words: std::ops::Range<usize>, mut f: impl FnMut(Node)) {
        for w in words {
            let mut word = self.0[w].load(Relaxed);
            while word != 0 {
                f((w * 64 + word.trailing_zeros() as usize) as Node);
                word &= word - 1;
            }
        }
    }
}

/// Words of [`NodeBits`] a task walks (a task: 64 K nodes).
const TASK_WORDS: usize = 1 << 10;

/// One value's sum: its arrays (each counted once), and its lowest (array, String).
#[derive(Clone, Copy)]
struct Value {
    arrays: u64,
    first: (Node, Node),
}

fn merged(a: Map<u64, Value>, b: Map<u64, Value>) -> Map<u64, Value> {
    let (mut a, b) = if a.len() < b.len() { (b, a) } else { (a, b) };
    for (h, v) in b {
        let e = a.entry(h).or_insert(Value {
            arrays: 0,
            first: v.first,
        });
        e.arrays += v.arrays;
        e.first = e.first.min(v.first);
    }
    a
}

/// A task of the walks: its words of [`Strings::nodes`], the rank of its first String
/// among them all (where its hashes start), its Strings' count, and how many Strings
/// before it have their array in [`Arrays::far`].
struct Task {
    words: std::ops::Range<usize>,
    first: usize,
    len: usize,
    far: usize,
}

impl Task {
    /// The tasks over all of `strings`, in order.
    fn all(strings: &Strings) -> Vec<Task> {
        let words = strings.nodes.0.len();
        let (mut first, mut far) = (0, 0);
        (0..words)
            .step_by(TASK_WORDS)
            .map(|w| {
                let words = w..(w + TASK_WORDS).min(words);
                let len = strings.nodes.count_in(words.clone());
                let task = Task {
                    words,
                    first,
                    len,
                    far,
                };
                first += len;
                far += strings.arrays.far_in(task.first..first);
                task
            })
            .collect()
    }

    /// The arrays of its Strings, in order.
    fn arrays<'s>(&self, strings: &'s Strings) -> ArraysFrom<'s> {
        strings.arrays.from(self.first, self.far)
    }
}

/// In the hashes of the walks: a String not counted (not strongly reachable, or without
/// a value). A value hashing to it takes the hash below (a merge of two values in 2^63).
const NO_HASH: u64 = u64::MAX;

/// Lists of [`held_twice`], by a hash's top bits.
const LISTS: usize = 256;

/// The hashes (but [`NO_HASH`]) that `hashes` holds more than once. A copy of them is put
/// in lists by their top bits (8 bytes a String more, freed at the end), and each list,
/// the lists in parallel, goes through tables of its own ([`twice_in`], 4 to 8 bytes a
/// hash of the list), small enough to stay in a core's cache: one table of them all
/// would be asked at random, a cache miss a String, and a sort of them all costs ten
/// times the instructions.
fn held_twice(hashes: &[u64]) -> Set<u64> {
    let list = |h: u64| (h >> 56) as usize;
    let mut at = vec![0usize; LISTS + 1];
    for &h in hashes.iter().filter(|&&h| h != NO_HASH) {
        at[list(h) + 1] += 1;
    }
    for k in 0..LISTS {
        at[k + 1] += at[k];
    }
    let mut lists = vec![0u64; at[LISTS]];
    let mut next = at.clone();
    for &h in hashes.iter().filter(|&&h| h != NO_HASH) {
        lists[next[list(h)]] = h;
        next[list(h)] += 1;
    }
    (0..LISTS)
        .into_par_iter()
        .map(|k| twice_in(&lists[at[k]..at[k + 1]]))
        .reduce(Set::default, |mut a, b| {
            a.extend(b);
            a
        })
}

/// The hashes held more than once in one list. A first look through two tables of a bit
/// a slot (seen, seen again), 16 to 32 slots a hash and two slots each, from bits the
/// list did not use: a hash seen once stays only when others hit both its slots (1 to 4
/// in a thousand); those that stay are then counted in a map.
fn twice_in(list: &[u64]) -> Set<u64> {
    let slots = (list.len() * 16).next_power_of_two().clamp(64, 1 << 26);
    let mask = slots as u64 - 1;
    // Slots of at most 26 bits, from bits 0.. and 28.. of the 56 below the list's.
    let at = |h: u64| [h & mask, (h >> 28) & mask].map(|k| (k as usize / 64, 1u64 << (k % 64)));
    let mut seen = vec![0u64; slots.div_ceil(64)];
    let mut again = vec![0u64; slots.div_ceil(64)];
    for &h in list {
        for (w, bit) in at(h) {
            if seen[w] & bit != 0 {
                again[w] |= bit;
            }
            seen[w] |= bit;
        }
    }
    drop(seen);
    let mut counted: Map<u64, bool> = Map::default();
    for &h in list {
        if at(h).iter().all(|&(w, bit)| again[w] & bit != 0) {
            counted
                .entry(h)
                .and_modify(|twice| *twice = true)
                .or_insert(false);
        }
    }
    counted
        .into_iter()
        .filter(|&(_, twice)| twice)
        .map(|(h, _)| h)
        .collect()
}

/// Step 3 of [`duplicates`]: the Strings whose hash is in `twice`, summed by hash. A bit
/// a slot, 16 to 32 slots a value held twice, answers most Strings of a heap of distinct
/// values without asking the set.
fn summed(
    g: &Graph<'_, '_>,
    strings: &Strings,
    tasks: &[Task],
    hashes: &[u64],
    twice: &Set<u64>,
) -> Map<u64, Value> {
    let mask = (twice.len() * 16).next_power_of_two().max(64) as u64 - 1;
    let mut maybe = vec![0u64; (mask as usize + 1) / 64];
    for &h in twice {
        maybe[(h & mask) as usize / 64] |= 1 << (h & mask & 63);
    }
    let in_twice = |h: u64| {
        maybe[(h & mask) as usize / 64] & (1 << (h & mask & 63)) != 0 && twice.contains(&h)
    };
    let counted = NodeBits::new(if twice.is_empty() { 0 } else { g.ix.len() });
    let tasks = if twice.is_empty() { &[] } else { tasks };
    tasks
        .par_iter()
        .fold(Map::<u64, Value>::default, |mut sums, t| {
            let hashes = &hashes[t.first..t.first + t.len];
            let mut arrays = t.arrays(strings);
            let mut i = 0;
            strings.nodes.each_in(t.words.clone(), |s| {
                let (h, array) = (hashes[i], arrays.of(i, s));
                i += 1;
                if h != NO_HASH && in_twice(h) {
                    let new = counted.add(array);
                    let v = sums.entry(h).or_insert(Value {
                        arrays: 0,
                        first: (array, s),
                    });
                    v.arrays += new as u64;
                    v.first = v.first.min((array, s));
                }
            });
            sums
        })
        .reduce(Map::default, merged)
}

/// The groups of duplicate values among the `strings` that are `reachable`: the
/// [`LIST_CAP`] that waste the most, and how many groups were left out.
pub fn duplicates(
    g: &Graph<'_, '_>,
    values: &StringValues,
    strings: &Strings,
    reachable: impl Fn(Node) -> bool + Sync,
) -> (Vec<DuplicateString>, u64) {
    let tasks = Task::all(strings);
    let all = tasks.last().map_or(0, |t| t.first + t.len);
    // Step 1: each value hashed once, into its String's place (8 bytes a String, after
    // the dominators: below the analysis's peak).
    let mut hashes = vec![NO_HASH; all];
    let mut places = Vec::with_capacity(tasks.len());
    let mut rest = hashes.as_mut_slice();
    for t in &tasks {
        let (mine, after) = rest.split_at_mut(t.len);
        places.push(mine);
        rest = after;
    }
    tasks.par_iter().zip(places).for_each(|(t, place)| {
        let mut arrays = t.arrays(strings);
        let mut i = 0;
        strings.nodes.each_in(t.words.clone(), |s| {
            let array = arrays.of(i, s);
            if array != NO_ARRAY && reachable(s) {
                if let Some(h) = values.hash(g, array) {
                    place[i] = h.min(NO_HASH - 1);
                }
            }
            i += 1;
        });
    });
    // Step 2: the hashes held twice.
    let twice = held_twice(&hashes);
    // Step 3: the values held twice, summed.
    let sums = summed(g, strings, &tasks, &hashes, &twice);
    drop((twice, hashes));
    // The groups that waste the most (ties: the lower String, so that the seed does not
    // change the list).
    let mut top: Top<(u64, std::cmp::Reverse<Node>), (u64, Node, Node)> = Top::new(LIST_CAP);
    for v in sums.values().filter(|v| v.arrays > 1) {
        let (array, s) = v.first;
        let each = g.shallow_size(s) + g.shallow_size(array);
        top.offer(
            (each * (v.arrays - 1), std::cmp::Reverse(s)),
            (v.arrays, s, array),
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
    fn the_hashes_held_twice_are_found_and_no_other() {
        let mut hashes: Vec<u64> = (0..100_000u64).map(mix).collect();
        // Every 7th value again, every 700th twice more, and Strings not counted.
        let again: Vec<u64> = (0..100_000u64).step_by(7).map(mix).collect();
        hashes.extend(&again);
        hashes.extend((0..100_000u64).step_by(700).map(mix));
        hashes.extend([NO_HASH; 50]);
        hashes.reverse();
        let twice = held_twice(&hashes);
        let want: Set<u64> = again.into_iter().collect();
        assert_eq!(twice, want);
        assert!(held_twice(&[NO_HASH, NO_HASH]).is_empty());
        assert_eq!(held_twice(&[5, 5]), [5].into_iter().collect());
    }

    #[test]
    fn arrays_near_their_strings_take_a_byte_and_the_others_are_found_too() {
        // (String, its array): neighbours, 127 away, 128 away, before, none, itself.
        let kept = [
            (10, Some(9)),
            (20, Some(147)),
            (30, Some(158)),
            (300, Some(5)),
            (301, None),
            (302, Some(302)),
            (400, Some(273)),
            (500, Some(Node::MAX - 1)),
            (600, Some(472)),
        ];
        let mut arrays = Arrays::default();
        for (s, a) in kept {
            arrays.push(s, a);
        }
        assert_eq!(arrays.near.len(), kept.len());
        // Only the arrays beyond a byte's reach, and the String without one, are kept whole.
        assert_eq!(arrays.far, [158, 5, NO_ARRAY, Node::MAX - 1, 472]);
        for first in 0..kept.len() {
            let far = arrays.far_in(0..first);
            let mut from = arrays.from(first, far);
            for (i, &(s, a)) in kept[first..].iter().enumerate() {
                assert_eq!(from.of(i, s), a.unwrap_or(NO_ARRAY), "String {s}");
            }
        }
    }

    #[test]
    fn arrays_mostly_far_from_their_strings_are_kept_whole() {
        let nodes = NodeBits::new(1000);
        let mut arrays = Arrays::default();
        let strings: Vec<Node> = (0..1000).step_by(10).collect();
        // Every fifth String's array is its neighbour, the others far.
        let array = |s: Node| if s.is_multiple_of(50) { s + 1 } else { s + 500 };
        for &s in &strings {
            nodes.add(s);
            arrays.push(s, Some(array(s)));
        }
        let arrays = arrays.finish(&nodes);
        assert!(arrays.near.is_empty());
        assert_eq!(arrays.far.len(), strings.len());
        for first in [0, 1, 57] {
            let mut from = arrays.from(first, arrays.far_in(0..first));
            for (i, &s) in strings[first..].iter().enumerate() {
                assert_eq!(from.of(i, s), array(s), "String {s}");
            }
        }
    }

    #[test]
    fn node_bits_say_once_whether_a_node_is_new_and_list_them_in_order() {
        let bits = NodeBits::new(200);
        assert!(bits.add(130));
        assert!(!bits.add(130));
        assert!(bits.add(3));
        assert!(bits.add(199));
        let mut seen = Vec::new();
        bits.each_in(0..4, |n| seen.push(n));
        assert_eq!(seen, [3, 130, 199]);
        assert_eq!(bits.count_in(0..4), 3);
        assert_eq!(bits.count_in(2..4), 2);
    }

    #[test]
    fn sums_merged_add_the_arrays_and_keep_the_lowest_first() {
        let one = |arrays, first| Value { arrays, first };
        let mut a = Map::default();
        a.insert(1u64, one(2, (10, 11)));
        a.insert(2u64, one(1, (5, 6)));
        let mut b = Map::default();
        b.insert(1u64, one(0, (7, 8)));
        b.insert(3u64, one(4, (1, 2)));
        let m = merged(a, b);
        assert_eq!((m[&1].arrays, m[&1].first), (2, (7, 8)));
        assert_eq!((m[&2].arrays, m[&2].first), (1, (5, 6)));
        assert_eq!((m[&3].arrays, m[&3].first), (4, (1, 2)));
    }
}
