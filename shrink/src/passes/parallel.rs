//! Walks over parts of a dump on several threads. A dump is cut at record boundaries into
//! runs of similar size (HotSpot writes 1 MiB segments, ART 4 KiB ones); each thread takes
//! the next run, walks it with a visitor of its own, and the visitors come back in file
//! order for the caller to merge. A dump that is one huge record walks on one thread.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;

use crate::control::{Control, Stage};
use crate::error::{Error, Result};
use crate::hprof::{Hprof, Visitor};

/// Runs per thread: more than one, so a slow run does not leave a core idle.
const RUNS_PER_THREAD: usize = 4;

/// Which runs a walk hands out first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Order {
    /// From the start of the file.
    Forward,
    /// From both ends inward, the last run first (the last, the first, the one before the
    /// last, the second, …): for searches that stop early through [`Visitor::is_done`] and
    /// look for what came before the object naming it. That is mostly late in the file (a
    /// Bitmap's buffer, Matrix's key) or at its very start (Strings the VM made as it
    /// started: thread and enum names).
    Ends,
}

impl Order {
    /// The run handed out `k`-th of `n`.
    fn run(self, k: usize, n: usize) -> usize {
        match self {
            Order::Forward => k,
            Order::Ends if k.is_multiple_of(2) => n - 1 - k / 2,
            Order::Ends => k / 2,
        }
    }
}

/// Walks `hprof` with one visitor per run, made by `make(run index)`; returns the
/// visitors in file order.
pub fn walk<V, F>(
    hprof: &Hprof<'_>,
    threads: usize,
    stage: Stage,
    control: &Control,
    order: Order,
    make: F,
) -> Result<Vec<V>>
where
    V: Visitor + Send,
    Error: From<V::Error>,
    F: Fn(usize) -> V + Sync,
{
    let threads = threads.max(1);
    let runs = if threads == 1 {
        std::iter::once(0..hprof.len()).collect()
    } else {
        hprof.split(threads * RUNS_PER_THREAD)?
    };
    let next = AtomicUsize::new(0);
    let done = AtomicU64::new(0);
    let results: Mutex<Vec<Option<Result<V>>>> =
        Mutex::new((0..runs.len()).map(|_| None).collect());
    let work = || loop {
        let k = next.fetch_add(1, Ordering::Relaxed);
        if k >= runs.len() {
            return;
        }
        let i = order.run(k, runs.len());
        let range = &runs[i];
        let mut visitor = make(i);
        let mut ticker = control.shared_ticker(stage, hprof.len(), &done, range.start);
        let r = hprof
            .accept_range(range.clone(), &mut visitor, &mut ticker)
            .map(|()| visitor);
        let stop = match &r {
            Err(_) => true,
            Ok(v) => v.is_done(),
        };
        results.lock().unwrap_or_else(|e| e.into_inner())[i] = Some(r);
        if stop {
            // An error (reported below), or nothing left to look for.
            next.store(runs.len(), Ordering::Relaxed);
            return;
        }
    };
    std::thread::scope(|s| {
        for _ in 1..threads.min(runs.len()) {
            // A thread the system will not give is one helper fewer, not a failure: the
            // calling thread takes what is left.
            if std::thread::Builder::new().spawn_scoped(s, work).is_err() {
                break;
            }
        }
        work();
    });
    let results = results.into_inner().unwrap_or_else(|e| e.into_inner());
    // The first error in file order wins; runs never started (after an error, or once a
    // search was done) are left out.
    let mut out = Vec::with_capacity(results.len());
    for r in results {
        match r {
            Some(Ok(v)) => out.push(v),
            Some(Err(e)) => return Err(e),
            None => {}
        }
    }
    // The end of the stage, reported from the calling thread, which may have walked no
    // run of its own (callers that take reports on one thread only still see it).
    control.ticker(stage, hprof.len()).finish()?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_order_hands_out_each_run_once() {
        for n in 1..20 {
            for order in [Order::Forward, Order::Ends] {
                let mut seen: Vec<usize> = (0..n).map(|k| order.run(k, n)).collect();
                seen.sort_unstable();
                assert_eq!(seen, (0..n).collect::<Vec<_>>(), "{order:?} of {n}");
            }
        }
        let ends: Vec<usize> = (0..8).map(|k| Order::Ends.run(k, 8)).collect();
        assert_eq!(ends, [7, 0, 6, 1, 5, 2, 4, 3]);
    }
}
