//! The arguments of `hprof-shrink serve` (and of the child process it analyzes in): its
//! help text, flags, and the environment variables it reads. What they become is
//! `commands/serve.rs`'s.

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::Args;
use hprof_shrink_serve::{self as serve, budget, conn_limits};

pub const UPLOAD_TOKEN_ENV: &str = "HPROF_SHRINK_UPLOAD_TOKEN";
pub const READ_TOKEN_ENV: &str = "HPROF_SHRINK_READ_TOKEN";
pub const DATABASE_ENV: &str = "HPROF_SHRINK_DATABASE_URL";

pub const ABOUT: &str = "\
Receives packages as `hprof-shrink upload` sends them (POST /api/packages, multipart; PUT \
/api/packages/NAME.zip with Content-MD5), checks each body's MD5 and verifies the package \
before answering 2xx, stores it under DIR and records it in DIR/meta.sqlite. The same \
package sent twice is one record. Packages are analyzed in the background; leaks are \
grouped by signature across packages, with the SDK versions, manufacturers and app versions \
(extra.info appVersion) they were seen on; /versions shows, per app version (in the order \
their first packages came), the groups new in it and how each group's packages and retained \
size moved from the version before. Pages under /, JSON under /api/.

What a package carries is cut where it is recorded (each result.info and extra.info value \
to 4 KiB, each key to 128 bytes, 64 pairs and 16 KiB per file; SDK, manufacturer and app \
version to 64 bytes; cuts end in '…' and the package's JSON lists them) while the package \
itself is kept as sent; every page and answer lists a bounded number of items and says how \
many more there are; the leak groups kept per filter share a 64 MiB budget. See \
docs/serve.md, \"Limits\".

Tokens are never given on the command line: the upload token comes from \
HPROF_SHRINK_UPLOAD_TOKEN or --upload-token-file (clients send it as `Authorization: \
Bearer`, which `upload` does with HPROF_SHRINK_TOKEN), the read token from \
HPROF_SHRINK_READ_TOKEN or --read-token-file (a browser asks for it as a password).

Each package is analyzed in a child process of this program, at the lowest priority, \
held to --analysis-memory and --analysis-seconds: a package past them fails its job, never \
the server. A job failed by a passing fault (I/O, the store, the database, a crash) is tried \
again after --retry-seconds, up to three attempts; --requeue-failed (or POST \
/api/packages/ID/requeue with the upload token) puts failed jobs back. Packages analyzed \
by an older analyzer (an older signature version or schema) are analyzed again at start, \
after every new package and one at a time per process, so that their leaks join the groups \
of the new signatures; the pages and /api/leaks show the regrouping's progress until it is \
done (docs/serve.md, \"Regrouping\"). One server per DIR: \
a second one on the same DIR is refused.

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

    /// The most memory one analysis may allocate, in bytes (its process's data limit:
    /// heap and thread stacks, not the mapped dump); an analysis that needs more fails
    /// its job. [default: 4 GiB]
    #[arg(long, value_name = "BYTES", default_value_t = budget::DEFAULT_ANALYSIS_MEMORY, hide_default_value = true)]
    pub analysis_memory: u64,

    /// The longest one analysis may run (wall clock); past it its process is killed and
    /// its job fails.
    #[arg(long, value_name = "SECONDS", default_value_t = budget::DEFAULT_ANALYSIS_TIME.as_secs_f64())]
    pub analysis_seconds: f64,

    /// A package's hprof may inflate to at most this many times --max-bytes; a package
    /// whose hprof inflates to more is refused with 413 before it is inflated.
    #[arg(long, value_name = "N", default_value_t = budget::DEFAULT_INFLATED_RATIO)]
    pub max_inflated_ratio: u64,

    /// Bytes to keep free on the data disk: an upload that would leave less is refused
    /// with 507 (Insufficient Storage), an analysis that would is put off. [default: 1 GiB]
    #[arg(long, value_name = "BYTES", default_value_t = budget::DEFAULT_KEEP_FREE, hide_default_value = true)]
    pub keep_free: u64,

    /// A job failed by a passing fault (I/O, the store, the database, a crashed analysis)
    /// is tried again after this long, four times longer after its second attempt; after
    /// its third it is failed (see --requeue-failed).
    #[arg(long, value_name = "SECONDS", default_value_t = budget::DEFAULT_BACKOFF.as_secs_f64())]
    pub retry_seconds: f64,

    /// Put every failed job back in the queue (all its attempts ahead of it) and exit; a
    /// server running on the same database takes them up. One package:
    /// POST /api/packages/ID/requeue with the upload token.
    #[arg(long)]
    pub requeue_failed: bool,

    /// Each analysis waits this long after taking its package; for tests.
    #[arg(long, hide = true, default_value_t = 0, value_name = "MS")]
    pub analysis_delay_ms: u64,

    /// Each new package waits this long between being recorded and being answered; for
    /// tests.
    #[arg(long, hide = true, default_value_t = 0, value_name = "MS")]
    pub answer_delay_ms: u64,

    #[command(flatten)]
    pub limits: LimitArgs,
}

/// Connections, timeouts, uploads at once, and the names answered without a token.
#[derive(Debug, Args)]
pub struct LimitArgs {
    /// Connections open at once; past it new ones wait in the kernel's listen queue. Lowered
    /// (with a warning) to what the file descriptor limit allows.
    #[arg(long, value_name = "N", default_value_t = conn_limits::DEFAULT_MAX_CONNECTIONS, help_heading = "Limits")]
    pub max_connections: usize,

    /// Connections that have presented no valid token yet (at most 7/8 of
    /// --max-connections); a new one past it closes the one idle longest (or slowest with
    /// its headers), else is answered 503.
    #[arg(long, value_name = "N", default_value_t = conn_limits::DEFAULT_MAX_UNAUTHENTICATED, help_heading = "Limits")]
    pub max_unauthenticated_connections: usize,

    /// Uploads received and verified at once (one whose client is slow holds about 1.2 MiB
    /// of memory, 2.2 MiB for a multipart POST); past it, 503 with Retry-After.
    #[arg(long, value_name = "N", default_value_t = conn_limits::DEFAULT_MAX_UPLOADS, help_heading = "Limits")]
    pub max_uploads: usize,

    /// Seconds from a request's first byte to the end of its headers; past it the
    /// connection is closed.
    #[arg(long, value_name = "SECONDS", default_value_t = conn_limits::DEFAULT_HEADER_TIMEOUT.as_secs_f64(), help_heading = "Limits")]
    pub header_timeout: f64,

    /// Seconds a connection may stay open with no request (keep-alive, or before the
    /// first one).
    #[arg(long, value_name = "SECONDS", default_value_t = conn_limits::DEFAULT_IDLE_TIMEOUT.as_secs_f64(), help_heading = "Limits")]
    pub idle_timeout: f64,

    /// A request body must bring --body-min-bytes in every this many seconds of waiting for
    /// it (else 408 and the connection closed); an answer the client does not read for this
    /// long is dropped.
    #[arg(long, value_name = "SECONDS", default_value_t = conn_limits::DEFAULT_BODY_TIMEOUT.as_secs_f64(), help_heading = "Limits")]
    pub body_timeout: f64,

    /// See --body-timeout.
    #[arg(long, value_name = "BYTES", default_value_t = conn_limits::DEFAULT_BODY_MIN_BYTES, help_heading = "Limits")]
    pub body_min_bytes: u64,

    /// A name (besides IP addresses and localhost) under which requests without a token are
    /// answered, e.g. with --public-read; others get 421, so that no web page can read the
    /// server through DNS rebinding. Repeat it or give a comma list.
    #[arg(long, value_name = "NAME", value_delimiter = ',')]
    pub public_host: Vec<String>,
}

/// `hprof-shrink __analyze-job DIR`: the child process a server analyzes one package in
/// (see `hprof_shrink_serve::background`). Not for people.
#[derive(Debug, Args)]
pub struct AnalyzeJobArgs {
    /// The job's directory: job.json in, the analysis out.
    #[arg(value_name = "DIR")]
    pub dir: PathBuf,
}

#[cfg(test)]
mod tests {
    use hprof_shrink_serve::limits;

    /// The help states the limits the server applies.
    #[test]
    fn the_help_states_the_limits() {
        let about = super::ABOUT.replace('\n', " ");
        for stated in [
            format!("value to {} KiB", limits::VALUE_BYTES >> 10),
            format!("key to {} bytes", limits::KEY_BYTES),
            format!(
                "{} pairs and {} KiB per file",
                limits::PAIRS,
                limits::PROPS_BYTES >> 10
            ),
            format!("version to {} bytes", limits::COLUMN_BYTES),
            format!("share a {} MiB budget", limits::CACHE_BYTES >> 20),
        ] {
            assert!(about.contains(&stated), "{stated}");
        }
    }
}
