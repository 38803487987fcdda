//! The synchronisation primitives of the engine, in one place.
//!
//! Every concurrent module takes its atomics and locks from here, so a model
//! checker can swap them: under `--cfg loom` these are loom's types and the
//! protocol tests in [`crate::scheduler`] explore every interleaving.
//! Entity graphs always use the standard `Arc` (they need weak references);
//! the protocols under model test do not share through it.

pub(crate) use std::sync::Arc;

#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
#[cfg(not(loom))]
pub(crate) use std::sync::{Condvar, Mutex, MutexGuard};

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
#[cfg(loom)]
pub(crate) use loom::sync::{Condvar, Mutex, MutexGuard};

/// A value alone on its cache lines: 128-byte aligned and sized, the pair
/// of 64-byte lines that x86's adjacent-line prefetcher fetches together.
/// For locations one worker writes often while others read or write
/// their neighbours: unpadded, every write takes the line from the other
/// cores (false sharing), though nothing is shared but the line.
#[repr(align(128))]
pub(crate) struct Padded<T>(pub(crate) T);

impl<T> std::ops::Deref for Padded<T> {
    type Target = T;

    fn deref(&self) -> &T {
        &self.0
    }
}

/// Whether `a` and `b` touch a common 128-byte block of memory (the unit
/// [`Padded`] keeps apart): the tests of the layout of shared state.
#[cfg(all(test, not(loom)))]
pub(crate) fn share_lines<A: ?Sized, B: ?Sized>(a: &A, b: &B) -> bool {
    let span = |p: usize, n: usize| (p / 128, (p + n.max(1) - 1) / 128);
    let (a0, a1) = span(
        a as *const A as *const u8 as usize,
        std::mem::size_of_val(a),
    );
    let (b0, b1) = span(
        b as *const B as *const u8 as usize,
        std::mem::size_of_val(b),
    );
    a0 <= b1 && b0 <= a1
}

/// Locks, ignoring poisoning (a panicking worker aborts the run anyway).
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Locks if no one holds the lock now (poisoning ignored, as [`lock`]).
pub(crate) fn try_lock<T>(m: &Mutex<T>) -> Option<MutexGuard<'_, T>> {
    match m.try_lock() {
        Ok(g) => Some(g),
        Err(std::sync::TryLockError::Poisoned(e)) => Some(e.into_inner()),
        Err(std::sync::TryLockError::WouldBlock) => None,
    }
}

/// Lets other threads run (a worker waiting for others to drain a
/// backlog; under loom, a point where the model may switch threads, so
/// that a wait on another thread's progress is not taken for a livelock).
pub(crate) fn yield_now() {
    #[cfg(loom)]
    loom::thread::yield_now();
    #[cfg(not(loom))]
    std::thread::yield_now();
}
