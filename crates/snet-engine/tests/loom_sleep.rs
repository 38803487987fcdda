//! Model test of the sleep/wake and quiescence protocol (`scheduler::Sleep`).
//!
//! Run with: `LOOM_MAX_PREEMPTIONS=3 RUSTFLAGS="--cfg loom" cargo test -p snet-engine --test loom_sleep --release`
//!
//! Two workers and a publisher (standing in for the reader thread). The
//! publisher adds work items one at a time, then closes the input; workers
//! take items and, when they find none, go through `Sleep::idle`, whose look
//! mirrors the scheduler's: work available -> retry; last sleeper with the
//! input closed and empty -> finished. Loom explores every interleaving: a
//! lost wake-up shows up as a deadlock, a premature finish as an item left
//! over.
#![cfg(loom)]

use loom::sync::{Arc, Mutex};
use loom::thread;
use snet_engine::scheduler::{Look, Sleep, Wake};

struct Queue {
    items: Vec<u32>,
    closed: bool,
    taken: u32,
}

#[test]
fn no_lost_wakeup_and_no_early_finish() {
    loom::model(|| {
        let sleep = Arc::new(Sleep::new(2));
        let q = Arc::new(Mutex::new(Queue {
            items: Vec::new(),
            closed: false,
            taken: 0,
        }));
        let workers: Vec<_> = (0..2)
            .map(|_| {
                let (sleep, q) = (sleep.clone(), q.clone());
                thread::spawn(move || loop {
                    let got = q.lock().unwrap().items.pop();
                    if got.is_some() {
                        q.lock().unwrap().taken += 1;
                        continue;
                    }
                    let wake = sleep.idle(|last| {
                        let g = q.lock().unwrap();
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
                })
            })
            .collect();
        // Publisher: one item, then close (each publication before the notify).
        for i in 0..1 {
            q.lock().unwrap().items.push(i);
            sleep.notify_one();
        }
        q.lock().unwrap().closed = true;
        sleep.notify_one();
        for w in workers {
            w.join().unwrap();
        }
        let g = q.lock().unwrap();
        assert_eq!(g.taken, 1, "finished with work left");
        assert!(g.items.is_empty());
    });
}
