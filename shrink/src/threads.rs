//! Starting worker threads when the system is short of them.

use std::io;
use std::thread::{Builder, Scope, ScopedJoinHandle};
use std::time::Duration;

/// How long to wait before each new try when the system says "try again". Threads that
/// were just joined still count against the process limit until the kernel has released
/// them, so a stage that starts right after the last one ends can be refused for a moment.
const BACKOFF_MS: [u64; 5] = [1, 2, 4, 8, 16];

/// Starts a scoped thread running `make()`, trying again for at most 31 ms while the
/// system answers "resource temporarily unavailable". For the first worker of a stage,
/// whose absence fails the stage; later workers take a refusal as one worker fewer.
pub(crate) fn spawn_first<'scope, 'env, T, F>(
    scope: &'scope Scope<'scope, 'env>,
    make: impl Fn() -> F,
) -> io::Result<ScopedJoinHandle<'scope, T>>
where
    F: FnOnce() -> T + Send + 'scope,
    T: Send + 'scope,
{
    let mut waits = BACKOFF_MS.iter();
    loop {
        match Builder::new().spawn_scoped(scope, make()) {
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => match waits.next() {
                Some(ms) => std::thread::sleep(Duration::from_millis(*ms)),
                None => return Err(e),
            },
            r => return r,
        }
    }
}
