//! Turns a complete raw deflate stream into a piece that another stream can follow.
//!
//! libdeflate compresses a whole buffer into a whole stream: its last block is marked
//! final and nothing says where that block starts. To join pieces compressed apart into
//! one stream, each piece but the last must instead end with a non-final block and on a
//! byte boundary. [`reopen`] walks the piece's blocks (decoding the Huffman codes only far
//! enough to find each block's end, never producing output), clears the last block's
//! final bit and appends an empty stored block, as zlib's sync flush does, which aligns
//! the end to a byte.

use std::io;

/// The lengths of the code-length code, in the order RFC 1951 sends them.
const CLEN_ORDER: [usize; 19] = [
    16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15,
];
/// Extra bits of the length symbols 257..=285.
const LEN_EXTRA: [u8; 29] = [
    0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0,
];
/// The last valid length symbol.
const LAST_LENGTH: u32 = 285;

/// Extra bits that follow a code's symbols: `bits[sym - first]`, none outside.
#[derive(Clone, Copy, Default)]
struct Extra {
    first: usize,
    bits: &'static [u8],
}

impl Extra {
    const NONE: Extra = Extra {
        first: 0,
        bits: &[],
    };

    fn of(&self, sym: usize) -> u32 {
        sym.checked_sub(self.first)
            .and_then(|i| self.bits.get(i))
            .map_or(0, |&b| b as u32)
    }
}

/// The literal/length code's extra bits.
const LENGTHS: Extra = Extra {
    first: 257,
    bits: &LEN_EXTRA,
};
/// The distance code's.
const DISTANCES: Extra = Extra {
    first: 0,
    bits: &DIST_EXTRA,
};

/// Extra bits of the distance symbols 0..=29.
const DIST_EXTRA: [u8; 30] = [
    0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13,
    13,
];

fn bad(what: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, format!("deflate piece: {what}"))
}

/// Makes `stream`, one complete raw deflate stream, end with a non-final block on a byte
/// boundary, so that the next piece's blocks may follow it.
pub fn reopen(stream: &mut Vec<u8>) -> io::Result<()> {
    let (last_header, end) = walk(stream)?;
    stream[last_header / 8] &= !(1 << (last_header % 8));
    stream.truncate(end.div_ceil(8));
    let used = end % 8;
    if used != 0 {
        // Padding bits are zero already from libdeflate; clearing them costs nothing and
        // the empty stored block's header (BFINAL 0, BTYPE 00) is all zero bits.
        if let Some(b) = stream.last_mut() {
            *b &= (1u8 << used) - 1;
        }
    }
    // The 3-bit header fits after the used bits only when 3 or more are left.
    if used == 0 || used > 5 {
        stream.push(0);
    }
    stream.extend_from_slice(&[0, 0, 0xFF, 0xFF]);
    Ok(())
}

/// The bit offsets of the last block's header and of the stream's end.
fn walk(data: &[u8]) -> io::Result<(usize, usize)> {
    let mut r = Bits { data, pos: 0 };
    let mut lit = Table::default();
    let mut dist = Table::default();
    loop {
        let header = r.pos;
        let last = r.take(1)? == 1;
        match r.take(2)? {
            0 => {
                r.pos = r.pos.div_ceil(8) * 8;
                let len = r.take(16)?;
                let nlen = r.take(16)?;
                if len != !nlen & 0xFFFF {
                    return Err(bad("stored block length does not match its complement"));
                }
                r.pos += len as usize * 8;
            }
            1 => {
                let mut lengths = [0u8; 288 + 32];
                lengths[..144].fill(8);
                lengths[144..256].fill(9);
                lengths[256..280].fill(7);
                lengths[280..288].fill(8);
                lengths[288..].fill(5);
                lit.build(&lengths[..288], LENGTHS)?;
                dist.build(&lengths[288..], DISTANCES)?;
                codes(&mut r, &lit, &dist)?;
            }
            2 => {
                dynamic_header(&mut r, &mut lit, &mut dist)?;
                codes(&mut r, &lit, &dist)?;
            }
            _ => return Err(bad("reserved block type")),
        }
        if r.pos > data.len() * 8 {
            return Err(bad("truncated"));
        }
        if last {
            return Ok((header, r.pos));
        }
    }
}

fn dynamic_header(r: &mut Bits, lit: &mut Table, dist: &mut Table) -> io::Result<()> {
    let hlit = r.take(5)? as usize + 257;
    let hdist = r.take(5)? as usize + 1;
    let hclen = r.take(4)? as usize + 4;
    let mut clen = [0u8; 19];
    for &i in &CLEN_ORDER[..hclen] {
        clen[i] = r.take(3)? as u8;
    }
    let mut ct = Table::default();
    ct.build(&clen, Extra::NONE)?;
    let mut lengths = [0u8; 286 + 30];
    let mut i = 0;
    while i < hlit + hdist {
        let sym = ct.decode(r)?;
        let (value, times) = match sym {
            0..=15 => (sym as u8, 1),
            16 => {
                let prev = *lengths[..i]
                    .last()
                    .ok_or_else(|| bad("repeat with no previous length"))?;
                (prev, 3 + r.take(2)? as usize)
            }
            17 => (0, 3 + r.take(3)? as usize),
            _ => (0, 11 + r.take(7)? as usize),
        };
        if i + times > hlit + hdist {
            return Err(bad("code lengths overrun"));
        }
        lengths[i..i + times].fill(value);
        i += times;
    }
    lit.build(&lengths[..hlit], LENGTHS)?;
    dist.build(&lengths[hlit..hlit + hdist], DISTANCES)
}

/// Skips the block's codes up to and with its end-of-block code.
fn codes(r: &mut Bits, lit: &Table, dist: &Table) -> io::Result<()> {
    let end = r.data.len() * 8;
    loop {
        // One load serves several symbols: a length/distance pair needs at most 48 bits.
        let mut bits = r.peek();
        let mut avail = 64 - (r.pos % 8) as u32;
        while avail >= 48 {
            // Each symbol's bits come with its extra bits: a pair is two lookups.
            let (sym, n) = lit.symbol(bits)?;
            bits >>= n;
            avail -= n;
            r.pos += n as usize;
            if sym < 256 {
                continue;
            }
            if sym == 256 {
                return if r.pos > end {
                    Err(bad("truncated"))
                } else {
                    Ok(())
                };
            }
            if sym > LAST_LENGTH {
                return Err(bad("invalid length symbol"));
            }
            let (d, n) = dist.symbol(bits)?;
            if d as usize >= DIST_EXTRA.len() {
                return Err(bad("invalid distance symbol"));
            }
            bits >>= n;
            avail -= n;
            r.pos += n as usize;
        }
        // Past the end the reader sees zeros, which may well decode as literals.
        if r.pos > end {
            return Err(bad("truncated"));
        }
    }
}

/// Reads bits LSB first; past the end it reads zeros (the callers check the position).
struct Bits<'a> {
    data: &'a [u8],
    pos: usize,
}

impl Bits<'_> {
    /// The next 56 or more bits, not consumed.
    fn peek(&self) -> u64 {
        let at = self.pos / 8;
        let word = match self.data.get(at..at + 8) {
            Some(b) => u64::from_le_bytes(b.try_into().unwrap_or_default()),
            None => {
                let mut b = [0u8; 8];
                let tail = self.data.get(at..).unwrap_or_default();
                b[..tail.len()].copy_from_slice(tail);
                u64::from_le_bytes(b)
            }
        };
        word >> (self.pos % 8)
    }

    fn take(&mut self, n: u32) -> io::Result<u32> {
        if self.pos + n as usize > self.data.len() * 8 {
            return Err(bad("truncated"));
        }
        let v = (self.peek() & ((1u64 << n) - 1)) as u32;
        self.pos += n as usize;
        Ok(v)
    }
}

/// Bits of the direct lookup: codes up to this long (nearly all of them, by frequency)
/// decode in one step; longer ones go the slow, canonical way.
const DIRECT: u32 = 12;

/// A canonical Huffman decoding table indexed by the next `bits` input bits: each entry
/// is `symbol << 16 | (code length + the symbol's extra bits) << 5 | code length`, 0 where
/// the code is longer than `bits` (or none starts there: an incomplete code). `count`,
/// `sorted` and `extra` decode the long codes.
#[derive(Default)]
struct Table {
    entries: Vec<u32>,
    mask: u64,
    count: [u16; 16],
    sorted: Vec<u16>,
    extra: Extra,
}

impl Table {
    fn build(&mut self, lengths: &[u8], extra: Extra) -> io::Result<()> {
        let mut count = [0u16; 16];
        for &l in lengths {
            count[l as usize] += 1;
        }
        count[0] = 0;
        let max = (1..16).rev().find(|&l| count[l] > 0).unwrap_or(1) as u32;
        let mut next = [0u32; 16];
        let mut code = 0u32;
        for l in 1..16 {
            code = (code + count[l - 1] as u32) << 1;
            next[l] = code;
            // More codes of this length than there is room for: not a prefix code.
            if count[l] as u32 > (1 << l) - code.min(1 << l) {
                return Err(bad("over-subscribed Huffman code"));
            }
        }
        self.count = count;
        self.extra = extra;
        // Symbols by code length, then by value (a counting sort).
        let mut offset = [0usize; 16];
        for l in 1..15 {
            offset[l + 1] = offset[l] + count[l] as usize;
        }
        self.sorted.clear();
        self.sorted.resize(offset[15] + count[15] as usize, 0);
        for (sym, &l) in lengths.iter().enumerate() {
            if l != 0 {
                self.sorted[offset[l as usize]] = sym as u16;
                offset[l as usize] += 1;
            }
        }
        let bits = max.min(DIRECT);
        self.mask = (1u64 << bits) - 1;
        self.entries.clear();
        self.entries.resize(1 << bits, 0);
        for (sym, &l) in lengths.iter().enumerate() {
            if l == 0 {
                continue;
            }
            let c = next[l as usize];
            next[l as usize] += 1;
            if l as u32 > bits {
                continue;
            }
            // Codes are sent MSB first, the table is indexed by bits read LSB first.
            let rev = (c.reverse_bits() >> (32 - l as u32)) as usize;
            let total = l as u32 + extra.of(sym);
            let entry = (sym as u32) << 16 | total << 5 | l as u32;
            for slot in self.entries.iter_mut().skip(rev).step_by(1 << l) {
                *slot = entry;
            }
        }
        Ok(())
    }

    fn decode(&self, r: &mut Bits) -> io::Result<u16> {
        let (sym, n) = self.symbol(r.peek())?;
        r.pos += n as usize;
        Ok(sym as u16)
    }

    /// The symbol whose code starts `bits` (LSB first), and the bits it takes with its
    /// extra bits.
    #[inline(always)]
    fn symbol(&self, bits: u64) -> io::Result<(u32, u32)> {
        let entry = self.entries[(bits & self.mask) as usize];
        if entry & 31 != 0 {
            return Ok((entry >> 16, (entry >> 5) & 31));
        }
        self.symbol_long(bits)
    }

    /// Canonical decoding, one bit at a time: codes of length l are consecutive numbers
    /// starting at `first`, their symbols consecutive in `sorted` from `index`.
    #[cold]
    fn symbol_long(&self, bits: u64) -> io::Result<(u32, u32)> {
        let (mut code, mut first, mut index) = (0u32, 0u32, 0u32);
        for l in 1..16u32 {
            code |= ((bits >> (l - 1)) & 1) as u32;
            let n = self.count[l as usize] as u32;
            if code < first + n {
                let sym = self.sorted[(index + code - first) as usize] as usize;
                let extra = self.extra.of(sym);
                return Ok((sym as u32, l + extra));
            }
            index += n;
            first = (first + n) << 1;
            code <<= 1;
        }
        Err(bad("invalid Huffman code"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};

    fn inflate(data: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        flate2::read::DeflateDecoder::new(data)
            .read_to_end(&mut out)
            .unwrap();
        out
    }

    fn libdeflate(level: i32, data: &[u8]) -> Vec<u8> {
        let mut c = libdeflater::Compressor::new(libdeflater::CompressionLvl::new(level).unwrap());
        let mut out = vec![0; c.deflate_compress_bound(data.len())];
        let n = c.deflate_compress(data, &mut out).unwrap();
        out.truncate(n);
        out
    }

    /// Inputs that give stored, fixed and dynamic blocks, several of them, and empty.
    fn samples() -> Vec<Vec<u8>> {
        let mut x = 0x1234_5678u32;
        let mut noise = || {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            x
        };
        let random: Vec<u8> = (0..200_000).map(|_| noise() as u8).collect();
        let text: Vec<u8> = (0..600_000)
            .map(|i| b"abcdefgh"[(noise() % 8) as usize] ^ ((i / 50_000) as u8 & 3))
            .collect();
        let mut mixed = random[..70_000].to_vec();
        mixed.extend_from_slice(&text[..300_000]);
        mixed.extend(std::iter::repeat_n(0u8, 100_000));
        vec![
            Vec::new(),
            b"a".to_vec(),
            b"hello hello hello".to_vec(),
            random,
            text,
            mixed,
        ]
    }

    #[test]
    fn reopened_pieces_join_into_one_stream() {
        for level in [0, 1, 6, 9, 12] {
            let inputs = samples();
            let mut joined = Vec::new();
            let mut whole = Vec::new();
            for (i, input) in inputs.iter().enumerate() {
                let mut piece = libdeflate(level, input);
                // Each piece alone must have been walked to its real end.
                assert_eq!(walk(&piece).unwrap().1.div_ceil(8), piece.len());
                if i + 1 < inputs.len() {
                    reopen(&mut piece).unwrap();
                }
                joined.extend_from_slice(&piece);
                whole.extend_from_slice(input);
            }
            assert!(
                inflate(&joined) == whole,
                "level {level}: joined stream differs"
            );
        }
    }

    #[test]
    fn zlib_streams_are_walked_too() {
        // An independent encoder's fixed and dynamic blocks.
        for input in samples() {
            let mut e = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::new(6));
            e.write_all(&input).unwrap();
            let mut piece = e.finish().unwrap();
            reopen(&mut piece).unwrap();
            piece.extend_from_slice(&[0x03, 0x00]); // an empty final fixed block
            assert!(inflate(&piece) == input);
        }
    }

    #[test]
    fn damaged_streams_are_errors_not_panics() {
        let piece = libdeflate(6, &samples()[4]);
        for cut in [0, 1, 7, piece.len() / 2, piece.len() - 1] {
            assert!(walk(&piece[..cut]).is_err(), "cut at {cut}");
        }
        assert!(walk(&[0x07]).is_err(), "reserved block type");
    }
}
