//! The path search on whole dumps, with the leaking objects chosen by the test: the
//! corpus's real Android dump against what LeakCanary's Shark answers on it.

use std::path::Path;

use hprof_shrink_core::hprof::{tags, Hprof};
use hprof_shrink_core::space::Unpack;
use hprof_shrink_core::Control;

use super::edges::Edges;
use super::graph::Graph;
use super::index::Node;
use super::reach::Reach;
use super::{device, input, inspect, refs, trace, LibraryTable};

/// Each leaking object `leaking` picks that has a trace: its trace in short (`root: Class.field
/// > Class[i] > Class`), the labels of its last step, and its known leak's pattern.
fn traces(
    path: &Path,
    leaking: impl Fn(&Graph<'_, '_>, Node) -> bool,
) -> Vec<(String, Vec<String>, Option<String>)> {
    let input = input::open_within(path, &Unpack::default()).unwrap();
    let data = input.bytes.bytes();
    let hprof = Hprof::new(data).unwrap();
    let control = Control::default();
    let ix = super::build_index(&hprof, data.len() as u64, None, &control).unwrap();
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
    let reach = Reach::compute(&g, &edges, path_refs, &special, &leaves, 50, &control).unwrap();
    let heap = inspect::heap::Heap::new(g.ix, &g);
    let kinds = inspect::kinds::Kinds::new(&heap);
    let ins = inspect::Inspectors::new(heap, kinds, inspect::watch::Watched::default());
    leaves
        .iter()
        .filter(|&&l| reach.has_trace(l))
        .map(|&l| {
            let (t, _) = trace::leak_trace(&g, &reach, &ins, l, Some("test")).unwrap();
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
                .library_on_path(&g, &reach.path(l))
                .map(|e| LibraryTable::builtin().get(e).pattern_text());
            let mut labels = t.steps.last().unwrap().labels.clone();
            labels.extend(reach.related_labels(&g, l));
            (s, labels, library)
        })
        .collect()
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
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus/android-dialer-api19.hprof");
    if !path.exists() {
        eprintln!("skipping: {} is not there", path.display());
        return;
    }
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
