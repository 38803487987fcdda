//! The syntax tree, exactly as written, with byte spans.
//!
//! Names are unresolved strings here; [`crate::resolve`] turns the tree into
//! the checked intermediate form. Combinator chains (`..`, `|`) are kept flat
//! so that long pipelines do not become deep trees.

use snet_core::{BinOp, Func, LabelKind, UnOp};

use crate::diag::Span;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ident {
    pub name: String,
    pub span: Span,
}

/// A whole file.
#[derive(Clone, Debug, Default)]
pub struct Program {
    pub defs: Vec<Def>,
}

#[derive(Clone, Debug)]
pub enum Def {
    Box(BoxDecl),
    Net(NetDef),
    Type(TypeDef),
    Typesig(TypesigDef),
    /// A `<metadata>` block, which may stand wherever a definition may.
    Metadata(crate::metadata::Block),
}

/// `box name(sig);` or `box name(sig) { <<< LANGUAGE | code >>> }`
#[derive(Clone, Debug)]
pub struct BoxDecl {
    pub name: Ident,
    /// `None` for an initialiser (`box init(-> (A));`).
    pub inputs: Option<Vec<LabelAst>>,
    pub outputs: Vec<VariantAst>,
    /// The inline body, if the box has one.
    pub body: Option<InlineCode>,
    pub span: Span,
}

/// A box's code written in the program: `{ <<< LANGUAGE | code >>> }`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InlineCode {
    /// The language name as written (`C`, `SAC`, ...).
    pub language: Ident,
    /// The text between `|` and `>>>`, verbatim.
    pub code: String,
    /// Where `code` is in the file.
    pub code_span: Span,
    /// The whole `<<< ... >>>` block.
    pub span: Span,
}

/// `net name (sig) { defs } connect expr;`
#[derive(Clone, Debug)]
pub struct NetDef {
    pub name: Ident,
    pub sig: Option<Vec<SigItem>>,
    pub sig_span: Option<Span>,
    pub defs: Vec<Def>,
    pub body: Option<Expr>,
}

/// `type name = type;`
#[derive(Clone, Debug)]
pub struct TypeDef {
    pub name: Ident,
    pub ty: TypeAst,
}

/// `typesig name = mapping, ...;`
#[derive(Clone, Debug)]
pub struct TypesigDef {
    pub name: Ident,
    pub items: Vec<SigItem>,
}

/// One element of a net or type signature.
#[derive(Clone, Debug)]
pub enum SigItem {
    Mapping(Mapping),
    /// A typesig name.
    Named(Ident),
}

/// `type -> type` or `type -> ...`.
#[derive(Clone, Debug)]
pub struct Mapping {
    pub input: TypeAst,
    /// `None` for `...`.
    pub output: Option<TypeAst>,
    pub span: Span,
}

/// `{..} | {..} | T`.
#[derive(Clone, Debug)]
pub struct TypeAst {
    pub atoms: Vec<TypeAtom>,
    pub span: Span,
}

#[derive(Clone, Debug)]
pub enum TypeAtom {
    Variant(VariantAst),
    Named(Ident),
}

/// `{a, <t>, <#b>}`.
#[derive(Clone, Debug)]
pub struct VariantAst {
    pub labels: Vec<LabelAst>,
    pub span: Span,
}

#[derive(Clone, Debug)]
pub struct LabelAst {
    pub kind: LabelKind,
    pub name: String,
    pub span: Span,
}

/// A combinator expression.
#[derive(Clone, Debug)]
pub struct Expr {
    pub kind: ExprKind,
    pub span: Span,
    /// Height of this tree (a leaf is 1), kept to bound recursion in later passes.
    pub height: u32,
}

#[derive(Clone, Debug)]
pub enum ExprKind {
    Name(Ident),
    /// `[ pattern -> action ]`, or `[]` (pattern `None`).
    Filter(Filter),
    /// `[| p1, p2 if <g> |]`.
    Synchrocell(Vec<GuardedVariant>),
    /// `A .. B .. C`, flat; the spans are those of the `..` operators.
    Serial(Vec<Expr>, Vec<Span>),
    /// `A | B | C` (or `||`), flat.
    Parallel {
        branches: Vec<Expr>,
        det: bool,
        op: Span,
    },
    /// `A * pats` / `A ** pats`.
    Star {
        body: Box<Expr>,
        exits: Vec<GuardedVariant>,
        det: bool,
        op: Span,
    },
    /// `A ! <t>` / `A !! <t>`.
    Split {
        body: Box<Expr>,
        tag: LabelAst,
        det: bool,
        op: Span,
    },
    /// `A \ pats`.
    Feedback {
        body: Box<Expr>,
        back: Vec<GuardedVariant>,
        op: Span,
    },
    /// `A @ n`.
    Place {
        body: Box<Expr>,
        node: i64,
        op: Span,
    },
    /// `A !@ <t>` / `A !!@ <t>` (deterministic).
    DynPlace {
        body: Box<Expr>,
        tag: LabelAst,
        det: bool,
        op: Span,
    },
}

/// `variant if <guard>`.
#[derive(Clone, Debug)]
pub struct GuardedVariant {
    pub variant: VariantAst,
    pub guard: Option<TagExpr>,
    pub span: Span,
}

#[derive(Clone, Debug)]
pub struct Filter {
    /// `None` for the identity filter `[]`.
    pub pattern: Option<VariantAst>,
    /// `if <g> then outs else ...` arms in order; the last has no guard.
    pub arms: Vec<Arm>,
}

#[derive(Clone, Debug)]
pub struct Arm {
    pub guard: Option<TagExpr>,
    pub outputs: Vec<OutSpecAst>,
}

/// `{ item, ... }`.
#[derive(Clone, Debug)]
pub struct OutSpecAst {
    pub items: Vec<ItemAst>,
}

#[derive(Clone, Debug)]
pub enum ItemAst {
    /// `f` (src `None`) or `f=g`.
    Field { dst: Ident, src: Option<Ident> },
    /// `<t>`, `<t=e>`, `<#b>`, `<#b=e>`.
    Tag {
        kind: LabelKind,
        name: Ident,
        value: Option<TagExpr>,
    },
}

/// A tag expression.
#[derive(Clone, Debug)]
pub struct TagExpr {
    pub kind: TagExprKind,
    pub span: Span,
    /// Height of this tree (a leaf is 1), kept to bound recursion in later passes.
    pub height: u32,
}

#[derive(Clone, Debug)]
pub enum TagExprKind {
    Int(i64),
    /// A bare tag or binding-tag name.
    Name(String),
    Unary(UnOp, Box<TagExpr>),
    Binary(BinOp, Box<TagExpr>, Box<TagExpr>),
    Cond(Box<TagExpr>, Box<TagExpr>, Box<TagExpr>),
    Call(Func, Vec<TagExpr>),
}
