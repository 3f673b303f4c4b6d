//! Analysis in the background: workers claim queued packages from the database one at a
//! time, under a lease they renew while they work. A failure (an error or a panic in the
//! analyzer) fails that job alone. A worker that dies (or stalls past its lease) loses
//! nothing: the lease runs out and another worker, in this process or another, takes the
//! job up again; the first one, should it come back, can no longer record a result (see
//! [`super::store::Store::finish`]).

use std::sync::Arc;
use std::time::Duration;

use hprof_shrink_core::Control;
use tokio::sync::watch;

use super::blobs::{analysis_key, package_key, picture_key};
use super::store::Claim;
use super::App;
use hprof_shrink_analyze::{self as analyze, Analysis, Options};

/// How often an idle worker looks at the queue even without being woken (another process
/// sharing the database may have queued work, or a lease may have run out).
const POLL: Duration = Duration::from_secs(2);

/// The most an idle worker waits with a short lease (tests): a third of it.
fn poll_interval(lease: Duration) -> Duration {
    POLL.min(lease / 3).max(Duration::from_millis(50))
}

pub async fn worker(app: Arc<App>, mut stop: watch::Receiver<bool>) {
    loop {
        if *stop.borrow() {
            return;
        }
        // Registered before looking, so a package queued in between still wakes us.
        let woken = app.wake.notified();
        match app.store.claim(app.lease).await {
            Ok((claimed, failed)) => {
                if failed > 0 {
                    (app.log)(&format!(
                        "{failed} analysis job(s) failed: interrupted {} times",
                        super::store::MAX_ATTEMPTS
                    ));
                }
                if let Some(c) = claimed {
                    (app.log)(&format!(
                        "analyzing package {} (attempt {})",
                        c.id, c.attempt
                    ));
                    run_leased(&app, &c).await;
                    continue;
                }
            }
            Err(e) => (app.log)(&format!("analysis queue: {e}")),
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
    if !app.analysis_delay.is_zero() {
        tokio::time::sleep(app.analysis_delay).await;
    }
    run_one(app, c).await;
    renewer.abort();
}

async fn run_one(app: &App, c: &Claim) {
    let id = c.id;
    let t0 = std::time::Instant::now();
    let local = match app.blobs.local(&package_key(&c.md5), &app.dirs.tmp()).await {
        Ok(Some(l)) => l,
        Ok(None) => {
            return failed(app, c, "the stored package is missing".into()).await;
        }
        Err(e) => {
            // The store is unreachable, not the package bad: the lease runs out and the
            // job is tried again (up to MAX_ATTEMPTS).
            (app.log)(&format!(
                "analysis of package {id}: reading the package: {e}"
            ));
            return;
        }
    };
    let done = tokio::task::spawn_blocking({
        let pool = app.analysis.clone();
        move || {
            let options = Options {
                pictures: true,
                ..Options::default()
            };
            // On the analysis threads, serial steps included: below the receiving.
            let r =
                pool.install(|| analyze::analyze_path(local.path(), &options, &Control::default()));
            drop(local);
            r
        }
    })
    .await;
    let result = match done {
        Ok(Ok(outcome)) => save(app, c, outcome).await,
        Ok(Err(e)) => Err(e.to_string()),
        // A panic in the analyzer: this package's failure, nobody else's.
        Err(e) => Err(format!("the analysis crashed: {e}")),
    };
    match result {
        Ok(Some(leaks)) => (app.log)(&format!(
            "analyzed package {id}: {leaks} leak(s) in {} ms",
            t0.elapsed().as_millis()
        )),
        Ok(None) => (app.log)(&format!(
            "analysis of package {id} not recorded: its lease was lost (another worker took it)"
        )),
        Err(msg) => failed(app, c, msg).await,
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
/// nothing was recorded.
async fn save(app: &App, c: &Claim, outcome: analyze::Outcome) -> Result<Option<usize>, String> {
    let analysis = outcome.analysis;
    let mut pictured = Vec::new();
    let store_err = |e: std::io::Error| format!("cannot store the analysis: {e}");
    for g in &analysis.duplicate_bitmaps {
        let Some(image) = &g.image else { continue };
        let Some((_, png)) = outcome.pictures.iter().find(|(n, _)| n == image) else {
            continue;
        };
        if !is_hex(&g.hash) {
            continue;
        }
        app.blobs
            .put_bytes(&picture_key(&g.hash), png.clone())
            .await
            .map_err(store_err)?;
        pictured.push(g.hash.clone());
    }
    // Deterministic: a worker that lost its lease writes the same bytes here as the one
    // that holds it.
    app.blobs
        .put_bytes(
            &analysis_key(c.id),
            analyze::render::json(&analysis).into_bytes(),
        )
        .await
        .map_err(store_err)?;
    let recorded = app
        .store
        .finish(c, &analysis, &pictured)
        .await
        .map_err(|e| format!("cannot record the analysis: {e}"))?;
    Ok(recorded.then_some(analysis.leaks.len()))
}

pub fn is_hex(s: &str) -> bool {
    !s.is_empty() && s.len() <= 128 && s.bytes().all(|b| b.is_ascii_hexdigit())
}

/// The stored analysis of a package, if it was analyzed.
pub async fn load(app: &App, id: i64) -> Option<Analysis> {
    let bytes = app.blobs.get_bytes(&analysis_key(id)).await.ok()??;
    serde_json::from_slice(&bytes).ok()
}
