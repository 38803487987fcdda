//! Tasks, the workers' local queues and the work loop.
//!
//! *Tasks.* A task is an entity whose licence a worker holds (see
//! [`crate::entity`]) together with the first item to process. Tasks live
//! in per-worker local queues (a `VecDeque` behind a mutex that only the
//! owner and thieves touch).
//!
//! *Worker loop.* A worker takes, in order of preference:
//! 1. the task it walked into (the last entity its previous task sent to
//!    while that entity was idle — "walk the record"), unless its previous
//!    task was a split's replica ([`Entity::mark_replica`]), the task
//!    walked into is a box's, and replicas of the same node wait on top of
//!    its queue: those run first, and the walked-into task after them, so
//!    that the box runs their outputs as one run of calls
//!    ([`defer_below_siblings`]; only for a box, because holding records
//!    back in front of anything else only costs memory);
//! 2. the newest task of its own queue (LIFO: the entities its last work fed,
//!    which are downstream of it, i.e. nearer the network's output — FRONT's
//!    front-first preference);
//! 3. a new input record, if admission allows (only an idle worker admits,
//!    and only while the entry's inbox holds less than a batch and the
//!    node's inboxes fewer than
//!    [`ADMIT_QUEUED_MAX`](super::admission::ADMIT_QUEUED_MAX) items, so
//!    input enters no faster than the network drains it);
//! 4. the newer half of another worker's queue (stealing from the victim's
//!    front, as FRONT does; thieves serialise on the victim's queue lock, so
//!    at most one thief per victim at a time);
//! 5. sleep.
//!
//! *Running a task.* The worker processes the entity's items until its inbox
//! is empty (then the licence is released), at most [`BATCH`] items before it
//! requeues the entity. What waits in the inbox when the task starts is
//! taken with its first item, so that a box sees it as further inputs for a
//! run of calls ([`crate::callstack`]). Entities it obtained licences for while processing
//! are queued locally, except the last, which it runs next. Meanwhile its
//! runs of sends to one entity are held and offered together
//! ([`Ctx::hold_sends`]); they are flushed before every step that may give
//! up the licence (taking from the inbox, requeueing, yielding), so the
//! entity's outputs keep their order, and a worker never leaves a task
//! (let alone sleeps) with items held. A box call that suspends after a
//! batch of outputs and goes on at once (another worker may take what it
//! fed) first runs the split it fed, if it fed one ([`router`]).

use std::collections::VecDeque;
use std::thread;

use super::admission::{Input, InputConfig, InputState};
use super::sleep::{Look, Sleep, Wake};
use crate::dist::managers::send_queued;
use crate::dist::{Out, Settle, Transport};
use crate::entity::{Entity, Item};
use crate::runtime::{process, Ctx, Runtime, BACKLOG_LIMIT};
use crate::sync::{
    lock, Arc, AtomicBool, AtomicU64, AtomicUsize, Condvar, Mutex, Ordering, Padded,
};
use crate::EngineError;

/// Rounds an idle worker looks for work before it goes to sleep (none
/// under loom: spinning only multiplies the interleavings to explore).
const SPINS: u32 = if cfg!(loom) { 0 } else { 64 };

/// Items an entity may process before its licence is requeued.
pub(super) const BATCH: usize = 64;

/// A licence with the first item to process.
pub(super) struct Task {
    pub(super) ent: Arc<Entity>,
    pub(super) item: Item,
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
///
/// Each queue is alone on its cache lines ([`Padded`]'s alignment): the
/// queues sit side by side in [`Shared::queues`], and at 56 bytes two
/// workers' queues shared a line, so every push and pop of one worker
/// took the line from the other, which was pushing and popping its own.
#[repr(align(128))]
pub(super) struct LocalQueue {
    q: Mutex<VecDeque<Task>>,
    len: AtomicUsize,
    /// The graph node of the task the owner last put on top of the queue
    /// (`u32::MAX`: none known): a hint, written only by the owner, that
    /// tells [`defer_below_siblings`] when looking is worth the lock
    /// (stale after pops and thefts, which only costs a look or a missed
    /// deferral).
    top_node: std::sync::atomic::AtomicU32,
}

impl LocalQueue {
    fn new(q: VecDeque<Task>) -> LocalQueue {
        LocalQueue {
            len: AtomicUsize::new(q.len()),
            q: Mutex::new(q),
            top_node: std::sync::atomic::AtomicU32::new(u32::MAX),
        }
    }

    /// Runs `f` on the locked queue and updates the length hint.
    pub(super) fn with<R>(&self, f: impl FnOnce(&mut VecDeque<Task>) -> R) -> R {
        let mut q = lock(&self.q);
        let r = f(&mut q);
        self.len.store(q.len(), Ordering::Relaxed);
        r
    }

    /// Notes the node of the task about to be put on top (see `top_node`).
    fn note_top(&self, ent: Option<&Arc<Entity>>) {
        let node = ent.and_then(|e| e.node()).unwrap_or(u32::MAX);
        self.top_node
            .store(node, std::sync::atomic::Ordering::Relaxed);
    }

    fn maybe_empty(&self) -> bool {
        self.len.load(Ordering::Relaxed) == 0
    }

    pub(super) fn is_empty(&self) -> bool {
        lock(&self.q).is_empty()
    }
}

pub(crate) struct Shared {
    pub(super) rt: Runtime,
    pub(super) queues: Vec<LocalQueue>,
    /// Licences the input manager obtained (distributed runs).
    pub(super) injector: Mutex<VecDeque<Task>>,
    pub(super) distributed: bool,
    pub(super) sleep: Arc<Sleep>,
    pub(super) input: Arc<Input>,
    /// The entry network's instance (node 0 only).
    pub(super) entry: Option<Arc<Entity>>,
    /// Read by every worker at every turn of its loop: kept apart from
    /// the counters below, which workers write (each on lines of its own).
    pub(super) abort: AtomicBool,
    pub(super) error: Mutex<Option<EngineError>>,
    /// Records admitted (stored once per batch of up to 64).
    pub(super) admitted: Padded<AtomicU64>,
    pub(super) limit: Option<crate::InputLimit>,
    /// Steals (one add per steal).
    pub(super) steals: Padded<AtomicU64>,
    /// Workers looking for work: counted from the moment a worker finds
    /// its own queue empty until it has a task again (spinning, stealing,
    /// polling its suspended calls, asleep). A hint read by
    /// [`Shared::cut_chain`]; written only when a worker goes idle or
    /// finds work again, never per item.
    pub(super) searching: Padded<AtomicUsize>,
    /// Whether [`Shared::cut_chain`] may cut a chain of boxes between
    /// workers (on unless `SNET_CHAIN_CUT=0`).
    pub(super) cut: bool,
    /// Records each worker sent (its `Ctx::sent` at its end), for `Stats`:
    /// std's atomics even under loom (statistics, no protocol: not a
    /// point for the model checks to interleave at).
    pub(super) sent: Vec<Padded<std::sync::atomic::AtomicU64>>,
    pub(super) codecs: snet_core::Codecs,
    /// Set by `run` when the managers must stop.
    pub(super) managers_stop: AtomicBool,
    /// The output's [`crate::Sink::idle_flush`], called when every worker is idle.
    pub(super) idle_flush: Option<crate::IdleFlush>,
}

impl Shared {
    /// One node's scheduler state: `workers` local queues, `initial` in
    /// worker 0's, nobody asleep, nothing admitted.
    pub(super) fn new(
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
            admitted: Padded(AtomicU64::new(0)),
            limit: input.limit,
            steals: Padded(AtomicU64::new(0)),
            searching: Padded(AtomicUsize::new(0)),
            cut: workers > 1 && chain_cut_enabled(),
            sent: (0..workers)
                .map(|_| Padded(std::sync::atomic::AtomicU64::new(0)))
                .collect(),
            codecs: input.codecs,
            managers_stop: AtomicBool::new(false),
            idle_flush: None,
        }
    }
}

impl Shared {
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
                self.queues[me].note_top(stolen.back().map(|t| &t.ent));
                self.queues[me].with(|q| q.extend(stolen));
                self.sleep.notify_one();
            }
            return first;
        }
        None
    }

    /// `queued`: set when the worker found the node quiet and queued
    /// what it must send before it may count as passive (the
    /// acknowledgements owed, its credit): it sends them itself
    /// ([`Shared::send_own`]) and looks again.
    fn look(&self, last: bool, queued: &mut bool) -> Look {
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
        if !st.records.is_empty() && self.admissible() && !self.remote_full() {
            return Look::Work;
        }
        if last {
            // Everyone here is idle. With other nodes, that is the end (or
            // a reason to admit held-back input) only when no node is
            // active and no message is in flight: the credit rule.
            if self.distributed {
                match self.rt.net.settle(true, false) {
                    Settle::Quiescent => {}
                    Settle::Queued => {
                        *queued = true;
                        return Look::Work;
                    }
                    Settle::Busy | Settle::Passive => return Look::Wait,
                }
            }
            if st.closed && st.records.is_empty() {
                // Records still in a node's custody at the end: groups a
                // synchrocell's stored record keeps open. The node drains
                // them (`dist::custody`), and the run ends at the next
                // quiescence.
                if self.distributed && self.rt.net.ask_drain() {
                    return Look::Wait;
                }
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

    /// Whether other nodes hold so many unacknowledged items from this one
    /// that admission waits for their acknowledgements (which wake a
    /// sleeper, `Host::acked`). Read in `look`, under the sleep lock,
    /// after the sleeper counted itself: `SeqCst` (see
    /// [`crate::dist::Net::outstanding_now`]).
    fn remote_full(&self) -> bool {
        self.distributed
            && self.rt.net.outstanding_now() >= super::admission::ADMIT_QUEUED_MAX as u64
    }

    /// Runs a task; returns the task to walk into next.
    #[inline]
    fn run_task(&self, ctx: &mut Ctx, me: usize, task: Task) -> Option<Task> {
        if ctx.log.is_none() {
            return self.run_task_in::<false>(ctx, me, task);
        }
        self.run_task_logged(ctx, me, task)
    }

    /// [`Shared::run_task`] of an instrumented run: the task is one
    /// "batch" event, its time the component's busy time.
    #[inline(never)]
    fn run_task_logged(&self, ctx: &mut Ctx, me: usize, task: Task) -> Option<Task> {
        use crate::instrument::{now_ns, Cat, Current};
        let t0 = now_ns();
        let sent0 = ctx.sent;
        let cur = Current::of(&task.ent, self.entry.as_ref(), &self.rt);
        let slot = cur.slot;
        if let Some(log) = ctx.log.as_deref_mut() {
            log.begin(cur, task.ent.backlog() as u64 + 1);
        }
        let next = self.run_task_in::<true>(ctx, me, task);
        let t1 = now_ns();
        let out = ctx.sent - sent0;
        if let Some(log) = ctx.log.as_deref_mut() {
            let (items, records) = log.end();
            let s = log.stats(slot);
            s.busy_ns += t1 - t0;
            s.records_out += if cur.passes { records } else { out };
            if !cur.is_box {
                // A box's events are its calls.
                log.slice(slot, Cat::Batch, t0, t1, items);
            }
            if t1.saturating_sub(log.last_counter) >= 1_000_000 {
                self.count_now(ctx, t1);
            }
        }
        next
    }

    /// A sample of the node's counters, on this worker's log.
    pub(super) fn count_now(&self, ctx: &mut Ctx, ts: u64) {
        let admitted = self.admitted.load(Ordering::Relaxed);
        let written = self.rt.outputs.load(Ordering::Relaxed);
        let queued = ctx.queued() as i64;
        if let Some(log) = ctx.log.as_deref_mut() {
            log.counter(ts, admitted, written, queued);
        }
    }

    /// Runs a task (`LOG`: recording each item in the worker's log).
    ///
    /// Items are taken from the inbox in bulk, up to what is left of the
    /// batch, into `ctx.taken` (empty between calls): one lock for many
    /// items, which also keeps senders on other workers from contending
    /// with this one item by item. A box may process several of them in
    /// one step (a run of calls, [`crate::callstack`]; `ctx.pulled`).
    #[inline(always)]
    fn run_task_in<const LOG: bool>(&self, ctx: &mut Ctx, me: usize, task: Task) -> Option<Task> {
        debug_assert!(ctx.taken.is_empty());
        let Task { ent, mut item } = task;
        ctx.taken_of = Arc::as_ptr(&ent) as usize;
        let mut done = 0;
        // What already waits behind the first item is taken with it, so
        // that the first item's processing sees it (a box's run of calls
        // takes its further inputs from `ctx.taken`): an entity fed a few
        // records at a time (a split's instances, the box after them) then
        // processes each batch in one step. The backlog is only a hint
        // (exact for this worker's own sends); a stale zero takes nothing
        // now and the loop takes it after the first item.
        if ent.backlog() > 0 {
            let n = ent.take(&mut ctx.taken, BATCH - 1);
            ctx.count_queued(-(n as isize));
        }
        // Runs of sends to one entity go out together (one lock for many
        // items: the star's leaves to the next synchrocell, a batch of
        // records to the output). Held sends are flushed before every step
        // that may give up `ent`'s licence, so `ent`'s outputs stay in order.
        ctx.hold_sends();
        loop {
            let hop = if LOG { item_hook(ctx, &mut item) } else { None };
            if let Err(e) = process(&ent, item, ctx) {
                // What the entity sent before the failing item was sent:
                // offered (not dropped), so that records on their way out
                // reach the output, which writes them before the error
                // (`scheduler::node`, "nothing lost").
                ctx.release_sends();
                ctx.taken.clear();
                ctx.pulled = 0;
                self.fail(e);
                self.queue_ready(ctx, me);
                return None;
            }
            if LOG {
                if let (Some(hop), Some(log)) = (hop, ctx.log.as_deref_mut()) {
                    log.hop(hop);
                }
            }
            done += 1 + std::mem::take(&mut ctx.pulled);
            if ctx.take_yielded() {
                ctx.release_sends();
                // The entity suspended its work: it keeps its licence and
                // goes on (with `Wake`, then what it had taken) after the
                // entities it fed, which this worker runs next.
                ctx.count_queued(ctx.taken.len() as isize);
                ent.unread(&mut ctx.taken);
                let pinned = ctx.take_pinned();
                // Only this worker may go on with a pinned entity (a
                // suspended box call). With other workers, while the
                // node's backlog is small, it goes on at once: what it fed
                // waits in this worker's queue, for thieves (a pipeline
                // across workers) or for this worker once the backlog is
                // full. Otherwise (alone, the batch it fed runs through
                // the network while it is small and in cache, as a
                // pipeline's token would) it waits until this worker has
                // nothing else to do.
                let go_on = pinned && self.queues.len() > 1 && {
                    ctx.flush_queued();
                    ctx.backlog_elsewhere() < BACKLOG_LIMIT
                };
                // Going on at once, it first routes its batch here if it
                // fed a split ([`router`]).
                let route = if go_on { router(ctx) } else { None };
                self.queue_ready(ctx, me);
                if pinned {
                    ctx.flush_queued();
                    if go_on {
                        if let Some(t) = route {
                            self.run_router(ctx, me, t);
                        }
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
            if let Some(next) = ctx.taken.pop_front() {
                item = next;
            } else if done >= BATCH {
                ctx.release_sends();
                match ent.next_or_release() {
                    None => break,
                    Some(next) => {
                        // Keep the licence, let others (and thieves) get a turn.
                        ctx.count_queued(-1);
                        self.queue_ready(ctx, me);
                        let task = Task { ent, item: next };
                        // Licences delivered from other nodes wait in the
                        // injector, which a worker looks at only when its
                        // queue is empty: an entity with a long backlog
                        // (a box of one replica of a deterministic split,
                        // fed a whole stream at once) would keep them
                        // waiting until it drained, and a collector on
                        // node 0 waiting for the other replicas' records
                        // would write its output in a burst at the end.
                        // It goes behind them instead.
                        let task = if self.distributed {
                            let mut inj = lock(&self.injector);
                            if inj.is_empty() {
                                Some(task)
                            } else {
                                inj.push_back(task);
                                None
                            }
                        } else {
                            Some(task)
                        };
                        if let Some(task) = task {
                            self.queues[me].with(|q| q.push_front(task));
                        }
                        self.sleep.notify_one();
                        ctx.flush_queued();
                        return None;
                    }
                }
            } else {
                ctx.flush_sends();
                let n = ent.take_or_release(&mut ctx.taken, BATCH - done);
                if n == 0 {
                    break;
                }
                if LOG {
                    if let Some(log) = ctx.log.as_deref_mut() {
                        log.inbox((n + ent.backlog()) as u64);
                    }
                }
                ctx.count_queued(-(n as isize));
                item = ctx.taken.pop_front().expect("items were taken");
            }
            // Licences beyond the one to walk into go to the queue at
            // once, for thieves; alone, nobody steals, and they go at the
            // end (in the same order: one lock instead of one per pair).
            if ctx.ready.len() > 1 && self.queues.len() > 1 {
                self.queue_ready(ctx, me);
            }
        }
        // Flushed before `take_or_release` gave the licence up.
        ctx.release_sends();
        if self.distributed && ctx.ready.len() > 1 {
            remote_last(&mut ctx.ready);
        }
        let mut next = ctx.ready.pop().map(|(ent, item)| Task { ent, item });
        self.queue_ready(ctx, me);
        ctx.flush_queued();
        if let (true, Some(node), Some(n)) = (ent.is_replica(), ent.node(), &next) {
            let top = self.queues[me]
                .top_node
                .load(std::sync::atomic::Ordering::Relaxed);
            // Not when the entity fed is of the same node itself (a star's
            // next stage): that is a chain, not replicas side by side.
            if top == node
                && n.ent.is_box()
                && n.ent.node() != Some(node)
                && n.ent.backlog() < BATCH / 2
                && !self.queues[me].maybe_empty()
            {
                let n = next.take().expect("checked");
                next = self.queues[me].with(|q| defer_below_siblings(q, node, n));
            }
        } else if self.cut && ent.is_box() {
            if let Some(walk) = next.take() {
                next = self.cut_chain(ctx, me, walk);
            }
        }
        next
    }

    /// A box's task ended and obtained the licence of the box it fed
    /// (`walk`): a chain of boxes, which this worker would walk on, batch
    /// by batch. While another worker looks for work, the chain is cut
    /// here instead: `walk` goes to this worker's queue, where the idle
    /// worker steals it (a sleeper is woken as for any queued licence),
    /// and this worker goes back upstream, to the oldest task of its own
    /// queue (the front, which a thief takes last) or, with none, to its
    /// oldest suspended call if the node's backlog lets that call go on
    /// (the generator feeding the chain). Both then run a part of the
    /// chain side by side; FRONT's front-first walk made the one worker
    /// that held the chain's licences run all of it while the other
    /// waited for a licence to steal. With no other work here, or no
    /// worker looking for work, the worker walks on as before.
    ///
    /// Only the order of licences this worker holds changes (every queued
    /// task still runs: a worker never sleeps while any queue holds one,
    /// and if no thief comes this worker pops `walk` back itself), so
    /// ARCHITECTURE.md's "It cannot deadlock" is untouched; `walk` is
    /// published under the queue lock before `notify_one`, the sleep
    /// protocol's order, so a worker about to sleep sees it or is woken.
    #[inline(never)]
    fn cut_chain(&self, ctx: &mut Ctx, me: usize, walk: Task) -> Option<Task> {
        if !walk.ent.is_box() || self.searching.load(Ordering::Relaxed) == 0 {
            return Some(walk);
        }
        let queue = &self.queues[me];
        let mut walk = Some(walk);
        if !queue.maybe_empty() {
            queue.note_top(walk.as_ref().map(|t| &t.ent));
            let front = queue.with(|q| {
                let front = q.pop_front()?;
                q.extend(walk.take());
                Some(front)
            });
            if front.is_some() {
                self.sleep.notify_one();
                return front;
            }
        }
        // Still here: it is taken only together with a front task.
        let walk = walk?;
        if ctx.pinned_tasks.is_empty() || ctx.backlog_elsewhere() >= BACKLOG_LIMIT {
            return Some(walk);
        }
        let ent = ctx.pinned_tasks.pop_front()?;
        queue.note_top(Some(&walk.ent));
        queue.with(|q| q.push_back(walk));
        self.sleep.notify_one();
        Some(Task {
            ent,
            item: Item::Wake,
        })
    }

    /// The task a worker of a distributed run runs next: `walk` (what its
    /// last task obtained), unless `walk` is a box call and the top of the
    /// worker's queue is a task toward another node ([`box_after_remote`]);
    /// with no walk, the top of its queue. (Out of line: in the worker
    /// loop it made a single-node run move every task through `memcpy`,
    /// sieve-feedback +2 % instructions.)
    #[inline(never)]
    fn next_distributed(&self, me: usize, walk: Option<Task>) -> Option<Task> {
        let q = &self.queues[me];
        match walk {
            Some(t) if t.ent.is_box() && !matches!(t.item, Item::Wake) && !q.maybe_empty() => {
                q.with(|q| box_after_remote(q, t))
            }
            Some(t) => Some(t),
            // Only this worker adds to its queue: a zero hint is exact.
            None if q.maybe_empty() => None,
            None => q.with(VecDeque::pop_back),
        }
    }

    /// Runs the split a suspended call fed ([`router`]) and queues the
    /// task it would walk into (the call goes on next instead).
    #[inline(never)]
    fn run_router(&self, ctx: &mut Ctx, me: usize, t: Task) {
        if let Some(n) = self.run_task(ctx, me, t) {
            self.queues[me].note_top(Some(&n.ent));
            self.queues[me].with(|q| q.push_back(n));
            self.sleep.notify_one();
        }
    }

    fn queue_ready(&self, ctx: &mut Ctx, me: usize) {
        if ctx.ready.is_empty() {
            return;
        }
        if self.distributed && ctx.ready.len() > 1 {
            order_ready(&mut ctx.ready);
        }
        self.queues[me].note_top(ctx.ready.last().map(|(ent, _)| ent));
        self.queues[me]
            .with(|q| q.extend(ctx.ready.drain(..).map(|(ent, item)| Task { ent, item })));
        self.sleep.notify_one();
    }
}

/// Replicas of one template node (a split's instances) that wait in a
/// worker's queue right above each other were, in all likelihood, fed by
/// one dispatch, and feed one entity downstream (the split's next). When
/// the task just run (a replica of `node`) obtained the licence of the
/// entity it feeds (`walk`), the worker runs the replicas still waiting on
/// top of its queue first and `walk` after them, so that `walk` finds all
/// their outputs in its inbox at once (one task, one run of calls) instead
/// of a few after each replica. Returns the task to run next.
///
/// Only the order of licences this worker already holds changes (at most
/// [`BATCH`] siblings are looked at): every task still runs, nothing waits
/// for anything new (ARCHITECTURE.md, "It cannot deadlock", is untouched),
/// each entity still processes its inbox in order, and what waits for
/// `walk` meanwhile is what the siblings send it.
fn defer_below_siblings(q: &mut VecDeque<Task>, node: u32, walk: Task) -> Option<Task> {
    let siblings = q
        .iter()
        .rev()
        .take(BATCH)
        .take_while(|t| t.ent.node() == Some(node))
        .count();
    if siblings == 0 {
        return Some(walk);
    }
    q.insert(q.len() - siblings, walk);
    q.pop_back()
}

/// The licence a box call that suspended after a batch of outputs got for
/// the entity it fed, when that entity is a split (`A ! <t>`, a farm's
/// dispatcher): the worker runs it before the call goes on, while the
/// batch is in its cache, and only the licences *it* obtains (the
/// replicas) wait in the queue for thieves. Left in the queue, the split
/// itself was stolen: the other worker routed every record the call made
/// (each crossing between cores, the split's inbox growing and its buffer
/// regrowing while the call ran ahead) and handed half of the replicas
/// back to be stolen in turn. Anything else the call fed (a box, the
/// output, a star) stays queued: the call and it then run side by side, a
/// pipeline across workers.
///
/// Only the order of licences this worker holds changes: the call goes on
/// right after the split's task, whose own licences are queued as any
/// task's are (ARCHITECTURE.md, "It cannot deadlock", is untouched).
fn router(ctx: &mut Ctx) -> Option<Task> {
    let [(e, _)] = ctx.ready.as_slice() else {
        return None;
    };
    if e.is_box() || e.shared_state().is_some() {
        return None;
    }
    // SAFETY: this worker holds `e`'s licence (it is in `ctx.ready`, the
    // licences this worker obtained), `e` is not stateless (checked), and
    // no other reference to its state is alive here (the task that just
    // ran is another entity's: a box never feeds itself).
    if !matches!(unsafe { e.state() }, crate::runtime::Kind::Split(_)) {
        return None;
    }
    ctx.ready.pop().map(|(ent, item)| Task { ent, item })
}

/// Of the licences a task obtained, the one it walks into is the last: a
/// connection to another node's, if the task fed one, goes last, and
/// failing that an entity whose records reach one before any box
/// ([`Entity::toward_remote`]: a synchrocell before a dynamic placement,
/// a feedback loop's entry whose body starts with one). A connection's
/// task is short (the items go to the node's outbound queue) and obtains
/// nothing, so the chain ends there and the worker sends the items at
/// once (`worker_loop_in`); walking into a box first made the other node
/// wait for them behind the box's calls (a farm's split on node 0 feeding
/// the local replica and a remote one: the remote node started a batch's
/// work only when node 0 had done its own, `bench/distfarm`; the load
/// balancer's node 0 adding three results while the node tokens that
/// would start the other nodes' next tasks waited behind the calls,
/// `examples/balance`). Only the order of licences this worker holds
/// changes (ARCHITECTURE.md, "It cannot deadlock", is untouched).
#[inline(never)]
fn remote_last(ready: &mut Vec<(Arc<Entity>, Item)>) {
    let last = ready.len() - 1;
    if ready[last].0.is_remote() {
        return;
    }
    let i = match ready[..last].iter().rposition(|(e, _)| e.is_remote()) {
        Some(i) => i,
        None if ready[last].0.toward_remote() => return,
        None => match ready[..last].iter().rposition(|(e, _)| e.toward_remote()) {
            Some(i) => i,
            None => return,
        },
    };
    let r = ready.remove(i);
    ready.push(r);
}

/// The task a worker of a distributed run runs instead of walking into
/// box call `walk`: the top of its queue `q` if that task's records reach
/// another node before any box ([`Entity::toward_remote`]) and it is not
/// an entity's resumption (`Wake`: a call or a star that suspended went
/// to the front of the queue so that others run first, and taking it back
/// at once would spin), `walk` going on top of `q`; else `walk`. With
/// [`remote_last`] (the licence a task walks into) and [`order_ready`]
/// (the licences it queues, whose last is the queue's top), the licences
/// that start other nodes' work (a node token on its way to a dynamic
/// placement, a farm's remote replica) wait for no local box call of this
/// worker's: node 0 of `examples/balance` ran three 12 ms `add` calls
/// while the tokens that would start nodes 1-3's next tasks waited below
/// them in its queue (under `respawn`, where the calls' fields were node
/// 0's own at once).
///
/// Only the order of licences this worker holds changes, and a box call
/// gives way once per walk: `walk` is on top of `q` when the task that
/// took its place ends, and the worker takes its queue's top when it has
/// no walk (ARCHITECTURE.md, "It cannot deadlock", is untouched; each
/// entity still processes its inbox in order).
fn box_after_remote(q: &mut VecDeque<Task>, walk: Task) -> Option<Task> {
    match q.back() {
        Some(t) if t.ent.toward_remote() && !matches!(t.item, Item::Wake) => {
            let t = q.pop_back();
            q.push_back(walk);
            t
        }
        _ => Some(walk),
    }
}

/// Puts the licences of `ready` whose records reach another node before
/// any box ([`Entity::toward_remote`]) last, in their order, before a
/// distributed run's worker queues them: the last is its queue's top,
/// which it takes next. (Queued in the order obtained, a farm or a
/// feedback loop left a licence toward another node below a local one.)
fn order_ready(ready: &mut [(Arc<Entity>, Item)]) {
    let Some(first) = ready.iter().position(|(e, _)| e.toward_remote()) else {
        return;
    };
    if ready[first..].iter().all(|(e, _)| e.toward_remote()) {
        return;
    }
    // (Stable: local ones first, each kind in the order obtained.)
    ready[first..].sort_by_key(|(e, _)| e.toward_remote());
}

/// What the log notes before an item is processed (see [`crate::instrument`]).
#[inline(never)]
fn item_hook(ctx: &mut Ctx, item: &mut Item) -> Option<crate::instrument::Hop> {
    ctx.log.as_deref_mut()?.item(item)
}

/// Tasks a worker may run one after the other (each the licence the last
/// one obtained) before it sends what they queued for other nodes: a
/// chain ends sooner when a task obtains nothing to run next.
const CHAIN_SEND: u32 = 16;

impl Shared {
    /// After a chain of tasks (and when [`Shared::look`] queued what a
    /// quiet node must send): the acknowledgements this node owes, if its
    /// backlog is small, then everything this worker queued for other
    /// nodes, sent by the worker itself ([`send_queued`]): the
    /// acknowledgements ride on the records the tasks made.
    fn send_own(&self, ctx: &mut Ctx, t: &dyn Transport) {
        // Items received from other nodes are acknowledged once this
        // node's backlog is small: checked after every chain of tasks,
        // suspended calls' included (a worker that only resumes a call
        // waiting for acknowledgements must still send the ones it owes,
        // or two nodes could wait for each other).
        if self.rt.net.owes() && ctx.local_backlog() < BACKLOG_LIMIT {
            ctx.unsent |= self.rt.net.flush_acks(false);
        }
        if std::mem::take(&mut ctx.unsent) {
            send_queued(self, t);
        }
    }
}

pub(crate) fn worker_loop(sh: &Shared, me: usize, t: &dyn Transport) {
    let mut ctx = Ctx::for_worker(&sh.rt, me);
    if ctx.log.is_some() {
        sh.count_now(&mut ctx, crate::instrument::now_ns());
    }
    worker_loop_in(sh, me, &mut ctx, t);
    sh.sent[me].store(ctx.sent, std::sync::atomic::Ordering::Relaxed);
    if ctx.log.is_some() {
        sh.count_now(&mut ctx, crate::instrument::now_ns());
    }
    if let Some(log) = ctx.log.take() {
        sh.rt.logs.put(*log);
    }
}

#[cfg_attr(loom, allow(clippy::absurd_extreme_comparisons))] // SPINS is 0 under loom
fn worker_loop_in(sh: &Shared, me: usize, ctx: &mut Ctx, tr: &dyn Transport) {
    let mut next: Option<Task> = None;
    let mut spins = 0u32;
    // Tasks run since this worker last sent what it queued.
    let mut chain = 0u32;
    // Whether this worker is counted in `sh.searching`.
    let mut searching = false;
    loop {
        if sh.abort.load(Ordering::Relaxed) {
            // The task in hand stays queued: if it is the output's, its
            // record is written after the workers stopped (`scheduler::node`).
            if let Some(t) = next.take() {
                sh.queues[me].with(|q| q.push_back(t));
            }
            break;
        }
        let task = if sh.distributed {
            // Then what the input manager obtained.
            sh.next_distributed(me, next.take())
                .or_else(|| lock(&sh.injector).pop_front())
        } else {
            match next.take() {
                Some(t) => Some(t),
                // Only this worker adds to its queue: a zero hint is exact.
                None if sh.queues[me].maybe_empty() => None,
                None => sh.queues[me].with(VecDeque::pop_back),
            }
        };
        if let Some(t) = task {
            if searching {
                searching = false;
                sh.searching.fetch_sub(1, Ordering::Relaxed);
            }
            next = sh.run_task(ctx, me, t);
            chain += 1;
            // What the chain queued for other nodes goes when it ends
            // (or every `CHAIN_SEND` tasks), with the acknowledgements
            // owed: one message where a record and its acknowledgement
            // each woke the output manager.
            if sh.distributed && (next.is_none() || chain >= CHAIN_SEND) {
                chain = 0;
                sh.send_own(ctx, tr);
            }
            continue;
        }
        if !searching && sh.cut {
            searching = true;
            sh.searching.fetch_add(1, Ordering::Relaxed);
        }
        match sh.admit(ctx, false) {
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
                ctx,
                me,
                Task {
                    ent,
                    item: Item::Wake,
                },
            );
            if sh.distributed && next.is_none() {
                chain = 0;
                sh.send_own(ctx, tr);
            }
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
        let mut queued = false;
        match sh.sleep.idle(|last| sh.look(last, &mut queued)) {
            Wake::Retry if queued => {
                // Quiet: it sends the acknowledgements or credit it queued
                // itself, and looks again at once (no spinning: it was
                // about to sleep).
                ctx.unsent = true;
                sh.send_own(ctx, tr);
                spins = SPINS;
            }
            Wake::Retry => {}
            Wake::Done => break,
            Wake::ForceAdmit => {
                if let Some(Some(t)) = sh.admit(ctx, true) {
                    next = Some(t);
                }
            }
        }
    }
    if searching {
        sh.searching.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Whether [`Shared::cut_chain`] is on: unless the environment variable
/// `SNET_CHAIN_CUT` is `0` (for measuring the rule against its absence).
fn chain_cut_enabled() -> bool {
    if cfg!(loom) {
        return true;
    }
    std::env::var_os("SNET_CHAIN_CUT").is_none_or(|v| v != "0")
}

#[cfg(all(test, not(loom)))]
mod layout_tests {
    use std::collections::VecDeque;

    use super::{InputConfig, Shared};
    use crate::sync::share_lines;

    /// Two workers' local queues share no cache line (each owner pushes
    /// and pops its own at every task), and the flag every worker reads
    /// at every turn shares none with the queues or with the counters
    /// workers write.
    #[test]
    fn each_local_queue_is_alone_on_its_lines() {
        let rt = crate::runtime::held_tests::empty();
        let input = InputConfig {
            closed: true,
            capacity: 1,
            limit: None,
            codecs: snet_core::Codecs::default(),
        };
        let sh = Shared::new(rt, 4, VecDeque::new(), None, input);
        for (i, a) in sh.queues.iter().enumerate() {
            for b in &sh.queues[i + 1..] {
                assert!(
                    !share_lines(a, b),
                    "queue {i} shares a line with a neighbour"
                );
            }
            assert!(!share_lines(a, &sh.abort), "queue {i} and abort");
            assert!(!share_lines(a, &sh.admitted), "queue {i} and admitted");
            assert!(!share_lines(a, &sh.steals), "queue {i} and steals");
        }
        assert!(!share_lines(&sh.abort, &sh.admitted));
        assert!(!share_lines(&sh.abort, &sh.steals));
        assert!(!share_lines(&sh.admitted, &sh.steals));
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

    /// Workers counted as looking for work ([`Shared::cut_chain`]'s hint).
    pub(crate) fn model_searching(&self) -> usize {
        self.searching.load(Ordering::Relaxed)
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

#[cfg(all(test, not(loom)))]
mod chain_cut_tests {
    use std::collections::VecDeque;

    use snet_core::{BoxDef, Graph, Label, Loc, Node, NodeKind, Rank, Record, Type, Value};

    use super::{InputConfig, Shared, Task};
    use crate::boxes::{BoxImpl, Emit};
    use crate::entity::{Entity, Item, Offer, Origin, Rec, Stamps};
    use crate::error::BoxError;
    use crate::instantiate::{instantiate, output_entity};
    use crate::program::Program;
    use crate::runtime::{Ctx, Runtime};
    use crate::sync::{Arc, Ordering};

    /// `<x>` -> `<x + 1>`.
    struct Inc(Label);

    impl BoxImpl for Inc {
        fn invoke(&self, input: &Record, out: &mut dyn Emit) -> Result<(), BoxError> {
            let mut r = Record::new();
            r.set(self.0, Value::Int(input.int(self.0).expect("<x>") + 1));
            out.emit(1, r)
        }
    }

    /// A sink that keeps nothing (also the `tests` module's).
    pub(super) struct Discard;

    impl crate::Sink for Discard {
        fn write(&mut self, _: &Record) -> std::io::Result<()> {
            Ok(())
        }
        fn finish(&mut self) -> std::io::Result<()> {
            Ok(())
        }
        fn abort(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    /// A node of 2 workers running `inc .. inc`.
    fn chain_node(x: Label) -> Shared {
        let loc = Loc {
            file: "t.snet".into(),
            line: 1,
            col: 1,
        };
        let def = BoxDef {
            name: "inc".into(),
            inputs: vec![x],
            init: false,
            outputs: vec![vec![x]],
            interface: "Rust".into(),
            code: None,
            loc: loc.clone(),
        };
        let mut g = Graph {
            nodes: Vec::new(),
            boxes: vec![def],
            entry: snet_core::NodeId(0),
        };
        let mut node = |kind| {
            g.add(Node {
                kind,
                loc: loc.clone(),
                input: Type::default(),
                output: Type::default(),
            })
        };
        let a = node(NodeKind::Box(0));
        let b = node(NodeKind::Box(0));
        let entry = node(NodeKind::Serial(a, b));
        g.entry = entry;
        let imp: Arc<dyn BoxImpl> = Arc::new(Inc(x));
        let rt = Runtime::new(
            Program::new(Arc::new(g)),
            vec![Some(imp)],
            crate::dist::Net::new(Rank(0), 1, crate::DEFAULT_INLINE_FIELDS),
            1,
        );
        let input = InputConfig {
            closed: true,
            capacity: 1,
            limit: None,
            codecs: snet_core::Codecs::default(),
        };
        Shared::new(rt, 2, VecDeque::new(), None, input)
    }

    /// Two instances of the chain; the first box of each licensed with
    /// one record; the second instance's task queued on worker 0.
    fn two_chains(sh: &Shared, x: Label) -> (Task, Arc<Entity>) {
        let ctx = Ctx::new(&sh.rt);
        let output = output_entity(&ctx, Box::new(Discard));
        let task = |v| {
            let chain = instantiate(&ctx, sh.rt.graph().entry, output.clone(), &Stamps::new());
            let mut r = Record::new();
            r.set(x, Value::Int(v));
            let Offer::Licensed(item) = chain.offer(Item::Rec(Rec {
                rec: r,
                det: Stamps::new(),
                origin: Origin::NONE,
            })) else {
                unreachable!("an idle entity")
            };
            Task { ent: chain, item }
        };
        let (first, second) = (task(1), task(10));
        let queued = second.ent.clone();
        sh.queues[0].with(|q| q.push_back(second));
        (first, queued)
    }

    /// A box's task that obtained the next box's licence, while the other
    /// worker searches for work and this worker has an older task: the
    /// walk is queued (for the thief) and the older task comes next.
    /// With no worker searching, the task walks on as before.
    #[test]
    fn a_chain_is_cut_while_another_worker_searches() {
        let x = Label::tag("x");
        for searching in [1, 0] {
            let mut sh = chain_node(x);
            sh.cut = true;
            sh.searching.store(searching, Ordering::Relaxed);
            let (first, queued) = two_chains(&sh, x);
            let head = first.ent.clone();
            let mut ctx = Ctx::for_worker(&sh.rt, 0);
            let next = sh.run_task(&mut ctx, 0, first).expect("a task to run next");
            let left: Vec<Arc<Entity>> =
                sh.queues[0].with(|q| q.iter().map(|t| t.ent.clone()).collect());
            assert_eq!(left.len(), 1, "searching {searching}");
            // The first chain's second box: a box, neither chain's head.
            let second_box =
                |e: &Arc<Entity>| e.is_box() && !Arc::ptr_eq(e, &head) && !Arc::ptr_eq(e, &queued);
            if searching > 0 {
                assert!(Arc::ptr_eq(&next.ent, &queued), "the older task comes next");
                assert!(second_box(&left[0]), "the walk is queued");
            } else {
                assert!(second_box(&next.ent), "walks on into the next box");
                assert!(
                    Arc::ptr_eq(&left[0], &queued),
                    "the older task stays queued"
                );
            }
            drop(next);
            sh.queues[0].with(VecDeque::clear);
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::chain_cut_tests::Discard;
    use super::*;
    use crate::runtime::Kind;

    /// A task of a connection to node 1 (its records reach another node).
    fn remote() -> Task {
        let conn = crate::dist::ConnId {
            origin: snet_core::Rank(0),
            seq: 1,
        };
        let kind = Kind::Remote(crate::remote::RemoteEntity::new(snet_core::Rank(1), conn));
        Task {
            ent: Entity::new(kind),
            item: Item::Wake,
        }
    }

    /// A task of the output (its records reach no other node).
    fn local() -> Task {
        let kind = Kind::Output(crate::output::OutputEntity::new(Box::new(Discard)));
        Task {
            ent: Entity::new(kind),
            item: Item::Wake,
        }
    }

    fn ids(q: &VecDeque<Task>) -> Vec<*const Entity> {
        q.iter().map(ptr).collect()
    }

    #[test]
    fn entities_know_whether_they_lead_to_another_node() {
        assert!(remote().ent.toward_remote());
        assert!(!local().ent.toward_remote());
    }

    fn ptr(t: &Task) -> *const Entity {
        Arc::as_ptr(&t.ent)
    }

    /// A task of `t`'s entity with a record-less item other than `Wake`.
    fn resumed(t: Task) -> Task {
        Task {
            ent: t.ent,
            item: Item::Resume,
        }
    }

    #[test]
    fn a_box_call_gives_way_to_the_top_task_toward_another_node() {
        let (r, l) = (resumed(remote()), resumed(local()));
        let (rp, lp) = (ptr(&r), ptr(&l));
        let mut q: VecDeque<Task> = [l, r].into_iter().collect();
        let walk = resumed(local());
        let wp = ptr(&walk);
        let t = box_after_remote(&mut q, walk).expect("a task");
        assert_eq!(ptr(&t), rp);
        // The walk is the queue's top now: the worker's next task.
        assert_eq!(ids(&q), vec![lp, wp]);
    }

    #[test]
    fn a_box_call_walks_on_over_local_work_and_resumptions() {
        // The top is local: the walk goes on, the queue unchanged.
        let (r, l) = (resumed(remote()), resumed(local()));
        let mut q: VecDeque<Task> = [r, l].into_iter().collect();
        let before = ids(&q);
        let walk = resumed(local());
        let wp = ptr(&walk);
        assert_eq!(ptr(&box_after_remote(&mut q, walk).expect("a task")), wp);
        assert_eq!(ids(&q), before);
        // The top is a connection's resumption (`Wake`: it went to the
        // queue so that others run first): the walk goes on.
        let mut q: VecDeque<Task> = std::iter::once(remote()).collect();
        let before = ids(&q);
        let walk = resumed(local());
        let wp = ptr(&walk);
        assert_eq!(ptr(&box_after_remote(&mut q, walk).expect("a task")), wp);
        assert_eq!(ids(&q), before);
    }

    #[test]
    fn licences_toward_another_node_are_queued_on_top_in_their_order() {
        let tasks = [local(), remote(), local(), remote(), local()];
        let p: Vec<_> = tasks.iter().map(ptr).collect();
        let mut ready: Vec<_> = tasks.into_iter().map(|t| (t.ent, t.item)).collect();
        order_ready(&mut ready);
        let got: Vec<_> = ready.iter().map(|(e, _)| Arc::as_ptr(e)).collect();
        assert_eq!(got, vec![p[0], p[2], p[4], p[1], p[3]]);
        // Already so, or none toward another node: unchanged.
        for tasks in [[local(), remote(), remote()], [local(), local(), local()]] {
            let p: Vec<_> = tasks.iter().map(ptr).collect();
            let mut ready: Vec<_> = tasks.into_iter().map(|t| (t.ent, t.item)).collect();
            order_ready(&mut ready);
            let got: Vec<_> = ready.iter().map(|(e, _)| Arc::as_ptr(e)).collect();
            assert_eq!(got, p);
        }
    }
}
