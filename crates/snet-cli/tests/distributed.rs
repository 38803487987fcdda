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
