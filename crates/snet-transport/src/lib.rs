//! The transport contract: how the nodes of a distributed run talk.
//!
//! A transport moves opaque messages between the nodes of one run. The
//! distribution layer of `snet-engine` (one input manager and one output
//! manager per node) is its only user: the output manager is the only
//! caller of [`Transport::send`], the input manager the only caller of
//! [`Transport::recv`]. Backends: [`loopback`] (every node in one process,
//! for tests and debugging, here), `snet_mpi::MpiTransport` (processes and
//! machines under `mpirun`) and `snet_shm::ShmTransport` (processes of one
//! machine over shared memory). This crate depends on `snet-core` only, so
//! a backend depends on the contract, not on the engine.
//!
//! Contract (the conformance suite, [`conformance`], checks it):
//! * Messages from one node to another on one [`Channel`] arrive in the
//!   order they were sent, each exactly once, header and payload intact
//!   (empty and very large payloads included).
//! * `send` may block while the receiver's buffers are full (flow control);
//!   it never blocks because *this* node's input is unread, so a node whose
//!   input manager keeps draining can never be deadlocked by its peers.
//! * A peer that dies (crashes, is killed, drops its endpoint without
//!   `close`) makes `send` to it and, soon, `recv` anywhere return
//!   [`TransportError::PeerGone`] naming it: never a hang.
//! * `close` is the orderly end: after every node closed, nothing is lost.
//! * `send` to this node or to a node the run does not have fails with
//!   [`TransportError::NoRoute`]: [`Transport::send`] checks that, once for
//!   every backend, before it calls the backend's
//!   [`Transport::send_to_peer`].
//!
//! A message is a small *header* (the layer's encoding of records and
//! control messages) and an optional *payload* (field bytes), kept apart so
//! that a backend can move the payload straight from and into the field's
//! memory (no extra copy) while headers go through small buffers.

#![warn(missing_docs)]

pub mod conformance;
pub mod hooked;
pub mod loopback;

pub use hooked::{Hooked, Hooks};
pub use loopback::Loopback;

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use snet_core::FieldData;
pub use snet_core::{FieldBytes, Rank};

/// Kinds of messages, for backends that keep them apart (MPI tags, rings).
/// Order is guaranteed only within one channel between two nodes.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Channel {
    /// Termination credit, field requests and releases, faults, shutdown.
    Control = 0,
    /// Records, ordering markers and connection opening.
    Records = 1,
    /// Field bytes answering a request.
    Field = 2,
}

impl Channel {
    /// Every channel, in the order of their numbers.
    pub const ALL: [Channel; 3] = [Channel::Control, Channel::Records, Channel::Field];

    /// The channel numbered `v` on the wire, if there is one.
    pub fn from_raw(v: u8) -> Option<Channel> {
        Channel::ALL.get(usize::from(v)).copied()
    }
}

/// Bytes that can be sent as a payload while someone else keeps them.
pub trait PayloadBytes: Send + Sync {
    /// The bytes, alive as long as `self`.
    fn bytes(&self) -> &[u8];
}

impl PayloadBytes for Vec<u8> {
    fn bytes(&self) -> &[u8] {
        self
    }
}

impl PayloadBytes for FieldBytes {
    fn bytes(&self) -> &[u8] {
        self
    }
}

/// A field value's body ([`FieldData::body`]) as payload bytes: the
/// value itself, kept alive (not copied) until the bytes are sent.
pub struct FieldBody(pub Arc<dyn FieldData>);

impl PayloadBytes for FieldBody {
    fn bytes(&self) -> &[u8] {
        self.0.body()
    }
}

/// A message's payload: shared, not copied, with whoever made the bytes
/// (a field's value), so that a backend can send straight from them after
/// `send` returned, and drop its reference when the bytes are on their way.
#[derive(Clone, Default)]
pub struct Payload(Option<Arc<dyn PayloadBytes>>);

impl Payload {
    /// No payload.
    pub fn none() -> Payload {
        Payload(None)
    }

    /// The bytes `b` holds, shared.
    pub fn shared(b: Arc<dyn PayloadBytes>) -> Payload {
        Payload(Some(b))
    }

    /// The body of a field value, sent straight from the value's memory.
    pub fn field_body(value: Arc<dyn FieldData>) -> Payload {
        Payload::shared(Arc::new(FieldBody(value)))
    }

    /// Bytes made for this message.
    pub fn owned(v: Vec<u8>) -> Payload {
        if v.is_empty() {
            Payload(None)
        } else {
            Payload(Some(Arc::new(v)))
        }
    }

    /// The payload's bytes (none for an empty payload).
    pub fn bytes(&self) -> &[u8] {
        self.0.as_ref().map_or(&[], |b| b.bytes())
    }

    /// The payload's length in bytes.
    pub fn len(&self) -> usize {
        self.bytes().len()
    }

    /// Whether the payload has no bytes.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl fmt::Debug for Payload {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Payload({} bytes)", self.len())
    }
}

/// A received message's header: up to 48 bytes inline (a small message
/// costs no allocation), longer ones on the heap.
pub type Header = smallvec::SmallVec<[u8; 48]>;

/// A message as received. The payload is in an aligned buffer that a
/// language interface can adopt as a field's storage without a copy.
#[derive(Debug, PartialEq, Eq)]
pub struct Received {
    /// The sending node.
    pub from: Rank,
    /// The channel it was sent on.
    pub channel: Channel,
    /// The message's header.
    pub header: Header,
    /// The message's payload (empty if it had none).
    pub payload: FieldBytes,
}

/// What can go wrong between nodes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TransportError {
    /// Node `node` is gone (crashed, killed, or left without closing).
    PeerGone {
        /// The node that is gone.
        node: Rank,
        /// How it went.
        why: Gone,
    },
    /// This endpoint (or the whole run) was closed.
    Closed,
    /// Node `from` was asked to send to node `to`, which is itself or not
    /// a node of the run (a bug of the caller; [`Transport::send`]).
    NoRoute {
        /// The sending node.
        from: Rank,
        /// The destination asked for.
        to: Rank,
    },
    /// A backend's own failure (its error type, [`BackendError`]).
    Failed(BackendError),
}

impl TransportError {
    /// A backend failure, `e` being the backend's own error.
    pub fn backend(e: impl std::error::Error + Send + Sync + 'static) -> TransportError {
        TransportError::Failed(BackendError::new(e))
    }
}

impl fmt::Display for TransportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TransportError::PeerGone { node, why } => write!(f, "node {node} is gone: {why}"),
            TransportError::Closed => f.write_str("the transport was closed"),
            TransportError::NoRoute { from, to } => {
                write!(f, "node {from} cannot send to node {to}")
            }
            TransportError::Failed(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for TransportError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            TransportError::Failed(e) => Some(&*e.0),
            TransportError::PeerGone {
                why: Gone::Backend(e),
                ..
            } => Some(&*e.0),
            _ => None,
        }
    }
}

/// Why a peer is gone ([`TransportError::PeerGone`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Gone {
    /// Its endpoint was dropped without `close` (loopback: a node thread
    /// that panicked or was killed).
    EndpointDropped,
    /// It exited (closed and went away) and no longer reads its messages.
    Exited,
    /// What the backend saw (an exit status, a signal, a library error).
    Backend(BackendError),
}

impl fmt::Display for Gone {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Gone::EndpointDropped => f.write_str("its endpoint was dropped"),
            Gone::Exited => f.write_str("exited; it no longer reads"),
            Gone::Backend(e) => write!(f, "{e}"),
        }
    }
}

/// A backend's own error, kept typed (the backend's error enum, which
/// [`BackendError::downcast_ref`] gives back) and rendered only by
/// `Display`. Shared, so that a backend can report one failure to every
/// caller; two are equal when they are clones of one error.
#[derive(Clone)]
pub struct BackendError(Arc<dyn std::error::Error + Send + Sync>);

impl BackendError {
    /// A backend's error `e`, shared.
    pub fn new(e: impl std::error::Error + Send + Sync + 'static) -> BackendError {
        BackendError(Arc::new(e))
    }

    /// The backend's error, if it is a `T`.
    pub fn downcast_ref<T: std::error::Error + 'static>(&self) -> Option<&T> {
        self.0.downcast_ref()
    }
}

impl PartialEq for BackendError {
    fn eq(&self, other: &BackendError) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for BackendError {}

impl fmt::Debug for BackendError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.0, f)
    }
}

impl fmt::Display for BackendError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&*self.0, f)
    }
}

/// One node's endpoint.
pub trait Transport: Send + Sync {
    /// This node.
    fn node(&self) -> Rank;
    /// Nodes in the run.
    fn nodes(&self) -> u32;
    /// Sends a message to node `to` (not this node). May block for flow
    /// control. The backend may keep `payload` (a shared reference) until
    /// the bytes are sent; the header is copied before `send` returns.
    ///
    /// Checks the destination (another node of the run, or
    /// [`TransportError::NoRoute`]) and hands the message to
    /// [`Transport::send_to_peer`]. Backends do not override it.
    #[inline]
    fn send(
        &self,
        to: Rank,
        channel: Channel,
        header: &[u8],
        payload: Payload,
    ) -> Result<(), TransportError> {
        let me = self.node();
        if to.0 >= self.nodes() || to == me {
            return Err(TransportError::NoRoute { from: me, to });
        }
        self.send_to_peer(to, channel, header, payload)
    }
    /// The backend's [`Transport::send`], called by it only: `to` is
    /// another node of the run (`to < nodes()`, `to != node()`).
    fn send_to_peer(
        &self,
        to: Rank,
        channel: Channel,
        header: &[u8],
        payload: Payload,
    ) -> Result<(), TransportError>;
    /// The next message for this node from any node, waiting at most `timeout`.
    fn recv(&self, timeout: Duration) -> Result<Option<Received>, TransportError>;
    /// Orderly end of this node's participation.
    fn close(&self);
    /// Messages sent to `to` and not yet received there, if the backend
    /// knows (for the flow-control test); with [`Transport::window`], the bound.
    fn buffered(&self, _to: Rank) -> Option<usize> {
        None
    }
    /// The most messages one node may have buffered at another, if bounded.
    fn window(&self) -> Option<usize> {
        None
    }
    /// A short name for messages and statistics (`loopback`, `mpi`, `shm`).
    fn name(&self) -> &str;
    /// Node 0 of a run that survives a lost node: starts a replacement
    /// for node `node`, which is gone, with a fresh endpoint; everything
    /// the old incarnation sent that was not received yet, and everything
    /// sent to it, is dropped. `Ok(false)`: this backend cannot.
    fn replace(&self, _node: Rank) -> Result<bool, TransportError> {
        Ok(false)
    }
    /// The addresses of memory that every node of the run maps and that
    /// outlives any one node process, if this backend has such: a payload
    /// that lies there is passed to the receiver as a reference (the
    /// receiver's [`Received::payload`] holds a reference of its own,
    /// the sender's bytes stay valid whatever becomes of the sender), not
    /// copied. The shared-memory transport's field arena in zero-copy mode;
    /// `None` elsewhere. A hint of cost only: a payload is delivered
    /// intact wherever its bytes are.
    fn shared_region(&self) -> Option<std::ops::Range<usize>> {
        None
    }
}
