//! Pass 3, buffer shrink: a filter in front of the writer. Every sub-record passes
//! unchanged except primitive arrays the plan does not keep (dropped, emptied or zeroed),
//! Bitmap instances whose `mBuffer` names a duplicate, and the DumpData `buffers` array,
//! whose duplicate ids are rewritten to the kept copy. A heap dump segment's new length is
//! computed by a walk over the segment before it is written, so nothing is buffered.

use std::io::Write;

use serde::Serialize;

use super::plan::{Keeper, Plan, Replaced};
use crate::control::{Control, Stage};
use crate::error::Result;
use crate::hprof::heap::{parse_sub_record, quick_len};
use crate::hprof::id_at;
use crate::hprof::{
    tags, BasicType, Header, ObjectArray, PrimitiveArray, Record, Rewrite, Sub, SubRecord, Visitor,
};
use crate::hprof::{FormatError, Hprof, HprofWriter, Interest};
use crate::options::DroppedMode;

/// Count and element bytes of arrays of one element type.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Tally {
    /// Arrays.
    pub count: u64,
    /// Their element bytes.
    pub bytes: u64,
}

impl std::ops::AddAssign for Tally {
    fn add_assign(&mut self, other: Tally) {
        self.count += other.count;
        self.bytes += other.bytes;
    }
}

impl Tally {
    /// Counts one array of `bytes` element bytes.
    pub fn add(&mut self, bytes: u64) {
        self.count += 1;
        self.bytes += bytes;
    }
}

/// What pass 3 did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WriteStats {
    /// Per primitive element type (in [`BasicType::PRIMITIVES`] order): kept and dropped.
    pub kept: [Tally; 8],
    /// Dropped, likewise.
    pub dropped: [Tally; 8],
    /// Bitmap instances whose `mBuffer` now names the kept copy.
    pub bitmaps_repointed: u64,
    /// DumpData `buffers` elements now naming the kept copy.
    pub images_repointed: u64,
    /// Heap dump records and segments written.
    pub segments: u64,
    /// Private packages: String values replaced (their element bytes).
    pub strings_replaced: Tally,
    /// Private packages: Bitmap buffers and images whose bytes were replaced.
    pub pixels_replaced: Tally,
}

impl WriteStats {
    /// Adds what another part of the same walk did.
    pub fn add(&mut self, other: &WriteStats) {
        for (a, b) in self.kept.iter_mut().zip(&other.kept) {
            *a += *b;
        }
        for (a, b) in self.dropped.iter_mut().zip(&other.dropped) {
            *a += *b;
        }
        self.bitmaps_repointed += other.bitmaps_repointed;
        self.images_repointed += other.images_repointed;
        self.segments += other.segments;
        self.strings_replaced += other.strings_replaced;
        self.pixels_replaced += other.pixels_replaced;
    }

    /// Every dropped array, whatever its type.
    pub fn dropped_total(&self) -> Tally {
        sum(&self.dropped)
    }
    /// Every kept array, whatever its type.
    pub fn kept_total(&self) -> Tally {
        sum(&self.kept)
    }
}

fn sum(t: &[Tally; 8]) -> Tally {
    t.iter().fold(Tally::default(), |mut a, b| {
        a += *b;
        a
    })
}

fn slot(ty: BasicType) -> usize {
    ty.primitive_index().unwrap_or(0)
}

/// Pass 3's filter: passes on what the plan keeps to the next visitor (the writer), drops or empties the rest, repoints Bitmaps at kept copies.
pub struct ShrinkFilter<'p, V: Visitor> {
    plan: &'p Plan,
    keeper: Keeper<'p>,
    next: V,
    id_size: u8,
    /// What it kept and dropped so far.
    pub stats: WriteStats,
    patches: Vec<(usize, u64)>,
    /// A private package's replaced elements, reused array to array.
    scratch: Vec<u8>,
    /// Segment lengths are left to the next visitor (which counts what it is given).
    lengths_downstream: bool,
}

impl<'p, V: Visitor> ShrinkFilter<'p, V> {
    /// A filter applying `plan` in front of `next`.
    pub fn new(plan: &'p Plan, id_size: u8, next: V) -> Self {
        ShrinkFilter {
            plan,
            keeper: plan.keeper(),
            next,
            id_size,
            stats: WriteStats::default(),
            patches: Vec::new(),
            scratch: Vec::new(),
            lengths_downstream: false,
        }
    }

    /// For a next visitor that works out each segment's new length from what it is given
    /// (it holds the segment's output until its end): no walk ahead over each segment.
    pub fn lengths_downstream(mut self) -> Self {
        self.lengths_downstream = true;
        self
    }

    /// The next visitor and what was kept and dropped.
    pub fn into_inner(self) -> (V, WriteStats) {
        (self.next, self.stats)
    }

    /// The segment's length once the plan is applied: a walk over the segment (in cache
    /// by the time it is written) that only steps over records and asks about arrays.
    fn new_length(&self, segment: &Record<'_>) -> Result<u32, FormatError> {
        let id_size = self.id_size;
        let header = PrimitiveArray::header_len(id_size);
        let body = segment.body;
        let mut keeper = self.plan.keeper();
        let mut removed = 0u64;
        let mut pos = 0usize;
        while pos < body.len() {
            let b = &body[pos..];
            let len = match quick_len(b, id_size) {
                Some(len) => len,
                None => parse_sub_record(b, segment.body_offset() + pos as u64, id_size)?.1,
            };
            if b[0] == tags::PRIMITIVE_ARRAY_DUMP
                && !keeper.keeps(id_at(b, 1, id_size).unwrap_or(0))
            {
                removed += match self.plan.dropped {
                    DroppedMode::Remove => len,
                    DroppedMode::Empty => len - header,
                    DroppedMode::Zero => 0,
                } as u64;
            }
            pos += len;
        }
        Ok((body.len() as u64 - removed) as u32)
    }

    fn primitive_array(
        &mut self,
        sub: &SubRecord<'_>,
        a: &PrimitiveArray<'_>,
    ) -> Result<(), V::Error> {
        let bytes = a.data.len() as u64;
        if let Some(how) = self.keeper.kept_as(a.id) {
            self.stats.kept[slot(a.element_type)].add(bytes);
            if let Some(p) = self.plan.private() {
                if let Some(what) = p.replaced(a.id, how, a.data) {
                    match what {
                        Replaced::String => self.stats.strings_replaced.add(bytes),
                        Replaced::Pixels => self.stats.pixels_replaced.add(bytes),
                    }
                    let mut out = std::mem::take(&mut self.scratch);
                    p.replace(a.id, what, a.data, &mut out);
                    let r = self.next.rewritten(sub, &Rewrite::Elements(&out));
                    self.scratch = out;
                    return r;
                }
            }
            return self.next.sub_record(sub);
        }
        self.stats.dropped[slot(a.element_type)].add(bytes);
        match self.plan.dropped {
            DroppedMode::Remove => Ok(()),
            DroppedMode::Empty => self.next.rewritten(sub, &Rewrite::EmptyArray),
            DroppedMode::Zero => self.next.rewritten(sub, &Rewrite::ZeroedArray),
        }
    }

    fn object_array(&mut self, sub: &SubRecord<'_>, a: &ObjectArray<'_>) -> Result<(), V::Error> {
        self.patches.clear();
        let start = ObjectArray::elements_start(self.id_size);
        for (i, el) in a.element_ids().enumerate() {
            if let Some(kept) = self.plan.remapped(el) {
                self.patches.push((start + i * self.id_size as usize, kept));
            }
        }
        if self.patches.is_empty() {
            return self.next.sub_record(sub);
        }
        self.stats.images_repointed += self.patches.len() as u64;
        let patches = std::mem::take(&mut self.patches);
        let r = self.next.rewritten(sub, &Rewrite::Ids(&patches));
        self.patches = patches;
        r
    }
}

/// Fails with the next visitor's error: the filter's own (a sub-record that does not
/// parse while it measures a segment) converts into it.
impl<V: Visitor> Visitor for ShrinkFilter<'_, V>
where
    V::Error: From<FormatError>,
{
    type Error = V::Error;

    fn header(&mut self, header: &Header<'_>) -> Result<(), V::Error> {
        self.next.header(header)
    }

    fn record(&mut self, record: &Record<'_>) -> Result<(), V::Error> {
        self.next.record(record)
    }

    fn heap_dump_begin(&mut self, segment: &Record<'_>, length: u32) -> Result<(), V::Error> {
        self.stats.segments += 1;
        let length = if self.plan.changes_lengths() && !self.lengths_downstream {
            self.new_length(segment)?
        } else {
            length
        };
        self.next.heap_dump_begin(segment, length)
    }

    fn sub_record(&mut self, sub: &SubRecord<'_>) -> Result<(), V::Error> {
        match &sub.kind {
            Sub::PrimitiveArray(a) => self.primitive_array(sub, a),
            Sub::Instance(inst) => {
                if let Some(at) = self.plan.bitmap_buffer_at(inst.class_id) {
                    let id = id_at(sub.raw, at, self.id_size).unwrap_or(0);
                    if let Some(kept) = self.plan.remapped(id) {
                        self.stats.bitmaps_repointed += 1;
                        return self.next.rewritten(sub, &Rewrite::Ids(&[(at, kept)]));
                    }
                }
                self.next.sub_record(sub)
            }
            Sub::ObjectArray(a) if Some(a.id) == self.plan.dump_data_buffers() => {
                self.object_array(sub, a)
            }
            _ => self.next.sub_record(sub),
        }
    }

    fn rewritten(&mut self, sub: &SubRecord<'_>, rewrite: &Rewrite<'_>) -> Result<(), V::Error> {
        self.next.rewritten(sub, rewrite)
    }

    fn interest(&self) -> Interest {
        let mut i = Interest::NONE.with(tags::PRIMITIVE_ARRAY_DUMP);
        if self.plan.has_remap() {
            i = i.with(tags::INSTANCE_DUMP);
        }
        if self.plan.dump_data_buffers().is_some() {
            i = i.with(tags::OBJECT_ARRAY_DUMP);
        }
        i
    }

    #[inline]
    fn wants_object(&self, tag: u8, id: u64, class_id: u64) -> bool {
        match tag {
            // Only Bitmaps may change; the rest pass over without a parse.
            tags::INSTANCE_DUMP => self.plan.bitmap_buffer_at(class_id).is_some(),
            tags::OBJECT_ARRAY_DUMP => Some(id) == self.plan.dump_data_buffers(),
            _ => true,
        }
    }

    fn passed_over(&mut self, offset: u64, raw: &[u8]) -> Result<(), V::Error> {
        self.next.passed_over(offset, raw)
    }

    fn heap_dump_end(&mut self, segment: &Record<'_>) -> Result<(), V::Error> {
        self.next.heap_dump_end(segment)
    }

    fn end(&mut self) -> Result<(), V::Error> {
        self.next.end()
    }
}

/// Pass 3: writes the shrunk dump to `out` as the plan says; returns the writer, what the
/// pass did and the bytes written.
pub fn write_shrunk<W: Write>(
    hprof: &Hprof<'_>,
    plan: &Plan,
    out: W,
    control: &Control,
) -> Result<(W, WriteStats, u64)> {
    let writer = HprofWriter::new(out, hprof.data(), hprof.id_size());
    let mut filter = ShrinkFilter::new(plan, hprof.id_size(), writer);
    hprof.accept(&mut filter, &mut control.ticker(Stage::Write, hprof.len()))?;
    let (writer, stats) = filter.into_inner();
    let written = writer.written();
    Ok((writer.into_inner()?, stats, written))
}
