//! Perfetto heap graphs read through the heap-source seam.
//!
//! Perfetto's own test traces (tests/perfetto/, their source in its README.md), encoded by
//! `protoc` (scripts/setup-protoc.sh; skipped with the reason printed where it is missing
//! outside CI, or could not be installed), give the sizes and reachability Perfetto's trace processor is expected to
//! give: the tables beside them. Hand-built traces hold the hostile cases: truncated,
//! lying lengths, huge varints, no roots, cycles, repeated ids, several processes.

use std::path::Path;

use hprof_shrink_analyze::model::Analysis;
use hprof_shrink_analyze::perfetto::{TraceError, TraceSource};
use hprof_shrink_analyze::{analyze_path, analyze_source, AnalyzeError, Options};
use hprof_shrink_core::space::Unpack;
use hprof_shrink_core::Control;
use hprof_shrink_test_support::trace::{self as wire, NAMES, OBJECTS, ROOTS, TYPES};

/// `name`.textproto of tests/perfetto encoded as a binary trace; `None` when there is
/// no protoc.
fn encoded(name: &str) -> Option<Vec<u8>> {
    wire::encoded(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/perfetto"),
        name,
    )
}

/// A table of Perfetto's expected outputs (CSV with quoted strings): its rows by column.
fn table(name: &str) -> Vec<std::collections::HashMap<String, String>> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/perfetto/{name}.out"));
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines = text.lines().map(|l| {
        l.split(',')
            .map(|c| c.trim_matches('"').to_string())
            .collect::<Vec<_>>()
    });
    let head = lines.next().unwrap();
    lines
        .map(|row| head.iter().cloned().zip(row).collect())
        .collect()
}

fn analyze(bytes: &[u8], pid: Option<i32>) -> Result<Analysis, AnalyzeError> {
    let source = TraceSource::open("trace", bytes, pid)?;
    let options = Options::default();
    let control = Control::default();
    Ok(analyze_source(&source, &options, &Unpack::default(), &control)?.analysis)
}

/// (class, shallow, retained) of the top retainers, sorted.
fn retainers(a: &Analysis) -> Vec<(String, u64, u64)> {
    let triage = a.triage.as_ref().expect("a triage");
    let mut r: Vec<_> = triage
        .top_retainers
        .iter()
        .map(|r| {
            let o = &r.object;
            (o.class_name.clone(), o.shallow_bytes, o.retained_bytes)
        })
        .collect();
    r.sort();
    r
}

/// What Perfetto's tables say of `trace`: the reachable objects' bytes (the object table's
/// `reachable` rows) and the rooted objects' sizes; with a flame graph, each root's
/// cumulative size (what it retains: these graphs are trees below their roots).
fn check_against_perfetto(trace: &str, objects: &str, flamegraph: Option<&str>) {
    let Some(bytes) = encoded(trace) else {
        return;
    };
    let a = analyze(&bytes, None).unwrap();
    let rows = table(objects);
    let size =
        |r: &std::collections::HashMap<String, String>, c: &str| -> u64 { r[c].parse().unwrap() };
    let reachable: u64 = rows
        .iter()
        .filter(|r| r["reachable"] == "1")
        .map(|r| size(r, "self_size"))
        .sum();
    assert_eq!(a.triage.as_ref().unwrap().heap_bytes, reachable, "{trace}");
    let ours = retainers(&a);
    let mut shallow: Vec<u64> = ours.iter().map(|r| r.1).collect();
    shallow.sort_unstable();
    let mut rooted: Vec<u64> = rows
        .iter()
        .filter(|r| r["root_type"] != "[NULL]")
        .map(|r| size(r, "self_size"))
        .collect();
    rooted.sort_unstable();
    assert_eq!(shallow, rooted, "{trace}: the rooted objects' sizes");
    if let Some(flamegraph) = flamegraph {
        let mut theirs: Vec<(u64, u64)> = table(flamegraph)
            .iter()
            .filter(|r| r["depth"] == "0")
            .map(|r| (size(r, "size"), size(r, "cumulative_size")))
            .collect();
        theirs.sort_unstable();
        let mut ours: Vec<(u64, u64)> = ours.iter().map(|r| (r.1, r.2)).collect();
        ours.sort_unstable();
        assert_eq!(ours, theirs, "{trace}: what each root retains");
    }
}

#[test]
fn perfettos_heap_graph_gives_its_expected_tables() {
    // Zygote objects rooted (the Parcel), superclass fields, an id given as a delta.
    check_against_perfetto(
        "heap_graph",
        "heap_graph_object_3",
        Some("heap_graph_flamegraph_2"),
    );
}

#[test]
fn perfettos_baseapk_heap_graph_gives_its_expected_tables() {
    // Field ids given per object, sizes per object rather than per type.
    check_against_perfetto("heap_graph_baseapk", "heap_graph_object", None);
}

#[test]
fn perfettos_branching_graph_gives_its_expected_sizes() {
    let Some(trace) = encoded("heap_graph_branching") else {
        return;
    };
    let a = analyze(&trace, None).unwrap();
    // The focused flame graph's left branch: RootNode 100, LeftChild0 200 holding
    // LeftChild1 400, cumulative 700; the right branch (800 + 1600, the textproto's) is
    // the rest of what the root retains.
    let rows = table("heap_graph_flamegraph_focused");
    let root = &rows[0];
    assert_eq!(root["name"], "RootNode [ROOT_JAVA_FRAME]");
    let shallow: u64 = root["size"].parse().unwrap();
    let left: u64 = root["cumulative_size"].parse().unwrap();
    let total = left + 800 + 1600;
    assert_eq!(a.triage.as_ref().unwrap().heap_bytes, total);
    assert_eq!(
        retainers(&a),
        vec![("RootNode".to_string(), shallow, total)]
    );
}

/// A small heap: a rooted Node (48 bytes) whose `next` is a second Node (48) whose
/// `next` is the first: a cycle; a third Node unreachable.
fn cycle(pid: u64) -> Vec<u8> {
    wire::graph_packet(
        pid,
        &[
            (TYPES, wire::ty(1, "Node", 0, &[1])),
            (NAMES, wire::name(1, "Node.next")),
            (OBJECTS, wire::object(0x10, 1, 48, &[0x20])),
            (OBJECTS, wire::object(0x20, 1, 48, &[0x10])),
            (OBJECTS, wire::object(0x30, 1, 48, &[0x10])),
            (ROOTS, wire::root(3, &[0x10])),
        ],
    )
}

#[test]
fn a_cycle_is_reachable_once_and_retained_by_its_root() {
    let a = analyze(&cycle(7), None).unwrap();
    assert_eq!(a.triage.as_ref().unwrap().heap_bytes, 96);
    assert_eq!(retainers(&a), vec![("Node".to_string(), 48, 96)]);
}

#[test]
fn a_graph_with_no_roots_holds_nothing_reachable() {
    let trace = wire::graph_packet(
        7,
        &[
            (TYPES, wire::ty(1, "Node", 0, &[])),
            (OBJECTS, wire::object(0x10, 1, 48, &[])),
        ],
    );
    let a = analyze(&trace, None).unwrap();
    assert_eq!(a.triage.as_ref().unwrap().heap_bytes, 0);
    assert!(retainers(&a).is_empty());
}

#[test]
fn repeated_ids_keep_the_first_object_and_type() {
    let trace = wire::graph_packet(
        7,
        &[
            (TYPES, wire::ty(1, "Node", 0, &[])),
            (TYPES, wire::ty(1, "Other", 0, &[])),
            (OBJECTS, wire::object(0x10, 1, 48, &[])),
            (OBJECTS, wire::object(0x10, 1, 4000, &[])),
            (ROOTS, wire::root(3, &[0x10, 0x10])),
        ],
    );
    let a = analyze(&trace, None).unwrap();
    assert_eq!(retainers(&a), vec![("Node".to_string(), 48, 48)]);
}

#[test]
fn a_superclass_cycle_ends() {
    let trace = wire::graph_packet(
        7,
        &[
            (TYPES, wire::ty(1, "A", 2, &[1])),
            (TYPES, wire::ty(2, "B", 1, &[1])),
            (NAMES, wire::name(1, "A.f")),
            (OBJECTS, wire::object(0x10, 1, 48, &[0x20, 0])),
            (OBJECTS, wire::object(0x20, 2, 16, &[])),
            (ROOTS, wire::root(3, &[0x10])),
        ],
    );
    // What the analysis makes of a cyclic hierarchy is its own affair; the reading ends.
    let _ = analyze(&trace, None);
}

#[test]
fn several_processes_are_listed_and_one_can_be_chosen() {
    let mut trace = cycle(7);
    trace.extend(cycle(3));
    let err = TraceSource::open("t", &trace, None).err().unwrap();
    assert!(matches!(err, TraceError::SeveralProcesses { ref pids } if pids == "3, 7"));
    assert_eq!(TraceSource::open("t", &trace, Some(3)).unwrap().pid(), 3);
    let err = TraceSource::open("t", &trace, Some(5)).err().unwrap();
    assert!(matches!(err, TraceError::NoSuchProcess { pid: 5, .. }));
}

#[test]
fn a_chosen_process_is_read_from_its_own_packets_alone() {
    // pid 7's heap in two packets, pid 3's between them with the same ids and type key:
    // each pass reads a packet's pid where the trace holds several processes' graphs.
    let mut trace = wire::graph_packet(
        7,
        &[
            (TYPES, wire::ty(1, "Node", 0, &[1])),
            (NAMES, wire::name(1, "Node.next")),
        ],
    );
    trace.extend(wire::graph_packet(
        3,
        &[
            (TYPES, wire::ty(1, "Big", 0, &[])),
            (OBJECTS, wire::object(0x10, 1, 4000, &[])),
            (ROOTS, wire::root(3, &[0x10])),
        ],
    ));
    trace.extend(wire::graph_packet(
        7,
        &[
            (OBJECTS, wire::object(0x10, 1, 48, &[0x20])),
            (OBJECTS, wire::object(0x20, 1, 48, &[0x10])),
            (ROOTS, wire::root(3, &[0x10])),
        ],
    ));
    let of = |pid| retainers(&analyze(&trace, Some(pid)).unwrap());
    assert_eq!(of(7), vec![("Node".to_string(), 48, 96)]);
    assert_eq!(of(3), vec![("Big".to_string(), 4000, 4000)]);
}

#[test]
fn a_trace_without_a_heap_graph_says_so() {
    // A packet holding only a timestamp.
    assert!(matches!(
        TraceSource::open("t", &[0x0a, 0x02, 0x40, 0x0a], None),
        Err(TraceError::NoHeapGraph)
    ));
}

#[test]
fn a_truncated_trace_is_an_error_at_every_cut() {
    let trace = cycle(7);
    for cut in 1..trace.len() {
        match TraceSource::open("t", &trace[..cut], None) {
            Err(TraceError::PacketPastEnd { offset: 0, .. } | TraceError::Truncated { .. }) => {}
            other => panic!("cut at {cut}: {:?}", other.err()),
        }
    }
}

#[test]
fn a_lying_length_is_refused_where_it_is() {
    let mut trace = cycle(7);
    let good = trace.len() as u64;
    // A second packet whose length says 2^40 bytes.
    trace.push(0x0a);
    wire::varint(1 << 40, &mut trace);
    trace.extend_from_slice(&[0; 8]);
    match TraceSource::open("t", &trace, None) {
        Err(TraceError::PacketPastEnd { offset, len, .. }) => {
            assert_eq!((offset, len), (good, 1 << 40));
        }
        other => panic!("{:?}", other.err()),
    }
    // A field inside a heap-graph packet that runs past it.
    let mut inner = Vec::new();
    wire::bytes(56, &[0x12, 0x7f, 0], &mut inner);
    let mut trace = Vec::new();
    wire::bytes(1, &inner, &mut trace);
    assert!(matches!(
        TraceSource::open("t", &trace, None),
        Err(TraceError::BadPacket { .. })
    ));
}

#[test]
fn a_huge_varint_is_refused_where_it_starts() {
    let mut trace = cycle(7);
    let at = trace.len() as u64;
    trace.push(0x0a);
    trace.extend_from_slice(&[0xff; 11]);
    assert!(matches!(
        TraceSource::open("t", &trace, None),
        Err(TraceError::BadVarint { offset }) if offset == at + 1
    ));
    // Ten bytes whose last sets bits past 64.
    let mut trace = vec![0x0a];
    trace.extend_from_slice(&[0xff; 9]);
    trace.push(0x02);
    assert!(matches!(
        TraceSource::open("t", &trace, None),
        Err(TraceError::BadVarint { offset: 1 })
    ));
}

#[test]
fn a_varint_reads_as_protobuf_reads_it_and_a_fault_says_which() {
    use hprof_shrink_analyze::perfetto::wire::varint;
    // Every length (and the lengths' edges) that the inline paths and the long one read,
    // behind a prefix, then cut at every byte.
    let mut values = vec![0, 1, 0x7f, 0x80, 0x3fff, 0x4000, 0x1f_ffff, u32::MAX as u64];
    values.extend((0..64).map(|b| 1u64 << b));
    values.extend([u64::MAX, u64::MAX - 1]);
    for v in values {
        let mut bytes = vec![0x55];
        wire::varint(v, &mut bytes);
        let len = bytes.len() - 1;
        assert_eq!(varint(&bytes, 1).unwrap(), (v, len), "{v:#x}");
        assert_eq!(prost::encoding::decode_varint(&mut &bytes[1..]).unwrap(), v);
        for cut in 1..bytes.len() {
            assert!(
                matches!(
                    varint(&bytes[..cut], 1),
                    Err(TraceError::Truncated { offset: 1 })
                ),
                "{v:#x} cut at {cut}"
            );
        }
    }
    // Past the bytes; eleven bytes; a tenth byte past 64 bits.
    assert!(matches!(
        varint(&[0x01], 5),
        Err(TraceError::Truncated { offset: 5 })
    ));
    assert!(matches!(
        varint(&[0xff; 11], 0),
        Err(TraceError::BadVarint { offset: 0 })
    ));
    assert!(matches!(
        varint(&[0xff; 10], 0),
        Err(TraceError::BadVarint { offset: 0 })
    ));
    let mut past = vec![0xff; 9];
    past.push(0x02);
    assert!(matches!(
        varint(&past, 0),
        Err(TraceError::BadVarint { offset: 0 })
    ));
    past[9] = 0x01;
    assert_eq!(varint(&past, 0).unwrap(), (u64::MAX, 10));
}

#[test]
fn other_files_are_not_traces() {
    for (what, bytes) in [
        ("hprof", &b"JAVA PROFILE 1.0.3\0\0\0\0\x04"[..]),
        ("zip", &b"PK\x03\x04\x14\0\0\0"[..]),
        ("gzip", &b"\x1f\x8b\x08\0\0\0\0\0"[..]),
    ] {
        assert!(
            matches!(
                TraceSource::open("t", bytes, None),
                Err(TraceError::NotAPacket { offset: 0, .. })
            ),
            "{what}"
        );
    }
}

#[test]
fn ids_past_two_to_the_63_and_references_past_64_bits_are_refused() {
    let trace = wire::graph_packet(
        7,
        &[
            (TYPES, wire::ty(1, "Node", 0, &[])),
            (OBJECTS, wire::object(u64::MAX, 1, 48, &[])),
        ],
    );
    assert!(matches!(
        TraceSource::open("t", &trace, None),
        Err(TraceError::IdTooLarge { id: u64::MAX })
    ));
    let mut o = wire::object(0x10, 1, 48, &[u64::MAX]);
    wire::int(6, 2, &mut o);
    let trace = wire::graph_packet(7, &[(TYPES, wire::ty(1, "Node", 0, &[1])), (OBJECTS, o)]);
    assert!(matches!(
        TraceSource::open("t", &trace, None),
        Err(TraceError::BadPacket { .. })
    ));
}

/// `bytes` in a file of their own.
fn file_of(bytes: &[u8]) -> tempfile::NamedTempFile {
    let mut f = tempfile::NamedTempFile::new().unwrap();
    std::io::Write::write_all(&mut f, bytes).unwrap();
    f
}

#[test]
fn analyze_reads_a_trace_by_its_content() {
    let trace = file_of(&cycle(7));
    let a = analyze_path(trace.path(), &Options::default(), &Control::default()).unwrap();
    let a = a.analysis;
    assert_eq!(a.input.kind, "perfetto");
    assert_eq!(a.dump.format, "Perfetto heap graph");
    assert_eq!(retainers(&a), vec![("Node".to_string(), 48, 96)]);
    // Perfetto's own trace, when protoc is here.
    if let Some(trace) = encoded("heap_graph_branching") {
        let trace = file_of(&trace);
        let a = analyze_path(trace.path(), &Options::default(), &Control::default()).unwrap();
        assert_eq!(a.analysis.triage.unwrap().heap_bytes, 3100);
    }
}

#[test]
fn analyze_reads_a_gzipped_trace() {
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    std::io::Write::write_all(&mut gz, &cycle(7)).unwrap();
    let trace = file_of(&gz.finish().unwrap());
    let a = analyze_path(trace.path(), &Options::default(), &Control::default()).unwrap();
    let a = a.analysis;
    assert_eq!(a.input.kind, "perfetto");
    assert_eq!(retainers(&a), vec![("Node".to_string(), 48, 96)]);
}

#[test]
fn a_broken_trace_is_one_error_naming_the_file() {
    // Past the sniff's window, a packet that says it has more bytes than remain (within
    // the window a broken packet makes the file no trace at all).
    let mut bytes = Vec::new();
    while bytes.len() <= hprof_shrink_analyze::perfetto::wire::SNIFF_WINDOW {
        bytes.extend(cycle(7));
    }
    bytes.extend_from_slice(&[0x0a, 0x05, 0x40]);
    let trace = file_of(&bytes);
    let err = analyze_path(trace.path(), &Options::default(), &Control::default())
        .err()
        .unwrap();
    let text = err.to_string();
    assert!(
        text.starts_with(&trace.path().display().to_string()),
        "{text}"
    );
    assert!(text.contains("says it has 5 bytes; 1 remain"), "{text}");
}

/// A generator of bytes (xorshift), fixed so a failure repeats.
fn noise(seed: u64, len: usize) -> Vec<u8> {
    let mut x = seed | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

#[test]
fn no_hprof_zip_gzip_text_or_noise_is_taken_for_a_trace() {
    use hprof_shrink_analyze::perfetto::wire::is_trace;
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures");
    let mut seen = 0;
    for entry in walk(&fixtures) {
        let bytes = std::fs::read(&entry).unwrap();
        assert!(!is_trace(&bytes), "{}", entry.display());
        seen += 1;
    }
    assert!(seen > 0, "no fixture files under {}", fixtures.display());
    // Noise, even where it starts as a packet does; text that starts with a newline.
    for seed in 0..20_000u64 {
        let mut bytes = noise(seed, 4096);
        bytes[0] = 0x0a;
        assert!(!is_trace(&bytes), "seed {seed}");
    }
    let text = b"\n# Notes\nA heap dump was taken at 12:00 and uploaded; its analysis follows.\n";
    assert!(!is_trace(text));
    // What a trace is: Perfetto's, or ours.
    assert!(is_trace(&cycle(7)));
    if let Some(trace) = encoded("heap_graph") {
        assert!(is_trace(&trace));
    }
}

/// Every file under `dir`.
fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return files;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            files.extend(walk(&p));
        } else {
            files.push(p);
        }
    }
    files
}

#[test]
fn a_weak_references_referent_is_not_retained_through_it() {
    // Holder.ref -> WeakReference (its referent field declared by its superclass) -> Big.
    // The referent is found by the field's name and the class's place in the hierarchy,
    // both only right when a type's fields and its superclasses' are laid out in order.
    let trace = wire::graph_packet(
        7,
        &[
            (TYPES, wire::ty(1, "java.lang.ref.Reference", 0, &[1, 3])),
            (TYPES, wire::ty(2, "java.lang.ref.WeakReference", 1, &[])),
            (TYPES, wire::ty(3, "Holder", 0, &[2])),
            (TYPES, wire::ty(4, "Big", 0, &[])),
            (NAMES, wire::name(1, "java.lang.ref.Reference.referent")),
            (NAMES, wire::name(2, "Holder.ref")),
            (NAMES, wire::name(3, "java.lang.ref.Reference.queue")),
            (OBJECTS, wire::object(0x10, 3, 16, &[0x20])),
            (OBJECTS, wire::object(0x20, 2, 32, &[0x30, 0])),
            (OBJECTS, wire::object(0x30, 4, 1000, &[])),
            (ROOTS, wire::root(1, &[0x10])),
        ],
    );
    let a = analyze(&trace, None).unwrap();
    assert_eq!(retainers(&a), vec![("Holder".to_string(), 16, 48)]);
}

#[test]
fn a_hierarchy_deeper_than_the_walk_and_an_unnamed_type_end_plainly() {
    // 300 classes in a chain, each declaring one reference field; an instance of the
    // deepest holds 300 references: its layout is walked 256 classes up, so its own.
    let mut parts = vec![(NAMES, wire::name(1, "C.f"))];
    for t in 1..=300u64 {
        parts.push((TYPES, wire::ty(t, &format!("C{t}"), t + 1, &[1])));
    }
    let refs = vec![0x20; 300];
    parts.push((OBJECTS, wire::object(0x10, 1, 2000, &refs)));
    parts.push((OBJECTS, wire::object(0x20, 2, 16, &[0])));
    parts.push((ROOTS, wire::root(3, &[0x10])));
    let a = analyze(&wire::graph_packet(7, &parts), None).unwrap();
    assert_eq!(retainers(&a), vec![("C1".to_string(), 2000, 2016)]);
    // An object of a type the trace never names.
    let trace = wire::graph_packet(7, &[(OBJECTS, wire::object(0x10, 9, 16, &[]))]);
    let err = analyze(&trace, None).err().unwrap().to_string();
    assert!(
        err.contains("of type 9, which the trace does not name"),
        "{err}"
    );
}

/// An object's size is laid out without being held: a rooted 3 MiB object (past the
/// encoder's 1 MiB segments, so streamed) keeps its size, and one that claims 2^60 bytes
/// is refused at once, naming it, rather than allocated.
#[test]
fn an_objects_size_is_written_not_held_and_a_huge_one_refused() {
    let big = 3 << 20;
    let trace = |size: u64| {
        wire::graph_packet(
            7,
            &[
                (TYPES, wire::ty(1, "Blob", 0, &[])),
                (OBJECTS, wire::object(0x10, 1, size, &[])),
                (ROOTS, wire::root(3, &[0x10])),
            ],
        )
    };
    let a = analyze(&trace(big), None).unwrap();
    assert_eq!(a.triage.as_ref().unwrap().heap_bytes, big);
    assert_eq!(retainers(&a), vec![("Blob".to_string(), big, big)]);
    let e = analyze(&trace(1 << 60), None).unwrap_err().to_string();
    assert!(e.contains("0x10") && e.contains("4 GiB"), "{e}");
}

/// A destroyed Activity a rooted holder keeps, written as HPROF (with `mDestroyed`) and as
/// a heap graph (which has no values): the dump's ACTIVITY rule finds the leak; the
/// trace's does not run, rather than call the Activity leaking or not, and the output
/// (JSON, text, page) names the rule and the field it needed; the dump's names nothing.
#[test]
fn a_rule_that_needs_a_value_does_not_run_on_a_heap_graph_and_says_so() {
    use hprof_fixtures::{ArtBuilder, Heap, Ty, Val};
    let (holder_id, activity_id) = (0x7000_0000, 0x7000_0040);
    let mut b = ArtBuilder::new(hprof_fixtures::Options {
        class_overhead: false,
        ..Default::default()
    });
    let flags = [("mDestroyed", Ty::Boolean), ("mFinished", Ty::Boolean)];
    let activity = b.declare_class("android.app.Activity", 0, &flags, &[]);
    let main = b.declare_class("com.example.MainActivity", activity, &[], &[]);
    let holder = b.declare_class("com.example.Holder", 0, &[("activity", Ty::Object)], &[]);
    for c in [activity, main, holder] {
        b.dump_class(c, Heap::App);
    }
    b.instance_at(
        holder_id,
        holder,
        Heap::App,
        &[("activity", Val::Obj(activity_id))],
    );
    let destroyed = [
        ("mDestroyed", Val::Bool(true)),
        ("mFinished", Val::Bool(true)),
    ];
    b.instance_at(activity_id, main, Heap::App, &destroyed);
    b.root_jni_global(holder_id, 1);
    let trace = wire::graph_packet(
        1,
        &[
            (TYPES, wire::ty(1, "android.app.Activity", 0, &[])),
            (TYPES, wire::ty(2, "com.example.MainActivity", 1, &[])),
            (TYPES, wire::ty(3, "com.example.Holder", 0, &[1])),
            (NAMES, wire::name(1, "com.example.Holder.activity")),
            (OBJECTS, wire::object(holder_id, 3, 4, &[activity_id])),
            (OBJECTS, wire::object(activity_id, 2, 2, &[])),
            (ROOTS, wire::root(1, &[holder_id])),
        ],
    );
    let dir = tempfile::tempdir().unwrap();
    let (dump_path, trace_path) = (dir.path().join("a.hprof"), dir.path().join("a.pftrace"));
    std::fs::write(&dump_path, b.finish()).unwrap();
    std::fs::write(&trace_path, trace).unwrap();
    let analyzed = |path: &Path| {
        analyze_path(path, &Options::default(), &Control::default())
            .unwrap()
            .analysis
    };
    let (from_dump, from_trace) = (analyzed(&dump_path), analyzed(&trace_path));

    assert_eq!(from_dump.leaks.len(), 1);
    assert!(from_dump.leaks[0].finders.contains(&"ACTIVITY".to_string()));
    assert!(
        from_dump.dump.not_run.is_empty(),
        "{:?}",
        from_dump.dump.not_run
    );

    assert!(from_trace.leaks.is_empty(), "{:?}", from_trace.leaks);
    let not_run: Vec<(&str, &str, &str, u64)> = from_trace
        .dump
        .not_run
        .iter()
        .map(|n| {
            (
                n.kind.as_str(),
                n.rule.as_str(),
                n.needs.as_str(),
                n.objects,
            )
        })
        .collect();
    let needs = "android.app.Activity.mDestroyed";
    assert!(
        not_run.contains(&("finder", "ACTIVITY", needs, 1)),
        "{not_run:?}"
    );
    assert!(
        not_run.contains(&("step", "destroyed Activities", needs, 1)),
        "{not_run:?}"
    );
    // Both count the Activity; only the dump can say it is destroyed.
    let counts = |a: &Analysis| a.triage.as_ref().unwrap().counts.clone();
    assert_eq!(counts(&from_dump).activities, 1);
    assert_eq!(counts(&from_trace).activities, 1);
    assert_eq!(counts(&from_dump).destroyed_activities, 1);
    destroyed_is_not_known_on_the_trace(&from_dump, &from_trace);
    let text = hprof_shrink_analyze::render::text::render(&from_trace);
    let line = "finder ACTIVITY (on 1 object): needs android.app.Activity.mDestroyed";
    assert!(text.contains(line), "{text}");
    let page = hprof_shrink_analyze::render::html::render(&from_trace, &[]);
    assert!(page.contains("Not run") && page.contains(needs));
    let text = hprof_shrink_analyze::render::text::render(&from_dump);
    assert!(!text.contains("Not run"), "{text}");
}

/// A reference type known by its kind alone: `a.b` (a renamed class, or one whose
/// superclasses the trace leaves out) of kind soft, weak, finalizer or phantom holds its
/// `referent` weakly, as a dump's java.lang.ref.Reference does; of kind normal, strongly.
/// So too where the trace names java.lang.ref.Reference (its fields then its instance's
/// too) without placing `a.b` under it, and where the object names its own fields.
#[test]
fn a_reference_type_known_by_its_kind_does_not_retain_its_referent() {
    let trace = |kind: u64, reference_type: bool, own_fields: bool| {
        // `a.b`'s references: its referent (Big), and `c` (null).
        let mut weak = wire::ty(2, "a.b", 77, if own_fields { &[] } else { &[1, 3] });
        wire::int(7, kind, &mut weak);
        let mut held = wire::object(0x20, 2, 32, &[0x30, 0]);
        if own_fields {
            for f in [1, 3] {
                wire::int(4, f, &mut held);
            }
        }
        let mut parts = vec![
            (TYPES, weak),
            (TYPES, wire::ty(3, "Holder", 0, &[2])),
            (TYPES, wire::ty(4, "Big", 0, &[])),
            (NAMES, wire::name(1, "java.lang.ref.Reference.referent")),
            (NAMES, wire::name(2, "Holder.ref")),
            (NAMES, wire::name(3, "a.b.c")),
            (OBJECTS, wire::object(0x10, 3, 16, &[0x20])),
            (OBJECTS, held),
            (OBJECTS, wire::object(0x30, 4, 1000, &[])),
            (ROOTS, wire::root(1, &[0x10])),
        ];
        if reference_type {
            parts.push((TYPES, wire::ty(1, "java.lang.ref.Reference", 0, &[1])));
        }
        wire::graph_packet(7, &parts)
    };
    for kind in [8, 9, 10, 11] {
        for (reference_type, own_fields) in [(false, false), (true, false), (false, true)] {
            let a = analyze(&trace(kind, reference_type, own_fields), None).unwrap();
            let what = format!("kind {kind}, Reference {reference_type}, own {own_fields}");
            assert_eq!(a.triage.as_ref().unwrap().heap_bytes, 48, "{what}");
            assert_eq!(
                retainers(&a),
                vec![("Holder".to_string(), 16, 48)],
                "{what}"
            );
        }
    }
    let a = analyze(&trace(1, false, false), None).unwrap();
    assert_eq!(retainers(&a), vec![("Holder".to_string(), 16, 1048)]);
}

/// Perfetto's native-size trace: a `NativeAllocationRegistry` whose
/// `native_allocation_registry_size_field` is 123,456, its thunk, and a live Cleaner whose
/// referent is the Bitmap a Java frame roots: Perfetto's table credits the Bitmap 123,456
/// native bytes, and so does the analysis, by the reader it uses on dumps. (Perfetto also
/// leaves out a second Cleaner that has run, its `next` pointing to itself, whose referent
/// is the BinderProxy; ahat's rule, the analysis's on dumps too, credits it as well.)
#[test]
fn perfettos_native_size_graph_credits_the_registered_size() {
    let Some(trace) = encoded("heap_graph_native_size") else {
        return;
    };
    let a = analyze(&trace, None).unwrap();
    let triage = a.triage.as_ref().unwrap();
    let native = |class: &str| {
        let r = triage
            .top_retainers
            .iter()
            .find(|r| r.object.class_name == class);
        r.unwrap_or_else(|| panic!("{class} among {:?}", retainers(&a)))
            .object
            .retained_native_bytes
    };
    assert_eq!(native("android.graphics.Bitmap"), 123_456);
    assert_eq!(native("android.os.BinderProxy"), 123_456);
    assert_eq!(triage.heap_native_bytes, 2 * 123_456);
}

/// Perfetto's traces with their own deobfuscation packet (`a` is `DeobfuscatedA`): the
/// rooted objects' classes are named as Perfetto's tables name them (`DeobfuscatedA[]`).
#[test]
fn a_traces_own_mapping_names_classes_as_perfettos_tables_do() {
    for (trace, objects) in [
        ("heap_graph", "heap_graph_object_3"),
        ("heap_graph_baseapk", "heap_graph_object"),
    ] {
        let Some(bytes) = encoded(trace) else {
            return;
        };
        let a = analyze(&bytes, None).unwrap();
        let mut ours: Vec<String> = retainers(&a).into_iter().map(|r| r.0).collect();
        ours.sort();
        let mut theirs: Vec<String> = table(objects)
            .iter()
            .filter(|r| r["root_type"] != "[NULL]")
            .map(|r| match r["deobfuscated_type_name"].as_str() {
                "[NULL]" => r["type_name"].clone(),
                name => name.to_string(),
            })
            .collect();
        theirs.sort();
        assert!(theirs.contains(&"DeobfuscatedA[]".to_string()));
        assert_eq!(ours, theirs, "{trace}");
    }
}

/// A trace's mapping names fields too: the path to a byte array an obfuscated class `a.a`
/// holds in its field `b` reads `com.example.Cache.mBuffer`; where the mapping names the
/// field by another class (`Other.mData`), its last part.
#[test]
fn a_traces_own_mapping_names_fields_in_paths() {
    let mut trace = wire::deobfuscation(&[(
        "a.a",
        "com.example.Cache",
        &[("b", "mBuffer"), ("c", "Other.mData")],
    )]);
    trace.extend(wire::graph_packet(
        7,
        &[
            (TYPES, wire::ty(1, "a.a", 0, &[1, 2])),
            (TYPES, wire::ty(2, "byte[]", 0, &[])),
            (NAMES, wire::name(1, "a.a.b")),
            (NAMES, wire::name(2, "byte[] a.a.c")),
            (OBJECTS, wire::object(0x10, 1, 16, &[0x20, 0x30])),
            (OBJECTS, wire::object(0x20, 2, 4000, &[])),
            (OBJECTS, wire::object(0x30, 2, 2000, &[])),
            (ROOTS, wire::root(1, &[0x10])),
        ],
    ));
    let a = analyze(&trace, None).unwrap();
    assert_eq!(retainers(&a), vec![("com.example.Cache".into(), 16, 6016)]);
    let arrays = &a.triage.as_ref().unwrap().largest_primitive_arrays;
    let names: Vec<String> = arrays
        .iter()
        .map(|o| {
            let step = &o.path.as_ref().unwrap().steps[0];
            let r = step.reference.as_ref().unwrap();
            format!("{}.{}", step.class_name, r.name)
        })
        .collect();
    assert_eq!(
        names,
        ["com.example.Cache.mBuffer", "com.example.Cache.mData"]
    );
}

/// The trace's count of destroyed Activities is not known, and said so (JSON, text,
/// page), not 0; the dump's JSON is as it was.
fn destroyed_is_not_known_on_the_trace(from_dump: &Analysis, from_trace: &Analysis) {
    let counts = |a: &Analysis| a.triage.as_ref().unwrap().counts.clone();
    assert!(counts(from_trace).destroyed_unknown);
    assert!(!counts(from_dump).destroyed_unknown);
    let json = serde_json::to_string(from_dump).unwrap();
    assert!(
        !json.contains("destroyedUnknown"),
        "a dump's JSON as it was"
    );
    let text = hprof_shrink_analyze::render::text::render(from_trace);
    let counted = "1 Activities (destroyed not known: no field values in the heap)";
    assert!(
        text.contains(counted) && !text.contains("0 destroyed"),
        "{text}"
    );
    let page = hprof_shrink_analyze::render::html::render(from_trace, &[]);
    assert!(page.contains(counted));
}

/// A heap graph's Bitmaps with their width and height (ART's `bitmap_width_field` and
/// `bitmap_height_field`): the triage sizes them (a 2000×1500 Bitmap is large by KOOM's
/// 768×1366, a 100×100 one is not) and only the duplicate bitmaps, which need pixels, are
/// not run. Without them, the triage counts the Bitmaps and says their sizes are not
/// known, rather than call none large.
#[test]
fn a_heap_graphs_bitmaps_are_sized_by_their_width_and_height() {
    let trace = |dimensions: bool| {
        let bitmap = |id: u64, w: u64, h: u64| {
            let mut o = wire::object(id, 1, 40, &[]);
            if dimensions {
                wire::int(13, w, &mut o);
                wire::int(14, h, &mut o);
            }
            o
        };
        wire::graph_packet(
            7,
            &[
                (TYPES, wire::ty(1, "android.graphics.Bitmap", 0, &[])),
                (TYPES, wire::ty(2, "Holder", 0, &[1, 2])),
                (NAMES, wire::name(1, "Holder.a")),
                (NAMES, wire::name(2, "Holder.b")),
                (OBJECTS, wire::object(0x10, 2, 16, &[0x20, 0x30])),
                (OBJECTS, bitmap(0x20, 2000, 1500)),
                (OBJECTS, bitmap(0x30, 100, 100)),
                (ROOTS, wire::root(1, &[0x10])),
            ],
        )
    };
    let not_run = |a: &Analysis| -> Vec<(String, String, u64)> {
        a.dump
            .not_run
            .iter()
            .filter(|n| n.rule.contains("bitmaps"))
            .map(|n| (n.rule.clone(), n.needs.clone(), n.objects))
            .collect()
    };
    let a = analyze(&trace(true), None).unwrap();
    let b = &a.triage.as_ref().unwrap().bitmaps;
    assert_eq!(
        (b.count, b.large_count, b.dimensions_unknown),
        (2, 1, false)
    );
    let sizes: Vec<(i64, i64, bool)> = b
        .largest
        .iter()
        .map(|x| (x.width, x.height, x.large))
        .collect();
    assert!(
        sizes.contains(&(2000, 1500, true)) && sizes.contains(&(100, 100, false)),
        "{sizes:?}"
    );
    let pixels = "android.graphics.Bitmap's pixels".to_string();
    assert_eq!(not_run(&a), [("duplicate bitmaps".into(), pixels, 2)]);

    let a = analyze(&trace(false), None).unwrap();
    let b = &a.triage.as_ref().unwrap().bitmaps;
    assert_eq!((b.count, b.dimensions_unknown), (2, true));
    let rule = "duplicate bitmaps and Bitmap sizes".to_string();
    assert_eq!(not_run(&a)[0].0, rule);
    let text = hprof_shrink_analyze::render::text::render(&a);
    assert!(
        text.contains("large ones not known: no width and height in the heap"),
        "{text}"
    );
}

/// A registry that names its references' fields itself (old traces; an object whose
/// references do not fit its type's) is laid out on its own, and keeps the value it
/// carries as one laid out by its type does: Perfetto's native-size heap, its registry
/// naming its `classLoader` itself, still credits the Bitmap its 123,456 native bytes.
#[test]
fn a_registry_naming_its_own_fields_keeps_its_native_size() {
    let ty = |id: u64, name: &str, sup: u64, fields: &[u64], kind: u64| {
        let mut t = wire::ty(id, name, sup, fields);
        wire::int(7, kind, &mut t);
        t
    };
    let mut registry = wire::object(0x30, 778, 32, &[0]);
    wire::int(4, 19502, &mut registry);
    wire::int(8, 123_456, &mut registry);
    let names = [
        (1, "java.lang.ref.Reference.pendingNext"),
        (2, "java.lang.ref.Reference.queue"),
        (3, "java.lang.ref.Reference.queueNext"),
        (15420, "java.lang.ref.Reference.referent"),
        (14946, "sun.misc.Cleaner.next"),
        (14947, "sun.misc.Cleaner.prev"),
        (14948, "sun.misc.Cleaner.thunk"),
        (
            19501,
            "libcore.util.NativeAllocationRegistry$CleanerThunk.this$0",
        ),
        (19502, "libcore.util.NativeAllocationRegistry.classLoader"),
    ];
    let mut parts = vec![
        (TYPES, ty(54, "java.lang.Object", 0, &[], 2)),
        (
            TYPES,
            ty(12171, "java.lang.ref.Reference", 54, &[1, 2, 3, 15420], 1),
        ),
        (
            TYPES,
            ty(11645, "java.lang.ref.PhantomReference", 12171, &[], 11),
        ),
        (
            TYPES,
            ty(17, "sun.misc.Cleaner", 11645, &[14946, 14947, 14948], 11),
        ),
        (
            TYPES,
            ty(
                16,
                "libcore.util.NativeAllocationRegistry$CleanerThunk",
                54,
                &[19501],
                1,
            ),
        ),
        (
            TYPES,
            ty(
                778,
                "libcore.util.NativeAllocationRegistry",
                54,
                &[19502],
                1,
            ),
        ),
        (TYPES, ty(777, "android.graphics.Bitmap", 54, &[], 1)),
    ];
    parts.extend(names.iter().map(|&(iid, n)| (NAMES, wire::name(iid, n))));
    parts.extend([
        (OBJECTS, wire::object(0x10, 777, 46, &[])),
        (OBJECTS, registry),
        (OBJECTS, wire::object(0x40, 16, 24, &[0x30])),
        (
            OBJECTS,
            wire::object(0x60, 17, 36, &[0, 0, 0x40, 0, 0, 0, 0x10]),
        ),
        (ROOTS, wire::root(3, &[0x10])),
        (ROOTS, wire::root(1, &[0x60])),
    ]);
    let a = analyze(&wire::graph_packet(2, &parts), None).unwrap();
    let triage = a.triage.as_ref().unwrap();
    let bitmap = triage
        .top_retainers
        .iter()
        .find(|r| r.object.class_name == "android.graphics.Bitmap")
        .unwrap_or_else(|| panic!("a Bitmap among {:?}", retainers(&a)));
    assert_eq!(bitmap.object.retained_native_bytes, 123_456);
    assert_eq!(triage.heap_native_bytes, 123_456);
}

/// A Bitmap that names its references' fields itself keeps its width and height, as one
/// laid out by its type does: the triage counts and sizes it.
#[test]
fn a_bitmap_naming_its_own_fields_keeps_its_width_and_height() {
    let bitmap = |id: u64, w: u64, h: u64| {
        let mut o = wire::object(id, 1, 40, &[0]);
        wire::int(4, 3, &mut o);
        wire::int(13, w, &mut o);
        wire::int(14, h, &mut o);
        o
    };
    let trace = wire::graph_packet(
        7,
        &[
            (TYPES, wire::ty(1, "android.graphics.Bitmap", 0, &[])),
            (TYPES, wire::ty(2, "Holder", 0, &[1, 2])),
            (NAMES, wire::name(1, "Holder.a")),
            (NAMES, wire::name(2, "Holder.b")),
            (
                NAMES,
                wire::name(3, "android.graphics.Bitmap.mNinePatchChunk"),
            ),
            (OBJECTS, wire::object(0x10, 2, 16, &[0x20, 0x30])),
            (OBJECTS, bitmap(0x20, 2000, 1500)),
            (OBJECTS, bitmap(0x30, 100, 100)),
            (ROOTS, wire::root(1, &[0x10])),
        ],
    );
    let a = analyze(&trace, None).unwrap();
    let b = &a.triage.as_ref().unwrap().bitmaps;
    assert_eq!(
        (b.count, b.large_count, b.dimensions_unknown),
        (2, 1, false)
    );
    let sizes: Vec<(i64, i64)> = b.largest.iter().map(|x| (x.width, x.height)).collect();
    assert!(
        sizes.contains(&(2000, 1500)) && sizes.contains(&(100, 100)),
        "{sizes:?}"
    );
    // Their sizes are still the trace's.
    assert_eq!(a.dump.reachable_bytes, 16 + 2 * 40);
}

/// A class's static reference is its class object's in a heap graph (an object of type
/// `java.lang.Class<X>` naming its fields `X.sInstance`): the class object is the class,
/// so a path through it reads `static com.example.Singleton.sInstance`, as in a dump; it
/// keeps the trace's size (300 bytes), so what is reachable and retained does not change.
#[test]
fn a_class_objects_references_are_its_statics() {
    let trace = wire::graph_packet(
        7,
        &[
            (TYPES, wire::ty(1, "com.example.Singleton", 0, &[2])),
            (
                TYPES,
                wire::ty(2, "java.lang.Class<com.example.Singleton>", 0, &[]),
            ),
            (TYPES, wire::ty(3, "byte[]", 0, &[])),
            (NAMES, wire::name(1, "com.example.Singleton.sInstance")),
            (NAMES, wire::name(2, "com.example.Singleton.mData")),
            (OBJECTS, {
                let mut o = wire::object(0x40, 2, 300, &[0x10]);
                wire::int(4, 1, &mut o);
                o
            }),
            (OBJECTS, wire::object(0x10, 1, 16, &[0x20])),
            (OBJECTS, wire::object(0x20, 3, 5000, &[])),
            (ROOTS, wire::root(5, &[0x40])),
        ],
    );
    let a = analyze(&trace, None).unwrap();
    let triage = a.triage.as_ref().unwrap();
    assert_eq!(triage.heap_bytes, 5316);
    let top = &triage.top_retainers[0].object;
    assert_eq!(
        (top.class_name.as_str(), top.kind.as_str()),
        ("com.example.Singleton", "class")
    );
    assert_eq!((top.shallow_bytes, top.retained_bytes), (300, 5316));
    let path = triage.largest_primitive_arrays[0].path.as_ref().unwrap();
    let steps: Vec<(String, String, String, String)> = path
        .steps
        .iter()
        .filter_map(|s| {
            let r = s.reference.as_ref()?;
            Some((
                s.class_name.clone(),
                s.kind.clone(),
                r.kind.clone(),
                r.name.clone(),
            ))
        })
        .collect();
    let step = |c: &str, k: &str, rk: &str, n: &str| (c.into(), k.into(), rk.into(), n.into());
    assert_eq!(
        steps,
        [
            step("com.example.Singleton", "class", "static", "sInstance"),
            step("com.example.Singleton", "instance", "field", "mData"),
        ]
    );
}

/// The values, mappings and class objects a trace gives are input from anyone: a
/// deobfuscation packet that does not parse is an error naming where it is; two class
/// objects sharing an id, a class object's id that an instance repeats, a Bitmap of
/// 2^32 - 1 pixels a side and a negative registered size are read without a panic, the
/// size noted as implausible rather than credited.
#[test]
fn a_traces_values_mappings_and_class_objects_are_read_as_hostile() {
    // A packet whose field 64 holds a class whose names run past it.
    let mut inner = Vec::new();
    wire::bytes(3, &[0x0a, 0x7f], &mut inner);
    let mut packet = Vec::new();
    wire::bytes(64, &inner, &mut packet);
    let mut trace = cycle(7);
    let at = trace.len() as u64;
    wire::bytes(1, &packet, &mut trace);
    match TraceSource::open("t", &trace, None) {
        Err(TraceError::BadPacket { offset, .. }) => assert!(offset > at, "{offset}"),
        other => panic!("{:?}", other.err()),
    }

    let class_object = |id: u64, ty: u64| {
        let mut o = wire::object(id, ty, 100, &[0x10]);
        wire::int(4, 1, &mut o);
        o
    };
    let mut bitmap = wire::object(0x20, 5, 40, &[]);
    wire::int(13, u64::from(u32::MAX), &mut bitmap);
    wire::int(14, u64::from(u32::MAX), &mut bitmap);
    const THUNK: &str = "libcore.util.NativeAllocationRegistry$CleanerThunk";
    let mut registry = wire::object(0x30, 6, 24, &[]);
    wire::int(8, -5i64 as u64, &mut registry);
    let trace = wire::graph_packet(
        7,
        &[
            (TYPES, wire::ty(1, "A", 0, &[])),
            (TYPES, wire::ty(2, "java.lang.Class<A>", 0, &[])),
            (TYPES, wire::ty(3, "B", 0, &[])),
            (TYPES, wire::ty(4, "java.lang.Class<B>", 0, &[])),
            (TYPES, wire::ty(5, "android.graphics.Bitmap", 0, &[])),
            (
                TYPES,
                wire::ty(6, "libcore.util.NativeAllocationRegistry", 0, &[]),
            ),
            (TYPES, wire::ty(7, "java.lang.ref.Reference", 0, &[10])),
            (TYPES, wire::ty(8, "sun.misc.Cleaner", 7, &[11])),
            (TYPES, wire::ty(9, THUNK, 0, &[12])),
            (NAMES, wire::name(1, "A.sB")),
            (NAMES, wire::name(10, "java.lang.ref.Reference.referent")),
            (NAMES, wire::name(11, "sun.misc.Cleaner.thunk")),
            (NAMES, wire::name(12, &format!("{THUNK}.this$0"))),
            (OBJECTS, wire::object(0x50, 8, 24, &[0x60, 0x20])),
            (OBJECTS, wire::object(0x60, 9, 16, &[0x30])),
            (OBJECTS, class_object(0x40, 2)),
            (OBJECTS, class_object(0x40, 4)),
            (OBJECTS, wire::object(0x10, 3, 16, &[])),
            (OBJECTS, wire::object(0x40, 3, 16, &[])),
            (OBJECTS, bitmap),
            (OBJECTS, registry),
            (ROOTS, wire::root(5, &[0x40, 0x20, 0x30])),
        ],
    );
    let a = analyze(&trace, None).unwrap();
    let b = &a.triage.as_ref().unwrap().bitmaps;
    assert_eq!((b.count, b.large_count), (1, 1));
    assert_eq!(b.largest[0].width, i64::from(i32::MAX));
    assert_eq!(b.native_bytes, 0);
    assert!(
        a.notes
            .iter()
            .any(|n| n.contains("left out as implausible")),
        "{:?}",
        a.notes
    );
}
