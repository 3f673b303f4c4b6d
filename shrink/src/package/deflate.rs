//! Deflate on several cores for one stream: the input is cut into blocks; each block is
//! compressed on a worker thread by libdeflate (the fastest deflate there is, and at
//! level 6 about 5% smaller than zlib's), then `reopen`ed to end
//! with a non-final, byte-aligned block, except the last, which ends the stream.
//! Concatenated in order, the blocks are one valid raw deflate stream. The CRC-32 of each
//! block is computed beside it and combined in order.
//!
//! libdeflate has no preset dictionary, so each block starts without the previous one's
//! window (pigz passes it to zlib); at 1 MiB blocks that costs about 0.1% of the output,
//! far less than libdeflate gains over zlib. Written here rather than taken from `gzp`
//! because gzp's raw-deflate output never ends the stream, needs a `'static` writer, and
//! uses libdeflate only for independent (BGZF) members.

use std::collections::BTreeMap;
use std::io::{self, Write};
use std::sync::mpsc::{channel, sync_channel, Receiver, Sender, SyncSender};
use std::sync::{Arc, Mutex};
use std::thread::Scope;

use libdeflater::{CompressionLvl, Compressor};

use super::reopen::reopen;

/// What compresses deflated entries, for the report.
pub const BACKEND: &str = "libdeflate";

/// Bytes of input per block: large enough that the sync flush and the fresh start cost
/// nothing measurable, small enough that a few in flight stay a few MiB.
pub const BLOCK: usize = 1 << 20;

struct Job {
    seq: u64,
    data: Vec<u8>,
    last: bool,
}

struct Done {
    seq: u64,
    result: io::Result<(Vec<u8>, crc32fast::Hasher)>,
}

/// A `Write` that deflates what it receives on `threads` worker threads (spawned in
/// `scope`) and writes the compressed stream, in order, to `out`.
pub struct ParallelDeflate<'scope, W: Write> {
    out: W,
    block: Vec<u8>,
    jobs: Option<SyncSender<Job>>,
    done: Receiver<Done>,
    sent: u64,
    written: u64,
    ready: BTreeMap<u64, (Vec<u8>, crc32fast::Hasher)>,
    crc: crc32fast::Hasher,
    total_in: u64,
    total_out: u64,
    _scope: std::marker::PhantomData<&'scope ()>,
}

impl<'scope, W: Write> ParallelDeflate<'scope, W> {
    /// A deflater writing to `out` that compresses blocks on `threads` threads of `scope` at `level`.
    pub fn new<'env>(
        scope: &'scope Scope<'scope, 'env>,
        out: W,
        level: u32,
        threads: usize,
    ) -> io::Result<Self> {
        let threads = threads.max(1);
        // Two blocks queued per worker keep every core busy without holding much.
        let (jobs, job_rx) = sync_channel::<Job>(threads * 2);
        let job_rx = Arc::new(Mutex::new(job_rx));
        let (done_tx, done) = channel::<Done>();
        let mut started = 0;
        for _ in 0..threads {
            let make = || {
                let rx = Arc::clone(&job_rx);
                let tx: Sender<Done> = done_tx.clone();
                move || worker(rx, tx, level)
            };
            let spawned = if started == 0 {
                crate::threads::spawn_first(scope, make)
            } else {
                std::thread::Builder::new().spawn_scoped(scope, make())
            };
            match spawned {
                Ok(_) => started += 1,
                // Fewer workers than asked still compress everything; none cannot.
                Err(e) if started == 0 => return Err(e),
                Err(_) => break,
            }
        }
        Ok(ParallelDeflate {
            out,
            block: Vec::with_capacity(BLOCK),
            jobs: Some(jobs),
            done,
            sent: 0,
            written: 0,
            ready: BTreeMap::new(),
            crc: crc32fast::Hasher::new(),
            total_in: 0,
            total_out: 0,
            _scope: std::marker::PhantomData,
        })
    }

    fn submit(&mut self, last: bool) -> io::Result<()> {
        let data = std::mem::replace(&mut self.block, Vec::with_capacity(BLOCK));
        let job = Job {
            seq: self.sent,
            data,
            last,
        };
        self.sent += 1;
        // Writing finished blocks while waiting keeps memory bounded.
        self.write_ready()?;
        let jobs = self
            .jobs
            .as_ref()
            .ok_or_else(|| io::Error::other("deflate finished"))?;
        jobs.send(job)
            .map_err(|_| io::Error::other("a deflate worker stopped"))?;
        Ok(())
    }

    /// Writes every finished block that is next in order.
    fn write_ready(&mut self) -> io::Result<()> {
        while let Ok(d) = self.done.try_recv() {
            self.accept(d)?;
        }
        self.flush_in_order()
    }

    fn accept(&mut self, d: Done) -> io::Result<()> {
        let (bytes, crc) = d.result?;
        self.ready.insert(d.seq, (bytes, crc));
        Ok(())
    }

    fn flush_in_order(&mut self) -> io::Result<()> {
        while let Some((bytes, crc)) = self.ready.remove(&self.written) {
            self.out.write_all(&bytes)?;
            self.crc.combine(&crc);
            self.total_out += bytes.len() as u64;
            self.written += 1;
        }
        Ok(())
    }

    /// Ends the stream and waits for the workers; returns the output, the CRC-32 of all
    /// input, and the input and output byte counts.
    pub fn finish(mut self) -> io::Result<(W, u32, u64, u64)> {
        self.submit(true)?;
        self.jobs = None; // workers exit once the queue drains
        while self.written < self.sent {
            let d = self
                .done
                .recv()
                .map_err(|_| io::Error::other("a deflate worker stopped"))?;
            self.accept(d)?;
            self.flush_in_order()?;
        }
        Ok((self.out, self.crc.finalize(), self.total_in, self.total_out))
    }
}

impl<W: Write> Write for ParallelDeflate<'_, W> {
    fn write(&mut self, mut buf: &[u8]) -> io::Result<usize> {
        let n = buf.len();
        while !buf.is_empty() {
            let room = BLOCK - self.block.len();
            let take = room.min(buf.len());
            self.block.extend_from_slice(&buf[..take]);
            buf = &buf[take..];
            if self.block.len() == BLOCK {
                self.submit(false)?;
            }
        }
        self.total_in += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

fn worker(jobs: Arc<Mutex<Receiver<Job>>>, done: Sender<Done>, level: u32) {
    // One compressor per worker: libdeflate's state is allocated once, not per block.
    let mut compressor = None;
    loop {
        let job = {
            let rx = jobs.lock().unwrap_or_else(|e| e.into_inner());
            rx.recv()
        };
        let Ok(job) = job else { return };
        let result = compress(&mut compressor, &job, level);
        if done
            .send(Done {
                seq: job.seq,
                result,
            })
            .is_err()
        {
            return;
        }
    }
}

/// libdeflate's level for a zip level: the same up to 8; 9, "the smallest", is libdeflate's
/// 12 (its near-optimal parser), since its own 9 is not reliably smaller than its 6.
fn libdeflate_level(level: u32) -> u32 {
    if level >= 9 {
        12
    } else {
        level
    }
}

fn compress(
    compressor: &mut Option<Compressor>,
    job: &Job,
    level: u32,
) -> io::Result<(Vec<u8>, crc32fast::Hasher)> {
    let mut crc = crc32fast::Hasher::new();
    crc.update(&job.data);
    let c = match compressor {
        Some(c) => c,
        None => {
            let lvl = i32::try_from(libdeflate_level(level))
                .ok()
                .and_then(|l| CompressionLvl::new(l).ok())
                .ok_or_else(|| io::Error::other(format!("deflate level {level}")))?;
            compressor.insert(Compressor::new(lvl))
        }
    };
    // The bound, and room for the empty stored block that reopening appends.
    let mut out = vec![0; c.deflate_compress_bound(job.data.len()) + 8];
    let n = c
        .deflate_compress(&job.data, &mut out)
        .map_err(io::Error::other)?;
    out.truncate(n);
    if !job.last {
        reopen(&mut out)?;
    }
    Ok((out, crc))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    fn roundtrip(data: &[u8], threads: usize) {
        let (out, crc, n_in, n_out) = std::thread::scope(|s| {
            let mut w = ParallelDeflate::new(s, Vec::new(), 6, threads).unwrap();
            // Odd-sized writes across block boundaries.
            for chunk in data.chunks(333_333) {
                w.write_all(chunk).unwrap();
            }
            w.finish().unwrap()
        });
        assert_eq!(n_in, data.len() as u64);
        assert_eq!(n_out, out.len() as u64);
        assert_eq!(crc, crc32fast::hash(data));
        let mut back = Vec::new();
        flate2::read::DeflateDecoder::new(&out[..])
            .read_to_end(&mut back)
            .unwrap();
        assert!(back == data, "round trip differs");
    }

    #[test]
    fn one_stream_from_many_blocks_decodes_to_the_input() {
        let mut data = Vec::new();
        for i in 0..(3 * BLOCK + 12345) as u32 {
            data.push((i.wrapping_mul(2654435761) >> 24) as u8 & 0x0F);
        }
        roundtrip(&data, 2);
        roundtrip(&data, 1);
        roundtrip(&data[..10], 3);
        roundtrip(&[], 2);
    }

    #[test]
    fn the_dictionary_keeps_the_ratio_of_a_single_stream() {
        // Repeats spanning block boundaries compress only if each block sees the last.
        let unit: Vec<u8> = (0..20_000u32).map(|i| (i * 7919 % 251) as u8).collect();
        let data: Vec<u8> = unit.iter().cycle().take(4 * BLOCK).copied().collect();
        let (out, ..) = std::thread::scope(|s| {
            let mut w = ParallelDeflate::new(s, Vec::new(), 6, 2).unwrap();
            w.write_all(&data).unwrap();
            w.finish().unwrap()
        });
        let mut single =
            flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::new(6));
        single.write_all(&data).unwrap();
        let single = single.finish().unwrap();
        assert!(
            out.len() < single.len() * 11 / 10 + 1024,
            "parallel {} vs single {}",
            out.len(),
            single.len()
        );
    }

    fn deflate(data: &[u8], level: u32, threads: usize) -> Vec<u8> {
        std::thread::scope(|s| {
            let mut w = ParallelDeflate::new(s, Vec::new(), level, threads).unwrap();
            w.write_all(data).unwrap();
            w.finish().unwrap().0
        })
    }

    /// Heap-like bytes: records of ids, small counts and text, with some noise.
    fn heapish(len: usize) -> Vec<u8> {
        let mut x = 0x9E37_79B9u32;
        let mut data = Vec::with_capacity(len);
        while data.len() < len {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            data.push(0x21);
            data.extend_from_slice(&(0x1000_0000 + (x % 5000) * 16).to_be_bytes());
            data.extend_from_slice(&(x % 7).to_be_bytes());
            let word = ["java.lang.String", "android.view.View", "mContext", "[B"][x as usize % 4];
            data.extend_from_slice(word.as_bytes());
            data.extend((0..(x % 24)).map(|i| (x >> (i % 24)) as u8));
        }
        data.truncate(len);
        data
    }

    #[test]
    fn levels_trade_speed_for_size_and_threads_change_no_byte() {
        let data = heapish(3 * BLOCK + 777);
        let sizes: Vec<usize> = [1, 6, 9]
            .iter()
            .map(|&level| {
                let out = deflate(&data, level, 2);
                // Blocks are compressed alone, so the bytes depend on neither the thread
                // count nor the order in which workers finish.
                assert!(
                    out == deflate(&data, level, 1),
                    "level {level}: 1 vs 2 threads"
                );
                assert!(out == deflate(&data, level, 3), "level {level}: 3 threads");
                let mut back = Vec::new();
                flate2::read::DeflateDecoder::new(&out[..])
                    .read_to_end(&mut back)
                    .unwrap();
                assert!(back == data, "level {level}: round trip differs");
                out.len()
            })
            .collect();
        assert!(
            sizes[0] > sizes[1] && sizes[1] > sizes[2],
            "sizes at levels 1, 6, 9: {sizes:?}"
        );
    }
}
