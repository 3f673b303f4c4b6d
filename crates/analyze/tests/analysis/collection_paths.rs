//! Paths through one big collection (issue 53): the traces of many leaks at the end of a
//! `LinkedList` name their steps out of it by one walk of the list, not one walk each,
//! so the analysis stays linear in the dump. The work is counted
//! (`Timings::step_reads`: the references the naming walks read), not timed.

use hprof_fixtures::android::{Android, BitmapKind};
use hprof_fixtures::{Heap, Options as BuildOptions, Ty, Val};
use hprof_shrink_analyze::{analyze_path, Options, Skip};
use hprof_shrink_core::Control;

use super::write;

/// `com.example.Holder.sList` → a `java.util.LinkedList` of `len` items, the last
/// `leaks` of them destroyed Activities, the others plain objects.
fn linked_list_with_leaks(len: usize, leaks: usize) -> Vec<u8> {
    let mut a = Android::new(BuildOptions::default(), BitmapKind::NativePixels);
    let b = &mut a.b;
    let list = b.declare_class(
        "java.util.LinkedList",
        a.object,
        &[
            ("first", Ty::Object),
            ("last", Ty::Object),
            ("size", Ty::Int),
        ],
        &[],
    );
    let node = b.declare_class(
        "java.util.LinkedList$Node",
        a.object,
        &[
            ("item", Ty::Object),
            ("next", Ty::Object),
            ("prev", Ty::Object),
        ],
        &[],
    );
    let item = b.declare_class("com.example.Item", a.object, &[], &[]);
    let leaky = b.declare_class("com.example.LeakyActivity", a.activity, &[], &[]);
    let holder = b.declare_class("com.example.Holder", a.object, &[], &[]);
    for c in [list, node, a.activity] {
        b.dump_class(c, Heap::Image);
    }
    for c in [item, leaky] {
        b.dump_class(c, Heap::App);
    }
    // Ids are handed out in order: the nodes are written last to first, each pointing to
    // the one written before it (`next`); `prev` is left null.
    let mut next = 0;
    for i in (0..len).rev() {
        let value = if i >= len - leaks {
            b.instance(leaky, Heap::App, &[("mDestroyed", Val::Bool(true))])
        } else {
            b.instance(item, Heap::App, &[])
        };
        next = b.instance(
            node,
            Heap::App,
            &[("item", Val::Obj(value)), ("next", Val::Obj(next))],
        );
    }
    let l = b.instance(
        list,
        Heap::App,
        &[("first", Val::Obj(next)), ("size", Val::Int(len as i32))],
    );
    b.set_static(holder, "sList", Val::Obj(l));
    b.dump_class(holder, Heap::App);
    b.root_simple(0x05, holder);
    a.b.finish()
}

#[test]
fn leaks_at_the_end_of_a_long_list_walk_it_once() {
    const LEN: usize = 200_000;
    const LEAKS: usize = 60;
    let dir = tempfile::tempdir().unwrap();
    let path = write(
        dir.path(),
        "list.hprof",
        &linked_list_with_leaks(LEN, LEAKS),
    );
    let options = Options {
        pictures: false,
        ..Options::default()
    };
    let outcome = analyze_path(&path, &options, &Control::default()).unwrap();
    let a = &outcome.analysis;
    // Fifty traced (the cap), one signature.
    assert_eq!(a.leaks.len(), 1, "{:?}", a.leaks);
    let leak = &a.leaks[0];
    assert_eq!(leak.trace_count, 50);
    assert_eq!(a.omitted_leaks, (LEAKS - 50) as u64);
    let step = &leak.trace.steps[leak.trace.steps.len() - 2];
    assert_eq!(step.class_name, "java.util.LinkedList");
    let reference = step.reference.as_ref().unwrap();
    let index: usize = reference.name[1..reference.name.len() - 1]
        .parse()
        .unwrap_or_else(|_| panic!("{reference:?}"));
    assert!(index >= LEN - LEAKS, "{reference:?}");
    // One walk of the list for all the traces (each names its step out of the list
    // twice: in its signature and as shown) and one for all the triage's paths: about
    // 2 × LEN references, where a walk a step reads over 100 × LEN.
    let reads = outcome.timings.step_reads;
    assert!(reads >= LEN as u64, "{reads}");
    assert!(
        reads <= 3 * LEN as u64,
        "{reads} references read to name the steps"
    );
}

/// `com.example.Holder.sMap` → a `java.util.HashMap` of `len` entries, one a bucket, the
/// value in bucket `leak_at` a destroyed Activity under the String key `"leak"` (the other
/// keys and values plain objects).
fn hash_map_with_leak(len: usize, leak_at: usize) -> Vec<u8> {
    let mut a = Android::new(BuildOptions::default(), BitmapKind::NativePixels);
    let object_array = a.object_array;
    let b = &mut a.b;
    let map = b.declare_class(
        "java.util.HashMap",
        a.object,
        &[
            ("loadFactor", Ty::Float),
            ("size", Ty::Int),
            ("table", Ty::Object),
        ],
        &[],
    );
    let node = b.declare_class(
        "java.util.HashMap$Node",
        a.object,
        &[
            ("hash", Ty::Int),
            ("key", Ty::Object),
            ("next", Ty::Object),
            ("value", Ty::Object),
        ],
        &[],
    );
    let item = b.declare_class("com.example.Item", a.object, &[], &[]);
    let leaky = b.declare_class("com.example.LeakyActivity", a.activity, &[], &[]);
    let holder = b.declare_class("com.example.Holder", a.object, &[], &[]);
    for c in [map, node, a.activity] {
        b.dump_class(c, Heap::Image);
    }
    for c in [item, leaky] {
        b.dump_class(c, Heap::App);
    }
    let buckets: Vec<u64> = (0..len)
        .map(|i| {
            let (key, value) = if i == leak_at {
                let key = b.string("leak", Heap::App);
                let value = b.instance(leaky, Heap::App, &[("mDestroyed", Val::Bool(true))]);
                (key, value)
            } else {
                (
                    b.instance(item, Heap::App, &[]),
                    b.instance(item, Heap::App, &[]),
                )
            };
            b.instance(
                node,
                Heap::App,
                &[("key", Val::Obj(key)), ("value", Val::Obj(value))],
            )
        })
        .collect();
    let table = b.object_array(Heap::App, object_array, &buckets);
    let m = b.instance(
        map,
        Heap::App,
        &[("table", Val::Obj(table)), ("size", Val::Int(len as i32))],
    );
    b.set_static(holder, "sMap", Val::Obj(m));
    b.dump_class(holder, Heap::App);
    b.root_simple(0x05, holder);
    a.b.finish()
}

/// Naming the step out of a large HashMap stops walking its entries once the entry the
/// search took is met: a leak in the map's second bucket reads a batch of entries, one
/// in its last bucket reads them all; the step is named the same either way. (The triage
/// is left out: its paths include `HashMap.table`, a field, named after every entry.)
#[test]
fn naming_a_step_out_of_a_big_map_stops_at_its_entry() {
    const LEN: usize = 50_000;
    let dir = tempfile::tempdir().unwrap();
    let options = Options {
        pictures: false,
        skip: Skip {
            triage: true,
            ..Skip::default()
        },
        ..Options::default()
    };
    let analyze = |leak_at: usize| {
        let name = format!("map-{leak_at}.hprof");
        let path = write(dir.path(), &name, &hash_map_with_leak(LEN, leak_at));
        let outcome = analyze_path(&path, &options, &Control::default()).unwrap();
        let a = &outcome.analysis;
        assert_eq!(a.leaks.len(), 1, "{:?}", a.leaks);
        let steps = &a.leaks[0].trace.steps;
        let step = &steps[steps.len() - 2];
        assert_eq!(step.class_name, "java.util.HashMap");
        let reference = step.reference.clone().unwrap();
        (reference, outcome.timings.step_reads)
    };
    let (early, early_reads) = analyze(1);
    let (late, late_reads) = analyze(LEN - 1);
    assert_eq!(early.name, "[\"leak\"]", "{early:?}");
    let path = |r: &hprof_shrink_analyze::model::Reference| {
        r.collection.as_ref().unwrap().internal_path.clone()
    };
    assert_eq!(path(&early), ["table", "[1]", "value"], "{early:?}");
    assert_eq!(late.name, early.name);
    assert_eq!(path(&late), ["table", &format!("[{}]", LEN - 1), "value"]);
    // The last entry: the walk reads every key and value (2 × LEN).
    assert!(late_reads >= 2 * LEN as u64, "{late_reads}");
    // The second: the walk stops within the first batch of buckets.
    assert!(
        early_reads < LEN as u64 / 10,
        "{early_reads} references read to name the steps (the last entry: {late_reads})"
    );
}
