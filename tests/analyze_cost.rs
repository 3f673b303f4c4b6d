//! What hostile dumps cost the analysis, and what it says of dumps it cannot read whole:
//! a deep class hierarchy, superclass cycles and broken layouts, files holding two heap
//! dumps; and `-v` naming every step. The dumps are made here, at test time.

mod common;

use std::path::{Path, PathBuf};

use common::{failed_with, run, s, stderr, stdout};
use hprof_fixtures::android::{Android, BitmapKind};
use hprof_fixtures::{Heap, Options as BuildOptions, Ty, Val};
use hprof_shrink_analyze::{analyze_path, Analysis, Options, Outcome};
use hprof_shrink_core::Control;

/// A HotSpot-like dump with 4-byte ids, written record by record.
#[derive(Default)]
struct Raw {
    out: Vec<u8>,
    heap: Vec<u8>,
    next_string: u32,
    next_serial: u32,
}

impl Raw {
    fn new() -> Raw {
        let mut r = Raw {
            next_string: 1,
            next_serial: 1,
            ..Raw::default()
        };
        r.out.extend_from_slice(b"JAVA PROFILE 1.0.2\0");
        r.out.extend_from_slice(&4u32.to_be_bytes());
        r.out.extend_from_slice(&0u64.to_be_bytes());
        r
    }

    fn record(&mut self, tag: u8, body: &[u8]) {
        self.out.push(tag);
        self.out.extend_from_slice(&0u32.to_be_bytes());
        self.out
            .extend_from_slice(&(body.len() as u32).to_be_bytes());
        self.out.extend_from_slice(body);
    }

    fn string(&mut self, text: &str) -> u32 {
        let id = self.next_string;
        self.next_string += 1;
        let mut body = id.to_be_bytes().to_vec();
        body.extend_from_slice(text.as_bytes());
        self.record(0x01, &body);
        id
    }

    /// LOAD_CLASS and CLASS_DUMP: `fields` are (name id, type) instance fields.
    fn class(&mut self, id: u32, name: &str, superclass: u32, fields: &[(u32, u8)]) {
        let name = self.string(name);
        let serial = self.next_serial;
        self.next_serial += 1;
        let body: Vec<u8> = [serial, id, 0, name]
            .iter()
            .flat_map(|v| v.to_be_bytes())
            .collect();
        self.record(0x02, &body);
        // Every field here is 4 bytes: an id or an int.
        let size = 4 * fields.len() as u32;
        let h = &mut self.heap;
        h.push(0x20);
        for v in [id, 0, superclass, 0, 0, 0, 0, 0, size] {
            h.extend_from_slice(&v.to_be_bytes());
        }
        h.extend_from_slice(&0u16.to_be_bytes()); // constant pool
        h.extend_from_slice(&0u16.to_be_bytes()); // statics
        h.extend_from_slice(&(fields.len() as u16).to_be_bytes());
        for &(name, ty) in fields {
            h.extend_from_slice(&name.to_be_bytes());
            h.push(ty);
        }
    }

    /// An INSTANCE_DUMP whose field data is `values`, 4 bytes each.
    fn instance(&mut self, id: u32, class: u32, values: &[u32]) {
        let h = &mut self.heap;
        h.push(0x21);
        for v in [id, 0, class, 4 * values.len() as u32] {
            h.extend_from_slice(&v.to_be_bytes());
        }
        for v in values {
            h.extend_from_slice(&v.to_be_bytes());
        }
    }

    /// An INSTANCE_DUMP whose field data is `data` as it is.
    fn instance_bytes(&mut self, id: u32, class: u32, data: &[u8]) {
        let h = &mut self.heap;
        h.push(0x21);
        for v in [id, 0, class, data.len() as u32] {
            h.extend_from_slice(&v.to_be_bytes());
        }
        h.extend_from_slice(data);
    }

    /// An OBJECT_ARRAY_DUMP of `class` holding `elements`.
    fn array(&mut self, id: u32, class: u32, elements: &[u32]) {
        let h = &mut self.heap;
        h.push(0x22);
        for v in [id, 0, elements.len() as u32, class] {
            h.extend_from_slice(&v.to_be_bytes());
        }
        for v in elements {
            h.extend_from_slice(&v.to_be_bytes());
        }
    }

    /// A JNI global root.
    fn root(&mut self, id: u32) {
        self.heap.push(0x01);
        self.heap.extend_from_slice(&id.to_be_bytes());
        self.heap.extend_from_slice(&0u32.to_be_bytes());
    }

    fn finish(mut self) -> Vec<u8> {
        let heap = std::mem::take(&mut self.heap);
        self.record(0x1C, &heap);
        self.record(0x2C, &[]);
        self.out
    }
}

fn write(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    path
}

fn outcome(path: &Path, options: &Options) -> Outcome {
    analyze_path(path, options, &Control::default())
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn analyze(path: &Path) -> Analysis {
    outcome(
        path,
        &Options {
            pictures: false,
            ..Options::default()
        },
    )
    .analysis
}

fn objects(a: &Analysis) -> u64 {
    a.dump.instances + a.dump.object_arrays + a.dump.primitive_arrays + a.dump.classes
}

#[test]
fn a_deep_class_hierarchy_costs_its_size() {
    // 20,000 classes, each the subclass of the one before with one reference field of its
    // own, and one instance of the deepest, whose 20,000 fields each hold an object. Each
    // class's layout was made anew from its whole hierarchy, with a cycle check that
    // walked the chain at each step: cubic in the depth. The build before this took
    // 0.7 s at 1,000 classes, 5 s at 2,000 and 44 s at 4,000 (125 s and 1 GB at 8,000 as
    // reported): about 2 hours here. Now each class is made once from its superclass's.
    const DEPTH: u32 = 20_000;
    let mut d = Raw::new();
    let field = d.string("f");
    d.class(0x100, "java.lang.Object", 0, &[]);
    d.class(0x200, "Leaf", 0x100, &[]);
    let class = |k: u32| 0x1000 + 16 * k;
    for k in 1..=DEPTH {
        let up = if k == 1 { 0x100 } else { class(k - 1) };
        d.class(class(k), &format!("C{k}"), up, &[(field, 2)]);
    }
    let leaf = |k: u32| 0x100_0000 + 16 * k;
    let deepest = 0x90_0000;
    let values: Vec<u32> = (1..=DEPTH).map(leaf).collect();
    d.instance(deepest, class(DEPTH), &values);
    for k in 1..=DEPTH {
        d.instance(leaf(k), 0x200, &[]);
    }
    d.root(deepest);
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "deep.hprof", &d.finish());
    let a = analyze(&path);
    // Every inherited field is read: the instance and all it holds are reachable.
    assert_eq!(a.dump.reachable_objects, 1 + DEPTH as u64);
    assert!(
        a.notes.iter().all(|n| !n.contains("could not be read")),
        "{:?}",
        a.notes
    );
}

#[test]
fn a_chain_whose_members_hold_objects_its_head_also_holds_costs_near_linear_work() {
    // A head, then a chain of 200,000 objects, each the only way to the next, each holding
    // a side object that the head's array holds too; the side objects are leaves (no
    // references of their own) in one dump and not in the other. Each side object's
    // dominator is the head, but its parent in the search is deep in the chain: walked one
    // step at a time up the dominator tree, that is n²/2 steps (the build before this took
    // 3.5 s at 20,000 and grew with the square). The walks are counted; past a linear
    // budget they jump, and the count stays within (n + m) log n.
    const N: u32 = 200_000;
    for leaves in [true, false] {
        let mut d = Raw::new();
        let next = d.string("next");
        let side = d.string("side");
        let all = d.string("all");
        d.class(0x100, "java.lang.Object", 0, &[]);
        d.class(0x110, "java.lang.Object[]", 0x100, &[]);
        d.class(0x200, "Node", 0x100, &[(next, 2), (side, 2)]);
        d.class(0x300, "Head", 0x100, &[(next, 2), (all, 2)]);
        let own: &[(u32, u8)] = if leaves { &[] } else { &[(next, 2)] };
        d.class(0x400, "Side", 0x100, own);
        let node = |i: u32| 0x100_0000 + 32 * i;
        let side_of = |i: u32| node(i) + 16;
        let (head, array) = (0x90_0000, 0x90_0010);
        d.instance(head, 0x300, &[node(0), array]);
        let sides: Vec<u32> = (0..N).map(side_of).collect();
        d.array(array, 0x110, &sides);
        for i in 0..N {
            let after = if i + 1 < N { node(i + 1) } else { 0 };
            d.instance(node(i), 0x200, &[after, side_of(i)]);
            if leaves {
                d.instance(side_of(i), 0x400, &[]);
            } else {
                d.instance(side_of(i), 0x400, &[side_of(i)]);
            }
        }
        d.root(head);
        let dir = tempfile::tempdir().unwrap();
        let path = write(dir.path(), "chain.hprof", &d.finish());
        let o = outcome(
            &path,
            &Options {
                pictures: false,
                ..Options::default()
            },
        );
        assert_eq!(o.analysis.dump.reachable_objects, 2 + 2 * N as u64);
        let (n, m) = (2 + 2 * N as u64, 2 + 3 * N as u64);
        let bound = 4 * (n + m) * 19;
        assert!(
            o.timings.dominator_steps <= bound,
            "leaves {leaves}: {} steps for {n} objects and {m} references (bound {bound})",
            o.timings.dominator_steps
        );
    }
}

#[test]
fn a_deep_hierarchy_of_activities_costs_its_size() {
    // 20,000 classes, each the subclass of the one before, below android.app.Activity
    // (which declares mDestroyed), and one rooted instance of each: LeakCanary's finder
    // reads every Activity's mDestroyed. The inspectors found a field's place by making
    // each class's whole layout (and walked each hierarchy searching the walk for a
    // cycle): quadratic in the depth, 2·10^8 steps here. Now each class enters the
    // inspectors' tables once, from its superclass's entry.
    const DEPTH: u32 = 20_000;
    let mut d = Raw::new();
    let destroyed = d.string("mDestroyed");
    d.class(0x100, "java.lang.Object", 0, &[]);
    d.class(0x200, "android.app.Activity", 0x100, &[(destroyed, 4)]);
    let class = |k: u32| 0x1000 + 16 * k;
    let object = |k: u32| 0x100_0000 + 16 * k;
    for k in 1..=DEPTH {
        let up = if k == 1 { 0x200 } else { class(k - 1) };
        d.class(class(k), &format!("com.example.A{k}"), up, &[]);
        // The last one destroyed: the one leak.
        d.instance_bytes(object(k), class(k), &[u8::from(k == DEPTH)]);
        d.root(object(k));
    }
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "activities.hprof", &d.finish());
    let started = std::time::Instant::now();
    let a = analyze(&path);
    // A debug build takes 2 s here, the code before 280 s: the bound leaves room for a
    // loaded machine and still fails the quadratic code.
    let took = started.elapsed();
    assert!(took.as_secs() < 60, "took {took:?}");
    assert_eq!(a.dump.reachable_objects, DEPTH as u64);
    let names: Vec<&str> = a.leaks.iter().map(|l| l.class_name.as_str()).collect();
    assert_eq!(names, [format!("com.example.A{DEPTH}")]);
}

#[test]
fn a_deep_hierarchy_below_a_known_leak_field_costs_its_size() {
    // 20,000 classes, each the subclass of the one before, below
    // android.widget.ActivityChooserModel, whose mActivityChoserModelPolicy the known-leak
    // table names for every device, and one rooted instance of each holding an object
    // there. The path search matched the table over each class's whole chain of
    // superclasses (searching the chain for a repeat at each step), for every class: cubic
    // in the depth. Now each class's rows are made from its superclass's, and the fields'
    // order (Shark's) is made per class from its first instance.
    const DEPTH: u32 = 20_000;
    let mut d = Raw::new();
    let policy = d.string("mActivityChoserModelPolicy");
    d.class(0x100, "java.lang.Object", 0, &[]);
    d.class(0x200, "Leaf", 0x100, &[]);
    d.class(
        0x300,
        "android.widget.ActivityChooserModel",
        0x100,
        &[(policy, 2)],
    );
    let class = |k: u32| 0x1000 + 16 * k;
    let object = |k: u32| 0x100_0000 + 16 * k;
    let held = |k: u32| 0x200_0000 + 16 * k;
    for k in 1..=DEPTH {
        let up = if k == 1 { 0x300 } else { class(k - 1) };
        d.class(class(k), &format!("com.example.M{k}"), up, &[]);
        d.instance(object(k), class(k), &[held(k)]);
        d.instance(held(k), 0x200, &[]);
        d.root(object(k));
    }
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "chooser.hprof", &d.finish());
    let started = std::time::Instant::now();
    let a = analyze(&path);
    let took = started.elapsed();
    // A debug build takes about a second here; the bound leaves room for a loaded machine
    // and still fails the cubic code.
    assert!(took.as_secs() < 60, "took {took:?}");
    // Every instance's field is followed (a known leak is followed last, not dropped).
    assert_eq!(a.dump.reachable_objects, 2 * DEPTH as u64);
}

#[test]
fn deep_hierarchies_on_superclass_cycles_cost_their_size() {
    // A ring of 10,000 classes (each the superclass of the next, the last the first's), and
    // a chain of 10,000 below a two-class cycle; an instance of the deepest class of each,
    // rooted, holding an object. The build before this checked for a cycle by searching
    // the walk so far at every step up, and walked each class's whole hierarchy: cubic in
    // the depth (hours here). Now the walk keeps a set of the classes on it, and every
    // class met is settled once, the ones on or below a cycle included.
    const DEPTH: u32 = 10_000;
    let mut d = Raw::new();
    let field = d.string("f");
    d.class(0x100, "java.lang.Object", 0, &[]);
    d.class(0x200, "Leaf", 0x100, &[]);
    let ring = |k: u32| 0x10_0000 + 16 * k;
    for k in 0..DEPTH {
        let up = ring((k + DEPTH - 1) % DEPTH);
        d.class(ring(k), &format!("Ring{k}"), up, &[(field, 2)]);
    }
    d.class(0x300, "CycleA", 0x310, &[]);
    d.class(0x310, "CycleB", 0x300, &[]);
    let chain = |k: u32| 0x40_0000 + 16 * k;
    for k in 0..DEPTH {
        let up = if k == 0 { 0x300 } else { chain(k - 1) };
        d.class(chain(k), &format!("Below{k}"), up, &[(field, 2)]);
    }
    d.instance(0x90_0000, ring(DEPTH - 1), &[0x90_0010]);
    d.instance(0x90_0010, 0x200, &[]);
    d.root(0x90_0000);
    d.instance(0x90_0020, chain(DEPTH - 1), &[0x90_0030]);
    d.instance(0x90_0030, 0x200, &[]);
    d.root(0x90_0020);
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "cycles.hprof", &d.finish());
    let a = analyze(&path);
    // The two rooted instances are read as objects whose references cannot be followed.
    assert_eq!(a.dump.reachable_objects, 2);
    let note = a
        .notes
        .iter()
        .find(|n| n.contains("could not be read"))
        .unwrap_or_else(|| panic!("no note on the unread references: {:?}", a.notes));
    assert!(
        note.starts_with("the references of 2 objects of 2 classes could not be read: "),
        "{note}"
    );
    assert_eq!(
        note.matches("(its superclasses form a cycle; 1 object)")
            .count(),
        2,
        "{note}"
    );
}

#[test]
fn broken_layouts_are_named_with_a_count_and_a_cap() {
    // 14 classes below a superclass the dump lacks, and 2 on a superclass cycle, one
    // instance each, rooted, each referencing an object only it holds.
    let mut d = Raw::new();
    let field = d.string("held");
    d.class(0x100, "java.lang.Object", 0, &[]);
    d.class(0x200, "Leaf", 0x100, &[]);
    let mut id = 0x10_0000;
    for k in 0..14u32 {
        let c = 0x1000 + 16 * k;
        d.class(
            c,
            &format!("com.example.Orphan{k:02}"),
            0xdead_0000,
            &[(field, 2)],
        );
        d.instance(id, c, &[id + 8]);
        d.instance(id + 8, 0x200, &[]);
        d.root(id);
        id += 16;
    }
    // A → B → A, with two instances: named first, as the class holding the most.
    d.class(0x2000, "com.example.CycleA", 0x2010, &[(field, 2)]);
    d.class(0x2010, "com.example.CycleB", 0x2000, &[]);
    for _ in 0..2 {
        d.instance(id, 0x2000, &[id + 8]);
        d.instance(id + 8, 0x200, &[]);
        d.root(id);
        id += 16;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "broken.hprof", &d.finish());
    let a = analyze(&path);
    let note = a
        .notes
        .iter()
        .find(|n| n.contains("could not be read"))
        .unwrap_or_else(|| panic!("no note on the unread references: {:?}", a.notes));
    assert!(
        note.starts_with("the references of 16 objects of 15 classes could not be read: com.example.CycleA (its superclasses form a cycle; 2 objects), com.example.Orphan00 (superclass 0xdead0000 is not in the dump; 1 object), "),
        "{note}"
    );
    // Ten named, the rest counted.
    assert!(note.contains("com.example.Orphan08 (superclass"), "{note}");
    assert!(!note.contains("com.example.Orphan09"), "{note}");
    assert!(note.contains(", and 5 more classes."), "{note}");
    // Nothing leaks here, and the note says that this may be wrong.
    assert!(a.leaks.is_empty());
    assert!(
        note.ends_with("so \"no leak\" may be wrong: a leak held through them is not seen"),
        "{note}"
    );
    // The objects only they hold count as unreachable.
    assert_eq!(a.dump.reachable_objects, 16);
}

/// An Activity, destroyed, watched by Matrix under `KEY`, held only by an instance of
/// `com.example.Holder`, whose superclass the dump lacks; rooted by a static of
/// `com.example.App`.
const KEY: &str = "MATRIX_RESCANARY_REFKEY_holes";

fn activity_behind_a_broken_layout() -> Vec<u8> {
    let mut a = Android::new(BuildOptions::default(), BitmapKind::NativePixels);
    let activity = a.activity;
    let info_class = a.destroyed_info;
    a.b.dump_class(activity, Heap::Image);
    a.b.dump_class(info_class, Heap::App);
    let leaky =
        a.b.declare_class("com.example.LeakyActivity", activity, &[], &[]);
    a.b.dump_class(leaky, Heap::App);
    // Declared (LOAD_CLASS) but never dumped: its subclass's layout cannot be made.
    let base =
        a.b.declare_class("com.example.Base", a.object, &[("mBase", Ty::Int)], &[]);
    let holder = a.b.declare_class(
        "com.example.Holder",
        base,
        &[("mActivity", Ty::Object)],
        &[],
    );
    a.b.dump_class(holder, Heap::App);
    let title = a.b.string("Leaky", Heap::App);
    let leaked = a.b.instance(
        leaky,
        Heap::App,
        &[("mDestroyed", Val::Bool(true)), ("mTitle", Val::Obj(title))],
    );
    let held_by =
        a.b.instance(holder, Heap::App, &[("mActivity", Val::Obj(leaked))]);
    let app = a.b.declare_class("com.example.App", a.object, &[], &[]);
    a.b.set_static(app, "sHolder", Val::Obj(held_by));
    let weak = a.b.instance(
        a.weak_reference,
        Heap::App,
        &[("referent", Val::Obj(leaked))],
    );
    let key = a.b.string(KEY, Heap::App);
    let info = a.b.instance(
        info_class,
        Heap::App,
        &[("mActivityRef", Val::Obj(weak)), ("mKey", Val::Obj(key))],
    );
    a.b.set_static(app, "sWatched", Val::Obj(info));
    a.b.dump_class(app, Heap::App);
    a.b.root_simple(0x05, app);
    a.b.finish()
}

#[test]
fn no_leak_behind_a_broken_layout_says_the_graph_has_holes() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(
        dir.path(),
        "holes.hprof",
        &activity_behind_a_broken_layout(),
    );
    let a = outcome(
        &path,
        &Options {
            key: Some(KEY.into()),
            pictures: false,
            ..Options::default()
        },
    )
    .analysis;
    assert!(a.leaks.is_empty());
    // The finder's own verdict stands…
    assert!(
        a.notes
            .iter()
            .any(|n| n.contains("would have been collected")),
        "{:?}",
        a.notes
    );
    // …and beside it, what it rests on: the class whose references were not read.
    let note = a
        .notes
        .iter()
        .find(|n| n.contains("could not be read"))
        .unwrap_or_else(|| panic!("no note on the unread references: {:?}", a.notes));
    assert!(
        note.contains("com.example.Holder (superclass"),
        "the class is named: {note}"
    );
    assert!(note.contains("not in the dump; 1 object)"), "{note}");
    assert!(note.contains("\"no leak\" may be wrong"), "{note}");

    // The same at the terminal.
    let o = run(&["analyze", s(&path), "--key", KEY]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(text.contains("com.example.Holder"), "{text}");
}

/// Two dumps of one heap, taken one after the other, as the old `-agentlib:hprof` wrote
/// them into one file: in the first a static holds a destroyed Activity, in the second it
/// is let go. Returns the file and each dump as a file of its own.
fn two_dumps() -> (Vec<u8>, Vec<u8>, Vec<u8>) {
    let build = |held: bool| {
        let mut a = Android::new(BuildOptions::default(), BitmapKind::NativePixels);
        let activity = a.activity;
        a.b.dump_class(activity, Heap::Image);
        let leaky =
            a.b.declare_class("com.example.LeakyActivity", activity, &[], &[]);
        a.b.dump_class(leaky, Heap::App);
        let title = a.b.string("Leaky", Heap::App);
        let leaked = a.b.instance(
            leaky,
            Heap::App,
            &[("mDestroyed", Val::Bool(true)), ("mTitle", Val::Obj(title))],
        );
        let app = a.b.declare_class("com.example.App", a.object, &[], &[]);
        a.b.set_static(app, "sLeak", Val::Obj(if held { leaked } else { 0 }));
        a.b.dump_class(app, Heap::App);
        a.b.root_simple(0x05, app);
        a.b.finish()
    };
    let (first, second) = (build(true), build(false));
    // The second's heap records after the whole of the first: the strings and classes
    // before them are the same in both.
    let heap_at = first_heap_record(&second);
    assert_eq!(first[..heap_at], second[..heap_at]);
    let mut both = first.clone();
    both.extend_from_slice(&second[heap_at..]);
    (both, first, second)
}

/// The offset of the first heap dump record (HEAP_DUMP or HEAP_DUMP_SEGMENT).
fn first_heap_record(dump: &[u8]) -> usize {
    let mut at = dump.iter().position(|&b| b == 0).unwrap() + 1 + 12;
    loop {
        if matches!(dump[at], 0x0C | 0x1C) {
            return at;
        }
        let len = u32::from_be_bytes(dump[at + 5..at + 9].try_into().unwrap()) as usize;
        at += 9 + len;
    }
}

/// An analysis without what tells one file from another.
fn same_heap(mut a: Analysis) -> Analysis {
    a.input.path.clear();
    a.dump.bytes = 0;
    a.dump.heap_dumps = 0;
    a.dump.heap_dump = 0;
    a.notes.retain(|n| !n.contains("heap dumps"));
    a
}

#[test]
fn a_file_of_two_dumps_is_analyzed_one_dump_at_a_time() {
    let (both, first, second) = two_dumps();
    let dir = tempfile::tempdir().unwrap();
    let both = write(dir.path(), "both.hprof", &both);
    let first = write(dir.path(), "first.hprof", &first);
    let second = write(dir.path(), "second.hprof", &second);

    // The last by default, and the result says which of how many.
    let a = analyze(&both);
    assert_eq!((a.dump.heap_dumps, a.dump.heap_dump), (2, 2));
    assert!(
        a.notes
            .iter()
            .any(|n| n.contains("the file holds 2 heap dumps") && n.contains("dump 2, the last")),
        "{:?}",
        a.notes
    );
    assert!(a.leaks.is_empty(), "the second dump lets the Activity go");
    assert_eq!(same_heap(a), same_heap(analyze(&second)));

    // --dump 1: the first, whole and alone (its objects are not counted twice).
    let one = outcome(
        &both,
        &Options {
            dump: Some(1),
            pictures: false,
            ..Options::default()
        },
    )
    .analysis;
    assert_eq!(one.dump.heap_dump, 1);
    assert_eq!(one.leaks.len(), 1);
    assert_eq!(one.leaks[0].class_name, "com.example.LeakyActivity");
    let alone = analyze(&first);
    assert_eq!(objects(&one), objects(&alone));
    assert_eq!(same_heap(one), same_heap(alone));

    // A file of one dump says nothing of dumps.
    let a = analyze(&first);
    assert_eq!((a.dump.heap_dumps, a.dump.heap_dump), (1, 1));
    assert!(a.notes.iter().all(|n| !n.contains("heap dumps")));

    // At the command line: --dump, and a dump that is not there.
    let o = run(&["analyze", s(&both), "--dump", "1"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("com.example.LeakyActivity"));
    let o = run(&["analyze", s(&both), "--dump", "3"]);
    failed_with(&o, 1, &["the file holds 2 heap dumps: there is no dump 3"]);
    let o = run(&["analyze", s(&both), "--dump", "0"]);
    failed_with(&o, 2, &["--dump"]);

    // verify says how many dumps the file holds.
    let o = run(&["verify", s(&both)]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("2 heap dumps"), "{}", stdout(&o));
    let o = run(&["verify", s(&both), "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["counts"]["dumps"], 2);
    // shrink is unchanged: the package of a two-dump file verifies against it.
    let zip = dir.path().join("both.zip");
    let o = run(&[
        s(&both),
        s(&zip),
        "--sdk-version",
        "25",
        "--manufacturer",
        "x",
        "--leaked-activity-key",
        "k",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = run(&["verify", s(&zip), "--against", s(&both)]);
    assert!(o.status.success(), "{}", stderr(&o));
}

#[test]
fn the_corpus_files_of_two_dumps_are_read_one_dump_at_a_time() {
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus");
    // (file, objects in dump 1, objects in dump 2): each dump's own, no id counted twice
    // (the issue counted 7,297 objects in the first file where its last dump has 3,665).
    let files = [
        ("mat-oracle-jdk7-21-hprofagent.hprof", 3_632, 3_665),
        (
            "mat-sun-jdk6-31-hprofagent-compressedOops.hprof",
            2_833,
            2_886,
        ),
    ];
    for (name, first, last) in files {
        let path = corpus.join(name);
        if !path.exists() {
            println!("skipping {name}: {} is not there", corpus.display());
            continue;
        }
        let a = analyze(&path);
        assert_eq!((a.dump.heap_dumps, a.dump.heap_dump), (2, 2), "{name}");
        assert_eq!(objects(&a), last, "{name}");
        assert!(a
            .notes
            .iter()
            .any(|n| n.contains("the file holds 2 heap dumps")));
        let one = outcome(
            &path,
            &Options {
                dump: Some(1),
                pictures: false,
                ..Options::default()
            },
        )
        .analysis;
        assert_eq!(objects(&one), first, "{name}");
        let o = run(&["verify", s(&path), "--json"]);
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(v["counts"]["dumps"], 2, "{name}");
    }
}

#[test]
fn every_step_is_timed_and_named() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(
        dir.path(),
        "holes.hprof",
        &activity_behind_a_broken_layout(),
    );
    let o = outcome(&path, &Options::default());
    let names: Vec<&str> = o.timings.steps.iter().map(|s| s.name).collect();
    assert_eq!(
        names,
        [
            "open",
            "heap dumps",
            "index",
            "classes",
            "known leaks",
            "finder classes",
            "references",
            "finders",
            "paths",
            "leaks",
            "traces",
            "unreachable",
            "bitmaps",
            "counts",
            "dominators",
            "strings",
            "subtrees",
            "triage",
            "retained sizes",
            "summary",
            "check"
        ]
    );
    // -v prints them all, the class graph among them.
    let o = run(&["analyze", s(&path), "-v"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let err = stderr(&o);
    let line = err
        .lines()
        .find(|l| l.starts_with("analyze: ") && l.contains(" s: "))
        .unwrap_or_else(|| panic!("no timing line: {err}"));
    for name in names {
        assert!(line.contains(&format!("{name} ")), "{name} not in {line}");
    }
}
