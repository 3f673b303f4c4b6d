//! Why a server cannot start or run.

/// Why a server cannot start, or stopped: each names what failed and how.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// A file or socket of the server's own (the data directory, the listener).
    #[error("{what}: {source}")]
    Io {
        /// What was being done, naming the path or address.
        what: String,
        /// The system's error.
        source: std::io::Error,
    },
    /// The database could not be opened, migrated or used.
    #[error("the database {what}: {source}")]
    Db {
        /// What was being done.
        what: String,
        /// The database's error.
        source: sqlx::Error,
    },
    /// The options do not go together, or one is wrong.
    #[error("{0}")]
    Config(String),
    /// The file descriptor limit leaves too few for connections.
    #[error(transparent)]
    Fds(#[from] crate::conn_limits::TooFewFds),
    /// The S3 package store's URL or `AWS_*` environment.
    #[error(transparent)]
    S3(#[from] crate::s3::S3ConfigError),
    /// The package store could not be made or reached.
    #[error("the package store {what}: {source}")]
    Store {
        /// What was being done.
        what: String,
        /// The store's error.
        source: std::io::Error,
    },
}
