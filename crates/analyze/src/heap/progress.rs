//! The index built with its progress told: the walk over the dump is the first long step,
//! and the caller's [`Control`] sees it as the reading of the file's bytes (stage `read`)
//! and may cancel it.

use hprof_shrink_core::hprof::{Hprof, Tick};
use hprof_shrink_core::{Control, Stage};

use super::index::Index;
use crate::base::error::AnalyzeError;

/// The core's ticker, as the index's walk reports its offsets.
struct Ticks<'c>(hprof_shrink_core::control::Ticker<'c>);

impl Tick for Ticks<'_> {
    type Error = AnalyzeError;
    #[inline]
    fn tick(&mut self, offset: u64) -> Result<(), AnalyzeError> {
        Ok(self.0.tick(offset)?)
    }
    fn finish_at(&mut self, end: u64) -> Result<(), AnalyzeError> {
        Ok(self.0.finish_at(end)?)
    }
}

/// The index of `hprof`'s heap dump at `dump` (`None`: of the whole file), built on every
/// thread, its progress told to `control` as the reading of `total` bytes.
pub fn build_index<'a>(
    hprof: &Hprof<'a>,
    total: u64,
    dump: Option<std::ops::Range<u64>>,
    control: &Control<'_>,
) -> Result<Index<'a>, AnalyzeError> {
    let done = std::sync::atomic::AtomicU64::new(0);
    Index::build(hprof, rayon::current_num_threads(), dump, |start| {
        Ticks(control.shared_ticker(Stage::Read, total, &done, start))
    })
}
