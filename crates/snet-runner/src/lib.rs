//! The runtime of executables produced by `snet build`.
//!
//! `snet build` generates a C `main` that calls [`snet_runner_main`] with the
//! program text (embedded at build time), the entry network's name and the
//! table of box trampolines; this crate's static library
//! (`libsnet_runner.a`) holds everything else: the front end (the program is
//! compiled again at start — milliseconds, and the executable can never run
//! a graph that disagrees with its trampolines), the engine, the record
//! reader and writer, and the C4SNet ABI. The executable takes the same
//! options and gives the same errors and exit statuses as `snet run`.
//!
//! One file per job:
//!
//! * `alloc.rs`: the global allocator (mimalloc, or the system allocator
//!   under `SNET_SYSTEM_ALLOC`) and [`tune_allocator`];
//! * `options.rs`: [`RunOptions`], the options of `snet run` and of a
//!   built program, and what they ask for (the recorder, the placement);
//! * `io.rs`: node 0's record streams (the source and sink adapters over
//!   the record reader and writer);
//! * `run.rs`: [`run`], the one entry of a run: the engine's configuration,
//!   the transport's choice, and the runs whose nodes all live in this
//!   process (one node, loopback), with their `--stats` and exit statuses;
//! * `nodes.rs`: a run whose nodes are processes, written once over the
//!   engine's `Transport`;
//! * `shm.rs` and `mpi.rs`: how a process joins a shared-memory and an MPI
//!   run and how the run ends for it ([`mpi_launched`], [`MPI_LINK_ARGS`]);
//! * `report.rs`: the end of a run: its error and exit status, and the
//!   files and tables of `--trace` and `--profile`;
//! * `fault.rs`: test-only fault injection (`SNET_TEST_FAULT`);
//! * `watch.rs`: `SIGUSR1`, `--watchdog` and `--progress`;
//! * `selftest.rs`: `snet selftest` ([`selftest`]);
//! * `entry.rs`: [`snet_runner_main`], the C entry point.
//!
//! The benchmark commands (`snet pingpong`, `snet iobench`) live in the
//! `snet` command (`crates/snet-cli/src/bench/`), not here: this library is
//! linked into every built program.

#![warn(missing_docs)]

use std::io::Write as _;

/// Prints one line on stderr with a single `write`: under `mpirun` every
/// rank's stderr is forwarded into one stream, and `eprintln!` (several
/// writes per line) let the ranks' report lines interleave mid-line.
macro_rules! say {
    ($($arg:tt)*) => {
        $crate::say_raw(&format!("{}\n", format_args!($($arg)*)))
    };
}

/// Writes `text` to stderr in one `write_all` on the locked handle.
pub fn say_raw(text: &str) {
    let _ = std::io::stderr().lock().write_all(text.as_bytes());
}

mod alloc;
mod entry;
mod fault;
mod io;
mod mpi;
mod nodes;
mod options;
mod report;
mod run;
mod selftest;
mod shm;
mod watch;

pub use alloc::{tune_allocator, SnetAlloc};
pub use entry::snet_runner_main;
pub use mpi::{mpi_launched, MPI_LINK_ARGS};

/// This compilation's identity (see `build.rs`), as the text
/// `snet-runner-build:ID`: the static library keeps it ([`BUILD_MARK`]),
/// and `snet build` looks for it in a candidate library to find the one
/// built with itself.
pub const BUILD_ID: &str = concat!("snet-runner-build:", env!("SNET_RUNNER_BUILD_ID"), "\n");

/// [`BUILD_ID`] as data the static library keeps, whether or not it is used.
#[used]
pub static BUILD_MARK: [u8; BUILD_ID.len()] = {
    let mut out = [0u8; BUILD_ID.len()];
    let bytes = BUILD_ID.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        out[i] = bytes[i];
        i += 1;
    }
    out
};
pub use options::{fields_parser, notify_parser, NodeLoss, RunOptions, TransportKind};
pub use run::run;
pub use selftest::selftest;
/// The shared-memory modes that `--notify` and `--fields` name.
pub use snet_shm::{FieldMode, Notify};
