//! MPI: whether this process was started by `mpirun`, how a process takes
//! part in an MPI run ([`Mpi`], for `nodes.rs`: node = rank), and the MPI
//! library's linker flags.

use snet_engine::dist::Transport;
use snet_engine::{EngineError, Stats};

use crate::nodes::{Part, Processes};
use crate::RunOptions;

/// Whether this process was started by `mpirun` (an MPI launcher's
/// environment).
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

/// A rank of an MPI run. Every rank prints its own `--stats` line.
pub(crate) struct Mpi {
    /// `--nodes`, which must match the number of ranks.
    nodes: Option<u32>,
    #[cfg(feature = "mpi")]
    transport: Option<snet_mpi::MpiTransport>,
}

impl Mpi {
    pub(crate) fn new(opts: &RunOptions) -> Mpi {
        Mpi {
            nodes: opts.nodes,
            #[cfg(feature = "mpi")]
            transport: None,
        }
    }
}

impl Processes for Mpi {
    #[cfg(not(feature = "mpi"))]
    fn run(
        &mut self,
        _: impl FnOnce(&dyn Transport) -> Result<Stats, EngineError>,
    ) -> Result<Part, u8> {
        let _ = self.nodes;
        say!("error: this snet was built without MPI (cargo feature `mpi`); rebuild with it to run under mpirun");
        Err(2)
    }

    #[cfg(feature = "mpi")]
    fn run(
        &mut self,
        part: impl FnOnce(&dyn Transport) -> Result<Stats, EngineError>,
    ) -> Result<Part, u8> {
        use snet_core::Rank;
        let t = match snet_mpi::MpiTransport::start() {
            Ok(t) => t,
            Err(e) => {
                say!("error: cannot start MPI: {e}");
                return Err(2);
            }
        };
        let (me, nodes) = (t.node(), t.nodes());
        if let Some(n) = self.nodes.filter(|&n| n != nodes) {
            if me == Rank::ROOT {
                say!("error: --nodes {n}, but mpirun started {nodes} processes (leave out --nodes under mpirun)");
            }
            t.finish();
            return Err(2);
        }
        let result = part(&t);
        self.transport = Some(t);
        Ok(Part {
            result,
            me,
            nodes,
            ended: Vec::new(),
            counters: None,
            name: "mpi".into(),
        })
    }

    fn report_first(&self) -> bool {
        true
    }

    fn end(&mut self) {
        #[cfg(feature = "mpi")]
        if let Some(t) = self.transport.take() {
            t.finish();
        }
    }
}

/// Linker flags for the MPI library this runner was built with (`snet
/// build` adds them; empty without the `mpi` feature).
#[cfg(feature = "mpi")]
pub const MPI_LINK_ARGS: &str = snet_mpi::LINK_ARGS;
#[cfg(not(feature = "mpi"))]
pub const MPI_LINK_ARGS: &str = "";
