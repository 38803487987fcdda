//! Rust boxes on shared-memory nodes (`Transport::Shm`): each node a
//! process of its own.
//!
//! A node process is a copy of the program that started the run, run from
//! `main`, so this test is a program of its own (`harness = false`): the
//! driver (no arguments) runs each scenario as a child process
//! (`shm scenario NAME`), whose node processes are copies of that child
//! and so reach the same scenario. Each scenario checks its own results
//! (a failed check panics: status 101); the driver checks the status and
//! what the scenario printed on standard error.

use std::collections::{BTreeMap, BTreeSet};
use std::process::{Command, ExitCode};

use snet::{Field, Network, Record, Transport};

/// `grow` (on node 1) turns `<i>` and a field `x` into a longer `x`
/// (small or several KiB: inline and through the arena) and `<k>` =
/// `i mod nodes`; `scale` runs on node `<k>` (`!@`); `total` on node 0.
/// Each reports the process it ran in (`<pg>`, `<ps>`, `<pt>`). `<id>` and
/// the field `meta` are never named by a box: they flow around all three,
/// across the nodes.
const PROGRAM: &str = "
box grow((x, <i>) -> (x, <k>, <pg>));
box scale((x, <k>) -> (x, <ps>));
box total((x) -> (<sum>, <pt>));
net main connect grow @ 1 .. scale !@ <k> .. total @ 0;
";

fn pid() -> i64 {
    i64::from(std::process::id())
}

fn network(nodes: u32) -> Network {
    let mut net = Network::from_source("spread.snet", PROGRAM).expect("compiles");
    let n = i64::from(nodes);
    net.add_box("grow", move |input, out| {
        let i = input.tag("i")?;
        if i == 7 && std::env::var("PANIC_AT_7").is_ok() {
            panic!("seven is not allowed");
        }
        if i == 7 && std::env::var("EXIT_AT_7").is_ok() {
            std::process::exit(3);
        }
        let x0 = input.field("x")?.as_slice::<f64>().ok_or("x")?[0];
        let len = (i % 4) as usize * 700 + 1; // up to 16 KiB
        let x: Vec<f64> = (0..len).map(|j| x0 + j as f64).collect();
        let rec = Record::new()
            .with_field("x", Field::from_slice(&x))
            .with_tag("k", i % n)
            .with_tag("pg", pid());
        out.emit(1, rec)?;
        Ok(())
    })
    .add_box("scale", |input, out| {
        let k = input.tag("k")?;
        let here = i64::from(snet::node_process().unwrap_or(0));
        if here != k {
            return Err(format!("scale !@ <k> with <k> = {k} ran on node {here}").into());
        }
        let x = input.field("x")?.as_slice::<f64>().ok_or("x")?;
        let y: Vec<f64> = x.iter().map(|v| v * 2.0).collect();
        let rec = Record::new()
            .with_field("x", Field::from_slice(&y))
            .with_tag("ps", pid());
        out.emit(1, rec)?;
        Ok(())
    })
    .add_box("total", |input, out| {
        let x = input.field("x")?.as_slice::<f64>().ok_or("x")?;
        let rec = Record::new()
            .with_tag("sum", x.iter().sum::<f64>() as i64)
            .with_tag("pt", pid());
        out.emit(1, rec)?;
        Ok(())
    })
    .workers(2);
    net
}

fn inputs(count: i64) -> impl Iterator<Item = Record> {
    (0..count).map(|id| {
        let meta: Vec<u8> = (0..5000).map(|j| ((id + j) % 251) as u8).collect();
        Record::new()
            .with_field("x", Field::scalar(id as f64))
            .with_tag("i", id)
            .with_tag("id", id)
            .with_field("meta", Field::from_slice(&meta))
    })
}

/// `<id>`, `<sum>` and a checksum of `meta` of each output, as a multiset.
fn results(out: &[Record]) -> BTreeMap<(i64, i64, u64), usize> {
    let mut m = BTreeMap::new();
    for r in out {
        let meta = r.field("meta").expect("meta flowed around the boxes");
        let bytes = meta.as_slice::<u8>().expect("u8s");
        let sum = bytes
            .iter()
            .enumerate()
            .map(|(j, &b)| (j as u64 + 1) * u64::from(b))
            .sum();
        let key = (
            r.tag("id").expect("<id>"),
            r.tag("sum").expect("<sum>"),
            sum,
        );
        *m.entry(key).or_default() += 1;
    }
    m
}

/// The processes the boxes ran in are those the placements name: `grow`
/// on node 1 (not this process), `total` on node 0 (this one), `scale`
/// on node `id mod nodes`, one process per node.
fn check_placements(out: &[Record], nodes: i64) {
    let me = pid();
    let mut scale_at: BTreeMap<i64, BTreeSet<i64>> = BTreeMap::new();
    for r in out {
        let (id, pg, ps, pt) = (
            r.tag("id").unwrap(),
            r.tag("pg").unwrap(),
            r.tag("ps").unwrap(),
            r.tag("pt").unwrap(),
        );
        assert_ne!(pg, me, "grow @ 1 ran in node 0's process: {r}");
        assert_eq!(pt, me, "total @ 0 ran in another process: {r}");
        scale_at.entry(id % nodes).or_default().insert(ps);
        if id % nodes == 1 {
            assert_eq!(
                ps, pg,
                "scale on node 1 and grow @ 1 in different processes"
            );
        }
    }
    assert_eq!(scale_at.len() as i64, nodes, "{scale_at:?}");
    assert!(scale_at.values().all(|p| p.len() == 1), "{scale_at:?}");
    let pids: BTreeSet<i64> = scale_at.values().flatten().copied().collect();
    assert_eq!(
        pids.len() as i64,
        nodes,
        "one process per node: {scale_at:?}"
    );
    assert!(scale_at[&0].contains(&me), "node 0 is this process");
}

/// The child processes of this process still running (none after a run).
fn children() -> Vec<String> {
    let mut found = Vec::new();
    if let Ok(tasks) = std::fs::read_dir("/proc/self/task") {
        for t in tasks.flatten() {
            if let Ok(c) = std::fs::read_to_string(t.path().join("children")) {
                found.extend(c.split_whitespace().map(str::to_string));
            }
        }
    }
    found
}

const COUNT: i64 = 40;

/// On 2 and 4 nodes, the outputs are those of the one-node run (as
/// multisets), the boxes ran where the placements say, and no node
/// process is left.
fn placements(nodes: u32) {
    let expected = if snet::node_process().is_none() {
        results(&network(1).run(inputs(COUNT)).expect("one node"))
    } else {
        BTreeMap::new() // a node process never gets past the shm run below
    };
    let out = network(nodes)
        .nodes(nodes)
        .transport(Transport::Shm)
        .run(inputs(COUNT))
        .expect("runs on shm nodes");
    assert!(snet::node_process().is_none(), "a node process returned");
    assert_eq!(out.len() as i64, COUNT);
    assert_eq!(results(&out), expected);
    check_placements(&out, i64::from(nodes));
    assert_eq!(children(), Vec::<String>::new(), "node processes left");
}

/// A started network keeps running while records are sent and received.
fn streaming() {
    let mut net = network(2);
    net.nodes(2).transport(Transport::Shm);
    let running = net.start();
    let mut input = inputs(COUNT);
    running.send(input.next().unwrap()).unwrap();
    let first = running.recv().expect("one output while the input is open");
    assert_eq!(first.tag("id"), Some(0));
    for r in input {
        running.send(r).unwrap();
    }
    let rest = running.finish().expect("runs");
    assert_eq!(rest.len() as i64, COUNT - 1);
}

/// A box that fails on node 1 (`PANIC_AT_7`, `EXIT_AT_7`): the run
/// fails naming it and the node; the scenario prints the error for the
/// driver and exits 0.
fn failing() {
    let err = two_node_run_error();
    eprintln!(
        "RUN ERROR: {err} (box {:?}) (kind {:?}, node {:?})",
        err.box_name(),
        err.kind(),
        err.node()
    );
    assert_eq!(children(), Vec::<String>::new(), "node processes left");
}

/// Node 0's side of a two-node run that must fail: its error.
fn two_node_run_error() -> snet::RunError {
    network(2)
        .nodes(2)
        .transport(Transport::Shm)
        .run(inputs(COUNT))
        .expect_err("the run fails")
}

/// Node 0's side of a failing two-node run: the run must fail, and its
/// error goes to stderr for the parent test to check.
fn run_fails_on_two_nodes() {
    eprintln!("RUN ERROR: {}", two_node_run_error());
}

/// A node process that reaches another distributed run than the one it
/// was started for says so, and the run fails.
fn mismatch() {
    if snet::node_process().is_some() {
        let mut other = Network::from_source("other.snet", "box f((a) -> (b)); net o connect f;")
            .expect("compiles");
        other.add_box("f", |_, _| Ok(()));
        let _ = other.nodes(2).transport(Transport::Shm).run([]);
    }
    run_fails_on_two_nodes();
}

/// A node process that ends before it reaches the run (its `main` took
/// another way) fails the run instead of leaving node 0 waiting for it.
fn no_show() {
    if snet::node_process().is_some() {
        return;
    }
    run_fails_on_two_nodes();
}

fn scenario(name: &str) {
    match name {
        "two-nodes" => placements(2),
        "four-nodes" => placements(4),
        "streaming" => streaming(),
        "failing" => failing(),
        "mismatch" => mismatch(),
        "no-show" => no_show(),
        _ => panic!("no scenario {name}"),
    }
}

/// Runs scenario `name` as a child process with `env`; its status and
/// standard error.
fn child(name: &str, env: &[(&str, &str)]) -> (Option<i32>, String) {
    let out = Command::new(std::env::current_exe().expect("this test's path"))
        .args(["scenario", name])
        .envs(env.iter().copied())
        .output()
        .expect("start the scenario");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A scenario to run: its title, its name, its environment and what its
/// standard error must hold.
type Check = (&'static str, &'static str, Env, &'static [&'static str]);
type Env = &'static [(&'static str, &'static str)];

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("scenario") {
        scenario(&args[2]);
        return ExitCode::SUCCESS;
    }
    let checks: [Check; 7] = [
        ("two-nodes", "two-nodes", &[], &[]),
        ("four-nodes", "four-nodes", &[], &[]),
        ("streaming", "streaming", &[], &[]),
        (
            "a panicking box on node 1",
            "failing",
            &[("PANIC_AT_7", "1")],
            &[
                "RUN ERROR: node 1: spread.snet:5:18: box `grow`: panicked: seven is not allowed",
                "(box Some(\"grow\")) (kind BoxPanic, node Some(1))",
            ],
        ),
        (
            "a box exiting on node 1",
            "failing",
            &[("EXIT_AT_7", "1")],
            &[
                "snet: node 1: box `grow` called exit()",
                "RUN ERROR: node 1",
            ],
        ),
        (
            "a node process reaching another network",
            "mismatch",
            &[],
            &[
                "error: node 1: this process was started to join a shared-memory run of network",
                "RUN ERROR: node 1",
            ],
        ),
        (
            "a node process ending before the run",
            "no-show",
            &[],
            &["RUN ERROR: node 1: node 1 stopped unexpectedly (exited with status 0 before"],
        ),
    ];
    let mut failed = 0;
    for (title, name, env, want) in checks {
        let (status, err) = child(name, env);
        let verdict = match (status, want.iter().find(|w| !err.contains(**w))) {
            (Some(0), None) => Ok(()),
            (Some(0), Some(w)) => Err(format!("no `{w}` in its standard error")),
            (other, _) => Err(format!("status {other:?}")),
        };
        match verdict {
            Ok(()) => println!("test {title} ... ok"),
            Err(why) => {
                failed += 1;
                println!("test {title} ... FAILED: {why}\n--- its standard error:\n{err}---");
            }
        }
    }
    if failed > 0 {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}
