//! Workers, local queues, stealing, input admission, sleeping and termination.
//!
//! One node's scheduler, one file per job:
//! - [`node`]: a node's run ([`run`]): resolving the boxes, starting the
//!   workers, the reader thread and the managers, ending the run, the run's
//!   errors and its [`Stats`](crate::Stats);
//! - [`work`]: tasks, the workers' local queues and the work loop (running
//!   a task, stealing);
//! - [`admission`]: input admission and the reader thread with its
//!   read-ahead buffer;
//! - [`sleep`]: the sleep/wake and quiescence protocol ([`Sleep`]), whose
//!   loom model is `loom_tests/sleep.rs`.
//!
//! The four share one node's scheduler state, `Shared` (in [`work`]): its
//! fields and the methods the others call are `pub(super)`, visible in this
//! module and nowhere else, as when the scheduler was one file. They import
//! each other because they are one protocol: a worker admits input and
//! goes to sleep from the work loop, admission and the reader wake sleepers,
//! and the node's run starts and stops all of them.
//!
//! # Protocol
//!
//! Each part is described in the file that implements it: tasks, the worker
//! loop and running a task in [`work`], admission in [`admission`],
//! sleeping in [`sleep`], errors in [`node`]. What spans them:
//!
//! *Termination.* Only workers push to queues and only the reader thread adds
//! input. When the last worker goes to sleep, no entity holds a licence and no
//! queue holds a task, so the network is quiescent: if the input is
//! exhausted, the run is over (records parked in synchrocells stay there, as
//! the language defines). If input remains that only the `--input-limit`
//! bound holds back, the last sleeper admits a record anyway (a network may
//! need more input before it can emit anything).

mod admission;
mod node;
mod sleep;
mod work;

pub use node::run;
#[cfg(all(test, loom))]
pub(crate) use sleep::{Look, Sleep, Wake};
#[cfg(all(test, loom))]
pub(crate) use work::{worker_loop, Shared};
