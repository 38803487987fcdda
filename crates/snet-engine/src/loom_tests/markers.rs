//! Marker weights ([`crate::entity::Marker`], [`crate::entity::Arrivals`],
//! [`crate::weight`]) through a real deterministic collector.
//!
//! Markers `(owner, s)`, each carrying a payload (a marker of an enclosing
//! owner, numbered `s` too), are split with `Marker::split` where a path
//! forks, and the copies reach the owner's collector (`Kind::Collector`,
//! processed with the real `instantiate::process`) from different loom
//! threads through its inbox (`Entity::offer`; whoever gets the licence
//! processes with `next_or_release`). The last thread also sends a record
//! stamped with the next number, which the collector must hold back until
//! every marker before it completed.
//!
//! * `marker_split_three_ways`: marker 0 split into three copies at once.
//! * `marker_split_then_resplit`: marker 0 split in two, one copy split
//!   again on its way (a star stage behind a parallel).
//! * `marker_two_numbers_out_of_order`: markers 0 and 1, two copies each,
//!   sent so that 1 may complete first (its payload must wait for 0).
//!
//! After each processed item the holder records what the collector emitted
//! and how many copies of each marker had been processed. Checked, in
//! every interleaving:
//! * a marker completes exactly once, on the arrival of its *last* copy
//!   (never early): its payload is emitted once, and only when every copy
//!   of it and of every earlier marker has arrived; payloads leave in
//!   sequence order;
//! * the held-back record is emitted once, after the payloads;
//! * nothing else is emitted, and the payload travels with exactly one copy.
//!
//! Sizes: three or four copies and one record over three threads (main
//! included). Preemption bound 3.
//!
//! Run: `LOOM_MAX_PREEMPTIONS=3 RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom
//! cargo test --release -q -p snet-engine --lib loom_tests::markers` (add
//! `-- --nocapture` for the number of executions explored).

use std::sync::Arc;

use loom::cell::UnsafeCell;
use loom::thread;
use snet_core::{Rank, Record};

use crate::collector::Collector;
use crate::dist::ConnId;
use crate::entity::{Entity, Item, Marker, Offer, Rec, Stamps};
use crate::remote::RemoteEntity;
use crate::runtime::{process, Ctx, Kind, Runtime};

const OWNER: u64 = 7;
const OUTER: u64 = 99;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Seen {
    /// The payload of the owner's marker with this sequence number.
    Payload(u64),
    Rec,
}

/// What the collector's licence holder observed: copies processed so far
/// per sequence number, and each emission with those counts at the time.
#[derive(Default)]
struct Log {
    copies: Vec<usize>,
    emitted: Vec<(Vec<usize>, Seen)>,
}

struct Obs(UnsafeCell<Log>);

// SAFETY: the log is touched only by the collector's licence holder (or
// after every thread was joined); loom checks that too.
unsafe impl Sync for Obs {}

struct Setup {
    rt: Runtime,
    collector: Arc<Entity>,
    /// The collector's successor: never processed, its inbox is the output.
    next: Arc<Entity>,
    obs: Obs,
}

fn setup() -> Arc<Setup> {
    let rt = super::runtime(0, 1);
    let next = Entity::new(Kind::Remote(RemoteEntity::new(
        Rank(1),
        ConnId {
            origin: Rank(0),
            seq: 0,
        },
    )));
    let collector = Entity::new(Kind::Collector(Collector::new(OWNER, next.clone())));
    Arc::new(Setup {
        rt,
        collector,
        next,
        obs: Obs(UnsafeCell::new(Log::default())),
    })
}

fn record_stamped(seq: u64) -> Item {
    let mut det = Stamps::new();
    det.push(seq);
    Item::Rec(Rec {
        rec: Record::new(),
        det,
        origin: crate::Origin::NONE,
        custody: None,
    })
}

/// Sends `item` to the collector as a worker would; runs it if licensed.
fn send(s: &Setup, item: Item) {
    let Offer::Licensed(mut it) = s.collector.offer(item) else {
        return;
    };
    let mut ctx = Ctx::new(&s.rt);
    loop {
        let copy = match &it {
            Item::Marker(m) if m.owner == OWNER => Some(m.seq as usize),
            _ => None,
        };
        process(&s.collector, it, &mut ctx).expect("collector");
        // What the collector sent on: a licence for `next` (when idle) and
        // whatever queued behind it; take it all, releasing `next`.
        let mut out: Vec<Item> = ctx.ready.drain(..).map(|(_, i)| i).collect();
        while let Some(i) = s.next.next_or_release() {
            out.push(i);
        }
        s.obs.0.with_mut(|log| {
            // SAFETY: we hold the collector's licence.
            let log = unsafe { &mut *log };
            if let Some(seq) = copy {
                if log.copies.len() <= seq {
                    log.copies.resize(seq + 1, 0);
                }
                log.copies[seq] += 1;
            }
            for i in out {
                let seen = match i {
                    Item::Marker(m) if m.owner == OUTER => Seen::Payload(m.seq),
                    Item::Rec(r) => {
                        assert!(r.det.is_empty(), "the collector pops its stamp");
                        Seen::Rec
                    }
                    other => panic!("unexpected emission {other:?}"),
                };
                log.emitted.push((log.copies.clone(), seen));
            }
        });
        match s.collector.next_or_release() {
            Some(next) => it = next,
            None => return,
        }
    }
}

/// Delivers `lists[k]` from thread `k` (the last list from main): copies
/// of the owner's markers `0..n` (each with its sequence number as the
/// payload's), and a record stamped `n`.
fn marker_model(lists: fn() -> Vec<Vec<Item>>) {
    super::check(3, move || {
        let s = setup();
        let mut lists = lists();
        // Copies per sequence number; the payload travels with exactly one.
        let mut total: Vec<usize> = Vec::new();
        let mut carriers: Vec<usize> = Vec::new();
        for i in lists.iter().flatten() {
            if let Item::Marker(m) = i {
                let seq = m.seq as usize;
                if total.len() <= seq {
                    total.resize(seq + 1, 0);
                    carriers.resize(seq + 1, 0);
                }
                total[seq] += 1;
                carriers[seq] += usize::from(m.payload.is_some());
            }
        }
        assert!(
            carriers.iter().all(|&c| c == 1),
            "the payload travels with exactly one copy: {carriers:?}"
        );
        let mine = lists.pop().expect("main's list");
        let handles: Vec<_> = lists
            .into_iter()
            .map(|list| {
                let s = s.clone();
                thread::spawn(move || {
                    for i in list {
                        send(&s, i);
                    }
                })
            })
            .collect();
        for i in mine {
            send(&s, i);
        }
        for h in handles {
            h.join().unwrap();
        }
        // SAFETY: every thread has been joined.
        let log = s.obs.0.with_mut(|log| unsafe { std::mem::take(&mut *log) });
        assert_eq!(log.copies, total, "copies processed");
        let seen: Vec<Seen> = log.emitted.iter().map(|e| e.1).collect();
        let expected: Vec<Seen> = (0..total.len() as u64)
            .map(Seen::Payload)
            .chain([Seen::Rec])
            .collect();
        assert_eq!(
            seen, expected,
            "each payload once, in sequence order, then the held-back record"
        );
        // Never early: when payload k (or the record) left, every copy of
        // markers 0..=k had arrived.
        for (at, what) in &log.emitted {
            let upto = match what {
                Seen::Payload(k) => *k as usize + 1,
                Seen::Rec => total.len(),
            };
            assert_eq!(&at[..upto.min(at.len())], &total[..upto], "{what:?} early");
        }
    });
}

/// Owner's marker `seq`, its payload an outer marker with the same number.
fn marker(seq: u64) -> Marker {
    Marker::new(OWNER, seq, Some(Marker::new(OUTER, seq, None)))
}

#[test]
fn marker_split_three_ways() {
    marker_model(|| {
        let mut c = marker(0).split(3);
        let (a, b, d) = (c.next().unwrap(), c.next().unwrap(), c.next().unwrap());
        assert!(c.next().is_none());
        vec![
            vec![Item::Marker(a), record_stamped(1)],
            vec![Item::Marker(b)],
            vec![Item::Marker(d)],
        ]
    });
}

#[test]
fn marker_split_then_resplit() {
    marker_model(|| {
        let mut c = marker(0).split(2);
        let (a, b) = (c.next().unwrap(), c.next().unwrap());
        // The second copy forks again on its way (a star stage, a parallel).
        let mut bs = b.split(2);
        let (b1, b2) = (bs.next().unwrap(), bs.next().unwrap());
        vec![
            vec![Item::Marker(b1), record_stamped(1)],
            vec![Item::Marker(a)],
            vec![Item::Marker(b2)],
        ]
    });
}

#[test]
fn marker_two_numbers_out_of_order() {
    marker_model(|| {
        let mut c0 = marker(0).split(2);
        let (a0, b0) = (c0.next().unwrap(), c0.next().unwrap());
        let mut c1 = marker(1).split(2);
        let (a1, b1) = (c1.next().unwrap(), c1.next().unwrap());
        // Marker 1 may complete before marker 0: the collector must hold
        // its payload back until 0 completes.
        vec![
            vec![Item::Marker(a1), Item::Marker(a0)],
            vec![Item::Marker(b0)],
            vec![Item::Marker(b1), record_stamped(2)],
        ]
    });
}
