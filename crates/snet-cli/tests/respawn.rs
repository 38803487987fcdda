//! `--on-node-loss respawn` on shared memory (issue 40): a node other
//! than 0 that is lost (killed, or ended by a box) is replaced by a new
//! process, and the run ends with the failure-free run's output, compared
//! as a multiset, also when the node holds synchrocells (alone, merging
//! in a star, split per tag, inside a star's or a split's replica); a
//! record that kills every incarnation is a poison record (the run ends
//! after three tries, naming the box and the input record); cells in a
//! placement inside a feedback loop on node 0 (alone or a star's fused
//! chain) survive, and a placement inside a placement, static or a
//! dynamic placement's replica, survives the loss of either node (the
//! outer one runs pushed down);
//! `respawn` under MPI and `redistribute` are refused at start.
//!
//! The losses are deterministic: the box `victim` ends its own process
//! on the record `k == 37` when `SNET_TEST_VICTIM` arms it, and (except
//! for the poison record) only in the node's first incarnation
//! (`SNET_SHM_INCARNATION`, set by node 0 in every node process it
//! starts). One case kills a node process from outside, at a moment the
//! test does not choose (once the run has written some output).

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use common::*;

const VICTIM_BOXES: &str = r#"
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "C4SNet.h"

/* Whether this process is its node's first (SNET_SHM_INCARNATION). */
static int first_life(void)
{
    const char *g = getenv("SNET_SHM_INCARNATION");
    return g == NULL || strcmp(g, "0") == 0;
}

/* Doubles k. On k == 37 (or SNET_TEST_AT), as SNET_TEST_VICTIM says: `kill` SIGKILLs its
   own process, `exit` calls exit(3) (first incarnation only); `poison`
   crashes (SIGSEGV) in every incarnation. `nap` sleeps 2 ms a record. */
void *victim(void *hnd, int k)
{
    const char *how = getenv("SNET_TEST_VICTIM");
    const char *at = getenv("SNET_TEST_AT");
    if (how != NULL && strcmp(how, "nap") == 0) usleep(2000);
    if (how != NULL && k == (at != NULL ? atoi(at) : 37)) {
        if (strcmp(how, "kill") == 0 && first_life()) kill(getpid(), SIGKILL);
        if (strcmp(how, "exit") == 0 && first_life()) exit(3);
        if (strcmp(how, "poison") == 0) {
            volatile int *p = 0;
            *p = k;
        }
    }
    C4SNetOut(hnd, 1, 2 * k);
    return hnd;
}

/* Adds one. */
void *touch(void *hnd, int k)
{
    C4SNetOut(hnd, 1, k + 1);
    return hnd;
}
"#;

/// `victim` on node 1 feeding `touch` on node 2.
const CHAIN: &str = r#"
net chain {
  box victim((<k>) -> (<k>));
  box touch((<k>) -> (<k>));
} connect (victim @ 1) .. (touch @ 2);
"#;

/// Each record becomes an `a` and a `b` on node 1, which a synchrocell
/// there merges: `{cells}` stands for the cells.
const PAIRS: &str = r#"
net pairs {
  box victim((<k>) -> (<k>));
  box touch((<k>) -> (<k>));
} connect (victim .. [{<k>} -> {<k>, <a = k>}; {<k>, <b = k>}] .. {cells}) @ 1;
"#;

/// One net holding a synchrocell, used twice on node 1: the first use
/// merges the first pair (its merged record passes the second use as
/// `{<k>, <m>}`), the second only sees `a` and `b` from `k = 300` on
/// (input record 150; before, they pass it as `p` and `q`) and merges
/// that pair.
const TWICE: &str = r#"
net twice {
  box victim((<k>) -> (<k>));
  net c connect [| {<a>}, {<b>} |];
} connect (victim .. [{<k>} -> {<k>, <a = k>}; {<k>, <b = k>}] .. c
  .. ([{<k>, <a>} -> if <k < 300> then {<k>, <p = a>} else {<k>, <a>}]
    | [{<k>, <b>} -> if <k < 300> then {<k>, <q = b>} else {<k>, <b>}]
    | [{<k>, <a>, <b>} -> {<k>, <m = a>}])
  .. c) @ 1;
"#;

/// Each record goes round a loop on node 1 `k % 4` times (adding one to
/// `k` each time): `{loop}` stands for a star or a feedback loop.
const ROUNDS: &str = r#"
net rounds {
  box victim((<k>) -> (<k>));
  box touch((<k>) -> (<k>));
} connect (victim .. [{<k>} -> {<k>, <c = k % 4>}] .. {loop}) @ 1;
"#;

/// What a lost node's replacement restores: a star and a feedback loop
/// (no decision of their own), a lone synchrocell (it merges the first
/// pair, and every later record passes it: a loss on record 37 needs its
/// tombstone), the merge idiom `[| .. |] * exits`, a cell per tag, and
/// cells inside a star's and a split's replicas (named by their stage and
/// tag value: with one name for all, the first cell's tombstone would
/// make every cell of the replacement start fired).
const RESTORED: [(&str, &str, &str); 7] = [
    (
        "star",
        ROUNDS,
        "(([{<c>} -> {<c = c - 1>}] .. touch) * {<c>} if <c <= 0>)",
    ),
    (
        "feedback",
        ROUNDS,
        "(([{<c>} -> {<c = c - 1>}] .. touch) \\ {<c>} if <c >= 0>)",
    ),
    ("lone", PAIRS, "[| {<a>}, {<b>} |]"),
    ("merge", PAIRS, "([| {<a>}, {<b>} |] * {<a>, <b>})"),
    ("split", PAIRS, "([| {<a>}, {<b>} |] ! <k>)"),
    (
        "star-replica",
        PAIRS,
        "(([| {<a>}, {<b>} |] .. touch) * {<a>, <b>})",
    ),
    (
        "split-replica",
        PAIRS,
        "((touch .. [| {<a>}, {<b>} |]) ! <k>)",
    ),
];

/// Deterministic combinators whose ordering markers a lost node held
/// (`victim` and `touch` on node 1, 3 nodes): around a placement on node
/// 1 (`!!`, `**`, and `||` with a branch on node 1 and one on node 2),
/// and inside one (`!!` on node 1); `!!@` over nodes 1 and 2 (record
/// 37 goes to node 2, which is lost); `!!` around synchrocells on node 1
/// (the merge idiom: markers pass cells that store records sent before
/// them; a cell per replica that never fires: markers wait for the end
/// of the input's drain). Each outputs its records in input order (the
/// merged ones in the later record's place), whatever the workers do;
/// the number of output records, with the terminate record, follows.
const DET: [(&str, &str, usize); 7] = [
    (
        "det-split",
        "[{<k>} -> {<k>, <c = k % 4>}] .. ((victim .. touch) @ 1) !! <c>",
        201,
    ),
    (
        "det-parallel",
        "[{<k>} -> if <k % 3 == 0> then {<k>, <t>} else {<k>, <v>}] .. \
         ((([{<k>, <v>} -> {<k>}] .. victim) @ 1) || (([{<k>, <t>} -> {<k>}] .. touch) @ 2))",
        201,
    ),
    (
        "det-star",
        "[{<k>} -> {<k>, <c = k % 4>}] .. \
         (([{<c>} -> {<c = c - 1>}] .. ((victim .. touch) @ 1)) ** {<c>} if <c <= 0>)",
        201,
    ),
    (
        "det-inside",
        "([{<k>} -> {<k>, <c = k % 4>}] .. ((victim .. touch) !! <c>)) @ 1",
        201,
    ),
    (
        "det-cells",
        "[{<k>} -> {<k>, <c = k % 4>}] .. ((victim .. \
         [{<k>, <c>} -> {<k>, <c>, <a = k>}; {<k>, <c>, <b = k>}] .. \
         ([| {<a>}, {<b>} |] * {<a>, <b>})) @ 1) !! <c>",
        201,
    ),
    (
        "det-drain",
        "[{<k>} -> {<k>, <c = k % 4>}] .. ((victim .. [| {<k>}, {<z>} |]) @ 1) !! <c>",
        197,
    ),
    (
        "det-dynamic",
        "[{<k>} -> {<k>, <n = 1 + k % 2>}] .. ((victim .. touch) !!@ <n>)",
        201,
    ),
];

/// The programs of [`DET`], built once.
fn det_programs() -> &'static Vec<PathBuf> {
    static P: OnceLock<Vec<PathBuf>> = OnceLock::new();
    P.get_or_init(|| build_det("respawn-det", &DET))
}

/// Builds each `(name, connect body, _)` of `table` as a net of the
/// victim boxes, in the scratch folder `dir`.
fn build_det(dir: &str, table: &[(&str, &str, usize)]) -> Vec<PathBuf> {
    build_all(
        dir,
        table.iter().map(|(name, body, _)| {
            let src = format!(
                "net d {{ box victim((<k>) -> (<k>)); box touch((<k>) -> (<k>)); }}\nconnect {body};\n"
            );
            (*name, src)
        }),
    )
}

/// Builds each `(name, source)` program with the victim boxes in the
/// scratch folder `dir`; their executables, in order.
fn build_all<'a>(dir: &str, progs: impl Iterator<Item = (&'a str, String)>) -> Vec<PathBuf> {
    let dir = scratch(dir);
    let boxes = dir.join("victim.c");
    std::fs::write(&boxes, VICTIM_BOXES).unwrap();
    progs
        .map(|(name, src)| {
            let prog = dir.join(format!("{name}.snet"));
            std::fs::write(&prog, src).unwrap();
            let exe = dir.join(name);
            snet_build(&prog, std::slice::from_ref(&boxes), &exe);
            exe
        })
        .collect()
}

/// Several synchrocell instances behind a race on node 1 (issue 40's
/// last placement that ended the run): `{gen}` makes two records (an `a`
/// and a `b`) or four (`a`, `b`, `x`, `y`) of each input, `{race}` sends
/// them through a merge whose order is not fixed (parallel branches of
/// boxes, a split of boxes, a star of boxes, a feedback loop) into a cell
/// per tag value (inputs `2j` and `2j + 1` share the cell `k = j`) or two
/// cells. The records one cell may take are equal in content, so the
/// output multiset is the same whichever the race lets in first, while
/// which record (and which item's custody token) a cell stores is not.
const RACED: &str = r#"
net raced {
  box victim((<k>) -> (<k>));
  box touch((<k>) -> (<k>));
} connect (victim .. {gen} .. {race}) @ 1;
"#;

/// Two records of input `i` (`k = 2i` after `victim`): cell `k = i / 2`,
/// `p` (or `c`) the input's parity.
const GEN2: &str = "[{<k>} -> {<k = k / 4>, <p = (k / 2) % 2>, <a = 0>}; \
     {<k = k / 4>, <p = (k / 2) % 2>, <b = 0>}]";

/// The programs of [`RACED`]: (name, gen, race).
const RACES: [(&str, &str, &str); 4] = [
    (
        "parallel",
        GEN2,
        "(touch | ([{<k>, <b>} -> {<k>, <b>}] .. touch)) .. ([| {<a>}, {<b>} |] ! <k>)",
    ),
    (
        "split",
        GEN2,
        "((touch .. [{<p>} -> {}]) ! <p>) .. ([| {<a>}, {<b>} |] ! <k>)",
    ),
    (
        "star",
        "[{<k>} -> {<k = 0>, <c = (k / 2) % 2>, <a = 0>}; {<k = 0>, <c = (k / 2) % 2>, <b = 0>}; \
          {<k = 0>, <c = (k / 2) % 2>, <x = 0>}; {<k = 0>, <c = (k / 2) % 2>, <y = 0>}]",
        "(([{<c>} -> {<c = c - 1>}] .. touch .. [{<k>} -> {<k = k - 1>}]) * {<c>} if <c <= 0>) \
          .. [{<c>} -> {}] .. [| {<a>}, {<b>} |] .. [| {<x>}, {<y>} |]",
    ),
    (
        "feedback",
        "[{<k>} -> {<k = k / 4>, <c = (k / 2) % 2>, <a = 0>}; {<k = k / 4>, <c = (k / 2) % 2>, <b = 0>}]",
        "(([{<c>} -> {<c = c - 1>}] .. touch .. [{<k>} -> {<k = k - 1>}]) \\ {<c>} if <c >= 0>) \
          .. [{<c>} -> {}] .. ([| {<a>}, {<b>} |] ! <k>)",
    ),
];

/// The programs of [`RACES`], built once.
fn raced_programs() -> &'static Vec<PathBuf> {
    static P: OnceLock<Vec<PathBuf>> = OnceLock::new();
    P.get_or_init(|| {
        build_all(
            "respawn-raced",
            RACES.iter().map(|(name, gen, race)| {
                (*name, RACED.replace("{gen}", gen).replace("{race}", race))
            }),
        )
    })
}

/// The output records in the order written.
fn in_order(stdout: &str) -> Vec<&str> {
    stdout
        .lines()
        .filter(|l| l.contains("<record"))
        .map(str::trim)
        .collect()
}

/// Fails unless `got` writes `want`'s records in the same order (naming
/// the first difference, not the whole output).
fn same_order(got: &str, want: &str, what: &str) {
    let (got, want) = (in_order(got), in_order(want));
    if let Some(i) = (0..got.len().max(want.len())).find(|&i| got.get(i) != want.get(i)) {
        panic!(
            "{what}: {} records written, {} wanted; record {i} is {:?}, wanted {:?}",
            got.len(),
            want.len(),
            got.get(i),
            want.get(i)
        );
    }
}

/// Several cells behind a race on node 1 (a cell per tag value behind
/// parallel branches, a split, a feedback loop of boxes; two cells behind
/// a star of boxes), node 1 losing itself at record 3, 37 or 150, at 1,
/// 2 and 8 workers, or killed from outside: the replacement restores the
/// cells, and the output is the failure-free run's. Each record leaving one input of the merge
/// commits with or after the record that left it before
/// (`custody::PathLast`); before that, such a node was a replay boundary
/// and every one of these runs ended at the loss, naming the cell.
#[test]
fn a_node_holding_several_cells_behind_a_race_is_replaced() {
    for (exe, (name, ..)) in raced_programs().iter().zip(RACES) {
        let want = run_shm(exe, 2, 200, None, &["--workers", "2"]);
        assert!(want.ok, "{name}: {}", want.stderr);
        let want = records(&want.stdout);
        // Two records an input, less one a merge (100 cells of a tag
        // value); four, less one for each of the two cells.
        let n = if name == "star" { 798 } else { 300 };
        assert_eq!(want.values().sum::<usize>(), n + 1, "{name}: {want:?}");
        for (at, workers) in [
            ("3", "1"),
            ("37", "2"),
            ("150", "8"),
            ("37", "8"),
            ("150", "1"),
        ] {
            let what = format!("{name}, at {at}, {workers} workers");
            let out = replaced(exe, 2, &format!("kill@{at}"), workers, &what);
            assert_eq!(records(&out), want, "{what}");
        }
        // And SIGKILLed from outside, at a moment the test does not
        // choose, once a third of the output is written.
        let (out, stderr) = killed_from_outside(exe, 2, 1, Kill::After(n / 3));
        assert_eq!(records(&out), want, "{name}, killed from outside: {stderr}");
    }
}

/// The programs of [`RESTORED`], built once.
fn restored_programs() -> &'static Vec<PathBuf> {
    static P: OnceLock<Vec<PathBuf>> = OnceLock::new();
    P.get_or_init(|| {
        build_all(
            "respawn-restored",
            RESTORED.iter().map(|(name, template, part)| {
                let src = template.replace("{cells}", part).replace("{loop}", part);
                (*name, src)
            }),
        )
    })
}

/// The chain program, built once.
fn chain() -> &'static PathBuf {
    static P: OnceLock<PathBuf> = OnceLock::new();
    P.get_or_init(|| {
        let progs = [("chain", CHAIN.to_string())];
        build_all("respawn", progs.into_iter())
            .pop()
            .expect("the chain program")
    })
}

/// Runs `exe` on `nodes` shm nodes with 200 records, the victim armed as
/// `how` (as [`run_shm`]), with `workers` workers under `--on-node-loss
/// respawn`: the run must go well with one node replaced (`what` names
/// the case in a failure). Its output.
fn replaced(exe: &Path, nodes: u32, how: &str, workers: &str, what: &str) -> String {
    let args = ["--workers", workers, "--on-node-loss", "respawn", "--stats"];
    let r = run_shm(exe, nodes, 200, Some(how), &args);
    assert!(r.ok, "{what}: {}", r.stderr);
    assert!(
        r.stderr.contains("replaced 1 lost node process"),
        "{what}: {}",
        r.stderr
    );
    r.stdout
}

/// The output records as a multiset (line → count).
fn records(stdout: &str) -> BTreeMap<String, usize> {
    let mut m = BTreeMap::new();
    for l in stdout.lines().filter(|l| l.contains("<record")) {
        *m.entry(l.trim().to_string()).or_insert(0) += 1;
    }
    m
}

/// Runs `exe` on shm nodes with `n` records, the victim armed as `how`.
fn run_shm(exe: &Path, nodes: u32, n: usize, how: Option<&str>, args: &[&str]) -> Run {
    let mut cmd = Command::new(exe);
    cmd.args(["--transport", "shm", "--nodes", &nodes.to_string()]);
    // `how@k`: on record `k` instead of 37.
    match how.map(|h| h.split_once('@').unwrap_or((h, "37"))) {
        Some((h, at)) => cmd.env("SNET_TEST_VICTIM", h).env("SNET_TEST_AT", at),
        None => cmd.env_remove("SNET_TEST_VICTIM"),
    };
    let dir = exe.with_file_name(format!("in-{}-{}", how.unwrap_or("none"), args.join("")));
    std::fs::create_dir_all(&dir).unwrap();
    run_with(cmd, &dir.join("x"), &k_records(n), args)
}

/// The failure-free run's output of the chain on 200 records.
fn reference() -> &'static BTreeMap<String, usize> {
    static R: OnceLock<BTreeMap<String, usize>> = OnceLock::new();
    R.get_or_init(|| {
        let r = run_shm(chain(), 3, 200, None, &["--workers", "2"]);
        assert!(r.ok, "{}", r.stderr);
        let m = records(&r.stdout);
        assert_eq!(m.values().sum::<usize>(), 201, "{}", r.stdout);
        m
    })
}

#[test]
fn a_node_that_kills_itself_is_replaced_and_the_output_is_unchanged() {
    // Without the option (the default, `fail`) the same loss ends the run.
    let r = run_shm(chain(), 3, 200, Some("kill"), &["--workers", "2"]);
    assert!(!r.ok);
    assert!(
        r.stderr.contains("node 1 stopped unexpectedly"),
        "{}",
        r.stderr
    );
    assert!(!r.stdout.contains("terminate"), "{}", r.stdout);
    for workers in ["1", "2", "8"] {
        let what = format!("{workers} workers");
        let out = replaced(chain(), 3, "kill", workers, &what);
        assert_eq!(&records(&out), reference(), "{what}");
    }
}

#[test]
fn a_box_that_calls_exit_loses_its_node_which_is_replaced() {
    let r = run_shm(
        chain(),
        3,
        200,
        Some("exit"),
        &["--workers", "2", "--on-node-loss", "respawn"],
    );
    assert!(r.ok, "{}", r.stderr);
    assert_eq!(&records(&r.stdout), reference());
    // The node's own report of what happened is still there.
    assert!(
        r.stderr.contains("box `victim` called exit()"),
        "{}",
        r.stderr
    );
}

#[test]
fn a_poison_record_ends_the_run_after_three_tries_naming_box_and_record() {
    let r = run_shm(
        chain(),
        3,
        200,
        Some("poison"),
        &["--workers", "2", "--on-node-loss", "respawn"],
    );
    assert!(!r.ok, "{}", r.stdout);
    assert!(
        r.stderr.contains("for the third time with input record")
            && r.stderr.contains("poison record"),
        "{}",
        r.stderr
    );
    // The node's own report names the box and the record (node 0's
    // names the records its log held through the three losses).
    assert!(
        r.stderr.contains("box `victim` crashed") && r.stderr.contains("caused by input record 38"),
        "{}",
        r.stderr
    );
    assert!(!r.stdout.contains("terminate"), "{}", r.stdout);
}

/// A node holding a star, a feedback loop or synchrocells loses itself
/// on record 37 (the lone cell has fired on record 0 and committed its
/// tombstone by then, and the records after pass it; the merging star's
/// and the split's cells store and fire throughout). The replacement's
/// cells start as node 0's tombstones say, and the output is the
/// failure-free run's. (Before custody groups, every one of these runs
/// ended at the loss, naming the construct.)
#[test]
fn a_node_holding_loops_or_synchrocells_is_replaced_and_the_output_is_unchanged() {
    for (exe, (name, ..)) in restored_programs().iter().zip(RESTORED) {
        let want = run_shm(exe, 2, 200, None, &["--workers", "2"]);
        assert!(want.ok, "{name}: {}", want.stderr);
        let want = records(&want.stdout);
        // 200 records, or 200 pairs merged (the lone cell merges one).
        let n = if name == "lone" { 399 } else { 200 };
        assert_eq!(want.values().sum::<usize>(), n + 1, "{name}");
        for workers in ["1", "2", "8"] {
            let what = format!("{name}, {workers} workers");
            let out = replaced(exe, 2, "kill", workers, &what);
            assert_eq!(records(&out), want, "{what}");
        }
    }
}

/// Node 1 of each program of [`DET`] loses itself on record 37, when it
/// holds ordering markers of the deterministic combinator (their copies,
/// or the combinator's collector): the replacement is sent the records
/// and markers node 1 had not committed, in their order, and the output
/// is the failure-free run's, in the same order (the deterministic
/// combinator fixes it). Before, each of these runs ended at the loss,
/// naming the combinator or the placement inside it.
#[test]
fn a_node_holding_ordering_markers_is_replaced_and_the_order_is_kept() {
    for (exe, (name, _, n)) in det_programs().iter().zip(DET) {
        let want = run_shm(exe, 3, 200, None, &["--workers", "2"]);
        assert!(want.ok, "{name}: {}", want.stderr);
        assert_eq!(in_order(&want.stdout).len(), n, "{name}");
        for workers in ["1", "2", "8"] {
            let what = format!("{name}, {workers} workers");
            let out = replaced(exe, 3, "kill", workers, &what);
            same_order(&out, &want.stdout, &what);
        }
    }
}

/// As above, with the node SIGKILLed from outside at several moments (1,
/// 20 or 50 ms after its process appeared; the victim naps 2 ms a record,
/// so the node's work takes at least 200 ms, whatever the load): node 1 of
/// `!!` around and inside a placement, and node 2 (the other branch) of
/// `||`. (Not once the run has written so many records, as the other
/// tests do: a deterministic combinator around the placement writes its
/// output in a burst near the end, when the node may have gone.)
#[test]
fn a_node_holding_ordering_markers_killed_from_outside_is_replaced() {
    let progs = det_programs();
    for (i, node) in [(0, 1), (3, 1), (1, 2)] {
        let exe = &progs[i];
        let want = run_shm(exe, 3, 200, None, &["--workers", "2"]);
        assert!(want.ok, "{}", want.stderr);
        for after in [1, 20, 50] {
            let (out, stderr) = killed_from_outside(exe, 3, node, Kill::AfterMs(after));
            same_order(
                &out,
                &want.stdout,
                &format!("{}, node {node} killed after {after}: {stderr}", DET[i].0),
            );
        }
    }
}

/// When [`killed_from_outside`] kills the node.
#[derive(Clone, Copy, Debug)]
enum Kill {
    /// Once the run has written so many records.
    After(usize),
    /// So many milliseconds after the node's process appeared.
    AfterMs(u64),
}

/// The pid of node `node`'s process of the run tagged `tag`, looked for
/// for up to 2 s (a loaded machine may show a process's environment
/// late: `/proc/PID/environ` is empty while it starts).
fn node_pid(tag: &str, node: u32) -> Option<u32> {
    let tag_var = format!("SNET_TEST_RUN={tag}");
    (0..200).find_map(|_| {
        shm_node_pid(&tag_var, node).or_else(|| {
            std::thread::sleep(std::time::Duration::from_millis(10));
            None
        })
    })
}

/// Runs `exe` on `nodes` shm nodes with custody, the victim napping, and
/// SIGKILLs node `node`'s process when `kill` says: the output and the
/// run's stderr.
fn killed_from_outside(exe: &Path, nodes: u32, node: u32, kill: Kill) -> (String, String) {
    use std::io::{BufRead, BufReader};
    use std::process::Stdio;
    // One tag per run: tests run at once, and the kill must find this
    // run's node process, not another's.
    static RUNS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let run = RUNS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = exe.with_file_name(format!("outside-{node}-{run}"));
    std::fs::create_dir_all(&dir).unwrap();
    let inp = dir.join("input.xml");
    std::fs::write(&inp, k_records(200)).unwrap();
    let tag = format!("respawn-{}-{node}-{run}", std::process::id());
    let mut child = Command::new(exe)
        .args(["--transport", "shm", "--nodes", &nodes.to_string()])
        .args(["--workers", "2", "--on-node-loss", "respawn", "-i"])
        .arg(&inp)
        .env("SNET_TEST_VICTIM", "nap")
        .env("SNET_TEST_RUN", &tag)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the run");
    let mut err = child.stderr.take().unwrap();
    let stderr = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = std::io::Read::read_to_string(&mut err, &mut s);
        s
    });
    let sigkill = |pid: u32| {
        // SAFETY: kill(2) of a process this test started (through the run).
        assert_eq!(unsafe { libc::kill(pid as i32, libc::SIGKILL) }, 0);
    };
    let timed = match kill {
        Kill::AfterMs(ms) => {
            let tag = tag.clone();
            Some(std::thread::spawn(move || {
                let pid = node_pid(&tag, node)
                    .unwrap_or_else(|| panic!("the node's process ({tag}, node {node})"));
                std::thread::sleep(std::time::Duration::from_millis(ms));
                sigkill(pid);
            }))
        }
        Kill::After(_) => None,
    };
    let mut out = String::new();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut seen = 0;
    let mut killed = timed.is_some();
    for l in lines.by_ref() {
        let Ok(l) = l else { break };
        if l.contains("<record") {
            seen += 1;
        }
        out.push_str(&l);
        out.push('\n');
        if matches!(kill, Kill::After(after) if seen == after) && !killed {
            let pid = node_pid(&tag, node)
                .unwrap_or_else(|| panic!("the node's process ({tag}, node {node}, {kill:?})"));
            sigkill(pid);
            killed = true;
        }
    }
    if let Some(t) = timed {
        t.join().expect("the kill");
    }
    let status = child.wait().expect("wait");
    let stderr = stderr.join().unwrap_or_default();
    assert!(killed, "the run ended before it could be killed: {stderr}");
    assert!(status.success(), "{stderr}");
    assert_eq!(tagged_processes(&tag), 0, "processes outlived the run");
    (out, stderr)
}

/// Node 2 (`touch`) is SIGKILLed from outside once the run has written 20
/// records (the victim naps 2 ms a record, so the run is still going).
#[test]
fn a_node_killed_from_outside_mid_run_is_replaced() {
    let (out, stderr) = killed_from_outside(chain(), 3, 2, Kill::After(20));
    assert_eq!(&records(&out), reference(), "{stderr}");
}

/// Cells inside a star's and a split's replicas on node 1, whose node
/// kills itself on record 0 (8 workers), 120 (1) or 199 (2) (record 37
/// at 1, 2 and 8 is the test above), and is SIGKILLed from outside once 20 records
/// are written: the replacement's cells start fired exactly where node
/// 0's tombstones name their stage or tag value, and the output is the
/// failure-free run's.
#[test]
fn synchrocells_in_replicas_survive_a_loss_at_several_moments() {
    for i in [5, 6] {
        let (exe, name) = (&restored_programs()[i], RESTORED[i].0);
        let want = run_shm(exe, 2, 200, None, &["--workers", "2"]);
        assert!(want.ok, "{}", want.stderr);
        let want = records(&want.stdout);
        for (at, workers) in [("0", "8"), ("120", "1"), ("199", "2")] {
            let what = format!("{name}, lost on record {at}, {workers} workers");
            let out = replaced(exe, 2, &format!("kill@{at}"), workers, &what);
            assert_eq!(records(&out), want, "{what}");
        }
        let (out, stderr) = killed_from_outside(exe, 2, 1, Kill::After(20));
        assert_eq!(records(&out), want, "{name}, killed from outside: {stderr}");
    }
}

/// A net with a synchrocell used twice on node 1, which kills itself on
/// record 140 (at 1, 2 and 8 workers) or is SIGKILLed from outside once
/// 20 records are written: the first use had fired (on record 0) and
/// reported it, the second (record 150) had not. The two are two cells
/// with two names (their positions in the placement's serial
/// composition), so the replacement's second cell does not start fired
/// and merges its pair. (With one name for both, as before instance
/// paths, the run went on and silently wrote that pair's two records
/// unmerged: the kill from outside catches that every time, once node 0
/// has written 20 records, among them the first use's merged record,
/// which came with its tombstone; the box's own kill may come before
/// node 1 sent that commit.)
#[test]
fn a_net_with_a_synchrocell_used_twice_is_two_cells_to_a_replacement() {
    let exe = build_all("respawn-twice", [("twice", TWICE.to_string())].into_iter()).remove(0);
    let want = run_shm(&exe, 2, 200, None, &["--workers", "2"]);
    assert!(want.ok, "{}", want.stderr);
    let want = records(&want.stdout);
    // 1 + 2 * 149 + 1 + 2 * 49 records and the terminate record.
    assert_eq!(want.values().sum::<usize>(), 399, "{want:?}");
    for workers in ["1", "2", "8"] {
        let args = ["--workers", workers, "--on-node-loss", "respawn", "--stats"];
        let r = run_shm(&exe, 2, 200, Some("kill@140"), &args);
        assert!(r.ok, "{workers} workers: {}", r.stderr);
        assert_eq!(records(&r.stdout), want, "{workers} workers");
        assert!(
            r.stderr.contains("replaced 1 lost node process"),
            "{workers} workers: {}",
            r.stderr
        );
    }
    let (out, stderr) = killed_from_outside(&exe, 2, 1, Kill::After(20));
    assert_eq!(records(&out), want, "killed from outside: {stderr}");
}

/// The tombstone case, made deterministic: the lone synchrocell on node 1
/// fires on the first pair, and node 0 has written its merged record
/// (which it gets in one message with the cell's tombstone) and 19 more
/// before the node is SIGKILLed; the records after pass the fired cell
/// and are replayed. The replacement's cell must start fired (node 0
/// sends it the tombstone first): a fresh cell would store a replayed
/// record and merge it, changing the output.
#[test]
fn a_synchrocell_that_fired_before_its_node_was_lost_stays_fired() {
    let exe = &restored_programs()[2];
    let want = run_shm(exe, 2, 200, None, &["--workers", "2"]);
    assert!(want.ok, "{}", want.stderr);
    let (out, stderr) = killed_from_outside(exe, 2, 1, Kill::After(20));
    assert!(
        out.contains(r#"<tag label="a">0</tag><tag label="b">0</tag>"#),
        "{out}"
    );
    assert_eq!(records(&out), records(&want.stdout), "{stderr}");
}

/// A node that dies at start, every incarnation (before node 0 sent it
/// anything: the input is an open pipe with nothing in it yet): node 0
/// gives up after three losses instead of replacing it for ever.
#[test]
fn a_node_that_cannot_start_is_given_up_after_three_losses() {
    use std::process::Stdio;
    let exe = chain();
    let mut child = Command::new(exe)
        .args(["--transport", "shm", "--nodes", "3", "--workers", "2"])
        .args(["--on-node-loss", "respawn"])
        .env("SNET_TEST_FAULT", "die-at-start@1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the run");
    let input = child.stdin.take();
    let start = std::time::Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().expect("wait") {
            break s;
        }
        if start.elapsed() > HANG {
            let _ = child.kill();
            panic!("hung: a node that dies at start was replaced for ever");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    drop(input);
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
    assert!(!status.success());
    assert!(
        stderr.contains("for the third time without finishing a record in between"),
        "{stderr}"
    );
}

#[test]
fn respawn_is_refused_under_mpi_and_redistribute_everywhere() {
    let exe = chain();
    let r = run_with(
        {
            let mut c = Command::new(exe);
            c.args(["--transport", "mpi", "--on-node-loss", "respawn"]);
            c
        },
        &exe.with_file_name("refused"),
        &k_records(1),
        &[],
    );
    assert!(!r.ok);
    assert!(
        r.stderr
            .contains("--on-node-loss respawn needs --transport shm or loopback"),
        "{}",
        r.stderr
    );
    let r = run_shm(exe, 2, 1, None, &["--on-node-loss", "redistribute"]);
    assert!(!r.ok);
    assert!(
        r.stderr.contains("--on-node-loss redistribute") && r.stderr.contains("not built"),
        "{}",
        r.stderr
    );
}

/// A synchrocell on node 1 in a placement that node 0's feedback loop
/// (or star) brings records back to (issue 40's last synchrocell
/// placement that ended the run). Round 1: each input `k` becomes an `a`
/// (`victim` doubles `k`); the cell stores the first, every other passes
/// its taken slot and waits in the stored record's custody group, so it
/// goes on only at the end of the stream's drain, which parks the stored
/// record at node 0. Round 2 (the record comes back with `r`, its `k`
/// raised by 1000 before `victim`, so `victim` sees `2k + 1000` and the
/// kill lands in round 2 only): each becomes an `a` or a `b` by `k`. In
/// the loop the first `b` fires the drained cell with the parked record
/// (`{loop}` = `\ {<r>}`); in the star the records go on to the next
/// stage's placement, a new cell on node 1, which stores its first `a`
/// and `b` after the drain and fires (`{loop}` = `* {<out>}`). The
/// output drops `k`, so it is one multiset whichever records the cells
/// took.
const LOOPED: &str = r#"
net looped {
  box victim((<k>) -> (<k>));
} connect ((([{<k>, <r>} -> {<k = k + 1000>, <r>}] | [{<k>} -> {<k>}])
    .. victim
    .. ([{<k>, <r>} -> if <k % 3 == 0> then {<a = 1>, <r>} else {<b = 1>, <r>}]
       | [{<k>} -> {<k>, <a = 1>}])
    .. [| {<a>}, {<b>} |]
    .. ([{<a>, <b>} -> {<m = 1>, <out>}] | [{<a>, <k>} -> {<k>, <r>}]
       | [{<a>, <r>} -> {<a>, <out>}] | [{<b>, <r>} -> {<b>, <out>}])
    .. ([{<out>, <k>} -> {<out>}] | [{<out>} -> {<out>}] | [{<r>} -> {<r>}])) @ 1) {loop};
"#;

/// The programs of [`LOOPED`]: the feedback loop and the star.
fn looped_programs() -> &'static Vec<PathBuf> {
    static P: OnceLock<Vec<PathBuf>> = OnceLock::new();
    P.get_or_init(|| {
        build_all(
            "respawn-looped",
            [("feedback", "\\ {<r>}"), ("star", "* {<out>}")]
                .into_iter()
                .map(|(name, l)| (name, LOOPED.replace("{loop}", l))),
        )
    })
}

/// Node 1 of each program of [`LOOPED`] kills itself in round 2, on the
/// record of input 10, 100 or 199, at 1, 2 and 8 workers, and is
/// SIGKILLed from outside once 20 records are written (all in round 2):
/// the replacement's cell starts with the records the drain parked (the
/// loop), or the cells stored after the drain keep their custody (the
/// star), and the output is the failure-free run's. Before, the loop's
/// run ended at the loss naming the synchrocell.
#[test]
fn a_synchrocell_in_a_placement_inside_a_loop_on_node_0_survives_a_loss() {
    for (exe, name) in looped_programs().iter().zip(["feedback", "star"]) {
        let want = run_shm(exe, 2, 200, None, &["--workers", "2"]);
        assert!(want.ok, "{name}: {}", want.stderr);
        let want = records(&want.stdout);
        // One merged record and the 198 records no cell took (the
        // loop's cell stored one), or 197 (the star's first stage stored
        // one, the second stage's cell two).
        let n = if name == "feedback" { 199 } else { 198 };
        assert_eq!(want.values().sum::<usize>(), n + 1, "{name}: {want:?}");
        assert_eq!(
            want.keys().filter(|l| l.contains("\"m\"")).count(),
            1,
            "{name}: the cell fired once: {want:?}"
        );
        for (at, workers) in [("1020", "1"), ("1200", "2"), ("1398", "8"), ("1200", "8")] {
            let what = format!("{name}, lost on 2k + 1000 = {at}, {workers} workers");
            let out = replaced(exe, 2, &format!("kill@{at}"), workers, &what);
            assert_eq!(records(&out), want, "{what}");
        }
        let (out, stderr) = killed_from_outside(exe, 2, 1, Kill::After(20));
        assert_eq!(records(&out), want, "{name}, killed from outside: {stderr}");
    }
}

/// Deterministic combinators with synchrocells inside, placed on node 1
/// (issue 40's last such shape that ended the run): a star of cells in
/// each replica of `!!`, a star of cells in one branch of `||`, and cells
/// that never fire in the replicas of `!!` (records with `x` after the
/// first of their replica pass a taken slot and join its group, held
/// until the end's drain, while the others go around the cell).
const DET_CELLS: [(&str, &str, usize); 3] = [
    (
        "cells-split",
        "([{<k>} -> {<k>, <c = k % 4>}] .. ((victim .. \
         [{<k>, <c>} -> {<k>, <c>, <a = k>}; {<k>, <c>, <b = k>}] .. \
         ([| {<a>}, {<b>} |] * {<a>, <b>})) !! <c>)) @ 1",
        201,
    ),
    (
        "cells-parallel",
        "([{<k>} -> if <k % 3 == 0> then {<k>, <t>} else {<k>, <v>}] .. \
         (([{<k>, <v>} -> {<k>}] .. victim) || \
         ([{<k>, <t>} -> {<k>, <a = k>}; {<k>, <b = k>}] .. ([| {<a>}, {<b>} |] * {<a>, <b>})))) @ 1",
        201,
    ),
    (
        "cells-held",
        "([{<k>} -> if <k % 10 == 5> then {<k>, <c = k % 4>, <x>} else {<k>, <c = k % 4>}] .. \
         ((victim .. [| {<x>}, {<y>} |]) !! <c>)) @ 1",
        199,
    ),
];

/// The programs of [`DET_CELLS`], built once.
fn det_cell_programs() -> &'static Vec<PathBuf> {
    static P: OnceLock<Vec<PathBuf>> = OnceLock::new();
    P.get_or_init(|| build_det("respawn-detcell", &DET_CELLS))
}

/// Node 1 of each program of [`DET_CELLS`] loses itself on record 4, 37
/// or 151 (at 1, 2 and 8 workers): the replacement is sent what node 1
/// had not committed, and the output is the failure-free run's in the
/// same order. The records leaving the combinator commit in its order
/// (each after the group of the one before it:
/// `Graph::det_outputs_to_link`), so node 0 has a prefix of that order
/// when the node is lost, and without a loss the order is kept too.
/// Before, each loss ended the run, naming the combinator.
#[test]
fn a_deterministic_combinator_with_a_cell_inside_is_replaced_and_the_order_is_kept() {
    for (exe, (name, _, n)) in det_cell_programs().iter().zip(DET_CELLS) {
        let want = run_shm(exe, 2, 200, None, &["--workers", "2"]);
        assert!(want.ok, "{name}: {}", want.stderr);
        assert_eq!(in_order(&want.stdout).len(), n, "{name}");
        let r = run_shm(
            exe,
            2,
            200,
            None,
            &["--workers", "2", "--on-node-loss", "respawn"],
        );
        assert!(r.ok, "{name}, no loss: {}", r.stderr);
        same_order(&r.stdout, &want.stdout, &format!("{name}, no loss"));
        for (at, workers) in [("4", "1"), ("37", "2"), ("151", "8")] {
            let what = format!("{name}, lost at {at}, {workers} workers");
            let out = replaced(exe, 2, &format!("kill@{at}"), workers, &what);
            same_order(&out, &want.stdout, &what);
        }
    }
}

/// As above, with node 1 SIGKILLed from outside 1 or 50 ms after its
/// process appeared (the victim naps 2 ms a record).
#[test]
fn a_deterministic_combinator_with_a_cell_inside_killed_from_outside_is_replaced() {
    for (exe, (name, _, _)) in det_cell_programs().iter().zip(DET_CELLS) {
        let want = run_shm(exe, 2, 200, None, &["--workers", "2"]);
        assert!(want.ok, "{name}: {}", want.stderr);
        for after in [1, 50] {
            let (out, stderr) = killed_from_outside(exe, 2, 1, Kill::AfterMs(after));
            same_order(
                &out,
                &want.stdout,
                &format!("{name}, killed after {after} ms: {stderr}"),
            );
        }
    }
}

/// A synchrocell that is a star's whole replica (`[| .. |] * p`, run as
/// one entity, `FusedSynchrocell`) on node 1, in a placement inside a
/// feedback loop on node 0. Round 1: input `i` leaves `victim` as
/// `k = 2i`, a `b` (carrying `j = k`) for every third input and an `a`
/// (carrying `k`) otherwise. Open positions of the chain all hold the
/// same kind of record, and each `a` stored after another joins its
/// group, so the records merged in round 1 wait (in that group) for the
/// end of the stream's drain, which parks the `a`s still stored; each
/// is written as `{<j>, <o>}` and goes round again as `k = j`, to
/// `victim` as `k + 1000` and to the star as a `b` (`b = 2`) that fires
/// the first open position: in a replacement, one the drain parked.
/// Whatever the order, 133 `a`s meet 134 `b`s: every round-1 `b` fires,
/// 66 round-2 ones do (written `{<m>}`, dropping what depends on the
/// pairing) and one stays stored.
const FUSED_LOOPED: &str = r#"
net fused {
  box victim((<k>) -> (<k>));
} connect ((([{<k>, <r>} -> {<k = k + 1000>, <r>}] | [{<k>} -> {<k>}])
    .. victim
    .. ([{<k>, <r>} -> {<b = 2>, <j = k>}]
       | [{<k>} -> if <k % 6 == 0> then {<b = 1>, <j = k>} else {<k>, <a = 1>}])
    .. ([| {<a>}, {<b>, <j>} |] * {<a>, <b>})
    .. [{<a>, <b>, <j>, <k>} -> if <b == 1> then {<k = j>, <r>}; {<j>, <o>} else {<m>}]) @ 1)
  \ {<r>};
"#;

/// Node 1 of [`FUSED_LOOPED`] kills itself on the round-2 record of
/// input 0 (`victim` sees `1000`, before the drain: its merge committed
/// at once), 6 (the first after the drain), 99 and 198 (the last), at 1,
/// 2 and 8 workers, and is SIGKILLed from outside once 20 records are
/// written (round 2 under way) and 50 ms after it started (round 1):
/// the replacement's fused star passes the positions node 0 holds
/// tombstones for and starts the ones the drain parked records in with
/// them, and the output is the failure-free run's. Without the restore,
/// the round-2 `b`s replayed after a loss after the drain are stored in
/// empty positions and all but two or three of the 66 `{<m>}` are
/// missing; before it, the run ended at the loss naming the synchrocell.
#[test]
fn a_star_fused_synchrocell_in_a_placement_inside_a_loop_survives_a_loss() {
    static P: OnceLock<Vec<PathBuf>> = OnceLock::new();
    let exe = &P.get_or_init(|| {
        build_all(
            "respawn-fused-looped",
            std::iter::once(("fused", FUSED_LOOPED.to_string())),
        )
    })[0];
    let want = run_shm(exe, 2, 200, None, &["--workers", "2"]);
    assert!(want.ok, "{}", want.stderr);
    let want = records(&want.stdout);
    let count = |label: &str| -> usize {
        want.iter()
            .filter(|(l, _)| l.contains(label))
            .map(|(_, n)| n)
            .sum()
    };
    assert_eq!(count("\"o\""), 67, "{want:?}");
    assert_eq!(count("\"m\""), 66, "{want:?}");
    let runs = [
        ("1000", "1"),
        ("1012", "1"),
        ("1012", "2"),
        ("1198", "2"),
        ("1396", "2"),
        ("1012", "8"),
        ("1198", "8"),
    ];
    for (at, workers) in runs {
        let what = format!("lost on {at}, {workers} workers");
        let out = replaced(exe, 2, &format!("kill@{at}"), workers, &what);
        assert_eq!(records(&out), want, "{what}");
    }
    // In round 2, after the drain (the 20th record is in the burst the
    // drain lets out), and in round 1 (the victim naps 2 ms a record).
    for kill in [Kill::After(20), Kill::AfterMs(50)] {
        let (out, stderr) = killed_from_outside(exe, 2, 1, kill);
        assert_eq!(
            records(&out),
            want,
            "killed from outside ({kill:?}): {stderr}"
        );
    }
}

/// Placements inside placements on another node (3 nodes; issue 40's
/// last static placement that ended the run): `(name, connect body, the
/// node the victim box runs on, whether the output's order is fixed)`.
/// Under `--on-node-loss respawn` the outer placement is pushed down to
/// the parts that place nothing (`Graph::placed_for_replay`): the
/// combinators enclosing an inner placement (a serial composition, a
/// parallel one, a star, a split, `!!`, a feedback loop) run on node 0,
/// and every record crossing nodes passes node 0's custody log. The
/// victim is on node 1 (the outer node) or on node 2 (the inner one), or
/// inside a `!@` inside the placement; one inner placement is on node 0
/// (its records used to come back to node 1 past the log).
const NESTED: [(&str, &str, u32, bool); 10] = [
    ("serial-outer", "((touch @ 2) .. victim) @ 1", 1, false),
    ("serial-inner", "((victim @ 2) .. touch) @ 1", 2, false),
    (
        "parallel",
        "([{<k>} -> if <k % 2 == 0> then {<k>, <e>} else {<k>, <o>}] .. \
         ((([{<k>, <o>} -> {<k>}] .. victim) @ 2) | ([{<k>, <e>} -> {<k>}] .. touch))) @ 1",
        2,
        false,
    ),
    (
        "star",
        "([{<k>} -> {<k>, <c = k % 4>}] .. \
         (([{<c>} -> {<c = c - 1>}] .. victim .. (touch @ 2)) * {<c>} if <c <= 0>)) @ 1",
        1,
        false,
    ),
    (
        "split",
        "([{<k>} -> {<k>, <c = k % 4>}] .. (((victim @ 2) .. touch) ! <c>)) @ 1",
        2,
        false,
    ),
    (
        "det-split",
        "([{<k>} -> {<k>, <c = k % 4>}] .. (((touch @ 2) .. victim) !! <c>)) @ 1",
        1,
        true,
    ),
    (
        "feedback-outer",
        "([{<k>} -> {<k>, <c = k % 4>}] .. victim .. \
         (([{<c>} -> {<c = c - 1>}] .. (touch @ 2)) \\ {<c>} if <c >= 0>)) @ 1",
        1,
        false,
    ),
    (
        "feedback-inner",
        "([{<k>} -> {<k>, <c = k % 4>}] .. \
         (([{<c>} -> {<c = c - 1>}] .. (victim @ 2)) \\ {<c>} if <c >= 0>) .. touch) @ 1",
        2,
        false,
    ),
    (
        "dynamic",
        "([{<k>} -> {<k>, <n = 1 + k % 2>}] .. (victim !@ <n>) .. touch) @ 1",
        2,
        false,
    ),
    ("on-node-0", "((touch @ 0) .. victim) @ 1", 1, false),
];

/// The programs of [`NESTED`], built once.
fn nested_programs() -> &'static Vec<PathBuf> {
    static P: OnceLock<Vec<PathBuf>> = OnceLock::new();
    P.get_or_init(|| {
        let table: Vec<(&str, &str, usize)> = NESTED.iter().map(|(n, b, ..)| (*n, *b, 0)).collect();
        build_det("respawn-nested", &table)
    })
}

/// Fails unless `got` is `want` (a multiset, or in order when `ordered`).
fn same_output(got: &str, want: &str, ordered: bool, what: &str) {
    if ordered {
        same_order(got, want, what);
    } else {
        assert_eq!(records(got), records(want), "{what}");
    }
}

/// Each program of [`NESTED`] on 3 shm nodes, the victim's node losing
/// itself on the record `k` = 3, 37 or 151 reaches it (at 1, 2 and 8
/// workers): node 0 replaces it, and the output is the failure-free
/// run's (in the same order for `!!`). Before, every one of these runs
/// ended at the loss, naming the inner placement (or, with the inner
/// placement on node 0, went on and lost the records node 0 had sent
/// back to node 1).
#[test]
fn a_placement_inside_a_placement_survives_the_loss_of_either_node() {
    for (exe, (name, _, node, ordered)) in nested_programs().iter().zip(NESTED) {
        let want = run_shm(exe, 3, 200, None, &["--workers", "2"]);
        assert!(want.ok, "{name}: {}", want.stderr);
        assert_eq!(in_order(&want.stdout).len(), 201, "{name}");
        for (at, workers) in [("3", "1"), ("37", "2"), ("151", "8")] {
            let what = format!("{name}, node {node} lost at {at}, {workers} workers");
            let out = replaced(exe, 3, &format!("kill@{at}"), workers, &what);
            same_output(&out, &want.stdout, ordered, &what);
        }
    }
}

/// Nested placements' nodes SIGKILLed from outside (the victim naps 2 ms
/// a record), at a moment the test does not choose: node 1 (the outer
/// placement's) and node 2 (the inner one's) of the serial program, once
/// 20 and 120 records are written, and node 1 of `!!` 1 and 50 ms after
/// its process appeared (its output comes in a burst at the end).
#[test]
fn a_nested_placement_killed_from_outside_is_replaced() {
    let cases = [
        (0, 1, Kill::After(20)),
        (0, 2, Kill::After(120)),
        (1, 2, Kill::After(20)),
        (1, 1, Kill::After(120)),
        (5, 1, Kill::AfterMs(1)),
        (5, 2, Kill::AfterMs(50)),
    ];
    each_killed_from_outside(nested_programs(), &cases, |i| (NESTED[i].0, NESTED[i].3));
}

/// For each `(i, node, kill)` of `cases`: `progs[i]` on 3 shm nodes, its
/// node `node` SIGKILLed when `kill` says, writes what a run without a
/// loss writes (`name(i)`: the program's name, and whether its output is
/// compared in order); each program's run without a loss is made once.
fn each_killed_from_outside(
    progs: &[PathBuf],
    cases: &[(usize, u32, Kill)],
    name: impl Fn(usize) -> (&'static str, bool),
) {
    let mut wanted = BTreeMap::new();
    for &(i, node, kill) in cases {
        let (exe, (name, ordered)) = (&progs[i], name(i));
        let want = wanted.entry(i).or_insert_with(|| {
            let want = run_shm(exe, 3, 200, None, &["--workers", "2"]);
            assert!(want.ok, "{name}: {}", want.stderr);
            want
        });
        let (out, stderr) = killed_from_outside(exe, 3, node, kill);
        let what = format!("{name}, node {node} killed {kill:?}: {stderr}");
        same_output(&out, &want.stdout, ordered, &what);
    }
}

/// Boxes whose records carry fields of 16 KiB (4096 ints: more than a
/// ring slot, so in zero-copy mode, the default, they are made in the
/// shared arena): `make` makes `a[i] = 3k + i` and `b[i] = 5k - i`
/// (`SNET_TEST_VICTIM=kill@K` kills its process on `k == K` in the middle
/// of writing `a`: a block allocated, half written, never sent; `nap`
/// sleeps 2 ms a record), `add` makes `c = a + b` (every element `8k`),
/// and `check` says whether every element of `c` is `8k` and sums them.
const FIELD_BOXES: &str = r#"
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "C4SNet.h"

#define N 4096

static int first_life(void)
{
    const char *g = getenv("SNET_SHM_INCARNATION");
    return g == NULL || strcmp(g, "0") == 0;
}

void *make(void *hnd, int k)
{
    const char *how = getenv("SNET_TEST_VICTIM");
    const char *at = getenv("SNET_TEST_AT");
    int *a, *b;
    c4snet_data_t *da = C4SNetAlloc(CTYPE_int, N, (void **)&a);
    if (how != NULL && strcmp(how, "nap") == 0) usleep(2000);
    for (int i = 0; i < N / 2; i++) a[i] = 3 * k + i;
    if (how != NULL && strcmp(how, "kill") == 0 && at != NULL && k == atoi(at) && first_life())
        kill(getpid(), SIGKILL);
    for (int i = N / 2; i < N; i++) a[i] = 3 * k + i;
    c4snet_data_t *db = C4SNetAlloc(CTYPE_int, N, (void **)&b);
    for (int i = 0; i < N; i++) b[i] = 5 * k - i;
    C4SNetOut(hnd, 1, da, db, k);
    return hnd;
}

void *add(void *hnd, c4snet_data_t *da, c4snet_data_t *db, int k)
{
    const int *a = C4SNetGetData(da), *b = C4SNetGetData(db);
    int *c;
    c4snet_data_t *dc = C4SNetAlloc(CTYPE_int, N, (void **)&c);
    for (int i = 0; i < N; i++) c[i] = a[i] + b[i];
    C4SNetFree(da);
    C4SNetFree(db);
    C4SNetOut(hnd, 1, dc, k);
    return hnd;
}

void *check(void *hnd, c4snet_data_t *dc, int k)
{
    const int *c = C4SNetGetData(dc);
    int ok = C4SNetArraySize(dc) == N;
    long s = 0;
    for (int i = 0; ok && i < N; i++) {
        ok = c[i] == 8 * k;
        s += c[i];
    }
    C4SNetFree(dc);
    C4SNetOut(hnd, 1, k, ok, (int)(s % 1000003));
    return hnd;
}
"#;

/// Fields made on node 1, changed on node 2, checked on node 0.
const FIELDS: &str = r#"
net zc {
  box make((<k>) -> (a, b, <k>));
  box add((a, b, <k>) -> (c, <k>));
  box check((c, <k>) -> (<k>, <ok>, <s>));
} connect (make @ 1) .. (add @ 2) .. check;
"#;

/// The program of [`FIELDS`], built once.
fn fields_program() -> &'static PathBuf {
    static P: OnceLock<PathBuf> = OnceLock::new();
    P.get_or_init(|| built_with_box("respawn-fields", FIELD_BOXES, FIELDS).1)
}

/// Runs the fields program on 3 shm nodes with 200 records, with
/// `workers` workers and `env` set (`--stats`, and `--on-node-loss
/// respawn` if `respawn`).
fn run_fields(env: &[(&str, &str)], workers: &str, respawn: bool) -> Run {
    let exe = fields_program();
    let mut cmd = Command::new(exe);
    cmd.args(["--transport", "shm", "--nodes", "3"])
        .env_remove("SNET_TEST_VICTIM")
        .env_remove("SNET_TEST_FAULT");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut args = vec!["--workers", workers, "--stats"];
    if respawn {
        args.extend(["--on-node-loss", "respawn"]);
    }
    let tag: String = env.iter().map(|(k, v)| format!("{k}{v}")).collect();
    let dir = exe.with_file_name(format!("in-{tag}-{}", args.join("")));
    std::fs::create_dir_all(&dir).unwrap();
    run_with(cmd, &dir.join("x"), &k_records(200), &args)
}

/// The failure-free output of the fields program (`fail`): every record
/// checked (`<ok>` 1).
fn fields_reference() -> &'static BTreeMap<String, usize> {
    static R: OnceLock<BTreeMap<String, usize>> = OnceLock::new();
    R.get_or_init(|| {
        let r = run_fields(&[], "2", false);
        assert!(r.ok, "{}", r.stderr);
        let m = records(&r.stdout);
        assert_eq!(m.values().sum::<usize>(), 201, "{}", r.stdout);
        assert_eq!(
            m.keys()
                .filter(|l| l.contains(r#"<tag label="ok">1</tag>"#))
                .count(),
            200,
            "{}",
            r.stdout
        );
        m
    })
}

/// Under `respawn`, a node other than 0 sends a field made in the shared
/// arena (zero-copy) by reference, as `fail` does: it *gives* it to node
/// 0 (the block's offset in a message of its own, with a reference of its
/// own, ahead of the record), instead of copying its bytes. Nodes 1 and
/// 2 lose their process at several moments: in the middle of writing a
/// field (a block allocated, half written, never sent: `kill@K`, at 1,
/// 2 and 8 workers), between giving a field and sending the record that
/// holds it (`die-after-given`, the fault hook: the field is at node 0,
/// the record never comes, and the replacement gives it again), and
/// from outside mid-run. Every run writes exactly the failure-free
/// output (a record whose field was read half written, or took another
/// record's field, would have `<ok>` 0 or another sum).
#[test]
fn fields_in_the_shared_arena_go_by_reference_under_respawn_and_survive_a_loss() {
    let want = fields_reference();
    // Nothing lost: node 1 and node 2 give every field they make.
    let r = run_fields(&[], "2", true);
    assert!(r.ok, "{}", r.stderr);
    assert_eq!(&records(&r.stdout), want);
    for node in [1, 2] {
        let given = r
            .stderr
            .lines()
            .find(|l| l.contains(&format!("node {node}: ")) && l.contains("fields given"))
            .unwrap_or_else(|| panic!("node {node} gave no field: {}", r.stderr));
        let n = if node == 1 { 400 } else { 200 };
        assert!(given.contains(&format!(", {n} fields given")), "{given}");
    }
    for (at, workers) in [("0", "8"), ("37", "1"), ("150", "2")] {
        let what = format!("node 1 killed writing a field of record {at}, {workers} workers");
        let r = run_fields(
            &[("SNET_TEST_VICTIM", "kill"), ("SNET_TEST_AT", at)],
            workers,
            true,
        );
        assert!(r.ok, "{what}: {}", r.stderr);
        assert!(
            r.stderr.contains("replaced 1 lost node process"),
            "{what}: {}",
            r.stderr
        );
        assert_eq!(&records(&r.stdout), want, "{what}");
    }
    for (node, workers) in [(1, "1"), (1, "8"), (2, "2")] {
        let what = format!("node {node} lost after giving a field, {workers} workers");
        let fault = format!("die-after-given@{node}");
        let r = run_fields(&[("SNET_TEST_FAULT", &fault)], workers, true);
        assert!(r.ok, "{what}: {}", r.stderr);
        assert!(
            r.stderr.contains("replaced 1 lost node process"),
            "{what}: {}",
            r.stderr
        );
        assert_eq!(&records(&r.stdout), want, "{what}");
        // The field given by the lost process whose record never came
        // was dropped at node 0 when the node was replaced.
        assert!(
            r.stderr
                .contains("given fields of lost node processes dropped"),
            "{what}: {}",
            r.stderr
        );
    }
    for node in [1, 2] {
        let (out, stderr) = killed_from_outside(fields_program(), 3, node, Kill::After(50));
        assert_eq!(
            &records(&out),
            want,
            "node {node} killed from outside: {stderr}"
        );
    }
}

/// Placements inside a dynamic placement's replica (3 nodes; the last
/// placements that ended a run under `--on-node-loss respawn`): `(name,
/// connect body, the victim's input values at which it loses its node
/// (at 1, 2 and 8 workers), whether the output's order is fixed)`. The
/// replica's node is `<n>` = 1 or 2 (`1 + k % 2`); each replica runs
/// on node 0 with the parts of its body that place nothing on node `n`
/// (`Graph::placed_for_replay`), so the victim's node is, by the point,
/// the replica's node or the inner placement's. Cells in the body are
/// per replica: `cells` merges the first pair of each replica on node 2
/// (398 records; one cell for both would merge one pair); in
/// `dyn-in-dyn` the inner `!@`'s tag is made inside the outer body.
const IN_DYN: [(&str, &str, [&str; 3], bool); 5] = [
    (
        // Victim on node 2 inside both replicas.
        "inner",
        "[{<k>} -> {<k>, <n = 1 + k % 2>}] .. (((victim @ 2) .. touch) !@ <n>)",
        ["3", "36", "151"],
        false,
    ),
    (
        // Victim on the replica's node: 1 for even k, 2 for odd.
        "replica",
        "[{<k>} -> {<k>, <n = 1 + k % 2>}] .. ((victim .. (touch @ 2)) !@ <n>)",
        ["4", "37", "150"],
        false,
    ),
    (
        "cells",
        "[{<k>} -> {<k>, <n = 1 + k % 2>}] .. ((victim .. [{<k>} -> {<k>, <a = k>}; {<k>, <b = k>}] \
         .. ([| {<a>}, {<b>} |] @ 2) .. touch) !@ <n>)",
        ["4", "37", "150"],
        false,
    ),
    (
        "on-node-0",
        "[{<k>} -> {<k>, <n = 1 + k % 2>}] .. (((touch @ 0) .. victim) !@ <n>)",
        ["4", "37", "150"],
        false,
    ),
    (
        "dyn-in-dyn",
        "[{<k>} -> {<k>, <n = 1 + k % 2>}] .. \
         (([{<n>} -> {<n>, <m = 3 - n>}] .. (victim !@ <m>) .. touch) !@ <n>)",
        ["4", "37", "150"],
        false,
    ),
];

/// `!!@` with a placement inside: `(name, connect body, ordered output
/// records)` for [`build_det`].
const IN_DYN_DET: (&str, &str, usize) = (
    "det",
    "[{<k>} -> {<k>, <n = 1 + k % 2>}] .. (((touch @ 2) .. victim) !!@ <n>)",
    201,
);

/// The programs of [`IN_DYN`] and then [`IN_DYN_DET`], built once.
fn in_dyn_programs() -> &'static Vec<PathBuf> {
    static P: OnceLock<Vec<PathBuf>> = OnceLock::new();
    P.get_or_init(|| {
        let mut table: Vec<(&str, &str, usize)> =
            IN_DYN.iter().map(|(n, b, ..)| (*n, *b, 0)).collect();
        table.push(IN_DYN_DET);
        build_det("respawn-in-dyn", &table)
    })
}

/// Each program of [`IN_DYN`] (and `!!@`, its order checked) on 3 shm
/// nodes, the victim's node losing itself at the three points (1, 2 and
/// 8 workers): node 0 replaces it, and the output is the failure-free
/// run's. Before, each of these runs ended at the loss, naming the
/// placement inside the replica (`Graph::replay_boundary`), or, with the
/// victim on the replica's node, lost the records node 0 had sent back
/// to it.
#[test]
fn a_placement_inside_a_dynamic_placements_replica_survives_the_loss_of_either_node() {
    let progs = in_dyn_programs();
    let det = [(IN_DYN_DET.0, ["4", "37", "150"], true)];
    let cases = IN_DYN.iter().map(|(n, _, at, o)| (*n, *at, *o)).chain(det);
    for (exe, (name, points, ordered)) in progs.iter().zip(cases) {
        let want = run_shm(exe, 3, 200, None, &["--workers", "2"]);
        assert!(want.ok, "{name}: {}", want.stderr);
        let records = if name == "cells" { 399 } else { 201 };
        assert_eq!(in_order(&want.stdout).len(), records, "{name}");
        for (at, workers) in points.iter().zip(["1", "2", "8"]) {
            let what = format!("{name}, lost at {at}, {workers} workers");
            let out = replaced(exe, 3, &format!("kill@{at}"), workers, &what);
            same_output(&out, &want.stdout, ordered, &what);
        }
    }
}

/// The replica's node and the inner placement's node of [`IN_DYN`]'s
/// `replica` and `cells` SIGKILLed from outside (the victim naps 2 ms a
/// record), once 20 or 120 records are written.
#[test]
fn a_placement_inside_a_replica_killed_from_outside_is_replaced() {
    let cases = [
        (1, 1, Kill::After(20)),
        (1, 2, Kill::After(120)),
        (2, 2, Kill::After(20)),
        (2, 1, Kill::After(120)),
    ];
    each_killed_from_outside(in_dyn_programs(), &cases, |i| (IN_DYN[i].0, false));
}
