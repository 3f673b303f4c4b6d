//! Zero-copy views of the file header and the top-level records.

use super::cursor::Cursor;
use super::error::{FormatError, Result, Truncation};
use super::heap::SubRecords;
use super::tags;
use super::tags::Tag;

/// Record header: u1 tag, u4 time offset, u4 body length.
pub const RECORD_HEADER_LEN: usize = 9;

/// How every dump starts, before its version (`1.0.x`) and NUL.
pub const MAGIC: &[u8; 13] = b"JAVA PROFILE ";

/// The header as read: `JAVA PROFILE 1.0.x\0`, u4 id size, u8 timestamp in ms.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header<'a> {
    /// The whole header, for byte-exact copies.
    pub raw: &'a [u8],
    /// `1.0.1`, `1.0.2` or `1.0.3`.
    pub version: &'a str,
    /// Identifier size, 4 or 8.
    pub id_size: u8,
    /// When the dump was written, milliseconds since the Unix epoch.
    pub timestamp_ms: u64,
}

impl<'a> Header<'a> {
    /// Reads the header at the start of `data`.
    pub fn parse(data: &'a [u8]) -> Result<Header<'a>> {
        if data.is_empty() {
            return Err(FormatError::NotHprof {
                reason: "the file is empty".into(),
            });
        }
        let probe = &data[..data.len().min(64)];
        if !probe.starts_with(MAGIC) && !MAGIC.starts_with(probe) {
            return Err(FormatError::NotHprof {
                reason: format!(
                    "it starts with {:?}, not \"JAVA PROFILE 1.0.x\"",
                    String::from_utf8_lossy(&probe[..probe.len().min(16)])
                ),
            });
        }
        let nul = match probe.iter().position(|&b| b == 0) {
            Some(nul) => nul,
            // The start of the magic, and then the file ends.
            None if data.len() < MAGIC.len() + 6 => {
                return Err(FormatError::Truncated {
                    offset: 0,
                    tag: Tag::HEADER,
                    what: "header",
                    needed: MAGIC.len() as u64 + 6,
                    available: data.len() as u64,
                    kind: Truncation::Contents,
                })
            }
            None => {
                return Err(FormatError::NotHprof {
                    reason: "no NUL-terminated \"JAVA PROFILE 1.0.x\" magic in the first 64 bytes"
                        .into(),
                })
            }
        };
        let version = std::str::from_utf8(&data[MAGIC.len()..nul]).unwrap_or("?");
        if !matches!(version, "1.0.1" | "1.0.2" | "1.0.3") {
            return Err(FormatError::UnsupportedVersion {
                version: version.to_string(),
            });
        }
        let mut c = Cursor::new(&data[nul + 1..], nul as u64 + 1, Tag::HEADER, "header");
        let id_offset = c.offset();
        let id_size = c.u4()?;
        if id_size != 4 && id_size != 8 {
            return Err(FormatError::UnsupportedIdSize {
                offset: id_offset,
                size: id_size,
            });
        }
        let timestamp_ms = c.u8()?;
        let len = nul + 1 + c.pos();
        Ok(Header {
            raw: &data[..len],
            version,
            id_size: id_size as u8,
            timestamp_ms,
        })
    }

    /// The header's length in bytes.
    pub fn len(&self) -> usize {
        self.raw.len()
    }

    /// Never true for a parsed header (there for clippy's `len_without_is_empty`).
    pub fn is_empty(&self) -> bool {
        self.raw.is_empty()
    }
}

/// One top-level record.
#[derive(Debug, Clone, Copy)]
pub struct Record<'a> {
    /// Offset of the tag byte in the file.
    pub offset: u64,
    /// The tag byte.
    pub tag: u8,
    /// Microseconds since the header's timestamp.
    pub time: u32,
    /// The body, after the 9-byte record header.
    pub body: &'a [u8],
    /// Header and body, exactly as in the file.
    pub raw: &'a [u8],
    /// The dump's identifier size, for reading the body.
    pub id_size: u8,
}

impl<'a> Record<'a> {
    /// Offset of the body in the file.
    pub fn body_offset(&self) -> u64 {
        self.offset + RECORD_HEADER_LEN as u64
    }

    /// The tag, to print with its name.
    pub fn tag(&self) -> Tag {
        Tag::record(self.tag)
    }

    /// HEAP_DUMP and HEAP_DUMP_SEGMENT hold sub-records.
    pub fn is_heap_dump(&self) -> bool {
        self.tag == tags::HEAP_DUMP || self.tag == tags::HEAP_DUMP_SEGMENT
    }

    /// The sub-records of a heap dump (segment) body.
    pub fn sub_records(&self) -> SubRecords<'a> {
        SubRecords::new(self.body, self.body_offset(), self.id_size)
    }

    fn cursor(&self, what: &'static str) -> Cursor<'a> {
        Cursor::new(self.body, self.body_offset(), self.tag(), what)
    }

    /// The STRING record view, or `None` for other tags.
    pub fn as_string(&self) -> Result<Option<StringRecord<'a>>> {
        if self.tag != tags::STRING {
            return Ok(None);
        }
        let mut c = self.cursor("STRING record");
        let id = c.id(self.id_size)?;
        let bytes = c.take(c.remaining() as u64)?;
        Ok(Some(StringRecord { id, bytes }))
    }

    /// The LOAD_CLASS record view, or `None` for other tags.
    pub fn as_load_class(&self) -> Result<Option<LoadClass>> {
        if self.tag != tags::LOAD_CLASS {
            return Ok(None);
        }
        let mut c = self.cursor("LOAD_CLASS record");
        let view = LoadClass {
            serial: c.u4()?,
            class_id: c.id(self.id_size)?,
            stack_serial: c.u4()?,
            name_id: c.id(self.id_size)?,
        };
        if c.remaining() != 0 {
            return Err(FormatError::LengthMismatch {
                offset: self.offset,
                tag: self.tag(),
                what: "LOAD_CLASS record",
                declared: self.body.len() as u64,
                actual: c.pos() as u64,
            });
        }
        Ok(Some(view))
    }
}

/// STRING: an id and Modified UTF-8 bytes, which are not always valid UTF-8; they are kept
/// as bytes and only decoded (lossily) for display.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StringRecord<'a> {
    /// The id other records name the string by.
    pub id: u64,
    /// The Modified UTF-8 bytes.
    pub bytes: &'a [u8],
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
/// LOAD_CLASS: a class's serial number, object id and name.
pub struct LoadClass {
    /// The class's serial number.
    pub serial: u32,
    /// The class object's id.
    pub class_id: u64,
    /// Serial number of the stack trace where it was loaded.
    pub stack_serial: u32,
    /// STRING id of the class's name.
    pub name_id: u64,
}

/// Iterates the top-level records after the header. Stops after the first error.
pub struct Records<'a> {
    data: &'a [u8],
    pos: usize,
    id_size: u8,
    failed: bool,
    /// A salvaged dump's last heap dump record: (its offset, the body length kept).
    cut: Option<(u64, u32)>,
}

impl<'a> Records<'a> {
    /// The records of `data` (the whole file) after `header`.
    pub fn new(data: &'a [u8], header: &Header<'_>) -> Self {
        Records {
            data,
            pos: header.len(),
            id_size: header.id_size,
            failed: false,
            cut: None,
        }
    }

    /// Ends the record at `offset` after `body_len` bytes of body (a salvaged dump).
    pub fn with_cut(mut self, cut: Option<(u64, u32)>) -> Self {
        self.cut = cut;
        self
    }

    /// The records from `offset` on (which must be where a record starts).
    pub fn at(data: &'a [u8], header: &Header<'_>, offset: u64) -> Self {
        Records {
            data,
            pos: (offset as usize).max(header.len()),
            id_size: header.id_size,
            failed: false,
            cut: None,
        }
    }

    /// Offset of the next record (the end of the last complete one).
    pub fn offset(&self) -> u64 {
        self.pos as u64
    }

    fn next_record(&mut self) -> Result<Record<'a>> {
        let start = self.pos;
        let rest = &self.data[start..];
        let tag = rest[0];
        // The file ending inside a record is a cut-off dump, not damage within a record:
        // say so, and name the record, not its body, as the place to look.
        let cut_off = |e: FormatError| match e {
            FormatError::Truncated {
                tag,
                what,
                needed,
                available,
                ..
            } => FormatError::Truncated {
                offset: start as u64,
                tag,
                what,
                needed,
                available,
                kind: Truncation::FileEnd,
            },
            other => other,
        };
        let mut c = Cursor::new(rest, start as u64, Tag::record(tag), "record header");
        let head = c.take(RECORD_HEADER_LEN as u64).map_err(cut_off)?;
        let time = u32::from_be_bytes([head[1], head[2], head[3], head[4]]);
        let mut len = u32::from_be_bytes([head[5], head[6], head[7], head[8]]);
        if let Some((at, kept)) = self.cut {
            if at == start as u64 {
                len = kept;
            }
        }
        let mut body_cursor = Cursor::new(
            &rest[RECORD_HEADER_LEN..],
            (start + RECORD_HEADER_LEN) as u64,
            Tag::record(tag),
            "record body",
        );
        let body = body_cursor.take(len as u64).map_err(cut_off)?;
        let end = start + RECORD_HEADER_LEN + body.len();
        self.pos = end;
        Ok(Record {
            offset: start as u64,
            tag,
            time,
            body,
            raw: &self.data[start..end],
            id_size: self.id_size,
        })
    }
}

impl<'a> Iterator for Records<'a> {
    type Item = Result<Record<'a>>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed || self.pos >= self.data.len() {
            return None;
        }
        let r = self.next_record();
        if r.is_err() {
            self.failed = true;
        }
        Some(r)
    }
}
