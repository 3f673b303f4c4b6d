//! One walk over the mapped dump builds the heap's index: strings and class names, class
//! dumps, GC roots, the heaps ART names, and every object's id and offset. Objects stay in
//! the mapping; the index holds 16 bytes per object and reads the rest back when asked.

use hprof_shrink_core::hprof::heap::Sub;
use hprof_shrink_core::hprof::tags;
use hprof_shrink_core::hprof::{ClassIndex, FormatError, Hprof, Records, Tick};
use rustc_hash::FxHashMap;

use super::error::AnalyzeError;

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
    strings: FxHashMap<u64, (usize, usize)>,
    pub classes: ClassIndex,
    /// (object id, offset of its sub-record), sorted by id: the node number is the position.
    objects: Vec<(u64, u64)>,
    lookup: Lookup,
    pub roots: Vec<RootRecord>,
    /// Thread serial → thread object id (from ROOT_THREAD_OBJECT).
    pub threads: FxHashMap<u32, u64>,
    /// (offset, heap id) at each HEAP_DUMP_INFO: objects after it belong to that heap.
    pub heaps: Vec<(u64, u32, u64)>,
    pub counts: Counts,
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
    /// makes each run's progress reporter (its offsets count from `start`).
    pub fn build<T, F>(
        hprof: &Hprof<'a>,
        threads: usize,
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
            strings: FxHashMap::default(),
            classes: ClassIndex::new(id_size),
            objects: Vec::new(),
            lookup: Lookup::default(),
            roots: Vec::new(),
            threads: FxHashMap::default(),
            heaps: Vec::new(),
            counts: Counts::default(),
        };
        let runs = hprof.split(threads)?;
        let mut parts: Vec<Index<'a>> = runs
            .into_par_iter()
            .map(|run| {
                let mut part = empty();
                let mut tick = ticker(run.start);
                part.walk(hprof, run, &mut tick)?;
                // Each run sorts its own objects (a merge sort: a dump lists objects in
                // address runs, which it joins fast); the runs are merged below.
                part.objects.sort();
                Ok(part)
            })
            .collect::<Result<_, AnalyzeError>>()?;
        let mut ix = empty();
        let runs: Vec<Vec<(u64, u64)>> = parts
            .iter_mut()
            .map(|p| std::mem::take(&mut p.objects))
            .collect();
        ix.objects = merge_sorted(runs);
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
        if ix.objects.len() >= NONE as usize {
            return Err(AnalyzeError::TooManyObjects(ix.objects.len() as u64));
        }
        ix.lookup = Lookup::new(&ix.objects);
        Ok(ix)
    }

    /// Indexes the records that start in `run`.
    fn walk<T>(
        &mut self,
        hprof: &Hprof<'a>,
        run: std::ops::Range<u64>,
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
                tags::HEAP_DUMP | tags::HEAP_DUMP_SEGMENT => {
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
            Sub::Instance(i) => {
                self.counts.instances += 1;
                self.objects.push((i.id, sub.offset));
            }
            Sub::ObjectArray(a) => {
                self.counts.object_arrays += 1;
                self.objects.push((a.id, sub.offset));
            }
            Sub::PrimitiveArray(a) => {
                self.counts.primitive_arrays += 1;
                self.objects.push((a.id, sub.offset));
            }
            Sub::PrimitiveArrayNoData(a) => {
                self.counts.primitive_arrays += 1;
                self.objects.push((a.id, sub.offset));
            }
            Sub::ClassDump(c) => {
                self.counts.classes += 1;
                self.classes.add_class_dump(c, sub.offset);
                self.objects.push((c.class_id, sub.offset));
            }
            Sub::Root(r) => {
                let n = self.id_size as usize;
                let u4 = |at: usize| {
                    sub.raw
                        .get(at..at + 4)
                        .map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
                };
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

    /// The node of an object id; `None` for 0, and for ids the dump does not hold (a
    /// dropped array of a shrunk dump, or a dangling reference).
    #[inline]
    pub fn node(&self, id: u64) -> Option<Node> {
        self.lookup.find(&self.objects, id)
    }

    #[inline]
    pub fn id(&self, node: Node) -> u64 {
        self.objects[node as usize].0
    }

    #[inline]
    pub fn offset(&self, node: Node) -> u64 {
        self.objects[node as usize].1
    }

    /// The sub-record bytes of a node, from its tag byte to the end of the dump.
    #[inline]
    pub fn raw(&self, node: Node) -> &'a [u8] {
        &self.data[self.offset(node) as usize..]
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
        (self.objects.capacity() * 16 + self.lookup.starts.capacity() * 4) as u64
    }
}

impl From<FormatError> for AnalyzeError {
    fn from(e: FormatError) -> Self {
        AnalyzeError::Format(e)
    }
}

/// Merges runs each sorted by (id, offset) into one, keeping the first (lowest offset)
/// of any id dumped twice.
fn merge_sorted(mut runs: Vec<Vec<(u64, u64)>>) -> Vec<(u64, u64)> {
    runs.retain(|r| !r.is_empty());
    let total = runs.iter().map(Vec::len).sum();
    let mut out: Vec<(u64, u64)> = Vec::with_capacity(total);
    let mut at = vec![0usize; runs.len()];
    loop {
        let mut best: Option<usize> = None;
        for (r, run) in runs.iter().enumerate() {
            if let Some(x) = run.get(at[r]) {
                if best.is_none_or(|b| *x < runs[b][at[b]]) {
                    best = Some(r);
                }
            }
        }
        let Some(b) = best else { break };
        let x = runs[b][at[b]];
        at[b] += 1;
        if out.last().is_none_or(|l| l.0 != x.0) {
            out.push(x);
        }
    }
    out
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
    fn new(objects: &[(u64, u64)]) -> Lookup {
        let (Some(first), Some(last)) = (objects.first(), objects.last()) else {
            return Lookup::default();
        };
        let min = first.0;
        let span = last.0 - min;
        let buckets = (objects.len() / 2).max(1).next_power_of_two() as u64;
        let mut shift = 0;
        while (span >> shift) >= buckets {
            shift += 1;
        }
        let count = (span >> shift) as usize + 1;
        let mut starts = vec![0u32; count + 1];
        let mut at = 0usize;
        for (b, start) in starts.iter_mut().enumerate() {
            while at < objects.len() && (((objects[at].0 - min) >> shift) as usize) < b {
                at += 1;
            }
            *start = at as u32;
        }
        Lookup { min, shift, starts }
    }

    #[inline]
    fn find(&self, objects: &[(u64, u64)], id: u64) -> Option<Node> {
        if id < self.min || self.starts.is_empty() {
            return None;
        }
        let b = ((id - self.min) >> self.shift) as usize;
        if b + 1 >= self.starts.len() {
            return None;
        }
        let (lo, hi) = (self.starts[b] as usize, self.starts[b + 1] as usize);
        let slice = &objects[lo..hi];
        slice
            .binary_search_by_key(&id, |o| o.0)
            .ok()
            .map(|i| (lo + i) as Node)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merged_runs_are_sorted_and_keep_the_first_of_a_twice_dumped_id() {
        let a = vec![(1, 10), (5, 50), (9, 90)];
        let b = vec![(2, 20), (5, 500), (7, 70)];
        assert_eq!(
            merge_sorted(vec![a, Vec::new(), b]),
            vec![(1, 10), (2, 20), (5, 50), (7, 70), (9, 90)]
        );
    }

    #[test]
    fn lookup_finds_every_id_and_nothing_else() {
        // Ids in two distant clusters, past 2^32, as two heap regions would be.
        let mut objects: Vec<(u64, u64)> = (0..1000u64)
            .map(|i| (0x1_2000_0000 + i * 24, i))
            .chain((0..500u64).map(|i| (0x7f_0000_0000 + i * 16, 2000 + i)))
            .collect();
        objects.sort_unstable();
        let lookup = Lookup::new(&objects);
        for (n, (id, _)) in objects.iter().enumerate() {
            assert_eq!(lookup.find(&objects, *id), Some(n as Node));
            assert_eq!(lookup.find(&objects, id + 1), None);
        }
        assert_eq!(lookup.find(&objects, 0), None);
        assert_eq!(lookup.find(&objects, u64::MAX), None);
    }
}
