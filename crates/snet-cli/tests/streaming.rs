//! Output that streams: a record that leaves the network reaches the output
//! pipe soon after, however slowly the input comes. Each test feeds one
//! record, waits until its output line has arrived, and only then sends the
//! next; a run that writes its output only at the end never answers the
//! first record. The bound is generous (seconds, not the 50 ms the writer
//! promises): it catches "only at the end", not slowness.

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::Duration;

mod common;

/// Far above the writer's 50 ms, far below "the end of the run".
const ARRIVAL: Duration = Duration::from_secs(20);

/// Writes `text` to a file of its own: the tests run in parallel in one
/// process, and two of them writing one file name let a run read the other's
/// half-written program (CI once saw an empty file).
fn program(name: &str, text: &str) -> PathBuf {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("snet-streaming-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(format!("{n}-{name}"));
    std::fs::write(&p, text).unwrap();
    p
}

/// Runs `snet run prog ARGS`, feeding records one at a time.
fn answers_each_record_before_the_next(prog: &str, args: &[&str]) {
    answers_under(Command::new(env!("CARGO_BIN_EXE_snet")), prog, args)
}

/// Starts `launcher run PROG ARGS` (the program written to a file named
/// `name`) with every stream piped.
fn start(mut launcher: Command, name: &str, prog: &str, args: &[&str]) -> std::process::Child {
    let prog = program(name, prog);
    launcher
        .arg("run")
        .arg(&prog)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start snet")
}

/// The same, with `snet` started by `launcher` (a plain `snet`, or `mpirun ... snet`).
fn answers_under(launcher: Command, prog: &str, args: &[&str]) {
    let mut child = start(launcher, &format!("p{}.snet", args.len()), prog, args);
    let mut input = child.stdin.take().unwrap();
    let output = child.stdout.take().unwrap();
    let (lines_tx, lines) = mpsc::channel::<String>();
    let reader = std::thread::spawn(move || {
        for line in BufReader::new(output).lines() {
            let Ok(line) = line else { break };
            if lines_tx.send(line).is_err() {
                break;
            }
        }
    });
    writeln!(input, "<?xml version=\"1.0\" ?>").unwrap();
    for x in 1..=4 {
        writeln!(
            input,
            "<record type=\"data\" mode=\"textual\"><tag label=\"x\">{x}</tag></record>"
        )
        .unwrap();
        input.flush().unwrap();
        let want = format!("<tag label=\"y\">{}</tag>", x * 10);
        loop {
            match lines.recv_timeout(ARRIVAL) {
                Ok(l) if l.contains(&want) => break,
                Ok(_) => continue,
                Err(_) => {
                    let _ = child.kill();
                    let out = child.wait_with_output().unwrap();
                    panic!(
                        "record {x}'s output did not arrive while the input stayed open (args {args:?})\nstderr: {}",
                        String::from_utf8_lossy(&out.stderr)
                    );
                }
            }
        }
    }
    writeln!(input, "<record type=\"terminate\" />").unwrap();
    drop(input);
    let rest: Vec<String> = lines.iter().collect();
    assert!(
        rest.iter().any(|l| l.contains("terminate")),
        "the stream ends with the terminate record: {rest:?}"
    );
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    reader.join().unwrap();
}

#[test]
fn one_node_streams_its_output() {
    answers_each_record_before_the_next("net s connect [{<x>} -> {<y=x*10>}];", &["-w", "2"]);
}

#[test]
fn one_worker_streams_its_output() {
    answers_each_record_before_the_next(
        "net s connect [{<x>} -> {<x>}] .. [{<x>} -> {<y=x*10>}];",
        &["-w", "1"],
    );
}

/// Node 0 writes what node 1 computed: it is idle (waiting for node 1's
/// messages) when the record comes back, and must still write it out.
#[test]
fn shared_memory_nodes_stream_node_0s_output() {
    answers_each_record_before_the_next(
        "net s connect ([{<x>} -> {<y=x*10>}] @ 1) .. [{<y>} -> {<y>}];",
        &["--nodes", "2", "--transport", "shm", "-w", "1"],
    );
}

/// Under `mpirun -np 2`: rank 0 gets the input (Open MPI forwards it) and
/// writes what rank 1 computed as it comes.
#[test]
fn mpi_ranks_stream_rank_0s_output() {
    if !common::have_mpirun() {
        eprintln!("skipped: no mpirun");
        return;
    }
    let mut launcher = common::mpirun(2, false);
    launcher.arg(env!("CARGO_BIN_EXE_snet"));
    answers_under(
        launcher,
        "net s connect ([{<x>} -> {<y=x*10>}] @ 1) .. [{<y>} -> {<y>}];",
        &["-w", "1"],
    );
}

#[test]
fn loopback_nodes_stream_node_0s_output() {
    answers_each_record_before_the_next(
        "net s connect [{<x>} -> {<y=x*10>}] @ 1;",
        &["--nodes", "2", "--transport", "loopback"],
    );
}

/// Starts `snet run prog ARGS` with its input left open after `head`
/// (nothing more is written until the run has ended or `ARRIVAL` passed).
fn run_with_open_input(prog: &str, args: &[&str], head: &str) -> std::process::Child {
    let mut child = start(
        Command::new(env!("CARGO_BIN_EXE_snet")),
        &format!("open{}.snet", args.len()),
        prog,
        args,
    );
    let input = child.stdin.as_mut().unwrap();
    input.write_all(head.as_bytes()).unwrap();
    input.flush().unwrap();
    child
}

/// Waits for `child` to end while its input stays open; fails after `ARRIVAL`.
fn ends_while_input_open(mut child: std::process::Child, what: &str) -> std::process::Output {
    let start = std::time::Instant::now();
    while start.elapsed() < ARRIVAL {
        if child.try_wait().unwrap().is_some() {
            return child.wait_with_output().unwrap();
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    let out = child.wait_with_output().unwrap();
    panic!(
        "{what}: the run did not end while its input stayed open\nstderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A runtime error ends the run at once, even though the input is still
/// open and idle (the reader is blocked in a read): nothing waits for it.
#[test]
fn an_error_ends_the_run_while_the_input_stays_open() {
    let child = run_with_open_input(
        "net s connect [{<x>} -> {<y=x>}];",
        &["-w", "2"],
        "<?xml version=\"1.0\" ?>\n<record type=\"data\"><tag label=\"x\">1</tag></record>\n<record type=\"data\"><tag label=\"z\">2</tag></record>\n",
    );
    let out = ends_while_input_open(child, "a type error");
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("received record {<z>}, caused by input record 2 (line 3)"),
        "{err}"
    );
}

/// A node killed while node 0 waits for input ends the run, naming it.
#[test]
fn a_killed_node_ends_the_run_while_the_input_stays_open() {
    let child = run_with_open_input(
        "net s connect [{<x>} -> {<y=x>}] @ 1;",
        &["--nodes", "2", "--transport", "shm", "-w", "1"],
        "<?xml version=\"1.0\" ?>\n",
    );
    // Node 1 is node 0's child process.
    let children = format!("/proc/{}/task/{}/children", child.id(), child.id());
    let start = std::time::Instant::now();
    let node1 = loop {
        let pids = std::fs::read_to_string(&children).unwrap_or_default();
        if let Some(pid) = pids.split_whitespace().next() {
            break pid.to_string();
        }
        assert!(start.elapsed() < ARRIVAL, "node 1 never started");
        std::thread::sleep(Duration::from_millis(10));
    };
    let killed = Command::new("kill").args(["-9", &node1]).status().unwrap();
    assert!(killed.success());
    let out = ends_while_input_open(child, "a killed node");
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("node 1"), "{err}");
}
