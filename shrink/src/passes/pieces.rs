//! Pass 3 on several threads. Each worker filters a run of whole records (as
//! [`Hprof::split`] cuts them) through its own [`ShrinkFilter`] and writer, but the writer's
//! sink only notes what would be written: stretches of the input by offset, and the few new
//! bytes (patched ids, segment headers with their new length) copied aside. The calling
//! thread takes the runs back in file order and writes them. A run's notes are an entry or
//! two per dropped array, never the array bytes, and only a bounded stretch of input
//! (`WINDOW_BYTES`) is walked ahead of the writer, so the notes in memory are a few MiB on
//! real dumps and at most about twice that stretch on the most contrived one.

use std::collections::BTreeMap;
use std::io::{self, IoSlice, Write};
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard};

use super::plan::Plan;
use super::shrink::{ShrinkFilter, WriteStats};
use crate::control::{Control, Stage};
use crate::error::{Error, Result};
use crate::hprof::writer::ZEROS;
use crate::hprof::{FormatError, Tag};
use crate::hprof::{
    Header, Hprof, HprofWriter, Record, Rewrite, SubRecord, Visitor, RECORD_HEADER_LEN,
};

/// Input bytes per run: small enough for both cores to stay busy on a 200 MB dump and for
/// the in-flight notes to stay small, large enough that handing out runs costs nothing.
const RUN_BYTES: u64 = 4 << 20;

/// Input bytes of runs walked ahead of the one the writer waits for (at least two runs a
/// thread): the notes they make are at most about twice that, however the arrays fall.
const WINDOW_BYTES: u64 = 32 << 20;

/// Runs larger than this (one huge heap dump segment) are not worth cutting into notes.
const MAX_RUN: u64 = 64 << 20;

/// One stretch of output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Piece {
    /// `len` bytes of the input at `offset`.
    Input { offset: u64, len: u64 },
    /// `len` bytes of the run's copied-aside bytes at `at`.
    Copied { at: usize, len: usize },
    /// `len` zero bytes (the elements of zeroed arrays).
    Zeros { len: u64 },
}

/// A sink for a writer that notes what it is given instead of writing it: slices of the
/// input by their offset, anything else copied aside.
struct Pieces<'a> {
    source: &'a [u8],
    list: Vec<Piece>,
    copied: Vec<u8>,
    bytes: u64,
}

impl<'a> Pieces<'a> {
    fn new(source: &'a [u8]) -> Self {
        Pieces {
            source,
            list: Vec::new(),
            copied: Vec::new(),
            bytes: 0,
        }
    }

    /// Where `buf` starts in the input, if it is a slice of it.
    fn input_offset(&self, buf: &[u8]) -> Option<u64> {
        let start = self.source.as_ptr() as usize;
        let at = buf.as_ptr() as usize;
        (at >= start && at + buf.len() <= start + self.source.len()).then(|| (at - start) as u64)
    }

    /// Copies `bytes` aside (even a slice of the input) and returns where they sit among
    /// the copied bytes, for a patch later.
    fn copy(&mut self, bytes: &[u8]) -> usize {
        let at = self.copied.len();
        self.copied.extend_from_slice(bytes);
        self.bytes += bytes.len() as u64;
        self.list.push(Piece::Copied {
            at,
            len: bytes.len(),
        });
        at
    }

    /// Writes the notes out: input stretches and copied bytes gathered into vectored
    /// writes of about a MiB, so the input goes from the mapping to the kernel without a
    /// copy of our own and small pieces cost no system call each.
    fn write_to<W: Write>(&self, out: &mut W) -> io::Result<()> {
        let mut batch = Batch::default();
        for piece in &self.list {
            match *piece {
                Piece::Input { offset, len } => {
                    batch.add(out, &self.source[offset as usize..(offset + len) as usize])?
                }
                Piece::Copied { at, len } => batch.add(out, &self.copied[at..at + len])?,
                Piece::Zeros { mut len } => {
                    while len > 0 {
                        let k = len.min(ZEROS.len() as u64) as usize;
                        batch.add(out, &ZEROS[..k])?;
                        len -= k as u64;
                    }
                }
            }
        }
        batch.write(out)
    }
}

/// Slices gathered for one vectored write.
#[derive(Default)]
struct Batch<'b> {
    slices: Vec<IoSlice<'b>>,
    bytes: usize,
}

impl<'b> Batch<'b> {
    /// Slices and bytes at which a batch is written.
    const SLICES: usize = 512;
    const BYTES: usize = 1 << 20;

    /// Adds `bytes`, writing the batch once it is full.
    fn add<W: Write>(&mut self, out: &mut W, bytes: &'b [u8]) -> io::Result<()> {
        if bytes.is_empty() {
            return Ok(());
        }
        self.slices.push(IoSlice::new(bytes));
        self.bytes += bytes.len();
        if self.slices.len() == Self::SLICES || self.bytes >= Self::BYTES {
            self.write(out)?;
        }
        Ok(())
    }

    /// Writes every slice (std's `write_all_vectored` is not stable yet) and empties the
    /// batch.
    fn write<W: Write>(&mut self, out: &mut W) -> io::Result<()> {
        let mut rest = &mut self.slices[..];
        while !rest.is_empty() {
            match out.write_vectored(rest) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => IoSlice::advance_slices(&mut rest, n),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        self.slices.clear();
        self.bytes = 0;
        Ok(())
    }
}

impl Write for Pieces<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        let len = buf.len();
        self.bytes += len as u64;
        if std::ptr::eq(buf.as_ptr(), ZEROS.as_ptr()) {
            match self.list.last_mut() {
                Some(Piece::Zeros { len: l }) => *l += len as u64,
                _ => self.list.push(Piece::Zeros { len: len as u64 }),
            }
            return Ok(len);
        }
        match (self.input_offset(buf), self.list.last_mut()) {
            (Some(o), Some(Piece::Input { offset, len: l })) if *offset + *l == o => {
                *l += len as u64
            }
            (Some(offset), _) => self.list.push(Piece::Input {
                offset,
                len: len as u64,
            }),
            (None, last) => {
                let at = self.copied.len();
                self.copied.extend_from_slice(buf);
                match last {
                    Some(Piece::Copied { at: a, len: l }) if *a + *l == at => *l += len,
                    _ => self.list.push(Piece::Copied { at, len }),
                }
            }
        }
        Ok(len)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// The writer of a run, with each heap dump segment's header written once the segment's
/// new length is known: the header goes aside and is patched at the segment's end, which
/// spares the walk ahead over each segment that a writer to a stream needs.
struct RunWriter<'a> {
    writer: HprofWriter<'a, Pieces<'a>>,
    /// The open segment's header: where it sits among the copied bytes, and the output
    /// length at the start of its body.
    open: Option<(usize, u64)>,
}

impl Visitor for RunWriter<'_> {
    type Error = FormatError;

    fn header(&mut self, header: &Header<'_>) -> Result<(), FormatError> {
        self.writer.header(header)
    }
    fn record(&mut self, record: &Record<'_>) -> Result<(), FormatError> {
        self.writer.record(record)
    }
    fn heap_dump_begin(&mut self, segment: &Record<'_>, _length: u32) -> Result<(), FormatError> {
        let pieces = self.writer.get_mut()?;
        let at = pieces.copy(&segment.raw[..RECORD_HEADER_LEN]);
        self.open = Some((at, pieces.bytes));
        Ok(())
    }
    fn sub_record(&mut self, sub: &SubRecord<'_>) -> Result<(), FormatError> {
        self.writer.sub_record(sub)
    }
    fn passed_over(&mut self, offset: u64, raw: &[u8]) -> Result<(), FormatError> {
        self.writer.passed_over(offset, raw)
    }
    fn rewritten(&mut self, sub: &SubRecord<'_>, rewrite: &Rewrite<'_>) -> Result<(), FormatError> {
        self.writer.rewritten(sub, rewrite)
    }
    fn heap_dump_end(&mut self, segment: &Record<'_>) -> Result<(), FormatError> {
        let pieces = self.writer.get_mut()?;
        if let Some((at, start)) = self.open.take() {
            // Never longer than the input segment, whose length fit in 32 bits.
            let len =
                u32::try_from(pieces.bytes - start).map_err(|_| FormatError::LengthMismatch {
                    offset: segment.offset,
                    tag: Tag::record(segment.tag),
                    what: "rewritten heap dump segment",
                    declared: segment.body.len() as u64,
                    actual: pieces.bytes - start,
                })?;
            pieces.copied[at + 5..at + 9].copy_from_slice(&len.to_be_bytes());
        }
        Ok(())
    }
    fn end(&mut self) -> Result<(), FormatError> {
        self.writer.end()
    }
}

/// What a worker made of one run.
struct RunOut<'a> {
    pieces: Pieces<'a>,
    stats: WriteStats,
}

/// A run's notes, an error, or the panic of the worker that walked it (raised again on
/// the writing thread, so a caller catching panics, as the C ABI does, sees it).
type Outcome<'a> = std::thread::Result<Result<RunOut<'a>>>;

/// What the workers and the writing thread share, under one lock.
#[derive(Default)]
struct State<'a> {
    done: BTreeMap<usize, Outcome<'a>>,
    /// Runs written so far.
    written: usize,
    /// The writer is gone (finished, failed or panicking): workers take no more runs.
    stop: bool,
}

struct Shared<'a> {
    state: Mutex<State<'a>>,
    changed: Condvar,
}

impl<'a> Shared<'a> {
    fn lock(&self) -> MutexGuard<'_, State<'a>> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn wait<'g>(&self, guard: MutexGuard<'g, State<'a>>) -> MutexGuard<'g, State<'a>> {
        self.changed.wait(guard).unwrap_or_else(|e| e.into_inner())
    }
}

/// Tells the workers the writer is gone when it returns or unwinds, so none waits forever.
struct StopOnDrop<'s, 'a>(&'s Shared<'a>);

impl Drop for StopOnDrop<'_, '_> {
    fn drop(&mut self) {
        self.0.lock().stop = true;
        self.0.changed.notify_all();
    }
}

/// [`crate::write_shrunk`] through a buffer, for an `out` that is not buffered.
fn write_on_this_thread<W: Write>(
    hprof: &Hprof<'_>,
    plan: &Plan,
    out: W,
    control: &Control,
) -> Result<(W, WriteStats, u64)> {
    let buffered = io::BufWriter::with_capacity(Batch::BYTES, out);
    let (buffered, stats, n) = super::shrink::write_shrunk(hprof, plan, buffered, control)?;
    let out = buffered
        .into_inner()
        .map_err(|e| Error::Write(e.into_error()))?;
    Ok((out, stats, n))
}

/// The writer's side of [`write_shrunk_parallel`]: the `runs` runs' notes written to `out`
/// in file order as the workers finish them. Returns the stats and the bytes written.
fn write_in_order<W: Write>(
    shared: &Shared<'_>,
    runs: usize,
    out: &mut W,
) -> Result<(WriteStats, u64)> {
    let _stop = StopOnDrop(shared);
    let mut stats = WriteStats::default();
    let mut bytes = 0u64;
    for i in 0..runs {
        let outcome = {
            let mut state = shared.lock();
            loop {
                if let Some(outcome) = state.done.remove(&i) {
                    break outcome;
                }
                state = shared.wait(state);
            }
        };
        let run = match outcome {
            Ok(run) => run?,
            Err(panic) => std::panic::resume_unwind(panic),
        };
        run.pieces.write_to(out).map_err(Error::Write)?;
        bytes += run.pieces.bytes;
        stats.add(&run.stats);
        shared.lock().written = i + 1;
        shared.changed.notify_all();
    }
    Ok((stats, bytes))
}

/// Pass 3 on `threads` workers: the same bytes as [`crate::write_shrunk`] (the runs are
/// whole records, and each is filtered exactly as the one-thread walk would), written to
/// `out` in file order, in large vectored writes (so `out` needs no buffer of its own).
/// Returns the sink, the stats and the bytes written.
pub fn write_shrunk_parallel<W: Write>(
    hprof: &Hprof<'_>,
    plan: &Plan,
    mut out: W,
    control: &Control,
    threads: usize,
) -> Result<(W, WriteStats, u64)> {
    if threads <= 1 {
        return write_on_this_thread(hprof, plan, out, control);
    }
    let parts = ((hprof.len() / RUN_BYTES) as usize).max(threads * 4);
    // A damaged record is left to the one-thread walk, which reports the first error in
    // file order; so is a dump that is one huge segment, which cannot be cut at record
    // boundaries (its notes would grow with its dropped arrays).
    let runs = match hprof.split(parts) {
        Ok(runs) if runs.iter().all(|r| r.end - r.start <= MAX_RUN) => runs,
        _ => return write_on_this_thread(hprof, plan, out, control),
    };
    // Input in flight beyond the run the writer waits for: bounds the notes held.
    let window = (threads as u64 * 2 * RUN_BYTES).max(WINDOW_BYTES);
    let source = hprof.data();
    let id_size = hprof.id_size();
    let shared = Shared {
        state: Mutex::new(State::default()),
        changed: Condvar::new(),
    };
    let next = AtomicUsize::new(0);
    let progress = AtomicU64::new(0);

    let walk_run = |i: usize| -> Result<RunOut<'_>> {
        let range = runs[i].clone();
        let writer = RunWriter {
            writer: HprofWriter::new(Pieces::new(source), source, id_size),
            open: None,
        };
        let mut filter = ShrinkFilter::new(plan, id_size, writer).lengths_downstream();
        let mut ticker = control.shared_ticker(Stage::Write, hprof.len(), &progress, range.start);
        hprof.accept_range(range, &mut filter, &mut ticker)?;
        let (writer, stats) = filter.into_inner();
        Ok(RunOut {
            pieces: writer.writer.into_inner()?,
            stats,
        })
    };

    let work = || loop {
        let i = next.fetch_add(1, Ordering::SeqCst);
        if i >= runs.len() {
            return;
        }
        {
            // Wait for the writer to come within reach, so notes do not pile up.
            let mut state = shared.lock();
            while !state.stop
                && i > state.written
                && runs[i].end - runs[state.written].start > window
            {
                state = shared.wait(state);
            }
            if state.stop {
                return;
            }
        }
        let outcome = std::panic::catch_unwind(AssertUnwindSafe(|| walk_run(i)));
        let failed = !matches!(outcome, Ok(Ok(_)));
        shared.lock().done.insert(i, outcome);
        shared.changed.notify_all();
        if failed {
            // Runs already handed out still finish, so the first error in file order is
            // the one reported.
            return;
        }
    };

    let (stats, bytes) = std::thread::scope(|s| {
        let mut started = 0;
        for _ in 0..threads.min(runs.len()) {
            let spawned = if started == 0 {
                crate::threads::spawn_first(s, || work)
            } else {
                std::thread::Builder::new().spawn_scoped(s, work)
            };
            match spawned {
                Ok(_) => started += 1,
                // Fewer workers than asked is fine; none at all cannot write anything.
                Err(e) if started == 0 => return Err(Error::Thread(e)),
                Err(_) => break,
            }
        }
        write_in_order(&shared, runs.len(), &mut out)
    })?;
    out.flush().map_err(Error::Write)?;
    Ok((out, stats, bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_merge_adjacent_input_and_copy_the_rest() {
        let source = b"0123456789".to_vec();
        let mut p = Pieces::new(&source);
        p.write_all(&source[0..3]).unwrap();
        p.write_all(&source[3..5]).unwrap();
        p.write_all(b"xy").unwrap();
        p.write_all(b"z").unwrap();
        p.write_all(&source[8..10]).unwrap();
        assert_eq!(
            p.list,
            vec![
                Piece::Input { offset: 0, len: 5 },
                Piece::Copied { at: 0, len: 3 },
                Piece::Input { offset: 8, len: 2 },
            ]
        );
        let mut out = Vec::new();
        p.write_to(&mut out).unwrap();
        assert_eq!(out, b"01234xyz89");
        assert_eq!(p.bytes, 10);
    }

    /// A sink that takes at most 7 bytes a call, vectored or not.
    struct Trickle(Vec<u8>);

    impl Write for Trickle {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            let n = buf.len().min(7);
            self.0.extend_from_slice(&buf[..n]);
            Ok(n)
        }
        fn write_vectored(&mut self, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
            let mut n = 0;
            for b in bufs {
                let k = b.len().min(7 - n);
                self.0.extend_from_slice(&b[..k]);
                n += k;
                if n == 7 {
                    break;
                }
            }
            Ok(n)
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn notes_reach_a_sink_that_takes_a_little_at_a_time() {
        let source: Vec<u8> = (0..=255u8).cycle().take(5000).collect();
        let mut p = Pieces::new(&source);
        let mut want = Vec::new();
        for (i, chunk) in source.chunks(300).enumerate() {
            if i % 3 == 1 {
                continue; // dropped
            }
            p.write_all(chunk).unwrap();
            want.extend_from_slice(chunk);
            let patch = [i as u8; 5];
            p.write_all(&patch).unwrap();
            want.extend_from_slice(&patch);
            p.write_all(&ZEROS[..10]).unwrap();
            want.extend_from_slice(&[0; 10]);
        }
        let mut out = Trickle(Vec::new());
        p.write_to(&mut out).unwrap();
        assert!(out.0 == want);
        assert_eq!(p.bytes, want.len() as u64);
    }

    /// A sink that fails in the worst way, a panic, part-way through.
    struct PanicsAfter(usize);

    impl Write for PanicsAfter {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.0 = self.0.checked_sub(1).expect("the sink gives up");
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_panicking_sink_unwinds_without_leaving_workers_waiting() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../fixtures/art-api25.hprof");
        let bytes = std::fs::read(path).unwrap();
        let hprof = Hprof::new(&bytes).unwrap();
        let control = Control::default();
        let opts =
            crate::AnalyzeOptions::new(crate::StripMode::Bitmaps, crate::DroppedMode::Remove, 2);
        let a = crate::analyze(&hprof, &opts, &control).unwrap();
        // Returning at all (not hanging) is half the point; the panic must come through.
        let r = std::panic::catch_unwind(AssertUnwindSafe(|| {
            write_shrunk_parallel(&hprof, &a.plan, PanicsAfter(3), &control, 2)
        }));
        assert!(r.is_err(), "the sink's panic reached the caller");
    }
}
