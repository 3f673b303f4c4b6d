//! What readers get: the pages and the JSON API over the same queries. Every handler here
//! is behind the read check ([`require_read`]).

use std::sync::Arc;

use axum::extract::{Path, Query, Request, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{Html, IntoResponse, Response};
use axum::Json;
use serde_json::{json, Value};

use super::api_error::{ApiError, Realm};
use super::auth::Denied;
use super::blobs::{package_key, picture_key, report_key, Object};
use super::cache::Shown;
use super::fault::scrub;
use super::groups::{bitmap_groups, Fold, LeakGroup};
use super::limits;
use super::no_leak;
use super::pages::{self, PackageLeak};
use super::store::{Filter, LeakRow, Package, Regrouping, Shrunk};
use super::versions::View;
use crate::app::App;
use crate::hex::is_hex;
use hprof_shrink_analyze::model::Trace;
use serde::Serialize;

fn unauthorized(why: Denied) -> ApiError {
    let msg = match why {
        Denied::Missing => "a read token is needed",
        Denied::Wrong => "the read token is wrong",
    };
    ApiError::unauthorized(msg, Realm::Read)
}

/// Lets a request through to the pages and the API only with the read token (or when reading
/// is public); else 401.
pub async fn require_read(State(app): State<Arc<App>>, req: Request, next: Next) -> Response {
    match app.access.read_check(req.headers()) {
        Ok(()) => next.run(req).await,
        Err(why) => unauthorized(why).into_response(),
    }
}

/// App leaks and library leaks, each grouped; from the cache, brought up to date.
async fn grouped(app: &App, f: &Filter) -> Result<Arc<Shown>, ApiError> {
    app.leak_cache
        .current(&app.store, f)
        .await
        .map_err(ApiError::from)
}

/// The filter a list's query names (`?sdk=&manufacturer=&app_version=`), as the lists
/// take it: an empty value is no restriction; a value holding a NUL is refused (400), as
/// no package can have one recorded (PostgreSQL's text cannot hold it, and would fail the
/// query rather than match nothing).
#[allow(clippy::result_large_err)]
fn filter_of(f: Filter) -> Result<Filter, ApiError> {
    let f = f.normalized();
    let nul = [&f.sdk, &f.manufacturer, &f.app_version]
        .into_iter()
        .flatten()
        .any(|v| v.contains('\0'));
    if nul {
        return Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            "a filter value cannot hold a NUL character",
        ));
    }
    Ok(f)
}

pub(crate) async fn groups_page(
    State(app): State<Arc<App>>,
    Query(f): Query<Filter>,
) -> Result<Html<String>, ApiError> {
    let f = filter_of(f)?;
    let groups = grouped(&app, &f).await?;
    Ok(Html(pages::leak_groups(&groups, &f)))
}

pub(crate) async fn leaks_api(
    State(app): State<Arc<App>>,
    Query(f): Query<Filter>,
) -> Result<Json<Value>, ApiError> {
    let groups = grouped(&app, &filter_of(f)?).await?;
    Ok(Json(json!({
        "appLeaks": groups.app,
        "appLeaksLeftOut": groups.app_left_out,
        "libraryLeaks": groups.library,
        "libraryLeaksLeftOut": groups.library_left_out,
        "regrouping": groups.regrouping,
    })))
}

/// One group: its summary (of every occurrence), the most recent trace, the most recent
/// [`limits::OCCURRENCES`] occurrences.
async fn group_of(
    app: &App,
    signature: &str,
) -> Result<(LeakGroup, Option<Trace>, Vec<LeakRow>, Option<Regrouping>), ApiError> {
    let mut fold = Fold::default();
    app.store.fold_signature(signature, &mut fold).await?;
    let regrouping = app.store.queue().await?.regrouping;
    let g = fold.groups().into_iter().next().ok_or_else(|| {
        ApiError::not_found(if regrouping.is_some() {
            "no leak has this signature: the analyzer's signatures changed and packages \
             are being analyzed again, so its leaks may be in another group now"
        } else {
            "no leak has this signature"
        })
    })?;
    let rows = app
        .store
        .occurrences(signature, limits::OCCURRENCES as i64)
        .await?;
    let trace = app
        .store
        .latest_trace(signature)
        .await?
        .and_then(|t| serde_json::from_str(&t).ok());
    Ok((g, trace, rows, regrouping))
}

pub(crate) async fn group_page(
    State(app): State<Arc<App>>,
    Path(signature): Path<String>,
) -> Result<Html<String>, Response> {
    let page = group_of(&app, &signature)
        .await
        .map(|(g, t, rows, r)| pages::group(&g, t.as_ref(), &rows, r.as_ref()));
    html_or_not_found(page)
}

/// A page, or the failure as a page: "not found" in words for a person, the rest as is.
// The shape the page handlers return to axum.
#[allow(clippy::result_large_err)]
fn html_or_not_found(page: Result<String, ApiError>) -> Result<Html<String>, Response> {
    match page {
        Ok(html) => Ok(Html(html)),
        Err(e) if e.status == StatusCode::NOT_FOUND => {
            Err((StatusCode::NOT_FOUND, Html(pages::not_found(&e.message))).into_response())
        }
        Err(f) => Err(f.into_response()),
    }
}

pub(crate) async fn group_api(
    State(app): State<Arc<App>>,
    Path(signature): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let (g, t, rows, regrouping) = group_of(&app, &signature).await?;
    let occurrences: Vec<Value> = rows.iter().map(occurrence).collect();
    let left_out = g.occurrences.saturating_sub(rows.len() as u64);
    Ok(Json(json!({
        "group": g,
        "trace": t,
        "occurrences": occurrences,
        "occurrencesLeftOut": left_out,
        "regrouping": regrouping,
    })))
}

/// One occurrence of a group (a leak group's, or a no-leak group's package) as the API
/// lists it.
fn occurrence(o: &LeakRow) -> Value {
    json!({
        "packageId": o.package_id,
        "packageName": o.package_name,
        "receivedMs": o.received_ms,
        "sdk": limits::column(&o.sdk),
        "manufacturer": limits::column(&o.manufacturer),
        "appVersion": limits::column(&o.app_version),
        "retainedBytes": o.retained_bytes,
        "retainedNativeBytes": o.retained_native_bytes,
    })
}

fn parse_id(s: &str) -> Result<i64, ApiError> {
    s.parse()
        .map_err(|_| ApiError::not_found("no such package"))
}

/// The package a path names, or "not found".
async fn package_named(app: &App, id: &str) -> Result<(i64, Package), ApiError> {
    let id = parse_id(id)?;
    let p = app
        .store
        .package(id)
        .await?
        .ok_or_else(|| ApiError::not_found("no such package"))?;
    Ok((
        id,
        Package {
            row: shown(app, p.row),
            ..p
        },
    ))
}

/// A package row as answers show it: why its analysis failed, without the server's paths
/// (the analyzer names the file it read).
fn shown(app: &App, mut p: super::store::PackageRow) -> super::store::PackageRow {
    if let Some(e) = &p.error {
        let stored = match &app.blobs {
            super::blobs::Blobs::Dir(root) => root.join(package_key(&p.md5)),
            super::blobs::Blobs::S3(_) => std::path::PathBuf::new(),
        };
        p.error = Some(scrub(e, &[(&stored, "the package")], &app.server_dirs()));
    }
    p
}

pub(crate) async fn package_page(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
) -> Result<Html<String>, Response> {
    let page = async {
        let (id, p) = package_named(&app, &id).await?;
        let leaks = app
            .store
            .leaks_of(id)
            .await?
            .into_iter()
            .map(
                |(signature, class_name, library, retained_bytes, retained_native_bytes)| {
                    PackageLeak {
                        signature,
                        class_name,
                        library,
                        retained_bytes,
                        retained_native_bytes,
                    }
                },
            )
            .collect::<Vec<_>>();
        let bitmaps = bitmap_groups(&app.store.bitmaps(Some(id)).await?);
        let mut triage = app.store.triage(id).await?;
        if let Some(t) = triage.as_mut().filter(|t| t.notes.is_none()) {
            // Recorded before the triage kept the notes: its analysis file has them.
            if let Some(a) = app.blobs.analysis(id).await {
                t.notes_of(&a);
            }
        }
        Ok::<_, ApiError>(pages::package(&p, &leaks, &bitmaps, triage.as_ref()))
    };
    html_or_not_found(page.await)
}

/// `GET /api/packages/{id}`: shares its route with the PUT, so it checks reading itself.
pub async fn package_api(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    if let Err(why) = app.access.read_check(&headers) {
        return Err(unauthorized(why));
    }
    let (id, p) = package_named(&app, &id).await?;
    let analysis = analysis_of(&app, id, &p.row.name).await;
    Ok(Json(json!({
        "package": p,
        "download": format!("/packages/{id}/download"),
        "analysis": analysis,
    }))
    .into_response())
}

/// A page of the package list: `limit` packages with ids below `before`, newest first.
#[derive(serde::Deserialize)]
pub struct Page {
    limit: Option<i64>,
    before: Option<i64>,
}

/// Packages on one page of `/packages`, and in one answer of `/api/packages` (by default
/// and at most: the answer's size is bounded, the rest is paged with `before`).
const PAGE: i64 = limits::PACKAGES_PAGE;
const API_PAGE: i64 = limits::PACKAGES_API;
const API_MAX: i64 = limits::PACKAGES_API;

/// One page of packages, and the id the next (older) page starts below, if there is one.
async fn page_of(
    app: &App,
    p: &Page,
    default: i64,
    max: i64,
) -> Result<(Vec<super::store::PackageRow>, Option<i64>), ApiError> {
    let limit = p.limit.unwrap_or(default).clamp(1, max);
    let before = p.before.unwrap_or(i64::MAX);
    let mut list: Vec<_> = app
        .store
        .packages(limit + 1, before)
        .await?
        .into_iter()
        .map(|p| shown(app, p))
        .collect();
    let next = if list.len() as i64 > limit {
        list.truncate(limit as usize);
        list.last().map(|p| p.id)
    } else {
        None
    };
    Ok((list, next))
}

pub(crate) async fn packages_api(
    State(app): State<Arc<App>>,
    Query(p): Query<Page>,
) -> Result<Json<Value>, ApiError> {
    let (list, next) = page_of(&app, &p, API_PAGE, API_MAX).await?;
    let limit = p.limit.map(|l| format!("&limit={}", l.clamp(1, API_MAX)));
    let next = next.map(|id| format!("/api/packages?before={id}{}", limit.unwrap_or_default()));
    Ok(Json(json!({ "packages": list, "next": next })))
}

pub(crate) async fn packages_page(
    State(app): State<Arc<App>>,
    Query(p): Query<Page>,
) -> Result<Html<String>, ApiError> {
    let (list, next) = page_of(&app, &p, PAGE, PAGE).await?;
    let limit = p.limit.map(|l| l.clamp(1, PAGE));
    Ok(Html(pages::packages(
        &list,
        p.before.is_some(),
        next,
        limit,
    )))
}

/// A package's analysis as answers show it: its input named by the package's name, not by
/// the file the worker read (a path of the server).
async fn analysis_of(app: &App, id: i64, name: &str) -> Option<hprof_shrink_analyze::Analysis> {
    let mut a = app.blobs.analysis(id).await?;
    a.input.path = name.to_string();
    Some(a)
}

/// The analysis of one package as the self-contained page `analyze --html` writes.
pub async fn analysis_page(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
) -> Result<Html<String>, ApiError> {
    let (id, p) = package_named(&app, &id).await?;
    let a = analysis_of(&app, id, &p.row.name)
        .await
        .ok_or_else(|| ApiError::not_found("this package has no analysis (yet)"))?;
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
    let html = tokio::task::spawn_blocking(move || {
        hprof_shrink_analyze::render::html::render(&a, &pictures)
    })
    .await?;
    Ok(Html(html))
}

/// Streams a stored object with its content type; `attachment` names it for a download.
async fn send_file(
    app: &App,
    key: &str,
    content_type: &'static str,
    attachment: Option<String>,
) -> Result<Response, ApiError> {
    let Object { len, body } = app
        .blobs
        .open(key)
        .await
        .map_err(|e| ApiError::store(&e))?
        .ok_or_else(|| ApiError::not_found("the file is gone"))?;
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

pub(crate) async fn download(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let (_, p) = package_named(&app, &id).await?;
    let (key, content_type) = if p.row.report {
        (report_key(&p.row.md5), "text/plain; charset=utf-8")
    } else {
        let kind = if super::heap_graph::is_trace_name(&p.row.name) {
            "application/octet-stream"
        } else {
            "application/zip"
        };
        (package_key(&p.row.md5), kind)
    };
    send_file(&app, &key, content_type, Some(p.row.name)).await
}

pub(crate) async fn picture(
    State(app): State<Arc<App>>,
    Path(file): Path<String>,
) -> Result<Response, ApiError> {
    // Only `<hex>.png`: nothing in the request reaches the file system otherwise.
    let hash = file
        .strip_suffix(".png")
        .filter(|h| is_hex(h))
        .ok_or_else(|| ApiError::not_found("no such picture"))?;
    send_file(&app, &picture_key(hash), "image/png", None).await
}

/// The most wasteful duplicate-bitmap groups, and how many more there are.
async fn top_bitmaps(app: &App) -> Result<(Vec<super::groups::DuplicateBuffer>, u64), ApiError> {
    let (groups, all) = app
        .store
        .bitmap_groups(limits::BITMAP_GROUPS as i64, limits::BITMAP_PACKAGES as i64)
        .await?;
    let left_out = all.saturating_sub(groups.len() as u64);
    Ok((groups, left_out))
}

pub(crate) async fn bitmaps_page(State(app): State<Arc<App>>) -> Result<Html<String>, ApiError> {
    let (groups, left_out) = top_bitmaps(&app).await?;
    Ok(Html(pages::bitmaps(&groups, left_out)))
}

pub(crate) async fn bitmaps_api(State(app): State<Arc<App>>) -> Result<Json<Value>, ApiError> {
    let (groups, left_out) = top_bitmaps(&app).await?;
    Ok(Json(
        json!({ "bitmaps": groups, "bitmapsLeftOut": left_out }),
    ))
}

/// `GET /versions`.
pub(crate) async fn versions_page(State(app): State<Arc<App>>) -> Result<Html<String>, ApiError> {
    Ok(Html(app.versions.current(&app.store).await?.page()))
}

/// A kept view, serialized where it is.
struct Shared(Arc<View>);

impl Serialize for Shared {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(s)
    }
}

/// `GET /api/versions`.
pub(crate) async fn versions_api(
    State(app): State<Arc<App>>,
) -> Result<Json<impl Serialize>, ApiError> {
    Ok(Json(Shared(app.versions.current(&app.store).await?)))
}

/// `GET /no-leak`, filtered as the leak groups' page is (the same form and menus).
pub(crate) async fn no_leak_page(
    State(app): State<Arc<App>>,
    Query(f): Query<Filter>,
) -> Result<Html<String>, ApiError> {
    let f = filter_of(f)?;
    let now = app.store.generation().await?;
    let g = app.no_leak.at(&app.store, &f, now).await?;
    let menus = app.leak_cache.menus(&app.store, now).await?;
    Ok(Html(pages::no_leak_groups(
        (&g.top.app, g.top.app_left_out),
        g.ungrouped,
        &f,
        &menus,
    )))
}

/// `GET /api/no-leak`, filtered as `GET /api/leaks` is.
pub(crate) async fn no_leak_api(
    State(app): State<Arc<App>>,
    Query(f): Query<Filter>,
) -> Result<Json<Value>, ApiError> {
    let f = filter_of(f)?;
    let now = app.store.generation().await?;
    let g = app.no_leak.at(&app.store, &f, now).await?;
    Ok(Json(json!({
        "groups": g.top.app,
        "groupsLeftOut": g.top.app_left_out,
        "ungrouped": g.ungrouped,
    })))
}

/// One no-leak group: its summary (of every package) and its packages per app version,
/// the most recent path, the most recent [`limits::OCCURRENCES`] packages, and of all
/// those whose dump was shrunk.
async fn no_leak_group_of(
    app: &App,
    signature: &str,
) -> Result<(no_leak::Group, Option<Trace>, Vec<LeakRow>, Shrunk), ApiError> {
    let g = no_leak::group(&app.store, signature)
        .await?
        .ok_or_else(|| ApiError::not_found("no package without a leak has this path"))?;
    let rows = app
        .store
        .no_leak_occurrences(signature, limits::OCCURRENCES as i64)
        .await?;
    let path = app
        .store
        .latest_no_leak_path(signature)
        .await?
        .and_then(|t| serde_json::from_str(&t).ok());
    let shrunk = app.store.no_leak_shrunk(signature).await?;
    Ok((g, path, rows, shrunk))
}

/// `GET /no-leak/{signature}`.
pub(crate) async fn no_leak_group_page(
    State(app): State<Arc<App>>,
    Path(signature): Path<String>,
) -> Result<Html<String>, Response> {
    let page = no_leak_group_of(&app, &signature)
        .await
        .map(|(g, path, rows, shrunk)| {
            pages::no_leak_group(&g.group, g.versions.html(), path.as_ref(), &rows, shrunk)
        });
    html_or_not_found(page)
}

/// `GET /api/no-leak/{signature}`.
pub(crate) async fn no_leak_group_api(
    State(app): State<Arc<App>>,
    Path(signature): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let (g, path, rows, shrunk) = no_leak_group_of(&app, &signature).await?;
    let packages: Vec<Value> = rows.iter().map(occurrence).collect();
    let left_out = g.group.occurrences.saturating_sub(rows.len() as u64);
    Ok(Json(json!({
        "group": g.group,
        "byVersion": g.versions,
        "path": path,
        "packages": packages,
        "packagesLeftOut": left_out,
        "shrunkPackages": shrunk.packages,
        "shrunkUnknown": shrunk.unknown,
    })))
}
