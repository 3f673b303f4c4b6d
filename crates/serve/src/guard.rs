//! What keeps a data directory one server's: an exclusive lock on `DIR/serve.lock` for as
//! long as the server runs (a second server on the directory would empty the first one's
//! `tmp/`, losing its uploads in flight, and take its running jobs), and the identity of
//! `meta.sqlite` as opened, checked before an upload is answered 2xx (a database file
//! deleted or replaced under the server would take the records answered since with it at
//! the next start).

use std::fs::{File, TryLockError};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use crate::error::ServeError;

/// The lock file in the data directory.
pub const LOCK_FILE: &str = "serve.lock";

/// The data directory's lock, held until dropped.
#[derive(Debug)]
pub struct DataLock {
    _file: File,
}

impl DataLock {
    /// Takes the lock on `data` without waiting, writing this process's id into the
    /// file; a directory locked by another server is refused, naming its process.
    pub fn take(data: &Path) -> Result<DataLock, ServeError> {
        let path = data.join(LOCK_FILE);
        let io = |source| ServeError::Io {
            what: format!("the lock file {}", path.display()),
            source,
        };
        let mut file = File::options()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(io)?;
        match file.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => {
                let mut held = String::new();
                let _ = file.read_to_string(&mut held);
                let who = held
                    .lines()
                    .find_map(|l| l.strip_prefix("pid "))
                    .and_then(|p| p.trim().parse::<u32>().ok())
                    .map_or("another process".to_string(), |pid| {
                        format!("another hprof-shrink serve (pid {pid})")
                    });
                return Err(ServeError::Config(format!(
                    "the data directory {} is in use by {who}: two servers on one --data would lose each other's uploads and jobs. Give each server its own --data; several servers share work through --database and --store",
                    data.display()
                )));
            }
            Err(TryLockError::Error(e)) => return Err(io(e)),
        }
        let mine = format!("pid {}\n", std::process::id());
        file.set_len(0)
            .and_then(|()| file.seek(SeekFrom::Start(0)))
            .and_then(|_| file.write_all(mine.as_bytes()))
            .map_err(io)?;
        Ok(DataLock { _file: file })
    }
}

/// A file as it was when opened: its device and inode.
#[derive(Debug)]
pub struct Identity {
    path: PathBuf,
    id: Option<(u64, u64)>,
    /// Said once in the log; every answer says it again.
    told: AtomicBool,
}

impl Identity {
    /// `path` as it is now.
    pub fn of(path: &Path) -> std::io::Result<Identity> {
        Ok(Identity {
            path: path.to_path_buf(),
            id: id_of(&std::fs::metadata(path)?),
            told: AtomicBool::new(false),
        })
    }

    /// Ok while `path` is still the file that was opened; otherwise how it changed, and
    /// whether this is the first time it is said.
    pub fn check(&self) -> Result<(), (DatabaseGone, bool)> {
        let how = match std::fs::metadata(&self.path) {
            Ok(m) if id_of(&m) == self.id => return Ok(()),
            Ok(_) => Gone::Replaced,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Gone::Removed,
            Err(_) => Gone::Unreadable,
        };
        let first = !self.told.swap(true, Ordering::Relaxed);
        let file = self
            .path
            .file_name()
            .map_or(String::new(), |n| n.to_string_lossy().into_owned());
        Err((DatabaseGone { file, how }, first))
    }
}

/// The database file is no longer the one the server opened: nothing recorded now would
/// outlive a restart.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the database file {file} {how} while the server ran: uploads are refused until the server is restarted (what it recorded since is in the file it opened)")]
pub struct DatabaseGone {
    /// The file's name (no directory: the message may reach a client's log).
    pub file: String,
    /// What became of it.
    pub how: Gone,
}

/// What became of the database file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Gone {
    /// Another file has its name.
    #[error("was replaced")]
    Replaced,
    /// Nothing has its name.
    #[error("was removed")]
    Removed,
    /// Its name cannot be looked at.
    #[error("cannot be looked at")]
    Unreadable,
}

#[cfg(unix)]
fn id_of(m: &std::fs::Metadata) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    Some((m.dev(), m.ino()))
}

#[cfg(not(unix))]
fn id_of(_m: &std::fs::Metadata) -> Option<(u64, u64)> {
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_lock_is_refused_naming_the_holder_and_freed_when_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let first = DataLock::take(dir.path()).unwrap();
        let e = DataLock::take(dir.path()).unwrap_err().to_string();
        assert!(
            e.contains(&format!("hprof-shrink serve (pid {})", std::process::id())),
            "{e}"
        );
        drop(first);
        DataLock::take(dir.path()).unwrap();
    }

    #[test]
    fn a_file_replaced_or_removed_is_noticed_once_in_the_log() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("meta.sqlite");
        std::fs::write(&p, b"a").unwrap();
        let id = Identity::of(&p).unwrap();
        assert!(id.check().is_ok());
        // Replaced by a copy: same name, another file.
        std::fs::write(dir.path().join("copy"), b"a").unwrap();
        std::fs::rename(dir.path().join("copy"), &p).unwrap();
        let (why, first) = id.check().unwrap_err();
        assert_eq!(why.how, Gone::Replaced);
        assert!(
            why.to_string().contains("meta.sqlite was replaced"),
            "{why}"
        );
        assert!(first);
        std::fs::remove_file(&p).unwrap();
        let (why, first) = id.check().unwrap_err();
        assert_eq!(why.how, Gone::Removed);
        assert!(why.to_string().contains("was removed"), "{why}");
        assert!(!first);
    }
}
