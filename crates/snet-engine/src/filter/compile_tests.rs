//! Differential tests: the compiled fast paths of `Filter` against the general path.
//!
//! [`Filter::apply_each`] (and [`Filter::apply_owned`], which it wraps),
//! [`Filter::apply_in_place`] and [`Filter::bump_fast`] must compute exactly what [`apply_each_general`]
//! and [`apply_in_place_general`] compute: the same outputs in the same
//! order, the same error, and (in place) the same record. A deterministic
//! generator draws thousands of filters and records covering every fast
//! shape of expression, every kind of outspec (retags, drops, renames,
//! additions, bumps, duplicate labels) and every kind of input (exact,
//! with inherited labels, missing a pattern label, with a foreign binding
//! tag); a few named cases follow for readability.

use super::{apply_each_general, apply_in_place_general, Filter, FilterError, InPlace};
use snet_core::{
    BinOp, Expr, ExprTree, Field, FilterArm, FilterDef, Func, Label, LabelKind, OutItem, OutSpec,
    Record, TagValue, TextField, UnOp, Value, Variant,
};

// ---------------------------------------------------------------------------
// Comparison

/// A record as the tests compare it: labels and values in order.
fn show(rec: &Record) -> String {
    format!("{rec:?}")
}

fn show_each(res: &Result<(), FilterError>, outs: &[Record]) -> String {
    let outs: Vec<String> = outs.iter().map(show).collect();
    format!("{res:?} {outs:?}")
}

fn show_in_place(res: &Result<InPlace, FilterError>) -> String {
    match res {
        Ok(InPlace::Done) => "Done".to_string(),
        Ok(InPlace::Nothing) => "Nothing".to_string(),
        Ok(InPlace::Several) => "Several".to_string(),
        Err(e) => format!("Err({e:?})"),
    }
}

/// A filter definition in (roughly) S-Net syntax, for failure messages.
fn show_def(def: &FilterDef) -> String {
    let expr = |e: &Expr| format!("{:?}", e.tree());
    let spec = |s: &OutSpec| {
        let items: Vec<String> = s
            .items
            .iter()
            .map(|i| match i {
                OutItem::Field { dst, src } if dst == src => format!("{dst}"),
                OutItem::Field { dst, src } => format!("{dst}={src}"),
                OutItem::Tag {
                    dst,
                    value: TagValue::Copy,
                } => format!("{dst}"),
                OutItem::Tag {
                    dst,
                    value: TagValue::Expr(e),
                } => format!("{dst}={}", expr(e)),
            })
            .collect();
        format!("{{{}}}", items.join(", "))
    };
    let arms: Vec<String> = def
        .arms
        .iter()
        .map(|a| {
            let outs: Vec<String> = a.outputs.iter().map(spec).collect();
            match &a.guard {
                Some(g) => format!("if <{}> then {}", expr(g), outs.join(" ; ")),
                None => outs.join(" ; "),
            }
        })
        .collect();
    format!("[{} -> {}]", def.pattern, arms.join(" else "))
}

/// Entries strictly increasing by label (the record invariant).
fn assert_sorted(rec: &Record, what: &str, context: &dyn Fn() -> String) {
    let labels: Vec<Label> = rec.labels().collect();
    assert!(
        labels.windows(2).all(|w| w[0] < w[1]),
        "{what}: labels not strictly sorted: {rec:?}\n{}",
        context()
    );
}

/// What the checks saw, to make sure the generator reaches every path.
#[derive(Default, Debug)]
struct Seen {
    cases: usize,
    exact: usize,
    inherited: usize,
    each_ok: usize,
    each_outputs: usize,
    pattern_errors: usize,
    eval_errors: usize,
    field_errors: usize,
    done: usize,
    nothing: usize,
    several: usize,
    bumped: usize,
    bump_declined: usize,
    retag_outs: usize,
    bump_outs: usize,
    duplicate_outs: usize,
    renamed_retags: usize,
}

/// Runs every fast path on `rec` and compares it with the general path;
/// panics with the filter, the record and both results on a difference.
fn check(def: &FilterDef, rec: &Record, seen: &mut Seen) {
    let f = Filter::new(def.clone());
    let context = || format!("filter: {}\nrecord: {rec:?}", show_def(def));
    seen.cases += 1;
    if rec.matches(&def.pattern) {
        if rec.len() == def.pattern.len() {
            seen.exact += 1;
        } else {
            seen.inherited += 1;
        }
    }

    // apply_each, apply_owned
    let mut general_outs = Vec::new();
    let general = apply_each_general(def, rec, |r| general_outs.push(r));
    for (name, owned) in [("apply_each", false), ("apply_owned", true)] {
        let mut fast_outs = Vec::new();
        let fast = if owned {
            f.apply_owned(rec.clone(), |r| fast_outs.push(r))
        } else {
            f.apply_each(rec, |r| fast_outs.push(r))
        };
        assert_eq!(
            show_each(&fast, &fast_outs),
            show_each(&general, &general_outs),
            "{name} (left: fast, right: general)\n{}",
            context()
        );
        for r in &fast_outs {
            assert_sorted(r, name, &context);
        }
    }
    for r in &general_outs {
        assert_sorted(r, "apply_each_general output", &context);
    }
    match &general {
        Ok(()) => {
            seen.each_ok += 1;
            seen.each_outputs += general_outs.len();
        }
        Err(e) => {
            assert!(
                general_outs.is_empty(),
                "an error emits nothing\n{}",
                context()
            );
            match e {
                FilterError::Eval(_) => seen.eval_errors += 1,
                FilterError::Type(crate::error::RuntimeTypeError::FilterPattern { .. }) => {
                    seen.pattern_errors += 1
                }
                FilterError::Type(_) => seen.field_errors += 1,
            }
        }
    }

    // apply_in_place
    let mut fast_rec = rec.clone();
    let fast_in = f.apply_in_place(&mut fast_rec);
    let mut general_rec = rec.clone();
    let general_in = apply_in_place_general(def, &mut general_rec);
    assert_eq!(
        (show_in_place(&fast_in), show(&fast_rec)),
        (show_in_place(&general_in), show(&general_rec)),
        "apply_in_place (left: fast, right: general)\n{}",
        context()
    );
    assert_sorted(&fast_rec, "apply_in_place result", &context);
    match &general_in {
        Ok(InPlace::Done) => {
            seen.done += 1;
            // The in-place output is the one output `apply_each` builds.
            assert_eq!(
                show_each(&Ok(()), std::slice::from_ref(&general_rec)),
                show_each(&general, &general_outs),
                "in place and apply_each disagree\n{}",
                context()
            );
        }
        other => {
            // No output made, or an error: the record is untouched (a
            // `Several` record goes on to `apply_each`).
            assert_eq!(
                show(&fast_rec),
                show(rec),
                "apply_in_place changed the record but returned {}\n{}",
                show_in_place(other),
                context()
            );
            match other {
                Ok(InPlace::Nothing) => {
                    seen.nothing += 1;
                    assert!(general.is_ok() && general_outs.is_empty(), "{}", context());
                }
                // The arm's outspecs are not evaluated yet: `apply_each`
                // may still fail.
                Ok(InPlace::Several) => seen.several += 1,
                _ => assert!(general.is_err(), "{}", context()),
            }
        }
    }
    if f.one_to_one {
        assert!(
            !matches!(fast_in, Ok(InPlace::Nothing | InPlace::Several)),
            "a one-to-one filter gave {}\n{}",
            show_in_place(&fast_in),
            context()
        );
    }

    // bump_fast
    let mut bumped = rec.clone();
    match f.bump_fast(&mut bumped) {
        Some(()) => {
            seen.bumped += 1;
            assert_eq!(
                ("Done".to_string(), show(&bumped)),
                (show_in_place(&general_in), show(&general_rec)),
                "bump_fast (left) against apply_in_place_general (right)\n{}",
                context()
            );
            assert_sorted(&bumped, "bump_fast result", &context);
        }
        None => {
            if f.bump.is_some() {
                seen.bump_declined += 1;
            }
            assert_eq!(
                show(&bumped),
                show(rec),
                "bump_fast declined but changed the record\n{}",
                context()
            );
        }
    }
}

/// Counts the compiled shapes of `def`'s outspecs.
fn count_shapes(def: &FilterDef, seen: &mut Seen) {
    let f = Filter::new(def.clone());
    for (outs, arm) in f.outs.iter().zip(&def.arms) {
        for (o, spec) in outs.iter().zip(&arm.outputs) {
            seen.retag_outs += o.retag as usize;
            seen.bump_outs += o.bump.is_some() as usize;
            seen.duplicate_outs += o.order.is_none() as usize;
            // Names exactly the pattern's labels, but renames a field:
            // must not be taken for a retag.
            let mut dsts: Vec<Label> = spec.items.iter().map(super::item_dst).collect();
            dsts.sort_unstable();
            if dsts.as_slice() == def.pattern.labels()
                && spec
                    .items
                    .iter()
                    .any(|i| matches!(i, OutItem::Field { dst, src } if dst != src))
            {
                seen.renamed_retags += 1;
            }
        }
    }
}

// ---------------------------------------------------------------------------
// Generation

/// SplitMix64: small, deterministic, good enough.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }

    fn pick<T: Copy>(&mut self, xs: &[T]) -> T {
        xs[self.below(xs.len())]
    }

    fn shuffle<T>(&mut self, xs: &mut [T]) {
        for i in (1..xs.len()).rev() {
            let j = self.below(i + 1);
            xs.swap(i, j);
        }
    }
}

/// The labels filters and records are drawn from.
struct Pool {
    fields: [Label; 2],
    tags: [Label; 3],
    btags: [Label; 2],
    /// Field values (distinct texts, so that a wrong copy shows).
    texts: [Field; 3],
}

impl Pool {
    fn new() -> Pool {
        Pool {
            fields: [Label::field("dfa"), Label::field("dfb")],
            tags: [Label::tag("dt1"), Label::tag("dt2"), Label::tag("dt3")],
            btags: [Label::btag("db1"), Label::btag("db2")],
            texts: [
                Field::text("C4SNet", false, "x0"),
                Field::text("C4SNet", false, "x1"),
                Field::text("C4SNet", false, "x2"),
            ],
        }
    }

    fn all(&self) -> Vec<Label> {
        let mut v = self.fields.to_vec();
        v.extend(self.tags);
        v.extend(self.btags);
        v
    }

    /// Tags and binding tags: what expressions read.
    fn ints(&self) -> Vec<Label> {
        let mut v = self.tags.to_vec();
        v.extend(self.btags);
        v
    }
}

const OPS: [BinOp; 15] = [
    BinOp::Add,
    BinOp::Sub,
    BinOp::Mul,
    BinOp::Div,
    BinOp::Div,
    BinOp::Mod,
    BinOp::Mod,
    BinOp::Eq,
    BinOp::Ne,
    BinOp::Lt,
    BinOp::Le,
    BinOp::Gt,
    BinOp::Ge,
    BinOp::And,
    BinOp::Or,
];

/// Values in a small range, zero, and the edges of `i64`.
fn int_value(rng: &mut Rng) -> i64 {
    if rng.chance(10) {
        rng.pick(&[i64::MIN, i64::MAX, -1])
    } else {
        rng.below(7) as i64 - 3
    }
}

fn constant(rng: &mut Rng) -> i64 {
    rng.pick(&[0, 0, 1, 1, -1, 2, 3, -2, 7, i64::MIN, i64::MAX])
}

/// Expressions read mostly the pattern's tags, sometimes any tag (which
/// the record may lack, or carry as an inherited label).
struct ExprGen<'a> {
    mine: &'a [Label],
    all: &'a [Label],
}

impl ExprGen<'_> {
    fn label(&self, rng: &mut Rng) -> Label {
        if !self.mine.is_empty() && rng.chance(75) {
            rng.pick(self.mine)
        } else {
            rng.pick(self.all)
        }
    }

    fn operand(&self, rng: &mut Rng) -> ExprTree {
        if rng.chance(50) {
            ExprTree::Int(constant(rng))
        } else {
            ExprTree::Label(self.label(rng))
        }
    }

    fn bin(op: BinOp, a: ExprTree, b: ExprTree) -> ExprTree {
        ExprTree::Binary(op, Box::new(a), Box::new(b))
    }

    /// Every shape: the fast ones (constant, label, `l op c`, `a op b`,
    /// `(a op b) op c`) and general ones.
    fn tree(&self, rng: &mut Rng, depth: u32) -> ExprTree {
        match rng.below(8) {
            0 => ExprTree::Int(constant(rng)),
            1 => ExprTree::Label(self.label(rng)),
            2 => Self::bin(
                rng.pick(&OPS),
                ExprTree::Label(self.label(rng)),
                ExprTree::Int(constant(rng)),
            ),
            3 => Self::bin(rng.pick(&OPS), self.operand(rng), self.operand(rng)),
            4 => Self::bin(
                rng.pick(&OPS),
                Self::bin(rng.pick(&OPS), self.operand(rng), self.operand(rng)),
                self.operand(rng),
            ),
            _ => self.general(rng, depth),
        }
    }

    fn general(&self, rng: &mut Rng, depth: u32) -> ExprTree {
        if depth == 0 {
            return self.operand(rng);
        }
        let d = depth - 1;
        match rng.below(7) {
            0 => ExprTree::Unary(
                rng.pick(&[UnOp::Neg, UnOp::Not]),
                Box::new(self.tree(rng, d)),
            ),
            1 => ExprTree::Cond(
                Box::new(self.tree(rng, d)),
                Box::new(self.tree(rng, d)),
                Box::new(self.tree(rng, d)),
            ),
            2 => Self::bin(
                rng.pick(&[BinOp::And, BinOp::Or]),
                self.tree(rng, d),
                self.tree(rng, d),
            ),
            3 => ExprTree::Call(
                rng.pick(&[Func::Min, Func::Max]),
                vec![self.tree(rng, d), self.tree(rng, d)],
            ),
            4 => ExprTree::Call(Func::Abs, vec![self.tree(rng, d)]),
            // A fast-looking shape with a general operand.
            5 => Self::bin(rng.pick(&OPS), self.general(rng, d), self.operand(rng)),
            _ => Self::bin(rng.pick(&OPS), self.tree(rng, d), self.tree(rng, d)),
        }
    }

    fn expr(&self, rng: &mut Rng) -> Expr {
        Expr::compile(self.tree(rng, 2))
    }
}

/// An item setting `dst`: a field copied from itself or renamed from
/// another field, or a tag copied or computed.
fn item_for(rng: &mut Rng, pool: &Pool, g: &ExprGen, dst: Label) -> OutItem {
    match dst.kind() {
        LabelKind::Field => OutItem::Field {
            dst,
            src: if rng.chance(60) {
                dst
            } else {
                rng.pick(&pool.fields)
            },
        },
        LabelKind::Tag | LabelKind::BTag => OutItem::Tag {
            dst,
            value: if rng.chance(25) {
                TagValue::Copy
            } else if rng.chance(30) {
                // `<t = t op c>`.
                TagValue::Expr(Expr::compile(ExprGen::bin(
                    rng.pick(&OPS),
                    ExprTree::Label(dst),
                    ExprTree::Int(constant(rng)),
                )))
            } else {
                TagValue::Expr(g.expr(rng))
            },
        },
    }
}

fn outspec(rng: &mut Rng, pool: &Pool, g: &ExprGen, pattern: &[Label]) -> OutSpec {
    let all = pool.all();
    let others: Vec<Label> = all
        .iter()
        .copied()
        .filter(|l| !pattern.contains(l))
        .collect();
    let mut dsts: Vec<Label> = match rng.below(6) {
        // Exactly the pattern's labels (a retag if all are tags).
        0 | 1 => pattern.to_vec(),
        // Some of the pattern's labels (the others are dropped).
        2 => pattern.iter().copied().filter(|_| rng.chance(50)).collect(),
        // Some of the pattern's labels and new ones.
        3 => {
            let mut v: Vec<Label> = pattern.iter().copied().filter(|_| rng.chance(60)).collect();
            if !others.is_empty() {
                for _ in 0..1 + rng.below(2) {
                    v.push(rng.pick(&others));
                }
            }
            v
        }
        // A single `<t = t op c>` on a pattern tag.
        4 => {
            let ints: Vec<Label> = pattern.iter().copied().filter(|l| !l.is_field()).collect();
            if ints.is_empty() {
                vec![]
            } else {
                let t = rng.pick(&ints);
                return OutSpec {
                    items: vec![OutItem::Tag {
                        dst: t,
                        value: TagValue::Expr(Expr::compile(ExprGen::bin(
                            rng.pick(&OPS),
                            ExprTree::Label(t),
                            ExprTree::Int(constant(rng)),
                        ))),
                    }],
                };
            }
        }
        // Anything.
        _ => (0..rng.below(4)).map(|_| rng.pick(&all)).collect(),
    };
    // Occasionally a label twice (the last item wins).
    if !dsts.is_empty() && rng.chance(10) {
        let d = rng.pick(&dsts);
        dsts.push(d);
    }
    rng.shuffle(&mut dsts);
    OutSpec {
        items: dsts
            .into_iter()
            .map(|d| item_for(rng, pool, g, d))
            .collect(),
    }
}

fn filter_def(rng: &mut Rng, pool: &Pool) -> FilterDef {
    let ints = pool.ints();
    if rng.chance(15) {
        // `[{<t>} -> {<t = t op c>}]`, the in-place bump.
        let t = rng.pick(&ints);
        let e = ExprGen::bin(
            rng.pick(&OPS),
            ExprTree::Label(t),
            ExprTree::Int(constant(rng)),
        );
        return FilterDef {
            pattern: Variant::new([t]),
            arms: vec![FilterArm {
                guard: None,
                outputs: vec![OutSpec {
                    items: vec![OutItem::Tag {
                        dst: t,
                        value: TagValue::Expr(Expr::compile(e)),
                    }],
                }],
            }],
        };
    }
    let all = pool.all();
    let pattern = Variant::new((0..rng.below(4)).map(|_| {
        let l = rng.pick(&all);
        // Binding tags rarer.
        if l.kind() == LabelKind::BTag && rng.chance(50) {
            rng.pick(&pool.tags)
        } else {
            l
        }
    }));
    let mine: Vec<Label> = pattern
        .labels()
        .iter()
        .copied()
        .filter(|l| !l.is_field())
        .collect();
    let g = ExprGen {
        mine: &mine,
        all: &ints,
    };
    let narms = rng.pick(&[1, 1, 1, 2, 2, 3]);
    let arms = (0..narms)
        .map(|i| FilterArm {
            guard: (i + 1 < narms).then(|| g.expr(rng)),
            outputs: (0..rng.pick(&[0, 1, 1, 1, 1, 2, 2, 3]))
                .map(|_| outspec(rng, pool, &g, pattern.labels()))
                .collect(),
        })
        .collect();
    FilterDef { pattern, arms }
}

fn value_for(rng: &mut Rng, pool: &Pool, l: Label) -> Value {
    if l.is_field() {
        Value::Field(pool.texts[rng.below(pool.texts.len())].clone())
    } else {
        Value::Int(int_value(rng))
    }
}

/// A record for `pattern`: its labels exactly, or with inherited labels,
/// or missing one, or with a binding tag it does not name, or anything.
fn record_for(rng: &mut Rng, pool: &Pool, pattern: &Variant) -> Record {
    let mut r = Record::new();
    for &l in pattern.labels() {
        r.set(l, value_for(rng, pool, l));
    }
    let extras: Vec<Label> = pool
        .fields
        .iter()
        .chain(&pool.tags)
        .copied()
        .filter(|l| !pattern.contains(*l))
        .collect();
    let add_extras = |rng: &mut Rng, r: &mut Record| {
        if !extras.is_empty() {
            for _ in 0..1 + rng.below(3) {
                let l = rng.pick(&extras);
                r.set(l, value_for(rng, pool, l));
            }
        }
    };
    match rng.below(10) {
        0..=3 => {}
        4..=6 => add_extras(rng, &mut r),
        7 => {
            if !pattern.is_empty() {
                r.remove(rng.pick(pattern.labels()));
            }
            if rng.chance(50) {
                add_extras(rng, &mut r);
            }
        }
        8 => {
            let foreign: Vec<Label> = pool
                .btags
                .iter()
                .copied()
                .filter(|l| !pattern.contains(*l))
                .collect();
            if !foreign.is_empty() {
                let b = rng.pick(&foreign);
                r.set(b, value_for(rng, pool, b));
            }
            if rng.chance(50) {
                add_extras(rng, &mut r);
            }
        }
        _ => {
            r = Record::new();
            for l in pool.all() {
                if rng.chance(40) {
                    r.set(l, value_for(rng, pool, l));
                }
            }
        }
    }
    r
}

// ---------------------------------------------------------------------------
// Tests

#[test]
fn fast_paths_agree_with_general_path_on_random_filters() {
    let pool = Pool::new();
    let mut rng = Rng(0x5e7_f11e5);
    let mut seen = Seen::default();
    const FILTERS: usize = 6000;
    const RECORDS: usize = 8;
    for _ in 0..FILTERS {
        let def = filter_def(&mut rng, &pool);
        count_shapes(&def, &mut seen);
        for _ in 0..RECORDS {
            let rec = record_for(&mut rng, &pool, &def.pattern);
            check(&def, &rec, &mut seen);
        }
    }
    // The generator reaches every path (and not by a narrow margin).
    // (`Nothing` cannot happen: the last arm has no guard.)
    let enough = [
        ("cases", seen.cases, FILTERS * RECORDS),
        ("exact", seen.exact, 5000),
        ("inherited", seen.inherited, 5000),
        ("each_outputs", seen.each_outputs, 10000),
        ("pattern_errors", seen.pattern_errors, 2000),
        ("eval_errors", seen.eval_errors, 1000),
        ("field_errors", seen.field_errors, 200),
        ("done", seen.done, 5000),
        ("several", seen.several, 2000),
        ("bumped", seen.bumped, 2000),
        ("bump_declined", seen.bump_declined, 200),
        ("retag_outs", seen.retag_outs, 500),
        ("bump_outs", seen.bump_outs, 500),
        ("duplicate_outs", seen.duplicate_outs, 300),
        ("renamed_retags", seen.renamed_retags, 100),
    ];
    for (what, n, min) in enough {
        assert!(n >= min, "only {n} {what} (want {min}): {seen:?}");
    }
}

fn tag_expr(dst: Label, e: ExprTree) -> OutItem {
    OutItem::Tag {
        dst,
        value: TagValue::Expr(Expr::compile(e)),
    }
}

fn copy(dst: Label) -> OutItem {
    OutItem::Tag {
        dst,
        value: TagValue::Copy,
    }
}

fn bin(op: BinOp, a: ExprTree, b: ExprTree) -> ExprTree {
    ExprTree::Binary(op, Box::new(a), Box::new(b))
}

fn lab(l: Label) -> ExprTree {
    ExprTree::Label(l)
}

fn int(v: i64) -> ExprTree {
    ExprTree::Int(v)
}

fn rec(entries: &[(Label, i64)]) -> Record {
    let mut r = Record::new();
    for &(l, v) in entries {
        r.set_int(l, v);
    }
    r
}

/// All outputs of `apply_each`, after checking it against the general path.
fn outputs(def: &FilterDef, r: &Record) -> Result<Vec<Record>, String> {
    check(def, r, &mut Seen::default());
    let mut outs = Vec::new();
    Filter::new(def.clone())
        .apply_each(r, |o| outs.push(o))
        .map(|()| outs)
        .map_err(|e| format!("{e:?}"))
}

#[test]
fn pipeline_increment() {
    // [{<X>} -> {<X=X+1>}]
    let x = Label::tag("pX");
    let a = Label::field("pa");
    let b = Label::btag("pb");
    let def = FilterDef {
        pattern: Variant::new([x]),
        arms: vec![FilterArm {
            guard: None,
            outputs: vec![OutSpec {
                items: vec![tag_expr(x, bin(BinOp::Add, lab(x), int(1)))],
            }],
        }],
    };
    let f = Filter::new(def.clone());
    assert!(f.one_to_one && f.bump.is_some());

    let mut r = rec(&[(x, 41)]);
    assert_eq!(f.bump_fast(&mut r), Some(()));
    assert_eq!(r.int(x), Some(42));
    let outs = outputs(&def, &rec(&[(x, 41)])).unwrap();
    assert_eq!(outs.len(), 1);
    assert_eq!(outs[0].int(x), Some(42));

    // Inherited labels ride along, in place and not.
    let mut r = rec(&[(x, 7)]);
    r.set(a, Value::Field(Field::text("C4SNet", false, "payload")));
    check(&def, &r, &mut Seen::default());
    assert_eq!(f.bump_fast(&mut r), Some(()));
    assert_eq!(r.int(x), Some(8));
    assert!(r.field(a).is_some());

    // Overflow is an error (not a wrapped tag): the fast path declines
    // and leaves the record alone; the general path says why.
    let mut r = rec(&[(x, i64::MAX)]);
    assert_eq!(f.bump_fast(&mut r), None);
    assert_eq!(r.int(x), Some(i64::MAX));
    assert!(matches!(
        f.apply_in_place(&mut r.clone()),
        Err(FilterError::Eval(snet_core::EvalError::Overflow))
    ));
    let err = outputs(&def, &r).unwrap_err();
    assert!(err.contains("Overflow"), "{err}");

    // A binding tag the pattern does not name blocks the match.
    let mut r = rec(&[(x, 1), (b, 2)]);
    assert_eq!(f.bump_fast(&mut r), None);
    assert_eq!(show(&r), show(&rec(&[(x, 1), (b, 2)])));
    let err = outputs(&def, &r).unwrap_err();
    assert!(err.contains("FilterPattern"), "{err}");
    let mut r2 = r.clone();
    assert!(matches!(
        f.apply_in_place(&mut r2),
        Err(FilterError::Type(_))
    ));
    // So does a missing tag.
    let err = outputs(&def, &rec(&[])).unwrap_err();
    assert!(err.contains("FilterPattern"), "{err}");
}

#[test]
fn fib_step() {
    // [{<N>,<K>} -> if <N <= 1> then {<K>,<R=N>}
    //               else {<N=N-1>,<K=2*K>} ; {<N=N-2>,<K=2*K+1>}]
    let n = Label::tag("fN");
    let k = Label::tag("fK");
    let r_ = Label::tag("fR");
    let def = FilterDef {
        pattern: Variant::new([n, k]),
        arms: vec![
            FilterArm {
                guard: Some(Expr::compile(bin(BinOp::Le, lab(n), int(1)))),
                outputs: vec![OutSpec {
                    items: vec![copy(k), tag_expr(r_, lab(n))],
                }],
            },
            FilterArm {
                guard: None,
                outputs: vec![
                    OutSpec {
                        items: vec![
                            tag_expr(n, bin(BinOp::Sub, lab(n), int(1))),
                            tag_expr(k, bin(BinOp::Mul, int(2), lab(k))),
                        ],
                    },
                    OutSpec {
                        items: vec![
                            tag_expr(n, bin(BinOp::Sub, lab(n), int(2))),
                            tag_expr(k, bin(BinOp::Add, bin(BinOp::Mul, int(2), lab(k)), int(1))),
                        ],
                    },
                ],
            },
        ],
    };
    let f = Filter::new(def.clone());
    assert!(f.outs[1].iter().all(|o| o.retag), "the else arm retags");

    // Base case: {<K>, <R>}, N dropped.
    let outs = outputs(&def, &rec(&[(n, 1), (k, 5)])).unwrap();
    assert_eq!(outs.len(), 1);
    assert_eq!(
        (outs[0].len(), outs[0].int(k), outs[0].int(r_)),
        (2, Some(5), Some(1))
    );
    let mut r = rec(&[(n, 0), (k, 9)]);
    assert!(matches!(f.apply_in_place(&mut r), Ok(InPlace::Done)));
    assert_eq!(
        (r.len(), r.int(k), r.int(r_), r.int(n)),
        (2, Some(9), Some(0), None)
    );

    // Step: two outputs, in order.
    let outs = outputs(&def, &rec(&[(n, 5), (k, 3)])).unwrap();
    let got: Vec<_> = outs.iter().map(|o| (o.len(), o.int(n), o.int(k))).collect();
    assert_eq!(got, [(2, Some(4), Some(6)), (2, Some(3), Some(7))]);
    let mut r = rec(&[(n, 5), (k, 3)]);
    assert!(matches!(f.apply_in_place(&mut r), Ok(InPlace::Several)));
    assert_eq!(show(&r), show(&rec(&[(n, 5), (k, 3)])));

    // With an inherited tag (not exact: nothing is bound by position).
    let extra = Label::tag("fExtra");
    let outs = outputs(&def, &rec(&[(n, 5), (k, 3), (extra, -8)])).unwrap();
    let got: Vec<_> = outs
        .iter()
        .map(|o| (o.len(), o.int(n), o.int(k), o.int(extra)))
        .collect();
    assert_eq!(
        got,
        [
            (3, Some(4), Some(6), Some(-8)),
            (3, Some(3), Some(7), Some(-8))
        ]
    );
}

#[test]
fn division_by_zero_in_second_outspec_emits_nothing() {
    // [{<a>} -> {<a>} ; {<b = 1 / a>}]
    let a = Label::tag("da");
    let b = Label::tag("db");
    let def = FilterDef {
        pattern: Variant::new([a]),
        arms: vec![FilterArm {
            guard: None,
            outputs: vec![
                OutSpec {
                    items: vec![copy(a)],
                },
                OutSpec {
                    items: vec![tag_expr(b, bin(BinOp::Div, int(1), lab(a)))],
                },
            ],
        }],
    };
    let f = Filter::new(def.clone());
    for r in [rec(&[(a, 0)]), rec(&[(a, 0), (b, 4)])] {
        check(&def, &r, &mut Seen::default());
        let mut emitted = 0;
        let res = f.apply_each(&r, |_| emitted += 1);
        assert!(
            matches!(
                res,
                Err(FilterError::Eval(snet_core::EvalError::DivisionByZero))
            ),
            "{res:?}"
        );
        assert_eq!(emitted, 0);
    }
    let outs = outputs(&def, &rec(&[(a, -1)])).unwrap();
    assert_eq!(outs.len(), 2);
    assert_eq!(outs[1].int(b), Some(-1));

    // In place, one outspec: the error leaves the record as it was.
    let def = FilterDef {
        pattern: Variant::new([a]),
        arms: vec![FilterArm {
            guard: None,
            outputs: vec![OutSpec {
                items: vec![copy(a), tag_expr(b, bin(BinOp::Mod, lab(a), lab(a)))],
            }],
        }],
    };
    let f = Filter::new(def.clone());
    let mut r = rec(&[(a, 0)]);
    check(&def, &r, &mut Seen::default());
    assert!(matches!(
        f.apply_in_place(&mut r),
        Err(FilterError::Eval(snet_core::EvalError::DivisionByZero))
    ));
    assert_eq!(show(&r), show(&rec(&[(a, 0)])));
}

#[test]
fn pattern_mismatch_and_missing_labels() {
    // [{x, <t>} -> {y = x, <u = t + w>}]
    let x = Label::field("mx");
    let y = Label::field("my");
    let t = Label::tag("mt");
    let u = Label::tag("mu");
    let w = Label::tag("mw");
    let bt = Label::btag("mb");
    let def = FilterDef {
        pattern: Variant::new([x, t]),
        arms: vec![FilterArm {
            guard: None,
            outputs: vec![OutSpec {
                items: vec![
                    OutItem::Field { dst: y, src: x },
                    tag_expr(u, bin(BinOp::Add, lab(t), lab(w))),
                ],
            }],
        }],
    };
    let field = || Value::Field(Field::text("C4SNet", false, "fx"));

    // Missing the field: a pattern error.
    let err = outputs(&def, &rec(&[(t, 1), (w, 2)])).unwrap_err();
    assert!(err.contains("FilterPattern"), "{err}");
    // A foreign binding tag: a pattern error.
    let mut r = rec(&[(t, 1), (w, 2), (bt, 0)]);
    r.set(x, field());
    let err = outputs(&def, &r).unwrap_err();
    assert!(err.contains("FilterPattern"), "{err}");
    // Matches, but `<mw>` (read by the expression, not in the pattern) is missing.
    let mut r = rec(&[(t, 1)]);
    r.set(x, field());
    let err = outputs(&def, &r).unwrap_err();
    assert!(err.contains("MissingLabel"), "{err}");
    // With `<mw>` inherited: `x` renamed to `y`, `<mw>` kept.
    let mut r = rec(&[(t, 1), (w, 2)]);
    r.set(x, field());
    let outs = outputs(&def, &r).unwrap();
    assert_eq!(outs.len(), 1);
    let o = &outs[0];
    assert!(o.field(y).is_some() && o.get(x).is_none());
    assert_eq!((o.int(u), o.int(w), o.int(t)), (Some(3), Some(2), None));

    // [{} -> {z = q}]: the source field is missing.
    let z = Label::field("mz");
    let q = Label::field("mq");
    let def = FilterDef {
        pattern: Variant::empty(),
        arms: vec![FilterArm {
            guard: None,
            outputs: vec![OutSpec {
                items: vec![OutItem::Field { dst: z, src: q }],
            }],
        }],
    };
    let err = outputs(&def, &rec(&[(t, 1)])).unwrap_err();
    assert!(err.contains("FilterMissingField"), "{err}");
}

#[test]
fn swapping_fields_is_not_a_retag() {
    // [{a, b} -> {a = b, b = a}]: exactly the pattern's labels, but not
    // the input's values.
    let a = Label::field("sa");
    let b = Label::field("sb");
    let def = FilterDef {
        pattern: Variant::new([a, b]),
        arms: vec![FilterArm {
            guard: None,
            outputs: vec![OutSpec {
                items: vec![
                    OutItem::Field { dst: a, src: b },
                    OutItem::Field { dst: b, src: a },
                ],
            }],
        }],
    };
    let mut r = Record::new();
    r.set(a, Value::Field(Field::text("C4SNet", false, "A")));
    r.set(b, Value::Field(Field::text("C4SNet", false, "B")));
    let text = |r: &Record, l: Label| {
        let f = r.field(l).expect("field");
        f.downcast_ref::<TextField>()
            .expect("text")
            .text()
            .to_string()
    };
    let outs = outputs(&def, &r).unwrap();
    assert_eq!(outs.len(), 1);
    assert_eq!(
        (text(&outs[0], a), text(&outs[0], b)),
        ("B".into(), "A".into())
    );
    let mut inplace = r.clone();
    assert!(matches!(
        Filter::new(def).apply_in_place(&mut inplace),
        Ok(InPlace::Done)
    ));
    assert_eq!(
        (text(&inplace, a), text(&inplace, b)),
        ("B".into(), "A".into())
    );
}
