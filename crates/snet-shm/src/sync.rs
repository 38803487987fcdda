//! The synchronisation primitives of the crate, in one place (the style of
//! `snet-engine`'s `sync`).
//!
//! Every shared word is taken from here, so a model checker can swap them:
//! under `--cfg loom` these are loom's atomics and fences, spinning yields to
//! loom's scheduler, the futex is a stand-in made of a loom `Mutex` and
//! `Condvar` with the futex's semantics, and every slot's payload (and
//! every 4 KiB of an arena's blocks) has a shadow loom `UnsafeCell` so that
//! loom's race detector sees the plain bytes the protocols guard. Under Miri the futex system calls are
//! replaced by a yield (a spurious wake-up, which every caller tolerates).
//!
//! Under loom the loom atomics are *constructed in place* in the region (so
//! the layout there uses loom's sizes); normally the region's bytes already
//! are valid atomics (every bit pattern is), and initialisation only stores.

#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{fence, AtomicU32, AtomicU64, AtomicU8, Ordering};

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{fence, AtomicU32, AtomicU64, AtomicU8, Ordering};

use std::time::Duration;

/// One iteration of a busy-wait loop (loom: let another thread run).
#[inline]
pub(crate) fn spin_hint() {
    #[cfg(loom)]
    loom::thread::yield_now();
    #[cfg(not(loom))]
    std::hint::spin_loop();
}

/// Gives up the CPU for a moment (a polling consumer that found nothing).
#[inline]
pub(crate) fn yield_now() {
    #[cfg(loom)]
    loom::thread::yield_now();
    #[cfg(not(loom))]
    std::thread::yield_now();
}

/// Whether a guard's `drop` must not touch the model: under loom, a panic
/// (a failed model) unwinds after the execution is gone, and a loom
/// operation then would abort the whole test binary.
#[inline]
pub(crate) fn unwinding_in_model() -> bool {
    cfg!(loom) && std::thread::panicking()
}

/// Places a 64-bit atomic holding `v` at `p` (see the module docs).
///
/// # Safety
/// `p` is valid for writes, aligned, and no other thread or process uses
/// the word yet (under loom: at all) .
pub(crate) unsafe fn place_u64<'a>(p: *mut AtomicU64, v: u64) -> &'a AtomicU64 {
    #[cfg(loom)]
    // SAFETY: the caller's contract; loom atomics must be constructed.
    unsafe {
        p.write(AtomicU64::new(v));
    }
    // SAFETY: `p` is valid and aligned; the bytes are a valid `AtomicU64`
    // (every bit pattern is one, or loom's was just written).
    let a = unsafe { &*p };
    #[cfg(not(loom))]
    a.store(v, Ordering::Relaxed);
    a
}

/// Places a 32-bit atomic holding `v` at `p`; as [`place_u64`].
///
/// # Safety
/// As [`place_u64`].
pub(crate) unsafe fn place_u32<'a>(p: *mut AtomicU32, v: u32) -> &'a AtomicU32 {
    #[cfg(loom)]
    // SAFETY: the caller's contract; loom atomics must be constructed.
    unsafe {
        p.write(AtomicU32::new(v));
    }
    // SAFETY: as in `place_u64`.
    let a = unsafe { &*p };
    #[cfg(not(loom))]
    a.store(v, Ordering::Relaxed);
    a
}

/// Places an 8-bit atomic holding `v` at `p`; as [`place_u64`].
///
/// # Safety
/// As [`place_u64`].
pub(crate) unsafe fn place_u8<'a>(p: *mut AtomicU8, v: u8) -> &'a AtomicU8 {
    #[cfg(loom)]
    // SAFETY: the caller's contract; loom atomics must be constructed.
    unsafe {
        p.write(AtomicU8::new(v));
    }
    // SAFETY: as in `place_u64`.
    let a = unsafe { &*p };
    #[cfg(not(loom))]
    a.store(v, Ordering::Relaxed);
    a
}

/// Shadow cells making the slot payloads visible to loom's race detector
/// (nothing outside loom).
#[cfg(not(loom))]
pub(crate) struct Shadow;

#[cfg(not(loom))]
impl Shadow {
    pub(crate) fn new(_slots: usize) -> Shadow {
        Shadow
    }

    #[inline]
    pub(crate) fn write<R>(&self, _slot: usize, f: impl FnOnce() -> R) -> R {
        f()
    }

    #[inline]
    pub(crate) fn read<R>(&self, _slot: usize, f: impl FnOnce() -> R) -> R {
        f()
    }
}

#[cfg(loom)]
pub(crate) struct Shadow(Vec<loom::cell::UnsafeCell<()>>);

#[cfg(loom)]
impl Shadow {
    pub(crate) fn new(slots: usize) -> Shadow {
        Shadow(
            (0..slots)
                .map(|_| loom::cell::UnsafeCell::new(()))
                .collect(),
        )
    }

    /// `f` writes slot `slot`'s payload: loom checks no access is concurrent.
    pub(crate) fn write<R>(&self, slot: usize, f: impl FnOnce() -> R) -> R {
        self.0[slot].with_mut(|_| f())
    }

    /// `f` reads slot `slot`'s payload: loom checks no write is concurrent.
    pub(crate) fn read<R>(&self, slot: usize, f: impl FnOnce() -> R) -> R {
        self.0[slot].with(|_| f())
    }
}

/// Waiting on and waking a 32-bit word of shared memory: Linux futexes
/// *without* `FUTEX_PRIVATE_FLAG` (the word is shared between processes, so
/// the kernel keys it by the physical page, not by the address space).
///
/// Semantics (all a caller may rely on): `wait(word, expected, timeout)`
/// returns at once if `word != expected` when the kernel looks at it
/// (atomically with respect to `wake`), otherwise sleeps until a `wake` on
/// the same word, the timeout, or spuriously (a signal). A `wake` after a
/// store to the word either finds the waiter queued, or the waiter's check
/// sees the store.
#[cfg(not(loom))]
pub(crate) struct Futex;

#[cfg(not(loom))]
impl Futex {
    pub(crate) fn new() -> Futex {
        Futex
    }

    #[cfg(not(miri))]
    pub(crate) fn wait(&self, word: &AtomicU32, expected: u32, timeout: Option<Duration>) {
        let ts = timeout.map(|d| libc::timespec {
            tv_sec: d.as_secs().min(i32::MAX as u64) as libc::time_t,
            tv_nsec: d.subsec_nanos() as libc::c_long,
        });
        let tsp = ts
            .as_ref()
            .map_or(std::ptr::null(), |t| t as *const libc::timespec);
        // SAFETY: FUTEX_WAIT reads the aligned 32-bit word (valid for the
        // call: `word` is borrowed) and the timespec (on the stack, or null).
        // The result (0, EAGAIN: the word changed, ETIMEDOUT, EINTR) does not
        // matter: every caller re-checks what it waits for.
        unsafe {
            libc::syscall(
                libc::SYS_futex,
                word.as_ptr(),
                libc::FUTEX_WAIT,
                expected,
                tsp,
                std::ptr::null::<u32>(),
                0u32,
            );
        }
    }

    #[cfg(not(miri))]
    pub(crate) fn wake(&self, word: &AtomicU32) {
        // SAFETY: FUTEX_WAKE only uses the word's address as a key.
        unsafe {
            libc::syscall(
                libc::SYS_futex,
                word.as_ptr(),
                libc::FUTEX_WAKE,
                1i32,
                std::ptr::null::<libc::timespec>(),
                std::ptr::null::<u32>(),
                0u32,
            );
        }
    }

    /// Wakes every waiter on `word` (an arena being poisoned).
    #[cfg(not(miri))]
    pub(crate) fn wake_all(&self, word: &AtomicU32) {
        // SAFETY: FUTEX_WAKE only uses the word's address as a key.
        unsafe {
            libc::syscall(
                libc::SYS_futex,
                word.as_ptr(),
                libc::FUTEX_WAKE,
                i32::MAX,
                std::ptr::null::<libc::timespec>(),
                std::ptr::null::<u32>(),
                0u32,
            );
        }
    }

    /// Miri: no system call; a yield is a spurious wake-up.
    #[cfg(miri)]
    pub(crate) fn wait(&self, word: &AtomicU32, expected: u32, _timeout: Option<Duration>) {
        if word.load(Ordering::SeqCst) == expected {
            std::thread::yield_now();
        }
    }

    #[cfg(miri)]
    pub(crate) fn wake(&self, _word: &AtomicU32) {}

    #[cfg(miri)]
    pub(crate) fn wake_all(&self, _word: &AtomicU32) {}
}

/// The futex stand-in under loom: the mutex plays the kernel's hash-bucket
/// lock (the value check and the queueing are atomic with respect to a
/// wake), the condition variable the wait queue. Timeouts are not modelled
/// (a wait waits for a wake; models never rely on a timeout). One stand-in
/// per `Ring` or `Arena` handle: loom models share one handle between their
/// threads.
#[cfg(loom)]
pub(crate) struct Futex {
    lock: loom::sync::Mutex<()>,
    cv: loom::sync::Condvar,
}

#[cfg(loom)]
impl Futex {
    pub(crate) fn new() -> Futex {
        Futex {
            lock: loom::sync::Mutex::new(()),
            cv: loom::sync::Condvar::new(),
        }
    }

    pub(crate) fn wait(&self, word: &AtomicU32, expected: u32, _timeout: Option<Duration>) {
        let g = self.lock.lock().unwrap();
        if word.load(Ordering::SeqCst) == expected {
            drop(self.cv.wait(g).unwrap());
        }
    }

    pub(crate) fn wake(&self, _word: &AtomicU32) {
        let _g = self.lock.lock().unwrap();
        self.cv.notify_all();
    }
}
