//! Registered native sizes (Android 7+): the bytes an object holds outside the Java heap,
//! as `libcore.util.NativeAllocationRegistry` records them. Registering an allocation makes
//! a `sun.misc.Cleaner` whose `referent` is the owner (a Bitmap, a Matrix, …) and whose
//! `thunk` is a `NativeAllocationRegistry$CleanerThunk`; the thunk's `this$0` is the
//! registry, whose `size` is the bytes. The owner is credited that size, as ahat does
//! (several Cleaners on one owner add up; the size is read as it is, low bit included).
//! A size no device holds (negative, or over [`MAX_PLAUSIBLE_BYTES`]) is counted and
//! noted, not credited: a dump from anyone must not rank a holder by it.

use crate::base::map::Map;
use crate::heap::graph::{Graph, Instances};
use crate::heap::index::Node;

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

/// One registered size past this (1 TiB) is taken to be made up: no device has the
/// memory. Below it, an owner's sum over its Cleaners saturates rather than wraps.
pub const MAX_PLAUSIBLE_BYTES: u64 = 1 << 40;

/// The registered sizes credited, and how many were not.
#[derive(Default)]
pub struct Registered {
    /// Owner → registered native bytes.
    pub bytes: Map<Node, u64>,
    /// Sizes left out as implausible (negative, or over [`MAX_PLAUSIBLE_BYTES`]).
    pub implausible: u64,
}

impl Registered {
    /// The note on the sizes left out, if any.
    pub fn note(&self) -> Option<String> {
        (self.implausible > 0).then(|| {
            format!(
                "registered native sizes left out as implausible (negative, or over {} bytes): {}",
                MAX_PLAUSIBLE_BYTES, self.implausible
            )
        })
    }
}

/// Owner → registered native bytes, from the Cleaners among `instances` (reachable or
/// not: a Cleaner is held by the class's list, the owner only through a phantom
/// reference). Reads four fields per Cleaner.
pub fn registered(g: &Graph<'_, '_>, instances: &Instances, cleaners: &[u64]) -> Registered {
    let mut out = Registered::default();
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
        let Some(size) = u64::try_from(size)
            .ok()
            .filter(|&s| s <= MAX_PLAUSIBLE_BYTES)
        else {
            out.implausible += 1;
            continue;
        };
        let e = out.bytes.entry(owner).or_default();
        *e = e.saturating_add(size);
    }
    out
}
