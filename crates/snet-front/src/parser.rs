//! Recursive-descent parser for the whole of language.md §2-§5.
//!
//! Naming convention:
//! - `parse_x` parses an `x` that must be there: if it is not, it reports an
//!   error and returns `Err(Fail)` (the diagnostic is already recorded).
//! - `maybe_x` returns `Ok(None)` without consuming anything or reporting when
//!   the next token cannot start an `x`.
//! - `eat(tok)` consumes `tok` if it is next and says whether it did;
//!   `expect(tok, ..)` consumes it or reports "expected ..." and fails.
//!
//! Error recovery: a failure unwinds to the enclosing definition, which is
//! skipped up to its closing `;` (tracking brackets), to the next `net`,
//! `box`, `type` or `typesig` keyword, or to a `}` that closes the enclosing
//! net body, and parsing goes on, so one run reports every syntax error of
//! the file. Recursion is bounded ([`MAX_DEPTH`] nested constructs, trees at
//! most [`MAX_HEIGHT`] high): deep input is an error, never a stack overflow.
//!
//! Precedence of combinators, lowest first: `|` `||`; `..`; postfix `*` `**`
//! `!` `!!` `\` `@` `!@` (left to right). Tag expressions follow C. Inside
//! `< ... >` a `>` closes the brackets unless the next token can start an
//! operand, so `<K > 1>` is the comparison `K > 1`.

use snet_core::{BinOp, Func, LabelKind, UnOp};

use crate::ast::*;
use crate::diag::{Diagnostic, Diagnostics, Span};
use crate::lexer::{self, Tok, Token};
use crate::metadata;

/// Nesting limit for parenthesised expressions, nested nets and unary chains.
pub const MAX_DEPTH: u32 = 200;
/// Height limit for expression trees (postfix chains, binary operator chains).
pub const MAX_HEIGHT: u32 = 400;

/// The error has been reported; unwind to a recovery point.
#[derive(Debug)]
pub struct Fail;

type PResult<T> = Result<T, Fail>;

const DEF_KEYWORDS: [&str; 4] = ["net", "box", "type", "typesig"];
const RESERVED: [&str; 8] = [
    "net", "box", "type", "typesig", "connect", "if", "then", "else",
];

/// Parses a whole file. Always returns a (possibly partial) program.
pub fn parse_program(src: &str, diags: &mut Diagnostics) -> Program {
    let start = lexer::skip_trivia(src, 0, diags);
    let (metadata, rest) = match metadata::parse(src, start, diags) {
        Some((m, end)) => (Some(m), end),
        None => (None, start),
    };
    let toks = lexer::lex(src, rest, diags);
    let mut p = Parser {
        src,
        toks,
        pos: 0,
        diags,
        depth: 0,
        recovering: false,
    };
    let defs = p.defs(false);
    Program { metadata, defs }
}

struct Parser<'s, 'd> {
    src: &'s str,
    toks: Vec<Token>,
    pos: usize,
    diags: &'d mut Diagnostics,
    depth: u32,
    /// Set after a failed definition: stray tokens are skipped silently until the next definition.
    recovering: bool,
}

impl<'s> Parser<'s, '_> {
    // ---- token helpers ----

    fn tok(&self) -> Tok {
        self.toks[self.pos].tok
    }

    fn span(&self) -> Span {
        self.toks[self.pos].span()
    }

    fn text(&self) -> &'s str {
        let t = &self.toks[self.pos];
        &self.src[t.start as usize..t.end as usize]
    }

    fn at_ident(&self, word: &str) -> bool {
        self.tok() == Tok::Ident && self.text() == word
    }

    fn prev_end(&self) -> usize {
        if self.pos == 0 {
            self.toks[0].start as usize
        } else {
            self.toks[self.pos - 1].end as usize
        }
    }

    fn bump(&mut self) -> Token {
        let t = self.toks[self.pos];
        if t.tok != Tok::Eof {
            self.pos += 1;
        }
        t
    }

    fn eat(&mut self, tok: Tok) -> bool {
        if self.tok() == tok {
            self.bump();
            true
        } else {
            false
        }
    }

    fn found(&self) -> String {
        match self.tok() {
            Tok::Ident => format!("`{}`", self.text()),
            Tok::Int(_) => format!("the integer `{}`", self.text()),
            t => t.describe().to_string(),
        }
    }

    fn error_here<T>(&mut self, expected: &str) -> PResult<T> {
        let msg = format!("expected {expected}, found {}", self.found());
        let label = format!("expected {expected}");
        self.diags
            .push(Diagnostic::error(self.span(), msg).with_label(label));
        Err(Fail)
    }

    fn expect(&mut self, tok: Tok, context: &str) -> PResult<Token> {
        if self.tok() == tok {
            Ok(self.bump())
        } else {
            self.error_here(&format!("{} {context}", tok.describe()))
        }
    }

    /// A missing `;` at the end of a complete definition is reported, but the
    /// definition is kept (no recovery needed: the next one starts right here).
    fn expect_semi(&mut self, context: &str) {
        if !self.eat(Tok::Semi) {
            let _ = self.error_here::<()>(&format!("`;` {context}"));
            self.recovering = true;
        }
    }

    fn expect_word(&mut self, word: &str, context: &str) -> PResult<()> {
        if self.at_ident(word) {
            self.bump();
            Ok(())
        } else {
            self.error_here(&format!("`{word}` {context}"))
        }
    }

    fn parse_ident(&mut self, what: &str) -> PResult<Ident> {
        if self.tok() == Tok::Ident {
            let name = self.text().to_string();
            let span = self.bump().span();
            Ok(Ident { name, span })
        } else {
            self.error_here(what)
        }
    }

    /// A name being defined: an identifier that is not a keyword.
    fn parse_name(&mut self, what: &str) -> PResult<Ident> {
        if self.tok() == Tok::Ident && RESERVED.contains(&self.text()) {
            let word = self.text().to_string();
            self.diags.push(
                Diagnostic::error(
                    self.span(),
                    format!("`{word}` is a keyword and cannot be used as a name"),
                )
                .with_label(format!("expected {what}")),
            );
            return Err(Fail);
        }
        self.parse_ident(what)
    }

    /// Runs `f` one nesting level deeper, failing past [`MAX_DEPTH`].
    fn nested<T>(&mut self, f: impl FnOnce(&mut Self) -> PResult<T>) -> PResult<T> {
        if self.depth >= MAX_DEPTH {
            self.diags.push(
                Diagnostic::error(self.span(), "program nested too deeply")
                    .with_label(format!("more than {MAX_DEPTH} levels of nesting here")),
            );
            return Err(Fail);
        }
        self.depth += 1;
        let r = f(self);
        self.depth -= 1;
        r
    }

    fn check_height(&mut self, height: u32, span: &Span) -> PResult<()> {
        if height > MAX_HEIGHT {
            self.diags.push(
                Diagnostic::error(span.clone(), "expression nested too deeply")
                    .with_label(format!(
                        "this expression is more than {MAX_HEIGHT} levels deep"
                    ))
                    .with_note("split it into named nets"),
            );
            return Err(Fail);
        }
        Ok(())
    }

    // ---- definitions ----

    fn defs(&mut self, in_net: bool) -> Vec<Def> {
        let mut defs = Vec::new();
        loop {
            match self.tok() {
                Tok::Eof => break,
                Tok::RBrace if in_net => break,
                Tok::Ident if DEF_KEYWORDS.contains(&self.text()) => {
                    let start = self.pos;
                    match self.parse_def() {
                        Ok(d) => {
                            defs.push(d);
                            self.recovering = false;
                        }
                        Err(Fail) => self.recover(start),
                    }
                }
                Tok::Semi => {
                    self.bump();
                }
                _ if self.recovering => {
                    self.bump();
                }
                _ => {
                    let start = self.pos;
                    let _ =
                        self.error_here::<()>("a definition (`net`, `box`, `type` or `typesig`)");
                    self.recover(start);
                }
            }
        }
        defs
    }

    /// Skips the broken definition that started at token `start` (see the module doc).
    fn recover(&mut self, start: usize) {
        self.recovering = true;
        let mut stack: Vec<Tok> = Vec::new();
        let mut i = start;
        let failed_at = self.pos.max(start + 1);
        while i < self.toks.len() {
            let t = self.toks[i];
            let beyond = i >= failed_at;
            match t.tok {
                Tok::Eof => break,
                Tok::Ident
                    if beyond
                        && DEF_KEYWORDS.contains(&&self.src[t.start as usize..t.end as usize]) =>
                {
                    let only_braces = stack.iter().all(|&o| o == Tok::LBrace);
                    if stack.is_empty() || (!only_braces && self.at_line_start(t.start as usize)) {
                        break;
                    }
                }
                Tok::LParen | Tok::LBracket | Tok::LBrace | Tok::SyncOpen => stack.push(t.tok),
                Tok::RParen | Tok::RBracket | Tok::RBrace | Tok::SyncClose => {
                    let opener = match t.tok {
                        Tok::RParen => Tok::LParen,
                        Tok::RBracket => Tok::LBracket,
                        Tok::RBrace => Tok::LBrace,
                        _ => Tok::SyncOpen,
                    };
                    match stack.iter().rposition(|&o| o == opener) {
                        Some(k) => stack.truncate(k),
                        None if t.tok == Tok::RBrace && beyond => break, // closes the enclosing net body
                        None => {}
                    }
                }
                Tok::Semi if beyond && stack.is_empty() => {
                    i += 1;
                    break;
                }
                _ => {}
            }
            i += 1;
        }
        self.pos = i.max(start + 1).min(self.toks.len() - 1);
    }

    fn at_line_start(&self, offset: usize) -> bool {
        let line_start = self.src[..offset].rfind('\n').map_or(0, |i| i + 1);
        self.src[line_start..offset].trim().is_empty()
    }

    fn parse_def(&mut self) -> PResult<Def> {
        match self.text() {
            "net" => self.nested(|p| p.parse_net()).map(Def::Net),
            "box" => self.parse_box().map(Def::Box),
            "type" => self.parse_type_def().map(Def::Type),
            _ => self.parse_typesig_def().map(Def::Typesig),
        }
    }

    fn parse_box(&mut self) -> PResult<BoxDecl> {
        let start = self.bump().start as usize; // `box`
        let name = self.parse_name("a box name")?;
        self.expect(Tok::LParen, "to open the box signature")?;
        let inputs = if self.tok() == Tok::LParen {
            Some(self.parse_paren_labels()?.labels)
        } else {
            None
        };
        self.expect(Tok::Arrow, "in the box signature")?;
        let mut outputs = vec![self.parse_paren_labels()?];
        while self.eat(Tok::Bar) {
            outputs.push(self.parse_paren_labels()?);
        }
        self.expect(Tok::RParen, "to close the box signature")?;
        self.expect_semi("after the box declaration");
        Ok(BoxDecl {
            name,
            inputs,
            outputs,
            span: start..self.prev_end(),
        })
    }

    /// `( labels? )`, as in box signatures.
    fn parse_paren_labels(&mut self) -> PResult<VariantAst> {
        let start = self.expect(Tok::LParen, "to open a label list")?.start as usize;
        let labels = self.parse_labels(Tok::RParen)?;
        self.expect(Tok::RParen, "to close the label list")?;
        Ok(VariantAst {
            labels,
            span: start..self.prev_end(),
        })
    }

    /// `label (, label)*`, possibly empty when `close` is next.
    fn parse_labels(&mut self, close: Tok) -> PResult<Vec<LabelAst>> {
        let mut labels = Vec::new();
        if self.tok() == close {
            return Ok(labels);
        }
        loop {
            labels.push(self.parse_label()?);
            if !self.eat(Tok::Comma) {
                return Ok(labels);
            }
        }
    }

    /// `f`, `<t>` or `<#b>`.
    fn parse_label(&mut self) -> PResult<LabelAst> {
        if self.tok() == Tok::Ident {
            let id = self.parse_ident("a label")?;
            return Ok(LabelAst {
                kind: LabelKind::Field,
                name: id.name,
                span: id.span,
            });
        }
        if self.tok() != Tok::Lt {
            return self.error_here("a label (`field`, `<tag>` or `<#btag>`)");
        }
        self.parse_tag_label()
    }

    /// `<t>` or `<#b>`.
    fn parse_tag_label(&mut self) -> PResult<LabelAst> {
        let start = self.expect(Tok::Lt, "to open a tag")?.start as usize;
        let kind = if self.eat(Tok::Hash) {
            LabelKind::BTag
        } else {
            LabelKind::Tag
        };
        let id = self.parse_ident("a tag name")?;
        self.expect(Tok::Gt, "to close the tag")?;
        Ok(LabelAst {
            kind,
            name: id.name,
            span: start..self.prev_end(),
        })
    }

    /// `{ labels? }`.
    fn parse_variant(&mut self) -> PResult<VariantAst> {
        let start = self.expect(Tok::LBrace, "to open a record type")?.start as usize;
        let labels = self.parse_labels(Tok::RBrace)?;
        self.expect(Tok::RBrace, "to close the record type")?;
        Ok(VariantAst {
            labels,
            span: start..self.prev_end(),
        })
    }

    fn parse_net(&mut self) -> PResult<NetDef> {
        let start = self.bump().start as usize; // `net`
        let name = self.parse_name("a net name")?;
        let (mut sig, mut sig_span) = (None, None);
        if self.tok() == Tok::LParen {
            let s = self.bump().start as usize;
            sig = Some(self.parse_sig_items(Tok::RParen)?);
            self.expect(Tok::RParen, "to close the net signature")?;
            sig_span = Some(s..self.prev_end());
        }
        let mut defs = Vec::new();
        if self.eat(Tok::LBrace) {
            defs = self.defs(true);
            self.expect(Tok::RBrace, "to close the net body")?;
        }
        let body = if self.at_ident("connect") {
            self.bump();
            Some(self.parse_expr()?)
        } else {
            None
        };
        if !self.eat(Tok::Semi) {
            let ok_follow = matches!(self.tok(), Tok::Eof | Tok::RBrace)
                || (self.tok() == Tok::Ident && DEF_KEYWORDS.contains(&self.text()));
            if !ok_follow {
                let what = if body.is_some() {
                    "`;` or a combinator"
                } else if defs.is_empty() && sig.is_none() {
                    "a signature `(...)`, a body `{...}`, `connect` or `;`"
                } else {
                    "`connect` or `;`"
                };
                return self.error_here(what);
            }
        }
        Ok(NetDef {
            name,
            sig,
            sig_span,
            defs,
            body,
            span: start..self.prev_end(),
        })
    }

    /// `item (, item)*` where item is a mapping or a typesig name.
    fn parse_sig_items(&mut self, _close: Tok) -> PResult<Vec<SigItem>> {
        let mut items = Vec::new();
        loop {
            let ty = self.parse_type()?;
            if self.eat(Tok::Arrow) {
                let output = if self.eat(Tok::Ellipsis) {
                    None
                } else {
                    Some(self.parse_type()?)
                };
                let span = ty.span.start..self.prev_end();
                items.push(SigItem::Mapping(Mapping {
                    input: ty,
                    output,
                    span,
                }));
            } else if let [TypeAtom::Named(id)] = ty.atoms.as_slice() {
                items.push(SigItem::Named(id.clone()));
            } else {
                return self.error_here("`->` after the input type");
            }
            if !self.eat(Tok::Comma) {
                return Ok(items);
            }
        }
    }

    /// `atom (| atom)*`, an atom being `{...}` or a type name.
    fn parse_type(&mut self) -> PResult<TypeAst> {
        let start = self.span().start;
        let mut atoms = Vec::new();
        loop {
            match self.tok() {
                Tok::LBrace => atoms.push(TypeAtom::Variant(self.parse_variant()?)),
                Tok::Ident => atoms.push(TypeAtom::Named(self.parse_ident("a type name")?)),
                _ => return self.error_here("a type (`{...}` or a type name)"),
            }
            if !self.eat(Tok::Bar) {
                break;
            }
        }
        Ok(TypeAst {
            atoms,
            span: start..self.prev_end(),
        })
    }

    fn parse_type_def(&mut self) -> PResult<TypeDef> {
        let start = self.bump().start as usize; // `type`
        let name = self.parse_name("a type name")?;
        self.expect(Tok::Eq, "after the type name")?;
        let ty = self.parse_type()?;
        self.expect_semi("after the type definition");
        Ok(TypeDef {
            name,
            ty,
            span: start..self.prev_end(),
        })
    }

    fn parse_typesig_def(&mut self) -> PResult<TypesigDef> {
        let start = self.bump().start as usize; // `typesig`
        let name = self.parse_name("a type signature name")?;
        self.expect(Tok::Eq, "after the type signature name")?;
        let items = self.parse_sig_items(Tok::Semi)?;
        self.expect_semi("after the type signature");
        Ok(TypesigDef {
            name,
            items,
            span: start..self.prev_end(),
        })
    }

    // ---- combinator expressions ----

    fn parse_expr(&mut self) -> PResult<Expr> {
        self.nested(|p| p.parse_parallel())
    }

    fn parse_parallel(&mut self) -> PResult<Expr> {
        let mut acc = self.parse_serial()?;
        loop {
            let det = match self.tok() {
                Tok::Bar => false,
                Tok::BarBar => true,
                _ => return Ok(acc),
            };
            let op_tok = self.tok();
            let op = self.bump().span();
            let mut branches = vec![acc, self.parse_serial()?];
            while self.eat(op_tok) {
                branches.push(self.parse_serial()?);
            }
            acc = self.flat(branches, |branches| ExprKind::Parallel {
                branches,
                det,
                op,
            })?;
        }
    }

    fn parse_serial(&mut self) -> PResult<Expr> {
        let first = self.parse_postfix()?;
        if self.tok() != Tok::DotDot {
            return Ok(first);
        }
        let mut parts = vec![first];
        let mut ops = Vec::new();
        while self.tok() == Tok::DotDot {
            ops.push(self.bump().span());
            parts.push(self.parse_postfix()?);
        }
        self.flat(parts, |parts| ExprKind::Serial(parts, ops))
    }

    fn flat(
        &mut self,
        parts: Vec<Expr>,
        make: impl FnOnce(Vec<Expr>) -> ExprKind,
    ) -> PResult<Expr> {
        let span = parts[0].span.start..parts[parts.len() - 1].span.end;
        let height = parts.iter().map(|e| e.height).max().unwrap_or(0) + 1;
        self.check_height(height, &span)?;
        Ok(Expr {
            kind: make(parts),
            span,
            height,
        })
    }

    fn parse_postfix(&mut self) -> PResult<Expr> {
        let mut e = self.parse_primary()?;
        loop {
            let tok = self.tok();
            let kind = match tok {
                Tok::Star | Tok::StarStar | Tok::Backslash => {
                    let op = self.bump().span();
                    let pats = self.parse_patterns()?;
                    let body = Box::new(e);
                    if tok == Tok::Backslash {
                        ExprKind::Feedback {
                            body,
                            back: pats,
                            op,
                        }
                    } else {
                        ExprKind::Star {
                            body,
                            exits: pats,
                            det: tok == Tok::StarStar,
                            op,
                        }
                    }
                }
                Tok::Bang | Tok::BangBang | Tok::BangAt => {
                    let op = self.bump().span();
                    let tag = self.parse_tag_label()?;
                    let body = Box::new(e);
                    if tok == Tok::BangAt {
                        ExprKind::DynPlace { body, tag, op }
                    } else {
                        ExprKind::Split {
                            body,
                            tag,
                            det: tok == Tok::BangBang,
                            op,
                        }
                    }
                }
                Tok::At => {
                    let op = self.bump().span();
                    let node = match self.tok() {
                        Tok::Int(n) => {
                            self.bump();
                            n
                        }
                        _ => return self.error_here("a node number after `@`"),
                    };
                    ExprKind::Place {
                        body: Box::new(e),
                        node,
                        op,
                    }
                }
                _ => return Ok(e),
            };
            let span = self.start_of(&kind)..self.prev_end();
            let height = child_height(&kind) + 1;
            self.check_height(height, &span)?;
            e = Expr { kind, span, height };
        }
    }

    fn start_of(&self, kind: &ExprKind) -> usize {
        match kind {
            ExprKind::Star { body, .. }
            | ExprKind::Split { body, .. }
            | ExprKind::Feedback { body, .. }
            | ExprKind::Place { body, .. }
            | ExprKind::DynPlace { body, .. } => body.span.start,
            _ => self.prev_end(),
        }
    }

    fn parse_primary(&mut self) -> PResult<Expr> {
        let start = self.span().start;
        let kind = match self.tok() {
            Tok::Ident if !RESERVED.contains(&self.text()) => {
                ExprKind::Name(self.parse_ident("a name")?)
            }
            Tok::LParen => {
                self.bump();
                let mut inner = self.parse_expr()?;
                self.expect(Tok::RParen, "to close the parenthesis")?;
                inner.span = start..self.prev_end();
                return Ok(inner);
            }
            Tok::LBracket => ExprKind::Filter(self.parse_filter()?),
            Tok::SyncOpen => {
                self.bump();
                let pats = self.parse_patterns()?;
                self.expect(Tok::SyncClose, "to close the synchrocell")?;
                ExprKind::Sync(pats)
            }
            _ => {
                return self.error_here(
                    "a box or net name, `(`, a filter `[...]` or a synchrocell `[| ... |]`",
                )
            }
        };
        Ok(Expr {
            kind,
            span: start..self.prev_end(),
            height: 1,
        })
    }

    /// `variant (if <e>)? (, variant (if <e>)?)*`.
    fn parse_patterns(&mut self) -> PResult<Vec<GuardedVariant>> {
        let mut pats = Vec::new();
        loop {
            let variant = self.parse_variant()?;
            let guard = if self.at_ident("if") {
                self.bump();
                Some(self.parse_angle_expr()?)
            } else {
                None
            };
            let span = variant.span.start..self.prev_end();
            pats.push(GuardedVariant {
                variant,
                guard,
                span,
            });
            if !self.eat(Tok::Comma) {
                return Ok(pats);
            }
        }
    }

    fn parse_filter(&mut self) -> PResult<Filter> {
        self.bump(); // `[`
        if self.eat(Tok::RBracket) {
            return Ok(Filter {
                pattern: None,
                arms: Vec::new(),
            });
        }
        let pattern = self.parse_variant()?;
        self.expect(Tok::Arrow, "after the filter's pattern")?;
        let mut arms = Vec::new();
        loop {
            if self.at_ident("if") {
                self.bump();
                let guard = self.parse_angle_expr()?;
                self.expect_word("then", "after the guard")?;
                let outputs = self.parse_outputs()?;
                arms.push(Arm {
                    guard: Some(guard),
                    outputs,
                });
                self.expect_word(
                    "else",
                    "after the `then` outputs (every `if` needs an `else`)",
                )?;
            } else {
                let outputs = self.parse_outputs()?;
                arms.push(Arm {
                    guard: None,
                    outputs,
                });
                break;
            }
        }
        self.expect(Tok::RBracket, "to close the filter")?;
        Ok(Filter {
            pattern: Some(pattern),
            arms,
        })
    }

    /// `outspec (; outspec)*` or nothing.
    fn parse_outputs(&mut self) -> PResult<Vec<OutSpecAst>> {
        let mut outs = Vec::new();
        while self.tok() == Tok::LBrace {
            outs.push(self.parse_outspec()?);
            if !self.eat(Tok::Semi) {
                break;
            }
        }
        Ok(outs)
    }

    fn parse_outspec(&mut self) -> PResult<OutSpecAst> {
        let start = self.bump().start as usize; // `{`
        let mut items = Vec::new();
        if self.tok() != Tok::RBrace {
            loop {
                items.push(self.parse_item()?);
                if !self.eat(Tok::Comma) {
                    break;
                }
            }
        }
        self.expect(Tok::RBrace, "to close the output record")?;
        Ok(OutSpecAst {
            items,
            span: start..self.prev_end(),
        })
    }

    fn parse_item(&mut self) -> PResult<ItemAst> {
        if self.tok() == Tok::Ident {
            let dst = self.parse_ident("a field name")?;
            let src = if self.eat(Tok::Eq) {
                Some(self.parse_ident("a field name after `=`")?)
            } else {
                None
            };
            return Ok(ItemAst::Field { dst, src });
        }
        if self.tok() != Tok::Lt {
            return self.error_here(
                "an output item (`f`, `f=g`, `<t>`, `<t=expr>`, `<#b>` or `<#b=expr>`)",
            );
        }
        self.bump();
        let kind = if self.eat(Tok::Hash) {
            LabelKind::BTag
        } else {
            LabelKind::Tag
        };
        let name = self.parse_ident("a tag name")?;
        let value = if self.eat(Tok::Eq) {
            Some(self.parse_texpr(true)?)
        } else {
            None
        };
        self.expect(Tok::Gt, "to close the tag")?;
        Ok(ItemAst::Tag { kind, name, value })
    }

    // ---- tag expressions ----

    /// `< expr >`.
    fn parse_angle_expr(&mut self) -> PResult<TagExpr> {
        self.expect(Tok::Lt, "to open the guard `<...>`")?;
        let e = self.parse_texpr(true)?;
        self.expect(Tok::Gt, "to close the guard")?;
        Ok(e)
    }

    /// `angle`: inside `< >`, where a `>` not followed by an operand closes.
    fn parse_texpr(&mut self, angle: bool) -> PResult<TagExpr> {
        self.nested(|p| {
            let c = p.parse_binary(0, angle)?;
            if !p.eat(Tok::Question) {
                return Ok(c);
            }
            let a = p.parse_texpr(angle)?;
            p.expect(Tok::Colon, "in the conditional expression `c ? a : b`")?;
            let b = p.parse_texpr(angle)?;
            let span = c.span.start..b.span.end;
            let height = c.height.max(a.height).max(b.height) + 1;
            p.check_height(height, &span)?;
            Ok(TagExpr {
                kind: TagExprKind::Cond(Box::new(c), Box::new(a), Box::new(b)),
                span,
                height,
            })
        })
    }

    /// The binary operator at the cursor with its precedence level (0 = `||`).
    fn binop(&self, angle: bool) -> Option<(BinOp, u8)> {
        Some(match self.tok() {
            Tok::BarBar => (BinOp::Or, 0),
            Tok::AndAnd => (BinOp::And, 1),
            Tok::EqEq => (BinOp::Eq, 2),
            Tok::Ne => (BinOp::Ne, 2),
            Tok::Lt => (BinOp::Lt, 3),
            Tok::Le => (BinOp::Le, 3),
            Tok::Ge => (BinOp::Ge, 3),
            Tok::Gt if !angle || self.starts_operand(self.pos + 1) => (BinOp::Gt, 3),
            Tok::Plus => (BinOp::Add, 4),
            Tok::Minus => (BinOp::Sub, 4),
            Tok::Star => (BinOp::Mul, 5),
            Tok::Slash => (BinOp::Div, 5),
            Tok::Percent => (BinOp::Mod, 5),
            _ => return None,
        })
    }

    fn starts_operand(&self, i: usize) -> bool {
        let Some(t) = self.toks.get(i) else {
            return false;
        };
        match t.tok {
            Tok::Int(_) | Tok::LParen | Tok::Minus => true,
            Tok::Ident => !RESERVED.contains(&&self.src[t.start as usize..t.end as usize]),
            Tok::Bang | Tok::BangBang => self.toks.get(i + 1).is_some_and(|n| n.tok != Tok::Lt),
            _ => false,
        }
    }

    /// Precedence climbing over left-associative binary operators of level >= `min`.
    fn parse_binary(&mut self, min: u8, angle: bool) -> PResult<TagExpr> {
        let mut lhs = self.parse_unary()?;
        while let Some((op, level)) = self.binop(angle) {
            if level < min {
                break;
            }
            self.bump();
            let rhs = self.nested(|p| p.parse_binary(level + 1, angle))?;
            let span = lhs.span.start..rhs.span.end;
            let height = lhs.height.max(rhs.height) + 1;
            self.check_height(height, &span)?;
            lhs = TagExpr {
                kind: TagExprKind::Binary(op, Box::new(lhs), Box::new(rhs)),
                span,
                height,
            };
        }
        Ok(lhs)
    }

    fn parse_unary(&mut self) -> PResult<TagExpr> {
        let start = self.span().start;
        let ops: &[UnOp] = match self.tok() {
            Tok::Minus => &[UnOp::Neg],
            Tok::Bang => &[UnOp::Not],
            Tok::BangBang => &[UnOp::Not, UnOp::Not],
            _ => return self.parse_atom(),
        };
        self.bump();
        let mut e = self.nested(|p| p.parse_unary())?;
        for &op in ops {
            let span = start..e.span.end;
            let height = e.height + 1;
            self.check_height(height, &span)?;
            e = TagExpr {
                kind: TagExprKind::Unary(op, Box::new(e)),
                span,
                height,
            };
        }
        Ok(e)
    }

    fn parse_atom(&mut self) -> PResult<TagExpr> {
        let start = self.span().start;
        match self.tok() {
            Tok::Int(v) => {
                let span = self.bump().span();
                Ok(TagExpr {
                    kind: TagExprKind::Int(v),
                    span,
                    height: 1,
                })
            }
            Tok::LParen => {
                self.bump();
                let mut e = self.parse_texpr(false)?;
                self.expect(Tok::RParen, "to close the parenthesis")?;
                e.span = start..self.prev_end();
                Ok(e)
            }
            Tok::Ident if !RESERVED.contains(&self.text()) => {
                let id = self.parse_ident("a tag name")?;
                let func = match id.name.as_str() {
                    "abs" => Some((Func::Abs, 1)),
                    "min" => Some((Func::Min, 2)),
                    "max" => Some((Func::Max, 2)),
                    _ => None,
                };
                match func {
                    Some((f, arity)) if self.tok() == Tok::LParen => {
                        self.bump();
                        let mut args = Vec::new();
                        if self.tok() != Tok::RParen {
                            loop {
                                args.push(self.parse_texpr(false)?);
                                if !self.eat(Tok::Comma) {
                                    break;
                                }
                            }
                        }
                        self.expect(Tok::RParen, "to close the argument list")?;
                        let span = start..self.prev_end();
                        if args.len() != arity {
                            let s = if arity == 1 { "" } else { "s" };
                            self.diags.push(
                                Diagnostic::error(
                                    span,
                                    format!(
                                        "`{}` takes {arity} argument{s}, not {}",
                                        id.name,
                                        args.len()
                                    ),
                                )
                                .with_label(format!(
                                    "called with {} argument{}",
                                    args.len(),
                                    if args.len() == 1 { "" } else { "s" }
                                )),
                            );
                            return Err(Fail);
                        }
                        let height = args.iter().map(|a| a.height).max().unwrap_or(0) + 1;
                        Ok(TagExpr {
                            kind: TagExprKind::Call(f, args),
                            span,
                            height,
                        })
                    }
                    _ => Ok(TagExpr {
                        kind: TagExprKind::Name(id.name),
                        span: id.span,
                        height: 1,
                    }),
                }
            }
            _ => self.error_here("a tag expression (a tag name, an integer or `(`)"),
        }
    }
}

fn child_height(kind: &ExprKind) -> u32 {
    match kind {
        ExprKind::Star { body, .. }
        | ExprKind::Split { body, .. }
        | ExprKind::Feedback { body, .. }
        | ExprKind::Place { body, .. }
        | ExprKind::DynPlace { body, .. } => body.height,
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(src: &str) -> (Program, Vec<Diagnostic>) {
        let mut d = Diagnostics::default();
        let p = parse_program(src, &mut d);
        (p, d.into_sorted())
    }

    fn body(src: &str) -> Expr {
        let (p, d) = parse(src);
        assert!(d.is_empty(), "{d:?}");
        match p.defs.last() {
            Some(Def::Net(n)) => n.body.clone().expect("body"),
            _ => panic!("no net"),
        }
    }

    fn shape(e: &Expr) -> String {
        match &e.kind {
            ExprKind::Name(i) => i.name.clone(),
            ExprKind::Filter(_) => "[]".into(),
            ExprKind::Sync(_) => "[||]".into(),
            ExprKind::Serial(p, _) => {
                format!("({})", p.iter().map(shape).collect::<Vec<_>>().join(" .. "))
            }
            ExprKind::Parallel { branches, det, .. } => format!(
                "({})",
                branches
                    .iter()
                    .map(shape)
                    .collect::<Vec<_>>()
                    .join(if *det { " || " } else { " | " })
            ),
            ExprKind::Star { body, det, .. } => {
                format!("{}{}", shape(body), if *det { "**" } else { "*" })
            }
            ExprKind::Split { body, .. } => format!("{}!", shape(body)),
            ExprKind::Feedback { body, .. } => format!("{}\\", shape(body)),
            ExprKind::Place { body, node, .. } => format!("{}@{node}", shape(body)),
            ExprKind::DynPlace { body, .. } => format!("{}!@", shape(body)),
        }
    }

    #[test]
    fn combinator_precedence() {
        let e = body("net n connect a .. b | c .. d || e;");
        assert_eq!(shape(&e), "(((a .. b) | (c .. d)) || e)");
        let e = body("net n connect s !@ <T> * {<S>} if <S >= 4> .. at;");
        assert_eq!(shape(&e), "(s!@* .. at)");
        let e =
            body("net n connect (a | []) \\ {<K>,<R>} @ 3 ** {x}, {y} if <K > 1 && !R> !! <#p>;");
        assert_eq!(shape(&e), "(a | [])\\@3**!");
    }

    #[test]
    fn guards_with_greater_than() {
        let e =
            body("net n connect [{<K>} -> if <K > 1> then {<K=K-1>} else if <K> then {} else ];");
        let ExprKind::Filter(f) = &e.kind else {
            panic!()
        };
        assert_eq!(f.arms.len(), 3);
        assert!(f.arms[2].outputs.is_empty());
        assert!(matches!(
            f.arms[0].guard.as_ref().map(|g| &g.kind),
            Some(TagExprKind::Binary(BinOp::Gt, ..))
        ));
    }

    #[test]
    fn c_precedence_in_tag_expressions() {
        let e =
            body("net n connect [{<a>} -> {<b = 1 + 2 * a - -3 == 4 ? 1 : a < 2 || !a && 0x10>}];");
        let ExprKind::Filter(f) = &e.kind else {
            panic!()
        };
        let ItemAst::Tag { value: Some(v), .. } = &f.arms[0].outputs[0].items[0] else {
            panic!()
        };
        let TagExprKind::Cond(c, _, e2) = &v.kind else {
            panic!("{v:?}")
        };
        assert!(matches!(c.kind, TagExprKind::Binary(BinOp::Eq, ..)));
        assert!(matches!(e2.kind, TagExprKind::Binary(BinOp::Or, ..)));
    }

    #[test]
    fn all_definition_forms() {
        let (p, d) = parse(
            "<metadata><default><interface value=\"C4SNet\"/></default></metadata>
             type T = {a} | {b, <t>};
             typesig S = T -> {c}, {d} -> ...;
             box init(-> (A));
             box foo((a, <b>, <#c>) -> (x) | () | (y, <z>));
             net inner (S, {q} -> {r}) { box g((q) -> (r)); } connect g
             net outer { net deep connect [] ; } connect deep",
        );
        assert!(d.is_empty(), "{d:?}");
        assert!(p.metadata.is_some());
        assert_eq!(p.defs.len(), 6);
    }

    #[test]
    fn recovery_reports_every_error() {
        let (p, d) = parse(
            "net a connect [ {x} -> {y=} ];
             box b((a) -> );
             net ok connect x;
             net c { net d connect ( ; } connect d;
             net fine connect y;",
        );
        assert_eq!(d.len(), 3, "{d:#?}");
        let names: Vec<_> = p
            .defs
            .iter()
            .filter_map(|d| {
                if let Def::Net(n) = d {
                    Some(n.name.name.as_str())
                } else {
                    None
                }
            })
            .collect();
        assert_eq!(names, ["ok", "c", "fine"]);
    }

    #[test]
    fn deep_nesting_is_an_error_not_a_crash() {
        let src = format!("net n connect {}a{};", "(".repeat(5000), ")".repeat(5000));
        let (_, d) = parse(&src);
        assert!(d.iter().any(|d| d.message.contains("nested too deeply")));
        let src = format!("net n connect [{{<a>}} -> {{<a={}a>}}];", "-".repeat(5000));
        let (_, d) = parse(&src);
        assert!(d.iter().any(|d| d.message.contains("nested too deeply")));
        let src = format!("net n connect a{};", " * {x}".repeat(5000));
        let (_, d) = parse(&src);
        assert!(d.iter().any(|d| d.message.contains("nested too deeply")));
        let src = format!("net n connect [{{<a>}} -> {{<a=a{}>}}];", "+1".repeat(5000));
        let (_, d) = parse(&src);
        assert!(d.iter().any(|d| d.message.contains("nested too deeply")));
        let src = format!("net n connect a{};", " .. b".repeat(50000));
        let (_, d) = parse(&src);
        assert!(d.is_empty());
    }
}
