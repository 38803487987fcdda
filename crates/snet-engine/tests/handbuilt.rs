//! Engine tests on hand-built property graphs (independent of the front end).

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use snet_core::*;
use snet_engine::{
    run_vec, run_vec_with, BoxError, BoxImpl, Config, Emit, EngineError, EvalContext,
    LanguageInterface, ResolveError, ResolveReason, RuntimeTypeError,
};

struct B {
    g: Graph,
}

fn loc() -> Loc {
    Loc::start_of("test.snet")
}

fn ty(vs: &[&[Label]]) -> Type {
    Type(vs.iter().map(|v| Variant::new(v.iter().copied())).collect())
}

fn t(n: &str) -> Label {
    Label::tag(n)
}

fn e_tag(n: &str) -> ExprTree {
    ExprTree::Label(t(n))
}

fn bin(op: BinOp, a: ExprTree, b: ExprTree) -> ExprTree {
    ExprTree::Binary(op, Box::new(a), Box::new(b))
}

impl B {
    fn new() -> B {
        B {
            g: Graph {
                nodes: vec![],
                boxes: vec![],
                entry: NodeId(0),
            },
        }
    }
    fn node(&mut self, kind: NodeKind, input: Type) -> NodeId {
        self.g.add(Node {
            kind,
            loc: loc(),
            input,
            output: Type::default(),
        })
    }
    /// [{pattern} -> {<dst = expr>, ...}]  one outspec, tags only
    fn filter(&mut self, pattern: &[Label], outs: Vec<Vec<(Label, Option<ExprTree>)>>) -> NodeId {
        let outputs = outs
            .into_iter()
            .map(|items| OutSpec {
                items: items
                    .into_iter()
                    .map(|(dst, e)| OutItem::Tag {
                        dst,
                        value: match e {
                            None => TagValue::Copy,
                            Some(e) => TagValue::Expr(Expr::compile(e)),
                        },
                    })
                    .collect(),
            })
            .collect();
        let def = FilterDef {
            pattern: Variant::new(pattern.iter().copied()),
            arms: vec![FilterArm {
                guard: None,
                outputs,
            }],
        };
        self.node(NodeKind::Filter(def), ty(&[pattern]))
    }
    fn serial(&mut self, a: NodeId, b: NodeId) -> NodeId {
        let input = self.g.node(a).input.clone();
        self.node(NodeKind::Serial(a, b), input)
    }
    fn finish(mut self, entry: NodeId) -> Arc<Graph> {
        self.g.entry = entry;
        Arc::new(self.g)
    }
}

fn rec(tags: &[(&str, i64)]) -> Record {
    let mut r = Record::new();
    for (n, v) in tags {
        r.set_int(t(n), *v);
    }
    r
}

/// Smaller inputs under Miri (which interprets every instruction).
fn size(n: i64) -> i64 {
    if cfg!(miri) {
        (n / 100).max(8)
    } else {
        n
    }
}

fn workers() -> &'static [usize] {
    if cfg!(miri) {
        &[2]
    } else {
        &[1, 2, 8]
    }
}

fn cfg(workers: usize) -> Config {
    Config {
        workers,
        ..Config::default()
    }
}

fn sorted_ints(out: &[Record], tag: &str) -> Vec<i64> {
    let mut v: Vec<i64> = out.iter().map(|r| r.int(t(tag)).expect("tag")).collect();
    v.sort();
    v
}

#[test]
fn pipeline_of_filters_preserves_order() {
    let mut b = B::new();
    let inc = b.filter(
        &[t("X")],
        vec![vec![(
            t("X"),
            Some(bin(BinOp::Add, e_tag("X"), ExprTree::Int(1))),
        )]],
    );
    let mut cur = inc;
    for _ in 0..9 {
        cur = b.serial(cur, inc);
    }
    let g = b.finish(cur);
    for &w in workers() {
        let n = size(5000);
        let input: Vec<Record> = (0..n).map(|i| rec(&[("X", i)])).collect();
        let out = run_vec(g.clone(), &cfg(w), input).unwrap();
        let xs: Vec<i64> = out.iter().map(|r| r.int(t("X")).unwrap()).collect();
        assert_eq!(xs, (10..n + 10).collect::<Vec<_>>(), "workers={w}");
    }
}

/// fib in the shape of the benchmark: star expansion, split of syncs, feedback merge.
fn fib_graph() -> Arc<Graph> {
    let mut b = B::new();
    let (n, k, r, p, v, w, f) = (t("N"), t("K"), t("R"), t("P"), t("V"), t("W"), t("F"));
    use BinOp::*;
    use ExprTree::Int;
    // step: [{<N>,<K>} -> if <N <= 1> then {<K>,<R=N>} else {<N=N-1>,<K=2*K>} ; {<N=N-2>,<K=2*K+1>}]
    let step = FilterDef {
        pattern: Variant::new([n, k]),
        arms: vec![
            FilterArm {
                guard: Some(Expr::compile(bin(Le, e_tag("N"), Int(1)))),
                outputs: vec![OutSpec {
                    items: vec![
                        OutItem::Tag {
                            dst: k,
                            value: TagValue::Copy,
                        },
                        OutItem::Tag {
                            dst: r,
                            value: TagValue::Expr(Expr::compile(e_tag("N"))),
                        },
                    ],
                }],
            },
            FilterArm {
                guard: None,
                outputs: vec![
                    OutSpec {
                        items: vec![
                            OutItem::Tag {
                                dst: n,
                                value: TagValue::Expr(Expr::compile(bin(Sub, e_tag("N"), Int(1)))),
                            },
                            OutItem::Tag {
                                dst: k,
                                value: TagValue::Expr(Expr::compile(bin(Mul, Int(2), e_tag("K")))),
                            },
                        ],
                    },
                    OutSpec {
                        items: vec![
                            OutItem::Tag {
                                dst: n,
                                value: TagValue::Expr(Expr::compile(bin(Sub, e_tag("N"), Int(2)))),
                            },
                            OutItem::Tag {
                                dst: k,
                                value: TagValue::Expr(Expr::compile(bin(
                                    Add,
                                    bin(Mul, Int(2), e_tag("K")),
                                    Int(1),
                                ))),
                            },
                        ],
                    },
                ],
            },
        ],
    };
    let step = b.node(NodeKind::Filter(step), ty(&[&[n, k]]));
    let expand = b.node(
        NodeKind::Star {
            body: step,
            exits: vec![Pattern {
                variant: Variant::new([r]),
                guard: None,
            }],
            det: false,
        },
        ty(&[&[n, k]]),
    );
    // up
    let kp = |x: Label| OutItem::Tag {
        dst: x,
        value: TagValue::Expr(Expr::compile(e_tag("R"))),
    };
    let half = || OutItem::Tag {
        dst: p,
        value: TagValue::Expr(Expr::compile(bin(Div, e_tag("K"), Int(2)))),
    };
    let up = FilterDef {
        pattern: Variant::new([k, r]),
        arms: vec![
            FilterArm {
                guard: Some(Expr::compile(bin(Eq, e_tag("K"), Int(1)))),
                outputs: vec![OutSpec { items: vec![kp(f)] }],
            },
            FilterArm {
                guard: Some(Expr::compile(bin(Eq, bin(Mod, e_tag("K"), Int(2)), Int(0)))),
                outputs: vec![OutSpec {
                    items: vec![half(), kp(v)],
                }],
            },
            FilterArm {
                guard: None,
                outputs: vec![OutSpec {
                    items: vec![half(), kp(w)],
                }],
            },
        ],
    };
    let up = b.node(NodeKind::Filter(up), ty(&[&[k, r]]));
    let sync = b.node(
        NodeKind::Synchrocell(SynchrocellDef {
            patterns: vec![
                Pattern {
                    variant: Variant::new([v]),
                    guard: None,
                },
                Pattern {
                    variant: Variant::new([w]),
                    guard: None,
                },
            ],
        }),
        ty(&[&[v], &[w]]),
    );
    let split = b.node(
        NodeKind::Split {
            body: sync,
            tag: p,
            det: false,
        },
        ty(&[&[p, v], &[p, w]]),
    );
    let add = FilterDef {
        pattern: Variant::new([p, v, w]),
        arms: vec![FilterArm {
            guard: None,
            outputs: vec![OutSpec {
                items: vec![
                    OutItem::Tag {
                        dst: k,
                        value: TagValue::Expr(Expr::compile(e_tag("P"))),
                    },
                    OutItem::Tag {
                        dst: r,
                        value: TagValue::Expr(Expr::compile(bin(Add, e_tag("V"), e_tag("W")))),
                    },
                ],
            }],
        }],
    };
    let add = b.node(NodeKind::Filter(add), ty(&[&[p, v, w]]));
    let drop_v = b.node(
        NodeKind::Filter(FilterDef {
            pattern: Variant::new([p, v]),
            arms: vec![FilterArm {
                guard: None,
                outputs: vec![],
            }],
        }),
        ty(&[&[p, v]]),
    );
    let drop_w = b.node(
        NodeKind::Filter(FilterDef {
            pattern: Variant::new([p, w]),
            arms: vec![FilterArm {
                guard: None,
                outputs: vec![],
            }],
        }),
        ty(&[&[p, w]]),
    );
    let choose = b.node(
        NodeKind::Parallel {
            branches: vec![add, drop_v, drop_w],
            det: false,
        },
        ty(&[&[p, v, w], &[p, v], &[p, w]]),
    );
    let join = b.serial(split, choose);
    let ident = b.node(
        NodeKind::Filter(FilterDef {
            pattern: Variant::empty(),
            arms: vec![FilterArm {
                guard: None,
                outputs: vec![OutSpec::default()],
            }],
        }),
        ty(&[&[]]),
    );
    let join_or = b.node(
        NodeKind::Parallel {
            branches: vec![join, ident],
            det: false,
        },
        ty(&[&[p, v], &[p, w], &[]]),
    );
    let body = b.serial(up, join_or);
    let merge = b.node(
        NodeKind::Feedback {
            body,
            back: vec![Pattern {
                variant: Variant::new([k, r]),
                guard: None,
            }],
        },
        ty(&[&[k, r]]),
    );
    let init = b.filter(&[n], vec![vec![(n, None), (k, Some(ExprTree::Int(1)))]]);
    let a = b.serial(init, expand);
    let all = b.serial(a, merge);
    b.finish(all)
}

fn fib(n: i64) -> i64 {
    if n <= 1 {
        n
    } else {
        fib(n - 1) + fib(n - 2)
    }
}

#[test]
fn fibonacci_network() {
    let g = fib_graph();
    for &w in workers() {
        for n in if cfg!(miri) {
            vec![1, 5]
        } else {
            vec![1, 2, 5, 12, 16]
        } {
            let out = run_vec(g.clone(), &cfg(w), vec![rec(&[("N", n)])]).unwrap();
            assert_eq!(out.len(), 1, "n={n} w={w}: {out:?}");
            assert_eq!(out[0].int(t("F")), Some(fib(n)), "n={n} w={w}");
        }
    }
}

#[test]
fn deterministic_parallel_keeps_input_order() {
    let mut b = B::new();
    // branch A: long chain of identity-ish filters on {<A>}; branch B: one filter on {<B>}
    let fa = b.filter(&[t("A")], vec![vec![(t("A"), None)]]);
    let mut chain = fa;
    for _ in 0..20 {
        chain = b.serial(chain, fa);
    }
    let fb = b.filter(&[t("B")], vec![vec![(t("B"), None)]]);
    let par = b.node(
        NodeKind::Parallel {
            branches: vec![chain, fb],
            det: true,
        },
        ty(&[&[t("A")], &[t("B")]]),
    );
    let g = b.finish(par);
    for &w in workers() {
        for _ in 0..if cfg!(miri) { 1 } else { 5 } {
            let n = size(2000);
            let input: Vec<Record> = (0..n)
                .map(|i| {
                    if i % 3 == 0 {
                        rec(&[("A", i), ("I", i)])
                    } else {
                        rec(&[("B", i), ("I", i)])
                    }
                })
                .collect();
            let out = run_vec(g.clone(), &cfg(w), input).unwrap();
            let is: Vec<i64> = out.iter().map(|r| r.int(t("I")).unwrap()).collect();
            assert_eq!(is, (0..n).collect::<Vec<_>>(), "workers={w}");
        }
    }
}

#[test]
fn deterministic_star_and_split_keep_order() {
    let mut b = B::new();
    // ** : decrement C until C <= 0
    let dec = b.filter(
        &[t("C")],
        vec![vec![(
            t("C"),
            Some(bin(BinOp::Sub, e_tag("C"), ExprTree::Int(1))),
        )]],
    );
    let star = b.node(
        NodeKind::Star {
            body: dec,
            exits: vec![Pattern {
                variant: Variant::new([t("C")]),
                guard: Some(Expr::compile(bin(BinOp::Le, e_tag("C"), ExprTree::Int(0)))),
            }],
            det: true,
        },
        ty(&[&[t("C")]]),
    );
    let split = b.node(
        NodeKind::Split {
            body: star,
            tag: t("S"),
            det: true,
        },
        ty(&[&[t("C"), t("S")]]),
    );
    let g = b.finish(split);
    for &w in workers() {
        let n = size(1500);
        let input: Vec<Record> = (0..n)
            .map(|i| rec(&[("C", (i * 7919) % 23), ("S", i % 13), ("I", i)]))
            .collect();
        let out = run_vec(g.clone(), &cfg(w), input).unwrap();
        let is: Vec<i64> = out.iter().map(|r| r.int(t("I")).unwrap()).collect();
        assert_eq!(is, (0..n).collect::<Vec<_>>(), "workers={w}");
        assert!(out.iter().all(|r| r.int(t("C")) == Some(0)));
    }
}

#[test]
fn nondeterministic_split_multiset() {
    let mut b = B::new();
    let sq = b.filter(
        &[t("X")],
        vec![vec![
            (t("X"), None),
            (t("Y"), Some(bin(BinOp::Mul, e_tag("X"), e_tag("X")))),
        ]],
    );
    let split = b.node(
        NodeKind::Split {
            body: sq,
            tag: t("X"),
            det: false,
        },
        ty(&[&[t("X")]]),
    );
    let g = b.finish(split);
    for &w in workers() {
        let n = size(3000);
        let out = run_vec(
            g.clone(),
            &cfg(w),
            (0..n).map(|i| rec(&[("X", i)])).collect(),
        )
        .unwrap();
        assert_eq!(
            sorted_ints(&out, "Y"),
            (0..n).map(|i| i * i).collect::<Vec<_>>()
        );
    }
}

#[test]
fn repeated_synchronisation_is_fused_and_pairs() {
    let mut b = B::new();
    let (a, bb) = (t("a"), t("b"));
    let sync = b.node(
        NodeKind::Synchrocell(SynchrocellDef {
            patterns: vec![
                Pattern {
                    variant: Variant::new([a]),
                    guard: None,
                },
                Pattern {
                    variant: Variant::new([bb]),
                    guard: None,
                },
            ],
        }),
        ty(&[&[a], &[bb]]),
    );
    let star = b.node(
        NodeKind::Star {
            body: sync,
            exits: vec![Pattern {
                variant: Variant::new([a, bb]),
                guard: None,
            }],
            det: false,
        },
        ty(&[&[a], &[bb]]),
    );
    let g = b.finish(star);
    for &w in workers() {
        let mut input = Vec::new();
        for i in 0..100 {
            input.push(rec(&[("a", i)]));
        }
        for i in 0..100 {
            input.push(rec(&[("b", i)]));
        }
        let out = run_vec(g.clone(), &cfg(w), input).unwrap();
        assert_eq!(out.len(), 100);
        for r in &out {
            assert_eq!(
                r.int(a),
                r.int(bb),
                "fused cells pair the i-th a with the i-th b in order"
            );
        }
    }
}

#[test]
fn runtime_errors_are_reported() {
    let mut b = B::new();
    let f = b.filter(
        &[t("X")],
        vec![vec![(
            t("Y"),
            Some(bin(BinOp::Div, ExprTree::Int(1), e_tag("X"))),
        )]],
    );
    let g = b.finish(f);
    let err = run_vec(g, &cfg(2), vec![rec(&[("X", 1)]), rec(&[("X", 0)])]).unwrap_err();
    assert!(err.to_string().contains("division by zero"), "{err}");
    // The second input record (no line: the test's source does not know it).
    assert!(
        matches!(&err, EngineError::FromInput { origin, .. } if origin.number() == Some(2) && origin.line().is_none()),
        "{err:?}"
    );
    assert!(
        err.to_string().ends_with("caused by input record 2"),
        "{err}"
    );
    assert!(
        matches!(
            err.component_error(),
            EngineError::Eval {
                error: EvalError::DivisionByZero,
                context: EvalContext::Filter,
                loc: Some(_),
            }
        ),
        "{err:?}"
    );
    let mut b = B::new();
    let fa = b.filter(&[t("A")], vec![vec![(t("A"), None)]]);
    let fb = b.filter(&[t("B")], vec![vec![(t("B"), None)]]);
    let par = b.node(
        NodeKind::Parallel {
            branches: vec![fa, fb],
            det: false,
        },
        ty(&[&[t("A")], &[t("B")]]),
    );
    let g = b.finish(par);
    let err = run_vec(g, &cfg(2), vec![rec(&[("C", 1)])]).unwrap_err();
    assert!(err.to_string().contains("no branch"), "{err}");
    let EngineError::Type {
        error: RuntimeTypeError::NoBranch { record, accepted },
        ..
    } = err.component_error()
    else {
        panic!("not a no-branch error: {err:?}")
    };
    assert_eq!(*record, Variant::new([t("C")]));
    assert_eq!(accepted.len(), 2);
    assert_eq!(
        err.to_string(),
        "test.snet:1:1: runtime type error: record {<C>} matches no branch of the parallel composition (branches accept {<A>}, {<B>}), caused by input record 1"
    );
}

/// A box that emits one record `{<label>=0}` as output variant `variant`.
struct EmitVariant {
    label: Label,
    variant: usize,
}

impl BoxImpl for EmitVariant {
    fn invoke(&self, _input: &Record, out: &mut dyn Emit) -> Result<(), BoxError> {
        out.emit(self.variant, rec_l(&[(self.label, 0)]))
    }
}

struct OneBox(Arc<dyn BoxImpl>);

impl LanguageInterface for OneBox {
    fn resolve(&self, _def: &BoxDef) -> Result<Arc<dyn BoxImpl>, ResolveError> {
        Ok(self.0.clone())
    }
}

#[test]
fn box_errors_carry_their_kind() {
    let mut b = B::new();
    let s = t("S");
    let mut boxes = RustBoxes::default();
    let init = b.init("init", s, 1, &mut boxes);
    let g = b.finish(init);
    // A variant the signature does not declare (`init` declares one).
    let bad = OneBox(Arc::new(EmitVariant {
        label: s,
        variant: 2,
    }));
    let err = run_vec_with(g.clone(), &cfg(1), vec![], &bad).unwrap_err();
    assert!(
        matches!(
            &err,
            EngineError::Box {
                name,
                error: BoxError::VariantOutOfRange {
                    variant: 2,
                    declared: 1,
                    call: None
                },
                ..
            } if name == "init"
        ),
        "{err:?}"
    );
    assert_eq!(
        err.to_string(),
        "test.snet:1:1: box `init`: emitted output variant 2, but its signature declares 1 variant(s) (numbered from 1)"
    );
    // No implementation at all: every unresolved box, typed.
    let err = run_vec(g, &cfg(1), vec![]).unwrap_err();
    let EngineError::Setup(unresolved) = &err else {
        panic!("not a setup error: {err:?}")
    };
    assert_eq!(unresolved.len(), 1);
    assert_eq!(unresolved[0].name, "init");
    assert_eq!(unresolved[0].reason, ResolveReason::NoImplementation);
    assert_eq!(
        err.to_string(),
        "box `init` (test.snet:1:1) has no implementation: build the program with its box code (`snet build`)"
    );
}

// ---------------------------------------------------------------------------
// Initialiser boxes (boxes.rs, "Initialiser boxes"), with boxes written in Rust.

/// An initialiser: each call emits `{<label>=0}`, ..., `{<label>=n-1}`; counts its calls.
struct Init {
    label: Label,
    n: i64,
    calls: AtomicUsize,
}

impl BoxImpl for Init {
    fn invoke(&self, _input: &Record, out: &mut dyn Emit) -> Result<(), BoxError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        for i in 0..self.n {
            // Give other workers a chance to overtake while the call runs.
            std::thread::yield_now();
            out.emit(1, rec_l(&[(self.label, i)]))?;
        }
        Ok(())
    }
}

fn rec_l(tags: &[(Label, i64)]) -> Record {
    let mut r = Record::new();
    for (l, v) in tags {
        r.set_int(*l, *v);
    }
    r
}

/// The Rust boxes of a test, by name.
#[derive(Default)]
struct RustBoxes(HashMap<String, Arc<Init>>);

impl LanguageInterface for RustBoxes {
    fn resolve(&self, def: &BoxDef) -> Result<Arc<dyn BoxImpl>, ResolveError> {
        let b = self.0.get(&def.name).ok_or_else(|| {
            ResolveError::new(def, ResolveReason::Other("no Rust box of this name".into()))
        })?;
        Ok(b.clone() as Arc<dyn BoxImpl>)
    }
}

impl RustBoxes {
    fn calls(&self, name: &str) -> usize {
        self.0[name].calls.load(Ordering::SeqCst)
    }
    fn reset(&self) {
        for b in self.0.values() {
            b.calls.store(0, Ordering::SeqCst);
        }
    }
}

impl B {
    /// `box name(-> (<label>))`, emitting `n` records per call.
    fn init(&mut self, name: &str, label: Label, n: i64, boxes: &mut RustBoxes) -> NodeId {
        let id = self.g.boxes.len() as BoxId;
        self.g.boxes.push(BoxDef {
            name: name.into(),
            inputs: vec![],
            init: true,
            outputs: vec![vec![label]],
            interface: "Rust".into(),
            loc: loc(),
            code: None,
        });
        boxes.0.insert(
            name.into(),
            Arc::new(Init {
                label,
                n,
                calls: AtomicUsize::new(0),
            }),
        );
        self.node(NodeKind::Box(id), ty(&[&[]]))
    }
    /// `[{<l>} -> {<l>}]`
    fn ident(&mut self, l: Label) -> NodeId {
        self.filter(&[l], vec![vec![(l, None)]])
    }
    fn chain(&mut self, f: NodeId, n: usize) -> NodeId {
        let mut c = f;
        for _ in 1..n {
            c = self.serial(c, f);
        }
        c
    }
    fn par(&mut self, branches: Vec<NodeId>, det: bool) -> NodeId {
        let input = Type(
            branches
                .iter()
                .flat_map(|b| self.g.node(*b).input.0.clone())
                .collect(),
        );
        self.node(NodeKind::Parallel { branches, det }, input)
    }
}

fn run_boxes(
    g: &Arc<Graph>,
    config: &Config,
    input: Vec<Record>,
    boxes: &RustBoxes,
) -> Vec<Record> {
    boxes.reset();
    run_vec_with(g.clone(), config, input, boxes).expect("run")
}

fn ints(out: &[Record], l: Label) -> Vec<i64> {
    out.iter().filter_map(|r| r.int(l)).collect()
}

#[test]
fn initialiser_in_a_branch_no_record_enters_fires_at_start() {
    let mut boxes = RustBoxes::default();
    let mut b = B::new();
    let (s, x) = (t("S"), t("X"));
    let init = b.init("init", s, 5, &mut boxes);
    let pass = b.ident(x);
    let par = b.par(vec![pass, init], false);
    let g = b.finish(par);
    for &w in workers() {
        let out = run_boxes(&g, &cfg(w), vec![], &boxes);
        assert_eq!(sorted_ints(&out, "S"), vec![0, 1, 2, 3, 4], "w={w}");
        assert_eq!(boxes.calls("init"), 1);
        let out = run_boxes(
            &g,
            &cfg(w),
            vec![rec(&[("X", 7)]), rec(&[("X", 8)])],
            &boxes,
        );
        assert_eq!(out.len(), 7, "w={w}: {out:?}");
        let mut got = (ints(&out, s), ints(&out, x));
        got.0.sort();
        got.1.sort();
        assert_eq!(got, (vec![0, 1, 2, 3, 4], vec![7, 8]), "w={w}");
        assert_eq!(boxes.calls("init"), 1, "the records go to the other branch");
    }
}

#[test]
fn initialiser_outputs_lead_a_deterministic_parallel() {
    let mut boxes = RustBoxes::default();
    let mut b = B::new();
    let (a, s, i) = (t("A"), t("S"), t("I"));
    let ia = b.ident(a);
    let long = b.chain(ia, 12);
    let init = b.init("init", s, 4, &mut boxes);
    let is = b.ident(s);
    let slow_init = b.chain(is, 6);
    let branch = b.serial(init, slow_init);
    let par = b.par(vec![long, branch], true);
    let g = b.finish(par);
    for &w in workers() {
        for conc in [1, 3] {
            for _ in 0..if cfg!(miri) { 1 } else { 5 } {
                let n = size(300);
                let input: Vec<Record> = (0..n).map(|k| rec(&[("A", k), ("I", k)])).collect();
                let config = Config {
                    box_concurrency: conc,
                    ..cfg(w)
                };
                let out = run_boxes(&g, &config, input, &boxes);
                assert_init_leads(&out, s, 4, i, n, &format!("w={w} conc={conc}"));
                assert_eq!(boxes.calls("init"), 1);
            }
        }
    }
}

/// `out` is the initialiser's `inits` records (tag `s` = 0, 1, ...) followed
/// by one record per input, in input order (tag `i` = 0 .. n).
fn assert_init_leads(out: &[Record], s: Label, inits: i64, i: Label, n: i64, what: &str) {
    let got: Vec<(Option<i64>, Option<i64>)> = out.iter().map(|r| (r.int(s), r.int(i))).collect();
    let want: Vec<(Option<i64>, Option<i64>)> = (0..inits)
        .map(|k| (Some(k), None))
        .chain((0..n).map(|k| (None, Some(k))))
        .collect();
    assert_eq!(got, want, "{what}");
}

#[test]
fn initialiser_in_nested_deterministic_parallels_leads_both() {
    let mut boxes = RustBoxes::default();
    let mut b = B::new();
    let (a, bb, s, i) = (t("A"), t("B"), t("S"), t("I"));
    let ia = b.ident(a);
    let fa = b.chain(ia, 8);
    let fb = b.ident(bb);
    let init = b.init("init", s, 3, &mut boxes);
    let inner = b.par(vec![fb, init], true);
    let outer = b.par(vec![fa, inner], true);
    let g = b.finish(outer);
    for &w in workers() {
        for _ in 0..if cfg!(miri) { 1 } else { 5 } {
            let n = size(300);
            let input: Vec<Record> = (0..n)
                .map(|k| {
                    if k % 2 == 0 {
                        rec(&[("A", k), ("I", k)])
                    } else {
                        rec(&[("B", k), ("I", k)])
                    }
                })
                .collect();
            let out = run_boxes(&g, &cfg(w), input, &boxes);
            assert_init_leads(&out, s, 3, i, n, &format!("w={w}"));
            assert_eq!(boxes.calls("init"), 1);
        }
    }
}

#[test]
fn initialiser_in_a_feedback_body_fires_once_and_loops() {
    let mut boxes = RustBoxes::default();
    let mut b = B::new();
    let n = t("N");
    let inc = b.filter(
        &[n],
        vec![vec![(
            n,
            Some(bin(BinOp::Add, e_tag("N"), ExprTree::Int(1))),
        )]],
    );
    let init = b.init("init", n, 2, &mut boxes); // {<N>=0}, {<N>=1}
    let body = b.par(vec![inc, init], false);
    let back = Pattern {
        variant: Variant::new([n]),
        guard: Some(Expr::compile(bin(BinOp::Lt, e_tag("N"), ExprTree::Int(5)))),
    };
    let fb = b.node(
        NodeKind::Feedback {
            body,
            back: vec![back],
        },
        ty(&[&[n]]),
    );
    let g = b.finish(fb);
    for &w in workers() {
        let out = run_boxes(&g, &cfg(w), vec![], &boxes);
        assert_eq!(
            sorted_ints(&out, "N"),
            vec![5, 5],
            "w={w}: init's two records loop until N = 5"
        );
        assert_eq!(boxes.calls("init"), 1);
        let out = run_boxes(
            &g,
            &cfg(w),
            vec![rec(&[("N", 9)]), rec(&[("N", 3)])],
            &boxes,
        );
        assert_eq!(sorted_ints(&out, "N"), vec![5, 5, 5, 10], "w={w}");
        assert_eq!(boxes.calls("init"), 1);
    }
}

/// `(dec .. ([] | init)) ** {<C>} if <C <= 0>, {<S>}` : each replica's
/// initialiser fires once, when the first record needing the replica
/// arrives, and its output leaves among that record's outputs.
#[test]
fn initialiser_in_a_star_fires_per_replica_in_order() {
    let mut boxes = RustBoxes::default();
    let mut b = B::new();
    let (c, s) = (t("C"), t("S"));
    let pass = b.ident(c);
    let init = b.init("init", s, 1, &mut boxes);
    let choice = b.par(vec![pass, init], false);
    let dec = b.filter(
        &[c],
        vec![vec![(
            c,
            Some(bin(BinOp::Sub, e_tag("C"), ExprTree::Int(1))),
        )]],
    );
    let body = b.serial(dec, choice);
    let exits = vec![
        Pattern {
            variant: Variant::new([c]),
            guard: Some(Expr::compile(bin(BinOp::Le, e_tag("C"), ExprTree::Int(0)))),
        },
        Pattern {
            variant: Variant::new([s]),
            guard: None,
        },
    ];
    let star = b.node(
        NodeKind::Star {
            body,
            exits,
            det: true,
        },
        ty(&[&[c]]),
    );
    let g = b.finish(star);
    for &w in workers() {
        let out = run_boxes(&g, &cfg(w), vec![], &boxes);
        assert!(out.is_empty(), "no record, no replica, no initialiser call");
        assert_eq!(boxes.calls("init"), 0);
        for _ in 0..if cfg!(miri) { 1 } else { 5 } {
            let n = size(200);
            let cs: Vec<i64> = (0..n).map(|k| (k * 7919) % 29).collect();
            let input: Vec<Record> = (0..n)
                .map(|k| rec(&[("C", cs[k as usize]), ("I", k)]))
                .collect();
            let out = run_boxes(&g, &cfg(w), input, &boxes);
            let replicas = *cs.iter().max().expect("input") as usize;
            assert_eq!(boxes.calls("init"), replicas, "w={w}");
            assert_eq!(out.iter().filter(|r| r.int(s).is_some()).count(), replicas);
            // Records leave in input order; before record k's output at
            // most the replicas records 0..=k created have started, and
            // at least those that records 0..k created.
            let mut seen_s = 0;
            let mut next = 0;
            for r in &out {
                if r.int(s).is_some() {
                    seen_s += 1;
                    continue;
                }
                assert_eq!(r.int(t("I")), Some(next), "w={w}: input order");
                let upto = |k: i64| cs[..k as usize].iter().copied().max().unwrap_or(0) as usize;
                assert!(
                    seen_s >= upto(next) && seen_s <= upto(next + 1),
                    "w={w}: record {next} after {seen_s} starts"
                );
                next += 1;
            }
            assert_eq!(next, n);
        }
    }
}

/// `(dec .. ([{<C>}] | [{<C>,<D>}])) ** {<C>} if <C <= 0>`: the replicas'
/// outputs merge two paths, so ordering markers of different records reach
/// the next stage out of order relative to the records; order must hold.
#[test]
fn deterministic_star_over_a_merging_body_keeps_order() {
    let mut b = B::new();
    let (c, d) = (t("C"), t("D"));
    let one = b.ident(c);
    let two = b.filter(&[c, d], vec![vec![(c, None), (d, None)]]);
    let choice = b.par(vec![one, two], false);
    let dec = b.filter(
        &[c],
        vec![vec![(
            c,
            Some(bin(BinOp::Sub, e_tag("C"), ExprTree::Int(1))),
        )]],
    );
    let body = b.serial(dec, choice);
    let exits = vec![Pattern {
        variant: Variant::new([c]),
        guard: Some(Expr::compile(bin(BinOp::Le, e_tag("C"), ExprTree::Int(0)))),
    }];
    let star = b.node(
        NodeKind::Star {
            body,
            exits,
            det: true,
        },
        ty(&[&[c]]),
    );
    let g = b.finish(star);
    for &w in workers() {
        for _ in 0..if cfg!(miri) { 1 } else { 10 } {
            let n = size(400);
            let input: Vec<Record> = (0..n)
                .map(|k| {
                    let cv = (k * 7919) % 17;
                    if k % 3 == 0 {
                        rec(&[("C", cv), ("D", k), ("I", k)])
                    } else {
                        rec(&[("C", cv), ("I", k)])
                    }
                })
                .collect();
            let out = run_vec(g.clone(), &cfg(w), input).unwrap();
            assert_eq!(ints(&out, t("I")), (0..n).collect::<Vec<_>>(), "w={w}");
        }
    }
}
