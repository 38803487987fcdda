//! The end of a run: its `--stats` lines, its error and exit status
//! ([`local`] for a run whose nodes all ran in this process, [`node`] for
//! one node process's part of a run), and
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
use crate::nodes::{Part, ProcessUsage, Run};
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

/// The end of node `part.me`'s part of a run: its `--stats` lines and
/// errors; its exit status.
pub(crate) fn node(run: &Run<'_>, part: &Part) -> u8 {
    let me = part.me;
    let s = match &part.result {
        Ok(s) => s,
        Err(e) if me == Rank::ROOT => return error_status(e),
        // Only errors of its own transport: node 0 reports the others,
        // which reached it.
        Err(e @ EngineError::Distribution(_)) => {
            say!("error: node {me}: {e}");
            return 1;
        }
        Err(_) => return 1,
    };
    let unclean: Vec<_> = part.ended.iter().filter(|e| !e.clean()).collect();
    for e in &unclean {
        say!(
            "error: node {} {} (after node 0's run)",
            e.node,
            e.describe()
        );
    }
    if !unclean.is_empty() {
        return 1;
    }
    if s.nodes_replaced > 0 {
        // Said even without --stats: the run went on after a loss.
        say!(
            "snet: node 0 replaced {} lost node process(es) during the run (--on-node-loss respawn)",
            s.nodes_replaced
        );
    }
    if s.log_live > 0 {
        // Custody ends with every record reported done (the end of the
        // input drains what synchrocells store): anything left is a
        // record whose output did not come back.
        say!(
            "warning: node 0's custody log still held {} record(s) at the end of the run: outputs made from them may be missing (--on-node-loss respawn)",
            s.log_live
        );
    }
    if run.opts.stats {
        say!("snet: {s}");
        if let Some(c) = &part.counters {
            say!("snet: shm node {me}: {c}");
        }
        if let Some(u) = ProcessUsage::now() {
            say!("snet: process of node {me}: {u}");
        }
        if me == Rank::ROOT {
            if !part.ended.is_empty() {
                let cpu: Vec<String> = part
                    .ended
                    .iter()
                    .map(|e| format!("node {} {:.3} s", e.node, e.cpu.as_secs_f64()))
                    .collect();
                say!("snet: cpu time: {}", cpu.join(", "));
            }
            say!(
                "snet: {} nodes ({}), {} workers each, {:.3} s",
                part.nodes,
                part.name,
                run.config.workers,
                run.start.elapsed().as_secs_f64()
            );
        }
    }
    0
}

/// The end of a run whose nodes all ran in this process: its trace and
/// profile files, its error or its `--stats` lines; its exit status.
pub(crate) fn local(
    opts: &RunOptions,
    config: &snet_engine::Config,
    result: Result<Vec<snet_engine::Stats>, EngineError>,
    start: std::time::Instant,
) -> u8 {
    if let Some(ins) = &config.instrument {
        if let Err(e) = finish_local(opts, ins) {
            say!("error: {e}");
            if result.is_ok() {
                return 2;
            }
        }
    }
    let stats = match result {
        Ok(stats) => stats,
        Err(e) => return error_status(&e),
    };
    let stats = &stats[..];
    if opts.stats {
        let elapsed = start.elapsed().as_secs_f64();
        if let [s] = stats {
            say!(
                "snet: {} input, {} output records, {} entities, {} steals, {} suspensions, {} workers, {:.3} s, records sent per worker {}",
                s.input_records,
                s.output_records,
                s.entities_created,
                s.steals,
                s.suspensions,
                config.workers,
                elapsed,
                s.sent_per_worker
                    .iter()
                    .map(u64::to_string)
                    .collect::<Vec<_>>()
                    .join("/")
            );
        } else {
            for s in stats {
                say!("snet: {s}");
            }
            say!(
                "snet: {} nodes, {} workers each, {:.3} s",
                stats.len(),
                config.workers,
                elapsed
            );
        }
    }
    0
}
