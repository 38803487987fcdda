//! The scheduler's sleep/wake and quiescence protocol ([`crate::scheduler`],
//! `Sleep`, in `scheduler/sleep.rs`), used the way the scheduler uses it.
//!
//! Workers loop as `worker_loop` does: take an item from a queue (a loom
//! mutex standing for the local queues, the injector and the input buffer);
//! when there is none, go through `Sleep::idle` with a look that mirrors
//! `Shared::look` (work queued -> `Work`; last sleeper with the input closed
//! and drained -> `Finished`; otherwise `Wait`). Publishers make work
//! visible under the queue lock *before* calling `notify_one`, as the reader
//! thread, `queue_ready` and `Host::deliver` do.
//!
//! Models (every interleaving, preemption bound 3):
//! * `sleep_publisher_one_worker`, `sleep_publisher_two_workers`: one
//!   worker and a publisher (the reader thread) adding two items, then
//!   closing the input; two workers and a publisher adding one item whose
//!   processing queues another (a task feeding a successor). A lost wake-up
//!   is a deadlock (loom reports it); a premature finish leaves an item
//!   untaken; `last` ("am I the last awake worker?") must never be true
//!   while another worker is processing. (With two workers most lost
//!   wake-ups are masked: the other worker, still awake, finds the work;
//!   the one-worker model is the sharp one for those.)
//! * `sleep_probe_wakes_last_sleeper`: two workers wait for the network to
//!   become quiescent, which only a manager thread learns (node 0's credit
//!   coming home); the manager records it, then calls `Sleep::probe` as
//!   `Host::settle` does, notifying when quiescent. The workers must finish
//!   (no deadlock), and not before.
//! * `sleep_finish_wakes_everyone`: two workers with nothing to do and a
//!   thread calling `Sleep::finish` (a failure or node 0's shutdown): every
//!   worker must return `Done`.
//!
//! (Formerly the external test `tests/loom_sleep.rs`, which only had the
//! first model.)
//!
//! Run: `LOOM_MAX_PREEMPTIONS=3 RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom
//! cargo test --release -q -p snet-engine --lib loom_tests::sleep` (add
//! `-- --nocapture` for the number of executions explored).

use std::sync::Arc;

use loom::thread;

use crate::scheduler::{Look, Sleep, Wake};
use crate::sync::{lock, Mutex};

struct Queue {
    items: Vec<u32>,
    closed: bool,
    /// Workers between taking an item and finishing it.
    busy: usize,
    taken: u32,
}

/// Workers of the probe and finish models.
const WORKERS: usize = 2;

/// Item 0 feeds item 1 when processed (a task queueing a successor).
const FEEDS: u32 = 0;

/// A worker: take work while there is some; sleep otherwise.
fn worker(sleep: &Sleep, q: &Mutex<Queue>) {
    loop {
        let got = {
            let mut g = lock(q);
            let got = g.items.pop();
            g.busy += usize::from(got.is_some());
            got
        };
        if let Some(i) = got {
            // Processing; a successor is published before the notify, as
            // `queue_ready` does.
            {
                let mut g = lock(q);
                if i == FEEDS {
                    g.items.push(i + 1);
                }
                g.taken += 1;
                g.busy -= 1;
            }
            if i == FEEDS {
                sleep.notify_one();
            }
            continue;
        }
        let wake = sleep.idle(|last| {
            let g = lock(q);
            if last {
                assert_eq!(g.busy, 0, "the last sleeper while a worker is busy");
            }
            if !g.items.is_empty() {
                Look::Work
            } else if last && g.closed {
                Look::Finished
            } else {
                Look::Wait
            }
        });
        if wake == Wake::Done {
            return;
        }
    }
}

/// `workers` workers; the publisher adds `items` (item 0 feeds item 1)
/// and then closes the input.
fn publisher_model(workers: usize, items: &'static [u32]) {
    super::check(3, move || {
        let sleep = Arc::new(Sleep::new(workers));
        let q = Arc::new(Mutex::new(Queue {
            items: Vec::new(),
            closed: false,
            busy: 0,
            taken: 0,
        }));
        let handles: Vec<_> = (0..workers)
            .map(|_| {
                let (sleep, q) = (sleep.clone(), q.clone());
                thread::spawn(move || worker(&sleep, &q))
            })
            .collect();
        // The publisher (the reader thread): each publication before its notify.
        for &i in items {
            lock(&q).items.push(i);
            sleep.notify_one();
        }
        lock(&q).closed = true;
        sleep.notify_one();
        for h in handles {
            h.join().unwrap();
        }
        let g = lock(&q);
        let expected = items.len() as u32 + u32::from(items.contains(&FEEDS));
        assert_eq!(g.taken, expected, "finished with work left");
        assert!(g.items.is_empty());
        assert!(sleep.is_done());
    });
}

#[test]
fn sleep_publisher_one_worker() {
    publisher_model(1, &[2, 3]);
}

#[test]
fn sleep_publisher_two_workers() {
    publisher_model(2, &[FEEDS]);
}

#[test]
fn sleep_probe_wakes_last_sleeper() {
    super::check(3, || {
        let sleep = Arc::new(Sleep::new(WORKERS));
        // Stands for the node's termination state (`Net`'s lock).
        let quiescent = Arc::new(Mutex::new(false));
        let workers: Vec<_> = (0..WORKERS)
            .map(|_| {
                let (sleep, quiescent) = (sleep.clone(), quiescent.clone());
                thread::spawn(move || loop {
                    let wake = sleep.idle(|last| {
                        if last && *lock(&quiescent) {
                            Look::Finished
                        } else {
                            Look::Wait
                        }
                    });
                    if wake == Wake::Done {
                        assert!(*lock(&quiescent), "finished before quiescence");
                        return;
                    }
                })
            })
            .collect();
        // The manager: the last credit came home; then `Host::settle`.
        *lock(&quiescent) = true;
        sleep.probe(|sleeping, workers| sleeping == workers && *lock(&quiescent));
        for w in workers {
            w.join().unwrap();
        }
        assert!(sleep.is_done());
    });
}

#[test]
fn sleep_finish_wakes_everyone() {
    super::check(3, || {
        let sleep = Arc::new(Sleep::new(WORKERS));
        let workers: Vec<_> = (0..WORKERS)
            .map(|_| {
                let sleep = sleep.clone();
                thread::spawn(move || while sleep.idle(|_| Look::Wait) != Wake::Done {})
            })
            .collect();
        sleep.finish();
        for w in workers {
            w.join().unwrap();
        }
    });
}
