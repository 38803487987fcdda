//! `--trace`, `--profile` and `--profile-json` (issue 25 §2, §3): a small
//! program with known numbers of box calls and synchrocell firings, run at
//! 1 and 2 workers, on 2 loopback nodes and on 2 shared-memory nodes; the
//! files are read back and their structure checked (no timings are
//! asserted).

mod common;

use std::collections::{HashMap, HashSet};
use std::path::Path;

use serde_json::Value;

/// `dup` makes two records of each, the split synchrocell joins them
/// again (one firing per `<k>`), `inc` is called once per `<k>`; the
/// right half runs on node 1 when there are two nodes.
const PROG: &str = r#"
net traced {
  box dup((<k>) -> (<k>, <a>) | (<k>, <b>));
  box inc((<k>) -> (<k>));
} connect dup .. (([| {<a>}, {<b>} |] ! <k>) .. inc) @ 1 .. [{<k>} -> {<k>, <done>}];
"#;

const BOXES: &str = r#"
#include "C4SNet.h"
void *dup(void *hnd, int k) { C4SNetOut(hnd, 1, k, 1); C4SNetOut(hnd, 2, k, 2); return hnd; }
void *inc(void *hnd, int k) { C4SNetOut(hnd, 1, k + 1); return hnd; }
"#;

const N: u64 = 200;
const SAMPLE: u64 = 7;

fn build(dir: &Path) -> std::path::PathBuf {
    std::fs::write(dir.join("traced.snet"), PROG).unwrap();
    std::fs::write(dir.join("boxes.c"), BOXES).unwrap();
    let exe = dir.join("traced");
    common::snet_build(&dir.join("traced.snet"), &[dir.join("boxes.c")], &exe);
    exe
}

/// Nanoseconds from a Trace Event Format time (microseconds, 3 decimals).
fn ns(v: &Value) -> i64 {
    (v.as_f64().expect("a number") * 1000.0).round() as i64
}

fn s<'a>(e: &'a Value, k: &str) -> &'a str {
    e[k].as_str().unwrap_or("")
}

/// A complete event: start and end (ns), name.
type Slice = (i64, i64, String);

/// The flows that start from an input record (no `parent`): their ids are
/// the input records' numbers.
fn root_flows(events: &[Value]) -> HashSet<i64> {
    events
        .iter()
        .filter(|e| s(e, "ph") == "s" && e["args"]["parent"].is_null())
        .map(|e| e["id"].as_i64().expect("flow id"))
        .collect()
}

/// Every flow is a chain a viewer (Perfetto, chrome://tracing) draws
/// whole: exactly one `s`, first in time, exactly one `f`, last; `t`s
/// between. A record that fans out starts child flows, each naming its
/// parent flow (`args.parent`) and starting at an event of that parent on
/// the same thread at the same time (the step that made it). There are
/// children: the program fans out (`dup` emits two records per call).
fn check_chains(events: &[Value], what: &str) {
    let mut by_id: HashMap<i64, Vec<&Value>> = HashMap::new();
    for e in events {
        if matches!(s(e, "ph"), "s" | "t" | "f") {
            by_id
                .entry(e["id"].as_i64().expect("flow id"))
                .or_default()
                .push(e);
        }
    }
    let mut children = 0;
    for (id, evs) in &by_id {
        let of = |ph: &str| evs.iter().filter(|e| s(e, "ph") == ph).collect::<Vec<_>>();
        let (starts, steps, ends) = (of("s"), of("t"), of("f"));
        assert!(
            starts.len() == 1 && ends.len() == 1,
            "{what}: flow {id} has {} s, {} t and {} f events",
            starts.len(),
            steps.len(),
            ends.len()
        );
        let (t0, t1) = (ns(&starts[0]["ts"]), ns(&ends[0]["ts"]));
        for e in evs {
            let t = ns(&e["ts"]);
            assert!(
                t0 <= t && t <= t1,
                "{what}: flow {id}: {e} is not between its s ({t0} ns) and its f ({t1} ns)"
            );
        }
        if let Some(p) = starts[0]["args"]["parent"].as_i64() {
            children += 1;
            let st = starts[0];
            let parent = by_id
                .get(&p)
                .unwrap_or_else(|| panic!("{what}: flow {id}'s parent {p} has no events"));
            assert!(
                parent.iter().any(|q| q["pid"] == st["pid"]
                    && q["tid"] == st["tid"]
                    && ns(&q["ts"]) == t0
                    && s(q, "ph") != "f"),
                "{what}: flow {id} does not start at an event of its parent {p}: {st}"
            );
        }
    }
    assert!(
        children > 0,
        "{what}: no flow starts from a parent: the fan-out is not drawn"
    );
}

/// Checks the trace's structure; returns the pids with events.
fn check_trace(path: &Path, what: &str) -> HashSet<i64> {
    let text = std::fs::read_to_string(path).expect("the trace file");
    let events: Vec<Value> = serde_json::from_str::<Value>(&text)
        .unwrap_or_else(|e| panic!("{what}: the trace is not JSON: {e}"))
        .as_array()
        .unwrap_or_else(|| panic!("{what}: the trace is not an array"))
        .clone();
    check_chains(&events, what);
    let mut slices: HashMap<(i64, i64), Vec<Slice>> = HashMap::new();
    let mut count: HashMap<(String, String), u64> = HashMap::new();
    let mut named_threads = HashSet::new();
    let mut named_procs = HashSet::new();
    let mut flows: HashMap<i64, Vec<(String, i64, i64)>> = HashMap::new();
    let mut counters: HashMap<(i64, String), i64> = HashMap::new();
    for e in &events {
        let pid = e["pid"].as_i64().expect("pid");
        let tid = e["tid"].as_i64().expect("tid");
        match s(e, "ph") {
            "X" => {
                let (ts, dur) = (ns(&e["ts"]), ns(&e["dur"]));
                assert!(dur >= 0, "{what}: negative duration: {e}");
                assert!(
                    e["args"]["loc"].is_string() && e["args"]["net"].is_string(),
                    "{what}: {e}"
                );
                slices.entry((pid, tid)).or_default().push((
                    ts,
                    ts + dur,
                    s(e, "name").to_string(),
                ));
                *count
                    .entry((s(e, "cat").to_string(), s(e, "name").to_string()))
                    .or_default() += 1;
            }
            "M" if s(e, "name") == "thread_name" => {
                named_threads.insert((pid, tid));
            }
            "M" if s(e, "name") == "process_name" => {
                named_procs.insert(pid);
            }
            "M" => {}
            ph @ ("s" | "t" | "f") => {
                flows
                    .entry(e["id"].as_i64().expect("flow id"))
                    .or_default()
                    .push((ph.to_string(), ns(&e["ts"]), pid));
            }
            "C" => {
                let v = e["args"]["value"].as_i64().expect("counter value");
                let c = counters.entry((pid, s(e, "name").to_string())).or_default();
                *c = (*c).max(v);
            }
            other => panic!("{what}: unexpected phase {other}: {e}"),
        }
    }
    // Complete events on one thread never cross: each lies inside the
    // enclosing one or after it ends (a batch holds its box calls).
    for (thread, v) in &mut slices {
        assert!(
            named_threads.contains(thread),
            "{what}: thread {thread:?} unnamed"
        );
        assert!(
            named_procs.contains(&thread.0),
            "{what}: process {} unnamed",
            thread.0
        );
        v.sort_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)));
        let mut open: Vec<&Slice> = Vec::new();
        for ev in v.iter() {
            while open.last().is_some_and(|top| top.1 <= ev.0) {
                open.pop();
            }
            if let Some(top) = open.last() {
                assert!(
                    ev.1 <= top.1,
                    "{what}: on thread {thread:?}, {ev:?} overlaps {top:?} without nesting"
                );
            }
            open.push(ev);
        }
    }
    let n = |cat: &str, name: &str| count.get(&(cat.into(), name.into())).copied().unwrap_or(0);
    assert_eq!(n("box", "dup"), N, "{what}: box events of dup");
    assert_eq!(n("box", "inc"), N, "{what}: box events of inc");
    assert_eq!(n("sync", "synchrocell"), N, "{what}: synchrocell firings");
    // Every flow that starts ends, and nothing continues a flow that never
    // started; on one time base, a flow never goes back before its start.
    assert!(!flows.is_empty(), "{what}: no flow events");
    let roots = root_flows(&events);
    for (id, hops) in &flows {
        assert!(
            !roots.contains(id) || (id - 1) % SAMPLE as i64 == 0,
            "{what}: flow {id} was not sampled"
        );
        let start = hops.iter().filter(|h| h.0 == "s").map(|h| h.1).min();
        let start = start.unwrap_or_else(|| panic!("{what}: flow {id} has no start: {hops:?}"));
        assert!(
            hops.iter().any(|h| h.0 == "f"),
            "{what}: flow {id} has no end: {hops:?}"
        );
        for h in hops {
            assert!(
                h.1 >= start,
                "{what}: flow {id} goes back in time: {hops:?}"
            );
        }
    }
    assert_eq!(
        counters.get(&(0, "input admitted".into())),
        Some(&(N as i64)),
        "{what}"
    );
    assert_eq!(
        counters.get(&(0, "output written".into())),
        Some(&(N as i64)),
        "{what}"
    );
    let pids: HashSet<i64> = slices.keys().map(|k| k.0).collect();
    if pids.len() > 1 {
        // Sampled records cross to node 1 and back.
        assert!(
            flows
                .values()
                .any(|h| h.iter().any(|x| x.2 == 0) && h.iter().any(|x| x.2 == 1)),
            "{what}: no flow crosses nodes"
        );
    }
    pids
}

/// The profile's counts, summed over nodes, per component name.
fn check_profile(path: &Path, nodes: usize, what: &str) {
    let text = std::fs::read_to_string(path).expect("the profile file");
    let v: Value = serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("{what}: the profile is not JSON: {e}\n{text}"));
    let list = v["nodes"].as_array().expect("nodes");
    assert_eq!(list.len(), nodes, "{what}: {text}");
    let mut sum: HashMap<String, [u64; 4]> = HashMap::new();
    for node in list {
        for c in node["components"].as_array().expect("components") {
            let e = sum
                .entry(c["name"].as_str().unwrap().to_string())
                .or_default();
            for (i, k) in ["calls", "records_in", "records_out", "suspensions"]
                .iter()
                .enumerate()
            {
                e[i] += c[k].as_u64().expect(k);
            }
            assert!(
                c["loc"].is_string() && c["busy_share"].is_f64(),
                "{what}: {c}"
            );
        }
    }
    assert_eq!(sum["dup"][..3], [N, N, 2 * N], "{what}: dup calls, in, out");
    assert_eq!(sum["inc"][..3], [N, N, N], "{what}: inc calls, in, out");
    assert_eq!(sum["synchrocell"][0], N, "{what}: synchrocell firings");
    assert_eq!(sum["output"][1], N, "{what}: records written");
}

#[test]
fn traces_and_profiles_have_the_known_counts_on_every_transport() {
    let dir = common::scratch("trace");
    let exe = build(&dir);
    let input = common::k_records(N as usize);
    let cases: [(&str, &[&str], usize); 4] = [
        ("1 worker", &["-w", "1"], 1),
        ("2 workers", &["-w", "2"], 1),
        (
            "2 loopback nodes",
            &["-w", "2", "--nodes", "2", "--transport", "loopback"],
            2,
        ),
        (
            "2 shm nodes",
            &["-w", "1", "--nodes", "2", "--transport", "shm"],
            2,
        ),
    ];
    for (what, args, nodes) in cases {
        let trace = dir.join(format!("{}.trace.json", what.replace(' ', "-")));
        let prof = dir.join(format!("{}.profile.json", what.replace(' ', "-")));
        let sample = SAMPLE.to_string();
        let mut all: Vec<&str> = args.to_vec();
        all.extend([
            "--trace",
            trace.to_str().unwrap(),
            "--trace-sample",
            &sample,
            "--profile",
            "--profile-json",
            prof.to_str().unwrap(),
        ]);
        let r = common::run(&exe, &input, &all);
        assert!(r.ok, "{what}: {}", r.stderr);
        assert_eq!(
            r.stdout.matches("<tag label=\"done\">").count(),
            N as usize,
            "{what}"
        );
        assert!(
            r.stderr.contains("profile of node 0"),
            "{what}: {}",
            r.stderr
        );
        assert!(
            r.stderr.lines().any(|l| l.trim_start().starts_with("dup ")),
            "{}",
            r.stderr
        );
        let pids = check_trace(&trace, what);
        assert_eq!(pids.len(), nodes, "{what}: nodes with events");
        check_profile(&prof, nodes, what);
        // Node 0 merged the other nodes' parts and removed them.
        let parts: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .filter_map(|e| e.ok())
            .filter(|e| e.file_name().to_string_lossy().contains(".node-"))
            .collect();
        assert!(parts.is_empty(), "{what}: parts left: {parts:?}");
    }
    // At the default sample rate (1000) a run of fewer records still
    // follows its first input record: the docs' ray tracer example (one
    // input record) shows an arrow.
    let trace = dir.join("default-sample.trace.json");
    let r = common::run(
        &exe,
        &input,
        &["-w", "1", "--trace", trace.to_str().unwrap()],
    );
    assert!(r.ok, "default sample: {}", r.stderr);
    let text = std::fs::read_to_string(&trace).expect("the trace file");
    let events: Vec<Value> = serde_json::from_str(&text).expect("the trace is JSON");
    assert_eq!(
        root_flows(&events),
        HashSet::from([1]),
        "default sample: the first input record's flow only"
    );
    check_chains(&events, "default sample");
    // The profile drawn on the network: each box labelled with its counts.
    let prof = dir.join("2-shm-nodes.profile.json");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_snet"))
        .arg("graph")
        .arg(dir.join("traced.snet"))
        .arg("--profile")
        .arg(&prof)
        .output()
        .expect("run snet graph");
    let dot = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        dot.contains(&format!("{N} calls, {N} in, {} out", 2 * N)),
        "{dot}"
    );
    assert!(dot.contains("fillcolor="), "{dot}");
    // A file that is not a profile is refused, with a message.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_snet"))
        .arg("graph")
        .arg(dir.join("traced.snet"))
        .arg("--profile")
        .arg(dir.join("traced.snet"))
        .output()
        .expect("run snet graph");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("is not a profile"));
    let _ = std::fs::remove_dir_all(&dir);
}
