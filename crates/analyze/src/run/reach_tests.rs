//! The path search on whole dumps, with the leaking objects chosen by the test: the
//! corpus's real Android dump against what LeakCanary's Shark answers on it.

use std::path::Path;

use hprof_shrink_core::hprof::{tags, Hprof};
use hprof_shrink_core::space::Unpack;
use hprof_shrink_core::Control;

use super::analysis::{Request, Run};
use super::{Options, Timings};
use crate::heap::edges::Edges;
use crate::heap::graph::Graph;
use crate::heap::index::Node;
use crate::heap::input;
use crate::heap::progress::build_index;
use crate::knowledge::library::LibraryTable;
use crate::knowledge::{device, inspect};
use crate::paths::reach::{Reach, Sought};
use crate::paths::{refs, trace};

/// The corpus's dump `name`, or None (the reason printed) when `../shared` is not beside
/// the workspace.
fn corpus(name: &str) -> Option<std::path::PathBuf> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/corpus")
        .join(name);
    if !path.exists() {
        eprintln!("skipping: {} is not there", path.display());
        return None;
    }
    Some(path)
}

/// The path search on the dump at `path`, with the leaking objects `leaking` picks,
/// handed to `then` with its graph.
fn with_reach<T>(
    path: &Path,
    leaking: impl Fn(&Graph<'_, '_>, Node) -> bool,
    then: impl FnOnce(&Graph<'_, '_>, &Reach, &[Node]) -> T,
) -> T {
    let input = input::open_within(path, &Unpack::default()).unwrap();
    let data = input.bytes.bytes();
    let hprof = Hprof::new(data).unwrap();
    let control = Control::default();
    let ix = build_index(&hprof, data.len() as u64, None, &control).unwrap();
    let g = Graph::new(&ix, None);
    let device = device::device(&g, None, None);
    let path_refs = refs::PathRefs::new(&g, LibraryTable::builtin(), &device);
    let (edges, special) = Edges::build(
        &g,
        |_| Vec::new(),
        |special: &mut Vec<Node>, node, key, _, _, _| {
            if key.0 == tags::INSTANCE_DUMP && path_refs.special_class(key.1) {
                special.push(node);
            }
        },
        |mut a, b| {
            a.extend(b);
            a
        },
    );
    let leaves: Vec<Node> = ix.nodes().filter(|&n| leaking(&g, n)).collect();
    let sought = Sought {
        special: &special,
        leaves: &leaves,
        traced: 50,
    };
    let reach = Reach::compute(&g, &edges, path_refs, sought, &control).unwrap();
    then(&g, &reach, &leaves)
}

/// Each leaking object `leaking` picks that has a trace: its trace in short (`root: Class.field
/// > Class[i] > Class`), the labels of its last step, and its known leak's pattern.
fn traces(
    path: &Path,
    leaking: impl Fn(&Graph<'_, '_>, Node) -> bool,
) -> Vec<(String, Vec<String>, Option<String>)> {
    with_reach(path, leaking, |g, reach, leaves| {
        let heap = inspect::heap::Heap::new(g.ix, g);
        let kinds = inspect::kinds::Kinds::new(&heap);
        let ins = inspect::Inspectors::new(heap, kinds, inspect::watch::Watched::default());
        let names = reach.step_names_to(g, leaves);
        let paths = trace::Paths {
            g,
            reach,
            names: &names,
        };
        leaves
            .iter()
            .filter(|&&l| reach.has_trace(l))
            .map(|&l| {
                let (t, _) = trace::leak_trace(&paths, &ins, l, Some("test")).unwrap();
                let mut s = format!("{}: ", t.root);
                for (i, step) in t.steps.iter().enumerate() {
                    if i > 0 {
                        s.push_str(" > ");
                    }
                    s.push_str(step.class_name.rsplit('.').next().unwrap());
                    if let Some(r) = &step.reference {
                        if r.kind != "array" && r.kind != "local" {
                            s.push('.');
                        }
                        s.push_str(&r.name);
                    }
                }
                let library = reach
                    .library_on_path(g, &reach.path(l), &names)
                    .map(|e| LibraryTable::builtin().get(e).pattern_text());
                let mut labels = t.steps.last().unwrap().labels.clone();
                labels.extend(reach.related_labels(g, l));
                (s, labels, library)
            })
            .collect()
    })
}

fn class_is(g: &Graph<'_, '_>, node: Node, name: &str) -> bool {
    g.ix.tag(node) == tags::INSTANCE_DUMP && g.node_class_name(node) == name
}

/// `android-dialer-api19.hprof` (an API 19 Dalvik dump): Shark 2.14 flags a Service no
/// longer in `ActivityThread.mServices` and a quitting MessageQueue, and traces the Service
/// (research/traces.md §c.4): `DefaultVoicemailNotifier.sInstance` then `.mContext`. The
/// queue's only paths run through the Service: 2.14 drops it silently; here, as in
/// LeakCanary HEAD, the Service's trace names it.
#[test]
fn the_dialer_dumps_service_leak_takes_sharks_path() {
    let Some(path) = corpus("android-dialer-api19.hprof") else {
        return;
    };
    let service = "com.android.dialer.calllog.CallLogNotificationsService";
    let got = traces(&path, |g, n| {
        class_is(g, n, service)
            || (class_is(g, n, "android.os.MessageQueue")
                && g.field(n, "mQuitting").and_then(|v| v.as_i64()) == Some(1))
    });
    assert_eq!(got.len(), 1, "{got:#?}");
    let (trace, labels, library) = &got[0];
    assert_eq!(
        trace,
        "system class: DefaultVoicemailNotifier.sInstance > DefaultVoicemailNotifier.mContext > CallLogNotificationsService"
    );
    assert_eq!(library, &None);
    assert!(
        labels
            .iter()
            .any(|l| l.starts_with("Also retains leaking object ")
                && l.ends_with(" (android.os.MessageQueue)")),
        "{labels:?}"
    );
}

/// The steps of the dialer dump's paths that go through a collection's entries (no field
/// or element of the holder is the next object) are named by [`Reach::reference_named`]
/// as by [`Reach::reference`], each collection walked once however many paths pass it.
#[test]
fn step_names_name_collection_steps_as_the_search_took_them() {
    let Some(path) = corpus("android-dialer-api19.hprof") else {
        return;
    };
    with_reach(
        &path,
        |_, _| false,
        |g, reach, _| {
            let mut all: Vec<(Node, Node)> =
                g.ix.nodes()
                    .filter_map(|n| {
                        let p = reach.path(n);
                        let [.., from, to] = p[..] else { return None };
                        g.reference_between(from, to)
                            .is_none()
                            .then_some((from, to))
                    })
                    .collect();
            all.sort_unstable();
            all.dedup();
            // Four steps a collection at most: each plain naming walks the whole collection.
            let steps: Vec<(Node, Node)> = all
                .chunk_by(|a, b| a.0 == b.0)
                .flat_map(|c| c.iter().take(4).copied())
                .collect();
            let holders: std::collections::BTreeSet<Node> = steps.iter().map(|s| s.0).collect();
            assert!(
                steps.len() > 2 * holders.len(),
                "{} steps out of {} collections: too few shared to test the names",
                steps.len(),
                holders.len()
            );
            let before = reach.step_reads();
            let names = reach.step_names(g, steps.iter().copied());
            let batch = reach.step_reads() - before;
            for &(from, to) in &steps {
                let named = reach.reference_named(g, from, to, &names);
                assert!(named.is_some(), "step {from} -> {to} unnamed");
                assert_eq!(named, reach.reference(g, from, to), "step {from} -> {to}");
            }
            let wide = holders.iter().filter(|&&h| reach.refs.wide(g, h)).count();
            assert_eq!(names.walks(), wide);
            // One walk of each holder, where naming each step alone walks it once a step.
            let before = reach.step_reads();
            for &(from, to) in &steps {
                reach.reference(g, from, to);
            }
            let one_by_one = reach.step_reads() - before;
            assert!(
                batch < one_by_one,
                "{batch} reads for all, {one_by_one} one by one"
            );
        },
    );
}

/// A census names its retainers by their paths whether the path search was written to a
/// temporary file before the dominators or, that failing, kept in memory: the two
/// censuses of one dump are the same.
#[test]
fn a_census_is_the_same_when_the_search_cannot_be_spilled() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/art-leaks.hprof");
    let census = |unpack: &Unpack| {
        let input = input::open(&path).unwrap();
        let options = Options::default();
        let control = Control::default();
        let timings = Timings::default();
        let (analysis, census) = {
            let request = Request {
                input: &input,
                path: &path,
                options: &options,
                unpack,
                control: &control,
                take_census: true,
                format: None,
            };
            Run::new(request, timings).analyze().unwrap()
        };
        (census.unwrap(), analysis.analysis.notes)
    };
    let (spilled, notes) = census(&Unpack::default());
    assert!(
        !notes.iter().any(|n| n.contains("path search")),
        "{notes:?}"
    );
    let nowhere = Unpack {
        dir: Some(Path::new(env!("CARGO_MANIFEST_DIR")).join("no such directory")),
        ..Unpack::default()
    };
    assert!(nowhere.tempfile(None).is_err());
    let (held, notes) = census(&nowhere);
    // The memory it took is said.
    assert!(
        notes
            .iter()
            .any(|n| n.contains("path search stayed in memory")),
        "{notes:?}"
    );
    assert!(!spilled.retainers.is_empty());
    // Some paths go past their root: the spilled search is read back.
    assert!(
        spilled.retainers.iter().any(|r| r.path.len() > 1),
        "{:#?}",
        spilled.retainers
    );
    assert_eq!(
        serde_json::to_string(&held).unwrap(),
        serde_json::to_string(&spilled).unwrap()
    );
}

/// A thread without Java frames costs the path search no entry (a dump of a million
/// threads kept 80 bytes each for their empty locals): only the thread with a frame is a
/// node whose references the search reads itself.
#[test]
fn only_threads_with_frames_have_locals() {
    use hprof_fixtures::android::{Android, BitmapKind};
    use hprof_fixtures::{Heap, Options as BuildOptions, Ty, Val};
    let mut a = Android::new(BuildOptions::default(), BitmapKind::NativePixels);
    let b = &mut a.b;
    let thread = b.declare_class("java.lang.Thread", a.object, &[("name", Ty::Object)], &[]);
    b.dump_class(thread, Heap::Image);
    let mut threads = Vec::new();
    for i in 0..100u32 {
        let name = b.string(&format!("worker-{i}"), Heap::App);
        let t = b.instance(thread, Heap::App, &[("name", Val::Obj(name))]);
        b.root_thread(tags::ROOT_THREAD_OBJECT, t, i + 1);
        threads.push(t);
    }
    let local = b.string("a local", Heap::App);
    b.root_thread(tags::ROOT_JAVA_FRAME, local, 7);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("threads.hprof");
    std::fs::write(&path, a.b.finish()).unwrap();
    with_reach(
        &path,
        |_, _| false,
        |g, reach, _| {
            let special: Vec<u64> = reach
                .refs
                .special_nodes(g)
                .into_iter()
                .map(|n| g.ix.id(n))
                .collect();
            assert_eq!(special, vec![threads[6]]);
        },
    );
}
