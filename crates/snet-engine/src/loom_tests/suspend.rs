//! Suspended box calls ([`crate::callstack`], [`crate::boxes`], the
//! scheduler's pinned tasks): a generator box whose calls emit more than
//! a batch (under loom a batch is [`crate::runtime::YIELD_AFTER`] = 2
//! records and the backlog limit is 1, so every call is suspended and
//! most resumptions first find the backlog full).
//!
//! The real scheduler (`worker_loop` on two workers, `run_task`'s pinned
//! yield, the pinned list, `Ctx::backlog_elsewhere`), the real box entity
//! (its call stacks, `Wake`, the suspended list) and the real output
//! entity; the box is a Rust [`BoxImpl`] emitting 3 records per input.
//! Two input records are queued for the box before the workers start.
//!
//! Checked, in every interleaving:
//! * every record reaches the output, in the order the box emitted them
//!   (the second input's outputs after all of the first's: the box keeps
//!   its licence while a call is suspended);
//! * a suspended call is resumed only by the worker that started it
//!   (`CallStack::resume` asserts it);
//! * both workers end (a worker that slept with a suspended call, or a
//!   lost `Wake`, leaves the other waiting: loom reports the deadlock), no
//!   task is left, and no entity is left in the node's suspended list.
//!
//! `runs_of_calls_two_workers`: a thin box (one output per input) with
//! five inputs queued, the third and fourth of another label set (they
//! carry a tag the outputs inherit): the call stack takes further inputs from the
//! worker's taken items ([`crate::callstack`]'s runs of calls). Checked in
//! every interleaving: every output arrives once, in input order, with
//! its own input's inherited tag (a run must stop at an input of another
//! label set, whose inheritance is planned anew).
//!
//! `chain_cut_two_workers`: two chains of two boxes, the scheduler's
//! chain cut (`Shared::cut_chain`; see the test's docs).

use std::sync::{Arc, Mutex as StdMutex};

use loom::thread;
use snet_core::{BoxDef, Graph, Label, Loc, Node, NodeKind, Rank, Record, Type, Value};

use crate::boxes::{BoxImpl, Emit};
use crate::dist::Net;
use crate::entity::{Item, Offer, Rec, Stamps};
use crate::error::BoxError;
use crate::instantiate::{instantiate, output_entity};
use crate::program::Program;
use crate::runtime::{Ctx, Runtime};
use crate::scheduler::{worker_loop, Shared};

/// Emits `10 n`, `10 n + 1`, `10 n + 2` for input `<n>`.
struct Gen(Label, Label);

impl BoxImpl for Gen {
    fn invoke(&self, input: &Record, out: &mut dyn Emit) -> Result<(), BoxError> {
        let n = input.int(self.0).expect("<n>");
        for k in 0..3 {
            let mut r = Record::new();
            r.set(self.1, Value::Int(10 * n + k));
            out.emit(1, r)?;
        }
        Ok(())
    }
}

/// Emits `n + 100` for input `<n>`.
struct Thin(Label, Label);

impl BoxImpl for Thin {
    fn invoke(&self, input: &Record, out: &mut dyn Emit) -> Result<(), BoxError> {
        let n = input.int(self.0).expect("<n>");
        let mut r = Record::new();
        r.set(self.1, Value::Int(n + 100));
        out.emit(1, r)
    }
}

struct Collect(Arc<StdMutex<Vec<i64>>>, Label);

impl crate::Sink for Collect {
    fn write(&mut self, r: &Record) -> std::io::Result<()> {
        // An inherited `<t>` is added to the value (`1000 t`).
        let t = r.int(Label::tag("t")).unwrap_or(0);
        self.0
            .lock()
            .unwrap()
            .push(r.int(self.1).expect("<i>") + 1000 * t);
        Ok(())
    }
    fn finish(&mut self) -> std::io::Result<()> {
        Ok(())
    }
    fn abort(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn runtime(n: Label, i: Label) -> Runtime {
    runtime_with(n, i, Arc::new(Gen(n, i)))
}

fn runtime_with(n: Label, i: Label, imp: Arc<dyn BoxImpl>) -> Runtime {
    let loc = Loc {
        file: "t.snet".into(),
        line: 1,
        col: 1,
    };
    let mut g = Graph {
        nodes: Vec::new(),
        boxes: vec![BoxDef {
            name: "gen".into(),
            inputs: vec![n],
            init: false,
            outputs: vec![vec![i]],
            interface: "Rust".into(),
            code: None,
            loc: loc.clone(),
        }],
        entry: snet_core::NodeId(0),
    };
    g.entry = g.add(Node {
        kind: NodeKind::Box(0),
        loc,
        input: Type::default(),
        output: Type::default(),
    });
    let mut rt = Runtime::new(
        Program::new(Arc::new(g)),
        vec![Some(imp)],
        Net::new(Rank(0), 1, crate::DEFAULT_INLINE_FIELDS),
        1,
    );
    rt.box_stack = 64 << 10;
    rt
}

#[test]
fn suspend_generator_two_workers() {
    super::check(3, || {
        let (n, i) = (Label::tag("n"), Label::tag("i"));
        let rt = runtime(n, i);
        let seen = Arc::new(StdMutex::new(Vec::new()));
        let (gen, first) = {
            let ctx = Ctx::new(&rt);
            let output = output_entity(&ctx, Box::new(Collect(seen.clone(), i)));
            let gen = instantiate(&ctx, rt.graph().entry, output, &Stamps::new());
            let input = |v| {
                let mut r = Record::new();
                r.set(n, Value::Int(v));
                Item::Rec(Rec::new(r))
            };
            let Offer::Licensed(first) = gen.offer(input(1)) else {
                unreachable!("an idle entity")
            };
            // Queued and counted as a worker's send is: it is in the box's
            // own backlog while the first call is suspended.
            let mut ctx = ctx;
            ctx.send(&gen, input(2));
            assert!(ctx.ready.is_empty());
            ctx.flush_queued();
            (gen, first)
        };
        let node = Arc::new(Shared::for_model(rt, 2, vec![(gen.clone(), first)]));
        let other = node.clone();
        let t = thread::spawn(move || worker_loop(&other, 1, &crate::dist::SingleNode));
        worker_loop(&node, 0, &crate::dist::SingleNode);
        t.join().unwrap();
        node.model_assert_drained();
        assert!(node.model_suspended_is_empty(), "an entity left suspended");
        assert_eq!(*seen.lock().unwrap(), [10, 11, 12, 20, 21, 22]);
        drop(gen);
    });
}

#[test]
fn runs_of_calls_two_workers() {
    super::check(3, || {
        let (n, i, t) = (Label::tag("n"), Label::tag("i"), Label::tag("t"));
        let rt = runtime_with(n, i, Arc::new(Thin(n, i)));
        let seen = Arc::new(StdMutex::new(Vec::new()));
        let (thin, first) = {
            let ctx = Ctx::new(&rt);
            let output = output_entity(&ctx, Box::new(Collect(seen.clone(), i)));
            let thin = instantiate(&ctx, rt.graph().entry, output, &Stamps::new());
            let input = |v, tag: Option<i64>| {
                let mut r = Record::new();
                r.set(n, Value::Int(v));
                if let Some(x) = tag {
                    r.set(t, Value::Int(x));
                }
                Item::Rec(Rec::new(r))
            };
            let Offer::Licensed(first) = thin.offer(input(1, None)) else {
                unreachable!("an idle entity")
            };
            let mut ctx = ctx;
            ctx.send(&thin, input(2, None));
            ctx.send(&thin, input(3, Some(7)));
            ctx.send(&thin, input(4, Some(7)));
            ctx.send(&thin, input(5, None));
            assert!(ctx.ready.is_empty());
            ctx.flush_queued();
            (thin, first)
        };
        let node = Arc::new(Shared::for_model(rt, 2, vec![(thin.clone(), first)]));
        let other = node.clone();
        let h = thread::spawn(move || worker_loop(&other, 1, &crate::dist::SingleNode));
        worker_loop(&node, 0, &crate::dist::SingleNode);
        h.join().unwrap();
        node.model_assert_drained();
        assert!(node.model_suspended_is_empty(), "an entity left suspended");
        assert_eq!(*seen.lock().unwrap(), [101, 102, 7103, 7104, 105]);
        drop(thin);
    });
}

/// Emits `<i> + 100` for input `<i>`.
struct Inc(Label);

impl BoxImpl for Inc {
    fn invoke(&self, input: &Record, out: &mut dyn Emit) -> Result<(), BoxError> {
        let v = input.int(self.0).expect("<i>");
        let mut r = Record::new();
        r.set(self.0, Value::Int(v + 100));
        out.emit(1, r)
    }
}

/// `thin .. inc`: a chain of two boxes, whose first box's task ends by
/// walking into the second (the case [`crate::scheduler`]'s chain cut
/// looks at).
fn chain_runtime(n: Label, i: Label) -> Runtime {
    let loc = Loc {
        file: "t.snet".into(),
        line: 1,
        col: 1,
    };
    let def = |name: &str, input| BoxDef {
        name: name.into(),
        inputs: vec![input],
        init: false,
        outputs: vec![vec![i]],
        interface: "Rust".into(),
        code: None,
        loc: loc.clone(),
    };
    let mut g = Graph {
        nodes: Vec::new(),
        boxes: vec![def("thin", n), def("inc", i)],
        entry: snet_core::NodeId(0),
    };
    let node = |g: &mut Graph, kind| {
        g.add(Node {
            kind,
            loc: loc.clone(),
            input: Type::default(),
            output: Type::default(),
        })
    };
    let a = node(&mut g, NodeKind::Box(0));
    let b = node(&mut g, NodeKind::Box(1));
    g.entry = node(&mut g, NodeKind::Serial(a, b));
    let thin: Arc<dyn BoxImpl> = Arc::new(Thin(n, i));
    let inc: Arc<dyn BoxImpl> = Arc::new(Inc(i));
    let mut rt = Runtime::new(
        Program::new(Arc::new(g)),
        vec![Some(thin), Some(inc)],
        Net::new(Rank(0), 1, crate::DEFAULT_INLINE_FIELDS),
        1,
    );
    rt.box_stack = 64 << 10;
    rt
}

/// The chain cut on two workers: two instances of `thin .. inc`, both
/// feeding one output, with two inputs each and both first boxes'
/// licences queued on worker 0 (a worker whose task ends walking into a
/// box, with work of its own left, while the other worker looks for
/// work: the walk is queued for it instead, and the worker goes back to
/// its oldest task). Checked in every interleaving: every output arrives
/// once, each chain's in its input order, both workers end (a queued
/// walk nobody runs, or a sleeper not woken for it, leaves a task or a
/// worker behind: `model_assert_drained`, loom's deadlock report), and
/// the count of searching workers is back to zero.
#[test]
fn chain_cut_two_workers() {
    super::check(3, || {
        let (n, i) = (Label::tag("n"), Label::tag("i"));
        let rt = chain_runtime(n, i);
        let seen = Arc::new(StdMutex::new(Vec::new()));
        let (chains, initial) = {
            let ctx = Ctx::new(&rt);
            let output = output_entity(&ctx, Box::new(Collect(seen.clone(), i)));
            let input = |v| {
                let mut r = Record::new();
                r.set(n, Value::Int(v));
                Item::Rec(Rec::new(r))
            };
            let mut ctx = ctx;
            let mut chains = Vec::new();
            let mut initial = Vec::new();
            for first in [1, 3] {
                let chain = instantiate(&ctx, rt.graph().entry, output.clone(), &Stamps::new());
                let Offer::Licensed(item) = chain.offer(input(first)) else {
                    unreachable!("an idle entity")
                };
                ctx.send(&chain, input(first + 1));
                assert!(ctx.ready.is_empty());
                initial.push((chain.clone(), item));
                chains.push(chain);
            }
            ctx.flush_queued();
            (chains, initial)
        };
        let node = Arc::new(Shared::for_model(rt, 2, initial));
        let other = node.clone();
        let h = thread::spawn(move || worker_loop(&other, 1, &crate::dist::SingleNode));
        worker_loop(&node, 0, &crate::dist::SingleNode);
        h.join().unwrap();
        node.model_assert_drained();
        assert_eq!(
            node.model_searching(),
            0,
            "a worker still counted as searching"
        );
        let seen = seen.lock().unwrap().clone();
        let of = |lo: i64, hi: i64| -> Vec<i64> {
            seen.iter()
                .copied()
                .filter(|v| (lo..=hi).contains(v))
                .collect()
        };
        assert_eq!(seen.len(), 4, "{seen:?}");
        assert_eq!(of(201, 202), [201, 202], "{seen:?}");
        assert_eq!(of(203, 204), [203, 204], "{seen:?}");
        drop(chains);
    });
}
