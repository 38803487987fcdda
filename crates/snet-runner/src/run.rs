//! The run: a program's graph with [`RunOptions`] on the chosen transport
//! (single node, loopback, shared memory, MPI), its `--stats` lines and
//! its exit status.

use std::sync::Arc;

use snet_core::Rank;
use snet_engine::{Config, EngineError, InputLimit, LanguageInterface, SingleNode};

use crate::alloc::GLOBAL;
use crate::io::{open_io, OpenError};
use crate::mpi::{mpi_launched, run_mpi};
use crate::shm::run_shm;
use crate::{RunOptions, TransportKind};

/// Runs `graph` with `opts`; returns the exit status (0 ok, 1 run error, 2 usage/I-O).
pub fn run(
    graph: Arc<snet_core::Graph>,
    opts: &RunOptions,
    language: &(dyn LanguageInterface + Sync),
) -> u8 {
    // fast_exit: the process ends right after the run; freeing the entity graph would only cost time.
    // Under the leak checker (system allocator) the graph is freed so that leaks stand out.
    let mut config = Config {
        box_concurrency: opts.box_concurrency.max(1),
        fast_exit: !GLOBAL.system(),
        ..Config::default()
    };
    // Fields are C4SNet's (the record format's default interface): its
    // codec moves them between nodes, its text codec reads and writes them.
    config.codecs.add(c4snet::codec());
    config.watch = Some(crate::watch::watch(opts));
    // Observers at `allvalues` write field values in the same text form.
    let text = c4snet::text_codecs();
    config.field_text = Some(snet_engine::FieldText(Arc::new(move |v, out| {
        text.get(v.interface())
            .is_some_and(|c| c.format(v, false, out))
    })));
    if let Some(w) = opts.workers {
        if w == 0 {
            say!("error: --workers must be at least 1");
            return 2;
        }
        config.workers = w;
    }
    if let Some(b) = opts.box_stack {
        config.box_stack = b;
    }
    if let Some(l) = &opts.input_limit {
        match InputLimit::parse(l) {
            Ok(l) => config.input_limit = Some(l),
            Err(e) => {
                say!("error: --input-limit: {e}");
                return 2;
            }
        }
    }
    config.inline_fields = opts.inline_fields;
    config.instrument = crate::report::instrument(opts);
    if opts.nodes == Some(0) {
        say!("error: --nodes must be at least 1");
        return 2;
    }
    let start = std::time::Instant::now();
    let result = match opts.transport {
        Some(TransportKind::Shm) => return run_shm(graph, &config, opts, language),
        Some(TransportKind::Mpi) => return run_mpi(graph, &config, opts, language),
        None if mpi_launched() => return run_mpi(graph, &config, opts, language),
        Some(TransportKind::Loopback) => {
            let nodes = opts.nodes.unwrap_or(1);
            let io = match open_io(opts) {
                Ok(io) => io,
                Err(code) => return code,
            };
            let graph = scatter(graph, opts, nodes);
            snet_engine::run_loopback(graph, &config, Some(io), language, nodes)
        }
        None => {
            if let Some(n) = opts.nodes.filter(|&n| n > 1) {
                say!(
                    "error: --nodes {n} needs a transport: --transport shm (processes on this machine), --transport loopback, or start the program with mpirun"
                );
                return 2;
            }
            let io = match open_io(opts) {
                Ok(io) => io,
                Err(code) => return code,
            };
            let graph = scatter(graph, opts, 1);
            snet_engine::run(graph, &config, Some(io), language, &SingleNode).map(|s| vec![s])
        }
    };
    if let Some(ins) = &config.instrument {
        if let Err(e) = crate::report::finish_local(opts, ins) {
            say!("error: {e}");
            if result.is_ok() {
                return 2;
            }
        }
    }
    match result {
        Ok(stats) => {
            if opts.stats {
                if stats.len() == 1 {
                    let s = &stats[0];
                    say!(
                        "snet: {} input, {} output records, {} entities, {} steals, {} suspensions, {} workers, {:.3} s",
                        s.input_records,
                        s.output_records,
                        s.entities_created,
                        s.steals,
                        s.suspensions,
                        config.workers,
                        start.elapsed().as_secs_f64()
                    );
                } else {
                    for s in &stats {
                        say!("snet: {s}");
                    }
                    say!(
                        "snet: {} nodes, {} workers each, {:.3} s",
                        stats.len(),
                        config.workers,
                        start.elapsed().as_secs_f64()
                    );
                }
            }
            0
        }
        Err(e) => report_error(&e),
    }
}

/// Prints a run's error; returns the exit status.
pub(crate) fn report_error(e: &EngineError) -> u8 {
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

pub(crate) fn scatter(
    graph: Arc<snet_core::Graph>,
    opts: &RunOptions,
    nodes: u32,
) -> Arc<snet_core::Graph> {
    match opts.scatter {
        Some(seed) => Arc::new(graph.scatter(nodes, seed, 0.3)),
        None => graph,
    }
}
/// The exit status of node `me` (not node 0) of a multi-process run: its
/// `--stats` line, and only errors of its own transport (node 0 reports
/// the others, which reached it).
pub(crate) fn other_node_status(me: Rank, result: &Result<snet_engine::Stats, EngineError>) -> u8 {
    match result {
        Ok(_) => 0,
        Err(e @ EngineError::Distribution(_)) => {
            say!("error: node {me}: {e}");
            1
        }
        Err(_) => 1,
    }
}
