//! Analyses run in a child process of the same binary (`hprof-shrink __analyze-job DIR`),
//! one per job, isolated from the process that receives uploads: an allocation failure,
//! an OOM kill, a crash or a hang there fails one attempt of one job, nothing else.
//!
//! The child is held to its [`Budget`]: its memory by RLIMIT_DATA (the heap and thread
//! stacks; not RLIMIT_AS, which would count the mapped dump, the inflated temporary file
//! and every reserved but unused arena), its time by the parent, which kills it past
//! [`Budget::analysis_time`]. It runs at the lowest scheduling priority: a client waiting
//! for its upload's answer does not wait behind an analysis nobody is waiting for;
//! analyses take what the receiving leaves, and all of it when nothing is received. It is
//! killed if the server dies (Linux: the parent-death signal), in a process group of its
//! own (a Ctrl-C at the server's terminal is the server's to handle), and gets none of the
//! server's environment (tokens, database and store credentials).
//!
//! The directory: the parent writes `job.json` ([`Job`]); the child writes `analysis.json`
//! (the analysis as `analyze --format json`), `pictures/<i>.png` with `pictures.json`
//! (their names, in order), or `error.json` when the analysis failed ([`EXIT_FAILED`]).

use std::io;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use hprof_shrink_core::space::Unpack;
use hprof_shrink_core::Control;
use serde::{Deserialize, Serialize};
use tokio::io::AsyncReadExt;

use super::budget::Budget;
use hprof_shrink_analyze::{self as analyze, Analysis, AnalyzeError, Mapping, Options};

/// Niceness of the analysis processes: the least favoured there is.
pub const NICE: i32 = 19;

/// The hidden subcommand the child runs.
pub const SUBCOMMAND: &str = "__analyze-job";

/// The child's exit code when the analysis failed and `error.json` says why.
pub const EXIT_FAILED: u8 = 3;

/// The largest analysis a server takes back from its child (the JSON): it is read into
/// the receiving process's memory to be recorded.
pub const MAX_ANALYSIS_BYTES: u64 = 64 << 20;

const JOB: &str = "job.json";
const ANALYSIS: &str = "analysis.json";
const PICTURES: &str = "pictures";
const PICTURE_NAMES: &str = "pictures.json";
const ERROR: &str = "error.json";

/// The end of the child's stderr kept to say why it died.
const STDERR_TAIL: usize = 4096;

/// What the child is asked to do.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Job {
    /// The package, a local file.
    pub package: PathBuf,
    /// Where its hprof is inflated, within `max_inflated` bytes and leaving `keep_free`.
    pub tmp: PathBuf,
    /// The most the inflated hprof may take, in bytes.
    pub max_inflated: u64,
    /// Free disk space the inflating leaves, in bytes.
    pub keep_free: u64,
    /// A wait before the analysis (tests: to kill the server, or the child, mid-job).
    pub delay_ms: u64,
    /// The R8/ProGuard mapping of the package's app version, a local file: read with
    /// the analyzer's reader; one that does not read is left out with a note, never
    /// failing the analysis.
    #[serde(default)]
    pub mapping: Option<PathBuf>,
}

#[derive(Debug, Serialize, Deserialize)]
struct Failed {
    /// A passing fault (I/O, a full disk) rather than the package's.
    passing: bool,
    error: String,
}

/// Why an attempt failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// The package's: another attempt would fail the same way (it does not analyze, or
    /// needs more than its budget).
    Package(String),
    /// A passing fault (I/O, a full disk, the store, a crashed process): worth another
    /// attempt.
    Passing(String),
}

/// A finished analysis, as its child left it in its directory.
pub struct Analyzed {
    /// The analysis JSON, as stored.
    pub json: Vec<u8>,
    /// The analysis, read back.
    pub analysis: Analysis,
    /// The pictures' names (the bitmap groups' `image`), in the order of their files.
    pub pictures: Vec<String>,
    dir: PathBuf,
}

impl Analyzed {
    /// The picture named `name`, read from its file.
    pub fn picture(&self, name: &str) -> io::Result<Option<Vec<u8>>> {
        match self.pictures.iter().position(|n| n == name) {
            Some(i) => std::fs::read(picture_file(&self.dir, i)).map(Some),
            None => Ok(None),
        }
    }
}

fn picture_file(dir: &Path, i: usize) -> PathBuf {
    dir.join(PICTURES).join(format!("{i}.png"))
}

/// Analyzes `job.package` in a child process held to `budget`, in `dir` (an empty
/// directory of its own, which the caller removes).
pub async fn analyze(budget: &Budget, job: &Job, dir: &Path) -> Result<Analyzed, Failure> {
    let passing = |what: &str, e: &dyn std::fmt::Display| Failure::Passing(format!("{what}: {e}"));
    let spec = serde_json::to_vec(job).map_err(|e| passing("the job", &e))?;
    tokio::fs::write(dir.join(JOB), spec)
        .await
        .map_err(|e| passing("cannot write the analysis's job file", &e))?;
    let mut cmd = tokio::process::Command::new(&budget.analyzer);
    cmd.arg(SUBCOMMAND)
        .arg(dir)
        .env_clear()
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    // Only what running a program needs; a backtrace would allocate while memory is
    // what ran out (and can deadlock in the allocation-failure handler).
    for v in ["PATH", "LD_LIBRARY_PATH", "LANG", "LC_ALL", "TZ"] {
        if let Some(value) = std::env::var_os(v) {
            cmd.env(v, value);
        }
    }
    cmd.env("RUST_BACKTRACE", "0");
    #[cfg(unix)]
    limit(&mut cmd, budget.analysis_memory);
    let mut child = cmd.spawn().map_err(|e| {
        passing(
            &format!(
                "cannot start the analysis process {}",
                budget.analyzer.display()
            ),
            &e,
        )
    })?;
    let tail = child.stderr.take().map(|mut err| {
        tokio::spawn(async move {
            let mut kept: Vec<u8> = Vec::new();
            let mut buf = [0u8; 1024];
            while let Ok(n) = err.read(&mut buf).await {
                if n == 0 {
                    break;
                }
                kept.extend_from_slice(&buf[..n]);
                if kept.len() > STDERR_TAIL {
                    kept.drain(..kept.len() - STDERR_TAIL);
                }
            }
            String::from_utf8_lossy(&kept).into_owned()
        })
    });
    let status = match tokio::time::timeout(budget.analysis_time, child.wait()).await {
        Ok(status) => status.map_err(|e| passing("waiting for the analysis process", &e))?,
        Err(_) => {
            let _ = child.start_kill();
            let _ = child.wait().await;
            return Err(Failure::Package(format!(
                "the analysis took longer than its budget of {} (--analysis-seconds) and was stopped",
                seconds(budget.analysis_time)
            )));
        }
    };
    let stderr = match tail {
        Some(t) => t.await.unwrap_or_default(),
        None => String::new(),
    };
    if status.success() {
        return collect(dir).await;
    }
    if status.code() == Some(EXIT_FAILED.into()) {
        if let Ok(bytes) = tokio::fs::read(dir.join(ERROR)).await {
            if let Ok(f) = serde_json::from_slice::<Failed>(&bytes) {
                return Err(if f.passing {
                    Failure::Passing(f.error)
                } else {
                    Failure::Package(f.error)
                });
            }
        }
    }
    Err(died(&status, &stderr, budget))
}

/// Why a child that did not finish died: its memory budget, or a crash (a passing fault:
/// another attempt may well succeed, and a package that kills it every time is failed
/// after its last attempt).
fn died(status: &std::process::ExitStatus, stderr: &str, budget: &Budget) -> Failure {
    if ran_out_of_memory(stderr) {
        return Failure::Package(format!(
            "the analysis needed more memory than its budget of {} MiB (--analysis-memory)",
            budget.analysis_memory >> 20
        ));
    }
    let how = match status.code() {
        Some(code) => format!("exited with code {code}"),
        None => signal_of(status),
    };
    let last = stderr
        .lines()
        .rev()
        .map(str::trim)
        .find(|l| !l.is_empty() && !l.starts_with("note: run with"))
        .map(|l| {
            let l: String = l.chars().filter(|c| !c.is_control()).take(300).collect();
            format!(": {l}")
        })
        .unwrap_or_default();
    Failure::Passing(format!("the analysis process crashed ({how}){last}"))
}

/// What the allocator and the system say when a process runs out of memory.
fn ran_out_of_memory(stderr: &str) -> bool {
    stderr.contains("memory allocation of") || stderr.contains("Cannot allocate memory")
}

#[cfg(unix)]
fn signal_of(status: &std::process::ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match status.signal() {
        Some(n) => {
            let name = match n {
                libc::SIGKILL => " SIGKILL: killed by the system, perhaps out of memory",
                libc::SIGSEGV => " SIGSEGV",
                libc::SIGBUS => " SIGBUS",
                libc::SIGABRT => " SIGABRT",
                libc::SIGILL => " SIGILL",
                libc::SIGFPE => " SIGFPE",
                libc::SIGTERM => " SIGTERM",
                _ => "",
            };
            format!("signal {n}{name}")
        }
        None => "no exit code".into(),
    }
}

#[cfg(not(unix))]
fn signal_of(_status: &std::process::ExitStatus) -> String {
    "no exit code".into()
}

fn seconds(d: Duration) -> String {
    format!("{} s", d.as_secs_f64())
}

/// The child's results.
async fn collect(dir: &Path) -> Result<Analyzed, Failure> {
    let path = dir.join(ANALYSIS);
    let broken = |e: &dyn std::fmt::Display| {
        Failure::Passing(format!(
            "the analysis process left no readable analysis: {e}"
        ))
    };
    let len = tokio::fs::metadata(&path)
        .await
        .map_err(|e| broken(&e))?
        .len();
    if len > MAX_ANALYSIS_BYTES {
        return Err(Failure::Package(format!(
            "the analysis is {len} bytes of JSON, more than the {MAX_ANALYSIS_BYTES} a server records"
        )));
    }
    let json = tokio::fs::read(&path).await.map_err(|e| broken(&e))?;
    let names = tokio::fs::read(dir.join(PICTURE_NAMES))
        .await
        .map_err(|e| broken(&e))?;
    let dir = dir.to_path_buf();
    // Parsed off the async threads: it can be tens of megabytes.
    tokio::task::spawn_blocking(move || {
        let analysis: Analysis = serde_json::from_slice(&json).map_err(|e| broken(&e))?;
        let pictures: Vec<String> = serde_json::from_slice(&names).map_err(|e| broken(&e))?;
        Ok(Analyzed {
            json,
            analysis,
            pictures,
            dir,
        })
    })
    .await
    .map_err(|e| broken(&e))?
}

/// Limits the child, between fork and exec: its memory, its priority, its life.
#[cfg(unix)]
fn limit(cmd: &mut tokio::process::Command, memory: u64) {
    #[cfg(target_os = "linux")]
    let parent = std::process::id() as libc::pid_t;
    // Within the server's own hard limit (`ulimit -d`, a service manager's), which the
    // child could not raise: asking for more would fail every analysis.
    let mut own = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes into the struct given.
    let memory = if unsafe { libc::getrlimit(libc::RLIMIT_DATA, &mut own) } == 0 {
        (memory as libc::rlim_t).min(own.rlim_max)
    } else {
        memory as libc::rlim_t
    };
    cmd.process_group(0);
    // SAFETY: only async-signal-safe calls between fork and exec (setrlimit, setpriority,
    // prctl, getppid, _exit), on values copied in; no allocation.
    unsafe {
        cmd.pre_exec(move || {
            let lim = libc::rlimit {
                rlim_cur: memory,
                rlim_max: memory,
            };
            if libc::setrlimit(libc::RLIMIT_DATA, &lim) != 0 {
                return Err(io::Error::last_os_error());
            }
            // A failure leaves it at the server's priority: slower uploads beside it,
            // nothing worse.
            libc::setpriority(libc::PRIO_PROCESS, 0, NICE);
            #[cfg(target_os = "linux")]
            {
                // Killed with the server (even by SIGKILL), not left running unowned;
                // a server that died before this line has already left it.
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong);
                if libc::getppid() != parent {
                    libc::_exit(1);
                }
            }
            Ok(())
        });
    }
}

/// The child: `hprof-shrink __analyze-job DIR`. Analyzes the job in `DIR/job.json` and
/// leaves the results there; the exit code is 0, or [`EXIT_FAILED`] with `error.json`.
pub fn run_job(dir: &Path) -> u8 {
    let failed = |passing: bool, error: String| -> u8 {
        let f = Failed { passing, error };
        match serde_json::to_vec(&f)
            .map_err(io::Error::other)
            .and_then(|b| std::fs::write(dir.join(ERROR), b))
        {
            Ok(()) => EXIT_FAILED,
            Err(_) => 1,
        }
    };
    let job: Job = match std::fs::read(dir.join(JOB))
        .map_err(|e| e.to_string())
        .and_then(|b| serde_json::from_slice(&b).map_err(|e| e.to_string()))
    {
        Ok(j) => j,
        Err(e) => return failed(true, format!("the analysis's job file: {e}")),
    };
    if job.delay_ms > 0 {
        std::thread::sleep(Duration::from_millis(job.delay_ms));
    }
    let mut notes = Vec::new();
    let mapping = job.mapping.as_deref().and_then(|m| match Mapping::read(m) {
        Ok(m) => Some(m),
        Err(e) => {
            notes.push(format!(
                "the app version's mapping was not used (names are as the dump has them): {}",
                mapping_error(&e)
            ));
            None
        }
    });
    let options = Options {
        pictures: true,
        mapping,
        ..Options::default()
    };
    let unpack = Unpack {
        max_bytes: Some(job.max_inflated),
        keep_free: job.keep_free,
        dir: Some(job.tmp.clone()),
    };
    let mut outcome =
        match analyze::analyze_path_within(&job.package, &options, &unpack, &Control::default()) {
            Ok(o) => o,
            Err(e) => return failed(is_passing(&e), e.to_string()),
        };
    outcome.analysis.notes.extend(notes);
    match write_results(dir, &outcome) {
        Ok(()) => 0,
        Err(e) => failed(true, format!("cannot write the analysis: {e}")),
    }
}

/// Why a mapping did not read, without the local path it was read from (the server's).
fn mapping_error(e: &AnalyzeError) -> String {
    match e {
        AnalyzeError::Mapping { line, what, .. } => format!("line {line}: {what}"),
        AnalyzeError::MappingTooLarge { bytes, max, .. } => {
            format!("{bytes} bytes, over the limit of {max}")
        }
        AnalyzeError::Io { source, .. } if source.kind() == io::ErrorKind::InvalidData => {
            "not UTF-8 text".into()
        }
        AnalyzeError::Io { source, .. } => source.to_string(),
        e => e.to_string(),
    }
}

/// A fault of the machine (reading, writing, a full disk), not of the package; a package
/// inflating past its limit is the package's.
fn is_passing(e: &AnalyzeError) -> bool {
    match e {
        AnalyzeError::Io { source, .. } => !hprof_shrink_core::space::is_past_limit(source),
        AnalyzeError::Cancelled => true,
        _ => false,
    }
}

fn write_results(dir: &Path, outcome: &analyze::Outcome) -> io::Result<()> {
    std::fs::create_dir_all(dir.join(PICTURES))?;
    let mut names = Vec::with_capacity(outcome.pictures.len());
    for (i, (name, png)) in outcome.pictures.iter().enumerate() {
        std::fs::write(picture_file(dir, i), png)?;
        names.push(name.clone());
    }
    std::fs::write(dir.join(PICTURE_NAMES), serde_json::to_vec(&names)?)?;
    // Last: its presence is the whole result's.
    std::fs::write(
        dir.join(ANALYSIS),
        analyze::render::json(&outcome.analysis).into_bytes(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn out_of_memory_is_told_from_a_crash() {
        let b = Budget::new(PathBuf::from("x"));
        #[cfg(unix)]
        let abort = {
            use std::os::unix::process::ExitStatusExt;
            std::process::ExitStatus::from_raw(libc::SIGABRT)
        };
        #[cfg(unix)]
        {
            let f = died(
                &abort,
                "memory allocation of 8000012 bytes failed\nnote: run with `RUST_BACKTRACE=1`",
                &b,
            );
            assert_eq!(
                f,
                Failure::Package(
                    "the analysis needed more memory than its budget of 4096 MiB (--analysis-memory)"
                        .into()
                )
            );
            let f = died(&abort, "thread 'main' panicked at x.rs:1:1:\nboom\n", &b);
            assert_eq!(
                f,
                Failure::Passing("the analysis process crashed (signal 6 SIGABRT): boom".into())
            );
        }
    }
}
