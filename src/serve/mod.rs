//! `serve`: receive packages as `upload` sends them, analyze them in the background, group
//! leaks by signature across devices, show them in a browser and as JSON.
//!
//! - [`receive`]: the two upload protocols, streamed to disk, checked, verified, stored,
//!   recorded;
//! - [`store`]: the metadata in SQLite or PostgreSQL (sqlx), with the analysis queue;
//! - [`blobs`]: packages, analyses and pictures in a directory or an S3 bucket ([`s3`]);
//! - [`jobs`]: the workers that claim queued packages under a lease and analyze them,
//!   each in a child process held to the server's [`Budget`] ([`background`]);
//! - [`guard`]: the data directory's lock, and the database file's identity;
//! - [`groups`]: leaks by signature, bitmaps by buffer hash; [`cache`]: the groups kept
//!   per filter, change by change, within a memory budget;
//! - [`limits`]: how much is kept and shown of what packages carry;
//! - [`views`] and [`pages`]: what readers get, as JSON and HTML;
//! - [`auth`]: the upload and read tokens, and the names a request without one may use;
//! - [`conn`], [`body`] and [`conn_limits`]: the accept loop, each connection's timeouts and the
//!   caps on connections and uploads; [`fault`]: failures of the server's own as 503/507.
//!
//! The data directory: `meta.sqlite` (and its WAL), `packages/<md5>.zip`,
//! `analyses/<id>.json`, `pictures/<hash>.png`, `tmp/` for bodies on their way in,
//! `work/` for analyses under way, `serve.lock` (held while a server runs). With
//! `--database postgres://…` and `--store s3://…` only `tmp/` and `work/` are used, and several
//! processes (each with a data directory of its own) share the database and the bucket.

pub mod auth;
pub mod background;
pub mod blobs;
pub mod body;
pub mod budget;
pub mod cache;
pub mod conn;
pub mod conn_limits;
pub mod fault;
pub mod groups;
pub mod guard;
pub mod jobs;
pub mod limits;
pub mod pages;
pub mod receive;
pub mod s3;
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
use blobs::Blobs;
pub use budget::Budget;
pub use conn_limits::Limits;
use store::Store;

/// The largest package taken by default.
pub const DEFAULT_MAX_BYTES: u64 = 1 << 30;

/// How long a claimed job stays a worker's without being renewed (it is renewed every
/// third of that while the analysis runs): a killed worker's job is taken up again by
/// another worker this long after the kill.
pub const DEFAULT_LEASE: Duration = Duration::from_secs(60);

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
    pub fn root(&self) -> &Path {
        &self.root
    }
    pub fn db(&self) -> PathBuf {
        self.root.join("meta.sqlite")
    }
    /// Bodies on their way in.
    pub fn tmp(&self) -> PathBuf {
        self.root.join("tmp")
    }
    /// Analyses under way: each one's directory, its inflated hprof, a package copied
    /// down from a bucket.
    pub fn work(&self) -> PathBuf {
        self.root.join("work")
    }

    fn create(&self) -> std::io::Result<()> {
        // Bodies a killed server was receiving (never answered, so nobody counts on them),
        // and what its analyses left.
        for dir in [self.tmp(), self.work()] {
            std::fs::create_dir_all(&dir)?;
            for e in std::fs::read_dir(&dir)? {
                let e = e?;
                if e.file_type().is_ok_and(|t| t.is_dir()) {
                    let _ = std::fs::remove_dir_all(e.path());
                } else {
                    let _ = std::fs::remove_file(e.path());
                }
            }
        }
        Ok(())
    }
}

pub type Log = Arc<dyn Fn(&str) + Send + Sync>;

pub struct Config {
    pub data: PathBuf,
    /// None: no listener, analysis only (`serve --worker`).
    pub listen: Option<SocketAddr>,
    /// A PostgreSQL URL; None: SQLite in the data directory.
    pub database: Option<String>,
    /// An `s3://BUCKET/PREFIX` URL; None: the data directory.
    pub store: Option<String>,
    /// See [`DEFAULT_LEASE`].
    pub lease: Duration,
    pub access: Access,
    pub max_bytes: u64,
    /// Analysis workers; 0 receives only (another process analyzes).
    pub workers: usize,
    /// Each analysis process waits this long before analyzing (tests use it to kill the
    /// server, or the analysis, mid-job); it counts against the time budget.
    pub analysis_delay: Duration,
    /// Each new package waits this long between being recorded and being answered (tests
    /// use it to kill the server in between).
    pub answer_delay: Duration,
    /// What a package may cost: the analysis's memory and time, the inflated size, the
    /// free disk; and the backoff between attempts.
    pub budget: Budget,
    pub log: Log,
    /// Connections, timeouts and uploads at once ([`conn_limits`]).
    pub limits: Limits,
}

/// What every handler shares.
pub struct App {
    pub store: Store,
    pub blobs: Blobs,
    pub dirs: Dirs,
    pub lease: Duration,
    pub access: Access,
    pub max_bytes: u64,
    /// Wakes idle workers when a package is queued.
    pub wake: Notify,
    /// The leak groups per filter, each brought up to date with the rows recorded since
    /// it was made ([`cache`]).
    pub groups: cache::Cache,
    pub analysis_delay: Duration,
    pub answer_delay: Duration,
    pub budget: Budget,
    /// `meta.sqlite` as opened (the embedded database only).
    pub db_file: Option<guard::Identity>,
    pub log: Log,
    /// Connections, timeouts and uploads at once, as fitted to the descriptor limit.
    pub limits: Limits,
    /// A place per upload being received ([`Limits::max_uploads`]).
    pub uploads: Arc<tokio::sync::Semaphore>,
}

impl App {
    /// Whether what is recorded now will still be there at the next start: false once
    /// the embedded database's file was removed or replaced under the server (said once
    /// in the log). Checked before an upload is answered 2xx.
    pub fn database_intact(&self) -> Result<(), String> {
        let Some(id) = &self.db_file else {
            return Ok(());
        };
        id.check().map_err(|(why, first)| {
            if first {
                (self.log)(&why);
            }
            why
        })
    }

    /// The bounds of inflating a package's hprof under `tmp/`.
    pub fn unpack(&self) -> hprof_shrink_core::space::Unpack {
        self.budget.unpack(self.max_bytes, &self.dirs.tmp())
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("{what}: {source}")]
    Io {
        what: String,
        source: std::io::Error,
    },
    #[error("the database {what}: {source}")]
    Db { what: String, source: sqlx::Error },
    #[error("{0}")]
    Config(String),
    #[error("the package store {what}: {source}")]
    Store {
        what: String,
        source: std::io::Error,
    },
}

/// A server running on the current tokio runtime.
pub struct Running {
    /// None for a worker (no listener).
    pub addr: Option<SocketAddr>,
    stop: watch::Sender<bool>,
    server: Option<tokio::task::JoinHandle<std::io::Result<()>>>,
    workers: Vec<tokio::task::JoinHandle<()>>,
    app: Arc<App>,
    /// Released when the server is dropped.
    _lock: guard::DataLock,
}

impl Running {
    /// Stops taking connections, lets the workers finish their current package, closes
    /// the database.
    pub async fn stop(self) {
        let _ = self.stop.send(true);
        if let Some(server) = self.server {
            let _ = server.await;
        }
        for w in self.workers {
            let _ = w.await;
        }
        self.app.store.close().await;
    }

    /// What the groups cache holds now (estimated).
    pub fn cache_usage(&self) -> cache::Usage {
        self.app.groups.usage()
    }

    /// Resolves when the server stops on its own (it does not, unless it fails).
    pub async fn wait(&mut self) -> std::io::Result<()> {
        match &mut self.server {
            Some(server) => server
                .await
                .unwrap_or_else(|e| Err(std::io::Error::other(e))),
            None => std::future::pending().await,
        }
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
        )
        .route("/api/packages/{id}/requeue", post(jobs::requeue));
    let log = app.log.clone();
    reads
        .merge(uploads)
        .layer(DefaultBodyLimit::disable())
        .layer(axum::middleware::from_fn_with_state(
            log,
            fault::log_answers,
        ))
        .with_state(app)
}

/// The database: PostgreSQL at `url`, or SQLite in the data directory.
async fn open_store(dirs: &Dirs, url: Option<&str>) -> Result<Store, ServeError> {
    match url {
        Some(url) => {
            let what = store::redact_url(url);
            if !(url.starts_with("postgres://") || url.starts_with("postgresql://")) {
                return Err(ServeError::Config(format!(
                    "--database {what}: a database is postgres://USER[:PASSWORD]@HOST[:PORT]/DB"
                )));
            }
            Store::connect(url)
                .await
                .map_err(|source| ServeError::Db { what, source })
        }
        None => {
            let path = dirs.db();
            Store::open(&path).await.map_err(|source| ServeError::Db {
                what: path.display().to_string(),
                source,
            })
        }
    }
}

/// The package store: a bucket or the data directory, checked now.
async fn open_blobs(data: &Path, url: Option<&str>) -> Result<Blobs, ServeError> {
    let blobs = match url {
        Some(url) => Blobs::S3(s3::Bucket::from_url(url).map_err(ServeError::Config)?),
        None => Blobs::Dir(data.to_path_buf()),
    };
    let what = blobs.describe();
    blobs.create().map_err(|source| ServeError::Store {
        what: what.clone(),
        source,
    })?;
    blobs
        .check()
        .await
        .map_err(|source| ServeError::Store { what, source })?;
    Ok(blobs)
}

/// Opens the data directory, the database and the package store, recovers interrupted
/// jobs (embedded database only: a shared one relies on leases), binds unless this is a
/// worker, and serves on the current runtime until [`Running::stop`].
pub async fn start(config: Config) -> Result<Running, ServeError> {
    let dirs = Dirs::new(&config.data);
    std::fs::create_dir_all(&config.data).map_err(|source| ServeError::Io {
        what: format!("the data directory {}", config.data.display()),
        source,
    })?;
    // Before anything in it is touched: emptying tmp/ would lose another server's
    // uploads in flight.
    let lock = guard::DataLock::take(&config.data)?;
    dirs.create().map_err(|source| ServeError::Io {
        what: format!("the data directory {}", config.data.display()),
        source,
    })?;
    let store = open_store(&dirs, config.database.as_deref()).await?;
    let db_file = match &store {
        Store::Sqlite(_) => {
            Some(
                guard::Identity::of(&dirs.db()).map_err(|source| ServeError::Io {
                    what: dirs.db().display().to_string(),
                    source,
                })?,
            )
        }
        Store::Postgres(_) => None,
    };
    let blobs = open_blobs(&config.data, config.store.as_deref()).await?;
    if !store.is_shared() {
        // One process owns an embedded database: whatever it left `analyzing` was
        // interrupted by its own stop, and need not wait for the lease to run out.
        let (requeued, failed) = store.recover().await.map_err(|source| ServeError::Db {
            what: dirs.db().display().to_string(),
            source,
        })?;
        if requeued + failed > 0 {
            (config.log)(&format!(
                "{requeued} analysis job(s) interrupted by a stop taken up again; {failed} failed after repeated interruptions"
            ));
        }
    }
    let listener =
        match config.listen {
            Some(listen) => Some(tokio::net::TcpListener::bind(listen).await.map_err(
                |source| ServeError::Io {
                    what: format!("listen on {listen}"),
                    source,
                },
            )?),
            None => None,
        };
    let addr = listener
        .as_ref()
        .map(|l| l.local_addr())
        .transpose()
        .map_err(|source| ServeError::Io {
            what: "the listening address".into(),
            source,
        })?;
    let mut limits = config.limits;
    if listener.is_some() {
        match limits.fit_to_fd_limit(config.workers) {
            Ok(Some(note)) => (config.log)(&note),
            Ok(None) => {}
            Err(e) => return Err(ServeError::Config(e)),
        }
    }
    let app = Arc::new(App {
        store,
        blobs,
        dirs,
        lease: config.lease,
        access: config.access,
        max_bytes: config.max_bytes,
        wake: Notify::new(),
        groups: cache::Cache::default(),
        analysis_delay: config.analysis_delay,
        answer_delay: config.answer_delay,
        budget: config.budget,
        db_file,
        log: config.log,
        uploads: Arc::new(tokio::sync::Semaphore::new(limits.max_uploads.max(1))),
        limits,
    });
    let (stop, stopped) = watch::channel(false);
    let workers = (0..config.workers)
        .map(|_| tokio::spawn(jobs::worker(app.clone(), stopped.clone())))
        .collect();
    let server = listener.map(|listener| {
        let routes = router(app.clone());
        tokio::spawn(conn::serve(listener, app.clone(), routes, stopped.clone()))
    });
    if server.is_some() {
        // The unfiltered groups made from every row now, not while the first reader waits
        // (about 75 ms with 10,000 packages); after that only changes are folded in. A
        // failure here leaves it to that reader.
        let app = app.clone();
        tokio::spawn(async move {
            let _ = app
                .groups
                .current(&app.store, &store::Filter::default())
                .await;
        });
    }
    Ok(Running {
        addr,
        stop,
        server,
        workers,
        app,
        _lock: lock,
    })
}

/// `hprof-shrink serve --requeue-failed`: puts every failed job of the database (the
/// embedded one in `data`, or `database`) back in the queue, with all its attempts ahead
/// of it, and returns how many. A server running on that database takes them up at its
/// next look at the queue; the data directory's lock is not needed.
pub fn requeue_failed(data: &Path, database: Option<&str>) -> Result<u64, ServeError> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|source| ServeError::Io {
            what: "the async runtime".into(),
            source,
        })?;
    rt.block_on(async {
        let dirs = Dirs::new(data);
        if database.is_none() && !dirs.db().exists() {
            return Err(ServeError::Config(format!(
                "{} has no database: nothing to requeue",
                data.display()
            )));
        }
        let store = open_store(&dirs, database).await?;
        let n = store
            .requeue_failed(None)
            .await
            .map_err(|source| ServeError::Db {
                what: store.describe().into(),
                source,
            });
        store.close().await;
        n
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
        let workers = config.workers;
        let mut running = start(config).await?;
        let (db, store) = (running.app.store.describe(), running.app.blobs.describe());
        match running.addr {
            Some(addr) => log(&format!(
                "serving on http://{addr} (database {db}, packages in {store})"
            )),
            None => log(&format!(
                "worker: {workers} analysis worker(s) on database {db}, packages in {store}"
            )),
        }
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
