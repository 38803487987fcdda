//! Distributed termination by credit ([`crate::dist`], "Termination:
//! credit"), on the real code: the real `output_manager` and
//! `input_manager` of every node (`dist::managers`: wire encoding, the
//! credit share each message takes, `Net::begin`/`end` around each message
//! received, `Host::settle` after each message and batch), the real
//! `Net::settle`, and on one node the real scheduler (`Shared`: the worker
//! loop, `look`, `Host::deliver` and `Host::settle` under the sleep lock).
//! Only the transport is simulated ([`Wire`]: a mailbox per node behind a
//! loom mutex).
//!
//! Loom allows five threads, and a node with a worker needs three (worker,
//! input manager, output manager), so each model runs one node in full and
//! the other as an [`Inline`] node: its managers are real, but it has no
//! worker thread — the licences its input manager obtains are run on the
//! spot, inside `Host::deliver` (so between `Net::begin` and `Net::end`).
//!
//! The network, in both models: node 0 sends two records over connection
//! `c` to node 1, where a remote entity sends each back over connection
//! `d` to node 0's output entity (a counting sink). Node 0 starts with all
//! the credit; node 1 with none.
//!
//! * `termination_worker_on_node_1`: node 1 in full (its worker runs the
//!   forwarding entity, licences reach it through the injector); node 0
//!   inline: its main thread sends both records (node 0's start-up work),
//!   starts the other threads, goes idle and runs node 0's input manager.
//!   Node 0 declares the run over where the real last worker would
//!   (`Shared::look`): when `settle` finds it quiescent, it queues
//!   `Shutdown` and stops.
//! * `termination_worker_on_node_0`: node 0 in full (the main thread is its
//!   worker, starting with both records queued for the sending entity —
//!   they may leave in one message or two; its `look` declares the end),
//!   node 1 inline.
//!
//! Checked, in every interleaving:
//! * *never early*: when node 0 declares quiescence nothing is in flight and
//!   no node is active. A premature declaration strands something: a record
//!   never reaches the sink, a message stays in a mailbox closed by then, a
//!   task is left on node 1, or credit is missing from node 0 at the end;
//!   all of these are asserted after every thread has been joined;
//! * *eventually*: node 0 does declare (otherwise every thread ends up
//!   blocked, which loom reports as a deadlock), and every node shuts down;
//! * credit is conserved: node 0 ends with exactly one, node 1 with none
//!   (and `Dyadic::add` panics if a share is counted twice);
//! * every item sent was acknowledged (`Ack` frames carry credit, and a
//!   node acknowledges everything before it is passive), so nothing is
//!   outstanding or owed on either node at the end.
//!
//! Sizes: two nodes, two records, five threads. Preemption bounds: 2 for
//! `termination_worker_on_node_1` (about 256,000 executions, 40-50 s), 1
//! for `termination_worker_on_node_0` (2,200 executions, under a second; at
//! bound 2 it explores 936,000 executions in about 150 s and passes too:
//! run it with `SNET_LOOM_FULL=1 LOOM_MAX_PREEMPTIONS=2`). Each extra
//! preemption multiplies the executions by 100 or more, so bound 3 (not
//! tried) would take hours. `README.md` lists the mutations caught.
//!
//! Run: `LOOM_MAX_PREEMPTIONS=3 RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom
//! cargo test --release -q -p snet-engine --lib loom_tests::termination` (add
//! `-- --nocapture` for the number of executions explored).

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize as StdAtomicUsize, Ordering as StdOrdering};
use std::sync::Arc;
use std::time::Duration;

use loom::thread;
use snet_core::{Codecs, Rank, Record};

use crate::dist::managers::{input_manager, output_manager, Host};
use crate::dist::{Channel, FieldBytes, Out, Payload, Received, Settle, Transport, TransportError};
use crate::entity::{Entity, Item, Offer, Rec};
use crate::output::OutputEntity;
use crate::remote::RemoteEntity;
use crate::runtime::{process, Ctx, Kind, Runtime};
use crate::scheduler::{worker_loop, Shared};
use crate::sync::{lock, Condvar, Mutex};

/// A node's incoming messages, one queue per channel.
#[derive(Default)]
struct Mailbox {
    queues: [VecDeque<Received>; 3],
    closed: bool,
}

/// The simulated transport: a mailbox per node. Order is kept per sender
/// and channel (indeed per channel); a receiver takes control messages
/// first, so credit may overtake records sent before it, as the transport
/// contract allows.
struct Wire {
    boxes: Vec<(Mutex<Mailbox>, Condvar)>,
}

impl Wire {
    fn new(nodes: u32) -> Arc<Wire> {
        Arc::new(Wire {
            boxes: (0..nodes)
                .map(|_| (Mutex::new(Mailbox::default()), Condvar::new()))
                .collect(),
        })
    }

    /// No more receiving at `node` (its input manager returns).
    fn close(&self, node: Rank) {
        let (m, cv) = &self.boxes[node.index()];
        lock(m).closed = true;
        cv.notify_all();
    }

    fn assert_empty(&self) {
        for (n, (m, _)) in self.boxes.iter().enumerate() {
            let g = lock(m);
            let left: usize = g.queues.iter().map(VecDeque::len).sum();
            assert_eq!(left, 0, "{left} message(s) to node {n} never received");
        }
    }
}

struct Endpoint {
    me: Rank,
    wire: Arc<Wire>,
}

impl Transport for Endpoint {
    fn node(&self) -> Rank {
        self.me
    }

    fn nodes(&self) -> u32 {
        self.wire.boxes.len() as u32
    }

    fn send_to_peer(
        &self,
        to: Rank,
        ch: Channel,
        header: &[u8],
        payload: Payload,
    ) -> Result<(), TransportError> {
        let (m, cv) = &self.wire.boxes[to.index()];
        lock(m).queues[ch as usize].push_back(Received {
            from: self.me,
            channel: ch,
            header: header.into(),
            payload: FieldBytes::copy_from(payload.bytes()),
        });
        cv.notify_one();
        Ok(())
    }

    /// Blocks until a message arrives or the endpoint is closed (a timeout
    /// only makes the real input manager look at `Host::over` again; here
    /// closing the mailbox is what ends it).
    fn recv(&self, _: Duration) -> Result<Option<Received>, TransportError> {
        let (m, cv) = &self.wire.boxes[self.me.index()];
        let mut g = lock(m);
        loop {
            for ch in [Channel::Control, Channel::Field, Channel::Records] {
                if let Some(msg) = g.queues[ch as usize].pop_front() {
                    return Ok(Some(msg));
                }
            }
            if g.closed {
                return Err(TransportError::Closed);
            }
            g = cv.wait(g).unwrap_or_else(|e| e.into_inner());
        }
    }

    fn close(&self) {
        self.wire.close(self.me)
    }

    fn name(&self) -> &str {
        "loom"
    }
}

/// Runs licences to release on the calling thread.
fn run_inline(rt: &Runtime, ready: Vec<(Arc<Entity>, Item)>) {
    let mut ctx = Ctx::new(rt);
    let mut todo = ready;
    while let Some((ent, mut item)) = todo.pop() {
        loop {
            process(&ent, item, &mut ctx).expect("process");
            match ent.next_or_release() {
                Some(next) => item = next,
                None => break,
            }
        }
        todo.append(&mut ctx.ready);
    }
}

/// What plays the sleep lock of an inline node.
struct InlineState {
    /// The main thread is doing node 0's start-up work (a worker awake).
    awake: bool,
    /// The run is over on this node.
    over: bool,
}

/// A node without worker threads: real managers, licences run inside
/// `Host::deliver`.
struct Inline {
    rt: Runtime,
    codecs: Codecs,
    wire: Arc<Wire>,
    state: Mutex<InlineState>,
}

impl Inline {
    fn new(rt: Runtime, wire: Arc<Wire>, awake: bool) -> Inline {
        Inline {
            rt,
            codecs: Codecs::default(),
            wire,
            state: Mutex::new(InlineState { awake, over: false }),
        }
    }

    /// The start-up work is done: the "worker" goes idle and looks, as the
    /// last worker going to sleep does.
    fn idle(&self) {
        lock(&self.state).awake = false;
        self.settle();
    }
}

impl Host for Inline {
    fn rt(&self) -> &Runtime {
        &self.rt
    }

    fn codecs(&self) -> &Codecs {
        &self.codecs
    }

    fn deliver(&self, ready: Vec<(Arc<Entity>, Item)>) {
        run_inline(&self.rt, ready);
    }

    fn fail(&self, e: crate::EngineError, _: bool) {
        panic!("node {} failed: {e}", self.rt.node);
    }

    fn shutdown(&self) {
        lock(&self.state).over = true;
        self.rt.net.stop();
        self.wire.close(self.rt.node);
    }

    fn over(&self) -> bool {
        lock(&self.state).over
    }

    fn acked(&self) {}

    /// `Shared::settle` and `Shared::look` in one: no worker is busy unless
    /// the start-up work is under way; node 0 found quiescent ends the run
    /// (input exhausted: `Shutdown`, then stop, as `run` does once its
    /// workers are done).
    fn settle(&self) -> Settle {
        let mut st = lock(&self.state);
        let r = self.rt.net.settle(!st.awake, true);
        if r == Settle::Quiescent && !st.over {
            st.over = true;
            self.rt.net.push(Out::Shutdown);
            self.rt.net.stop();
            self.wire.close(self.rt.node);
        }
        r
    }
}

struct CountSink(Arc<StdAtomicUsize>);

impl crate::Sink for CountSink {
    fn write(&mut self, _: &Record) -> std::io::Result<()> {
        self.0.fetch_add(1, StdOrdering::Relaxed);
        Ok(())
    }
    fn finish(&mut self) -> std::io::Result<()> {
        Ok(())
    }
    fn abort(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The entities of the network: node 0's sender (to connection `c` on
/// node 1) and output, node 1's forwarder (back over `d`).
struct Ents {
    send: Arc<Entity>,
    output: Arc<Entity>,
    forward: Arc<Entity>,
    written: Arc<StdAtomicUsize>,
}

fn entities(rt0: &Runtime, rt1: &Runtime) -> Ents {
    let written = Arc::new(StdAtomicUsize::new(0));
    let output = Entity::new(Kind::Output(OutputEntity::new(Box::new(CountSink(
        written.clone(),
    )))));
    let d = rt0.net.bind(output.clone());
    let forward = Entity::new(Kind::Remote(RemoteEntity::new(Rank(0), d)));
    let c = rt1.net.bind(forward.clone());
    let send = Entity::new(Kind::Remote(RemoteEntity::new(Rank(1), c)));
    Ents {
        send,
        output,
        forward,
        written,
    }
}

fn record() -> Item {
    Item::Rec(Rec::new(Record::new()))
}

/// After every thread was joined: nothing lost, nothing stranded, all the
/// credit back on node 0.
fn assert_clean(records: usize, ents: &Ents, wire: &Wire, rt0: &Runtime, rt1: &Runtime) {
    assert_eq!(
        ents.written.load(StdOrdering::Relaxed),
        records,
        "records lost"
    );
    wire.assert_empty();
    for e in [&ents.send, &ents.output, &ents.forward] {
        assert!(e.next_or_release().is_none(), "an item left in an inbox");
    }
    for rt in [rt0, rt1] {
        let st = lock(&rt.net.state.0);
        assert!(st.out.is_empty(), "node {}: messages never sent", rt.node);
        assert_eq!(st.busy, 0, "node {}: a manager still busy", rt.node);
        // Back-pressure across nodes: every item was acknowledged before
        // the run could end.
        assert_eq!(st.outstanding, 0, "node {}: items unacknowledged", rt.node);
        assert_eq!(st.owed_total, 0, "node {}: acknowledgements owed", rt.node);
        if rt.node == Rank(0) {
            assert!(st.pool.is_one(), "node 0 ended without all the credit");
        } else {
            assert!(st.pool.is_zero(), "node {} kept credit", rt.node);
        }
    }
}

fn worker_on_node_1(records: usize) {
    super::check(2, move || {
        let wire = Wire::new(2);
        let node0 = Arc::new(Inline::new(super::runtime(0, 2), wire.clone(), true));
        let rt1 = super::runtime(1, 2);
        let ents = entities(&node0.rt, &rt1);
        let node1 = Arc::new(Shared::for_model(rt1, 1, Vec::new()));
        let send_record = |node0: &Inline| {
            let Offer::Licensed(item) = ents.send.offer(record()) else {
                unreachable!("only node 0's main thread sends")
            };
            run_inline(&node0.rt, vec![(ents.send.clone(), item)]);
        };
        for _ in 0..records {
            send_record(&node0);
        }

        let mut threads = Vec::new();
        let (n0, w) = (node0.clone(), wire.clone());
        threads.push(thread::spawn(move || {
            output_manager(
                &*n0,
                &Endpoint {
                    me: Rank(0),
                    wire: w,
                },
            )
        }));
        let (n1, w) = (node1.clone(), wire.clone());
        threads.push(thread::spawn(move || {
            worker_loop(
                &n1,
                0,
                &Endpoint {
                    me: Rank(1),
                    wire: w.clone(),
                },
            );
            // `run` after its workers: stop the managers, close the endpoint.
            n1.model_stop();
            w.close(Rank(1));
        }));
        let (n1, w) = (node1.clone(), wire.clone());
        threads.push(thread::spawn(move || {
            input_manager(
                &*n1,
                &Endpoint {
                    me: Rank(1),
                    wire: w,
                },
            )
        }));
        let (n1, w) = (node1.clone(), wire.clone());
        threads.push(thread::spawn(move || {
            output_manager(
                &*n1,
                &Endpoint {
                    me: Rank(1),
                    wire: w,
                },
            )
        }));

        node0.idle();
        input_manager(
            &*node0,
            &Endpoint {
                me: Rank(0),
                wire: wire.clone(),
            },
        );
        for t in threads {
            t.join().unwrap();
        }
        node1.model_assert_drained();
        assert_clean(records, &ents, &wire, node0.rt(), node1.rt());
    });
}

fn worker_on_node_0(records: usize) {
    super::check(1, move || {
        let wire = Wire::new(2);
        let rt0 = super::runtime(0, 2);
        let node1 = Arc::new(Inline::new(super::runtime(1, 2), wire.clone(), false));
        let ents = entities(&rt0, &node1.rt);
        // Both records queued for the sending entity: the first with its
        // licence as worker 0's task, the second in its inbox.
        let Offer::Licensed(first) = ents.send.offer(record()) else {
            unreachable!("idle entity")
        };
        for _ in 1..records {
            assert!(matches!(ents.send.offer(record()), Offer::Queued));
        }
        let node0 = Arc::new(Shared::for_model(rt0, 1, vec![(ents.send.clone(), first)]));

        let mut threads = Vec::new();
        let (n0, w) = (node0.clone(), wire.clone());
        threads.push(thread::spawn(move || {
            input_manager(
                &*n0,
                &Endpoint {
                    me: Rank(0),
                    wire: w,
                },
            )
        }));
        let (n0, w) = (node0.clone(), wire.clone());
        threads.push(thread::spawn(move || {
            output_manager(
                &*n0,
                &Endpoint {
                    me: Rank(0),
                    wire: w,
                },
            )
        }));
        for me in [true, false] {
            let (n1, w) = (node1.clone(), wire.clone());
            threads.push(thread::spawn(move || {
                let t = Endpoint {
                    me: Rank(1),
                    wire: w,
                };
                if me {
                    input_manager(&*n1, &t)
                } else {
                    output_manager(&*n1, &t)
                }
            }));
        }

        worker_loop(
            &node0,
            0,
            &Endpoint {
                me: Rank(0),
                wire: wire.clone(),
            },
        );
        node0.model_stop();
        wire.close(Rank(0));
        for t in threads {
            t.join().unwrap();
        }
        node0.model_assert_drained();
        assert_clean(records, &ents, &wire, node0.rt(), node1.rt());
    });
}

#[test]
fn termination_worker_on_node_1() {
    worker_on_node_1(2);
}

#[test]
fn termination_worker_on_node_0() {
    worker_on_node_0(2);
}
