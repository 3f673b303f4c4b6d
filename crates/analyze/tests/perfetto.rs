//! Perfetto heap graphs read through the heap-source seam.
//!
//! Perfetto's own test traces (tests/perfetto/, their source in its README.md), encoded by
//! `protoc` when it is here (scripts/setup-protoc.sh; skipped with the reason printed when
//! it is not), give the sizes and reachability Perfetto's trace processor is expected to
//! give: the tables beside them. Hand-built traces hold the hostile cases: truncated,
//! lying lengths, huge varints, no roots, cycles, repeated ids, several processes.

use std::path::Path;
use std::process::{Command, Stdio};

use hprof_shrink_analyze::model::Analysis;
use hprof_shrink_analyze::perfetto::{TraceError, TraceSource};
use hprof_shrink_analyze::{analyze_source, AnalyzeError, Options};
use hprof_shrink_core::space::Unpack;
use hprof_shrink_core::Control;

/// `name`.textproto of tests/perfetto encoded as a binary trace; `None` when there is
/// no protoc.
fn encoded(name: &str) -> Option<Vec<u8>> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/perfetto");
    let text = std::fs::read(dir.join(format!("{name}.textproto"))).unwrap();
    let child = Command::new("protoc")
        .arg(format!("-I{}", dir.display()))
        .args([
            "--encode=perfetto.protos.Trace",
            "trace_min.proto",
            "heap_graph.proto",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn();
    let mut child = match child {
        Ok(child) => child,
        Err(e) => {
            println!("skipped: no protoc ({e}); scripts/setup-protoc.sh installs it");
            return None;
        }
    };
    std::io::Write::write_all(&mut child.stdin.take().unwrap(), &text).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "protoc could not encode {name}");
    Some(out.stdout)
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

#[test]
fn perfettos_heap_graph_gives_its_expected_sizes_and_reachability() {
    let Some(trace) = encoded("heap_graph") else {
        return;
    };
    let a = analyze(&trace, None).unwrap();
    let rows = table("heap_graph_object");
    let reachable: u64 = rows
        .iter()
        .filter(|r| r["reachable"] == "1")
        .map(|r| r["self_size"].parse::<u64>().unwrap())
        .sum();
    assert_eq!(a.triage.as_ref().unwrap().heap_bytes, reachable);
    // The rooted objects, each with the reachable objects only it holds: Perfetto's
    // sizes of the rows of that type, one Foo (32 bytes) under the actor.
    let size_of = |ty: &str| -> u64 {
        let row = rows
            .iter()
            .find(|r| r["type_name"] == ty && r["root_type"] != "[NULL]");
        row.unwrap()["self_size"].parse().unwrap()
    };
    let actor = size_of("FactoryProducerDelegateImplActor");
    let array = size_of("a[]");
    assert_eq!(
        retainers(&a),
        vec![
            (
                "FactoryProducerDelegateImplActor".to_string(),
                actor,
                actor + 32
            ),
            ("a[]".to_string(), array, array),
        ]
    );
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

/// Hand-built traces: protobuf's wire format, written out.
mod wire {
    pub fn varint(mut v: u64, out: &mut Vec<u8>) {
        while v >= 0x80 {
            out.push((v as u8) | 0x80);
            v >>= 7;
        }
        out.push(v as u8);
    }

    pub fn int(field: u64, v: u64, out: &mut Vec<u8>) {
        varint(field << 3, out);
        varint(v, out);
    }

    pub fn bytes(field: u64, body: &[u8], out: &mut Vec<u8>) {
        varint(field << 3 | 2, out);
        varint(body.len() as u64, out);
        out.extend_from_slice(body);
    }

    /// An object: id, type, size, references.
    pub fn object(id: u64, ty: u64, size: u64, refs: &[u64]) -> Vec<u8> {
        let mut o = Vec::new();
        int(1, id, &mut o);
        int(2, ty, &mut o);
        int(3, size, &mut o);
        for &r in refs {
            int(5, r, &mut o);
        }
        o
    }

    /// A type: id, name, reference field keys.
    pub fn ty(id: u64, name: &str, super_id: u64, fields: &[u64]) -> Vec<u8> {
        let mut t = Vec::new();
        int(1, id, &mut t);
        bytes(3, name.as_bytes(), &mut t);
        int(5, super_id, &mut t);
        for &f in fields {
            int(6, f, &mut t);
        }
        t
    }

    pub fn name(iid: u64, text: &str) -> Vec<u8> {
        let mut s = Vec::new();
        int(1, iid, &mut s);
        bytes(2, text.as_bytes(), &mut s);
        s
    }

    pub fn root(kind: u64, ids: &[u64]) -> Vec<u8> {
        let mut r = Vec::new();
        for &id in ids {
            int(1, id, &mut r);
        }
        int(2, kind, &mut r);
        r
    }

    /// A trace packet holding a heap graph of `pid` made of `parts` ((field, message)).
    pub fn packet(pid: u64, parts: &[(u64, Vec<u8>)]) -> Vec<u8> {
        let mut g = Vec::new();
        int(1, pid, &mut g);
        for (field, body) in parts {
            bytes(*field, body, &mut g);
        }
        let mut p = Vec::new();
        int(8, 10, &mut p);
        bytes(56, &g, &mut p);
        let mut t = Vec::new();
        bytes(1, &p, &mut t);
        t
    }
}

const OBJECTS: u64 = 2;
const NAMES: u64 = 4;
const ROOTS: u64 = 7;
const TYPES: u64 = 9;

/// A small heap: a rooted Node (48 bytes) whose `next` is a second Node (48) whose
/// `next` is the first: a cycle; a third Node unreachable.
fn cycle(pid: u64) -> Vec<u8> {
    wire::packet(
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
    let trace = wire::packet(
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
    let trace = wire::packet(
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
    let trace = wire::packet(
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
    let trace = wire::packet(
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
    let trace = wire::packet(7, &[(TYPES, wire::ty(1, "Node", 0, &[1])), (OBJECTS, o)]);
    assert!(matches!(
        TraceSource::open("t", &trace, None),
        Err(TraceError::BadPacket { .. })
    ));
}
