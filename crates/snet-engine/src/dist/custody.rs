//! Custody of records sent to other nodes, the base of surviving a lost
//! node (ARCHITECTURE.md, "Surviving a lost node"; issue 40).
//!
//! With [`OnNodeLoss::Respawn`]:
//!
//! * **Node 0** gives every item it sends to node `k` an identity, its
//!   number among the items node 0 sent to `k` (from 0; channels are FIFO
//!   per pair of nodes and one output manager sends them, so node `k`
//!   numbers them the same way by counting, and the number costs no
//!   bytes), and keeps each record in `k`'s [`Log`] until `k` reports,
//!   with a `Done` frame (`wire.rs`, kind 9), that every record derived
//!   from it has left `k`. What a lost node's replacement must be sent
//!   again is then exactly what the log still holds.
//! * **Node `k`** gives a record it receives from node 0, on a
//!   connection whose template replay can restore
//!   ([`snet_core::Graph::replayable`]: no state across records, no
//!   markers, no placement inside), a [`Token`]; every record derived
//!   from it carries a clone ([`crate::entity::Stamps::custody`]). A record
//!   on its way back to node 0 does not leave: the token *holds* it. When
//!   the last clone is dropped (the last derived record was held, written
//!   off by a filter, or taken by the next node), the held records and
//!   the item's `Done` go to node 0 together, in one transport message
//!   ([`super::Out::Commit`]): node 0 gets all the records made from the
//!   item or none of them, so a replay cannot duplicate any. A record on
//!   a connection replay cannot restore is reported done at once (a loss
//!   of the node then ends the run, naming what it held:
//!   [`snet_core::Graph::replay_boundary`]).
//!
//! * **A lost node** (`managers::replace`): node 0 ends the run if the
//!   node may have held what replay cannot restore, or held a record
//!   through [`REPLAY_TRIES`] losses (a poison record); else it has the
//!   transport start a replacement ([`super::Transport::replace`]: the
//!   loopback and shm transports can, MPI cannot) and sends it the node's
//!   `Open`s and the log again ([`Log::lose`], `Seq` frames numbering
//!   the records as before).
//!
//! `Respawn` is `snet run --on-node-loss respawn`. A node other than 0
//! sends fields by value under it, except references to fields node 0
//! is home to (no field's only copy is on a node that can be lost). With [`OnNodeLoss::Fail`] (the default) nothing here runs: no log, no
//! token, no frame, the same bytes on the wire as before.

use std::collections::VecDeque;
use std::sync::Weak;

use snet_core::Rank;

use super::{ConnId, NetState, Out};
use crate::entity::{Item, Rec};
use crate::sync::{lock, Condvar, Mutex};

/// Custody of one item a node received from node 0: dropped with the
/// last record derived from it, it sends the records it held and the
/// item's `Done` to node 0 in one message.
pub struct Token {
    from: Rank,
    id: u64,
    held: Mutex<Vec<(ConnId, Item)>>,
    state: Weak<(Mutex<NetState>, Condvar)>,
}

impl Token {
    pub(crate) fn new(from: Rank, id: u64, state: Weak<(Mutex<NetState>, Condvar)>) -> Token {
        Token {
            from,
            id,
            held: Mutex::new(Vec::new()),
            state,
        }
    }

    /// The node the item came from (where derived records are held for).
    pub fn from(&self) -> Rank {
        self.from
    }

    /// Holds `item` for connection `conn` until the commit.
    pub(crate) fn hold(&self, conn: ConnId, item: Item) {
        lock(&self.held).push((conn, item));
    }
}

impl Drop for Token {
    fn drop(&mut self) {
        let items = std::mem::take(&mut *lock(&self.held));
        let Some(st) = self.state.upgrade() else {
            return;
        };
        let (m, cv) = &*st;
        let mut g = lock(m);
        if g.stop {
            drop(g);
            drop(items);
            return;
        }
        g.out.push_back(Out::Commit {
            to: self.from,
            id: self.id,
            items,
        });
        drop(g);
        cv.notify_one();
    }
}

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Token({} from node {})", self.id, self.from)
    }
}

/// What the run does when a node other than 0 is lost.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub enum OnNodeLoss {
    /// The run ends, naming the node (fail-stop; the default).
    #[default]
    Fail,
    /// Node 0 keeps custody of what it sent, so that a replacement node
    /// can be sent it again (see the module docs for what is built).
    Respawn,
}

/// Losses of a node a record may be in custody of before the run gives
/// up on it as a poison record (one that kills the node each time).
pub(crate) const REPLAY_TRIES: u32 = 3;

/// An `Open` node 0 sent a node: sent again to its replacement first.
#[derive(Clone)]
pub(crate) struct Opened {
    pub conn: ConnId,
    pub template: snet_core::NodeId,
    pub back: ConnId,
    pub start: crate::entity::Stamps,
}

/// A record in node 0's log: its connection, the record, and the losses
/// of the node it was in custody of.
struct Held {
    conn: ConnId,
    rec: Rec,
    tries: u32,
}

/// A slot of a node's [`Ring`].
enum Slot {
    /// Reported done, or a marker (numbered, not logged).
    Empty,
    /// Queued for connection `conn` and not sent yet: the output manager
    /// moves the record in once it has encoded it ([`Log::fill`]), so
    /// that node 0 never copies a record for its log.
    Pending(ConnId),
    Held(Held),
}

/// Slots a ring may have beyond [`SPREAD`] times its records before it
/// moves the oldest record aside ([`Ring::stragglers`]).
const SLACK: usize = 4096;
/// See [`SLACK`].
const SPREAD: usize = 4;

/// One node's part of the log: the records by identity, as a ring of
/// slots from `base`. Identities are dense per node, and records are
/// mostly reported done in about the order they were sent: a `BTreeMap`
/// here cost node 0 of `bench/soak`'s respawn network about a tenth of
/// its instructions (its inserts, and its removals from the front, which
/// move the leaf's 150-byte entries), and a slot per boxed record a page
/// fault every few records (the boxes freed on the input manager's
/// thread, made on the output manager's). The records live in the
/// slots; the ring's memory is reused as it turns. A record held much
/// longer than those sent after it (a slow box) would keep every slot
/// after it: once the ring spans more than `SPREAD` times its records
/// plus `SLACK`, the oldest record moves to `stragglers`, so the log's
/// memory stays in proportion to the records it holds. The first slot
/// is never empty.
#[derive(Default)]
struct Ring {
    /// The identity of `slots[0]`.
    base: u64,
    slots: VecDeque<Slot>,
    /// Slots not empty.
    count: usize,
    /// Every slot before this identity is not pending (where
    /// [`Ring::fill`] starts looking).
    filled: u64,
    /// Records older than `base`, moved out of the ring.
    stragglers: std::collections::BTreeMap<u64, Held>,
}

impl Ring {
    /// Slot `id` (the next identity, `base + slots.len()`, as the caller
    /// keeps them dense) is pending on `conn`, or empty (a marker).
    fn push(&mut self, id: u64, conn: Option<ConnId>) {
        debug_assert_eq!(id, self.base + self.slots.len() as u64);
        match conn {
            Some(c) => {
                self.slots.push_back(Slot::Pending(c));
                self.count += 1;
            }
            None if self.slots.is_empty() => self.base = id + 1,
            None => self.slots.push_back(Slot::Empty),
        }
    }

    /// The first pending slot holds `rec` now (records are sent in the
    /// order they were numbered). `rec` back if none is pending.
    fn fill(&mut self, rec: Rec) -> Option<Rec> {
        let start = self.filled.saturating_sub(self.base) as usize;
        let base = self.base;
        for (i, s) in self
            .slots
            .range_mut(start.min(self.slots.len())..)
            .enumerate()
        {
            if let Slot::Pending(conn) = *s {
                *s = Slot::Held(Held {
                    conn,
                    rec,
                    tries: 0,
                });
                self.filled = base + (start + i) as u64 + 1;
                return None;
            }
        }
        Some(rec)
    }

    /// Takes the record numbered `id`, if held.
    fn take(&mut self, id: u64) -> Option<Held> {
        let Some(i) = id.checked_sub(self.base) else {
            return self.stragglers.remove(&id);
        };
        let s = self.slots.get_mut(usize::try_from(i).ok()?)?;
        if !matches!(s, Slot::Held(_)) {
            return None;
        }
        let Slot::Held(h) = std::mem::replace(s, Slot::Empty) else {
            return None;
        };
        self.count -= 1;
        self.trim();
        Some(h)
    }

    /// Drops the empty slots at the front, and moves old records aside
    /// while the ring spans far more slots than it holds records.
    fn trim(&mut self) {
        loop {
            while let Some(Slot::Empty) = self.slots.front() {
                self.slots.pop_front();
                self.base += 1;
            }
            if self.slots.len() <= SPREAD * self.count + SLACK
                || !matches!(self.slots.front(), Some(Slot::Held(_)))
            {
                return;
            }
            if let Some(Slot::Held(h)) = self.slots.pop_front() {
                self.stragglers.insert(self.base, h);
            }
            self.base += 1;
            self.count -= 1;
        }
    }

    /// Holds no record (in the ring or moved aside).
    fn is_empty(&self) -> bool {
        self.count == 0 && self.stragglers.is_empty()
    }

    /// The records in identity order.
    fn iter(&self) -> impl Iterator<Item = (u64, &Held)> {
        let base = self.base;
        self.stragglers.iter().map(|(id, h)| (*id, h)).chain(
            self.slots
                .iter()
                .enumerate()
                .filter_map(move |(i, s)| match s {
                    Slot::Held(h) => Some((base + i as u64, h)),
                    _ => None,
                }),
        )
    }

    fn iter_mut(&mut self) -> impl Iterator<Item = &mut Held> {
        self.stragglers
            .values_mut()
            .chain(self.slots.iter_mut().filter_map(|s| match s {
                Slot::Held(h) => Some(h),
                _ => None,
            }))
    }
}

/// Node 0's records sent to each node and not yet reported done, and
/// what it needs to replace a lost node: the connections it opened
/// there, the items it has not had acknowledged, and the credit it sent
/// the node and got back (the node's own credit is the difference when
/// it exchanges messages with node 0 only, as the replayable
/// placements do).
pub(crate) struct Log {
    /// Per node: the identity of the next item sent to it.
    next: Vec<u64>,
    /// Per node: the records it holds, by identity, with their connection
    /// and the losses of the node they were in custody of.
    held: Vec<Ring>,
    live: u64,
    peak: u64,
    /// Per node: the connections opened there.
    opens: Vec<Vec<Opened>>,
    /// Per node: items sent and not acknowledged.
    unacked: Vec<u64>,
    /// Per node: credit sent to it less credit received from it (what it
    /// holds, or is on its way between it and node 0).
    credit: Vec<crate::weight::Dyadic>,
    /// Nodes replaced so far.
    pub replaced: u64,
    /// Per node: losses since it last reported a record done.
    barren: Vec<u32>,
}

/// Why a lost node is not replaced ([`Log::lose`]).
pub(crate) enum GiveUp {
    /// Records were in its care through [`REPLAY_TRIES`] losses: one of
    /// them is a poison record (the first one's origin, and how many).
    Poison(crate::entity::Origin, usize),
    /// It was lost [`REPLAY_TRIES`] times in a row without reporting a
    /// record done, with nothing in its care to blame (it fails at start).
    Barren,
}

/// What replacing node `k` takes from the log ([`Log::lose`]).
pub(crate) struct Replay {
    pub opens: Vec<Opened>,
    pub items: Vec<(u64, ConnId, Rec)>,
    pub next: u64,
    pub unacked: u64,
    pub lost_credit: crate::weight::Dyadic,
}

impl Log {
    pub(crate) fn new(nodes: u32) -> Log {
        let n = nodes as usize;
        Log {
            next: vec![0; n],
            held: (0..n).map(|_| Ring::default()).collect(),
            live: 0,
            peak: 0,
            opens: vec![Vec::new(); n],
            unacked: vec![0; n],
            credit: vec![crate::weight::Dyadic::zero(); n],
            replaced: 0,
            barren: vec![0; n],
        }
    }

    /// `item` is being queued for `to` on `conn`: it takes the next
    /// identity, and a record a slot, pending until the output manager
    /// moves it in once encoded ([`Log::fill`]).
    pub(crate) fn sent(&mut self, to: Rank, conn: ConnId, item: &Item) {
        let k = to.0 as usize;
        let id = self.next[k];
        self.next[k] += 1;
        self.unacked[k] += 1;
        // Markers are numbered, not logged: a node they reach holds
        // ordering state, which replay cannot restore
        // (`Graph::replay_boundary` ends such a run at a loss).
        let pending = match item {
            Item::Rec(_) => {
                self.live += 1;
                self.peak = self.peak.max(self.live);
                Some(conn)
            }
            _ => None,
        };
        self.held[k].push(id, pending);
    }

    /// Node `to` was sent `Open` for `o`.
    pub(crate) fn opened(&mut self, to: Rank, o: Opened) {
        if let Some(v) = self.opens.get_mut(to.0 as usize) {
            v.push(o);
        }
    }

    /// Node `from` acknowledged `count` items.
    pub(crate) fn acked(&mut self, from: Rank, count: u64) {
        if let Some(n) = self.unacked.get_mut(from.0 as usize) {
            *n = n.saturating_sub(count);
        }
    }

    /// Credit `c` went to node `to`.
    pub(crate) fn credit_sent(&mut self, to: Rank, c: &crate::weight::Dyadic) {
        if let Some(d) = self.credit.get_mut(to.0 as usize) {
            d.add_all(c);
        }
    }

    /// Credit `c` came from node `from`. A node that sends credit it did
    /// not get from node 0 (possible only where it talks to other nodes,
    /// outside what replay restores) leaves the balance at zero.
    pub(crate) fn credit_received(&mut self, from: Rank, c: &crate::weight::Dyadic) {
        if let Some(d) = self.credit.get_mut(from.0 as usize) {
            if !d.sub(c) {
                *d = crate::weight::Dyadic::zero();
            }
        }
    }

    /// Node `from` reports done the item numbered `id`: the record, or
    /// `None` if the log does not hold it.
    pub(crate) fn done(&mut self, from: Rank, id: u64) -> Option<Rec> {
        let h = self.held.get_mut(from.0 as usize)?.take(id)?;
        self.live -= 1;
        self.barren[from.0 as usize] = 0;
        Some(h.rec)
    }

    /// Node `k` is lost: each record it held counts one more loss; if
    /// some reach [`REPLAY_TRIES`], one of them is a poison record
    /// ([`GiveUp::Poison`]: the first one's origin, and how many there
    /// are: node 0 cannot tell which one it is when the node had them all,
    /// the node's own report names it); a node lost that many times in a
    /// row without a record done and with none in its care is given up
    /// too ([`GiveUp::Barren`]: never an endless round of replacements). Else what its replacement is sent (the log
    /// keeps the records, now numbered again from the same identities),
    /// and the acknowledgements and credit the old incarnation took with it.
    pub(crate) fn lose(&mut self, k: Rank) -> Result<Replay, GiveUp> {
        let i = k.0 as usize;
        self.barren[i] += 1;
        let mut poison: Option<(crate::entity::Origin, usize)> = None;
        for h in self.held[i].iter_mut() {
            h.tries += 1;
            if h.tries >= REPLAY_TRIES {
                poison.get_or_insert((h.rec.origin, 0)).1 += 1;
            }
        }
        if let Some((origin, n)) = poison {
            return Err(GiveUp::Poison(origin, n));
        }
        // (With records in its care, those count: a poison record within
        // three more losses at most.)
        if self.barren[i] >= REPLAY_TRIES && self.held[i].is_empty() {
            return Err(GiveUp::Barren);
        }
        let lost_credit = std::mem::take(&mut self.credit[i]);
        self.replaced += 1;
        Ok(Replay {
            opens: self.opens[i].clone(),
            items: self.held[i]
                .iter()
                .map(|(id, h)| (id, h.conn, h.rec.clone()))
                .collect(),
            next: self.next[i],
            unacked: std::mem::take(&mut self.unacked[i]),
            lost_credit,
        })
    }

    /// Items replayed to node `k` are unacknowledged again.
    pub(crate) fn resent(&mut self, k: Rank, n: u64) {
        self.unacked[k.0 as usize] += n;
    }

    /// Records held, for every node.
    pub(crate) fn live(&self) -> u64 {
        self.live
    }

    /// The most records ever held at once.
    pub(crate) fn peak(&self) -> u64 {
        self.peak
    }

    /// The output manager encoded record `rec` for node `to`: the log
    /// keeps it (in the first pending slot: records are sent in the
    /// order they were queued). `rec` back if no slot was pending for
    /// it (the caller drops it outside the state's lock: dropping a
    /// record may release fields).
    pub(crate) fn fill(&mut self, to: Rank, rec: Rec) -> Option<Rec> {
        match self.held.get_mut(to.0 as usize) {
            Some(ring) => ring.fill(rec),
            None => Some(rec),
        }
    }

    /// Node `k`'s records in identity order (the order they were sent).
    #[cfg(all(test, not(loom)))]
    pub(crate) fn held(&self, k: Rank) -> impl Iterator<Item = (u64, &ConnId, &Rec)> {
        self.held
            .get(k.0 as usize)
            .into_iter()
            .flat_map(|m| m.iter().map(|(id, h)| (id, &h.conn, &h.rec)))
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    fn rec(n: u64) -> Rec {
        Rec {
            rec: snet_core::Record::new(),
            det: crate::entity::Stamps::new(),
            origin: crate::entity::Origin::input(n, None),
        }
    }

    fn conn() -> ConnId {
        ConnId {
            origin: Rank(0),
            seq: 0,
        }
    }

    /// A record held far longer than the ones after it (a slow box)
    /// does not keep their slots: the ring stays in proportion to the
    /// records it holds, and the old record is still found, replayed in
    /// identity order, and reported done.
    #[test]
    fn a_record_held_long_does_not_keep_the_slots_after_it() {
        let mut ring = Ring::default();
        let n = 100_000u64;
        for id in 0..n {
            ring.push(id, Some(conn()));
            assert!(ring.fill(rec(id)).is_none());
            if id >= 2 {
                // Everything but the first two is done soon after sent.
                assert!(ring.take(id - 1).is_some());
            }
        }
        assert!(ring.slots.len() <= SPREAD * ring.count + SLACK + 1);
        assert_eq!(
            ring.iter().map(|(id, _)| id).collect::<Vec<_>>(),
            [0, n - 1]
        );
        assert!(!ring.is_empty());
        assert!(ring.take(1).is_none(), "done twice");
        let h = ring.take(0).expect("the old record is still held");
        assert_eq!(h.rec.origin, crate::entity::Origin::input(0, None));
        assert!(ring.take(0).is_none());
        assert!(ring.take(n - 1).is_some());
        assert!(ring.is_empty());
        assert!(ring.slots.is_empty());
        assert_eq!(ring.base, n);
    }
}
