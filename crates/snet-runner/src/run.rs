//! The run: a program's graph with [`RunOptions`]: the engine's
//! configuration (once) and the transport's choice. Every run goes on in
//! `nodes.rs` (its nodes in this process, or processes over shared memory
//! or MPI) and ends in `report.rs`.

use std::sync::Arc;
use std::time::Instant;

use snet_engine::{Config, InputLimit, LanguageInterface, LimitError};

use crate::alloc::GLOBAL;
use crate::mpi::{mpi_launched, Mpi};
use crate::shm::Shm;
use crate::{NodeLoss, RunOptions, TransportKind};
use snet_engine::dist::OnNodeLoss;

/// Runs `graph` with `opts`; returns the exit status (0 ok, 1 run error, 2 usage/I-O).
pub fn run(
    graph: Arc<snet_core::Graph>,
    opts: &RunOptions,
    language: &(dyn LanguageInterface + Sync),
) -> u8 {
    let config = match config(opts) {
        Ok(c) => c,
        Err(e) => {
            say!("error: {e}");
            return 2;
        }
    };
    let start = Instant::now();
    let run = crate::nodes::Run {
        graph,
        opts,
        config: &config,
        language,
        start,
    };
    let on_mpi = matches!(opts.transport, Some(TransportKind::Mpi))
        || (opts.transport.is_none() && mpi_launched());
    if on_mpi && opts.on_node_loss == NodeLoss::Respawn {
        say!(
            "error: --on-node-loss respawn needs --transport shm or loopback: under MPI a lost rank ends the job in mpirun before snet could act (the MPI library here has no fault-tolerance interface, ULFM)"
        );
        return 2;
    }
    match opts.transport {
        Some(TransportKind::Shm) => run.on(Shm::new(opts)),
        Some(TransportKind::Mpi) => run.on(Mpi::new(opts)),
        None if mpi_launched() => run.on(Mpi::new(opts)),
        Some(TransportKind::Loopback) => run.here(opts.nodes.unwrap_or(1)),
        None => {
            if let Some(n) = opts.nodes.filter(|&n| n > 1) {
                say!(
                    "error: --nodes {n} needs a transport: --transport shm (processes on this machine), --transport loopback, or start the program with mpirun"
                );
                return 2;
            }
            run.here(1)
        }
    }
}

/// What is wrong with a run's options, found as the engine's
/// configuration is made (the rest is refused by the command line's
/// parser).
#[derive(Debug)]
enum OptionError {
    /// `--workers 0`.
    NoWorkers,
    /// `--nodes 0`.
    NoNodes,
    /// `--input-limit` that does not parse.
    InputLimit(LimitError),
    /// `--on-node-loss redistribute`, which is not built.
    Redistribute,
}

impl std::fmt::Display for OptionError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            OptionError::NoWorkers => f.write_str("--workers must be at least 1"),
            OptionError::NoNodes => f.write_str("--nodes must be at least 1"),
            OptionError::InputLimit(e) => write!(f, "--input-limit: {e}"),
            OptionError::Redistribute => f.write_str(
                "--on-node-loss redistribute (the lost node's work moved to the surviving nodes) is not built: use respawn (a new process for the lost node) or fail",
            ),
        }
    }
}

/// The engine's configuration for `opts`, or what is wrong with them.
fn config(opts: &RunOptions) -> Result<Config, OptionError> {
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
            return Err(OptionError::NoWorkers);
        }
        config.workers = w;
    }
    if let Some(b) = opts.box_stack {
        config.box_stack = b;
    }
    if let Some(l) = &opts.input_limit {
        config.input_limit = Some(InputLimit::parse(l).map_err(OptionError::InputLimit)?);
    }
    config.inline_fields = opts.inline_fields;
    config.on_node_loss = match opts.on_node_loss {
        NodeLoss::Fail => OnNodeLoss::Fail,
        NodeLoss::Respawn => OnNodeLoss::Respawn,
        NodeLoss::Redistribute => return Err(OptionError::Redistribute),
    };
    config.instrument = instrument(opts);
    if opts.nodes == Some(0) {
        return Err(OptionError::NoNodes);
    }
    Ok(config)
}

/// The recorder `--trace`, `--profile` and `--profile-json` ask for,
/// if any (`report.rs` writes what it recorded).
fn instrument(opts: &RunOptions) -> Option<Arc<snet_engine::instrument::Instrument>> {
    let any = opts.trace.is_some() || opts.profile || opts.profile_json.is_some();
    any.then(|| snet_engine::instrument::Instrument::new(opts.trace.is_some(), opts.trace_sample))
}
