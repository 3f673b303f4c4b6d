//! What one client, or many, may hold of the server: connections, time and uploads. Each
//! bound is a `serve` flag; docs/serve.md says what a client sees when it is reached.

use std::time::Duration;

/// The connection and upload limits of a listening server.
#[derive(Debug, Clone, PartialEq)]
pub struct Limits {
    /// Connections open at once. Past it the server accepts no more (they wait in the
    /// kernel's listen queue) until one closes.
    pub max_connections: usize,
    /// Of those, connections that have not yet presented a valid token (at most 7/8 of
    /// the total: [`Limits::unauthenticated_cap`]). A new one past it closes the
    /// unauthenticated connection that has waited longest between requests or for its
    /// request headers; when every one is in a request, the new one is answered 503.
    pub max_unauthenticated: usize,
    /// Upload bodies received (and verified) at once; past it, 503 with `Retry-After`.
    pub max_uploads: usize,
    /// From a request's first byte to the end of its headers.
    pub header_timeout: Duration,
    /// A connection between requests (and a new one before its first byte).
    pub idle_timeout: Duration,
    /// A request body must bring [`Limits::body_min_bytes`] in every this long spent
    /// waiting for it; an answer the client does not read for this long is dropped too.
    pub body_timeout: Duration,
    /// The bytes a request body must bring in each `body_timeout` of waiting.
    pub body_min_bytes: u64,
}

/// [`Limits::max_connections`] by default.
pub const DEFAULT_MAX_CONNECTIONS: usize = 512;
/// [`Limits::max_unauthenticated`] by default.
pub const DEFAULT_MAX_UNAUTHENTICATED: usize = 128;
/// [`Limits::max_uploads`] by default.
pub const DEFAULT_MAX_UPLOADS: usize = 32;
/// [`Limits::header_timeout`] by default.
pub const DEFAULT_HEADER_TIMEOUT: Duration = Duration::from_secs(20);
/// [`Limits::idle_timeout`] by default.
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(30);
/// [`Limits::body_timeout`] by default.
pub const DEFAULT_BODY_TIMEOUT: Duration = Duration::from_secs(30);
/// 16 KiB per 30 s of waiting: about 550 bytes/s, a tenth of what GPRS carries, so a
/// phone on a bad network gets through and a body that stopped does not stay.
pub const DEFAULT_BODY_MIN_BYTES: u64 = 16 * 1024;

/// How long a client is asked to wait after a 503 for lack of room (connections,
/// uploads).
pub const BUSY_RETRY_AFTER: u32 = 5;

/// Refused connections being answered 503 at once (each for at most
/// [`REFUSAL_LINGER`]); past it a refused connection is closed unanswered.
pub const MAX_REFUSALS: usize = 32;
/// The longest a refused connection is kept while it is answered 503.
pub const REFUSAL_LINGER: Duration = Duration::from_secs(1);

/// File descriptors kept for everything but connections and uploads: the database pool
/// (SQLite opens three files per connection), the runtime, the listener, standard streams.
const FD_RESERVE: u64 = 64;
/// Per upload: its temporary file, verify's unpacked copy, the package opened to read.
const FDS_PER_UPLOAD: u64 = 3;
/// Per analysis worker: the package mapped, its copy from a store, the analysis written.
const FDS_PER_WORKER: u64 = 4;
/// Fewer connections than this and the server is not worth starting.
const MIN_CONNECTIONS: usize = 8;

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_connections: DEFAULT_MAX_CONNECTIONS,
            max_unauthenticated: DEFAULT_MAX_UNAUTHENTICATED,
            max_uploads: DEFAULT_MAX_UPLOADS,
            header_timeout: DEFAULT_HEADER_TIMEOUT,
            idle_timeout: DEFAULT_IDLE_TIMEOUT,
            body_timeout: DEFAULT_BODY_TIMEOUT,
            body_min_bytes: DEFAULT_BODY_MIN_BYTES,
        }
    }
}

impl Limits {
    /// The descriptors everything but the connections needs, with `workers` analyses.
    fn others(&self, workers: usize) -> u64 {
        FD_RESERVE
            + FDS_PER_UPLOAD * self.max_uploads as u64
            + FDS_PER_WORKER * workers as u64
            + MAX_REFUSALS as u64
    }

    /// Fits the connection caps to the process's file descriptor limit (`ulimit -n`),
    /// raising its soft limit towards the hard one first: a server that runs out of
    /// descriptors can accept nothing, not even the connection that would free one.
    /// Returns a sentence for the log when the caps were lowered, or an error when even
    /// `MIN_CONNECTIONS` do not fit.
    /// The unauthenticated connections are then kept below the total (see
    /// [`Limits::unauthenticated_cap`]).
    pub fn fit_to_fd_limit(&mut self, workers: usize) -> Result<Option<String>, TooFewFds> {
        let others = self.others(workers);
        let needed = self.max_connections as u64 + others;
        let mut note = None;
        let soft = raise_fd_limit(needed).unwrap_or(needed);
        if soft < needed {
            let fit = soft.saturating_sub(others);
            if fit < MIN_CONNECTIONS as u64 {
                return Err(TooFewFds {
                    soft,
                    others,
                    uploads: self.max_uploads,
                });
            }
            note = Some(format!(
                "the file descriptor limit (ulimit -n) is {soft}: at most {fit} connections \
                 (not --max-connections {}); raise the limit for more",
                self.max_connections
            ));
            self.max_connections = fit as usize;
        }
        self.max_unauthenticated = self.unauthenticated_cap();
        Ok(note)
    }

    /// The unauthenticated cap, kept below the total by an eighth of it (at least one):
    /// were they allowed to fill every place, no new connection would be accepted to
    /// take the place of one of them.
    pub fn unauthenticated_cap(&self) -> usize {
        let keep = (self.max_connections / 8).max(1);
        self.max_unauthenticated
            .min(self.max_connections.saturating_sub(keep))
            .max(1)
    }
}

/// The file descriptor limit leaves too few for `MIN_CONNECTIONS`: the server does not
/// start.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "the file descriptor limit (ulimit -n) is {soft}: serve needs about {others} for \
     {uploads} upload(s) and its files, and {MIN_CONNECTIONS} more for connections: raise \
     the limit or lower --max-uploads"
)]
pub struct TooFewFds {
    /// The soft limit, raised as far as it would go.
    pub soft: u64,
    /// What everything but the connections needs.
    pub others: u64,
    /// Uploads at once (`--max-uploads`).
    pub uploads: usize,
}

/// Raises the soft `RLIMIT_NOFILE` to `wanted` (at most the hard limit); the soft limit
/// then, or None where there is none to read.
#[cfg(unix)]
// rlim_t is u64 here, not on every unix.
#[allow(clippy::unnecessary_cast)]
fn raise_fd_limit(wanted: u64) -> Option<u64> {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes the struct it is given.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 {
        return None;
    }
    let cur = lim.rlim_cur as u64;
    if cur >= wanted || lim.rlim_cur == libc::RLIM_INFINITY {
        return Some(cur.max(wanted));
    }
    let target = if lim.rlim_max == libc::RLIM_INFINITY {
        wanted
    } else {
        wanted.min(lim.rlim_max as u64)
    };
    let raised = libc::rlimit {
        rlim_cur: target as libc::rlim_t,
        rlim_max: lim.rlim_max,
    };
    // SAFETY: setrlimit reads the struct it is given.
    if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) } == 0 {
        Some(target)
    } else {
        Some(cur)
    }
}

#[cfg(not(unix))]
fn raise_fd_limit(_wanted: u64) -> Option<u64> {
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unauthenticated_connections_stay_below_the_total() {
        let l = |total, unauth| Limits {
            max_connections: total,
            max_unauthenticated: unauth,
            ..Limits::default()
        };
        assert_eq!(l(512, 128).unauthenticated_cap(), 128);
        assert_eq!(l(64, 128).unauthenticated_cap(), 56);
        assert_eq!(l(6, 2).unauthenticated_cap(), 2);
        assert_eq!(l(4, 4).unauthenticated_cap(), 3);
        assert_eq!(l(1, 1).unauthenticated_cap(), 1);
    }

    #[test]
    fn the_caps_fit_the_descriptor_limit() {
        // Whatever this process's limit, the caps come out within it, or the start is
        // refused with the reason.
        let mut l = Limits {
            max_connections: 10_000_000,
            ..Limits::default()
        };
        match l.fit_to_fd_limit(2) {
            Ok(note) => {
                assert!(l.max_connections >= MIN_CONNECTIONS);
                assert!(l.max_unauthenticated < l.max_connections);
                if l.max_connections < 10_000_000 {
                    assert!(note.unwrap().contains("ulimit -n"));
                }
            }
            Err(e) => assert!(e.to_string().contains("ulimit -n"), "{e}"),
        }
    }
}
