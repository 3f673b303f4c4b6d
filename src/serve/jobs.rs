//! Analysis in the background: a fixed number of workers take queued packages from the
//! database one at a time. A failure (an error or a panic in the analyzer) fails that job
//! alone; a job the process died on is queued again at the next start (see
//! [`super::store::Store::recover`]).

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use hprof_shrink_core::Control;
use tokio::sync::watch;

use super::App;
use crate::analyze::{self, Analysis, Options};

/// How often an idle worker looks at the queue even without being woken (another process
/// sharing the database may have queued work).
const POLL: Duration = Duration::from_secs(2);

pub async fn worker(app: Arc<App>, mut stop: watch::Receiver<bool>) {
    loop {
        if *stop.borrow() {
            return;
        }
        // Registered before looking, so a package queued in between still wakes us.
        let woken = app.wake.notified();
        match app.store.claim().await {
            Ok(Some((id, md5))) => {
                // The queue's counts on the groups page changed.
                app.groups.invalidate();
                if !app.analysis_delay.is_zero() {
                    tokio::time::sleep(app.analysis_delay).await;
                }
                run_one(&app, id, &md5).await;
                continue;
            }
            Ok(None) => {}
            Err(e) => (app.log)(&format!("analysis queue: {e}")),
        }
        tokio::select! {
            _ = woken => {}
            _ = tokio::time::sleep(POLL) => {}
            _ = stop.changed() => {}
        }
    }
}

async fn run_one(app: &App, id: i64, md5: &str) {
    let zip = app.dirs.package(md5);
    let t0 = std::time::Instant::now();
    let done = tokio::task::spawn_blocking(move || {
        let options = Options {
            pictures: true,
            ..Options::default()
        };
        analyze::analyze_path(&zip, &options, &Control::default())
    })
    .await;
    let result = match done {
        Ok(Ok(outcome)) => save(app, id, outcome).await,
        Ok(Err(e)) => Err(e.to_string()),
        // A panic in the analyzer: this package's failure, nobody else's.
        Err(e) => Err(format!("the analysis crashed: {e}")),
    };
    match result {
        Ok(leaks) => (app.log)(&format!(
            "analyzed package {id}: {leaks} leak(s) in {} ms",
            t0.elapsed().as_millis()
        )),
        Err(msg) => {
            (app.log)(&format!("analysis of package {id} failed: {msg}"));
            if let Err(e) = app.store.fail(id, &msg).await {
                (app.log)(&format!("analysis queue: {e}"));
            }
        }
    }
    app.groups.invalidate();
}

/// Writes the analysis and its pictures, then records it (the job is done only when all
/// of that is on disk). Returns the number of leaks.
async fn save(app: &App, id: i64, outcome: analyze::Outcome) -> Result<usize, String> {
    let analysis = outcome.analysis;
    let dirs = app.dirs.clone();
    let a = analysis.clone();
    let pictured = tokio::task::spawn_blocking(move || -> std::io::Result<Vec<String>> {
        let mut pictured = Vec::new();
        for g in &a.duplicate_bitmaps {
            let Some(image) = &g.image else { continue };
            let Some((_, png)) = outcome.pictures.iter().find(|(n, _)| n == image) else {
                continue;
            };
            if !is_hex(&g.hash) {
                continue;
            }
            write_atomic(&dirs.picture(&g.hash), png)?;
            pictured.push(g.hash.clone());
        }
        write_atomic(&dirs.analysis(id), analyze::render::json(&a).as_bytes())?;
        Ok(pictured)
    })
    .await
    .map_err(|e| e.to_string())?
    .map_err(|e| format!("cannot store the analysis: {e}"))?;
    // Before the commit as well as after it: a request between the two can neither be
    // served an entry from before, nor leave one behind that outlives the commit.
    app.groups.invalidate();
    app.store
        .finish(id, &analysis, &pictured)
        .await
        .map_err(|e| format!("cannot record the analysis: {e}"))?;
    Ok(analysis.leaks.len())
}

pub fn is_hex(s: &str) -> bool {
    !s.is_empty() && s.len() <= 128 && s.bytes().all(|b| b.is_ascii_hexdigit())
}

/// Temporary file beside the destination, synced, renamed.
fn write_atomic(dest: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let dir = dest.parent().unwrap_or(Path::new("."));
    let mut f = tempfile::NamedTempFile::new_in(dir)?;
    f.write_all(bytes)?;
    f.as_file().sync_all()?;
    f.persist(dest).map_err(|e| e.error)?;
    Ok(())
}

/// The stored analysis of a package, if it was analyzed.
pub fn load(app: &App, id: i64) -> Option<Analysis> {
    let text = std::fs::read_to_string(app.dirs.analysis(id)).ok()?;
    serde_json::from_str(&text).ok()
}
