//! Arrays of 4-byte numbers handed from a step that ends to the next that starts. Each
//! step of the analysis holds arrays of hundreds of MB; freeing one and allocating the
//! next would give its pages back and fault fresh ones in (with the kernel zeroing each),
//! which costs more than writing over them, on steps that run on one core. What worker
//! threads free goes back to the system between steps ([`give_back_freed_memory`]).

#[derive(Default)]
pub struct Spare(Vec<Vec<u32>>);

/// Hands what worker threads freed back to the system: glibc keeps what its per-thread
/// heaps free below a block still in use, and the next step would carry those megabytes
/// to its peak.
pub(crate) fn give_back_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only returns free pages of malloc's own heaps to the system.
    unsafe {
        libc::malloc_trim(0);
    }
}

impl Spare {
    /// Keeps `v` for a later [`Spare::take`].
    pub fn give(&mut self, v: Vec<u32>) {
        if v.capacity() > 0 {
            self.0.push(v);
        }
    }

    /// `len` copies of `value`, in the smallest array kept that holds them, else in a new
    /// one.
    pub fn take(&mut self, len: usize, value: u32) -> Vec<u32> {
        match self.room(len) {
            Some(mut v) => {
                v.resize(len, value);
                v
            }
            None => vec![value; len],
        }
    }

    /// An empty array with room for `len` numbers, in the smallest array kept that has
    /// it, else in a new one.
    pub fn with_capacity(&mut self, len: usize) -> Vec<u32> {
        self.room(len).unwrap_or_else(|| Vec::with_capacity(len))
    }

    fn room(&mut self, len: usize) -> Option<Vec<u32>> {
        let best = (0..self.0.len())
            .filter(|&i| self.0[i].capacity() >= len)
            .min_by_key(|&i| self.0[i].capacity())?;
        let mut v = self.0.swap_remove(best);
        v.clear();
        Some(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_array_kept_is_reused_when_it_fits_and_comes_back_filled() {
        let mut s = Spare::default();
        let small = vec![7u32; 10];
        let big = vec![9u32; 1000];
        let big_at = big.as_ptr();
        s.give(small);
        s.give(big);
        // Too big for either: new.
        assert_eq!(s.take(5000, 1), vec![1; 5000]);
        // The smallest that fits.
        let v = s.take(500, 3);
        assert_eq!(v.as_ptr(), big_at);
        assert_eq!(v, vec![3; 500]);
        assert_eq!(s.with_capacity(10).len(), 0);
        assert_eq!(s.0.len(), 0);
    }
}
