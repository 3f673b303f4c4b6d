//! The writer: a visitor that emits what reaches it. Unchanged parts of the input are
//! written as the input's own bytes, and adjacent ones are merged into one large write, so a
//! pass-through copy of a 1 GiB segment is a handful of writes straight from the mapping.

use std::io::Write;

use super::bytes::write_id;
use super::error::{FormatError, Result};
use super::heap::{PrimitiveArray, Sub, SubRecord};
use super::record::{Header, Record, RECORD_HEADER_LEN};
use super::tags::Tag;
use super::visitor::{Rewrite, Visitor};

/// Where zeroed array elements are written from; a sink may recognise it by address.
pub(crate) static ZEROS: [u8; 64 * 1024] = [0; 64 * 1024];

/// Largest run of input bytes merged into one write.
const MAX_RUN: u64 = 8 << 20;

/// A visitor that writes what reaches it as HPROF, byte for byte, rewriting heap dump lengths to what it wrote.
pub struct HprofWriter<'a, W: Write> {
    out: W,
    /// The input the records come from, so unchanged bytes can be merged by offset.
    source: &'a [u8],
    id_size: u8,
    /// A run of input bytes not yet written: [start, end).
    run: (u64, u64),
    written: u64,
    /// Declared body length and bytes emitted so far, in the open heap dump segment.
    segment: Option<(u64, u32, u64)>,
}

impl<'a, W: Write> HprofWriter<'a, W> {
    /// A writer for records that come from `source` (the whole input dump).
    pub fn new(out: W, source: &'a [u8], id_size: u8) -> Self {
        HprofWriter {
            out,
            source,
            id_size,
            run: (0, 0),
            written: 0,
            segment: None,
        }
    }

    /// Bytes emitted so far.
    pub fn written(&self) -> u64 {
        self.written + (self.run.1 - self.run.0)
    }

    /// The sink, with everything given so far written to it.
    pub fn get_mut(&mut self) -> Result<&mut W> {
        self.flush_run()?;
        Ok(&mut self.out)
    }

    /// The writer, once every segment is closed.
    pub fn into_inner(mut self) -> Result<W> {
        self.flush_run()?;
        Ok(self.out)
    }

    fn flush_run(&mut self) -> Result<()> {
        let (start, end) = self.run;
        if end > start {
            self.out
                .write_all(&self.source[start as usize..end as usize])
                .map_err(FormatError::Write)?;
            self.written += end - start;
        }
        self.run = (end, end);
        Ok(())
    }

    /// Emits `bytes`, which sit at `offset` in the input if they are the input's own.
    fn emit_input(&mut self, bytes: &[u8], offset: u64) -> Result<()> {
        let off = offset as usize;
        let from_source = self
            .source
            .get(off..off + bytes.len())
            .is_some_and(|s| std::ptr::eq(s.as_ptr(), bytes.as_ptr()));
        if !from_source {
            return self.emit(bytes);
        }
        let len = bytes.len() as u64;
        if self.run.1 != offset || self.run.1 - self.run.0 + len > MAX_RUN {
            self.flush_run()?;
            self.run = (offset, offset);
        }
        self.run.1 += len;
        self.count(len);
        Ok(())
    }

    fn emit(&mut self, bytes: &[u8]) -> Result<()> {
        self.flush_run()?;
        self.out.write_all(bytes).map_err(FormatError::Write)?;
        self.written += bytes.len() as u64;
        self.count(bytes.len() as u64);
        Ok(())
    }

    fn emit_zeros(&mut self, mut n: u64) -> Result<()> {
        while n > 0 {
            let k = n.min(ZEROS.len() as u64) as usize;
            self.emit(&ZEROS[..k])?;
            n -= k as u64;
        }
        Ok(())
    }

    fn count(&mut self, len: u64) {
        if let Some((_, _, done)) = &mut self.segment {
            *done += len;
        }
    }
}

impl<W: Write> Visitor for HprofWriter<'_, W> {
    type Error = FormatError;

    fn header(&mut self, header: &Header<'_>) -> Result<()> {
        self.emit_input(header.raw, 0)
    }

    fn record(&mut self, record: &Record<'_>) -> Result<()> {
        self.emit_input(record.raw, record.offset)
    }

    fn heap_dump_begin(&mut self, segment: &Record<'_>, length: u32) -> Result<()> {
        let head = &segment.raw[..RECORD_HEADER_LEN];
        // The input's own header, unless the length changed (or a salvaged segment's
        // header still claims the length it had before the cut).
        if head[5..9] == length.to_be_bytes() {
            self.emit_input(&segment.raw[..RECORD_HEADER_LEN], segment.offset)?;
        } else {
            let mut head = [0u8; RECORD_HEADER_LEN];
            head.copy_from_slice(&segment.raw[..RECORD_HEADER_LEN]);
            head[5..9].copy_from_slice(&length.to_be_bytes());
            self.emit(&head)?;
        }
        self.segment = Some((segment.offset, length, 0));
        Ok(())
    }

    fn sub_record(&mut self, sub: &SubRecord<'_>) -> Result<()> {
        self.emit_input(sub.raw, sub.offset)
    }

    fn passed_over(&mut self, offset: u64, raw: &[u8]) -> Result<()> {
        self.emit_input(raw, offset)
    }

    fn rewritten(&mut self, sub: &SubRecord<'_>, rewrite: &Rewrite<'_>) -> Result<()> {
        let id_size = self.id_size;
        match (rewrite, &sub.kind) {
            (Rewrite::Ids(patches), _) => {
                let mut at = 0usize;
                let mut id = [0u8; 8];
                for &(pos, new_id) in patches.iter() {
                    let end = pos + id_size as usize;
                    if pos < at || end > sub.raw.len() {
                        return Err(FormatError::BadRewrite(format!(
                            "id patch at {pos} outside the sub-record at offset {}",
                            sub.offset
                        )));
                    }
                    self.emit_input(&sub.raw[at..pos], sub.offset + at as u64)?;
                    write_id(&mut id, new_id, id_size);
                    self.emit(&id[..id_size as usize])?;
                    at = end;
                }
                self.emit_input(&sub.raw[at..], sub.offset + at as u64)
            }
            (Rewrite::EmptyArray, Sub::PrimitiveArray(_)) => {
                let n = PrimitiveArray::header_len(id_size);
                let mut head = [0u8; 1 + 8 + 4 + 4 + 1];
                head[..n].copy_from_slice(&sub.raw[..n]);
                // The count sits before the type byte.
                head[n - 5..n - 1].copy_from_slice(&0u32.to_be_bytes());
                self.emit(&head[..n])
            }
            (Rewrite::ZeroedArray, Sub::PrimitiveArray(a)) => {
                let n = PrimitiveArray::header_len(id_size);
                self.emit_input(&sub.raw[..n], sub.offset)?;
                self.emit_zeros(a.data.len() as u64)
            }
            (Rewrite::Elements(bytes), Sub::PrimitiveArray(a)) if bytes.len() == a.data.len() => {
                let n = PrimitiveArray::header_len(id_size);
                self.emit_input(&sub.raw[..n], sub.offset)?;
                self.emit(bytes)
            }
            _ => Err(FormatError::BadRewrite(format!(
                "{rewrite:?} applies to primitive arrays, not to the sub-record at offset {}",
                sub.offset
            ))),
        }
    }

    fn heap_dump_end(&mut self, segment: &Record<'_>) -> Result<()> {
        if let Some((offset, declared, done)) = self.segment.take() {
            if declared as u64 != done {
                return Err(FormatError::LengthMismatch {
                    offset,
                    tag: Tag::record(segment.tag),
                    what: "rewritten heap dump segment",
                    declared: declared as u64,
                    actual: done,
                });
            }
        }
        Ok(())
    }

    fn end(&mut self) -> Result<()> {
        self.flush_run()?;
        self.out.flush().map_err(FormatError::Write)
    }
}
