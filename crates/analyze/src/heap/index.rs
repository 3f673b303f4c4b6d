//! One walk over the mapped dump builds the heap's index: strings and class names, class
//! dumps, GC roots, the heaps ART names, and where every object is. Objects stay in the
//! mapping: the index holds each one's offset, sorted by id (4 bytes while the dump is
//! under 4 GiB), and reads ids and everything else back from the dump when asked.

use crate::base::map::Map;
use hprof_shrink_core::hprof::heap::Sub;
use hprof_shrink_core::hprof::tags;
use hprof_shrink_core::hprof::{
    id_at, u4_at, BasicType, ClassIndex, FormatError, Hprof, Records, Tick,
};

use crate::base::error::AnalyzeError;
use crate::base::offsets::{split_at_lengths, Offsets, OffsetsMut};

/// A node: an object's position in the id-sorted index. u32 allows 4.29 billion objects,
/// a dump of more than 100 GB; past that the index says so rather than wrap.
pub type Node = u32;
pub const NONE: Node = Node::MAX;

/// A GC root as the dump records it.
#[derive(Debug, Clone, Copy)]
pub struct RootRecord {
    pub tag: u8,
    pub object_id: u64,
    /// For thread-bound roots (frames, JNI locals, native stacks, thread blocks, thread
    /// objects): the thread's serial number.
    pub thread_serial: Option<u32>,
}

pub struct Index<'a> {
    pub data: &'a [u8],
    pub id_size: u8,
    pub timestamp_ms: u64,
    pub format: String,
    strings: Map<u64, (usize, usize)>,
    pub classes: ClassIndex,
    /// The offset of each object's sub-record, sorted by the object's id (which follows
    /// its tag byte): the node number is the position.
    objects: Offsets,
    lookup: Lookup,
    pub roots: Vec<RootRecord>,
    /// Thread serial → thread object id (from ROOT_THREAD_OBJECT).
    pub threads: Map<u32, u64>,
    /// (offset, heap id) at each HEAP_DUMP_INFO: objects after it belong to that heap.
    pub heaps: Vec<(u64, u32, u64)>,
    pub counts: Counts,
    /// A described heap's class objects' own sizes (see `Input::class_sizes`); empty for
    /// a dump.
    pub class_sizes: Map<u64, u64>,
}

#[derive(Debug, Default, Clone, Copy)]
pub struct Counts {
    pub instances: u64,
    pub object_arrays: u64,
    pub primitive_arrays: u64,
    pub classes: u64,
}

impl<'a> Index<'a> {
    /// Walks the dump once, in `threads` runs of records side by side. `ticker(start)`
    /// makes each run's progress reporter (its offsets count from `start`). With `dump`,
    /// only the heap records in that range are read (one heap dump of a file holding
    /// several); strings and class names are read from the whole file.
    pub fn build<T, F>(
        hprof: &Hprof<'a>,
        threads: usize,
        dump: Option<std::ops::Range<u64>>,
        ticker: F,
    ) -> Result<Index<'a>, AnalyzeError>
    where
        T: Tick<Error = AnalyzeError>,
        F: Fn(u64) -> T + Sync,
    {
        use rayon::prelude::*;
        let data = hprof.data();
        let id_size = hprof.id_size();
        let header = hprof.header();
        let empty = || Index {
            data,
            id_size,
            timestamp_ms: header.timestamp_ms,
            format: format!("JAVA PROFILE {}", header.version),
            strings: Map::default(),
            classes: ClassIndex::new(id_size),
            objects: Offsets::empty(data.len() as u64),
            lookup: Lookup::default(),
            roots: Vec::new(),
            threads: Map::default(),
            heaps: Vec::new(),
            counts: Counts::default(),
            class_sizes: Map::default(),
        };
        // Several runs a thread: their sorts take unequal time (a stretch of the dump out
        // of address order sorts slowly), and short runs even that out.
        let runs = hprof.split(threads * 4)?;
        let mut parts: Vec<Index<'a>> = runs
            .into_par_iter()
            .map(|run| {
                let mut part = empty();
                let mut tick = ticker(run.start);
                part.walk(hprof, run, dump.as_ref(), &mut tick)?;
                // Each run sorts its own objects by id, read back from the dump (a
                // stable merge sort: a dump lists objects in address runs, which it joins
                // fast, and an id dumped twice keeps its file order); the runs are merged
                // below.
                part.objects
                    .sort_by_key(|offset| id_at(data, offset as usize + 1, id_size).unwrap_or(0));
                Ok(part)
            })
            .collect::<Result<_, AnalyzeError>>()?;
        let mut ix = empty();
        let runs: Vec<Offsets> = parts
            .iter_mut()
            .map(|p| std::mem::replace(&mut p.objects, Offsets::empty(0)))
            .collect();
        (ix.objects, ix.lookup) = merge_sorted(runs, data.len() as u64, |offset| {
            id_at(data, offset as usize + 1, id_size).unwrap_or(0)
        });
        // In file order, so that what comes first wins, as in one walk.
        for part in parts {
            for (id, at) in part.strings {
                ix.strings.entry(id).or_insert(at);
            }
            ix.classes.merge(part.classes);
            ix.roots.extend(part.roots);
            for (serial, thread) in part.threads {
                ix.threads.entry(serial).or_insert(thread);
            }
            ix.heaps.extend(part.heaps);
            ix.counts.instances += part.counts.instances;
            ix.counts.object_arrays += part.counts.object_arrays;
            ix.counts.primitive_arrays += part.counts.primitive_arrays;
            ix.counts.classes += part.counts.classes;
        }
        // Two values are kept for marks: no node, and a path's start.
        if ix.objects.len() >= NONE as usize - 1 {
            return Err(AnalyzeError::TooManyObjects(ix.objects.len() as u64));
        }
        Ok(ix)
    }

    /// Indexes the records that start in `run`.
    fn walk<T>(
        &mut self,
        hprof: &Hprof<'a>,
        run: std::ops::Range<u64>,
        dump: Option<&std::ops::Range<u64>>,
        tick: &mut T,
    ) -> Result<(), AnalyzeError>
    where
        T: Tick<Error = AnalyzeError>,
    {
        let id_size = self.id_size;
        for record in Records::at(self.data, hprof.header(), run.start) {
            let record = record?;
            if record.offset >= run.end {
                break;
            }
            tick.tick(record.offset)?;
            match record.tag {
                tags::STRING => {
                    if let Some(s) = record.as_string()? {
                        let start = record.body_offset() as usize + id_size as usize;
                        self.strings.insert(s.id, (start, s.bytes.len()));
                    }
                }
                tags::LOAD_CLASS => {
                    if let Some(c) = record.as_load_class()? {
                        self.classes.add_name(c.class_id, c.name_id);
                    }
                }
                tags::HEAP_DUMP | tags::HEAP_DUMP_SEGMENT
                    if dump.is_none_or(|d| d.contains(&record.offset)) =>
                {
                    for sub in record.sub_records() {
                        self.add(&sub?)?;
                    }
                }
                _ => {}
            }
        }
        tick.finish_at(run.end.min(self.data.len() as u64))?;
        Ok(())
    }

    fn add(&mut self, sub: &hprof_shrink_core::hprof::SubRecord<'a>) -> Result<(), AnalyzeError> {
        match &sub.kind {
            Sub::Instance(_) => {
                self.counts.instances += 1;
                self.objects.push(sub.offset);
            }
            Sub::ObjectArray(_) => {
                self.counts.object_arrays += 1;
                self.objects.push(sub.offset);
            }
            Sub::PrimitiveArray(_) => {
                self.counts.primitive_arrays += 1;
                self.objects.push(sub.offset);
            }
            Sub::PrimitiveArrayNoData(_) => {
                self.counts.primitive_arrays += 1;
                self.objects.push(sub.offset);
            }
            Sub::ClassDump(c) => {
                self.counts.classes += 1;
                self.classes.add_class_dump(c, sub.offset);
                self.objects.push(sub.offset);
            }
            Sub::Root(r) => {
                let n = self.id_size as usize;
                let u4 = |at: usize| u4_at(sub.raw, at);
                let thread_serial = match r.tag {
                    tags::ROOT_JAVA_FRAME
                    | tags::ROOT_JNI_LOCAL
                    | tags::ROOT_NATIVE_STACK
                    | tags::ROOT_THREAD_BLOCK
                    | tags::ROOT_THREAD_OBJECT
                    | tags::ROOT_JNI_MONITOR => u4(1 + n),
                    _ => None,
                };
                if r.tag == tags::ROOT_THREAD_OBJECT {
                    if let Some(serial) = thread_serial {
                        self.threads.entry(serial).or_insert(r.object_id);
                    }
                }
                self.roots.push(RootRecord {
                    tag: r.tag,
                    object_id: r.object_id,
                    thread_serial,
                });
            }
            Sub::HeapDumpInfo(h) => self.heaps.push((sub.offset, h.heap_id, h.name_id)),
        }
        Ok(())
    }

    pub fn len(&self) -> usize {
        self.objects.len()
    }

    /// Shrinks the id lookup from 2 bytes an object to 1/32 for the steps that look up
    /// few ids: one range per 64 ranges before, about 128 objects, so that [`Index::node`]
    /// reads the dump 7 times an id where it read it once or twice (the triage's paths,
    /// after the dominators, look up a collection's entries when they cross one).
    pub fn release_lookup(&mut self) {
        self.lookup = std::mem::take(&mut self.lookup).coarser(6);
    }

    /// The node of an object id; `None` for 0, and for ids the dump does not hold (a
    /// dropped array of a shrunk dump, or a dangling reference).
    #[inline]
    pub fn node(&self, id: u64) -> Option<Node> {
        self.lookup.find(id, |n| self.id(n))
    }

    /// Every object's sub-record has its id right after the tag byte.
    #[inline]
    pub fn id(&self, node: Node) -> u64 {
        id_at(self.data, self.offset(node) as usize + 1, self.id_size).unwrap_or(0)
    }

    #[inline]
    pub fn offset(&self, node: Node) -> u64 {
        self.objects.get(node as usize)
    }

    /// The sub-record bytes of a node, from its tag byte to the end of the dump.
    #[inline]
    pub fn raw(&self, node: Node) -> &'a [u8] {
        &self.data[self.offset(node) as usize..]
    }

    /// A primitive array's element type and elements; `None` for any other record, or
    /// one cut short by the end of the dump.
    pub fn primitive(&self, node: Node) -> Option<(BasicType, &'a [u8])> {
        let raw = self.raw(node);
        if raw.first() != Some(&tags::PRIMITIVE_ARRAY_DUMP) {
            return None;
        }
        let n = self.id_size as usize;
        let count = u4_at(raw, 5 + n)? as usize;
        let ty = BasicType::from_u8(*raw.get(9 + n)?)?;
        let start = 10 + n;
        let len = count.checked_mul(ty.size(n as u8) as usize)?;
        raw.get(start..start.checked_add(len)?).map(|b| (ty, b))
    }

    #[inline]
    pub fn tag(&self, node: Node) -> u8 {
        self.data[self.offset(node) as usize]
    }

    /// A STRING record's text (Modified UTF-8, shown lossily).
    pub fn string(&self, id: u64) -> Option<std::borrow::Cow<'a, str>> {
        let &(start, len) = self.strings.get(&id)?;
        Some(String::from_utf8_lossy(&self.data[start..start + len]))
    }

    /// The heap id of the object at `offset`: 0 for dumps without HEAP_DUMP_INFO.
    pub fn heap_of(&self, offset: u64) -> (u32, u64) {
        let i = self.heaps.partition_point(|h| h.0 <= offset);
        if i == 0 {
            (0, 0)
        } else {
            (self.heaps[i - 1].1, self.heaps[i - 1].2)
        }
    }

    /// Every node, in id order.
    pub fn nodes(&self) -> impl Iterator<Item = Node> {
        0..self.objects.len() as Node
    }

    /// Bytes the index takes.
    pub fn memory(&self) -> u64 {
        self.objects.bytes() + self.lookup.starts.capacity() as u64 * 4
    }
}

impl From<FormatError> for AnalyzeError {
    fn from(e: FormatError) -> Self {
        AnalyzeError::Format(e)
    }
}

/// Merges runs of offsets each sorted by id (`id_at(offset)`), ids dumped twice in file
/// order, into one, keeping the first (lowest offset) of any id dumped twice, and makes
/// the lookup table on the way. On all threads: each merges the ids of its own range of
/// lookup buckets (an id dumped twice falls in one range) straight into its stretch of
/// the result and of the table, so that nothing is copied after (but the rare stretch
/// after an id dumped twice, moved down in place).
fn merge_sorted(
    runs: Vec<Offsets>,
    max_offset: u64,
    id_at: impl Fn(u64) -> u64 + Sync,
) -> (Offsets, Lookup) {
    merge_sorted_in(runs, max_offset, id_at, rayon::current_num_threads())
}

/// [`merge_sorted`] in `pieces` pieces at most.
fn merge_sorted_in(
    mut runs: Vec<Offsets>,
    max_offset: u64,
    id_at: impl Fn(u64) -> u64 + Sync,
    pieces: usize,
) -> (Offsets, Lookup) {
    use rayon::prelude::*;
    runs.retain(|r| r.len() > 0);
    let total: usize = runs.iter().map(Offsets::len).sum();
    let (Some(min), Some(max)) = (
        runs.iter().map(|r| id_at(r.get(0))).min(),
        runs.iter().map(|r| id_at(r.get(r.len() - 1))).max(),
    ) else {
        return (Offsets::empty(max_offset), Lookup::default());
    };
    let mut lookup = Lookup::starting(min, max, total);
    let buckets = lookup.starts.len() - 1;
    let pieces = pieces.clamp(1, buckets);
    let first_bucket = |p: usize| buckets * p / pieces;
    // The smallest id of bucket `b`.
    let shift = lookup.shift;
    let lowest = |b: usize| {
        if b >= buckets {
            u64::MAX
        } else {
            min + ((b as u64) << shift)
        }
    };
    // Where ids from `id` on start in a run.
    let cut = |r: &Offsets, id: u64| {
        let (mut lo, mut hi) = (0, r.len());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if id_at(r.get(mid)) < id {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    };
    // Each piece's ranges of the runs; its stretch of the result holds them all.
    let ranges: Vec<Vec<(&Offsets, std::ops::Range<usize>)>> = (0..pieces)
        .map(|p| {
            let (from, to) = (lowest(first_bucket(p)), lowest(first_bucket(p + 1)));
            runs.iter().map(|r| (r, cut(r, from)..cut(r, to))).collect()
        })
        .collect();
    let room: Vec<usize> = ranges
        .iter()
        .map(|r| r.iter().map(|(_, r)| r.len()).sum())
        .collect();
    let mut out = Offsets::zeros(total, max_offset);
    let starts = split_at_lengths(
        &mut lookup.starts[..buckets],
        (0..pieces).map(|p| first_bucket(p + 1) - first_bucket(p)),
    );
    let mut stretch_at = 0;
    let stretches: Vec<(usize, OffsetsMut<'_>)> = out
        .split_mut(&room)
        .into_iter()
        .zip(&room)
        .map(|(stretch, &len)| {
            stretch_at += len;
            (stretch_at - len, stretch)
        })
        .collect();
    let kept: Vec<usize> = stretches
        .into_par_iter()
        .zip(starts)
        .enumerate()
        .map(|(p, ((at, stretch), starts))| {
            let b0 = first_bucket(p);
            let bucket = |id: u64| ((id - min) >> shift) as usize - b0;
            merge_piece(&ranges[p], stretch, at, &id_at, bucket, starts)
        })
        .collect();
    drop(ranges);
    drop(runs);
    // Stretches after one that kept fewer than its room move down, their starts with
    // them.
    let (mut from, mut to) = (0, 0);
    for p in 0..pieces {
        if from != to {
            out.copy_within(from..from + kept[p], to);
            let gap = (from - to) as u32;
            for s in &mut lookup.starts[first_bucket(p)..first_bucket(p + 1)] {
                *s -= gap;
            }
        }
        from += room[p];
        to += kept[p];
    }
    out.truncate(to);
    lookup.starts[buckets] = to as u32;
    (out, lookup)
}

/// Merges the `ranges` of runs (sorted by id; of equal ids the earlier run's first) into
/// `out` (which has room for them all, and starts at `at` in the whole), keeping the
/// first of an id dumped twice; `starts` gets where each of its lookup buckets
/// (`bucket(id)` from 0) starts in the whole. Returns how many it kept.
fn merge_piece(
    ranges: &[(&Offsets, std::ops::Range<usize>)],
    mut out: OffsetsMut<'_>,
    at: usize,
    id_at: impl Fn(u64) -> u64,
    bucket: impl Fn(u64) -> usize,
    starts: &mut [u32],
) -> usize {
    let mut kept = 0usize;
    let mut filled = 0usize;
    if let Some(s) = starts.first_mut() {
        *s = at as u32;
    }
    // Each run's next (id, offset).
    let mut heads: Vec<Option<(u64, u64)>> = ranges
        .iter()
        .map(|(run, r)| (!r.is_empty()).then(|| (id_at(run.get(r.start)), run.get(r.start))))
        .collect();
    let mut next: Vec<usize> = ranges.iter().map(|(_, r)| r.start).collect();
    let mut last: Option<u64> = None;
    loop {
        // The run with the smallest next id (the earliest run of equal ones), and the
        // smallest next id of the others: everything of that run below it goes at once
        // (a dump's runs mostly cover ranges of ids of their own).
        let mut best: Option<usize> = None;
        for (r, head) in heads.iter().enumerate() {
            if let Some(h) = head {
                if best.is_none_or(|b| heads[b].is_some_and(|x| h.0 < x.0)) {
                    best = Some(r);
                }
            }
        }
        let Some(b) = best else { break };
        let bound = (heads.iter().enumerate())
            .filter(|(r, _)| *r != b)
            .filter_map(|(_, h)| h.map(|h| h.0))
            .min()
            .unwrap_or(u64::MAX);
        let (run, range) = (ranges[b].0, &ranges[b].1);
        let Some(mut head) = heads[b] else { break };
        let mut i = next[b];
        loop {
            let (id, offset) = head;
            if last != Some(id) {
                let k = bucket(id);
                while filled < k {
                    filled += 1;
                    starts[filled] = (at + kept) as u32;
                }
                out.set(kept, offset);
                kept += 1;
                last = Some(id);
            }
            i += 1;
            if i == range.end {
                heads[b] = None;
                break;
            }
            let o = run.get(i);
            head = (id_at(o), o);
            if head.0 >= bound {
                heads[b] = Some(head);
                break;
            }
        }
        next[b] = i;
    }
    while filled + 1 < starts.len() {
        filled += 1;
        starts[filled] = (at + kept) as u32;
    }
    kept
}

/// Finds an id among the sorted ids: a table of where each range of ids starts narrows
/// the search to a few entries, since ids (addresses) spread fairly evenly.
#[derive(Default)]
struct Lookup {
    min: u64,
    shift: u32,
    starts: Vec<u32>,
}

impl Lookup {
    /// For `n` ids from `min` to `max`: about one range per two ids.
    fn starting(min: u64, max: u64, n: usize) -> Lookup {
        let span = max - min;
        let buckets = (n / 2).max(1).next_power_of_two() as u64;
        let mut shift = 0;
        while (span >> shift) >= buckets {
            shift += 1;
        }
        let count = (span >> shift) as usize + 1;
        Lookup {
            min,
            shift,
            starts: vec![0u32; count + 1],
        }
    }

    /// The same lookup with one range for every `2^bits` ranges of this one.
    fn coarser(self, bits: u32) -> Lookup {
        let Lookup { min, shift, starts } = self;
        let Some(count) = starts.len().checked_sub(1) else {
            return Lookup::default();
        };
        let starts = (0..=count.div_ceil(1 << bits))
            .map(|c| starts[(c << bits).min(count)])
            .collect();
        Lookup {
            min,
            shift: shift + bits,
            starts,
        }
    }

    /// The position of `id`, where `id_of(position)` reads the id at a position.
    #[inline]
    fn find(&self, id: u64, id_of: impl Fn(Node) -> u64) -> Option<Node> {
        if id < self.min || self.starts.is_empty() {
            return None;
        }
        let b = ((id - self.min) >> self.shift) as usize;
        if b + 1 >= self.starts.len() {
            return None;
        }
        let (mut lo, mut hi) = (self.starts[b], self.starts[b + 1]);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            match id_of(mid).cmp(&id) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => return Some(mid),
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn offsets(o: &Offsets) -> Vec<u64> {
        (0..o.len()).map(|i| o.get(i)).collect()
    }

    /// Runs of offsets from runs of (id, offset), and the id at each offset.
    fn runs(pairs: &[Vec<(u64, u64)>], wide: bool) -> (Vec<Offsets>, Map<u64, u64>) {
        let runs = pairs
            .iter()
            .map(|r| {
                let mut o = Offsets::empty(if wide { u64::MAX } else { 1000 });
                r.iter().for_each(|p| o.push(p.1));
                o
            })
            .collect();
        (
            runs,
            pairs.iter().flatten().map(|&(id, o)| (o, id)).collect(),
        )
    }

    #[test]
    fn merged_runs_are_sorted_and_keep_the_first_of_a_twice_dumped_id() {
        let a = vec![(1, 10), (5, 50), (9, 90)];
        let b = vec![(2, 20), (5, 500), (7, 70)];
        let (r, ids) = runs(&[a, Vec::new(), b], false);
        let (merged, lookup) = merge_sorted(r, 1000, |o| ids[&o]);
        assert_eq!(offsets(&merged), vec![10, 20, 50, 70, 90]);
        let ids = [1, 2, 5, 7, 9];
        for (n, id) in ids.iter().enumerate() {
            assert_eq!(lookup.find(*id, |k| ids[k as usize]), Some(n as Node));
        }
    }

    #[test]
    fn pieces_after_an_id_dumped_twice_move_down_with_their_lookup() {
        // Two runs over the same ids; the second dumps some of them again (spread over
        // every piece), at offsets after the first's.
        let first: Vec<(u64, u64)> = (0..3000u64).map(|i| (1000 + i * 16, i)).collect();
        let again: Vec<(u64, u64)> = (0..3000u64)
            .filter(|i| i % 7 == 3)
            .map(|i| (1000 + i * 16, 10_000 + i))
            .collect();
        let (r, ids) = runs(&[first.clone(), again], false);
        for pieces in [1, 3, 8] {
            let r = r.iter().map(|o| {
                let mut c = Offsets::empty(1 << 20);
                (0..o.len()).for_each(|i| c.push(o.get(i)));
                c
            });
            let (merged, lookup) = merge_sorted_in(r.collect(), 1 << 20, |o| ids[&o], pieces);
            // Each id once, at its first offset, in id order.
            assert_eq!(
                offsets(&merged),
                first.iter().map(|p| p.1).collect::<Vec<_>>(),
                "{pieces} pieces"
            );
            let sorted: Vec<u64> = first.iter().map(|p| p.0).collect();
            let id_of = |k: Node| sorted[k as usize];
            for (n, &id) in sorted.iter().enumerate() {
                assert_eq!(lookup.find(id, id_of), Some(n as Node), "{pieces} pieces");
                assert_eq!(lookup.find(id + 8, id_of), None);
            }
        }
    }

    #[test]
    fn offsets_past_4_gib_are_kept_whole() {
        let far = 5u64 << 32;
        let (r, ids) = runs(&[vec![(1, far + 7), (2, 3)]], true);
        let (merged, _) = merge_sorted(r, far + 8, |o| ids[&o]);
        assert!(matches!(merged, Offsets::Wide(_)));
        assert_eq!(offsets(&merged), vec![far + 7, 3]);
    }

    #[test]
    fn lookup_finds_every_id_and_nothing_else() {
        // Ids in two distant clusters, past 2^32, as two heap regions would be; split
        // into two runs as two threads would find them.
        let mut objects: Vec<(u64, u64)> = (0..1000u64)
            .map(|i| (0x1_2000_0000 + i * 24, i))
            .chain((0..500u64).map(|i| (0x7f_0000_0000 + i * 16, 2000 + i)))
            .collect();
        let mut second = objects.split_off(700);
        objects.sort_unstable();
        second.sort_unstable();
        let mut ids: Vec<u64> = objects.iter().chain(&second).map(|o| o.0).collect();
        ids.sort_unstable();
        let (r, at) = runs(&[objects, second], false);
        let (_, lookup) = merge_sorted(r, 1 << 20, |o| at[&o]);
        let id_of = |k: Node| ids[k as usize];
        // As made, and made coarser (as after the dominators), by 1 to more bits than
        // there are ranges.
        let coarser = [1, 6, 20].map(|bits| {
            Lookup {
                min: lookup.min,
                shift: lookup.shift,
                starts: lookup.starts.clone(),
            }
            .coarser(bits)
        });
        for lookup in std::iter::once(&lookup).chain(&coarser) {
            for (n, id) in ids.iter().enumerate() {
                assert_eq!(lookup.find(*id, id_of), Some(n as Node));
                assert_eq!(lookup.find(id + 1, id_of), None);
            }
            assert_eq!(lookup.find(0, id_of), None);
            assert_eq!(lookup.find(u64::MAX, id_of), None);
        }
        assert!(coarser[1].starts.len() * 32 < lookup.starts.len());
    }
}
