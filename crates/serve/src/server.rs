//! Starting and stopping a server: the data directory, the database, the package store,
//! the listener, the workers; the routes.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;

use axum::extract::DefaultBodyLimit;
use axum::routing::{get, post};
use axum::Router;
use tokio::sync::{watch, Notify};

use crate::app::{App, Dirs};
use crate::blobs::Blobs;
use crate::config::Config;
use crate::error::ServeError;
use crate::store::{self, Store};
use crate::{cache, conn, fault, guard, jobs, leakcanary, mappings, receive, s3, views};

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
        self.app.leak_cache.usage()
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

/// The server's routes on `app`: the uploads, the pages, the JSON API and the downloads,
/// each behind its access check.
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
        .route("/versions", get(views::versions_page))
        .route("/no-leak", get(views::no_leak_page))
        .route("/no-leak/{signature}", get(views::no_leak_group_page))
        .route("/api/no-leak", get(views::no_leak_api))
        .route("/api/no-leak/{signature}", get(views::no_leak_group_api))
        .route("/api/versions", get(views::versions_api))
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
        .route("/api/packages/{id}/requeue", post(jobs::requeue))
        .route(
            "/api/mappings/{app_version}",
            axum::routing::put(mappings::put),
        )
        .route("/api/leakcanary", post(leakcanary::post));
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
        Some(url) => Blobs::S3(s3::Bucket::from_url(url)?),
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

/// What [`start`] opened before it listens: the data directory (locked), the database and
/// the package store.
struct Opened {
    dirs: Dirs,
    lock: guard::DataLock,
    store: Store,
    db_file: Option<guard::Identity>,
    blobs: Blobs,
}

/// Locks and empties the data directory's scratch space, opens the database and the
/// package store, and recovers interrupted jobs (embedded database only: a shared one
/// relies on leases).
async fn open(config: &Config) -> Result<Opened, ServeError> {
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
    Ok(Opened {
        dirs,
        lock,
        store,
        db_file,
        blobs,
    })
}

/// The listener on `listen` and its address; none for a worker.
async fn bind(
    listen: Option<SocketAddr>,
) -> Result<(Option<tokio::net::TcpListener>, Option<SocketAddr>), ServeError> {
    let listener =
        match listen {
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
    Ok((listener, addr))
}

/// Opens the data directory, the database and the package store, recovers interrupted
/// jobs (embedded database only: a shared one relies on leases), binds unless this is a
/// worker, and serves on the current runtime until [`Running::stop`].
pub async fn start(config: Config) -> Result<Running, ServeError> {
    let Opened {
        dirs,
        lock,
        store,
        db_file,
        blobs,
    } = open(&config).await?;
    let (listener, addr) = bind(config.listen).await?;
    let mut limits = config.limits;
    if listener.is_some() {
        match limits.fit_to_fd_limit(config.workers) {
            Ok(Some(note)) => (config.log)(&note),
            Ok(None) => {}
            Err(e) => return Err(e.into()),
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
        leak_cache: cache::Cache::default(),
        versions: Default::default(),
        no_leak: Default::default(),
        analysis_delay: config.analysis_delay,
        answer_delay: config.answer_delay,
        budget: config.budget,
        db_file,
        log: config.log,
        uploads: Arc::new(tokio::sync::Semaphore::new(limits.max_uploads.max(1))),
        limits,
        regroup_busy: Default::default(),
        regroup_scan: std::sync::Mutex::new(std::time::Instant::now() + jobs::REGROUP_SCAN),
    });
    // Packages analyzed by an older analyzer (their signatures group the same bug apart
    // from the new ones) queued again, behind every new package. Every process does it:
    // the query is idempotent.
    jobs::queue_regroup(&app).await;
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
                .leak_cache
                .current(&app.store, &store::Filter::default())
                .await;
            // The per-app-version view likewise.
            let _ = app.versions.current(&app.store).await;
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
