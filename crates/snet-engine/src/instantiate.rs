//! From templates to entities.
//!
//! [`instantiate`] turns a template into the entry entity of a fresh
//! instance whose output goes to a given downstream entity. Serial
//! compositions, feedback bodies, nested nets and placements on this node
//! are wired eagerly (cheap); parallel branches, star stages and split
//! replicas are created lazily by their dispatchers when the first record
//! needs them — except parallel branches holding an initialiser box, which
//! are created with the parallel composition so that the initialiser fires
//! at the instance's start (see [`crate::boxes`], "Initialiser boxes"). A
//! component placed on another node becomes a remote entity here and an
//! instance there ([`remote_instance`], [`crate::dist`]).
//!
//! This module imports every entity module (it builds each kind), and the
//! dispatchers (`parallel`, `star`, `split`) import [`instantiate`] back:
//! they create their branches, stages and replicas lazily, at run time,
//! with the same function that wires the static network. One function
//! for both keeps eager and lazy instances identical.
//!
//! In a run that survives a lost node, a node other than 0 also tracks
//! where each instance is ([`Ctx::path`]): a step per choice from the
//! instance of a connection down (a component's position in a serial
//! composition, a parallel branch, a star's stage, a split's tag value).
//! It names the synchrocells the same in every incarnation of the node
//! ([`crate::dist::wire::CellId`]); a dispatcher keeps its own path for
//! the instances it creates later ([`instantiate_at`]).

use snet_core::{Graph, NodeId, NodeKind, ObservePoint, Rank, Record};

use crate::boxes::BoxEntity;
use crate::collector::Collector;
use crate::dist::wire::Path;
use crate::entity::{Entity, Item, Rec, Stamps};
use crate::feedback::{FeedbackEntry, FeedbackRouter};
use crate::filter::FilterChain;
use crate::observe::ObserverEntity;
use crate::output::OutputEntity;
use crate::parallel::ParallelEntity;
use crate::pathlink::PathLink;
use crate::runtime::{Ctx, Kind, Stateless};
use crate::split::SplitEntity;
use crate::star::{FusedSynchrocell, StarEntity};
use crate::sync::Arc;
use crate::synchrocell::SynchrocellEntity;

/// Creates an instance of template `node` whose output goes to `next`; returns its entry entity.
///
/// `start` are the ordering stamps of the instance's start-up: the outputs
/// of the initialisers it starts carry them (see [`crate::boxes`]). The
/// start-up items are queued in `ctx.startup`; the caller sends them
/// ([`Ctx::start`]) before anything else reaches the instance.
pub(crate) fn instantiate(
    ctx: &Ctx,
    node: NodeId,
    next: Arc<Entity>,
    start: &Stamps,
) -> Arc<Entity> {
    let e = instantiate_node(ctx, node, next, start);
    // Traces and profiles name an entity by the innermost component it
    // is the entry of (`Entity::tag` keeps the first tag).
    e.tag(node);
    e
}

/// [`instantiate`] as the instance `step` of a dispatcher whose instance
/// path is `at` (its [`here`]; `None` without custody).
pub(crate) fn instantiate_at(
    ctx: &Ctx,
    at: Option<&Path>,
    step: u64,
    node: NodeId,
    next: Arc<Entity>,
    start: &Stamps,
) -> Arc<Entity> {
    let Some(at) = at else {
        return instantiate(ctx, node, next, start);
    };
    let mut path = at.clone();
    path.push(step);
    let outer = ctx.path.replace(path);
    let e = instantiate(ctx, node, next, start);
    ctx.path.replace(outer);
    e
}

/// [`instantiate`] one step below the instance being built (a part of
/// it built now).
fn instantiate_below(
    ctx: &Ctx,
    step: usize,
    node: NodeId,
    next: Arc<Entity>,
    start: &Stamps,
) -> Arc<Entity> {
    if !ctx.rt.net.receives_custody() {
        return instantiate(ctx, node, next, start);
    }
    ctx.path.borrow_mut().push(step as u64);
    let e = instantiate(ctx, node, next, start);
    ctx.path.borrow_mut().pop();
    e
}

/// The instance path of the instance being built, for a dispatcher that
/// creates instances later; `None` without custody (nothing is tracked).
fn here(ctx: &Ctx) -> Option<Box<Path>> {
    ctx.rt
        .net
        .receives_custody()
        .then(|| Box::new(ctx.path.borrow().clone()))
}

fn instantiate_node(ctx: &Ctx, node: NodeId, next: Arc<Entity>, start: &Stamps) -> Arc<Entity> {
    let rt = ctx.rt;
    let graph = rt.graph();
    match &graph.node(node).kind {
        NodeKind::Filter(_) => {
            ctx.stateless_entity(Stateless::Chain(FilterChain::new(rt, &[node], next)))
        }
        NodeKind::Synchrocell(_) => ctx.entity(Kind::Synchrocell(SynchrocellEntity::new(
            node,
            rt.prog.synchrocell(node).clone(),
            next,
            &rt.net,
            &ctx.path.borrow(),
        ))),
        NodeKind::Box(id) => {
            let t = rt.prog.box_template(node).clone();
            let e = ctx.entity(Kind::Box(BoxEntity::new(rt, t, next)));
            if graph.box_def(*id).is_init() {
                // An initialiser is called once when created, on the empty record.
                let call = Item::Rec(Rec {
                    rec: Record::new(),
                    det: start.clone(),
                    origin: crate::entity::Origin::NONE,
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
                    let chain = ctx.stateless_entity(Stateless::Chain(FilterChain::new(
                        rt,
                        &parts[j..i],
                        next,
                    )));
                    chain.tag(parts[j]);
                    chain
                } else {
                    instantiate_below(ctx, i - 1, parts[i - 1], next, start)
                };
                i = j;
            }
            next
        }
        NodeKind::Net { body, .. } => instantiate(ctx, *body, next, start),
        NodeKind::Observe { body, observer } => {
            let obs =
                |next| ctx.entity(Kind::Observer(ObserverEntity::new(observer.clone(), next)));
            match observer.point {
                ObservePoint::Before => obs(instantiate(ctx, *body, next, start)),
                ObservePoint::After => instantiate(ctx, *body, obs(next), start),
            }
        }
        NodeKind::Place { body, node: at } => {
            if *at == rt.node {
                instantiate(ctx, *body, next, start)
            } else {
                remote_instance(ctx, *at, *body, next, start)
            }
        }
        NodeKind::Parallel { .. } => {
            let def = rt.prog.parallel(node).clone();
            if def.filters.is_some() {
                // One FIFO entity: a deterministic composition needs no collector (parallel.rs).
                return ctx.stateless_entity(Stateless::FilterParallel(
                    crate::parallel::FilterParallel::new(rt, def, next),
                ));
            }
            let branches = &def.branches;
            let (next, mut det) = det_wrap(ctx, node, def.det, next);
            let mut par = ParallelEntity::new(def.clone(), next.clone(), here(ctx));
            let eager = &def.init_branches;
            if !eager.is_empty() {
                // Branches with initialisers start now. A deterministic
                // composition orders their start-up as its first input (its
                // sequence number 0, followed by one marker copy per branch).
                let mut stamps = start.clone();
                let marker = det.as_mut().map(|d| d.reserve(&mut stamps));
                let entries: Vec<Arc<Entity>> = eager
                    .iter()
                    .map(|&i| {
                        let next = merge_input(ctx, node, &next);
                        instantiate_below(ctx, i, branches[i], next, &stamps)
                    })
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
            if def.eager {
                // Every branch now: the composition is then stateless.
                for (i, &b) in branches.iter().enumerate() {
                    if !eager.contains(&i) {
                        let next = merge_input(ctx, node, &next);
                        par.set_branch(i, instantiate_below(ctx, i, b, next, start));
                    }
                }
            }
            par.det = det;
            if par.is_stateless() {
                ctx.stateless_entity(Stateless::Parallel(par))
            } else {
                ctx.entity(Kind::Parallel(par))
            }
        }
        NodeKind::Star { .. } => {
            let def = rt.prog.star(node).clone();
            if def.fused.is_some() {
                // A deterministic fused star is one FIFO entity: order holds
                // without a collector (its output linked like a collector's).
                let next = det_output(ctx, node, next);
                return ctx.entity(Kind::FusedSynchrocell(FusedSynchrocell::new(
                    def,
                    next,
                    graph,
                    &rt.net,
                    &ctx.path.borrow(),
                )));
            }
            if def.filters.is_some() {
                // One FIFO entity: a deterministic star needs no collector (star.rs).
                return ctx.entity(Kind::FilterStar(crate::star::FilterStar::new(
                    rt, def, next,
                )));
            }
            let (exit, det) = det_wrap(ctx, node, def.det, next);
            let exit = merge_input(ctx, node, &exit);
            ctx.entity(Kind::Star(StarEntity::new(def, 0, exit, det, here(ctx))))
        }
        NodeKind::Split { .. } | NodeKind::DynPlace { .. } => {
            let def = rt.prog.split(node).clone();
            if def.fused.is_some() {
                // One FIFO entity: a deterministic split needs no collector
                // (split.rs); its output is linked like a collector's.
                let next = det_output(ctx, node, next);
                return ctx.entity(Kind::SplitSynchrocell(crate::split::SplitSynchrocell::new(
                    def,
                    next,
                    &rt.net,
                    &ctx.path.borrow(),
                )));
            }
            let (next, det) = det_wrap(ctx, node, def.det, next);
            ctx.entity(Kind::Split(SplitEntity::new(def, next, det, here(ctx))))
        }
        NodeKind::Feedback { .. } => {
            let owner = rt.new_owner();
            let def = rt.prog.feedback(node).clone();
            let body = def.body;
            let router = ctx.entity(Kind::FeedbackRouter(FeedbackRouter::new(def, owner, next)));
            router.tag(node);
            let entry_of_body = instantiate(ctx, body, router.clone(), start);
            // Records from outside and records sent back race into the body.
            let outside = merge_input(ctx, node, &entry_of_body);
            // Where no marker can reach the loop from outside, nothing is
            // ever held back at its entry: records from outside enter the
            // body directly, and the router never resumes an entry.
            let entry = rt.prog.markers[node.index()].then(|| {
                ctx.entity(Kind::FeedbackEntry(FeedbackEntry::new(
                    outside.clone(),
                    router.clone(),
                )))
            });
            // SAFETY: `router` was created just above and is reachable only from
            // the body instance and `entry`, which no worker can reach yet.
            if let Kind::FeedbackRouter(r) = unsafe { router.state() } {
                r.body = Arc::downgrade(&entry_of_body);
                if let Some(entry) = &entry {
                    r.entry = Arc::downgrade(entry);
                }
                if !Arc::ptr_eq(&outside, &entry_of_body) {
                    r.back = Some(Box::default());
                }
            }
            entry.unwrap_or(outside)
        }
    }
}

/// Where one input of merge `merge` (a parallel branch, a star stage's
/// exit, a split replica, a feedback loop's outside input) going to
/// `next` sends its records: `next` itself, or, for a merge whose inputs
/// a lost node's replay needs linked (on a node other than 0 of a run
/// that survives a lost node: [`snet_core::Graph::merges_to_link`]), a
/// [`PathLink`] of its own in front of it.
pub(crate) fn merge_input(ctx: &Ctx, merge: NodeId, next: &Arc<Entity>) -> Arc<Entity> {
    if links_inputs(ctx, merge) {
        let e = ctx.stateless_entity(Stateless::Path(PathLink::new(next.clone())));
        e.tag(merge);
        e
    } else {
        next.clone()
    }
}

/// Whether merge `merge`'s inputs are linked here (see [`merge_input`]).
pub(crate) fn links_inputs(ctx: &Ctx, merge: NodeId) -> bool {
    ctx.rt.prog.links[merge.index()] && ctx.rt.net.receives_custody()
}

/// An instance of `template` on node `at` (not this node), whose output
/// comes back to `next`: a remote entity for its entry, and `Open` on its
/// way to `at`, which builds the instance (see [`crate::dist`]).
pub(crate) fn remote_instance(
    ctx: &Ctx,
    at: Rank,
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
    ctx.entity(Kind::Remote(crate::remote::RemoteEntity::new(at, conn)))
}

/// The components of a serial composition, left to right, looking through
/// net boundaries and placements on this node `here` (which are transparent).
fn serial_parts(graph: &Graph, here: Rank, node: NodeId, out: &mut Vec<NodeId>) {
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

/// Where deterministic combinator `comb`'s output going to `next` is
/// sent: `next` itself, or, where a lost node's replay needs the records
/// leaving it linked in their order (a synchrocell inside, on a node
/// other than 0 of a run that survives a lost node:
/// [`snet_core::Graph::det_outputs_to_link`]), a [`PathLink`] in front of
/// it, run under the licence of the entity that orders the output.
fn det_output(ctx: &Ctx, comb: NodeId, next: Arc<Entity>) -> Arc<Entity> {
    if ctx.rt.prog.det_links[comb.index()] && ctx.rt.net.receives_custody() {
        let e = ctx.stateless_entity(Stateless::Path(PathLink::new(next)));
        e.tag(comb);
        e
    } else {
        next
    }
}

/// For a deterministic combinator `comb`: a collector in front of `next`
/// (its output linked if [`det_output`] says so), and the owner state.
fn det_wrap(
    ctx: &Ctx,
    comb: NodeId,
    det: bool,
    next: Arc<Entity>,
) -> (Arc<Entity>, Option<crate::collector::DetOwner>) {
    if !det {
        return (next, None);
    }
    let next = det_output(ctx, comb, next);
    let owner = ctx.rt.new_owner();
    let coll = ctx.entity(Kind::Collector(Collector::new(owner, next)));
    (coll, Some(crate::collector::DetOwner::new(owner)))
}

/// The entity for the network's output.
pub(crate) fn output_entity(ctx: &Ctx, sink: Box<dyn crate::Sink>) -> Arc<Entity> {
    ctx.entity(Kind::Output(OutputEntity::new(sink)))
}
