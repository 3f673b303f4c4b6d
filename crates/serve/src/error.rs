//! Why a server cannot start or run.

#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("{what}: {source}")]
    Io {
        what: String,
        source: std::io::Error,
    },
    #[error("the database {what}: {source}")]
    Db { what: String, source: sqlx::Error },
    #[error("{0}")]
    Config(String),
    #[error(transparent)]
    S3(#[from] crate::s3::S3ConfigError),
    #[error("the package store {what}: {source}")]
    Store {
        what: String,
        source: std::io::Error,
    },
}
