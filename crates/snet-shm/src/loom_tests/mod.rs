//! Model checks of the ring, notification and arena protocols, run by `loom`
//! against the real code ([`crate::sync`] hands the ring loom's atomics and
//! fences, a loom stand-in for the futex, and shadow loom cells that make
//! the payload bytes visible to loom's race detector).
//!
//! Run all of them:
//!
//! ```text
//! LOOM_MAX_PREEMPTIONS=3 RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom \
//!   cargo test --release -p snet-shm --lib
//! ```
//!
//! - [`ring`]: the slot protocol (no loss, no duplication, per-producer
//!   order, no torn or overwritten payload), with tiny rings that fill up
//!   and wrap, and the consumer hand-over;
//! - [`arena`]: the field arena's lock, refcount hand-over, splitting and
//!   coalescing (a block freed exactly once, nothing lost, no block reused
//!   before its holders are done);
//! - [`notify`]: the sleep/wake handshakes of interrupt and sparse mode (a
//!   lost wake-up is a loom deadlock: every thread blocked), and kicks.
//!
//! `README.md` next to this file gives sizes, execution counts and times,
//! and the mutations the models catch.

mod arena;
mod notify;
mod ring;

use std::sync::Arc;

use loom::sync::{Condvar, Mutex};

use crate::{HeapRegion, Notify, Ring};

/// Runs `f` under loom with at most `max_preemptions` preemptions (fewer if
/// `LOOM_MAX_PREEMPTIONS` says so). `SNET_LOOM_FULL=1`: the variable alone
/// decides. (As `snet-engine`'s `loom_tests::check`.)
pub(crate) fn check(max_preemptions: usize, f: impl Fn() + Sync + Send + 'static) {
    let mut b = loom::model::Builder::new();
    let full = std::env::var_os("SNET_LOOM_FULL").is_some();
    let bound = match b.preemption_bound {
        Some(p) if full => p,
        Some(p) => p.min(max_preemptions),
        None => max_preemptions,
    };
    b.preemption_bound = Some(bound);
    // Spinning (a polling consumer, a producer facing a full ring) yields at
    // every turn, but a long schedule still takes many branches.
    b.max_branches = b.max_branches.max(20_000);
    let runs = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = runs.clone();
    let start = std::time::Instant::now();
    b.check(move || {
        counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        f()
    });
    // Shown with `--nocapture`.
    println!(
        "{}: {} executions, preemption bound {bound}, {:.1?}",
        std::thread::current().name().unwrap_or("model"),
        runs.load(std::sync::atomic::Ordering::Relaxed),
        start.elapsed()
    );
}

/// A ring in a heap region, shared by a model's threads (one handle: the
/// loom futex stand-in and shadow cells live in it), and the harness's
/// stand-in for "wait for room": loom cannot explore spinning producers.
pub(crate) struct Shared {
    // Declared first: dropped before the region it points into.
    pub(crate) ring: Ring,
    _region: HeapRegion,
    /// Locked by the consumer after each pop (then notifying), and by a
    /// producer that found the ring full, to retry and wait.
    space: Mutex<()>,
    room: Condvar,
}

pub(crate) fn shared(slots: usize, mode: Notify) -> Arc<Shared> {
    let len = Ring::layout(slots, 8).unwrap();
    let region = HeapRegion::new(len);
    // SAFETY: the region lives in `Shared` as long as the ring.
    let ring = unsafe { Ring::init(region.as_ptr(), len, slots, 8, mode) }.unwrap();
    Arc::new(Shared {
        ring,
        _region: region,
        space: Mutex::new(()),
        room: Condvar::new(),
    })
}

/// Producer `p` pushes messages `0..n` (`[p, i]`). A push that finds the
/// ring full notifies (the consumer may be asleep behind it), then retries
/// under the `space` lock and waits for a pop. Only that path synchronises
/// through the lock: a push that finds room relies on the ring's orderings
/// alone.
pub(crate) fn produce(s: &Shared, p: u8, n: u8) {
    for i in 0..n {
        if s.ring.try_push(&[p, i]).is_err() {
            s.ring.after_push();
            let mut g = s.space.lock().unwrap();
            while s.ring.try_push(&[p, i]).is_err() {
                g = s.room.wait(g).unwrap();
            }
        }
        s.ring.after_push();
    }
}

/// The consumer takes `total` messages, waiting with the ring's mode
/// (`spins` looks before sleeping in sparse mode), and checks each
/// producer's come exactly once and in order.
pub(crate) fn consume(s: &Shared, producers: usize, total: usize, spins: u32) {
    let mut c = s.ring.consumer().unwrap();
    c.set_spins(spins);
    let mut next = vec![0u8; producers];
    let mut got = 0;
    while got < total {
        match c.try_pop(|m| (m[0] as usize, m[1])) {
            Some((p, i)) => {
                assert_eq!(i, next[p], "producer {p}: lost, duplicated or reordered");
                next[p] += 1;
                got += 1;
                drop(s.space.lock().unwrap());
                s.room.notify_all();
            }
            None => {
                c.wait(None);
            }
        }
    }
    assert!(c.try_pop(|_| ()).is_none(), "a message too many");
}
