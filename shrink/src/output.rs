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
        // Only a hint: the final sync is what makes the file durable, so a failure here (a
        // filesystem or kernel without it) changes nothing.
        let _ = writeback_hint(self.file, self.pending, self.written - self.pending);
        self.pending = self.written;
    }
}

/// `SYNC_FILE_RANGE_WRITE` of the kernel ABI (`libc` does not bind it for Android).
#[cfg(any(target_os = "linux", target_os = "android"))]
const SYNC_FILE_RANGE_WRITE: libc::c_uint = 2;

/// Asks the kernel to start writing `len` bytes at `offset` of `file` back to disk
/// (`sync_file_range(2)` with `SYNC_FILE_RANGE_WRITE`), without waiting.
///
/// Issued as the raw system call: bionic has the wrapper only from API 26 and the `libc`
/// crate binds it for no Android target, while the call itself exists on every kernel a
/// phone runs. 64-bit targets take `(fd, offset, nbytes, flags)`; 32-bit ARM has only
/// `sync_file_range2(fd, flags, offset, nbytes)`, flags second so that the 64-bit
/// arguments fall on register pairs, each passed through `syscall()` as low and high
/// words. Where neither applies (32-bit x86 Android, other systems) nothing is done.
pub fn writeback_hint(file: &File, offset: u64, len: u64) -> std::io::Result<()> {
    #[cfg(any(
        all(target_os = "linux", target_pointer_width = "64"),
        all(
            target_os = "android",
            any(
                target_arch = "aarch64",
                target_arch = "x86_64",
                target_arch = "riscv64"
            )
        )
    ))]
    {
        use std::os::fd::AsRawFd;
        // SAFETY: a system call on an open descriptor with integer arguments; no memory
        // is passed.
        let rc = unsafe {
            libc::syscall(
                libc::SYS_sync_file_range,
                file.as_raw_fd() as libc::c_long,
                offset as libc::c_long,
                len as libc::c_long,
                SYNC_FILE_RANGE_WRITE as libc::c_long,
            )
        };
        return if rc == 0 {
            Ok(())
        } else {
            Err(std::io::Error::last_os_error())
        };
    }
    #[cfg(all(target_os = "android", target_arch = "arm"))]
    {
        use std::os::fd::AsRawFd;
        let words = |v: u64| (v as u32 as libc::c_long, (v >> 32) as u32 as libc::c_long);
        let (off_lo, off_hi) = words(offset);
        let (len_lo, len_hi) = words(len);
        // SAFETY: as above; every argument is one 32-bit word, in the order the kernel's
        // arm_sync_file_range reads its registers.
        let rc = unsafe {
            libc::syscall(
                libc::SYS_arm_sync_file_range,
                file.as_raw_fd() as libc::c_long,
                SYNC_FILE_RANGE_WRITE as libc::c_long,
                off_lo,
                off_hi,
                len_lo,
                len_hi,
            )
        };
        return if rc == 0 {
            Ok(())
        } else {
            Err(std::io::Error::last_os_error())
        };
    }
    #[allow(unreachable_code)]
    {
        let _ = (file, offset, len);
        Ok(())
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
        // Held while the file is written, so a cleanup by another process can tell a live
        // temporary file from one a crash left behind. Creating and locking are two steps:
        // a cleanup that ran between them (another worker's, in the same directory) removed
        // the file, which the check after the lock sees, and a new one is made. Best
        // effort where the filesystem has no locks: then cleanup leaves files alone.
        let mut attempts = 0;
        let tmp = loop {
            let tmp = tempfile::Builder::new()
                .prefix(&format!(".{name}."))
                .suffix(TEMP_SUFFIX)
                .tempfile_in(&dir)
                .map_err(|e| Error::io(&dir, e))?;
            let locked = tmp.as_file().try_lock().is_ok();
            attempts += 1;
            if !locked || still_named(&tmp) || attempts >= 8 {
                break tmp;
            }
        };
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

/// True when the temporary file's path still names the open file (no cleanup removed it).
fn still_named(tmp: &NamedTempFile) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        match (
            tmp.as_file().metadata(),
            std::fs::symlink_metadata(tmp.path()),
        ) {
            (Ok(open), Ok(named)) => open.dev() == named.dev() && open.ino() == named.ino(),
            _ => false,
        }
    }
    #[cfg(not(unix))]
    {
        tmp.path().exists()
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

#[cfg(all(test, target_os = "linux", target_pointer_width = "64"))]
mod tests {
    use super::writeback_hint;
    use std::io::Write;

    #[test]
    fn writeback_hint_is_issued_to_the_kernel() {
        let mut f = tempfile::tempfile().unwrap();
        f.write_all(&[7u8; 1 << 16]).unwrap();
        writeback_hint(&f, 0, 1 << 16).unwrap();
        // Offsets past 4 GiB pass whole (no truncation to 32 bits on the way).
        writeback_hint(&f, 5 << 32, 1 << 33).unwrap();
    }

    #[test]
    fn writeback_hint_reaches_the_kernel_which_refuses_a_pipe() {
        // A no-op would return Ok here: the kernel's ESPIPE proves the call was made.
        let (r, _w) = std::io::pipe().unwrap();
        let f = std::fs::File::from(std::os::fd::OwnedFd::from(r));
        let err = writeback_hint(&f, 0, 4096).unwrap_err();
        assert_eq!(err.raw_os_error(), Some(libc::ESPIPE));
    }
}
