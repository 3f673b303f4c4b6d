//! The notes an analysis adds for its reader when what it read was incomplete: objects
//! whose references could not be read, a private package, a shrunk dump.

use super::references::Unread;
use crate::base::{limits, shown};
use crate::heap::graph::{self, Graph};

/// At most this many classes are named in the note on unreadable references.
const UNREAD_NAMED: usize = 10;

/// What the reader must know when some objects' references could not be read: which
/// classes (the first few by the objects they hold), how many objects, and that a path
/// through them is missing from the graph, so "no leak" may be wrong.
pub fn unread_note(g: &Graph<'_, '_>, unread: &Unread, no_leak: bool) -> Option<String> {
    if unread.is_empty() {
        return None;
    }
    let objects: u64 = unread.values().sum();
    let mut classes: Vec<(&(u64, graph::Broken), &u64)> = unread.iter().collect();
    classes.sort_by(|a, b| b.1.cmp(a.1).then(a.0 .0.cmp(&b.0 .0)));
    let named: Vec<String> = classes
        .iter()
        .take(UNREAD_NAMED)
        .map(|((class, why), n)| {
            format!(
                "{} ({}; {n} object{})",
                g.known_class_name(*class).map_or_else(
                    || format!("class {class:#x}"),
                    |name| shown::clipped(name, limits::MAX_NAME_BYTES)
                ),
                why.describe(),
                if **n == 1 { "" } else { "s" }
            )
        })
        .collect();
    let more = classes.len().saturating_sub(UNREAD_NAMED);
    Some(format!(
        "the references of {objects} object{} of {} class{} could not be read: {}{}. What only they hold counts as unreachable{}",
        if objects == 1 { "" } else { "s" },
        classes.len(),
        if classes.len() == 1 { "" } else { "es" },
        named.join(", "),
        match more {
            0 => String::new(),
            1 => ", and 1 more class".into(),
            n => format!(", and {n} more classes"),
        },
        if no_leak {
            ", so \"no leak\" may be wrong: a leak held through them is not seen"
        } else {
            ": a leak held only through them is not seen"
        },
    ))
}

/// Said of a private package (see [`crate::model::redact`]).
pub const PRIVATE: &str = "the package is private: String values the analysis does not read, and pixels, were replaced on the phone (same lengths, equal values alike); a map key or a duplicate String reads as redacted, a bitmap's digest is the pattern's";

/// Said of a shrunk dump.
pub const SHRUNK: &str = "the dump was shrunk: references to dropped primitive arrays read as null, and retained sizes leave out their bytes";
