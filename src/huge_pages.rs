//! The process's allocator: the system's, asking for transparent huge pages
//! (`madvise(MADV_HUGEPAGE)`, Linux) for the allocations of the commands that analyze,
//! when the environment asks ([`ASK`]` = 1`).
//!
//! Why it is there: the analysis reaches across arrays of hundreds of MiB (the objects'
//! index, their references, the dominators' numbers) in the order the dump gives, not
//! the memory's. With 4 KiB pages most of those reads miss the TLB. With 2 MiB pages,
//! `analyze` of the bench's 1 GB object dump took 2–11 % less time on a machine with free
//! memory (issue 32).
//!
//! Why only when asked: where the page cache fills the memory, as on a server that keeps
//! its dumps, each huge page is compacted or reclaimed into being and zeroed whole. On
//! the bench machine so (issue 46), the analysis spent 7 % less in user time but 50–70 %
//! more in the kernel, and took 9 % more wall time on the 1 GB object and app dumps
//! (medians of runs in pairs); the kernel's zeroing of huge pages was 30 % of the
//! samples. Most systems give huge pages only to the programs that ask
//! (`/sys/kernel/mm/transparent_hugepage/enabled` set to `madvise`); set to `never`
//! there, the advice does nothing.
//!
//! It is what glibc's `glibc.malloc.hugetlb=1` tunable does, which a program can only get
//! from its environment at start. Only allocations of [`LARGE`] or more are advised: a
//! madvise call apiece stays cheap (a few hundred in an analysis of 1 GB), and the memory
//! a huge page adds beyond what is touched is bounded by the large allocations' count
//! (+7 MiB on the 486 MiB peak of that analysis). `shrink` streams through small buffers
//! and is left as it was.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, Ordering};

/// The environment variable that asks for huge pages (`1`).
pub const ASK: &str = "HPROF_SHRINK_HUGE_PAGES";

/// Allocations from this size on are advised, once [`enable`]d.
const LARGE: usize = 256 << 10;

/// The smallest page there is (madvise takes whole pages); on a system with larger pages
/// an unaligned range is refused, and nothing changes.
const PAGE: usize = 4096;

static ENABLED: AtomicBool = AtomicBool::new(false);

/// From now on the process's large allocations are advised for huge pages.
pub fn enable() {
    ENABLED.store(true, Ordering::Relaxed);
}

/// [`System`], advising its large allocations; see the module's description.
pub struct HugePages;

// SAFETY: every call is passed to `System` unchanged; the advice only marks the pages of
// the allocation just made as eligible for huge pages, which changes no byte of memory.
unsafe impl GlobalAlloc for HugePages {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract, passed on.
        let p = unsafe { System.alloc(layout) };
        advise(p, layout.size());
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract, passed on.
        let p = unsafe { System.alloc_zeroed(layout) };
        advise(p, layout.size());
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's contract, passed on.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: the caller's contract, passed on.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        // Grown (a Vec doubling): the new part, or the moved whole, needs the advice.
        if new_size > layout.size() {
            advise(p, new_size);
        }
        p
    }
}

/// Advises the pages that hold `len` bytes at `p`, if they are many and the process asked.
/// A failure (a kernel without transparent huge pages) changes nothing, so it is ignored.
#[inline]
fn advise(p: *mut u8, len: usize) {
    if p.is_null() || len < LARGE || !ENABLED.load(Ordering::Relaxed) {
        return;
    }
    #[cfg(target_os = "linux")]
    {
        // The pages the allocation touches, whole: the advice on a neighbour's part of
        // the first or last one only makes that page eligible too.
        let start = p as usize / PAGE * PAGE;
        let end = (p as usize + len).next_multiple_of(PAGE);
        // SAFETY: the range is mapped (it holds the allocation just made); the advice
        // changes no byte of memory.
        unsafe {
            libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE);
        }
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    /// The kernel's flags of the mapping that holds `addr` (`VmFlags` of /proc/self/smaps).
    fn flags_at(addr: usize) -> Option<String> {
        let smaps = std::fs::read_to_string("/proc/self/smaps").ok()?;
        let mut inside = false;
        for line in smaps.lines() {
            let head = line.split_whitespace().next().unwrap_or("");
            if let Some((lo, hi)) = head.split_once('-') {
                if let (Ok(lo), Ok(hi)) =
                    (usize::from_str_radix(lo, 16), usize::from_str_radix(hi, 16))
                {
                    inside = (lo..hi).contains(&addr);
                    continue;
                }
            }
            if inside {
                if let Some(f) = line.strip_prefix("VmFlags:") {
                    return Some(f.to_string());
                }
            }
        }
        None
    }

    #[test]
    fn large_allocations_are_advised_for_huge_pages_once_enabled() {
        if !std::path::Path::new("/sys/kernel/mm/transparent_hugepage/enabled").exists() {
            eprintln!("skipped: this kernel has no transparent huge pages");
            return;
        }
        let advised = |v: &[u8]| {
            let middle = v.as_ptr() as usize + v.len() / 2;
            let f = flags_at(middle).expect("the allocation's mapping in /proc/self/smaps");
            f.split_whitespace().any(|x| x == "hg")
        };
        // The switch is the process's: this test alone in the crate sets it, and what it
        // checks before setting it is a mapping of its own, not advised by anyone.
        let before = vec![0u8; 64 << 20];
        assert!(!advised(&before), "64 MiB, before the switch");
        super::enable();
        // Made as the analysis makes its arrays: zeroed, and grown by pushing.
        let zeroed = vec![0u8; 64 << 20];
        let mut grown: Vec<u8> = Vec::new();
        for _ in 0..32 {
            grown.extend_from_slice(&[1u8; 1 << 20]);
        }
        assert!(advised(&zeroed), "zeroed 64 MiB");
        assert!(advised(&grown), "grown to 32 MiB");
    }
}
