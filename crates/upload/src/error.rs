//! Why an upload failed, as one line that names the file. No variant carries the token:
//! every message built from server or library text has been scrubbed of it.

use std::path::{Path, PathBuf};
use std::time::Duration;

#[derive(Debug, thiserror::Error)]
pub enum UploadError {
    /// The configuration cannot work (bad URL, bad header, a CA file without
    /// certificates...): a usage error.
    #[error("{0}")]
    Config(String),

    /// The HTTP client could not be set up.
    #[error("{0}")]
    Setup(String),

    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },

    /// The file is not a package the multipart protocol can describe.
    #[error("{}: not an upload package: {reason}", path.display())]
    NotAPackage { path: PathBuf, reason: String },

    /// A failure that another attempt would repeat: a 4xx other than 408/429, an
    /// untrusted certificate, a refused redirect, the file changing under us. `status`:
    /// the server's answer, when it was one.
    #[error("{}: {detail}", path.display())]
    Rejected {
        path: PathBuf,
        detail: String,
        status: Option<u16>,
    },

    /// Every attempt failed with a transient error.
    #[error("{}: gave up after {attempts} attempts; last: {last}", path.display())]
    Exhausted {
        path: PathBuf,
        attempts: u32,
        last: String,
        /// The last failure was the network's (no connection, no answer in time), not an
        /// HTTP status: the server may be unreachable for the files after this one too.
        unreachable: bool,
    },

    /// The run's `--deadline` came before the upload was done.
    #[error("{}: not uploaded within the --deadline ({attempts} attempts){}", path.display(), last.as_deref().map(|l| format!("; last: {l}")).unwrap_or_default())]
    Deadline {
        path: PathBuf,
        attempts: u32,
        last: Option<String>,
    },

    /// The server asked to wait longer than the policy allows.
    #[error(
        "{}: server asked to retry after {} s, more than the {} s allowed (after {attempts} attempts); last: {last}",
        path.display(), wait.as_secs(), max.as_secs()
    )]
    RetryAfterTooLong {
        path: PathBuf,
        attempts: u32,
        wait: Duration,
        max: Duration,
        last: String,
    },

    /// The run was asked to stop (a signal) before the upload was done; the zip is where
    /// it was.
    #[error("{}: not uploaded: cancelled", path.display())]
    Cancelled { path: PathBuf },

    /// The server took the file (2xx) but it could not then be moved out of the outbox; the
    /// next run uploads the same bytes again.
    #[error("{}: uploaded, but not moved out of the outbox: {source}", path.display())]
    NotMoved {
        path: PathBuf,
        source: std::io::Error,
    },
}

impl UploadError {
    /// The zip this error is about; None for a configuration or set-up error.
    pub fn path(&self) -> Option<&Path> {
        use UploadError::*;
        match self {
            Io { path, .. }
            | NotAPackage { path, .. }
            | Rejected { path, .. }
            | Exhausted { path, .. }
            | Deadline { path, .. }
            | RetryAfterTooLong { path, .. }
            | NotMoved { path, .. }
            | Cancelled { path } => Some(path),
            Config(_) | Setup(_) => None,
        }
    }

    /// The server refused the package for good: it is not a package it takes (422), or
    /// too large for it (413). Sending the same bytes again would get the same answer.
    pub fn refused_for_good(&self) -> bool {
        matches!(
            self,
            UploadError::Rejected {
                status: Some(413 | 422),
                ..
            }
        )
    }
}
