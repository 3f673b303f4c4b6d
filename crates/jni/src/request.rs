//! The job's fields, read once at the start of a run and checked: what to shrink, where
//! to, and how. `dev.hprofshrink.Job` copies them from its `Options` when it is made, so
//! they cannot change under a run.

use hprof_shrink_core::{DroppedMode, ManifestValues, ShrinkOptions, StripMode, MAX_THREADS};
use jni::objects::{JObject, JObjectArray, JString};
use jni::{jni_sig, jni_str, Env};

use crate::failure::Failure;

/// A run's arguments, checked and copied out of the Java object.
pub struct Request {
    /// The dump (never written to).
    pub input: String,
    /// The package to write.
    pub zip: String,
    /// The options, as the CLI's shrink takes them.
    pub options: ShrinkOptions,
}

impl Request {
    /// Reads `job`'s fields (`Job`'s private fields of the same names).
    pub fn read(env: &mut Env<'_>, job: &JObject<'_>) -> Result<Request, Failure> {
        let input = string(env, job, "input")?.ok_or_else(|| Failure::invalid("no input"))?;
        let zip = string(env, job, "output")?.ok_or_else(|| Failure::invalid("no output"))?;
        let strip = match int(env, job, "strip")? {
            0 => StripMode::Bitmaps,
            1 => StripMode::Duplicates,
            2 => StripMode::Strings,
            3 => StripMode::None,
            n => return Err(Failure::invalid(format!("strip mode {n} is not one"))),
        };
        let dropped = match int(env, job, "dropped")? {
            0 => DroppedMode::Remove,
            1 => DroppedMode::Empty,
            2 => DroppedMode::Zero,
            n => return Err(Failure::invalid(format!("dropped mode {n} is not one"))),
        };
        let level = int(env, job, "level")?;
        let level = u32::try_from(level)
            .ok()
            .filter(|l| *l <= 9)
            .ok_or_else(|| Failure::invalid(format!("level is {level}, not 0-9")))?;
        let threads = int(env, job, "threads")?;
        let threads = usize::try_from(threads)
            .ok()
            .filter(|t| *t <= MAX_THREADS)
            .ok_or_else(|| {
                Failure::invalid(format!(
                    "threads is {threads}, not 0 (one per core) to {MAX_THREADS}"
                ))
            })?;
        let salvage = env
            .get_field(job, jni_str!("salvage"), jni_sig!("Z"))?
            .z()?;
        let private = env
            .get_field(job, jni_str!("privatePackage"), jni_sig!("Z"))?
            .z()?;
        let manifest = ManifestValues {
            sdk_version: string(env, job, "sdkVersion")?,
            manufacturer: string(env, job, "manufacturer")?,
            leaked_activity_key: string(env, job, "leakedActivityKey")?,
        };
        // Field by field: the core's options are non-exhaustive (they will grow).
        let mut options = ShrinkOptions::new();
        options.strip = strip;
        options.dropped = dropped;
        options.level = level;
        options.manifest = manifest;
        options.extra = extra(env, job)?;
        options.hprof_entry = string(env, job, "hprofEntry")?;
        options.threads = threads;
        options.salvage = salvage;
        options.private = private;
        Ok(Request {
            input,
            zip,
            options,
        })
    }
}

fn int(env: &mut Env<'_>, job: &JObject<'_>, name: &str) -> Result<i32, Failure> {
    let name = jni::strings::JNIString::from(name);
    Ok(env.get_field(job, &name, jni_sig!("I"))?.i()?)
}

/// A `String` field; null is `None`.
fn string(env: &mut Env<'_>, job: &JObject<'_>, name: &str) -> Result<Option<String>, Failure> {
    let name = jni::strings::JNIString::from(name);
    let value = env
        .get_field(job, &name, jni_sig!("Ljava/lang/String;"))?
        .l()?;
    if value.is_null() {
        return Ok(None);
    }
    let value = env.cast_local::<JString>(value)?;
    Ok(Some(value.try_to_string(env)?))
}

/// The `extra` field: keys and values alternating, in order.
fn extra(env: &mut Env<'_>, job: &JObject<'_>) -> Result<Vec<(String, String)>, Failure> {
    let array = env
        .get_field(job, jni_str!("extra"), jni_sig!("[Ljava/lang/String;"))?
        .l()?;
    let array = env.cast_local::<JObjectArray<JString>>(array)?;
    let len = array.len(env)?;
    let mut pairs = Vec::with_capacity(len / 2);
    for i in (0..len.saturating_sub(1)).step_by(2) {
        let key = array.get_element(env, i)?.try_to_string(env)?;
        if key.is_empty() {
            return Err(Failure::invalid(format!(
                "extra.info key {} is empty",
                i / 2
            )));
        }
        let value = array.get_element(env, i + 1)?.try_to_string(env)?;
        pairs.push((key, value));
    }
    Ok(pairs)
}
