//! Where an upload reports the bytes it sends: a progress bar the caller draws, or nothing.
//! The crate draws nothing itself, so it needs no terminal library; the command line
//! implements [`Meter`] with its bars.

use std::sync::Arc;

/// Makes a [`Transfer`] for each body sent.
pub trait Meter: Send + Sync {
    /// A body of `len` bytes named `name` starts (only bodies of 1 MiB or more are
    /// reported); `None` shows nothing for it.
    fn start(&self, name: &str, len: u64) -> Option<Arc<dyn Transfer>>;
}

/// One body's progress, across its attempts.
pub trait Transfer: Send + Sync {
    /// A new attempt starts: back to 0 bytes.
    fn restart(&self);
    /// `bytes` more were sent.
    fn advance(&self, bytes: u64);
    /// Runs `print` (a log line) with the progress display out of the way, so the line is
    /// not torn by it.
    fn suspend(&self, print: &mut dyn FnMut());
    /// The body is done (sent or given up): the display goes.
    fn finish(&self);
}
