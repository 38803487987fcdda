//! Filters: `[ pattern -> if <g> then {..};{..} else ... ]`.
//!
//! A filter is stateless. For each record it picks the first arm whose guard
//! holds, builds one output record per outspec from the *input* record, and
//! adds to each output the input's labels that the pattern does not name
//! (flow inheritance; labels the outspec sets win).
//!
//! This module is the filter entity, [`FilterChain`]; the filter compiler
//! (a filter definition made into the [`Filter`] the entity and the
//! filters-only star apply) is [`compile`].
//!
//! The entity imports the runtime's [`Ctx`] (to send its outputs and name
//! the failing template in an error) and [`crate::entity`]'s items, as every
//! entity module does: entities are called through the `Kind` dispatch in
//! [`crate::runtime`], which in turn names each entity's type.

use snet_core::{NodeId, Record};

use crate::entity::{Entity, Item, Rec};
use crate::error::EvalContext;
use crate::runtime::Ctx;
use crate::sync::Arc;
use crate::EngineError;

mod compile;

#[cfg(fuzzing)]
pub use compile::fuzz_apply;
pub(crate) use compile::{Filter, FilterError, InPlace};

/// The filter entity: one filter, or consecutive filters of a serial
/// composition run as one entity. Each output of filter `i` goes straight
/// into filter `i + 1`, depth first, which is exactly the order separate
/// entities would produce.
pub(crate) struct FilterChain {
    /// The filters, each with its template node (for messages).
    filters: smallvec::SmallVec<[(NodeId, Arc<Filter>); 2]>,
    next: Arc<Entity>,
}

impl FilterChain {
    /// Where this entity sends what it makes ([`crate::runtime::Kind::toward_remote`]).
    pub(crate) fn next(&self) -> &Arc<Entity> {
        &self.next
    }

    pub(crate) fn new(
        rt: &crate::runtime::Runtime,
        nodes: &[NodeId],
        next: Arc<Entity>,
    ) -> FilterChain {
        let filters = nodes
            .iter()
            .map(|&n| (n, rt.prog.filter(n).clone()))
            .collect();
        FilterChain { filters, next }
    }

    #[inline]
    pub(crate) fn process(&self, item: Item, ctx: &mut Ctx) -> Result<(), EngineError> {
        let rec = match item {
            Item::Rec(r) => r,
            other => {
                ctx.send(&self.next, other);
                return Ok(());
            }
        };
        let Rec { rec, det, origin } = rec;
        self.stage(0, rec, &det, origin, ctx)
    }

    fn stage(
        &self,
        mut i: usize,
        mut rec: Record,
        det: &crate::entity::Stamps,
        origin: crate::entity::Origin,
        ctx: &mut Ctx,
    ) -> Result<(), EngineError> {
        // One-to-one filters change the record in turn: a loop, not a
        // recursion through the emitting closure.
        while let Some((node, filter)) = self.filters.get(i).filter(|(_, f)| f.one_to_one) {
            // The bump form first, here: inside `apply_in_place` (not
            // inlined) it costs a call per filter (pipeline: 67 → 77 M
            // instructions for 20,000 records through ten filters).
            if filter.bump_fast(&mut rec).is_some() {
                i += 1;
                continue;
            }
            match filter.apply_in_place(&mut rec) {
                Ok(InPlace::Done) => i += 1,
                Ok(InPlace::Nothing | InPlace::Several) => {
                    unreachable!("a one-to-one filter has one unguarded outspec")
                }
                Err(what) => return Err(filter_error(what, *node, ctx)),
            }
        }
        if i == self.filters.len() {
            ctx.send(
                &self.next,
                Item::Rec(Rec {
                    rec,
                    det: det.clone(),
                    origin,
                }),
            );
            return Ok(());
        }
        let (node, filter) = &self.filters[i];
        let node = *node;
        let last = i + 1 == self.filters.len();
        let mut failed = None;
        let mut emit = |out: Record, ctx: &mut Ctx| {
            if failed.is_some() {
                return;
            }
            if last {
                ctx.send(
                    &self.next,
                    Item::Rec(Rec {
                        rec: out,
                        det: det.clone(),
                        origin,
                    }),
                );
            } else if let Err(e) = self.stage(i + 1, out, det, origin, ctx) {
                failed = Some(e);
            }
        };
        // One output: the record itself is turned into it (no new record,
        // no copy of the inherited labels, nothing to drop).
        match filter.apply_in_place(&mut rec) {
            Ok(InPlace::Done) => {
                emit(rec, ctx);
                return failed.map_or(Ok(()), Err);
            }
            Ok(InPlace::Nothing) => return Ok(()),
            Ok(InPlace::Several) => {}
            Err(what) => return Err(filter_error(what, node, ctx)),
        }
        filter
            .apply_owned(rec, |out| emit(out, ctx))
            .map_err(|what| filter_error(what, node, ctx))?;
        failed.map_or(Ok(()), Err)
    }
}

/// The run's error for a filter (template `node`) that failed.
pub(crate) fn filter_error(what: FilterError, node: NodeId, ctx: &Ctx) -> EngineError {
    match what {
        FilterError::Type(error) => EngineError::Type {
            error,
            loc: ctx.rt.loc(node),
        },
        FilterError::Eval(error) => EngineError::Eval {
            error,
            context: EvalContext::Filter,
            loc: ctx.rt.loc(node),
        },
    }
}
