//! Why an analysis failed. Errors from the dump carry the format layer's byte offset and
//! record tag; the rest name the file.

use std::path::PathBuf;

use hprof_shrink_core::hprof::FormatError;
use hprof_shrink_core::package::PackageError;

#[derive(Debug, thiserror::Error)]
pub enum AnalyzeError {
    #[error(transparent)]
    Format(FormatError),

    #[error("{path}: {source}")]
    Package {
        path: PathBuf,
        #[source]
        source: PackageError,
    },

    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },

    #[error("{path}: not a heap dump, a .hprof.gz or a package zip ({})", if start.is_empty() { "the file is empty".to_string() } else { format!("it starts with {start:?}") })]
    Unknown { path: PathBuf, start: String },

    #[error("{path}:{line}: not an R8/ProGuard mapping line: {what}")]
    Mapping {
        path: PathBuf,
        line: usize,
        what: String,
    },

    #[error("{path}: the mapping file is {bytes} bytes, over the limit of {max}")]
    MappingTooLarge { path: PathBuf, bytes: u64, max: u64 },

    #[error("the dump holds {0} objects; the analyzer numbers at most 4,294,967,294")]
    TooManyObjects(u64),

    #[error("the file holds {found} heap dump{}: there is no dump {asked} (--dump counts from 1)", if *found == 1 { "" } else { "s" })]
    NoSuchDump { asked: usize, found: usize },

    #[error("{path}: the dump's path tree passed {limit} node{} (its objects are reached in too many different ways to compare; --max-paths raises the limit)", if *limit == 1 { "" } else { "s" })]
    TooManyPaths { path: PathBuf, limit: usize },

    #[error("cancelled")]
    Cancelled,

    /// An error of a dump's content, with the file it is in (see [`AnalyzeError::in_file`]).
    #[error("{path}: {source}")]
    InFile {
        path: PathBuf,
        #[source]
        source: Box<AnalyzeError>,
    },
}

impl AnalyzeError {
    /// Names `path` in an error that does not name its file already: what the dump's
    /// bytes made wrong, where a command reads several files (or one the user named).
    #[must_use]
    pub fn in_file(self, path: &std::path::Path) -> AnalyzeError {
        match self {
            e @ (AnalyzeError::Format(_)
            | AnalyzeError::TooManyObjects(_)
            | AnalyzeError::NoSuchDump { .. }) => AnalyzeError::InFile {
                path: path.to_path_buf(),
                source: Box::new(e),
            },
            AnalyzeError::Io { path: p, source } if p.as_os_str().is_empty() => AnalyzeError::Io {
                path: path.to_path_buf(),
                source,
            },
            other => other,
        }
    }
}

impl From<hprof_shrink_core::Error> for AnalyzeError {
    fn from(e: hprof_shrink_core::Error) -> Self {
        match e {
            hprof_shrink_core::Error::Cancelled => AnalyzeError::Cancelled,
            hprof_shrink_core::Error::Format(f) => AnalyzeError::Format(f),
            other => AnalyzeError::Io {
                path: PathBuf::new(),
                source: std::io::Error::other(other.to_string()),
            },
        }
    }
}
