//! From the leaking objects found (by the finders, or by the key) to what the analysis
//! lists: the leaks, each with its trace, and the leaking objects without a strong path;
//! once their retained sizes are known, the leaks largest first, one per signature.

use crate::base::map::Map;
use crate::base::{limits, shown};
use crate::heap::graph::{Graph, Instances};
use crate::heap::index;
use crate::knowledge::finders::{self, Candidate};
use crate::knowledge::inspect::{self, Inspectors};
use crate::knowledge::{leaks, library};
use crate::model::{Leak, LibraryLeak, UnreachableObject};
use crate::paths::reach::Reach;
use crate::paths::trace;

/// The leaking objects to trace and those without a strong path, by the key when there is
/// one, else from the finders' `candidates` (which go once settled); notes say what the
/// caps left out.
pub(crate) fn found(
    g: &Graph<'_, '_>,
    reach: &Reach,
    instances: &Instances,
    key: Option<&str>,
    candidates: Vec<Candidate>,
    notes: &mut Vec<String>,
) -> Found {
    let found = match key {
        Some(k) => {
            let mut found = leaks::by_key(g, &|node| reach.has_trace(node), instances, k);
            notes.append(&mut found.notes);
            let matrix = finders::Finders::default().with(finders::Finder::MatrixKey);
            let more_unreachable =
                limits::keep_first(&mut found.unreachable, limits::MAX_UNREACHABLE);
            Found {
                to_trace: found
                    .suspects
                    .into_iter()
                    .map(|s| (s.node, matrix, Some(s.reason)))
                    .collect(),
                unreachable_nodes: found.unreachable.into_iter().map(|n| (n, matrix)).collect(),
                more_leaks: found.more,
                more_unreachable,
                keys_found: found.keys,
                more_keys: found.more_keys,
            }
        }
        None => {
            let settled = settle(&candidates, reach);
            if settled.behind > 0 {
                notes.push(format!(
                    "leaking objects reached only through another leaking object, whose trace covers them: {}",
                    settled.behind
                ));
            }
            Found {
                to_trace: settled
                    .traced
                    .iter()
                    .map(|c| (c.node, c.finders, None))
                    .collect(),
                unreachable_nodes: settled
                    .unreachable
                    .iter()
                    .map(|c| (c.node, c.finders))
                    .collect(),
                more_leaks: settled.more,
                more_unreachable: settled.more_unreachable,
                keys_found: Vec::new(),
                more_keys: 0,
            }
        }
    };
    drop(candidates);
    if found.more_leaks > 0 {
        notes.push(format!(
            "{} leaking objects found: the first {} found are traced and listed",
            found.to_trace.len() as u64 + found.more_leaks,
            limits::MAX_LEAKS
        ));
    }
    found
}

/// Each leak to trace with its trace, its known leak if one is on its path, and its
/// signature; and the nodes of those traced, in the same order (their retained sizes
/// come after the dominators).
pub(crate) fn traces(
    g: &Graph<'_, '_>,
    reach: &Reach,
    ins: &Inspectors<'_>,
    library: &library::LibraryTable,
    to_trace: Vec<(index::Node, finders::Finders, Option<String>)>,
) -> (Vec<Leak>, Vec<index::Node>) {
    let mut leaks_out = Vec::new();
    let mut leak_nodes = Vec::new();
    // The steps out of collections, named for all the traces at once: fifty leaks at the
    // end of one list of a million walk it once, not fifty times.
    let nodes: Vec<index::Node> = to_trace.iter().map(|t| t.0).collect();
    let names = reach.step_names_to(g, &nodes);
    let paths = trace::Paths {
        g,
        reach,
        names: &names,
    };
    for (node, found_by, watcher) in to_trace {
        let Some((mut trace, signature)) = trace::leak_trace(&paths, ins, node, watcher.as_deref())
        else {
            continue;
        };
        // The leaking objects only this one reaches, and those that reach it too.
        if let Some(last) = trace.steps.last_mut() {
            last.labels.extend(reach.related_labels(g, node));
        }
        let library_leak = reach
            .library_on_path(g, &reach.path(node), &names)
            .map(|e| library_leak(library.get(e)));
        // LeakCanary signs a library leak by its pattern, whatever the path.
        let leak_signature = library_leak
            .as_ref()
            .and_then(|l| l.leak_pattern.as_deref())
            .map(trace::text_signature)
            .unwrap_or_else(|| signature.clone());
        leak_nodes.push(node);
        let reason = trace
            .steps
            .last()
            .and_then(|s| s.leaking_reason.clone())
            .unwrap_or_default();
        leaks_out.push(Leak {
            object_id: g.ix.id(node),
            class_name: shown::clipped(&g.node_class_name(node), limits::MAX_NAME_BYTES),
            reason,
            finders: found_by.names(),
            library_leak,
            signature: leak_signature,
            trace_signature: Some(signature),
            retained_bytes: 0,
            retained_native_bytes: 0,
            retained_objects: 0,
            trace_count: 1,
            object_ids: Vec::new(),
            total_retained_bytes: 0,
            total_retained_objects: 0,
            total_retained_native_bytes: 0,
            trace,
        });
    }
    (leaks_out, leak_nodes)
}

/// The leaking objects without a strong path, as the analysis lists them.
pub(crate) fn unreachable(
    g: &Graph<'_, '_>,
    ins: &Inspectors<'_>,
    unreachable_nodes: Vec<(index::Node, finders::Finders)>,
) -> Vec<UnreachableObject> {
    unreachable_nodes
        .into_iter()
        .map(|(node, found_by)| {
            let report = ins.inspect(node, true);
            let reason = inspect::resolve::unreachable_object(&report);
            let (labels, omitted_labels) = trace::shown_labels(report.labels);
            UnreachableObject {
                object_id: g.ix.id(node),
                class_name: shown::clipped(&g.node_class_name(node), limits::MAX_NAME_BYTES),
                kind: g.node_kind(node).into(),
                finders: found_by.names(),
                leaking_reason: shown::clipped(&reason, limits::MAX_TEXT_BYTES),
                labels,
                omitted_labels,
            }
        })
        .collect()
}

/// The leaks largest first (Java and native bytes retained; by id among equals), one per
/// signature.
pub(crate) fn largest_first(mut leaks: Vec<Leak>) -> Vec<Leak> {
    leaks.sort_by(|a, b| {
        let all = |l: &Leak| l.retained_bytes.saturating_add(l.retained_native_bytes);
        all(b).cmp(&all(a)).then(a.object_id.cmp(&b.object_id))
    });
    one_per_signature(leaks)
}

/// LeakCanary's grouping: the leaks that share a signature are one leak, shown by its
/// first trace (`leaks` come largest first), with the count and the summed sizes.
fn one_per_signature(leaks: Vec<Leak>) -> Vec<Leak> {
    let mut out: Vec<Leak> = Vec::with_capacity(leaks.len());
    let mut at: Map<String, usize> = Map::default();
    for l in leaks {
        match at.get(&l.signature) {
            Some(&i) => {
                let first = &mut out[i];
                first.trace_count += 1;
                first.object_ids.push(l.object_id);
                first.total_retained_bytes =
                    first.total_retained_bytes.saturating_add(l.retained_bytes);
                first.total_retained_objects += l.retained_objects;
                first.total_retained_native_bytes = first
                    .total_retained_native_bytes
                    .saturating_add(l.retained_native_bytes);
            }
            None => {
                at.insert(l.signature.clone(), out.len());
                out.push(Leak {
                    trace_count: 1,
                    object_ids: vec![l.object_id],
                    total_retained_bytes: l.retained_bytes,
                    total_retained_objects: l.retained_objects,
                    total_retained_native_bytes: l.retained_native_bytes,
                    ..l
                });
            }
        }
    }
    out
}

/// A known leak as the analysis reports it.
fn library_leak(entry: &library::Entry) -> LibraryLeak {
    LibraryLeak {
        pattern: entry.name(),
        description: entry.description.clone(),
        id: Some(entry.id.clone()),
        kind: Some(entry.kind.word().to_string()),
        leak_pattern: Some(entry.pattern_text()),
        bug: entry.bug.clone(),
    }
}

/// The leaking objects to trace and those found without a strong path, with what the
/// caps left out.
pub(crate) struct Found {
    /// (node, finders, Matrix's reason) of each leak to trace.
    pub to_trace: Vec<(index::Node, finders::Finders, Option<String>)>,
    pub unreachable_nodes: Vec<(index::Node, finders::Finders)>,
    pub more_leaks: u64,
    pub more_unreachable: u64,
    pub keys_found: Vec<String>,
    pub more_keys: u64,
}

/// The candidates after the path search: those to trace, those without a strong path.
#[derive(Default)]
pub struct Settled {
    /// The first [`MAX_LEAKS`](crate::base::limits::MAX_LEAKS) with a path of their own.
    pub traced: Vec<Candidate>,
    /// Leaking objects with a path beyond those.
    pub more: u64,
    /// Leaking objects reached only through another leaking object: that one's trace
    /// names them ("Also retains").
    pub behind: u64,
    /// The first [`MAX_UNREACHABLE`](crate::base::limits::MAX_UNREACHABLE) without a strong path.
    pub unreachable: Vec<Candidate>,
    pub more_unreachable: u64,
}

/// The finders' candidates sorted by what the path search found of each.
pub fn settle(candidates: &[Candidate], reach: &Reach) -> Settled {
    use crate::base::limits::{MAX_LEAKS, MAX_UNREACHABLE};
    let mut s = Settled::default();
    for c in candidates {
        if !reach.on_path(c.node) {
            if s.unreachable.len() < MAX_UNREACHABLE {
                s.unreachable.push(*c);
            } else {
                s.more_unreachable += 1;
            }
        } else if !reach.has_trace(c.node) {
            // Leaking objects are leaves of the search (LeakCanary HEAD): one reached only
            // through another is named on that one's trace ("Also retains").
            s.behind += 1;
        } else if s.traced.len() >= MAX_LEAKS {
            s.more += 1;
        } else {
            s.traced.push(*c);
        }
    }
    s
}
