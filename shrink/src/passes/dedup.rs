//! Grouping Bitmap buffers by content. Buffers are compared only when their lengths are
//! equal, and among those only when a cheap fingerprint of their first and last bytes is
//! equal too. Those are compared byte for byte with the first few distinct contents of
//! their group: copies of one image, the usual duplicate, cost one comparison each and no
//! hash. Only a group with more distinct contents than that is hashed (MD5, on several
//! threads) for the rest, and equal hashes are still confirmed byte for byte: two buffers
//! are merged exactly when their bytes are equal, so their MD5s are too, whatever a hash
//! says. Of each group the buffer that comes first in the file is the one kept.

use md5::{Digest, Md5};
use rustc_hash::FxHashMap;

use std::sync::atomic::{AtomicUsize, Ordering};

use super::collect::Location;
use crate::hprof::BasicType;

/// A buffer that may be merged with others of the same content.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Candidate {
    /// The array's id.
    pub id: u64,
    /// Where its elements are.
    pub loc: Location,
}

#[derive(Debug, Default, Clone)]
/// Buffers grouped by content (same length, equal bytes).
pub struct Groups {
    /// Every candidate id → the id of the buffer kept for its content (itself if kept).
    pub canonical: FxHashMap<u64, u64>,
    /// Kept id → how many distinct buffers share its content.
    pub size: FxHashMap<u64, u32>,
    /// Buffers hashed because their group had too many distinct contents to compare.
    pub hashed: u64,
    /// Their bytes.
    pub hashed_bytes: u64,
    /// Bytes of the buffers compared byte for byte (those whose length and ends equal
    /// another's).
    pub compared_bytes: u64,
}

impl Groups {
    /// Ids that point at a copy: id → kept id.
    pub fn duplicates(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.canonical
            .iter()
            .filter(|(id, kept)| id != kept)
            .map(|(id, kept)| (*id, *kept))
    }
}

/// MD5 of `bytes`.
pub fn md5(bytes: &[u8]) -> [u8; 16] {
    Md5::digest(bytes).into()
}

/// Bytes at each end of a buffer that its fingerprint covers.
const FINGERPRINT_BYTES: usize = 4096;

/// CRC-32 of the first and last few KiB: buffers of equal length that differ here (most
/// distinct images do) need no MD5 at all.
fn fingerprint(bytes: &[u8]) -> u32 {
    let mut h = crc32fast::Hasher::new();
    h.update(&bytes[..bytes.len().min(FINGERPRINT_BYTES)]);
    h.update(&bytes[bytes.len().saturating_sub(FINGERPRINT_BYTES)..]);
    h.finalize()
}

/// Distinct contents of one group compared byte for byte before MD5 takes over: a group of
/// copies (the usual case) needs one comparison per member and no hash at all, while many
/// distinct buffers of one length and the same ends cannot make it quadratic.
const COMPARED: usize = 8;

/// `work(i)` for every `i < jobs`, on up to `threads` threads, the costliest first and
/// handed out one at a time, so every core stays busy to the end even when the jobs are
/// few and uneven.
fn in_parallel<T: Send + Default>(
    jobs: usize,
    cost: impl Fn(usize) -> u64,
    work: impl Fn(usize) -> T + Sync,
    threads: usize,
) -> Vec<T> {
    let mut order: Vec<usize> = (0..jobs).collect();
    order.sort_unstable_by_key(|&i| std::cmp::Reverse(cost(i)));
    let next = AtomicUsize::new(0);
    let run = || {
        let mut done = Vec::new();
        while let Some(&i) = order.get(next.fetch_add(1, Ordering::Relaxed)) {
            done.push((i, work(i)));
        }
        done
    };
    let mut out: Vec<T> = std::iter::repeat_with(T::default).take(jobs).collect();
    std::thread::scope(|s| {
        // Helpers the system will not give are left out: the calling thread does the rest.
        let helpers: Vec<_> = (1..threads.min(jobs))
            .map_while(|_| std::thread::Builder::new().spawn_scoped(s, run).ok())
            .collect();
        let mine = run();
        for done in helpers
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .chain([mine])
        {
            for (i, d) in done {
                out[i] = d;
            }
        }
    });
    out
}

/// What comparing a group's members in file order found for one member.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Seen {
    /// New content, kept.
    Kept,
    /// The same bytes as the kept member at this index of the group.
    Copy(usize),
    /// Unlike each of the first [`COMPARED`] contents: left to MD5.
    Unsorted,
}

/// Compares each member with the contents kept before it, byte for byte.
fn compare(dump: &[u8], members: &[Candidate]) -> Vec<Seen> {
    let mut kept: Vec<usize> = Vec::new();
    members
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let bytes = c.loc.bytes(dump);
            match kept.iter().find(|&&k| members[k].loc.bytes(dump) == bytes) {
                Some(&k) => Seen::Copy(k),
                None if kept.len() < COMPARED => {
                    kept.push(i);
                    Seen::Kept
                }
                None => Seen::Unsorted,
            }
        })
        .collect()
}

/// Groups `candidates` (any order, ids may repeat) by content read from `dump`, comparing
/// and hashing on up to `threads` threads. `digest` is MD5 in production; tests pass a
/// colliding one to prove the byte check.
pub fn group(
    dump: &[u8],
    candidates: &[Candidate],
    digest: &(dyn Fn(&[u8]) -> [u8; 16] + Sync),
    threads: usize,
) -> Groups {
    let mut unique: Vec<Candidate> = candidates.to_vec();
    unique.sort_unstable_by_key(|c| (c.loc.offset, c.id));
    unique.dedup_by_key(|c| c.id);

    // Equal length first; among equal lengths, equal fingerprints.
    let mut by_len: FxHashMap<(BasicType, u64), Vec<Candidate>> = FxHashMap::default();
    for c in &unique {
        by_len.entry((c.loc.ty, c.loc.len)).or_default().push(*c);
    }
    let mut by_key: FxHashMap<(BasicType, u64, u32), Vec<Candidate>> = FxHashMap::default();
    for (key, members) in by_len {
        if members.len() == 1 {
            by_key.insert((key.0, key.1, 0), members);
            continue;
        }
        for c in members {
            let f = fingerprint(c.loc.bytes(dump));
            by_key.entry((key.0, key.1, f)).or_default().push(c);
        }
    }
    // Groups in file order of their first member, for a deterministic result; members are
    // in file order too.
    let mut groups: Vec<Vec<Candidate>> = by_key.into_values().collect();
    groups.sort_unstable_by_key(|g| g[0].loc.offset);
    let shared: Vec<&Vec<Candidate>> = groups.iter().filter(|g| g.len() > 1).collect();
    let seen = in_parallel(
        shared.len(),
        |i| shared[i].len() as u64 * shared[i][0].loc.len,
        |i| compare(dump, shared[i]),
        threads,
    );
    let mut out = Groups::default();
    let keep = |out: &mut Groups, c: &Candidate| {
        out.canonical.insert(c.id, c.id);
        out.size.insert(c.id, 1);
    };
    let merge = |out: &mut Groups, c: &Candidate, into: u64| {
        out.canonical.insert(c.id, into);
        *out.size.get_mut(&into).expect("kept") += 1;
    };
    for g in groups.iter().filter(|g| g.len() == 1) {
        keep(&mut out, &g[0]);
    }
    let mut unsorted: Vec<Vec<Candidate>> = Vec::new();
    for (members, seen) in shared.iter().zip(&seen) {
        out.compared_bytes += members.len() as u64 * members[0].loc.len;
        let mut left = Vec::new();
        for (c, s) in members.iter().zip(seen) {
            match *s {
                Seen::Kept => keep(&mut out, c),
                Seen::Copy(k) => merge(&mut out, c, members[k].id),
                Seen::Unsorted => left.push(*c),
            }
        }
        if !left.is_empty() {
            unsorted.push(left);
        }
    }
    // What the comparisons left: hashed, all in one parallel job; equal hashes are still
    // confirmed byte for byte.
    let hashed: Vec<Candidate> = unsorted.iter().flatten().copied().collect();
    let mut hashes = in_parallel(
        hashed.len(),
        |i| hashed[i].loc.len,
        |i| digest(hashed[i].loc.bytes(dump)),
        threads,
    )
    .into_iter();
    for members in &unsorted {
        // (digest, kept candidate) for each distinct content seen so far.
        let mut kept: Vec<([u8; 16], Candidate)> = Vec::new();
        for c in members {
            let d = hashes.next().expect("a digest for each member hashed");
            let bytes = c.loc.bytes(dump);
            out.hashed += 1;
            out.hashed_bytes += bytes.len() as u64;
            match kept
                .iter()
                .find(|(kd, k)| *kd == d && k.loc.bytes(dump) == bytes)
            {
                Some((_, k)) => merge(&mut out, c, k.id),
                None => {
                    kept.push((d, *c));
                    keep(&mut out, c);
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cand(id: u64, offset: u64, len: u64) -> Candidate {
        Candidate {
            id,
            loc: Location {
                offset,
                data: offset,
                len,
                ty: BasicType::Byte,
            },
        }
    }

    #[test]
    fn equal_content_merges_into_the_first_in_file_order() {
        // Three buffers of 4 bytes: "abcd" at 8 and 0, "abce" at 4.
        let dump = b"abcdabceabcd";
        let g = group(
            dump,
            &[cand(30, 8, 4), cand(10, 0, 4), cand(20, 4, 4)],
            &md5,
            2,
        );
        assert_eq!(g.canonical[&30], 10);
        assert_eq!(g.canonical[&10], 10);
        assert_eq!(g.canonical[&20], 20);
        assert_eq!(g.size[&10], 2);
        assert_eq!(g.duplicates().collect::<Vec<_>>(), vec![(30, 10)]);
    }

    /// `n` buffers of 10,000 bytes with the same ends (one fingerprint), buffer `i`
    /// holding content `kinds[i]` in its middle byte.
    fn same_ends(kinds: &[u8]) -> (Vec<u8>, Vec<Candidate>) {
        let mut dump = vec![b'x'; kinds.len() * 10_000];
        let mut cands = Vec::new();
        for (i, k) in kinds.iter().enumerate() {
            dump[i * 10_000 + 5_000] = *k;
            cands.push(cand(100 + i as u64, (i * 10_000) as u64, 10_000));
        }
        (dump, cands)
    }

    #[test]
    fn copies_are_compared_not_hashed() {
        let (dump, cands) = same_ends(&[1, 2, 1, 1, 2]);
        let never = |_: &[u8]| -> [u8; 16] { panic!("hashed a group of copies") };
        let g = group(&dump, &cands, &never, 2);
        assert_eq!(g.hashed, 0);
        assert_eq!(g.compared_bytes, 50_000);
        let kept: Vec<u64> = (100..105).map(|id| g.canonical[&id]).collect();
        assert_eq!(kept, vec![100, 101, 100, 100, 101]);
        assert_eq!((g.size[&100], g.size[&101]), (3, 2));
    }

    #[test]
    fn a_hash_collision_does_not_merge_different_bytes() {
        // More distinct contents of one length and the same ends than are compared: the
        // rest are hashed, here with a hash under which everything collides.
        let mut kinds: Vec<u8> = (0..COMPARED as u8).collect();
        kinds.extend([200, 201, 200]);
        let (dump, cands) = same_ends(&kinds);
        let collide = |_: &[u8]| [7u8; 16];
        let g = group(&dump, &cands, &collide, 2);
        let first = 100 + COMPARED as u64;
        assert_eq!(g.hashed, 3);
        assert_eq!(
            g.canonical[&(first + 1)],
            first + 1,
            "different bytes merged on a hash collision"
        );
        assert_eq!(g.canonical[&(first + 2)], first, "equal bytes not merged");
        assert_eq!(g.size.len(), COMPARED + 2);
    }

    #[test]
    fn past_the_compared_contents_md5_groups_the_rest_in_file_order() {
        // Copies of the compared contents still merge by comparison; the rest by MD5.
        let mut kinds: Vec<u8> = (0..COMPARED as u8).collect();
        kinds.extend([0, 200, 201, 200, 3, 201]);
        let (dump, cands) = same_ends(&kinds);
        let g = group(&dump, &cands, &md5, 2);
        let at = |i: usize| g.canonical[&(100 + i as u64)] - 100;
        let c = COMPARED;
        assert_eq!(
            [at(c), at(c + 1), at(c + 2), at(c + 3), at(c + 4), at(c + 5)],
            [0, c as u64 + 1, c as u64 + 2, c as u64 + 1, 3, c as u64 + 2]
        );
        assert_eq!(g.hashed, 4);
    }

    #[test]
    fn equal_lengths_with_different_ends_are_not_hashed() {
        let mut dump = vec![1u8; 20_000];
        dump.extend(vec![2u8; 20_000]);
        let g = group(
            &dump,
            &[cand(1, 0, 20_000), cand(2, 20_000, 20_000)],
            &md5,
            2,
        );
        assert_eq!((g.hashed, g.compared_bytes), (0, 0));
        assert_eq!(g.size.len(), 2);
    }

    #[test]
    fn unique_lengths_are_not_hashed() {
        let dump = b"abcdefg";
        let g = group(dump, &[cand(1, 0, 3), cand(2, 3, 4)], &md5, 2);
        assert_eq!(g.hashed, 0);
        assert_eq!(g.canonical.len(), 2);
    }

    #[test]
    fn the_same_buffer_named_twice_is_one_candidate() {
        let dump = b"abcd";
        let g = group(dump, &[cand(1, 0, 4), cand(1, 0, 4)], &md5, 2);
        assert_eq!(g.size[&1], 1);
        assert_eq!(g.hashed, 0);
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 128, failure_persistence: None, ..Default::default() })]
        /// Whatever the hash, each buffer maps to the first buffer in the file with the same
        /// bytes, the same as comparing every pair would give.
        #[test]
        fn each_buffer_maps_to_the_first_with_its_bytes(
            picks in proptest::collection::vec((0usize..3, 0u8..12), 1..40),
            colliding in proptest::bool::ANY,
        ) {
            // Lengths 1, 2 or 20 KB (past the fingerprint's ends); few middle bytes, so
            // copies and same-ends groups of more than COMPARED contents are both common.
            let lens = [1usize, 2, 20_000];
            let mut dump = Vec::new();
            let mut cands = Vec::new();
            for (i, &(l, k)) in picks.iter().enumerate() {
                let at = dump.len();
                let mut b = vec![b'x'; lens[l]];
                let mid = b.len() / 2;
                b[mid] = k;
                dump.extend(b);
                cands.push(cand(i as u64 + 1, at as u64, lens[l] as u64));
            }
            let collide = |_: &[u8]| [0u8; 16];
            let digest: &(dyn Fn(&[u8]) -> [u8; 16] + Sync) = if colliding { &collide } else { &md5 };
            let g = group(&dump, &cands, digest, 2);
            for c in &cands {
                let first = cands
                    .iter()
                    .find(|o| o.loc.bytes(&dump) == c.loc.bytes(&dump))
                    .unwrap();
                proptest::prop_assert_eq!(g.canonical[&c.id], first.id);
            }
            let kept = cands.iter().filter(|c| g.canonical[&c.id] == c.id).count();
            proptest::prop_assert_eq!(g.size.len(), kept);
            proptest::prop_assert_eq!(g.size.values().map(|&n| n as usize).sum::<usize>(), cands.len());
        }
    }
}
