//! The FRONT engine: runs an S-Net property graph on a fixed pool of workers.
//!
//! The design follows the FRONT runtime (seed 003 §4, `runtime.md` §2):
//! a static [`snet_core::Graph`] is instantiated lazily into an *entity graph*
//! whose entities cost one allocation each, and a fixed set of workers runs
//! the entities whose input streams are non-empty.
//!
//! The public surface: [`run`] (one node's run, from a [`Source`] to a
//! [`Sink`] with the boxes of a [`LanguageInterface`]), its [`Config`] and
//! [`Stats`], the conveniences [`run_vec`] and [`run_loopback`], the
//! error types ([`EngineError`] and its typed payloads; `Display` gives
//! the messages users see), and the public modules [`dist`] (the
//! distribution layer's transport contract and wire format),
//! [`instrument`] and [`instrument_files`] (traces and profiles); the
//! observers' text of field values ([`FieldText`]) and the live dumps of a
//! run ([`Watch`]).
//!
//! Modules, one per concern (all private but those linked above):
//! - `sync`: the atomics and locks every concurrent module uses (swappable by `loom`);
//! - `scheduler`: workers, local queues, stealing, sleeping, input admission, termination;
//! - `callstack`: box calls on stacks of their own, so that a call can be suspended;
//! - `entity`: an entity's inbox, its licence protocol and the item types on streams;
//! - `instantiate`: template node -> entity (lazy replicas share templates);
//! - `filter`, `synchrocell`, `boxes`, `parallel`, `star`, `split`,
//!   `feedback`, `collector`, `output`: one module per entity kind;
//! - `limit`: the `--input-limit` formula;
//! - `observe`: observers (`<observer />` metadata), an entity before or after a component;
//! - `error`: the error types;
//! - `dist`: the distribution layer: nodes, connections, managers,
//!   termination, fields by reference, the wire format (single node = the
//!   trivial layer; the transport trait, the loopback transport and their
//!   conformance suite are `snet-transport`'s, re-exported there);
//!   `remote`: the entity at a connection's local end;
//! - `weight`: dyadic weights (marker copies, termination credit);
//! - `instrument`: traces and profiles (`--trace`, `--profile`).
//!
//! The fuzz targets (`fuzz/`, built with `--cfg fuzzing`) reach a few
//! internals that exist only in that build: `fuzz_filter` and
//! `dist::wire::fuzzing`.

#![warn(unreachable_pub, missing_docs)]

mod boxes;
mod callstack;
mod collector;
pub mod dist;
mod entity;
mod error;
mod feedback;
mod filter;
mod instantiate;
pub mod instrument;
pub mod instrument_files;
mod limit;
mod observe;
mod output;
mod parallel;
mod pathlink;
mod program;
mod remote;
mod runtime;
mod scheduler;
mod split;
mod star;
mod stuck;
mod sync;
mod synchrocell;
mod weight;

use std::fmt;
use std::sync::Arc;

use snet_core::{Graph, Rank, Record};

pub use boxes::{
    invoke_each, BoxImpl, Emit, LanguageInterface, NoBoxes, Over, OverNow, Slot, Src, Steps,
    TagOutput,
};
/// For a signal handler that reports crashes of box code (the C4SNet
/// crash report): whether a fault address is the overflow of the box call
/// running on this thread.
pub use callstack::in_guard as in_box_stack_guard;
pub use callstack::Emitter;
/// The default of [`Config::box_stack`].
pub use callstack::DEFAULT_STACK as DEFAULT_BOX_STACK;
pub use dist::{loopback::Loopback, Channel, SingleNode, Transport, TransportError};
pub use entity::Origin;
pub use error::{
    BoxError, DistributionError, EngineError, EvalContext, InternalError, ProtocolError,
    ResolveError, ResolveReason, RuntimeTypeError, SourceError,
};
/// The filter compiler's paths side by side, for the fuzz targets (`fuzz/`;
/// built only with `--cfg fuzzing`).
#[cfg(fuzzing)]
pub use filter::fuzz_apply as fuzz_filter;
pub use limit::{InputLimit, LimitError};
pub use observe::{FieldText, FieldTextFn, ObserverError};
pub use stuck::{Held, Progress, Watch};

/// Where input records come from (the record reader, a test vector, ...).
pub trait Source: Send {
    /// The next record, `Ok(None)` at the end of the input; an error (the
    /// source's own, wrapped) is reported as [`EngineError::Input`].
    fn next_record(&mut self) -> Result<Option<Record>, SourceError>;

    /// The next record if the source already holds it: `Some` only when
    /// getting it did not wait for the input's producer (`Some(None)`: the
    /// end). The reader thread gathers such records and hands them to the
    /// workers together; a source that cannot tell returns `None` (the
    /// default) and is read one [`Self::next_record`] at a time.
    fn next_ready(&mut self) -> Option<Option<Record>> {
        None
    }

    /// The line of the input on which the record last returned ended, if
    /// the source knows (runtime errors name the input record behind them
    /// by its number and this line).
    fn line(&self) -> Option<u64> {
        None
    }
}

/// Where output records go. Called by one worker at a time, in stream order.
pub trait Sink: Send {
    /// Writes one output record (the sink may buffer it; an error ends the
    /// run as [`EngineError::Output`]).
    fn write(&mut self, rec: &Record) -> std::io::Result<()>;
    /// After the last record of a successful run (writes the terminate record).
    fn finish(&mut self) -> std::io::Result<()>;
    /// After a failed run: flush what was written, no terminate record.
    fn abort(&mut self) -> std::io::Result<()>;
    /// A way to ask the sink, from any thread and without waiting, to push
    /// what it buffers to its destination now. The engine calls it whenever
    /// the node has nothing left to do (every worker idle: the input is not
    /// ready, or other nodes are still working), so that a slow or
    /// interactive stream sees each output record as soon as the network
    /// is done with it. `None` (the default): the sink holds nothing back,
    /// or bounds its own delay.
    fn idle_flush(&self) -> Option<IdleFlush> {
        None
    }
}

/// See [`Sink::idle_flush`].
pub type IdleFlush = std::sync::Arc<dyn Fn() + Send + Sync>;

/// The default of [`Config::inline_fields`].
pub const DEFAULT_INLINE_FIELDS: usize = 1024;

/// Engine configuration.
#[derive(Clone, Debug)]
pub struct Config {
    /// Number of workers (default: one per core).
    pub workers: usize,
    /// Optional bound on admitted input as a function of emitted output.
    pub input_limit: Option<InputLimit>,
    /// How many invocations of one box entity may run at once.
    pub box_concurrency: usize,
    /// Capacity of the read-ahead buffer between the reader thread and the workers.
    pub read_ahead: usize,
    /// Do not free the entity graph after the run (a process about to exit
    /// need not spend time returning memory; the CLI sets this).
    pub fast_exit: bool,
    /// The field codecs of the program's language interfaces: how a field's
    /// bytes are turned back into a value on another node.
    pub codecs: snet_core::Codecs,
    /// Fields of at most this many encoded bytes travel inline with their
    /// record to another node; larger ones by reference (fetched on demand).
    pub inline_fields: usize,
    /// Where the run's warnings go (one line each, without `warning: `);
    /// by default to standard error.
    pub warn: fn(&str),
    /// The size in bytes of the stack each box call runs on (C boxes put
    /// their arrays there); a call that overflows it is reported, naming
    /// the box. Default [`DEFAULT_BOX_STACK`] (8 MiB, of address
    /// space: only the pages a call touches take memory).
    pub box_stack: usize,
    /// The text form of field values, for observers at `allvalues`
    /// (without it a field's value is written only if it is kept as text).
    pub field_text: Option<FieldText>,
    /// Live dumps of what each node is doing (`SIGUSR1`, `--watchdog`);
    /// `None`: no monitor thread.
    pub watch: Option<Watch>,
    /// Record a trace and a profile of the run ([`instrument`]); each node
    /// run in this process deposits its report there. `None` (the
    /// default): nothing is recorded, and nothing is paid.
    pub instrument: Option<Arc<instrument::Instrument>>,
    /// What a distributed run does when a node other than 0 is lost
    /// ([`dist::OnNodeLoss`]; the default ends the run).
    pub on_node_loss: dist::OnNodeLoss,
}

/// The default of [`Config::warn`]: `warning: MESSAGE` on standard error.
pub fn warn_to_stderr(message: &str) {
    eprintln!("warning: {message}");
}

impl Default for Config {
    fn default() -> Config {
        Config {
            workers: std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1),
            input_limit: None,
            box_concurrency: 1,
            read_ahead: 1024,
            fast_exit: false,
            codecs: snet_core::Codecs::default(),
            inline_fields: DEFAULT_INLINE_FIELDS,
            warn: warn_to_stderr,
            box_stack: DEFAULT_BOX_STACK,
            field_text: None,
            watch: None,
            instrument: None,
            on_node_loss: dist::OnNodeLoss::Fail,
        }
    }
}

/// Counters of one run (of one node, in a distributed run).
#[derive(Clone, Debug, Default)]
pub struct Stats {
    /// The node these counters are of (0 in a single-node run).
    pub node: Rank,
    /// Records read from the input (node 0 only; other nodes read none).
    pub input_records: u64,
    /// Records written to the output (node 0 only).
    pub output_records: u64,
    /// Entities instantiated on this node (replicas made on demand included).
    pub entities_created: u64,
    /// Tasks a worker took from another worker's queue.
    pub steals: u64,
    /// Box calls suspended because they emitted a batch of records
    /// (each goes on once the records downstream have been consumed).
    pub suspensions: u64,
    /// Messages this node sent to other nodes (0 in a single-node run).
    pub messages_sent: u64,
    /// Messages this node received from other nodes.
    pub messages_received: u64,
    /// Bytes of the messages sent, headers and payloads.
    pub bytes_sent: u64,
    /// Bytes of the messages received, headers and payloads.
    pub bytes_received: u64,
    /// Fields whose bytes this node fetched from another node.
    pub fields_fetched: u64,
    /// The bytes of the fields fetched.
    pub field_bytes_fetched: u64,
    /// Fields this node exported (sent by reference) during the run.
    pub fields_exported: u64,
    /// After the run: exports still referenced (zero unless records stayed
    /// parked in synchrocells).
    pub exports_live: u64,
    /// After the run: proxies of other nodes' fields still alive (zero
    /// unless records stayed parked in synchrocells).
    pub proxies_live: u64,
    /// The most items this node had sent to other nodes and not yet had
    /// acknowledged at once (back-pressure across nodes).
    pub peak_outstanding: u64,
    /// Node 0 with [`dist::OnNodeLoss::Respawn`]: the records its custody
    /// log still held after the run (zero: every node reported every
    /// record done).
    pub log_live: u64,
    /// Node 0 with [`dist::OnNodeLoss::Respawn`]: the most records its
    /// custody log held at once.
    pub log_peak: u64,
    /// Node 0: the nodes it replaced after they were lost.
    pub nodes_replaced: u64,
    /// Per worker, the records it sent from one entity to another (a box
    /// call's outputs included): how the run's work was spread over the
    /// workers.
    pub sent_per_worker: Vec<u64>,
    /// A node other than 0 with [`dist::OnNodeLoss::Respawn`]: fields it
    /// gave to another node as references to memory that outlives it
    /// (the shared-memory transport's arena in zero-copy mode) instead of
    /// copying them.
    pub fields_given: u64,
    /// Node 0: fields that lost node processes gave and whose records
    /// never came (dropped with the old incarnation when it was replaced).
    pub given_dropped: u64,
}

impl fmt::Display for Stats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "node {}: {} input, {} output records, {} entities, {} steals, {} suspensions, {} msgs / {} B sent, {} msgs / {} B received, {} fields fetched ({} B), {} exported, store {} exports / {} proxies, peak {} unacknowledged",
            self.node,
            self.input_records,
            self.output_records,
            self.entities_created,
            self.steals,
            self.suspensions,
            self.messages_sent,
            self.bytes_sent,
            self.messages_received,
            self.bytes_received,
            self.fields_fetched,
            self.field_bytes_fetched,
            self.fields_exported,
            self.exports_live,
            self.proxies_live,
            self.peak_outstanding
        )?;
        if self.fields_given > 0 {
            write!(f, ", {} fields given", self.fields_given)?;
        }
        if self.given_dropped > 0 {
            write!(
                f,
                ", {} given fields of lost node processes dropped",
                self.given_dropped
            )?;
        }
        Ok(())
    }
}

/// Runs `graph` from `source` to `sink` and returns when the network has drained.
pub use scheduler::run;

/// Runs `graph` as `nodes` nodes inside this process, connected by the
/// loopback transport (each node with its own engine, workers and field
/// store): the distribution layer without a network, for tests and
/// debugging. Node 0 gets `io`. Returns every node's statistics, node 0
/// first, or the run's error (node 0's view: a failure elsewhere names
/// the node).
pub fn run_loopback(
    graph: Arc<Graph>,
    config: &Config,
    io: Option<(Box<dyn Source>, Box<dyn Sink>)>,
    language: &(dyn LanguageInterface + Sync),
    nodes: u32,
) -> Result<Vec<Stats>, EngineError> {
    run_loopback_with(graph, config, io, language, nodes, &|t| Box::new(t))
}

/// As [`run_loopback`], with each node's endpoint wrapped by `wrap`
/// (tests: a transport that fails on cue). With
/// [`dist::OnNodeLoss::Respawn`], a node node 0 replaces runs again on a
/// new thread, with a new endpoint (wrapped too); the results of the
/// incarnations it replaced are not the run's.
pub fn run_loopback_with(
    graph: Arc<Graph>,
    config: &Config,
    io: Option<(Box<dyn Source>, Box<dyn Sink>)>,
    language: &(dyn LanguageInterface + Sync),
    nodes: u32,
    wrap: &(dyn Fn(Loopback) -> Box<dyn Transport> + Sync),
) -> Result<Vec<Stats>, EngineError> {
    let endpoints = Loopback::create(nodes.max(1));
    let respawn = config.on_node_loss == dist::OnNodeLoss::Respawn;
    let (respawned, replacements) = std::sync::mpsc::channel();
    if respawn {
        endpoints[0].on_replace(respawned);
    } else {
        drop(respawned);
    }
    let mut io = io;
    let results: Vec<Result<Stats, EngineError>> = std::thread::scope(|s| {
        let start = |t: Box<dyn Transport>, io| {
            let graph = graph.clone();
            std::thread::Builder::new()
                .name(format!("snet-node-{}", t.node()))
                .spawn_scoped(s, move || {
                    let r = run(graph, config, io, language, &*t);
                    // The endpoint is closed by `run`; dropping it now is orderly.
                    r
                })
                .expect("spawn node thread")
        };
        let mut handles: Vec<Vec<_>> = endpoints
            .into_iter()
            .map(|t| {
                let io = if t.node() == Rank::ROOT {
                    io.take()
                } else {
                    None
                };
                vec![start(wrap(t), io)]
            })
            .collect();
        // Replacements, until node 0 is done (it makes them).
        while respawn && !handles[0][0].is_finished() {
            if let Ok(t) = replacements.recv_timeout(std::time::Duration::from_millis(20)) {
                let k = t.node().index();
                handles[k].push(start(wrap(t), None));
            }
        }
        handles
            .into_iter()
            .enumerate()
            .map(|(i, hs)| {
                let mut last = None;
                for h in hs {
                    last = Some(h.join().unwrap_or_else(|_| {
                        Err(EngineError::Internal(InternalError::NodePanicked {
                            node: Rank(i as u32),
                        }))
                    }));
                }
                last.unwrap_or_else(|| {
                    Err(EngineError::Internal(InternalError::NodePanicked {
                        node: Rank(i as u32),
                    }))
                })
            })
            .collect()
    });
    let mut stats = Vec::new();
    let mut first_err = None;
    for r in results {
        match r {
            Ok(s) => stats.push(s),
            Err(e) => {
                if first_err.is_none() {
                    first_err = Some(e);
                }
            }
        }
    }
    match first_err {
        Some(e) => Err(e),
        None => Ok(stats),
    }
}

/// Convenience for tests and embedders: runs on a vector of records, returns the output records.
pub fn run_vec(
    graph: Arc<Graph>,
    config: &Config,
    input: Vec<Record>,
) -> Result<Vec<Record>, EngineError> {
    run_vec_with(graph, config, input, &NoBoxes)
}

/// As [`run_vec`], with the boxes of `language`.
pub fn run_vec_with(
    graph: Arc<Graph>,
    config: &Config,
    input: Vec<Record>,
    language: &dyn LanguageInterface,
) -> Result<Vec<Record>, EngineError> {
    struct VecSource(std::vec::IntoIter<Record>);
    impl Source for VecSource {
        fn next_record(&mut self) -> Result<Option<Record>, SourceError> {
            Ok(self.0.next())
        }
        fn next_ready(&mut self) -> Option<Option<Record>> {
            Some(self.0.next())
        }
    }
    struct VecSink(Arc<std::sync::Mutex<Vec<Record>>>);
    impl Sink for VecSink {
        fn write(&mut self, rec: &Record) -> std::io::Result<()> {
            self.0
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(rec.clone());
            Ok(())
        }
        fn finish(&mut self) -> std::io::Result<()> {
            Ok(())
        }
        fn abort(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let out = Arc::new(std::sync::Mutex::new(Vec::new()));
    run(
        graph,
        config,
        Some((
            Box::new(VecSource(input.into_iter())),
            Box::new(VecSink(out.clone())),
        )),
        language,
        &SingleNode,
    )?;
    let v = std::mem::take(&mut *out.lock().unwrap_or_else(|e| e.into_inner()));
    Ok(v)
}

#[cfg(all(test, loom))]
mod loom_tests;
