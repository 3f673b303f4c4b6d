//! The dump in numbers ([`DumpSummary`]): its records, its heaps, and the classes whose
//! reachable objects take the most bytes.

use crate::base::map::Map;
use crate::base::{limits, shown};
use crate::heap::graph::Graph;
use crate::heap::index::Index;
use crate::knowledge::metadata;
use crate::model::{ClassSummary, DumpSummary, HeapSummary};
use crate::sizes::by_class::{Histogram, Sizer};

/// What the analysis measured of the heap, for the summary.
pub(crate) struct Totals {
    /// Every object's shallow bytes.
    pub heap_bytes: u64,
    pub reachable_objects: u64,
    pub reachable_bytes: u64,
    pub reachable_native_bytes: u64,
    pub reachable_edges: u64,
    pub top_classes: Vec<ClassSummary>,
    pub omitted_top_classes: u64,
}

/// Which heap dump of the file was analyzed.
pub(crate) struct Chosen {
    /// The file's bytes.
    pub bytes: u64,
    /// How many heap dumps the file holds.
    pub dumps: usize,
    /// The one analyzed, from 1.
    pub chosen: usize,
}

/// The summary of the dump at `ix`.
pub(crate) fn dump(ix: &Index<'_>, chosen: &Chosen, totals: Totals) -> DumpSummary {
    let (heaps, omitted_heaps) = heaps(ix);
    DumpSummary {
        format: ix.format.clone(),
        id_size: ix.id_size,
        timestamp_ms: ix.timestamp_ms,
        bytes: chosen.bytes,
        instances: ix.counts.instances,
        object_arrays: ix.counts.object_arrays,
        primitive_arrays: ix.counts.primitive_arrays,
        classes: ix.counts.classes,
        gc_roots: ix.roots.len() as u64,
        threads: metadata::thread_count(ix),
        heap_bytes: totals.heap_bytes,
        reachable_objects: totals.reachable_objects,
        reachable_bytes: totals.reachable_bytes,
        reachable_native_bytes: totals.reachable_native_bytes,
        reachable_edges: totals.reachable_edges,
        heaps,
        omitted_heaps,
        top_classes: totals.top_classes,
        omitted_top_classes: totals.omitted_top_classes,
        not_run: Vec::new(),
        skipped: Vec::new(),
        heap_dumps: chosen.dumps as u64,
        heap_dump: if chosen.dumps == 0 {
            0
        } else {
            chosen.chosen as u64
        },
    }
}

/// The reachable objects by class: all objects but the unreachable (`gone`).
pub(crate) fn reachable_by_class(all_objects: Histogram, gone: Sizer) -> Histogram {
    let mut by_class = all_objects;
    for (key, (objects, bytes)) in gone.finish() {
        if let Some(e) = by_class.get_mut(&key) {
            e.0 = e.0.saturating_sub(objects);
            e.1 = e.1.saturating_sub(bytes);
        }
    }
    by_class.retain(|_, (objects, _)| *objects > 0);
    by_class
}

/// Top classes by the shallow bytes of their reachable objects, and how many the cap
/// left out.
pub(crate) fn top_classes(g: &Graph<'_, '_>, by_class: Histogram) -> (Vec<ClassSummary>, u64) {
    let mut top: Vec<ClassSummary> = by_class
        .into_iter()
        .map(|(key, (instances, shallow_bytes))| ClassSummary {
            class_name: g.class_key_name(key),
            instances,
            shallow_bytes,
        })
        .collect();
    top.sort_by(|a, b| {
        b.shallow_bytes
            .cmp(&a.shallow_bytes)
            .then(a.class_name.cmp(&b.class_name))
    });
    let omitted_top_classes = limits::keep_first(&mut top, limits::MAX_TOP_CLASSES);
    for c in &mut top {
        c.class_name = shown::clipped(&c.class_name, limits::MAX_NAME_BYTES);
    }
    (top, omitted_top_classes)
}

/// The objects of each heap (Android's app, zygote, image), by name, and how many heaps
/// the cap left out; none when the dump names no heap.
fn heaps(ix: &Index<'_>) -> (Vec<HeapSummary>, u64) {
    let mut heaps: Vec<HeapSummary> = Vec::new();
    if !ix.heaps.is_empty() {
        // Counted by heap, named once at the end.
        let mut per: Map<(u32, u64), u64> = Default::default();
        for node in ix.nodes() {
            *per.entry(ix.heap_of(ix.offset(node))).or_default() += 1;
        }
        let mut named: std::collections::BTreeMap<String, u64> = Default::default();
        for ((id, name_id), objects) in per {
            let name = ix
                .string(name_id)
                .map(|s| s.into_owned())
                .unwrap_or_else(|| heap_name(id).to_string());
            *named.entry(name).or_default() += objects;
        }
        heaps = named
            .into_iter()
            .map(|(name, objects)| HeapSummary {
                name: shown::clipped(&name, limits::MAX_NAME_BYTES),
                objects,
            })
            .collect();
    }
    let omitted_heaps = limits::keep_first(&mut heaps, limits::MAX_HEAPS);
    (heaps, omitted_heaps)
}

fn heap_name(id: u32) -> &'static str {
    match id {
        0x41 => "app",
        0x5A => "zygote",
        0x49 => "image",
        _ => "default",
    }
}
