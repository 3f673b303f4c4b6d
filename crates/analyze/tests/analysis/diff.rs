//! `diff_paths`: two dumps made here that differ by N leaked objects of one class (and one
//! leaking Activity), compared (the `diff` command's own test is the CLI's, tests/cli.rs).

use std::path::Path;

use hprof_fixtures::android::{Android, BitmapKind};
use hprof_fixtures::series::{cache as dump, PAYLOAD_LONGS as PAYLOAD};
use hprof_fixtures::{Heap, Options as BuildOptions, Val};
use hprof_shrink_analyze::diff::{diff_paths, DiffOptions, DiffReport};
use hprof_shrink_core::Control;

use super::write;

/// Bytes of a `com.example.Leaked` instance: java.lang.Object's two fields (ART's
/// `shadow$_klass_` and `shadow$_monitor_`), then one int and one reference (4-byte ids).
const LEAKED_BYTES: u64 = 8 + 8;

fn diff(base: &Path, new: &Path) -> DiffReport {
    diff_paths(
        base,
        new,
        &DiffOptions::default(),
        &Control::default(),
        &mut |_, _, _| {},
    )
    .unwrap_or_else(|e| panic!("diff: {e}"))
}

const BASE_ITEMS: usize = 20;
const N: usize = 37;

#[test]
fn diff_counts_the_leaked_objects_of_one_class_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let base = write(dir.path(), "base.hprof", &dump(BASE_ITEMS, false));
    let new = write(dir.path(), "new.hprof", &dump(BASE_ITEMS + N, true));
    let r = diff(&base, &new);

    let class = |name: &str| {
        r.classes
            .iter()
            .find(|c| c.class_name == name)
            .unwrap_or_else(|| panic!("{name} not in {:#?}", r.classes))
    };
    let leaked = class("com.example.Leaked");
    assert_eq!(leaked.base.instances, BASE_ITEMS as u64);
    assert_eq!(leaked.new.instances, (BASE_ITEMS + N) as u64);
    assert_eq!(leaked.instances, N as i64);
    assert_eq!(leaked.shallow_bytes, (N as u64 * LEAKED_BYTES) as i64);
    // Each retains itself and its payload, whose size is the same in both dumps.
    let payload = class("long[]");
    assert_eq!(payload.instances, N as i64);
    let payload_bytes = payload.shallow_bytes as u64 / N as u64;
    assert_eq!(payload.shallow_bytes as u64, N as u64 * payload_bytes);
    assert!(payload_bytes >= 8 * PAYLOAD as u64, "{payload_bytes}");
    assert_eq!(
        leaked.retained_bytes,
        (N as u64 * (LEAKED_BYTES + payload_bytes)) as i64
    );
    // Largest change of retained bytes first: the Leaked before their payloads (the
    // class object of the cache, which retains them all, before both).
    let at = |name: &str| r.classes.iter().position(|c| c.class_name == name).unwrap();
    assert!(at("java.lang.Class") < at("com.example.Leaked"));
    assert!(at("com.example.Leaked") < at("long[]"));

    // The Activity leaks in the new dump only.
    assert_eq!(r.new_leaks.len(), 1, "{:#?}", r.new_leaks);
    assert_eq!(r.new_leaks[0].class_name, "com.example.LeakyActivity");
    assert!(r.gone_leaks.is_empty());

    // The cache's class retains the items: a retainer that grew, named by its path.
    let cache = r
        .retainers
        .iter()
        .find(|x| x.path.iter().any(|p| p.contains("com.example.Cache")))
        .unwrap_or_else(|| panic!("no Cache retainer in {:#?}", r.retainers));
    assert!(cache.base_retained_bytes.is_some());
    assert!(
        cache.change >= (N as u64 * (LEAKED_BYTES + payload_bytes)) as i64,
        "{cache:#?}"
    );
}

/// A diff reads each side's leaks, totals and census, never its triage: neither side
/// assembles one (it cost each side about a fifth more than its census on chains-200).
#[test]
fn a_diffs_sides_make_no_triage() {
    let dir = tempfile::tempdir().unwrap();
    let base = write(dir.path(), "base.hprof", &dump(BASE_ITEMS, false));
    let new = write(dir.path(), "new.hprof", &dump(BASE_ITEMS + N, true));
    let mut steps: Vec<Vec<&'static str>> = Vec::new();
    diff_paths(
        &base,
        &new,
        &DiffOptions::default(),
        &Control::default(),
        &mut |_, _, t| steps.push(t.steps.iter().map(|s| s.name).collect()),
    )
    .unwrap_or_else(|e| panic!("diff: {e}"));
    assert_eq!(steps.len(), 2);
    for side in &steps {
        assert!(side.contains(&"census"), "{side:?}");
        assert!(side.contains(&"subtrees"), "{side:?}");
        assert!(!side.contains(&"triage"), "{side:?}");
    }
}

#[test]
fn diff_of_a_dump_with_itself_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let base = write(dir.path(), "a.hprof", &dump(BASE_ITEMS, true));
    let r = diff(&base, &base);
    assert!(r.classes.is_empty(), "{:#?}", r.classes);
    assert!(r.new_leaks.is_empty() && r.gone_leaks.is_empty());
    assert_eq!(r.kept_leak_signatures, 1);
    assert!(r.retainers.is_empty(), "{:#?}", r.retainers);
}

/// `com.example.Holder.sActivities` → an array of `n` destroyed `LeakyActivity`: `n`
/// leaking objects with one signature.
fn activities_in_one_array(n: usize) -> Vec<u8> {
    let mut a = Android::new(BuildOptions::default(), BitmapKind::NativePixels);
    let activity = a.activity;
    a.b.dump_class(activity, Heap::Image);
    let leaky =
        a.b.declare_class("com.example.LeakyActivity", activity, &[], &[]);
    a.b.dump_class(leaky, Heap::App);
    let instances: Vec<u64> = (0..n)
        .map(|_| {
            let title = a.b.string("Leaky", Heap::App);
            let values = [("mDestroyed", Val::Bool(true)), ("mTitle", Val::Obj(title))];
            a.b.instance(leaky, Heap::App, &values)
        })
        .collect();
    let array = a.b.object_array(Heap::App, a.object_array, &instances);
    let holder = a.b.declare_class("com.example.Holder", a.object, &[], &[]);
    a.b.set_static(holder, "sActivities", Val::Obj(array));
    a.b.dump_class(holder, Heap::App);
    a.b.root_simple(0x05, holder);
    a.b.finish()
}

/// A new leak whose signature several leaking objects share counts each of them, and
/// what they retain together, as the analysis's leak says (`traceCount`,
/// `totalRetainedBytes`), not only the trace it shows.
#[test]
fn a_new_leak_counts_every_object_of_its_signature() {
    let dir = tempfile::tempdir().unwrap();
    let base = write(dir.path(), "base.hprof", &dump(BASE_ITEMS, false));
    let new = write(dir.path(), "new.hprof", &activities_in_one_array(3));
    let analysis = hprof_shrink_analyze::analyze_path(
        &new,
        &hprof_shrink_analyze::Options::default(),
        &Control::default(),
    )
    .unwrap()
    .analysis;
    assert_eq!(analysis.leaks.len(), 1, "{:#?}", analysis.leaks);
    let leak = &analysis.leaks[0];
    assert_eq!(leak.trace_count, 3);
    assert!(leak.total_retained_bytes > leak.retained_bytes);
    let r = diff(&base, &new);
    assert_eq!(r.new_leaks.len(), 1, "{:#?}", r.new_leaks);
    assert_eq!(r.new_leaks[0].count, 3);
    assert_eq!(r.new_leaks[0].retained_bytes, leak.total_retained_bytes);
}
