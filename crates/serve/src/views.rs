//! What readers get: the pages and the JSON API over the same queries. Every handler here
//! is behind the read check ([`require_read`]).

use std::sync::Arc;

use axum::extract::{Path, Query, Request, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{Html, IntoResponse, Response};
use axum::Json;
use serde_json::{json, Value};

use super::blobs::{package_key, picture_key, Object};
use super::cache::Groups;
use super::groups::{bitmap_groups, leak_groups, LeakGroup};
use super::jobs::{is_hex, load};
use super::pages::{self, PackageLeak};
use super::store::Filter;
use super::App;
use hprof_shrink_analyze::model::Trace;

/// A failed read: status and message, as JSON for `/api/` and as a page elsewhere.
pub struct Failure(StatusCode, String);

impl IntoResponse for Failure {
    fn into_response(self) -> Response {
        (self.0, Json(json!({ "error": self.1 }))).into_response()
    }
}

fn db(e: sqlx::Error) -> Failure {
    Failure(
        StatusCode::SERVICE_UNAVAILABLE,
        format!("the database failed: {e}"),
    )
}

fn missing(what: &str) -> Failure {
    Failure(StatusCode::NOT_FOUND, what.to_string())
}

fn unauthorized() -> Response {
    let mut r = (
        StatusCode::UNAUTHORIZED,
        Json(json!({ "error": "a read token is needed" })),
    )
        .into_response();
    // A browser asks the person for it (any user name, the token as password).
    r.headers_mut().insert(
        header::WWW_AUTHENTICATE,
        HeaderValue::from_static("Basic realm=\"hprof-shrink\", charset=\"UTF-8\""),
    );
    r
}

pub async fn require_read(State(app): State<Arc<App>>, req: Request, next: Next) -> Response {
    if app.access.may_read(req.headers()) {
        next.run(req).await
    } else {
        unauthorized()
    }
}

/// App leaks and library leaks, each grouped; from the cache, brought up to date.
async fn grouped(app: &App, f: &Filter) -> Result<Arc<Groups>, Failure> {
    app.groups.current(&app.store, f).await.map_err(db)
}

pub async fn groups_page(
    State(app): State<Arc<App>>,
    Query(f): Query<Filter>,
) -> Result<Html<String>, Failure> {
    let f = f.normalized();
    let groups = grouped(&app, &f).await?;
    Ok(Html(pages::leak_groups(
        &groups.app,
        &groups.library,
        &f,
        &groups.menus,
        &groups.jobs,
    )))
}

pub async fn leaks_api(
    State(app): State<Arc<App>>,
    Query(f): Query<Filter>,
) -> Result<Json<Value>, Failure> {
    let groups = grouped(&app, &f.normalized()).await?;
    Ok(Json(
        json!({ "appLeaks": groups.app, "libraryLeaks": groups.library }),
    ))
}

/// One group: its summary, the most recent trace, every occurrence.
async fn group_of(
    app: &App,
    signature: &str,
) -> Result<(LeakGroup, Option<Trace>, Vec<super::store::LeakRow>), Failure> {
    let rows = app
        .store
        .leaks(&Filter::default(), Some(signature))
        .await
        .map_err(db)?;
    let g = leak_groups(&rows)
        .into_iter()
        .next()
        .ok_or_else(|| missing("no leak has this signature"))?;
    let trace = app
        .store
        .latest_trace(signature)
        .await
        .map_err(db)?
        .and_then(|t| serde_json::from_str(&t).ok());
    Ok((g, trace, rows))
}

pub async fn group_page(
    State(app): State<Arc<App>>,
    Path(signature): Path<String>,
) -> Result<Html<String>, Response> {
    let page = group_of(&app, &signature)
        .await
        .map(|(g, t, rows)| pages::group(&g, t.as_ref(), &rows));
    html_or_not_found(page)
}

/// A page, or the failure as a page: "not found" in words for a person, the rest as is.
// The shape the page handlers return to axum.
#[allow(clippy::result_large_err)]
fn html_or_not_found(page: Result<String, Failure>) -> Result<Html<String>, Response> {
    match page {
        Ok(html) => Ok(Html(html)),
        Err(Failure(StatusCode::NOT_FOUND, m)) => {
            Err((StatusCode::NOT_FOUND, Html(pages::not_found(&m))).into_response())
        }
        Err(f) => Err(f.into_response()),
    }
}

pub async fn group_api(
    State(app): State<Arc<App>>,
    Path(signature): Path<String>,
) -> Result<Json<Value>, Failure> {
    let (g, t, rows) = group_of(&app, &signature).await?;
    let occurrences: Vec<Value> = rows
        .iter()
        .map(|o| {
            json!({
                "packageId": o.package_id,
                "packageName": o.package_name,
                "receivedMs": o.received_ms,
                "sdk": o.sdk,
                "manufacturer": o.manufacturer,
                "appVersion": o.app_version,
                "retainedBytes": o.retained_bytes,
            })
        })
        .collect();
    Ok(Json(
        json!({ "group": g, "trace": t, "occurrences": occurrences }),
    ))
}

fn parse_id(s: &str) -> Result<i64, Failure> {
    s.parse().map_err(|_| missing("no such package"))
}

/// The package a path names, or "not found".
async fn package_named(app: &App, id: &str) -> Result<(i64, super::store::PackageRow), Failure> {
    let id = parse_id(id)?;
    let p = app
        .store
        .package(id)
        .await
        .map_err(db)?
        .ok_or_else(|| missing("no such package"))?;
    Ok((id, p))
}

pub async fn package_page(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
) -> Result<Html<String>, Response> {
    let page = async {
        let (id, p) = package_named(&app, &id).await?;
        let leaks = app
            .store
            .leaks_of(id)
            .await
            .map_err(db)?
            .into_iter()
            .map(
                |(signature, class_name, library, retained_bytes)| PackageLeak {
                    signature,
                    class_name,
                    library,
                    retained_bytes,
                },
            )
            .collect::<Vec<_>>();
        let bitmaps = bitmap_groups(&app.store.bitmaps(Some(id)).await.map_err(db)?);
        Ok::<_, Failure>(pages::package(&p, &leaks, &bitmaps))
    };
    html_or_not_found(page.await)
}

/// `GET /api/packages/{id}`: shares its route with the PUT, so it checks reading itself.
pub async fn package_api(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Result<Response, Failure> {
    if !app.access.may_read(&headers) {
        return Ok(unauthorized());
    }
    let (id, p) = package_named(&app, &id).await?;
    let analysis = load(&app, id).await;
    Ok(Json(json!({
        "package": p,
        "download": format!("/packages/{id}/download"),
        "analysis": analysis,
    }))
    .into_response())
}

#[derive(serde::Deserialize)]
pub struct Limit {
    limit: Option<i64>,
}

pub async fn packages_api(
    State(app): State<Arc<App>>,
    Query(l): Query<Limit>,
) -> Result<Json<Value>, Failure> {
    let list = app
        .store
        .packages(l.limit.unwrap_or(1000).clamp(1, 100_000))
        .await
        .map_err(db)?;
    Ok(Json(json!({ "packages": list })))
}

pub async fn packages_page(State(app): State<Arc<App>>) -> Result<Html<String>, Failure> {
    let list = app.store.packages(500).await.map_err(db)?;
    Ok(Html(pages::packages(&list)))
}

/// The analysis of one package as the self-contained page `analyze --html` writes.
pub async fn analysis_page(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
) -> Result<Html<String>, Failure> {
    let id = parse_id(&id)?;
    let a = load(&app, id)
        .await
        .ok_or_else(|| missing("this package has no analysis (yet)"))?;
    let mut pictures: Vec<(String, Vec<u8>)> = Vec::new();
    for g in &a.duplicate_bitmaps {
        let Some(name) = g.image.clone() else {
            continue;
        };
        if !is_hex(&g.hash) {
            continue;
        }
        if let Ok(Some(bytes)) = app.blobs.get_bytes(&picture_key(&g.hash)).await {
            pictures.push((name, bytes));
        }
    }
    let html =
        tokio::task::spawn_blocking(move || hprof_shrink_analyze::render::html::render(&a, &pictures))
            .await
            .map_err(|e| Failure(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))?;
    Ok(Html(html))
}

/// Streams a stored object with its content type; `attachment` names it for a download.
async fn send_file(
    app: &App,
    key: &str,
    content_type: &'static str,
    attachment: Option<String>,
) -> Result<Response, Failure> {
    let Object { len, body } = app
        .blobs
        .open(key)
        .await
        .map_err(|e| {
            Failure(
                StatusCode::SERVICE_UNAVAILABLE,
                format!("the package store failed: {e}"),
            )
        })?
        .ok_or_else(|| missing("the file is gone"))?;
    let mut r = Response::new(body);
    let h = r.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    if let Some(len) = len {
        h.insert(header::CONTENT_LENGTH, HeaderValue::from(len));
    }
    h.insert(
        "x-content-type-options",
        HeaderValue::from_static("nosniff"),
    );
    if let Some(name) = attachment {
        // Only characters that need no quoting in a header; the rest become '_'.
        let safe: String = name
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || "._-".contains(c) {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        if let Ok(v) = HeaderValue::from_str(&format!("attachment; filename=\"{safe}\"")) {
            h.insert(header::CONTENT_DISPOSITION, v);
        }
    }
    Ok(r)
}

pub async fn download(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
) -> Result<Response, Failure> {
    let (_, p) = package_named(&app, &id).await?;
    send_file(&app, &package_key(&p.md5), "application/zip", Some(p.name)).await
}

pub async fn picture(
    State(app): State<Arc<App>>,
    Path(file): Path<String>,
) -> Result<Response, Failure> {
    // Only `<hex>.png`: nothing in the request reaches the file system otherwise.
    let hash = file
        .strip_suffix(".png")
        .filter(|h| is_hex(h))
        .ok_or_else(|| missing("no such picture"))?;
    send_file(&app, &picture_key(hash), "image/png", None).await
}

pub async fn bitmaps_page(State(app): State<Arc<App>>) -> Result<Html<String>, Failure> {
    let groups = bitmap_groups(&app.store.bitmaps(None).await.map_err(db)?);
    Ok(Html(pages::bitmaps(&groups)))
}

pub async fn bitmaps_api(State(app): State<Arc<App>>) -> Result<Json<Value>, Failure> {
    let groups = bitmap_groups(&app.store.bitmaps(None).await.map_err(db)?);
    Ok(Json(json!({ "bitmaps": groups })))
}
