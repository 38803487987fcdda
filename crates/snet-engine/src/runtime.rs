//! What every entity of a run shares ([`Runtime`]), the entity kinds
//! ([`Kind`]), the small context an entity works in ([`Ctx`]), and the
//! dispatch of one item to its entity ([`process`]).

use snet_core::{Graph, NodeId};

use crate::boxes::{BoxEntity, BoxImpl};
use crate::collector::Collector;
use crate::entity::{Entity, Item};
use crate::feedback::{FeedbackEntry, FeedbackRouter};
use crate::filter::FilterChain;
use crate::output::OutputEntity;
use crate::parallel::{FilterParallel, ParallelEntity};
use crate::program::Program;
use crate::split::{SplitEntity, SplitSync};
use crate::star::{FilterStar, FusedSync, StarEntity};
use crate::sync::{Arc, AtomicU64, Ordering};
use crate::synchro::SyncEntity;
use crate::EngineError;

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
    FilterStar(FilterStar),
    Box(BoxEntity),
    Parallel(ParallelEntity),
    FilterParallel(FilterParallel),
    Star(StarEntity),
    Split(SplitEntity),
    SplitSync(SplitSync),
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

    pub fn entity(&self, kind: Kind) -> Arc<Entity> {
        self.rt.entities.fetch_add(1, Ordering::Relaxed);
        Entity::new(kind)
    }
}

/// Processes one item at an entity whose licence the caller holds.
pub fn process(ent: &Arc<Entity>, item: Item, ctx: &mut Ctx) -> Result<(), EngineError> {
    // SAFETY: the scheduler calls `process` only while it holds `ent`'s licence.
    let state = unsafe { ent.state() };
    let r = match state {
        Kind::Chain(e) => e.process(item, ctx),
        Kind::Sync(e) => e.process(item, ctx),
        Kind::FusedSync(e) => e.process(item, ctx),
        Kind::FilterStar(e) => e.process(item, ctx),
        Kind::Box(e) => e.process(item, ctx, ent),
        Kind::Parallel(e) => e.process(item, ctx),
        Kind::FilterParallel(e) => e.process(item, ctx),
        Kind::Star(e) => e.process(item, ctx),
        Kind::Split(e) => e.process(item, ctx),
        Kind::SplitSync(e) => e.process(item, ctx),
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
mod size_tests {
    use std::mem::size_of;

    /// Items are moved by value through every inbox: above 128 bytes the
    /// moves become `memcpy` calls, which once made the farm benchmark 1.7x
    /// slower. A record entry (label + value) stays 16 bytes for the same
    /// reason (a field handle is one fat pointer with a niche).
    #[test]
    fn hot_types_stay_small() {
        assert_eq!(size_of::<snet_core::Value>(), 16);
        assert!(
            size_of::<crate::entity::Item>() <= 128,
            "{}",
            size_of::<crate::entity::Item>()
        );
        assert!(
            size_of::<super::Kind>() <= 128,
            "{}",
            size_of::<super::Kind>()
        );
    }
}
