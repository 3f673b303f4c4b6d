//! The triage's findings as the analysis reports them (made in `report::triage`):
//! serialized into the JSON's `triage` object.

use serde::{Deserialize, Serialize};

use super::Trace;

/// Entries kept in each list of the triage.
pub const LIST_CAP: usize = 10;
/// MAT's leak suspect threshold: a top retainer over this share of the heap.
pub const SUSPECT_SHARE: f64 = 0.10;
/// Characters of a duplicated String's value shown.
pub const STRING_SHOWN: usize = 100;

/// What the dump holds, for a reader without a leak to look at: the JSON's `triage`. Each
/// list keeps the [`LIST_CAP`] largest and counts the rest in its `…_left_out`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Triage {
    /// What the shares are of: the reachable objects' bytes (Java) and the registered
    /// native bytes they own.
    pub heap_bytes: u64,
    /// Registered native bytes the reachable objects own (NativeAllocationRegistry).
    pub heap_native_bytes: u64,
    /// The objects the GC roots dominate directly (MAT's top-level dominators), by
    /// retained size (Java and native together), largest first.
    pub top_retainers: Vec<Retainer>,
    /// Top-level dominators beyond those listed.
    pub top_retainers_left_out: u64,
    /// The top-level dominators by class: what each class's instances among them
    /// retain together, largest first.
    pub retained_by_class: Vec<ClassRetained>,
    /// Classes beyond those listed.
    pub retained_by_class_left_out: u64,
    /// The largest primitive arrays by shallow size, largest first.
    pub largest_primitive_arrays: Vec<TriageObject>,
    /// The dump's other primitive arrays, reachable or not.
    pub largest_primitive_arrays_left_out: u64,
    /// The largest object arrays by shallow size, largest first.
    pub largest_object_arrays: Vec<TriageObject>,
    /// The dump's other object arrays, reachable or not.
    pub largest_object_arrays_left_out: u64,
    /// How many Activities, Fragments, Windows, Bitmaps and threads the heap holds.
    pub counts: Counts,
    /// Threads by name, names that differ only in their digits together.
    pub threads: Vec<ThreadGroup>,
    /// Groups of threads beyond those listed.
    pub threads_left_out: u64,
    /// The app's live Bitmaps: their bytes, the large ones, the largest.
    pub bitmaps: BitmapCounts,
    /// Values held by more than one String, by the bytes the copies waste, largest first.
    pub duplicate_strings: Vec<DuplicateString>,
    /// Duplicated values beyond those listed.
    pub duplicate_strings_left_out: u64,
}

/// An object the triage names.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TriageObject {
    /// The object's id (its address in the dump).
    pub object_id: u64,
    /// Its class, deobfuscated with `--mapping`, escaped and cut.
    pub class_name: String,
    /// `instance`, `class` or `array`.
    pub kind: String,
    /// Its shallow size in bytes, as ahat counts it.
    pub shallow_bytes: u64,
    /// Java bytes retained (its dominator subtree's shallow sizes).
    pub retained_bytes: u64,
    /// Registered native bytes retained.
    pub retained_native_bytes: u64,
    /// Its shortest path from a GC root (no leaking statuses: `UNKNOWN` throughout).
    pub path: Option<Trace>,
}

/// A top-level dominator (a top retainer).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Retainer {
    /// The object and its sizes.
    #[serde(flatten)]
    pub object: TriageObject,
    /// Retains more than 10% of the heap (Java and native): MAT's leak suspect.
    pub suspect: bool,
    /// Where its memory accumulates: the end of the walk down its largest dominated
    /// object while that keeps at least 70% of its parent (MAT's rule); for suspects.
    pub accumulation: Option<Accumulation>,
}

/// Where a suspect's memory accumulates.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Accumulation {
    /// The accumulation point and its sizes.
    #[serde(flatten)]
    pub object: TriageObject,
    /// The objects it dominates directly, by class, largest first.
    pub dominated_by_class: Vec<ClassRetained>,
    /// Classes beyond those listed.
    pub dominated_by_class_left_out: u64,
}

/// The objects of one class in a list of dominated objects, and what they retain together.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClassRetained {
    /// The class, deobfuscated with `--mapping`, escaped and cut.
    pub class_name: String,
    /// Objects of the class in the list.
    pub objects: u64,
    /// Java bytes they retain together.
    pub retained_bytes: u64,
    /// Registered native bytes they retain together.
    pub retained_native_bytes: u64,
}

/// Objects of the kinds a reader looks for first, with a path from a GC root.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Counts {
    /// Activity instances, subclasses included.
    pub activities: u64,
    /// Of those, the Activities LeakCanary's inspector calls destroyed (`mDestroyed`, else
    /// `mFinished`).
    pub destroyed_activities: u64,
    /// The heap holds no values to tell a destroyed Activity by (a heap graph):
    /// `destroyed_activities` is not counted. Absent (false) for a dump.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub destroyed_unknown: bool,
    /// Fragment instances (`android.app`, support and AndroidX), subclasses included.
    pub fragments: u64,
    /// `android.view.Window` instances, subclasses included.
    pub windows: u64,
    /// The app's Bitmaps (as [`BitmapCounts::count`]).
    pub bitmaps: u64,
    /// Threads: distinct objects of thread-object roots, as LeakCanary counts them.
    pub threads: u64,
}

/// Threads that share a name, or a name up to its digits.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ThreadGroup {
    /// The name, or for several the name with each run of digits as `#`.
    pub name: String,
    /// Threads in the group.
    pub count: u64,
}

/// The app's Bitmaps and their bytes.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BitmapCounts {
    /// Strongly reachable Bitmaps of the app (not the zygote's or boot image's).
    pub count: u64,
    /// The heap gives its Bitmaps no width and height (a heap graph from before ART
    /// recorded them): which are large, and their configs, are not known. Absent (false)
    /// for a dump.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub dimensions_unknown: bool,
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
    /// Large Bitmaps (over `large_threshold_pixels`).
    pub large_count: u64,
    /// Their bytes, Java and native.
    pub large_bytes: u64,
    /// The largest by bytes (Java and native), largest first.
    pub largest: Vec<BitmapInfo>,
    /// Bitmaps beyond those listed.
    pub largest_left_out: u64,
}

/// The screen's size in pixels, and where it was taken from.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Screen {
    /// Width in pixels.
    pub width: u64,
    /// Height in pixels.
    pub height: u64,
    /// `DisplayMetrics` (the largest in the heap) or `--screen`.
    pub source: String,
}

/// One Bitmap of the triage's largest.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BitmapInfo {
    /// The Bitmap's id.
    pub object_id: u64,
    /// Width in pixels (`mWidth`; 0 when absent).
    pub width: i64,
    /// Height in pixels (`mHeight`; 0 when absent).
    pub height: i64,
    /// Inferred from bytes per pixel (no dump records it): `ALPHA_8`, `RGB_565`,
    /// `ARGB_8888` (also HARDWARE or RGBA_1010102), `RGBA_F16`; `unknown` otherwise.
    pub config: String,
    /// Pixel bytes on the Java heap (`mBuffer`'s length; 0 when the pixels are native,
    /// API 26+, or a shrunk dump dropped them).
    pub java_bytes: u64,
    /// Registered native bytes (API 26+; 0 when none is registered).
    pub native_bytes: u64,
    /// `mRecycled` is set: its pixels were freed.
    pub recycled: bool,
    /// Its pixels (width × height) exceed `BitmapCounts::large_threshold_pixels`.
    pub large: bool,
    /// Its path from a GC root (statuses `UNKNOWN`); `None` when none was found.
    pub path: Option<Trace>,
}

/// A value held by several Strings.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DuplicateString {
    /// The value, cut to 100 characters.
    pub value: String,
    /// Its length in characters.
    pub length: u64,
    /// Strings holding it.
    pub count: u64,
    /// Bytes of one copy (the String and its value array).
    pub bytes_each: u64,
    /// Bytes the copies beyond the first take.
    pub wasted_bytes: u64,
}
