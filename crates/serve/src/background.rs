//! The threads analyses run on: a pool of their own whose threads the system schedules
//! after everything else of the process. A server receives and analyzes on the same
//! cores, and a client waiting for its upload's answer should not wait behind a
//! background analysis that nobody is waiting for; analyses take what the receiving
//! leaves, and all of it when nothing is received.

/// Niceness of the analysis threads: the least favoured there is.
pub const NICE: i32 = 19;

/// A pool of one thread per core, each lowered to [`NICE`] as it starts (on Linux, where
/// the niceness is a thread's own; elsewhere they keep the process's).
pub fn pool() -> std::io::Result<rayon::ThreadPool> {
    rayon::ThreadPoolBuilder::new()
        .thread_name(|i| format!("analysis-{i}"))
        .start_handler(|_| lower())
        .build()
        .map_err(std::io::Error::other)
}

/// Lowers the calling thread's priority. A failure leaves it as it was: slower uploads
/// beside analyses, nothing worse.
fn lower() {
    #[cfg(target_os = "linux")]
    // SAFETY: plain system calls on the calling thread's own id.
    unsafe {
        let tid = libc::gettid();
        libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, NICE);
    }
}

/// The calling thread's niceness (Linux).
#[cfg(all(test, target_os = "linux"))]
fn niceness() -> i32 {
    // SAFETY: plain system calls on the calling thread's own id.
    unsafe { libc::getpriority(libc::PRIO_PROCESS, libc::gettid() as libc::id_t) }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;
    use rayon::prelude::*;

    #[test]
    fn analyses_run_at_the_lowest_priority_and_the_rest_of_the_process_does_not() {
        let before = niceness();
        let pool = pool().unwrap();
        // The closure itself, and every thread a parallel step inside it uses.
        let inside: Vec<i32> = pool.install(|| {
            let mut all = vec![niceness()];
            all.extend(
                (0..64)
                    .into_par_iter()
                    .map(|_| niceness())
                    .collect::<Vec<_>>(),
            );
            all
        });
        assert!(inside.iter().all(|&n| n == NICE), "{inside:?}");
        assert_eq!(niceness(), before, "the calling thread was lowered too");
    }
}
