//! The thesis's applications (issue 12, chapter 7), run small: the
//! raytracer (`examples/raytracer`), whose image must equal a one-process
//! render pixel for pixel on 1, 2, 3 and 4 nodes over shared memory (the
//! default notify / fields modes and two others) and MPI (shared memory
//! and TCP);
//! domain decomposition (`examples/domain`, Fig. 7.2) and the load
//! balancer (`examples/balance`, Fig. 7.5), whose checksums must equal the
//! test's own computation.
//!
//! Every run is guarded: a run that has not ended after [`HANG`] is killed
//! and the test fails as a hang. No test measures how fast anything is.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;

/// `examples/NAME` in the workspace.
fn example(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples")
        .join(name)
}

/// `cc -O2 -ffp-contract=off SOURCES -lm -o EXE`, which must succeed.
fn cc(sources: &[PathBuf], exe: &Path) {
    let out = Command::new(std::env::var("CC").unwrap_or_else(|_| "cc".into()))
        .args(["-O2", "-ffp-contract=off"])
        .args(sources)
        .args(["-lm", "-o"])
        .arg(exe)
        .output()
        .expect("run cc");
    assert!(
        out.status.success(),
        "cc failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `snet build PROG SOURCES --cflags=-ffp-contract=off -o EXE`.
fn snet_build_flags(prog: &Path, sources: &[PathBuf], exe: &Path) {
    let out = Command::new(env!("CARGO_BIN_EXE_snet"))
        .arg("build")
        .arg(prog)
        .args(sources)
        .arg("--cflags=-ffp-contract=off")
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

/// How a test run is started: the executable alone, or under `mpirun`
/// (ranks, and whether over TCP instead of Open MPI's shared memory).
#[derive(Clone, Copy, Debug)]
enum Launch {
    Plain(&'static [&'static str]),
    Mpi(u32, bool),
}

/// Node count, launch: one node; shm with 2 and 4 nodes in the default
/// notify and fields modes (sparse, zero-copy), and in two others: 2 nodes
/// `interrupt` / `single-copy`, 3 nodes `sparse` / `chunked` (fields
/// through the rings); MPI with 2 and 4 ranks, and 2 ranks over TCP.
const LAUNCHES: [(u32, Launch); 8] = [
    (1, Launch::Plain(&[])),
    (2, Launch::Plain(&["--nodes", "2", "--transport", "shm"])),
    (4, Launch::Plain(&["--nodes", "4", "--transport", "shm"])),
    (
        2,
        Launch::Plain(&[
            "--nodes",
            "2",
            "--transport",
            "shm",
            "--notify",
            "interrupt",
            "--fields",
            "single-copy",
        ]),
    ),
    (
        3,
        Launch::Plain(&[
            "--nodes",
            "3",
            "--transport",
            "shm",
            "--notify",
            "sparse",
            "--fields",
            "chunked",
        ]),
    ),
    (2, Launch::Mpi(2, false)),
    (4, Launch::Mpi(4, false)),
    (2, Launch::Mpi(2, true)),
];

fn launch(exe: &Path, input: &str, how: Launch) -> Run {
    match how {
        Launch::Plain(args) => run(exe, input, args),
        Launch::Mpi(np, tcp) => {
            assert!(
                have_mpirun(),
                "mpirun not found: scripts/setup.sh installs Open MPI"
            );
            let mut cmd = mpirun(np, tcp);
            cmd.arg(exe);
            run_with(cmd, exe, input, &[])
        }
    }
}

struct Raytracer {
    dir: PathBuf,
    exe: PathBuf,
    topng: PathBuf,
    reference: PathBuf,
}

fn build_raytracer() -> Raytracer {
    let src = example("raytracer");
    let dir = scratch("raytracer");
    let exe = dir.join("raytracer");
    snet_build_flags(
        &src.join("raytracer.snet"),
        &[src.join("boxes.c"), src.join("render.c")],
        &exe,
    );
    let topng = dir.join("topng");
    cc(&[src.join("topng.c"), src.join("png.c")], &topng);
    let reference = dir.join("reference");
    cc(
        &[
            src.join("reference.c"),
            src.join("render.c"),
            src.join("png.c"),
        ],
        &reference,
    );
    Raytracer {
        dir,
        exe,
        topng,
        reference,
    }
}

fn render_input(width: u32, height: u32, sections: u32, nodes: u32) -> String {
    format!(
        "<?xml version=\"1.0\" ?>\n<record type=\"data\"><tag label=\"width\">{width}</tag>\
         <tag label=\"height\">{height}</tag><tag label=\"sections\">{sections}</tag>\
         <tag label=\"nodes\">{nodes}</tag></record>\n<record type=\"terminate\" />\n"
    )
}

#[test]
fn the_raytracer_renders_the_reference_image_on_every_node_count_and_transport() {
    let rt = build_raytracer();
    let (w, h, sections) = (64, 48, 8);
    let want_png = rt.dir.join("reference.png");
    let out = Command::new(&rt.reference)
        .arg(w.to_string())
        .arg(h.to_string())
        .arg(&want_png)
        .output()
        .expect("run the reference");
    assert!(out.status.success(), "reference failed");
    let want = std::fs::read(&want_png).unwrap();
    assert!(want.starts_with(b"\x89PNG\r\n\x1a\n"));

    for (nodes, how) in LAUNCHES {
        let r = launch(&rt.exe, &render_input(w, h, sections, nodes), how);
        assert!(r.ok, "{how:?}: {}", r.stderr);
        assert_eq!(
            r.stdout.matches("<record ").count(),
            2,
            "{how:?}: one image record and the terminate record:\n{}",
            r.stdout
        );
        let xml = rt.dir.join("out.xml");
        let png = rt.dir.join("out.png");
        std::fs::write(&xml, &r.stdout).unwrap();
        let _ = std::fs::remove_file(&png);
        let conv = Command::new(&rt.topng)
            .arg(&xml)
            .arg(&png)
            .output()
            .expect("run topng");
        assert!(
            conv.status.success(),
            "{how:?}: topng: {}",
            String::from_utf8_lossy(&conv.stderr)
        );
        let got = std::fs::read(&png).unwrap();
        assert!(
            got == want,
            "{how:?}: the image differs from the one-process render"
        );
    }
    let _ = std::fs::remove_dir_all(&rt.dir);
}

/// The pattern of `examples/domain/boxes.c` (and `balance`): `size` bytes
/// of seed `seed`, through `work` (3 b + 1), FNV-1a, masked to 30 bits.
fn piece_hash(size: usize, seed: u32) -> u64 {
    let mut x = seed;
    let mut h: u64 = 1469598103934665603;
    for _ in 0..size {
        x = x.wrapping_mul(1103515245).wrapping_add(12345);
        let b = ((x >> 16) as u8).wrapping_mul(3).wrapping_add(1);
        h = (h ^ u64::from(b)).wrapping_mul(1099511628211);
    }
    h & 0x3fff_ffff
}

/// The checksum of `pieces` pieces of `size` bytes, seeds 1..=pieces.
fn pieces_checksum(pieces: u32, size: usize) -> u64 {
    (1..=pieces).fold(0, |s, seed| (s + piece_hash(size, seed)) & 0x3fff_ffff)
}

/// Builds `examples/NAME/NAME.snet` with its `boxes.c`.
fn build_example(name: &str) -> PathBuf {
    let src = example(name);
    let dir = scratch(name);
    let exe = dir.join(name);
    snet_build(
        &src.join(format!("{name}.snet")),
        &[src.join("boxes.c")],
        &exe,
    );
    exe
}

#[test]
fn domain_decomposition_brings_all_data_back_with_the_right_checksum() {
    let exe = build_example("domain");
    // 100 kB pieces: far above the inline limit, so they travel by
    // reference and node 0 fetches each one for the merge.
    let size = 100_000;
    for (nodes, how) in LAUNCHES {
        let input = format!(
            "<record type=\"data\"><tag label=\"nodes\">{nodes}</tag>\
             <tag label=\"size\">{size}</tag><tag label=\"sleep\">1000</tag></record>\
             <record type=\"terminate\" />"
        );
        let r = launch(&exe, &input, how);
        assert!(r.ok, "{how:?}: {}", r.stderr);
        let want = pieces_checksum(nodes, size);
        assert!(
            r.stdout
                .contains(&format!("<tag label=\"checksum\">{want}</tag>")),
            "{how:?}: checksum {want} not in the output:\n{}",
            r.stdout
        );
        assert_eq!(r.stdout.matches("<record ").count(), 2, "{}", r.stdout);
    }
    let _ = std::fs::remove_dir_all(exe.parent().unwrap());
}

#[test]
fn the_load_balancer_runs_every_task_once_with_the_right_checksum() {
    let exe = build_example("balance");
    let size = 100_000;
    for (nodes, how) in LAUNCHES {
        // Two tasks per node, as in the thesis; and more tasks than slots
        // with two slots a node, so node assignments go round the loop.
        for (tasks, slots) in [(2 * nodes, 1), (5 * nodes + 1, 2)] {
            let input = format!(
                "<record type=\"data\"><tag label=\"nodes\">{nodes}</tag>\
                 <tag label=\"tasks\">{tasks}</tag><tag label=\"size\">{size}</tag>\
                 <tag label=\"sleep\">1000</tag><tag label=\"slots\">{slots}</tag></record>\
                 <record type=\"terminate\" />"
            );
            let r = launch(&exe, &input, how);
            assert!(r.ok, "{how:?} {tasks} tasks: {}", r.stderr);
            let want = pieces_checksum(tasks, size);
            assert!(
                r.stdout
                    .contains(&format!("<tag label=\"checksum\">{want}</tag>")),
                "{how:?} {tasks} tasks: checksum {want} not in the output:\n{}",
                r.stdout
            );
            assert_eq!(r.stdout.matches("<record ").count(), 2, "{}", r.stdout);
        }
    }
    let _ = std::fs::remove_dir_all(exe.parent().unwrap());
}

/// MTI-STAP (`examples/stap`, thesis §7.1.2) at its test size: the
/// detections (and the hash of every statistic) of the programs placed for
/// 2 and 4 nodes equal, byte for byte, those of the sequential reference
/// built from the same kernels: on one node, and on 2 and 4 nodes over
/// loopback, shm (zero-copy and single-copy fields) and MPI. (The 1-node
/// program `stap1.snet`, the same network without placements, is checked
/// the same way by its README, which the docs test runs.)
#[test]
fn stap_detects_the_same_as_the_sequential_reference_on_every_transport() {
    let src = example("stap");
    let dir = scratch("stap");
    let kernels = src.join("kernels.c");
    let mut exes = Vec::new();
    for nodes in [2, 4] {
        let exe = dir.join(format!("stap{nodes}"));
        snet_build_flags(
            &src.join(format!("stap{nodes}.snet")),
            &[src.join("boxes.c"), kernels.clone()],
            &exe,
        );
        exes.push((nodes, exe));
    }
    let reference = dir.join("reference");
    cc(&[src.join("reference.c"), kernels.clone()], &reference);
    let todets = dir.join("todets");
    cc(&[src.join("todets.c")], &todets);

    // 3 CPIs of 4 channels x 8 pulses x 2048 gates (1 MiB each), blocks of
    // 128 gates, 8 slices, 8 x 4 steering bins; seed 7.
    let params = ["3", "4", "8", "2048", "128", "8", "8", "4", "7"];
    let labels = [
        "cpis", "channels", "pulses", "gates", "block", "slices", "dbins", "abins", "seed",
    ];
    let input = format!(
        "<?xml version=\"1.0\" ?>\n<record type=\"data\">{}</record>\n<record type=\"terminate\" />\n",
        labels
            .iter()
            .zip(params)
            .map(|(l, v)| format!("<tag label=\"{l}\">{v}</tag>"))
            .collect::<String>()
    );
    let out = Command::new(&reference)
        .args(params)
        .output()
        .expect("run the reference");
    assert!(out.status.success(), "reference failed");
    let want = String::from_utf8(out.stdout).unwrap();
    assert_eq!(
        want.lines().count(),
        3 * 8,
        "one line per CPI and slice:\n{want}"
    );
    assert!(
        want.lines().any(|l| !l.contains("ndet 0 ")),
        "the reference detects nothing:\n{want}"
    );

    const SHM: &[&str] = &["--transport", "shm"];
    const SINGLE: &[&str] = &["--transport", "shm", "--fields", "single-copy"];
    const LOOP: &[&str] = &["--transport", "loopback"];
    // (program placed for, nodes run, what, transport arguments or None for
    // MPI); the program placed for 4 nodes also runs on one.
    let mut runs: Vec<(u32, u32, &str, Option<&[&str]>)> = vec![(4, 1, "on 1 node", Some(&[]))];
    for nodes in [2, 4] {
        runs.push((nodes, nodes, "loopback", Some(LOOP)));
        runs.push((nodes, nodes, "shm zero-copy", Some(SHM)));
        runs.push((nodes, nodes, "shm single-copy", Some(SINGLE)));
        runs.push((nodes, nodes, "mpi", None));
    }
    for (nodes, on, what, args) in runs {
        let exe = &exes.iter().find(|(n, _)| *n == nodes).unwrap().1;
        let r = match args {
            Some(a) => {
                let n = on.to_string();
                let mut all = if on > 1 {
                    vec!["--nodes", n.as_str()]
                } else {
                    Vec::new()
                };
                all.extend_from_slice(a);
                run(exe, &input, &all)
            }
            None => launch(exe, &input, Launch::Mpi(on, false)),
        };
        assert!(r.ok, "stap{nodes} {what}: {}", r.stderr);
        let xml = dir.join("out.xml");
        std::fs::write(&xml, &r.stdout).unwrap();
        let got = Command::new(&todets)
            .arg(&xml)
            .output()
            .expect("run todets");
        assert!(
            got.status.success(),
            "stap{nodes} {what}: todets: {}",
            String::from_utf8_lossy(&got.stderr)
        );
        assert_eq!(
            String::from_utf8(got.stdout).unwrap(),
            want,
            "stap{nodes} {what}: the detections differ from the reference's"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
