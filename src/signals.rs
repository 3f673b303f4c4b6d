//! SIGINT, SIGTERM and SIGHUP as a request to stop: the handler only sets a flag, which
//! the shrink passes, the batch workers and the upload check; the work then fails the
//! usual way (temporary files removed, nothing half-written committed) and `main` says
//! "cancelled" and exits 128 + the signal's number, as a shell reports a process killed
//! by it. A second signal of the same kind acts as it would have without us (the handler
//! is reset after the first), so a stuck run can still be stopped.

use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};

static CANCEL: AtomicBool = AtomicBool::new(false);
static SIGNAL: AtomicI32 = AtomicI32::new(0);

/// The flag the handler sets; what the work passes as its cancellation flag.
pub fn flag() -> &'static AtomicBool {
    &CANCEL
}

/// The signal that asked this process to stop, if one did.
pub fn received() -> Option<i32> {
    match SIGNAL.load(Ordering::SeqCst) {
        0 => None,
        n => Some(n),
    }
}

/// What to exit with after signal `n`: 128 + n (130 for SIGINT, 143 for SIGTERM).
pub fn exit_code(n: i32) -> u8 {
    (128 + n).clamp(0, 255) as u8
}

#[cfg(unix)]
extern "C" fn on_signal(n: libc::c_int) {
    // Only atomics: all a signal handler may touch.
    SIGNAL.store(n, Ordering::SeqCst);
    CANCEL.store(true, Ordering::SeqCst);
}

/// Installs the handler for SIGINT, SIGTERM and SIGHUP.
pub fn install() {
    #[cfg(unix)]
    for n in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        // SAFETY: a zeroed sigaction with a handler that only stores atomics, installed
        // before any thread starts; SA_RESETHAND restores the default after one signal.
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
            sa.sa_flags = libc::SA_RESETHAND | libc::SA_RESTART;
            libc::sigemptyset(&mut sa.sa_mask);
            libc::sigaction(n, &sa, std::ptr::null_mut());
        }
    }
}
