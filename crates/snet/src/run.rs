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
use std::sync::mpsc::{self, Receiver, SyncSender, TryRecvError};
use std::sync::Arc;
use std::thread::JoinHandle;

use snet_engine::{Config, EngineError, SingleNode, Sink, Source, SourceError};

use crate::network::{Network, Transport};
use crate::record::Record;

/// Records the input channel holds before [`Running::send`] waits.
const INPUT_BOUND: usize = 1024;

/// Why a run failed: the engine's error (a box's error names the box and
/// its place in the program), or the run was gone when records were sent.
///
/// ```
/// use snet::{Network, Record};
///
/// let mut net = Network::from_source("p.snet", "box f((<n>) -> (<n>)); net p connect f;")?;
/// net.add_box("f", |input, _out| {
///     if input.tag("n")? == 2 {
///         panic!("two is not allowed");
///     }
///     Ok(())
/// });
/// let err = net.run((0..4).map(|n| Record::new().with_tag("n", n))).unwrap_err();
/// assert_eq!(err.box_name(), Some("f"));
/// assert!(err.to_string().contains("box `f`: panicked: two is not allowed"), "{err}");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
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
}

impl RunError {
    pub(crate) fn new(kind: Kind) -> RunError {
        RunError(kind)
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
        Config {
            workers: self.workers,
            box_concurrency: self.box_concurrency,
            codecs,
            ..Config::default()
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
        if shm {
            if let Some(started) = snet_shm::launch::started_as_node() {
                crate::shm::run_node(self, started);
            }
        }
        let fingerprint = crate::shm::fingerprint(self);
        let (in_tx, in_rx) = mpsc::sync_channel(INPUT_BOUND);
        let (out_tx, out_rx) = mpsc::channel();
        let graph = self.graph.clone();
        let config = self.config();
        let boxes = Arc::new(self.boxes.clone());
        let nodes = self.nodes;
        let node_command = self.node_command.clone();
        let io: (Box<dyn Source>, Box<dyn Sink>) = (
            Box::new(ChannelSource(in_rx)),
            Box::new(ChannelSink(out_tx)),
        );
        let thread = std::thread::Builder::new()
            .name("snet-run".into())
            .spawn(move || {
                let engine = |e| RunError(Kind::Engine(e));
                if shm {
                    crate::shm::run_root(
                        graph,
                        &config,
                        io,
                        &boxes,
                        nodes,
                        &fingerprint,
                        node_command.as_ref(),
                    )
                } else if nodes > 1 {
                    snet_engine::run_loopback(graph, &config, Some(io), &*boxes, nodes)
                        .map(|_| ())
                        .map_err(engine)
                } else {
                    snet_engine::run(graph, &config, Some(io), &*boxes, &SingleNode)
                        .map(|_| ())
                        .map_err(engine)
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
