//! `POST /api/leakcanary`: LeakCanary's own analysis as text (`HeapAnalysis.toString()`,
//! what an app's `EventListener` or its "Share" sends), with the upload token. The text
//! (at most [`MAX_REPORT_BYTES`]) is read with the analyzer's reader of it
//! ([`hprof_shrink_analyze::leakcanary_text`]) and recorded as a package whose analysis is
//! done at once: its leaks join the groups of the uploaded dumps' (LeakCanary's signature
//! is the analyzer's), its device and app version come from its METADATA (the app version
//! also from `?appVersion=` or `X-App-Version`), and what was not understood is named in
//! the answer and in the analysis's notes; the text itself is kept (`reports/<md5>.txt`)
//! as the record's download. The same text twice is one record.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::Json;
use futures_util::StreamExt;
use hprof_shrink_analyze::leakcanary_text::{self, Report, MAX_REPORT_BYTES};
use hprof_shrink_analyze::model::{
    Analysis, DumpSummary, HeapMetadata, InputSummary, SCHEMA_VERSION, SIGNATURE_VERSION,
};
use md5::{Digest, Md5};
use serde_json::json;

use super::api_error::ApiError;
use super::blobs::{analysis_key, report_key};
use super::receive::{
    bad, content_length, cut_off, discard, drain_later, refused, too_large_a, unauthorized,
    upload_place,
};
use super::store::NewPackage;
use crate::app::App;

/// The name a report is recorded under.
const NAME: &str = "leakcanary.txt";

/// METADATA keys naming the app's version (LeakCanary writes none by itself; an app's
/// `metadataExtractor` may add one).
const VERSION_KEYS: &[&str] = &[
    "App version",
    "appVersion",
    "versionName",
    "App version name",
];

/// The body, read whole within [`MAX_REPORT_BYTES`] (413 past it, what is left drained).
async fn read_body(body: Body) -> Result<Vec<u8>, ApiError> {
    let mut stream = body.into_data_stream();
    let mut text = Vec::new();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|e| cut_off(&e))?;
        if text.len() + chunk.len() > MAX_REPORT_BYTES {
            drain_later(|left| discard(stream, left));
            return Err(too_large_a("report", MAX_REPORT_BYTES as u64));
        }
        text.extend_from_slice(&chunk);
    }
    Ok(text)
}

/// The app version the request names: `?appVersion=`, else `X-App-Version`.
fn requested_version(uri: &Uri, headers: &HeaderMap) -> Option<String> {
    let from_query = uri.query().and_then(|q| {
        url::form_urlencoded::parse(q.as_bytes())
            .find(|(k, _)| k == "appVersion")
            .map(|(_, v)| v.into_owned())
    });
    from_query
        .or_else(|| {
            headers
                .get("x-app-version")
                .and_then(|v| v.to_str().ok())
                .map(str::to_string)
        })
        .filter(|v| !v.trim().is_empty())
}

/// What a report is recorded as: its `result.info` (the device, LeakCanary's METADATA)
/// and `extra.info` (the app version), and its analysis.
struct Recorded {
    manifest: Vec<(String, String)>,
    extra: Vec<(String, String)>,
    analysis: Analysis,
}

fn recorded(report: Report, version: Option<String>) -> Recorded {
    let meta = |keys: &[&str]| report.metadata_value(keys).map(str::to_string);
    let sdk = meta(&["Build.VERSION.SDK_INT"]);
    let maker = meta(&["Build.MANUFACTURER"]);
    let version = version.or_else(|| meta(VERSION_KEYS));
    let mut manifest = vec![
        ("sdkVersion".to_string(), sdk.clone().unwrap_or_default()),
        (
            "manufacturer".to_string(),
            maker.clone().unwrap_or_default(),
        ),
        ("source".to_string(), "LeakCanary report".to_string()),
    ];
    manifest.extend(report.metadata.iter().cloned());
    let extra: Vec<(String, String)> = version
        .map(|v| vec![("appVersion".to_string(), v)])
        .unwrap_or_default();
    let leakcanary = meta(&["LeakCanary version"]);
    let mut notes: Vec<String> = report
        .not_understood
        .iter()
        .map(|n| format!("LeakCanary's text: {n}"))
        .collect();
    if report.omitted_not_understood > 0 {
        notes.push(format!(
            "LeakCanary's text: {} more lines not understood",
            report.omitted_not_understood
        ));
    }
    let analysis = Analysis {
        schema: SCHEMA_VERSION,
        signature_version: SIGNATURE_VERSION,
        tool: format!(
            "LeakCanary {}",
            leakcanary.as_deref().unwrap_or("(version not said)")
        ),
        input: InputSummary {
            path: NAME.into(),
            kind: "leakcanary".into(),
            manifest: manifest.clone(),
            extra: extra.clone(),
            shrunk: false,
            // The text holds what LeakCanary chose to print, not a package's values.
            private: false,
        },
        dump: DumpSummary::default(),
        metadata: HeapMetadata {
            sdk_int: sdk.as_deref().and_then(|s| s.parse().ok()),
            manufacturer: maker,
            process_name: meta(&["App process name"]),
            leakcanary_version: leakcanary,
            ..HeapMetadata::default()
        },
        finder: "leakcanary-report".into(),
        key: None,
        keys_found: Vec::new(),
        omitted_keys_found: 0,
        leaks: report.leaks,
        omitted_leaks: report.omitted_leaks,
        unreachable: report.unreachable,
        omitted_unreachable: report.omitted_unreachable,
        duplicate_bitmaps: Vec::new(),
        omitted_duplicate_bitmaps: 0,
        triage: None,
        notes,
        omitted_notes: 0,
    };
    Recorded {
        manifest,
        extra,
        analysis,
    }
}

/// `POST /api/leakcanary`: 201 `{"id", "md5", "bytes", "duplicate", "first", "leaks",
/// "unreachable", "notUnderstood", "url", "api"}` (200 naming the first record of the same
/// text); 422 for a text that is not LeakCanary's analysis.
pub(crate) async fn post(
    State(app): State<Arc<App>>,
    uri: Uri,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    let allowed = app
        .access
        .upload_check(&headers)
        .map_err(unauthorized)
        .and_then(|()| {
            if content_length(&headers).is_some_and(|n| n > MAX_REPORT_BYTES as u64) {
                return Err(too_large_a("report", MAX_REPORT_BYTES as u64));
            }
            upload_place(&app)
        });
    let _place = match allowed {
        Ok(p) => p,
        Err(e) => {
            drain_later(|left| discard(body.into_data_stream(), left));
            return Err(e);
        }
    };
    let bytes = read_body(body).await?;
    let md5_hex = hex::encode(Md5::digest(&bytes));
    let len = bytes.len() as u64;
    let (bytes, report) = tokio::task::spawn_blocking(move || {
        let r = leakcanary_text::parse(&String::from_utf8_lossy(&bytes));
        (bytes, r)
    })
    .await?;
    let report = report.map_err(|e| refused(StatusCode::UNPROCESSABLE_ENTITY, e.to_string()))?;
    let version = requested_version(&uri, &headers);
    if version
        .as_deref()
        .is_some_and(|v| v.len() > crate::limits::COLUMN_BYTES || v.chars().any(char::is_control))
    {
        return Err(bad(format!(
            "the app version is over {} bytes or holds control characters",
            crate::limits::COLUMN_BYTES
        )));
    }
    let mut rec = recorded(report, version);
    crate::limits::cap_analysis(&mut rec.analysis);
    app.database_intact()?;
    // The text as received, its download: stored before it is recorded, as a package is
    // (the same bytes, the same key).
    app.blobs
        .put_bytes(&report_key(&md5_hex), bytes)
        .await
        .map_err(|e| ApiError::store(&e))?;
    let recorded = app
        .store
        .record_report(
            &NewPackage {
                md5: &md5_hex,
                name: NAME,
                bytes: len,
                manifest: &rec.manifest,
                extra: &rec.extra,
            },
            &rec.analysis,
        )
        .await?;
    let (id, first) = match recorded {
        Ok(id) => (id, None),
        Err(first) => (first, Some(first)),
    };
    // The analysis its page shows. Stored after the record (it needs the id), so a
    // failure here is answered 503 and the client's retry, a duplicate, stores it again.
    let key = analysis_key(id);
    if first.is_none()
        || !app
            .blobs
            .exists(&key)
            .await
            .map_err(|e| ApiError::store(&e))?
    {
        let json = hprof_shrink_analyze::render::json(&rec.analysis).into_bytes();
        app.blobs
            .put_bytes(&key, json)
            .await
            .map_err(|e| ApiError::store(&e))?;
    }
    app.database_intact()?;
    let a = &rec.analysis;
    (app.log)(&format!(
        "received a LeakCanary report as package {id} ({len} bytes, md5 {md5_hex}): {} leak(s), {} line(s) not understood",
        a.leaks.len(),
        a.notes.len()
    ));
    Ok(taken(id, first, &md5_hex, len, a))
}

/// The answer to a report taken: 201, or 200 naming the first record of the same text.
fn taken(id: i64, first: Option<i64>, md5_hex: &str, len: u64, a: &Analysis) -> Response {
    let status = if first.is_some() {
        StatusCode::OK
    } else {
        StatusCode::CREATED
    };
    let answer = json!({
        "id": id,
        "md5": md5_hex,
        "bytes": len,
        "duplicate": first.is_some(),
        "first": first,
        "leaks": a.leaks.len() as u64 + a.omitted_leaks,
        "unreachable": a.unreachable.len() as u64 + a.omitted_unreachable,
        "notUnderstood": a.notes,
        "url": format!("/packages/{id}"),
        "api": format!("/api/packages/{id}"),
    });
    (status, Json(answer)).into_response()
}
