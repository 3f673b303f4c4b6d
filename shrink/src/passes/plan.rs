//! What pass 3 does, decided from passes 1 and 2: which primitive arrays stay, which ids
//! are rewritten to the kept copy of their content, and where those ids sit.

use std::sync::Arc;

use rustc_hash::{FxHashMap, FxHashSet};

use super::collect::Collected;
use super::dedup::Groups;
use super::filter::MaybeWanted;
use super::idset::{Cursor, IdSet};
use super::info::{DumpInfo, Target};
use crate::hprof::Instance;
use crate::options::{DroppedMode, StripMode};
use crate::private::Key;

/// What a strip mode keeps, stated once: [`Plan::new`] carries it out, and the report
/// and the verifier read it rather than matching on the mode themselves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Policy {
    /// Nothing is dropped: the hprof is the input, byte for byte.
    pub keeps_all: bool,
    /// Which live Bitmap buffers stay (besides String values, which always do).
    pub buffers: Buffers,
    /// Android 14+ DumpData images (and the natives beside them) stay.
    pub images: bool,
    /// Identical kept buffers (and images) are merged into one copy, the references to the
    /// others repointed at it.
    pub merges: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
/// Which Bitmap buffers a strip mode keeps.
pub enum Buffers {
    /// Every live Bitmap's buffer.
    All,
    /// One copy of each buffer that has a duplicate (Matrix's choice); the rest goes.
    Duplicated,
    /// No buffer.
    None,
}

impl Policy {
    /// The policy of `strip`.
    pub fn of(strip: StripMode) -> Policy {
        let (keeps_all, buffers, images, merges) = match strip {
            StripMode::Bitmaps => (false, Buffers::All, true, true),
            StripMode::Duplicates => (false, Buffers::Duplicated, false, true),
            StripMode::Strings => (false, Buffers::None, false, false),
            StripMode::None => (true, Buffers::All, true, false),
        };
        Policy {
            keeps_all,
            buffers,
            images,
            merges,
        }
    }
}

#[derive(Debug)]
/// What pass 3 keeps, drops and repoints: decided once, from passes 1 and 2.
pub struct Plan {
    /// Which arrays survive.
    pub strip: StripMode,
    /// How a dropped one disappears.
    pub dropped: DroppedMode,
    policy: Policy,
    /// String values, shared with pass 2's result.
    strings: Arc<IdSet>,
    /// Everything else kept: Bitmap buffers, DumpData images and natives (few).
    keep: FxHashSet<u64>,
    remap: FxHashMap<u64, u64>,
    /// Bitmap class id → offset of `mBuffer` within the instance's sub-record. A handful
    /// (Bitmap and its subclasses), asked about on every instance: a scan beats hashing.
    bitmap_buffer_at: Vec<(u64, usize)>,
    dump_data_buffers: Option<u64>,
    /// A private package: what is replaced, and with what key.
    private: Option<Private>,
}

/// What a private package replaces: every kept String value but those of
/// [`crate::private::KEPT`] (and those equal to one of them, already shown), and every kept
/// Bitmap buffer and image.
#[derive(Debug)]
pub struct Private {
    key: Key,
    /// The values of the kept Strings, by array id.
    kept_values: FxHashSet<u64>,
    /// Keyed digests of their contents: another String with one of them stays too (it
    /// shows nothing the kept one does not, and stays its duplicate).
    kept_contents: FxHashSet<u64>,
    /// Their lengths: only a String of one of them is digested.
    kept_lengths: Lengths,
    /// The two sets' keys, asked first: every String of the dump comes here, and nearly
    /// none is kept.
    maybe_kept: MaybeWanted,
    /// Bitmap buffers whose pixels are replaced.
    pixels: FxHashSet<u64>,
    /// DumpData images, likewise (their format's magic kept).
    images: FxHashSet<u64>,
}

/// A set of lengths: a bit each below [`Lengths::BITS`], a hash set above.
#[derive(Debug)]
struct Lengths {
    short: [u64; Lengths::BITS / 64],
    long: FxHashSet<usize>,
}

impl Default for Lengths {
    fn default() -> Self {
        Lengths {
            short: [0; Lengths::BITS / 64],
            long: FxHashSet::default(),
        }
    }
}

impl Lengths {
    /// Kept values (names, labels) are short.
    const BITS: usize = 4096;

    fn add(&mut self, len: usize) {
        match self.short.get_mut(len / 64) {
            Some(w) => *w |= 1 << (len % 64),
            None => {
                self.long.insert(len);
            }
        }
    }

    #[inline]
    fn contains(&self, len: usize) -> bool {
        match self.short.get(len / 64) {
            Some(w) => w & 1 << (len % 64) != 0,
            None => self.long.contains(&len),
        }
    }
}

/// How an array the plan keeps was chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeptAs {
    /// A String's value.
    String,
    /// Anything else: a Bitmap buffer, an image, `DumpData.natives`, or every array.
    Other,
}

/// What a private package writes in place of a kept array's elements.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Replaced {
    /// A String value, by its keyed replacement (a permutation or a tag).
    String,
    /// A Bitmap's pixels or an image, from their digest.
    Pixels,
}

impl Private {
    /// Decides what is replaced in the arrays `plan` keeps; `data` is the dump.
    fn new(key: Key, plan: &Plan, collected: &Collected, data: &[u8]) -> Private {
        let kept_values: FxHashSet<u64> = collected
            .kept_strings
            .iter()
            .filter_map(|s| collected.strings.get(s))
            .map(|s| s.value)
            .filter(|&v| v != 0)
            .collect();
        let kept_bytes = || {
            kept_values
                .iter()
                .filter_map(|v| collected.arrays.get(v))
                .map(|loc| loc.bytes(data))
        };
        let kept_contents: FxHashSet<u64> = kept_bytes().map(|b| key.digest(b)).collect();
        let mut kept_lengths = Lengths::default();
        for len in kept_bytes().map(<[u8]>::len) {
            kept_lengths.add(len);
        }
        let mut maybe_kept = MaybeWanted::default();
        for &k in kept_values.iter().chain(&kept_contents) {
            maybe_kept.add(k);
        }
        let pixels = collected
            .bitmap_buffers
            .iter()
            .map(|b| b.buffer_id)
            .filter(|id| plan.keep.contains(id))
            .collect();
        let images = collected
            .dump_data_images
            .iter()
            .copied()
            .filter(|id| plan.keep.contains(id))
            .collect();
        Private {
            key,
            kept_values,
            kept_contents,
            kept_lengths,
            maybe_kept,
            pixels,
            images,
        }
    }

    /// Whether the kept array `id` (kept as `how`, elements `bytes`) is replaced, and by
    /// what. Every array of a private package is asked.
    pub fn replaced(&self, id: u64, how: KeptAs, bytes: &[u8]) -> Option<Replaced> {
        match how {
            KeptAs::String => {
                let kept_length = self.kept_lengths.contains(bytes.len());
                let maybe = |k: u64| self.maybe_kept.may_contain(k);
                let kept = (maybe(id) && self.kept_values.contains(&id))
                    || (kept_length && {
                        let d = self.key.digest(bytes);
                        maybe(d) && self.kept_contents.contains(&d)
                    });
                (!kept).then_some(Replaced::String)
            }
            KeptAs::Other => {
                (self.pixels.contains(&id) || self.images.contains(&id)).then_some(Replaced::Pixels)
            }
        }
    }

    /// The elements that replace `bytes` (of the array `id`, replaced as `what`), into
    /// `out`.
    pub fn replace(&self, id: u64, what: Replaced, bytes: &[u8], out: &mut Vec<u8>) {
        out.clear();
        out.resize(bytes.len(), 0);
        match what {
            Replaced::String => {
                out.copy_from_slice(bytes);
                self.key.string(out);
            }
            Replaced::Pixels if self.images.contains(&id) => self.key.image(id, bytes, out),
            Replaced::Pixels => self.key.pixels(id, bytes, out),
        }
    }

    /// String values kept as they are (those of kept fields).
    pub fn kept_values(&self) -> usize {
        self.kept_values.len()
    }
}

impl Plan {
    /// `buffers` groups the live Bitmaps' `mBuffer`s, `images` the DumpData images.
    pub fn new(
        info: &DumpInfo,
        collected: &Collected,
        buffers: &Groups,
        images: &Groups,
        strip: StripMode,
        dropped: DroppedMode,
    ) -> Plan {
        let policy = Policy::of(strip);
        let mut keep = FxHashSet::default();
        let mut remap = FxHashMap::default();
        let strings = if policy.keeps_all {
            Arc::new(IdSet::new())
        } else {
            collected.string_values.clone()
        };
        if !policy.keeps_all {
            match policy.buffers {
                Buffers::All => keep.extend(buffers.size.keys().copied()),
                Buffers::Duplicated => keep.extend(
                    buffers
                        .size
                        .iter()
                        .filter(|(_, n)| **n > 1)
                        .map(|(k, _)| *k),
                ),
                Buffers::None => {}
            }
            if policy.merges {
                remap.extend(buffers.duplicates());
            }
            if policy.images {
                keep.extend(images.size.keys().copied());
                if policy.merges {
                    remap.extend(images.duplicates());
                }
                keep.extend(collected.dump_data_natives);
            }
        }
        let header = Instance::data_start(info.id_size);
        let bitmap_buffer_at = info
            .targets
            .iter()
            .filter_map(|(class, t)| match t.target {
                Target::Bitmap {
                    buffer: Some(f), ..
                } => Some((*class, header + f.offset as usize)),
                _ => None,
            })
            .collect();
        // The DumpData array's elements are rewritten where its images merge.
        let dump_data_buffers = if policy.images && policy.merges {
            collected.dump_data_buffers
        } else {
            None
        };
        Plan {
            strip,
            dropped,
            policy,
            strings,
            keep,
            remap,
            bitmap_buffer_at,
            dump_data_buffers,
            private: None,
        }
    }

    /// The plan of a private package: the kept Strings' values (but those
    /// [`crate::private::KEPT`] names) and the kept pixels replaced, with `key`. `data`
    /// is the dump.
    pub fn with_private(mut self, key: Key, collected: &Collected, data: &[u8]) -> Plan {
        self.private = Some(Private::new(key, &self, collected, data));
        self
    }

    /// What a private package replaces; `None` for an ordinary one.
    pub fn private(&self) -> Option<&Private> {
        self.private.as_ref()
    }

    /// What the strip mode keeps.
    pub fn policy(&self) -> Policy {
        self.policy
    }

    /// Does the primitive array `id` stay as it is? (For one-off questions; walks use a
    /// [`Keeper`].)
    pub fn keeps(&self, id: u64) -> bool {
        self.keeper().keeps(id)
    }

    /// Answers "kept?" for ids asked in file order, fast.
    pub fn keeper(&self) -> Keeper<'_> {
        Keeper {
            plan: self,
            strings: self.strings.cursor(),
        }
    }

    /// Do heap dump segments change length (so their new length must be computed)?
    pub fn changes_lengths(&self) -> bool {
        !self.policy.keeps_all && self.dropped != DroppedMode::Zero
    }

    /// The kept copy an id must point to instead, when it points to a duplicate.
    #[inline]
    pub fn remapped(&self, id: u64) -> Option<u64> {
        self.remap.get(&id).copied()
    }

    /// Offset of `mBuffer` within sub-records of instances of `class_id`, if a Bitmap.
    #[inline]
    pub fn bitmap_buffer_at(&self, class_id: u64) -> Option<usize> {
        if self.remap.is_empty() {
            return None;
        }
        self.bitmap_buffer_at
            .iter()
            .find(|(c, _)| *c == class_id)
            .map(|(_, at)| *at)
    }

    /// Are there ids to rewrite at all?
    pub fn has_remap(&self) -> bool {
        !self.remap.is_empty()
    }

    /// The DumpData `buffers` array, whose elements pass 3 repoints.
    pub fn dump_data_buffers(&self) -> Option<u64> {
        self.dump_data_buffers
    }
}

/// Answers "is this array kept?" for one walk, cheaply, in file order.
pub struct Keeper<'p> {
    plan: &'p Plan,
    strings: Cursor<'p>,
}

impl Keeper<'_> {
    #[inline]
    /// Whether the array `id` is kept.
    pub fn keeps(&mut self, id: u64) -> bool {
        self.plan.policy.keeps_all || self.strings.contains(id) || self.plan.keep.contains(&id)
    }

    #[inline]
    /// Whether the array `id` is kept, and as what.
    pub fn kept_as(&mut self, id: u64) -> Option<KeptAs> {
        if self.plan.policy.keeps_all {
            Some(KeptAs::Other)
        } else if self.strings.contains(id) {
            Some(KeptAs::String)
        } else if self.plan.keep.contains(&id) {
            Some(KeptAs::Other)
        } else {
            None
        }
    }
}
