//! The filter compiler: a filter definition made into a [`Filter`], one
//! per filter template (built by `Program`), with its hot paths (compiled
//! outspecs, bound guards, tags-only arithmetic, the in-place and bump
//! forms) and the general path they must agree with (checked by the
//! differential tests in `compile_tests.rs`).

use smallvec::SmallVec;
use snet_core::{
    Expr, FilterArm, FilterDef, Label, OutItem, OutSpec, Record, Slots, TagValue, Value, Variant,
};

use crate::error::{record_type, RuntimeTypeError};

/// A filter compiled for the hot paths: per outspec, the order its items
/// take in a record, the pattern labels it drops, and whether it only
/// gives the input's own tags new values; its expressions bound to the
/// positions of the pattern's labels, for inputs that carry exactly the
/// pattern's labels (then every label's position is known: nothing is
/// looked up).
///
/// The fast paths compute exactly what [`apply_each_general`] and
/// [`apply_in_place_general`] compute, but report no errors: where anything
/// fails (a record that does not match the pattern, a missing label, a
/// division by zero) they give up before changing anything, and the general
/// path runs again to report the error as it always did, in the same
/// order. So the hot path carries no error values, and errors keep one
/// definition.
pub(crate) struct Filter {
    pub def: FilterDef,
    /// Per arm, per outspec.
    outs: Vec<Vec<Out>>,
    /// Per arm: its guard bound to the pattern's positions (`None`: no
    /// guard, or one that cannot be bound).
    guards: Vec<Option<Slots>>,
    /// One arm, no guard and one outspec: every record it accepts becomes
    /// exactly one output, in place.
    pub one_to_one: bool,
    /// `[{<t>} -> {<t = t op c>}]`: `t`, `op`, `c`.
    bump: Option<(Label, snet_core::BinOp, i64)>,
    /// The filter on records of tags only that carry exactly the
    /// pattern's labels, as integer arithmetic (see [`Tags`]).
    tags: Option<Tags>,
}

/// Most filters of control networks (recursions, counters, routing keys)
/// see records of tags only, exactly the pattern's labels: then the input
/// is a few integers at known positions, every guard and value is
/// integer arithmetic on them, and each output's labels are known in
/// advance. Used when every guard and value binds to the pattern's
/// positions and every outspec item is a tag.
struct Tags {
    /// Per arm, per outspec: its labels in order, each with its value.
    /// (The guards are the filter's: [`Tags::new`] requires every one of
    /// them bound.)
    outs: Vec<Vec<TagOut>>,
}

/// One outspec of [`Tags`]: its labels in order, each with its value.
type TagOut = SmallVec<[(Label, TagSrc); 4]>;

/// Where an output tag's value comes from.
#[derive(Copy, Clone)]
enum TagSrc {
    /// The input's tag at this position (`<t>` of a pattern label).
    Slot(u8),
    /// `<t>` of a tag the input lacks.
    Zero,
    Expr(Slots),
}

/// Pattern labels at most, for [`Tags`].
const TAGS_MAX: usize = 8;

impl Tags {
    /// From the filter's guards and outspecs as [`Filter::new`] bound
    /// them; `None` unless every guard and every value is bound.
    fn new(def: &FilterDef, guards: &[Option<Slots>], outs: &[Vec<Out>]) -> Option<Tags> {
        let labels = def.pattern.labels();
        if labels.len() > TAGS_MAX
            || labels
                .iter()
                .any(|l| l.kind() == snet_core::LabelKind::Field)
            || def
                .arms
                .iter()
                .zip(guards)
                .any(|(arm, g)| arm.guard.is_some() && g.is_none())
        {
            return None;
        }
        let mut tag_outs = Vec::new();
        for (arm, arm_outs) in def.arms.iter().zip(outs) {
            let mut specs = Vec::new();
            for (spec, out) in arm.outputs.iter().zip(arm_outs) {
                let mut items: TagOut = SmallVec::new();
                for (item, bound) in spec.items.iter().zip(&out.bound) {
                    let OutItem::Tag { dst, value } = item else {
                        return None;
                    };
                    let src = match value {
                        TagValue::Copy => match labels.iter().position(|l| l == dst) {
                            Some(i) => TagSrc::Slot(i as u8),
                            None => TagSrc::Zero,
                        },
                        TagValue::Expr(_) => TagSrc::Expr((*bound)?),
                    };
                    items.push((*dst, src));
                }
                items.sort_by_key(|(l, _)| *l);
                if items.windows(2).any(|w| w[0].0 == w[1].0) {
                    return None;
                }
                specs.push(items);
            }
            tag_outs.push(specs);
        }
        Some(Tags { outs: tag_outs })
    }

    /// The input's integers if `rec` carries exactly `labels`, all tags.
    #[inline(always)]
    fn ints(rec: &Record, labels: &[Label]) -> Option<[i64; TAGS_MAX]> {
        let entries = rec.entries();
        if entries.len() != labels.len() {
            return None;
        }
        let mut ints = [0i64; TAGS_MAX];
        for ((i, (l, v)), want) in entries.iter().enumerate().zip(labels) {
            match v {
                Value::Int(x) if l == want => ints[i] = *x,
                _ => return None,
            }
        }
        Some(ints)
    }

    /// The arm the input takes (`None` inside: no guard holds), or `None`
    /// if a guard cannot be evaluated; `guards` are the filter's.
    #[inline]
    fn arm(guards: &[Option<Slots>], ints: &[i64]) -> Option<Option<usize>> {
        for (i, g) in guards.iter().enumerate() {
            match g {
                None => return Some(Some(i)),
                Some(g) => {
                    if g.eval_ints(ints)? != 0 {
                        return Some(Some(i));
                    }
                }
            }
        }
        Some(None)
    }

    /// Every output value of `arm`, in order, onto `out`; `None` if one
    /// cannot be computed.
    #[inline]
    fn values(&self, arm: usize, ints: &[i64], out: &mut SmallVec<[i64; 8]>) -> Option<()> {
        for spec in &self.outs[arm] {
            for (_, src) in spec {
                out.push(match src {
                    TagSrc::Slot(i) => ints[*i as usize],
                    TagSrc::Zero => 0,
                    TagSrc::Expr(e) => e.eval_ints(ints)?,
                });
            }
        }
        Some(())
    }

    /// Output `k` of `arm` from its values.
    #[inline]
    fn build(&self, arm: usize, k: usize, vals: &[i64]) -> Record {
        Record::from_sorted(
            self.outs[arm][k]
                .iter()
                .zip(vals)
                .map(|((l, _), v)| (*l, Value::Int(*v))),
        )
    }
}

/// How one outspec is built.
struct Out {
    /// Item indices in label order (`None`: the outspec names a label
    /// twice, and the general path, where the last wins, builds it).
    order: Option<SmallVec<[u8; 4]>>,
    /// The outspec names exactly the pattern's labels, all of them tags:
    /// the output is the input with some tags given new values.
    retag: bool,
    /// Pattern labels the outspec does not set (an output made in place
    /// loses them).
    drop: SmallVec<[Label; 2]>,
    /// A retag of one tag by `<t = t op c>`: `t`, `op`, `c`.
    bump: Option<(Label, snet_core::BinOp, i64)>,
    /// How many values [`Filter::values_fast`] computes for it.
    values: usize,
    /// Per item: its expression bound to the pattern's positions, if it
    /// has one that can be bound.
    bound: SmallVec<[Option<Slots>; 4]>,
    /// Per item: the position of its label in the pattern (meaningful for
    /// a retag, whose labels are the pattern's).
    slot: SmallVec<[u8; 4]>,
    /// Per item: it names a pattern label and keeps its value (`<t>`, `f`
    /// of a pattern label, named once in the outspec): a record changed in
    /// place keeps that entry as it is.
    same: SmallVec<[bool; 4]>,
}

/// The item's label.
fn item_dst(item: &OutItem) -> Label {
    match item {
        OutItem::Field { dst, .. } | OutItem::Tag { dst, .. } => *dst,
    }
}

/// The item's expression, if it computes one.
fn item_expr(item: &OutItem) -> Option<&Expr> {
    match item {
        OutItem::Tag {
            value: TagValue::Expr(e),
            ..
        } => Some(e),
        _ => None,
    }
}

impl Out {
    fn new(spec: &OutSpec, pattern: &Variant) -> Out {
        let mut labels: SmallVec<[Label; 4]> = spec.items.iter().map(item_dst).collect();
        let mut order: SmallVec<[u8; 4]> = (0..spec.items.len() as u8).collect();
        order.sort_by_key(|&k| labels[k as usize]);
        labels.sort_unstable();
        let distinct = labels.windows(2).all(|w| w[0] != w[1]) && spec.items.len() <= 255;
        let retag = distinct
            && labels.as_slice() == pattern.labels()
            && spec.items.iter().all(|i| matches!(i, OutItem::Tag { .. }));
        let bump = match spec.items.as_slice() {
            [OutItem::Tag {
                dst,
                value: TagValue::Expr(e),
            }] if retag => e.label_op_const().filter(|(l, ..)| l == dst),
            _ => None,
        };
        let values = if retag {
            spec.items.iter().filter_map(item_expr).count()
        } else {
            spec.items.len()
        };
        let same = spec
            .items
            .iter()
            .map(|i| match i {
                OutItem::Tag {
                    dst,
                    value: TagValue::Copy,
                } => pattern.contains(*dst),
                OutItem::Field { dst, src } => dst == src && pattern.contains(*dst),
                OutItem::Tag { .. } => false,
            })
            // A label named twice: the last item wins (the general path).
            .map(|same| same && distinct)
            .collect();
        Out {
            same,
            values,
            bump,
            order: distinct.then_some(order),
            retag,
            drop: pattern
                .labels()
                .iter()
                .copied()
                .filter(|l| !labels.contains(l))
                .collect(),
            bound: spec
                .items
                .iter()
                .map(|i| item_expr(i).and_then(|e| e.bind(pattern.labels())))
                .collect(),
            slot: spec
                .items
                .iter()
                .map(|i| {
                    let d = item_dst(i);
                    pattern.labels().iter().position(|l| *l == d).unwrap_or(0) as u8
                })
                .collect(),
        }
    }
}

/// `<t = t op c>` on a record that carries `t`: `t` changed where it
/// stands; `None`, with the record untouched, if `t` is missing or the
/// value cannot be computed.
#[inline(always)]
fn bump_tag(rec: &mut Record, (t, op, c): (Label, snet_core::BinOp, i64)) -> Option<()> {
    let v = rec.int_mut(t)?;
    *v = op.apply(*v, c)?;
    Some(())
}

/// An expression's value, through its bound form when the record carries
/// exactly the pattern's labels (`exact`); `None` if it cannot be computed.
#[inline]
fn eval(e: &Expr, bound: Option<&Slots>, rec: &Record, exact: bool) -> Option<i64> {
    match bound {
        Some(b) if exact => b.eval(rec.entries()),
        _ => e.eval_fast(rec),
    }
}

/// An item's value, `None` if it cannot be computed (the general path
/// says why).
// (Always, as `Filter::arm_fast`: left to the compiler it was inlined
// into `Filter::values_fast` or not as the crate's codegen units fell,
// 6.3 M of a single-node soak's 377 M when not.)
#[inline(always)]
fn item_value_fast(
    item: &OutItem,
    bound: Option<&Slots>,
    rec: &Record,
    exact: bool,
) -> Option<Value> {
    match item {
        OutItem::Field { src, .. } => rec.get(*src).cloned(),
        OutItem::Tag {
            dst,
            value: TagValue::Copy,
        } => Some(Value::Int(rec.int(*dst).unwrap_or(0))),
        OutItem::Tag {
            value: TagValue::Expr(e),
            ..
        } => eval(e, bound, rec, exact).map(Value::Int),
    }
}

impl Filter {
    pub(crate) fn new(def: FilterDef) -> Filter {
        let outs: Vec<Vec<Out>> = def
            .arms
            .iter()
            .map(|arm| {
                arm.outputs
                    .iter()
                    .map(|spec| Out::new(spec, &def.pattern))
                    .collect()
            })
            .collect();
        let guards: Vec<Option<Slots>> = def
            .arms
            .iter()
            .map(|a| a.guard.as_ref().and_then(|g| g.bind(def.pattern.labels())))
            .collect();
        let one_to_one = matches!(def.arms.as_slice(),
            [arm] if arm.guard.is_none() && arm.outputs.len() == 1);
        let bump = if one_to_one { outs[0][0].bump } else { None };
        let tags = Tags::new(&def, &guards, &outs);
        Filter {
            tags,
            def,
            outs,
            guards,
            one_to_one,
            bump,
        }
    }

    /// A one-to-one filter `[{<t>} -> {<t = t op c>}]` applied to `rec`
    /// in place: `None`, with `rec` untouched, if the filter is not of
    /// that form, or the record does not match or the value cannot be
    /// computed (then [`Filter::apply_in_place`] says why).
    #[inline]
    pub(super) fn bump_fast(&self, rec: &mut Record) -> Option<()> {
        let bump = self.bump?;
        // The pattern is `{<t>}`: the record matches if it has `t` and no
        // other binding tag.
        if !rec.btags_within(bump.0) {
            return None;
        }
        bump_tag(rec, bump)
    }

    /// The arm `rec` takes (`None` inside: no guard holds) and whether
    /// `rec` carries exactly the pattern's labels; `None` if the record
    /// does not match or a guard cannot be evaluated.
    // (Always: whether it was inlined into `apply_owned` moved with the
    // crate's partition into codegen units, 2 % of a single-node soak's
    // instructions when it was not.)
    #[inline(always)]
    fn arm_fast(&self, rec: &Record) -> Option<(Option<usize>, bool)> {
        if !rec.matches(&self.def.pattern) {
            return None;
        }
        // It carries every pattern label: exactly those if no more.
        let exact = rec.len() == self.def.pattern.len();
        for (i, a) in self.def.arms.iter().enumerate() {
            match &a.guard {
                None => return Some((Some(i), exact)),
                Some(g) => {
                    if eval(g, self.guards[i].as_ref(), rec, exact)? != 0 {
                        return Some((Some(i), exact));
                    }
                }
            }
        }
        Some((None, exact))
    }

    /// Turns `rec` (which matches the pattern) into the one output of
    /// `spec`; `None`, with `rec` untouched, if a value cannot be computed.
    #[inline]
    fn in_place_fast(out: &Out, spec: &OutSpec, rec: &mut Record, exact: bool) -> Option<()> {
        if let Some(bump) = out.bump {
            return bump_tag(rec, bump);
        }
        if out.retag {
            // Same labels: only the computed tags change (a copied tag
            // keeps its value).
            let mut values: SmallVec<[(usize, i64); 4]> = SmallVec::new();
            for (k, item) in spec.items.iter().enumerate() {
                if let Some(e) = item_expr(item) {
                    values.push((k, eval(e, out.bound[k].as_ref(), rec, exact)?));
                }
            }
            for (k, v) in values {
                if exact {
                    rec.set_value_at(out.slot[k] as usize, Value::Int(v));
                } else {
                    rec.set_int(item_dst(&spec.items[k]), v);
                }
            }
            return Some(());
        }
        if exact {
            if let Some(order) = &out.order {
                // Nothing is inherited: the output is the outspec's items
                // alone, built in label order.
                let mut values: SmallVec<[Value; 4]> = SmallVec::new();
                for (k, item) in spec.items.iter().enumerate() {
                    values.push(item_value_fast(item, out.bound[k].as_ref(), rec, exact)?);
                }
                rec.refill_sorted(order.iter().map(|&k| {
                    let k = k as usize;
                    let v = std::mem::replace(&mut values[k], Value::Int(0));
                    (item_dst(&spec.items[k]), v)
                }));
                return Some(());
            }
        }
        if out.order.is_some() {
            // Each label named once, so the sets may go in any order: tag
            // values stay integers until they are set, fields are values.
            let mut ints: SmallVec<[(Label, i64); 4]> = SmallVec::new();
            let mut fields: SmallVec<[(Label, Value); 2]> = SmallVec::new();
            for (k, item) in spec.items.iter().enumerate() {
                if out.same[k] {
                    // The record already has this entry with this value.
                    continue;
                }
                match item {
                    OutItem::Tag {
                        dst,
                        value: TagValue::Copy,
                    } => ints.push((*dst, rec.int(*dst).unwrap_or(0))),
                    OutItem::Tag {
                        dst,
                        value: TagValue::Expr(e),
                    } => ints.push((*dst, eval(e, out.bound[k].as_ref(), rec, exact)?)),
                    OutItem::Field { dst, src } => fields.push((*dst, rec.get(*src)?.clone())),
                }
            }
            for &l in &out.drop {
                rec.discard(l);
            }
            for (dst, v) in ints {
                rec.set_int(dst, v);
            }
            for (dst, v) in fields {
                rec.set(dst, v);
            }
            return Some(());
        }
        let mut values: SmallVec<[(Label, Value); 4]> = SmallVec::new();
        for (k, item) in spec.items.iter().enumerate() {
            let v = item_value_fast(item, out.bound[k].as_ref(), rec, exact)?;
            values.push((item_dst(item), v));
        }
        for &l in &out.drop {
            rec.discard(l);
        }
        for (dst, v) in values {
            rec.set(dst, v);
        }
        Some(())
    }

    /// Computes the values `spec` needs (for a retag, those of its
    /// expressions; else every item's), in item order, onto `vals`;
    /// `None` if one cannot be computed or the general path must build
    /// this outspec.
    #[inline]
    fn values_fast(
        out: &Out,
        spec: &OutSpec,
        rec: &Record,
        exact: bool,
        vals: &mut SmallVec<[Value; 8]>,
    ) -> Option<()> {
        if out.retag {
            for (k, item) in spec.items.iter().enumerate() {
                if let Some(e) = item_expr(item) {
                    vals.push(Value::Int(eval(e, out.bound[k].as_ref(), rec, exact)?));
                }
            }
        } else {
            out.order.as_ref()?;
            for (k, item) in spec.items.iter().enumerate() {
                vals.push(item_value_fast(item, out.bound[k].as_ref(), rec, exact)?);
            }
        }
        Some(())
    }

    /// The output of `spec` for `rec` (which matches the pattern), from
    /// the values [`Filter::values_fast`] computed (taken out of `vals`);
    /// a retag changes `own` if given (the input, no longer in `rec`)
    /// instead of a copy of `rec`.
    #[inline]
    fn assemble(
        &self,
        out: &Out,
        spec: &OutSpec,
        rec: &Record,
        own: Option<Record>,
        exact: bool,
        vals: &mut [Value],
    ) -> Record {
        let take = |v: &mut Value| std::mem::replace(v, Value::Int(0));
        if out.retag {
            // `own`: the input itself, taken out of `rec`.
            let mut r = own.unwrap_or_else(|| rec.clone());
            let exprs = spec
                .items
                .iter()
                .enumerate()
                .filter(|(_, item)| item_expr(item).is_some());
            for ((k, item), v) in exprs.zip(vals.iter_mut()) {
                if exact {
                    r.set_value_at(out.slot[k] as usize, take(v));
                } else {
                    r.set(item_dst(item), take(v));
                }
            }
            return r;
        }
        let mut r = Record::new();
        if let Some(order) = &out.order {
            for &k in order {
                let k = k as usize;
                r.push_sorted(item_dst(&spec.items[k]), take(&mut vals[k]));
            }
        }
        if !exact {
            r.inherit(rec, &self.def.pattern);
        }
        r
    }

    /// Applies the filter in place when the chosen arm has one outspec
    /// (see [`apply_in_place_general`]).
    #[inline]
    pub(crate) fn apply_in_place(&self, rec: &mut Record) -> Result<InPlace, FilterError> {
        if let Some(tags) = &self.tags {
            if let Some(ints) = Tags::ints(rec, self.def.pattern.labels()) {
                let n = self.def.pattern.len();
                match Tags::arm(&self.guards, &ints[..n]) {
                    Some(None) => return Ok(InPlace::Nothing),
                    Some(Some(a)) => {
                        if tags.outs[a].len() != 1 {
                            return Ok(InPlace::Several);
                        }
                        let mut vals = SmallVec::new();
                        if tags.values(a, &ints[..n], &mut vals).is_some() {
                            let labels = tags.outs[a][0].iter().map(|(l, _)| *l);
                            rec.refill_sorted(labels.zip(&vals).map(|(l, v)| (l, Value::Int(*v))));
                            return Ok(InPlace::Done);
                        }
                    }
                    None => {}
                }
                return apply_in_place_general(&self.def, rec);
            }
        }
        if let Some((arm, exact)) = self.arm_fast(rec) {
            let Some(a) = arm else {
                return Ok(InPlace::Nothing);
            };
            let [spec] = self.def.arms[a].outputs.as_slice() else {
                return Ok(InPlace::Several);
            };
            if Self::in_place_fast(&self.outs[a][0], spec, rec, exact).is_some() {
                return Ok(InPlace::Done);
            }
        }
        apply_in_place_general(&self.def, rec)
    }

    /// Applies the filter to one record, handing each output to `emit` in
    /// order; an error emits nothing (the borrowing form, for tests).
    #[cfg(test)]
    pub(crate) fn apply_each(
        &self,
        rec: &Record,
        emit: impl FnMut(Record),
    ) -> Result<(), FilterError> {
        self.apply_owned(rec.clone(), emit)
    }

    /// Applies the filter to one record, which the caller gives up,
    /// handing each output to `emit` in order; an error emits nothing. A
    /// last output that only retags the input is the input itself,
    /// changed.
    pub(crate) fn apply_owned(
        &self,
        mut rec: Record,
        mut emit: impl FnMut(Record),
    ) -> Result<(), FilterError> {
        if let Some(tags) = &self.tags {
            if let Some(ints) = Tags::ints(&rec, self.def.pattern.labels()) {
                let n = self.def.pattern.len();
                if let Some(arm) = Tags::arm(&self.guards, &ints[..n]) {
                    let Some(a) = arm else { return Ok(()) };
                    // Every value first, so that an error emits nothing.
                    let mut vals = SmallVec::new();
                    if tags.values(a, &ints[..n], &mut vals).is_some() {
                        let mut at = 0;
                        for (k, spec) in tags.outs[a].iter().enumerate() {
                            emit(tags.build(a, k, &vals[at..at + spec.len()]));
                            at += spec.len();
                        }
                        return Ok(());
                    }
                }
                return apply_each_general(&self.def, &rec, emit);
            }
        }
        if let Some((arm, exact)) = self.arm_fast(&rec) {
            let Some(a) = arm else { return Ok(()) };
            let specs = &self.def.arms[a].outputs;
            let outs = &self.outs[a];
            // Every value first, so that an error emits nothing.
            let mut vals = SmallVec::new();
            if outs
                .iter()
                .zip(specs)
                .all(|(o, s)| Self::values_fast(o, s, &rec, exact, &mut vals).is_some())
            {
                let mut at = 0;
                let n = outs.len();
                for (j, (o, s)) in outs.iter().zip(specs).enumerate() {
                    let own = (o.retag && j + 1 == n).then(|| std::mem::take(&mut rec));
                    emit(self.assemble(o, s, &rec, own, exact, &mut vals[at..at + o.values]));
                    at += o.values;
                }
                return Ok(());
            }
        }
        apply_each_general(&self.def, &rec, emit)
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

/// What [`Filter::apply_in_place`] did.
pub(crate) enum InPlace {
    /// The record is now the filter's one output.
    Done,
    /// No arm's guard holds: no output.
    Nothing,
    /// The arm has several outspecs, or none (the record is unchanged): use
    /// [`Filter::apply_owned`].
    Several,
}

/// Applies a filter whose chosen arm has one outspec by changing the record
/// into the output [`build`] would make: every value of the outspec is
/// computed from the input first, then the pattern's labels that the
/// outspec does not set are removed and the outspec's values set (the
/// other labels stay: flow inheritance; set labels win). Errors as
/// [`apply_each_general`] reports them, in the same order, the record untouched.
fn apply_in_place_general(def: &FilterDef, rec: &mut Record) -> Result<InPlace, FilterError> {
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
pub(crate) enum FilterError {
    Type(RuntimeTypeError),
    Eval(snet_core::EvalError),
}

/// Applies a filter to one record, handing each output to `emit` in order
/// (the reference path: [`Filter::apply_owned`] falls back to it).
fn apply_each_general(
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

#[cfg(test)]
#[path = "compile_tests.rs"]
mod tests;

/// Applies `def` to `rec` by every path the engine has (in place, owned,
/// and the general reference path) for the fuzz targets (`fuzz/`): the
/// outputs (as text), or the error in words. Panics if the paths disagree.
#[cfg(fuzzing)]
pub fn fuzz_apply(def: &FilterDef, rec: &Record) -> Result<Vec<String>, String> {
    let show = |r: &Record| format!("{r:?}");
    let mut general = Vec::new();
    let g = apply_each_general(def, rec, |o| general.push(show(&o)))
        .map(|()| general)
        .map_err(|e| format!("{e:?}"));
    let f = Filter::new(def.clone());
    let mut owned = Vec::new();
    let o = f
        .apply_owned(rec.clone(), |r| owned.push(show(&r)))
        .map(|()| owned)
        .map_err(|e| format!("{e:?}"));
    assert_eq!(g, o, "apply_owned disagrees with the general path");
    let mut r = rec.clone();
    match f.apply_in_place(&mut r) {
        Ok(InPlace::Done) => assert_eq!(g, Ok(vec![show(&r)]), "apply_in_place (done)"),
        Ok(InPlace::Nothing) => assert_eq!(g, Ok(vec![]), "apply_in_place (nothing)"),
        Ok(InPlace::Several) => {
            // Not exactly one outspec (none too): the caller goes on with
            // apply_owned, which may fail.
            assert!(
                g.as_ref().map_or(true, |v| v.len() != 1),
                "apply_in_place (several): {g:?}"
            );
            assert_eq!(show(&r), show(rec), "Several changed the record");
        }
        Err(e) => assert_eq!(g, Err(format!("{e:?}")), "apply_in_place (error)"),
    }
    g
}
