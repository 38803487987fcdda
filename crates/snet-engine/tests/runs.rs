//! Runs of box calls driven by the box implementation, as C4SNet drives
//! them: outputs placed at once ([`Emitter::tag_output`]) and a run's
//! further inputs read where the worker took them.

mod common;

use std::any::Any;
use std::sync::Arc;

use common::vec_io;
use snet_core::*;
use snet_engine::dist::FieldBytes;
use snet_engine::{
    BoxError, BoxImpl, Config, Emit, Emitter, LanguageInterface, ResolveError, TagOutput,
};

/// The network of one box `b` from `inputs` (in signature order) to
/// `output`.
fn box_graph(inputs: &[Label], output: &[Label]) -> Arc<Graph> {
    let def = BoxDef::declared(
        "b",
        "Blob",
        inputs.to_vec(),
        vec![output.to_vec()],
        Loc::start_of("test.snet"),
    );
    Arc::new(Graph::one_box(
        def,
        Type(vec![Variant::new(inputs.iter().copied())]),
    ))
}

/// Runs `g` with `b` as its one box on `inputs`: the outputs and the
/// count of suspended calls.
fn run_box(
    g: &Arc<Graph>,
    workers: usize,
    b: Arc<dyn BoxImpl>,
    inputs: Vec<Record>,
) -> (Vec<Record>, u64) {
    /// The run's one box is `b` itself.
    struct Same(Arc<dyn BoxImpl>);
    impl LanguageInterface for Same {
        fn resolve(&self, _def: &BoxDef) -> Result<Arc<dyn BoxImpl>, ResolveError> {
            Ok(self.0.clone())
        }
    }
    let config = Config {
        workers,
        ..Config::default()
    };
    let (io, out) = vec_io(inputs);
    let stats = snet_engine::run(
        g.clone(),
        &config,
        Some(io),
        &Same(b),
        &snet_engine::SingleNode,
    )
    .expect("run");
    let got = std::mem::take(&mut *out.lock().unwrap());
    (got, stats.suspensions as u64)
}

/// `box inc((<x>) -> (<x>))` driving its runs itself, as C4SNet does:
/// `m` outputs per call, `<x>` = x * 1000 + i, each placed by
/// [`Emitter::tag_output`] (a copy of the input with the value written
/// over it) and, where that cannot be done at once, by
/// [`Emitter::slot_over`] and a commit, which it counts.
struct AtOnce {
    m: i64,
    other: std::sync::atomic::AtomicUsize,
}

impl BoxImpl for AtOnce {
    fn invoke(&self, _input: &Record, _out: &mut dyn Emit) -> Result<(), BoxError> {
        unreachable!("its runs are driven by invoke_run")
    }

    fn invoke_run(&self, run: &mut Emitter) -> Result<(), BoxError> {
        let x = Label::tag("x");
        loop {
            let v0 = run.input().int(x).expect("<x>") * 1000;
            for i in 0..self.m {
                match run.tag_output(1) {
                    TagOutput::Now(mut o) => {
                        let &[(p, 0)] = o.args() else {
                            panic!("one value, the box's first")
                        };
                        // SAFETY: `p` is a position of `args`.
                        unsafe { o.set(p, v0 + i) };
                    }
                    TagOutput::Steps(_) => panic!("the outputs have the input's labels"),
                    TagOutput::Other => {
                        self.other
                            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        let o = run.slot_over(1).expect("an overwrite");
                        // SAFETY: the position of `<x>`, an int.
                        unsafe { o.rec.set_int_at_unchecked(o.args[0].0 as usize, v0 + i) };
                        run.commit_slot();
                    }
                }
            }
            if !run.next_input() {
                return Ok(());
            }
        }
    }
}

/// Outputs placed at once ([`TagOutput::Now`]) never fill a call's batch:
/// the output that does goes the general way, whose commit suspends the
/// call. Ten inputs, 100 outputs each (runs of calls at 1 worker): one
/// suspension per call, most outputs placed at once, and every output
/// delivered in order with its value.
#[test]
fn outputs_placed_at_once_leave_the_batchs_end_to_the_commit() {
    let x = Label::tag("x");
    let g = box_graph(&[x], &[x]);
    for workers in [1, 2, 4] {
        let b = Arc::new(AtOnce {
            m: 100,
            other: Default::default(),
        });
        let inputs = (0..10)
            .map(|k| {
                let mut r = Record::new();
                r.set_int(x, k);
                r
            })
            .collect();
        let (got, suspensions) = run_box(&g, workers, b.clone(), inputs);
        let got: Vec<i64> = got.iter().map(|r| r.int(x).expect("<x>")).collect();
        let want: Vec<i64> = (0..10)
            .flat_map(|k| (0..100).map(move |i| k * 1000 + i))
            .collect();
        assert_eq!(got, want, "{workers} workers");
        assert_eq!(suspensions, 10, "{workers} workers");
        // The general way: the ten outputs that fill a batch, and those
        // that found no room left in the call's queue (it grows then).
        let other = b.other.load(std::sync::atomic::Ordering::Relaxed);
        assert!((10..=100).contains(&other), "{workers} workers: {other}");
    }
}

/// Field values that count how many of them were dropped.
static COUNTED_DROPS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// A field value that counts its drop in [`COUNTED_DROPS`].
struct Counted(FieldBytes);

impl Drop for Counted {
    fn drop(&mut self) {
        COUNTED_DROPS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }
}

impl FieldData for Counted {
    fn interface(&self) -> &str {
        "Blob"
    }
    fn codec(&self) -> &str {
        "blob"
    }
    fn encode_meta(&self, _out: &mut Vec<u8>) {}
    fn body(&self) -> &[u8] {
        &self.0
    }
    fn deep_copy(&self) -> Arc<dyn FieldData> {
        Arc::new(Counted(self.0.clone()))
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn into_any(self: Arc<Self>) -> Arc<dyn Any + Send + Sync> {
        self
    }
}

/// `box look((<x>, f) -> (<y>))` driving its runs itself: `m` outputs
/// per call, `<y>` = x * 1000 + i + the first byte of `f`, with `<x>`
/// and `f` read from [`Emitter::input`] again for every output (after
/// the outputs that suspended the call too).
struct Reread(i64);

impl BoxImpl for Reread {
    fn invoke(&self, _input: &Record, _out: &mut dyn Emit) -> Result<(), BoxError> {
        unreachable!("its runs are driven by invoke_run")
    }

    fn invoke_run(&self, run: &mut Emitter) -> Result<(), BoxError> {
        let (x, f, y) = (Label::tag("x"), Label::field("f"), Label::tag("y"));
        loop {
            for i in 0..self.0 {
                let input = run.input();
                let v = input.int(x).expect("<x>");
                let body = input.field(f).expect("f").get().expect("local");
                let mut r = Record::new();
                r.set_int(y, v * 1000 + i + i64::from(body.body()[0]));
                run.emit(1, r)?;
            }
            if !run.next_input() {
                return Ok(());
            }
        }
    }
}

/// A run's further inputs are read where the worker took them, and
/// moved into the call when it is suspended (and when the run ends): a
/// call reads its input unchanged after every output, suspended or not,
/// and every input is dropped exactly once. 50 inputs with a field each,
/// 100 outputs per call and 3.
#[test]
fn a_runs_inputs_read_in_place_stay_the_calls_and_are_dropped_once() {
    let (x, f, y) = (Label::tag("x"), Label::field("f"), Label::tag("y"));
    let g = box_graph(&[x, f], &[y]);
    // 100 outputs a call: each call is suspended once; 3: none is, and
    // the run's last input is still where the worker took it when the
    // run ends.
    for (m, want_suspensions) in [(100, 50), (3, 0)] {
        for workers in [1, 2, 4] {
            let inputs = (0..50)
                .map(|k| {
                    let mut r = Record::new();
                    r.set_int(x, k);
                    let mut body = FieldBytes::for_field(1);
                    body[0] = 7;
                    let value: Arc<dyn FieldData> = Arc::new(Counted(body));
                    r.set(f, Value::Field(Field::new(value)));
                    r
                })
                .collect();
            let before = COUNTED_DROPS.load(std::sync::atomic::Ordering::Relaxed);
            let (got, suspensions) = run_box(&g, workers, Arc::new(Reread(m)), inputs);
            let got: Vec<i64> = got.iter().map(|r| r.int(y).expect("<y>")).collect();
            let want: Vec<i64> = (0..50)
                .flat_map(|k| (0..m).map(move |i| k * 1000 + i + 7))
                .collect();
            assert_eq!(got, want, "{m} outputs, {workers} workers");
            assert_eq!(
                suspensions, want_suspensions,
                "{m} outputs, {workers} workers"
            );
            let dropped = COUNTED_DROPS.load(std::sync::atomic::Ordering::Relaxed) - before;
            assert_eq!(
                dropped, 50,
                "{m} outputs, {workers} workers: every input dropped once"
            );
        }
    }
}

/// `box pair((<x>) -> (<w>))` driving its runs with the next input's
/// check made for two labels ([`Emitter::next_input_of`]): `<w>` = `<x>`
/// for each input, emitted; counts the inputs it saw on the heap.
struct Pair {
    spilled: std::sync::atomic::AtomicUsize,
}

impl BoxImpl for Pair {
    fn invoke(&self, _input: &Record, _out: &mut dyn Emit) -> Result<(), BoxError> {
        unreachable!("its runs are driven by invoke_run")
    }

    fn invoke_run(&self, run: &mut Emitter) -> Result<(), BoxError> {
        let (x, w) = (Label::tag("x"), Label::tag("w"));
        assert_eq!(run.planned_few(), Some(2), "every input has two labels");
        loop {
            if run.input().spilled() {
                self.spilled
                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
            let mut r = Record::new();
            r.set_int(w, run.input().int(x).expect("<x>"));
            run.emit(1, r)?;
            // SAFETY: the plan is for two labels (asserted above).
            if unsafe { run.next_input_of::<2>() }.is_none() {
                return Ok(());
            }
        }
    }
}

/// `(<x>, <y>)` or `(<x>, <z>)` records (`<y>` or `<z>` = x + 1), in
/// blocks of `block`; on the heap (a record that once grew) where
/// `heap(k)`.
fn pairs(n: i64, block: i64, heap: impl Fn(i64) -> bool) -> Vec<Record> {
    let (x, y, z) = (Label::tag("x"), Label::tag("y"), Label::tag("z"));
    (0..n)
        .map(|k| {
            let mut r = if heap(k) {
                Record::with_capacity(8)
            } else {
                Record::new()
            };
            r.set_int(x, k);
            r.set_int(if (k / block) % 2 == 0 { y } else { z }, k + 1);
            assert_eq!(r.spilled(), heap(k));
            r
        })
        .collect()
}

/// A run's next input checked for the plan's count of labels
/// ([`Emitter::next_input_of`]) keeps to the planned set: a record of
/// as many labels but another set ends the run (the next is planned
/// for its own), and each output inherits its own input's tag.
#[test]
fn a_runs_inputs_checked_for_their_count_of_labels_keep_to_its_set() {
    let (x, y, z, w) = (
        Label::tag("x"),
        Label::tag("y"),
        Label::tag("z"),
        Label::tag("w"),
    );
    let g = box_graph(&[x], &[w]);
    for block in [1, 5, 100] {
        for workers in [1, 2] {
            let b = Arc::new(Pair {
                spilled: Default::default(),
            });
            let (got, _) = run_box(&g, workers, b, pairs(200, block, |_| false));
            assert_eq!(got.len(), 200, "block {block}, {workers} workers");
            for (k, r) in (0..).zip(&got) {
                let other = if (k / block) % 2 == 0 { y } else { z };
                let labels: Vec<Label> = r.labels().collect();
                let mut want = vec![w, other];
                want.sort();
                assert_eq!(labels, want, "record {k}, block {block}");
                assert_eq!(r.int(w), Some(k));
                assert_eq!(r.int(other), Some(k + 1));
            }
        }
    }
}

/// Every input of a run whose set has at most four labels is inline
/// when the box reads it (a record on the heap is moved inline as the
/// run takes it), whether it is a run's first input or a further one,
/// so that a language interface reads its entries without a look at
/// where they are ([`Record::inline_entries_ptr`]).
#[test]
fn a_runs_inputs_on_the_heap_are_read_inline() {
    let (x, w) = (Label::tag("x"), Label::tag("w"));
    let g = box_graph(&[x], &[w]);
    for heap in [|_| true, |k: i64| k % 3 == 1] {
        for workers in [1, 2] {
            let b = Arc::new(Pair {
                spilled: Default::default(),
            });
            let (got, _) = run_box(&g, workers, b.clone(), pairs(300, 1000, heap));
            let got: Vec<i64> = got.iter().map(|r| r.int(w).expect("<w>")).collect();
            assert_eq!(got, (0..300).collect::<Vec<_>>(), "{workers} workers");
            let spilled = b.spilled.load(std::sync::atomic::Ordering::Relaxed);
            assert_eq!(spilled, 0, "{workers} workers: inputs read on the heap");
        }
    }
}

/// `box fail((<x>) -> (<x>))` driving its runs: the call on `<x>` =
/// `at` ends the run ([`Emitter::end_run`]), as an interface does for a
/// call that failed, and then fails; every other call emits its input.
/// Counts the calls whose next input was asked for after `end_run`.
struct EndAt {
    at: i64,
    asked: std::sync::atomic::AtomicUsize,
}

impl BoxImpl for EndAt {
    fn invoke(&self, _input: &Record, _out: &mut dyn Emit) -> Result<(), BoxError> {
        unreachable!("its runs are driven by invoke_run")
    }

    fn invoke_run(&self, run: &mut Emitter) -> Result<(), BoxError> {
        let x = Label::tag("x");
        loop {
            let v = run.input().int(x).expect("<x>");
            let mut r = Record::new();
            r.set_int(x, v);
            run.emit(1, r)?;
            if v == self.at {
                run.end_run();
                if run.next_input() {
                    self.asked
                        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                }
                return Err(BoxError::Misuse(format!("failed on {v}")));
            }
            if !run.next_input() {
                return Ok(());
            }
        }
    }
}

/// A run that ended ([`Emitter::end_run`]: its call failed) has no next
/// input, though the worker holds more: the interface looks for the
/// error once the run ended, not after each call. No output of the
/// failing call or after it is written.
#[test]
fn a_run_that_ended_has_no_next_input() {
    let x = Label::tag("x");
    let g = box_graph(&[x], &[x]);
    for workers in [1, 2] {
        let b = Arc::new(EndAt {
            at: 5,
            asked: Default::default(),
        });
        let inputs: Vec<Record> = (0..20)
            .map(|k| {
                let mut r = Record::new();
                r.set_int(x, k);
                r
            })
            .collect();
        let config = Config {
            workers,
            ..Config::default()
        };
        struct Same(Arc<dyn BoxImpl>);
        impl LanguageInterface for Same {
            fn resolve(&self, _def: &BoxDef) -> Result<Arc<dyn BoxImpl>, ResolveError> {
                Ok(self.0.clone())
            }
        }
        let (io, out) = vec_io(inputs);
        let r = snet_engine::run(
            g.clone(),
            &config,
            Some(io),
            &Same(b.clone()),
            &snet_engine::SingleNode,
        );
        let e = r.expect_err("the call on 5 fails");
        assert!(e.to_string().contains("failed on 5"), "{e}");
        assert_eq!(b.asked.load(std::sync::atomic::Ordering::Relaxed), 0);
        let got: Vec<i64> = out
            .lock()
            .unwrap()
            .iter()
            .map(|r| r.int(x).expect("<x>"))
            .collect();
        // What was written before the run stopped: outputs of the calls
        // before the failing one, in order.
        assert_eq!(
            got,
            (0..got.len() as i64).collect::<Vec<_>>(),
            "{workers} workers"
        );
        assert!(got.len() <= 5, "{workers} workers: {got:?}");
    }
}

/// `box big((<x>) -> (<x>))` driving its runs: each call makes (and
/// drops) a field value of 1 MiB, then emits `<x>` as [`AtOnce`] does
/// (counting the outputs not placed at once).
struct MakesBig {
    other: std::sync::atomic::AtomicUsize,
}

impl BoxImpl for MakesBig {
    fn invoke(&self, _input: &Record, _out: &mut dyn Emit) -> Result<(), BoxError> {
        unreachable!("its runs are driven by invoke_run")
    }

    fn invoke_run(&self, run: &mut Emitter) -> Result<(), BoxError> {
        let x = Label::tag("x");
        loop {
            drop(FieldBytes::for_field(1 << 20));
            let v = run.input().int(x).expect("<x>");
            match run.tag_output(1) {
                // SAFETY: `p` is a position of `args`.
                TagOutput::Now(mut o) => unsafe { o.set(o.args()[0].0, v) },
                TagOutput::Steps(_) => panic!("the outputs have the input's labels"),
                TagOutput::Other => {
                    self.other
                        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let o = run.slot_over(1).expect("an overwrite");
                    // SAFETY: the position of `<x>`, an int.
                    unsafe { o.rec.set_int_at_unchecked(o.args[0].0 as usize, v) };
                    run.commit_slot();
                }
            }
            if !run.next_input() {
                return Ok(());
            }
        }
    }
}

/// An output of tags alone holds none of the field bytes its call made:
/// it is placed at once whatever they are (only outputs placed the
/// general way count them, [`snet_core::new_field_bytes`], and only
/// their commits suspend the call). 200 calls making 1 MiB each, one
/// output each.
#[test]
fn outputs_of_tags_alone_are_placed_at_once_whatever_fields_were_made() {
    let x = Label::tag("x");
    let g = box_graph(&[x], &[x]);
    let b = Arc::new(MakesBig {
        other: Default::default(),
    });
    let inputs = (0..200)
        .map(|k| {
            let mut r = Record::new();
            r.set_int(x, k);
            r
        })
        .collect();
    let (got, suspensions) = run_box(&g, 1, b.clone(), inputs);
    let got: Vec<i64> = got.iter().map(|r| r.int(x).expect("<x>")).collect();
    assert_eq!(got, (0..200).collect::<Vec<_>>());
    assert!(snet_core::big_fields_made());
    // The general way: only outputs that found no room left in the
    // call's queue (it grows then); only those count the field bytes
    // made, and only their commits suspend the call.
    let other = b.other.load(std::sync::atomic::Ordering::Relaxed);
    assert!(other < 50, "{other} of 200 outputs not placed at once");
    assert!(suspensions as usize <= other, "{suspensions} suspensions");
}
