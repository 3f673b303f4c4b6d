//! The command line as a user meets it: exit codes, one-line errors, outputs that appear
//! only when complete, the summary, the JSON report and the subcommands.

mod common;

use common::*;

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
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("/nonexistent/dump.hprof"),
        "{}",
        stderr(&o)
    );
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
fn no_output_named_is_an_error() {
    let o = run(&[s(&fixture("art-api26.hprof"))]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("--hprof-out"), "{}", stderr(&o));
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
