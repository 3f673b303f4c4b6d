//! The path search against LeakCanary's Shark, on the scenario dumps (made at test time by
//! the Java generator and the ART builder, `hprof_fixtures::scenarios`) whose Shark 2.14
//! answers are committed (`fixtures/scenarios/NAME.shark.json`): for every trace Shark
//! gives of an object this analysis also finds leaking, the same GC root type, the same
//! objects in the same order, each reference of the same type, owning class, display name
//! and generic name (collections and queues read as one step, locals as references of
//! their thread), and the same library-leak pattern or none.
//!
//! Where LeakCanary HEAD differs from 2.14 this follows HEAD, and so does the comparison:
//! an object array's element is named by its index in the array (2.14 counts only the
//! non-null elements before it).
//!
//! Without a JDK the HotSpot scenarios are skipped, saying so.

use std::path::Path;

use hprof_shrink_analyze::{analyze_path, Analysis, Leak, Options};
use hprof_shrink_core::Control;
use serde_json::Value;

fn analyze(dump: &Path) -> Analysis {
    let options = Options {
        all_leaks: true,
        pictures: false,
        ..Options::default()
    };
    analyze_path(dump, &options, &Control::default())
        .unwrap()
        .analysis
}

/// Shark's GC root type in this analysis's words.
fn root_words(shark: &str) -> &'static str {
    match shark {
        "STICKY_CLASS" => "system class",
        "THREAD_OBJECT" => "thread object",
        "JNI_GLOBAL" => "JNI global",
        "JAVA_FRAME" => "Java local variable",
        "JNI_LOCAL" => "JNI local",
        "NATIVE_STACK" => "native stack",
        "THREAD_BLOCK" => "thread block",
        "MONITOR_USED" => "monitor used",
        "JNI_MONITOR" => "JNI monitor",
        other => panic!("a root type the test does not know: {other}"),
    }
}

/// One step as both sides describe it: (class, kind, reference type, owning class,
/// display name, generic name).
type Step = (String, String, String, String, String, String);

fn shark_steps(trace: &Value) -> Vec<Step> {
    trace["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            let r = &s["reference"];
            let f = |v: &Value| v.as_str().unwrap_or("").to_string();
            let display = match f(&r["type"]).as_str() {
                "ARRAY_ENTRY" => format!("[{}]", f(&r["referenceName"])),
                "LOCAL" => "<Java Local>".to_string(),
                _ => f(&r["referenceName"]),
            };
            let display = if r.is_null() { String::new() } else { display };
            (
                f(&s["className"]),
                f(&s["type"]),
                f(&r["type"]),
                f(&r["owningClassName"]),
                display,
                f(&r["genericName"]),
            )
        })
        .collect()
}

fn our_steps(leak: &Leak) -> Vec<Step> {
    leak.trace
        .steps
        .iter()
        .map(|s| match &s.reference {
            Some(r) => (
                s.class_name.clone(),
                s.kind.clone(),
                r.reference_type.clone().unwrap_or_default(),
                r.owning_class_name().unwrap_or("").to_string(),
                r.name.clone(),
                r.generic().to_string(),
            ),
            None => (
                s.class_name.clone(),
                s.kind.clone(),
                String::new(),
                String::new(),
                String::new(),
                String::new(),
            ),
        })
        .collect()
}

/// Whether two steps agree; an object array's element may carry 2.14's index (counted
/// over the non-null elements only), never above HEAD's.
fn same_step(ours: &Step, theirs: &Step) -> bool {
    if ours == theirs {
        return true;
    }
    let array_index = |s: &Step| {
        (s.2 == "ARRAY_ENTRY" && s.3.ends_with("[]"))
            .then(|| s.4.trim_matches(['[', ']']).parse::<u64>().ok())
            .flatten()
    };
    match (array_index(ours), array_index(theirs)) {
        (Some(a), Some(b)) => {
            b <= a
                && (&ours.0, &ours.1, &ours.2, &ours.3, &ours.5)
                    == (&theirs.0, &theirs.1, &theirs.2, &theirs.3, &theirs.5)
        }
        _ => false,
    }
}

/// Whether `ours` is `want`, or runs through all of `want` and on (this analysis's finders
/// do not yet flag every object Shark's inspectors flag: a View whose Activity is
/// destroyed, say, is then a step on the way to that Activity).
fn same_trace(ours: &[Step], want: &[Step]) -> bool {
    if ours.len() < want.len() {
        return false;
    }
    let last = want.len() - 1;
    ours.iter().zip(want).enumerate().all(|(i, (a, b))| {
        if i == last && ours.len() > want.len() {
            (&a.0, &a.1) == (&b.0, &b.1)
        } else {
            same_step(a, b)
        }
    })
}

/// Compares every Shark trace (of `mode`) of an object this analysis finds leaking (or
/// passes through on the way to one); returns how many were compared.
fn compare(name: &str, mode: &str) -> usize {
    let Some(s) = super::scenario(name) else {
        return 0;
    };
    let answer = super::committed_shark(name);
    let dump = s.dump(answer["dump"]["file"].as_str().unwrap());
    let ours = analyze(&dump);
    let mut compared = 0;
    for leak in answer[mode]["leaks"].as_array().unwrap() {
        for trace in leak["traces"].as_array().unwrap() {
            let want = shark_steps(trace);
            let class = trace["leakingObjectClass"].as_str().unwrap();
            // Shark's second trace of one signature: this analysis shows one trace per
            // signature, with the others counted on it.
            let grouped = ours.leaks.iter().find(|l| {
                Some(l.signature.as_str()) == leak["signature"].as_str()
                    && l.trace_count as usize == leak["traces"].as_array().unwrap().len()
                    && !same_trace(&our_steps(l), &want)
                    && l.trace.steps.last().unwrap().class_name != class
            });
            if grouped.is_some() {
                compared += 1;
                continue;
            }
            let candidates: Vec<&Leak> = ours
                .leaks
                .iter()
                .filter(|l| {
                    l.class_name == class || l.trace.steps.iter().any(|s| s.class_name == class)
                })
                .collect();
            assert!(
                !candidates.is_empty(),
                "{name}: Shark traces a {class}, this analysis does not: {:?}",
                ours.leaks.iter().map(|l| &l.class_name).collect::<Vec<_>>()
            );
            let found = candidates.iter().find(|l| same_trace(&our_steps(l), &want));
            let Some(ours) = found else {
                panic!(
                    "{name}: the trace to {class} differs from Shark's.\nShark: {:#?}\nours: {:#?}",
                    want,
                    candidates.iter().map(|l| our_steps(l)).collect::<Vec<_>>()
                );
            };
            assert_eq!(
                ours.trace.root,
                root_words(trace["gcRootType"].as_str().unwrap()),
                "{name}: {class}"
            );
            let pattern = (leak["kind"] == "library").then(|| leak["pattern"].as_str().unwrap());
            assert_eq!(
                ours.library_leak
                    .as_ref()
                    .and_then(|l| l.leak_pattern.as_deref()),
                pattern,
                "{name}: {class}"
            );
            compared += 1;
        }
    }
    compared
}

/// Issue 30 item 5: what Shark's path rules decide.
#[test]
fn library_leaks_ignored_references_and_locals_take_sharks_paths() {
    for (name, mode, traces) in [
        // Library leak, instance field (InputMethodManager.mNextServedView, SDK 30).
        ("library-imm-next-served-view", "kwr", 1),
        // The same path on SDK 34 (v2.14 stopped at 33; HEAD's range runs to 35).
        ("sdk-edge-inside", "kwr", 1),
        ("sdk-edge-outside", "kwr", 1),
        // Library leak, static field (TextLine.sCached).
        ("library-static-field", "kwr", 1),
        // Library leak, JNI global (Toast$TN), from a JNI global root.
        ("jni-global-toast", "filter", 1),
        // One framework leak (Message.obj) reached from two screens.
        ("library-two-screens", "kwr", 2),
        // A manufacturer's pattern on that maker, and not on another.
        ("manufacturer-samsung", "kwr", 1),
        ("manufacturer-control", "kwr", 1),
        // Ignored: the locals of the main thread; the watched Activity is then reached
        // through the thread's fields, or through another thread's local.
        ("thread-local-ignored", "kwr", 1),
        ("main-thread-local", "kwr", 1),
        // A static path beats a thread's local of the same length.
        ("static-beats-local", "kwr", 1),
        // ActivityThread.mNewActivities, read with its own library-leak match.
        ("new-activities", "kwr", 1),
        // LeakCanary 1.x's KeyedWeakReference: its referent is ignored too.
        ("leakcanary-1x", "kwr", 1),
    ] {
        let n = compare(name, mode);
        assert!(n == traces || n == 0, "{name}: compared {n} of {traces}");
    }
}

/// Issue 31 item 1: collections and queues read as one step, on both layouts.
#[test]
fn collections_and_queues_are_one_step_as_shark_reads_them() {
    for (name, mode, traces) in [
        ("arraylist-openjdk", "kwr", 1),
        ("arraylist-openjdk-art", "filter", 1),
        ("arraylist-harmony", "filter", 1),
        ("hashmap", "kwr", 1),
        ("hashmap-collision", "kwr", 1),
        ("hashmap-harmony", "filter", 1),
        ("handler-message-pos1", "kwr", 1),
        ("handler-message-pos4", "kwr", 1),
        // FastSafeIterableMap (a Lifecycle's observers), and a plain Object[] on the way.
        ("not-leaking-chain", "kwr", 1),
        ("compose-disposed", "kwr", 1),
        // ArrayMap is not read as one step by Shark: ArrayMap.mArray then Object[1].
        ("service-not-in-mservices", "kwr", 1),
    ] {
        let n = compare(name, mode);
        assert!(n == traces || n == 0, "{name}: compared {n} of {traces}");
    }
}

/// Every other scenario with traces: the paths of the inspector scenarios are Shark's too.
#[test]
fn the_other_scenarios_traces_are_sharks() {
    for name in [
        "activity-destroyed",
        "application-singleton",
        "context-wrappers",
        "dialog-leaked",
        "fragment-androidx-destroyed",
        "view-detached",
        "view-root-impl",
        "window-destroyed",
        "bitmap-native",
    ] {
        // Only the traces of objects this analysis finds leaking (its finders are
        // LeakCanary's watched objects and destroyed Activities).
        let answer = super::committed_shark(name);
        let leaks = answer["kwr"]["leaks"].as_array().unwrap().len();
        if leaks == 0 {
            continue;
        }
        compare(name, "kwr");
    }
}

// ---------------------------------------------------------------------------------------
// Shapes built with the ART builder, one rule each. Their dumps are Shark-readable
// (`android.os.Build` has MANUFACTURER, ID and VERSION.SDK_INT): with
// HPROF_SHRINK_SCENES=DIR set they are also written to DIR, to compare with Shark by hand
// (`../shared/tools/shark/run.sh DIR/NAME.hprof filter --text OUT`).

use hprof_fixtures::image::{Image, STICKY};
use hprof_fixtures::{ArtBuilder, Heap, Ty, Val};

const MONITOR_USED: u8 = 0x07;
const THREAD_OBJECT: u8 = 0x08;
const JNI_LOCAL: u8 = 0x02;
const JAVA_FRAME: u8 = 0x03;

/// A small Android heap: the classes every scene needs, `Build` for SDK 30, Google.
struct Scene {
    b: ArtBuilder,
    object: u64,
    object_array: u64,
    activity: u64,
    thread: u64,
    weak: u64,
}

impl Scene {
    fn new() -> Scene {
        Scene::device(30, "Google")
    }

    fn device(sdk: i32, maker: &str) -> Scene {
        let Image {
            mut b,
            object,
            object_array,
            build,
            version,
        } = Image::new(sdk, maker, "RQ3A.211001.001");
        let reference = b.declare_class(
            "java.lang.ref.Reference",
            object,
            &[
                ("queue", Ty::Object),
                ("queueNext", Ty::Object),
                ("referent", Ty::Object),
            ],
            &[],
        );
        let weak = b.declare_class("java.lang.ref.WeakReference", reference, &[], &[]);
        let thread = b.declare_class(
            "java.lang.Thread",
            object,
            &[("name", Ty::Object), ("priority", Ty::Int)],
            &[],
        );
        let activity = b.declare_class(
            "android.app.Activity",
            object,
            &[("mDestroyed", Ty::Boolean), ("mFinished", Ty::Boolean)],
            &[],
        );
        for c in [reference, weak, thread, activity, build, version] {
            b.dump_class(c, Heap::Image);
            b.root_simple(STICKY, c);
        }
        Scene {
            b,
            object,
            object_array,
            activity,
            thread,
            weak,
        }
    }

    /// A class of the app, dumped and rooted as ART roots loaded classes.
    fn class(&mut self, name: &str, sup: u64, fields: &[(&str, Ty)]) -> u64 {
        let c = self.b.declare_class(name, sup, fields, &[]);
        self.b.dump_class(c, Heap::App);
        self.b.root_simple(STICKY, c);
        c
    }

    /// A class holding objects in static fields, in this order.
    fn holder(&mut self, name: &str, statics: &[(&str, u64)]) -> u64 {
        let values: Vec<(&str, Val)> = statics.iter().map(|(n, v)| (*n, Val::Obj(*v))).collect();
        let c = self.b.declare_class(name, self.object, &[], &values);
        self.b.dump_class(c, Heap::App);
        self.b.root_simple(STICKY, c);
        c
    }

    fn obj(&mut self, class: u64, values: &[(&str, u64)]) -> u64 {
        let v: Vec<(&str, Val)> = values.iter().map(|(n, v)| (*n, Val::Obj(*v))).collect();
        self.b.instance(class, Heap::App, &v)
    }

    /// A destroyed Activity of a new class (with these object fields).
    fn destroyed(&mut self, name: &str, fields: &[(&str, u64)]) -> u64 {
        let decl: Vec<(&str, Ty)> = fields.iter().map(|(n, _)| (*n, Ty::Object)).collect();
        let c = self.class(name, self.activity, &decl);
        let mut v: Vec<(&str, Val)> = fields.iter().map(|(n, v)| (*n, Val::Obj(*v))).collect();
        v.push(("mDestroyed", Val::Bool(true)));
        v.push(("mFinished", Val::Bool(true)));
        self.b.instance(c, Heap::App, &v)
    }

    fn array(&mut self, elements: &[u64]) -> u64 {
        let c = self.object_array;
        self.b.object_array(Heap::App, c, elements)
    }

    fn string(&mut self, s: &str) -> u64 {
        self.b.string(s, Heap::App)
    }

    /// Writes the dump (and a copy under $HPROF_SHRINK_SCENES) and analyzes it.
    fn analyze(self, name: &str, dir: &Path) -> Analysis {
        let bytes = self.b.finish();
        let path = dir.join(format!("{name}.hprof"));
        std::fs::write(&path, &bytes).unwrap();
        if let Some(keep) = std::env::var_os("HPROF_SHRINK_SCENES") {
            std::fs::create_dir_all(&keep).unwrap();
            std::fs::write(Path::new(&keep).join(format!("{name}.hprof")), &bytes).unwrap();
        }
        analyze(&path)
    }
}

/// A trace in short: `Holder.sA > A`, each step `SimpleClass` then `.name` or `[i]`, and
/// the GC root in front.
fn short(leak: &Leak) -> String {
    let mut out = format!("{}: ", leak.trace.root);
    for (i, s) in leak.trace.steps.iter().enumerate() {
        if i > 0 {
            out.push_str(" > ");
        }
        out.push_str(s.class_name.rsplit('.').next().unwrap());
        if let Some(r) = &s.reference {
            match r.kind.as_str() {
                "array" | "local" => out.push_str(&r.name),
                _ => {
                    out.push('.');
                    out.push_str(&r.name);
                }
            }
        }
    }
    out
}

fn leak<'a>(a: &'a Analysis, class: &str) -> &'a Leak {
    a.leaks
        .iter()
        .find(|l| l.class_name == class)
        .unwrap_or_else(|| {
            panic!(
                "no leak of {class}: {:?}",
                a.leaks.iter().map(short).collect::<Vec<_>>()
            )
        })
}

fn labels(l: &Leak) -> &[String] {
    &l.trace.steps.last().unwrap().labels
}

/// LeakCanary HEAD: leaking objects are leaves. A leaking object reachable only through
/// another gets no trace but a label on the other's; one with a path of its own avoiding
/// every other leaking object gets that path (longer than the shortest), and a label
/// naming the leaking object that also reaches it.
#[test]
fn leaking_objects_are_leaves_with_also_retains_labels() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Scene::new();
    let b = s.destroyed("com.example.B", &[]);
    let c = s.destroyed("com.example.C", &[]);
    let d = s.destroyed("com.example.D", &[]);
    let a = s.destroyed(
        "com.example.A",
        &[("mOther", b), ("mThird", c), ("mFourth", d)],
    );
    let link = s.class("com.example.Link", s.object, &[("next", Ty::Object)]);
    let z = s.obj(link, &[("next", d)]);
    let y = s.obj(link, &[("next", z)]);
    let x = s.obj(link, &[("next", y)]);
    s.holder("com.example.Holder", &[("sA", a), ("sC", c), ("sLong", x)]);
    let ids = (a, b);
    let got = s.analyze("leaves", dir.path());
    let mut classes: Vec<&str> = got.leaks.iter().map(|l| l.class_name.as_str()).collect();
    classes.sort();
    assert_eq!(classes, ["com.example.A", "com.example.C", "com.example.D"]);
    assert_eq!(
        short(leak(&got, "com.example.A")),
        "system class: Holder.sA > A"
    );
    assert_eq!(
        labels(leak(&got, "com.example.A")).last().unwrap(),
        &format!("Also retains leaking object {} (com.example.B)", ids.1)
    );
    assert_eq!(
        short(leak(&got, "com.example.C")),
        "system class: Holder.sC > C"
    );
    let by_a = format!(
        "Also retained by leaking object {} (com.example.A), which has its own leak trace",
        ids.0
    );
    assert_eq!(labels(leak(&got, "com.example.C")).last().unwrap(), &by_a);
    // D's shortest path runs through A; the path it gets avoids every leaking object.
    assert_eq!(
        short(leak(&got, "com.example.D")),
        "system class: Holder.sLong > Link.next > Link.next > Link.next > D"
    );
    assert_eq!(labels(leak(&got, "com.example.D")).last().unwrap(), &by_a);
}

/// An object waiting to be visited last (through a known leak) that an ordinary reference
/// reaches before the first queue runs dry takes that reference: the leak is the app's.
/// Without the ordinary path it is the library leak.
#[test]
fn a_known_leak_is_visited_last_and_an_ordinary_path_wins() {
    let dir = tempfile::tempdir().unwrap();
    for with_chain in [true, false] {
        let mut s = Scene::new();
        let target = s.destroyed("com.example.LoginActivity", &[]);
        let imm_class = s.b.declare_class(
            "android.view.inputmethod.InputMethodManager",
            s.object,
            &[("mNextServedView", Ty::Object)],
            &[],
        );
        let imm = s.obj(imm_class, &[("mNextServedView", target)]);
        s.b.set_static(imm_class, "sInstance", Val::Obj(imm));
        s.b.dump_class(imm_class, Heap::Image);
        s.b.root_simple(STICKY, imm_class);
        if with_chain {
            let link = s.class("com.example.Link", s.object, &[("next", Ty::Object)]);
            let x3 = s.obj(link, &[("next", target)]);
            let x2 = s.obj(link, &[("next", x3)]);
            let x1 = s.obj(link, &[("next", x2)]);
            s.holder("com.example.Holder", &[("sChain", x1)]);
        }
        let name = if with_chain { "bump" } else { "library-only" };
        let got = s.analyze(name, dir.path());
        let l = leak(&got, "com.example.LoginActivity");
        if with_chain {
            assert_eq!(
                short(l),
                "system class: Holder.sChain > Link.next > Link.next > Link.next > LoginActivity"
            );
            assert!(l.library_leak.is_none());
        } else {
            assert_eq!(
                short(l),
                "system class: InputMethodManager.sInstance > InputMethodManager.mNextServedView > LoginActivity"
            );
            let lib = l.library_leak.as_ref().unwrap();
            assert_eq!(
                lib.leak_pattern.as_deref(),
                Some("instance field android.view.inputmethod.InputMethodManager#mNextServedView")
            );
            assert_eq!(
                lib.id.as_deref(),
                Some("INPUT_METHOD_MANAGER_IS_TERRIBLE__M_NEXT_SERVED_VIEW")
            );
            let step = &l.trace.steps[1];
            assert_eq!(
                step.reference.as_ref().unwrap().library_match.as_deref(),
                lib.leak_pattern.as_deref()
            );
        }
    }
}

/// GC roots in Shark's order: thread objects first, then by type (monitor used before JNI
/// local before JNI global), so of equally short paths the first root's wins; a Java
/// frame of a thread without a thread object is a root visited last.
#[test]
fn roots_are_taken_in_sharks_order() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Scene::new();
    // A thread object's field against a static: the thread object comes first.
    let t1 = s.destroyed("com.example.First", &[]);
    let worker = s.class("com.example.Worker", s.thread, &[("mTarget", Ty::Object)]);
    let name = s.string("worker");
    let w = s.obj(worker, &[("name", name), ("mTarget", t1)]);
    s.b.root_thread(THREAD_OBJECT, w, 5);
    // Monitor used, JNI local and JNI global roots holding one object each way.
    let t2 = s.destroyed("com.example.Second", &[]);
    let holder = s.class("com.example.Native", s.object, &[("mHeld", Ty::Object)]);
    let g = s.obj(holder, &[("mHeld", t2)]);
    let l = s.obj(holder, &[("mHeld", t2)]);
    let m = s.obj(holder, &[("mHeld", t2)]);
    s.b.root_jni_global(g, 0x1000);
    s.b.root_thread(JNI_LOCAL, l, 5);
    s.b.root_simple(MONITOR_USED, m);
    // A stray Java frame (thread 99 has no thread object) against a static chain.
    let t3 = s.destroyed("com.example.Third", &[]);
    s.b.root_thread(JAVA_FRAME, t3, 99);
    let link = s.class("com.example.Link", s.object, &[("next", Ty::Object)]);
    let x = s.obj(link, &[("next", t3)]);
    s.holder("com.example.Holder", &[("sFirst", t1), ("sThird", x)]);
    let got = s.analyze("root-order", dir.path());
    assert_eq!(
        short(leak(&got, "com.example.First")),
        "thread object: Worker.mTarget > First"
    );
    assert_eq!(
        short(leak(&got, "com.example.Second")),
        "monitor used: Native.mHeld > Second"
    );
    assert_eq!(
        short(leak(&got, "com.example.Third")),
        "system class: Holder.sThird > Link.next > Third"
    );
}

/// ObjectAnimator.mTarget: a WeakReference Shark follows (last), as one step.
#[test]
fn an_animators_weak_target_is_followed_last() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Scene::new();
    let target = s.destroyed("com.example.SplashActivity", &[]);
    let weak =
        s.b.instance(s.weak, Heap::App, &[("referent", Val::Obj(target))]);
    // The fields Shark's Animator inspectors read (it fails without them).
    let base = s.class(
        "android.animation.Animator",
        s.object,
        &[("mListeners", Ty::Object)],
    );
    let value_animator = s.class(
        "android.animation.ValueAnimator",
        base,
        &[
            ("mAnimationEndRequested", Ty::Boolean),
            ("mDuration", Ty::Long),
            ("mInitialized", Ty::Boolean),
            ("mRepeatCount", Ty::Int),
            ("mRepeatMode", Ty::Int),
            ("mRunning", Ty::Boolean),
            ("mStartDelay", Ty::Long),
            ("mStarted", Ty::Boolean),
        ],
    );
    let animator = s.class(
        "android.animation.ObjectAnimator",
        value_animator,
        &[
            ("mProperty", Ty::Object),
            ("mPropertyName", Ty::Object),
            ("mTarget", Ty::Object),
        ],
    );
    let anim = s.obj(animator, &[("mTarget", weak)]);
    s.holder("com.example.Animations", &[("sFade", anim)]);
    let got = s.analyze("animator", dir.path());
    let l = leak(&got, "com.example.SplashActivity");
    assert_eq!(
        short(l),
        "system class: Animations.sFade > ObjectAnimator.mTarget > SplashActivity"
    );
    let r = l.trace.steps[1].reference.as_ref().unwrap();
    assert_eq!(r.reference_type.as_deref(), Some("INSTANCE_FIELD"));
    assert_eq!(
        r.collection.as_ref().unwrap().internal_path,
        ["mTarget", "referent"]
    );
}

/// The collections Shark reads as one step beyond the scenarios' ArrayList, HashMap and
/// MessageQueue, on the OpenJDK layout (Android 7+): each holds a destroyed Activity after
/// other entries.
#[test]
#[allow(clippy::too_many_lines)] // a scenario, step by step
fn openjdk_collections_are_one_step() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Scene::new();
    let o = s.object;
    let plain = s.class("com.example.Item", o, &[]);
    let p1 = s.obj(plain, &[]);
    let p2 = s.obj(plain, &[]);
    // LinkedList: first → Node.next → Node.next, the Activity in the third node's item.
    let linked_act = s.destroyed("com.example.LinkedActivity", &[]);
    let node = s.class(
        "java.util.LinkedList$Node",
        o,
        &[
            ("item", Ty::Object),
            ("next", Ty::Object),
            ("prev", Ty::Object),
        ],
    );
    let n3 = s.obj(node, &[("item", linked_act)]);
    let n2 = s.obj(node, &[("item", p2), ("next", n3)]);
    let n1 = s.obj(node, &[("item", p1), ("next", n2)]);
    let linked_list = s.class(
        "java.util.LinkedList",
        o,
        &[
            ("first", Ty::Object),
            ("last", Ty::Object),
            ("size", Ty::Int),
        ],
    );
    let linked = s.obj(linked_list, &[("first", n1), ("last", n3)]);
    // CopyOnWriteArrayList.array.
    let cow_act = s.destroyed("com.example.CowActivity", &[]);
    let cow_array = s.array(&[p1, cow_act]);
    let cow_class = s.class(
        "java.util.concurrent.CopyOnWriteArrayList",
        o,
        &[("array", Ty::Object), ("lock", Ty::Object)],
    );
    let cow = s.obj(cow_class, &[("array", cow_array)]);
    // ConcurrentHashMap: the value of key "k", second in its bucket.
    let chm_act = s.destroyed("com.example.ChmActivity", &[]);
    let chm_node = s.class(
        "java.util.concurrent.ConcurrentHashMap$Node",
        o,
        &[
            ("hash", Ty::Int),
            ("key", Ty::Object),
            ("next", Ty::Object),
            ("val", Ty::Object),
        ],
    );
    let k = s.string("k");
    let other_key = s.string("other");
    let e2 = s.obj(chm_node, &[("key", k), ("val", chm_act)]);
    let e1 = s.obj(chm_node, &[("key", other_key), ("val", p1), ("next", e2)]);
    let chm_table = s.array(&[0, e1, 0, 0]);
    let chm_class = s.class(
        "java.util.concurrent.ConcurrentHashMap",
        o,
        &[("table", Ty::Object), ("sizeCtl", Ty::Int)],
    );
    let chm = s.obj(chm_class, &[("table", chm_table)]);
    // HashSet.map (a HashMap: OpenJDK declares loadFactor), the Activity a key.
    let set_act = s.destroyed("com.example.SetActivity", &[]);
    let map_node = s.class(
        "java.util.HashMap$Node",
        o,
        &[
            ("hash", Ty::Int),
            ("key", Ty::Object),
            ("next", Ty::Object),
            ("value", Ty::Object),
        ],
    );
    let present = s.obj(o, &[]);
    let se = s.obj(map_node, &[("key", set_act), ("value", present)]);
    let set_table = s.array(&[0, 0, se, 0]);
    let hash_map = s.class(
        "java.util.HashMap",
        o,
        &[
            ("loadFactor", Ty::Float),
            ("size", Ty::Int),
            ("table", Ty::Object),
        ],
    );
    let backing = s.obj(hash_map, &[("table", set_table)]);
    let hash_set = s.class("java.util.HashSet", o, &[("map", Ty::Object)]);
    let set = s.obj(hash_set, &[("map", backing)]);
    // android.util.ArraySet.mArray.
    let aset_act = s.destroyed("com.example.ArraySetActivity", &[]);
    let aset_array = s.array(&[p2, aset_act, 0]);
    let array_set = s.class(
        "android.util.ArraySet",
        o,
        &[
            ("mArray", Ty::Object),
            ("mHashes", Ty::Object),
            ("mSize", Ty::Int),
        ],
    );
    let aset = s.obj(array_set, &[("mArray", aset_array)]);
    // androidx SafeIterableMap: mStart → Entry.mNext, the Activity the value of "obs".
    let safe_act = s.destroyed("com.example.SafeActivity", &[]);
    let entry = s.class(
        "androidx.arch.core.internal.SafeIterableMap$Entry",
        o,
        &[
            ("mKey", Ty::Object),
            ("mNext", Ty::Object),
            ("mPrevious", Ty::Object),
            ("mValue", Ty::Object),
        ],
    );
    let obs = s.string("obs");
    let first_key = s.string("first");
    let se2 = s.obj(entry, &[("mKey", obs), ("mValue", safe_act)]);
    let se1 = s.obj(
        entry,
        &[("mKey", first_key), ("mValue", p1), ("mNext", se2)],
    );
    let safe_map = s.class(
        "androidx.arch.core.internal.SafeIterableMap",
        o,
        &[
            ("mEnd", Ty::Object),
            ("mSize", Ty::Int),
            ("mStart", Ty::Object),
        ],
    );
    let safe = s.obj(safe_map, &[("mStart", se1), ("mEnd", se2)]);
    // WeakHashMap (LeakCanary HEAD): the value of key "wk"; a cleared entry before it.
    let weak_act = s.destroyed("com.example.WeakMapActivity", &[]);
    let whm_entry = s.class(
        "java.util.WeakHashMap$Entry",
        s.weak,
        &[
            ("hash", Ty::Int),
            ("next", Ty::Object),
            ("value", Ty::Object),
        ],
    );
    let wk = s.string("wk");
    let cleared = s.obj(whm_entry, &[("value", p2)]);
    let we = s.obj(
        whm_entry,
        &[("referent", wk), ("value", weak_act), ("next", cleared)],
    );
    let whm_table = s.array(&[we]);
    let null_key = s.obj(o, &[]);
    let whm_class = s.b.declare_class(
        "java.util.WeakHashMap",
        o,
        &[("size", Ty::Int), ("table", Ty::Object)],
        &[("NULL_KEY", Val::Obj(null_key))],
    );
    s.b.dump_class(whm_class, Heap::App);
    s.b.root_simple(STICKY, whm_class);
    let whm = s.obj(whm_class, &[("table", whm_table)]);
    s.holder(
        "com.example.Holder",
        &[
            ("sLinked", linked),
            ("sCow", cow),
            ("sChm", chm),
            ("sSet", set),
            ("sArraySet", aset),
            ("sSafe", safe),
            ("sWeak", whm),
        ],
    );
    let got = s.analyze("collections-openjdk", dir.path());
    let sys = "system class: Holder";
    for (class, want, internal) in [
        (
            "LinkedActivity",
            ".sLinked > LinkedList[2] > LinkedActivity",
            &["first", "next ×2", "item"][..],
        ),
        (
            "CowActivity",
            ".sCow > CopyOnWriteArrayList[1] > CowActivity",
            &["array", "[1]"][..],
        ),
        (
            "ChmActivity",
            ".sChm > ConcurrentHashMap[\"k\"] > ChmActivity",
            &["table", "[1]", "next", "val"][..],
        ),
        (
            "SetActivity",
            ".sSet > HashSet[element()] > SetActivity",
            &["map", "table", "[2]", "key"][..],
        ),
        (
            "ArraySetActivity",
            ".sArraySet > ArraySet[element()] > ArraySetActivity",
            &["mArray", "[1]"][..],
        ),
        (
            "SafeActivity",
            ".sSafe > SafeIterableMap[\"obs\"] > SafeActivity",
            &["mStart", "mNext", "mValue"][..],
        ),
        (
            "WeakMapActivity",
            ".sWeak > WeakHashMap[\"wk\"] > WeakMapActivity",
            &["table", "[0]", "value"][..],
        ),
    ] {
        let l = leak(&got, &format!("com.example.{class}"));
        assert_eq!(short(l), format!("{sys}{want}"), "{class}");
        let r = l.trace.steps[1].reference.as_ref().unwrap();
        assert_eq!(r.reference_type.as_deref(), Some("ARRAY_ENTRY"), "{class}");
        assert_eq!(r.generic(), "[x]", "{class}");
        let c = r.collection.as_ref().unwrap();
        assert_eq!(c.internal_path, internal, "{class}");
        assert_eq!(
            c.layout,
            if class.starts_with("Safe") || class.starts_with("ArraySet") {
                "android"
            } else {
                "openjdk"
            }
        );
    }
}

/// The same on Android 6's Apache Harmony layout: LinkedList's circular list from its
/// sentinel (the first element is 1), CopyOnWriteArrayList.elements, HashSet.backingMap
/// over HashMap$HashMapEntry.
#[test]
fn harmony_collections_are_one_step() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Scene::device(23, "samsung");
    let o = s.object;
    let plain = s.class("com.example.Item", o, &[]);
    let p1 = s.obj(plain, &[]);
    let linked_act = s.destroyed("com.example.LinkedActivity", &[]);
    let link = s.class(
        "java.util.LinkedList$Link",
        o,
        &[
            ("data", Ty::Object),
            ("next", Ty::Object),
            ("previous", Ty::Object),
        ],
    );
    // voidLink (no data) → p1 → the Activity → back to voidLink.
    let void_id = s.b.alloc_id(32);
    let second = s.obj(link, &[("data", linked_act), ("next", void_id)]);
    let first = s.obj(link, &[("data", p1), ("next", second)]);
    s.b.instance_at(
        void_id,
        link,
        Heap::App,
        &[("next", Val::Obj(first)), ("previous", Val::Obj(second))],
    );
    let linked_list = s.class(
        "java.util.LinkedList",
        o,
        &[("size", Ty::Int), ("voidLink", Ty::Object)],
    );
    let linked = s.obj(linked_list, &[("voidLink", void_id)]);
    let cow_act = s.destroyed("com.example.CowActivity", &[]);
    let cow_array = s.array(&[cow_act]);
    let cow_class = s.class(
        "java.util.concurrent.CopyOnWriteArrayList",
        o,
        &[("elements", Ty::Object)],
    );
    let cow = s.obj(cow_class, &[("elements", cow_array)]);
    let set_act = s.destroyed("com.example.SetActivity", &[]);
    let entry = s.class(
        "java.util.HashMap$HashMapEntry",
        o,
        &[
            ("hash", Ty::Int),
            ("key", Ty::Object),
            ("next", Ty::Object),
            ("value", Ty::Object),
        ],
    );
    let other = s.obj(entry, &[("key", p1)]);
    let e = s.obj(entry, &[("key", set_act), ("next", other)]);
    let table = s.array(&[0, e]);
    let hash_map = s.class(
        "java.util.HashMap",
        o,
        &[("size", Ty::Int), ("table", Ty::Object)],
    );
    let backing = s.obj(hash_map, &[("table", table)]);
    let hash_set = s.class("java.util.HashSet", o, &[("backingMap", Ty::Object)]);
    let set = s.obj(hash_set, &[("backingMap", backing)]);
    s.holder(
        "com.example.Holder",
        &[("sLinked", linked), ("sCow", cow), ("sSet", set)],
    );
    let got = s.analyze("collections-harmony", dir.path());
    for (class, want, internal) in [
        (
            "LinkedActivity",
            "system class: Holder.sLinked > LinkedList[2] > LinkedActivity",
            &["voidLink", "next ×2", "data"][..],
        ),
        (
            "CowActivity",
            "system class: Holder.sCow > CopyOnWriteArrayList[0] > CowActivity",
            &["elements", "[0]"][..],
        ),
        (
            "SetActivity",
            "system class: Holder.sSet > HashSet[element()] > SetActivity",
            &["backingMap", "table", "[1]", "key"][..],
        ),
    ] {
        let l = leak(&got, &format!("com.example.{class}"));
        assert_eq!(short(l), want, "{class}");
        let c = l.trace.steps[1]
            .reference
            .as_ref()
            .unwrap()
            .collection
            .as_ref()
            .unwrap();
        assert_eq!(c.internal_path, internal, "{class}");
        assert_eq!(c.layout, "harmony");
    }
}
