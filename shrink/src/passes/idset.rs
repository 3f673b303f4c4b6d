//! A set of object ids for millions of String values: compact (about two bytes per id)
//! and fast to query in file order.
//!
//! Ids are heap addresses and lie close together, so the set stores, per 64 KiB "page" of
//! the id space, the low 16 bits of each member, sorted. A [`Cursor`] remembers the page of
//! the last query: walks that ask in address order (every pass over a dump) find the next
//! answer in the same or the next page, in cache. A hash set costs 16+ bytes per id and a
//! cache miss per query; the roaring crate was tried and is slower for this access pattern.
//!
//! Built through [`IdSetBuilder`]: ids that arrive in increasing order (the common case)
//! are appended directly; the rest wait in a bounded buffer that is sorted and merged in.

/// Ids out of order held before a merge: bounds the builder's extra memory to 8 MiB.
const PENDING_MAX: usize = 1 << 20;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdSet {
    /// High bits (`id >> 16`) of each page that has members, increasing.
    pages: Vec<u64>,
    /// Index into `lows` where each page's members start; one more entry at the end.
    starts: Vec<u64>,
    /// Low 16 bits of the members, sorted within each page.
    lows: Vec<u16>,
}

// Not derived: `starts` always holds the end sentinel.
impl Default for IdSet {
    fn default() -> Self {
        IdSet::new()
    }
}

impl IdSet {
    pub fn new() -> Self {
        IdSet {
            pages: Vec::new(),
            starts: vec![0],
            lows: Vec::new(),
        }
    }

    pub fn len(&self) -> u64 {
        self.lows.len() as u64
    }

    pub fn is_empty(&self) -> bool {
        self.lows.is_empty()
    }

    /// Bytes of memory the set holds (capacity included).
    pub fn size_bytes(&self) -> u64 {
        (self.pages.capacity() * 8 + self.starts.capacity() * 8 + self.lows.capacity() * 2) as u64
    }

    fn page_members(&self, page_index: usize) -> &[u16] {
        &self.lows[self.starts[page_index] as usize..self.starts[page_index + 1] as usize]
    }

    /// Membership without a cursor: two binary searches.
    pub fn contains(&self, id: u64) -> bool {
        match self.pages.binary_search(&(id >> 16)) {
            Ok(p) => self.page_members(p).binary_search(&(id as u16)).is_ok(),
            Err(_) => false,
        }
    }

    /// A cursor for queries that mostly come in increasing order.
    pub fn cursor(&self) -> Cursor<'_> {
        Cursor {
            set: self,
            page: 0,
            at: 0,
        }
    }

    /// Members in increasing order.
    pub fn iter(&self) -> impl Iterator<Item = u64> + '_ {
        self.pages.iter().enumerate().flat_map(move |(p, high)| {
            self.page_members(p)
                .iter()
                .map(move |low| (high << 16) | *low as u64)
        })
    }

    /// Appends `id`, which must be greater than every member.
    fn push_max(&mut self, id: u64) {
        let high = id >> 16;
        if self.pages.last() != Some(&high) {
            self.pages.push(high);
            self.starts.push(self.lows.len() as u64);
        }
        self.lows.push(id as u16);
        *self.starts.last_mut().expect("a sentinel") = self.lows.len() as u64;
    }

    fn max(&self) -> Option<u64> {
        let high = *self.pages.last()?;
        Some((high << 16) | *self.lows.last()? as u64)
    }

    /// Merges a sorted, deduplicated list into the set.
    fn merge_sorted(&mut self, sorted: &[u64]) {
        let mut other = IdSet::new();
        other.lows.reserve(sorted.len());
        for &id in sorted {
            other.push_max(id);
        }
        *self = self.union(&other);
    }

    /// The members of both sets. Page by page: a page that only one set has is copied
    /// whole, so merging sets that barely overlap (ids that came in descending order, or
    /// the sets of two parts of a dump) costs about a copy, not a step per member.
    pub fn union(&self, other: &IdSet) -> IdSet {
        let mut out = IdSet::new();
        out.pages.reserve(self.pages.len() + other.pages.len());
        out.starts.reserve(self.pages.len() + other.pages.len());
        out.lows.reserve_exact(self.lows.len() + other.lows.len());
        let (mut i, mut j) = (0, 0);
        loop {
            let a = self.pages.get(i).copied();
            let b = other.pages.get(j).copied();
            let high = match (a, b) {
                (Some(a), Some(b)) if a == b => {
                    merge_lows(self.page_members(i), other.page_members(j), &mut out.lows);
                    i += 1;
                    j += 1;
                    a
                }
                (Some(a), b) if b.is_none_or(|b| a < b) => {
                    out.lows.extend_from_slice(self.page_members(i));
                    i += 1;
                    a
                }
                (_, Some(b)) => {
                    out.lows.extend_from_slice(other.page_members(j));
                    j += 1;
                    b
                }
                _ => break,
            };
            out.pages.push(high);
            out.starts.push(out.lows.len() as u64);
        }
        out
    }
}

/// Merges two sorted, deduplicated lists of low bits into `out`, without repeats.
fn merge_lows(a: &[u16], b: &[u16], out: &mut Vec<u16>) {
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        let (x, y) = (a[i], b[j]);
        out.push(x.min(y));
        i += (x <= y) as usize;
        j += (y <= x) as usize;
    }
    out.extend_from_slice(&a[i..]);
    out.extend_from_slice(&b[j..]);
}

/// Remembers where the last query landed: the page, and the position in it.
pub struct Cursor<'s> {
    set: &'s IdSet,
    page: usize,
    at: usize,
}

impl Cursor<'_> {
    #[inline]
    pub fn contains(&mut self, id: u64) -> bool {
        let pages = &self.set.pages;
        let high = id >> 16;
        let p = match pages.get(self.page) {
            Some(&h) if h == high => self.page,
            // The next page: the usual step of a walk in address order.
            _ if pages.get(self.page + 1) == Some(&high) => self.page + 1,
            _ => match pages.binary_search(&high) {
                Ok(p) => p,
                Err(_) => return false,
            },
        };
        if p != self.page {
            self.page = p;
            self.at = 0;
        }
        let members = self.set.page_members(p);
        let low = id as u16;
        // Ascending queries find their answer a few steps on from the last one.
        let mut i = self.at.min(members.len());
        if i < members.len() && members[i] <= low {
            let end = (i + 8).min(members.len());
            while i < end && members[i] < low {
                i += 1;
            }
            if i < end || i == members.len() {
                self.at = i;
                return members.get(i) == Some(&low);
            }
        }
        match members.binary_search(&low) {
            Ok(i) => {
                self.at = i;
                true
            }
            Err(i) => {
                self.at = i;
                false
            }
        }
    }
}

/// Collects ids in any order with bounded extra memory.
#[derive(Debug, Default)]
pub struct IdSetBuilder {
    set: IdSet,
    pending: Vec<u64>,
}

impl IdSetBuilder {
    pub fn new() -> Self {
        IdSetBuilder {
            set: IdSet::new(),
            pending: Vec::new(),
        }
    }

    #[inline]
    pub fn insert(&mut self, id: u64) {
        match self.set.max() {
            Some(max) if id <= max => {
                if id == max {
                    return;
                }
                self.pending.push(id);
                if self.pending.len() >= PENDING_MAX {
                    self.flush();
                }
            }
            _ => self.set.push_max(id),
        }
    }

    fn flush(&mut self) {
        self.pending.sort_unstable();
        self.pending.dedup();
        let pending = std::mem::take(&mut self.pending);
        self.set.merge_sorted(&pending);
    }

    /// Adds every member of `set` (the set of another part of the dump).
    pub fn absorb(&mut self, set: &IdSet) {
        self.set = self.set.union(set);
    }

    pub fn build(mut self) -> IdSet {
        if !self.pending.is_empty() {
            self.flush();
        }
        self.set.pages.shrink_to_fit();
        self.set.starts.shrink_to_fit();
        self.set.lows.shrink_to_fit();
        self.set
    }
}

impl FromIterator<u64> for IdSet {
    fn from_iter<I: IntoIterator<Item = u64>>(iter: I) -> Self {
        let mut b = IdSetBuilder::new();
        for id in iter {
            b.insert(id);
        }
        b.build()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    fn check(ids: &[u64]) {
        let set: IdSet = ids.iter().copied().collect();
        let want: BTreeSet<u64> = ids.iter().copied().collect();
        assert_eq!(set.len(), want.len() as u64);
        assert!(set.iter().eq(want.iter().copied()), "iteration order");
        let mut cursor = set.cursor();
        for probe in ids
            .iter()
            .flat_map(|&i| [i, i.wrapping_add(1), i.wrapping_sub(8)])
        {
            assert_eq!(set.contains(probe), want.contains(&probe), "{probe:#x}");
            assert_eq!(
                cursor.contains(probe),
                want.contains(&probe),
                "cursor {probe:#x}"
            );
        }
    }

    #[test]
    fn sorted_unsorted_duplicated_and_sparse_ids() {
        check(&[]);
        check(&[0]);
        check(&[u64::MAX, 0, 1 << 40, 65535, 65536]);
        let ascending: Vec<u64> = (0..5000u64).map(|i| 0x7_0000_0000 + i * 24).collect();
        check(&ascending);
        let mut shuffled = ascending.clone();
        // A deterministic shuffle with repeats.
        for i in 0..shuffled.len() {
            let j = (i * 7919 + 13) % shuffled.len();
            shuffled.swap(i, j);
        }
        shuffled.extend_from_slice(&ascending[..100]);
        check(&shuffled);
    }

    #[test]
    fn many_out_of_order_ids_merge_in_rounds() {
        // Descending ids all go to the pending buffer and merge more than once.
        let n = PENDING_MAX as u64 * 2 + 10;
        let set: IdSet = (0..n).rev().map(|i| i * 16).collect();
        assert_eq!(set.len(), n);
        assert!(set.contains(0) && set.contains((n - 1) * 16) && !set.contains(8));
    }

    #[test]
    fn union_of_disjoint_interleaved_and_overlapping_sets() {
        let evens: IdSet = (0..200_000u64).map(|i| i * 2).collect();
        let odds: IdSet = (0..200_000u64).map(|i| i * 2 + 1).collect();
        let high: IdSet = (0..1000u64).map(|i| (1 << 40) + i).collect();
        let both = evens.union(&odds);
        assert!(both.iter().eq(0..400_000u64));
        assert_eq!(evens.union(&evens), evens);
        assert_eq!(high.union(&evens), evens.union(&high));
        let all: Vec<u64> = high.union(&evens).iter().collect();
        let mut want: Vec<u64> = evens.iter().chain(high.iter()).collect();
        want.sort_unstable();
        assert_eq!(all, want);
        assert_eq!(IdSet::new().union(&high), high);
        let mut from_default = IdSetBuilder::default();
        from_default.insert(3);
        from_default.insert(1);
        assert!(from_default.build().iter().eq([1, 3]));
        let mut b = IdSetBuilder::new();
        b.insert(7);
        b.absorb(&odds);
        let got = b.build();
        assert_eq!(got.len(), odds.len());
        assert!(got.contains(7) && got.contains(399_999) && !got.contains(8));
    }

    #[test]
    fn about_two_bytes_per_dense_id() {
        let set: IdSet = (0..1_000_000u64).map(|i| 0x7_0000_0000 + i * 40).collect();
        assert!(set.size_bytes() < 2_200_000, "{} bytes", set.size_bytes());
    }
}
