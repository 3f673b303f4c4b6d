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
    /// Writes to `file` from its current position.
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
/// words. Other Linux targets use the C library's wrapper; elsewhere (32-bit x86 Android,
/// other systems) nothing is done.
pub fn writeback_hint(file: &File, offset: u64, len: u64) -> std::io::Result<()> {
    // The raw call on Linux too where its ABI is the same as Android's, so that the host
    // tests run the code a phone runs.
    #[cfg(all(
        any(target_os = "linux", target_os = "android"),
        any(
            target_arch = "aarch64",
            target_arch = "x86_64",
            target_arch = "riscv64"
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
    // Other Linux targets: the C library's wrapper knows their calling convention.
    #[cfg(all(
        target_os = "linux",
        not(any(
            target_arch = "aarch64",
            target_arch = "x86_64",
            target_arch = "riscv64"
        ))
    ))]
    {
        use std::os::fd::AsRawFd;
        // SAFETY: as above.
        let rc = unsafe {
            libc::sync_file_range(
                file.as_raw_fd(),
                offset as libc::off64_t,
                len as libc::off64_t,
                SYNC_FILE_RANGE_WRITE,
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

impl crate::package::Rewrite for Writeback<'_> {
    fn rewrite_at(&mut self, offset: u64, bytes: &[u8]) -> std::io::Result<()> {
        crate::package::writer::rewrite_file(self.file, offset, bytes)
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

/// An output being written under a temporary name beside its destination, renamed into place by [`PendingFile::commit`]; dropped before that, it is removed.
pub struct PendingFile {
    tmp: NamedTempFile,
    /// The path as given, which messages name.
    dest: PathBuf,
    /// What the finished file is renamed over: `dest`, or the file it links to.
    target: PathBuf,
}

impl PendingFile {
    /// Checks `dest` (a regular file or nothing, in an existing directory) and makes the temporary file beside it.
    pub fn create(dest: &Path) -> Result<Self> {
        check_destination(dest)?;
        let target = link_target(dest)?;
        let dir = parent_dir(&target);
        let name = target
            .file_name()
            .ok_or_else(|| Error::Invalid(format!("{} is not a file path", dest.display())))?
            .to_string_lossy()
            .into_owned();
        // Locked while it is written (see `locked_temp_in`).
        let tmp = locked_temp_in(&dir, &format!(".{name}."))
            .map_err(|e| Error::io(dest, without_temp_name(e)))?;
        Ok(PendingFile {
            tmp,
            dest: dest.to_path_buf(),
            target,
        })
    }

    /// The temporary file, to write.
    pub fn file(&mut self) -> &mut File {
        self.tmp.as_file_mut()
    }

    /// The temporary file.
    pub fn as_file(&self) -> &File {
        self.tmp.as_file()
    }

    /// The temporary file's path.
    pub fn path(&self) -> &Path {
        self.tmp.path()
    }

    /// The destination, as given.
    pub fn dest(&self) -> &Path {
        &self.dest
    }

    /// Syncs the data, renames the file into place and syncs the directory; returns the
    /// file's size.
    pub fn commit(self) -> Result<u64> {
        let PendingFile { tmp, dest, target } = self;
        let file = tmp.as_file();
        // A file replaced keeps its mode, as `cp` over it would.
        if let Ok(old) = std::fs::metadata(&target) {
            if old.is_file() {
                file.set_permissions(old.permissions())
                    .map_err(|e| Error::io(&dest, e))?;
            }
        }
        file.sync_all().map_err(|e| Error::io(&dest, e))?;
        let size = file.metadata().map_err(|e| Error::io(&dest, e))?.len();
        // The last line of defence: whatever became of the destination since the checks
        // before the work, a device, FIFO or socket is never renamed over.
        check_destination(&target)?;
        tmp.persist(&target)
            .map_err(|e| Error::io(&dest, without_temp_name(e.error)))?;
        #[cfg(unix)]
        if let Some(dir) = target.parent() {
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

/// A temporary file in `dir` (named `PREFIX…` + [`TEMP_SUFFIX`]) that this process holds
/// locked, so that a cleanup by another process ([`clean_stale`]) can tell it from one a
/// crash left behind. Creating and locking are two steps: a cleanup that ran between them
/// (another worker's, in the same directory) took the file, which the check after the lock
/// sees, and another is made. On a filesystem without locks no cleanup removes it either.
pub fn locked_temp_in(dir: &Path, prefix: &str) -> std::io::Result<NamedTempFile> {
    for _ in 0..8 {
        let mut builder = tempfile::Builder::new();
        builder.prefix(prefix).suffix(TEMP_SUFFIX);
        // The mode `cp` gives a new file (0666 less the umask, which open applies), not
        // tempfile's 0600: the rename keeps the temporary file's mode.
        #[cfg(unix)]
        builder.permissions(std::os::unix::fs::PermissionsExt::from_mode(0o666));
        let tmp = builder.tempfile_in(dir)?;
        match tmp.as_file().try_lock() {
            Ok(()) if still_named(&tmp) => return Ok(tmp),
            // A cleanup holds it (about to remove it), or removed it already: again.
            Ok(()) | Err(std::fs::TryLockError::WouldBlock) => {}
            Err(std::fs::TryLockError::Error(_)) => return Ok(tmp),
        }
    }
    Err(std::io::Error::other(
        "every temporary file made there was removed at once (another process cleaning the directory?)",
    ))
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

/// How old a temporary file must be before a cleanup removes it on a filesystem without
/// locks, where whether a live process still writes it cannot be told otherwise.
pub const STALE_AGE: std::time::Duration = std::time::Duration::from_secs(3600);

/// Removes temporary output files in `dir` that a crashed or killed run left behind: ones
/// with this crate's suffix that no running process holds locked (where the filesystem
/// has no locks: ones not written to for [`STALE_AGE`]). Returns their paths.
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
        let stale = match file.try_lock() {
            Ok(()) => true,
            Err(std::fs::TryLockError::WouldBlock) => false,
            Err(std::fs::TryLockError::Error(_)) => file
                .metadata()
                .and_then(|m| m.modified())
                .ok()
                .and_then(|t| t.elapsed().ok())
                .is_some_and(|age| age >= STALE_AGE),
        };
        if stale && std::fs::remove_file(&path).is_ok() {
            removed.push(path);
        }
    }
    Ok(removed)
}

/// Where a finished `dest` goes. A symlink to a file is followed, so that the file it
/// points to is replaced and the link stays (a rename over `/dev/stdout` redirected to a
/// file would otherwise replace the system's link); anything else, a dangling symlink
/// included, is replaced itself.
fn link_target(dest: &Path) -> Result<PathBuf> {
    let linked = std::fs::symlink_metadata(dest).is_ok_and(|m| m.file_type().is_symlink());
    if !linked || std::fs::metadata(dest).is_err() {
        return Ok(dest.to_path_buf());
    }
    dest.canonicalize().map_err(|e| Error::io(dest, e))
}

/// The directory `dest` is written in.
fn parent_dir(dest: &Path) -> PathBuf {
    match dest.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// `tempfile`'s errors carry the temporary file's name, which the user never chose and
/// which no longer exists: keep only the system's error, so that the message names the
/// destination.
fn without_temp_name(e: std::io::Error) -> std::io::Error {
    if e.raw_os_error().is_some() {
        return e;
    }
    let kind = e.kind();
    let inner = e.into_inner();
    let os = inner.as_deref().and_then(|i| {
        let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(i);
        while let Some(c) = cause {
            if let Some(code) = c
                .downcast_ref::<std::io::Error>()
                .and_then(|io| io.raw_os_error())
            {
                return Some(code);
            }
            cause = c.source();
        }
        None
    });
    match os {
        Some(code) => std::io::Error::from_raw_os_error(code),
        None => std::io::Error::from(kind),
    }
}

/// Checks that `dest` can be written as an output: its directory exists, and it is either
/// absent or a regular file (through symlinks). An output is written beside its destination
/// and renamed over it, so a device, FIFO or socket there would be replaced by a regular
/// file (as root, `/dev/null` itself): such a destination is refused, not written through,
/// because streaming into it could not keep the promise that an output appears complete
/// or not at all.
pub fn check_destination(dest: &Path) -> Result<()> {
    match std::fs::metadata(dest) {
        Ok(m) if m.is_file() => return Ok(()),
        Ok(m) if m.is_dir() => {
            return Err(Error::Invalid(format!(
                "the output {} is a directory",
                dest.display()
            )))
        }
        Ok(_) => {
            return Err(Error::Invalid(format!(
                "the output {} is not a regular file (a device, FIFO or socket): refusing to replace it",
                dest.display()
            )))
        }
        // Absent, or a symlink to nowhere (the rename replaces the link itself).
        Err(_) => {}
    }
    let dir = parent_dir(dest);
    match std::fs::metadata(&dir) {
        Ok(m) if m.is_dir() => Ok(()),
        Ok(_) => Err(Error::io(
            dest,
            std::io::Error::new(
                std::io::ErrorKind::NotADirectory,
                format!("{} is not a directory", dir.display()),
            ),
        )),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(Error::io(
            dest,
            std::io::Error::new(
                std::io::ErrorKind::NotFound,
                format!("the directory {} does not exist", dir.display()),
            ),
        )),
        Err(e) => Err(Error::io(dest, e)),
    }
}

/// True when `a` and `b` name the same file, seen through symlinks, `./` and hard links:
/// where both exist, the same device and inode; otherwise the same name in the same
/// (canonical) directory.
pub fn same_file(a: &Path, b: &Path) -> bool {
    match (std::fs::metadata(a), std::fs::metadata(b)) {
        (Ok(x), Ok(y)) => same_inode(&x, &y) || canonical(a) == canonical(b),
        (Err(_), Err(_)) => canonical(a) == canonical(b),
        // One exists and the other does not: two files.
        _ => false,
    }
}

#[cfg(unix)]
fn same_inode(x: &std::fs::Metadata, y: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::MetadataExt;
    x.dev() == y.dev() && x.ino() == y.ino()
}

#[cfg(not(unix))]
fn same_inode(_: &std::fs::Metadata, _: &std::fs::Metadata) -> bool {
    false
}

/// The path with its directory made canonical, and itself followed where it exists; a
/// path whose directory does not exist stays as given.
fn canonical(p: &Path) -> Option<PathBuf> {
    if let Ok(c) = p.canonicalize() {
        return Some(c);
    }
    let name = p.file_name()?;
    let dir = parent_dir(p).canonicalize().ok()?;
    Some(dir.join(name))
}

/// A writer whose errors carry the path of the output they were writing, so that a
/// failure with two outputs says which one failed (see [`output_error`]).
pub struct Named<'p, W> {
    inner: W,
    path: &'p Path,
}

impl<'p, W> Named<'p, W> {
    /// Tags the errors of `inner` with `path`.
    pub fn new(inner: W, path: &'p Path) -> Self {
        Named { inner, path }
    }
}

/// An output's write error with the output's path, carried inside an `io::Error` through
/// the writers and unwrapped by [`output_error`].
#[derive(Debug, thiserror::Error)]
#[error("{}: {source}", path.display())]
struct OnOutput {
    path: PathBuf,
    source: std::io::Error,
}

impl<'p, W> Named<'p, W> {
    fn tag(&self, e: std::io::Error) -> std::io::Error {
        if e.get_ref().is_some_and(|i| i.is::<OnOutput>()) {
            return e;
        }
        std::io::Error::new(
            e.kind(),
            OnOutput {
                path: self.path.to_path_buf(),
                source: e,
            },
        )
    }
}

impl<W: crate::package::Rewrite> crate::package::Rewrite for Named<'_, W> {
    fn rewrite_at(&mut self, offset: u64, bytes: &[u8]) -> std::io::Result<()> {
        self.inner
            .rewrite_at(offset, bytes)
            .map_err(|e| self.tag(e))
    }
}

impl<W: std::io::Write> std::io::Write for Named<'_, W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.inner.write(buf).map_err(|e| self.tag(e))
    }

    fn write_vectored(&mut self, bufs: &[std::io::IoSlice<'_>]) -> std::io::Result<usize> {
        self.inner.write_vectored(bufs).map_err(|e| self.tag(e))
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush().map_err(|e| self.tag(e))
    }
}

/// A write error that a [`Named`] writer tagged becomes an I/O error on that output's path
/// (the system's error kept whole); any other error is returned as it is.
pub fn output_error(e: Error) -> Error {
    let tagged = |io: &std::io::Error| io.get_ref().is_some_and(|i| i.is::<OnOutput>());
    let io = match e {
        Error::Write(io) if tagged(&io) => io,
        Error::Format(crate::hprof::FormatError::Write(io)) if tagged(&io) => io,
        e => return e,
    };
    match io.into_inner().map(|i| i.downcast::<OnOutput>()) {
        Some(Ok(tagged)) => Error::io(tagged.path, tagged.source),
        // Checked just above.
        _ => Error::Write(std::io::Error::other("write failed")),
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

#[cfg(all(test, unix))]
mod destination_tests {
    use super::{same_file, PendingFile};
    use std::io::Write;

    #[test]
    fn a_destination_that_became_a_fifo_is_not_renamed_over() {
        let dir = tempfile::tempdir().unwrap();
        let dest = dir.path().join("out.zip");
        let mut f = PendingFile::create(&dest).unwrap();
        f.file().write_all(b"data").unwrap();
        // Between the checks before the work and the commit, something else put a FIFO
        // there: the commit is the last line of defence.
        let made = std::process::Command::new("mkfifo")
            .arg(&dest)
            .status()
            .unwrap();
        assert!(made.success());
        let err = f.commit().unwrap_err();
        assert!(err.to_string().contains("not a regular file"), "{err}");
        use std::os::unix::fs::FileTypeExt;
        let ty = std::fs::symlink_metadata(&dest).unwrap().file_type();
        assert!(ty.is_fifo());
        // The temporary file went with the failed commit.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn same_file_sees_through_dot_hard_links_and_symlinks() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a");
        std::fs::write(&a, "x").unwrap();
        let hard = dir.path().join("hard");
        std::fs::hard_link(&a, &hard).unwrap();
        let sym = dir.path().join("sym");
        std::os::unix::fs::symlink(&a, &sym).unwrap();
        assert!(same_file(&a, &hard));
        assert!(same_file(&a, &sym));
        assert!(same_file(&a, &dir.path().join(".").join("a")));
        // Not there yet: the same name in the same directory.
        let new = dir.path().join("new.zip");
        assert!(same_file(&new, &dir.path().join(".").join("new.zip")));
        assert!(!same_file(&new, &dir.path().join("other.zip")));
        assert!(!same_file(&a, &new));
    }
}
