//! Tag expressions, compiled.
//!
//! The front end builds an [`ExprTree`] from the source; [`Expr::compile`]
//! flattens it into stack bytecode with resolved labels and jumps for the
//! short-circuit operators (`&&`, `||`, `?:`). Evaluation is a tight loop over
//! a small fixed stack, with no allocation. Arithmetic is on 64-bit signed
//! integers, checked: a result that does not fit (`+ - *`, unary `-`,
//! `abs`, `i64::MIN / -1`) is [`EvalError::Overflow`], division truncates
//! toward zero as in C, and division or remainder by zero is
//! [`EvalError::DivisionByZero`]: errors that stop the run naming the
//! component, never a crash or a silently wrapped value (in C both are
//! undefined behaviour).

use std::fmt;

use crate::label::Label;
use crate::record::{Record, Value};

/// A prefix operator of a tag expression.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum UnOp {
    /// `-x`, checked: `-i64::MIN` is [`EvalError::Overflow`].
    Neg,
    /// `!x`: 1 if `x` is zero, else 0.
    Not,
}

/// An infix operator of a tag expression. Comparisons and the logical
/// operators give 1 for true and 0 for false; any non-zero operand counts
/// as true.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum BinOp {
    /// `a + b`, checked for overflow.
    Add,
    /// `a - b`, checked for overflow.
    Sub,
    /// `a * b`, checked for overflow.
    Mul,
    /// `a / b`, truncating toward zero as in C; `b == 0` is
    /// [`EvalError::DivisionByZero`], `i64::MIN / -1` an overflow.
    Div,
    /// `a % b`, with the sign of `a` as in C; `b == 0` is
    /// [`EvalError::DivisionByZero`], `i64::MIN % -1` an overflow.
    Mod,
    /// `a == b`.
    Eq,
    /// `a != b`.
    Ne,
    /// `a < b`.
    Lt,
    /// `a <= b`.
    Le,
    /// `a > b`.
    Gt,
    /// `a >= b`.
    Ge,
    /// `a && b`: `b` is not evaluated when `a` is zero (so its errors do
    /// not happen either).
    And,
    /// `a || b`: `b` is not evaluated when `a` is non-zero.
    Or,
}

/// A built-in function of tag expressions.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Func {
    /// `abs(x)`, one argument; `abs(i64::MIN)` is an overflow.
    Abs,
    /// `min(a, b)`, two arguments.
    Min,
    /// `max(a, b)`, two arguments.
    Max,
}

/// A tag expression as the front end resolved it: labels are interned and
/// every call has the number of arguments its function takes (the front
/// end checks both; [`Expr::compile`] relies on it).
#[derive(Clone, Debug, PartialEq)]
pub enum ExprTree {
    /// An integer literal.
    Int(i64),
    /// A tag or binding tag of the input record.
    Label(Label),
    /// A prefix operator applied to its operand.
    Unary(UnOp, Box<ExprTree>),
    /// An infix operator applied to its left and right operands.
    Binary(BinOp, Box<ExprTree>, Box<ExprTree>),
    /// `c ? a : b`: `a` if the condition is non-zero, else `b`; only the
    /// branch taken is evaluated.
    Cond(Box<ExprTree>, Box<ExprTree>, Box<ExprTree>),
    /// A built-in function applied to its arguments, evaluated left to right.
    Call(Func, Vec<ExprTree>),
}

#[derive(Copy, Clone, Debug, PartialEq)]
enum Op {
    Const(i64),
    Load(Label),
    Neg,
    Not,
    Bin(BinOp),
    Abs,
    Min,
    Max,
    /// Pop; jump to target if zero.
    JumpIfZero(u32),
    /// Jump unconditionally.
    Jump(u32),
    /// Pop; push 0/1 for it being non-zero.
    Truthy,
    /// If top is zero leave 0 and jump (the `&&` short-circuit), else pop.
    AndShort(u32),
    /// If top is non-zero leave 1 and jump (the `||` short-circuit), else pop.
    OrShort(u32),
}

/// Why an expression could not be evaluated.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EvalError {
    /// The right operand of `/` or `%` was zero.
    DivisionByZero,
    /// A result outside the 64-bit signed range.
    Overflow,
    /// The record lacks a tag the expression reads.
    MissingLabel(Label),
}

impl fmt::Display for EvalError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EvalError::DivisionByZero => write!(f, "division by zero in tag expression"),
            EvalError::Overflow => write!(f, "integer overflow in tag expression"),
            EvalError::MissingLabel(l) => {
                write!(f, "record has no tag {l} that the expression reads")
            }
        }
    }
}

impl std::error::Error for EvalError {}

/// Shapes common enough to skip the bytecode loop: `7`, `n`, `n - 1`,
/// `k == 1`, `v + w`, `2 * k`, and one more operator on top of those
/// (`2 * k + 1`, `k % 2 == 0`).
#[derive(Copy, Clone, Debug, PartialEq)]
enum Fast {
    Const(i64),
    Load(Label),
    LoadOpConst(Label, BinOp, i64),
    /// `a op b`.
    Bin(Operand, BinOp, Operand),
    /// `(a op1 b) op2 c`.
    Bin2(Operand, BinOp, Operand, BinOp, Operand),
    General,
}

/// A leaf of a fast shape.
#[derive(Copy, Clone, Debug, PartialEq)]
enum Operand {
    Int(i64),
    Label(Label),
}

impl Operand {
    fn of(t: &ExprTree) -> Option<Operand> {
        match t {
            ExprTree::Int(v) => Some(Operand::Int(*v)),
            ExprTree::Label(l) => Some(Operand::Label(*l)),
            _ => None,
        }
    }

    #[inline]
    fn get_fast(self, rec: &Record) -> Option<i64> {
        match self {
            Operand::Int(v) => Some(v),
            Operand::Label(l) => rec.int(l),
        }
    }

    #[inline]
    fn get(self, rec: &Record) -> Result<i64, EvalError> {
        match self {
            Operand::Int(v) => Ok(v),
            Operand::Label(l) => rec.int(l).ok_or(EvalError::MissingLabel(l)),
        }
    }
}

/// An operator the fast shapes evaluate eagerly (not the short-circuits).
fn strict(op: &BinOp) -> bool {
    !matches!(op, BinOp::And | BinOp::Or)
}

fn fast_shape(tree: &ExprTree) -> Fast {
    match tree {
        ExprTree::Int(v) => Fast::Const(*v),
        ExprTree::Label(l) => Fast::Load(*l),
        ExprTree::Binary(op, a, b) if strict(op) => {
            match (&**a, &**b) {
                (ExprTree::Label(l), ExprTree::Int(v)) => return Fast::LoadOpConst(*l, *op, *v),
                (ExprTree::Binary(op1, x, y), c) if strict(op1) => {
                    if let (Some(x), Some(y), Some(c)) =
                        (Operand::of(x), Operand::of(y), Operand::of(c))
                    {
                        return Fast::Bin2(x, *op1, y, *op, c);
                    }
                }
                _ => {}
            }
            match (Operand::of(a), Operand::of(b)) {
                (Some(x), Some(y)) => Fast::Bin(x, *op, y),
                _ => Fast::General,
            }
        }
        _ => Fast::General,
    }
}

/// An operand of a [`Slots`] expression.
#[derive(Copy, Clone, Debug, PartialEq)]
enum SlotOperand {
    Int(i64),
    /// The tag at this position of the record.
    Slot(u8),
}

impl SlotOperand {
    #[inline(always)]
    fn int(self, ints: &[i64]) -> Option<i64> {
        match self {
            SlotOperand::Int(v) => Some(v),
            SlotOperand::Slot(i) => ints.get(i as usize).copied(),
        }
    }

    #[inline]
    fn get(self, entries: &[(Label, Value)]) -> Option<i64> {
        match self {
            SlotOperand::Int(v) => Some(v),
            SlotOperand::Slot(i) => match entries.get(i as usize)?.1 {
                Value::Int(v) => Some(v),
                Value::Field(_) => None,
            },
        }
    }
}

/// An expression of one of the fast shapes with its labels bound to
/// positions: for records whose labels are known in advance (a filter's
/// input that carries exactly the pattern's labels), so that evaluating
/// it looks nothing up. Built by [`Expr::bind`].
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct Slots {
    a: SlotOperand,
    op1: BinOp,
    b: SlotOperand,
    /// A second operator on top: `(a op1 b) op2 c`.
    then: Option<(BinOp, SlotOperand)>,
}

impl Slots {
    /// The value on a record whose entries are `entries` (the labels it
    /// was bound to, in that order), or `None` where [`Expr::eval`]
    /// reports an error.
    #[inline]
    pub fn eval(&self, entries: &[(Label, Value)]) -> Option<i64> {
        let ab = binary_fast(self.op1, self.a.get(entries)?, self.b.get(entries)?)?;
        match self.then {
            None => Some(ab),
            Some((op2, c)) => binary_fast(op2, ab, c.get(entries)?),
        }
    }

    /// The value when the bound labels' values are `ints`, in order (a
    /// record of tags only), or `None` where [`Expr::eval`] reports an
    /// error.
    #[inline(always)]
    pub fn eval_ints(&self, ints: &[i64]) -> Option<i64> {
        let ab = binary_fast(self.op1, self.a.int(ints)?, self.b.int(ints)?)?;
        match self.then {
            None => Some(ab),
            Some((op2, c)) => binary_fast(op2, ab, c.int(ints)?),
        }
    }
}

/// A compiled tag expression.
#[derive(Clone, Debug, PartialEq)]
pub struct Expr {
    fast: Fast,
    code: Box<[Op]>,
    stack: usize,
    source: ExprTree,
}

const MAX_INLINE_STACK: usize = 32;

impl Expr {
    /// Compiles `tree` to bytecode (and recognises the common shapes that
    /// skip the bytecode loop). Never fails: the front end has checked
    /// the tree's labels and arities.
    pub fn compile(tree: ExprTree) -> Expr {
        let mut code = Vec::new();
        let mut depth = 0usize;
        let mut max = 0usize;
        emit(&tree, &mut code, &mut depth, &mut max);
        let fast = fast_shape(&tree);
        Expr {
            fast,
            code: code.into_boxed_slice(),
            stack: max.max(1),
            source: tree,
        }
    }

    /// The tree it was compiled from (for printing and graph output).
    pub fn tree(&self) -> &ExprTree {
        &self.source
    }

    /// Labels the expression reads.
    pub fn labels(&self) -> Vec<Label> {
        self.code
            .iter()
            .filter_map(|op| if let Op::Load(l) = op { Some(*l) } else { None })
            .collect()
    }

    /// The expression's value on `rec`, whose tags and binding tags it
    /// reads. Evaluates left to right and stops at the first error; does
    /// not allocate unless the expression needs more than a small fixed
    /// stack.
    pub fn eval(&self, rec: &Record) -> Result<i64, EvalError> {
        let load = |l: Label| rec.int(l).ok_or(EvalError::MissingLabel(l));
        match self.fast {
            Fast::Const(v) => return Ok(v),
            Fast::Load(l) => return load(l),
            Fast::LoadOpConst(l, op, v) => return binary(op, load(l)?, v),
            // Operands left to right, as the bytecode loads them (the same
            // missing label is reported first).
            Fast::Bin(a, op, b) => return binary(op, a.get(rec)?, b.get(rec)?),
            Fast::Bin2(a, op1, b, op2, c) => {
                let ab = binary(op1, a.get(rec)?, b.get(rec)?)?;
                return binary(op2, ab, c.get(rec)?);
            }
            Fast::General => {}
        }
        if self.stack <= 8 {
            let mut stack = [0i64; 8];
            run(&self.code, rec, &mut stack)
        } else if self.stack <= MAX_INLINE_STACK {
            let mut stack = [0i64; MAX_INLINE_STACK];
            run(&self.code, rec, &mut stack)
        } else {
            let mut stack = vec![0i64; self.stack];
            run(&self.code, rec, &mut stack)
        }
    }

    /// The expression with its labels bound to their positions in
    /// `labels` (sorted, as a record keeps them): `None` unless it has one
    /// of the fast shapes and reads only labels of `labels`.
    pub fn bind(&self, labels: &[Label]) -> Option<Slots> {
        let slot = |l: Label| {
            let i = labels.iter().position(|x| *x == l)?;
            u8::try_from(i).ok().map(SlotOperand::Slot)
        };
        let operand = |o: Operand| match o {
            Operand::Int(v) => Some(SlotOperand::Int(v)),
            Operand::Label(l) => slot(l),
        };
        // `x` alone is `x + 0` (adding zero never overflows).
        let zero = SlotOperand::Int(0);
        let (a, op1, b, then) = match self.fast {
            Fast::Const(v) => (SlotOperand::Int(v), BinOp::Add, zero, None),
            Fast::Load(l) => (slot(l)?, BinOp::Add, zero, None),
            Fast::LoadOpConst(l, op, v) => (slot(l)?, op, SlotOperand::Int(v), None),
            Fast::Bin(a, op, b) => (operand(a)?, op, operand(b)?, None),
            Fast::Bin2(a, op1, b, op2, c) => {
                (operand(a)?, op1, operand(b)?, Some((op2, operand(c)?)))
            }
            Fast::General => return None,
        };
        Some(Slots { a, op1, b, then })
    }

    /// `Some((l, op, c))` when the expression is `l op c` for a label `l`
    /// and a constant `c` (`n - 1`, `x + 1`): callers may then update a
    /// tag in place.
    pub fn label_op_const(&self) -> Option<(Label, BinOp, i64)> {
        match self.fast {
            Fast::LoadOpConst(l, op, c) => Some((l, op, c)),
            _ => None,
        }
    }

    /// The value, or `None` where [`Expr::eval`] reports an error (for
    /// hot paths that fall back to `eval` to say which).
    #[inline]
    pub fn eval_fast(&self, rec: &Record) -> Option<i64> {
        match self.fast {
            Fast::Const(v) => Some(v),
            Fast::Load(l) => rec.int(l),
            Fast::LoadOpConst(l, op, v) => binary_fast(op, rec.int(l)?, v),
            Fast::Bin(a, op, b) => binary_fast(op, a.get_fast(rec)?, b.get_fast(rec)?),
            Fast::Bin2(a, op1, b, op2, c) => {
                let ab = binary_fast(op1, a.get_fast(rec)?, b.get_fast(rec)?)?;
                binary_fast(op2, ab, c.get_fast(rec)?)
            }
            Fast::General => self.eval(rec).ok(),
        }
    }

    /// Evaluates as a guard: non-zero is true.
    #[inline]
    pub fn holds(&self, rec: &Record) -> Result<bool, EvalError> {
        self.eval(rec).map(|v| v != 0)
    }
}

fn push(depth: &mut usize, max: &mut usize) {
    *depth += 1;
    *max = (*max).max(*depth);
}

fn emit(t: &ExprTree, code: &mut Vec<Op>, depth: &mut usize, max: &mut usize) {
    match t {
        ExprTree::Int(v) => {
            code.push(Op::Const(*v));
            push(depth, max);
        }
        ExprTree::Label(l) => {
            code.push(Op::Load(*l));
            push(depth, max);
        }
        ExprTree::Unary(op, e) => {
            emit(e, code, depth, max);
            code.push(match op {
                UnOp::Neg => Op::Neg,
                UnOp::Not => Op::Not,
            });
        }
        ExprTree::Binary(BinOp::And, a, b) | ExprTree::Binary(BinOp::Or, a, b) => {
            let and = matches!(t, ExprTree::Binary(BinOp::And, ..));
            emit(a, code, depth, max);
            let at = code.len();
            code.push(Op::Jump(0)); // patched below
            *depth -= 1;
            emit(b, code, depth, max);
            code.push(Op::Truthy);
            let end = code.len() as u32;
            code[at] = if and {
                Op::AndShort(end)
            } else {
                Op::OrShort(end)
            };
        }
        ExprTree::Binary(op, a, b) => {
            emit(a, code, depth, max);
            emit(b, code, depth, max);
            code.push(Op::Bin(*op));
            *depth -= 1;
        }
        ExprTree::Cond(c, a, b) => {
            emit(c, code, depth, max);
            let jz = code.len();
            code.push(Op::JumpIfZero(0));
            *depth -= 1;
            emit(a, code, depth, max);
            let j = code.len();
            code.push(Op::Jump(0));
            *depth -= 1;
            let else_at = code.len() as u32;
            emit(b, code, depth, max);
            let end = code.len() as u32;
            code[jz] = Op::JumpIfZero(else_at);
            code[j] = Op::Jump(end);
        }
        ExprTree::Call(f, args) => {
            for a in args {
                emit(a, code, depth, max);
            }
            match f {
                Func::Abs => code.push(Op::Abs),
                Func::Min | Func::Max => {
                    code.push(if *f == Func::Min { Op::Min } else { Op::Max });
                    *depth -= 1;
                }
            }
        }
    }
}

fn run(code: &[Op], rec: &Record, stack: &mut [i64]) -> Result<i64, EvalError> {
    let mut sp = 0usize; // number of values on the stack
    let mut pc = 0usize;
    while pc < code.len() {
        match code[pc] {
            Op::Const(v) => {
                stack[sp] = v;
                sp += 1;
            }
            Op::Load(l) => {
                stack[sp] = rec.int(l).ok_or(EvalError::MissingLabel(l))?;
                sp += 1;
            }
            Op::Neg => stack[sp - 1] = stack[sp - 1].checked_neg().ok_or(EvalError::Overflow)?,
            Op::Not => stack[sp - 1] = (stack[sp - 1] == 0) as i64,
            Op::Truthy => stack[sp - 1] = (stack[sp - 1] != 0) as i64,
            Op::Abs => stack[sp - 1] = stack[sp - 1].checked_abs().ok_or(EvalError::Overflow)?,
            Op::Min => {
                sp -= 1;
                stack[sp - 1] = stack[sp - 1].min(stack[sp]);
            }
            Op::Max => {
                sp -= 1;
                stack[sp - 1] = stack[sp - 1].max(stack[sp]);
            }
            Op::Bin(op) => {
                sp -= 1;
                let (a, b) = (stack[sp - 1], stack[sp]);
                stack[sp - 1] = binary(op, a, b)?;
            }
            Op::JumpIfZero(t) => {
                sp -= 1;
                if stack[sp] == 0 {
                    pc = t as usize;
                    continue;
                }
            }
            Op::Jump(t) => {
                pc = t as usize;
                continue;
            }
            Op::AndShort(t) => {
                if stack[sp - 1] == 0 {
                    pc = t as usize;
                    continue;
                }
                sp -= 1;
            }
            Op::OrShort(t) => {
                if stack[sp - 1] != 0 {
                    stack[sp - 1] = 1;
                    pc = t as usize;
                    continue;
                }
                sp -= 1;
            }
        }
        pc += 1;
    }
    debug_assert_eq!(sp, 1);
    Ok(stack[0])
}

impl BinOp {
    /// `a op b`, or `None` for a division by zero or an overflow (what
    /// [`Expr::eval`] reports as an error).
    #[inline]
    pub fn apply(self, a: i64, b: i64) -> Option<i64> {
        binary_fast(self, a, b)
    }
}

/// [`binary`] without the error: `None` for a division by zero or an
/// overflow.
#[inline]
fn binary_fast(op: BinOp, a: i64, b: i64) -> Option<i64> {
    Some(match op {
        BinOp::Add => a.checked_add(b)?,
        BinOp::Sub => a.checked_sub(b)?,
        BinOp::Mul => a.checked_mul(b)?,
        // `None` for b == 0 and for i64::MIN / -1.
        BinOp::Div => a.checked_div(b)?,
        // i64::MIN % -1 is 0 mathematically; Rust's checked_rem calls it
        // an overflow (the machine instruction traps), and so do we: it
        // comes with the same quotient.
        BinOp::Mod => a.checked_rem(b)?,
        BinOp::Eq => (a == b) as i64,
        BinOp::Ne => (a != b) as i64,
        BinOp::Lt => (a < b) as i64,
        BinOp::Le => (a <= b) as i64,
        BinOp::Gt => (a > b) as i64,
        BinOp::Ge => (a >= b) as i64,
        BinOp::And => (a != 0 && b != 0) as i64,
        BinOp::Or => (a != 0 || b != 0) as i64,
    })
}

/// `a op b`; division and remainder by zero, and overflow, are errors.
#[inline]
fn binary(op: BinOp, a: i64, b: i64) -> Result<i64, EvalError> {
    binary_fast(op, a, b).ok_or(if matches!(op, BinOp::Div | BinOp::Mod) && b == 0 {
        EvalError::DivisionByZero
    } else {
        EvalError::Overflow
    })
}

#[cfg(test)]
mod tests {
    use super::{BinOp, EvalError, Expr, ExprTree, Func, Record};
    use ExprTree::*;

    fn b(op: BinOp, x: ExprTree, y: ExprTree) -> ExprTree {
        Binary(op, Box::new(x), Box::new(y))
    }

    /// The fast shapes give what the bytecode gives: values, division by
    /// zero, and the first missing label (operands left to right).
    #[test]
    fn fast_shapes_agree_with_bytecode() {
        use super::{fast_shape, run, Fast};
        let k = crate::label::Label::tag("fk");
        let v = crate::label::Label::tag("fv");
        let gone = crate::label::Label::tag("fgone");
        let zero = crate::label::Label::tag("fzero");
        let mut r = Record::new();
        r.set_int(k, 13);
        r.set_int(v, -4);
        r.set_int(zero, 0);
        let leaves = [Int(2), Int(0), Label(k), Label(v), Label(gone), Label(zero)];
        let ops = [
            BinOp::Add,
            BinOp::Sub,
            BinOp::Mul,
            BinOp::Div,
            BinOp::Mod,
            BinOp::Eq,
            BinOp::Lt,
        ];
        let mut checked = 0;
        for a in &leaves {
            for x in &leaves {
                for op in ops {
                    let two = b(op, a.clone(), x.clone());
                    let mut trees = vec![two.clone()];
                    for c in &leaves {
                        for op2 in ops {
                            trees.push(b(op2, two.clone(), c.clone()));
                        }
                    }
                    for t in trees {
                        let e = Expr::compile(t.clone());
                        assert_ne!(fast_shape(&t), Fast::General, "{t:?}");
                        let mut stack = [0i64; 8];
                        assert_eq!(e.eval(&r), run(&e.code, &r, &mut stack), "{t:?}");
                        checked += 1;
                    }
                }
            }
        }
        assert!(checked > 1000);
        // Short-circuit operators stay on the bytecode path.
        assert_eq!(fast_shape(&b(BinOp::And, Label(k), Int(1))), Fast::General);
        assert_eq!(
            fast_shape(&b(BinOp::Add, b(BinOp::Or, Label(k), Int(1)), Int(1))),
            Fast::General
        );
    }

    #[test]
    fn arithmetic_and_short_circuit() {
        let n = crate::label::Label::tag("en");
        let mut r = Record::new();
        r.set_int(n, 7);
        let e = Expr::compile(b(BinOp::Sub, b(BinOp::Mul, Label(n), Int(2)), Int(1)));
        assert_eq!(e.eval(&r), Ok(13));
        // 0 && (1/0) short-circuits; 1 || (1/0) too.
        let div0 = b(BinOp::Div, Int(1), Int(0));
        assert_eq!(
            Expr::compile(b(BinOp::And, Int(0), div0.clone())).eval(&r),
            Ok(0)
        );
        assert_eq!(
            Expr::compile(b(BinOp::Or, Int(5), div0.clone())).eval(&r),
            Ok(1)
        );
        assert_eq!(Expr::compile(b(BinOp::And, Int(5), Int(3))).eval(&r), Ok(1));
        assert_eq!(Expr::compile(div0).eval(&r), Err(EvalError::DivisionByZero));
        assert_eq!(
            Expr::compile(b(BinOp::Div, Int(-7), Int(2))).eval(&r),
            Ok(-3)
        );
        assert_eq!(
            Expr::compile(b(BinOp::Mod, Int(-7), Int(2))).eval(&r),
            Ok(-1)
        );
        let c = Cond(
            Box::new(b(BinOp::Gt, Label(n), Int(5))),
            Box::new(Int(1)),
            Box::new(Int(2)),
        );
        assert_eq!(Expr::compile(c).eval(&r), Ok(1));
        assert_eq!(
            Expr::compile(b(BinOp::Le, Label(n), Int(7))).eval(&r),
            Ok(1)
        );
        assert_eq!(
            Expr::compile(b(BinOp::Mod, Label(n), Int(0))).eval(&r),
            Err(EvalError::DivisionByZero)
        );
        let m = Call(Func::Max, vec![Int(3), Call(Func::Abs, vec![Int(-9)])]);
        assert_eq!(Expr::compile(m).eval(&r), Ok(9));
        let missing = crate::label::Label::tag("missing_x");
        assert_eq!(
            Expr::compile(Label(missing)).eval(&r),
            Err(EvalError::MissingLabel(missing))
        );
    }

    /// Results outside the 64-bit range are errors, on the fast shapes
    /// (`eval`'s shortcut, `eval_fast`, a bound form) and the bytecode
    /// loop alike, never wrapped values.
    #[test]
    fn overflow_is_an_error_on_every_path() {
        let n = crate::label::Label::tag("ovn");
        let mut r = Record::new();
        r.set_int(n, i64::MAX);
        let trees = [
            b(BinOp::Add, Label(n), Int(1)),
            b(BinOp::Sub, Int(-2), Label(n)),
            b(BinOp::Mul, Label(n), Int(2)),
            b(BinOp::Add, b(BinOp::Mul, Int(2), Label(n)), Int(0)),
            b(BinOp::Div, b(BinOp::Sub, Int(-1), Label(n)), Int(-1)),
            b(BinOp::Mod, b(BinOp::Sub, Int(-1), Label(n)), Int(-1)),
            Unary(super::UnOp::Neg, Box::new(b(BinOp::Sub, Int(-1), Label(n)))),
            Call(Func::Abs, vec![b(BinOp::Sub, Int(-1), Label(n))]),
            // Behind a short-circuit: the bytecode path.
            b(BinOp::Or, Int(0), b(BinOp::Add, Label(n), Label(n))),
        ];
        for t in trees {
            let e = Expr::compile(t.clone());
            assert_eq!(e.eval(&r), Err(EvalError::Overflow), "{t:?}");
            assert_eq!(e.eval_fast(&r), None, "{t:?}");
            if let Some(s) = e.bind(&[n]) {
                assert_eq!(s.eval_ints(&[i64::MAX]), None, "{t:?}");
            }
        }
        // Division by zero stays that, also of i64::MIN.
        let t = b(BinOp::Div, b(BinOp::Sub, Int(-1), Label(n)), Int(0));
        assert_eq!(Expr::compile(t).eval(&r), Err(EvalError::DivisionByZero));
        // In range, the edges are fine.
        let t = b(BinOp::Add, b(BinOp::Sub, Int(-1), Label(n)), Label(n));
        assert_eq!(Expr::compile(t).eval(&r), Ok(-1));
    }
}
