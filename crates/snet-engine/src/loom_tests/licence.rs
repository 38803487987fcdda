//! The read-licence hand-off ([`crate::entity`]): `Entity::offer` and
//! `Entity::next_or_release` on a real entity.
//!
//! Sender threads offer numbered items (ordering markers whose `owner` is
//! the sender and `seq` the item's number) to one entity, as workers do
//! with `Ctx::send`. A sender that gets [`Offer::Licensed`] becomes the
//! licence holder and processes items — the one it got back, then whatever
//! `next_or_release` hands it — until that returns `None`, as
//! `Shared::run_task` does (without a batch limit). Processing appends the
//! item to a log kept in a loom `UnsafeCell` that stands for the entity's
//! state (`Entity::state`, reachable only by the licence holder).
//!
//! Checked, in every interleaving:
//! * at most one licence holder at a time: two holders touching the log
//!   concurrently (or without the inbox lock ordering one holder's writes
//!   before the next holder's reads) is a loom causality error; an atomic
//!   "inside" counter asserts the same directly;
//! * every item processed exactly once, each sender's items in its order;
//! * nothing stranded: after all senders are done the inbox is empty and the
//!   licence is free (the next offer is licensed).
//!
//! The bulk variant takes items with `Entity::take_or_release` (two at a
//! time, as `run_task` takes what is left of its batch) and, once per
//! licence, gives back what it took (`Entity::unread`, as when the entity
//! yields), then goes on: the same three properties must hold.
//!
//! The pairs variant offers two items at a time with `Entity::offer_many`
//! (as a worker flushes the sends it held back, `Ctx::flush_sends`). The
//! pairs-bulk variant does both: a pair offered behind others is a segment
//! of the inbox of its own (its buffer moved, `Inbox::append`), takes
//! stop where a segment ends, and what is given back goes in front as a
//! segment: the holder must still see every item once, in each sender's
//! order, and the last take must find the inbox empty only when every
//! segment is (else a segment is stranded behind a released licence).
//!
//! Sizes: two senders with three items each; three senders with two items
//! each; bulk: two senders with three items each; pairs and pairs-bulk:
//! two senders with four items each. Preemption bound 3.
//!
//! Run: `LOOM_MAX_PREEMPTIONS=3 RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom
//! cargo test --release -q -p snet-engine --lib loom_tests::licence` (add
//! `-- --nocapture` for the number of executions explored).

use std::sync::Arc;

use loom::cell::UnsafeCell;
use loom::thread;

use crate::dist::ConnId;
use crate::entity::{Entity, Item, Marker, Offer};
use crate::remote::RemoteEntity;
use crate::runtime::Kind;
use crate::sync::{AtomicUsize, Ordering};
use snet_core::Rank;

/// What the licence holder owns: the log of processed items.
struct Owned {
    log: UnsafeCell<Vec<(u64, u64)>>,
    inside: AtomicUsize,
}

// SAFETY: `log` is accessed only by the entity's licence holder, which is
// exactly the property under test; loom reports any concurrent access.
unsafe impl Sync for Owned {}

/// An entity whose state the model never touches (it is not processed).
fn entity() -> Arc<Entity> {
    let kind = Kind::Remote(RemoteEntity::new(
        Rank(1),
        ConnId {
            origin: Rank(0),
            seq: 0,
        },
    ));
    Entity::new(kind)
}

fn item(sender: u64, seq: u64) -> Item {
    Item::Marker(Marker::new(sender, seq, None))
}

/// Offers one item; if that yields the licence, processes until release.
fn offer_and_run(ent: &Entity, owned: &Owned, sender: u64, seq: u64) {
    if let Offer::Licensed(it) = ent.offer(item(sender, seq)) {
        run_licensed(ent, owned, it);
    }
}

/// Offers items in pairs with `Entity::offer_many` (as `Ctx::flush_sends`
/// offers a run of held sends): the even item and the next one together;
/// if that yields the licence, processes until release.
fn offer_pairs_and_run(ent: &Entity, owned: &Owned, sender: u64, seq: u64) {
    if seq % 2 == 1 {
        return;
    }
    let mut pair = std::collections::VecDeque::from([item(sender, seq), item(sender, seq + 1)]);
    let (first, queued) = ent.offer_many(&mut pair);
    assert!(pair.is_empty(), "offer_many leaves nothing behind");
    assert_eq!(queued, 2 - usize::from(first.is_some()));
    if let Some(it) = first {
        run_licensed(ent, owned, it);
    }
}

/// Processes `it`, then what `next_or_release` hands over, until release.
fn run_licensed(ent: &Entity, owned: &Owned, mut it: Item) {
    loop {
        assert_eq!(
            owned.inside.fetch_add(1, Ordering::SeqCst),
            0,
            "two licence holders at once"
        );
        let Item::Marker(m) = it else {
            unreachable!("only markers are offered")
        };
        // SAFETY: we hold the licence (the property under test).
        owned
            .log
            .with_mut(|log| unsafe { (*log).push((m.owner, m.seq)) });
        owned.inside.fetch_sub(1, Ordering::SeqCst);
        match ent.next_or_release() {
            Some(next) => it = next,
            None => return,
        }
    }
}

/// As [`offer_and_run`], taking items in bulk and giving them back once.
fn offer_and_run_bulk(ent: &Entity, owned: &Owned, sender: u64, seq: u64) {
    if let Offer::Licensed(it) = ent.offer(item(sender, seq)) {
        run_licensed_bulk(ent, owned, it);
    }
}

/// As [`offer_pairs_and_run`], the licence holder taking items in bulk
/// and giving them back once: pairs offered behind others are segments of
/// the inbox (`Inbox::append`; `SEGMENT_MIN` is 2 under loom), taken as
/// buffers, and the items given back go in front as one.
fn offer_pairs_and_run_bulk(ent: &Entity, owned: &Owned, sender: u64, seq: u64) {
    if seq % 2 == 1 {
        return;
    }
    let mut pair = std::collections::VecDeque::from([item(sender, seq), item(sender, seq + 1)]);
    let (first, queued) = ent.offer_many(&mut pair);
    assert!(pair.is_empty(), "offer_many leaves nothing behind");
    assert_eq!(queued, 2 - usize::from(first.is_some()));
    if let Some(it) = first {
        run_licensed_bulk(ent, owned, it);
    }
}

/// Processes `it`, then what `take_or_release` hands over (two at a time,
/// as `run_task` takes what is left of its batch), giving back what it
/// took once (`Entity::unread`, as a yield does), until release.
fn run_licensed_bulk(ent: &Entity, owned: &Owned, mut it: Item) {
    let mut taken = std::collections::VecDeque::new();
    let mut gave_back = false;
    loop {
        assert_eq!(
            owned.inside.fetch_add(1, Ordering::SeqCst),
            0,
            "two licence holders at once"
        );
        let Item::Marker(m) = it else {
            unreachable!("only markers are offered")
        };
        // SAFETY: we hold the licence (the property under test).
        owned
            .log
            .with_mut(|log| unsafe { (*log).push((m.owner, m.seq)) });
        owned.inside.fetch_sub(1, Ordering::SeqCst);
        if !gave_back && !taken.is_empty() {
            // A yield: what was taken goes back to the front of the inbox.
            gave_back = true;
            ent.unread(&mut taken);
        }
        it = match taken.pop_front() {
            Some(next) => next,
            None => {
                if ent.take_or_release(&mut taken, 2) == 0 {
                    return;
                }
                taken.pop_front().expect("items were taken")
            }
        };
    }
}

fn licence_model(senders: u64, items: u64) {
    licence_model_with(senders, items, offer_and_run)
}

fn licence_model_with(senders: u64, items: u64, run: fn(&Entity, &Owned, u64, u64)) {
    super::check(3, move || {
        let ent = entity();
        let owned = Arc::new(Owned {
            log: UnsafeCell::new(Vec::new()),
            inside: AtomicUsize::new(0),
        });
        let handles: Vec<_> = (0..senders)
            .map(|s| {
                let (ent, owned) = (ent.clone(), owned.clone());
                thread::spawn(move || {
                    for i in 0..items {
                        run(&ent, &owned, s, i);
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        // SAFETY: every sender has been joined; no licence holder is left.
        let log = owned.log.with(|log| unsafe { (*log).clone() });
        assert_eq!(
            log.len() as u64,
            senders * items,
            "items lost or duplicated: {log:?}"
        );
        for s in 0..senders {
            let mine: Vec<u64> = log.iter().filter(|e| e.0 == s).map(|e| e.1).collect();
            assert_eq!(
                mine,
                (0..items).collect::<Vec<_>>(),
                "sender {s}'s order: {log:?}"
            );
        }
        // Nothing stranded, and the licence is free again.
        assert!(matches!(ent.offer(Item::Resume), Offer::Licensed(_)));
        assert!(ent.next_or_release().is_none());
    });
}

#[test]
fn licence_two_senders_three_items() {
    licence_model(2, 3);
}

#[test]
fn licence_three_senders_two_items() {
    licence_model(3, 2);
}

#[test]
fn licence_bulk_two_senders_three_items() {
    licence_model_with(2, 3, offer_and_run_bulk);
}

#[test]
fn licence_pairs_two_senders_four_items() {
    licence_model_with(2, 4, offer_pairs_and_run);
}

#[test]
fn licence_pairs_bulk_two_senders_four_items() {
    licence_model_with(2, 4, offer_pairs_and_run_bulk);
}
