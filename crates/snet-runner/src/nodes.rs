//! A run: its nodes all in this process ([`Run::here`]: one node, or
//! `--transport loopback`), or processes (`--transport shm`, MPI;
//! [`Run::on`]), written once over the engine's `Transport`: every process runs this with its
//! [`Processes`] (`shm.rs`, `mpi.rs`: how a process joins the run, and how
//! the run ends for it), and node 0 reads and writes the records.
//!
//! Each process: joins (node 0 of a shared-memory run starts the others),
//! places the graph (`--scatter`), opens node 0's record streams, arms a
//! test fault if asked (`fault.rs`), runs its engine, then reports. Node 0
//! prints the run's errors (the others' reach it); node K ≥ 1 prints only
//! its `--stats` lines and errors of its own transport. `--trace` and
//! `--profile-json`: node K ≥ 1 writes its parts, node 0 gathers them once
//! every other node has ended (`report.rs`).

use std::sync::Arc;
use std::time::Instant;

use snet_core::Rank;
use snet_engine::dist::Transport;
use snet_engine::{Config, EngineError, LanguageInterface, SingleNode, Stats};
use snet_shm::launch::Ended;

use crate::io::node_streams;
use crate::io::open_io;
use crate::RunOptions;
use crate::TransportKind;

/// One run: what every transport's path needs.
pub(crate) struct Run<'a> {
    pub(crate) graph: Arc<snet_core::Graph>,
    pub(crate) opts: &'a RunOptions,
    pub(crate) config: &'a Config,
    pub(crate) language: &'a (dyn LanguageInterface + Sync),
    /// When the run started (for `--stats`).
    pub(crate) start: Instant,
}

/// This process's part of a run, done.
pub(crate) struct Part {
    pub(crate) result: Result<Stats, EngineError>,
    pub(crate) me: Rank,
    pub(crate) nodes: u32,
    /// Node 0: how the other node processes ended, if it started them.
    pub(crate) ended: Vec<Ended>,
    /// The transport's own counters, for `--stats` (`shm node K: ...`).
    pub(crate) counters: Option<String>,
    /// The transport as `--stats` names it (`mpi`, `shm, notify ...`).
    pub(crate) name: String,
}

/// A transport whose nodes are processes.
pub(crate) trait Processes {
    /// Joins the run and runs `part` (this process's part) on this
    /// process's endpoint; `Err(status)` when it could not (said on
    /// standard error).
    fn run(
        &mut self,
        part: impl FnOnce(&dyn Transport) -> Result<Stats, EngineError>,
    ) -> Result<Part, u8>;

    /// Whether this process must report before [`Processes::end`]: MPI,
    /// where a rank that ends with a nonzero status makes `mpirun` stop
    /// the job, and node 0's report must be out by then.
    fn report_first(&self) -> bool;

    /// Ends this process's membership of the run (MPI: finalize with the
    /// other ranks). Node 0 gathers the other nodes' report parts after it.
    fn end(&mut self);
}

impl Run<'_> {
    /// A run whose `nodes` nodes all live in this process: one node, or
    /// `--transport loopback` (each node its own engine).
    pub(crate) fn here(&self, nodes: u32) -> u8 {
        let (opts, config) = (self.opts, self.config);
        let io = match open_io(opts) {
            Ok(io) => io,
            Err(code) => return code,
        };
        let graph = place(opts, self.graph.clone(), nodes);
        let result = if opts.transport == Some(TransportKind::Loopback) {
            snet_engine::run_loopback(graph, config, Some(io), self.language, nodes)
        } else {
            snet_engine::run(graph, config, Some(io), self.language, &SingleNode).map(|s| vec![s])
        };
        crate::report::local(opts, config, result, self.start)
    }

    /// This process's node of the run over `processes`; returns its exit
    /// status.
    pub(crate) fn on(&self, mut processes: impl Processes) -> u8 {
        let opts = self.opts;
        let part = processes.run(|t| {
            let (me, nodes) = (t.node(), t.nodes());
            if nodes > 1 {
                c4snet::crash::set_node(me.0);
            }
            let graph = place(opts, self.graph.clone(), nodes);
            let io = node_streams(me, opts);
            let faulty = crate::fault::wrap(t);
            let tr: &dyn Transport = match &faulty {
                Some(f) => f,
                None => t,
            };
            snet_engine::run(graph, self.config, io, self.language, tr)
        });
        let part = match part {
            Ok(p) => p,
            Err(code) => return code,
        };
        let (me, ok) = (part.me, part.result.is_ok());
        let mut code = processes
            .report_first()
            .then(|| crate::report::node(self, &part));
        if me != Rank::ROOT {
            if let Some(ins) = &self.config.instrument {
                if let Err(e) = crate::report::finish_node(opts, ins, me, part.nodes) {
                    say!("error: node {me}: {e}");
                }
            }
        }
        processes.end();
        if me == Rank::ROOT {
            if let Some(ins) = &self.config.instrument {
                // A failed run's nodes may never write their parts.
                let nodes = if ok { part.nodes } else { 1 };
                if let Err(e) = crate::report::finish_node(opts, ins, Rank::ROOT, nodes) {
                    say!("error: {e}");
                    if ok {
                        return 2;
                    }
                }
            }
        }
        *code.get_or_insert_with(|| crate::report::node(self, &part))
    }
}

/// This process's resource usage so far (`getrusage(RUSAGE_SELF)`), for
/// `--stats`: CPU time and page faults do not depend on the machine's load
/// as wall time does (the field arena's costs show as minor faults).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct ProcessUsage {
    /// User CPU seconds of all the process's threads.
    pub(crate) user: f64,
    /// System CPU seconds.
    pub(crate) system: f64,
    /// Page faults served without I/O (first touches of memory).
    pub(crate) minor_faults: i64,
    /// Page faults that needed I/O.
    pub(crate) major_faults: i64,
}

impl ProcessUsage {
    /// Now, or `None` if `getrusage` fails.
    pub(crate) fn now() -> Option<ProcessUsage> {
        // SAFETY: an all-zero rusage is a valid value to be overwritten.
        let mut u: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: getrusage writes the struct it is given.
        if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) } != 0 {
            return None;
        }
        let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
        Some(ProcessUsage {
            user: tv(u.ru_utime),
            system: tv(u.ru_stime),
            minor_faults: u.ru_minflt,
            major_faults: u.ru_majflt,
        })
    }
}

impl std::fmt::Display for ProcessUsage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "cpu {:.3} s (user {:.3} s, system {:.3} s), {} minor page faults, {} major",
            self.user + self.system,
            self.user,
            self.system,
            self.minor_faults,
            self.major_faults
        )
    }
}

/// The graph as run on `nodes` nodes: with `--scatter SEED`, random
/// components placed on random nodes.
fn place(opts: &RunOptions, graph: Arc<snet_core::Graph>, nodes: u32) -> Arc<snet_core::Graph> {
    match opts.scatter {
        Some(seed) => Arc::new(graph.scatter(nodes, seed, 0.3)),
        None => graph,
    }
}
