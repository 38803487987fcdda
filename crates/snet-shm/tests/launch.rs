//! `launch::run`, the one way into a shared-memory run: node 0's side
//! (segment, node processes, the wait for them), with node processes that
//! are not S-Net programs, so nothing here joins the run.

// The launcher is part of the default feature `transport`.
#![cfg(feature = "transport")]

use std::ffi::OsString;
use std::path::Path;

use snet_shm::launch::{self, Launch, NodeCommand, SetupError};
use snet_shm::{FieldMode, Geometry, Notify};

fn launch<'a>(nodes: u32, command: NodeCommand<'a>) -> Launch<'a> {
    Launch {
        geometry: Geometry::new(nodes, Notify::Sparse, FieldMode::ZeroCopy),
        command,
        env: &[],
    }
}

/// One node: the segment is made, the part runs on node 0, nothing is
/// started or waited for.
#[test]
fn one_node_runs_the_part_and_starts_no_process() {
    let ran = launch::run(&launch(1, NodeCommand::ThisProgram), |t| {
        (t.geometry().nodes, true)
    })
    .expect("a one-node run");
    assert_eq!(ran.output, 1);
    assert!(ran.ended.is_empty());
}

/// A node process that ends (status 0) without ever joining is waited
/// for and reported as having left before the run's end, not as clean.
#[test]
fn a_node_that_never_joins_is_reported_as_an_early_end() {
    let args: [OsString; 0] = [];
    let cmd = NodeCommand::Command {
        exe: Path::new("true"),
        args: &args,
    };
    let ran = launch::run(&launch(2, cmd), |_| ((), false)).expect("node 1 starts");
    assert_eq!(ran.ended.len(), 1);
    let e = ran.ended[0];
    assert_eq!((e.node, e.status, e.early, e.clean()), (1, 0, true, false));
}

/// A node process that cannot be started fails the set-up, naming the
/// node and the command; the part never runs.
#[test]
fn a_node_that_cannot_start_fails_the_setup() {
    let args: [OsString; 0] = [];
    let cmd = NodeCommand::Command {
        exe: Path::new("/nonexistent/snet-node"),
        args: &args,
    };
    let err = match launch::run(&launch(2, cmd), |_| -> ((), bool) {
        panic!("the part ran")
    }) {
        Err(e) => e,
        Ok(_) => panic!("a missing executable started"),
    };
    assert!(matches!(err, SetupError::Start(_)), "{err:?}");
    let text = err.to_string();
    assert!(
        text.starts_with("cannot start node 1 (/nonexistent/snet-node): "),
        "{text}"
    );
}
