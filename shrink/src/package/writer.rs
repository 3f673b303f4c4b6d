//! Writing a package: entries streamed in (the hprof as pass 3 writes it, deflated on
//! several cores), each carrying the dump's own timestamp, so the same input and options
//! give the same bytes. Entries use data descriptors, so nothing seeks back and the output
//! can be any `Write`.

use std::io::Write;

use rawzip::time::UtcDateTime;
use rawzip::{CompressionMethod, DataDescriptorOutput, ZipArchiveWriter};

use super::deflate::ParallelDeflate;
use super::manifest::{Manifest, EXTRA_INFO, RESULT_INFO};
use super::properties;
use crate::error::{Error, Result};

pub struct PackageWriter<W: Write> {
    archive: ZipArchiveWriter<W>,
    time: UtcDateTime,
    level: u32,
}

fn zip_err(e: rawzip::Error) -> Error {
    match e.into_kind() {
        // The output's own error, kept whole: it says which output failed and why.
        rawzip::ErrorKind::IO(io) => Error::Write(io),
        kind => Error::Zip(rawzip::Error::from(kind).to_string()),
    }
}

/// Counts and checksums what goes into a stored (level 0) entry.
struct Stored<W: Write> {
    out: W,
    crc: crc32fast::Hasher,
    len: u64,
}

impl<W: Write> Write for Stored<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.out.write(buf)?;
        self.crc.update(&buf[..n]);
        self.len += n as u64;
        Ok(n)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.out.flush()
    }
}

impl<W: Write> PackageWriter<W> {
    /// A package whose entries deflate at `level` (0 stores) and carry `timestamp_ms`.
    pub fn new(out: W, level: u32, timestamp_ms: u64) -> Result<Self> {
        if level > 9 {
            return Err(Error::Invalid(format!(
                "compression level {level} is not 0-9"
            )));
        }
        Ok(PackageWriter {
            archive: ZipArchiveWriter::new(out),
            time: UtcDateTime::from_unix((timestamp_ms / 1000) as i64),
            level,
        })
    }

    fn method(&self) -> CompressionMethod {
        if self.level == 0 {
            CompressionMethod::STORE
        } else {
            CompressionMethod::DEFLATE
        }
    }

    /// Adds an entry by streaming its content: `fill` writes it into the `Write` it is given,
    /// which deflates on `threads` cores. Returns what `fill` returns.
    pub fn add_stream<T>(
        &mut self,
        name: &str,
        threads: usize,
        fill: impl FnOnce(&mut dyn Write) -> Result<T>,
    ) -> Result<T> {
        let method = self.method();
        let level = self.level;
        let (mut entry, _config) = self
            .archive
            .new_file(name)
            .compression_method(method)
            .last_modified(self.time)
            .unix_permissions(0o644)
            .start()
            .map_err(zip_err)?;
        let (value, crc, len) = if level == 0 {
            let mut stored = Stored {
                out: &mut entry,
                crc: crc32fast::Hasher::new(),
                len: 0,
            };
            let value = fill(&mut stored)?;
            (value, stored.crc.finalize(), stored.len)
        } else {
            std::thread::scope(|scope| -> Result<(T, u32, u64)> {
                let mut deflate = ParallelDeflate::new(scope, &mut entry, level, threads)
                    .map_err(Error::Thread)?;
                let value = fill(&mut deflate)?;
                let (_, crc, len, _) = deflate.finish().map_err(Error::Write)?;
                Ok((value, crc, len))
            })?
        };
        entry
            .finish(DataDescriptorOutput::new(crc, len))
            .map_err(zip_err)?;
        Ok(value)
    }

    /// Adds a small entry (one worker is plenty).
    pub fn add_bytes(&mut self, name: &str, bytes: &[u8]) -> Result<()> {
        self.add_stream(name, 1, |w| w.write_all(bytes).map_err(Error::Write))
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
        self.archive.set_comment(comment.as_bytes().to_vec());
        self.archive.finish().map_err(zip_err)
    }
}
