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

/// A temporary directory with an empty `in/` for inputs and the path `out/` for packages.
fn workspace() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in");
    std::fs::create_dir(&input).unwrap();
    let out = dir.path().join("out");
    (dir, input, out)
}

/// `batch INPUTS... --out-dir OUT MORE...`
fn batch(inputs: &[&str], out: &Path, more: &[&str]) -> std::process::Output {
    let mut args = vec!["batch"];
    args.extend_from_slice(inputs);
    args.extend_from_slice(&["--out-dir", s(out)]);
    args.extend_from_slice(more);
    run(&args)
}

/// `batch INPUT --out-dir OUT --report REPORT MORE...`
fn run_batch(input: &Path, out: &Path, report: &Path, more: &[&str]) -> std::process::Output {
    batch(&[s(input)], out, &[&["--report", s(report)], more].concat())
}

/// Puts `n` copies of `fixture` into `dir` (made first) as `name(i)`.
fn copies(dir: &Path, fixture_name: &str, n: usize, name: impl Fn(usize) -> String) {
    std::fs::create_dir_all(dir).unwrap();
    for i in 0..n {
        std::fs::copy(fixture(fixture_name), dir.join(name(i))).unwrap();
    }
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
    let (dir, input, out) = workspace();
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
    let o = batch(&[s(&input)], &out, &["-j", "2", "--report", s(&report)]);
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
    let again = run_batch(&input, &out, &report, &["-q"]);
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
    let o = batch(&[s(&bad)], &dir.path().join("o1"), &["-q"]);
    assert_eq!(o.status.code(), Some(4));
    let o = batch(
        &[s(&fixture("art-api26.hprof"))],
        &dir.path().join("o2"),
        &["-q"],
    );
    assert_eq!(o.status.code(), Some(0));
    let o = batch(&["/nonexistent/dir"], &dir.path().join("o3"), &[]);
    assert_eq!(o.status.code(), Some(1));
}

#[test]
fn shards_split_the_inputs_without_overlap() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in");
    copies(&input, "art-api26.hprof", 12, |i| format!("d{i:02}.hprof"));
    let mut seen = Vec::new();
    for k in 0..3 {
        let out = dir.path().join(format!("out{k}"));
        let o = batch(&[s(&input)], &out, &["--shard", &format!("{k}/3"), "-q"]);
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
    // Bad usage (exit 2), said before anything about the inputs.
    for (bad, missing) in [("3/3", s(&input)), ("1", "/nonexistent/dumps")] {
        let o = batch(&[missing], Path::new("x"), &["--shard", bad]);
        let err = String::from_utf8_lossy(&o.stderr).into_owned();
        assert_eq!(o.status.code(), Some(2), "{bad}: {err}");
        assert!(
            err.contains("--shard") && (err.contains("K/N") || err.contains("K < N")),
            "{err}"
        );
        assert!(err.contains("Usage: hprof-shrink batch"), "{err}");
    }
}

#[test]
fn a_batch_killed_part_way_finishes_on_the_next_run_with_nothing_partial() {
    let (_dir, input, out) = workspace();
    let n = 10;
    copies(&input, "hotspot-android.hprof", n, |i| {
        format!("d{i}.hprof")
    });
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

    let o = batch(&[s(&input)], &out, &["-j", "2"]);
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

/// The report of a batch run as JSON, and each input's status by file name.
fn batch_report(report: &Path) -> (serde_json::Value, Vec<(String, String)>) {
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(report).unwrap()).unwrap();
    let mut st: Vec<(String, String)> = r["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            let name = Path::new(e["input"].as_str().unwrap())
                .file_name()
                .unwrap()
                .to_string_lossy()
                .into_owned();
            (name, e["status"].as_str().unwrap().to_string())
        })
        .collect();
    st.sort();
    (r, st)
}

fn pairs(v: &[(&str, &str)]) -> Vec<(String, String)> {
    v.iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect()
}

#[test]
fn a_redumped_input_or_other_options_make_the_package_again() {
    let (dir, input, out) = workspace();
    let report = dir.path().join("r.json");
    let leak = input.join("leak.hprof");
    std::fs::copy(fixture("art-api25.hprof"), &leak).unwrap();
    std::fs::copy(fixture("art-api26.hprof"), input.join("other.hprof")).unwrap();
    let batch = |more: &[&str]| {
        let mut a = vec!["batch", s(&input), "--out-dir", s(&out), "-q", "--report"];
        a.push(s(&report));
        a.extend_from_slice(more);
        let o = run(&a);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        batch_report(&report).1
    };
    assert_eq!(
        batch(&[]),
        pairs(&[("leak.hprof", "done"), ("other.hprof", "done")])
    );
    assert_eq!(
        batch(&[]),
        pairs(&[("leak.hprof", "exists"), ("other.hprof", "exists")])
    );

    // The app dumps again under the same name: another heap.
    std::fs::copy(fixture("hotspot-android.hprof"), &leak).unwrap();
    assert_eq!(
        batch(&[]),
        pairs(&[("leak.hprof", "done"), ("other.hprof", "exists")])
    );
    verify(&out.join("leak.zip"), &leak);

    // A re-dump of the same size with the old modification time: only the dump's own
    // timestamp in its header differs, and that is enough.
    let mtime = std::fs::metadata(&leak).unwrap().modified().unwrap();
    let mut bytes = std::fs::read(&leak).unwrap();
    let ts = bytes.iter().position(|&b| b == 0).unwrap() + 1 + 4;
    bytes[ts + 7] ^= 0xFF;
    std::fs::write(&leak, &bytes).unwrap();
    std::fs::File::options()
        .write(true)
        .open(&leak)
        .unwrap()
        .set_modified(mtime)
        .unwrap();
    assert_eq!(
        batch(&[]),
        pairs(&[("leak.hprof", "done"), ("other.hprof", "exists")])
    );
    verify(&out.join("leak.zip"), &leak);

    // Other options make other packages.
    assert_eq!(
        batch(&["--strip", "strings"]),
        pairs(&[("leak.hprof", "done"), ("other.hprof", "done")])
    );
    // A package put there by something else is not taken for done.
    std::fs::remove_file(out.join(format!(".other.zip{STATE}"))).unwrap();
    assert_eq!(
        batch(&["--strip", "strings"]),
        pairs(&[("leak.hprof", "exists"), ("other.hprof", "done")])
    );
}

#[test]
fn colliding_names_stay_with_their_inputs_when_inputs_are_added() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    let out = dir.path().join("out");
    std::fs::create_dir(&a).unwrap();
    std::fs::create_dir(&b).unwrap();
    std::fs::copy(fixture("art-api26.hprof"), b.join("leak.hprof")).unwrap();
    let o = batch(&[s(&b)], &out, &["-q"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let first = state_of(&out.join("leak.zip")).unwrap();
    // An input under another root with the same name, sorting first, joins the batch.
    std::fs::copy(fixture("art-api25.hprof"), a.join("leak.hprof")).unwrap();
    let report = dir.path().join("r.json");
    let o = batch(&[s(&a), s(&b)], &out, &["-q", "--report", s(&report)]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    // b/leak.hprof keeps leak.zip (not redone); a/leak.hprof gets a name of its own.
    assert_eq!(state_of(&out.join("leak.zip")).unwrap(), first);
    verify(&out.join("leak.zip"), &b.join("leak.hprof"));
    let (_, st) = batch_report(&report);
    assert_eq!(
        st,
        pairs(&[("leak.hprof", "done"), ("leak.hprof", "exists")])
    );
    let zips: Vec<PathBuf> = all_files(&out);
    assert_eq!(zips.len(), 2, "{zips:?}");
    let other = zips.iter().find(|p| !p.ends_with("leak.zip")).unwrap();
    verify(other, &a.join("leak.hprof"));
}

#[test]
fn one_bad_entry_fails_alone_and_the_output_directory_is_not_an_input() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in");
    std::fs::create_dir_all(input.join("sub")).unwrap();
    std::fs::copy(fixture("art-api26.hprof"), input.join("a.hprof")).unwrap();
    std::fs::copy(fixture("art-api25.hprof"), input.join("sub/b.hprof")).unwrap();
    std::os::unix::fs::symlink(input.join("gone.hprof"), input.join("dangling.hprof")).unwrap();
    std::os::unix::fs::symlink(&input, input.join("sub/loop")).unwrap();
    // The output directory inside the input directory.
    let out = input.join("shrunk");
    let report = dir.path().join("r.json");
    for round in 0..2 {
        let o = run_batch(&input, &out, &report, &[]);
        assert_eq!(o.status.code(), Some(3), "round {round}: {}", stderr(&o));
        let err = stderr(&o);
        assert!(err.contains("dangling.hprof"), "{err}");
        assert!(err.contains("loop"), "{err}");
        let (r, st) = batch_report(&report);
        let want = if round == 0 { "done" } else { "exists" };
        assert_eq!(
            st,
            pairs(&[
                ("a.hprof", want),
                ("b.hprof", want),
                ("dangling.hprof", "failed"),
                ("loop", "failed")
            ]),
            "round {round}"
        );
        assert_eq!(r["failed"], 2);
    }
    // Nothing below the output directory was taken for an input.
    let names: Vec<PathBuf> = all_files(&out)
        .into_iter()
        .map(|p| p.strip_prefix(&out).unwrap().to_path_buf())
        .collect();
    assert_eq!(names, [Path::new("a.zip"), Path::new("sub/b.zip")]);
}

/// Runs the binary as an unprivileged user, so that file modes apply (root reads
/// everything): `setpriv` to nobody when root, as is when not. None, with the reason
/// printed, where that cannot be done.
fn unprivileged(args: &[&str]) -> Option<std::process::Output> {
    // SAFETY: getuid has no preconditions.
    let root = unsafe { libc_getuid() } == 0;
    let mut c = if root {
        if std::process::Command::new("setpriv")
            .arg("--version")
            .output()
            .is_err()
        {
            eprintln!("skipped: running as root and no setpriv to drop privileges");
            return None;
        }
        let mut c = std::process::Command::new("setpriv");
        c.args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "--",
            BIN,
        ]);
        c
    } else {
        std::process::Command::new(BIN)
    };
    Some(c.args(args).env("NO_PROXY", "*").output().unwrap())
}

extern "C" {
    #[link_name = "getuid"]
    fn libc_getuid() -> u32;
}

#[test]
fn an_unreadable_dump_or_directory_is_a_failure_not_a_skip() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    let input = dir.path().join("in");
    std::fs::create_dir_all(input.join("locked")).unwrap();
    std::fs::copy(fixture("art-api26.hprof"), input.join("a.hprof")).unwrap();
    std::fs::copy(fixture("art-api25.hprof"), input.join("secret.hprof")).unwrap();
    std::fs::copy(fixture("art-api25.hprof"), input.join("locked/c.hprof")).unwrap();
    std::fs::set_permissions(
        input.join("secret.hprof"),
        std::fs::Permissions::from_mode(0o000),
    )
    .unwrap();
    std::fs::set_permissions(input.join("locked"), std::fs::Permissions::from_mode(0o000)).unwrap();
    let out = dir.path().join("out");
    std::fs::create_dir(&out).unwrap();
    std::fs::set_permissions(&out, std::fs::Permissions::from_mode(0o777)).unwrap();
    let report = dir.path().join("r.json");
    let Some(o) = unprivileged(&[
        "batch",
        s(&input),
        "--out-dir",
        s(&out),
        "--report",
        s(&report),
    ]) else {
        return;
    };
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(o.status.code(), Some(3), "{err}");
    let (_, st) = batch_report(&report);
    assert_eq!(
        st,
        pairs(&[
            ("a.hprof", "done"),
            ("locked", "failed"),
            ("secret.hprof", "failed")
        ]),
        "{err}"
    );
    assert!(err.contains("ermission denied"), "{err}");
}

#[test]
fn a_second_batch_on_the_same_output_directory_or_outbox_is_refused() {
    let (dir, input, out) = workspace();
    let outbox = dir.path().join("outbox");
    std::fs::create_dir(&out).unwrap();
    std::fs::create_dir(&outbox).unwrap();
    std::fs::copy(fixture("art-api26.hprof"), input.join("a.hprof")).unwrap();
    // Another batch holds the directory (the lock a batch takes, held by this test).
    for (held, other_out) in [(&out, &out), (&outbox, &dir.path().join("out2"))] {
        let lock = std::fs::File::open(held).unwrap();
        lock.try_lock().unwrap();
        let o = batch(&[s(&input)], other_out, &["--outbox", s(&outbox)]);
        assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
        let err = stderr(&o);
        let want = format!("{}: another hprof-shrink batch is using it", held.display());
        assert!(err.contains(&want), "{err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(names_in(&outbox).is_empty());
        drop(lock);
    }
    let o = batch(&[s(&input)], &out, &["--outbox", s(&outbox)]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(names_in(&outbox), ["a.zip"]);
}

#[test]
fn two_batches_at_once_queue_every_package_once() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in");
    let outbox = dir.path().join("outbox");
    copies(&input, "hotspot-android.hprof", 8, |i| {
        format!("d{i}.hprof")
    });
    let start = |out: &str| {
        bin()
            .args(["batch", s(&input), "--out-dir"])
            .arg(dir.path().join(out))
            .args(["-j", "1", "-q", "--outbox", s(&outbox)])
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let (a, b) = (start("out-a"), start("out-b"));
    let codes: Vec<Option<i32>> = [a, b]
        .into_iter()
        .map(|c| c.wait_with_output().unwrap().status.code())
        .collect();
    // Started together (each takes about a second here): one runs, the other is refused.
    let mut sorted = codes.clone();
    sorted.sort();
    assert_eq!(sorted, [Some(0), Some(1)], "{codes:?}");
    let mut queued = names_in(&outbox);
    queued.sort();
    let want: Vec<String> = (0..8).map(|i| format!("d{i}.zip")).collect();
    assert_eq!(queued, want);
}

#[test]
fn a_salvaged_dump_says_so_on_its_own_line() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in");
    std::fs::create_dir(&input).unwrap();
    let full = std::fs::read(fixture("art-api25.hprof")).unwrap();
    std::fs::write(input.join("cut.hprof"), &full[..full.len() / 2]).unwrap();
    std::fs::copy(fixture("art-api26.hprof"), input.join("whole.hprof")).unwrap();
    let report = dir.path().join("r.json");
    let o = batch(
        &[s(&input)],
        &dir.path().join("out"),
        &["--salvage", "-j", "1", "--report", s(&report)],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let err = stderr(&o);
    let line = err
        .lines()
        .find(|l| l.contains("cut.hprof ->"))
        .unwrap_or_else(|| panic!("no line for cut.hprof: {err}"));
    assert!(line.contains("salvaged: cut off at offset"), "{line}");
    let whole = err.lines().find(|l| l.contains("whole.hprof ->")).unwrap();
    assert!(!whole.contains("salvaged"), "{whole}");
    let (r, _) = batch_report(&report);
    let salvaged: Vec<&serde_json::Value> = r["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| !e["salvaged"].is_null())
        .collect();
    assert_eq!(salvaged.len(), 1);
}

#[test]
fn the_batch_report_may_replace_neither_an_input_nor_a_package() {
    let (dir, input, out) = workspace();
    std::fs::copy(fixture("art-api26.hprof"), input.join("x.hprof")).unwrap();
    let before = std::fs::read(input.join("x.hprof")).unwrap();
    // The input by its own path and through a symlink; a package the batch will write.
    let link = dir.path().join("link.hprof");
    std::os::unix::fs::symlink(input.join("x.hprof"), &link).unwrap();
    for (report, what) in [
        (input.join("x.hprof"), "is the input"),
        (link.clone(), "is the input"),
        (out.join("x.zip"), "is the package"),
    ] {
        let o = run_batch(&input, &out, &report, &[]);
        failed_with(&o, 1, &[what]);
        assert_eq!(std::fs::read(input.join("x.hprof")).unwrap(), before);
        assert!(!out.exists() || all_files(&out).is_empty());
    }
}

#[test]
fn a_name_stays_with_its_input_when_the_other_input_is_gone() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    let out = dir.path().join("out");
    copies(&a, "art-api25.hprof", 1, |_| "leak.hprof".into());
    copies(&b, "art-api26.hprof", 1, |_| "leak.hprof".into());
    let o = batch(&[s(&a), s(&b)], &out, &["-q"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let zips = all_files(&out);
    assert_eq!(zips.len(), 2);
    let a_zip = std::fs::read(out.join("leak.zip")).unwrap();
    // a/leak.hprof is processed and deleted; b alone comes again.
    std::fs::remove_file(a.join("leak.hprof")).unwrap();
    let report = dir.path().join("r.json");
    let o = batch(&[s(&b)], &out, &["-q", "--report", s(&report)]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let (_, st) = batch_report(&report);
    assert_eq!(st, pairs(&[("leak.hprof", "exists")]));
    // a's package is untouched: b did not take its name.
    assert!(std::fs::read(out.join("leak.zip")).unwrap() == a_zip);
    assert_eq!(all_files(&out), zips);
}

#[test]
fn a_gz_input_reports_its_ratio_against_the_dump_and_shows_both_sizes() {
    let (dir, input, out) = workspace();
    let dump = std::fs::read(fixture("hotspot-android.hprof")).unwrap();
    let gz = input.join("d.hprof.gz");
    let mut enc = flate2::write::GzEncoder::new(
        std::fs::File::create(&gz).unwrap(),
        flate2::Compression::best(),
    );
    enc.write_all(&dump).unwrap();
    enc.finish().unwrap();
    let gz_bytes = std::fs::metadata(&gz).unwrap().len();
    let report = dir.path().join("r.json");
    let o = run_batch(&input, &out, &report, &[]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let r: serde_json::Value = serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap();
    let e = &r["entries"][0];
    let zip_bytes = std::fs::metadata(out.join("d.zip")).unwrap().len();
    assert_eq!(e["input_bytes"], gz_bytes);
    assert_eq!(e["dump_bytes"], dump.len() as u64);
    let ratio = e["ratio"].as_f64().unwrap();
    let want = zip_bytes as f64 / dump.len() as f64;
    assert!((ratio - want).abs() < 1e-9, "{ratio} vs {want}");
    // The line names both sizes; the table's size column is the dump's.
    let err = stderr(&o);
    let line = err.lines().find(|l| l.contains("d.hprof.gz ->")).unwrap();
    assert!(
        line.contains("hprof.gz") && line.contains("unpacked"),
        "{line}"
    );
    assert!(line.contains(&format!("{:.1}%", want * 100.0)), "{line}");
}

#[test]
fn the_batch_bar_counts_bytes_as_the_passes_advance_not_only_when_a_file_ends() {
    let (_dir, input, out) = workspace();
    big_dump(&input.join("a.hprof"));
    // A terminal for stderr (script(1)), so that the bar is drawn.
    let cmd = format!(
        "{BIN} batch {} --out-dir {} -j 1 --strip none --level 9",
        s(&input),
        s(&out)
    );
    let o = std::process::Command::new("script")
        .args(["-qfec", &cmd, "/dev/null"])
        .output()
        .expect("script(1), from util-linux");
    assert!(o.status.success(), "{}", stdout(&o));
    let screen = stdout(&o);
    // Every drawing of the bar while the one file is still in work: "0/1 files [...] DONE
    // UNIT/TOTAL UNIT ...". Its byte count must take more values than "0 B" and the total.
    let mut counts: Vec<String> = screen
        .split(['\r', '\n'])
        .filter_map(|l| l.split_once("0/1 files ["))
        .filter_map(|(_, rest)| rest.split_once("] "))
        .filter_map(|(_, bytes)| bytes.split_once('/'))
        .map(|(done, _)| done.trim().to_string())
        .collect();
    counts.dedup();
    assert!(counts.len() >= 3, "{counts:?}\n{screen}");
}
