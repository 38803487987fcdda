//! Input admission (`scheduler/admission.rs`) seen from outside the
//! engine: how many records a worker admits at once (the length of the
//! entry box's runs of calls), and that input does not pile up in front
//! of a slow stage.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use snet_core::*;
use snet_engine::{
    BoxError, BoxImpl, Config, Emit, Emitter, LanguageInterface, ResolveError, Sink, Source,
    SourceError,
};

/// The network of one box `b` from `<x>` to `output` (a variant of labels).
fn box_graph(output: &[Label]) -> Arc<Graph> {
    let x = Label::tag("x");
    let def = BoxDef::declared(
        "b",
        "Blob",
        vec![x],
        vec![output.to_vec()],
        Loc::start_of("test.snet"),
    );
    Arc::new(Graph::one_box(def, Type(vec![Variant::new([x])])))
}

/// Records `<x>` = 1..=n.
fn records(n: i64) -> Vec<Record> {
    let x = Label::tag("x");
    (1..=n)
        .map(|i| {
            let mut r = Record::new();
            r.set_int(x, i);
            r
        })
        .collect()
}

/// Resolves every box to `b`.
struct Same(Arc<dyn BoxImpl>);
impl LanguageInterface for Same {
    fn resolve(&self, _def: &BoxDef) -> Result<Arc<dyn BoxImpl>, ResolveError> {
        Ok(self.0.clone())
    }
}

/// The records of a vector, counting those handed to the engine.
struct Counted {
    recs: std::vec::IntoIter<Record>,
    read: Arc<AtomicUsize>,
}

impl Source for Counted {
    fn next_record(&mut self) -> Result<Option<Record>, SourceError> {
        let r = self.recs.next();
        if r.is_some() {
            self.read.fetch_add(1, Ordering::SeqCst);
        }
        Ok(r)
    }
}

/// A box that emits nothing and notes the length of each run of calls;
/// its first call waits until the source has handed out all `n` records
/// (and a little longer, for the reader to hand them over), so that every
/// later admission finds more than a batch waiting.
struct Runs {
    runs: Mutex<Vec<usize>>,
    read: Arc<AtomicUsize>,
    n: usize,
}

impl BoxImpl for Runs {
    fn invoke(&self, _input: &Record, _out: &mut dyn Emit) -> Result<(), BoxError> {
        unreachable!("its runs are driven by invoke_run")
    }

    fn invoke_run(&self, run: &mut Emitter) -> Result<(), BoxError> {
        let mut runs = self.runs.lock().unwrap();
        if runs.is_empty() {
            while self.read.load(Ordering::SeqCst) < self.n {
                std::thread::sleep(Duration::from_millis(1));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let mut n = 1;
        while run.next_input() {
            n += 1;
        }
        runs.push(n);
        Ok(())
    }
}

/// A worker admits a task's batch (64 records) at once, so that the entry
/// box, fed from the input stream, runs calls in runs of 64 as it does when
/// a generator box feeds it (with 16 at a time every run was a quarter of
/// that, and each call paid a quarter of its run's set-up).
#[test]
fn admission_feeds_the_entry_box_runs_of_a_whole_batch() {
    // Fewer than the read-ahead buffer holds (1024).
    let n = 1000;
    let read = Arc::new(AtomicUsize::new(0));
    let b = Arc::new(Runs {
        runs: Mutex::new(Vec::new()),
        read: read.clone(),
        n: n as usize,
    });
    let source = Counted {
        recs: records(n).into_iter(),
        read: read.clone(),
    };
    let sink = Collect::default();
    let config = Config {
        workers: 1,
        ..Config::default()
    };
    snet_engine::run(
        box_graph(&[]),
        &config,
        Some((Box::new(source), Box::new(sink))),
        &Same(b.clone()),
        &snet_engine::SingleNode,
    )
    .expect("run");
    let runs = b.runs.lock().unwrap();
    assert_eq!(
        runs.iter().sum::<usize>(),
        n as usize,
        "every record one call"
    );
    // After the first call the rest wait in the read-ahead buffer: an
    // admission takes a whole batch, never more. (Only whole batches are
    // asserted of most runs, not all: a reader thread kept off the
    // processors after the box's wait may hand over its last records
    // late, and the admission meanwhile takes what there is.)
    let later = &runs[1..];
    let whole = later.iter().filter(|&&r| r == 64).count();
    assert!(
        later.iter().all(|&r| r <= 64) && whole * 2 > later.len(),
        "runs of a whole batch (64): {runs:?}"
    );
}

/// Counts what it is given and takes a while per record (a slow output
/// stage), noting the most records read from the input and not yet
/// written at any write.
#[derive(Default, Clone)]
struct Collect {
    written: Arc<AtomicUsize>,
    read: Option<Arc<AtomicUsize>>,
    most_in_flight: Arc<AtomicUsize>,
    per_record: Duration,
}

impl Sink for Collect {
    fn write(&mut self, _rec: &Record) -> std::io::Result<()> {
        let w = self.written.fetch_add(1, Ordering::SeqCst) + 1;
        if let Some(read) = &self.read {
            let in_flight = read.load(Ordering::SeqCst).saturating_sub(w);
            self.most_in_flight.fetch_max(in_flight, Ordering::SeqCst);
        }
        let t = Instant::now();
        while t.elapsed() < self.per_record {
            std::hint::spin_loop();
        }
        Ok(())
    }
    fn finish(&mut self) -> std::io::Result<()> {
        Ok(())
    }
    fn abort(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The identity box `<x>` -> `<x>`.
struct Pass;

impl BoxImpl for Pass {
    fn invoke(&self, input: &Record, out: &mut dyn Emit) -> Result<(), BoxError> {
        out.emit(1, input.clone())
    }
}

/// Input does not pile up in front of a slow stage: with the output slow
/// and a second worker free to admit, the records read but not yet written
/// stay within the read-ahead buffer (1024 and a reader's batch), the
/// node's inboxes' bound for admission (1024) and a few batches in hand,
/// far below the input's 10,000.
#[test]
fn input_does_not_pile_up_in_front_of_a_slow_output() {
    let n = 10_000;
    let read = Arc::new(AtomicUsize::new(0));
    let source = Counted {
        recs: records(n).into_iter(),
        read: read.clone(),
    };
    let sink = Collect {
        read: Some(read),
        per_record: Duration::from_micros(20),
        ..Collect::default()
    };
    let config = Config {
        workers: 2,
        ..Config::default()
    };
    snet_engine::run(
        box_graph(&[Label::tag("x")]),
        &config,
        Some((Box::new(source), Box::new(sink.clone()))),
        &Same(Arc::new(Pass)),
        &snet_engine::SingleNode,
    )
    .expect("run");
    assert_eq!(sink.written.load(Ordering::SeqCst), n as usize);
    let most = sink.most_in_flight.load(Ordering::SeqCst);
    assert!(
        most < 2600,
        "{most} records read and not yet written: the input piled up"
    );
}
