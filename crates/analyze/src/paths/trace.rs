//! A leak trace: the path from a GC root to a leaking object, each object's leaking status,
//! the suspect references (from the last object not leaking to the first leaking one) and
//! the signature that names the bug.
//!
//! A path may be a million objects long. Every object's status is found (it decides where
//! the suspect references are) and the signature is hashed over the whole suspect stretch
//! as it is walked, but only the first and last steps ([`crate::base::limits`]) are made into
//! [`Step`]s, with their names escaped and cut: a trace costs time in its length, and
//! memory and output in its cap.

use std::ops::Range;

use sha1::{Digest, Sha1};

use crate::base::limits::{
    MAX_NAME_BYTES, MAX_STEP_LABELS, MAX_STEP_LABEL_BYTES, MAX_TEXT_BYTES, MAX_TRACE_STEPS,
    TRACE_HEAD_STEPS, TRACE_TAIL_STEPS,
};
use crate::base::shown::clipped;
use crate::heap::graph::Graph;
use crate::heap::index::Node;
use crate::knowledge::inspect::resolve::{self, Status};
use crate::knowledge::inspect::{Inspectors, Report};
use crate::model::{Reference, Step, Trace};
use crate::paths::reach::{root_name, Reach, StepNames};

/// The trace to a leaking object and the signature of its whole path (however much of it
/// the trace keeps). `watcher`, when a key found the object, is why (Matrix's watcher):
/// the first of its leaking reasons. `None` when the node has no path.
/// `paths.names`: the steps out of wide objects, named for all the traces made together
/// ([`Reach::step_names_to`]).
pub fn leak_trace(
    paths: &Paths<'_, '_, '_>,
    ins: &Inspectors<'_>,
    node: Node,
    watcher: Option<&str>,
) -> Option<(Trace, String)> {
    let (trace, signature) = build(paths, ins, node, Some(watcher), true)?;
    Some((trace, signature.unwrap_or_default()))
}

/// The traces to `nodes` (paths to show, not leaks: no signature, and the last object is
/// not taken to be leaking), each `None` when its node has no path. The steps out of
/// wide objects are named for all of them together: one walk of a collection however
/// many of the paths pass through it.
pub fn traces(
    g: &Graph<'_, '_>,
    reach: &Reach,
    ins: &Inspectors<'_>,
    nodes: &[Node],
) -> Vec<Option<Trace>> {
    let names = reach.step_names_to(g, nodes);
    let paths = Paths {
        g,
        reach,
        names: &names,
    };
    nodes
        .iter()
        .map(|&n| build(&paths, ins, n, None, false).map(|(t, _)| t))
        .collect()
}

/// What traces are made from: the path search, and the names of the steps out of wide
/// objects that they take.
pub struct Paths<'a, 'i, 'd> {
    pub g: &'a Graph<'i, 'd>,
    pub reach: &'a Reach,
    pub names: &'a StepNames,
}

/// The path to a node, and how each step's reference is named.
struct Walk<'p> {
    path: &'p [Node],
    names: &'p StepNames,
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
            .reference_named(g, self.path[i], self.path[i + 1], self.names)
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

/// A kept step's own verdict and labels, before the path's propagation.
struct Kept {
    i: usize,
    own: (Status, String),
    labels: Vec<String>,
    /// The nearest object after it whose own status is NO, and before it whose own
    /// status is YES (the ones propagation names).
    no_after: Option<usize>,
    yes_before: Option<usize>,
}

/// `leak`: `Some(watcher)` for a leak trace (the last object is the leaking one).
fn build(
    paths: &Paths<'_, '_, '_>,
    ins: &Inspectors<'_>,
    node: Node,
    leak: Option<Option<&str>>,
    sign: bool,
) -> Option<(Trace, Option<String>)> {
    let (g, reach) = (paths.g, paths.reach);
    let path = reach.path(node);
    let first = *path.first()?;
    let (root, _) = reach.root_of(first)?;
    let walk = Walk {
        path: &path,
        names: paths.names,
    };
    let len = walk.len();
    let last = len - 1;

    let (own, mut steps) = inspect_path(&walk, ins, leak);
    // LeakCanary's reading of a path: everything before an object that is not leaking is
    // not leaking either (it keeps that object alive for good reason), and everything after
    // a leaking object leaks with it; each names the nearest object that decided alone.
    let (last_no, first_yes) = resolve::bounds(&own);
    mark_deciders(&own, first_yes, &mut steps);
    let resolved = propagated(g, &walk, steps, last_no, first_yes, last);

    // The suspect references run from the last NO to the first YES after it (the whole
    // path when there is no NO, to the end when there is no YES): found on the whole path.
    let suspects = last_no.unwrap_or(0)..first_yes;
    let signature = sign.then(|| signature(g, reach, &walk, &suspects, last));
    let steps = shown_steps(g, reach, &walk, resolved, &suspects, last);
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

/// Every object's own status on the path, and the kept steps' verdicts and labels.
///
/// Every object's own status decides where the suspect references are, so every object of
/// the path is inspected; only the steps kept keep their reasons and labels (and run the
/// inspectors that only label).
fn inspect_path(
    walk: &Walk<'_>,
    ins: &Inspectors<'_>,
    leak: Option<Option<&str>>,
) -> (Vec<Status>, Vec<Kept>) {
    let len = walk.len();
    let last = len - 1;
    let mut own: Vec<Status> = Vec::with_capacity(len);
    let mut steps: Vec<Kept> = Vec::with_capacity(len.min(MAX_TRACE_STEPS));
    for i in 0..len {
        let keep = kept(len, i);
        let mut report: Report = ins.inspect(walk.node(i), keep);
        let leaking_object = leak.is_some() && i == last;
        if leaking_object {
            if let Some(Some(w)) = leak {
                report.leaking.insert(0, w.to_string());
            }
        }
        let status = if keep {
            let mut verdict = resolve::own(&report, leaking_object);
            if leaking_object {
                verdict = resolve::leaking_object(verdict);
            }
            let status = verdict.0;
            steps.push(Kept {
                i,
                own: verdict,
                labels: report.labels,
                no_after: None,
                yes_before: None,
            });
            status
        } else if leaking_object {
            Status::Yes
        } else {
            resolve::own_status(&report, false)
        };
        own.push(status);
    }
    (own, steps)
}

/// Each kept step's nearest NO after it and YES before it (from `first_yes` on), found on
/// the whole path's own statuses.
fn mark_deciders(own: &[Status], first_yes: usize, steps: &mut [Kept]) {
    let mut no_after = None;
    let mut k = steps.len();
    for i in (0..own.len()).rev() {
        if k > 0 && steps[k - 1].i == i {
            k -= 1;
            steps[k].no_after = no_after;
        }
        if own[i] == Status::No {
            no_after = Some(i);
        }
    }
    let mut yes_before = None;
    let mut k = 0;
    for (i, &s) in own.iter().enumerate() {
        if k < steps.len() && steps[k].i == i {
            steps[k].yes_before = yes_before;
            k += 1;
        }
        if s == Status::Yes && i >= first_yes {
            yes_before = Some(i);
        }
    }
}

/// The kept steps' verdicts after the path's propagation: `(step, verdict, labels)`.
fn propagated(
    g: &Graph<'_, '_>,
    walk: &Walk<'_>,
    steps: Vec<Kept>,
    last_no: Option<usize>,
    first_yes: usize,
    last: usize,
) -> Vec<(usize, (Status, String), Vec<String>)> {
    let simple = |i: usize| short(&g.node_class_name(walk.node(i)));
    steps
        .into_iter()
        .map(|s| {
            let verdict = match (last_no, s.no_after, s.yes_before) {
                (Some(l), Some(j), _) if s.i < l => resolve::below_not_leaking(&simple(j), s.own),
                (_, _, Some(j)) if s.i > first_yes && s.i < last => {
                    resolve::above_leaking(&simple(j), s.own)
                }
                _ => s.own,
            };
            (s.i, verdict, s.labels)
        })
        .collect()
}

/// The signature of a path: the SHA-1 of the suspect references' classes and generic
/// names, over the whole suspect stretch (the leaking object's own step excluded).
fn signature(
    g: &Graph<'_, '_>,
    reach: &Reach,
    walk: &Walk<'_>,
    suspects: &Range<usize>,
    last: usize,
) -> String {
    let mut sha = Sha1::new();
    for i in suspects.clone().filter(|&i| i < last) {
        let r = walk.reference(g, reach, i);
        sha.update(g.node_class_name(walk.node(i)).as_bytes());
        sha.update(r.generic().as_bytes());
    }
    hex(&sha.finalize())
}

/// The kept steps as a trace shows them: names escaped and cut, references marked suspect.
fn shown_steps(
    g: &Graph<'_, '_>,
    reach: &Reach,
    walk: &Walk<'_>,
    resolved: Vec<(usize, (Status, String), Vec<String>)>,
    suspects: &Range<usize>,
    last: usize,
) -> Vec<Step> {
    resolved
        .into_iter()
        .map(|(i, (status, reason), labels)| {
            let n = walk.node(i);
            let reference = (i < last).then(|| {
                let r = walk.reference(g, reach, i);
                clipped_reference(r, suspects.contains(&i))
            });
            let (labels, omitted_labels) = shown_labels(labels);
            Step {
                object_id: g.ix.id(n),
                class_name: clipped(&g.node_class_name(n), MAX_NAME_BYTES),
                kind: g.node_kind(n).into(),
                leaking: status.word().into(),
                leaking_reason: (status != Status::Unknown)
                    .then(|| clipped(&reason, MAX_TEXT_BYTES)),
                labels,
                omitted_labels,
                reference,
            }
        })
        .collect()
}

/// Labels as an analysis keeps them: each cut to [`MAX_TEXT_BYTES`], the first
/// [`MAX_STEP_LABELS`] within [`MAX_STEP_LABEL_BYTES`], and how many were left out.
pub fn shown_labels(labels: Vec<String>) -> (Vec<String>, u64) {
    let total = labels.len();
    let mut kept = Vec::with_capacity(total.min(MAX_STEP_LABELS));
    let mut bytes = 0;
    for l in labels {
        let l = clipped(&l, MAX_TEXT_BYTES);
        if kept.len() == MAX_STEP_LABELS || bytes + l.len() > MAX_STEP_LABEL_BYTES {
            break;
        }
        bytes += l.len();
        kept.push(l);
    }
    let omitted = (total - kept.len()) as u64;
    (kept, omitted)
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
