//! `hprof-shrink growth`: LeakCanary's heap growth detection over dumps made here, of a
//! list growing by k objects from one dump to the next, and of one that does not grow.

mod common;

use std::path::{Path, PathBuf};

use common::{run, s};
use hprof_fixtures::android::{Android, BitmapKind};
use hprof_fixtures::{Heap, Options as BuildOptions, Ty, Val};
use hprof_shrink_analyze::growth::{growth_paths, GrowthOptions, GrowthReport};
use hprof_shrink_core::Control;

const LIST_NODE: &str = "INSTANCE_FIELD ItemList.elements -> array of java.lang.Object[]";
const ITEM_NODE: &str = "ARRAY_ENTRY Object[].[x] -> instance of com.example.Item";
/// An Item (java.lang.Object's two fields and one int) and its slot in the array (a
/// 4-byte id).
const BYTES_PER_ITEM: i64 = 8 + 4 + 4;

/// `com.example.Cart.sItems` → an ItemList whose `elements` array holds `items` Items;
/// `com.example.Stable.sFixed` → an array of 5 Items in every dump.
fn dump(items: usize, timestamp_ms: u64) -> Vec<u8> {
    let opts = BuildOptions {
        timestamp_ms,
        ..BuildOptions::default()
    };
    let mut a = Android::new(opts, BitmapKind::NativePixels);
    let item =
        a.b.declare_class("com.example.Item", a.object, &[("n", Ty::Int)], &[]);
    a.b.dump_class(item, Heap::App);
    let list = a.b.declare_class(
        "com.example.ItemList",
        a.object,
        &[("elements", Ty::Object)],
        &[],
    );
    a.b.dump_class(list, Heap::App);
    let make = |a: &mut Android, n: usize| -> u64 {
        let elements: Vec<u64> = (0..n)
            .map(|i| a.b.instance(item, Heap::App, &[("n", Val::Int(i as i32))]))
            .collect();
        a.b.object_array(Heap::App, a.object_array, &elements)
    };
    let array = make(&mut a, items);
    let held =
        a.b.instance(list, Heap::App, &[("elements", Val::Obj(array))]);
    let cart = a.b.declare_class("com.example.Cart", a.object, &[], &[]);
    a.b.set_static(cart, "sItems", Val::Obj(held));
    a.b.dump_class(cart, Heap::App);
    a.b.root_simple(0x05, cart);
    let fixed = make(&mut a, 5);
    let stable = a.b.declare_class("com.example.Stable", a.object, &[], &[]);
    a.b.set_static(stable, "sFixed", Val::Obj(fixed));
    a.b.dump_class(stable, Heap::App);
    a.b.root_simple(0x05, stable);
    a.b.finish()
}

fn write(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    path
}

fn growth(paths: &[PathBuf], loops: u64) -> GrowthReport {
    let options = GrowthOptions {
        scenario_loops: loops,
        ..GrowthOptions::default()
    };
    growth_paths(paths, &options, &Control::default(), &mut |_, _| {})
        .unwrap_or_else(|e| panic!("growth: {e}"))
}

/// Three dumps of the list at `sizes`.
fn dumps(dir: &Path, sizes: [usize; 3]) -> Vec<PathBuf> {
    sizes
        .iter()
        .enumerate()
        .map(|(i, &n)| {
            write(
                dir,
                &format!("d{i}.hprof"),
                &dump(n, 1_700_000_000_000 + i as u64),
            )
        })
        .collect()
}

const K: usize = 3;

#[test]
fn a_list_growing_by_k_is_reported_with_k_per_step() {
    let dir = tempfile::tempdir().unwrap();
    let paths = dumps(dir.path(), [10, 10 + K, 10 + 2 * K]);
    let r = growth(&paths, 1);
    assert!(r.growing, "{r:#?}");
    assert_eq!(r.stopped_at, None);
    assert_eq!(r.dumps.len(), 3);
    // The list's array alone grows: not the stable array, not the holders above it.
    assert_eq!(r.nodes.len(), 1, "{:#?}", r.nodes);
    let node = &r.nodes[0];
    assert_eq!(node.name, LIST_NODE);
    assert_eq!(node.objects, 1);
    let path: Vec<&str> = node.path.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(
        path,
        [
            "GcRoot(StickyClass)",
            "STATIC_FIELD Cart.sItems -> instance of com.example.ItemList",
        ]
    );
    assert_eq!(node.children.len(), 1);
    let child = &node.children[0];
    assert_eq!(child.name, ITEM_NODE);
    assert_eq!(child.objects, (10 + 2 * K) as u64);
    assert_eq!(child.increases, [K as u64, K as u64]);
    assert_eq!(child.increase_per_loop, K as f64);
    // It retains its Items (and itself); the increase over the dump before is k Items.
    let retained = node.retained_bytes.expect("retained size");
    assert!(retained >= (10 + 2 * K) as u64 * BYTES_PER_ITEM as u64);
    assert_eq!(node.retained_objects, Some((1 + 10 + 2 * K) as u64));
    assert_eq!(
        node.retained_increase_bytes,
        Some(K as i64 * BYTES_PER_ITEM)
    );
    assert_eq!(node.retained_increase_objects, Some(K as i64));
}

#[test]
fn growth_below_the_scenario_loops_is_not_growth() {
    let dir = tempfile::tempdir().unwrap();
    let paths = dumps(dir.path(), [10, 10 + K, 10 + 2 * K]);
    // k per step over k loops: one object per loop, still growth.
    let r = growth(&paths, K as u64);
    assert!(r.growing);
    assert_eq!(r.nodes[0].children[0].increase_per_loop, 1.0);
    // Fewer than one object per loop is not.
    let r = growth(&paths, K as u64 + 1);
    assert!(!r.growing);
    assert_eq!(r.stopped_at, Some(2));
    assert!(r.nodes.is_empty());
}

#[test]
fn a_list_that_does_not_grow_is_not_reported() {
    let dir = tempfile::tempdir().unwrap();
    let paths = dumps(dir.path(), [10, 10, 10]);
    let r = growth(&paths, 1);
    assert!(!r.growing, "{r:#?}");
    assert!(r.nodes.is_empty());
    // Nothing grew from dump 1 to 2: the third is not read.
    assert_eq!(r.stopped_at, Some(2));
    assert_eq!(r.dumps.len(), 2);
}

#[test]
fn growth_that_stops_is_not_growth() {
    let dir = tempfile::tempdir().unwrap();
    let paths = dumps(dir.path(), [10, 10 + K, 10 + K]);
    let r = growth(&paths, 1);
    assert!(!r.growing);
    assert_eq!(r.stopped_at, Some(3));
}

#[test]
fn growth_command_orders_a_directory_by_dump_time() {
    let dir = tempfile::tempdir().unwrap();
    let dumps_dir = dir.path().join("dumps");
    std::fs::create_dir(&dumps_dir).unwrap();
    // Names in the reverse of the dumps' times: the header's time decides.
    for (name, items, t) in [
        ("c.hprof", 10, 1),
        ("b.hprof", 10 + K, 2),
        ("a.hprof", 10 + 2 * K, 3),
    ] {
        write(&dumps_dir, name, &dump(items, 1_700_000_000_000 + t));
    }
    let out = run(&["growth", s(&dumps_dir), "--format", "json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["growing"], true, "{v:#}");
    assert!(v["dumps"][0]["path"].as_str().unwrap().ends_with("c.hprof"));
    assert_eq!(v["nodes"][0]["name"], LIST_NODE);
    assert_eq!(
        v["nodes"][0]["children"][0]["increases"],
        serde_json::json!([K, K])
    );

    let out = run(&["growth", s(&dumps_dir)]);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains(&format!("╰→{LIST_NODE} (1 object)")),
        "{text}"
    );
    assert!(text.contains(ITEM_NODE), "{text}");

    let html = dir.path().join("g.html");
    let out = run(&["growth", s(&dumps_dir), "--format", "html", "-o", s(&html)]);
    assert!(out.status.success());
    assert!(std::fs::read_to_string(&html)
        .unwrap()
        .contains("ItemList.elements"));

    // One dump is bad usage (exit 2); an unreadable one a failure (exit 1).
    let one = dumps_dir.join("a.hprof");
    assert_eq!(run(&["growth", s(&one)]).status.code(), Some(2));
    let bad = write(dir.path(), "bad.hprof", b"not a dump");
    let out = run(&["growth", s(&one), s(&bad)]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        run(&["growth", s(&one), s(&one), "--scenario-loops", "0"])
            .status
            .code(),
        Some(2)
    );
}
