//! The JNI library behind the Java API `dev.hprofshrink` (`android/java/`): the core's shrink
//! for Android apps and any JVM, as `libhprof_shrink_jni.so`. No network: the Java side's
//! outbox uploads with the platform's own HTTP client.
//!
//! The Java class `dev.hprofshrink.Job` owns one cancellation flag (a boxed `AtomicBool`,
//! its address held as a `long`) and calls four native methods: `nativeNew` and
//! `nativeFree` for the flag, `nativeCancel` from any thread, and `nativeRun`, which reads
//! the job's fields, shrinks on the calling thread and returns a `dev.hprofshrink.Report`
//! or throws `dev.hprofshrink.HprofShrinkException`. Every entry point runs inside
//! `EnvUnowned::with_env`, which catches panics: a panic becomes the exception of kind
//! `INTERNAL`, never an unwind into the JVM.

#![warn(missing_docs)]
#![allow(unsafe_code)]

mod failure;
mod progress;
mod request;

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

use hprof_shrink_core::{shrink_file, Control, Error, Outputs, Progress};
use jni::errors::LogErrorAndDefault;
use jni::objects::{JClass, JObject, JString};
use jni::sys::jlong;
use jni::{jni_sig, jni_str, Env, EnvUnowned, JValue};

pub use failure::{Failure, ThrowShrinkException};
use progress::JavaProgress;
use request::Request;

/// The cancellation flag behind a `Job`'s handle.
///
/// # Safety
/// `handle` is 0 or a value from `nativeNew` not yet given to `nativeFree`: the Java class
/// frees it only under its lock, after any run on it has returned, and cancels under the
/// same lock.
unsafe fn flag<'a>(handle: jlong) -> Result<&'a AtomicBool, Failure> {
    let p = handle as usize as *const AtomicBool;
    // SAFETY: NULL or a live Box<AtomicBool>, as the caller promises.
    unsafe { p.as_ref() }.ok_or_else(|| Failure::internal("the job has no handle"))
}

/// `static native String nativeVersion()`: this library's version, e.g. "0.1.0".
#[no_mangle]
pub extern "system" fn Java_dev_hprofshrink_Job_nativeVersion<'caller>(
    mut env: EnvUnowned<'caller>,
    _class: JClass<'caller>,
) -> JString<'caller> {
    env.with_env(|env| -> Result<JString<'caller>, Failure> {
        Ok(env.new_string(env!("CARGO_PKG_VERSION"))?)
    })
    .resolve::<ThrowShrinkException>()
}

/// `static native long nativeNew()`: a new cancellation flag, not set.
#[no_mangle]
pub extern "system" fn Java_dev_hprofshrink_Job_nativeNew<'caller>(
    mut env: EnvUnowned<'caller>,
    _class: JClass<'caller>,
) -> jlong {
    env.with_env(|_| -> Result<jlong, Failure> {
        Ok(Box::into_raw(Box::new(AtomicBool::new(false))) as usize as jlong)
    })
    .resolve::<ThrowShrinkException>()
}

/// `static native void nativeCancel(long handle)`: sets the flag; any thread.
#[no_mangle]
pub extern "system" fn Java_dev_hprofshrink_Job_nativeCancel<'caller>(
    mut env: EnvUnowned<'caller>,
    _class: JClass<'caller>,
    handle: jlong,
) {
    env.with_env(|_| -> Result<(), jni::errors::Error> {
        // SAFETY: the Java class's promise (see `flag`).
        if let Ok(flag) = unsafe { flag(handle) } {
            flag.store(true, Ordering::Relaxed);
        }
        Ok(())
    })
    .resolve::<LogErrorAndDefault>()
}

/// `static native void nativeFree(long handle)`: frees the flag; 0 is ignored.
#[no_mangle]
pub extern "system" fn Java_dev_hprofshrink_Job_nativeFree<'caller>(
    mut env: EnvUnowned<'caller>,
    _class: JClass<'caller>,
    handle: jlong,
) {
    env.with_env(|_| -> Result<(), jni::errors::Error> {
        let p = handle as usize as *mut AtomicBool;
        if !p.is_null() {
            // SAFETY: made by Box::into_raw in nativeNew; the Java class frees it once,
            // after its run, under the lock its cancel takes.
            drop(unsafe { Box::from_raw(p) });
        }
        Ok(())
    })
    .resolve::<LogErrorAndDefault>()
}

/// `native Report nativeRun(long handle)`: shrinks the job's input into its package on
/// this thread; returns the report or throws `HprofShrinkException`.
#[no_mangle]
pub extern "system" fn Java_dev_hprofshrink_Job_nativeRun<'caller>(
    mut env: EnvUnowned<'caller>,
    job: JObject<'caller>,
    handle: jlong,
) -> JObject<'caller> {
    env.with_env(|env| run(env, &job, handle))
        .resolve::<ThrowShrinkException>()
}

fn run<'l>(env: &mut Env<'l>, job: &JObject<'l>, handle: jlong) -> Result<JObject<'l>, Failure> {
    // SAFETY: the Java class's promise (see `flag`); it frees the flag only after this
    // call has returned.
    let cancel = unsafe { flag(handle) }?;
    let req = Request::read(env, job)?;
    #[cfg(feature = "test-hooks")]
    if req
        .options
        .extra
        .iter()
        .any(|(k, _)| k == "hprofShrinkTestPanic")
    {
        panic!("injected by a test");
    }
    // Cancelled before the start: no file is opened or created.
    if cancel.load(Ordering::Relaxed) {
        return Err(Failure::from_error(Error::Cancelled, &req.input));
    }
    let progress = JavaProgress::new(env, job, cancel)?;
    let report_progress = |p: Progress| progress.call(p);
    let control = Control {
        cancel: Some(cancel),
        progress: Some(&report_progress),
    };
    let outputs = Outputs {
        zip: Some(Path::new(&req.zip)),
        hprof: None,
    };
    let result = shrink_file(Path::new(&req.input), outputs, &req.options, &control);
    progress.failure()?;
    let report = result.map_err(|e| Failure::from_error(e, &req.input))?;
    let json = serde_json::to_string(&report)
        .map_err(|e| Failure::internal(format!("serializing the report: {e}")))?;
    let json = env.new_string(json)?;
    let hprof_entry = env.new_string(&report.manifest.hprof_entry)?;
    Ok(env.new_object(
        jni_str!("dev/hprofshrink/Report"),
        jni_sig!("(Ljava/lang/String;Ljava/lang/String;JJJ)V"),
        &[
            JValue::Object(&json),
            JValue::Object(&hprof_entry),
            JValue::Long(to_jlong(report.input.bytes)),
            JValue::Long(to_jlong(report.output.zip_bytes.unwrap_or(0))),
            JValue::Long(to_jlong(report.output.hprof_bytes)),
        ],
    )?)
}

/// A byte count as Java's `long` (no file comes near 2^63 bytes; saturates if one did).
fn to_jlong(n: u64) -> jlong {
    jlong::try_from(n).unwrap_or(jlong::MAX)
}
