//! How a ring's consumer waits and its producers wake it: the SCC library's
//! three notification modes (thesis ch. 5.1.3 and 6.2.1, `runtime.md` §4)
//! on futexes in the shared segment.
//!
//! * [`Notify::Poll`]: the consumer spins on the ring (then yields between
//!   looks); producers never make a system call. Lowest latency, a core
//!   busy while idle.
//! * [`Notify::Interrupt`]: the consumer sleeps on a futex word, `event`;
//!   every push is followed by `event += 1` and a `FUTEX_WAKE` (the SCC's
//!   inter-core interrupt after every message). No CPU while idle; a system
//!   call per push.
//! * [`Notify::Sparse`] (sparse polling): the consumer polls while there is
//!   work and sleeps only when it runs out; it publishes a `sleeping` flag
//!   (the thesis's inverted "handling" flag), and a producer makes the
//!   `FUTEX_WAKE` call only when the flag says the consumer sleeps. No CPU
//!   while idle; no system call while the consumer is busy.
//!
//! The words live in the ring's header (one cache line: `event`, `sleeping`,
//! `kicked`), and the futex calls go *without* `FUTEX_PRIVATE_FLAG`, since
//! the waiter and the wakers are different processes. The futex contract
//! used below: `wait(word, expected)` sleeps only if `word == expected` when
//! the kernel checks, atomically with respect to `wake`; so a `wake` issued
//! after a store to `word` either finds the waiter queued or the waiter's
//! check sees the store. Waits may return spuriously (signals, timeouts);
//! [`crate::Consumer::wait`]'s callers loop.
//!
//! # No lost wake-up: the orderings
//!
//! **Interrupt.** Consumer: `v = event.load(Acquire)` **(IA)**; look at the
//! ring; if empty, `futex_wait(event, v)`. Producer: publish (the ring's
//! R1), `event.fetch_add(1, Release)` **(IR)**, `futex_wake(event)`.
//! IR → IA: if the consumer's `v` already counts the producer's increment,
//! the publication (sequenced before IR) happens before the consumer's look,
//! which sees the message. Otherwise the increment comes after `v` in
//! `event`'s modification order, so the kernel's check fails (`event != v`)
//! or the wake that follows the increment finds the consumer queued.
//!
//! **Sparse.** Consumer, going to sleep:
//! 1. `sleeping.swap(1, SeqCst)` (raise the flag);
//! 2. `fence(SeqCst)` **(F1)**;
//! 3. look at the ring (the head slot's `seq`, Acquire) and at `kicked`; if
//!    anything is there: `sleeping.swap(0)`, return;
//! 4. `futex_wait(sleeping, 1)`; then `sleeping.swap(0)` (a waker already
//!    cleared it, unless the wait timed out or was spurious).
//!
//! Producer, after publishing (the ring's R1):
//! 1. `fence(SeqCst)` **(F2)**;
//! 2. if `sleeping.load() == 1` and `sleeping.swap(0) == 1`: `futex_wake(sleeping)`.
//!
//! This is the store-buffering pattern (each side writes its word, then
//! reads the other's), which needs the two SeqCst fences: they are ordered
//! in the single total order S. Suppose the consumer sleeps for ever in a
//! round whose look (step 3) missed the message of some producer. Had F2
//! come before F1 in S, the look (after F1) would have seen the publication
//! (before F2); so F1 precedes F2, and the producer's load (after F2) reads
//! the consumer's step-1 write or a later one. The later writes to
//! `sleeping` are the consumer's own clearing (not in its final round) and
//! producers' swaps. If the producer's swap reads 1, it wakes (the futex
//! contract: the consumer's check sees 0 or it is queued and woken); if its
//! load or swap reads 0, an earlier swap after the consumer's write read 1
//! and woke it. Either way the consumer wakes: a contradiction. A swap that
//! read a *previous* round's 1 only causes a spurious wake-up. The swap (not
//! a plain store) makes only one of many producers pay for the system call.
//!
//! Every write to `sleeping` is a read-modify-write. The argument needs
//! only the fences (a Relaxed store would do for the consumer's writes), but
//! with RMWs alone the flag's modification order is simply the order in
//! which the writes happen, which is also what loom models exactly: with
//! plain stores loom leaves a store and an unrelated thread's earlier swap
//! unordered and reports a lost wake-up that C++20 forbids. The cost is
//! nil where it matters: on x86 a SeqCst store is an `xchg` anyway, and the
//! consumer only writes the flag around a sleep.
//!
//! A consumer asleep behind a head slot that its producer is still writing
//! is woken by every later publication (the head is not ready, so it sleeps
//! again): wake-ups without a message, bounded by the pushes, until the
//! head's producer publishes and wakes it for good.
//!
//! **Kick** ([`crate::Ring::kick`]): `kicked.store(1, Release)`, then the
//! mode's producer notification (in interrupt mode the event increment, in
//! sparse mode F2 and the flag check): the consumer's looks include
//! `kicked` (swapped back to 0 with Acquire, pairing with the Release), so
//! the argument above covers it unchanged, and whatever the kicker wrote
//! before kicking is visible after the wait returns.
//!
//! **Poll** has no handshake: the consumer keeps looking.
//!
//! `loom_tests/notify.rs` model-checks both handshakes (the futex replaced
//! by a loom mutex and condition variable with the same contract), and
//! lists the mutations the models catch.

use std::time::{Duration, Instant};

use crate::sync::{self, fence, AtomicU32, Futex, Ordering};

/// How a ring's consumer is notified; fixed when the ring is initialised.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Notify {
    /// The consumer busy-polls; producers never call the kernel.
    Poll,
    /// The consumer sleeps on a futex; producers wake it after every push.
    Interrupt,
    /// The consumer polls while busy and sleeps when idle; producers wake it
    /// only when its flag says it sleeps.
    Sparse,
}

impl Notify {
    pub(crate) fn to_word(self) -> u32 {
        match self {
            Notify::Poll => 1,
            Notify::Interrupt => 2,
            Notify::Sparse => 3,
        }
    }

    pub(crate) fn from_word(w: u32) -> Option<Notify> {
        match w {
            1 => Some(Notify::Poll),
            2 => Some(Notify::Interrupt),
            3 => Some(Notify::Sparse),
            _ => None,
        }
    }

    /// The mode's name as the command line spells it (`poll`, `interrupt`,
    /// `sparse`).
    pub fn name(self) -> &'static str {
        match self {
            Notify::Poll => "poll",
            Notify::Interrupt => "interrupt",
            Notify::Sparse => "sparse",
        }
    }

    /// The modes, in the order the command line lists them.
    pub const ALL: [Notify; 3] = [Notify::Poll, Notify::Interrupt, Notify::Sparse];
}

/// The mode named `s` (see [`Notify::name`]): `--notify`'s parser.
impl std::str::FromStr for Notify {
    type Err = UnknownMode;
    fn from_str(s: &str) -> Result<Notify, UnknownMode> {
        Notify::ALL
            .into_iter()
            .find(|m| m.name() == s)
            .ok_or_else(|| UnknownMode::new("notify", s))
    }
}

impl std::fmt::Display for Notify {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A name that is none of the modes of its kind ([`Notify`] or
/// [`FieldMode`](crate::FieldMode)).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownMode {
    /// `notify` or `field`.
    pub kind: &'static str,
    /// The name given.
    pub name: String,
}

impl UnknownMode {
    pub(crate) fn new(kind: &'static str, name: &str) -> UnknownMode {
        UnknownMode {
            kind,
            name: name.to_string(),
        }
    }
}

impl std::fmt::Display for UnknownMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "no {} mode `{}`", self.kind, self.name)
    }
}

impl std::error::Error for UnknownMode {}

/// How many looks a sparse-mode consumer takes before it sleeps (a few
/// hundred nanoseconds of spinning), unless set per consumer.
pub const DEFAULT_SPINS: u32 = 100;

/// A sleep shorter than this means a message came soon after the consumer
/// gave up looking: about the time of the longest spin a transport sets
/// (`SPARSE_SPINS` looks), so the spin would have caught it.
const SHORT_SLEEP: Duration = Duration::from_micros(50);

/// The spin a short sleep brings back from none (then doubled per short
/// sleep, up to the consumer's most).
const MIN_SPIN: u32 = 16;

/// A sparse-mode consumer's spin before it sleeps, adapted to how its
/// messages come. Spinning pays while messages follow each other closely (a
/// node exchanging records with busy peers: no system call on either side);
/// when they are sparse (a compute-bound node receiving a record every few
/// hundred microseconds) every spin ends in a sleep anyway, and its looks
/// take a core from the node's workers (about 5 % of each node's CPU in a
/// farm of 2 shm nodes on 2 cores, `bench/distfarm`). So: a spin that finds
/// a message keeps the budget; a sleep that ends soon ([`SHORT_SLEEP`]: a
/// longer spin would have found that message) doubles it (from none to
/// [`MIN_SPIN`]), up to the most; a longer sleep quarters it, down to 0
/// (sleep at once). Growing slower than it shrinks matters: a node whose
/// messages come in pairs (a record, then its window's credit) has a short
/// sleep and a long one per pair, and would otherwise keep spinning about
/// the whole budget in vain once a pair.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Spin {
    /// The most looks, set per consumer.
    max: u32,
    /// The looks the next wait takes.
    budget: u32,
}

impl Spin {
    pub(crate) const fn new(max: u32) -> Spin {
        Spin { max, budget: max }
    }

    /// After a sleep of `slept` (measured only where spinning is on).
    fn slept(&mut self, slept: Duration) {
        self.budget = if slept < SHORT_SLEEP {
            (self.budget.saturating_mul(2)).clamp(MIN_SPIN.min(self.max), self.max)
        } else {
            self.budget / 4
        };
    }
}

/// Spins of a polling consumer between yields (and timeout checks); one
/// under loom, whose spins are yields already (bounded model branches).
const POLL_SPINS: u32 = if cfg!(loom) { 1 } else { 64 };

/// The notification words in the ring's header (a cache line of their own).
#[repr(C)]
pub(crate) struct NotifyWords {
    /// Interrupt mode: the futex word, incremented after every push.
    event: AtomicU32,
    /// Sparse mode: the futex word, 1 while the consumer sleeps or is about
    /// to.
    sleeping: AtomicU32,
    /// 1 after a kick, until a wait takes it.
    kicked: AtomicU32,
}

impl NotifyWords {
    /// Places the words, zeroed, at `p` (ring initialisation).
    ///
    /// # Safety
    /// As `sync::place_u64`.
    pub(crate) unsafe fn place(p: *mut NotifyWords) {
        // SAFETY: the caller's contract; the fields are aligned in bounds.
        unsafe {
            sync::place_u32(&raw mut (*p).event, 0);
            sync::place_u32(&raw mut (*p).sleeping, 0);
            sync::place_u32(&raw mut (*p).kicked, 0);
        }
    }

    /// Takes a pending kick.
    fn take_kick(&self) -> bool {
        // Acquire: pairs with the kicker's Release store.
        self.kicked.load(Ordering::Relaxed) != 0 && self.kicked.swap(0, Ordering::Acquire) != 0
    }
}

/// The consumer's wait (see the module docs); `ready` looks at the ring.
/// Returns whether a message (or a kick) is there.
pub(crate) fn wait(
    mode: Notify,
    w: &NotifyWords,
    futex: &Futex,
    spin: &mut Spin,
    ready: impl Fn() -> bool,
    timeout: Option<Duration>,
) -> bool {
    let look = || ready() || w.take_kick();
    match mode {
        Notify::Poll => {
            // The clock is read after the first round of looks, not before:
            // a message arriving at once is noticed sooner.
            let mut deadline = None;
            loop {
                for _ in 0..POLL_SPINS {
                    if look() {
                        return true;
                    }
                    sync::spin_hint();
                }
                if let Some(t) = timeout {
                    let now = Instant::now();
                    if now >= *deadline.get_or_insert(now + t) {
                        return false;
                    }
                }
                sync::yield_now();
            }
        }
        Notify::Interrupt => {
            // IA: pairs with the producers' IR.
            let v = w.event.load(Ordering::Acquire);
            if look() {
                return true;
            }
            futex.wait(&w.event, v, timeout);
            look()
        }
        Notify::Sparse => {
            for _ in 0..spin.budget {
                if look() {
                    return true;
                }
                sync::spin_hint();
            }
            w.sleeping.swap(1, Ordering::SeqCst);
            // F1: orders the flag store before the look (pairs with F2).
            fence(Ordering::SeqCst);
            if look() {
                w.sleeping.swap(0, Ordering::Relaxed);
                return true;
            }
            // The clock is read only where a spin is on, never under loom
            // (whose models must not depend on time).
            let since = (spin.max > 0 && !cfg!(loom)).then(Instant::now);
            futex.wait(&w.sleeping, 1, timeout);
            w.sleeping.swap(0, Ordering::Relaxed);
            if let Some(t) = since {
                spin.slept(t.elapsed());
            }
            look()
        }
    }
}

/// A producer's notification after one or more publications.
pub(crate) fn after_push(mode: Notify, w: &NotifyWords, futex: &Futex) {
    match mode {
        Notify::Poll => {}
        Notify::Interrupt => {
            // IR: pairs with the consumer's IA.
            w.event.fetch_add(1, Ordering::Release);
            futex.wake(&w.event);
        }
        Notify::Sparse => {
            // F2: orders the publication before the flag load (pairs with F1).
            fence(Ordering::SeqCst);
            if w.sleeping.load(Ordering::Relaxed) != 0 && w.sleeping.swap(0, Ordering::Relaxed) != 0
            {
                futex.wake(&w.sleeping);
            }
        }
    }
}

/// Wakes the consumer without a message (see the module docs).
pub(crate) fn kick(mode: Notify, w: &NotifyWords, futex: &Futex) {
    // Release: pairs with the Acquire in `take_kick`.
    w.kicked.store(1, Ordering::Release);
    after_push(mode, w, futex);
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::{HeapRegion, Ring};
    use std::sync::atomic::AtomicBool;
    use std::sync::Arc;

    #[test]
    fn names() {
        for m in Notify::ALL {
            assert_eq!(m.name().parse(), Ok(m));
            assert_eq!(m.to_string(), m.name());
            assert_eq!(Notify::from_word(m.to_word()), Some(m));
        }
        assert_eq!(
            "busy".parse::<Notify>().unwrap_err().to_string(),
            "no notify mode `busy`"
        );
        assert_eq!(Notify::from_word(0), None);
    }

    fn ring(mode: Notify) -> (HeapRegion, Ring) {
        let len = Ring::layout(2, 8).unwrap();
        let region = HeapRegion::new(len);
        // SAFETY: the region is returned with the ring and outlives it.
        let r = unsafe { Ring::init(region.as_ptr(), len, 2, 8, mode) }.unwrap();
        (region, r)
    }

    #[test]
    fn wait_times_out_when_idle() {
        for mode in [Notify::Poll, Notify::Interrupt, Notify::Sparse] {
            let (_region, r) = ring(mode);
            let mut c = r.consumer().unwrap();
            assert!(!c.wait(Some(Duration::from_millis(1))), "{mode:?}");
            r.try_push(b"x").unwrap();
            r.after_push();
            assert!(c.wait(Some(Duration::from_millis(1))), "{mode:?}");
            assert!(c.try_pop(|_| ()).is_some());
        }
    }

    /// Long sleeps quarter the spin down to none; short sleeps (messages
    /// coming close together again) double it back from `MIN_SPIN` to the
    /// most; a short and a long sleep in turn keep it small.
    #[test]
    fn spin_shrinks_while_sleeps_are_long_and_grows_back_while_short() {
        let mut s = Spin::new(2000);
        s.slept(Duration::from_millis(1));
        assert_eq!(s.budget, 500);
        for _ in 0..20 {
            s.slept(SHORT_SLEEP);
        }
        assert_eq!(s.budget, 0);
        s.slept(Duration::from_micros(5));
        assert_eq!(s.budget, MIN_SPIN);
        for _ in 0..20 {
            s.slept(Duration::ZERO);
        }
        assert_eq!(s.budget, 2000);
        for _ in 0..20 {
            s.slept(Duration::ZERO);
            s.slept(Duration::from_millis(1));
        }
        assert!(s.budget <= MIN_SPIN, "{}", s.budget);
        let mut none = Spin::new(0);
        none.slept(Duration::ZERO);
        assert_eq!(none.budget, 0);
    }

    #[test]
    fn kick_is_sticky_until_a_wait_takes_it() {
        for mode in [Notify::Poll, Notify::Interrupt, Notify::Sparse] {
            let (_region, r) = ring(mode);
            let mut c = r.consumer().unwrap();
            r.kick();
            assert!(c.wait(None), "{mode:?}");
            assert!(!c.wait(Some(Duration::from_millis(1))), "{mode:?}");
        }
    }

    /// A consumer thread asleep (no timeout) is woken by a kick from another
    /// thread, which set a stop flag first.
    #[test]
    fn kick_wakes_a_sleeper() {
        for mode in [Notify::Poll, Notify::Interrupt, Notify::Sparse] {
            let (region, r) = ring(mode);
            let stop = Arc::new(AtomicBool::new(false));
            let r = Arc::new(r);
            let t = {
                let (r, stop) = (r.clone(), stop.clone());
                std::thread::spawn(move || {
                    let mut c = r.consumer().unwrap();
                    c.set_spins(0);
                    while !stop.load(Ordering::Acquire) {
                        c.wait(None);
                    }
                })
            };
            std::thread::sleep(Duration::from_millis(if cfg!(miri) { 0 } else { 20 }));
            stop.store(true, Ordering::Release);
            r.kick();
            t.join().unwrap();
            drop(region);
        }
    }
}
