//! The metadata: packages, the analysis queue with its leases, leaks and bitmaps, through
//! sqlx. Everything the server asks of its database goes through [`Store`]: SQLite
//! embedded (one process), or PostgreSQL shared by several `serve` processes and workers.
//! One schema, migrated per engine (`migrations/sqlite`, `migrations/postgres`); the
//! queries are constants with bind parameters (`$1`, which SQLite reads too), the same text
//! for both engines except the claim, which PostgreSQL makes with `FOR UPDATE SKIP LOCKED`.

use std::borrow::Cow;
use std::future::Future;
use std::path::Path;
use std::pin::Pin;
use std::str::FromStr;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use futures_util::TryStreamExt;
use sqlx::migrate::{Migration, MigrationSource, MigrationType, Migrator};
use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions};
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous,
};
use sqlx::Row;

use super::groups::{DuplicateBuffer, Fold};
use super::limits::{self, Props};
use super::triage::{NoLeak, PackageTriage};
/// The plain records the store reads and writes, named here too (`store::Filter`).
pub use crate::rows::*;
use hprof_shrink_analyze::model::{SCHEMA_VERSION, SIGNATURE_VERSION};
use hprof_shrink_analyze::Analysis;

/// A job is tried at most this many times, whatever ended its attempts (its worker died or
/// lost its lease, a passing fault, a crashed analysis); then it is failed instead of
/// taken up again: a package that kills workers must not do so forever.
pub const MAX_ATTEMPTS: i64 = 3;

pub(crate) type DbResult<T> = Result<T, sqlx::Error>;

/// The migrations of one engine, compiled in: `migrations/<engine>/NNNN_name.sql`.
#[derive(Debug)]
struct Embedded(&'static [(i64, &'static str, &'static str)]);

const SQLITE_MIGRATIONS: &[(i64, &str, &str)] = &[
    (1, "init", include_str!("migrations/sqlite/0001_init.sql")),
    (
        2,
        "leases",
        include_str!("migrations/sqlite/0002_leases.sql"),
    ),
    (
        3,
        "stamps",
        include_str!("migrations/sqlite/0003_stamps.sql"),
    ),
    (
        4,
        "retries",
        include_str!("migrations/sqlite/0004_retries.sql"),
    ),
    (
        5,
        "regroup",
        include_str!("migrations/sqlite/0005_regroup.sql"),
    ),
    (
        6,
        "version_order",
        include_str!("migrations/sqlite/0006_version_order.sql"),
    ),
    (
        7,
        "native",
        include_str!("migrations/sqlite/0007_native.sql"),
    ),
    (
        8,
        "triage",
        include_str!("migrations/sqlite/0008_triage.sql"),
    ),
    (
        9,
        "no_leak",
        include_str!("migrations/sqlite/0009_no_leak.sql"),
    ),
    (
        10,
        "watched_finder",
        include_str!("migrations/sqlite/0010_watched_finder.sql"),
    ),
    (
        11,
        "mappings",
        include_str!("migrations/sqlite/0011_mappings.sql"),
    ),
    (
        12,
        "reports",
        include_str!("migrations/sqlite/0012_reports.sql"),
    ),
];

const POSTGRES_MIGRATIONS: &[(i64, &str, &str)] = &[
    (1, "init", include_str!("migrations/postgres/0001_init.sql")),
    (
        2,
        "leases",
        include_str!("migrations/postgres/0002_leases.sql"),
    ),
    (
        3,
        "stamps",
        include_str!("migrations/postgres/0003_stamps.sql"),
    ),
    (
        4,
        "retries",
        include_str!("migrations/postgres/0004_retries.sql"),
    ),
    (
        5,
        "regroup",
        include_str!("migrations/postgres/0005_regroup.sql"),
    ),
    (
        6,
        "version_order",
        include_str!("migrations/postgres/0006_version_order.sql"),
    ),
    (
        7,
        "native",
        include_str!("migrations/postgres/0007_native.sql"),
    ),
    (
        8,
        "triage",
        include_str!("migrations/postgres/0008_triage.sql"),
    ),
    (
        9,
        "no_leak",
        include_str!("migrations/postgres/0009_no_leak.sql"),
    ),
    (
        10,
        "watched_finder",
        include_str!("migrations/postgres/0010_watched_finder.sql"),
    ),
    (
        11,
        "mappings",
        include_str!("migrations/postgres/0011_mappings.sql"),
    ),
    (
        12,
        "reports",
        include_str!("migrations/postgres/0012_reports.sql"),
    ),
];

type BoxDynError = Box<dyn std::error::Error + Send + Sync>;

impl MigrationSource<'static> for Embedded {
    fn resolve(
        self,
    ) -> Pin<Box<dyn Future<Output = Result<Vec<Migration>, BoxDynError>> + Send + 'static>> {
        Box::pin(async move {
            Ok(self
                .0
                .iter()
                .map(|(v, name, sql)| {
                    Migration::new(
                        *v,
                        Cow::Borrowed(*name),
                        MigrationType::Simple,
                        Cow::Borrowed(*sql),
                        false,
                    )
                })
                .collect())
        })
    }
}

/// A byte count as the database keeps it (a signed 64-bit column): one past `i64::MAX`,
/// which only a made-up dump's registered native sizes reach, is kept as `i64::MAX`
/// rather than wrapped to a negative number.
fn stored(bytes: u64) -> i64 {
    i64::try_from(bytes).unwrap_or(i64::MAX)
}

/// The time now, in milliseconds since the Unix epoch (0 before it).
pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// The database: one pool of either engine. Each method runs the same code on both (see
/// `on!`).
#[derive(Clone)]
pub enum Store {
    /// SQLite, the embedded default.
    Sqlite(SqlitePool),
    /// PostgreSQL, shared by several processes.
    Postgres(PgPool),
}

/// Runs `$body` with `$pool` bound to the pool, whichever engine it is: the query API is
/// the same, the row and argument types differ, so the body is compiled once per engine.
macro_rules! on {
    ($store:expr, $pool:ident => $body:expr) => {
        match $store {
            Store::Sqlite($pool) => $body,
            Store::Postgres($pool) => $body,
        }
    };
}

/// A [`PackageRow`] from a row of [`package_sql`], whichever engine's row it is. The
/// columns are cut as they are read too: rows recorded before the caps may hold more.
macro_rules! package_row {
    ($r:expr) => {{
        let r = $r;
        let column = |col: &str| -> DbResult<String> {
            let text: String = r.try_get(col)?;
            Ok(limits::column(&text).into_owned())
        };
        let error: Option<String> = r.try_get("error")?;
        Ok::<_, sqlx::Error>(PackageRow {
            id: r.try_get("id")?,
            md5: r.try_get("md5")?,
            name: r.try_get("name")?,
            bytes: r.try_get("bytes")?,
            received_ms: r.try_get("received_ms")?,
            sdk: column("sdk")?,
            manufacturer: column("manufacturer")?,
            app_version: column("app_version")?,
            state: r.try_get("state")?,
            error: error.map(|e| limits::cut(&e, limits::ERROR_BYTES).into_owned()),
            attempts: r.try_get("attempts")?,
            analyses: r.try_get("analyses")?,
            signature_version: r.try_get("signature_version")?,
            reanalysis: r.try_get("regroup")?,
            report: r.try_get("report")?,
        })
    }};
}

/// The recorded properties in column `col` of a row of [`package_sql::ONE`].
macro_rules! props {
    ($r:expr, $col:literal) => {{
        let text: String = $r.try_get($col)?;
        Props::from_json(&text).map_err(|e| sqlx::Error::Decode(Box::new(e)))?
    }};
}

/// One leak of one package as its page lists it: (signature, class name, library,
/// retained bytes, retained native bytes).
pub type PackageLeakRow = (String, String, Option<String>, i64, i64);

const BUMP_GENERATION: &str = "UPDATE generation SET n = n + 1 WHERE id = 1";

/// The bump of a transaction that records leaks: the new generation is their stamp. The
/// row stays locked until the commit, so such transactions commit in stamp order and a
/// snapshot that reads generation n sees every row stamped up to n, and none after.
const BUMP_GENERATION_FOR_LEAKS: &str =
    "UPDATE generation SET n = n + 1, removals = removals + $1 WHERE id = 1 RETURNING n";

/// Begins a transaction on `$pool` that reads one snapshot (PostgreSQL reads each
/// statement in a snapshot of its own otherwise; SQLite keeps the first read's for the
/// whole transaction), and reads in it the leak rows' [`Version`]: `(tx, version)`.
macro_rules! snapshot {
    ($store:expr, $pool:ident) => {{
        let mut tx = $pool.begin().await?;
        if $store.is_shared() {
            sqlx::query("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
                .execute(&mut *tx)
                .await?;
        }
        let r = sqlx::query("SELECT n, removals FROM generation WHERE id = 1")
            .fetch_one(&mut *tx)
            .await?;
        let now = Version {
            generation: r.try_get(0)?,
            removals: r.try_get(1)?,
        };
        (tx, now)
    }};
}

/// `SELECT` of the leak columns the grouping reads, in [`LeakRef`]'s order (decoded by
/// `leak_row!`), then `$extra` columns, of the packages a filter admits ($1-$3).
macro_rules! grouped_leaks {
    ($extra:literal) => {
        concat!(
            "SELECT l.id, l.package_id, p.received_ms, p.sdk, p.manufacturer, p.app_version, \
             l.signature, l.class_name, l.library, l.retained_bytes, l.title, \
             l.signature_version, l.retained_native_bytes",
            $extra,
            " FROM leaks l JOIN packages p ON p.id = l.package_id \
             WHERE ($1 IS NULL OR p.sdk = $1) AND ($2 IS NULL OR p.manufacturer = $2) \
             AND ($3 IS NULL OR p.app_version = $3)"
        )
    };
}

/// A [`LeakRef`] borrowed from a row of `grouped_leaks!`.
macro_rules! leak_row {
    ($r:expr) => {{
        let r = $r;
        LeakRef {
            leak_id: r.try_get(0)?,
            package_id: r.try_get(1)?,
            received_ms: r.try_get(2)?,
            sdk: r.try_get(3)?,
            manufacturer: r.try_get(4)?,
            app_version: r.try_get(5)?,
            signature: r.try_get(6)?,
            class_name: r.try_get(7)?,
            library: r.try_get(8)?,
            retained_bytes: r.try_get(9)?,
            title: r.try_get(10)?,
            signature_version: r.try_get(11)?,
            retained_native_bytes: r.try_get(12)?,
        }
    }};
}

/// The packages without a leak, as the grouping reads leaks (by [`LeakRef`]'s columns, as
/// `no_leak_row!` decodes them), with the package's name: of signature $1 (all when
/// NULL), of the packages a filter admits ($3-$5), the $2 most recent.
const NO_LEAK_ROWS: &str = "SELECT r.id, r.package_id, p.received_ms, p.sdk, p.manufacturer, \
     p.app_version, r.signature, r.class_name, r.title, r.retained_bytes, \
     r.retained_native_bytes, p.name \
     FROM retainers r JOIN packages p ON p.id = r.package_id \
     WHERE ($1 IS NULL OR r.signature = $1) AND ($3 IS NULL OR p.sdk = $3) \
     AND ($4 IS NULL OR p.manufacturer = $4) AND ($5 IS NULL OR p.app_version = $5) \
     ORDER BY r.package_id DESC LIMIT $2";

/// A [`LeakRef`] borrowed from a row of [`NO_LEAK_ROWS`]: no library, the current
/// signature version (a path's signature has no version of the analyzer's).
macro_rules! no_leak_row {
    ($r:expr) => {{
        let r = $r;
        LeakRef {
            leak_id: r.try_get(0)?,
            package_id: r.try_get(1)?,
            received_ms: r.try_get(2)?,
            sdk: r.try_get(3)?,
            manufacturer: r.try_get(4)?,
            app_version: r.try_get(5)?,
            signature: r.try_get(6)?,
            class_name: r.try_get(7)?,
            library: None,
            title: Some(r.try_get(8)?),
            retained_bytes: r.try_get(9)?,
            retained_native_bytes: r.try_get(10)?,
            signature_version: Some(i64::from(SIGNATURE_VERSION)),
        }
    }};
}

/// Records in `$tx` what is kept of analysis `$a`'s triage for package `$id`: the triage
/// as its page shows it, and the package's no-leak group when it has no leak.
macro_rules! record_triage {
    ($tx:ident, $id:expr, $a:expr) => {{
        if let Some(t) = PackageTriage::of($a) {
            sqlx::query("INSERT INTO triages (package_id, triage) VALUES ($1, $2)")
                .bind($id)
                .bind(serde_json::to_string(&t).unwrap_or_default())
                .execute(&mut *$tx)
                .await?;
        }
        if let Some(n) = NoLeak::of($a) {
            sqlx::query(
                "INSERT INTO retainers (package_id, signature, class_name, title, \
                 retained_bytes, retained_native_bytes, path, shrunk) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
            )
            .bind($id)
            .bind(&n.signature)
            .bind(&n.class_name)
            .bind(&n.title)
            .bind(stored(n.retained_bytes))
            .bind(stored(n.retained_native_bytes))
            .bind(&n.path)
            .bind(n.shrunk)
            .execute(&mut *$tx)
            .await?;
        }
    }};
}

/// Inserts in `$tx` the row of package `$p` (a [`NewPackage`]) received at `$now`, its
/// properties cut as they are recorded; the new id, or `None` when a package of the same
/// content is there.
macro_rules! insert_package_row {
    ($tx:ident, $p:expr, $now:expr) => {{
        let p = $p;
        // Cut here, whoever records: a phone chooses these values.
        let (manifest, extra) = (Props::capped(p.manifest), Props::capped(p.extra));
        let column = |props: &[(String, String)], keys: &[&str]| {
            limits::column(&prop(props, keys)).into_owned()
        };
        let id: Option<i64> = sqlx::query_scalar(INSERT_PACKAGE)
            .bind(p.md5)
            .bind(p.name)
            .bind(stored(p.bytes))
            .bind($now)
            .bind(column(p.manifest, &["sdkVersion"]))
            .bind(column(p.manifest, &["manufacturer"]))
            .bind(column(p.extra, APP_VERSION_KEYS))
            .bind(manifest.to_json())
            .bind(extra.to_json())
            .fetch_optional(&mut *$tx)
            .await?;
        id
    }};
}

/// Records in `$tx` the leaks of analysis `$a` as package `$id`'s, stamped `$stamp`.
macro_rules! insert_leaks {
    ($tx:ident, $id:expr, $a:expr, $stamp:expr) => {{
        for l in &$a.leaks {
            sqlx::query(
                "INSERT INTO leaks (package_id, signature, class_name, library, \
                 retained_bytes, trace, generation, title, signature_version, \
                 retained_native_bytes) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
            )
            .bind($id)
            .bind(&l.signature)
            .bind(&l.class_name)
            .bind(l.library_leak.as_ref().map(|k| k.description.clone()))
            .bind(stored(l.retained_bytes))
            .bind(serde_json::to_string(&l.trace).unwrap_or_default())
            .bind($stamp)
            .bind(limits::cut(&crate::title::short_description(l), limits::NAME_BYTES).as_ref())
            .bind(i64::from($a.signature_version))
            .bind(stored(l.retained_native_bytes))
            .execute(&mut *$tx)
            .await?;
        }
    }};
}

/// Queues package `$id` again, in `$tx`, when its app version's mapping is not the one
/// its analysis, just recorded, was made with: a mapping that arrived while the package
/// was analyzed without it (or with the one before).
macro_rules! requeue_if_remapped {
    ($tx:ident, $id:expr, $now:expr) => {{
        let current = sqlx::query(MAPPING_OF_PACKAGE)
            .bind($id)
            .fetch_optional(&mut *$tx)
            .await?;
        if let Some(r) = current {
            let (md5, version): (String, String) = (r.try_get(0)?, r.try_get(1)?);
            sqlx::query(QUEUE_REMAP)
                .bind($now)
                .bind(&version)
                .bind(&md5)
                .bind(Some($id))
                .execute(&mut *$tx)
                .await?;
        }
    }};
}

/// The leak columns the grouping reads, of the packages a filter admits.
const GROUPED_LEAKS: &str = grouped_leaks!("");

/// The same, only those recorded after generation $4 (by its index).
const GROUPED_LEAKS_SINCE: &str = concat!(grouped_leaks!(""), " AND l.generation > $4");

/// Jobs whose lease ran out after their last allowed attempt: failed, not retaken.
const FAIL_EXPIRED: &str = "UPDATE jobs SET state = 'failed', lease_owner = NULL, \
     updated_ms = $1, error = 'the analysis was interrupted ' || attempts || \
     ' times (its worker stopped or lost its lease)' \
     WHERE state = 'analyzing' AND lease_until < $1 AND attempts >= $2";

/// The oldest job that is queued (and not waiting out a backoff), or whose lease ran out;
/// re-analyses ($4: whether one may be taken) only when no other job is waiting.
/// SQLite serializes writers, so one UPDATE is enough there.
const CLAIM_SQLITE: &str = "UPDATE jobs SET state = 'analyzing', attempts = attempts + 1, \
     lease_owner = $2, lease_until = $3, updated_ms = $1 \
     WHERE package_id = (SELECT package_id FROM jobs WHERE ((state = 'received' \
     AND not_before <= $1) \
     OR (state = 'analyzing' AND lease_until < $1)) AND ($4 OR NOT regroup) \
     ORDER BY regroup, package_id LIMIT 1) \
     RETURNING package_id, attempts, regroup";

/// PostgreSQL: the candidate row is locked by the inner SELECT, and rows other claimers
/// hold are skipped rather than waited for, so concurrent claims take different jobs.
const CLAIM_POSTGRES: &str = "UPDATE jobs SET state = 'analyzing', attempts = attempts + 1, \
     lease_owner = $2, lease_until = $3, updated_ms = $1 \
     WHERE package_id = (SELECT package_id FROM jobs WHERE ((state = 'received' \
     AND not_before <= $1) \
     OR (state = 'analyzing' AND lease_until < $1)) AND ($4 OR NOT regroup) \
     ORDER BY regroup, package_id LIMIT 1 \
     FOR UPDATE SKIP LOCKED) \
     RETURNING package_id, attempts, regroup";

/// Only the current holder ends a job: a worker presumed dead whose job was retaken finds
/// its token gone and records nothing.
const FINISH_JOB: &str = "UPDATE jobs SET state = 'done', error = NULL, lease_owner = NULL, \
     analyses = analyses + 1, updated_ms = $1, signature_version = $4, analysis_schema = $5, \
     mapping_md5 = $6 \
     WHERE package_id = $2 AND lease_owner = $3 AND state = 'analyzing'";

/// Done jobs of packages of app version $2 whose analysis was not made with that version's
/// mapping (md5 $3; none counts as another), queued again as re-analyses ($4: one package
/// only, or NULL for every one). A mapping that arrives while a package is analyzed
/// without it requeues the package when the analysis is recorded (the finish runs this on
/// its own job); the mapping's PUT runs it on the version's.
const QUEUE_REMAP: &str = "UPDATE jobs SET state = 'received', regroup = TRUE, error = NULL, \
     attempts = 0, not_before = 0, lease_owner = NULL, updated_ms = $1 \
     WHERE state = 'done' AND NOT report AND (mapping_md5 IS NULL OR mapping_md5 <> $3) \
     AND package_id IN (SELECT id FROM packages WHERE app_version = $2) \
     AND ($4 IS NULL OR package_id = $4)";

/// The mapping of package $1's app version: (its md5, the version).
const MAPPING_OF_PACKAGE: &str = "SELECT m.md5, m.app_version FROM packages p \
     JOIN mappings m ON m.app_version = p.app_version WHERE p.id = $1";

/// Done jobs whose analysis is older than the analyzer's ($2: its signature version, $3:
/// its schema; unknown counts as older), queued again as re-analyses.
const QUEUE_REGROUP: &str = "UPDATE jobs SET state = 'received', regroup = TRUE, error = NULL, \
     attempts = 0, not_before = 0, lease_owner = NULL, updated_ms = $1 \
     WHERE state = 'done' AND NOT report AND (signature_version IS NULL OR signature_version < $2 \
     OR analysis_schema IS NULL OR analysis_schema < $3)";

/// Re-analyses of an earlier regrouping that ended: no longer counted in the next one.
const END_REGROUPING: &str = "UPDATE jobs SET regroup = FALSE \
     WHERE regroup AND state IN ('done', 'failed')";

/// Re-analyses queued or under way.
const REGROUPS_PENDING: &str =
    "SELECT COUNT(*) FROM jobs WHERE regroup AND state IN ('received', 'analyzing')";

/// How long the signatures of removed leak rows are kept for the caches (see
/// `leak_removals` in the migrations): a cache that last looked before starts over.
const REMOVALS_KEPT_MS: i64 = 3_600_000;

const FAIL_JOB: &str = "UPDATE jobs SET state = 'failed', error = $1, lease_owner = NULL, \
     updated_ms = $2 WHERE package_id = $3 AND lease_owner = $4 AND state = 'analyzing'";

/// Back to the queue after a passing fault, not to be claimed before $2.
const RETRY_JOB: &str = "UPDATE jobs SET state = 'received', error = $1, not_before = $2, \
     lease_owner = NULL, updated_ms = $3 \
     WHERE package_id = $4 AND lease_owner = $5 AND state = 'analyzing'";

/// Failed jobs back to the queue, with every attempt ahead of them again ($2: one package,
/// or NULL for every failed one).
const REQUEUE_FAILED: &str = "UPDATE jobs SET state = 'received', error = NULL, attempts = 0, \
     not_before = 0, lease_owner = NULL, updated_ms = $1 \
     WHERE state = 'failed' AND ($2 IS NULL OR package_id = $2)";

const RENEW: &str = "UPDATE jobs SET lease_until = $1 \
     WHERE package_id = $2 AND lease_owner = $3 AND state = 'analyzing'";

/// A package's record; none (and no id) when its content was recorded before.
const INSERT_PACKAGE: &str = "INSERT INTO packages (md5, name, bytes, received_ms, sdk, \
     manufacturer, app_version, manifest, extra) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) \
     ON CONFLICT (md5) DO NOTHING RETURNING id";

/// A random token naming one claim.
fn claim_token() -> String {
    format!("{:016x}{:016x}", fastrand::u64(..), fastrand::u64(..))
}

/// The URL without its password, for messages.
pub fn redact_url(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    match authority.rsplit_once('@') {
        Some((user, host)) if user.contains(':') => {
            let user = user.split(':').next().unwrap_or("");
            format!("{scheme}://{user}:***@{host}{path}")
        }
        _ => url.to_string(),
    }
}

impl Store {
    /// Opens (creating) `DIR/meta.sqlite` and brings its schema up to date.
    pub async fn open(path: &Path) -> DbResult<Store> {
        let opts = SqliteConnectOptions::from_str("sqlite://")?
            .filename(path)
            .create_if_missing(true)
            // WAL with FULL sync: a package answered 2xx stays recorded through a power cut.
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Full)
            .foreign_keys(true)
            .busy_timeout(Duration::from_secs(30));
        let pool = SqlitePoolOptions::new()
            .max_connections(8)
            .connect_with(opts)
            .await?;
        migrate(&Store::Sqlite(pool.clone()), SQLITE_MIGRATIONS).await?;
        Ok(Store::Sqlite(pool))
    }

    /// Connects to PostgreSQL (`postgres://USER:PASSWORD@HOST:PORT/DB`) and brings its
    /// schema up to date; processes starting together migrate one at a time (sqlx holds an
    /// advisory lock while it migrates).
    pub async fn connect(url: &str) -> DbResult<Store> {
        let opts = PgConnectOptions::from_str(url)?;
        // One connection first: a pool that cannot connect reports only that it timed
        // out, this says why (refused, unknown host, authentication).
        sqlx::Connection::close(
            <sqlx::PgConnection as sqlx::Connection>::connect_with(&opts).await?,
        )
        .await?;
        let pool = PgPoolOptions::new()
            .max_connections(8)
            .acquire_timeout(Duration::from_secs(10))
            .connect_with(opts)
            .await?;
        migrate(&Store::Postgres(pool.clone()), POSTGRES_MIGRATIONS).await?;
        Ok(Store::Postgres(pool))
    }

    /// The engine, for the start line.
    pub fn describe(&self) -> &'static str {
        match self {
            Store::Sqlite(_) => "SQLite (embedded)",
            Store::Postgres(_) => "PostgreSQL",
        }
    }

    /// Whether several processes may share this database (PostgreSQL).
    pub fn is_shared(&self) -> bool {
        matches!(self, Store::Postgres(_))
    }

    /// Closes the pool: no connection is taken after, and the open ones are closed.
    pub async fn close(&self) {
        on!(self, pool => pool.close().await)
    }

    pub(crate) async fn package_by_md5(&self, md5: &str) -> DbResult<Option<i64>> {
        on!(self, pool => sqlx::query_scalar("SELECT id FROM packages WHERE md5 = $1")
            .bind(md5)
            .fetch_optional(pool)
            .await)
    }

    /// Records a package and queues its analysis, in one transaction. `Ok(Err(id))`: the
    /// same content was recorded first, as `id`.
    pub async fn insert_package(&self, p: &NewPackage<'_>) -> DbResult<Result<i64, i64>> {
        let now = now_ms();
        let id: Option<i64> = on!(self, pool => {
            let mut tx = pool.begin().await?;
            let id = insert_package_row!(tx, p, now);
            match id {
                None => tx.rollback().await?,
                Some(id) => {
                    sqlx::query(
                        "INSERT INTO jobs (package_id, state, attempts, updated_ms) \
                         VALUES ($1, 'received', 0, $2)",
                    )
                    .bind(id)
                    .bind(now)
                    .execute(&mut *tx)
                    .await?;
                    sqlx::query(BUMP_GENERATION).execute(&mut *tx).await?;
                    tx.commit().await?;
                }
            }
            id
        });
        self.recorded(id, p.md5).await
    }

    /// `Ok(id)` of a package just recorded, else `Err` of the one of the same content
    /// recorded first.
    async fn recorded(&self, id: Option<i64>, md5: &str) -> DbResult<Result<i64, i64>> {
        match id {
            Some(id) => Ok(Ok(id)),
            None => {
                let first = self.package_by_md5(md5).await?;
                first.map(Err).ok_or(sqlx::Error::RowNotFound)
            }
        }
    }

    /// Records a LeakCanary report as a package (`p`) whose job is done at once with the
    /// leaks of `a` (read from the text), in one transaction; such a job is never queued
    /// again. `Ok(Err(id))`: the same text was recorded first, as `id`.
    pub async fn record_report(
        &self,
        p: &NewPackage<'_>,
        a: &Analysis,
    ) -> DbResult<Result<i64, i64>> {
        let now = now_ms();
        let id: Option<i64> = on!(self, pool => {
            let mut tx = pool.begin().await?;
            let id = insert_package_row!(tx, p, now);
            match id {
                None => tx.rollback().await?,
                Some(id) => {
                    sqlx::query(
                        "INSERT INTO jobs (package_id, state, attempts, updated_ms, analyses, \
                         signature_version, analysis_schema, report) \
                         VALUES ($1, 'done', 0, $2, 1, $3, $4, TRUE)",
                    )
                    .bind(id)
                    .bind(now)
                    .bind(i64::from(a.signature_version))
                    .bind(i64::from(a.schema))
                    .execute(&mut *tx)
                    .await?;
                    let stamp: i64 = sqlx::query_scalar(BUMP_GENERATION_FOR_LEAKS)
                        .bind(0i64)
                        .fetch_one(&mut *tx)
                        .await?;
                    insert_leaks!(tx, id, a, stamp);
                    tx.commit().await?;
                }
            }
            id
        });
        self.recorded(id, p.md5).await
    }

    /// The package `id` with its `result.info` and `extra.info`; None when there is none.
    pub async fn package(&self, id: i64) -> DbResult<Option<Package>> {
        const SQL: &str = package_sql::ONE;
        on!(self, pool => {
            let Some(r) = sqlx::query(SQL).bind(id).fetch_optional(pool).await? else {
                return Ok(None);
            };
            let (manifest, extra) = (props!(r, "manifest"), props!(r, "extra"));
            Ok(Some(Package {
                row: package_row!(&r)?,
                manifest: manifest.pairs,
                manifest_cut: manifest.cut,
                extra: extra.pairs,
                extra_cut: extra.cut,
            }))
        })
    }

    /// The most recent packages first, without their properties, at most `limit` of them,
    /// each with an id below `before` (a page of the list; `i64::MAX` for the first).
    pub async fn packages(&self, limit: i64, before: i64) -> DbResult<Vec<PackageRow>> {
        const SQL: &str = package_sql::RECENT;
        on!(self, pool => {
            let rows = sqlx::query(SQL).bind(limit).bind(before).fetch_all(pool).await?;
            rows.iter().map(|r| package_row!(r)).collect()
        })
    }

    /// The embedded database at start: no other process uses it, so jobs left `analyzing`
    /// were interrupted by this one's last stop. They are queued again at once (rather than
    /// when their lease runs out), or failed once interrupted [`MAX_ATTEMPTS`] times.
    /// Returns (requeued, failed).
    pub async fn recover(&self) -> DbResult<(u64, u64)> {
        let now = now_ms();
        on!(self, pool => {
            let failed = sqlx::query(
                "UPDATE jobs SET state = 'failed', lease_owner = NULL, updated_ms = $1, \
                 error = 'the server stopped while analyzing this package ' || attempts || ' times' \
                 WHERE state = 'analyzing' AND attempts >= $2",
            )
            .bind(now)
            .bind(MAX_ATTEMPTS)
            .execute(pool)
            .await?
            .rows_affected();
            let requeued = sqlx::query(
                "UPDATE jobs SET state = 'received', lease_owner = NULL, updated_ms = $1 \
                 WHERE state = 'analyzing'",
            )
            .bind(now)
            .execute(pool)
            .await?
            .rows_affected();
            Ok((requeued, failed))
        })
    }

    /// Takes the oldest job queued or whose lease ran out, under a lease of `lease`. Jobs
    /// whose lease ran out after [`MAX_ATTEMPTS`] attempts are failed on the way. Returns
    /// the claim and how many jobs were failed so.
    pub async fn claim(&self, lease: Duration) -> DbResult<(Option<Claim>, u64)> {
        self.claim_with(lease, true).await
    }

    /// [`Store::claim`], taking a re-analysis (the lowest priority, see
    /// [`Store::queue_regroup`]) only if `regroup` and no other job is waiting.
    pub async fn claim_with(
        &self,
        lease: Duration,
        regroup: bool,
    ) -> DbResult<(Option<Claim>, u64)> {
        let now = now_ms();
        let until = now.saturating_add(lease.as_millis() as i64);
        let token = claim_token();
        let claim_sql = match self {
            Store::Sqlite(_) => CLAIM_SQLITE,
            Store::Postgres(_) => CLAIM_POSTGRES,
        };
        let (claimed, failed): (Option<(i64, i64, bool)>, u64) = on!(self, pool => {
            let failed = sqlx::query(FAIL_EXPIRED)
                .bind(now)
                .bind(MAX_ATTEMPTS)
                .execute(pool)
                .await?
                .rows_affected();
            let mut tx = pool.begin().await?;
            let row = sqlx::query(claim_sql)
                .bind(now)
                .bind(&token)
                .bind(until)
                .bind(regroup)
                .fetch_optional(&mut *tx)
                .await?;
            let claimed = match row {
                Some(r) => Some((r.try_get::<i64, _>(0)?, r.try_get::<i64, _>(1)?, r.try_get::<bool, _>(2)?)),
                None => None,
            };
            if claimed.is_some() || failed > 0 {
                // The queue's counts on the groups page changed.
                sqlx::query(BUMP_GENERATION).execute(&mut *tx).await?;
            }
            tx.commit().await?;
            (claimed, failed)
        });
        let Some((id, attempt, regroup)) = claimed else {
            return Ok((None, failed));
        };
        // The package's key, and its app version's mapping if one was uploaded.
        let (md5, mapping): (String, Option<MappingRef>) = on!(self, pool => {
            let r = sqlx::query(
                "SELECT p.md5, m.md5, m.app_version FROM packages p \
                 LEFT JOIN mappings m ON m.app_version = p.app_version WHERE p.id = $1",
            )
            .bind(id)
            .fetch_one(pool)
            .await?;
            let mapping = match (r.try_get::<Option<String>, _>(1)?, r.try_get::<Option<String>, _>(2)?) {
                (Some(md5), Some(app_version)) => Some(MappingRef { md5, app_version }),
                _ => None,
            };
            (r.try_get(0)?, mapping)
        });
        Ok((
            Some(Claim {
                id,
                md5,
                attempt,
                token,
                regroup,
                mapping,
            }),
            failed,
        ))
    }

    /// Extends a claim's lease to `lease` from now. False: the lease was lost (it ran out
    /// and another worker took the job, or the job ended).
    pub async fn renew(&self, c: &Claim, lease: Duration) -> DbResult<bool> {
        let until = now_ms().saturating_add(lease.as_millis() as i64);
        on!(self, pool => Ok(sqlx::query(RENEW)
            .bind(until)
            .bind(c.id)
            .bind(&c.token)
            .execute(pool)
            .await?
            .rows_affected()
            == 1))
    }

    /// Records what the analysis found and marks the job done, if `c` still holds its
    /// lease; false (and nothing recorded) if not. A rerun after an interruption replaces
    /// what an earlier run wrote.
    pub async fn finish(&self, c: &Claim, a: &Analysis, pictured: &[String]) -> DbResult<bool> {
        let id = c.id;
        let now = now_ms();
        on!(self, pool => {
            let mut tx = pool.begin().await?;
            // First, so that the row stays locked (PostgreSQL) until the commit: a claim
            // cannot take the job from under this transaction.
            let held = sqlx::query(FINISH_JOB)
                .bind(now)
                .bind(id)
                .bind(&c.token)
                .bind(i64::from(a.signature_version))
                .bind(i64::from(a.schema))
                .bind(c.mapping.as_ref().map(|m| m.md5.as_str()))
                .execute(&mut *tx)
                .await?
                .rows_affected()
                == 1;
            if !held {
                tx.rollback().await?;
                return Ok(false);
            }
            requeue_if_remapped!(tx, id, now);
            let mut removed: Vec<String> =
                sqlx::query_scalar("DELETE FROM leaks WHERE package_id = $1 RETURNING signature")
                    .bind(id)
                    .fetch_all(&mut *tx)
                    .await?;
            for table in ["bitmaps", "triages", "retainers"] {
                sqlx::query(&format!("DELETE FROM {table} WHERE package_id = $1"))
                    .bind(id)
                    .execute(&mut *tx)
                    .await?;
            }
            let stamp: i64 = sqlx::query_scalar(BUMP_GENERATION_FOR_LEAKS)
                .bind(i64::from(!removed.is_empty()))
                .fetch_one(&mut *tx)
                .await?;
            if !removed.is_empty() {
                // The groups these rows were in, for the caches to remake (see
                // `leaks_since`); what no cache can still need, dropped.
                sqlx::query("DELETE FROM leak_removals WHERE at_ms < $1")
                    .bind(now - REMOVALS_KEPT_MS)
                    .execute(&mut *tx)
                    .await?;
                removed.sort_unstable();
                removed.dedup();
                for sig in &removed {
                    sqlx::query(
                        "INSERT INTO leak_removals (generation, signature, at_ms) \
                         VALUES ($1, $2, $3)",
                    )
                    .bind(stamp)
                    .bind(sig)
                    .bind(now)
                    .execute(&mut *tx)
                    .await?;
                }
            }
            insert_leaks!(tx, id, a, stamp);
            for g in &a.duplicate_bitmaps {
                sqlx::query(
                    "INSERT INTO bitmaps (package_id, hash, width, height, buffer_bytes, \
                     copies, wasted_bytes, format, has_picture) \
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
                )
                .bind(id)
                .bind(&g.hash)
                .bind(g.width)
                .bind(g.height)
                .bind(g.buffer_bytes as i64)
                .bind(g.count as i64)
                .bind(g.wasted_bytes as i64)
                .bind(&g.format)
                .bind(pictured.contains(&g.hash))
                .execute(&mut *tx)
                .await?;
            }
            record_triage!(tx, id, a);
            tx.commit().await?;
            Ok(true)
        })
    }

    /// Fails a job whose analysis failed, if `c` still holds its lease.
    pub async fn fail(&self, c: &Claim, error: &str) -> DbResult<bool> {
        on!(self, pool => {
            let mut tx = pool.begin().await?;
            let held = sqlx::query(FAIL_JOB)
                .bind(limits::text(error).as_ref())
                .bind(now_ms())
                .bind(c.id)
                .bind(&c.token)
                .execute(&mut *tx)
                .await?
                .rows_affected()
                == 1;
            if held {
                sqlx::query(BUMP_GENERATION).execute(&mut *tx).await?;
            }
            tx.commit().await?;
            Ok(held)
        })
    }

    /// Puts a job whose attempt failed by a passing fault back in the queue, with `error`
    /// as its last failure, not to be claimed before `not_before` (ms since the epoch), if
    /// `c` still holds its lease.
    pub async fn retry(&self, c: &Claim, error: &str, not_before: i64) -> DbResult<bool> {
        on!(self, pool => {
            let mut tx = pool.begin().await?;
            let held = sqlx::query(RETRY_JOB)
                .bind(limits::text(error).as_ref())
                .bind(not_before)
                .bind(now_ms())
                .bind(c.id)
                .bind(&c.token)
                .execute(&mut *tx)
                .await?
                .rows_affected()
                == 1;
            if held {
                sqlx::query(BUMP_GENERATION).execute(&mut *tx).await?;
            }
            tx.commit().await?;
            Ok(held)
        })
    }

    /// Records `m` as its app version's mapping (replacing the one before) and queues
    /// for re-analysis the version's analyzed packages not made with it, in one
    /// transaction. Returns whether the version's mapping changed, and how many packages
    /// were queued.
    pub async fn put_mapping(&self, m: &NewMapping<'_>) -> DbResult<(bool, u64)> {
        let now = now_ms();
        on!(self, pool => {
            let mut tx = pool.begin().await?;
            let before: Option<String> =
                sqlx::query_scalar("SELECT md5 FROM mappings WHERE app_version = $1")
                    .bind(m.app_version)
                    .fetch_optional(&mut *tx)
                    .await?;
            sqlx::query(
                "INSERT INTO mappings (app_version, md5, bytes, received_ms) \
                 VALUES ($1, $2, $3, $4) ON CONFLICT (app_version) DO UPDATE \
                 SET md5 = excluded.md5, bytes = excluded.bytes, received_ms = excluded.received_ms",
            )
            .bind(m.app_version)
            .bind(m.md5)
            .bind(stored(m.bytes))
            .bind(now)
            .execute(&mut *tx)
            .await?;
            let queued = sqlx::query(QUEUE_REMAP)
                .bind(now)
                .bind(m.app_version)
                .bind(m.md5)
                .bind(None::<i64>)
                .execute(&mut *tx)
                .await?
                .rows_affected();
            if queued > 0 {
                // The queue's counts on the groups page changed.
                sqlx::query(BUMP_GENERATION).execute(&mut *tx).await?;
            }
            tx.commit().await?;
            Ok((before.as_deref() != Some(m.md5), queued))
        })
    }

    /// Puts failed jobs back in the queue with all their attempts ahead of them: package
    /// `id`'s, or every failed one. Returns how many.
    pub async fn requeue_failed(&self, id: Option<i64>) -> DbResult<u64> {
        on!(self, pool => {
            let mut tx = pool.begin().await?;
            let n = sqlx::query(REQUEUE_FAILED)
                .bind(now_ms())
                .bind(id)
                .execute(&mut *tx)
                .await?
                .rows_affected();
            if n > 0 {
                sqlx::query(BUMP_GENERATION).execute(&mut *tx).await?;
            }
            tx.commit().await?;
            Ok(n)
        })
    }

    /// The number that changes with every change the leak-groups page shows, in every
    /// process sharing the database.
    pub async fn generation(&self) -> DbResult<i64> {
        on!(self, pool => sqlx::query_scalar("SELECT n FROM generation WHERE id = 1")
            .fetch_one(pool)
            .await)
    }

    /// Sends `sink` the leak rows the filter admits that were recorded after `since`, or,
    /// when there is no `since` or rows were removed after it, every row (after a
    /// [`Fold::clear`]); all read in one snapshot with the version it returns, so
    /// that the rows are exactly those of that version. Also returns whether every row
    /// was sent. The rows are streamed, not read whole first; reading stops once the
    /// sink is [full](LeakSink::full).
    pub async fn leaks_since(
        &self,
        f: &Filter,
        since: Option<Version>,
        sink: &mut impl LeakSink,
    ) -> DbResult<(Version, bool)> {
        on!(self, pool => {
            let (mut tx, now) = snapshot!(self, pool);
            // Groups that lost rows since: remade from their rows alone, when every
            // removal since is in the log (one generation per removing transaction).
            let mut remake: Option<Vec<String>> = None;
            match since {
                Some(s) if s == now => {
                    tx.commit().await?;
                    return Ok((now, false));
                }
                Some(s) if s.removals == now.removals && s.generation < now.generation => {
                    remake = Some(Vec::new());
                }
                Some(s) if s.removals < now.removals && s.generation < now.generation => {
                    let rows = sqlx::query(
                        "SELECT generation, signature FROM leak_removals WHERE generation > $1",
                    )
                    .bind(s.generation)
                    .fetch_all(&mut *tx)
                    .await?;
                    let mut gens = std::collections::HashSet::new();
                    let mut sigs = Vec::with_capacity(rows.len());
                    for r in &rows {
                        gens.insert(r.try_get::<i64, _>(0)?);
                        sigs.push(r.try_get::<String, _>(1)?);
                    }
                    if gens.len() as i64 == now.removals - s.removals {
                        sigs.sort_unstable();
                        sigs.dedup();
                        remake = Some(sigs);
                    }
                }
                _ => {}
            }
            let Some(remake) = remake else {
                sink.clear();
                let mut rows = sqlx::query(GROUPED_LEAKS)
                    .bind(&f.sdk)
                    .bind(&f.manufacturer)
                    .bind(&f.app_version)
                    .fetch(&mut *tx);
                while let Some(r) = rows.try_next().await? {
                    sink.add(&leak_row!(&r));
                    if sink.full() {
                        break;
                    }
                }
                drop(rows);
                tx.commit().await?;
                return Ok((now, true));
            };
            for sig in &remake {
                sink.forget(sig);
            }
            // Only where it is named: PostgreSQL refuses a parameter too many.
            let mut rows = sqlx::query(GROUPED_LEAKS_SINCE)
                .bind(&f.sdk)
                .bind(&f.manufacturer)
                .bind(&f.app_version)
                .bind(since.map_or(0, |s| s.generation))
                .fetch(&mut *tx);
            while let Some(r) = rows.try_next().await? {
                let l = leak_row!(&r);
                // Added with its group's other rows below.
                if remake.binary_search_by(|s| s.as_str().cmp(l.signature)).is_err() {
                    sink.add(&l);
                }
                if sink.full() {
                    break;
                }
            }
            drop(rows);
            for sig in &remake {
                if sink.full() {
                    break;
                }
                let mut rows = sqlx::query(concat!(grouped_leaks!(""), " AND l.signature = $4"))
                    .bind(&f.sdk)
                    .bind(&f.manufacturer)
                    .bind(&f.app_version)
                    .bind(sig)
                    .fetch(&mut *tx);
                while let Some(r) = rows.try_next().await? {
                    sink.add(&leak_row!(&r));
                    if sink.full() {
                        break;
                    }
                }
            }
            tx.commit().await?;
            Ok((now, false))
        })
    }

    /// Jobs by state: (state, count).
    pub async fn job_counts(&self) -> DbResult<Vec<(String, i64)>> {
        Ok(self.queue().await?.states)
    }

    /// The queue: jobs by state, and the regrouping under way if any (read by index).
    pub async fn queue(&self) -> DbResult<Queue> {
        let counts: Vec<(String, bool, i64)> = on!(self, pool => {
            let rows = sqlx::query(
                "SELECT state, regroup, COUNT(*) AS n FROM jobs GROUP BY state, regroup",
            )
            .fetch_all(pool)
            .await?;
            rows.iter()
                .map(|r| Ok::<_, sqlx::Error>((r.try_get(0)?, r.try_get(1)?, r.try_get(2)?)))
                .collect::<DbResult<_>>()?
        });
        let mut states: std::collections::BTreeMap<String, i64> = Default::default();
        let mut r = Regrouping {
            packages: 0,
            reanalyzed: 0,
            failed: 0,
            signature_version: i64::from(SIGNATURE_VERSION),
        };
        let mut pending = 0;
        for (state, regroup, n) in counts {
            *states.entry(state.clone()).or_default() += n;
            if regroup {
                r.packages += n;
                match state.as_str() {
                    "done" => r.reanalyzed += n,
                    "failed" => r.failed += n,
                    _ => pending += n,
                }
            }
        }
        Ok(Queue {
            states: states.into_iter().collect(),
            regrouping: (pending > 0).then_some(r),
        })
    }

    /// Queues every package whose recorded analysis is older than this analyzer's
    /// (signature version or schema; unknown counts as older) for re-analysis at the
    /// lowest priority, unless its job is failed (a failed re-analysis is not tried again
    /// by itself). Returns how many were queued. Counts of an earlier regrouping that
    /// ended are reset first, so that "N of M" counts this one's.
    pub async fn queue_regroup(&self) -> DbResult<u64> {
        let now = now_ms();
        on!(self, pool => {
            let mut tx = pool.begin().await?;
            let pending: i64 = sqlx::query_scalar(REGROUPS_PENDING)
                .fetch_one(&mut *tx)
                .await?;
            if pending == 0 {
                sqlx::query(END_REGROUPING).execute(&mut *tx).await?;
            }
            let n = sqlx::query(QUEUE_REGROUP)
                .bind(now)
                .bind(i64::from(SIGNATURE_VERSION))
                .bind(i64::from(SCHEMA_VERSION))
                .execute(&mut *tx)
                .await?
                .rows_affected();
            if n > 0 {
                sqlx::query(BUMP_GENERATION).execute(&mut *tx).await?;
                tx.commit().await?;
            } else {
                // Nothing queued: the flags of the ended regrouping may stay as they were.
                tx.rollback().await?;
            }
            Ok(n)
        })
    }

    /// Every leak of the packages the filter admits, with their package's facts.
    pub async fn leaks(&self, f: &Filter, signature: Option<&str>) -> DbResult<Vec<LeakRow>> {
        on!(self, pool => {
            let rows = sqlx::query(concat!(
                grouped_leaks!(", p.name"),
                " AND ($4 IS NULL OR l.signature = $4) ORDER BY l.package_id, l.id"
            ))
            .bind(&f.sdk)
            .bind(&f.manufacturer)
            .bind(&f.app_version)
            .bind(signature)
            .fetch_all(pool)
            .await?;
            rows.iter()
                .map(|r| Ok(LeakRow::of(&leak_row!(r), r.try_get(13)?)))
                .collect()
        })
    }

    /// The trace of the most recent occurrence of a signature (JSON).
    pub async fn latest_trace(&self, signature: &str) -> DbResult<Option<String>> {
        on!(self, pool => sqlx::query_scalar(
            "SELECT trace FROM leaks WHERE signature = $1 ORDER BY package_id DESC, id DESC LIMIT 1",
        )
        .bind(signature)
        .fetch_optional(pool)
        .await)
    }

    /// The leaks of one package: (signature, class name, library, retained bytes, retained
    /// native bytes).
    pub async fn leaks_of(&self, id: i64) -> DbResult<Vec<PackageLeakRow>> {
        on!(self, pool => {
            let rows = sqlx::query(
                "SELECT signature, class_name, library, retained_bytes, retained_native_bytes \
                 FROM leaks WHERE package_id = $1 ORDER BY id",
            )
            .bind(id)
            .fetch_all(pool)
            .await?;
            rows.iter()
                .map(|r| {
                    Ok((
                        r.try_get(0)?,
                        r.try_get(1)?,
                        r.try_get(2)?,
                        r.try_get(3)?,
                        r.try_get(4)?,
                    ))
                })
                .collect()
        })
    }

    /// What the package's page shows of its analysis's triage; `None` when it has none
    /// (not analyzed yet, or analyzed before the triage existed).
    pub async fn triage(&self, id: i64) -> DbResult<Option<PackageTriage>> {
        let text: Option<String> = on!(self, pool => sqlx::query_scalar(
            "SELECT triage FROM triages WHERE package_id = $1",
        )
        .bind(id)
        .fetch_optional(pool)
        .await)?;
        text.map(|t| serde_json::from_str(&t).map_err(|e| sqlx::Error::Decode(Box::new(e))))
            .transpose()
    }

    /// Sends `sink` every package without a leak that `f` admits, as a leak of the no-leak
    /// group of its first top retainer with a path (only those of `signature` when
    /// given). Streamed; reading stops once the sink is [full](LeakSink::full).
    pub async fn fold_no_leak(
        &self,
        signature: Option<&str>,
        f: &Filter,
        sink: &mut impl LeakSink,
    ) -> DbResult<()> {
        on!(self, pool => {
            let mut rows = sqlx::query(NO_LEAK_ROWS)
                .bind(signature)
                .bind(i64::MAX)
                .bind(&f.sdk)
                .bind(&f.manufacturer)
                .bind(&f.app_version)
                .fetch(pool);
            while let Some(r) = rows.try_next().await? {
                sink.add(&no_leak_row!(&r));
                if sink.full() {
                    break;
                }
            }
            Ok(())
        })
    }

    /// The `limit` most recent packages of a no-leak group, as leak rows.
    pub async fn no_leak_occurrences(&self, signature: &str, limit: i64) -> DbResult<Vec<LeakRow>> {
        on!(self, pool => {
            let rows = sqlx::query(NO_LEAK_ROWS)
                .bind(signature)
                .bind(limit)
                .bind(None::<String>)
                .bind(None::<String>)
                .bind(None::<String>)
                .fetch_all(pool)
                .await?;
            rows.iter()
                .map(|r| Ok(LeakRow::of(&no_leak_row!(r), r.try_get(11)?)))
                .collect()
        })
    }

    /// The path (JSON) of the most recent package of a no-leak group.
    pub async fn latest_no_leak_path(&self, signature: &str) -> DbResult<Option<String>> {
        on!(self, pool => sqlx::query_scalar(
            "SELECT path FROM retainers WHERE signature = $1 \
             ORDER BY package_id DESC LIMIT 1",
        )
        .bind(signature)
        .fetch_optional(pool)
        .await)
    }

    /// The duplicated bitmaps recorded, of one package or (None) of all.
    pub async fn bitmaps(&self, package: Option<i64>) -> DbResult<Vec<BitmapRow>> {
        on!(self, pool => {
            let rows = sqlx::query(
                "SELECT package_id, hash, width, height, buffer_bytes, copies, wasted_bytes, \
                 format, has_picture FROM bitmaps WHERE ($1 IS NULL OR package_id = $1) ORDER BY id",
            )
            .bind(package)
            .fetch_all(pool)
            .await?;
            rows.iter()
                .map(|r| {
                    Ok(BitmapRow {
                        package_id: r.try_get(0)?,
                        hash: r.try_get(1)?,
                        width: r.try_get(2)?,
                        height: r.try_get(3)?,
                        buffer_bytes: r.try_get(4)?,
                        copies: r.try_get(5)?,
                        wasted_bytes: r.try_get(6)?,
                        format: r.try_get(7)?,
                        has_picture: r.try_get(8)?,
                    })
                })
                .collect()
        })
    }

    /// A filter menu: the `limit` values of a package column seen on the most packages
    /// (ties by value), in the order of their values, and how many distinct values there
    /// are in all.
    pub async fn menu(&self, column: Column, limit: i64) -> DbResult<(Vec<String>, u64)> {
        // COUNT(*) OVER (): the groups before LIMIT, in the same scan of the index.
        macro_rules! menu_sql {
            ($col:literal) => {
                concat!(
                    "SELECT ",
                    $col,
                    ", COUNT(*) AS n, COUNT(*) OVER () AS values_seen \
                     FROM packages GROUP BY ",
                    $col,
                    " ORDER BY n DESC, ",
                    $col,
                    " LIMIT $1"
                )
            };
        }
        let sql = match column {
            Column::Sdk => menu_sql!("sdk"),
            Column::Manufacturer => menu_sql!("manufacturer"),
            Column::AppVersion => menu_sql!("app_version"),
        };
        let (mut values, seen) = on!(self, pool => {
            let rows = sqlx::query(sql).bind(limit).fetch_all(pool).await?;
            let mut seen = 0i64;
            let mut values = Vec::with_capacity(rows.len());
            for r in &rows {
                let v: String = r.try_get(0)?;
                values.push(v);
                seen = r.try_get(2)?;
            }
            (values, seen)
        });
        values.sort_unstable();
        Ok((values, seen.max(0) as u64))
    }

    /// Whether any package has the values the filter names: a filter that admits none is
    /// answered without being kept (see [`super::cache`]). One lookup per named column,
    /// by its index.
    pub async fn admits_any(&self, f: &Filter) -> DbResult<bool> {
        on!(self, pool => {
            let row = sqlx::query(
                "SELECT 1 FROM packages WHERE ($1 IS NULL OR sdk = $1) \
                 AND ($2 IS NULL OR manufacturer = $2) AND ($3 IS NULL OR app_version = $3) LIMIT 1",
            )
            .bind(&f.sdk)
            .bind(&f.manufacturer)
            .bind(&f.app_version)
            .fetch_optional(pool)
            .await?;
            Ok(row.is_some())
        })
    }

    /// Sends `sink` every leak with this signature (the group's summary).
    pub async fn fold_signature(&self, signature: &str, sink: &mut Fold) -> DbResult<()> {
        on!(self, pool => {
            let rows = sqlx::query(concat!(grouped_leaks!(""), " AND l.signature = $4"))
                .bind(None::<String>)
                .bind(None::<String>)
                .bind(None::<String>)
                .bind(signature)
                .fetch_all(pool)
                .await?;
            for r in &rows {
                sink.add(&leak_row!(r));
            }
            Ok(())
        })
    }

    /// The `limit` most recent leaks with this signature, with their package's facts.
    pub async fn occurrences(&self, signature: &str, limit: i64) -> DbResult<Vec<LeakRow>> {
        on!(self, pool => {
            let rows = sqlx::query(concat!(
                grouped_leaks!(", p.name"),
                " AND l.signature = $4 ORDER BY l.package_id DESC, l.id DESC LIMIT $5"
            ))
            .bind(None::<String>)
            .bind(None::<String>)
            .bind(None::<String>)
            .bind(signature)
            .bind(limit)
            .fetch_all(pool)
            .await?;
            rows.iter()
                .map(|r| Ok(LeakRow::of(&leak_row!(r), r.try_get(13)?)))
                .collect()
        })
    }

    /// The `limit` duplicate-bitmap groups (by buffer hash, across packages) that waste the
    /// most, each with at most `packages` of its package ids; and how many groups there
    /// are in all. Summed by the database: a page never reads every bitmap row.
    pub async fn bitmap_groups(
        &self,
        limit: i64,
        packages: i64,
    ) -> DbResult<(Vec<DuplicateBuffer>, u64)> {
        // Width, height and format of the group's first row; CASTs so that both engines
        // answer BIGINT (PostgreSQL's SUM is NUMERIC).
        const TOP: &str = "SELECT f.hash, f.width, f.height, f.format, f.buffer_bytes, \
             g.packages, g.copies, g.wasted, g.pictured, g.groups FROM ( \
             SELECT hash, MIN(id) AS first, COUNT(DISTINCT package_id) AS packages, \
             CAST(SUM(copies) AS BIGINT) AS copies, CAST(SUM(wasted_bytes) AS BIGINT) AS wasted, \
             CAST(MAX(CASE WHEN has_picture THEN 1 ELSE 0 END) AS BIGINT) AS pictured, \
             COUNT(*) OVER () AS groups \
             FROM bitmaps GROUP BY hash ORDER BY wasted DESC, hash LIMIT $1) g \
             JOIN bitmaps f ON f.id = g.first ORDER BY g.wasted DESC, f.hash";
        const PACKAGES: &str = "SELECT DISTINCT package_id FROM bitmaps WHERE hash = $1 \
             ORDER BY package_id LIMIT $2";
        on!(self, pool => {
            let rows = sqlx::query(TOP).bind(limit).fetch_all(pool).await?;
            let mut total = 0i64;
            let mut groups = Vec::with_capacity(rows.len());
            for r in &rows {
                let hash: String = r.try_get(0)?;
                let in_packages: i64 = r.try_get(5)?;
                let ids: Vec<i64> = sqlx::query_scalar(PACKAGES)
                    .bind(&hash)
                    .bind(packages)
                    .fetch_all(pool)
                    .await?;
                let pictured: i64 = r.try_get(8)?;
                total = r.try_get(9)?;
                groups.push(DuplicateBuffer {
                    picture: (pictured > 0).then(|| format!("/pictures/{hash}.png")),
                    width: r.try_get(1)?,
                    height: r.try_get(2)?,
                    format: r.try_get(3)?,
                    buffer_bytes: r.try_get(4)?,
                    packages_left_out: (in_packages - ids.len() as i64).max(0) as u64,
                    packages: ids,
                    copies: r.try_get(6)?,
                    wasted_bytes: r.try_get(7)?,
                    hash,
                });
            }
            Ok((groups, total.max(0) as u64))
        })
    }
}

/// Runs the engine's migrations on a fresh or older schema.
async fn migrate(
    store: &Store,
    migrations: &'static [(i64, &'static str, &'static str)],
) -> DbResult<()> {
    let m = Migrator::new(Embedded(migrations))
        .await
        .map_err(|e| sqlx::Error::Migrate(Box::new(e)))?;
    on!(store, pool => m.run(pool).await.map_err(|e| sqlx::Error::Migrate(Box::new(e))))
}

/// The package queries, whole constants.
mod package_sql {
    pub const ONE: &str = "SELECT p.id, p.md5, p.name, p.bytes, p.received_ms, p.sdk, \
         p.manufacturer, p.app_version, p.manifest, p.extra, j.state, j.error, j.attempts, \
         j.analyses, j.signature_version, j.regroup, j.report FROM packages p JOIN jobs j ON j.package_id = p.id WHERE p.id = $1";
    /// Without `manifest` and `extra`: a list carries only the short columns.
    pub const RECENT: &str = "SELECT p.id, p.md5, p.name, p.bytes, p.received_ms, p.sdk, \
         p.manufacturer, p.app_version, j.state, j.error, j.attempts, \
         j.analyses, j.signature_version, j.regroup, j.report FROM packages p \
         JOIN jobs j ON j.package_id = p.id WHERE p.id < $2 ORDER BY p.id DESC LIMIT $1";
}

// After the macros above, which it uses.
mod by_version;
mod no_leak;
mod ranked;
pub use by_version::{AppVersion, VersionRanking};
pub use no_leak::Shrunk;
pub use ranked::Kinds;

/// The package columns a filter can name (never text from a request in SQL).
#[derive(Debug, Clone, Copy)]
pub enum Column {
    /// The device's SDK version.
    Sdk,
    /// The device's manufacturer.
    Manufacturer,
    /// The app's version.
    AppVersion,
}

#[cfg(test)]
mod tests {
    #[test]
    fn sizes_past_i64_max_are_stored_as_i64_max() {
        assert_eq!(super::stored(5), 5);
        assert_eq!(super::stored(i64::MAX as u64), i64::MAX);
        assert_eq!(super::stored(u64::MAX), i64::MAX);
    }
}
