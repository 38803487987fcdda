//! Helpers shared by the distributed-run tests (loopback and MPI): C boxes
//! that make, check and pass big fields, a builder, a runner and a parser
//! of `--stats` lines.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// A run that has not ended after this long is killed and fails the test.
pub const HANG: Duration = Duration::from_secs(120);

/// Runs `cmd` to the end, or kills it after [`HANG`] and fails.
pub fn output_guarded(mut cmd: Command) -> Output {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the program");
    // Drain both pipes on threads, so a chatty run never blocks on them.
    let mut out = child.stdout.take().expect("piped");
    let mut err = child.stderr.take().expect("piped");
    let out = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = std::io::Read::read_to_end(&mut out, &mut v);
        v
    });
    let err = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = std::io::Read::read_to_end(&mut err, &mut v);
        v
    });
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().expect("wait") {
            break s;
        }
        if start.elapsed() > HANG {
            let _ = child.kill();
            let _ = child.wait();
            let err = err.join().unwrap_or_default();
            panic!(
                "hung: no end after {HANG:?}\n{}",
                String::from_utf8_lossy(&err)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Output {
        status,
        stdout: out.join().unwrap_or_default(),
        stderr: err.join().unwrap_or_default(),
    }
}

pub const BOXES: &str = r#"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
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

/* Takes its time (20 ms a record): keeps a run going. */
void *slow(void *hnd, int k)
{
    usleep(20000);
    C4SNetOut(hnd, 1, k);
    return hnd;
}

/* Crashes (SIGSEGV) on the record with k == 5. */
void *crash(void *hnd, int k)
{
    if (k == 5) {
        volatile int *p = 0;
        *p = k;
    }
    C4SNetOut(hnd, 1, k);
    return hnd;
}

/* Where it runs: its node's variables as the box sees them (getenv), and
   whether its process was exec'd as a node (its start-up environment,
   /proc/self/environ, names the node) and is named as one (the main
   thread's name, /proc/self/comm, is snet-node-K). */
void *whoami(void *hnd, int k)
{
    const char *n = getenv("SNET_SHM_NODE"), *g = getenv("SNET_SHM_INCARNATION");
    int node = n ? atoi(n) : -1, inc = g ? atoi(g) : -1, execd = 0, named = 0;
    char buf[65536], want[32];
    FILE *f = fopen("/proc/self/environ", "r");
    if (f) {
        size_t len = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        for (size_t i = 0; i < len; i += strlen(buf + i) + 1) {
            buf[len] = 0;
            execd |= strncmp(buf + i, "SNET_SHM_NODE=", 14) == 0;
        }
    }
    snprintf(want, sizeof want, "snet-node-%d\n", node);
    f = fopen("/proc/self/comm", "r");
    if (f) {
        named = fgets(buf, sizeof buf, f) && strcmp(buf, want) == 0;
        fclose(f);
    }
    C4SNetOut(hnd, 1, k, node, inc, execd, named);
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

pub fn checksum(mib: usize, seed: u32) -> i64 {
    let mut x = seed;
    let mut h: u64 = 1469598103934665603;
    for _ in 0..mib << 20 {
        x = x.wrapping_mul(1103515245).wrapping_add(12345);
        h = (h ^ u64::from((x >> 16) as u8)).wrapping_mul(1099511628211);
    }
    (h & 0x7fff_ffff) as i64
}

pub fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("snet-dist-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&d).expect("scratch dir");
    d
}

/// Builds `prog` (with the boxes above) in `dir`; returns the executable.
pub fn build(dir: &Path, prog: &str) -> PathBuf {
    std::fs::write(dir.join("prog.snet"), prog).unwrap();
    std::fs::write(dir.join("boxes.c"), BOXES).unwrap();
    let exe = dir.join("prog");
    snet_build(&dir.join("prog.snet"), &[dir.join("boxes.c")], &exe);
    exe
}

/// `snet build prog sources -o exe`, which must succeed.
pub fn snet_build(prog: &Path, sources: &[PathBuf], exe: &Path) {
    let out = Command::new(env!("CARGO_BIN_EXE_snet"))
        .arg("build")
        .arg(prog)
        .args(sources)
        .arg("-o")
        .arg(exe)
        .output()
        .expect("run snet build");
    assert!(
        out.status.success(),
        "snet build failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `n` records with tags `<k>` 0..n, then the terminate record.
pub fn k_records(n: usize) -> String {
    let mut input = String::new();
    for k in 0..n {
        input.push_str(&format!(
            "<record type=\"data\"><tag label=\"k\">{k}</tag></record>"
        ));
    }
    input.push_str("<record type=\"terminate\" />");
    input
}

/// `fragile` (fails on k == 3) on node 2.
pub const FRAGILE_PROG: &str = r#"
net fault {
  box fragile((<k>) -> (<k>));
} connect fragile @ 2;
"#;

/// The input of [`BIG_PROG`] for one 64 MiB field.
pub const BIG_INPUT: &str = r#"<?xml version="1.0" ?>
<record type="data"><tag label="mib">64</tag><tag label="seed">7</tag><tag label="k">1</tag></record>
<record type="terminate" />"#;

/// Checks a 4-node run of [`BIG_PROG`] on [`BIG_INPUT`] with `--stats`: the
/// checksum is right, only node 2 (check) fetched the field, from node 1
/// (make); touch on node 3 and the output on node 0 never needed it, so
/// their traffic stays far below the field's size; every store is empty.
pub fn check_big_field_run(r: &Run) {
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
    assert_eq!(stats[2]["fetched"], 1, "{}", r.stderr);
    assert!(stats[2]["field bytes"] >= 64 << 20, "{}", r.stderr);
    for n in [0, 1, 3] {
        assert_eq!(stats[n]["fetched"], 0, "node {n}: {}", r.stderr);
        assert!(
            stats[n]["bytes received"] < 1 << 20,
            "node {n} received the field's bytes: {}",
            r.stderr
        );
    }
    assert!(stats[1]["bytes sent"] >= 64 << 20, "{}", r.stderr);
    assert_stores_empty(&stats);
}

pub struct Run {
    pub ok: bool,
    pub stdout: String,
    pub stderr: String,
}

pub fn run(exe: &Path, input: &str, args: &[&str]) -> Run {
    run_with(Command::new(exe), exe, input, args)
}

/// Writes `input` to a file of its own in `dir` and returns its path
/// ([`run_with`] removes it when the run is over). Tests run at once, and two of them
/// running programs of one folder with the same arguments shared one
/// `input.xml`, rewritten (truncated first) by one while the other's run
/// read it: a run of `respawn.rs` read an empty input and wrote no record.
fn input_file(dir: &Path, input: &str) -> std::path::PathBuf {
    static RUNS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let run = RUNS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let inp = dir.join(format!("input-{run}.xml"));
    std::fs::write(&inp, input).unwrap();
    inp
}

/// As [`run`], started by `cmd` (e.g. `mpirun ... <exe>`).
pub fn run_with(mut cmd: Command, exe: &Path, input: &str, args: &[&str]) -> Run {
    let inp = input_file(exe.parent().unwrap(), input);
    cmd.arg("-i").arg(&inp).args(args);
    let out = output_guarded(cmd);
    let _ = std::fs::remove_file(&inp);
    Run {
        ok: out.status.success(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Per node: the numbers of its `--stats` line, by name (the line lists
/// them in this order; see `Stats`'s `Display`).
pub fn node_stats(stderr: &str) -> Vec<std::collections::HashMap<String, u64>> {
    const KEYS: [&str; 16] = [
        "node",
        "input",
        "output",
        "entities",
        "steals",
        "suspensions",
        "msgs sent",
        "bytes sent",
        "msgs received",
        "bytes received",
        "fetched",
        "field bytes",
        "exported",
        "exports",
        "proxies",
        "unacknowledged",
    ];
    let mut stats = stderr
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
        .collect::<Vec<std::collections::HashMap<String, u64>>>();
    // Under MPI every rank prints its own line, in any order.
    stats.sort_by_key(|s| s["node"]);
    stats
}

pub fn assert_stores_empty(stats: &[std::collections::HashMap<String, u64>]) {
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

pub const BIG_PROG: &str = r#"
net big {
  box make((<mib>, <seed>) -> (big, <seed>));
  box check((big) -> (big, <sum>, <size>));
  box touch((<k>) -> (<k>));
} connect (make @ 1) .. (touch @ 3) .. (check @ 2) .. [{big, <sum>} -> {<sum>}];
"#;

/// Back-pressure across nodes (ARCHITECTURE.md, "It cannot deadlock", rule
/// 3): `lag` on node 1 takes far longer a record (100 µs) than node 0
/// takes to produce one, and nothing else holds node 0 back (no
/// `--input-limit`), so without the mechanism node 0 would send nearly all
/// [`LAG_RECORDS`] before node 1 acknowledges much.
pub const LAG_BOXES: &str = r#"
#include <unistd.h>
#include "C4SNet.h"

/* Emits <k> = 0 .. n-1, all in one call. */
void *burst(void *hnd, int n)
{
    for (int k = 0; k < n; k++) {
        C4SNetOut(hnd, 1, k);
    }
    return hnd;
}

/* Far slower than node 0 (100 us a record). */
void *lag(void *hnd, int k)
{
    usleep(100);
    C4SNetOut(hnd, 1, k);
    return hnd;
}
"#;

/// Input records straight to `lag` on node 1: only admission can hold node
/// 0 back (it admits while its backlog plus its unacknowledged items,
/// each weighing 1/8, stay under 1024).
pub const LAG_INPUT_PROG: &str = r#"
net lagging {
  box lag((<k>) -> (<k>));
} connect (lag @ 1) .. [{<k>} -> {<k>, <done = 1>}];
"#;

/// One input record, for which `burst` on node 0 emits every record in one
/// call: only the call's suspension can hold node 0 back (it goes on only
/// while the backlog plus the unacknowledged items, each weighing 1/8,
/// stay under 1024).
pub const LAG_BURST_PROG: &str = r#"
net bursting {
  box burst((<n>) -> (<k>));
  box lag((<k>) -> (<k>));
} connect burst .. (lag @ 1) .. [{<k>} -> {<k>, <done = 1>}];
"#;

/// Records each back-pressure run sends to node 1.
pub const LAG_RECORDS: usize = 20_000;

/// The most node 0 may have unacknowledged in a back-pressure run: the
/// window across nodes (8192 items, `ACK_WINDOW` in the engine's
/// `dist/mod.rs`) plus what its own inboxes hold and its workers add
/// between two checks (a batch of admitted records, a batch of a box
/// call's outputs each), with room to spare (seen: up to 8,590); far below
/// [`LAG_RECORDS`].
pub const UNACKNOWLEDGED_MAX: u64 = 8192 + 2048;

/// Runs [`LAG_INPUT_PROG`] and [`LAG_BURST_PROG`] on two nodes (`args`
/// choose the transport), without an input limit: every record arrives,
/// and node 0 never has more than [`UNACKNOWLEDGED_MAX`] unacknowledged.
/// Counts only: how slow node 1 is makes the mechanism matter, never what
/// is asserted.
pub fn check_backpressure(name: &str, args: &[&str]) {
    let dir = scratch(name);
    std::fs::write(dir.join("lag.c"), LAG_BOXES).unwrap();
    let n = LAG_RECORDS;
    let one = format!(
        "<record type=\"data\"><tag label=\"n\">{n}</tag></record><record type=\"terminate\" />"
    );
    let runs = [
        ("input", LAG_INPUT_PROG, k_records(n)),
        ("burst", LAG_BURST_PROG, one),
    ];
    for (what, prog, input) in runs {
        let sub = dir.join(what);
        std::fs::create_dir_all(&sub).unwrap();
        std::fs::write(sub.join("prog.snet"), prog).unwrap();
        let exe = sub.join("prog");
        snet_build(&sub.join("prog.snet"), &[dir.join("lag.c")], &exe);
        let mut all = args.to_vec();
        all.push("--stats");
        let r = run(&exe, &input, &all);
        assert!(r.ok, "{what}: {}", r.stderr);
        assert_eq!(
            r.stdout.matches("<tag label=\"done\">1</tag>").count(),
            n,
            "{what}: records lost"
        );
        let stats = node_stats(&r.stderr);
        assert_eq!(stats[0]["output"], n as u64, "{what}: {}", r.stderr);
        // Every record crossed to node 1, counted while unacknowledged.
        assert!(stats[0]["unacknowledged"] > 0, "{what}: {}", r.stderr);
        let peak = stats[0]["unacknowledged"];
        // Shown with --nocapture (the margin below the bound).
        eprintln!("{what}: node 0's peak {peak} unacknowledged");
        assert!(
            peak <= UNACKNOWLEDGED_MAX,
            "{what}: node 0 ran ahead of node 1: peak {peak} unacknowledged > {UNACKNOWLEDGED_MAX}\n{}",
            r.stderr
        );
    }
}

/// `mpirun` with what a test run needs and a user's never does: CI runs as
/// root, on fewer cores than ranks (`--oversubscribe`), and tests run side
/// by side (`--bind-to none`, or every run's rank 0 would share core 0;
/// and a session directory of its own, see [`ompi_session_base`]).
/// `tcp`: only the TCP network path (`--mca btl self,tcp`), as on a cluster.
pub fn mpirun(np: u32, tcp: bool) -> Command {
    let mut c = Command::new("mpirun");
    c.env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .env("OMPI_MCA_orte_tmpdir_base", ompi_session_base())
        .args(["--oversubscribe", "--bind-to", "none", "-np"])
        .arg(np.to_string());
    if tcp {
        c.args(["--mca", "btl", "self,tcp"]);
    }
    c
}

/// A fresh directory for one `mpirun`'s session files. Open MPI 4 creates
/// `<base>/ompi.<host>.<uid>` with a check-then-`mkdir` that is not atomic:
/// two `mpirun`s starting together under the same base can both see it
/// missing, and the loser fails in `orte_init` (`mkdir ...: File exists`)
/// before any snet code runs. One base per `mpirun` takes the race away.
/// The bases live in `snet-ompi-<test pid>/` under the temporary directory;
/// Open MPI empties each when its job ends, and the first call removes the
/// trees left by test processes that are gone.
fn ompi_session_base() -> PathBuf {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(0);
    static SWEEP: std::sync::Once = std::sync::Once::new();
    let tmp = std::env::temp_dir();
    SWEEP.call_once(|| {
        let Ok(dir) = std::fs::read_dir(&tmp) else {
            return;
        };
        for e in dir.flatten() {
            let name = e.file_name();
            let Some(pid) = name.to_str().and_then(|n| n.strip_prefix("snet-ompi-")) else {
                continue;
            };
            if !Path::new("/proc").join(pid).exists() {
                let _ = std::fs::remove_dir_all(e.path());
            }
        }
    });
    let d = tmp
        .join(format!("snet-ompi-{}", std::process::id()))
        .join(NEXT.fetch_add(1, Ordering::Relaxed).to_string());
    std::fs::create_dir_all(&d).expect("session directory for mpirun");
    d
}

/// Whether `mpirun` is on the PATH (scripts/setup.sh installs Open MPI).
pub fn have_mpirun() -> bool {
    Command::new("mpirun")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// The PID of a process whose environment holds every one of `vars`
/// (`NAME=value`; started processes inherit the environment of the test's
/// run, so a tag variable finds the processes of one run).
pub fn pid_with_env(vars: &[&str]) -> Option<u32> {
    std::fs::read_dir("/proc").ok()?.flatten().find_map(|e| {
        let pid: u32 = e.file_name().to_str()?.parse().ok()?;
        let env = std::fs::read(e.path().join("environ")).ok()?;
        let have: Vec<&[u8]> = env.split(|&b| b == 0).collect();
        vars.iter()
            .all(|v| have.contains(&v.as_bytes()))
            .then_some(pid)
    })
}

/// How a run killed in the middle ended.
pub struct Killed {
    pub status: std::process::ExitStatus,
    pub stderr: String,
    /// The output lines written after the kill.
    pub rest: Vec<String>,
}

/// Starts `cmd` (a run of 2000 records through a slow box: 40 s), waits
/// until 20 output records are out, SIGKILLs the process `victim` finds,
/// and returns how the run ended (failing the test if it hangs).
pub fn kill_mid_run(mut cmd: Command, victim: impl Fn() -> Option<u32>) -> Killed {
    use std::io::{BufRead, BufReader};
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the run");
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut seen = 0;
    while seen < 20 {
        match lines.next() {
            Some(Ok(l)) if l.contains("<record") => seen += 1,
            Some(Ok(_)) => {}
            _ => break,
        }
    }
    assert_eq!(seen, 20, "the run ended before it could be killed");
    let pid = victim().expect("the victim's process");
    // SAFETY: kill(2) of a process this test started (through the run).
    assert_eq!(unsafe { libc::kill(pid as i32, libc::SIGKILL) }, 0);
    // Drain stdout so the run never blocks on a full pipe, then wait.
    let rest = std::thread::spawn(move || lines.map_while(Result::ok).collect::<Vec<_>>());
    let mut err = child.stderr.take().unwrap();
    let stderr = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = std::io::Read::read_to_string(&mut err, &mut s);
        s
    });
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().expect("wait") {
            break s;
        }
        if start.elapsed() > HANG {
            let _ = child.kill();
            panic!("hung after a process was killed");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Killed {
        status,
        stderr: stderr.join().unwrap_or_default(),
        rest: rest.join().unwrap_or_default(),
    }
}

/// The PID of shm node `node`'s process of the run whose environment
/// holds `tag_var` (`NAME=value`): a node process names its main thread
/// `snet-node-K` (`/proc/PID/comm`), node 0 is the one without such a
/// name. (A forked node's `/proc/PID/environ` is node 0's: the variables
/// it sets itself do not show there.)
pub fn shm_node_pid(tag_var: &str, node: u32) -> Option<u32> {
    let name = format!("snet-node-{node}");
    std::fs::read_dir("/proc").ok()?.flatten().find_map(|e| {
        let pid: u32 = e.file_name().to_str()?.parse().ok()?;
        let env = std::fs::read(e.path().join("environ")).ok()?;
        if !env.split(|&b| b == 0).any(|v| v == tag_var.as_bytes()) {
            return None;
        }
        let comm = std::fs::read_to_string(e.path().join("comm")).ok()?;
        let comm = comm.trim_end();
        let found = if node == 0 {
            !comm.starts_with("snet-node-")
        } else {
            comm == name
        };
        found.then_some(pid)
    })
}

/// Processes (other than zombies) that carry `SNET_TEST_RUN=tag`.
pub fn tagged_processes(tag: &str) -> usize {
    let want = format!("SNET_TEST_RUN={tag}");
    std::fs::read_dir("/proc")
        .map(|d| {
            d.flatten()
                .filter(|e| {
                    let stat = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
                    let live = stat
                        .rsplit(')')
                        .next()
                        .is_some_and(|s| !s.trim_start().starts_with('Z'));
                    let env = std::fs::read(e.path().join("environ")).unwrap_or_default();
                    live && env.split(|&b| b == 0).any(|v| v == want.as_bytes())
                })
                .count()
        })
        .unwrap_or(0)
}

/// A scratch folder `name` holding a program of one C box (`boxes.c` with
/// `box_src`, `prog.snet` with `prog`), and the program built there.
pub fn built_with_box(name: &str, box_src: &str, prog: &str) -> (PathBuf, PathBuf) {
    let dir = scratch(name);
    let boxes = dir.join("boxes.c");
    std::fs::write(&boxes, box_src).unwrap();
    let src = dir.join("prog.snet");
    std::fs::write(&src, prog).unwrap();
    let exe = dir.join("prog");
    snet_build(&src, std::slice::from_ref(&boxes), &exe);
    (dir, exe)
}
