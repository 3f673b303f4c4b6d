//! What every handler shares ([`App`]), and where things live under the data directory
//! ([`Dirs`]).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Notify;

use crate::auth::Access;
use crate::blobs::Blobs;
use crate::budget::Budget;
use crate::conn_limits::Limits;
use crate::store::Store;
use crate::{cache, guard, no_leak, versions};
use hprof_shrink_upload::Log;

/// Where things live under the data directory.
#[derive(Debug, Clone)]
pub struct Dirs {
    root: PathBuf,
}

impl Dirs {
    /// The directories under `root` (nothing is made until the server starts).
    pub fn new(root: &Path) -> Dirs {
        Dirs {
            root: root.to_path_buf(),
        }
    }
    /// The data directory itself.
    pub fn root(&self) -> &Path {
        &self.root
    }
    /// The embedded database's file, `meta.sqlite`.
    pub fn db(&self) -> PathBuf {
        self.root.join("meta.sqlite")
    }
    /// Bodies on their way in.
    pub fn tmp(&self) -> PathBuf {
        self.root.join("tmp")
    }
    /// Analyses under way: each one's directory, its inflated hprof, a package copied
    /// down from a bucket.
    pub fn work(&self) -> PathBuf {
        self.root.join("work")
    }

    pub(crate) fn create(&self) -> std::io::Result<()> {
        // Bodies a killed server was receiving (never answered, so nobody counts on them),
        // and what its analyses left.
        for dir in [self.tmp(), self.work()] {
            std::fs::create_dir_all(&dir)?;
            for e in std::fs::read_dir(&dir)? {
                let e = e?;
                if e.file_type().is_ok_and(|t| t.is_dir()) {
                    let _ = std::fs::remove_dir_all(e.path());
                } else {
                    let _ = std::fs::remove_file(e.path());
                }
            }
        }
        Ok(())
    }
}

/// What every handler shares.
pub struct App {
    /// The metadata: packages, jobs, leaks.
    pub store: Store,
    /// Where packages, analyses and pictures are kept.
    pub blobs: Blobs,
    /// The data directory's places.
    pub dirs: Dirs,
    /// How long a claimed job stays a worker's without being renewed.
    pub lease: Duration,
    /// Who may upload and read.
    pub access: Access,
    /// The largest upload accepted, in bytes.
    pub max_bytes: u64,
    /// Wakes idle workers when a package is queued.
    pub wake: Notify,
    /// The leak groups per filter, each brought up to date with the rows recorded since
    /// it was made ([`cache`]).
    pub leak_cache: cache::Cache,
    /// The per-app-version view, brought up to date change by change ([`versions`]).
    pub versions: versions::Kept,
    /// The no-leak groups, made again when the generation moves ([`no_leak`]).
    pub no_leak: no_leak::Kept,
    /// Each analysis process waits this long before analyzing (tests).
    pub analysis_delay: Duration,
    /// Each new package waits this long between being recorded and being answered (tests).
    pub answer_delay: Duration,
    /// What a package may cost to analyze.
    pub budget: Budget,
    /// `meta.sqlite` as opened (the embedded database only).
    pub db_file: Option<guard::Identity>,
    /// Where informational lines go.
    pub log: Log,
    /// Connections, timeouts and uploads at once, as fitted to the descriptor limit.
    pub limits: Limits,
    /// A place per upload being received ([`Limits::max_uploads`]).
    pub uploads: Arc<tokio::sync::Semaphore>,
    /// Set while this process's workers run a re-analysis: one at a time
    /// ([`crate::jobs`]).
    pub regroup_busy: std::sync::atomic::AtomicBool,
    /// When an idle worker next looks for packages analyzed by an older analyzer.
    pub regroup_scan: std::sync::Mutex<std::time::Instant>,
}

impl App {
    /// Whether what is recorded now will still be there at the next start: false once
    /// the embedded database's file was removed or replaced under the server (said once
    /// in the log). Checked before an upload is answered 2xx.
    pub fn database_intact(&self) -> Result<(), guard::DatabaseGone> {
        let Some(id) = &self.db_file else {
            return Ok(());
        };
        id.check().map_err(|(why, first)| {
            if first {
                (self.log)(&why.to_string());
            }
            why
        })
    }

    /// The server's own directories, which no answer names ([`crate::fault::scrub`]):
    /// `tmp/` before the data directory that holds it, then the package directory.
    pub fn server_dirs(&self) -> Vec<PathBuf> {
        let mut dirs = vec![self.dirs.tmp(), self.dirs.root().to_path_buf()];
        if let Blobs::Dir(root) = &self.blobs {
            dirs.push(root.clone());
        }
        dirs
    }

    /// The bounds of inflating a package's hprof under `tmp/`.
    pub fn unpack(&self) -> hprof_shrink_core::space::Unpack {
        self.budget.unpack(self.max_bytes, &self.dirs.tmp())
    }
}
