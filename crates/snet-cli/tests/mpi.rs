//! Distributed runs under `mpirun` (the MPI transport): the transport
//! conformance suite (also with payloads cut into many chunks), a 64 MiB
//! field crossing ranks, and faults (a box error on node 2, a box crashing
//! on node 1, a rank killed mid-run, a static placement on a missing node),
//! and the worked example.
//! The corpus under `mpirun` is in `conformance.rs`.
//!
//! Every run is guarded: a run that has not ended after [`HANG`] is killed
//! and the test fails as a hang. That bound only separates "ends" from
//! "hangs"; no test measures how fast anything is.

mod common;

use std::path::Path;
use std::process::{Command, Output};

use common::*;

fn require_mpirun() {
    assert!(
        have_mpirun(),
        "mpirun not found: scripts/setup.sh installs Open MPI"
    );
}

fn selftest(np: u32, tcp: bool, args: &[&str]) -> Output {
    let mut cmd = mpirun(np, tcp);
    cmd.arg(env!("CARGO_BIN_EXE_snet"))
        .arg("selftest")
        .args(args);
    output_guarded(cmd)
}

#[test]
fn the_transport_conformance_suite_passes_on_mpi() {
    require_mpirun();
    for (np, tcp) in [(2, false), (3, false), (4, false), (2, true)] {
        let out = selftest(np, tcp, &[]);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "np {np} tcp {tcp}:\n{stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        for case in ["ordering", "payloads", "flow-control", "shutdown"] {
            assert!(
                stdout.contains(&format!("mpi, {np} nodes: {case} ok")),
                "np {np} tcp {tcp}: {case} not reported ok:\n{stdout}"
            );
        }
    }
}

#[test]
fn payloads_cut_into_many_chunks_arrive_intact_on_mpi() {
    // A payload is cut into messages of at most snet_mpi::CHUNK (1 GiB)
    // bytes, far more than any test sends: with SNET_MPI_CHUNK the same
    // code cuts the suite's 1 MiB, 16 MiB and 64 MiB payloads into many
    // chunks of an odd size (unaligned offsets, a short last chunk), over
    // shared memory and over TCP.
    require_mpirun();
    for tcp in [false, true] {
        let mut cmd = mpirun(2, tcp);
        cmd.env("SNET_MPI_CHUNK", "100003")
            .arg(env!("CARGO_BIN_EXE_snet"))
            .args(["selftest", "--case", "payloads", "--case", "shutdown"]);
        let out = output_guarded(cmd);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "tcp {tcp}:\n{stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        for case in ["payloads", "shutdown"] {
            assert!(
                stdout.contains(&format!("mpi, 2 nodes: {case} ok")),
                "tcp {tcp}: {case} not reported ok:\n{stdout}"
            );
        }
    }
}

#[test]
fn a_dying_rank_ends_the_mpi_job_naming_it() {
    // The transport suite's `peer-dies` case: the last rank kills itself
    // (SIGKILL); mpirun must end the job, nonzero, naming the rank.
    require_mpirun();
    let out = selftest(3, false, &["--case", "peer-dies"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(stderr.contains("rank 2"), "{stderr}");
}

fn mpi_run(exe: &Path, np: u32, input: &str, args: &[&str]) -> Run {
    // Through the guard, started under mpirun.
    let mut cmd = mpirun(np, false);
    cmd.arg(exe);
    run_with(cmd, exe, input, args)
}

#[test]
fn a_64_mib_field_crosses_ranks_intact_and_is_fetched_only_where_needed() {
    // make on rank 1, touch on 3, check on 2: only rank 2 fetches the
    // field, straight from rank 1's array into its own.
    require_mpirun();
    let dir = scratch("mpi-big");
    let exe = build(&dir, BIG_PROG);
    check_big_field_run(&mpi_run(&exe, 4, BIG_INPUT, &["-w", "2", "--stats"]));
}

#[test]
fn a_box_error_on_rank_2_ends_the_job_naming_the_node_and_the_box() {
    require_mpirun();
    let dir = scratch("mpi-fault");
    let exe = build(&dir, FRAGILE_PROG);
    let input = k_records(10);
    for _ in 0..3 {
        let r = mpi_run(&exe, 3, &input, &["-w", "2"]);
        assert!(!r.ok);
        assert!(r.stderr.contains("error: node 2"), "{}", r.stderr);
        assert!(r.stderr.contains("fragile"), "{}", r.stderr);
        assert!(!r.stderr.contains("panicked"), "{}", r.stderr);
        assert!(
            !r.stdout.contains("terminate"),
            "a failed run must not look complete"
        );
    }
}

#[test]
fn static_placement_on_node_9_of_4_is_reported_before_reading() {
    require_mpirun();
    let dir = scratch("mpi-missing");
    let exe = build(
        &dir,
        r#"
net missing {
  box touch((<k>) -> (<k>));
} connect touch .. (touch @ 9);
"#,
    );
    // Malformed input: the placement error must come first.
    let r = mpi_run(&exe, 4, "<record type=\"data\"><tag label=", &[]);
    assert!(!r.ok);
    assert!(r.stderr.contains("prog.snet:4:"), "{}", r.stderr);
    assert!(r.stderr.contains("node 9"), "{}", r.stderr);
    assert!(r.stderr.contains("4 node"), "{}", r.stderr);
}

#[test]
fn a_rank_killed_mid_run_ends_the_job_naming_it() {
    require_mpirun();
    let dir = scratch("mpi-kill");
    let exe = build(
        &dir,
        r#"
net kill {
  box slow((<k>) -> (<k>));
} connect slow @ 1;
"#,
    );
    let input = k_records(2000);
    let inp = dir.join("input.xml");
    std::fs::write(&inp, input).unwrap();
    let tag = format!("kill-{}", std::process::id());
    let mut cmd = mpirun(3, false);
    cmd.env("SNET_TEST_RUN", &tag).arg(&exe).arg("-i").arg(&inp);
    let tag_var = format!("SNET_TEST_RUN={tag}");
    let Killed {
        status,
        stderr,
        rest,
    } = kill_mid_run(cmd, || pid_with_env(&[&tag_var, "OMPI_COMM_WORLD_RANK=1"]));
    assert!(!status.success(), "{stderr}");
    assert!(stderr.contains("rank 1"), "{stderr}");
    assert!(
        !rest.iter().any(|l| l.contains("terminate")),
        "a killed run must not look complete"
    );
}

#[test]
fn the_distributed_example_gives_the_same_answer_under_mpirun_as_in_one_process() {
    require_mpirun();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/distributed");
    let dir = scratch("mpi-example");
    let exe = dir.join("primes");
    let out = Command::new(env!("CARGO_BIN_EXE_snet"))
        .arg("build")
        .arg(root.join("primes.snet"))
        .arg(root.join("count.c"))
        .arg("-o")
        .arg(&exe)
        .output()
        .expect("snet build");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let input = std::fs::read_to_string(root.join("input.xml")).unwrap();
    let mpi = mpi_run(&exe, 4, &input, &["--stats"]);
    let local = run(&exe, &input, &["--nodes", "4", "--transport", "loopback"]);
    assert!(mpi.ok && local.ok, "{}\n{}", mpi.stderr, local.stderr);
    let sorted = |s: &str| {
        let mut v: Vec<String> = s.lines().map(str::to_string).collect();
        v.sort();
        v
    };
    assert_eq!(sorted(&mpi.stdout), sorted(&local.stdout));
    // pi(2,000,000) = 148,933.
    let total: u64 = mpi
        .stdout
        .split("<tag label=\"primes\">")
        .skip(1)
        .map(|s| s.split('<').next().unwrap().parse::<u64>().unwrap())
        .sum();
    assert_eq!(total, 148_933);
    // Every rank counted its five ranges: each received work.
    let stats = node_stats(&mpi.stderr);
    assert_eq!(stats.len(), 4);
    for s in &stats[1..] {
        assert!(s["msgs received"] > 0, "{}", mpi.stderr);
    }
}

#[test]
fn a_box_crashing_on_rank_1_ends_the_job_naming_the_node_and_the_box() {
    require_mpirun();
    let dir = scratch("mpi-crash");
    let exe = build(
        &dir,
        r#"
net crashing {
  box crash((<k>) -> (<k>));
} connect crash @ 1;
"#,
    );
    let input = k_records(10);
    let r = mpi_run(&exe, 2, &input, &[]);
    assert!(!r.ok);
    assert!(
        r.stderr
            .contains("snet: node 1: box `crash` crashed (signal SIGSEGV)"),
        "{}",
        r.stderr
    );
    assert!(
        !r.stdout.contains("terminate"),
        "a crashed run must not look complete"
    );
}
