//! A model of a deterministic combinator with synchrocells inside it on
//! a node that may be lost (ARCHITECTURE.md, "Markers and a lost node",
//! *inside, with a synchrocell*; issue 40), and its exploration with the
//! loss of the node at every step (or never), on [`super::explorer`].
//!
//! The network is `([| {a}, {b} |] !! <t>) @ k` cut to what the
//! protocol meets:
//!
//! ```text
//!   node 0: input i -> node k                  (logged until k's Done)
//!   node k: input i's records (one or more, each an `a` or a `b` for
//!           replica 0 or 1) -> the det split's dispatcher, which numbers
//!           them in arrival order
//!           -> replica r: a FIFO into a synchrocell [| {a}, {b} |]
//!              (stores the first `a` and the first `b`, fires J(a, b),
//!              passes every other record)
//!           -> the collector: number n's output (none if stored) once
//!              every number before it has gone
//!           -> the output link (`PathLink`, under the collector's
//!              licence) -> in order, held by its token (the remote
//!              entity for node 0, a step of its own)
//!   node 0: writes what arrives, and checks the output *sequence*
//! ```
//!
//! Replicas run at any relative speed, and the collector, token drops,
//! messages and losses interleave with them in every order. A record
//! that passes a taken slot joins the stored record's group and waits
//! for the fire (or the drain), so a later output of the combinator,
//! from either replica, must wait for it: that is what the output link
//! is for. Two such groups (one per replica) whose outputs leave the
//! collector interleaved are each linked after the other and commit as
//! one, and their records must reach node 0 in the order they were held.
//!
//! **The protocol** (as built: `custody.rs`, `synchrocell.rs` `Guard`,
//! `pathlink.rs`, `instantiate.rs` `det_output`):
//! * node 0 logs every item it sends to `k` until a `Done` for it comes;
//! * `k` gives each item a token; its records carry it (the merged
//!   record carries the firing record's); a record for node 0 is *held*
//!   by its token, stamped with a per-process hold counter (`HOLDS`);
//! * tokens form union-find groups: a record passing a cell whose slot
//!   is taken unions with the stored record's group; a fire unions the
//!   stored records' groups with the firing record's, which gets the
//!   cell's tombstone and the cell's *firing link*; a record passing a
//!   fired cell gets an `after` link to the firing group (until that has
//!   committed). A token's count is the records that carry it (in a
//!   replica's FIFO, in the collector, in a slot) plus its live
//!   children; at 0 it is *dying*, and its drop, a separate step, moves
//!   its content (`Done`s, held records, tombstones, parked records,
//!   `after` links) into its parent, or (a root) into the first group it
//!   is linked after that has not committed (also one in its own drop
//!   window: the merging drop), or commits it in ONE message, its held
//!   records sorted by hold order;
//! * the output link (`PathLast`): each record leaving the collector
//!   gets an `after` link to the group of the record that left before it
//!   (unless it has the same token), and becomes the last;
//! * node 0 on a commit retires the items, writes the records in the
//!   order of the message and keeps the tombstones for the run; on `k`'s
//!   loss it drops what the old incarnation sent and it had not taken
//!   (any suffix: the explorer delivers any prefix first), starts a
//!   fresh `k` (a combinator whose dispatcher and collector start from
//!   number 0) and sends it the tombstones, the parked records, then its
//!   log in order; a cell the replacement makes starts fired if a
//!   tombstone names it, else with its parked records in their slots;
//! * the end of the stream: when all is quiescent with the log not
//!   empty, node 0 asks `k` to drain (once per change of its count of
//!   `Done`s, a replacement counting as one); an unfired cell then hands
//!   each stored record to node 0 in its token's group (parked) and keeps
//!   it in its slot without a token. Node 0 ends the run when quiescent
//!   with the log empty, or when the last drain changed nothing.
//!
//! Checked at every state: node 0's output so far is a prefix of the
//! failure-free run's output *sequence* (which is unique: each replica
//! gets its records in order, and the collector emits by number), no
//! `Done` names an item not in the log, and no state is stuck short of
//! the end (one that only a loss would move on counts as stuck); at the
//! end, the output is the whole sequence and the log is empty.
//!
//! [`Mutation`]s: shortcuts the explorer must catch, each with a trace
//! (`det_model_every_mutation_is_caught`).
//!
//! Not modelled: more than two replicas, a star of cells in a replica
//! (the group model's chain covers cells in a row), cells with more
//! than two patterns, boxes inside a replica (they change records, not
//! their order), markers from node 0 (`CommitOrder`: the combinator is
//! inside the placement, so node 0 sends none), a loss of node 0,
//! fields, poison records, credit amounts (quiescence is read off the
//! state).

use std::collections::hash_map::DefaultHasher;
use std::collections::VecDeque;
use std::hash::{Hash, Hasher};

use super::explorer::{self, Space};

/// A protocol change the model must catch.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Mutation {
    /// The protocol as built.
    None,
    /// No output link: a record leaving the collector does not commit
    /// with or after the group of the record that left before it.
    NoOutputLink,
    /// A commit that took in other groups' content sends the held
    /// records group by group (as the content was moved in), not in the
    /// order they were held.
    CommitUnsorted,
    /// The combinator is linked like a merge (`Graph::merges_to_link`):
    /// a record is linked after the last record of its own replica, not
    /// after the last to leave the collector.
    PerReplicaLinks,
    /// A drop that finds the group it commits after in that group's own
    /// drop window (the `Arc`'s count reached 0, its `Drop` has not run:
    /// a failed `Weak::upgrade`) takes it as committed, and commits.
    DyingMeansCommitted,
    /// No tombstone: the firing group commits without `Fired`, so the
    /// replacement's cell starts unfired.
    NoTombstone,
}

impl Mutation {
    pub(crate) const ALL: [Mutation; 5] = [
        Mutation::NoOutputLink,
        Mutation::CommitUnsorted,
        Mutation::PerReplicaLinks,
        Mutation::DyingMeansCommitted,
        Mutation::NoTombstone,
    ];
}

/// Replicas of the split (tag values): one cell each.
const REPLICAS: usize = 2;

/// No token (a parked record in its slot), a dead token, or a committed
/// link's target.
const NONE: u8 = u8::MAX;

/// The label of a loss step.
const LOSS: &str = "k is lost";

/// What a record matches: the cell's first pattern (`a`) or its second
/// (`b`).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Kind {
    A,
    B,
}

/// A record, named by the input it derives from.
#[derive(Clone, Debug, Hash, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Val {
    A(u8),
    B(u8),
    /// The merged record: the inputs of the stored `a` and `b`.
    J(u8, u8),
}

impl Val {
    fn of(kind: Kind, i: u8) -> Val {
        match kind {
            Kind::A => Val::A(i),
            Kind::B => Val::B(i),
        }
    }

    fn slot(&self) -> usize {
        match self {
            Val::A(_) => 0,
            Val::B(_) => 1,
            Val::J(..) => unreachable!("no merged record reaches a cell"),
        }
    }
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
    /// For traces: the input the token was made for.
    name: u8,
    parent: Option<u8>,
    /// Items whose `Done` this token carries.
    dones: Vec<u8>,
    /// Records for node 0 it holds, with their hold order (renumbered
    /// densely after each step: only their relative order matters).
    held: Vec<(u8, Val)>,
    /// Tombstones: the cells (replicas) this group fired.
    tomb: Vec<u8>,
    /// Records a drain parked: (cell, record).
    parked: Vec<(u8, Val)>,
    /// Links to the groups this one commits with or after.
    after: Vec<u8>,
    life: Life,
}

impl Tok {
    fn new(name: u8, dones: Vec<u8>) -> Tok {
        Tok {
            name,
            parent: None,
            dones,
            held: Vec::new(),
            tomb: Vec::new(),
            parked: Vec::new(),
            after: Vec::new(),
            life: Life::Live,
        }
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq)]
struct Rec {
    val: Val,
    /// `NONE`: a parked record in its slot (node 0 holds it).
    tok: u8,
}

/// A link to a group (the engine's `Link`): the token its content is at
/// (re-pointed when that token moves its content on), or committed.
#[derive(Clone, Debug, Hash, PartialEq, Eq)]
struct Link {
    target: u8,
    committed: bool,
}

/// A replica's synchrocell.
#[derive(Clone, Debug, Hash, PartialEq, Eq, Default)]
struct Cell {
    /// A record has reached it (the instance exists).
    made: bool,
    slots: [Option<Rec>; 2],
    fired: bool,
    /// The firing link while the firing group has not committed.
    link: Option<u8>,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, Default)]
struct NodeK {
    alive: bool,
    /// Each replica's input, in the dispatcher's order.
    queues: [VecDeque<Rec>; REPLICAS],
    /// Each replica's output per number, waiting for the collector
    /// (`None`: the record was stored, its number has no output).
    outs: [VecDeque<Option<Rec>>; REPLICAS],
    /// The replica of each number the collector has not emitted yet.
    order: VecDeque<u8>,
    /// Records the collector has emitted (and linked), on their way to
    /// the entity that holds them (the remote entity for node 0, which
    /// takes them in order under its own licence).
    emitted: VecDeque<Rec>,
    cells: [Cell; REPLICAS],
    /// Tombstones received: a cell with one of these starts fired.
    tombs: Vec<u8>,
    /// Parked records node 0 sent: (cell, record).
    parked: Vec<(u8, Val)>,
    toks: Vec<Tok>,
    links: Vec<Link>,
    /// The output link's last record: (its token, a link to its group);
    /// under `PerReplicaLinks`, one per replica.
    last: [Option<(u8, u8)>; REPLICAS],
    /// The hold counter (`HOLDS`).
    holds: u8,
    /// This incarnation has been asked to drain.
    drained: bool,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq)]
enum ToK {
    Item(u8),
    Fired(u8),
    Parked(u8, Val),
    Drain,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq)]
struct Commit {
    dones: Vec<u8>,
    held: Vec<Val>,
    tomb: Vec<u8>,
    parked: Vec<(u8, Val)>,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq)]
pub(crate) struct State {
    k: NodeK,
    to_k: VecDeque<ToK>,
    to_0: VecDeque<Commit>,
    next_input: u8,
    /// `Done`s node 0 has taken.
    dones: u16,
    /// `dones` when node 0 last asked `k` to drain.
    drained_at: Option<u16>,
    /// Node 0's log toward `k`: unretired items, in send order.
    log: Vec<u8>,
    /// Tombstones node 0 holds (sorted).
    tomb: Vec<u8>,
    /// Parked records node 0 holds until their cell's tombstone.
    parked: Vec<(u8, Val)>,
    /// What node 0 has written, in order.
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
    /// Per input, the records it brings to the split, in order: each an
    /// `a` or a `b`, and its replica.
    pub inputs: Vec<Vec<(Kind, u8)>>,
    pub mutation: Mutation,
    /// How many times node `k` may be lost in one run.
    pub max_losses: u8,
    /// The failure-free output sequence ([`sequence`]).
    pub expected: Vec<Val>,
}

/// What S-Net writes for `inputs`: the one sequence a failure-free run
/// gives. Each replica gets its records in input order (its cell stores
/// the first `a` and the first `b`, fires with the second, passes every
/// other record); the collector writes number `n`'s output (the record,
/// the merged record, or nothing when it was stored) before number
/// `n + 1`'s; an unfired cell's stored records are never written.
pub(crate) fn sequence(inputs: &[Vec<(Kind, u8)>]) -> Vec<Val> {
    let mut cells = [([None::<u8>; 2], false); REPLICAS];
    let mut out = Vec::new();
    for (i, recs) in inputs.iter().enumerate() {
        for &(kind, r) in recs {
            let v = Val::of(kind, i as u8);
            let (slots, fired) = &mut cells[r as usize];
            let s = v.slot();
            if *fired || slots[s].is_some() {
                out.push(v);
            } else {
                slots[s] = Some(i as u8);
                if let [Some(a), Some(b)] = *slots {
                    out.push(Val::J(a, b));
                    *slots = [None, None];
                    *fired = true;
                }
            }
        }
    }
    out
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
    /// chooses which).
    fn union(&mut self, x: u8, y: u8, dir: bool, note: &mut String) {
        let (rx, ry) = (self.find(x), self.find(y));
        if rx == ry {
            return;
        }
        let (child, parent) = if dir { (rx, ry) } else { (ry, rx) };
        self.toks[child as usize].parent = Some(parent);
        note.push_str(&format!(
            ", t{} linked under t{}",
            self.toks[child as usize].name, self.toks[parent as usize].name
        ));
    }

    fn recs(&self) -> impl Iterator<Item = &Rec> {
        self.queues
            .iter()
            .flatten()
            .chain(self.outs.iter().flatten().flatten())
            .chain(self.emitted.iter())
            .chain(self.cells.iter().flat_map(|c| c.slots.iter().flatten()))
    }

    fn count(&self, t: u8) -> usize {
        let recs = self.recs().filter(|r| r.tok == t).count();
        let children = self
            .toks
            .iter()
            .filter(|c| c.parent == Some(t) && c.life != Life::Dead)
            .count();
        recs + children
    }

    /// Marks every live token whose count is 0 as dying, forgets dead
    /// tokens and committed links, and renumbers what is left (tokens,
    /// links, hold orders) so that equal states look equal.
    fn settle(&mut self) {
        for t in 0..self.toks.len() {
            if self.toks[t].life == Life::Live && self.count(t as u8) == 0 {
                self.toks[t].life = Life::Dying;
            }
        }
        if self.toks.iter().any(|t| t.life == Life::Dead) {
            let mut map = vec![NONE; self.toks.len()];
            let mut n = 0u8;
            for (i, t) in self.toks.iter().enumerate() {
                if t.life != Life::Dead {
                    map[i] = n;
                    n += 1;
                }
            }
            let re = |t: u8| if t == NONE { NONE } else { map[t as usize] };
            for q in &mut self.queues {
                for r in q {
                    r.tok = re(r.tok);
                }
            }
            for q in &mut self.outs {
                for r in q.iter_mut().flatten() {
                    r.tok = re(r.tok);
                }
            }
            for r in &mut self.emitted {
                r.tok = re(r.tok);
            }
            for c in &mut self.cells {
                for r in c.slots.iter_mut().flatten() {
                    r.tok = re(r.tok);
                }
            }
            for l in &mut self.links {
                if !l.committed {
                    l.target = re(l.target);
                    assert_ne!(l.target, NONE, "a link's target died uncommitted");
                }
            }
            for (t, _) in self.last.iter_mut().flatten() {
                *t = re(*t);
            }
            self.toks.retain(|t| t.life != Life::Dead);
            for t in &mut self.toks {
                t.parent = t.parent.map(re);
            }
        }
        let mut orders: Vec<u8> = self
            .toks
            .iter()
            .flat_map(|t| t.held.iter().map(|h| h.0))
            .collect();
        orders.sort_unstable();
        for t in &mut self.toks {
            for h in &mut t.held {
                h.0 = orders.binary_search(&h.0).expect("an order") as u8;
            }
        }
        self.holds = orders.len() as u8;
        self.forget_links();
    }

    /// Forgets committed links (they hold nothing back) and links
    /// nothing refers to, renumbering the rest.
    fn forget_links(&mut self) {
        let links = &self.links;
        for t in &mut self.toks {
            t.after.retain(|&l| !links[l as usize].committed);
        }
        for c in &mut self.cells {
            if c.link.is_some_and(|l| links[l as usize].committed) {
                c.link = None;
            }
        }
        for l in &mut self.last {
            if l.is_some_and(|(_, l)| links[l as usize].committed) {
                *l = None;
            }
        }
        let mut used = vec![false; self.links.len()];
        let refs = self
            .cells
            .iter()
            .filter_map(|c| c.link)
            .chain(self.last.iter().flatten().map(|(_, l)| *l))
            .chain(self.toks.iter().flat_map(|t| t.after.iter().copied()));
        for l in refs {
            used[l as usize] = true;
        }
        if used.iter().all(|u| *u) {
            return;
        }
        let mut map = vec![NONE; used.len()];
        let mut n = 0u8;
        for (i, u) in used.iter().enumerate() {
            if *u {
                map[i] = n;
                n += 1;
            }
        }
        let re = |l: u8| map[l as usize];
        for c in &mut self.cells {
            c.link = c.link.map(re);
        }
        for (_, l) in self.last.iter_mut().flatten() {
            *l = re(*l);
        }
        for t in &mut self.toks {
            for l in &mut t.after {
                *l = re(*l);
            }
            t.after.sort_unstable();
            t.after.dedup();
        }
        let mut i = 0;
        self.links.retain(|_| {
            i += 1;
            used[i - 1]
        });
    }

    fn new_link(&mut self, target: u8) -> u8 {
        self.links.push(Link {
            target,
            committed: false,
        });
        (self.links.len() - 1) as u8
    }

    /// For traces: a record's token.
    fn name(&self, t: u8) -> String {
        if t == NONE {
            "parked".to_string()
        } else {
            format!("t{}", self.toks[t as usize].name)
        }
    }
}

impl Model {
    /// The model of `inputs` under `mutation`, `k` lost up to
    /// `max_losses` times.
    pub(crate) fn new(inputs: Vec<Vec<(Kind, u8)>>, mutation: Mutation, max_losses: u8) -> Model {
        let expected = sequence(&inputs);
        Model {
            inputs,
            mutation,
            max_losses,
            expected,
        }
    }

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

    fn n(&self) -> u8 {
        self.inputs.len() as u8
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
            // The item's records reach the split's dispatcher, which
            // numbers them and sends each to its replica.
            ToK::Item(i) => {
                let t = k.toks.len() as u8;
                k.toks.push(Tok::new(i, vec![i]));
                for &(kind, r) in &self.inputs[i as usize] {
                    k.queues[r as usize].push_back(Rec {
                        val: Val::of(kind, i),
                        tok: t,
                    });
                    k.order.push_back(r);
                }
            }
            ToK::Fired(c) => {
                if !k.tombs.contains(&c) {
                    k.tombs.push(c);
                    k.tombs.sort_unstable();
                }
            }
            ToK::Parked(c, v) => k.parked.push((c, v)),
            // An unfired cell hands each stored record to node 0 in its
            // token's group and keeps it without a token.
            ToK::Drain => {
                k.drained = true;
                for c in 0..REPLICAS {
                    if k.cells[c].fired {
                        continue;
                    }
                    for s in 0..2 {
                        let Some(r) = &mut k.cells[c].slots[s] else {
                            continue;
                        };
                        let t = std::mem::replace(&mut r.tok, NONE);
                        if t != NONE {
                            let v = r.val.clone();
                            k.toks[t as usize].parked.push((c as u8, v));
                        }
                    }
                }
            }
        }
        k.settle();
    }

    /// Makes replica `c`'s cell if no record has reached it yet: fired
    /// if a tombstone names it, else with its parked records.
    fn make_cell(k: &mut NodeK, c: usize) {
        if k.cells[c].made {
            return;
        }
        k.cells[c].made = true;
        if k.tombs.contains(&(c as u8)) {
            k.cells[c].fired = true;
            return;
        }
        for (_, v) in k.parked.iter().filter(|(p, _)| *p as usize == c) {
            k.cells[c].slots[v.slot()] = Some(Rec {
                val: v.clone(),
                tok: NONE,
            });
        }
    }

    /// Replica `r` takes the head of its input to its cell; `dir`
    /// chooses the direction of the union it makes, if any.
    fn replica(&self, st: &mut State, r: usize, dir: bool) -> String {
        let k = &mut st.k;
        let mut note = String::new();
        let Some(rec) = k.queues[r].pop_front() else {
            return note;
        };
        Self::make_cell(k, r);
        let s = rec.val.slot();
        let out = if k.cells[r].fired {
            note.push_str("passes (fired)");
            if let Some(l) = k.cells[r].link {
                k.toks[rec.tok as usize].after.push(l);
                note.push_str(&format!(
                    ", after the firing group (at {})",
                    k.name(k.links[l as usize].target)
                ));
            }
            Some(rec)
        } else if let Some(stored) = &k.cells[r].slots[s] {
            note.push_str("passes (slot taken)");
            let o = stored.tok;
            if o != NONE {
                k.union(rec.tok, o, dir, &mut note);
            }
            Some(rec)
        } else if let Some(other) = k.cells[r].slots[1 - s].take() {
            let (a, b) = if s == 0 {
                (&rec.val, &other.val)
            } else {
                (&other.val, &rec.val)
            };
            let (Val::A(x), Val::B(y)) = (a, b) else {
                unreachable!("slot 0 holds an a, slot 1 a b")
            };
            let j = Val::J(*x, *y);
            note.push_str(&format!("fires {j:?}"));
            if other.tok != NONE {
                k.union(rec.tok, other.tok, dir, &mut note);
            }
            k.cells[r].slots = [None, None];
            k.cells[r].fired = true;
            if self.mutation != Mutation::NoTombstone {
                k.toks[rec.tok as usize].tomb.push(r as u8);
            }
            k.cells[r].link = Some(k.new_link(rec.tok));
            Some(Rec {
                val: j,
                tok: rec.tok,
            })
        } else {
            note.push_str("is stored");
            k.cells[r].slots[s] = Some(rec);
            None
        };
        k.outs[r].push_back(out);
        k.settle();
        note
    }

    /// The collector emits the next number's output, if its replica has
    /// made it: through the output link, held by its token.
    fn collect(&self, st: &mut State) -> String {
        let k = &mut st.k;
        let Some(r) = k.order.pop_front() else {
            return String::new();
        };
        let Some(out) = k.outs[r as usize].pop_front() else {
            unreachable!("checked by the caller")
        };
        let Some(rec) = out else {
            k.settle();
            return "nothing (stored)".to_string();
        };
        let what = format!("{:?} ({})", rec.val, k.name(rec.tok));
        let at = match self.mutation {
            Mutation::NoOutputLink => None,
            Mutation::PerReplicaLinks => Some(r as usize),
            _ => Some(0),
        };
        if let Some(at) = at {
            match k.last[at] {
                Some((t, _)) if t == rec.tok => {}
                last => {
                    if let Some((_, l)) = last {
                        k.toks[rec.tok as usize].after.push(l);
                    }
                    let l = k.new_link(rec.tok);
                    k.last[at] = Some((rec.tok, l));
                }
            }
        }
        k.emitted.push_back(rec);
        k.settle();
        what
    }

    /// The next emitted record is held by its token, stamped with the
    /// hold counter.
    fn hold(st: &mut State) {
        let k = &mut st.k;
        let Some(rec) = k.emitted.pop_front() else {
            return;
        };
        let n = k.holds;
        k.holds += 1;
        k.toks[rec.tok as usize].held.push((n, rec.val));
        k.settle();
    }

    /// Where the drop of dying token `t` moves its content: its parent,
    /// or the first group it is linked after that has not committed
    /// (also a dying one: the merging drop); `None`: it commits.
    fn drop_target(&self, k: &NodeK, t: u8) -> Option<u8> {
        let tok = &k.toks[t as usize];
        if let Some(p) = tok.parent {
            return Some(p);
        }
        for &l in &tok.after {
            let link = &k.links[l as usize];
            if link.committed || link.target == t {
                continue;
            }
            match k.toks[link.target as usize].life {
                Life::Live => return Some(link.target),
                Life::Dying if self.mutation == Mutation::DyingMeansCommitted => continue,
                Life::Dying => return Some(link.target),
                Life::Dead => unreachable!("renumbered away"),
            }
        }
        None
    }

    /// The drop of dying token `t` runs.
    fn drop_tok(&self, st: &mut State, t: u8) {
        let to = self.drop_target(&st.k, t);
        let k = &mut st.k;
        let tok = k.toks[t as usize].clone();
        match to {
            Some(p) => {
                let pt = &mut k.toks[p as usize];
                pt.dones.extend(&tok.dones);
                pt.held.extend(tok.held);
                pt.tomb.extend(&tok.tomb);
                pt.parked.extend(tok.parked);
                pt.after.extend(&tok.after);
                for l in &mut k.links {
                    if !l.committed && l.target == t {
                        l.target = p;
                    }
                }
            }
            None => {
                let mut held = tok.held;
                if self.mutation != Mutation::CommitUnsorted {
                    held.sort_by_key(|h| h.0);
                }
                st.to_0.push_back(Commit {
                    dones: tok.dones,
                    held: held.into_iter().map(|h| h.1).collect(),
                    tomb: tok.tomb,
                    parked: tok.parked,
                });
                for l in &mut k.links {
                    if !l.committed && l.target == t {
                        l.committed = true;
                        l.target = NONE;
                    }
                }
            }
        }
        k.toks[t as usize].life = Life::Dead;
        k.settle();
    }

    /// Node 0 takes the next commit from `k`: retires its items, writes
    /// its records (checking each against the failure-free sequence),
    /// keeps its tombstones and parked records.
    fn deliver_0(&self, st: &mut State) {
        let Some(c) = st.to_0.pop_front() else {
            return;
        };
        for d in c.dones {
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
        for v in c.held {
            let at = st.output.len();
            if st.broken.is_none() && self.expected.get(at) != Some(&v) {
                st.broken = Some(format!(
                    "node 0 writes {v:?} as output record {at} after {:?}; the failure-free run writes {:?}",
                    st.output, self.expected
                ));
            }
            st.output.push(v);
        }
        st.parked.extend(c.parked);
        st.tomb.extend(c.tomb);
        st.tomb.sort_unstable();
        st.tomb.dedup();
        let tomb = &st.tomb;
        st.parked.retain(|(c, _)| !tomb.contains(c));
        st.parked.sort();
    }

    /// Node 0 replaces the lost `k`: drops what the old incarnation sent
    /// and it has not taken, sends the tombstones, the parked records,
    /// then the log in order; the replacement is to be drained again.
    fn replace(st: &mut State) {
        st.to_0.clear();
        st.to_k.clear();
        st.k = NodeK::fresh();
        st.lost = false;
        for c in st.tomb.clone() {
            Self::send_k(st, ToK::Fired(c));
        }
        for (c, v) in st.parked.clone() {
            Self::send_k(st, ToK::Parked(c, v));
        }
        for i in st.log.clone() {
            Self::send_k(st, ToK::Item(i));
        }
        st.drained_at = None;
    }

    /// All is quiescent (the credit is all back at node 0).
    fn quiescent(&self, st: &State) -> bool {
        let k = &st.k;
        st.next_input == self.n()
            && st.to_k.is_empty()
            && st.to_0.is_empty()
            && !st.lost
            && k.queues.iter().all(|q| q.is_empty())
            && k.order.is_empty()
            && k.emitted.is_empty()
            && k.toks.iter().all(|t| t.life != Life::Dying)
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
            for r in 0..REPLICAS {
                let Some(head) = k.queues[r].front() else {
                    continue;
                };
                let label = format!(
                    "k: replica {r}: {:?} ({}) reaches the cell and ",
                    head.val,
                    k.name(head.tok)
                );
                let mut first = st.clone();
                let n1 = self.replica(&mut first, r, false);
                let mut second = st.clone();
                let n2 = self.replica(&mut second, r, true);
                if second != first {
                    out.push((format!("{label}{n2}"), second));
                }
                out.push((format!("{label}{n1}"), first));
            }
            if let Some(&r) = k.order.front() {
                if !k.outs[r as usize].is_empty() {
                    let mut s = st.clone();
                    let what = self.collect(&mut s);
                    out.push((format!("k: the collector emits {what}"), s));
                }
            }
            if let Some(head) = k.emitted.front() {
                let label = format!("k: {:?} ({}) is held", head.val, k.name(head.tok));
                let mut s = st.clone();
                Self::hold(&mut s);
                out.push((label, s));
            }
            for (t, tok) in k.toks.iter().enumerate() {
                if tok.life != Life::Dying {
                    continue;
                }
                let what = match self.drop_target(k, t as u8) {
                    Some(p) => format!("moves into t{}", k.toks[p as usize].name),
                    None => "commits".to_string(),
                };
                let mut s = st.clone();
                self.drop_tok(&mut s, t as u8);
                let held: Vec<&Val> = tok.held.iter().map(|h| &h.1).collect();
                out.push((
                    format!(
                        "k: t{} (Dones {:?}, held {held:?}, tombstones {:?}) drops: {what}",
                        tok.name, tok.dones, tok.tomb
                    ),
                    s,
                ));
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
            Self::replace(&mut s);
            out.push(("node 0 replaces k".to_string(), s));
        }
        if quiescent && (st.log.is_empty() || st.drained_at == Some(st.dones)) {
            let mut s = st.clone();
            s.done = true;
            out.push(("node 0 ends the run".to_string(), s));
        }
        out
    }

    /// Explores every state reachable from the start, up to `limit`.
    pub(crate) fn explore(&self, limit: usize) -> Explored {
        explorer::explore(self, None, limit)
    }

    /// `runs` random runs from the start (seeded by `seed`).
    pub(crate) fn walk(&self, runs: usize, seed: u64) -> Explored {
        explorer::walk(self, &Default::default(), runs, seed)
    }
}

impl Space for Model {
    type State = State;
    type Val = Val;
    const LOSS_ONE_IN: u64 = 16;
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

    /// The output is checked against [`Model::expected`] record by
    /// record as node 0 writes it; `good` is not used.
    fn judge(
        &self,
        st: &State,
        _good: Option<&std::collections::BTreeSet<Vec<Val>>>,
    ) -> Result<Option<Vec<Val>>, String> {
        if let Some(what) = &st.broken {
            return Err(what.clone());
        }
        if !st.done {
            return Ok(None);
        }
        if st.output != self.expected {
            return Err(format!(
                "the run ends with output {:?}; the failure-free run writes {:?}",
                st.output, self.expected
            ));
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

    /// Inputs from a compact spec: each word is an input, its letters
    /// the records it brings to the split, in order: `a`, `b` for
    /// replica 0, `A`, `B` for replica 1 (`aB`: an `a` for replica 0,
    /// then a `b` for replica 1, one item, one token).
    fn net(spec: &str) -> Vec<Vec<(Kind, u8)>> {
        spec.split_whitespace()
            .map(|w| {
                w.chars()
                    .map(|c| match c {
                        'a' => (Kind::A, 0),
                        'b' => (Kind::B, 0),
                        'A' => (Kind::A, 1),
                        'B' => (Kind::B, 1),
                        _ => panic!("bad input {w}"),
                    })
                    .collect()
            })
            .collect()
    }

    fn spec(inputs: &[Vec<(Kind, u8)>]) -> String {
        let words: Vec<String> = inputs
            .iter()
            .map(|recs| {
                recs.iter()
                    .map(|r| match r {
                        (Kind::A, 0) => 'a',
                        (Kind::B, 0) => 'b',
                        (Kind::A, _) => 'A',
                        (Kind::B, _) => 'B',
                    })
                    .collect()
            })
            .collect();
        words.join(" ")
    }

    /// Every network of `n` inputs, each bringing one record (an `a` or
    /// a `b` for either replica) or, with `pairs`, also two (an item
    /// whose records go to one replica or to both, under one token).
    fn all_nets(n: usize, pairs: bool) -> Vec<Vec<Vec<(Kind, u8)>>> {
        let one: Vec<(Kind, u8)> = [Kind::A, Kind::B]
            .into_iter()
            .flat_map(|k| (0..REPLICAS as u8).map(move |r| (k, r)))
            .collect();
        let mut words: Vec<Vec<(Kind, u8)>> = one.iter().map(|r| vec![*r]).collect();
        if pairs {
            for x in &one {
                for y in &one {
                    words.push(vec![*x, *y]);
                }
            }
        }
        let mut nets = vec![Vec::new()];
        for _ in 0..n {
            let mut next = Vec::new();
            for net in &nets {
                for w in &words {
                    let mut v: Vec<Vec<(Kind, u8)>> = net.clone();
                    v.push(w.clone());
                    next.push(v);
                }
            }
            nets = next;
        }
        nets
    }

    /// Explores every network of 1 to `max` inputs (`pairs`: see
    /// [`all_nets`]) with `k` lost up to `losses` times; returns
    /// (networks, states).
    fn exhaust(max: usize, pairs: bool, losses: u8) -> (usize, usize) {
        let (mut nets, mut states) = (0, 0);
        for n in 1..=max {
            for inputs in all_nets(n, pairs) {
                let e = Model::new(inputs.clone(), Mutation::None, losses).explore(usize::MAX);
                if let Some(v) = &e.violation {
                    panic!("`{}`, {losses} losses: {}", spec(&inputs), show(v));
                }
                nets += 1;
                states += e.states;
            }
        }
        (nets, states)
    }

    /// Chosen networks: a fire; a pass by a taken slot whose output
    /// waits for the fire; a replica's output behind the other's waiting
    /// group (`a a A B b`); two groups linked each after the other
    /// (`a a A A b B`, `a A a A B b`); passes after a fire; cells that
    /// never fire (the drain); items with records for both replicas.
    const NETS: [&str; 10] = [
        "a b",
        "a a b",
        "a b a a",
        "a A b B",
        "a a A B b",
        "a a A A b B",
        "a A a A B b",
        "aA a A bB",
        "a a A",
        "aB bA a",
    ];

    /// Without a loss, every run writes exactly the failure-free
    /// sequence and ends.
    #[test]
    fn det_model_failure_free_runs_write_the_combinators_order() {
        let mut states = 0;
        let mut nets: Vec<Vec<Vec<(Kind, u8)>>> =
            (1..=3).flat_map(|n| all_nets(n, false)).collect();
        nets.extend(NETS.iter().map(|s| net(s)));
        for inputs in nets {
            let m = Model::new(inputs.clone(), Mutation::None, 0);
            let e = m.explore(usize::MAX);
            if let Some(v) = &e.violation {
                panic!("`{}`: {}", spec(&inputs), show(v));
            }
            assert!(e.ends > 0, "`{}`: no run ends", spec(&inputs));
            assert_eq!(e.outputs.len(), 1, "`{}`", spec(&inputs));
            states += e.states;
        }
        eprintln!("without a loss: {states} states");
    }

    /// Every network of up to three one-record inputs with `k` lost at
    /// every step up to twice, of up to two inputs of up to two records
    /// each twice, and the chosen networks (up to six inputs) once (twice
    /// for those of up to five records).
    #[test]
    fn det_model_survives_a_loss_at_every_step() {
        for (max, pairs, losses) in [(3, false, 2), (2, true, 2)] {
            let t = std::time::Instant::now();
            let (nets, states) = exhaust(max, pairs, losses);
            eprintln!(
                "up to {max} inputs (pairs {pairs}), {losses} losses: {nets} networks, {states} states, {:?}",
                t.elapsed()
            );
        }
        for s in NETS {
            let inputs = net(s);
            let records: usize = inputs.iter().map(|i| i.len()).sum();
            let losses = if records <= 5 { 2 } else { 1 };
            let m = Model::new(inputs, Mutation::None, losses);
            let e = m.explore(usize::MAX);
            if let Some(v) = &e.violation {
                panic!("`{s}`: {}", show(v));
            }
            eprintln!(
                "`{s}`, {losses} losses: {} states, {} ends",
                e.states, e.ends
            );
        }
    }

    /// Random runs of larger networks (seven to nine records), `k` lost
    /// up to three times: none may end wrong.
    #[test]
    fn det_model_random_runs_of_larger_networks() {
        for (i, s) in [
            "a a A A b B a A",
            "a A a A B b bB aA",
            "aA a Ab b B a A",
            "a b A a B a b A",
        ]
        .into_iter()
        .enumerate()
        {
            let e = Model::new(net(s), Mutation::None, 3).walk(300, 0x40 + i as u64);
            if let Some(v) = &e.violation {
                panic!("`{s}`: {}", show(v));
            }
            eprintln!("`{s}`: 300 runs, {} steps", e.states);
        }
    }

    /// The heavier searches: every network of up to four and of five
    /// one-record inputs (one loss), of up to three inputs of up to two
    /// records (one loss), of up to four one-record inputs (two losses). Run
    /// with `cargo test --release -p snet-engine --lib det_model --
    /// --ignored`.
    #[test]
    #[ignore]
    fn det_model_every_larger_network() {
        for (max, pairs, losses) in [(4, false, 1), (5, false, 1), (3, true, 1), (4, false, 2)] {
            let t = std::time::Instant::now();
            let (nets, states) = exhaust(max, pairs, losses);
            eprintln!(
                "up to {max} inputs (pairs {pairs}), {losses} losses: {nets} networks, {states} states, {:?}",
                t.elapsed()
            );
        }
    }

    /// Each mutation is caught by an exhaustive search of one of the
    /// chosen networks (`k` lost at most once), with the trace that
    /// leads to the violation; the protocol as built passes them all
    /// (the test above).
    #[test]
    fn det_model_every_mutation_is_caught() {
        for m in Mutation::ALL {
            let caught = NETS.iter().find_map(|s| {
                let e = Model::new(net(s), m, 1).explore(usize::MAX);
                e.violation.map(|v| (s, e.states, v))
            });
            match caught {
                Some((s, states, v)) => {
                    eprintln!("{m:?}: caught on `{s}` after {states} states: {}", show(&v))
                }
                None => panic!("{m:?} not caught"),
            }
        }
    }
}
