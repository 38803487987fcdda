//! The distribution layer (`runtime.md` §1, §3; thesis ch. 4 and 6.1).
//!
//! Every node runs the same program with its own engine (workers, entity
//! graph, field store) and talks to the others only through a
//! [`Transport`]. A single-process run is the trivial case: one node,
//! [`SingleNode`], no managers, nothing ever sent.
//!
//! # Nodes, connections and remote instances
//!
//! Node 0 instantiates the entry network and is the only node with the
//! input and the output. Instantiating `A @ n` (or the replica of
//! `A !@ <t>` for value `n`) on node `m != n` does not build `A` on `m`:
//! it creates a *remote* entity (`crate::remote`) standing for `A`'s
//! entry, and sends `Open` to node `n`, naming
//! * the new connection `c` (a [`ConnId`]: the creating node and its
//!   connection counter) that will carry `A`'s input,
//! * the template `A` (a node id of the property graph, the same on every
//!   node),
//! * the connection `b` back to `m` that carries `A`'s output, which `m`
//!   has already bound to the entity after the placement, and
//! * the ordering stamps `A`'s start-up carries.
//!
//! Node `n` instantiates `A` when that first message arrives (thesis
//! 6.1.2) with a remote entity for `b` as its successor, and binds `c` to
//! `A`'s entry. A connection has exactly one writer (the instance that
//! created it), so a name chosen by its creator is agreed by every node
//! without a handshake (the role of the thesis's globally unique
//! connection identifiers, 6.1.1). Placement nests: `B @ k` inside `A @ n`
//! is opened by node `n`, and `B`'s output returns to `n`.
//!
//! # Managers
//!
//! One output manager and one input manager per node (`managers`)
//! multiplex every connection. Workers put what must leave the node on
//! the node's outbound queue; the output manager encodes ([`wire`]) and
//! sends it, coalescing what goes to one node into one message. A worker
//! sends what its own tasks queued itself when the encoder is free
//! ([`managers::send_queued`]): one thread sends at a time, the one
//! holding the encoder. The input manager decodes, instantiates on `Open`,
//! offers items to the bound entities, answers field requests, and hands
//! the licences it obtains to the workers through the injector queue. It
//! never blocks on anything but the transport's `recv`, so every node's
//! input always drains and no arrangement of full buffers can deadlock
//! the output managers that wait for buffer space (flow control lives in
//! the transport: a bounded window per pair of nodes).
//!
//! # Termination: credit (weight throwing)
//!
//! Node 0 starts with all the *credit* (one, as a `Dyadic`). Every
//! message carries a share of its sender's credit (`Dyadic::share`:
//! node 0 gives half of its largest piece; another node keeps half of its
//! largest piece and gives all the rest, so
//! that small pieces go home and merge instead of piling up on a node that
//! is busy for the whole run); a node that receives a message adds the
//! share to its own. A node
//! other than 0 that becomes *passive* — every worker asleep, no task
//! queued, nothing in its outbound queue, its managers not in the middle of
//! a message — sends all its credit back to node 0. A passive node holds
//! no credit and cannot become active without a message, which brings
//! credit. Credit is never created or destroyed, so node 0 holding all of
//! it while passive, with its input exhausted, means no node is active and
//! no message is in flight: the run is over, and node 0 tells every node to
//! shut down. The rules are in `Net::settle`; `loom_tests::termination`
//! model-checks them with the real managers.
//!
//! # Fields
//!
//! By reference, fetched on demand: `fields`.

pub(crate) mod custody;
#[cfg(test)]
mod det_model;
#[cfg(test)]
mod explorer;
pub(crate) mod fields;
#[cfg(test)]
mod group_model;
pub(crate) mod managers;
#[cfg(test)]
mod marker_model;
#[cfg(test)]
mod replay_model;
pub mod wire;

// The transport contract lives in `snet-transport` (the backends depend on
// it, not on the engine); these names stay reachable from here.
pub use snet_transport::{conformance, hooked, loopback};

use std::collections::VecDeque;
use std::sync::Weak;

use rustc_hash::FxHashMap;
use snet_core::{FieldData, NodeId, Rank, ReleaseRemote, RemoteField};

use crate::entity::{Entity, Item, Rec, Stamps};
use crate::sync::{lock, Arc, AtomicU64, Condvar, Mutex, Ordering};
use crate::weight::Dyadic;
pub use custody::OnNodeLoss;

pub use snet_transport::{
    BackendError, Channel, FieldBytes, Gone, Header, Payload, PayloadBytes, Received, Transport,
    TransportError,
};

/// The name of a connection: the node that created it and its counter there.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ConnId {
    /// The node that created the connection (its only writer).
    pub origin: Rank,
    /// The creating node's counter of connections (unique on that node).
    pub seq: u64,
}

/// The trivial distribution: one node, nothing to talk to.
#[derive(Copy, Clone, Debug, Default)]
pub struct SingleNode;

impl Transport for SingleNode {
    fn node(&self) -> Rank {
        Rank::ROOT
    }
    fn nodes(&self) -> u32 {
        1
    }
    fn send_to_peer(
        &self,
        to: Rank,
        _: Channel,
        _: &[u8],
        _: Payload,
    ) -> Result<(), TransportError> {
        // Never called: `send` finds no other node.
        Err(TransportError::NoRoute {
            from: Rank::ROOT,
            to,
        })
    }
    fn recv(&self, _: std::time::Duration) -> Result<Option<Received>, TransportError> {
        Err(TransportError::Closed)
    }
    fn close(&self) {}
    fn name(&self) -> &str {
        "none"
    }
}

/// What a worker or manager asks the output manager to send.
pub(crate) enum Out {
    Open {
        to: Rank,
        conn: ConnId,
        template: NodeId,
        back: ConnId,
        start: Stamps,
    },
    Item {
        to: Rank,
        conn: ConnId,
        item: Item,
    },
    Fetch {
        to: Rank,
        id: u64,
    },
    Bytes {
        to: Rank,
        id: u64,
        value: Arc<dyn FieldData>,
    },
    Release {
        to: Rank,
        id: u64,
        weight: u64,
    },
    /// The records derived from node `to`'s item `id` (and the items
    /// `more` of its group), the cells the group fired, and the items'
    /// `Done`s, in one message ([`custody`]).
    Commit {
        to: Rank,
        id: u64,
        more: custody::Ids,
        items: Vec<(ConnId, Item)>,
        /// The cells the group fired, as their `Fired` frames.
        fired: smallvec::SmallVec<[wire::Tomb; 1]>,
        /// Records a drain parked in the group's cells: cell, slot, record.
        parked: Vec<(wire::CellId, u64, Rec)>,
    },
    /// Node 0 replacing node `to`: the cells its groups fired, before the
    /// records replayed to it.
    Tombstones {
        to: Rank,
        cells: Vec<wire::CellId>,
    },
    /// Node 0 replacing node `to`: a record an earlier incarnation's
    /// drain parked in slot `slot` of `cell`, after the tombstones and
    /// before the records replayed to it.
    Parked {
        to: Rank,
        cell: wire::CellId,
        slot: u64,
        rec: Rec,
    },
    /// Node 0, quiescent at the end of the input with records still in
    /// node `to`'s custody: its synchrocells stop protecting what they
    /// store ([`custody`]).
    Drain {
        to: Rank,
    },
    /// Node 0 replaying its log to a replacement: item `id` again.
    Replay {
        to: Rank,
        conn: ConnId,
        id: u64,
        item: Item,
    },
    /// Node 0 after a replay: the next item to `to` is its `next`th.
    Seq {
        to: Rank,
        next: u64,
    },
    /// Acknowledges `count` items received from `to` (back-pressure across
    /// nodes: [`Net::flush_acks`]).
    Ack {
        to: Rank,
        count: u64,
    },
    /// All of a passive node's credit, back to node 0.
    Credit(Dyadic),
    /// This node failed: tell everyone.
    Fail(String),
    /// Node 0: the run is over.
    Shutdown,
}

impl Out {
    pub(crate) fn channel(&self) -> Channel {
        match self {
            Out::Open { .. }
            | Out::Item { .. }
            | Out::Commit { .. }
            | Out::Replay { .. }
            | Out::Tombstones { .. }
            | Out::Parked { .. }
            | Out::Seq { .. } => Channel::Records,
            Out::Bytes { .. } => Channel::Field,
            _ => Channel::Control,
        }
    }
}

/// The state the termination protocol and the output manager share.
pub(crate) struct NetState {
    pub out: VecDeque<Out>,
    /// This node's credit.
    pub pool: Dyadic,
    /// Managers in the middle of a message (received and not yet delivered,
    /// or taken from `out` and not yet sent).
    pub busy: usize,
    /// The run is over (or failed): the output manager stops when `out` is empty.
    pub stop: bool,
    /// Items this node sent (or queued to send) to other nodes that the
    /// receivers have not acknowledged yet ([`Net::outstanding`]).
    pub outstanding: u64,
    /// The most `outstanding` ever was (`--stats`).
    pub peak_outstanding: u64,
    /// Per node: items received from it and not acknowledged yet.
    pub owed: Vec<u64>,
    /// The sum of `owed`.
    pub owed_total: u64,
    /// Node 0 of a run that survives a lost node: the records sent to
    /// each node until it reports them done ([`custody`]).
    pub log: Option<custody::Log>,
    /// A node other than 0 of a run that survives a lost node, where
    /// ordering markers may come from node 0: markers' commits wait for
    /// every earlier item's ([`custody::CommitOrder`]).
    pub order: Option<custody::CommitOrder>,
    /// Node 0 queued `Shutdown`: the run is over, a node lost now lost
    /// nothing.
    pub finished: bool,
}

/// What [`Net::settle`] found.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Settle {
    /// The node is not passive.
    Busy,
    /// Passive; credit (if any) is on its way to node 0.
    Passive,
    /// Node 0 only: passive and holding all the credit — nothing is active anywhere.
    Quiescent,
    /// Quiet, and the caller (a worker about to sleep, `notify` false)
    /// must send what this queued: the acknowledgements owed, or (a node
    /// other than 0) all its credit. Not passive until that is sent.
    Queued,
}

/// Counters of one node's traffic.
#[derive(Default)]
pub(crate) struct Traffic {
    pub messages_sent: AtomicU64,
    pub bytes_sent: AtomicU64,
    pub messages_received: AtomicU64,
    pub bytes_received: AtomicU64,
    /// Fields given (wire.rs, "Given fields").
    pub fields_given: AtomicU64,
    /// Node 0: given fields of lost incarnations dropped untaken.
    pub given_dropped: AtomicU64,
}

/// One node's distribution state.
pub(crate) struct Net {
    pub me: Rank,
    pub nodes: u32,
    pub state: Arc<(Mutex<NetState>, Condvar)>,
    pub store: fields::FieldStore,
    /// Connections into this node, bound to the entity their items go to.
    pub inbound: Mutex<FxHashMap<ConnId, Arc<Entity>>>,
    next_conn: AtomicU64,
    pub traffic: Traffic,
    /// Mirrors `NetState::outstanding` for lock-free reads (admission and
    /// box suspension add it to the node's backlog).
    outstanding_hint: AtomicU64,
    /// Mirrors `NetState::owed_total` (workers check it after each task).
    owed_hint: AtomicU64,
    /// Node 0 of a run that survives a lost node (it keeps a log).
    pub respawn_root: bool,
    /// The output manager's encoder; node 0 holds it while it replaces a
    /// lost node, so that nothing is sent meanwhile.
    pub enc: Mutex<wire::Encoder>,
    /// The buffers batches are sent from, messages built in and (node 0
    /// with a log) a batch's items gathered in for [`Net::logged`]
    /// ([`managers::SendBufs`]); taken only by the holder of [`Net::enc`].
    pub(crate) sending: Mutex<managers::SendBufs>,
    /// A node other than 0 of a run that survives a lost node: the
    /// connections from node 0 whose records get a custody token
    /// ([`custody`]).
    custody: Option<Mutex<Receiving>>,
    /// With `custody`: the number of the next item from node 0 (read and
    /// written by the input manager only, which receives the items and
    /// the `Seq` frames in their order; atomic for `&self`).
    next_from_root: AtomicU64,
    /// With `custody`: the node's home (number and generation), which its
    /// records' pending tokens name ([`custody::Pending`]), if the process
    /// had one free.
    home: Option<(u32, u32)>,
    /// Mirrors `NetState::order.is_some()` (set once, before the first
    /// item arrives: [`Net::opened`]).
    ordered: crate::sync::AtomicBool,
    /// A node other than 0 was sent tombstones (it replaces a lost
    /// incarnation): only then is a new synchrocell looked up among them
    /// ([`Net::tombstoned`]; set before the first replayed record is
    /// read, the `Fired` frames coming first).
    tombstoned_any: crate::sync::AtomicBool,
    /// Set when node 0 sent this replacement a parked record
    /// ([`Net::any_parked`]).
    parked_any: crate::sync::AtomicBool,
    /// Unacknowledged items that weigh as much as a full backlog
    /// ([`ACK_WINDOW`], or `SNET_ACK_WINDOW`).
    window: u64,
}

/// The items of one `Items` frame ([`Net::arrivals`]): their connection,
/// and, if they get custody numbers (a node other than 0 of a run that
/// survives a lost node, the frame from node 0), whether the connection
/// is replayable.
#[derive(Copy, Clone)]
pub(crate) struct Arrivals {
    conn: ConnId,
    replayable: Option<bool>,
}

/// A node's custody of what node 0 sends it ([`Net::custody`]).
#[derive(Default)]
pub(crate) struct Receiving {
    pub replayable: rustc_hash::FxHashSet<ConnId>,
    /// The cells node 0 says this node's earlier incarnations fired.
    tombstones: rustc_hash::FxHashSet<wire::CellId>,
    /// The records node 0 says this node's earlier incarnations' drains
    /// parked, by cell (slot, record): the cell of that name starts with
    /// them in its slots.
    parked: FxHashMap<wire::CellId, Vec<(u64, snet_core::Record)>>,
}

/// Items a node may have sent to other nodes and not had acknowledged
/// before admission and suspended box calls wait: they weigh
/// `BACKLOG_LIMIT / ACK_WINDOW` (1/8) of an item in the node's own inboxes
/// in the figure those look at ([`Net::outstanding`]). A window of 1024
/// (weight 1) cost `bench/soak` about 20 % of its time against no bound at
/// all, the acknowledgements' round trip not keeping it full; 8192 gives
/// nearly all of that back (docs/benchmarks.md, "Soak"). The environment
/// variable `SNET_ACK_WINDOW` overrides it (measurements).
pub(crate) const ACK_WINDOW: u64 = if cfg!(loom) { 1 } else { 8192 };

/// [`ACK_WINDOW`], or a positive `SNET_ACK_WINDOW`.
fn ack_window() -> u64 {
    if cfg!(loom) {
        return ACK_WINDOW;
    }
    std::env::var("SNET_ACK_WINDOW")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|&w| w > 0)
        .unwrap_or(ACK_WINDOW)
}

/// Sends a proxy's weight home when its last handle is dropped.
struct Releaser(Weak<(Mutex<NetState>, Condvar)>);

impl ReleaseRemote for Releaser {
    fn release(&self, home: Rank, id: u64, weight: u64) {
        if let Some(st) = self.0.upgrade() {
            let mut g = lock(&st.0);
            if !g.stop {
                g.out.push_back(Out::Release {
                    to: home,
                    id,
                    weight,
                });
                drop(g);
                // (Dropped by a batch being sent, or by a worker's task
                // in `quietly`: its sender sees it sent, a wake-up a
                // batch instead of a system call a field.)
                if !custody::noted_quietly() {
                    st.1.notify_one();
                }
            }
        }
    }
}

impl Net {
    /// What the field store calls to release a field by reference (the
    /// tests').
    #[cfg(all(test, not(loom)))]
    pub(crate) fn releaser(&self) -> impl ReleaseRemote {
        Releaser(Arc::downgrade(&self.state))
    }

    #[cfg(test)]
    pub(crate) fn new(me: Rank, nodes: u32, inline_limit: usize) -> Net {
        Net::with_loss(me, nodes, inline_limit, OnNodeLoss::Fail)
    }

    /// As [`Net::new`], with what the run does when a node is lost: with
    /// [`OnNodeLoss::Respawn`], node 0 keeps a [`custody::Log`].
    pub(crate) fn with_loss(me: Rank, nodes: u32, inline_limit: usize, loss: OnNodeLoss) -> Net {
        // Node 0 of a run that replays a lost node keeps the log; every
        // other node of it receives custody of what node 0 sends.
        let respawn_root = loss == OnNodeLoss::Respawn && me == Rank::ROOT && nodes > 1;
        let losable = loss == OnNodeLoss::Respawn && me != Rank::ROOT;
        let state = Arc::new((
            Mutex::new(NetState {
                out: VecDeque::new(),
                pool: if me == Rank::ROOT {
                    Dyadic::one()
                } else {
                    Dyadic::zero()
                },
                busy: 0,
                stop: false,
                outstanding: 0,
                peak_outstanding: 0,
                owed: vec![0; nodes as usize],
                owed_total: 0,
                finished: false,
                order: None,
                log: respawn_root.then(|| custody::Log::new(nodes)),
            }),
            Condvar::new(),
        ));
        let release = Arc::new(Releaser(Arc::downgrade(&state)));
        let home = losable.then(|| custody::home(&state)).flatten();
        Net {
            me,
            nodes,
            state,
            store: fields::FieldStore::new(me, release),
            inbound: Mutex::new(FxHashMap::default()),
            next_conn: AtomicU64::new(0),
            traffic: Traffic::default(),
            outstanding_hint: AtomicU64::new(0),
            owed_hint: AtomicU64::new(0),
            respawn_root,
            // A node that may be lost sends its fields by value (those
            // node 0 is home to go on as references): a record it
            // committed to node 0 then needs nothing from it, so no
            // field's only copy is lost with it (custody.rs).
            enc: Mutex::new({
                let enc = wire::Encoder::new(me, nodes, inline_limit);
                // Node 0 of such a run logs what it sends; every other
                // node drops it once sent.
                let enc = if respawn_root { enc } else { enc.consuming() };
                if losable {
                    enc.keeping_nothing()
                } else {
                    enc
                }
            }),
            sending: Mutex::new(managers::SendBufs::default()),
            custody: losable.then(|| Mutex::new(Receiving::default())),
            next_from_root: AtomicU64::new(0),
            home,
            ordered: crate::sync::AtomicBool::new(false),
            tombstoned_any: crate::sync::AtomicBool::new(false),
            parked_any: crate::sync::AtomicBool::new(false),
            window: ack_window(),
        }
    }

    /// A node that may be lost gives the fields whose bodies lie in
    /// `region`, memory that outlives its process (the transport's
    /// [`Transport::shared_region`]; wire.rs, "Given fields"). Set when the
    /// node's net is made, before any thread can send: a worker sends
    /// batches itself, and one sent before the region was known copied
    /// its fields.
    pub(crate) fn sharing(self, region: Option<std::ops::Range<usize>>) -> Net {
        lock(&self.enc).set_shared(region);
        self
    }

    /// A run with other nodes (managers needed).
    pub(crate) fn distributed(&self) -> bool {
        self.nodes > 1
    }

    /// Queues a message for the output manager.
    pub(crate) fn push(&self, out: Out) {
        let (m, cv) = &*self.state;
        let mut st = lock(m);
        if matches!(out, Out::Shutdown) {
            st.finished = true;
        }
        if let (
            Some(log),
            Out::Open {
                to,
                conn,
                template,
                back,
                start,
            },
        ) = (st.log.as_mut(), &out)
        {
            log.opened(
                *to,
                custody::Opened {
                    conn: *conn,
                    template: *template,
                    back: *back,
                    start: start.clone(),
                },
            );
        }
        st.out.push_back(out);
        drop(st);
        cv.notify_one();
    }

    /// The credit of a message to node `to`: `credit`, plus a share of
    /// the pool if `share`; node 0 with a log counts it as sent to `to`
    /// (under the same lock).
    pub(crate) fn credit_to(&self, to: Rank, credit: &mut Dyadic, share: bool) {
        let logs = self.respawn_root && to != self.me;
        if !share && (!logs || credit.is_zero()) {
            return;
        }
        let mut st = lock(&self.state.0);
        if share {
            let s = st.pool.share(self.me == Rank::ROOT);
            credit.add_all(&s);
        }
        if logs && !credit.is_zero() {
            if let Some(log) = st.log.as_mut() {
                log.credit_sent(to, credit);
            }
        }
    }

    /// Node `k` (not 0) is lost and its replacement started: takes from
    /// the log what the replacement is sent again, drops what was queued
    /// for the old incarnation, and gives back the acknowledgements and
    /// credit it took with it. The caller holds [`Net::enc`] (nothing is
    /// being sent). `Err`: why the node is given up ([`custody::GiveUp`]).
    pub(crate) fn replay(&self, k: Rank) -> Result<(), custody::GiveUp> {
        let (m, cv) = &*self.state;
        let mut guard = lock(m);
        let st = &mut *guard;
        let NetState {
            out, log, finished, ..
        } = st;
        let Some(log) = log.as_mut() else {
            return Ok(());
        };
        if *finished {
            return Ok(());
        }
        // What was queued for the old incarnation: its records and
        // markers (not numbered yet: an item takes its identity when
        // sent, `Net::logged`) go to the replacement after the log's, its
        // connections are opened again, and nothing else
        // (acknowledgements, fields) means anything to the replacement.
        let old = std::mem::take(out);
        let mut dropped = Vec::new();
        let mut later = Vec::new();
        // Items queued and dropped: no longer outstanding.
        let mut unsent = 0u64;
        for o in old {
            let to = match &o {
                Out::Open { to, .. }
                | Out::Item { to, .. }
                | Out::Fetch { to, .. }
                | Out::Bytes { to, .. }
                | Out::Release { to, .. }
                | Out::Ack { to, .. }
                | Out::Commit { to, .. }
                | Out::Tombstones { to, .. }
                | Out::Parked { to, .. }
                | Out::Drain { to }
                | Out::Replay { to, .. }
                | Out::Seq { to, .. } => Some(*to),
                Out::Credit(_) | Out::Fail(_) | Out::Shutdown => None,
            };
            match o {
                o @ Out::Item {
                    item: Item::Rec(_) | Item::Marker(_),
                    ..
                } if to == Some(k) => later.push(o),
                o if to == Some(k) => {
                    unsent += u64::from(matches!(o, Out::Item { .. }));
                    dropped.push(o);
                }
                o => out.push_back(o),
            }
        }
        let r = match log.lose(k) {
            Ok(r) => r,
            Err(e) => {
                drop(guard);
                drop((dropped, later));
                return Err(e);
            }
        };
        log.resent(k, r.items.len() as u64);
        st.outstanding = st.outstanding.saturating_sub(r.unacked + unsent) + r.items.len() as u64;
        self.outstanding_hint
            .store(st.outstanding, Ordering::SeqCst);
        let owed = std::mem::take(&mut st.owed[k.0 as usize]);
        st.owed_total -= owed;
        self.owed_hint.store(st.owed_total, Ordering::Relaxed);
        st.pool.add_all(&r.lost_credit);
        for o in r.opens {
            st.out.push_back(Out::Open {
                to: k,
                conn: o.conn,
                template: o.template,
                back: o.back,
                start: o.start,
            });
        }
        if !r.tombstones.is_empty() {
            st.out.push_back(Out::Tombstones {
                to: k,
                cells: r.tombstones,
            });
        }
        for (cell, slot, rec) in r.parked {
            st.out.push_back(Out::Parked {
                to: k,
                cell,
                slot,
                rec,
            });
        }
        for (id, conn, item) in r.items {
            st.out.push_back(Out::Replay {
                to: k,
                conn,
                id,
                item,
            });
        }
        st.out.push_back(Out::Seq {
            to: k,
            next: r.next,
        });
        st.out.extend(later);
        drop(guard);
        // Dropping records may release fields (which locks the state).
        drop(dropped);
        cv.notify_one();
        Ok(())
    }

    /// Node 0 with a log: the output manager encoded the items of `s` for
    /// their nodes, in the order it sends them (and has not sent them
    /// yet: a node may report one done at once): each takes its node's
    /// next identity, and the log keeps the records and markers, their
    /// slots moved in a batch at a time (under one lock for the batch).
    pub(crate) fn logged(&self, s: &mut custody::Sending) {
        if s.is_empty() {
            return;
        }
        if let Some(log) = lock(&self.state.0).log.as_mut() {
            log.sent_all(s);
        }
        // The records done since the last batch, dropped on this thread
        // after the lock ([`custody::Log::done_run_for_sender`]).
        s.dead.clear();
    }

    /// Nodes node 0 replaced during the run.
    pub(crate) fn replaced(&self) -> u64 {
        lock(&self.state.0).log.as_ref().map_or(0, |l| l.replaced)
    }

    /// A node other than 0 of a run that survives a lost node (records
    /// from node 0 may carry custody tokens).
    pub(crate) fn receives_custody(&self) -> bool {
        self.custody.is_some()
    }

    /// A run that survives a lost node (custody on either side).
    pub(crate) fn custody_on(&self) -> bool {
        self.respawn_root || self.custody.is_some()
    }

    /// A node other than 0: the next item from `from` is its `next`th.
    pub(crate) fn set_next(&self, from: Rank, next: u64) {
        if let (Some(_), Rank::ROOT) = (&self.custody, from) {
            self.next_from_root.store(next, Ordering::Relaxed);
        }
    }

    /// Queues an item for connection `conn` on node `to`: one more item
    /// outstanding until `to` acknowledges it. `notify`: wake the output
    /// manager; a worker that sends what it queued itself
    /// ([`managers::send_queued`], after its task) does not.
    pub(crate) fn push_item(&self, to: Rank, conn: ConnId, item: Item, notify: bool) {
        let (m, cv) = &*self.state;
        let mut st = lock(m);
        st.outstanding += 1;
        st.peak_outstanding = st.peak_outstanding.max(st.outstanding);
        self.outstanding_hint
            .store(st.outstanding, Ordering::Relaxed);
        st.out.push_back(Out::Item { to, conn, item });
        drop(st);
        if notify {
            cv.notify_one();
        }
    }

    /// Wakes the output manager (a worker that queued something and found
    /// the encoder taken: its holder may be another worker, which does
    /// not look at the queue again after its own batch).
    pub(crate) fn notify(&self) {
        self.state.1.notify_one();
    }

    /// Items sent to other nodes and not acknowledged yet, roughly (any
    /// thread), weighed against the node's own backlog ([`ACK_WINDOW`]
    /// of them count as `BACKLOG_LIMIT`): what admission and suspended
    /// work add to that backlog.
    pub(crate) fn outstanding(&self) -> u64 {
        self.weigh(self.outstanding_hint.load(Ordering::Relaxed))
    }

    /// `items` unacknowledged, in items of the node's own backlog.
    #[inline]
    fn weigh(&self, items: u64) -> u64 {
        items * crate::runtime::BACKLOG_LIMIT as u64 / self.window
    }

    /// As [`Net::outstanding`], for a worker about to sleep: `SeqCst`
    /// pairs with the store in [`Net::acked`] and the sleep protocol's
    /// `SeqCst` hint (either the sleeper sees the ack, or the input manager
    /// that took it sees the sleeper and wakes it).
    pub(crate) fn outstanding_now(&self) -> u64 {
        self.weigh(self.outstanding_hint.load(Ordering::SeqCst))
    }

    /// The most items that were ever outstanding at once.
    pub(crate) fn peak_outstanding(&self) -> u64 {
        lock(&self.state.0).peak_outstanding
    }

    /// Node `from` acknowledged `count` items; false if that is more than
    /// are outstanding (a protocol error).
    pub(crate) fn acked(&self, from: Rank, count: u64) -> bool {
        let mut st = lock(&self.state.0);
        let Some(left) = st.outstanding.checked_sub(count) else {
            return false;
        };
        if let Some(log) = st.log.as_mut() {
            log.acked(from, count);
        }
        st.outstanding = left;
        self.outstanding_hint.store(left, Ordering::SeqCst);
        true
    }

    /// Items `count` more items sent to another node outside
    /// [`Net::push_item`] (a commit's): outstanding until acknowledged.
    pub(crate) fn sending(&self, count: u64) {
        if count == 0 {
            return;
        }
        let mut st = lock(&self.state.0);
        st.outstanding += count;
        st.peak_outstanding = st.peak_outstanding.max(st.outstanding);
        self.outstanding_hint
            .store(st.outstanding, Ordering::Relaxed);
    }

    /// A node other than 0 of a run that survives a lost node: connection
    /// `conn` from node 0 was opened for `template`, whose records and
    /// markers get custody tokens if replay can restore it. `markers`:
    /// the program may send ordering markers (it has deterministic
    /// combinators); their commits then keep their order
    /// ([`custody::CommitOrder`], set up before the first item arrives:
    /// every item comes after an `Open`).
    pub(crate) fn opened(&self, from: Rank, conn: ConnId, replayable: bool, markers: bool) {
        let (Some(c), Rank::ROOT) = (&self.custody, from) else {
            return;
        };
        if markers && !self.ordered.load(Ordering::Relaxed) {
            lock(&self.state.0).order = Some(custody::CommitOrder::default());
            self.ordered.store(true, Ordering::Relaxed);
        }
        if replayable {
            lock(c).replayable.insert(conn);
        }
    }

    /// An item arrived from `from` on `conn`: with custody, it takes its
    /// number, and a record or marker on a replayable connection its
    /// token (one on another connection is reported done at once).
    #[cfg(all(test, not(loom)))]
    pub(crate) fn arrived(&self, from: Rank, conn: ConnId, item: &mut Item) {
        self.arrived_on(self.arrivals(from, conn), item)
    }

    /// What [`Net::arrived_on`] needs to know of the items of one `Items`
    /// frame from `from` on `conn` (looked up once a frame, not once an
    /// item).
    pub(crate) fn arrivals(&self, from: Rank, conn: ConnId) -> Arrivals {
        let replayable = match (&self.custody, from) {
            (Some(c), Rank::ROOT) => Some(lock(c).replayable.contains(&conn)),
            _ => None,
        };
        Arrivals { conn, replayable }
    }

    /// As [`Net::arrived`], for an item of a frame whose [`Arrivals`]
    /// are `a`.
    pub(crate) fn arrived_on(&self, a: Arrivals, item: &mut Item) {
        let Some(replayable) = a.replayable else {
            return;
        };
        let (from, conn) = (Rank::ROOT, a.conn);
        // (The input manager alone counts them.)
        let id = self.next_from_root.load(Ordering::Relaxed);
        self.next_from_root.store(id + 1, Ordering::Relaxed);
        if !matches!(item, Item::Rec(_) | Item::Marker(_)) {
            return;
        }
        // (The input manager's thread: items arrive in their order.)
        if self.ordered.load(Ordering::Relaxed) {
            if let Some(o) = lock(&self.state.0).order.as_mut() {
                o.arrived(id);
            }
        }
        let t = || custody::Token::new(from, id, conn, Arc::downgrade(&self.state));
        match item {
            // The token is made where the record is first processed (so
            // that one thread allocates and frees it), if its numbers fit
            // a word ([`custody::Pending`]).
            Item::Rec(r) if replayable => match self
                .home
                .filter(|_| r.det.is_bare())
                .and_then(|h| custody::Pending::new(h, conn, id))
            {
                Some(p) => r.det.set_pending(p),
                None => r.det.set_custody(Some(Arc::new(t()))),
            },
            Item::Marker(m) if replayable => {
                m.custody = crate::entity::MarkerCustody(Some(Arc::new(t().for_marker())));
            }
            // Else the token is dropped here: done at once.
            _ => drop(t()),
        }
    }

    /// Whether an earlier incarnation of this node may have fired a
    /// cell (node 0 sent tombstones): if not, [`Net::tombstoned`] is
    /// false for every cell, and a guard need not name the cell to ask.
    pub(crate) fn any_tombstones(&self) -> bool {
        self.tombstoned_any.load(Ordering::Acquire)
    }

    /// Whether earlier incarnations' drains parked records here (node 0
    /// sent them, before any replayed record): if not, a new cell starts
    /// empty, and its guard need not name it to ask.
    pub(crate) fn any_parked(&self) -> bool {
        self.parked_any.load(Ordering::Acquire)
    }

    /// The records earlier incarnations' drains parked in cell `cell`
    /// (slot, record), taken: the cell starts with them.
    pub(crate) fn parked_in(&self, cell: &wire::CellId) -> Vec<(u64, snet_core::Record)> {
        self.custody
            .as_ref()
            .and_then(|c| lock(c).parked.remove(cell))
            .unwrap_or_default()
    }

    /// Whether an earlier incarnation of this node fired cell `cell`.
    pub(crate) fn tombstoned(&self, cell: &wire::CellId) -> bool {
        self.any_tombstones()
            && self
                .custody
                .as_ref()
                .is_some_and(|c| lock(c).tombstones.contains(cell))
    }

    /// Node 0 says this node's earlier incarnations fired `cell`.
    fn tombstone(&self, cell: wire::CellId) {
        if let Some(c) = &self.custody {
            lock(c).tombstones.insert(cell);
            self.tombstoned_any.store(true, Ordering::Release);
        }
    }

    /// A `Parked` frame from `from` and its record: node 0 keeps it until
    /// the cell's tombstone; a replacement's cell starts with it.
    pub(crate) fn parked_frame(&self, from: Rank, cell: wire::CellId, slot: u64, item: Item) {
        let Item::Rec(rec) = item else { return };
        if self.me == Rank::ROOT {
            if let Some(log) = lock(&self.state.0).log.as_mut() {
                log.park(from, cell, slot, rec);
                return;
            }
        } else if from == Rank::ROOT {
            if let Some(c) = &self.custody {
                lock(c)
                    .parked
                    .entry(cell)
                    .or_default()
                    .push((slot, rec.rec));
                self.parked_any.store(true, Ordering::Release);
                return;
            }
        }
        // (Outside the lock: dropping a record may release fields.)
        drop(rec);
    }

    /// A `Fired` frame from `from`: node 0 keeps the tombstone; a
    /// replacement takes it from node 0.
    pub(crate) fn fired_frame(&self, from: Rank, cell: wire::CellId) {
        if self.me == Rank::ROOT {
            self.fired(from, cell);
        } else if from == Rank::ROOT {
            self.tombstone(cell);
        }
    }

    /// A `Drain` frame from `from` (node 0's only): the stream is over,
    /// and each synchrocell entity that holds records is handed
    /// [`Item::Wake`], on which it *parks* its stored records under its
    /// own licence ([`crate::synchrocell::Guard::drain`]: a copy of each
    /// goes to node 0 in its token's group, with the cell's name and the
    /// slot; the record stays in the cell; the token is dropped, so that
    /// its group commits). The node is quiescent when node 0 asks, so
    /// nothing is ahead of the `Wake` in a cell's inbox, and whatever
    /// reaches the cell later (a feedback loop on node 0 bringing records
    /// back once their groups committed) comes behind it: records stored
    /// after the drain keep their tokens, and a later drain parks them.
    pub(crate) fn drain_frame(&self, from: Rank, ctx: &mut crate::runtime::Ctx) {
        if from != Rank::ROOT || self.custody.is_none() {
            return;
        }
        for e in ctx.rt.holding_cells() {
            ctx.send(&e, Item::Wake);
        }
    }

    /// Node 0: node `from`'s groups fired `cells` (a message's `Fired`
    /// and `Fired keys` frames as read, taken into the log under one
    /// lock; the caller empties `cells`).
    pub(crate) fn fired_all(&self, from: Rank, cells: &[wire::CellRun<'_>]) {
        if cells.is_empty() {
            return;
        }
        let mut gone = Vec::new();
        if let Some(log) = lock(&self.state.0).log.as_mut() {
            for run in cells {
                log.fired_run(from, run, &mut gone);
            }
        }
        // (Outside the lock: dropping a record may release fields.)
        drop(gone);
    }

    /// Node 0: node `from`'s groups fired `cell`.
    fn fired(&self, from: Rank, cell: wire::CellId) {
        let gone = match lock(&self.state.0).log.as_mut() {
            Some(log) => log.fired(from, cell),
            None => Vec::new(),
        };
        // (Outside the lock: dropping a record may release fields.)
        drop(gone);
    }

    /// Node 0 at the end of the input, quiescent: with records still in
    /// some node's custody (held in groups a synchrocell's stored record
    /// keeps open), asks those nodes to drain and returns true, once per
    /// change of the log; else false (the run may end).
    pub(crate) fn ask_drain(&self) -> bool {
        let (m, cv) = &*self.state;
        let mut g = lock(m);
        let st = &mut *g;
        let Some(log) = st.log.as_mut() else {
            return false;
        };
        if log.live() == 0 || log.dones() == log.drained_at {
            return false;
        }
        log.drained_at = log.dones();
        for k in log.holding() {
            st.out.push_back(Out::Drain { to: k });
        }
        drop(g);
        cv.notify_one();
        true
    }

    /// Node `from` reports done the `id`th item this node sent it
    /// (`Done`); false if the log does not hold it (a protocol error).
    #[cfg(all(test, not(loom)))]
    pub(crate) fn done(&self, from: Rank, id: u64) -> bool {
        self.done_all(from, &[(id, 0)], &mut custody::Dead::default())
            .is_none()
    }

    /// Node `from` reports done the items numbered `ids` ([`Net::retire`]
    /// without tombstones).
    #[cfg(all(test, not(loom)))]
    pub(crate) fn done_all(
        &self,
        from: Rank,
        ids: &[(u64, u64)],
        left: &mut custody::Dead,
    ) -> Option<u64> {
        self.retire(from, &[], ids, left)
    }

    /// Node 0, at the end of a message from `from`: its tombstones not
    /// filed yet (`cells`, as [`Net::fired_all`] files them) and the
    /// items it reports done, `ids` (its `Done` frames, each a first
    /// identity and how many after it), taken into the log under one
    /// lock; the first item the log does not hold, if any (a protocol
    /// error: so a run longer than the log stops there). The records
    /// taken are kept for the thread that sends the next batch to drop
    /// ([`custody::Log::done_run_for_sender`]), unless this node ever held a reference
    /// to another node's field (whose drop queues a message) or many are
    /// kept already: then they go through `left`, dropped here after the
    /// lock, as are the parked records a tombstone takes out.
    pub(crate) fn retire(
        &self,
        from: Rank,
        cells: &[wire::CellRun<'_>],
        ids: &[(u64, u64)],
        left: &mut custody::Dead,
    ) -> Option<u64> {
        if ids.is_empty() {
            self.fired_all(from, cells);
            return None;
        }
        let mut unknown = None;
        let mut gone = Vec::new();
        {
            let mut st = lock(&self.state.0);
            let Some(log) = st.log.as_mut() else {
                return ids.first().map(|r| r.0);
            };
            for run in cells {
                log.fired_run(from, run, &mut gone);
            }
            // (Asked under the lock: every record of the log passed
            // through it after any reference it holds was made.)
            let here = !self.store.proxied();
            for &(first, more) in ids {
                // (`first + more` does not overflow: the wire checks it.)
                unknown = if here {
                    log.done_run_for_sender(from, first, more, left)
                } else {
                    log.done_run(from, first, more, left)
                };
                if unknown.is_some() {
                    break;
                }
            }
        }
        // The records leave the log outside the lock (dropping one may
        // release fields, which queue messages).
        left.clear();
        drop(gone);
        unknown
    }

    /// The records node 0's log holds, and the most it ever held (both
    /// zero without a log).
    pub(crate) fn log_size(&self) -> (u64, u64) {
        lock(&self.state.0)
            .log
            .as_ref()
            .map_or((0, 0), |l| (l.live(), l.peak()))
    }

    /// `count` items arrived from node `from`: they are owed an
    /// acknowledgement.
    pub(crate) fn received(&self, from: Rank, count: u64) {
        if count == 0 {
            return;
        }
        let mut st = lock(&self.state.0);
        st.owed[from.0 as usize] += count;
        st.owed_total += count;
        self.owed_hint.store(st.owed_total, Ordering::Relaxed);
    }

    /// Whether items received are waiting for an acknowledgement, roughly.
    pub(crate) fn owes(&self) -> bool {
        self.owed_hint.load(Ordering::Relaxed) > 0
    }

    /// Queues an acknowledgement to every node for the items received from
    /// it. Called only while the node's own backlog (of entities that are
    /// not suspended) is small, and whenever the node is passive: never
    /// depending on what this node has outstanding itself (see
    /// ARCHITECTURE.md, "It cannot deadlock", rule 3).
    /// `notify`: wake the output manager (a worker sends them itself,
    /// with what else it queued: [`managers::send_queued`]). Whether any
    /// was queued.
    pub(crate) fn flush_acks(&self, notify: bool) -> bool {
        let (m, cv) = &*self.state;
        let mut st = lock(m);
        if Self::queue_acks(&mut st) {
            self.owed_hint.store(0, Ordering::Relaxed);
            drop(st);
            if notify {
                cv.notify_one();
            }
            return true;
        }
        false
    }

    /// Moves every owed acknowledgement to the outbound queue; whether
    /// there was any.
    fn queue_acks(st: &mut NetState) -> bool {
        if st.owed_total == 0 || st.stop {
            return false;
        }
        st.owed_total = 0;
        for p in 0..st.owed.len() {
            let count = std::mem::take(&mut st.owed[p]);
            if count > 0 {
                st.out.push_back(Out::Ack {
                    to: Rank(p as u32),
                    count,
                });
            }
        }
        true
    }

    /// Replaces everything queued by a failure notice to every node.
    pub(crate) fn fail_notice(&self, message: String) {
        let (m, cv) = &*self.state;
        let dropped = {
            let mut st = lock(m);
            let old = std::mem::take(&mut st.out);
            st.out.push_back(Out::Fail(message));
            old
        };
        cv.notify_one();
        // Dropping records may release fields (which locks the state again).
        drop(dropped);
    }

    /// Binds a new connection into this node to `to`.
    pub(crate) fn bind(&self, to: Arc<Entity>) -> ConnId {
        let conn = self.new_conn();
        lock(&self.inbound).insert(conn, to);
        conn
    }

    pub(crate) fn new_conn(&self) -> ConnId {
        ConnId {
            origin: self.me,
            seq: self.next_conn.fetch_add(1, Ordering::Relaxed),
        }
    }

    /// `me` waits for the value of `r` (see [`fields`]).
    pub(crate) fn request(&self, r: &RemoteField, me: Arc<Entity>) {
        if let Some(s) = self.store.request(r, fields::Waiter::Entity(me)) {
            self.push_store(s);
        }
    }

    pub(crate) fn push_store(&self, s: fields::Send) {
        self.push(match s {
            fields::Send::Fetch { home, id } => Out::Fetch { to: home, id },
            fields::Send::Bytes { node, id, value } => Out::Bytes {
                to: node,
                id,
                value,
            },
        });
    }

    /// The termination rule, called whenever the node may have become
    /// passive: by the last worker going to sleep, and by a manager that
    /// finished a message. `quiet` (computed by the caller under the sleep
    /// lock) says every worker is asleep and no task is queued.
    ///
    /// A node other than 0 that is passive sends all its credit to node 0
    /// (as a message, which the output manager sends with exactly that
    /// credit). Node 0 is quiescent when passive with all the credit.
    ///
    /// `notify`: wake the output manager for what this queues (the
    /// acknowledgements owed, the credit). A worker about to sleep passes
    /// false: it is told [`Settle::Queued`] and sends them itself
    /// ([`managers::send_queued`]) before it looks again.
    pub(crate) fn settle(&self, quiet: bool, notify: bool) -> Settle {
        let (m, cv) = &*self.state;
        let mut st = lock(m);
        if !quiet || st.busy > 0 || !st.out.is_empty() || st.stop {
            return Settle::Busy;
        }
        // Nothing here is backlog any more: what arrived is acknowledged
        // before the node may count as passive (so a quiescent run has
        // nothing outstanding anywhere).
        if Self::queue_acks(&mut st) {
            self.owed_hint.store(0, Ordering::Relaxed);
            drop(st);
            if !notify {
                return Settle::Queued;
            }
            cv.notify_one();
            return Settle::Busy;
        }
        if self.me == Rank::ROOT {
            if st.pool.is_one() {
                Settle::Quiescent
            } else {
                Settle::Passive
            }
        } else {
            if !st.pool.is_zero() {
                let credit = st.pool.take();
                st.out.push_back(Out::Credit(credit));
                drop(st);
                if !notify {
                    return Settle::Queued;
                }
                cv.notify_one();
            }
            Settle::Passive
        }
    }

    /// A manager starts handling a message from `from` that brought
    /// `credit` (node 0 with a log counts it as received from `from`,
    /// under the same lock).
    pub(crate) fn begin(&self, from: Rank, credit: &Dyadic) {
        let mut st = lock(&self.state.0);
        if self.respawn_root && from != self.me && !credit.is_zero() {
            if let Some(log) = st.log.as_mut() {
                log.credit_received(from, credit);
            }
        }
        st.pool.add_all(credit);
        st.busy += 1;
    }

    /// A manager finished a message.
    pub(crate) fn end(&self) {
        lock(&self.state.0).busy -= 1;
    }

    /// Stops the output manager once its queue is empty.
    pub(crate) fn stop(&self) {
        let (m, cv) = &*self.state;
        lock(m).stop = true;
        cv.notify_all();
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    fn queued(net: &Net) -> Vec<(Rank, u64)> {
        let st = lock(&net.state.0);
        st.out
            .iter()
            .filter_map(|o| match o {
                Out::Ack { to, count } => Some((*to, *count)),
                _ => None,
            })
            .collect()
    }

    fn conn() -> ConnId {
        ConnId {
            origin: Rank(0),
            seq: 0,
        }
    }

    #[test]
    fn outstanding_counts_items_sent_until_acknowledged() {
        let mut net = Net::new(Rank(0), 3, 1024);
        // Each item weighs as much as one in the node's own backlog.
        net.window = crate::runtime::BACKLOG_LIMIT as u64;
        for _ in 0..5 {
            net.push_item(Rank(1), conn(), Item::Wake, true);
        }
        net.push_item(Rank(2), conn(), Item::Wake, true);
        assert_eq!(net.outstanding(), 6);
        assert!(net.acked(Rank(1), 4));
        assert_eq!(net.outstanding(), 2);
        net.push_item(Rank(2), conn(), Item::Wake, true);
        assert_eq!(net.outstanding(), 3);
        // More than outstanding is refused and changes nothing.
        assert!(!net.acked(Rank(1), 4));
        assert_eq!(net.outstanding(), 3);
        assert!(net.acked(Rank(1), 3));
        assert_eq!(net.outstanding(), 0);
        assert_eq!(net.peak_outstanding(), 6);
    }

    #[test]
    fn unacknowledged_items_weigh_a_fraction_of_the_backlog() {
        let mut net = Net::new(Rank(0), 2, 1024);
        net.window = 8 * crate::runtime::BACKLOG_LIMIT as u64;
        for _ in 0..15 {
            net.push_item(Rank(1), conn(), Item::Wake, true);
        }
        assert_eq!(net.outstanding(), 1);
        assert_eq!(net.outstanding_now(), 1);
        net.push_item(Rank(1), conn(), Item::Wake, true);
        assert_eq!(net.outstanding(), 2);
        assert!(net.acked(Rank(1), 16));
        assert_eq!(net.outstanding(), 0);
        assert_eq!(net.peak_outstanding(), 16);
    }

    fn rec(n: i64) -> Item {
        let mut r = snet_core::Record::new();
        r.set_int(snet_core::Label::tag("n"), n);
        Item::Rec(crate::entity::Rec {
            rec: r,
            det: Stamps::new(),
            origin: crate::entity::Origin::input(n as u64, None),
        })
    }

    fn logged(net: &Net, k: u32) -> Vec<(u64, i64)> {
        let st = lock(&net.state.0);
        let log = st.log.as_ref().expect("a log");
        log.held(Rank(k))
            .into_iter()
            .map(|(id, _, r)| (id, r.rec.int(snet_core::Label::tag("n")).expect("n")))
            .collect()
    }

    /// What the output manager does with what is queued: the records
    /// sent go to the log.
    fn send_queued(net: &Net) {
        let out = std::mem::take(&mut lock(&net.state.0).out);
        send(net, out);
    }

    /// What the output manager does with `out`, taken from the queue:
    /// the items in it are numbered, and the records and markers go to
    /// the log.
    fn send(net: &Net, out: impl IntoIterator<Item = Out>) {
        let mut s = custody::Sending::default();
        for o in out {
            if let Out::Item { to, conn, item } = o {
                drop(s.push(to, conn, item));
            }
        }
        net.logged(&mut s);
        assert!(s.is_empty());
    }

    #[test]
    fn node_0_logs_each_record_it_sends_until_the_node_reports_it_done() {
        let net = Net::with_loss(Rank(0), 3, 1024, OnNodeLoss::Respawn);
        net.push_item(Rank(1), conn(), rec(10), true);
        net.push_item(Rank(2), conn(), rec(20), true);
        // A marker takes a number (the receiver counts every item) but is
        // not logged.
        net.push_item(Rank(1), conn(), Item::Resume, true);
        net.push_item(Rank(1), conn(), rec(11), true);
        // Queued, not sent: not numbered or logged yet (node 0 moves
        // the records in once encoded, never copies them), and nothing
        // is done.
        assert_eq!(logged(&net, 1), vec![]);
        assert_eq!(net.log_size(), (0, 0));
        assert!(!net.done(Rank(1), 0));
        send_queued(&net);
        assert_eq!(logged(&net, 1), vec![(0, 10), (2, 11)]);
        assert_eq!(logged(&net, 2), vec![(0, 20)]);
        assert_eq!(net.log_size(), (3, 3));
        // Done out of order; acknowledgement does not retire anything.
        assert!(net.acked(Rank(1), 3));
        assert!(net.done(Rank(1), 2));
        assert_eq!(logged(&net, 1), vec![(0, 10)]);
        // Twice, the marker's number, another node's number: refused.
        assert!(!net.done(Rank(1), 2));
        assert!(!net.done(Rank(1), 1));
        assert!(!net.done(Rank(2), 1));
        assert!(net.done(Rank(2), 0));
        assert!(net.done(Rank(1), 0));
        assert_eq!(net.log_size(), (0, 3));
        // Numbers go on after an emptied log, markers included.
        net.push_item(Rank(1), conn(), rec(12), true);
        net.push_item(Rank(1), conn(), Item::Resume, true);
        net.push_item(Rank(1), conn(), rec(13), true);
        send_queued(&net);
        assert_eq!(logged(&net, 1), vec![(3, 12), (5, 13)]);
        assert!(net.done(Rank(1), 3));
        assert!(net.done(Rank(1), 5));
        assert!(!net.done(Rank(1), 4));
        assert_eq!(net.log_size(), (0, 3));
        // A `Done` frame's run of items (the first, and how many after
        // it): each item retired; a run past what the log holds is
        // refused at the first item it does not hold, the items before
        // it retired.
        for r in 0..5 {
            net.push_item(Rank(2), conn(), rec(30 + r), true);
        }
        send_queued(&net);
        let mut left = custody::Dead::default();
        assert_eq!(net.done_all(Rank(2), &[(2, 2), (1, 0)], &mut left), None);
        assert_eq!(logged(&net, 2), vec![(5, 34)]);
        assert_eq!(net.done_all(Rank(2), &[(5, 3)], &mut left), Some(6));
        assert_eq!(logged(&net, 2), vec![]);
        assert_eq!(net.log_size(), (0, 5));
    }

    /// The end of a message from a node: its tombstones (a `Fired keys`
    /// frame's run and a lone `Fired` frame, as read) and its `Done`
    /// runs go into the log together ([`Net::retire`]), and a
    /// replacement is sent exactly those tombstones.
    #[test]
    fn a_messages_tombstones_and_dones_are_taken_into_the_log_together() {
        let net = Net::with_loss(Rank(0), 2, 1024, OnNodeLoss::Respawn);
        for n in 0..4 {
            net.push_item(Rank(1), conn(), rec(n), true);
        }
        send_queued(&net);
        let cell = |path: &[u64], key| wire::CellId {
            conn: conn(),
            cell: NodeId(3),
            path: path.iter().copied().collect(),
            key,
        };
        let cells = vec![cell(&[1], 4), cell(&[1], 8), cell(&[1], 12), cell(&[2], 4)];
        let mut f = wire::Frames::default();
        f.fired_cells(&cells);
        let mut b = Vec::new();
        f.message(&Dyadic::zero(), &mut b);
        let (_, mut r) = wire::MessageReader::new(&b).expect("a message");
        let mut runs = Vec::new();
        while let Some(frame) = r.next_frame().expect("a frame") {
            runs.push(match frame {
                wire::FrameRef::Fired { cell } => wire::CellRun::one(cell),
                wire::FrameRef::FiredKeys { cells } => cells,
                f => panic!("a tombstone frame, not {f:?}"),
            });
        }
        assert_eq!(runs.len(), 2, "one frame a run of an instance's cells");
        let mut left = custody::Dead::default();
        assert_eq!(
            net.retire(Rank(1), &runs, &[(0, 1), (2, 1)], &mut left),
            None
        );
        assert_eq!(net.log_size(), (0, 4));
        let mut st = lock(&net.state.0);
        let Ok(replay) = st.log.as_mut().expect("a log").lose(Rank(1)) else {
            panic!("node 1 is replaced");
        };
        let mut sent = replay.tombstones;
        sent.sort();
        assert_eq!(sent, cells);
    }

    /// A retired record is dropped under the state's lock only while the
    /// node has never held a reference to another node's field (dropping
    /// one queues a message, which takes that lock): after the first
    /// such reference, retired records go through the caller's buffer.
    #[test]
    fn node_0_drops_retired_records_in_place_only_if_it_never_held_another_nodes_field() {
        let net = Net::with_loss(Rank(0), 2, 1024, OnNodeLoss::Respawn);
        for n in 0..3 {
            // (With a field: a packed record's fields are what is dropped.)
            let Item::Rec(mut r) = rec(n) else {
                unreachable!("a record")
            };
            r.rec.set(
                snet_core::Label::field("x"),
                snet_core::Value::Field(snet_core::Field::text("T", false, "x")),
            );
            net.push_item(Rank(1), conn(), Item::Rec(r), true);
        }
        send_queued(&net);
        let mut left = custody::Dead::default();
        assert_eq!(net.done_all(Rank(1), &[(0, 0)], &mut left), None);
        assert_eq!(logged(&net, 1), vec![(1, 1), (2, 2)]);
        assert_eq!(left.capacity(), 0, "dropped where it was taken");
        assert!(!net.store.proxied());
        let f = net.store.proxy(Rank(1), 7, 1, "X", 10);
        assert!(net.store.proxied());
        assert_eq!(net.done_all(Rank(1), &[(1, 1)], &mut left), None);
        assert_eq!(logged(&net, 1), vec![]);
        assert!(left.capacity() >= 2, "dropped after the lock");
        assert!(left.is_empty());
        drop(f);
    }

    #[test]
    fn a_lost_node_is_sent_again_what_was_sent_and_what_was_queued_in_order() {
        let net = Net::with_loss(Rank(0), 3, 1024, OnNodeLoss::Respawn);
        net.push(Out::Open {
            to: Rank(1),
            conn: conn(),
            template: snet_core::NodeId(0),
            back: conn(),
            start: Stamps::new(),
        });
        for n in 0..4 {
            net.push_item(Rank(1), conn(), rec(n), true);
        }
        // 0 and 1 sent; 1 reported done; 2 and 3 still queued, with an
        // item for node 2, when node 1 is lost.
        let mut st = lock(&net.state.0);
        let sent: Vec<Out> = st.out.drain(..3).collect();
        drop(st);
        send(&net, sent);
        assert!(net.done(Rank(1), 1));
        net.push_item(Rank(2), conn(), rec(20), true);
        // (Dropped: a `Resume` means nothing to the replacement.)
        net.push_item(Rank(1), conn(), Item::Resume, true);
        assert_eq!(net.outstanding_hint.load(Ordering::Relaxed), 6);
        assert!(net.replay(Rank(1)).is_ok());
        // Items 0 and 1 went with the old incarnation, unacknowledged,
        // and the queued `Resume` is dropped: the replayed item 0 and the
        // three records queued are outstanding.
        assert_eq!(net.outstanding_hint.load(Ordering::Relaxed), 4);
        let st = lock(&net.state.0);
        let what: Vec<String> = st
            .out
            .iter()
            .map(|o| match o {
                Out::Item { to, item, .. } => match item {
                    Item::Rec(r) => format!(
                        "item to {to}: {}",
                        r.rec.int(snet_core::Label::tag("n")).expect("n")
                    ),
                    _ => format!("item to {to}"),
                },
                Out::Open { to, .. } => format!("open at {to}"),
                Out::Replay { to, id, item, .. } => match item {
                    Item::Rec(r) => format!(
                        "{id} again to {to}: {}",
                        r.rec.int(snet_core::Label::tag("n")).expect("n")
                    ),
                    _ => "marker".into(),
                },
                Out::Seq { to, next } => format!("next to {to}: {next}"),
                _ => "other".into(),
            })
            .collect();
        // The queued records go after the log's, numbered when sent
        // from where the replacement is told to count.
        assert_eq!(
            what,
            [
                "item to 2: 20",
                "open at 1",
                "0 again to 1: 0",
                "next to 1: 2",
                "item to 1: 2",
                "item to 1: 3"
            ]
        );
        drop(st);
        assert_eq!(net.log_size(), (1, 2));
        send_queued(&net);
        assert_eq!(logged(&net, 1), vec![(0, 0), (2, 2), (3, 3)]);
        assert_eq!(logged(&net, 2), vec![(0, 20)]);
        assert_eq!(net.log_size(), (4, 4));
    }

    #[test]
    fn without_respawn_nothing_is_logged() {
        let net = Net::new(Rank(0), 2, 1024);
        net.push_item(Rank(1), conn(), rec(1), true);
        assert!(lock(&net.state.0).log.is_none());
        assert!(!net.done(Rank(1), 0));
        assert_eq!(net.log_size(), (0, 0));
        // Only node 0 keeps a log.
        let other = Net::with_loss(Rank(1), 2, 1024, OnNodeLoss::Respawn);
        other.push_item(Rank(0), conn(), rec(1), true);
        assert!(lock(&other.state.0).log.is_none());
    }

    /// Only node 0 of a run that replays a lost node keeps what it sends
    /// (its log): every other node's encoder may send a last handle's
    /// whole weight, that one's may not (a logged record would be left
    /// with a reference holding none, and its replay could not split it).
    #[test]
    fn only_the_node_that_logs_keeps_the_weight_of_what_it_sends() {
        let consumes = |me: u32, loss: OnNodeLoss| {
            lock(&Net::with_loss(Rank(me), 2, 1024, loss).enc).consumes()
        };
        assert!(!consumes(0, OnNodeLoss::Respawn));
        assert!(consumes(1, OnNodeLoss::Respawn));
        assert!(consumes(0, OnNodeLoss::Fail));
        assert!(consumes(1, OnNodeLoss::Fail));
    }

    #[test]
    fn acknowledgements_go_to_each_sender_once() {
        let net = Net::new(Rank(1), 3, 1024);
        assert!(!net.owes());
        net.received(Rank(0), 3);
        net.received(Rank(2), 1);
        net.received(Rank(0), 2);
        net.received(Rank(2), 0);
        assert!(net.owes());
        net.flush_acks(true);
        assert!(!net.owes());
        assert_eq!(queued(&net), vec![(Rank(0), 5), (Rank(2), 1)]);
        // Nothing owed: nothing more queued.
        net.flush_acks(true);
        assert_eq!(queued(&net).len(), 2);
    }

    #[test]
    fn a_node_acknowledges_everything_before_it_is_passive() {
        let net = Net::new(Rank(1), 2, 1024);
        net.begin(Rank(0), &Dyadic::one());
        net.received(Rank(0), 7);
        net.end();
        // Quiet, but owing: the acknowledgement goes first.
        assert_eq!(net.settle(true, true), Settle::Busy);
        assert_eq!(queued(&net), vec![(Rank(0), 7)]);
        assert!(!net.owes());
        // Once sent, the node is passive and returns its credit.
        lock(&net.state.0).out.clear();
        assert_eq!(net.settle(true, true), Settle::Passive);
        let st = lock(&net.state.0);
        assert!(matches!(st.out.front(), Some(Out::Credit(_))));
    }

    #[test]
    fn a_worker_about_to_sleep_is_told_to_send_what_settle_queued() {
        // A worker (notify false) is told `Queued` for the owed
        // acknowledgements, then for the credit, and finds the node
        // passive only once both are sent.
        let net = Net::new(Rank(1), 2, 1024);
        net.begin(Rank(0), &Dyadic::one());
        net.received(Rank(0), 3);
        net.end();
        assert_eq!(net.settle(true, false), Settle::Queued);
        assert_eq!(queued(&net), vec![(Rank(0), 3)]);
        // Not sent yet: busy, whoever asks.
        assert_eq!(net.settle(true, false), Settle::Busy);
        lock(&net.state.0).out.clear();
        assert_eq!(net.settle(true, false), Settle::Queued);
        assert!(matches!(
            lock(&net.state.0).out.front(),
            Some(Out::Credit(_))
        ));
        lock(&net.state.0).out.clear();
        assert_eq!(net.settle(true, false), Settle::Passive);
        // Node 0 never returns credit: quiescent once its acknowledgements
        // are sent.
        let root = Net::new(Rank(0), 2, 1024);
        root.received(Rank(1), 1);
        assert_eq!(root.settle(true, false), Settle::Queued);
        lock(&root.state.0).out.clear();
        assert_eq!(root.settle(true, false), Settle::Quiescent);
    }
}
