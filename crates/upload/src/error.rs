//! Why an upload failed, as one line that names the file. No variant carries the token:
//! every message built from server or library text has been scrubbed of it.

use std::path::{Path, PathBuf};
use std::time::Duration;

/// Why an upload (of one zip, or of a zip of an outbox) failed.
#[derive(Debug, thiserror::Error)]
pub enum UploadError {
    /// The configuration cannot work (bad URL, bad header, a CA file without
    /// certificates...): a usage error.
    #[error("{0}")]
    Config(String),

    /// The HTTP client could not be set up.
    #[error("{0}")]
    Setup(String),

    /// The zip could not be read (or, in an outbox, locked or moved).
    #[error("{}: {source}", path.display())]
    Io {
        /// The zip.
        path: PathBuf,
        /// The system's error.
        source: std::io::Error,
    },

    /// The file is not a package the multipart protocol can describe.
    #[error("{}: not an upload package: {source}", path.display())]
    NotAPackage {
        /// The zip.
        path: PathBuf,
        /// What the package reader found wrong.
        source: hprof_shrink_core::package::PackageError,
    },

    /// A failure that another attempt would repeat: a 4xx other than 408/429, an
    /// untrusted certificate, a refused redirect, the file changing under us. `status`:
    /// the server's answer, when it was one.
    #[error("{}: {detail}", path.display())]
    Rejected {
        /// The zip.
        path: PathBuf,
        /// What went wrong: the status and an excerpt of the answer, or the client's error.
        detail: String,
        /// The HTTP status, when the server answered.
        status: Option<u16>,
    },

    /// Every attempt failed with a transient error.
    #[error("{}: gave up after {attempts} attempts; last: {last}", path.display())]
    Exhausted {
        /// The zip.
        path: PathBuf,
        /// Attempts made, the first included.
        attempts: u32,
        /// The last attempt's failure.
        last: String,
        /// The last failure was the network's (no connection, no answer in time), not an
        /// HTTP status: the server may be unreachable for the files after this one too.
        unreachable: bool,
    },

    /// The run's `--deadline` came before the upload was done.
    #[error("{}: not uploaded within the --deadline ({attempts} attempts){}", path.display(), last.as_deref().map(|l| format!("; last: {l}")).unwrap_or_default())]
    Deadline {
        /// The zip.
        path: PathBuf,
        /// Attempts made before the deadline.
        attempts: u32,
        /// The last attempt's failure, if one was made.
        last: Option<String>,
    },

    /// The server asked to wait longer than the policy allows.
    #[error(
        "{}: server asked to retry after {} s, more than the {} s allowed (after {attempts} attempts); last: {last}",
        path.display(), wait.as_secs(), max.as_secs()
    )]
    RetryAfterTooLong {
        /// The zip.
        path: PathBuf,
        /// Attempts made.
        attempts: u32,
        /// The wait the server asked for (`Retry-After`).
        wait: Duration,
        /// The longest wait the policy honours ([`RetryPolicy::max_retry_after`]).
        ///
        /// [`RetryPolicy::max_retry_after`]: crate::RetryPolicy::max_retry_after
        max: Duration,
        /// The last attempt's failure.
        last: String,
    },

    /// The run was asked to stop (a signal) before the upload was done; the zip is where
    /// it was.
    #[error("{}: not uploaded: cancelled", path.display())]
    Cancelled {
        /// The zip.
        path: PathBuf,
    },

    /// The server took the file (2xx) but it could not then be moved out of the outbox; the
    /// next run uploads the same bytes again.
    #[error("{}: uploaded, but not moved out of the outbox: {source}", path.display())]
    NotMoved {
        /// The zip, still in the outbox.
        path: PathBuf,
        /// Why the move (or the deletion) failed.
        source: std::io::Error,
    },
}

/// Why the file cannot be sent for an attempt: another attempt would fail alike.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ReopenError {
    /// It cannot be opened or looked at again.
    #[error("reopening: {0}")]
    Io(#[from] std::io::Error),
    /// Its size is not what it was when its MD5 was read.
    #[error("the file changed while being uploaded ({now} bytes, was {was})")]
    Changed { now: u64, was: u64 },
}

/// Why a redirect is not followed. `from` is the URL redirected from, as shown (its
/// secrets redacted).
#[derive(Debug, thiserror::Error)]
pub(crate) enum RedirectError {
    #[error("{status} from {from} without a Location")]
    NoLocation {
        status: reqwest::StatusCode,
        from: String,
    },
    #[error("{status} from {from}: bad Location: {source}")]
    BadLocation {
        status: reqwest::StatusCode,
        from: String,
        source: url::ParseError,
    },
    /// To a scheme other than http and https.
    #[error("{status} from {from}: redirect to a {scheme} URL refused")]
    Scheme {
        status: reqwest::StatusCode,
        from: String,
        scheme: String,
    },
    /// From https to http: what was private would go in the clear.
    #[error("{status} from {from}: redirect from https to http ({to}) refused")]
    Downgrade {
        status: reqwest::StatusCode,
        from: String,
        to: String,
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
