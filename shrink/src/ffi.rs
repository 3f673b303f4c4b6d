//! The C ABI: what an Android app (through JNI) or any C caller links to shrink a dump.
//!
//! One opaque job per shrink: `hprof_shrink_job_run` does the whole job on the calling
//! thread, `hprof_shrink_job_cancel` may be called from any other thread meanwhile, and the
//! report (JSON) or the error message stays readable on the job afterwards. Every entry
//! point catches panics and turns NULL or malformed arguments into
//! `HPROF_SHRINK_ERR_INVALID_ARGUMENT`: nothing unwinds into C and nothing a caller passes
//! crashes the library.
//!
//! `include/hprof_shrink.h` is generated from this file by cbindgen (`cbindgen.toml`);
//! `tests/header.rs` regenerates it and fails when the committed header differs.
//!
//! Status codes, modes and stages are plain `int32_t` constants rather than Rust enums: a
//! value C hands in that is not a variant would be undefined behaviour as a Rust enum,
//! while an integer is simply checked.

#![allow(unsafe_code)]
#![allow(non_camel_case_types)]

use std::any::Any;
use std::ffi::{c_char, c_void, CStr, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::thread::{self, ThreadId};

use crate::control::{Control, Progress, Stage};
use crate::error::{Error, ErrorKind};
use crate::options::{DroppedMode, StripMode};
use crate::package::ManifestValues;
use crate::pipeline::{shrink_file, Outputs, ShrinkOptions};

/// What `hprof_shrink_job_run` returns: `HPROF_SHRINK_OK` or one of `HPROF_SHRINK_ERR_*`.
pub type hprof_shrink_status = i32;

/// The shrink finished; the outputs are in place and the report is on the job.
pub const HPROF_SHRINK_OK: hprof_shrink_status = 0;
/// `hprof_shrink_job_cancel` was called; no output file was left.
pub const HPROF_SHRINK_ERR_CANCELLED: hprof_shrink_status = 1;
/// A NULL, malformed or contradictory argument (the message names it); nothing was read or
/// written.
pub const HPROF_SHRINK_ERR_INVALID_ARGUMENT: hprof_shrink_status = 2;
/// Reading the input or writing an output failed (missing file, permissions, disk full).
pub const HPROF_SHRINK_ERR_IO: hprof_shrink_status = 3;
/// The input is not an HPROF dump this library can shrink: not HPROF, truncated or
/// malformed (the message gives the byte offset and record tag).
pub const HPROF_SHRINK_ERR_BAD_INPUT: hprof_shrink_status = 4;
/// A bug in this library (a panic, caught at the boundary); the message says where.
pub const HPROF_SHRINK_ERR_INTERNAL: hprof_shrink_status = 5;
/// The job is already running (a second `hprof_shrink_job_run` on it, e.g. from the
/// progress callback); the running shrink, its report and its message are untouched.
pub const HPROF_SHRINK_ERR_BUSY: hprof_shrink_status = 6;

/// Which primitive arrays survive (`hprof_shrink_options.strip`).
pub type hprof_shrink_strip = i32;
/// String values and every live Bitmap buffer, identical buffers kept once (the default).
pub const HPROF_SHRINK_STRIP_BITMAPS: hprof_shrink_strip = 0;
/// What Matrix keeps: String values and one copy of each Bitmap buffer that has a
/// duplicate.
pub const HPROF_SHRINK_STRIP_DUPLICATES: hprof_shrink_strip = 1;
/// String values only.
pub const HPROF_SHRINK_STRIP_STRINGS: hprof_shrink_strip = 2;
/// Nothing dropped: the hprof entry is the input, byte for byte.
pub const HPROF_SHRINK_STRIP_NONE: hprof_shrink_strip = 3;

/// How a dropped array disappears (`hprof_shrink_options.dropped`).
pub type hprof_shrink_dropped = i32;
/// The record goes; references to it dangle (the default).
pub const HPROF_SHRINK_DROPPED_REMOVE: hprof_shrink_dropped = 0;
/// A zero-length array with the same id and type stays.
pub const HPROF_SHRINK_DROPPED_EMPTY: hprof_shrink_dropped = 1;
/// The elements are zeroed: sizes stay true.
pub const HPROF_SHRINK_DROPPED_ZERO: hprof_shrink_dropped = 2;

/// The stage a progress report belongs to. `done` and `total` are bytes of the input.
pub type hprof_shrink_stage = i32;
/// Pass 1: strings, classes and field layouts.
pub const HPROF_SHRINK_STAGE_INFO: hprof_shrink_stage = 0;
/// Pass 2: String values and Bitmap buffers to keep.
pub const HPROF_SHRINK_STAGE_COLLECT: hprof_shrink_stage = 1;
/// Pass 2 again, over the part of the file before a late reference, when needed.
pub const HPROF_SHRINK_STAGE_RESOLVE: hprof_shrink_stage = 2;
/// Pass 2: hashing Bitmap buffers of equal length (`done` and `total`: bytes hashed).
pub const HPROF_SHRINK_STAGE_DEDUP: hprof_shrink_stage = 3;
/// Pass 3: writing the shrunk dump (and compressing it into the zip).
pub const HPROF_SHRINK_STAGE_WRITE: hprof_shrink_stage = 4;
/// Reading a dump to inspect or verify it (a shrink does not report it).
pub const HPROF_SHRINK_STAGE_READ: hprof_shrink_stage = 5;

/// Called on the thread that called `hprof_shrink_job_run`, every few MiB of input and at
/// the end of each stage. It must return normally (no longjmp, no C++ exception); it may
/// call `hprof_shrink_job_cancel`.
pub type hprof_shrink_progress_fn = Option<
    unsafe extern "C" fn(user_data: *mut c_void, stage: hprof_shrink_stage, done: u64, total: u64),
>;

/// One `key=value` line of `extra.info`.
#[repr(C)]
pub struct hprof_shrink_property {
    /// Non-empty UTF-8.
    pub key: *const c_char,
    /// UTF-8, may be empty.
    pub value: *const c_char,
}

/// What to shrink, where to, and how. Fill it with `hprof_shrink_options_init` first, then
/// set the fields wanted. Every string is NUL-terminated UTF-8 and only read during
/// `hprof_shrink_job_run`.
#[repr(C)]
pub struct hprof_shrink_options {
    /// `sizeof(hprof_shrink_options)` as the caller was compiled; set by
    /// `hprof_shrink_options_init`. Lets a later library tell an older caller's struct
    /// (fewer fields) from its own.
    pub struct_size: usize,
    /// The dump to shrink (required; never written to).
    pub input_path: *const c_char,
    /// The upload package (zip) to write, or NULL.
    pub zip_path: *const c_char,
    /// The raw shrunk hprof to write, or NULL. At least one of the two outputs is needed.
    /// Each output must differ from the input and from the other (through symlinks and
    /// hard links), and must not be an existing device, FIFO, socket or directory; else
    /// `HPROF_SHRINK_ERR_INVALID_ARGUMENT` before any work.
    pub hprof_path: *const c_char,
    /// One of `HPROF_SHRINK_STRIP_*`.
    pub strip: hprof_shrink_strip,
    /// One of `HPROF_SHRINK_DROPPED_*`.
    pub dropped: hprof_shrink_dropped,
    /// Deflate level of the zip, 0 (store) to 9; `hprof_shrink_options_init` sets 6.
    pub level: i32,
    /// `sdkVersion` of `result.info`; NULL: read from the dump.
    pub sdk_version: *const c_char,
    /// `manufacturer` of `result.info`; NULL: read from the dump.
    pub manufacturer: *const c_char,
    /// `leakedActivityKey` of `result.info`; NULL: read from the dump.
    pub leaked_activity_key: *const c_char,
    /// Properties for `extra.info`, in order; `extra_count` of them (NULL when 0).
    pub extra: *const hprof_shrink_property,
    /// How many entries `extra` points at.
    pub extra_count: usize,
    /// Name of the hprof entry in the zip; NULL: the input's stem + `_shrink.hprof`. A plain
    /// file name (no `/` or `\`, not `.`, `..`, `result.info` or `extra.info`), else
    /// `HPROF_SHRINK_ERR_INVALID_ARGUMENT`.
    pub hprof_entry: *const c_char,
    /// Threads to use, the calling one included; 0: one per core; at most 256 (more is
    /// `HPROF_SHRINK_ERR_INVALID_ARGUMENT`). A phone may want fewer (heat, battery, a
    /// foreground app). Threads the system will not start are done without.
    pub threads: i32,
    /// Nonzero: shrink a dump that was cut off while being written (the process died
    /// mid-dump) up to its last complete record; `extra.info` then says `truncated=true`.
    /// 0: such a dump is `HPROF_SHRINK_ERR_BAD_INPUT`.
    pub salvage: i32,
    /// Nonzero: a private package (CLI `--private`): every String value but those the
    /// analysis reads, and every Bitmap's pixels, replaced (same lengths; equal values
    /// alike); `result.info` and `extra.info` say `private=true`. Not with
    /// `HPROF_SHRINK_STRIP_NONE` (`HPROF_SHRINK_ERR_INVALID_ARGUMENT`). A caller
    /// compiled against the header without this field (its `struct_size` ends before it)
    /// gets 0.
    pub private_package: i32,
    /// 0; room for a later flag.
    pub reserved: i32,
}

/// `sizeof(hprof_shrink_options)` before `private_package` was added: the struct then
/// ended with `salvage`, padded to its alignment.
const OPTIONS_SIZE_V1: usize = std::mem::offset_of!(hprof_shrink_options, private_package)
    .next_multiple_of(std::mem::align_of::<hprof_shrink_options>());

/// An opaque shrink job: holds the cancellation flag, and the report or error message of
/// its last run.
pub struct hprof_shrink_job {
    cancel: AtomicBool,
    running: AtomicBool,
    outcome: Mutex<Outcome>,
}

/// What the last run left for the caller to read. The strings' buffers stay where they are
/// until the outcome is replaced, so pointers handed out survive the lock.
#[derive(Default)]
struct Outcome {
    report_json: Option<CString>,
    error: Option<CString>,
}

impl hprof_shrink_job {
    fn set_outcome(&self, outcome: Outcome) {
        // A poisoned lock only means a panic elsewhere while it was held; the data is two
        // independent strings, always consistent.
        *self.outcome.lock().unwrap_or_else(|e| e.into_inner()) = outcome;
    }

    fn with_outcome<T>(&self, f: impl FnOnce(&Outcome) -> T) -> T {
        f(&self.outcome.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

/// Clears `running` however the run ends.
struct Running<'a>(&'a AtomicBool);

impl Drop for Running<'_> {
    fn drop(&mut self) {
        self.0.store(false, Ordering::Release);
    }
}

/// Why a run failed, as the caller sees it.
#[derive(Debug)]
struct Failure {
    status: hprof_shrink_status,
    message: String,
}

impl Failure {
    fn invalid(message: impl Into<String>) -> Failure {
        Failure {
            status: HPROF_SHRINK_ERR_INVALID_ARGUMENT,
            message: message.into(),
        }
    }

    fn internal(message: impl Into<String>) -> Failure {
        Failure {
            status: HPROF_SHRINK_ERR_INTERNAL,
            message: message.into(),
        }
    }

    fn panic(entry: &str, payload: &(dyn Any + Send)) -> Failure {
        Failure::internal(format!("panic in {entry}: {}", panic_message(payload)))
    }

    /// The message names the input for bad-input errors, whose text gives only an offset;
    /// I/O errors already name their file.
    fn from_error(e: Error, input: &str) -> Failure {
        let status = status_of(&e);
        let message = if status == HPROF_SHRINK_ERR_BAD_INPUT {
            format!("{input}: {e}")
        } else {
            e.to_string()
        };
        Failure { status, message }
    }
}

/// The status code of a core error.
fn status_of(e: &Error) -> hprof_shrink_status {
    match e.kind() {
        ErrorKind::Cancelled => HPROF_SHRINK_ERR_CANCELLED,
        ErrorKind::InvalidArgument => HPROF_SHRINK_ERR_INVALID_ARGUMENT,
        ErrorKind::Io => HPROF_SHRINK_ERR_IO,
        ErrorKind::BadInput => HPROF_SHRINK_ERR_BAD_INPUT,
        ErrorKind::Internal => HPROF_SHRINK_ERR_INTERNAL,
    }
}

fn panic_message(payload: &(dyn Any + Send)) -> &str {
    payload
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("(no message)")
}

/// Runs an entry point's body, turning a panic into `on_panic`: the last line of defence,
/// for the parts that have no job to leave a message on.
fn guard<T>(on_panic: T, body: impl FnOnce() -> T) -> T {
    catch_unwind(AssertUnwindSafe(body)).unwrap_or(on_panic)
}

/// A C string that cannot hold NUL: an interior NUL (possible only in text taken from the
/// dump) is shown as `\0`.
fn c_string(s: String) -> CString {
    CString::new(s).unwrap_or_else(|e| {
        let text = String::from_utf8_lossy(&e.into_vec()).replace('\0', "\\0");
        CString::new(text).unwrap_or_default()
    })
}

/// Reads an optional string field: NULL is `None`; empty or invalid UTF-8 is an error.
///
/// # Safety
/// `p` is NULL or points to a NUL-terminated string that stays valid during the call.
unsafe fn opt_str(p: *const c_char, field: &str) -> Result<Option<String>, Failure> {
    if p.is_null() {
        return Ok(None);
    }
    // SAFETY: non-NULL, and the caller promises a NUL-terminated string.
    let s = unsafe { CStr::from_ptr(p) };
    let s = s
        .to_str()
        .map_err(|e| Failure::invalid(format!("{field} is not valid UTF-8: {e}")))?;
    if s.is_empty() {
        return Err(Failure::invalid(format!(
            "{field} is empty (use NULL for none)"
        )));
    }
    Ok(Some(s.to_owned()))
}

/// The options, checked and copied out of the caller's struct.
struct Request {
    input: String,
    zip: Option<String>,
    hprof: Option<String>,
    options: ShrinkOptions,
}

impl Request {
    /// # Safety
    /// `p` is NULL or points to an `hprof_shrink_options` whose pointers are NULL or valid
    /// as documented in the header.
    unsafe fn read(p: *const hprof_shrink_options) -> Result<Request, Failure> {
        if p.is_null() {
            return Err(Failure::invalid("options is NULL"));
        }
        // SAFETY: non-NULL; every version of the struct starts with `struct_size`, so this
        // read stays inside whatever struct the caller has.
        let size = unsafe { p.cast::<usize>().read_unaligned() };
        let ours = std::mem::size_of::<hprof_shrink_options>();
        let mut older = options_defaults();
        let o = if size == ours {
            // SAFETY: the struct is as large as ours, so it is ours.
            unsafe { &*p }
        } else if size == OPTIONS_SIZE_V1 {
            // The earlier struct: its fields, then this version's defaults.
            // SAFETY: the caller's struct holds `size` bytes, a prefix of ours.
            unsafe {
                std::ptr::copy_nonoverlapping(
                    p.cast::<u8>(),
                    (&raw mut older).cast::<u8>(),
                    OPTIONS_SIZE_V1,
                );
            }
            &older
        } else {
            return Err(Failure::invalid(format!(
                "options->struct_size is {size}, this library's hprof_shrink_options is {ours} bytes (or {OPTIONS_SIZE_V1}, the struct before private_package): fill it with hprof_shrink_options_init from the header of this version"
            )));
        };
        // SAFETY (each opt_str below): the fields are NULL or NUL-terminated strings, as
        // the header requires.
        let input = unsafe { opt_str(o.input_path, "options->input_path") }?
            .ok_or_else(|| Failure::invalid("options->input_path is NULL"))?;
        let zip = unsafe { opt_str(o.zip_path, "options->zip_path") }?;
        let hprof = unsafe { opt_str(o.hprof_path, "options->hprof_path") }?;
        let strip = match o.strip {
            HPROF_SHRINK_STRIP_BITMAPS => StripMode::Bitmaps,
            HPROF_SHRINK_STRIP_DUPLICATES => StripMode::Duplicates,
            HPROF_SHRINK_STRIP_STRINGS => StripMode::Strings,
            HPROF_SHRINK_STRIP_NONE => StripMode::None,
            n => {
                return Err(Failure::invalid(format!(
                    "options->strip is {n}, not one of HPROF_SHRINK_STRIP_*"
                )))
            }
        };
        let dropped = match o.dropped {
            HPROF_SHRINK_DROPPED_REMOVE => DroppedMode::Remove,
            HPROF_SHRINK_DROPPED_EMPTY => DroppedMode::Empty,
            HPROF_SHRINK_DROPPED_ZERO => DroppedMode::Zero,
            n => {
                return Err(Failure::invalid(format!(
                    "options->dropped is {n}, not one of HPROF_SHRINK_DROPPED_*"
                )))
            }
        };
        let level = u32::try_from(o.level)
            .ok()
            .filter(|l| *l <= 9)
            .ok_or_else(|| Failure::invalid(format!("options->level is {}, not 0-9", o.level)))?;
        let manifest = ManifestValues {
            sdk_version: unsafe { opt_str(o.sdk_version, "options->sdk_version") }?,
            manufacturer: unsafe { opt_str(o.manufacturer, "options->manufacturer") }?,
            leaked_activity_key: unsafe {
                opt_str(o.leaked_activity_key, "options->leaked_activity_key")
            }?,
        };
        // SAFETY: `extra` holds `extra_count` properties, as the header requires.
        let extra = unsafe { read_extra(o.extra, o.extra_count) }?;
        let hprof_entry = unsafe { opt_str(o.hprof_entry, "options->hprof_entry") }?;
        let threads = usize::try_from(o.threads)
            .ok()
            .filter(|t| *t <= crate::MAX_THREADS)
            .ok_or_else(|| {
                Failure::invalid(format!(
                    "options->threads is {}, not 0 (one per core) to {}",
                    o.threads,
                    crate::MAX_THREADS
                ))
            })?;
        Ok(Request {
            input,
            zip,
            hprof,
            options: ShrinkOptions {
                strip,
                dropped,
                level,
                manifest,
                extra,
                hprof_entry,
                threads,
                salvage: o.salvage != 0,
                private: o.private_package != 0,
            },
        })
    }
}

/// # Safety
/// `p` is NULL (then `count` must be 0) or points to `count` properties whose strings are
/// NULL or NUL-terminated.
unsafe fn read_extra(
    p: *const hprof_shrink_property,
    count: usize,
) -> Result<Vec<(String, String)>, Failure> {
    if count == 0 {
        return Ok(Vec::new());
    }
    if p.is_null() {
        return Err(Failure::invalid(format!(
            "options->extra is NULL but options->extra_count is {count}"
        )));
    }
    // A slice may not span more than isize::MAX bytes; no real array comes near.
    if count > isize::MAX as usize / std::mem::size_of::<hprof_shrink_property>() {
        return Err(Failure::invalid(format!(
            "options->extra_count is {count}: larger than any array"
        )));
    }
    // SAFETY: non-NULL, `count` elements as the caller promises, size checked above.
    let props = unsafe { std::slice::from_raw_parts(p, count) };
    props
        .iter()
        .enumerate()
        .map(|(i, prop)| {
            // SAFETY: the strings are NULL or NUL-terminated, as the header requires.
            let key = unsafe { opt_str(prop.key, &format!("options->extra[{i}].key")) }?;
            let value = unsafe { opt_str_allow_empty(prop.value) }
                .map_err(|e| Failure::invalid(format!("options->extra[{i}].value {e}")))?;
            match (key, value) {
                (Some(k), Some(v)) => Ok((k, v)),
                (None, _) => Err(Failure::invalid(format!("options->extra[{i}].key is NULL"))),
                (_, None) => Err(Failure::invalid(format!(
                    "options->extra[{i}].value is NULL"
                ))),
            }
        })
        .collect()
}

/// Like [`opt_str`] but an empty string is a value (an extra property may be empty).
///
/// # Safety
/// As for [`opt_str`].
unsafe fn opt_str_allow_empty(p: *const c_char) -> Result<Option<String>, String> {
    if p.is_null() {
        return Ok(None);
    }
    // SAFETY: non-NULL and NUL-terminated, as the caller promises.
    let s = unsafe { CStr::from_ptr(p) };
    s.to_str()
        .map(|s| Some(s.to_owned()))
        .map_err(|e| format!("is not valid UTF-8: {e}"))
}

fn stage_code(stage: Stage) -> hprof_shrink_stage {
    match stage {
        Stage::Info => HPROF_SHRINK_STAGE_INFO,
        Stage::Collect => HPROF_SHRINK_STAGE_COLLECT,
        Stage::Resolve => HPROF_SHRINK_STAGE_RESOLVE,
        Stage::Dedup => HPROF_SHRINK_STAGE_DEDUP,
        Stage::Write => HPROF_SHRINK_STAGE_WRITE,
        Stage::Read => HPROF_SHRINK_STAGE_READ,
    }
}

/// The caller's callback and its `user_data`, bound to the calling thread. The core's
/// worker threads report too; their reports are dropped. The calling thread walks its share
/// of each parallel stage and its reports carry the count of all threads, so the caller
/// still sees the stages advance, less often, and each walk ends with a report of its own.
struct CallerProgress {
    f: unsafe extern "C" fn(*mut c_void, hprof_shrink_stage, u64, u64),
    user_data: *mut c_void,
    thread: ThreadId,
}

// SAFETY: `Control` asks for a `Sync` callback because the core reports from its worker
// threads; `call` passes `user_data` to `f` only on the thread that called
// `hprof_shrink_job_run` (the header promises that thread), so sharing this value never
// moves the caller's pointer to another thread.
unsafe impl Sync for CallerProgress {}

impl CallerProgress {
    fn call(&self, p: Progress) {
        if thread::current().id() != self.thread {
            return;
        }
        // SAFETY: the caller gave a valid function and the `user_data` it expects, and
        // this is the thread it called from.
        unsafe { (self.f)(self.user_data, stage_code(p.stage), p.done, p.total) }
    }
}

#[cfg(test)]
thread_local! {
    /// Makes the next run on this thread panic inside the shrink, to test the boundary.
    static PANIC_IN_RUN: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// The shrink itself, with owned, checked arguments.
///
/// # Safety
/// As for `hprof_shrink_job_run`.
unsafe fn run(
    job: &hprof_shrink_job,
    options: *const hprof_shrink_options,
    progress: hprof_shrink_progress_fn,
    user_data: *mut c_void,
) -> Result<CString, Failure> {
    // SAFETY: the caller's promise about `options`, passed on.
    let req = unsafe { Request::read(options) }?;
    #[cfg(test)]
    if PANIC_IN_RUN.with(|p| p.replace(false)) {
        panic!("injected by a test");
    }
    // Cancelled before the start: no file is opened or created.
    if job.cancel.load(Ordering::Relaxed) {
        return Err(Failure::from_error(Error::Cancelled, &req.input));
    }
    let caller = progress.map(|f| CallerProgress {
        f,
        user_data,
        thread: thread::current().id(),
    });
    let report_progress = |p: Progress| {
        if let Some(c) = &caller {
            c.call(p);
        }
    };
    let control = Control {
        cancel: Some(&job.cancel),
        progress: caller
            .as_ref()
            .map(|_| &report_progress as &(dyn Fn(Progress) + Sync)),
    };
    let outputs = Outputs {
        zip: req.zip.as_deref().map(Path::new),
        hprof: req.hprof.as_deref().map(Path::new),
    };
    let report = shrink_file(Path::new(&req.input), outputs, &req.options, &control)
        .map_err(|e| Failure::from_error(e, &req.input))?;
    let json = serde_json::to_string(&report)
        .map_err(|e| Failure::internal(format!("serializing the report: {e}")))?;
    // serde_json escapes control characters, so the JSON has no NUL.
    CString::new(json).map_err(|e| Failure::internal(format!("report JSON: {e}")))
}

const VERSION: &CStr =
    match CStr::from_bytes_with_nul(concat!(env!("CARGO_PKG_VERSION"), "\0").as_bytes()) {
        Ok(v) => v,
        Err(_) => panic!("the version has no interior NUL"),
    };

/// The library's version, e.g. "0.1.0" (static; never free it).
#[no_mangle]
pub extern "C" fn hprof_shrink_version() -> *const c_char {
    VERSION.as_ptr()
}

/// The name of a status code ("HPROF_SHRINK_ERR_CANCELLED"), or "unknown status" (static).
#[no_mangle]
pub extern "C" fn hprof_shrink_status_name(status: hprof_shrink_status) -> *const c_char {
    let name: &CStr = match status {
        HPROF_SHRINK_OK => c"HPROF_SHRINK_OK",
        HPROF_SHRINK_ERR_CANCELLED => c"HPROF_SHRINK_ERR_CANCELLED",
        HPROF_SHRINK_ERR_INVALID_ARGUMENT => c"HPROF_SHRINK_ERR_INVALID_ARGUMENT",
        HPROF_SHRINK_ERR_IO => c"HPROF_SHRINK_ERR_IO",
        HPROF_SHRINK_ERR_BAD_INPUT => c"HPROF_SHRINK_ERR_BAD_INPUT",
        HPROF_SHRINK_ERR_INTERNAL => c"HPROF_SHRINK_ERR_INTERNAL",
        HPROF_SHRINK_ERR_BUSY => c"HPROF_SHRINK_ERR_BUSY",
        _ => c"unknown status",
    };
    name.as_ptr()
}

/// The defaults [`hprof_shrink_options_init`] writes.
fn options_defaults() -> hprof_shrink_options {
    let defaults = ShrinkOptions::default();
    hprof_shrink_options {
        struct_size: std::mem::size_of::<hprof_shrink_options>(),
        input_path: std::ptr::null(),
        zip_path: std::ptr::null(),
        hprof_path: std::ptr::null(),
        strip: HPROF_SHRINK_STRIP_BITMAPS,
        dropped: HPROF_SHRINK_DROPPED_REMOVE,
        level: defaults.level as i32,
        sdk_version: std::ptr::null(),
        manufacturer: std::ptr::null(),
        leaked_activity_key: std::ptr::null(),
        extra: std::ptr::null(),
        extra_count: 0,
        hprof_entry: std::ptr::null(),
        threads: 0,
        salvage: 0,
        private_package: 0,
        reserved: 0,
    }
}

/// Fills `options` with the defaults: `struct_size` set, strip bitmaps, dropped remove,
/// level 6, threads 0 (one per core), no salvage, not private, every pointer NULL. Returns `HPROF_SHRINK_ERR_INVALID_ARGUMENT` for NULL.
///
/// # Safety
/// `options` is NULL or points to writable memory for one `hprof_shrink_options`.
#[no_mangle]
pub unsafe extern "C" fn hprof_shrink_options_init(
    options: *mut hprof_shrink_options,
) -> hprof_shrink_status {
    guard(HPROF_SHRINK_ERR_INTERNAL, || {
        if options.is_null() {
            return HPROF_SHRINK_ERR_INVALID_ARGUMENT;
        }
        let value = options_defaults();
        // SAFETY: non-NULL and writable as the caller promises; `write` does not read the
        // old (possibly uninitialized) contents.
        unsafe { options.write(value) };
        HPROF_SHRINK_OK
    })
}

/// A new job, not cancelled, with no report. Free it with `hprof_shrink_job_free`.
/// Returns NULL only if the library failed internally.
#[no_mangle]
pub extern "C" fn hprof_shrink_job_new() -> *mut hprof_shrink_job {
    guard(std::ptr::null_mut(), || {
        Box::into_raw(Box::new(hprof_shrink_job {
            cancel: AtomicBool::new(false),
            running: AtomicBool::new(false),
            outcome: Mutex::new(Outcome::default()),
        }))
    })
}

/// Asks the job to stop: a run in progress returns `HPROF_SHRINK_ERR_CANCELLED` within a
/// few MiB of input and leaves no output file; later runs of this job return it at once
/// (create a new job for the next shrink). Thread-safe: may be called from any thread, and
/// from the progress callback, at any time until `hprof_shrink_job_free`. NULL is ignored.
///
/// # Safety
/// `job` is NULL or a job from `hprof_shrink_job_new` not yet freed.
#[no_mangle]
pub unsafe extern "C" fn hprof_shrink_job_cancel(job: *const hprof_shrink_job) {
    guard((), || {
        // SAFETY: NULL or a live job, as the caller promises; only shared access is made,
        // so a run on another thread may hold its own shared reference meanwhile.
        if let Some(job) = unsafe { job.as_ref() } {
            job.cancel.store(true, Ordering::Relaxed);
        }
    })
}

/// Shrinks `options->input_path` into the outputs the options name, on the calling thread.
/// `progress` (may be NULL) is called with `user_data` on this thread. Returns
/// `HPROF_SHRINK_OK` (the report is then available from `hprof_shrink_job_report_json`)
/// or an error code (the message from `hprof_shrink_job_error_message`). On any error, and
/// on cancellation, no file is left at an output path; the input is never written to.
///
/// # Safety
/// `job` is NULL or a live job; `options` is NULL or points to an initialized
/// `hprof_shrink_options` whose strings stay valid until the call returns; `progress`,
/// when not NULL, is a function that can be called with `user_data`.
#[no_mangle]
pub unsafe extern "C" fn hprof_shrink_job_run(
    job: *mut hprof_shrink_job,
    options: *const hprof_shrink_options,
    progress: hprof_shrink_progress_fn,
    user_data: *mut c_void,
) -> hprof_shrink_status {
    guard(HPROF_SHRINK_ERR_INTERNAL, || {
        // SAFETY: NULL or a live job. Only a shared reference is taken: another thread may
        // be calling hprof_shrink_job_cancel on the same job meanwhile.
        let Some(job) = (unsafe { job.cast_const().as_ref() }) else {
            return HPROF_SHRINK_ERR_INVALID_ARGUMENT;
        };
        if job.running.swap(true, Ordering::Acquire) {
            return HPROF_SHRINK_ERR_BUSY;
        }
        let _running = Running(&job.running);
        job.set_outcome(Outcome::default());
        // SAFETY: the caller's promises about `options`, `progress` and `user_data`.
        let result = catch_unwind(AssertUnwindSafe(|| unsafe {
            run(job, options, progress, user_data)
        }))
        .unwrap_or_else(|payload| Err(Failure::panic("hprof_shrink_job_run", &*payload)));
        match result {
            Ok(json) => {
                job.set_outcome(Outcome {
                    report_json: Some(json),
                    error: None,
                });
                HPROF_SHRINK_OK
            }
            Err(f) => {
                job.set_outcome(Outcome {
                    report_json: None,
                    error: Some(c_string(f.message)),
                });
                f.status
            }
        }
    })
}

/// The report of the job's last successful run as JSON (the schema of the CLI's
/// `--report`), or NULL when the last run failed, none ran or `job` is NULL. Owned by the
/// job: valid until the next `hprof_shrink_job_run` on it or `hprof_shrink_job_free`.
///
/// # Safety
/// `job` is NULL or a live job not running on another thread.
#[no_mangle]
pub unsafe extern "C" fn hprof_shrink_job_report_json(
    job: *const hprof_shrink_job,
) -> *const c_char {
    guard(std::ptr::null(), || {
        // SAFETY: NULL or a live job, as the caller promises.
        unsafe { job.as_ref() }.map_or(std::ptr::null(), |job| {
            job.with_outcome(|o| {
                o.report_json
                    .as_ref()
                    .map_or(std::ptr::null(), |s| s.as_ptr())
            })
        })
    })
}

/// What went wrong in the job's last run (one line, UTF-8), or NULL when it succeeded, none
/// ran or `job` is NULL (a run with a NULL job has nowhere to leave a message). Owned by
/// the job: valid until the next `hprof_shrink_job_run` on it or `hprof_shrink_job_free`.
///
/// # Safety
/// `job` is NULL or a live job not running on another thread.
#[no_mangle]
pub unsafe extern "C" fn hprof_shrink_job_error_message(
    job: *const hprof_shrink_job,
) -> *const c_char {
    guard(std::ptr::null(), || {
        // SAFETY: NULL or a live job, as the caller promises.
        unsafe { job.as_ref() }.map_or(std::ptr::null(), |job| {
            job.with_outcome(|o| o.error.as_ref().map_or(std::ptr::null(), |s| s.as_ptr()))
        })
    })
}

/// Frees a job and the strings it owns. NULL is ignored.
///
/// # Safety
/// `job` is NULL or a job from `hprof_shrink_job_new`, not running, not used afterwards
/// (no thread may still cancel it).
#[no_mangle]
pub unsafe extern "C" fn hprof_shrink_job_free(job: *mut hprof_shrink_job) {
    guard((), || {
        if !job.is_null() {
            // SAFETY: made by Box::into_raw in hprof_shrink_job_new and, as the caller
            // promises, freed once and no longer used.
            drop(unsafe { Box::from_raw(job) });
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hprof::FormatError;

    #[test]
    fn a_panic_inside_a_run_becomes_the_internal_status_with_a_message() {
        let input = c"in.hprof";
        let zip = c"out.zip";
        let job = hprof_shrink_job_new();
        let mut o = std::mem::MaybeUninit::<hprof_shrink_options>::uninit();
        // SAFETY: writable memory for one struct; init fills every field.
        let mut o = unsafe {
            assert_eq!(hprof_shrink_options_init(o.as_mut_ptr()), HPROF_SHRINK_OK);
            o.assume_init()
        };
        o.input_path = input.as_ptr();
        o.zip_path = zip.as_ptr();
        PANIC_IN_RUN.with(|p| p.set(true));
        // SAFETY: a live job and initialized options with valid strings.
        let status = unsafe { hprof_shrink_job_run(job, &o, None, std::ptr::null_mut()) };
        assert_eq!(status, HPROF_SHRINK_ERR_INTERNAL);
        // SAFETY: the job is live and not running.
        let msg = unsafe { CStr::from_ptr(hprof_shrink_job_error_message(job)) };
        let msg = msg.to_str().unwrap();
        assert!(
            msg.contains("panic in hprof_shrink_job_run") && msg.contains("injected by a test"),
            "{msg}"
        );
        // The job is usable again: the running flag was cleared despite the panic.
        // SAFETY: as above.
        let status = unsafe { hprof_shrink_job_run(job, &o, None, std::ptr::null_mut()) };
        assert_eq!(status, HPROF_SHRINK_ERR_IO, "in.hprof does not exist");
        // SAFETY: made by hprof_shrink_job_new, not used afterwards.
        unsafe { hprof_shrink_job_free(job) };
    }

    #[test]
    fn guard_turns_a_panic_into_the_given_value() {
        assert_eq!(guard(7, || panic!("boom")), 7);
        assert_eq!(guard(7, || 3), 3);
    }

    #[test]
    fn every_core_error_kind_has_the_documented_status() {
        use std::io;
        let cases = [
            (Error::Cancelled, HPROF_SHRINK_ERR_CANCELLED),
            (
                Error::Invalid("x".into()),
                HPROF_SHRINK_ERR_INVALID_ARGUMENT,
            ),
            (
                Error::Write(io::Error::other("disk full")),
                HPROF_SHRINK_ERR_IO,
            ),
            (
                FormatError::NotHprof { reason: "x".into() }.into(),
                HPROF_SHRINK_ERR_BAD_INPUT,
            ),
            (
                FormatError::UnknownSubTag { offset: 1, tag: 9 }.into(),
                HPROF_SHRINK_ERR_BAD_INPUT,
            ),
            (Error::Zip("x".into()), HPROF_SHRINK_ERR_INTERNAL),
        ];
        for (e, status) in cases {
            assert_eq!(status_of(&e), status, "{e}");
        }
    }

    #[test]
    fn messages_with_interior_nul_stay_readable() {
        assert_eq!(c_string("a\0b".into()).to_str().unwrap(), "a\\0b");
    }
}
