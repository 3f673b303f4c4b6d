//! What the upload tests share: packages made by the real binary from a fixture, an HTTP(S)
//! server on loopback that stores what it receives and injects faults, and a TCP proxy
//! that damages request bodies on the way.
//!
//! Every server and proxy is bounded: a fixed number of connections, a lifetime of
//! [`LIFETIME`], and it stops when dropped.

#![allow(dead_code)] // each test file uses part of this

#[path = "../common/mod.rs"]
mod common;
pub mod moto;
pub use common::*;

use std::collections::VecDeque;
use std::convert::Infallible;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime};

use base64::Engine;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use md5::{Digest, Md5};
use tokio::io::AsyncReadExt;

/// The longest any test server or proxy lives.
pub const LIFETIME: Duration = Duration::from_secs(120);
/// The most connections a server or proxy accepts.
const MAX_CONNECTIONS: usize = 200;

pub fn md5_base64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(Md5::digest(bytes))
}

/// A package made by the real binary from the ART fixture: `--strip none --level 0`, so
/// the zip holds the whole dump (about 290 KB), large enough to be cut mid-body.
pub fn make_zip(dir: &Path, name: &str) -> PathBuf {
    let zip = dir.join(name);
    let o = run(&[
        s(&fixture("art-api25.hprof")),
        s(&zip),
        "--strip",
        "none",
        "--level",
        "0",
        "-q",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    zip
}

/// What the server does with one connection (one request: the server closes each
/// connection after answering).
#[derive(Debug, Clone)]
pub enum Fault {
    /// Read the request, answer this status and body.
    Status(u16, String),
    /// Answer this status with `Retry-After: VALUE`.
    RetryAfter(u16, String),
    /// Answer this status with a `Retry-After` HTTP-date this many seconds ahead.
    RetryAfterDate(u16, u64),
    /// Read this many bytes of the request, then reset the connection.
    Reset(usize),
    /// Store the upload, then answer 200 only after this long.
    SlowStore(Duration),
    /// Answer this status with `Location: VALUE`.
    Redirect(u16, String),
    /// Answer this status with a body quoting the request's Authorization header, as a
    /// careless server might.
    EchoAuth(u16),
    /// Answer this status with this many bytes of filler, then every request header
    /// (`name: value`) quoted back.
    EchoHeaders(u16, usize),
}

#[derive(Debug, Clone)]
pub struct Received {
    pub method: String,
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub at: Instant,
    pub fault: Option<Fault>,
    pub status: Option<u16>,
    /// The watched directory's entries when the request arrived and just before the
    /// answer was sent.
    pub watched_on_arrival: Vec<String>,
    pub watched_at_answer: Vec<String>,
}

impl Received {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

#[derive(Debug, Clone)]
pub struct Stored {
    pub method: String,
    /// The multipart file name, or the last path segment of a PUT.
    pub file_name: String,
    pub content_type: Option<String>,
    pub bytes: Vec<u8>,
    /// The multipart text fields, in order.
    pub fields: Vec<(String, String)>,
}

impl Stored {
    pub fn field(&self, name: &str) -> Option<&str> {
        self.fields
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

#[derive(Default)]
struct State {
    faults: VecDeque<Fault>,
    received: Vec<Received>,
    stored: Vec<Stored>,
    connections: usize,
    watch: Option<PathBuf>,
    /// Added before every successful answer.
    delay: Duration,
}

type Shared = Arc<Mutex<State>>;

fn lock(s: &Shared) -> std::sync::MutexGuard<'_, State> {
    s.lock().unwrap_or_else(|e| e.into_inner())
}

/// An HTTP (or HTTPS) server on 127.0.0.1 that checks and stores uploads: multipart POSTs
/// (the `md5` field must be the MD5 of the `file` part) and PUTs (`Content-MD5` must match
/// the body). It answers 400 when a check fails; before that, the queued faults are
/// applied, one per connection.
pub struct Server {
    pub addr: SocketAddr,
    scheme: &'static str,
    state: Shared,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Server {
    pub fn start(faults: Vec<Fault>) -> Server {
        Server::start_inner(faults, None)
    }

    /// HTTPS with this certificate and key.
    pub fn start_tls(
        cert: rustls::pki_types::CertificateDer<'static>,
        key: rustls::pki_types::PrivateKeyDer<'static>,
    ) -> Server {
        Server::start_tls_with(cert, key, Vec::new())
    }

    pub fn start_tls_with(
        cert: rustls::pki_types::CertificateDer<'static>,
        key: rustls::pki_types::PrivateKeyDer<'static>,
        faults: Vec<Fault>,
    ) -> Server {
        let config = rustls::ServerConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(vec![cert], key)
        .unwrap();
        Server::start_inner(
            faults,
            Some(tokio_rustls::TlsAcceptor::from(Arc::new(config))),
        )
    }

    fn start_inner(faults: Vec<Fault>, tls: Option<tokio_rustls::TlsAcceptor>) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap();
        let state: Shared = Arc::new(Mutex::new(State {
            faults: faults.into(),
            ..State::default()
        }));
        let (stop, mut stopped) = tokio::sync::oneshot::channel::<()>();
        let st = state.clone();
        let scheme = if tls.is_some() { "https" } else { "http" };
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener).unwrap();
                let end = tokio::time::sleep(LIFETIME);
                tokio::pin!(end);
                for _ in 0..MAX_CONNECTIONS {
                    tokio::select! {
                        _ = &mut stopped => break,
                        _ = &mut end => break,
                        r = listener.accept() => {
                            if let Ok((stream, _)) = r {
                                tokio::spawn(serve(stream, st.clone(), tls.clone()));
                            }
                        }
                    }
                }
            });
        });
        Server {
            addr,
            scheme,
            state,
            stop: Some(stop),
            thread: Some(thread),
        }
    }

    /// `http://127.0.0.1:PORT/path`.
    pub fn url(&self, path: &str) -> String {
        format!("{}://{}{path}", self.scheme, self.addr)
    }

    /// The same server named `localhost`: another origin for a client.
    pub fn url_localhost(&self, path: &str) -> String {
        format!("{}://localhost:{}{path}", self.scheme, self.addr.port())
    }

    /// Snapshot this directory's entries around each request.
    pub fn watch(&self, dir: &Path) {
        lock(&self.state).watch = Some(dir.to_path_buf());
    }

    /// Delay every successful answer by this much.
    pub fn delay(&self, d: Duration) {
        lock(&self.state).delay = d;
    }

    pub fn received(&self) -> Vec<Received> {
        lock(&self.state).received.clone()
    }

    pub fn stored(&self) -> Vec<Stored> {
        lock(&self.state).stored.clone()
    }

    pub fn connections(&self) -> usize {
        lock(&self.state).connections
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn snapshot(state: &Shared) -> Vec<String> {
    let watch = lock(state).watch.clone();
    watch.map(|d| names_in(&d)).unwrap_or_default()
}

async fn serve(
    stream: tokio::net::TcpStream,
    state: Shared,
    tls: Option<tokio_rustls::TlsAcceptor>,
) {
    let fault = {
        let mut st = lock(&state);
        st.connections += 1;
        st.faults.pop_front()
    };
    if let Some(Fault::Reset(n)) = fault {
        return reset(stream, n, &state).await;
    }
    let st = state.clone();
    let svc = service_fn(move |req| handle(req, fault.clone(), st.clone()));
    // One request per connection, so each queued fault meets exactly one request.
    let mut conn = http1::Builder::new();
    conn.keep_alive(false);
    match tls {
        Some(acceptor) => {
            if let Ok(s) = acceptor.accept(stream).await {
                let _ = conn.serve_connection(TokioIo::new(s), svc).await;
            }
        }
        None => {
            let _ = conn.serve_connection(TokioIo::new(stream), svc).await;
        }
    }
}

async fn reset(mut stream: tokio::net::TcpStream, n: usize, state: &Shared) {
    let on_arrival = snapshot(state);
    let mut buf = vec![0u8; n];
    let mut got = 0;
    let deadline = Instant::now() + Duration::from_secs(10);
    while got < n && Instant::now() < deadline {
        match tokio::time::timeout(Duration::from_secs(10), stream.read(&mut buf[got..])).await {
            Ok(Ok(0)) | Ok(Err(_)) | Err(_) => break,
            Ok(Ok(k)) => got += k,
        }
    }
    let head = String::from_utf8_lossy(&buf[..got]).into_owned();
    let mut words = head.split_whitespace();
    let received = Received {
        method: words.next().unwrap_or("").to_string(),
        path: words.next().unwrap_or("").to_string(),
        headers: Vec::new(),
        at: Instant::now(),
        fault: Some(Fault::Reset(n)),
        status: None,
        watched_on_arrival: on_arrival,
        watched_at_answer: snapshot(state),
    };
    lock(state).received.push(received);
    // A zero linger makes the close a reset (RST), not an orderly end.
    let _ = stream.set_zero_linger();
    drop(stream);
}

fn respond(status: u16, body: impl Into<Bytes>) -> Response<Full<Bytes>> {
    Response::builder()
        .status(status)
        .body(Full::new(body.into()))
        .unwrap()
}

async fn handle(
    req: Request<Incoming>,
    fault: Option<Fault>,
    state: Shared,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let (parts, body) = req.into_parts();
    let headers: Vec<(String, String)> = parts
        .headers
        .iter()
        .map(|(k, v)| {
            (
                k.to_string(),
                String::from_utf8_lossy(v.as_bytes()).into_owned(),
            )
        })
        .collect();
    let idx = {
        let received = Received {
            method: parts.method.to_string(),
            path: parts
                .uri
                .path_and_query()
                .map(|p| p.to_string())
                .unwrap_or_default(),
            headers: headers.clone(),
            at: Instant::now(),
            fault: fault.clone(),
            status: None,
            watched_on_arrival: snapshot(&state),
            watched_at_answer: Vec::new(),
        };
        let mut st = lock(&state);
        st.received.push(received);
        st.received.len() - 1
    };
    let body = match body.collect().await {
        Ok(b) => b.to_bytes(),
        Err(e) => {
            return Ok(finish(&state, idx, respond(400, format!("body: {e}"))));
        }
    };
    let header = |name: &str| {
        headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.clone())
    };
    let resp = match fault {
        Some(Fault::Status(code, text)) => respond(code, text),
        Some(Fault::RetryAfter(code, v)) => {
            let mut r = respond(code, "slow down");
            r.headers_mut().insert("retry-after", v.parse().unwrap());
            r
        }
        Some(Fault::RetryAfterDate(code, secs)) => {
            let mut r = respond(code, "later");
            let at = httpdate::fmt_http_date(SystemTime::now() + Duration::from_secs(secs));
            r.headers_mut().insert("retry-after", at.parse().unwrap());
            r
        }
        Some(Fault::Redirect(code, location)) => {
            let mut r = respond(code, "");
            r.headers_mut()
                .insert("location", location.parse().unwrap());
            r
        }
        Some(Fault::EchoAuth(code)) => respond(
            code,
            format!(
                "denied; you sent Authorization: {}",
                header("authorization").unwrap_or_default()
            ),
        ),
        Some(Fault::EchoHeaders(code, pad)) => {
            let mut text = " ".repeat(pad);
            for (k, v) in &headers {
                text.push_str(&format!("{k}: {v}\n"));
            }
            respond(code, text)
        }
        Some(Fault::SlowStore(d)) => match store(&parts, &headers, body).await {
            Ok(s) => {
                lock(&state).stored.push(s);
                tokio::time::sleep(d).await;
                respond(200, "stored")
            }
            Err(e) => respond(400, e),
        },
        Some(Fault::Reset(_)) => unreachable!("handled before HTTP"),
        None => match store(&parts, &headers, body).await {
            Ok(s) => {
                let delay = lock(&state).delay;
                tokio::time::sleep(delay).await;
                lock(&state).stored.push(s);
                respond(200, "stored")
            }
            Err(e) => respond(400, e),
        },
    };
    Ok(finish(&state, idx, resp))
}

fn finish(state: &Shared, idx: usize, resp: Response<Full<Bytes>>) -> Response<Full<Bytes>> {
    let at_answer = snapshot(state);
    let mut st = lock(state);
    st.received[idx].status = Some(resp.status().as_u16());
    st.received[idx].watched_at_answer = at_answer;
    resp
}

/// Checks and parses an upload; the error is the 400 body.
async fn store(
    parts: &hyper::http::request::Parts,
    headers: &[(String, String)],
    body: Bytes,
) -> Result<Stored, String> {
    let header = |name: &str| {
        headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.clone())
    };
    match parts.method.as_str() {
        "POST" => {
            let ct = header("content-type").ok_or("no content-type")?;
            let boundary = multer::parse_boundary(&ct).map_err(|e| e.to_string())?;
            let stream = futures_util::stream::once(async move { Ok::<Bytes, Infallible>(body) });
            let mut mp = multer::Multipart::new(stream, boundary);
            let mut fields = Vec::new();
            let mut file = None;
            while let Some(field) = mp.next_field().await.map_err(|e| e.to_string())? {
                let name = field.name().unwrap_or("").to_string();
                if name == "file" {
                    let file_name = field.file_name().unwrap_or("").to_string();
                    let ct = field.content_type().map(|m| m.to_string());
                    let data = field.bytes().await.map_err(|e| e.to_string())?;
                    file = Some((file_name, ct, data));
                } else {
                    fields.push((name, field.text().await.map_err(|e| e.to_string())?));
                }
            }
            let (file_name, content_type, data) = file.ok_or("no file part")?;
            let claimed = fields
                .iter()
                .find(|(k, _)| k == "md5")
                .map(|(_, v)| v.clone())
                .ok_or("no md5 field")?;
            let actual = md5_hex(&data);
            if claimed != actual {
                return Err(format!("md5 mismatch: field {claimed}, file {actual}"));
            }
            Ok(Stored {
                method: "POST".into(),
                file_name,
                content_type,
                bytes: data.to_vec(),
                fields,
            })
        }
        "PUT" => {
            let claimed = header("content-md5").ok_or("no Content-MD5")?;
            let actual = md5_base64(&body);
            if claimed != actual {
                return Err(format!(
                    "BadDigest: Content-MD5 {claimed} does not match the body's {actual}"
                ));
            }
            Ok(Stored {
                method: "PUT".into(),
                file_name: parts
                    .uri
                    .path()
                    .rsplit('/')
                    .next()
                    .unwrap_or("")
                    .to_string(),
                content_type: header("content-type"),
                bytes: body.to_vec(),
                fields: Vec::new(),
            })
        }
        m => Err(format!("method {m} not accepted")),
    }
}

/// A TCP proxy on 127.0.0.1 that forwards to `upstream`, flipping one byte in the body of
/// each of the first `corrupt` HTTP requests it sees (at body offset 1000, or the last
/// byte of a shorter body) — a network that damages data without breaking the
/// connection.
pub struct CorruptingProxy {
    pub addr: SocketAddr,
    stop: Arc<AtomicBool>,
    corrupted: Arc<AtomicUsize>,
}

impl CorruptingProxy {
    pub fn start(upstream: SocketAddr, corrupt: usize) -> CorruptingProxy {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let budget = Arc::new(AtomicUsize::new(corrupt));
        let corrupted = Arc::new(AtomicUsize::new(0));
        let (stop2, corrupted2) = (stop.clone(), corrupted.clone());
        std::thread::spawn(move || {
            let end = Instant::now() + LIFETIME;
            let mut accepted = 0;
            while !stop2.load(Ordering::Relaxed)
                && Instant::now() < end
                && accepted < MAX_CONNECTIONS
            {
                match listener.accept() {
                    Ok((client, _)) => {
                        accepted += 1;
                        client.set_nonblocking(false).unwrap();
                        let Ok(server) = TcpStream::connect(upstream) else {
                            continue;
                        };
                        let (b, c) = (budget.clone(), corrupted2.clone());
                        std::thread::spawn(move || pipe_pair(client, server, b, c));
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(10)),
                }
            }
        });
        CorruptingProxy {
            addr,
            stop,
            corrupted,
        }
    }

    /// How many request bodies were damaged.
    pub fn corrupted(&self) -> usize {
        self.corrupted.load(Ordering::SeqCst)
    }
}

impl Drop for CorruptingProxy {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

fn pipe_pair(
    client: TcpStream,
    server: TcpStream,
    budget: Arc<AtomicUsize>,
    corrupted: Arc<AtomicUsize>,
) {
    for s in [&client, &server] {
        let _ = s.set_read_timeout(Some(LIFETIME));
    }
    let (mut c_read, mut s_write) = (client.try_clone().unwrap(), server.try_clone().unwrap());
    let upstream = std::thread::spawn(move || {
        let mut parser = RequestBodies::default();
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            let n = match c_read.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            parser.feed(&mut buf[..n], &budget, &corrupted);
            if s_write.write_all(&buf[..n]).is_err() {
                break;
            }
        }
        let _ = s_write.shutdown(std::net::Shutdown::Write);
    });
    let (mut s_read, mut c_write) = (server, client);
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = match s_read.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        if c_write.write_all(&buf[..n]).is_err() {
            break;
        }
    }
    let _ = c_write.shutdown(std::net::Shutdown::Write);
    let _ = upstream.join();
}

/// Follows HTTP/1.1 requests with a Content-Length through a byte stream, to find where
/// each body is.
#[derive(Default)]
struct RequestBodies {
    head: Vec<u8>,
    /// Body bytes still to come, where the byte to flip is (from the body's start), and
    /// how far into the body the stream is.
    body: Option<(u64, u64, u64)>,
}

impl RequestBodies {
    fn feed(&mut self, data: &mut [u8], budget: &AtomicUsize, corrupted: &AtomicUsize) {
        let mut i = 0;
        while i < data.len() {
            match &mut self.body {
                Some((left, flip_at, pos)) => {
                    let take = (*left).min((data.len() - i) as u64);
                    if *flip_at >= *pos && *flip_at < *pos + take {
                        data[i + (*flip_at - *pos) as usize] ^= 0xFF;
                        corrupted.fetch_add(1, Ordering::SeqCst);
                    }
                    *left -= take;
                    *pos += take;
                    i += take as usize;
                    if *left == 0 {
                        self.body = None;
                    }
                }
                None => {
                    self.head.push(data[i]);
                    i += 1;
                    if self.head.ends_with(b"\r\n\r\n") {
                        let head = String::from_utf8_lossy(&self.head).to_ascii_lowercase();
                        let len: u64 = head
                            .lines()
                            .find_map(|l| l.strip_prefix("content-length:"))
                            .and_then(|v| v.trim().parse().ok())
                            .unwrap_or(0);
                        self.head.clear();
                        let damage = len > 0
                            && budget
                                .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |b| {
                                    b.checked_sub(1)
                                })
                                .is_ok();
                        let flip_at = if damage { 1000.min(len - 1) } else { u64::MAX };
                        if len > 0 {
                            self.body = Some((len, flip_at, 0));
                        }
                    }
                }
            }
        }
    }
}

/// A free TCP port on 127.0.0.1 (for servers started as other processes), never the same
/// one twice in this process: the kernel may hand a port just released to the next caller,
/// and two tests running side by side would then start their servers on one port.
pub fn free_port() -> u16 {
    static GIVEN: std::sync::Mutex<Vec<u16>> = std::sync::Mutex::new(Vec::new());
    let mut given = GIVEN.lock().unwrap_or_else(|e| e.into_inner());
    loop {
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        if !given.contains(&port) {
            given.push(port);
            return port;
        }
    }
}
