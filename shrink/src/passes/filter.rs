//! A one-hash Bloom filter over a few 64-bit keys (ids, digests): most keys asked of it
//! are not in the set, and a bit test costs less than a hash map probe on each of
//! millions of them. Bits are never cleared: a stale one only costs a probe.

/// 4,096 bits: a set of a few hundred keys answers "maybe" to a few percent of others.
#[derive(Debug, Clone)]
pub(crate) struct MaybeWanted([u64; 64]);

impl Default for MaybeWanted {
    fn default() -> Self {
        MaybeWanted([0; 64])
    }
}

impl MaybeWanted {
    fn bit(key: u64) -> (usize, u64) {
        let h = key.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 52;
        ((h >> 6) as usize, 1 << (h & 63))
    }

    pub(crate) fn add(&mut self, key: u64) {
        let (word, bit) = Self::bit(key);
        self.0[word] |= bit;
    }

    /// False when `key` was never added; true when it was, or by chance.
    #[inline]
    pub(crate) fn may_contain(&self, key: u64) -> bool {
        let (word, bit) = Self::bit(key);
        self.0[word] & bit != 0
    }
}
