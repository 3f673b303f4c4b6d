//! What an analysis finds, as data: the JSON output is this, serialized (schema in
//! docs/analyze.md); the text, Matrix and HTML renderings and `serve` read it.
//!
//! Every list is capped ([`crate::base::limits`]) and counts what it left out in an `omitted…`
//! field beside it (0 when nothing was; absent in analyses stored before these fields
//! existed, hence `serde(default)`). Every string from the dump is escaped and cut
//! ([`crate::base::shown::clipped`]). The triage's part is [`triage`]; what a private
//! package shows, [`redact`]. Uses `base` only.

pub mod redact;
pub mod triage;

use serde::{Deserialize, Serialize};

/// The version of the JSON schema. Bumped on any change a reader would notice.
pub const SCHEMA_VERSION: u32 = 2;

/// How `Leak::signature` is computed (`signatureVersion`): 2 is LeakCanary's leak
/// fingerprint (collections read as one step, a library leak signed by its pattern);
/// 1 (analyses written before the field existed) hashed the path field by field.
/// Signatures of different versions never compare equal for the same bug.
pub const SIGNATURE_VERSION: u32 = 2;

fn signature_version_1() -> u32 {
    1
}

fn one() -> u64 {
    1
}

/// One dump's analysis: what `--format json` writes and `serve` stores (schema
/// [`SCHEMA_VERSION`], docs/analyze.md).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Analysis {
    /// The JSON schema's version ([`SCHEMA_VERSION`] when written).
    pub schema: u32,
    /// How the leaks' signatures are computed ([`SIGNATURE_VERSION`]); 1 in analyses
    /// written before this field existed.
    #[serde(default = "signature_version_1")]
    pub signature_version: u32,
    /// `hprof-shrink VERSION`.
    pub tool: String,
    /// The file analyzed: its path, kind and a package's manifest.
    pub input: InputSummary,
    /// The heap dump analyzed, in numbers.
    pub dump: DumpSummary,
    /// What the heap says about the device and the app (`android.os.Build`,
    /// `ActivityThread`, LeakCanary's classes).
    #[serde(default)]
    pub metadata: HeapMetadata,
    /// How leaking objects were found, and so why: `matrix-key` (a key: the
    /// DestroyedActivityInfo whose mKey is the key), `keyed-weak-references` (no key, and
    /// the dump holds objects LeakCanary watched and found retained: those alone, as
    /// LeakCanary on the phone), `inspectors` (no key and no retained watched object: what
    /// the inspectors' finders flag, as Shark on a raw dump) or `all-leaks` (`--all-leaks`:
    /// both). Analyses written before these modes say
    /// `leakcanary` (every finder).
    pub finder: String,
    /// The key looked for (from `--key` or the package's `leakedActivityKey`).
    pub key: Option<String>,
    /// Keys of the DestroyedActivityInfo objects in the dump, when a key was looked for:
    /// distinct and sorted, the first [`MAX_KEYS_FOUND`](crate::base::limits::MAX_KEYS_FOUND).
    pub keys_found: Vec<String>,
    /// Distinct keys beyond those in `keys_found`.
    #[serde(default)]
    pub omitted_keys_found: u64,
    /// One per signature, by retained size, of the first
    /// [`MAX_LEAKS`](crate::base::limits::MAX_LEAKS) leaking objects found.
    pub leaks: Vec<Leak>,
    /// Leaking objects found beyond the [`MAX_LEAKS`](crate::base::limits::MAX_LEAKS) traced.
    #[serde(default)]
    pub omitted_leaks: u64,
    /// Leaking objects found without a strong path from a GC root (a watched object held
    /// only weakly, garbage the dump kept): the first
    /// [`MAX_UNREACHABLE`](crate::base::limits::MAX_UNREACHABLE).
    #[serde(default)]
    pub unreachable: Vec<UnreachableObject>,
    /// Unreachable leaking objects beyond those listed.
    #[serde(default)]
    pub omitted_unreachable: u64,
    /// The [`MAX_BITMAP_GROUPS`](crate::base::limits::MAX_BITMAP_GROUPS) that waste the most.
    pub duplicate_bitmaps: Vec<BitmapGroup>,
    /// Groups of duplicate bitmaps beyond those listed.
    #[serde(default)]
    pub omitted_duplicate_bitmaps: u64,
    /// What the dump holds, for a reader without a leak to look at (docs/analyze.md).
    #[serde(default)]
    pub triage: Option<triage::Triage>,
    /// What the reader should know: a shrunk dump's dropped arrays, a key not found, …
    pub notes: Vec<String>,
    /// Notes beyond the first [`MAX_NOTES`](crate::base::limits::MAX_NOTES).
    #[serde(default)]
    pub omitted_notes: u64,
}

/// A rule or step the analysis could not run, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NotRun {
    /// `finder` (a rule that flags leaking objects), `inspector` (a rule that decides a
    /// trace step's status and labels) or `step` (a part of this analysis).
    pub kind: String,
    /// The rule's name, LeakCanary's for its rules (`ACTIVITY`), or the step's.
    pub rule: String,
    /// What it needed: the first field whose value it asked for (`Class.field`), or what
    /// the step reads.
    pub needs: String,
    /// The objects it was not run on (for a step, those of the class it reads).
    pub objects: u64,
}

/// What the heap says about the device and the app; `None` where it does not say.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct HeapMetadata {
    /// `android.os.Build.VERSION.SDK_INT`.
    pub sdk_int: Option<i64>,
    /// `android.os.Build.MANUFACTURER`.
    pub manufacturer: Option<String>,
    /// `android.os.Build.ID`.
    pub build_id: Option<String>,
    /// The app's process (`ActivityThread`'s bound application's `ApplicationInfo`).
    pub process_name: Option<String>,
    /// The app's package (the same `ApplicationInfo`).
    pub package_name: Option<String>,
    /// `leakcanary.internal.InternalLeakCanary.version`; `1.x` when only LeakCanary 1's
    /// classes are in the dump.
    pub leakcanary_version: Option<String>,
}

/// A leaking object without a strong path from a GC root.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UnreachableObject {
    /// The object's id (its address in the dump).
    pub object_id: u64,
    /// Its class, deobfuscated with `--mapping`, escaped and cut.
    pub class_name: String,
    /// `instance`, `class` or `array`.
    pub kind: String,
    /// The rules that found it (`KEYED_WEAK_REFERENCE`, `ACTIVITY`, …, `MATRIX_KEY`).
    pub finders: Vec<String>,
    /// Why it is leaking (its status is always YES).
    pub leaking_reason: String,
    /// What the inspectors learned of it, as for a trace's step ([`Step::labels`]).
    pub labels: Vec<String>,
    /// Labels beyond those kept.
    #[serde(default)]
    pub omitted_labels: u64,
}

/// The file analyzed, as given and as read.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InputSummary {
    /// The file as given.
    pub path: String,
    /// `package`, `hprof` or `hprof.gz`.
    pub kind: String,
    /// `result.info` of a package, in file order.
    pub manifest: Vec<(String, String)>,
    /// `extra.info` of a package, in file order; what a Perfetto trace says of its app
    /// (`processName`, `packageName`, `versionCode`).
    pub extra: Vec<(String, String)>,
    /// Made by hprof-shrink with primitive arrays dropped: a reference to a dropped array
    /// reads as null and its bytes are not counted.
    pub shrunk: bool,
    /// A private package (`--private`): String values other than those the analysis reads,
    /// and pixels, were replaced; what the analysis finds is the same, the values it shows
    /// (a map key, a duplicate String, a bitmap's digest) are not the app's.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub private: bool,
}

/// The heap dump analyzed, in numbers: its header, its records (of the analyzed heap dump
/// only), what is reachable and where the bytes go.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DumpSummary {
    /// The header's format string (`JAVA PROFILE 1.0.2`, `1.0.3`).
    pub format: String,
    /// The size of an object id in the dump (4 or 8 bytes).
    pub id_size: u8,
    /// The header's timestamp: milliseconds since the Unix epoch.
    pub timestamp_ms: u64,
    /// Bytes of the HPROF data read (a package's or `.hprof.gz`'s dump as inflated).
    pub bytes: u64,
    /// Instances (not arrays, not classes).
    pub instances: u64,
    /// Arrays of objects.
    pub object_arrays: u64,
    /// Arrays of primitives (with or without their data).
    pub primitive_arrays: u64,
    /// Classes (class dump records).
    pub classes: u64,
    /// GC root records (a root named twice counts twice).
    pub gc_roots: u64,
    /// Threads (distinct objects of thread-object roots, as LeakCanary counts them).
    #[serde(default)]
    pub threads: u64,
    /// The shallow bytes of every object in the dump, reachable or not (the sizes of
    /// `topClasses`).
    #[serde(default)]
    pub heap_bytes: u64,
    /// Objects strongly reachable from the GC roots.
    pub reachable_objects: u64,
    /// Their shallow bytes (the retained size of all GC roots together).
    pub reachable_bytes: u64,
    /// The registered native bytes they own (Android 7+: NativeAllocationRegistry).
    #[serde(default)]
    pub reachable_native_bytes: u64,
    /// Strong references between reachable objects.
    pub reachable_edges: u64,
    /// The heaps the dump names (ART: app, zygote, image), with their objects.
    pub heaps: Vec<HeapSummary>,
    /// Heaps beyond the first [`MAX_HEAPS`](crate::base::limits::MAX_HEAPS) by name.
    #[serde(default)]
    pub omitted_heaps: u64,
    /// Classes by the shallow bytes of their reachable instances, largest first.
    pub top_classes: Vec<ClassSummary>,
    /// Heap dumps in the file (the old `-agentlib:hprof` wrote several into one).
    #[serde(default)]
    pub heap_dumps: u64,
    /// The one analyzed, from 1 (0: the file holds none).
    #[serde(default)]
    pub heap_dump: u64,
    /// The classes with reachable instances not in `top_classes`.
    #[serde(default)]
    pub omitted_top_classes: u64,
    /// LeakCanary's rules and the analysis's steps that could not run on this heap, each
    /// with the fact it needed that the heap lacks: a heap graph holds no field values
    /// (an Activity's `mDestroyed`, a String's text, a Bitmap's pixels). Only those the
    /// heap gave something to run on, once each (so at most one per rule and step);
    /// empty for a dump that holds values.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_run: Vec<NotRun>,
    /// The parts of the analysis left out on request (`analyze --skip`): `triage` (then
    /// there is no `triage`) or `duplicateStrings` (then `triage.duplicateStrings` is
    /// empty because no value was looked at, not because none is held twice).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skipped: Vec<String>,
}

/// One heap of the dump and its objects.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HeapSummary {
    /// The name the dump gives the heap, else by its id: `app`, `zygote`, `image` or `default`.
    pub name: String,
    /// Objects of the dump in that heap, reachable or not.
    pub objects: u64,
}

/// A class and the reachable objects it has.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClassSummary {
    /// Its name, deobfuscated with `--mapping`, escaped and cut.
    pub class_name: String,
    /// Its strongly reachable objects (instances, or arrays for an array class).
    pub instances: u64,
    /// Their shallow bytes.
    pub shallow_bytes: u64,
}

/// One leak: the leaking objects of one signature, with the trace of the one that retains
/// the most.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Leak {
    /// The shown trace's leaking object.
    pub object_id: u64,
    /// Its class, deobfuscated with `--mapping`, escaped and cut.
    pub class_name: String,
    /// Why the object is leaking: its trace's last step's reason.
    pub reason: String,
    /// The rules that found it, in LeakCanary's order: `KEYED_WEAK_REFERENCE`,
    /// `ACTIVITY`, `VIEW`, … or `MATRIX_KEY`.
    #[serde(default)]
    pub finders: Vec<String>,
    /// The known framework leak the only path goes through, if any.
    pub library_leak: Option<LibraryLeak>,
    /// LeakCanary's leak fingerprint ([`SIGNATURE_VERSION`]): for a library leak the
    /// SHA-1 (hex) of its pattern's text, else `trace_signature`. The same bug gives the
    /// same signature on every device and dump.
    pub signature: String,
    /// SHA-1 (hex) of the shown trace's suspect references, each its origin object's class
    /// and the reference's generic name, concatenated (LeakCanary's trace signature).
    #[serde(default)]
    pub trace_signature: Option<String>,
    /// The shown trace's leaking object's retained size (ahat's model): the shallow Java
    /// bytes of its dominator subtree.
    pub retained_bytes: u64,
    /// Registered native bytes retained (Android 7+: NativeAllocationRegistry), apart.
    #[serde(default)]
    pub retained_native_bytes: u64,
    /// Objects in that leaking object's dominator subtree, itself included.
    pub retained_objects: u64,
    /// Leaking objects with this signature (traces LeakCanary groups as one leak); the
    /// trace shown is the one retaining the most.
    #[serde(default = "one")]
    pub trace_count: u64,
    /// The leaking objects with this signature, `object_id` first; at most
    /// [`MAX_LEAKS`](crate::base::limits::MAX_LEAKS).
    #[serde(default)]
    pub object_ids: Vec<u64>,
    /// The sum of their retained sizes (objects several of them retain counted for each,
    /// as LeakCanary sums them); 0 in analyses written before this field existed.
    #[serde(default)]
    pub total_retained_bytes: u64,
    /// The sum of their retained objects, counted as `total_retained_bytes` is.
    #[serde(default)]
    pub total_retained_objects: u64,
    /// The sum of their registered native bytes retained.
    #[serde(default)]
    pub total_retained_native_bytes: u64,
    /// The path from a GC root to the leaking object `object_id`.
    pub trace: Trace,
}

/// A known framework leak ([`crate::LibraryTable`]'s row) a path goes through.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LibraryLeak {
    /// `class#field`, `native global CLASS` or `thread NAME`: the table row.
    pub pattern: String,
    /// What the leak is, as the table's row says.
    pub description: String,
    /// The row's id in `library_leaks.json` (LeakCanary's enum name, suffixed where the
    /// enum has several patterns).
    #[serde(default)]
    pub id: Option<String>,
    /// `instance`, `static`, `jniGlobal` or `threadLocal`.
    #[serde(default)]
    pub kind: Option<String>,
    /// LeakCanary's text for the pattern (`instance field C#f`, `static field C#f`,
    /// `native global variable referencing C`, `local variable on thread T`), whose SHA-1
    /// is LeakCanary's signature for the leak.
    #[serde(default)]
    pub leak_pattern: Option<String>,
    /// Where the bug is tracked, when known.
    #[serde(default)]
    pub bug: Option<String>,
}

/// A path from a GC root to an object.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Trace {
    /// The GC root's type, as HPROF names it in words (`sticky class`, `java frame`, …).
    pub root: String,
    /// The objects from the root to the object, each with the reference to the next. A
    /// path longer than [`MAX_TRACE_STEPS`](crate::base::limits::MAX_TRACE_STEPS) keeps its
    /// first and last steps only.
    pub steps: Vec<Step>,
    /// Steps of the path left out, between `steps[omitted_after - 1]` and
    /// `steps[omitted_after]`; 0 when the trace is whole.
    #[serde(default)]
    pub omitted_steps: u64,
    /// Where the left-out steps were: after this many of `steps`; `None` when whole.
    #[serde(default)]
    pub omitted_after: Option<u64>,
}

impl Trace {
    /// The steps as shown, with the place of the left-out ones: `None` in the list stands
    /// for the `omitted_steps` steps.
    pub fn shown_steps(&self) -> Vec<Option<&Step>> {
        let gap = self
            .omitted_after
            .filter(|_| self.omitted_steps > 0)
            .map(|a| (a as usize).min(self.steps.len()));
        let mut out: Vec<Option<&Step>> = Vec::with_capacity(self.steps.len() + 1);
        for (i, s) in self.steps.iter().enumerate() {
            if gap == Some(i) {
                out.push(None);
            }
            out.push(Some(s));
        }
        if gap == Some(self.steps.len()) {
            out.push(None);
        }
        out
    }
}

/// One object of a trace, and the reference it holds to the next.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Step {
    /// The object's id (its address in the dump).
    pub object_id: u64,
    /// Its class, deobfuscated with `--mapping`, escaped and cut.
    pub class_name: String,
    /// `instance`, `class` or `array`.
    pub kind: String,
    /// `YES`, `NO` or `UNKNOWN`.
    pub leaking: String,
    /// Why, when known.
    pub leaking_reason: Option<String>,
    /// Facts about the object worth showing (a thread's name, a View's attach state, the
    /// contexts its fields hold, …): the first
    /// [`MAX_STEP_LABELS`](crate::base::limits::MAX_STEP_LABELS).
    pub labels: Vec<String>,
    /// Labels beyond those kept.
    #[serde(default)]
    pub omitted_labels: u64,
    /// The reference from this object to the next step; none on the last.
    pub reference: Option<Reference>,
}

/// A reference from one step's object to the next step's.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Reference {
    /// `static`, `field`, `array` (an array element, or an entry of a collection read as
    /// one step) or `local`.
    pub kind: String,
    /// The field name, `[index]` (`[3]`, `["key"]`, `[key()]`, `[element()]` for a
    /// collection's entry), or `<Java Local>`.
    pub name: String,
    /// The class that declares the field (for `static` and `field`).
    pub declared_by: Option<String>,
    /// Part of the suspect stretch, from the last NO to the first YES.
    pub suspect: bool,
    /// LeakCanary's reference type: `INSTANCE_FIELD`, `STATIC_FIELD`, `LOCAL` or
    /// `ARRAY_ENTRY` (absent in analyses made before it existed). `name` is LeakCanary's
    /// display name.
    #[serde(default)]
    pub reference_type: Option<String>,
    /// The class LeakCanary shows the reference in (its `owningClassName`) where that is
    /// not `declaredBy`: the array's class for an element, the collection's class for its
    /// entries (`android.os.MessageQueue` for a queue's messages), the thread's class for
    /// a local. See [`Reference::owning_class_name`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owning_class: Option<String>,
    /// The name LeakCanary's signature takes where that is not `name`: `[x]` for any
    /// array element or collection entry. See [`Reference::generic`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generic_name: Option<String>,
    /// The known-leak pattern (LeakCanary's text) this reference matched.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub library_match: Option<String>,
    /// For an entry of a collection or queue read as one step: the collection and the
    /// internal references the step stands for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub collection: Option<CollectionStep>,
}

impl Reference {
    /// LeakCanary's `owningClassName`: `owning_class`, else the declaring class.
    pub fn owning_class_name(&self) -> Option<&str> {
        self.owning_class.as_deref().or(self.declared_by.as_deref())
    }

    /// LeakCanary's generic name (what its signature takes): the field name, `[x]` for an
    /// array element or collection entry, `<Java Local>`.
    pub fn generic(&self) -> &str {
        match (&self.generic_name, self.kind.as_str()) {
            (Some(g), _) => g,
            (None, "array") => "[x]",
            (None, _) => &self.name,
        }
    }
}

/// What one step through a collection stands for.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CollectionStep {
    /// The collection's class.
    pub class_name: String,
    /// The layout read: `openjdk`, `harmony` (Android 6 and before) or `android`.
    pub layout: String,
    /// The entry's position in reading order: a list's index, a queue's position, a
    /// map's or set's entry number (bucket by bucket).
    pub position: u64,
    /// The fields and array indices from the collection to the entry, a run of one link
    /// written once with its count: `["elementData", "[2]"]`, `["table", "[5]", "next",
    /// "value"]`, `["mMessages", "next ×4"]`.
    pub internal_path: Vec<String>,
}

/// Bitmaps whose pixel buffers are byte for byte the same.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BitmapGroup {
    /// MD5 (hex) of the buffer.
    pub hash: String,
    /// The first copy's width in pixels (`mWidth`).
    pub width: i64,
    /// The first copy's height in pixels (`mHeight`).
    pub height: i64,
    /// Bytes of one buffer.
    pub buffer_bytes: u64,
    /// Bitmaps in the group (2 or more), `instances` and `omitted_instances` together.
    pub count: u64,
    /// Bytes the copies beyond the first take.
    pub wasted_bytes: u64,
    /// `mBuffer` (API < 26, raw pixels) or `dumpData` (API 34+, an encoded image).
    pub source: String,
    /// `ARGB_8888`, `RGB_565`, `ALPHA_8`, or the encoded image's format (`png`, `jpeg`,
    /// `webp`); `unknown` when neither can be told.
    pub format: String,
    /// The picture's file name under `buffer_contents/` (Matrix output), when one can be
    /// made.
    pub image: Option<String>,
    /// The first [`MAX_BITMAP_INSTANCES`](crate::base::limits::MAX_BITMAP_INSTANCES) by id.
    pub instances: Vec<BitmapInstance>,
    /// The group's instances not listed (`count` has them all).
    #[serde(default)]
    pub omitted_instances: u64,
}

/// One Bitmap of a group.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BitmapInstance {
    /// The Bitmap's id.
    pub object_id: u64,
    /// Its path from a GC root; `None` when none was found.
    pub trace: Option<Trace>,
}
