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
