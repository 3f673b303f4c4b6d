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

/// A trace of pid 7 whose packages list gives its app's version code 42, holding `items`
/// items.
fn app_trace(items: u64) -> Vec<u8> {
    let mut t = wire::packages_packet(&[("com.example.app", 10001, Some(42))]);
    t.extend(wire::process_packet(7, Some(10001), "com.example.app"));
    t.extend(holder(7, items));
    t
}

/// The analysis's JSON without what differs by file and run: the input's own facts (its
/// path, bytes, manifest, extra) and the timings.
fn heap_facts(mut v: serde_json::Value) -> serde_json::Value {
    v.as_object_mut().unwrap().remove("input");
    v.as_object_mut().unwrap().remove("timings");
    v
}

/// The command that packages a dump, given a trace, zips it as it is with result.info and
/// extra.info (stored or deflated), and the package analyzes as the trace does: the same
/// JSON but for the input's own facts, which are the package's result.info and its
/// extra.info before what the trace says (the package's versionCode wins over the
/// trace's); diff takes the package as a trace.
#[test]
fn a_trace_packaged_analyzes_as_the_trace() {
    let dir = tempfile::tempdir().unwrap();
    let trace = app_trace(3);
    let raw = write(dir.path(), "heap.pftrace", &trace);
    let raw_json = json(&run(&["analyze", &raw, "--format", "json"]));
    assert_eq!(raw_json["input"]["kind"], "perfetto");
    for level in ["0", "6"] {
        let zip = dir.path().join(format!("heap-{level}.zip"));
        let out = run(&[
            &raw,
            s(&zip),
            "--level",
            level,
            "--sdk-version",
            "35",
            "--extra",
            "appVersion=1.4",
            "--extra",
            "versionCode=7",
        ]);
        assert!(out.status.success(), "{}", common::stderr(&out));
        let said = common::stderr(&out);
        assert!(
            said.contains("packaged as it is") && said.contains("manufacturer"),
            "{said}"
        );
        let pkg = hprof_shrink_core::package::PackageReader::open(&zip).unwrap();
        assert_eq!(
            pkg.names().collect::<Vec<_>>(),
            ["result.info", "heap.pftrace", "extra.info"]
        );
        let manifest = pkg.manifest().unwrap();
        let value = |k| hprof_shrink_core::package::reader::value(&manifest, k);
        assert_eq!(value("hprofEntry"), Some("heap.pftrace"));
        assert_eq!(value("sdkVersion"), Some("35"));
        let mut entry = Vec::new();
        std::io::Read::read_to_end(&mut pkg.stream("heap.pftrace").unwrap(), &mut entry).unwrap();
        assert!(entry == trace, "the trace as it is");

        let zipped = json(&run(&["analyze", s(&zip), "--format", "json"]));
        assert_eq!(zipped["input"]["kind"], "perfetto");
        assert_eq!(
            zipped["input"]["extra"],
            serde_json::json!([
                ["appVersion", "1.4"],
                ["versionCode", "7"],
                ["processName", "com.example.app"],
                ["packageName", "com.example.app"]
            ])
        );
        assert_eq!(heap_facts(zipped), heap_facts(raw_json.clone()));
        let out = run(&["diff", &raw, s(&zip)]);
        assert!(out.status.success(), "{}", common::stderr(&out));
        // verify checks HPROF packages, and says what this one is.
        let out = run(&["verify", s(&zip)]);
        failed_with(
            &out,
            1,
            &["heap.pftrace is a Perfetto trace, not an HPROF dump"],
        );
    }
}

/// `--pid` picks a process of a packaged trace as of a raw one (a package made by hand:
/// the command refuses to package a trace of several processes, as serve refuses one);
/// an HPROF package with `--pid` is still refused.
#[test]
fn pid_picks_a_process_of_a_packaged_trace() {
    let dir = tempfile::tempdir().unwrap();
    let mut trace = wire::process_tree(&[(3, "com.example.small"), (7, "com.example.big")]);
    trace.extend(holder(3, 1));
    trace.extend(holder(7, 4));
    let zip = common::zip_of(
        &[
            ("result.info", &common::result_info("two.pftrace")),
            ("two.pftrace", &trace),
        ],
        6,
    );
    let zip = write(dir.path(), "two.zip", &zip);
    failed_with(
        &run(&["analyze", &zip]),
        1,
        &["pids 3 com.example.small, 7 com.example.big"],
    );
    let out = run(&["analyze", &zip, "--pid", "7", "--format", "json"]);
    assert_eq!(json(&out)["dump"]["reachableObjects"], 6);

    let hprof_zip = dir.path().join("dump.zip");
    let out = run(&[s(&fixture("art-api25.hprof")), s(&hprof_zip), "-q"]);
    assert!(out.status.success(), "{}", common::stderr(&out));
    failed_with(
        &run(&["analyze", s(&hprof_zip), "--pid", "1"]),
        1,
        &["not a Perfetto trace"],
    );
}

/// What makes no sense for a trace is refused before anything is written: the options
/// that act on a dump's content, an HPROF output, and a trace that is not one process's
/// heap graph (the reader's reason).
#[test]
fn packaging_a_trace_refuses_what_makes_no_sense() {
    let dir = tempfile::tempdir().unwrap();
    let raw = write(dir.path(), "heap.pftrace", &app_trace(1));
    let mut two = app_trace(1);
    two.extend(holder(8, 1));
    let two = write(dir.path(), "two.pftrace", &two);
    let mut other = wire::other_packet();
    other.extend(wire::process_packet(7, Some(10001), "com.example.app"));
    let other = write(dir.path(), "other.pftrace", &other);
    let zip = dir.path().join("out.zip");
    let hprof = s(&dir.path().join("out.hprof")).to_string();
    for (args, why) in [
        (vec![&raw, s(&zip), "--hprof-out", &hprof], "--hprof-out"),
        (vec![&raw, s(&zip), "--private"], "--private"),
        (vec![&raw, s(&zip), "--strip", "none"], "--strip"),
        (vec![&raw, s(&zip), "--salvage"], "--salvage"),
        (vec![&other, s(&zip)], "no Java heap graph"),
        (vec![&two, s(&zip)], "several processes"),
    ] {
        let out = run(&args);
        assert!(!out.status.success(), "{args:?}");
        assert!(
            common::stderr(&out).contains(why),
            "{why}: {}",
            common::stderr(&out)
        );
        assert!(!zip.exists() && !Path::new(&hprof).exists(), "{args:?}");
    }
}

/// A trace's package that is wrong is refused with why: a second trace beside the one
/// result.info names (which heap is the package's would be a guess), a trace cut inside
/// a packet (the reader's offset), an entry whose bytes are not what the zip says.
#[test]
fn a_wrong_trace_package_is_refused_with_why() {
    let dir = tempfile::tempdir().unwrap();
    let trace = app_trace(2);
    let info = common::result_info("a.pftrace");
    let two = common::zip_of(
        &[
            ("result.info", &info),
            ("a.pftrace", &trace),
            ("b.pftrace", &trace),
        ],
        6,
    );
    let two = write(dir.path(), "two.zip", &two);
    failed_with(
        &run(&["analyze", &two]),
        1,
        &["\"b.pftrace\" beside its trace \"a.pftrace\""],
    );
    let cut = &trace[..trace.len() - 5];
    let cut_zip = common::zip_of(&[("result.info", &info), ("a.pftrace", cut)], 6);
    let cut_zip = write(dir.path(), "cut.zip", &cut_zip);
    failed_with(
        &run(&["analyze", &cut_zip]),
        1,
        &["a.pftrace", "says it has"],
    );
    // The stored trace's last byte changed under its CRC-32.
    let mut damaged = common::zip_of(&[("result.info", &info), ("a.pftrace", &trace)], 0);
    let at = damaged
        .windows(trace.len())
        .position(|w| w == trace)
        .unwrap()
        + trace.len()
        - 1;
    damaged[at] ^= 1;
    let damaged = write(dir.path(), "damaged.zip", &damaged);
    failed_with(
        &run(&["analyze", &damaged]),
        1,
        &["a.pftrace does not decompress", "CRC-32"],
    );
}
