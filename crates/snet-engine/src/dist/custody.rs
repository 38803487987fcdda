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
//!   loopback transport can, shm cannot yet) and sends it the node's
//!   `Open`s and the log again ([`Log::lose`], `Seq` frames numbering
//!   the records as before).
//!
//! `Respawn` is not offered by `snet run` yet (shm cannot replace a node).
//! With [`OnNodeLoss::Fail`] (the default) nothing here runs: no log, no
//! token, no frame, the same bytes on the wire as before.

use std::collections::BTreeMap;
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
    held: Vec<BTreeMap<u64, (ConnId, Rec, u32)>>,
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
            held: (0..n).map(|_| BTreeMap::new()).collect(),
            live: 0,
            peak: 0,
            opens: vec![Vec::new(); n],
            unacked: vec![0; n],
            credit: vec![crate::weight::Dyadic::zero(); n],
            replaced: 0,
        }
    }

    /// `item` is being sent to `to` on `conn`: it takes the next identity,
    /// and a record is kept.
    pub(crate) fn sent(&mut self, to: Rank, conn: ConnId, item: &Item) {
        let k = to.0 as usize;
        let id = self.next[k];
        self.next[k] += 1;
        self.unacked[k] += 1;
        // Markers are numbered, not logged: a node they reach holds
        // ordering state, which replay cannot restore
        // (`Graph::replay_boundary` ends such a run at a loss).
        if let Item::Rec(r) = item {
            self.held[k].insert(id, (conn, r.clone(), 0));
            self.live += 1;
            self.peak = self.peak.max(self.live);
        }
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
    pub(crate) fn done(&mut self, from: Rank, id: u64) -> Option<(ConnId, Rec)> {
        let (c, r, _) = self.held.get_mut(from.0 as usize)?.remove(&id)?;
        self.live -= 1;
        Some((c, r))
    }

    /// Node `k` is lost: each record it held counts one more loss; the
    /// first that reaches [`REPLAY_TRIES`], if any, is a poison record
    /// (`Err`, its origin). Else what its replacement is sent (the log
    /// keeps the records, now numbered again from the same identities),
    /// and the acknowledgements and credit the old incarnation took with it.
    pub(crate) fn lose(&mut self, k: Rank) -> Result<Replay, crate::entity::Origin> {
        let i = k.0 as usize;
        for (_, r, tries) in self.held[i].values_mut() {
            *tries += 1;
            if *tries >= REPLAY_TRIES {
                return Err(r.origin);
            }
        }
        let lost_credit = std::mem::take(&mut self.credit[i]);
        self.replaced += 1;
        Ok(Replay {
            opens: self.opens[i].clone(),
            items: self.held[i]
                .iter()
                .map(|(id, (c, r, _))| (*id, *c, r.clone()))
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

    /// Node `k`'s records in identity order (the order they were sent).
    #[cfg(all(test, not(loom)))]
    pub(crate) fn held(&self, k: Rank) -> impl Iterator<Item = (u64, &ConnId, &Rec)> {
        self.held
            .get(k.0 as usize)
            .into_iter()
            .flat_map(|m| m.iter().map(|(id, (c, r, _))| (*id, c, r)))
    }
}
