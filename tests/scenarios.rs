//! The scenario dumps (hprof_fixtures::scenarios: Android-shaped heaps made at test time by
//! the Java generator in fixtures/java and by the ART builder) against their truth, so that
//! neither rots: every trace of the truth is a path in the dump (classes, fields, indices,
//! roots), the fields that decide an inspector's verdict hold the values the truth says, the
//! unreachable objects are unreachable, the stand-in classes have every field Shark requires,
//! and the sizes, bitmaps, diff and growth data are what the dumps hold. Then the committed
//! answers of LeakCanary's Shark 2.14 (fixtures/scenarios/STEM.shark.json, remade by
//! scripts/shark-oracle.sh) agree with the truth: the same leaks, traces, statuses, reasons,
//! suspects, library patterns, unreachable objects and metadata, and every signature equal
//! to LeakCanary's formula computed from the truth's path. Nothing here runs the analyzer.
//!
//! Without a JDK (java and javac on PATH) the HotSpot scenarios are skipped, saying so.

mod heap_model;

use heap_model::Model;
use hprof_fixtures::scenarios::truth::{self, Check, Found, Mode, Obj, Trace, Truth};
use hprof_fixtures::scenarios::{Error, Generator, Scenario, Source, SPECS};
use hprof_shrink_core::hprof::Value;
use serde_json::Value as Json;
use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::path::{Path, PathBuf};

fn generator() -> &'static Generator {
    Generator::shared(Path::new(env!("CARGO_TARGET_TMPDIR")).join("scenarios"))
}

/// The scenario, or None (with the reason printed) when this machine cannot make it.
fn scenario(name: &str) -> Option<Scenario> {
    match generator().get(name) {
        Ok(s) => Some(s),
        Err(Error::Unavailable(why)) => {
            eprintln!("skipping scenario {name}: {why}");
            None
        }
        Err(Error::Failed(why)) => panic!("scenario {name}: {why}"),
    }
}

fn committed(file: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/scenarios")
        .join(file)
}

/// The fields Shark 2.14 requires (reads with `!!`) on the stand-in framework classes,
/// declared by the class itself (research/inspectors.md; metadata.md for Build): a stand-in
/// that loses one makes Shark fail the whole analysis.
const REQUIRED: &[(&str, &[&str])] = &[
    ("android.app.Activity", &["mDestroyed"]),
    ("android.content.ContextWrapper", &["mBase"]),
    ("android.app.ContextImpl", &["mOuterContext"]),
    (
        "android.app.ActivityThread",
        &["mServices", "mNewActivities", "mBoundApplication"],
    ),
    ("android.app.ActivityThread$AppBindData", &["appInfo"]),
    (
        "android.app.ActivityThread$ActivityClientRecord",
        &["nextIdle", "activity"],
    ),
    ("android.content.pm.ApplicationInfo", &["processName"]),
    ("android.util.ArrayMap", &["mArray"]),
    (
        "android.view.View",
        &[
            "mContext",
            "mParent",
            "mAttachInfo",
            "mWindowAttachCount",
            "mID",
        ],
    ),
    (
        "android.view.ViewRootImpl",
        &["mView", "mContext", "mWindowAttributes"],
    ),
    (
        "android.view.WindowManager$LayoutParams",
        &["mTitle", "type"],
    ),
    (
        "android.view.Window",
        &["mDestroyed", "mContext", "mCallback"],
    ),
    ("android.app.Dialog", &["mDecor"]),
    ("android.widget.Toast", &["mTN"]),
    ("android.widget.Toast$TN", &["mWM", "mView"]),
    ("android.app.Fragment", &["mFragmentManager", "mTag"]),
    (
        "android.support.v4.app.Fragment",
        &["mFragmentManager", "mTag"],
    ),
    (
        "androidx.fragment.app.Fragment",
        &[
            "mFragmentManager",
            "mLifecycleRegistry",
            "mTag",
            "mMaxState",
            "mCalled",
        ],
    ),
    ("androidx.lifecycle.LifecycleRegistry", &["mState"]),
    ("android.os.MessageQueue", &["mQuitting", "mMessages"]),
    (
        "android.os.Message",
        &["what", "when", "obj", "callback", "target", "next"],
    ),
    ("android.os.Handler", &["mLooper"]),
    ("android.os.Looper", &["mThread", "mQueue"]),
    ("androidx.compose.runtime.Recomposer", &["_state"]),
    ("kotlinx.coroutines.flow.StateFlowImpl", &["_state"]),
    ("androidx.compose.runtime.CompositionImpl", &["disposed"]),
    ("androidx.arch.core.internal.SafeIterableMap", &["mStart"]),
    (
        "androidx.arch.core.internal.SafeIterableMap$Entry",
        &["mKey", "mValue", "mNext"],
    ),
    (
        "android.util.DisplayMetrics",
        &["widthPixels", "heightPixels"],
    ),
    ("android.graphics.Bitmap", &["mWidth", "mHeight"]),
    ("sun.misc.Cleaner", &["thunk"]),
    (
        "libcore.util.NativeAllocationRegistry$CleanerThunk",
        &["this$0"],
    ),
    ("libcore.util.NativeAllocationRegistry", &["size"]),
    (
        "leakcanary.KeyedWeakReference",
        &[
            "key",
            "description",
            "watchUptimeMillis",
            "retainedUptimeMillis",
        ],
    ),
    (
        "com.squareup.leakcanary.KeyedWeakReference",
        &["key", "name"],
    ),
    ("java.lang.Thread", &["name"]),
    ("java.lang.Enum", &["name"]),
];

/// Threads whose locals Shark never follows (its ignored thread-local patterns).
const IGNORED_THREADS: &[&str] = &["main", "FinalizerWatchdogDaemon", "LeakCanary-Heap-Dump"];

/// The leaks and the rest of a scenario: its dumps against its truth, then Shark's
/// committed answers against the truth.
fn check(name: &str) {
    let Some(s) = scenario(name) else {
        return;
    };
    let t = &s.truth;
    assert_eq!(t.schema, 1, "{name}");
    assert!(!t.dumps.is_empty(), "{name}: no dump");
    let mut models = Vec::new();
    for dump in &t.dumps {
        let data = std::fs::read(s.dump(dump)).unwrap_or_else(|e| panic!("{dump}: {e}"));
        assert!(
            data.len() < 8 << 20,
            "{dump}: {} bytes, past the few MB a scenario may take",
            data.len()
        );
        let m = Model::load(&data);
        let ctx = format!("{name} {dump}");
        check_build(&m, t, &ctx);
        check_required_fields(&m, &ctx);
        let reach = Reach::new(&m);
        let e = t.expect_for(dump);
        for (mode, expect) in [("kwr", &e.kwr), ("filter", &e.filter)] {
            check_mode_in_dump(&m, &reach, expect, &format!("{ctx} {mode}"));
        }
        if let Some(head) = t.head.as_ref().and_then(|h| h.expect.get(dump)) {
            for (mode, expect) in [("kwr", &head.kwr), ("filter", &head.filter)] {
                if let Some(expect) = expect {
                    check_mode_in_dump(&m, &reach, expect, &format!("{ctx} HEAD {mode}"));
                }
            }
        }
        check_against_shark(t, dump, &ctx);
        models.push(m);
    }
    check_extras(t, &models);
}

/// android.os.Build in the dump is the device the truth describes.
fn check_build(m: &Model, t: &Truth, ctx: &str) {
    let text = |field: &str| {
        m.static_value("android.os.Build", field)
            .and_then(|v| v.as_object())
            .and_then(|id| m.string(id))
    };
    assert_eq!(
        text("MANUFACTURER").as_deref(),
        Some(t.build.manufacturer.as_str()),
        "{ctx}"
    );
    assert_eq!(text("ID").as_deref(), Some(t.build.id.as_str()), "{ctx}");
    let sdk = m
        .static_value("android.os.Build$VERSION", "SDK_INT")
        .and_then(|v| v.as_i64());
    assert_eq!(sdk, Some(t.build.sdk as i64), "{ctx}");
}

fn check_required_fields(m: &Model, ctx: &str) {
    for (class, fields) in REQUIRED {
        for id in m.class_named(class) {
            for f in *fields {
                assert!(
                    m.declares(id, f),
                    "{ctx}: {class} declares no {f}, which Shark requires"
                );
            }
        }
    }
}

/// What is reachable from the GC roots Shark indexes, over strong references, leaving out
/// Reference.referent and the locals of the threads whose locals Shark ignores.
struct Reach {
    reached: HashSet<u64>,
}

impl Reach {
    fn new(m: &Model) -> Reach {
        let ignored_serials: HashSet<u32> = m
            .roots
            .iter()
            .filter(|r| r.0 == 0x08)
            .filter(|r| {
                let name = m.object_field(r.1, "name").and_then(|n| m.string(n));
                name.is_some_and(|n| IGNORED_THREADS.contains(&n.as_str()))
            })
            .filter_map(|r| r.2)
            .collect();
        let mut queue: VecDeque<u64> = m
            .roots
            .iter()
            .filter(|r| matches!(r.0, 0x01..=0x08 | 0x8E))
            .filter(|r| !(r.0 == 0x03 && r.2.is_some_and(|s| ignored_serials.contains(&s))))
            .map(|r| r.1)
            .collect();
        let mut reached = HashSet::new();
        while let Some(id) = queue.pop_front() {
            if id == 0 || !reached.insert(id) {
                continue;
            }
            if let Some(c) = m.classes.get(&id) {
                queue.extend(c.statics.iter().filter_map(|(_, v)| v.as_object()));
            } else if let Some((_, elements)) = m.object_arrays.get(&id) {
                queue.extend(elements.iter().copied());
            } else if let Some((class, _)) = m.instances.get(&id) {
                let weak = m.is_subclass(*class, "java.lang.ref.Reference");
                queue.extend(
                    m.references(id)
                        .into_iter()
                        .filter(|(n, _)| !(weak && n == "referent"))
                        .map(|(_, to)| to),
                );
            }
        }
        Reach { reached }
    }
}

/// The class name of an object as a trace shows it: a class object's own name, else the
/// instance's or array's class.
fn trace_class(m: &Model, id: u64) -> Option<&str> {
    match m.classes.get(&id) {
        Some(c) => Some(c.name.as_str()),
        None => m.class_name(id),
    }
}

fn value_matches(m: &Model, v: Option<Value>, want: &Json) -> bool {
    let Some(v) = v else {
        return false;
    };
    match want {
        Json::Null => v.as_object() == Some(0),
        Json::Bool(b) => v == Value::Boolean(*b),
        Json::Number(n) => v.as_i64() == n.as_i64(),
        Json::String(s) if s == "<non-null>" => v.as_object().is_some_and(|id| id != 0),
        Json::String(s) => v
            .as_object()
            .and_then(|id| m.string(id))
            .is_some_and(|text| &text == s),
        _ => false,
    }
}

fn checks_hold(m: &Model, id: u64, checks: &[Check]) -> bool {
    checks
        .iter()
        .all(|c| value_matches(m, m.field_of(id, Some(&c.class), &c.field), &c.value))
}

/// The objects one step (`field:NAME`, `index:N`, `index:*`) leads to from `at`.
fn raw_step(m: &Model, at: u64, step: &str) -> Vec<u64> {
    if let Some(field) = step.strip_prefix("field:") {
        return m
            .object_field(at, field)
            .filter(|&id| id != 0)
            .into_iter()
            .collect();
    }
    let index = step
        .strip_prefix("index:")
        .unwrap_or_else(|| panic!("raw step {step}"));
    let Some((_, elements)) = m.object_arrays.get(&at) else {
        return Vec::new();
    };
    if index == "*" {
        return elements.iter().copied().filter(|&e| e != 0).collect();
    }
    let i: usize = index.parse().unwrap();
    elements
        .get(i)
        .copied()
        .filter(|&e| e != 0)
        .into_iter()
        .collect()
}

/// Where a reference leads from object `at`: every candidate (several only where the
/// truth leaves an index open or a thread has several frame roots).
fn follow_ref(m: &Model, at: u64, obj: &Obj) -> Vec<u64> {
    let r = obj.reference.as_ref().expect("a reference");
    match r.kind.as_str() {
        "STATIC_FIELD" => {
            let c = m.classes.get(&at).expect("a class object");
            let name = r.name.as_deref().unwrap();
            assert_eq!(r.owner, c.name, "a static's owner is its class");
            c.statics
                .iter()
                .filter(|(n, _)| n == name)
                .filter_map(|(_, v)| v.as_object())
                .filter(|&id| id != 0)
                .collect()
        }
        "INSTANCE_FIELD" if r.raw.is_empty() => {
            // The field as Shark names it: declared by the owner.
            let v = m.field_of(at, Some(&r.owner), r.name.as_deref().unwrap());
            v.and_then(|v| v.as_object())
                .filter(|&id| id != 0)
                .into_iter()
                .collect()
        }
        "LOCAL" => {
            let serials: Vec<u32> = m
                .roots
                .iter()
                .filter(|x| x.0 == 0x08 && x.1 == at)
                .filter_map(|x| x.2)
                .collect();
            m.roots
                .iter()
                .filter(|x| x.0 == 0x03 && x.2.is_some_and(|s| serials.contains(&s)))
                .map(|x| x.1)
                .collect()
        }
        _ => {
            assert!(
                !r.raw.is_empty(),
                "{}: an entry without its raw steps",
                obj.class
            );
            let mut at = vec![at];
            for step in &r.raw {
                at = at.iter().flat_map(|&a| raw_step(m, a, step)).collect();
            }
            at
        }
    }
}

/// Walks the trace from object `i` at `at`; the leaking object if the rest resolves.
fn walk(m: &Model, objects: &[Obj], i: usize, at: u64) -> Option<u64> {
    let obj = &objects[i];
    if trace_class(m, at) != Some(obj.class.as_str()) {
        return None;
    }
    let is_class = m.classes.contains_key(&at);
    let is_array = m.object_arrays.contains_key(&at);
    let kind = if is_class {
        "class"
    } else if is_array {
        "array"
    } else {
        "instance"
    };
    if kind != obj.kind || !checks_hold(m, at, &obj.checks) {
        return None;
    }
    if i + 1 == objects.len() {
        return Some(at);
    }
    follow_ref(m, at, obj)
        .into_iter()
        .find_map(|next| walk(m, objects, i + 1, next))
}

/// The objects a trace may start from, by Shark's root kind.
fn trace_starts(m: &Model, t: &Trace) -> Vec<u64> {
    let tag = match t.gc_root.as_str() {
        "STICKY_CLASS" => 0x05,
        "THREAD_OBJECT" => 0x08,
        "JNI_GLOBAL" => 0x01,
        other => panic!("a trace from a {other} root: the test does not know it"),
    };
    m.roots.iter().filter(|r| r.0 == tag).map(|r| r.1).collect()
}

fn check_mode_in_dump(m: &Model, reach: &Reach, mode: &Mode, ctx: &str) {
    for leak in &mode.leaks {
        for t in &leak.traces {
            let ends: Vec<u64> = trace_starts(m, t)
                .into_iter()
                .filter_map(|start| walk(m, &t.objects, 0, start))
                .collect();
            assert!(
                !ends.is_empty(),
                "{ctx}: no path from a {} root along the trace to {}",
                t.gc_root,
                t.leaking_class
            );
            for end in &ends {
                assert!(
                    reach.reached.contains(end),
                    "{ctx}: {} unreachable",
                    t.leaking_class
                );
            }
        }
    }
    let mut want: BTreeMap<&str, usize> = BTreeMap::new();
    for f in &mode.found {
        assert!(
            !f.finders.is_empty(),
            "{ctx}: {} found by no finder",
            f.class
        );
        *want.entry(f.class.as_str()).or_default() += 1;
    }
    for (class, n) in want {
        let have = m.direct_instances_of(class).len();
        assert!(have >= n, "{ctx}: {n} {class} found, {have} in the dump");
    }
    let mut unreachable: BTreeMap<&str, Vec<&Obj>> = BTreeMap::new();
    for o in &mode.unreachable {
        unreachable.entry(o.class.as_str()).or_default().push(o);
    }
    for (class, objs) in unreachable {
        let candidates: Vec<u64> = m
            .direct_instances_of(class)
            .into_iter()
            .filter(|id| !reach.reached.contains(id))
            .collect();
        assert!(
            candidates.len() >= objs.len(),
            "{ctx}: {} unreachable {class}, {} in the dump",
            objs.len(),
            candidates.len()
        );
        for o in objs {
            assert!(
                candidates.iter().any(|&id| checks_hold(m, id, &o.checks)),
                "{ctx}: no unreachable {class} with the truth's fields"
            );
        }
    }
}

// ---- Shark's committed answers -----------------------------------------------------

fn shark_answers(dump: &str) -> Option<Json> {
    let stem = dump.trim_end_matches(".hprof");
    let path = committed(&format!("{stem}.shark.json"));
    let text = std::fs::read_to_string(&path).ok()?;
    Some(serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display())))
}

fn str_of<'j>(j: &'j Json, key: &str) -> &'j str {
    j[key].as_str().unwrap_or_default()
}

/// LeakCanary's formula over Shark's own trace: its suspects' class + generic name.
fn shark_formula(trace: &Json) -> String {
    let mut signed = String::new();
    for step in trace["steps"].as_array().unwrap() {
        let r = &step["reference"];
        if r["suspect"] == true {
            signed.push_str(str_of(step, "className"));
            signed.push_str(str_of(r, "genericName"));
        }
    }
    truth::sha1_hex(&signed)
}

fn check_against_shark(t: &Truth, dump: &str, ctx: &str) {
    let Some(shark) = shark_answers(dump) else {
        panic!(
            "{ctx}: no committed Shark answers (scripts/shark-oracle.sh {})",
            t.scenario
        );
    };
    assert_eq!(str_of(&shark, "scenario"), t.scenario, "{ctx}");
    let e = t.expect_for(dump);
    for (mode, expect) in [("kwr", &e.kwr), ("filter", &e.filter)] {
        let s = &shark[mode];
        let ctx = format!("{ctx} {mode}");
        assert!(
            s["failure"].is_null(),
            "{ctx}: Shark failed: {}",
            s["failure"]
        );
        let metadata = &s["metadata"];
        for (k, v) in &t.metadata {
            assert_eq!(
                metadata[k].as_str(),
                Some(v.as_str()),
                "{ctx}: metadata {k}"
            );
        }
        compare_found(&expect.found, s["found"].as_array().unwrap(), &ctx);
        compare_leaks(expect, s["leaks"].as_array().unwrap(), &ctx);
        let mut want: Vec<(String, String, String)> = expect
            .unreachable
            .iter()
            .map(|o| (o.class.clone(), o.status.clone(), o.reason.clone()))
            .collect();
        let mut got: Vec<(String, String, String)> = s["unreachableObjects"]
            .as_array()
            .unwrap()
            .iter()
            .map(|o| {
                (
                    str_of(o, "className").to_string(),
                    str_of(o, "leakingStatus").to_string(),
                    str_of(o, "reason").to_string(),
                )
            })
            .collect();
        want.sort();
        got.sort();
        assert_eq!(got, want, "{ctx}: unreachable objects");
    }
}

fn compare_found(want: &[Found], got: &[Json], ctx: &str) {
    let mut want: Vec<&str> = want.iter().map(|f| f.class.as_str()).collect();
    let mut got: Vec<&str> = got.iter().map(|f| str_of(f, "className")).collect();
    want.sort();
    got.sort();
    assert_eq!(got, want, "{ctx}: what the finder flags");
}

fn compare_leaks(expect: &Mode, got: &[Json], ctx: &str) {
    assert_eq!(
        got.len(),
        expect.leaks.len(),
        "{ctx}: leaks {:?}",
        got.iter()
            .map(|l| str_of(l, "shortDescription"))
            .collect::<Vec<_>>()
    );
    for leak in &expect.leaks {
        let s = got
            .iter()
            .find(|l| str_of(l, "signature") == leak.signature)
            .unwrap_or_else(|| {
                panic!(
                    "{ctx}: no leak with the truth's signature {} ({}); Shark's: {:?}",
                    leak.signature,
                    leak.traces[0].leaking_class,
                    got.iter()
                        .map(|l| (str_of(l, "signature"), str_of(l, "shortDescription")))
                        .collect::<Vec<_>>()
                )
            });
        assert_eq!(str_of(s, "kind"), leak.kind, "{ctx}");
        assert_eq!(s["pattern"].as_str(), leak.pattern.as_deref(), "{ctx}");
        let traces = s["traces"].as_array().unwrap();
        assert_eq!(
            traces.len(),
            leak.traces.len(),
            "{ctx}: traces of {}",
            leak.signature
        );
        for t in &leak.traces {
            let st = traces
                .iter()
                .find(|x| {
                    str_of(x, "traceSignature") == t.trace_signature
                        && str_of(x, "leakingObjectClass") == t.leaking_class
                })
                .unwrap_or_else(|| {
                    panic!(
                        "{ctx}: no trace to {} with signature {}; Shark's: {:?}",
                        t.leaking_class,
                        t.trace_signature,
                        traces
                            .iter()
                            .map(|x| (str_of(x, "leakingObjectClass"), str_of(x, "traceSignature")))
                            .collect::<Vec<_>>()
                    )
                });
            // Shark's own trace gives its own signature by the same formula.
            assert_eq!(shark_formula(st), str_of(st, "traceSignature"), "{ctx}");
            compare_trace(t, st, &format!("{ctx} trace to {}", t.leaking_class));
        }
    }
}

fn compare_trace(t: &Trace, s: &Json, ctx: &str) {
    assert_eq!(str_of(s, "gcRootType"), t.gc_root, "{ctx}");
    let steps = s["steps"].as_array().unwrap();
    assert_eq!(steps.len(), t.objects.len(), "{ctx}: objects");
    for (i, (o, st)) in t.objects.iter().zip(steps).enumerate() {
        let c = format!("{ctx}, object {i} ({})", o.class);
        assert_eq!(str_of(st, "className"), o.class, "{c}");
        assert_eq!(str_of(st, "type"), o.kind, "{c}");
        assert_eq!(str_of(st, "leakingStatus"), o.status, "{c}");
        assert_eq!(str_of(st, "reason"), o.reason, "{c}");
        let labels: Vec<&str> = st["labels"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|l| l.as_str())
            .collect();
        for l in &o.labels {
            assert!(
                labels.contains(&l.as_str()),
                "{c}: no label {l:?} in {labels:?}"
            );
        }
        match (&o.reference, &st["reference"]) {
            (None, r) => assert!(r.is_null(), "{c}: a reference after the leaking object"),
            (Some(r), sr) => {
                assert_eq!(str_of(sr, "type"), r.kind, "{c}");
                assert_eq!(str_of(sr, "owningClassName"), r.owner, "{c}");
                if let Some(name) = &r.name {
                    assert_eq!(str_of(sr, "referenceName"), name, "{c}");
                    assert_eq!(sr["displayName"].as_str(), r.display_name.as_deref(), "{c}");
                }
                assert_eq!(str_of(sr, "genericName"), r.generic_name, "{c}");
                assert_eq!(sr["suspect"].as_bool(), Some(r.suspect), "{c}: suspect");
            }
        }
    }
}

// ---- sizes, bitmaps, triage, diff, growth ------------------------------------------

/// Registered native sizes, as ahat and Shark credit them: per sun.misc.Cleaner, the size
/// of the NativeAllocationRegistry behind its thunk goes to its referent.
fn native_sizes(m: &Model) -> HashMap<u64, i64> {
    let mut out = HashMap::new();
    for cleaner in m.direct_instances_of("sun.misc.Cleaner") {
        let referent = m.field_of(cleaner, Some("java.lang.ref.Reference"), "referent");
        let thunk = m.field_of(cleaner, Some("sun.misc.Cleaner"), "thunk");
        let (Some(referent), Some(thunk)) = (
            referent.and_then(|v| v.as_object()),
            thunk.and_then(|v| v.as_object()),
        ) else {
            continue;
        };
        if m.class_name(thunk) != Some("libcore.util.NativeAllocationRegistry$CleanerThunk") {
            continue;
        }
        let registry = m.object_field(thunk, "this$0").unwrap_or(0);
        let size = m
            .field_of(
                registry,
                Some("libcore.util.NativeAllocationRegistry"),
                "size",
            )
            .and_then(|v| v.as_i64())
            .unwrap_or(0);
        *out.entry(referent).or_default() += size;
    }
    out
}

/// The shallow size of every object as Shark sums its "Heap total bytes": instances their
/// class's instance size, arrays their elements.
fn heap_bytes(m: &Model) -> u64 {
    let instances: u64 = m
        .instances
        .values()
        .map(|(c, _)| m.classes.get(c).map_or(0, |c| c.instance_size as u64))
        .sum();
    let objects: u64 = m
        .object_arrays
        .values()
        .map(|(_, e)| e.len() as u64 * m.id_size as u64)
        .sum();
    let primitives: u64 = m
        .primitive_arrays
        .values()
        .map(|(_, d)| d.len() as u64)
        .sum();
    instances + objects + primitives
}

/// Everything reachable from `from` over strong references.
fn reachable_from(m: &Model, from: u64) -> HashSet<u64> {
    let mut seen = HashSet::new();
    let mut queue = VecDeque::from([from]);
    while let Some(id) = queue.pop_front() {
        if id == 0 || !seen.insert(id) {
            continue;
        }
        if let Some((_, e)) = m.object_arrays.get(&id) {
            queue.extend(e.iter().copied());
        } else if let Some((class, _)) = m.instances.get(&id) {
            let weak = m.is_subclass(*class, "java.lang.ref.Reference");
            queue.extend(
                m.references(id)
                    .into_iter()
                    .filter(|(n, _)| !(weak && n == "referent"))
                    .map(|(_, to)| to),
            );
        }
    }
    seen
}

/// Follows a triage path (`class` + `field` steps from a static) to its last object.
fn triage_path(m: &Model, path: &Json) -> u64 {
    let steps = path.as_array().unwrap();
    let first = &steps[0];
    let mut at = m
        .static_value(str_of(first, "class"), str_of(first, "field"))
        .and_then(|v| v.as_object())
        .unwrap_or_else(|| panic!("no static {first}"));
    for s in &steps[1..] {
        assert_eq!(trace_class(m, at), Some(str_of(s, "class")), "{s}");
        if let Some(field) = s["field"].as_str() {
            at = m
                .object_field(at, field)
                .unwrap_or_else(|| panic!("no {field} on {s}"));
        }
    }
    at
}

/// The elements of a static list, HotSpot's java.util.ArrayList (elementData, size).
fn list_elements(m: &Model, list: u64) -> Vec<u64> {
    let size = m.field(list, "size").and_then(|v| v.as_i64()).unwrap() as usize;
    let data = m.object_field(list, "elementData").unwrap();
    m.object_arrays[&data].1[..size].to_vec()
}

/// What ahat (scripts/ahat-oracle) says of a size scenario's dump: its objects by class.
fn ahat_objects(t: &Truth) -> Vec<Json> {
    let stem = t.dumps[0].trim_end_matches(".hprof");
    let path = committed(&format!("{stem}.ahat.json"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "{}: {e} (AHAT_SRC=… scripts/shark-oracle.sh {})",
            path.display(),
            t.scenario
        )
    });
    let ahat: Json = serde_json::from_str(&text).unwrap();
    assert_eq!(str_of(&ahat, "scenario"), t.scenario);
    ahat["objects"].as_array().unwrap().clone()
}

fn ahat_of<'j>(objects: &'j [Json], class: &str) -> Vec<&'j Json> {
    objects.iter().filter(|o| o["class"] == class).collect()
}

/// The size scenarios against ahat's committed answers: registered native bytes of each
/// Bitmap and of their owner, and the big retainers' sizes.
fn check_ahat(t: &Truth) {
    let name = &t.scenario;
    let objects = ahat_objects(t);
    if let Some(b) = t.extra.get("bitmaps") {
        let mut want: Vec<i64> = b["bitmaps"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x["nativeBytes"].as_i64().unwrap())
            .collect();
        let mut got: Vec<i64> = ahat_of(&objects, "android.graphics.Bitmap")
            .iter()
            .map(|o| o["retainedNativeBytes"].as_i64().unwrap())
            .collect();
        want.sort();
        got.sort();
        assert_eq!(
            got, want,
            "{name}: ahat's registered native bytes per Bitmap"
        );
    }
    if let Some(owner) = t.extra.get("nativeRetained") {
        let o = ahat_of(&objects, str_of(owner, "class"));
        assert_eq!(o.len(), 1, "{name}");
        assert_eq!(
            o[0]["retainedNativeBytes"], owner["retainedNativeBytes"],
            "{name}: ahat"
        );
    }
    if let Some(triage) = t.extra.get("triage") {
        if let Some(top) = triage.get("topRetainer") {
            let class = str_of(&top["path"][1], "class");
            let o = ahat_of(&objects, class);
            assert_eq!(o.len(), 1, "{name}: one {class}");
            let retained = o[0]["retainedBytes"].as_u64().unwrap();
            assert!(
                retained >= top["retainedAtLeastBytes"].as_u64().unwrap(),
                "{name}: ahat {retained}"
            );
        }
        if let Some(acc) = triage.get("accumulation") {
            let class = str_of(&acc["path"][1], "class");
            let o = ahat_of(&objects, class);
            assert_eq!(o.len(), 1, "{name}: one {class}");
            let n = o[0]["retainedObjects"].as_u64().unwrap();
            assert!(
                n > acc["count"].as_u64().unwrap(),
                "{name}: ahat retains {n} objects"
            );
        }
    }
}

#[allow(clippy::too_many_lines)] // a scenario, step by step
fn check_extras(t: &Truth, models: &[Model]) {
    let name = &t.scenario;
    let m = &models[0];
    if ["bitmaps", "nativeRetained", "triage"]
        .iter()
        .any(|k| t.extra.contains_key(*k))
    {
        check_ahat(t);
    }
    if let Some(b) = t.extra.get("bitmaps") {
        let bitmaps = m.instances_of("android.graphics.Bitmap");
        assert_eq!(
            bitmaps.len() as u64,
            b["count"].as_u64().unwrap(),
            "{name}: bitmaps"
        );
        for id in m.class_named("android.graphics.Bitmap") {
            assert!(
                !m.declares(id, "mBuffer"),
                "{name}: an API 26+ Bitmap has no mBuffer"
            );
        }
        let sizes = native_sizes(m);
        let mut have: Vec<(i64, i64, i64)> = bitmaps
            .iter()
            .map(|&id| {
                let w = m.field(id, "mWidth").and_then(|v| v.as_i64()).unwrap();
                let h = m.field(id, "mHeight").and_then(|v| v.as_i64()).unwrap();
                (w, h, sizes.get(&id).copied().unwrap_or(0))
            })
            .collect();
        let mut want: Vec<(i64, i64, i64)> = b["bitmaps"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| {
                (
                    x["width"].as_i64().unwrap(),
                    x["height"].as_i64().unwrap(),
                    x["nativeBytes"].as_i64().unwrap(),
                )
            })
            .collect();
        have.sort();
        want.sort();
        assert_eq!(
            have, want,
            "{name}: (width, height, registered native bytes)"
        );
        let screen = m
            .direct_instances_of("android.util.DisplayMetrics")
            .iter()
            .map(|&d| {
                let w = m.field(d, "widthPixels").and_then(|v| v.as_i64()).unwrap();
                let h = m.field(d, "heightPixels").and_then(|v| v.as_i64()).unwrap();
                w * h
            })
            .max()
            .unwrap_or(0);
        let threshold = (screen as f64 * 1.1) as i64;
        assert_eq!(
            threshold,
            b["largeThresholdPixels"].as_i64().unwrap(),
            "{name}"
        );
        let large: Vec<bool> = b["bitmaps"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x["large"] == true)
            .collect();
        for (x, large) in b["bitmaps"].as_array().unwrap().iter().zip(large) {
            let px = x["width"].as_i64().unwrap() * x["height"].as_i64().unwrap();
            assert_eq!(threshold > 0 && px > threshold, large, "{name}: {x}");
        }
    }
    if let Some(owner) = t.extra.get("nativeRetained") {
        let class = str_of(owner, "class");
        let ids = m.direct_instances_of(class);
        assert_eq!(ids.len(), 1, "{name}: one {class}");
        let sizes = native_sizes(m);
        let sum: i64 = reachable_from(m, ids[0])
            .iter()
            .filter_map(|id| sizes.get(id))
            .sum();
        assert_eq!(
            sum,
            owner["retainedNativeBytes"].as_i64().unwrap(),
            "{name}"
        );
    }
    if let Some(triage) = t.extra.get("triage") {
        if let Some(top) = triage.get("topRetainer") {
            let holder = triage_path(m, &top["path"]);
            let bytes: u64 = reachable_from(m, holder)
                .iter()
                .filter_map(|id| m.primitive_arrays.get(id))
                .map(|(_, d)| d.len() as u64)
                .sum();
            let at_least = top["retainedAtLeastBytes"].as_u64().unwrap();
            assert!(
                bytes >= at_least,
                "{name}: {bytes} bytes under the top retainer"
            );
            let fraction = at_least as f64 / heap_bytes(m) as f64;
            let min = top["minHeapFraction"].as_f64().unwrap();
            assert!(
                fraction >= min,
                "{name}: the cache holds {fraction:.2} of the heap"
            );
        }
        if let Some(acc) = triage.get("accumulation") {
            let point = triage_path(m, &acc["path"]);
            assert_eq!(m.class_name(point), acc["pointClass"].as_str(), "{name}");
            let class = str_of(acc, "accumulatedClass");
            let n = m.object_arrays[&point]
                .1
                .iter()
                .filter(|&&e| m.class_name(e) == Some(class))
                .count();
            assert_eq!(
                n as u64,
                acc["count"].as_u64().unwrap(),
                "{name}: accumulated"
            );
            assert_eq!(
                m.direct_instances_of(class).len(),
                n,
                "{name}: all in one place"
            );
        }
    }
    if let Some(diff) = t.extra.get("diff") {
        let class = str_of(diff, "class");
        let index = |file: &str| t.dumps.iter().position(|d| d == file).unwrap();
        let base = models[index(str_of(diff, "base"))]
            .direct_instances_of(class)
            .len();
        let new = models[index(str_of(diff, "new"))]
            .direct_instances_of(class)
            .len();
        assert_eq!(base as u64, diff["baseCount"].as_u64().unwrap(), "{name}");
        assert_eq!(new as u64, diff["newCount"].as_u64().unwrap(), "{name}");
        assert_eq!(
            (new - base) as u64,
            diff["countDelta"].as_u64().unwrap(),
            "{name}"
        );
    }
    if let Some(growth) = t.extra.get("growth") {
        let nodes = growth["growing"].as_array().unwrap().iter();
        for node in nodes.chain(growth["notGrowing"].as_array().unwrap()) {
            // "STATIC_FIELD Feed.sItems -> instance of java.util.ArrayList"
            let path = node["path"].as_array().unwrap();
            assert_eq!(path[0], "GcRoot(StickyClass)", "{name}");
            let edge = path[1].as_str().unwrap();
            let (field, _) = edge
                .strip_prefix("STATIC_FIELD ")
                .and_then(|e| e.split_once(" -> "))
                .unwrap_or_else(|| panic!("{name}: {edge}"));
            let (simple, field) = field.split_once('.').unwrap();
            let child_class = str_of(node, "child").rsplit("instance of ").next().unwrap();
            let counts: Vec<u64> = node["childCounts"]
                .as_array()
                .unwrap()
                .iter()
                .map(|c| c.as_u64().unwrap())
                .collect();
            for (i, (m, want)) in models.iter().zip(&counts).enumerate() {
                let class = m
                    .classes
                    .values()
                    .find(|c| {
                        c.name.ends_with(&format!(".{simple}"))
                            && c.name.starts_with("com.example.app.")
                    })
                    .unwrap_or_else(|| panic!("{name}: class {simple}"));
                let list = class
                    .statics
                    .iter()
                    .find(|(n, _)| n == field)
                    .and_then(|(_, v)| v.as_object())
                    .unwrap();
                let n = list_elements(m, list)
                    .iter()
                    .filter(|&&e| m.class_name(e) == Some(child_class))
                    .count() as u64;
                assert_eq!(n, *want, "{name}: {edge} in dump {}", i + 1);
            }
            if let Some(k) = node["increasePerStep"].as_u64() {
                assert!(
                    counts.windows(2).all(|w| w[1] == w[0] + k),
                    "{name}: {counts:?}"
                );
            } else {
                assert!(
                    counts.windows(2).all(|w| w[1] == w[0]),
                    "{name}: {counts:?}"
                );
            }
        }
    }
}

macro_rules! scenario_tests {
    ($($test:ident => $name:literal),* $(,)?) => {
        $(
            #[test]
            fn $test() {
                check($name);
            }
        )*

        /// Every scenario has its test above.
        #[test]
        fn every_scenario_is_tested() {
            let mut tested = vec![$($name),*];
            let mut all: Vec<&str> = SPECS.iter().map(|s| s.name).collect();
            tested.sort();
            all.sort();
            assert_eq!(tested, all);
        }
    };
}

scenario_tests! {
    activity_destroyed => "activity-destroyed",
    not_leaking_chain => "not-leaking-chain",
    view_detached => "view-detached",
    window_destroyed => "window-destroyed",
    dialog_leaked => "dialog-leaked",
    toast => "toast",
    service_not_in_mservices => "service-not-in-mservices",
    context_wrappers => "context-wrappers",
    fragment_framework => "fragment-framework",
    fragment_support => "fragment-support",
    fragment_androidx_destroyed => "fragment-androidx-destroyed",
    fragment_androidx_initialized => "fragment-androidx-initialized",
    fragments_unwatched => "fragments-unwatched",
    message_queue_quitting => "message-queue-quitting",
    view_root_impl => "view-root-impl",
    main_thread_local => "main-thread-local",
    application_singleton => "application-singleton",
    compose_disposed => "compose-disposed",
    new_activities => "new-activities",
    inspector_labels => "inspector-labels",
    library_imm_next_served_view => "library-imm-next-served-view",
    library_imm_sdk34 => "library-imm-sdk34",
    sdk_edge_inside => "sdk-edge-inside",
    sdk_edge_outside => "sdk-edge-outside",
    library_static_field => "library-static-field",
    jni_global_toast => "jni-global-toast",
    library_two_screens => "library-two-screens",
    manufacturer_samsung => "manufacturer-samsung",
    manufacturer_control => "manufacturer-control",
    thread_local_ignored => "thread-local-ignored",
    static_beats_local => "static-beats-local",
    leakcanary_1x => "leakcanary-1x",
    unreachable => "unreachable",
    arraylist_openjdk => "arraylist-openjdk",
    arraylist_openjdk_art => "arraylist-openjdk-art",
    arraylist_harmony => "arraylist-harmony",
    hashmap => "hashmap",
    hashmap_collision => "hashmap-collision",
    hashmap_harmony => "hashmap-harmony",
    handler_message_pos1 => "handler-message-pos1",
    handler_message_pos4 => "handler-message-pos4",
    bitmap_native => "bitmap-native",
    bitmap_large_api28 => "bitmap-large-api28",
    oom_cache => "oom-cache",
    accumulation_point => "accumulation-point",
    diff => "diff",
    growth => "growth",
    growth_control => "growth-control",
}

/// The Rust list and the Java generator's agree on the HotSpot scenarios.
#[test]
fn java_generator_knows_every_java_scenario() {
    let names = match generator().java_names() {
        Ok(n) => n,
        Err(Error::Unavailable(why)) => {
            eprintln!("skipping: {why}");
            return;
        }
        Err(Error::Failed(why)) => panic!("{why}"),
    };
    let mut java: Vec<&str> = SPECS
        .iter()
        .filter(|s| matches!(s.source, Source::Java { .. }))
        .map(|s| s.name)
        .collect();
    let mut listed: Vec<&str> = names.iter().map(String::as_str).collect();
    java.sort();
    listed.sort();
    assert_eq!(listed, java);
}

/// Issue 31's pairs: one bug in different incidental shapes has one signature, in the truth
/// (LeakCanary's formula over the expected path) and in Shark's committed answers.
#[test]
fn one_bug_one_signature() {
    let groups: &[&[&str]] = &[
        &[
            "arraylist-openjdk",
            "arraylist-openjdk-art",
            "arraylist-harmony",
        ],
        &["hashmap", "hashmap-collision", "hashmap-harmony"],
        &["handler-message-pos1", "handler-message-pos4"],
    ];
    for group in groups {
        let mut signatures = HashSet::new();
        for name in *group {
            let Some(s) = scenario(name) else {
                return;
            };
            let dump = &s.truth.dumps[0];
            let leak = &s.truth.expect_for(dump).filter.leaks[0];
            signatures.insert(leak.signature.clone());
            let shark = shark_answers(dump).unwrap_or_else(|| panic!("{name}: no Shark answers"));
            let got = str_of(&shark["filter"]["leaks"][0], "signature").to_string();
            signatures.insert(got);
        }
        assert_eq!(signatures.len(), 1, "{group:?}: {signatures:?}");
    }
    // One framework leak from two screens: one library leak, two traces.
    if let Some(s) = scenario("library-two-screens") {
        let leaks = &s.truth.expect_for(&s.truth.dumps[0]).kwr.leaks;
        assert_eq!(leaks.len(), 1);
        assert_eq!(leaks[0].traces.len(), 2);
        assert_eq!(
            leaks[0].signature,
            truth::sha1_hex("instance field android.os.Message#obj")
        );
    }
}

/// Every committed oracle answer belongs to a scenario dump (none left over from a rename).
#[test]
fn no_stray_shark_answers() {
    let dir = committed("");
    let mut stems = HashSet::new();
    for spec in SPECS {
        let Some(s) = scenario(spec.name) else {
            return;
        };
        for d in &s.truth.dumps {
            stems.insert(d.trim_end_matches(".hprof").to_string());
        }
    }
    for entry in std::fs::read_dir(dir).unwrap() {
        let file = entry.unwrap().file_name().to_string_lossy().into_owned();
        let stem = [".shark.json", ".shark.txt", ".ahat.json"]
            .iter()
            .find_map(|suffix| file.strip_suffix(suffix))
            .unwrap_or_else(|| panic!("fixtures/scenarios/{file}: not an oracle's answer"));
        assert!(
            stems.contains(stem),
            "fixtures/scenarios/{file}: no such scenario dump"
        );
    }
}
