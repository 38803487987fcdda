//! The slot protocol ([`crate::ring`]): `Ring::reserve`, `try_push_with`,
//! `Consumer::try_pop`, the consumer claim, used as the transport will.
//!
//! Models (every interleaving up to the preemption bound). The consumer
//! sleeps in sparse mode when the head is not ready (loom cannot explore a
//! spinning consumer; `notify.rs` checks the handshake itself); a producer
//! that finds the ring full waits for a pop through the harness's lock
//! (`super::produce`), so a push that finds room relies on the ring's
//! orderings alone. In every model the consumer asserts that each
//! producer's messages arrive exactly once and in order, with the payload
//! written (`[p, i]`), and loom's race detector checks (through the shadow
//! cells) that no payload is read before it is published or overwritten
//! while it is read.
//! * `ring_race_and_lap`: 2 slots, producer 0 pushes 2 messages and
//!   producer 1 one: they race for positions, the third message reuses a
//!   slot (the consumer's `head` store, R2, against the producer's A1, or
//!   against A1h when another producer thread refreshed the hint), and a
//!   producer may find the ring full. Bound 3.
//! * `ring_two_producers_two_each`: 2 slots, 2 producers pushing 2 each:
//!   two laps, `Full` on both sides. Bound 2 (bound 3 takes minutes).
//! * `ring_consumer_hand_over`: 2 messages; a consumer handle takes one and
//!   is dropped, while another thread keeps trying to claim the ring; once
//!   it has it (only the claim word orders it after the first handle's pop),
//!   it must take exactly the second message.

use loom::thread;

use super::{check, consume, produce, shared};
use crate::Notify;

/// Producer `p` pushes `counts[p]` messages into a ring of `slots` slots;
/// the model's main thread consumes.
fn model(bound: usize, slots: usize, counts: &'static [u8]) {
    check(bound, move || {
        let s = shared(slots, Notify::Sparse);
        let producers: Vec<_> = counts
            .iter()
            .enumerate()
            .map(|(p, &n)| {
                let s = s.clone();
                thread::spawn(move || produce(&s, p as u8, n))
            })
            .collect();
        let total = counts.iter().map(|&n| n as usize).sum();
        consume(&s, counts.len(), total, 0);
        for p in producers {
            p.join().unwrap();
        }
    });
}

#[test]
fn ring_race_and_lap() {
    model(3, 2, &[2, 1]);
}

#[test]
fn ring_two_producers_two_each() {
    model(2, 2, &[2, 2]);
}

#[test]
fn ring_consumer_hand_over() {
    check(3, || {
        let s = shared(2, Notify::Sparse);
        produce(&s, 0, 2);
        let mut c = s.ring.consumer().unwrap();
        // Spawned after the claim: it can only get the ring once the
        // first handle is dropped, and only the claim word orders it
        // after that handle's pop.
        let second = {
            let s = s.clone();
            thread::spawn(move || {
                let mut c = loop {
                    match s.ring.consumer() {
                        Ok(c) => break c,
                        Err(_) => thread::yield_now(),
                    }
                };
                loop {
                    if let Some(m) = c.try_pop(|m| m.to_vec()) {
                        assert_eq!(m, [0, 1], "the second handle did not continue at the head");
                        break;
                    }
                    c.wait(None);
                }
                assert!(c.try_pop(|_| ()).is_none());
            })
        };
        assert_eq!(c.try_pop(|m| m.to_vec()).unwrap(), [0, 0]);
        drop(c);
        second.join().unwrap();
    });
}
