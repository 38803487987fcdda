//! Traces and profiles of a run (`--trace`, `--profile`): what each worker
//! did, when, and per component how much.
//!
//! *Cost when off.* [`crate::Config::instrument`] is `None`: no worker has a
//! `WorkerLog` (`crate::runtime::Ctx::log`), and every hook is one test
//! of that `Option` (per task, per item of a task, per box call, per
//! synchrocell firing), plus one add per record sent
//! (`crate::runtime::Ctx::send` counts records out unconditionally; a
//! branch would cost as much).
//!
//! *When on.* Each worker appends to its own log (no lock, no atomic per
//! event): a complete event per task ("batch": an entity's run of up to
//! 64 items), per box call (`box`; a call suspended after a batch of
//! outputs goes on in a `box-resume` event) and per synchrocell firing
//! (`sync`), nested inside their batch; per component counters
//! (`CompStats`); every millisecond or so the node's counters (input
//! admitted, output written, items queued); and flow events for sampled
//! records. At the end of the run the workers hand their logs to the node
//! (`crate::scheduler`), which makes a `NodeReport` and deposits it in
//! the [`Instrument`]; the embedder (`snet-runner`) writes the files.
//!
//! *Sampled records and flows.* An input record is followed when its
//! number is 1 more than a multiple of the sample rate (the first input
//! record always is). Every record carries the id of the flow it is
//! followed in (0: none) beside its deterministic-order stamps
//! (`crate::entity::Stamps::flow`: no byte more per record, nothing to
//! do when off), which every component hands on from its input to its
//! outputs and the wire carries (only when nonzero: a flag in the record
//! head). The entry entity's step on a
//! followed input record gives it flow id = the input record's number and
//! starts the flow (`s`); each later entity that processes a record of a
//! flow steps it (`t`), and the output, or an entity that sends nothing of
//! it on (a synchrocell storing it, a box with no output, a filter that
//! drops it), ends it (`f`). So each flow is one chain: one `s`, `t`s and
//! one `f`, in time order, which viewers draw whole.
//!
//! A step that sends on several records of its flow (a box's several
//! outputs, a filter's several output records) continues its flow with the
//! first that reaches a stateful entity and starts a new flow for each of
//! the others: a fresh id (unique in the run: above every input number,
//! with the node and thread in it), whose `s` carries `"args":{"parent":P}`
//! and lies at the step's own `t` (or `s`) of flow P, on the same thread at
//! the same time. A record of a flow sent by a step of another record (a
//! stored record released later, a suspended box call going on) starts a
//! new flow too, naming its old flow as parent. The renaming runs in
//! `crate::runtime::Ctx::send` only when flows are followed (a bit of
//! the byte an untraced send tests anyway); stateless entities run inside
//! a send see the records before it, so only records that land in an
//! inbox are counted.
//! All flow events bind to the enclosing batch or box call.
//!
//! *One time base.* Timestamps are `CLOCK_MONOTONIC` nanoseconds, which
//! every process of one machine shares (loopback and shared-memory runs;
//! MPI ranks on one machine). Ranks on different machines have unrelated
//! monotonic clocks: their events are placed on their own machine's time
//! line (documented in `docs/observability.md`).

use snet_core::{Graph, NodeId, Rank};

use crate::entity::{Entity, Item};
use crate::runtime::Kind;
use crate::sync::{Arc, Mutex};

mod report;
pub(crate) use report::NodeReport;

/// What to record in a run, and where the nodes' reports go.
pub struct Instrument {
    /// Record events (`--trace`).
    pub trace: bool,
    /// Flow events follow the records of every `sample`th input record (0: none).
    pub sample: u64,
    reports: std::sync::Mutex<Vec<NodeReport>>,
}

impl std::fmt::Debug for Instrument {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Instrument")
            .field("trace", &self.trace)
            .field("sample", &self.sample)
            .finish()
    }
}

impl Instrument {
    /// Per-component counters are always kept; `trace` adds the events.
    pub fn new(trace: bool, sample: u64) -> std::sync::Arc<Instrument> {
        std::sync::Arc::new(Instrument {
            trace,
            sample,
            reports: std::sync::Mutex::new(Vec::new()),
        })
    }

    /// The reports of the nodes run in this process so far, node 0 first.
    pub(crate) fn take_reports(&self) -> Vec<NodeReport> {
        let mut v = std::mem::take(&mut *self.reports.lock().unwrap_or_else(|e| e.into_inner()));
        v.sort_by_key(|r| r.node);
        v
    }

    pub(crate) fn deposit(&self, r: NodeReport) {
        self.reports
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(r);
    }
}

/// Nanoseconds of `CLOCK_MONOTONIC`: one time line for every process of a machine.
#[inline]
pub(crate) fn now_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid timespec to write; CLOCK_MONOTONIC always exists on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// One component's counters on one node.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct CompStats {
    /// Box calls (boxes), firings (synchrocells), records processed (the rest).
    pub calls: u64,
    pub records_in: u64,
    pub records_out: u64,
    /// Time workers spent running the component's entities (a filter run
    /// inside its sender counts in the sender's time).
    pub busy_ns: u64,
    /// The longest inbox seen at one of its entities.
    pub max_inbox: u64,
    /// Box calls suspended after a batch of outputs.
    pub suspensions: u64,
}

impl CompStats {
    fn add(&mut self, o: &CompStats) {
        self.calls += o.calls;
        self.records_in += o.records_in;
        self.records_out += o.records_out;
        self.busy_ns += o.busy_ns;
        self.max_inbox = self.max_inbox.max(o.max_inbox);
        self.suspensions += o.suspensions;
    }
}

/// Thread ids in traces: workers are 1, 2, ...; these are the others'.
pub(crate) const TID_READER: u32 = 1000;
pub(crate) const TID_WRITER: u32 = 1001;
pub(crate) const TID_OUT: u32 = 1002;
pub(crate) const TID_IN: u32 = 1003;

/// Slots beyond the graph's nodes, for entities no component stands for.
pub(crate) const SLOT_OUTPUT: u32 = 0;
pub(crate) const SLOT_REMOTE: u32 = 1;
pub(crate) const SLOT_COLLECTOR: u32 = 2;
pub(crate) const SLOT_OTHER: u32 = 3;
const SPECIAL: [(&str, &str); 4] = [
    ("output", "output"),
    ("to another node", "remote"),
    ("collector", "collector"),
    ("runtime", "runtime"),
];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Cat {
    Batch,
    Call,
    Resume,
    Fire,
}

impl Cat {
    fn name(self) -> &'static str {
        match self {
            Cat::Batch => "batch",
            Cat::Call => "box",
            Cat::Resume => "box-resume",
            Cat::Fire => "sync",
        }
    }
}

#[derive(Clone, Copy, Debug)]
pub(crate) enum Ev {
    Slice {
        slot: u32,
        cat: Cat,
        ts: u64,
        dur: u64,
        items: u32,
    },
    Flow {
        ph: u8,
        id: u64,
        ts: u64,
        /// The flow an `s` of a new flow was split from (0: none).
        parent: u64,
    },
    Counter {
        ts: u64,
        admitted: u64,
        written: u64,
        queued: i64,
    },
}

/// One thread's events and counters (no lock: only its thread writes it).
pub(crate) struct WorkerLog {
    pub(crate) tid: u32,
    pub(crate) name: String,
    pub(crate) trace: bool,
    pub(crate) sample: u64,
    pub(crate) events: Vec<Ev>,
    /// By slot: graph nodes first, then the `SLOT_*` entries.
    pub(crate) prof: Vec<CompStats>,
    pub(crate) last_counter: u64,
    /// The task being run, its items and records so far.
    cur: Current,
    cur_items: u32,
    cur_records: u64,
    /// When the last box call of this thread started (a sampled record's
    /// flow event at a box binds to its call).
    last_call: u64,
    /// The node's rank and new flows made so far (for fresh flow ids).
    rank: u32,
    new_flows: u64,
    /// The flow of the record the current step processes (0: none), and
    /// whether a record sent on by the step continues it.
    follow: u64,
    continued: bool,
    /// New flows split from `follow` in the current step (their `s` is
    /// logged with the step's event, at its time).
    children: Vec<u64>,
}

/// What the log needs to know of the entity whose task runs.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Current {
    pub(crate) slot: u32,
    /// Each record is a call (not for boxes and synchrocells, which count theirs).
    counts_calls: bool,
    /// Records out = records in (the output, a connection to another node).
    pub(crate) passes: bool,
    output: bool,
    remote: bool,
    /// The entry network's entity (node 0): sampled records start here.
    entry: bool,
    /// A box entity: its calls are its events (no batch event).
    pub(crate) is_box: bool,
}

impl Current {
    /// `ent`, whose licence the caller holds and whose task is about to run.
    pub(crate) fn of(
        ent: &Arc<Entity>,
        entry: Option<&Arc<Entity>>,
        rt: &crate::runtime::Runtime,
    ) -> Current {
        let n = rt.graph().nodes.len() as u32;
        let tagged = ent.node();
        let mut c = Current {
            slot: tagged.unwrap_or(n + SLOT_OTHER),
            counts_calls: true,
            entry: entry.is_some_and(|e| Arc::ptr_eq(e, ent)),
            ..Current::default()
        };
        if ent.shared_state().is_some() {
            return c;
        }
        // SAFETY: the caller holds `ent`'s licence and is not running it
        // yet; the reference ends here.
        match unsafe { ent.state() } {
            Kind::Box(_) => {
                c.counts_calls = false;
                c.is_box = true;
            }
            Kind::Synchrocell(_) => c.counts_calls = false,
            Kind::Output(_) => {
                c.slot = n + SLOT_OUTPUT;
                c.output = true;
                c.passes = true;
            }
            Kind::Remote(_) => {
                c.slot = tagged.unwrap_or(n + SLOT_REMOTE);
                c.remote = true;
                c.passes = true;
            }
            Kind::Collector(_) => c.slot = tagged.unwrap_or(n + SLOT_COLLECTOR),
            _ => {}
        }
        c
    }
}

/// A sampled record about to be processed: its flow id and when.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Hop {
    id: u64,
    ts: u64,
}

impl WorkerLog {
    pub(crate) fn new(
        ins: &Instrument,
        graph: &Graph,
        rank: Rank,
        tid: u32,
        name: String,
    ) -> WorkerLog {
        let nodes = graph.nodes.len() as u32;
        WorkerLog {
            tid,
            name,
            trace: ins.trace,
            sample: ins.sample,
            events: Vec::new(),
            prof: vec![CompStats::default(); nodes as usize + SPECIAL.len()],
            last_counter: 0,
            cur: Current::default(),
            cur_items: 0,
            cur_records: 0,
            last_call: 0,
            rank: rank.0,
            new_flows: 0,
            follow: 0,
            continued: false,
            children: Vec::new(),
        }
    }

    /// Whether records are followed in flows: [`crate::runtime::Ctx`] then
    /// hands each record it sends to [`WorkerLog::sending`].
    pub(crate) fn follows_flows(&self) -> bool {
        self.trace && self.sample > 0
    }

    /// A task of `cur`'s entity starts, with `inbox` items waiting.
    pub(crate) fn begin(&mut self, cur: Current, inbox: u64) {
        self.cur = cur;
        self.cur_items = 0;
        self.cur_records = 0;
        self.inbox(inbox);
    }

    /// The task ended: its items and records.
    pub(crate) fn end(&mut self) -> (u32, u64) {
        (self.cur_items, self.cur_records)
    }

    /// The current entity's inbox held `n` items.
    #[inline]
    pub(crate) fn inbox(&mut self, n: u64) {
        let slot = self.cur.slot;
        let s = self.stats(slot);
        s.max_inbox = s.max_inbox.max(n);
    }

    /// An item of the current task is about to be processed (a followed
    /// input record gets its flow at the entry).
    #[inline]
    pub(crate) fn item(&mut self, item: &mut Item) -> Option<Hop> {
        self.cur_items += 1;
        self.follow = 0;
        self.children.clear();
        let Item::Rec(r) = item else {
            return None;
        };
        self.cur_records += 1;
        let c = self.cur;
        let s = self.stats(c.slot);
        s.records_in += 1;
        if c.counts_calls {
            s.calls += 1;
        }
        if !self.follows_flows() {
            return None;
        }
        if c.entry && r.det.flow() == 0 {
            if let Some(n) = self.sampled(r.origin) {
                r.det.set_flow(n);
            }
        }
        let id = r.det.flow();
        if id == 0 {
            return None;
        }
        self.follow = id;
        self.continued = false;
        Some(Hop { id, ts: now_ns() })
    }

    /// A followed record was processed: its flow's event for the step, and
    /// the starts of the flows split from it.
    pub(crate) fn hop(&mut self, mut h: Hop) {
        let c = self.cur;
        if c.is_box && self.last_call >= h.ts {
            // Inside the call's event (a box's batch has none).
            h.ts = self.last_call;
        }
        // A connection to another node sends its records on by the wire.
        let stopped = !self.continued && !c.remote;
        if c.entry {
            self.flow(b's', h.id, h.ts, 0);
            if stopped {
                self.flow(b'f', h.id, h.ts, 0);
            }
        } else {
            let ph = if c.output || stopped { b'f' } else { b't' };
            self.flow(ph, h.id, h.ts, 0);
        }
        for i in 0..self.children.len() {
            let child = self.children[i];
            self.flow(b's', child, h.ts, h.id);
        }
        self.children.clear();
        self.follow = 0;
    }

    /// A record of a flow is about to land in an entity's inbox (sent by
    /// the current step): the first of the step's own flow continues it;
    /// any other starts a new flow split from the one it was in.
    #[cold]
    #[inline(never)]
    pub(crate) fn sending(&mut self, item: &mut Item) {
        let Item::Rec(r) = item else {
            return;
        };
        let id = r.det.flow();
        if id == 0 {
            return;
        }
        if id == self.follow && !self.continued {
            self.continued = true;
            return;
        }
        let child = self.fresh_flow();
        r.det.set_flow(child);
        if id == self.follow {
            self.children.push(child);
        } else {
            // Not the current step's record: its flow starts here and now.
            self.flow(b's', child, now_ns(), id);
        }
    }

    /// A flow id no other flow of the run has: above every input number
    /// (those stop at `u32::MAX`), then the thread (12 bits) and the node
    /// (16 bits) below a count of this thread's new flows; below 2^53
    /// (exact in a viewer's JavaScript numbers) for 2^25 new flows a thread.
    fn fresh_flow(&mut self) -> u64 {
        let n = self.new_flows;
        self.new_flows += 1;
        ((n + 16) << 28) | (u64::from(self.rank & 0xffff) << 12) | u64::from(self.tid & 0xfff)
    }

    #[inline]
    pub(crate) fn stats(&mut self, slot: u32) -> &mut CompStats {
        let i = (slot as usize).min(self.prof.len() - 1);
        &mut self.prof[i]
    }

    /// Whether records of `origin` are followed: those of input records
    /// 1, 1 + N, 1 + 2N, ... (N = the sample rate), so the first input
    /// record is always followed, even in a run of fewer than N records.
    #[inline]
    pub(crate) fn sampled(&self, origin: crate::Origin) -> Option<u64> {
        if !self.trace || self.sample == 0 {
            return None;
        }
        origin.number().filter(|&n| follows(self.sample, n))
    }

    #[inline]
    pub(crate) fn slice(&mut self, slot: u32, cat: Cat, ts: u64, end: u64, items: u32) {
        if self.trace {
            self.events.push(Ev::Slice {
                slot,
                cat,
                ts,
                dur: end.saturating_sub(ts),
                items,
            });
        }
    }

    #[inline]
    pub(crate) fn flow(&mut self, ph: u8, id: u64, ts: u64, parent: u64) {
        self.events.push(Ev::Flow { ph, id, ts, parent });
    }

    /// A box call (or its continuation) from `t0` to `t1` on node `node`'s box.
    pub(crate) fn call(&mut self, node: NodeId, resumed: bool, t0: u64, t1: u64, suspended: bool) {
        self.last_call = t0;
        let slot = node.index() as u32;
        let s = self.stats(slot);
        if !resumed {
            s.calls += 1;
        }
        if suspended {
            s.suspensions += 1;
        }
        let cat = if resumed { Cat::Resume } else { Cat::Call };
        self.slice(slot, cat, t0, t1, 0);
    }

    /// A synchrocell fired.
    pub(crate) fn fire(&mut self, node: NodeId, t0: u64, t1: u64) {
        let slot = node.index() as u32;
        self.stats(slot).calls += 1;
        self.slice(slot, Cat::Fire, t0, t1, 0);
    }

    pub(crate) fn counter(&mut self, ts: u64, admitted: u64, written: u64, queued: i64) {
        self.last_counter = ts;
        if self.trace {
            self.events.push(Ev::Counter {
                ts,
                admitted,
                written,
                queued,
            });
        }
    }
}

/// Whether the records of input record `number` (1, 2, ...) are followed
/// at sample rate `sample` (> 0): numbers 1, 1 + sample, 1 + 2 sample, ...
#[inline]
fn follows(sample: u64, number: u64) -> bool {
    number.wrapping_sub(1).is_multiple_of(sample)
}

/// Logs handed over by the node's threads at their end.
#[derive(Default)]
pub(crate) struct Logs(pub(crate) Mutex<Vec<WorkerLog>>);

impl Logs {
    pub(crate) fn put(&self, l: WorkerLog) {
        crate::sync::lock(&self.0).push(l);
    }

    pub(crate) fn take(&self) -> Vec<WorkerLog> {
        std::mem::take(&mut *crate::sync::lock(&self.0))
    }
}

#[cfg(test)]
mod tests {
    use super::follows;

    #[test]
    fn the_first_input_record_is_always_followed() {
        for sample in [1, 2, 7, 1000] {
            assert!(follows(sample, 1), "sample {sample}");
        }
        let at = |sample| (1..=25).filter(|&n| follows(sample, n)).collect::<Vec<_>>();
        assert_eq!(at(1), (1..=25).collect::<Vec<_>>());
        assert_eq!(at(7), [1, 8, 15, 22]);
        assert_eq!(at(1000), [1]);
        assert!(follows(1000, 1001) && !follows(1000, 1000));
    }
}
