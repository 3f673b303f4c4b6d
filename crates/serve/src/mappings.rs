//! `PUT /api/mappings/{appVersion}`: an app version's R8/ProGuard `mapping.txt`, with the
//! upload token. The body streams to a temporary file (at most [`MAX_MAPPING_BYTES`]), is
//! read with the analyzer's mapping reader (a text that does not read is 422 naming the
//! line, and nothing is kept), stored in the package store by its MD5 and recorded as the
//! version's mapping; the version's packages already analyzed without it are queued for
//! re-analysis, one job each, behind every new package (as regrouping's are). Analyses of
//! the version's packages use it from then on (see [`crate::jobs`]).

use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use hprof_shrink_analyze::mapping::Counts;
use hprof_shrink_analyze::Mapping;
use serde_json::json;

use super::api_error::ApiError;
use super::blobs::mapping_key;
use super::fault::Fault;
use super::receive::{
    bad, content_length, discard, drain_later, parse_content_md5, refused, to_file, too_large_a,
    unauthorized, upload_place,
};
use super::store::NewMapping;
use crate::app::App;

/// The largest mapping taken, in bytes. It is checked as it is read from the disk, a line
/// at a time; an analysis of the version's packages holds it whole in its child process
/// with its tables (24 bytes a class, 16 a field), within `--analysis-memory` (see
/// [`crate::jobs`]: an analysis the mapping takes past its budget is made without it).
pub const MAX_MAPPING_BYTES: u64 = 256 << 20;

/// What a PUT must pass before its body is read: the token, the version, the announced
/// length. Returns the Content-MD5 when one was sent (checked against the body).
fn allowed(app: &App, version: &str, headers: &HeaderMap) -> Result<Option<[u8; 16]>, ApiError> {
    app.access.upload_check(headers).map_err(unauthorized)?;
    check_version(version)?;
    let claimed = match headers.get("content-md5") {
        Some(_) => Some(parse_content_md5(headers)?),
        None => None,
    };
    if content_length(headers).is_some_and(|n| n > MAX_MAPPING_BYTES) {
        return Err(too_large_a("mapping", MAX_MAPPING_BYTES));
    }
    Ok(claimed)
}

/// An app version as packages record it (their `extra.info`'s `appVersion`): printable,
/// and short enough to be recorded whole ([`crate::limits::COLUMN_BYTES`]); a longer one
/// would never match a package's.
fn check_version(version: &str) -> Result<(), ApiError> {
    if version.is_empty() || version.chars().any(char::is_control) {
        return Err(bad("the app version is empty or holds control characters"));
    }
    if version.len() > crate::limits::COLUMN_BYTES {
        return Err(bad(format!(
            "the app version is longer than {} bytes: packages record no longer ones",
            crate::limits::COLUMN_BYTES
        )));
    }
    Ok(())
}

/// Reads the mapping at `path` with the analyzer's reader, a line at a time (at most
/// [`hprof_shrink_analyze::mapping::MAX_LINE_BYTES`] held): its classes and fields, or
/// why it is not a mapping (422).
async fn check(path: std::path::PathBuf) -> Result<Counts, ApiError> {
    let read = tokio::task::spawn_blocking(move || {
        let file = std::fs::File::open(&path)?;
        Mapping::check(std::io::BufReader::with_capacity(1 << 16, file))
    })
    .await?
    .map_err(|e| ApiError::from(Fault::io("the server's disk", &e)))?;
    let unprocessable = |why: String| {
        refused(
            StatusCode::UNPROCESSABLE_ENTITY,
            format!("not an R8/ProGuard mapping.txt: {why}"),
        )
    };
    match read {
        Ok(c) if c.classes == 0 => Err(unprocessable(
            "no class line (`original.Class -> obfuscated:`)".into(),
        )),
        Ok(c) => Ok(c),
        Err((line, what)) => Err(unprocessable(format!("line {line}: {what}"))),
    }
}

/// `PUT /api/mappings/{appVersion}`: 201 `{"appVersion", "md5", "bytes", "classes",
/// "fields", "reanalyzing"}` (200 when the version already had these bytes).
pub(crate) async fn put(
    State(app): State<Arc<App>>,
    Path(version): Path<String>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    let stream = body.into_data_stream();
    let allowed = allowed(&app, &version, &headers).and_then(|c| Ok((c, upload_place(&app)?)));
    let (claimed, _place) = match allowed {
        Ok(c) => c,
        Err(e) => {
            drain_later(|left| discard(stream, left));
            return Err(e);
        }
    };
    let (tmp, md5, len) = to_file(&app, stream, MAX_MAPPING_BYTES, "mapping").await?;
    let md5_hex = hex::encode(md5);
    if let Some(claimed) = claimed.filter(|c| *c != md5) {
        return Err(bad(format!(
            "MD5 mismatch: the body's MD5 is {md5_hex}, the request said {}: the bytes were damaged on the way",
            hex::encode(claimed)
        )));
    }
    let counts = check(tmp.to_path_buf()).await?;
    app.blobs
        .put_file(&mapping_key(&md5_hex), tmp, md5, len)
        .await
        .map_err(|e| ApiError::store(&e))?;
    let (changed, queued) = app
        .store
        .put_mapping(&NewMapping {
            app_version: &version,
            md5: &md5_hex,
            bytes: len,
        })
        .await?;
    (app.log)(&format!(
        "received the mapping of app version {version:?} ({len} bytes, {} classes, md5 {md5_hex}); {queued} package(s) queued for re-analysis",
        counts.classes
    ));
    if queued > 0 {
        app.wake.notify_waiters();
    }
    let status = if changed {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    let answer = json!({
        "appVersion": version,
        "md5": md5_hex,
        "bytes": len,
        "classes": counts.classes,
        "fields": counts.fields,
        "reanalyzing": queued,
    });
    Ok((status, Json(answer)).into_response())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_are_those_packages_can_record() {
        assert!(check_version("1.2.3 (45)").is_ok());
        assert!(check_version(&"9".repeat(crate::limits::COLUMN_BYTES)).is_ok());
        for v in ["", "1.0\n", &"9".repeat(crate::limits::COLUMN_BYTES + 1)] {
            assert_eq!(
                check_version(v).unwrap_err().status,
                StatusCode::BAD_REQUEST,
                "{v:?}"
            );
        }
    }
}
