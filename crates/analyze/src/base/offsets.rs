//! Positions, 4 bytes each while they are below 2^32 and 8 past that, so that no dump is
//! too big and most pay half: where each object's run of numbers starts in one long
//! array, or where each object's record starts in the dump.

#[derive(Debug)]
pub enum Offsets {
    Narrow(Vec<u32>),
    Wide(Vec<u64>),
}

/// A stretch of [`Offsets`], for one thread to fill.
pub enum OffsetsMut<'a> {
    Narrow(&'a mut [u32]),
    Wide(&'a mut [u64]),
}

impl OffsetsMut<'_> {
    /// Sets entry `i` (which must fit).
    #[inline]
    pub fn set(&mut self, i: usize, value: u64) {
        match self {
            OffsetsMut::Narrow(v) => v[i] = value as u32,
            OffsetsMut::Wide(v) => v[i] = value,
        }
    }
}

/// `all` cut into consecutive slices of `lengths`.
pub fn split_at_lengths<T>(
    mut all: &mut [T],
    lengths: impl IntoIterator<Item = usize>,
) -> Vec<&mut [T]> {
    let mut out = Vec::new();
    for len in lengths {
        let (head, tail) = std::mem::take(&mut all).split_at_mut(len);
        out.push(head);
        all = tail;
    }
    out
}

impl Offsets {
    /// Consecutive stretches of `lengths` entries from the first (all within).
    pub fn split_mut(&mut self, lengths: &[usize]) -> Vec<OffsetsMut<'_>> {
        let lengths = lengths.iter().copied();
        match self {
            Offsets::Narrow(v) => split_at_lengths(v, lengths)
                .into_iter()
                .map(OffsetsMut::Narrow)
                .collect(),
            Offsets::Wide(v) => split_at_lengths(v, lengths)
                .into_iter()
                .map(OffsetsMut::Wide)
                .collect(),
        }
    }

    /// Moves the entries of `from` to start at entry `to`.
    pub fn copy_within(&mut self, from: std::ops::Range<usize>, to: usize) {
        match self {
            Offsets::Narrow(v) => v.copy_within(from, to),
            Offsets::Wide(v) => v.copy_within(from, to),
        }
    }

    /// Keeps the first `len` entries.
    pub fn truncate(&mut self, len: usize) {
        match self {
            Offsets::Narrow(v) => v.truncate(len),
            Offsets::Wide(v) => v.truncate(len),
        }
    }

    /// `len` offsets, all zero, wide enough for values up to `max`.
    pub fn zeros(len: usize, max: u64) -> Offsets {
        if max <= u32::MAX as u64 {
            Offsets::Narrow(vec![0; len])
        } else {
            Offsets::Wide(vec![0; len])
        }
    }

    /// None yet, wide enough for values up to `max`.
    pub fn empty(max: u64) -> Offsets {
        if max <= u32::MAX as u64 {
            Offsets::Narrow(Vec::new())
        } else {
            Offsets::Wide(Vec::new())
        }
    }

    /// Appends `value` (which must fit).
    #[inline]
    pub fn push(&mut self, value: u64) {
        match self {
            Offsets::Narrow(v) => v.push(value as u32),
            Offsets::Wide(v) => v.push(value),
        }
    }

    #[inline]
    pub fn get(&self, i: usize) -> u64 {
        match self {
            Offsets::Narrow(v) => v[i] as u64,
            Offsets::Wide(v) => v[i],
        }
    }

    pub fn len(&self) -> usize {
        match self {
            Offsets::Narrow(v) => v.len(),
            Offsets::Wide(v) => v.len(),
        }
    }

    /// Sorts the values by `key(value)`, stably.
    pub fn sort_by_key(&mut self, key: impl Fn(u64) -> u64) {
        match self {
            Offsets::Narrow(v) => v.sort_by_key(|&x| key(x as u64)),
            Offsets::Wide(v) => v.sort_by_key(|&x| key(x)),
        }
    }

    /// Sets entry `i` (which must fit: see [`Offsets::zeros`]).
    #[cfg(test)]
    pub fn set(&mut self, i: usize, value: u64) {
        match self {
            Offsets::Narrow(v) => v[i] = value as u32,
            Offsets::Wide(v) => v[i] = value,
        }
    }

    /// The run of entry `i`: from its offset to the next one's.
    #[inline]
    pub fn run(&self, i: usize) -> std::ops::Range<usize> {
        match self {
            Offsets::Narrow(v) => v[i] as usize..v[i + 1] as usize,
            Offsets::Wide(v) => v[i] as usize..v[i + 1] as usize,
        }
    }

    pub fn bytes(&self) -> u64 {
        match self {
            Offsets::Narrow(v) => v.capacity() as u64 * 4,
            Offsets::Wide(v) => v.capacity() as u64 * 8,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Offsets;

    #[test]
    fn narrow_below_2_32_wide_above_and_the_same_answers() {
        for max in [1000u64, 1 << 40] {
            let mut o = Offsets::zeros(4, max);
            assert_eq!(matches!(o, Offsets::Narrow(_)), max < 1 << 32);
            o.set(1, 3);
            o.set(2, 7);
            o.set(3, 7);
            assert_eq!(o.run(1), 3..7);
            assert_eq!(o.run(2), 7..7);
            o.set(3, 1 << 20);
            assert_eq!((o.run(0), o.run(2)), (0..3, 7..1 << 20));
        }
    }
}
