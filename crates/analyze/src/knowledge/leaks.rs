//! The leaking object of a key, Matrix's way: the DestroyedActivityInfo whose `mKey` is the
//! key, and the Activity its `mActivityRef` weakly references. Without a key, the finders
//! ([`crate::knowledge::finders`]) find the leaking objects.

use std::collections::BTreeSet;

use crate::base::map::Set;
use crate::heap::java_string::StringFields;

use crate::base::limits::{
    MAX_KEYS_FOUND, MAX_KEYS_IN_NOTE, MAX_LEAKS, MAX_NAME_BYTES, MAX_TEXT_BYTES,
};
use crate::base::shown::{clipped, clipped_more};
use crate::heap::graph::{Graph, Instances};
use crate::heap::index::Node;

/// A leaking object and why it is taken to be one.
pub struct Suspect {
    pub node: Node,
    pub reason: String,
}

/// Which leaking objects a finder keeps: all of them (before the path search, which
/// treats them as leaves), or those with a trace of their own (after it).
pub type Keep<'k> = &'k dyn Fn(Node) -> bool;

#[derive(Default)]
pub struct Found {
    /// Every leaking object found and kept, in the order found: the path search's leaves.
    pub all: Vec<Node>,
    /// The first [`MAX_LEAKS`] leaking objects found: only those are traced, so that a
    /// dump of a million leaking objects costs no more than one of fifty.
    pub suspects: Vec<Suspect>,
    /// Leaking objects found beyond those.
    pub more: u64,
    /// Watched objects without a strong path: listed, not traced.
    pub unreachable: Vec<Node>,
    /// The keys of the DestroyedActivityInfos seen (key mode), as shown, sorted: the first
    /// [`MAX_KEYS_FOUND`].
    pub keys: Vec<String>,
    /// Distinct keys beyond those.
    pub more_keys: u64,
    pub notes: Vec<String>,
}

impl Found {
    fn suspect(&mut self, node: Node, reason: impl FnOnce() -> String) {
        self.all.push(node);
        if self.suspects.len() < MAX_LEAKS {
            self.suspects.push(Suspect {
                node,
                reason: clipped(&reason(), MAX_TEXT_BYTES),
            });
        } else {
            self.more += 1;
        }
    }

    fn note(&mut self, note: String) {
        if !self.notes.contains(&note) {
            self.notes.push(note);
        }
    }
}

/// The object a java.lang.ref.Reference instance refers to (0 when cleared).
fn referent(g: &Graph<'_, '_>, reference: u64) -> Option<u64> {
    let node = g.ix.node(reference)?;
    g.field(node, "referent")?.as_object()
}

/// The start of a java.lang.String's text: at most `units` of its UTF-16 units, and how
/// many it has. Reading a start only keeps each look at a string as cheap as the start,
/// however long the string (and however many objects share it).
fn string_head(g: &Graph<'_, '_>, id: u64, units: usize) -> Option<(String, usize)> {
    StringFields::from_named(&g.fields(g.ix.node(id)?)?).head(g.ix, units)
}

/// A String from the dump as an analysis shows it: escaped, cut to [`MAX_NAME_BYTES`].
pub fn shown_string(g: &Graph<'_, '_>, id: u64) -> Option<String> {
    let (head, total) = string_head(g, id, MAX_NAME_BYTES)?;
    let more = total.saturating_sub(MAX_NAME_BYTES) as u64;
    Some(clipped_more(&head, MAX_NAME_BYTES, more))
}

/// Whether the String `id` is `key` (`None`: not a String), reading no more of it than
/// the key's length.
fn string_is(g: &Graph<'_, '_>, id: u64, key: &str) -> Option<bool> {
    let want = key.encode_utf16().count();
    let (head, total) = string_head(g, id, want)?;
    Some(total == want && head == key)
}

/// The distinct keys seen: the first [`MAX_KEYS_FOUND`] in order, and how many in all.
#[derive(Default)]
struct Keys {
    first: BTreeSet<String>,
    /// A hash of each distinct key, to count them in 8 bytes each: seeded at random, so
    /// that a dump cannot bring distinct keys that count as one.
    seen: Set<u64>,
    seed: foldhash::fast::RandomState,
}

impl Keys {
    fn add(&mut self, key: String) {
        use std::hash::BuildHasher;
        if !self.seen.insert(self.seed.hash_one(&key)) {
            return;
        }
        self.first.insert(key);
        if self.first.len() > MAX_KEYS_FOUND {
            self.first.pop_last();
        }
    }
}

/// Matrix's way, for one key.
pub fn by_key(g: &Graph<'_, '_>, keep: Keep<'_>, instances: &Instances, key: &str) -> Found {
    let classes = destroyed_info_classes(g);
    let mut found = Found::default();
    if classes.is_empty() {
        found
            .notes
            .push("the dump holds no DestroyedActivityInfo class: nothing was watched".into());
        return found;
    }
    let shown_key = clipped(key, MAX_NAME_BYTES);
    let mut keys = Keys::default();
    let mut matched = false;
    let mut watched: Set<Node> = Set::default();
    for info in instances.of(&classes) {
        let Some(id) = g.field(info, "mKey").and_then(|v| v.as_object()) else {
            continue;
        };
        let Some(this) = string_is(g, id, key) else {
            continue;
        };
        if let Some(k) = shown_string(g, id) {
            keys.add(k);
        }
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
            Some(node) if !watched.insert(node) => {}
            Some(node) if keep(node) => found.suspect(node, || {
                format!("DestroyedActivityInfo#mKey is the key {shown_key}")
            }),
            Some(node) => {
                found.unreachable.push(node);
                found.note(format!(
                    "no leak: the Activity of key {shown_key} is still in the dump but nothing holds it strongly; it would have been collected"
                ))
            }
            None => found.note(format!(
                "no leak: the Activity of key {shown_key} was collected before the dump"
            )),
        }
    }
    found.more_keys = (keys.seen.len() - keys.first.len()) as u64;
    found.keys = keys.first.into_iter().collect();
    if !matched {
        let mut named = found
            .keys
            .iter()
            .take(MAX_KEYS_IN_NOTE)
            .cloned()
            .collect::<Vec<_>>()
            .join(", ");
        let distinct = found.keys.len() as u64 + found.more_keys;
        if distinct == 0 {
            named = "none".into();
        } else if distinct > MAX_KEYS_IN_NOTE as u64 {
            named.push_str(&format!(" and {} more", distinct - MAX_KEYS_IN_NOTE as u64));
        }
        found.note(format!(
            "no leak: no DestroyedActivityInfo has the key {shown_key} (keys found: {named})"
        ));
    }
    found
}

/// Matrix's DestroyedActivityInfo, in any package.
pub fn destroyed_info_classes(g: &Graph<'_, '_>) -> Vec<u64> {
    g.classes_where(|n| n == "DestroyedActivityInfo" || n.ends_with(".DestroyedActivityInfo"))
}
