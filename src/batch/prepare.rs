//! Turning a batch input into an hprof file to shrink: a `.hprof` as it is, a `.hprof.gz`
//! decompressed to a temporary file, a package's hprof entry extracted to one (with its
//! `result.info` and `extra.info` kept for the new package). Reading archives is guarded:
//! entry names that climb out (`..`) or are absolute are refused, and an entry may not be
//! larger than it declares nor than a cap, so a zip or gzip bomb cannot fill the disk.

use std::fs::File;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};

use hprof_shrink_core::kind::FileKind;
use hprof_shrink_core::package::manifest::entry_name;
use hprof_shrink_core::package::reader::{self, PackageError, PackageReader};
use hprof_shrink_core::package::{ManifestValues, RESULT_INFO};
use tempfile::NamedTempFile;

use super::discover::{Input, Kind};

/// Why an input could not be made into an hprof to shrink.
#[derive(Debug, thiserror::Error)]
pub enum PrepareError {
    /// No temporary file could be made beside the outputs.
    #[error("creating a temporary file in {}: {source}", dir.display())]
    TempFile {
        /// Where it was to be.
        dir: PathBuf,
        /// The system's error.
        source: std::io::Error,
    },
    /// Reading the input, or writing the temporary file, failed.
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// Reading `what` (the dump being decompressed or extracted) failed.
    #[error("{what}: {source}")]
    Read {
        /// What was being read.
        what: String,
        /// The error, the decompressor's or the system's.
        source: std::io::Error,
    },
    /// `what` unpacks to more than the cap.
    #[error("{what} is larger than the limit of {limit} bytes ({why})")]
    TooLarge {
        /// What was being unpacked.
        what: String,
        /// The cap, in bytes.
        limit: u64,
        /// What sets the cap.
        why: String,
    },
    /// The input named `.zip` is not one.
    #[error("not a readable zip: {0}")]
    NotZip(String),
    /// A zip with no `result.info`.
    #[error("a zip without {}: not a Matrix package", RESULT_INFO)]
    NotMatrix,
    /// The package reader's error.
    #[error("{0}")]
    Package(PackageError),
    /// `result.info` names no hprof entry.
    #[error("{} has no hprofEntry", RESULT_INFO)]
    NoHprofEntry,
    /// The hprof entry's name climbs out of the archive or is absolute.
    #[error("refusing the entry name {entry:?}: it leaves the archive")]
    UnsafeEntry {
        /// The name.
        entry: String,
    },
    /// The hprof entry `result.info` names is not in the zip.
    #[error("hprofEntry {entry:?}: no such entry in the zip")]
    MissingEntry {
        /// The name.
        entry: String,
    },
    /// The hprof entry declares more than the cap.
    #[error("hprofEntry {entry:?} declares {declared} bytes, over the limit of {limit} ({why})")]
    DeclaresTooMuch {
        /// The name.
        entry: String,
        /// The size it declares.
        declared: u64,
        /// The cap, in bytes.
        limit: u64,
        /// What sets the cap.
        why: String,
    },
    /// The hprof entry cannot be read.
    #[error("hprofEntry {entry:?}: {source}")]
    Entry {
        /// The name.
        entry: String,
        /// The package reader's error.
        source: PackageError,
    },
    /// The hprof entry holds fewer bytes than it declares.
    #[error("hprofEntry {entry:?} holds {held} bytes, it declares {declared}")]
    ShortEntry {
        /// The name.
        entry: String,
        /// The bytes it holds.
        held: u64,
        /// The size it declares.
        declared: u64,
    },
}

/// What to shrink, and what the input's own package said.
pub struct Prepared {
    pub hprof: PathBuf,
    /// Holds the decompressed dump; removed when dropped.
    _temp: Option<NamedTempFile>,
    pub manifest: ManifestValues,
    pub extra: Vec<(String, String)>,
    pub hprof_entry: Option<String>,
}

/// A temporary file beside the outputs (where there is room for a dump), named so a later
/// run's cleanup recognises it if this process dies.
fn temp_in(dir: &Path) -> Result<NamedTempFile, PrepareError> {
    hprof_shrink_core::output::locked_temp_in(dir, ".input.").map_err(|source| {
        PrepareError::TempFile {
            dir: dir.to_path_buf(),
            source,
        }
    })
}

/// The largest dump a `.gz` or zip entry may unpack to, and what sets it, for the message.
struct Cap {
    bytes: u64,
    why: String,
}

impl Cap {
    /// `--max-input-size` when given; otherwise what the disk beside the outputs can hold,
    /// less an eighth for the packages being written there (ours and other workers').
    fn of(given: Option<u64>, dir: &Path) -> Cap {
        if let Some(bytes) = given {
            return Cap {
                bytes,
                why: "--max-input-size".into(),
            };
        }
        match hprof_shrink_core::space::available_at(dir) {
            Some(free) => Cap {
                bytes: free - free / 8,
                why: format!(
                    "7/8 of the {free} bytes free in {}; --max-input-size sets another",
                    dir.display()
                ),
            },
            // Where the platform cannot tell, the old fixed guard.
            None => Cap {
                bytes: 64 << 30,
                why: "the default of 64 GiB; --max-input-size sets another".into(),
            },
        }
    }
}

/// Copies at most `cap` bytes; more is an error (a bomb, or a lie in the header).
fn copy_capped(
    from: &mut impl Read,
    to: &mut impl Write,
    cap: &Cap,
    what: &str,
) -> Result<u64, PrepareError> {
    let mut limited = from.take(cap.bytes + 1);
    let n = std::io::copy(&mut limited, to).map_err(|source| PrepareError::Read {
        what: what.to_string(),
        source,
    })?;
    if n > cap.bytes {
        return Err(PrepareError::TooLarge {
            what: what.to_string(),
            limit: cap.bytes,
            why: cap.why.clone(),
        });
    }
    Ok(n)
}

/// The members of a gzip file one after another, as `gzip -d` reads them. Anything after
/// the last member that is not another member is an error, said as such rather than as
/// "invalid gzip header".
struct GzMembers<R: BufRead> {
    member: Option<flate2::bufread::GzDecoder<R>>,
}

impl<R: BufRead> GzMembers<R> {
    fn new(r: R) -> Self {
        GzMembers {
            member: Some(flate2::bufread::GzDecoder::new(r)),
        }
    }
}

impl<R: BufRead> Read for GzMembers<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        loop {
            let Some(member) = self.member.as_mut() else {
                return Ok(0);
            };
            let n = member.read(buf)?;
            if n > 0 || buf.is_empty() {
                return Ok(n);
            }
            // This member ended (its CRC checked); the bufread decoder consumed exactly it.
            let Some(mut rest) = self.member.take().map(|m| m.into_inner()) else {
                return Ok(0);
            };
            let next = rest.fill_buf()?;
            if next.is_empty() {
                return Ok(0);
            }
            if FileKind::of(next) != FileKind::Gzip {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    "trailing data after the gzip stream",
                ));
            }
            self.member = Some(flate2::bufread::GzDecoder::new(rest));
        }
    }
}

pub fn prepare(input: &Input, temp_dir: &Path, max: Option<u64>) -> Result<Prepared, PrepareError> {
    let plain = |hprof: PathBuf, temp, hprof_entry| Prepared {
        hprof,
        _temp: temp,
        manifest: ManifestValues::default(),
        extra: Vec::new(),
        hprof_entry,
    };
    match input.kind {
        Kind::Hprof => Ok(plain(input.path.clone(), None, None)),
        Kind::HprofGz => {
            let cap = Cap::of(max, temp_dir);
            let mut temp = temp_in(temp_dir)?;
            let f = File::open(&input.path)?;
            let mut gz = GzMembers::new(BufReader::new(f));
            let mut out = std::io::BufWriter::new(temp.as_file_mut());
            copy_capped(&mut gz, &mut out, &cap, "the decompressed dump")?;
            out.flush()?;
            drop(out);
            // Named after the input, not the temporary file, so a package is the same
            // from one run to the next.
            let entry = entry_name(&input.path);
            Ok(plain(temp.path().to_path_buf(), Some(temp), Some(entry)))
        }
        Kind::Zip => from_zip(&input.path, temp_dir, &Cap::of(max, temp_dir)),
    }
}

/// Is `name` a plain relative path inside the archive?
fn safe_entry_name(name: &str) -> bool {
    let p = Path::new(name);
    !name.is_empty()
        && !p.is_absolute()
        && !name.starts_with('/')
        && !name.starts_with('\\')
        && !name.contains(':')
        && p.components()
            .all(|c| matches!(c, std::path::Component::Normal(_)))
}

fn from_zip(path: &Path, temp_dir: &Path, cap: &Cap) -> Result<Prepared, PrepareError> {
    let zip = PackageReader::open(path).map_err(|e| match e {
        PackageError::NotZip(reason) => PrepareError::NotZip(reason),
        e => PrepareError::Package(e),
    })?;
    let pairs = zip.manifest().map_err(|e| match e {
        PackageError::Missing(_) => PrepareError::NotMatrix,
        e => PrepareError::Package(e),
    })?;
    let get = |k: &str| reader::value(&pairs, k).map(str::to_string);
    let entry = get("hprofEntry").ok_or(PrepareError::NoHprofEntry)?;
    if !safe_entry_name(&entry) {
        return Err(PrepareError::UnsafeEntry { entry });
    }
    let extra = zip.extra().map_err(PrepareError::Package)?;
    let mut temp = temp_in(temp_dir)?;
    {
        let declared = zip
            .declared_size(&entry)
            .ok_or_else(|| PrepareError::MissingEntry {
                entry: entry.clone(),
            })?;
        if declared > cap.bytes {
            return Err(PrepareError::DeclaresTooMuch {
                entry,
                declared,
                limit: cap.bytes,
                why: cap.why.clone(),
            });
        }
        let mut e = zip.stream(&entry).map_err(|source| PrepareError::Entry {
            entry: entry.clone(),
            source,
        })?;
        let mut out = std::io::BufWriter::new(temp.as_file_mut());
        // The reader stops at the declared size and checks the CRC; the cap guards the rest.
        let declared_cap = Cap {
            bytes: declared,
            why: "the size the zip declares".into(),
        };
        let n = copy_capped(
            &mut e,
            &mut out,
            &declared_cap,
            &format!("hprofEntry {entry:?}"),
        )?;
        if n != declared {
            return Err(PrepareError::ShortEntry {
                entry,
                held: n,
                declared,
            });
        }
        out.flush()?;
    }
    // A name for the new entry: the old one's file name.
    let name = Path::new(&entry)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned());
    Ok(Prepared {
        hprof: temp.path().to_path_buf(),
        _temp: Some(temp),
        manifest: ManifestValues {
            sdk_version: get("sdkVersion"),
            manufacturer: get("manufacturer"),
            leaked_activity_key: get("leakedActivityKey"),
        },
        extra,
        hprof_entry: name,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entry_names_that_leave_the_archive_are_refused() {
        assert!(safe_entry_name("dump.hprof"));
        assert!(safe_entry_name("dir/dump.hprof"));
        for bad in [
            "",
            "../x.hprof",
            "a/../../x",
            "/etc/passwd",
            "\\\\server\\x",
            "C:\\x",
            "./x",
        ] {
            assert!(!safe_entry_name(bad), "{bad:?} accepted");
        }
    }
}
