//! `--trace`, `--profile` and `--profile-json`: what the engine recorded
//! ([`snet_engine::instrument`]), written out by
//! [`snet_engine::instrument_files`] (which says how the nodes of a
//! multi-process run write their parts and node 0 merges them).
//! `--profile` prints each node's table on standard error (in a
//! multi-process run each node prints its own, in one write).

use std::sync::Arc;

use snet_core::Rank;
use snet_engine::instrument::Instrument;
use snet_engine::instrument_files::{self, Files};

use crate::RunOptions;

/// The instrument the options ask for, if any.
pub(crate) fn instrument(opts: &RunOptions) -> Option<Arc<Instrument>> {
    let any = opts.trace.is_some() || opts.profile || opts.profile_json.is_some();
    any.then(|| Instrument::new(opts.trace.is_some(), opts.trace_sample))
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
pub(crate) fn finish_local(opts: &RunOptions, ins: &Instrument) -> Result<(), String> {
    instrument_files::finish_local(&files(opts), ins)
}

/// After node `me`'s run in a multi-process run of `nodes` nodes. Node
/// K ≥ 1 writes its parts; node 0 gathers them.
pub(crate) fn finish_node(
    opts: &RunOptions,
    ins: &Instrument,
    me: Rank,
    nodes: u32,
) -> Result<(), String> {
    instrument_files::finish_node(&files(opts), ins, me, nodes)
}
