//! Fuzz target: tag expressions and filters on random records.
//!
//! The bytes build a tag expression, a filter and a record over a few
//! labels. The expression's three evaluators (the shortcut shapes, the
//! bytecode loop, the bound form) must agree with a reference evaluator
//! here, in 128-bit arithmetic: a value, or the first error left to right
//! (a missing tag, division by zero, a result outside 64 bits: errors,
//! never a panic or a wrapped value). The filter's paths (in place, owned,
//! the general one) must agree with each other.

#![no_main]

use libfuzzer_sys::fuzz_target;
use snet_core::{
    BinOp, EvalError, Expr, ExprTree, FilterArm, FilterDef, Func, Label, OutItem, OutSpec, Record,
    TagValue, UnOp, Value, Variant,
};

struct Bytes<'a>(&'a [u8]);

impl Bytes<'_> {
    fn byte(&mut self) -> u8 {
        match self.0.split_first() {
            Some((&b, rest)) => {
                self.0 = rest;
                b
            }
            None => 0,
        }
    }

    fn int(&mut self) -> i64 {
        match self.byte() % 8 {
            0 => 0,
            1 => 1,
            2 => -1,
            3 => i64::MAX,
            4 => i64::MIN,
            5 => i64::from(self.byte() as i8),
            6 => i64::from(i32::from_le_bytes([
                self.byte(),
                self.byte(),
                self.byte(),
                self.byte(),
            ])),
            _ => i64::from_le_bytes(std::array::from_fn(|_| self.byte())),
        }
    }
}

fn labels() -> [Label; 4] {
    [
        Label::tag("fz_a"),
        Label::tag("fz_b"),
        Label::btag("fz_c"),
        Label::tag("fz_d"),
    ]
}

const OPS: [BinOp; 13] = [
    BinOp::Add,
    BinOp::Sub,
    BinOp::Mul,
    BinOp::Div,
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

fn tree(b: &mut Bytes, depth: u32) -> ExprTree {
    let l = labels();
    let k = if depth == 0 {
        b.byte() % 2
    } else {
        b.byte() % 7
    };
    let sub = |b: &mut Bytes| Box::new(tree(b, depth - 1));
    match k {
        0 => ExprTree::Int(b.int()),
        1 => ExprTree::Label(l[usize::from(b.byte()) % l.len()]),
        2 | 3 => {
            let op = OPS[usize::from(b.byte()) % OPS.len()];
            ExprTree::Binary(op, sub(b), sub(b))
        }
        4 => ExprTree::Unary(
            if b.byte() % 2 == 0 {
                UnOp::Neg
            } else {
                UnOp::Not
            },
            sub(b),
        ),
        5 => ExprTree::Cond(sub(b), sub(b), sub(b)),
        _ => match b.byte() % 3 {
            0 => ExprTree::Call(Func::Abs, vec![tree(b, depth - 1)]),
            1 => ExprTree::Call(Func::Min, vec![tree(b, depth - 1), tree(b, depth - 1)]),
            _ => ExprTree::Call(Func::Max, vec![tree(b, depth - 1), tree(b, depth - 1)]),
        },
    }
}

/// The reference: C's meaning on 64-bit integers, every result checked.
fn reference(t: &ExprTree, r: &Record) -> Result<i64, EvalError> {
    let fit = |v: i128| i64::try_from(v).map_err(|_| EvalError::Overflow);
    Ok(match t {
        ExprTree::Int(v) => *v,
        ExprTree::Label(l) => r.int(*l).ok_or(EvalError::MissingLabel(*l))?,
        ExprTree::Unary(UnOp::Neg, e) => fit(-i128::from(reference(e, r)?))?,
        ExprTree::Unary(UnOp::Not, e) => i64::from(reference(e, r)? == 0),
        ExprTree::Binary(BinOp::And, a, b) => {
            i64::from(reference(a, r)? != 0 && reference(b, r)? != 0)
        }
        ExprTree::Binary(BinOp::Or, a, b) => {
            i64::from(reference(a, r)? != 0 || reference(b, r)? != 0)
        }
        ExprTree::Binary(op, a, b) => {
            let (x, y) = (i128::from(reference(a, r)?), i128::from(reference(b, r)?));
            match op {
                BinOp::Add => fit(x + y)?,
                BinOp::Sub => fit(x - y)?,
                BinOp::Mul => fit(x * y)?,
                BinOp::Div | BinOp::Mod if y == 0 => return Err(EvalError::DivisionByZero),
                BinOp::Div => fit(x / y)?,
                // The remainder comes with the quotient: x = MIN, y = -1
                // overflows (decided in docs/language-notes.md).
                BinOp::Mod => {
                    fit(x / y)?;
                    fit(x % y)?
                }
                BinOp::Eq => i64::from(x == y),
                BinOp::Ne => i64::from(x != y),
                BinOp::Lt => i64::from(x < y),
                BinOp::Le => i64::from(x <= y),
                BinOp::Gt => i64::from(x > y),
                BinOp::Ge => i64::from(x >= y),
                BinOp::And | BinOp::Or => unreachable!(),
            }
        }
        ExprTree::Cond(c, a, b) => {
            if reference(c, r)? != 0 {
                reference(a, r)?
            } else {
                reference(b, r)?
            }
        }
        ExprTree::Call(Func::Abs, args) => fit(i128::from(reference(&args[0], r)?).abs())?,
        ExprTree::Call(f, args) => {
            let (x, y) = (reference(&args[0], r)?, reference(&args[1], r)?);
            if *f == Func::Min {
                x.min(y)
            } else {
                x.max(y)
            }
        }
    })
}

fn record(b: &mut Bytes) -> Record {
    let mut r = Record::new();
    for l in labels() {
        if b.byte() % 4 != 0 {
            r.set_int(l, b.int());
        }
    }
    if b.byte() % 2 == 0 {
        r.set(
            Label::field("fz_f"),
            Value::Field(snet_core::Field::text("C4SNet", false, "(int)7")),
        );
    }
    r
}

fn filter(b: &mut Bytes) -> FilterDef {
    let l = labels();
    let pattern: Vec<Label> = l.iter().copied().filter(|_| b.byte() % 2 == 0).collect();
    let arms = 1 + b.byte() % 3;
    let mut def = FilterDef {
        pattern: Variant::new(pattern),
        arms: Vec::new(),
    };
    for i in 0..arms {
        let guard = (i + 1 < arms).then(|| Expr::compile(tree(b, 2)));
        let mut outputs = Vec::new();
        for _ in 0..b.byte() % 3 {
            let mut items = Vec::new();
            for dst in l {
                match b.byte() % 4 {
                    0 => items.push(OutItem::Tag {
                        dst,
                        value: TagValue::Copy,
                    }),
                    1 => items.push(OutItem::Tag {
                        dst,
                        value: TagValue::Expr(Expr::compile(tree(b, 2))),
                    }),
                    _ => {}
                }
            }
            if b.byte() % 3 == 0 {
                let f = Label::field("fz_f");
                items.push(OutItem::Field { dst: f, src: f });
            }
            outputs.push(OutSpec { items });
        }
        def.arms.push(FilterArm { guard, outputs });
    }
    def
}

fuzz_target!(|data: &[u8]| {
    let mut b = Bytes(data);
    let t = tree(&mut b, 4);
    let r = record(&mut b);
    let want = reference(&t, &r);
    let e = Expr::compile(t.clone());
    assert_eq!(e.eval(&r), want, "{t:?} on {r:?}");
    assert_eq!(
        e.eval_fast(&r),
        want.clone().ok(),
        "eval_fast: {t:?} on {r:?}"
    );
    let ls: Vec<Label> = r.entries().iter().map(|(l, _)| *l).collect();
    if let Some(s) = e.bind(&ls) {
        assert_eq!(
            s.eval(r.entries()),
            want.clone().ok(),
            "bound: {t:?} on {r:?}"
        );
    }
    let def = filter(&mut b);
    let _ = snet_engine::fuzz_filter(&def, &r);
});
