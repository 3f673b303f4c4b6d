//! What the CLI does and says around uploads, for `upload`, `shrink --upload` and `batch`
//! alike: the uploader made from the options, a zip sent, an outbox recovered and drained.
//! The flow itself is the upload crate's ([`Outbox`], [`hprof_shrink_upload::DrainReport`]);
//! this is the printing and the exit errors.

use std::path::Path;

use hprof_shrink_upload::{
    AfterUpload, Drained, Outbox, Recovered, UploadError, UploadOutcome, Uploader, Url,
    REJECTED_DIR,
};

use crate::cli::{self, UploadOpts};
use crate::error::HostError;
use crate::say::say;
use crate::summary;

/// The uploader for `url`; a bad option is a usage error (exit 2).
pub fn uploader(url: Url, opts: &UploadOpts, quiet: bool) -> Result<Uploader, HostError> {
    let cfg = opts
        .config(url, quiet)
        .map_err(|e| HostError::Usage(e.to_string()))?;
    if cfg.insecure {
        say!("hprof-shrink: {}", cli::INSECURE_WARNING);
    }
    match Uploader::new(cfg) {
        Ok(up) => Ok(up),
        Err(UploadError::Config(msg)) => Err(HostError::Usage(msg)),
        Err(e) => Err(e.into()),
    }
}

/// Says that a zip went (unless `quiet`), and where it was moved.
pub fn uploaded(o: &UploadOutcome, moved_to: Option<&Path>, quiet: bool) {
    if quiet {
        return;
    }
    let attempts = match o.attempts {
        1 => String::new(),
        n => format!(" after {n} attempts"),
    };
    let moved = moved_to.map_or(String::new(), |p| format!("; moved to {}", p.display()));
    say!(
        "hprof-shrink: uploaded {} ({} bytes, md5 {}) to {}: {}{attempts} in {:.1} s{moved}",
        o.path.display(),
        summary::n(o.bytes),
        o.md5,
        o.url,
        o.status,
        o.elapsed.as_secs_f64()
    );
}

/// Takes up what killed runs left in the outbox (see [`Outbox::recover`]), saying what.
pub fn recover(outbox: &Outbox, quiet: bool) -> Result<(), HostError> {
    let recovered = outbox.recover().map_err(|source| HostError::Outbox {
        dir: outbox.dir().to_path_buf(),
        source,
    })?;
    for r in recovered {
        match r {
            Recovered::Adopted(p) => say!(
                "hprof-shrink: outbox: a complete zip a killed run had not admitted is now {}",
                p.display()
            ),
            Recovered::Removed(p) if !quiet => say!(
                "hprof-shrink: outbox: removed an unfinished file a killed run left: {}",
                p.display()
            ),
            Recovered::Removed(_) => {}
        }
    }
    Ok(())
}

/// Uploads everything waiting in `outbox`; fails naming the packages (zips, traces) left
/// there.
pub fn drain(
    outbox: &Outbox,
    up: &Uploader,
    after: AfterUpload,
    quiet: bool,
) -> Result<(), HostError> {
    recover(outbox, quiet)?;
    let report = outbox
        .drain_with(up, after, &mut |d| match d {
            Drained::Sent(s) => uploaded(&s.outcome, s.moved_to.as_deref(), quiet),
            Drained::Rejected(r) => say!(
                "hprof-shrink: error: {}; refused for good: moved to {}, the server's answer in {}",
                r.error,
                r.moved_to.display(),
                r.answer.display()
            ),
            Drained::Failed(e) => say!("hprof-shrink: error: {e}"),
            Drained::Busy(p) => say!(
                "hprof-shrink: {}: being uploaded by another run; skipped",
                p.display()
            ),
        })
        .map_err(|source| HostError::Outbox {
            dir: outbox.dir().to_path_buf(),
            source,
        })?;
    if let Some(why) = &report.stopped {
        say!(
            "hprof-shrink: outbox {}: stopped: {why}; {} packages left for the next run",
            outbox.dir().display(),
            report.untried.len()
        );
    }
    let total = report.total();
    if report.is_clean() {
        if !quiet && report.sent.is_empty() && report.busy.is_empty() {
            say!(
                "hprof-shrink: outbox {}: nothing to upload",
                outbox.dir().display()
            );
        }
        return Ok(());
    }
    let failed: Vec<String> = report.left_behind().map(|l| l.to_string()).collect();
    if !report.rejected.is_empty() {
        return Err(HostError::RefusedForGood {
            rejected: outbox.dir().join(REJECTED_DIR),
            names: report
                .rejected
                .iter()
                .map(|r| {
                    r.moved_to
                        .file_name()
                        .map_or(String::new(), |n| n.to_string_lossy().into_owned())
                })
                .collect(),
            left: failed,
            total,
        });
    }
    Err(HostError::LeftInOutbox {
        outbox: outbox.dir().to_path_buf(),
        total,
        failed,
    })
}
