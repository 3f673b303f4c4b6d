//! The listener: our own accept loop over hyper's HTTP/1 connections, with axum's Router as
//! the service, so that every connection is bounded in number and in time.
//!
//! - At most [`Limits::max_connections`] connections: past it nothing more is accepted
//!   (new ones wait in the kernel's listen queue) until one closes.
//! - A connection is *unauthenticated* until one of its requests presents a valid token
//!   (upload or read); from then on it counts only against the total, for as long as it
//!   stays open (keep-alive). At most [`Limits::max_unauthenticated`] of them: a new one
//!   past it closes the unauthenticated connection that has waited longest between
//!   requests or for its headers, or, when all of them are in a request, is answered 503
//!   and closed. So connections that never present a token cannot crowd out those that do,
//!   nor new clients.
//! - Each connection has a phase: *idle* (open, no request: [`Limits::idle_timeout`]),
//!   *head* (a request's first byte came: its headers within [`Limits::header_timeout`]),
//!   *busy* (a request is being handled, its body read or its answer sent: request bodies
//!   are paced by [`super::body::Paced`], and an answer the client does not read for
//!   [`Limits::body_timeout`] closes the connection).
//! - `accept` failing for lack of descriptors or memory backs off (10 ms doubling to 1 s)
//!   instead of spinning, and never ends the loop.

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::io;
use std::net::SocketAddr;
use std::pin::{pin, Pin};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::Body;
use axum::http::{header, HeaderValue, Request, Response, StatusCode};
use axum::Router;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper_util::rt::TokioIo;
use serde_json::json;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{watch, Notify, OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;

use super::auth::{Presented, UnknownHost};
use super::body::{Held, Paced};
use super::conn_limits::{Limits, BUSY_RETRY_AFTER, MAX_REFUSALS, REFUSAL_LINGER};
use crate::app::App;

/// hyper's read and write buffers per connection: request headers larger than this are
/// answered 431. (hyper's default is about 400 KiB.)
pub const MAX_HEAD_BYTES: usize = 64 * 1024;

/// The peer of a request's connection, for the log.
#[derive(Debug, Clone, Copy)]
pub struct Peer(pub SocketAddr);

#[derive(Debug, Clone, Copy, PartialEq)]
enum Phase {
    /// Open with no request in it, since then.
    Idle(Instant),
    /// A request's first byte came then; its headers have not all come.
    Head(Instant),
    /// A request is in flight: being handled, its body read or its answer sent.
    Busy,
}

struct State {
    phase: Phase,
    /// Request bodies and answers of this connection not yet done with.
    holds: u32,
    /// When a write last made progress, and since when one has been blocked.
    last_write: Instant,
    write_blocked: Option<Instant>,
    evicted: bool,
    authenticated: bool,
    /// Its place among the unauthenticated connections, until it presents a token.
    unauthenticated: Option<OwnedSemaphorePermit>,
}

/// One connection, as its watchdog, its I/O and its requests see it.
pub struct Conn {
    id: u64,
    state: Mutex<State>,
    /// Wakes the watchdog on a change of phase or an eviction.
    wake: Notify,
}

impl Conn {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // A panic while the lock was held leaves plain data behind: go on with it.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A request body or an answer begins: the connection is busy until it is released.
    fn hold(self: &Arc<Self>) -> Hold {
        let mut s = self.lock();
        s.holds += 1;
        s.phase = Phase::Busy;
        drop(s);
        self.wake.notify_one();
        Hold(self.clone())
    }

    /// When the watchdog must close the connection, if nothing changes before; `stopping`:
    /// the server is stopping, and a connection with no request in flight (idle, or with
    /// a head still coming) closes now.
    fn deadline(&self, limits: &Limits, stopping: bool) -> Option<Instant> {
        let s = self.lock();
        let now = Instant::now();
        if s.evicted {
            return Some(now);
        }
        let phase = match s.phase {
            // A request whose head has not all come is not under way yet.
            Phase::Idle(_) | Phase::Head(_) if stopping => Some(now),
            // An answer's last bytes may still be going out: idle from then on.
            Phase::Idle(since) => Some(since.max(s.last_write) + limits.idle_timeout),
            Phase::Head(since) => Some(since + limits.header_timeout),
            Phase::Busy => None,
        };
        let write = s.write_blocked.map(|since| since + limits.body_timeout);
        match (phase, write) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Bytes came in: a connection that was idle now has a request's head coming.
    fn on_read(&self) {
        let mut s = self.lock();
        if let Phase::Idle(_) = s.phase {
            s.phase = Phase::Head(Instant::now());
            drop(s);
            self.wake.notify_one();
        }
    }

    fn on_write(&self, progressed: bool) {
        let mut s = self.lock();
        if progressed {
            s.last_write = Instant::now();
            s.write_blocked = None;
        } else if s.write_blocked.is_none() {
            s.write_blocked = Some(Instant::now());
            drop(s);
            self.wake.notify_one();
        }
    }

    /// How long it has waited, if the connection may be closed to make room for a new
    /// one: unauthenticated, not already closing, and with no request in flight.
    fn evictable(&self) -> Option<(bool, Instant)> {
        let s = self.lock();
        if s.evicted || s.authenticated {
            return None;
        }
        match s.phase {
            Phase::Idle(since) => Some((false, since.max(s.last_write))),
            Phase::Head(since) => Some((true, since)),
            Phase::Busy => None,
        }
    }
}

/// A request body or an answer in flight on a connection; dropped, the connection may be
/// idle again.
pub struct Hold(Arc<Conn>);

impl Drop for Hold {
    fn drop(&mut self) {
        let mut s = self.0.lock();
        s.holds = s.holds.saturating_sub(1);
        if s.holds == 0 {
            s.phase = Phase::Idle(Instant::now());
            drop(s);
            self.0.wake.notify_one();
        }
    }
}

/// A connection's socket, telling its [`Conn`] when bytes come and go.
struct Watched {
    io: TcpStream,
    conn: Arc<Conn>,
}

impl AsyncRead for Watched {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let r = Pin::new(&mut self.io).poll_read(cx, buf);
        if let Poll::Ready(Ok(())) = r {
            if buf.filled().len() > before {
                self.conn.on_read();
            }
        }
        r
    }
}

impl AsyncWrite for Watched {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let r = Pin::new(&mut self.io).poll_write(cx, buf);
        self.conn.on_write(r.is_ready());
        r
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let r = Pin::new(&mut self.io).poll_write_vectored(cx, bufs);
        self.conn.on_write(r.is_ready());
        r
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}

/// What every connection of one listener shares.
struct Shared {
    app: Arc<App>,
    router: Router,
    limits: Limits,
    http: http1::Builder,
    unauthenticated: Arc<Semaphore>,
    /// The unauthenticated connections, oldest first.
    waiting_room: Mutex<BTreeMap<u64, Arc<Conn>>>,
    next_id: AtomicU64,
    refusals: AtomicUsize,
}

impl Shared {
    fn room(&self) -> std::sync::MutexGuard<'_, BTreeMap<u64, Arc<Conn>>> {
        self.waiting_room.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Closes the unauthenticated connection that has waited longest between requests
    /// (or else for its headers); false if every one is in a request.
    fn evict_one(&self) -> bool {
        let victim = self
            .room()
            .values()
            .filter_map(|c| c.evictable().map(|w| (w, c.clone())))
            .min_by_key(|(w, _)| *w)
            .map(|(_, c)| c);
        match victim {
            Some(c) => {
                c.lock().evicted = true;
                c.wake.notify_one();
                true
            }
            None => false,
        }
    }

    /// A request on `conn` presented a valid token: the connection leaves the
    /// unauthenticated ones.
    fn authenticate(&self, conn: &Conn) {
        let permit = {
            let mut s = conn.lock();
            if s.authenticated {
                return;
            }
            s.authenticated = true;
            s.unauthenticated.take()
        };
        drop(permit);
        self.room().remove(&conn.id);
    }
}

/// When `accept` fails: how long to wait before the next, growing while it keeps failing
/// for lack of a resource (descriptors, memory), so that the loop never spins.
#[derive(Debug, Default)]
pub struct Backoff {
    next: Option<Duration>,
}

const BACKOFF_FIRST: Duration = Duration::from_millis(10);
const BACKOFF_MAX: Duration = Duration::from_secs(1);

impl Backoff {
    /// None: the error was the one connection's (it went away before it was accepted),
    /// go on at once. Some: wait that long; the first wait of a run of failures is
    /// `BACKOFF_FIRST`, each next one twice the last, up to `BACKOFF_MAX`.
    pub fn after(&mut self, e: &io::Error) -> Option<Duration> {
        if matches!(
            e.kind(),
            io::ErrorKind::ConnectionAborted
                | io::ErrorKind::ConnectionReset
                | io::ErrorKind::ConnectionRefused
                | io::ErrorKind::Interrupted
                | io::ErrorKind::WouldBlock
        ) {
            return None;
        }
        let d = self.next.unwrap_or(BACKOFF_FIRST);
        self.next = Some((d * 2).min(BACKOFF_MAX));
        Some(d)
    }

    /// True when the failures were ongoing (so the recovery is worth a line in the log).
    pub fn reset(&mut self) -> bool {
        self.next.take().is_some()
    }
}

/// Accepts and serves connections on `listener` until `stop` turns true, then lets the
/// requests in flight finish.
pub async fn serve(
    listener: TcpListener,
    app: Arc<App>,
    router: Router,
    mut stop: watch::Receiver<bool>,
) -> io::Result<()> {
    let limits = app.limits.clone();
    let mut http = http1::Builder::new();
    // Our own clocks (the watchdog below) time headers and idle connections.
    http.header_read_timeout(None)
        .keep_alive(true)
        .max_buf_size(MAX_HEAD_BYTES);
    let shared = Arc::new(Shared {
        unauthenticated: Arc::new(Semaphore::new(limits.unauthenticated_cap())),
        app,
        router,
        http,
        limits: limits.clone(),
        waiting_room: Mutex::new(BTreeMap::new()),
        next_id: AtomicU64::new(0),
        refusals: AtomicUsize::new(0),
    });
    let total = limits.max_connections.max(1);
    let slots = Arc::new(Semaphore::new(total));
    let mut backoff = Backoff::default();
    loop {
        let permit = tokio::select! {
            p = slots.clone().acquire_owned() => p.expect("the semaphore is never closed"),
            _ = stop.wait_for(|s| *s) => break,
        };
        let accepted = tokio::select! {
            r = listener.accept() => r,
            _ = stop.wait_for(|s| *s) => break,
        };
        match accepted {
            Ok((stream, peer)) => {
                if backoff.reset() {
                    (shared.app.log)("accepting connections again");
                }
                tokio::spawn(admit(shared.clone(), stream, peer, permit, stop.clone()));
            }
            Err(e) => {
                if let Some(wait) = backoff.after(&e) {
                    if wait == BACKOFF_FIRST {
                        (shared.app.log)(&format!(
                            "cannot accept connections: {e} (trying again, waiting up to {} s between tries)",
                            BACKOFF_MAX.as_secs()
                        ));
                    }
                    drop(permit);
                    tokio::select! {
                        _ = tokio::time::sleep(wait) => {}
                        _ = stop.wait_for(|s| *s) => break,
                    }
                }
            }
        }
    }
    drop(listener);
    // Every connection gives its slot back when it ends.
    let _ = slots.acquire_many(total as u32).await;
    Ok(())
}

/// Takes a new connection among the unauthenticated ones (making room if need be), or
/// refuses it, then serves it.
async fn admit(
    shared: Arc<Shared>,
    stream: TcpStream,
    peer: SocketAddr,
    slot: OwnedSemaphorePermit,
    stop: watch::Receiver<bool>,
) {
    let _ = stream.set_nodelay(true);
    let permit = match shared.unauthenticated.clone().try_acquire_owned() {
        Ok(p) => Some(p),
        Err(_) if shared.evict_one() => {
            // The evicted connection gives its place back within a moment; it is handed
            // to the first waiter, not to a later newcomer.
            tokio::time::timeout(
                Duration::from_secs(2),
                shared.unauthenticated.clone().acquire_owned(),
            )
            .await
            .ok()
            .and_then(Result::ok)
        }
        Err(_) => None,
    };
    let Some(permit) = permit else {
        refuse(&shared, stream).await;
        drop(slot);
        return;
    };
    let id = shared.next_id.fetch_add(1, Ordering::Relaxed);
    let now = Instant::now();
    let conn = Arc::new(Conn {
        id,
        state: Mutex::new(State {
            phase: Phase::Idle(now),
            holds: 0,
            last_write: now,
            write_blocked: None,
            evicted: false,
            authenticated: false,
            unauthenticated: Some(permit),
        }),
        wake: Notify::new(),
    });
    shared.room().insert(id, conn.clone());
    run(&shared, stream, peer, &conn, stop).await;
    shared.room().remove(&id);
    drop(slot);
}

/// Serves one connection until it ends, its watchdog closes it, or the server stops.
async fn run(
    shared: &Arc<Shared>,
    stream: TcpStream,
    peer: SocketAddr,
    conn: &Arc<Conn>,
    mut stop: watch::Receiver<bool>,
) {
    let io = TokioIo::new(Watched {
        io: stream,
        conn: conn.clone(),
    });
    let service = {
        let (shared, conn) = (shared.clone(), conn.clone());
        hyper::service::service_fn(move |req| handle(shared.clone(), conn.clone(), peer, req))
    };
    let mut http = pin!(shared.http.serve_connection(io, service));
    let mut stopping = false;
    loop {
        let deadline = conn.deadline(&shared.limits, stopping);
        let timer = tokio::time::sleep_until(
            deadline.unwrap_or_else(|| Instant::now() + Duration::from_secs(86_400)),
        );
        tokio::select! {
            _ = http.as_mut() => break,
            _ = conn.wake.notified() => {}
            _ = timer, if deadline.is_some() => {
                if conn.deadline(&shared.limits, stopping).is_some_and(|d| d <= Instant::now()) {
                    // Dropping the connection closes its socket.
                    break;
                }
            }
            _ = stop.wait_for(|s| *s), if !stopping => {
                stopping = true;
                http.as_mut().graceful_shutdown();
            }
        }
    }
}

/// One request: the token and `Host` checked, the body paced, both ends held.
async fn handle(
    shared: Arc<Shared>,
    conn: Arc<Conn>,
    peer: SocketAddr,
    req: Request<Incoming>,
) -> Result<Response<Body>, Infallible> {
    let held_body = conn.hold();
    let held_answer = conn.hold();
    let app = &shared.app;
    let presented = app.access.presented_token(req.headers());
    if matches!(presented, Presented::Upload | Presented::Read) {
        shared.authenticate(&conn);
    } else if let Err(unknown) = app.access.host_allowed(&req) {
        drop(req);
        drop(held_body);
        let r = misdirected(&unknown);
        return Ok(r.map(|b| Body::new(Held::new(b, held_answer))));
    }
    let limits = &shared.limits;
    let mut req = req.map(|b| {
        Body::new(Paced::new(
            b,
            limits.body_min_bytes,
            limits.body_timeout,
            held_body,
        ))
    });
    req.extensions_mut().insert(Peer(peer));
    let mut router = shared.router.clone();
    let r = match tower_service::Service::call(&mut router, req).await {
        Ok(r) => r,
        Err(e) => match e {},
    };
    Ok(r.map(|b| Body::new(Held::new(b, held_answer))))
}

/// 421 for a request without a token naming a host this server does not answer to.
fn misdirected(unknown: &UnknownHost) -> Response<Body> {
    let body = json!({ "error": unknown.to_string() });
    let mut r = Response::new(Body::from(body.to_string()));
    *r.status_mut() = StatusCode::MISDIRECTED_REQUEST;
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    r
}

/// Answers a connection there is no room for with 503 (briefly, and only so many at once),
/// then closes it.
async fn refuse(shared: &Shared, mut stream: TcpStream) {
    if shared.refusals.fetch_add(1, Ordering::Relaxed) >= MAX_REFUSALS {
        shared.refusals.fetch_sub(1, Ordering::Relaxed);
        return;
    }
    let body = r#"{"error":"too many connections without a token: try again later"}"#;
    let answer = format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\n\
         retry-after: {BUSY_RETRY_AFTER}\r\nconnection: close\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
    let _ = tokio::time::timeout(REFUSAL_LINGER, async {
        stream.write_all(answer.as_bytes()).await?;
        stream.shutdown().await?;
        // What the client sent is read and dropped: closing with unread bytes would reset
        // the connection, and the client might lose the answer.
        let mut sink = [0u8; 4096];
        while stream.read(&mut sink).await? > 0 {}
        io::Result::Ok(())
    })
    .await;
    shared.refusals.fetch_sub(1, Ordering::Relaxed);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accept_failures_back_off_and_connection_errors_do_not() {
        let mut b = Backoff::default();
        let emfile = io::Error::from_raw_os_error(libc::EMFILE);
        let waits: Vec<Duration> = (0..10).map(|_| b.after(&emfile).unwrap()).collect();
        assert_eq!(waits[0], BACKOFF_FIRST);
        assert!(waits.windows(2).all(|w| w[1] >= w[0]));
        assert_eq!(*waits.last().unwrap(), BACKOFF_MAX);
        // A second spent failing takes only a handful of tries, not a spin.
        let tries = waits
            .iter()
            .scan(Duration::ZERO, |t, w| {
                *t += *w;
                Some(*t)
            })
            .take_while(|t| *t <= Duration::from_secs(1))
            .count();
        assert!(tries <= 8, "{tries}");
        assert!(b.reset());
        assert_eq!(b.after(&emfile), Some(BACKOFF_FIRST));
        let aborted = io::Error::from(io::ErrorKind::ConnectionAborted);
        assert_eq!(b.after(&aborted), None);
        let nomem = io::Error::from_raw_os_error(libc::ENOBUFS);
        assert!(b.after(&nomem).is_some());
    }
}
