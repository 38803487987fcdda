//! Nothing lost (docs/observability.md, "When a run fails"): every record
//! that left the network before a run failed is in the output, whatever
//! ended the run (a runtime type error, a box's error, a box's crash,
//! malformed input, a node that vanished), wherever the output goes (a
//! file with `-o`, standard output through a pipe), on one node and on
//! node 0 of a distributed run (loopback, shared memory, MPI); then the
//! error; then a nonzero exit.
//!
//! Every check reads the records written and compares them with the ones
//! that must be there (their tags, not just a count), so a partial or
//! reordered write fails too. The failing record comes after good ones
//! that a single box instance handled first (its outputs were sent before
//! it failed: in the output at any worker count) or, for the faults that
//! end a process at once (a crash, a node's exit), after the good records
//! left the network (`--input-limit "1 + output"`: record n enters once
//! n-1 records were written). The runs of each test go side by side
//! (threads): a few seconds in all.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use common::*;

/// `pass` takes `<k>`: a record without it is a runtime type error at the box.
const TYPED: &str = "box pass((<k>) -> (<k>));\nnet typed connect pass;\n";

/// One box per way a box can end a run, chosen by the record's second tag.
const FAULTY: &str = r#"
net faulty {
  box fail((<k>, <f>) -> (<k>));
  box boom((<k>, <b>) -> (<k>));
  box quit((<k>, <q>) -> (<k>));
} connect fail | boom | quit @ 1;
"#;

const BOXES_C: &str = r#"
#include <unistd.h>
#include "C4SNet.h"

void *pass(void *hnd, int k)
{
    C4SNetOut(hnd, 1, k);
    return hnd;
}

/* A box's error on k == 3: output variant 9 does not exist. */
void *fail(void *hnd, int k, int f)
{
    (void)f;
    C4SNetOut(hnd, k == 3 ? 9 : 1, k);
    return hnd;
}

/* A crash on k == 3: a write through a null pointer. */
void *boom(void *hnd, int k, int b)
{
    volatile int *p = 0;
    (void)b;
    if (k == 3)
        *p = k;
    C4SNetOut(hnd, 1, k);
    return hnd;
}

/* Its node vanishes on k == 3 (no exit handlers: as if killed). */
void *quit(void *hnd, int k, int q)
{
    (void)q;
    if (k == 3)
        _exit(0);
    C4SNetOut(hnd, 1, k);
    return hnd;
}
"#;

fn dir() -> PathBuf {
    scratch("nothing-lost")
}

/// The two programs, built once per test process.
fn programs() -> &'static (PathBuf, PathBuf) {
    static BUILT: OnceLock<(PathBuf, PathBuf)> = OnceLock::new();
    BUILT.get_or_init(|| {
        let d = dir();
        std::fs::write(d.join("boxes.c"), BOXES_C).unwrap();
        let build = |name: &str, text: &str| {
            let prog = d.join(format!("{name}.snet"));
            std::fs::write(&prog, text).unwrap();
            let exe = d.join(name);
            snet_build(&prog, &[d.join("boxes.c")], &exe);
            exe
        };
        (build("typed", TYPED), build("faulty", FAULTY))
    })
}

/// Records `<k>` = 0..=4 with the extra tag `extra` (if any); record 3
/// is replaced by `bad` (if given).
fn input(extra: Option<&str>, bad: Option<&str>) -> String {
    let mut s = String::from("<?xml version=\"1.0\" ?>\n");
    for k in 0..5 {
        match (k, bad) {
            (3, Some(b)) => s.push_str(b),
            _ => {
                s.push_str(&format!("<record type=\"data\"><tag label=\"k\">{k}</tag>"));
                if let Some(t) = extra {
                    s.push_str(&format!("<tag label=\"{t}\">1</tag>"));
                }
                s.push_str("</record>");
            }
        }
        s.push('\n');
    }
    s.push_str("<record type=\"terminate\" />\n");
    s
}

/// Where the output goes.
#[derive(Clone, Copy, Debug)]
enum Out {
    /// `-o FILE`.
    File,
    /// Standard output, a pipe.
    Pipe,
}

/// One failing run and what it must leave.
struct Case {
    name: String,
    cmd: Command,
    out: Out,
    /// The `<k>` values that must have been written, in any order.
    want: Vec<i64>,
    /// Substrings of the error.
    says: Vec<&'static str>,
}

/// The `<k>` of every data record of `xml` (which must be well-formed,
/// possibly without its terminate record).
fn ks(xml: &str) -> Result<Vec<i64>, String> {
    let mut reader = snet_io::RecordReader::with_name(xml.as_bytes(), "output");
    let mut ks = Vec::new();
    loop {
        match reader.next() {
            Ok(Some(snet_io::StreamItem::Data(r))) => ks.push(
                r.int(snet_core::Label::tag("k"))
                    .ok_or_else(|| format!("a record without <k> in:\n{xml}"))?,
            ),
            Ok(Some(snet_io::StreamItem::Terminate)) => {
                return Err(format!("a failed run wrote the terminate record:\n{xml}"))
            }
            Ok(None) => return Ok(ks),
            Err(e) => return Err(format!("the output is not well-formed ({e}):\n{xml}")),
        }
    }
}

fn case(
    name: &str,
    exe: &Path,
    via: &str,
    input_text: &str,
    args: &[&str],
    out: Out,
    says: &[&'static str],
) -> Case {
    let d = dir().join(name);
    std::fs::create_dir_all(&d).unwrap();
    let inp = d.join("input.xml");
    std::fs::write(&inp, input_text).unwrap();
    let mut cmd = match via {
        "mpi" => {
            let mut c = mpirun(2, false);
            c.arg(exe);
            c
        }
        "snet-run" => {
            let mut c = Command::new(env!("CARGO_BIN_EXE_snet"));
            c.arg("run").arg(exe);
            c
        }
        _ => Command::new(exe),
    };
    cmd.arg("-i").arg(&inp).args(args);
    match via {
        "loopback" => {
            cmd.args(["--transport", "loopback", "--nodes", "2"]);
        }
        "shm" => {
            cmd.args(["--transport", "shm", "--nodes", "2"]);
        }
        _ => {}
    }
    if let Out::File = out {
        cmd.arg("-o").arg(d.join("out.xml"));
    }
    Case {
        name: name.to_string(),
        cmd,
        out,
        want: FINISHED.to_vec(),
        says: says.to_vec(),
    }
}

fn check(c: Case) -> Result<(), String> {
    let name = c.name.clone();
    let out = output_guarded(c.cmd);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let fail = |why: String| Err(format!("{name}: {why}\nstderr:\n{stderr}"));
    if out.status.success() {
        return fail("the run succeeded".into());
    }
    for s in &c.says {
        if !stderr.contains(s) {
            return fail(format!("the error lacks {s:?}"));
        }
    }
    let written = match c.out {
        Out::File => std::fs::read_to_string(dir().join(&name).join("out.xml"))
            .map_err(|e| format!("{name}: no output file: {e}"))?,
        Out::Pipe => String::from_utf8_lossy(&out.stdout).into_owned(),
    };
    let mut got = match ks(&written) {
        Ok(k) => k,
        Err(e) => return fail(e),
    };
    got.sort_unstable();
    if got != c.want {
        return fail(format!(
            "records written: <k> = {got:?}, want {:?}:\n{written}",
            c.want
        ));
    }
    Ok(())
}

/// Runs the cases side by side; fails with every failure.
fn check_all(cases: Vec<Case>) {
    let failures: Vec<String> = std::thread::scope(|s| {
        let runs: Vec<_> = cases.into_iter().map(|c| s.spawn(|| check(c))).collect();
        runs.into_iter()
            .filter_map(|h| h.join().unwrap().err())
            .collect()
    });
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

const ONE_AT_A_TIME: [&str; 2] = ["--input-limit", "1 + output"];

/// The records every case must have written: those before the failing one.
const FINISHED: [i64; 3] = [0, 1, 2];

#[test]
fn a_type_error_at_a_box_keeps_the_records_before_it() {
    let (typed, _) = programs();
    let bad = "<record type=\"data\"><tag label=\"j\">3</tag></record>";
    let text = input(None, Some(bad));
    let says = ["box `pass`", "caused by input record 4"];
    let mut cases = Vec::new();
    for w in ["1", "2", "8"] {
        for out in [Out::File, Out::Pipe] {
            cases.push(case(
                &format!("type-w{w}-{out:?}"),
                typed,
                "one",
                &text,
                &["-w", w],
                out,
                &says,
            ));
        }
    }
    cases.push(case(
        "type-loopback",
        typed,
        "loopback",
        &text,
        &["-w", "1"],
        Out::File,
        &says,
    ));
    cases.push(case(
        "type-shm",
        typed,
        "shm",
        &text,
        &["-w", "1"],
        Out::File,
        &says,
    ));
    check_all(cases);
}

#[test]
fn a_box_error_keeps_the_records_before_it() {
    let (_, faulty) = programs();
    let text = input(Some("f"), None);
    let says = ["box `fail`", "caused by input record 4"];
    let mut cases = Vec::new();
    for w in ["1", "8"] {
        for out in [Out::File, Out::Pipe] {
            cases.push(case(
                &format!("fail-w{w}-{out:?}"),
                faulty,
                "one",
                &text,
                &["-w", w],
                out,
                &says,
            ));
        }
    }
    check_all(cases);
}

#[test]
fn a_crash_keeps_the_records_that_left_before_it() {
    let (_, faulty) = programs();
    let text = input(Some("b"), None);
    let mut cases = Vec::new();
    for (via, w) in [("one", "1"), ("one", "8"), ("loopback", "2"), ("shm", "2")] {
        for out in [Out::File, Out::Pipe] {
            let mut args = vec!["-w", w];
            args.extend(ONE_AT_A_TIME);
            cases.push(case(
                &format!("crash-{via}-w{w}-{out:?}"),
                faulty,
                via,
                &text,
                &args,
                out,
                &["box `boom`", "crashed"],
            ));
        }
    }
    check_all(cases);
}

#[test]
fn malformed_input_keeps_the_records_before_it() {
    let (typed, _) = programs();
    let bad = "<record type=\"data\"><tag label=\"k\">12x</tag></record>";
    let text = input(None, Some(bad));
    let says = ["malformed input", ":5:"];
    let mut cases = Vec::new();
    for out in [Out::File, Out::Pipe] {
        cases.push(case(
            &format!("malformed-{out:?}"),
            typed,
            "one",
            &text,
            &["-w", "2"],
            out,
            &says,
        ));
    }
    cases.push(case(
        "malformed-shm",
        typed,
        "shm",
        &text,
        &["-w", "2"],
        Out::File,
        &says,
    ));
    check_all(cases);
}

#[test]
fn a_lost_node_keeps_the_records_that_left_before_it() {
    let (_, faulty) = programs();
    let text = input(Some("q"), None);
    let mut cases = Vec::new();
    for out in [Out::File, Out::Pipe] {
        cases.push(case(
            &format!("lost-shm-{out:?}"),
            faulty,
            "shm",
            &text,
            &["-w", "2", ONE_AT_A_TIME[0], ONE_AT_A_TIME[1]],
            out,
            &["node 1"],
        ));
    }
    check_all(cases);
}

/// Node 0 of an MPI job writes what finished before another failure.
#[test]
fn under_mpirun_node_0_keeps_the_records_before_a_failure() {
    if !have_mpirun() {
        eprintln!("skipped: no mpirun");
        return;
    }
    let (typed, faulty) = programs();
    let bad = "<record type=\"data\"><tag label=\"j\">3</tag></record>";
    let mut args = vec!["-w", "1"];
    args.extend(ONE_AT_A_TIME);
    check_all(vec![
        case(
            "mpi-type",
            typed,
            "mpi",
            &input(None, Some(bad)),
            &["-w", "1"],
            Out::File,
            &["box `pass`"],
        ),
        case(
            "mpi-crash",
            faulty,
            "mpi",
            &input(Some("b"), None),
            &args,
            Out::File,
            &["box `boom`", "crashed"],
        ),
    ]);
}

/// `snet run` (no box code): a filter's runtime type error after good
/// records, to a file and to a pipe.
#[test]
fn snet_run_keeps_the_records_before_an_error() {
    let d = dir();
    let prog = d.join("filters.snet");
    std::fs::write(&prog, "net filters connect [{<k>} -> {<k>}];\n").unwrap();
    let bad = "<record type=\"data\"><tag label=\"j\">3</tag></record>";
    let text = input(None, Some(bad));
    let mut cases = Vec::new();
    for w in ["1", "8"] {
        for out in [Out::File, Out::Pipe] {
            cases.push(case(
                &format!("snet-run-w{w}-{out:?}"),
                &prog,
                "snet-run",
                &text,
                &["-w", w],
                out,
                &["runtime type error", "caused by input record 4"],
            ));
        }
    }
    check_all(cases);
}
