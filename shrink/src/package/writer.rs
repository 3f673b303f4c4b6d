//! Writing a package: entries streamed in (the hprof as pass 3 writes it, deflated on
//! several cores), each carrying the dump's own timestamp, so the same input and options
//! give the same bytes. Deflated entries end in a data descriptor; stored ones carry
//! their CRC and sizes in their local header, written over it once the data is out (see
//! [`Rewrite`]), since Java's `ZipInputStream` reads a stored entry only that way.

use std::fs::File;
use std::io::{self, Write};

use super::deflate::ParallelDeflate;
use super::manifest::{Manifest, EXTRA_INFO, RESULT_INFO};
use super::properties;
use super::records::{self, Entry, FLAG_DESCRIPTOR, LOCAL_CRC_AT, ZIP64_AT};
use crate::error::{Error, Result};

/// An output that can write again over bytes it wrote before: how a stored entry gets its
/// CRC and sizes into its local header once they are known, with no data descriptor
/// (which `java.util.zip.ZipInputStream` refuses on a stored entry).
pub trait Rewrite: Write {
    /// Writes `bytes` at `offset` from the start of the output (where the package
    /// begins), over bytes written before; anything buffered is written out first.
    fn rewrite_at(&mut self, offset: u64, bytes: &[u8]) -> io::Result<()>;
}

/// Writes at an offset of a file without moving its position.
pub fn rewrite_file(file: &File, offset: u64, bytes: &[u8]) -> io::Result<()> {
    #[cfg(unix)]
    {
        std::os::unix::fs::FileExt::write_all_at(file, bytes, offset)
    }
    #[cfg(not(unix))]
    {
        use std::io::{Seek, SeekFrom};
        let mut f = file;
        let end = f.stream_position()?;
        f.seek(SeekFrom::Start(offset))?;
        f.write_all(bytes)?;
        f.seek(SeekFrom::Start(end))?;
        Ok(())
    }
}

impl Rewrite for File {
    fn rewrite_at(&mut self, offset: u64, bytes: &[u8]) -> io::Result<()> {
        rewrite_file(self, offset, bytes)
    }
}

impl<W: Rewrite + ?Sized> Rewrite for &mut W {
    fn rewrite_at(&mut self, offset: u64, bytes: &[u8]) -> io::Result<()> {
        (**self).rewrite_at(offset, bytes)
    }
}

impl<W: Rewrite> Rewrite for io::BufWriter<W> {
    fn rewrite_at(&mut self, offset: u64, bytes: &[u8]) -> io::Result<()> {
        // Buffered bytes written later would land over the patch.
        self.flush()?;
        self.get_mut().rewrite_at(offset, bytes)
    }
}

/// Counts what passes, which gives each entry its offset.
struct Counting<W> {
    inner: W,
    count: u64,
}

impl<W: Write> Write for Counting<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.count += n as u64;
        Ok(n)
    }
    fn write_vectored(&mut self, bufs: &[io::IoSlice<'_>]) -> io::Result<usize> {
        let n = self.inner.write_vectored(bufs)?;
        self.count += n as u64;
        Ok(n)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// Writes a package: entries in order, then the central directory with the zip comment.
pub struct PackageWriter<W: Rewrite> {
    out: Counting<W>,
    dos: (u16, u16),
    level: u32,
    entries: Vec<Entry>,
}

/// Counts and checksums what goes into a stored (level 0) entry.
struct Stored<W: Write> {
    out: W,
    crc: crc32fast::Hasher,
    len: u64,
}

impl<W: Write> Write for Stored<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.out.write(buf)?;
        self.crc.update(&buf[..n]);
        self.len += n as u64;
        Ok(n)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

impl<W: Rewrite> PackageWriter<W> {
    /// A package whose entries deflate at `level` (0 stores) and carry `timestamp_ms`,
    /// written from the start of `out`.
    pub fn new(out: W, level: u32, timestamp_ms: u64) -> Result<Self> {
        if level > 9 {
            return Err(Error::Invalid(format!(
                "compression level {level} is not 0-9"
            )));
        }
        Ok(PackageWriter {
            out: Counting {
                inner: out,
                count: 0,
            },
            dos: records::dos_time((timestamp_ms / 1000) as i64),
            level,
            entries: Vec::new(),
        })
    }

    fn start(&mut self, name: &str, zip64_local: bool) -> Result<Entry> {
        if name.len() > u16::MAX as usize {
            return Err(Error::Invalid(format!(
                "entry name of {} bytes: at most 65535",
                name.len()
            )));
        }
        let stored = self.level == 0;
        let entry = Entry {
            name: name.to_string(),
            method: if stored { 0 } else { 8 },
            // Deflated entries stream their CRC and sizes after the data, which every
            // reader takes for deflate; stored ones get them patched into the header.
            flags: if stored { 0 } else { FLAG_DESCRIPTOR },
            crc: 0,
            compressed: 0,
            size: 0,
            local_offset: self.out.count,
            dos: self.dos,
            zip64_local,
        };
        self.out
            .write_all(&records::local_header(&entry))
            .map_err(Error::Write)?;
        Ok(entry)
    }

    /// Adds an entry by streaming its content: `fill` writes it into the `Write` it is given,
    /// which deflates on `threads` cores. `max_len` bounds what `fill` writes (it decides
    /// whether a stored entry's header makes room for sizes past 4 GiB). Returns what
    /// `fill` returns.
    pub fn add_stream<T>(
        &mut self,
        name: &str,
        threads: usize,
        max_len: u64,
        fill: impl FnOnce(&mut dyn Write) -> Result<T>,
    ) -> Result<T> {
        let level = self.level;
        // A stored entry's sizes are patched into its local header, which must have room
        // for 8-byte ones if they may be needed; a deflated entry's follow in its data
        // descriptor, sized by what they turn out to be.
        let mut entry = self.start(name, level == 0 && max_len >= ZIP64_AT)?;
        let data_at = self.out.count;
        let (value, crc, len) = if level == 0 {
            let mut stored = Stored {
                out: &mut self.out,
                crc: crc32fast::Hasher::new(),
                len: 0,
            };
            let value = fill(&mut stored)?;
            (value, stored.crc.finalize(), stored.len)
        } else {
            let out = &mut self.out;
            std::thread::scope(|scope| -> Result<(T, u32, u64)> {
                let mut deflate =
                    ParallelDeflate::new(scope, out, level, threads).map_err(Error::Thread)?;
                let value = fill(&mut deflate)?;
                let (_, crc, len, _) = deflate.finish().map_err(Error::Write)?;
                Ok((value, crc, len))
            })?
        };
        entry.crc = crc;
        entry.size = len;
        entry.compressed = self.out.count - data_at;
        if level == 0 && !entry.zip64_local && entry.size >= ZIP64_AT {
            return Err(Error::Zip(format!(
                "entry {name} came to {} bytes, past the {max_len} it was said to hold at most",
                entry.size
            )));
        }
        if level == 0 {
            self.patch_sizes(&entry).map_err(Error::Write)?;
        } else {
            self.out
                .write_all(&records::descriptor(&entry))
                .map_err(Error::Write)?;
        }
        self.entries.push(entry);
        Ok(value)
    }

    /// Writes a finished stored entry's CRC and sizes into its local header.
    fn patch_sizes(&mut self, e: &Entry) -> io::Result<()> {
        let at = e.local_offset;
        let out = &mut self.out.inner;
        out.rewrite_at(at + LOCAL_CRC_AT, &e.crc.to_le_bytes())?;
        if e.zip64_local {
            let mut sizes = [0u8; 16];
            sizes[..8].copy_from_slice(&e.size.to_le_bytes());
            sizes[8..].copy_from_slice(&e.compressed.to_le_bytes());
            out.rewrite_at(at + records::local_zip64_sizes_at(e.name.len()), &sizes)
        } else {
            let mut sizes = [0u8; 8];
            sizes[..4].copy_from_slice(&(e.compressed as u32).to_le_bytes());
            sizes[4..].copy_from_slice(&(e.size as u32).to_le_bytes());
            out.rewrite_at(at + LOCAL_CRC_AT + 4, &sizes)
        }
    }

    /// Adds a small entry (one worker is plenty).
    pub fn add_bytes(&mut self, name: &str, bytes: &[u8]) -> Result<()> {
        let len = bytes.len() as u64;
        self.add_stream(name, 1, len, |w| w.write_all(bytes).map_err(Error::Write))
    }

    /// Writes `result.info`.
    pub fn add_manifest(&mut self, manifest: &Manifest) -> Result<()> {
        self.add_bytes(RESULT_INFO, manifest.render().as_bytes())
    }

    /// Writes `extra.info` when there are extra properties.
    pub fn add_extra(&mut self, extra: &[(String, String)]) -> Result<()> {
        if extra.is_empty() {
            return Ok(());
        }
        let pairs: Vec<(&str, &str)> = extra
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        self.add_bytes(EXTRA_INFO, properties::render(None, &pairs).as_bytes())
    }

    /// Writes the central directory with `comment`; returns the output.
    pub fn finish(mut self, comment: &str) -> Result<W> {
        if comment.len() > u16::MAX as usize {
            return Err(Error::Invalid("zip comment over 65535 bytes".into()));
        }
        let dir_offset = self.out.count;
        for e in &self.entries {
            self.out
                .write_all(&records::central(e))
                .map_err(Error::Write)?;
        }
        let dir_size = self.out.count - dir_offset;
        let end = records::end(
            self.entries.len() as u64,
            dir_offset,
            dir_size,
            comment.as_bytes(),
        );
        self.out.write_all(&end).map_err(Error::Write)?;
        Ok(self.out.inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    #[test]
    fn a_stored_entry_that_may_pass_4_gib_has_zip64_sizes_every_reader_takes() {
        let mut f = tempfile::NamedTempFile::new().unwrap();
        let data: Vec<u8> = (0..70_000u32).map(|i| (i % 251) as u8).collect();
        let mut w = PackageWriter::new(f.as_file_mut(), 0, 1_500_000_000_000).unwrap();
        w.add_stream("big.hprof", 1, 5 << 30, |out| {
            out.write_all(&data).map_err(Error::Write)
        })
        .unwrap();
        w.add_bytes("after", b"x").unwrap();
        w.finish("").unwrap();
        let bytes = std::fs::read(f.path()).unwrap();
        // The local header: sizes 0xFFFFFFFF, the zip64 field holding the real ones.
        assert_eq!(&bytes[18..26], &[0xFF; 8]);
        let at = records::local_zip64_sizes_at("big.hprof".len()) as usize;
        assert_eq!(&bytes[at..at + 8], &(data.len() as u64).to_le_bytes());
        assert_eq!(&bytes[at + 8..at + 16], &(data.len() as u64).to_le_bytes());
        // A second zip implementation reads both entries back.
        let mut z = zip::ZipArchive::new(std::fs::File::open(f.path()).unwrap()).unwrap();
        let mut back = Vec::new();
        z.by_name("big.hprof")
            .unwrap()
            .read_to_end(&mut back)
            .unwrap();
        assert!(back == data);
        let mut after = Vec::new();
        z.by_name("after").unwrap().read_to_end(&mut after).unwrap();
        assert_eq!(after, b"x");
    }
}
