//! The bounds on what an analysis holds. A dump is input from anyone, and without bounds
//! one leak at the end of a chain of a million objects makes a trace of a million steps
//! (hundreds of MB of JSON, of pages and of `serve`'s memory). Each list an analysis
//! keeps has a cap and counts what it left out (the `omitted…` fields of the JSON), and
//! each string from the dump is cut to a length ([`crate::base::shown::clipped`]), so that the
//! analysis of any dump stays under [`MAX_ANALYSIS_BYTES`] of JSON. docs/analyze.md states
//! them.

/// Steps a leak trace keeps: a longer one keeps its first [`TRACE_HEAD_STEPS`] (from the
/// GC root) and its last [`TRACE_TAIL_STEPS`] (to the leaking object), and says how many
/// it left out between them. Its signature is still that of the whole path.
pub const MAX_TRACE_STEPS: usize = TRACE_HEAD_STEPS + TRACE_TAIL_STEPS;
/// Steps a long trace keeps from the GC root.
pub const TRACE_HEAD_STEPS: usize = 30;
/// Steps a long trace keeps to the leaking object.
pub const TRACE_TAIL_STEPS: usize = 30;

/// Leaks an analysis traces and keeps: the first found (in the dump's id order), listed by
/// retained size. Only these are
/// traced, so that a dump of a million leaking objects costs no more than one of fifty.
pub const MAX_LEAKS: usize = 50;

/// Leaking objects without a strong path an analysis lists.
pub const MAX_UNREACHABLE: usize = 50;

/// Labels a step of a trace (or an unreachable object) keeps: at most this many, each
/// cut to [`MAX_TEXT_BYTES`], and no more than [`MAX_STEP_LABEL_BYTES`] in all.
pub const MAX_STEP_LABELS: usize = 16;
/// Bytes a step's labels take together, at most.
pub const MAX_STEP_LABEL_BYTES: usize = 2048;

/// Duplicate-bitmap groups an analysis keeps: those that waste the most bytes.
pub const MAX_BITMAP_GROUPS: usize = 50;

/// Instances a duplicate-bitmap group lists with their paths (its `count` has them all).
pub const MAX_BITMAP_INSTANCES: usize = 2;

/// Notes an analysis keeps (repeated ones are kept once).
pub const MAX_NOTES: usize = 20;

/// DestroyedActivityInfo keys an analysis lists.
pub const MAX_KEYS_FOUND: usize = 50;

/// Keys a note names (the rest are counted).
pub const MAX_KEYS_IN_NOTE: usize = 10;

/// Classes the summary lists by the shallow bytes of their reachable instances.
pub const MAX_TOP_CLASSES: usize = 20;

/// Heaps the summary lists (ART has four).
pub const MAX_HEAPS: usize = 16;

/// Bytes kept of a name or value from the dump (a class, field or thread name, a key, a
/// KeyedWeakReference's description), escaped as shown.
pub const MAX_NAME_BYTES: usize = 256;

/// Bytes kept of a sentence made of names (a leak's reason, a note).
pub const MAX_TEXT_BYTES: usize = 1024;

/// What the caps above bound an analysis's JSON to, for any dump (pretty-printed; the
/// package's `result.info` and `extra.info`, bounded by the package reader at 64 KiB and
/// 1 MiB, come on top). Typical analyses are a few kB.
/// `tests/analyze_hostile.rs` analyzes a dump that fills every cap with the longest names
/// and checks it.
pub const MAX_ANALYSIS_BYTES: u64 = 32 << 20;

/// Keeps the first `max` of `list` and says how many it left out.
pub fn keep_first<T>(list: &mut Vec<T>, max: usize) -> u64 {
    let over = list.len().saturating_sub(max);
    list.truncate(max);
    over as u64
}
