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

/// Locks, ignoring poisoning (a panicking worker aborts the run anyway).
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
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
