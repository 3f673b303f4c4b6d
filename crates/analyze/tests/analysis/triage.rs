//! Issue 32's size questions on the scenario dumps (fixtures/README.md, "Scenarios"):
//! registered native sizes against ahat's committed answers, the triage of an
//! out-of-memory-shaped heap and of an accumulation point, and the Bitmaps of an API 28
//! heap without pixels, each against the scenario's truth (made by its construction).

use hprof_fixtures::scenarios::Scenario;
use hprof_shrink_analyze::{analyze_path, Analysis, Options, Trace};
use hprof_shrink_core::Control;
use serde_json::Value;

use super::{repo, scenario};

fn analyze(s: &Scenario, options: Options) -> Analysis {
    analyze_path(&s.dumps[0], &options, &Control::default())
        .unwrap()
        .analysis
}

fn options() -> Options {
    Options {
        pictures: false,
        ..Options::default()
    }
}

/// What ahat says (fixtures/scenarios/STEM.ahat.json): its objects.
fn ahat(stem: &str) -> Vec<Value> {
    let path = repo()
        .join("fixtures/scenarios")
        .join(format!("{stem}.ahat.json"));
    let v: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    v["objects"].as_array().unwrap().clone()
}

/// A path as the truths write it: (class, `class` or `instance`, field or none); the
/// truths' paths call an array an instance.
fn steps(t: &Trace) -> Vec<(String, String, Option<String>)> {
    t.steps
        .iter()
        .map(|s| {
            (
                s.class_name.clone(),
                if s.kind == "class" {
                    "class"
                } else {
                    "instance"
                }
                .to_string(),
                s.reference.as_ref().map(|r| r.name.clone()),
            )
        })
        .collect()
}

fn truth_steps(path: &Value) -> Vec<(String, String, Option<String>)> {
    path.as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["class"].as_str().unwrap().to_string(),
                s["type"].as_str().unwrap().to_string(),
                s["field"].as_str().map(str::to_string),
            )
        })
        .collect()
}

#[test]
fn registered_native_sizes_are_ahats() {
    let Some(s) = scenario("bitmap-native") else {
        return;
    };
    let a = analyze(&s, options());
    let objects = ahat("bitmap-native");
    let owner = s.truth.extra["nativeRetained"]["class"].as_str().unwrap();
    let want = objects.iter().find(|o| o["class"] == owner).unwrap();
    assert_eq!(a.leaks.len(), 1, "{:?}", a.leaks);
    let leak = &a.leaks[0];
    assert_eq!(leak.class_name, owner);
    assert_eq!(
        (leak.retained_bytes, leak.retained_native_bytes),
        (
            want["retainedBytes"].as_u64().unwrap(),
            want["retainedNativeBytes"].as_u64().unwrap()
        ),
        "(Java, native) retained by the leaked Activity, against ahat"
    );
    assert_eq!(
        Some(leak.retained_native_bytes),
        s.truth.extra["nativeRetained"]["retainedNativeBytes"].as_u64()
    );
    // Each Bitmap's own registered size, against ahat's.
    let triage = a.triage.as_ref().unwrap();
    let mut got: Vec<u64> = triage
        .bitmaps
        .largest
        .iter()
        .map(|b| b.native_bytes)
        .collect();
    let mut want: Vec<u64> = objects
        .iter()
        .filter(|o| o["class"] == "android.graphics.Bitmap")
        .map(|o| o["retainedNativeBytes"].as_u64().unwrap())
        .collect();
    got.sort();
    want.sort();
    assert_eq!(got, want, "registered native bytes per Bitmap");
    assert_eq!(a.dump.reachable_native_bytes, want.iter().sum::<u64>());
    assert_eq!(triage.heap_native_bytes, a.dump.reachable_native_bytes);
    // Shown apart in the text.
    let text = hprof_shrink_analyze::render::text::render(&a);
    assert!(
        text.contains("Retaining 348 bytes + 1.6 MB native in 8 objects"),
        "{text}"
    );
    // No DisplayMetrics in this heap: KOOM's constant, said so.
    assert_eq!(triage.bitmaps.large_rule, "koom");
    assert!(triage.bitmaps.screen.is_none());
}

#[test]
fn triage_names_the_cache_that_fills_an_out_of_memory_heap_first() {
    let Some(s) = scenario("oom-cache") else {
        return;
    };
    let a = analyze(&s, options());
    let top = &s.truth.extra["triage"]["topRetainer"];
    assert!(a.leaks.is_empty(), "an OOM dump without a watcher");
    let t = a.triage.as_ref().expect("the triage is always there");
    let first = &t.top_retainers[0];
    assert!(first.suspect, "{first:?}");
    let retained = first.object.retained_bytes;
    assert!(retained >= top["retainedAtLeastBytes"].as_u64().unwrap());
    assert!(
        retained as f64 >= top["minHeapFraction"].as_f64().unwrap() * t.heap_bytes as f64,
        "{retained} of {}",
        t.heap_bytes
    );
    let point = first.accumulation.as_ref().expect("an accumulation point");
    assert_eq!(
        steps(point.object.path.as_ref().unwrap()),
        truth_steps(&top["path"]),
        "the cache's path from its GC root"
    );
    // The text shows the triage first when no leak is found (after LeakCanary's
    // sections, before its own), the cache first in it.
    let text = hprof_shrink_analyze::render::text::render(&a);
    let metadata = text.find("\nMETADATA\n").unwrap();
    let triage = text.find("\nTRIAGE\n").unwrap();
    let ours = text.find("\nHPROF-SHRINK ANALYSIS\n").unwrap();
    assert!(metadata < triage && triage < ours, "{text}");
    assert!(text[ours..].contains("No leak found."), "{text}");
    let cache = text
        .find("static ThumbnailCache.sInstance → ThumbnailCache.mEntries → java.util.LinkedHashMap")
        .unwrap();
    assert!(
        text[triage..cache].matches("retains").count() == 1,
        "the cache is named by the first retainer: {text}"
    );
    // The JSON keeps it, and every list says what it left out.
    let json: Value = serde_json::from_str(&hprof_shrink_analyze::render::json(&a)).unwrap();
    let jt = &json["triage"];
    assert!(jt["topRetainers"].as_array().unwrap().len() <= 10);
    assert_eq!(
        jt["topRetainers"].as_array().unwrap().len() as u64
            + jt["topRetainersLeftOut"].as_u64().unwrap(),
        t.top_retainers.len() as u64 + t.top_retainers_left_out
    );
    assert!(jt["topRetainers"][0]["accumulation"]["path"]["steps"].is_array());
    // Duplicate Strings: each group has copies, wastes what its copies beyond the first
    // take, and the groups come by waste.
    for d in &t.duplicate_strings {
        assert!(d.count >= 2, "{d:?}");
        assert_eq!(d.wasted_bytes, d.bytes_each * (d.count - 1), "{d:?}");
    }
    assert!(t
        .duplicate_strings
        .windows(2)
        .all(|w| w[0].wasted_bytes >= w[1].wasted_bytes));
    // The largest primitive arrays are the cache's values, with their holders.
    let arrays = &t.largest_primitive_arrays;
    assert_eq!(arrays.len(), 10);
    for arr in arrays {
        assert_eq!(arr.class_name, "byte[]");
        assert_eq!(arr.shallow_bytes, 96 * 1024);
        let path = arr.path.as_ref().unwrap();
        assert_eq!(path.steps[1].class_name, "com.example.app.ThumbnailCache");
    }
}

#[test]
fn triage_finds_the_accumulation_point() {
    let Some(s) = scenario("accumulation-point") else {
        return;
    };
    let a = analyze(&s, options());
    let acc = &s.truth.extra["triage"]["accumulation"];
    let t = a.triage.as_ref().unwrap();
    let suspect = t.top_retainers.iter().find(|r| r.suspect).unwrap();
    let point = suspect.accumulation.as_ref().unwrap();
    assert_eq!(point.object.class_name, acc["pointClass"].as_str().unwrap());
    assert_eq!(
        steps(point.object.path.as_ref().unwrap()),
        truth_steps(&acc["path"])
    );
    let first = &point.dominated_by_class[0];
    assert_eq!(first.class_name, acc["accumulatedClass"].as_str().unwrap());
    assert_eq!(first.objects, acc["count"].as_u64().unwrap());
}

#[test]
fn large_bitmaps_without_pixels_are_measured_against_the_screen() {
    let Some(s) = scenario("bitmap-large-api28") else {
        return;
    };
    let a = analyze(&s, options());
    let truth = &s.truth.extra["bitmaps"];
    let b = &a.triage.as_ref().unwrap().bitmaps;
    assert_eq!(b.count, truth["count"].as_u64().unwrap());
    assert_eq!(b.native_bytes, truth["totalNativeBytes"].as_u64().unwrap());
    assert_eq!(b.java_bytes, 0);
    assert_eq!(b.large_rule, "screen");
    let screen = b.screen.as_ref().unwrap();
    assert_eq!(
        (screen.width, screen.height, screen.source.as_str()),
        (
            truth["displayMetrics"]["widthPixels"].as_u64().unwrap(),
            truth["displayMetrics"]["heightPixels"].as_u64().unwrap(),
            "DisplayMetrics"
        )
    );
    assert_eq!(
        b.large_threshold_pixels,
        truth["largeThresholdPixels"].as_u64().unwrap()
    );
    assert_eq!(b.large_count, truth["largeCount"].as_u64().unwrap());
    assert_eq!(b.large_bytes, truth["largeNativeBytes"].as_u64().unwrap());
    let mut got: Vec<(i64, i64, u64, bool, String)> = b
        .largest
        .iter()
        .map(|x| (x.width, x.height, x.native_bytes, x.large, x.config.clone()))
        .collect();
    let mut want: Vec<(i64, i64, u64, bool, String)> = truth["bitmaps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| {
            (
                x["width"].as_i64().unwrap(),
                x["height"].as_i64().unwrap(),
                x["nativeBytes"].as_u64().unwrap(),
                x["large"].as_bool().unwrap(),
                "ARGB_8888".to_string(),
            )
        })
        .collect();
    got.sort();
    want.sort();
    assert_eq!(got, want);
    for x in &b.largest {
        let path = x.path.as_ref().expect("a path");
        assert_eq!(path.steps[0].class_name, "com.example.app.ImageCache");
        assert_eq!(
            path.steps[0].reference.as_ref().map(|r| r.name.as_str()),
            Some("sBitmaps")
        );
    }
    // Without a DisplayMetrics, --screen gives the screen.
    let s2 = scenario("bitmap-native").unwrap();
    let b2 = analyze(
        &s2,
        Options {
            screen: Some((320, 240)),
            ..options()
        },
    )
    .triage
    .unwrap()
    .bitmaps;
    assert_eq!(b2.large_rule, "screen");
    assert_eq!(b2.screen.unwrap().source, "--screen");
    assert_eq!(b2.large_threshold_pixels, 84480);
    // 640x480 is over 320x240 x 1.1; 320x240 and 96x96 are not.
    assert_eq!(b2.large_count, 1);
}
