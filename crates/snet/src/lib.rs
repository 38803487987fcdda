//! S-Net as a Rust library.
//!
//! S-Net is a coordination language: a program declares *boxes* (stateless functions from one
//! record to any number of records) and wires them into a streaming
//! network with serial and parallel composition, serial and parallel
//! replication, feedback and synchrocells; the runtime runs the network on
//! a pool of workers and, with placements, across nodes. This crate loads
//! such a program, lets you write its boxes as Rust functions or closures,
//! and runs it — to completion on an iterator of records, or as a service
//! you feed and read through handles.
//!
//! ```
//! use snet::{Field, Network, Record};
//!
//! // Two boxes in a pipeline; `<id>` flows around both (flow inheritance).
//! let program = "
//!     box parse((text) -> (value) | (<bad>));
//!     box half((value) -> (value));
//!     net main connect parse .. (half | []);
//! ";
//! let mut net = Network::from_source("main.snet", program)?;
//! net.add_box("parse", |input, out| {
//!     let text = input.field("text")?.to_text().unwrap_or_default();
//!     match text.trim().parse::<f64>() {
//!         Ok(v) => out.emit(1, Record::new().with_field("value", Field::scalar(v)))?,
//!         Err(_) => out.emit(2, Record::new().with_tag("bad", 1))?,
//!     }
//!     Ok(())
//! })
//! .add_box("half", |input, out| {
//!     let v = input.field("value")?.as_slice::<f64>().ok_or("value is not a double")?[0];
//!     out.emit(1, Record::new().with_field("value", Field::scalar(v / 2.0)))?;
//!     Ok(())
//! })
//! .workers(2);
//!
//! let input = ["3", "x", "5"]
//!     .iter()
//!     .enumerate()
//!     .map(|(i, t)| Record::new().with_field("text", Field::text(t)).with_tag("id", i as i64));
//! let mut out = net.run(input)?;
//! out.sort_by_key(|r| r.tag("id"));
//! assert_eq!(out[0].field("value").unwrap().as_slice::<f64>(), Some(&[1.5][..]));
//! assert_eq!(out[1].tag("bad"), Some(1));
//! assert_eq!(out[2].field("value").unwrap().as_slice::<f64>(), Some(&[2.5][..]));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # What is public, and why
//!
//! * [`Network`]: the program, its boxes and where it runs (workers,
//!   nodes, box concurrency); [`Network::run`] and [`Network::start`].
//! * [`Transport`] and [`node_process`]: whether the nodes are in this
//!   process or processes of their own (shared memory), and which one
//!   this is.
//! * [`Running`]: the handles of a started network.
//! * [`Record`] and [`Field`]: the values that flow; a field is a typed
//!   array of an [`Element`] type (C4SNet data, so Rust boxes, C boxes and
//!   the XML record format share fields).
//! * [`BoxInput`], [`Emitter`], [`BoxResult`]: a box function's view of
//!   its call.
//! * [`XmlReader`], [`XmlWriter`], [`XmlError`]: records in the XML
//!   record format that `snet run` reads and writes.
//! * Errors as values: [`LoadError`] (with [`Diagnostic`]s, rendered as
//!   `snet check` renders them), [`RunError`] (with its [`RunErrorKind`]),
//!   [`SendError`], [`EmitError`],
//!   [`MissingLabel`].
//!
//! Nothing of the engine, the front end or the transports is re-exported:
//! those crates change as the runtime does, and this API is meant to stay.
//!
//! # How Rust boxes run
//!
//! A registered function is a box implementation to the engine, exactly
//! as a C box's function is: each call runs on a call stack of its own,
//! the engine adds the labels that flow around the box to its outputs,
//! keeps records in order where the network is deterministic, and places
//! boxes on nodes as the program's placements say: nodes in this process,
//! or ([`Transport::Shm`]) node processes that are copies of this program
//! (see [`node_process`] for what that asks of it). A box that returns an
//! error or panics ends the run with an error naming the box (its panic
//! message and place are in the error; the panic hook prints nothing for
//! a box's panic: the first run installs a hook that passes every other
//! panic to the hook that was there before).
//!
//! # Fields across nodes
//!
//! With [`Network::nodes`] above 1, nodes are engines in this process
//! connected by the loopback transport, or ([`Transport::Shm`]) processes
//! sharing memory. Fields cross between them encoded as C4SNet data
//! (element type, count and bytes), inline with the record when small, by
//! reference and fetched on demand when large (loopback), or through the
//! shared segment's field arena (shm).
//!
//! # Publishing
//!
//! This crate depends on `snet-core`, `snet-front`, `snet-engine`,
//! `c4snet` and `snet-shm` (and they on `snet-transport` and `snet-io`), all at the
//! workspace's version: publishing `snet` means publishing those first, in
//! that dependency order (`docs/rust-library.md`).

#![warn(missing_docs)]

mod boxes;
mod custom;
mod network;
mod record;
mod run;
mod shm;
mod xml;

pub use boxes::{BoxFailure, BoxInput, BoxResult, EmitError, Emitter, MissingLabel};
pub use custom::{CustomCodec, CustomError, CustomValue};
pub use network::{BoxSignature, Diagnostic, LoadError, Network, Severity, Transport};
pub use record::{Element, Field, Record};
pub use run::{RunError, RunErrorKind, Running, SendError};
pub use xml::{XmlError, XmlReader, XmlWriter};

/// `Some(k)` when this process is node `k` (1 or more) of a shared-memory
/// run ([`Transport::Shm`]), started by the process the user started;
/// `None` in that process and in any other.
///
/// A node process is a copy of the program: the same executable with the
/// same arguments, its standard input and output closed. It runs `main`
/// from the start, and the run it was started for begins when it reaches
/// [`Network::run`] or [`Network::start`] of the same network (the same
/// program, entry, node count and box names) with [`Transport::Shm`]:
/// there it joins the run as node `k` and ends the process when the run
/// ends, never returning into the program. So
///
/// * code before the run executes in every node process too: keep side
///   effects (files written, messages printed, services contacted) out of
///   it, or do them only where `node_process()` is `None`;
/// * the boxes must be registered the same way in every process (the same
///   code reached the same way), since each node calls its own copies;
/// * a program that runs several distributed networks must reach the one
///   a node process was started for first; a node process that reaches
///   another one ends with an error naming both (and the run fails).
///
/// ```
/// if snet::node_process().is_none() {
///     println!("hello, once"); // not repeated by the node processes
/// }
/// ```
pub fn node_process() -> Option<u32> {
    match snet_shm::launch::started_as_node() {
        Some(Ok((k, _))) => Some(k),
        _ => None,
    }
}
