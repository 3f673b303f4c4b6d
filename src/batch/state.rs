//! What a batch remembers about each package it made, so that a re-run redoes exactly what
//! is not done: a package counts as done only if it was made from this very input (the
//! same size, modification time and sampled content) with these options, and its hand-off
//! (into the outbox, or uploaded) is finished only once that was confirmed.
//!
//! Kept beside the package as a hidden sidecar, `.NAME.zip.hprof-shrink-state` (JSON),
//! replaced atomically on each change. A package without a sidecar (made by an older
//! version, or put there by hand) is not trusted and is made again.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};

use hprof_shrink_core::output::PendingFile;
use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

use md5::{Digest, Md5};
use serde::{Deserialize, Serialize};

/// Suffix of the sidecar's name.
pub const SUFFIX: &str = ".hprof-shrink-state";

/// Bytes hashed from each end of an input. An HPROF header holds the dump's timestamp, so
/// a re-dump under the same name and size still differs here.
const SAMPLE: u64 = 1 << 20;

/// Who an input is: enough to tell a re-dumped or replaced file from the one a package was
/// made from, without reading all of it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InputId {
    pub path: String,
    pub bytes: u64,
    pub mtime_ns: i128,
    /// MD5 of the first and last MiB (all of a file up to 2 MiB).
    pub sample_md5: String,
}

impl InputId {
    pub fn of(path: &Path) -> std::io::Result<InputId> {
        let mut f = hprof_shrink_core::hprof::open_regular(path)?;
        let meta = f.metadata()?;
        let bytes = meta.len();
        let mtime_ns = meta
            .modified()
            .ok()
            .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_nanos() as i128);
        let mut md5 = Md5::new();
        let mut buf = vec![0u8; 64 << 10];
        let mut hash = |f: &mut File, from: u64, len: u64| -> std::io::Result<()> {
            f.seek(SeekFrom::Start(from))?;
            let mut left = len;
            while left > 0 {
                let want = left.min(buf.len() as u64) as usize;
                let n = f.read(&mut buf[..want])?;
                if n == 0 {
                    break;
                }
                md5.update(&buf[..n]);
                left -= n as u64;
            }
            Ok(())
        };
        if bytes <= 2 * SAMPLE {
            hash(&mut f, 0, bytes)?;
        } else {
            hash(&mut f, 0, SAMPLE)?;
            hash(&mut f, bytes - SAMPLE, SAMPLE)?;
        }
        Ok(InputId {
            // However the batch was given it (`dumps/`, `./dumps`, an absolute path).
            path: canonical(path).display().to_string(),
            bytes,
            mtime_ns,
            sample_md5: hex::encode(md5.finalize()),
        })
    }
}

/// `path` with its spelling settled (symlinks, `.`, `..` resolved), or as it is where that
/// cannot be done.
pub fn canonical(path: &Path) -> std::path::PathBuf {
    path.canonicalize().unwrap_or_else(|_| path.to_path_buf())
}

/// A package as it was when its state was written: replaced or rewritten since, it is not
/// the one the state speaks of.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PackageId {
    pub bytes: u64,
    pub mtime_ns: i128,
}

impl PackageId {
    pub fn of(path: &Path) -> std::io::Result<PackageId> {
        let meta = std::fs::metadata(path)?;
        Ok(PackageId {
            bytes: meta.len(),
            mtime_ns: meta
                .modified()
                .ok()
                .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
                .map_or(0, |d| d.as_nanos() as i128),
        })
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct State {
    pub schema: u32,
    pub input: InputId,
    /// The options that shape the package (`strip=… dropped=… level=… salvage=…`).
    pub options: String,
    pub package: PackageId,
    /// Where the package was admitted into the outbox, once that is done.
    pub queued: Option<String>,
    /// True once an upload of it was answered 2xx.
    pub uploaded: bool,
}

pub const SCHEMA: u32 = 1;

/// The sidecar of a package.
pub fn path_of(package: &Path) -> PathBuf {
    let name = package
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    package.with_file_name(format!(".{name}{SUFFIX}"))
}

/// The state of a package, if it has one that can be read.
pub fn load(package: &Path) -> Option<State> {
    let text = std::fs::read(path_of(package)).ok()?;
    serde_json::from_slice::<State>(&text)
        .ok()
        .filter(|s| s.schema == SCHEMA)
}

/// Writes the state of a package: a temporary file beside it, synced, renamed over the old
/// state, so a crash leaves the old state or the new, never half of one.
pub fn save(package: &Path, state: &State) -> std::io::Result<()> {
    let fail = |e: hprof_shrink_core::Error| std::io::Error::other(e.to_string());
    let mut file = PendingFile::create(&path_of(package)).map_err(fail)?;
    serde_json::to_writer_pretty(file.file(), state)?;
    file.file().write_all(b"\n")?;
    file.commit().map_err(fail)?;
    Ok(())
}

/// Removes the state of a package (before the package is made again).
pub fn forget(package: &Path) {
    let _ = std::fs::remove_file(path_of(package));
}

impl State {
    /// True when `package` is what this state describes, made from `input` with `options`.
    pub fn describes(&self, package: &Path, input: &InputId, options: &str) -> bool {
        self.input == *input
            && self.options == options
            && PackageId::of(package).is_ok_and(|p| p == self.package)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_redump_with_the_same_size_is_another_input() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("leak.hprof");
        std::fs::write(&p, b"JAVA PROFILE 1.0.3\0\0\0\0\x04\0\0\0\0\0\0\0\x01rest").unwrap();
        let a = InputId::of(&p).unwrap();
        assert_eq!(a, InputId::of(&p).unwrap());
        // Same name, same size, another timestamp in the header.
        std::fs::write(&p, b"JAVA PROFILE 1.0.3\0\0\0\0\x04\0\0\0\0\0\0\0\x02rest").unwrap();
        let b = InputId::of(&p).unwrap();
        assert_eq!(a.bytes, b.bytes);
        assert_ne!(a.sample_md5, b.sample_md5);
        assert_ne!(a, b);
    }

    #[test]
    fn large_inputs_are_sampled_at_both_ends() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("big.hprof");
        let mut data = vec![0u8; (3 * SAMPLE) as usize];
        std::fs::write(&p, &data).unwrap();
        let a = InputId::of(&p).unwrap();
        let last = data.len() - 1;
        data[last] = 1;
        std::fs::write(&p, &data).unwrap();
        assert_ne!(a.sample_md5, InputId::of(&p).unwrap().sample_md5);
    }

    #[test]
    fn state_round_trips_and_tells_a_replaced_package() {
        let dir = tempfile::tempdir().unwrap();
        let input = dir.path().join("x.hprof");
        let pkg = dir.path().join("x.zip");
        std::fs::write(&input, b"dump").unwrap();
        std::fs::write(&pkg, b"package").unwrap();
        let state = State {
            schema: SCHEMA,
            input: InputId::of(&input).unwrap(),
            options: "strip=bitmaps".into(),
            package: PackageId::of(&pkg).unwrap(),
            queued: None,
            uploaded: false,
        };
        save(&pkg, &state).unwrap();
        assert!(path_of(&pkg).ends_with(".x.zip.hprof-shrink-state"));
        let loaded = load(&pkg).unwrap();
        assert_eq!(loaded, state);
        let id = InputId::of(&input).unwrap();
        assert!(loaded.describes(&pkg, &id, "strip=bitmaps"));
        assert!(!loaded.describes(&pkg, &id, "strip=strings"));
        std::fs::write(&pkg, b"another package").unwrap();
        assert!(!loaded.describes(&pkg, &id, "strip=bitmaps"));
        forget(&pkg);
        assert!(load(&pkg).is_none());
    }
}
