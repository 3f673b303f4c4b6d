//! The command line as a user meets it: exit codes, one-line errors, outputs that appear
//! only when complete, the summary, the JSON report and the subcommands.

mod common;

use common::*;
use hprof_fixtures::series::{self, ITEM_NODE, LIST_NODE};

#[test]
fn shrinks_a_fixture_into_a_zip_that_verifies() {
    let dir = tempfile::tempdir().unwrap();
    let zip = dir.path().join("out.zip");
    let input = fixture("art-api25.hprof");
    let o = run(&[s(&input), s(&zip)]);
    assert!(o.status.success(), "{}", stderr(&o));
    let err = stderr(&o);
    for line in [
        "input", "hprof", "zip", "dropped", "bitmaps", "manifest", "time",
    ] {
        assert!(err.contains(line), "summary lacks {line}: {err}");
    }
    let v = run(&["verify", s(&zip), "--against", s(&input)]);
    assert!(v.status.success(), "{}", stderr(&v));
    assert!(stdout(&v).contains(": OK"), "{}", stdout(&v));
    assert_eq!(names_in(dir.path()), ["out.zip"]);
}

#[test]
fn bad_input_is_one_line_a_non_zero_exit_and_no_output() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("notes.txt");
    std::fs::write(&bad, "not a heap dump\n").unwrap();
    let zip = dir.path().join("out.zip");
    let o = run(&[s(&bad), s(&zip)]);
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with("hprof-shrink: error: "), "{err}");
    assert!(err.contains("not an HPROF file"), "{err}");
    assert_eq!(names_in(dir.path()), ["notes.txt"]);
}

#[test]
fn a_missing_input_is_named() {
    let o = run(&["/nonexistent/dump.hprof", "/tmp/never.zip"]);
    failed_with(&o, 1, &["/nonexistent/dump.hprof"]);
}

#[test]
fn a_slip_in_a_subcommand_name_is_one_line_that_says_did_you_mean() {
    for (args, want) in [
        (
            vec!["inspekt", "x.hprof"],
            "inspekt: no such file; did you mean `inspect`?",
        ),
        (
            vec!["inspekt"],
            "inspekt: no such file; did you mean `inspect`?",
        ),
        (
            vec!["verfy", "x.zip"],
            "verfy: no such file; did you mean `verify`?",
        ),
        (
            vec!["bach", "in/", "--out-dir", "o"],
            "did you mean `batch`?",
        ),
    ] {
        let o = run(&args);
        let err = failed_with(&o, 2, &[want]);
        assert_eq!(err.lines().count(), 1, "{err}");
        assert_eq!(err.matches(args[0]).count(), 1, "{err}");
    }
    // A missing dump whose name is no slip is named once, on one line.
    let o = run(&["/nonexistent/dump.hprof", "/tmp/never.zip"]);
    let err = failed_with(&o, 1, &["/nonexistent/dump.hprof"]);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert_eq!(err.matches("/nonexistent/dump.hprof").count(), 1, "{err}");
    assert!(!err.contains("did you mean"), "{err}");
}

#[test]
fn usage_errors_exit_2() {
    assert_eq!(run(&[]).status.code(), Some(2));
    assert_eq!(
        run(&["a.hprof", "b.zip", "--strip", "all"]).status.code(),
        Some(2)
    );
    assert_eq!(
        run(&["a.hprof", "b.zip", "--level", "10"]).status.code(),
        Some(2)
    );
}

#[test]
fn no_output_named_is_bad_usage() {
    let dump = fixture("art-api26.hprof");
    for args in [
        vec![s(&dump)],
        vec![s(&dump), "--upload", "http://127.0.0.1:9/"],
    ] {
        let o = run(&args);
        // clap's way: the message, the usage line, exit 2 (as the README says of bad usage).
        failed_with(
            &o,
            2,
            &["--outbox", "Usage: hprof-shrink [OPTIONS] <IN.hprof>"],
        );
    }
}

#[test]
fn a_dash_for_a_file_output_of_shrink_is_bad_usage_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let dump = fixture("art-api26.hprof");
    let zip = dir.path().join("x.zip");
    for args in [
        vec![s(&dump), "-"],
        vec![s(&dump), "--hprof-out", "-"],
        vec![s(&dump), s(&zip), "--report", "-"],
    ] {
        let o = bin().current_dir(dir.path()).args(&args).output().unwrap();
        failed_with(&o, 2, &["not to stdout"]);
        assert!(!dir.path().join("-").exists(), "{args:?}");
        assert!(!zip.exists(), "{args:?}");
    }
}

#[test]
fn bad_usage_of_a_subcommand_exits_2_with_that_subcommands_usage_line() {
    let dir = tempfile::tempdir().unwrap();
    let zip = dir.path().join("x.zip");
    std::fs::write(&zip, "PK").unwrap();
    let o = run(&[
        "upload",
        s(&zip),
        "--url",
        "http://127.0.0.1:9/",
        "--header",
        "no colon",
    ]);
    let err = failed_with(&o, 2, &["--header takes 'Name: value'"]);
    assert!(err.contains("Usage: hprof-shrink upload"), "{err}");
}

#[test]
fn help_of_help_and_help_with_a_help_flag_work() {
    for args in [["help", "--help"], ["help", "-h"]] {
        let o = run(&args);
        assert!(o.status.success(), "{args:?}: {}", stderr(&o));
        let out = stdout(&o);
        assert!(out.contains("Usage: hprof-shrink help"), "{args:?}: {out}");
    }
    // The flag after a command's name: that command's help, as `help inspect` gives.
    let o = run(&["help", "inspect", "--help"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("Usage: hprof-shrink inspect"),
        "{}",
        stdout(&o)
    );
    // Every command's --help, and `help COMMAND`, succeed.
    for sub in [
        "inspect",
        "analyze",
        "verify",
        "batch",
        "upload",
        "completions",
        "serve",
        "help",
    ] {
        for args in [vec![sub, "--help"], vec![sub, "-h"], vec!["help", sub]] {
            let o = run(&args);
            assert!(o.status.success(), "{args:?}: {}", stderr(&o));
            assert!(stdout(&o).contains("Usage:"), "{args:?}");
        }
    }
}

/// Shrinks the fixture into `dir/name.zip` and copies the dump to `dir/leak.hprof`.
fn dump_and_package(dir: &std::path::Path) -> (std::path::PathBuf, std::path::PathBuf) {
    let dump = dir.join("leak.hprof");
    std::fs::copy(fixture("art-api25.hprof"), &dump).unwrap();
    let zip = dir.join("out.zip");
    let o = run(&["-q", s(&dump), s(&zip)]);
    assert!(o.status.success(), "{}", stderr(&o));
    (dump, zip)
}

#[test]
fn swapped_arguments_are_said_and_a_heap_dump_is_never_offered_to_force() {
    let dir = tempfile::tempdir().unwrap();
    let (dump, zip) = dump_and_package(dir.path());
    let original = std::fs::read(&dump).unwrap();
    let gz = dir.path().join("old.hprof.gz");
    std::fs::copy(fixture("hotspot-leaks.hprof.gz"), &gz).unwrap();
    let gz_bytes = std::fs::read(&gz).unwrap();
    // `hprof-shrink out.zip leak.hprof`: bad usage, said as such, with or without -f.
    for (out, force) in [(&dump, false), (&dump, true), (&gz, false), (&gz, true)] {
        let mut args = vec![s(&zip), s(out)];
        if force {
            args.push("-f");
        }
        let o = run(&args);
        let err = failed_with(
            &o,
            2,
            &[
                "the arguments look swapped",
                &format!("hprof-shrink {} {}", s(out), s(&zip)),
            ],
        );
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(!err.contains("use -f"), "{err}");
    }
    // A heap dump where the package goes, with a dump as the input: refused, -f or not,
    // and never a hint to force it.
    let other = dir.path().join("other.hprof");
    std::fs::copy(fixture("art-api26.hprof"), &other).unwrap();
    for force in [false, true] {
        let mut args = vec![s(&other), s(&dump)];
        if force {
            args.push("--force");
        }
        let o = run(&args);
        let err = failed_with(&o, 1, &[s(&dump), "is a heap dump"]);
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(!err.contains("use -f"), "{err}");
    }
    // At --hprof-out a heap dump is not offered to --force either; -f, given, replaces it
    // (a shrunk hprof of an earlier run is a heap dump too).
    for out in [&dump, &gz] {
        let o = run(&[s(&other), "--hprof-out", s(out)]);
        let err = failed_with(&o, 1, &[s(out), "is a heap dump"]);
        assert!(!err.contains("-f") && !err.contains("--force"), "{err}");
    }
    assert_eq!(std::fs::read(&dump).unwrap(), original);
    assert_eq!(std::fs::read(&gz).unwrap(), gz_bytes);
    assert_eq!(
        names_in(dir.path()),
        ["leak.hprof", "old.hprof.gz", "other.hprof", "out.zip"]
    );
    let o = run(&["-q", s(&other), "--hprof-out", s(&dump), "-f"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v = run(&["verify", s(&dump), "--against", s(&other)]);
    assert!(v.status.success(), "{}", stderr(&v));
    // Any other existing output still gets the hint.
    std::fs::write(dir.path().join("notes.zip"), "notes").unwrap();
    let o = run(&[s(&other), s(&dir.path().join("notes.zip"))]);
    failed_with(&o, 1, &["already exists (use -f/--force"]);
}

#[test]
fn help_explains_the_modes() {
    let o = run(&["--help"]);
    assert!(o.status.success());
    let out = stdout(&o);
    for word in [
        "--strip",
        "duplicates",
        "--dropped",
        "empty",
        "inspect",
        "verify",
        "Exit status",
    ] {
        assert!(out.contains(word), "--help lacks {word}");
    }
}

#[test]
fn hprof_out_alone_writes_only_the_hprof() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("small.hprof");
    let input = fixture("synthetic-id8.hprof");
    let o = run(&[s(&input), "--hprof-out", s(&out), "-q"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(o.stderr.is_empty(), "-q printed: {}", stderr(&o));
    assert_eq!(names_in(dir.path()), ["small.hprof"]);
    let v = run(&[
        "verify",
        s(&out),
        "--against",
        s(&input),
        "--strip",
        "bitmaps",
    ]);
    assert!(v.status.success(), "{}", stderr(&v));
}

#[test]
fn report_json_has_the_documented_fields() {
    let dir = tempfile::tempdir().unwrap();
    let zip = dir.path().join("o.zip");
    let json = dir.path().join("r.json");
    let o = run(&[
        s(&fixture("art-api25.hprof")),
        s(&zip),
        "--report",
        s(&json),
        "-q",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(r["schema"], 1);
    assert_eq!(
        r["input"]["bytes"],
        std::fs::metadata(fixture("art-api25.hprof")).unwrap().len()
    );
    assert_eq!(
        r["output"]["zip_bytes"],
        std::fs::metadata(&zip).unwrap().len()
    );
    assert_eq!(r["options"]["strip"], "bitmaps");
    assert_eq!(r["output"]["zip_compressor"], "libdeflate");
    assert_eq!(r["manifest"]["sdkVersion"], "25");
    assert_eq!(r["manifest"]["sources"]["manufacturer"], "dump");
    assert!(r["arrays"]["by_type"]
        .as_array()
        .unwrap()
        .iter()
        .any(|t| t["element_type"] == "int"));
    assert_eq!(r["bitmaps"]["merged"], 3);
    for k in ["info", "collect", "dedup", "write", "sync", "total"] {
        assert!(r["timings_ms"][k].is_u64(), "timings_ms.{k}");
    }
    let t = &r["timings_ms"];
    assert!(
        t["sync"].as_u64() <= t["write"].as_u64(),
        "the sync is part of the write"
    );
}

#[test]
fn delete_input_removes_it_only_after_the_output_verifies() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("dump.hprof");
    std::fs::copy(fixture("art-api26.hprof"), &input).unwrap();
    let zip = dir.path().join("dump.zip");
    let o = run(&[s(&input), s(&zip), "--delete-input"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("deleted"), "{}", stderr(&o));
    assert_eq!(names_in(dir.path()), ["dump.zip"]);
}

#[test]
fn inspect_prints_tables_and_json() {
    let input = fixture("art-api25.hprof");
    let o = run(&["inspect", s(&input)]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    for word in [
        "HEAP_DUMP_SEGMENT",
        "HEAP_DUMP_INFO",
        "ROOT_JNI_MONITOR",
        "int[]",
        "zygote",
        "android.graphics.Bitmap",
    ] {
        assert!(out.contains(word), "inspect lacks {word}:\n{out}");
    }
    let j = run(&["inspect", s(&input), "--json", "--top", "3"]);
    let v: serde_json::Value = serde_json::from_slice(&j.stdout).unwrap();
    assert_eq!(v["id_size"], 4);
    assert_eq!(v["format"], "1.0.3");
    assert_eq!(v["top_classes"].as_array().unwrap().len(), 3);
    assert_eq!(v["top_classes"][0]["name"], "java.lang.String");
}

#[test]
fn verify_names_the_first_violation() {
    let dir = tempfile::tempdir().unwrap();
    let zip = dir.path().join("o.zip");
    let input = fixture("art-api25.hprof");
    assert!(run(&[s(&input), s(&zip), "-q"]).status.success());
    // Against another dump: the first record differs.
    let v = run(&[
        "verify",
        s(&zip),
        "--against",
        s(&fixture("art-api26.hprof")),
    ]);
    assert_eq!(v.status.code(), Some(1));
    assert!(stderr(&v).contains("verification failed"), "{}", stderr(&v));
    // A zip without result.info.
    let bare = dir.path().join("bare.zip");
    {
        let mut w = zip::ZipWriter::new(std::fs::File::create(&bare).unwrap());
        w.start_file("dump.hprof", zip::write::SimpleFileOptions::default())
            .unwrap();
        std::io::Write::write_all(&mut w, &std::fs::read(&input).unwrap()).unwrap();
        w.finish().unwrap();
    }
    let v = run(&["verify", s(&bare)]);
    assert_eq!(v.status.code(), Some(1));
    assert!(stderr(&v).contains("result.info"), "{}", stderr(&v));
}

/// A FIFO at `path` (a file type a rename would replace, made without privileges).
fn mkfifo(path: &std::path::Path) {
    let made = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .expect("run mkfifo");
    assert!(made.success(), "mkfifo {}", path.display());
}

fn is_fifo(path: &std::path::Path) -> bool {
    use std::os::unix::fs::FileTypeExt;
    std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_fifo())
}

#[test]
fn an_output_that_is_not_a_regular_file_is_refused_and_never_replaced() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.hprof");
    std::fs::copy(fixture("art-api25.hprof"), &input).unwrap();
    let fifo = dir.path().join("fifo");
    mkfifo(&fifo);
    let link = dir.path().join("link-to-fifo");
    std::os::unix::fs::symlink(&fifo, &link).unwrap();
    let zip = dir.path().join("out.zip");
    for (i, args) in [
        vec![s(&input), s(&fifo)],
        vec![s(&input), s(&link)],
        vec![s(&input), s(&zip), "--hprof-out", s(&fifo)],
        vec![s(&input), s(&zip), "--hprof-out", s(&link)],
        vec![s(&input), s(&zip), "--report", s(&fifo)],
        vec![s(&input), s(&zip), "--report", s(&link)],
        vec![s(&input), "--hprof-out", s(&fifo)],
    ]
    .into_iter()
    .enumerate()
    {
        let o = run(&args);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(1), "case {i}: {err}");
        assert_eq!(err.lines().count(), 1, "case {i}: {err}");
        assert!(err.contains("not a regular file"), "case {i}: {err}");
        assert!(is_fifo(&fifo), "case {i}: the FIFO was replaced");
        assert_eq!(
            names_in(dir.path()),
            ["fifo", "in.hprof", "link-to-fifo"],
            "case {i}: refused before any work"
        );
    }
    // A device node, which only root can make (and which a rename as root would replace
    // as it would /dev/null).
    let null = dir.path().join("null");
    let made = std::process::Command::new("mknod")
        .args([s(&null), "c", "1", "3"])
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|st| st.success());
    if !made {
        eprintln!("skipping the device node case: cannot mknod here (not root?)");
        return;
    }
    let o = run(&[s(&input), s(&zip), "--report", s(&null)]);
    failed_with(&o, 1, &["not a regular file"]);
    use std::os::unix::fs::FileTypeExt;
    let ty = std::fs::symlink_metadata(&null).unwrap().file_type();
    assert!(ty.is_char_device(), "the device node was replaced");
    assert!(!zip.exists());
}

#[test]
fn an_existing_output_is_refused_by_name_and_replaced_with_force() {
    let dir = tempfile::tempdir().unwrap();
    let input = fixture("art-api25.hprof");
    let zip = dir.path().join("out.zip");
    let raw = dir.path().join("out.hprof");
    for (existing, args) in [
        (&zip, vec![s(&input), s(&zip)]),
        (&raw, vec![s(&input), "--hprof-out", s(&raw)]),
        (&raw, vec![s(&input), s(&zip), "--hprof-out", s(&raw)]),
    ] {
        std::fs::write(existing, "old").unwrap();
        let o = run(&args);
        let err = failed_with(&o, 1, &[s(existing), "already exists", "--force"]);
        assert_eq!(err.lines().count(), 1, "{err}");
        assert_eq!(std::fs::read(existing).unwrap(), b"old", "{args:?}");
        assert_eq!(
            names_in(dir.path()),
            [existing.file_name().unwrap().to_str().unwrap()]
        );
        for force in ["-f", "--force"] {
            let o = run(&[&args[..], &[force]].concat());
            assert!(o.status.success(), "{args:?} {force}: {}", stderr(&o));
            let v = run(&["verify", s(existing), "--against", s(&input)]);
            assert!(v.status.success(), "{}", stderr(&v));
        }
        for p in [&zip, &raw] {
            let _ = std::fs::remove_file(p);
        }
    }
}

/// Runs hprof-shrink under `umask`.
fn run_umask(umask: &str, args: &[&str]) -> std::process::Output {
    std::process::Command::new("sh")
        .args(["-c", &format!("umask {umask}; exec \"$@\""), "sh", BIN])
        .args(args)
        .output()
        .unwrap()
}

fn mode(p: &std::path::Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).unwrap().permissions().mode() & 0o7777
}

#[test]
fn outputs_get_the_mode_cp_gives_and_a_replaced_file_keeps_its_own() {
    use std::os::unix::fs::PermissionsExt;
    let input = fixture("art-api25.hprof");
    for (umask, want) in [("022", 0o644), ("077", 0o600), ("002", 0o664)] {
        let dir = tempfile::tempdir().unwrap();
        let zip = dir.path().join("out.zip");
        let raw = dir.path().join("out.hprof");
        let report = dir.path().join("r.json");
        let outbox = dir.path().join("outbox");
        let o = run_umask(
            umask,
            &[
                s(&input),
                s(&zip),
                "--hprof-out",
                s(&raw),
                "--report",
                s(&report),
                "-q",
            ],
        );
        assert!(o.status.success(), "{}", stderr(&o));
        let o = run_umask(umask, &[s(&input), "--outbox", s(&outbox), "-q"]);
        assert!(o.status.success(), "{}", stderr(&o));
        for p in [&zip, &raw, &report, &outbox.join("art-api25.zip")] {
            assert_eq!(mode(p), want, "umask {umask}: {}", p.display());
        }
        // Replaced: the destination's own mode stays, whatever the umask says.
        for p in [&zip, &raw] {
            std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o640)).unwrap();
        }
        let o = run_umask(
            umask,
            &[s(&input), s(&zip), "--hprof-out", s(&raw), "-f", "-q"],
        );
        assert!(o.status.success(), "{}", stderr(&o));
        for p in [&zip, &raw] {
            assert_eq!(mode(p), 0o640, "umask {umask}: {}", p.display());
        }
    }
}

#[test]
fn an_output_through_a_symlink_replaces_the_file_and_keeps_the_link() {
    // As `-o /dev/stdout` with stdout redirected to a file: the link is the system's.
    let dir = tempfile::tempdir().unwrap();
    let real = dir.path().join("real.zip");
    std::fs::write(&real, "old").unwrap();
    let link = dir.path().join("link.zip");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    let o = run(&[s(&fixture("art-api25.hprof")), s(&link), "--force"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let meta = std::fs::symlink_metadata(&link).unwrap();
    assert!(meta.file_type().is_symlink(), "the link was replaced");
    let v = run(&["verify", s(&real)]);
    assert!(v.status.success(), "{}", stderr(&v));
}

#[test]
fn report_may_name_neither_the_input_nor_an_output() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.hprof");
    std::fs::copy(fixture("art-api25.hprof"), &input).unwrap();
    let before = std::fs::read(&input).unwrap();
    let hard = dir.path().join("hard.hprof");
    std::fs::hard_link(&input, &hard).unwrap();
    let sym = dir.path().join("sym.hprof");
    std::os::unix::fs::symlink(&input, &sym).unwrap();
    let zip = dir.path().join("out.zip");
    let dotted = dir.path().join(".").join("out.zip");
    let raw = dir.path().join("out.hprof");
    let dotted_raw = dir.path().join(".").join("out.hprof");
    for (i, (args, named)) in [
        (vec![s(&input), s(&zip), "--report", s(&input)], "the input"),
        (vec![s(&input), s(&zip), "--report", s(&hard)], "the input"),
        (vec![s(&input), s(&zip), "--report", s(&sym)], "the input"),
        (vec![s(&input), s(&zip), "--report", s(&dotted)], "the zip"),
        (
            vec![
                s(&input),
                "--hprof-out",
                s(&raw),
                "--report",
                s(&dotted_raw),
            ],
            "--hprof-out",
        ),
    ]
    .into_iter()
    .enumerate()
    {
        let o = run(&args);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(1), "case {i}: {err}");
        assert!(err.contains(named), "case {i}: {err}");
        assert_eq!(err.lines().count(), 1, "case {i}: {err}");
        assert!(std::fs::read(&input).unwrap() == before, "case {i}");
        assert!(!zip.exists() && !raw.exists(), "case {i}: work was done");
    }
    // The zip already there (a second run) is still refused as the report.
    std::fs::write(&zip, "a package").unwrap();
    let o = run(&[s(&input), s(&zip), "--report", s(&zip)]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert_eq!(std::fs::read(&zip).unwrap(), b"a package");
}

#[test]
fn the_zip_and_hprof_out_on_one_path_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.hprof");
    std::fs::copy(fixture("art-api25.hprof"), &input).unwrap();
    let zip = dir.path().join("out.zip");
    let dotted = dir.path().join(".").join("out.zip");
    for other in [&zip, &dotted] {
        let o = run(&[
            s(&input),
            s(&zip),
            "--hprof-out",
            s(other),
            "--delete-input",
        ]);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(1), "{err}");
        assert!(err.contains("same file"), "{err}");
        assert!(input.exists(), "the input was deleted");
        assert_eq!(names_in(dir.path()), ["in.hprof"]);
    }
}

#[test]
fn hprof_entry_must_be_a_plain_file_name() {
    let dir = tempfile::tempdir().unwrap();
    let input = fixture("art-api25.hprof");
    let zip = dir.path().join("out.zip");
    for &bad in NOT_PLAIN_ENTRY_NAMES.iter().chain(&[""]) {
        let o = run(&[s(&input), s(&zip), "--hprof-entry", bad]);
        let err = stderr(&o);
        // Bad usage: the value alone is wrong, whatever the files.
        assert_eq!(o.status.code(), Some(2), "{bad:?}: {err}");
        assert!(err.contains("hprof entry name"), "{bad:?}: {err}");
        assert!(
            names_in(dir.path()).is_empty(),
            "{bad:?}: a file was written"
        );
    }
    let o = run(&[s(&input), s(&zip), "--hprof-entry", "app.hprof"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v = run(&["verify", s(&zip)]);
    assert!(v.status.success(), "{}", stderr(&v));
}

#[test]
fn an_output_in_a_missing_directory_is_blamed_without_temp_names() {
    let dir = tempfile::tempdir().unwrap();
    let input = fixture("art-api25.hprof");
    let zip = dir.path().join("nodir").join("x.zip");
    let o = run(&[s(&input), s(&zip)]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains(s(&zip)), "{err}");
    assert!(!err.contains(s(&input)), "blames the input: {err}");
    assert!(
        !err.contains("hprof-shrink-tmp"),
        "shows a temp name: {err}"
    );
}

#[test]
fn a_report_that_cannot_be_written_fails_before_the_outputs_appear() {
    let dir = tempfile::tempdir().unwrap();
    let zip = dir.path().join("out.zip");
    let report = dir.path().join("nodir").join("r.json");
    let o = run(&[
        s(&fixture("art-api25.hprof")),
        s(&zip),
        "--report",
        s(&report),
    ]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains(s(&report)), "{err}");
    assert_empty(dir.path());
}

#[test]
fn a_full_disk_under_one_of_two_outputs_names_that_output() {
    let dir = tempfile::tempdir().unwrap();
    let Some(mounted) = Tiny::mount(dir.path(), "256k") else {
        return;
    };
    let tiny = mounted.0.clone();
    let input = fixture("hotspot-android.hprof");
    let roomy_zip = dir.path().join("out.zip");
    let full_raw = tiny.join("out.hprof");
    let a = run(&[s(&input), s(&roomy_zip), "--hprof-out", s(&full_raw)]);
    let full_zip = tiny.join("out.zip");
    let roomy_raw = dir.path().join("out.hprof");
    let b = run(&[s(&input), s(&full_zip), "--hprof-out", s(&roomy_raw)]);
    let left = names_in(&tiny);
    drop(mounted);
    for (o, full, roomy) in [(a, &full_raw, &roomy_zip), (b, &full_zip, &roomy_raw)] {
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(1), "{err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains("No space left"), "{err}");
        assert!(err.contains(s(full)), "does not say which output: {err}");
        assert!(!err.contains(s(roomy)), "{err}");
        assert!(!err.contains(s(&input)), "blames the input: {err}");
    }
    assert!(left.is_empty(), "{left:?}");
    assert_eq!(names_in(dir.path()), ["tiny"]);
}

/// What the completion registered for `hprof-shrink` in a real bash offers for each line
/// (the last word being completed), run in `cwd`: the function `complete -p` names is
/// called as bash would call it, with COMP_WORDS and COMP_CWORD set.
fn bash_completes(script: &str, cwd: &std::path::Path, lines: &[&[&str]]) -> Vec<Vec<String>> {
    let mut program = format!(
        "{script}\n\
         fn=$(complete -p hprof-shrink | sed -n 's/.* -F \\([^ ]*\\) .*/\\1/p')\n\
         [[ -n $fn ]] || {{ echo 'nothing registered for hprof-shrink' >&2; exit 3; }}\n\
         at() {{ COMP_WORDS=(\"$@\"); COMP_CWORD=$(( $# - 1 )); COMPREPLY=(); \
         \"$fn\" hprof-shrink \"${{COMP_WORDS[COMP_CWORD]}}\" \"${{COMP_WORDS[COMP_CWORD-1]}}\"; \
         printf '%s\\n' \"${{COMPREPLY[@]}}\" '=='; }}\n"
    );
    for line in lines {
        let quoted: Vec<String> = line.iter().map(|w| format!("'{w}'")).collect();
        program.push_str(&format!("at hprof-shrink {}\n", quoted.join(" ")));
    }
    let o = std::process::Command::new("bash")
        .arg("-c")
        .arg(program)
        .current_dir(cwd)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    let replies: Vec<Vec<String>> = out
        .split("==\n")
        .map(|r| {
            r.lines()
                .filter(|l| !l.is_empty())
                .map(String::from)
                .collect()
        })
        .take(lines.len())
        .collect();
    assert_eq!(replies.len(), lines.len(), "{out}");
    replies
}

#[test]
fn bash_completes_subcommands_options_and_values_and_never_lists_hidden_ones() {
    let o = run(&["completions", "bash"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let script = stdout(&o);
    let cwd = tempfile::tempdir().unwrap();
    std::fs::write(cwd.path().join("dump.hprof"), "").unwrap();
    std::fs::write(cwd.path().join("notes.txt"), "").unwrap();
    let lines: &[&[&str]] = &[
        &["analyze", "--"],
        &["upload", "--"],
        &["batch", "--o"],
        &[""],
        &["--"],
        &["ins"],
        &["help", ""],
        &["analyze", "--format", ""],
        &["--strip", "d"],
        &["analyze", "d"],
    ];
    let r = bash_completes(&script, cwd.path(), lines);
    let has = |i: usize, words: &[&str]| {
        for w in words {
            assert!(
                r[i].iter().any(|c| c == w),
                "{:?}: no {w} in {:?}",
                lines[i],
                r[i]
            );
        }
    };
    let lacks = |i: usize, words: &[&str]| {
        for w in words {
            assert!(
                !r[i].iter().any(|c| c == w),
                "{:?}: {w} in {:?}",
                lines[i],
                r[i]
            );
        }
    };
    // A subcommand's options, not file names.
    has(
        0,
        &["--all-leaks", "--format", "--mapping", "--output", "--help"],
    );
    lacks(0, &["dump.hprof", "notes.txt", "--strip"]);
    has(1, &["--url", "--outbox", "--method", "--retries"]);
    has(2, &["--out-dir", "--outbox"]);
    // The top level: subcommands and the shrink's options.
    has(
        3,
        &[
            "analyze",
            "inspect",
            "batch",
            "serve",
            "completions",
            "dump.hprof",
        ],
    );
    has(4, &["--strip", "--hprof-out", "--force", "--upload"]);
    assert_eq!(r[5], ["inspect"]);
    has(6, &["analyze", "inspect"]);
    // Values.
    assert_eq!(r[7], ["text", "json", "matrix", "html", "junit"]);
    assert_eq!(r[8], ["duplicates"]);
    assert_eq!(r[9], ["dump.hprof"]);
    // Hidden commands and options are not offered.
    for i in [0, 1, 2, 3, 4, 6] {
        lacks(i, &["manpages", "--backoff-ms"]);
    }
}

#[test]
fn completions_for_every_shell_and_man_pages_come_from_the_clap_definitions() {
    for shell in ["bash", "zsh", "fish", "powershell", "elvish"] {
        let o = run(&["completions", shell]);
        assert!(o.status.success(), "{shell}: {}", stderr(&o));
        let script = stdout(&o);
        // Each registers for hprof-shrink and calls this very binary back.
        for word in ["hprof-shrink", BIN, "HPROF_SHRINK_COMPLETE"] {
            assert!(script.contains(word), "{shell}: no {word}: {script}");
        }
    }
    // Where the shells are installed: zsh reads its script, fish completes with it.
    if let Ok(o) = std::process::Command::new("zsh")
        .arg("-n")
        .arg("-c")
        .arg(stdout(&run(&["completions", "zsh"])))
        .output()
    {
        assert!(o.status.success(), "zsh: {}", stderr(&o));
    }
    if let Ok(o) = std::process::Command::new("fish")
        .arg("-c")
        .arg(format!(
            "{}\ncomplete -C 'hprof-shrink analyze --'",
            stdout(&run(&["completions", "fish"]))
        ))
        .output()
    {
        assert!(o.status.success(), "fish: {}", stderr(&o));
        let out = stdout(&o);
        assert!(
            out.contains("--all-leaks") && !out.contains("--backoff-ms"),
            "fish: {out}"
        );
    }
    let bad = run(&["completions", "tcsh"]);
    assert_eq!(bad.status.code(), Some(2));

    let dir = tempfile::tempdir().unwrap();
    let o = run(&["manpages", s(dir.path())]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        names_in(dir.path()),
        [
            "hprof-shrink-analyze.1",
            "hprof-shrink-batch.1",
            "hprof-shrink-completions.1",
            "hprof-shrink-diff.1",
            "hprof-shrink-growth.1",
            "hprof-shrink-inspect.1",
            "hprof-shrink-serve.1",
            "hprof-shrink-upload.1",
            "hprof-shrink-verify.1",
            "hprof-shrink.1"
        ]
    );
    let main = std::fs::read_to_string(dir.path().join("hprof-shrink.1")).unwrap();
    assert!(
        main.starts_with(".ie") || main.contains(".TH hprof-shrink 1"),
        "{main}"
    );
    assert!(
        main.contains("\\-\\-strip") && main.contains("\\-\\-force"),
        "{main}"
    );
    let batch = std::fs::read_to_string(dir.path().join("hprof-shrink-batch.1")).unwrap();
    assert!(batch.contains("hprof\\-shrink batch") && batch.contains("\\-\\-out\\-dir"));
    // man(1) renders it, where it is installed.
    if let Ok(o) = std::process::Command::new("man")
        .arg("-l")
        .arg(dir.path().join("hprof-shrink.1"))
        .env("MANPAGER", "cat")
        .env("MANWIDTH", "80")
        .output()
    {
        assert!(o.status.success(), "man: {}", stderr(&o));
        assert!(stdout(&o).contains("--strip"), "{}", stdout(&o));
    }
}

/// Writes `bytes` to `dir/name`, giving its path.
fn write(dir: &std::path::Path, name: &str, bytes: &[u8]) -> std::path::PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    path
}

#[test]
fn diff_command_writes_text_json_and_html() {
    // Two dumps that differ by N leaked objects of one class and one leaking Activity.
    const N: usize = 37;
    let dir = tempfile::tempdir().unwrap();
    let base = write(dir.path(), "base.hprof", &series::cache(20, false));
    let new = write(dir.path(), "new.hprof", &series::cache(20 + N, true));
    let (b, n) = (s(&base), s(&new));

    let out = run(&["diff", b, n]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("New leaks (1)"), "{text}");
    assert!(
        text.lines()
            .any(|l| l.contains("com.example.Leaked") && l.contains(&format!("+{N}"))),
        "{text}"
    );

    let json_path = dir.path().join("diff.json");
    let out = run(&["diff", b, n, "--format", "json", "-o", s(&json_path)]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json_path).unwrap()).unwrap();
    assert_eq!(v["schema"], 1);
    let leaked = v["classes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["className"] == "com.example.Leaked")
        .unwrap();
    assert_eq!(leaked["instances"], N as i64);
    assert_eq!(v["newLeaks"][0]["className"], "com.example.LeakyActivity");

    let html = dir.path().join("diff.html");
    let out = run(&["diff", b, n, "--format", "html", "-o", s(&html)]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("com.example.Leaked") && page.contains("New leaks (1)"));

    // `-o -` is stdout, for every format, and makes no file named "-".
    for format in ["text", "json", "html"] {
        let out = bin()
            .current_dir(dir.path())
            .args(["diff", b, n, "--format", format, "-o", "-"])
            .output()
            .unwrap();
        assert!(out.status.success(), "{format}");
        assert!(String::from_utf8_lossy(&out.stdout).contains("com.example.Leaked"));
        assert!(!dir.path().join("-").exists(), "{format}");
    }

    // An output that is one of the dumps is refused, and the dump kept.
    let kept = std::fs::read(&new).unwrap();
    let out = run(&["diff", b, n, "--format", "json", "-o", n]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("is the input"));
    assert_eq!(std::fs::read(&new).unwrap(), kept);

    // A dump cut short: the error names the file, which of the two it is.
    let bytes = std::fs::read(&new).unwrap();
    let cut = write(dir.path(), "cut.hprof", &bytes[..bytes.len() * 2 / 3]);
    let out = run(&["diff", b, s(&cut)]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("cut.hprof: ") && err.contains("offset"),
        "{err}"
    );

    // A missing input is one clear line and exit 1; a missing argument is usage, 2.
    let out = run(&["diff", b, s(&dir.path().join("nope.hprof"))]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("nope.hprof"));
    let out = run(&["diff", b]);
    assert_eq!(out.status.code(), Some(2));
}

/// Issue 53's eighth fault: dumps with one header time were ordered as text (1, 10, 11,
/// 2, …), so a growing series read "Not growing". Digit runs now count as numbers, and
/// stderr says the names decided.
#[test]
fn growth_orders_dumps_of_one_time_by_their_numbers() {
    const K: usize = 3;
    let dir = tempfile::tempdir().unwrap();
    for i in 1..=11 {
        write(
            dir.path(),
            &format!("dump-{i}.hprof"),
            &series::item_list(10 + i * K, 1_700_000_000_000),
        );
    }
    let out = run(&["growth", s(dir.path()), "--format", "json"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("share a header time"), "{err}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["growing"], true, "{v:#}");
    let order: Vec<String> = v["dumps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            let p = d["path"].as_str().unwrap();
            p[p.rfind('/').unwrap() + 1..].to_string()
        })
        .collect();
    let want: Vec<String> = (1..=11).map(|i| format!("dump-{i}.hprof")).collect();
    assert_eq!(order, want);
}

#[test]
fn growth_command_orders_a_directory_by_dump_time() {
    // A list growing by K items from one dump to the next.
    const K: usize = 3;
    let dir = tempfile::tempdir().unwrap();
    let dumps_dir = dir.path().join("dumps");
    std::fs::create_dir(&dumps_dir).unwrap();
    // Names in the reverse of the dumps' times: the header's time decides.
    for (name, items, t) in [
        ("c.hprof", 10, 1),
        ("b.hprof", 10 + K, 2),
        ("a.hprof", 10 + 2 * K, 3),
    ] {
        write(
            &dumps_dir,
            name,
            &series::item_list(items, 1_700_000_000_000 + t),
        );
    }
    let out = run(&["growth", s(&dumps_dir), "--format", "json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["growing"], true, "{v:#}");
    assert!(v["dumps"][0]["path"].as_str().unwrap().ends_with("c.hprof"));
    assert_eq!(v["nodes"][0]["name"], LIST_NODE);
    assert_eq!(
        v["nodes"][0]["children"][0]["increases"],
        serde_json::json!([K, K])
    );

    let out = run(&["growth", s(&dumps_dir)]);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains(&format!("╰→{LIST_NODE} (1 object)")),
        "{text}"
    );
    assert!(text.contains(ITEM_NODE), "{text}");

    let html = dir.path().join("g.html");
    let out = run(&["growth", s(&dumps_dir), "--format", "html", "-o", s(&html)]);
    assert!(out.status.success());
    assert!(std::fs::read_to_string(&html)
        .unwrap()
        .contains("ItemList.elements"));

    // An output that is one of the directory's dumps is refused, and the dump kept.
    let one = dumps_dir.join("a.hprof");
    let kept = std::fs::read(&one).unwrap();
    let out = run(&["growth", s(&dumps_dir), "-o", s(&one)]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("is the input"));
    assert_eq!(std::fs::read(&one).unwrap(), kept);

    // One dump is bad usage (exit 2); an unreadable one a failure (exit 1).
    assert_eq!(run(&["growth", s(&one)]).status.code(), Some(2));
    let bad = write(dir.path(), "bad.hprof", b"not a dump");
    let out = run(&["growth", s(&one), s(&bad)]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        run(&["growth", s(&one), s(&one), "--scenario-loops", "0"])
            .status
            .code(),
        Some(2)
    );
}
