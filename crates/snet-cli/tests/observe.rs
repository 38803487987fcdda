//! Observers (`<observer />` metadata, docs/observability.md): the
//! messages at each data level and type, in a file, over a socket to a
//! listener in the test, interactively stepped by the test, on several
//! nodes; observing changes no output; a listener that is gone fails the
//! run with a message naming the observer.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

mod common;

/// A scratch directory of this test file (`tests/common`).
fn dir(name: &str) -> PathBuf {
    common::scratch(&format!("observe-{name}"))
}

/// Two records: `x` a C4SNet int, `<t>` 1 and 2.
const INPUT: &str = r#"<?xml version="1.0" ?>
<record type="data"><field label="x">(int)7</field><tag label="t">1</tag></record>
<record type="data"><field label="x">(int)8</field><tag label="t">2</tag></record>
<record type="terminate" />
"#;

/// Three nets in a pipeline; `META` goes in front.
const NETS: &str = r#"
net a connect [{x, <t>} -> {x, <t=t+1>}];
net b connect [{x, <t>} -> {x, <t=t*2>}];
net c connect [{x, <t>} -> {x, <t>, <#u=t>}];
net main connect a .. b .. c;
"#;

fn snet_run(d: &Path, prog: &str, args: &[&str]) -> Output {
    let p = d.join("prog.snet");
    std::fs::write(&p, prog).unwrap();
    let i = d.join("input.xml");
    std::fs::write(&i, INPUT).unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_snet"));
    cmd.arg("run").arg(&p).arg("-i").arg(&i).args(args);
    common::output_guarded(cmd)
}

fn msg(oid: u32, pos: &str, ty: &str, code: Option<&str>, body: &str) -> String {
    let code = code.map_or(String::new(), |c| format!(" code=\"{c}\""));
    format!(
        "<?xml version=\"1.0\"?>\n<observer xmlns=\"snet-home.org\" oid=\"{oid}\" position=\"{pos}\" type=\"{ty}\"{code}>\n<record type=\"data\" mode=\"textual\" >\n{body}</record>\n</observer>\n"
    )
}

fn file_meta(d: &Path) -> String {
    format!(
        r#"<metadata>
  <net name="a"> <observer /> <observer_file value="{a}" /> <observer_data value="labels" /> <observer_type value="before" /> </net>
  <net name="b"> <observer /> <observer_file value="{b}" /> <observer_type value="after" /> <observer_code value="x&amp;y" /> </net>
  <net name="c"> <observer /> <observer_file value="{c}" /> <observer_data value="allvalues" /> </net>
</metadata>"#,
        a = d.join("a.xml").display(),
        b = d.join("b.xml").display(),
        c = d.join("c.xml").display()
    )
}

/// What the three file observers of [`file_meta`] write for [`INPUT`].
fn expected_files() -> [String; 3] {
    let a: String = (0..2)
        .map(|_| {
            msg(
                1,
                "a",
                "before",
                None,
                "<field label=\"x\" />\n<tag label=\"t\" />\n",
            )
        })
        .collect();
    let b: String = [(7, 4), (8, 6)]
        .iter()
        .map(|(_, t)| {
            msg(
                2,
                "b",
                "after",
                Some("x&amp;y"),
                &format!("<field label=\"x\" />\n<tag label=\"t\" >{t}</tag>\n"),
            )
        })
        .collect();
    let c: String = [(7, 4), (8, 6)]
        .iter()
        .flat_map(|(x, t)| {
            let f = format!("<field label=\"x\" interface=\"C4SNet\" >(int){x}</field>\n");
            [
                msg(
                    3,
                    "c",
                    "before",
                    None,
                    &format!("{f}<tag label=\"t\" >{t}</tag>\n"),
                ),
                msg(
                    3,
                    "c",
                    "after",
                    None,
                    &format!("{f}<tag label=\"t\" >{t}</tag>\n<btag label=\"u\" >{t}</btag>\n"),
                ),
            ]
        })
        .collect();
    [a, b, c].map(|t| normalize(&t))
}

/// The files' texts; each observer's before and after messages are each in
/// stream order, but may interleave: the messages are put in a stable
/// order, the before ones first.
fn read_files(d: &Path) -> [String; 3] {
    ["a", "b", "c"].map(|n| {
        normalize(&std::fs::read_to_string(d.join(format!("{n}.xml"))).unwrap_or_default())
    })
}

fn normalize(text: &str) -> String {
    let (before, after): (Vec<String>, Vec<String>) = messages(text)
        .into_iter()
        .partition(|m| m.contains("type=\"before\""));
    before.concat() + &after.concat()
}

fn clear_files(d: &Path) {
    for n in ["a", "b", "c"] {
        let _ = std::fs::remove_file(d.join(format!("{n}.xml")));
    }
}

#[test]
fn file_observers_at_each_level_and_type_change_no_output() {
    let d = dir("files");
    let plain = snet_run(&d, NETS, &[]);
    assert!(plain.status.success());
    clear_files(&d);
    let observed = snet_run(&d, &format!("{}{NETS}", file_meta(&d)), &[]);
    assert!(
        observed.status.success(),
        "{}",
        String::from_utf8_lossy(&observed.stderr)
    );
    assert_eq!(
        observed.stdout, plain.stdout,
        "observing changed the output"
    );
    assert_eq!(read_files(&d), expected_files());
}

#[test]
fn file_observers_on_loopback_and_shm_nodes() {
    // Net `a` runs on node 1: its observer's file is opened there.
    let prog = format!(
        "{}{}",
        file_meta(&dir("nodes")),
        NETS.replace("connect a .. b", "connect a @ 1 .. b")
    );
    let d = dir("nodes");
    for transport in ["loopback", "shm"] {
        clear_files(&d);
        let out = snet_run(&d, &prog, &["--transport", transport, "--nodes", "2"]);
        assert!(
            out.status.success(),
            "{transport}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(read_files(&d), expected_files(), "{transport}");
    }
}

/// The observer's messages, one per `</observer>`.
fn messages(text: &str) -> Vec<String> {
    text.split_inclusive("</observer>\n")
        .map(str::to_string)
        .collect()
}

#[test]
fn socket_observer_sends_to_a_listener() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let got = std::thread::spawn(move || {
        let (mut s, _) = listener.accept().unwrap();
        let mut text = String::new();
        s.read_to_string(&mut text).unwrap();
        text
    });
    let prog = format!(
        r#"<metadata><net name="b"> <observer /> <observer_address value="127.0.0.1" /> <observer_port value="{port}" /> <observer_type value="before" /> </net></metadata>{NETS}"#
    );
    let out = snet_run(&dir("socket"), &prog, &[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = got.join().unwrap();
    let want: String = [2, 3]
        .iter()
        .map(|t| {
            msg(
                1,
                "b",
                "before",
                None,
                &format!("<field label=\"x\" />\n<tag label=\"t\" >{t}</tag>\n"),
            )
        })
        .collect();
    assert_eq!(text, want);
}

fn interactive_prog(port: u16) -> String {
    format!(
        r#"<metadata><net name="c"> <observer /> <observer_address value="127.0.0.1" /> <observer_port value="{port}" /> <observer_interactive /> <observer_type value="after" /> </net></metadata>{NETS}"#
    )
}

fn start(d: &Path, prog: &str) -> std::process::Child {
    let p = d.join("prog.snet");
    std::fs::write(&p, prog).unwrap();
    let i = d.join("input.xml");
    std::fs::write(&i, INPUT).unwrap();
    Command::new(env!("CARGO_BIN_EXE_snet"))
        .arg("run")
        .arg(&p)
        .arg("-i")
        .arg(&i)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Reads one whole message from `s`.
fn read_message(s: &mut std::net::TcpStream) -> String {
    let mut buf = Vec::new();
    let mut byte = [0u8];
    while !buf.ends_with(b"</observer>\n") {
        if s.read(&mut byte).unwrap() == 0 {
            break;
        }
        buf.push(byte[0]);
    }
    String::from_utf8(buf).unwrap()
}

#[test]
fn interactive_observer_is_stepped_by_the_listener() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let mut child = start(&dir("interactive"), &interactive_prog(port));
    let (mut s, _) = listener.accept().unwrap();
    let mut seen = Vec::new();
    for _ in 0..2 {
        let m = read_message(&mut s);
        assert!(m.contains("oid=\"1\" position=\"c\" type=\"after\""), "{m}");
        // The record waits for the answer: the run cannot have ended.
        assert!(child.try_wait().unwrap().is_none(), "the run did not wait");
        seen.push(m);
        s.write_all(b"<observer oid=\"1\"/>\n").unwrap();
    }
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(seen[0].contains("<tag label=\"t\" >4</tag>"), "{}", seen[0]);
    assert!(seen[1].contains("<tag label=\"t\" >6</tag>"), "{}", seen[1]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(stdout.matches("type=\"data\"").count(), 2, "{stdout}");
}

#[test]
fn a_listener_that_goes_away_fails_the_run_naming_the_observer() {
    // It answers nothing and closes the connection.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let child = start(&dir("gone"), &interactive_prog(port));
    let (mut s, _) = listener.accept().unwrap();
    read_message(&mut s);
    drop(s);
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("observer 1 of `c` (after") && err.contains("closed the connection"),
        "{err}"
    );
    // No listener at all: the connection is refused.
    drop(listener);
    let out = snet_run(&dir("refused"), &interactive_prog(port), &[]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("observer 1 of `c`") && err.contains("cannot connect"),
        "{err}"
    );
}

#[test]
fn box_observer_in_a_built_program() {
    let d = dir("box");
    let ex = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/c-boxes");
    let prog = std::fs::read_to_string(ex.join("stats.snet")).unwrap();
    let file = d.join("square.xml");
    let _ = std::fs::remove_file(&file);
    let meta = format!(
        r#"<metadata><box name="square"> <observer /> <observer_file value="{}" /> <observer_data value="allvalues" /> </box></metadata>
"#,
        file.display()
    );
    std::fs::write(d.join("stats.snet"), format!("{meta}{prog}")).unwrap();
    let exe = d.join("stats");
    common::snet_build(
        &d.join("stats.snet"),
        &["generate.c", "square.c", "summarise.c"].map(|f| ex.join(f)),
        &exe,
    );
    let mut cmd = Command::new(&exe);
    cmd.arg("-i").arg(ex.join("input.xml"));
    let out = common::output_guarded(cmd);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(&file).unwrap();
    let m = messages(&text);
    assert_eq!(m.len(), 6, "{text}");
    assert!(text.contains("position=\"square\" type=\"before\""));
    assert!(
        text.contains("<field label=\"v\" interface=\"C4SNet\" >(int[3])1,2,3</field>"),
        "{text}"
    );
    assert!(
        text.contains("<field label=\"v\" interface=\"C4SNet\" >(long[3])1,4,9</field>"),
        "{text}"
    );
}

/// `snet graph --profile` with a profile of another program is an error
/// naming the mismatch (it drew nothing and exited 0); the program's own
/// profile draws.
#[test]
fn a_profile_of_another_program_is_refused() {
    let d = dir("profile-mismatch");
    let prof = d.join("prog.profile.json");
    let out = snet_run(&d, NETS, &["--profile-json", prof.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let graph = |prog: &Path| {
        Command::new(env!("CARGO_BIN_EXE_snet"))
            .arg("graph")
            .arg(prog)
            .arg("--profile")
            .arg(&prof)
            .output()
            .unwrap()
    };
    let same = graph(&d.join("prog.snet"));
    let dot = String::from_utf8_lossy(&same.stdout);
    assert!(
        same.status.success(),
        "{}",
        String::from_utf8_lossy(&same.stderr)
    );
    assert!(dot.contains(" in, "), "{dot}");
    let other = d.join("other.snet");
    std::fs::write(
        &other,
        "box g((<n>) -> (<n>));\nnet other connect g .. [{<n>} -> {<n>}];\n",
    )
    .unwrap();
    let out = graph(&other);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(out.stdout.is_empty(), "drew something");
    assert!(
        err.contains(&format!(
            "error: the profile {} is not of {}: it is of ",
            prof.display(),
            other.display()
        )) && err.contains("prog.snet")
            && err.contains("components are not in this program"),
        "{err}"
    );
}
