//! `growth_paths`: LeakCanary's heap growth detection over dumps made here, of a list
//! growing by k objects from one dump to the next, and of one that does not grow (the
//! `growth` command's own test is the CLI's, tests/cli.rs).

use std::path::{Path, PathBuf};

use hprof_fixtures::series::{
    item_list as dump, item_list_in, linked_feed, one_item_many_times, pair_lists, FEED_HEAD_NODE,
    ITEM_NODE, LINK_NODE, LIST_NODE, PAIR_LIST_NODE,
};
use hprof_shrink_analyze::growth::{dump_time, growth_paths, GrowthOptions, GrowthReport};
use hprof_shrink_core::Control;

use super::write;

/// An Item (java.lang.Object's two fields and one int) and its slot in the array (a
/// 4-byte id).
const BYTES_PER_ITEM: i64 = 8 + 4 + 4;

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
    dumps_of(dir, sizes, dump)
}

/// Three dumps made by `make` at `sizes`.
fn dumps_of(dir: &Path, sizes: [usize; 3], make: fn(usize, u64) -> Vec<u8>) -> Vec<PathBuf> {
    sizes
        .iter()
        .enumerate()
        .map(|(i, &n)| {
            write(
                dir,
                &format!("d{i}.hprof"),
                &make(n, 1_700_000_000_000 + i as u64),
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

/// A linked list is one path node however long it is (its links' Strings one more), not
/// one per link: its growth is found the same, and a long list costs no path per object.
#[test]
fn a_growing_linked_list_is_one_path_node() {
    const LINKS: usize = 300;
    let dir = tempfile::tempdir().unwrap();
    let paths = dumps_of(dir.path(), [LINKS, LINKS + K, LINKS + 2 * K], linked_feed);
    let r = growth(&paths, 1);
    assert!(r.growing, "{r:#?}");
    // The framework's few classes and fields, not the links: far fewer paths than links.
    for d in &r.dumps {
        assert!(
            d.path_nodes < 100,
            "{} path nodes for {LINKS} links",
            d.path_nodes
        );
    }
    assert_eq!(r.nodes.len(), 1, "{:#?}", r.nodes);
    let node = &r.nodes[0];
    assert_eq!(node.name, FEED_HEAD_NODE);
    assert_eq!(node.objects, 1);
    let child = &node.children[0];
    assert_eq!(child.name, LINK_NODE);
    assert_eq!(child.objects, (LINKS + 2 * K - 1) as u64);
    assert_eq!(child.increases, [K as u64, K as u64]);
    // The head retains every link and its label (String and its chars).
    let links = (LINKS + 2 * K) as u64;
    assert!(node.retained_objects.unwrap() >= 2 * links);
    assert!(node.retained_increase_objects.unwrap() >= 2 * K as i64);
}

/// Objects of one node whose references go by two names in turn (each Pair's `left`, then
/// its `right`) are grouped by name, each group holding its own: every Pair's list under
/// one node, every list's array under the next, the Items below growing by k a list.
#[test]
fn a_nodes_objects_are_grouped_by_name_across_its_objects() {
    const PAIRS: usize = 4;
    let dir = tempfile::tempdir().unwrap();
    let make = |items: usize, at: u64| pair_lists(PAIRS, items, at);
    let paths = dumps_of(dir.path(), [2, 2 + K, 2 + 2 * K], make);
    let r = growth(&paths, 1);
    assert!(r.growing, "{r:#?}");
    assert_eq!(r.nodes.len(), 1, "{:#?}", r.nodes);
    let node = &r.nodes[0];
    assert_eq!(node.name, LIST_NODE);
    assert_eq!(node.objects, PAIRS as u64);
    let path: Vec<(&str, u64)> = node
        .path
        .iter()
        .map(|p| (p.name.as_str(), p.objects))
        .collect();
    assert_eq!(
        path[1..],
        [
            (
                "STATIC_FIELD Shelf.sPairs -> array of java.lang.Object[]",
                1
            ),
            (
                "ARRAY_ENTRY Object[].[x] -> instance of com.example.Pair",
                PAIRS as u64
            ),
            (PAIR_LIST_NODE, PAIRS as u64),
        ]
    );
    let child = &node.children[0];
    assert_eq!(child.name, ITEM_NODE);
    assert_eq!(child.objects, (PAIRS * (2 + 2 * K)) as u64);
    assert_eq!(child.increases, [(PAIRS * K) as u64, (PAIRS * K) as u64]);
}

#[test]
fn an_object_referenced_many_times_from_one_node_is_one_object() {
    // The array holds 10, 20, then 30 references to one Item: the Item does not grow.
    let dir = tempfile::tempdir().unwrap();
    let paths = dumps_of(dir.path(), [10, 20, 30], one_item_many_times);
    let r = growth(&paths, 1);
    assert!(!r.growing, "{:#?}", r.nodes);
    assert_eq!(r.stopped_at, Some(2));
    // Each dump: the same objects, the Item counted once (not once per reference).
    let reached: Vec<u64> = r.dumps.iter().map(|d| d.reachable_objects).collect();
    assert_eq!(reached[0], reached[1], "{:#?}", r.dumps);
    let once = growth_of_one(&paths[0]);
    assert_eq!(once, reached[0]);
}

/// The reachable objects growth counts in one dump alone, against `analyze`'s count.
fn growth_of_one(path: &Path) -> u64 {
    let r = growth(&[path.to_path_buf()], 1);
    let counted = r.dumps[0].reachable_objects;
    let analysis = hprof_shrink_analyze::analyze_path(
        path,
        &hprof_shrink_analyze::Options::default(),
        &Control::default(),
    )
    .unwrap();
    assert_eq!(
        counted, analysis.analysis.dump.reachable_objects,
        "growth and analyze count the reachable objects alike"
    );
    counted
}

#[test]
fn names_from_the_dump_are_shown_not_acted_on() {
    // The holder's class name carries a terminal escape and a bidi override.
    const CART: &str = "com.example.\u{1b}[31mCart\u{202e}";
    let dir = tempfile::tempdir().unwrap();
    let paths: Vec<PathBuf> = [10, 10 + K, 10 + 2 * K]
        .iter()
        .enumerate()
        .map(|(i, &n)| {
            write(
                dir.path(),
                &format!("d{i}.hprof"),
                &item_list_in(CART, n, 1_700_000_000_000 + i as u64),
            )
        })
        .collect();
    let r = growth(&paths, 1);
    assert!(r.growing, "{r:#?}");
    let names: Vec<&str> = r.nodes[0].path.iter().map(|p| p.name.as_str()).collect();
    let text = hprof_shrink_analyze::render::growth::text(&r);
    for shown in names.iter().copied().chain([text.as_str()]) {
        assert!(
            !shown.contains('\u{1b}') && !shown.contains('\u{202e}'),
            "{shown:?}"
        );
    }
    assert!(
        names.iter().any(|n| n.contains("\\u{1b}[31mCart\\u{202e}")),
        "{names:?}"
    );
}

#[test]
fn a_dumps_time_is_read_from_its_header_alone() {
    // A .hprof.gz cut short far past its header: inflating it whole fails, its header
    // does not (ordering a directory reads only that, whatever the dump's size).
    use std::io::Write;
    let dir = tempfile::tempdir().unwrap();
    let dump = dump(2000, 1_700_000_000_123);
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(&dump).unwrap();
    let gz = gz.finish().unwrap();
    let cut = write(dir.path(), "cut.hprof.gz", &gz[..gz.len() / 2]);
    assert_eq!(dump_time(&cut).unwrap(), Some(1_700_000_000_123));
    assert!(hprof_shrink_analyze::input::open(&cut).is_err());
    let whole = write(dir.path(), "whole.hprof", &dump);
    assert_eq!(dump_time(&whole).unwrap(), Some(1_700_000_000_123));
}
