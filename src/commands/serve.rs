//! `hprof-shrink serve`: its arguments, where its tokens come from, and the start.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use clap::Args;
use hprof_shrink_serve::{self as serve, Access, Config, Secret};

use crate::error::HostError;
use crate::say::say;

pub const UPLOAD_TOKEN_ENV: &str = "HPROF_SHRINK_UPLOAD_TOKEN";
pub const READ_TOKEN_ENV: &str = "HPROF_SHRINK_READ_TOKEN";
pub const DATABASE_ENV: &str = "HPROF_SHRINK_DATABASE_URL";

pub const ABOUT: &str = "\
Receives packages as `hprof-shrink upload` sends them (POST /api/packages, multipart; PUT \
/api/packages/NAME.zip with Content-MD5), checks each body's MD5 and verifies the package \
before answering 2xx, stores it under DIR and records it in DIR/meta.sqlite. The same \
package sent twice is one record. Packages are analyzed in the background; leaks are \
grouped by signature across packages, with the SDK versions, manufacturers and app versions \
(extra.info appVersion) they were seen on. Pages under /, JSON under /api/.

Tokens are never given on the command line: the upload token comes from \
HPROF_SHRINK_UPLOAD_TOKEN or --upload-token-file (clients send it as `Authorization: \
Bearer`, which `upload` does with HPROF_SHRINK_TOKEN), the read token from \
HPROF_SHRINK_READ_TOKEN or --read-token-file (a browser asks for it as a password).

Beyond one machine: --database postgres://... (or HPROF_SHRINK_DATABASE_URL) for the \
metadata and --store s3://BUCKET/PREFIX for the packages; then several `serve` processes \
take uploads and serve pages, and `serve --worker` processes only analyze, each job claimed \
under a lease (--lease-seconds) that a killed worker lets run out.";

pub const AFTER: &str = "\
Example:
  HPROF_SHRINK_UPLOAD_TOKEN=u HPROF_SHRINK_READ_TOKEN=r hprof-shrink serve --data /srv/heaps
  HPROF_SHRINK_TOKEN=u hprof-shrink upload --outbox queue/ --url http://HOST:8080/api/packages

  HPROF_SHRINK_DATABASE_URL=postgres://heaps@db/heaps AWS_REGION=eu-west-1 \\
    hprof-shrink serve --data /var/tmp/heaps --store s3://heap-dumps/prod --workers 0
  HPROF_SHRINK_DATABASE_URL=postgres://heaps@db/heaps hprof-shrink serve --worker \\
    --data /var/tmp/heaps --store s3://heap-dumps/prod

Runs until SIGINT or SIGTERM (the packages being analyzed are finished first; a kill leaves
them to be analyzed again: at the next start with the embedded database, by any worker once
the lease runs out with PostgreSQL).";

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// The data directory: meta.sqlite, packages/, analyses/, pictures/ (made if missing);
    /// with --database and --store only tmp/ (give each process its own).
    #[arg(long, value_name = "DIR")]
    pub data: PathBuf,

    /// PostgreSQL for the metadata, shared by several processes
    /// (postgres://USER@HOST[:PORT]/DB; the password from PGPASSWORD or ~/.pgpass, not the
    /// command line) [default: HPROF_SHRINK_DATABASE_URL, else SQLite in --data].
    #[arg(long, value_name = "URL")]
    pub database: Option<String>,

    /// An S3 bucket for packages, analyses and pictures (s3://BUCKET[/PREFIX]; endpoint,
    /// region and credentials from the AWS_* environment variables) [default: --data].
    #[arg(long, value_name = "URL")]
    pub store: Option<String>,

    /// Analyze only: no listener, just --workers claiming jobs from --database.
    #[arg(long, conflicts_with = "listen")]
    pub worker: bool,

    /// How long a claimed job stays its worker's without a renewal (renewed every third of
    /// it): a killed worker's job is taken up by another this long after.
    #[arg(long, value_name = "SECONDS", default_value_t = serve::DEFAULT_LEASE.as_secs_f64())]
    pub lease_seconds: f64,

    /// The address to listen on (port 0: any free port, printed at start).
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:8080")]
    pub listen: SocketAddr,

    /// The upload token, read from this file (instead of HPROF_SHRINK_UPLOAD_TOKEN).
    #[arg(long, value_name = "FILE")]
    pub upload_token_file: Option<PathBuf>,

    /// The read token, read from this file (instead of HPROF_SHRINK_READ_TOKEN).
    #[arg(long, value_name = "FILE")]
    pub read_token_file: Option<PathBuf>,

    /// Anyone who reaches the server may read the pages and the API (a trusted network).
    #[arg(long)]
    pub public_read: bool,

    /// The largest package taken, in bytes; larger ones are refused with 413.
    #[arg(long, value_name = "BYTES", default_value_t = serve::DEFAULT_MAX_BYTES)]
    pub max_bytes: u64,

    /// Packages analyzed at once (0: receive only) [default: half the cores, at least 1].
    #[arg(long, value_name = "N")]
    pub workers: Option<usize>,

    /// Each analysis waits this long after taking its package; for tests.
    #[arg(long, hide = true, default_value_t = 0, value_name = "MS")]
    pub analysis_delay_ms: u64,

    /// Each new package waits this long between being recorded and being answered; for
    /// tests.
    #[arg(long, hide = true, default_value_t = 0, value_name = "MS")]
    pub answer_delay_ms: u64,
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
    };
    if !a.worker && access.upload.is_none() {
        say!(
            "hprof-shrink: warning: no upload token ({UPLOAD_TOKEN_ENV} or --upload-token-file): anyone who reaches {} can upload",
            a.listen
        );
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
    if !(a.lease_seconds.is_finite() && (0.3..=86_400.0).contains(&a.lease_seconds)) {
        return Err(HostError::Usage(
            "--lease-seconds must be between 0.3 and 86400".into(),
        ));
    }
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
        log: Arc::new(|m: &str| say!("hprof-shrink: {m}")),
    };
    serve::run(config)?;
    Ok(())
}
