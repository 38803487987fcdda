//! The slot protocol ([`crate::ring`]): `Ring::reserve`, `try_push_with`,
//! `Consumer::try_pop`, the consumer claim, used as the transport will.
//!
//! Models (every interleaving up to the preemption bound; the consumer
//! polls, `Mode::Poll`, so only the slot protocol is under test):
//! * `ring_two_producers_two_each`: 2 slots, 2 producers pushing 2 messages
//!   each, the consumer taking 4: the ring fills, wraps, and producers race
//!   for positions. Each producer's messages arrive once and in order (the
//!   consumer asserts it), the payload read is the one written (`[p, i]`),
//!   and loom's race detector checks that no payload is written while it is
//!   read (the shadow cells) or read before it is published.
//! * `ring_one_producer_laps`: 2 slots, one producer pushing 3 messages
//!   (it laps the consumer: a `Full`, then a slot reused) and one pushing 1.
//! * `ring_consumer_hand_over`: 2 messages; a consumer handle takes one and
//!   is dropped, another handle (in another thread) claims the ring and
//!   must take exactly the second.

use loom::thread;

use super::{check, consume, produce, shared};
use crate::Mode;

#[test]
fn ring_two_producers_two_each() {
    check(3, || {
        let s = shared(2, Mode::Sparse);
        let producers: Vec<_> = (0..2)
            .map(|p| {
                let s = s.clone();
                thread::spawn(move || produce(&s, p, 2))
            })
            .collect();
        consume(&s, 2, 4, 0);
        for p in producers {
            p.join().unwrap();
        }
    });
}

#[test]
fn ring_one_producer_laps() {
    check(3, || {
        let s = shared(2, Mode::Sparse);
        let a = {
            let s = s.clone();
            thread::spawn(move || produce(&s, 0, 3))
        };
        let b = {
            let s = s.clone();
            thread::spawn(move || produce(&s, 1, 1))
        };
        consume(&s, 2, 4, 0);
        a.join().unwrap();
        b.join().unwrap();
    });
}

#[test]
fn ring_consumer_hand_over() {
    check(3, || {
        let s = shared(2, Mode::Sparse);
        let producer = {
            let s = s.clone();
            thread::spawn(move || produce(&s, 0, 2))
        };
        let first = {
            let s = s.clone();
            thread::spawn(move || {
                let mut c = s.ring.consumer().unwrap();
                loop {
                    if let Some(m) = c.try_pop(|m| m.to_vec()) {
                        assert_eq!(m, [0, 0]);
                        return;
                    }
                    c.wait(None);
                }
            })
        };
        first.join().unwrap();
        let mut c = s.ring.consumer().expect("released by the first handle");
        loop {
            if let Some(m) = c.try_pop(|m| m.to_vec()) {
                assert_eq!(m, [0, 1]);
                break;
            }
            c.wait(None);
        }
        producer.join().unwrap();
        assert!(c.try_pop(|_| ()).is_none());
    });
}
