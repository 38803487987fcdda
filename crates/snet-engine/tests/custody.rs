//! Custody of records sent to other nodes (`dist/custody.rs`, issue 40):
//! with `OnNodeLoss::Respawn`, a failure-free run on loopback nodes gives
//! the output of a run without it, and node 0's log is empty at the end
//! (every record it sent was reported done by the node it went to, with
//! everything derived from it), at 1, 2 and 8 workers per node.

use std::sync::{Arc, Mutex};

use snet_core::*;
use snet_engine::dist::OnNodeLoss;
use snet_engine::{run_loopback, Config, NoBoxes, Sink, Source, SourceError, Stats};

fn loc() -> Loc {
    Loc {
        file: "custody.snet".into(),
        line: 1,
        col: 1,
    }
}

fn t(n: &str) -> Label {
    Label::tag(n)
}

fn ty(vs: &[&[Label]]) -> Type {
    Type(vs.iter().map(|v| Variant::new(v.iter().copied())).collect())
}

fn add(g: &mut Graph, kind: NodeKind, input: Type) -> NodeId {
    g.add(Node {
        kind,
        loc: loc(),
        input,
        output: Type::default(),
    })
}

/// `[{pattern} -> {...} ; {...}]`: each outspec copies the pattern's tags
/// and sets `dst = src * mul + plus`.
fn filter(g: &mut Graph, pattern: &[Label], outs: &[(&str, &str, i64, i64)]) -> NodeId {
    let outputs = outs
        .iter()
        .map(|&(dst, src, mul, plus)| {
            let mut items: Vec<OutItem> = pattern
                .iter()
                .map(|&l| OutItem::Tag {
                    dst: l,
                    value: TagValue::Copy,
                })
                .collect();
            let e = ExprTree::Binary(
                BinOp::Add,
                Box::new(ExprTree::Binary(
                    BinOp::Mul,
                    Box::new(ExprTree::Label(t(src))),
                    Box::new(ExprTree::Int(mul)),
                )),
                Box::new(ExprTree::Int(plus)),
            );
            items.push(OutItem::Tag {
                dst: t(dst),
                value: TagValue::Expr(Expr::compile(e)),
            });
            OutSpec { items }
        })
        .collect();
    let def = FilterDef {
        pattern: Variant::new(pattern.iter().copied()),
        arms: vec![FilterArm {
            guard: None,
            outputs,
        }],
    };
    add(g, NodeKind::Filter(def), ty(&[pattern]))
}

/// `([{<X>} -> {<X>, <Y=2X>} ; {<X>, <Y=2X+1>}] @ 1)
///  .. ([{<X>,<Y>} -> {<X>,<Y>,<Z=Y+1>}] ! <Y>) @ 2
///  .. ([{<X>,<Y>,<Z>} -> {..., <V=Z*3>}] || [{<W>} -> ...]) @ 3`:
/// two records from each input on node 1, a split on node 2, and on node
/// 3 a deterministic parallel, which replay cannot restore (its records
/// are reported done at once).
fn graph() -> Arc<Graph> {
    let mut g = Graph {
        nodes: vec![],
        boxes: vec![],
        entry: NodeId(0),
    };
    let (x, y, z, w) = (t("X"), t("Y"), t("Z"), t("W"));
    let two = filter(&mut g, &[x], &[("Y", "X", 2, 0), ("Y", "X", 2, 1)]);
    let a = add(
        &mut g,
        NodeKind::Place {
            body: two,
            node: Rank(1),
        },
        ty(&[&[x]]),
    );
    let inc = filter(&mut g, &[x, y], &[("Z", "Y", 1, 1)]);
    let split = add(
        &mut g,
        NodeKind::Split {
            body: inc,
            tag: y,
            det: false,
        },
        ty(&[&[x, y]]),
    );
    let b = add(
        &mut g,
        NodeKind::Place {
            body: split,
            node: Rank(2),
        },
        ty(&[&[x, y]]),
    );
    let v = filter(&mut g, &[x, y, z], &[("V", "Z", 3, 0)]);
    let other = filter(&mut g, &[w], &[("V", "W", 1, 0)]);
    let par = add(
        &mut g,
        NodeKind::Parallel {
            branches: vec![v, other],
            det: true,
        },
        ty(&[&[x, y, z], &[w]]),
    );
    let c = add(
        &mut g,
        NodeKind::Place {
            body: par,
            node: Rank(3),
        },
        ty(&[&[x, y, z], &[w]]),
    );
    let ab = add(&mut g, NodeKind::Serial(a, b), ty(&[&[x]]));
    let abc = add(&mut g, NodeKind::Serial(ab, c), ty(&[&[x]]));
    g.entry = abc;
    Arc::new(g)
}

struct VecSource(std::vec::IntoIter<Record>);
impl Source for VecSource {
    fn next_record(&mut self) -> Result<Option<Record>, SourceError> {
        Ok(self.0.next())
    }
}

struct VecSink(Arc<Mutex<Vec<Record>>>);
impl Sink for VecSink {
    fn write(&mut self, rec: &Record) -> std::io::Result<()> {
        self.0.lock().unwrap().push(rec.clone());
        Ok(())
    }
    fn finish(&mut self) -> std::io::Result<()> {
        Ok(())
    }
    fn abort(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// An output record's `X`, `Y`, `Z` and `V`.
type Out = (i64, i64, i64, i64);

fn run(loss: OnNodeLoss, workers: usize, n: i64) -> (Vec<Out>, Vec<Stats>) {
    let config = Config {
        workers,
        on_node_loss: loss,
        ..Config::default()
    };
    let input: Vec<Record> = (0..n)
        .map(|i| {
            let mut r = Record::new();
            r.set_int(t("X"), i);
            r
        })
        .collect();
    let out = Arc::new(Mutex::new(Vec::new()));
    let stats = run_loopback(
        graph(),
        &config,
        Some((
            Box::new(VecSource(input.into_iter())),
            Box::new(VecSink(out.clone())),
        )),
        &NoBoxes,
        4,
    )
    .expect("run");
    let mut got: Vec<_> = out
        .lock()
        .unwrap()
        .iter()
        .map(|r| {
            let v = |l: &str| r.int(t(l)).expect("tag");
            (v("X"), v("Y"), v("Z"), v("V"))
        })
        .collect();
    got.sort_unstable();
    (got, stats)
}

#[test]
fn a_failure_free_run_with_custody_gives_the_same_output_and_empties_the_log() {
    let n = 2000;
    let mut want: Vec<_> = (0..n)
        .flat_map(|x| [2 * x, 2 * x + 1].map(|y| (x, y, y + 1, 3 * (y + 1))))
        .collect();
    want.sort_unstable();
    for workers in [1, 2, 8] {
        let (plain, stats) = run(OnNodeLoss::Fail, workers, n);
        assert_eq!(plain, want, "without custody, {workers} workers");
        assert_eq!((stats[0].log_live, stats[0].log_peak), (0, 0));
        let (kept, stats) = run(OnNodeLoss::Respawn, workers, n);
        assert_eq!(kept, want, "with custody, {workers} workers");
        // Every record node 0 sent (n to node 1, 2n to node 2, 2n to
        // node 3) was logged and reported done.
        assert_eq!(stats[0].log_live, 0, "{workers} workers");
        assert!(stats[0].log_peak > 0, "{workers} workers");
    }
}
