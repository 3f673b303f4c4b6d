//! Failures on the server's side (a full disk, a busy or read-only database, a store out
//! of reach) as answers a client can act on: 507 or 503 with `Retry-After`, never a 4xx,
//! which says the request itself was wrong (`upload` gives up on those). The answer says
//! what failed in general terms; the cause, which may name the server's paths, goes to the
//! log only.

use std::io;
use std::path::{Path, PathBuf};

use axum::extract::Request;
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::Response;

use super::conn::Peer;
use hprof_shrink_upload::Log;

/// What sort of failure a [`Fault`] is, which decides the status of its answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// The disk, a quota or a file size limit is full: 507.
    Full,
    /// Busy (a database lock, a pool, descriptors): 503, soon again.
    Busy,
    /// Out of order or out of reach (read-only, I/O errors, a store that does not
    /// answer): 503, later.
    Unavailable,
    /// A fault of the server's own (a panic): 500.
    Internal,
}

/// A server-side failure: what failed (for the client) and why (for the log).
#[derive(Debug, Clone)]
pub struct Fault {
    /// What sort of failure.
    pub kind: Kind,
    /// "the database", "the package store", "the server's disk".
    pub what: &'static str,
    /// The cause, for the log only (it may name the server's paths).
    pub detail: String,
}

impl Fault {
    /// An I/O failure of `what` ("the package store", "the server's disk").
    pub fn io(what: &'static str, e: &io::Error) -> Fault {
        Fault {
            kind: io_kind(e),
            what,
            detail: e.to_string(),
        }
    }

    /// A failure of the database.
    pub fn db(e: &sqlx::Error) -> Fault {
        Fault {
            kind: db_kind(e),
            what: "the database",
            detail: e.to_string(),
        }
    }

    /// A fault of the server's own (a panic): 500.
    pub fn internal(detail: impl Into<String>) -> Fault {
        Fault {
            kind: Kind::Internal,
            what: "the server",
            detail: detail.into(),
        }
    }

    /// The answer's status: 507, 503 or 500.
    pub fn status(&self) -> StatusCode {
        match self.kind {
            Kind::Full => StatusCode::INSUFFICIENT_STORAGE,
            Kind::Busy | Kind::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
            Kind::Internal => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    /// Seconds to wait before trying again.
    pub fn retry_after(&self) -> Option<u32> {
        match self.kind {
            Kind::Full => Some(60),
            Kind::Busy => Some(5),
            Kind::Unavailable => Some(30),
            Kind::Internal => None,
        }
    }

    /// What the client is told: no path, no error text from below.
    pub fn message(&self) -> String {
        match self.kind {
            Kind::Full => format!("{} is full: nothing was stored; try again later", self.what),
            Kind::Busy => format!("{} is busy: try again shortly", self.what),
            Kind::Unavailable => format!("{} is unavailable: try again later", self.what),
            Kind::Internal => "an internal error of the server: try again later".into(),
        }
    }
}

fn io_kind(e: &io::Error) -> Kind {
    use io::ErrorKind as K;
    match e.kind() {
        K::StorageFull | K::QuotaExceeded | K::FileTooLarge => return Kind::Full,
        K::OutOfMemory | K::TimedOut => return Kind::Busy,
        _ => {}
    }
    match e.raw_os_error() {
        Some(libc::ENOSPC | libc::EDQUOT | libc::EFBIG) => Kind::Full,
        Some(libc::EMFILE | libc::ENFILE | libc::ENOMEM | libc::EAGAIN) => Kind::Busy,
        _ => Kind::Unavailable,
    }
}

fn db_kind(e: &sqlx::Error) -> Kind {
    match e {
        sqlx::Error::Database(d) => {
            let code = d.code().map(|c| c.into_owned()).unwrap_or_default();
            match code.parse::<i64>() {
                // SQLite: its extended code, whose low byte is the primary one.
                Ok(n) => match n & 0xff {
                    13 => Kind::Full,                           // SQLITE_FULL
                    5 | 6 => Kind::Busy,                        // SQLITE_BUSY, SQLITE_LOCKED
                    7 => Kind::Busy,                            // SQLITE_NOMEM
                    8 | 10 | 11 | 14 | 26 => Kind::Unavailable, // READONLY, IOERR, CORRUPT, CANTOPEN, NOTADB
                    _ => Kind::Internal,
                },
                // PostgreSQL: SQLSTATE.
                Err(_) => match code.as_str() {
                    "53100" => Kind::Full,                               // disk_full
                    c if c.starts_with("53") => Kind::Busy,              // insufficient resources
                    "40001" | "40P01" | "55P03" | "57014" => Kind::Busy, // serialization, deadlock, lock, cancelled
                    c if c.starts_with("08") || c.starts_with("57P") || c == "25006" => {
                        Kind::Unavailable // connection, shutdown, read-only
                    }
                    c if c.starts_with("58") || c.starts_with("XX") => Kind::Unavailable,
                    _ => Kind::Internal,
                },
            }
        }
        sqlx::Error::PoolTimedOut => Kind::Busy,
        sqlx::Error::Io(e) => io_kind(e),
        sqlx::Error::PoolClosed
        | sqlx::Error::Tls(_)
        | sqlx::Error::Protocol(_)
        | sqlx::Error::WorkerCrashed
        | sqlx::Error::Configuration(_) => Kind::Unavailable,
        _ => Kind::Internal,
    }
}

/// `msg` without the server's paths, for an answer: each of `named` (a file and what to
/// call it) first, then each of `dirs` (the server's own, `App::server_dirs`) and the
/// system's temporary directory, each shown as `[server]`.
pub fn scrub(msg: &str, named: &[(&Path, &str)], dirs: &[PathBuf]) -> String {
    let mut out = msg.to_string();
    for (path, name) in named {
        out = out.replace(&*path.to_string_lossy(), name);
    }
    for d in dirs.iter().cloned().chain([std::env::temp_dir()]) {
        let d = d.to_string_lossy();
        // Never "/" or "": that would take every slash with it.
        if d.len() > 1 {
            out = out.replace(&*d, "[server]");
        }
    }
    out
}

/// Why a request was refused or failed, kept with its answer for the log (never sent).
#[derive(Debug, Clone)]
pub struct Why(pub String);

/// Logs every answer that carries a [`Why`]: refused uploads (401, 400, 408, 413, 422,
/// 503 ...) and server-side failures, with the client's address and the request's path.
/// Never a header: tokens stay out of the log.
pub async fn log_answers(
    axum::extract::State(log): axum::extract::State<Log>,
    req: Request,
    next: Next,
) -> Response {
    let method = req.method().clone();
    let path: String = req.uri().path().chars().take(200).collect();
    let peer = req.extensions().get::<Peer>().map(|p| p.0);
    let r = next.run(req).await;
    if let Some(Why(why)) = r.extensions().get::<Why>() {
        let from = peer.map(|p| format!(" from {p}")).unwrap_or_default();
        log(&format!(
            "{method} {path}{from}: {} {}",
            r.status().as_u16(),
            why.replace(['\n', '\r'], " ")
        ));
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;
    use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode};
    use sqlx::{ConnectOptions, Connection, Executor};

    /// SQLite's own errors, as sqlx reports them: a full database is 507, a busy one 503
    /// soon, a read-only one 503 later.
    #[tokio::test]
    async fn sqlite_errors_are_classified_by_their_code() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.sqlite");
        let opts = SqliteConnectOptions::new()
            .filename(&path)
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal);
        let mut a = opts.connect().await.unwrap();
        a.execute("CREATE TABLE t (v BLOB)").await.unwrap();
        // Full: the database may not grow past its pages.
        a.execute("PRAGMA max_page_count = 3").await.unwrap();
        let e = a
            .execute("INSERT INTO t VALUES (zeroblob(100000))")
            .await
            .unwrap_err();
        assert_eq!(Fault::db(&e).kind, Kind::Full, "{e}");
        a.execute("PRAGMA max_page_count = 1000000").await.unwrap();
        // Busy: another connection holds the write lock, and this one does not wait.
        let mut b = opts
            .clone()
            .busy_timeout(std::time::Duration::ZERO)
            .connect()
            .await
            .unwrap();
        a.execute("BEGIN IMMEDIATE").await.unwrap();
        let e = b.execute("INSERT INTO t VALUES (1)").await.unwrap_err();
        let f = Fault::db(&e);
        assert_eq!((f.kind, f.retry_after()), (Kind::Busy, Some(5)), "{e}");
        a.execute("ROLLBACK").await.unwrap();
        // Read-only.
        let mut ro = opts.clone().read_only(true).connect().await.unwrap();
        let e = ro.execute("INSERT INTO t VALUES (1)").await.unwrap_err();
        let f = Fault::db(&e);
        assert_eq!(
            (f.status(), f.retry_after()),
            (StatusCode::SERVICE_UNAVAILABLE, Some(30)),
            "{e}"
        );
        for c in [a, b, ro] {
            c.close().await.unwrap();
        }
    }

    #[test]
    fn full_disks_are_507_busy_and_broken_things_503_with_a_retry_after() {
        let full = Fault::io(
            "the server's disk",
            &io::Error::from_raw_os_error(libc::ENOSPC),
        );
        assert_eq!(full.status(), StatusCode::INSUFFICIENT_STORAGE);
        assert_eq!(full.retry_after(), Some(60));
        let limit = Fault::io(
            "the server's disk",
            &io::Error::from_raw_os_error(libc::EFBIG),
        );
        assert_eq!(limit.kind, Kind::Full);
        let fds = Fault::io(
            "the server's disk",
            &io::Error::from_raw_os_error(libc::EMFILE),
        );
        assert_eq!(
            (fds.status(), fds.retry_after()),
            (StatusCode::SERVICE_UNAVAILABLE, Some(5))
        );
        let eio = Fault::io(
            "the package store",
            &io::Error::from_raw_os_error(libc::EIO),
        );
        assert_eq!(
            (eio.status(), eio.retry_after()),
            (StatusCode::SERVICE_UNAVAILABLE, Some(30))
        );
        assert_eq!(Fault::db(&sqlx::Error::PoolTimedOut).kind, Kind::Busy);
        assert_eq!(Fault::db(&sqlx::Error::PoolClosed).kind, Kind::Unavailable);
        let e = Fault::io(
            "the server's disk",
            &io::Error::new(
                io::ErrorKind::StorageFull,
                "/srv/heaps/tmp/upload-1.part: full",
            ),
        );
        assert!(!e.message().contains("/srv"), "{}", e.message());
        assert!(e.detail.contains("/srv"));
    }
}
