//! SIGINT, SIGTERM and SIGHUP stop a run cleanly: temporary files go, the exit status is
//! 128 + the signal's number, stderr says "cancelled"; a batch stopped so leaves a report
//! that matches its output directory, and the next run finishes it. Temporary files a
//! killed run left are removed by the next run, which says so.

mod common;

use common::*;

use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

fn temp_files(dir: &Path) -> Vec<String> {
    names_in(dir)
        .into_iter()
        .filter(|n| n.ends_with(".hprof-shrink-tmp"))
        .collect()
}

/// Waits until `ready` holds (the run is in the middle of its work), then sends `signal`
/// and waits for the exit.
fn signal_when(mut child: Child, signal: i32, ready: impl Fn() -> bool) -> std::process::Output {
    let t = Instant::now();
    while !ready() {
        assert!(
            t.elapsed() < Duration::from_secs(60),
            "the run never got going"
        );
        if let Some(status) = child.try_wait().unwrap() {
            panic!("finished ({status}) before it could be signalled");
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    // SAFETY: kill(2) on our own child's pid.
    unsafe {
        libc::kill(child.id() as i32, signal);
    }
    let t = Instant::now();
    let out = child.wait_with_output().unwrap();
    assert!(
        t.elapsed() < Duration::from_secs(10),
        "took {:?} to stop",
        t.elapsed()
    );
    out
}

#[test]
fn a_signal_removes_the_temporary_files_and_exits_128_plus_its_number() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.hprof");
    big_dump(&input);
    for (signal, code) in [
        (libc::SIGINT, 130),
        (libc::SIGTERM, 143),
        (libc::SIGHUP, 129),
    ] {
        let child = bin()
            .args([s(&input), s(&dir.path().join("out.zip"))])
            .args(["--hprof-out", s(&dir.path().join("out.hprof"))])
            .args(["--strip", "none", "--level", "9", "--threads", "1"])
            .stderr(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let o = signal_when(child, signal, || temp_files(dir.path()).len() == 2);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(code), "signal {signal}: {err}");
        assert_eq!(err, "hprof-shrink: cancelled\n", "signal {signal}");
        assert_eq!(names_in(dir.path()), ["in.hprof"], "signal {signal}");
    }
}

fn zips_in(dir: &Path) -> Vec<String> {
    names_in(dir)
        .into_iter()
        .filter(|n| n.ends_with(".zip"))
        .collect()
}

#[test]
fn a_signalled_batch_leaves_a_report_that_matches_its_packages_and_the_next_run_finishes() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in");
    std::fs::create_dir(&input).unwrap();
    big_dump(&input.join("a.hprof"));
    for name in ["b.hprof", "c.hprof"] {
        std::fs::copy(input.join("a.hprof"), input.join(name)).unwrap();
    }
    let out = dir.path().join("out");
    let report = dir.path().join("r.json");
    let batch = || {
        let mut c = bin();
        c.args(["batch", s(&input), "--out-dir", s(&out), "-j", "1", "-q"])
            .args(["--strip", "none", "--level", "9", "--report", s(&report)]);
        c
    };
    let child = batch()
        .stderr(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    // One package made, the next being written.
    let o = signal_when(child, libc::SIGTERM, || {
        out.exists() && zips_in(&out).len() == 1 && temp_files(&out).len() == 1
    });
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(143), "{err}");
    assert!(err.ends_with("hprof-shrink: cancelled\n"), "{err}");
    assert!(temp_files(&out).is_empty(), "{:?}", names_in(&out));
    // The report names exactly the packages there, each of which verifies.
    let r: serde_json::Value = serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap();
    assert_eq!(r["cancelled"], true);
    let done: Vec<PathBuf> = r["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            assert_eq!(e["status"], "done", "{e}");
            PathBuf::from(e["output"].as_str().unwrap())
        })
        .collect();
    assert_eq!(done, [out.join("a.zip")]);
    assert_eq!(zips_in(&out), ["a.zip"]);
    let v = run(&["verify", s(&out.join("a.zip"))]);
    assert!(v.status.success(), "{}", stderr(&v));
    // The next run finishes the rest.
    let o = batch().output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(zips_in(&out), ["a.zip", "b.zip", "c.zip"]);
}

#[test]
fn a_temporary_file_a_killed_run_left_is_removed_and_named() {
    let dir = tempfile::tempdir().unwrap();
    let stale = dir.path().join(".out.zip.Ab12Cd.hprof-shrink-tmp");
    std::fs::write(&stale, "half a package").unwrap();
    let o = run(&[
        s(&fixture("art-api25.hprof")),
        s(&dir.path().join("out.zip")),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!stale.exists());
    let said = format!("{}{}", stdout(&o), stderr(&o));
    assert!(
        said.contains("removed") && said.contains(s(&stale)),
        "{said}"
    );
    assert_eq!(names_in(dir.path()), ["out.zip"]);
}
