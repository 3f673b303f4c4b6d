//! Memory the analyzer promises in docs/analyze.md (issue 53), measured with a counting
//! allocator (this binary's own; its tests take turns, so that nothing else allocates
//! meanwhile):
//! - a dump of a million leaking objects costs no more than one of fifty beyond a few
//!   bytes each (only fifty are traced): the peak of the analysis of a dump whose objects
//!   are watched by `KeyedWeakReference`s sharing one long description, less that of the
//!   same dump whose references are of a class nobody watches with;
//! - an R8 mapping costs its text and 16 bytes a field, once however often it is cloned
//!   (`diff` hands it to each side).

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use hprof_fixtures::android::{Android, BitmapKind};
use hprof_fixtures::{Heap, Options as BuildOptions, Ty, Val};
use hprof_shrink_analyze::{analyze_path, Mapping, Options};
use hprof_shrink_core::Control;

struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            let now = LIVE.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
            PEAK.fetch_max(now, Ordering::Relaxed);
        }
        p
    }

    unsafe fn dealloc(&self, p: *mut u8, layout: Layout) {
        unsafe { System.dealloc(p, layout) };
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Held by each test while it measures.
static TURN: Mutex<()> = Mutex::new(());

/// Bytes a leaking object found may cost at the analysis's peak (docs/analyze.md, step 5).
const PER_LEAKING_OBJECT: usize = 64;

/// `n` destroyed-looking objects (`com.example.Screen`), each held by a static array and
/// referred to by a reference of class `reference` (retained, one key each, all sharing
/// one description of 5,000 characters).
fn watched(n: usize, reference: &str) -> Vec<u8> {
    let mut a = Android::new(BuildOptions::default(), BitmapKind::NativePixels);
    let b = &mut a.b;
    let kwr = b.declare_class(
        reference,
        a.weak_reference,
        &[
            ("description", Ty::Object),
            ("key", Ty::Object),
            ("retainedUptimeMillis", Ty::Long),
            ("watchUptimeMillis", Ty::Long),
        ],
        &[("heapDumpUptimeMillis", Val::Long(50_000))],
    );
    let screen = b.declare_class("com.example.Screen", a.object, &[], &[]);
    let holder = b.declare_class("com.example.Holder", a.object, &[], &[]);
    for c in [kwr, screen] {
        b.dump_class(c, Heap::App);
    }
    let description = b.string(&"d".repeat(5000), Heap::App);
    let mut held = Vec::with_capacity(2 * n);
    for i in 0..n {
        let object = b.instance(screen, Heap::App, &[]);
        let key = b.string(&format!("{i:036}"), Heap::App);
        let r = b.instance(
            kwr,
            Heap::App,
            &[
                ("referent", Val::Obj(object)),
                ("key", Val::Obj(key)),
                ("description", Val::Obj(description)),
                ("watchUptimeMillis", Val::Long(1_000)),
                ("retainedUptimeMillis", Val::Long(10_000)),
            ],
        );
        held.extend([object, r]);
    }
    let array = b.object_array(Heap::App, a.object_array, &held);
    b.set_static(holder, "sHeld", Val::Obj(array));
    b.dump_class(holder, Heap::App);
    b.root_simple(0x05, holder);
    a.b.finish()
}

/// The peak of live heap bytes while the dump `bytes` is analyzed, and its leaks' count.
fn peak_of(bytes: &[u8]) -> (usize, u64) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("watched.hprof");
    std::fs::write(&path, bytes).unwrap();
    let options = Options {
        pictures: false,
        ..Options::default()
    };
    PEAK.store(LIVE.load(Ordering::Relaxed), Ordering::Relaxed);
    let before = LIVE.load(Ordering::Relaxed);
    let outcome = analyze_path(&path, &options, &Control::default()).unwrap();
    let peak = PEAK.load(Ordering::Relaxed).saturating_sub(before);
    let a = &outcome.analysis;
    let leaks = a.leaks.iter().map(|l| l.trace_count).sum::<u64>() + a.omitted_leaks;
    (peak, leaks)
}

#[test]
fn a_leaking_object_costs_a_few_bytes_however_long_its_description() {
    let _turn = TURN.lock().unwrap_or_else(|e| e.into_inner());
    // 100,000 in CI (a debug build); the bound is per object, so any count checks it:
    // HPROF_SHRINK_MEMORY_N=1000000 with --release measures the million.
    let n: usize = std::env::var("HPROF_SHRINK_MEMORY_N")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100_000);
    let (plain, none) = peak_of(&watched(n, "com.example.NotAWatcher"));
    assert_eq!(none, 0);
    let (leaking, found) = peak_of(&watched(n, "leakcanary.KeyedWeakReference"));
    assert_eq!(found, n as u64);
    let each = leaking.saturating_sub(plain) / n;
    assert!(
        each <= PER_LEAKING_OBJECT,
        "{each} bytes a leaking object at the peak ({leaking} against {plain})"
    );
}

#[test]
fn a_mapping_costs_its_text_and_16_bytes_a_field_once() {
    let _turn = TURN.lock().unwrap_or_else(|e| e.into_inner());
    const CLASSES: usize = 2_000;
    const FIELDS: usize = 100;
    let mut text = String::from("# compiler: R8\n");
    for c in 0..CLASSES {
        text.push_str(&format!("com.example.feature.Class{c} -> a.b{c}:\n"));
        for f in 0..FIELDS {
            text.push_str(&format!("    java.lang.Object field{f} -> f{f}\n"));
        }
        text.push_str("    void run() -> a\n");
    }
    let before = LIVE.load(Ordering::Relaxed);
    let m = Mapping::parse(&text).unwrap();
    let held = LIVE.load(Ordering::Relaxed).saturating_sub(before);
    let bound = text.len() + 16 * CLASSES * FIELDS + 24 * CLASSES + 4096;
    assert!(held <= bound, "{held} bytes held, over {bound}");
    assert_eq!(
        m.heap_bytes() as usize,
        text.len() + 16 * CLASSES * FIELDS + 24 * CLASSES
    );
    // A clone (each side of a diff) shares it.
    let before = LIVE.load(Ordering::Relaxed);
    let sides = [m.clone(), m.clone()];
    assert!(LIVE.load(Ordering::Relaxed).saturating_sub(before) < 64);
    assert_eq!(sides[1].field("a.b7", "f42").as_deref(), Some("field42"));
    assert_eq!(
        sides[0].class("a.b7[]").as_deref(),
        Some("com.example.feature.Class7[]")
    );
}
