//! `analyze`, `diff` and `growth` on Perfetto heap-graph traces: `--pid` in a trace of
//! several processes, a trace compared with a trace, a mix of HPROF and traces refused.
//! The traces are written here (test-support's heap-graph writer).

mod common;

use std::path::Path;

use common::{failed_with, fixture, run, s, stdout};
use hprof_shrink_test_support::trace::{self as wire, NAMES, OBJECTS, ROOTS, TYPES};

/// `HeapGraphRoot.Type` of a JNI global.
const JNI_GLOBAL: u64 = 1;

/// The heap graph of `pid`: a rooted `com.example.Holder` whose `items` is an
/// `java.lang.Object[]` of `items` `com.example.Item`s (16 bytes each).
fn holder(pid: u64, items: u64) -> Vec<u8> {
    let ids: Vec<u64> = (0..items).map(|i| 0x100 + 0x10 * i).collect();
    let mut parts = vec![
        (TYPES, wire::ty(1, "com.example.Holder", 0, &[1])),
        (TYPES, wire::ty(2, "java.lang.Object[]", 0, &[])),
        (TYPES, wire::ty(3, "com.example.Item", 0, &[])),
        (NAMES, wire::name(1, "com.example.Holder.items")),
        (OBJECTS, wire::object(0x10, 1, 16, &[0x20])),
        (OBJECTS, wire::object(0x20, 2, 12 + 4 * items, &ids)),
    ];
    for &id in &ids {
        parts.push((OBJECTS, wire::object(id, 3, 16, &[])));
    }
    parts.push((ROOTS, wire::root(JNI_GLOBAL, &[0x10])));
    wire::graph_packet(pid, &parts)
}

fn write(dir: &Path, name: &str, bytes: &[u8]) -> String {
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    s(&path).to_string()
}

fn json(out: &std::process::Output) -> serde_json::Value {
    assert!(out.status.success(), "{}", common::stderr(out));
    serde_json::from_str(&stdout(out)).unwrap()
}

/// Two processes' graphs: without --pid, one line naming both (with their names from the
/// trace's process tree) and the option; with it, that process's heap; a pid the trace
/// lacks, the pids it has.
#[test]
fn pid_picks_a_process_and_its_absence_lists_them() {
    let dir = tempfile::tempdir().unwrap();
    let mut trace = wire::process_tree(&[(3, "com.example.small"), (7, "com.example.big")]);
    trace.extend(holder(3, 1));
    trace.extend(holder(7, 4));
    let trace = write(dir.path(), "two.pftrace", &trace);

    let out = run(&["analyze", &trace]);
    let err = failed_with(
        &out,
        1,
        &["pids 3 com.example.small, 7 com.example.big", "--pid"],
    );
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");

    let out = run(&["analyze", &trace, "--pid", "7", "--format", "json"]);
    let a = json(&out);
    assert_eq!(a["input"]["kind"], "perfetto");
    // The holder, the array and 4 items.
    assert_eq!(a["dump"]["reachableObjects"], 6);
    let out = run(&["analyze", &trace, "--pid", "3", "--format", "json"]);
    assert_eq!(json(&out)["dump"]["reachableObjects"], 3);

    let out = run(&["analyze", &trace, "--pid", "5"]);
    failed_with(&out, 1, &["no heap graph of pid 5", "3 com.example.small"]);

    // A process's name is the trace's: escaped and cut as any name from the input.
    let mut trace = wire::process_tree(&[(3, "evil\u{1b}[2J"), (7, &"x".repeat(1000))]);
    trace.extend(holder(3, 1));
    trace.extend(holder(7, 1));
    let trace = write(dir.path(), "named.pftrace", &trace);
    let err = failed_with(
        &run(&["analyze", &trace]),
        1,
        &["3 evil\\u{1b}[2J", "…[+936 chars]"],
    );
    assert!(!err.contains('\u{1b}'), "{err:?}");
}

/// `--pid` asks for a process of a trace: an HPROF dump has none to pick, and says so
/// rather than ignoring it.
#[test]
fn pid_for_an_hprof_dump_is_refused() {
    let dump = fixture("art-api25.hprof");
    let out = run(&["analyze", s(&dump), "--pid", "1"]);
    failed_with(&out, 1, &["not a Perfetto trace", "--pid"]);
}

/// A trace against a trace: the classes' changes counted as for HPROF dumps.
#[test]
fn diff_compares_two_traces() {
    let dir = tempfile::tempdir().unwrap();
    let base = write(dir.path(), "base.pftrace", &holder(3, 1));
    let new = write(dir.path(), "new.pftrace", &holder(3, 5));
    let out = run(&["diff", &base, &new, "--format", "json", "--pid", "3"]);
    let d = json(&out);
    assert_eq!(d["base"]["kind"], "perfetto");
    assert_eq!(d["new"]["kind"], "perfetto");
    let item = d["classes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["className"] == "com.example.Item")
        .unwrap_or_else(|| panic!("no Item in {d}"));
    assert_eq!(item["instances"], 4);
    assert_eq!(item["base"]["shallowBytes"], 16);
    assert_eq!(item["new"]["shallowBytes"], 80);
}

/// A dump and a trace are refused together, naming both, before either is analyzed.
#[test]
fn diff_and_growth_refuse_a_mix_of_hprof_and_traces() {
    let dir = tempfile::tempdir().unwrap();
    let trace = write(dir.path(), "a.pftrace", &holder(3, 1));
    let dump = fixture("art-api25.hprof");
    let out = run(&["diff", s(&dump), &trace]);
    failed_with(
        &out,
        1,
        &[
            "art-api25.hprof is an HPROF",
            "a.pftrace a Perfetto",
            "one kind",
        ],
    );
    let out = run(&["growth", &trace, s(&dump), &trace]);
    failed_with(&out, 1, &["one kind"]);
}

/// Three traces of a growing heap, in a directory (in name order: a trace has no
/// wall-clock time): the Holder's items grow by 2 each step.
#[test]
fn growth_finds_what_grows_across_traces() {
    let dir = tempfile::tempdir().unwrap();
    for (i, items) in [2, 4, 6].into_iter().enumerate() {
        write(
            dir.path(),
            &format!("run-{}.pftrace", i + 1),
            &holder(9, items),
        );
    }
    let out = run(&[
        "growth",
        s(dir.path()),
        "--format",
        "json",
        "--scenario-loops",
        "2",
    ]);
    let g = json(&out);
    assert_eq!(g["dumps"].as_array().unwrap().len(), 3, "{g}");
    assert_eq!(g["growing"], true, "{g}");
    let node = &g["nodes"][0];
    let path: Vec<&str> = node["path"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert_eq!(path, ["GcRoot(JniGlobal)"], "{node}");
    assert_eq!(
        node["name"],
        "INSTANCE_FIELD Holder.items -> array of java.lang.Object[]"
    );
    let child = &node["children"][0];
    assert_eq!(
        child["name"],
        "ARRAY_ENTRY Object[].[x] -> instance of com.example.Item"
    );
    assert_eq!(child["increases"], serde_json::json!([2, 2]));
    // Two items of 16 bytes and two more array slots a step.
    assert_eq!(node["retainedIncreaseBytes"], 40);
}
