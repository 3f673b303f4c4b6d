//! The reader: a dump in memory (usually a memory-mapped file) walked record by record.

use std::fs::File;
use std::ops::Range;
use std::path::{Path, PathBuf};

use memmap2::Mmap;

use super::mapguard::Guard;

use super::bytes::id_at;
use super::error::{FormatError, Result, Truncation};
use super::heap::{
    parse_checked, parse_common, quick_len, Instance, ObjectArray, SubRecord, SubRecords,
    OBJECT_ID_AT,
};
use super::record::{Header, Record, Records};
use super::tags;
use super::tick::Tick;
use super::visitor::Visitor;

/// A ticker that can walk with visitor `V`: its error is what the walk fails with, so the
/// dump's errors and `V`'s must convert into it. Every such ticker is one.
pub trait TickFor<V: Visitor + ?Sized>: Tick<Error: From<FormatError> + From<V::Error>> {}

impl<V, T> TickFor<V> for T
where
    V: Visitor + ?Sized,
    T: Tick<Error: From<FormatError> + From<V::Error>> + ?Sized,
{
}

/// A parsed header over the bytes of a whole dump. Cheap to copy; walks borrow the bytes.
#[derive(Debug, Clone, Copy)]
pub struct Hprof<'a> {
    data: &'a [u8],
    header: Header<'a>,
    /// For a salvaged dump: the last heap dump record and the body length kept of it.
    cut: Option<(u64, u32)>,
}

/// What salvaging a cut-off dump kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Salvage {
    /// Where the damage starts: everything before is kept.
    pub damaged_at: u64,
    /// The file's length.
    pub file_bytes: u64,
}

impl<'a> Hprof<'a> {
    /// A dump in `data` (the whole file): checks its header.
    pub fn new(data: &'a [u8]) -> Result<Self> {
        let header = Header::parse(data)?;
        Ok(Hprof {
            data,
            header,
            cut: None,
        })
    }

    /// For a dump cut off while being written (the process died, the disk filled): the
    /// part that parses, up to the last complete record, and of a heap dump segment cut in
    /// the middle, its complete sub-records (the segment's length is rewritten on output).
    /// `None` when nothing is missing. Damage other than a cut-off end is still an error.
    pub fn salvage(data: &'a [u8]) -> Result<(Self, Option<Salvage>)> {
        let whole = Hprof::new(data)?;
        let mut records = whole.records();
        for r in &mut records {
            let (start, cut) = match r {
                Ok(_) => continue,
                Err(
                    e @ FormatError::Truncated {
                        offset,
                        kind: Truncation::FileEnd,
                        ..
                    },
                ) => (offset as usize, e),
                Err(e) => return Err(e),
            };
            // A length that runs past the end of a dump that goes on being a dump (it ends
            // with HEAP_DUMP_END) is damage inside, not a cut-off end: it stays an error.
            if ends_complete(data) {
                return Err(cut);
            }
            let salvage = |end: usize| Salvage {
                damaged_at: end as u64,
                file_bytes: data.len() as u64,
            };
            let head_end = start + super::record::RECORD_HEADER_LEN;
            let tag = data[start];
            let is_heap = tag == super::tags::HEAP_DUMP || tag == super::tags::HEAP_DUMP_SEGMENT;
            if !is_heap || head_end > data.len() {
                let hprof = Hprof {
                    data: &data[..start],
                    ..whole
                };
                return Ok((hprof, Some(salvage(start))));
            }
            // Keep the sub-records that are whole.
            let body = &data[head_end..];
            let mut subs = SubRecords::new(body, head_end as u64, whole.id_size());
            let mut kept = 0usize;
            while let Some(Ok(sub)) = subs.next() {
                kept = (sub.offset - head_end as u64) as usize + sub.raw.len();
            }
            let end = head_end + kept;
            // Whole records from the end of the last whole sub-record to the end of the
            // file: the segment's length was wrong, the dump itself is all there.
            if records_to_the_end(data, end) {
                return Err(cut);
            }
            let hprof = Hprof {
                data: &data[..end],
                cut: Some((start as u64, kept as u32)),
                ..whole
            };
            return Ok((hprof, Some(salvage(end))));
        }
        Ok((whole, None))
    }

    /// The header.
    pub fn header(&self) -> &Header<'a> {
        &self.header
    }

    /// The identifier size, 4 or 8.
    pub fn id_size(&self) -> u8 {
        self.header.id_size
    }

    /// The whole file.
    pub fn data(&self) -> &'a [u8] {
        self.data
    }

    /// The file's size.
    pub fn len(&self) -> u64 {
        self.data.len() as u64
    }

    /// Never true for a dump with a header.
    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    /// The top-level records, in file order.
    pub fn records(&self) -> Records<'a> {
        Records::new(self.data, &self.header).with_cut(self.cut)
    }

    /// Walks the whole dump, calling `visitor` for each part in file order and `ticker` as
    /// it goes. Fails with the ticker's error type, which the dump's and the visitor's
    /// errors convert into.
    pub fn accept<V, T>(&self, visitor: &mut V, ticker: &mut T) -> Result<(), T::Error>
    where
        V: Visitor + ?Sized,
        T: TickFor<V> + ?Sized,
    {
        self.accept_range(0..self.len(), visitor, ticker)
    }

    /// Walks the records that start in `range` (a range from [`Hprof::split`]): the header
    /// too if the range is the first, and `end` if it reaches the end of the file.
    pub fn accept_range<V, T>(
        &self,
        range: Range<u64>,
        visitor: &mut V,
        ticker: &mut T,
    ) -> Result<(), T::Error>
    where
        V: Visitor + ?Sized,
        T: TickFor<V> + ?Sized,
    {
        // Only the first run: a run may also start at the first record, right after it.
        if range.start == 0 {
            visitor.header(&self.header)?;
        }
        for record in Records::at(self.data, &self.header, range.start).with_cut(self.cut) {
            let record = record?;
            if record.offset >= range.end {
                break;
            }
            ticker.tick(record.offset)?;
            if record.is_heap_dump() {
                visit_heap_dump(&record, visitor, ticker)?;
            } else {
                visitor.record(&record)?;
            }
            if visitor.is_done() {
                return Ok(());
            }
        }
        ticker.finish_at(range.end.min(self.len()))?;
        if range.end >= self.len() {
            visitor.end()?;
        }
        Ok(())
    }

    /// Where each heap dump of the file is: the bytes from its first heap record to the end
    /// of its last. One file can hold several dumps one after another (the old
    /// `-agentlib:hprof` wrote them so): see [`DumpCounter`] for where one ends.
    pub fn heap_dumps(&self) -> Result<Vec<Range<u64>>> {
        let mut dumps = DumpCounter::default();
        for record in Records::at(self.data, &self.header, 0).with_cut(self.cut) {
            dumps.record(&record?);
        }
        Ok(dumps.finish())
    }

    /// Cuts the records into about `parts` runs of similar size, for walks on several
    /// threads; a run boundary is always where a record starts.
    pub fn split(&self, parts: usize) -> Result<Vec<Range<u64>>> {
        let len = self.len();
        let parts = parts.max(1) as u64;
        let mut out = Vec::new();
        let mut start = 0u64;
        for record in self.records() {
            let record = record?;
            let k = out.len() as u64 + 1;
            if k < parts && record.offset >= len / parts * k && record.offset > start {
                out.push(start..record.offset);
                start = record.offset;
            }
        }
        out.push(start..len);
        Ok(out)
    }
}

fn visit_heap_dump<V, T>(
    record: &Record<'_>,
    visitor: &mut V,
    ticker: &mut T,
) -> Result<(), T::Error>
where
    V: Visitor + ?Sized,
    T: TickFor<V> + ?Sized,
{
    visitor.heap_dump_begin(record, record.body.len() as u32)?;
    let body = record.body;
    let base = record.body_offset();
    let id_size = record.id_size;
    let mut interest = visitor.interest();
    // Sub-records the visitor has no interest in are stepped over by their length alone
    // and handed on as runs of raw bytes.
    let mut skipped_from: Option<usize> = None;
    let mut pos = 0usize;
    while pos < body.len() {
        let b = &body[pos..];
        let offset = base + pos as u64;
        ticker.tick(offset)?;
        let wanted = interest.wants(b[0]) && wants_object(visitor, b, id_size);
        if !wanted {
            if let Some(len) = quick_len(b, id_size) {
                skipped_from.get_or_insert(pos);
                pos += len;
                continue;
            }
        }
        // Wanted, or one that needs the checked parse (class dumps, damage).
        let (kind, len) = match parse_common(b, id_size) {
            Some(parsed) => parsed,
            None => parse_checked(b, offset, id_size)?,
        };
        if !wanted {
            skipped_from.get_or_insert(pos);
            pos += len;
            continue;
        }
        if let Some(from) = skipped_from.take() {
            visitor.passed_over(base + from as u64, &body[from..pos])?;
        }
        let sub = SubRecord {
            offset,
            raw: &b[..len],
            kind,
        };
        visitor.sub_record(&sub)?;
        if visitor.is_done() {
            return Ok(());
        }
        // What a visitor looks for can change with what it has seen.
        interest = visitor.interest();
        pos += len;
    }
    if let Some(from) = skipped_from {
        visitor.passed_over(base + from as u64, &body[from..])?;
    }
    Ok(visitor.heap_dump_end(record)?)
}

/// True when the file's last record is a whole HEAP_DUMP_END (what HotSpot and ART write
/// last): a dump written to its end.
fn ends_complete(data: &[u8]) -> bool {
    let n = super::record::RECORD_HEADER_LEN;
    data.len() >= n
        && data[data.len() - n] == tags::HEAP_DUMP_END
        && data[data.len() - 4..] == [0, 0, 0, 0]
}

/// True when the bytes from `from` are one or more whole top-level records of known tags
/// that end exactly at the end of the file.
fn records_to_the_end(data: &[u8], from: usize) -> bool {
    let n = super::record::RECORD_HEADER_LEN;
    let mut pos = from;
    let mut count = 0;
    while pos < data.len() {
        if pos + n > data.len() || !tags::is_record_tag(data[pos]) {
            return false;
        }
        let len = u32::from_be_bytes([data[pos + 5], data[pos + 6], data[pos + 7], data[pos + 8]]);
        pos += n + len as usize;
        count += 1;
    }
    pos == data.len() && count > 0
}

/// Opens `path` for reading if it is a regular file: a FIFO, a device or a directory is
/// refused before anything is read, with an error that says which (opened without
/// blocking, so a FIFO nobody writes to cannot hang us).
pub fn open_regular(path: &Path) -> std::io::Result<File> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NONBLOCK);
    }
    let file = options.open(path)?;
    let kind = file.metadata()?.file_type();
    if kind.is_file() {
        return Ok(file);
    }
    Err(std::io::Error::other(if kind.is_dir() {
        "is a directory, not a heap dump or package".to_string()
    } else {
        format!("not a regular file ({})", describe_type(&kind))
    }))
}

/// What kind of file a non-regular one is, for the error.
fn describe_type(kind: &std::fs::FileType) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if kind.is_fifo() {
            return "a FIFO";
        }
        if kind.is_char_device() {
            return "a character device";
        }
        if kind.is_block_device() {
            return "a block device";
        }
        if kind.is_socket() {
            return "a socket";
        }
    }
    let _ = kind;
    "not a file"
}

/// Asks the visitor about an instance or array from its header (see
/// [`Visitor::wants_object`]); a header cut short is left to the checked parse.
#[inline(always)]
fn wants_object<V: Visitor + ?Sized>(visitor: &V, b: &[u8], id_size: u8) -> bool {
    let class_id = match b[0] {
        tags::INSTANCE_DUMP => id_at(b, Instance::class_id_at(id_size), id_size),
        tags::OBJECT_ARRAY_DUMP => id_at(b, ObjectArray::class_id_at(id_size), id_size),
        tags::PRIMITIVE_ARRAY_DUMP => Some(0),
        _ => return true,
    };
    match (id_at(b, OBJECT_ID_AT, id_size), class_id) {
        (Some(id), Some(class_id)) => visitor.wants_object(b[0], id, class_id),
        _ => true,
    }
}

/// A dump file mapped into memory, read-only. The file is the store: passes keep ids and
/// offsets, never array contents.
///
/// Another program may truncate the file while it is mapped (an app dumping again to the
/// same path, `cp` over it); reading past its new end would raise SIGBUS. The mapping is
/// guarded (see `mapguard`): such pages read as zeros instead, and
/// [`check_intact`](Self::check_intact) says the file changed, which callers ask before trusting a result.
pub struct MappedFile {
    path: PathBuf,
    // Dropped before the mapping it guards.
    guard: Option<Guard>,
    map: Option<Mmap>,
    file: File,
    /// Who the file was when it was mapped.
    seen: Stamp,
}

/// What changes when another program writes a file: its size, modification and change
/// times (a file truncated and written again to the same size still moves them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    len: u64,
    modified: Option<std::time::SystemTime>,
    #[cfg(unix)]
    changed: (i64, i64),
}

impl Stamp {
    fn of(meta: &std::fs::Metadata) -> Stamp {
        #[cfg(unix)]
        use std::os::unix::fs::MetadataExt;
        Stamp {
            len: meta.len(),
            modified: meta.modified().ok(),
            #[cfg(unix)]
            changed: (meta.ctime(), meta.ctime_nsec()),
        }
    }
}

impl MappedFile {
    /// Opens and maps `path`, which must be a regular file (see [`open_regular`]).
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref().to_path_buf();
        let file = open_regular(&path).map_err(|e| FormatError::io(&path, e))?;
        Self::from_file(&file, path)
    }

    /// Maps an open file; `path` names it in errors.
    pub fn from_file(file: &File, path: PathBuf) -> Result<Self> {
        // Kept to see the file's size later (a second handle, so the caller keeps its own).
        let file = file.try_clone().map_err(|e| FormatError::io(&path, e))?;
        let meta = file.metadata().map_err(|e| FormatError::io(&path, e))?;
        let seen = Stamp::of(&meta);
        if meta.len() == 0 {
            // mmap refuses zero-length files; an empty slice reads as "empty file" later.
            return Ok(MappedFile {
                path,
                guard: None,
                map: None,
                file,
                seen,
            });
        }
        // SAFETY: the map is read-only and private to this process. A truncation by another
        // process while we read is caught by the guard below (no SIGBUS reaches anyone).
        let map = unsafe { memmap2::MmapOptions::new().populate().map(&file) }
            .map_err(|e| FormatError::io(&path, e))?;
        #[cfg(unix)]
        {
            // Each pass reads front to back; the hint doubles readahead. Failure is harmless.
            let _ = map.advise(memmap2::Advice::Sequential);
        }
        Ok(MappedFile {
            path,
            guard: Some(Guard::new(&map)),
            map: Some(map),
            file,
            seen,
        })
    }

    /// An error when the file changed while it was mapped: another program wrote to it
    /// (pages it truncated read as zeros, pages it rewrote read its new bytes), or the
    /// storage under it failed. Nothing read from it can then be trusted; callers ask
    /// before they commit a result.
    pub fn check_intact(&self) -> Result<()> {
        let damaged = self.guard.as_ref().is_some_and(Guard::damaged);
        let now = self.file.metadata().map(|m| Stamp::of(&m));
        let why = match now {
            Ok(now) if now.len < self.seen.len => Some(format!(
                "the file shrank from {} to {} bytes while it was read: another program rewrote it",
                self.seen.len, now.len
            )),
            Ok(now) if now != self.seen => {
                Some("the file changed while it was read: another program wrote to it".into())
            }
            _ if damaged => Some(
                "part of the file could not be read while it was mapped (it changed, or the storage failed)"
                    .into(),
            ),
            _ => None,
        };
        match why {
            Some(why) => Err(FormatError::io(
                &self.path,
                std::io::Error::other(format!("{why}; nothing read from it is kept")),
            )),
            None => Ok(()),
        }
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The mapped bytes.
    pub fn bytes(&self) -> &[u8] {
        self.map.as_deref().unwrap_or(&[])
    }

    /// The parsed dump over the mapped bytes.
    pub fn hprof(&self) -> Result<Hprof<'_>> {
        Hprof::new(self.bytes())
    }
}

/// Tells the heap dumps of a file apart, record by record, as Eclipse MAT does: a
/// HEAP_DUMP record ends a dump (with the HEAP_DUMP_SEGMENTs before it, if any), and so
/// does HEAP_DUMP_END after segments; segments the file ends without an end record are a
/// dump too (a dump cut short). An end record with no segments before it ends nothing.
#[derive(Debug, Default, Clone)]
pub struct DumpCounter {
    done: Vec<Range<u64>>,
    /// The dump being read: from its first heap record to the end of its last one.
    open: Option<Range<u64>>,
}

impl DumpCounter {
    /// Takes the next top-level record.
    pub fn record(&mut self, record: &Record<'_>) {
        let end = record.body_offset() + record.body.len() as u64;
        match record.tag {
            tags::HEAP_DUMP | tags::HEAP_DUMP_SEGMENT => {
                let dump = self.open.get_or_insert(record.offset..end);
                dump.end = end;
                if record.tag == tags::HEAP_DUMP {
                    self.done.extend(self.open.take());
                }
            }
            tags::HEAP_DUMP_END => {
                if let Some(mut dump) = self.open.take() {
                    dump.end = end;
                    self.done.push(dump);
                }
            }
            _ => {}
        }
    }

    /// Dumps ended so far.
    pub fn count(&self) -> usize {
        self.done.len() + self.open.is_some() as usize
    }

    /// Every dump, in file order.
    pub fn finish(mut self) -> Vec<Range<u64>> {
        self.done.extend(self.open.take());
        self.done
    }
}

#[cfg(test)]
mod tests {
    use crate::hprof::{tags, Hprof};

    /// A dump with 4-byte ids whose records are `tags`, each with an empty body (a heap
    /// record with no sub-records).
    fn dump_of(tags: &[u8]) -> Vec<u8> {
        let mut d = b"JAVA PROFILE 1.0.2\0".to_vec();
        d.extend_from_slice(&4u32.to_be_bytes());
        d.extend_from_slice(&0u64.to_be_bytes());
        for &tag in tags {
            d.push(tag);
            d.extend_from_slice(&[0; 8]);
        }
        d
    }

    /// Each dump's records, by their place among `tags`.
    fn dumps(tags: &[u8]) -> Vec<Vec<usize>> {
        let d = dump_of(tags);
        let h = Hprof::new(&d).unwrap();
        let at = |i: usize| (31 + 9 * i) as u64;
        h.heap_dumps()
            .unwrap()
            .into_iter()
            .map(|r| (0..tags.len()).filter(|&i| r.contains(&at(i))).collect())
            .collect()
    }

    #[test]
    fn heap_dumps_end_where_eclipse_mat_ends_them() {
        const STRING: u8 = tags::STRING;
        const DUMP: u8 = tags::HEAP_DUMP;
        const SEG: u8 = tags::HEAP_DUMP_SEGMENT;
        const END: u8 = tags::HEAP_DUMP_END;
        // One HotSpot or ART dump: segments, then the end record.
        assert_eq!(dumps(&[STRING, SEG, SEG, END]), vec![vec![1, 2, 3]]);
        // The old hprof agent: two HEAP_DUMP records, strings between them.
        assert_eq!(dumps(&[DUMP, STRING, DUMP]), vec![vec![0], vec![2]]);
        // Two segmented dumps.
        assert_eq!(
            dumps(&[SEG, END, STRING, SEG, SEG, END]),
            vec![vec![0, 1], vec![3, 4, 5]]
        );
        // Segments the file ends without an end record (cut short) are a dump; an end
        // record after nothing ends nothing.
        assert_eq!(dumps(&[END, SEG, SEG]), vec![vec![1, 2]]);
        // Segments then a HEAP_DUMP: one dump, as MAT counts them.
        assert_eq!(dumps(&[SEG, DUMP, END]), vec![vec![0, 1]]);
        // No heap at all.
        assert_eq!(dumps(&[STRING]), Vec::<Vec<usize>>::new());
    }
}
