//! What a server is started with.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use crate::auth::Access;
use crate::budget::Budget;
use crate::conn_limits::Limits;
use hprof_shrink_upload::Log;

/// The largest package taken by default.
pub const DEFAULT_MAX_BYTES: u64 = 1 << 30;

/// How long a claimed job stays a worker's without being renewed (it is renewed every
/// third of that while the analysis runs): a killed worker's job is taken up again by
/// another worker this long after the kill.
pub const DEFAULT_LEASE: Duration = Duration::from_secs(60);

/// What [`crate::start`] opens, listens on and runs.
pub struct Config {
    /// The data directory: its lock, `tmp/` and `work/`, and (by default) the database and
    /// the blobs.
    pub data: PathBuf,
    /// None: no listener, analysis only (`serve --worker`).
    pub listen: Option<SocketAddr>,
    /// A PostgreSQL URL; None: SQLite in the data directory.
    pub database: Option<String>,
    /// An `s3://BUCKET/PREFIX` URL; None: the data directory.
    pub store: Option<String>,
    /// See [`DEFAULT_LEASE`].
    pub lease: Duration,
    /// Who may upload and read.
    pub access: Access,
    /// The largest upload accepted, in bytes.
    pub max_bytes: u64,
    /// Analysis workers; 0 receives only (another process analyzes).
    pub workers: usize,
    /// Each analysis process waits this long before analyzing (tests use it to kill the
    /// server, or the analysis, mid-job); it counts against the time budget.
    pub analysis_delay: Duration,
    /// Each new package waits this long between being recorded and being answered (tests
    /// use it to kill the server in between).
    pub answer_delay: Duration,
    /// What a package may cost: the analysis's memory and time, the inflated size, the
    /// free disk; and the backoff between attempts.
    pub budget: Budget,
    /// Where informational lines go.
    pub log: Log,
    /// Connections, timeouts and uploads at once ([`conn_limits`](crate::conn_limits)).
    pub limits: Limits,
}
