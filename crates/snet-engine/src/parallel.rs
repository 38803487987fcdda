//! Parallel composition: `A | B | ...` and the deterministic `A || B || ...`.
//!
//! The dispatcher sends each record to the branch whose input type it matches
//! best (largest matching variant; ties go to the earlier branch). Branches
//! are instantiated on first use, except those holding an initialiser box,
//! which [`instantiate`] creates with the composition. Nondeterministic
//! branches write straight into the downstream entity; deterministic ones
//! into a collector.

use crate::collector::DetOwner;
use crate::entity::{Entity, Item, Marker, Stamps};
use crate::error::{record_type, RuntimeTypeError};
use crate::instantiate::instantiate_at;
use crate::program::ParallelDef;
use crate::runtime::Ctx;
use crate::sync::Arc;
use crate::EngineError;

pub(crate) struct ParallelEntity {
    def: Arc<ParallelDef>,
    branches: Vec<Option<Arc<Entity>>>,
    next: Arc<Entity>,
    /// The sequence counter of a deterministic composition.
    pub det: Option<DetOwner>,
    /// The instance path of the composition (custody only): branch `i`'s
    /// is this and `i` ([`crate::instantiate::instantiate_at`]).
    at: Option<Box<crate::dist::wire::Path>>,
}

impl ParallelEntity {
    /// The branches made so far ([`crate::runtime::Kind::toward_remote`]).
    pub(crate) fn made_branches(&self) -> impl Iterator<Item = &Arc<Entity>> {
        self.branches.iter().flatten()
    }

    pub(crate) fn new(
        def: Arc<ParallelDef>,
        next: Arc<Entity>,
        at: Option<Box<crate::dist::wire::Path>>,
    ) -> ParallelEntity {
        ParallelEntity {
            at,
            branches: vec![None; def.branches.len()],
            def,
            next,
            det: None,
        }
    }

    /// Installs branch `i`, created with the composition.
    pub(crate) fn set_branch(&mut self, i: usize, entry: Arc<Entity>) {
        self.branches[i] = Some(entry);
    }

    /// Branch `i`, created (and started, with start-up stamps `start`) on first use.
    fn branch(&mut self, i: usize, start: &Stamps, ctx: &mut Ctx) -> Arc<Entity> {
        if let Some(b) = &self.branches[i] {
            return b.clone();
        }
        let next = crate::instantiate::merge_input(ctx, self.def.node, &self.next);
        let (at, b) = (self.at.as_deref(), self.def.branches[i]);
        let e = instantiate_at(ctx, at, i as u64, b, next, start);
        ctx.start();
        self.branches[i] = Some(e.clone());
        e
    }

    /// Whether the composition is stateless: not deterministic and every
    /// branch created (see [`crate::entity::Entity::shared_state`]).
    pub(crate) fn is_stateless(&self) -> bool {
        self.det.is_none() && self.branches.iter().all(Option::is_some)
    }

    /// The branch a record takes.
    fn route(&self, r: &crate::entity::Rec, ctx: &Ctx) -> Result<usize, EngineError> {
        let routes = &self.def.routes;
        routes
            .iter()
            .find(|(v, _)| r.rec.matches(v))
            .map(|(_, i)| *i)
            .ok_or_else(|| EngineError::Type {
                error: RuntimeTypeError::NoBranch {
                    record: record_type(&r.rec),
                    accepted: routes.iter().map(|(v, _)| v.clone()).collect(),
                },
                loc: ctx.rt.loc(self.def.node),
            })
    }

    /// A stateless composition's processing (shared: see [`Self::is_stateless`]).
    pub(crate) fn process_shared(&self, item: Item, ctx: &mut Ctx) -> Result<(), EngineError> {
        match item {
            Item::Rec(r) => {
                let i = self.route(&r, ctx)?;
                let target = self.branches[i].as_ref().expect("every branch is created");
                crate::collector::send_in(target, r, None, ctx);
            }
            other => pass_other(None, &self.branches, &self.next, other, ctx),
        }
        Ok(())
    }

    pub(crate) fn process(&mut self, item: Item, ctx: &mut Ctx) -> Result<(), EngineError> {
        match item {
            Item::Rec(mut r) => {
                let i = self.route(&r, ctx)?;
                let marker = self.det.as_mut().map(|d| d.stamp(&mut r));
                let target = self.branch(i, &r.det, ctx);
                crate::collector::send_in(&target, r, marker, ctx);
            }
            other => pass_other(self.det.as_mut(), &self.branches, &self.next, other, ctx),
        }
        Ok(())
    }
}

/// What a dispatcher does with an item other than a record: markers go to
/// the collector or down every instantiated branch, `Resume` passes on.
fn pass_other(
    det: Option<&mut DetOwner>,
    branches: &[Option<Arc<Entity>>],
    next: &Arc<Entity>,
    item: Item,
    ctx: &mut Ctx,
) {
    match item {
        Item::Marker(m) => {
            crate::collector::pass_marker(det, m, branches.iter().flatten(), next, ctx)
        }
        Item::Resume => ctx.send(next, Item::Resume),
        Item::Wake => {}
        Item::Rec(_) => unreachable!("records are routed by the caller"),
    }
}

/// Sends copies of an enclosing owner's marker down every instantiated path
/// (or to `fallback` when there is none): each may hold records it must follow.
pub(crate) fn broadcast<'a>(
    m: Marker,
    paths: impl Iterator<Item = &'a Arc<Entity>> + Clone,
    fallback: &Arc<Entity>,
    ctx: &mut Ctx,
) {
    let n = paths.clone().count();
    if n == 0 {
        ctx.send(fallback, Item::Marker(m));
        return;
    }
    for (copy, p) in m.split(n).zip(paths) {
        ctx.send(p, Item::Marker(copy));
    }
}

/// `A | B | ...` (and `||`) whose branches are all filters (one, or a
/// serial chain each), run as one entity: the record is routed as the
/// dispatcher routes it and the branch's filters are applied in place, so
/// it reaches the next entity in one hop instead of two. Every output of one
/// input leaves while that input is processed, so the entity is FIFO per
/// input and a deterministic composition needs no collector. Markers and
/// `Resume` follow everything ahead of them by passing straight on.
pub(crate) struct FilterParallel {
    def: Arc<ParallelDef>,
    /// Each branch's filters, run as a chain into the next entity.
    branches: Vec<crate::filter::FilterChain>,
    next: Arc<Entity>,
}

impl FilterParallel {
    /// Where this entity sends what it makes ([`crate::runtime::Kind::toward_remote`]).
    pub(crate) fn next(&self) -> &Arc<Entity> {
        &self.next
    }

    pub(crate) fn new(
        rt: &crate::runtime::Runtime,
        def: Arc<ParallelDef>,
        next: Arc<Entity>,
    ) -> FilterParallel {
        let branches = def
            .filters
            .as_ref()
            .expect("a parallel composition of filters")
            .iter()
            .map(|b| crate::filter::FilterChain::new(rt, b, next.clone()))
            .collect();
        FilterParallel {
            def,
            branches,
            next,
        }
    }

    /// Stateless: runs inside its senders' sends (see
    /// [`crate::entity::Entity::shared_state`]).
    pub(crate) fn process(&self, item: Item, ctx: &mut Ctx) -> Result<(), EngineError> {
        let Item::Rec(rec) = item else {
            if !matches!(item, Item::Wake) {
                ctx.send(&self.next, item);
            }
            return Ok(());
        };
        let routes = &self.def.routes;
        let Some(i) = routes
            .iter()
            .find(|(v, _)| rec.rec.matches(v))
            .map(|(_, i)| *i)
        else {
            return Err(EngineError::Type {
                error: RuntimeTypeError::NoBranch {
                    record: record_type(&rec.rec),
                    accepted: routes.iter().map(|(v, _)| v.clone()).collect(),
                },
                loc: ctx.rt.loc(self.def.node),
            });
        };
        self.branches[i].process(Item::Rec(rec), ctx)
    }
}
