//! Why a command failed: one type for the host side, wrapping the core's, the upload's and
//! I/O errors with the file they were about. `main` prints it as one line
//! (`hprof-shrink: error: ...`) and maps it to the exit code: 2 for bad usage, 1 for the rest
//! (the codes `--help` and the README document).

use std::path::PathBuf;

use hprof_shrink_upload::UploadError;

/// What `main` exits with for a [`HostError::Usage`]: clap's own code for bad usage.
pub const EXIT_USAGE: u8 = 2;
/// What `main` exits with for every other failure.
pub const EXIT_FAILURE: u8 = 1;
/// What `analyze`, `diff` and `growth` exit with when `--fail-on` finds what it was asked
/// to fail on (the report is written all the same).
pub const EXIT_GATE: u8 = 5;

#[derive(Debug, thiserror::Error)]
pub enum HostError {
    /// Options clap accepted but the command cannot use (a bad header, a CA file without
    /// certificates...). `main` has clap print it, with the usage line.
    #[error("{0}")]
    Usage(String),

    /// The options name nowhere to put what was asked for (bad usage: `main` has clap
    /// print it, with the usage line).
    #[error("{0}")]
    NoOutput(&'static str),

    /// The dump named is no file, and its name is a slip away from a subcommand's.
    #[error("{word}: no such file; did you mean `{command}`?")]
    DidYouMean { word: String, command: String },

    /// A signal stopped the work (what `main` reports as "cancelled").
    #[error("cancelled")]
    Cancelled,

    /// An output exists and `--force` was not given.
    #[error("{}: already exists (use -f/--force to replace it)", .0.display())]
    Exists(PathBuf),

    /// The `--hprof-out` file exists and is a heap dump: perhaps an original, so no hint to
    /// replace it (`--force` still does, as documented).
    #[error("{}: already exists and is a heap dump; not replacing it (give --hprof-out another name)", .0.display())]
    ExistsHeapDump(PathBuf),

    /// A heap dump where the package should go: never replaced by a package, not even with
    /// `--force`.
    #[error("{} is a heap dump, not a package: not replacing it, with or without --force (give OUT.zip another name)", .0.display())]
    HeapDumpInTheWay(PathBuf),

    /// A heap dump or package where a report (`-o`) goes: never replaced by a report, not
    /// even with `--force` (it may be the only copy of a leak).
    #[error("{} is a heap dump or package: not replacing it with a report, with or without --force (give -o another name)", .0.display())]
    ReportOverDump(PathBuf),

    /// `--format matrix -o DIR` where DIR holds files of the user's.
    #[error("{}: holds other files than a Matrix result ({others}); use -f/--force to write result.json and buffer_contents/ into it, leaving the rest", dir.display())]
    NotMatrixDir { dir: PathBuf, others: String },

    /// `hprof-shrink out.zip leak.hprof`: a zip given as the dump and a heap dump as the
    /// package.
    #[error(
        "the arguments look swapped: {} is a zip and {} a heap dump; the dump comes first: hprof-shrink {} {}",
        input.display(), output.display(), output.display(), input.display()
    )]
    Swapped { input: PathBuf, output: PathBuf },

    /// A batch's inputs cannot be used (no such file, a bad pattern).
    #[error(transparent)]
    Inputs(#[from] crate::batch::InputsError),

    /// The core failed without a file to name beyond its own message.
    #[error(transparent)]
    Core(#[from] hprof_shrink_core::Error),

    /// The core failed on a file; `what` names it and, where it helps, what was being done.
    #[error("{}", prefixed(what, source))]
    CoreOn {
        what: String,
        source: hprof_shrink_core::Error,
    },

    /// A shrink failed; a cut-off dump gets a hint that `--salvage` can take what is there.
    #[error("{}{}", prefixed(&input.display().to_string(), source), salvage_hint(source, *salvaging))]
    Shrink {
        input: PathBuf,
        source: hprof_shrink_core::Error,
        salvaging: bool,
    },

    #[error(transparent)]
    Upload(#[from] UploadError),

    /// An upload of a zip just made failed: the zip is not lost, say where it is.
    #[error("{source} (the zip stays at {})", zip.display())]
    UploadKept { zip: PathBuf, source: UploadError },

    /// Some of the packages (zips, traces) given were not uploaded (each failure was
    /// reported as it happened).
    #[error("{} of {total} packages not uploaded: {}", failed.len(), names(failed))]
    NotUploaded { failed: Vec<PathBuf>, total: usize },

    /// Some packages (zips, traces) of an outbox were not uploaded; they wait there for the next run. `failed`
    /// names each one, with why it is still there when that is not plain failure.
    #[error(
        "{} of {total} packages not uploaded, left in {} for the next run: {}",
        failed.len(), outbox.display(), failed.join(", ")
    )]
    LeftInOutbox {
        outbox: PathBuf,
        failed: Vec<String>,
        total: usize,
    },

    /// Packages of an outbox that the server refused for good (413, 422) were moved to its
    /// `rejected/` directory, each with the server's answer beside it; `left` names those
    /// still waiting for the next run, if any.
    #[error(
        "{} of {total} packages refused for good by the server, moved to {} with its answers: {}{}",
        names.len(), rejected.display(), names.join(", "),
        if left.is_empty() { String::new() } else { format!("; {} left for the next run: {}", left.len(), left.join(", ")) }
    )]
    RefusedForGood {
        rejected: PathBuf,
        names: Vec<String>,
        left: Vec<String>,
        total: usize,
    },

    /// The outbox directory could not be read or written.
    #[error("outbox {}: {source}", dir.display())]
    Outbox {
        dir: PathBuf,
        source: std::io::Error,
    },

    /// A `--baseline` that is not one.
    #[error("--baseline {}: {source}", path.display())]
    Baseline {
        path: PathBuf,
        source: hprof_shrink_analyze::gate::BaselineError,
    },

    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },

    /// `--delete-input` could not remove the input (the output is written and verified).
    #[error("deleting {}: {source}", path.display())]
    Delete {
        path: PathBuf,
        source: std::io::Error,
    },

    #[error(transparent)]
    Json(#[from] serde_json::Error),

    #[error(transparent)]
    Analyze(#[from] hprof_shrink_analyze::AnalyzeError),

    #[error("serve: {0}")]
    Serve(#[from] hprof_shrink_serve::ServeError),

    /// The report of a shrink whose outputs are already in place could not be written.
    #[error("{outputs} written, but not the report: {source}")]
    ReportFailed {
        outputs: String,
        source: Box<HostError>,
    },

    /// A batch that could not run at all (its per-file failures are in its report instead).
    #[error("batch: {0}")]
    Batch(Box<HostError>),
    #[error(transparent)]
    Stdout(#[from] crate::say::StdoutError),
    /// Another process holds a directory this one needs for itself.
    #[error("{}: another hprof-shrink batch is using it; wait for it to finish, or give another directory", dir.display())]
    Busy { dir: PathBuf },
}

impl HostError {
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> HostError {
        HostError::Io {
            path: path.into(),
            source,
        }
    }

    /// `e` as the failure of a whole batch. Bad usage stays what it is, so that it is
    /// reported as usage.
    pub fn in_batch(e: HostError) -> HostError {
        match e {
            HostError::Usage(_) => e,
            e => HostError::Batch(Box::new(e)),
        }
    }

    pub fn exit_code(&self) -> u8 {
        match self {
            HostError::Usage(_)
            | HostError::NoOutput(_)
            | HostError::DidYouMean { .. }
            | HostError::Swapped { .. } => EXIT_USAGE,
            _ => EXIT_FAILURE,
        }
    }
}

/// `what: error`, or the error alone when it already names the file (an I/O error on a
/// path): one line names a path once.
fn prefixed(what: &str, source: &hprof_shrink_core::Error) -> String {
    match source.path() {
        Some(p) if what.ends_with(&p.display().to_string()) || what == p.display().to_string() => {
            source.to_string()
        }
        _ => format!("{what}: {source}"),
    }
}

/// A cut-off dump can still be shrunk: say how.
pub fn salvage_hint(e: &hprof_shrink_core::Error, salvaging: bool) -> &'static str {
    if e.is_cut_off() && !salvaging {
        " (to shrink the part that is there, add --salvage)"
    } else {
        ""
    }
}

fn names(paths: &[PathBuf]) -> String {
    let names: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
    names.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usage_exits_2_even_from_a_batch_the_rest_1() {
        let usage = HostError::in_batch(HostError::Usage("--header takes 'Name: value'".into()));
        assert_eq!(usage.exit_code(), EXIT_USAGE);
        assert_eq!(usage.to_string(), "--header takes 'Name: value'");
        let arg = "x".to_string();
        let inputs = HostError::in_batch(crate::batch::InputsError::NoMatch { arg }.into());
        assert_eq!(inputs.exit_code(), EXIT_FAILURE);
        assert_eq!(inputs.to_string(), "batch: x: no file matches");
    }

    #[test]
    fn not_uploaded_names_the_packages() {
        let e = HostError::NotUploaded {
            failed: vec!["a.zip".into(), "b.zip".into()],
            total: 3,
        };
        assert_eq!(e.to_string(), "2 of 3 packages not uploaded: a.zip, b.zip");
    }
}
