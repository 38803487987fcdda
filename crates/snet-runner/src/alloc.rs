//! The global allocator (mimalloc, or the system allocator for leak checks)
//! and its tuning at start-up.

use std::ffi::c_int;

/// The global allocator: mimalloc (the engine allocates and frees many small
/// records and entities from several threads; mimalloc's per-thread free
/// lists beat glibc here), or the system allocator when the environment
/// variable `SNET_SYSTEM_ALLOC` is set at start-up, so that valgrind's leak
/// checker sees every allocation (`.ci/leakcheck.sh`). The choice is made
/// once, at the first allocation, and never changes. Declared here so that
/// both `snet` and every built program use it.
#[global_allocator]
pub(crate) static GLOBAL: SnetAlloc = SnetAlloc;

/// The allocator: mimalloc, or the system's under `SNET_SYSTEM_ALLOC`
/// (decided on first use).
pub struct SnetAlloc;

/// 0: not decided yet, 1: mimalloc, 2: system.
static ALLOCATOR: std::sync::atomic::AtomicU8 = std::sync::atomic::AtomicU8::new(0);

impl SnetAlloc {
    #[inline]
    pub(crate) fn system(&self) -> bool {
        use std::sync::atomic::Ordering::Relaxed;
        match ALLOCATOR.load(Relaxed) {
            1 => false,
            2 => true,
            _ => {
                // SAFETY: getenv with a NUL-terminated name; it does not allocate.
                let sys = !unsafe { libc::getenv(c"SNET_SYSTEM_ALLOC".as_ptr()) }.is_null();
                // First decision wins (the first allocation happens before any thread starts).
                let _ = ALLOCATOR.compare_exchange(0, if sys { 2 } else { 1 }, Relaxed, Relaxed);
                ALLOCATOR.load(Relaxed) == 2
            }
        }
    }
}

// SAFETY: forwards every call to one allocator, the same one for the life
// of the process, so memory is always freed by its allocator (`mi_free`
// frees blocks of `mi_malloc` and `mi_malloc_aligned` alike); requests go to
// mimalloc's plain entry points only where its blocks' natural alignment
// satisfies them (`plain`).
unsafe impl std::alloc::GlobalAlloc for SnetAlloc {
    unsafe fn alloc(&self, l: std::alloc::Layout) -> *mut u8 {
        // SAFETY: the caller's contract is passed on unchanged.
        unsafe {
            if self.system() {
                std::alloc::System.alloc(l)
            } else if plain(l.size(), l.align()) {
                mi_malloc(l.size()).cast()
            } else {
                mimalloc::MiMalloc.alloc(l)
            }
        }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: std::alloc::Layout) {
        // SAFETY: `p` came from the same allocator (the choice never changes).
        unsafe {
            if self.system() {
                std::alloc::System.dealloc(p, l)
            } else {
                mimalloc::MiMalloc.dealloc(p, l)
            }
        }
    }
    unsafe fn alloc_zeroed(&self, l: std::alloc::Layout) -> *mut u8 {
        // SAFETY: as in `alloc`.
        unsafe {
            if self.system() {
                std::alloc::System.alloc_zeroed(l)
            } else if plain(l.size(), l.align()) {
                mi_zalloc(l.size()).cast()
            } else {
                mimalloc::MiMalloc.alloc_zeroed(l)
            }
        }
    }
    unsafe fn realloc(&self, p: *mut u8, l: std::alloc::Layout, n: usize) -> *mut u8 {
        // SAFETY: as in `dealloc`.
        unsafe {
            if self.system() {
                std::alloc::System.realloc(p, l, n)
            } else if plain(n, l.align()) {
                mi_realloc(p.cast(), n).cast()
            } else {
                mimalloc::MiMalloc.realloc(p, l, n)
            }
        }
    }
}

/// Whether mimalloc's plain `mi_malloc` serves a request: every mimalloc
/// block is a whole number of 8-byte words from a 16-aligned page start,
/// so an alignment of up to 8 that is not above the size needs nothing
/// more. (The `mimalloc` crate sends every request through
/// `mi_malloc_aligned`, whose fast path needs a free block at hand in the
/// size's page; when the page's free list is empty -- in a loop that frees
/// each block before allocating the next, that is every time -- a size
/// that is not a power of two takes the over-allocating path: ~250
/// instructions instead of ~20, measured with callgrind on the shm
/// transport's round trip.)
#[inline]
fn plain(size: usize, align: usize) -> bool {
    align <= 8 && align <= size
}

extern "C" {
    /// mimalloc's option setter (linked in by the `mimalloc` crate).
    fn mi_option_set(option: c_int, value: std::ffi::c_long);
    /// mimalloc's own allocation entry points (same library).
    fn mi_malloc(size: usize) -> *mut std::ffi::c_void;
    fn mi_zalloc(size: usize) -> *mut std::ffi::c_void;
    fn mi_realloc(p: *mut std::ffi::c_void, size: usize) -> *mut std::ffi::c_void;
    /// `major * 10000 + minor * 100 + patch` of the linked mimalloc.
    fn mi_version() -> c_int;
    /// Sets an option's default (an environment variable `MIMALLOC_...` still wins).
    fn mi_option_set_default(option: c_int, value: std::ffi::c_long);
    #[cfg(test)]
    fn mi_option_get(option: c_int) -> std::ffi::c_long;
}

/// `mi_option_generic_collect` in mimalloc 3's `mi_option_e` (it has
/// another value in mimalloc 2, whose allocator this does not tune).
const MI3_OPTION_GENERIC_COLLECT: c_int = 34;

/// How many allocations off a thread's fast path (a size class whose
/// free list is empty) between two full collections of the thread's heap
/// (freeing retired pages, taking back blocks other threads freed,
/// purging). At mimalloc's default, 10,000, the node processes of a
/// distributed run kept growing (issue 27's soak on shared memory: node
/// 2, which every record passes, its anonymous memory climbing steadily
/// through a run while its live heap, under valgrind's massif, stayed at
/// 1-2 MiB; with the system allocator it stayed flat): memory held in
/// thread heaps between collections, not live data. Records are made on
/// one thread (the node's input manager decodes them) and freed on others.
/// 1,000 is the smallest value that acts (mimalloc looks at the count
/// every 1,000 such allocations).
const GENERIC_COLLECT: std::ffi::c_long = 1000;

/// Turns transparent huge pages off for this process before anything
/// allocates (see [`tune_allocator`]): run by the loader ahead of the
/// constructors of the libraries, mimalloc's included.
extern "C" fn disable_huge_pages() {
    // SAFETY: prctl with an integer flag; no memory is passed. A failure
    // (an old kernel) leaves huge pages on, which only costs memory.
    unsafe {
        libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0);
    }
}

#[used]
#[link_section = ".init_array.00100"]
static DISABLE_HUGE_PAGES: extern "C" fn() = disable_huge_pages;

/// Keeps peak memory low: commit arena memory on demand, return freed
/// pages at once (values of `mi_option_e`, the same in mimalloc 2 and 3),
/// collect thread heaps often (`GENERIC_COLLECT`, mimalloc 3), and no
/// transparent huge pages for this process. Call first thing.
///
/// Huge pages doubled the peak RSS of the benchmarks (a 2 MiB page is
/// resident as soon as one byte of it is touched: `identity.snet` over
/// 100k records at 2 workers, 33 → 10 MB) for no measurable speed.
/// mimalloc's own `allow_thp` option is read when it initialises, before
/// `main`, so the process asks the kernel instead (`PR_SET_THP_DISABLE`,
/// inherited by the node processes it forks).
pub fn tune_allocator() {
    disable_huge_pages();
    if GLOBAL.system() {
        return;
    }
    const MI_OPTION_ARENA_EAGER_COMMIT: c_int = 4;
    const MI_OPTION_PURGE_DELAY: c_int = 15;
    // SAFETY: mi_option_set only stores an integer option; called before any
    // worker thread exists.
    unsafe {
        mi_option_set(MI_OPTION_ARENA_EAGER_COMMIT, 0);
        mi_option_set(MI_OPTION_PURGE_DELAY, 0);
        if mi_version() >= 30000 {
            mi_option_set_default(MI3_OPTION_GENERIC_COLLECT, GENERIC_COLLECT);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The collection rate is set (and the option index is that of the
    /// mimalloc linked in: a wrong index would set some other option).
    #[test]
    fn heaps_are_collected_often() {
        if GLOBAL.system() {
            return;
        }
        tune_allocator();
        // SAFETY: reads an integer option.
        let (version, collect) =
            unsafe { (mi_version(), mi_option_get(MI3_OPTION_GENERIC_COLLECT)) };
        assert!(version >= 30000, "mimalloc {version}: expected version 3");
        assert_eq!(collect, GENERIC_COLLECT);
    }
}
