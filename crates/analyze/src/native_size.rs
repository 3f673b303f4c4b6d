//! Registered native sizes (Android 7+): the bytes an object holds outside the Java heap,
//! as `libcore.util.NativeAllocationRegistry` records them. Registering an allocation makes
//! a `sun.misc.Cleaner` whose `referent` is the owner (a Bitmap, a Matrix, …) and whose
//! `thunk` is a `NativeAllocationRegistry$CleanerThunk`; the thunk's `this$0` is the
//! registry, whose `size` is the bytes. The owner is credited that size, as ahat does
//! (several Cleaners on one owner add up; the size is read as it is, low bit included).

use super::graph::{Graph, Instances};
use super::index::Node;
use super::map::Map;

const CLEANER: &str = "sun.misc.Cleaner";
const THUNK: &str = "libcore.util.NativeAllocationRegistry$CleanerThunk";
const REGISTRY: &str = "libcore.util.NativeAllocationRegistry";

/// `sun.misc.Cleaner` and its subclasses (ahat takes subclasses too).
pub fn cleaner_classes(g: &Graph<'_, '_>) -> Vec<u64> {
    subclasses_of(g, CLEANER)
}

fn subclasses_of(g: &Graph<'_, '_>, name: &str) -> Vec<u64> {
    let Some(base) = g.class_named(name) else {
        return Vec::new();
    };
    g.classes_where(|_| true)
        .into_iter()
        .filter(|&c| g.is_subclass(c, base))
        .collect()
}

/// Owner → registered native bytes, from the Cleaners among `instances` (reachable or
/// not: a Cleaner is held by the class's list, the owner only through a phantom
/// reference). Reads four fields per Cleaner.
pub fn registered(g: &Graph<'_, '_>, instances: &Instances, cleaners: &[u64]) -> Map<Node, u64> {
    let mut out: Map<Node, u64> = Map::default();
    let (Some(thunk_class), Some(registry_class)) = (g.class_named(THUNK), g.class_named(REGISTRY))
    else {
        return out;
    };
    let object = |node: Node, name: &str| {
        g.field(node, name)
            .and_then(|v| v.as_object())
            .filter(|&id| id != 0)
            .and_then(|id| g.ix.node(id))
    };
    let is_a = |node: Node, class: u64| g.class_of(node).is_some_and(|c| g.is_subclass(c, class));
    for cleaner in instances.of(cleaners) {
        let Some(thunk) = object(cleaner, "thunk").filter(|&t| is_a(t, thunk_class)) else {
            continue;
        };
        let Some(registry) = object(thunk, "this$0").filter(|&r| is_a(r, registry_class)) else {
            continue;
        };
        // ahat takes a long `size` only.
        let Some(size) = g.field(registry, "size").and_then(|v| match v {
            hprof_shrink_core::hprof::Value::Long(s) => Some(s),
            _ => None,
        }) else {
            continue;
        };
        let Some(owner) = object(cleaner, "referent") else {
            continue;
        };
        let e = out.entry(owner).or_default();
        *e = e.saturating_add(size.max(0) as u64);
    }
    out
}
