//! `hprof-shrink analyze`: the invariant (a package analyzes as its dump does), the
//! outputs (text, JSON, Matrix, HTML), deobfuscation, and errors.

mod common;

use std::path::{Path, PathBuf};

use common::{bin, fixture, run, s, stderr, stdout};
use hprof_shrink_analyze::{analyze_path, Analysis, Options};
use hprof_shrink_core::Control;

fn analyze(path: &Path, key: Option<&str>) -> Analysis {
    let options = Options {
        key: key.map(str::to_string),
        all_leaks: true,
        pictures: false,
        ..Options::default()
    };
    analyze_path(path, &options, &Control::default())
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .analysis
}

fn key_of(dump: &Path) -> Option<String> {
    let facts = dump.with_extension("facts.json");
    let text = std::fs::read_to_string(facts).ok()?;
    let v: serde_json::Value = serde_json::from_str(&text).ok()?;
    v["leakedActivityKey"].as_str().map(str::to_string)
}

/// What shrinking must not change: each leak's object, signature and trace (classes,
/// references, statuses), and each duplicate-bitmap group with its instances.
fn essence(a: &Analysis) -> (Vec<String>, Vec<String>) {
    let mut leaks: Vec<String> = a
        .leaks
        .iter()
        .map(|l| {
            let steps: Vec<String> = l
                .trace
                .steps
                .iter()
                .map(|s| {
                    format!(
                        "{} {} {} -{}->",
                        s.class_name,
                        s.kind,
                        s.leaking,
                        s.reference.as_ref().map_or("", |r| r.name.as_str())
                    )
                })
                .collect();
            format!(
                "{:#x} {} {} {} | {}",
                l.object_id,
                l.class_name,
                l.signature,
                l.trace.root,
                steps.join(" ")
            )
        })
        .collect();
    leaks.sort();
    let mut bitmaps: Vec<String> = a
        .duplicate_bitmaps
        .iter()
        .map(|g| {
            let ids: Vec<String> = g
                .instances
                .iter()
                .map(|i| format!("{:#x}", i.object_id))
                .collect();
            format!(
                "{} {}x{} {} {} {}",
                g.hash,
                g.width,
                g.height,
                g.buffer_bytes,
                g.count,
                ids.join(",")
            )
        })
        .collect();
    bitmaps.sort();
    (leaks, bitmaps)
}

/// Every dump this test can find: the fixtures, and the shared corpus when it is there.
fn dumps() -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(fixture(""))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            let n = p.file_name().unwrap().to_string_lossy();
            n.ends_with(".hprof") || n.ends_with(".hprof.gz")
        })
        .collect();
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus");
    match std::fs::read_dir(&corpus) {
        Ok(dir) => out.extend(
            dir.map(|e| e.unwrap().path())
                .filter(|p| p.extension().is_some_and(|e| e == "hprof")),
        ),
        Err(_) => println!("skipping the corpus: {} is not there", corpus.display()),
    }
    out.sort();
    out
}

#[test]
fn a_package_analyzes_as_its_dump() {
    let dir = tempfile::tempdir().unwrap();
    let mut checked = 0;
    for dump in dumps() {
        let name = dump.file_name().unwrap().to_string_lossy().into_owned();
        // Robustness fixtures of shapes no runtime writes are not analysis inputs.
        if name.contains("odd") || name.contains("bad") {
            continue;
        }
        let zip = dir.path().join(format!("{name}.zip"));
        // The shrink takes a dump; a gzipped one is unpacked first.
        let plain = if name.ends_with(".gz") {
            let out = dir.path().join(name.trim_end_matches(".gz"));
            let mut gz = flate2::read::GzDecoder::new(std::fs::File::open(&dump).unwrap());
            std::io::copy(&mut gz, &mut std::fs::File::create(&out).unwrap()).unwrap();
            out
        } else {
            dump.clone()
        };
        let o = run(&[s(&plain), s(&zip), "-q"]);
        assert!(o.status.success(), "{name}: {}", stderr(&o));
        let key = key_of(&dump);
        let original = analyze(&dump, key.as_deref());
        let package = analyze(&zip, key.as_deref());
        assert_eq!(essence(&package), essence(&original), "{name}");
        assert!(package.input.shrunk && !original.input.shrunk, "{name}");
        assert!(package.notes.iter().any(|n| n.contains("shrunk")), "{name}");
        // Retained sizes only lose the dropped arrays' bytes.
        for (p, o) in package.leaks.iter().zip(&original.leaks) {
            assert!(p.retained_bytes <= o.retained_bytes, "{name}");
        }
        assert!(
            package.dump.reachable_bytes <= original.dump.reachable_bytes,
            "{name}"
        );
        checked += 1;
    }
    assert!(checked >= 4, "only {checked} dumps checked");
}

#[test]
fn text_shows_the_trace_signature_and_retained_size() {
    let dump = fixture("hotspot-android.hprof");
    let key = key_of(&dump).unwrap();
    let o = run(&["analyze", s(&dump), "--key", &key]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(text.contains("1 leak found."), "{text}");
    assert!(text.contains("GC Root: "), "{text}");
    assert!(text.contains("Leaking: YES"), "{text}");
    assert!(text.contains("Leaking: NO"), "{text}");
    assert!(text.contains("~~~"), "suspect reference underlined: {text}");
    let sig = text
        .lines()
        .find_map(|l| l.strip_prefix("Signature: "))
        .unwrap();
    assert_eq!(sig.len(), 40);
    assert!(text.contains("Retaining "), "{text}");
}

#[test]
fn json_is_the_versioned_schema() {
    let dump = fixture("hotspot-android.hprof");
    let key = key_of(&dump).unwrap();
    let o = run(&["analyze", s(&dump), "--key", &key, "--format", "json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let a: Analysis = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(a.schema, hprof_shrink_analyze::SCHEMA_VERSION);
    assert_eq!(a.finder, "matrix-key");
    assert_eq!(a.leaks.len(), 1);
    assert_eq!(a.leaks[0], analyze(&dump, Some(&key)).leaks[0]);
}

#[test]
fn matrix_writes_result_json_and_pictures() {
    let dir = tempfile::tempdir().unwrap();
    let dump = fixture("hotspot-android.hprof");
    let zip = dir.path().join("p.zip");
    let o = run(&[s(&dump), s(&zip), "-q", "--extra", "appVersion=1.2.3"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = dir.path().join("m");
    let o = run(&["analyze", s(&zip), "--format", "matrix", "-o", s(&out)]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("result.json")).unwrap()).unwrap();
    assert_eq!(v["activityLeakResult"]["leakFound"], true);
    let chain = v["activityLeakResult"]["referenceChain"]
        .as_array()
        .unwrap();
    assert!(!chain.is_empty());
    assert_eq!(v["extraInfo"]["appVersion"], "1.2.3");
    let entries = v["duplicatedBitmapResult"]["duplicatedBitmapEntries"]
        .as_array()
        .unwrap();
    assert!(!entries.is_empty());
    for e in entries {
        let png = std::fs::read(
            out.join("buffer_contents")
                .join(format!("{}.png", e["bufferHash"].as_str().unwrap())),
        )
        .unwrap();
        assert!(png.starts_with(b"\x89PNG\r\n\x1a\n"));
    }
    // Written again over an older result: none of the older files stay, and nothing is
    // left beside it.
    std::fs::write(out.join("buffer_contents").join("old.png"), b"old").unwrap();
    let o = run(&["analyze", s(&zip), "--format", "matrix", "-o", s(&out)]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!out.join("buffer_contents").join("old.png").exists());
    assert!(out.join("result.json").exists());
    let mut beside: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    beside.sort();
    assert_eq!(beside, ["m", "p.zip"]);
}

/// Issue 53's first fault: `--format matrix -o DIR` moved DIR aside and removed it, with
/// the dump it held and every other file. Now a directory holding an input is refused by
/// any name, one holding other files needs --force, and even then only Matrix's two
/// entries change.
#[test]
fn matrix_output_never_removes_what_the_directory_held() {
    let dir = tempfile::tempdir().unwrap();
    let dumps = dir.path().join("dumps");
    std::fs::create_dir(&dumps).unwrap();
    let dump = dumps.join("x.hprof");
    std::fs::copy(fixture("hotspot-android.hprof"), &dump).unwrap();
    std::fs::write(dumps.join("notes.txt"), "mine").unwrap();
    let listing = |d: &Path| {
        let mut names: Vec<String> = std::fs::read_dir(d)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    };
    let before = listing(&dumps);
    // The directory holding the input, by its name, from inside it, and with --force.
    for (cwd, out, force) in [
        (dir.path(), "dumps", false),
        (dir.path(), "dumps", true),
        (dumps.as_path(), "../dumps", true),
        (dumps.as_path(), ".", true),
    ] {
        let mut cmd = bin();
        cmd.current_dir(cwd)
            .args(["analyze", s(&dump), "--format", "matrix", "-v", "-o", out]);
        if force {
            cmd.arg("--force");
        }
        let o = cmd.output().unwrap();
        assert_eq!(o.status.code(), Some(1), "{out} {force}: {}", stderr(&o));
        assert!(stderr(&o).contains("holds the input"), "{}", stderr(&o));
        assert!(
            !stderr(&o).contains("index"),
            "refused before the work: {}",
            stderr(&o)
        );
        assert_eq!(listing(&dumps), before, "{out} {force}");
        assert_eq!(listing(dir.path()), ["dumps"], "nothing left beside");
    }
    // A directory of other files, the input elsewhere: refused without --force ...
    let other = dir.path().join("other");
    std::fs::create_dir(&other).unwrap();
    std::fs::write(other.join("keep.hprof"), b"JAVA PROFILE 1.0.2\0").unwrap();
    let o = run(&["analyze", s(&dump), "--format", "matrix", "-o", s(&other)]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("keep.hprof"), "{}", stderr(&o));
    assert_eq!(listing(&other), ["keep.hprof"]);
    // ... and with it, gets Matrix's two entries beside what it held, written again the same.
    for _ in 0..2 {
        let o = run(&[
            "analyze",
            s(&dump),
            "--format",
            "matrix",
            "-f",
            "-o",
            s(&other),
        ]);
        assert!(o.status.success(), "{}", stderr(&o));
        assert_eq!(
            listing(&other),
            ["buffer_contents", "keep.hprof", "result.json"]
        );
    }
    assert_eq!(
        std::fs::read(other.join("keep.hprof")).unwrap(),
        b"JAVA PROFILE 1.0.2\0"
    );
    // A file where the directory goes: bad usage.
    let o = run(&[
        "analyze",
        s(&dump),
        "--format",
        "matrix",
        "-o",
        s(&dumps.join("notes.txt")),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert_eq!(std::fs::read(dumps.join("notes.txt")).unwrap(), b"mine");
}

/// Issue 53's second fault: a report written over a heap dump or package that is not an
/// input. Refused for every command and format, even with --force; another existing file
/// is replaced only with --force.
#[test]
fn a_report_never_replaces_a_dump_or_package_and_another_file_only_with_force() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a.hprof");
    let b = dir.path().join("b.hprof");
    std::fs::copy(fixture("hotspot-android.hprof"), &a).unwrap();
    std::fs::copy(fixture("hotspot-android.hprof"), &b).unwrap();
    let victim = dir.path().join("victim.hprof");
    std::fs::copy(fixture("hotspot-android.hprof"), &victim).unwrap();
    let zip = dir.path().join("some.zip");
    let o = run(&[s(&a), s(&zip), "-q"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let kept = |p: &Path| std::fs::read(p).unwrap();
    let (victim_bytes, zip_bytes) = (kept(&victim), kept(&zip));
    for target in [&victim, &zip] {
        let t = s(target);
        for args in [
            vec!["analyze", s(&a), "--format", "json", "-o", t, "-f"],
            vec!["analyze", s(&a), "--format", "html", "-o", t, "--force"],
            vec!["analyze", s(&a), "-o", t],
            vec!["diff", s(&a), s(&b), "-o", t, "-f"],
            vec!["growth", s(&a), s(&b), "--format", "json", "-o", t, "-f"],
        ] {
            let o = bin().args(&args).arg("-v").output().unwrap();
            assert_eq!(o.status.code(), Some(1), "{args:?}: {}", stderr(&o));
            assert!(
                stderr(&o).contains("heap dump or package"),
                "{}",
                stderr(&o)
            );
            assert!(
                !stderr(&o).contains("index"),
                "before the work: {}",
                stderr(&o)
            );
        }
    }
    assert_eq!(kept(&victim), victim_bytes);
    assert_eq!(kept(&zip), zip_bytes);
    // Another existing file: --force replaces it, its absence says how.
    let report = dir.path().join("r.json");
    std::fs::write(&report, "old").unwrap();
    let o = run(&["analyze", s(&a), "--format", "json", "-o", s(&report)]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("--force"), "{}", stderr(&o));
    assert_eq!(kept(&report), b"old");
    let o = run(&["analyze", s(&a), "--format", "json", "-o", s(&report), "-f"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(kept(&report).starts_with(b"{"));
}

/// Issue 53's eleventh fault: `-o /dev/null` and `-o /dev/stdout` were refused as
/// "invalid"; a device is written through, and a directory is bad usage (exit 2).
#[test]
fn reports_go_to_devices_and_a_directory_is_bad_usage() {
    let dump = fixture("hotspot-android.hprof");
    for dev in ["/dev/null", "/dev/stdout"] {
        for cmd in [
            vec!["analyze", s(&dump), "--format", "json", "-o", dev],
            vec!["analyze", s(&dump), "--format", "html", "-o", dev],
            vec!["diff", s(&dump), s(&dump), "-o", dev],
        ] {
            let o = bin().args(&cmd).output().unwrap();
            assert!(o.status.success(), "{cmd:?}: {}", stderr(&o));
            if dev == "/dev/stdout" && cmd.contains(&"json") {
                let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
                assert!(v["leaks"].is_array());
            }
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let o = run(&["analyze", s(&dump), "-o", s(dir.path())]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("is a directory"), "{}", stderr(&o));
}

#[test]
fn html_is_one_page_with_the_pictures_inside() {
    let dir = tempfile::tempdir().unwrap();
    let dump = fixture("hotspot-android.hprof");
    let page = dir.path().join("a.html");
    let key = key_of(&dump).unwrap();
    let o = run(&[
        "analyze",
        s(&dump),
        "--key",
        &key,
        "--format",
        "html",
        "-o",
        s(&page),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.starts_with("<!DOCTYPE html>"));
    assert!(html.contains("data:image/png;base64,"));
    assert!(html.contains("LeakyActivity"));
    // Nothing fetched from elsewhere: it opens offline.
    assert!(!html.contains("src=\"http") && !html.contains("href=\"http"));
}

#[test]
fn a_mapping_deobfuscates_names_and_the_signature_follows() {
    let dir = tempfile::tempdir().unwrap();
    let dump = fixture("hotspot-android.hprof");
    let key = key_of(&dump).unwrap();
    let plain = analyze(&dump, Some(&key));
    let leak = &plain.leaks[0];
    // Pretend the dump's leaking class is the obfuscated name of another.
    let mapping = dir.path().join("mapping.txt");
    std::fs::write(
        &mapping,
        format!(
            "com.example.RealActivity -> {}:\n    int[] mState -> mBigState\n",
            leak.class_name
        ),
    )
    .unwrap();
    let o = run(&[
        "analyze",
        s(&dump),
        "--key",
        &key,
        "--format",
        "json",
        "--mapping",
        s(&mapping),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let a: Analysis = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(a.leaks[0].class_name, "com.example.RealActivity");
    let last = a.leaks[0].trace.steps.last().unwrap();
    assert_eq!(last.class_name, "com.example.RealActivity");
    // The signature hashes the suspect references' class and reference names as shown.
    let mut text = String::new();
    for st in &a.leaks[0].trace.steps {
        if let Some(r) = st.reference.as_ref().filter(|r| r.suspect) {
            text.push_str(&st.class_name);
            text.push_str(if r.kind == "array" { "[x]" } else { &r.name });
        }
    }
    use sha1::Digest;
    let expected: String = sha1::Sha1::digest(text.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    assert_eq!(a.leaks[0].signature, expected);
    // A directory given as the mapping is said to be one, in a mapping's words.
    let o = run(&["analyze", s(&dump), "--mapping", s(dir.path())]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("not an R8/ProGuard mapping"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn not_a_dump_is_one_clear_line() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("notes.txt");
    std::fs::write(&f, "hello").unwrap();
    let o = run(&["analyze", s(&f)]);
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("not a heap dump"), "{err}");
    let empty = dir.path().join("empty.hprof");
    std::fs::write(&empty, "").unwrap();
    let o = run(&["analyze", s(&empty)]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("the file is empty"), "{}", stderr(&o));
    let o = run(&["analyze", s(&dir.path().join("missing.hprof"))]);
    assert_eq!(o.status.code(), Some(1));
}

#[test]
fn batch_analyze_writes_an_analysis_beside_each_package() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let report = dir.path().join("report.json");
    let dump = fixture("hotspot-android.hprof");
    let args = [
        "batch",
        s(&dump),
        "--out-dir",
        s(&out),
        "--analyze",
        "-q",
        "--report",
        s(&report),
    ];
    let o = run(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    let result = out.join("hotspot-android.analysis.json");
    let a: Analysis = serde_json::from_slice(&std::fs::read(&result).unwrap()).unwrap();
    // The package's result.info carries the key, so Matrix's way finds the one leak.
    assert_eq!(a.finder, "matrix-key");
    assert_eq!(a.leaks.len(), 1);
    let r: serde_json::Value = serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap();
    assert_eq!(r["entries"][0]["analysis"], s(&result));
    assert_eq!(r["entries"][0]["leaks"], 1);
    // A package found done keeps its analysis.
    let before = std::fs::metadata(&result).unwrap().modified().unwrap();
    let o = run(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        std::fs::metadata(&result).unwrap().modified().unwrap(),
        before
    );
}

#[test]
fn damaged_dumps_are_one_line_errors_never_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    let mut inputs: Vec<(String, Vec<u8>)> = hprof_fixtures::bad::all()
        .into_iter()
        .map(|b| (b.name.to_string(), b.bytes))
        .collect();
    // And fixtures cut off at points inside records of every kind.
    for name in ["art-api25.hprof", "hotspot-android.hprof"] {
        let bytes = std::fs::read(fixture(name)).unwrap();
        for cut in [
            40,
            1000,
            bytes.len() / 3,
            bytes.len() / 2 + 7,
            bytes.len() - 5,
        ] {
            inputs.push((format!("{name}@{cut}"), bytes[..cut].to_vec()));
        }
    }
    for (name, bytes) in inputs {
        let input = dir.path().join("in.hprof");
        std::fs::write(&input, &bytes).unwrap();
        let o = run(&["analyze", s(&input)]);
        match o.status.code() {
            Some(0) => {}
            Some(1) => {
                let err = stderr(&o);
                assert_eq!(err.lines().count(), 1, "{name}: {err}");
                assert!(err.starts_with("hprof-shrink: error: "), "{name}: {err}");
            }
            other => panic!("{name}: exit {other:?}: {}", stderr(&o)),
        }
    }
}

#[test]
fn a_class_whose_superclass_is_missing_still_has_its_instances_sized() {
    use hprof_fixtures::{ArtBuilder, Heap, Options as Art, Ty, Val};
    // Two classes of the same fields, one whose superclass is not in the dump (as in a
    // dump cut short): no layout to follow references with, but the same instance size.
    let mut b = ArtBuilder::new(Art::default());
    let object = b.declare_class("java.lang.Object", 0, &[], &[]);
    let whole = b.declare_class("com.example.Whole", object, &[("x", Ty::Int)], &[]);
    let orphan = b.declare_class("com.example.Orphan", 0xdead_0000, &[("x", Ty::Int)], &[]);
    for class in [object, whole, orphan] {
        b.dump_class(class, Heap::App);
    }
    for class in [whole, orphan] {
        let id = b.instance(class, Heap::App, &[("x", Val::Int(7))]);
        b.root_jni_global(id, id + 1);
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("orphan.hprof");
    std::fs::write(&path, b.finish()).unwrap();
    let a = analyze(&path, None);
    let bytes_of = |name: &str| {
        a.dump
            .top_classes
            .iter()
            .find(|c| c.class_name == name)
            .map(|c| (c.instances, c.shallow_bytes))
    };
    let whole = bytes_of("com.example.Whole").expect("Whole in the top classes");
    assert_eq!(whole.0, 1);
    assert!(whole.1 > 0);
    assert_eq!(bytes_of("com.example.Orphan"), Some(whole));
}

#[test]
fn dash_as_the_output_is_stdout_and_writes_no_file() {
    let dir = tempfile::tempdir().unwrap();
    let dump = fixture("hotspot-android.hprof");
    let key = key_of(&dump).unwrap();
    for format in ["text", "json", "html"] {
        let o = bin()
            .current_dir(dir.path())
            .args([
                "analyze",
                s(&dump),
                "--key",
                &key,
                "--format",
                format,
                "-o",
                "-",
            ])
            .output()
            .unwrap();
        assert!(o.status.success(), "{format}: {}", stderr(&o));
        let out = stdout(&o);
        assert!(out.contains("LeakyActivity"), "{format}: {out}");
        assert!(
            !dir.path().join("-").exists(),
            "{format} wrote a file named -"
        );
    }
    // A directory cannot go to stdout: refused before the analysis, in one line.
    let o = bin()
        .current_dir(dir.path())
        .args(["analyze", s(&dump), "--format", "matrix", "-o", "-"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("-o DIR"), "{}", stderr(&o));
    assert!(!dir.path().join("-").exists());
}

#[test]
fn an_output_that_is_the_input_or_cannot_be_written_is_refused_before_the_work() {
    let dir = tempfile::tempdir().unwrap();
    let dump = dir.path().join("v.hprof");
    std::fs::copy(fixture("hotspot-android.hprof"), &dump).unwrap();
    let before = std::fs::read(&dump).unwrap();
    // The dump itself, by its name, through `./`, and as the default page's name.
    let page = dir.path().join("v.html");
    std::fs::copy(&dump, &page).unwrap();
    let cases: Vec<Vec<&str>> = vec![
        vec!["analyze", "v.hprof", "-o", "v.hprof"],
        vec!["analyze", "v.hprof", "--format", "json", "-o", "./v.hprof"],
        vec!["analyze", "v.html", "--format", "html"],
    ];
    for args in cases {
        let o = bin()
            .current_dir(dir.path())
            .args(&args)
            .arg("-v")
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(1), "{args:?}: {}", stderr(&o));
        assert!(
            stderr(&o).contains("is the input"),
            "{args:?}: {}",
            stderr(&o)
        );
        // Refused before the analysis: -v prints no step.
        assert!(!stderr(&o).contains("index"), "{args:?}: {}", stderr(&o));
    }
    assert_eq!(std::fs::read(&dump).unwrap(), before);
    assert_eq!(std::fs::read(&page).unwrap(), before);
    // A directory that is not there: said before the work too.
    let o = bin()
        .current_dir(dir.path())
        .args(["analyze", "v.hprof", "-v", "-o", "missing/a.txt"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("does not exist"), "{}", stderr(&o));
    assert!(!stderr(&o).contains("index"), "{}", stderr(&o));
}

/// `--skip`: what is left out is named and nothing else changes. Skipping the triage sums
/// only the leaks' subtrees, so their retained sizes (Java, native, objects) and the dump's
/// totals must equal those of the whole analysis; skipping the duplicate Strings empties
/// that list alone.
#[test]
fn skipped_parts_are_named_and_the_rest_is_unchanged() {
    use hprof_shrink_analyze::Skip;
    let with = |path: &Path, skip: Skip| {
        let options = Options {
            all_leaks: true,
            pictures: false,
            skip,
            ..Options::default()
        };
        let a = analyze_path(path, &options, &Control::default())
            .unwrap()
            .analysis;
        serde_json::to_value(a).unwrap()
    };
    let (mut retained_leaks, mut duplicate_values) = (0, 0);
    for dump in dumps() {
        let whole = with(&dump, Skip::default());
        let name = dump.display();
        // The triage skipped: no triage, the dump says so, everything else equal.
        let mut lean = with(
            &dump,
            Skip {
                triage: true,
                duplicate_strings: false,
            },
        );
        assert!(lean.get("triage").is_none_or(|t| t.is_null()), "{name}");
        assert_eq!(
            lean["dump"]["skipped"],
            serde_json::json!(["triage"]),
            "{name}"
        );
        lean["dump"].as_object_mut().unwrap().remove("skipped");
        let mut expected = whole.clone();
        expected.as_object_mut().unwrap().remove("triage");
        lean.as_object_mut().unwrap().remove("triage");
        assert_eq!(lean, expected, "{name}: more than the triage changed");
        retained_leaks += whole["leaks"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|l| l["retainedBytes"].as_u64() > Some(0))
            .count();
        // The duplicate Strings skipped: that list alone is empty.
        let mut no_strings = with(
            &dump,
            Skip {
                triage: false,
                duplicate_strings: true,
            },
        );
        assert_eq!(
            no_strings["dump"]["skipped"],
            serde_json::json!(["duplicateStrings"])
        );
        assert_eq!(
            no_strings["triage"]["duplicateStrings"],
            serde_json::json!([]),
            "{name}"
        );
        let mut expected = whole.clone();
        duplicate_values += expected["triage"]["duplicateStrings"]
            .as_array()
            .map_or(0, Vec::len);
        for a in [&mut no_strings, &mut expected] {
            a["dump"].as_object_mut().unwrap().remove("skipped");
            let t = a["triage"].as_object_mut().unwrap();
            t.remove("duplicateStrings");
            t.remove("duplicateStringsLeftOut");
        }
        assert_eq!(
            no_strings, expected,
            "{name}: more than the duplicate Strings changed"
        );
    }
    // Not vacuous: leaks with retained sizes, and duplicate Strings, were compared.
    assert!(
        retained_leaks > 0 && duplicate_values > 0,
        "{retained_leaks} {duplicate_values}"
    );
}

#[test]
fn skip_is_said_in_the_text_and_refuses_an_unknown_part() {
    let dump = fixture("hotspot-android.hprof");
    let o = run(&["analyze", s(&dump), "--skip", "triage,duplicate-strings"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(
        text.contains("Skipped on request (--skip): the triage."),
        "{text}"
    );
    assert!(!text.contains("TRIAGE"), "{text}");
    let o = run(&["analyze", s(&dump), "--skip", "leaks"]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("triage"), "{}", stderr(&o));
}
