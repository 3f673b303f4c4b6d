//! The outbox: a directory of finished zips (and Perfetto heap-graph traces) waiting to
//! be uploaded.
//!
//! - Only complete files are picked up: `*.zip`, `*.pftrace` and `*.perfetto-trace`
//!   regular files whose names do not start with `.` (hprof-shrink's temporary files are
//!   hidden and end in `.hprof-shrink-tmp`). Other programs should put a file in place the
//!   same way: write elsewhere, then rename; [`Outbox::add_trace`] does so for a trace. A
//!   trace is sent as it is, told by its content as `upload` tells it (its name only
//!   gets it listed).
//! - Oldest first (modification time, then name).
//! - Each package (zip or trace) is locked (an OS file lock, `flock` on Unix) while it is
//!   uploaded, so concurrent runs never send the same one; a run finding one locked skips
//!   it. What the drain reports and says counts packages, zips and traces alike.
//! - A package leaves the outbox (moved to `sent/`, or deleted) only after a 2xx. A run killed
//!   between the 2xx and the move leaves it in place and the next run sends the same bytes
//!   again, with the same MD5: delivery is at least once, and the server can deduplicate.
//! - A package the server refuses for good (422: not a package it takes; 413: too large
//!   for it) is moved to `rejected/`, with the server's answer beside it as `NAME.txt`:
//!   sending it again would only get the same answer, on every run.

use std::fs::{self, File, TryLockError};
use std::io;
use std::path::{Path, PathBuf};

use hprof_shrink_core::output::TEMP_SUFFIX;
use tempfile::TempPath;

use super::client::{UploadOutcome, Uploader};
use super::error::UploadError;

/// Where uploaded packages (zips, traces) are moved, inside the outbox.
pub const SENT_DIR: &str = "sent";

/// Where packages the server refused for good are moved, inside the outbox.
pub const REJECTED_DIR: &str = "rejected";

/// Suffix of a zip being written into the outbox, before it is admitted.
pub const INCOMING_SUFFIX: &str = ".hprof-shrink-incoming";

/// The endings of the traces the outbox sends, besides `zip` (compared without case).
pub const TRACE_ENDINGS: [&str; 2] = ["pftrace", "perfetto-trace"];

/// Whether a file named `name` is one the outbox sends when complete: a zip or a trace.
fn sendable(name: &str) -> bool {
    Path::new(name).extension().is_some_and(|e| {
        let e = e.to_string_lossy();
        e.eq_ignore_ascii_case("zip") || TRACE_ENDINGS.iter().any(|t| e.eq_ignore_ascii_case(t))
    })
}

/// What happens to a package (zip or trace) once the server has taken it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum AfterUpload {
    /// Moved to the outbox's `sent/` directory ([`SENT_DIR`]).
    #[default]
    MoveToSent,
    /// Deleted.
    Delete,
}

impl AfterUpload {
    /// `Delete` when asked to delete (`--delete-after-upload`), else `MoveToSent`.
    pub fn from_delete(delete: bool) -> AfterUpload {
        if delete {
            AfterUpload::Delete
        } else {
            AfterUpload::MoveToSent
        }
    }
}

/// A zip the server took.
#[derive(Debug)]
pub struct Sent {
    /// The upload's outcome.
    pub outcome: UploadOutcome,
    /// Where it was moved; `None` when deleted.
    pub moved_to: Option<PathBuf>,
}

/// A zip the server refused for good, moved out of the outbox.
#[derive(Debug)]
pub struct Rejected {
    /// The server's refusal (its status and answer).
    pub error: UploadError,
    /// Where the zip went, and its answer beside it.
    pub moved_to: PathBuf,
    /// The file beside it holding the server's answer.
    pub answer: PathBuf,
}

/// What became of one zip of the outbox.
#[derive(Debug)]
pub enum Drained {
    /// Taken by the server, and moved to `sent/` or deleted.
    Sent(Sent),
    /// Refused for good by the server, and moved to `rejected/`.
    Rejected(Rejected),
    /// Still in the outbox, for the next run.
    Failed(UploadError),
    /// Locked by another run that is uploading it.
    Busy(PathBuf),
}

/// What a drain of the outbox did, zip by zip ([`Drained`] sorted by kind).
#[derive(Debug, Default)]
pub struct DrainReport {
    /// Taken by the server.
    pub sent: Vec<Sent>,
    /// Refused for good, moved to `rejected/`.
    pub rejected: Vec<Rejected>,
    /// Failed, left in the outbox.
    pub failed: Vec<UploadError>,
    /// Locked by another run.
    pub busy: Vec<PathBuf>,
    /// Why the drain stopped before the end, if it did; the packages (zips, traces) it did
    /// not try stay for the next run.
    pub stopped: Option<String>,
    /// The packages the drain did not try because it stopped.
    pub untried: Vec<PathBuf>,
}

impl DrainReport {
    /// How many packages (zips, traces) the drain saw: sent, refused for good, failed,
    /// busy or not tried.
    pub fn total(&self) -> usize {
        self.failed.len()
            + self.sent.len()
            + self.busy.len()
            + self.untried.len()
            + self.rejected.len()
    }

    /// Nothing was left behind: no package failed, was refused for good or went untried (busy
    /// ones are another run's).
    pub fn is_clean(&self) -> bool {
        self.failed.is_empty() && self.untried.is_empty() && self.rejected.is_empty()
    }

    /// The packages left in the outbox for the next run: the failed ones, then those not
    /// tried. (Those refused for good are in `rejected`: they left the outbox.)
    pub fn left_behind(&self) -> impl Iterator<Item = LeftBehind<'_>> {
        let failed = self.failed.iter().map(LeftBehind::Failed);
        failed.chain(self.untried.iter().map(|p| LeftBehind::NotTried(p)))
    }
}

/// A zip a drain left in the outbox; its `Display` names it and, when it helps, why it
/// is still there.
#[derive(Debug, Clone, Copy)]
pub enum LeftBehind<'a> {
    /// Its upload failed (or it went and could not be moved out).
    Failed(&'a UploadError),
    /// The drain stopped before trying it.
    NotTried(&'a Path),
}

impl std::fmt::Display for LeftBehind<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LeftBehind::Failed(UploadError::NotMoved { path, .. }) => {
                write!(f, "{} (uploaded, not moved to {SENT_DIR}/)", path.display())
            }
            LeftBehind::Failed(e) => match e.path() {
                Some(path) => write!(f, "{}", path.display()),
                None => f.write_str("?"),
            },
            LeftBehind::NotTried(path) => write!(f, "{} (not tried)", path.display()),
        }
    }
}

/// Zips in a row that find the server unreachable before a drain stops trying the rest:
/// each would wait out its own retries for the same answer.
pub const UNREACHABLE_IN_A_ROW: usize = 2;

/// A zip being written for the outbox, under a temporary name no drain picks up; see
/// [`Outbox::incoming`].
pub struct Incoming {
    staged: TempPath,
    stem: String,
}

impl Incoming {
    /// Where to write the zip.
    pub fn path(&self) -> &Path {
        &self.staged
    }
}

/// A directory of zips waiting to be uploaded: written into by [`Outbox::incoming`], emptied
/// by [`Outbox::drain`], each zip locked while a run uploads it.
#[derive(Debug, Clone)]
pub struct Outbox {
    dir: PathBuf,
}

enum Lock {
    Held(File),
    Busy,
    /// Moved or deleted by another run since it was listed.
    Gone,
}

impl Outbox {
    /// The outbox in `dir` (nothing is created until a zip is written or sent).
    pub fn new(dir: impl Into<PathBuf>) -> Outbox {
        Outbox { dir: dir.into() }
    }

    /// Its directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The zips and traces waiting, oldest first.
    pub fn pending(&self) -> io::Result<Vec<PathBuf>> {
        let mut found = Vec::new();
        for entry in fs::read_dir(&self.dir)? {
            let entry = entry?;
            let name = entry.file_name();
            let name = name.to_string_lossy();
            if name.starts_with('.')
                || name.ends_with(TEMP_SUFFIX)
                || name.ends_with(INCOMING_SUFFIX)
                || !sendable(&name)
            {
                continue;
            }
            // A file that vanished since the listing is someone else's business.
            let Ok(meta) = entry.metadata() else { continue };
            if !entry.file_type().is_ok_and(|t| t.is_file()) {
                continue;
            }
            let mtime = meta.modified().unwrap_or(std::time::UNIX_EPOCH);
            found.push((mtime, entry.path()));
        }
        found.sort();
        Ok(found.into_iter().map(|(_, p)| p).collect())
    }

    /// Uploads every pending package, oldest first, and moves (or deletes) each one the server
    /// took. A failure does not stop the others. The error is for an unreadable outbox.
    pub fn drain(&self, uploader: &Uploader, after: AfterUpload) -> io::Result<DrainReport> {
        self.drain_with(uploader, after, &mut |_| {})
    }

    /// [`drain`](Self::drain), telling `each` about every package as it is done with.
    pub fn drain_with(
        &self,
        uploader: &Uploader,
        after: AfterUpload,
        each: &mut dyn FnMut(&Drained),
    ) -> io::Result<DrainReport> {
        let mut report = DrainReport::default();
        let mut unreachable_in_a_row = 0;
        let pending = self.pending()?;
        for (i, path) in pending.iter().cloned().enumerate() {
            let stop = if uploader.cancelled() {
                Some("cancelled".to_string())
            } else if uploader.deadline_passed() {
                Some("the --deadline ran out".to_string())
            } else if unreachable_in_a_row >= UNREACHABLE_IN_A_ROW {
                Some(format!(
                    "{unreachable_in_a_row} packages in a row found the server unreachable"
                ))
            } else {
                None
            };
            if let Some(why) = stop {
                report.stopped = Some(why);
                report.untried = pending[i..].to_vec();
                break;
            }
            let result = match lock(&path) {
                Ok(Lock::Gone) => continue,
                Ok(Lock::Busy) => Drained::Busy(path),
                Err(source) => Drained::Failed(UploadError::Io { path, source }),
                Ok(Lock::Held(lock)) => {
                    let r = match uploader.upload(&path) {
                        Err(e) if e.refused_for_good() => match self.reject(&path, &e) {
                            Ok((moved_to, answer)) => Drained::Rejected(Rejected {
                                error: e,
                                moved_to,
                                answer,
                            }),
                            // Not moved: it stays, and is sent again next time.
                            Err(source) => Drained::Failed(UploadError::Io { path, source }),
                        },
                        Err(e) => Drained::Failed(e),
                        Ok(outcome) => match self.finish(&path, after) {
                            Ok(moved_to) => Drained::Sent(Sent { outcome, moved_to }),
                            Err(source) => Drained::Failed(UploadError::NotMoved { path, source }),
                        },
                    };
                    // Released only once the zip has left the outbox.
                    drop(lock);
                    r
                }
            };
            each(&result);
            match &result {
                Drained::Failed(UploadError::Exhausted {
                    unreachable: true, ..
                }) => unreachable_in_a_row += 1,
                Drained::Failed(UploadError::Deadline { .. }) | Drained::Busy(_) => {}
                _ => unreachable_in_a_row = 0,
            }
            match result {
                Drained::Sent(s) => report.sent.push(s),
                Drained::Rejected(r) => report.rejected.push(r),
                Drained::Failed(e) => report.failed.push(e),
                Drained::Busy(p) => report.busy.push(p),
            }
        }
        Ok(report)
    }

    /// Moves a package the server refused for good to `rejected/` (under the first free
    /// name) and writes the server's answer beside it, as `NAME.txt` (`a.zip.txt`,
    /// `t.pftrace.txt`). Returns both paths.
    fn reject(&self, path: &Path, why: &UploadError) -> io::Result<(PathBuf, PathBuf)> {
        let dir = self.dir.join(REJECTED_DIR);
        fs::create_dir_all(&dir)?;
        let target = place(TempPath::try_from_path(path)?, &dir, names_for(path)?)?;
        let mut answer = target.clone().into_os_string();
        answer.push(".txt");
        let answer = PathBuf::from(answer);
        let text = match why {
            UploadError::Rejected { detail, .. } => detail.clone(),
            e => e.to_string(),
        };
        // The zip is out of the outbox whatever becomes of its note.
        let _ = fs::write(&answer, format!("{text}\n"));
        sync_dir(&dir);
        sync_dir(&self.dir);
        Ok((target, answer))
    }

    fn finish(&self, path: &Path, after: AfterUpload) -> io::Result<Option<PathBuf>> {
        match after {
            AfterUpload::Delete => {
                fs::remove_file(path)?;
                sync_dir(&self.dir);
                Ok(None)
            }
            AfterUpload::MoveToSent => {
                let sent = self.dir.join(SENT_DIR);
                fs::create_dir_all(&sent)?;
                let target = place(TempPath::try_from_path(path)?, &sent, names_for(path)?)?;
                sync_dir(&sent);
                sync_dir(&self.dir);
                Ok(Some(target))
            }
        }
    }

    /// A temporary, hidden place in the outbox to write the zip for `input`; hand it to
    /// [`admit`](Self::admit) once complete. Dropped without `admit`, it is removed; left
    /// by a process that died, [`recover`](Self::recover) finds it (its name carries the
    /// writer's process id).
    pub fn incoming(&self, input: &Path) -> io::Result<Incoming> {
        let stem = zip_stem(input);
        // Not TEMP_SUFFIX: that marks temporary files a cleanup may remove once no process
        // holds their lock, and this name holds the finished zip, unlocked, until `admit`.
        let prefix = format!(".{stem}.zip.{}.", std::process::id());
        let mut builder = tempfile::Builder::new();
        builder.prefix(&prefix).suffix(INCOMING_SUFFIX);
        // The mode a new file gets from `cp` (0666 less the umask), kept by the shrink
        // that writes over it and by the rename that admits it.
        #[cfg(unix)]
        builder.permissions(std::os::unix::fs::PermissionsExt::from_mode(0o666));
        let tmp = builder.tempfile_in(&self.dir)?;
        Ok(Incoming {
            staged: tmp.into_temp_path(),
            stem,
        })
    }

    /// Puts a complete zip into the outbox as `STEM.zip`, or `STEM-2.zip`, `STEM-3.zip`...
    /// when that name is taken (an earlier dump of the same name still waiting); never
    /// replaces a file. Returns where it went.
    pub fn admit(&self, incoming: Incoming) -> io::Result<PathBuf> {
        let Incoming { staged, stem } = incoming;
        let names = std::iter::once(format!("{stem}.zip"))
            .chain((2..=10_000u32).map(|n| format!("{stem}-{n}.zip")));
        let target = place(staged, &self.dir, names)?;
        sync_dir(&self.dir);
        Ok(target)
    }

    /// Adds the Perfetto trace at `trace` (a heap dump `ProfilingManager` wrote, say) to
    /// the outbox, as it is: copied under a hidden temporary name no drain picks up,
    /// synced, then renamed to its name (`STEM.pftrace` or `STEM.perfetto-trace`; `-2`,
    /// `-3`... when taken), so a drain sees the whole trace or nothing. The source is left
    /// where it is (it is its writer's). A file that does not start as a trace does (its
    /// first byte, `Trace.packet`'s tag) is refused with an error of kind `InvalidData`
    /// and nothing is written: the server checks the rest (422: moved to `rejected/`).
    /// Returns where it went.
    pub fn add_trace(&self, trace: &Path) -> io::Result<PathBuf> {
        use hprof_shrink_core::kind::FileKind;
        use std::io::{Read, Seek, Write};
        let mut src = hprof_shrink_core::hprof::open_regular(trace)?;
        let mut head = Vec::with_capacity(FileKind::PREFIX_LEN);
        (&mut src)
            .take(FileKind::PREFIX_LEN as u64)
            .read_to_end(&mut head)?;
        if FileKind::of(&head) != FileKind::Trace {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "{}: not a Perfetto trace (its first byte is not 0x0a): the outbox sends \
                     heap-graph traces as they are, and packages",
                    trace.display()
                ),
            ));
        }
        src.rewind()?;
        fs::create_dir_all(&self.dir)?;
        let (stem, ending) = trace_name(trace);
        let prefix = format!(".{stem}.{ending}.{}.", std::process::id());
        let mut builder = tempfile::Builder::new();
        builder.prefix(&prefix).suffix(INCOMING_SUFFIX);
        #[cfg(unix)]
        builder.permissions(std::os::unix::fs::PermissionsExt::from_mode(0o666));
        let mut tmp = builder.tempfile_in(&self.dir)?;
        io::copy(&mut src, tmp.as_file_mut())?;
        tmp.as_file_mut().flush()?;
        tmp.as_file().sync_all()?;
        let names = std::iter::once(format!("{stem}.{ending}"))
            .chain((2..=10_000u32).map(|n| format!("{stem}-{n}.{ending}")));
        let target = place(tmp.into_temp_path(), &self.dir, names)?;
        sync_dir(&self.dir);
        Ok(target)
    }
}

/// A trace's name in the outbox: its file name's stem (leading dots removed, a control
/// character as `_`) and its ending (its own when it is a trace's, else `perfetto-trace`).
fn trace_name(trace: &Path) -> (String, &'static str) {
    let name = trace
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let (stem, ending) = TRACE_ENDINGS
        .iter()
        .find_map(|e| {
            name.strip_suffix(&format!(".{e}"))
                .map(|s| (s.to_string(), *e))
        })
        .unwrap_or((name.clone(), "perfetto-trace"));
    let stem: String = stem
        .trim_start_matches('.')
        .chars()
        .map(|c| if c.is_control() { '_' } else { c })
        .collect();
    (if stem.is_empty() { "heap".into() } else { stem }, ending)
}

/// What [`Outbox::recover`] did with a file a killed run left in the outbox.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Recovered {
    /// A complete package, admitted under this name: it will be uploaded.
    Adopted(PathBuf),
    /// An unfinished file, removed.
    Removed(PathBuf),
}

impl Outbox {
    /// Finds what runs that died left in the outbox: a zip written but never admitted
    /// (killed between the two renames) is admitted if it is a whole package, otherwise
    /// removed. Files of live processes are left alone. (A shrink's own temporary files
    /// are the shrink's to clean: the next shrink into the outbox removes those no live
    /// process holds.)
    pub fn recover(&self) -> io::Result<Vec<Recovered>> {
        let mut done = Vec::new();
        let entries = match fs::read_dir(&self.dir) {
            Ok(e) => e,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(done),
            Err(e) => return Err(e),
        };
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let Some(rest) = name
                .strip_prefix('.')
                .and_then(|n| n.strip_suffix(INCOMING_SUFFIX))
            else {
                continue;
            };
            // `.STEM.zip.PID.XXXXXX.hprof-shrink-incoming`
            let mut parts = rest.rsplitn(3, '.');
            let (_random, pid, stem_zip) = (parts.next(), parts.next(), parts.next());
            let Some(pid) = pid.and_then(|p| p.parse::<u32>().ok()) else {
                continue; // not of our making
            };
            // A trace's copy (`.STEM.pftrace.PID.XXXXXX.…`) whose writer died: whether it
            // is whole cannot be told, and its caller got no answer (it still has the
            // trace), so it goes.
            let trace_copy = stem_zip
                .is_some_and(|s| TRACE_ENDINGS.iter().any(|e| s.ends_with(&format!(".{e}"))));
            let stem = stem_zip.and_then(|s| s.strip_suffix(".zip"));
            if (stem.is_none() && !trace_copy) || process_alive(pid) {
                continue;
            }
            let path = entry.path();
            let Some(stem) = stem.filter(|_| !trace_copy) else {
                fs::remove_file(&path)?;
                done.push(Recovered::Removed(path));
                continue;
            };
            // Whole means it verifies (every entry's CRC, the hprof parses): a crash before
            // the sync may have left a file of the right shape and the wrong bytes.
            let whole = hprof_shrink_core::verify::verify_path(
                &path,
                None,
                None,
                &hprof_shrink_core::Control::default(),
            )
            .is_ok();
            if whole {
                let staged = TempPath::try_from_path(&path)?;
                let placed = self.admit(Incoming {
                    staged,
                    stem: stem.to_string(),
                })?;
                done.push(Recovered::Adopted(placed));
            } else {
                fs::remove_file(&path)?;
                done.push(Recovered::Removed(path));
            }
        }
        done.sort_by(|a, b| format!("{a:?}").cmp(&format!("{b:?}")));
        Ok(done)
    }
}

/// True when a process with this id runs (or may: one we may not signal counts as
/// running). A writer in another PID namespace (a container sharing the volume) cannot be
/// seen from here: such setups should not share an outbox between namespaces.
fn process_alive(pid: u32) -> bool {
    #[cfg(unix)]
    {
        if pid == std::process::id() {
            return true;
        }
        let Ok(pid) = libc::pid_t::try_from(pid) else {
            return false;
        };
        // SAFETY: signal 0 only checks that the process exists.
        let rc = unsafe { libc::kill(pid, 0) };
        // Only "no such process" is dead: a process we may not signal (another user, a
        // SELinux rule) may well be writing.
        rc == 0 || std::io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH)
    }
    #[cfg(not(unix))]
    {
        let _ = pid;
        true
    }
}

/// Opens and locks `path` without waiting, then checks that the locked file is still the
/// one at `path`: another run may have moved it away between the listing and the lock.
fn lock(path: &Path) -> io::Result<Lock> {
    let file = match File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Lock::Gone),
        Err(e) => return Err(e),
    };
    match file.try_lock() {
        Ok(()) => {}
        Err(TryLockError::WouldBlock) => return Ok(Lock::Busy),
        Err(TryLockError::Error(e)) => return Err(e),
    }
    let now = match fs::metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Lock::Gone),
        Err(e) => return Err(e),
    };
    if same_file(&file.metadata()?, &now) {
        Ok(Lock::Held(file))
    } else {
        Ok(Lock::Gone)
    }
}

#[cfg(unix)]
fn same_file(a: &fs::Metadata, b: &fs::Metadata) -> bool {
    use std::os::unix::fs::MetadataExt;
    a.dev() == b.dev() && a.ino() == b.ino()
}

#[cfg(not(unix))]
fn same_file(a: &fs::Metadata, b: &fs::Metadata) -> bool {
    a.len() == b.len() && a.modified().ok() == b.modified().ok()
}

/// The names a zip may take in `sent/` or `rejected/`: its own, then `NAME.2.zip`,
/// `NAME.3.zip`...
fn names_for(path: &Path) -> io::Result<impl Iterator<Item = String>> {
    let name = path
        .file_name()
        .ok_or_else(|| io::Error::other("no file name"))?;
    let name = Path::new(name);
    let stem = name
        .file_stem()
        .unwrap_or_default()
        .to_string_lossy()
        .into_owned();
    let ext = name
        .extension()
        .map(|e| format!(".{}", e.to_string_lossy()))
        .unwrap_or_default();
    Ok(std::iter::once(format!("{stem}{ext}"))
        .chain((2..=10_000u32).map(move |n| format!("{stem}.{n}{ext}"))))
}

/// Moves `file` to the first of `names` in `dir` that is free, never replacing a file (two
/// runs racing for a name cannot overwrite each other's); on failure the file stays.
fn place(
    mut file: TempPath,
    dir: &Path,
    names: impl IntoIterator<Item = String>,
) -> io::Result<PathBuf> {
    for name in names {
        let target = dir.join(&name);
        match file.persist_noclobber(&target) {
            Ok(()) => return Ok(target),
            Err(e) if e.error.kind() == io::ErrorKind::AlreadyExists => file = e.path,
            Err(e) => {
                // Never lose the file: it stays where it was, and the error says where.
                let at = e.path.keep().unwrap_or_default();
                return Err(io::Error::new(
                    e.error.kind(),
                    format!(
                        "{}: {} (the file stays at {})",
                        target.display(),
                        e.error,
                        at.display()
                    ),
                ));
            }
        }
    }
    let at = file.keep().unwrap_or_default();
    Err(io::Error::other(format!(
        "{}: no free name (the file stays at {})",
        dir.display(),
        at.display()
    )))
}

/// The zip's name for an input dump: its file name without `.gz` and `.hprof`, leading
/// dots removed (a hidden zip would never be picked up).
pub fn zip_stem(input: &Path) -> String {
    let name = input
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    // A dump (`x.hprof`, `x.hprof.gz`) or a package already made (`x.zip`): `x`.
    let name = name.strip_suffix(".zip").unwrap_or(&name);
    let name = name.strip_suffix(".gz").unwrap_or(name);
    let name = name.strip_suffix(".hprof").unwrap_or(name);
    let stem: String = name
        .trim_start_matches('.')
        .chars()
        .map(|c| if c.is_control() { '_' } else { c })
        .collect();
    if stem.is_empty() {
        "dump".into()
    } else {
        stem
    }
}

/// Makes renames in `dir` durable; best effort (not every platform can open a directory).
fn sync_dir(dir: &Path) {
    #[cfg(unix)]
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
    #[cfg(not(unix))]
    let _ = dir;
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, SystemTime};

    #[test]
    fn what_a_drain_left_behind_is_named_with_why() {
        let report = DrainReport {
            failed: vec![
                UploadError::Cancelled {
                    path: "out/a.zip".into(),
                },
                UploadError::NotMoved {
                    path: "out/b.zip".into(),
                    source: io::Error::other("read-only"),
                },
                UploadError::Setup("no client".into()),
            ],
            untried: vec!["out/c.zip".into()],
            busy: vec!["out/d.zip".into()],
            ..DrainReport::default()
        };
        let left: Vec<String> = report.left_behind().map(|l| l.to_string()).collect();
        assert_eq!(
            left,
            [
                "out/a.zip",
                "out/b.zip (uploaded, not moved to sent/)",
                "?",
                "out/c.zip (not tried)"
            ]
        );
        assert_eq!(report.total(), 5);
        assert!(!report.is_clean());
        let busy_only = DrainReport {
            busy: vec!["out/d.zip".into()],
            ..DrainReport::default()
        };
        assert!(busy_only.is_clean());
        assert_eq!(AfterUpload::from_delete(true), AfterUpload::Delete);
        assert_eq!(AfterUpload::from_delete(false), AfterUpload::MoveToSent);
    }

    /// Writes `p` with a modification time `age_s` seconds before a fixed instant.
    fn touch(p: &Path, age_s: u64) {
        fs::write(p, b"x").unwrap();
        let t = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000 - age_s);
        File::options()
            .write(true)
            .open(p)
            .unwrap()
            .set_modified(t)
            .unwrap();
    }

    #[test]
    fn pending_is_complete_zips_oldest_first() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        touch(&d.join("new.zip"), 10);
        touch(&d.join("old.zip"), 300);
        touch(&d.join("b-mid.ZIP"), 100);
        touch(&d.join("a-mid.zip"), 100);
        touch(&d.join(".hidden.zip"), 1000);
        touch(&d.join(".x.zip.AbC123.hprof-shrink-tmp"), 1000);
        touch(&d.join("notes.txt"), 1000);
        touch(&d.join(".zip"), 1000);
        fs::create_dir(d.join("dir.zip")).unwrap();
        fs::create_dir(d.join(SENT_DIR)).unwrap();
        touch(&d.join(SENT_DIR).join("done.zip"), 1000);
        let names: Vec<String> = Outbox::new(d)
            .pending()
            .unwrap()
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["old.zip", "a-mid.zip", "b-mid.ZIP", "new.zip"]);
    }

    #[test]
    fn admit_never_replaces_and_stages_out_of_sight() {
        let dir = tempfile::tempdir().unwrap();
        let ob = Outbox::new(dir.path());
        let mut placed = Vec::new();
        for content in [b"one", b"two", b"thr"] {
            let inc = ob.incoming(Path::new("/data/dump.hprof")).unwrap();
            fs::write(inc.path(), content).unwrap();
            assert!(
                ob.pending().unwrap().len() == placed.len(),
                "staged file listed"
            );
            placed.push(ob.admit(inc).unwrap());
        }
        let names: Vec<_> = placed
            .iter()
            .map(|p| p.file_name().unwrap().to_str().unwrap())
            .collect();
        assert_eq!(names, ["dump.zip", "dump-2.zip", "dump-3.zip"]);
        assert_eq!(fs::read(&placed[0]).unwrap(), b"one");
        assert_eq!(fs::read(&placed[2]).unwrap(), b"thr");
        // Nothing else is left behind; an abandoned one is removed when dropped.
        let inc = ob.incoming(Path::new("x.hprof")).unwrap();
        drop(inc);
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 3);
    }

    #[test]
    fn lock_excludes_a_second_holder_and_notices_a_moved_file() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a.zip");
        fs::write(&p, b"zip").unwrap();
        let Lock::Held(first) = lock(&p).unwrap() else {
            panic!("not locked")
        };
        assert!(matches!(lock(&p).unwrap(), Lock::Busy));
        drop(first);
        let Lock::Held(again) = lock(&p).unwrap() else {
            panic!("not released")
        };
        drop(again);
        fs::rename(&p, dir.path().join("b.zip")).unwrap();
        assert!(matches!(lock(&p).unwrap(), Lock::Gone));
    }

    #[test]
    fn names_of_any_script_are_read_without_a_panic() {
        let dir = tempfile::tempdir().unwrap();
        for name in ["café€", "€€.zip", "b.ZIP", "zip"] {
            fs::write(dir.path().join(name), b"").unwrap();
        }
        let mut found: Vec<String> = Outbox::new(dir.path())
            .pending()
            .unwrap()
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        found.sort();
        assert_eq!(found, ["b.ZIP", "€€.zip"]);
    }

    #[test]
    fn moved_to_the_first_free_name_never_over_a_file() {
        let dir = tempfile::tempdir().unwrap();
        let names = || ["a.zip", "a.2.zip", "a.3.zip"].map(String::from);
        let staged = |n: &str| {
            let p = dir.path().join(n);
            fs::write(&p, n).unwrap();
            TempPath::try_from_path(p).unwrap()
        };
        let sent = dir.path().join("sent");
        fs::create_dir(&sent).unwrap();
        assert_eq!(
            place(staged("x"), &sent, names()).unwrap(),
            sent.join("a.zip")
        );
        fs::write(sent.join("a.2.zip"), b"taken").unwrap();
        assert_eq!(
            place(staged("y"), &sent, names()).unwrap(),
            sent.join("a.3.zip")
        );
        assert_eq!(fs::read(sent.join("a.2.zip")).unwrap(), b"taken");
        // No name left: the file stays where it was.
        assert!(place(staged("z"), &sent, names()).is_err());
        assert_eq!(fs::read(dir.path().join("z")).unwrap(), b"z");
    }

    #[test]
    fn zip_stems() {
        assert_eq!(zip_stem(Path::new("/x/heap.hprof")), "heap");
        assert_eq!(zip_stem(Path::new("heap.hprof.gz")), "heap");
        assert_eq!(zip_stem(Path::new("..hidden.hprof")), "hidden");
        assert_eq!(zip_stem(Path::new(".hprof")), "dump");
        assert_eq!(zip_stem(Path::new("a\nb.bin")), "a_b.bin");
    }
}
