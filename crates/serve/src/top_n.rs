//! The first n of a stream of keys in their order, holding n keys at most: how the groups
//! ranked by the database are picked without holding every group ([`crate::cache`]).

use std::collections::BinaryHeap;

/// The first `n` keys offered, smallest first, and how many were offered.
#[derive(Debug)]
pub struct TopN<K> {
    n: usize,
    /// A max-heap: the last of those kept is at the top, the one to give way.
    heap: BinaryHeap<K>,
    offered: u64,
}

impl<K: Ord> TopN<K> {
    /// Keeps the first `n`.
    pub fn new(n: usize) -> TopN<K> {
        TopN {
            n,
            heap: BinaryHeap::new(),
            offered: 0,
        }
    }

    /// Counts one more key, kept if it is among the first `n` so far.
    pub fn offer(&mut self, k: K) {
        self.offered += 1;
        if self.heap.len() < self.n {
            self.heap.push(k);
        } else if self.heap.peek().is_some_and(|last| k < *last) {
            self.heap.pop();
            self.heap.push(k);
        }
    }

    /// Keys offered, kept or not.
    pub fn offered(&self) -> u64 {
        self.offered
    }

    /// The keys kept, in no order.
    pub fn iter(&self) -> impl Iterator<Item = &K> {
        self.heap.iter()
    }

    /// The first `n`, in order.
    pub fn into_sorted(self) -> Vec<K> {
        self.heap.into_sorted_vec()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_n_in_order_are_those_of_a_sort() {
        let mut rng = fastrand::Rng::with_seed(3);
        for n in [0, 1, 5, 50] {
            let v: Vec<(u8, u32)> = (0..300).map(|i| (rng.u8(0..20), i)).collect();
            let mut t = TopN::new(n);
            for k in &v {
                t.offer(*k);
            }
            assert_eq!(t.offered(), 300);
            let mut sorted = v.clone();
            sorted.sort();
            sorted.truncate(n);
            assert_eq!(t.into_sorted(), sorted, "n = {n}");
        }
    }
}
