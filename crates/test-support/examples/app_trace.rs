//! A large Perfetto heap-graph trace shaped like an app's heap, written as ART's
//! perfetto_hprof writes one, for the bench (scripts/bench.py's `trace` shape):
//!
//!   cargo run --release -p hprof-shrink-test-support --example app_trace -- OUT MB
//!
//! The heap: ~1,500 app classes (three levels of superclasses under java.lang.Object, each
//! declaring up to four reference fields, its class object holding one or two statics),
//! the framework types the analysis knows (String, arrays, Reference and its kinds,
//! Bitmap with its width and height, NativeAllocationRegistry with its size); objects are
//! mostly small instances whose references point a few objects ahead (lists, trees) or
//! anywhere (one in seven), Strings, small arrays, Object[]s, weak references, a few large
//! arrays; the first 2 % in the boot image's heap, the next 6 % in the zygote's. Roots
//! (JNI globals, Java frames, sticky classes) come first, as ART writes them. As ART does:
//! packets of ~400 kB, each `HeapGraph` with its pid, index and `continued`; a type and a
//! field name interned in the packet that first uses them; objects by `id_delta` after a
//! packet's first, `self_size` only where it is not the type's, references packed from a
//! `reference_field_id_base`, field names on class objects only. Every eighth heap-graph
//! packet is followed by another packet (a clock snapshot's bytes), and a process tree and
//! a packages list come first. Deterministic: the same MB gives the same bytes.

use std::io::Write;

use hprof_shrink_test_support::trace::{bytes, framed, int, name, other_packet, varint};
use hprof_shrink_test_support::trace::{packages_packet, process_packet};

const PID: u64 = 4242;
/// Where ART's heap starts; each object's id is this plus 16 per object before it.
const BASE: u64 = 0x12c0_0000;
const PACKET: usize = 400_000;
/// Trace bytes an object takes on average (measured on this generator's output): the
/// object count for a size.
const BYTES_PER_OBJECT: u64 = 17;
const APP_CLASSES: u64 = 1500;

// The framework's types (keys).
const OBJECT: u64 = 1;
const STRING: u64 = 2;
const BYTES: u64 = 3;
const INTS: u64 = 4;
const LONGS: u64 = 5;
const OBJECTS: u64 = 6;
const REFERENCE: u64 = 7;
const WEAK: u64 = 8;
const SOFT: u64 = 9;
const BITMAP: u64 = 10;
const REGISTRY: u64 = 11;
const FIRST_APP: u64 = 16;

/// A type as written: name, superclass, object size, its own fields' name keys, kind.
struct Type {
    name: String,
    super_id: u64,
    size: u64,
    fields: Vec<u64>,
    kind: u64,
    /// Reference fields with its superclasses'.
    refs: usize,
}

struct Gen {
    out: std::io::BufWriter<std::fs::File>,
    rng: u64,
    types: Vec<Type>,
    field_names: Vec<String>,
    type_written: Vec<bool>,
    name_written: Vec<bool>,
    body: Vec<u8>,
    object: Vec<u8>,
    packed: Vec<u8>,
    index: u64,
    prev_id: Option<u64>,
    heap: u64,
    count: u64,
    graphs: u64,
}

impl Gen {
    fn next(&mut self) -> u64 {
        // xorshift64*
        self.rng ^= self.rng >> 12;
        self.rng ^= self.rng << 25;
        self.rng ^= self.rng >> 27;
        self.rng.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }

    fn id(i: u64) -> u64 {
        BASE + 16 * i
    }

    fn add_type(&mut self, t: Type) {
        self.types.push(t);
    }

    fn field(&mut self, text: String) -> u64 {
        self.field_names.push(text);
        self.field_names.len() as u64
    }

    /// A type and its superclasses, and their fields' names, written to the packet the
    /// first time they are used.
    fn intern_type(&mut self, t: u64) {
        let mut at = t;
        while at != 0 && !self.type_written[at as usize] {
            self.type_written[at as usize] = true;
            let ty = &self.types[at as usize];
            let mut m = Vec::new();
            int(1, at, &mut m);
            bytes(3, ty.name.as_bytes(), &mut m);
            int(4, ty.size, &mut m);
            if ty.super_id != 0 {
                int(5, ty.super_id, &mut m);
            }
            if !ty.fields.is_empty() {
                let mut p = Vec::new();
                for &f in &ty.fields {
                    varint(f, &mut p);
                }
                bytes(6, &p, &mut m);
            }
            int(7, ty.kind, &mut m);
            let fields = ty.fields.clone();
            let next = ty.super_id;
            bytes(9, &m, &mut self.body);
            for f in fields {
                self.intern_name(f);
            }
            at = next;
        }
    }

    fn intern_name(&mut self, f: u64) {
        if !self.name_written[f as usize] {
            self.name_written[f as usize] = true;
            let text = self.field_names[f as usize - 1].clone();
            bytes(4, &name(f, &text), &mut self.body);
        }
    }

    fn start_packet(&mut self) {
        self.body.clear();
        int(1, PID, &mut self.body);
        int(6, self.index, &mut self.body);
        self.prev_id = None;
    }

    fn end_packet(&mut self, last: bool) -> std::io::Result<()> {
        if !last {
            int(5, 1, &mut self.body);
        }
        let mut p = Vec::with_capacity(self.body.len() + 16);
        int(8, 1_000_000 + self.index, &mut p);
        int(10, 7, &mut p);
        bytes(56, &self.body, &mut p);
        self.out.write_all(&framed(&p))?;
        self.index += 1;
        self.graphs += 1;
        if self.graphs.is_multiple_of(8) {
            self.out.write_all(&other_packet())?;
        }
        Ok(())
    }

    /// One object: its type, its size when not its type's, its references (0: null), the
    /// field names of those (class objects), the values it carries.
    fn object(&mut self, i: u64, o: &Obj) -> std::io::Result<()> {
        self.intern_type(o.ty);
        for &f in &o.names {
            self.intern_name(f);
        }
        let heap = match i * 100 / self.count {
            0..=1 => 3,
            2..=7 => 2,
            _ => 1,
        };
        let id = Self::id(i);
        let m = &mut self.object;
        m.clear();
        match self.prev_id {
            Some(prev) => int(7, id - prev, m),
            None => int(1, id, m),
        }
        self.prev_id = Some(id);
        int(2, o.ty, m);
        if o.size != self.types[o.ty as usize].size {
            int(3, o.size, m);
        }
        if heap != self.heap {
            int(9, heap, m);
            self.heap = heap;
        }
        // 0 stands for null: the base is one below the least reference, as ART sets it.
        let base = o
            .refs
            .iter()
            .copied()
            .filter(|&r| r != 0)
            .min()
            .map_or(0, |r| r - 1);
        if base != 0 {
            int(6, base, m);
        }
        if !o.names.is_empty() {
            self.packed.clear();
            for &f in &o.names {
                varint(f, &mut self.packed);
            }
            bytes(4, &self.packed, m);
        }
        if !o.refs.is_empty() {
            self.packed.clear();
            for &r in &o.refs {
                varint(if r == 0 { 0 } else { r - base }, &mut self.packed);
            }
            bytes(5, &self.packed, m);
        }
        if let Some(n) = o.native {
            int(8, n, m);
        }
        if let Some((w, h)) = o.bitmap {
            int(13, w, m);
            int(14, h, m);
        }
        bytes(2, m, &mut self.body);
        if self.body.len() >= PACKET {
            self.end_packet(false)?;
            self.start_packet();
        }
        Ok(())
    }
}

#[derive(Default)]
struct Obj {
    ty: u64,
    size: u64,
    refs: Vec<u64>,
    names: Vec<u64>,
    native: Option<u64>,
    bitmap: Option<(u64, u64)>,
}

fn types(g: &mut Gen) {
    let plain = |name: &str, super_id, size, kind| Type {
        name: name.into(),
        super_id,
        size,
        fields: Vec::new(),
        kind,
        refs: 0,
    };
    g.add_type(plain("<none>", 0, 0, 0));
    g.add_type(plain("java.lang.Object", 0, 8, 1));
    g.add_type(plain("java.lang.String", OBJECT, 16, 3));
    g.add_type(plain("byte[]", OBJECT, 16, 4));
    g.add_type(plain("int[]", OBJECT, 16, 4));
    g.add_type(plain("long[]", OBJECT, 16, 4));
    g.add_type(plain("java.lang.Object[]", OBJECT, 16, 4));
    let reference: Vec<u64> = ["referent", "queue", "queueNext", "pendingNext"]
        .iter()
        .map(|f| g.field(format!("java.lang.ref.Reference.{f}")))
        .collect();
    g.add_type(Type {
        fields: reference,
        refs: 4,
        ..plain("java.lang.ref.Reference", OBJECT, 24, 1)
    });
    g.add_type(Type {
        refs: 4,
        ..plain("java.lang.ref.WeakReference", REFERENCE, 24, 9)
    });
    g.add_type(Type {
        refs: 4,
        ..plain("java.lang.ref.SoftReference", REFERENCE, 32, 8)
    });
    let chunk = g.field("android.graphics.Bitmap.mNinePatchChunk".into());
    g.add_type(Type {
        fields: vec![chunk],
        refs: 1,
        ..plain("android.graphics.Bitmap", OBJECT, 40, 1)
    });
    let loader = g.field("libcore.util.NativeAllocationRegistry.classLoader".into());
    g.add_type(Type {
        fields: vec![loader],
        refs: 1,
        ..plain("libcore.util.NativeAllocationRegistry", OBJECT, 32, 1)
    });
    while (g.types.len() as u64) < FIRST_APP {
        g.add_type(plain("java.lang.Void", OBJECT, 8, 1));
    }
    // App classes: a class's superclass is an earlier app class (three levels at most) or
    // java.lang.Object.
    let mut depth = Vec::new();
    for c in 0..APP_CLASSES {
        let (super_id, d) = if c > 10 && g.below(3) > 0 {
            let s = FIRST_APP + g.below(c);
            match depth[(s - FIRST_APP) as usize] {
                d if d < 3 => (s, d + 1),
                _ => (OBJECT, 1),
            }
        } else {
            (OBJECT, 1)
        };
        depth.push(d);
        let name = format!("com.example.app.feature{}.Class{c}", c / 40);
        let fields: Vec<u64> = (0..g.below(5))
            .map(|f| {
                g.field(format!(
                    "{name}.m{}",
                    ["Next", "Parent", "Data", "Listener"][f as usize]
                ))
            })
            .collect();
        let sup = &g.types[super_id as usize];
        let refs = sup.refs + fields.len();
        let size = sup.size + 4 * fields.len() as u64 + 4 * g.below(4);
        g.add_type(Type {
            name,
            super_id,
            size,
            fields,
            kind: 1,
            refs,
        });
    }
    // Each app class's class object's type.
    for c in 0..APP_CLASSES {
        let name = format!(
            "java.lang.Class<{}>",
            g.types[(FIRST_APP + c) as usize].name
        );
        g.add_type(plain(&name, OBJECT, 0, 5));
    }
    let n = g.types.len();
    g.type_written = vec![false; n];
    g.type_written[0] = true;
    g.name_written = vec![false; g.field_names.len() + 1 + 2 * APP_CLASSES as usize];
}

/// Object `i` of the heap (after the class objects).
fn make(g: &mut Gen, i: u64, o: &mut Obj) {
    *o = Obj::default();
    let near = |g: &mut Gen, i: u64| {
        let r = g.below(100);
        if r < 35 {
            0
        } else if r < 86 {
            Gen::id((i + 1 + g.below(8)).min(g.count - 1))
        } else {
            Gen::id(g.below(g.count))
        }
    };
    let r = g.below(1000);
    match r {
        0..=549 => {
            // Smaller class numbers more often: a few classes hold most instances.
            let a = g.below(APP_CLASSES);
            let c = a * g.below(APP_CLASSES) / APP_CLASSES;
            o.ty = FIRST_APP + c;
            let ty = &g.types[o.ty as usize];
            o.size = ty.size;
            let n = ty.refs;
            o.refs = (0..n).map(|_| near(g, i)).collect();
            if let Some(first) = o.refs.first_mut() {
                // Lists: the next object is held by this one, so most objects are reachable.
                *first = Gen::id((i + 1).min(g.count - 1));
            }
        }
        550..=749 => {
            o.ty = STRING;
            o.size = 16 + 2 * g.below(40);
        }
        750..=849 => {
            o.ty = [BYTES, INTS, LONGS][g.below(3) as usize];
            o.size = 16 + 8 * g.below(32);
        }
        850..=909 => {
            o.ty = OBJECTS;
            let n = 1 + g.below(16);
            o.refs = (0..n).map(|_| near(g, i)).collect();
            o.refs[0] = Gen::id((i + 1).min(g.count - 1));
            o.size = 16 + 4 * n;
        }
        910..=949 => {
            o.ty = if g.below(4) == 0 { SOFT } else { WEAK };
            o.size = g.types[o.ty as usize].size;
            o.refs = vec![near(g, i), 0, 0, 0];
        }
        950..=969 => {
            o.ty = REGISTRY;
            o.size = 32;
            o.refs = vec![0];
            o.native = Some(64 + g.below(1 << 20));
        }
        970..=974 => {
            o.ty = BITMAP;
            o.size = 40;
            o.refs = vec![0];
            o.bitmap = Some((1 + g.below(1080), 1 + g.below(1920)));
        }
        _ => {
            o.ty = OBJECT;
            o.size = 8;
            if g.below(400) == 0 {
                // A large array: 64 kB to 8 MB.
                o.ty = [BYTES, INTS, LONGS][g.below(3) as usize];
                o.size = 16 + (64 << 10) * (1 + g.below(128));
            }
        }
    }
}

fn main() -> std::io::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let (Some(path), Some(mb)) = (args.get(1), args.get(2).and_then(|m| m.parse::<u64>().ok()))
    else {
        eprintln!("usage: app_trace OUT MB");
        std::process::exit(2);
    };
    let file = std::fs::File::create(path)?;
    let mut g = Gen {
        out: std::io::BufWriter::with_capacity(1 << 20, file),
        rng: 0x9e37_79b9_7f4a_7c15 ^ mb,
        types: Vec::new(),
        field_names: Vec::new(),
        type_written: Vec::new(),
        name_written: Vec::new(),
        body: Vec::new(),
        object: Vec::new(),
        packed: Vec::new(),
        index: 0,
        prev_id: None,
        heap: 0,
        count: (mb << 20) / BYTES_PER_OBJECT,
        graphs: 0,
    };
    types(&mut g);
    g.out
        .write_all(&process_packet(PID, Some(10_123), "com.example.app"))?;
    g.out.write_all(&packages_packet(&[(
        "com.example.app",
        10_123,
        Some(4_210),
    )]))?;
    // The statics' names, interned when their class object is written.
    let statics: Vec<u64> = (0..APP_CLASSES)
        .map(|c| {
            let class = g.types[(FIRST_APP + c) as usize].name.clone();
            g.field(format!("{class}.sInstance"))
        })
        .collect();
    g.start_packet();
    // Roots first, as ART writes them: every 500th object a JNI global or a Java frame,
    // the class objects sticky.
    let classes = APP_CLASSES;
    let first = classes;
    for (kind, step, offset) in [(1u64, 1000, 0), (3, 1000, 500)] {
        let mut ids = Vec::new();
        let mut i = first + offset;
        while i < g.count {
            ids.push(Gen::id(i));
            if ids.len() == 20_000 {
                bytes(7, &root(kind, &ids), &mut g.body);
                ids.clear();
            }
            i += step;
        }
        bytes(7, &root(kind, &ids), &mut g.body);
    }
    let sticky: Vec<u64> = (0..classes).map(Gen::id).collect();
    bytes(7, &root(5, &sticky), &mut g.body);
    // The class objects, in the image's heap.
    let mut o = Obj::default();
    for c in 0..classes {
        o.ty = FIRST_APP + APP_CLASSES + c;
        o.size = 100 + 8 * g.below(20);
        o.names = vec![statics[c as usize]];
        o.refs = vec![Gen::id(first + g.below(g.count - first))];
        g.object(c, &o)?;
    }
    for i in first..g.count {
        make(&mut g, i, &mut o);
        g.object(i, &o)?;
    }
    g.end_packet(true)?;
    g.out.flush()
}

/// `HeapGraphRoot` with its ids packed, as ART writes them.
fn root(kind: u64, ids: &[u64]) -> Vec<u8> {
    let mut r = Vec::new();
    let mut p = Vec::new();
    for &id in ids {
        varint(id, &mut p);
    }
    bytes(1, &p, &mut r);
    int(2, kind, &mut r);
    r
}
