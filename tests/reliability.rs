//! Hostile input, cut-off dumps, crashes and full disks, at the command line: each bad
//! input gets one clear line and exit 1 and leaves no file; a cut-off dump can be salvaged;
//! a shrink killed at any moment leaves either nothing or a complete package; a full disk
//! is an error, not a partial file; archives cannot climb out or explode.

mod common;

use common::*;

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// Runs the binary under a 2 GiB address-space limit and a 60 s CPU limit, so a dump that
/// made it allocate or loop without bound fails the test instead of the machine.
fn bounded(args: &[&str]) -> Output {
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg("ulimit -v 2097152; ulimit -t 60; exec \"$@\"")
        .arg("sh")
        .arg(BIN)
        .args(args);
    cmd.output().expect("run")
}

fn one_line_error(o: &Output) -> String {
    assert_eq!(
        o.status.code(),
        Some(1),
        "stderr: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with("hprof-shrink: error: "), "{err}");
    err
}

#[test]
fn every_row_of_the_bad_input_table() {
    let dir = tempfile::tempdir().unwrap();
    for bad in hprof_fixtures::bad::all() {
        let input = dir.path().join(format!("{}.hprof", bad.name));
        std::fs::write(&input, &bad.bytes).unwrap();
        let out = dir.path().join("out.zip");
        let t = Instant::now();
        let o = bounded(&[s(&input), s(&out)]);
        let err = one_line_error(&o);
        for word in bad.expect {
            assert!(err.contains(word), "{}: {err:?} lacks {word:?}", bad.name);
        }
        assert!(!out.exists(), "{}: a file at the destination", bad.name);
        assert!(
            t.elapsed() < Duration::from_secs(20),
            "{}: took {:?}",
            bad.name,
            t.elapsed()
        );
        std::fs::remove_file(&input).unwrap();
    }
    assert_empty(dir.path());
}

#[test]
fn truncation_at_every_record_boundary_and_inside_every_record() {
    let full = std::fs::read(fixture("art-api25.hprof")).unwrap();
    let hprof = hprof_shrink_core::hprof::Hprof::new(&full).unwrap();
    let mut cuts = Vec::new();
    for r in hprof.records() {
        let r = r.unwrap();
        cuts.push(r.offset as usize); // at the boundary
        cuts.push(r.offset as usize + 5); // inside the record header
        cuts.push(r.offset as usize + r.raw.len() / 2 + 1); // inside the body
    }
    cuts.push(10); // inside the file header
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("cut.hprof");
    let out = dir.path().join("out.zip");
    for cut in cuts {
        std::fs::write(&input, &full[..cut.min(full.len() - 1)]).unwrap();
        let o = bounded(&[s(&input), s(&out)]);
        let err = one_line_error(&o);
        assert!(
            err.contains("truncated") || err.contains("cut off"),
            "cut at {cut}: {err}"
        );
        assert!(!out.exists());
    }
}

#[test]
fn a_cut_off_dump_is_salvaged_and_verifies() {
    let dir = tempfile::tempdir().unwrap();
    for (name, fraction) in [
        ("art-api25.hprof", 0.7),
        ("hotspot-android.hprof", 0.5),
        ("synthetic-id8.hprof", 0.9),
    ] {
        let full = std::fs::read(fixture(name)).unwrap();
        let cut_at = (full.len() as f64 * fraction) as usize;
        let input = dir.path().join(format!("cut-{name}"));
        std::fs::write(&input, &full[..cut_at]).unwrap();
        let out = dir.path().join("out.zip");
        let o = Command::new(BIN)
            .args([s(&input), s(&out)])
            .output()
            .unwrap();
        let err = one_line_error(&o);
        assert!(err.contains("--salvage"), "no hint: {err}");

        let report = dir.path().join("r.json");
        let o = Command::new(BIN)
            .args([
                s(&input),
                s(&out),
                "--salvage",
                "-q",
                "--report",
                s(&report),
            ])
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "{name}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let r: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap();
        let at = r["salvage"]["damaged_at"].as_u64().unwrap();
        assert!(
            at <= cut_at as u64 && at > cut_at as u64 / 2,
            "{name}: kept up to {at} of {cut_at}"
        );
        let v = Command::new(BIN)
            .args(["verify", s(&out), "--against", s(&input), "--json"])
            .output()
            .unwrap();
        assert!(
            v.status.success(),
            "{name}: {}",
            String::from_utf8_lossy(&v.stderr)
        );
        let v: serde_json::Value = serde_json::from_slice(&v.stdout).unwrap();
        let extra = v["extra"].as_array().unwrap();
        assert!(extra
            .iter()
            .any(|kv| kv[0] == "truncated" && kv[1] == "true"));
        assert!(extra
            .iter()
            .any(|kv| kv[0] == "truncatedAt" && kv[1].as_str() == Some(at.to_string().as_str())));
        std::fs::remove_file(&out).unwrap();
    }
}

/// A small deterministic generator for the kill moments.
struct Lcg(u64);
impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }
}

#[test]
fn killed_at_any_moment_the_shrink_leaves_nothing_or_a_complete_package() {
    let kills: usize = std::env::var("HPROF_SHRINK_KILLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200);
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.hprof");
    std::fs::copy(fixture("art-api25.hprof"), &input).unwrap();
    let before = std::fs::read(&input).unwrap();
    let out_dir = dir.path().join("out");
    std::fs::create_dir(&out_dir).unwrap();
    let out = out_dir.join("out.zip");
    // How long a whole run takes here, to spread the kills over it.
    let t = Instant::now();
    assert!(Command::new(BIN)
        .args([s(&input), s(&out), "-q"])
        .status()
        .unwrap()
        .success());
    let whole = t.elapsed().as_micros() as u64;
    std::fs::remove_file(&out).unwrap();

    let mut rng = Lcg(42);
    let (mut complete, mut nothing, mut left_temp) = (0, 0, 0);
    for _ in 0..kills {
        let mut child = Command::new(BIN)
            .args([s(&input), s(&out), "-q"])
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // Up to twice a whole run: some kills land after the end, most during it.
        std::thread::sleep(Duration::from_micros(rng.next() % (whole * 2 + 1)));
        let _ = child.kill();
        child.wait().unwrap();
        if out.exists() {
            let v = Command::new(BIN)
                .args(["verify", s(&out), "--against", s(&input)])
                .output()
                .unwrap();
            assert!(
                v.status.success(),
                "a package at the destination that does not verify: {}",
                String::from_utf8_lossy(&v.stderr)
            );
            std::fs::remove_file(&out).unwrap();
            complete += 1;
        } else {
            nothing += 1;
        }
        left_temp += names_in(&out_dir)
            .iter()
            .filter(|n| n.ends_with(".hprof-shrink-tmp"))
            .count();
    }
    assert!(
        std::fs::read(&input).unwrap() == before,
        "the input changed"
    );
    // The next run removes what killed runs left behind.
    assert!(Command::new(BIN)
        .args([s(&input), s(&out), "-q"])
        .status()
        .unwrap()
        .success());
    assert_eq!(names_in(&out_dir), ["out.zip"]);
    eprintln!("{kills} kills: {complete} left a complete package, {nothing} left none; {left_temp} temporary files seen after kills, all removed by the next run");
    assert!(nothing > 0, "no kill landed during a run");
    assert!(complete > 0, "no run completed before its kill");
}

#[test]
fn a_write_failure_is_an_error_and_leaves_no_file() {
    let dir = tempfile::tempdir().unwrap();
    let input = fixture("hotspot-android.hprof");
    // A file size limit (EFBIG). The shell leaves SIGXFSZ as it is: the tool itself must
    // turn it into a write error rather than die of it.
    let out = dir.path().join("out.zip");
    let o = Command::new("sh")
        .args([
            "-c",
            "ulimit -f 400; exec \"$@\"",
            "sh",
            BIN,
            s(&input),
            s(&out),
        ])
        .output()
        .unwrap();
    let err = one_line_error(&o);
    assert!(
        err.contains("too large") || err.contains("File too large"),
        "{err}"
    );
    assert_empty(dir.path());
}

#[test]
fn a_full_disk_is_an_error_and_leaves_no_file() {
    let dir = tempfile::tempdir().unwrap();
    // Where no tmpfs can be mounted, the EFBIG case above still covers write failures.
    let Some(mounted) = Tiny::mount(dir.path(), "256k") else {
        return;
    };
    let mnt = mounted.0.clone();
    let out = mnt.join("out.zip");
    let o = Command::new(BIN)
        .args([s(&fixture("hotspot-android.hprof")), s(&out)])
        .output()
        .unwrap();
    let listing = names_in(&mnt);
    drop(mounted);
    let err = one_line_error(&o);
    assert!(err.contains("No space left"), "{err}");
    assert!(listing.is_empty(), "{listing:?}");
}

fn batch_one(input: &Path, out: &Path, extra: &[&str]) -> serde_json::Value {
    let report = out.with_extension("json");
    let mut args = vec![
        "batch",
        s(input),
        "--out-dir",
        s(out),
        "-q",
        "--report",
        s(&report),
    ];
    args.extend_from_slice(extra);
    let o = Command::new(BIN).args(&args).output().unwrap();
    assert_eq!(
        o.status.code(),
        Some(4),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let r: serde_json::Value = serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap();
    assert_empty(out);
    r
}

#[test]
fn archives_cannot_climb_out_or_explode() {
    let dir = tempfile::tempdir().unwrap();
    let dump = std::fs::read(fixture("art-api26.hprof")).unwrap();
    let opts = zip::write::SimpleFileOptions::default();
    let zip_with = |path: &Path, entry: &str| {
        let mut w = zip::ZipWriter::new(std::fs::File::create(path).unwrap());
        w.start_file("result.info", opts).unwrap();
        write!(
            w,
            "# x\nsdkVersion=1\nmanufacturer=x\nhprofEntry={entry}\nleakedActivityKey=k\n"
        )
        .unwrap();
        w.start_file(entry, opts).unwrap();
        w.write_all(&dump).unwrap();
        w.finish().unwrap();
    };
    for (i, entry) in ["../evil.hprof", "/etc/evil.hprof"].iter().enumerate() {
        let z = dir.path().join(format!("evil{i}.zip"));
        zip_with(&z, entry);
        let r = batch_one(&z, &dir.path().join(format!("out{i}")), &[]);
        let err = r["entries"][0]["error"].as_str().unwrap();
        assert!(err.contains("leaves the archive"), "{err}");
    }
    // An entry larger than the cap, and a gzip bomb.
    let z = dir.path().join("big.zip");
    zip_with(&z, "dump.hprof");
    let r = batch_one(
        &z,
        &dir.path().join("out-big"),
        &["--max-input-size", "100000"],
    );
    assert!(
        r["entries"][0]["error"]
            .as_str()
            .unwrap()
            .contains("over the limit"),
        "{r}"
    );
    let gz = dir.path().join("bomb.hprof.gz");
    let mut enc = flate2::write::GzEncoder::new(
        std::fs::File::create(&gz).unwrap(),
        flate2::Compression::best(),
    );
    enc.write_all(b"JAVA PROFILE 1.0.2\0").unwrap();
    enc.write_all(&vec![0u8; 20 << 20]).unwrap();
    enc.finish().unwrap();
    let r = batch_one(
        &gz,
        &dir.path().join("out-bomb"),
        &["--max-input-size", "1000000"],
    );
    assert!(
        r["entries"][0]["error"]
            .as_str()
            .unwrap()
            .contains("larger than the limit"),
        "{r}"
    );
}

#[test]
fn a_closed_stdout_ends_quietly_and_a_failing_stderr_never_stops_the_work() {
    // The reader of stdout goes away before anything is written.
    let mut child = bin()
        .args(["inspect", "--json", s(&fixture("hotspot-android.hprof"))])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(141), "{}", stderr(&o));
    assert!(o.stderr.is_empty(), "{}", stderr(&o));

    // stderr on a full device: the summary cannot be written, the package and the
    // input's removal after verification happen all the same.
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.hprof");
    std::fs::copy(fixture("art-api25.hprof"), &input).unwrap();
    let out = dir.path().join("out.zip");
    let full = std::fs::File::options()
        .write(true)
        .open("/dev/full")
        .unwrap();
    let o = bin()
        .args([s(&input), s(&out), "--delete-input"])
        .stderr(full)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0));
    assert!(!input.exists(), "--delete-input was skipped");
    let v = run(&["verify", s(&out)]);
    assert!(v.status.success(), "{}", stderr(&v));
}

/// Runs the binary with `args`; fails the test if it has not finished within 20 s (a
/// FIFO opened for reading blocks until a writer comes).
fn run_bounded(args: &[&str]) -> Output {
    let mut child = bin()
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let t = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if t.elapsed() > Duration::from_secs(20) {
            child.kill().unwrap();
            panic!("hprof-shrink {args:?} hung");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

#[test]
fn a_fifo_device_or_directory_as_input_is_one_clear_line_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("dump.hprof");
    let made = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success());
    let out = dir.path().join("out.zip");
    let missing = dir.path().join("missing.hprof");
    let cases: Vec<(Vec<&str>, String)> = vec![
        (
            vec![s(&fifo), s(&out)],
            format!("{}: not a regular file (a FIFO)", fifo.display()),
        ),
        (
            vec!["inspect", s(&fifo)],
            format!("{}: not a regular file (a FIFO)", fifo.display()),
        ),
        (
            vec!["upload", "--url", "http://127.0.0.1:9/u", s(&fifo)],
            format!("{}: not a regular file", fifo.display()),
        ),
        (
            vec!["/dev/zero", s(&out)],
            "/dev/zero: not a regular file (a character device)".to_string(),
        ),
        (
            vec![s(dir.path()), s(&out)],
            format!(
                "{}: is a directory, not a heap dump or package",
                dir.path().display()
            ),
        ),
        (
            vec!["inspect", s(&missing)],
            format!("{}: No such file or directory", missing.display()),
        ),
        (
            vec![s(&missing), s(&out)],
            format!("{}: No such file or directory", missing.display()),
        ),
    ];
    for (args, want) in cases {
        let o = run_bounded(&args);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {}", stderr(&o));
        let err = stderr(&o);
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(&want), "{args:?}: {err}");
        // The path once, not twice.
        let path = want.split(": ").next().unwrap();
        assert_eq!(err.matches(path).count(), 1, "{args:?}: {err}");
        assert!(!out.exists());
    }
}

/// Offset of the first top-level record with `tag` in `dump`.
fn first_record(dump: &[u8], tag: u8) -> usize {
    let mut pos = dump.iter().position(|&b| b == 0).unwrap() + 1 + 4 + 8;
    while dump[pos] != tag {
        let len = u32::from_be_bytes(dump[pos + 5..pos + 9].try_into().unwrap());
        pos += 9 + len as usize;
    }
    pos
}

#[test]
fn salvage_takes_only_a_cut_off_end_never_damage_inside() {
    let dir = tempfile::tempdir().unwrap();
    let full = std::fs::read(fixture("art-api25.hprof")).unwrap();
    for (name, tag) in [("segment", 0x1C), ("string", 0x01)] {
        // A complete dump whose first record of this kind claims to run past the end.
        let mut bad = full.clone();
        let at = first_record(&bad, tag);
        bad[at + 5..at + 9].copy_from_slice(&0xFFFF_FF00u32.to_be_bytes());
        let input = dir.path().join(format!("{name}.hprof"));
        std::fs::write(&input, &bad).unwrap();
        let out = dir.path().join(format!("{name}.zip"));
        let o = run(&[s(&input), s(&out), "--salvage"]);
        failed_with(&o, 1, &["truncated record body"]);
        assert!(!out.exists(), "{name}: a package from a damaged dump");
    }
    // The same dump cut off in its middle is still salvaged.
    let cut = dir.path().join("cut.hprof");
    std::fs::write(&cut, &full[..full.len() / 2]).unwrap();
    let out = dir.path().join("cut.zip");
    let o = run(&[s(&cut), s(&out), "--salvage"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v = run(&["verify", s(&out), "--against", s(&cut)]);
    assert!(v.status.success(), "{}", stderr(&v));
}

#[test]
fn thread_counts_are_bounded_and_a_thread_the_system_refuses_is_a_clean_error() {
    let dir = tempfile::tempdir().unwrap();
    let input = fixture("hotspot-android.hprof");
    let out = dir.path().join("out.zip");
    for args in [
        vec![s(&input), s(&out), "--threads", "100000"],
        vec![s(&input), s(&out), "--threads", "18446744073709551615"],
        vec![
            "batch",
            s(&input),
            "--out-dir",
            s(dir.path()),
            "-j",
            "100000",
        ],
    ] {
        let o = run(&args);
        failed_with(&o, 2, &["from 0 (one per core) to 256"]);
        assert!(names_in(dir.path()).is_empty());
    }

    // Threads the system will not give (a process limit of 1, or 3, for an unprivileged
    // user): no panic; with none to spare one clean error and no file, with a few the
    // shrink does with what it gets.
    // SAFETY: getuid has no preconditions.
    if unsafe { getuid() } != 0 {
        eprintln!("skipped the process-limit part: it needs root to run as a user of its own");
        return;
    }
    let shared = tempfile::tempdir().unwrap();
    std::fs::set_permissions(
        shared.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o777),
    )
    .unwrap();
    // A user id of this run's own: the process limit counts every process of the user on
    // the machine, so a shared one (nobody) makes the test fail when anything else runs as it.
    let uid = 200_000 + std::process::id() % 100_000;
    for (limit, ok) in [("1", false), ("3", true)] {
        let out = shared.path().join(format!("out-{limit}.zip"));
        let o = Command::new("prlimit")
            .arg(format!("--nproc={limit}:{limit}"))
            .arg("setpriv")
            .arg(format!("--reuid={uid}"))
            .arg(format!("--regid={uid}"))
            .arg("--clear-groups")
            .args([BIN, s(&input), s(&out), "--threads", "8", "-q"])
            .output();
        let Ok(o) = o else {
            eprintln!("skipped the process-limit part: no prlimit");
            return;
        };
        if ok {
            assert_eq!(o.status.code(), Some(0), "limit {limit}: {}", stderr(&o));
            let v = run(&["verify", s(&out), "--against", s(&input)]);
            assert!(v.status.success(), "{}", stderr(&v));
        } else {
            let err = one_line_error(&o);
            assert!(err.contains("cannot start a thread"), "{err}");
            assert_empty(shared.path());
        }
    }
}

extern "C" {
    fn getuid() -> u32;
}

#[test]
fn an_outbox_that_does_not_exist_is_made_by_a_shrink_and_named_by_an_upload() {
    let dir = tempfile::tempdir().unwrap();
    let outbox = dir.path().join("new/outbox");
    let o = run(&[s(&fixture("art-api26.hprof")), "--outbox", s(&outbox), "-q"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(names_in(&outbox), ["art-api26.zip"]);
    let missing = dir.path().join("missing");
    let o = run(&[
        "upload",
        "--url",
        "http://127.0.0.1:9/u",
        "--outbox",
        s(&missing),
    ]);
    let err = one_line_error(&o);
    assert!(
        err.contains(&format!(
            "outbox {}: No such file or directory",
            missing.display()
        )),
        "{err}"
    );
    assert!(!err.contains("hprof-shrink-incoming"), "{err}");
}

#[test]
fn a_batch_whose_log_pipe_closes_finishes_every_dump_and_its_report() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in");
    std::fs::create_dir(&input).unwrap();
    for i in 0..6 {
        std::fs::copy(
            fixture("art-api26.hprof"),
            input.join(format!("d{i}.hprof")),
        )
        .unwrap();
    }
    let report = dir.path().join("r.json");
    let mut child = bin()
        .args([
            "batch",
            s(&input),
            "--out-dir",
            s(&dir.path().join("out")),
            "-j",
            "1",
        ])
        .args(["--report", s(&report)])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The log's reader goes away before the first line.
    drop(child.stderr.take());
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(0));
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    assert_eq!(r["done"], 6);
}
