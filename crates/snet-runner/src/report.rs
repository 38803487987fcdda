//! The end of a run: its error and exit status ([`error_status`]), and
//! `--trace`, `--profile` and `--profile-json`: what the engine recorded
//! ([`snet_engine::instrument`]), written out by
//! [`snet_engine::instrument_files`] (which says how the nodes of a
//! multi-process run write their parts and node 0 merges them).
//! `--profile` prints each node's table on standard error (in a
//! multi-process run each node prints its own, in one write).

use snet_core::Rank;
use snet_engine::instrument::Instrument;
use snet_engine::instrument_files::{self, Files};
use snet_engine::EngineError;

use crate::io::OpenError;
use crate::RunOptions;

/// Prints a run's error (node 0's); returns the exit status: 2 for input
/// or output that cannot be opened or written, 1 for any other.
pub(crate) fn error_status(e: &EngineError) -> u8 {
    if let EngineError::Input(s) = e {
        if let Some(o) = s.downcast_ref::<OpenError>() {
            say!("error: {o}");
            return 2;
        }
    }
    say!("error: {e}");
    match e {
        EngineError::Output(_) => 2,
        _ => 1,
    }
}

fn files(opts: &RunOptions) -> Files<'_> {
    Files {
        trace: opts.trace.as_deref(),
        profile: opts.profile_json.as_deref(),
        table: opts.profile,
    }
}

/// After a run whose nodes all ran in this process: writes the files and
/// prints the tables. Returns an error message for a file that could not
/// be written.
pub(crate) fn finish_local(
    opts: &RunOptions,
    ins: &Instrument,
) -> Result<(), instrument_files::FilesError> {
    instrument_files::finish_local(&files(opts), ins)
}

/// After node `me`'s run in a multi-process run of `nodes` nodes. Node
/// K ≥ 1 writes its parts; node 0 gathers them.
pub(crate) fn finish_node(
    opts: &RunOptions,
    ins: &Instrument,
    me: Rank,
    nodes: u32,
) -> Result<(), instrument_files::FilesError> {
    instrument_files::finish_node(&files(opts), ins, me, nodes)
}
