//! Filters: `[ pattern -> if <g> then {..};{..} else ... ]`.
//!
//! A filter is stateless. For each record it picks the first arm whose guard
//! holds, builds one output record per outspec from the *input* record, and
//! adds to each output the input's labels that the pattern does not name
//! (flow inheritance; labels the outspec sets win).

use snet_core::{FilterArm, FilterDef, NodeId, OutItem, OutSpec, Record, TagValue, Value};

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
    /// Per filter: it has one arm, no guard and one outspec, so it turns
    /// every record it accepts into exactly one output, in place.
    one_to_one: smallvec::SmallVec<[bool; 2]>,
    next: Arc<Entity>,
}

impl FilterChain {
    pub fn new(rt: &crate::runtime::Runtime, nodes: &[NodeId], next: Arc<Entity>) -> FilterChain {
        let filters: smallvec::SmallVec<[(NodeId, Arc<FilterDef>); 2]> = nodes
            .iter()
            .map(|&n| (n, rt.prog.filter(n).clone()))
            .collect();
        let one_to_one = filters
            .iter()
            .map(|(_, def)| {
                matches!(def.arms.as_slice(), [arm] if arm.guard.is_none() && arm.outputs.len() == 1)
            })
            .collect();
        FilterChain {
            filters,
            one_to_one,
            next,
        }
    }

    pub fn process(&self, item: Item, ctx: &mut Ctx) -> Result<(), EngineError> {
        let rec = match item {
            Item::Rec(r) => r,
            other => {
                ctx.send(&self.next, other);
                return Ok(());
            }
        };
        let Rec { rec, det } = rec;
        self.stage(0, rec, &det, ctx)
    }

    fn stage(
        &self,
        mut i: usize,
        mut rec: Record,
        det: &crate::entity::Stamps,
        ctx: &mut Ctx,
    ) -> Result<(), EngineError> {
        // One-to-one filters change the record in turn: a loop, not a
        // recursion through the emitting closure.
        while self.one_to_one.get(i) == Some(&true) {
            let (node, def) = &self.filters[i];
            match apply_in_place(def, &mut rec) {
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
                }),
            );
            return Ok(());
        }
        let (node, def) = &self.filters[i];
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
                    }),
                );
            } else if let Err(e) = self.stage(i + 1, out, det, ctx) {
                failed = Some(e);
            }
        };
        // One output: the record itself is turned into it (no new record,
        // no copy of the inherited labels, nothing to drop).
        match apply_in_place(def, &mut rec) {
            Ok(InPlace::Done) => {
                emit(rec, ctx);
                return failed.map_or(Ok(()), Err);
            }
            Ok(InPlace::Nothing) => return Ok(()),
            Ok(InPlace::Several) => {}
            Err(what) => return Err(filter_error(what, node, ctx)),
        }
        apply_each(def, &rec, |out| emit(out, ctx))
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

/// The label and value an outspec item gives `rec`.
#[inline]
fn item_value(item: &OutItem, rec: &Record) -> Result<(snet_core::Label, Value), FilterError> {
    Ok(match item {
        OutItem::Field { dst, src } => {
            let v = rec.get(*src).ok_or_else(|| {
                FilterError::Type(RuntimeTypeError::FilterMissingField {
                    field: *src,
                    record: record_type(rec),
                })
            })?;
            (*dst, v.clone())
        }
        OutItem::Tag {
            dst,
            value: TagValue::Copy,
        } => (*dst, Value::Int(rec.int(*dst).unwrap_or(0))),
        OutItem::Tag {
            dst,
            value: TagValue::Expr(e),
        } => (*dst, Value::Int(e.eval(rec).map_err(FilterError::Eval)?)),
    })
}

/// What [`apply_in_place`] did.
enum InPlace {
    /// The record is now the filter's one output.
    Done,
    /// No arm's guard holds: no output.
    Nothing,
    /// The arm has several outspecs (the record is unchanged): use [`apply_each`].
    Several,
}

/// Applies a filter whose chosen arm has one outspec by changing the record
/// into the output [`build`] would make: every value of the outspec is
/// computed from the input first, then the pattern's labels that the
/// outspec does not set are removed and the outspec's values set (the
/// other labels stay: flow inheritance; set labels win). Errors as
/// [`apply_each`] reports them, in the same order, the record untouched.
fn apply_in_place(def: &FilterDef, rec: &mut Record) -> Result<InPlace, FilterError> {
    let arm = choose_arm(def, rec)?;
    let Some(arm) = arm else {
        return Ok(InPlace::Nothing);
    };
    let [spec] = arm.outputs.as_slice() else {
        return Ok(InPlace::Several);
    };
    if let [item] = spec.items.as_slice() {
        // The common case, without collecting the values first.
        let (dst, v) = item_value(item, rec)?;
        for &l in def.pattern.labels() {
            if l != dst {
                rec.remove(l);
            }
        }
        rec.set(dst, v);
        return Ok(InPlace::Done);
    }
    let mut values: smallvec::SmallVec<[(snet_core::Label, Value); 4]> = smallvec::SmallVec::new();
    for item in &spec.items {
        values.push(item_value(item, rec)?);
    }
    for &l in def.pattern.labels() {
        if !values.iter().any(|(d, _)| *d == l) {
            rec.remove(l);
        }
    }
    for (dst, v) in values {
        rec.set(dst, v);
    }
    Ok(InPlace::Done)
}

/// The arm a record takes: the first whose guard holds (`None`: none
/// does), after checking that the record matches the pattern.
fn choose_arm<'a>(def: &'a FilterDef, rec: &Record) -> Result<Option<&'a FilterArm>, FilterError> {
    if !rec.matches(&def.pattern) {
        return Err(FilterError::Type(RuntimeTypeError::FilterPattern {
            pattern: def.pattern.clone(),
            record: record_type(rec),
        }));
    }
    for a in &def.arms {
        match &a.guard {
            None => return Ok(Some(a)),
            Some(g) => {
                if g.holds(rec).map_err(FilterError::Eval)? {
                    return Ok(Some(a));
                }
            }
        }
    }
    Ok(None)
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
    let arm = choose_arm(def, rec)?;
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
        let (dst, v) = item_value(item, rec)?;
        out.set(dst, v);
    }
    out.inherit(rec, pattern);
    Ok(out)
}
