//! Marker weights ([`crate::entity::Marker`], [`crate::entity::Arrivals`],
//! [`crate::weight`]) through a real deterministic collector.
//!
//! A marker `(owner, 0)` carrying a payload (a marker of an enclosing owner)
//! is split with `Marker::split` where a path forks — in one variant into
//! three copies at once, in the other into two, one of which is split again
//! on its way ("re-split") — and the copies reach the owner's collector
//! (`Kind::Collector`, processed with the real `instantiate::process`) from
//! different loom threads through its inbox (`Entity::offer`; whoever gets
//! the licence processes with `next_or_release`). One thread also sends a
//! record stamped with the next sequence number, which the collector must
//! hold back until marker 0 completes.
//!
//! After each processed item the holder records what the collector emitted
//! and how many copies had been processed. Checked, in every interleaving:
//! * the marker completes exactly once, on the arrival of its *last* copy
//!   (never early), and its payload is emitted then, exactly once;
//! * the record stamped 1 is emitted once, after the payload;
//! * nothing else is emitted.
//!
//! Sizes: three copies and one record over three threads (main included).
//! Preemption bound 3.

use std::sync::Arc;

use loom::cell::UnsafeCell;
use loom::thread;
use snet_core::Record;

use crate::collector::Collector;
use crate::dist::ConnId;
use crate::entity::{Entity, Item, Marker, Offer, Rec, Stamps};
use crate::instantiate::{process, Ctx, Kind, Runtime};
use crate::remote::RemoteEntity;

const OWNER: u64 = 7;
const OUTER: u64 = 99;

#[derive(Debug, PartialEq, Eq)]
enum Seen {
    Payload,
    Rec,
}

/// What the collector's licence holder observed: copies processed so far,
/// and each emission with the copy count at the time.
#[derive(Default)]
struct Log {
    copies: usize,
    emitted: Vec<(usize, Seen)>,
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
    let next = Entity::new(
        0,
        Kind::Remote(RemoteEntity::new(1, ConnId { origin: 0, seq: 0 })),
    );
    let collector = Entity::new(0, Kind::Collector(Collector::new(OWNER, next.clone())));
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
    })
}

/// Sends `item` to the collector as a worker would; runs it if licensed.
fn send(s: &Setup, item: Item) {
    let Offer::Licensed(mut it) = s.collector.offer(item) else {
        return;
    };
    let mut ctx = Ctx::new(&s.rt);
    loop {
        let copy = matches!(&it, Item::Marker(m) if m.owner == OWNER);
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
            log.copies += usize::from(copy);
            for i in out {
                let seen = match i {
                    Item::Marker(m) if m.owner == OUTER => Seen::Payload,
                    Item::Rec(r) => {
                        assert!(r.det.is_empty(), "the collector pops its stamp");
                        Seen::Rec
                    }
                    other => panic!("unexpected emission {other:?}"),
                };
                log.emitted.push((log.copies, seen));
            }
        });
        match s.collector.next_or_release() {
            Some(next) => it = next,
            None => return,
        }
    }
}

/// Delivers `per_thread[k]` from thread `k` (the last list from main).
fn marker_model(copies: fn() -> Vec<Vec<Item>>) {
    super::check(3, move || {
        let s = setup();
        let mut lists = copies();
        let copies: Vec<&Marker> = lists
            .iter()
            .flatten()
            .filter_map(|i| match i {
                Item::Marker(m) => Some(m),
                _ => None,
            })
            .collect();
        let total = copies.len();
        assert_eq!(
            copies.iter().filter(|m| m.payload.is_some()).count(),
            1,
            "the payload travels with exactly one copy"
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
        assert_eq!(log.copies, total);
        assert_eq!(
            log.emitted,
            vec![(total, Seen::Payload), (total, Seen::Rec)],
            "payload exactly once on the last copy, then the held-back record"
        );
    });
}

fn payload() -> Option<Marker> {
    Some(Marker::new(OUTER, 5, None))
}

#[test]
fn marker_split_three_ways() {
    marker_model(|| {
        let mut c = Marker::new(OWNER, 0, payload()).split(3);
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
        let mut c = Marker::new(OWNER, 0, payload()).split(2);
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
