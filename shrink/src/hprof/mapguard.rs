//! A mapped input that shrinks under us is an error for that input, not a SIGBUS that kills
//! the process (and, through the C ABI, the app that links us).
//!
//! When another program truncates a file we have mapped (an app re-dumping to the same
//! path, `cp` over a dump), touching a page past the new end raises SIGBUS. Reading through
//! `pread` instead would cost the zero-copy views every pass is built on, so the mapping is
//! kept and guarded: a process-wide SIGBUS handler looks the faulting address up among the
//! guarded mappings and, if it is one of ours, maps a page of zeros over the faulting page
//! and marks that mapping as damaged. The access then completes (reading zeros), the walk
//! goes on or fails on the zeros, and whoever owns the mapping asks [`Guard::damaged`]
//! before trusting any result. A fault anywhere else goes to the handler that was there
//! before (or to the default action, which ends the process as it would have).
//!
//! Linux and Android only; elsewhere a guard does nothing.

#[cfg(any(target_os = "linux", target_os = "android"))]
mod imp {
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    use std::sync::{Once, OnceLock};

    /// Mappings guarded at once (batch workers, up to 256, each hold one or two, and so do
    /// the C ABI's jobs); past that a mapping goes unguarded.
    const SLOTS: usize = 1024;

    struct Slot {
        /// 0 when free. Written last on registration, cleared first on release; the
        /// handler reads `start` again after `end`, so it never pairs an old start with a
        /// new end.
        start: AtomicUsize,
        end: AtomicUsize,
        claimed: AtomicBool,
        damaged: AtomicBool,
    }

    #[allow(clippy::declare_interior_mutable_const)] // the array initializer's element
    const FREE: Slot = Slot {
        start: AtomicUsize::new(0),
        end: AtomicUsize::new(0),
        claimed: AtomicBool::new(false),
        damaged: AtomicBool::new(false),
    };
    static TABLE: [Slot; SLOTS] = [FREE; SLOTS];
    static PAGE: AtomicUsize = AtomicUsize::new(4096);
    static INSTALL: Once = Once::new();
    /// The SIGBUS action before ours, to pass faults that are not ours on to; stored before
    /// ours is installed. `get` is a plain atomic load, safe in a signal handler.
    static PREVIOUS: OnceLock<Previous> = OnceLock::new();

    struct Previous(libc::sigaction);
    // SAFETY: a copy of a C struct of integers and function addresses, never written after
    // it is stored.
    unsafe impl Sync for Previous {}
    unsafe impl Send for Previous {}

    fn install() {
        INSTALL.call_once(|| {
            // SAFETY: sysconf, sigemptyset and sigaction are plain calls on local structs.
            unsafe {
                let page = libc::sysconf(libc::_SC_PAGESIZE);
                if page > 0 {
                    PAGE.store(page as usize, Ordering::Relaxed);
                }
                // What is there now, kept before ours replaces it, so that no fault can
                // find ours installed and nothing to pass on to.
                let mut old: libc::sigaction = std::mem::zeroed();
                if libc::sigaction(libc::SIGBUS, std::ptr::null(), &mut old) != 0 {
                    return;
                }
                let _ = PREVIOUS.set(Previous(old));
                let mut action: libc::sigaction = std::mem::zeroed();
                action.sa_sigaction = on_sigbus as *const () as usize;
                action.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
                libc::sigemptyset(&mut action.sa_mask);
                libc::sigaction(libc::SIGBUS, &action, std::ptr::null_mut());
            }
        });
    }

    #[cfg(target_os = "android")]
    fn errno() -> *mut libc::c_int {
        // SAFETY: bionic's thread-local errno.
        unsafe { libc::__errno() }
    }

    #[cfg(not(target_os = "android"))]
    fn errno() -> *mut libc::c_int {
        // SAFETY: glibc's (and musl's) thread-local errno.
        unsafe { libc::__errno_location() }
    }

    /// Async-signal-safe: atomics, `mmap` and the previous handler only; errno is as the
    /// interrupted code left it.
    extern "C" fn on_sigbus(sig: libc::c_int, info: *mut libc::siginfo_t, ctx: *mut libc::c_void) {
        // SAFETY: errno is this thread's; the kernel hands a valid siginfo_t.
        let saved = unsafe { *errno() };
        let (code, addr) = unsafe { ((*info).si_code, (*info).si_addr() as usize) };
        // Only an access past the end of a mapped file (or an I/O error under it) is
        // cured by zeros; an alignment fault or a SIGBUS sent by kill is not ours.
        if code == libc::BUS_ADRERR && mend(addr) {
            // SAFETY: as above.
            unsafe { *errno() = saved };
            return;
        }
        pass_on(sig, info, ctx);
        // SAFETY: as above.
        unsafe { *errno() = saved };
    }

    /// Maps zeros from the page of `addr` to the end of the guarded mapping holding it (one
    /// call, so a large truncated file costs one signal, not one per page) and marks it
    /// damaged. False when `addr` is in no guarded mapping.
    fn mend(addr: usize) -> bool {
        let page = PAGE.load(Ordering::Relaxed);
        for slot in &TABLE {
            let start = slot.start.load(Ordering::Acquire);
            if start == 0 || addr < start {
                continue;
            }
            let end = slot.end.load(Ordering::Acquire);
            if addr >= end || slot.start.load(Ordering::Acquire) != start {
                continue;
            }
            let at = addr & !(page - 1);
            let len = (end - at).div_ceil(page) * page;
            // SAFETY: the pages lie inside a read-only mapping we own; replacing them with
            // anonymous zeros changes only what our own reads of them see.
            let zeros = unsafe {
                libc::mmap(
                    at as *mut libc::c_void,
                    len,
                    libc::PROT_READ,
                    libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED,
                    -1,
                    0,
                )
            };
            if zeros != libc::MAP_FAILED {
                slot.damaged.store(true, Ordering::Release);
                return true;
            }
        }
        false
    }

    fn pass_on(sig: libc::c_int, info: *mut libc::siginfo_t, ctx: *mut libc::c_void) {
        match PREVIOUS.get().map(|p| p.0) {
            Some(p) if p.sa_sigaction == libc::SIG_IGN => {}
            Some(p) if p.sa_sigaction != libc::SIG_DFL => {
                // SAFETY: calling the handler that was installed before ours, with the
                // arguments its flags ask for.
                unsafe {
                    if p.sa_flags & libc::SA_SIGINFO != 0 {
                        let f: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) =
                            std::mem::transmute(p.sa_sigaction);
                        f(sig, info, ctx);
                    } else {
                        let f: extern "C" fn(libc::c_int) = std::mem::transmute(p.sa_sigaction);
                        f(sig);
                    }
                }
            }
            _ => {
                // The default action, as without us: for a fault, returning re-runs the
                // access, which now ends the process; a signal that was sent is raised
                // again.
                // SAFETY: signal and raise are async-signal-safe.
                unsafe {
                    libc::signal(libc::SIGBUS, libc::SIG_DFL);
                    if (*info).si_code <= 0 {
                        libc::raise(sig);
                    }
                }
            }
        }
    }

    pub struct Guard {
        slot: Option<&'static Slot>,
    }

    impl Guard {
        pub fn new(bytes: &[u8]) -> Guard {
            if bytes.is_empty() {
                return Guard { slot: None };
            }
            install();
            let start = bytes.as_ptr() as usize;
            for slot in &TABLE {
                if slot
                    .claimed
                    .compare_exchange(false, true, Ordering::AcqRel, Ordering::Relaxed)
                    .is_ok()
                {
                    slot.damaged.store(false, Ordering::Relaxed);
                    slot.end.store(start + bytes.len(), Ordering::Release);
                    slot.start.store(start, Ordering::Release);
                    return Guard { slot: Some(slot) };
                }
            }
            Guard { slot: None }
        }

        pub fn damaged(&self) -> bool {
            self.slot.is_some_and(|s| s.damaged.load(Ordering::Acquire))
        }

        #[cfg(test)]
        pub fn guarded(&self) -> bool {
            self.slot.is_some()
        }
    }

    impl Drop for Guard {
        fn drop(&mut self) {
            if let Some(slot) = self.slot {
                slot.start.store(0, Ordering::Release);
                slot.end.store(0, Ordering::Release);
                slot.claimed.store(false, Ordering::Release);
            }
        }
    }
}

#[cfg(not(any(target_os = "linux", target_os = "android")))]
mod imp {
    pub struct Guard;

    impl Guard {
        pub fn new(_bytes: &[u8]) -> Guard {
            Guard
        }

        pub fn damaged(&self) -> bool {
            false
        }
    }
}

/// Guards one mapping for as long as it lives; drop it before the mapping is unmapped.
pub use imp::Guard;

#[cfg(all(test, any(target_os = "linux", target_os = "android")))]
mod tests {
    use crate::hprof::mapguard::Guard;
    use std::io::Write;

    fn mapped(len: usize) -> (tempfile::NamedTempFile, memmap2::Mmap) {
        let mut f = tempfile::NamedTempFile::new().unwrap();
        f.write_all(&vec![0xAB; len]).unwrap();
        f.flush().unwrap();
        // SAFETY: a private temporary file this test owns.
        let map = unsafe { memmap2::MmapOptions::new().populate().map(f.as_file()) }.unwrap();
        (f, map)
    }

    #[test]
    fn a_mapping_truncated_under_us_reads_zeros_and_says_so() {
        let (f, map) = mapped(1 << 20);
        let guard = Guard::new(&map);
        assert!(guard.guarded());
        assert_eq!(map[600_000], 0xAB);
        assert!(!guard.damaged());
        f.as_file().set_len(8192).unwrap();
        // Without the guard this read is a SIGBUS that ends the test process.
        let past = std::hint::black_box(&map[..])[600_000];
        assert_eq!(past, 0);
        assert!(guard.damaged());
        // What is still in the file reads as before.
        assert_eq!(map[100], 0xAB);
    }

    #[test]
    fn guards_are_per_mapping() {
        let (f1, m1) = mapped(1 << 16);
        let (_f2, m2) = mapped(1 << 16);
        let g1 = Guard::new(&m1);
        let g2 = Guard::new(&m2);
        f1.as_file().set_len(0).unwrap();
        assert_eq!(std::hint::black_box(&m1[..])[40_000], 0);
        assert!(g1.damaged());
        assert!(!g2.damaged());
        assert_eq!(m2[40_000], 0xAB);
    }
}
