//! Taking a package in: `POST /api/packages` (multipart, as `upload` sends it) and
//! `PUT /api/packages/{name}.zip` (the raw zip with Content-MD5). The body streams to a
//! temporary file while its MD5 is computed; the MD5 is checked, the package verified, and
//! only then is it renamed into place, recorded and answered 2xx. Any refusal leaves
//! nothing behind: the temporary file goes with it.

use std::io::{Read, Write};
use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Multipart, Path, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use base64::Engine;
use bytes::Bytes;
use futures_util::StreamExt;
use hprof_shrink_core::Control;
use md5::{Digest, Md5};
use serde_json::json;
use tempfile::TempPath;

use super::blobs::package_key;
use super::store::NewPackage;
use super::App;

/// Bytes gathered before one write to the temporary file (and one hop to a blocking thread).
const WRITE_CHUNK: usize = 1 << 20;
/// The most a multipart text field (a `result.info` value, the md5) may hold.
const MAX_FIELD: usize = 64 * 1024;
/// What a multipart request may carry besides the file: boundaries, headers, text fields.
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
fn drain_later<F>(drain: impl FnOnce(u64) -> F)
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
async fn discard<S, E>(mut stream: S, mut left: u64) -> u64
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

/// Why a package was not taken: the status and a sentence for the client.
#[derive(Debug)]
pub struct Refusal(pub StatusCode, pub String);

impl Refusal {
    fn bad(msg: impl Into<String>) -> Refusal {
        Refusal(StatusCode::BAD_REQUEST, msg.into())
    }
    fn internal(msg: impl Into<String>) -> Refusal {
        Refusal(StatusCode::INTERNAL_SERVER_ERROR, msg.into())
    }
}

impl IntoResponse for Refusal {
    fn into_response(self) -> Response {
        let mut r = (self.0, Json(json!({ "error": self.1 }))).into_response();
        if self.0 == StatusCode::UNAUTHORIZED {
            r.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static("Bearer realm=\"hprof-shrink upload\""),
            );
        }
        if self.0 == StatusCode::PAYLOAD_TOO_LARGE {
            // The rest of the body is not read: the client must not reuse the connection.
            r.headers_mut()
                .insert(header::CONNECTION, HeaderValue::from_static("close"));
        }
        r
    }
}

fn too_large(max: u64) -> Refusal {
    Refusal(
        StatusCode::PAYLOAD_TOO_LARGE,
        format!("the package is larger than this server's limit of {max} bytes"),
    )
}

/// A body on its way to a temporary file: written in large pieces off the async threads,
/// hashed as it goes, cut off past the limit.
struct Sink {
    file: Option<std::fs::File>,
    path: TempPath,
    hasher: Option<Md5>,
    buf: Vec<u8>,
    len: u64,
    max: u64,
}

impl Sink {
    fn new(app: &App) -> Result<Sink, Refusal> {
        let (file, path) = tempfile::Builder::new()
            .prefix("upload-")
            .suffix(".part")
            .tempfile_in(app.dirs.tmp())
            .map_err(|e| Refusal::internal(format!("cannot make a temporary file: {e}")))?
            .into_parts();
        Ok(Sink {
            file: Some(file),
            path,
            hasher: Some(Md5::new()),
            buf: Vec::with_capacity(WRITE_CHUNK),
            len: 0,
            max: app.max_bytes,
        })
    }

    async fn push(&mut self, chunk: &[u8]) -> Result<(), Refusal> {
        self.len += chunk.len() as u64;
        if self.len > self.max {
            return Err(too_large(self.max));
        }
        self.buf.extend_from_slice(chunk);
        if self.buf.len() >= WRITE_CHUNK {
            self.flush().await?;
        }
        Ok(())
    }

    async fn flush(&mut self) -> Result<(), Refusal> {
        let (Some(mut file), Some(mut hasher)) = (self.file.take(), self.hasher.take()) else {
            return Err(Refusal::internal("the temporary file was lost"));
        };
        let buf = std::mem::replace(&mut self.buf, Vec::with_capacity(WRITE_CHUNK));
        let (file, hasher, r) = tokio::task::spawn_blocking(move || {
            hasher.update(&buf);
            let r = file.write_all(&buf);
            (file, hasher, r)
        })
        .await
        .map_err(|e| Refusal::internal(e.to_string()))?;
        r.map_err(|e| Refusal::internal(format!("cannot write the package: {e}")))?;
        self.file = Some(file);
        self.hasher = Some(hasher);
        Ok(())
    }

    /// Writes the rest and syncs: the MD5, the length and the file, complete on disk.
    async fn finish(mut self) -> Result<(TempPath, [u8; 16], u64), Refusal> {
        self.flush().await?;
        let file = self.file.take().expect("flush put it back");
        tokio::task::spawn_blocking(move || file.sync_all())
            .await
            .map_err(|e| Refusal::internal(e.to_string()))?
            .map_err(|e| Refusal::internal(format!("cannot sync the package: {e}")))?;
        let md5: [u8; 16] = self
            .hasher
            .take()
            .expect("flush put it back")
            .finalize()
            .into();
        Ok((self.path, md5, self.len))
    }
}

pub(super) fn hex(md5: &[u8; 16]) -> String {
    md5.iter().map(|b| format!("{b:02x}")).collect()
}

fn parse_hex_md5(s: &str) -> Option<[u8; 16]> {
    let s = s.trim();
    if s.len() != 32 || !s.is_ascii() {
        return None;
    }
    let mut out = [0u8; 16];
    for (i, o) in out.iter_mut().enumerate() {
        *o = u8::from_str_radix(&s[2 * i..2 * i + 2], 16).ok()?;
    }
    Some(out)
}

fn parse_content_md5(headers: &HeaderMap) -> Result<[u8; 16], Refusal> {
    let v = headers
        .get("content-md5")
        .ok_or_else(|| Refusal::bad("a PUT needs a Content-MD5 header (base64 of the MD5)"))?;
    base64::engine::general_purpose::STANDARD
        .decode(v.as_bytes())
        .ok()
        .and_then(|b| <[u8; 16]>::try_from(b.as_slice()).ok())
        .ok_or_else(|| Refusal::bad("Content-MD5 is not the base64 of 16 bytes"))
}

fn content_length(headers: &HeaderMap) -> Option<u64> {
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

/// Checks the MD5, verifies, renames into place and records. The temporary file is gone
/// whatever the outcome.
async fn accept(
    app: &App,
    tmp: TempPath,
    md5: [u8; 16],
    len: u64,
    claimed: [u8; 16],
    name: &str,
) -> Result<Response, Refusal> {
    let md5_hex = hex(&md5);
    if md5 != claimed {
        return Err(Refusal::bad(format!(
            "MD5 mismatch: the body's MD5 is {md5_hex}, the request said {}: the bytes were damaged on the way",
            hex(&claimed)
        )));
    }
    // The same bytes were verified and recorded before. Unless their file is gone (a lost
    // disk, a hand deletion): then this upload stores it again, and is still the duplicate.
    let key = package_key(&md5_hex);
    if let Some(first) = app.store.package_by_md5(&md5_hex).await.map_err(db)? {
        if app.blobs.exists(&key).await.map_err(store_failed)? {
            return Ok(taken(first, &md5_hex, len, Some(first)));
        }
    }
    let (tmp, verified) = tokio::task::spawn_blocking(move || {
        let v = verify(&tmp);
        (tmp, v)
    })
    .await
    .map_err(|e| Refusal::internal(e.to_string()))?;
    let verified = verified.map_err(|e| Refusal(StatusCode::UNPROCESSABLE_ENTITY, e))?;
    // Stored before it is recorded: a record always has its package. A process killed in
    // between leaves an object without a record, which the client's retry (it got no
    // answer) records; the same bytes land on the same key.
    app.blobs
        .put_file(&key, tmp, md5, len)
        .await
        .map_err(store_failed)?;
    let rec = NewPackage {
        md5: &md5_hex,
        name,
        bytes: len,
        manifest: &verified.manifest,
        extra: &verified.extra,
    };
    let outcome = app.store.insert_package(&rec).await.map_err(db)?;
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

fn store_failed(e: std::io::Error) -> Refusal {
    Refusal(
        StatusCode::SERVICE_UNAVAILABLE,
        format!("cannot store the package: {e}"),
    )
}

fn db(e: sqlx::Error) -> Refusal {
    Refusal(
        StatusCode::SERVICE_UNAVAILABLE,
        format!("the database failed: {e}"),
    )
}

/// A zip whose `verify` passes; the error is the reason, for a 422.
fn verify(path: &std::path::Path) -> Result<hprof_shrink_core::verify::Verified, String> {
    let mut magic = [0u8; 4];
    let n = std::fs::File::open(path)
        .and_then(|mut f| f.read(&mut magic))
        .map_err(|e| e.to_string())?;
    if n < 4 || &magic != b"PK\x03\x04" {
        return Err(
            "not a package: a package is a zip (result.info, the hprof, extra.info)".into(),
        );
    }
    hprof_shrink_core::verify::verify_path(path, None, None, &Control::default())
        .map_err(|e| format!("the package does not verify: {e}"))
}

pub async fn put(
    State(app): State<Arc<App>>,
    Path(name): Path<String>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, Refusal> {
    let mut stream = body.into_data_stream();
    let claimed = match put_allowed(&app, &name, &headers) {
        Ok(claimed) => claimed,
        Err(e) => {
            drain_later(|left| discard(stream, left));
            return Err(e);
        }
    };
    let mut sink = Sink::new(&app)?;
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|e| Refusal::bad(format!("the body was cut off: {e}")))?;
        if let Err(e) = sink.push(&chunk).await {
            if e.0 == StatusCode::PAYLOAD_TOO_LARGE {
                drain_later(|left| discard(stream, left));
            }
            return Err(e);
        }
    }
    let (tmp, md5, len) = sink.finish().await?;
    accept(&app, tmp, md5, len, claimed, &clean_name(&name)).await
}

/// What a PUT must pass before its body is read: the token, the path, the Content-MD5
/// (returned) and the announced length.
fn put_allowed(app: &App, name: &str, headers: &HeaderMap) -> Result<[u8; 16], Refusal> {
    if !app.access.may_upload(headers) {
        return Err(Refusal(
            StatusCode::UNAUTHORIZED,
            "an upload token is needed".into(),
        ));
    }
    if !name.ends_with(".zip") {
        return Err(Refusal(
            StatusCode::NOT_FOUND,
            "PUT a package to /api/packages/NAME.zip".into(),
        ));
    }
    let claimed = parse_content_md5(headers)?;
    if content_length(headers).is_some_and(|n| n > app.max_bytes) {
        return Err(too_large(app.max_bytes));
    }
    Ok(claimed)
}

pub async fn post(
    State(app): State<Arc<App>>,
    headers: HeaderMap,
    multipart: Result<Multipart, axum::extract::multipart::MultipartRejection>,
) -> Result<Response, Refusal> {
    let refused = if !app.access.may_upload(&headers) {
        Some(Refusal(
            StatusCode::UNAUTHORIZED,
            "an upload token is needed".into(),
        ))
    } else if content_length(&headers).is_some_and(|n| n > app.max_bytes + MULTIPART_SLACK) {
        Some(too_large(app.max_bytes))
    } else {
        None
    };
    let mut mp = match (multipart, refused) {
        (Ok(mp), None) => mp,
        (Err(e), None) => return Err(Refusal::bad(e.body_text())),
        (Err(_), Some(e)) => return Err(e),
        (Ok(mp), Some(e)) => {
            drain_later(|left| discard_parts(mp, left));
            return Err(e);
        }
    };

    let mut claimed: Option<[u8; 16]> = None;
    let mut file: Option<(TempPath, [u8; 16], u64, String)> = None;
    let bad_part = |e: axum::extract::multipart::MultipartError| {
        Refusal::bad(format!("bad multipart body: {}", e.body_text()))
    };
    while let Some(mut field) = mp.next_field().await.map_err(bad_part)? {
        match field.name() {
            Some("file") if file.is_none() => {
                let name = clean_name(field.file_name().unwrap_or("package.zip"));
                let mut sink = Sink::new(&app)?;
                while let Some(chunk) = field.chunk().await.map_err(bad_part)? {
                    if let Err(e) = sink.push(&chunk).await {
                        if e.0 == StatusCode::PAYLOAD_TOO_LARGE {
                            drop(field);
                            drain_later(|left| discard_parts(mp, left));
                        }
                        return Err(e);
                    }
                }
                let (tmp, md5, len) = sink.finish().await?;
                file = Some((tmp, md5, len, name));
            }
            Some("file") => return Err(Refusal::bad("more than one file part")),
            name => {
                let is_md5 = name == Some("md5");
                let text = read_field(&mut field).await.map_err(bad_part)?;
                let Some(text) = text else {
                    return Err(Refusal::bad("a text field is too long"));
                };
                if is_md5 {
                    claimed = Some(
                        parse_hex_md5(&text)
                            .ok_or_else(|| Refusal::bad("the md5 field is not 32 hex digits"))?,
                    );
                }
                // The result.info fields repeat what the package holds; the package itself
                // is what is recorded.
            }
        }
    }
    let (tmp, md5, len, name) = file.ok_or_else(|| Refusal::bad("no file part"))?;
    let claimed = claimed.ok_or_else(|| Refusal::bad("no md5 field (hex MD5 of the file)"))?;
    accept(&app, tmp, md5, len, claimed, &name).await
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
) -> Result<Option<String>, axum::extract::multipart::MultipartError> {
    let mut v: Vec<u8> = Vec::new();
    while let Some(chunk) = field.chunk().await? {
        let chunk: Bytes = chunk;
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
    fn md5_forms() {
        let m = parse_hex_md5("9e107d9d372bb6826bd81d3542a419d6").unwrap();
        assert_eq!(hex(&m), "9e107d9d372bb6826bd81d3542a419d6");
        assert!(parse_hex_md5("9e107d9d372bb6826bd81d3542a419").is_none());
        assert!(parse_hex_md5("zz107d9d372bb6826bd81d3542a419d6").is_none());
        let mut h = HeaderMap::new();
        h.insert("content-md5", "nhB9nTcrtoJr2B01QqQZ1g==".parse().unwrap());
        assert_eq!(parse_content_md5(&h).unwrap(), m);
        h.insert("content-md5", "bm8=".parse().unwrap());
        assert_eq!(
            parse_content_md5(&h).unwrap_err().0,
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
