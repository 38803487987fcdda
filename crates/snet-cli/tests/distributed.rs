//! Distributed runs on the loopback transport that the conformance corpus
//! cannot check by output alone: large fields crossing nodes, fields that
//! flow around remote boxes without being fetched (`--stats` proves it),
//! every node's field store empty at the end, and faults.

use std::path::{Path, PathBuf};
use std::process::Command;

const BOXES: &str = r#"
#include <stdlib.h>
#include "C4SNet.h"

/* A field of `size` bytes (given in MiB by the tag), a pattern of the seed. */
void *make(void *hnd, int mib, int seed)
{
    size_t n = (size_t)mib << 20;
    unsigned char *d;
    c4snet_data_t *f = C4SNetAlloc(CTYPE_uchar, n, (void **)&d);
    unsigned x = (unsigned)seed;
    for (size_t i = 0; i < n; i++) {
        x = x * 1103515245u + 12345u;
        d[i] = (unsigned char)(x >> 16);
    }
    C4SNetOut(hnd, 1, f, seed);
    return hnd;
}

/* A checksum of the whole field, which it passes on. */
void *check(void *hnd, c4snet_data_t *big)
{
    unsigned char *d = C4SNetGetData(big);
    size_t n = C4SNetArraySize(big);
    unsigned long h = 1469598103934665603ul;
    for (size_t i = 0; i < n; i++) {
        h = (h ^ d[i]) * 1099511628211ul;
    }
    C4SNetOut(hnd, 1, big, (int)(h & 0x7fffffff), (int)(n >> 20));
    return hnd;
}

/* Works on tags only: fields flow around it. */
void *touch(void *hnd, int k)
{
    C4SNetOut(hnd, 1, k + 1);
    return hnd;
}

/* A pointer field: must not leave its node. */
void *point(void *hnd, int k)
{
    void *p = hnd;
    C4SNetOut(hnd, 1, C4SNetCreate(CTYPE_pointer, 1, &p), k);
    return hnd;
}

/* Fails on the record with k == 3. */
void *fragile(void *hnd, int k)
{
    if (k == 3) {
        C4SNetOut(hnd, 7, k);
        return hnd;
    }
    C4SNetOut(hnd, 1, k);
    return hnd;
}
"#;

fn checksum(mib: usize, seed: u32) -> i64 {
    let mut x = seed;
    let mut h: u64 = 1469598103934665603;
    for _ in 0..mib << 20 {
        x = x.wrapping_mul(1103515245).wrapping_add(12345);
        h = (h ^ u64::from((x >> 16) as u8)).wrapping_mul(1099511628211);
    }
    (h & 0x7fff_ffff) as i64
}

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("snet-dist-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&d).expect("scratch dir");
    d
}

/// Builds `prog` (with the boxes above) in `dir`; returns the executable.
fn build(dir: &Path, prog: &str) -> PathBuf {
    std::fs::write(dir.join("prog.snet"), prog).unwrap();
    std::fs::write(dir.join("boxes.c"), BOXES).unwrap();
    let exe = dir.join("prog");
    let out = Command::new(env!("CARGO_BIN_EXE_snet"))
        .arg("build")
        .arg(dir.join("prog.snet"))
        .arg(dir.join("boxes.c"))
        .arg("-o")
        .arg(&exe)
        .output()
        .expect("run snet build");
    assert!(
        out.status.success(),
        "snet build failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    exe
}

struct Run {
    ok: bool,
    stdout: String,
    stderr: String,
}

fn run(exe: &Path, input: &str, args: &[&str]) -> Run {
    let dir = exe.parent().unwrap();
    let inp = dir.join("input.xml");
    std::fs::write(&inp, input).unwrap();
    let out = Command::new(exe)
        .arg("-i")
        .arg(&inp)
        .args(args)
        .output()
        .expect("run program");
    Run {
        ok: out.status.success(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Per node: the numbers of its `--stats` line, by name (the line lists
/// them in this order; see `Stats`'s `Display`).
fn node_stats(stderr: &str) -> Vec<std::collections::HashMap<String, u64>> {
    const KEYS: [&str; 14] = [
        "node",
        "input",
        "output",
        "entities",
        "steals",
        "msgs sent",
        "bytes sent",
        "msgs received",
        "bytes received",
        "fetched",
        "field bytes",
        "exported",
        "exports",
        "proxies",
    ];
    stderr
        .lines()
        .filter(|l| l.starts_with("snet: node "))
        .map(|line| {
            let nums: Vec<u64> = line
                .split(|c: char| !c.is_ascii_digit())
                .filter_map(|w| w.parse().ok())
                .collect();
            assert_eq!(nums.len(), KEYS.len(), "stats line: {line}");
            KEYS.iter().map(|k| k.to_string()).zip(nums).collect()
        })
        .collect()
}

fn assert_stores_empty(stats: &[std::collections::HashMap<String, u64>]) {
    for s in stats {
        assert_eq!(
            s.get("exports"),
            Some(&0),
            "node {:?}: exports left: {s:?}",
            s.get("node")
        );
        assert_eq!(
            s.get("proxies"),
            Some(&0),
            "node {:?}: proxies left: {s:?}",
            s.get("node")
        );
    }
}

const BIG_PROG: &str = r#"
net big {
  box make((<mib>, <seed>) -> (big, <seed>));
  box check((big) -> (big, <sum>, <size>));
  box touch((<k>) -> (<k>));
} connect (make @ 1) .. (touch @ 3) .. (check @ 2) .. [{big, <sum>} -> {<sum>}];
"#;

#[test]
fn a_64_mib_field_crosses_nodes_intact_and_is_fetched_only_where_needed() {
    let dir = scratch("big");
    let exe = build(&dir, BIG_PROG);
    let input = r#"<?xml version="1.0" ?>
<record type="data"><tag label="mib">64</tag><tag label="seed">7</tag><tag label="k">1</tag></record>
<record type="terminate" />"#;
    let r = run(
        &exe,
        input,
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
    assert!(r.ok, "{}", r.stderr);
    let want = checksum(64, 7);
    assert!(
        r.stdout
            .contains(&format!("<tag label=\"sum\">{want}</tag>")),
        "checksum {want} not in output:\n{}",
        r.stdout
    );
    assert!(r.stdout.contains("<tag label=\"size\">64</tag>"));
    let stats = node_stats(&r.stderr);
    assert_eq!(stats.len(), 4, "{}", r.stderr);
    // Node 2 (check) fetched the 64 MiB field from node 1 (make); nobody
    // else fetched anything: touch on node 3 and the output on node 0 do
    // not need it.
    assert_eq!(stats[2]["fetched"], 1, "{}", r.stderr);
    assert!(stats[2]["field bytes"] >= 64 << 20, "{}", r.stderr);
    for n in [0, 1, 3] {
        assert_eq!(stats[n]["fetched"], 0, "node {n}: {}", r.stderr);
    }
    assert_stores_empty(&stats);
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
    let exe = build(
        &dir,
        r#"
net fault {
  box fragile((<k>) -> (<k>));
} connect fragile @ 2;
"#,
    );
    let mut input = String::new();
    for k in 0..10 {
        input.push_str(&format!(
            "<record type=\"data\"><tag label=\"k\">{k}</tag></record>"
        ));
    }
    input.push_str("<record type=\"terminate\" />");
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
