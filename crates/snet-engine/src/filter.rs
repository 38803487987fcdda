//! Filters: `[ pattern -> if <g> then {..};{..} else ... ]`.
//!
//! A filter is stateless. For each record it picks the first arm whose guard
//! holds, builds one output record per outspec from the *input* record, and
//! adds to each output the input's labels that the pattern does not name
//! (flow inheritance; labels the outspec sets win).

use snet_core::{FilterDef, NodeId, OutItem, OutSpec, Record, TagValue, Value};

use crate::entity::{Entity, Item, Rec};
use crate::error::{record_type, EvalContext, RuntimeTypeError};
use crate::runtime::Ctx;
use crate::sync::Arc;
use crate::EngineError;

/// The filter entity: one filter, or consecutive filters of a serial
/// composition run as one entity. Each output of filter `i` goes straight
/// into filter `i + 1`, depth first, which is exactly the order separate
/// entities would produce.
pub struct FilterChain {
    /// The filters, each with its template node (for messages).
    filters: smallvec::SmallVec<[(NodeId, Arc<FilterDef>); 2]>,
    next: Arc<Entity>,
}

impl FilterChain {
    pub fn new(rt: &crate::runtime::Runtime, nodes: &[NodeId], next: Arc<Entity>) -> FilterChain {
        FilterChain {
            filters: nodes
                .iter()
                .map(|&n| (n, rt.prog.filter(n).clone()))
                .collect(),
            next,
        }
    }

    pub fn process(&mut self, item: Item, ctx: &mut Ctx) -> Result<(), EngineError> {
        let rec = match item {
            Item::Rec(r) => r,
            other => {
                ctx.send(&self.next, other);
                return Ok(());
            }
        };
        self.stage(0, &rec.rec, &rec.det, ctx)
    }

    fn stage(
        &self,
        i: usize,
        rec: &Record,
        det: &crate::entity::Stamps,
        ctx: &mut Ctx,
    ) -> Result<(), EngineError> {
        let (node, def) = &self.filters[i];
        let node = *node;
        let last = i + 1 == self.filters.len();
        let mut failed = None;
        apply_each(def, rec, |out| {
            if failed.is_some() {
                return;
            }
            if last {
                ctx.send(
                    &self.next,
                    Item::Rec(Rec {
                        rec: out,
                        det: det.clone(),
                    }),
                );
            } else if let Err(e) = self.stage(i + 1, &out, det, ctx) {
                failed = Some(e);
            }
        })
        .map_err(|what| filter_error(what, node, ctx))?;
        failed.map_or(Ok(()), Err)
    }
}

/// The run's error for a filter (template `node`) that failed.
pub fn filter_error(what: FilterError, node: NodeId, ctx: &Ctx) -> EngineError {
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

/// Why a filter could not transform a record.
#[derive(Debug)]
pub enum FilterError {
    Type(RuntimeTypeError),
    Eval(snet_core::EvalError),
}

/// Applies a filter to one record, handing each output to `emit` in order
/// (no intermediate allocation on the hot path).
pub fn apply_each(
    def: &FilterDef,
    rec: &Record,
    mut emit: impl FnMut(Record),
) -> Result<(), FilterError> {
    if !rec.matches(&def.pattern) {
        return Err(FilterError::Type(RuntimeTypeError::FilterPattern {
            pattern: def.pattern.clone(),
            record: record_type(rec),
        }));
    }
    let mut arm = None;
    for a in &def.arms {
        match &a.guard {
            None => {
                arm = Some(a);
                break;
            }
            Some(g) => {
                if g.holds(rec).map_err(FilterError::Eval)? {
                    arm = Some(a);
                    break;
                }
            }
        }
    }
    let Some(arm) = arm else { return Ok(()) };
    if let [spec] = arm.outputs.as_slice() {
        emit(build(spec, rec, &def.pattern)?);
        return Ok(());
    }
    // Evaluate every outspec before emitting any, so that an error emits nothing.
    let mut outs: smallvec::SmallVec<[Record; 2]> = smallvec::SmallVec::new();
    for spec in &arm.outputs {
        outs.push(build(spec, rec, &def.pattern)?);
    }
    for out in outs {
        emit(out);
    }
    Ok(())
}

/// One output record of an outspec, with the flow-inherited labels.
fn build(
    spec: &OutSpec,
    rec: &Record,
    pattern: &snet_core::Variant,
) -> Result<Record, FilterError> {
    let mut out = Record::new();
    for item in &spec.items {
        match item {
            OutItem::Field { dst, src } => {
                let v = rec.get(*src).ok_or_else(|| {
                    FilterError::Type(RuntimeTypeError::FilterMissingField {
                        field: *src,
                        record: record_type(rec),
                    })
                })?;
                out.set(*dst, v.clone());
            }
            OutItem::Tag {
                dst,
                value: TagValue::Copy,
            } => {
                let v = rec.int(*dst).unwrap_or(0);
                out.set(*dst, Value::Int(v));
            }
            OutItem::Tag {
                dst,
                value: TagValue::Expr(e),
            } => {
                let v = e.eval(rec).map_err(FilterError::Eval)?;
                out.set(*dst, Value::Int(v));
            }
        }
    }
    out.inherit(rec, pattern);
    Ok(out)
}
