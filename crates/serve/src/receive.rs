//! Taking a package in: `POST /api/packages` (multipart, as `upload` sends it) and
//! `PUT /api/packages/{name}.zip` (the raw zip with Content-MD5). The body streams to a
//! temporary file while its MD5 is computed; the MD5 is checked, the package verified, and
//! only then is it renamed into place, recorded and answered 2xx. Any refusal leaves
//! nothing behind: the temporary file goes with it. At most [`Limits::max_uploads`]
//! bodies are taken at once; a failure of the server's own (disk, database, store) is
//! 503 or 507 with `Retry-After`, never a 4xx.
//!
//! [`Limits::max_uploads`]: super::conn_limits::Limits::max_uploads

use std::io::{Read, Write};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use axum::body::Body;
use axum::extract::{FromRequest, Multipart, Path, Request, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use base64::Engine;
use bytes::Bytes;
use futures_util::StreamExt;
use hprof_shrink_core::kind::FileKind;
use hprof_shrink_core::Control;
use md5::{Digest, Md5};
use serde_json::json;
use tempfile::TempPath;
use tokio::sync::OwnedSemaphorePermit;

use super::api_error::{ApiError, Realm};
use super::auth::Denied;
use super::blobs::package_key;
use super::body::stalled_in;
use super::conn_limits::BUSY_RETRY_AFTER;
use super::fault::{scrub, Fault};
use super::heap_graph;
use super::store::NewPackage;
use crate::app::App;

/// Bytes gathered before one write to the temporary file (and one hop to a blocking thread).
const WRITE_CHUNK: usize = 1 << 20;
/// The most one multipart text field (a `result.info` value, the md5) may hold.
pub const MAX_FIELD: usize = 8 * 1024;
/// The most all of a request's text fields may hold together.
pub const MAX_FIELDS: u64 = 64 * 1024;
/// What a multipart request may carry besides its fields' contents (boundaries, part
/// headers), counting what the parser reads ahead: the body may not run further than
/// this ahead of the field bytes taken.
const MULTIPART_SLACK: u64 = 1 << 20;
/// How much of a refused body is still read, and for how long, so that its client gets
/// the answer (see [`drain_later`]).
const DRAIN_BYTES: u64 = 32 << 20;
const DRAIN_TIME: std::time::Duration = std::time::Duration::from_secs(10);

/// Reads and throws away what is left of a body refused before it was stored (no token,
/// too large, a bad header), up to [`DRAIN_BYTES`] or [`DRAIN_TIME`], while the answer
/// goes out. A connection closed with unread bytes is reset by the kernel, and a client
/// still sending would see a broken pipe instead of the answer (web servers do the same,
/// as a lingering close).
pub(crate) fn drain_later<F>(drain: impl FnOnce(u64) -> F)
where
    F: std::future::Future + Send + 'static,
    F::Output: Send,
{
    let f = drain(DRAIN_BYTES);
    tokio::spawn(async move {
        let _ = tokio::time::timeout(DRAIN_TIME, f).await;
    });
}

/// Reads up to `left` bytes of `stream`, throwing them away; what is left of `left`.
pub(crate) async fn discard<S, E>(mut stream: S, mut left: u64) -> u64
where
    S: futures_util::Stream<Item = Result<Bytes, E>> + Unpin,
{
    while let Some(Ok(chunk)) = stream.next().await {
        left = left.saturating_sub(chunk.len() as u64);
        if left == 0 {
            break;
        }
    }
    left
}

/// A refused upload: `status` and `message`, said in the log too (every refused upload is).
pub(crate) fn refused(status: StatusCode, message: impl Into<String>) -> ApiError {
    ApiError::new(status, message).logged()
}

pub(crate) fn bad(msg: impl Into<String>) -> ApiError {
    refused(StatusCode::BAD_REQUEST, msg)
}

pub(crate) fn unauthorized(why: Denied) -> ApiError {
    let msg = match why {
        Denied::Missing => "an upload token is needed: send it as Authorization: Bearer TOKEN",
        Denied::Wrong => "the upload token is wrong",
    };
    ApiError::unauthorized(msg, Realm::Upload).logged()
}

/// A body that stopped coming: the client may try again (408 is retried by `upload`).
fn stalled(e: impl std::fmt::Display) -> ApiError {
    refused(StatusCode::REQUEST_TIMEOUT, e.to_string())
}

/// Too many uploads at once.
fn busy() -> ApiError {
    refused(
        StatusCode::SERVICE_UNAVAILABLE,
        "the server is taking as many uploads as it may at once: try again shortly",
    )
    .retry_after(BUSY_RETRY_AFTER)
}

/// A cut-off or broken body: 408 if it stalled, else 400.
pub(crate) fn cut_off(e: &(dyn std::error::Error + 'static)) -> ApiError {
    match stalled_in(e) {
        Some(s) => stalled(s),
        None => bad(format!("the body was cut off: {e}")),
    }
}

fn too_large(max: u64) -> ApiError {
    too_large_a("package", max)
}

/// A body past its limit: `what` (a package, a mapping) and the limit named.
pub(crate) fn too_large_a(what: &str, max: u64) -> ApiError {
    refused(
        StatusCode::PAYLOAD_TOO_LARGE,
        format!("the {what} is larger than this server's limit of {max} bytes"),
    )
}

/// A body on its way to a temporary file: written in large pieces off the async threads,
/// hashed as it goes, cut off past the limit. Its buffer grows with what came (up to
/// [`WRITE_CHUNK`] and the chunk that fills it) and is used again: a stalled upload holds
/// what it sent since the last write, under 1 MiB.
struct Sink {
    file: Option<std::fs::File>,
    path: TempPath,
    hasher: Option<Md5>,
    buf: Vec<u8>,
    len: u64,
    max: u64,
    /// What the body is, for the refusal past `max`.
    what: &'static str,
    /// Bytes to keep free on the data disk; the room is looked at every [`ROOM_EVERY`].
    keep_free: u64,
    next_room: u64,
}

/// How often a body on its way in looks at the free space again.
const ROOM_EVERY: u64 = 64 << 20;

impl Sink {
    fn new(app: &App, max: u64) -> Result<Sink, ApiError> {
        Sink::named(app, max, "package")
    }

    fn named(app: &App, max: u64, what: &'static str) -> Result<Sink, ApiError> {
        let (file, path) = tempfile::Builder::new()
            .prefix("upload-")
            .suffix(".part")
            .tempfile_in(app.dirs.tmp())
            .map_err(|e| ApiError::disk(&e))?
            .into_parts();
        Ok(Sink {
            file: Some(file),
            path,
            hasher: Some(Md5::new()),
            buf: Vec::new(),
            len: 0,
            max,
            what,
            keep_free: app.budget.keep_free,
            next_room: 0,
        })
    }

    async fn push(&mut self, chunk: &[u8]) -> Result<(), ApiError> {
        self.len += chunk.len() as u64;
        if self.len > self.max {
            return Err(too_large_a(self.what, self.max));
        }
        let want = self.buf.len() + chunk.len();
        if want > self.buf.capacity() {
            // Doubling, but never past one write's worth and the chunk that ends it.
            let cap = want
                .max(2 * self.buf.capacity())
                .min(WRITE_CHUNK + chunk.len());
            self.buf.reserve_exact(cap - self.buf.len());
        }
        self.buf.extend_from_slice(chunk);
        if self.buf.len() >= WRITE_CHUNK {
            self.flush().await?;
        }
        Ok(())
    }

    async fn flush(&mut self) -> Result<(), ApiError> {
        let (Some(mut file), Some(mut hasher)) = (self.file.take(), self.hasher.take()) else {
            return Err(ApiError::internal("the temporary file was lost"));
        };
        let mut buf = std::mem::take(&mut self.buf);
        if self.len >= self.next_room {
            // The rest of a body of this size, at most, must fit (a statvfs: no write).
            room(&file, ROOM_EVERY.min(self.max), self.keep_free)?;
            self.next_room = self.len.saturating_add(ROOM_EVERY);
        }
        let (file, hasher, buf, r) = tokio::task::spawn_blocking(move || {
            hasher.update(&buf);
            let r = file.write_all(&buf);
            buf.clear();
            (file, hasher, buf, r)
        })
        .await?;
        r.map_err(|e| ApiError::disk(&e))?;
        self.file = Some(file);
        self.hasher = Some(hasher);
        self.buf = buf;
        Ok(())
    }

    /// Writes the rest and syncs: the MD5, the length and the file, complete on disk.
    async fn finish(mut self) -> Result<(TempPath, [u8; 16], u64), ApiError> {
        self.flush().await?;
        let file = self.file.take().expect("flush put it back");
        tokio::task::spawn_blocking(move || file.sync_all())
            .await?
            .map_err(|e| ApiError::disk(&e))?;
        let md5: [u8; 16] = self
            .hasher
            .take()
            .expect("flush put it back")
            .finalize()
            .into();
        Ok((self.path, md5, self.len))
    }
}

pub(crate) fn parse_content_md5(headers: &HeaderMap) -> Result<[u8; 16], ApiError> {
    let v = headers
        .get("content-md5")
        .ok_or_else(|| bad("a PUT needs a Content-MD5 header (base64 of the MD5)"))?;
    base64::engine::general_purpose::STANDARD
        .decode(v.as_bytes())
        .ok()
        .and_then(|b| <[u8; 16]>::try_from(b.as_slice()).ok())
        .ok_or_else(|| bad("Content-MD5 is not the base64 of 16 bytes"))
}

pub(crate) fn content_length(headers: &HeaderMap) -> Option<u64> {
    headers
        .get(header::CONTENT_LENGTH)?
        .to_str()
        .ok()?
        .parse()
        .ok()
}

/// A name to show and to offer for download: the last path component, printable, short.
fn clean_name(name: &str) -> String {
    let base = name.rsplit(['/', '\\']).next().unwrap_or("");
    let n: String = base.chars().filter(|c| !c.is_control()).take(200).collect();
    if n.is_empty() {
        "package.zip".into()
    } else {
        n
    }
}

/// The answer to a package taken: 201 with its id, or 200 naming the first upload of the
/// same content.
fn taken(id: i64, md5: &str, bytes: u64, first: Option<i64>) -> Response {
    let body = json!({
        "id": id,
        "md5": md5,
        "bytes": bytes,
        "duplicate": first.is_some(),
        "first": first,
        "url": format!("/packages/{id}"),
        "api": format!("/api/packages/{id}"),
    });
    let status = if first.is_some() {
        StatusCode::OK
    } else {
        StatusCode::CREATED
    };
    let mut r = (status, Json(body)).into_response();
    // What S3 answers a PUT with: `upload` checks it against the MD5 it sent.
    if let Ok(v) = HeaderValue::from_str(&format!("\"{md5}\"")) {
        r.headers_mut().insert(header::ETAG, v);
    }
    r
}

/// An upload received: its body on disk, what the request said of it.
struct Upload {
    tmp: TempPath,
    md5: [u8; 16],
    len: u64,
    /// The MD5 the request announced.
    claimed: [u8; 16],
    /// The file name it came under (cleaned).
    name: String,
    /// A multipart POST's text fields besides its md5.
    fields: Vec<(String, String)>,
}

/// [`take`], answered 2xx only while the database is still the file the server opened: a
/// record made in a file removed or replaced under the server would be lost at the next
/// start, so the client is told to try again (503) rather than that its package is kept.
async fn accept(app: &App, upload: Upload) -> Result<Response, ApiError> {
    // The database file is gone: nothing recorded now would outlive a restart (503).
    app.database_intact()?;
    let taken = take(app, upload).await?;
    app.database_intact()?;
    Ok(taken)
}

/// Checks the MD5, verifies, renames into place and records. The temporary file is gone
/// whatever the outcome.
async fn take(app: &App, upload: Upload) -> Result<Response, ApiError> {
    let Upload {
        tmp,
        md5,
        len,
        claimed,
        name,
        fields,
    } = upload;
    let md5_hex = hex::encode(md5);
    if md5 != claimed {
        return Err(bad(format!(
            "MD5 mismatch: the body's MD5 is {md5_hex}, the request said {}: the bytes were damaged on the way",
            hex::encode(claimed)
        )));
    }
    // The same bytes were verified and recorded before. Unless their file is gone (a lost
    // disk, a hand deletion): then this upload stores it again, and is still the duplicate.
    let key = package_key(&md5_hex);
    if let Some(first) = app.store.package_by_md5(&md5_hex).await? {
        if app
            .blobs
            .exists(&key)
            .await
            .map_err(|e| ApiError::store(&e))?
        {
            return Ok(taken(first, &md5_hex, len, Some(first)));
        }
    }
    let unpack = app.unpack();
    let (tmp, verified) = tokio::task::spawn_blocking(move || {
        let v = verify(&tmp, &unpack);
        (tmp, v)
    })
    .await?;
    let checked = verified.map_err(|e| match e {
        Unverified::Bad(why) => refused(
            StatusCode::UNPROCESSABLE_ENTITY,
            scrub(&why, &[(&tmp, "the package")], &app.server_dirs()),
        ),
        Unverified::TooLarge(why) => refused(StatusCode::PAYLOAD_TOO_LARGE, why),
        Unverified::Fault(f) => ApiError::from(f),
    })?;
    // Stored before it is recorded: a record always has its package. A process killed in
    // between leaves an object without a record, which the client's retry (it got no
    // answer) records; the same bytes land on the same key.
    app.blobs
        .put_file(&key, tmp, md5, len)
        .await
        .map_err(|e| ApiError::store(&e))?;
    let (info, name) = match checked {
        Checked::Package(info) => (info, heap_graph::package_name(name)),
        Checked::Trace(app) => (heap_graph::info(&app, &fields), heap_graph::name(&name)),
    };
    let rec = NewPackage {
        md5: &md5_hex,
        name: &name,
        bytes: len,
        manifest: &info.manifest,
        extra: &info.extra,
    };
    let outcome = app.store.insert_package(&rec).await?;
    match outcome {
        Ok(id) => {
            (app.log)(&format!(
                "received package {id} ({len} bytes, md5 {md5_hex})"
            ));
            app.wake.notify_waiters();
            if !app.answer_delay.is_zero() {
                tokio::time::sleep(app.answer_delay).await;
            }
            Ok(taken(id, &md5_hex, len, None))
        }
        Err(first) => Ok(taken(first, &md5_hex, len, Some(first))),
    }
}

/// Why a package did not verify: its own fault (422), too large inflated (413), or the
/// server's.
pub(crate) enum Unverified {
    Bad(String),
    TooLarge(String),
    Fault(Fault),
}

/// What an upload is, once checked.
enum Checked {
    /// A package whose `verify` passed: its `result.info` and `extra.info`.
    Package(heap_graph::Info),
    /// One process's heap graph, and what the trace says of its app.
    Trace(hprof_shrink_analyze::perfetto::about::App),
}

/// A zip whose `verify` passes, its hprof inflated under `tmp/` within the server's
/// bounds, or a heap-graph trace that [`heap_graph::check`] takes. A package that is
/// wrong is [`Unverified::Bad`], one that inflates past the limit
/// [`Unverified::TooLarge`]; a file the server cannot read or unpack to check (a full
/// disk, no room left to keep free, too many open files) is the server's failure.
fn verify(
    path: &std::path::Path,
    unpack: &hprof_shrink_core::space::Unpack,
) -> Result<Checked, Unverified> {
    let disk = |e: &std::io::Error| Unverified::Fault(Fault::io("the server's disk", e));
    let mut magic = [0u8; 4];
    let n = std::fs::File::open(path)
        .and_then(|mut f| f.read(&mut magic))
        .map_err(|e| disk(&e))?;
    match FileKind::of(&magic[..n]) {
        FileKind::Zip => {}
        FileKind::Trace => {
            return heap_graph::check(path)
                .map(Checked::Trace)
                .map_err(|e| match e {
                    heap_graph::Refused::Bad(why) => Unverified::Bad(why),
                    heap_graph::Refused::Io(e) => disk(&e),
                })
        }
        // An empty zip holds no package either.
        _ => {
            return Err(Unverified::Bad(
                "not a package: a package is a zip (result.info, the hprof, extra.info), or a Perfetto trace holding a Java heap graph".into(),
            ))
        }
    }
    // A package holding a heap-graph trace: its structure checked as verify's, its trace
    // unpacked within the same bounds and checked as a trace sent as it is.
    match hprof_shrink_core::package::trace::open(path, unpack) {
        Ok(Some(package)) => {
            return heap_graph::check_packaged(&package)
                .map(Checked::Package)
                .map_err(Unverified::Bad)
        }
        Ok(None) => {}
        Err(e) => return Err(unverified(e)),
    }
    hprof_shrink_core::verify::verify_path_within(path, None, None, unpack, &Control::default())
        .map(|v| {
            Checked::Package(heap_graph::Info {
                manifest: v.manifest,
                extra: v.extra,
            })
        })
        .map_err(unverified)
}

/// Why a package did not verify, by whose fault: the package's, past a bound, or the
/// server's disk.
fn unverified(e: hprof_shrink_core::Error) -> Unverified {
    use hprof_shrink_core::hprof::FormatError;
    use hprof_shrink_core::space::is_past_limit;
    use hprof_shrink_core::Error;
    let io = match &e {
        Error::Io(f) | Error::Format(FormatError::Io(f)) => Some(&f.source),
        Error::Write(e) | Error::Thread(e) => Some(e),
        _ => None,
    };
    match io {
        Some(io) if is_past_limit(io) => Unverified::TooLarge(format!(
            "the package's hprof inflates past this server's limit: {io}"
        )),
        Some(io) => Unverified::Fault(Fault {
            detail: e.to_string(),
            ..Fault::io("the server's disk", io)
        }),
        None => Unverified::Bad(format!("the package does not verify: {e}")),
    }
}

/// Whether `more` bytes still fit beside `file`, leaving `keep_free`: else 507.
fn room(file: &std::fs::File, more: u64, keep_free: u64) -> Result<(), ApiError> {
    let unpack = hprof_shrink_core::space::Unpack {
        keep_free,
        ..Default::default()
    };
    unpack
        .admit("the package", more, file)
        .map_err(|e| ApiError::disk(&e))
}

/// Takes one of the upload places, or says the server is busy.
pub(crate) fn upload_place(app: &Arc<App>) -> Result<OwnedSemaphorePermit, ApiError> {
    app.uploads.clone().try_acquire_owned().map_err(|_| busy())
}

pub(crate) async fn put(
    State(app): State<Arc<App>>,
    Path(name): Path<String>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    let stream = body.into_data_stream();
    let allowed = put_allowed(&app, &name, &headers).and_then(|c| Ok((c, upload_place(&app)?)));
    let (claimed, _place) = match allowed {
        Ok(c) => c,
        Err(e) => {
            drain_later(|left| discard(stream, left));
            return Err(e);
        }
    };
    let (tmp, md5, len) = to_file(&app, stream, app.max_bytes, "package").await?;
    let upload = Upload {
        tmp,
        md5,
        len,
        claimed,
        name: clean_name(&name),
        fields: Vec::new(),
    };
    accept(&app, upload).await
}

/// A raw body (`what`: a package, a mapping) streamed to a synced temporary file under
/// `tmp/`, hashed, cut off past `max` (413, what is left drained): the file, its MD5 and
/// its length.
pub(crate) async fn to_file<S>(
    app: &App,
    mut stream: S,
    max: u64,
    what: &'static str,
) -> Result<(TempPath, [u8; 16], u64), ApiError>
where
    S: futures_util::Stream<Item = Result<Bytes, axum::Error>> + Unpin + Send + 'static,
{
    let mut sink = Sink::named(app, max, what)?;
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|e| cut_off(&e))?;
        if let Err(e) = sink.push(&chunk).await {
            if e.status == StatusCode::PAYLOAD_TOO_LARGE {
                drain_later(|left| discard(stream, left));
            }
            return Err(e);
        }
    }
    sink.finish().await
}

/// What a PUT must pass before its body is read: the token, the path, the Content-MD5
/// (returned) and the announced length.
fn put_allowed(app: &App, name: &str, headers: &HeaderMap) -> Result<[u8; 16], ApiError> {
    app.access.upload_check(headers).map_err(unauthorized)?;
    if !heap_graph::put_name_allowed(name) {
        return Err(refused(
            StatusCode::NOT_FOUND,
            "PUT a package to /api/packages/NAME.zip (a heap-graph trace to NAME.pftrace)",
        ));
    }
    let claimed = parse_content_md5(headers)?;
    if content_length(headers).is_some_and(|n| n > app.max_bytes) {
        return Err(too_large(app.max_bytes));
    }
    Ok(claimed)
}

/// How far a multipart body may be read: no further than [`MULTIPART_SLACK`] ahead of the
/// field bytes the handler has taken (which it bounds itself), so that a part header
/// without end, or fields read ahead of the handler, cannot grow the parser's buffer.
#[derive(Default)]
struct Budget {
    read: AtomicU64,
    taken: AtomicU64,
    /// Past the limit: the body is refused 413.
    over: AtomicBool,
    /// Refused, and being read only to be thrown away.
    draining: AtomicBool,
}

#[derive(Debug, thiserror::Error)]
#[error("the multipart body runs past its fields")]
struct OverBudget;

impl Budget {
    fn take(&self, n: usize) {
        self.taken.fetch_add(n as u64, Ordering::Relaxed);
    }

    /// `body` read under this budget.
    fn wrap(self: &Arc<Self>, body: Body) -> Body {
        let budget = self.clone();
        Body::from_stream(body.into_data_stream().map(move |chunk| {
            let chunk = chunk?;
            let read =
                budget.read.fetch_add(chunk.len() as u64, Ordering::Relaxed) + chunk.len() as u64;
            if read > budget.taken.load(Ordering::Relaxed) + MULTIPART_SLACK
                && !budget.draining.load(Ordering::Relaxed)
            {
                budget.over.store(true, Ordering::Relaxed);
                return Err(axum::Error::new(OverBudget));
            }
            Ok::<Bytes, axum::Error>(chunk)
        }))
    }
}

pub(crate) async fn post(State(app): State<Arc<App>>, req: Request) -> Result<Response, ApiError> {
    let (parts, body) = req.into_parts();
    let headers = &parts.headers;
    let budget = Arc::new(Budget::default());
    let body = budget.wrap(body);
    let refused = app
        .access
        .upload_check(headers)
        .map_err(unauthorized)
        .and_then(|()| {
            if content_length(headers).is_some_and(|n| n > app.max_bytes + MULTIPART_SLACK) {
                Err(too_large(app.max_bytes))
            } else {
                upload_place(&app)
            }
        });
    let multipart = Multipart::from_request(Request::from_parts(parts, body), &()).await;
    let (mut mp, _place) = match (multipart, refused) {
        (Ok(mp), Ok(place)) => (mp, place),
        (Err(e), Ok(_)) => return Err(bad(e.body_text())),
        (Err(_), Err(e)) => return Err(e),
        (Ok(mp), Err(e)) => {
            budget.draining.store(true, Ordering::Relaxed);
            drain_later(|left| discard_parts(mp, left));
            return Err(e);
        }
    };
    let result = read_parts(&app, &mut mp, &budget).await;
    if let Err(e) = &result {
        if e.status == StatusCode::PAYLOAD_TOO_LARGE {
            budget.draining.store(true, Ordering::Relaxed);
            drain_later(|left| discard_parts(mp, left));
        }
    }
    accept(&app, result?).await
}

/// The text fields of a multipart upload kept for a trace (they stand for its
/// `result.info`): a package's `result.info` holds about ten.
const KEPT_FIELDS: usize = 64;

/// The fields of a multipart upload: the file to a temporary file, the md5, the other
/// text fields (the first [`KEPT_FIELDS`]). Text fields count against `--max-bytes` with
/// the file, each at most [`MAX_FIELD`] and all at most [`MAX_FIELDS`].
async fn read_parts(app: &App, mp: &mut Multipart, budget: &Budget) -> Result<Upload, ApiError> {
    let mut claimed: Option<[u8; 16]> = None;
    let mut file: Option<(TempPath, [u8; 16], u64, String)> = None;
    let mut fields = Vec::new();
    let mut text: u64 = 0;
    let bad_part = |e: axum::extract::multipart::MultipartError| {
        if budget.over.load(Ordering::Relaxed) {
            refused(
                StatusCode::PAYLOAD_TOO_LARGE,
                format!(
                    "the multipart body carries more than its fields ({} bytes of boundaries and part headers at most)",
                    MULTIPART_SLACK
                ),
            )
        } else if let Some(s) = stalled_in(&e) {
            stalled(s)
        } else {
            bad(format!("bad multipart body: {}", e.body_text()))
        }
    };
    while let Some(mut field) = mp.next_field().await.map_err(bad_part)? {
        match field.name() {
            Some("file") if file.is_none() => {
                let name = clean_name(field.file_name().unwrap_or("package.zip"));
                let mut sink = Sink::new(app, app.max_bytes.saturating_sub(text))?;
                while let Some(chunk) = field.chunk().await.map_err(bad_part)? {
                    budget.take(chunk.len());
                    sink.push(&chunk).await?;
                }
                let (tmp, md5, len) = sink.finish().await?;
                file = Some((tmp, md5, len, name));
            }
            Some("file") => return Err(bad("more than one file part")),
            name => {
                let name: String = name.unwrap_or("").chars().take(64).collect();
                let is_md5 = name == "md5";
                let value = read_field(&mut field, budget).await.map_err(bad_part)?;
                let Some(value) = value else {
                    return Err(refused(
                        StatusCode::PAYLOAD_TOO_LARGE,
                        format!("the text field {name:?} is longer than {MAX_FIELD} bytes"),
                    ));
                };
                text += value.len() as u64;
                if text > MAX_FIELDS {
                    return Err(refused(
                        StatusCode::PAYLOAD_TOO_LARGE,
                        format!("the text fields hold more than {MAX_FIELDS} bytes together"),
                    ));
                }
                let used = text + file.as_ref().map_or(0, |f| f.2);
                if used > app.max_bytes {
                    return Err(too_large(app.max_bytes));
                }
                if is_md5 {
                    if claimed.is_some() {
                        return Err(bad("the md5 field is given more than once"));
                    }
                    claimed = Some(
                        crate::hex::parse_md5(&value)
                            .ok_or_else(|| bad("the md5 field is not 32 hex digits"))?,
                    );
                } else if fields.len() < KEPT_FIELDS {
                    // A package's result.info fields repeat what it holds, and what it
                    // holds is recorded; a trace holds none, and these stand for them.
                    fields.push((name, value));
                }
            }
        }
    }
    let (tmp, md5, len, name) = file.ok_or_else(|| bad("no file part"))?;
    let claimed = claimed.ok_or_else(|| bad("no md5 field (hex MD5 of the file)"))?;
    Ok(Upload {
        tmp,
        md5,
        len,
        claimed,
        name,
        fields,
    })
}

/// Reads up to `left` bytes of what is left of a multipart body, throwing them away.
async fn discard_parts(mut mp: Multipart, mut left: u64) {
    while let Ok(Some(field)) = mp.next_field().await {
        left = discard(field, left).await;
        if left == 0 {
            return;
        }
    }
}

/// A text field, or None past [`MAX_FIELD`].
async fn read_field(
    field: &mut axum::extract::multipart::Field<'_>,
    budget: &Budget,
) -> Result<Option<String>, axum::extract::multipart::MultipartError> {
    let mut v: Vec<u8> = Vec::new();
    while let Some(chunk) = field.chunk().await? {
        let chunk: Bytes = chunk;
        budget.take(chunk.len());
        if v.len() + chunk.len() > MAX_FIELD {
            return Ok(None);
        }
        v.extend_from_slice(&chunk);
    }
    Ok(Some(String::from_utf8_lossy(&v).into_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_md5_is_base64_of_16_bytes() {
        let m = crate::hex::parse_md5("9e107d9d372bb6826bd81d3542a419d6").unwrap();
        let mut h = HeaderMap::new();
        h.insert("content-md5", "nhB9nTcrtoJr2B01QqQZ1g==".parse().unwrap());
        assert_eq!(parse_content_md5(&h).unwrap(), m);
        h.insert("content-md5", "bm8=".parse().unwrap());
        assert_eq!(
            parse_content_md5(&h).unwrap_err().status,
            StatusCode::BAD_REQUEST
        );
    }

    #[test]
    fn names_are_cut_to_their_last_component() {
        assert_eq!(clean_name("../../etc/passwd"), "passwd");
        assert_eq!(clean_name("a\\b.zip"), "b.zip");
        assert_eq!(clean_name("x\n.zip"), "x.zip");
        assert_eq!(clean_name(""), "package.zip");
    }
}
