//! `hprof-shrink batch`: mixed inputs, partial failure, resumption after SIGKILL, shards.

mod common;

use common::*;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

fn verify(zip: &Path, against: &Path) {
    let o = run(&["verify", s(zip), "--against", s(against)]);
    assert!(
        o.status.success(),
        "{}: {}",
        zip.display(),
        String::from_utf8_lossy(&o.stderr)
    );
}

/// Suffix of the state file a batch keeps beside each package it made.
const STATE: &str = ".hprof-shrink-state";

/// Every file below `dir` but the packages' state files (which `has_state` checks).
fn all_files(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = walk(dir)
        .into_iter()
        .filter(|p| !p.to_string_lossy().ends_with(STATE))
        .collect();
    v.sort();
    v
}

/// The state a batch recorded for a package it made.
fn state_of(zip: &Path) -> Option<serde_json::Value> {
    let name = zip.file_name().unwrap().to_string_lossy();
    let text = std::fs::read(zip.with_file_name(format!(".{name}{STATE}"))).ok()?;
    serde_json::from_slice(&text).ok()
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

/// A package shaped like Matrix's: a `#` line and four keys, the hprof under Matrix's name.
fn matrix_zip(path: &Path, hprof: &Path, key: &str) {
    let mut w = zip::ZipWriter::new(std::fs::File::create(path).unwrap());
    let opts = zip::write::SimpleFileOptions::default();
    w.start_file("result.info", opts).unwrap();
    write!(
        w,
        "# Resource Canary Result Infomation. THIS FILE IS IMPORTANT FOR THE ANALYZER !!\nsdkVersion=23\nmanufacturer=OPPO\nhprofEntry=dump_1234_shrink.hprof\nleakedActivityKey={key}\n"
    )
    .unwrap();
    w.start_file("dump_1234_shrink.hprof", opts).unwrap();
    w.write_all(&std::fs::read(hprof).unwrap()).unwrap();
    w.start_file("extra.info", opts).unwrap();
    w.write_all(b"uin=7\n").unwrap();
    w.finish().unwrap();
}

#[test]
fn mixed_inputs_good_ones_verify_bad_ones_are_reported_exit_says_partial() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in");
    let out = dir.path().join("out");
    std::fs::create_dir_all(input.join("nested")).unwrap();
    std::fs::copy(fixture("art-api25.hprof"), input.join("a.hprof")).unwrap();
    std::fs::copy(fixture("art-api26.hprof"), input.join("nested/b.hprof")).unwrap();
    let gz = input.join("c.hprof.gz");
    let mut enc = flate2::write::GzEncoder::new(
        std::fs::File::create(&gz).unwrap(),
        flate2::Compression::fast(),
    );
    enc.write_all(&std::fs::read(fixture("synthetic-id8.hprof")).unwrap())
        .unwrap();
    enc.finish().unwrap();
    matrix_zip(
        &input.join("m.zip"),
        &fixture("art-api35-dumpdata.hprof"),
        "KEY_FROM_THE_ZIP",
    );
    let full = std::fs::read(fixture("art-api25.hprof")).unwrap();
    std::fs::write(input.join("truncated.hprof"), &full[..full.len() / 3]).unwrap();
    std::fs::write(input.join("readme.txt"), "not a dump").unwrap();

    let report = dir.path().join("report.json");
    let o = run(&[
        "batch",
        s(&input),
        "--out-dir",
        s(&out),
        "-j",
        "2",
        "--report",
        s(&report),
    ]);
    assert_eq!(
        o.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("truncated.hprof"), "{err}");

    verify(&out.join("a.zip"), &fixture("art-api25.hprof"));
    verify(&out.join("nested/b.zip"), &fixture("art-api26.hprof"));
    verify(&out.join("c.zip"), &fixture("synthetic-id8.hprof"));
    verify(&out.join("m.zip"), &fixture("art-api35-dumpdata.hprof"));
    // The Matrix package's own manifest and extra.info are kept.
    let v = run(&["verify", s(&out.join("m.zip")), "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&v.stdout).unwrap();
    let manifest = v["manifest"].as_array().unwrap();
    assert!(manifest
        .iter()
        .any(|kv| kv[0] == "leakedActivityKey" && kv[1] == "KEY_FROM_THE_ZIP"));
    assert!(manifest
        .iter()
        .any(|kv| kv[0] == "hprofEntry" && kv[1] == "dump_1234_shrink.hprof"));
    assert_eq!(v["extra"][0][0], "uin");

    let names: Vec<PathBuf> = all_files(&out)
        .into_iter()
        .map(|p| p.strip_prefix(&out).unwrap().to_path_buf())
        .collect();
    assert_eq!(
        names,
        [
            Path::new("a.zip"),
            Path::new("c.zip"),
            Path::new("m.zip"),
            Path::new("nested/b.zip")
        ]
    );

    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    assert_eq!(
        (
            r["done"].as_u64(),
            r["failed"].as_u64(),
            r["skipped"].as_u64()
        ),
        (Some(4), Some(1), Some(1))
    );
    let failed = r["entries"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["status"] == "failed")
        .unwrap();
    assert!(failed["input"]
        .as_str()
        .unwrap()
        .ends_with("truncated.hprof"));
    assert!(failed["error"].as_str().unwrap().contains("truncated"));

    // Again: everything there verifies and is kept; the failure stays a failure.
    let again = run(&[
        "batch",
        s(&input),
        "--out-dir",
        s(&out),
        "--report",
        s(&report),
        "-q",
    ]);
    assert_eq!(again.status.code(), Some(3));
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    assert_eq!(
        (r["done"].as_u64(), r["exists"].as_u64()),
        (Some(0), Some(4))
    );
}

#[test]
fn nothing_done_and_all_done_have_their_own_exit_codes() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.hprof");
    std::fs::write(&bad, b"JAVA PROFILE 1.0.2\0\0\0\0\x08").unwrap();
    let o = run(&[
        "batch",
        s(&bad),
        "--out-dir",
        s(&dir.path().join("o1")),
        "-q",
    ]);
    assert_eq!(o.status.code(), Some(4));
    let o = run(&[
        "batch",
        s(&fixture("art-api26.hprof")),
        "--out-dir",
        s(&dir.path().join("o2")),
        "-q",
    ]);
    assert_eq!(o.status.code(), Some(0));
    let o = run(&[
        "batch",
        "/nonexistent/dir",
        "--out-dir",
        s(&dir.path().join("o3")),
    ]);
    assert_eq!(o.status.code(), Some(1));
}

#[test]
fn shards_split_the_inputs_without_overlap() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in");
    std::fs::create_dir(&input).unwrap();
    for i in 0..12 {
        std::fs::copy(
            fixture("art-api26.hprof"),
            input.join(format!("d{i:02}.hprof")),
        )
        .unwrap();
    }
    let mut seen = Vec::new();
    for k in 0..3 {
        let out = dir.path().join(format!("out{k}"));
        let o = run(&[
            "batch",
            s(&input),
            "--out-dir",
            s(&out),
            "--shard",
            &format!("{k}/3"),
            "-q",
        ]);
        assert!(o.status.code() == Some(0) || o.status.code() == Some(4));
        if out.exists() {
            seen.extend(
                all_files(&out)
                    .into_iter()
                    .map(|p| p.file_name().unwrap().to_owned()),
            );
        }
    }
    seen.sort();
    let want: Vec<_> = (0..12)
        .map(|i| std::ffi::OsString::from(format!("d{i:02}.zip")))
        .collect();
    assert_eq!(seen, want, "every input in exactly one shard");
    assert_eq!(
        run(&["batch", s(&input), "--out-dir", "x", "--shard", "3/3"])
            .status
            .code(),
        Some(1)
    );
}

#[test]
fn a_batch_killed_part_way_finishes_on_the_next_run_with_nothing_partial() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in");
    let out = dir.path().join("out");
    std::fs::create_dir(&input).unwrap();
    let n = 10;
    for i in 0..n {
        std::fs::copy(
            fixture("hotspot-android.hprof"),
            input.join(format!("d{i}.hprof")),
        )
        .unwrap();
    }
    let mut child = bin()
        .args(["batch", s(&input), "--out-dir", s(&out), "-j", "1", "-q"])
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Kill once the first package is there, while others are being written.
    let t = Instant::now();
    let started = |out: &Path| out.exists() && !all_files(out).is_empty();
    while !started(&out) && t.elapsed() < Duration::from_secs(60) {
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(150));
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let after_kill = all_files(&out);
    let complete: Vec<_> = after_kill
        .iter()
        .filter(|p| p.extension().is_some_and(|e| e == "zip"))
        .collect();
    assert!(
        complete.len() < n,
        "the batch finished before the kill; make the test slower"
    );
    for p in &complete {
        verify(p, &fixture("hotspot-android.hprof"));
    }

    let o = run(&["batch", s(&input), "--out-dir", s(&out), "-j", "2"]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let files = all_files(&out);
    assert_eq!(files.len(), n, "{files:?}");
    for p in &files {
        assert!(
            p.extension().is_some_and(|e| e == "zip"),
            "left behind: {}",
            p.display()
        );
        verify(p, &fixture("hotspot-android.hprof"));
        assert!(state_of(p).is_some(), "no state for {}", p.display());
    }
    // Exactly one state file per package, nothing else hidden.
    assert_eq!(walk(&out).len(), 2 * n);
}
