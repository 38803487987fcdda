//! What every entity of a run shares ([`Runtime`]), the entity kinds
//! ([`Kind`]), the small context an entity works in ([`Ctx`]), and the
//! dispatch of one item to its entity ([`process`]).
//!
//! # Why this module and the entity modules import each other
//!
//! [`Kind`] names every entity type (the filter chain, the synchrocell, the
//! box, the dispatchers, the collector, the output, the remote entity), so
//! this module imports each entity module; and each entity module imports
//! [`Ctx`] (and through it [`Runtime`]) from here, because processing an
//! item means sending through the worker's context. The cycle is the
//! design: the dispatch is a closed enum matched in [`process`] (an
//! [`Entity`]'s state is a `Kind`), so every kind is named here, and every
//! kind works through the one context type defined here. A new entity kind
//! goes into its own module and into [`Kind`] and [`process`]; nothing
//! outside the engine sees either side.

use std::collections::VecDeque;

use snet_core::{Graph, NodeId, Rank};

use crate::boxes::{BoxEntity, BoxImpl};
use crate::collector::Collector;
use crate::entity::{Entity, Item};
use crate::feedback::{FeedbackEntry, FeedbackRouter};
use crate::filter::FilterChain;
use crate::output::OutputEntity;
use crate::parallel::{FilterParallel, ParallelEntity};
use crate::program::Program;
use crate::split::{SplitEntity, SplitSynchrocell};
use crate::star::{FilterStar, FusedSynchrocell, StarEntity};
use crate::sync::{Arc, AtomicU64, Ordering};
use crate::synchrocell::SynchrocellEntity;
use crate::EngineError;

/// Shards of the counts of records held in synchrocells ([`Runtime::held_now`]).
const HELD_SHARDS: usize = 8;

/// Counters per shard: the template nodes, rounded up to 8 (64 bytes), so
/// that two shards share at most the line where one ends and the next
/// begins (the slice itself is not aligned to a line).
fn held_stride(nodes: usize) -> usize {
    nodes.div_ceil(8).max(1) * 8
}

/// What every entity of a run shares.
pub(crate) struct Runtime {
    pub prog: Program,
    /// Box implementations by box id (None: not used by the entry network).
    pub boxes: Vec<Option<Arc<dyn BoxImpl>>>,
    /// This node and the number of nodes.
    pub node: Rank,
    pub nodes: u32,
    /// The distribution layer's state on this node.
    pub(crate) net: crate::dist::Net,
    pub box_concurrency: usize,
    next_owner: AtomicU64,
    pub entities: AtomicU64,
    /// Records written (one add per record by the output's licence
    /// holder, read by admission): alone on its lines, so that writing it
    /// does not take the lines of the fields every box call reads from
    /// the other worker.
    pub outputs: crate::sync::Padded<AtomicU64>,
    /// Items waiting in the inboxes of this node's entities, roughly: each
    /// [`Ctx`] counts what it queues and takes and adds its count here in
    /// steps of [`QUEUED_STEP`] (and when its worker finishes a task), so the
    /// figure may be off by that much per thread. What a suspended
    /// expansion looks at before it adds more ([`crate::star::FilterStar`]).
    /// Alone on its lines, as `outputs`.
    queued: crate::sync::Padded<std::sync::atomic::AtomicIsize>,
    /// The size of the stack each box call runs on ([`crate::callstack`]).
    pub box_stack: usize,
    /// Box calls suspended so far (`--stats`).
    pub suspensions: AtomicU64,
    /// Entities whose work is suspended right now (box calls, fused star
    /// expansions): what waits in their inboxes cannot drain before they
    /// go on, so [`Ctx::backlog_elsewhere`] leaves it out.
    suspended: crate::sync::Mutex<Vec<Arc<Entity>>>,
    /// Observer destinations opened on this node ([`crate::observe`]).
    pub(crate) observers: crate::observe::Observers,
    /// Synchrocell entities that have held a record (the end-of-run
    /// report of records that never left, [`Runtime::left_in_cells`]).
    holding: crate::sync::Mutex<Vec<Arc<Entity>>>,
    /// Per template node: the records its synchrocells hold right now (the
    /// live dump, [`crate::stuck`]), in [`HELD_SHARDS`] shards of
    /// `held_stride` counters each (a worker adds to the shard of its
    /// number: workers storing records in cells of one template, e.g. a
    /// split's, do not pass one cache line back and forth per record).
    held: Box<[std::sync::atomic::AtomicI64]>,
    held_stride: usize,
    /// Per worker: the box call in progress (the live dump).
    pub(crate) now: Box<[crate::stuck::WorkerNow]>,
    /// Traces and profiles (`None`: off, the workers keep no logs).
    pub(crate) instrument: Option<std::sync::Arc<crate::instrument::Instrument>>,
    /// The workers' logs, handed over when they stop.
    pub(crate) logs: crate::instrument::Logs,
}

/// Outputs suspendable work (a box call, a fused star's expansion) sends
/// before it yields its worker, so that the entities downstream consume
/// them first (fewer in the model checks, so that they see suspensions).
pub(crate) const YIELD_AFTER: usize = if cfg!(loom) { 2 } else { 64 };

/// Suspended work goes on only when fewer items than this wait in the
/// inboxes of the node's entities that are not suspended themselves
/// ([`Ctx::backlog_elsewhere`]).
/// (1 in the model checks, so that they see full backlogs.)
pub(crate) const BACKLOG_LIMIT: isize = if cfg!(loom) { 1 } else { 1024 };

/// How far a [`Ctx`]'s own count of queued items may drift before it is
/// added to [`Runtime::queued`].
const QUEUED_STEP: isize = 64;

impl Runtime {
    pub(crate) fn new(
        prog: Program,
        boxes: Vec<Option<Arc<dyn BoxImpl>>>,
        net: crate::dist::Net,
        box_concurrency: usize,
    ) -> Runtime {
        Runtime {
            boxes,
            node: net.me,
            nodes: net.nodes,
            net,
            box_concurrency,
            next_owner: AtomicU64::new(1),
            entities: AtomicU64::new(0),
            queued: crate::sync::Padded(std::sync::atomic::AtomicIsize::new(0)),
            outputs: crate::sync::Padded(AtomicU64::new(0)),
            box_stack: crate::callstack::DEFAULT_STACK,
            suspensions: AtomicU64::new(0),
            suspended: crate::sync::Mutex::new(Vec::new()),
            observers: Default::default(),
            holding: crate::sync::Mutex::new(Vec::new()),
            held: (0..HELD_SHARDS * held_stride(prog.graph.nodes.len()))
                .map(|_| std::sync::atomic::AtomicI64::new(0))
                .collect(),
            held_stride: held_stride(prog.graph.nodes.len()),
            now: Box::new([]),
            instrument: None,
            logs: Default::default(),
            prog,
        }
    }

    /// A log for a thread of this node when the run is traced or profiled.
    pub(crate) fn new_log(
        &self,
        tid: u32,
        name: String,
    ) -> Option<Box<crate::instrument::WorkerLog>> {
        let ins = self.instrument.as_ref()?;
        Some(Box::new(crate::instrument::WorkerLog::new(
            ins,
            self.graph(),
            self.node,
            tid,
            name,
        )))
    }

    /// Keeps `e` in the node's list of suspended entities exactly while
    /// `now` (its work is suspended; see [`Runtime::suspended`]); `listed`
    /// is the entity's own record of whether it is in the list.
    #[inline]
    pub(crate) fn set_suspended(&self, e: &Arc<Entity>, listed: &mut bool, now: bool) {
        if *listed != now {
            *listed = now;
            self.list_suspended(e, now);
        }
    }

    #[inline(never)]
    fn list_suspended(&self, e: &Arc<Entity>, now: bool) {
        let mut l = crate::sync::lock(&self.suspended);
        if now {
            l.push(e.clone());
        } else if let Some(i) = l.iter().position(|x| Arc::ptr_eq(x, e)) {
            l.swap_remove(i);
        }
    }

    /// After the run (every worker joined): the work still suspended, as
    /// the number of entities and what the first one is.
    ///
    /// # Safety
    /// No thread runs entities of this node any more.
    pub(crate) unsafe fn left_suspended(&self) -> Option<(usize, String)> {
        let l = crate::sync::lock(&self.suspended);
        let first = l.first()?;
        // SAFETY: nothing runs the entity (contract); suspended entities
        // are stateful (boxes, fused stars).
        let what = match unsafe { first.state() } {
            Kind::Box(b) => format!("box `{}`", b.name()),
            Kind::FilterStar(_) => "a star of filters".to_string(),
            _ => "an entity".to_string(),
        };
        Some((l.len(), what))
    }

    /// Adds `n` to the count of template `node` in the shard of worker `worker`.
    #[inline]
    fn held_add(&self, node: NodeId, worker: usize, n: i64) {
        self.held[(worker % HELD_SHARDS) * self.held_stride + node.index()]
            .fetch_add(n, std::sync::atomic::Ordering::Relaxed);
    }

    /// Called by a synchrocell entity that stored a record on worker
    /// `worker`: lists it (once; `listed` is its own record of that) for
    /// the end-of-run report.
    #[inline]
    pub(crate) fn note_holding(
        &self,
        e: &Arc<Entity>,
        listed: &mut bool,
        node: NodeId,
        worker: usize,
    ) {
        self.held_add(node, worker, 1);
        if !*listed {
            *listed = true;
            crate::sync::lock(&self.holding).push(e.clone());
        }
    }

    /// The synchrocell entities that have held a record (those the end of
    /// the stream asks to park their stored records, `Net::drain_frame`).
    pub(crate) fn holding_cells(&self) -> Vec<Arc<Entity>> {
        crate::sync::lock(&self.holding).clone()
    }

    /// A synchrocell of template `node` fired on worker `worker`,
    /// releasing `n` held records (stored on any worker: a shard's count
    /// may go below zero, the sum over the shards cannot).
    #[inline]
    pub(crate) fn released(&self, node: NodeId, n: usize, worker: usize) {
        self.held_add(node, worker, -(n as i64));
    }

    /// The records synchrocells hold right now, per template (non-zero only).
    pub(crate) fn held_now(&self) -> Vec<(NodeId, i64)> {
        let nodes = self.held.len() / HELD_SHARDS;
        (0..nodes)
            .map(|i| {
                let n: i64 = (0..HELD_SHARDS)
                    .map(|k| {
                        self.held[k * self.held_stride + i]
                            .load(std::sync::atomic::Ordering::Relaxed)
                    })
                    .sum();
                (NodeId(i as u32), n)
            })
            .filter(|(_, n)| *n > 0)
            .collect()
    }

    /// Items waiting in this node's inboxes, roughly (from any thread).
    pub(crate) fn queued_now(&self) -> isize {
        self.queued.load(Ordering::Relaxed)
    }

    /// After the run: the records still held in synchrocells, per
    /// synchrocell template, with a count per label set.
    ///
    /// # Safety
    /// No thread runs entities of this node any more.
    pub(crate) unsafe fn left_in_cells(&self) -> Vec<crate::stuck::Held> {
        let l = crate::sync::lock(&self.holding);
        let mut held = crate::stuck::HeldBy::default();
        for e in l.iter() {
            // SAFETY: nothing runs the entity (contract); listed entities
            // are stateful synchrocells.
            let (node, recs) = match unsafe { e.state() } {
                Kind::Synchrocell(s) => s.held(),
                Kind::FusedSynchrocell(s) => s.held(),
                Kind::SplitSynchrocell(s) => s.held(),
                _ => continue,
            };
            held.add(node, recs);
        }
        held.finish(self.graph())
    }

    /// How many entities are suspended right now.
    #[cfg(all(test, loom))]
    pub(crate) fn suspended_count(&self) -> usize {
        crate::sync::lock(&self.suspended).len()
    }

    pub(crate) fn graph(&self) -> &Graph {
        &self.prog.graph
    }

    /// A fresh identity for a marker owner (det collector, feedback
    /// instance), unique across nodes: the node is in the top 16 bits.
    pub(crate) fn new_owner(&self) -> u64 {
        (u64::from(self.node.0) << 48) | self.next_owner.fetch_add(1, Ordering::Relaxed)
    }

    pub(crate) fn loc(&self, node: NodeId) -> Option<snet_core::Loc> {
        Some(self.graph().node(node).loc.clone())
    }
}

/// The state of a stateful entity, by kind (only its licence holder
/// touches it; see [`crate::entity`]).
pub(crate) enum Kind {
    Synchrocell(SynchrocellEntity),
    FusedSynchrocell(FusedSynchrocell),
    FilterStar(FilterStar),
    Box(BoxEntity),
    Parallel(ParallelEntity),
    Star(StarEntity),
    Split(SplitEntity),
    SplitSynchrocell(SplitSynchrocell),
    FeedbackEntry(FeedbackEntry),
    FeedbackRouter(FeedbackRouter),
    Collector(Collector),
    Output(OutputEntity),
    Remote(crate::remote::RemoteEntity),
    Observer(crate::observe::ObserverEntity),
}

/// An entity whose state never changes after construction (but for
/// [`Stateless::Path`]'s, behind a lock): a function of each item, run
/// by whoever sends to it, through shared references
/// ([`Entity::shared_state`]).
pub(crate) enum Stateless {
    Chain(FilterChain),
    FilterParallel(FilterParallel),
    /// A non-deterministic parallel composition whose branches were all
    /// created with it ([`ParallelEntity::is_stateless`]).
    Parallel(ParallelEntity),
    /// One input of a merge whose inputs are linked (a lost node's
    /// replay: [`crate::pathlink`]). Its one piece of state, the last
    /// token that left the input, is behind its own lock; a sender's
    /// records pass it in the order it sends them, which is all the
    /// links need.
    Path(crate::pathlink::PathLink),
}

impl Kind {
    /// Whether what this entity makes reaches a connection to another
    /// node before any box, as far as the entities made so far show
    /// (fixed at construction: [`Entity::toward_remote`]). A dynamic
    /// placement counts (its replicas are other nodes'); a star counts
    /// by its exit, a parallel composition by the branches it was made
    /// with. In a distributed run the scheduler runs such an entity's
    /// task before a local box call (`scheduler/work.rs`: `remote_last`,
    /// `order_ready`, `box_after_remote`), so that other nodes get their
    /// work before this one computes.
    pub(crate) fn toward_remote(&self) -> bool {
        let on = |e: &Arc<Entity>| e.toward_remote();
        match self {
            Kind::Remote(_) => true,
            Kind::Box(_) | Kind::Output(_) => false,
            Kind::Split(s) => s.places(),
            Kind::Synchrocell(e) => on(e.next()),
            Kind::FusedSynchrocell(e) => on(e.next()),
            Kind::FilterStar(e) => on(e.next()),
            Kind::SplitSynchrocell(e) => on(e.next()),
            Kind::FeedbackRouter(e) => on(e.next()),
            Kind::Collector(e) => on(e.next()),
            Kind::Observer(e) => on(e.next()),
            Kind::Star(e) => on(e.exit()),
            Kind::FeedbackEntry(e) => on(e.body()),
            Kind::Parallel(e) => e.made_branches().any(on),
        }
    }
}

impl Stateless {
    /// As [`Kind::toward_remote`].
    pub(crate) fn toward_remote(&self) -> bool {
        match self {
            Stateless::Chain(e) => e.next().toward_remote(),
            Stateless::FilterParallel(e) => e.next().toward_remote(),
            Stateless::Parallel(e) => e.made_branches().any(|b| b.toward_remote()),
            Stateless::Path(e) => e.next().toward_remote(),
        }
    }
}

/// A worker's view while it processes: where sends go.
pub(crate) struct Ctx<'a> {
    pub rt: &'a Runtime,
    /// Entities this worker obtained licences for, with their first item.
    pub ready: Vec<(Arc<Entity>, Item)>,
    /// Start-up items queued by `instantiate` (which only has `&Ctx`), in
    /// the order they must be sent: the calls of the initialiser boxes of
    /// new instances, and the ordering markers that must follow their
    /// outputs (see [`crate::boxes`]). Sent by [`Ctx::start`].
    pub startup: std::cell::RefCell<Vec<(Arc<Entity>, Item)>>,
    /// The instance path of what `instantiate` builds now, from the
    /// instance of a connection down (custody only: a synchrocell's name,
    /// [`crate::dist::wire::CellId::path`]); empty between instantiations.
    pub path: std::cell::RefCell<crate::dist::wire::Path>,
    /// Set by an entity that suspended its work ([`Ctx::yield_entity`]).
    yielded: bool,
    /// The first error of a stateless entity run inside a send (reported
    /// by [`process`] as the sending entity's error, or by whoever else
    /// sends: [`Ctx::take_error`]).
    error: Option<EngineError>,
    /// Items this thread queued minus items it took, not yet added to
    /// [`Runtime::queued`].
    queued: isize,
    /// [`HOLD`]: sends are held back and coalesced (see
    /// [`Ctx::hold_sends`]); [`FLOWS`]: records are followed in trace
    /// flows, and every record that lands in an inbox goes by
    /// [`crate::instrument::WorkerLog::sending`]. One byte, so that an
    /// untraced send tests one value.
    holding: u8,
    /// While holding: the destination of the held items.
    held_to: Option<Arc<Entity>>,
    /// While holding: items for `held_to`, in the order they were sent.
    held: VecDeque<Item>,
    /// While holding: the address of the entity the last item was offered
    /// to directly (compared, never dereferenced; 0: none).
    last_to: usize,
    /// Set with `yielded` when the entity must go on on this worker
    /// ([`Ctx::yield_pinned`]).
    pinned: bool,
    /// Entities that yielded pinned to this worker, each waiting for its
    /// `Wake`, oldest first (run by the scheduler when it has nothing
    /// else; never taken by another worker).
    pub(crate) pinned_tasks: VecDeque<Arc<Entity>>,
    /// This worker's free box call stacks (and its number).
    pub stacks: crate::callstack::Stacks,
    /// Items the worker took from the inbox of the entity it runs and has
    /// not processed yet (see `scheduler::work`); a box may take further
    /// inputs from here ([`crate::callstack`]).
    pub(crate) taken: VecDeque<Item>,
    /// The entity whose items `taken` holds (its address: compared, never
    /// dereferenced; 0: none).
    pub(crate) taken_of: usize,
    /// Items of `taken` a box processed as part of the last item's run of
    /// calls (the worker counts them as processed).
    pub(crate) pulled: usize,
    /// This worker's slot for the live dump, if the run has them
    /// ([`crate::stuck::WorkerNow`]).
    pub(crate) now: Option<&'a crate::stuck::WorkerNow>,
    /// Records sent so far (counted always: cheaper than a test; the
    /// profile reads differences).
    pub(crate) sent: u64,
    /// This worker's trace and profile (`None` unless the run is
    /// instrumented, see [`crate::instrument`]).
    pub(crate) log: Option<Box<crate::instrument::WorkerLog>>,
    /// A worker of a distributed run: what it queues for other nodes it
    /// sends itself after the task ([`crate::dist::managers::send_queued`]),
    /// without waking the output manager.
    pub(crate) sends_itself: bool,
    /// Set when such a worker queued something it has not sent yet.
    pub(crate) unsent: bool,
}

/// Bits of [`Ctx::holding`].
const HOLD: u8 = 1;
const FLOWS: u8 = 2;

impl<'a> Ctx<'a> {
    pub(crate) fn new(rt: &'a Runtime) -> Ctx<'a> {
        Ctx {
            rt,
            ready: Vec::new(),
            startup: std::cell::RefCell::new(Vec::new()),
            path: std::cell::RefCell::new(crate::dist::wire::Path::new()),
            yielded: false,
            error: None,
            queued: 0,
            holding: 0,
            held_to: None,
            held: VecDeque::new(),
            last_to: 0,
            pinned: false,
            pinned_tasks: VecDeque::new(),
            stacks: crate::callstack::Stacks::new(rt.box_stack, 0),
            taken: VecDeque::new(),
            taken_of: 0,
            pulled: 0,
            now: None,
            sent: 0,
            log: None,
            sends_itself: false,
            unsent: false,
        }
    }

    /// The context of worker `worker` (its number pins suspended box calls to it).
    pub(crate) fn for_worker(rt: &'a Runtime, worker: usize) -> Ctx<'a> {
        let mut ctx = Ctx::new(rt);
        ctx.stacks = crate::callstack::Stacks::for_worker_thread(rt.box_stack, worker);
        ctx.now = rt.now.get(worker);
        ctx.log = rt.new_log(worker as u32 + 1, format!("worker {worker}"));
        ctx.sends_itself = rt.net.distributed();
        if ctx.log.as_ref().is_some_and(|l| l.follows_flows()) {
            ctx.holding = FLOWS;
        }
        ctx
    }

    fn fail(&mut self, e: EngineError) {
        self.error.get_or_insert(e);
    }

    /// The error of a stateless entity a send ran, if any (and clears it).
    pub(crate) fn take_error(&mut self) -> Option<EngineError> {
        self.error.take()
    }

    /// Whether [`Ctx::taken`] holds `ent`'s items: the entity processing
    /// an item may then take the items behind it from there (a box's run
    /// of calls, a split's run of records), counting them in [`Ctx::pulled`].
    #[inline]
    pub(crate) fn taken_from(&self, ent: &Arc<Entity>) -> bool {
        self.taken_of == Arc::as_ptr(ent) as usize
    }

    /// Counts `n` items queued (positive) or taken (negative).
    #[inline]
    pub(crate) fn count_queued(&mut self, n: isize) {
        self.queued += n;
        if self.queued.abs() >= QUEUED_STEP {
            self.flush_queued();
        }
    }

    /// Adds this thread's count to the node's.
    pub(crate) fn flush_queued(&mut self) {
        if self.queued != 0 {
            self.rt.queued.fetch_add(self.queued, Ordering::Relaxed);
            self.queued = 0;
        }
    }

    /// This thread's count not yet added to the node's (see `flush_queued`).
    #[inline]
    pub(crate) fn unflushed_queued(&self) -> isize {
        self.queued
    }

    /// Items waiting in this node's inboxes, roughly (see [`Runtime`]).
    pub(crate) fn queued(&self) -> isize {
        self.rt.queued.load(Ordering::Relaxed) + self.queued
    }

    /// Called by the entity being processed: it suspended its work and
    /// must be handed [`Item::Wake`] to go on. The scheduler keeps the
    /// entity's licence, queues it behind the entities it fed (which run
    /// first, front first) and gives it `Wake` ahead of anything in its
    /// inbox.
    pub(crate) fn yield_entity(&mut self) {
        self.yielded = true;
    }

    /// Like [`Ctx::yield_entity`], but the entity goes on only on this
    /// worker: it waits in this worker's pinned tasks, which no other
    /// worker takes (a suspended box call, see [`crate::callstack`]).
    pub(crate) fn yield_pinned(&mut self) {
        self.yielded = true;
        self.pinned = true;
    }

    /// Whether the entity just processed yielded (and clears the flag).
    pub(crate) fn take_yielded(&mut self) -> bool {
        std::mem::take(&mut self.yielded)
    }

    /// After [`Ctx::take_yielded`]: whether the yield was pinned (and clears the flag).
    pub(crate) fn take_pinned(&mut self) -> bool {
        std::mem::take(&mut self.pinned)
    }

    /// Items waiting in the inboxes of this node's entities that are not
    /// suspended, roughly: the backlog that drains without any suspended
    /// work going on. Suspended work may add to the node's backlog only
    /// while this is small; since the figure leaves out every suspended
    /// entity's inbox, suspended entities never wait for each other.
    ///
    /// Items sent to other nodes and not yet acknowledged count too
    /// ([`crate::dist::Net::outstanding`]): they wait in another node's
    /// backlog, which drains without any suspended work of this node going
    /// on (ARCHITECTURE.md, "It cannot deadlock", rule 3).
    pub(crate) fn backlog_elsewhere(&self) -> isize {
        self.local_backlog() + self.rt.net.outstanding() as isize
    }

    /// Items waiting in the inboxes of this node's entities that are not
    /// suspended, roughly: what a node's acknowledgements of items received
    /// from other nodes depend on (never on what it has outstanding).
    pub(crate) fn local_backlog(&self) -> isize {
        let parked: usize = crate::sync::lock(&self.rt.suspended)
            .iter()
            .map(|e| e.backlog())
            .sum();
        self.queued() - parked as isize
    }

    /// Sends an item to an entity; collects the licence if it was idle.
    #[inline]
    pub(crate) fn send(&mut self, to: &Arc<Entity>, mut item: Item) {
        self.sent += matches!(item, Item::Rec(_)) as u64;
        if let Some(kind) = to.shared_state() {
            // A stateless entity runs here, under the sender's licence: the
            // sender's outputs still reach it, and its outputs leave it, in
            // order; no hop, no queue.
            if self.log.is_some() {
                return self.send_stateless_logged(to, kind, item);
            }
            let origin = item.origin();
            if let Err(e) = process_stateless(kind, item, self) {
                self.fail(named_origin(e, origin));
            }
            return;
        }
        if self.holding != HOLD {
            // Not holding (outside a task), or records are followed in
            // trace flows: one test on the path of untraced tasks.
            if self.holding & FLOWS != 0 {
                self.sending(&mut item);
            }
            if self.holding & HOLD == 0 {
                return self.offer(to, item);
            }
        }
        {
            let addr = Arc::as_ptr(to) as usize;
            match &self.held_to {
                Some(held) if Arc::ptr_eq(held, to) => {
                    self.held.push_back(item);
                    return;
                }
                Some(_) => self.flush_sends(),
                None if addr == self.last_to => {
                    // The second item in a row for one entity: hold it and
                    // what follows, and offer them together.
                    self.held_to = Some(to.clone());
                    self.held.push_back(item);
                    return;
                }
                None => {}
            }
            self.last_to = addr;
        }
        self.offer(to, item)
    }

    #[inline(always)]
    fn offer(&mut self, to: &Arc<Entity>, item: Item) {
        match to.offer(item) {
            crate::entity::Offer::Licensed(item) => self.ready.push((to.clone(), item)),
            crate::entity::Offer::Queued => self.count_queued(1),
        }
    }

    /// A record about to land in an inbox, while records are followed in
    /// trace flows (see [`crate::instrument`]).
    #[cold]
    #[inline(never)]
    fn sending(&mut self, item: &mut Item) {
        if let Some(log) = self.log.as_deref_mut() {
            log.sending(item);
        }
    }

    /// [`Ctx::sending`] for each of `items`.
    #[cold]
    #[inline(never)]
    fn sending_all(&mut self, items: &mut VecDeque<Item>) {
        for item in items.iter_mut() {
            self.sending(item);
        }
    }

    /// [`Ctx::send`] to a stateless entity while the run is profiled: its
    /// records in and out are counted for it (its time is its sender's).
    #[cold]
    #[inline(never)]
    fn send_stateless_logged(&mut self, to: &Arc<Entity>, kind: &Stateless, item: Item) {
        let origin = item.origin();
        let is_rec = matches!(item, Item::Rec(_)) as u64;
        let before = self.sent;
        if let Err(e) = process_stateless(kind, item, self) {
            self.fail(named_origin(e, origin));
        }
        let out = self.sent - before;
        // The sender sent one record; what the stateless entity sent is its own.
        self.sent = before;
        if let (Some(log), Some(slot)) = (self.log.as_deref_mut(), to.node()) {
            let s = log.stats(slot);
            s.calls += is_rec;
            s.records_in += is_rec;
            s.records_out += out;
        }
    }

    /// Sends `items` (left empty) to `to`, in order: one offer for them
    /// all (a box call's batch of outputs).
    #[inline]
    pub(crate) fn send_all(&mut self, to: &Arc<Entity>, items: &mut VecDeque<Item>) {
        if items.len() <= 1 || to.shared_state().is_some() {
            if items.len() == 1 {
                // One output (the common box call): no drain.
                if let Some(item) = items.pop_front() {
                    self.send(to, item);
                }
                return;
            }
            for item in items.drain(..) {
                self.send(to, item);
            }
            return;
        }
        // Whatever was held goes first: the items stay behind it.
        self.flush_sends();
        self.sent += items.len() as u64;
        if self.holding & FLOWS != 0 {
            self.sending_all(items);
        }
        let (first, queued) = to.offer_many(items);
        self.count_queued(queued as isize);
        if let Some(item) = first {
            self.ready.push((to.clone(), item));
        }
    }

    /// From now on, runs of sends to one entity are coalesced: the first
    /// item of a run is offered at once, the rest are held and offered
    /// together (one lock) by [`Ctx::flush_sends`], or before the next
    /// send to another entity. Every item is still offered in the order it
    /// was sent, only some later: a legal schedule of a slower sender.
    ///
    /// The licence holder that holds sends must flush them before it gives
    /// up (or may give up) its licence, or another worker could run its
    /// entity and send newer items ahead of the held ones.
    pub(crate) fn hold_sends(&mut self) {
        debug_assert!(self.held.is_empty());
        self.holding |= HOLD;
        self.last_to = 0;
    }

    /// Offers the held items, and stops holding.
    pub(crate) fn release_sends(&mut self) {
        self.flush_sends();
        self.holding &= !HOLD;
    }

    /// Offers the held items now (a no-op when none are held).
    pub(crate) fn flush_sends(&mut self) {
        self.last_to = 0;
        let Some(to) = self.held_to.take() else {
            return;
        };
        let (first, queued) = to.offer_many(&mut self.held);
        self.count_queued(queued as isize);
        if let Some(item) = first {
            self.ready.push((to, item));
        }
    }

    /// Sends the start-up items of the instances `instantiate` created.
    /// Dispatchers call it right after creating an instance, before they
    /// send it the record that caused its creation.
    #[inline]
    pub(crate) fn start(&mut self) {
        if !self.startup.get_mut().is_empty() {
            self.send_startup();
        }
    }

    #[cold]
    #[inline(never)]
    fn send_startup(&mut self) {
        let items = std::mem::take(self.startup.get_mut());
        for (e, item) in items {
            self.send(&e, item);
        }
    }

    pub(crate) fn entity(&self, kind: Kind) -> Arc<Entity> {
        self.rt.entities.fetch_add(1, Ordering::Relaxed);
        Entity::new(kind)
    }

    /// A stateless entity ([`Stateless`]).
    pub(crate) fn stateless_entity(&self, s: Stateless) -> Arc<Entity> {
        self.rt.entities.fetch_add(1, Ordering::Relaxed);
        Entity::new_stateless(s)
    }
}

/// Processes one item at an entity whose licence the caller holds.
#[inline(always)]
pub(crate) fn process(ent: &Arc<Entity>, item: Item, ctx: &mut Ctx) -> Result<(), EngineError> {
    let origin = item.origin();
    match process_item(ent, item, ctx) {
        Ok(()) => Ok(()),
        Err(e) => Err(named_origin(e, origin)),
    }
}

#[cold]
fn named_origin(e: EngineError, origin: crate::Origin) -> EngineError {
    e.caused_by(origin)
}

#[inline(always)]
fn process_item(ent: &Arc<Entity>, item: Item, ctx: &mut Ctx) -> Result<(), EngineError> {
    if let Some(kind) = ent.shared_state() {
        // Licensed like any entity when offered directly (the entry network).
        process_stateless(kind, item, ctx)?;
        return ctx.take_error().map_or(Ok(()), Err);
    }
    // SAFETY: the scheduler calls `process` only while it holds `ent`'s
    // licence, and `ent` is not stateless.
    let state = unsafe { ent.state() };
    let r = match state {
        Kind::Synchrocell(e) => e.process(item, ctx, ent),
        Kind::FusedSynchrocell(e) => e.process(item, ctx, ent),
        Kind::FilterStar(e) => e.process(item, ctx, ent),
        Kind::Box(e) => e.process(item, ctx, ent),
        Kind::Parallel(e) => e.process(item, ctx),
        Kind::Star(e) => e.process(item, ctx),
        Kind::Split(e) => e.process(item, ctx, ent),
        Kind::SplitSynchrocell(e) => e.process(item, ctx, ent),
        Kind::FeedbackEntry(e) => e.process(item, ctx),
        Kind::FeedbackRouter(e) => e.process(item, ctx),
        Kind::Collector(e) => e.process(item, ctx),
        Kind::Output(e) => e.process(item, ctx, ent),
        Kind::Remote(e) => e.process(item, ctx),
        Kind::Observer(e) => e.process(item, ctx, ent),
    };
    // Dispatchers send the start-up of what they create at once; this
    // catches any instance created elsewhere.
    ctx.start();
    r?;
    ctx.take_error().map_or(Ok(()), Err)
}

/// Runs a stateless entity on one item (see [`Entity::shared_state`]).
fn process_stateless(s: &Stateless, item: Item, ctx: &mut Ctx) -> Result<(), EngineError> {
    match s {
        Stateless::Chain(e) => e.process(item, ctx),
        Stateless::FilterParallel(e) => e.process(item, ctx),
        Stateless::Parallel(e) => e.process_shared(item, ctx),
        Stateless::Path(e) => e.process(item, ctx),
    }
}

#[cfg(all(test, not(loom)))]
pub(crate) mod held_tests {
    use snet_core::{Graph, NodeId, Rank};

    use super::Runtime;
    use crate::program::Program;
    use crate::sync::Arc;

    /// A runtime of node 0 alone, for a program with no nodes.
    pub(crate) fn empty() -> Runtime {
        let graph = Graph {
            nodes: Vec::new(),
            boxes: Vec::new(),
            entry: NodeId(0),
        };
        let net = crate::dist::Net::new(Rank(0), 1, crate::DEFAULT_INLINE_FIELDS);
        Runtime::new(Program::new(Arc::new(graph)), Vec::new(), net, 1)
    }

    /// The counts of held records are sharded by worker: a record stored
    /// on one worker and released on another leaves the sum right, and
    /// workers beyond the shards share them.
    #[test]
    fn held_records_are_summed_over_the_shards() {
        let rt = empty();
        let (a, b) = (NodeId(0), NodeId(3));
        rt.held_add(a, 0, 1);
        rt.held_add(a, 1, 1);
        rt.held_add(a, 11, 1);
        rt.held_add(b, 2, 1);
        assert_eq!(rt.held_now(), vec![(a, 3), (b, 1)]);
        // Stored on workers 0 and 1, released on worker 5 (and 3).
        rt.released(a, 2, 5);
        rt.released(b, 1, 3);
        assert_eq!(rt.held_now(), vec![(a, 1)]);
        rt.released(a, 1, 0);
        assert_eq!(rt.held_now(), vec![]);
    }

    /// The counters workers write per record (`outputs`) or per batch
    /// (`queued`) share no cache line with what every box call and every
    /// send reads (the program, the boxes, the live dump's slots, the
    /// distribution layer, the sizes) nor with each other: else each
    /// write takes those lines from the other workers.
    #[test]
    fn written_counters_are_alone_on_their_lines() {
        use crate::sync::share_lines;
        let rt = empty();
        let read: [(&str, &dyn std::any::Any); 10] = [
            ("prog", &rt.prog),
            ("boxes", &rt.boxes),
            ("node", &rt.node),
            ("nodes", &rt.nodes),
            ("box_concurrency", &rt.box_concurrency),
            ("box_stack", &rt.box_stack),
            ("held", &rt.held),
            ("held_stride", &rt.held_stride),
            ("now", &rt.now),
            ("entities", &rt.entities),
        ];
        for (hot, h) in [
            ("outputs", &rt.outputs as &dyn std::any::Any),
            ("queued", &rt.queued),
        ] {
            for (name, r) in read {
                assert!(!share_lines(h, r), "{hot} shares a line with {name}");
            }
        }
        assert!(!share_lines(&rt.outputs, &rt.queued));
        assert!(!share_lines(&rt.outputs, &rt.net));
        assert!(!share_lines(&rt.queued, &rt.net));
    }
}

#[cfg(test)]
mod size_tests {
    use std::mem::size_of;

    /// Items are moved by value through every inbox: above 128 bytes the
    /// moves become `memcpy` calls, which once made the farm benchmark 1.7x
    /// slower. A record entry (label + value) stays 16 bytes for the same
    /// reason (a field handle is one fat pointer with a niche).
    #[test]
    fn hot_types_stay_small() {
        assert_eq!(size_of::<snet_core::Value>(), 16);
        assert!(
            size_of::<crate::entity::Item>() <= 128,
            "{}",
            size_of::<crate::entity::Item>()
        );
        assert!(
            size_of::<super::Kind>() <= 128,
            "{}",
            size_of::<super::Kind>()
        );
    }
}
