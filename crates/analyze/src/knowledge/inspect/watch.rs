//! LeakCanary's watched objects: every `KeyedWeakReference` of LeakCanary 2
//! (`leakcanary.KeyedWeakReference`: `key`, `description`, `watchUptimeMillis`,
//! `retainedUptimeMillis`, and the class's static `heapDumpUptimeMillis`) and of
//! LeakCanary 1 (`com.squareup.leakcanary.KeyedWeakReference`: `key`, `name`), read as
//! Shark reads them: a reference whose retained time is unknown counts as retained, so a
//! 1.x reference to a live object always does.

use super::heap::Heap;
use crate::base::limits::MAX_NAME_BYTES;
use crate::heap::graph::Instances;
use crate::heap::index::Node;

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

/// Every KeyedWeakReference of the dump, by the object it watches: 12 bytes a reference
/// and 8 a watched object whatever its key and description, which are read again from
/// the dump for the few objects a trace shows ([`Watched::of`]).
#[derive(Default)]
pub struct Watched {
    /// (watched object, order found, reference) of every reference with a key, sorted.
    refs: Vec<(Node, u32, Node)>,
    /// Watched objects in the order their references were found, each once, with whether
    /// any of its references is retained.
    order: Vec<(Node, bool)>,
    /// The 2.x class (its references read with its field names; the others are 1.x).
    v2: Option<u64>,
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

    /// Every KeyedWeakReference of the dump (2.x ones first), and notes on those skipped.
    pub fn read(heap: &Heap<'_>, instances: &Instances) -> Watched {
        let mut w = Watched::default();
        let v2 = heap.class(V2);
        let v1 = heap.class(V1);
        w.v2 = v2;
        // The uptime of the heap dump, from the 2.x class only (absent for 1.x).
        let heap_dump_uptime = v2
            .and_then(|c| heap.static_field(c, "heapDumpUptimeMillis"))
            .and_then(|v| v.as_i64());
        w.heap_dump_uptime = heap_dump_uptime;
        let mut skipped = Skipped::default();
        // (watched object, order found, reference, retained).
        let mut found: Vec<(Node, u32, Node, bool)> = Vec::new();
        for (class, name) in [(v2, V2), (v1, V1)] {
            let Some(class) = class else { continue };
            for r in instances.of(&[class]) {
                let referent = heap
                    .field(r, "java.lang.ref.Reference", "referent")
                    .and_then(|v| v.as_object());
                // Read whole once, for the notes; only what finds it again is kept.
                let Some(watch) = read_watch(heap, r, name, heap_dump_uptime, &mut skipped) else {
                    continue;
                };
                if let Some(node) = add(heap, referent, watch.retained, &mut skipped) {
                    let seq = u32::try_from(found.len()).unwrap_or(u32::MAX);
                    found.push((node, seq, r, watch.retained));
                }
            }
        }
        found.sort_unstable();
        // Each watched object once, where its first reference was found.
        let mut firsts: Vec<(u32, Node, bool)> = Vec::new();
        for group in found.chunk_by(|a, b| a.0 == b.0) {
            let retained = group.iter().any(|f| f.3);
            firsts.push((group[0].1, group[0].0, retained));
        }
        firsts.sort_unstable();
        w.order = firsts.into_iter().map(|(_, n, r)| (n, r)).collect();
        w.refs = found
            .into_iter()
            .map(|(n, seq, r, _)| (n, seq, r))
            .collect();
        w.notes = skipped.notes();
        w
    }

    /// The references watching `node`, in the order found, read from the dump.
    pub fn of(&self, heap: &Heap<'_>, node: Node) -> Vec<Watch> {
        let start = self.refs.partition_point(|r| r.0 < node);
        let name = |r: Node| {
            if heap.instance_class(r).is_some_and(|c| Some(c) == self.v2) {
                V2
            } else {
                V1
            }
        };
        self.refs[start..]
            .iter()
            .take_while(|r| r.0 == node)
            .filter_map(|&(_, _, r)| {
                read_watch(
                    heap,
                    r,
                    name(r),
                    self.heap_dump_uptime,
                    &mut Skipped::default(),
                )
            })
            .collect()
    }

    /// The watched objects LeakCanary's finder takes as leaking: some reference to them is
    /// retained.
    pub fn retained(&self) -> impl Iterator<Item = Node> + '_ {
        self.order.iter().filter(|(_, r)| *r).map(|(n, _)| *n)
    }

    pub fn is_empty(&self) -> bool {
        self.order.is_empty()
    }
}

/// The object a reference watches (`referent`), when the dump holds it; one whose object
/// is collected or absent is only counted.
fn add(
    heap: &Heap<'_>,
    referent: Option<u64>,
    retained: bool,
    skipped: &mut Skipped,
) -> Option<Node> {
    match referent.filter(|&id| id != 0) {
        None => {
            if retained {
                skipped.cleared_retained += 1;
            }
            None
        }
        Some(id) => match heap.node(id) {
            None => {
                skipped.absent += 1;
                None
            }
            Some(node) => {
                if !retained {
                    skipped.not_retained += 1;
                }
                Some(node)
            }
        },
    }
}

/// The references a reading skipped or could not time, by why: each kind a note.
#[derive(Default)]
struct Skipped {
    cleared_retained: u64,
    not_retained: u64,
    absent: u64,
    keyless: u64,
    missing_times: u64,
    /// Durations that do not fit (uptimes far apart, from a made-up dump).
    implausible_times: u64,
}

impl Skipped {
    /// A note for each kind that happened, in a set order.
    fn notes(&self) -> Vec<String> {
        let mut notes = Vec::new();
        if self.cleared_retained > 0 {
            notes.push(format!(
                "KeyedWeakReferences retained but whose objects were collected before the dump (LeakCanary's \"Count of retained yet cleared\"): {}",
                self.cleared_retained
            ));
        }
        if self.not_retained > 0 {
            notes.push(format!(
                "KeyedWeakReferences whose objects are not retained yet (retainedUptimeMillis -1), so not leaks: {}",
                self.not_retained
            ));
        }
        if self.absent > 0 {
            notes.push(format!(
                "KeyedWeakReferences skipped, their objects not in the dump: {}",
                self.absent
            ));
        }
        if self.keyless > 0 {
            notes.push(format!(
                "KeyedWeakReferences skipped, without a key (LeakCanary's Shark would stop the analysis there): {}",
                self.keyless
            ));
        }
        if self.implausible_times > 0 {
            notes.push(format!(
                "KeyedWeakReferences whose uptimes are implausible (their difference does not fit in 64 bits), their durations left out: {}",
                self.implausible_times
            ));
        }
        if self.missing_times > 0 {
            notes.push(format!(
                "KeyedWeakReferences without watchUptimeMillis or retainedUptimeMillis, their durations unknown and counted as retained: {}",
                self.missing_times
            ));
        }
        notes
    }
}

/// One reference's key, description and durations (`None`, counted, when it has no key);
/// `name` is its class.
fn read_watch(
    heap: &Heap<'_>,
    r: Node,
    name: &'static str,
    heap_dump_uptime: Option<i64>,
    skipped: &mut Skipped,
) -> Option<Watch> {
    let Some(key) = heap
        .field(r, name, "key")
        .and_then(|v| v.as_object())
        .and_then(|id| heap.string(id, MAX_NAME_BYTES))
    else {
        skipped.keyless += 1;
        return None;
    };
    let text = |field: &'static str| {
        heap.field(r, name, field)
            .map(|v| v.as_object().and_then(|id| heap.string(id, MAX_NAME_BYTES)))
    };
    let description = text("description")
        .or_else(|| text("name"))
        .flatten()
        .unwrap_or_else(|| "Unknown (legacy)".into());
    let long = |field: &'static str| heap.field(r, name, field).and_then(|v| v.as_i64());
    let retained_at = long("retainedUptimeMillis");
    let (watch, retained) = match heap_dump_uptime {
        Some(h) => {
            let watch_at = long("watchUptimeMillis");
            if watch_at.is_none() || retained_at.is_none() {
                skipped.missing_times += 1;
            }
            // A difference that overflows is left out (and noted), not wrapped.
            let mut overflowed = false;
            let mut since = |t: i64| {
                let d = h.checked_sub(t);
                overflowed |= d.is_none();
                d
            };
            let watch = watch_at.and_then(&mut since);
            let retained = retained_at.and_then(|t| if t == -1 { Some(-1) } else { since(t) });
            skipped.implausible_times += u64::from(overflowed);
            (watch, retained)
        }
        None => (None, None),
    };
    Some(Watch {
        key,
        description,
        watch_duration_ms: watch,
        retained_duration_ms: retained,
        retained: retained_at != Some(-1),
    })
}
