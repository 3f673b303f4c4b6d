//! A leak trace: the path from a GC root to a leaking object, each object's leaking status,
//! the suspect references (from the last object not leaking to the first leaking one) and
//! the signature that names the bug.
//!
//! A path may be a million objects long. Every object's status is found (it decides where
//! the suspect references are) and the signature is hashed over the whole suspect stretch
//! as it is walked, but only the first and last steps ([`super::limits`]) are made into
//! [`Step`]s, with their names escaped and cut: a trace costs time in its length, and
//! memory and output in its cap.

use rustc_hash::FxHashSet;
use sha1::{Digest, Sha1};

use super::graph::Graph;
use super::index::Node;
use super::limits::{
    MAX_NAME_BYTES, MAX_TEXT_BYTES, MAX_TRACE_STEPS, TRACE_HEAD_STEPS, TRACE_TAIL_STEPS,
};
use super::model::{Reference, Step, Trace};
use super::reach::{root_name, Reach};
use super::shown::clipped;
use super::status::{Leaking, Rules, Verdict};

/// The trace to a leaking object, `reason` being why it is one, and the signature of its
/// whole path (however much of it the trace keeps). `None` when the node has no path.
pub fn leak_trace(
    g: &Graph<'_, '_>,
    reach: &Reach,
    rules: &Rules,
    node: Node,
    reason: &str,
) -> Option<(Trace, String)> {
    let (trace, signature) = build(g, reach, rules, node, Some(reason), true)?;
    Some((trace, signature.unwrap_or_default()))
}

/// The trace to `node` (a path to show, not a leak: no signature). `None` when the node
/// has no path.
pub fn trace(g: &Graph<'_, '_>, reach: &Reach, rules: &Rules, node: Node) -> Option<Trace> {
    build(g, reach, rules, node, None, false).map(|(t, _)| t)
}

/// The path to a node, and how each step's reference is named.
struct Walk<'p> {
    path: &'p [Node],
}

impl Walk<'_> {
    fn len(&self) -> usize {
        self.path.len()
    }

    fn node(&self, i: usize) -> Node {
        self.path[i]
    }

    /// The reference from step `i` to step `i + 1` (`i` below the last), names unclipped.
    fn reference(&self, g: &Graph<'_, '_>, reach: &Reach, i: usize) -> Reference {
        reach
            .reference(g, self.path[i], self.path[i + 1])
            .map(|(r, _)| r)
            .unwrap_or_else(|| Reference {
                kind: "field".into(),
                name: "<unknown>".into(),
                ..Reference::default()
            })
    }
}

/// The steps kept of a path of `len` steps: all of a short one, the first and the last of
/// a long one.
fn kept(len: usize, i: usize) -> bool {
    len <= MAX_TRACE_STEPS || i < TRACE_HEAD_STEPS || i >= len - TRACE_TAIL_STEPS
}

fn build(
    g: &Graph<'_, '_>,
    reach: &Reach,
    rules: &Rules,
    node: Node,
    leak_reason: Option<&str>,
    sign: bool,
) -> Option<(Trace, Option<String>)> {
    let path = reach.path(node);
    let first = *path.first()?;
    let (root, _) = reach.root_of(first)?;
    let walk = Walk { path: &path };
    let len = walk.len();
    let last = len - 1;

    // Every object's status decides where the suspect references are, so every object of
    // the path is looked at; only the steps kept keep their reasons and labels.
    let thread_roots: FxHashSet<Node> =
        g.ix.threads
            .values()
            .filter_map(|&t| g.ix.node(t))
            .collect();
    let mut leaking: Vec<Leaking> = Vec::with_capacity(len);
    let mut verdicts: Vec<(usize, Verdict)> = Vec::with_capacity(len.min(MAX_TRACE_STEPS));
    for i in 0..len {
        let n = walk.node(i);
        let mut v = rules.verdict(g, n, thread_roots.contains(&n));
        if i == last {
            if let Some(reason) = leak_reason {
                v.leaking = Leaking::Yes;
                v.reason = Some(reason.to_string());
            }
        }
        leaking.push(v.leaking);
        if kept(len, i) {
            verdicts.push((i, v));
        }
    }
    // LeakCanary's reading of a path: everything before an object that is not leaking is
    // not leaking either (it keeps that object alive for good reason), and everything after
    // a leaking object leaks with it.
    let last_no = leaking.iter().rposition(|&l| l == Leaking::No);
    let first_yes_after =
        last_no.and_then(|no| (no + 1..len).find(|&i| leaking[i] == Leaking::Yes));
    for (i, v) in &mut verdicts {
        let i = *i;
        if v.leaking != Leaking::Unknown {
            continue;
        }
        if last_no.is_some_and(|no| i < no) {
            let next = g.node_class_name(walk.node(i + 1));
            v.leaking = Leaking::No;
            v.reason = Some(format!("{}↓ is not leaking", short(&next)));
        } else if first_yes_after.is_some_and(|yes| i > yes) {
            let prev = g.node_class_name(walk.node(i - 1));
            v.leaking = Leaking::Yes;
            v.reason = Some(format!("{}↑ is leaking", short(&prev)));
        }
    }
    // The suspect references run from the last NO to the first YES after it (the whole
    // path when there is no NO, to the end when there is no YES): found on the whole path.
    let from = last_no.unwrap_or(0);
    let first_yes = (from..len)
        .skip(usize::from(last_no.is_some()))
        .find(|&i| leaking[i] == Leaking::Yes)
        .unwrap_or(last);
    let suspect = |i: usize| i >= from && i < first_yes;
    let signature = sign.then(|| {
        let mut sha = Sha1::new();
        for i in (from..first_yes).filter(|&i| i < last) {
            let r = walk.reference(g, reach, i);
            sha.update(g.node_class_name(walk.node(i)).as_bytes());
            sha.update(r.generic().as_bytes());
        }
        hex(&sha.finalize())
    });

    let steps: Vec<Step> = verdicts
        .into_iter()
        .map(|(i, v)| {
            let n = walk.node(i);
            let reference = (i < last).then(|| {
                let r = walk.reference(g, reach, i);
                clipped_reference(r, suspect(i))
            });
            Step {
                object_id: g.ix.id(n),
                class_name: clipped(&g.node_class_name(n), MAX_NAME_BYTES),
                kind: g.node_kind(n).into(),
                leaking: v.leaking.word().into(),
                leaking_reason: v.reason.map(|r| clipped(&r, MAX_TEXT_BYTES)),
                labels: v
                    .labels
                    .iter()
                    .map(|l| clipped(l, MAX_NAME_BYTES))
                    .collect(),
                reference,
            }
        })
        .collect();
    let omitted = len - steps.len();
    Some((
        Trace {
            root: root_name(root.tag).into(),
            steps,
            omitted_steps: omitted as u64,
            omitted_after: (omitted > 0).then_some(TRACE_HEAD_STEPS as u64),
        },
        signature,
    ))
}

/// A class's simple name, as a reason names it.
fn short(class: &str) -> String {
    clipped(class.rsplit('.').next().unwrap_or(class), MAX_NAME_BYTES)
}

/// A reference as an analysis keeps it: every name from the dump escaped and cut.
fn clipped_reference(r: Reference, suspect: bool) -> Reference {
    let clip = |s: Option<String>| s.map(|s| clipped(&s, MAX_NAME_BYTES));
    Reference {
        kind: r.kind,
        name: clipped(&r.name, MAX_NAME_BYTES),
        declared_by: clip(r.declared_by),
        suspect,
        reference_type: r.reference_type,
        owning_class: clip(r.owning_class),
        generic_name: clip(r.generic_name),
        library_match: clip(r.library_match),
        collection: r.collection.map(|mut c| {
            c.class_name = clipped(&c.class_name, MAX_NAME_BYTES);
            c.internal_path.truncate(16);
            c
        }),
    }
}

/// SHA-1 (hex) of a text: a library leak's signature is its pattern's
/// (`instance field C#f`), as LeakCanary signs it.
pub fn text_signature(text: &str) -> String {
    hex(&Sha1::digest(text.as_bytes()))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
