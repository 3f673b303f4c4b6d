//! Perfetto traces written by hand, in protobuf's wire format: heap-graph packets (ART's
//! `HeapGraph`, `TracePacket` field 56), a process tree (field 2) and a packages list
//! (field 47), the field numbers from google/perfetto's `protos/perfetto/trace/`.

/// `HeapGraph.objects`.
pub const OBJECTS: u64 = 2;
/// `HeapGraph.field_names`.
pub const NAMES: u64 = 4;
/// `HeapGraph.roots`.
pub const ROOTS: u64 = 7;
/// `HeapGraph.types`.
pub const TYPES: u64 = 9;

/// A varint.
pub fn varint(mut v: u64, out: &mut Vec<u8>) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// A varint field.
pub fn int(field: u64, v: u64, out: &mut Vec<u8>) {
    varint(field << 3, out);
    varint(v, out);
}

/// A length-delimited field.
pub fn bytes(field: u64, body: &[u8], out: &mut Vec<u8>) {
    varint(field << 3 | 2, out);
    varint(body.len() as u64, out);
    out.extend_from_slice(body);
}

/// `HeapGraphObject`: id, type, size, references (their field names from the type).
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

/// `HeapGraphType`: id, name, superclass, the keys of its reference fields' names.
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

/// `InternedString`.
pub fn name(iid: u64, text: &str) -> Vec<u8> {
    let mut s = Vec::new();
    int(1, iid, &mut s);
    bytes(2, text.as_bytes(), &mut s);
    s
}

/// `HeapGraphRoot`: its objects and its `Type` (1: `ROOT_JNI_GLOBAL`, 3: `ROOT_JAVA_FRAME`).
pub fn root(kind: u64, ids: &[u64]) -> Vec<u8> {
    let mut r = Vec::new();
    for &id in ids {
        int(1, id, &mut r);
    }
    int(2, kind, &mut r);
    r
}

/// `Trace.packet` records around `packet`'s bytes.
pub fn framed(packet: &[u8]) -> Vec<u8> {
    let mut t = Vec::new();
    bytes(1, packet, &mut t);
    t
}

/// A trace packet holding a heap graph of `pid` made of `parts` ((field, message)).
pub fn graph_packet(pid: u64, parts: &[(u64, Vec<u8>)]) -> Vec<u8> {
    let mut g = Vec::new();
    int(1, pid, &mut g);
    for (field, body) in parts {
        bytes(*field, body, &mut g);
    }
    let mut p = Vec::new();
    int(8, 10, &mut p);
    bytes(56, &g, &mut p);
    framed(&p)
}

/// A trace packet holding a process tree of one process: its pid, its uid (if any) and
/// its command line.
pub fn process_packet(pid: u64, uid: Option<u64>, cmdline: &str) -> Vec<u8> {
    let mut proc_ = Vec::new();
    int(1, pid, &mut proc_);
    int(2, 1, &mut proc_);
    bytes(3, cmdline.as_bytes(), &mut proc_);
    if let Some(uid) = uid {
        int(5, uid, &mut proc_);
    }
    let mut tree = Vec::new();
    bytes(1, &proc_, &mut tree);
    let mut p = Vec::new();
    bytes(2, &tree, &mut p);
    framed(&p)
}

/// A trace packet holding a process tree that names `processes` ((pid, name)).
pub fn process_tree(processes: &[(u64, &str)]) -> Vec<u8> {
    let mut tree = Vec::new();
    for (pid, name) in processes {
        let mut p = Vec::new();
        int(1, *pid, &mut p);
        bytes(3, name.as_bytes(), &mut p);
        bytes(1, &p, &mut tree);
    }
    let mut p = Vec::new();
    bytes(2, &tree, &mut p);
    framed(&p)
}

/// A trace packet holding a packages list: (name, uid, version code).
pub fn packages_packet(packages: &[(&str, u64, Option<u64>)]) -> Vec<u8> {
    let mut list = Vec::new();
    for (name, uid, version) in packages {
        let mut info = Vec::new();
        bytes(1, name.as_bytes(), &mut info);
        int(2, *uid, &mut info);
        if let Some(v) = version {
            int(5, *v, &mut info);
        }
        bytes(1, &info, &mut list);
    }
    let mut p = Vec::new();
    bytes(47, &list, &mut p);
    framed(&p)
}

/// A trace packet of something else: a timestamp and a clock snapshot's worth of bytes
/// (field 6, opaque here).
pub fn other_packet() -> Vec<u8> {
    let mut p = Vec::new();
    int(8, 10, &mut p);
    bytes(6, &[0x0a, 0x04, 0x08, 0x06, 0x10, 0x01], &mut p);
    framed(&p)
}

/// The heap graph of `pid`: a GC root (a JNI global) holding a `class_name` whose `next`
/// holds a chain of `n` more, each of `size` bytes: no leak, one top retainer (the first)
/// with a path.
pub fn chain(pid: u64, class_name: &str, n: u64, size: u64) -> Vec<u8> {
    let mut parts = vec![
        (TYPES, ty(1, class_name, 0, &[1])),
        (NAMES, name(1, &format!("{class_name}.next"))),
    ];
    for i in 0..=n {
        let id = 0x100 + i * 0x10;
        let next = if i < n { vec![id + 0x10] } else { vec![0] };
        parts.push((OBJECTS, object(id, 1, size, &next)));
    }
    parts.push((ROOTS, root(1, &[0x100])));
    graph_packet(pid, &parts)
}

/// The heap graph of `pid`: a GC root holding a `com.example.Holder` whose `activity`
/// field holds a `com.example.MainActivity` (an `android.app.Activity`): whether it is
/// destroyed is a field value, which a heap graph does not hold, so LeakCanary's Activity
/// rules cannot run on it.
pub fn held_activity(pid: u64) -> Vec<u8> {
    let (holder, activity) = (0x7000_0000, 0x7000_0040);
    graph_packet(
        pid,
        &[
            (TYPES, ty(1, "android.app.Activity", 0, &[])),
            (TYPES, ty(2, "com.example.MainActivity", 1, &[])),
            (TYPES, ty(3, "com.example.Holder", 0, &[1])),
            (NAMES, name(1, "com.example.Holder.activity")),
            (OBJECTS, object(holder, 3, 4, &[activity])),
            (OBJECTS, object(activity, 2, 2, &[])),
            (ROOTS, root(1, &[holder])),
        ],
    )
}

/// A class of a deobfuscation mapping: its obfuscated name, its name, its fields as
/// (obfuscated, name).
pub type MappedClass<'a> = (&'a str, &'a str, &'a [(&'a str, &'a str)]);

/// A trace packet holding a deobfuscation mapping of `classes`.
pub fn deobfuscation(classes: &[MappedClass<'_>]) -> Vec<u8> {
    let mut m = Vec::new();
    for (obfuscated, name, fields) in classes {
        let mut c = Vec::new();
        bytes(1, obfuscated.as_bytes(), &mut c);
        bytes(2, name.as_bytes(), &mut c);
        for (obfuscated, name) in *fields {
            let mut f = Vec::new();
            bytes(1, obfuscated.as_bytes(), &mut f);
            bytes(2, name.as_bytes(), &mut f);
            bytes(3, &f, &mut c);
        }
        bytes(3, &c, &mut m);
    }
    let mut p = Vec::new();
    bytes(64, &m, &mut p);
    framed(&p)
}

/// The protoc the tests encode text protos with: `HPROF_SHRINK_PROTOC`, else one on the
/// path; `None` (said) without one, but under CI on a machine with apt-get, where
/// scripts/setup-protoc.sh installs it, that is a failure.
fn protoc() -> Option<std::path::PathBuf> {
    use std::path::{Path, PathBuf};
    if let Some(p) = std::env::var_os("HPROF_SHRINK_PROTOC").filter(|p| !p.is_empty()) {
        return Some(PathBuf::from(p));
    }
    if std::process::Command::new("protoc")
        .arg("--version")
        .output()
        .is_ok()
    {
        return Some(PathBuf::from("protoc"));
    }
    let ci = std::env::var_os("CI").is_some();
    let why = std::env::var("HPROF_SHRINK_NO_PROTOC")
        .unwrap_or_else(|_| "no protoc (scripts/setup-protoc.sh installs it)".into());
    assert!(
        !ci || !Path::new("/usr/bin/apt-get").exists(),
        "CI with apt-get, but protoc could not be set up: {why}"
    );
    println!("skipped: {why}");
    None
}

/// `name`.textproto of `dir` encoded by protoc as a binary trace (`perfetto.protos.Trace`
/// of `dir`'s `trace_min.proto` and `heap_graph.proto`); `None` when there is no protoc.
pub fn encoded(dir: &std::path::Path, name: &str) -> Option<Vec<u8>> {
    use std::process::{Command, Stdio};
    let protoc = protoc()?;
    let text = std::fs::read(dir.join(format!("{name}.textproto"))).unwrap();
    let mut child = Command::new(protoc)
        .arg(format!("-I{}", dir.display()))
        .args([
            "--encode=perfetto.protos.Trace",
            "trace_min.proto",
            "heap_graph.proto",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(&mut child.stdin.take().unwrap(), &text).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "protoc could not encode {name}");
    Some(out.stdout)
}
