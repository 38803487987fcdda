//! The fault matrix (`docs/distributed.md`, "What a failure does"): for the
//! shared-memory transport and under `mpirun`, a fault at each awkward
//! moment ends the run nonzero, with a message naming the node (and the
//! box, where one is to blame), no terminate record after the failure, and
//! nothing left behind (node processes, `/dev/shm`, Open MPI's session
//! files).
//!
//! The cases of one transport run side by side (threads), each through
//! the hang guard of `common` ([`HANG`]): that bound only tells "ends" from
//! "hangs", no test measures how fast anything is. Faults an outside kill
//! cannot place reliably (mid-transfer, during the shutdown exchange, a
//! peer sending garbage) are armed inside the node with the test-only
//! `SNET_TEST_FAULT` (see `crates/snet-runner/src/fault.rs`).

mod common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use common::*;

/// Boxes that leave the run in the ways a C box can (with `common`'s).
const FAULT_BOXES: &str = r#"
#include <stdlib.h>

/* Calls exit(0) on the record with k == 3. */
void *bye(void *hnd, int k)
{
    if (k == 3) exit(0);
    C4SNetOut(hnd, 1, k);
    return hnd;
}

/* Calls _exit(0) (no exit handlers) on the record with k == 3. */
void *quit(void *hnd, int k)
{
    if (k == 3) _exit(0);
    C4SNetOut(hnd, 1, k);
    return hnd;
}

/* Calls abort() on the record with k == 3. */
void *abrt(void *hnd, int k)
{
    if (k == 3) abort();
    C4SNetOut(hnd, 1, k);
    return hnd;
}

/* Recurses without end on the record with k == 3. */
static int deep(int n)
{
    volatile char pad[256];
    pad[n & 255] = (char)n;
    return deep(n + 1) + pad[0];
}

void *overflow(void *hnd, int k)
{
    if (k == 3) k = deep(k);
    C4SNetOut(hnd, 1, k);
    return hnd;
}
"#;

/// A fault case: what runs, and what its failure must say.
struct Case {
    name: &'static str,
    /// The program (one of [`programs`]).
    prog: &'static str,
    /// `SNET_TEST_FAULT` and other variables.
    env: Vec<(&'static str, &'static str)>,
    /// Extra arguments of the run.
    args: Vec<&'static str>,
    /// Text the run's standard error must hold, each.
    says: Vec<&'static str>,
    /// The fault comes after node 0 wrote the whole output: the terminate
    /// record may be there (the output is complete), the status still fails.
    after_output: bool,
    /// The run must succeed (a fault that degrades, like a full arena).
    succeeds: bool,
}

fn case(name: &'static str, prog: &'static str, says: &[&'static str]) -> Case {
    Case {
        name,
        prog,
        env: Vec::new(),
        args: Vec::new(),
        says: says.to_vec(),
        after_output: false,
        succeeds: false,
    }
}

/// The programs, by name: a box at node 1 that misbehaves on its fourth
/// record, and `common`'s 64 MiB field across 4 nodes.
fn programs() -> Vec<(&'static str, String)> {
    let mut p: Vec<(&'static str, String)> = ["bye", "quit", "abrt", "crash", "overflow"]
        .iter()
        .map(|b| {
            (
                *b,
                format!("net f {{\n  box {b}((<k>) -> (<k>));\n}} connect {b} @ 1;\n"),
            )
        })
        .collect();
    p.push(("big", BIG_PROG.to_string()));
    p.push((
        "slow",
        "net kill {\n  box slow((<k>) -> (<k>));\n} connect slow @ 1;\n".to_string(),
    ));
    p
}

/// Builds every program once; returns the executables by name.
fn build_all(dir: &Path) -> Vec<(&'static str, PathBuf)> {
    let boxes = dir.join("boxes.c");
    std::fs::write(&boxes, format!("{BOXES}{FAULT_BOXES}")).unwrap();
    programs()
        .into_iter()
        .map(|(name, src)| {
            let prog = dir.join(format!("{name}.snet"));
            std::fs::write(&prog, src).unwrap();
            let exe = dir.join(name);
            snet_build(&prog, std::slice::from_ref(&boxes), &exe);
            (name, exe)
        })
        .collect()
}

/// The cases common to both transports. A killed process is named by
/// node 0 on shm (`node 2 ... signal 9`), by mpirun under MPI (`rank 2
/// ... signal 9`).
fn matrix(via: Via) -> Vec<Case> {
    let (one, two) = match via {
        Via::Shm => ("node 1", "node 2"),
        Via::Mpi => ("rank 1", "rank 2"),
    };
    let mut v = vec![
        case(
            "box calls exit(0)",
            "bye",
            &["node 1: box `bye` called exit()"],
        ),
        case(
            "box calls abort()",
            "abrt",
            &["node 1: box `abrt` crashed (signal SIGABRT)"],
        ),
        case(
            "box dereferences NULL",
            "crash",
            &["node 1: box `crash` crashed (signal SIGSEGV)"],
        ),
        // (`overflowed its stack` when the fault hits the box stack's
        // guard page; a plain SIGSEGV report when a frame jumps over it.)
        case(
            "box overflows its stack",
            "overflow",
            &["node 1: box `overflow`"],
        ),
    ];
    let mut c = case(
        "node killed mid-transfer of a 64 MiB field",
        "big",
        &[one, "signal 9"],
    );
    c.env.push(("SNET_TEST_FAULT", "die-sending-field@1"));
    v.push(c);
    let mut c = case(
        "node killed in the shutdown exchange",
        "big",
        &[two, "signal 9"],
    );
    c.env.push(("SNET_TEST_FAULT", "die-at-shutdown@2"));
    c.after_output = true;
    v.push(c);
    let mut c = case(
        "peer sends garbage",
        "big",
        &["from node 1: malformed message"],
    );
    c.env.push(("SNET_TEST_FAULT", "garbage@1"));
    v.push(c);
    v
}

/// Waits (within [`HANG`]) until no process carries `tag`; false if some do.
fn all_gone(tag: &str) -> bool {
    let start = Instant::now();
    while tagged_processes(tag) > 0 {
        if start.elapsed() > HANG {
            return false;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    true
}

/// `/dev/shm` except Open MPI's own files (MPI jobs of other tests come
/// and go beside these runs).
fn dev_shm() -> BTreeSet<String> {
    std::fs::read_dir("/dev/shm")
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| !n.starts_with("vader_segment.") && !n.starts_with("sm_segment."))
                .collect()
        })
        .unwrap_or_default()
}

/// Files left under directory `d` (Open MPI's session tree of one job).
fn files_under(d: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![d.to_path_buf()];
    while let Some(p) = stack.pop() {
        for e in std::fs::read_dir(&p).into_iter().flatten().flatten() {
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                stack.push(e.path());
            } else {
                out.push(e.path());
            }
        }
    }
    out
}

#[derive(Copy, Clone, PartialEq)]
enum Via {
    Shm,
    Mpi,
}

/// Runs one case; `Err` says what went wrong. Prints its time.
fn run_case(via: Via, c: &Case, exes: &[(&str, PathBuf)], n: usize) -> Result<(), String> {
    let exe = &exes.iter().find(|(p, _)| *p == c.prog).expect("program").1;
    let input = if c.prog == "big" {
        BIG_INPUT.to_string()
    } else {
        k_records(10)
    };
    let inp = exe.with_file_name(format!("input-{n}.xml"));
    std::fs::write(&inp, input).unwrap();
    let nodes = if c.prog == "big" { 4 } else { 2 };
    let tag = format!("faults-{}-{n}-{}", std::process::id(), via as u8);
    let mut cmd = match via {
        Via::Shm => {
            let mut cmd = Command::new(exe);
            cmd.args(["--nodes", &nodes.to_string(), "--transport", "shm"]);
            cmd
        }
        Via::Mpi => {
            let mut cmd = mpirun(nodes, false);
            cmd.arg(exe);
            cmd
        }
    };
    let session = cmd
        .get_envs()
        .find(|(k, _)| *k == "OMPI_MCA_orte_tmpdir_base")
        .and_then(|(_, v)| v.map(PathBuf::from));
    cmd.env("SNET_TEST_RUN", &tag)
        .envs(c.env.iter().copied())
        .arg("-i")
        .arg(&inp)
        .args(&c.args);
    let start = Instant::now();
    let out = output_guarded(cmd);
    let took = start.elapsed();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let mut wrong = Vec::new();
    if out.status.success() != c.succeeds {
        wrong.push(format!("status {}", out.status));
    }
    for s in &c.says {
        if !stderr.contains(s) {
            wrong.push(format!("no `{s}` in the messages"));
        }
    }
    if c.succeeds && c.prog == "big" {
        let sum = format!("<tag label=\"sum\">{}</tag>", checksum(64, 7));
        if !stdout.contains(&sum) || !stdout.contains("terminate") {
            wrong.push(format!("no {sum} and terminate record in the output"));
        }
    }
    if stderr.contains("panicked") {
        wrong.push("a panic".into());
    }
    if !c.succeeds && !c.after_output && stdout.contains("terminate") {
        wrong.push("a terminate record in the output of a failed run".into());
    }
    if !all_gone(&tag) {
        wrong.push("processes outlived the run".into());
    }
    if let Some(files) = session.map(|s| files_under(&s)).filter(|f| !f.is_empty()) {
        wrong.push(format!("Open MPI session files left: {files:?}"));
    }
    eprintln!(
        "{} {}: ended in {:.2} s ({})",
        if via == Via::Shm { "shm" } else { "mpi" },
        c.name,
        took.as_secs_f64(),
        stderr
            .lines()
            .find(|l| l.contains("error") || l.contains("snet:"))
            .unwrap_or("")
    );
    if wrong.is_empty() {
        Ok(())
    } else {
        Err(format!("{}: {}\n{stderr}", c.name, wrong.join("; ")))
    }
}

/// Node 0 killed mid-run (SIGKILL): every other node ends soon after, and
/// nothing is left.
fn node_0_killed(via: Via, exes: &[(&str, PathBuf)]) -> Result<(), String> {
    let exe = &exes.iter().find(|(p, _)| *p == "slow").expect("slow").1;
    let inp = exe.with_file_name("input-slow.xml");
    std::fs::write(&inp, k_records(2000)).unwrap();
    let tag = format!("faults-{}-node0-{}", std::process::id(), via as u8);
    let tag_var = format!("SNET_TEST_RUN={tag}");
    let mut cmd = match via {
        Via::Shm => {
            let mut cmd = Command::new(exe);
            cmd.args(["--nodes", "3", "--transport", "shm"]);
            cmd
        }
        Via::Mpi => {
            let mut cmd = mpirun(3, false);
            cmd.arg(exe);
            cmd
        }
    };
    cmd.env("SNET_TEST_RUN", &tag).arg("-i").arg(&inp);
    let shm_before = dev_shm();
    let victim_env = match via {
        // Node 0 is the process the user started: the one without a node number.
        Via::Shm => None,
        Via::Mpi => Some("OMPI_COMM_WORLD_RANK=0"),
    };
    let start = Instant::now();
    let k = kill_mid_run(cmd, || match victim_env {
        Some(v) => pid_with_env(&[&tag_var, v]),
        None => shm_node_pid(&tag_var, 0),
    });
    let mut wrong = Vec::new();
    if k.status.success() {
        wrong.push("status 0".to_string());
    }
    if k.rest.iter().any(|l| l.contains("terminate")) {
        wrong.push("a terminate record after node 0 died".into());
    }
    if !all_gone(&tag) {
        wrong.push("processes outlived node 0".into());
    }
    if via == Via::Shm && dev_shm() != shm_before {
        wrong.push("files left in /dev/shm".into());
    }
    eprintln!(
        "{} node 0 killed: everything gone {:.2} s after the start",
        if via == Via::Shm { "shm" } else { "mpi" },
        start.elapsed().as_secs_f64()
    );
    if wrong.is_empty() {
        Ok(())
    } else {
        Err(format!("node 0 killed: {}\n{}", wrong.join("; "), k.stderr))
    }
}

/// Every case of `cases` and node 0's death, side by side; fails listing
/// every case that went wrong.
fn run_matrix(via: Via, cases: Vec<Case>, exes: &[(&str, PathBuf)]) {
    let errors: Vec<String> = std::thread::scope(|s| {
        let mut hs: Vec<_> = cases
            .iter()
            .enumerate()
            .map(|(n, c)| s.spawn(move || run_case(via, c, exes, n)))
            .collect();
        hs.push(s.spawn(|| node_0_killed(via, exes)));
        hs.into_iter()
            .filter_map(|h| h.join().expect("case thread").err())
            .collect()
    });
    assert!(errors.is_empty(), "{}", errors.join("\n\n"));
}

#[test]
fn every_fault_ends_a_shm_run_naming_the_node_and_leaves_nothing() {
    let dir = scratch("faults-shm");
    let exes = build_all(&dir);
    let mut cases = matrix(Via::Shm);
    let c = case(
        "box calls _exit(0)",
        "quit",
        &["node 1 stopped unexpectedly (exited with status 0 before its run ended)"],
    );
    cases.push(c);
    // The arena full: a field that does not fit goes through the rings
    // instead (not a failure).
    for fields in ["single-copy", "zero-copy"] {
        let mut c = case("the field arena full", "big", &[]);
        c.env.push(("SNET_SHM_ARENA", "1048576"));
        c.args.extend(["--fields", fields]);
        c.succeeds = true;
        cases.push(c);
    }
    run_matrix(Via::Shm, cases, &exes);
}

#[test]
fn every_fault_ends_an_mpi_job_naming_the_rank_and_leaves_nothing() {
    assert!(
        have_mpirun(),
        "mpirun not found: scripts/setup.sh installs Open MPI"
    );
    let dir = scratch("faults-mpi");
    let exes = build_all(&dir);
    let mut cases = matrix(Via::Mpi);
    // Without exit handlers the rank cannot say which box: mpirun names it.
    cases.push(case("box calls _exit(0)", "quit", &["rank 1"]));
    run_matrix(Via::Mpi, cases, &exes);
}
