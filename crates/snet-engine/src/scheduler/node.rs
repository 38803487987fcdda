//! A node's run: resolving the boxes, starting the threads (workers, the
//! reader thread, the managers of a distributed run), ending the run, and
//! the run's errors and statistics. The managers reach the scheduler
//! through [`Host`], implemented here.
//!
//! *Errors.* The first error is stored, `abort` is set and every sleeper is
//! woken; workers stop at their next task boundary.

use std::collections::VecDeque;
use std::thread;

use snet_core::{Graph, NodeId, NodeKind, Rank};

use super::admission::{reader_loop, InputConfig};
use super::work::{worker_loop, LocalQueue, Shared, Task};
use crate::dist::managers::{input_manager, output_manager, Host};
use crate::dist::{Net, Settle, Transport};
use crate::entity::{Entity, Item, Stamps};
use crate::instantiate::{instantiate, output_entity};
use crate::program::Program;
use crate::runtime::{Ctx, Kind, Runtime};
use crate::sync::{lock, Arc, Ordering};
use crate::{Config, EngineError, InternalError, LanguageInterface, Sink, Source, Stats};

/// Boxes reachable from `root`.
fn used_boxes(graph: &Graph, root: NodeId, seen: &mut [bool], out: &mut Vec<u32>) {
    let mut stack = vec![root];
    while let Some(n) = stack.pop() {
        if std::mem::replace(&mut seen[n.index()], true) {
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
        if std::mem::replace(&mut seen[n.index()], true) {
            continue;
        }
        if let NodeKind::Place { node, .. } = graph.node(n).kind {
            if node.0 >= nodes {
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
            if transport.node() == Rank::ROOT {
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
    // A run that survives a lost node runs no placement inside another
    // on a node other than 0, static or a dynamic placement's replica:
    // pushed down, each is connected to the other through node 0, whose
    // custody log keeps what it sends (`Graph::placed_for_replay`). Every
    // node, and every replacement, makes the same graph, so template
    // numbers agree.
    let respawn = config.on_node_loss == crate::dist::OnNodeLoss::Respawn;
    let pushed = (respawn && transport.nodes() > 1)
        .then(|| graph.placed_for_replay(transport.nodes()))
        .flatten();
    let graph = pushed.map(Arc::new).unwrap_or(graph);

    let net = Net::with_loss(
        transport.node(),
        transport.nodes(),
        config.inline_fields,
        config.on_node_loss,
    )
    .sharing(transport.shared_region());
    let mut rt = Runtime::new(
        Program::new(graph.clone()),
        boxes,
        net,
        config.box_concurrency.max(1),
    );
    rt.box_stack = config.box_stack;
    rt.observers = crate::observe::Observers::new(config.field_text.clone());
    if config.watch.is_some() {
        // Box calls say what they run only when someone may ask (stuck.rs).
        rt.now = (0..workers).map(|_| Default::default()).collect();
    }
    let started = std::time::Instant::now();
    rt.instrument = config.instrument.clone();
    let (source, sink) = match (rt.node, io) {
        (Rank::ROOT, Some((source, sink))) => (Some(source), Some(sink)),
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

    let start_ns = crate::instrument::now_ns();
    let has_reader = source.is_some();
    // Not a scoped thread: see `Input`.
    let reader = source.map(|source| {
        let (input, sleep) = (shared.input.clone(), shared.sleep.clone());
        thread::Builder::new()
            .name("snet-reader".into())
            .spawn(move || reader_loop(&input, &sleep, source))
            .expect("spawn reader thread")
    });
    let monitor_done = std::sync::atomic::AtomicBool::new(false);
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
        let monitor = config.watch.as_ref().map(|watch| {
            let done = &monitor_done;
            thread::Builder::new()
                .name(format!("snet-monitor-{}", sh.rt.node))
                .spawn_scoped(s, move || {
                    crate::stuck::monitor(&sh.rt, watch, done, started, &sh.admitted)
                })
                .expect("spawn monitor thread")
        });
        let handles: Vec<_> = (0..workers)
            .map(|me| {
                thread::Builder::new()
                    .name(format!("snet-worker-{me}"))
                    .spawn_scoped(s, move || guarded(sh, || worker_loop(sh, me, transport)))
                    .expect("spawn worker thread")
            })
            .collect();
        for h in handles {
            if h.join().is_err() {
                sh.fail(EngineError::Internal(InternalError::WorkerPanicked));
            }
        }
        monitor_done.store(true, std::sync::atomic::Ordering::Release);
        if let Some(m) = monitor {
            m.thread().unpark();
            let _ = m.join();
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
            // Closing first wakes the input manager if it waits in
            // `recv` (it stops on `managers_stop` anyway, but only after
            // its receive timeout: 20 ms added to the end of every node).
            transport.close();
            let _ = input.join();
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

    if let Some(ins) = &config.instrument {
        let mut report = crate::instrument::NodeReport::new(
            shared.rt.node,
            shared.rt.graph(),
            shared.rt.logs.take(),
            start_ns,
            crate::instrument::now_ns(),
            workers as u32,
        );
        if has_reader {
            report.name_thread(crate::instrument::TID_READER, "reader");
        }
        if shared.distributed {
            report.name_thread(crate::instrument::TID_OUT, "output manager");
            report.name_thread(crate::instrument::TID_IN, "input manager");
        }
        ins.deposit(report);
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
    if error.is_none() {
        // Records that never left (see `crate::stuck`): a warning each.
        // SAFETY: all workers have been joined.
        for held in unsafe { shared.rt.left_in_cells() } {
            let node = if shared.rt.nodes > 1 {
                format!("node {}: ", shared.rt.node)
            } else {
                String::new()
            };
            (config.warn)(&format!("{node}{held}"));
        }
    }
    let (exports_live, proxies_live, fetched, fetched_bytes, exported) =
        shared.rt.net.store.counts();
    let traffic = &shared.rt.net.traffic;
    let (log_live, log_peak) = shared.rt.net.log_size();
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
        peak_outstanding: shared.rt.net.peak_outstanding(),
        log_live,
        log_peak,
        nodes_replaced: shared.rt.net.replaced(),
        sent_per_worker: shared
            .sent
            .iter()
            .map(|s| s.load(std::sync::atomic::Ordering::Relaxed))
            .collect(),
        fields_given: traffic.fields_given.load(Ordering::Relaxed),
        given_dropped: traffic.given_dropped.load(Ordering::Relaxed),
    };
    // SAFETY: all workers have been joined; nothing else can hold the output's licence.
    let out = output.as_ref().map(|o| match unsafe { o.state() } {
        Kind::Output(out) => out,
        _ => unreachable!("output entity"),
    });
    match error {
        Some(e) => {
            if let (Some(out), Some(ent)) = (out, output.as_ref()) {
                // Nothing lost: records that reached the network's output
                // before the run failed are written before the error is
                // reported (the task holding the output's licence first,
                // then its inbox; the workers put back the tasks in hand).
                let mut pending: VecDeque<Item> = VecDeque::new();
                let mine = |t: &Task| Arc::ptr_eq(&t.ent, ent);
                let mut take = |q: &mut VecDeque<Task>| {
                    let (out_tasks, rest): (VecDeque<Task>, VecDeque<Task>) =
                        q.drain(..).partition(mine);
                    *q = rest;
                    pending.extend(out_tasks.into_iter().map(|t| t.item));
                };
                for q in shared.queues.iter() {
                    q.with(&mut take);
                }
                take(&mut lock(&shared.injector));
                ent.take(&mut pending, usize::MAX);
                out.write_finished(pending);
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

    fn acked(&self) {
        // Only node 0 admits input (`Shared::remote_full`).
        if self.entry.is_some() {
            self.sleep.notify_one();
        }
    }

    fn settle(&self) -> Settle {
        let mut result = Settle::Busy;
        self.sleep.probe(|sleeping, workers| {
            let quiet = sleeping == workers
                && self.queues.iter().all(LocalQueue::is_empty)
                && lock(&self.injector).is_empty();
            result = self.rt.net.settle(quiet, true);
            // Node 0 quiescent: wake a worker to end the run (or admit held input).
            result == Settle::Quiescent
        });
        result
    }
}

impl Shared {
    pub(super) fn fail(&self, e: EngineError) {
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
}
