//! Runs of box calls driven by the box implementation, as C4SNet drives
//! them: outputs placed at once ([`Emitter::tag_output`]) and a run's
//! further inputs read where the worker took them. A test binary of its
//! own: no other test in the process makes a big field value
//! (`snet_core::big_fields_made`, which turns placing at once off).

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
