//! The metadata: packages, the analysis queue, leaks and bitmaps, in SQLite through sqlx.
//! Everything the server asks of its database goes through [`Store`], so that a PostgreSQL
//! store (several servers, workers claiming with `FOR UPDATE SKIP LOCKED`) can take its
//! place behind the same methods.

use std::borrow::Cow;
use std::future::Future;
use std::path::Path;
use std::pin::Pin;
use std::str::FromStr;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::Serialize;
use sqlx::migrate::{Migration, MigrationSource, MigrationType, Migrator};
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteRow,
    SqliteSynchronous,
};
use sqlx::Row;

use crate::analyze::Analysis;

/// A job interrupted this many times (the process died while analyzing it) is failed
/// instead of taken up again: a package that kills the server must not do so forever.
pub const MAX_ATTEMPTS: i64 = 3;

pub type DbResult<T> = Result<T, sqlx::Error>;

/// The migrations, compiled in: `migrations/sqlite/NNNN_name.sql`.
#[derive(Debug)]
struct Embedded;

const MIGRATIONS: &[(i64, &str, &str)] =
    &[(1, "init", include_str!("migrations/sqlite/0001_init.sql"))];

type BoxDynError = Box<dyn std::error::Error + Send + Sync>;

impl MigrationSource<'static> for Embedded {
    fn resolve(
        self,
    ) -> Pin<Box<dyn Future<Output = Result<Vec<Migration>, BoxDynError>> + Send + 'static>> {
        Box::pin(async {
            Ok(MIGRATIONS
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

pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// A package as recorded.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PackageRow {
    pub id: i64,
    pub md5: String,
    pub name: String,
    pub bytes: i64,
    pub received_ms: i64,
    pub sdk: String,
    pub manufacturer: String,
    pub app_version: String,
    pub manifest: Vec<(String, String)>,
    pub extra: Vec<(String, String)>,
    pub state: String,
    pub error: Option<String>,
    pub attempts: i64,
}

/// What is recorded of a new package.
pub struct NewPackage<'a> {
    pub md5: &'a str,
    pub name: &'a str,
    pub bytes: u64,
    pub manifest: &'a [(String, String)],
    pub extra: &'a [(String, String)],
}

/// One leak of one package, with what the grouping needs of its package.
#[derive(Debug, Clone)]
pub struct LeakRow {
    pub package_id: i64,
    pub package_name: String,
    pub received_ms: i64,
    pub sdk: String,
    pub manufacturer: String,
    pub app_version: String,
    pub signature: String,
    pub class_name: String,
    pub library: Option<String>,
    pub retained_bytes: i64,
}

#[derive(Debug, Clone)]
pub struct BitmapRow {
    pub package_id: i64,
    pub hash: String,
    pub width: i64,
    pub height: i64,
    pub buffer_bytes: i64,
    pub copies: i64,
    pub wasted_bytes: i64,
    pub format: String,
    pub has_picture: bool,
}

/// Restricts the leaks looked at to packages with these values.
#[derive(Debug, Clone, Default, serde::Deserialize)]
pub struct Filter {
    pub sdk: Option<String>,
    pub manufacturer: Option<String>,
    pub app_version: Option<String>,
}

impl Filter {
    /// An empty field (an unselected `<select>`) is no restriction.
    pub fn normalized(self) -> Filter {
        let f = |v: Option<String>| v.filter(|s| !s.is_empty());
        Filter {
            sdk: f(self.sdk),
            manufacturer: f(self.manufacturer),
            app_version: f(self.app_version),
        }
    }
}

/// The value of the first of `keys` present in `props`, or "".
pub fn prop(props: &[(String, String)], keys: &[&str]) -> String {
    keys.iter()
        .find_map(|k| props.iter().find(|(pk, _)| pk == k).map(|(_, v)| v.clone()))
        .unwrap_or_default()
}

/// The `extra.info` keys an app version is read from, first found wins.
pub const APP_VERSION_KEYS: &[&str] = &["appVersion", "versionName", "app_version"];

#[derive(Clone)]
pub struct Store {
    pool: SqlitePool,
}

const PACKAGE_COLUMNS: &str = "p.id, p.md5, p.name, p.bytes, p.received_ms, p.sdk, \
     p.manufacturer, p.app_version, p.manifest, p.extra, j.state, j.error, j.attempts";

fn package_row(r: &SqliteRow) -> DbResult<PackageRow> {
    let props = |col: &str| -> DbResult<Vec<(String, String)>> {
        let text: String = r.try_get(col)?;
        serde_json::from_str(&text).map_err(|e| sqlx::Error::Decode(Box::new(e)))
    };
    Ok(PackageRow {
        id: r.try_get("id")?,
        md5: r.try_get("md5")?,
        name: r.try_get("name")?,
        bytes: r.try_get("bytes")?,
        received_ms: r.try_get("received_ms")?,
        sdk: r.try_get("sdk")?,
        manufacturer: r.try_get("manufacturer")?,
        app_version: r.try_get("app_version")?,
        manifest: props("manifest")?,
        extra: props("extra")?,
        state: r.try_get("state")?,
        error: r.try_get("error")?,
        attempts: r.try_get("attempts")?,
    })
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
        Migrator::new(Embedded)
            .await
            .map_err(|e| sqlx::Error::Migrate(Box::new(e)))?
            .run(&pool)
            .await
            .map_err(|e| sqlx::Error::Migrate(Box::new(e)))?;
        Ok(Store { pool })
    }

    pub async fn close(&self) {
        self.pool.close().await;
    }

    pub async fn package_by_md5(&self, md5: &str) -> DbResult<Option<i64>> {
        sqlx::query_scalar("SELECT id FROM packages WHERE md5 = ?")
            .bind(md5)
            .fetch_optional(&self.pool)
            .await
    }

    /// Records a package and queues its analysis, in one transaction. `Ok(Err(id))`: the
    /// same content was recorded first, as `id`.
    pub async fn insert_package(&self, p: &NewPackage<'_>) -> DbResult<Result<i64, i64>> {
        let mut tx = self.pool.begin().await?;
        let now = now_ms();
        let id: Option<i64> = sqlx::query_scalar(
            "INSERT INTO packages (md5, name, bytes, received_ms, sdk, manufacturer, \
             app_version, manifest, extra) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) \
             ON CONFLICT (md5) DO NOTHING RETURNING id",
        )
        .bind(p.md5)
        .bind(p.name)
        .bind(p.bytes as i64)
        .bind(now)
        .bind(prop(p.manifest, &["sdkVersion"]))
        .bind(prop(p.manifest, &["manufacturer"]))
        .bind(prop(p.extra, APP_VERSION_KEYS))
        .bind(serde_json::to_string(p.manifest).unwrap_or_default())
        .bind(serde_json::to_string(p.extra).unwrap_or_default())
        .fetch_optional(&mut *tx)
        .await?;
        let Some(id) = id else {
            tx.rollback().await?;
            let first = self.package_by_md5(p.md5).await?;
            return first.map(Err).ok_or(sqlx::Error::RowNotFound);
        };
        sqlx::query(
            "INSERT INTO jobs (package_id, state, attempts, updated_ms) \
             VALUES (?, 'received', 0, ?)",
        )
        .bind(id)
        .bind(now)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(Ok(id))
    }

    pub async fn package(&self, id: i64) -> DbResult<Option<PackageRow>> {
        let sql = format!(
            "SELECT {PACKAGE_COLUMNS} FROM packages p JOIN jobs j ON j.package_id = p.id \
             WHERE p.id = ?"
        );
        let row = sqlx::query(&sql)
            .bind(id)
            .fetch_optional(&self.pool)
            .await?;
        row.as_ref().map(package_row).transpose()
    }

    /// The most recent packages first.
    pub async fn packages(&self, limit: i64) -> DbResult<Vec<PackageRow>> {
        let sql = format!(
            "SELECT {PACKAGE_COLUMNS} FROM packages p JOIN jobs j ON j.package_id = p.id \
             ORDER BY p.id DESC LIMIT ?"
        );
        let rows = sqlx::query(&sql).bind(limit).fetch_all(&self.pool).await?;
        rows.iter().map(package_row).collect()
    }

    /// After a crash: jobs left `analyzing` are queued again, or failed once they have
    /// been interrupted [`MAX_ATTEMPTS`] times. Returns (requeued, failed).
    pub async fn recover(&self) -> DbResult<(u64, u64)> {
        let now = now_ms();
        let failed = sqlx::query(
            "UPDATE jobs SET state = 'failed', updated_ms = ?, \
             error = 'the server stopped while analyzing this package ' || attempts || ' times' \
             WHERE state = 'analyzing' AND attempts >= ?",
        )
        .bind(now)
        .bind(MAX_ATTEMPTS)
        .execute(&self.pool)
        .await?
        .rows_affected();
        let requeued = sqlx::query(
            "UPDATE jobs SET state = 'received', updated_ms = ? WHERE state = 'analyzing'",
        )
        .bind(now)
        .execute(&self.pool)
        .await?
        .rows_affected();
        Ok((requeued, failed))
    }

    /// Takes the oldest queued job: its package id and md5.
    pub async fn claim(&self) -> DbResult<Option<(i64, String)>> {
        // One UPDATE: two workers can never take the same job (SQLite serializes writers;
        // PostgreSQL would add FOR UPDATE SKIP LOCKED to the inner SELECT).
        let id: Option<i64> = sqlx::query_scalar(
            "UPDATE jobs SET state = 'analyzing', attempts = attempts + 1, updated_ms = ? \
             WHERE package_id = (SELECT package_id FROM jobs WHERE state = 'received' \
             ORDER BY package_id LIMIT 1) RETURNING package_id",
        )
        .bind(now_ms())
        .fetch_optional(&self.pool)
        .await?;
        let Some(id) = id else { return Ok(None) };
        let md5: String = sqlx::query_scalar("SELECT md5 FROM packages WHERE id = ?")
            .bind(id)
            .fetch_one(&self.pool)
            .await?;
        Ok(Some((id, md5)))
    }

    /// Records what the analysis found and marks the job done; a rerun (after a crash)
    /// replaces what an earlier run wrote.
    pub async fn finish(&self, id: i64, a: &Analysis, pictured: &[String]) -> DbResult<()> {
        let mut tx = self.pool.begin().await?;
        sqlx::query("DELETE FROM leaks WHERE package_id = ?")
            .bind(id)
            .execute(&mut *tx)
            .await?;
        sqlx::query("DELETE FROM bitmaps WHERE package_id = ?")
            .bind(id)
            .execute(&mut *tx)
            .await?;
        for l in &a.leaks {
            sqlx::query(
                "INSERT INTO leaks (package_id, signature, class_name, library, \
                 retained_bytes, trace) VALUES (?, ?, ?, ?, ?, ?)",
            )
            .bind(id)
            .bind(&l.signature)
            .bind(&l.class_name)
            .bind(l.library_leak.as_ref().map(|k| k.description.clone()))
            .bind(l.retained_bytes as i64)
            .bind(serde_json::to_string(&l.trace).unwrap_or_default())
            .execute(&mut *tx)
            .await?;
        }
        for g in &a.duplicate_bitmaps {
            sqlx::query(
                "INSERT INTO bitmaps (package_id, hash, width, height, buffer_bytes, copies, \
                 wasted_bytes, format, has_picture) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
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
        sqlx::query(
            "UPDATE jobs SET state = 'done', error = NULL, updated_ms = ? WHERE package_id = ?",
        )
        .bind(now_ms())
        .bind(id)
        .execute(&mut *tx)
        .await?;
        tx.commit().await
    }

    pub async fn fail(&self, id: i64, error: &str) -> DbResult<()> {
        sqlx::query(
            "UPDATE jobs SET state = 'failed', error = ?, updated_ms = ? WHERE package_id = ?",
        )
        .bind(error)
        .bind(now_ms())
        .bind(id)
        .execute(&self.pool)
        .await
        .map(|_| ())
    }

    /// Jobs by state: (state, count).
    pub async fn job_counts(&self) -> DbResult<Vec<(String, i64)>> {
        let rows = sqlx::query("SELECT state, COUNT(*) AS n FROM jobs GROUP BY state")
            .fetch_all(&self.pool)
            .await?;
        rows.iter()
            .map(|r| Ok((r.try_get("state")?, r.try_get("n")?)))
            .collect()
    }

    /// Every leak of the packages the filter admits, with their package's facts.
    pub async fn leaks(&self, f: &Filter, signature: Option<&str>) -> DbResult<Vec<LeakRow>> {
        let rows = sqlx::query(
            "SELECT l.package_id, p.name, p.received_ms, p.sdk, p.manufacturer, p.app_version, \
             l.signature, l.class_name, l.library, l.retained_bytes \
             FROM leaks l JOIN packages p ON p.id = l.package_id \
             WHERE (?1 IS NULL OR p.sdk = ?1) AND (?2 IS NULL OR p.manufacturer = ?2) \
             AND (?3 IS NULL OR p.app_version = ?3) AND (?4 IS NULL OR l.signature = ?4) \
             ORDER BY l.package_id, l.id",
        )
        .bind(&f.sdk)
        .bind(&f.manufacturer)
        .bind(&f.app_version)
        .bind(signature)
        .fetch_all(&self.pool)
        .await?;
        rows.iter()
            .map(|r| {
                Ok(LeakRow {
                    package_id: r.try_get(0)?,
                    package_name: r.try_get(1)?,
                    received_ms: r.try_get(2)?,
                    sdk: r.try_get(3)?,
                    manufacturer: r.try_get(4)?,
                    app_version: r.try_get(5)?,
                    signature: r.try_get(6)?,
                    class_name: r.try_get(7)?,
                    library: r.try_get(8)?,
                    retained_bytes: r.try_get(9)?,
                })
            })
            .collect()
    }

    /// The leak groups' figures, aggregated by SQLite itself: a few rows per signature
    /// cross into Rust instead of one per leak, which keeps the groups page fast with
    /// many thousands of packages. [`super::groups::from_stats`] assembles them.
    pub async fn group_stats(&self, f: &Filter) -> DbResult<GroupStats> {
        const FROM: &str = "FROM leaks l JOIN packages p ON p.id = l.package_id \
             WHERE (?1 IS NULL OR p.sdk = ?1) AND (?2 IS NULL OR p.manufacturer = ?2) \
             AND (?3 IS NULL OR p.app_version = ?3)";
        let mut out = GroupStats::default();
        for r in self
            .filtered(
                f,
                &format!(
            "SELECT l.signature, COUNT(*), COUNT(DISTINCT l.package_id), MIN(p.received_ms), \
             MAX(p.received_ms), MIN(l.retained_bytes), MAX(l.retained_bytes) {FROM} \
             GROUP BY l.signature"
        ),
            )
            .await?
        {
            out.totals.push(SignatureTotals {
                signature: r.try_get(0)?,
                occurrences: r.try_get(1)?,
                packages: r.try_get(2)?,
                first_seen_ms: r.try_get(3)?,
                last_seen_ms: r.try_get(4)?,
                min_retained: r.try_get(5)?,
                max_retained: r.try_get(6)?,
            });
        }
        for (i, col) in [Column::Sdk, Column::Manufacturer, Column::AppVersion]
            .into_iter()
            .enumerate()
        {
            for r in self
                .filtered(
                    f,
                    &format!(
                        "SELECT l.signature, p.{0}, COUNT(*) {FROM} GROUP BY l.signature, p.{0}",
                        col.name()
                    ),
                )
                .await?
            {
                out.spreads[i].push((r.try_get(0)?, r.try_get(1)?, r.try_get(2)?));
            }
        }
        // Nearest-rank p50 and p90: rank ceil(n * p / 100) of the sorted sizes.
        for r in self
            .filtered(
                f,
                &format!(
                    "SELECT s, b, rn, n FROM (SELECT l.signature AS s, l.retained_bytes AS b, \
             ROW_NUMBER() OVER (PARTITION BY l.signature ORDER BY l.retained_bytes) AS rn, \
             COUNT(*) OVER (PARTITION BY l.signature) AS n {FROM}) \
             WHERE rn = (n * 50 + 99) / 100 OR rn = (n * 90 + 99) / 100"
                ),
            )
            .await?
        {
            let (rn, n): (i64, i64) = (r.try_get(2)?, r.try_get(3)?);
            let (s, b): (String, i64) = (r.try_get(0)?, r.try_get(1)?);
            if rn == (n * 50 + 99) / 100 {
                out.p50.push((s.clone(), b));
            }
            if rn == (n * 90 + 99) / 100 {
                out.p90.push((s, b));
            }
        }
        for r in self
            .filtered(
                f,
                &format!(
                    "SELECT s, c, lib FROM (SELECT l.signature AS s, l.class_name AS c, \
             l.library AS lib, ROW_NUMBER() OVER (PARTITION BY l.signature \
             ORDER BY p.received_ms DESC, l.package_id DESC, l.id DESC) AS rn {FROM}) \
             WHERE rn = 1"
                ),
            )
            .await?
        {
            out.latest
                .push((r.try_get(0)?, r.try_get(1)?, r.try_get(2)?));
        }
        Ok(out)
    }

    /// Rows of `sql`, whose `?1`..`?3` are the filter's SDK, manufacturer, app version.
    async fn filtered(&self, f: &Filter, sql: &str) -> DbResult<Vec<SqliteRow>> {
        sqlx::query(sql)
            .bind(&f.sdk)
            .bind(&f.manufacturer)
            .bind(&f.app_version)
            .fetch_all(&self.pool)
            .await
    }

    /// The trace of the most recent occurrence of a signature (JSON).
    pub async fn latest_trace(&self, signature: &str) -> DbResult<Option<String>> {
        sqlx::query_scalar(
            "SELECT trace FROM leaks WHERE signature = ? ORDER BY package_id DESC, id DESC LIMIT 1",
        )
        .bind(signature)
        .fetch_optional(&self.pool)
        .await
    }

    /// The leaks of one package: (signature, class name, library, retained bytes).
    pub async fn leaks_of(&self, id: i64) -> DbResult<Vec<(String, String, Option<String>, i64)>> {
        let rows = sqlx::query(
            "SELECT signature, class_name, library, retained_bytes FROM leaks \
             WHERE package_id = ? ORDER BY id",
        )
        .bind(id)
        .fetch_all(&self.pool)
        .await?;
        rows.iter()
            .map(|r| Ok((r.try_get(0)?, r.try_get(1)?, r.try_get(2)?, r.try_get(3)?)))
            .collect()
    }

    pub async fn bitmaps(&self, package: Option<i64>) -> DbResult<Vec<BitmapRow>> {
        let rows = sqlx::query(
            "SELECT package_id, hash, width, height, buffer_bytes, copies, wasted_bytes, \
             format, has_picture FROM bitmaps WHERE (?1 IS NULL OR package_id = ?1) ORDER BY id",
        )
        .bind(package)
        .fetch_all(&self.pool)
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
    }

    /// The values seen of a package column, for the filter menus.
    pub async fn distinct(&self, column: Column) -> DbResult<Vec<String>> {
        let sql = format!(
            "SELECT DISTINCT {0} FROM packages ORDER BY {0}",
            column.name()
        );
        sqlx::query_scalar(&sql).fetch_all(&self.pool).await
    }
}

/// Per signature: counts, dates and the retained size's extremes.
#[derive(Debug, Clone, Default)]
pub struct SignatureTotals {
    pub signature: String,
    pub occurrences: i64,
    pub packages: i64,
    pub first_seen_ms: i64,
    pub last_seen_ms: i64,
    pub min_retained: i64,
    pub max_retained: i64,
}

/// What [`Store::group_stats`] reads, each part keyed by signature.
#[derive(Debug, Clone, Default)]
pub struct GroupStats {
    pub totals: Vec<SignatureTotals>,
    /// SDK, manufacturer, app version: (signature, value, occurrences).
    pub spreads: [Vec<(String, String, i64)>; 3],
    pub p50: Vec<(String, i64)>,
    pub p90: Vec<(String, i64)>,
    /// (signature, class name, library) of the most recent occurrence.
    pub latest: Vec<(String, String, Option<String>)>,
}

/// The package columns a filter can name (never text from a request in SQL).
#[derive(Debug, Clone, Copy)]
pub enum Column {
    Sdk,
    Manufacturer,
    AppVersion,
}

impl Column {
    fn name(self) -> &'static str {
        match self {
            Column::Sdk => "sdk",
            Column::Manufacturer => "manufacturer",
            Column::AppVersion => "app_version",
        }
    }
}
