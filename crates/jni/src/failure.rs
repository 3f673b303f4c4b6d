//! Why a run failed, and how it reaches Java: a `dev.hprofshrink.HprofShrinkException`
//! with its kind, message and, for bad input, the byte offset and record tag.

use std::any::Any;
use std::panic::{catch_unwind, AssertUnwindSafe};

use hprof_shrink_core::{Error, ErrorKind, Tag};
use jni::errors::ErrorPolicy;
use jni::objects::JThrowable;
use jni::{jni_sig, jni_str, Env, JValue};

/// What a native method failed with.
#[derive(Debug, thiserror::Error)]
pub enum Failure {
    /// The shrink failed, or its arguments could not work.
    #[error("{message}")]
    Shrink {
        /// Whose fault.
        kind: ErrorKind,
        /// One line.
        message: String,
        /// Byte offset in the dump of the damage, for bad input.
        offset: Option<u64>,
        /// Its record or sub-record tag.
        tag: Option<Tag>,
    },
    /// A JNI call failed (a Java exception may be pending; it then goes to the caller).
    #[error("JNI: {0}")]
    Jni(#[from] jni::errors::Error),
}

impl Failure {
    /// A failure of the caller's arguments.
    pub fn invalid(message: impl Into<String>) -> Failure {
        Failure::plain(ErrorKind::InvalidArgument, message.into())
    }

    /// A bug here.
    pub fn internal(message: impl Into<String>) -> Failure {
        Failure::plain(ErrorKind::Internal, message.into())
    }

    fn plain(kind: ErrorKind, message: String) -> Failure {
        Failure::Shrink {
            kind,
            message,
            offset: None,
            tag: None,
        }
    }

    /// The core's error; bad input's message names the input (its text gives only an
    /// offset), I/O errors already name their file.
    pub fn from_error(e: Error, input: &str) -> Failure {
        let kind = e.kind();
        let message = if kind == ErrorKind::BadInput {
            format!("{input}: {e}")
        } else {
            e.to_string()
        };
        Failure::Shrink {
            kind,
            message,
            offset: e.offset(),
            tag: e.tag(),
        }
    }

    /// Throws it as an `HprofShrinkException`, unless a Java exception is already pending
    /// (a JNI call's own, which then reaches the caller as it is).
    fn throw(self, env: &mut Env<'_>) -> jni::errors::Result<()> {
        if env.exception_check() {
            return Ok(());
        }
        let (kind, message, offset, tag) = match self {
            Failure::Shrink {
                kind,
                message,
                offset,
                tag,
            } => (kind, message, offset, tag),
            e @ Failure::Jni(_) => (ErrorKind::Internal, e.to_string(), None, None),
        };
        let message = env.new_string(message)?;
        let tag_name = match tag {
            Some(t) => env.new_string(t.to_string())?,
            None => jni::objects::JString::null(),
        };
        let e = env.new_object(
            jni_str!("dev/hprofshrink/HprofShrinkException"),
            jni_sig!("(ILjava/lang/String;JILjava/lang/String;)V"),
            &[
                JValue::Int(kind_code(kind)),
                JValue::Object(&message),
                JValue::Long(offset.and_then(|o| i64::try_from(o).ok()).unwrap_or(-1)),
                JValue::Int(tag.map_or(-1, |t| i32::from(t.value))),
                JValue::Object(&tag_name),
            ],
        )?;
        let e = env.cast_local::<JThrowable>(e)?;
        // `throw` reports the exception it made pending as an error; that is the point.
        let _ = env.throw(e);
        Ok(())
    }
}

/// The `HprofShrinkException.Kind` ordinal of a kind (the Java enum's order).
fn kind_code(kind: ErrorKind) -> i32 {
    match kind {
        ErrorKind::Cancelled => 0,
        ErrorKind::InvalidArgument => 1,
        ErrorKind::Io => 2,
        ErrorKind::BadInput => 3,
        ErrorKind::Internal => 4,
    }
}

fn panic_message(payload: &(dyn Any + Send)) -> &str {
    payload
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("(no message)")
}

/// The error policy of every native method: a failure or a panic becomes an
/// `HprofShrinkException` (kind `INTERNAL` for a panic), the method returns null or 0.
#[derive(Debug)]
pub struct ThrowShrinkException;

impl<T: Default> ErrorPolicy<T, Failure> for ThrowShrinkException {
    type Captures<'unowned_env_local: 'native_method, 'native_method> = ();

    fn on_error<'unowned_env_local: 'native_method, 'native_method>(
        env: &mut Env<'unowned_env_local>,
        _cap: &mut (),
        err: Failure,
    ) -> jni::errors::Result<T> {
        err.throw(env)?;
        Ok(T::default())
    }

    fn on_panic<'unowned_env_local: 'native_method, 'native_method>(
        env: &mut Env<'unowned_env_local>,
        _cap: &mut (),
        payload: Box<dyn Any + Send + 'static>,
    ) -> jni::errors::Result<T> {
        let message = format!("panic in hprof-shrink: {}", panic_message(&*payload));
        // A payload whose own drop panics is leaked rather than let unwind from here.
        if let Err(p) = catch_unwind(AssertUnwindSafe(|| drop(payload))) {
            std::mem::forget(p);
        }
        Failure::internal(message).throw(env)?;
        Ok(T::default())
    }
}
