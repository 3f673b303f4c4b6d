//! Perfetto traces holding heap graphs, written by hand in protobuf's wire format (the
//! fields of `protos/perfetto/trace/profiling/heap_graph.proto` and `TracePacket`, a fact
//! of the format), for tests that need a trace: the analyzer's and the command line's.

/// `HeapGraph.objects`.
pub const OBJECTS: u64 = 2;
/// `HeapGraph.field_names`.
pub const NAMES: u64 = 4;
/// `HeapGraph.roots`.
pub const ROOTS: u64 = 7;
/// `HeapGraph.types`.
pub const TYPES: u64 = 9;

/// `v` as a varint.
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

/// An interned string (a field name: `Class.field`).
pub fn name(iid: u64, text: &str) -> Vec<u8> {
    let mut s = Vec::new();
    int(1, iid, &mut s);
    bytes(2, text.as_bytes(), &mut s);
    s
}

/// A root of `HeapGraphRoot.Type` `kind` holding `ids`.
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
    let mut t = Vec::new();
    bytes(1, &p, &mut t);
    t
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
    let mut t = Vec::new();
    bytes(1, &p, &mut t);
    t
}
