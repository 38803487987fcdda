//! Running a network: to completion, or as a service fed through handles.
//!
//! Both ways are one engine run with a channel-backed source and sink:
//! the engine's reader thread takes records from the input channel (it
//! blocks there while the input is open and empty) and the workers put
//! outputs on the output channel, which is unbounded, so the network never
//! waits for its reader and a caller that sends before it receives cannot
//! deadlock it. The run ends when the input is closed and the network has
//! drained, or at the first runtime error.

use std::fmt;
use std::sync::mpsc::{self, Receiver, SyncSender, TryRecvError, TrySendError};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use snet_engine::{Config, EngineError, SingleNode, Sink, Source, SourceError};

use crate::network::{Network, Transport};
use crate::record::Record;

/// Records the input channel holds before [`Running::send`] waits.
const INPUT_BOUND: usize = 1024;

/// Why a run failed: a box's error or panic, a record the network cannot
/// take, a node that vanished, ... ([`RunError::kind`] says which, for a
/// program to match on), with the box, the input record and the node it
/// happened at where there are ones. `Display` is the message `snet run`
/// prints for the same failure (a box's error names the box and its place
/// in the program).
///
/// ```
/// use snet::{Network, Record, RunErrorKind};
///
/// let mut net = Network::from_source("p.snet", "box f((<n>) -> (<n>)); net p connect f;")?;
/// net.add_box("f", |input, _out| {
///     if input.tag("n")? == 2 {
///         panic!("two is not allowed");
///     }
///     Ok(())
/// });
/// let err = net.run((0..4).map(|n| Record::new().with_tag("n", n))).unwrap_err();
/// assert_eq!(err.kind(), RunErrorKind::BoxPanic);
/// assert_eq!(err.box_name(), Some("f"));
/// assert_eq!(err.input_record(), Some(3)); // the third record sent (numbered from 1)
/// assert!(err.to_string().contains("box `f`: panicked: two is not allowed"), "{err}");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct RunError(Kind);

#[derive(Debug)]
pub(crate) enum Kind {
    Engine(EngineError),
    /// `send` after the run ended (it failed, or the input was closed).
    Ended,
    /// A shared-memory run could not start (its segment, its node
    /// processes).
    Setup(String),
    /// A node process ended badly after node 0's part of the run had
    /// finished well (how it ended, in words).
    NodeEnded {
        node: u32,
        how: String,
    },
    /// Functions registered for names the program has no box of.
    UnknownBox(String),
    /// The trace or profile file could not be written.
    Report(String),
}

/// What kind of failure a [`RunError`] is. More kinds may come: match
/// with a `_` arm.
///
/// ```
/// # use snet::{Network, Record, RunErrorKind};
/// # let mut net = Network::from_source("p.snet", "box f((<n>) -> (<n>)); net p connect f;").unwrap();
/// # net.add_box("f", |_, _| Err("no".into()));
/// match net.run([Record::new().with_tag("n", 1)]) {
///     Ok(_) => {}
///     Err(e) if e.kind() == RunErrorKind::BoxError => eprintln!("box {:?} failed: {e}", e.box_name()),
///     Err(e) => eprintln!("the run failed: {e}"),
/// }
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum RunErrorKind {
    /// A box returned an error, or misused its interface (an output
    /// record of the wrong variant or labels).
    BoxError,
    /// A box panicked (the panic's message is in the error).
    BoxPanic,
    /// A box crashed (a signal) or ended its process (`exit`): in a node
    /// process of a [`Transport::Shm`] run, where crashes are caught.
    BoxCrash,
    /// A record does not fit the component it reached (no parallel branch
    /// takes it, a box or filter lacks a label of it): the input did not
    /// have the type the network takes, or the program routes a record
    /// nowhere.
    TypeError,
    /// A tag expression failed (a division by zero, ...).
    TagExpression,
    /// The input could not be read (malformed input of a source).
    BadInput,
    /// A node stopped answering: its process ended, or the transport
    /// between nodes failed.
    LostNode,
    /// A placement names a node the run does not have (`@ n` with `n` at
    /// least the node count, or `!@ <t>` with such a value).
    Placement,
    /// The program has a box no function was registered for
    /// ([`Network::add_box`]).
    MissingBox,
    /// A function was registered for a name the program has no box of
    /// (the message says which, and the nearest box name).
    UnknownBox,
    /// Records were sent after the run had ended.
    Ended,
    /// A run over shared memory could not start.
    Setup,
    /// The trace or profile file ([`Network::trace`],
    /// [`Network::profile`]) could not be written (the run itself went
    /// well).
    Report,
    /// An error of the runtime itself (a bug: please report it).
    Internal,
}

/// `, caused by input record N (line L)` at the end of a message of
/// another node: (N, L).
fn origin_in_text(message: &str) -> Option<(u64, Option<u64>)> {
    let at = message.rfind(", caused by input record ")?;
    let rest = &message[at + ", caused by input record ".len()..];
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    let number = digits.parse().ok()?;
    let line = rest[digits.len()..]
        .strip_prefix(" (line ")
        .and_then(|l| l.split(')').next())
        .and_then(|l| l.parse().ok());
    Some((number, line))
}

/// The kind of an error that reached node 0 from another node, as text.
fn kind_in_text(message: &str) -> RunErrorKind {
    let message = match message.rfind(", caused by input record ") {
        Some(at) => &message[..at],
        None => message,
    };
    if message.contains("runtime type error: ") {
        RunErrorKind::TypeError
    } else if message.contains("placement error: ") {
        RunErrorKind::Placement
    } else if let Some(b) = message.find("box `") {
        let rest = &message[b..];
        let after = rest.find("`: ").map_or("", |i| &rest[i + 3..]);
        if after.starts_with("called with record") || after.starts_with("input lacks") {
            RunErrorKind::TypeError
        } else if after.starts_with("panicked") {
            RunErrorKind::BoxPanic
        } else if rest.contains("` crashed (signal") || rest.contains("` called exit()") {
            RunErrorKind::BoxCrash
        } else {
            RunErrorKind::BoxError
        }
    } else if message.contains("malformed input: ") {
        RunErrorKind::BadInput
    } else if message.contains("internal error: ") {
        RunErrorKind::Internal
    } else {
        RunErrorKind::LostNode
    }
}

impl RunError {
    pub(crate) fn new(kind: Kind) -> RunError {
        RunError(kind)
    }

    /// What kind of failure this is.
    pub fn kind(&self) -> RunErrorKind {
        match &self.0 {
            Kind::Engine(e) => match e.component_error() {
                EngineError::Box { error, .. } => match error {
                    snet_engine::BoxError::Panicked { .. } => RunErrorKind::BoxPanic,
                    snet_engine::BoxError::WrongInput { .. }
                    | snet_engine::BoxError::MissingInput { .. } => RunErrorKind::TypeError,
                    _ => RunErrorKind::BoxError,
                },
                EngineError::Type { .. } => RunErrorKind::TypeError,
                EngineError::Eval { .. } => RunErrorKind::TagExpression,
                EngineError::Input(_) => RunErrorKind::BadInput,
                EngineError::Setup(_) => RunErrorKind::MissingBox,
                EngineError::Placement { .. } | EngineError::DynamicPlacement { .. } => {
                    RunErrorKind::Placement
                }
                EngineError::Node { message, .. } => kind_in_text(message),
                EngineError::Distribution(_) => RunErrorKind::LostNode,
                _ => RunErrorKind::Internal,
            },
            Kind::Ended => RunErrorKind::Ended,
            Kind::Setup(_) => RunErrorKind::Setup,
            Kind::NodeEnded { how, .. } => {
                if how.contains("signal") {
                    RunErrorKind::BoxCrash
                } else {
                    RunErrorKind::LostNode
                }
            }
            Kind::UnknownBox(_) => RunErrorKind::UnknownBox,
            Kind::Report(_) => RunErrorKind::Report,
        }
    }

    /// The name of the box whose error ended the run, if a box's did (on
    /// any node).
    pub fn box_name(&self) -> Option<&str> {
        match &self.0 {
            Kind::Engine(e) => match e.component_error() {
                EngineError::Box { name, .. } => Some(name),
                // Another process's error reached node 0 as its message
                // (`[place: ]box `NAME`: ...`, as the engine renders a
                // box's error); box names hold no backquote.
                EngineError::Node { message, .. } => {
                    let rest = &message[message.find("box `")? + 5..];
                    rest.find('`').map(|end| &rest[..end])
                }
                _ => None,
            },
            _ => None,
        }
    }

    /// The number of the input record behind the failure (the records
    /// sent are numbered from 1), when the failure came from one.
    pub fn input_record(&self) -> Option<u64> {
        self.origin().map(|(n, _)| n)
    }

    /// The line of that input record in its XML text, when it was read
    /// from one (records read by an [`XmlReader`](crate::XmlReader) and
    /// sent keep no line: `None`).
    pub fn input_line(&self) -> Option<u64> {
        self.origin().and_then(|(_, l)| l)
    }

    fn origin(&self) -> Option<(u64, Option<u64>)> {
        match &self.0 {
            Kind::Engine(EngineError::FromInput { origin, .. }) => {
                origin.number().map(|n| (n, origin.line()))
            }
            Kind::Engine(EngineError::Node { message, .. }) => origin_in_text(message),
            _ => None,
        }
    }

    /// The node the failure happened on, in a run on several nodes
    /// (`None`: node 0, or not known).
    pub fn node(&self) -> Option<u32> {
        match &self.0 {
            Kind::Engine(EngineError::Node { node, .. }) => Some(node.0),
            Kind::Engine(EngineError::Distribution(snet_engine::DistributionError::Send {
                to,
                ..
            })) => Some(to.0),
            Kind::NodeEnded { node, .. } => Some(*node),
            _ => None,
        }
    }
}

/// The error's kind, place and message (no runtime internals).
impl fmt::Debug for RunError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RunError")
            .field("kind", &self.kind())
            .field("box_name", &self.box_name())
            .field("input_record", &self.input_record())
            .field("input_line", &self.input_line())
            .field("node", &self.node())
            .field("message", &self.to_string())
            .finish()
    }
}

impl fmt::Display for RunError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            Kind::Engine(e) => write!(f, "{e}"),
            Kind::Ended => f.write_str("the run has ended: no more input is taken"),
            Kind::Setup(e) => write!(f, "shm: {e}"),
            Kind::NodeEnded { node, how } => {
                write!(f, "node {node} {how} (after node 0's part of the run)")
            }
            Kind::UnknownBox(m) | Kind::Report(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for RunError {}

struct ChannelSource(Receiver<snet_core::Record>);

impl Source for ChannelSource {
    fn next_record(&mut self) -> Result<Option<snet_core::Record>, SourceError> {
        Ok(self.0.recv().ok())
    }

    fn next_ready(&mut self) -> Option<Option<snet_core::Record>> {
        match self.0.try_recv() {
            Ok(r) => Some(Some(r)),
            Err(TryRecvError::Empty) => None,
            Err(TryRecvError::Disconnected) => Some(None),
        }
    }
}

struct ChannelSink(mpsc::Sender<Record>);

impl Sink for ChannelSink {
    fn write(&mut self, rec: &snet_core::Record) -> std::io::Result<()> {
        // A caller that dropped its handle no longer wants the outputs.
        let _ = self.0.send(Record(rec.clone()));
        Ok(())
    }

    fn finish(&mut self) -> std::io::Result<()> {
        Ok(())
    }

    fn abort(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// A running network: send records in, receive outputs, then
/// [`Running::finish`]. Dropping it closes the input and waits for the
/// run to end.
///
/// ```
/// use snet::{Network, Record};
///
/// let mut net = Network::from_source("inc.snet", "box inc((<n>) -> (<n>)); net main connect inc;")?;
/// net.add_box("inc", |input, out| {
///     out.emit(1, Record::new().with_tag("n", input.tag("n")? + 1))?;
///     Ok(())
/// });
/// let mut running = net.start();
/// running.send(Record::new().with_tag("n", 1))?;
/// assert_eq!(running.recv().and_then(|r| r.tag("n")), Some(2)); // while the network keeps running
/// running.send(Record::new().with_tag("n", 41))?;
/// let rest = running.finish()?; // closes the input, waits for the network to drain
/// assert_eq!(rest[0].tag("n"), Some(42));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Running {
    input: Option<SyncSender<snet_core::Record>>,
    output: Receiver<Record>,
    thread: Option<JoinHandle<Result<(), RunError>>>,
}

impl fmt::Debug for Running {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Running")
            .field("input_open", &self.input.is_some())
            .finish_non_exhaustive()
    }
}

/// Why [`Running::try_send`] or [`Running::send_timeout`] did not send a
/// record; the record comes back.
#[derive(Debug)]
#[non_exhaustive]
pub enum SendError {
    /// The network has not taken the records sent before (1024 wait):
    /// try again later, or receive outputs meanwhile.
    Full(Record),
    /// The run has ended (a runtime error, which [`Running::finish`]
    /// returns, or the input was closed).
    Ended(Record),
}

impl SendError {
    /// The record that was not sent.
    pub fn into_record(self) -> Record {
        match self {
            SendError::Full(r) | SendError::Ended(r) => r,
        }
    }
}

impl fmt::Display for SendError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SendError::Full(_) => f.write_str("the network's input is full"),
            SendError::Ended(_) => f.write_str("the run has ended: no more input is taken"),
        }
    }
}

impl std::error::Error for SendError {}

impl Running {
    /// Sends a record into the network; waits while 1024 sent records
    /// have not been taken yet. `Err` if the run has ended (a runtime
    /// error: [`Running::finish`] returns it).
    pub fn send(&self, record: Record) -> Result<(), RunError> {
        match &self.input {
            Some(tx) => tx.send(record.0).map_err(|_| RunError(Kind::Ended)),
            None => Err(RunError(Kind::Ended)),
        }
    }

    /// Sends a record if the network's input has room now (fewer than
    /// 1024 sent records wait); never waits.
    ///
    /// ```
    /// # use snet::{Network, Record, SendError};
    /// # let mut net = Network::from_source("p.snet", "box f((<n>) -> (<n>)); net p connect f;")?;
    /// # net.add_box("f", |i, out| { out.emit(1, Record::new().with_tag("n", i.tag("n")?))?; Ok(()) });
    /// let running = net.start();
    /// match running.try_send(Record::new().with_tag("n", 1)) {
    ///     Ok(()) => {}
    ///     Err(SendError::Full(record)) => { /* receive outputs, then send `record` again */ }
    ///     Err(e) => return Err(e.into()),
    /// }
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn try_send(&self, record: Record) -> Result<(), SendError> {
        match &self.input {
            Some(tx) => tx.try_send(record.0).map_err(|e| match e {
                TrySendError::Full(r) => SendError::Full(Record(r)),
                TrySendError::Disconnected(r) => SendError::Ended(Record(r)),
            }),
            None => Err(SendError::Ended(record)),
        }
    }

    /// Sends a record, waiting at most `timeout` for room in the
    /// network's input; [`SendError::Full`] if there was none by then.
    pub fn send_timeout(&self, record: Record, timeout: Duration) -> Result<(), SendError> {
        let end = Instant::now() + timeout;
        let mut record = record;
        let mut pause = Duration::from_micros(10);
        loop {
            match self.try_send(record) {
                Err(SendError::Full(r)) => {
                    let left = end.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        return Err(SendError::Full(r));
                    }
                    record = r;
                    // (std's bounded channel has no stable timed send.)
                    std::thread::sleep(pause.min(left));
                    pause = (pause * 2).min(Duration::from_millis(1));
                }
                other => return other,
            }
        }
    }

    /// Ends the input: once the network has drained, the run ends.
    pub fn close_input(&mut self) {
        self.input = None;
    }

    /// The next output record, waiting for it; `None` once the run has
    /// ended and every output has been received (the input must be closed
    /// for that, or the run must fail).
    pub fn recv(&self) -> Option<Record> {
        self.output.recv().ok()
    }

    /// The next output record, waiting at most `timeout`: `None` if none
    /// came in that time, `Some(None)` once the run has ended and every
    /// output has been received (as [`Running::recv`] returns `None`).
    /// For callers that must do something else while they wait (an
    /// interpreter checking for Ctrl-C, say).
    pub fn recv_timeout(&self, timeout: std::time::Duration) -> Option<Option<Record>> {
        match self.output.recv_timeout(timeout) {
            Ok(r) => Some(Some(r)),
            Err(mpsc::RecvTimeoutError::Timeout) => None,
            Err(mpsc::RecvTimeoutError::Disconnected) => Some(None),
        }
    }

    /// The next output record if one is waiting.
    pub fn try_recv(&self) -> Option<Record> {
        self.output.try_recv().ok()
    }

    /// Closes the input, waits for the run to end and returns the outputs
    /// not received yet, or the run's error.
    pub fn finish(mut self) -> Result<Vec<Record>, RunError> {
        self.close_input();
        let outputs: Vec<Record> = self.output.iter().collect();
        self.join().map(|()| outputs)
    }

    fn join(&mut self) -> Result<(), RunError> {
        match self.thread.take().map(JoinHandle::join) {
            None | Some(Ok(Ok(()))) => Ok(()),
            Some(Ok(Err(e))) => Err(e),
            Some(Err(_)) => Err(RunError(Kind::Engine(EngineError::Internal(
                snet_engine::InternalError::WorkerPanicked,
            )))),
        }
    }
}

/// The outputs, in the order [`Running::recv`] gives them: the iteration
/// ends when the run has ended and every output was received, so close the
/// input first ([`Running::close_input`]) or iterate on another thread
/// than the one that sends; the run's error, if any, is then
/// [`Running::finish`]'s.
///
/// ```
/// # use snet::{Network, Record};
/// # let mut net = Network::from_source("p.snet", "box f((<n>) -> (<n>)); net p connect f;")?;
/// # net.add_box("f", |i, out| { out.emit(1, Record::new().with_tag("n", i.tag("n")? * 2))?; Ok(()) });
/// let mut running = net.start();
/// for n in 0..3 {
///     running.send(Record::new().with_tag("n", n))?;
/// }
/// running.close_input();
/// let doubled: Vec<i64> = running.by_ref().filter_map(|r| r.tag("n")).collect();
/// assert_eq!(doubled, [0, 2, 4]);
/// running.finish()?; // Ok: no error, no outputs left
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
impl Iterator for Running {
    type Item = Record;

    fn next(&mut self) -> Option<Record> {
        self.recv()
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.close_input();
        let _ = self.join();
    }
}

impl Network {
    pub(crate) fn config(&self) -> Config {
        let mut codecs = snet_core::Codecs::default();
        codecs.add(c4snet::codec());
        for c in &self.codecs {
            codecs.add(Arc::new(crate::custom::CodecAdapter(c.clone())));
        }
        let instrument = (self.trace.is_some() || self.profile.is_some()).then(|| {
            snet_engine::instrument::Instrument::new(self.trace.is_some(), self.trace_sample)
        });
        Config {
            workers: self.workers,
            box_concurrency: self.box_concurrency,
            codecs,
            instrument,
            ..Config::default()
        }
    }

    /// The trace and profile files asked for.
    pub(crate) fn report_files(&self) -> snet_engine::instrument_files::Files<'_> {
        snet_engine::instrument_files::Files {
            trace: self.trace.as_deref(),
            profile: self.profile.as_deref(),
            table: false,
        }
    }

    /// Runs the network on `input` to completion and returns its outputs
    /// (in the order the network produced them: input order where the
    /// network is deterministic), or the first runtime error. The input
    /// is sent as the network takes it; use [`Network::start`] to receive
    /// outputs while the network runs.
    pub fn run<I>(&self, input: I) -> Result<Vec<Record>, RunError>
    where
        I: IntoIterator<Item = Record>,
    {
        let running = self.start();
        for r in input {
            if running.send(r).is_err() {
                break; // the run failed: `finish` says why
            }
        }
        running.finish()
    }

    /// Starts the network on a thread of its own and returns the handles
    /// to feed it and read its outputs.
    ///
    /// With [`Transport::Shm`] and more than one node, a node process
    /// (see [`node_process`](crate::node_process)) never returns from here
    /// (nor from [`Network::run`]): it runs its part and ends the process.
    pub fn start(&self) -> Running {
        let shm = self.nodes > 1 && self.transport == Transport::Shm;
        // A node process joins only a run its node 0 started: node 0 does
        // not start one with an unknown box (below).
        if shm && self.unknown_boxes().is_none() {
            if let Some(started) = snet_shm::launch::started_as_node() {
                crate::shm::run_node(self, started);
            }
        }
        crate::boxes::quiet_panics();
        let unknown = self.unknown_boxes();
        let fingerprint = crate::shm::fingerprint(self);
        let (in_tx, in_rx) = mpsc::sync_channel(INPUT_BOUND);
        let (out_tx, out_rx) = mpsc::channel();
        let graph = self.graph.clone();
        let config = self.config();
        let boxes = Arc::new(self.boxes.clone());
        let nodes = self.nodes;
        let node_command = self.node_command.clone();
        let (trace, profile) = (self.trace.clone(), self.profile.clone());
        let io: (Box<dyn Source>, Box<dyn Sink>) = (
            Box::new(ChannelSource(in_rx)),
            Box::new(ChannelSink(out_tx)),
        );
        let thread = std::thread::Builder::new()
            .name("snet-run".into())
            .spawn(move || {
                let engine = |e| RunError(Kind::Engine(e));
                if let Some(m) = unknown {
                    return Err(RunError(Kind::UnknownBox(m)));
                }
                let files = snet_engine::instrument_files::Files {
                    trace: trace.as_deref(),
                    profile: profile.as_deref(),
                    table: false,
                };
                if shm {
                    return crate::shm::run_root(
                        graph,
                        &config,
                        io,
                        &boxes,
                        nodes,
                        crate::shm::Launch {
                            fingerprint: &fingerprint,
                            command: node_command.as_ref(),
                        },
                        &files,
                    );
                }
                let result = if nodes > 1 {
                    snet_engine::run_loopback(graph, &config, Some(io), &*boxes, nodes)
                        .map(|_| ())
                        .map_err(engine)
                } else {
                    snet_engine::run(graph, &config, Some(io), &*boxes, &SingleNode)
                        .map(|_| ())
                        .map_err(engine)
                };
                let written = match &config.instrument {
                    Some(ins) => snet_engine::instrument_files::finish_local(&files, ins),
                    None => Ok(()),
                };
                match (result, written) {
                    (Ok(()), Err(e)) => Err(RunError(Kind::Report(e.to_string()))),
                    (result, _) => result,
                }
            })
            .expect("spawn the run's thread");
        Running {
            input: Some(in_tx),
            output: out_rx,
            thread: Some(thread),
        }
    }
}
