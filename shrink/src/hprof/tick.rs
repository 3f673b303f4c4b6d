//! What a walk reports to as it goes: its progress through the file, and the chance to stop
//! it. The format layer only calls it; the caller decides what a tick does (the core's
//! `control::Ticker` reports progress and checks for cancellation).

use super::error::FormatError;

/// Told the offset a walk has reached. An error from it stops the walk and becomes the
/// walk's error, so a cancellation surfaces as the caller's own error type.
pub trait Tick {
    /// The walk's error: what the ticker fails with, and what the format's and the
    /// visitor's errors become.
    type Error;

    /// The walk has reached `offset`; called once per record and sub-record, so it must be
    /// cheap when it has nothing to do.
    fn tick(&mut self, offset: u64) -> Result<(), Self::Error>;

    /// The walk's part of the file is done, ending at `end`.
    fn finish_at(&mut self, end: u64) -> Result<(), Self::Error>;
}

/// A walk nobody watches and nothing cancels.
#[derive(Debug, Clone, Copy, Default)]
pub struct Unwatched;

impl Tick for Unwatched {
    type Error = FormatError;

    #[inline]
    fn tick(&mut self, _offset: u64) -> Result<(), Self::Error> {
        Ok(())
    }

    fn finish_at(&mut self, _end: u64) -> Result<(), Self::Error> {
        Ok(())
    }
}
