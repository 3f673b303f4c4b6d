//! Values from a made-up dump that no device writes (issue 53): registered native sizes
//! of `i64::MAX`, uptimes far apart, a screen of 2^40 × 2^40. Each is noted and left out,
//! never wrapped (nor a panic in a debug build, where these tests run); sizes that are
//! large but plausible still add up.

use hprof_fixtures::android::{Android, BitmapKind};
use hprof_fixtures::{Heap, Options as BuildOptions, Ty, Val};
use hprof_shrink_analyze::{analyze_path, Analysis, Options};
use hprof_shrink_core::Control;

use super::write;

fn analyze(bytes: &[u8]) -> Analysis {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "hostile.hprof", bytes);
    analyze_path(
        &path,
        &Options {
            pictures: false,
            ..Options::default()
        },
        &Control::default(),
    )
    .unwrap()
    .analysis
}

fn has_note(a: &Analysis, start: &str) -> bool {
    a.notes.iter().any(|n| n.starts_with(start))
}

/// `com.example.Big.sBitmaps` → an array of three Bitmaps, each registered (a Cleaner, its
/// thunk, its registry) with `size` bytes; `com.example.Small.sBytes` → a byte[200].
fn three_registered_bitmaps(size: i64) -> Vec<u8> {
    let mut a = Android::new(BuildOptions::default(), BitmapKind::NativePixels);
    let b = &mut a.b;
    let registry = b.declare_class(
        "libcore.util.NativeAllocationRegistry",
        a.object,
        &[("size", Ty::Long)],
        &[],
    );
    let thunk = b.declare_class(
        "libcore.util.NativeAllocationRegistry$CleanerThunk",
        a.object,
        &[("this$0", Ty::Object)],
        &[],
    );
    let phantom = b.declare_class("java.lang.ref.PhantomReference", a.reference, &[], &[]);
    let cleaner = b.declare_class("sun.misc.Cleaner", phantom, &[("thunk", Ty::Object)], &[]);
    let big = b.declare_class("com.example.Big", a.object, &[], &[]);
    let small = b.declare_class("com.example.Small", a.object, &[], &[]);
    for c in [a.bitmap, registry, thunk, phantom, cleaner] {
        b.dump_class(c, Heap::Image);
    }
    let mut bitmaps = Vec::new();
    let mut cleaners = Vec::new();
    for _ in 0..3 {
        let bitmap = b.instance(
            a.bitmap,
            Heap::App,
            &[("mWidth", Val::Int(10)), ("mHeight", Val::Int(10))],
        );
        let r = b.instance(registry, Heap::App, &[("size", Val::Long(size))]);
        let t = b.instance(thunk, Heap::App, &[("this$0", Val::Obj(r))]);
        cleaners.push(b.instance(
            cleaner,
            Heap::App,
            &[("referent", Val::Obj(bitmap)), ("thunk", Val::Obj(t))],
        ));
        bitmaps.push(bitmap);
    }
    let array = b.object_array(Heap::App, a.object_array, &bitmaps);
    b.set_static(big, "sBitmaps", Val::Obj(array));
    let held = b.object_array(Heap::App, a.object_array, &cleaners);
    b.set_static(cleaner, "sAll", Val::Obj(held));
    let bytes = b.byte_array(Heap::App, &[7; 200]);
    b.set_static(small, "sBytes", Val::Obj(bytes));
    for c in [big, small] {
        b.dump_class(c, Heap::App);
        b.root_simple(0x05, c);
    }
    a.b.finish()
}

#[test]
fn registered_native_sizes_of_i64_max_are_noted_not_summed() {
    let a = analyze(&three_registered_bitmaps(i64::MAX));
    assert!(
        has_note(&a, "registered native sizes left out as implausible"),
        "{:?}",
        a.notes
    );
    assert_eq!(a.dump.reachable_native_bytes, 0);
    let t = a.triage.as_ref().unwrap();
    assert_eq!((t.heap_native_bytes, t.bitmaps.native_bytes), (0, 0));
    assert!(t
        .top_retainers
        .iter()
        .all(|r| r.object.retained_native_bytes == 0));
}

#[test]
fn large_plausible_native_sizes_add_up_and_rank_their_holder_first() {
    let each = 1i64 << 40;
    let a = analyze(&three_registered_bitmaps(each));
    assert!(!has_note(&a, "registered native sizes"), "{:?}", a.notes);
    let t = a.triage.as_ref().unwrap();
    let want = 3 * each as u64;
    assert_eq!((t.heap_native_bytes, t.bitmaps.native_bytes), (want, want));
    let first = &t.top_retainers[0].object;
    assert_eq!(first.class_name, "com.example.Big");
    assert_eq!(first.retained_native_bytes, want);
    let text = hprof_shrink_analyze::render::text::render(&a);
    assert!(!text.contains("18446744"), "{text}");
}

/// A destroyed Activity watched by a LeakCanary 2 KeyedWeakReference whose uptimes are
/// `watch` and `retained`, the heap dumped at uptime `dumped`.
fn watched_activity(dumped: i64, watch: i64, retained: i64) -> Vec<u8> {
    let mut a = Android::new(BuildOptions::default(), BitmapKind::NativePixels);
    let b = &mut a.b;
    let kwr = b.declare_class(
        "leakcanary.KeyedWeakReference",
        a.weak_reference,
        &[
            ("description", Ty::Object),
            ("key", Ty::Object),
            ("retainedUptimeMillis", Ty::Long),
            ("watchUptimeMillis", Ty::Long),
        ],
        &[("heapDumpUptimeMillis", Val::Long(dumped))],
    );
    let holder = b.declare_class("com.example.Holder", a.object, &[], &[]);
    b.dump_class(a.activity, Heap::Image);
    b.dump_class(kwr, Heap::Image);
    let activity = b.instance(a.activity, Heap::App, &[("mDestroyed", Val::Bool(true))]);
    let key = b.string("k1", Heap::App);
    let description = b.string("com.example.MainActivity received onDestroy", Heap::App);
    let r = b.instance(
        kwr,
        Heap::App,
        &[
            ("referent", Val::Obj(activity)),
            ("key", Val::Obj(key)),
            ("description", Val::Obj(description)),
            ("watchUptimeMillis", Val::Long(watch)),
            ("retainedUptimeMillis", Val::Long(retained)),
        ],
    );
    b.set_static(holder, "sActivity", Val::Obj(activity));
    b.set_static(holder, "sWatch", Val::Obj(r));
    b.dump_class(holder, Heap::App);
    b.root_simple(0x05, holder);
    a.b.finish()
}

#[test]
fn uptimes_whose_difference_overflows_are_noted_not_wrapped() {
    let a = analyze(&watched_activity(i64::MAX, -5, i64::MIN + 1));
    assert!(
        has_note(&a, "KeyedWeakReferences whose uptimes are implausible"),
        "{:?}",
        a.notes
    );
    // Still retained (its retainedUptimeMillis is set), so still a leak; no duration shown.
    assert_eq!(a.leaks.len(), 1, "{:?}", a.leaks);
    let json = serde_json::to_string(&a).unwrap();
    assert!(!json.contains("9223372036854775807"), "{json}");
    // Ordinary uptimes give their durations, and no such note.
    let a = analyze(&watched_activity(10_000, 4_000, 6_000));
    assert!(!has_note(&a, "KeyedWeakReferences whose uptimes"));
    assert_eq!(a.leaks.len(), 1);
}

/// A `DisplayMetrics` of `w` × `h` (longs, as a made-up class may declare them).
fn display_metrics(w: i64, h: i64) -> Vec<u8> {
    let mut a = Android::new(BuildOptions::default(), BitmapKind::NativePixels);
    let b = &mut a.b;
    let metrics = b.declare_class(
        "android.util.DisplayMetrics",
        a.object,
        &[("heightPixels", Ty::Long), ("widthPixels", Ty::Long)],
        &[],
    );
    let holder = b.declare_class("com.example.Holder", a.object, &[], &[]);
    b.dump_class(metrics, Heap::Image);
    let m = b.instance(
        metrics,
        Heap::App,
        &[
            ("widthPixels", Val::Long(w)),
            ("heightPixels", Val::Long(h)),
        ],
    );
    b.set_static(holder, "sMetrics", Val::Obj(m));
    b.dump_class(holder, Heap::App);
    b.root_simple(0x05, holder);
    a.b.finish()
}

#[test]
fn a_screen_of_2_40_squared_is_noted_and_koom_measures_large_bitmaps() {
    let a = analyze(&display_metrics(1 << 40, 1 << 40));
    assert!(
        has_note(&a, "DisplayMetrics left out as implausible"),
        "{:?}",
        a.notes
    );
    let b = &a.triage.as_ref().unwrap().bitmaps;
    assert_eq!(b.large_rule, "koom");
    assert!(b.screen.is_none());
    assert_ne!(b.large_threshold_pixels, 0);
    // A real screen is taken.
    let a = analyze(&display_metrics(1080, 2400));
    let b = &a.triage.as_ref().unwrap().bitmaps;
    assert_eq!(
        (b.large_rule.as_str(), b.large_threshold_pixels),
        ("screen", 2_851_200)
    );
}
