//! `--transport shm`: how a process takes part in a shared-memory run
//! ([`Shm`], for `nodes.rs`). Node 0 is the process the user started: it
//! creates the segment and starts the other nodes (copies of itself), and
//! waits for them after its part; all of that is
//! `snet_shm::launch::run`'s, as it is for `snet selftest`, `snet
//! pingpong` and the `snet` library.

use snet_engine::dist::Transport;
use snet_engine::{EngineError, Stats};
use snet_shm::launch::{self, Launch, NodeCommand};
use snet_shm::{FieldMode, Geometry, Notify};

use crate::nodes::{Part, Processes};
use crate::RunOptions;

/// A process of a shared-memory run.
pub(crate) struct Shm {
    nodes: u32,
    notify: Notify,
    fields: FieldMode,
    /// This process's endpoint, kept until the run's end (its segment
    /// holds field values still referenced).
    endpoint: Option<std::sync::Arc<snet_shm::ShmTransport>>,
}

impl Shm {
    pub(crate) fn new(opts: &RunOptions) -> Shm {
        Shm {
            nodes: opts.nodes.unwrap_or(1),
            notify: opts.notify,
            fields: opts.fields,
            endpoint: None,
        }
    }

    /// The launch of a run of `nodes` processes (copies of this one).
    pub(crate) fn launch(nodes: u32, notify: Notify, fields: FieldMode) -> Launch<'static> {
        Launch {
            geometry: Geometry::new(nodes, notify, fields),
            command: NodeCommand::ThisProgram,
            env: &[],
        }
    }
}

impl Processes for Shm {
    fn run(
        &mut self,
        part: impl FnOnce(&dyn Transport) -> Result<Stats, EngineError>,
    ) -> Result<Part, u8> {
        let how = Shm::launch(self.nodes, self.notify, self.fields);
        let ran = launch::run(&how, |t| {
            t.install_field_allocator();
            let result = part(&**t);
            let ok = result.is_ok();
            (result, ok)
        });
        let ran = ran.map_err(|e| {
            say!("error: shm: {e}");
            2
        })?;
        let t = self.endpoint.insert(ran.transport);
        let g = t.geometry();
        Ok(Part {
            result: ran.output,
            me: t.node(),
            nodes: t.nodes(),
            ended: ran.ended,
            counters: Some(t.counters().to_string()),
            name: format!(
                "shm, notify {}, fields {}",
                g.notify.name(),
                g.fields.name()
            ),
        })
    }

    fn report_first(&self) -> bool {
        false
    }

    fn end(&mut self) {}
}
