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
//!   ([`snet_core::Graph::replayable`]: no markers, no placement inside,
//!   no synchrocell replay cannot name), a [`Token`]; every record derived
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
//! * **Synchrocells** ([`crate::synchrocell::Guard`]): tokens form
//!   groups ([`union`]) that commit in one message, with the tombstones
//!   of the cells they fired ([`CellId`]), which node 0 keeps in the
//!   [`Log`] and sends a replacement first; a record passing a cell
//!   commits with or after the group that decided it ([`Token::after`]).
//!   At the end of the input node 0 asks the nodes holding records to
//!   drain (`Net::ask_drain`): stored records' groups then commit.
//! * **A lost node** (`managers::replace`): node 0 ends the run if the
//!   node may have held what replay cannot restore, or held a record
//!   through [`REPLAY_TRIES`] losses (a poison record); else it has the
//!   transport start a replacement ([`super::Transport::replace`]: the
//!   loopback and shm transports can, MPI cannot) and sends it the node's
//!   `Open`s and the log again ([`Log::lose`], `Seq` frames numbering
//!   the records as before).
//!
//! `Respawn` is `snet run --on-node-loss respawn`. A node other than 0
//! sends the field values it makes by value under it (no field's only
//! copy is on a node that can be lost). With [`OnNodeLoss::Fail`] (the default) nothing here runs: no log, no
//! token, no frame, the same bytes on the wire as before.

use std::collections::BTreeMap;
use std::sync::{Arc, Weak};

use snet_core::Rank;

use super::wire::CellId;
use super::{ConnId, NetState, Out};
use crate::entity::{Item, Rec};
use crate::sync::{lock, Condvar, Mutex};

/// Custody of one item a node received from node 0: dropped with the
/// last record derived from it, it sends the records it held and the
/// item's `Done` to node 0 in one message.
///
/// **Groups.** Tokens whose records a synchrocell merged form a group
/// (union-find: [`union`]): a token linked below another (its *parent*,
/// whose `Arc` it keeps) does not commit when its last clone is
/// dropped, it moves its `Done`s, held records and tombstones into its
/// parent; a root commits everything in one message. So node 0 retires
/// the items of a group, the records derived from them and the cells
/// they fired together, or none of them. A token may also have to commit
/// *after* other groups ([`Token::after`]: its record passed a cell
/// because of their decision): when it is ready and one of those has not
/// committed, it moves its content into it instead (ARCHITECTURE.md,
/// "Surviving a lost node").
pub struct Token {
    from: Rank,
    id: u64,
    /// The connection the item came on (a synchrocell's name starts
    /// with it: [`CellId`]).
    conn: ConnId,
    inner: Mutex<Group>,
    state: Weak<(Mutex<NetState>, Condvar)>,
}

/// What a token carries besides its own item.
#[derive(Default)]
struct Group {
    /// The token this one is linked below (set once, under [`GROUPS`]).
    parent: Option<Arc<Token>>,
    /// Union by rank: a group's tree stays O(log n) deep, and so does
    /// the chain of drops that moves contents to its root.
    rank: u32,
    /// The items of tokens that moved their content here.
    ids: Vec<u64>,
    /// Records for node 0, held until the commit.
    held: Vec<(ConnId, Item)>,
    /// Links to this group (moved on with the content), with the cell
    /// whose firing each is (a tombstone) if it is one.
    links: Vec<(Option<CellId>, Arc<Link>)>,
    /// Groups this one commits with or after.
    after: Vec<Arc<Link>>,
}

/// Links are made one at a time, so that two unions cannot link two
/// roots below each other (a cycle). Unions happen only where a
/// synchrocell fires, in a run that survives a lost node.
static GROUPS: std::sync::Mutex<()> = std::sync::Mutex::new(());

impl Token {
    pub(crate) fn new(
        from: Rank,
        id: u64,
        conn: ConnId,
        state: Weak<(Mutex<NetState>, Condvar)>,
    ) -> Token {
        Token {
            from,
            id,
            conn,
            inner: Mutex::new(Group::default()),
            state,
        }
    }

    /// The node the item came from (where derived records are held for).
    pub fn from(&self) -> Rank {
        self.from
    }

    /// The connection the item came on.
    pub(crate) fn conn(&self) -> ConnId {
        self.conn
    }

    /// Holds `item` for connection `conn` until the commit.
    pub(crate) fn hold(&self, conn: ConnId, item: Item) {
        lock(&self.inner).held.push((conn, item));
    }

    /// The root of the token's group.
    fn root(self: &Arc<Token>) -> Arc<Token> {
        let mut cur = self.clone();
        loop {
            let up = lock(&cur.inner).parent.clone();
            match up {
                Some(p) => cur = p,
                None => return cur,
            }
        }
    }

    /// A link to this token's group, which tells whether the group has
    /// committed. With `cell`, the group fired that cell: the tombstone
    /// is committed with the group.
    pub(crate) fn link(self: &Arc<Token>, cell: Option<CellId>) -> Arc<Link> {
        let l = Arc::new(Link(Mutex::new(LinkAt {
            at: Arc::downgrade(self),
            committed: false,
        })));
        lock(&self.inner).links.push((cell, l.clone()));
        l
    }

    /// This token's group commits with or after the group of `l`.
    pub(crate) fn after(&self, l: &Arc<Link>) {
        if !l.committed() {
            lock(&self.inner).after.push(l.clone());
        }
    }
}

/// Joins the groups of `a` and `b` (nothing if they are one already).
pub(crate) fn union(a: &Arc<Token>, b: &Arc<Token>) {
    if Arc::ptr_eq(a, b) {
        return;
    }
    let _one_at_a_time = GROUPS.lock().unwrap_or_else(|e| e.into_inner());
    let (ra, rb) = (a.root(), b.root());
    if Arc::ptr_eq(&ra, &rb) {
        return;
    }
    let (ka, kb) = (lock(&ra.inner).rank, lock(&rb.inner).rank);
    let (child, parent) = if ka < kb { (ra, rb) } else { (rb, ra) };
    if ka == kb {
        lock(&parent.inner).rank += 1;
    }
    lock(&child.inner).parent = Some(parent);
    // (`child` and `parent` are clones: their drops here are not the last.)
}

/// A link to a group: the token its content is at (moved on when that
/// token's content moves to another), or committed (node 0 has it).
pub(crate) struct Link(Mutex<LinkAt>);

struct LinkAt {
    at: Weak<Token>,
    committed: bool,
}

impl Link {
    /// A token of the group, or `None` once it committed, or if the
    /// group is `me`'s own (in `me`'s drop). A token whose last clone
    /// was dropped and whose `Drop` has not yet moved the link on or
    /// committed is waited for (a moment: that drop is running).
    fn group_except(&self, me: *const Token) -> Option<Arc<Token>> {
        loop {
            {
                let g = lock(&self.0);
                if g.committed || std::ptr::eq(g.at.as_ptr(), me) {
                    return None;
                }
                if let Some(t) = g.at.upgrade() {
                    return Some(t);
                }
            }
            std::thread::yield_now();
        }
    }

    /// Whether the group committed.
    pub(crate) fn committed(&self) -> bool {
        lock(&self.0).committed
    }

    fn commit(&self) {
        lock(&self.0).committed = true;
    }
}

impl Drop for Token {
    fn drop(&mut self) {
        let Group {
            parent,
            ids,
            held,
            links,
            after,
            ..
        } = std::mem::take(&mut *lock(&self.inner));
        // Linked below a parent, or to commit after a group that has not
        // committed: everything goes there (the links first, so that a
        // record passing a cell finds the group).
        let me: *const Token = self;
        let to = parent.or_else(|| after.iter().find_map(|l| l.group_except(me)));
        if let Some(p) = to {
            for (_, l) in &links {
                lock(&l.0).at = Arc::downgrade(&p);
            }
            {
                let mut g = lock(&p.inner);
                g.ids.push(self.id);
                g.ids.extend(ids);
                g.held.extend(held);
                g.links.extend(links);
                g.after.extend(after);
            }
            drop(p);
            return;
        }
        let committed = |links: &[(Option<CellId>, Arc<Link>)]| {
            for (_, l) in links {
                l.commit();
            }
        };
        let Some(st) = self.state.upgrade() else {
            committed(&links);
            return;
        };
        let (m, cv) = &*st;
        let mut g = lock(m);
        if g.stop {
            drop(g);
            committed(&links);
            drop(held);
            return;
        }
        let cells = links.iter().filter_map(|(c, _)| *c).collect();
        g.out.push_back(Out::Commit {
            to: self.from,
            id: self.id,
            more: ids,
            items: held,
            fired: cells,
        });
        // Under the lock, behind the commit: a group that commits after
        // this one from now on is queued after it.
        committed(&links);
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
    /// Per node: losses since it last reported a record done.
    barren: Vec<u32>,
    /// Per node: the synchrocells its groups fired (tombstones, kept for
    /// the run: a replacement's cell of the same name starts fired).
    tombstones: Vec<Vec<CellId>>,
    /// Items reported done so far.
    dones: u64,
    /// `dones` when node 0 last asked the nodes to drain (none yet:
    /// `u64::MAX`).
    pub drained_at: u64,
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
    pub tombstones: Vec<CellId>,
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
            barren: vec![0; n],
            tombstones: vec![Vec::new(); n],
            dones: 0,
            drained_at: u64::MAX,
        }
    }

    /// Node `from`'s groups fired cell `cell` (committed with them).
    pub(crate) fn fired(&mut self, from: Rank, cell: CellId) {
        if let Some(v) = self.tombstones.get_mut(from.0 as usize) {
            v.push(cell);
        }
    }

    /// The nodes that hold records in custody.
    pub(crate) fn holding(&self) -> Vec<Rank> {
        (0..self.held.len())
            .filter(|&k| !self.held[k].is_empty())
            .map(|k| Rank(k as u32))
            .collect()
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
        self.dones += 1;
        self.barren[from.0 as usize] = 0;
        Some((c, r))
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
        for (_, r, tries) in self.held[i].values_mut() {
            *tries += 1;
            if *tries >= REPLAY_TRIES {
                poison.get_or_insert((r.origin, 0)).1 += 1;
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
        // The replacement must be asked to drain again (a loss after the
        // drain, or during it).
        self.drained_at = u64::MAX;
        Ok(Replay {
            opens: self.opens[i].clone(),
            items: self.held[i]
                .iter()
                .map(|(id, (c, r, _))| (*id, *c, r.clone()))
                .collect(),
            next: self.next[i],
            unacked: std::mem::take(&mut self.unacked[i]),
            lost_credit,
            tombstones: self.tombstones[i].clone(),
        })
    }

    /// Items replayed to node `k` are unacknowledged again.
    pub(crate) fn resent(&mut self, k: Rank, n: u64) {
        self.unacked[k.0 as usize] += n;
    }

    /// Items reported done so far.
    pub(crate) fn dones(&self) -> u64 {
        self.dones
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

/// Groups and a synchrocell's guard (`synchrocell::Guard`), on one node
/// other than 0, by the commits they queue.
#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::dist::Net;
    use crate::synchrocell::Guard;

    fn node() -> Net {
        Net::with_loss(Rank(1), 2, 0, OnNodeLoss::Respawn)
    }

    fn token(net: &Net, id: u64) -> Arc<Token> {
        let conn = ConnId {
            origin: Rank::ROOT,
            seq: 7,
        };
        Arc::new(Token::new(Rank::ROOT, id, conn, Arc::downgrade(&net.state)))
    }

    /// The commits queued so far: each one's items (sorted) and tombstone keys.
    fn commits(net: &Net) -> Vec<(Vec<u64>, Vec<u64>)> {
        let mut g = lock(&net.state.0);
        let mut v = Vec::new();
        for o in std::mem::take(&mut g.out) {
            if let Out::Commit {
                id, more, fired, ..
            } = o
            {
                let mut ids = more;
                ids.push(id);
                ids.sort_unstable();
                v.push((ids, fired.iter().map(|c| c.key).collect()));
            }
        }
        v
    }

    #[test]
    fn a_group_commits_once_when_its_last_token_is_dropped() {
        let net = node();
        let (a, b, c) = (token(&net, 1), token(&net, 2), token(&net, 3));
        union(&a, &b);
        union(&c, &b);
        union(&a, &c);
        drop(b);
        drop(a);
        assert_eq!(commits(&net), vec![]);
        drop(c);
        assert_eq!(commits(&net), vec![(vec![1, 2, 3], vec![])]);
    }

    /// A record passes a cell whose slot holds another's: it commits with
    /// that one's group while it is open (the cell fires later: one
    /// commit with the tombstone), alone once it has committed.
    #[test]
    fn a_record_passing_a_stored_one_commits_with_or_after_its_group() {
        let net = node();
        let mut g = Guard::new(&net, snet_core::NodeId(4)).expect("a guard");
        let (s, r) = (token(&net, 1), token(&net, 2));
        g.stored(&net, 0, 0, Some(&s));
        drop(s); // the cell's table keeps it
        g.passed_open(0..=0, Some(&r));
        drop(r);
        assert_eq!(commits(&net), vec![], "the pass waits for the decision");
        let f = token(&net, 3);
        g.fired(&net, 0, Some(&f));
        drop(f);
        assert_eq!(commits(&net), vec![(vec![1, 2, 3], vec![0])]);
        // The cell has fired and its group committed: a record passes freely.
        let late = token(&net, 4);
        g.passed(0..=0, Some(&late));
        g.passed_open(0..=0, Some(&late));
        drop(late);
        assert_eq!(commits(&net), vec![(vec![4], vec![])]);
    }

    /// A record passes a fired cell whose group has not committed: it
    /// joins that commit; the firing group does not wait for it.
    #[test]
    fn a_record_passing_a_fired_cell_commits_after_the_firing_group() {
        let net = node();
        let mut g = Guard::new(&net, snet_core::NodeId(4)).expect("a guard");
        let (s, f) = (token(&net, 1), token(&net, 2));
        g.stored(&net, 9, 0, Some(&s));
        drop(s);
        g.fired(&net, 9, Some(&f));
        let (r1, r2) = (token(&net, 3), token(&net, 4));
        g.passed(9..=9, Some(&r1));
        g.passed(9..=9, Some(&r2));
        drop(r1);
        assert_eq!(commits(&net), vec![]);
        drop(f); // r2 is still alive: the firing group commits without it
        assert_eq!(commits(&net), vec![(vec![1, 2, 3], vec![9])]);
        drop(r2);
        assert_eq!(commits(&net), vec![(vec![4], vec![])]);
    }

    /// The end of the stream: a stored record's group commits when node 0
    /// asks the node to drain; stores after that keep no token.
    #[test]
    fn a_drain_commits_the_groups_of_stored_records() {
        let net = node();
        let mut g = Guard::new(&net, snet_core::NodeId(4)).expect("a guard");
        let (s, r) = (token(&net, 1), token(&net, 2));
        g.stored(&net, 0, 0, Some(&s));
        g.passed_open(0..=0, Some(&r));
        drop((s, r));
        assert_eq!(commits(&net), vec![]);
        net.drain_frame(Rank::ROOT);
        assert_eq!(commits(&net), vec![(vec![1, 2], vec![])]);
        let t = token(&net, 3);
        assert_eq!(net.cell_store(&t), None);
    }
}
