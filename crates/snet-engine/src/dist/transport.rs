//! The transport trait: how nodes of a distributed run talk.
//!
//! A transport moves opaque messages between the nodes of one run. The
//! distribution layer (one input manager and one output manager per node,
//! [`super`]) is its only user: the output manager is the only caller of
//! [`Transport::send`], the input manager the only caller of
//! [`Transport::recv`]. Backends: [`super::loopback`] (every node in one
//! process, for tests and debugging), MPI and shared memory (later crates).
//!
//! Contract (the conformance suite, [`super::conformance`], checks it):
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
//!
//! A message is a small *header* (the layer's encoding of records and
//! control messages) and an optional *payload* (field bytes), kept apart so
//! that a backend can move the payload straight from and into the field's
//! memory (no extra copy) while headers go through small buffers.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

pub use snet_core::FieldBytes;
use snet_core::FieldData;

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
    pub const ALL: [Channel; 3] = [Channel::Control, Channel::Records, Channel::Field];

    pub fn from_raw(v: u8) -> Option<Channel> {
        Channel::ALL.get(usize::from(v)).copied()
    }
}

/// Bytes that can be sent as a payload while someone else keeps them.
pub trait PayloadBytes: Send + Sync {
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

    pub fn bytes(&self) -> &[u8] {
        self.0.as_ref().map_or(&[], |b| b.bytes())
    }

    pub fn len(&self) -> usize {
        self.bytes().len()
    }

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
    pub from: u32,
    pub channel: Channel,
    pub header: Header,
    pub payload: FieldBytes,
}

/// What can go wrong between nodes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TransportError {
    /// Node `node` is gone (crashed, killed, or left without closing).
    PeerGone { node: u32, why: String },
    /// This endpoint (or the whole run) was closed.
    Closed,
    /// A backend failure.
    Failed(String),
}

impl fmt::Display for TransportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TransportError::PeerGone { node, why } => write!(f, "node {node} is gone: {why}"),
            TransportError::Closed => f.write_str("the transport was closed"),
            TransportError::Failed(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for TransportError {}

/// One node's endpoint.
pub trait Transport: Send + Sync {
    /// This node.
    fn node(&self) -> u32;
    /// Nodes in the run.
    fn nodes(&self) -> u32;
    /// Sends a message to node `to` (not this node). May block for flow
    /// control. The backend may keep `payload` (a shared reference) until
    /// the bytes are sent; the header is copied before `send` returns.
    fn send(
        &self,
        to: u32,
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
    fn buffered(&self, _to: u32) -> Option<usize> {
        None
    }
    /// The most messages one node may have buffered at another, if bounded.
    fn window(&self) -> Option<usize> {
        None
    }
    /// A short name for messages and statistics (`loopback`, `mpi`, `shm`).
    fn name(&self) -> &str;
}
