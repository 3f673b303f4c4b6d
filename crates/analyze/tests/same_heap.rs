//! Same heap, same answers (issue 50 item 4): one heap, described once here (classes,
//! objects, references, roots), written both as an HPROF dump (the fixture builder, ART's
//! layout) and as a Perfetto heap-graph trace (test-support's writer), then analyzed.
//!
//! Compared, and equal: the strongly reachable objects and bytes; every object's
//! retained size and dominator as the triage lists them (its top retainers with their
//! shallow and retained bytes and their paths from the GC roots, the retained bytes by
//! class, the largest arrays); the triage's counts; the leak a reference-only rule finds
//! (a ViewRootImpl whose `mView` is null) with its trace's shape: the root, and each
//! step's object, class and reference.
//!
//! Not compared, and why: what rests on field values, which a heap graph does not hold
//! (the steps' statuses, reasons and labels, and so the leaks' signatures, which
//! LeakCanary computes over the references its statuses leave suspect; the notes; which
//! rules could not run, `dump.notRun`, empty for the dump and naming the rules for the
//! trace); and what is the file's, not the heap's (the format and byte counts, class
//! objects and their statics, which HPROF writes as objects and a heap graph as types,
//! and which no root here reaches).

use std::path::Path;

use hprof_fixtures::{ArtBuilder, Heap, Options as Fixture, Segmentation, Ty, Val};
use hprof_shrink_analyze::model::triage::TriageObject;
use hprof_shrink_analyze::{analyze_path, Analysis, Options, Trace};
use hprof_shrink_core::Control;
use hprof_shrink_test_support::trace::{self as wire, NAMES, OBJECTS, ROOTS, TYPES};

/// A class: its name, its superclass (by place in the list), the reference fields it
/// declares, and the fields of other types it declares after them (values a heap graph
/// lacks, counted in its instances' sizes).
struct Class {
    name: &'static str,
    superclass: Option<usize>,
    refs: &'static [&'static str],
    prims: &'static [(&'static str, Ty)],
}

/// An object: an instance (its class, and the objects its reference fields hold in the
/// class's layout order, its own fields first: `None` for null), an array of references
/// (its class, its elements), or a byte array (its length).
enum Object {
    Instance(usize, Vec<Option<usize>>),
    Array(usize, Vec<usize>),
    Bytes(u32),
}

/// A heap: classes, objects, the objects JNI globals hold, and the values of instances'
/// fields of other types than references (object, field, value; the rest are zero), which
/// only the HPROF dump holds.
struct Description {
    classes: Vec<Class>,
    objects: Vec<Object>,
    roots: Vec<usize>,
    values: Vec<(usize, &'static str, Val)>,
}

/// An object's id in both files.
fn id(object: usize) -> u64 {
    0x7000_0000 + 0x40 * object as u64
}

impl Description {
    /// Class `c`'s reference fields, its own first, then its superclasses', and the bytes
    /// of its other fields.
    fn layout(&self, c: usize) -> (Vec<&'static str>, u64) {
        let (mut refs, mut bytes) = (Vec::new(), 0);
        let mut at = Some(c);
        while let Some(c) = at {
            refs.extend_from_slice(self.classes[c].refs);
            bytes += self.classes[c]
                .prims
                .iter()
                .map(|p| p.1.size(4) as u64)
                .sum::<u64>();
            at = self.classes[c].superclass;
        }
        (refs, bytes)
    }

    /// An object's bytes, as both formats count them (4-byte ids).
    fn size(&self, o: &Object) -> u64 {
        match o {
            Object::Instance(c, _) => {
                let (refs, bytes) = self.layout(*c);
                4 * refs.len() as u64 + bytes
            }
            Object::Array(_, elements) => 4 * elements.len() as u64,
            Object::Bytes(n) => u64::from(*n),
        }
    }

    /// The heap as ART's HPROF.
    fn hprof(&self) -> Vec<u8> {
        let mut b = ArtBuilder::new(Fixture {
            segmentation: Segmentation::Single,
            class_overhead: false,
            ..Fixture::default()
        });
        let mut class_ids: Vec<u64> = Vec::new();
        for c in &self.classes {
            let mut fields: Vec<(String, Ty)> =
                c.refs.iter().map(|r| (r.to_string(), Ty::Object)).collect();
            fields.extend(c.prims.iter().map(|(n, t)| (n.to_string(), *t)));
            let fields: Vec<(&str, Ty)> = fields.iter().map(|(n, t)| (n.as_str(), *t)).collect();
            let superclass = c.superclass.map_or(0, |s| class_ids[s]);
            class_ids.push(b.declare_class(c.name, superclass, &fields, &[]));
        }
        for &c in &class_ids {
            b.dump_class(c, Heap::App);
        }
        for (i, o) in self.objects.iter().enumerate() {
            match o {
                Object::Instance(c, held) => {
                    let names = self.layout(*c).0;
                    let mut values: Vec<(&str, Val)> = names
                        .iter()
                        .zip(held)
                        .map(|(n, h)| (*n, Val::Obj(h.map_or(0, id))))
                        .collect();
                    let own = self.values.iter().filter(|v| v.0 == i);
                    values.extend(own.map(|&(_, n, v)| (n, v)));
                    b.instance_at(id(i), class_ids[*c], Heap::App, &values);
                }
                Object::Array(c, elements) => {
                    let elements: Vec<u64> = elements.iter().map(|&e| id(e)).collect();
                    b.object_array_at(id(i), Heap::App, class_ids[*c], &elements);
                }
                Object::Bytes(n) => {
                    b.primitive_array_at(id(i), Heap::App, Ty::Byte, &vec![7; *n as usize])
                }
            }
        }
        for (k, &r) in self.roots.iter().enumerate() {
            b.root_jni_global(id(r), 0x100 + k as u64);
        }
        b.finish()
    }

    /// The heap as a Perfetto heap graph (type keys from 1, field-name keys from 1).
    fn trace(&self) -> Vec<u8> {
        let mut parts = Vec::new();
        let mut iid = 0;
        for (t, c) in self.classes.iter().enumerate() {
            let mut keys = Vec::new();
            for r in c.refs {
                iid += 1;
                parts.push((NAMES, wire::name(iid, &format!("{}.{r}", c.name))));
                keys.push(iid);
            }
            let superclass = c.superclass.map_or(0, |s| s as u64 + 1);
            parts.push((TYPES, wire::ty(t as u64 + 1, c.name, superclass, &keys)));
        }
        for (i, o) in self.objects.iter().enumerate() {
            let (class, refs) = match o {
                Object::Instance(c, held) => (*c, held.iter().map(|h| h.map_or(0, id)).collect()),
                Object::Array(c, elements) => (*c, elements.iter().map(|&e| id(e)).collect()),
                Object::Bytes(_) => (self.byte_array_type(), Vec::new()),
            };
            let size = self.size(o);
            parts.push((OBJECTS, wire::object(id(i), class as u64 + 1, size, &refs)));
        }
        let roots: Vec<u64> = self.roots.iter().map(|&r| id(r)).collect();
        parts.push((ROOTS, wire::root(1, &roots)));
        wire::graph_packet(42, &parts)
    }

    fn byte_array_type(&self) -> usize {
        self.classes
            .iter()
            .position(|c| c.name == "byte[]")
            .unwrap()
    }
}

/// A small app's heap: an App (rooted) holding a Cache of entries in an array, with
/// payloads, a cycle, a listener whose superclass declares a field, a WeakReference to an
/// entry nothing else holds, and a ViewRootImpl (rooted) without its view.
fn app() -> Description {
    let classes = vec![
        Class {
            name: "com.example.App",
            superclass: None,
            refs: &["cache", "listener", "weak"],
            prims: &[("started", Ty::Long)],
        },
        Class {
            name: "com.example.Cache",
            superclass: None,
            refs: &["entries"],
            prims: &[("size", Ty::Int), ("hits", Ty::Int)],
        },
        Class {
            name: "java.lang.Object[]",
            superclass: None,
            refs: &[],
            prims: &[],
        },
        Class {
            name: "com.example.Entry",
            superclass: None,
            refs: &["next", "payload"],
            prims: &[("hash", Ty::Int)],
        },
        Class {
            name: "byte[]",
            superclass: None,
            refs: &[],
            prims: &[],
        },
        Class {
            name: "com.example.Base",
            superclass: None,
            refs: &["tag"],
            prims: &[("flags", Ty::Short), ("on", Ty::Boolean)],
        },
        Class {
            name: "com.example.Listener",
            superclass: Some(5),
            refs: &["owner"],
            prims: &[],
        },
        Class {
            name: "java.lang.ref.Reference",
            superclass: None,
            refs: &["referent"],
            prims: &[],
        },
        Class {
            name: "java.lang.ref.WeakReference",
            superclass: Some(7),
            refs: &[],
            prims: &[],
        },
        Class {
            name: "android.view.ViewRootImpl",
            superclass: None,
            refs: &["mView"],
            prims: &[("mAdded", Ty::Boolean)],
        },
    ];
    use Object::*;
    let objects = vec![
        /* 0 */ Instance(0, vec![Some(1), Some(8), Some(10)]),
        /* 1 */ Instance(1, vec![Some(2)]),
        /* 2 */ Array(2, vec![3, 4, 5]),
        /* 3 */ Instance(3, vec![Some(4), None]),
        /* 4 */ Instance(3, vec![None, Some(6)]),
        /* 5 */ Instance(3, vec![Some(3), Some(7)]),
        /* 6 */ Bytes(100),
        /* 7 */ Bytes(2000),
        // The listener: its own `owner` (the App: a cycle), then Base's `tag`.
        /* 8 */
        Instance(6, vec![Some(0), Some(9)]),
        /* 9 */ Bytes(8),
        /* 10 */ Instance(8, vec![Some(11)]),
        /* 11 */ Instance(3, vec![None, Some(12)]),
        /* 12 */ Bytes(500),
        /* 13 */ Instance(9, vec![None]),
    ];
    Description {
        classes,
        objects,
        roots: vec![0, 13],
        values: vec![(0, "started", Val::Long(12)), (1, "size", Val::Int(3))],
    }
}

fn analyze(path: &Path) -> Analysis {
    let options = Options {
        pictures: false,
        ..Options::default()
    };
    analyze_path(path, &options, &Control::default())
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .analysis
}

/// A step's object, class and reference (kind, name).
type StepShape = (u64, String, Option<(String, String)>);

/// A trace's shape: its root, and its steps'.
type Shape = (String, Vec<StepShape>);

/// A leak: its object, class, retained bytes, finders and trace's shape.
type LeakShape = (u64, String, u64, Vec<String>, Shape);

/// A trace's shape.
fn shape(t: &Trace) -> Shape {
    let steps = t
        .steps
        .iter()
        .map(|s| {
            let r = s
                .reference
                .as_ref()
                .map(|r| (r.kind.clone(), r.name.clone()));
            (s.object_id, s.class_name.clone(), r)
        })
        .collect();
    (t.root.clone(), steps)
}

/// An object the triage lists, without what rests on values: id, class, kind, sizes,
/// path shape.
type Listed = (u64, String, String, u64, u64, Option<Shape>);

fn listed(o: &TriageObject) -> Listed {
    (
        o.object_id,
        o.class_name.clone(),
        o.kind.clone(),
        o.shallow_bytes,
        o.retained_bytes,
        o.path.as_ref().map(shape),
    )
}

/// What the analysis says of the heap, field values and the file's form aside.
#[derive(Debug, PartialEq)]
struct Answers {
    reachable: (u64, u64),
    top_retainers: Vec<(Listed, bool)>,
    accumulations: Vec<Option<Listed>>,
    retained_by_class: Vec<(String, u64, u64)>,
    largest_arrays: (Vec<Listed>, Vec<Listed>),
    counts: String,
    leaks: Vec<LeakShape>,
}

fn answers(a: &Analysis) -> Answers {
    let t = a.triage.as_ref().expect("a triage");
    Answers {
        reachable: (a.dump.reachable_objects, a.dump.reachable_bytes),
        top_retainers: t
            .top_retainers
            .iter()
            .map(|r| (listed(&r.object), r.suspect))
            .collect(),
        accumulations: t
            .top_retainers
            .iter()
            .map(|r| r.accumulation.as_ref().map(|a| listed(&a.object)))
            .collect(),
        retained_by_class: t
            .retained_by_class
            .iter()
            .map(|c| (c.class_name.clone(), c.objects, c.retained_bytes))
            .collect(),
        largest_arrays: (
            t.largest_primitive_arrays.iter().map(listed).collect(),
            t.largest_object_arrays.iter().map(listed).collect(),
        ),
        counts: serde_json::to_string(&t.counts).unwrap(),
        leaks: a
            .leaks
            .iter()
            .map(|l| {
                (
                    l.object_id,
                    l.class_name.clone(),
                    l.retained_bytes,
                    l.finders.clone(),
                    shape(&l.trace),
                )
            })
            .collect(),
    }
}

#[test]
fn a_heap_as_hprof_and_as_a_heap_graph_gets_the_same_answers() {
    let heap = app();
    let dir = tempfile::tempdir().unwrap();
    let (dump, trace) = (dir.path().join("app.hprof"), dir.path().join("app.pftrace"));
    std::fs::write(&dump, heap.hprof()).unwrap();
    std::fs::write(&trace, heap.trace()).unwrap();
    let (from_dump, from_trace) = (analyze(&dump), analyze(&trace));
    assert_eq!(from_trace.input.kind, "perfetto");
    let (a, b) = (answers(&from_dump), answers(&from_trace));
    assert_eq!(a, b);
    // What is compared holds something: the App retains the cache, its entries and
    // payloads, the listener and its tag (not the weakly held entry); the ViewRootImpl
    // leaks; the entry only a WeakReference holds is unreachable.
    let app = &a.top_retainers[0].0;
    assert_eq!((app.1.as_str(), app.4), ("com.example.App", 2203));
    assert_eq!(a.leaks.len(), 1, "{a:?}");
    assert_eq!(a.leaks[0].1, "android.view.ViewRootImpl");
    assert!(!a.top_retainers.iter().any(|r| r.0 .0 == id(11)));
    // The dump holds the values the rules read; the trace says which could not run.
    assert!(
        from_dump.dump.not_run.is_empty(),
        "{:?}",
        from_dump.dump.not_run
    );
    assert!(!from_trace.dump.not_run.is_empty());
}
