//! The sleep/wake handshakes ([`crate::notify`]): `wait`, `after_push` and
//! `kick`, through `Consumer::wait`, `Ring::after_push` and `Ring::kick`.
//!
//! The futex is loom's stand-in (`sync::Futex`: the value check and the
//! queueing atomic with respect to a wake, under a loom mutex; a condition
//! variable as the wait queue; no timeouts). Consumers wait without a
//! timeout, so a lost wake-up leaves every thread blocked, which loom
//! reports as a deadlock.
//!
//! Models:
//! * `sparse_two_producers`, `interrupt_two_producers`: 4 slots, 2
//!   producers pushing 1 message each, the consumer sleeping at once when
//!   idle (`spins = 0`).
//! * `sparse_one_producer_fills`, `interrupt_one_producer_fills`: 2 slots,
//!   one producer pushing 3 (it meets a full ring and must notify before
//!   retrying), the consumer sleeping at once.
//! * `sparse_spin_then_sleep`: as `sparse_two_producers` with one look
//!   before sleeping (`spins = 1`).
//! * `kick_sparse`, `kick_interrupt`: no messages; a thread sets a stop
//!   flag, then kicks; the consumer loops `while !stop { wait(None) }` and
//!   must see the flag.

use loom::sync::atomic::AtomicBool;
use loom::thread;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::{check, consume, produce, shared};
use crate::Notify;

fn two_producers(mode: Notify, spins: u32) {
    check(3, move || {
        let s = shared(4, mode);
        let producers: Vec<_> = (0..2)
            .map(|p| {
                let s = s.clone();
                thread::spawn(move || produce(&s, p, 1))
            })
            .collect();
        consume(&s, 2, 2, spins);
        for p in producers {
            p.join().unwrap();
        }
    });
}

fn one_producer_fills(mode: Notify) {
    check(3, move || {
        let s = shared(2, mode);
        let p = {
            let s = s.clone();
            thread::spawn(move || produce(&s, 0, 3))
        };
        consume(&s, 1, 3, 0);
        p.join().unwrap();
    });
}

fn kick(mode: Notify) {
    check(3, move || {
        let s = shared(2, mode);
        let stop = Arc::new(AtomicBool::new(false));
        let consumer = {
            let (s, stop) = (s.clone(), stop.clone());
            thread::spawn(move || {
                let mut c = s.ring.consumer().unwrap();
                c.set_spins(0);
                while !stop.load(Ordering::Relaxed) {
                    c.wait(None);
                }
            })
        };
        // Relaxed: the kick's Release/Acquire must carry the flag.
        stop.store(true, Ordering::Relaxed);
        s.ring.kick();
        consumer.join().unwrap();
    });
}

#[test]
fn sparse_two_producers() {
    two_producers(Notify::Sparse, 0);
}

#[test]
fn sparse_spin_then_sleep() {
    two_producers(Notify::Sparse, 1);
}

#[test]
fn interrupt_two_producers() {
    two_producers(Notify::Interrupt, 0);
}

#[test]
fn sparse_one_producer_fills() {
    one_producer_fills(Notify::Sparse);
}

#[test]
fn interrupt_one_producer_fills() {
    one_producer_fills(Notify::Interrupt);
}

#[test]
fn kick_sparse() {
    kick(Notify::Sparse);
}

#[test]
fn kick_interrupt() {
    kick(Notify::Interrupt);
}
