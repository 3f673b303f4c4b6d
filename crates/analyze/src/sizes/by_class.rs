//! Shallow sizes by class: what the reachable and the unreachable objects weigh, class by
//! class, counted on each thread in a small table before a map.

use crate::base::map::Map;

pub(crate) type Histogram = Map<(u8, u64), (u64, u64)>;

/// Shallow sizes on one thread, counted by class. Neighbours in a dump are mostly of a
/// few classes (a list node, its String, the String's array), so each class is added up
/// in a slot of a small table and goes into the map only when another class takes its
/// slot.
pub(crate) struct Sizer {
    histogram: Histogram,
    /// `EMPTY` marks a free slot.
    slots: Box<[Tally; SLOTS]>,
}

/// (class key, objects, bytes).
type Tally = ((u8, u64), u64, u64);

/// Slots of [`Sizer`] (and of the references' pass's own table): a power of two.
pub(crate) const SLOTS: usize = 64;
/// No class key has this tag.
const EMPTY: (u8, u64) = (u8::MAX, 0);

/// The slot of a class id (ids are aligned addresses: their low bits are mostly zero).
#[inline]
pub(crate) fn slot_of(class: u64) -> usize {
    (class.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 58) as usize & (SLOTS - 1)
}

impl Default for Sizer {
    fn default() -> Sizer {
        Sizer {
            histogram: Histogram::default(),
            slots: Box::new([(EMPTY, 0, 0); SLOTS]),
        }
    }
}

impl Sizer {
    #[inline]
    pub(crate) fn add_sized(&mut self, key: (u8, u64), size: u64) {
        let slot = &mut self.slots[slot_of(key.1 ^ key.0 as u64)];
        if slot.0 == key {
            slot.1 += 1;
            slot.2 += size;
        } else {
            let (k, n, bytes) = std::mem::replace(slot, (key, 1, size));
            if k != EMPTY {
                tally(&mut self.histogram, k, n, bytes);
            }
        }
    }

    pub(crate) fn finish(mut self) -> Histogram {
        for &(k, n, bytes) in self.slots.iter() {
            if k != EMPTY {
                tally(&mut self.histogram, k, n, bytes);
            }
        }
        self.histogram
    }

    pub(crate) fn merge(a: Sizer, b: Sizer) -> Sizer {
        let mut h = a.finish();
        merge_histograms(&mut h, b.finish());
        Sizer {
            histogram: h,
            ..Sizer::default()
        }
    }
}

pub(crate) fn merge_histograms(into: &mut Histogram, from: Histogram) {
    for (k, (n, bytes)) in from {
        tally(into, k, n, bytes);
    }
}

/// Adds `n` objects of `bytes` in all to class `key`.
fn tally(h: &mut Histogram, key: (u8, u64), n: u64, bytes: u64) {
    let e = h.entry(key).or_default();
    e.0 += n;
    e.1 += bytes;
}
