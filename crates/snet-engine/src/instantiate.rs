//! From templates to entities.
//!
//! [`Program`] is the property graph plus what the engine precomputes once
//! per template (routing tables, fusion decisions). [`instantiate`] turns a
//! template into the entry entity of a fresh instance whose output goes to a
//! given downstream entity. Serial compositions, feedback bodies, nested nets
//! and placements are wired eagerly (cheap); parallel branches, star stages
//! and split replicas are created lazily by their dispatchers when the first
//! record needs them — except parallel branches holding an initialiser box,
//! which are created with the parallel composition so that the initialiser
//! fires at the instance's start (see [`crate::boxes`], "Initialiser boxes").

use snet_core::{Graph, NodeId, NodeKind, Record, Variant};

use crate::boxes::{BoxEntity, BoxImpl};
use crate::collector::Collector;
use crate::entity::{Entity, Item, Rec, Stamps};
use crate::feedback::{FeedbackEntry, FeedbackRouter};
use crate::filter::FilterChain;
use crate::output::OutputEntity;
use crate::parallel::ParallelEntity;
use crate::split::SplitEntity;
use crate::star::{FusedSync, StarEntity};
use crate::sync::{Arc, AtomicU64, AtomicUsize, Ordering};
use crate::synchro::SyncEntity;
use crate::EngineError;

/// Per-template data computed once.
pub struct Program {
    pub graph: Arc<Graph>,
    /// For each parallel node: (variant, branch index), best (largest) first.
    pub routes: Vec<Vec<(Variant, usize)>>,
    /// For each star node whose body is a lone synchrocell: that sync's node.
    pub fused: Vec<Option<NodeId>>,
    /// For each parallel node: the branches (indices) that hold an
    /// initialiser box firing at the start of the branch's instance; they
    /// are instantiated with the parallel composition, not lazily.
    pub init_branches: Vec<Vec<usize>>,
}

impl Program {
    pub fn new(graph: Arc<Graph>) -> Program {
        let n = graph.nodes.len();
        let mut routes = vec![Vec::new(); n];
        let mut fused = vec![None; n];
        for (id, node) in graph.nodes.iter().enumerate() {
            match &node.kind {
                NodeKind::Parallel { branches, .. } => {
                    let mut r: Vec<(Variant, usize)> = branches
                        .iter()
                        .enumerate()
                        .flat_map(|(i, b)| {
                            graph.node(*b).input.0.iter().map(move |v| (v.clone(), i))
                        })
                        .collect();
                    // Stable: among equal scores the earlier branch wins.
                    r.sort_by_key(|(v, _)| std::cmp::Reverse(v.len()));
                    routes[id] = r;
                }
                NodeKind::Star { body, .. } => {
                    // (Not through a placement: a placed body runs where it is placed.)
                    let mut b = *body;
                    while let NodeKind::Net { body, .. } = &graph.node(b).kind {
                        b = *body;
                    }
                    if let NodeKind::Sync(_) = graph.node(b).kind {
                        fused[id] = Some(b);
                    }
                }
                _ => {}
            }
        }
        let starts = starts_initialiser(&graph);
        let init_branches = graph
            .nodes
            .iter()
            .map(|node| match &node.kind {
                NodeKind::Parallel { branches, .. } => branches
                    .iter()
                    .enumerate()
                    .filter(|(_, b)| starts[**b as usize])
                    .map(|(i, _)| i)
                    .collect(),
                _ => Vec::new(),
            })
            .collect();
        Program {
            graph,
            routes,
            fused,
            init_branches,
        }
    }
}

/// For each node: does an instance of it hold an initialiser box that fires
/// when the instance is created, i.e. one reachable without entering the
/// body of a star, split or dynamic placement (whose replicas are created
/// by records)? Computed bottom-up over the template DAG without recursion
/// (long serial chains nest deeply). The front end rejects recursive nets;
/// should a graph still hold a cycle, the edge back to an open node counts
/// as `false` instead of looping.
fn starts_initialiser(graph: &Graph) -> Vec<bool> {
    const UNSEEN: u8 = 0;
    const OPEN: u8 = 1;
    const DONE: u8 = 2;
    let replicated = |id: NodeId| {
        matches!(
            graph.node(id).kind,
            NodeKind::Star { .. } | NodeKind::Split { .. } | NodeKind::DynPlace { .. }
        )
    };
    let n = graph.nodes.len();
    let mut state = vec![UNSEEN; n];
    let mut starts = vec![false; n];
    for root in 0..n as NodeId {
        // (node, children already pushed)
        let mut stack = vec![(root, false)];
        while let Some((id, expanded)) = stack.pop() {
            if expanded {
                starts[id as usize] = match &graph.node(id).kind {
                    NodeKind::Box(b) => graph.box_def(*b).is_init(),
                    _ if replicated(id) => false,
                    _ => graph.children(id).iter().any(|c| starts[*c as usize]),
                };
                state[id as usize] = DONE;
                continue;
            }
            if state[id as usize] != UNSEEN {
                continue;
            }
            state[id as usize] = OPEN;
            stack.push((id, true));
            if !replicated(id) {
                let children = graph.children(id);
                stack.extend(
                    children
                        .iter()
                        .filter(|c| state[**c as usize] == UNSEEN)
                        .map(|c| (*c, false)),
                );
            }
        }
    }
    starts
}

/// What every entity of a run shares.
pub struct Runtime {
    pub prog: Program,
    /// Box implementations by box id (None: not used by the entry network).
    pub boxes: Vec<Option<Arc<dyn BoxImpl>>>,
    /// This node and the number of nodes.
    pub node: u32,
    pub nodes: u32,
    /// The distribution layer's state on this node.
    pub(crate) net: crate::dist::Net,
    pub box_concurrency: usize,
    next_owner: AtomicU64,
    pub entities: AtomicU64,
    pub outputs: AtomicU64,
    /// Live box invocations (for diagnostics).
    pub running_boxes: AtomicUsize,
}

impl Runtime {
    pub(crate) fn new(
        prog: Program,
        boxes: Vec<Option<Arc<dyn BoxImpl>>>,
        net: crate::dist::Net,
        box_concurrency: usize,
    ) -> Runtime {
        Runtime {
            prog,
            boxes,
            node: net.me,
            nodes: net.nodes,
            net,
            box_concurrency,
            next_owner: AtomicU64::new(1),
            entities: AtomicU64::new(0),
            outputs: AtomicU64::new(0),
            running_boxes: AtomicUsize::new(0),
        }
    }

    pub fn graph(&self) -> &Graph {
        &self.prog.graph
    }

    /// A fresh identity for a marker owner (det collector, feedback
    /// instance), unique across nodes: the node is in the top 16 bits.
    pub fn new_owner(&self) -> u64 {
        (u64::from(self.node) << 48) | self.next_owner.fetch_add(1, Ordering::Relaxed)
    }

    pub fn loc(&self, node: NodeId) -> Option<snet_core::Loc> {
        Some(self.graph().node(node).loc.clone())
    }
}

/// Entity state, by kind.
pub enum Kind {
    Chain(FilterChain),
    Sync(SyncEntity),
    FusedSync(FusedSync),
    Box(BoxEntity),
    Parallel(ParallelEntity),
    Star(StarEntity),
    Split(SplitEntity),
    FeedbackEntry(FeedbackEntry),
    FeedbackRouter(FeedbackRouter),
    Collector(Collector),
    Output(OutputEntity),
    Remote(crate::remote::RemoteEntity),
}

/// A worker's view while it processes: where sends go.
pub struct Ctx<'a> {
    pub rt: &'a Runtime,
    /// Entities this worker obtained licences for, with their first item.
    pub ready: Vec<(Arc<Entity>, Item)>,
    /// Start-up items queued by `instantiate` (which only has `&Ctx`), in
    /// the order they must be sent: the calls of the initialiser boxes of
    /// new instances, and the ordering markers that must follow their
    /// outputs (see [`crate::boxes`]). Sent by [`Ctx::start`].
    pub startup: std::cell::RefCell<Vec<(Arc<Entity>, Item)>>,
}

impl<'a> Ctx<'a> {
    pub fn new(rt: &'a Runtime) -> Ctx<'a> {
        Ctx {
            rt,
            ready: Vec::new(),
            startup: std::cell::RefCell::new(Vec::new()),
        }
    }

    /// Sends an item to an entity; collects the licence if it was idle.
    #[inline]
    pub fn send(&mut self, to: &Arc<Entity>, item: Item) {
        if let crate::entity::Offer::Licensed(item) = to.offer(item) {
            self.ready.push((to.clone(), item));
        }
    }

    /// Sends the start-up items of the instances `instantiate` created.
    /// Dispatchers call it right after creating an instance, before they
    /// send it the record that caused its creation.
    pub fn start(&mut self) {
        if self.startup.get_mut().is_empty() {
            return;
        }
        let items = std::mem::take(self.startup.get_mut());
        for (e, item) in items {
            self.send(&e, item);
        }
    }

    pub fn entity(&self, node: NodeId, kind: Kind) -> Arc<Entity> {
        self.rt.entities.fetch_add(1, Ordering::Relaxed);
        Entity::new(node, kind)
    }
}

/// Creates an instance of template `node` whose output goes to `next`; returns its entry entity.
///
/// `start` are the ordering stamps of the instance's start-up: the outputs
/// of the initialisers it starts carry them (see [`crate::boxes`]). The
/// start-up items are queued in `ctx.startup`; the caller sends them
/// ([`Ctx::start`]) before anything else reaches the instance.
pub fn instantiate(ctx: &Ctx, node: NodeId, next: Arc<Entity>, start: &Stamps) -> Arc<Entity> {
    let rt = ctx.rt;
    let graph = rt.graph();
    match &graph.node(node).kind {
        NodeKind::Filter(_) => ctx.entity(node, Kind::Chain(FilterChain::new(&[node], next))),
        NodeKind::Sync(def) => ctx.entity(
            node,
            Kind::Sync(SyncEntity::new(node, def.patterns.len(), next)),
        ),
        NodeKind::Box(id) => {
            let e = ctx.entity(node, Kind::Box(BoxEntity::new(rt, node, *id, next)));
            if graph.box_def(*id).is_init() {
                // An initialiser is called once when created, on the empty record.
                let call = Item::Rec(Rec {
                    rec: Record::new(),
                    det: start.clone(),
                });
                ctx.startup.borrow_mut().push((e.clone(), call));
            }
            e
        }
        NodeKind::Serial(..) => {
            // Flatten the chain; runs of consecutive filters become one
            // entity (no stream between them, same order, fewer hops).
            let mut parts = Vec::new();
            serial_parts(graph, rt.node, node, &mut parts);
            let mut next = next;
            let mut i = parts.len();
            while i > 0 {
                let mut j = i - 1;
                while j > 0 && is_filter(graph, parts[j - 1]) && is_filter(graph, parts[i - 1]) {
                    j -= 1;
                }
                next = if i - j >= 2 {
                    ctx.entity(parts[j], Kind::Chain(FilterChain::new(&parts[j..i], next)))
                } else {
                    instantiate(ctx, parts[i - 1], next, start)
                };
                i = j;
            }
            next
        }
        NodeKind::Net { body, .. } => instantiate(ctx, *body, next, start),
        NodeKind::Place { body, node: at } => {
            if *at == rt.node {
                instantiate(ctx, *body, next, start)
            } else {
                remote_instance(ctx, *at, *body, next, start)
            }
        }
        NodeKind::Parallel { branches, det } => {
            let (next, mut det) = det_wrap(ctx, node, *det, next);
            let mut par = ParallelEntity::new(node, branches.len(), next.clone());
            let eager = &rt.prog.init_branches[node as usize];
            if !eager.is_empty() {
                // Branches with initialisers start now. A deterministic
                // composition orders their start-up as its first input (its
                // sequence number 0, followed by one marker copy per branch).
                let mut stamps = start.clone();
                let marker = det.as_mut().map(|d| d.reserve(&mut stamps));
                let entries: Vec<Arc<Entity>> = eager
                    .iter()
                    .map(|&i| instantiate(ctx, branches[i], next.clone(), &stamps))
                    .collect();
                if let Some(m) = marker {
                    let mut startup = ctx.startup.borrow_mut();
                    startup.extend(
                        m.split(entries.len())
                            .zip(&entries)
                            .map(|(copy, e)| (e.clone(), Item::Marker(copy))),
                    );
                }
                for (&i, e) in eager.iter().zip(entries) {
                    par.set_branch(i, e);
                }
            }
            par.det = det;
            ctx.entity(node, Kind::Parallel(par))
        }
        NodeKind::Star { det, .. } => {
            if rt.prog.fused[node as usize].is_some() {
                // A deterministic fused star is one FIFO entity: order holds without a collector.
                return ctx.entity(node, Kind::FusedSync(FusedSync::new(rt, node, next)));
            }
            let (exit, det) = det_wrap(ctx, node, *det, next);
            ctx.entity(node, Kind::Star(StarEntity::new(node, 0, exit, det)))
        }
        NodeKind::Split { tag, det, .. } => {
            let (next, det) = det_wrap(ctx, node, *det, next);
            ctx.entity(
                node,
                Kind::Split(SplitEntity::new(node, *tag, false, next, det)),
            )
        }
        NodeKind::DynPlace { tag, det, .. } => {
            let (next, det) = det_wrap(ctx, node, *det, next);
            ctx.entity(
                node,
                Kind::Split(SplitEntity::new(node, *tag, true, next, det)),
            )
        }
        NodeKind::Feedback { body, .. } => {
            let owner = rt.new_owner();
            let router = ctx.entity(
                node,
                Kind::FeedbackRouter(FeedbackRouter::new(node, owner, next)),
            );
            let entry_of_body = instantiate(ctx, *body, router.clone(), start);
            let entry = ctx.entity(
                node,
                Kind::FeedbackEntry(FeedbackEntry::new(
                    node,
                    owner,
                    entry_of_body.clone(),
                    router.clone(),
                )),
            );
            // SAFETY: `router` was created just above and is reachable only from
            // the body instance and `entry`, which no worker can reach yet.
            if let Kind::FeedbackRouter(r) = unsafe { router.state() } {
                r.body = Arc::downgrade(&entry_of_body);
                r.entry = Arc::downgrade(&entry);
            }
            entry
        }
    }
}

/// An instance of `template` on node `at` (not this node), whose output
/// comes back to `next`: a remote entity for its entry, and `Open` on its
/// way to `at`, which builds the instance (see [`crate::dist`]).
pub fn remote_instance(
    ctx: &Ctx,
    at: u32,
    template: NodeId,
    next: Arc<Entity>,
    start: &Stamps,
) -> Arc<Entity> {
    let net = &ctx.rt.net;
    let back = net.bind(next);
    let conn = net.new_conn();
    net.push(crate::dist::Out::Open {
        to: at,
        conn,
        template,
        back,
        start: start.clone(),
    });
    ctx.entity(
        template,
        Kind::Remote(crate::remote::RemoteEntity::new(at, conn)),
    )
}

/// The components of a serial composition, left to right, looking through
/// net boundaries and placements on this node `here` (which are transparent).
fn serial_parts(graph: &Graph, here: u32, node: NodeId, out: &mut Vec<NodeId>) {
    match &graph.node(node).kind {
        NodeKind::Serial(a, b) => {
            serial_parts(graph, here, *a, out);
            serial_parts(graph, here, *b, out);
        }
        NodeKind::Net { body, .. } => serial_parts(graph, here, *body, out),
        NodeKind::Place { body, node: at } if *at == here => serial_parts(graph, here, *body, out),
        _ => out.push(node),
    }
}

fn is_filter(graph: &Graph, node: NodeId) -> bool {
    matches!(graph.node(node).kind, NodeKind::Filter(_))
}

/// For a deterministic combinator: a collector in front of `next`, and the owner state.
fn det_wrap(
    ctx: &Ctx,
    node: NodeId,
    det: bool,
    next: Arc<Entity>,
) -> (Arc<Entity>, Option<crate::collector::DetOwner>) {
    if !det {
        return (next, None);
    }
    let owner = ctx.rt.new_owner();
    let coll = ctx.entity(node, Kind::Collector(Collector::new(owner, next)));
    (coll, Some(crate::collector::DetOwner::new(owner)))
}

/// The entity for the network's output.
pub fn output_entity(ctx: &Ctx, sink: Box<dyn crate::Sink>) -> Arc<Entity> {
    ctx.entity(u32::MAX, Kind::Output(OutputEntity::new(sink)))
}

/// Processes one item at an entity whose licence the caller holds.
pub fn process(ent: &Arc<Entity>, item: Item, ctx: &mut Ctx) -> Result<(), EngineError> {
    // SAFETY: the scheduler calls `process` only while it holds `ent`'s licence.
    let state = unsafe { ent.state() };
    let r = match state {
        Kind::Chain(e) => e.process(item, ctx),
        Kind::Sync(e) => e.process(item, ctx),
        Kind::FusedSync(e) => e.process(item, ctx),
        Kind::Box(e) => e.process(item, ctx, ent),
        Kind::Parallel(e) => e.process(item, ctx),
        Kind::Star(e) => e.process(item, ctx),
        Kind::Split(e) => e.process(item, ctx),
        Kind::FeedbackEntry(e) => e.process(item, ctx),
        Kind::FeedbackRouter(e) => e.process(item, ctx),
        Kind::Collector(e) => e.process(item, ctx),
        Kind::Output(e) => e.process(item, ctx, ent),
        Kind::Remote(e) => e.process(item, ctx),
    };
    // Dispatchers send the start-up of what they create at once; this
    // catches any instance created elsewhere.
    ctx.start();
    r
}

#[cfg(test)]
mod tests {
    use super::*;
    use snet_core::{BoxDef, Loc, Node, Type};

    fn node(g: &mut Graph, kind: NodeKind) -> NodeId {
        let loc = Loc {
            file: "t.snet".into(),
            line: 1,
            col: 1,
        };
        g.add(Node {
            kind,
            loc,
            input: Type::default(),
            output: Type::default(),
        })
    }

    #[test]
    fn initialisers_start_with_their_instance_unless_replicated() {
        let loc = Loc {
            file: "t.snet".into(),
            line: 1,
            col: 1,
        };
        let mut g = Graph {
            nodes: vec![],
            boxes: vec![],
            entry: 0,
        };
        for (name, inputs) in [("init", vec![]), ("work", vec![snet_core::Label::tag("x")])] {
            let def = BoxDef {
                name: name.into(),
                inputs,
                outputs: vec![vec![]],
                interface: "C4SNet".into(),
                loc: loc.clone(),
                code: None,
            };
            g.boxes.push(def);
        }
        let init = node(&mut g, NodeKind::Box(0));
        let work = node(&mut g, NodeKind::Box(1));
        let net = node(
            &mut g,
            NodeKind::Net {
                name: "n".into(),
                body: init,
            },
        );
        let placed = node(&mut g, NodeKind::Place { body: net, node: 0 });
        let par = node(
            &mut g,
            NodeKind::Parallel {
                branches: vec![work, placed],
                det: false,
            },
        );
        let star = node(
            &mut g,
            NodeKind::Star {
                body: par,
                exits: vec![],
                det: false,
            },
        );
        let split = node(
            &mut g,
            NodeKind::Split {
                body: init,
                tag: snet_core::Label::tag("k"),
                det: true,
            },
        );
        let fb = node(
            &mut g,
            NodeKind::Feedback {
                body: par,
                back: vec![],
            },
        );
        let ser = node(&mut g, NodeKind::Serial(star, fb));
        let starts = starts_initialiser(&g);
        let want = [
            (init, true),
            (work, false),
            (net, true),
            (placed, true),
            (par, true),
            (star, false),
            (split, false),
            (fb, true),
            (ser, true),
        ];
        for (id, s) in want {
            assert_eq!(starts[id as usize], s, "node {id}: {:?}", g.node(id).kind);
        }
        let mut g = g;
        g.entry = ser;
        let prog = Program::new(Arc::new(g));
        assert_eq!(prog.init_branches[par as usize], vec![1]);
    }

    #[test]
    fn a_cycle_does_not_loop() {
        let mut g = Graph {
            nodes: vec![],
            boxes: vec![],
            entry: 0,
        };
        let a = node(
            &mut g,
            NodeKind::Net {
                name: "a".into(),
                body: 1,
            },
        );
        let _b = node(
            &mut g,
            NodeKind::Net {
                name: "b".into(),
                body: a,
            },
        );
        assert_eq!(starts_initialiser(&g), vec![false, false]);
    }
}
