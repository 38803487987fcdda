//! A model of ordering markers crossing to a node that may be lost
//! (ARCHITECTURE.md, "Markers and a lost node"; issue 40), and its
//! exhaustive exploration with the loss of the node at every step (or
//! never), on [`super::explorer`].
//!
//! The network is a deterministic combinator on node 0 around a
//! placement on node 1, cut to what the protocol meets:
//!
//! ```text
//!   node 0: input i -> record i, then marker i, to node 1  (the dispatcher)
//!   node 1: a marker splits in two halves, one down path P (nothing
//!           else on it), one down path Q, behind the records;
//!           Q: a synchrocell with one slot (a record is stored or
//!           passes: an arrival race, abstracted as a free choice; a
//!           record meeting a stored one fires the cell, and the merged
//!           record carries the firing record's stamp)
//!   node 1 -> node 0: what leaves P and Q                  (custody)
//!   node 0: the collector, then the output
//! ```
//!
//! What the engine does, as modelled: node 0 logs records *and markers*
//! in send order (`custody::Log`) until node 1 reports them done, and
//! replays what it still holds, in that order, to a replacement; node 1
//! gives each item a token (a marker's copies each carry a clone), holds
//! what goes back to node 0 until the token's last clone is gone, and
//! then commits it (the held records and copies, and the `Done`) in one
//! message; the tokens of the records a cell merges form one group
//! (`custody::union`), which also carries the cell's tombstone; a
//! marker's commit waits until every item received before it has
//! committed (`custody::CommitOrder`); at the end of the input node 0
//! asks node 1 to drain (a stored record's token is dropped).
//!
//! Properties checked at every state: the collector never gets a share
//! of a marker twice (the shares of one number never sum to more than
//! one), never gets a record after its number completed (the output
//! order the combinator fixes), and the run ends (no state where nothing
//! can happen) with an output, *in order*, that a failure-free run
//! gives; then node 0's log is empty and every number completed.
//!
//! [`Mutation`]s: each a plausible shortcut the explorer must catch.

use std::collections::hash_map::DefaultHasher;
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::hash::{Hash, Hasher};

use super::explorer::{self, Space};

/// A protocol change the model must catch.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Mutation {
    /// The protocol as built.
    None,
    /// Markers are numbered, not logged or held (as before this model):
    /// a node passes their copies on at once.
    MarkerNotLogged,
    /// Each copy of a marker is committed when it is held, the `Done`
    /// with the last one (the copies are not all or none).
    CopiesApart,
    /// A marker commits as soon as its copies are held, without waiting
    /// for the items received before it.
    NoCommitOrder,
}

impl Mutation {
    pub(crate) const ALL: [Mutation; 3] = [
        Mutation::MarkerNotLogged,
        Mutation::CopiesApart,
        Mutation::NoCommitOrder,
    ];
}

/// What node 0 sends: record `i` (its stamp is `i`), or marker `i`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum Sent {
    Rec(u8),
    Marker(u8),
}

/// An output value: record `i` passed (`i`), or records `a` and `b`
/// merged by the cell (`100 + 10 a + b`).
type Val = u16;

/// What travels on node 1, or back to node 0: a record with its stamp
/// and value, or a marker copy of number `seq` with share `2^-exp`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Thing {
    Rec { seq: u8, val: Val },
    Copy { seq: u8, exp: u8 },
}

/// A thing on node 1 and the token it carries (an item id), if any.
type Carried = (Thing, Option<u64>);

/// A token's group (by its root's id) and what it holds.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
struct Tok {
    root: u64,
    marker: bool,
    held: Vec<Thing>,
    fired: bool,
}

/// Node 1 -> node 0: a commit (what it held, the `Done`s, whether it
/// fired the cell), or a copy sent at once (the mutations).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Commit {
    things: Vec<Thing>,
    done: Vec<u64>,
    fired: bool,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
struct Node1 {
    inbox: VecDeque<(u64, Sent)>,
    p: VecDeque<Carried>,
    q: VecDeque<Carried>,
    /// The cell's stored record (value, stamp, token).
    slot: Option<(Val, u8, Option<u64>)>,
    fired: bool,
    drained: bool,
    toks: BTreeMap<u64, Tok>,
    /// Items received and not committed (`CommitOrder::pending`).
    pending: BTreeSet<u64>,
    /// Marker commits waiting for an earlier item's.
    waiting: BTreeMap<u64, Commit>,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct State {
    /// Inputs node 0 has sent.
    sent: u8,
    next_id: u64,
    log: BTreeMap<u64, Sent>,
    /// Node 0 -> node 1 (FIFO), with the items' ids.
    down: VecDeque<(u64, Sent)>,
    /// Node 1 -> node 0 (FIFO), whole messages.
    up: VecDeque<Commit>,
    n1: Node1,
    /// Node 0: a committed group fired the cell (the tombstone).
    tomb: bool,
    lost: bool,
    /// Node 0 asked node 1 to drain since the log last changed.
    drain_asked: bool,
    // The collector.
    current: u8,
    buffered: BTreeMap<u8, Vec<Val>>,
    /// Shares of each number that arrived, in units of 2^-2.
    shares: BTreeMap<u8, u8>,
    complete: BTreeSet<u8>,
    out: Vec<Val>,
    error: Option<String>,
}

pub(crate) struct Model {
    inputs: u8,
    mutation: Mutation,
    losses: bool,
}

const LOSS: &str = "node 1 lost";

impl Model {
    pub(crate) fn new(inputs: u8, mutation: Mutation, losses: bool) -> Model {
        Model {
            inputs,
            mutation,
            losses,
        }
    }

    fn logs_markers(&self) -> bool {
        self.mutation != Mutation::MarkerNotLogged
    }

    /// Node 0 queues `s` for node 1: the next id, kept in the log.
    fn send(&self, st: &mut State, s: Sent) {
        let id = st.next_id;
        st.next_id += 1;
        if matches!(s, Sent::Rec(_)) || self.logs_markers() {
            st.log.insert(id, s);
            st.drain_asked = false;
        }
        st.down.push_back((id, s));
    }

    /// Node 1: every group none of whose tokens is carried any more
    /// commits (in id order of their roots).
    fn settle(&self, n: &mut Node1, up: &mut VecDeque<Commit>) {
        loop {
            let carried: BTreeSet<u64> =
                n.p.iter()
                    .chain(n.q.iter())
                    .filter_map(|c| c.1)
                    .chain(n.slot.and_then(|s| s.2))
                    .map(|t| n.toks[&t].root)
                    .collect();
            let Some(root) = n
                .toks
                .values()
                .map(|t| t.root)
                .find(|r| !carried.contains(r))
            else {
                return;
            };
            let ids: Vec<u64> = n
                .toks
                .iter()
                .filter(|(_, t)| t.root == root)
                .map(|(&id, _)| id)
                .collect();
            let mut c = Commit {
                things: Vec::new(),
                done: ids.clone(),
                fired: false,
            };
            let mut marker = false;
            for id in &ids {
                let t = n.toks.remove(id).unwrap_or_default();
                c.things.extend(t.held);
                c.fired |= t.fired;
                marker |= t.marker;
            }
            self.commit(n, marker, c, up);
        }
    }

    /// `CommitOrder::commit`.
    fn commit(&self, n: &mut Node1, marker: bool, c: Commit, up: &mut VecDeque<Commit>) {
        let id = c.done[0];
        let earlier = |n: &Node1, id: u64| n.pending.first().is_some_and(|&f| f < id);
        if marker && self.mutation != Mutation::NoCommitOrder && earlier(n, id) {
            n.waiting.insert(id, c);
            return;
        }
        for d in &c.done {
            n.pending.remove(d);
        }
        up.push_back(c);
        while let Some(&m) = n.waiting.keys().next() {
            if earlier(n, m) {
                break;
            }
            n.pending.remove(&m);
            up.extend(n.waiting.remove(&m));
        }
    }

    /// A thing reaches node 1's connection back to node 0.
    fn leave(&self, n: &mut Node1, (thing, tok): Carried, up: &mut VecDeque<Commit>) {
        match tok {
            Some(t) => {
                let copy = matches!(thing, Thing::Copy { .. });
                if copy && self.mutation == Mutation::CopiesApart {
                    // Sent at once; the `Done` goes when the last is gone.
                    up.push_back(Commit {
                        things: vec![thing],
                        done: Vec::new(),
                        fired: false,
                    });
                } else if let Some(x) = n.toks.get_mut(&t) {
                    x.held.push(thing);
                }
            }
            None => up.push_back(Commit {
                things: vec![thing],
                done: Vec::new(),
                fired: false,
            }),
        }
    }

    /// The collector gets `t`.
    fn collect(st: &mut State, t: Thing) {
        match t {
            Thing::Rec { seq, val } => {
                if seq < st.current || st.complete.contains(&seq) {
                    st.error
                        .get_or_insert(format!("record {val} of number {seq} after it completed"));
                } else if seq == st.current {
                    st.out.push(val);
                } else {
                    st.buffered.entry(seq).or_default().push(val);
                }
            }
            Thing::Copy { seq, exp } => {
                let units = 4u8 >> exp;
                let s = st.shares.entry(seq).or_default();
                *s += units;
                if *s > 4 || st.complete.contains(&seq) || seq < st.current {
                    st.error
                        .get_or_insert(format!("a share of marker {seq} counted twice"));
                    return;
                }
                if *s == 4 {
                    st.complete.insert(seq);
                    while st.complete.contains(&st.current) {
                        st.current += 1;
                        let c = st.current;
                        st.out.extend(st.buffered.remove(&c).unwrap_or_default());
                    }
                }
            }
        }
    }

    /// Node 1 takes the next item from its inbox.
    fn receive(&self, st: &mut State) {
        let Some((id, s)) = st.n1.inbox.pop_front() else {
            return;
        };
        let n = &mut st.n1;
        let tokened = matches!(s, Sent::Rec(_)) || self.logs_markers();
        if tokened {
            n.pending.insert(id);
            n.toks.insert(
                id,
                Tok {
                    root: id,
                    marker: matches!(s, Sent::Marker(_)),
                    ..Tok::default()
                },
            );
        }
        let tok = tokened.then_some(id);
        match s {
            Sent::Rec(i) => n.q.push_back((
                Thing::Rec {
                    seq: i,
                    val: i as Val,
                },
                tok,
            )),
            Sent::Marker(i) => {
                n.p.push_back((Thing::Copy { seq: i, exp: 1 }, tok));
                n.q.push_back((Thing::Copy { seq: i, exp: 1 }, tok));
            }
        }
        self.settle(&mut st.n1, &mut st.up);
    }

    /// Node 1's cell takes the next thing on Q; `store`: an empty slot
    /// stores the record (the race's other outcome passes it).
    fn cell(&self, st: &mut State, store: bool) {
        let Some((thing, tok)) = st.n1.q.pop_front() else {
            return;
        };
        let n = &mut st.n1;
        match thing {
            Thing::Rec { seq, val } if !n.fired && n.slot.is_none() && store && !n.drained => {
                n.slot = Some((val, seq, tok));
            }
            Thing::Rec { seq, val } if !n.fired && n.slot.is_some() => {
                let Some((a, _, ta)) = n.slot.take() else {
                    return;
                };
                n.fired = true;
                let merged = Thing::Rec {
                    seq,
                    val: 100 + 10 * a + val,
                };
                // One group: the stored record's token joins the firing one's.
                if let (Some(ta), Some(tb)) = (ta, tok) {
                    let (ra, rb) = (n.toks[&ta].root, n.toks[&tb].root);
                    for t in n.toks.values_mut() {
                        if t.root == ra {
                            t.root = rb;
                        }
                    }
                    if let Some(t) = n.toks.get_mut(&tb) {
                        t.fired = true;
                    }
                }
                self.leave(n, (merged, tok), &mut st.up);
            }
            _ => self.leave(n, (thing, tok), &mut st.up),
        }
        self.settle(&mut st.n1, &mut st.up);
    }
}

impl Space for Model {
    type State = State;
    type Val = Val;

    fn initial(&self) -> State {
        State {
            sent: 0,
            next_id: 0,
            log: BTreeMap::new(),
            down: VecDeque::new(),
            up: VecDeque::new(),
            n1: Node1::default(),
            tomb: false,
            lost: false,
            drain_asked: false,
            current: 0,
            buffered: BTreeMap::new(),
            shares: BTreeMap::new(),
            complete: BTreeSet::new(),
            out: Vec::new(),
            error: None,
        }
    }

    fn steps(&self, st: &State) -> Vec<(String, State)> {
        let mut v = Vec::new();
        let mut step = |label: String, f: &dyn Fn(&mut State)| {
            let mut t = st.clone();
            f(&mut t);
            v.push((label, t));
        };
        if st.sent < self.inputs {
            step(format!("node 0 sends input {}", st.sent), &|t| {
                let i = t.sent;
                t.sent += 1;
                self.send(t, Sent::Rec(i));
                self.send(t, Sent::Marker(i));
            });
        }
        if !st.down.is_empty() {
            step("node 1 gets an item".into(), &|t| {
                if let Some(x) = t.down.pop_front() {
                    t.n1.inbox.push_back(x);
                }
            });
        }
        if !st.n1.inbox.is_empty() {
            step("node 1 routes an item".into(), &|t| self.receive(t));
        }
        if !st.n1.p.is_empty() {
            step("node 1: P passes a copy".into(), &|t| {
                if let Some(c) = t.n1.p.pop_front() {
                    self.leave(&mut t.n1, c, &mut t.up);
                    self.settle(&mut t.n1, &mut t.up);
                }
            });
        }
        if let Some((front, _)) = st.n1.q.front() {
            step("node 1: the cell takes the next (passes)".into(), &|t| {
                self.cell(t, false)
            });
            if matches!(front, Thing::Rec { .. }) && st.n1.slot.is_none() && !st.n1.fired {
                step("node 1: the cell takes the next (stores)".into(), &|t| {
                    self.cell(t, true)
                });
            }
        }
        if !st.up.is_empty() {
            step("node 0 gets a message".into(), &|t| {
                let Some(c) = t.up.pop_front() else { return };
                for th in c.things {
                    Model::collect(t, th);
                }
                for d in c.done {
                    t.log.remove(&d);
                }
                if c.fired {
                    t.tomb = true;
                }
                t.drain_asked = false;
            });
        }
        // Quiescent at the end of the input with records still in custody.
        let quiet = st.sent == self.inputs
            && st.down.is_empty()
            && st.up.is_empty()
            && st.n1.inbox.is_empty()
            && st.n1.p.is_empty()
            && st.n1.q.is_empty();
        if quiet && !st.log.is_empty() && !st.drain_asked {
            step("node 0 asks node 1 to drain".into(), &|t| {
                t.drain_asked = true;
                t.n1.drained = true;
                // The stored record stays, without custody: its token
                // is no longer carried.
                t.n1.slot = None;
                self.settle(&mut t.n1, &mut t.up);
            });
        }
        // The loss: node 1's state is gone (what it sent is delivered
        // first: a message is whole or not sent), what node 0 had
        // queued for it too; node 0 replays its log, in id order.
        if self.losses && !st.lost && st.up.is_empty() {
            step(LOSS.into(), &|t| {
                t.lost = true;
                t.n1 = Node1 {
                    fired: t.tomb,
                    ..Node1::default()
                };
                t.down = t.log.iter().map(|(&id, &s)| (id, s)).collect();
                t.drain_asked = false;
            });
        }
        v
    }

    fn key(&self, st: &State) -> u64 {
        let mut h = DefaultHasher::new();
        st.hash(&mut h);
        h.finish()
    }

    fn judge(
        &self,
        st: &State,
        good: Option<&BTreeSet<Vec<Val>>>,
    ) -> Result<Option<Vec<Val>>, String> {
        if let Some(e) = &st.error {
            return Err(e.clone());
        }
        let quiet = st.sent == self.inputs
            && st.down.is_empty()
            && st.up.is_empty()
            && st.n1.inbox.is_empty()
            && st.n1.p.is_empty()
            && st.n1.q.is_empty();
        if !(quiet && st.log.is_empty()) {
            return Ok(None);
        }
        // Node 0 ends the run.
        if st.current != self.inputs {
            return Err(format!(
                "the run ended with marker {} incomplete",
                st.current
            ));
        }
        if let Some(g) = good {
            if !g.contains(&st.out) {
                return Err(format!(
                    "output {:?} (in order) is no failure-free run's",
                    st.out
                ));
            }
        }
        Ok(Some(st.out.clone()))
    }

    fn is_loss(&self, label: &str) -> bool {
        label == LOSS
    }

    fn stuck(&self, st: &State) -> String {
        format!(
            "stuck: collector at {}, shares {:?}, log {:?}",
            st.current, st.shares, st.log
        )
    }

    const LOSS_MOVES_ON: bool = false;
    const LOSS_ONE_IN: u64 = 16;
}

/// The failure-free outputs (in order), then an exploration with a loss.
pub(crate) fn check(
    inputs: u8,
    mutation: Mutation,
) -> (BTreeSet<Vec<Val>>, explorer::Explored<Val>) {
    let clean = explorer::explore(&Model::new(inputs, Mutation::None, false), None, usize::MAX);
    assert!(clean.violation.is_none(), "{:?}", clean.violation);
    let good = clean.outputs;
    let e = explorer::explore(&Model::new(inputs, mutation, true), Some(&good), usize::MAX);
    (good, e)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dist::explorer::show;

    /// Without a loss, the outputs are the network's: each input's
    /// record in input order, or the two merged (in the later one's
    /// place), or the first passed and the second stored to the end
    /// (drained).
    #[test]
    fn marker_model_failure_free_runs_keep_the_order() {
        let e = explorer::explore(&Model::new(2, Mutation::None, false), None, usize::MAX);
        assert!(
            e.violation.is_none(),
            "{}",
            show(e.violation.as_ref().unwrap())
        );
        let want: BTreeSet<Vec<Val>> = [vec![0, 1], vec![101], vec![0]].into_iter().collect();
        assert_eq!(e.outputs, want);
    }

    /// Node 1 lost at every step (or never) and replaced: every run ends
    /// with a failure-free run's output, in order, no share counted twice.
    #[test]
    fn marker_model_survives_a_loss_at_every_step() {
        for inputs in 1..=4 {
            let (good, e) = check(inputs, Mutation::None);
            if let Some(v) = &e.violation {
                panic!("{inputs} inputs: {}", show(v));
            }
            assert!(e.ends > 0 && !good.is_empty());
            eprintln!("{inputs} inputs: {} states, {} ends", e.states, e.ends);
        }
    }

    /// Each shortcut is caught, with the trace that leads to it.
    #[test]
    fn marker_model_every_mutation_is_caught() {
        for m in Mutation::ALL {
            let caught = [1, 2, 3].into_iter().find_map(|inputs| {
                let (_, e) = check(inputs, m);
                e.violation.map(|v| (inputs, e.states, v))
            });
            match caught {
                Some((inputs, states, v)) => {
                    eprintln!(
                        "{m:?}: caught with {inputs} inputs after {states} states: {}",
                        show(&v)
                    )
                }
                None => panic!("{m:?} not caught"),
            }
        }
    }
}
