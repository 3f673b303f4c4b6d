//! The report of a shrink: what went in, what came out, what was kept, dropped and merged,
//! and how long each pass took. Serialized as the JSON of `--report`, whose schema the
//! README documents; `schema` is bumped on any incompatible change.

use serde::Serialize;

use crate::hprof::{BasicType, Salvage};
use crate::options::{DroppedMode, StripMode};
use crate::package::Manifest;
use crate::passes::Tally;

pub const SCHEMA: u32 = 1;

#[derive(Debug, Clone, Serialize)]
/// What a shrink did: the `--report` JSON (schema in docs/usage.md).
pub struct Report {
    /// The report's schema version; bumped on any incompatible change.
    pub schema: u32,
    /// `hprof-shrink VERSION`.
    pub tool: String,
    /// The dump: path, size, format, id size, timestamp.
    pub input: InputReport,
    /// The outputs: paths, sizes, ratios to the input.
    pub output: OutputReport,
    /// The modes and level used.
    pub options: OptionsReport,
    /// Primitive arrays kept and dropped, in all and by type.
    pub arrays: ArraysReport,
    /// String instances and their value arrays.
    pub strings: StringsReport,
    /// Bitmaps, their buffers, and what deduplication merged.
    pub bitmaps: BitmapsReport,
    /// Android 14+ `Bitmap$DumpData` images; absent when the dump has none.
    pub dump_data: Option<ImagesReport>,
    /// `result.info` as written, and where each value came from.
    pub manifest: Manifest,
    /// What the caller should know (placeholders written, a cut-off dump...).
    pub warnings: Vec<String>,
    /// Milliseconds in each pass.
    pub timings_ms: Timings,
    /// For `--salvage` of a cut-off dump: where the damage starts and the file's size.
    pub salvage: Option<Salvage>,
    /// For `--private`: what was replaced and what kept; absent otherwise.
    pub private: Option<PrivateReport>,
}

#[derive(Debug, Clone, Serialize)]
/// What `--private` replaced.
pub struct PrivateReport {
    /// String values written as they are: those of the kept fields (docs/usage.md).
    pub kept_values: u64,
    /// String values replaced, and their bytes.
    pub strings_replaced: Tally,
    /// Bitmap buffers and images whose bytes were replaced, and their bytes.
    pub pixels_replaced: Tally,
}

#[derive(Debug, Clone, Serialize)]
pub struct InputReport {
    pub path: String,
    pub bytes: u64,
    /// `1.0.1`, `1.0.2` or `1.0.3`.
    pub format: String,
    pub id_size: u8,
    pub timestamp_ms: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct OutputReport {
    pub zip: Option<String>,
    pub zip_bytes: Option<u64>,
    pub hprof: Option<String>,
    /// Size of the shrunk hprof (the zip entry's uncompressed size).
    pub hprof_bytes: u64,
    /// hprof_bytes / input bytes.
    pub hprof_ratio: f64,
    /// zip_bytes / input bytes.
    pub zip_ratio: Option<f64>,
    /// What compressed the zip's hprof entry: the deflate backend's name (levels 1-9) or
    /// "stored" (level 0); none without a zip.
    pub zip_compressor: Option<&'static str>,
}

#[derive(Debug, Clone, Serialize)]
pub struct OptionsReport {
    pub strip: StripMode,
    pub dropped: DroppedMode,
    pub level: u32,
    /// `--private`.
    pub private: bool,
}

#[derive(Debug, Clone, Serialize)]
pub struct ArraysReport {
    pub kept: Tally,
    pub dropped: Tally,
    pub by_type: Vec<TypeRow>,
}

#[derive(Debug, Clone, Serialize)]
pub struct TypeRow {
    pub element_type: BasicType,
    pub kept: Tally,
    pub dropped: Tally,
}

#[derive(Debug, Clone, Serialize)]
pub struct StringsReport {
    pub instances: u64,
    /// Distinct value arrays named by Strings (kept unless `--strip none` keeps all).
    pub values: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct BitmapsReport {
    pub instances: u64,
    pub recycled: u64,
    /// Live Bitmaps with a pixel buffer.
    pub with_buffer: u64,
    /// Distinct buffer arrays they name, and distinct contents among those.
    pub buffers: u64,
    pub distinct_contents: u64,
    /// Buffers kept in the output.
    pub kept: u64,
    /// Buffers dropped because an identical one is kept, and their bytes.
    pub merged: u64,
    pub merged_bytes: u64,
    /// Bitmap instances whose mBuffer now names the kept copy.
    pub repointed: u64,
    /// Bytes compared byte for byte: buffers whose length and end bytes equal another's.
    pub compared_bytes: u64,
    /// Buffers hashed: those of a length with more distinct contents than are compared.
    pub hashed: u64,
    /// Their bytes: what MD5 ran over.
    pub hashed_bytes: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct ImagesReport {
    pub images: u64,
    pub distinct_contents: u64,
    pub merged: u64,
    pub merged_bytes: u64,
    pub repointed: u64,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct Timings {
    pub info: u64,
    pub collect: u64,
    pub dedup: u64,
    /// Pass 3, including compression into the zip and `sync`.
    pub write: u64,
    /// Of `write`: syncing the outputs to disk before they are renamed into place.
    pub sync: u64,
    pub total: u64,
}
