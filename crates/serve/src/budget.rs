//! What one package may cost the server, and how a job that failed by a passing fault is
//! tried again: the analysis's memory and wall-clock time (it runs in a child process
//! held to them, [`super::background`]), how far a package's hprof may inflate and how
//! much of the data disk must stay free (receiving and analyzing alike), the backoff
//! between attempts. One struct, so that a server's limits are set and read in one place.

use std::path::{Path, PathBuf};
use std::time::Duration;

use hprof_shrink_core::space::Unpack;

/// The most memory one analysis may allocate by default: the analyzer's peak is under
/// half the dump on object-heavy dumps, so a dump of about 8 GB.
pub const DEFAULT_ANALYSIS_MEMORY: u64 = 4 << 30;

/// The longest one analysis may run by default (wall clock; analyses run at the lowest
/// priority, so a busy server's are slower than `analyze`'s ~2 s per GB).
pub const DEFAULT_ANALYSIS_TIME: Duration = Duration::from_secs(600);

/// A package's hprof may inflate to this many times `--max-bytes` by default: 16 GiB with
/// the default 1 GiB; heap dumps deflate 3-10 times, a zip bomb a thousand.
pub const DEFAULT_INFLATED_RATIO: u64 = 16;

/// Bytes kept free on the data disk by default: uploads and analyses that would leave
/// less are refused (507) or put off, so the database can always write.
pub const DEFAULT_KEEP_FREE: u64 = 1 << 30;

/// The wait before a job failed by a passing fault is tried again, by default; four times
/// that before its third attempt.
pub const DEFAULT_BACKOFF: Duration = Duration::from_secs(30);

/// The longest wait between attempts, whatever the backoff.
const MAX_BACKOFF: Duration = Duration::from_secs(3600);

/// What one package's analysis may cost, and how soon a failed one is tried again.
#[derive(Debug, Clone)]
pub struct Budget {
    /// The executable analyses run in (`ANALYZER __analyze-job DIR`): the CLI's own
    /// (`std::env::current_exe`), the built binary in tests.
    pub analyzer: PathBuf,
    /// The most an analysis may allocate (its process's RLIMIT_DATA: heap and thread
    /// stacks, not the mapped dump). Past it the analysis fails, and its job with it.
    pub analysis_memory: u64,
    /// The longest an analysis may run; past it its process is killed and the job fails.
    pub analysis_time: Duration,
    /// A package's hprof may inflate to at most this many times `--max-bytes`.
    pub inflated_ratio: u64,
    /// Bytes to keep free on the data disk.
    pub keep_free: u64,
    /// See [`DEFAULT_BACKOFF`].
    pub backoff: Duration,
}

impl Budget {
    /// The defaults, analyses run by `analyzer`.
    pub fn new(analyzer: PathBuf) -> Budget {
        Budget {
            analyzer,
            analysis_memory: DEFAULT_ANALYSIS_MEMORY,
            analysis_time: DEFAULT_ANALYSIS_TIME,
            inflated_ratio: DEFAULT_INFLATED_RATIO,
            keep_free: DEFAULT_KEEP_FREE,
            backoff: DEFAULT_BACKOFF,
        }
    }

    /// The most a package's hprof may inflate to, with packages of up to `max_bytes`.
    pub fn max_inflated(&self, max_bytes: u64) -> u64 {
        max_bytes.saturating_mul(self.inflated_ratio.max(1))
    }

    /// The bounds of inflating a package's hprof into `tmp` (to verify or analyze it).
    pub fn unpack(&self, max_bytes: u64, tmp: &Path) -> Unpack {
        Unpack {
            max_bytes: Some(self.max_inflated(max_bytes)),
            keep_free: self.keep_free,
            dir: Some(tmp.to_path_buf()),
        }
    }

    /// The wait after attempt `attempt` (1 for the first) failed by a passing fault:
    /// the backoff, four times longer after each attempt, at most an hour.
    pub fn backoff_after(&self, attempt: i64) -> Duration {
        let steps = attempt.clamp(1, 8) as u32 - 1;
        self.backoff
            .saturating_mul(4u32.pow(steps))
            .min(MAX_BACKOFF.max(self.backoff))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_grows_four_times_and_stops_at_an_hour() {
        let b = Budget::new(PathBuf::from("x"));
        assert_eq!(b.backoff_after(1), Duration::from_secs(30));
        assert_eq!(b.backoff_after(2), Duration::from_secs(120));
        assert_eq!(b.backoff_after(3), Duration::from_secs(480));
        assert_eq!(b.backoff_after(100), MAX_BACKOFF);
        assert_eq!(b.backoff_after(0), Duration::from_secs(30));
        assert_eq!(b.max_inflated(1 << 30), 16 << 30);
        assert_eq!(b.max_inflated(u64::MAX), u64::MAX);
    }
}
