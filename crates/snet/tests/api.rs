//! The library API end to end: Rust boxes run to completion and streamed,
//! at 1, 2 and many workers and on two loopback nodes; flow inheritance,
//! ordering, box errors and panics.

use std::collections::BTreeMap;

use snet::{Field, Network, Record, RunErrorKind, SendError, Severity};

/// `expand` emits `<i>` = 0..n for each `<n>`; `square` turns `<i>` into a
/// field `v` = [i, i*i] (i64); a tag `<id>` and a field `note` the boxes
/// never name flow around both.
const PIPELINE: &str = "
box expand((<n>) -> (<i>));
box square((<i>) -> (v));
net main connect expand .. square;
";

fn pipeline(text: &str) -> Network {
    let mut net = Network::from_source("pipeline.snet", text).expect("compiles");
    net.add_box("expand", |input, out| {
        for i in 0..input.tag("n")? {
            out.emit(1, Record::new().with_tag("i", i))?;
        }
        Ok(())
    })
    .add_box("square", |input, out| {
        let i = input.tag("i")?;
        out.emit(
            1,
            Record::new().with_field("v", Field::from_slice(&[i, i * i])),
        )?;
        Ok(())
    });
    net
}

fn inputs(count: i64) -> impl Iterator<Item = Record> {
    (0..count).map(|id| {
        Record::new()
            .with_tag("n", id % 5)
            .with_tag("id", id)
            .with_field("note", Field::text(&format!("record {id}")))
    })
}

/// The outputs `inputs(count)` must give, in order.
fn expected(count: i64) -> Vec<(i64, i64, String)> {
    let mut v = Vec::new();
    for id in 0..count {
        for i in 0..id % 5 {
            v.push((id, i * i, format!("record {id}")));
        }
    }
    v
}

fn summary(out: &[Record]) -> Vec<(i64, i64, String)> {
    out.iter()
        .map(|r| {
            let v = r.field("v").expect("v").as_slice::<i64>().expect("i64s");
            assert_eq!(v[0] * v[0], v[1]);
            let mut labels = r.labels();
            labels.sort();
            assert_eq!(labels, ["<id>", "note", "v"], "{r}");
            (
                r.tag("id").expect("<id> flowed around the boxes"),
                v[1],
                r.field("note")
                    .expect("note flowed around")
                    .to_text()
                    .expect("chars"),
            )
        })
        .collect()
}

#[test]
fn runs_to_completion_in_order_at_1_2_and_8_workers() {
    for workers in [1, 2, 8] {
        let mut net = pipeline(PIPELINE);
        net.workers(workers);
        let out = net.run(inputs(300)).expect("runs");
        // One stream through boxes: records never overtake each other.
        assert_eq!(summary(&out), expected(300), "{workers} workers");
    }
}

#[test]
fn concurrent_box_calls_keep_the_order() {
    let mut net = pipeline(PIPELINE);
    net.workers(4).box_concurrency(4);
    let out = net.run(inputs(200)).expect("runs");
    assert_eq!(summary(&out), expected(200));
}

#[test]
fn two_loopback_nodes_move_records_and_fields_between_them() {
    // `square` runs on node 1; its big fields (8 KiB, sent by reference)
    // and the inherited `note` cross back to node 0's output.
    let text = "
box expand((<n>) -> (<i>));
box square((<i>) -> (v));
box widen((v) -> (v, big));
net main connect expand .. square@1 .. widen@1;
";
    let mut net = pipeline(text);
    net.add_box("widen", |input, out| {
        let v = input.field("v")?.clone();
        let i = v.as_slice::<i64>().ok_or("v is not i64")?[0];
        let big: Vec<f64> = (0..1024).map(|k| (i * k) as f64).collect();
        out.emit(
            1,
            Record::new()
                .with_field("v", v)
                .with_field("big", Field::from_slice(&big)),
        )?;
        Ok(())
    })
    .nodes(2)
    .workers(2);
    let out = net.run(inputs(60)).expect("runs on two nodes");
    for r in &out {
        let i = r.field("v").unwrap().as_slice::<i64>().unwrap()[0];
        let big = r
            .field("big")
            .expect("big")
            .as_slice::<f64>()
            .expect("f64s");
        assert_eq!(big.len(), 1024);
        assert_eq!(big[3], (i * 3) as f64);
    }
    let out: Vec<Record> = out
        .into_iter()
        .map(|r| {
            Record::new()
                .with_field("v", r.field("v").unwrap().clone())
                .with_field("note", r.field("note").unwrap().clone())
                .with_tag("id", r.tag("id").unwrap())
        })
        .collect();
    assert_eq!(summary(&out), expected(60));
}

#[test]
fn flow_inheritance_through_a_filter_and_a_parallel_composition() {
    let text = "
box classify((x) -> (small) | (large, <big>));
net main connect classify .. ([{small} -> {small, <kind = 1>}] | [{large, <big>} -> {large, <kind = 2>}]);
";
    let mut net = Network::from_source("inherit.snet", text).unwrap();
    net.add_box("classify", |input, out| {
        let x = input.field("x")?;
        let v = x.as_slice::<i32>().ok_or("x is not int")?[0];
        if v < 10 {
            out.emit(1, Record::new().with_field("small", x.clone()))?;
        } else {
            out.emit(
                2,
                Record::new()
                    .with_field("large", x.clone())
                    .with_tag("big", 1),
            )?;
        }
        Ok(())
    })
    .workers(2);
    let input = [3, 30, 7, 70].map(|v| {
        Record::new()
            .with_field("x", Field::scalar(v))
            .with_tag("key", v as i64)
    });
    let out = net.run(input).unwrap();
    let got: BTreeMap<i64, (i64, String)> = out
        .iter()
        .map(|r| {
            (
                r.tag("key").unwrap(),
                (r.tag("kind").unwrap(), r.to_string()),
            )
        })
        .collect();
    assert_eq!(
        got[&3],
        (1, "{small, <kind>=1, <key>=3}".to_string()),
        "{got:?}"
    );
    assert_eq!(got[&70].0, 2);
    assert!(
        !got[&70].1.contains("<big>"),
        "the filter dropped <big>: {got:?}"
    );
}

#[test]
fn streaming_handles_keep_a_network_running() {
    let mut net = pipeline(PIPELINE);
    net.workers(2);
    let mut running = net.start();
    // Each request is answered while the network keeps running.
    for id in 1..=20i64 {
        running
            .send(
                Record::new()
                    .with_tag("n", 2)
                    .with_tag("id", id)
                    .with_field("note", Field::text("s")),
            )
            .unwrap();
        let a = running.recv().expect("first answer");
        let b = running.recv().expect("second answer");
        assert_eq!((a.tag("id"), b.tag("id")), (Some(id), Some(id)));
        assert_eq!(running.try_recv().map(|r| r.to_string()), None);
    }
    running
        .send(
            Record::new()
                .with_tag("n", 3)
                .with_tag("id", 99)
                .with_field("note", Field::text("s")),
        )
        .unwrap();
    running.close_input();
    assert!(running.send(Record::new()).is_err(), "no input after close");
    let mut rest = Vec::new();
    while let Some(r) = running.recv() {
        rest.push(r);
    }
    assert_eq!(rest.len(), 3);
    assert_eq!(running.finish().unwrap().len(), 0);
}

#[test]
fn a_panicking_box_is_a_runtime_error_naming_it() {
    let text = "box risky((<n>) -> (<n>)); net main connect risky;";
    let mut net = Network::from_source("risky.snet", text).unwrap();
    net.add_box("risky", |input, out| {
        let n = input.tag("n")?;
        assert!(n != 500, "cannot take {n}");
        out.emit(1, Record::new().with_tag("n", n))?;
        Ok(())
    })
    .workers(2);
    // Far more input than the run takes before the panic: nothing hangs.
    let err = net
        .run((0..100_000).map(|n| Record::new().with_tag("n", n)))
        .unwrap_err();
    assert_eq!(err.box_name(), Some("risky"));
    let msg = err.to_string();
    assert!(msg.contains("risky.snet:1:"), "{msg}");
    assert!(
        msg.contains("box `risky`: panicked: cannot take 500"),
        "{msg}"
    );
    assert!(msg.contains("caused by input record 501"), "{msg}");
    // The network runs again after a failed run.
    let out = net
        .run((0..3).map(|n| Record::new().with_tag("n", n)))
        .unwrap();
    assert_eq!(out.len(), 3);
}

#[test]
fn box_errors_and_wrong_outputs_name_the_box() {
    let text = "box f((<n>) -> (<m>) | (x)); net main connect f;";
    let run = |f: fn(i64, &mut snet::Emitter<'_>) -> snet::BoxResult| {
        let mut net = Network::from_source("f.snet", text).unwrap();
        net.add_box("f", move |input, out| f(input.tag("n")?, out));
        net.workers(1)
            .run([Record::new().with_tag("n", 1)])
            .unwrap_err()
            .to_string()
    };
    let e = run(|_, _| Err("no luck".into()));
    assert!(e.contains("box `f`: failed: no luck"), "{e}");
    let e = run(|n, out| Ok(out.emit(1, Record::new().with_tag("n", n))?));
    assert!(
        e.contains("box `f`: output variant 1 is (<m>), but the record emitted holds (<n>)"),
        "{e}"
    );
    let e = run(|n, out| Ok(out.emit(3, Record::new().with_tag("m", n))?));
    assert!(
        e.contains(
            "box `f`: Emitter::emit called with output variant 3, but the signature declares 2"
        ),
        "{e}"
    );
    // An error the box swallows still ends the run.
    let e = run(|n, out| {
        let _ = out.emit(2, Record::new().with_tag("m", n));
        Ok(())
    });
    assert!(e.contains("box `f`: output variant 2 is (x)"), "{e}");
    // A label the box's input lacks.
    let e = run(|_, _| {
        Err(Box::new(snet::MissingLabel {
            label: "<q>".into(),
            box_name: "f".into(),
        }))
    });
    assert!(e.contains("box `f`: failed: its input has no <q>"), "{e}");
}

#[test]
fn unregistered_boxes_and_bad_programs_are_reported() {
    let net = Network::from_source(
        "two.snet",
        "box a((<n>) -> (<n>)); box b((<n>) -> (<n>)); net main connect a .. b;",
    )
    .unwrap();
    let e = net
        .run([Record::new().with_tag("n", 1)])
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("box `a` (two.snet:1:1): no Rust function is registered for it"),
        "{e}"
    );
    assert!(e.contains("box `b` (two.snet:1:24)"), "{e}");

    let err = Network::from_source("bad.snet", "box f((a) -> (b));\nnet main connect f .. g;")
        .unwrap_err();
    let text = err.to_string();
    assert!(text.starts_with("error: "), "{text}");
    assert!(text.contains("bad.snet:2:23"), "{text}");
    assert!(text.contains("^"), "rendered with a caret: {text}");
    let d = &err.diagnostics()[0];
    assert_eq!((d.severity, d.position), (Severity::Error, Some((2, 23))));

    let missing = Network::from_file("surely/not/here.snet").unwrap_err();
    assert!(
        missing
            .to_string()
            .starts_with("error: cannot read surely/not/here.snet:"),
        "{missing}"
    );
}

#[test]
fn xml_records_are_read_run_and_written_as_snet_run_does() {
    let input = r#"<?xml version="1.0" ?>
<record type="data"><tag label="n">2</tag><tag label="id">7</tag><field label="note">(int[2])104,105</field></record>
<record type="data"><tag label="n">0</tag><tag label="id">8</tag><field label="note">(int[1])0</field></record>
<record type="terminate" />
<record type="data"><tag label="n">9</tag></record>"#;
    let records: Vec<Record> = snet::XmlReader::with_name(input.as_bytes(), "in.xml")
        .collect::<Result<_, _>>()
        .expect("reads");
    assert_eq!(records.len(), 2, "the terminate record ends the stream");
    let out = pipeline(PIPELINE).workers(2).run(records).expect("runs");
    let mut w = snet::XmlWriter::new(Vec::new());
    for r in &out {
        w.write(r).expect("writes");
    }
    let text = String::from_utf8(w.finish().expect("finishes")).expect("UTF-8");
    let lines: Vec<&str> = text.lines().filter(|l| l.contains("label=\"v\"")).collect();
    assert_eq!(lines.len(), 2, "{text}");
    assert!(
        text.contains(r#"<field label="v" interface="C4SNet">(long[2])1,1</field>"#),
        "{text}"
    );
    assert!(
        text.contains(r#"<field label="note" interface="C4SNet">(int[2])104,105</field>"#),
        "{text}"
    );
    assert!(text.trim_end().ends_with(r#"<record type="terminate" />"#));

    let bad = "<record type=\"data\"><tag label=\"n\">x</tag></record>";
    let err = snet::XmlReader::with_name(bad.as_bytes(), "bad.xml")
        .next()
        .expect("an item")
        .unwrap_err();
    assert!(err.to_string().starts_with("bad.xml:1:"), "{err}");
}

/// A run's error says what failed, for a program to match on, with the
/// box, the input record and the node; its `Debug` shows those, not the
/// runtime's internals.
#[test]
fn run_errors_have_a_kind_and_a_place() {
    let text = "box f((<n>) -> (<n>)); net main connect f;";
    let run = |f: fn(i64) -> snet::BoxResult, input: Record| {
        let mut net = Network::from_source("f.snet", text).unwrap();
        net.add_box("f", move |i, out| {
            f(i.tag("n")?)?;
            out.emit(1, Record::new().with_tag("n", i.tag("n")?))?;
            Ok(())
        });
        let inputs = (0..3)
            .map(|n| Record::new().with_tag("n", n))
            .chain([input]);
        net.workers(1).run(inputs).unwrap_err()
    };
    let n = |v| Record::new().with_tag("n", v);
    let e = run(|n| if n == 7 { panic!("no sevens") } else { Ok(()) }, n(7));
    assert_eq!(e.kind(), RunErrorKind::BoxPanic, "{e}");
    assert_eq!(
        (e.box_name(), e.input_record(), e.node()),
        (Some("f"), Some(4), None)
    );
    // The panic's message and place, without RUST_BACKTRACE.
    assert!(
        e.to_string().contains("box `f`: panicked: no sevens (at "),
        "{e}"
    );
    assert!(e.to_string().contains("api.rs:"), "{e}");
    let debug = format!("{e:?}");
    assert!(
        debug
            .starts_with("RunError { kind: BoxPanic, box_name: Some(\"f\"), input_record: Some(4)"),
        "{debug}"
    );
    assert!(
        !debug.contains("Origin") && !debug.contains("FromInput"),
        "{debug}"
    );

    let e = run(
        |n| {
            if n == 7 {
                Err("no luck".into())
            } else {
                Ok(())
            }
        },
        n(7),
    );
    assert_eq!(
        (e.kind(), e.box_name()),
        (RunErrorKind::BoxError, Some("f"))
    );

    // A record the box cannot take: a type error, naming the box.
    let e = run(|_| Ok(()), Record::new().with_tag("m", 1));
    assert_eq!(e.kind(), RunErrorKind::TypeError, "{e}");
    assert_eq!((e.box_name(), e.input_record()), (Some("f"), Some(4)));

    // A dynamic placement out of range, on two nodes.
    let mut net =
        Network::from_source("p.snet", "box f((<n>) -> (<n>)); net p connect f !@ <n>;").unwrap();
    net.add_box("f", |i, out| {
        Ok(out.emit(1, Record::new().with_tag("n", i.tag("n")?))?)
    })
    .nodes(2);
    let e = net.run([n(1), n(5)]).unwrap_err();
    assert_eq!(e.kind(), RunErrorKind::Placement, "{e}");
    assert!(
        e.to_string()
            .contains("placement error: dynamic placement to node 5"),
        "{e}"
    );
    assert_eq!(e.input_record(), Some(2));
}

/// A box registered under a name the program does not have: the run
/// fails before it starts, with the nearest box name.
#[test]
fn a_box_the_program_does_not_have_is_an_error() {
    let mut net =
        Network::from_source("g.snet", "box greet((<n>) -> (<n>)); net g connect greet;").unwrap();
    net.add_box("greet", |i, out| {
        Ok(out.emit(1, Record::new().with_tag("n", i.tag("n")?))?)
    })
    .add_box("g_typo", |_, _| Ok(()))
    .add_box("gret", |_, _| Ok(()));
    let e = net.run([Record::new().with_tag("n", 1)]).unwrap_err();
    assert_eq!(e.kind(), RunErrorKind::UnknownBox, "{e}");
    assert_eq!(
        e.to_string(),
        "Network::add_box(\"g_typo\", ...): the program has no box `g_typo`\n\
         Network::add_box(\"gret\", ...): the program has no box `gret`; did you mean `greet`?"
    );
    let running = net.start();
    assert!(running
        .finish()
        .is_err_and(|e| e.kind() == RunErrorKind::UnknownBox));
}

/// `Running` iterates over the outputs; `try_send` never waits and
/// `send_timeout` waits at most its time, both giving the record back.
#[test]
fn running_iterates_and_sends_without_waiting() {
    use std::sync::{Arc, Condvar, Mutex};
    let gate = Arc::new((Mutex::new(false), Condvar::new()));
    let g = gate.clone();
    let mut net =
        Network::from_source("s.snet", "box hold((<n>) -> (<n>)); net s connect hold;").unwrap();
    net.add_box("hold", move |i, out| {
        // Every call waits until the test opens the gate: the input fills.
        let (open, cv) = &*g;
        let mut o = open.lock().unwrap();
        while !*o {
            o = cv.wait(o).unwrap();
        }
        out.emit(1, Record::new().with_tag("n", i.tag("n")?))?;
        Ok(())
    })
    .workers(1);
    /// Opens the gate when dropped (also when an assertion fails: the run
    /// must not wait for ever in `Running`'s drop).
    struct Open(Arc<(Mutex<bool>, Condvar)>);
    impl Drop for Open {
        fn drop(&mut self) {
            *self.0 .0.lock().unwrap_or_else(|e| e.into_inner()) = true;
            self.0 .1.notify_all();
        }
    }
    let mut running = net.start();
    let opener = Open(gate);
    let mut sent = 0i64;
    let full = loop {
        match running.try_send(Record::new().with_tag("n", sent)) {
            Ok(()) => sent += 1,
            Err(SendError::Full(r)) => break r,
            Err(e) => panic!("{e}"),
        }
        assert!(sent < 100_000, "the input never filled");
    };
    assert_eq!(full.tag("n"), Some(sent));
    // The engine may still take a few (its reader fills its read-ahead):
    // `send_timeout` sends until nothing is taken within its time.
    let mut next = full;
    let full = loop {
        match running.send_timeout(next, std::time::Duration::from_millis(20)) {
            Ok(()) => sent += 1,
            Err(SendError::Full(r)) => break r,
            Err(e) => panic!("{e}"),
        }
        assert!(sent < 100_000, "the input never filled");
        next = Record::new().with_tag("n", sent);
    };
    assert_eq!(full.tag("n"), Some(sent));
    drop(opener);
    running.close_input();
    let mut got: Vec<i64> = running.by_ref().filter_map(|r| r.tag("n")).collect();
    got.sort_unstable();
    assert_eq!(got, (0..sent).collect::<Vec<_>>());
    assert!(running.finish().unwrap().is_empty());
    // After the end: the record comes back.
    let mut ended = net.start();
    ended.close_input();
    assert!(matches!(
        ended.try_send(Record::new()),
        Err(SendError::Ended(_))
    ));
}

/// A box's panic prints nothing on standard error (the run's error has
/// its message and place), while other panics still reach the hook
/// installed before: checked in a child process of this test binary.
#[test]
fn a_box_panic_prints_no_backtrace_note() {
    if std::env::var_os("SNET_PANIC_CHILD").is_some() {
        let mut net =
            Network::from_source("q.snet", "box f((<n>) -> (<n>)); net q connect f;").unwrap();
        net.add_box("f", |_, _| panic!("quietly"));
        let e = net.run([Record::new().with_tag("n", 1)]).unwrap_err();
        eprintln!("RUN ERROR: {e}");
        let other = std::thread::spawn(|| panic!("elsewhere")).join();
        assert!(other.is_err());
        return;
    }
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "a_box_panic_prints_no_backtrace_note",
            "--nocapture",
            "--test-threads",
            "1",
        ])
        .env("SNET_PANIC_CHILD", "1")
        .env_remove("RUST_BACKTRACE")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("RUN ERROR: q.snet:1:38: box `f`: panicked: quietly (at "),
        "{err}"
    );
    // The box's panic is not printed by the hook; the other one is.
    assert_eq!(err.matches("panicked at").count(), 1, "{err}");
    assert!(err.contains("elsewhere"), "{err}");
}

/// An output variant whose labels are not in the order the record keeps
/// them (labels are ordered by first appearance in the program: `<w>`,
/// then `<p>`; the variant names `<p>` first) is still the record's
/// variant: `emit` compares label sets, not sequences.
#[test]
fn emit_takes_a_variant_whose_labels_are_out_of_the_records_order() {
    let mut net = Network::from_source(
        "order.snet",
        "box f((<w>) -> (<w>) | (<p>, <w>)); net main connect f;",
    )
    .expect("compiles");
    net.add_box("f", |input, out| {
        let w = input.tag("w")?;
        out.emit(2, Record::new().with_tag("p", w + 1).with_tag("w", w))?;
        Ok(())
    });
    let out = net.run([Record::new().with_tag("w", 4)]).expect("runs");
    assert_eq!(out.len(), 1);
    assert_eq!((out[0].tag("p"), out[0].tag("w")), (Some(5), Some(4)));
}

/// A C box library (`Network::c_library_files` and a C source, compiled
/// with `cc`) gives the program's C box; a Rust function for the other box
/// of the library wins over its C one; the library refuses a program that
/// declares one of its boxes otherwise.
#[test]
fn c_boxes_from_a_library_next_to_rust_boxes() {
    let program = "box inc((a) -> (b)); box twice((b) -> (c)); net flow connect inc .. twice;";
    let mut net = Network::from_source("flow.snet", program).expect("compiles");
    let dir = std::env::temp_dir().join(format!("snet-api-clib-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("scratch directory");
    for (name, text) in net.c_library_files() {
        std::fs::write(dir.join(name), text).expect("write");
    }
    std::fs::write(
        dir.join("boxes.c"),
        "#include \"C4SNet.h\"\n\
         void *inc(void *hnd, c4snet_data_t *a)\n\
         { long v = *(long *)C4SNetGetData(a) + 1; C4SNetFree(a); C4SNetOut(hnd, 1, C4SNetCreate(CTYPE_long, 1, &v)); return hnd; }\n\
         void *twice(void *hnd, c4snet_data_t *b) { C4SNetOut(hnd, 1, b); return hnd; }\n",
    )
    .expect("write");
    let lib = dir.join("libflow.so");
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let built = std::process::Command::new(cc)
        .args(["-shared", "-fPIC", "-Wl,-z,defs", "-I"])
        .arg(&dir)
        .arg("-o")
        .arg(&lib)
        .args(["snet_library.c", "snet_c4snet.c", "boxes.c"].map(|f| dir.join(f)))
        .status()
        .expect("run cc");
    assert!(built.success());
    let mut names = net.add_c_library(&lib).expect("loads");
    names.sort();
    assert_eq!(names, ["inc", "twice"]);
    net.add_box("twice", |input, out| {
        let b = input
            .field("b")?
            .as_slice::<i64>()
            .ok_or("b is not a long")?[0];
        out.emit(1, Record::new().with_field("c", Field::scalar(b * 2)))?;
        Ok(())
    })
    .workers(2);
    let out = net
        .run((0..5).map(|i| Record::new().with_field("a", Field::scalar(i as i64))))
        .expect("runs");
    let mut cs: Vec<i64> = out
        .iter()
        .map(|r| r.field("c").and_then(|f| f.as_slice::<i64>()).expect("c")[0])
        .collect();
    cs.sort();
    assert_eq!(cs, [2, 4, 6, 8, 10]);

    let mut other =
        Network::from_source("other.snet", "box inc((a, <t>) -> (b)); net o connect inc;")
            .expect("compiles");
    let e = other.add_c_library(&lib).expect_err("another signature");
    let text = e.to_string();
    assert!(
        text.contains("libflow.so")
            && text.contains("inc((a) -> (b))")
            && text.contains("inc((a, <t>) -> (b))"),
        "{text}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
