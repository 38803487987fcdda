//! `snet selftest`: the transport conformance suite over loopback, shared
//! memory or MPI.

#[cfg(feature = "mpi")]
use crate::mpi::mpi_launched;
use snet_core::Rank;
use snet_shm::{FieldMode, Notify};

use crate::shm::Shm;
use crate::TransportKind;

/// Runs the transport conformance suite (`snet selftest`): with
/// `transport` `loopback`, every case on `nodes` in-process nodes; with
/// `mpi`, this process is one rank and runs `cases` in order with the
/// other ranks (SPMD). Node 0 prints a line per case. `peer-dies` kills the
/// last rank outright, so under MPI it must be run alone, and `mpirun`
/// (not this process) reports the death.
pub fn selftest(
    transport: TransportKind,
    nodes: u32,
    cases: &[String],
    window: usize,
    shm: (Notify, FieldMode),
) -> u8 {
    use snet_engine::dist::{conformance, loopback::Loopback};
    let cases: Vec<&str> = if cases.is_empty() {
        conformance::CASES
            .iter()
            .copied()
            .filter(|c| transport == TransportKind::Loopback || *c != "peer-dies")
            .collect()
    } else {
        cases.iter().map(String::as_str).collect()
    };
    if let Some(bad) = cases.iter().find(|c| !conformance::CASES.contains(c)) {
        say!(
            "error: no case `{bad}` (cases: {})",
            conformance::CASES.join(", ")
        );
        return 2;
    }
    match transport {
        TransportKind::Loopback => {
            for case in cases {
                let r = conformance::run_in_threads_cases(
                    &[case],
                    &|| Loopback::with_window(nodes.max(2), window),
                    &|t: &Loopback| t.kill(),
                );
                match r {
                    Ok(()) => println!("loopback, {} nodes: {case} ok", nodes.max(2)),
                    Err(e) => {
                        say!("error: loopback: {e}");
                        return 1;
                    }
                }
            }
            0
        }
        TransportKind::Mpi => selftest_mpi(&cases, window),
        TransportKind::Shm => selftest_shm(&cases, nodes.max(2), window, shm.0, shm.1),
    }
}

/// The suite over shared memory: node 0 starts the other node processes
/// (as a run does); every node runs the cases in order. `peer-dies` kills
/// the last node with SIGKILL, and node 0's watcher reports it to all.
/// `window` is the ring's slot count (rounded up to a power of two).
fn selftest_shm(
    cases: &[&str],
    nodes: u32,
    window: usize,
    notify: Notify,
    fields: FieldMode,
) -> u8 {
    use snet_engine::dist::{conformance, Transport};
    if snet_shm::launch::started_as_node().is_none() {
        // SAFETY: before any other thread of ours exists (node processes
        // inherit the variable).
        unsafe {
            std::env::set_var(
                "SNET_SHM_SLOTS",
                window.max(2).next_power_of_two().to_string(),
            )
        };
    }
    let die = || {
        // SAFETY: kill(2) on this very process; SIGKILL cannot be caught.
        unsafe { libc::kill(libc::getpid(), libc::SIGKILL) };
    };
    let ran = snet_shm::launch::run(&Shm::launch(nodes, notify, fields), |t| {
        let g = t.geometry();
        let mut status = 0;
        for case in cases {
            match conformance::run_case(case, &**t, &die) {
                Ok(()) if t.node() == Rank::ROOT => println!(
                    "shm (notify {}, fields {}), {} nodes: {case} ok",
                    g.notify.name(),
                    g.fields.name(),
                    t.nodes()
                ),
                Ok(()) => {}
                Err(e) => {
                    say!("error: node {}: case {case}: {e}", t.node());
                    status = 1;
                    break;
                }
            }
        }
        t.close();
        (status, status == 0)
    });
    let ran = match ran {
        Ok(r) => r,
        Err(e) => {
            say!("error: shm: {e}");
            return 2;
        }
    };
    let mut status = ran.output;
    let died = cases
        .contains(&"peer-dies")
        .then_some(ran.transport.nodes() - 1);
    for e in &ran.ended {
        if !e.clean() && Some(e.node) != died {
            say!("error: node {} {}", e.node, e.describe());
            status = 1;
        }
    }
    status
}

#[cfg(not(feature = "mpi"))]
fn selftest_mpi(_: &[&str], _: usize) -> u8 {
    say!("error: this snet was built without MPI (cargo feature `mpi`)");
    2
}

#[cfg(feature = "mpi")]
fn selftest_mpi(cases: &[&str], window: usize) -> u8 {
    use snet_engine::dist::{conformance, Transport};
    if !mpi_launched() {
        say!(
            "error: `snet selftest --transport mpi` runs one process per node: start it with mpirun, e.g. `mpirun -np 2 snet selftest` (as root, or with more processes than cores, Open MPI also needs `--allow-run-as-root` / `--oversubscribe`)"
        );
        return 2;
    }
    let t = match snet_mpi::MpiTransport::with_window(window) {
        Ok(t) => t,
        Err(e) => {
            say!("error: cannot start MPI: {e}");
            return 2;
        }
    };
    let die = || {
        // SAFETY: kill(2) on this very process; SIGKILL cannot be caught.
        unsafe { libc::kill(libc::getpid(), libc::SIGKILL) };
    };
    let mut status = 0;
    for case in cases {
        match conformance::run_case(case, &t, &die) {
            Ok(()) if t.node() == Rank::ROOT => println!("mpi, {} nodes: {case} ok", t.nodes()),
            Ok(()) => {}
            Err(e) => {
                say!("error: node {}: case {case}: {e}", t.node());
                status = 1;
                break;
            }
        }
    }
    t.finish();
    status
}
