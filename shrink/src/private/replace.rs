//! What replaces the bytes a private package does not keep, so that the analysis finds
//! the same things in them:
//!
//! - a String value shorter than [`TAGGED_FROM`] bytes: its bytes through a keyed
//!   permutation of byte strings of its length, a balanced Feistel network of 3 rounds
//!   (Luby and Rackoff's bound for a pseudorandom permutation: no one sees a replacement of
//!   a value of their choosing), SipHash-1-3 round functions under the key. Equal values
//!   stay equal and distinct ones distinct.
//! - a longer one: a keyed tag of the whole value, the first [`TAG`] bytes (96 bits) of
//!   SipHash-1-3's 128-bit output of the value and its length, then [`FILLER`] to the
//!   value's length. Equal values stay equal; distinct ones of one length (values of two
//!   lengths differ by their lengths) collide only if their tags do: among `n` distinct
//!   values of one length, by a chance of at most `n² / 2^97` (2^-37 for 2^30 Strings,
//!   more than a 64 GB dump holds). The filler is what makes the
//!   package small: a text compresses, and so must what replaces it, where a permutation's
//!   output would be random bytes throughout (deflate works harder for a larger zip).
//!   Duplicate Strings group as before with the same wasted bytes; nothing of a value can
//!   be read back without the key, only its length (kept either way).
//! - a Bitmap's pixels (or an Android 14 `DumpData` image): a 16-byte block repeated to the
//!   buffer's length, the block the keyed permutation of the buffer's id and length. The
//!   shrink has already merged identical buffers into one (ids of the others repointed to
//!   it), so the buffers left are pairwise distinct, and so are their blocks (distinct ids,
//!   a permutation): `analyze` finds the same duplicate groups. No pixel is even read. A
//!   buffer shorter than 16 bytes goes through the permutation instead. An image keeps its
//!   first [`IMAGE_MAGIC`] bytes, which say its format and nothing of the picture.
//!
//! The key is random for each shrink and never written anywhere: a private package is
//! not reproducible byte for byte, and no guess of a value can be checked against it.

use std::hash::BuildHasher;

/// The bytes of an image that stay: its format's magic (PNG, JPEG, WebP).
pub const IMAGE_MAGIC: usize = 12;

/// A pixel block.
const HEAD: usize = 16;

/// A String value's tag, in bytes: 96 bits, so that distinct values keep distinct
/// replacements but by a negligible chance (the module's doc).
pub const TAG: usize = 12;

/// From this many bytes on, a String value is replaced by its tag and [`FILLER`]; shorter
/// ones go through the permutation.
pub const TAGGED_FROM: usize = TAG;

/// What follows a tag: one byte, so that a Latin-1 value reads `*` and a UTF-16 one
/// U+2A2A (no surrogate) for each filled unit, and deflate squeezes a run of it.
pub const FILLER: u8 = b'*';

/// The tag's domain in the round functions' inputs (the Feistel rounds are 0 to 2).
const TAG_ROUND: u64 = 3;

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
        self.sip(round, len, false, input).finish64()
    }

    /// The state of a round function's SipHash-1-3 once it has read `input`.
    #[inline]
    fn sip(&self, round: u64, len: usize, wide: bool, input: &[u8]) -> Sip<1, 3> {
        let mut sip = Sip::new(self.0[0] ^ round, self.0[1], wide);
        sip.block((len as u64).rotate_left(8) ^ round);
        sip.absorb(8, input);
        sip
    }

    /// A String value's tag: SipHash-1-3's 128-bit output under the key, of its length and
    /// its bytes.
    fn tag(&self, value: &[u8]) -> [u8; TAG] {
        let [a, b] = self.sip(TAG_ROUND, value.len(), true, value).finish128();
        let mut tag = [0u8; TAG];
        tag[..8].copy_from_slice(&a.to_le_bytes());
        tag[8..].copy_from_slice(&b.to_le_bytes()[..TAG - 8]);
        tag
    }

    /// A keyed 64-bit digest of `bytes` (fast, not a PRF): equal contents, equal digests;
    /// distinct ones collide by a chance of about 2^-64, which a dump cannot aim at
    /// without the key.
    pub fn digest(&self, bytes: &[u8]) -> u64 {
        foldhash::quality::FixedState::with_seed(self.0[2] ^ self.0[3]).hash_one(bytes)
    }

    /// XORs into `out` a stream drawn from `seed` (a round function's output): its first
    /// word is the seed itself, which covers the half of a value of up to 16 bytes (all
    /// the permutation is given); further words are drawn from it.
    fn xor_stream(&self, seed: u64, out: &mut [u8]) {
        for (i, chunk) in out.chunks_mut(8).enumerate() {
            let word = match i {
                0 => seed,
                _ => mix(seed ^ self.0[2], i as u64 ^ self.0[3]),
            };
            for (b, w) in chunk.iter_mut().zip(word.to_le_bytes()) {
                *b ^= w;
            }
        }
    }

    /// One Feistel round: `dst` XORed with a stream keyed by `src`. Invertible whatever
    /// the stream, so any sequence of rounds is a permutation.
    fn round(&self, round: u64, len: usize, src: &[u8], dst: &mut [u8]) {
        let seed = self.prf(round, len, src);
        self.xor_stream(seed, dst);
    }

    /// `bytes` through the keyed permutation of byte strings of their length, in place:
    /// for short ones (a String below [`TAGGED_FROM`] bytes, a pixel block), each round
    /// hashes half of them.
    fn permute(&self, bytes: &mut [u8]) {
        let len = bytes.len();
        if len <= 2 * WORD_HALF {
            self.permute_words(bytes);
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

    /// [`Key::permute`] of at most `2 * WORD_HALF` bytes, the common case (every String
    /// below [`TAGGED_FROM`] bytes), with each half in a register: a round function's
    /// input (round, length, half) is then one SipHash word, where the general path reads
    /// two, and the halves are XORed whole. The same Feistel network, another encoding of
    /// its rounds' inputs (one-to-one: the half in the low 48 bits, the length and the
    /// round above it).
    fn permute_words(&self, bytes: &mut [u8]) {
        let len = bytes.len();
        let (left, right) = bytes.split_at_mut(len / 2);
        let (mut l, mut r) = (load(left), load(right));
        let (l_mask, r_mask) = (mask(left.len()), mask(right.len()));
        for round in 0..3u64 {
            let word = |half: u64| half | (len as u64) << 48 | round << 56;
            if round % 2 == 0 {
                r ^= self.prf_word(round, word(l)) & r_mask;
            } else {
                l ^= self.prf_word(round, word(r)) & l_mask;
            }
        }
        store(l, left);
        store(r, right);
    }

    /// The round function of one word: SipHash-1-3 under the key.
    #[inline(always)]
    fn prf_word(&self, round: u64, word: u64) -> u64 {
        let mut sip = Sip::<1, 3>::new(self.0[0] ^ round, self.0[1], false);
        sip.absorb_word(word);
        sip.finish64()
    }

    /// A String value's replacement, in place: below [`TAGGED_FROM`] bytes permuted, from
    /// it on its tag and [`FILLER`].
    pub fn string(&self, bytes: &mut [u8]) {
        if bytes.len() < TAGGED_FROM {
            self.permute(bytes);
            return;
        }
        let tag = self.tag(bytes);
        bytes[..TAG].copy_from_slice(&tag);
        bytes[TAG..].fill(FILLER);
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

/// SipHash-c-d under the key (`k0`, `k1`), as its paper defines it with a 64-bit or a
/// 128-bit output: the hash std's `HashMap` uses is SipHash-1-3 with 64 bits, written out
/// here for a fixed key (std's is drawn at random and cannot be set). Tests check it
/// against std's and against the paper's 128-bit test vector.
struct Sip<const C: usize, const D: usize> {
    v: [u64; 4],
}

impl<const C: usize, const D: usize> Sip<C, D> {
    #[inline(always)]
    fn new(k0: u64, k1: u64, wide: bool) -> Self {
        let mut v = [
            k0 ^ 0x736f_6d65_7073_6575,
            k1 ^ 0x646f_7261_6e64_6f6d,
            k0 ^ 0x6c79_6765_6e65_7261,
            k1 ^ 0x7465_6462_7974_6573,
        ];
        if wide {
            v[1] ^= 0xee;
        }
        Sip { v }
    }

    #[inline(always)]
    fn rounds(&mut self, n: usize) {
        let v = &mut self.v;
        for _ in 0..n {
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
    }

    /// One 8-byte word of the message.
    #[inline(always)]
    fn block(&mut self, m: u64) {
        self.v[3] ^= m;
        self.rounds(C);
        self.v[0] ^= m;
    }

    /// The rest of the message, `data`, after `before` bytes already read as words.
    #[inline(always)]
    fn absorb(&mut self, before: usize, data: &[u8]) {
        let mut words = data.chunks_exact(8);
        for w in &mut words {
            self.block(u64::from_le_bytes(w.try_into().unwrap_or([0; 8])));
        }
        let rest = words.remainder();
        let mut last = (before.wrapping_add(data.len()) as u64) << 56;
        for (i, b) in rest.iter().enumerate() {
            last |= (*b as u64) << (8 * i);
        }
        self.block(last);
    }

    /// A message of one 8-byte word.
    #[inline(always)]
    fn absorb_word(&mut self, m: u64) {
        self.block(m);
        self.block(8 << 56);
    }

    #[inline(always)]
    fn word(&self) -> u64 {
        self.v[0] ^ self.v[1] ^ self.v[2] ^ self.v[3]
    }

    #[inline(always)]
    fn finish64(mut self) -> u64 {
        self.v[2] ^= 0xff;
        self.rounds(D);
        self.word()
    }

    /// The 128-bit output (of a state made `wide`).
    #[inline(always)]
    fn finish128(mut self) -> [u64; 2] {
        self.v[2] ^= 0xee;
        self.rounds(D);
        let first = self.word();
        self.v[1] ^= 0xdd;
        self.rounds(D);
        [first, self.word()]
    }
}

/// The most bytes of a half [`Key::permute_words`] takes: 6, so that a round's length
/// and number fit above it in one word.
const WORD_HALF: usize = 6;

/// Up to 8 bytes as a little-endian word, in at most three reads that may overlap (a
/// copy of a length not known at compile time would be a call to `memcpy`).
#[inline(always)]
fn load(bytes: &[u8]) -> u64 {
    let n = bytes.len();
    let u32_at = |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap_or([0; 4]));
    match n {
        0 => 0,
        1..=3 => {
            let at = |i: usize| (bytes[i] as u64) << (8 * i);
            at(0) | at(n / 2) | at(n - 1)
        }
        4..=8 => u32_at(0) as u64 | (u32_at(n - 4) as u64) << (8 * (n - 4)),
        _ => u64::from_le_bytes(bytes[..8].try_into().unwrap_or([0; 8])),
    }
}

/// The low bytes of `word` into `out` (at most 8), the inverse of [`load`], in writes
/// that may overlap, each of the bytes it overlaps.
#[inline(always)]
fn store(word: u64, out: &mut [u8]) {
    let n = out.len();
    match n {
        0 => {}
        1..=3 => {
            for i in [0, n / 2, n - 1] {
                out[i] = (word >> (8 * i)) as u8;
            }
        }
        _ => {
            let n = n.min(8);
            out[..4].copy_from_slice(&(word as u32).to_le_bytes());
            out[n - 4..n].copy_from_slice(&((word >> (8 * (n - 4))) as u32).to_le_bytes());
        }
    }
}

/// The low `n` bytes of a word (`n` at most 7).
#[inline(always)]
fn mask(n: usize) -> u64 {
    (1u64 << (8 * n)) - 1
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
            let mut sip = Sip::<1, 3>::new(0, 0, false);
            sip.block(0x0102_0304_0506_0708);
            sip.absorb(8, &data);
            assert_eq!(sip.finish64(), h.finish(), "{len}");
        }
    }

    #[test]
    fn words_load_and_store_every_length() {
        for n in 0..=8usize {
            let bytes: Vec<u8> = (1..=n as u8).map(|b| b.wrapping_mul(29)).collect();
            let mut word = [0u8; 8];
            word[..n].copy_from_slice(&bytes);
            assert_eq!(load(&bytes), u64::from_le_bytes(word), "{n}");
            let mut out = vec![0xAA; n];
            store(load(&bytes), &mut out);
            assert_eq!(out, bytes, "{n}");
        }
    }

    #[test]
    fn the_wide_output_is_the_papers() {
        // SipHash-2-4-128 of the empty message under the key 00 01 .. 0f: the first of the
        // reference implementation's 128-bit test vectors.
        let (k0, k1) = (0x0706_0504_0302_0100, 0x0f0e_0d0c_0b0a_0908);
        let mut sip = Sip::<2, 4>::new(k0, k1, true);
        sip.absorb(0, &[]);
        let [a, b] = sip.finish128();
        let bytes = [a.to_le_bytes(), b.to_le_bytes()].concat();
        assert_eq!(
            bytes,
            [
                0xa3, 0x81, 0x7f, 0x04, 0xba, 0x25, 0xa8, 0xe6, 0x6d, 0xf6, 0x72, 0x14, 0xc7, 0x55,
                0x02, 0x93
            ]
        );
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
    fn values_around_the_threshold_stay_apart_and_show_nothing() {
        let key = Key::fixed(9);
        // Values from 1 to 40 bytes, many per length: each replacement as long as its value,
        // equal for equal values, distinct for distinct ones.
        let mut seen: std::collections::HashMap<Vec<u8>, Vec<u8>> = Default::default();
        for len in 1..=40usize {
            for n in 0..300u32 {
                let original: Vec<u8> = (0..len)
                    .map(|i| b"node-0123456789"[(n as usize * 7 + i * (n as usize % 5 + 1)) % 15])
                    .collect();
                let mut b = original.clone();
                key.string(&mut b);
                assert_eq!(b.len(), len);
                let mut again = original.clone();
                key.string(&mut again);
                assert_eq!(b, again, "equal values, equal replacements");
                if let Some(before) = seen.insert(b.clone(), original.clone()) {
                    assert_eq!(before, original, "two values, one replacement");
                }
                if len >= TAGGED_FROM {
                    // The tag, then the filler.
                    let head = TAG;
                    assert!(b[head..].iter().all(|&c| c == FILLER));
                    assert_ne!(b[..head], original[..head]);
                }
                // No run of the value's bytes left (4 and more: shorter ones occur by
                // chance in random bytes).
                if len >= 4 {
                    for w in original.windows(4) {
                        assert!(!b.windows(4).any(|x| x == w), "{original:?} -> {b:?}");
                    }
                }
            }
        }
        // Values that differ only past the first 16 bytes, or only in the last one.
        let base = b"https://example.com/inbox?user=alice".to_vec();
        let mut other = base.clone();
        *other.last_mut().unwrap() = b'a';
        let (mut x, mut y) = (base.clone(), other);
        key.string(&mut x);
        key.string(&mut y);
        assert_ne!(x, y);
        // Another key, another tag.
        let mut z = base.clone();
        Key::fixed(10).string(&mut z);
        assert_ne!(x, z);
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
