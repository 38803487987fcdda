//! Where records got stuck (docs/observability.md): records a synchrocell
//! still holds at the end of a run are reported as a warning naming the
//! synchrocell, with counts per label set; the run still succeeds.

use std::path::PathBuf;
use std::process::Command;

mod common;

/// A scratch directory of this test file (`tests/common`).
fn dir(name: &str) -> PathBuf {
    common::scratch(&format!("stuck-{name}"))
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
        "warning: prog.snet:1:19: synchrocell [| {a}, {b} |] still holds 2 records whose partner never came: 1 x {a, <k>}, 1 x {a, <k>, <x>}"
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

/// A box that says it started (creates `$STARTED`) and waits until the
/// test creates `$RELEASE`; a synchrocell after it never fires.
const WAITING: &str = r#"
net w {
  box wait((<k>) -> (<k>)) { <<< C |
    int usleep(unsigned int);
    FILE *f = fopen(getenv("STARTED"), "w");
    if (f) fclose(f);
    while (!(f = fopen(getenv("RELEASE"), "r"))) usleep(10000);
    fclose(f);
    C4SNetOut(hnd, 1, k);
  >>> };
} connect wait .. [| {<k>}, {<j>} |];
"#;

/// Five records reach the box `wait`, whose first call blocks: the dump
/// counts the four behind it once, the same in the node's line and in the
/// worker's (issue 37: "about 0 items waiting in inboxes" beside "4 items
/// waiting in its inbox", and at -w 1 none of the four in either).
#[test]
fn sigusr1_prints_what_the_run_is_doing_and_the_run_goes_on() {
    for workers in ["1", "2", "4"] {
        sigusr1_dump(workers);
    }
}

fn sigusr1_dump(workers: &str) {
    use std::io::BufRead;
    let d = dir(&format!("sigusr1-w{workers}"));
    std::fs::write(d.join("w.snet"), WAITING).unwrap();
    let exe = d.join("w");
    common::snet_build(&d.join("w.snet"), &[], &exe);
    std::fs::write(
        d.join("input.xml"),
        "<record type=\"data\"><tag label=\"k\">1</tag></record>\
         <record type=\"data\"><tag label=\"k\">2</tag></record>\
         <record type=\"data\"><tag label=\"k\">3</tag></record>\
         <record type=\"data\"><tag label=\"k\">4</tag></record>\
         <record type=\"data\"><tag label=\"k\">5</tag></record>\
         <record type=\"terminate\"/>",
    )
    .unwrap();
    let (started, release) = (d.join("started"), d.join("release"));
    let _ = std::fs::remove_file(&started);
    let _ = std::fs::remove_file(&release);
    let mut child = Command::new(&exe)
        .arg("-i")
        .arg(d.join("input.xml"))
        .args(["-w", workers])
        .env("STARTED", &started)
        .env("RELEASE", &release)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The box runs, so the run's handler is installed.
    while !started.exists() {
        assert!(child.try_wait().unwrap().is_none(), "the run ended early");
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let (tx, rx) = std::sync::mpsc::channel();
    let stderr = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut all = String::new();
        for line in std::io::BufReader::new(stderr).lines() {
            let line = line.unwrap();
            all.push_str(&line);
            all.push('\n');
            let _ = tx.send(line);
        }
        all
    });
    // SAFETY: a plain kill(2) of our own child.
    assert_eq!(unsafe { libc_kill(child.id() as i32, 10) }, 0);
    // The dump: its first line, then a line per worker; one of them is
    // in the call, with the four other records waiting for it.
    // (A bound that only tells a dump that never comes from one that does.)
    let line = || rx.recv_timeout(std::time::Duration::from_secs(60));
    /// Releases the box when dropped, also when an assertion fails.
    struct Release(PathBuf);
    impl Drop for Release {
        fn drop(&mut self) {
            let _ = std::fs::write(&self.0, "");
        }
    }
    let release_guard = Release(release.clone());
    let first = line().expect("a dump");
    assert!(
        first.starts_with("snet: node 0 at ")
            && first.contains(
                "(asked by SIGUSR1): 5 records in, 0 out, about 4 items waiting in inboxes"
            ),
        "-w {workers}: {first}"
    );
    let lines: Vec<String> = (0..workers.parse::<usize>().unwrap())
        .map(|_| line().expect("a worker line"))
        .collect();
    let in_call: Vec<&String> = lines
        .iter()
        .filter(|l| l.contains(": box `wait` ("))
        .collect();
    assert!(
        in_call.len() == 1 && in_call[0].ends_with(", 4 items waiting in its inbox"),
        "-w {workers}: {lines:?}"
    );
    drop(release_guard);
    let out = child.wait_with_output().unwrap();
    let all = reader.join().unwrap();
    assert!(out.status.success(), "{all}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("<record type=\"terminate\" />"), "{stdout}");
    // A record then waits in the synchrocell: the end-of-run warning.
    // (The first; the synchrocell passes the four after it on.)
    assert_eq!(stdout.matches("type=\"data\"").count(), 4, "{stdout}");
    assert!(
        all.contains("still holds 1 record whose partner never came: 1 x {<k>}"),
        "{all}"
    );
}

extern "C" {
    #[link_name = "kill"]
    fn libc_kill(pid: i32, sig: i32) -> i32;
}

#[test]
fn progress_prints_nothing_when_stderr_is_not_a_terminal() {
    let (ok, stdout, stderr) = run(
        "progress",
        "net pairs connect [| {a}, {b} |];\n",
        &["--progress"],
    );
    assert!(ok, "{stderr}");
    assert_eq!(stdout.matches("type=\"data\"").count(), 3, "{stdout}");
    assert_eq!(stderr, "");
}
