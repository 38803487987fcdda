//! The resolved program: what the checker and the lowering work on.
//!
//! Names are resolved to net and box indices, labels are interned, tag
//! expressions are compiled, signatures are expanded into variant lists.
//! Expressions live in one arena ([`Hir::nodes`]) so that later passes can
//! keep per-expression facts in plain vectors indexed by [`HId`].

use snet_core::{FilterDef, Label, LabelKind, Pattern, SynchrocellDef, Variant};

use crate::diag::Span;

pub type HId = usize;
pub type NetIdx = usize;
pub type BoxIdx = usize;

#[derive(Clone, Debug, Default)]
pub struct Hir {
    pub nodes: Vec<HNode>,
    pub nets: Vec<NetInfo>,
    pub boxes: Vec<BoxInfo>,
    /// The entry network (last top-level net, or the one selected by name).
    pub entry: Option<NetIdx>,
}

impl Hir {
    pub fn node(&self, h: HId) -> &HNode {
        &self.nodes[h]
    }

    /// The nets used anywhere inside the expression `h` (not inside the
    /// bodies of those nets), each with the node that names it.
    pub fn net_uses(&self, h: HId, out: &mut Vec<(HId, NetIdx)>) {
        let mut stack = vec![h];
        while let Some(h) = stack.pop() {
            match &self.nodes[h].kind {
                HKind::Net(n) => out.push((h, *n)),
                HKind::Serial(parts, _) => stack.extend(parts.iter().copied()),
                HKind::Parallel { branches, .. } => stack.extend(branches.iter().copied()),
                HKind::Star { body, .. }
                | HKind::Split { body, .. }
                | HKind::Feedback { body, .. }
                | HKind::Place { body, .. }
                | HKind::DynPlace { body, .. } => stack.push(*body),
                HKind::Box(_) | HKind::Filter { .. } | HKind::Synchrocell { .. } | HKind::Error => {
                }
            }
        }
    }

    pub fn add(&mut self, kind: HKind, span: Span, op: Span) -> HId {
        self.nodes.push(HNode { kind, span, op });
        self.nodes.len() - 1
    }
}

#[derive(Clone, Debug)]
pub struct HNode {
    pub kind: HKind,
    pub span: Span,
    /// The operator (`*`, `!`, ...) for postfix combinators; the whole span otherwise.
    pub op: Span,
}

#[derive(Clone, Debug)]
pub enum HKind {
    Box(BoxIdx),
    /// A use of a named net.
    Net(NetIdx),
    /// `identity` is true for `[]`.
    Filter {
        def: FilterDef,
        identity: bool,
    },
    Synchrocell {
        def: SynchrocellDef,
        spans: Vec<Span>,
    },
    /// Components and the spans of the `..` operators between them.
    Serial(Vec<HId>, Vec<Span>),
    Parallel {
        branches: Vec<HId>,
        det: bool,
    },
    Star {
        body: HId,
        exits: Vec<Pattern>,
        spans: Vec<Span>,
        det: bool,
    },
    Split {
        body: HId,
        tag: Label,
        det: bool,
    },
    Feedback {
        body: HId,
        back: Vec<Pattern>,
        spans: Vec<Span>,
    },
    Place {
        body: HId,
        node: u32,
    },
    /// `A !@ <t>`, or `A !!@ <t>` when `det`.
    DynPlace {
        body: HId,
        tag: Label,
        det: bool,
    },
    /// Something that did not resolve (already reported): accepts anything, emits nothing.
    Error,
}

/// One `input -> output` mapping of a net signature.
#[derive(Clone, Debug)]
pub struct SigMapping {
    pub inputs: Vec<Variant>,
    /// `None` for `...`.
    pub outputs: Option<Vec<Variant>>,
    pub span: Span,
}

#[derive(Clone, Debug)]
pub struct NetInfo {
    pub name: String,
    /// Names of the enclosing nets and this one, joined by `/`.
    pub qual: String,
    /// The enclosing nets' names, outermost first.
    pub path: Vec<String>,
    pub name_span: Span,
    pub sig: Option<Vec<SigMapping>>,
    pub sig_span: Option<Span>,
    pub body: Option<HId>,
    /// Observers metadata asks for on this net.
    pub observers: Vec<crate::metadata::ObserverSpec>,
}

impl NetInfo {
    /// Union of the declared input variants, if there is a signature.
    pub fn declared_inputs(&self) -> Option<Vec<Variant>> {
        self.sig.as_ref().map(|ms| {
            let mut v: Vec<Variant> = ms.iter().flat_map(|m| m.inputs.iter().cloned()).collect();
            v.sort();
            v.dedup();
            v
        })
    }
}

#[derive(Clone, Debug)]
pub struct BoxInfo {
    pub name: String,
    pub span: Span,
    /// Input labels in argument order; empty for an initialiser.
    pub inputs: Vec<Label>,
    pub init: bool,
    pub outputs: Vec<Vec<Label>>,
    pub interface: String,
    /// The inline body `{ <<< LANGUAGE | code >>> }`, if any.
    pub code: Option<crate::ast::InlineCode>,
    /// Observers metadata asks for on this box.
    pub observers: Vec<crate::metadata::ObserverSpec>,
}

/// Sort key that does not depend on interning order: kind, then name.
fn label_key(l: &Label) -> (LabelKind, &'static str) {
    (l.kind(), l.name())
}

/// `{a, <t>, <#b>}`: the `Display` of [`Variant`], the one printer of
/// record types in messages.
pub fn fmt_variant(v: &Variant) -> String {
    v.to_string()
}

/// `{a} | {b}` with variants in a stable order; `(none)` for the empty set.
pub fn fmt_type(vs: &[Variant]) -> String {
    if vs.is_empty() {
        return "(none)".to_string();
    }
    let mut parts: Vec<String> = vs.iter().map(fmt_variant).collect();
    parts.sort();
    parts.dedup();
    parts.join(" | ")
}

/// Labels of a variant as sorted names, for JSON output.
pub fn variant_names(v: &Variant) -> Vec<String> {
    let mut labels: Vec<Label> = v.labels().to_vec();
    labels.sort_by_key(label_key);
    labels.iter().map(|l| l.to_string()).collect()
}
