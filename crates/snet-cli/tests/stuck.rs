//! Where records got stuck (docs/observability.md): records a synchrocell
//! still holds at the end of a run are reported as a warning naming the
//! synchrocell, with counts per label set; the run still succeeds.

use std::path::PathBuf;
use std::process::Command;

mod common;

fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("snet-stuck-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Pairs `{a}` and `{b}` per `<k>`: `k` = 1 pairs up, the `{a}` of
/// `k` = 2 and of `k` = 3 wait for a `b` that never comes.
const INPUT: &str = r#"<?xml version="1.0" ?>
<record type="data"><field label="a">(int)1</field><tag label="k">1</tag></record>
<record type="data"><field label="b">(int)2</field><tag label="k">1</tag></record>
<record type="data"><field label="a">(int)3</field><tag label="k">2</tag></record>
<record type="data"><field label="a">(int)4</field><tag label="k">3</tag><tag label="x">0</tag></record>
<record type="terminate" />
"#;

fn run(name: &str, prog: &str, args: &[&str]) -> (bool, String, String) {
    let d = dir(name);
    std::fs::write(d.join("prog.snet"), prog).unwrap();
    std::fs::write(d.join("input.xml"), INPUT).unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_snet"));
    cmd.arg("run")
        .arg(d.join("prog.snet"))
        .arg("-i")
        .arg(d.join("input.xml"))
        .args(args);
    let out = common::output_guarded(cmd);
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn records_left_in_a_synchrocell_are_reported_and_the_run_succeeds() {
    let (ok, stdout, stderr) = run("split", "net pairs connect [| {a}, {b} |] ! <k>;\n", &[]);
    assert!(ok, "{stderr}");
    assert_eq!(stdout.matches("type=\"data\"").count(), 1, "{stdout}");
    assert_eq!(
        stderr.trim_end(),
        "warning: prog.snet:1:19: synchrocell [| {a}, {b} |] still holds 2 records whose partner never came: 1 x {a,<k>}, 1 x {a,<k>,<x>}"
            .replace("prog.snet", &dir("split").join("prog.snet").display().to_string()),
    );
}

#[test]
fn a_run_whose_cells_all_fired_reports_nothing() {
    let (ok, _, stderr) = run("fired", "net pairs connect [| {a}, {b} |];\n", &[]);
    assert!(ok, "{stderr}");
    assert_eq!(stderr, "");
}

#[test]
fn distributed_runs_report_per_node() {
    let (ok, _, stderr) = run(
        "nodes",
        "net pairs connect ([| {a}, {b} |] ! <k>) @ 1;\n",
        &["--transport", "loopback", "--nodes", "2"],
    );
    assert!(ok, "{stderr}");
    assert!(
        stderr.contains("warning: node 1: ") && stderr.contains("still holds 2 records"),
        "{stderr}"
    );
}
