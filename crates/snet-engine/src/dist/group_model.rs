//! A model of the custody-group protocol that lets a lost node's
//! synchrocell be restored (ARCHITECTURE.md, "Surviving a lost node",
//! "The model of the slice with synchrocells"), and an explorer over it:
//! every interleaving of every message and every step of node `k`, with
//! node `k` lost at every step (or never) and replaced.
//!
//! The slice is the one the engine builds (`custody.rs`): node 0 is the
//! only sender to node `k`, and `k` sends only back to node 0. The
//! network on `k`:
//!
//! ```text
//!   node 0: input i -> node k                (logged until k's Done)
//!   node k: input i -> box -> path 0 or 1    (two FIFO paths of any
//!                                             relative speed: a race)
//!           paths -> [| {a}, {b} |]          (cell instance 0 or 1,
//!                                             by the input's tag)
//!           -> node 0                         (held, then committed)
//!   node 0: writes what arrives               (the output)
//! ```
//!
//! Each input record names the records its box makes (`a`s and `b`s),
//! the path they take and the cell instance each goes to (a split by
//! tag, `[| {a}, {b} |] ! <t>`: one instance per value). The paths race into
//! the cells: a cell stores the first `a` and the first `b` to reach it
//! and merges them into `J(a, b)`; every other record passes (because
//! its slot is taken, or because the cell has fired). Within a path,
//! order is kept (a FIFO), so which record a slot stores is constrained:
//! an `a` behind another `a` on the same path can never be the stored
//! one. That constraint is what makes a wrongly replayed decision
//! *visible* in the output multiset. In *chain* form (`Model::chain`)
//! the two instances are the first two of a star's unfolding,
//! `[| {a}, {b} |] * {a, b}`: what passes instance 0 goes on, in order,
//! to instance 1, merged records leave, and what passes instance 1
//! leaves (the model's bound on the unfolding).
//!
//! **The protocol** (the design of issue 40's custody groups):
//! * node 0 logs every item it sends to `k` until a `Done` for it comes;
//! * `k` gives each item a token; derived records carry it; a record for
//!   node 0 is *held* by its token (not sent);
//! * tokens form union-find groups: a token has an optional parent (the
//!   child keeps its parent alive). A token's count is the records that
//!   carry it (on a path or in a slot: a stored record keeps its token
//!   alive) plus its live children. When the count reaches 0 the token
//!   is *dying*; its drop, a separate step (the window between an
//!   `Arc`'s count reaching 0 and its `Drop` running), moves its `Done`s,
//!   held records and tombstones into its parent (a non-root), or commits
//!   them all in ONE message to node 0 (a root);
//! * firing unions the slot records' tokens, adds the merged record and
//!   the tombstone `Fired(cell)` to the group, and points the cell's
//!   *firing link* at the slot-`a` record's token. A *link* to a group
//!   follows its content: a token's drop that moves the content on
//!   re-points the links at it, a root's commit marks them committed in
//!   the same step as it queues the commit;
//! * a record that passes a cell shows a decision: the slot record's
//!   (its slot is taken) or the firing group's (the cell has fired; once
//!   that group has committed, the record passes freely). [`Design`]
//!   says how it is tied to it: `Union` (the lead's sketch) unions the
//!   groups, a pass after firing waiting while the link's target is in
//!   its drop window; `After` (as built: i40-state's design item 5)
//!   gives the passing record's token an `after` link to the decision's
//!   group, and a token with no parent, when its drop runs, moves into
//!   the first group it is linked `after` that has not committed (if
//!   that group's token is itself in its drop window, into that token,
//!   whose drop carries it on), else commits (after the decision, on the
//!   same FIFO). `AfterSpin` (as first built) waits instead, and is
//!   caught stuck. `After` is unsound for cells in a row (a star): a
//!   record that passed the first cell before it fired must be in the
//!   firing group, or the group's tombstone commits before that record
//!   has been through the second cell, and a replay passes records
//!   through the fired first cell in an order its decision rules out
//!   (`group_model_after_links_on_slot_passes_lose_a_stars_order`).
//!   `Hybrid` unions on a pass by a taken slot and links `after` on a
//!   pass after firing: it passes every search `Union` passes. Neither
//!   is sound for two cells fed by one race (their decisions are
//!   correlated through the race's order, their groups commit
//!   independently): `group_model_two_cells_fed_by_one_race_are_a_known_flaw`.
//!   `HybridFifo` adds an `after` link from each record reaching the
//!   cells to the record ahead of it on its path, the fix, checked by
//!   `group_model_path_links_restore_cells_fed_by_one_race` and (much
//!   further) `group_model_fifo_commits_candidate` (`--ignored`);
//!   `HybridFifoMerged` is it as the engine builds it
//!   (`custody::PathLast`): the paths race into a merged FIFO stream
//!   that feeds the cells, and the link is made where a record leaves
//!   its path into it. Dropping the links (`Mutation::NoPathLink`) is
//!   caught;
//! * which root goes under which in a union is left open: the explorer
//!   takes both (so union by rank, or any other rule, is covered); a
//!   union, and a token's drop, are each one atomic step (in the
//!   engine, under one lock);
//! * a cell's identity is structural (its tag value: the same on the
//!   replacement whatever order replay brings records in);
//! * node 0, on a commit, retires the items, writes the records and
//!   keeps the tombstones for the run;
//! * when node 0 learns that `k` is lost it drops what `k`'s old
//!   incarnation had sent and it had not yet taken (any suffix: the
//!   explorer delivers any prefix first), starts a fresh `k` and sends
//!   it the tombstones first, then its unretired log in order; a cell
//!   instance made on the replacement whose identity has a tombstone
//!   starts fired;
//! * the end of the stream, as built (`Net::ask_drain`): when all is
//!   quiescent (input all sent, no message on its way, `k` idle: the
//!   engine's credit all back at node 0) and the log is not empty, node
//!   0 asks `k` to `Drain`, once per change of its count of `Done`s (a
//!   replacement counts as a change); an unfired cell then drops its
//!   stored records' tokens (their groups commit without those records).
//!   Node 0 ends the run when quiescent with the log empty or when the
//!   last drain changed nothing;
//! * **parked records** (the drain as built since issue 40's loop
//!   placement): the drain hands each record an unfired cell stores to
//!   node 0 in its token's group (`parked`: the cell's identity and the
//!   record) and the record stays in its slot, keeping no token; later
//!   stores keep their tokens as before. Node 0 keeps a cell's parked
//!   records until the cell's tombstone comes, and sends a replacement
//!   the tombstones, then the parked records, then its log; an instance
//!   the replacement makes starts fired (tombstone) or with its parked
//!   records in their slots. A record that passes a parked record's
//!   taken slot joins no group and a record firing a cell with a parked
//!   record unions only with the live slots' groups: the parked record's
//!   slot is taken in every incarnation from then on (node 0 holds it),
//!   so the pass is the same decision in any replay, and a fire's
//!   tombstone commits with the merged record, which ends the parked
//!   records' story. This is what lets a *feedback loop on node 0 round
//!   the placement* (`Input::back`: a record that leaves unmerged comes
//!   back as a new item) bring a record released by the drain back to a
//!   drained cell: without parking (`Mutation::NoParking`, the first
//!   drain) a loss after that fire and before its commit replays the
//!   returning record into a cell that has lost its stored record.
//!
//! Checked at every state the explorer reaches:
//! * **exact output**: when node 0 ends the run, its output (a multiset)
//!   is one that some failure-free run of the network gives
//!   ([`semantics`], computed from the network, not from the protocol);
//!   that covers records lost or written twice;
//! * **no hang**: a state with nothing left to do is one where node 0
//!   has ended the run;
//! * **nothing left behind**: the log is empty at the end (only the
//!   tombstones are kept), and no `Done` names an item not in the log.
//!
//! [`Mutation`] names protocol changes, each a plausible shortcut or
//! slip; `group_model_every_mutation_is_caught` shows a violation and its
//! trace for each.
//!
//! States are told apart by a 64-bit hash of the whole state (tokens
//! renumbered after each step, dead ones forgotten), as in
//! `replay_model`. Not modelled: a loss of node 0, fields, poison
//! records (a replay that kills `k` again is just another loss: the
//! searches take up to three), credit amounts (quiescence is read off
//! the state), a star unfolding past two instances, records that cross
//! nodes other than 0 and `k`.

use std::collections::hash_map::DefaultHasher;
use std::collections::{BTreeSet, VecDeque};
use std::hash::{Hash, Hasher};

use super::explorer::{self, Space};

/// A protocol change the model must catch.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Mutation {
    /// The protocol as designed.
    None,
    /// A record that passes because its slot is taken is not tied to
    /// the slot record's group (no union; under `After`, no link).
    NoUnionOnSlotPass,
    /// A record that passes a fired cell is not tied to the firing group
    /// (before that group has committed).
    NoUnionOnFiredPass,
    /// A link keeps a `Weak` to a token (not re-pointed when that token
    /// moves its content on) and a failed upgrade after the token's drop
    /// is taken to mean "committed": but a token that was linked under a
    /// parent has moved its content there, still to commit. (Under
    /// `Union` a pass in the drop window waits, as designed; under
    /// `After` a drop takes a target in its window as committed too.)
    WeakUpgradeMeansCommitted,
    /// Links are re-pointed and marked as designed, but a target in its
    /// drop window (its count reached 0, its drop has not run) is taken
    /// as committed (by a pass under `Union`, by a drop under `After`).
    DyingMeansCommitted,
    /// No tombstone: the firing group commits without `Fired`, so the
    /// replacement's cell starts unfired.
    NoTombstone,
    /// A non-root token whose count reaches 0 commits its own content
    /// instead of moving it into its parent (commits are not atomic per
    /// group).
    NonAtomicCommit,
    /// On replacement node 0 sends the tombstone after the replayed
    /// records, not before.
    TombstonesAfterRecords,
    /// A group's `Done`s (and tombstone) go in one message and its held
    /// records in the next.
    DoneBeforeHeld,
    /// A record stored in a slot does not keep its token alive.
    StoreDropsToken,
    /// A cell's identity (what its tombstone names) is the order in
    /// which the node made its instances, not a structural path: the
    /// replacement makes them in the order replay brings records.
    CounterIdentity,
    /// Node 0 takes the old incarnation's messages it had not taken
    /// when it replaced `k` (instead of dropping them).
    OldIncarnationDelivered,
    /// The end of the stream does not release an unfired cell's stored
    /// records (their tokens): no `Drain`.
    NoDrain,
    /// Node 0 does not ask a replacement to drain again when its count
    /// of `Done`s has not changed since it asked the lost incarnation.
    DrainNotAskedAgain,
    /// (`HybridFifo`, `HybridFifoMerged`) A record leaving its path is
    /// not linked after the record ahead of it there: the path links
    /// are dropped.
    NoPathLink,
    /// The drain as first built: an unfired cell drops its stored
    /// records' tokens and keeps the records, but hands node 0 nothing
    /// (no parked records); a record coming back round a feedback loop
    /// on node 0 can then fire the cell with a record no replacement
    /// gets back.
    NoParking,
    /// Node 0 keeps parked records but does not send them to a
    /// replacement.
    ParkedNotSent,
    /// After a drain, a cell stores records without keeping their tokens
    /// (the engine's first drain: "cells store without custody"); a
    /// record stored after the drain (one that came back round the
    /// loop) is then neither protected nor parked.
    UntokenedStoreAfterDrain,
    /// (Under `chain`) A star's cell instance that a replacement makes
    /// starts empty: the records the drain parked there are not put back
    /// in its slots (the engine's fused star `[| .. |] * p` before it
    /// restored them: it made its chain positions as records reached
    /// them, each empty or fired).
    ChainParkedNotRestored,
}

impl Mutation {
    pub(crate) const ALL: [Mutation; 17] = [
        Mutation::NoUnionOnSlotPass,
        Mutation::NoUnionOnFiredPass,
        Mutation::WeakUpgradeMeansCommitted,
        Mutation::DyingMeansCommitted,
        Mutation::NoTombstone,
        Mutation::NonAtomicCommit,
        Mutation::TombstonesAfterRecords,
        Mutation::DoneBeforeHeld,
        Mutation::StoreDropsToken,
        Mutation::CounterIdentity,
        Mutation::OldIncarnationDelivered,
        Mutation::NoDrain,
        Mutation::DrainNotAskedAgain,
        Mutation::NoParking,
        Mutation::ParkedNotSent,
        Mutation::UntokenedStoreAfterDrain,
        Mutation::ChainParkedNotRestored,
    ];
}

/// What a box makes: a record matching the cell's first pattern (`a`)
/// or its second (`b`).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Kind {
    A,
    B,
}

/// One input record: the records node `k`'s box makes from it, in
/// order, each with the cell instance it goes to (the value of the tag a
/// split `!` sends it by: a cell per value), and the path they take.
#[derive(Clone, Debug)]
pub(crate) struct Input {
    pub recs: Vec<(Kind, u8)>,
    pub path: u8,
    /// A feedback loop on node 0 round the placement: a record of this
    /// input that leaves `k` unmerged is not written but goes back round
    /// as input `back` (whose `looped` is set).
    pub back: Option<u8>,
    /// Sent only when a record comes back round the loop (never from the
    /// outside); such inputs come after the others.
    pub looped: bool,
}

/// How a record that passes a cell is tied to the decision it shows.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Design {
    /// The lead's sketch: the passing record's group is unioned with
    /// the decision's group (a pass after firing waits while the firing
    /// link's target is in its drop window).
    Union,
    /// As built (i40-state, design item 5): the passing record's token
    /// gets an `after` link to the decision's group; when its group is
    /// ready to commit it moves into the first linked group that has not
    /// committed (commits with it), else commits alone (after it). A
    /// drop whose linked group's token is itself in its drop window
    /// moves into that token, whose drop carries it on.
    After,
    /// `After` as first built: such a drop waits for the other token's
    /// drop to move on or commit; two tokens linked `after` each other
    /// and dropped at once wait for each other for ever.
    AfterSpin,
    /// A pass because a slot is taken unions (as `Union`); a pass after
    /// firing links `after` the firing group (as `After`).
    Hybrid,
    /// `Hybrid` with the waiting drop of `AfterSpin`.
    HybridSpin,
    /// `Hybrid`, and a record reaching the cells from a path commits
    /// with or after the record ahead of it on that path (an `after`
    /// link): the fix for cells fed by one race.
    HybridFifo,
    /// `HybridFifo` as the engine builds it (`dist::custody::PathLast`):
    /// the link is made where a record leaves its path into the merge
    /// (a stream of its own, FIFO, which then feeds the cells), not
    /// where it reaches a cell.
    HybridFifoMerged,
}

impl Design {
    /// Does a pass by a taken slot union with the slot record's group?
    fn unions_slot_pass(self) -> bool {
        matches!(
            self,
            Design::Union
                | Design::Hybrid
                | Design::HybridSpin
                | Design::HybridFifo
                | Design::HybridFifoMerged
        )
    }

    /// Do the paths race into a merged stream before the cells?
    fn merges(self) -> bool {
        self == Design::HybridFifoMerged
    }

    /// Does a pass after firing union with the firing group?
    fn unions_fired_pass(self) -> bool {
        self == Design::Union
    }
}

/// The label of a loss step.
const LOSS: &str = "k is lost";

/// Cell instances (tag values) a network may use.
const CELLS: usize = 2;

/// A record, named by the input it derives from.
#[derive(Clone, Debug, Hash, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Val {
    A(u8),
    B(u8),
    /// The merged record: the inputs of the stored `a` and `b`.
    J(u8, u8),
}

#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq)]
enum Life {
    Live,
    /// Its count reached 0; its drop has not run yet.
    Dying,
    Dead,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq)]
struct Tok {
    /// For traces: the input the token was made for (`u8::MAX`: none).
    name: u8,
    parent: Option<u8>,
    /// Items whose `Done` this token carries.
    dones: Vec<u8>,
    /// Records for node 0 it holds.
    held: Vec<Val>,
    /// Tombstones: the identities of the cells this group fired.
    tomb: Vec<u8>,
    /// Records a drain parked: (cell identity, record).
    parked: Vec<(u8, Val)>,
    /// Links to the groups this one commits with or after (`After`).
    after: Vec<u8>,
    life: Life,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq)]
struct Rec {
    val: Val,
    tok: u8,
    cell: u8,
}

/// A link to a group (the engine's `Link`): the token its content is
/// at (`None`: that token died, which only the `Weak` mutation lets
/// happen uncommitted), and whether the group has committed. A token's
/// drop that moves its content on re-points the links at it; a root's
/// commit marks them.
#[derive(Clone, Debug, Hash, PartialEq, Eq, Default)]
struct Link {
    target: Option<u8>,
    committed: bool,
}

/// A synchrocell instance.
#[derive(Clone, Debug, Hash, PartialEq, Eq, Default)]
struct Cell {
    /// Once a record has reached it (the instance exists): its number
    /// in the order this node made instances.
    made: Option<u8>,
    slots: [Option<Rec>; 2],
    /// Links to the stored records' groups (`After`).
    slot_links: [Option<u8>; 2],
    fired: bool,
    /// The firing link (into `NodeK::links`), once fired.
    link: Option<u8>,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, Default)]
struct NodeK {
    alive: bool,
    /// The two paths to the cells, (under `chain`) the stream from
    /// instance 0 to instance 1, and (under `HybridFifoMerged`) the merged
    /// stream the two paths race into before it reaches the cells.
    /// cell instance 0 to instance 1.
    paths: [VecDeque<Rec>; 4],
    cells: [Cell; CELLS],
    /// Instances made so far.
    made: u8,
    /// Tombstones received: an instance with one of these identities
    /// starts fired.
    tombs: Vec<u8>,
    toks: Vec<Tok>,
    links: Vec<Link>,
    /// `HybridFifo`: per path, a link to the group of the last record
    /// that reached the cells from it.
    path_last: [Option<u8>; 2],
    /// Parked records node 0 sent a replacement: (cell identity, the
    /// record); an instance made with that identity starts with them in
    /// its slots, keeping no token.
    parked: Vec<(u8, Val)>,
    /// This incarnation has been asked to drain.
    drained: bool,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq)]
enum ToK {
    Item(u8),
    Fired(u8),
    /// A record an earlier incarnation's drain parked in cell `.0`.
    Parked(u8, Val),
    Drain,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq)]
enum To0 {
    Commit {
        dones: Vec<u8>,
        held: Vec<Val>,
        tomb: Vec<u8>,
        parked: Vec<(u8, Val)>,
    },
}

#[derive(Clone, Debug, Hash, PartialEq, Eq)]
pub(crate) struct State {
    k: NodeK,
    to_k: VecDeque<ToK>,
    to_0: VecDeque<To0>,
    next_input: u8,
    /// `Done`s node 0 has taken (the engine's `Log::dones`).
    dones: u16,
    /// `dones` when node 0 last asked `k` to drain (`Log::drained_at`).
    drained_at: Option<u16>,
    /// Node 0's log toward `k`: unretired items, in send order.
    log: Vec<u8>,
    /// The tombstones `Fired(cell)` node 0 holds (sorted).
    tomb: Vec<u8>,
    /// Records `k`'s drains parked, by cell identity (sorted), until the
    /// cell's tombstone comes.
    parked: Vec<(u8, Val)>,
    /// Kept sorted: a multiset.
    output: Vec<Val>,
    losses: u8,
    /// `k` is lost and node 0 has not replaced it yet.
    lost: bool,
    done: bool,
    broken: Option<String>,
}

/// How an exploration went.
pub(crate) type Explored = super::explorer::Explored<Val>;

pub(crate) struct Model {
    pub inputs: Vec<Input>,
    pub mutation: Mutation,
    /// How many times node `k` may be lost in one run.
    pub max_losses: u8,
    /// The cells form a chain, as a star `[| {a}, {b} |] * {a, b}`
    /// unfolds: what passes instance 0 goes on to instance 1 (in
    /// order), a merged record leaves; what passes instance 1 leaves
    /// (the model's bound on the unfolding). Every input goes to
    /// instance 0.
    pub chain: bool,
    pub design: Design,
}

/// What S-Net allows the network to write for `inputs`, as sorted
/// multisets: every interleaving of the two paths' records into their
/// cells, each of which stores the first `a` and the first `b` to reach
/// it, merges them, and passes everything else; an unfired cell's
/// records are dropped at the end of the stream. A record of an input
/// with a loop (`Input::back`) that leaves unmerged goes back round: its
/// loop input joins the stream at any moment after (the feedback loop's
/// merge on node 0 races the outside input and the back edge).
pub(crate) fn semantics(inputs: &[Input], chain: bool) -> BTreeSet<Vec<Val>> {
    /// Per cell: its slots (input numbers) and whether it fired.
    type Cells = [([Option<u8>; 2], bool); CELLS];
    #[derive(Clone, Hash, PartialEq, Eq)]
    struct St {
        /// The next outside input.
        next: usize,
        /// Loop inputs that came back round and have not entered yet.
        pending: Vec<u8>,
        paths: [VecDeque<(Val, usize)>; 2],
        cells: Cells,
        out: Vec<Val>,
    }
    /// Record `v` reaches cell `c`: what leaves the network goes to
    /// `out` or back round (under `chain`, what passes instance 0 goes
    /// on to 1).
    fn cell(inputs: &[Input], st: &mut St, c: usize, v: &Val, chain: bool) {
        let (slot, i) = match v {
            Val::A(i) => (0, *i),
            Val::B(i) => (1, *i),
            Val::J(..) => unreachable!("no merged record reaches a cell"),
        };
        let (slots, fired) = st.cells[c];
        if !fired && slots[slot].is_none() {
            st.cells[c].0[slot] = Some(i);
            if let [Some(a), Some(b)] = st.cells[c].0 {
                st.cells[c] = ([None, None], true);
                st.out.push(Val::J(a, b));
            }
        } else if chain && c == 0 {
            cell(inputs, st, 1, v, chain);
        } else if let Some(j) = inputs[i as usize].back {
            st.pending.push(j);
        } else {
            st.out.push(v.clone());
        }
    }
    fn enter(inputs: &[Input], st: &mut St, i: usize, chain: bool) {
        let inp = &inputs[i];
        for (kind, cell) in &inp.recs {
            let v = match kind {
                Kind::A => Val::A(i as u8),
                Kind::B => Val::B(i as u8),
            };
            let cell = if chain { 0 } else { *cell as usize };
            st.paths[inp.path as usize].push_back((v, cell));
        }
    }
    let outside = inputs.iter().filter(|i| !i.looped).count();
    let mut all = BTreeSet::new();
    let mut seen = std::collections::HashSet::new();
    let mut stack = vec![St {
        next: 0,
        pending: Vec::new(),
        paths: Default::default(),
        cells: Default::default(),
        out: Vec::new(),
    }];
    while let Some(mut st) = stack.pop() {
        st.out.sort();
        st.pending.sort();
        if !seen.insert(st.clone()) {
            continue;
        }
        let mut moved = false;
        if st.next < outside {
            let mut s = st.clone();
            s.next += 1;
            enter(inputs, &mut s, st.next, chain);
            stack.push(s);
            moved = true;
        }
        for (n, &j) in st.pending.iter().enumerate() {
            let mut s = st.clone();
            s.pending.remove(n);
            enter(inputs, &mut s, j as usize, chain);
            stack.push(s);
            moved = true;
        }
        for p in 0..2 {
            let mut s = st.clone();
            let Some((v, c)) = s.paths[p].pop_front() else {
                continue;
            };
            cell(inputs, &mut s, c, &v, chain);
            stack.push(s);
            moved = true;
        }
        if !moved {
            all.insert(st.out);
        }
    }
    all
}

impl NodeK {
    fn fresh() -> NodeK {
        NodeK {
            alive: true,
            ..NodeK::default()
        }
    }

    fn find(&self, mut t: u8) -> u8 {
        while let Some(p) = self.toks[t as usize].parent {
            t = p;
        }
        t
    }

    /// Links one of the roots of `x` and `y` under the other (`dir`
    /// chooses which); returns the root of the union.
    fn union(&mut self, x: u8, y: u8, dir: bool, note: &mut String) -> u8 {
        let (rx, ry) = (self.find(x), self.find(y));
        if rx == ry {
            return rx;
        }
        let (child, parent) = if dir { (rx, ry) } else { (ry, rx) };
        self.toks[child as usize].parent = Some(parent);
        note.push_str(&format!(
            ", t{} linked under t{}",
            self.toks[child as usize].name, self.toks[parent as usize].name
        ));
        parent
    }

    fn count(&self, t: u8, mutation: Mutation) -> usize {
        let recs = self.paths.iter().flatten().filter(|r| r.tok == t).count();
        let stored = if mutation == Mutation::StoreDropsToken {
            0
        } else {
            self.cells
                .iter()
                .flat_map(|c| c.slots.iter().flatten())
                .filter(|r| r.tok == t)
                .count()
        };
        let children = self
            .toks
            .iter()
            .filter(|c| c.parent == Some(t) && c.life != Life::Dead)
            .count();
        recs + stored + children
    }

    /// Marks every live token whose count is 0 as dying (the moment the
    /// last `Arc` goes), and forgets dead tokens, renumbering the rest so
    /// that equal states look equal.
    fn settle(&mut self, mutation: Mutation) {
        for t in 0..self.toks.len() {
            if self.toks[t].life == Life::Live && self.count(t as u8, mutation) == 0 {
                self.toks[t].life = Life::Dying;
            }
        }
        if self.toks.iter().all(|t| t.life != Life::Dead) {
            self.forget_links();
            return;
        }
        let mut map = vec![None; self.toks.len()];
        let mut n = 0u8;
        for (i, t) in self.toks.iter().enumerate() {
            if t.life != Life::Dead {
                map[i] = Some(n);
                n += 1;
            }
        }
        let re = |t: u8| map[t as usize];
        for r in self.paths.iter_mut().flatten() {
            r.tok = re(r.tok).expect("a record's token is alive");
        }
        for c in &mut self.cells {
            for r in c.slots.iter_mut().flatten() {
                // Under `StoreDropsToken` a stored record's token may die;
                // the record keeps a dangling name (it never commits again).
                if r.tok != u8::MAX {
                    r.tok = re(r.tok).unwrap_or(u8::MAX);
                }
            }
        }
        for l in &mut self.links {
            l.target = l.target.and_then(re);
        }
        self.toks.retain(|t| t.life != Life::Dead);
        for t in &mut self.toks {
            t.parent = t
                .parent
                .map(|p| re(p).expect("a parent outlives its children"));
        }
        self.forget_links();
    }

    /// Forgets links nothing refers to (and committed ones in `after`
    /// lists: they no longer hold anything back), renumbering the rest.
    fn forget_links(&mut self) {
        let links = &self.links;
        for t in &mut self.toks {
            t.after.retain(|&l| !links[l as usize].committed);
        }
        let mut used = vec![false; self.links.len()];
        for c in &self.cells {
            for l in c.slot_links.iter().flatten().chain(c.link.iter()) {
                used[*l as usize] = true;
            }
        }
        for l in self.path_last.iter_mut() {
            if l.is_some_and(|l| links[l as usize].committed) {
                *l = None;
            }
        }
        for l in self.path_last.iter().flatten() {
            used[*l as usize] = true;
        }
        for t in &self.toks {
            for l in &t.after {
                used[*l as usize] = true;
            }
        }
        if used.iter().all(|u| *u) {
            return;
        }
        let mut map = vec![None; used.len()];
        let mut n = 0u8;
        for (i, u) in used.iter().enumerate() {
            if *u {
                map[i] = Some(n);
                n += 1;
            }
        }
        let re = |l: u8| map[l as usize].expect("a used link");
        for c in &mut self.cells {
            for l in c.slot_links.iter_mut().flatten().chain(c.link.iter_mut()) {
                *l = re(*l);
            }
        }
        for l in self.path_last.iter_mut().flatten() {
            *l = re(*l);
        }
        for t in &mut self.toks {
            for l in &mut t.after {
                *l = re(*l);
            }
            t.after.dedup();
        }
        let mut i = 0;
        self.links.retain(|_| {
            i += 1;
            used[i - 1]
        });
    }

    /// For traces: where link `l` is at.
    fn at(&self, l: u8) -> String {
        match self.links[l as usize].target {
            Some(t) => format!("t{}", self.toks[t as usize].name),
            None => "nothing".to_string(),
        }
    }

    fn new_link(&mut self, target: Option<u8>, committed: bool) -> u8 {
        self.links.push(Link { target, committed });
        (self.links.len() - 1) as u8
    }
}

impl Model {
    fn initial(&self) -> State {
        State {
            k: NodeK::fresh(),
            to_k: VecDeque::new(),
            to_0: VecDeque::new(),
            next_input: 0,
            dones: 0,
            drained_at: None,
            log: Vec::new(),
            tomb: Vec::new(),
            parked: Vec::new(),
            output: Vec::new(),
            losses: 0,
            lost: false,
            done: false,
            broken: None,
        }
    }

    /// The inputs node 0 sends from the outside (the others come back
    /// round the loop).
    fn n(&self) -> u8 {
        self.inputs.iter().filter(|i| !i.looped).count() as u8
    }

    fn send_k(st: &mut State, m: ToK) {
        if st.k.alive {
            st.to_k.push_back(m);
        }
    }

    /// Node `k` takes the next message from node 0.
    fn deliver_k(&self, st: &mut State) {
        let Some(m) = st.to_k.pop_front() else {
            return;
        };
        let k = &mut st.k;
        match m {
            ToK::Item(i) => {
                let t = k.toks.len() as u8;
                k.toks.push(Tok {
                    name: i,
                    parent: None,
                    dones: vec![i],
                    held: Vec::new(),
                    tomb: Vec::new(),
                    parked: Vec::new(),
                    after: Vec::new(),
                    life: Life::Live,
                });
                let inp = &self.inputs[i as usize];
                for (kind, cell) in &inp.recs {
                    let val = match kind {
                        Kind::A => Val::A(i),
                        Kind::B => Val::B(i),
                    };
                    k.paths[inp.path as usize].push_back(Rec {
                        val,
                        tok: t,
                        cell: if self.chain { 0 } else { *cell },
                    });
                }
            }
            // The tombstone: a cell instance with this identity made
            // from now on starts fired, its group committed. An instance
            // made before it came (only when tombstones come late) does
            // not change.
            ToK::Fired(id) => {
                if !k.tombs.contains(&id) {
                    k.tombs.push(id);
                    k.tombs.sort();
                }
            }
            ToK::Parked(id, v) => k.parked.push((id, v)),
            // `Drain` (sent only when all is quiescent): an unfired
            // cell's stored records no longer keep their tokens; each is
            // handed to node 0 in its token's group (parked), and stays
            // in its slot. (The engine hands each cell entity a `Wake`,
            // on which the cell parks its own records, `Guard::drain`:
            // one step here, since the node is quiescent at the `Drain`
            // and anything that reaches a cell afterwards comes behind
            // its `Wake`, so each cell parks what it holds now; groups
            // commit as their last tokens drop, in either order.)
            ToK::Drain => {
                k.drained = true;
                for c in 0..CELLS {
                    if k.cells[c].fired || self.mutation == Mutation::NoDrain {
                        continue;
                    }
                    let id = self.cell_id(k, c);
                    k.cells[c].slot_links = [None, None];
                    for slot in 0..2 {
                        let Some(r) = &mut k.cells[c].slots[slot] else {
                            continue;
                        };
                        let t = std::mem::replace(&mut r.tok, u8::MAX);
                        if t != u8::MAX && self.mutation != Mutation::NoParking {
                            let v = r.val.clone();
                            k.toks[t as usize].parked.push((id, v));
                        }
                    }
                }
            }
        }
        k.settle(self.mutation);
    }

    /// The identity of cell instance `c` (made), as tombstones name it:
    /// the structural one (its tag value), or under `CounterIdentity`
    /// the order in which this node made it.
    fn cell_id(&self, k: &NodeK, c: usize) -> u8 {
        match self.mutation {
            Mutation::CounterIdentity => k.cells[c].made.unwrap_or(u8::MAX),
            _ => c as u8,
        }
    }

    /// Makes cell instance `c` if no record has reached it yet: fired
    /// already if a tombstone names it.
    fn make_cell(&self, k: &mut NodeK, c: usize) {
        if k.cells[c].made.is_some() {
            return;
        }
        k.cells[c].made = Some(k.made);
        k.made += 1;
        let id = self.cell_id(k, c);
        if k.tombs.contains(&id) {
            k.cells[c].fired = true;
            k.cells[c].link = Some(k.new_link(None, true));
            return;
        }
        if self.chain && self.mutation == Mutation::ChainParkedNotRestored {
            return;
        }
        // Records an earlier incarnation's drain parked here: in their
        // slots, keeping no token (node 0 holds them).
        for (_, val) in k.parked.iter().filter(|(p, _)| *p == id) {
            let slot = match val {
                Val::A(_) => 0,
                _ => 1,
            };
            k.cells[c].slots[slot] = Some(Rec {
                val: val.clone(),
                tok: u8::MAX,
                cell: c as u8,
            });
        }
    }

    /// Can the head of path `p` enter its cell now? (Under `Union`, a
    /// pass after firing waits while the firing link's target is in its
    /// dying window.)
    fn can_enter(&self, k: &NodeK, p: usize) -> bool {
        let Some(rec) = k.paths[p].front() else {
            return false;
        };
        let cell = &k.cells[rec.cell as usize];
        let Some(link) = cell.link.map(|l| &k.links[l as usize]) else {
            return true;
        };
        if !self.design.unions_fired_pass() || link.committed {
            return true;
        }
        match self.mutation {
            Mutation::NoUnionOnFiredPass | Mutation::DyingMeansCommitted => true,
            // Waits in the window, takes a dead target as committed.
            Mutation::WeakUpgradeMeansCommitted => link
                .target
                .is_none_or(|t| k.toks[t as usize].life == Life::Live),
            _ => match link.target {
                Some(t) => k.toks[t as usize].life == Life::Live,
                None => unreachable!("the link's target died uncommitted"),
            },
        }
    }

    /// The head of path `p` reaches its cell; `dir` chooses the
    /// direction of the union it makes, if any.
    fn enter(&self, st: &mut State, p: usize, dir: bool) -> String {
        let m = self.mutation;
        let k = &mut st.k;
        let mut note = String::new();
        let Some(rec) = k.paths[p].pop_front() else {
            return note;
        };
        // Under `StoreDropsToken` a slot record's token may be dead
        // (`u8::MAX`) or dying: a union with it is skipped.
        let live = |k: &NodeK, t: u8| t != u8::MAX && k.toks[t as usize].life == Life::Live;
        let c = rec.cell as usize;
        if self.design == Design::HybridFifo && p < 2 {
            self.link_path(k, p, &rec);
        }
        self.make_cell(k, c);
        let slot = match rec.val {
            Val::A(_) => 0,
            _ => 1,
        };
        if k.cells[c].fired {
            note.push_str("passes (fired)");
            let l = k.cells[c].link.expect("a fired cell has a link");
            let link = k.links[l as usize].clone();
            if !link.committed && m != Mutation::NoUnionOnFiredPass {
                if !self.design.unions_fired_pass() {
                    k.toks[rec.tok as usize].after.push(l);
                    note.push_str(&format!(", after the firing group (at {})", k.at(l)));
                } else {
                    match (m, link.target) {
                        (Mutation::WeakUpgradeMeansCommitted, None) => {}
                        (Mutation::DyingMeansCommitted, Some(t))
                            if k.toks[t as usize].life != Life::Live => {}
                        (_, Some(t)) => {
                            k.union(rec.tok, t, dir, &mut note);
                        }
                        (_, None) => unreachable!("checked by can_enter"),
                    }
                }
            }
            self.passes(k, rec, c);
        } else if k.cells[c].slots[slot].is_none() {
            if !self.design.unions_slot_pass() {
                let t = (m != Mutation::StoreDropsToken).then_some(rec.tok);
                k.cells[c].slot_links[slot] = Some(k.new_link(t, t.is_none()));
            }
            let mut rec = rec;
            if k.drained && m == Mutation::UntokenedStoreAfterDrain {
                rec.tok = u8::MAX;
            }
            k.cells[c].slots[slot] = Some(rec);
            if let [Some(a), Some(b)] = &k.cells[c].slots {
                let (a, b) = (a.clone(), b.clone());
                k.cells[c].slots = [None, None];
                k.cells[c].slot_links = [None, None];
                let (Val::A(x), Val::B(y)) = (&a.val, &b.val) else {
                    unreachable!("slot 0 holds an a, slot 1 a b")
                };
                let j = Val::J(*x, *y);
                note.push_str(&format!("fires {j:?}"));
                let ta = live(k, a.tok).then_some(a.tok);
                let tb = live(k, b.tok).then_some(b.tok);
                let root = match (ta, tb) {
                    (Some(x), Some(y)) => k.union(x, y, dir, &mut note),
                    (Some(x), None) | (None, Some(x)) => k.find(x),
                    (None, None) => {
                        k.toks.push(Tok {
                            name: u8::MAX,
                            parent: None,
                            dones: Vec::new(),
                            held: Vec::new(),
                            tomb: Vec::new(),
                            parked: Vec::new(),
                            after: Vec::new(),
                            life: Life::Live,
                        });
                        (k.toks.len() - 1) as u8
                    }
                };
                k.toks[root as usize].held.push(j);
                if m != Mutation::NoTombstone {
                    let id = self.cell_id(k, c);
                    k.toks[root as usize].tomb.push(id);
                }
                k.cells[c].link = Some(k.new_link(ta.or(Some(root)), false));
                k.cells[c].fired = true;
            } else {
                note.push_str("is stored");
            }
        } else {
            // Passes because its slot is taken.
            note.push_str("passes (slot taken)");
            if m != Mutation::NoUnionOnSlotPass {
                if !self.design.unions_slot_pass() {
                    if let Some(l) = k.cells[c].slot_links[slot] {
                        if !k.links[l as usize].committed {
                            k.toks[rec.tok as usize].after.push(l);
                            note.push_str(&format!(", after the slot's group (at {})", k.at(l)));
                        }
                    }
                } else {
                    let other = k.cells[c].slots[slot].as_ref().map(|r| r.tok);
                    if let Some(o) = other.filter(|&o| live(k, o)) {
                        k.union(rec.tok, o, dir, &mut note);
                    }
                }
            }
            self.passes(k, rec, c);
        }
        k.settle(m);
        note
    }

    /// `rec` leaves path `p` (into the cells, or into the merge): it
    /// commits with or after the record that left it before.
    fn link_path(&self, k: &mut NodeK, p: usize, rec: &Rec) {
        if self.mutation == Mutation::NoPathLink {
            return;
        }
        if let Some(l) = k.path_last[p] {
            k.toks[rec.tok as usize].after.push(l);
        }
        k.path_last[p] = Some(k.new_link(Some(rec.tok), false));
    }

    /// The head of path `p` (0 or 1) races into the merged stream
    /// (`HybridFifoMerged`), linked there.
    fn merge(&self, st: &mut State, p: usize) {
        let k = &mut st.k;
        let Some(rec) = k.paths[p].pop_front() else {
            return;
        };
        self.link_path(k, p, &rec);
        k.paths[3].push_back(rec);
        k.settle(self.mutation);
    }

    /// `rec` has passed cell `c`: it leaves (held by its token for node
    /// 0), or under `chain` goes on from instance 0 to instance 1.
    fn passes(&self, k: &mut NodeK, mut rec: Rec, c: usize) {
        if self.chain && c == 0 {
            rec.cell = 1;
            k.paths[2].push_back(rec);
        } else {
            k.toks[rec.tok as usize].held.push(rec.val);
        }
    }

    /// Where the drop of dying token `t` moves its content: its parent,
    /// or (`After`) the first group it is linked `after` that has not
    /// committed; `None`: it commits. `Err(())`: it waits (`AfterSpin`,
    /// the linked group's token is in its own drop window).
    fn drop_target(&self, k: &NodeK, t: u8) -> Result<Option<u8>, ()> {
        let m = self.mutation;
        let tok = &k.toks[t as usize];
        if let Some(p) = tok.parent {
            return Ok((m != Mutation::NonAtomicCommit).then_some(p));
        }
        for &l in &tok.after {
            let link = &k.links[l as usize];
            if link.committed {
                continue;
            }
            let Some(u) = link.target else {
                // Dead uncommitted: only without re-pointing.
                match m {
                    Mutation::WeakUpgradeMeansCommitted => continue,
                    _ => unreachable!("a link's target died uncommitted"),
                }
            };
            if u == t {
                continue;
            }
            match k.toks[u as usize].life {
                Life::Live => return Ok(Some(u)),
                Life::Dying => match (m, self.design) {
                    (Mutation::DyingMeansCommitted | Mutation::WeakUpgradeMeansCommitted, _) => {
                        continue
                    }
                    (_, Design::AfterSpin | Design::HybridSpin) => return Err(()),
                    _ => return Ok(Some(u)),
                },
                Life::Dead => unreachable!("renumbered away"),
            }
        }
        Ok(None)
    }

    /// The drop of dying token `t` runs: into its parent or a group it
    /// commits after, or a commit.
    fn drop_tok(&self, st: &mut State, t: u8) {
        let m = self.mutation;
        let Ok(to) = self.drop_target(&st.k, t) else {
            return;
        };
        let k = &mut st.k;
        let tok = k.toks[t as usize].clone();
        if let Some(p) = to {
            let pt = &mut k.toks[p as usize];
            pt.dones.extend(&tok.dones);
            pt.held.extend(tok.held);
            pt.tomb.extend(&tok.tomb);
            pt.parked.extend(tok.parked);
            pt.after.extend(&tok.after);
            if m != Mutation::WeakUpgradeMeansCommitted {
                for l in &mut k.links {
                    if l.target == Some(t) {
                        l.target = Some(p);
                    }
                }
            }
        } else {
            if m == Mutation::DoneBeforeHeld {
                st.to_0.push_back(To0::Commit {
                    dones: tok.dones,
                    held: Vec::new(),
                    tomb: tok.tomb.clone(),
                    parked: tok.parked.clone(),
                });
                st.to_0.push_back(To0::Commit {
                    dones: Vec::new(),
                    held: tok.held,
                    tomb: Vec::new(),
                    parked: Vec::new(),
                });
            } else {
                st.to_0.push_back(To0::Commit {
                    dones: tok.dones,
                    held: tok.held,
                    tomb: tok.tomb,
                    parked: tok.parked,
                });
            }
            for l in &mut k.links {
                if l.target == Some(t) {
                    if tok.parent.is_some() {
                        // `NonAtomicCommit`: the rest of the group is
                        // still to commit; the link follows it.
                        l.target = tok.parent;
                    } else {
                        l.committed = true;
                    }
                }
            }
        }
        k.toks[t as usize].life = Life::Dead;
        k.settle(m);
    }

    /// Node 0 takes the next message from `k`.
    fn deliver_0(&self, st: &mut State) {
        let Some(m) = st.to_0.pop_front() else {
            return;
        };
        match m {
            To0::Commit {
                dones,
                held,
                tomb,
                parked,
            } => {
                for d in dones {
                    match st.log.iter().position(|&i| i == d) {
                        Some(at) => {
                            st.log.remove(at);
                            st.dones += 1;
                        }
                        None => {
                            if st.broken.is_none() {
                                st.broken = Some(format!("Done for item {d}, not in the log"));
                            }
                        }
                    }
                }
                // A record with a loop goes back round: a new item.
                for v in held {
                    let back = match v {
                        Val::A(i) | Val::B(i) => self.inputs[i as usize].back,
                        Val::J(..) => None,
                    };
                    match back {
                        Some(j) => {
                            st.log.push(j);
                            Self::send_k(st, ToK::Item(j));
                        }
                        None => st.output.push(v),
                    }
                }
                st.output.sort();
                st.parked.extend(parked);
                st.tomb.extend(tomb);
                st.tomb.sort();
                st.tomb.dedup();
                // A fired cell's parked records are in its merged record.
                let tomb = &st.tomb;
                st.parked.retain(|(c, _)| !tomb.contains(c));
                st.parked.sort();
            }
        }
    }

    /// Node 0 replaces the lost `k`: drops what the old incarnation sent
    /// and it has not taken, sends the tombstones, then the log; the
    /// replacement is to be drained again.
    fn replace(&self, st: &mut State) {
        if self.mutation != Mutation::OldIncarnationDelivered {
            st.to_0.clear();
        }
        st.to_k.clear();
        st.k = NodeK::fresh();
        st.lost = false;
        let late = self.mutation == Mutation::TombstonesAfterRecords;
        if !late {
            for id in st.tomb.clone() {
                Self::send_k(st, ToK::Fired(id));
            }
        }
        if self.mutation != Mutation::ParkedNotSent {
            for (id, v) in st.parked.clone() {
                Self::send_k(st, ToK::Parked(id, v));
            }
        }
        for i in st.log.clone() {
            Self::send_k(st, ToK::Item(i));
        }
        if late {
            for id in st.tomb.clone() {
                Self::send_k(st, ToK::Fired(id));
            }
        }
        if self.mutation != Mutation::DrainNotAskedAgain {
            st.drained_at = None;
        }
    }

    /// All is quiescent (the engine's credit has all come back to node
    /// 0): the input is all sent, no message is on its way, `k` is alive
    /// and has nothing to do.
    fn quiescent(&self, st: &State) -> bool {
        st.next_input == self.n()
            && st.to_k.is_empty()
            && st.to_0.is_empty()
            && !st.lost
            && st.k.paths.iter().all(|p| p.is_empty())
            && st.k.toks.iter().all(|t| t.life != Life::Dying)
    }

    /// Every step possible from `st`, as (label, next state).
    fn steps(&self, st: &State) -> Vec<(String, State)> {
        let mut out = Vec::new();
        if st.done {
            return out;
        }
        if st.next_input < self.n() {
            let mut s = st.clone();
            let i = s.next_input;
            s.next_input += 1;
            s.log.push(i);
            Self::send_k(&mut s, ToK::Item(i));
            out.push((format!("node 0 sends input {i}"), s));
        }
        // Node 0, quiescent with items still in `k`'s custody, asks `k` to
        // drain, once per change of its count of `Done`s (`ask_drain`).
        let quiescent = self.quiescent(st);
        if quiescent && !st.log.is_empty() && st.drained_at != Some(st.dones) {
            let mut s = st.clone();
            s.drained_at = Some(s.dones);
            Self::send_k(&mut s, ToK::Drain);
            out.push(("node 0 asks k to drain".to_string(), s));
        }
        if let Some(m) = st.to_k.front() {
            let mut s = st.clone();
            let label = format!("k takes {m:?}");
            self.deliver_k(&mut s);
            out.push((label, s));
        }
        if let Some(m) = st.to_0.front() {
            let mut s = st.clone();
            let label = format!("node 0 takes {m:?}");
            self.deliver_0(&mut s);
            out.push((label, s));
        }
        let k = &st.k;
        if k.alive {
            for p in 0..2 {
                if self.design.merges() && !k.paths[p].is_empty() {
                    let head = &k.paths[p][0];
                    let label = format!(
                        "k: {:?} (t{}) from path {p} races into the merge",
                        head.val, k.toks[head.tok as usize].name
                    );
                    let mut s = st.clone();
                    self.merge(&mut s, p);
                    out.push((label, s));
                }
            }
            for p in 0..4 {
                if (p >= 2 || !self.design.merges()) && self.can_enter(k, p) {
                    let head = k.paths[p][0].val.clone();
                    let mut first = st.clone();
                    let n1 = self.enter(&mut first, p, false);
                    let mut second = st.clone();
                    let n2 = self.enter(&mut second, p, true);
                    let label = format!(
                        "k: {head:?} (t{}) from path {p} reaches cell {} and ",
                        k.toks[k.paths[p][0].tok as usize].name, k.paths[p][0].cell
                    );
                    if second != first {
                        out.push((format!("{label}{n2}"), second));
                    }
                    out.push((format!("{label}{n1}"), first));
                }
            }
            for (t, tok) in k.toks.iter().enumerate() {
                if tok.life != Life::Dying {
                    continue;
                }
                if let Ok(to) = self.drop_target(k, t as u8) {
                    let mut s = st.clone();
                    self.drop_tok(&mut s, t as u8);
                    let what = match to {
                        Some(p) => format!("drops: moves into t{}", k.toks[p as usize].name),
                        None => "drops: commits".to_string(),
                    };
                    out.push((
                        format!(
                            "k: t{} (Dones {:?}, held {:?}, tombstones {:?}) {what}",
                            tok.name, tok.dones, tok.held, tok.tomb
                        ),
                        s,
                    ));
                }
            }
            if st.losses < self.max_losses {
                let mut s = st.clone();
                s.k.alive = false;
                s.to_k.clear();
                s.losses += 1;
                s.lost = true;
                out.push((LOSS.to_string(), s));
            }
        }
        if st.lost {
            let mut s = st.clone();
            self.replace(&mut s);
            out.push(("node 0 replaces k".to_string(), s));
        }
        // Node 0 ends the run when quiescent with nothing in custody, or
        // when the last drain changed nothing.
        if quiescent && (st.log.is_empty() || st.drained_at == Some(st.dones)) {
            let mut s = st.clone();
            s.done = true;
            out.push(("node 0 ends the run".to_string(), s));
        }
        out
    }
}

impl Model {
    /// Explores every state reachable from the start, depth first, up to
    /// `limit` states.
    pub(crate) fn explore(&self, good: Option<&BTreeSet<Vec<Val>>>, limit: usize) -> Explored {
        explorer::explore(self, good, limit)
    }

    /// `runs` random runs from the start, each step chosen by a
    /// generator seeded with `seed`, each state checked as in
    /// [`Model::explore`]; for spaces too large to exhaust.
    pub(crate) fn walk(&self, good: &BTreeSet<Vec<Val>>, runs: usize, seed: u64) -> Explored {
        explorer::walk(self, good, runs, seed)
    }
}

impl Space for Model {
    type State = State;
    type Val = Val;
    /// A loss is taken at one step in 16 at most.
    const LOSS_ONE_IN: u64 = 16;
    /// A loss is no way out: a run that only a loss would move on is
    /// stuck.
    const LOSS_MOVES_ON: bool = false;

    fn initial(&self) -> State {
        Model::initial(self)
    }

    fn steps(&self, st: &State) -> Vec<(String, State)> {
        Model::steps(self, st)
    }

    fn key(&self, st: &State) -> u64 {
        let mut h = DefaultHasher::new();
        st.hash(&mut h);
        h.finish()
    }

    /// What is wrong with a state, if anything (`good`: the outputs the
    /// network allows; `None` while computing them).
    fn judge(
        &self,
        st: &State,
        good: Option<&BTreeSet<Vec<Val>>>,
    ) -> Result<Option<Vec<Val>>, String> {
        if let Some(what) = &st.broken {
            return Err(what.clone());
        }
        if !st.done {
            return Ok(None);
        }
        if let Some(good) = good {
            if !good.contains(&st.output) {
                return Err(format!(
                    "output {:?} is no failure-free run's (those: {good:?})",
                    st.output
                ));
            }
        }
        if !st.log.is_empty() {
            return Err(format!(
                "node 0's log still holds items {:?} at the end",
                st.log
            ));
        }
        Ok(Some(st.output.clone()))
    }

    fn is_loss(&self, label: &str) -> bool {
        label == LOSS
    }

    fn stuck(&self, st: &State) -> String {
        format!(
            "stuck: nothing but a loss of k can happen and the run has not ended (output {:?}, log {:?})",
            st.output, st.log
        )
    }
}

#[cfg(test)]
mod tests {
    use super::super::explorer::show;
    use super::*;

    /// The designs that pass every search.
    const DESIGNS: [Design; 2] = [Design::Union, Design::Hybrid];

    /// Inputs from a compact spec: each word is an input, its letters the
    /// records its box makes (`a`, `b` for cell instance 0; `A`, `B` for
    /// instance 1), its digit the path they take: `ab0` makes an `a` and
    /// a `b` for instance 0 on path 0, `aA1` an `a` for each instance on
    /// path 1. A leading `*` makes the two instances a chain (a star's
    /// unfolding; every record then starts at instance 0). `a0>b1`: a
    /// feedback loop on node 0 round the placement brings the `a`, if it
    /// leaves unmerged, back as a `b` on path 1 (an input of its own,
    /// numbered after the outside ones).
    fn net(spec: &str) -> Vec<Input> {
        fn input(w: &str) -> Input {
            let (kinds, path) = w.split_at(w.len() - 1);
            let recs = kinds
                .chars()
                .map(|c| match c {
                    'a' => (Kind::A, 0),
                    'b' => (Kind::B, 0),
                    'A' => (Kind::A, 1),
                    'B' => (Kind::B, 1),
                    _ => panic!("bad input {w}"),
                })
                .collect();
            Input {
                recs,
                path: path.parse().expect("a path number"),
                back: None,
                looped: false,
            }
        }
        let words: Vec<&str> = spec.trim_start_matches('*').split_whitespace().collect();
        let mut inputs: Vec<Input> = Vec::new();
        let mut loops = Vec::new();
        for w in &words {
            let mut parts = w.split('>');
            let mut inp = input(parts.next().expect("an input"));
            if let Some(back) = parts.next() {
                let mut l = input(back);
                l.looped = true;
                inp.back = Some((words.len() + loops.len()) as u8);
                loops.push(l);
            }
            inputs.push(inp);
        }
        inputs.extend(loops);
        inputs
    }

    /// The model of `spec` under `design`, and the outputs its network
    /// allows.
    fn model_of(
        spec: &str,
        design: Design,
        mutation: Mutation,
        max_losses: u8,
    ) -> (Model, BTreeSet<Vec<Val>>) {
        let m = Model {
            inputs: net(spec),
            mutation,
            max_losses,
            chain: spec.starts_with('*'),
            design,
        };
        let good = semantics(&m.inputs, m.chain);
        (m, good)
    }

    /// Small networks: a race for each slot, passes by a taken slot and
    /// after firing, an unfired cell at the end, a box making an `a` and
    /// a `b` under one token, two cell instances (a split by tag), a
    /// chain of two (a star), records of one input for both instances.
    const NETS: [&str; 16] = [
        "a0 b1",
        "ab0 a1",
        "a0 a1 a1",
        "a0 b1 a1",
        "b0 a1 ab1",
        "a1 b1 A0 B0",
        "a0 b1 a1 a1",
        "ab0 A1 B1 a0",
        "aA0 Aa1 b0 B1",
        "aA0 Aa1 bB0",
        "*a0 a1 b1 b0",
        "*ab0 a1 b1 ab1",
        "*a0 b1 a1 a1 b0",
        "a0 a0>b0",
        "*a0 a0 a0>b0",
        "a0>b1 A0 a1",
    ];

    /// Placements inside a feedback loop on node 0 (`a0>b1`: the `a`
    /// comes back round as a `b`): a record released by the drain comes
    /// back and fires a drained cell (one cell, two tag cells, a chain),
    /// several records coming back, a drained cell storing again.
    const LOOP_NETS: [&str; 8] = [
        "a0 a0>b0",
        "a0 a1>b0",
        "a0 a0>b1 b1",
        "*a0 a0 a0>b0",
        "*a0 b0>a1 a1>b0",
        "a0>b1 A0 a1",
        "aA0 a1>B0 A1>b1",
        "b0>a0 b0>b0",
    ];

    /// Without a loss, the protocol writes exactly what the network
    /// allows: every output S-Net allows, and no other.
    #[test]
    fn group_model_failure_free_runs_are_the_networks() {
        for design in DESIGNS {
            for spec in NETS {
                let (m, good) = model_of(spec, design, Mutation::None, 0);
                let e = m.explore(None, usize::MAX);
                if let Some(v) = &e.violation {
                    panic!("{design:?} `{spec}`: {}", show(v));
                }
                assert_eq!(
                    e.outputs, good,
                    "{design:?} `{spec}`: the protocol is the network"
                );
            }
        }
    }

    /// Every interleaving, with `k` lost at every step (or never) and
    /// replaced, for the small networks.
    #[test]
    fn group_model_survives_a_loss_at_every_step() {
        for design in DESIGNS {
            for spec in NETS {
                let (m, good) = model_of(spec, design, Mutation::None, 1);
                let e = m.explore(Some(&good), usize::MAX);
                if let Some(v) = &e.violation {
                    panic!("{design:?} `{spec}`: {}", show(v));
                }
                eprintln!("{design:?} `{spec}`: {} states, {} ends", e.states, e.ends);
            }
        }
    }

    /// Each mutation is caught, under each design, by an exhaustive
    /// search of one of the small networks, with the trace that leads to
    /// the violation.
    #[test]
    fn group_model_every_mutation_is_caught() {
        for design in DESIGNS {
            for m in Mutation::ALL {
                let mut caught = None;
                for spec in NETS {
                    let (model, good) = model_of(spec, design, m, 1);
                    let e = model.explore(Some(&good), usize::MAX);
                    if let Some(v) = e.violation {
                        caught = Some((spec, e.states, v));
                        break;
                    }
                }
                match caught {
                    Some((spec, states, v)) => eprintln!(
                        "{design:?}, {m:?}: caught on `{spec}` after {states} states: {}",
                        show(&v)
                    ),
                    None => panic!("{design:?}, {m:?} not caught"),
                }
            }
        }
    }

    /// The `after` links as first built: two tokens linked `after` each
    /// other (each passed a cell because of the other's stored record),
    /// whose last clones are dropped at once, wait for each other's drop
    /// for ever. Caught as a stuck run; `After` (a drop moves into a
    /// token in its drop window) is not.
    #[test]
    fn group_model_mutual_after_links_dropped_at_once_are_caught() {
        let spec = "aA0 Aa1 b0 B1";
        let (m, good) = model_of(spec, Design::AfterSpin, Mutation::None, 0);
        let e = m.explore(Some(&good), usize::MAX);
        match &e.violation {
            Some(v) if v.what.starts_with("stuck") => {
                eprintln!(
                    "AfterSpin: caught on `{spec}` after {} states: {}",
                    e.states,
                    show(v)
                )
            }
            Some(v) => panic!("AfterSpin: another violation: {}", show(v)),
            None => panic!("AfterSpin: the livelock is not found"),
        }
        for design in [Design::After, Design::Hybrid] {
            let (m, good) = model_of(spec, design, Mutation::None, 2);
            if let Some(v) = m.explore(Some(&good), usize::MAX).violation {
                panic!("{design:?}: {}", show(&v));
            }
        }
    }

    /// The waiting drop is stuck under `Hybrid` too: two fired cells,
    /// each group with a record that passes the other's cell after it
    /// fired (`after` each other). The merging drop is not.
    #[test]
    fn group_model_hybrid_needs_the_merging_drop() {
        let spec = "abA0 ABa1";
        let (m, good) = model_of(spec, Design::HybridSpin, Mutation::None, 0);
        let e = m.explore(Some(&good), usize::MAX);
        match &e.violation {
            Some(v) if v.what.starts_with("stuck") => {
                eprintln!(
                    "HybridSpin: caught on `{spec}` after {} states: {}",
                    e.states,
                    show(v)
                )
            }
            Some(v) => panic!("HybridSpin: another violation: {}", show(v)),
            None => panic!("HybridSpin: the livelock is not found"),
        }
        let (m, good) = model_of(spec, Design::Hybrid, Mutation::None, 2);
        if let Some(v) = m.explore(Some(&good), usize::MAX).violation {
            panic!("Hybrid: {}", show(&v));
        }
    }

    /// A known flaw of the designs without path links: decisions of two cells fed by
    /// one race are correlated through the race's order, and their
    /// groups commit independently. With two tag cells and records for
    /// both on each of two FIFO paths, the second cell's group commits
    /// (its decision says A(5) won the race against A(2)), `k` is lost
    /// before the first cell's group commits, and the replay lets the
    /// first cell decide what the committed order rules out. The search
    /// finds it for `Union` and `Hybrid` alike (a test that the model
    /// catches it; the engine links the paths into such a race:
    /// `group_model_path_links_restore_cells_fed_by_one_race`).
    #[test]
    fn group_model_two_cells_fed_by_one_race_are_a_known_flaw() {
        let spec = "a1 B1 A0 ab0 b1 A1";
        for design in DESIGNS {
            let (m, good) = model_of(spec, design, Mutation::None, 1);
            let e = m.explore(Some(&good), usize::MAX);
            match &e.violation {
                Some(v) => eprintln!(
                    "{design:?}: caught on `{spec}` after {} states: {}",
                    e.states,
                    show(v)
                ),
                None => panic!("{design:?}: not found ({} states)", e.states),
            }
        }
    }

    /// The fix for cells fed by one race, as the engine builds it
    /// (`HybridFifoMerged`: the path link made where a record races into
    /// the merge) and as first modelled (`HybridFifo`: where it reaches
    /// a cell): the known flaw's network with one loss (exhaustively, or
    /// 3000 random runs for the larger merged space), and the small
    /// networks (a chain of two cells behind the race
    /// among them); dropping the path links is caught on the flaw's
    /// network. A few seconds; `group_model_fifo_commits_candidate`
    /// (`--ignored`) searches much further.
    #[test]
    fn group_model_path_links_restore_cells_fed_by_one_race() {
        let flawed = "a1 B1 A0 ab0 b1 A1";
        for design in [Design::HybridFifo, Design::HybridFifoMerged] {
            let (m, good) = model_of(flawed, design, Mutation::None, 1);
            // Exhaustive: 1.0e5 states; merged, 1.3e6 (`--ignored`), so
            // random runs here.
            let e = match design {
                Design::HybridFifo => m.explore(Some(&good), usize::MAX),
                _ => m.walk(&good, 3000, 0x40),
            };
            if let Some(v) = &e.violation {
                panic!("{design:?} `{flawed}`: {}", show(v));
            }
            eprintln!("{design:?} `{flawed}`: {} states", e.states);
            for spec in NETS {
                let (m, good) = model_of(spec, design, Mutation::None, 1);
                if let Some(v) = m.explore(Some(&good), usize::MAX).violation {
                    panic!("{design:?} `{spec}`: {}", show(&v));
                }
            }
            let (m, good) = model_of(flawed, design, Mutation::NoPathLink, 1);
            match m.explore(Some(&good), usize::MAX).violation {
                Some(v) => eprintln!("{design:?}, NoPathLink: caught on `{flawed}`: {}", show(&v)),
                None => panic!("{design:?}, NoPathLink not caught"),
            }
        }
    }

    /// The fix for cells fed by one race, `HybridFifo` and
    /// `HybridFifoMerged` (as built): on the network of the known flaw,
    /// and every small network, with more losses; chains too.
    #[test]
    #[ignore]
    fn group_model_fifo_commits_candidate() {
        fifo_commits(Design::HybridFifo);
        fifo_commits(Design::HybridFifoMerged);
        // Cells in a row behind the race (two cells, as a star unfolds).
        for design in [Design::HybridFifo, Design::HybridFifoMerged] {
            let (nets, states) = exhaust_all_with(3, 1, 2, true, &[design]);
            eprintln!(
                "{design:?}: every chain of up to 3 inputs, 2 losses: {nets} networks, {states} states"
            );
        }
    }

    fn fifo_commits(design: Design) {
        let flawed = "a1 B1 A0 ab0 b1 A1";
        let (m, good) = model_of(flawed, design, Mutation::None, 1);
        let e = m.explore(Some(&good), usize::MAX);
        if let Some(v) = &e.violation {
            panic!("{design:?} `{flawed}`: {}", show(v));
        }
        eprintln!("{design:?} `{flawed}`: {} states", e.states);
        for spec in NETS {
            let (m, good) = model_of(spec, design, Mutation::None, 2);
            if let Some(v) = m.explore(Some(&good), usize::MAX).violation {
                panic!("{design:?} `{spec}`: {}", show(&v));
            }
        }
        for (i, spec) in [
            "a1 B1 A0 ab0 b1 A1",
            "ab1 ab0 A0 B1 AB1 a1",
            "aA0 Aa1 bB0 aB1 Ab0",
            "a1 B0 A1 b0 aB1 Ab0",
        ]
        .into_iter()
        .enumerate()
        {
            random_runs(spec, design, 3, 5000, 0x77 + i as u64);
        }
        let mut states = 0;
        for n in 1..=3 {
            for inputs in all_nets(n, 2) {
                let good = semantics(&inputs, false);
                let m = Model {
                    inputs: inputs.clone(),
                    mutation: Mutation::None,
                    max_losses: 2,
                    chain: false,
                    design,
                };
                let e = m.explore(Some(&good), usize::MAX);
                if let Some(v) = &e.violation {
                    panic!("{design:?} `{}`: {}", spec(&inputs), show(v));
                }
                states += e.states;
            }
        }
        eprintln!(
            "{design:?}: every network of up to 3 inputs over 2 cells, 2 losses: {states} states"
        );
        // (`NoUnionOnFiredPass` is not caught here: on these networks a
        // record passing a fired cell is behind a record of the firing
        // group on its path, and the path's link ties it anyway.)
        for m in Mutation::ALL {
            if m == Mutation::NoUnionOnFiredPass {
                continue;
            }
            let caught = NETS.iter().any(|spec| {
                let (model, good) = model_of(spec, design, m, 1);
                model.explore(Some(&good), usize::MAX).violation.is_some()
            });
            assert!(caught, "{design:?}, {m:?} not caught");
        }
    }

    /// `after` links on a pass by a taken slot lose the order a cell's
    /// decision put records in: with two cells in a row (a star), the
    /// first cell's group commits its tombstone before a record that
    /// passed it before it fired has been through the second cell; the
    /// replay passes everything through the fired first cell in another
    /// order, and the second decides what the first's decision rules
    /// out. Caught for `After`; `Hybrid` (union on that pass) and
    /// `Union` are not.
    #[test]
    fn group_model_after_links_on_slot_passes_lose_a_stars_order() {
        let spec = "*b0 a0 b1 ab1";
        let (m, good) = model_of(spec, Design::After, Mutation::None, 1);
        let e = m.explore(Some(&good), usize::MAX);
        match &e.violation {
            Some(v) => eprintln!(
                "After: caught on `{spec}` after {} states: {}",
                e.states,
                show(v)
            ),
            None => panic!("After: the lost order is not found"),
        }
        for design in DESIGNS {
            let (m, good) = model_of(spec, design, Mutation::None, 2);
            if let Some(v) = m.explore(Some(&good), usize::MAX).violation {
                panic!("{design:?}: {}", show(&v));
            }
        }
    }

    /// A synchrocell in a placement inside a feedback loop on node 0: at
    /// the end of the stream the drain hands each stored record to node 0
    /// (parked) in its group's commit; a record the drain released comes
    /// back round the loop and fires the drained cell; node 0 sends a
    /// replacement the parked records of cells it holds no tombstone for,
    /// after the tombstones and before the log, and the replacement's cell
    /// starts with them in its slots. Every loop network, `k` lost at
    /// every step up to twice, under both designs and as built
    /// (`HybridFifoMerged`); each parking mutation is caught, with its
    /// trace.
    #[test]
    fn group_model_parked_records_restore_cells_in_a_loop() {
        for design in [Design::Union, Design::Hybrid, Design::HybridFifoMerged] {
            for spec in LOOP_NETS {
                let (m, good) = model_of(spec, design, Mutation::None, 0);
                let e = m.explore(None, usize::MAX);
                if let Some(v) = &e.violation {
                    panic!("{design:?} `{spec}` without a loss: {}", show(v));
                }
                // A subset: a record that passes a taken slot is held
                // until the cell fires or the drain, so it cannot come
                // back round before that (a run S-Net allows, not every
                // one: `a0 a0>b1 b1` never writes `J(0, 3)`).
                assert!(
                    !e.outputs.is_empty() && e.outputs.is_subset(&good),
                    "{design:?} `{spec}`: {:?} is not within the network's {good:?}",
                    e.outputs
                );
                let (m, good) = model_of(spec, design, Mutation::None, 2);
                let e = m.explore(Some(&good), usize::MAX);
                if let Some(v) = &e.violation {
                    panic!("{design:?} `{spec}`: {}", show(v));
                }
                eprintln!("{design:?} `{spec}`: {} states, {} ends", e.states, e.ends);
            }
        }
        for m in [
            Mutation::NoParking,
            Mutation::ParkedNotSent,
            Mutation::UntokenedStoreAfterDrain,
            Mutation::ChainParkedNotRestored,
        ] {
            for design in [Design::Hybrid, Design::HybridFifoMerged] {
                let caught = LOOP_NETS.iter().find_map(|spec| {
                    let (model, good) = model_of(spec, design, m, 1);
                    let e = model.explore(Some(&good), usize::MAX);
                    e.violation.map(|v| (spec, e.states, v))
                });
                match caught {
                    Some((spec, states, v)) => eprintln!(
                        "{design:?}, {m:?}: caught on `{spec}` after {states} states: {}",
                        show(&v)
                    ),
                    None => panic!("{design:?}, {m:?} not caught"),
                }
            }
        }
    }

    /// `runs` random runs of network `spec` under `design`, `k` lost up to
    /// `losses` times (seeded by `seed`): none may end wrong.
    fn random_runs(spec: &str, design: Design, losses: u8, runs: usize, seed: u64) {
        let (m, good) = model_of(spec, design, Mutation::None, losses);
        let e = m.walk(&good, runs, seed);
        if let Some(v) = &e.violation {
            panic!("{design:?} `{spec}`: {}", show(v));
        }
        eprintln!(
            "{design:?} `{spec}`: {runs} runs, {} steps, {} outputs seen of {}",
            e.states,
            e.outputs.len(),
            good.len()
        );
    }

    /// Random runs of larger loop networks, `k` lost up to three times.
    #[test]
    fn group_model_random_runs_of_loop_networks() {
        for design in [Design::Hybrid, Design::HybridFifoMerged] {
            for (i, spec) in [
                "a0 a1>b0 b1 a0>b1 a1",
                "*a0 a0>b1 b0 a1>b0 ab1",
                "aA0 a1>B0 A1>b1 b0 B1",
            ]
            .into_iter()
            .enumerate()
            {
                random_runs(spec, design, 3, 400, 0x41 + i as u64);
            }
        }
    }

    /// Every network of `n` inputs: each input makes `a`, `b` or both,
    /// on path 0 or 1, for cell instance 0 or (if `cells` is 2) 1.
    fn all_nets(n: usize, cells: u8) -> Vec<Vec<Input>> {
        let mut nets = vec![Vec::new()];
        for _ in 0..n {
            let mut next = Vec::new();
            for net in &nets {
                for kinds in [&[Kind::A][..], &[Kind::B], &[Kind::A, Kind::B]] {
                    for path in 0..2 {
                        for cell in 0..cells {
                            let mut v: Vec<Input> = net.clone();
                            v.push(Input {
                                recs: kinds.iter().map(|k| (*k, cell)).collect(),
                                path,
                                back: None,
                                looped: false,
                            });
                            next.push(v);
                        }
                    }
                }
            }
            nets = next;
        }
        nets
    }

    fn spec(inputs: &[Input]) -> String {
        let words: Vec<String> = inputs
            .iter()
            .map(|i| {
                let mut w: String = i
                    .recs
                    .iter()
                    .map(|(k, c)| match (k, c) {
                        (Kind::A, 0) => 'a',
                        (Kind::B, 0) => 'b',
                        (Kind::A, _) => 'A',
                        (Kind::B, _) => 'B',
                    })
                    .collect();
                w.push_str(&i.path.to_string());
                w
            })
            .collect();
        words.join(" ")
    }

    /// Explores every network of up to `max` inputs exhaustively under
    /// every design, `k` lost up to `losses` times; returns (networks,
    /// states).
    fn exhaust_all(max: usize, cells: u8, losses: u8, chain: bool) -> (usize, usize) {
        exhaust_all_with(max, cells, losses, chain, &DESIGNS)
    }

    fn exhaust_all_with(
        max: usize,
        cells: u8,
        losses: u8,
        chain: bool,
        designs: &[Design],
    ) -> (usize, usize) {
        let (mut nets, mut states) = (0, 0);
        for &design in designs {
            for n in 1..=max {
                for inputs in all_nets(n, cells) {
                    let good = semantics(&inputs, chain);
                    let m = Model {
                        inputs: inputs.clone(),
                        mutation: Mutation::None,
                        max_losses: losses,
                        chain,
                        design,
                    };
                    let e = m.explore(Some(&good), usize::MAX);
                    if let Some(v) = &e.violation {
                        panic!("{design:?} `{}`: {}", spec(&inputs), show(v));
                    }
                    nets += 1;
                    states += e.states;
                }
            }
        }
        (nets, states)
    }

    /// Every network of up to three inputs into one cell or a chain (`k`
    /// lost at every step, once), of up to two into one cell (up to
    /// three losses) and of up to two over two cell instances (up to two
    /// losses): exhaustive, both designs.
    #[test]
    fn group_model_every_small_network_survives_losses() {
        let (nets, states) = exhaust_all(3, 1, 1, false);
        eprintln!("one cell: {nets} networks, {states} states");
        let (nets, states) = exhaust_all(2, 1, 3, false);
        eprintln!("one cell, three losses: {nets} networks, {states} states");
        let (nets, states) = exhaust_all(2, 2, 2, false);
        eprintln!("two cells: {nets} networks, {states} states");
        let (nets, states) = exhaust_all(3, 1, 1, true);
        eprintln!("a chain of two cells: {nets} networks, {states} states");
    }

    /// Random runs of larger networks (five and six inputs: one cell, two
    /// cells each fed by its own path, a chain), `k` lost up to three
    /// times. (Two cells fed by one race are a known flaw: the test
    /// above.) `GROUP_MODEL_WALKS` sets the number of runs per network
    /// and design (default 200).
    #[test]
    fn group_model_random_runs_of_larger_networks() {
        let runs: usize = std::env::var("GROUP_MODEL_WALKS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(200);
        for design in DESIGNS {
            for (i, spec) in [
                "a0 b1 a1 a1 b0",
                "ab0 a1 b1 a0 b1",
                "b0 a1 ab1 a0 ab1 b0",
                "a0 B1 b0 A1 ab0 AB1",
                "*a1 b0 ab1 a0 b1 a1",
                "*b0 a0 b1 ab1 ab0 b1",
            ]
            .into_iter()
            .enumerate()
            {
                random_runs(spec, design, 3, runs, 0x40 + i as u64);
            }
        }
    }

    /// The heavier exhaustive searches. Run with `cargo test --release -p
    /// snet-engine --lib group_model -- --ignored`.
    #[test]
    #[ignore]
    fn group_model_every_network_of_four_inputs() {
        for (max, cells, losses, chain) in [
            (3, 2, 3, false),
            (4, 1, 1, false),
            (3, 1, 3, true),
            (4, 1, 1, true),
        ] {
            let t = std::time::Instant::now();
            let (nets, states) = exhaust_all(max, cells, losses, chain);
            eprintln!(
                "up to {max} inputs, {cells} cells, chain {chain}, {losses} losses: {nets} networks, {states} states, {:?}",
                t.elapsed()
            );
        }
    }
}
