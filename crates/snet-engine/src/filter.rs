//! Filters: `[ pattern -> if <g> then {..};{..} else ... ]`.
//!
//! A filter is stateless. For each record it picks the first arm whose guard
//! holds, builds one output record per outspec from the *input* record, and
//! adds to each output the input's labels that the pattern does not name
//! (flow inheritance; labels the outspec sets win).

use snet_core::{FilterDef, NodeId, NodeKind, OutItem, Record, TagValue, Value};

use crate::entity::{Entity, Item, Rec};
use crate::instantiate::Ctx;
use crate::sync::Arc;
use crate::EngineError;

pub struct FilterEntity {
    node: NodeId,
    next: Arc<Entity>,
}

impl FilterEntity {
    pub fn new(node: NodeId, next: Arc<Entity>) -> FilterEntity {
        FilterEntity { node, next }
    }

    pub fn process(&mut self, item: Item, ctx: &mut Ctx) -> Result<(), EngineError> {
        let rec = match item {
            Item::Rec(r) => r,
            other => {
                ctx.send(&self.next, other);
                return Ok(());
            }
        };
        let NodeKind::Filter(def) = &ctx.rt.graph().node(self.node).kind else { unreachable!("filter entity on a non-filter node") };
        let outs = apply(def, &rec.rec).map_err(|what| match what {
            FilterError::Type(what) => EngineError::Type { what, loc: ctx.rt.loc(self.node) },
            FilterError::Eval(e) => EngineError::Eval { what: format!("filter: {e}"), loc: ctx.rt.loc(self.node) },
        })?;
        let n = outs.len();
        let mut det = Some(rec.det);
        for (i, out) in outs.into_iter().enumerate() {
            let stamps = if i + 1 == n { det.take().unwrap_or_default() } else { det.clone().unwrap_or_default() };
            ctx.send(&self.next, Item::Rec(Rec { rec: out, det: stamps }));
        }
        Ok(())
    }
}

/// Why a filter could not transform a record.
#[derive(Debug)]
pub enum FilterError {
    Type(String),
    Eval(snet_core::EvalError),
}

/// Applies a filter to one record (shared with tests and other layers).
pub fn apply(def: &FilterDef, rec: &Record) -> Result<Vec<Record>, FilterError> {
    if !rec.matches(&def.pattern) {
        return Err(FilterError::Type(format!(
            "filter for {} received record {}",
            def.pattern,
            rec.type_string()
        )));
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
    let Some(arm) = arm else { return Ok(Vec::new()) };
    let mut outs = Vec::with_capacity(arm.outputs.len());
    for spec in &arm.outputs {
        let mut out = Record::with_capacity(spec.items.len() + rec.len());
        for item in &spec.items {
            match item {
                OutItem::Field { dst, src } => {
                    let v = rec.get(*src).ok_or_else(|| {
                        FilterError::Type(format!("filter needs field {src}, record {} has none", rec.type_string()))
                    })?;
                    out.set(*dst, v.clone());
                }
                OutItem::Tag { dst, value: TagValue::Copy } => {
                    let v = rec.int(*dst).unwrap_or(0);
                    out.set(*dst, Value::Int(v));
                }
                OutItem::Tag { dst, value: TagValue::Expr(e) } => {
                    let v = e.eval(rec).map_err(FilterError::Eval)?;
                    out.set(*dst, Value::Int(v));
                }
            }
        }
        out.inherit(rec, &def.pattern);
        outs.push(out);
    }
    Ok(outs)
}
