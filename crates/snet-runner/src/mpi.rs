//! MPI set-up: whether this process was started by `mpirun`, one node of
//! an MPI run (node = rank), and the MPI library's linker flags.

#[cfg(feature = "mpi")]
use crate::io::node_streams;
#[cfg(feature = "mpi")]
use crate::run::{other_node_status, report_error, scatter};
use crate::RunOptions;
use snet_core::Rank;
use snet_engine::{Config, LanguageInterface};
use std::sync::Arc;

#[cfg(feature = "mpi")]
pub fn mpi_launched() -> bool {
    snet_mpi::launched()
}

#[cfg(not(feature = "mpi"))]
pub fn mpi_launched() -> bool {
    ["OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_SIZE", "PMI_RANK"]
        .iter()
        .any(|v| std::env::var_os(v).is_some())
}

#[cfg(not(feature = "mpi"))]
pub(crate) fn run_mpi(
    _: Arc<snet_core::Graph>,
    _: &Config,
    _: &RunOptions,
    _: &(dyn LanguageInterface + Sync),
) -> u8 {
    say!("error: this snet was built without MPI (cargo feature `mpi`); rebuild with it to run under mpirun");
    2
}

/// One node of an MPI run: node = rank. Node 0 reads and writes the
/// records; every node prints its own `--stats` line, and only node 0
/// prints errors (the others' failures reach it), except a transport
/// failure, which a node reports itself.
#[cfg(feature = "mpi")]
pub(crate) fn run_mpi(
    graph: Arc<snet_core::Graph>,
    config: &Config,
    opts: &RunOptions,
    language: &(dyn LanguageInterface + Sync),
) -> u8 {
    use snet_engine::dist::Transport;
    let start = std::time::Instant::now();
    let t = match snet_mpi::MpiTransport::start() {
        Ok(t) => t,
        Err(e) => {
            say!("error: cannot start MPI: {e}");
            return 2;
        }
    };
    let (me, nodes) = (t.node(), t.nodes());
    if nodes > 1 {
        c4snet::crash::set_node(me.0);
    }
    if let Some(n) = opts.nodes.filter(|&n| n != nodes) {
        if me == Rank::ROOT {
            say!("error: --nodes {n}, but mpirun started {nodes} processes (leave out --nodes under mpirun)");
        }
        t.finish();
        return 2;
    }
    let graph = scatter(graph, opts, nodes);
    let io = node_streams(me, opts);
    let faulty = crate::fault::wrap(&t);
    let tr: &dyn Transport = match &faulty {
        Some(f) => f,
        None => &t,
    };
    let result = snet_engine::run(graph, config, io, language, tr);
    let ok = result.is_ok();
    // Report first, then finalize with the other ranks: a rank that ends
    // with a nonzero status makes mpirun stop the job, and node 0's report
    // must be out by then.
    let code = match result {
        Ok(s) => {
            if opts.stats {
                say!("snet: {s}");
                if me == Rank::ROOT {
                    say!(
                        "snet: {nodes} nodes (mpi), {} workers each, {:.3} s",
                        config.workers,
                        start.elapsed().as_secs_f64()
                    );
                }
            }
            0
        }
        Err(e) if me == Rank::ROOT => report_error(&e),
        Err(_) => other_node_status(me, &result),
    };
    // Parts first (node K ≥ 1), then finalize with the others; node 0
    // gathers them after (see `report`).
    if me != Rank::ROOT {
        if let Some(ins) = &config.instrument {
            if let Err(e) = crate::report::finish_node(opts, ins, me, nodes) {
                say!("error: node {me}: {e}");
            }
        }
    }
    t.finish();
    if me == Rank::ROOT {
        if let Some(ins) = &config.instrument {
            let nodes = if ok { nodes } else { 1 };
            if let Err(e) = crate::report::finish_node(opts, ins, Rank::ROOT, nodes) {
                say!("error: {e}");
                if code == 0 {
                    return 2;
                }
            }
        }
    }
    code
}
/// Linker flags for the MPI library this runner was built with (`snet
/// build` adds them; empty without the `mpi` feature).
#[cfg(feature = "mpi")]
pub const MPI_LINK_ARGS: &str = snet_mpi::LINK_ARGS;
#[cfg(not(feature = "mpi"))]
pub const MPI_LINK_ARGS: &str = "";
