//! The MPI transport: Distributed S-Net across processes and machines.
//!
//! A run started by `mpirun -np N` is N nodes, node = rank in
//! `MPI_COMM_WORLD`. Each process makes one [`MpiTransport`]; the
//! distribution layer's output manager (or a worker, one sender at a time)
//! calls [`Transport::send`], its input
//! manager [`Transport::recv`], and neither ever calls MPI.
//!
//! - `transport.rs`: [`MpiTransport`], the managers' side (queues, window
//!   credit, start and finish);
//! - `comm.rs`: the communication thread, the only caller of MPI;
//! - `ffi.rs`: the C shim's functions (`csrc/shim.c`);
//! - `error.rs`: [`MpiError`] and [`MpiCallError`].
//!
//! # Threads
//! One *communication thread* per process owns MPI: it calls
//! `MPI_Init_thread` (level `MPI_THREAD_FUNNELED`: only this thread ever
//! calls MPI), every send, probe and receive, and `MPI_Finalize`. The
//! managers talk to it through two queues: `send` appends to the outbound
//! queue and wakes the thread; the thread appends what it receives to the
//! inbound queue, which `recv` drains. The thread never blocks in MPI: it
//! posts nonblocking sends, tests them, and polls with a matched probe
//! (`MPI_Improbe`); when nothing moves it backs off from yielding to short
//! sleeps (at most [`MAX_NAP`], `SNET_MPI_NAP_US` to change), and a local
//! send wakes it at once.
//!
//! # Messages and tags
//! A transport message is one MPI message with tag = its [`Channel`]
//! (0 control, 1 records, 2 field bytes) holding an 8-byte payload length
//! and the header, followed, if the payload is not empty, by the payload as
//! messages of at most [`CHUNK`] bytes with tag [`TAG_PAYLOAD`]. Payloads
//! are sent straight from the shared [`Payload`] (a field's own memory, kept
//! alive until `MPI_Test` says the send is done) and received straight into
//! the [`FieldBytes`] the field then keeps (`MPI_Imrecv` on the matched
//! message): no pack or unpack copy (thesis ch. 7.3's complaint about the
//! old MPI layer). Because one thread sends in order and MPI does not let
//! messages between two ranks overtake each other, a payload chunk always
//! belongs to the last header from the same rank.
//!
//! # Flow control
//! A window of [`WINDOW`] messages per pair of nodes: a sender blocks in
//! `send` when that many of its messages are not yet taken by the
//! receiver's input manager. The receiver's communication thread returns
//! credit with a small message, tag [`TAG_ACK`], every quarter window.
//! Acknowledgements are never held back, and `recv` never waits for sends,
//! so full windows cannot deadlock the managers.
//!
//! # Faults
//! Errors are returned (`MPI_ERRORS_RETURN`), not fatal: a failed call
//! involving a peer is [`TransportError::PeerGone`] for it, others are
//! [`TransportError::Failed`]; both reach `send` and `recv`. A rank killed
//! outright is seen by `mpirun`, which ends the job and names the rank.
//! `close` drains the outbound queue for at most [`DRAIN`];
//! [`MpiTransport::finish`] (or dropping the transport) finalizes, which
//! waits for every rank, so a node reports its errors before the ranks
//! finalize together and `mpirun` cannot cut the report short.
//!
//! [`Transport::send`]: snet_transport::Transport::send
//! [`Transport::recv`]: snet_transport::Transport::recv
//! [`Channel`]: snet_transport::Channel
//! [`Payload`]: snet_transport::Payload
//! [`FieldBytes`]: snet_transport::FieldBytes
//! [`TransportError::PeerGone`]: snet_transport::TransportError::PeerGone
//! [`TransportError::Failed`]: snet_transport::TransportError::Failed

#![warn(missing_docs)]

mod comm;
mod error;
mod ffi;
mod transport;

use std::ffi::c_int;
use std::time::Duration;

pub use error::{MpiCallError, MpiError};
pub use transport::MpiTransport;

/// The linker flags of the MPI library this crate was built against (for
/// `snet build`, which links executables with the same library).
pub const LINK_ARGS: &str = env!("SNET_MPI_LINK_ARGS");

/// Messages one node may have sent to another and not yet had taken there.
pub const WINDOW: usize = 256;
/// Largest MPI message a payload is cut into (MPI counts are `int`).
/// `SNET_MPI_CHUNK` (bytes) makes it smaller, so that tests can cut
/// payloads of a few MiB into many chunks.
pub const CHUNK: usize = 1 << 30;
/// Tag of payload chunks.
pub const TAG_PAYLOAD: c_int = 3;
/// Tag of flow-control credit (a u64 count of messages taken).
pub const TAG_ACK: c_int = 4;
/// Longest sleep of an idle communication thread.
pub const MAX_NAP: Duration = Duration::from_micros(500);
/// Longest `close` waits for the outbound queue to drain.
pub const DRAIN: Duration = Duration::from_secs(10);
/// Longest `close` waits for `MPI_Finalize` (which waits for every rank)
/// after the drain, before it gives up and ends the process.
pub const FINALIZE: Duration = Duration::from_secs(20);

/// Whether an MPI launcher (`mpirun`, `mpiexec`, `srun`) started this
/// process: Open MPI, PMIx and PMI (MPICH, Slurm) set these variables.
pub fn launched() -> bool {
    ["OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_SIZE", "PMI_RANK"]
        .iter()
        .any(|v| std::env::var_os(v).is_some())
}
