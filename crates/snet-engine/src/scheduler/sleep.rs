//! The sleep/wake and quiescence protocol ([`Sleep`]).
//!
//! *Sleeping* ([`Sleep`]). A worker about to sleep takes the sleep lock,
//! increments `sleeping`, and re-checks for work under the lock. Anyone who
//! makes work available (a worker queueing surplus tasks, the reader thread
//! adding input) does so *before* reading `sleeping_hint`; if it sees a
//! sleeper it takes the sleep lock and notifies. Because the sleeper holds
//! the lock from its increment until it waits, a notification cannot fall
//! between its re-check and its wait; because the work is published under the
//! queue locks the re-check takes, either the re-check sees the work or the
//! publisher sees the sleeper.
//!
//! The protocol is model-checked by `loom_tests/sleep.rs`, which drives
//! [`Sleep`] the way [`super::work`] does.

use crate::sync::{lock, AtomicUsize, Condvar, Mutex, Ordering};

/// What the last look before sleeping found.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Look {
    /// Work is available: do not sleep.
    Work,
    /// The run is over.
    Finished,
    /// Everyone is idle and only the input bound holds input back: admit anyway.
    ForceAdmit,
    /// Nothing to do yet: wait for a notification.
    Wait,
}

/// Why a worker came back from [`Sleep::idle`].
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Wake {
    Retry,
    ForceAdmit,
    Done,
}

struct SleepState {
    sleeping: usize,
    done: bool,
}

/// The sleep/wake and quiescence protocol (see the module docs).
pub(crate) struct Sleep {
    state: Mutex<SleepState>,
    cv: Condvar,
    /// Mirrors `state.sleeping` for the publishers' lock-free check.
    sleeping_hint: AtomicUsize,
    workers: usize,
}

impl Sleep {
    pub(crate) fn new(workers: usize) -> Sleep {
        Sleep {
            state: Mutex::new(SleepState {
                sleeping: 0,
                done: false,
            }),
            cv: Condvar::new(),
            sleeping_hint: AtomicUsize::new(0),
            workers,
        }
    }

    /// Called by a publisher *after* it made work visible.
    pub(crate) fn notify_one(&self) {
        // SeqCst: ordered after the publication (a lock release) in the single
        // total order; pairs with the SeqCst store in `idle`.
        if self.sleeping_hint.load(Ordering::SeqCst) > 0 {
            let _g = lock(&self.state);
            self.cv.notify_one();
        }
    }

    /// Ends the run for everyone.
    pub(crate) fn finish(&self) {
        let mut g = lock(&self.state);
        g.done = true;
        self.cv.notify_all();
    }

    /// Whether the run has ended ([`Sleep::finish`]; the model checks).
    #[cfg(all(test, loom))]
    pub(crate) fn is_done(&self) -> bool {
        lock(&self.state).done
    }

    /// Runs `f` under the sleep lock with the number of sleeping workers
    /// (and the total); `f` may notify a sleeper through the returned flag.
    pub(crate) fn probe(&self, f: impl FnOnce(usize, usize) -> bool) {
        let g = lock(&self.state);
        if f(g.sleeping, self.workers) {
            self.cv.notify_one();
        }
    }

    /// Goes to sleep unless `look` (called under the sleep lock with "am I the
    /// last awake worker?") finds something.
    pub(crate) fn idle(&self, look: impl FnOnce(bool) -> Look) -> Wake {
        let mut g = lock(&self.state);
        if g.done {
            return Wake::Done;
        }
        g.sleeping += 1;
        // SeqCst: pairs with the SeqCst load in `notify_one`.
        self.sleeping_hint.store(g.sleeping, Ordering::SeqCst);
        let last = g.sleeping == self.workers;
        let found = look(last);
        let wake = match found {
            Look::Work => Wake::Retry,
            Look::ForceAdmit => Wake::ForceAdmit,
            Look::Finished => {
                g.done = true;
                self.cv.notify_all();
                Wake::Done
            }
            Look::Wait => {
                g = self.cv.wait(g).unwrap_or_else(|e| e.into_inner());
                if g.done {
                    Wake::Done
                } else {
                    Wake::Retry
                }
            }
        };
        g.sleeping -= 1;
        self.sleeping_hint.store(g.sleeping, Ordering::SeqCst);
        wake
    }
}
