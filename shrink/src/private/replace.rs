//! What replaces the bytes a private package does not keep, so that the analysis finds
//! the same things in them:
//!
//! - a String value: its bytes through a keyed permutation of byte strings of its length, a
//!   Feistel network of 3 rounds (Luby and Rackoff's bound for a pseudorandom permutation:
//!   no one sees a replacement of a value of their choosing), SipHash-1-3 round functions
//!   under the key: balanced below 32 bytes; from 32 bytes on, between the first 16 bytes
//!   and the rest, so that the rest is hashed once and otherwise only XORed with a stream. Equal values stay
//!   equal and distinct ones distinct (a permutation), so duplicate Strings group as
//!   before with the same wasted bytes; nothing of a value can be read back without the
//!   key.
//! - a Bitmap's pixels (or an Android 14 `DumpData` image): a 16-byte block repeated to the
//!   buffer's length, the block the keyed permutation of the buffer's id and length. The
//!   shrink has already merged identical buffers into one (ids of the others repointed to
//!   it), so the buffers left are pairwise distinct, and so are their blocks (distinct ids,
//!   a permutation): `analyze` finds the same duplicate groups. No pixel is even read. A
//!   buffer shorter than 16 bytes goes through the String permutation instead. An image
//!   keeps its first [`IMAGE_MAGIC`] bytes, which say its format and nothing of the
//!   picture.
//!
//! The key is random for each shrink and never written anywhere: a private package is
//! not reproducible byte for byte, and no guess of a value can be checked against it.

use std::hash::BuildHasher;

/// The bytes of an image that stay: its format's magic (PNG, JPEG, WebP).
pub const IMAGE_MAGIC: usize = 12;

/// The head of an unbalanced network: one block of the permutation.
const HEAD: usize = 16;

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

    /// The round function: SipHash-1-3 (std's `HashMap` hash) under the key, of the
    /// round, the value's length and `input`.
    fn prf(&self, round: u64, len: usize, input: &[u8]) -> u64 {
        sip13(
            self.0[0] ^ round,
            self.0[1],
            (len as u64).rotate_left(8) ^ round,
            input,
        )
    }

    /// A keyed 64-bit digest of `bytes` (fast, not a PRF): equal contents, equal digests;
    /// distinct ones collide by a chance of about 2^-64, which a dump cannot aim at
    /// without the key.
    pub fn digest(&self, bytes: &[u8]) -> u64 {
        foldhash::quality::FixedState::with_seed(self.0[2] ^ self.0[3]).hash_one(bytes)
    }

    /// XORs into `out` a stream drawn from `seed` (a round function's output).
    fn xor_stream(&self, seed: u64, out: &mut [u8]) {
        let mut chunks = out.chunks_exact_mut(8);
        let mut i = 0u64;
        for chunk in &mut chunks {
            let word = u64::from_le_bytes(chunk.try_into().unwrap_or([0; 8]));
            chunk.copy_from_slice(&(word ^ mix(seed ^ self.0[2], i ^ self.0[3])).to_le_bytes());
            i += 1;
        }
        let rest = chunks.into_remainder();
        let word = mix(seed ^ self.0[2], i ^ self.0[3]).to_le_bytes();
        for (b, w) in rest.iter_mut().zip(word) {
            *b ^= w;
        }
    }

    /// One Feistel round: `dst` XORed with a stream keyed by `src`. Invertible whatever
    /// the stream, so any sequence of rounds is a permutation.
    fn round(&self, round: u64, len: usize, src: &[u8], dst: &mut [u8]) {
        let seed = self.prf(round, len, src);
        self.xor_stream(seed, dst);
    }

    /// `bytes` through the keyed permutation of byte strings of their length, in place.
    pub fn permute(&self, bytes: &mut [u8]) {
        let len = bytes.len();
        if len >= 2 * HEAD {
            let (head, rest) = bytes.split_at_mut(HEAD);
            self.round(0, len, head, rest);
            self.round(1, len, rest, head);
            self.round(2, len, head, rest);
            return;
        }
        let (left, right) = bytes.split_at_mut(len / 2);
        for round in 0..3 {
            if round % 2 == 0 {
                self.round(round, len, left, right);
            } else {
                self.round(round, len, right, left);
            }
        }
    }

    /// A String value's replacement, in place.
    pub fn string(&self, bytes: &mut [u8]) {
        self.permute(bytes);
    }

    /// The pixels of the kept buffer `id` (the only one in the package with its content):
    /// the permuted block of its id and length repeated, into `out` (as long as
    /// `original`); a buffer shorter than a block is `original` permuted.
    pub fn pixels(&self, id: u64, original: &[u8], out: &mut [u8]) {
        debug_assert_eq!(original.len(), out.len());
        if original.len() < HEAD {
            out.copy_from_slice(original);
            self.permute(out);
            return;
        }
        let mut block = [0u8; HEAD];
        block[..8].copy_from_slice(&id.to_be_bytes());
        block[8..].copy_from_slice(&(original.len() as u64).to_be_bytes());
        self.permute(&mut block);
        for chunk in out.chunks_mut(HEAD) {
            chunk.copy_from_slice(&block[..chunk.len()]);
        }
    }

    /// An encoded image's replacement: its magic kept, the rest as [`Key::pixels`] fills
    /// it.
    pub fn image(&self, id: u64, original: &[u8], out: &mut [u8]) {
        let keep = IMAGE_MAGIC.min(original.len());
        self.pixels(id, original, out);
        out[..keep].copy_from_slice(&original[..keep]);
    }
}

/// SipHash-1-3 with the key (`k0`, `k1`) of the message `first` (8 bytes, little-endian)
/// followed by `data`: the hash std's `HashMap` uses, written out for a fixed key (std's
/// is drawn at random and cannot be set); a test checks it against std's.
fn sip13(k0: u64, k1: u64, first: u64, data: &[u8]) -> u64 {
    let mut v = [
        k0 ^ 0x736f_6d65_7073_6575,
        k1 ^ 0x646f_7261_6e64_6f6d,
        k0 ^ 0x6c79_6765_6e65_7261,
        k1 ^ 0x7465_6462_7974_6573,
    ];
    fn round(v: &mut [u64; 4]) {
        v[0] = v[0].wrapping_add(v[1]);
        v[1] = v[1].rotate_left(13) ^ v[0];
        v[0] = v[0].rotate_left(32);
        v[2] = v[2].wrapping_add(v[3]);
        v[3] = v[3].rotate_left(16) ^ v[2];
        v[0] = v[0].wrapping_add(v[3]);
        v[3] = v[3].rotate_left(21) ^ v[0];
        v[2] = v[2].wrapping_add(v[1]);
        v[1] = v[1].rotate_left(17) ^ v[2];
        v[2] = v[2].rotate_left(32);
    }
    fn block(v: &mut [u64; 4], m: u64) {
        v[3] ^= m;
        round(v);
        v[0] ^= m;
    }
    block(&mut v, first);
    let mut words = data.chunks_exact(8);
    for w in &mut words {
        block(&mut v, u64::from_le_bytes(w.try_into().unwrap_or([0; 8])));
    }
    let rest = words.remainder();
    let mut last = ((8 + data.len()) as u64) << 56;
    for (i, b) in rest.iter().enumerate() {
        last |= (*b as u64) << (8 * i);
    }
    block(&mut v, last);
    v[2] ^= 0xff;
    round(&mut v);
    round(&mut v);
    round(&mut v);
    v[0] ^ v[1] ^ v[2] ^ v[3]
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
    fn the_round_function_is_stds_siphash13() {
        use std::hash::Hasher;
        // std's DefaultHasher::new() is SipHash-1-3 with the key (0, 0).
        for len in [0usize, 1, 7, 8, 9, 15, 16, 17, 100] {
            let data: Vec<u8> = (0..len as u8).map(|i| i.wrapping_mul(37)).collect();
            let mut h = std::collections::hash_map::DefaultHasher::new();
            h.write(&0x0102_0304_0506_0708u64.to_le_bytes());
            h.write(&data);
            assert_eq!(
                sip13(0, 0, 0x0102_0304_0506_0708, &data),
                h.finish(),
                "{len}"
            );
        }
    }

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
    fn a_long_string_goes_back_through_the_rounds_backwards() {
        // The unbalanced network's inverse: its rounds backwards.
        let key = Key::fixed(9);
        for n in 0..500u32 {
            let original: Vec<u8> = (0..32 + n)
                .map(|i| (n.wrapping_mul(i + 1) % 7) as u8)
                .collect();
            let mut b = original.clone();
            key.string(&mut b);
            assert_ne!(b, original);
            let len = b.len();
            let (head, rest) = b.split_at_mut(HEAD);
            key.round(2, len, head, rest);
            key.round(1, len, rest, head);
            key.round(0, len, head, rest);
            assert_eq!(b, original);
        }
    }

    #[test]
    fn pixels_are_a_pattern_of_the_buffer_not_of_its_bytes() {
        let key = Key::fixed(3);
        let picture: Vec<u8> = (0..4096u32).map(|i| (i * 7 % 251) as u8).collect();
        let fill = |id: u64, b: &[u8]| {
            let mut out = vec![0; b.len()];
            key.pixels(id, b, &mut out);
            out
        };
        assert_eq!(fill(1, &picture), fill(1, &picture));
        assert_ne!(fill(1, &picture), fill(2, &picture));
        let block = &fill(1, &picture)[..HEAD];
        assert!(fill(1, &picture).chunks(HEAD).all(|c| c == block));
        assert!(!fill(1, &picture)
            .windows(8)
            .any(|w| picture.windows(8).any(|p| p == w)));
        let small = &picture[..10];
        assert_eq!(fill(1, small).len(), 10);
        assert_ne!(fill(1, small), small);
        let png = [b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR".as_slice(), &picture].concat();
        let mut out = vec![0; png.len()];
        key.image(7, &png, &mut out);
        assert!(out.starts_with(&png[..IMAGE_MAGIC]));
        assert_ne!(out[IMAGE_MAGIC..], png[IMAGE_MAGIC..]);
    }
}
