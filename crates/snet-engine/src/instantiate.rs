//! From templates to entities.
//!
//! [`Program`] is the property graph plus what the engine precomputes once
//! per template (routing tables, fusion decisions). [`instantiate`] turns a
//! template into the entry entity of a fresh instance whose output goes to a
//! given downstream entity. Serial compositions are wired eagerly (cheap);
//! parallel branches, star stages and split replicas are created lazily by
//! their dispatchers when the first record needs them.

use snet_core::{Graph, NodeId, NodeKind, Variant};

use crate::boxes::{BoxEntity, BoxImpl};
use crate::collector::Collector;
use crate::entity::{Entity, Item};
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
                    let mut b = *body;
                    while let NodeKind::Net { body, .. } | NodeKind::Place { body, .. } =
                        &graph.node(b).kind
                    {
                        b = *body;
                    }
                    if let NodeKind::Sync(_) = graph.node(b).kind {
                        fused[id] = Some(b);
                    }
                }
                _ => {}
            }
        }
        Program {
            graph,
            routes,
            fused,
        }
    }
}

/// What every entity of a run shares.
pub struct Runtime {
    pub prog: Program,
    /// Box implementations by box id (None: not used by the entry network).
    pub boxes: Vec<Option<Arc<dyn BoxImpl>>>,
    pub nodes: u32,
    pub box_concurrency: usize,
    next_owner: AtomicU64,
    pub entities: AtomicU64,
    pub outputs: AtomicU64,
    /// Live box invocations (for diagnostics).
    pub running_boxes: AtomicUsize,
}

impl Runtime {
    pub fn new(
        prog: Program,
        boxes: Vec<Option<Arc<dyn BoxImpl>>>,
        nodes: u32,
        box_concurrency: usize,
    ) -> Runtime {
        Runtime {
            prog,
            boxes,
            nodes,
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

    /// A fresh identity for a marker owner (det collector, feedback instance).
    pub fn new_owner(&self) -> u64 {
        self.next_owner.fetch_add(1, Ordering::Relaxed)
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
}

/// A worker's view while it processes: where sends go.
pub struct Ctx<'a> {
    pub rt: &'a Runtime,
    /// Entities this worker obtained licences for, with their first item.
    pub ready: Vec<(Arc<Entity>, Item)>,
    /// Initialiser box entities created by `instantiate` (which only has
    /// `&Ctx`), still to be sent their start-up item ([`crate::boxes::init_kick`]).
    pub kicks: std::cell::RefCell<Vec<Arc<Entity>>>,
}

impl<'a> Ctx<'a> {
    pub fn new(rt: &'a Runtime) -> Ctx<'a> {
        Ctx {
            rt,
            ready: Vec::new(),
            kicks: std::cell::RefCell::new(Vec::new()),
        }
    }

    /// Sends an item to an entity; collects the licence if it was idle.
    #[inline]
    pub fn send(&mut self, to: &Arc<Entity>, item: Item) {
        if let crate::entity::Offer::Licensed(item) = to.offer(item) {
            self.ready.push((to.clone(), item));
        }
    }

    /// Sends the start-up item to the initialisers `instantiate` created.
    pub fn send_kicks(&mut self) {
        let kicks = std::mem::take(self.kicks.get_mut());
        for e in kicks {
            self.send(&e, crate::boxes::init_kick());
        }
    }

    pub fn entity(&self, node: NodeId, kind: Kind) -> Arc<Entity> {
        self.rt.entities.fetch_add(1, Ordering::Relaxed);
        Entity::new(node, kind)
    }
}

/// Creates an instance of template `node` whose output goes to `next`; returns its entry entity.
pub fn instantiate(ctx: &Ctx, node: NodeId, next: Arc<Entity>) -> Arc<Entity> {
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
                // An initialiser fires once when created (see `boxes`).
                ctx.kicks.borrow_mut().push(e.clone());
            }
            e
        }
        NodeKind::Serial(..) => {
            // Flatten the chain; runs of consecutive filters become one
            // entity (no stream between them, same order, fewer hops).
            let mut parts = Vec::new();
            serial_parts(graph, node, &mut parts);
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
                    instantiate(ctx, parts[i - 1], next)
                };
                i = j;
            }
            next
        }
        NodeKind::Net { body, .. } | NodeKind::Place { body, .. } => instantiate(ctx, *body, next),
        NodeKind::Parallel { branches, det } => {
            let (next, det) = det_wrap(ctx, node, *det, next);
            ctx.entity(
                node,
                Kind::Parallel(ParallelEntity::new(node, branches.len(), next, det)),
            )
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
        NodeKind::DynPlace { tag, .. } => ctx.entity(
            node,
            Kind::Split(SplitEntity::new(node, *tag, true, next, None)),
        ),
        NodeKind::Feedback { body, .. } => {
            let owner = rt.new_owner();
            let router = ctx.entity(
                node,
                Kind::FeedbackRouter(FeedbackRouter::new(node, owner, next)),
            );
            let entry_of_body = instantiate(ctx, *body, router.clone());
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

/// The components of a serial composition, left to right, looking through
/// net boundaries and placements (which are transparent at run time).
fn serial_parts(graph: &Graph, node: NodeId, out: &mut Vec<NodeId>) {
    match &graph.node(node).kind {
        NodeKind::Serial(a, b) => {
            serial_parts(graph, *a, out);
            serial_parts(graph, *b, out);
        }
        NodeKind::Net { body, .. } | NodeKind::Place { body, .. } => {
            serial_parts(graph, *body, out)
        }
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
        Kind::Box(e) => e.process(item, ctx),
        Kind::Parallel(e) => e.process(item, ctx),
        Kind::Star(e) => e.process(item, ctx),
        Kind::Split(e) => e.process(item, ctx),
        Kind::FeedbackEntry(e) => e.process(item, ctx),
        Kind::FeedbackRouter(e) => e.process(item, ctx),
        Kind::Collector(e) => e.process(item, ctx),
        Kind::Output(e) => e.process(item, ctx),
    };
    if !ctx.kicks.get_mut().is_empty() {
        ctx.send_kicks();
    }
    r
}
