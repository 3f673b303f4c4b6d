//! A leak trace: the path from a GC root to a leaking object, each object's leaking status,
//! the suspect references (from the last object not leaking to the first leaking one) and
//! the signature that names the bug.

use hprof_shrink_core::hprof::tags;
use sha1::{Digest, Sha1};

use super::graph::{Graph, RefName};
use super::index::Node;
use super::map::Set;
use super::model::{Reference, Step, Trace};
use super::reach::{root_name, Reach};
use super::status::{Leaking, Rules, Verdict};

/// The thread objects of the dump's threads, looked up once for every trace.
pub struct ThreadRoots(Set<Node>);

impl ThreadRoots {
    pub fn new(g: &Graph<'_, '_>) -> ThreadRoots {
        ThreadRoots(
            g.ix.threads
                .values()
                .filter_map(|&t| g.ix.node(t))
                .collect(),
        )
    }
}

/// The trace to `node`, with `leak_reason` as the last object's status. `None` when the
/// node has no path.
pub fn trace(
    g: &Graph<'_, '_>,
    reach: &Reach,
    rules: &Rules,
    thread_roots: &ThreadRoots,
    node: Node,
    leak_reason: Option<&str>,
) -> Option<Trace> {
    let path = reach.path(node);
    let first = *path.first()?;
    let root = reach.roots.get(&first)?;
    let mut nodes: Vec<Node> = Vec::with_capacity(path.len() + 1);
    let mut refs: Vec<Option<Reference>> = Vec::new();
    // A local variable's holder is its thread: show the thread first, as Matrix does.
    let holder = match root.tag {
        tags::ROOT_JAVA_FRAME | tags::ROOT_JNI_LOCAL | tags::ROOT_NATIVE_STACK => root
            .thread_serial
            .and_then(|s| g.ix.threads.get(&s))
            .and_then(|&t| g.ix.node(t))
            .filter(|&t| t != first),
        _ => None,
    };
    if let Some(thread) = holder {
        nodes.push(thread);
        refs.push(Some(Reference {
            kind: "local".into(),
            name: "<Java Local>".into(),
            declared_by: None,
            suspect: false,
        }));
    }
    for pair in path.windows(2) {
        nodes.push(pair[0]);
        refs.push(Some(name_reference(
            g,
            g.reference_between(pair[0], pair[1]),
        )));
    }
    nodes.push(*path.last()?);
    refs.push(None);

    let mut verdicts: Vec<Verdict> = nodes
        .iter()
        .map(|&n| rules.verdict(g, n, thread_roots.0.contains(&n)))
        .collect();
    if let (Some(reason), Some(last)) = (leak_reason, verdicts.last_mut()) {
        last.leaking = Leaking::Yes;
        last.reason = Some(reason.to_string());
    }
    settle(&mut verdicts, &nodes, g);
    let last_no = verdicts.iter().rposition(|v| v.leaking == Leaking::No);
    let first_yes = verdicts
        .iter()
        .enumerate()
        .skip(last_no.map_or(0, |i| i + 1))
        .find(|(_, v)| v.leaking == Leaking::Yes)
        .map(|(i, _)| i)
        .unwrap_or(nodes.len() - 1);
    let from = last_no.unwrap_or(0);
    for (i, r) in refs.iter_mut().enumerate() {
        if let Some(r) = r {
            r.suspect = i >= from && i < first_yes;
        }
    }
    let steps = nodes
        .iter()
        .zip(verdicts)
        .zip(refs)
        .map(|((&n, v), reference)| Step {
            object_id: g.ix.id(n),
            class_name: g.node_class_name(n),
            kind: g.node_kind(n).into(),
            leaking: v.leaking.word().into(),
            leaking_reason: v.reason,
            labels: v.labels,
            reference,
        })
        .collect();
    Some(Trace {
        root: root_name(root.tag).into(),
        steps,
    })
}

/// LeakCanary's reading of a path: everything before an object that is not leaking is
/// not leaking either (it keeps that object alive for good reason), and everything after
/// a leaking object leaks with it.
fn settle(verdicts: &mut [Verdict], nodes: &[Node], g: &Graph<'_, '_>) {
    if let Some(last_no) = verdicts.iter().rposition(|v| v.leaking == Leaking::No) {
        for i in 0..last_no {
            if verdicts[i].leaking == Leaking::Unknown {
                let next = g.node_class_name(nodes[i + 1]);
                verdicts[i].leaking = Leaking::No;
                verdicts[i].reason = Some(format!("{}↓ is not leaking", simple(&next)));
            }
        }
        if let Some(first_yes) =
            (last_no + 1..verdicts.len()).find(|&i| verdicts[i].leaking == Leaking::Yes)
        {
            for i in first_yes + 1..verdicts.len() {
                if verdicts[i].leaking == Leaking::Unknown {
                    let prev = g.node_class_name(nodes[i - 1]);
                    verdicts[i].leaking = Leaking::Yes;
                    verdicts[i].reason = Some(format!("{}↑ is leaking", simple(&prev)));
                }
            }
        }
    }
}

fn simple(class: &str) -> &str {
    class.rsplit('.').next().unwrap_or(class)
}

pub(crate) fn name_reference(g: &Graph<'_, '_>, r: Option<RefName>) -> Reference {
    match r {
        Some(RefName::Static { class, name_id }) => Reference {
            kind: "static".into(),
            name: g.field_name(class, name_id),
            declared_by: Some(g.class_name(class).to_string()),
            suspect: false,
        },
        Some(RefName::Field {
            declared_by,
            name_id,
        }) => Reference {
            kind: "field".into(),
            name: g.field_name(declared_by, name_id),
            declared_by: Some(g.class_name(declared_by).to_string()),
            suspect: false,
        },
        Some(RefName::Element(i)) => Reference {
            kind: "array".into(),
            name: format!("[{i}]"),
            declared_by: None,
            suspect: false,
        },
        None => Reference {
            kind: "field".into(),
            name: "<unknown>".into(),
            declared_by: None,
            suspect: false,
        },
    }
}

/// SHA-1 (hex) of the suspect references' `className + referenceName`, in order; array
/// indices count as `[x]` so that the same bug at another index has the same signature.
pub fn signature(trace: &Trace) -> String {
    let mut text = String::new();
    for step in &trace.steps {
        if let Some(r) = step.reference.as_ref().filter(|r| r.suspect) {
            text.push_str(&step.class_name);
            text.push_str(if r.kind == "array" { "[x]" } else { &r.name });
        }
    }
    let digest = Sha1::digest(text.as_bytes());
    digest.iter().map(|b| format!("{b:02x}")).collect()
}
