//! Which objects are leaking. With a key, Matrix's way: the DestroyedActivityInfo whose
//! `mKey` is the key, and the Activity its `mActivityRef` weakly references. Without one,
//! LeakCanary's way: every KeyedWeakReference still holding its object after being
//! flagged retained, and every destroyed Activity that is still strongly reachable.

use super::map::Set;

use super::graph::{Graph, Instances};
use super::index::Node;
use super::reach::Reach;
use super::status::Rules;

/// A leaking object and why it is taken to be one.
pub struct Suspect {
    pub node: Node,
    pub reason: String,
}

pub struct Found {
    pub suspects: Vec<Suspect>,
    /// The keys of every DestroyedActivityInfo seen (key mode).
    pub keys: Vec<String>,
    pub notes: Vec<String>,
}

/// The object a java.lang.ref.Reference instance refers to (0 when cleared).
fn referent(g: &Graph<'_, '_>, reference: u64) -> Option<u64> {
    let node = g.ix.node(reference)?;
    g.field(node, "referent")?.as_object()
}

/// Matrix's way, for one key.
pub fn by_key(g: &Graph<'_, '_>, reach: &Reach, instances: &Instances, key: &str) -> Found {
    let classes = destroyed_info_classes(g);
    let mut found = Found {
        suspects: Vec::new(),
        keys: Vec::new(),
        notes: Vec::new(),
    };
    if classes.is_empty() {
        found
            .notes
            .push("the dump holds no DestroyedActivityInfo class: nothing was watched".into());
        return found;
    }
    let mut matched = false;
    let mut taken = Set::default();
    for info in instances.of(&classes) {
        let Some(k) = g
            .field(info, "mKey")
            .and_then(|v| v.as_object())
            .and_then(|id| g.string_value(id))
        else {
            continue;
        };
        let this = k == key;
        found.keys.push(k);
        if !this {
            continue;
        }
        matched = true;
        let activity = g
            .field(info, "mActivityRef")
            .and_then(|v| v.as_object())
            .and_then(|r| referent(g, r))
            .filter(|&id| id != 0)
            .and_then(|id| g.ix.node(id));
        match activity {
            // Two watchers of one Activity under one key are one leak.
            Some(node) if taken.contains(&node) => {}
            Some(node) if reach.on_path(node) => {
                taken.insert(node);
                found.suspects.push(Suspect {
                    node,
                    reason: format!("DestroyedActivityInfo#mKey is the key {key}"),
                })
            }
            Some(_) => found.notes.push(format!(
                "no leak: the Activity of key {key} is still in the dump but nothing holds it strongly; it would have been collected"
            )),
            None => found.notes.push(format!(
                "no leak: the Activity of key {key} was collected before the dump"
            )),
        }
    }
    found.keys.sort();
    found.keys.dedup();
    if !matched {
        found.notes.push(format!(
            "no leak: no DestroyedActivityInfo has the key {key} (keys found: {})",
            if found.keys.is_empty() {
                "none".to_string()
            } else {
                found.keys.join(", ")
            }
        ));
    }
    found
}

/// LeakCanary's way.
/// Matrix's DestroyedActivityInfo, in any package.
pub fn destroyed_info_classes(g: &Graph<'_, '_>) -> Vec<u64> {
    g.classes_where(|n| n == "DestroyedActivityInfo" || n.ends_with(".DestroyedActivityInfo"))
}

/// LeakCanary's KeyedWeakReference, old and new package.
pub fn keyed_reference_classes(g: &Graph<'_, '_>) -> Vec<u64> {
    g.classes_where(|n| {
        n == "leakcanary.KeyedWeakReference" || n == "com.squareup.leakcanary.KeyedWeakReference"
    })
}

/// Every subclass of android.app.Activity.
pub fn activity_classes(g: &Graph<'_, '_>, rules: &Rules) -> Vec<u64> {
    g.classes_where(|_| true)
        .into_iter()
        .filter(|&c| rules.is_activity(g, c))
        .collect()
}

pub fn watched_and_destroyed(
    g: &Graph<'_, '_>,
    reach: &Reach,
    rules: &Rules,
    instances: &Instances,
) -> Found {
    let mut found = Found {
        suspects: Vec::new(),
        keys: Vec::new(),
        notes: Vec::new(),
    };
    let mut seen = Set::default();
    for r in instances.of(&keyed_reference_classes(g)) {
        let Some(fields) = g.fields(r) else { continue };
        let get = |name: &str| fields.iter().find(|(n, _)| n == name).map(|(_, v)| *v);
        let retained = get("retainedUptimeMillis")
            .and_then(|v| v.as_i64())
            .unwrap_or(-1);
        let Some(target) = get("referent")
            .and_then(|v| v.as_object())
            .filter(|&id| id != 0)
            .and_then(|id| g.ix.node(id))
        else {
            continue;
        };
        if retained == -1 || !reach.on_path(target) || !seen.insert(target) {
            continue;
        }
        let description = get("description")
            .and_then(|v| v.as_object())
            .and_then(|id| g.string_value(id))
            .unwrap_or_default();
        let key = get("key")
            .and_then(|v| v.as_object())
            .and_then(|id| g.string_value(id))
            .unwrap_or_default();
        found.suspects.push(Suspect {
            node: target,
            reason: format!("ObjectWatcher was watching this because {description} (key {key})"),
        });
    }
    for a in instances.of(&activity_classes(g, rules)) {
        if rules.destroyed(g, a) == Some(true) && reach.on_path(a) && seen.insert(a) {
            found.suspects.push(Suspect {
                node: a,
                reason: "Activity#mDestroyed is true".into(),
            });
        }
    }
    found
}
