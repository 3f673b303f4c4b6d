//! LeakCanary's watched objects: every `KeyedWeakReference` of LeakCanary 2
//! (`leakcanary.KeyedWeakReference`: `key`, `description`, `watchUptimeMillis`,
//! `retainedUptimeMillis`, and the class's static `heapDumpUptimeMillis`) and of
//! LeakCanary 1 (`com.squareup.leakcanary.KeyedWeakReference`: `key`, `name`), read as
//! Shark reads them: a reference whose retained time is unknown counts as retained, so a
//! 1.x reference to a live object always does.

use crate::map::Map;

use super::heap::Heap;
use crate::graph::Instances;
use crate::index::Node;
use crate::limits::MAX_NAME_BYTES;

pub const V2: &str = "leakcanary.KeyedWeakReference";
pub const V1: &str = "com.squareup.leakcanary.KeyedWeakReference";

/// One KeyedWeakReference.
#[derive(Debug, Clone)]
pub struct Watch {
    pub key: String,
    /// `description` (2.x), else `name` (1.x), else `Unknown (legacy)`; as shown.
    pub description: String,
    pub watch_duration_ms: Option<i64>,
    /// -1 while the object is watched but not yet retained.
    pub retained_duration_ms: Option<i64>,
    /// Retained: `retainedUptimeMillis` is missing (LeakCanary 1.x, early 2.0 alphas) or
    /// set (not -1). Shark reads the field only when the class has its static
    /// `heapDumpUptimeMillis`, and counts every reference retained without it; the field
    /// says -1 all the same.
    pub retained: bool,
}

/// Every KeyedWeakReference of the dump, by the object it watches.
#[derive(Default)]
pub struct Watched {
    /// Watched object → its place in `order` and its references.
    by_referent: Map<Node, (usize, Vec<Watch>)>,
    /// Watched objects in the order their references were found, each once, with whether
    /// any of its references is retained.
    order: Vec<(Node, bool)>,
    /// `leakcanary.KeyedWeakReference.heapDumpUptimeMillis`: when LeakCanary 2 dumped the
    /// heap (uptime), for durations.
    pub heap_dump_uptime: Option<i64>,
    /// What a reader should know of the references skipped.
    pub notes: Vec<String>,
}

impl Watched {
    /// The classes whose instances are KeyedWeakReferences (exactly these classes, as
    /// Shark reads them: not subclasses).
    pub fn classes(heap: &Heap<'_>) -> Vec<u64> {
        [V2, V1].iter().filter_map(|n| heap.class(n)).collect()
    }

    #[allow(clippy::too_many_lines)] // TODO(issue 33): split after diff/triage land
    pub fn read(heap: &Heap<'_>, instances: &Instances) -> Watched {
        let mut w = Watched::default();
        let v2 = heap.class(V2);
        let v1 = heap.class(V1);
        // The uptime of the heap dump, from the 2.x class only (absent for 1.x).
        let heap_dump_uptime = v2
            .and_then(|c| heap.static_field(c, "heapDumpUptimeMillis"))
            .and_then(|v| v.as_i64());
        w.heap_dump_uptime = heap_dump_uptime;
        let (mut cleared_retained, mut not_retained, mut absent, mut keyless) = (0u64, 0, 0, 0);
        let mut missing_times = 0u64;
        for (class, name) in [(v2, V2), (v1, V1)] {
            let Some(class) = class else { continue };
            for r in instances.of(&[class]) {
                let referent = heap
                    .field(r, "java.lang.ref.Reference", "referent")
                    .and_then(|v| v.as_object());
                let Some(key) = heap
                    .field(r, name, "key")
                    .and_then(|v| v.as_object())
                    .and_then(|id| heap.string(id, MAX_NAME_BYTES))
                else {
                    keyless += 1;
                    continue;
                };
                let text = |field: &'static str| {
                    heap.field(r, name, field)
                        .map(|v| v.as_object().and_then(|id| heap.string(id, MAX_NAME_BYTES)))
                };
                let description = text("description")
                    .or_else(|| text("name"))
                    .flatten()
                    .unwrap_or_else(|| "Unknown (legacy)".into());
                let long =
                    |field: &'static str| heap.field(r, name, field).and_then(|v| v.as_i64());
                let retained_at = long("retainedUptimeMillis");
                let (watch, retained) = match heap_dump_uptime {
                    Some(h) => {
                        let watch = long("watchUptimeMillis").map(|w| h - w);
                        let retained = retained_at.map(|t| if t == -1 { -1 } else { h - t });
                        if watch.is_none() || retained.is_none() {
                            missing_times += 1;
                        }
                        (watch, retained)
                    }
                    None => (None, None),
                };
                let watch = Watch {
                    key,
                    description,
                    watch_duration_ms: watch,
                    retained_duration_ms: retained,
                    retained: retained_at != Some(-1),
                };
                let retained = watch.retained;
                match referent.filter(|&id| id != 0) {
                    None => {
                        if retained {
                            cleared_retained += 1;
                        }
                    }
                    Some(id) => match heap.node(id) {
                        None => absent += 1,
                        Some(node) => {
                            if !retained {
                                not_retained += 1;
                            }
                            let next = w.order.len();
                            let (at, list) =
                                w.by_referent.entry(node).or_insert((next, Vec::new()));
                            if *at == next {
                                w.order.push((node, retained));
                            } else if retained {
                                w.order[*at].1 = true;
                            }
                            list.push(watch);
                        }
                    },
                }
            }
        }
        if cleared_retained > 0 {
            w.notes.push(format!(
                "KeyedWeakReferences retained but whose objects were collected before the dump (LeakCanary's \"Count of retained yet cleared\"): {cleared_retained}"
            ));
        }
        if not_retained > 0 {
            w.notes.push(format!(
                "KeyedWeakReferences whose objects are not retained yet (retainedUptimeMillis -1), so not leaks: {not_retained}"
            ));
        }
        if absent > 0 {
            w.notes.push(format!(
                "KeyedWeakReferences skipped, their objects not in the dump: {absent}"
            ));
        }
        if keyless > 0 {
            w.notes.push(format!(
                "KeyedWeakReferences skipped, without a key (LeakCanary's Shark would stop the analysis there): {keyless}"
            ));
        }
        if missing_times > 0 {
            w.notes.push(format!(
                "KeyedWeakReferences without watchUptimeMillis or retainedUptimeMillis, their durations unknown and counted as retained: {missing_times}"
            ));
        }
        w
    }

    /// The references watching `node`, in the order found.
    pub fn of(&self, node: Node) -> &[Watch] {
        self.by_referent
            .get(&node)
            .map_or(&[], |(_, l)| l.as_slice())
    }

    /// The watched objects LeakCanary's finder takes as leaking: some reference to them is
    /// retained.
    pub fn retained(&self) -> impl Iterator<Item = Node> + '_ {
        self.order.iter().filter(|(_, r)| *r).map(|(n, _)| *n)
    }

    pub fn is_empty(&self) -> bool {
        self.by_referent.is_empty()
    }
}
