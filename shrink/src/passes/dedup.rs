//! Grouping Bitmap buffers by content. Buffers are compared only when their lengths are
//! equal, and among those only when a cheap fingerprint of their first and last bytes is
//! equal too; those are hashed (MD5, on several threads), and equal hashes are confirmed
//! byte for byte, so two different buffers are never merged, whatever a hash says. Of each
//! group the buffer that comes first in the file is the one kept.

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
/// Buffers grouped by content (same length, same MD5, equal bytes).
pub struct Groups {
    /// Every candidate id → the id of the buffer kept for its content (itself if kept).
    pub canonical: FxHashMap<u64, u64>,
    /// Kept id → how many distinct buffers share its content.
    pub size: FxHashMap<u64, u32>,
    /// Buffers hashed, and their bytes.
    pub hashed: u64,
    /// Their bytes.
    pub hashed_bytes: u64,
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

/// MD5s of `members`, on up to `threads` threads. One job for every group of the dump,
/// largest buffers first and handed out one at a time, so both cores stay busy to the end
/// even when each group is a pair.
fn digests(
    dump: &[u8],
    members: &[Candidate],
    digest: &(dyn Fn(&[u8]) -> [u8; 16] + Sync),
    threads: usize,
) -> Vec<[u8; 16]> {
    let mut order: Vec<usize> = (0..members.len()).collect();
    order.sort_unstable_by_key(|&i| std::cmp::Reverse(members[i].loc.len));
    let next = AtomicUsize::new(0);
    let work = || {
        let mut done = Vec::new();
        while let Some(&i) = order.get(next.fetch_add(1, Ordering::Relaxed)) {
            done.push((i, digest(members[i].loc.bytes(dump))));
        }
        done
    };
    let mut out = vec![[0u8; 16]; members.len()];
    std::thread::scope(|s| {
        // Helpers the system will not give are left out: the calling thread hashes the rest.
        let helpers: Vec<_> = (1..threads.min(members.len()))
            .map_while(|_| std::thread::Builder::new().spawn_scoped(s, work).ok())
            .collect();
        let mine = work();
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

/// Groups `candidates` (any order, ids may repeat) by content read from `dump`, hashing
/// on up to `threads` threads. `digest` is MD5 in production; tests pass a colliding one
/// to prove the byte check.
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
    let by_len = by_key;
    let mut out = Groups::default();
    // Iterate groups in file order of their first member, for a deterministic result.
    let mut keys: Vec<(BasicType, u64, u32)> = by_len.keys().copied().collect();
    keys.sort_unstable_by_key(|k| by_len[k][0].loc.offset);
    // Every member of a group of two or more is hashed, all in one parallel job, in the
    // order the groups are gone through below.
    let hashed: Vec<Candidate> = keys
        .iter()
        .map(|k| &by_len[k])
        .filter(|members| members.len() > 1)
        .flatten()
        .copied()
        .collect();
    let mut hashes = digests(dump, &hashed, digest, threads).into_iter();
    for key in keys {
        let members = &by_len[&key];
        if members.len() == 1 {
            out.canonical.insert(members[0].id, members[0].id);
            out.size.insert(members[0].id, 1);
            continue;
        }
        // (digest, kept candidate) for each distinct content seen so far.
        let mut kept: Vec<([u8; 16], Candidate)> = Vec::new();
        for c in members {
            let d = hashes.next().expect("a digest for each member hashed");
            let bytes = c.loc.bytes(dump);
            out.hashed += 1;
            out.hashed_bytes += bytes.len() as u64;
            let same = kept
                .iter()
                .find(|(kd, k)| *kd == d && k.loc.bytes(dump) == bytes)
                .map(|(_, k)| k.id);
            match same {
                Some(k) => {
                    out.canonical.insert(c.id, k);
                    *out.size.get_mut(&k).expect("kept") += 1;
                }
                None => {
                    kept.push((d, *c));
                    out.canonical.insert(c.id, c.id);
                    out.size.insert(c.id, 1);
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

    #[test]
    fn a_hash_collision_does_not_merge_different_bytes() {
        // Same length, same ends (same fingerprint), one byte apart in the middle.
        let mut dump = vec![b'x'; 20_000];
        dump[5_000] = b'y';
        let collide = |_: &[u8]| [7u8; 16];
        let g = group(
            &dump,
            &[cand(1, 0, 10_000), cand(2, 10_000, 10_000)],
            &collide,
            2,
        );
        assert_eq!(
            g.canonical[&2], 2,
            "different bytes merged on a hash collision"
        );
        assert_eq!(g.hashed, 2);
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
        assert_eq!(g.hashed, 0);
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
}
