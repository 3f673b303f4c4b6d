//! What pass 3 does, decided from passes 1 and 2: which primitive arrays stay, which ids
//! are rewritten to the kept copy of their content, and where those ids sit.

use std::sync::Arc;

use rustc_hash::{FxHashMap, FxHashSet};

use super::collect::Collected;
use super::dedup::Groups;
use super::idset::{Cursor, IdSet};
use super::info::{DumpInfo, Target};
use crate::hprof::Instance;
use crate::options::{DroppedMode, StripMode};

#[derive(Debug)]
pub struct Plan {
    pub strip: StripMode,
    pub dropped: DroppedMode,
    /// String values, shared with pass 2's result.
    strings: Arc<IdSet>,
    /// Everything else kept: Bitmap buffers, DumpData images and natives (few).
    keep: FxHashSet<u64>,
    remap: FxHashMap<u64, u64>,
    /// Bitmap class id → offset of `mBuffer` within the instance's sub-record. A handful
    /// (Bitmap and its subclasses), asked about on every instance: a scan beats hashing.
    bitmap_buffer_at: Vec<(u64, usize)>,
    dump_data_buffers: Option<u64>,
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
        let mut keep = FxHashSet::default();
        let mut remap = FxHashMap::default();
        let strings = match strip {
            StripMode::None => Arc::new(IdSet::new()),
            _ => collected.string_values.clone(),
        };
        match strip {
            StripMode::None | StripMode::Strings => {}
            StripMode::Bitmaps => {
                for g in [buffers, images] {
                    keep.extend(g.size.keys().copied());
                    remap.extend(g.duplicates());
                }
                keep.extend(collected.dump_data_natives);
            }
            StripMode::Duplicates => {
                // Matrix: one copy of each buffer that has a duplicate; the rest goes.
                keep.extend(
                    buffers
                        .size
                        .iter()
                        .filter(|(_, n)| **n > 1)
                        .map(|(k, _)| *k),
                );
                remap.extend(buffers.duplicates());
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
        let dump_data_buffers = match strip {
            StripMode::Bitmaps => collected.dump_data_buffers,
            _ => None,
        };
        Plan {
            strip,
            dropped,
            strings,
            keep,
            remap,
            bitmap_buffer_at,
            dump_data_buffers,
        }
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
        self.strip != StripMode::None && self.dropped != DroppedMode::Zero
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

    pub fn dump_data_buffers(&self) -> Option<u64> {
        self.dump_data_buffers
    }
}

pub struct Keeper<'p> {
    plan: &'p Plan,
    strings: Cursor<'p>,
}

impl Keeper<'_> {
    #[inline]
    pub fn keeps(&mut self, id: u64) -> bool {
        self.plan.strip == StripMode::None
            || self.strings.contains(id)
            || self.plan.keep.contains(&id)
    }
}
