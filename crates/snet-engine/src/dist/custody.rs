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
//!   from it carries a clone ([`crate::entity::Rec::custody`]). A record
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
//! Not built yet (so `Respawn` is not offered to users): respawning a lost
//! node and replaying the log to it. With [`OnNodeLoss::Fail`] (the
//! default) nothing here runs: no log, no token, no frame, the same bytes
//! on the wire as before.

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

/// Node 0's records sent to each node and not yet reported done.
pub(crate) struct Log {
    /// Per node: the identity of the next item sent to it.
    next: Vec<u64>,
    /// Per node: the records it holds, by identity, with their connection.
    held: Vec<BTreeMap<u64, (ConnId, Rec)>>,
    live: u64,
    peak: u64,
    /// Per node: markers and other non-record items sent to it (they are
    /// numbered, not logged: a loss of a node they reached cannot be
    /// replayed by this slice).
    unlogged: Vec<u64>,
}

impl Log {
    pub fn new(nodes: u32) -> Log {
        Log {
            next: vec![0; nodes as usize],
            held: (0..nodes).map(|_| BTreeMap::new()).collect(),
            live: 0,
            peak: 0,
            unlogged: vec![0; nodes as usize],
        }
    }

    /// `item` is being sent to `to` on `conn`: it takes the next identity,
    /// and a record is kept.
    pub fn sent(&mut self, to: Rank, conn: ConnId, item: &Item) {
        let k = to.0 as usize;
        let id = self.next[k];
        self.next[k] += 1;
        match item {
            Item::Rec(r) => {
                self.held[k].insert(id, (conn, r.clone()));
                self.live += 1;
                self.peak = self.peak.max(self.live);
            }
            _ => self.unlogged[k] += 1,
        }
    }

    /// Node `from` reports done the item numbered `id`: the record, or
    /// `None` if the log does not hold it.
    pub fn done(&mut self, from: Rank, id: u64) -> Option<(ConnId, Rec)> {
        let r = self.held.get_mut(from.0 as usize)?.remove(&id)?;
        self.live -= 1;
        Some(r)
    }

    /// Records held, for every node.
    pub fn live(&self) -> u64 {
        self.live
    }

    /// The most records ever held at once.
    pub fn peak(&self) -> u64 {
        self.peak
    }

    /// Node `k`'s records in identity order (the order they were sent):
    /// what its replacement is sent again.
    #[cfg_attr(not(test), allow(dead_code))]
    pub fn held(&self, k: Rank) -> impl Iterator<Item = (u64, &ConnId, &Rec)> {
        self.held
            .get(k.0 as usize)
            .into_iter()
            .flat_map(|m| m.iter().map(|(id, (c, r))| (*id, c, r)))
    }

    /// Items sent to node `k` that are numbered but not logged.
    #[cfg_attr(not(test), allow(dead_code))]
    pub fn unlogged(&self, k: Rank) -> u64 {
        self.unlogged.get(k.0 as usize).copied().unwrap_or(0)
    }
}
