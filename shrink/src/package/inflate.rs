//! A deflated entry written by [`super::deflate`], inflated on several cores. The stream
//! is made of blocks of [`BLOCK`] input bytes, each compressed without the previous one's
//! window and ending, but for the last, with an empty stored block (a sync flush: after
//! byte alignment, the bytes `00 00 FF FF`). So each block inflates by itself, once found
//! by that marker. A marker that is really compressed data (rare), or a zip another tool
//! wrote (one stream, no markers), shows as a block that does not inflate to exactly
//! [`BLOCK`] bytes: the caller then inflates the stream as one, as any reader would.

use std::io;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use libdeflater::Decompressor;

use super::deflate::BLOCK;

/// An empty stored block as a sync flush leaves it, from its byte-aligned length on.
const MARKER: [u8; 4] = [0, 0, 0xFF, 0xFF];
/// A final, empty block (fixed codes: BFINAL 1, BTYPE 01, end of block), put after a block
/// that is not the stream's last: libdeflate takes whole streams only.
const END: [u8; 2] = [0x03, 0x00];

/// Inflates the raw deflate stream `data`, made in blocks as above, to `size` bytes on up
/// to `threads` threads, handing each block to `put(offset, bytes)` (from any of them, in
/// any order). The CRC-32 of the whole; `None` when the stream is not made of such blocks
/// or does not inflate to `size` bytes (what was put is then to be thrown away). An error
/// is `put`'s.
pub fn inflate_blocks(
    data: &[u8],
    size: u64,
    threads: usize,
    put: impl Fn(u64, &[u8]) -> io::Result<()> + Sync,
) -> io::Result<Option<u32>> {
    let Ok(blocks) = usize::try_from(size.div_ceil(BLOCK as u64)) else {
        return Ok(None);
    };
    if blocks < 2 {
        return Ok(None);
    }
    // A marker that ends the data is a final empty stored block's, not a block's end.
    let ends: Vec<usize> = memchr::memmem::find_iter(data, &MARKER)
        .map(|p| p + MARKER.len())
        .filter(|&e| e < data.len())
        .collect();
    // A stream whose input was a whole number of blocks may end with an empty block of
    // its own after the last marker.
    let trailing = match ends.len() {
        n if n == blocks - 1 => None,
        n if n == blocks => data.get(ends[blocks - 1]..),
        _ => return Ok(None),
    };
    if let Some(t) = trailing {
        if !matches!(Decompressor::new().deflate_decompress(t, &mut []), Ok(0)) {
            return Ok(None);
        }
    }
    // Block `i`, inflated into `out` and put; its CRC-32, or `None` if it does not inflate
    // to its share.
    let one = |i: usize,
               d: &mut Decompressor,
               out: &mut Vec<u8>,
               whole: &mut Vec<u8>|
     -> io::Result<Option<crc32fast::Hasher>> {
        // The stream's own last block, ending it.
        let last = i == blocks - 1 && trailing.is_none();
        let start = if i == 0 { 0 } else { ends[i - 1] };
        let end = if last { data.len() } else { ends[i] };
        let want = if i == blocks - 1 {
            (size - (i * BLOCK) as u64) as usize
        } else {
            BLOCK
        };
        let Some(piece) = data.get(start..end) else {
            return Ok(None);
        };
        out.resize(want, 0);
        let inflated = if last {
            d.deflate_decompress(piece, out)
        } else {
            whole.clear();
            whole.extend_from_slice(piece);
            whole.extend_from_slice(&END);
            d.deflate_decompress(whole, out)
        };
        if !matches!(inflated, Ok(n) if n == want) {
            return Ok(None);
        }
        put((i * BLOCK) as u64, out)?;
        let mut h = crc32fast::Hasher::new();
        h.update(out);
        Ok(Some(h))
    };
    let next = AtomicUsize::new(0);
    let hashes: Mutex<Vec<Option<crc32fast::Hasher>>> = Mutex::new(vec![None; blocks]);
    let failed = std::sync::atomic::AtomicBool::new(false);
    let work = || -> io::Result<()> {
        let (mut d, mut out, mut whole) = (Decompressor::new(), Vec::new(), Vec::new());
        loop {
            let i = next.fetch_add(1, Ordering::Relaxed);
            if i >= blocks || failed.load(Ordering::Relaxed) {
                return Ok(());
            }
            match one(i, &mut d, &mut out, &mut whole)? {
                Some(h) => hashes.lock().unwrap_or_else(|p| p.into_inner())[i] = Some(h),
                None => failed.store(true, Ordering::Relaxed),
            }
        }
    };
    std::thread::scope(|s| {
        // Helpers the system will not give are left out: the calling thread does the rest.
        let helpers: Vec<_> = (1..threads.clamp(1, blocks))
            .map_while(|_| std::thread::Builder::new().spawn_scoped(s, work).ok())
            .collect();
        let mine = work();
        helpers
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .chain([mine])
            .collect::<io::Result<()>>()
    })?;
    if failed.into_inner() {
        return Ok(None);
    }
    let mut all = crc32fast::Hasher::new();
    for h in hashes.into_inner().unwrap_or_else(|p| p.into_inner()) {
        let Some(h) = h else { return Ok(None) };
        all.combine(&h);
    }
    Ok(Some(all.finalize()))
}

/// Inflates the deflated entry `d` into `file`, each block written at its place, on up to
/// `threads` threads: `true` when it came out as the zip directory declares (size and
/// CRC-32), `false` when it is not made of such blocks or came out otherwise (what was
/// written is then to be thrown away, and the entry read as one stream, whose reader names
/// the fault). An error is the file's.
#[cfg(unix)]
pub fn inflate_to_file(
    d: &super::DeflatedEntry,
    file: &std::fs::File,
    threads: usize,
) -> io::Result<bool> {
    use std::os::unix::fs::FileExt;
    let crc = inflate_blocks(d.data.bytes(), d.size, threads, |at, bytes| {
        file.write_all_at(bytes, at)
    })?;
    Ok(crc == Some(d.crc))
}

#[cfg(test)]
mod tests {
    use super::super::deflate::ParallelDeflate;
    use super::*;
    use std::io::Write;

    /// Bytes that compress, but not to nothing: a few MiB of varied text.
    fn sample(len: usize) -> Vec<u8> {
        let mut v = Vec::with_capacity(len);
        let mut x = 0x9e37_79b9u32;
        while v.len() < len {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            write!(v, "object {} field {} ", x % 1000, x % 7).unwrap();
        }
        v.truncate(len);
        v
    }

    /// The stream as the package writer makes it.
    fn blocked(data: &[u8]) -> Vec<u8> {
        std::thread::scope(|s| {
            let mut w = ParallelDeflate::new(s, Vec::new(), 6, 2).unwrap();
            w.write_all(data).unwrap();
            w.finish().unwrap().0
        })
    }

    /// Inflates into memory; the CRC, or `None`.
    fn run(z: &[u8], size: usize) -> (Option<u32>, Vec<u8>) {
        let out = std::sync::Mutex::new(vec![0u8; size]);
        let crc = inflate_blocks(z, size as u64, 2, |at, bytes| {
            let at = at as usize;
            out.lock().unwrap()[at..at + bytes.len()].copy_from_slice(bytes);
            Ok(())
        })
        .unwrap();
        (crc, out.into_inner().unwrap())
    }

    #[test]
    fn blocks_inflate_side_by_side_to_the_original() {
        for len in [BLOCK * 3 + 12345, BLOCK * 2, BLOCK + 1] {
            let data = sample(len);
            let (crc, out) = run(&blocked(&data), len);
            assert_eq!(crc, Some(crc32fast::hash(&data)), "{len} bytes");
            assert!(out == data, "{len} bytes");
        }
    }

    #[test]
    fn one_stream_from_another_writer_is_left_to_the_caller() {
        let data = sample(BLOCK * 2 + 7);
        let mut e = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::new(6));
        e.write_all(&data).unwrap();
        assert_eq!(run(&e.finish().unwrap(), data.len()).0, None);
    }

    #[test]
    fn a_damaged_block_or_a_wrong_length_is_refused() {
        let data = sample(BLOCK * 2 + 99);
        let z = blocked(&data);
        assert_eq!(run(&z, data.len() + 1).0, None);
        assert_eq!(run(&z, data.len() - 1).0, None);
        // A damaged block either fails to inflate or inflates to other bytes: the CRC
        // then differs.
        let mut bad = z.clone();
        let at = bad.len() / 3;
        bad[at] ^= 0x55;
        assert_ne!(run(&bad, data.len()).0, Some(crc32fast::hash(&data)));
    }
}
