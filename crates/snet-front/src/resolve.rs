//! Name resolution: syntax tree to [`Hir`].
//!
//! Scopes nest like the source: the top level, then each net's `{ ... }`.
//! A net's inner definitions are visible in its signature, its `connect`
//! expression and its nested nets; an inner name shadows an outer one.
//! Boxes and nets share one namespace, types and typesigs another; a
//! duplicate within one scope is an error pointing at both definitions.
//! Order inside a scope does not matter. A net whose body uses itself,
//! directly or through other nets, is an error (recursion is expressed
//! with `*` and `\`).
//!
//! Tag names in expressions are written bare; each resolves against the
//! pattern the expression reads from (a filter's pattern, a guarded
//! variant): to `<#n>` if the pattern has that binding tag, else to `<n>`,
//! which the pattern must contain.

use std::collections::HashMap;

use snet_core::{
    Expr as CExpr, ExprTree, FilterArm, FilterDef, Label, OutItem, OutSpec, Pattern,
    SynchrocellDef, TagValue, Variant,
};

use crate::ast::*;
use crate::diag::{Diagnostic, Diagnostics, Span};
use crate::hir::*;
use crate::metadata::{Metadata, ScopedBlock};
use crate::suggest::did_you_mean;

#[derive(Copy, Clone, Debug)]
enum Entity {
    Box(BoxIdx),
    Net(NetIdx),
}

#[derive(Copy, Clone)]
enum TypeEntry<'a> {
    Type(&'a TypeDef),
    Typesig(&'a TypesigDef),
}

#[derive(Clone)]
enum TypeState {
    Todo,
    Busy,
    Type(Vec<Variant>),
    Sig(Vec<SigMapping>),
}

#[derive(Default)]
struct Scope<'a> {
    parent: Option<usize>,
    entities: HashMap<&'a str, (Entity, Span)>,
    types: HashMap<&'a str, (usize, Span)>,
}

struct Resolver<'a, 'd> {
    hir: Hir,
    scopes: Vec<Scope<'a>>,
    /// Type and typesig definitions with the scope they are defined in.
    types: Vec<(TypeEntry<'a>, usize)>,
    type_state: Vec<TypeState>,
    /// The enclosing nets' names of each box, by [`BoxIdx`].
    box_paths: Vec<Vec<String>>,
    /// Each net's definition, inner scope and enclosing scope, by [`NetIdx`].
    net_defs: Vec<(&'a NetDef, usize, usize)>,
    /// Every metadata block of the program with its scope.
    meta: Metadata,
    diags: &'d mut Diagnostics,
}

/// Resolves `program`; `entry` selects the entry net by (qualified) name.
pub fn resolve(
    program: &Program,
    src_len: usize,
    entry: Option<&str>,
    diags: &mut Diagnostics,
) -> Hir {
    let mut r = Resolver {
        hir: Hir::default(),
        scopes: Vec::new(),
        types: Vec::new(),
        type_state: Vec::new(),
        box_paths: Vec::new(),
        net_defs: Vec::new(),
        meta: Metadata::default(),
        diags,
    };
    collect_metadata(&program.defs, &mut Vec::new(), &mut r.meta);
    r.declare(&program.defs, None, &[]);
    for t in 0..r.types.len() {
        let span = match r.types[t].0 {
            TypeEntry::Type(d) => d.name.span.clone(),
            TypeEntry::Typesig(d) => d.name.span.clone(),
        };
        r.type_def(t, &span);
    }
    for idx in 0..r.net_defs.len() {
        r.resolve_net(idx);
    }
    r.break_cycles();
    r.warn_unknown_metadata_boxes();
    r.meta.check_observers(r.diags);
    r.hir.entry = r.pick_entry(&program.defs, src_len, entry);
    r.hir
}

/// Gathers every metadata block with the names of the nets around it.
fn collect_metadata(defs: &[Def], path: &mut Vec<String>, out: &mut Metadata) {
    for def in defs {
        match def {
            Def::Metadata(block) => out.blocks.push(ScopedBlock {
                scope: path.clone(),
                block: block.clone(),
            }),
            Def::Net(n) => {
                path.push(n.name.name.clone());
                collect_metadata(&n.defs, path, out);
                path.pop();
            }
            Def::Box(_) | Def::Type(_) | Def::Typesig(_) => {}
        }
    }
}

impl<'a> Resolver<'a, '_> {
    // ---- phase 1: declarations ----

    fn declare(&mut self, defs: &'a [Def], parent: Option<usize>, path: &[String]) -> usize {
        let scope = self.scopes.len();
        self.scopes.push(Scope {
            parent,
            ..Default::default()
        });
        let mut nested = Vec::new();
        for def in defs {
            match def {
                Def::Box(b) => {
                    let idx = self.declare_box(b, path);
                    self.bind_entity(scope, &b.name, Entity::Box(idx));
                }
                Def::Net(n) => {
                    let idx = self.hir.nets.len();
                    let mut full = path.to_vec();
                    full.push(n.name.name.clone());
                    let path_refs: Vec<&str> = path.iter().map(String::as_str).collect();
                    let observers = self.meta.net_observers(&path_refs, &n.name.name);
                    self.hir.nets.push(NetInfo {
                        observers,
                        name: n.name.name.clone(),
                        qual: full.join("/"),
                        path: path.to_vec(),
                        name_span: n.name.span.clone(),
                        sig: None,
                        sig_span: n.sig_span.clone(),
                        body: None,
                    });
                    self.net_defs.push((n, usize::MAX, scope));
                    self.bind_entity(scope, &n.name, Entity::Net(idx));
                    nested.push((idx, n, full));
                }
                Def::Type(t) => self.bind_type(scope, &t.name, TypeEntry::Type(t)),
                Def::Typesig(t) => self.bind_type(scope, &t.name, TypeEntry::Typesig(t)),
                Def::Metadata(_) => {} // collected beforehand: it applies to the whole scope
            }
        }
        for (idx, n, full) in nested {
            let inner = self.declare(&n.defs, Some(scope), &full);
            self.net_defs[idx].1 = inner;
        }
        scope
    }

    /// An unknown type or typesig name, with the nearest visible one.
    fn unknown_type(&mut self, id: &Ident, scope: usize, what: &str, label: &str) {
        let mut d = Diagnostic::error(id.span.clone(), format!("unknown {what} `{}`", id.name))
            .with_label(label);
        if let Some(help) = did_you_mean(&id.name, self.visible_types(scope)) {
            d = d.with_note(help);
        }
        self.diags.push(d);
    }

    fn bind_entity(&mut self, scope: usize, name: &'a Ident, e: Entity) {
        if let Some((_, prev)) = self.scopes[scope].entities.get(name.name.as_str()) {
            let prev = prev.clone();
            self.diags.push(
                Diagnostic::error(
                    name.span.clone(),
                    format!("`{}` is defined twice in the same scope", name.name),
                )
                .with_label("second definition")
                .with_secondary(prev, "first defined here")
                .with_note("boxes and nets share one namespace"),
            );
            return;
        }
        self.scopes[scope]
            .entities
            .insert(&name.name, (e, name.span.clone()));
    }

    fn bind_type(&mut self, scope: usize, name: &'a Ident, t: TypeEntry<'a>) {
        if let Some((_, prev)) = self.scopes[scope].types.get(name.name.as_str()) {
            let prev = prev.clone();
            self.diags.push(
                Diagnostic::error(
                    name.span.clone(),
                    format!("type `{}` is defined twice in the same scope", name.name),
                )
                .with_label("second definition")
                .with_secondary(prev, "first defined here"),
            );
            return;
        }
        self.types.push((t, scope));
        self.type_state.push(TypeState::Todo);
        self.scopes[scope]
            .types
            .insert(&name.name, (self.types.len() - 1, name.span.clone()));
    }

    fn declare_box(&mut self, b: &'a BoxDecl, path: &[String]) -> BoxIdx {
        let inputs = match &b.inputs {
            Some(ls) => self.labels(ls, "the box's input"),
            None => Vec::new(),
        };
        let outputs: Vec<Vec<Label>> = b
            .outputs
            .iter()
            .map(|v| self.labels(&v.labels, "a box output"))
            .collect();
        let path_refs: Vec<&str> = path.iter().map(String::as_str).collect();
        let interface = self.meta.box_interface(&path_refs, &b.name.name);
        let observers = self.meta.box_observers(&path_refs, &b.name.name);
        self.hir.boxes.push(BoxInfo {
            observers,
            name: b.name.name.clone(),
            span: b.span.clone(),
            inputs,
            init: b.inputs.is_none(),
            outputs,
            interface,
            code: b.body.clone(),
        });
        self.box_paths.push(path.to_vec());
        self.hir.boxes.len() - 1
    }

    /// Interns labels in order, reporting duplicates.
    fn labels(&mut self, ls: &[LabelAst], what: &str) -> Vec<Label> {
        let mut out: Vec<Label> = Vec::with_capacity(ls.len());
        for (i, l) in ls.iter().enumerate() {
            let label = Label::new(l.kind, &l.name);
            if out.contains(&label) {
                let first = ls[..i]
                    .iter()
                    .find(|p| p.kind == l.kind && p.name == l.name)
                    .map(|p| p.span.clone());
                let mut d = Diagnostic::error(
                    l.span.clone(),
                    format!("label `{label}` appears twice in {what}"),
                )
                .with_label("duplicate label");
                if let Some(s) = first {
                    d = d.with_secondary(s, "first here");
                }
                self.diags.push(d);
                continue;
            }
            out.push(label);
        }
        out
    }

    fn variant(&mut self, v: &VariantAst) -> Variant {
        Variant::new(self.labels(&v.labels, "a record type"))
    }

    // ---- lookups ----

    fn lookup_entity(&self, mut scope: usize, name: &str) -> Option<Entity> {
        loop {
            if let Some((e, _)) = self.scopes[scope].entities.get(name) {
                return Some(*e);
            }
            scope = self.scopes[scope].parent?;
        }
    }

    /// The box and net names visible from `scope` (for "did you mean").
    fn visible_entities(&self, mut scope: usize) -> Vec<&'a str> {
        let mut names = Vec::new();
        loop {
            names.extend(self.scopes[scope].entities.keys().copied());
            match self.scopes[scope].parent {
                Some(p) => scope = p,
                None => return names,
            }
        }
    }

    /// The type and typesig names visible from `scope` (for "did you mean").
    fn visible_types(&self, mut scope: usize) -> Vec<&'a str> {
        let mut names = Vec::new();
        loop {
            names.extend(self.scopes[scope].types.keys().copied());
            match self.scopes[scope].parent {
                Some(p) => scope = p,
                None => return names,
            }
        }
    }

    fn lookup_type(&self, mut scope: usize, name: &str) -> Option<usize> {
        loop {
            if let Some((t, _)) = self.scopes[scope].types.get(name) {
                return Some(*t);
            }
            scope = self.scopes[scope].parent?;
        }
    }

    /// Resolves type definition `t`, detecting cycles.
    fn type_def(&mut self, t: usize, use_span: &Span) -> TypeState {
        match &self.type_state[t] {
            TypeState::Todo => {}
            TypeState::Busy => {
                self.diags.push(
                    Diagnostic::error(use_span.clone(), "type definition refers to itself")
                        .with_label("this use is part of a cycle"),
                );
                return TypeState::Type(Vec::new());
            }
            done => return done.clone(),
        }
        self.type_state[t] = TypeState::Busy;
        let (entry, scope) = self.types[t];
        let state = match entry {
            TypeEntry::Type(d) => TypeState::Type(self.ty(&d.ty, scope)),
            TypeEntry::Typesig(d) => TypeState::Sig(self.sig_items(&d.items, scope)),
        };
        self.type_state[t] = state.clone();
        state
    }

    fn ty(&mut self, t: &TypeAst, scope: usize) -> Vec<Variant> {
        let mut out = Vec::new();
        for atom in &t.atoms {
            match atom {
                TypeAtom::Variant(v) => out.push(self.variant(v)),
                TypeAtom::Named(id) => match self.lookup_type(scope, &id.name) {
                    Some(t) => match self.type_def(t, &id.span) {
                        TypeState::Type(vs) => out.extend(vs),
                        _ => self.diags.push(
                            Diagnostic::error(
                                id.span.clone(),
                                format!("`{}` is a type signature, not a type", id.name),
                            )
                            .with_label("expected a type here"),
                        ),
                    },
                    None => {
                        self.unknown_type(id, scope, "type", "no type of this name is in scope")
                    }
                },
            }
        }
        out.sort();
        out.dedup();
        out
    }

    fn sig_items(&mut self, items: &[SigItem], scope: usize) -> Vec<SigMapping> {
        let mut out = Vec::new();
        for item in items {
            match item {
                SigItem::Mapping(m) => {
                    let inputs = self.ty(&m.input, scope);
                    let errors = self.diags.error_count();
                    let mut outputs = m.output.as_ref().map(|t| self.ty(t, scope));
                    if self.diags.error_count() != errors {
                        outputs = None; // already reported: do not check against a broken declaration
                    }
                    out.push(SigMapping {
                        inputs,
                        outputs,
                        span: m.span.clone(),
                    });
                }
                SigItem::Named(id) => match self.lookup_type(scope, &id.name) {
                    Some(t) => match self.type_def(t, &id.span) {
                        TypeState::Sig(ms) => out.extend(ms),
                        _ => self.diags.push(
                            Diagnostic::error(
                                id.span.clone(),
                                format!("`{}` is a type, not a type signature", id.name),
                            )
                            .with_label(
                                "expected a type signature (`typesig`) or a mapping `type -> type`",
                            ),
                        ),
                    },
                    None => self.unknown_type(
                        id,
                        scope,
                        "type signature",
                        "no typesig of this name is in scope",
                    ),
                },
            }
        }
        out
    }

    // ---- phase 2: nets ----

    fn resolve_net(&mut self, idx: NetIdx) {
        let (def, scope, outer) = self.net_defs[idx];
        if let Some(items) = &def.sig {
            // The signature is written outside the net's body: the body's types are not in scope.
            let sig = self.sig_items(items, outer);
            self.hir.nets[idx].sig = Some(sig);
        }
        match &def.body {
            Some(e) => {
                let h = self.expr(e, scope);
                self.hir.nets[idx].body = Some(h);
            }
            None if def.sig.is_none() => {
                self.diags.push(
                    Diagnostic::error(
                        def.name.span.clone(),
                        format!("net `{}` has no `connect` expression", def.name.name),
                    )
                    .with_label("this net is never connected")
                    .with_note("write `net NAME connect EXPRESSION;`"),
                );
            }
            None => {} // declared only: its signature stands for it (an error if the program runs it)
        }
    }

    fn expr(&mut self, e: &Expr, scope: usize) -> HId {
        let kind = match &e.kind {
            ExprKind::Name(id) => match self.lookup_entity(scope, &id.name) {
                Some(Entity::Box(b)) => HKind::Box(b),
                Some(Entity::Net(n)) => HKind::Net(n),
                None => {
                    let mut d = Diagnostic::error(
                        id.span.clone(),
                        format!("unknown box or net `{}`", id.name),
                    )
                    .with_label("not defined in this scope or any enclosing one");
                    if self.lookup_type(scope, &id.name).is_some() {
                        d = d.with_note(format!(
                            "`{}` is a type, which cannot be used in a connect expression",
                            id.name
                        ));
                    } else if let Some(help) = did_you_mean(&id.name, self.visible_entities(scope))
                    {
                        d = d.with_note(help);
                    }
                    self.diags.push(d);
                    HKind::Error
                }
            },
            ExprKind::Filter(f) => self.filter(f),
            ExprKind::Synchrocell(pats) => {
                let spans = pats.iter().map(|p| p.span.clone()).collect();
                HKind::Synchrocell {
                    def: SynchrocellDef {
                        patterns: self.patterns(pats),
                    },
                    spans,
                }
            }
            ExprKind::Serial(parts, ops) => {
                let hs = parts.iter().map(|p| self.expr(p, scope)).collect();
                HKind::Serial(hs, ops.clone())
            }
            ExprKind::Parallel { branches, det, .. } => {
                let hs = branches.iter().map(|p| self.expr(p, scope)).collect();
                HKind::Parallel {
                    branches: hs,
                    det: *det,
                }
            }
            ExprKind::Star {
                body, exits, det, ..
            } => HKind::Star {
                body: self.expr(body, scope),
                exits: self.patterns(exits),
                spans: exits.iter().map(|p| p.span.clone()).collect(),
                det: *det,
            },
            ExprKind::Split { body, tag, det, .. } => HKind::Split {
                body: self.expr(body, scope),
                tag: Label::new(tag.kind, &tag.name),
                det: *det,
            },
            ExprKind::Feedback { body, back, .. } => HKind::Feedback {
                body: self.expr(body, scope),
                back: self.patterns(back),
                spans: back.iter().map(|p| p.span.clone()).collect(),
            },
            ExprKind::Place { body, node, op } => {
                let node = match u32::try_from(*node) {
                    Ok(n) => n,
                    Err(_) => {
                        self.diags.push(
                            Diagnostic::error(
                                op.start..e.span.end,
                                "placement node number out of range",
                            )
                            .with_label("node numbers are 0 to 4294967295"),
                        );
                        0
                    }
                };
                HKind::Place {
                    body: self.expr(body, scope),
                    node,
                }
            }
            ExprKind::DynPlace { body, tag, det, .. } => HKind::DynPlace {
                body: self.expr(body, scope),
                tag: Label::new(tag.kind, &tag.name),
                det: *det,
            },
        };
        let op = match &e.kind {
            ExprKind::Star { op, .. }
            | ExprKind::Split { op, .. }
            | ExprKind::Feedback { op, .. }
            | ExprKind::Place { op, .. }
            | ExprKind::DynPlace { op, .. }
            | ExprKind::Parallel { op, .. } => op.clone(),
            _ => e.span.clone(),
        };
        self.hir.add(kind, e.span.clone(), op)
    }

    fn patterns(&mut self, pats: &[GuardedVariant]) -> Vec<Pattern> {
        pats.iter()
            .map(|p| {
                let variant = self.variant(&p.variant);
                let guard = p
                    .guard
                    .as_ref()
                    .map(|g| self.tag_expr(g, &variant, &p.variant.span));
                Pattern { variant, guard }
            })
            .collect()
    }

    fn filter(&mut self, f: &Filter) -> HKind {
        let Some(pat) = &f.pattern else {
            let def = FilterDef {
                pattern: Variant::empty(),
                arms: vec![FilterArm {
                    guard: None,
                    outputs: vec![OutSpec::default()],
                }],
            };
            return HKind::Filter {
                def,
                identity: true,
            };
        };
        let pattern = self.variant(pat);
        let mut arms = Vec::new();
        for arm in &f.arms {
            let guard = arm
                .guard
                .as_ref()
                .map(|g| self.tag_expr(g, &pattern, &pat.span));
            let outputs = arm
                .outputs
                .iter()
                .map(|o| self.outspec(o, &pattern, &pat.span))
                .collect();
            arms.push(FilterArm { guard, outputs });
        }
        HKind::Filter {
            def: FilterDef { pattern, arms },
            identity: false,
        }
    }

    fn outspec(&mut self, o: &OutSpecAst, pattern: &Variant, pat_span: &Span) -> OutSpec {
        let mut items = Vec::new();
        let mut seen: Vec<Label> = Vec::new();
        for item in &o.items {
            let (dst, dst_span, out) = match item {
                ItemAst::Field { dst, src } => {
                    let d = Label::field(&dst.name);
                    let s_id = src.as_ref().unwrap_or(dst);
                    let s = Label::field(&s_id.name);
                    if !pattern.contains(s) {
                        let fields = pattern.labels().iter().filter(|l| l.is_field());
                        let help = did_you_mean(&s_id.name, fields.map(|l| l.name()));
                        let mut d = Diagnostic::error(
                            s_id.span.clone(),
                            format!("field `{s}` is not in the filter's pattern"),
                        )
                        .with_label("the filter can only copy fields its pattern names")
                        .with_secondary(pat_span.clone(), "the pattern");
                        if let Some(help) = help {
                            d = d.with_note(help);
                        }
                        self.diags.push(d);
                    }
                    (d, dst.span.clone(), OutItem::Field { dst: d, src: s })
                }
                ItemAst::Tag { kind, name, value } => {
                    let d = Label::new(*kind, &name.name);
                    let value = match value {
                        Some(e) => TagValue::Expr(self.tag_expr(e, pattern, pat_span)),
                        None => TagValue::Copy,
                    };
                    (d, name.span.clone(), OutItem::Tag { dst: d, value })
                }
            };
            if seen.contains(&dst) {
                self.diags.push(
                    Diagnostic::error(
                        dst_span,
                        format!("`{dst}` is set twice in one output record"),
                    )
                    .with_label("duplicate"),
                );
                continue;
            }
            seen.push(dst);
            items.push(out);
        }
        OutSpec { items }
    }

    fn tag_expr(&mut self, e: &TagExpr, pattern: &Variant, pat_span: &Span) -> CExpr {
        CExpr::compile(self.tree(e, pattern, pat_span))
    }

    fn tree(&mut self, e: &TagExpr, pattern: &Variant, pat_span: &Span) -> ExprTree {
        match &e.kind {
            TagExprKind::Int(v) => ExprTree::Int(*v),
            TagExprKind::Name(n) => {
                let b = Label::btag(n);
                let t = Label::tag(n);
                if pattern.contains(b) {
                    ExprTree::Label(b)
                } else {
                    if !pattern.contains(t) {
                        let mut d = Diagnostic::error(
                            e.span.clone(),
                            format!("tag `<{n}>` is not in the pattern"),
                        )
                        .with_label("tag expressions can only read tags their pattern names")
                        .with_secondary(pat_span.clone(), format!("add `<{n}>` to this pattern"));
                        if pattern.contains(Label::field(n)) {
                            d = d.with_note(format!(
                                "`{n}` is a field here; fields are opaque to S-Net"
                            ));
                        } else {
                            let tags = pattern.labels().iter().filter(|l| !l.is_field());
                            if let Some(help) = did_you_mean(n, tags.map(|l| l.name())) {
                                d = d.with_note(help);
                            }
                        }
                        self.diags.push(d);
                    }
                    ExprTree::Label(t)
                }
            }
            TagExprKind::Unary(op, a) => {
                ExprTree::Unary(*op, Box::new(self.tree(a, pattern, pat_span)))
            }
            TagExprKind::Binary(op, a, b) => ExprTree::Binary(
                *op,
                Box::new(self.tree(a, pattern, pat_span)),
                Box::new(self.tree(b, pattern, pat_span)),
            ),
            TagExprKind::Cond(c, a, b) => ExprTree::Cond(
                Box::new(self.tree(c, pattern, pat_span)),
                Box::new(self.tree(a, pattern, pat_span)),
                Box::new(self.tree(b, pattern, pat_span)),
            ),
            TagExprKind::Call(f, args) => ExprTree::Call(
                *f,
                args.iter()
                    .map(|a| self.tree(a, pattern, pat_span))
                    .collect(),
            ),
        }
    }

    // ---- whole-program checks ----

    /// Reports recursive net references and cuts them (iterative DFS).
    fn break_cycles(&mut self) {
        let n = self.hir.nets.len();
        let edges: Vec<Vec<(HId, NetIdx)>> = (0..n)
            .map(|i| {
                let mut out = Vec::new();
                if let Some(b) = self.hir.nets[i].body {
                    self.hir.net_uses(b, &mut out);
                }
                out.sort();
                out
            })
            .collect();
        // 0 = unvisited, 1 = on stack, 2 = done
        let mut color = vec![0u8; n];
        let mut cut = Vec::new();
        for root in 0..n {
            if color[root] != 0 {
                continue;
            }
            let mut stack: Vec<(NetIdx, usize)> = vec![(root, 0)];
            color[root] = 1;
            while let Some(&mut (net, ref mut next)) = stack.last_mut() {
                if let Some(&(h, target)) = edges[net].get(*next) {
                    *next += 1;
                    match color[target] {
                        0 => {
                            color[target] = 1;
                            stack.push((target, 0));
                        }
                        1 => cut.push((h, net, target)),
                        _ => {}
                    }
                } else {
                    color[net] = 2;
                    stack.pop();
                }
            }
        }
        for (h, from, target) in cut {
            let t = &self.hir.nets[target];
            let msg = if from == target {
                format!("net `{}` uses itself", t.name)
            } else {
                format!(
                    "net `{}` is used recursively (through `{}`)",
                    t.name, self.hir.nets[from].name
                )
            };
            self.diags.push(
                Diagnostic::error(self.hir.nodes[h].span.clone(), msg)
                    .with_label("recursive use")
                    .with_secondary(t.name_span.clone(), "defined here")
                    .with_note("networks cannot be recursive; use serial replication `*` or feedback `\\` instead"),
            );
            self.hir.nodes[h].kind = HKind::Error;
        }
    }

    /// A `<box name="b">` must name a box declared in its block's scope (or deeper).
    fn warn_unknown_metadata_boxes(&mut self) {
        for m in self.meta.box_mentions() {
            let declared = self
                .hir
                .boxes
                .iter()
                .zip(&self.box_paths)
                .any(|(b, path)| b.name == m.name && path.starts_with(m.scope));
            if declared {
                continue;
            }
            let (message, label) = match m.scope.last() {
                None => (
                    format!("metadata names box `{}`, which is not declared", m.name),
                    "no box of this name".to_string(),
                ),
                Some(_) => (
                    format!(
                        "metadata in net `{}` names box `{}`, which is not declared there",
                        m.scope.join("/"),
                        m.name
                    ),
                    "no box of this name in this net or the nets inside it".to_string(),
                ),
            };
            self.diags
                .push(Diagnostic::warning(m.span, message).with_label(label));
        }
    }

    fn pick_entry(&mut self, defs: &[Def], end: usize, entry: Option<&str>) -> Option<NetIdx> {
        match entry {
            None => {
                let last =
                    defs.iter()
                        .rev()
                        .find_map(|d| if let Def::Net(n) = d { Some(n) } else { None });
                match last {
                    Some(n) => self
                        .hir
                        .nets
                        .iter()
                        .position(|i| i.path.is_empty() && i.name_span == n.name.span),
                    None => {
                        if !self.diags.has_errors() {
                            self.diags.push(
                                Diagnostic::error(
                                    end..end,
                                    "the program defines no net: there is nothing to run",
                                )
                                .with_label("expected a top-level `net` definition")
                                .with_note(
                                    "the entry network is the last top-level net of the file",
                                ),
                            );
                        }
                        None
                    }
                }
            }
            Some(name) => {
                let found = self
                    .hir
                    .nets
                    .iter()
                    .position(|i| i.path.is_empty() && i.name == name)
                    .or_else(|| self.hir.nets.iter().position(|i| i.qual == name));
                if found.is_none() {
                    let names: Vec<&str> = self.hir.nets.iter().map(|n| n.qual.as_str()).collect();
                    let mut d = Diagnostic::new(
                        crate::diag::Severity::Error,
                        None,
                        format!("no net named `{name}`"),
                    );
                    if let Some(help) = did_you_mean(name, names.iter().copied()) {
                        d = d.with_note(help);
                    }
                    self.diags
                        .push(d.with_note(format!("the nets are: {}", names.join(", "))));
                }
                found
            }
        }
    }
}
