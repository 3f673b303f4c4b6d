//! The triage's findings as the analysis reports them (see [`crate::report::triage`],
//! which makes them): serialized into the JSON's `triage` object.

use serde::{Deserialize, Serialize};

use super::Trace;

/// Entries kept in each list of the triage.
pub const LIST_CAP: usize = 10;
/// MAT's leak suspect threshold: a top retainer over this share of the heap.
pub const SUSPECT_SHARE: f64 = 0.10;
/// Characters of a duplicated String's value shown.
pub const STRING_SHOWN: usize = 100;

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Triage {
    /// What the shares are of: the reachable objects' bytes (Java) and the registered
    /// native bytes they own.
    pub heap_bytes: u64,
    pub heap_native_bytes: u64,
    /// The objects the GC roots dominate directly (MAT's top-level dominators), by
    /// retained size (Java and native together), largest first.
    pub top_retainers: Vec<Retainer>,
    pub top_retainers_left_out: u64,
    /// The top-level dominators by class: what each class's instances among them
    /// retain together, largest first.
    pub retained_by_class: Vec<ClassRetained>,
    pub retained_by_class_left_out: u64,
    pub largest_primitive_arrays: Vec<TriageObject>,
    pub largest_primitive_arrays_left_out: u64,
    pub largest_object_arrays: Vec<TriageObject>,
    pub largest_object_arrays_left_out: u64,
    pub counts: Counts,
    /// Threads by name, names that differ only in their digits together.
    pub threads: Vec<ThreadGroup>,
    pub threads_left_out: u64,
    pub bitmaps: BitmapCounts,
    pub duplicate_strings: Vec<DuplicateString>,
    pub duplicate_strings_left_out: u64,
}

/// An object the triage names.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TriageObject {
    pub object_id: u64,
    pub class_name: String,
    /// `instance`, `class` or `array`.
    pub kind: String,
    pub shallow_bytes: u64,
    /// Java bytes retained (its dominator subtree's shallow sizes).
    pub retained_bytes: u64,
    /// Registered native bytes retained.
    pub retained_native_bytes: u64,
    /// Its shortest path from a GC root (no leaking statuses: `UNKNOWN` throughout).
    pub path: Option<Trace>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Retainer {
    #[serde(flatten)]
    pub object: TriageObject,
    /// Retains more than 10% of the heap (Java and native): MAT's leak suspect.
    pub suspect: bool,
    /// Where its memory accumulates: the end of the walk down its largest dominated
    /// object while that keeps at least 70% of its parent (MAT's rule); for suspects.
    pub accumulation: Option<Accumulation>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Accumulation {
    #[serde(flatten)]
    pub object: TriageObject,
    /// The objects it dominates directly, by class, largest first.
    pub dominated_by_class: Vec<ClassRetained>,
    pub dominated_by_class_left_out: u64,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClassRetained {
    pub class_name: String,
    pub objects: u64,
    pub retained_bytes: u64,
    pub retained_native_bytes: u64,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Counts {
    /// Strongly reachable instances of each (subclasses included).
    pub activities: u64,
    pub destroyed_activities: u64,
    pub fragments: u64,
    pub windows: u64,
    pub bitmaps: u64,
    /// Threads the dump lists.
    pub threads: u64,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ThreadGroup {
    /// The name, or for several the name with each run of digits as `#`.
    pub name: String,
    pub count: u64,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BitmapCounts {
    /// Strongly reachable Bitmaps of the app (not the zygote's or boot image's).
    pub count: u64,
    /// Pixels on the Java heap (`mBuffer`, API < 26).
    pub java_bytes: u64,
    /// Registered native bytes (API 26+).
    pub native_bytes: u64,
    /// The screen "large" is measured against, when known.
    pub screen: Option<Screen>,
    /// A Bitmap is large over this many pixels (width × height).
    pub large_threshold_pixels: u64,
    /// `screen` (Shark's: the screen's pixels × 1.1) or `koom` (KOOM's constant 768 ×
    /// 1366, when no screen is known).
    pub large_rule: String,
    pub large_count: u64,
    pub large_bytes: u64,
    /// The largest by bytes (Java and native), largest first.
    pub largest: Vec<BitmapInfo>,
    pub largest_left_out: u64,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Screen {
    pub width: u64,
    pub height: u64,
    /// `DisplayMetrics` (the largest in the heap) or `--screen`.
    pub source: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BitmapInfo {
    pub object_id: u64,
    pub width: i64,
    pub height: i64,
    /// Inferred from bytes per pixel (no dump records it): `ALPHA_8`, `RGB_565`,
    /// `ARGB_8888` (also HARDWARE or RGBA_1010102), `RGBA_F16`; `unknown` otherwise.
    pub config: String,
    pub java_bytes: u64,
    pub native_bytes: u64,
    pub recycled: bool,
    pub large: bool,
    pub path: Option<Trace>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DuplicateString {
    /// The value, cut to 100 characters.
    pub value: String,
    /// Its length in characters.
    pub length: u64,
    pub count: u64,
    /// Bytes of one copy (the String and its value array).
    pub bytes_each: u64,
    /// Bytes the copies beyond the first take.
    pub wasted_bytes: u64,
}
