//! Workers, local queues, stealing, input admission, sleeping and termination.
//!
//! # Protocol
//!
//! *Tasks.* A task is an entity whose licence a worker holds (see
//! [`crate::entity`]) together with the first item to process. Tasks live
//! in per-worker local queues (a `VecDeque` behind a mutex that only the
//! owner and thieves touch).
//!
//! *Worker loop.* A worker takes, in order of preference:
//! 1. the task it walked into (the last entity its previous task sent to
//!    while that entity was idle — "walk the record");
//! 2. the newest task of its own queue (LIFO: the entities its last work fed,
//!    which are downstream of it, i.e. nearer the network's output — FRONT's
//!    front-first preference);
//! 3. a new input record, if admission allows (only an idle worker admits,
//!    and only while the entry's inbox holds less than a batch and the
//!    node's inboxes fewer than [`ADMIT_QUEUED_MAX`] items, so input enters
//!    no faster than the network drains it);
//! 4. the newer half of another worker's queue (stealing from the victim's
//!    front, as FRONT does; thieves serialise on the victim's queue lock, so
//!    at most one thief per victim at a time);
//! 5. sleep.
//!
//! *Running a task.* The worker processes the entity's items until its inbox
//! is empty (then the licence is released), at most [`BATCH`] items before it
//! requeues the entity. Entities it obtained licences for while processing
//! are queued locally, except the last, which it runs next. Meanwhile its
//! runs of sends to one entity are held and offered together
//! ([`Ctx::hold_sends`]); they are flushed before every step that may give
//! up the licence (taking from the inbox, requeueing, yielding), so the
//! entity's outputs keep their order, and a worker never leaves a task
//! (let alone sleeps) with items held.
//!
//! *Sleeping* ([`Sleep`]). A worker about to sleep takes the sleep lock,
//! increments `sleeping`, and re-checks for work under the lock. Anyone who
//! makes work available (a worker queueing surplus tasks, the reader thread
//! adding input) does so *before* reading `sleeping_hint`; if it sees a
//! sleeper it takes the sleep lock and notifies. Because the sleeper holds
//! the lock from its increment until it waits, a notification cannot fall
//! between its re-check and its wait; because the work is published under the
//! queue locks the re-check takes, either the re-check sees the work or the
//! publisher sees the sleeper.
//!
//! *Termination.* Only workers push to queues and only the reader thread adds
//! input. When the last worker goes to sleep, no entity holds a licence and no
//! queue holds a task, so the network is quiescent: if the input is
//! exhausted, the run is over (records parked in synchrocells stay there, as
//! the language defines). If input remains that only the `--input-limit`
//! bound holds back, the last sleeper admits a record anyway (a network may
//! need more input before it can emit anything).
//!
//! *Errors.* The first error is stored, `abort` is set and every sleeper is
//! woken; workers stop at their next task boundary.

use std::collections::VecDeque;
use std::thread;

use snet_core::{Graph, NodeId, NodeKind, Record};

use crate::dist::managers::{input_manager, output_manager, Host};
use crate::dist::{Net, Out, Settle, Transport};
use crate::entity::{Entity, Item, Offer, Rec, Stamps};
use crate::instantiate::{instantiate, output_entity};
use crate::program::Program;
use crate::runtime::{process, Ctx, Kind, Runtime, BACKLOG_LIMIT};
use crate::sync::{lock, Arc, AtomicBool, AtomicU64, AtomicUsize, Condvar, Mutex, Ordering};
use crate::{Config, EngineError, InternalError, LanguageInterface, Sink, Source, Stats};

/// Rounds an idle worker looks for work before it goes to sleep (none
/// under loom: spinning only multiplies the interleavings to explore).
const SPINS: u32 = if cfg!(loom) { 0 } else { 64 };

/// Items an entity may process before its licence is requeued.
pub const BATCH: usize = 64;

/// A licence with the first item to process.
pub struct Task {
    ent: Arc<Entity>,
    item: Item,
}

/// What the last look before sleeping found.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Look {
    /// Work is available: do not sleep.
    Work,
    /// The run is over.
    Finished,
    /// Everyone is idle and only the input bound holds input back: admit anyway.
    ForceAdmit,
    /// Nothing to do yet: wait for a notification.
    Wait,
}

/// Why a worker came back from [`Sleep::idle`].
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Wake {
    Retry,
    ForceAdmit,
    Done,
}

struct SleepState {
    sleeping: usize,
    done: bool,
}

/// The sleep/wake and quiescence protocol (see the module docs).
pub struct Sleep {
    state: Mutex<SleepState>,
    cv: Condvar,
    /// Mirrors `state.sleeping` for the publishers' lock-free check.
    sleeping_hint: AtomicUsize,
    workers: usize,
}

impl Sleep {
    pub fn new(workers: usize) -> Sleep {
        Sleep {
            state: Mutex::new(SleepState {
                sleeping: 0,
                done: false,
            }),
            cv: Condvar::new(),
            sleeping_hint: AtomicUsize::new(0),
            workers,
        }
    }

    /// Called by a publisher *after* it made work visible.
    pub fn notify_one(&self) {
        // SeqCst: ordered after the publication (a lock release) in the single
        // total order; pairs with the SeqCst store in `idle`.
        if self.sleeping_hint.load(Ordering::SeqCst) > 0 {
            let _g = lock(&self.state);
            self.cv.notify_one();
        }
    }

    /// Ends the run for everyone.
    pub fn finish(&self) {
        let mut g = lock(&self.state);
        g.done = true;
        self.cv.notify_all();
    }

    pub fn is_done(&self) -> bool {
        lock(&self.state).done
    }

    /// Runs `f` under the sleep lock with the number of sleeping workers
    /// (and the total); `f` may notify a sleeper through the returned flag.
    pub fn probe(&self, f: impl FnOnce(usize, usize) -> bool) {
        let g = lock(&self.state);
        if f(g.sleeping, self.workers) {
            self.cv.notify_one();
        }
    }

    /// Goes to sleep unless `look` (called under the sleep lock with "am I the
    /// last awake worker?") finds something.
    pub fn idle(&self, look: impl FnOnce(bool) -> Look) -> Wake {
        let mut g = lock(&self.state);
        if g.done {
            return Wake::Done;
        }
        g.sleeping += 1;
        // SeqCst: pairs with the SeqCst load in `notify_one`.
        self.sleeping_hint.store(g.sleeping, Ordering::SeqCst);
        let last = g.sleeping == self.workers;
        let found = look(last);
        let wake = match found {
            Look::Work => Wake::Retry,
            Look::ForceAdmit => Wake::ForceAdmit,
            Look::Finished => {
                g.done = true;
                self.cv.notify_all();
                Wake::Done
            }
            Look::Wait => {
                g = self.cv.wait(g).unwrap_or_else(|e| e.into_inner());
                if g.done {
                    Wake::Done
                } else {
                    Wake::Retry
                }
            }
        };
        g.sleeping -= 1;
        self.sleeping_hint.store(g.sleeping, Ordering::SeqCst);
        wake
    }
}

struct InputState {
    /// Records read ahead, with the input line each ended on.
    records: VecDeque<(Record, Option<u64>)>,
    closed: bool,
    error: Option<EngineError>,
}

/// The read-ahead buffer between the reader thread and the workers.
///
/// The reader thread holds it (and the [`Sleep`] it notifies) through an
/// `Arc`, not a borrow of the run: a reader blocked in a read of an open
/// but idle input (a pipe or a terminal nobody types into) is not waited
/// for when the run ends early (a box error, a node gone). The run
/// returns at once; the reader stops at its next record, or with the
/// process.
struct Input {
    state: Mutex<InputState>,
    space: Condvar,
    capacity: usize,
    /// The run failed: the reader stops.
    stop: AtomicBool,
}

/// A worker's local queue, with its length mirrored in an atomic so that
/// spinning thieves skip empty victims without taking (and bouncing) the
/// victim's lock.
///
/// The mirror is only a hint: it is written under the lock after every
/// change (`Relaxed`: nothing is published through it), so a thief may read
/// a stale value, and then either takes the lock for nothing or skips a
/// victim that just got work, which its next round or its look before
/// sleeping (which locks every queue) finds. Only the owner adds tasks, so
/// the owner's own reading of zero is exact.
struct LocalQueue {
    q: Mutex<VecDeque<Task>>,
    len: AtomicUsize,
}

impl LocalQueue {
    fn new(q: VecDeque<Task>) -> LocalQueue {
        LocalQueue {
            len: AtomicUsize::new(q.len()),
            q: Mutex::new(q),
        }
    }

    /// Runs `f` on the locked queue and updates the length hint.
    fn with<R>(&self, f: impl FnOnce(&mut VecDeque<Task>) -> R) -> R {
        let mut q = lock(&self.q);
        let r = f(&mut q);
        self.len.store(q.len(), Ordering::Relaxed);
        r
    }

    fn maybe_empty(&self) -> bool {
        self.len.load(Ordering::Relaxed) == 0
    }

    fn is_empty(&self) -> bool {
        lock(&self.q).is_empty()
    }
}

pub(crate) struct Shared {
    rt: Runtime,
    queues: Vec<LocalQueue>,
    /// Licences the input manager obtained (distributed runs).
    injector: Mutex<VecDeque<Task>>,
    distributed: bool,
    sleep: Arc<Sleep>,
    input: Arc<Input>,
    /// The entry network's instance (node 0 only).
    entry: Option<Arc<Entity>>,
    abort: AtomicBool,
    error: Mutex<Option<EngineError>>,
    admitted: AtomicU64,
    limit: Option<crate::InputLimit>,
    steals: AtomicU64,
    codecs: snet_core::Codecs,
    /// Set by `run` when the managers must stop.
    managers_stop: AtomicBool,
    /// The output's [`crate::Sink::idle_flush`], called when every worker is idle.
    idle_flush: Option<crate::IdleFlush>,
}

/// How a node's input is set up: what [`Shared::new`] needs besides the
/// runtime and the first tasks.
struct InputConfig {
    /// No input comes (nodes other than 0, model checks).
    closed: bool,
    /// Records read ahead at the most (at least 1).
    capacity: usize,
    limit: Option<crate::InputLimit>,
    codecs: snet_core::Codecs,
}

impl Shared {
    /// One node's scheduler state: `workers` local queues, `initial` in
    /// worker 0's, nobody asleep, nothing admitted.
    fn new(
        rt: Runtime,
        workers: usize,
        initial: VecDeque<Task>,
        entry: Option<Arc<Entity>>,
        input: InputConfig,
    ) -> Shared {
        let distributed = rt.net.distributed();
        Shared {
            rt,
            queues: std::iter::once(initial)
                .chain((1..workers).map(|_| VecDeque::new()))
                .map(LocalQueue::new)
                .collect(),
            injector: Mutex::new(VecDeque::new()),
            distributed,
            sleep: Arc::new(Sleep::new(workers)),
            input: Arc::new(Input {
                state: Mutex::new(InputState {
                    records: VecDeque::new(),
                    closed: input.closed,
                    error: None,
                }),
                space: Condvar::new(),
                capacity: input.capacity.max(1),
                stop: AtomicBool::new(false),
            }),
            entry,
            abort: AtomicBool::new(false),
            error: Mutex::new(None),
            admitted: AtomicU64::new(0),
            limit: input.limit,
            steals: AtomicU64::new(0),
            codecs: input.codecs,
            managers_stop: AtomicBool::new(false),
            idle_flush: None,
        }
    }
}

/// Boxes reachable from `root`.
fn used_boxes(graph: &Graph, root: NodeId, seen: &mut [bool], out: &mut Vec<u32>) {
    let mut stack = vec![root];
    while let Some(n) = stack.pop() {
        if std::mem::replace(&mut seen[n as usize], true) {
            continue;
        }
        if let NodeKind::Box(b) = graph.node(n).kind {
            out.push(b);
        }
        stack.extend(graph.children(n));
    }
}

/// Placements `A @ n` reachable from the entry whose node the run lacks.
fn check_placements(graph: &Graph, nodes: u32) -> Result<(), EngineError> {
    let mut seen = vec![false; graph.nodes.len()];
    let mut stack = vec![graph.entry];
    while let Some(n) = stack.pop() {
        if std::mem::replace(&mut seen[n as usize], true) {
            continue;
        }
        if let NodeKind::Place { node, .. } = graph.node(n).kind {
            if node >= nodes {
                return Err(EngineError::Placement {
                    node,
                    nodes,
                    loc: Some(graph.node(n).loc.clone()),
                });
            }
        }
        stack.extend(graph.children(n));
    }
    Ok(())
}

/// Runs `graph` on this node of `transport`'s run and returns when the
/// whole run is over. Node 0 gets the input and output (`io`); the other
/// nodes get `None` and serve what node 0 and the others send them. A
/// single-process run is node 0 of [`crate::SingleNode`].
pub fn run(
    graph: Arc<Graph>,
    config: &Config,
    io: Option<(Box<dyn Source>, Box<dyn Sink>)>,
    language: &dyn LanguageInterface,
    transport: &dyn Transport,
) -> Result<Stats, EngineError> {
    let workers = config.workers.max(1);
    // Resolve every box the entry network uses, reporting all unresolved ones.
    let mut used = Vec::new();
    used_boxes(
        &graph,
        graph.entry,
        &mut vec![false; graph.nodes.len()],
        &mut used,
    );
    used.sort_unstable();
    used.dedup();
    let mut boxes = vec![None; graph.boxes.len()];
    let mut missing = Vec::new();
    for b in used {
        match language.resolve(graph.box_def(b)) {
            Ok(imp) => boxes[b as usize] = Some(imp),
            Err(e) => missing.push(e),
        }
    }
    if !missing.is_empty() {
        return Err(EngineError::Setup(missing));
    }
    // One node runs every placement, as the original non-distributed
    // runtime does (distributed.md): the program is run as if unplaced.
    let graph = match graph.on_one_node().filter(|_| transport.nodes() == 1) {
        Some((g, first)) => {
            if transport.node() == 0 {
                (config.warn)(&format!(
                    "{}: placement `{}` ignored: this run has one node, so every placement runs on node 0",
                    first.loc, first.what
                ));
            }
            Arc::new(g)
        }
        None => graph,
    };
    check_placements(&graph, transport.nodes())?;

    let net = Net::new(transport.node(), transport.nodes(), config.inline_fields);
    let mut rt = Runtime::new(
        Program::new(graph.clone()),
        boxes,
        net,
        config.box_concurrency.max(1),
    );
    rt.box_stack = config.box_stack;
    let (source, sink) = match (rt.node, io) {
        (0, Some((source, sink))) => (Some(source), Some(sink)),
        _ => (None, None),
    };
    let idle_flush = sink.as_ref().and_then(|s| s.idle_flush());
    let (entry, output, initial) = match sink {
        Some(sink) => {
            let mut ctx = Ctx::new(&rt);
            let output = output_entity(&ctx, sink);
            let entry = instantiate(&ctx, graph.entry, output.clone(), &Stamps::new());
            // The initialiser boxes of the static network fire first (boxes.rs):
            // their calls are the first tasks, ahead of any input.
            ctx.start();
            ctx.flush_queued();
            if let Some(e) = ctx.take_error() {
                return Err(e);
            }
            let initial: VecDeque<Task> = ctx
                .ready
                .drain(..)
                .map(|(ent, item)| Task { ent, item })
                .collect();
            (Some(entry), Some(output), initial)
        }
        None => (None, None, VecDeque::new()),
    };
    let mut shared = Shared::new(
        rt,
        workers,
        initial,
        entry,
        InputConfig {
            closed: source.is_none(),
            capacity: config.read_ahead,
            limit: config.input_limit.clone(),
            codecs: config.codecs.clone(),
        },
    );
    shared.idle_flush = idle_flush;

    // Not a scoped thread: see `Input`.
    let reader = source.map(|source| {
        let (input, sleep) = (shared.input.clone(), shared.sleep.clone());
        thread::Builder::new()
            .name("snet-reader".into())
            .spawn(move || reader_loop(&input, &sleep, source))
            .expect("spawn reader thread")
    });
    thread::scope(|s| {
        let sh = &shared;
        let managers = sh.distributed.then(|| {
            let output = thread::Builder::new()
                .name(format!("snet-out-{}", sh.rt.node))
                .spawn_scoped(s, move || guarded(sh, || output_manager(sh, transport)))
                .expect("spawn output manager");
            let input = thread::Builder::new()
                .name(format!("snet-in-{}", sh.rt.node))
                .spawn_scoped(s, move || guarded(sh, || input_manager(sh, transport)))
                .expect("spawn input manager");
            (output, input)
        });
        let handles: Vec<_> = (0..workers)
            .map(|me| {
                thread::Builder::new()
                    .name(format!("snet-worker-{me}"))
                    .spawn_scoped(s, move || guarded(sh, || worker_loop(sh, me)))
                    .expect("spawn worker thread")
            })
            .collect();
        for h in handles {
            if h.join().is_err() {
                sh.fail(EngineError::Internal(InternalError::WorkerPanicked));
            }
        }
        if let Some((output, input)) = managers {
            // The output manager sends what is left (the shutdown or the
            // failure notice), then stops.
            if matches!(*lock(&sh.error), Some(EngineError::Distribution(_))) {
                // A peer may have failed first: give its notice time to arrive.
                thread::sleep(std::time::Duration::from_millis(100));
            }
            sh.rt.net.stop();
            let _ = output.join();
            sh.managers_stop.store(true, Ordering::Release);
            let _ = input.join();
            transport.close();
        }
        // Unblock a reader waiting for buffer space.
        {
            let mut st = lock(&sh.input.state);
            st.closed = true;
            sh.input.space.notify_all();
        }
    });
    // A run that ended without an error read its input to the end: the
    // reader has stopped or is about to. After an error it may be blocked
    // in a read for as long as the input stays open: it is left to end on
    // its own (see `Input`).
    if let Some(reader) = reader {
        if lock(&shared.error).is_none() {
            let _ = reader.join();
        }
    }

    let error = lock(&shared.error)
        .take()
        .or_else(|| lock(&shared.input.state).error.take())
        .or_else(|| {
            // A run that ended cleanly has no suspended work left (the
            // scheduler resumes it before it goes quiet); if some is, its
            // remaining outputs are lost: never end as if nothing was.
            // SAFETY: all workers have been joined.
            let (count, what) = unsafe { shared.rt.left_suspended() }?;
            Some(EngineError::Internal(InternalError::StillSuspended {
                node: shared.rt.node,
                count,
                what,
            }))
        });
    let (exports_live, proxies_live, fetched, fetched_bytes, exported) =
        shared.rt.net.store.counts();
    let traffic = &shared.rt.net.traffic;
    let stats = Stats {
        node: shared.rt.node,
        input_records: shared.admitted.load(Ordering::Relaxed),
        output_records: shared.rt.outputs.load(Ordering::Relaxed),
        entities_created: shared.rt.entities.load(Ordering::Relaxed),
        steals: shared.steals.load(Ordering::Relaxed),
        suspensions: shared.rt.suspensions.load(Ordering::Relaxed),
        messages_sent: traffic.messages_sent.load(Ordering::Relaxed),
        messages_received: traffic.messages_received.load(Ordering::Relaxed),
        bytes_sent: traffic.bytes_sent.load(Ordering::Relaxed),
        bytes_received: traffic.bytes_received.load(Ordering::Relaxed),
        fields_fetched: fetched,
        field_bytes_fetched: fetched_bytes,
        fields_exported: exported,
        exports_live,
        proxies_live,
    };
    // SAFETY: all workers have been joined; nothing else can hold the output's licence.
    let out = output.as_ref().map(|o| match unsafe { o.state() } {
        Kind::Output(out) => out,
        _ => unreachable!("output entity"),
    });
    match error {
        Some(e) => {
            if let Some(out) = out {
                let _ = out.sink.abort();
            }
            Err(e)
        }
        None => {
            if let Some(out) = out {
                out.sink
                    .finish()
                    .map_err(|e| EngineError::Output(std::sync::Arc::new(e)))?;
            }
            if config.fast_exit {
                // The entity graph is reachable only from `shared.entry`.
                std::mem::forget(shared);
                std::mem::forget(output);
            }
            Ok(stats)
        }
    }
}

/// Runs a thread's loop; a panic (an engine bug) must not leave the other
/// threads waiting for this one: it stops the run.
fn guarded(sh: &Shared, f: impl FnOnce()) {
    if std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).is_err() {
        sh.fail(EngineError::Internal(InternalError::ThreadPanicked {
            node: sh.rt.node,
        }));
    }
}

impl Host for Shared {
    fn rt(&self) -> &Runtime {
        &self.rt
    }

    fn codecs(&self) -> &snet_core::Codecs {
        &self.codecs
    }

    fn deliver(&self, ready: Vec<(Arc<Entity>, Item)>) {
        let n = ready.len();
        lock(&self.injector).extend(ready.into_iter().map(|(ent, item)| Task { ent, item }));
        for _ in 0..n.min(self.queues.len()) {
            self.sleep.notify_one();
        }
    }

    fn fail(&self, e: EngineError, remote: bool) {
        self.fail_with(e, remote)
    }

    fn shutdown(&self) {
        self.sleep.finish()
    }

    fn over(&self) -> bool {
        self.managers_stop.load(Ordering::Acquire)
    }

    fn settle(&self) -> Settle {
        let mut result = Settle::Busy;
        self.sleep.probe(|sleeping, workers| {
            let quiet = sleeping == workers
                && self.queues.iter().all(LocalQueue::is_empty)
                && lock(&self.injector).is_empty();
            result = self.rt.net.settle(quiet);
            // Node 0 quiescent: wake a worker to end the run (or admit held input).
            result == Settle::Quiescent
        });
        result
    }
}

/// Records the reader hands over at once, at most (and at most half the
/// read-ahead buffer).
const READ_BATCH: usize = 64;

/// Records an admitting worker takes from the read-ahead buffer at once, at
/// most.
const ADMIT_BATCH: usize = 16;
/// Idle workers admit input only while fewer items than this wait in the
/// node's inboxes (roughly: see [`Ctx::queued`]); when every worker is
/// idle no item waits, so input is always admitted then.
const ADMIT_QUEUED_MAX: isize = 1024;

/// The reader thread: parses records and hands them to the workers through
/// the read-ahead buffer. Records that have already arrived (the source
/// holds them: [`Source::next_ready`]) go over together, up to
/// [`READ_BATCH`], under one lock; a record is never held back while the
/// reader waits for the next one's bytes. The buffer may exceed its
/// capacity by less than a batch.
fn reader_loop(input: &Input, sleep: &Sleep, mut source: Box<dyn Source>) {
    let batch_max = (input.capacity / 2).clamp(1, READ_BATCH);
    let mut batch: Vec<(Record, Option<u64>)> = Vec::with_capacity(batch_max);
    loop {
        if input.stop.load(Ordering::Relaxed) {
            return;
        }
        // `Some`: the input ended (or failed) after the batch.
        let mut end: Option<Option<EngineError>> = None;
        match source.next_record() {
            Ok(Some(rec)) => batch.push((rec, source.line())),
            Ok(None) => end = Some(None),
            Err(e) => end = Some(Some(EngineError::Input(e))),
        }
        while end.is_none() && batch.len() < batch_max {
            match source.next_ready() {
                Some(Some(rec)) => batch.push((rec, source.line())),
                Some(None) => end = Some(None),
                None => break,
            }
        }
        let mut st = lock(&input.state);
        if !batch.is_empty() {
            while st.records.len() >= input.capacity && !st.closed {
                st = input.space.wait(st).unwrap_or_else(|e| e.into_inner());
            }
            if st.closed {
                return;
            }
            st.records.extend(batch.drain(..));
        }
        if let Some(error) = end {
            st.closed = true;
            st.error = error;
            drop(st);
            sleep.notify_one();
            return;
        }
        drop(st);
        sleep.notify_one();
    }
}

impl Shared {
    fn fail(&self, e: EngineError) {
        self.fail_with(e, false)
    }

    /// Stores the run's error (the first, except that a failure another
    /// node reports beats a transport error it caused here), stops the
    /// workers, and tells the other nodes unless they told us (`remote`).
    fn fail_with(&self, e: EngineError, remote: bool) {
        let mut g = lock(&self.error);
        let first = g.is_none();
        match &*g {
            None => *g = Some(e.clone()),
            Some(EngineError::Distribution(_)) if matches!(e, EngineError::Node { .. }) => {
                *g = Some(e.clone())
            }
            _ => {}
        }
        drop(g);
        if self.distributed && first && !remote {
            self.rt.net.fail_notice(e.to_string());
        }
        self.abort.store(true, Ordering::Release);
        self.input.stop.store(true, Ordering::Release);
        self.sleep.finish();
        let _st = lock(&self.input.state);
        self.input.space.notify_all();
    }

    fn admissible(&self) -> bool {
        match &self.limit {
            None => true,
            Some(l) => {
                // Acquire: pairs with the Release increment in the output entity.
                let out = self.rt.outputs.load(Ordering::Acquire);
                (self.admitted.load(Ordering::Relaxed) as i64) < l.allowed(out)
            }
        }
    }

    /// Takes input records into the network (up to [`ADMIT_BATCH`], as
    /// many as the input bound allows; `force`: the first regardless);
    /// `None` if there were none, else a task if the entry was idle.
    fn admit(&self, ctx: &mut Ctx, force: bool) -> Option<Option<Task>> {
        // Check, pop and offer under the input lock: two workers admitting
        // at once must neither reorder the input stream nor both pass the
        // bound for the last admissible record.
        // Only node 0 has the entry network (and input).
        let entry = self.entry.as_ref()?;
        // The entry still has a batch to work through: more input would
        // only queue behind it (and another worker taking it would only
        // contend with the entry's licence holder for its inbox).
        // The node's inboxes hold enough already: the input waits until
        // the network drains (this bounds the records in flight, so a slow
        // output stage does not let the whole input pile up in front of it).
        if !force && (entry.backlog() >= ADMIT_BATCH || ctx.queued() >= ADMIT_QUEUED_MAX) {
            return None;
        }
        let mut st = lock(&self.input.state);
        if st.records.is_empty() || (!force && !self.admissible()) {
            return None;
        }
        let before = st.records.len();
        let mut task = None;
        let mut n = 0;
        while n < ADMIT_BATCH && (n == 0 || self.admissible()) {
            let Some((rec, line)) = st.records.pop_front() else {
                break;
            };
            n += 1;
            // Admission happens in input order, under the input lock.
            let number = self.admitted.fetch_add(1, Ordering::Relaxed) + 1;
            // An offer may license the entry (the first, or a later one if
            // the holder released it meanwhile); from then on this worker
            // holds the licence and the others queue behind in its inbox, in
            // input order: at most one licence per batch.
            let origin = crate::entity::Origin::input(number, line);
            match entry.offer(Item::Rec(Rec {
                rec,
                det: Stamps::new(),
                origin,
            })) {
                Offer::Licensed(item) => {
                    debug_assert!(task.is_none(), "two licences for one entity");
                    task = Some(Task {
                        ent: entry.clone(),
                        item,
                    });
                }
                Offer::Queued => ctx.count_queued(1),
            }
        }
        // The reader sleeps only on a full buffer; wake it when the buffer
        // has drained to half (not as soon as one slot is free, which made
        // the reader and the workers take turns one record at a time, two
        // context switches a record, once the reader was ahead).
        let half = self.input.capacity / 2;
        if before > half && st.records.len() <= half {
            self.input.space.notify_one();
        }
        drop(st);
        Some(task)
    }

    fn steal(&self, me: usize) -> Option<Task> {
        let n = self.queues.len();
        for k in 1..n {
            let victim = (me + k) % n;
            if self.queues[victim].maybe_empty() {
                continue;
            }
            let stolen = self.queues[victim].with(|q| {
                // The newer half: nearest the network's output (front-first),
                // which keeps the working set small, as FRONT does.
                let take = q.len().div_ceil(2);
                let keep = q.len() - take;
                q.drain(keep..).collect::<VecDeque<Task>>()
            });
            let mut stolen = stolen;
            if stolen.is_empty() {
                continue;
            }
            self.steals.fetch_add(1, Ordering::Relaxed);
            let first = stolen.pop_back();
            if !stolen.is_empty() {
                self.queues[me].with(|q| q.extend(stolen));
                self.sleep.notify_one();
            }
            return first;
        }
        None
    }

    fn look(&self, last: bool) -> Look {
        if self.abort.load(Ordering::Acquire) {
            return Look::Finished;
        }
        if !self.queues.iter().all(LocalQueue::is_empty) {
            return Look::Work;
        }
        if self.distributed && !lock(&self.injector).is_empty() {
            return Look::Work;
        }
        let st = lock(&self.input.state);
        if !st.records.is_empty() && self.admissible() {
            return Look::Work;
        }
        if last {
            // Everyone here is idle. With other nodes, that is the end (or
            // a reason to admit held-back input) only when no node is
            // active and no message is in flight: the credit rule.
            if self.distributed && self.rt.net.settle(true) != Settle::Quiescent {
                return Look::Wait;
            }
            if st.closed && st.records.is_empty() {
                if self.distributed {
                    self.rt.net.push(Out::Shutdown);
                }
                return Look::Finished;
            }
            if !st.records.is_empty() {
                return Look::ForceAdmit;
            }
            // Nothing to do until input or a message comes: what the
            // output holds goes out now (a slow stream sees every record).
            if let Some(flush) = &self.idle_flush {
                flush();
            }
        }
        Look::Wait
    }

    /// Runs a task; returns the task to walk into next.
    ///
    /// Items are taken from the inbox in bulk, up to what is left of the
    /// batch, into `taken` (empty between calls): one lock for many items,
    /// which also keeps senders on other workers from contending with
    /// this one item by item.
    fn run_task(
        &self,
        ctx: &mut Ctx,
        me: usize,
        task: Task,
        taken: &mut VecDeque<Item>,
    ) -> Option<Task> {
        debug_assert!(taken.is_empty());
        let Task { ent, mut item } = task;
        let mut done = 0;
        // Runs of sends to one entity go out together (one lock for many
        // items: the star's leaves to the next synchrocell, a batch of
        // records to the output). Held sends are flushed before every step
        // that may give up `ent`'s licence, so `ent`'s outputs stay in order.
        ctx.hold_sends();
        loop {
            if let Err(e) = process(&ent, item, ctx) {
                ctx.drop_held_sends();
                taken.clear();
                self.fail(e);
                return None;
            }
            done += 1;
            if ctx.take_yielded() {
                ctx.release_sends();
                // The entity suspended its work: it keeps its licence and
                // goes on (with `Wake`, then what it had taken) after the
                // entities it fed, which this worker runs next.
                ctx.count_queued(taken.len() as isize);
                ent.unread(taken);
                self.queue_ready(ctx, me);
                if ctx.take_pinned() {
                    // Only this worker may go on with it (a suspended box
                    // call). With other workers, while the node's backlog
                    // is small, it goes on at once: what it fed waits in
                    // this worker's queue, for thieves (a pipeline across
                    // workers) or for this worker once the backlog is
                    // full. Otherwise (alone, the batch it fed runs
                    // through the network while it is small and in cache,
                    // as a pipeline's token would) it waits until this
                    // worker has nothing else to do.
                    ctx.flush_queued();
                    if self.queues.len() > 1 && ctx.backlog_elsewhere() < BACKLOG_LIMIT {
                        return Some(Task {
                            ent,
                            item: Item::Wake,
                        });
                    }
                    ctx.pinned_tasks.push_back(ent);
                    return None;
                }
                let alone = self.queues[me].with(|q| {
                    q.push_front(Task {
                        ent,
                        item: Item::Wake,
                    });
                    q.len() == 1
                });
                self.sleep.notify_one();
                ctx.flush_queued();
                // Nothing else here: rather than go straight back to the
                // entity (which may be waiting for others to drain a
                // backlog), take work from the other nodes or help another
                // worker first.
                if !alone {
                    return None;
                }
                let injected = if self.distributed {
                    lock(&self.injector).pop_front()
                } else {
                    None
                };
                return injected.or_else(|| self.steal(me));
            }
            // `done + taken.len() <= BATCH`: the batch is used up only when
            // nothing taken is left.
            if let Some(next) = taken.pop_front() {
                item = next;
            } else if done >= BATCH {
                ctx.release_sends();
                match ent.next_or_release() {
                    None => break,
                    Some(next) => {
                        // Keep the licence, let others (and thieves) get a turn.
                        ctx.count_queued(-1);
                        self.queue_ready(ctx, me);
                        self.queues[me].with(|q| q.push_front(Task { ent, item: next }));
                        self.sleep.notify_one();
                        ctx.flush_queued();
                        return None;
                    }
                }
            } else {
                ctx.flush_sends();
                let n = ent.take_or_release(taken, BATCH - done);
                if n == 0 {
                    break;
                }
                ctx.count_queued(-(n as isize));
                item = taken.pop_front().expect("items were taken");
            }
            if ctx.ready.len() > 1 {
                self.queue_ready(ctx, me);
            }
        }
        // Flushed before `take_or_release` gave the licence up.
        ctx.release_sends();
        let next = ctx.ready.pop().map(|(ent, item)| Task { ent, item });
        self.queue_ready(ctx, me);
        ctx.flush_queued();
        next
    }

    fn queue_ready(&self, ctx: &mut Ctx, me: usize) {
        if ctx.ready.is_empty() {
            return;
        }
        self.queues[me]
            .with(|q| q.extend(ctx.ready.drain(..).map(|(ent, item)| Task { ent, item })));
        self.sleep.notify_one();
    }
}

#[cfg_attr(loom, allow(clippy::absurd_extreme_comparisons))] // SPINS is 0 under loom
pub(crate) fn worker_loop(sh: &Shared, me: usize) {
    let mut ctx = Ctx::for_worker(&sh.rt, me);
    let mut taken = VecDeque::new();
    let mut next: Option<Task> = None;
    let mut spins = 0u32;
    loop {
        if sh.abort.load(Ordering::Relaxed) {
            return;
        }
        let task = match next.take() {
            Some(t) => Some(t),
            // Only this worker adds to its queue: a zero hint is exact.
            None if sh.queues[me].maybe_empty() => None,
            None => sh.queues[me].with(VecDeque::pop_back),
        };
        let task = match task {
            None if sh.distributed => lock(&sh.injector).pop_front(),
            t => t,
        };
        if let Some(t) = task {
            next = sh.run_task(&mut ctx, me, t, &mut taken);
            continue;
        }
        match sh.admit(&mut ctx, false) {
            Some(Some(t)) => {
                next = Some(t);
                continue;
            }
            Some(None) => continue,
            None => {}
        }
        if let Some(t) = sh.steal(me) {
            next = Some(t);
            spins = 0;
            continue;
        }
        // Suspended box calls of this worker, oldest first, once nothing
        // else is left here: what they sent has been consumed as far as
        // this worker could take it. One that finds the node's backlog
        // still high yields again; the worker then looks for other work
        // before it tries the next one (it never sleeps while it has any:
        // the run is not quiescent).
        if let Some(ent) = ctx.pinned_tasks.pop_front() {
            let before = ctx.pinned_tasks.len();
            next = sh.run_task(
                &mut ctx,
                me,
                Task {
                    ent,
                    item: Item::Wake,
                },
                &mut taken,
            );
            if next.is_none() && ctx.pinned_tasks.len() > before && sh.queues[me].maybe_empty() {
                // It yielded again at once: let the others drain.
                crate::sync::yield_now();
            }
            continue;
        }
        // Spin a little before sleeping: work often appears within
        // microseconds (the reader's next record, a peer's surplus), and a
        // futex sleep/wake pair costs more than that.
        if spins < SPINS {
            spins += 1;
            if spins.is_multiple_of(16) {
                thread::yield_now();
            } else {
                std::hint::spin_loop();
            }
            continue;
        }
        spins = 0;
        match sh.sleep.idle(|last| sh.look(last)) {
            Wake::Retry => {}
            Wake::Done => return,
            Wake::ForceAdmit => {
                if let Some(Some(t)) = sh.admit(&mut ctx, true) {
                    next = Some(t);
                }
            }
        }
    }
}

/// Hooks for the model checks ([`crate::loom_tests`]): one node's scheduler
/// without `run` (no reader thread, no entry network, input closed).
#[cfg(all(test, loom))]
impl Shared {
    /// A node with `workers` workers and `initial` tasks in worker 0's queue.
    pub(crate) fn for_model(
        rt: Runtime,
        workers: usize,
        initial: Vec<(Arc<Entity>, Item)>,
    ) -> Shared {
        let initial = initial
            .into_iter()
            .map(|(ent, item)| Task { ent, item })
            .collect();
        let input = InputConfig {
            closed: true,
            capacity: 1,
            limit: None,
            codecs: snet_core::Codecs::default(),
        };
        Shared::new(rt, workers, initial, None, input)
    }

    /// What `run` does once the workers are done: the output manager stops
    /// when its queue is empty, the input manager at its next look.
    pub(crate) fn model_stop(&self) {
        self.rt.net.stop();
        self.managers_stop.store(true, Ordering::Release);
    }

    /// Whether no entity is listed as suspended.
    pub(crate) fn model_suspended_is_empty(&self) -> bool {
        self.rt.suspended_count() == 0
    }

    /// Panics unless the node ended cleanly: no error, no task left, done.
    pub(crate) fn model_assert_drained(&self) {
        assert!(lock(&self.error).is_none(), "node {} failed", self.rt.node);
        assert!(
            self.queues.iter().all(LocalQueue::is_empty),
            "node {}: tasks left in a queue",
            self.rt.node
        );
        assert!(
            lock(&self.injector).is_empty(),
            "node {}: licences left in the injector",
            self.rt.node
        );
        assert!(self.sleep.is_done(), "node {}: not done", self.rt.node);
    }
}
