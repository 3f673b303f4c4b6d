//! Leak rows recorded straight into a test's database, many at once.

use crate::store::Store;

/// Records leaks `from..to` straight into the database in one change, as an analysis's
/// transaction stamps them: leak i of package 1 + i / 50 (made if missing; sdk 21 to
/// 23 by its number), of signature `s{i % sigs}`; a library leak when that number is
/// a multiple of 10, or, in the second round of signatures, of 7 (so that such a
/// group's kind is its latest occurrence's, not its first's). App version `1.{n % 25}` by
/// the package's number n, none when that is 24.
pub async fn record(store: &Store, from: i64, to: i64, sigs: i64) {
    let Store::Sqlite(pool) = store else {
        unreachable!("the tests' store is SQLite")
    };
    let mut tx = pool.begin().await.unwrap();
    let generation: i64 =
        sqlx::query_scalar("UPDATE generation SET n = n + 1 WHERE id = 1 RETURNING n")
            .fetch_one(&mut *tx)
            .await
            .unwrap();
    sqlx::query(
        "WITH RECURSIVE k(i) AS (SELECT $1 UNION ALL SELECT i + 1 FROM k WHERE i + 1 < $2) \
         INSERT OR IGNORE INTO packages (id, md5, name, bytes, received_ms, sdk, \
         manufacturer, app_version, manifest, extra) \
         SELECT DISTINCT 1 + i / 50, printf('%032x', 1 + i / 50), 'p.zip', 1, \
         1000 + i / 50, CAST(21 + (i / 50) % 3 AS TEXT), 'acme', \
         CASE WHEN (1 + i / 50) % 25 = 24 THEN '' ELSE '1.' || ((1 + i / 50) % 25) END, \
         '[]', '[]' FROM k",
    )
    .bind(from)
    .bind(to)
    .execute(&mut *tx)
    .await
    .unwrap();
    sqlx::query(
        "WITH RECURSIVE k(i) AS (SELECT $1 UNION ALL SELECT i + 1 FROM k WHERE i + 1 < $2) \
         INSERT INTO leaks (package_id, signature, class_name, library, retained_bytes, \
         trace, generation, signature_version) \
         SELECT 1 + i / 50, printf('s%06d', i % $3), 'com.example.L' || (i % $3), \
         CASE WHEN (i % $3) % 10 = 0 OR (i >= $3 AND (i % $3) % 7 = 0) \
         THEN 'a framework leak' END, i, '{}', $4, $5 FROM k",
    )
    .bind(from)
    .bind(to)
    .bind(sigs)
    .bind(generation)
    .bind(i64::from(hprof_shrink_analyze::model::SIGNATURE_VERSION))
    .execute(&mut *tx)
    .await
    .unwrap();
    tx.commit().await.unwrap();
}

/// Records packages `from..to` without a leak straight into the database in one change:
/// package 100,000 + i, received at 1000 + i, in the no-leak group `n{i % sigs}`.
pub async fn record_no_leak(store: &Store, from: i64, to: i64, sigs: i64) {
    let Store::Sqlite(pool) = store else {
        unreachable!("the tests' store is SQLite")
    };
    let mut tx = pool.begin().await.unwrap();
    sqlx::query("UPDATE generation SET n = n + 1 WHERE id = 1")
        .execute(&mut *tx)
        .await
        .unwrap();
    for sql in [
        "WITH RECURSIVE k(i) AS (SELECT $1 UNION ALL SELECT i + 1 FROM k WHERE i + 1 < $2) \
         INSERT INTO packages (id, md5, name, bytes, received_ms, sdk, manufacturer, \
         app_version, manifest, extra) \
         SELECT 100000 + i, printf('n%031x', i), 'p.zip', 1, 1000 + i, '25', 'acme', '1.0', \
         '[]', '[]' FROM k",
        "WITH RECURSIVE k(i) AS (SELECT $1 UNION ALL SELECT i + 1 FROM k WHERE i + 1 < $2) \
         INSERT INTO retainers (package_id, signature, class_name, title, retained_bytes, \
         retained_native_bytes, path, shrunk) \
         SELECT 100000 + i, printf('n%06d', i % $3), 'byte[]', 'Root → byte[]', i, 0, '[]', \
         0 FROM k",
    ] {
        sqlx::query(sql)
            .bind(from)
            .bind(to)
            .bind(sigs)
            .execute(&mut *tx)
            .await
            .unwrap();
    }
    tx.commit().await.unwrap();
}
