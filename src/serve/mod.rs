//! `serve`: receive packages as `upload` sends them, analyze them in the background, group
//! leaks by signature across devices, show them in a browser and as JSON.
//!
//! - [`receive`]: the two upload protocols, streamed to disk, checked, verified, recorded;
//! - [`store`]: the metadata in SQLite (sqlx), with the analysis queue;
//! - [`jobs`]: the workers that analyze queued packages;
//! - [`groups`]: leaks by signature, bitmaps by buffer hash;
//! - [`views`] and [`pages`]: what readers get, as JSON and HTML;
//! - [`auth`]: the upload and read tokens.
//!
//! The data directory: `meta.sqlite` (and its WAL), `packages/<md5>.zip`,
//! `analyses/<id>.json`, `pictures/<hash>.png`, `tmp/` for bodies on their way in.

pub mod auth;
pub mod cache;
pub mod groups;
pub mod jobs;
pub mod pages;
pub mod receive;
pub mod store;
pub mod views;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use axum::extract::DefaultBodyLimit;
use axum::routing::{get, post};
use axum::Router;
use tokio::sync::{watch, Notify};

pub use auth::{Access, Secret};
use store::Store;

/// The largest package taken by default.
pub const DEFAULT_MAX_BYTES: u64 = 1 << 30;

/// Where things live under the data directory.
#[derive(Debug, Clone)]
pub struct Dirs {
    root: PathBuf,
}

impl Dirs {
    pub fn new(root: &Path) -> Dirs {
        Dirs {
            root: root.to_path_buf(),
        }
    }
    pub fn db(&self) -> PathBuf {
        self.root.join("meta.sqlite")
    }
    pub fn packages(&self) -> PathBuf {
        self.root.join("packages")
    }
    /// A package is stored under its content's MD5: the same bytes, the same file.
    pub fn package(&self, md5: &str) -> PathBuf {
        self.packages().join(format!("{md5}.zip"))
    }
    pub fn tmp(&self) -> PathBuf {
        self.root.join("tmp")
    }
    pub fn analysis(&self, id: i64) -> PathBuf {
        self.root.join("analyses").join(format!("{id}.json"))
    }
    pub fn picture(&self, hash: &str) -> PathBuf {
        self.root.join("pictures").join(format!("{hash}.png"))
    }

    fn create(&self) -> std::io::Result<()> {
        for d in ["packages", "tmp", "analyses", "pictures"] {
            std::fs::create_dir_all(self.root.join(d))?;
        }
        // Bodies a killed server was receiving: never answered, so nobody counts on them.
        for e in std::fs::read_dir(self.tmp())? {
            let _ = std::fs::remove_file(e?.path());
        }
        Ok(())
    }
}

pub type Log = Arc<dyn Fn(&str) + Send + Sync>;

pub struct Config {
    pub data: PathBuf,
    pub listen: SocketAddr,
    pub access: Access,
    pub max_bytes: u64,
    /// Analysis workers; 0 receives only (another process analyzes).
    pub workers: usize,
    /// Each worker waits this long after taking a job (tests use it to kill the server
    /// mid-analysis).
    pub analysis_delay: Duration,
    /// Each new package waits this long between being recorded and being answered (tests
    /// use it to kill the server in between).
    pub answer_delay: Duration,
    pub log: Log,
}

/// What every handler shares.
pub struct App {
    pub store: Store,
    pub dirs: Dirs,
    pub access: Access,
    pub max_bytes: u64,
    /// Wakes idle workers when a package is queued.
    pub wake: Notify,
    /// The leak groups per filter, until the next package or analysis.
    pub groups: cache::Cache,
    pub analysis_delay: Duration,
    pub answer_delay: Duration,
    pub log: Log,
}

#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("{what}: {source}")]
    Io {
        what: String,
        source: std::io::Error,
    },
    #[error("the database {}: {source}", path.display())]
    Db { path: PathBuf, source: sqlx::Error },
}

/// A server running on the current tokio runtime.
pub struct Running {
    pub addr: SocketAddr,
    stop: watch::Sender<bool>,
    server: tokio::task::JoinHandle<std::io::Result<()>>,
    workers: Vec<tokio::task::JoinHandle<()>>,
    app: Arc<App>,
}

impl Running {
    /// Stops taking connections, lets the workers finish their current package, closes
    /// the database.
    pub async fn stop(self) {
        let _ = self.stop.send(true);
        let _ = self.server.await;
        for w in self.workers {
            let _ = w.await;
        }
        self.app.store.close().await;
    }

    /// Resolves when the server stops on its own (it does not, unless it fails).
    pub async fn wait(&mut self) -> std::io::Result<()> {
        (&mut self.server)
            .await
            .unwrap_or_else(|e| Err(std::io::Error::other(e)))
    }
}

pub fn router(app: Arc<App>) -> Router {
    let reads = Router::new()
        .route("/", get(views::groups_page))
        .route("/groups/{signature}", get(views::group_page))
        .route("/packages", get(views::packages_page))
        .route("/packages/{id}", get(views::package_page))
        .route("/packages/{id}/analysis", get(views::analysis_page))
        .route("/packages/{id}/download", get(views::download))
        .route("/bitmaps", get(views::bitmaps_page))
        .route("/pictures/{file}", get(views::picture))
        .route("/api/leaks", get(views::leaks_api))
        .route("/api/leaks/{signature}", get(views::group_api))
        .route("/api/packages", get(views::packages_api))
        .route("/api/bitmaps", get(views::bitmaps_api))
        .route_layer(axum::middleware::from_fn_with_state(
            app.clone(),
            views::require_read,
        ));
    // Upload routes check the upload token themselves, before reading the body; the
    // size limit is theirs too (streamed), so axum's buffered-body limit is off.
    let uploads = Router::new()
        .route("/api/packages", post(receive::post))
        .route(
            "/api/packages/{name}",
            axum::routing::put(receive::put).get(views::package_api),
        );
    reads
        .merge(uploads)
        .layer(DefaultBodyLimit::disable())
        .with_state(app)
}

/// Opens the data directory, recovers interrupted jobs, binds, and serves on the current
/// runtime until [`Running::stop`].
pub async fn start(config: Config) -> Result<Running, ServeError> {
    let dirs = Dirs::new(&config.data);
    dirs.create().map_err(|source| ServeError::Io {
        what: format!("the data directory {}", config.data.display()),
        source,
    })?;
    let db_path = dirs.db();
    let store = Store::open(&db_path)
        .await
        .map_err(|source| ServeError::Db {
            path: db_path.clone(),
            source,
        })?;
    let (requeued, failed) = store.recover().await.map_err(|source| ServeError::Db {
        path: db_path.clone(),
        source,
    })?;
    if requeued + failed > 0 {
        (config.log)(&format!(
            "{requeued} analysis job(s) interrupted by a stop taken up again; {failed} failed after repeated interruptions"
        ));
    }
    let listener = tokio::net::TcpListener::bind(config.listen)
        .await
        .map_err(|source| ServeError::Io {
            what: format!("listen on {}", config.listen),
            source,
        })?;
    let addr = listener.local_addr().map_err(|source| ServeError::Io {
        what: "the listening address".into(),
        source,
    })?;
    let app = Arc::new(App {
        store,
        dirs,
        access: config.access,
        max_bytes: config.max_bytes,
        wake: Notify::new(),
        groups: cache::Cache::default(),
        analysis_delay: config.analysis_delay,
        answer_delay: config.answer_delay,
        log: config.log,
    });
    let (stop, stopped) = watch::channel(false);
    let workers = (0..config.workers)
        .map(|_| tokio::spawn(jobs::worker(app.clone(), stopped.clone())))
        .collect();
    let mut stopped_srv = stopped.clone();
    let routes = router(app.clone());
    let server = tokio::spawn(async move {
        axum::serve(listener, routes)
            .with_graceful_shutdown(async move {
                let _ = stopped_srv.wait_for(|s| *s).await;
            })
            .await
    });
    Ok(Running {
        addr,
        stop,
        server,
        workers,
        app,
    })
}

/// `hprof-shrink serve`: runs until SIGINT or SIGTERM.
pub fn run(config: Config) -> Result<(), ServeError> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("serve")
        .build()
        .map_err(|source| ServeError::Io {
            what: "the async runtime".into(),
            source,
        })?;
    rt.block_on(async {
        let log = config.log.clone();
        let data = config.data.clone();
        let mut running = start(config).await?;
        log(&format!(
            "serving on http://{} (data in {})",
            running.addr,
            data.display()
        ));
        tokio::select! {
            r = running.wait() => {
                return r.map_err(|source| ServeError::Io { what: "the server".into(), source });
            }
            _ = shutdown_signal() => {}
        }
        log("stopping: finishing the packages being analyzed");
        running.stop().await;
        Ok(())
    })
}

async fn shutdown_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {}
                    _ = term.recv() => {}
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}
