//! Recursive-descent parser for the whole of language.md §2-§5.
//!
//! Naming convention (the same as ARCHITECTURE.md states):
//! - `parse_x` may return nothing: when the next token cannot start an `x`
//!   it returns `Ok(None)` (or an empty list) without consuming anything or
//!   reporting; an `x` that starts but is malformed is reported.
//! - `expect_x` parses an `x` that must be there: if it is not, it reports
//!   an error and returns `Err(Fail)` (the diagnostic is already recorded).
//! - `eat(tok)` consumes `tok` if it is next and says whether it did;
//!   `expect(tok, ..)` consumes it or reports "expected ..." and fails.
//!
//! Error recovery: a failure unwinds to the enclosing definition, which is
//! skipped up to its closing `;` (tracking brackets), to the next `net`,
//! `box`, `type` or `typesig` keyword or `<metadata>` block, or to a `}` that
//! closes the enclosing net body, and parsing goes on, so one run reports every syntax error of
//! the file. Recursion is bounded ([`MAX_DEPTH`] nested constructs, trees at
//! most [`MAX_HEIGHT`] high): deep input is an error, never a stack overflow.
//!
//! Precedence of combinators, lowest first: `|` `||`; `..`; postfix `*` `**`
//! `!` `!!` `\` `@` `!@` `!!@` (left to right). Tag expressions follow C. Inside
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
    let lexed = lexer::lex(src, 0, diags);
    let mut p = Parser {
        src,
        toks: lexed.toks,
        metadata: lexed.metadata.into_iter().map(Some).collect(),
        pos: 0,
        diags,
        depth: 0,
        recovering: false,
    };
    let defs = p.defs(false);
    Program { defs }
}

struct Parser<'s, 'd> {
    src: &'s str,
    toks: Vec<Token>,
    /// The lexer's metadata blocks, each taken when its token is parsed.
    metadata: Vec<Option<metadata::Block>>,
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

    fn expect_ident(&mut self, what: &str) -> PResult<Ident> {
        if self.tok() == Tok::Ident {
            let name = self.text().to_string();
            let span = self.bump().span();
            Ok(Ident { name, span })
        } else {
            self.error_here(what)
        }
    }

    /// A name being defined: an identifier that is not a keyword.
    fn expect_name(&mut self, what: &str) -> PResult<Ident> {
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
        self.expect_ident(what)
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
                Tok::Semi => {
                    self.bump();
                }
                _ => {
                    let start = self.pos;
                    match self.parse_def() {
                        Ok(Some(d)) => {
                            defs.push(d);
                            self.recovering = false;
                        }
                        Ok(None) if self.recovering => {
                            self.bump();
                        }
                        Ok(None) => {
                            let _ = self.error_here::<()>(
                                "a definition (`net`, `box`, `type` or `typesig`)",
                            );
                            self.recover(start);
                        }
                        Err(Fail) => self.recover(start),
                    }
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
                Tok::Metadata(_) if beyond && stack.iter().all(|&o| o == Tok::LBrace) => break,
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

    /// A definition or a metadata block; nothing if neither starts here.
    fn parse_def(&mut self) -> PResult<Option<Def>> {
        if let Tok::Metadata(i) = self.tok() {
            self.bump();
            let block = self
                .metadata
                .get_mut(i as usize)
                .and_then(Option::take)
                .unwrap_or_default();
            return Ok(Some(Def::Metadata(block)));
        }
        if self.tok() != Tok::Ident {
            return Ok(None);
        }
        Ok(Some(match self.text() {
            "net" => self.nested(|p| p.expect_net()).map(Def::Net)?,
            "box" => self.expect_box().map(Def::Box)?,
            "type" => self.expect_type_def().map(Def::Type)?,
            "typesig" => self.expect_typesig_def().map(Def::Typesig)?,
            _ => return Ok(None),
        }))
    }

    fn expect_box(&mut self) -> PResult<BoxDecl> {
        let start = self.bump().start as usize; // `box`
        let name = self.expect_name("a box name")?;
        self.expect(Tok::LParen, "to open the box signature")?;
        let inputs = if self.tok() == Tok::LParen {
            Some(self.expect_paren_labels()?.labels)
        } else {
            None
        };
        self.expect(Tok::Arrow, "in the box signature")?;
        let mut outputs = vec![self.expect_paren_labels()?];
        while self.eat(Tok::Bar) {
            outputs.push(self.expect_paren_labels()?);
        }
        self.expect(Tok::RParen, "to close the box signature")?;
        let body = match self.parse_box_body() {
            Ok(Some(body)) => {
                self.eat(Tok::Semi);
                Some(body)
            }
            Ok(None) => {
                self.expect_semi("after the box declaration");
                None
            }
            Err(Fail) => {
                // Reported; keep the declaration so that its uses do not cascade.
                self.skip_box_body();
                None
            }
        };
        Ok(BoxDecl {
            name,
            inputs,
            outputs,
            body,
            span: start..self.prev_end(),
        })
    }

    /// `{ <<< LANGUAGE | code >>> }`, if a `{` follows the box signature.
    fn parse_box_body(&mut self) -> PResult<Option<InlineCode>> {
        if !self.eat(Tok::LBrace) {
            return Ok(None);
        }
        if self.tok() != Tok::Code {
            return self.error_here("inline box code `<<< LANGUAGE | code >>>`");
        }
        let tok = self.bump();
        let parts = lexer::code_parts(self.src, tok.start as usize);
        if parts.closed {
            self.expect(Tok::RBrace, "to close the box body")?;
        } else {
            self.eat(Tok::RBrace); // the lexer reported the missing `>>>` and took the rest
        }
        Ok(Some(InlineCode {
            language: Ident {
                name: self.src[parts.language.clone()].to_string(),
                span: parts.language,
            },
            code: self.src[parts.code.clone()].to_string(),
            code_span: parts.code,
            span: tok.span(),
        }))
    }

    /// After a broken box body: skips to just after the `}` that closes it,
    /// stopping early at the end of the file or at a definition keyword that
    /// starts a line (a body whose `}` is missing).
    fn skip_box_body(&mut self) {
        let mut depth = 1u32;
        loop {
            match self.tok() {
                Tok::Eof | Tok::Metadata(_) => return,
                Tok::Ident
                    if DEF_KEYWORDS.contains(&self.text())
                        && self.at_line_start(self.span().start) =>
                {
                    return
                }
                Tok::LBrace => depth += 1,
                Tok::RBrace => {
                    depth -= 1;
                    if depth == 0 {
                        self.bump();
                        self.eat(Tok::Semi);
                        return;
                    }
                }
                _ => {}
            }
            self.bump();
        }
    }

    /// `( labels? )`, as in box signatures.
    fn expect_paren_labels(&mut self) -> PResult<VariantAst> {
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
            labels.push(self.expect_label()?);
            if !self.eat(Tok::Comma) {
                return Ok(labels);
            }
        }
    }

    /// `f`, `<t>` or `<#b>`.
    fn expect_label(&mut self) -> PResult<LabelAst> {
        if self.tok() == Tok::Ident {
            let id = self.expect_ident("a label")?;
            return Ok(LabelAst {
                kind: LabelKind::Field,
                name: id.name,
                span: id.span,
            });
        }
        if self.tok() != Tok::Lt {
            return self.error_here("a label (`field`, `<tag>` or `<#btag>`)");
        }
        self.expect_tag_label()
    }

    /// `<t>` or `<#b>`.
    fn expect_tag_label(&mut self) -> PResult<LabelAst> {
        let start = self.expect(Tok::Lt, "to open a tag")?.start as usize;
        let kind = if self.eat(Tok::Hash) {
            LabelKind::BTag
        } else {
            LabelKind::Tag
        };
        let id = self.expect_ident("a tag name")?;
        self.expect(Tok::Gt, "to close the tag")?;
        Ok(LabelAst {
            kind,
            name: id.name,
            span: start..self.prev_end(),
        })
    }

    /// `{ labels? }`.
    fn expect_variant(&mut self) -> PResult<VariantAst> {
        let start = self.expect(Tok::LBrace, "to open a record type")?.start as usize;
        let labels = self.parse_labels(Tok::RBrace)?;
        self.expect(Tok::RBrace, "to close the record type")?;
        Ok(VariantAst {
            labels,
            span: start..self.prev_end(),
        })
    }

    fn expect_net(&mut self) -> PResult<NetDef> {
        self.bump(); // `net`
        let name = self.expect_name("a net name")?;
        let (mut sig, mut sig_span) = (None, None);
        if self.tok() == Tok::LParen {
            let s = self.bump().start as usize;
            sig = Some(self.expect_sig_items(Tok::RParen)?);
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
            Some(self.expect_expr()?)
        } else {
            None
        };
        if !self.eat(Tok::Semi) {
            let ok_follow = matches!(self.tok(), Tok::Eof | Tok::RBrace | Tok::Metadata(_))
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
        })
    }

    /// `item (, item)*` where item is a mapping or a typesig name.
    fn expect_sig_items(&mut self, _close: Tok) -> PResult<Vec<SigItem>> {
        let mut items = Vec::new();
        loop {
            let ty = self.expect_type()?;
            if self.eat(Tok::Arrow) {
                let output = if self.eat(Tok::Ellipsis) {
                    None
                } else {
                    Some(self.expect_type()?)
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
    fn expect_type(&mut self) -> PResult<TypeAst> {
        let start = self.span().start;
        let mut atoms = Vec::new();
        loop {
            match self.tok() {
                Tok::LBrace => atoms.push(TypeAtom::Variant(self.expect_variant()?)),
                Tok::Ident => atoms.push(TypeAtom::Named(self.expect_ident("a type name")?)),
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

    fn expect_type_def(&mut self) -> PResult<TypeDef> {
        self.bump(); // `type`
        let name = self.expect_name("a type name")?;
        self.expect(Tok::Eq, "after the type name")?;
        let ty = self.expect_type()?;
        self.expect_semi("after the type definition");
        Ok(TypeDef { name, ty })
    }

    fn expect_typesig_def(&mut self) -> PResult<TypesigDef> {
        self.bump(); // `typesig`
        let name = self.expect_name("a type signature name")?;
        self.expect(Tok::Eq, "after the type signature name")?;
        let items = self.expect_sig_items(Tok::Semi)?;
        self.expect_semi("after the type signature");
        Ok(TypesigDef { name, items })
    }

    // ---- combinator expressions ----

    fn expect_expr(&mut self) -> PResult<Expr> {
        self.nested(|p| p.expect_parallel())
    }

    fn expect_parallel(&mut self) -> PResult<Expr> {
        let mut acc = self.expect_serial()?;
        loop {
            let det = match self.tok() {
                Tok::Bar => false,
                Tok::BarBar => true,
                _ => return Ok(acc),
            };
            let op_tok = self.tok();
            let op = self.bump().span();
            let mut branches = vec![acc, self.expect_serial()?];
            while self.eat(op_tok) {
                branches.push(self.expect_serial()?);
            }
            acc = self.flat(branches, |branches| ExprKind::Parallel {
                branches,
                det,
                op,
            })?;
        }
    }

    fn expect_serial(&mut self) -> PResult<Expr> {
        let first = self.expect_postfix()?;
        if self.tok() != Tok::DotDot {
            return Ok(first);
        }
        let mut parts = vec![first];
        let mut ops = Vec::new();
        while self.tok() == Tok::DotDot {
            ops.push(self.bump().span());
            parts.push(self.expect_postfix()?);
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

    fn expect_postfix(&mut self) -> PResult<Expr> {
        let mut e = self.expect_primary()?;
        loop {
            let tok = self.tok();
            let kind = match tok {
                Tok::Star | Tok::StarStar | Tok::Backslash => {
                    let op = self.bump().span();
                    let pats = self.expect_patterns()?;
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
                Tok::Bang | Tok::BangBang | Tok::BangAt | Tok::BangBangAt => {
                    let op = self.bump().span();
                    let tag = self.expect_tag_label()?;
                    let body = Box::new(e);
                    if matches!(tok, Tok::BangAt | Tok::BangBangAt) {
                        ExprKind::DynPlace {
                            body,
                            tag,
                            det: tok == Tok::BangBangAt,
                            op,
                        }
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

    fn expect_primary(&mut self) -> PResult<Expr> {
        let start = self.span().start;
        let kind = match self.tok() {
            Tok::Ident if !RESERVED.contains(&self.text()) => {
                ExprKind::Name(self.expect_ident("a name")?)
            }
            Tok::LParen => {
                self.bump();
                let mut inner = self.expect_expr()?;
                self.expect(Tok::RParen, "to close the parenthesis")?;
                inner.span = start..self.prev_end();
                return Ok(inner);
            }
            Tok::LBracket => ExprKind::Filter(self.expect_filter()?),
            Tok::SyncOpen => {
                self.bump();
                let pats = self.expect_patterns()?;
                self.expect(Tok::SyncClose, "to close the synchrocell")?;
                ExprKind::Synchrocell(pats)
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
    fn expect_patterns(&mut self) -> PResult<Vec<GuardedVariant>> {
        let mut pats = Vec::new();
        loop {
            let variant = self.expect_variant()?;
            let guard = if self.at_ident("if") {
                self.bump();
                Some(self.expect_angle_expr()?)
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

    fn expect_filter(&mut self) -> PResult<Filter> {
        self.bump(); // `[`
        if self.eat(Tok::RBracket) {
            return Ok(Filter {
                pattern: None,
                arms: Vec::new(),
            });
        }
        let pattern = self.expect_variant()?;
        self.expect(Tok::Arrow, "after the filter's pattern")?;
        let mut arms = Vec::new();
        loop {
            if self.at_ident("if") {
                self.bump();
                let guard = self.expect_angle_expr()?;
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
            outs.push(self.expect_outspec()?);
            if !self.eat(Tok::Semi) {
                break;
            }
        }
        Ok(outs)
    }

    fn expect_outspec(&mut self) -> PResult<OutSpecAst> {
        self.bump(); // `{`
        let mut items = Vec::new();
        if self.tok() != Tok::RBrace {
            loop {
                items.push(self.expect_item()?);
                if !self.eat(Tok::Comma) {
                    break;
                }
            }
        }
        self.expect(Tok::RBrace, "to close the output record")?;
        Ok(OutSpecAst { items })
    }

    fn expect_item(&mut self) -> PResult<ItemAst> {
        if self.tok() == Tok::Ident {
            let dst = self.expect_ident("a field name")?;
            let src = if self.eat(Tok::Eq) {
                Some(self.expect_ident("a field name after `=`")?)
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
        let name = self.expect_ident("a tag name")?;
        let value = if self.eat(Tok::Eq) {
            Some(self.expect_texpr(true)?)
        } else {
            None
        };
        self.expect(Tok::Gt, "to close the tag")?;
        Ok(ItemAst::Tag { kind, name, value })
    }

    // ---- tag expressions ----

    /// `< expr >`.
    fn expect_angle_expr(&mut self) -> PResult<TagExpr> {
        self.expect(Tok::Lt, "to open the guard `<...>`")?;
        let e = self.expect_texpr(true)?;
        self.expect(Tok::Gt, "to close the guard")?;
        Ok(e)
    }

    /// `angle`: inside `< >`, where a `>` not followed by an operand closes.
    fn expect_texpr(&mut self, angle: bool) -> PResult<TagExpr> {
        self.nested(|p| {
            let c = p.expect_binary(0, angle)?;
            if !p.eat(Tok::Question) {
                return Ok(c);
            }
            let a = p.expect_texpr(angle)?;
            p.expect(Tok::Colon, "in the conditional expression `c ? a : b`")?;
            let b = p.expect_texpr(angle)?;
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
    fn expect_binary(&mut self, min: u8, angle: bool) -> PResult<TagExpr> {
        let mut lhs = self.expect_unary()?;
        while let Some((op, level)) = self.binop(angle) {
            if level < min {
                break;
            }
            self.bump();
            let rhs = self.nested(|p| p.expect_binary(level + 1, angle))?;
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

    fn expect_unary(&mut self) -> PResult<TagExpr> {
        let start = self.span().start;
        let ops: &[UnOp] = match self.tok() {
            Tok::Minus => &[UnOp::Neg],
            Tok::Bang => &[UnOp::Not],
            Tok::BangBang => &[UnOp::Not, UnOp::Not],
            _ => return self.expect_atom(),
        };
        self.bump();
        let mut e = self.nested(|p| p.expect_unary())?;
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

    fn expect_atom(&mut self) -> PResult<TagExpr> {
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
                let mut e = self.expect_texpr(false)?;
                self.expect(Tok::RParen, "to close the parenthesis")?;
                e.span = start..self.prev_end();
                Ok(e)
            }
            Tok::Ident if !RESERVED.contains(&self.text()) => {
                let id = self.expect_ident("a tag name")?;
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
                                args.push(self.expect_texpr(false)?);
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
            ExprKind::Synchrocell(_) => "[||]".into(),
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
            ExprKind::DynPlace { body, det, .. } => {
                format!("{}{}", shape(body), if *det { "!!@" } else { "!@" })
            }
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
        let e = body("net n connect s !!@ <T> * {<S>} if <S >= 4> .. at !@ <T> !!@ <#U> | b;");
        assert_eq!(shape(&e), "((s!!@* .. at!@!!@) | b)");
    }

    #[test]
    fn inline_box_bodies() {
        let (p, d) = parse(
            "box f((a) -> (b)) { <<< C | return hnd; >>> }
             box g((a) -> (b)) {<<<SAC|x>>>};
             box h((a) -> (b));
             net n connect f .. g .. h;",
        );
        assert!(d.is_empty(), "{d:?}");
        let bodies: Vec<Option<(String, String)>> = p
            .defs
            .iter()
            .filter_map(|d| match d {
                Def::Box(b) => Some(
                    b.body
                        .as_ref()
                        .map(|c| (c.language.name.clone(), c.code.clone())),
                ),
                _ => None,
            })
            .collect();
        assert_eq!(
            bodies,
            [
                Some(("C".into(), " return hnd; ".into())),
                Some(("SAC".into(), "x".into())),
                None
            ]
        );
        // A broken body is reported once; the box is kept, so its use is no error.
        let (p, d) = parse("box f((a) -> (b)) { oops { } }\nnet n connect f;");
        assert_eq!(d.len(), 1, "{d:?}");
        assert_eq!(p.defs.len(), 2);
        // A body whose `}` is missing stops at the next definition.
        let (p, d) = parse("box f((a) -> (b)) { oops\nnet n connect f;");
        assert_eq!(d.len(), 1, "{d:?}");
        assert_eq!(p.defs.len(), 2);
    }

    #[test]
    fn metadata_between_and_inside_definitions() {
        let (p, d) = parse(
            "box f((a) -> (b)); <metadata><x/></metadata>
             net n { <metadata/> box g((a) -> (b)); <metadata></metadata> } connect g
             <metadata/>
             net m connect f;",
        );
        assert!(d.is_empty(), "{d:?}");
        let kinds: Vec<&str> = p
            .defs
            .iter()
            .map(|d| match d {
                Def::Metadata(_) => "meta",
                Def::Net(n)
                    if n.defs
                        .iter()
                        .filter(|d| matches!(d, Def::Metadata(_)))
                        .count()
                        == 2 =>
                {
                    "net+2"
                }
                Def::Net(_) => "net",
                Def::Box(_) => "box",
                _ => "?",
            })
            .collect();
        assert_eq!(kinds, ["box", "meta", "net+2", "meta", "net"]);
        // A block in an expression is an error there, not a new definition.
        let (_, d) = parse("net n connect a .. <metadata></metadata>;");
        assert_eq!(d.len(), 1, "{d:?}");
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
        assert!(matches!(p.defs[0], Def::Metadata(_)));
        assert_eq!(p.defs.len(), 7);
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
