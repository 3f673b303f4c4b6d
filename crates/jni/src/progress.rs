//! Progress reports to the Java listener, on the thread that runs the job only.
//!
//! The core reports from its worker threads too; those reports are dropped (a worker
//! thread is no JNI thread, and the listener is promised one thread). The calling thread
//! walks its share of each parallel stage and its reports carry the count of all threads,
//! so the listener still sees each stage advance, every few MiB.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;
use std::thread::{self, ThreadId};

use hprof_shrink_core::{Progress, Stage};
use jni::objects::JObject;
use jni::refs::Global;
use jni::{jni_sig, jni_str, Env, JValue, JavaVM};

use crate::failure::Failure;

/// Calls `Job.progress(int stage, long done, long total)` on the job's thread.
pub struct JavaProgress<'a> {
    vm: JavaVM,
    job: Global<JObject<'static>>,
    thread: ThreadId,
    cancel: &'a AtomicBool,
    /// The first JNI failure of a call; the run is then cancelled and fails with it.
    failed: OnceLock<String>,
}

impl<'a> JavaProgress<'a> {
    /// For `job`, run on this thread; a failed call sets `cancel`.
    pub fn new(
        env: &mut Env<'_>,
        job: &JObject<'_>,
        cancel: &'a AtomicBool,
    ) -> Result<JavaProgress<'a>, Failure> {
        Ok(JavaProgress {
            vm: env.get_java_vm()?,
            job: env.new_global_ref(job)?,
            thread: thread::current().id(),
            cancel,
            failed: OnceLock::new(),
        })
    }

    /// Reports `p` if this is the job's thread. `Job.progress` catches what the app's
    /// listener throws (and cancels the job itself), so a failure here is JNI's own.
    pub fn call(&self, p: Progress) {
        if thread::current().id() != self.thread || self.failed.get().is_some() {
            return;
        }
        let done = i64::try_from(p.done).unwrap_or(i64::MAX);
        let total = i64::try_from(p.total).unwrap_or(i64::MAX);
        let result = self
            .vm
            .attach_current_thread(|env| -> jni::errors::Result<()> {
                env.call_method(
                    &self.job,
                    jni_str!("progress"),
                    jni_sig!("(IJJ)V"),
                    &[
                        JValue::Int(stage_code(p.stage)),
                        JValue::Long(done),
                        JValue::Long(total),
                    ],
                )?;
                Ok(())
            });
        if let Err(e) = result {
            let _ = self.failed.set(format!("reporting progress: {e}"));
            self.cancel.store(true, Ordering::Relaxed);
        }
    }

    /// The failure that stopped the reports, if one did.
    pub fn failure(&self) -> Result<(), Failure> {
        match self.failed.get() {
            Some(message) => Err(Failure::internal(message.clone())),
            None => Ok(()),
        }
    }
}

/// The `Stage` ordinal of a stage (the Java enum's order).
fn stage_code(stage: Stage) -> i32 {
    match stage {
        Stage::Info => 0,
        Stage::Collect => 1,
        Stage::Resolve => 2,
        Stage::Dedup => 3,
        Stage::Write => 4,
        Stage::Read => 5,
    }
}
