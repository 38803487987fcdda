//! The FRONT engine: runs an S-Net property graph on a fixed pool of workers.
//!
//! The design follows the FRONT runtime (seed 003 §4, `runtime.md` §2):
//! a static [`snet_core::Graph`] is instantiated lazily into an *entity graph*
//! whose entities cost one allocation each, and a fixed set of workers runs
//! the entities whose input streams are non-empty.
//!
//! Modules, one per concern:
//! - [`sync`]: the atomics and locks every concurrent module uses (swappable by `loom`);
//! - [`scheduler`]: workers, local queues, stealing, sleeping, input admission, termination;
//! - [`entity`]: an entity's inbox, its licence protocol and the item types on streams;
//! - [`instantiate`]: template node -> entity (lazy replicas share templates);
//! - [`filter`], [`synchro`], [`boxes`], [`parallel`], [`star`], [`split`],
//!   [`feedback`], [`collector`], [`output`]: one module per entity kind;
//! - [`limit`]: the `--input-limit` formula;
//! - [`dist`]: the distribution layer interface (single node = the trivial layer).

pub mod boxes;
pub mod collector;
pub mod dist;
pub mod entity;
pub mod feedback;
pub mod filter;
pub mod instantiate;
pub mod limit;
pub mod output;
pub mod parallel;
pub mod scheduler;
pub mod split;
pub mod star;
pub mod sync;
pub mod synchro;

use std::fmt;
use std::sync::Arc;

use snet_core::{Graph, Loc, Record};

pub use boxes::{BoxError, BoxImpl, Emit, LanguageInterface, NoBoxes};
pub use dist::{Distribution, SingleNode};
pub use limit::InputLimit;

/// Where input records come from (the record reader, a test vector, ...).
pub trait Source: Send {
    /// The next record, `Ok(None)` at the end of the input.
    fn next_record(&mut self) -> Result<Option<Record>, SourceError>;
}

/// A malformed input, already carrying its position in the message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SourceError(pub String);

/// Where output records go. Called by one worker at a time, in stream order.
pub trait Sink: Send {
    fn write(&mut self, rec: &Record) -> std::io::Result<()>;
    /// After the last record of a successful run (writes the terminate record).
    fn finish(&mut self) -> std::io::Result<()>;
    /// After a failed run: flush what was written, no terminate record.
    fn abort(&mut self) -> std::io::Result<()>;
}

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
        }
    }
}

/// What went wrong during a run. The message names the component and its source location.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EngineError {
    /// A record did not fit a component's type (no parallel branch, missing split tag, ...).
    Type { what: String, loc: Option<Loc> },
    /// A tag expression failed (division by zero, ...).
    Eval { what: String, loc: Option<Loc> },
    /// A box misbehaved (bad variant number, missing callback, crash).
    Box {
        name: String,
        what: String,
        loc: Option<Loc>,
    },
    /// The input stream was malformed.
    Input(String),
    /// Writing the output failed.
    Output(String),
    /// Setting up the network failed (unresolved boxes, bad configuration).
    Setup(String),
}

impl fmt::Display for EngineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let at = |loc: &Option<Loc>| loc.as_ref().map(|l| format!("{l}: ")).unwrap_or_default();
        match self {
            EngineError::Type { what, loc } => write!(f, "{}runtime type error: {what}", at(loc)),
            EngineError::Eval { what, loc } => write!(f, "{}{what}", at(loc)),
            EngineError::Box { name, what, loc } => write!(f, "{}box `{name}`: {what}", at(loc)),
            EngineError::Input(m) => write!(f, "malformed input: {m}"),
            EngineError::Output(m) => write!(f, "cannot write output: {m}"),
            EngineError::Setup(m) => write!(f, "{m}"),
        }
    }
}

impl std::error::Error for EngineError {}

/// Counters of one run.
#[derive(Clone, Debug, Default)]
pub struct Stats {
    pub input_records: u64,
    pub output_records: u64,
    pub entities_created: u64,
    pub steals: u64,
}

/// Runs `graph` from `source` to `sink` and returns when the network has drained.
pub use scheduler::run;

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
        Box::new(VecSource(input.into_iter())),
        Box::new(VecSink(out.clone())),
        language,
        &SingleNode,
    )?;
    let v = std::mem::take(&mut *out.lock().unwrap_or_else(|e| e.into_inner()));
    Ok(v)
}
