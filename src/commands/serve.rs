//! `hprof-shrink serve`: its arguments made into the server's configuration (the limits
//! checked, the tokens read from their files or the environment), and the start.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use hprof_shrink_serve::{self as serve, Access, Budget, Config, Limits, Secret};

use crate::cli::serve::{
    AnalyzeJobArgs, LimitArgs, ServeArgs, DATABASE_ENV, READ_TOKEN_ENV, UPLOAD_TOKEN_ENV,
};
use crate::error::HostError;
use crate::say::say;

/// A number of seconds a flag gives, within reason.
fn seconds(flag: &str, v: f64) -> Result<Duration, HostError> {
    if v.is_finite() && (0.05..=86_400.0).contains(&v) {
        Ok(Duration::from_secs_f64(v))
    } else {
        Err(HostError::Usage(format!(
            "--{flag} must be between 0.05 and 86400 seconds"
        )))
    }
}

impl LimitArgs {
    fn limits(&self) -> Result<Limits, HostError> {
        for (flag, n) in [
            ("max-connections", self.max_connections),
            (
                "max-unauthenticated-connections",
                self.max_unauthenticated_connections,
            ),
            ("max-uploads", self.max_uploads),
        ] {
            if n == 0 {
                return Err(HostError::Usage(format!("--{flag} must be at least 1")));
            }
        }
        Ok(Limits {
            max_connections: self.max_connections,
            max_unauthenticated: self.max_unauthenticated_connections,
            max_uploads: self.max_uploads,
            header_timeout: seconds("header-timeout", self.header_timeout)?,
            idle_timeout: seconds("idle-timeout", self.idle_timeout)?,
            body_timeout: seconds("body-timeout", self.body_timeout)?,
            body_min_bytes: self.body_min_bytes,
        })
    }

    /// The --public-host names as compared: lowercase, no port or final dot.
    fn hosts(&self) -> Result<Vec<String>, HostError> {
        self.public_host
            .iter()
            .map(|h| {
                let name = serve::auth::host_name(h.trim());
                if name.is_empty() || name.contains(['/', ' ', '@']) {
                    Err(HostError::Usage(format!(
                        "--public-host {h:?} is not a host name"
                    )))
                } else {
                    Ok(name)
                }
            })
            .collect()
    }
}

/// A token from its file, or else from the environment.
fn token(file: Option<&PathBuf>, env: &str) -> Result<Option<Secret>, HostError> {
    match file {
        Some(f) => {
            let text = std::fs::read_to_string(f).map_err(|e| HostError::io(f, e))?;
            match Secret::new(text) {
                Some(s) => Ok(Some(s)),
                None => Err(HostError::Usage(format!("{} is empty", f.display()))),
            }
        }
        None => Ok(std::env::var(env).ok().and_then(Secret::new)),
    }
}

pub fn run(a: ServeArgs) -> Result<(), HostError> {
    let access = Access {
        upload: token(a.upload_token_file.as_ref(), UPLOAD_TOKEN_ENV)?,
        read: token(a.read_token_file.as_ref(), READ_TOKEN_ENV)?,
        public_read: a.public_read,
        public_hosts: a.limits.hosts()?,
    };
    let limits = a.limits.limits()?;
    if !a.worker && access.upload.is_none() {
        say!(
            "hprof-shrink: warning: no upload token ({UPLOAD_TOKEN_ENV} or --upload-token-file): anyone who reaches {} can upload",
            a.listen
        );
    }
    if !a.worker
        && access.public_read
        && !a.listen.ip().is_loopback()
        && access.public_hosts.is_empty()
    {
        say!("hprof-shrink: note: --public-read answers requests without a token under an IP address or localhost only; give --public-host NAME for each DNS name readers use");
    }
    if !a.worker && access.read.is_none() && !access.public_read {
        say!("hprof-shrink: warning: no read token ({READ_TOKEN_ENV} or --read-token-file) and no --public-read: nobody can read the pages");
    }
    let database = a
        .database
        .or_else(|| std::env::var(DATABASE_ENV).ok().filter(|v| !v.is_empty()));
    if a.worker && database.is_none() {
        return Err(HostError::Usage(format!(
            "serve --worker needs a shared database: --database postgres://... or {DATABASE_ENV}"
        )));
    }
    if a.requeue_failed {
        let n = serve::requeue_failed(&a.data, database.as_deref())?;
        say!("hprof-shrink: {n} failed job(s) queued again");
        return Ok(());
    }
    if !(a.lease_seconds.is_finite() && (0.3..=86_400.0).contains(&a.lease_seconds)) {
        return Err(HostError::Usage(
            "--lease-seconds must be between 0.3 and 86400".into(),
        ));
    }
    for (flag, v) in [
        ("--analysis-seconds", a.analysis_seconds),
        ("--retry-seconds", a.retry_seconds),
    ] {
        if !(v.is_finite() && (0.001..=86_400.0).contains(&v)) {
            return Err(HostError::Usage(format!(
                "{flag} must be between 0.001 and 86400"
            )));
        }
    }
    if a.max_inflated_ratio == 0 {
        return Err(HostError::Usage(
            "--max-inflated-ratio must be at least 1".into(),
        ));
    }
    // The analyses run in this very program, as `__analyze-job`.
    let analyzer = std::env::current_exe().map_err(|e| {
        HostError::Usage(format!(
            "cannot tell where this program is, to run analyses: {e}"
        ))
    })?;
    let budget = Budget {
        analysis_memory: a.analysis_memory,
        analysis_time: Duration::from_secs_f64(a.analysis_seconds),
        inflated_ratio: a.max_inflated_ratio,
        keep_free: a.keep_free,
        backoff: Duration::from_secs_f64(a.retry_seconds),
        ..Budget::new(analyzer)
    };
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let config = Config {
        data: a.data,
        listen: (!a.worker).then_some(a.listen),
        database,
        store: a.store,
        lease: Duration::from_secs_f64(a.lease_seconds),
        access,
        max_bytes: a.max_bytes,
        workers: a.workers.unwrap_or((cores / 2).max(1)),
        analysis_delay: Duration::from_millis(a.analysis_delay_ms),
        answer_delay: Duration::from_millis(a.answer_delay_ms),
        budget,
        log: Arc::new(|m: &str| say!("hprof-shrink: {m}")),
        limits,
    };
    serve::run(config)?;
    Ok(())
}

pub fn analyze_job(a: AnalyzeJobArgs) -> std::process::ExitCode {
    std::process::ExitCode::from(serve::background::run_job(&a.dir))
}
