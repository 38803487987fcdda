//! Custody of records sent to other nodes (`dist/custody.rs`, issue 40):
//! with `OnNodeLoss::Respawn`, a failure-free run on loopback nodes gives
//! the output of a run without it, and node 0's log is empty at the end
//! (every record it sent was reported done by the node it went to, with
//! everything derived from it), at 1, 2 and 8 workers per node.

mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use common::{vec_io, Written};
use snet_core::*;
use snet_engine::dist::hooked::{Hooked, Hooks};
use snet_engine::dist::wire::{FrameRef, MessageReader};
use snet_engine::dist::{OnNodeLoss, Received};
use snet_engine::{
    run_loopback, run_loopback_with, Config, EngineError, Loopback, NoBoxes, Stats, Transport,
    TransportError,
};

fn loc() -> Loc {
    Loc::start_of("custody.snet")
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
/// 3 a deterministic parallel (its collector and ordering markers there:
/// replay restores it, the replacement's collector starting afresh with
/// the records node 3 had not committed).
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

/// An output record's `X`, `Y`, `Z` and `V`.
type Out = (i64, i64, i64, i64);

/// Input records `<X>` 0..n.
fn input(n: i64) -> Vec<Record> {
    (0..n)
        .map(|i| {
            let mut r = Record::new();
            r.set_int(t("X"), i);
            r
        })
        .collect()
}

/// The output records' values of the tags `labels`, in that order, one
/// row a record, sorted.
fn tag_rows(out: &std::sync::Mutex<Vec<Record>>, labels: &[&str]) -> Vec<Vec<i64>> {
    let mut got: Vec<Vec<i64>> = out
        .lock()
        .unwrap()
        .iter()
        .map(|r| labels.iter().map(|&l| r.int(t(l)).expect("tag")).collect())
        .collect();
    got.sort_unstable();
    got
}

/// The output records' `X`, `Y`, `Z` and `V`, sorted.
fn outs(out: &std::sync::Mutex<Vec<Record>>) -> Vec<Out> {
    tag_rows(out, &["X", "Y", "Z", "V"])
        .into_iter()
        .map(|v| (v[0], v[1], v[2], v[3]))
        .collect()
}

fn run(loss: OnNodeLoss, workers: usize, n: i64) -> (Vec<Out>, Vec<Stats>) {
    let config = Config {
        workers,
        on_node_loss: loss,
        ..Config::default()
    };
    let (io, out) = vec_io(input(n));
    let stats = run_loopback(graph(), &config, Some(io), &NoBoxes, 4).expect("run");
    (outs(&out), stats)
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

/// Hooks that kill the node (as if its process died) when it is about
/// to deliver its `after`th message, if `armed` (taken on firing, so a
/// replacement does not repeat it; re-armed for each new endpoint: a
/// poison record).
struct Killing {
    after: u64,
    armed: Arc<AtomicBool>,
}

impl Hooks<Loopback> for Killing {
    fn received(&self, inner: &Loopback, n: u64, m: &Received) -> Result<(), TransportError> {
        // Not in the shutdown exchange: a node lost after the run's end
        // lost nothing, and its failure is the run's (as on shm).
        let shutdown = MessageReader::new(&m.header).is_ok_and(|(_, mut r)| {
            std::iter::from_fn(|| r.next_frame().ok().flatten()).any(|f| f == FrameRef::Shutdown)
        });
        if !shutdown && n + 1 == self.after && self.armed.swap(false, Ordering::Relaxed) {
            inner.kill();
            // The node fails at once (a killed process would be gone).
            return Err(TransportError::backend(std::io::Error::other("killed")));
        }
        Ok(())
    }
}

/// Runs the test network on 4 loopback nodes with custody, node `victim`
/// killed at its `after`th message (once, or at each incarnation's if
/// `poison`).
fn run_killing(
    workers: usize,
    n: i64,
    victim: u32,
    after: u64,
    poison: bool,
) -> Result<(Vec<Out>, Vec<Stats>), EngineError> {
    let (out, stats) = killed_run(graph(), 4, input(n), workers, victim, after, poison)?;
    Ok((outs(&out), stats))
}

/// Runs `graph` on `nodes` loopback nodes with custody, `records` in,
/// node `victim` killed at its `after`th message (never if 0; once, or
/// at each incarnation's if `poison`): what was written, and the stats.
fn killed_run(
    graph: Arc<Graph>,
    nodes: u32,
    records: Vec<Record>,
    workers: usize,
    victim: u32,
    after: u64,
    poison: bool,
) -> Result<(Written, Vec<Stats>), EngineError> {
    let config = Config {
        workers,
        on_node_loss: OnNodeLoss::Respawn,
        ..Config::default()
    };
    let (io, out) = vec_io(records);
    let armed = Arc::new(AtomicBool::new(after > 0));
    let wrap = |l: Loopback| -> Box<dyn Transport> {
        if l.node() != Rank(victim) {
            return Box::new(l);
        }
        if poison {
            armed.store(true, Ordering::Relaxed);
        }
        Box::new(Hooked::new(
            Box::new(l),
            Killing {
                after,
                armed: armed.clone(),
            },
        ))
    };
    let stats = run_loopback_with(graph, &config, Some(io), &NoBoxes, nodes, &wrap)?;
    Ok((out, stats))
}

/// Node 1 (two records from each input), node 2 (a split) or node 3 (a
/// deterministic parallel) is killed at several points; node 0 replaces
/// it and replays what it had not passed on: the output is exactly the
/// failure-free multiset.
#[test]
fn a_node_killed_at_any_message_is_replaced_and_nothing_is_lost_or_doubled() {
    let n = 500;
    let mut want: Vec<_> = (0..n)
        .flat_map(|x| [2 * x, 2 * x + 1].map(|y| (x, y, y + 1, 3 * (y + 1))))
        .collect();
    want.sort_unstable();
    let mut replaced = 0;
    for workers in [1, 2, 8] {
        for victim in [1, 2, 3] {
            // How many messages a node gets depends on the batching: the
            // first two always come (the `Open` and the first records).
            for after in [1, 2, 3, 6] {
                let (got, stats) = run_killing(workers, n, victim, after, false)
                    .unwrap_or_else(|e| panic!("node {victim} at {after}, {workers} workers: {e}"));
                assert_eq!(got, want, "node {victim} at {after}, {workers} workers");
                assert!(stats[0].nodes_replaced <= 1, "node {victim} at {after}");
                if after <= 2 {
                    assert_eq!(stats[0].nodes_replaced, 1, "node {victim} at {after}");
                }
                replaced += stats[0].nodes_replaced;
                assert_eq!(stats[0].log_live, 0, "node {victim} at {after}");
            }
        }
    }
    assert!(replaced >= 18, "{replaced} replacements");
}

/// `(([{<X>} -> {<X>, <Y=2X>}] @ 2) .. [..]) @ 1`: a placement inside a
/// placement on node 1 (its records go between nodes 1 and 2).
fn nested_graph() -> Arc<Graph> {
    let mut g = Graph {
        nodes: vec![],
        boxes: vec![],
        entry: NodeId(0),
    };
    let x = t("X");
    let two = filter(&mut g, &[x], &[("Y", "X", 2, 0)]);
    let inner = add(
        &mut g,
        NodeKind::Place {
            body: two,
            node: Rank(2),
        },
        ty(&[&[x]]),
    );
    let y = t("Y");
    let inc = filter(&mut g, &[x, y], &[("Z", "Y", 1, 1)]);
    let both = add(&mut g, NodeKind::Serial(inner, inc), ty(&[&[x]]));
    g.entry = add(
        &mut g,
        NodeKind::Place {
            body: both,
            node: Rank(1),
        },
        ty(&[&[x]]),
    );
    Arc::new(g)
}

/// Node 1 holds a placement on node 2 inside its own: a run that
/// survives a lost node pushes the outer placement down (the serial
/// composition runs on node 0, `Graph::placed_for_replay`), so the loss
/// of either node, at several messages, is replaced and the output is
/// exactly the failure-free one. (Before, either loss ended the run
/// naming the placement; a placement inside a dynamic placement's
/// replica is the next test.)
#[test]
fn a_placement_inside_a_placement_survives_the_loss_of_either_node() {
    let want: Vec<_> = (0..200).map(|x| vec![x, 2 * x, 2 * x + 1]).collect();
    for workers in [1, 2] {
        for victim in [1, 2] {
            for after in [1, 2, 3] {
                let what = format!("node {victim} at {after}, {workers} workers");
                let (out, stats) =
                    killed_run(nested_graph(), 3, input(200), workers, victim, after, false)
                        .unwrap_or_else(|e| panic!("{what}: {e}"));
                assert_eq!(tag_rows(&out, &["X", "Y", "Z"]), want, "{what}");
                assert!(stats[0].nodes_replaced <= 1, "{what}");
            }
        }
    }
}

/// `(([{<X>} -> {<X>, <Y=2X>}] INNER) .. [{<X>,<Y>} -> {.., <Z=Y+1>}]) !@ <N>`,
/// INNER `@ 2` or (`dyn`) `!@ <M>`: a placement inside a dynamic
/// placement's replica (the input gives `N` and `M`, 1 or 2).
fn in_replica_graph(dyn_inner: bool) -> Arc<Graph> {
    let mut g = Graph {
        nodes: vec![],
        boxes: vec![],
        entry: NodeId(0),
    };
    let (x, y, n, m) = (t("X"), t("Y"), t("N"), t("M"));
    let two = filter(&mut g, &[x], &[("Y", "X", 2, 0)]);
    let kind = if dyn_inner {
        NodeKind::DynPlace {
            body: two,
            tag: m,
            det: false,
            per_node: Vec::new(),
        }
    } else {
        NodeKind::Place {
            body: two,
            node: Rank(2),
        }
    };
    let inner = add(&mut g, kind, ty(&[&[x, m]]));
    let inc = filter(&mut g, &[x, y], &[("Z", "Y", 1, 1)]);
    let both = add(&mut g, NodeKind::Serial(inner, inc), ty(&[&[x, m]]));
    g.entry = add(
        &mut g,
        NodeKind::DynPlace {
            body: both,
            tag: n,
            det: false,
            per_node: Vec::new(),
        },
        ty(&[&[x, n]]),
    );
    Arc::new(g)
}

/// A placement on node 2, or a dynamic one, inside the replicas of a
/// dynamic placement on nodes 1 and 2: a run that survives a lost node
/// runs each replica's body on node 0, the parts that place nothing on
/// the replica's node (`Graph::placed_for_replay`), so the loss of
/// either node, at several messages, is replaced and the output is
/// exactly the failure-free one. (Before, either loss ended the run
/// naming the inner placement.)
#[test]
fn a_placement_inside_a_dynamic_placements_replica_survives_the_loss_of_either_node() {
    let records: Vec<Record> = input(200)
        .into_iter()
        .map(|mut r| {
            let x = r.int(t("X")).expect("X");
            r.set_int(t("N"), 1 + x % 2);
            r.set_int(t("M"), 2 - x % 2);
            r
        })
        .collect();
    let want: Vec<_> = (0..200)
        .map(|x| vec![x, 2 * x, 2 * x + 1, 1 + x % 2])
        .collect();
    for dyn_inner in [false, true] {
        for workers in [1, 2] {
            for victim in [1, 2] {
                for after in [1, 2, 3] {
                    let what = format!(
                        "inner {}, node {victim} at {after}, {workers} workers",
                        if dyn_inner { "!@" } else { "@ 2" }
                    );
                    let graph = in_replica_graph(dyn_inner);
                    let (out, stats) =
                        killed_run(graph, 3, records.clone(), workers, victim, after, false)
                            .unwrap_or_else(|e| panic!("{what}: {e}"));
                    assert_eq!(tag_rows(&out, &["X", "Y", "Z", "N"]), want, "{what}");
                    assert!(stats[0].nodes_replaced <= 1, "{what}");
                    if after == 1 {
                        assert_eq!(stats[0].nodes_replaced, 1, "{what}");
                    }
                }
            }
        }
    }
}

/// A node that dies every time (each incarnation at its first message):
/// after three losses the run fails, naming the input record in its care
/// if node 0 had sent it records by then, else saying that it never
/// finished one (its first message may be an `Open` alone each time).
#[test]
fn a_record_that_kills_its_node_each_time_ends_the_run_after_three_tries() {
    let e = run_killing(2, 50, 1, 1, true).expect_err("the run must fail");
    let m = e.to_string();
    assert!(
        (m.contains("for the third time with input record") && m.contains("poison record"))
            || m.contains("for the third time without finishing a record"),
        "{m}"
    );
}

/// Where the synchrocell of [`cells_graph`] is.
#[derive(Copy, Clone, Debug)]
enum Cells {
    /// `[| {<A>}, {<B>} |]`: merges one pair, the rest pass.
    Lone,
    /// `[| {<A>}, {<B>} |] * {<A>, <B>}`: merges every pair.
    Merge,
    /// `[| {<A>}, {<B>} |] ! <X>`: a cell per input record.
    Split,
    /// `[| {<A>}, {<Q>} |]`: stores the first `A` for ever (no `Q`
    /// comes), the rest pass: the end of the stream drains it.
    Never,
}

/// `[{<X>} -> {<X>, <A=X>} ; {<X>, <B=X>}] .. (cells @ 1)`.
fn cells_graph(cells: Cells) -> Arc<Graph> {
    let mut g = Graph {
        nodes: vec![],
        boxes: vec![],
        entry: NodeId(0),
    };
    let (x, a, b, q) = (t("X"), t("A"), t("B"), t("Q"));
    let two = filter(&mut g, &[x], &[("A", "X", 1, 0), ("B", "X", 1, 0)]);
    let pat = |l: Label| Pattern {
        variant: Variant::new([l]),
        guard: None,
    };
    let second = if matches!(cells, Cells::Never) { q } else { b };
    let cell = add(
        &mut g,
        NodeKind::Synchrocell(SynchrocellDef {
            patterns: vec![pat(a), pat(second)],
        }),
        ty(&[&[a], &[second]]),
    );
    let pairs = ty(&[&[x, a], &[x, b]]);
    let body = match cells {
        Cells::Lone | Cells::Never => cell,
        Cells::Merge => add(
            &mut g,
            NodeKind::Star {
                body: cell,
                exits: vec![Pattern {
                    variant: Variant::new([a, b]),
                    guard: None,
                }],
                det: false,
            },
            pairs.clone(),
        ),
        Cells::Split => add(
            &mut g,
            NodeKind::Split {
                body: cell,
                tag: x,
                det: false,
            },
            pairs.clone(),
        ),
    };
    let placed = add(
        &mut g,
        NodeKind::Place {
            body,
            node: Rank(1),
        },
        pairs,
    );
    g.entry = add(&mut g, NodeKind::Serial(two, placed), ty(&[&[x]]));
    Arc::new(g)
}

/// The output's `A` values and `B` values, each sorted (which `A` a cell
/// merged with which `B` depends on the order they arrived in).
fn halves(out: &std::sync::Mutex<Vec<Record>>) -> (Vec<i64>, Vec<i64>) {
    let out = out.lock().unwrap();
    let mut a: Vec<i64> = out.iter().filter_map(|r| r.int(t("A"))).collect();
    let mut b: Vec<i64> = out.iter().filter_map(|r| r.int(t("B"))).collect();
    a.sort_unstable();
    b.sort_unstable();
    (a, b)
}

/// Synchrocells on node 1, in a failure-free run and with node 1 killed
/// at several messages: every `A` and every `B` is written exactly once
/// (a cell that never fires loses the `A` it stores, as S-Net says), and
/// node 0's log ends empty (the end of the stream drained the stored
/// record's group, which every later `A` waited for).
#[test]
fn synchrocells_on_a_killed_node_lose_and_double_nothing() {
    let n = 300;
    let all: Vec<i64> = (0..n).collect();
    for cells in [Cells::Lone, Cells::Merge, Cells::Split, Cells::Never] {
        for workers in [1, 2, 8] {
            for after in [0, 2, 3, 6] {
                let what = format!("{cells:?} killed at {after}, {workers} workers");
                let (out, stats) =
                    killed_run(cells_graph(cells), 2, input(n), workers, 1, after, false)
                        .unwrap_or_else(|e| panic!("{what}: {e}"));
                let (a, b) = halves(&out);
                assert_eq!(b, all, "{what}");
                if let Cells::Never = cells {
                    assert_eq!(a.len() as i64, n - 1, "{what}");
                    a.windows(2).for_each(|w| assert!(w[0] < w[1], "{what}"));
                } else {
                    assert_eq!(a, all, "{what}");
                }
                assert_eq!(stats[0].log_live, 0, "{what}");
            }
        }
    }
}

/// `[| {<A>}, {<B>} |] * {<A>, <B>}` placed on node 1, fed `<A>`s and
/// `<B>`s directly: `A=2j`, `A=2j+1`, `B=2j`, `B=2j+1` for each `j`.
/// The second `A` passes the chain's open cell because its slot is taken
/// (it joins the stored `A`'s group) and is stored in the next one; the
/// first `B` fires the first cell and the second passes it (fired) and
/// fires the next: on one FIFO stream every run pairs `A=k` with `B=k`.
fn slots_graph() -> Arc<Graph> {
    let mut g = Graph {
        nodes: vec![],
        boxes: vec![],
        entry: NodeId(0),
    };
    let (a, b) = (t("A"), t("B"));
    let pat = |l: Label| Pattern {
        variant: Variant::new([l]),
        guard: None,
    };
    let cell = add(
        &mut g,
        NodeKind::Synchrocell(SynchrocellDef {
            patterns: vec![pat(a), pat(b)],
        }),
        ty(&[&[a], &[b]]),
    );
    let star = add(
        &mut g,
        NodeKind::Star {
            body: cell,
            exits: vec![Pattern {
                variant: Variant::new([a, b]),
                guard: None,
            }],
            det: false,
        },
        ty(&[&[a], &[b]]),
    );
    g.entry = add(
        &mut g,
        NodeKind::Place {
            body: star,
            node: Rank(1),
        },
        ty(&[&[a], &[b]]),
    );
    Arc::new(g)
}

/// A star of synchrocells on node 1 whose records pass cells because
/// their slots are taken, with node 1 killed at several messages (or
/// not), at 1, 2 and 8 workers: the output is the failure-free run's
/// (`A=k` merged with `B=k`, each exactly once) and node 0's log ends
/// empty.
#[test]
fn a_star_of_cells_passed_by_taken_slots_on_a_killed_node_keeps_its_pairs() {
    let m = 75;
    let input: Vec<Record> = (0..m)
        .flat_map(|j| {
            [
                ("A", 2 * j),
                ("A", 2 * j + 1),
                ("B", 2 * j),
                ("B", 2 * j + 1),
            ]
        })
        .map(|(l, v)| {
            let mut r = Record::new();
            r.set_int(t(l), v);
            r
        })
        .collect();
    let want: Vec<(i64, i64)> = (0..2 * m).map(|k| (k, k)).collect();
    for workers in [1, 2, 8] {
        for after in [0, 2, 3, 6] {
            let what = format!("killed at {after}, {workers} workers");
            let (out, stats) =
                killed_run(slots_graph(), 2, input.clone(), workers, 1, after, false)
                    .unwrap_or_else(|e| panic!("{what}: {e}"));
            let mut got: Vec<(i64, i64)> = out
                .lock()
                .unwrap()
                .iter()
                .map(|r| {
                    let v = |l: &str| r.int(t(l)).unwrap_or_else(|| panic!("{what}: no {l}"));
                    (v("A"), v("B"))
                })
                .collect();
            got.sort_unstable();
            assert_eq!(got, want, "{what}");
            assert_eq!(stats[0].log_live, 0, "{what}");
            if after == 2 {
                assert_eq!(stats[0].nodes_replaced, 1, "{what}");
            }
        }
    }
}
