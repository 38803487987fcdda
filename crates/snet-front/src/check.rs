//! Type inference and checking.
//!
//! Types are sets of variants, a variant a set of labels; `v ⊑ p` (v
//! matches p) means v ⊇ p with exactly the same binding tags
//! ([`Variant::is_subtype_of`]). The checker pushes *sets of variants*
//! through the network ("which record types can reach this point"), so flow
//! inheritance is exact for the context each component is used in.
//!
//! Every construct has an **input type** (what it declares it accepts;
//! the lowering stores it in [`snet_core::Node::input`] for best-match
//! routing) and a **flow** (incoming set -> outgoing set):
//!
//! | construct | input type | flow of an incoming variant `v` |
//! |---|---|---|
//! | box `(P) -> (O1) | ...` | `P` | `Oi ∪ (v \ P)` for each i (flow inheritance) |
//! | initialiser box `(-> (O))` | `{}` | `O`, and `O ∪ v` |
//! | filter `[P -> ...]` | `P` | per outspec: its labels `∪ (v \ P)`; all arms |
//! | `[]` | `{}` (accepts anything) | `v` |
//! | synchrocell `[| p1..pn |]` | `p1 .. pn` (never rejects) | `v` (passed on); plus `p1 ∪ .. ∪ pn ∪ r` for each incoming `r ⊑ p1` once every pattern is matched by some incoming variant |
//! | `A .. B` | input of A | B(A(S)); each variant A emits that B does not accept is an error at the `..` naming both |
//! | `A | B` | union of the branches | each v goes to the eligible branch(es) with the best score (largest matched input variant; ties go to all tied) |
//! | `A * pats` | input of A | fixpoint: v matching an exit leaves (if guarded, it may also go on); the others must be accepted by A and go round |
//! | `A \ pats` | input of A | fixpoint: A's outputs matching a pattern go back (must be accepted by A; if guarded, may also leave), the others leave |
//! | `A ! <t>`, `A !@ <t>` | input of A, each plus `<t>` | A(S); every v must carry `<t>` |
//! | `A @ n` | input of A | A(S) |
//! | net with signature | declared inputs | the body's flow for the actual S (the declaration is checked separately) |
//! | net without | its body's | its body's |
//!
//! Fixpoints are bounded ([`MAX_VARIANTS`]); when the bound is hit the
//! checker says so in a warning and stops exploring.
//!
//! Errors: a variant some component cannot accept (serial composition,
//! parallel with no eligible branch, star or feedback re-entry, split tag
//! missing), a declared net input the body rejects, a body output the
//! declaration does not cover (unless `...`). Warnings (likely mistakes,
//! the program still runs): a parallel branch no reaching variant is routed
//! to, a star exit or feedback pattern nothing ever matches, a synchrocell
//! pattern no reaching variant matches (the cell never fires). Warnings are
//! only given for constructs that something reaches at all.

use std::collections::{BTreeSet, HashMap, HashSet};

use snet_core::{Label, Pattern, Variant};

use crate::diag::{Diagnostic, Diagnostics, Span};
use crate::hir::*;

type VSet = BTreeSet<Variant>;

/// Explains a rejected variant: the headline and an optional secondary label.
type Why<'a> = &'a dyn Fn(&Variant) -> (String, Option<(Span, String)>);

/// Bound on the variants a star or feedback fixpoint explores.
pub const MAX_VARIANTS: usize = 512;
/// Bound on how deeply net uses may nest (each level is a recursive call).
pub const MAX_NET_NESTING: usize = 5000;

/// What the lowering and the API need from the checker.
pub struct Checked {
    /// Input type of each expression node (routing types).
    pub inputs: Vec<Vec<Variant>>,
    /// Union of the output types each expression node was seen to produce.
    pub outputs: Vec<Vec<Variant>>,
    /// Per net: inferred input and output.
    pub nets: Vec<(Vec<Variant>, Vec<Variant>)>,
}

pub fn check(hir: &Hir, src: &str, diags: &mut Diagnostics) -> Checked {
    let n = hir.nodes.len();
    let mut c = Checker {
        hir,
        src,
        diags,
        input_cache: vec![None; n],
        outputs: vec![VSet::new(); n],
        reached: vec![false; n],
        hits: HashSet::new(),
        memo: HashMap::new(),
        nesting: 0,
        nesting_reported: false,
        quiet: 0,
        quiet_memo: HashMap::new(),
    };
    let mut nets = vec![(Vec::new(), Vec::new()); hir.nets.len()];
    for idx in c.net_order() {
        nets[idx] = c.check_net(idx);
    }
    c.warnings();
    let inputs = (0..n).map(|h| c.input_type(h)).collect();
    let outputs = c
        .outputs
        .into_iter()
        .map(|s| s.into_iter().collect())
        .collect();
    Checked {
        inputs,
        outputs,
        nets,
    }
}

struct Checker<'h, 'd> {
    hir: &'h Hir,
    src: &'h str,
    diags: &'d mut Diagnostics,
    input_cache: Vec<Option<Vec<Variant>>>,
    outputs: Vec<VSet>,
    reached: Vec<bool>,
    /// (node, pattern index) pairs that matched some variant.
    hits: HashSet<(HId, usize)>,
    memo: HashMap<(NetIdx, Vec<Variant>), VSet>,
    /// Inside a speculative flow whose diagnostics are discarded: results go
    /// to `quiet_memo` only (a later real use must report its errors).
    quiet: usize,
    quiet_memo: HashMap<(NetIdx, Vec<Variant>), VSet>,
    nesting: usize,
    nesting_reported: bool,
}

fn minus(v: &Variant, p: &Variant) -> Variant {
    Variant::new(v.labels().iter().copied().filter(|l| !p.contains(*l)))
}

fn with_label(v: &Variant, l: Label) -> Variant {
    Variant::new(v.labels().iter().copied().chain(std::iter::once(l)))
}

/// Best-match score of `v` against input type `ty`: the size of the largest matched variant.
fn score(v: &Variant, ty: &[Variant]) -> Option<usize> {
    ty.iter()
        .filter(|w| v.is_subtype_of(w))
        .map(Variant::len)
        .max()
}

impl Checker<'_, '_> {
    // ---- input types and acceptance ----

    fn input_type(&mut self, h: HId) -> Vec<Variant> {
        if let Some(t) = &self.input_cache[h] {
            return t.clone();
        }
        let t = match &self.hir.node(h).kind {
            HKind::Box(b) => {
                let b = &self.hir.boxes[*b];
                vec![Variant::new(b.inputs.iter().copied())]
            }
            HKind::Net(n) => self.net_input(*n),
            HKind::Filter { def, .. } => vec![def.pattern.clone()],
            HKind::Sync { def, .. } => def.patterns.iter().map(|p| p.variant.clone()).collect(),
            HKind::Serial(parts, _) => self.input_type(parts[0]),
            HKind::Parallel { branches, .. } => {
                let mut all: Vec<Variant> =
                    branches.iter().flat_map(|b| self.input_type(*b)).collect();
                all.sort();
                all.dedup();
                all
            }
            HKind::Star { body, .. } | HKind::Feedback { body, .. } | HKind::Place { body, .. } => {
                self.input_type(*body)
            }
            HKind::Split { body, tag, .. } | HKind::DynPlace { body, tag, .. } => {
                let tag = *tag;
                let mut t: Vec<Variant> = self
                    .input_type(*body)
                    .iter()
                    .map(|v| with_label(v, tag))
                    .collect();
                t.sort();
                t.dedup();
                t
            }
            HKind::Error => vec![Variant::empty()],
        };
        self.input_cache[h] = Some(t.clone());
        t
    }

    fn net_input(&mut self, n: NetIdx) -> Vec<Variant> {
        let net = &self.hir.nets[n];
        match (net.declared_inputs(), net.body) {
            (Some(d), _) => d,
            (None, Some(b)) => self.input_type(b),
            (None, None) => Vec::new(),
        }
    }

    fn accepts(&mut self, h: HId, v: &Variant) -> bool {
        match &self.hir.node(h).kind {
            HKind::Box(b) => {
                let b = &self.hir.boxes[*b];
                b.init || v.is_subtype_of(&Variant::new(b.inputs.iter().copied()))
            }
            HKind::Net(n) => {
                let net = &self.hir.nets[*n];
                match (net.declared_inputs(), net.body) {
                    (Some(d), _) => d.iter().any(|p| v.is_subtype_of(p)),
                    (None, Some(b)) => self.accepts(b, v),
                    (None, None) => true,
                }
            }
            HKind::Filter { def, identity } => *identity || v.is_subtype_of(&def.pattern),
            HKind::Sync { .. } | HKind::Error => true,
            HKind::Serial(parts, _) => self.accepts(parts[0], v),
            HKind::Parallel { .. } => {
                let t = self.input_type(h);
                score(v, &t).is_some()
            }
            HKind::Star { body, exits, .. } => {
                exits.iter().any(|p| v.is_subtype_of(&p.variant)) || self.accepts(*body, v)
            }
            HKind::Split { body, tag, .. } | HKind::DynPlace { body, tag, .. } => {
                v.contains(*tag) && self.accepts(*body, v)
            }
            HKind::Feedback { body, .. } | HKind::Place { body, .. } => self.accepts(*body, v),
        }
    }

    /// Why `h` rejects `v`, as a note (binding tags, a missing split tag).
    fn reject_note(&mut self, h: HId, v: &Variant) -> Option<String> {
        match &self.hir.node(h).kind {
            HKind::Split { tag, .. } | HKind::DynPlace { tag, .. } if !v.contains(*tag) => Some(
                format!("records entering a split `! {tag}` must carry the tag {tag}"),
            ),
            HKind::Serial(parts, _) => {
                let first = parts[0];
                self.reject_note(first, v)
            }
            _ => {
                let t = self.input_type(h);
                let near = t.iter().find(|p| p.labels().iter().all(|l| v.contains(*l)));
                near.map(|p| {
                    format!(
                        "{} has the labels of {} but binding tags must match exactly (no subtyping over binding tags)",
                        fmt_variant(v),
                        fmt_variant(p)
                    )
                })
            }
        }
    }

    /// A short description of expression `h` for messages.
    fn describe(&self, h: HId) -> String {
        let node = self.hir.node(h);
        match &node.kind {
            HKind::Box(b) => format!("box `{}`", self.hir.boxes[*b].name),
            HKind::Net(n) => format!("net `{}`", self.hir.nets[*n].name),
            _ => {
                let text = self.src.get(node.span.clone()).unwrap_or("");
                let one_line: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
                if !one_line.is_empty() && one_line.chars().count() <= 40 {
                    format!("`{one_line}`")
                } else {
                    let kind = match &node.kind {
                        HKind::Filter { .. } => "filter",
                        HKind::Sync { .. } => "synchrocell",
                        HKind::Serial(..) => "serial composition",
                        HKind::Parallel { .. } => "parallel composition",
                        HKind::Star { .. } => "serial replication",
                        HKind::Split { .. } => "parallel replication",
                        HKind::Feedback { .. } => "feedback loop",
                        HKind::Place { .. } | HKind::DynPlace { .. } => "placement",
                        _ => "expression",
                    };
                    format!("this {kind}")
                }
            }
        }
    }

    /// Keeps the variants of `set` that `target` accepts; reports the others at `at`.
    fn admit(&mut self, target: HId, set: VSet, at: Span, why: Why<'_>) -> VSet {
        let mut kept = VSet::new();
        for v in set {
            if self.accepts(target, &v) {
                kept.insert(v);
                continue;
            }
            let (msg, secondary) = why(&v);
            let t = self.input_type(target);
            let mut d = Diagnostic::error(at.clone(), msg).with_label(format!(
                "{} cannot accept {}",
                self.describe(target),
                fmt_variant(&v)
            ));
            if let Some((s, text)) = secondary {
                d = d.with_secondary(s, text);
            }
            d = d.with_secondary(
                self.hir.node(target).span.clone(),
                format!("this accepts {}", fmt_type(&t)),
            );
            if let Some(note) = self.reject_note(target, &v) {
                d = d.with_note(note);
            }
            self.diags.push(d);
        }
        kept
    }

    // ---- flow ----

    fn flow(&mut self, h: HId, input: &VSet) -> VSet {
        if input.is_empty() {
            return VSet::new();
        }
        self.reached[h] = true;
        let hir = self.hir;
        let node = hir.node(h);
        let out = match &node.kind {
            HKind::Box(b) => {
                let b = &hir.boxes[*b];
                let p = Variant::new(b.inputs.iter().copied());
                let outs: Vec<Variant> = b
                    .outputs
                    .iter()
                    .map(|o| Variant::new(o.iter().copied()))
                    .collect();
                let mut out = VSet::new();
                if b.init {
                    out.extend(outs.iter().cloned());
                }
                for v in input {
                    if b.init || v.is_subtype_of(&p) {
                        let inherit = minus(v, &p);
                        out.extend(outs.iter().map(|o| o.union(&inherit)));
                    }
                }
                out
            }
            HKind::Net(n) => self.flow_net(*n, input),
            HKind::Filter { def, identity } => {
                let mut out = VSet::new();
                for v in input {
                    if *identity {
                        out.insert(v.clone());
                    } else if v.is_subtype_of(&def.pattern) {
                        let inherit = minus(v, &def.pattern);
                        for arm in &def.arms {
                            for spec in &arm.outputs {
                                let labels = spec.items.iter().map(|i| match i {
                                    snet_core::OutItem::Field { dst, .. }
                                    | snet_core::OutItem::Tag { dst, .. } => *dst,
                                });
                                out.insert(Variant::new(labels).union(&inherit));
                            }
                        }
                    }
                }
                out
            }
            HKind::Sync { def, .. } => {
                let mut out = input.clone();
                let mut all = true;
                for (i, p) in def.patterns.iter().enumerate() {
                    if input.iter().any(|v| v.is_subtype_of(&p.variant)) {
                        self.hits.insert((h, i));
                    } else {
                        all = false;
                    }
                }
                if all {
                    let joined = def
                        .patterns
                        .iter()
                        .fold(Variant::empty(), |acc, p| acc.union(&p.variant));
                    for r in input
                        .iter()
                        .filter(|r| r.is_subtype_of(&def.patterns[0].variant))
                    {
                        out.insert(joined.union(r));
                    }
                }
                out
            }
            HKind::Serial(parts, ops) => {
                let mut cur = self.flow(parts[0], input);
                for i in 1..parts.len() {
                    let (prev, next) = (parts[i - 1], parts[i]);
                    let prev_desc = self.describe(prev);
                    let next_desc = self.describe(next);
                    let prev_span = hir.node(prev).span.clone();
                    let why = |v: &Variant| {
                        (
                            format!(
                                "{prev_desc} can emit {}, which {next_desc} does not accept",
                                fmt_variant(v)
                            ),
                            Some((prev_span.clone(), format!("can emit {}", fmt_variant(v)))),
                        )
                    };
                    cur = self.admit(next, cur, ops[i - 1].clone(), &why);
                    cur = self.flow(next, &cur);
                }
                cur
            }
            HKind::Parallel { branches, .. } => {
                let types: Vec<Vec<Variant>> =
                    branches.iter().map(|b| self.input_type(*b)).collect();
                let mut routed: Vec<VSet> = vec![VSet::new(); branches.len()];
                for v in input {
                    let scores: Vec<Option<usize>> = types.iter().map(|t| score(v, t)).collect();
                    if let Some(best) = scores.iter().flatten().max().copied() {
                        for (i, s) in scores.iter().enumerate() {
                            if *s == Some(best) {
                                routed[i].insert(v.clone());
                            }
                        }
                    }
                }
                let mut out = VSet::new();
                for (i, set) in routed.into_iter().enumerate() {
                    let b = branches[i];
                    let desc = self.describe(b);
                    let why = |v: &Variant| {
                        (
                            format!(
                                "{desc} is the best match for {} but cannot accept it",
                                fmt_variant(v)
                            ),
                            None,
                        )
                    };
                    let set = self.admit(b, set, hir.node(b).span.clone(), &why);
                    out.extend(self.flow(b, &set));
                }
                out
            }
            HKind::Star { body, exits, .. } => self.flow_star(h, *body, exits, input),
            HKind::Feedback { body, back, .. } => self.flow_feedback(h, *body, back, input),
            HKind::Split { body, .. }
            | HKind::DynPlace { body, .. }
            | HKind::Place { body, .. } => self.flow(*body, input),
            HKind::Error => VSet::new(),
        };
        if self.outputs[h].len() < MAX_VARIANTS {
            self.outputs[h].extend(out.iter().cloned());
        }
        out
    }

    fn flow_net(&mut self, n: NetIdx, input: &VSet) -> VSet {
        let key = (n, input.iter().cloned().collect::<Vec<_>>());
        if let Some(out) = self.memo.get(&key) {
            return out.clone();
        }
        if self.quiet > 0 {
            if let Some(out) = self.quiet_memo.get(&key) {
                return out.clone();
            }
        }
        let net = &self.hir.nets[n];
        let out = match net.body {
            Some(b) => {
                if self.nesting >= MAX_NET_NESTING {
                    if !self.nesting_reported {
                        self.nesting_reported = true;
                        self.diags.push(
                            Diagnostic::error(
                                net.name_span.clone(),
                                "nets nested too deeply to check",
                            )
                            .with_label(format!(
                                "more than {MAX_NET_NESTING} levels of nets inside nets"
                            )),
                        );
                    }
                    return VSet::new();
                }
                let mut accepted = VSet::new();
                for v in input {
                    if self.accepts(b, v) {
                        accepted.insert(v.clone());
                    }
                }
                self.nesting += 1;
                let out = self.flow(b, &accepted);
                self.nesting -= 1;
                out
            }
            None => {
                // Declared only: the signature stands for the net, with flow inheritance.
                let mut out = VSet::new();
                for v in input {
                    for m in net.sig.iter().flatten() {
                        if let (Some(p), Some(outs)) =
                            (m.inputs.iter().find(|p| v.is_subtype_of(p)), &m.outputs)
                        {
                            let inherit = minus(v, p);
                            out.extend(outs.iter().map(|o| o.union(&inherit)));
                        }
                    }
                }
                out
            }
        };
        if self.quiet == 0 {
            self.memo.insert(key, out.clone());
        } else {
            self.quiet_memo.insert(key, out.clone());
        }
        out
    }

    fn flow_star(&mut self, h: HId, body: HId, exits: &[Pattern], input: &VSet) -> VSet {
        let op = self.hir.node(h).op.clone();
        let body_desc = self.describe(body);
        let mut seen = VSet::new();
        let mut entered = VSet::new();
        let mut out = VSet::new();
        let mut frontier = input.clone();
        let mut first = true;
        loop {
            let mut to_body = VSet::new();
            let mut guarded_only = VSet::new();
            for v in std::mem::take(&mut frontier) {
                if !seen.insert(v.clone()) {
                    continue;
                }
                let matched: Vec<usize> = (0..exits.len())
                    .filter(|&i| v.is_subtype_of(&exits[i].variant))
                    .collect();
                for &i in &matched {
                    self.hits.insert((h, i));
                }
                if matched.is_empty() {
                    to_body.insert(v);
                } else {
                    if matched.iter().all(|&i| exits[i].guard.is_some()) {
                        guarded_only.insert(v.clone());
                    }
                    out.insert(v);
                }
            }
            let from_outside = first;
            let why = |v: &Variant| {
                let msg = if from_outside {
                    format!("{} reaches this star, matches none of its exit patterns and {body_desc} cannot accept it", fmt_variant(v))
                } else {
                    format!("{body_desc} can emit {}, which matches no exit pattern, so it enters the next replica, which cannot accept it", fmt_variant(v))
                };
                (msg, None)
            };
            let mut admitted = self.admit(body, to_body, op.clone(), &why);
            // A variant only some guarded exit matches may go on too, if the body takes it.
            for v in guarded_only {
                if self.accepts(body, &v) {
                    admitted.insert(v);
                }
            }
            first = false;
            let before = entered.len();
            entered.extend(admitted);
            if entered.len() == before {
                break;
            }
            if entered.len() > MAX_VARIANTS {
                self.gave_up(op, "serial replication");
                break;
            }
            frontier = self.flow(body, &entered);
            frontier.retain(|v| !seen.contains(v));
            if frontier.is_empty() {
                break;
            }
        }
        out
    }

    fn flow_feedback(&mut self, h: HId, body: HId, back: &[Pattern], input: &VSet) -> VSet {
        let op = self.hir.node(h).op.clone();
        let body_desc = self.describe(body);
        let mut entered = input.clone();
        let mut out = VSet::new();
        loop {
            let produced = self.flow(body, &entered);
            let mut again = VSet::new();
            for o in produced {
                let matched: Vec<usize> = (0..back.len())
                    .filter(|&i| o.is_subtype_of(&back[i].variant))
                    .collect();
                for &i in &matched {
                    self.hits.insert((h, i));
                }
                if matched.is_empty() || matched.iter().all(|&i| back[i].guard.is_some()) {
                    out.insert(o.clone());
                }
                if !matched.is_empty() && !entered.contains(&o) {
                    again.insert(o);
                }
            }
            let why = |v: &Variant| {
                (
                    format!("{body_desc} can emit {}, which is fed back to it, but it does not accept it", fmt_variant(v)),
                    None,
                )
            };
            let again = self.admit(body, again, op.clone(), &why);
            if again.is_empty() {
                break;
            }
            entered.extend(again);
            if entered.len() > MAX_VARIANTS {
                self.gave_up(op, "feedback loop");
                break;
            }
        }
        out
    }

    fn gave_up(&mut self, at: Span, what: &str) {
        self.diags.push(
            Diagnostic::warning(
                at,
                format!("type inference of this {what} stopped after {MAX_VARIANTS} record types"),
            )
            .with_label(
                "the types reaching here keep growing; the check of what follows is incomplete",
            ),
        );
    }

    // ---- nets ----

    /// Nets in dependency order (a net after the nets its body uses), so that
    /// uses mostly find their callee's flow memoised.
    fn net_order(&self) -> Vec<NetIdx> {
        let n = self.hir.nets.len();
        let mut deps: Vec<Vec<NetIdx>> = vec![Vec::new(); n];
        for (i, net) in self.hir.nets.iter().enumerate() {
            let Some(b) = net.body else { continue };
            let mut uses = Vec::new();
            self.hir.net_uses(b, &mut uses);
            deps[i].extend(uses.into_iter().map(|(_, m)| m));
        }
        let mut order = Vec::with_capacity(n);
        let mut done = vec![false; n];
        for root in 0..n {
            if done[root] {
                continue;
            }
            done[root] = true;
            let mut stack = vec![(root, 0usize)];
            while let Some(&mut (net, ref mut next)) = stack.last_mut() {
                if let Some(&d) = deps[net].get(*next) {
                    *next += 1;
                    if !done[d] {
                        done[d] = true;
                        stack.push((d, 0));
                    }
                } else {
                    order.push(net);
                    stack.pop();
                }
            }
        }
        order
    }

    /// Checks net `n` on its own input type; returns its inferred signature.
    fn check_net(&mut self, n: NetIdx) -> (Vec<Variant>, Vec<Variant>) {
        let hir = self.hir;
        let net = &hir.nets[n];
        let input = self.net_input(n);
        let Some(body) = net.body else {
            let outs = net
                .sig
                .iter()
                .flatten()
                .flat_map(|m| m.outputs.iter().flatten().cloned())
                .collect::<VSet>();
            return (input, outs.into_iter().collect());
        };
        let name = &net.name;
        if let Some(sig) = &net.sig {
            // The declared inputs must be accepted by the body.
            let sig_span = net.sig_span.clone().unwrap_or(net.name_span.clone());
            let body_desc = self.describe(body);
            let why = |v: &Variant| {
                (
                    format!(
                        "net `{name}` declares input {}, which its body does not accept",
                        fmt_variant(v)
                    ),
                    Some((sig_span.clone(), "declared here".to_string())),
                )
            };
            let _ = body_desc;
            let declared: VSet = input.iter().cloned().collect();
            self.admit(body, declared, net.name_span.clone(), &why);
            // Each mapping's outputs must be covered by its declaration.
            let several = sig.len() > 1;
            let mut all_outs: Vec<Variant> = Vec::new();
            let mut any_open = false;
            for m in sig {
                let Some(outs) = &m.outputs else {
                    any_open = true;
                    continue;
                };
                all_outs.extend(outs.iter().cloned());
                let inferred = self.flow_net(n, &m.inputs.iter().cloned().collect());
                self.check_declared_outputs(n, &inferred, outs, m.span.clone());
            }
            if several && !any_open {
                let inferred = self.flow_net(n, &input.iter().cloned().collect());
                self.check_declared_outputs(n, &inferred, &all_outs, sig_span);
            }
        }
        let out = match &net.sig {
            // A declared signature is the net's type; `...` stands for what is inferred.
            Some(sig) => {
                let mut out = VSet::new();
                for m in sig {
                    match &m.outputs {
                        Some(o) => out.extend(o.iter().cloned()),
                        None => out.extend(self.flow_net(n, &m.inputs.iter().cloned().collect())),
                    }
                }
                out
            }
            // The entry net is checked on its inferred input. Any other net
            // without a signature is typed where it is used: flow inheritance
            // at a use site may bring labels (a split tag, say) that its own
            // minimal input lacks, so its stand-alone flow only infers a
            // signature and reports nothing.
            None if hir.entry == Some(n) => self.flow_net(n, &input.iter().cloned().collect()),
            None => {
                let mark = self.diags.mark();
                self.quiet += 1;
                let out = self.flow_net(n, &input.iter().cloned().collect());
                self.quiet -= 1;
                self.diags.rollback(mark);
                out
            }
        };
        (input, out.into_iter().collect())
    }

    fn check_declared_outputs(
        &mut self,
        n: NetIdx,
        inferred: &VSet,
        declared: &[Variant],
        decl: Span,
    ) {
        let net = &self.hir.nets[n];
        for o in inferred {
            if !declared.iter().any(|d| o.is_subtype_of(d)) {
                let mut d = Diagnostic::error(
                    net.name_span.clone(),
                    format!(
                        "net `{}` can emit {}, which its signature does not declare",
                        net.name,
                        fmt_variant(o)
                    ),
                )
                .with_label(format!("emits {}", fmt_variant(o)))
                .with_secondary(
                    decl.clone(),
                    format!("declared output: {}", fmt_type(declared)),
                );
                if let Some(b) = net.body {
                    d = d.with_secondary(
                        self.hir.node(b).span.clone(),
                        "inferred from this expression",
                    );
                }
                self.diags.push(d);
            }
        }
    }

    // ---- warnings ----

    fn warnings(&mut self) {
        let hir = self.hir;
        for (h, node) in hir.nodes.iter().enumerate() {
            if !self.reached[h] {
                continue;
            }
            match &node.kind {
                HKind::Parallel { branches, .. } => {
                    for &b in branches {
                        if !self.reached[b] {
                            let t = self.input_type(b);
                            self.diags.push(
                                Diagnostic::warning(
                                    hir.node(b).span.clone(),
                                    format!("{} can never receive a record", self.describe(b)),
                                )
                                .with_label(format!("this branch accepts {}", fmt_type(&t)))
                                .with_secondary(
                                    node.op.clone(),
                                    "every record reaching this parallel composition is routed to another branch",
                                )
                                .with_note("records go to the branch whose input type they match best"),
                            );
                        }
                    }
                }
                HKind::Star { exits, spans, .. } => {
                    self.pattern_warnings(h, exits, spans, "the star's exit pattern")
                }
                HKind::Feedback { back, spans, .. } => {
                    self.pattern_warnings(h, back, spans, "the feedback pattern")
                }
                HKind::Sync { def, spans } => {
                    self.pattern_warnings(h, &def.patterns, spans, "the synchrocell pattern")
                }
                _ => {}
            }
        }
    }

    fn pattern_warnings(&mut self, h: HId, pats: &[Pattern], spans: &[Span], what: &str) {
        for (i, p) in pats.iter().enumerate() {
            if !self.hits.contains(&(h, i)) {
                let consequence = if what.contains("synchrocell") {
                    " (the cell never fires)"
                } else {
                    ""
                };
                self.diags.push(
                    Diagnostic::warning(
                        spans[i].clone(),
                        format!(
                            "{what} {} can never match{consequence}",
                            fmt_variant(&p.variant)
                        ),
                    )
                    .with_label("no record reaching here has this type"),
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::compile;

    /// The entry net's inferred signature, or the first error message.
    fn sig(src: &str) -> String {
        let c = compile("t.snet", src, None);
        if let Some(e) = c.diagnostics.iter().find(|d| d.is_error()) {
            return format!("error: {}", e.message);
        }
        let n = c.nets.iter().find(|n| n.entry).expect("entry");
        n.display()
    }

    fn warnings(src: &str) -> Vec<String> {
        compile("t.snet", src, None)
            .diagnostics
            .into_iter()
            .filter(|d| !d.is_error())
            .map(|d| d.message)
            .collect()
    }

    #[test]
    fn flow_inheritance_through_boxes_and_filters() {
        assert_eq!(
            sig("box f((a) -> (b) | (c)); net n connect [{a, x} -> {a}; {a, <t=1>}] .. f;"),
            "{a, x} -> {b, <t>} | {b} | {c, <t>} | {c}"
        );
        // The emitted label wins over the inherited one of the same name.
        assert_eq!(
            sig("box f((a) -> (a, b)); net n connect [{a, b} -> {a, b}] .. f;"),
            "{a, b} -> {a, b}"
        );
    }

    #[test]
    fn binding_tags_block_subtyping() {
        assert!(
            sig("box f((a, <#k>) -> (b, <#k>)); box g((b) -> (c)); net n connect f .. g;")
                .starts_with("error:")
        );
        assert_eq!(
            sig("box f((a, <#k>) -> (b, <#k>)); box g((b, <#k>) -> (c)); net n connect f .. g;"),
            "{a, <#k>} -> {c}"
        );
    }

    #[test]
    fn synchrocell_merges_with_the_first_patterns_record() {
        assert_eq!(
            sig("net n connect [{a} -> {a, <t=1>}; {b=a}] .. [| {a}, {b} |];"),
            "{a} -> {a, <t>} | {a, b, <t>} | {b}"
        );
        assert_eq!(
            warnings("net n connect [{a} -> {a}] .. [| {a}, {b} |];").len(),
            1
        );
    }

    #[test]
    fn star_and_feedback_reach_fixpoints() {
        assert_eq!(
            sig("box f((a) -> (a, <t>) | (b)); net n connect f * {b};"),
            "{a} -> {b, <t>} | {b}"
        );
        assert_eq!(
            sig("box f((a) -> (a, <n>) | (b)); net n connect f \\ {a, <n>};"),
            "{a} -> {b, <n>} | {b}"
        );
        // An ever-growing type is cut off with a warning, not a hang.
        let w = warnings("net n connect [{a} -> {a, <x>}] * {never};");
        assert!(w.iter().any(|m| m.contains("can never match")), "{w:?}");
    }

    #[test]
    fn declared_signatures_are_checked_and_used() {
        assert!(sig("box f((a) -> (b)); net n ({a} -> {c}) connect f;")
            .starts_with("error: net `n` can emit {b}"));
        assert_eq!(
            sig("box f((a) -> (b) | (c)); net m ({a} -> ...) connect f; net n connect m;"),
            "{a} -> {b} | {c}"
        );
        assert_eq!(
            sig("box f((a) -> (b)); net n ({a} -> {b}, {x} -> ...) connect f | [{x} -> {y=x}];"),
            "{a} | {x} -> {b} | {y}"
        );
    }

    #[test]
    fn long_chains_of_nets_do_not_overflow() {
        let mut src = String::from("net n0 connect [{a} -> {a}];\n");
        for i in 1..3000 {
            src.push_str(&format!(
                "net n{i} connect n{} .. [{{a}} -> {{a}}];\n",
                i - 1
            ));
        }
        assert_eq!(sig(&src), "{a} -> {a}");
    }
}
