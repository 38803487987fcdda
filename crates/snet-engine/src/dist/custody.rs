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
//!   ([`snet_core::Graph::replayable`]: no placement inside), a
//!   [`Token`]; every
//!   record derived
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
//! * **Ordering markers** from node 0 (a deterministic combinator around
//!   the placement) are logged and replayed like records; on node `k` a
//!   marker's token is cloned into each of its copies, which it holds
//!   until the last is gone, and its commit waits for every item sent
//!   before it ([`CommitOrder`]): node 0's collector gets all of a
//!   marker's shares, after everything ahead of it, or none.
//! * **Synchrocells** ([`crate::synchrocell::Guard`]): tokens form
//!   groups ([`union`]) that commit in one message, with the tombstones
//!   of the cells they fired ([`CellId`]), which node 0 keeps in the
//!   [`Log`] and sends a replacement first; a record passing a cell
//!   because its slot is taken joins the stored records' group, one
//!   passing a fired cell commits with or after the firing group
//!   ([`Token::after`]; a dying token hands its content to a dying group
//!   it commits after through the [`Link`], never waiting for it).
//!   Where several cells are behind a merge whose order is not fixed,
//!   each record leaving one input of the merge commits with or after
//!   the one that left it before ([`PathLast`], `crate::pathlink`); so
//!   does each record leaving a deterministic combinator with a cell
//!   inside (`Graph::det_outputs_to_link`), and a commit that took in
//!   other groups' content sends its records in the order they were
//!   held ([`HOLDS`]).
//!   At the end of the input node 0 asks the nodes holding records to
//!   drain (`Net::ask_drain`; each cell entity holding records gets
//!   `Item::Wake` and parks its own, `Guard::drain`): stored records
//!   are *parked* (handed to node 0 with their cell and slot in their
//!   group's commit,
//!   [`Token::park`]; node 0 keeps them until the cell's tombstone,
//!   [`Log::park`], and a replacement's cell starts with them) and their
//!   groups commit.
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

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Weak};

use snet_core::Rank;

use super::wire::{CellId, CellRun, Tomb};
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
/// they fired): when it is ready and one of those has not committed, it
/// moves its content into it instead, or, if that group's token is
/// dying too, into the [`Link`]'s `pending`, which that token's drop
/// takes (ARCHITECTURE.md, "Surviving a lost node").
pub struct Token {
    from: Rank,
    id: u64,
    /// The connection the item came on (a synchrocell's name starts
    /// with it: [`CellId`]).
    conn: ConnId,
    /// The item is an ordering marker: its commit waits until every
    /// item node 0 sent before it has committed ([`CommitOrder`]).
    marker: bool,
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
    /// What the token commits (or moves on). Moved out by the token's
    /// drop, never dropped in place: the drop of the default left behind
    /// by a `take` (six empty collections) was about 60 instructions a
    /// token on `bench/soak`'s respawn network.
    c: std::mem::ManuallyDrop<Content>,
}

/// What a token's drop commits or moves to another token: moved whole
/// from a token to its parent, to a group it commits after, or into a
/// [`Link`]'s `pending` for a dying token to carry on.
///
/// A fired cell's group is two tokens with one link (its tombstone's,
/// which the [`Link`] itself carries): the item list and the links are
/// inline for that many, so that a fire allocates neither (a `Vec`
/// apiece, grown again in each `extend`, cost `bench/soak`'s respawn
/// network about 300 instructions a fire), and a token stays small.
#[derive(Default)]
struct Content {
    /// The items of tokens that moved their content here.
    ids: Ids,
    /// Records for node 0, held until the commit.
    held: Vec<(ConnId, Item)>,
    /// When each of `held` was held ([`HOLDS`]): a commit that took in
    /// other groups' content sends them in that order.
    order: smallvec::SmallVec<[u64; 2]>,
    /// Links to this group (moved on with the content); a firing's
    /// carries its cell (a tombstone, [`LinkAt::cell`]).
    links: smallvec::SmallVec<[Arc<Link>; 1]>,
    /// Groups this one commits with or after.
    after: Vec<Arc<Link>>,
    /// Records a drain parked (their cell, slot, and the record): node 0
    /// keeps them until the cell's tombstone.
    parked: Vec<(CellId, u64, Rec)>,
}

/// The items a commit reports done besides the root's own
/// ([`Out::Commit`]'s `more`).
pub(crate) type Ids = smallvec::SmallVec<[u64; 2]>;

impl Content {
    /// Nothing to move on: no items, records, links or parked records
    /// (a stored record's token folded into a fired cell's group has
    /// nothing but its own item, which its drop adds apart).
    fn is_empty(&self) -> bool {
        self.ids.is_empty()
            && self.held.is_empty()
            && self.links.is_empty()
            && self.after.is_empty()
            && self.parked.is_empty()
    }

    fn extend(&mut self, o: Content) {
        if !o.ids.is_empty() {
            self.ids.extend_from_slice(&o.ids);
        }
        if !o.held.is_empty() {
            if self.held.is_empty() {
                self.held = o.held;
            } else {
                self.held.extend(o.held);
            }
            self.order.extend_from_slice(&o.order);
        }
        if !o.parked.is_empty() {
            self.parked.extend(o.parked);
        }
        if !o.links.is_empty() {
            self.links.extend(o.links);
        }
        if !o.after.is_empty() {
            self.after.extend(o.after);
        }
    }
}

/// The lock under which groups change shape: unions (so that two cannot
/// link two roots below each other, a cycle), and the part of a drop
/// that moves links on, marks them committed, or hands content to a
/// dying token (so that two tokens dying at once, each to commit after
/// the other, cannot wait for each other: whichever takes it first hands
/// its content to the other). Taken only in a run that survives a lost
/// node, where a synchrocell fired or was passed; a token without links
/// or `after` links never takes it.
///
/// Lock order: `GROUPS`, then the node's state, then a [`Link`]; a
/// token's own lock is taken alone (nothing is locked under it).
static GROUPS: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Holds so far in this process: the order of [`Content::held`] across
/// groups. (A connection's records are held under its remote entity's
/// licence, whose hand-over orders the increments.)
static HOLDS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

#[cfg(not(loom))]
std::thread_local! {
    /// [`quietly`]: 0 outside it; inside, 1, or 2 once a commit or a
    /// field's release was queued on this thread.
    static QUIET: std::cell::Cell<u8> = const { std::cell::Cell::new(0) };
}
#[cfg(loom)]
loom::thread_local! {
    static QUIET: std::cell::Cell<u8> = std::cell::Cell::new(0);
}

#[cfg(not(loom))]
std::thread_local! {
    /// Emptied buffers of commits' records ([`recycle`]), for the next
    /// groups that hold records on this thread ([`Token::hold`]).
    static SPARE: std::cell::RefCell<Vec<Vec<(ConnId, Item)>>> =
        const { std::cell::RefCell::new(Vec::new()) };
}
#[cfg(loom)]
loom::thread_local! {
    static SPARE: std::cell::RefCell<Vec<Vec<(ConnId, Item)>>> = std::cell::RefCell::new(Vec::new());
}

/// Buffers of a few records kept a thread ([`recycle`]): a worker's task
/// holds records of about as many groups before the worker sends their
/// commits (up to a batch of items).
const SPARES: usize = 16;

/// A commit's records, sent (the output manager, or a worker sending its
/// own batch): their buffer, emptied, is one the next groups on this
/// thread hold records in, so that a group holding a few records does not
/// allocate ([`Token::hold`]; up to [`SPARES`] buffers of up to 8 records
/// a thread). A worker that holds records and sends their commits itself
/// takes back the buffers it gave: on `bench/soak`'s respawn network the
/// allocation in `Token::hold` (224 to 171 instructions) and the
/// buffer's release were about 100 instructions a commit.
pub(crate) fn recycle(mut items: Vec<(ConnId, Item)>) {
    if items.capacity() == 0 || items.capacity() > 8 {
        return;
    }
    items.clear();
    let _ = SPARE.try_with(|s| {
        if let Ok(mut s) = s.try_borrow_mut() {
            if s.len() < SPARES {
                s.push(items);
            }
        }
    });
}

/// A buffer for a group's held records: a spare one ([`recycle`]), or
/// none yet (allocated at its first push).
fn spare() -> Vec<(ConnId, Item)> {
    SPARE
        .try_with(|s| s.try_borrow_mut().ok().and_then(|mut s| s.pop()))
        .ok()
        .flatten()
        .unwrap_or_default()
}

/// Runs `f` (a worker's task dropping a custody token, where the worker
/// sends what its task queued itself: [`crate::runtime::Ctx::sends_itself`])
/// so that the commits it queues on this thread wake nobody; true if it
/// queued one, which the caller must then see sent
/// ([`crate::runtime::Ctx::unsent`]), as it does the items it queues.
/// So a commit goes in the worker's own batch after its task, with the
/// records the task sent, instead of waking the output manager for a
/// message of its own: on `bench/soak`'s respawn network that was about
/// 1,700 instructions a commit on a node other than 0 (its own batch,
/// message and wake-up). A commit another thread makes meanwhile (a
/// token whose last clone it held) is not this thread's and wakes the
/// output manager as before. The release of a field by reference that
/// `f` drops is queued the same way ([`noted_quietly`]). Within another
/// `quietly`, what `f` queued is reported to both.
pub(crate) fn quietly(f: impl FnOnce()) -> bool {
    let outer = QUIET.with(|q| q.replace(1));
    f();
    let queued = QUIET.with(|q| q.replace(outer)) == 2;
    if queued && outer != 0 {
        QUIET.with(|q| q.set(2));
    }
    queued
}

/// Something was just queued for sending on this thread: true if it is
/// in [`quietly`] (noted there: the caller of `quietly` sees it sent),
/// false if the one who queued it must wake the output manager.
#[inline]
pub(crate) fn noted_quietly() -> bool {
    QUIET.with(|q| q.get() != 0 && q.replace(2) != 0)
}

/// The nodes of this process whose records may carry a *pending* token
/// ([`Pending`]), by home number: each home the [`Home`] of the node that
/// took it last (null: never taken). A node takes a home whose node is
/// gone (its state dead), with the next generation, so a pending word
/// names its node by home and generation: one whose node's run is over
/// finds another generation (or the state dead) and its commit sends
/// nothing, as an `Arc` token's does when its state is gone. (The
/// generation is kept in [`GEN_BITS`] bits: a record would have to
/// outlive its node by that many nodes taking its home, in one process,
/// to be taken for another node's.) A node made while [`HOMES`] others
/// live gives its records `Arc` tokens at once. Under loom there are no
/// homes: every token is an `Arc` from the start.
///
/// Read without a lock (one load, then the `Weak`'s clone, the only
/// atomic write a token's making adds): a `Home` is never freed, so one
/// a slot no longer names can still be read. That is one `Home` and its
/// node's state's allocation (its contents go with the node) kept per
/// node that took a home: one a node process, a few thousand in a test
/// process. (A lock per home was three atomic writes more a token, about
/// 60 % of the token's making in a CPU-clock profile.)
#[cfg(not(loom))]
static HOME: [std::sync::atomic::AtomicPtr<Home>; HOMES] =
    [const { std::sync::atomic::AtomicPtr::new(std::ptr::null_mut()) }; HOMES];

/// Taken by a node taking a home (so that two cannot take one).
#[cfg(not(loom))]
static HOME_TAKING: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// A node's entry in [`HOME`].
#[cfg(not(loom))]
struct Home {
    generation: usize,
    state: Weak<(Mutex<NetState>, Condvar)>,
}

/// How many nodes of a process may give pending tokens at once
/// ([`HOME`]): a process runs one node, or, on loopback and in tests, a
/// few.
pub(crate) const HOMES: usize = 1 << HOME_BITS;
const HOME_BITS: u32 = 6;
/// A pending word's generation of its home, connection number
/// ([`ConnId::seq`] of a connection node 0 made) and item number: the
/// rest of the word.
const GEN_BITS: u32 = 12;
const SEQ_BITS: u32 = 12;
const ID_BITS: u32 = 64 - 2 - HOME_BITS - GEN_BITS - SEQ_BITS;

/// A home for the node whose state is `state` ([`HOME`]): its number and
/// generation, if one is free.
pub(crate) fn home(state: &Arc<(Mutex<NetState>, Condvar)>) -> Option<(u32, u32)> {
    #[cfg(not(loom))]
    {
        use std::sync::atomic::Ordering::{Acquire, Release};
        if usize::BITS != 64 {
            return None;
        }
        let _one_at_a_time = HOME_TAKING.lock().unwrap_or_else(|e| e.into_inner());
        for (i, slot) in HOME.iter().enumerate() {
            let old = slot.load(Acquire);
            // SAFETY: a non-null slot names a leaked `Home`, never freed.
            let generation = match unsafe { old.as_ref() } {
                None => 0,
                Some(h) if h.state.strong_count() == 0 => {
                    (h.generation + 1) & ((1 << GEN_BITS) - 1)
                }
                Some(_) => continue,
            };
            let h = Box::leak(Box::new(Home {
                generation,
                state: Arc::downgrade(state),
            }));
            slot.store(h, Release);
            return Some((i as u32, generation as u32));
        }
        None
    }
    #[cfg(loom)]
    {
        let _ = state;
        None
    }
}

/// A custody token not made yet: the identity of an item from node 0,
/// written by the input manager into the record's stamps' word instead
/// of an `Arc<Token>` ([`crate::entity::Stamps`]), and made a token on
/// the thread that first needs one (a clone of the record, a look at or
/// a taking of its custody: [`Pending::token`]), or committed without
/// one if the record is dropped first ([`Pending::done`]). So the token
/// is allocated and freed by one thread in the common case (a worker),
/// not allocated by the input manager and freed by a worker, which made
/// the allocator collect every free from another thread, on memory the
/// other core wrote (ARCHITECTURE.md, "Surviving a lost node").
///
/// The word: `id << 32 | seq << 20 | generation << 8 | home << 2 | 0b10`
/// (an `Arc`'s address is a multiple of 8, a box's plus one is odd), for
/// an item on a connection node 0 made. An item whose numbers do not fit
/// gets an `Arc` token at once.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub(crate) struct Pending(usize);

impl Pending {
    /// The tag of a pending word (its low two bits).
    pub(crate) const TAG: usize = 0b10;

    /// The pending token of item `id` on `conn` of the node with home
    /// `home` (its number and generation: [`home`]), if it fits a word.
    #[inline]
    pub(crate) fn new(home: (u32, u32), conn: ConnId, id: u64) -> Option<Pending> {
        if conn.origin != Rank::ROOT || conn.seq >= 1 << SEQ_BITS || id >= 1 << ID_BITS {
            return None;
        }
        let w = id << (2 + HOME_BITS + GEN_BITS + SEQ_BITS)
            | conn.seq << (2 + HOME_BITS + GEN_BITS)
            | u64::from(home.1) << (2 + HOME_BITS)
            | u64::from(home.0) << 2;
        Some(Pending(w as usize | Self::TAG))
    }

    /// The word (tagged).
    #[inline]
    pub(crate) fn bits(self) -> usize {
        self.0
    }

    /// The pending token a word written by [`Pending::bits`] is.
    #[inline]
    pub(crate) fn from_bits(bits: usize) -> Pending {
        debug_assert_eq!(bits & 3, Self::TAG);
        Pending(bits)
    }

    /// The item's number.
    pub(crate) fn id(self) -> u64 {
        self.0 as u64 >> (2 + HOME_BITS + GEN_BITS + SEQ_BITS)
    }

    /// The connection the item came on (one node 0 made).
    pub(crate) fn conn(self) -> ConnId {
        ConnId {
            origin: Rank::ROOT,
            seq: (self.0 as u64 >> (2 + HOME_BITS + GEN_BITS)) & ((1 << SEQ_BITS) - 1),
        }
    }

    #[inline(always)]
    fn made(self) -> Token {
        let w = self.0 as u64;
        let home = (w >> 2) as usize & (HOMES - 1);
        let generation = (w >> (2 + HOME_BITS)) as usize & ((1 << GEN_BITS) - 1);
        // (Its node's state, unless another node took the home since.)
        #[cfg(not(loom))]
        let state = {
            let h = HOME[home].load(std::sync::atomic::Ordering::Acquire);
            // SAFETY: a non-null slot names a leaked `Home`, never freed;
            // a pending word names a home its node took, so not null.
            match unsafe { h.as_ref() } {
                Some(h) if h.generation == generation => h.state.clone(),
                _ => Weak::new(),
            }
        };
        #[cfg(loom)]
        let state = {
            let _ = (home, generation);
            Weak::new()
        };
        Token::new(Rank::ROOT, self.id(), self.conn(), state)
    }

    /// The token, made now (on the caller's thread).
    #[inline(never)]
    pub(crate) fn token(self) -> Arc<Token> {
        // (Allocated first and written in place: `Arc::new` of the made
        // token copied its ~200 bytes from the stack, about 90
        // instructions a token on `bench/soak`'s respawn network.)
        // (Written through the pointer: `Arc::get_mut` checks that it is
        // unique with an atomic write.)
        let a = Arc::<Token>::new_uninit();
        // SAFETY: `a` was just made: nobody else can reach it, and its
        // allocation holds a `Token`.
        unsafe {
            (Arc::as_ptr(&a) as *mut std::mem::MaybeUninit<Token>)
                .write(std::mem::MaybeUninit::new(self.made()));
            a.assume_init()
        }
    }

    /// The record was dropped with no token made: its item commits (a
    /// token made and dropped where it is, never allocated).
    #[inline(never)]
    pub(crate) fn done(self) {
        drop(self.made());
    }
}

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
            marker: false,
            inner: Mutex::new(Group::default()),
            state,
        }
    }

    /// The token of an ordering marker (its copies are held like
    /// records; its commit waits for every earlier item's:
    /// [`CommitOrder`]).
    pub(crate) fn for_marker(mut self) -> Token {
        self.marker = true;
        self
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
        let n = HOLDS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let mut g = lock(&self.inner);
        if g.c.held.capacity() == 0 {
            g.c.held = spare();
        }
        g.c.held.push((conn, item));
        g.c.order.push(n);
    }

    /// The drain parks `rec`, stored in slot `slot` of cell `cell`: it
    /// goes to node 0 with the group's commit.
    pub(crate) fn park(&self, cell: CellId, slot: u64, rec: Rec) {
        lock(&self.inner).c.parked.push((cell, slot, rec));
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
    pub(crate) fn link(self: &Arc<Token>, cell: Option<Tomb>) -> Arc<Link> {
        let l = Arc::new(Link(Mutex::new(LinkAt {
            at: Arc::downgrade(self),
            committed: false,
            shared: false,
            pending: Vec::new(),
            cell,
        })));
        lock(&self.inner).c.links.push(l.clone());
        l
    }

    /// The record with this token fired a cell (tombstone `cell`) whose
    /// other slots kept the records of custody `stored`, which the
    /// caller gives up: each joins this token's group (a pending one, no
    /// token ever made for it, by its item alone; a token by
    /// [`union_last`]), and the group gets the firing's link, which is
    /// returned. The pending items and the link go in in one hold of the
    /// token's lock. The link is `spare` if that is a committed link
    /// nobody else holds ([`Link::reusable`], which a guard's fired cells
    /// give back), reset, else a new one.
    ///
    /// A stored record with a pending token is usually the only record
    /// derived from its item, and nothing else looked at its custody:
    /// adding its item to the firing token's content is what linking
    /// its token below the firing one and dropping it would do
    /// ([`union_last`]). On `bench/soak`'s respawn network that is every
    /// stored record, half the items; a second hold of the lock for the
    /// link, and the link's allocation and free, were about 120
    /// instructions a fire on a node other than 0 (`Guard::fired` 698 to
    /// 575).
    pub(crate) fn fire(
        self: &Arc<Token>,
        stored: &mut [Option<Kept>],
        cell: Option<Tomb>,
        spare: Option<Arc<Link>>,
    ) -> Arc<Link> {
        let at = LinkAt {
            at: Arc::downgrade(self),
            committed: false,
            shared: false,
            pending: Vec::new(),
            cell,
        };
        let l = match spare {
            Some(mut l) => match Arc::get_mut(&mut l) {
                Some(Link(m)) => {
                    // (The old `LinkAt`'s drop drops its `Weak`, as the
                    // link's own drop did.)
                    *m.get_mut().unwrap_or_else(|e| e.into_inner()) = at;
                    l
                }
                None => Arc::new(Link(Mutex::new(at))),
            },
            None => Arc::new(Link(Mutex::new(at))),
        };
        let mut tokens = false;
        {
            let mut g = lock(&self.inner);
            for s in stored.iter_mut() {
                match s {
                    Some(Kept::Pending(p)) => {
                        g.c.ids.push(p.id());
                        *s = None;
                    }
                    Some(Kept::Token(_)) => tokens = true,
                    None => {}
                }
            }
            g.c.links.push(l.clone());
        }
        if tokens {
            for s in stored.iter_mut() {
                if let Some(Kept::Token(s)) = s.take() {
                    union_last(self, s);
                }
            }
        }
        l
    }

    /// This token's group commits with or after the group of `l`.
    pub(crate) fn after(&self, l: &Arc<Link>) {
        {
            let mut at = lock(&l.0);
            if at.committed {
                return;
            }
            // From now on the group's root commits under `GROUPS` (it may
            // have to take content this token hands it: [`Token::commit`]).
            at.shared = true;
        }
        lock(&self.inner).c.after.push(l.clone());
    }
}

/// One input of a merge (a parallel branch's output, a star stage's
/// exit, a split replica's output, a feedback loop's outside input or
/// back edge) on a node other than 0 of a run that survives a lost node,
/// in a placement with several synchrocell instances behind a race
/// ([`snet_core::Graph::merges_to_link`]): the group of the last record
/// that left it. A record leaving it commits with or after that group
/// ([`Token::after`]), so that the records of one input reach node 0 in
/// the order they left it, or in one commit: the group model's
/// `HybridFifo` (ARCHITECTURE.md, "Surviving a lost node", "several
/// cells behind a race").
///
/// The records of one input leave it in order (its sender holds a
/// licence, or, for a star's exits and a split's replicas, each path
/// has its own `PathLast`), and the link is made before the record is
/// offered to the merge, under the sender's licence: so the links of
/// one input follow the order its records reach the merge in.
#[derive(Default)]
pub(crate) struct PathLast(Mutex<Option<(Weak<Token>, Arc<Link>)>>);

impl PathLast {
    /// A record with custody token `t` leaves this input.
    pub(crate) fn pass(&self, t: Option<&Arc<Token>>) {
        let Some(t) = t else { return };
        let mut last = lock(&self.0);
        if let Some((w, l)) = &*last {
            // The same item's records follow each other: one link does.
            // (The `Weak` keeps the allocation, so the address cannot be
            // another token's.)
            if std::ptr::eq(w.as_ptr(), Arc::as_ptr(t)) {
                return;
            }
            t.after(l);
        }
        *last = Some((Arc::downgrade(t), t.link(None)));
    }
}

/// A stored record's custody as a synchrocell's guard keeps it
/// ([`crate::synchrocell::Guard`]): its token, or its pending token if
/// none was made yet ([`Pending`]). A record stored in a cell, and then
/// joined by the record that fires the cell, is usually the only record
/// derived from its item, and nothing else looks at its custody: then no
/// token is ever made for it, and the fire adds its item to the firing
/// record's group ([`fold`]), which is what linking its token below the
/// firing one and dropping it did ([`union_last`]). On `bench/soak`'s
/// respawn network that is every stored record, half the items.
pub(crate) enum Kept {
    Pending(Pending),
    Token(Arc<Token>),
}

impl Kept {
    /// The connection the item came on.
    pub(crate) fn conn(&self) -> ConnId {
        match self {
            Kept::Pending(p) => p.conn(),
            Kept::Token(t) => t.conn(),
        }
    }

    /// The token, made now (on the caller's thread) if pending.
    pub(crate) fn token(&mut self) -> &Arc<Token> {
        if let Kept::Pending(p) = *self {
            *self = Kept::Token(p.token());
        }
        match self {
            Kept::Token(t) => t,
            Kept::Pending(_) => unreachable!("made above"),
        }
    }

    /// The token, made now if pending.
    pub(crate) fn into_token(self) -> Arc<Token> {
        match self {
            Kept::Pending(p) => p.token(),
            Kept::Token(t) => t,
        }
    }
}

impl From<Arc<Token>> for Kept {
    fn from(t: Arc<Token>) -> Kept {
        Kept::Token(t)
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

/// A cell fired: the stored record's token `s`, whose handle the caller
/// gives up, joins `t`'s group (`union(t, &s)`, then `drop(s)`).
///
/// Usually nobody else can reach `s`: it has no other clone (the stored
/// record was the only record derived from its item in flight, and the
/// node's table held its token), no link to it (a link holds a `Weak`)
/// and no child (a child holds its parent's `Arc`), and it is a root with
/// no links or `after` links of its own. Then `s` is linked below `t`
/// directly and dropped, which moves its content and item into `t`'s
/// token (the plain drop, without [`GROUPS`]): what the union and the
/// drop would have done, without the lock, the walks to both roots and
/// the ranks. No union can race with it, since none can reach `s`, and
/// `t`'s own place in its group is not touched. Anything else takes the
/// union. On `bench/soak`'s respawn network this was about 450
/// instructions a fire.
pub(crate) fn union_last(t: &Arc<Token>, mut s: Arc<Token>) {
    if let Some(only) = Arc::get_mut(&mut s) {
        // (Ours alone: its lock is not taken.)
        let g = only.inner.get_mut().unwrap_or_else(|e| e.into_inner());
        if g.parent.is_none() && g.c.links.is_empty() && g.c.after.is_empty() {
            g.parent = Some(t.clone());
            drop(s);
            return;
        }
    }
    union(t, &s);
    // (Maybe its last clone: it moves its content into the group now.)
    drop(s);
}

/// A link to a group: the token its content is at (moved on when that
/// token's content moves to another), or committed (node 0 has it).
///
/// Every link a token's content holds points at that token (its `at`
/// is moved on with the content, under [`GROUPS`]); so a link whose
/// token is dead (its last clone dropped) and that is not committed is
/// in that token's drop, which has not yet taken [`GROUPS`] (it moves
/// on or commits every link it holds before it lets go): content put
/// into the link's `pending` then is taken by that drop. (A root whose
/// one link is not `shared` commits without [`GROUPS`]; but only a token
/// that shared the link finds it, through its `after` links, and then
/// the root takes [`GROUPS`]: [`Token::try_commit`].)
pub(crate) struct Link(Mutex<LinkAt>);

struct LinkAt {
    at: Weak<Token>,
    committed: bool,
    /// A token commits with or after the group ([`Token::after`]): it
    /// may hand the group content through `pending`, so the group's root
    /// commits under [`GROUPS`]. A root whose only link is not shared
    /// commits without it ([`Token::try_commit`]).
    shared: bool,
    /// Content handed to the dying token `at` by a token that had to
    /// commit with or after it (taken by that token's drop).
    pending: Vec<Content>,
    /// The link is a firing's: the cell's tombstone, committed with the
    /// group (taken by the commit).
    cell: Option<Tomb>,
}

impl Link {
    /// Whether the group committed.
    pub(crate) fn committed(&self) -> bool {
        lock(&self.0).committed
    }

    /// Whether `l` is committed and nobody else holds it (no clone, and
    /// no content handed to it): it may be reset for another group
    /// ([`Token::fire`]) instead of freed.
    pub(crate) fn reusable(l: &mut Arc<Link>) -> bool {
        Arc::get_mut(l).is_some_and(|Link(m)| {
            let at = m.get_mut().unwrap_or_else(|e| e.into_inner());
            at.committed && at.pending.is_empty()
        })
    }
}

/// Where a dying token's content goes ([`Token`]'s drop, under
/// [`GROUPS`]).
enum To {
    /// A live token (its parent, or a group it commits after).
    Token(Arc<Token>),
    /// Handed to a dying token through one of its links.
    Dying,
    /// Committed by this token.
    Commit,
}

impl Drop for Token {
    fn drop(&mut self) {
        // The parent and the content are moved out, the content without
        // a default written back or left to drop (moving the whole group,
        // about 150 bytes, out and a default one in was about 90
        // instructions a drop on `bench/soak`'s respawn network). A dying
        // token's own lock is not taken: nobody else can reach it
        // (`&mut self`).
        let g = self.inner.get_mut().unwrap_or_else(|e| e.into_inner());
        let parent = g.parent.take();
        // SAFETY: the token is being dropped (`&mut self`: nobody else
        // can reach it), `c` is taken here once and not touched after,
        // and `ManuallyDrop` keeps the group's drop from dropping it.
        let mut c = unsafe { std::mem::ManuallyDrop::take(&mut g.c) };
        // `c.ids` are the items of tokens that moved here; this token's
        // own goes with them wherever the content goes (a commit names it
        // first, so a plain token's commit allocates nothing for it).
        if c.links.is_empty() && c.after.is_empty() {
            // Nobody links to this token (a link needs a live token, and
            // none was made) and it commits after nobody: no hand-over
            // can concern it.
            match parent {
                Some(p) => {
                    // (Moving an empty content, about 140 bytes, and
                    // dropping it were 120 instructions a fire.)
                    let c = (!c.is_empty()).then_some(c);
                    let mut pg = lock(&p.inner);
                    pg.c.ids.push(self.id);
                    if let Some(c) = c {
                        pg.c.extend(c)
                    }
                }
                None => self.commit(c),
            }
            return;
        }
        let me: *const Token = self;
        #[cfg(all(test, not(loom)))]
        if parent.is_none() {
            tests::in_drop();
        }
        if parent.is_none() && c.after.is_empty() && c.links.len() == 1 {
            // A root that commits after nobody, with one link (a fired
            // cell's tombstone, or a merge input's last record): if no
            // token commits after it, nobody can hand it content, and it
            // commits without `GROUPS` ([`Token::try_commit`]).
            match self.try_commit(c, true) {
                Ok(()) => return,
                Err(back) => c = back,
            }
        }
        let groups = GROUPS.lock().unwrap_or_else(|e| e.into_inner());
        // Take what dying tokens handed to this one (transitively: that
        // content brings links of its own, which point here too).
        let mut i = 0;
        while i < c.links.len() {
            let pending = std::mem::take(&mut lock(&c.links[i].0).pending);
            for p in pending {
                c.extend(p);
            }
            i += 1;
        }
        let mut to = match parent {
            Some(p) => To::Token(p),
            None => To::Commit,
        };
        if let To::Commit = to {
            let mut dying = None;
            for l in &c.after {
                let g = lock(&l.0);
                if g.committed || std::ptr::eq(g.at.as_ptr(), me) {
                    continue; // committed, or this group itself
                }
                match g.at.upgrade() {
                    Some(t) => to = To::Token(t),
                    // Dead and not committed: its drop has not yet taken
                    // `GROUPS` (see [`Link`]); it takes this content.
                    None => dying = Some((l.clone(), g.at.clone())),
                }
                break;
            }
            if let Some((l, at)) = dying {
                for m in &c.links {
                    lock(&m.0).at = at.clone();
                }
                c.ids.push(self.id);
                lock(&l.0).pending.push(std::mem::take(&mut c));
                to = To::Dying;
            }
        }
        match to {
            To::Token(p) => {
                for l in &c.links {
                    lock(&l.0).at = Arc::downgrade(&p);
                }
                c.ids.push(self.id);
                lock(&p.inner).c.extend(c);
                drop(groups);
                // (Maybe the last clone: its drop takes `GROUPS` itself.)
                drop(p);
            }
            To::Dying => drop(groups),
            To::Commit => {
                self.commit(c);
                drop(groups);
            }
        }
    }
}

impl Token {
    /// Commits `c` (a root's drop): one message to node 0, then its links
    /// are marked committed (a group that commits after this one from
    /// now on is queued behind it, on the same channel).
    fn commit(&self, c: Content) {
        // (Given back only `alone`.)
        let _ = self.try_commit(c, false);
    }

    /// As [`Token::commit`]; `alone` (a root that commits after nobody,
    /// with one link, outside [`GROUPS`]): only if no token commits after
    /// the group (the link is not `shared`), else `c` is given back and
    /// nothing is done. The check and the marking are one hold of the
    /// link's lock, under the state lock: a token that calls
    /// [`Token::after`] before it shares the link, and the drop takes
    /// `GROUPS` as before (taking what that token may hand it); one that
    /// calls it after sees the group committed and queues its own commit
    /// behind this one (under the state lock, which this holds until its
    /// commit is queued). Only a token that shared the link can hand
    /// content to it (`pending`), so none is left behind. On
    /// `bench/soak`'s respawn network `GROUPS` and the pass over the
    /// links' `pending` were about 140 instructions a fire (the firing
    /// root's drop, its commit included, 643 to 504).
    // (The content given back is moved, as it came: boxing it would
    // allocate on every commit.)
    #[allow(clippy::result_large_err)]
    fn try_commit(&self, mut c: Content, alone: bool) -> Result<(), Content> {
        let committed = |links: &[Arc<Link>]| {
            for l in links {
                lock(&l.0).committed = true;
            }
        };
        let Some(st) = self.state.upgrade() else {
            committed(&c.links);
            return Ok(());
        };
        let (m, cv) = &*st;
        let mut g = lock(m);
        if g.stop {
            drop(g);
            committed(&c.links);
            drop(c);
            return Ok(());
        }
        // (Lock order: the state, then a link.) Each link is marked
        // committed in the pass that takes its tombstone, before the
        // commit is queued: whoever sees it committed queues what it
        // commits under the state lock, which this holds until its own
        // commit is queued, so behind it. (Only a marker's commit may
        // wait in the [`CommitOrder`] instead, and a marker's token has
        // no links: it is never in a group.)
        let mut cells: smallvec::SmallVec<[Tomb; 1]> = smallvec::SmallVec::new();
        if alone {
            let mut l = lock(&c.links[0].0);
            if l.shared {
                drop(l);
                drop(g);
                return Err(c);
            }
            l.committed = true;
            if let Some(cell) = l.cell.take() {
                cells.push(cell);
            }
        } else {
            for l in &c.links {
                let mut l = lock(&l.0);
                l.committed = true;
                if let Some(cell) = l.cell.take() {
                    cells.push(cell);
                }
            }
        }
        // Records of several groups (a group that commits after another
        // took that one's content) go in the order they were held: the
        // order they left a deterministic combinator whose output is
        // linked, for one (`Graph::det_outputs_to_link`).
        if !c.order.is_sorted() {
            let order = std::mem::take(&mut c.order);
            let held = std::mem::take(&mut c.held);
            let mut both: Vec<(u64, (ConnId, Item))> = order.into_iter().zip(held).collect();
            both.sort_by_key(|b| b.0);
            c.held = both.into_iter().map(|b| b.1).collect();
        }
        let Content {
            ids, held, parked, ..
        } = c;
        let out = Out::Commit {
            to: self.from,
            id: self.id,
            more: ids,
            items: held,
            fired: cells,
            parked,
        };
        let st = &mut *g;
        match st.order.as_mut() {
            None => st.out.push_back(out),
            Some(order) => order.commit(self.marker, out, &mut st.out),
        }
        drop(g);
        // In [`quietly`], the worker sends it after its task.
        if !noted_quietly() {
            cv.notify_one();
        }
        Ok(())
    }
}

/// A node's order of commits where ordering markers come from node 0
/// (the program has deterministic combinators): a marker's commit (its
/// copies, and its `Done`) goes to node 0 only after the commits of
/// every item node 0 sent before it. A marker follows every record
/// sent before it on its path, so when its copies have all been held
/// the records derived from earlier items have all been held too, but
/// their tokens may still be alive (a record in a synchrocell), or
/// dying on another worker: this is what puts their commits first on
/// the FIFO channel to node 0. So node 0 gets a marker's shares only
/// after everything that preceded it, and all of them at once, or, if
/// the node is lost first, none of them: the log then sends the marker
/// again, after the records it still holds from before it
/// (ARCHITECTURE.md, "Markers and a lost node").
#[derive(Default)]
pub(crate) struct CommitOrder {
    /// Items received from node 0 and not committed (ids).
    pending: std::collections::BTreeSet<u64>,
    /// Markers' commits waiting for an earlier item's, by the marker's id.
    waiting: BTreeMap<u64, Out>,
}

impl CommitOrder {
    /// Item `id` arrived from node 0 (before any item after it).
    pub(crate) fn arrived(&mut self, id: u64) {
        self.pending.insert(id);
    }

    /// Whether an item before `id` has not committed.
    fn earlier(&self, id: u64) -> bool {
        self.pending.first().is_some_and(|&f| f < id)
    }

    /// Queues commit `out` (a marker's if `marker`) on `q` in its turn,
    /// and every marker's commit that was waiting only for it.
    fn commit(&mut self, marker: bool, out: Out, q: &mut VecDeque<Out>) {
        let Out::Commit { id, more, .. } = &out else {
            q.push_back(out);
            return;
        };
        if marker && self.earlier(*id) {
            self.waiting.insert(*id, out);
            return;
        }
        self.pending.remove(id);
        for i in more {
            self.pending.remove(i);
        }
        q.push_back(out);
        while let Some(&m) = self.waiting.keys().next() {
            if self.earlier(m) {
                break;
            }
            self.pending.remove(&m);
            q.extend(self.waiting.remove(&m));
        }
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

/// An item in node 0's log: its connection, the item, and the losses
/// of the node it was in custody of.
struct Held {
    conn: ConnId,
    what: Logged,
    tries: u32,
}

/// What a log slot holds: a record, or an ordering marker (a copy of a
/// deterministic combinator's marker, kept like a record so that a
/// replay sends it again in its place among the records, and its share
/// reaches the collector exactly once: ARCHITECTURE.md, "Markers and a
/// lost node").
///
/// A record whose stamps are bare (every record of a run without traces
/// or deterministic combinators) is kept *packed* ([`pack`]): its
/// entries are words in its ring's `words` and its fields handles in the
/// ring's `fields`, and the record itself is dropped where it was sent,
/// as without a log. Kept whole, each record held its slot (152 bytes)
/// and its entries' allocation until its `Done`, which the input
/// manager then read back cold to hand the record to the sender's thread
/// to drop: on `bench/soak`'s respawn network that was about a quarter
/// of the cost of node 0's log (the rest is the numbering and the
/// slots), its memory about 300 bytes a record in flight instead of 60.
enum Logged {
    /// A packed record ([`Slot::words`], [`Slot::fields`]): its origin.
    Packed(crate::entity::Origin),
    /// A record with stamps, kept whole.
    Rec(Box<Rec>),
    Marker(Box<crate::entity::Marker>),
}

impl Logged {
    /// The record's origin (none for a marker: it calls no box).
    fn origin(&self) -> Option<crate::entity::Origin> {
        match self {
            Logged::Packed(o) => Some(*o),
            Logged::Rec(r) => Some(r.origin),
            Logged::Marker(_) => None,
        }
    }
}

/// The bit of a packed entry's word that says it is a field's (its
/// value is the record's next field handle); else the next word is its
/// integer.
const FIELD_ENTRY: u64 = 1 << 32;

/// Packs `rec`'s entries: a word per entry (its label's handle, with
/// [`FIELD_ENTRY`] for a field) followed by an integer's value; its
/// fields to `fields`, in order. The words and fields added.
fn pack(
    rec: snet_core::Record,
    words: &mut Vec<u64>,
    fields: &mut Vec<Option<Field>>,
) -> (u32, u32) {
    let (w, f) = (words.len(), fields.len());
    for (label, value) in rec.into_entries() {
        let l = u64::from(label.raw());
        match value {
            snet_core::Value::Int(v) => {
                words.push(l);
                words.push(v as u64);
            }
            snet_core::Value::Field(x) => {
                words.push(l | FIELD_ENTRY);
                fields.push(Some(x));
            }
        }
    }
    ((words.len() - w) as u32, (fields.len() - f) as u32)
}

/// The record [`pack`] packed into `words` and `fields`.
fn unpack(
    words: impl IntoIterator<Item = u64>,
    fields: impl IntoIterator<Item = Option<Field>>,
) -> snet_core::Record {
    let (mut words, mut fields) = (words.into_iter(), fields.into_iter());
    let mut entries = Vec::new();
    while let Some(w) = words.next() {
        let label = snet_core::Label::from_raw(w as u32);
        let value = if w & FIELD_ENTRY != 0 {
            match fields.next().flatten() {
                Some(f) => snet_core::Value::Field(f),
                None => {
                    debug_assert!(false, "a packed record's field taken");
                    continue;
                }
            }
        } else {
            snet_core::Value::Int(words.next().unwrap_or_default() as i64)
        };
        entries.push((label, value));
    }
    snet_core::Record::from_sorted(entries.into_iter())
}

/// The record [`pack`] packed, with its origin (its stamps were bare).
fn unpacked(
    origin: crate::entity::Origin,
    words: impl IntoIterator<Item = u64>,
    fields: impl IntoIterator<Item = Option<Field>>,
) -> Rec {
    Rec {
        rec: unpack(words, fields),
        det: crate::entity::Stamps::new(),
        origin,
    }
}

type Field = snet_core::Field;

/// A slot of a node's [`Ring`] (or of a batch's [`Sending`]): the item
/// it holds, if any, and how many of the ring's `words` and `fields` its
/// packed record took. Those stay until the slot leaves the ring's
/// front (a slot emptied behind it keeps its counts; its fields are
/// taken at once).
struct Slot {
    held: Option<Held>,
    words: u32,
    fields: u32,
    /// Where its fields start, counted over every field the ring (or the
    /// batch) ever took.
    fields_at: u64,
}

impl Slot {
    /// A slot for an item that is not kept (only records and markers
    /// are): it takes a number, no words and no fields.
    fn empty() -> Slot {
        Slot {
            held: None,
            words: 0,
            fields: 0,
            fields_at: 0,
        }
    }
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
/// thread, made on the output manager's). The packed records' words and
/// fields are rings beside the slots, in slot order; the rings' memory
/// is reused as they turn. A record held much longer than those sent
/// after it (a slow box) would keep every slot after it: once the ring
/// spans more than `SPREAD` times its records plus `SLACK`, the oldest
/// record moves to `stragglers` (unpacked), so the log's memory stays in
/// proportion to the records it holds. The first slot is never empty.
#[derive(Default)]
struct Ring {
    /// The identity of `slots[0]`.
    base: u64,
    slots: VecDeque<Slot>,
    /// Slots not empty.
    count: usize,
    /// Records older than `base`, moved out of the ring (never packed).
    stragglers: BTreeMap<u64, Held>,
    /// The slots' packed records' entries ([`pack`]), in slot order.
    words: VecDeque<u64>,
    /// The slots' packed records' fields, in slot order (a done slot's
    /// taken).
    fields: VecDeque<Option<Field>>,
    /// Where `fields[0]` is, counted over every field the ring took.
    fields_base: u64,
}

/// Records reported done, and the fields of packed ones: dropped after
/// the state's lock (dropping a field may release a reference to another
/// node's value, which queues a message), by the thread that sends node
/// 0's next batch where it can ([`Log::done_run_for_sender`]).
#[derive(Default)]
pub(crate) struct Dead {
    recs: Vec<Rec>,
    fields: Vec<Field>,
}

impl Dead {
    /// Drops them.
    pub(crate) fn clear(&mut self) {
        self.recs.clear();
        self.fields.clear();
    }

    fn len(&self) -> usize {
        self.recs.len() + self.fields.len()
    }

    #[cfg(all(test, not(loom)))]
    pub(crate) fn is_empty(&self) -> bool {
        self.recs.is_empty() && self.fields.is_empty()
    }

    /// Room kept (the tests': whether anything went through).
    #[cfg(all(test, not(loom)))]
    pub(crate) fn capacity(&self) -> usize {
        self.recs.capacity() + self.fields.capacity()
    }

    fn append(&mut self, other: &mut Dead) {
        self.recs.append(&mut other.recs);
        self.fields.append(&mut other.fields);
    }

    /// What a slot or a straggler held, taken: a whole record to drop (a
    /// marker holds nothing to drop; a packed record's fields are in the
    /// ring, taken apart).
    fn whole(&mut self, what: Logged) {
        if let Logged::Rec(r) = what {
            self.recs.push(*r);
        }
    }
}

/// One node's part of a [`Sending`]: the batch's slots for it, and their
/// packed records (`fields_at` counted from the batch's first field).
#[derive(Default)]
struct Batch {
    slots: VecDeque<Slot>,
    words: Vec<u64>,
    fields: Vec<Option<Field>>,
}

impl Batch {
    fn clear(&mut self) {
        self.slots.clear();
        self.words.clear();
        self.fields.clear();
    }
}

/// Node 0: the items of a batch the output manager sends, in the order
/// it sends them, per node, each already in the log slot it takes
/// ([`Log::sent_all`] numbers them and moves them into the rings under
/// one lock). Kept from batch to batch (`managers::SendBufs`): its
/// buffers are reused.
#[derive(Default)]
pub(crate) struct Sending {
    /// Per node: the slots, in sending order.
    nodes: Vec<Batch>,
    /// Records reported done, taken from the log with the batch's
    /// numbers, for the sender to drop after the lock
    /// ([`Log::done_run_for_sender`]).
    pub(crate) dead: Dead,
}

impl Sending {
    /// `item` for node `to` on `conn` was encoded: a record or an ordering
    /// marker moves into its slot, a record with bare stamps packed (a
    /// replay sends a marker again among the records, in its place: its
    /// copies are committed by the node all together, after every item
    /// sent before it, `Token::commit`); any other item takes a number
    /// too (the receiver counts every item) and is given back.
    #[inline]
    pub(crate) fn push(&mut self, to: Rank, conn: ConnId, item: Item) -> Option<Item> {
        let k = to.0 as usize;
        if k >= self.nodes.len() {
            self.nodes.resize_with(k + 1, Batch::default);
        }
        let b = &mut self.nodes[k];
        let fields_at = b.fields.len() as u64;
        let (what, words, fields) = match item {
            Item::Rec(r) if r.det.is_bare() => {
                let (w, f) = pack(r.rec, &mut b.words, &mut b.fields);
                (Logged::Packed(r.origin), w, f)
            }
            Item::Rec(r) => (Logged::Rec(Box::new(r)), 0, 0),
            Item::Marker(m) => (Logged::Marker(Box::new(m)), 0, 0),
            other => {
                b.slots.push_back(Slot::empty());
                return Some(other);
            }
        };
        b.slots.push_back(Slot {
            held: Some(Held {
                conn,
                what,
                tries: 0,
            }),
            words,
            fields,
            fields_at,
        });
        None
    }

    /// Drops what a batch that was not sent left (the caller holds no
    /// lock: dropping a record may release fields).
    pub(crate) fn clear(&mut self) {
        self.nodes.iter_mut().for_each(Batch::clear);
    }

    /// Holds no item.
    pub(crate) fn is_empty(&self) -> bool {
        self.nodes.iter().all(|b| b.slots.is_empty())
    }
}

impl Ring {
    /// Appends batch `b`'s slots, the first numbered `first` (the next
    /// identity, `base + slots.len()`, as the caller keeps them dense),
    /// with their packed records; how many hold an item.
    fn append(&mut self, first: u64, b: &mut Batch) -> usize {
        debug_assert!(self.slots.is_empty() || first == self.base + self.slots.len() as u64);
        let at = self.fields_base + self.fields.len() as u64;
        let mut held = 0;
        for s in b.slots.iter_mut() {
            s.fields_at += at;
            held += usize::from(s.held.is_some());
        }
        if self.slots.is_empty() {
            // The first slot is never empty (an empty slot has no words
            // or fields: only a record's slot does, and it is held).
            self.base = first;
            while b.slots.front().is_some_and(|s| s.held.is_none()) {
                b.slots.pop_front();
                self.base += 1;
            }
        }
        self.slots.append(&mut b.slots);
        self.words.extend(b.words.drain(..));
        self.fields.extend(b.fields.drain(..));
        self.count += held;
        held
    }

    /// Item `id` (the next identity) is `item`, kept or not as
    /// [`Sending::push`] keeps it (the tests').
    #[cfg(all(test, not(loom)))]
    fn push(&mut self, id: u64, item: Option<Item>) {
        let mut s = Sending::default();
        let conn = ConnId {
            origin: Rank(0),
            seq: 0,
        };
        match item {
            Some(i) => drop(s.push(Rank(0), conn, i)),
            None => s.nodes.push(Batch {
                slots: [Slot::empty()].into(),
                ..Batch::default()
            }),
        }
        self.append(id, &mut s.nodes[0]);
    }

    /// Empties slot `i` if it holds an item (false if not): a whole
    /// record, and a packed one's fields, to `dead`.
    fn take_slot(&mut self, i: usize, dead: &mut Dead) -> bool {
        let Some(s) = self.slots.get_mut(i) else {
            return false;
        };
        let Some(h) = s.held.take() else {
            return false;
        };
        match h.what {
            Logged::Packed(_) => {
                let from = (s.fields_at - self.fields_base) as usize;
                for f in self.fields.range_mut(from..from + s.fields as usize) {
                    dead.fields.extend(f.take());
                }
            }
            what => dead.whole(what),
        }
        true
    }

    /// The first `n` slots leave the ring, with their words and fields
    /// (to `dead`: a held slot's record, a packed one's fields).
    fn pop_front(&mut self, n: usize, dead: &mut Dead) {
        let (mut words, mut fields) = (0, 0);
        for s in self.slots.drain(..n) {
            words += s.words as usize;
            fields += s.fields as usize;
            if let Some(h) = s.held {
                dead.whole(h.what);
            }
        }
        self.words.drain(..words);
        for f in self.fields.drain(..fields) {
            dead.fields.extend(f);
        }
        self.fields_base += fields as u64;
        self.base += n as u64;
    }

    /// Takes the item numbered `id`, if held (false if not): a record,
    /// or a packed one's fields, go to `dead`.
    fn take_into(&mut self, id: u64, dead: &mut Dead) -> bool {
        let Some(i) = id.checked_sub(self.base) else {
            return match self.stragglers.remove(&id) {
                Some(h) => {
                    dead.whole(h.what);
                    true
                }
                None => false,
            };
        };
        let Ok(i) = usize::try_from(i) else {
            return false;
        };
        if !self.take_slot(i, dead) {
            return false;
        }
        self.count -= 1;
        self.trim(dead);
        true
    }

    /// Takes the items numbered `first..=first + more` (a `Done` run),
    /// records (or packed records' fields) to `dead`: the slots in the
    /// ring one after the other, with one trim at the end. The number
    /// taken, and the first identity not held, if any (the items before
    /// it are taken).
    fn take_run(&mut self, first: u64, more: u64, dead: &mut Dead) -> (u64, Option<u64>) {
        let last = first.saturating_add(more);
        let mut id = first;
        // Moved aside, or before the ring: one at a time.
        while id < self.base.min(last.saturating_add(1)) {
            if !self.take_into(id, dead) {
                return (id - first, Some(id));
            }
            id += 1;
        }
        // At the front of the ring (the usual case: items are mostly
        // done in the order they were sent), the run's held slots leave
        // the ring together, with their words and fields, instead of
        // being emptied and then dropped by the trim.
        let front = id;
        if id <= last && id == self.base {
            let upto = usize::try_from(last - id).map_or(usize::MAX, |n| n.saturating_add(1));
            let n = self
                .slots
                .iter()
                .take(upto)
                .take_while(|s| s.held.is_some())
                .count();
            self.pop_front(n, dead);
            self.count -= n;
            id += n as u64;
        }
        if id > last {
            if id > front {
                self.trim(dead);
            }
            return (id - first, None);
        }
        let mut unknown = None;
        let mut i = usize::try_from(id - self.base).unwrap_or(usize::MAX);
        loop {
            if !self.take_slot(i, dead) {
                unknown = Some(id);
                break;
            }
            self.count -= 1;
            if id == last {
                id += 1;
                break;
            }
            id += 1;
            i += 1;
        }
        self.trim(dead);
        (id - first, unknown)
    }

    /// Takes the record numbered `id`, if held (the tests').
    #[cfg(all(test, not(loom)))]
    fn take(&mut self, id: u64) -> Option<Rec> {
        let rec = self
            .items()
            .into_iter()
            .find(|i| i.0 == id)
            .and_then(|i| match i.2 {
                Item::Rec(r) => Some(r),
                _ => None,
            });
        self.take_into(id, &mut Dead::default())
            .then_some(rec)
            .flatten()
    }

    /// Drops the empty slots at the front, and moves old records aside
    /// while the ring spans far more slots than it holds records.
    fn trim(&mut self, dead: &mut Dead) {
        loop {
            let n = self.slots.iter().take_while(|s| s.held.is_none()).count();
            if n > 0 {
                self.pop_front(n, dead);
            }
            if self.slots.len() <= SPREAD * self.count + SLACK {
                return;
            }
            let Some(s) = self.slots.front_mut() else {
                return;
            };
            let Some(mut h) = s.held.take() else {
                return;
            };
            if let Logged::Packed(origin) = h.what {
                // Its words and fields are the rings' first.
                h.what = Logged::Rec(Box::new(unpacked(
                    origin,
                    self.words.iter().take(s.words as usize).copied(),
                    self.fields
                        .iter_mut()
                        .take(s.fields as usize)
                        .map(Option::take),
                )));
            }
            self.stragglers.insert(self.base, h);
            self.pop_front(1, dead);
            self.count -= 1;
        }
    }

    /// Holds no record (in the ring or moved aside).
    fn is_empty(&self) -> bool {
        self.count == 0 && self.stragglers.is_empty()
    }

    /// The identities held, in order.
    #[cfg(all(test, not(loom)))]
    fn ids(&self) -> Vec<u64> {
        let base = self.base;
        self.stragglers
            .keys()
            .copied()
            .chain(
                self.slots
                    .iter()
                    .enumerate()
                    .filter(|(_, s)| s.held.is_some())
                    .map(move |(i, _)| base + i as u64),
            )
            .collect()
    }

    /// The items held, in identity order, as they were sent (a packed
    /// record made again, its fields the same handles).
    fn items(&self) -> Vec<(u64, ConnId, Item)> {
        let whole = |what: &Logged| match what {
            Logged::Rec(r) => Some(Item::Rec((**r).clone())),
            Logged::Marker(m) => Some(Item::Marker((**m).clone())),
            Logged::Packed(_) => None,
        };
        let mut out: Vec<_> = self
            .stragglers
            .iter()
            .filter_map(|(id, h)| Some((*id, h.conn, whole(&h.what)?)))
            .collect();
        let mut word = 0;
        for (i, s) in self.slots.iter().enumerate() {
            let words = word..word + s.words as usize;
            word = words.end;
            let Some(h) = &s.held else { continue };
            let item = match h.what {
                Logged::Packed(origin) => {
                    let from = (s.fields_at - self.fields_base) as usize;
                    Item::Rec(unpacked(
                        origin,
                        self.words.range(words).copied(),
                        self.fields.range(from..from + s.fields as usize).cloned(),
                    ))
                }
                ref w => match whole(w) {
                    Some(item) => item,
                    None => continue,
                },
            };
            out.push((self.base + i as u64, h.conn, item));
        }
        out
    }

    /// Every item held.
    fn held_mut(&mut self) -> impl Iterator<Item = &mut Held> {
        self.stragglers
            .values_mut()
            .chain(self.slots.iter_mut().filter_map(|s| s.held.as_mut()))
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
    credit: Vec<crate::weight::Balance>,
    /// Nodes replaced so far.
    pub replaced: u64,
    /// Per node: losses since it last reported a record done.
    barren: Vec<u32>,
    /// Per node: the synchrocells its groups fired (tombstones, kept for
    /// the run: a replacement's cell of the same name starts fired).
    tombstones: Vec<Tombstones>,
    /// Per node: the records its drains parked (cell, slot, record), until
    /// the cell's tombstone comes: a replacement's cell of that name
    /// starts with them in its slots.
    parked: Vec<Vec<(CellId, u64, Rec)>>,
    /// Items reported done so far.
    dones: u64,
    /// `dones` when node 0 last asked the nodes to drain (none yet:
    /// `u64::MAX`).
    pub drained_at: u64,
    /// Records reported done, for the thread that sends the next batch
    /// to drop ([`Log::done_run_for_sender`]).
    dead: Dead,
}

/// Records reported done that [`Log::dead`] may keep for the next
/// sender; beyond them the input manager drops them (no batch is sent
/// for a while: the input has ended).
const DEAD_MAX: usize = 4096;

/// One node's tombstones in node 0's log: the cells its groups fired,
/// kept for the run, exactly (a set: nothing is ever dropped), but
/// stored by cell *instance* (connection, template node, instance path),
/// each with the set of keys fired in it as 64-key words (the key's
/// high bits, and a bit per value of its low 6 bits). A cell per tag
/// value (`[| .. |] ! <t>`) or a star's chain fires many keys in one
/// instance, mostly close together and in about increasing order:
/// `bench/soak`'s respawn network fires one cell per input record, and a
/// `CellId` apiece (about 64 bytes, in a growing `Vec`) made node 0's
/// memory grow with the run's length; as words, its quarter-million keys
/// per node at 10^6 records (every fourth value) take about 16
/// thousand. Scattered keys cost a word each (a third of a `CellId`).
#[derive(Default)]
pub(crate) struct Tombstones {
    /// The instance a tombstone last came for, out of `places` (a run
    /// of fires in one instance, the usual case, costs no hashing).
    last: Option<(Place, Words)>,
    /// The bytes a `Fired` frame named `last` by ([`CellRun::place`]),
    /// if it came so: a frame with the same bytes is filed in `last`
    /// without building its name (empty: none; no instance is encoded
    /// in no bytes).
    last_bytes: smallvec::SmallVec<[u8; 16]>,
    places: rustc_hash::FxHashMap<Place, Words>,
}

/// A cell instance: [`CellId`] without the key.
type Place = (ConnId, snet_core::NodeId, super::wire::Path);

/// The keys fired in one cell instance ([`Tombstones`]): the word last
/// added to, and the others by their high bits (an empty `BTreeMap`
/// allocates nothing: an instance that fires one key, a lone cell,
/// costs no map node).
#[derive(Default)]
struct Words {
    hi: u64,
    bits: u64,
    rest: BTreeMap<u64, u64>,
}

impl Words {
    fn insert(&mut self, key: u64) {
        let (hi, bit) = (key >> 6, 1u64 << (key & 63));
        if self.bits != 0 && hi != self.hi {
            *self.rest.entry(self.hi).or_default() |= self.bits;
            // (Keys mostly count up: a word past every stored one is new,
            // found without a search that misses.)
            let past = self.rest.last_key_value().is_none_or(|(&h, _)| h < hi);
            self.bits = if past {
                0
            } else {
                self.rest.remove(&hi).unwrap_or(0)
            };
        }
        self.hi = hi;
        self.bits |= bit;
    }

    /// Every key, each once.
    fn keys(&self) -> impl Iterator<Item = u64> + '_ {
        let rest = self.rest.iter().map(|(&h, &b)| (h, b));
        rest.chain(std::iter::once((self.hi, self.bits)))
            .flat_map(|(hi, bits)| {
                let mut b = bits;
                std::iter::from_fn(move || {
                    (b != 0).then(|| {
                        let lo = u64::from(b.trailing_zeros());
                        b &= b - 1;
                        hi << 6 | lo
                    })
                })
            })
    }
}

impl Tombstones {
    /// The cells a `Fired` or `Fired keys` frame names fired, all of one
    /// instance: in the last instance if the frame names it by the same
    /// bytes (a word's bit set per key), else the first as
    /// [`Tombstones::insert`] files it and the others in its instance.
    pub(crate) fn insert_run(&mut self, run: &CellRun<'_>) {
        let same = !self.last_bytes.is_empty() && *self.last_bytes == *run.place();
        if !same {
            let Some(first) = run.cells().next() else {
                return;
            };
            // (The first key is filed with the instance; setting its bit
            // again below changes nothing.)
            self.insert(first.id());
            self.last_bytes.extend_from_slice(run.place());
        }
        if let Some((_, w)) = &mut self.last {
            run.for_each_key(|key| w.insert(key));
        }
    }

    /// `cell` fired.
    pub(crate) fn insert(&mut self, cell: CellId) {
        self.last_bytes.clear();
        let CellId {
            conn,
            cell,
            path,
            key,
        } = cell;
        match &mut self.last {
            Some(((c, n, p), w)) if *c == conn && *n == cell && *p == path => w.insert(key),
            last => {
                let place = (conn, cell, path);
                let mut w = self.places.remove(&place).unwrap_or_default();
                w.insert(key);
                if let Some((p, old)) = last.replace((place, w)) {
                    self.places.insert(p, old);
                }
            }
        }
    }

    /// The 64-key words stored (each instance's last one included).
    #[cfg(all(test, not(loom)))]
    fn words(&self) -> usize {
        let words = |w: &Words| 1 + w.rest.len();
        self.places.values().map(words).sum::<usize>()
            + self.last.as_ref().map_or(0, |(_, w)| words(w))
    }

    /// Every cell that fired (for a replacement: [`Replay::tombstones`]).
    pub(crate) fn cells(&self) -> Vec<CellId> {
        let mut v = Vec::new();
        let last = self.last.iter().map(|(p, w)| (p, w));
        for ((conn, cell, path), words) in self.places.iter().chain(last) {
            v.extend(words.keys().map(|key| CellId {
                conn: *conn,
                cell: *cell,
                path: path.clone(),
                key,
            }));
        }
        v
    }
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
    pub items: Vec<(u64, ConnId, Item)>,
    pub next: u64,
    pub unacked: u64,
    pub lost_credit: crate::weight::Dyadic,
    pub tombstones: Vec<CellId>,
    pub parked: Vec<(CellId, u64, Rec)>,
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
            credit: vec![crate::weight::Balance::default(); n],
            replaced: 0,
            barren: vec![0; n],
            tombstones: (0..n).map(|_| Tombstones::default()).collect(),
            parked: (0..n).map(|_| Vec::new()).collect(),
            dones: 0,
            drained_at: u64::MAX,
            dead: Dead::default(),
        }
    }

    /// Node `from`'s groups fired cell `cell` (committed with them): the
    /// records parked there are in the merged record, and are returned
    /// (the caller drops them outside the state's lock: dropping a record
    /// may release fields).
    pub(crate) fn fired(&mut self, from: Rank, cell: CellId) -> Vec<(CellId, u64, Rec)> {
        let mut gone = Vec::new();
        self.fired_into(from, cell, &mut gone);
        gone
    }

    /// [`Log::fired`], the parked records taken out going to `gone` (a
    /// message's tombstones: no allocation for the usual one that took
    /// nothing out).
    pub(crate) fn fired_into(
        &mut self,
        from: Rank,
        cell: CellId,
        gone: &mut Vec<(CellId, u64, Rec)>,
    ) {
        let i = from.0 as usize;
        if let Some(p) = self.parked.get_mut(i) {
            if !p.is_empty() && p.iter().any(|(c, ..)| *c == cell) {
                let (g, keep): (Vec<_>, _) = std::mem::take(p)
                    .into_iter()
                    .partition(|(c, ..)| *c == cell);
                *p = keep;
                gone.extend(g);
            }
        }
        if let Some(v) = self.tombstones.get_mut(i) {
            v.insert(cell);
        }
    }

    /// [`Log::fired_into`] for the cells of a `Fired` or `Fired keys`
    /// frame as read: with no parked records of `from` to take out (the
    /// usual case), filed without building their names
    /// ([`Tombstones::insert_run`]).
    pub(crate) fn fired_run(
        &mut self,
        from: Rank,
        run: &CellRun<'_>,
        gone: &mut Vec<(CellId, u64, Rec)>,
    ) {
        let i = from.0 as usize;
        if self.parked.get(i).is_some_and(|p| !p.is_empty()) {
            for cell in run.cells() {
                self.fired_into(from, cell.id(), gone);
            }
            return;
        }
        if let Some(v) = self.tombstones.get_mut(i) {
            v.insert_run(run);
        }
    }

    /// Node `from`'s drain parked `rec`, stored in slot `slot` of `cell`.
    pub(crate) fn park(&mut self, from: Rank, cell: CellId, slot: u64, rec: Rec) {
        if let Some(v) = self.parked.get_mut(from.0 as usize) {
            v.push((cell, slot, rec));
        }
    }

    /// The nodes that hold records in custody.
    pub(crate) fn holding(&self) -> Vec<Rank> {
        (0..self.held.len())
            .filter(|&k| !self.held[k].is_empty())
            .map(|k| Rank(k as u32))
            .collect()
    }

    /// The output manager encoded the items of `s` and is about to send
    /// them (in the order it sends them: the receiver counts the same
    /// way): each node's take its next identities, in order, and their
    /// slots, built when each was encoded ([`Sending::push`]), join the
    /// node's ring in one move of the batch's slots (`VecDeque::append`,
    /// a copy of contiguous memory), not one move a slot; `s` is left
    /// empty, its buffers kept.
    pub(crate) fn sent_all(&mut self, s: &mut Sending) {
        for (k, b) in s.nodes.iter_mut().enumerate() {
            let n = b.slots.len() as u64;
            if n == 0 {
                continue;
            }
            let (Some(next), Some(ring)) = (self.next.get_mut(k), self.held.get_mut(k)) else {
                b.clear();
                continue;
            };
            let first = *next;
            *next += n;
            self.unacked[k] += n;
            self.live += ring.append(first, b) as u64;
        }
        self.peak = self.peak.max(self.live);
        // (`s.dead` is empty: its buffers go to the log for the next
        // records done.)
        std::mem::swap(&mut self.dead, &mut s.dead);
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
                *d = crate::weight::Balance::default();
            }
        }
    }

    /// Node `from` reports done the items numbered `first..=first +
    /// more` (a `Done` run), in one pass over the ring: a record (not a
    /// marker) goes to `left`, to be dropped outside the state's lock
    /// (dropping a record whose field is a reference to another node's
    /// value gives its weight back, which queues a message:
    /// [`snet_core::RemoteField`]); the first identity the log does not
    /// hold, if any (the items before it are taken).
    pub(crate) fn done_run(
        &mut self,
        from: Rank,
        first: u64,
        more: u64,
        left: &mut Dead,
    ) -> Option<u64> {
        let k = from.0 as usize;
        let Some(ring) = self.held.get_mut(k) else {
            return Some(first);
        };
        let (taken, unknown) = ring.take_run(first, more, left);
        if taken > 0 {
            self.live -= taken;
            self.dones += taken;
            self.barren[k] = 0;
        }
        unknown
    }

    /// [`Log::done_run`] with the records kept for the thread that sends
    /// node 0's next batch, which drops them ([`Log::sent_all`] hands
    /// them over), while at most [`DEAD_MAX`] wait; beyond that they go
    /// to `left` (the caller drops them after the lock). Only for a node
    /// that has never held a reference to another node's field
    /// ([`crate::dist::Net::retire`] asks its field store), so that no
    /// drop can queue a message (node 0 holds none under `Respawn`, where
    /// every other node sends it fields by value or gives them, or refers
    /// to node 0's own). So the records are freed by the thread that
    /// (mostly) made them: with one worker on node 0 of `bench/soak`'s
    /// respawn network, a record made by the worker and freed by the
    /// input manager went through the allocator's list of frees from
    /// other threads, which the worker then collected
    /// (`_mi_page_free_collect`, a tenth of the worker's extra time under
    /// `Respawn`).
    pub(crate) fn done_run_for_sender(
        &mut self,
        from: Rank,
        first: u64,
        more: u64,
        left: &mut Dead,
    ) -> Option<u64> {
        if self.dead.len() >= DEAD_MAX {
            left.append(&mut self.dead);
        }
        let mut dead = std::mem::take(&mut self.dead);
        let unknown = self.done_run(from, first, more, &mut dead);
        self.dead = dead;
        unknown
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
        let mut records = false;
        for h in self.held[i].held_mut() {
            // (A marker is never a poison record: it calls no box.)
            let Some(origin) = h.what.origin() else {
                continue;
            };
            records = true;
            h.tries += 1;
            if h.tries >= REPLAY_TRIES {
                poison.get_or_insert((origin, 0)).1 += 1;
            }
        }
        if let Some((origin, n)) = poison {
            return Err(GiveUp::Poison(origin, n));
        }
        // (With records in its care, those count: a poison record within
        // three more losses at most.)
        if self.barren[i] >= REPLAY_TRIES && !records {
            return Err(GiveUp::Barren);
        }
        let lost_credit = self.credit[i].take();
        self.replaced += 1;
        // The replacement must be asked to drain again (a loss after the
        // drain, or during it).
        self.drained_at = u64::MAX;
        Ok(Replay {
            opens: self.opens[i].clone(),
            items: self.held[i].items(),
            next: self.next[i],
            unacked: std::mem::take(&mut self.unacked[i]),
            lost_credit,
            tombstones: self.tombstones[i].cells(),
            parked: self.parked[i].clone(),
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
    pub(crate) fn held(&self, k: Rank) -> Vec<(u64, ConnId, Rec)> {
        self.held.get(k.0 as usize).map_or_else(Vec::new, |m| {
            m.items()
                .into_iter()
                .filter_map(|(id, conn, item)| match item {
                    Item::Rec(r) => Some((id, conn, r)),
                    _ => None,
                })
                .collect()
        })
    }
}

#[cfg(all(test, not(loom)))]
mod ring_tests {
    use super::*;

    /// Record `n`: `n` as a tag, for an odd `n` a field, and for every
    /// 13th a trace flow (stamps: kept whole, not packed).
    fn rec(n: u64) -> Rec {
        let mut r = snet_core::Record::new();
        r.set_int(snet_core::Label::tag("n"), n as i64);
        if n % 2 == 1 {
            let f = snet_core::Field::text("T", false, &n.to_string());
            r.set(snet_core::Label::field("x"), snet_core::Value::Field(f));
        }
        let mut det = crate::entity::Stamps::new();
        if n.is_multiple_of(13) {
            det.set_flow(n + 1);
        }
        Rec {
            rec: r,
            det,
            origin: crate::entity::Origin::input(n, None),
        }
    }

    /// `r` is record `n` (its entries, stamps and origin).
    fn is_rec(r: &Rec, n: u64) {
        assert_eq!(r.origin, crate::entity::Origin::input(n, None));
        assert_eq!(r.rec.int(snet_core::Label::tag("n")), Some(n as i64));
        let text = r
            .rec
            .field(snet_core::Label::field("x"))
            .and_then(|f| f.downcast_ref::<snet_core::TextField>())
            .map(|t| t.text().to_string());
        assert_eq!(
            text,
            (n % 2 == 1).then(|| n.to_string()),
            "record {n}'s field"
        );
        assert_eq!(r.rec.len(), 1 + usize::from(n % 2 == 1));
        assert_eq!(r.det.flow(), if n.is_multiple_of(13) { n + 1 } else { 0 });
    }

    fn conn() -> ConnId {
        ConnId {
            origin: Rank(0),
            seq: 0,
        }
    }

    /// Record `n`, for a slot.
    fn held(n: u64) -> Option<Item> {
        Some(Item::Rec(rec(n)))
    }

    /// What a `Dead` has, as record numbers: whole records' and packed
    /// records' fields' (in the order they were taken).
    fn numbers(d: &Dead) -> (Vec<u64>, Vec<String>) {
        (
            d.recs
                .iter()
                .map(|r| r.rec.int(snet_core::Label::tag("n")).expect("n") as u64)
                .collect(),
            d.fields
                .iter()
                .map(|f| {
                    f.downcast_ref::<snet_core::TextField>()
                        .expect("a text field")
                        .text()
                        .to_string()
                })
                .collect(),
        )
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
            ring.push(id, held(id));
            if id >= 2 {
                // Everything but the first two is done soon after sent.
                assert!(ring.take(id - 1).is_some());
            }
        }
        assert!(ring.slots.len() <= SPREAD * ring.count + SLACK + 1);
        assert_eq!(ring.ids(), [0, n - 1]);
        assert!(!ring.is_empty());
        assert!(ring.take(1).is_none(), "done twice");
        let r = ring.take(0).expect("the old record is still held");
        is_rec(&r, 0);
        assert!(ring.take(0).is_none());
        is_rec(&ring.take(n - 1).expect("the last record is held"), n - 1);
        assert!(ring.is_empty());
        assert!(ring.slots.is_empty());
        assert!(ring.words.is_empty() && ring.fields.is_empty());
        assert_eq!(ring.base, n);
    }

    /// A `Done` run taken in one pass ([`Ring::take_run`]) does what
    /// taking its items one by one does: the same records out (in
    /// order), the same count, the same first identity not held, the
    /// same items left; over runs that start among the records moved
    /// aside, cross into the ring, cover markers and items never kept,
    /// name items taken already or never sent, and end at the last
    /// slot.
    #[test]
    fn a_done_run_takes_what_its_items_one_by_one_take() {
        let build = || {
            let mut ring = Ring::default();
            for id in 0..20_000u64 {
                let slot = match id % 7 {
                    // Never kept (not a record or a marker).
                    3 => None,
                    5 => Some(Item::Marker(crate::entity::Marker {
                        owner: 1,
                        seq: id,
                        weight: 0,
                        payload: None,
                        custody: Default::default(),
                    })),
                    _ => held(id),
                };
                ring.push(id, slot);
                // Most are done soon: the first few and every 11th stay,
                // and the oldest move aside.
                let old = id.wrapping_sub(30);
                if id >= 40 && old % 7 != 3 && old % 11 != 0 {
                    assert!(ring.take_into(old, &mut Dead::default()));
                }
            }
            ring
        };
        // `c` keeps what it takes for the sender (`Log::dead`'s path: a
        // run at the front leaves in one drain).
        let (mut a, mut b, mut c) = (build(), build(), build());
        assert!(!a.stragglers.is_empty(), "the test starts among stragglers");
        let mut x = 12345u64;
        let mut runs = vec![(0, 5), (0, 0), (19_990, 9), (19_999, 0), (20_000, 0)];
        for _ in 0..3000 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            // Every third run starts at the ring's front (`u64::MAX`:
            // `base` when it is taken), where the slots leave the ring
            // as they are taken.
            let first = if x.is_multiple_of(3) {
                u64::MAX
            } else {
                (x >> 33) % 20_010
            };
            runs.push((first, (x >> 20) % 5));
        }
        let mut fronts = 0;
        for (first, more) in runs {
            let first = if first == u64::MAX {
                fronts += usize::from(a.base == b.base && a.slots.front().is_some());
                a.base
            } else {
                first
            };
            let (mut la, mut lb, mut lc) = (Dead::default(), Dead::default(), Dead::default());
            assert_eq!(c.base, a.base);
            let got = a.take_run(first, more, &mut la);
            let dropped = c.take_run(first, more, &mut lc);
            let mut want = (0, None);
            for id in first..=first + more {
                if !b.take_into(id, &mut lb) {
                    want.1 = Some(id);
                    break;
                }
                want.0 += 1;
            }
            assert_eq!(got, want, "run ({first}, {more})");
            assert_eq!(dropped, want, "run ({first}, {more}), for the sender");
            assert_eq!(numbers(&la), numbers(&lb), "run ({first}, {more})");
            assert_eq!(
                numbers(&lc),
                numbers(&lb),
                "run ({first}, {more}), for the sender"
            );
            assert_eq!(a.count + a.stragglers.len(), b.count + b.stragglers.len());
            assert_eq!((c.count, c.stragglers.len()), (a.count, a.stragglers.len()));
        }
        assert!(fronts > 300, "runs at the front: {fronts}");
        assert_eq!(a.ids(), b.ids());
        assert_eq!(c.ids(), b.ids());
        assert!(a.slots.len() <= SPREAD * a.count + SLACK + 1);
        // What is left is still every record as it was sent.
        let left = a.items();
        assert_eq!(left.len(), a.ids().len());
        for (id, _, item) in left {
            if let Item::Rec(r) = item {
                is_rec(&r, id);
            }
        }
    }

    /// A replacement is sent each record the log holds as it was sent:
    /// packed ones made again with the same entries in the same order
    /// (tags, and fields as the same handles: no copy of a value), and
    /// the ones kept whole (stamps) as they were; each in its place among
    /// the markers and the items never kept.
    #[test]
    fn a_lost_node_is_sent_its_records_as_they_were_sent() {
        let mut log = Log::new(2);
        let mut s = Sending::default();
        let mut sent = Vec::new();
        for n in 0..40u64 {
            let item = match n % 10 {
                4 => Item::Wake,
                7 => Item::Marker(crate::entity::Marker::new(3, n, None)),
                _ => {
                    let mut r = rec(n);
                    // More entries than a record holds inline, some
                    // with big values.
                    for (i, t) in ["a", "b", "c", "d", "e"].iter().enumerate() {
                        r.rec
                            .set_int(snet_core::Label::tag(t), (n as i64) << (12 * i as i64));
                    }
                    r.rec.set_int(snet_core::Label::btag("m"), -(n as i64));
                    Item::Rec(r)
                }
            };
            if let Item::Rec(r) = &item {
                sent.push((n, r.clone()));
            }
            drop(s.push(Rank(1), conn(), item));
        }
        log.sent_all(&mut s);
        // Some done: two at the front, one behind it.
        let mut dead = Dead::default();
        assert_eq!(log.done_run(Rank(1), 0, 1, &mut dead), None);
        assert_eq!(log.done_run(Rank(1), 5, 0, &mut dead), None);
        // What they leave to drop, at once (record 5's field too, behind
        // the front): 0 kept whole (a flow), 1's and 5's fields.
        assert_eq!(numbers(&dead), (vec![0], vec!["1".into(), "5".into()]));
        let Ok(replay) = log.lose(Rank(1)) else {
            panic!("node 1 is replaced");
        };
        let ids: Vec<u64> = replay.items.iter().map(|i| i.0).collect();
        let want: Vec<u64> = (2..40).filter(|n| n % 10 != 4 && *n != 5).collect();
        assert_eq!(ids, want, "every item kept, in order");
        for (id, _, item) in replay.items {
            match item {
                Item::Rec(r) => {
                    let (_, orig) = sent.iter().find(|s| s.0 == id).expect("sent");
                    assert_eq!(r.origin, orig.origin);
                    assert_eq!(r.det.flow(), orig.det.flow());
                    assert_eq!(r.rec.len(), orig.rec.len());
                    for ((la, va), (lb, vb)) in r.rec.entries().iter().zip(orig.rec.entries()) {
                        assert_eq!(la, lb);
                        match (va, vb) {
                            (snet_core::Value::Int(a), snet_core::Value::Int(b)) => {
                                assert_eq!(a, b)
                            }
                            (snet_core::Value::Field(a), snet_core::Value::Field(b)) => {
                                assert!(a.same(b), "record {id}: the field's own handle")
                            }
                            _ => panic!("record {id}: {la} changed kind"),
                        }
                    }
                }
                Item::Marker(m) => assert_eq!((m.owner, m.seq), (3, id)),
                other => panic!("item {id}: {other:?}"),
            }
        }
    }

    /// The first slot is never empty: items not kept that open an empty
    /// ring's batch take numbers but no slots (the ring starts at its
    /// first kept item), and the same once the ring has emptied again.
    #[test]
    fn an_empty_ring_starts_at_its_first_kept_item() {
        let mut ring = Ring::default();
        ring.push(0, None);
        assert!(ring.slots.is_empty());
        assert_eq!(ring.base, 1);
        // A batch of two items not kept, then two records.
        let mut s = Sending::default();
        assert!(s.push(Rank(0), conn(), Item::Wake).is_some());
        assert!(s.push(Rank(0), conn(), Item::Wake).is_some());
        assert!(s.push(Rank(0), conn(), Item::Rec(rec(3))).is_none());
        assert!(s.push(Rank(0), conn(), Item::Rec(rec(4))).is_none());
        assert_eq!(ring.append(1, &mut s.nodes[0]), 2);
        assert_eq!((ring.base, ring.slots.len(), ring.count), (3, 2, 2));
        assert!(ring.slots[0].held.is_some());
        assert_eq!(ring.ids(), [3, 4]);
        let mut dead = Dead::default();
        assert_eq!(ring.take_run(3, 1, &mut dead), (2, None));
        assert!(ring.slots.is_empty() && ring.words.is_empty() && ring.fields.is_empty());
        assert_eq!(numbers(&dead), (vec![], vec!["3".to_string()]));
        // Emptied: the next batch's leading item not kept takes no slot.
        ring.push(5, None);
        ring.push(6, held(6));
        assert_eq!((ring.base, ring.slots.len()), (6, 1));
        is_rec(&ring.take(6).expect("held"), 6);
        assert!(ring.slots.is_empty());
        assert_eq!(ring.base, 7);
    }

    /// A packed entry is made again with the kind of value it had (the
    /// entry's own bit, not its label's kind), its label and its value:
    /// the extreme integers, and fields as the same handles, in order.
    #[test]
    fn a_packed_record_is_unpacked_as_it_was() {
        use snet_core::{Label, Value};
        let (f, g) = (
            snet_core::Field::text("T", false, "f"),
            snet_core::Field::text("T", false, "g"),
        );
        let mut r = snet_core::Record::new();
        r.set(Label::field("pk_a"), Value::Field(f.clone()));
        // (Labels whose kind is not their value's: `Record::set` allows it.)
        r.set(Label::field("pk_b"), Value::Int(i64::MIN));
        r.set(Label::tag("pk_c"), Value::Field(g.clone()));
        r.set_int(Label::tag("pk_d"), i64::MAX);
        r.set_int(Label::tag("pk_e"), -1);
        r.set_int(Label::btag("pk_f"), 1 << 40);
        let want = r.clone();
        let (mut words, mut fields) = (Vec::new(), Vec::new());
        assert_eq!(pack(r, &mut words, &mut fields), (10, 2));
        let got = unpack(words, fields);
        assert_eq!(got.len(), want.len());
        for ((la, va), (lb, vb)) in got.entries().iter().zip(want.entries()) {
            assert_eq!(la, lb);
            match (va, vb) {
                (Value::Int(a), Value::Int(b)) => assert_eq!(a, b, "{la}"),
                (Value::Field(a), Value::Field(b)) => assert!(a.same(b), "{la}"),
                _ => panic!("{la} changed kind"),
            }
        }
        assert!(matches!(got.get(Label::field("pk_a")), Some(Value::Field(x)) if x.same(&f)));
        assert!(matches!(got.get(Label::tag("pk_c")), Some(Value::Field(x)) if x.same(&g)));
    }

    /// Records reported done wait in the log for the thread that sends
    /// the next batch, which gets them with that batch's numbers (and
    /// drops them after the lock); at most [`DEAD_MAX`] wait, the rest go
    /// to the caller (the input manager drops them), so a run whose
    /// input has ended keeps no more than that.
    #[test]
    fn records_done_go_to_the_next_sender_and_no_more_than_a_bound_wait() {
        let mut log = Log::new(2);
        let batch = |log: &mut Log, from: u64, n: u64| {
            let mut s = Sending::default();
            for i in from..from + n {
                assert!(s.push(Rank(1), conn(), Item::Rec(rec(i))).is_none());
            }
            log.sent_all(&mut s);
            s
        };
        // (About half the records leave something to drop.)
        let n = 3 * DEAD_MAX as u64;
        assert!(batch(&mut log, 0, n).dead.is_empty());
        // What records `from..to` leave to drop: the whole ones (with
        // stamps), and the packed ones' fields.
        let leave = |from: u64, to: u64| {
            (
                (from..to)
                    .filter(|i| i.is_multiple_of(13))
                    .collect::<Vec<_>>(),
                (from..to)
                    .filter(|i| i % 2 == 1 && !i.is_multiple_of(13))
                    .map(|i| i.to_string())
                    .collect::<Vec<_>>(),
            )
        };
        // Done in two runs below the bound: they wait, none to the caller.
        let mut left = Dead::default();
        assert_eq!(log.done_run_for_sender(Rank(1), 0, 9, &mut left), None);
        assert_eq!(log.done_run_for_sender(Rank(1), 10, 9, &mut left), None);
        assert!(left.is_empty());
        assert_eq!(log.live(), n - 20);
        // The next batch's sender gets them, in the order they were done.
        let s = batch(&mut log, n, 1);
        assert_eq!(numbers(&s.dead), leave(0, 20));
        assert!(batch(&mut log, n + 1, 1).dead.is_empty());
        // No batch for a while: once the bound is reached, what waits goes
        // to the caller.
        let mut first = 20;
        while first < n {
            let more = 49.min(n - first - 1);
            assert_eq!(
                log.done_run_for_sender(Rank(1), first, more, &mut left),
                None
            );
            first += more + 1;
            assert!(log.dead.len() <= DEAD_MAX + 50, "{}", log.dead.len());
        }
        assert!(!left.is_empty());
        let (recs, fields) = leave(20, n);
        assert_eq!(left.len() + log.dead.len(), recs.len() + fields.len());
        assert_eq!(log.live(), 2);
    }

    /// Node 0 keeps every tombstone a node's groups committed, however
    /// it stores them: a replacement is sent exactly the cells that
    /// fired (a cell whose tombstone were dropped would start empty in
    /// the replacement, store a replayed record and fire a second time),
    /// and no other (a cell named by mistake would pass records it must
    /// join). Keys dense, strided, scattered and at the edges of a word
    /// and of `u64`, in several instances (connection, template, path),
    /// and on two nodes.
    #[test]
    fn every_tombstone_is_sent_to_the_replacement_and_no_other() {
        let mut log = Log::new(3);
        let cell = |seq: u64, node: u32, path: &[u64], key: u64| CellId {
            conn: ConnId {
                origin: Rank(0),
                seq,
            },
            cell: snet_core::NodeId(node),
            path: path.iter().copied().collect(),
            key,
        };
        let mut fired = std::collections::BTreeSet::new();
        let mut block = Vec::new();
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for i in 0..20_000u64 {
            // Every fourth value (the soak's), dense ones, the word's
            // and `u64`'s edges, and pseudo-random ones.
            let key = match i % 5 {
                0 => 4 * i + 1,
                1 => i,
                2 => [0, 63, 64, 127, u64::MAX, u64::MAX - 63][(i / 5 % 6) as usize],
                _ => {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    x
                }
            };
            // Runs of three fires an instance, among instances whose
            // names take as many bytes (`[2, 0]` and `[2, 1]`).
            let c = match i / 3 % 4 {
                0 => cell(1, 4, &[], key),
                1 => cell(1, 4, &[2, 0], key),
                2 => cell(1, 4, &[2, 1], key),
                _ => cell(2, 7, &[2, 0, 5], key),
            };
            fired.insert(c.clone());
            block.push(c);
            if i % 7 != 6 && i != 19_999 {
                continue;
            }
            // In blocks of 7, as a message's `Fired` and `Fired keys`
            // frames read (a run of an instance's cells in one frame,
            // filed by its bytes when they are the last instance's: two
            // blocks of three in a row, so that a run of the last
            // message's instance starts a message), or as names.
            if i / 7 % 3 != 2 {
                let mut f = crate::dist::wire::Frames::default();
                f.fired_cells(&block);
                let mut b = Vec::new();
                f.message(&crate::weight::Dyadic::zero(), &mut b);
                let (_, mut r) = crate::dist::wire::MessageReader::new(&b).expect("a message");
                let mut read = Vec::new();
                while let Some(frame) = r.next_frame().expect("a frame") {
                    let run = match frame {
                        crate::dist::wire::FrameRef::Fired { cell } => CellRun::one(cell),
                        crate::dist::wire::FrameRef::FiredKeys { cells } => cells,
                        f => panic!("a Fired frame, not {f:?}"),
                    };
                    read.extend(run.cells().map(|c| c.id()));
                    log.fired_run(Rank(1), &run, &mut Vec::new());
                }
                assert_eq!(read, block, "the frames name the block's cells in order");
            } else {
                for c in &block {
                    log.fired(Rank(1), c.clone());
                }
            }
            block.clear();
        }
        log.fired(Rank(2), cell(1, 4, &[], 3));
        let sent = match log.lose(Rank(1)) {
            Ok(r) => r.tombstones,
            Err(_) => panic!("node 1 is replaced"),
        };
        assert_eq!(sent.len(), fired.len(), "each tombstone sent once");
        let sent: std::collections::BTreeSet<_> = sent.into_iter().collect();
        assert_eq!(sent, fired);
        // A second loss sends them all again.
        match log.lose(Rank(1)) {
            Ok(r) => assert_eq!(
                r.tombstones
                    .into_iter()
                    .collect::<std::collections::BTreeSet<_>>(),
                fired
            ),
            Err(_) => panic!("node 1 is replaced again"),
        }
        match log.lose(Rank(2)) {
            Ok(r) => assert_eq!(r.tombstones, vec![cell(1, 4, &[], 3)]),
            Err(_) => panic!("node 2 is replaced"),
        }
    }

    /// The soak's pattern (a cell per tag value, every fourth value on a
    /// node, committed in about increasing order, a few out of it) takes
    /// a word per 16 tombstones, not a `CellId` each, and a lone cell's
    /// instance one word.
    #[test]
    fn tombstones_of_one_instance_take_a_word_per_64_keys() {
        let mut t = Tombstones::default();
        let place = |key| CellId {
            conn: ConnId {
                origin: Rank(0),
                seq: 3,
            },
            cell: snet_core::NodeId(9),
            path: [1u64, 0].into_iter().collect(),
            key,
        };
        let n = 250_000u64;
        for i in 0..n {
            // Pairs swapped now and then: commits from several workers.
            let j = if i % 7 == 3 && i + 1 < n {
                i + 1
            } else if i % 7 == 4 {
                i - 1
            } else {
                i
            };
            t.insert(place(4 * j + 1));
        }
        assert!(t.words() <= (n / 16 + 1) as usize, "{} words", t.words());
        assert_eq!(t.cells().len(), n as usize);
        let mut lone = Tombstones::default();
        for seq in 0..100 {
            lone.insert(CellId {
                key: 0,
                conn: ConnId {
                    origin: Rank(0),
                    seq,
                },
                ..place(0)
            });
        }
        assert_eq!(lone.words(), 100);
        assert_eq!(lone.cells().len(), 100);
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
        let conn = from_root(7);
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
                let mut ids = more.to_vec();
                ids.push(id);
                ids.sort_unstable();
                v.push((ids, fired.iter().map(|c| c.key()).collect()));
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

    /// A token dropped in [`quietly`] tells whether it queued a commit
    /// (the caller, a worker, then sends it itself): not while another
    /// token of its group lives, yes with the group's last; outside it a
    /// commit is reported to no one (and wakes the output manager).
    #[test]
    fn a_commit_queued_quietly_is_reported_to_the_caller() {
        let net = node();
        let (a, b) = (token(&net, 1), token(&net, 2));
        union(&a, &b);
        assert!(
            !quietly(|| drop(a)),
            "the group lives on in its other token"
        );
        assert_eq!(commits(&net), vec![]);
        assert!(quietly(|| drop(b)), "the group's last token commits it");
        assert_eq!(commits(&net), vec![(vec![1, 2], vec![])]);
        drop(token(&net, 3));
        assert_eq!(QUIET.with(|q| q.get()), 0, "outside it, nothing is noted");
        assert_eq!(commits(&net), vec![(vec![3], vec![])]);
        assert!(!quietly(|| ()), "nothing queued");
        // Within another `quietly`, a commit is reported to both.
        let d = token(&net, 4);
        let (mut inner, mut between) = (false, false);
        let outer = quietly(|| {
            inner = quietly(|| drop(d));
            between = QUIET.with(|q| q.get()) == 2;
        });
        assert!(inner && between && outer, "{inner} {between} {outer}");
        assert_eq!(commits(&net), vec![(vec![4], vec![])]);
        assert!(!quietly(|| assert!(!quietly(|| ()))), "nothing queued");
    }

    /// The release of a field by reference dropped in [`quietly`] (a
    /// batch's items dropped once encoded, a worker's task) is noted for
    /// the caller, who wakes the output manager once for the batch or
    /// sends it itself; outside it, it wakes the output manager.
    #[test]
    fn a_release_queued_quietly_is_reported_to_the_caller() {
        use snet_core::ReleaseRemote;
        let net = node();
        let releases = |net: &crate::dist::Net| {
            let st = lock(&net.state.0);
            st.out
                .iter()
                .filter(|o| matches!(o, Out::Release { .. }))
                .count()
        };
        let r = net.releaser();
        assert!(quietly(|| r.release(Rank::ROOT, 7, 1)));
        assert_eq!(releases(&net), 1);
        r.release(Rank::ROOT, 8, 1);
        assert_eq!(QUIET.with(|q| q.get()), 0, "outside it, nothing is noted");
        assert_eq!(releases(&net), 2);
    }

    /// Items from node 0 are numbered in the order they arrive, from
    /// the number a `Seq` frame gives after a replay; items from another
    /// node are not numbered and get no token.
    #[test]
    fn items_from_node_0_are_numbered_in_order_and_from_a_seq_frame() {
        let net = node();
        let conn = from_root(7);
        net.opened(Rank::ROOT, conn, true, false);
        let ids = |from: Rank, n: usize| -> Vec<Option<u64>> {
            (0..n)
                .map(|i| {
                    arrived(&net, from, conn, i as i64)
                        .det
                        .custody()
                        .map(|t| t.id)
                })
                .collect()
        };
        assert_eq!(ids(Rank::ROOT, 2), vec![Some(0), Some(1)]);
        net.set_next(Rank::ROOT, 7);
        assert_eq!(ids(Rank::ROOT, 2), vec![Some(7), Some(8)]);
        assert_eq!(ids(Rank(2), 1), vec![None]);
        assert_eq!(ids(Rank::ROOT, 1), vec![Some(9)]);
    }

    /// A record from node 0 arrives with a pending token (its identity in
    /// the stamps' word, nothing allocated): dropped unprocessed, it
    /// commits its item; a look at its custody makes the token once
    /// (every later look and every clone shares it), and the item commits
    /// once, with the last clone; taking it gives that token.
    #[test]
    fn a_pending_token_is_made_once_where_needed_and_commits_once() {
        let net = node();
        let conn = from_root(7);
        net.opened(Rank::ROOT, conn, true, false);
        let arrive = || arrived(&net, Rank::ROOT, conn, 0);
        // Dropped before it was ever processed: done.
        let r = arrive();
        assert_eq!(r.det.pending_token().map(Pending::id), Some(0));
        drop(r);
        assert_eq!(commits(&net), vec![(vec![0], vec![])]);
        // Looked at, cloned, dropped: one token, one commit.
        let r = arrive();
        let t = r.det.custody().expect("made").clone();
        assert!(r.det.pending_token().is_none());
        assert_eq!((t.id, t.from(), t.conn()), (1, Rank::ROOT, conn));
        assert!(r.det.custody().is_some_and(|c| Arc::ptr_eq(c, &t)));
        let c = r.clone();
        assert!(c.det.custody().is_some_and(|c| Arc::ptr_eq(c, &t)));
        drop((r, t));
        assert_eq!(commits(&net), vec![], "the clone holds it");
        drop(c);
        assert_eq!(commits(&net), vec![(vec![1], vec![])]);
        // Cloned while pending: the clone and the original share one.
        let r = arrive();
        let c = r.clone();
        assert!(Arc::ptr_eq(
            r.det.custody().expect("made"),
            c.det.custody().expect("shared")
        ));
        drop(r);
        assert_eq!(commits(&net), vec![]);
        drop(c);
        assert_eq!(commits(&net), vec![(vec![2], vec![])]);
        // Taken (a record held, or stored in a cell): that token.
        let mut r = arrive();
        let t = r.det.take_custody().expect("made");
        assert!(r.det.is_bare() && t.id == 3);
        drop(r);
        assert_eq!(commits(&net), vec![]);
        drop(t);
        assert_eq!(commits(&net), vec![(vec![3], vec![])]);
        // Stamps pushed on it (a deterministic combinator): the token
        // goes into the box, made.
        let mut r = arrive();
        r.det.push(5);
        assert!(r.det.custody().is_some_and(|t| t.id == 4));
        drop(r);
        assert_eq!(commits(&net), vec![(vec![4], vec![])]);
    }

    /// A pending word holds the item's numbers exactly, and an item whose
    /// numbers do not fit one (or on a connection node 0 did not make)
    /// gets an `Arc` token at once, with the same identity.
    #[test]
    fn an_item_whose_numbers_do_not_fit_a_word_gets_its_token_at_once() {
        let max_id = (1u64 << ID_BITS) - 1;
        let last = (HOMES as u32 - 1, (1 << GEN_BITS) - 1);
        let p = Pending::new(last, from_root((1 << SEQ_BITS) - 1), max_id).expect("fits");
        let t = p.token();
        assert_eq!((t.id, t.conn()), (max_id, from_root((1 << SEQ_BITS) - 1)));
        assert_eq!(Pending::new((0, 0), from_root(1 << SEQ_BITS), 0), None);
        assert_eq!(Pending::new((0, 0), from_root(0), max_id + 1), None);
        let other = ConnId {
            origin: Rank(1),
            seq: 0,
        };
        assert_eq!(Pending::new((0, 0), other, 0), None);
        let net = node();
        let big = from_root(1 << SEQ_BITS);
        net.opened(Rank::ROOT, big, true, false);
        let r = arrived(&net, Rank::ROOT, big, 0);
        assert!(r.det.pending_token().is_none());
        assert!(r
            .det
            .custody()
            .is_some_and(|t| t.id == 0 && t.conn() == big));
        drop(r);
        assert_eq!(commits(&net), vec![(vec![0], vec![])]);
    }

    /// A record that outlives its node's run (dropped after the `Net`)
    /// commits nothing, pending or not, even to a node that took its
    /// node's home since: the state is gone.
    #[test]
    fn a_pending_token_of_a_node_that_is_gone_commits_nothing() {
        let net = node();
        let home = net.home.expect("a home");
        let conn = from_root(7);
        net.opened(Rank::ROOT, conn, true, false);
        let (a, b) = (
            arrived(&net, Rank::ROOT, conn, 0),
            arrived(&net, Rank::ROOT, conn, 1),
        );
        let weak = Arc::downgrade(&net.state);
        drop(net);
        assert!(weak.upgrade().is_none());
        // (Other tests take homes meanwhile: made until one takes this.)
        let next = (0..100_000)
            .map(|_| node())
            .find(|n| n.home.is_some_and(|h| h.0 == home.0))
            .expect("the home is taken again");
        assert_ne!(next.home, Some(home), "another generation");
        drop(a);
        assert!(b.det.custody().is_some_and(|t| t.id == 1));
        drop(b);
        assert_eq!(commits(&next), vec![], "nothing for the new node");
    }

    /// Records leaving one input of a merge (`PathLast`) commit in the
    /// order they left it, or together: one whose token's last clone
    /// drops first waits for the one ahead of it (the group model's
    /// `HybridFifo`: a stored record keeps the records behind it on its
    /// path from committing before its cell's decision does). Records of
    /// another input are not held back, and one input's run of records
    /// of one item makes one link.
    #[test]
    fn records_leaving_one_input_of_a_merge_commit_in_its_order() {
        let net = node();
        let (one, other) = (PathLast::default(), PathLast::default());
        let (a, b, c, d) = (
            token(&net, 1),
            token(&net, 2),
            token(&net, 3),
            token(&net, 4),
        );
        one.pass(Some(&a));
        one.pass(Some(&b));
        one.pass(Some(&b));
        other.pass(Some(&d));
        one.pass(Some(&c));
        drop(c);
        drop(b);
        assert_eq!(commits(&net), vec![], "b and c wait for a");
        drop(d);
        assert_eq!(commits(&net), vec![(vec![4], vec![])], "another input");
        drop(a);
        assert_eq!(commits(&net), vec![(vec![1, 2, 3], vec![])]);
        // Once a group committed, the next record commits alone.
        let e = token(&net, 5);
        one.pass(Some(&e));
        drop(e);
        assert_eq!(commits(&net), vec![(vec![5], vec![])]);
    }

    /// Records leaving a deterministic combinator inside a placement
    /// (`Graph::det_outputs_to_link`): `a` and `c` are one group (`c`
    /// passed the cell whose slot holds `a`'s record), `b` another, and
    /// they left in the order `a`, `b`, `c`, so each group is linked
    /// after the other. Node 0 gets the records in the order they were
    /// held, whichever token drops last, not group by group.
    #[test]
    fn records_of_groups_linked_each_after_the_other_reach_node_0_in_order() {
        let conn = from_root(7);
        for last in 0..3 {
            let net = node();
            let out = PathLast::default();
            let t = [token(&net, 1), token(&net, 2), token(&net, 3)];
            union(&t[0], &t[2]);
            for (n, tok) in t.iter().enumerate() {
                out.pass(Some(tok));
                tok.hold(conn, rec(n as i64));
            }
            let [a, b, c] = t;
            let mut t = vec![Some(a), Some(b), Some(c)];
            for i in (0..3).filter(|&i| i != last) {
                t[i] = None;
            }
            drop(t);
            let ns = committed_ns(&net);
            assert_eq!(ns, [0, 1, 2], "token {last} dropped last");
        }
    }

    /// The tag `n` of each record `net` has committed to node 0 so far,
    /// in the order the commits send them (taking them out).
    fn committed_ns(net: &Net) -> Vec<i64> {
        let g = std::mem::take(&mut lock(&net.state.0).out);
        g.into_iter()
            .filter_map(|o| match o {
                Out::Commit { items, .. } => Some(items),
                _ => None,
            })
            .flatten()
            .filter_map(|(_, i)| match i {
                Item::Rec(r) => r.rec.int(snet_core::Label::tag("n")),
                _ => None,
            })
            .collect()
    }

    /// One group's records reach node 0 in the order they were held, in
    /// whatever order its tokens die (the det model's `a a b`: a stored
    /// `a`'s token, an `a` passing its taken slot, the `b` that fires, all
    /// one group; the passing record and the merged one are held in the
    /// collector's order, and their tokens move their content into the
    /// root in the order they die).
    #[test]
    fn records_of_one_group_reach_node_0_in_the_order_they_were_held() {
        let conn = from_root(7);
        let orders = [
            [0, 1, 2],
            [0, 2, 1],
            [1, 0, 2],
            [1, 2, 0],
            [2, 0, 1],
            [2, 1, 0],
        ];
        for order in orders {
            let net = node();
            let t = [token(&net, 1), token(&net, 2), token(&net, 3)];
            union(&t[1], &t[0]);
            union(&t[2], &t[0]);
            for (n, tok) in t.iter().enumerate() {
                tok.hold(conn, rec(n as i64));
            }
            let [a, b, c] = t;
            let mut t = [Some(a), Some(b), Some(c)];
            for i in order {
                t[i] = None;
            }
            let ns = committed_ns(&net);
            assert_eq!(ns, [0, 1, 2], "tokens dropped in the order {order:?}");
        }
    }

    /// A record passes a cell whose slot holds another's: it commits with
    /// that one's group while it is open (the cell fires later: one
    /// commit with the tombstone), alone once it has committed.
    #[test]
    fn a_record_passing_a_stored_one_commits_with_or_after_its_group() {
        let net = node();
        let mut g = Guard::new(&net, snet_core::NodeId(4), &Default::default()).expect("a guard");
        let (s, r) = (token(&net, 1), token(&net, 2));
        g.stored(0, 0, Some(s.into())); // the guard keeps it
        g.passed_open(0..=0, Some(&r));
        drop(r);
        assert_eq!(commits(&net), vec![], "the pass waits for the decision");
        let f = token(&net, 3);
        g.fired(0, Some(&f));
        drop(f);
        assert_eq!(commits(&net), vec![(vec![1, 2, 3], vec![0])]);
        // The cell has fired and its group committed: a record passes freely.
        let late = token(&net, 4);
        g.passed(0..=0, Some(&late));
        g.passed_open(0..=0, Some(&late));
        drop(late);
        assert_eq!(commits(&net), vec![(vec![4], vec![])]);
    }

    /// An ordering marker from node 0 (a program with a deterministic
    /// combinator): its copies are held by its token and go in one
    /// commit with its `Done`, and that commit waits for the commit of
    /// the record node 0 sent before it (whose token a synchrocell may
    /// keep alive while the marker passes), then goes right behind it.
    #[test]
    fn a_markers_copies_commit_together_after_every_earlier_item() {
        use crate::entity::{Marker, Origin, Stamps};
        let net = node();
        let conn = from_root(7);
        net.opened(Rank::ROOT, conn, true, true);
        let mut r = Item::Rec(Rec {
            rec: snet_core::Record::new(),
            det: Stamps::new(),
            origin: Origin::input(0, None),
        });
        net.arrived(Rank::ROOT, conn, &mut r);
        let mut m = Item::Marker(Marker::new(9, 0, None));
        net.arrived(Rank::ROOT, conn, &mut m);
        let Item::Marker(m) = m else {
            unreachable!("a marker")
        };
        for mut c in m.split(2) {
            let t = c.custody.0.take().expect("each copy has the token");
            t.hold(conn, Item::Marker(c));
        }
        assert_eq!(commits(&net), vec![], "the marker waits for record 0");
        drop(r);
        let g = std::mem::take(&mut lock(&net.state.0).out);
        let got: Vec<(u64, usize)> = g
            .into_iter()
            .filter_map(|o| match o {
                Out::Commit { id, items, .. } => Some((id, items.len())),
                _ => None,
            })
            .collect();
        assert_eq!(got, vec![(0, 0), (1, 2)], "the record, then both copies");
    }

    /// A record stored in a cell with its token pending (nothing looked
    /// at its custody) keeps it pending in the guard ([`Kept`]): the
    /// record that fires the cell takes its item into its group, which
    /// commits both items and the tombstone in one message, and no token
    /// is made for it. A record passing the open cell meanwhile makes it
    /// (and joins its group); the drain makes it to park the record.
    #[test]
    fn a_stored_records_pending_token_commits_with_the_firing_group_unmade() {
        let net = node();
        let conn = from_root(7);
        net.opened(Rank::ROOT, conn, true, false);
        let mut g = Guard::new(&net, snet_core::NodeId(4), &Default::default()).expect("a guard");
        let arrive = || arrived(&net, Rank::ROOT, conn, 0);
        // Stored and fired.
        let mut s = arrive();
        assert!(!g.first(&net, 0, &s.det), "no earlier incarnation");
        assert!(g.parked(&net, 0, &s.det).is_empty());
        let kept = s.det.take_kept();
        assert!(matches!(kept, Some(Kept::Pending(p)) if p.id() == 0 && p.conn() == conn));
        assert!(s.det.is_bare());
        g.stored(0, 0, kept);
        drop(s);
        assert_eq!(commits(&net), vec![], "the stored record's item waits");
        let f = arrive();
        g.fired(0, f.det.custody());
        assert_eq!(commits(&net), vec![]);
        drop(f);
        assert_eq!(commits(&net), vec![(vec![0, 1], vec![0])]);
        // Stored, passed while open, fired: the pass made the token.
        let mut s = arrive();
        g.stored(1, 0, s.det.take_kept());
        drop(s);
        let r = arrive();
        g.passed_open(1..=1, r.det.custody());
        drop(r);
        assert_eq!(commits(&net), vec![], "the pass waits for the decision");
        let f = arrive();
        g.fired(1, f.det.custody());
        drop(f);
        assert_eq!(commits(&net), vec![(vec![2, 3, 4], vec![1])]);
        // Stored and drained: parked in its own commit.
        let mut s = arrive();
        g.stored(2, 0, s.det.take_kept());
        let stored = s.rec.clone();
        drop(s);
        g.drain(|key, i| (key == 2 && i == 0).then_some(&stored));
        let out = std::mem::take(&mut lock(&net.state.0).out);
        let got: Vec<(u64, usize, usize)> = out
            .into_iter()
            .filter_map(|o| match o {
                Out::Commit {
                    id, more, parked, ..
                } => Some((id, more.len(), parked.len())),
                _ => None,
            })
            .collect();
        assert_eq!(got, vec![(5, 0, 1)]);
    }

    /// A record passes an open cell because its slot is taken, then goes
    /// on (to the next cell of a star) while the cell fires: the firing
    /// group's tombstone waits for it. (The order the records left the
    /// cell in was fixed by that decision; with the tombstone committed
    /// first, a replay would pass them all at once in any order, and a
    /// later cell could decide on an order the decision rules out.)
    #[test]
    fn a_record_passing_a_taken_slot_holds_back_the_firing_groups_tombstone() {
        let net = node();
        let mut g = Guard::new(&net, snet_core::NodeId(4), &Default::default()).expect("a guard");
        let (s, r) = (token(&net, 1), token(&net, 2));
        g.stored(0, 0, Some(s.into()));
        g.passed_open(0..=0, Some(&r)); // `r`'s record goes on
        let f = token(&net, 3);
        g.fired(0, Some(&f));
        drop(f);
        assert_eq!(commits(&net), vec![], "the decision waits for the pass");
        drop(r);
        assert_eq!(commits(&net), vec![(vec![1, 2, 3], vec![0])]);
    }

    fn cell(key: u64) -> CellId {
        CellId {
            conn: from_root(7),
            cell: snet_core::NodeId(4),
            path: Default::default(),
            key,
        }
    }

    fn rec(n: i64) -> Item {
        let mut r = snet_core::Record::new();
        r.set_int(snet_core::Label::tag("n"), n);
        Item::Rec(crate::entity::Rec {
            rec: r,
            det: crate::entity::Stamps::new(),
            origin: crate::entity::Origin::input(n as u64, None),
        })
    }

    /// Connection `seq` of those node 0 made.
    fn from_root(seq: u64) -> ConnId {
        ConnId {
            origin: Rank::ROOT,
            seq,
        }
    }

    /// Record `n`, arrived at `net` from `from` on `conn` (with the
    /// custody, pending or made, that gives it).
    fn arrived(net: &Net, from: Rank, conn: ConnId, n: i64) -> crate::entity::Rec {
        let mut r = rec(n);
        net.arrived(from, conn, &mut r);
        let Item::Rec(r) = r else {
            unreachable!("a record")
        };
        r
    }

    /// Every commit queued so far: (items, tombstone keys, held records'
    /// `n`), each sorted.
    fn commits_held(net: &Net) -> Vec<(Vec<u64>, Vec<u64>, Vec<i64>)> {
        let mut g = lock(&net.state.0);
        let mut v = Vec::new();
        for o in std::mem::take(&mut g.out) {
            if let Out::Commit {
                id,
                more,
                fired,
                items,
                ..
            } = o
            {
                let mut ids = more.to_vec();
                ids.push(id);
                ids.sort_unstable();
                let mut keys: Vec<u64> = fired.iter().map(|c| c.key()).collect();
                keys.sort_unstable();
                let mut ns: Vec<i64> = items
                    .iter()
                    .filter_map(|(_, i)| match i {
                        Item::Rec(r) => r.rec.int(snet_core::Label::tag("n")),
                        _ => None,
                    })
                    .collect();
                ns.sort_unstable();
                v.push((ids, keys, ns));
            }
        }
        v
    }

    std::thread_local! {
        /// A test thread's rendezvous in a dying root token's drop, once.
        static IN_DROP: std::cell::RefCell<Option<Arc<std::sync::Barrier>>> =
            const { std::cell::RefCell::new(None) };
    }

    /// A root token's drop is about to resolve where its content goes:
    /// on a thread of [`dropped_at_once`], it waits there for the other
    /// threads' (so that every token is dead before any drop resolves).
    pub(super) fn in_drop() {
        if let Some(b) = IN_DROP.with(|b| b.borrow_mut().take()) {
            b.wait();
        }
    }

    /// Drops the tokens after the first `early` at once, one per thread
    /// (the first `early` before, on this thread), many times over, each
    /// thread's dying root token meeting the others' before it resolves:
    /// every item's `Done`, held record and tombstone is committed exactly
    /// once, and no drop waits for another for ever (two tokens that must
    /// each commit with or after the other, dying at the same time, once
    /// waited for each other's drop: a livelock).
    fn dropped_at_once(early: usize, make: impl Fn(&Net) -> Vec<Arc<Token>>) {
        for round in 0..500 {
            let net = node();
            let mut tokens = make(&net);
            let n = tokens.len();
            for (i, t) in tokens.iter().enumerate() {
                t.hold(t.conn(), rec(i as i64 + 1));
            }
            drop(tokens.drain(..early).collect::<Vec<_>>());
            let meet = Arc::new(std::sync::Barrier::new(tokens.len()));
            std::thread::scope(|s| {
                for t in tokens {
                    let meet = meet.clone();
                    s.spawn(move || {
                        IN_DROP.with(|b| *b.borrow_mut() = Some(meet));
                        drop(t);
                    });
                }
            });
            let got = commits_held(&net);
            let mut ids: Vec<u64> = got.iter().flat_map(|c| c.0.clone()).collect();
            let mut keys: Vec<u64> = got.iter().flat_map(|c| c.1.clone()).collect();
            let mut ns: Vec<i64> = got.iter().flat_map(|c| c.2.clone()).collect();
            ids.sort_unstable();
            keys.sort_unstable();
            ns.sort_unstable();
            let all: Vec<u64> = (1..=n as u64).collect();
            assert_eq!(ids, all, "round {round}: {got:?}");
            assert_eq!(keys, all, "round {round}: {got:?}");
            assert_eq!(ns, (1..=n as i64).collect::<Vec<_>>(), "round {round}");
        }
    }

    /// Tokens `1..=n`, token `i` firing cell `i`; `after[j] = (a, b)`:
    /// token `a` commits with or after token `b`'s firing group.
    fn linked(net: &Net, n: u64, after: &[(usize, usize)]) -> Vec<Arc<Token>> {
        let ts: Vec<_> = (1..=n).map(|i| token(net, i)).collect();
        let links: Vec<_> = ts
            .iter()
            .zip(1..)
            .map(|(t, i)| t.link(Some(Tomb::of(&cell(i)))))
            .collect();
        for &(a, b) in after {
            ts[a].after(&links[b]);
        }
        ts
    }

    #[test]
    fn two_tokens_after_each_other_dropped_at_once_commit_once() {
        dropped_at_once(0, |net| linked(net, 2, &[(0, 1), (1, 0)]));
    }

    #[test]
    fn a_cycle_of_three_after_links_dropped_at_once_commits_once() {
        dropped_at_once(0, |net| linked(net, 3, &[(0, 1), (1, 2), (2, 0)]));
    }

    /// A commit's buffer of records, sent and given back (`recycle`), is
    /// the next group's on this thread, empty: that group commits its
    /// own records only; a large one is not kept.
    #[test]
    fn a_sent_commits_buffer_holds_the_next_groups_records_only() {
        std::thread::spawn(|| {
            let net = node();
            let take = |net: &Net| {
                let mut g = lock(&net.state.0);
                let mut v = Vec::new();
                for o in std::mem::take(&mut g.out) {
                    if let Out::Commit { items, .. } = o {
                        v.push(items);
                    }
                }
                v
            };
            let a = token(&net, 1);
            a.hold(a.conn(), rec(1));
            a.hold(a.conn(), rec(2));
            drop(a);
            let mut sent = take(&net);
            assert_eq!(sent.len(), 1);
            let buf = sent.pop().unwrap();
            let at = buf.as_ptr();
            recycle(buf);
            let b = token(&net, 2);
            b.hold(b.conn(), rec(3));
            drop(b);
            let mut sent = take(&net);
            let buf = sent.pop().unwrap();
            assert_eq!(buf.as_ptr(), at, "the buffer given back is used again");
            let ns: Vec<_> = buf
                .iter()
                .filter_map(|(_, i)| match i {
                    Item::Rec(r) => r.rec.int(snet_core::Label::tag("n")),
                    _ => None,
                })
                .collect();
            assert_eq!(ns, [3]);
            recycle(Vec::with_capacity(64));
            let c = token(&net, 3);
            c.hold(c.conn(), rec(4));
            drop(c);
            assert!(take(&net)[0].capacity() <= 8, "a large buffer is not kept");
        })
        .join()
        .unwrap();
    }

    /// Token 2 commits after token 1's firing group, whose root has that
    /// one link: token 1 may not commit without `GROUPS` (the link is
    /// shared), or token 2, dying first, hands it content that is lost.
    #[test]
    fn a_group_one_other_commits_after_dropped_at_once_commits_once() {
        dropped_at_once(0, |net| linked(net, 2, &[(1, 0)]));
    }

    /// A root with one link that no token commits after commits without
    /// `GROUPS` (held here by the test: a drop that takes it waits until
    /// the test gives up); once the link is shared, it takes `GROUPS`.
    #[test]
    fn a_root_whose_link_nobody_shares_commits_without_groups() {
        for shared in [false, true] {
            let net = node();
            let ts = linked(&net, 2, if shared { &[(1, 0)] } else { &[] });
            let mut ts = ts.into_iter();
            let (t, other) = (ts.next().unwrap(), ts.next().unwrap());
            let (tx, rx) = std::sync::mpsc::channel();
            let groups = GROUPS.lock().unwrap_or_else(|e| e.into_inner());
            std::thread::scope(|s| {
                s.spawn(move || {
                    drop(t);
                    let _ = tx.send(());
                });
                let got =
                    rx.recv_timeout(std::time::Duration::from_secs(if shared { 1 } else { 20 }));
                assert_eq!(got.is_ok(), !shared, "shared: {shared}");
                drop(groups);
            });
            drop(other);
            let mut ids: Vec<u64> = commits(&net).into_iter().flat_map(|c| c.0).collect();
            ids.sort_unstable();
            assert_eq!(ids, [1, 2]);
        }
    }

    /// Token 2 is linked below token 1 (a union) and commits after token
    /// 3's group, which commits after token 1's: token 2's drop moves its
    /// content to token 1, whose drop meets token 3's.
    #[test]
    fn a_child_that_commits_after_another_group_dropped_at_once_commits_once() {
        dropped_at_once(1, |net| {
            let ts = linked(net, 3, &[(1, 2), (2, 0)]);
            union(&ts[0], &ts[1]);
            ts
        });
    }

    /// A fired cell's stored token, given up to the firing record's
    /// group (`union_last`): folded in without the union when nobody else
    /// can reach it, by the union when a clone is alive, a link points at
    /// it, or it is in a group already; each time the group commits
    /// every item once, when its last token goes, with the tombstone.
    #[test]
    fn a_stored_token_given_up_joins_the_firing_group_once() {
        let net = node();
        // Nobody else holds it: folded in.
        let (s, t) = (token(&net, 1), token(&net, 2));
        union_last(&t, s);
        assert_eq!(commits(&net), vec![]);
        drop(t);
        assert_eq!(commits(&net), vec![(vec![1, 2], vec![])]);
        // Another record of its item is alive: the group waits for it.
        let (s, t) = (token(&net, 3), token(&net, 4));
        let c = s.clone();
        union_last(&t, s);
        drop(t);
        assert_eq!(commits(&net), vec![]);
        drop(c);
        assert_eq!(commits(&net), vec![(vec![3, 4], vec![])]);
        // It fired a cell of its own (a link points at it): the tombstone
        // goes with the group, and the link is marked committed.
        let (s, t) = (token(&net, 5), token(&net, 6));
        let l = s.link(Some(Tomb::of(&cell(7))));
        union_last(&t, s);
        drop(t);
        assert_eq!(commits(&net), vec![(vec![5, 6], vec![7])]);
        assert!(l.committed());
        // It is below a live token in a group: the firing record joins
        // that whole group, which waits for the live token.
        for first in [true, false] {
            let (p, s, t) = (token(&net, 8), token(&net, 9), token(&net, 10));
            if first {
                union(&p, &s);
            } else {
                union(&s, &p);
            }
            union_last(&t, s);
            drop(t);
            assert_eq!(commits(&net), vec![]);
            drop(p);
            assert_eq!(commits(&net), vec![(vec![8, 9, 10], vec![])]);
        }
    }

    /// A record passes a fired cell whose group has not committed: it
    /// joins that commit; the firing group does not wait for it.
    #[test]
    fn a_record_passing_a_fired_cell_commits_after_the_firing_group() {
        let net = node();
        let mut g = Guard::new(&net, snet_core::NodeId(4), &Default::default()).expect("a guard");
        let (s, f) = (token(&net, 1), token(&net, 2));
        g.stored(9, 0, Some(s.into()));
        g.fired(9, Some(&f));
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

    /// Cells fire in and out of key order (and one fires again): a
    /// record passing a fired cell commits after the newest group that
    /// fired that key, whichever way the guard keeps it (`Firings`: keys
    /// above every earlier one in its ring, the others in its map); a
    /// range of keys reaches the groups of every key in it; a key that
    /// never fired holds nothing back.
    #[test]
    fn a_record_passing_cells_fired_out_of_key_order_commits_after_each_group() {
        let net = node();
        let mut g = Guard::new(&net, snet_core::NodeId(4), &Default::default()).expect("a guard");
        let keys = [5u64, 9, 2, 7];
        let firing: Vec<Arc<Token>> = (0..4).map(|i| token(&net, 10 + i)).collect();
        for (k, f) in keys.iter().zip(&firing) {
            g.fired(*k, Some(f));
        }
        let never = token(&net, 30);
        g.passed(3..=3, Some(&never));
        g.passed(10..=20, Some(&never));
        drop(never);
        assert_eq!(commits(&net), vec![(vec![30], vec![])], "3 never fired");
        for (i, k) in keys.iter().enumerate() {
            let r = token(&net, 20 + i as u64);
            g.passed(*k..=*k, Some(&r));
            drop(r);
        }
        let range = token(&net, 40);
        g.passed(6..=8, Some(&range)); // 7's group only
        drop(range);
        assert_eq!(commits(&net), vec![], "each pass waits for its firing");
        let [f5, f9, f2, f7] = <[Arc<Token>; 4]>::try_from(firing).expect("four");
        drop(f2);
        assert_eq!(commits(&net), vec![(vec![12, 22], vec![2])]);
        drop(f9);
        assert_eq!(commits(&net), vec![(vec![11, 21], vec![9])]);
        drop(f7);
        assert_eq!(commits(&net), vec![(vec![13, 23, 40], vec![7])]);
        drop(f5);
        assert_eq!(commits(&net), vec![(vec![10, 20], vec![5])]);
        // Key 5 fires again (below the highest key fired so far): a pass
        // waits for the new group, not for the committed one.
        let again = token(&net, 50);
        g.fired(5, Some(&again));
        let r = token(&net, 51);
        g.passed(5..=5, Some(&r));
        drop(r);
        assert_eq!(commits(&net), vec![]);
        drop(again);
        assert_eq!(commits(&net), vec![(vec![50, 51], vec![5])]);
        // Every group committed: passes go alone.
        let free = token(&net, 60);
        g.passed(0..=100, Some(&free));
        drop(free);
        assert_eq!(commits(&net), vec![(vec![60], vec![])]);
    }

    /// A fire takes the link of a group that committed and that nobody
    /// else holds (the guard's oldest), reset, for its own group: a
    /// record passing the new cell waits for the new group, whose commit
    /// carries its own tombstone only. A committed link that a record
    /// which passed its cell still holds is not taken.
    #[test]
    fn a_fire_reuses_a_committed_link_nobody_else_holds() {
        let net = node();
        let mut g = Guard::new(&net, snet_core::NodeId(4), &Default::default()).expect("a guard");
        let f = token(&net, 1);
        g.fired(1, Some(&f));
        let first = g.firing_link(1).expect("kept");
        drop(f);
        assert_eq!(commits(&net), vec![(vec![1], vec![1])]);
        let f = token(&net, 2);
        g.fired(2, Some(&f));
        assert_eq!(g.firing_link(1), None, "committed: forgotten");
        assert_eq!(g.firing_link(2), Some(first), "its link taken again");
        let r = token(&net, 3);
        g.passed(2..=2, Some(&r));
        drop(r);
        assert_eq!(commits(&net), vec![], "the pass waits for the new group");
        drop(f);
        assert_eq!(commits(&net), vec![(vec![2, 3], vec![2])]);
        // Committed, but a record that passed the cell holds its link.
        let f = token(&net, 4);
        g.fired(3, Some(&f));
        let held = g.firing_link(3).expect("kept");
        let r = token(&net, 5);
        g.passed(3..=3, Some(&r));
        drop(f);
        assert_eq!(commits(&net), vec![(vec![4], vec![3])]);
        let f = token(&net, 6);
        g.fired(4, Some(&f));
        assert_eq!(g.firing_link(3), None);
        assert_ne!(g.firing_link(4), Some(held), "a new link");
        drop(f);
        drop(r);
        assert_eq!(commits(&net), vec![(vec![6], vec![4]), (vec![5], vec![])]);
    }

    /// Records are stored in cells out of key order: a record passing a
    /// range of open cells joins the groups of the records stored in each
    /// of them, wherever the guard keeps them (`OpenCells`: keys above
    /// every earlier one in its ring, the others in its map), and a fire
    /// takes its cell's stored tokens from either.
    #[test]
    fn records_stored_out_of_key_order_are_found_by_passes_and_fires() {
        let net = node();
        let mut g = Guard::new(&net, snet_core::NodeId(4), &Default::default()).expect("a guard");
        for k in [4u64, 8, 2, 6, 10] {
            g.stored(k, 0, Some(token(&net, 100 + k).into()));
        }
        // A cell above every open one fires with nothing stored: it
        // takes no other cell's record.
        let f = token(&net, 112);
        g.fired(12, Some(&f));
        drop(f);
        assert_eq!(commits(&net), vec![(vec![112], vec![12])]);
        let r = token(&net, 1);
        g.passed_open(3..=8, Some(&r)); // 4, 6 and 8
        drop(r);
        let sorted = |mut v: Vec<(Vec<u64>, Vec<u64>)>| {
            for c in &mut v {
                c.1.sort_unstable();
            }
            v
        };
        for (k, id) in [(8, 18), (4, 14)] {
            let f = token(&net, id);
            g.fired(k, Some(&f));
            drop(f);
            assert_eq!(commits(&net), vec![], "6's record holds the group open");
        }
        let f = token(&net, 16);
        g.fired(6, Some(&f));
        drop(f);
        assert_eq!(
            sorted(commits(&net)),
            vec![(vec![1, 14, 16, 18, 104, 106, 108], vec![4, 6, 8])]
        );
        for (k, id) in [(10, 20), (2, 12)] {
            let f = token(&net, id);
            g.fired(k, Some(&f));
            drop(f);
            assert_eq!(commits(&net), vec![(vec![id, 100 + k], vec![k])]);
        }
        let free = token(&net, 2);
        g.passed_open(0..=100, Some(&free));
        drop(free);
        assert_eq!(commits(&net), vec![(vec![2], vec![])], "nothing is open");
    }

    /// A cell that stays open while a hundred cells after it are stored
    /// in and fire: the guard keeps no entry per fired cell (the holes
    /// fires leave behind the open one are cleared), and the open cell's
    /// record is still found.
    #[test]
    fn an_open_cell_keeps_no_entry_per_later_fire() {
        let net = node();
        let mut g = Guard::new(&net, snet_core::NodeId(4), &Default::default()).expect("a guard");
        g.stored(0, 0, Some(token(&net, 1000).into()));
        for k in 1..=100u64 {
            g.stored(k, 0, Some(token(&net, k).into()));
            let f = token(&net, 200 + k);
            g.fired(k, Some(&f));
            drop(f);
        }
        assert_eq!(commits(&net).len(), 100);
        assert!(g.open_entries() <= 20, "{} entries", g.open_entries());
        let r = token(&net, 2000);
        g.passed_open(0..=0, Some(&r));
        drop(r);
        let f = token(&net, 3000);
        g.fired(0, Some(&f));
        drop(f);
        assert_eq!(commits(&net), vec![(vec![1000, 2000, 3000], vec![0])]);
    }

    /// The parked records of the commits queued so far: (cell key, slot,
    /// the record's tag `k`), the queue left as it was.
    fn parked(net: &Net) -> Vec<(u64, u64, Option<i64>)> {
        let g = lock(&net.state.0);
        let k = snet_core::Label::tag("custody-parked");
        let mut v = Vec::new();
        for o in &g.out {
            if let Out::Commit { parked, .. } = o {
                for (c, slot, r) in parked {
                    let k = match r.rec.get(k) {
                        Some(snet_core::Value::Int(k)) => Some(*k),
                        _ => None,
                    };
                    v.push((c.key, *slot, k));
                }
            }
        }
        v
    }

    /// The end of the stream: a stored record's group commits when node 0
    /// asks the node to drain, with the record parked (its cell, slot and
    /// contents, for node 0 to keep); a record stored after the drain (a
    /// feedback loop brought it back) keeps its token, and the next drain
    /// parks it too. A record that fires a cell whose slot holds a parked
    /// record joins no group of it.
    #[test]
    fn a_drain_parks_stored_records_and_commits_their_groups() {
        let net = node();
        let rec = |k: i64| {
            let mut r = snet_core::Record::new();
            r.set_int(snet_core::Label::tag("custody-parked"), k);
            r
        };
        let mut g = Guard::new(&net, snet_core::NodeId(4), &Default::default()).expect("a guard");
        // The cells' slots, as the cell entity keeps them: (key, slot).
        let mut cells = std::collections::HashMap::new();
        let (s, r) = (token(&net, 1), token(&net, 2));
        cells.insert((0, 0), rec(10));
        g.stored(0, 0, Some(s.into()));
        g.passed_open(0..=0, Some(&r));
        drop(r);
        assert_eq!(commits(&net), vec![]);
        g.drain(|key, i| cells.get(&(key, i)));
        assert_eq!(parked(&net), vec![(0, 0, Some(10))]);
        assert_eq!(commits(&net), vec![(vec![1, 2], vec![])]);
        // Back round the loop: stored in another cell, with its token.
        let t = token(&net, 3);
        cells.insert((5, 1), rec(11));
        g.stored(5, 1, Some(t.into()));
        assert_eq!(
            commits(&net),
            vec![],
            "a store after the drain keeps its token"
        );
        g.drain(|key, i| cells.get(&(key, i)));
        assert_eq!(parked(&net), vec![(5, 1, Some(11))]);
        assert_eq!(commits(&net), vec![(vec![3], vec![])]);
        // A record fires cell 0 (slot 0 parked): its own group, the tombstone.
        let f = token(&net, 4);
        g.fired(0, Some(&f));
        drop(f);
        assert_eq!(commits(&net), vec![(vec![4], vec![0])]);
    }
}
