//! Output files that appear complete or not at all: written to a temporary file beside the
//! destination, synced, then renamed into place. Dropped before `commit`, the temporary
//! file is removed; after a crash it is left with a recognisable name for the next run to
//! clean up.

use std::fs::File;
use std::path::{Path, PathBuf};

use tempfile::NamedTempFile;

use crate::error::{Error, Result};

/// A file being written start to end, whose written bytes the kernel is asked to start
/// writing to disk every few MiB (Linux and Android `sync_file_range`), so the `fsync`
/// that commits it finds little left to do instead of the whole file. Elsewhere a plain
/// file.
pub struct Writeback<'f> {
    file: &'f File,
    written: u64,
    /// Where the bytes not yet handed to writeback begin.
    pending: u64,
}

/// Bytes handed to writeback at a time.
const WRITEBACK_BYTES: u64 = 8 << 20;

impl<'f> Writeback<'f> {
    pub fn new(file: &'f File) -> Self {
        Writeback {
            file,
            written: 0,
            pending: 0,
        }
    }

    fn wrote(&mut self, n: usize) {
        self.written += n as u64;
        if self.written - self.pending >= WRITEBACK_BYTES {
            self.start_writeback();
        }
    }

    fn start_writeback(&mut self) {
        #[cfg(any(target_os = "linux", target_os = "android"))]
        {
            use std::os::fd::AsRawFd;
            // Only a hint: the final sync is what makes the file durable, so a failure
            // here (a filesystem without it) changes nothing.
            // SAFETY: a plain system call on an open descriptor; no memory is passed.
            unsafe {
                libc::sync_file_range(
                    self.file.as_raw_fd(),
                    self.pending as libc::off64_t,
                    (self.written - self.pending) as libc::off64_t,
                    libc::SYNC_FILE_RANGE_WRITE,
                );
            }
        }
        self.pending = self.written;
    }
}

impl std::io::Write for Writeback<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = (&mut &*self.file).write(buf)?;
        self.wrote(n);
        Ok(n)
    }

    fn write_vectored(&mut self, bufs: &[std::io::IoSlice<'_>]) -> std::io::Result<usize> {
        let n = (&mut &*self.file).write_vectored(bufs)?;
        self.wrote(n);
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Suffix of every temporary output file this crate creates.
pub const TEMP_SUFFIX: &str = ".hprof-shrink-tmp";

pub struct PendingFile {
    tmp: NamedTempFile,
    dest: PathBuf,
}

impl PendingFile {
    pub fn create(dest: &Path) -> Result<Self> {
        let dir = match dest.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let name = dest
            .file_name()
            .ok_or_else(|| Error::Invalid(format!("{} is not a file path", dest.display())))?
            .to_string_lossy()
            .into_owned();
        let tmp = tempfile::Builder::new()
            .prefix(&format!(".{name}."))
            .suffix(TEMP_SUFFIX)
            .tempfile_in(&dir)
            .map_err(|e| Error::io(&dir, e))?;
        // Held while the file is written, so a cleanup by another process can tell a live
        // temporary file from one a crash left behind. Best effort: some filesystems
        // have no locks, and then cleanup leaves the file alone.
        let _ = tmp.as_file().try_lock();
        Ok(PendingFile {
            tmp,
            dest: dest.to_path_buf(),
        })
    }

    pub fn file(&mut self) -> &mut File {
        self.tmp.as_file_mut()
    }

    pub fn as_file(&self) -> &File {
        self.tmp.as_file()
    }

    pub fn path(&self) -> &Path {
        self.tmp.path()
    }

    pub fn dest(&self) -> &Path {
        &self.dest
    }

    /// Syncs the data, renames the file into place and syncs the directory; returns the
    /// file's size.
    pub fn commit(self) -> Result<u64> {
        let dest = self.dest;
        let file = self.tmp.as_file();
        file.sync_all().map_err(|e| Error::io(&dest, e))?;
        let size = file.metadata().map_err(|e| Error::io(&dest, e))?.len();
        self.tmp
            .persist(&dest)
            .map_err(|e| Error::io(&dest, e.error))?;
        #[cfg(unix)]
        if let Some(dir) = dest.parent() {
            let dir = if dir.as_os_str().is_empty() {
                Path::new(".")
            } else {
                dir
            };
            // The rename is durable only once the directory is synced.
            if let Ok(d) = File::open(dir) {
                let _ = d.sync_all();
            }
        }
        Ok(size)
    }
}

/// Removes temporary output files in `dir` that a crashed or killed run left behind: ones
/// with this crate's suffix that no running process holds locked. Returns their paths.
pub fn clean_stale(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut removed = Vec::new();
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(removed),
        Err(e) => return Err(Error::io(dir, e)),
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if !(name.starts_with('.') && name.ends_with(TEMP_SUFFIX)) {
            continue;
        }
        let Ok(file) = File::open(&path) else {
            continue;
        };
        // A lock we can take means no writer holds it.
        if file.try_lock().is_ok() && std::fs::remove_file(&path).is_ok() {
            removed.push(path);
        }
    }
    Ok(removed)
}

/// True when `a` and `b` name the same file (both must exist for a positive answer).
pub fn same_file(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(x), Ok(y)) => x == y,
        _ => false,
    }
}
