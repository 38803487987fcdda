//! [`SpinLock`]: a lock for state that one thread uses almost always (the
//! transport's receive side: only the node's input manager calls `recv`).
//! Taking it is one atomic swap and releasing it one store, where a
//! general-purpose mutex costs two read-modify-write instructions (tens
//! of cycles each, on the path of every message). A thread that finds it
//! taken spins briefly, then yields.
//!
//! Protocol: `locked` is `false` when free. `lock` swaps in `true` with
//! Acquire **(A)** until it reads `false`; the guard's drop stores `false`
//! with Release **(R)**. R → A: everything the previous holder did to the
//! value happens before the next holder's accesses.

use std::cell::UnsafeCell;
use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicBool, Ordering};

pub(crate) struct SpinLock<T> {
    locked: AtomicBool,
    value: UnsafeCell<T>,
}

// SAFETY: the value is only reached through a guard, and at most one guard
// exists at a time (the swap in `lock`), so sharing the lock shares `T`
// between threads one at a time: `T: Send` suffices, as for `Mutex`.
unsafe impl<T: Send> Sync for SpinLock<T> {}

impl<T> SpinLock<T> {
    pub(crate) fn new(value: T) -> SpinLock<T> {
        SpinLock {
            locked: AtomicBool::new(false),
            value: UnsafeCell::new(value),
        }
    }

    pub(crate) fn lock(&self) -> SpinGuard<'_, T> {
        let mut spins = 0u32;
        // A: pairs with R of the previous holder.
        while self.locked.swap(true, Ordering::Acquire) {
            // Wait for it to look free before trying again.
            while self.locked.load(Ordering::Relaxed) {
                spins += 1;
                if spins < 100 {
                    std::hint::spin_loop();
                } else {
                    std::thread::yield_now();
                }
            }
        }
        SpinGuard { lock: self }
    }
}

pub(crate) struct SpinGuard<'a, T> {
    lock: &'a SpinLock<T>,
}

impl<T> Deref for SpinGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: this guard is the only one (see `lock`): no `&mut T` exists.
        unsafe { &*self.lock.value.get() }
    }
}

impl<T> DerefMut for SpinGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: this guard is the only one, and `&mut self` is exclusive.
        unsafe { &mut *self.lock.value.get() }
    }
}

impl<T> Drop for SpinGuard<'_, T> {
    fn drop(&mut self) {
        // R: pairs with A of the next holder.
        self.lock.locked.store(false, Ordering::Release);
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::Arc;

    /// Threads increment a plain counter under the lock: no increment is
    /// lost (and Miri checks there is no data race).
    #[test]
    fn the_lock_excludes() {
        let n = if cfg!(miri) { 50 } else { 20_000 };
        let l = Arc::new(SpinLock::new(0u64));
        let ts: Vec<_> = (0..3)
            .map(|_| {
                let l = l.clone();
                std::thread::spawn(move || {
                    for _ in 0..n {
                        *l.lock() += 1;
                    }
                })
            })
            .collect();
        for t in ts {
            t.join().unwrap();
        }
        assert_eq!(*l.lock(), 3 * n);
    }
}
