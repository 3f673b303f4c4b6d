//! Analysis in the background: workers claim queued packages from the database one at a
//! time, under a lease they renew while they work, and analyze each in a child process
//! held to the server's budget ([`background`]). A failure fails that job alone: the
//! package's own (it does not analyze, or needs more than its budget) at once; a passing
//! fault (I/O, the store, the database, a crashed analysis) puts it back in the queue to
//! be tried again after a backoff, and fails it only after its last allowed attempt
//! ([`super::store::MAX_ATTEMPTS`]). A worker that dies (or stalls past its lease) loses
//! nothing: the lease runs out and another worker, in this process or another, takes the
//! job up again; the first one, should it come back, can no longer record a result (see
//! [`super::store::Store::finish`]).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::Json;
use serde_json::json;
use tokio::sync::watch;

use super::api_error::{ApiError, Realm};
use super::background::{self, Analyzed, Failure, Job};
use super::blobs::{analysis_key, mapping_key, package_key, picture_key};
use super::store::Claim;
use crate::app::App;

/// How often an idle worker looks at the queue even without being woken (another process
/// sharing the database may have queued work, or a lease may have run out).
const POLL: Duration = Duration::from_secs(2);

/// The most an idle worker waits with a short lease (tests): a third of it.
fn poll_interval(lease: Duration) -> Duration {
    POLL.min(lease / 3).max(Duration::from_millis(50))
}

/// How often an idle process looks for packages analyzed by an older analyzer besides at
/// its start (a process of an older version sharing the database may have recorded some).
pub const REGROUP_SCAN: Duration = Duration::from_secs(600);

/// The one re-analysis a process runs at a time ([`Store::claim_with`]): taken before a
/// claim that may return one, given back when the claim returned another job or the
/// re-analysis ended.
///
/// [`Store::claim_with`]: super::store::Store::claim_with
struct RegroupSlot<'a>(&'a AtomicBool);

impl<'a> RegroupSlot<'a> {
    fn take(busy: &'a AtomicBool) -> Option<RegroupSlot<'a>> {
        busy.compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire)
            .ok()
            .map(|_| RegroupSlot(busy))
    }
}

impl Drop for RegroupSlot<'_> {
    fn drop(&mut self) {
        self.0.store(false, Ordering::Release);
    }
}

/// Queues the packages analyzed by an older analyzer for re-analysis (see
/// [`super::store::Store::queue_regroup`]), and says so.
pub async fn queue_regroup(app: &App) {
    match app.store.queue_regroup().await {
        Ok(0) => {}
        Ok(n) => {
            (app.log)(&format!(
                "{n} package(s) whose recorded analysis is older than this server's queued \
                 for re-analysis (signature version {}): they move to the groups they \
                 belong to now, one re-analysis at a time, after every new package",
                hprof_shrink_analyze::model::SIGNATURE_VERSION
            ));
            app.wake.notify_waiters();
        }
        Err(e) => (app.log)(&format!("queueing re-analyses: {e}")),
    }
}

pub(crate) async fn worker(app: Arc<App>, mut stop: watch::Receiver<bool>) {
    loop {
        if *stop.borrow() {
            return;
        }
        // Registered before looking, so a package queued in between still wakes us.
        let woken = app.wake.notified();
        // At most one re-analysis at a time in this process: the other workers stay free
        // for new packages, and a single worker runs at most one before looking again.
        let slot = RegroupSlot::take(&app.regroup_busy);
        match app.store.claim_with(app.lease, slot.is_some()).await {
            Ok((claimed, failed)) => {
                if failed > 0 {
                    (app.log)(&format!(
                        "{failed} analysis job(s) failed: interrupted {} times",
                        super::store::MAX_ATTEMPTS
                    ));
                }
                if let Some(c) = claimed {
                    let _slot = slot.filter(|_| c.regroup);
                    (app.log)(&format!(
                        "{} package {} (attempt {})",
                        if c.regroup {
                            "re-analyzing (an older analysis)"
                        } else {
                            "analyzing"
                        },
                        c.id,
                        c.attempt
                    ));
                    run_leased(&app, &c).await;
                    continue;
                }
                drop(slot);
                let due = {
                    let mut next = app.regroup_scan.lock().unwrap_or_else(|e| e.into_inner());
                    let due = Instant::now() >= *next;
                    if due {
                        *next = Instant::now() + REGROUP_SCAN;
                    }
                    due
                };
                if due {
                    queue_regroup(&app).await;
                }
            }
            Err(e) => {
                drop(slot);
                (app.log)(&format!("analysis queue: {e}"));
            }
        }
        tokio::select! {
            _ = woken => {}
            _ = tokio::time::sleep(poll_interval(app.lease)) => {}
            _ = stop.changed() => {}
        }
    }
}

/// Runs one claimed job while renewing its lease every third of its length.
async fn run_leased(app: &Arc<App>, c: &Claim) {
    let renewer = {
        let (app, c) = (app.clone(), c.clone());
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(app.lease / 3).await;
                match app.store.renew(&c, app.lease).await {
                    Ok(true) => {}
                    Ok(false) => {
                        (app.log)(&format!(
                            "lost the lease on package {}: another worker has it now",
                            c.id
                        ));
                        return;
                    }
                    // Tried again at the next turn; the lease may run out meanwhile.
                    Err(e) => (app.log)(&format!("renewing the lease on package {}: {e}", c.id)),
                }
            }
        })
    };
    run_one(app, c).await;
    renewer.abort();
}

async fn run_one(app: &App, c: &Claim) {
    let id = c.id;
    let t0 = std::time::Instant::now();
    match analyze_one(app, c).await {
        Ok(Some(leaks)) => (app.log)(&format!(
            "analyzed package {id}: {leaks} leak(s) in {} ms",
            t0.elapsed().as_millis()
        )),
        Ok(None) => (app.log)(&format!(
            "analysis of package {id} not recorded: its lease was lost (another worker took it)"
        )),
        Err(Failure::Package(msg)) => failed(app, c, msg).await,
        Err(Failure::Passing(msg)) => retry(app, c, msg).await,
    }
}

/// Analyzes a claimed package in a child process (see [`background`]) and records the
/// result. The number of leaks; None when the lease was lost and nothing was recorded.
async fn analyze_one(app: &App, c: &Claim) -> Result<Option<usize>, Failure> {
    let passing = |what: &str, e: std::io::Error| Failure::Passing(format!("{what}: {e}"));
    let tmp = app.dirs.work();
    let local = match app
        .blobs
        .local(&package_key(&c.md5), &tmp, app.budget.keep_free)
        .await
    {
        Ok(Some(l)) => l,
        Ok(None) => return Err(Failure::Package("the stored package is missing".into())),
        // The store is unreachable or the disk full, not the package bad.
        Err(e) => return Err(passing("reading the package", e)),
    };
    let mut notes = Vec::new();
    let mapping = match &c.mapping {
        None => None,
        Some(m) => match app
            .blobs
            .local(&mapping_key(&m.md5), &tmp, app.budget.keep_free)
            .await
        {
            Ok(Some(l)) => Some(l),
            // Never the package's failure: its names stay as the dump has them.
            Ok(None) => {
                notes.push(format!(
                    "the mapping of app version {:?} is missing from the store: names are as the dump has them",
                    m.app_version
                ));
                None
            }
            Err(e) => return Err(passing("reading the app version's mapping", e)),
        },
    };
    let work = tempfile::Builder::new()
        .prefix("analysis-")
        .tempdir_in(&tmp)
        .map_err(|e| passing("cannot make the analysis's directory", e))?;
    let job = Job {
        package: local.path().to_path_buf(),
        tmp: tmp.clone(),
        max_inflated: app.budget.max_inflated(app.max_bytes),
        keep_free: app.budget.keep_free,
        delay_ms: app.analysis_delay.as_millis() as u64,
        mapping: mapping.as_ref().map(|m| m.path().to_path_buf()),
    };
    let mut analyzed = background::analyze(&app.budget, &job, work.path()).await;
    drop(mapping);
    // The second attempt's directory, kept as the first's is until the result is saved
    // (its pictures are read from it).
    let mut _again = None;
    if let (Err(Failure::Package(why)), Some(_)) = (&analyzed, &job.mapping) {
        // Never the mapping's doing: a package its mapping takes past the budget (the
        // mapping's tables count against the memory) is analyzed without it.
        notes.push(format!(
            "analyzed without the app version's mapping: with it, {why}"
        ));
        let again = tempfile::Builder::new()
            .prefix("analysis-")
            .tempdir_in(&tmp)
            .map_err(|e| passing("cannot make the analysis's directory", e))?;
        let job = Job {
            mapping: None,
            ..job
        };
        analyzed = background::analyze(&app.budget, &job, again.path()).await;
        _again = Some(again);
    }
    drop(local);
    let mut analyzed = analyzed?;
    if !notes.is_empty() {
        analyzed.analysis.notes.extend(notes);
        analyzed.json = hprof_shrink_analyze::render::json(&analyzed.analysis).into_bytes();
    }
    save(app, c, analyzed).await
}

/// A job whose attempt failed by a passing fault goes back to the queue, to be tried
/// again after a backoff; after its last allowed attempt it is failed.
async fn retry(app: &App, c: &Claim, msg: String) {
    if c.attempt >= super::store::MAX_ATTEMPTS {
        let msg = format!(
            "{msg} (attempt {} of {}: failed for good)",
            c.attempt,
            super::store::MAX_ATTEMPTS
        );
        return failed(app, c, msg).await;
    }
    let wait = app.budget.backoff_after(c.attempt);
    (app.log)(&format!(
        "analysis of package {} failed (attempt {}): {msg}; tried again in {} s",
        c.id,
        c.attempt,
        wait.as_secs_f64()
    ));
    let not_before = super::store::now_ms().saturating_add(wait.as_millis() as i64);
    match app.store.retry(c, &msg, not_before).await {
        Ok(true) => {}
        Ok(false) => (app.log)(&format!(
            "failure of package {} not recorded: its lease was lost",
            c.id
        )),
        // Its lease runs out and the job is taken up again all the same.
        Err(e) => (app.log)(&format!("analysis queue: {e}")),
    }
}

async fn failed(app: &App, c: &Claim, msg: String) {
    (app.log)(&format!("analysis of package {} failed: {msg}", c.id));
    match app.store.fail(c, &msg).await {
        Ok(true) => {}
        Ok(false) => (app.log)(&format!(
            "failure of package {} not recorded: its lease was lost",
            c.id
        )),
        Err(e) => (app.log)(&format!("analysis queue: {e}")),
    }
}

/// Stores the analysis and its pictures, then records it (the job is done only when all
/// of that is stored). Returns the number of leaks, or None when the lease was lost and
/// nothing was recorded. Failing to store or record is a passing fault.
async fn save(app: &App, c: &Claim, mut done: Analyzed) -> Result<Option<usize>, Failure> {
    let store_err = |e: std::io::Error| Failure::Passing(format!("cannot store the analysis: {e}"));
    // What is stored is what is recorded: the package's values cut as its row's are.
    if super::limits::cap_analysis(&mut done.analysis) {
        done.json = hprof_shrink_analyze::render::json(&done.analysis).into_bytes();
    }
    let mut pictured = Vec::new();
    for g in &done.analysis.duplicate_bitmaps {
        let Some(image) = &g.image else { continue };
        if !crate::hex::is_hex(&g.hash) {
            continue;
        }
        let Some(png) = done.picture(image).map_err(store_err)? else {
            continue;
        };
        app.blobs
            .put_bytes(&picture_key(&g.hash), png)
            .await
            .map_err(store_err)?;
        pictured.push(g.hash.clone());
    }
    // Deterministic: a worker that lost its lease writes the same bytes here as the one
    // that holds it.
    app.blobs
        .put_bytes(&analysis_key(c.id), std::mem::take(&mut done.json))
        .await
        .map_err(store_err)?;
    let recorded = app
        .store
        .finish(c, &done.analysis, &pictured)
        .await
        .map_err(|e| Failure::Passing(format!("cannot record the analysis: {e}")))?;
    Ok(recorded.then_some(done.analysis.leaks.len()))
}

/// `POST /api/packages/{id}/requeue`, with the upload token: a failed package's job back
/// in the queue, with all its attempts ahead of it (after the fault that failed it is
/// mended). 200 `{"id", "state": "received"}`; 409 when the package is not failed.
pub async fn requeue(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Result<Json<serde_json::Value>, ApiError> {
    if !app.access.may_upload(&headers) {
        return Err(ApiError::unauthorized(
            "an upload token is needed",
            Realm::Upload,
        ));
    }
    // Said as it always was (these answers are not logged, and name no path).
    let unavailable = |e: sqlx::Error| {
        ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            format!("the database failed: {e}"),
        )
    };
    let Some(id) = id.parse::<i64>().ok().filter(|&n| n > 0) else {
        return Err(ApiError::not_found("no such package"));
    };
    let state = match app.store.package(id).await.map_err(unavailable)? {
        Some(p) => p.row.state,
        None => return Err(ApiError::not_found(format!("no package {id}"))),
    };
    let not_failed = |state: &str| {
        ApiError::new(
            StatusCode::CONFLICT,
            format!("package {id} is not failed: it is {state}"),
        )
    };
    if state != "failed" {
        return Err(not_failed(&state));
    }
    match app
        .store
        .requeue_failed(Some(id))
        .await
        .map_err(unavailable)?
    {
        0 => Err(not_failed("no longer failed")),
        _ => {
            (app.log)(&format!("package {id} queued again (requeued by a client)"));
            app.wake.notify_waiters();
            Ok(Json(json!({ "id": id, "state": "received" })))
        }
    }
}
