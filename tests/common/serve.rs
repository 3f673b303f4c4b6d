//! What the tests of `serve` on SQLite (tests/serve.rs) and on PostgreSQL
//! (tests/serve_cluster.rs) share.
#![allow(dead_code)]

use std::io::Write;
use std::path::Path;
use std::time::Duration;

use hprof_shrink_serve::cache::Cache;
use hprof_shrink_serve::groups::{bitmap_groups, leak_groups, LeakGroup};
use hprof_shrink_serve::store::{Filter, NewPackage, Store};

/// `base` with an `extra.info` of its own: the same entries raw-copied, so a distinct
/// package (MD5) for the price of a copy.
pub fn variant(base: &[u8], extra: &str) -> Vec<u8> {
    variant_with(base, None, extra)
}

/// The same, with a `result.info` of its own too when given (it stays the first entry).
pub fn variant_with(base: &[u8], result_info: Option<&str>, extra: &str) -> Vec<u8> {
    let mut archive = zip::ZipArchive::new(std::io::Cursor::new(base)).unwrap();
    let comment = archive.comment().to_vec();
    let mut w = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let opts = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated);
    if let Some(info) = result_info {
        w.start_file("result.info", opts).unwrap();
        w.write_all(info.as_bytes()).unwrap();
    }
    for e in 0..archive.len() {
        let f = archive.by_index_raw(e).unwrap();
        let name = f.name().unwrap();
        if name == "extra.info" || (result_info.is_some() && name == "result.info") {
            continue;
        }
        w.raw_copy_file(f).unwrap();
    }
    w.start_file("extra.info", opts).unwrap();
    w.write_all(extra.as_bytes()).unwrap();
    w.set_raw_comment(comment.into_boxed_slice()).unwrap();
    w.finish().unwrap().into_inner()
}

/// The `result.info` of the package `base`.
pub fn result_info(base: &[u8]) -> String {
    use std::io::Read;
    let mut archive = zip::ZipArchive::new(std::io::Cursor::new(base)).unwrap();
    let mut text = String::new();
    archive
        .by_name("result.info")
        .unwrap()
        .read_to_string(&mut text)
        .unwrap();
    text
}

/// The analysis of the dump or package at `path`, with the default options.
pub fn analyzed(path: &Path) -> hprof_shrink_analyze::Analysis {
    hprof_shrink_analyze::analyze_path(
        path,
        &hprof_shrink_analyze::Options::default(),
        &hprof_shrink_core::Control::default(),
    )
    .unwrap()
    .analysis
}

/// The lease rules on one database seen by two processes (`store` and `other`; the same
/// store twice on SQLite): a held job is nobody else's; a job whose lease ran out is
/// taken again, and its first claimer can then neither renew, record nor fail it; the
/// analysis of `zip` is recorded once, and a second finish records nothing.
pub async fn only_the_current_lease_holder_records(store: &Store, other: &Store, zip: &Path) {
    let analysis = analyzed(zip);
    // Not of the form the callers use for their own packages.
    let id = queue_bare(store, &"e".repeat(32)).await;
    let g0 = store.generation().await.unwrap();
    let (first, _) = store.claim(Duration::from_millis(300)).await.unwrap();
    let first = first.unwrap();
    assert_eq!((first.id, first.attempt), (id, 1));
    assert!(
        other.generation().await.unwrap() > g0,
        "a claim is a change"
    );
    // Held: nobody else gets it.
    assert!(other
        .claim(Duration::from_secs(60))
        .await
        .unwrap()
        .0
        .is_none());
    assert!(store
        .renew(&first, Duration::from_millis(300))
        .await
        .unwrap());
    tokio::time::sleep(Duration::from_millis(400)).await;
    // Ran out: the other process takes it.
    let (second, _) = other.claim(Duration::from_secs(60)).await.unwrap();
    let second = second.unwrap();
    assert_eq!((second.id, second.attempt), (id, 2));
    assert!(!store.renew(&first, Duration::from_secs(60)).await.unwrap());
    assert!(!store.finish(&first, &analysis, &[]).await.unwrap());
    assert!(!store.fail(&first, "late").await.unwrap());
    assert!(other.finish(&second, &analysis, &[]).await.unwrap());
    // Recorded, the job is no longer anyone's: a second finish records nothing.
    assert!(!other.finish(&second, &analysis, &[]).await.unwrap());
    let p = store.package(id).await.unwrap().unwrap().row;
    assert_eq!((p.state.as_str(), p.attempts, p.analyses), ("done", 2, 1));
    assert_eq!(
        store.leaks_of(id).await.unwrap().len(),
        analysis.leaks.len()
    );
}

/// One package recorded through `via` and analyzed: leaks of `sigs` (a `lib:` prefix makes
/// a library leak), each retaining `retained` bytes plus its position.
pub async fn record(
    via: &Store,
    base: &hprof_shrink_analyze::Analysis,
    md5: &str,
    (sdk, maker, version): (&str, &str, &str),
    sigs: &[&str],
    retained: u64,
) -> i64 {
    let id = queue(via, md5, (sdk, maker, version)).await;
    let (claim, _) = via.claim(Duration::from_secs(60)).await.unwrap();
    let claim = claim.expect("the package just queued");
    assert_eq!(claim.id, id);
    assert!(via
        .finish(&claim, &analysis_of(base, sigs, retained), &[])
        .await
        .unwrap());
    id
}

/// A package recorded through `via` and queued, not analyzed.
pub async fn queue(via: &Store, md5: &str, (sdk, maker, version): (&str, &str, &str)) -> i64 {
    let manifest = [
        ("sdkVersion".to_string(), sdk.to_string()),
        ("manufacturer".to_string(), maker.to_string()),
    ];
    let extra = [("appVersion".to_string(), version.to_string())];
    via.insert_package(&NewPackage {
        md5,
        name: "p.zip",
        bytes: 1,
        manifest: &manifest,
        extra: &extra,
    })
    .await
    .unwrap()
    .unwrap()
}

/// A package recorded through `via` and queued, with no manifest at all.
pub async fn queue_bare(via: &Store, md5: &str) -> i64 {
    via.insert_package(&NewPackage {
        md5,
        name: "p.zip",
        bytes: 1,
        manifest: &[],
        extra: &[],
    })
    .await
    .unwrap()
    .unwrap()
}

/// `base` with one leak per signature of `sigs`.
pub fn analysis_of(
    base: &hprof_shrink_analyze::Analysis,
    sigs: &[&str],
    retained: u64,
) -> hprof_shrink_analyze::Analysis {
    let mut a = base.clone();
    let template = a.leaks[0].clone();
    a.leaks = sigs
        .iter()
        .enumerate()
        .map(|(k, sig)| {
            let mut l = template.clone();
            match sig.strip_prefix("lib:") {
                Some(s) => {
                    l.signature = s.to_string();
                    l.library_leak = Some(hprof_shrink_analyze::model::LibraryLeak {
                        pattern: "a.B#c".into(),
                        description: format!("known leak {s}"),
                        ..Default::default()
                    });
                }
                None => {
                    l.signature = sig.to_string();
                    l.library_leak = None;
                }
            }
            l.class_name = format!("com.example.C{retained}");
            l.retained_bytes = retained + k as u64;
            l
        })
        .collect();
    a
}

/// The filters the incremental test compares: none, each column, two at once, and one
/// that admits nothing.
fn filters() -> Vec<Filter> {
    let f = |sdk: Option<&str>, maker: Option<&str>, version: Option<&str>| Filter {
        sdk: sdk.map(String::from),
        manufacturer: maker.map(String::from),
        app_version: version.map(String::from),
    };
    vec![
        f(None, None, None),
        f(Some("25"), None, None),
        f(None, Some("google"), None),
        f(None, None, Some("1.1")),
        f(Some("26"), Some("samsung"), None),
        f(Some("99"), None, None),
    ]
}

/// For every filter, `cache` (brought up to date from the rows recorded since its last
/// look) shows what grouping every row from scratch shows.
async fn same_as_from_scratch(cache: &Cache, store: &Store, step: &str) {
    for f in filters() {
        let now = store.generation().await.unwrap();
        let kept = cache.get(store, &f, now).await.unwrap();
        let fresh = Cache::default().get(store, &f, now).await.unwrap();
        let (app, library): (Vec<_>, Vec<_>) = leak_groups(&store.leaks(&f, None).await.unwrap())
            .into_iter()
            .partition(|g| g.library_leak.is_none());
        let json = |a: &[LeakGroup], l: &[LeakGroup]| serde_json::json!([a, l]);
        let expected = json(&app, &library);
        assert_eq!(json(&kept.app, &kept.library), expected, "{step}, {f:?}");
        assert_eq!(json(&fresh.app, &fresh.library), expected, "{step}, {f:?}");
        // Ranked by the database, as past the cap of groups followed in memory: the same.
        let ranked = Cache::default().with_fold_groups(0);
        let ranked = ranked.get(store, &f, now).await.unwrap();
        assert_eq!(
            json(&ranked.app, &ranked.library),
            expected,
            "{step}, ranked, {f:?}"
        );
        assert_eq!(kept.jobs, store.job_counts().await.unwrap(), "{step}");
        assert_eq!(kept.menus.sdk, fresh.menus.sdk, "{step}");
        assert_eq!(kept.menus.manufacturer, fresh.menus.manufacturer, "{step}");
        assert_eq!(kept.menus.app_version, fresh.menus.app_version, "{step}");
    }
}

/// The cached groups, brought up to date by folding in the leak rows each change recorded,
/// equal a fold of every row from scratch after each of: new packages (new groups, new
/// leaks in existing groups, library leaks), a failed job, a package only queued, an
/// analysis recorded again over an earlier one (rows removed: the cache starts over), and
/// analyses recorded concurrently by both processes while the cache is read. The changes
/// are made through `other` (on PostgreSQL, another process's pool), the cache reads
/// through `store`.
#[allow(clippy::too_many_lines)] // a scenario, step by step
pub async fn incremental_groups_equal_a_fold_from_scratch(
    store: &Store,
    other: &Store,
    zip: &Path,
) {
    let base = analyzed(zip);
    let cache = Cache::default();
    // The filters some package matches: all but the last. A filter no package matches is
    // answered without being kept (or folded).
    let n = filters().len() as u64 - 1;
    same_as_from_scratch(&cache, store, "empty").await;
    assert_eq!(cache.full_folds(), 1, "only the unfiltered groups are kept");

    let g = ("25", "google", "1.0");
    let s = ("26", "samsung", "1.1");
    record(other, &base, &format!("{:032x}", 1), g, &["a", "b"], 100).await;
    record(
        other,
        &base,
        &format!("{:032x}", 2),
        s,
        &["a", "lib:k"],
        300,
    )
    .await;
    same_as_from_scratch(&cache, store, "first packages").await;
    record(
        other,
        &base,
        &format!("{:032x}", 3),
        s,
        &["a", "a", "c"],
        200,
    )
    .await;
    let twice = record(other, &base, &format!("{:032x}", 4), g, &["b", "lib:k"], 50).await;
    same_as_from_scratch(&cache, store, "leaks in existing groups").await;

    // A failed job: no leaks, the queue's counts change.
    let failing = queue(other, &format!("{:032x}", 5), ("25", "samsung", "1.1")).await;
    let (claim, _) = other.claim(Duration::from_secs(60)).await.unwrap();
    let claim = claim.unwrap();
    assert_eq!(claim.id, failing);
    assert!(other.fail(&claim, "broken").await.unwrap());
    same_as_from_scratch(&cache, store, "a failed job").await;
    // Only queued: a new menu value, no leaks.
    queue(other, &format!("{:032x}", 6), ("30", "fairphone", "2.0")).await;
    same_as_from_scratch(&cache, store, "a queued package").await;
    assert_eq!(
        cache.full_folds(),
        n,
        "nothing removed: only new rows folded in, once per filter"
    );

    // Package 4 analyzed again (as an interrupted run's successor would): its rows are
    // replaced, and the cache must not keep counting the old ones. The queue takes it
    // first, then package 6.
    requeue(other, twice).await;
    for (sigs, bytes) in [(&["c"][..], 10), (&["a", "d"][..], 70)] {
        let (claim, _) = other.claim(Duration::from_secs(60)).await.unwrap();
        let claim = claim.unwrap();
        assert!(other
            .finish(&claim, &analysis_of(&base, sigs, bytes), &[])
            .await
            .unwrap());
    }
    same_as_from_scratch(&cache, store, "an analysis recorded again").await;
    assert_eq!(
        cache.full_folds(),
        n,
        "rows removed: only the groups that lost rows are made again, from their rows"
    );
    let kept = cache
        .get(store, &Filter::default(), store.generation().await.unwrap())
        .await
        .unwrap();
    assert!(
        kept.library.iter().all(|g| g.occurrences == 1),
        "package 4's library leak is gone: {:?}",
        kept.library
    );

    // Both processes record analyses at once while the cache is read again and again.
    let mut writers = Vec::new();
    for (k, via) in [store.clone(), other.clone()].into_iter().enumerate() {
        let base = base.clone();
        writers.push(tokio::spawn(async move {
            for i in 0..10 {
                let md5 = format!("{:032x}", 100 + 10 * k + i);
                let meta = if i % 2 == 0 { g } else { s };
                let sigs: &[&str] = if i % 3 == 0 { &["a", "e"] } else { &["lib:k"] };
                let id = queue(&via, &md5, meta).await;
                // Whichever job this process gets: the other may have taken this one.
                let (claim, _) = via.claim(Duration::from_secs(60)).await.unwrap();
                if let Some(claim) = claim {
                    let a = analysis_of(&base, sigs, 1000 + id as u64);
                    assert!(via.finish(&claim, &a, &[]).await.unwrap());
                }
            }
        }));
    }
    while writers.iter().any(|w| !w.is_finished()) {
        for f in filters() {
            cache
                .get(store, &f, store.generation().await.unwrap())
                .await
                .unwrap();
        }
    }
    for w in writers {
        w.await.unwrap();
    }
    same_as_from_scratch(&cache, store, "concurrent analyses").await;
    assert_eq!(cache.full_folds(), n);
    let kept = cache.current(store, &Filter::default()).await.unwrap();
    assert_eq!(kept.menus.sdk.values, ["25", "26", "30"]);
    assert_eq!(kept.menus.sdk.left_out, 0);

    // One group's page: its summary folded from every occurrence, the most recent listed.
    let every = store.leaks(&Filter::default(), Some("a")).await.unwrap();
    let mut fold = hprof_shrink_serve::groups::Fold::default();
    store.fold_signature("a", &mut fold).await.unwrap();
    assert_eq!(
        serde_json::to_value(fold.groups()).unwrap(),
        serde_json::to_value(leak_groups(&every)).unwrap()
    );
    let latest = store.occurrences("a", 3).await.unwrap();
    let ids = |rows: &[hprof_shrink_serve::store::LeakRow]| -> Vec<i64> {
        rows.iter().map(|r| r.leak_id).collect()
    };
    let mut expected = ids(&every[every.len() - 3..]);
    expected.reverse();
    assert_eq!(ids(&latest), expected, "newest first");
    assert_eq!(latest[0].package_name, "p.zip");

    // The duplicate-bitmap groups the database sums equal those grouped from every row;
    // cut to the most wasteful, with their packages counted.
    let mut expected = bitmap_groups(&store.bitmaps(None).await.unwrap());
    for g in &mut expected {
        g.packages.sort_unstable();
    }
    assert!(!expected.is_empty(), "the fixture has duplicate bitmaps");
    let (summed, all) = store.bitmap_groups(1000, 1000).await.unwrap();
    assert_eq!(all, expected.len() as u64);
    assert_eq!(
        serde_json::to_value(&summed).unwrap(),
        serde_json::to_value(&expected).unwrap()
    );
    let (first, _) = store.bitmap_groups(1, 2).await.unwrap();
    assert_eq!(first.len(), 1);
    assert_eq!(first[0].hash, expected[0].hash);
    assert_eq!(first[0].packages, expected[0].packages[..2]);
    assert_eq!(
        first[0].packages_left_out,
        expected[0].packages.len() as u64 - 2
    );
}

/// Puts a done job back in the queue, as if its analysis were to be recorded again.
async fn requeue(store: &Store, id: i64) {
    const SQL: &str =
        "UPDATE jobs SET state = 'received', lease_owner = NULL WHERE package_id = $1";
    assert_eq!(execute(store, SQL, Some(id)).await, 1);
}

/// Runs one statement (with `id` as $1 if given) on either engine; rows affected.
async fn execute(store: &Store, sql: &str, id: Option<i64>) -> u64 {
    let done = match store {
        Store::Sqlite(pool) => {
            let mut q = sqlx::query(sql);
            if let Some(id) = id {
                q = q.bind(id);
            }
            q.execute(pool).await.map(|r| r.rows_affected())
        }
        Store::Postgres(pool) => {
            let mut q = sqlx::query(sql);
            if let Some(id) = id {
                q = q.bind(id);
            }
            q.execute(pool).await.map(|r| r.rows_affected())
        }
    };
    done.unwrap()
}

/// Makes every recorded analysis look as a server before the triage left it: no
/// triage kept, no package in a no-leak group.
pub async fn forget_triages(store: &Store) {
    execute(store, "DELETE FROM triages", None).await;
    execute(store, "DELETE FROM retainers", None).await;
}

/// Makes every triage kept look as a server before the notes were kept left it: without
/// them.
pub async fn forget_triage_notes(store: &Store) {
    let sql = match store {
        Store::Sqlite(_) => "UPDATE triages SET triage = json_remove(triage, '$.notes')",
        Store::Postgres(_) => "UPDATE triages SET triage = (triage::jsonb - 'notes')::text",
    };
    execute(store, sql, None).await;
}

/// Makes the recorded analyses of packages `ids` (all when empty) look as a server before
/// signature versions recorded them: each leak's signature another one (the old formula
/// gave the same bug another hash: `old-` and the new one here, the same for every
/// package of the bug), no title and no version on the leak rows, no versions on the jobs
/// (the columns a migration added to an older server's database). Bumps the generation,
/// as the older server's recording did.
pub async fn stamp_older_signatures(store: &Store, ids: &[i64]) {
    let only = |sql: &str| {
        if ids.is_empty() {
            sql.to_string()
        } else {
            let list: Vec<String> = ids.iter().map(i64::to_string).collect();
            format!("{sql} AND package_id IN ({})", list.join(","))
        }
    };
    execute(
        store,
        &only(
            "UPDATE leaks SET signature = 'old-' || signature, title = NULL, \
             signature_version = NULL WHERE signature NOT LIKE 'old-%'",
        ),
        None,
    )
    .await;
    execute(
        store,
        &only(
            "UPDATE jobs SET signature_version = NULL, analysis_schema = NULL \
             WHERE state = 'done'",
        ),
        None,
    )
    .await;
    // Rows rewritten in place: a cache must start over, as after a restart on the older
    // server's database.
    execute(
        store,
        "UPDATE generation SET n = n + 1, removals = removals + 1 WHERE id = 1",
        None,
    )
    .await;
}

/// Regrouping on one database seen by two processes (`store` reads, `other` works):
/// packages whose analysis is older than the analyzer's are queued again, behind every
/// other job (a claim that may not take a re-analysis takes none; a new package is
/// claimed first); "N of M" counts them; each re-analysis moves the package's leaks to
/// the groups of their new signatures, the old groups emptied disappear, and the cache
/// remakes only the groups that lost rows; a failed re-analysis is marked and not queued
/// again, its old rows kept.
#[allow(clippy::too_many_lines)] // a scenario, step by step
pub async fn regrouping_moves_old_packages_behind_new_ones(
    store: &Store,
    other: &Store,
    zip: &Path,
) {
    let base = analyzed(zip);
    let cache = Cache::default();
    let meta = ("25", "google", "1.0");
    let md5 = |i: u32| format!("{:032x}", 0x5000 + i);
    let mut old = Vec::new();
    for i in 0..3 {
        old.push(
            record(
                other,
                &base,
                &md5(i),
                meta,
                &["a", "lib:k"],
                100 + u64::from(i),
            )
            .await,
        );
    }
    stamp_older_signatures(other, &[]).await;
    assert_eq!(store.queue().await.unwrap().regrouping, None);
    // A package of the same bug analyzed now: a group of its own, apart from the old one.
    record(other, &base, &md5(10), meta, &["a"], 500).await;
    let shown = cache.current(store, &Filter::default()).await.unwrap();
    let sigs: Vec<&str> = shown.app.iter().map(|g| g.signature.as_str()).collect();
    assert_eq!(sigs, ["old-a", "a"], "the same bug in two groups");
    assert_eq!(shown.app[0].older_signatures, 3);
    assert_eq!(shown.app[1].older_signatures, 0);
    // Every filter seen once (its first fold is of every row).
    same_as_from_scratch(&cache, store, "old and new groups").await;
    let folds = cache.full_folds();

    assert_eq!(other.queue_regroup().await.unwrap(), 3);
    assert_eq!(other.queue_regroup().await.unwrap(), 0, "queued once");
    let r = store.queue().await.unwrap().regrouping.expect("under way");
    assert_eq!((r.packages, r.reanalyzed, r.failed), (3, 0, 0));
    let shown = cache.current(store, &Filter::default()).await.unwrap();
    assert_eq!(shown.regrouping, Some(r), "the groups say so");
    for id in &old {
        let p = store.package(*id).await.unwrap().unwrap().row;
        assert!(p.reanalysis && p.state == "received", "{p:?}");
    }

    // A new package goes first; a claim that may not take a re-analysis takes none.
    let fresh = queue(other, &md5(11), meta).await;
    let lease = Duration::from_secs(60);
    let (c, _) = other.claim(lease).await.unwrap();
    let c = c.unwrap();
    assert_eq!((c.id, c.regroup), (fresh, false));
    assert!(other
        .finish(&c, &analysis_of(&base, &["a"], 600), &[])
        .await
        .unwrap());
    assert!(other.claim_with(lease, false).await.unwrap().0.is_none());
    for (k, id) in old.iter().enumerate() {
        let (c, _) = other.claim(lease).await.unwrap();
        let c = c.unwrap();
        assert_eq!((c.id, c.regroup), (*id, true));
        let a = analysis_of(&base, &["a", "lib:k"], 100 + k as u64);
        assert!(other.finish(&c, &a, &[]).await.unwrap());
        same_as_from_scratch(&cache, store, &format!("re-analysis {k}")).await;
        let r = store.queue().await.unwrap().regrouping;
        if k < 2 {
            let r = r.expect("under way");
            assert_eq!((r.packages, r.reanalyzed), (3, k as i64 + 1));
        } else {
            assert_eq!(r, None, "done");
        }
    }
    let shown = cache.current(store, &Filter::default()).await.unwrap();
    let groups: Vec<(&str, u64, u64)> = shown
        .app
        .iter()
        .chain(&shown.library)
        .map(|g| (g.signature.as_str(), g.packages, g.older_signatures))
        .collect();
    assert_eq!(groups, [("a", 5, 0), ("k", 3, 0)], "one group per bug");
    assert_eq!(
        cache.full_folds(),
        folds,
        "only the groups that lost rows were made again"
    );
    for id in &old {
        let p = store.package(*id).await.unwrap().unwrap().row;
        assert_eq!((p.state.as_str(), p.analyses), ("done", 2));
        assert_eq!(
            p.signature_version,
            Some(i64::from(hprof_shrink_analyze::model::SIGNATURE_VERSION))
        );
    }
    assert_eq!(
        other.queue_regroup().await.unwrap(),
        0,
        "nothing older left"
    );

    // A re-analysis that fails: marked, its old rows kept, not queued again.
    stamp_older_signatures(other, &old[..1]).await;
    assert_eq!(other.queue_regroup().await.unwrap(), 1);
    let r = store
        .queue()
        .await
        .unwrap()
        .regrouping
        .expect("a new regrouping");
    assert_eq!(
        (r.packages, r.reanalyzed),
        (1, 0),
        "counts this regrouping's"
    );
    let (c, _) = other.claim(lease).await.unwrap();
    let c = c.unwrap();
    assert_eq!((c.id, c.regroup), (old[0], true));
    assert!(other
        .fail(&c, "the package does not analyze")
        .await
        .unwrap());
    assert_eq!(store.queue().await.unwrap().regrouping, None);
    assert_eq!(other.queue_regroup().await.unwrap(), 0, "not tried again");
    let p = store.package(old[0]).await.unwrap().unwrap().row;
    assert_eq!((p.state.as_str(), p.signature_version), ("failed", None));
    same_as_from_scratch(&cache, store, "a failed re-analysis").await;
    let shown = cache.current(store, &Filter::default()).await.unwrap();
    let old_a = shown.app.iter().find(|g| g.signature == "old-a").unwrap();
    assert_eq!((old_a.packages, old_a.older_signatures), (1, 1));
}

/// Retries on one database seen by two processes (`store` and `other`): a job put back
/// after a passing fault is not claimed before its time, then is, as its next attempt;
/// a late retry by a claim that lost its lease records nothing; a failed job requeued has
/// all its attempts ahead of it again, and only failed jobs are requeued.
pub async fn retries_wait_out_their_backoff(store: &Store, other: &Store) {
    // Not of the form the callers use for their own packages.
    let id = queue_bare(store, &"f".repeat(32)).await;
    let (c1, _) = store.claim(Duration::from_secs(60)).await.unwrap();
    let c1 = c1.unwrap();
    assert_eq!((c1.id, c1.attempt), (id, 1));
    let g0 = other.generation().await.unwrap();
    let at = hprof_shrink_serve::store::now_ms() + 600;
    assert!(store.retry(&c1, "the disk was full", at).await.unwrap());
    assert!(
        other.generation().await.unwrap() > g0,
        "a retry is a change"
    );
    let p = other.package(id).await.unwrap().unwrap().row;
    assert_eq!(p.state, "received");
    assert_eq!(p.error.as_deref(), Some("the disk was full"));
    // Waiting out its backoff: nobody takes it yet.
    assert!(other
        .claim(Duration::from_secs(60))
        .await
        .unwrap()
        .0
        .is_none());
    tokio::time::sleep(Duration::from_millis(700)).await;
    let (c2, _) = other.claim(Duration::from_secs(60)).await.unwrap();
    let c2 = c2.unwrap();
    assert_eq!((c2.id, c2.attempt), (id, 2));
    // The first claim is no longer the job's.
    assert!(!store.retry(&c1, "late", 0).await.unwrap());
    assert_eq!(
        store.requeue_failed(Some(id)).await.unwrap(),
        0,
        "not failed"
    );
    assert!(other.fail(&c2, "failed for good").await.unwrap());
    assert_eq!(store.requeue_failed(Some(id + 1)).await.unwrap(), 0);
    assert_eq!(store.requeue_failed(Some(id)).await.unwrap(), 1);
    let p = other.package(id).await.unwrap().unwrap().row;
    assert_eq!(
        (p.state.as_str(), p.attempts, p.error.as_deref()),
        ("received", 0, None)
    );
    let (c3, _) = other.claim(Duration::from_secs(60)).await.unwrap();
    assert_eq!(c3.map(|c| (c.id, c.attempt)), Some((id, 1)));
}

/// The two groups of the per-app-version scenario.
pub const VERSION_SIGS: [&str; 2] = [
    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
    "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb",
];

/// Packages of two leak signatures recorded through `via` and analyzed, their app
/// versions first received in the order 1.0, 1.1, 1.9, 1.10 (not their text's): A in
/// 1.0 (2 packages), 1.1 (1), 1.9 (1), 1.10 (1); B new in 1.1 (2 packages), then 1.9 (2),
/// 1.10 (1). Package ids from `first` on.
pub async fn record_versions(via: &Store, base: &hprof_shrink_analyze::Analysis, first: u32) {
    let [a, b] = VERSION_SIGS;
    let packages: [(&str, &[&str], u64); 8] = [
        ("1.0", &[a], 100),
        ("1.0", &[a], 110),
        ("1.1", &[a, b], 200),
        ("1.1", &[b], 300),
        ("1.9", &[a], 400),
        ("1.9", &[b], 500),
        ("1.9", &[b], 600),
        ("1.10", &[a, b], 700),
    ];
    let mut last = "";
    for (i, (version, sigs, retained)) in packages.into_iter().enumerate() {
        if version != last {
            // Each version's first package a few ms after the last one's.
            tokio::time::sleep(Duration::from_millis(5)).await;
            last = version;
        }
        let md5 = format!("{:032x}", first as usize + i);
        record(via, base, &md5, ("25", "acme", version), sigs, retained).await;
    }
}

/// What `GET /api/versions` answers for [`record_versions`] alone.
pub fn check_versions(v: &serde_json::Value) {
    let [a, b] = VERSION_SIGS;
    let versions = v["versions"].as_array().expect("versions");
    let names: Vec<&str> = versions
        .iter()
        .map(|v| v["appVersion"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["1.0", "1.1", "1.9", "1.10"], "{v}");
    assert_eq!(v["versionsLeftOut"], 0);
    // (version's packages, groups seen, new; per group listed: signature, new, packages,
    // occurrences, median and max retained, packages in the version before)
    type Expected<'a> = (
        i64,
        u64,
        u64,
        Vec<(&'a str, bool, u64, u64, i64, i64, Option<u64>)>,
    );
    let expected: [Expected; 4] = [
        (2, 1, 1, vec![(a, true, 2, 2, 100, 110, None)]),
        (
            2,
            2,
            1,
            vec![
                (b, true, 2, 2, 201, 300, None),
                (a, false, 1, 1, 200, 200, Some(2)),
            ],
        ),
        (
            3,
            2,
            0,
            vec![
                (b, false, 2, 2, 500, 600, Some(2)),
                (a, false, 1, 1, 400, 400, Some(1)),
            ],
        ),
        (
            1,
            2,
            0,
            vec![
                (a, false, 1, 1, 700, 700, Some(1)),
                (b, false, 1, 1, 701, 701, Some(2)),
            ],
        ),
    ];
    for (k, (ver, (packages, seen, new, groups))) in versions.iter().zip(expected).enumerate() {
        let name = &names[k];
        assert_eq!(ver["packages"], packages, "{name}: {ver}");
        assert_eq!(ver["groupsSeen"], seen, "{name}: {ver}");
        assert_eq!(ver["newGroups"], new, "{name}: {ver}");
        assert_eq!(ver["groupsLeftOut"], 0, "{name}");
        // Each version keeps the groups of the one before, none is back.
        assert_eq!(ver["gone"], serde_json::json!([]), "{name}: {ver}");
        assert_eq!(ver["goneLeftOut"], 0, "{name}");
        let previous = k.checked_sub(1).map(|p| names[p]);
        assert_eq!(ver["previousVersion"].as_str(), previous, "{name}");
        let listed = ver["groups"].as_array().unwrap();
        assert_eq!(listed.len(), groups.len(), "{name}: {ver}");
        for (g, (sig, is_new, n, occ, p50, max, before)) in listed.iter().zip(groups) {
            let got = (
                g["signature"].as_str().unwrap(),
                g["new"].as_bool().unwrap(),
                g["packages"].as_u64().unwrap(),
                g["occurrences"].as_u64().unwrap(),
                g["retainedBytes"]["p50"].as_i64().unwrap(),
                g["retainedBytes"]["max"].as_i64().unwrap(),
                g["previous"]["packages"].as_u64(),
            );
            assert_eq!(got, (sig, is_new, n, occ, p50, max, before), "{name}: {g}");
            assert_eq!(g["back"], false, "{name}: {g}");
        }
    }
}

/// After [`record_versions`]: 2.0 with A alone, then 2.1 with B alone.
pub async fn record_gone_and_back(via: &Store, base: &hprof_shrink_analyze::Analysis) {
    let [a, b] = VERSION_SIGS;
    for (k, (version, sig)) in [("2.0", a), ("2.1", b)].into_iter().enumerate() {
        tokio::time::sleep(Duration::from_millis(5)).await;
        let md5 = format!("{:032x}", 0x20 + k);
        record(via, base, &md5, ("25", "acme", version), &[sig], 800).await;
    }
}

/// What `GET /api/versions` answers for [`record_versions`] then [`record_gone_and_back`]:
/// the first four versions as [`check_versions`] says; B gone in 2.0 with its counts in
/// 1.10; in 2.1 B back (last in 1.10, no counts beside) and A gone.
pub fn check_gone_and_back(v: &serde_json::Value) {
    let [a, b] = VERSION_SIGS;
    let mut first = v.clone();
    first["versions"].as_array_mut().unwrap().truncate(4);
    check_versions(&first);
    let (two, two_one) = (&v["versions"][4], &v["versions"][5]);
    assert_eq!(
        (&two["appVersion"], &two_one["appVersion"]),
        (&"2.0".into(), &"2.1".into())
    );
    let gone = &two["gone"];
    assert_eq!(gone.as_array().map(Vec::len), Some(1), "{two}");
    assert_eq!(
        (
            &gone[0]["signature"],
            &gone[0]["packages"],
            &gone[0]["retainedBytes"]["max"]
        ),
        (&b.into(), &1.into(), &701.into()),
        "{two}"
    );
    assert_eq!(
        (&two["goneLeftOut"], &two["groups"][0]["back"]),
        (&0.into(), &false.into())
    );
    let back = &two_one["groups"][0];
    assert_eq!(
        (
            &back["signature"],
            &back["new"],
            &back["back"],
            &back["lastSeenIn"]
        ),
        (&b.into(), &false.into(), &true.into(), &"1.10".into()),
        "{two_one}"
    );
    assert!(back["previous"].is_null(), "{two_one}");
    assert_eq!(two_one["gone"][0]["signature"], a, "{two_one}");
}

/// The per-app-version view on one database seen by two processes: of
/// [`record_versions`] recorded through `other`, read through `store`; then, kept and
/// brought up to date change by change (a new version with a new group, a package of an
/// old version, an analysis recorded again over an earlier one), it equals a view made
/// from every row.
pub async fn versions_view_change_by_change(store: &Store, other: &Store, zip: &Path) {
    use hprof_shrink_serve::versions::Kept;
    let base = analyzed(zip);
    let kept = Kept::default();
    let json = |v: &hprof_shrink_serve::versions::View| serde_json::to_value(v).unwrap();
    assert_eq!(
        json(&kept.current(store).await.unwrap()),
        serde_json::json!({"versions": [], "versionsLeftOut": 0, "noVersion": null})
    );
    record_versions(other, &base, 1).await;
    let first = kept.current(store).await.unwrap();
    check_versions(&json(&first));
    // Nothing changed: the same view, not made again.
    assert!(std::sync::Arc::ptr_eq(
        &first,
        &kept.current(store).await.unwrap()
    ));
    let same_as_fresh = |step: &'static str| async move {
        let fresh = Kept::default().current(store).await.unwrap();
        // Ranked by the database, as past the cap of groups followed in memory: the same.
        let ranked = Kept::with_fold_groups(0).current(store).await.unwrap();
        assert_eq!(json(&ranked), json(&fresh), "{step}, ranked");
        (json(&fresh), step)
    };
    tokio::time::sleep(Duration::from_millis(5)).await;
    let id = record(
        other,
        &base,
        &format!("{:032x}", 50),
        ("25", "acme", "2.0"),
        &["c", VERSION_SIGS[0]],
        900,
    )
    .await;
    record(
        other,
        &base,
        &format!("{:032x}", 51),
        ("25", "acme", "1.1"),
        &[VERSION_SIGS[1]],
        50,
    )
    .await;
    let (fresh, step) = same_as_fresh("new packages").await;
    let now = json(&kept.current(store).await.unwrap());
    assert_eq!(now, fresh, "{step}");
    let last = &now["versions"][4];
    assert_eq!(last["appVersion"], "2.0");
    assert_eq!(
        (last["groupsSeen"].as_u64(), last["newGroups"].as_u64()),
        (Some(2), Some(1))
    );
    assert_eq!(last["groups"][0]["signature"], "c");
    assert_eq!(last["gone"][0]["signature"], VERSION_SIGS[1], "1.10's B");
    assert_eq!(
        now["versions"][1]["groups"][0]["packages"], 3,
        "1.1's B: one more"
    );
    // Package `id` analyzed again: its rows replaced, the kept view starts over.
    requeue(other, id).await;
    let (claim, _) = other.claim(Duration::from_secs(60)).await.unwrap();
    assert!(other
        .finish(
            &claim.unwrap(),
            &analysis_of(&base, &[VERSION_SIGS[1]], 950),
            &[]
        )
        .await
        .unwrap());
    let (fresh, step) = same_as_fresh("an analysis recorded again").await;
    let now = json(&kept.current(store).await.unwrap());
    assert_eq!(now, fresh, "{step}");
    let last = &now["versions"][4];
    assert_eq!(
        (last["groupsSeen"].as_u64(), last["newGroups"].as_u64()),
        (Some(1), Some(0))
    );
    assert_eq!(last["groups"][0]["signature"], VERSION_SIGS[1]);
}

/// What is kept of the triage, through the store (`other` records, `store` reads, as two
/// processes would): a package's triage as its page shows it; packages without a leak,
/// by their first top retainer's path, in one no-leak group across devices and versions
/// (a package with a leak in none); the kept groups made again once a package changes
/// them, and served as kept while nothing changed.
pub async fn triage_rows_round_trip(store: &Store, other: &Store, zip: &Path) {
    use hprof_shrink_serve::groups::Fold;
    use hprof_shrink_serve::no_leak::Kept;
    use hprof_shrink_serve::triage::{path_signature, PackageTriage};
    let base = analyzed(zip);
    let triage = base.triage.as_ref().expect("an analysis has a triage");
    let top = &triage.top_retainers[0].object;
    let path = top.path.as_ref().expect("the top retainer has a path");
    let kept = Kept::default();
    assert!(kept.current(store).await.unwrap().top.app.is_empty());
    let md5 = |i: u32| format!("{:032x}", 0x7000 + i);
    let a = record(other, &base, &md5(1), ("26", "acme", "1.0"), &[], 0).await;
    let b = record(other, &base, &md5(2), ("28", "zeta", "2.0"), &[], 0).await;
    let leaking = record(other, &base, &md5(3), ("28", "zeta", "2.0"), &["a"], 9).await;

    for id in [a, b, leaking] {
        assert_eq!(
            store.triage(id).await.unwrap(),
            PackageTriage::of(&base),
            "package {id}"
        );
    }
    let shown = PackageTriage::of(&base).unwrap();
    let kept_path = shown.top_retainers[0].path.clone().unwrap();
    let sig = path_signature(&kept_path);
    assert_eq!(sig, path_signature(path), "labels are not in the signature");
    let mut fold = Fold::default();
    store
        .fold_no_leak(None, &Filter::default(), &mut fold)
        .await
        .unwrap();
    let groups = fold.groups();
    assert_eq!(groups.len(), 1, "{groups:?}");
    let g = &groups[0];
    assert_eq!((g.signature.as_str(), g.packages), (sig.as_str(), 2));
    assert_eq!(g.class_name, top.class_name);
    assert_eq!(g.retained_bytes.max, top.retained_bytes as i64);
    assert_eq!(
        g.retained_native_bytes.max,
        top.retained_native_bytes as i64
    );
    assert_eq!(
        g.app_versions,
        [("1.0".to_string(), 1), ("2.0".to_string(), 1)]
    );
    let rows = store.no_leak_occurrences(&sig, 10).await.unwrap();
    let ids: Vec<i64> = rows.iter().map(|r| r.package_id).collect();
    assert_eq!(ids, [b, a], "newest first");
    let latest = store.latest_no_leak_path(&sig).await.unwrap().unwrap();
    let latest: hprof_shrink_analyze::Trace = serde_json::from_str(&latest).unwrap();
    assert_eq!(latest, kept_path);

    let first = kept.current(store).await.unwrap();
    assert_eq!(first.top.app.len(), 1);
    assert_eq!(first.top.app[0].packages, 2);
    assert_eq!(first.ungrouped, 0);
    assert!(std::sync::Arc::ptr_eq(
        &first,
        &kept.current(store).await.unwrap()
    ));
    let c = record(other, &base, &md5(4), ("29", "acme", "2.0"), &[], 0).await;
    let now = kept.current(store).await.unwrap();
    assert_eq!(now.top.app[0].packages, 3, "made again after a change");
    assert!(c > b);
}

/// `base` with its top retainers' paths as `paths` says of each (kept, or taken away as
/// for an object held only by the main thread's locals, which the path search does not
/// follow), each retainer's class named after its place. [`record`] it with no signature
/// for a package without a leak.
pub fn retainer_paths(
    base: &hprof_shrink_analyze::Analysis,
    paths: &[bool],
) -> hprof_shrink_analyze::Analysis {
    let mut a = base.clone();
    let t = a.triage.as_mut().expect("an analysis has a triage");
    let template = t.top_retainers[0].clone();
    assert!(template.object.path.is_some(), "{template:?}");
    t.top_retainers = paths
        .iter()
        .enumerate()
        .map(|(k, &kept)| {
            let mut r = template.clone();
            r.object.class_name = format!("com.example.Retainer{k}");
            r.object.retained_bytes = 1000 - k as u64;
            if !kept {
                r.object.path = None;
            }
            r
        })
        .collect();
    a
}

/// Packages without a leak whose largest top retainer has no path from a GC root: each
/// is in the no-leak group of its first top retainer that has one (its class and size
/// the group's); one whose top retainers have none is in no group. Returns the ids of
/// the grouped packages and of the one left out.
pub async fn no_leak_groups_take_the_first_retainer_with_a_path(
    store: &Store,
    other: &Store,
    zip: &Path,
) -> (Vec<i64>, i64) {
    use hprof_shrink_serve::groups::Fold;
    use hprof_shrink_serve::triage::path_signature;
    let base = analyzed(zip);
    let md5 = |i: u32| format!("{:032x}", 0x9000 + i);
    let mut grouped = Vec::new();
    for (i, paths) in [&[false, true, true][..], &[false, false, true]]
        .into_iter()
        .enumerate()
    {
        let a = retainer_paths(&base, paths);
        let id = record(other, &a, &md5(i as u32), ("26", "acme", "1.0"), &[], 0).await;
        grouped.push(id);
    }
    let none = retainer_paths(&base, &[false, false]);
    let ungrouped = record(other, &none, &md5(9), ("26", "acme", "1.0"), &[], 0).await;

    let mut fold = Fold::default();
    store
        .fold_no_leak(None, &Filter::default(), &mut fold)
        .await
        .unwrap();
    let groups = fold.groups();
    assert_eq!(groups.len(), 1, "{groups:?}");
    let g = &groups[0];
    let shown = store.triage(grouped[0]).await.unwrap().unwrap();
    let path = shown.top_retainers[1].path.as_ref().unwrap();
    assert_eq!(g.signature, path_signature(path));
    assert_eq!(g.packages, 2, "{g:?}");
    // The latest package's first retainer with a path is its third.
    assert_eq!(g.class_name, "com.example.Retainer2");
    assert_eq!(g.retained_bytes.max, 999);
    let ids: Vec<i64> = store
        .no_leak_occurrences(&g.signature, 10)
        .await
        .unwrap()
        .iter()
        .map(|r| r.package_id)
        .collect();
    assert_eq!(ids, [grouped[1], grouped[0]]);
    assert!(!ids.contains(&ungrouped));
    // Counted, not left out silently.
    let kept = hprof_shrink_serve::no_leak::Kept::default();
    let listed = kept.current(store).await.unwrap();
    assert_eq!((listed.top.app.len(), listed.ungrouped), (1, 1));
    // Ranked by the database, as past the cap of groups folded in memory: the same.
    let ranked = hprof_shrink_serve::no_leak::Kept::with_fold_groups(0);
    let ranked = ranked.current(store).await.unwrap();
    let json = |g: &hprof_shrink_serve::no_leak::Groups| {
        serde_json::json!([g.top.app, g.top.app_left_out, g.ungrouped])
    };
    assert_eq!(json(&ranked), json(&listed));
    assert_eq!(ranked.top.app.len(), 1);
    (grouped, ungrouped)
}

/// A database as a server before migration 9 left it, for [`requeued_by_migration_9`]:
/// four packages, three without a leak: one that server left in no group though a
/// smaller top retainer has a path (its row taken away here, as the grouping by the first
/// retainer alone left it), one whose retainers have none, one in a group (its row not
/// saying whether it was shrunk); one with a leak. Migration 9 is to run again at the
/// next open. Returns the ids it must queue for re-analysis, and the others.
pub async fn as_before_migration_9(store: &Store, zip: &Path) -> (Vec<i64>, Vec<i64>) {
    let base = analyzed(zip);
    let md5 = |i: u32| format!("{:032x}", 0xa000 + i);
    let version = ("26", "acme", "1.0");
    let second = record(
        store,
        &retainer_paths(&base, &[false, true]),
        &md5(1),
        version,
        &[],
        0,
    )
    .await;
    let none = record(
        store,
        &retainer_paths(&base, &[false]),
        &md5(2),
        version,
        &[],
        0,
    )
    .await;
    let grouped = record(
        store,
        &retainer_paths(&base, &[true]),
        &md5(3),
        version,
        &[],
        0,
    )
    .await;
    let leaking = record(store, &base, &md5(4), version, &["a"], 9).await;
    assert_eq!(
        execute(
            store,
            "DELETE FROM retainers WHERE package_id = $1",
            Some(second)
        )
        .await,
        1
    );
    execute(store, "ALTER TABLE retainers DROP COLUMN shrunk", None).await;
    execute(
        store,
        "DELETE FROM _sqlx_migrations WHERE version = 9",
        None,
    )
    .await;
    (vec![second, none, grouped], vec![leaking])
}

/// After [`as_before_migration_9`] and an open that migrated: the packages without a
/// leak, and only they, are queued for re-analysis; until then a group's rows do not say
/// whether their dumps were shrunk.
pub async fn requeued_by_migration_9(store: &Store, (queued, kept): (&[i64], &[i64])) {
    use hprof_shrink_serve::store::Shrunk;
    let grouped = queued[2];
    let t = store.triage(grouped).await.unwrap().unwrap();
    let path = t.top_retainers[0].path.as_ref().unwrap();
    let sig = hprof_shrink_serve::triage::path_signature(path);
    let unknown = Shrunk {
        packages: 0,
        unknown: 1,
    };
    assert_eq!(store.no_leak_shrunk(&sig).await.unwrap(), unknown);
    assert_eq!(store.queue_regroup().await.unwrap(), queued.len() as u64);
    for &id in queued {
        let p = store.package(id).await.unwrap().unwrap().row;
        assert_eq!((p.state.as_str(), p.reanalysis), ("received", true), "{id}");
    }
    for &id in kept {
        let p = store.package(id).await.unwrap().unwrap().row;
        assert_eq!((p.state.as_str(), p.reanalysis), ("done", false), "{id}");
    }
}

/// A database as a server before migration 10 left it, for [`requeued_by_migration_10`]:
/// four packages with a leak and one without. The leak of the first is a watched object's
/// (LeakCanary's status reason on its last step), the second's names a leaking object
/// behind it ("Also retains"), as every finder ran on dumps LeakCanary watched; the third's
/// trace shows neither, nor does the one without a leak. Migration 10 is to run again at
/// the next open. Returns the ids it must queue for re-analysis, and the others.
pub async fn as_before_migration_10(store: &Store, zip: &Path) -> (Vec<i64>, Vec<i64>) {
    let base = analyzed(zip);
    let plain = |a: &mut hprof_shrink_analyze::Analysis| {
        for step in &mut a.leaks[0].trace.steps {
            step.leaking_reason = None;
            step.labels.clear();
        }
    };
    let mut watched = base.clone();
    plain(&mut watched);
    let last = watched.leaks[0].trace.steps.last_mut().unwrap();
    last.leaking_reason = Some(
        "ObjectWatcher was watching this because com.example.A received Activity#onDestroy() callback"
            .into(),
    );
    let mut behind = base.clone();
    plain(&mut behind);
    let last = behind.leaks[0].trace.steps.last_mut().unwrap();
    last.labels = vec!["Also retains leaking object 0x12 (com.example.A)".into()];
    let mut other = base.clone();
    plain(&mut other);
    let md5 = |i: u32| format!("{:032x}", 0xd000 + i);
    let version = ("30", "acme", "1.0");
    let w = record(store, &watched, &md5(1), version, &["a"], 9).await;
    let b = record(store, &behind, &md5(2), version, &["b"], 9).await;
    let o = record(store, &other, &md5(3), version, &["c"], 9).await;
    let none = record(
        store,
        &retainer_paths(&base, &[true]),
        &md5(4),
        version,
        &[],
        0,
    )
    .await;
    execute(
        store,
        "DELETE FROM _sqlx_migrations WHERE version = 10",
        None,
    )
    .await;
    (vec![w, b], vec![o, none])
}

/// After [`as_before_migration_10`] and an open that migrated: the packages whose leaks
/// LeakCanary's watched objects decided, and only they, are queued for re-analysis.
pub async fn requeued_by_migration_10(store: &Store, (queued, kept): (&[i64], &[i64])) {
    assert_eq!(store.queue_regroup().await.unwrap(), queued.len() as u64);
    for &id in queued {
        let p = store.package(id).await.unwrap().unwrap().row;
        assert_eq!((p.state.as_str(), p.reanalysis), ("received", true), "{id}");
    }
    for &id in kept {
        let p = store.package(id).await.unwrap().unwrap().row;
        assert_eq!((p.state.as_str(), p.reanalysis), ("done", false), "{id}");
    }
}

/// The note an analysis of a shrunk dump carries (docs/analyze.md).
pub const SHRUNK_NOTE: &str = "the dump was shrunk: references to dropped primitive arrays \
     read as null, and retained sizes leave out their bytes";

/// Two packages without a leak in one no-leak group, recorded through `via`: the first of
/// a shrunk dump (`zip`'s, with the analysis's note), the second not. Returns their ids
/// and the group's signature.
pub async fn shrunk_and_whole_without_a_leak(via: &Store, zip: &Path) -> ([i64; 2], String) {
    use hprof_shrink_serve::triage::path_signature;
    let base = analyzed(zip);
    assert!(base.input.shrunk, "the fixture's package is shrunk");
    assert!(
        base.notes.iter().any(|n| n == SHRUNK_NOTE),
        "{:?}",
        base.notes
    );
    let shrunk = retainer_paths(&base, &[true]);
    let mut whole = shrunk.clone();
    whole.input.shrunk = false;
    whole.notes.retain(|n| n != SHRUNK_NOTE);
    let md5 = |i: u32| format!("{:032x}", 0xc000 + i);
    let version = ("26", "acme", "1.0");
    let a = record(via, &shrunk, &md5(1), version, &[], 0).await;
    let b = record(via, &whole, &md5(2), version, &[], 0).await;
    let t = via.triage(a).await.unwrap().unwrap();
    let sig = path_signature(t.top_retainers[0].path.as_ref().unwrap());
    ([a, b], sig)
}

/// Through the store (`other` records, `store` reads): a shrunk dump's triage keeps its
/// analysis's notes, a whole one's does not carry that note, and their no-leak group
/// counts the one package whose sizes leave out dropped arrays.
pub async fn shrunk_packages_are_counted(store: &Store, other: &Store, zip: &Path) {
    use hprof_shrink_serve::store::Shrunk;
    let ([a, b], sig) = shrunk_and_whole_without_a_leak(other, zip).await;
    let notes = |id: i64| async move {
        let t = store.triage(id).await.unwrap().unwrap();
        t.notes.expect("notes kept")
    };
    assert!(notes(a).await.iter().any(|n| n == SHRUNK_NOTE));
    assert!(!notes(b).await.iter().any(|n| n == SHRUNK_NOTE));
    let counted = Shrunk {
        packages: 1,
        unknown: 0,
    };
    assert_eq!(store.no_leak_shrunk(&sig).await.unwrap(), counted);
}

/// An app version's mapping (issue 51): recorded through `other`, it queues for
/// re-analysis that version's analyzed packages (not another version's, not again for the
/// same bytes); the claim of such a package carries the mapping; one that arrives while a
/// package is analyzed with the mapping before requeues it when its analysis is recorded,
/// and the analysis made with the version's current mapping stays done.
pub async fn a_mapping_requeues_its_versions_packages(store: &Store, other: &Store, zip: &Path) {
    use hprof_shrink_serve::store::{MappingRef, NewMapping};
    let base = analyzed(zip);
    let lease = Duration::from_secs(60);
    let one = record(
        store,
        &base,
        &"1".repeat(32),
        ("30", "acme", "1.0"),
        &["s"],
        10,
    )
    .await;
    let two = record(
        store,
        &base,
        &"2".repeat(32),
        ("30", "acme", "2.0"),
        &["s"],
        10,
    )
    .await;
    let mapping = |md5: &'static str| NewMapping {
        app_version: "1.0",
        md5,
        bytes: 100,
    };
    let (m1, m2) = ("a".repeat(32).leak() as &str, "b".repeat(32).leak() as &str);
    let g0 = store.generation().await.unwrap();
    assert_eq!(other.put_mapping(&mapping(m1)).await.unwrap(), (true, 1));
    assert!(store.generation().await.unwrap() > g0, "the queue changed");
    // The same bytes again: nothing to do.
    assert_eq!(other.put_mapping(&mapping(m1)).await.unwrap(), (false, 0));
    let state = |id| async move { store.package(id).await.unwrap().unwrap().row };
    assert_eq!(state(one).await.state, "received");
    assert!(state(one).await.reanalysis);
    assert_eq!(state(two).await.state, "done");
    let (c, _) = store.claim(lease).await.unwrap();
    let c = c.expect("the version's package, queued again");
    assert_eq!((c.id, c.regroup), (one, true));
    assert_eq!(
        c.mapping,
        Some(MappingRef {
            md5: m1.into(),
            app_version: "1.0".into()
        })
    );
    // Another mapping while it is analyzed with the first: nothing done is queued now...
    assert_eq!(other.put_mapping(&mapping(m2)).await.unwrap(), (true, 0));
    assert!(store
        .finish(&c, &analysis_of(&base, &["s"], 10), &[])
        .await
        .unwrap());
    // ...but the analysis recorded with the first puts it back in the queue.
    assert_eq!(state(one).await.state, "received");
    let (c, _) = other.claim(lease).await.unwrap();
    let c = c.unwrap();
    assert_eq!(c.id, one);
    assert_eq!(c.mapping.as_ref().map(|m| m.md5.as_str()), Some(m2));
    assert!(other
        .finish(&c, &analysis_of(&base, &["s"], 10), &[])
        .await
        .unwrap());
    assert_eq!(state(one).await.state, "done");
    assert_eq!(state(one).await.analyses, 3);
    // The other version's package was never queued, and a package without a mapping
    // claims none.
    assert_eq!(state(two).await.analyses, 1);
    assert!(store.claim(lease).await.unwrap().0.is_none());
    let three = queue(store, &"3".repeat(32), ("30", "acme", "3.0")).await;
    let (c, _) = store.claim(lease).await.unwrap();
    let c = c.unwrap();
    assert_eq!((c.id, c.mapping), (three, None));
}

/// A LeakCanary report (issue 51) recorded through `other`: a package done at once with
/// its leaks in the groups, recorded once for the same text, and never queued again, by
/// a regrouping (its rows made to look as an older server left them) nor by its app
/// version's mapping; a package of the same version is.
pub async fn a_report_is_recorded_done_and_never_queued(store: &Store, other: &Store, zip: &Path) {
    use hprof_shrink_serve::store::NewMapping;
    let base = analyzed(zip);
    let manifest = [("sdkVersion".to_string(), "34".to_string())];
    let extra = [("appVersion".to_string(), "7.0".to_string())];
    let report = NewPackage {
        md5: &"c".repeat(32),
        name: "leakcanary.txt",
        bytes: 10,
        manifest: &manifest,
        extra: &extra,
    };
    let a = analysis_of(&base, &["sig-r"], 5);
    let id = other.record_report(&report, &a).await.unwrap().unwrap();
    assert_eq!(other.record_report(&report, &a).await.unwrap(), Err(id));
    let row = store.package(id).await.unwrap().unwrap().row;
    assert_eq!(
        (row.state.as_str(), row.analyses, row.app_version.as_str()),
        ("done", 1, "7.0")
    );
    assert_eq!(store.leaks_of(id).await.unwrap().len(), 1);
    let groups = leak_groups(&store.leaks(&Filter::default(), None).await.unwrap());
    assert!(groups.iter().any(|g| g.signature == "sig-r"), "{groups:?}");
    let dump = record(
        store,
        &base,
        &"d".repeat(32),
        ("34", "acme", "7.0"),
        &["sig-r"],
        5,
    )
    .await;
    stamp_older_signatures(other, &[id, dump]).await;
    assert_eq!(
        store.queue_regroup().await.unwrap(),
        1,
        "the dump's package only"
    );
    let (c, _) = store.claim(Duration::from_secs(60)).await.unwrap();
    let c = c.unwrap();
    assert_eq!(c.id, dump);
    assert!(store
        .finish(&c, &analysis_of(&base, &["sig-r"], 5), &[])
        .await
        .unwrap());
    let mapping = NewMapping {
        app_version: "7.0",
        md5: &"e".repeat(32),
        bytes: 1,
    };
    assert_eq!(other.put_mapping(&mapping).await.unwrap(), (true, 1));
    let (c, _) = store.claim(Duration::from_secs(60)).await.unwrap();
    assert_eq!(c.unwrap().id, dump);
    assert!(store
        .claim(Duration::from_secs(60))
        .await
        .unwrap()
        .0
        .is_none());
    assert_eq!(store.package(id).await.unwrap().unwrap().row.state, "done");
}

/// A heap-graph trace of pid 7 of `com.example.app` at `version` (its packages list and
/// process tree say so): a root holding a chain of `n` + 1 objects of `class`.
pub fn heap_graph_trace(version: u64, n: u64, class: &str) -> Vec<u8> {
    app_trace(
        version,
        hprof_shrink_test_support::trace::chain(7, class, n, 64),
    )
}

/// A trace of `com.example.app` (pid 7) at version code `version` whose heap graph is
/// `graph` (pid 7's).
pub fn app_trace(version: u64, graph: Vec<u8>) -> Vec<u8> {
    use hprof_shrink_test_support::trace;
    let mut t = trace::packages_packet(&[
        ("com.example.other", 10002, Some(1)),
        ("com.example.app", 10001, Some(version)),
    ]);
    t.extend(trace::other_packet());
    t.extend(trace::process_packet(7, Some(10001), "com.example.app"));
    t.extend(graph);
    t
}

/// Heap-graph traces without a leak (no finder runs without field values: what an
/// out-of-memory trace gives), recorded through `other` as the server records a trace
/// (its `extra.info` what the trace says of its app): two of one cause from two version
/// codes are one no-leak group spread over both versions, keyed by their first top
/// retainer's path; another cause is another group. `dir` holds the traces.
pub async fn heap_graph_traces_group_by_path_per_version(store: &Store, other: &Store, dir: &Path) {
    use hprof_shrink_analyze::perfetto::about;
    use hprof_shrink_serve::groups::Fold;
    use hprof_shrink_serve::triage::path_signature;
    let traces = [
        heap_graph_trace(42, 40, "com.example.Node"),
        heap_graph_trace(43, 90, "com.example.Node"),
        heap_graph_trace(43, 30, "com.example.Other"),
    ];
    let mut ids = Vec::new();
    for (i, bytes) in traces.iter().enumerate() {
        let path = dir.join(format!("t{i}.pftrace"));
        std::fs::write(&path, bytes).unwrap();
        let a = analyzed(&path);
        assert_eq!(a.dump.format, "Perfetto heap graph");
        assert!(a.leaks.is_empty(), "{:?}", a.leaks);
        let extra = about::app_of(bytes, None).unwrap().pairs();
        assert_eq!(
            a.input.extra, extra,
            "the analysis says what the server records"
        );
        let md5 = format!("{:032x}", 0x7000 + i);
        let id = other
            .insert_package(&NewPackage {
                md5: &md5,
                name: "t.pftrace",
                bytes: bytes.len() as u64,
                manifest: &[],
                extra: &extra,
            })
            .await
            .unwrap()
            .unwrap();
        let (claim, _) = other.claim(Duration::from_secs(60)).await.unwrap();
        let claim = claim.expect("the trace just queued");
        assert_eq!(claim.id, id);
        assert!(other.finish(&claim, &a, &[]).await.unwrap());
        ids.push(id);
    }
    let row = store.package(ids[0]).await.unwrap().unwrap().row;
    assert_eq!(row.app_version, "42");
    let mut fold = Fold::default();
    store
        .fold_no_leak(None, &Filter::default(), &mut fold)
        .await
        .unwrap();
    let mut groups = fold.groups();
    groups.sort_by_key(|g| std::cmp::Reverse(g.packages));
    assert_eq!(groups.len(), 2, "{groups:?}");
    let g = &groups[0];
    let shown = store.triage(ids[0]).await.unwrap().unwrap();
    let path = shown.top_retainers[0].path.as_ref().expect("a path");
    assert_eq!(g.signature, path_signature(path));
    assert_eq!(g.class_name, "com.example.Node");
    assert_eq!(g.packages, 2, "{g:?}");
    let mut versions = g.app_versions.clone();
    versions.sort();
    assert_eq!(versions, [("42".to_string(), 1), ("43".to_string(), 1)]);
    assert_eq!(groups[1].class_name, "com.example.Other");
    assert_eq!(groups[1].app_versions, [("43".to_string(), 1)]);
}

/// Packages without a leak of two app versions and of two causes (`Root` paths, the
/// second from another GC root type), one without an app version, one in no group, one
/// with a leak, recorded through `other`. Returns the two groups' signatures, `1.0`'s
/// cause first, after checking through `store`: the list filtered by app version (or
/// SDK) has only that version's groups and counts, ranked by the database the same; a
/// version no package has, or a 10,000-byte value, lists nothing; a group's packages per
/// app version, which version is its first and whether that is the latest.
pub async fn no_leak_groups_per_app_version(
    store: &Store,
    other: &Store,
    zip: &Path,
) -> (String, String) {
    let (sig_a, sig_b) = record_no_leak_versions(other, store, zip).await;
    no_leak_lists_filtered(store, &sig_a, &sig_b).await;
    no_leak_groups_by_version(store, &sig_a, &sig_b).await;
    (sig_a, sig_b)
}

/// The packages of [`no_leak_groups_per_app_version`], recorded through `other`; the two
/// groups' signatures, read through `store`.
async fn record_no_leak_versions(other: &Store, store: &Store, zip: &Path) -> (String, String) {
    use hprof_shrink_serve::triage::{path_signature, PackageTriage};
    let base = analyzed(zip);
    let first = retainer_paths(&base, &[true]);
    let mut second = first.clone();
    let t = second.triage.as_mut().unwrap();
    t.top_retainers[0].object.path.as_mut().unwrap().root = "Thread".into();
    let md5 = |i: u32| format!("{:032x}", 0xa000 + i);
    let a = record(other, &first, &md5(1), ("26", "acme", "1.0"), &[], 0).await;
    record(other, &first, &md5(2), ("28", "zeta", "1.0"), &[], 0).await;
    let none = retainer_paths(&base, &[false]);
    record(other, &none, &md5(3), ("26", "acme", "1.0"), &[], 0).await;
    record(other, &first, &md5(4), ("26", "acme", "2.0"), &[], 0).await;
    let b = record(other, &second, &md5(5), ("26", "acme", "2.0"), &[], 0).await;
    record(other, &base, &md5(6), ("26", "acme", "2.0"), &["x"], 9).await;
    record(other, &first, &md5(7), ("26", "acme", ""), &[], 0).await;
    let sig = |t: PackageTriage| path_signature(t.top_retainers[0].path.as_ref().unwrap());
    let sig_a = sig(store.triage(a).await.unwrap().unwrap());
    let sig_b = sig(store.triage(b).await.unwrap().unwrap());
    assert_ne!(sig_a, sig_b);
    (sig_a, sig_b)
}

/// The list of [`no_leak_groups_per_app_version`]'s packages, filtered.
async fn no_leak_lists_filtered(store: &Store, sig_a: &str, sig_b: &str) {
    use hprof_shrink_serve::no_leak::{Groups, Kept};
    let (sig_a, sig_b) = (sig_a.to_string(), sig_b.to_string());
    let version = |v: &str| Filter {
        app_version: Some(v.to_string()),
        ..Filter::default()
    };
    let kept = Kept::default();
    let now = store.generation().await.unwrap();
    let listed = |g: &Groups| -> Vec<(String, u64)> {
        g.top
            .app
            .iter()
            .map(|g| (g.signature.clone(), g.packages))
            .collect()
    };
    let all = kept.current(store).await.unwrap();
    assert_eq!(
        listed(&all),
        [(sig_a.clone(), 4), (sig_b.clone(), 1)],
        "unfiltered: every version, and none"
    );
    assert_eq!(all.ungrouped, 1);
    let old = kept.at(store, &version("1.0"), now).await.unwrap();
    assert_eq!(listed(&old), [(sig_a.clone(), 2)]);
    assert_eq!(old.top.app[0].app_versions, [("1.0".to_string(), 2)]);
    assert_eq!(old.ungrouped, 1, "the package in no group is 1.0's");
    let new = kept.at(store, &version("2.0"), now).await.unwrap();
    let mut got = listed(&new);
    got.sort();
    let mut want = vec![(sig_a.clone(), 1), (sig_b.clone(), 1)];
    want.sort();
    assert_eq!(got, want);
    assert_eq!(new.ungrouped, 0);
    let zeta = Filter {
        sdk: Some("28".into()),
        ..Filter::default()
    };
    assert_eq!(
        listed(&kept.at(store, &zeta, now).await.unwrap()),
        [(sig_a.clone(), 1)]
    );
    // Ranked by the database, as past the cap of groups folded: the same.
    let ranked = Kept::with_fold_groups(0);
    let json = |g: &Groups| serde_json::json!([g.top.app, g.top.app_left_out, g.ungrouped]);
    for f in [version("1.0"), version("2.0"), zeta] {
        assert_eq!(
            json(&ranked.at(store, &f, now).await.unwrap()),
            json(&kept.at(store, &f, now).await.unwrap()),
            "{f:?}"
        );
    }
    assert_eq!(ranked.ranked(), 3);
    for v in ["9.9".to_string(), "x".repeat(10_000)] {
        let g = kept.at(store, &version(&v), now).await.unwrap();
        assert!(g.top.app.is_empty() && g.ungrouped == 0, "{}", v.len());
    }
    // The unfiltered list is still the one kept: not made again by the filters.
    assert!(std::sync::Arc::ptr_eq(
        &all,
        &kept.current(store).await.unwrap()
    ));
}

/// The groups of [`no_leak_groups_per_app_version`]'s packages, per app version.
async fn no_leak_groups_by_version(store: &Store, sig_a: &str, sig_b: &str) {
    use hprof_shrink_serve::no_leak;
    let by = |g: &no_leak::Group| -> Vec<(String, i64, Option<u64>, bool)> {
        g.versions
            .versions
            .iter()
            .map(|r| {
                (
                    r.app_version.clone(),
                    r.version_packages,
                    r.group.as_ref().map(|c| c.packages),
                    r.new,
                )
            })
            .collect()
    };
    let ga = no_leak::group(store, sig_a).await.unwrap().unwrap();
    assert_eq!(ga.group.packages, 4);
    assert_eq!(
        by(&ga),
        [
            ("1.0".to_string(), 3, Some(2), true),
            ("2.0".to_string(), 3, Some(1), false)
        ]
    );
    assert!(!ga.versions.new_in_latest);
    assert_eq!(ga.versions.no_version.as_ref().map(|c| c.packages), Some(1));
    let gb = no_leak::group(store, sig_b).await.unwrap().unwrap();
    assert_eq!(
        by(&gb),
        [
            ("1.0".to_string(), 3, None, false),
            ("2.0".to_string(), 3, Some(1), true)
        ]
    );
    assert!(gb.versions.new_in_latest);
    assert!(gb.versions.no_version.is_none());
    assert!(no_leak::group(store, "0000").await.unwrap().is_none());
}

/// A NUL is text a phone can send (a `\u0000` escape in `result.info`, a form field of an
/// upload) and PostgreSQL's text refuses: the package would not be recorded at all (a
/// database error, which the phone takes for the server's and sends again). Each NUL of
/// the package's columns and of a failed attempt's reason is recorded as U+FFFD, on
/// either database. (What an analysis records of a dump, its names, is shown with control
/// characters escaped already.)
pub async fn nul_characters_are_recorded_as_replacement_characters(store: &Store) {
    let id = queue(
        store,
        &"a".repeat(32),
        ("3\u{0}4", "ma\u{0}ker", "1.0\u{0}"),
    )
    .await;
    let (claim, _) = store.claim(Duration::from_secs(60)).await.unwrap();
    let claim = claim.expect("the package just queued");
    assert!(store.fail(&claim, "bad\u{0}dump").await.unwrap());
    let p = store.package(id).await.unwrap().unwrap().row;
    assert_eq!(
        (
            p.sdk.as_str(),
            p.manufacturer.as_str(),
            p.app_version.as_str()
        ),
        ("3\u{FFFD}4", "ma\u{FFFD}ker", "1.0\u{FFFD}")
    );
    assert_eq!(p.error.as_deref(), Some("bad\u{FFFD}dump"));
}
