//! Progress reports and cancellation for long walks over a dump. A phone cancels a shrink
//! when the app returns to the foreground; a terminal shows a progress bar.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use serde::Serialize;

use crate::error::{Error, Result};

/// The stage a progress report belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Stage {
    /// Pass 1: strings, classes and field layouts.
    Info,
    /// Pass 2: String values and Bitmap buffers to keep.
    Collect,
    /// Pass 2, again over the part of the file before a late reference, when needed.
    Resolve,
    /// Pass 2: hashing and comparing Bitmap buffers of equal length.
    Dedup,
    /// Pass 3: writing the shrunk dump.
    Write,
    /// Reading a dump to inspect or verify it.
    Read,
}

impl Stage {
    /// The stage's name on a progress bar (`pass 2/3: collect`).
    pub fn label(self) -> &'static str {
        match self {
            Stage::Info => "pass 1/3: info",
            Stage::Collect => "pass 2/3: collect",
            Stage::Resolve => "pass 2/3: resolve",
            Stage::Dedup => "pass 2/3: dedup",
            Stage::Write => "pass 3/3: write",
            Stage::Read => "read",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
/// How far a stage has come.
pub struct Progress {
    /// The stage.
    pub stage: Stage,
    /// Bytes of the input done in this stage.
    pub done: u64,
    /// Bytes of the input this stage walks.
    pub total: u64,
}

/// What the caller passes down: a cancellation flag another thread may set, and a progress
/// callback. Both optional.
#[derive(Clone, Copy, Default)]
pub struct Control<'c> {
    /// Set by another thread (or a signal handler) to stop the work: it then fails with [`Error::Cancelled`] and leaves no output.
    pub cancel: Option<&'c AtomicBool>,
    /// Called now and then with the progress of the stage under way, from any thread.
    pub progress: Option<&'c (dyn Fn(Progress) + Sync)>,
}

impl<'c> Control<'c> {
    /// Whether the cancellation flag is set.
    pub fn is_cancelled(&self) -> bool {
        self.cancel.is_some_and(|c| c.load(Ordering::Relaxed))
    }

    /// [`Error::Cancelled`] once the flag is set.
    pub fn check(&self) -> Result<()> {
        if self.is_cancelled() {
            Err(Error::Cancelled)
        } else {
            Ok(())
        }
    }

    /// A ticker for `stage`, which walks `total` bytes.
    pub fn ticker(&self, stage: Stage, total: u64) -> Ticker<'c> {
        Ticker {
            control: *self,
            stage,
            total,
            next: 0,
            shared: None,
        }
    }

    /// A ticker for one of several threads walking parts of the same stage: each adds what
    /// it has done to `done`, and reports the sum.
    pub fn shared_ticker(
        &self,
        stage: Stage,
        total: u64,
        done: &'c AtomicU64,
        start: u64,
    ) -> Ticker<'c> {
        Ticker {
            control: *self,
            stage,
            total,
            next: start,
            shared: Some((done, start)),
        }
    }
}

/// Reports progress and checks for cancellation every few MiB of input, so the check costs
/// one comparison per record.
pub struct Ticker<'c> {
    control: Control<'c>,
    stage: Stage,
    total: u64,
    next: u64,
    /// For a thread's part of a parallel walk: the stage's shared counter and the offset
    /// up to which this thread has counted.
    shared: Option<(&'c AtomicU64, u64)>,
}

const TICK_BYTES: u64 = 4 << 20;

impl Ticker<'_> {
    #[inline]
    /// `done` bytes of the stage are done: reports progress every few MiB, and fails once cancelled.
    pub fn tick(&mut self, done: u64) -> Result<()> {
        if done < self.next {
            return Ok(());
        }
        self.next = done + TICK_BYTES;
        let done = self.count(done);
        self.report(done)
    }

    /// Adds this thread's progress up to `offset` to the shared count; returns the total.
    fn count(&mut self, offset: u64) -> u64 {
        match &mut self.shared {
            Some((sum, counted)) => {
                let delta = offset.saturating_sub(*counted);
                *counted = offset.max(*counted);
                sum.fetch_add(delta, Ordering::Relaxed) + delta
            }
            None => offset,
        }
    }

    /// Reports the end of the stage (or of this thread's part, ending at `end`).
    pub fn finish_at(&mut self, end: u64) -> Result<()> {
        let done = self.count(end);
        self.report(done)
    }

    /// Reports the end of the stage.
    pub fn finish(&mut self) -> Result<()> {
        self.finish_at(self.total)
    }

    fn report(&self, done: u64) -> Result<()> {
        self.control.check()?;
        if let Some(p) = self.control.progress {
            p(Progress {
                stage: self.stage,
                done: done.min(self.total),
                total: self.total,
            });
        }
        Ok(())
    }
}

/// The walks of the format layer report to a ticker, and stop with [`Error::Cancelled`].
impl crate::hprof::Tick for Ticker<'_> {
    type Error = Error;

    #[inline]
    fn tick(&mut self, offset: u64) -> Result<()> {
        Ticker::tick(self, offset)
    }

    fn finish_at(&mut self, end: u64) -> Result<()> {
        Ticker::finish_at(self, end)
    }
}
