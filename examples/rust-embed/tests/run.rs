//! Runs the example as a user would: numbers in, answers out.

use std::io::Write;
use std::process::{Command, Stdio};

fn run(args: &[&str], input: &str) -> (i32, String, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_rust-embed"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the example");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn answers_each_number_as_it_comes() {
    for workers in ["1", "4"] {
        let (code, out, err) = run(&[workers], "12\n13\n\nabc\n1001\n");
        assert_eq!(code, 0, "{err}");
        assert_eq!(out, "12 = 2 * 2 * 3\n13 is prime\n1001 = 7 * 11 * 13\n");
        assert_eq!(err, "line 4: not a number: abc\n");
    }
}

#[test]
fn a_box_error_ends_the_service_with_its_name() {
    let (code, out, err) = run(&[], "6\n1\n7\n");
    assert_eq!(code, 1);
    assert_eq!(out, "6 = 2 * 3\n");
    assert!(
        err.contains("box `factorise`: failed: 1 has no prime factorisation"),
        "{err}"
    );
}

#[test]
fn answers_the_same_on_three_shm_nodes() {
    let (code, out, err) = run(&["1", "3"], "12\n13\n\nabc\n1001\n");
    assert_eq!(code, 0, "{err}");
    assert_eq!(out, "12 = 2 * 2 * 3\n13 is prime\n1001 = 7 * 11 * 13\n");
    assert_eq!(err, "line 4: not a number: abc\n");
    // A box's error on node 1 (1 % 3) names the node and the box.
    let (code, out, err) = run(&["1", "3"], "6\n1\n7\n");
    assert_eq!(code, 1);
    assert_eq!(out, "6 = 2 * 3\n");
    assert!(
        err.contains("error: node 1: factors.snet:4:21: box `factorise`: failed: 1 has no prime factorisation"),
        "{err}"
    );
}
