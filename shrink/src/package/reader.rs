//! Reading a package: its entries, `result.info`, `extra.info`, the zip comment and the
//! hprof entry, as a stream (decompressed, its size and CRC-32 checked as it is read) or,
//! when stored, as the mapped bytes of the zip itself. The same reader serves the verifier,
//! the upload (which only wants the manifest) and the batch (which re-shrinks a package), so
//! one set of caps guards them all against manifests that are not ours.

use std::fs::File;
use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};

use rawzip::{CompressionMethod, FileReader, ZipArchive, ZipArchiveEntryWayfinder};

use super::comment::{self, ToolComment};
use super::manifest::{EXTRA_INFO, RESULT_INFO};
use super::properties;
use crate::hprof::MappedFile;

/// `result.info` is a few hundred bytes; anything past this is not one of ours.
pub const MAX_RESULT_INFO: u64 = 64 * 1024;
/// `extra.info` holds what the caller adds, still small.
pub const MAX_EXTRA_INFO: u64 = 1 << 20;

/// Why a file cannot be read as a package. The messages name the entry, not the file:
/// callers add the path where they need it.
#[derive(Debug, thiserror::Error)]
pub enum PackageError {
    /// The file could not be read.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// What the system said.
        #[source]
        source: std::io::Error,
    },
    /// Not a zip file (rawzip's reason).
    #[error("not a zip: {0}")]
    NotZip(String),
    /// No entry of this name.
    #[error("no {0} entry")]
    Missing(String),
    /// An entry larger than what is read of it at most.
    #[error("{name} is {size} bytes, over the limit of {cap}")]
    TooLarge {
        /// The entry.
        name: String,
        /// Its size, as the zip declares it.
        size: u64,
        /// The limit.
        cap: u64,
    },
    /// Two entries with one name: readers differ on which one counts (Java's
    /// `ZipInputStream` takes the first, a central-directory reader often the last).
    #[error("the zip holds more than one entry named {0:?}")]
    Duplicate(String),
    /// A properties entry that is not UTF-8 text.
    #[error("{0} is not UTF-8")]
    NotText(String),
    /// An entry compressed with a method other than stored or deflated.
    #[error("{name} uses compression method {method}, which is not stored or deflated")]
    Method {
        /// The entry.
        name: String,
        /// The method's name or number.
        method: String,
    },
    /// A damaged entry: it does not decompress, or its size or CRC-32 is not what the zip
    /// directory says.
    #[error("{name} does not decompress: {reason}")]
    Damaged {
        /// The entry.
        name: String,
        /// What is wrong.
        reason: String,
    },
}

/// One entry as the central directory describes it.
#[derive(Debug, Clone)]
struct Entry {
    name: String,
    method: CompressionMethod,
    crc: u32,
    size: u64,
    wayfinder: ZipArchiveEntryWayfinder,
}

/// An open package.
pub struct PackageReader {
    path: PathBuf,
    /// A second handle on the zip, to map a stored entry.
    file: File,
    archive: ZipArchive<FileReader>,
    entries: Vec<Entry>,
    comment: Vec<u8>,
}

impl PackageReader {
    /// Opens the zip at `path` and reads its directory and comment.
    pub fn open(path: &Path) -> Result<PackageReader, PackageError> {
        let io = |source| PackageError::Io {
            path: path.to_path_buf(),
            source,
        };
        let not_zip = |e: rawzip::Error| PackageError::NotZip(e.to_string());
        let file = crate::hprof::open_regular(path).map_err(io)?;
        let mapper = file.try_clone().map_err(io)?;
        let mut buf = vec![0u8; rawzip::RECOMMENDED_BUFFER_SIZE];
        let archive = ZipArchive::from_file(file, &mut buf).map_err(not_zip)?;
        let mut entries: Vec<Entry> = Vec::new();
        let mut seen = std::collections::HashSet::new();
        let mut iter = archive.entries(&mut buf);
        while let Some(e) = iter.next_entry().map_err(not_zip)? {
            let name = String::from_utf8_lossy(e.file_path().as_ref()).into_owned();
            if !seen.insert(name.clone()) {
                return Err(PackageError::Duplicate(name));
            }
            entries.push(Entry {
                name,
                method: e.compression_method(),
                crc: e.crc32(),
                size: e.uncompressed_size_hint(),
                wayfinder: e.wayfinder(),
            });
        }
        let mut comment = Vec::new();
        archive
            .comment()
            .read_to_end(&mut comment)
            .map_err(|e| PackageError::NotZip(e.to_string()))?;
        Ok(PackageReader {
            path: path.to_path_buf(),
            file: mapper,
            archive,
            entries,
            comment,
        })
    }

    /// The entry names, in directory order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.entries.iter().map(|e| e.name.as_str())
    }

    /// Whether the zip has an entry `name`.
    pub fn contains(&self, name: &str) -> bool {
        self.entry(name).is_some()
    }

    fn entry(&self, name: &str) -> Option<&Entry> {
        self.entries.iter().find(|e| e.name == name)
    }

    /// The uncompressed size the directory declares for `name`.
    pub fn declared_size(&self, name: &str) -> Option<u64> {
        self.entry(name).map(|e| e.size)
    }

    /// What the zip comment says, when hprof-shrink wrote it.
    pub fn tool_comment(&self) -> Option<ToolComment> {
        comment::parse(&self.comment)
    }

    /// The `result.info` properties, in file order.
    pub fn manifest(&self) -> Result<Vec<(String, String)>, PackageError> {
        self.properties(RESULT_INFO, MAX_RESULT_INFO)?
            .ok_or_else(|| PackageError::Missing(RESULT_INFO.into()))
    }

    /// The `extra.info` properties, in file order; none when the package has no such entry.
    pub fn extra(&self) -> Result<Vec<(String, String)>, PackageError> {
        Ok(self
            .properties(EXTRA_INFO, MAX_EXTRA_INFO)?
            .unwrap_or_default())
    }

    fn properties(
        &self,
        name: &str,
        cap: u64,
    ) -> Result<Option<Vec<(String, String)>>, PackageError> {
        let Some(e) = self.entry(name) else {
            return Ok(None);
        };
        if e.size > cap {
            return Err(PackageError::TooLarge {
                name: name.into(),
                size: e.size,
                cap,
            });
        }
        let mut text = Vec::new();
        self.open_entry(e)?
            .take(cap)
            .read_to_end(&mut text)
            .map_err(|err| damaged(name, err))?;
        let text = String::from_utf8(text).map_err(|_| PackageError::NotText(name.into()))?;
        Ok(Some(properties::parse(&text)))
    }

    /// The entry `name` as a stream: decompressed, and failing with an I/O error of kind
    /// `InvalidData` if it holds more or fewer bytes than declared or its CRC-32 differs.
    pub fn stream(&self, name: &str) -> Result<Box<dyn Read + '_>, PackageError> {
        let e = self
            .entry(name)
            .ok_or_else(|| PackageError::Missing(name.into()))?;
        self.open_entry(e)
    }

    fn open_entry(&self, e: &Entry) -> Result<Box<dyn Read + '_>, PackageError> {
        let entry = self
            .archive
            .get_entry(e.wayfinder)
            .map_err(|err| damaged(&e.name, err))?;
        let raw = entry.reader();
        Ok(match e.method {
            CompressionMethod::STORE => Box::new(entry.verifying_reader(raw)),
            CompressionMethod::DEFLATE => Box::new(entry.verifying_reader(
                flate2::read::DeflateDecoder::new(BufReader::with_capacity(1 << 16, raw)),
            )),
            other => {
                return Err(PackageError::Method {
                    name: e.name.clone(),
                    method: other.to_string(),
                })
            }
        })
    }

    /// A stored entry's bytes, mapped from the zip (its CRC-32 checked); `None` when the
    /// entry is compressed, to be read with [`PackageReader::stream`].
    pub fn map_stored(&self, name: &str) -> Result<Option<MappedEntry>, PackageError> {
        let Some((e, mapped)) = self.map_raw(name, CompressionMethod::STORE)? else {
            return Ok(None);
        };
        let bytes = mapped.bytes();
        if bytes.len() as u64 != e.size || crc32fast::hash(bytes) != e.crc {
            return Err(damaged(
                name,
                "its size or CRC-32 differs from the zip directory's",
            ));
        }
        Ok(Some(mapped))
    }

    /// A deflated entry's compressed bytes, mapped from the zip, with the size and CRC-32
    /// the directory declares for what they inflate to (not checked here: the caller
    /// inflates them its own way, on several cores say, and checks); `None` when the entry
    /// is not deflated.
    pub fn map_deflated(&self, name: &str) -> Result<Option<DeflatedEntry>, PackageError> {
        Ok(self
            .map_raw(name, CompressionMethod::DEFLATE)?
            .map(|(e, data)| DeflatedEntry {
                data,
                size: e.size,
                crc: e.crc,
            }))
    }

    /// The entry's data as the zip holds it, mapped, when it is compressed with `method`.
    fn map_raw(
        &self,
        name: &str,
        method: CompressionMethod,
    ) -> Result<Option<(&Entry, MappedEntry)>, PackageError> {
        let e = self
            .entry(name)
            .ok_or_else(|| PackageError::Missing(name.into()))?;
        if e.method != method {
            return Ok(None);
        }
        let entry = self
            .archive
            .get_entry(e.wayfinder)
            .map_err(|err| damaged(name, err))?;
        let (start, end) = entry.compressed_data_range();
        let map = MappedFile::from_file(&self.file, self.path.join(name))
            .map_err(|err| damaged(name, err))?;
        let range = usize::try_from(start).unwrap_or(usize::MAX)
            ..usize::try_from(end).unwrap_or(usize::MAX);
        if map.bytes().get(range.clone()).is_none() {
            return Err(damaged(name, "the entry runs past the end of the zip"));
        }
        Ok(Some((e, MappedEntry { map, range })))
    }
}

fn damaged(name: &str, reason: impl std::fmt::Display) -> PackageError {
    PackageError::Damaged {
        name: name.into(),
        reason: reason.to_string(),
    }
}

/// A stored entry's bytes, in the mapped zip.
pub struct MappedEntry {
    map: MappedFile,
    range: std::ops::Range<usize>,
}

impl MappedEntry {
    /// The entry's bytes.
    pub fn bytes(&self) -> &[u8] {
        &self.map.bytes()[self.range.clone()]
    }
}

/// A deflated entry's raw deflate stream (see [`PackageReader::map_deflated`]).
pub struct DeflatedEntry {
    /// The compressed bytes.
    pub data: MappedEntry,
    /// What they inflate to, as the directory says: its length and CRC-32.
    pub size: u64,
    /// See `size`.
    pub crc: u32,
}

/// The value of `key` among properties, the first if repeated.
pub fn value<'p>(pairs: &'p [(String, String)], key: &str) -> Option<&'p str> {
    pairs
        .iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.as_str())
}

#[cfg(test)]
mod tests {
    use super::super::{Manifest, PackageWriter, Source};
    use super::*;
    use crate::options::{DroppedMode, StripMode};
    use std::io::Write;

    fn package(level: u32, hprof: &[u8]) -> tempfile::NamedTempFile {
        let manifest = Manifest {
            sdk_version: "25".into(),
            manufacturer: "ACME".into(),
            hprof_entry: "d_shrink.hprof".into(),
            leaked_activity_key: "k".into(),
            sources: super::super::manifest::Sources {
                sdk_version: Source::Caller,
                manufacturer: Source::Caller,
                leaked_activity_key: Source::Caller,
            },
            private: false,
        };
        let mut f = tempfile::NamedTempFile::new().unwrap();
        let mut w = PackageWriter::new(f.as_file_mut(), level, 1_500_000_000_000).unwrap();
        w.add_manifest(&manifest).unwrap();
        w.add_bytes("d_shrink.hprof", hprof).unwrap();
        w.add_extra(&[("a".into(), "b".into())]).unwrap();
        w.finish(&comment::render(&comment::Modes {
            strip: StripMode::Strings,
            dropped: DroppedMode::Empty,
            private: false,
        }))
        .unwrap()
        .flush()
        .unwrap();
        f
    }

    #[test]
    fn reads_back_what_the_writer_wrote_stored_or_deflated() {
        let hprof: Vec<u8> = (0..100_000u32).map(|i| (i % 7) as u8).collect();
        for level in [0, 6] {
            let f = package(level, &hprof);
            let p = PackageReader::open(f.path()).unwrap();
            assert_eq!(
                p.names().collect::<Vec<_>>(),
                [RESULT_INFO, "d_shrink.hprof", EXTRA_INFO]
            );
            let m = p.manifest().unwrap();
            assert_eq!(value(&m, "hprofEntry"), Some("d_shrink.hprof"));
            assert_eq!(p.extra().unwrap(), [("a".to_string(), "b".to_string())]);
            let c = p.tool_comment().unwrap();
            assert_eq!(c.strip, Some(StripMode::Strings));
            assert_eq!(c.dropped, Some(DroppedMode::Empty));
            let mut back = Vec::new();
            p.stream("d_shrink.hprof")
                .unwrap()
                .read_to_end(&mut back)
                .unwrap();
            assert!(back == hprof);
            let mapped = p.map_stored("d_shrink.hprof").unwrap();
            assert_eq!(mapped.is_some(), level == 0);
            if let Some(m) = mapped {
                assert!(m.bytes() == hprof);
            }
        }
    }

    #[test]
    fn a_damaged_entry_is_refused() {
        let hprof = vec![7u8; 5000];
        let f = package(0, &hprof);
        let mut bytes = std::fs::read(f.path()).unwrap();
        let at = bytes.windows(5000).position(|w| w == &hprof[..]).unwrap();
        bytes[at + 10] = 8;
        std::fs::write(f.path(), &bytes).unwrap();
        let p = PackageReader::open(f.path()).unwrap();
        let mut sink = Vec::new();
        assert!(p
            .stream("d_shrink.hprof")
            .unwrap()
            .read_to_end(&mut sink)
            .is_err());
        assert!(matches!(
            p.map_stored("d_shrink.hprof"),
            Err(PackageError::Damaged { .. })
        ));
    }
}
