//! Pass 2, kept-buffer collect: reads String instances (their `value` ids: kept), live
//! Bitmap instances (their `mBuffer` ids: candidates for dedup), Android 14's
//! `Bitmap$DumpData` (its `natives` kept, its `buffers` images deduplicated) and Matrix's
//! DestroyedActivityInfo (its `mKey`, for the manifest). Arrays it needs the bytes of are
//! located by offset, never copied. A String's value is looked for just before the String,
//! where HotSpot writes it; an array or String that comes before the instance naming it
//! otherwise is found by a second, shorter walk that stops when nothing is missing.

use rustc_hash::{FxHashMap, FxHashSet};

use super::filter::MaybeWanted;
use super::idset::{IdSet, IdSetBuilder};
use super::info::{DumpInfo, InfoCollector, Target, TargetClass};
use super::parallel::{self, Order};
use crate::control::{Control, Stage};
use crate::error::{Error, Result};
use crate::hprof::heap::primitive_array_ending_at;
use crate::hprof::id_at;
use crate::hprof::{
    tags, BasicType, FormatError, Hprof, Instance, Interest, PrimitiveArray, Record, Sub,
    SubRecord, Value, Visitor,
};
use crate::private::kept::{Follow, KeptFields};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// Where a primitive array's elements are in the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Location {
    /// Offset of the PRIMITIVE_ARRAY_DUMP sub-record.
    pub offset: u64,
    /// Offset of its first element.
    pub data: u64,
    /// Bytes of elements.
    pub len: u64,
    /// The element type.
    pub ty: BasicType,
}

impl Location {
    /// The elements, in the mapped dump.
    pub fn bytes<'d>(&self, dump: &'d [u8]) -> &'d [u8] {
        &dump[self.data as usize..(self.data + self.len) as usize]
    }
}

/// A live Bitmap and the buffer it names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BitmapRef {
    /// Offset of the Bitmap's INSTANCE_DUMP.
    pub instance_offset: u64,
    /// The Bitmap's id.
    pub bitmap_id: u64,
    /// The id of its `mBuffer` array.
    pub buffer_id: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Want {
    /// A primitive array whose location is needed.
    Array,
    /// A String object whose value is needed (manifest).
    String,
    /// The `Bitmap$DumpData.buffers` object array.
    DumpDataBuffers,
    /// A `String[]` a kept field names (private packages): its elements are kept.
    KeptArray,
}

/// A String object found for the manifest: its value array and coder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StringObject {
    /// The id of the String's value array.
    pub value: u64,
    /// JDK 9+ `coder`: 0 Latin-1, 1 UTF-16.
    pub coder: Option<i64>,
}

/// The result of pass 2 (before dedup).
#[derive(Debug, Default)]
pub struct Collected {
    /// String instances seen.
    pub string_instances: u64,
    /// `value` ids of every String.
    pub string_values: Arc<IdSet>,
    /// Bitmap instances seen.
    pub bitmaps: u64,
    /// Of those, recycled ones (`mRecycled`).
    pub recycled_bitmaps: u64,
    /// Live bitmaps with a buffer, in file order of the Bitmap instances.
    pub bitmap_buffers: Vec<BitmapRef>,
    /// Android 14+: `Bitmap$DumpData.natives` (kept) and `buffers` (patched on dedup).
    pub dump_data_natives: Option<u64>,
    /// The `buffers` object array of DumpData.
    pub dump_data_buffers: Option<u64>,
    /// Offset of the DumpData instance, to name it in errors.
    pub dump_data_offset: u64,
    /// The images in `buffers`, in element order.
    pub dump_data_images: Vec<u64>,
    /// `mKey` String objects of every DestroyedActivityInfo.
    pub destroyed_keys: Vec<u64>,
    /// Located primitive arrays (bitmap buffers, images, manifest string values).
    pub arrays: FxHashMap<u64, Location>,
    /// String objects read for the manifest.
    pub strings: FxHashMap<u64, StringObject>,
    /// Walks over the file this pass made (1, or 2 when something came before its referrer).
    pub walks: u32,
    /// Private packages: the String objects whose values are kept (see
    /// [`crate::private::KEPT`]), sorted, each once; their values are in `strings`.
    pub kept_strings: Vec<u64>,
    /// The `String[]`s of kept fields found so far.
    kept_arrays: Vec<u64>,
    /// Sub-records the resolve walks read whole: those wanted, and the few others the
    /// filter lets through. Every other record they step over by its length.
    pub resolve_reads: u64,
}

/// The pass 2 visitor.
pub struct Collector<'i> {
    info: &'i DumpInfo,
    /// The target classes, as a short list.
    targets: Vec<(u64, TargetClass)>,
    /// Private packages: the fields whose Strings are kept.
    kept: Option<&'i KeptFields>,
    undumped: FxHashSet<u64>,
    wanted: FxHashMap<u64, Want>,
    /// Every id ever put in `wanted`.
    maybe_wanted: MaybeWanted,
    /// The classes whose instances hold kept fields (a private package's), as a filter.
    kept_classes: MaybeWanted,
    strings: IdSetBuilder,
    out: Collected,
    /// Counting only on the first walk; later walks only look for what is wanted.
    first_walk: bool,
    /// In resolve walks: how many wanted ids no run has found yet, shared by the runs, so
    /// all stop once the last one is found.
    outstanding: Option<&'i AtomicUsize>,
    /// The whole dump, where a String met after its value array was passed (a kept one, a
    /// manifest one) looks for that array just before it.
    dump: &'i [u8],
    /// Bytes [`Collector::value_before`] may still read backwards in this run.
    look_back_left: usize,
}

/// How far before a String its value array is looked for: a String's value comes just
/// before it in HotSpot's dumps, and the Strings looked for (kept ones, the manifest's) are
/// names and labels, far shorter. A longer value is found by a resolve walk instead.
const LOOK_BACK: usize = 64 << 10;

/// What one run may read backwards in all: 16 MiB, so that a dump of a million Strings
/// looked for, none of them after its value, costs no more than that before the resolve
/// walk takes over.
const LOOK_BACK_BUDGET: usize = 16 << 20;

impl<'i> Collector<'i> {
    /// Pass 2 over `dump`, reading what `info` (pass 1) says to.
    pub fn new(info: &'i DumpInfo, dump: &'i [u8]) -> Self {
        let mut c = Collector {
            info,
            targets: info.targets.iter().map(|(c, t)| (*c, *t)).collect(),
            kept: None,
            undumped: info.undumped_targets.iter().copied().collect(),
            wanted: FxHashMap::default(),
            maybe_wanted: MaybeWanted::default(),
            kept_classes: MaybeWanted::default(),
            strings: IdSetBuilder::new(),
            out: Collected::default(),
            first_walk: true,
            outstanding: None,
            dump,
            look_back_left: LOOK_BACK_BUDGET,
        };
        if let Some(m) = info.manufacturer {
            c.want(m, Want::String);
        }
        c
    }

    /// Also noting the Strings `kept` says a private package keeps.
    pub fn with_kept(mut self, kept: Option<&'i KeptFields>) -> Self {
        self.kept = kept.filter(|k| !k.is_empty());
        for &class in self.kept.iter().flat_map(|k| k.instance.keys()) {
            self.kept_classes.add(class);
        }
        self
    }

    /// Notes a String (or the String[]) a kept field names.
    fn keep(&mut self, id: u64, follow: Follow) {
        if id == 0 {
            return;
        }
        match follow {
            Follow::String => {
                self.out.kept_strings.push(id);
                self.want(id, Want::String);
            }
            Follow::Elements => self.want(id, Want::KeptArray),
        }
    }

    /// The kept fields of an instance (of any class) in a private package.
    fn kept_fields(&mut self, inst: &Instance<'_>) {
        let Some(fields) = self.kept.and_then(|k| k.instance.get(&inst.class_id)) else {
            return;
        };
        let id_size = self.info.id_size;
        for &(at, follow) in fields {
            // A short instance (a hostile dump) keeps nothing: its Strings are replaced.
            if let Some(id) = id_at(inst.data, at as usize, id_size) {
                self.keep(id, follow);
            }
        }
    }

    fn want(&mut self, id: u64, what: Want) {
        self.maybe_wanted.add(id);
        if id != 0 && self.wanted.insert(id, what).is_none() {
            if let Some(n) = self.outstanding {
                n.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// Takes `id` off the wanted list if it is wanted as `what`.
    fn found(&mut self, id: u64, what: Want) -> bool {
        if !self.maybe_wanted.may_contain(id) || self.wanted.get(&id) != Some(&what) {
            return false;
        }
        self.wanted.remove(&id);
        if let Some(n) = self.outstanding {
            n.fetch_sub(1, Ordering::Relaxed);
        }
        true
    }

    fn instance(&mut self, sub: &SubRecord<'_>, inst: &Instance<'_>) -> Result<()> {
        if self.kept.is_some() && self.first_walk {
            self.kept_fields(inst);
        }
        // A handful of target classes: a scan beats hashing, on every instance of the dump.
        let target = self
            .targets
            .iter()
            .find(|(c, _)| *c == inst.class_id)
            .map(|(_, t)| *t);
        let is_string = matches!(target.map(|t| t.target), Some(Target::String { .. }));
        if self.kept.is_some() && !is_string {
            // A kept field may name another CharSequence: it holds no String to keep, and
            // no walk more looks for it.
            self.found(inst.id, Want::String);
        }
        let Some(target) = target else {
            if !self.undumped.is_empty() && self.undumped.contains(&inst.class_id) {
                return Err(FormatError::MissingClass {
                    offset: sub.offset,
                    class_id: inst.class_id,
                    what: "an instance the shrink reads",
                }
                .into());
            }
            return Ok(());
        };
        if inst.data.len() as u64 != target.size {
            return Err(FormatError::InstanceLayout {
                offset: sub.offset,
                class_id: inst.class_id,
                expected: target.size,
                actual: inst.data.len() as u64,
            }
            .into());
        }
        let id_size = self.info.id_size;
        let read = |f: Option<crate::hprof::LayoutField>| {
            f.map(|f| Value::read(f.ty, &inst.data[f.offset as usize..], id_size))
        };
        let object = |v: Option<Value>| v.and_then(|v| v.as_object()).unwrap_or(0);
        match target.target {
            Target::String { value, coder } => {
                let value_id = id_at(inst.data, value.offset as usize, id_size).unwrap_or(0);
                if self.first_walk {
                    self.out.string_instances += 1;
                    if value_id != 0 {
                        self.strings.insert(value_id);
                    }
                }
                if !self.wanted.is_empty() && self.found(inst.id, Want::String) {
                    let coder = read(coder).and_then(|v| v.as_i64());
                    self.out.strings.insert(
                        inst.id,
                        StringObject {
                            value: value_id,
                            coder,
                        },
                    );
                    match self.value_before(sub.offset, value_id) {
                        Some(loc) => {
                            self.out.arrays.insert(value_id, loc);
                        }
                        None => self.want(value_id, Want::Array),
                    }
                }
            }
            Target::Bitmap { buffer, recycled } if self.first_walk => {
                self.out.bitmaps += 1;
                let is_recycled = read(recycled).and_then(|v| v.as_i64()).unwrap_or(0) != 0;
                let buffer_id = object(read(buffer));
                if is_recycled {
                    self.out.recycled_bitmaps += 1;
                } else if buffer_id != 0 {
                    self.out.bitmap_buffers.push(BitmapRef {
                        instance_offset: sub.offset,
                        bitmap_id: inst.id,
                        buffer_id,
                    });
                    self.want(buffer_id, Want::Array);
                }
            }
            // The one `Bitmap.dumpData` names; any, if the static was not found.
            Target::DumpData { natives, buffers }
                if self.first_walk && self.info.dump_data.is_none_or(|d| d == inst.id) =>
            {
                self.out.dump_data_offset = sub.offset;
                self.out.dump_data_natives = Some(object(read(natives))).filter(|&n| n != 0);
                let b = object(read(buffers));
                if b != 0 {
                    self.out.dump_data_buffers = Some(b);
                    self.want(b, Want::DumpDataBuffers);
                }
            }
            Target::DestroyedActivityInfo { key } if self.first_walk => {
                let key_id = object(read(key));
                if key_id != 0 {
                    self.out.destroyed_keys.push(key_id);
                    self.want(key_id, Want::String);
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// Where the value array `value_id` of the String at `offset` is, if it is the record
    /// just before the String (within [`LOOK_BACK`], while this run's budget lasts).
    fn value_before(&mut self, offset: u64, value_id: u64) -> Option<Location> {
        let window = LOOK_BACK.min(self.look_back_left);
        if value_id == 0 || window == 0 {
            return None;
        }
        let end = usize::try_from(offset).ok()?;
        let id_size = self.info.id_size;
        let found = primitive_array_ending_at(self.dump, end, value_id, id_size, window);
        // What was read: up to the value found (its own bytes, mostly), else the window.
        let read = found
            .as_ref()
            .map_or(window, |(start, _)| (end - start).min(window));
        self.look_back_left -= read;
        let (start, a) = found?;
        Some(location(start as u64, &a, id_size))
    }

    /// [`Visitor::wants_object`] in a private package, apart so that the ordinary one
    /// stays as small: also instances of kept classes, and any object wanted as a String
    /// (a kept field may name another kind).
    #[inline(never)]
    fn wants_private(&self, kept: &KeptFields, tag: u8, id: u64, class_id: u64) -> bool {
        // Every object of the dump comes here: the filters first, the maps only for what
        // passes them.
        let wanted = || self.maybe_wanted.may_contain(id) && self.wanted.contains_key(&id);
        if tag == tags::INSTANCE_DUMP {
            !self.undumped.is_empty()
                || self.targets.iter().any(|(c, _)| *c == class_id)
                || (self.kept_classes.may_contain(class_id)
                    && kept.instance.contains_key(&class_id))
                || wanted()
        } else {
            wanted()
        }
    }

    /// A collector for a resolve walk: it only looks for `wanted`.
    fn resolver(
        info: &'i DumpInfo,
        dump: &'i [u8],
        wanted: &FxHashMap<u64, Want>,
        outstanding: &'i AtomicUsize,
    ) -> Self {
        let mut c = Collector::new(info, dump);
        c.first_walk = false;
        c.wanted = wanted.clone();
        for id in wanted.keys() {
            c.maybe_wanted.add(*id);
        }
        c.outstanding = Some(outstanding);
        c
    }

    /// Folds a later run's results into this one's.
    fn merge(&mut self, later: Collector<'_>) {
        let (o, l) = (&mut self.out, later.out);
        o.string_instances += l.string_instances;
        o.bitmaps += l.bitmaps;
        o.recycled_bitmaps += l.recycled_bitmaps;
        o.bitmap_buffers.extend(l.bitmap_buffers);
        o.destroyed_keys.extend(l.destroyed_keys);
        o.kept_strings.extend(l.kept_strings);
        o.kept_arrays.extend(l.kept_arrays);
        if o.dump_data_buffers.is_none() && l.dump_data_buffers.is_some() {
            o.dump_data_buffers = l.dump_data_buffers;
            o.dump_data_natives = l.dump_data_natives;
            o.dump_data_offset = l.dump_data_offset;
        }
        if o.dump_data_images.is_empty() {
            o.dump_data_images = l.dump_data_images;
        }
        o.arrays.extend(l.arrays);
        o.strings.extend(l.strings);
        for (id, want) in later.wanted {
            self.wanted.entry(id).or_insert(want);
        }
        self.strings.absorb(&later.strings.build());
    }

    /// Drops wants that another run satisfied, and adds the wants those results imply (the
    /// value of a found String, the images of a found `buffers` array).
    fn settle(&mut self) {
        for s in self.out.strings.values() {
            if s.value != 0 && !self.out.arrays.contains_key(&s.value) {
                self.wanted.entry(s.value).or_insert(Want::Array);
            }
        }
        for s in &self.out.kept_strings {
            if !self.out.strings.contains_key(s) {
                self.wanted.entry(*s).or_insert(Want::String);
            }
        }
        for image in &self.out.dump_data_images {
            if *image != 0 && !self.out.arrays.contains_key(image) {
                self.wanted.entry(*image).or_insert(Want::Array);
            }
        }
        let out = &self.out;
        self.wanted.retain(|id, want| match want {
            Want::Array => !out.arrays.contains_key(id),
            Want::String => !out.strings.contains_key(id),
            Want::DumpDataBuffers => out.dump_data_images.is_empty(),
            Want::KeptArray => !out.kept_arrays.contains(id),
        });
    }
}

/// Runs pass 2 on `threads` threads: one walk, then, while something wanted is missing
/// (an array that came before the instance naming it, in the file or in another thread's
/// part), resolve walks for what is missing, as long as each finds something.
pub fn collect(
    hprof: &Hprof<'_>,
    info: &DumpInfo,
    kept: Option<&KeptFields>,
    threads: usize,
    control: &Control,
) -> Result<Collected> {
    let runs = parallel::walk(
        hprof,
        threads,
        Stage::Collect,
        control,
        Order::Forward,
        |_| Collector::new(info, hprof.data()).with_kept(kept),
    )?;
    finish(hprof, info, kept, runs, threads, control)
}

/// Pass 1 folded into pass 2, for dumps whose classes all come before their objects (as
/// HotSpot writes them): `early` is the info from the part of the dump before the first
/// object. One walk collects with it while an [`InfoCollector`] reads the whole dump,
/// which `finish_info` turns into the dump's info. If that gives the same targets, the
/// collect stands; otherwise (ART interleaves classes and objects) it is done again with
/// the whole info. `None` when the walk failed with the early info (an instance of a class
/// dumped later, say): the caller then takes the two passes one after the other, which
/// tell a real error from that. With `private`, the Strings of kept fields are noted too
/// (the fields resolved on each info: a difference is a second walk, as for targets).
pub fn collect_with_info(
    hprof: &Hprof<'_>,
    early: &DumpInfo,
    private: bool,
    threads: usize,
    control: &Control,
    finish_info: impl FnOnce(InfoCollector) -> Result<DumpInfo>,
) -> Result<Option<(DumpInfo, Collected)>> {
    let id_size = hprof.id_size();
    let kept_early = private.then(|| KeptFields::resolve(early, hprof.data()));
    let walked = parallel::walk(
        hprof,
        threads,
        Stage::Collect,
        control,
        Order::Forward,
        |_| Folded {
            info: InfoCollector::new(id_size),
            collector: Collector::new(early, hprof.data()).with_kept(kept_early.as_ref()),
        },
    );
    let runs = match walked {
        Ok(runs) => runs,
        Err(Error::Cancelled) => return Err(Error::Cancelled),
        Err(_) => return Ok(None),
    };
    let (infos, collectors): (Vec<_>, Vec<_>) =
        runs.into_iter().map(|f| (f.info, f.collector)).unzip();
    let info = finish_info(InfoCollector::merged(infos))?;
    let kept = private.then(|| KeptFields::resolve(&info, hprof.data()));
    let collected = if info.same_targets(early) && kept == kept_early {
        finish(hprof, early, kept.as_ref(), collectors, threads, control)?
    } else {
        // Their id sets go before the walk that makes new ones.
        drop(collectors);
        collect(hprof, &info, kept.as_ref(), threads, control)?
    };
    Ok(Some((info, collected)))
}

/// Pass 1's visitor beside pass 2's, for the folded walk. Not the generic pair: each
/// sub-record goes to the one side that reads its tag, without a dynamic call on each of
/// millions of Strings.
struct Folded<'i> {
    info: InfoCollector,
    collector: Collector<'i>,
}

impl Visitor for Folded<'_> {
    type Error = Error;

    fn interest(&self) -> Interest {
        self.collector.interest().union(self.info.interest())
    }

    #[inline]
    fn wants_object(&self, tag: u8, id: u64, class_id: u64) -> bool {
        self.collector.wants_object(tag, id, class_id)
    }

    fn record(&mut self, record: &Record<'_>) -> Result<()> {
        self.info.record(record)
    }

    fn heap_dump_begin(&mut self, segment: &Record<'_>, length: u32) -> Result<()> {
        self.info.heap_dump_begin(segment, length)
    }

    fn sub_record(&mut self, sub: &SubRecord<'_>) -> Result<()> {
        if self.info.interest().wants(sub.tag()) {
            self.info.sub_record(sub)?;
        }
        if self.collector.interest().wants(sub.tag()) {
            self.collector.sub_record(sub)?;
        }
        Ok(())
    }
}

/// Merges the runs of the first walk and resolves what is still wanted.
fn finish(
    hprof: &Hprof<'_>,
    info: &DumpInfo,
    kept: Option<&KeptFields>,
    mut runs: Vec<Collector<'_>>,
    threads: usize,
    control: &Control,
) -> Result<Collected> {
    let mut all = runs.remove(0);
    for later in runs {
        all.merge(later);
    }
    for &(id, follow) in kept.map_or(&[][..], |k| &k.statics) {
        all.keep(id, follow);
    }
    all.settle();
    all.out.walks = 1;
    all.first_walk = false;
    while !all.wanted.is_empty() {
        let before = all.wanted.len();
        let wanted = all.wanted.clone();
        let outstanding = AtomicUsize::new(wanted.len());
        // From both ends: what is wanted came before what named it, mostly late in the
        // file or at its start ([`Order::Ends`]).
        let runs = parallel::walk(hprof, threads, Stage::Resolve, control, Order::Ends, |_| {
            Collector::resolver(info, hprof.data(), &wanted, &outstanding).with_kept(kept)
        })?;
        all.out.walks += 1;
        for run in runs {
            // Keep only what was found; what is still wanted is recomputed.
            all.out.resolve_reads += run.out.resolve_reads;
            all.out.arrays.extend(run.out.arrays);
            all.out.strings.extend(run.out.strings);
            all.out.kept_strings.extend(run.out.kept_strings);
            all.out.kept_arrays.extend(run.out.kept_arrays);
            if all.out.dump_data_images.is_empty() {
                all.out.dump_data_images = run.out.dump_data_images;
            }
        }
        all.settle();
        // What the walk looked for and did not find is not in the dump (a walk that
        // finds everything stops early; one that does not has read every part): only
        // what the walk's finds call for is looked for again.
        all.wanted.retain(|id, _| !wanted.contains_key(id));
        if all.wanted.len() >= before {
            break;
        }
    }
    all.out.string_values = Arc::new(std::mem::take(&mut all.strings).build());
    all.out.kept_strings.sort_unstable();
    all.out.kept_strings.dedup();
    Ok(all.out)
}

impl Visitor for Collector<'_> {
    type Error = Error;

    fn interest(&self) -> Interest {
        let i = Interest::NONE.with(tags::INSTANCE_DUMP);
        if self.wanted.is_empty() {
            i
        } else {
            i.with(tags::PRIMITIVE_ARRAY_DUMP)
                .with(tags::OBJECT_ARRAY_DUMP)
        }
    }

    #[inline]
    fn wants_object(&self, tag: u8, id: u64, class_id: u64) -> bool {
        if !self.first_walk {
            // A resolve walk looks for its few ids only: every other object, Strings
            // included, is stepped over by its length.
            return self.maybe_wanted.may_contain(id) && self.wanted.contains_key(&id);
        }
        if let Some(kept) = self.kept {
            return self.wants_private(kept, tag, id, class_id);
        }
        if tag == tags::INSTANCE_DUMP {
            // Every instance of the dump comes here: most are of no target class.
            !self.undumped.is_empty() || self.targets.iter().any(|(c, _)| *c == class_id)
        } else {
            self.maybe_wanted.may_contain(id) && self.wanted.contains_key(&id)
        }
    }

    fn is_done(&self) -> bool {
        self.outstanding
            .is_some_and(|n| n.load(Ordering::Relaxed) == 0)
    }

    fn sub_record(&mut self, sub: &SubRecord<'_>) -> Result<()> {
        if !self.first_walk {
            self.out.resolve_reads += 1;
        }
        match &sub.kind {
            Sub::Instance(inst) => self.instance(sub, inst),
            Sub::PrimitiveArray(a) => {
                if self.found(a.id, Want::Array) {
                    self.out
                        .arrays
                        .insert(a.id, location(sub.offset, a, self.info.id_size));
                }
                if self.kept.is_some() {
                    // A kept field naming an array (JDK 8's `Thread.name` is a char[]):
                    // no String to keep; the array goes or stays as the mode says.
                    self.found(a.id, Want::String);
                }
                Ok(())
            }
            Sub::ObjectArray(a) => {
                if self.found(a.id, Want::DumpDataBuffers) {
                    self.out.dump_data_images = a.element_ids().collect();
                    for image in a.element_ids() {
                        self.want(image, Want::Array);
                    }
                } else if self.kept.is_some() && self.found(a.id, Want::String) {
                    // A kept field naming an object array: no String to keep.
                } else if self.found(a.id, Want::KeptArray) {
                    self.out.kept_arrays.push(a.id);
                    for s in a.element_ids() {
                        self.keep(s, Follow::String);
                    }
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }
}

/// Where the array `a`, whose sub-record is at `offset`, has its elements.
fn location(offset: u64, a: &PrimitiveArray<'_>, id_size: u8) -> Location {
    Location {
        offset,
        data: offset + PrimitiveArray::header_len(id_size) as u64,
        len: a.data.len() as u64,
        ty: a.element_type,
    }
}
