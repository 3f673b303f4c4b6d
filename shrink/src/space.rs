//! Free space on a filesystem, asked before unpacking something large: a local disk that
//! cannot hold it is said up front, not found out as a write error half way.

use std::fs::File;
use std::path::Path;

/// Bytes an unprivileged process may still write on the filesystem holding `file`; `None`
/// where the platform cannot tell.
pub fn available(file: &File) -> Option<u64> {
    imp::available(file)
}

/// As [`available`], for the filesystem holding the file or directory at `path`.
pub fn available_at(path: &Path) -> Option<u64> {
    available(&File::open(path).ok()?)
}

/// Bounds on inflating a package's hprof into a temporary file (to check it, or to map it
/// for analysis): a server sets them, so that a zip bomb is refused before a byte of it is
/// written and no upload fills its disk; the command line leaves them unset.
#[derive(Debug, Clone, Default)]
pub struct Unpack {
    /// The most the hprof may inflate to. More is refused with an error of kind
    /// [`std::io::ErrorKind::FileTooLarge`]: up front when the zip declares more, and
    /// at this many bytes when the stream holds more than it declares.
    pub max_bytes: Option<u64>,
    /// Bytes that must stay free on the disk inflated to; less is an error of kind
    /// [`std::io::ErrorKind::StorageFull`], up front and every [`CHECK_EVERY`] bytes.
    pub keep_free: u64,
    /// Where the temporary file goes (none: the caller's default).
    pub dir: Option<std::path::PathBuf>,
}

/// How often a bounded write looks at the free space again.
pub const CHECK_EVERY: u64 = 64 << 20;

impl Unpack {
    /// An unnamed temporary file in [`Unpack::dir`], or else in `fallback`'s directory
    /// (the system's temporary directory when `None`).
    pub fn tempfile(&self, fallback: Option<&Path>) -> std::io::Result<File> {
        match self.dir.as_deref().or(fallback) {
            Some(dir) => tempfile::tempfile_in(dir),
            None => tempfile::tempfile(),
        }
    }

    /// Whether `declared` bytes of `what` may be inflated into `file`: within
    /// [`Unpack::max_bytes`], and leaving [`Unpack::keep_free`] bytes free beside them.
    pub fn admit(&self, what: &str, declared: u64, file: &File) -> std::io::Result<()> {
        if let Some(max) = self.max_bytes {
            if declared > max {
                return Err(too_large(what, declared, max));
            }
        }
        self.room(what, declared, file)
    }

    /// Whether `more` bytes still fit in `file`'s filesystem with `keep_free` to spare.
    fn room(&self, what: &str, more: u64, file: &File) -> std::io::Result<()> {
        let Some(free) = available(file) else {
            return Ok(());
        };
        if more.saturating_add(self.keep_free) > free {
            return Err(std::io::Error::new(
                std::io::ErrorKind::StorageFull,
                format!(
                    "no room for {what}: {more} bytes to write, {free} free, {} to be kept free",
                    self.keep_free
                ),
            ));
        }
        Ok(())
    }

    /// A writer into `file` that refuses to go past `max` bytes (or [`Unpack::max_bytes`],
    /// whichever is less) and past the free space to keep.
    pub fn bounded<'f>(&self, what: &str, file: &'f File, max: Option<u64>) -> Bounded<'f> {
        let max = match (max, self.max_bytes) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        Bounded {
            file,
            what: what.to_string(),
            written: 0,
            max,
            unpack: Unpack {
                max_bytes: self.max_bytes,
                keep_free: self.keep_free,
                dir: None,
            },
            next_check: 0,
        }
    }
}

fn too_large(what: &str, bytes: u64, max: u64) -> std::io::Error {
    past_limit(format!(
        "{what} inflates to {bytes} bytes, more than the limit of {max}"
    ))
}

/// The inner error of a write refused by [`Unpack::max_bytes`]: a package too large for
/// the bounds, told apart from the file-size limit of the process (also `FileTooLarge`),
/// which is the machine's condition, not the package's.
#[derive(Debug)]
pub struct PastLimit(String);

impl std::fmt::Display for PastLimit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for PastLimit {}

fn past_limit(msg: String) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::FileTooLarge, PastLimit(msg))
}

/// Whether `e` is [`Unpack`] refusing to inflate past its limit.
pub fn is_past_limit(e: &std::io::Error) -> bool {
    e.get_ref().is_some_and(|inner| inner.is::<PastLimit>())
}

/// See [`Unpack::bounded`]. A stream that holds more than `max` is cut there: the write
/// that would pass it fails, and nothing past it is written.
pub struct Bounded<'f> {
    file: &'f File,
    what: String,
    written: u64,
    max: Option<u64>,
    unpack: Unpack,
    next_check: u64,
}

impl Bounded<'_> {
    /// Bytes written so far.
    pub fn written(&self) -> u64 {
        self.written
    }
}

impl std::io::Write for Bounded<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let end = self.written.saturating_add(buf.len() as u64);
        if let Some(max) = self.max {
            if end > max {
                return Err(past_limit(format!(
                    "{} inflates to more than {max} bytes",
                    self.what
                )));
            }
        }
        if self.written >= self.next_check {
            self.unpack.room(&self.what, CHECK_EVERY, self.file)?;
            self.next_check = self.written.saturating_add(CHECK_EVERY);
        }
        let n = (&*self.file).write(buf)?;
        self.written += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        (&*self.file).flush()
    }
}

#[cfg(any(target_os = "linux", target_os = "android"))]
mod imp {
    use std::fs::File;
    use std::os::fd::AsRawFd;

    pub fn available(file: &File) -> Option<u64> {
        let mut st = std::mem::MaybeUninit::<libc::statvfs>::zeroed();
        // SAFETY: the descriptor is open for the call and `st` is a buffer of the right type.
        let rc = unsafe { libc::fstatvfs(file.as_raw_fd(), st.as_mut_ptr()) };
        if rc != 0 {
            return None;
        }
        // SAFETY: fstatvfs succeeded, so it filled `st`.
        let st = unsafe { st.assume_init() };
        // The fields are 32 bits wide on some targets.
        #[allow(clippy::unnecessary_cast)]
        let (blocks, size) = (st.f_bavail as u64, st.f_frsize as u64);
        Some(blocks.saturating_mul(size))
    }
}

#[cfg(not(any(target_os = "linux", target_os = "android")))]
mod imp {
    use std::fs::File;

    pub fn available(_file: &File) -> Option<u64> {
        None
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_temp_directory_has_some_space() {
        let dir = tempfile::tempdir().unwrap();
        if let Some(n) = super::available_at(dir.path()) {
            assert!(n > 0);
        }
    }
}
