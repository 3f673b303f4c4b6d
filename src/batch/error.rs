//! Why one input of a batch has no package: the entry's `error`, one line that names the
//! file where it is about one; and why a batch's inputs cannot be used at all.

use std::path::{Path, PathBuf};

/// What failed while one input was made into its package.
#[derive(Debug, thiserror::Error)]
pub enum BatchError {
    /// A directory or file of the output could not be made or read.
    #[error("{}: {source}", path.display())]
    Io {
        /// The directory or file.
        path: PathBuf,
        /// The system's error.
        source: std::io::Error,
    },

    /// The package's path is the input itself.
    #[error("the output would overwrite the input (choose another --out-dir)")]
    OverwritesInput,

    /// The input could not be opened or its identity read.
    #[error("{}: cannot read it: {source}", path.display())]
    Unreadable {
        /// The input.
        path: PathBuf,
        /// The system's error.
        source: std::io::Error,
    },

    /// The package in the way is an earlier dump's, still waiting for its hand-off.
    #[error(
        "{} holds the package of an earlier dump, never delivered ({why}); it is not replaced: send it first (`hprof-shrink upload {}`) or move it away",
        package.display(),
        package.display()
    )]
    Undelivered {
        /// The package.
        package: PathBuf,
        /// Why the hand-off failed again.
        why: String,
    },

    /// The input could not be unpacked (a .gz or a zip that holds the dump).
    #[error(transparent)]
    Prepare(#[from] super::prepare::PrepareError),

    /// The shrink failed; `hint` says what may help (`--salvage`), or is empty.
    #[error("{source}{hint}")]
    Shrink {
        /// The core's error.
        source: hprof_shrink_core::Error,
        /// Advice appended to the message, or "".
        hint: &'static str,
    },

    /// The package's state file could not be written.
    #[error("recording the state of {}: {source} (a re-run will redo it)", package.display())]
    State {
        /// The package.
        package: PathBuf,
        /// The system's error.
        source: std::io::Error,
    },
}

impl BatchError {
    pub(crate) fn io(path: &Path, source: std::io::Error) -> BatchError {
        BatchError::Io {
            path: path.to_path_buf(),
            source,
        }
    }
}

/// Why a batch's inputs cannot be used: the whole batch stops before any is shrunk.
#[derive(Debug, thiserror::Error)]
pub enum InputsError {
    /// An argument is no file or directory, and no pattern.
    #[error("{arg}: no such file or directory")]
    NoSuchPath { arg: String },

    /// A pattern that is not one (the argument, why).
    #[error("{0}: {1}")]
    Pattern(String, #[source] glob::PatternError),

    /// A path a pattern (the argument) matched could not be read.
    #[error("{0}: {1}")]
    Glob(String, #[source] glob::GlobError),

    /// A pattern that matches no file.
    #[error("{arg}: no file matches")]
    NoMatch { arg: String },

    /// `--report` names an input, which it would replace.
    #[error("--report {} is the input {}: it would be replaced", report.display(), input.display())]
    ReportIsInput { report: PathBuf, input: PathBuf },

    /// `--report` names a package of this batch, which it would replace.
    #[error("--report {} is the package {}: it would be replaced", report.display(), package.display())]
    ReportIsPackage { report: PathBuf, package: PathBuf },
}
