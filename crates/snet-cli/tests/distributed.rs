//! Distributed runs on the loopback transport that the conformance corpus
//! cannot check by output alone: large fields crossing nodes, fields that
//! flow around remote boxes without being fetched (`--stats` proves it),
//! every node's field store empty at the end, and faults.

mod common;

use common::*;

#[test]
fn a_64_mib_field_crosses_nodes_intact_and_is_fetched_only_where_needed() {
    let dir = scratch("big");
    let exe = build(&dir, BIG_PROG);
    let r = run(
        &exe,
        BIG_INPUT,
        &[
            "--nodes",
            "4",
            "--transport",
            "loopback",
            "-w",
            "2",
            "--stats",
        ],
    );
    check_big_field_run(&r);
}

#[test]
fn input_fields_flow_around_remote_boxes_without_being_fetched() {
    let dir = scratch("around");
    let exe = build(
        &dir,
        r#"
net around {
  box touch((<k>) -> (<k>));
} connect (touch @ 1) .. (touch @ 2) .. (touch @ 1);
"#,
    );
    let text = vec!["x"; 150_000].join(",");
    let mut input = String::from("<?xml version=\"1.0\" ?>\n");
    for k in 0..20 {
        input.push_str(&format!(
            "<record type=\"data\"><field label=\"payload\">(char[150000]){text}</field><tag label=\"k\">{k}</tag></record>\n"
        ));
    }
    input.push_str("<record type=\"terminate\" />\n");
    let r = run(
        &exe,
        &input,
        &["--nodes", "3", "--transport", "loopback", "--stats"],
    );
    assert!(r.ok, "{}", r.stderr);
    assert_eq!(
        r.stdout.matches(&text).count(),
        20,
        "every payload comes back"
    );
    for k in 0..20 {
        assert!(r
            .stdout
            .contains(&format!("<tag label=\"k\">{}</tag>", k + 3)));
    }
    let stats = node_stats(&r.stderr);
    for s in &stats {
        assert_eq!(s["fetched"], 0, "a field was fetched: {}", r.stderr);
    }
    // The fields went out by reference: far fewer bytes than 20 x 300 KB.
    assert!(stats[0]["bytes sent"] < 100_000, "{}", r.stderr);
    assert!(stats[0]["exported"] >= 20, "{}", r.stderr);
    assert_stores_empty(&stats);
}

#[test]
fn items_sent_to_another_node_stay_bounded_without_an_input_limit() {
    // Back-pressure across nodes: node 0 admits input, and a box call on
    // node 0 goes on emitting, only while its backlog plus the items node 1
    // has not acknowledged (each weighing 1/8) stay under 1024, so however
    // far node 1 falls behind, node 0 never has much more than 8192
    // unacknowledged. Without
    // the admission rule, node 0 sends nearly all the input records at
    // once; without the suspension rule, the burst's call emits nearly all
    // its records at once (`check_backpressure`).
    check_backpressure(
        "backpressure",
        &["--nodes", "2", "--transport", "loopback", "-w", "2"],
    );
}

#[test]
fn every_field_by_reference_still_gives_the_same_answer() {
    // The same program with fields inline and by reference: same output.
    let dir = scratch("byref");
    let exe = build(&dir, BIG_PROG);
    let mut input = String::from("<?xml version=\"1.0\" ?>\n");
    for s in 0..6 {
        input.push_str(&format!(
            "<record type=\"data\"><tag label=\"mib\">1</tag><tag label=\"seed\">{s}</tag><tag label=\"k\">{s}</tag></record>\n"
        ));
    }
    input.push_str("<record type=\"terminate\" />\n");
    let one = run(&exe, &input, &["--nodes", "4", "--transport", "loopback"]);
    let four = run(
        &exe,
        &input,
        &[
            "--nodes",
            "4",
            "--transport",
            "loopback",
            "--inline-fields",
            "0",
            "--stats",
        ],
    );
    assert!(one.ok && four.ok, "{}\n{}", one.stderr, four.stderr);
    let sort = |s: &str| {
        let mut v: Vec<String> = s.lines().map(str::to_string).collect();
        v.sort();
        v
    };
    assert_eq!(sort(&one.stdout), sort(&four.stdout));
    for s in 0..6 {
        assert!(one
            .stdout
            .contains(&format!("<tag label=\"sum\">{}</tag>", checksum(1, s))));
    }
    assert_stores_empty(&node_stats(&four.stderr));
}

#[test]
fn a_pointer_field_cannot_leave_its_node() {
    let dir = scratch("pointer");
    let exe = build(
        &dir,
        r#"
net ptr {
  box point((<k>) -> (p, <k>));
  box touch((<k>) -> (<k>));
} connect point .. (touch @ 1);
"#,
    );
    let input =
        "<record type=\"data\"><tag label=\"k\">1</tag></record><record type=\"terminate\" />";
    let r = run(&exe, input, &["--nodes", "2", "--transport", "loopback"]);
    assert!(!r.ok);
    assert!(r.stderr.contains("CTYPE_pointer"), "{}", r.stderr);
    assert!(r.stderr.contains("field `p`"), "{}", r.stderr);
    assert!(!r.stderr.contains("panicked"), "{}", r.stderr);
}

#[test]
fn a_box_error_on_a_remote_node_names_the_node_and_the_box() {
    let dir = scratch("fault");
    let exe = build(&dir, FRAGILE_PROG);
    let input = k_records(10);
    for _ in 0..5 {
        let r = run(
            &exe,
            &input,
            &["--nodes", "3", "--transport", "loopback", "-w", "2"],
        );
        assert!(!r.ok);
        assert!(r.stderr.contains("node 2"), "{}", r.stderr);
        assert!(r.stderr.contains("fragile"), "{}", r.stderr);
        assert!(
            !r.stdout.contains("terminate"),
            "a failed run must not look complete"
        );
    }
}

#[test]
fn static_placement_on_a_missing_node_is_reported_before_reading() {
    let dir = scratch("missing");
    let exe = build(
        &dir,
        r#"
net missing {
  box touch((<k>) -> (<k>));
} connect touch .. (touch @ 9);
"#,
    );
    // Malformed input: the placement error must come first.
    let r = run(
        &exe,
        "<record type=\"data\"><tag label=",
        &["--nodes", "4", "--transport", "loopback"],
    );
    assert!(!r.ok);
    assert!(r.stderr.contains("prog.snet:4:"), "{}", r.stderr);
    assert!(r.stderr.contains("node 9"), "{}", r.stderr);
}

/// A box that passes `<k>` on, napping 1 ms a record (so that node 1's
/// inboxes fill up); on input `k == SNET_TEST_AT` it first waits until the
/// run's output file (`SNET_TEST_OUT`) holds a data record, and if none
/// comes within 30 s it ends its node (exit 4) saying so.
const PROBE_BOX: &str = r#"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "C4SNet.h"

static int output_begun(const char *path)
{
    char buf[4096];
    FILE *f = fopen(path, "r");
    size_t n;
    int seen = 0;
    if (f == NULL) return 0;
    n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = 0;
    seen = strstr(buf, "type=\"data\"") != NULL;
    fclose(f);
    return seen;
}

void *probe(void *hnd, int k)
{
    const char *at = getenv("SNET_TEST_AT");
    const char *out = getenv("SNET_TEST_OUT");
    usleep(1000);
    if (at != NULL && out != NULL && k == atoi(at)) {
        int i;
        for (i = 0; i < 30000 && !output_begun(out); i++) usleep(1000);
        if (!output_begun(out)) {
            fprintf(stderr, "probe: no output record before input record %d\n", k);
            exit(4);
        }
    }
    C4SNetOut(hnd, 1, k);
    return hnd;
}
"#;

/// A deterministic split around a placement on node 1 writes its output
/// as node 1's replicas make it, not in a burst at the end: node 1's box
/// for the last input record (`k = 199`, replica `c = 3`) waits until
/// node 0 has written an output record. Before, node 1's worker ran one
/// replica's box through its whole backlog (the licences of the other
/// replicas, delivered from node 0, waited in the injector, which a worker
/// looks at only when its own queue is empty), and the collector could
/// write nothing before the replica holding record 0 ran: at one worker
/// the box waited for ever (here: 30 s, then the node ended). With
/// `--on-node-loss fail` and `respawn`, on shm and loopback, 1/2/8
/// workers.
#[test]
fn a_deterministic_split_around_a_placement_writes_its_output_as_it_goes() {
    let (dir, exe) = built_with_box(
        "det-stream",
        PROBE_BOX,
        "net stream { box probe((<k>) -> (<k>)); }\n\
         connect [{<k>} -> {<k>, <c = k % 4>}] .. (probe @ 1) !! <c>;\n",
    );
    let runs: [(&str, &str, &str); 7] = [
        ("shm", "fail", "1"),
        ("shm", "fail", "2"),
        ("shm", "fail", "8"),
        ("shm", "respawn", "1"),
        ("shm", "respawn", "2"),
        ("shm", "respawn", "8"),
        ("loopback", "fail", "1"),
    ];
    for (i, (transport, loss, workers)) in runs.into_iter().enumerate() {
        let out = dir.join(format!("out-{i}.xml"));
        let _ = std::fs::remove_file(&out);
        let mut cmd = std::process::Command::new(&exe);
        cmd.args(["--nodes", "2", "--transport", transport])
            .env("SNET_TEST_AT", "199")
            .env("SNET_TEST_OUT", &out);
        let r = run_with(
            cmd,
            &exe,
            &k_records(200),
            &[
                "--on-node-loss",
                loss,
                "-w",
                workers,
                "-o",
                out.to_str().unwrap(),
            ],
        );
        let what = format!("{transport}, {loss}, {workers} workers");
        assert!(r.ok, "{what}: {}", r.stderr);
        let ks = k_tags(&std::fs::read_to_string(&out).unwrap());
        assert_eq!(ks, (0..200).collect::<Vec<_>>(), "{what}");
    }
}

/// A box of a farm over two nodes (`pace !@ <n>`, record `k` on node
/// `k % 2`): on node 1 (odd `k`) it records `k` in the file
/// `SNET_TEST_MARK` (written aside and renamed, so a reader sees a whole
/// number); on node 0 (even `k`) it first waits until node 1 has
/// called it for `k - 1`, and if that does not happen within 30 s it ends
/// its node (exit 4) saying so.
const PACE_BOX: &str = r#"
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include "C4SNet.h"

static int seen(const char *mark)
{
    int k = -1;
    FILE *f = fopen(mark, "r");
    if (f == NULL) return -1;
    if (fscanf(f, "%d", &k) != 1) k = -1;
    fclose(f);
    return k;
}

void *pace(void *hnd, int k)
{
    const char *mark = getenv("SNET_TEST_MARK");
    char tmp[4096];
    if (k % 2 == 1) {
        FILE *f;
        snprintf(tmp, sizeof tmp, "%s.%d", mark, (int)getpid());
        f = fopen(tmp, "w");
        fprintf(f, "%d\n", k);
        fclose(f);
        rename(tmp, mark);
    } else {
        int i;
        for (i = 0; i < 30000 && seen(mark) < k - 1; i++) usleep(1000);
        if (seen(mark) < k - 1) {
            fprintf(stderr, "pace: node 1 never called for record %d\n", k - 1);
            exit(4);
        }
    }
    C4SNetOut(hnd, 1, k);
    return hnd;
}
"#;

/// A farm's split on node 0 feeds the local replica and node 1's in one
/// task: node 1's records go out before node 0 runs its own replica's
/// calls, so each node's share of a batch is worked on side by side (node
/// 0's box for record `k` waits until node 1 has begun record `k - 1`,
/// which the same batch brought). Before, the worker walked into the
/// local box first and sent node 1's records only when the chain of
/// tasks ended, after all of node 0's calls of the batch: the box here
/// waited for ever (30 s, then the node ended), and `bench/distfarm`'s
/// node 1 started 25 ms late and waited again at every batch (shm 1.06x
/// one node's time, now 1.01-1.02x). One worker a node (more workers let
/// another worker's chain send them), shm and loopback.
#[test]
fn a_split_sends_another_nodes_records_before_running_its_own() {
    let (dir, exe) = built_with_box(
        "split-first",
        PACE_BOX,
        "net farm { box pace((<k>) -> (<k>)); }\n\
         connect [{<k>} -> {<k>, <n = k % 2>}] .. pace !@ <n> .. [{<n>} -> {}];\n",
    );
    // From 1, as `bench/distfarm`: a batch begins with node 1's record, so
    // the split obtains node 1's licence first and the local box's last
    // (the one a worker walks into).
    let mut input: String = (1..=400)
        .map(|k| format!("<record type=\"data\"><tag label=\"k\">{k}</tag></record>"))
        .collect();
    input.push_str("<record type=\"terminate\" />");
    for (i, (transport, loss)) in [("shm", "fail"), ("shm", "respawn"), ("loopback", "fail")]
        .into_iter()
        .enumerate()
    {
        let mark = dir.join(format!("mark-{i}"));
        let _ = std::fs::remove_file(&mark);
        let mut cmd = std::process::Command::new(&exe);
        cmd.args(["--nodes", "2", "--transport", transport])
            .env("SNET_TEST_MARK", &mark);
        let r = run_with(cmd, &exe, &input, &["--on-node-loss", loss, "-w", "1"]);
        let what = format!("{transport}, {loss}");
        assert!(r.ok, "{what}: {}", r.stderr);
        let mut ks = k_tags(&r.stdout);
        ks.sort_unstable();
        assert_eq!(ks, (1..=400).collect::<Vec<_>>(), "{what}");
    }
}

/// The values of the `<k>` tags of a record stream, in stream order.
fn k_tags(stream: &str) -> Vec<i64> {
    stream
        .split("<tag label=\"k\">")
        .skip(1)
        .map(|s| s.split('<').next().unwrap().trim().parse().unwrap())
        .collect()
}
