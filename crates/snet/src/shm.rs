//! Distribution over processes sharing memory ([`Transport::Shm`]).
//!
//! Rust boxes are closures registered at run time, so a node process
//! cannot find them in a table the way a built C program's nodes find
//! their trampolines: every node process runs the user's program (SPMD,
//! as MPI programs do) and so registers the same boxes the same way. The
//! steps:
//!
//! 1. Node 0 (the process the user started) reaches [`Network::start`]:
//!    [`run_root`] creates the shared segment (a memfd: nothing appears in
//!    `/dev/shm`), starts nodes 1..N as copies of this executable with the
//!    same arguments (`snet_shm::launch`, on the run's thread, which lives
//!    as long as the run: a node process is killed when it ends), with the
//!    network's [`fingerprint`] in [`NETWORK_VAR`], and runs node 0's
//!    engine on the caller's records.
//! 2. A node process runs `main` from the start; at the first
//!    `Network::start`/`run` with `Transport::Shm` it reaches, [`run_node`]
//!    checks the fingerprint (the same program, entry, node count and box
//!    names), maps the segment, runs its engine (no records of its own:
//!    they come from node 0) and ends the process with the run, so it
//!    never returns into the program.
//! 3. Node 0 waits for the node processes when its engine is done; a node
//!    that died or ended badly makes the run fail naming the node, and a
//!    box's error on a node reaches node 0 as the engine's error naming
//!    the node and the box. Node processes name a box they crash or exit
//!    in (`c4snet::crash`, installed there only: node 0 is the user's
//!    process, whose signal handlers are its own).
//!
//! Fields: nodes 1..N allocate their large field values in the segment's
//! arena (zero-copy: a transfer passes an offset); node 0 does not
//! install that allocator, which is per process and would outlive the
//! run in the user's process, so its values are copied into the arena
//! once when they cross (single copy).

use std::hash::{DefaultHasher, Hash, Hasher};
use std::io::Write as _;
use std::os::fd::RawFd;
use std::sync::Arc;

use snet_engine::{Config, EngineError, Sink, Source};
use snet_shm::launch::{self, LaunchError, NodeCommand};
use snet_shm::{FieldMode, Notify};

use crate::boxes::RustBoxes;
use crate::network::Network;
use crate::run::{Kind, RunError};

/// The environment variable holding, in a node process, the fingerprint
/// of the network it was started for.
pub(crate) const NETWORK_VAR: &str = "SNET_RUST_NETWORK";

/// What a node process checks it joins: the program (its name, text and
/// entry), the node count and the names of the registered boxes, as hex.
pub(crate) fn fingerprint(net: &Network) -> String {
    let names = net.boxes.names();
    let mut h = DefaultHasher::new();
    (net.source_hash, net.nodes, names).hash(&mut h);
    format!("{:016x}", h.finish())
}

/// How node 0 starts the node processes: the network's [`fingerprint`]
/// they check, and the command they run, if not a copy of this program.
pub(crate) struct Launch<'a> {
    pub(crate) fingerprint: &'a str,
    pub(crate) command: Option<&'a (std::path::PathBuf, Vec<std::ffi::OsString>)>,
}

/// Node 0 of a shared-memory run of `nodes` nodes: creates the segment,
/// starts the node processes, runs on `io`, waits for the others (all of
/// that but the engine's run is `snet_shm::launch::run`'s) and gathers the
/// trace and profile `files`.
/// Call it on a thread that lives as long as the run.
pub(crate) fn run_root(
    graph: Arc<snet_core::Graph>,
    config: &Config,
    io: (Box<dyn Source>, Box<dyn Sink>),
    boxes: &RustBoxes,
    nodes: u32,
    launch: Launch<'_>,
    files: &snet_engine::instrument_files::Files<'_>,
) -> Result<(), RunError> {
    let Launch {
        fingerprint,
        command,
    } = launch;
    let how = launch::Launch {
        geometry: snet_shm::Geometry::new(nodes, Notify::Sparse, FieldMode::ZeroCopy),
        command: match command {
            Some((exe, args)) => NodeCommand::Command { exe, args },
            None => NodeCommand::ThisProgram,
        },
        env: &[(NETWORK_VAR, fingerprint)],
    };
    let ran = launch::run(&how, |t| {
        let result = snet_engine::run(graph, config, Some(io), boxes, &**t);
        let ok = result.is_ok();
        (result, ok)
    })
    .map_err(|e| RunError::new(Kind::Setup(e.to_string())))?;
    let (result, ended) = (ran.output, ran.ended);
    // The trace and profile: the other nodes' parts (a failed run's nodes
    // may never write theirs).
    let written = match &config.instrument {
        Some(ins) => {
            let nodes = if result.is_ok() { nodes } else { 1 };
            snet_engine::instrument_files::finish_node(files, ins, snet_core::Rank::ROOT, nodes)
        }
        None => Ok(()),
    };
    match result {
        Ok(_) => match ended.iter().find(|e| !e.clean()) {
            Some(e) => Err(RunError::new(Kind::NodeEnded {
                node: e.node,
                how: e.describe(),
            })),
            None => written.map_err(|e| RunError::new(Kind::Report(e.to_string()))),
        },
        Err(e) => Err(RunError::new(Kind::Engine(e))),
    }
}

/// Runs this node process's part of the run it was started for (`net`
/// must be that network) and ends the process: status 0 when the run
/// ended well, 1 otherwise.
pub(crate) fn run_node(net: &Network, started: Result<(u32, RawFd), LaunchError>) -> ! {
    let status = match node(net, started) {
        Ok(()) => 0,
        Err(failed) => {
            if let Some(e) = failed {
                // One write: the nodes share standard error.
                let _ = std::io::stderr()
                    .lock()
                    .write_all(format!("error: {e}\n").as_bytes());
            }
            1
        }
    };
    std::process::exit(status)
}

/// Why a node process's part of a run failed, as the node itself says it
/// (node 0 reports the errors of boxes and components, which reach it).
#[derive(Debug)]
enum NodeError {
    /// It could not join the run it was started for.
    Join(LaunchError),
    /// It reached a run of another network than it was started for.
    OtherNetwork {
        node: u32,
        expected: String,
        reached: String,
    },
    /// Its shared-memory set-up failed.
    Setup(u32, launch::SetupError),
    /// Its engine failed in the distribution layer.
    Engine(u32, EngineError),
}

impl std::fmt::Display for NodeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NodeError::Join(e) => write!(f, "{e}"),
            NodeError::OtherNetwork {
                node,
                expected,
                reached,
            } => write!(
                f,
                "node {node}: this process was started to join a shared-memory run of network {expected}, \
                 but the first distributed run it reached is of network {reached} (a node process \
                 runs the program from the start and joins the first Network::run/start with \
                 Transport::Shm it reaches: the same program, entry, node count and boxes)"
            ),
            NodeError::Setup(node, e) => write!(f, "node {node}: {e}"),
            NodeError::Engine(node, e) => write!(f, "node {node}: {e}"),
        }
    }
}

/// A node's part; `Err` when it failed, with what to print if node 0
/// cannot report it (node 0 reports the errors of boxes and components,
/// which reach it).
fn node(
    net: &Network,
    started: Result<(u32, RawFd), LaunchError>,
) -> Result<(), Option<NodeError>> {
    let (k, _) = started.map_err(|e| Some(NodeError::Join(e)))?;
    let expected = std::env::var(NETWORK_VAR).unwrap_or_default();
    if expected != fingerprint(net) {
        return Err(Some(NodeError::OtherNetwork {
            node: k,
            expected,
            reached: fingerprint(net),
        }));
    }
    // The geometry and command are node 0's: a started node finds its
    // segment's.
    let how = launch::Launch {
        geometry: snet_shm::Geometry::new(net.nodes, Notify::Sparse, FieldMode::ZeroCopy),
        command: NodeCommand::ThisProgram,
        env: &[],
    };
    let ran = launch::run(&how, |t| {
        c4snet::crash::set_node(k);
        c4snet::crash::install();
        t.install_field_allocator();
        let config = net.config();
        let result = snet_engine::run(net.graph.clone(), &config, None, &net.boxes, &**t);
        if let Some(ins) = &config.instrument {
            let me = snet_core::Rank(k);
            if let Err(e) =
                snet_engine::instrument_files::finish_node(&net.report_files(), ins, me, net.nodes)
            {
                let _ = std::io::stderr()
                    .lock()
                    .write_all(format!("error: node {k}: {e}\n").as_bytes());
            }
        }
        let ok = result.is_ok();
        (result, ok)
    })
    .map_err(|e| Some(NodeError::Setup(k, e)))?;
    let result = ran.output;
    match result {
        Ok(_) => Ok(()),
        Err(e @ EngineError::Distribution(_)) => Err(Some(NodeError::Engine(k, e))),
        Err(_) => Err(None),
    }
}
