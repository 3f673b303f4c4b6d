//! What the tests of `serve` on SQLite (tests/serve.rs) and on PostgreSQL
//! (tests/serve_cluster.rs) share.
#![allow(dead_code)]

use std::io::Write;
use std::path::Path;
use std::time::Duration;

use hprof_shrink::serve::store::{NewPackage, Store};

/// `base` with an `extra.info` of its own: the same entries raw-copied, so a distinct
/// package (MD5) for the price of a copy.
pub fn variant(base: &[u8], extra: &str) -> Vec<u8> {
    let mut archive = zip::ZipArchive::new(std::io::Cursor::new(base)).unwrap();
    let comment = archive.comment().to_vec();
    let mut w = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    for e in 0..archive.len() {
        let f = archive.by_index_raw(e).unwrap();
        if f.name().unwrap() == "extra.info" {
            continue;
        }
        w.raw_copy_file(f).unwrap();
    }
    let opts = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated);
    w.start_file("extra.info", opts).unwrap();
    w.write_all(extra.as_bytes()).unwrap();
    w.set_raw_comment(comment.into_boxed_slice()).unwrap();
    w.finish().unwrap().into_inner()
}

/// The lease rules on one database seen by two processes (`store` and `other`; the same
/// store twice on SQLite): a held job is nobody else's; a job whose lease ran out is
/// taken again, and its first claimer can then neither renew, record nor fail it; the
/// analysis of `zip` is recorded once, and a second finish records nothing.
pub async fn only_the_current_lease_holder_records(store: &Store, other: &Store, zip: &Path) {
    let analysis = hprof_shrink::analyze::analyze_path(
        zip,
        &hprof_shrink::analyze::Options::default(),
        &hprof_shrink_core::Control::default(),
    )
    .unwrap()
    .analysis;
    let id = store
        .insert_package(&NewPackage {
            // Not of the form the callers use for their own packages.
            md5: &"e".repeat(32),
            name: "p.zip",
            bytes: 1,
            manifest: &[],
            extra: &[],
        })
        .await
        .unwrap()
        .unwrap();
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
    let p = store.package(id).await.unwrap().unwrap();
    assert_eq!((p.state.as_str(), p.attempts, p.analyses), ("done", 2, 1));
    assert_eq!(
        store.leaks_of(id).await.unwrap().len(),
        analysis.leaks.len()
    );
}
