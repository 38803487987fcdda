//! Diagnostic: 8-byte round trips between two pinned threads, through
//! layers of the shared-memory transport, to see what each layer costs.
//! `cargo run --release -p snet-cli --example ringpong [reps] [solo]`
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use snet_core::{FieldBytes, Rank};
use snet_engine::dist::{Channel, Payload, Transport};
use snet_shm::{FieldMode, Geometry, HeapRegion, Notify, Ring, ShmTransport};

// snet's global allocator, as in the `snet` command.
use snet_runner as _;

#[path = "../src/bench/pin.rs"]
mod pin;

/// Two polled rings of 256 slots of `payload` bytes, with their memory.
fn two_rings(payload: usize) -> ([HeapRegion; 2], Ring, Ring) {
    let len = Ring::layout(256, payload).unwrap();
    let regions = [HeapRegion::new(len), HeapRegion::new(len)];
    // SAFETY: each region is returned with its ring and outlives it.
    let r0 = unsafe { Ring::init(regions[0].as_ptr(), len, 256, payload, Notify::Poll) }.unwrap();
    // SAFETY: as above.
    let r1 = unsafe { Ring::init(regions[1].as_ptr(), len, 256, payload, Notify::Poll) }.unwrap();
    (regions, r0, r1)
}

fn median(mut v: Vec<u64>) -> u64 {
    v.sort_unstable();
    v[v.len() / 2]
}

fn run(name: &str, reps: usize, ping: impl FnMut() + Send, pong: impl FnMut() + Send) {
    let (mut ping, mut pong) = (ping, pong);
    let times = std::thread::scope(|s| {
        s.spawn(move || {
            pin::pin(1);
            for _ in 0..reps + reps / 10 {
                pong();
            }
        });
        pin::pin(0);
        let mut t = Vec::with_capacity(reps);
        for r in 0..reps + reps / 10 {
            let a = Instant::now();
            ping();
            if r >= reps / 10 {
                t.push(a.elapsed().as_nanos() as u64);
            }
        }
        t
    });
    println!("{name:>12}: median {} ns", median(times));
}

fn main() {
    if std::env::args().nth(2).as_deref() == Some("solo") {
        return solo(
            std::env::args()
                .nth(1)
                .map_or(1_000_000, |s| s.parse().unwrap()),
        );
    }
    let reps: usize = std::env::args()
        .nth(1)
        .map_or(200_000, |s| s.parse().unwrap());
    // raw: two lines
    #[repr(align(64))]
    struct L(AtomicU64);
    let (a, b) = (L(AtomicU64::new(0)), L(AtomicU64::new(0)));
    let (mut i, mut j) = (0u64, 0u64);
    run(
        "raw-spin",
        reps,
        || {
            i += 1;
            a.0.store(i, Ordering::Release);
            while b.0.load(Ordering::Acquire) != i {
                std::hint::spin_loop();
            }
        },
        || {
            j += 1;
            while a.0.load(Ordering::Acquire) != j {
                std::hint::spin_loop();
            }
            b.0.store(j, Ordering::Release);
        },
    );
    // ring level: two rings
    for payload in [4080, 240] {
        let (_regions, r0, r1) = two_rings(payload);
        {
            let mut c0 = r0.consumer().unwrap();
            let mut c1 = r1.consumer().unwrap();
            let msg = [7u8; 33];
            let (r0, r1) = (&r0, &r1);
            run(
                &format!("ring {payload}"),
                reps,
                || {
                    r1.try_push(&msg).unwrap();
                    r1.after_push();
                    while c0.try_pop(|m| m.len()).is_none() {
                        std::hint::spin_loop();
                    }
                },
                || {
                    while c1.try_pop(|m| m.len()).is_none() {
                        std::hint::spin_loop();
                    }
                    r0.try_push(&msg).unwrap();
                    r0.after_push();
                },
            );
        }
    }
    // transport level: an 8-byte message (header only)
    {
        let g = Geometry::new(2, Notify::Poll, FieldMode::ZeroCopy);
        let t = ShmTransport::in_process(g).unwrap();
        let (t0, t1) = (&t[0], &t[1]);
        let recv = |t: &ShmTransport| loop {
            if let Some(m) = t.recv(Duration::from_secs(10)).unwrap() {
                return m;
            }
        };
        let mut n = 0u64;
        run(
            "shm message",
            reps,
            || {
                n += 1;
                t0.send(Rank(1), Channel::Control, &n.to_le_bytes(), Payload::none())
                    .unwrap();
                recv(t0);
            },
            || {
                let m = recv(t1);
                t1.send(Rank(0), Channel::Control, &m.header, Payload::none())
                    .unwrap();
            },
        );
    }
    // transport level: an 8-byte field
    for fields in [FieldMode::Chunked, FieldMode::ZeroCopy] {
        let g = Geometry::new(2, Notify::Poll, fields);
        let t = ShmTransport::in_process(g).unwrap();
        let (t0, t1) = (&t[0], &t[1]);
        let recv = |t: &ShmTransport| loop {
            if let Some(m) = t.recv(Duration::from_secs(10)).unwrap() {
                return m;
            }
        };
        let mut buf = Some(FieldBytes::copy_from(&[1u8; 8]));
        run(
            &format!("shm {fields:?}"),
            reps,
            || {
                t0.send(
                    Rank(1),
                    Channel::Field,
                    &[1],
                    Payload::shared(Arc::new(buf.take().unwrap())),
                )
                .unwrap();
                buf = Some(recv(t0).payload);
            },
            || {
                let m = recv(t1);
                t1.send(
                    Rank(0),
                    Channel::Field,
                    &m.header,
                    Payload::shared(Arc::new(m.payload)),
                )
                .unwrap();
            },
        );
    }
}

/// The software cost alone: one thread plays both ends (no cache line
/// travels between cores), so the time is what the code costs.
fn solo(reps: usize) {
    let (_regions, r0, r1) = two_rings(4080);
    let mut c0 = r0.consumer().unwrap();
    let mut c1 = r1.consumer().unwrap();
    let msg = [7u8; 33];
    let mut best = u64::MAX;
    for _ in 0..5 {
        let a = Instant::now();
        for _ in 0..reps {
            r1.try_push(&msg).unwrap();
            r1.after_push();
            c1.try_pop(|m| m.len()).unwrap();
            r0.try_push(&msg).unwrap();
            r0.after_push();
            c0.try_pop(|m| m.len()).unwrap();
        }
        best = best.min(a.elapsed().as_nanos() as u64 / reps as u64);
    }
    println!("{:>12}: {best} ns per round trip (one thread)", "ring");
    {
        let g = Geometry::new(2, Notify::Poll, FieldMode::ZeroCopy);
        let t = ShmTransport::in_process(g).unwrap();
        let (t0, t1) = (&t[0], &t[1]);
        let mut best = u64::MAX;
        for _ in 0..5 {
            let a = Instant::now();
            for n in 0..reps as u64 {
                t0.send(Rank(1), Channel::Control, &n.to_le_bytes(), Payload::none())
                    .unwrap();
                let m = t1.recv(Duration::ZERO).unwrap().unwrap();
                t1.send(Rank(0), Channel::Control, &m.header, Payload::none())
                    .unwrap();
                t0.recv(Duration::ZERO).unwrap().unwrap();
            }
            best = best.min(a.elapsed().as_nanos() as u64 / reps as u64);
        }
        println!(
            "{:>12}: {best} ns per round trip (one thread)",
            "shm message"
        );
    }
    let fields: &[FieldMode] = if std::env::var_os("RINGPONG_MESSAGE_ONLY").is_some() {
        &[]
    } else {
        &[FieldMode::Chunked, FieldMode::ZeroCopy]
    };
    for &fields in fields {
        let g = Geometry::new(2, Notify::Poll, fields);
        let t = ShmTransport::in_process(g).unwrap();
        let (t0, t1) = (&t[0], &t[1]);
        let mut buf = Some(FieldBytes::copy_from(&[1u8; 8]));
        let mut best = u64::MAX;
        for _ in 0..5 {
            let a = Instant::now();
            for _ in 0..reps {
                t0.send(
                    Rank(1),
                    Channel::Field,
                    &[1],
                    Payload::shared(Arc::new(buf.take().unwrap())),
                )
                .unwrap();
                let m = t1.recv(Duration::ZERO).unwrap().unwrap();
                t1.send(
                    Rank(0),
                    Channel::Field,
                    &m.header,
                    Payload::shared(Arc::new(m.payload)),
                )
                .unwrap();
                buf = Some(t0.recv(Duration::ZERO).unwrap().unwrap().payload);
            }
            best = best.min(a.elapsed().as_nanos() as u64 / reps as u64);
        }
        println!(
            "{:>12}: {best} ns per round trip (one thread)",
            format!("shm {fields:?}")
        );
    }
}
