//! Distributed runs over shared memory (`--transport shm`): node 0 starts
//! the other node processes itself. The transport suite between real
//! processes in every notify × fields mode, a 64 MiB field in every field
//! mode (and which path it took), faults (a node killed with SIGKILL, a
//! box crashing or failing on another node), idle nodes using no CPU, and
//! nothing ever left in `/dev/shm`. The corpus over shm is in
//! `conformance.rs`.
//!
//! Every run is guarded: a run that has not ended after [`HANG`] is killed
//! and the test fails (a hang is a bug).

mod common;

use std::collections::BTreeSet;
use std::process::Command;

use common::*;

const NOTIFY: [&str; 3] = ["poll", "interrupt", "sparse"];
const FIELDS: [&str; 3] = ["chunked", "single-copy", "zero-copy"];

fn snet() -> Command {
    Command::new(env!("CARGO_BIN_EXE_snet"))
}

fn shm_args<'a>(nodes: &'a str, notify: &'a str, fields: &'a str) -> [&'a str; 8] {
    [
        "--nodes",
        nodes,
        "--transport",
        "shm",
        "--notify",
        notify,
        "--fields",
        fields,
    ]
}

/// What `/dev/shm` holds now, except Open MPI's shared-memory files
/// (`vader_segment.*`, `sm_segment.*`): MPI jobs running beside the tests
/// (another test binary, another user's run) come and go, and these runs
/// use no MPI.
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

#[test]
fn the_transport_suite_passes_between_node_processes_in_every_mode() {
    for notify in NOTIFY {
        for fields in FIELDS {
            let mut cmd = snet();
            cmd.args(["selftest", "--transport", "shm", "--nodes", "3"])
                .args(["--notify", notify, "--fields", fields]);
            let out = output_guarded(cmd);
            let stdout = String::from_utf8_lossy(&out.stdout);
            assert!(
                out.status.success(),
                "{notify} {fields}: {}{stdout}",
                String::from_utf8_lossy(&out.stderr)
            );
            for case in ["ordering", "payloads", "flow-control", "shutdown"] {
                assert!(
                    stdout.contains(&format!("3 nodes: {case} ok")),
                    "{notify} {fields}: {stdout}"
                );
            }
            // The last node kills itself (SIGKILL): the others must hear
            // of it from node 0's watcher, never hang.
            let mut cmd = snet();
            cmd.args(["selftest", "--transport", "shm", "--nodes", "3"])
                .args(["--notify", notify, "--fields", fields])
                .args(["--case", "peer-dies"]);
            let out = output_guarded(cmd);
            assert!(
                out.status.success()
                    && String::from_utf8_lossy(&out.stdout).contains("peer-dies ok"),
                "{notify} {fields}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }
}

/// The number after `what` in node `node`'s `snet: shm node K:` line.
fn shm_counter(stderr: &str, node: u32, what: &str) -> u64 {
    let line = stderr
        .lines()
        .find(|l| l.starts_with(&format!("snet: shm node {node}:")))
        .unwrap_or_else(|| panic!("no shm line for node {node}:\n{stderr}"));
    let before = line
        .split(what)
        .next()
        .filter(|b| b.len() < line.len())
        .unwrap_or_else(|| panic!("no `{what}` in {line}"));
    before
        .rsplit(|c: char| !c.is_ascii_digit())
        .find(|w| !w.is_empty())
        .and_then(|w| w.parse().ok())
        .unwrap_or_else(|| panic!("no count before `{what}` in {line}"))
}

#[test]
fn a_64_mib_field_crosses_nodes_intact_in_every_field_mode_by_its_path() {
    let dir = scratch("shm-big");
    let exe = build(&dir, BIG_PROG);
    for fields in FIELDS {
        let mut args = vec!["--stats"];
        args.extend(shm_args("4", "sparse", fields));
        let r = run(&exe, BIG_INPUT, &args);
        check_big_field_run(&r);
        // Node 1 (make) sent the field's bytes to node 2 (check) once, by
        // the mode's path: through the rings, copied once into the arena,
        // or as an offset of the block the box allocated it in.
        let (chunked, copied, zero) = (
            shm_counter(&r.stderr, 1, " chunked"),
            shm_counter(&r.stderr, 1, " single-copy"),
            shm_counter(&r.stderr, 1, " zero-copy"),
        );
        let want = match fields {
            "chunked" => (1, 0, 0),
            "single-copy" => (0, 1, 0),
            _ => (0, 0, 1),
        };
        assert_eq!((chunked, copied, zero), want, "{fields}:\n{}", r.stderr);
    }
}

#[test]
fn a_node_killed_mid_run_ends_the_run_naming_it_and_leaves_nothing_behind() {
    let dir = scratch("shm-kill");
    let exe = build(
        &dir,
        r#"
net kill {
  box slow((<k>) -> (<k>));
} connect slow @ 1;
"#,
    );
    let inp = dir.join("input.xml");
    std::fs::write(&inp, k_records(2000)).unwrap();
    for fields in FIELDS {
        let shm_before = dev_shm();
        let tag = format!("shm-kill-{}-{fields}", std::process::id());
        let mut cmd = Command::new(&exe);
        cmd.env("SNET_TEST_RUN", &tag)
            .arg("-i")
            .arg(&inp)
            .args(shm_args("3", "sparse", fields));
        let tag_var = format!("SNET_TEST_RUN={tag}");
        let Killed {
            status,
            stderr,
            rest,
        } = kill_mid_run(cmd, || shm_node_pid(&tag_var, 1));
        assert!(!status.success(), "{stderr}");
        assert!(
            stderr.contains("node 1") && stderr.contains("signal 9"),
            "{fields}: {stderr}"
        );
        assert!(!stderr.contains("panicked"), "{stderr}");
        assert!(
            !rest.iter().any(|l| l.contains("terminate")),
            "a killed run must not look complete"
        );
        // Every node process is gone, and nothing was left in /dev/shm.
        assert_eq!(tagged_processes(&tag), 0, "node processes outlived the run");
        assert_eq!(dev_shm(), shm_before, "files left in /dev/shm");
    }
}

#[test]
fn a_box_crashing_on_node_1_ends_the_run_naming_the_node_and_the_box() {
    let dir = scratch("shm-crash");
    let exe = build(
        &dir,
        r#"
net crashing {
  box crash((<k>) -> (<k>));
} connect crash @ 1;
"#,
    );
    for notify in NOTIFY {
        let r = run(&exe, &k_records(10), &shm_args("2", notify, "zero-copy"));
        assert!(!r.ok);
        assert!(
            r.stderr
                .contains("snet: node 1: box `crash` crashed (signal SIGSEGV)"),
            "{notify}: {}",
            r.stderr
        );
        assert!(!r.stdout.contains("terminate"), "{}", r.stdout);
    }
}

#[test]
fn a_box_error_on_node_2_ends_the_run_naming_the_node_and_the_box() {
    let dir = scratch("shm-fragile");
    let exe = build(&dir, FRAGILE_PROG);
    for fields in FIELDS {
        let mut args = vec!["-w", "2"];
        args.extend(shm_args("3", "interrupt", fields));
        let r = run(&exe, &k_records(10), &args);
        assert!(!r.ok);
        assert!(r.stderr.contains("error: node 2"), "{}", r.stderr);
        assert!(r.stderr.contains("fragile"), "{}", r.stderr);
        assert!(!r.stderr.contains("panicked"), "{}", r.stderr);
        assert!(!r.stdout.contains("terminate"), "{}", r.stdout);
    }
}

/// The `(node, incarnation, exec'd, named)` tags of `whoami`'s outputs,
/// one per record.
fn whoami(stdout: &str) -> Vec<[i64; 4]> {
    let tag = |rec: &str, label: &str| -> i64 {
        let open = format!("<tag label=\"{label}\">");
        let at = rec.find(&open).expect(label) + open.len();
        rec[at..].split('<').next().unwrap().trim().parse().unwrap()
    };
    stdout
        .split("<record")
        .filter(|r| r.contains("label=\"named\""))
        .map(|r| ["node", "inc", "execd", "named"].map(|l| tag(r, l)))
        .collect()
}

/// Node 0 forks its node processes while it has one thread (a built
/// program does, before its engine starts): a forked node's start-up
/// environment is node 0's (no `SNET_SHM_NODE` in `/proc/PID/environ`),
/// yet its boxes read their node's variables as an exec'd node's do, and
/// it is named `snet-node-K`. `SNET_SHM_EXEC=1` asks for exec instead.
#[test]
fn node_processes_are_forked_unless_exec_is_asked_for_and_look_alike_to_boxes() {
    let dir = scratch("shm-fork");
    let exe = build(
        &dir,
        r#"
net fork {
  box whoami((<k>) -> (<k>,<node>,<inc>,<execd>,<named>));
} connect [{<k>} -> {<k>,<n=k%2+1>}] .. whoami !@ <n>;
"#,
    );
    for (exec, execd) in [("0", 0), ("1", 1)] {
        let mut cmd = Command::new(&exe);
        cmd.env("SNET_SHM_EXEC", exec);
        let r = run_with(
            cmd,
            &exe,
            &k_records(8),
            &shm_args("3", "sparse", "zero-copy"),
        );
        assert!(r.ok, "{}", r.stderr);
        let mut seen = whoami(&r.stdout);
        seen.sort();
        let want: Vec<[i64; 4]> = [1, 1, 1, 1, 2, 2, 2, 2].map(|n| [n, 0, execd, 1]).into();
        assert_eq!(seen, want, "SNET_SHM_EXEC={exec}:\n{}", r.stdout);
    }
}

#[test]
fn items_sent_to_another_node_stay_bounded_without_an_input_limit() {
    // As on loopback (distributed.rs): the shm ring's own bound holds
    // nothing back, since what node 0's output manager cannot send yet
    // waits in its outbound queue, counted as unacknowledged.
    let mut args = vec!["-w", "2"];
    args.extend(shm_args("2", "sparse", "zero-copy"));
    check_backpressure("shm-backpressure", &args);
}

/// The CPU time of each node process but node 0, from node 0's
/// `snet: cpu time:` line.
fn node_cpu(stderr: &str) -> Vec<f64> {
    let line = stderr
        .lines()
        .find(|l| l.starts_with("snet: cpu time:"))
        .unwrap_or_else(|| panic!("no cpu line:\n{stderr}"));
    line.split(',')
        .map(|p| {
            p.trim_end_matches(" s")
                .rsplit(' ')
                .next()
                .and_then(|w| w.parse().ok())
                .unwrap_or_else(|| panic!("bad cpu line {line}"))
        })
        .collect()
}

#[test]
fn idle_nodes_use_next_to_no_cpu_unless_they_poll() {
    let dir = scratch("shm-idle");
    // Node 0 works for 2 s (100 records, 20 ms each); nodes 1-3 have
    // nothing to do all that time.
    let exe = build(
        &dir,
        r#"
net idle {
  box slow((<k>) -> (<k>));
} connect slow;
"#,
    );
    let input = k_records(100);
    let mut total = std::collections::HashMap::new();
    for notify in NOTIFY {
        let mut args = vec!["--stats", "-w", "1"];
        args.extend(shm_args("4", notify, "zero-copy"));
        let r = run(&exe, &input, &args);
        assert!(r.ok, "{}", r.stderr);
        let cpu = node_cpu(&r.stderr);
        assert_eq!(cpu.len(), 3, "{}", r.stderr);
        // Every node process reports its own CPU time and page faults.
        let mut reported: Vec<u32> = r
            .stderr
            .lines()
            .filter_map(|l| l.strip_prefix("snet: process of node "))
            .filter(|l| l.contains(" minor page faults, "))
            .filter_map(|l| l.split(':').next()?.parse().ok())
            .collect();
        reported.sort_unstable();
        assert_eq!(reported, [0, 1, 2, 3], "{}", r.stderr);
        if notify != "poll" {
            // Start-up (mapping, compiling nothing: built program) and
            // shutdown only: far below the 2 s they sat idle.
            for c in &cpu {
                assert!(
                    *c < 0.4,
                    "{notify}: an idle node used {c} s of CPU:\n{}",
                    r.stderr
                );
            }
        }
        total.insert(notify, cpu.iter().sum::<f64>());
    }
    // The measurement can tell: polling nodes burn the CPU the others save.
    assert!(
        total["poll"] > 2.0 * total["sparse"].max(total["interrupt"]),
        "{total:?}"
    );
}
