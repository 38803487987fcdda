//! Shared-memory set-up: node 0 creates the segment and starts the other
//! node processes, a started node joins; one node of a `--transport shm` run.

use std::sync::Arc;
use std::time::Duration;

use snet_core::Rank;
use snet_engine::{Config, LanguageInterface};
use snet_shm::{FieldMode, Notify};

use crate::io::node_streams;
use crate::run::{other_node_status, report_error, scatter};
use crate::RunOptions;

/// Node 0's or a started node's endpoint of a shared-memory run, and (on
/// node 0) the node processes it started.
pub(crate) type ShmEndpoint = (Arc<snet_shm::ShmTransport>, Option<snet_shm::launch::Nodes>);

/// Joins the shared-memory run this process was started for, or (node 0)
/// creates one of `nodes` nodes and starts the other node processes.
pub(crate) fn shm_endpoint(
    nodes: u32,
    notify: Notify,
    fields: FieldMode,
) -> Result<ShmEndpoint, String> {
    use snet_shm::launch;
    if let Some(started) = launch::started_as_node() {
        let (k, fd) = started.map_err(|e| e.to_string())?;
        let t = launch::attach_as_node(k, fd).map_err(|e| e.to_string())?;
        return Ok((Arc::new(t), None));
    }
    let g = snet_shm::Geometry::new(nodes, notify, fields);
    let seg = snet_shm::Segment::create(g)
        .map_err(|e| format!("cannot create the shared-memory segment: {e}"))?;
    let t = Arc::new(snet_shm::ShmTransport::new(seg, 0).map_err(|e| e.to_string())?);
    let started = if nodes > 1 {
        Some(launch::Nodes::start(&t).map_err(|e| e.to_string())?)
    } else {
        None
    };
    Ok((t, started))
}

/// One node of a shared-memory run (`--transport shm`). Node 0 is the
/// process the user started: it starts the other nodes (copies of itself,
/// see `snet_shm::launch`), reads and writes the records, waits for the
/// others to end and reports; a node that died makes the run fail naming
/// it. The other nodes print only their `--stats` line and errors of their
/// own transport.
pub(crate) fn run_shm(
    graph: Arc<snet_core::Graph>,
    config: &Config,
    opts: &RunOptions,
    language: &(dyn LanguageInterface + Sync),
) -> u8 {
    use snet_engine::dist::Transport;
    let start = std::time::Instant::now();
    let (t, started) = match shm_endpoint(opts.nodes.unwrap_or(1), opts.notify, opts.fields) {
        Ok(e) => e,
        Err(e) => {
            say!("error: shm: {e}");
            return 2;
        }
    };
    let (me, nodes) = (t.node(), t.nodes());
    if nodes > 1 {
        c4snet::crash::set_node(me.0);
    }
    t.install_field_allocator();
    let graph = scatter(graph, opts, nodes);
    let io = node_streams(me, opts);
    let faulty = crate::fault::wrap(&*t);
    let tr: &dyn Transport = match &faulty {
        Some(f) => f,
        None => &*t,
    };
    let result = snet_engine::run(graph, config, io, language, tr);
    if me != Rank::ROOT {
        if let Some(ins) = &config.instrument {
            if let Err(e) = crate::report::finish_node(opts, ins, me, nodes) {
                say!("error: node {me}: {e}");
            }
        }
        if let (Ok(s), true) = (&result, opts.stats) {
            say!("snet: {s}");
            say!("snet: shm node {me}: {}", t.counters());
        }
        return other_node_status(me, &result);
    }
    // Node 0: the others end right after the run (a failed run: they were
    // told, or are killed after a short grace).
    let grace = Duration::from_secs(if result.is_ok() { 30 } else { 3 });
    let ended = started.map(|n| n.wait(grace)).unwrap_or_default();
    if let Some(ins) = &config.instrument {
        // A failed run's nodes may never write their parts.
        let nodes = if result.is_ok() { nodes } else { 1 };
        if let Err(e) = crate::report::finish_node(opts, ins, Rank::ROOT, nodes) {
            say!("error: {e}");
            if result.is_ok() {
                return 2;
            }
        }
    }
    match result {
        Ok(s) => {
            let unclean: Vec<_> = ended.iter().filter(|e| !e.clean()).collect();
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
            if opts.stats {
                say!("snet: {s}");
                say!("snet: shm node 0: {}", t.counters());
                if !ended.is_empty() {
                    let cpu: Vec<String> = ended
                        .iter()
                        .map(|e| format!("node {} {:.3} s", e.node, e.cpu.as_secs_f64()))
                        .collect();
                    say!("snet: cpu time: {}", cpu.join(", "));
                }
                let g = t.geometry();
                say!(
                    "snet: {nodes} nodes (shm, notify {}, fields {}), {} workers each, {:.3} s",
                    g.notify.name(),
                    g.fields.name(),
                    config.workers,
                    start.elapsed().as_secs_f64()
                );
            }
            0
        }
        Err(e) => report_error(&e),
    }
}
