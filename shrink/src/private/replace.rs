//! What replaces the bytes a private package does not keep, so that the analysis finds
//! the same things in them:
//!
//! - a String value: its bytes through a keyed permutation of byte strings of its length
//!   (a 4-round Feistel network, SipHash-2-4 round functions). Equal values stay equal and
//!   distinct ones stay distinct (a permutation), so duplicate Strings group as before
//!   with the same wasted bytes; nothing of the value can be read back without the key.
//! - a Bitmap's pixels (or an Android 14 `DumpData` image): a 16-byte block repeated to
//!   the buffer's length, the block the keyed permutation of the buffer's MD5. Equal
//!   buffers get equal blocks; distinct buffers get distinct blocks unless their MD5s
//!   collide (a permutation of the digest), so duplicate Bitmaps group as before. A
//!   buffer shorter than 16 bytes goes through the permutation itself. An image keeps its
//!   first [`IMAGE_MAGIC`] bytes, which say its format and nothing of the picture.
//!
//! The key is random for each shrink and never written anywhere: a private package is
//! not reproducible byte for byte, and no guess of a value can be checked against it.

use std::hash::{BuildHasher, Hasher};

/// The bytes of an image that stay: its format's magic (PNG, JPEG, WebP).
pub const IMAGE_MAGIC: usize = 12;

const ROUNDS: u64 = 4;

/// A replacement key: 256 random bits, for the round functions and the streams.
#[derive(Clone)]
pub struct Key([u64; 4]);

impl std::fmt::Debug for Key {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never printed: the key would undo the replacement.
        f.write_str("Key(..)")
    }
}

impl Key {
    /// A key from the system's randomness (std's hasher seeds, themselves from the OS).
    pub fn random() -> Key {
        let s = std::collections::hash_map::RandomState::new();
        Key([1u64, 2, 3, 4].map(|i| s.hash_one(i)))
    }

    /// A fixed key, for tests that need the same package twice.
    pub fn fixed(seed: u64) -> Key {
        Key([seed, seed ^ 0x5555, seed.rotate_left(17), !seed])
    }

    #[allow(deprecated)] // SipHash-2-4, std's keyed PRF; no crate for a few lines.
    fn prf(&self, round: u64, len: usize, input: &[u8]) -> u64 {
        let mut h = std::hash::SipHasher::new_with_keys(self.0[0] ^ round, self.0[1]);
        h.write_u64(len as u64);
        h.write(input);
        h.finish()
    }

    /// A keyed 64-bit digest of `bytes`: equal contents, equal digests.
    pub fn digest(&self, bytes: &[u8]) -> u64 {
        self.prf(u64::MAX, bytes.len(), bytes)
    }

    /// XORs into `out` a stream drawn from `seed` (a round function's output).
    fn xor_stream(&self, seed: u64, out: &mut [u8]) {
        let mut chunks = out.chunks_mut(8);
        for (i, chunk) in (0u64..).zip(&mut chunks) {
            let word = mix(seed ^ self.0[2], i ^ self.0[3]).to_le_bytes();
            for (b, w) in chunk.iter_mut().zip(word) {
                *b ^= w;
            }
        }
    }

    /// `bytes` through the keyed permutation of byte strings of their length, in place.
    pub fn permute(&self, bytes: &mut [u8]) {
        let len = bytes.len();
        if len == 0 {
            return;
        }
        let (left, right) = bytes.split_at_mut(len / 2);
        for round in 0..ROUNDS {
            // Each round XORs one half with a function of the other: invertible whatever
            // the function, so the whole is a permutation.
            let (src, dst): (&[u8], &mut [u8]) = if round % 2 == 0 {
                (left, right)
            } else {
                (right, left)
            };
            let seed = self.prf(round, len, src);
            self.xor_stream(seed, dst);
        }
    }

    /// A String value's replacement, in place.
    pub fn string(&self, bytes: &mut [u8]) {
        self.permute(bytes);
    }

    /// A Bitmap buffer's replacement: the permuted MD5 of `original` (or `original`
    /// permuted, when shorter than a digest) repeated, into `out` (as long as `original`).
    pub fn pixels(&self, original: &[u8], out: &mut [u8]) {
        debug_assert_eq!(original.len(), out.len());
        if original.len() < 16 {
            out.copy_from_slice(original);
            self.permute(out);
            return;
        }
        let mut block = crate::passes::dedup::md5(original);
        self.permute(&mut block);
        for chunk in out.chunks_mut(16) {
            chunk.copy_from_slice(&block[..chunk.len()]);
        }
    }

    /// An encoded image's replacement: its magic kept, the rest as [`Key::pixels`] fills
    /// it (from the whole image's digest).
    pub fn image(&self, original: &[u8], out: &mut [u8]) {
        let keep = IMAGE_MAGIC.min(original.len());
        self.pixels(original, out);
        out[..keep].copy_from_slice(&original[..keep]);
    }
}

/// splitmix64's finalizer over a seed and a counter: a well-spread word each.
fn mix(seed: u64, i: u64) -> u64 {
    let mut x = seed.wrapping_add(i.wrapping_mul(0x9E37_79B9_7F4A_7C15));
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn every_short_string_of_a_length_maps_to_a_distinct_one() {
        let key = Key::fixed(7);
        for len in 1..=2usize {
            let mut seen = HashSet::new();
            let mut fixed_points = 0;
            for n in 0..(1u32 << (8 * len)) {
                let original = &n.to_le_bytes()[..len];
                let mut b = original.to_vec();
                key.string(&mut b);
                fixed_points += usize::from(b == original);
                assert!(seen.insert(b), "two values of {len} bytes map to one");
            }
            assert!(fixed_points < 1 << (4 * len), "{fixed_points}");
        }
    }

    #[test]
    fn equal_values_map_alike_and_nothing_of_them_shows() {
        let key = Key::fixed(1);
        let text = b"alice@example.com wrote: meet at 7".to_vec();
        let (mut a, mut b) = (text.clone(), text.clone());
        key.string(&mut a);
        key.string(&mut b);
        assert_eq!(a, b);
        assert_eq!(a.len(), text.len());
        assert!(!a.windows(5).any(|w| w == b"alice" || w == b"meet "));
        let mut other = text.clone();
        other[33] = b'8';
        key.string(&mut other);
        assert_ne!(a, other);
        // Another key, another replacement.
        let mut c = text.clone();
        Key::fixed(2).string(&mut c);
        assert_ne!(a, c);
    }

    #[test]
    fn pixels_follow_the_contents() {
        let key = Key::fixed(3);
        let picture: Vec<u8> = (0..4096u32).map(|i| (i * 7 % 251) as u8).collect();
        let mut twin = picture.clone();
        let mut other = picture.clone();
        other[4000] ^= 1;
        let fill = |b: &[u8]| {
            let mut out = vec![0; b.len()];
            key.pixels(b, &mut out);
            out
        };
        assert_eq!(fill(&picture), fill(&twin));
        assert_ne!(fill(&picture), fill(&other));
        twin.truncate(10);
        assert_eq!(fill(&twin).len(), 10);
        assert_ne!(fill(&twin), twin);
        let png = [b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR".as_slice(), &picture].concat();
        let mut out = vec![0; png.len()];
        key.image(&png, &mut out);
        assert!(out.starts_with(&png[..IMAGE_MAGIC]));
        assert_ne!(out[IMAGE_MAGIC..], png[IMAGE_MAGIC..]);
    }
}
