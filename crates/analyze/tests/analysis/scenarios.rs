//! The analyzer against fixtures with known answers: each leak scenario's trace, statuses,
//! signature, retained size (ahat's, from NAME.ahat.json) and library-leak verdict; what
//! is not a leak; the duplicate-bitmap groups. The truth (NAME.leaks.json) comes from how
//! the fixture was built, not from the analyzer.

use std::path::PathBuf;

use hprof_shrink_analyze::{analyze_path, Analysis, Leak, Options};
use hprof_shrink_core::Control;
use serde_json::Value;
use sha1::Digest;

fn fixture(name: &str) -> PathBuf {
    super::repo().join("fixtures").join(name)
}

fn json(name: &str) -> Value {
    serde_json::from_slice(&std::fs::read(fixture(name)).unwrap()).unwrap()
}

fn analyze(dump: &str, key: Option<&str>) -> Analysis {
    let options = Options {
        key: key.map(str::to_string),
        all_leaks: true,
        pictures: false,
        ..Options::default()
    };
    analyze_path(&fixture(dump), &options, &Control::default())
        .unwrap()
        .analysis
}

/// The truth's root type in the analyzer's words. A Java frame of a thread that has a
/// thread object is, as LeakCanary reads it, a `<Java Local>` of that thread object (the
/// fixtures' threads all have one).
fn root_words(truth: &str) -> &'static str {
    match truth {
        "sticky class" => "system class",
        "java frame" => "thread object",
        "jni global" => "JNI global",
        "thread object" => "thread object",
        other => panic!("a root type the test does not know: {other}"),
    }
}

/// (holder class, reference, kind) of each reference on the leak's trace.
fn path_of(leak: &Leak) -> Vec<(String, String, String)> {
    leak.trace
        .steps
        .iter()
        .filter_map(|s| {
            s.reference.as_ref().map(|r| {
                let name = if r.kind == "local" {
                    "<local>".to_string()
                } else {
                    r.name.clone()
                };
                (s.class_name.clone(), name, r.kind.clone())
            })
        })
        .collect()
}

/// The truth's path as LeakCanary reads it: an `ArrayList`'s element array and index
/// (`elementData` on OpenJDK layouts, `array` on Android 6 and before) are one step,
/// `ArrayList[i]`.
fn shark_view(path: Vec<(String, String, String)>) -> Vec<(String, String, String)> {
    let mut out: Vec<(String, String, String)> = Vec::new();
    let mut i = 0;
    while i < path.len() {
        let (class, reference, kind) = &path[i];
        if class == "java.util.ArrayList"
            && (reference == "elementData" || reference == "array")
            && path.get(i + 1).is_some_and(|n| n.2 == "array")
        {
            out.push((class.clone(), path[i + 1].1.clone(), "array".into()));
            i += 2;
            continue;
        }
        out.push((class.clone(), reference.clone(), kind.clone()));
        i += 1;
    }
    out
}

fn sha1_hex(text: &str) -> String {
    sha1::Sha1::digest(text.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[allow(clippy::too_many_lines)] // a scenario, step by step
fn check_fixture(dump: &str, base: &str) {
    let truth = json(&format!("{base}.leaks.json"));
    let ahat = json(&format!("{base}.ahat.json"));
    let mut all_ids = Vec::new();
    for t in truth["leaks"].as_array().unwrap() {
        let scenario = t["scenario"].as_str().unwrap();
        let key = t["key"].as_str().unwrap();
        let id = t["objectId"].as_u64().unwrap();
        all_ids.push(id);
        let a = analyze(dump, Some(key));
        assert_eq!(a.leaks.len(), 1, "{dump} {scenario}: {:?}", a.notes);
        let leak = &a.leaks[0];
        assert_eq!(leak.object_id, id, "{dump} {scenario}");
        assert_eq!(
            leak.class_name,
            t["leakingClass"].as_str().unwrap(),
            "{dump} {scenario}"
        );
        assert_eq!(
            leak.trace.root,
            root_words(t["root"].as_str().unwrap()),
            "{dump} {scenario}"
        );
        let want: Vec<(String, String, String)> = shark_view(
            t["path"]
                .as_array()
                .unwrap()
                .iter()
                .map(|p| {
                    let f = |k: &str| p[k].as_str().unwrap().to_string();
                    (f("class"), f("reference"), f("kind"))
                })
                .collect(),
        );
        assert_eq!(path_of(leak), want, "{dump} {scenario}");
        // Statuses: the holder at the root is not leaking (a class), the object is; a
        // thread that holds it in a local is not known to be (LeakCanary: only the main
        // thread is), and shows its name.
        let steps = &leak.trace.steps;
        let first = steps.first().unwrap();
        if t["root"] == "java frame" {
            assert_eq!(first.leaking, "UNKNOWN", "{dump} {scenario}");
            assert!(
                first.labels.iter().any(|l| l.starts_with("Thread name: '")),
                "{dump} {scenario}: {:?}",
                first.labels
            );
        } else {
            assert_eq!(first.leaking, "NO", "{dump} {scenario}");
        }
        assert_eq!(steps.last().unwrap().leaking, "YES", "{dump} {scenario}");
        // The library leak, and only there.
        assert_eq!(
            leak.library_leak.as_ref().map(|l| l.pattern.as_str()),
            t["libraryLeak"].as_str(),
            "{dump} {scenario}"
        );
        // The signature: the references from the last object not leaking to the leaking
        // one. That is the root's holder (a class; a thread's local is not known to be
        // leaking, so its thread counts too), or the InputMethodManager, a singleton: its
        // View is known neither way (these fixtures' View lacks the fields LeakCanary's
        // VIEW inspector needs, so it is skipped, with a note).
        const IMM: &str = "android.view.inputmethod.InputMethodManager";
        let from = want
            .iter()
            .rposition(|(class, _, kind)| class == IMM && kind == "field")
            .unwrap_or(0);
        let mut text = String::new();
        for (class, reference, kind) in &want[from..] {
            text.push_str(class);
            text.push_str(if kind == "array" {
                "[x]"
            } else if kind == "local" {
                "<Java Local>"
            } else {
                reference
            });
        }
        if from > 0 {
            assert!(
                a.notes.iter().any(|n| n.contains("VIEW rule was skipped")),
                "{dump} {scenario}: {:?}",
                a.notes
            );
        }
        // A library leak's signature is its pattern's, LeakCanary's way (these fixtures'
        // one is an instance field); the trace's own is the formula's all the same.
        let want_signature = match t["libraryLeak"].as_str() {
            Some(pattern) => sha1_hex(&format!("instance field {pattern}")),
            None => sha1_hex(&text),
        };
        assert_eq!(leak.signature, want_signature, "{dump} {scenario}");
        assert_eq!(
            leak.trace_signature.as_deref(),
            Some(sha1_hex(&text).as_str()),
            "{dump} {scenario}"
        );
        // Retained size and count as ahat computes them.
        let o = ahat["objects"]
            .as_array()
            .unwrap()
            .iter()
            .find(|o| o["objectId"].as_u64() == Some(id))
            .unwrap_or_else(|| panic!("{base}.ahat.json has no object {id}"));
        assert_eq!(
            leak.retained_bytes,
            o["retainedBytes"].as_u64().unwrap(),
            "{dump} {scenario}"
        );
        assert_eq!(
            leak.retained_objects,
            o["retainedObjects"].as_u64().unwrap(),
            "{dump} {scenario}"
        );
        // Without the key, LeakCanary's way finds the same leak with the same signature.
        let all = analyze(dump, None);
        let same = all.leaks.iter().find(|l| l.object_id == id).unwrap();
        assert_eq!(same.signature, leak.signature, "{dump} {scenario}");
        assert_eq!(
            same.retained_bytes, leak.retained_bytes,
            "{dump} {scenario}"
        );
    }
    for t in truth["notLeaks"].as_array().unwrap() {
        let a = analyze(dump, Some(t["key"].as_str().unwrap()));
        assert!(a.leaks.is_empty(), "{dump} {}", t["scenario"]);
        assert!(
            a.notes.iter().any(|n| n.starts_with("no leak")),
            "{dump}: {:?}",
            a.notes
        );
    }
    // LeakCanary's way finds every leak and nothing else: not the weakly reachable
    // activity, not the object of a KeyedWeakReference that was never flagged retained.
    let all = analyze(dump, None);
    let mut found: Vec<u64> = all.leaks.iter().map(|l| l.object_id).collect();
    found.sort_unstable();
    all_ids.sort_unstable();
    assert_eq!(found, all_ids, "{dump}");
    let mut groups: Vec<(String, i64, i64, u64, u64)> = all
        .duplicate_bitmaps
        .iter()
        .map(|g| (g.hash.clone(), g.width, g.height, g.count, g.buffer_bytes))
        .collect();
    groups.sort();
    let mut want: Vec<(String, i64, i64, u64, u64)> = truth["bitmapGroups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| {
            (
                g["md5"].as_str().unwrap().to_string(),
                g["width"].as_i64().unwrap(),
                g["height"].as_i64().unwrap(),
                g["count"].as_u64().unwrap(),
                g["bufferBytes"].as_u64().unwrap(),
            )
        })
        .collect();
    want.sort();
    assert_eq!(groups, want, "{dump}");
}

#[test]
fn art_scenarios_have_their_known_answers() {
    check_fixture("art-leaks.hprof", "art-leaks");
}

#[test]
fn hotspot_scenarios_have_their_known_answers() {
    check_fixture("hotspot-leaks.hprof.gz", "hotspot-leaks");
}

#[test]
fn api35_dump_data_bitmaps_and_its_leak() {
    check_fixture("art-api35-dumpdata.hprof", "art-api35-dumpdata");
    let a = analyze("art-api35-dumpdata.hprof", None);
    assert!(a.duplicate_bitmaps.iter().all(|g| g.source == "dumpData"));
}

#[test]
fn api25_mbuffer_bitmaps_are_grouped_and_drawn() {
    let options = Options::default();
    let out = analyze_path(&fixture("art-api25.hprof"), &options, &Control::default()).unwrap();
    let groups = &out.analysis.duplicate_bitmaps;
    assert_eq!(groups.len(), 1, "{groups:?}");
    let g = &groups[0];
    assert_eq!(
        (g.width, g.height, g.count, g.buffer_bytes),
        (64, 48, 3, 64 * 48 * 4)
    );
    assert_eq!(
        (g.source.as_str(), g.format.as_str()),
        ("mBuffer", "ARGB_8888")
    );
    assert_eq!(g.wasted_bytes, 2 * 64 * 48 * 4);
    // The picture is a PNG of the bitmap's size.
    let (_, png) = out
        .pictures
        .iter()
        .find(|(n, _)| Some(n) == g.image.as_ref())
        .unwrap();
    let decoder = png::Decoder::new(std::io::Cursor::new(png.as_slice()));
    let reader = decoder.read_info().unwrap();
    assert_eq!((reader.info().width, reader.info().height), (64, 48));
}
