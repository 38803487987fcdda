//! Type inference and checking.
//!
//! Types are sets of variants, a variant a set of labels; `v ⊑ p` (v
//! matches p) means v ⊇ p with exactly the same binding tags
//! ([`Variant::is_subtype_of`]). The checker pushes *sets of variants*
//! through the network ("which record types can reach this point"), so flow
//! inheritance is exact for the context each component is used in.
//!
//! Every construct has an **input type** (what a record must carry to get
//! through it; the lowering stores it in [`snet_core::Node::input`] for
//! best-match routing) and a **flow** (incoming set -> outgoing set). Input
//! types include *inherited requirements* (language.md §1; the rules in
//! prose are in `docs/typing.md`): labels that a later component needs and
//! can only receive by flowing around the earlier ones. They are computed
//! bottom-up and are context-free, so cached per node. `extend` finds, for
//! an input variant `a` of a component, the smallest `a ∪ X` whose every
//! output fits what follows, `X` made only of labels that can flow (not
//! consumed by the component, no binding tags the component's pattern
//! lacks), each candidate verified by a speculative flow (`probe`).
//!
//! | construct | input type | flow of an incoming variant `v` |
//! |---|---|---|
//! | box `(P) -> (O1) | ...` | `P` | `Oi ∪ (v \ P)` for each i (flow inheritance) |
//! | initialiser box `(-> (O))` | `{}` | `O`, and `O ∪ v` |
//! | filter `[P -> ...]` | `P` | per outspec: its labels `∪ (v \ P)`; all arms |
//! | `[]` | `{}` (accepts anything) | `v` |
//! | synchrocell `[| p1..pn |]` | `p1 .. pn` (never rejects) | `v` (passed on); plus `p1 ∪ .. ∪ pn ∪ r` for each incoming `r ⊑ p1` once every pattern is matched by some incoming variant |
//! | `A .. B` | A's, extended so that A's outputs fit B's | B(A(S)); each variant A emits that B does not accept is an error at the `..` naming both |
//! | `A | B` | union of the branches' | each v goes to the eligible branch(es) with the best score (largest matched input variant; ties go to all tied) |
//! | `A * pats` | A's, extended until A's outputs fit an exit or A's (fixpoint); never extended into an unguarded exit | fixpoint: v matching an exit leaves (if guarded, it may also go on); the others must be accepted by A (from outside: an error; re-entering: a warning if anything leaves) and go round |
//! | `A \ pats` | A's, extended until A's fed-back outputs fit A's (fixpoint) | fixpoint: A's outputs matching a pattern go back (must be accepted by A: a warning if anything leaves, else an error; if guarded, may also leave), the others leave |
//! | `A ! <t>`, `A !@ <t>` | A's, each plus `<t>` | A(S); every v must carry `<t>` |
//! | `A @ n` | A's | A(S) |
//! | net with signature | declared inputs, extended by what the body needs beyond them (a warning), never by a binding tag | the body's flow for the actual S (the declaration is checked separately) |
//! | net without | its body's | its body's |
//!
//! No extension makes a record match an unguarded exit of a star it meets
//! first, or adds a label of a synchrocell's patterns it meets first
//! ([`Checker::head`]).
//!
//! An extension that only some outputs need (the others fit already) makes
//! the program work only for records that carry the extra labels: a warning
//! at the `..` (or `*`, `\`). When no extension works, the input type stays
//! unextended and the forward flow reports the error, with a note when the
//! missing label was consumed upstream or is a binding tag.
//!
//! Fixpoints are bounded ([`MAX_VARIANTS`]); when the bound is hit the
//! checker says so in a warning and stops exploring.
//!
//! Errors: a variant some component cannot accept (serial composition,
//! parallel with no eligible branch, a record entering a star from outside,
//! split tag missing), a declared net input the body rejects. Errors only
//! when no input can make the program work, warnings naming the failing
//! variant otherwise ([`Checker::report_reentry`],
//! [`Checker::check_declared_outputs`]): star or feedback re-entry (an
//! error only if nothing ever leaves the loop), body outputs the
//! declaration does not cover (unless `...`; an error only if none is
//! covered), and any error that only a synchrocell's unmerged leftovers
//! cause (see [`check`]: a second, "firm" pass in which a cell that can
//! fire passes on no record matching its patterns does not have it).
//! Warnings (likely mistakes, the program still runs): a parallel
//! branch no reaching variant is routed to, a star exit or feedback pattern
//! nothing ever matches, a synchrocell pattern no reaching variant matches
//! (the cell never fires). Warnings are only given for constructs that
//! something reaches at all, and a "can never" warning only if no input
//! record carrying the labels in question makes it happen
//! ([`Checker::witnessed`]).

use std::collections::{BTreeSet, HashMap, HashSet};

use snet_core::{Label, Pattern, Variant};

use crate::diag::{Diagnostic, Diagnostics, Span};
use crate::hir::*;

type VSet = BTreeSet<Variant>;

/// Explains a rejected variant: the headline and an optional secondary label.
type Why<'a> = &'a dyn Fn(&Variant) -> (String, Option<(Span, String)>);

/// Bound on the variants a star or feedback fixpoint explores.
pub const MAX_VARIANTS: usize = 512;
/// Bound on the rounds of a star or feedback requirement fixpoint.
const FIXPOINT_ROUNDS: usize = 16;
/// Bound on the candidate extensions tried for one input variant.
const MAX_EXTENSIONS: usize = 256;
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
    /// Per serial chain node: the input type of each suffix `parts[k..]`
    /// (the lowering splits chains into binary nodes).
    pub suffixes: HashMap<HId, Vec<Vec<Variant>>>,
}

pub fn check(hir: &Hir, src: &str, diags: &mut Diagnostics) -> Checked {
    let mark = diags.mark();
    let checked = check_pass(hir, src, diags, None);
    if diags.error_count_since(mark) > 0 {
        // A synchrocell passes on a record matching one of its patterns only
        // when that pattern's slot is already filled (or the cell has fired):
        // with one record per pattern, only the merged record leaves it. An
        // error that the "firm" flow (no such leftovers) does not have is
        // one that inputs with one record per pattern avoid: a warning.
        let mut firm = Diagnostics::default();
        check_pass(hir, src, &mut firm, Some(&checked.inputs));
        let firm: HashSet<(Option<Span>, String)> = firm
            .iter()
            .filter(|d| d.is_error())
            .map(|d| (d.span.clone(), d.message.clone()))
            .collect();
        diags.downgrade_since(
            mark,
            |d| !firm.contains(&(d.span.clone(), d.message.clone())),
            "this happens only to a record that reaches a synchrocell whose slot for it is already filled (or that has fired), which passes it on unmerged; the program works for inputs that bring one record per synchrocell pattern, and a record that takes this path stops the run with a runtime type error",
        );
    }
    checked
}

/// One pass of the checker over the whole program. With `firm` (the input
/// types of the first pass), synchrocells that can fire pass on no record
/// matching one of their patterns: only the merged record leaves them.
fn check_pass(
    hir: &Hir,
    src: &str,
    diags: &mut Diagnostics,
    firm: Option<&Vec<Vec<Variant>>>,
) -> Checked {
    let n = hir.nodes.len();
    let mut c = Checker {
        hir,
        src,
        diags,
        input_cache: match firm {
            Some(inputs) => inputs.iter().cloned().map(Some).collect(),
            None => vec![None; n],
        },
        firm: firm.is_some(),
        net_input_cache: vec![None; hir.nets.len()],
        suffix: HashMap::new(),
        probes: HashMap::new(),
        probing: 0,
        partial: BTreeSet::new(),
        outputs: vec![VSet::new(); n],
        reached: vec![false; n],
        hits: HashSet::new(),
        memo: HashMap::new(),
        nesting: 0,
        nesting_reported: false,
        quiet: 0,
        quiet_memo: HashMap::new(),
        witness: false,
    };
    let mut nets = vec![(Vec::new(), Vec::new()); hir.nets.len()];
    for idx in c.net_order() {
        nets[idx] = c.check_net(idx);
    }
    c.warnings();
    let inputs = (0..n).map(|h| c.input_type(h)).collect();
    let outputs = std::mem::take(&mut c.outputs)
        .into_iter()
        .map(|s| s.into_iter().collect())
        .collect();
    Checked {
        inputs,
        outputs,
        nets,
        suffixes: c.suffix,
    }
}

struct Checker<'h, 'd> {
    hir: &'h Hir,
    src: &'h str,
    diags: &'d mut Diagnostics,
    input_cache: Vec<Option<Vec<Variant>>>,
    net_input_cache: Vec<Option<Vec<Variant>>>,
    /// Per serial chain: the input type of each suffix of the chain.
    suffix: HashMap<HId, Vec<Vec<Variant>>>,
    /// Memoised speculative flows of one variant through one node.
    probes: HashMap<(HId, Variant), VSet>,
    /// Inside [`Checker::probe`]: nothing is marked reached or hit.
    probing: usize,
    /// Inherited requirements that only some outputs need, per node whose
    /// being reached makes them a warning (see [`Checker::extend_all`]).
    partial: BTreeSet<(HId, usize, usize, String)>,
    outputs: Vec<VSet>,
    reached: Vec<bool>,
    /// (node, pattern index) pairs that matched some variant.
    hits: HashSet<(HId, usize)>,
    memo: HashMap<(NetIdx, Vec<Variant>), VSet>,
    /// Inside a speculative flow whose diagnostics are discarded: results go
    /// to `quiet_memo` only (a later real use must report its errors).
    quiet: usize,
    quiet_memo: HashMap<(NetIdx, Vec<Variant>), VSet>,
    /// Inside [`Checker::witnessed`]: a parallel routes a record to the
    /// first best-matching branch only, as the engine does, and the memo of
    /// the real flows (which routes ties to every tied branch) is not read.
    witness: bool,
    nesting: usize,
    nesting_reported: bool,
    /// The firm pass (see [`check`]): no synchrocell that can fire passes on
    /// a record matching one of its patterns.
    firm: bool,
}

fn minus(v: &Variant, p: &Variant) -> Variant {
    Variant::new(v.labels().iter().copied().filter(|l| !p.contains(*l)))
}

fn with_label(v: &Variant, l: Label) -> Variant {
    Variant::new(v.labels().iter().copied().chain(std::iter::once(l)))
}

/// What an extension must achieve: every output `constrained` selects must
/// match one of `targets`; extended inputs must not match `avoid` (checked
/// by [`Checker::extend_all`] together with what [`Checker::head`] finds).
struct Rule<'r> {
    targets: &'r [Variant],
    constrained: &'r dyn Fn(&Variant) -> bool,
    avoid: &'r [Variant],
}

/// The result of [`Checker::extend`]: the extended input variants, and, if
/// the extension was needed only by some outputs, one of those outputs and
/// the labels each extension adds.
struct Extension {
    types: Vec<Variant>,
    partial: Option<(Variant, Vec<Variant>)>,
}

/// Same binding tags.
fn same_btags(a: &Variant, b: &Variant) -> bool {
    a.btags().eq(b.btags())
}

/// Drops every variant that has a proper subset (with the same binding tags) in the set.
fn minimal(set: VSet) -> Vec<Variant> {
    let all: Vec<Variant> = set.into_iter().collect();
    all.iter()
        .filter(|v| {
            !all.iter()
                .any(|w| w != *v && same_btags(v, w) && v.is_subtype_of(w))
        })
        .cloned()
        .collect()
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

    /// The input type of `h` with its inherited requirements (see the module
    /// header): what a record must carry to get through `h` *and* whatever
    /// follows `h` inside the same construct. Context-free, so cached per node.
    fn input_type(&mut self, h: HId) -> Vec<Variant> {
        if let Some(t) = &self.input_cache[h] {
            return t.clone();
        }
        let all = |_: &Variant| true;
        let t = match &self.hir.node(h).kind {
            HKind::Box(b) => {
                let b = &self.hir.boxes[*b];
                vec![Variant::new(b.inputs.iter().copied())]
            }
            HKind::Net(n) => self.net_input(*n),
            HKind::Filter { def, .. } => vec![def.pattern.clone()],
            HKind::Synchrocell { def, .. } => {
                def.patterns.iter().map(|p| p.variant.clone()).collect()
            }
            HKind::Serial(parts, ops) => {
                let (parts, ops) = (parts.clone(), ops.clone());
                let suffix = self.serial_suffix(&parts, &ops);
                let t = suffix[0].clone();
                self.suffix.insert(h, suffix);
                t
            }
            HKind::Parallel { branches, .. } => {
                let branches = branches.clone();
                let all: VSet = branches.iter().flat_map(|b| self.input_type(*b)).collect();
                all.into_iter().collect()
            }
            HKind::Star { body, exits, .. } => {
                let (body, exits) = (*body, exits.clone());
                // A record that matches no exit enters the body; what the body
                // emits either leaves through an exit or enters the next
                // replica. An extension that would make the record leave
                // before the body (an unguarded exit) is no extension.
                let exit_types: Vec<Variant> = exits.iter().map(|p| p.variant.clone()).collect();
                let leaves: Vec<Variant> = exits
                    .iter()
                    .filter(|p| p.guard.is_none())
                    .map(|p| p.variant.clone())
                    .collect();
                let mut entry = self.input_type(body);
                for _ in 0..FIXPOINT_ROUNDS {
                    let mut targets = exit_types.clone();
                    targets.extend(entry.iter().cloned());
                    let rule = Rule {
                        targets: &targets,
                        constrained: &all,
                        avoid: &leaves,
                    };
                    let at = (h, self.hir.node(h).op.clone());
                    let next = self.extend_all(body, &entry, &rule, at, "the next replica accepts");
                    if next == entry {
                        break;
                    }
                    entry = next;
                }
                entry
            }
            HKind::Feedback { body, back, .. } => {
                let (body, back) = (*body, back.clone());
                // Only what goes round must satisfy the body again.
                let fed_back = |o: &Variant| back.iter().any(|p| o.is_subtype_of(&p.variant));
                let mut entry = self.input_type(body);
                for _ in 0..FIXPOINT_ROUNDS {
                    let targets = entry.clone();
                    let rule = Rule {
                        targets: &targets,
                        constrained: &fed_back,
                        avoid: &[],
                    };
                    let at = (h, self.hir.node(h).op.clone());
                    let next =
                        self.extend_all(body, &entry, &rule, at, "the body accepts when fed back");
                    if next == entry {
                        break;
                    }
                    entry = next;
                }
                entry
            }
            HKind::Place { body, .. } => self.input_type(*body),
            HKind::Split { body, tag, .. } | HKind::DynPlace { body, tag, .. } => {
                let tag = *tag;
                let t: VSet = self
                    .input_type(*body)
                    .iter()
                    .map(|v| with_label(v, tag))
                    .collect();
                t.into_iter().collect()
            }
            HKind::Error => vec![Variant::empty()],
        };
        self.input_cache[h] = Some(t.clone());
        t
    }

    /// Requirements of every suffix `parts[k..]` of a serial chain, right to
    /// left: `parts[k]`'s input type, extended by what `parts[k + 1..]` needs
    /// and can only receive by flowing through `parts[k]`.
    fn serial_suffix(&mut self, parts: &[HId], ops: &[Span]) -> Vec<Vec<Variant>> {
        let all = |_: &Variant| true;
        let mut suffix = vec![Vec::new(); parts.len()];
        let last = parts.len() - 1;
        suffix[last] = self.input_type(parts[last]);
        for k in (0..last).rev() {
            let own = self.input_type(parts[k]);
            let next = suffix[k + 1].clone();
            let rule = Rule {
                targets: &next,
                constrained: &all,
                avoid: &[],
            };
            let what = format!("{} accepts", self.describe(parts[k + 1]));
            let at = (parts[k], ops[k].clone());
            suffix[k] = self.extend_all(parts[k], &own, &rule, at, &what);
        }
        suffix
    }

    /// [`Self::extend`] for every variant of `from` through `h`, as one type.
    /// An extension needed only by some of what `h` emits is remembered as a
    /// warning (given if `at` is reached), with `what` completing the sentence
    /// "`h` can emit {..}, which ... only if it inherits {..}".
    fn extend_all(
        &mut self,
        h: HId,
        from: &[Variant],
        rule: &Rule<'_>,
        at: (HId, Span),
        what: &str,
    ) -> Vec<Variant> {
        // What the record meets first, plus the caller's own exits (a star's).
        let (mut leaves, forbidden) = self.head(h);
        leaves.extend(rule.avoid.iter().cloned());
        let mut out = VSet::new();
        for a in from {
            let ext = self.extend(a, rule, &mut |c, v| {
                let ok = c.accepts(h, v)
                    && !forbidden.iter().any(|l| v.contains(*l) && !a.contains(*l))
                    && (v == a || !leaves.iter().any(|p| v.is_subtype_of(p)));
                ok.then(|| c.probe(h, v))
            });
            if let Some((o, needs)) = ext.partial {
                let needs: Vec<String> = needs.iter().map(fmt_variant).collect();
                let msg = format!(
                    "{} can emit {}, which {what} only if it inherits {}",
                    self.describe(h),
                    fmt_variant(&o),
                    needs.join(" or ")
                );
                self.partial.insert((at.0, at.1.start, at.1.end, msg));
            }
            out.extend(ext.types);
        }
        out.into_iter().collect()
    }

    /// What a record entering `h` meets first, whatever labels it carries
    /// (through serial heads, nets, placements, splits, feedback and star
    /// bodies): the unguarded exit patterns of stars, and the labels of a
    /// synchrocell's patterns. An extension that makes a record match such an
    /// exit makes it leave before anything runs, and a synchrocell stores a
    /// record by the first empty slot whose pattern it matches, so its
    /// pattern labels are what *other* records bring: neither is ever
    /// supplied by extension.
    fn head(&self, h: HId) -> (Vec<Variant>, Vec<Label>) {
        let mut leaves = Vec::new();
        let mut h = h;
        loop {
            match &self.hir.node(h).kind {
                HKind::Star { body, exits, .. } => {
                    let unguarded = exits.iter().filter(|p| p.guard.is_none());
                    leaves.extend(unguarded.map(|p| p.variant.clone()));
                    h = *body;
                }
                HKind::Serial(parts, _) => h = parts[0],
                HKind::Feedback { body, .. }
                | HKind::Place { body, .. }
                | HKind::Split { body, .. }
                | HKind::DynPlace { body, .. } => h = *body,
                HKind::Net(n) => match self.hir.nets[*n].body {
                    Some(b) => h = b,
                    None => return (leaves, Vec::new()),
                },
                HKind::Synchrocell { def, .. } => {
                    let labels = def.patterns.iter();
                    let labels = labels.flat_map(|p| p.variant.labels().iter().copied());
                    return (leaves, labels.collect());
                }
                _ => return (leaves, Vec::new()),
            }
        }
    }

    /// The smallest extensions `a ∪ X` of an input variant `a` such that
    /// every variant that `flow` produces from `a ∪ X` and `rule` constrains
    /// matches one of its targets, where `X` holds only labels that can reach
    /// the targets by flow inheritance (labels that `a` already carries but
    /// the output lacks were consumed on the way, so adding them again cannot
    /// help; an output binding tag a target lacks can never be removed). A
    /// breadth-first search over the choices of target, each candidate
    /// verified by flowing it again (more labels may change routing inside).
    /// If no extension works, `a` itself is returned: the program is wrong
    /// whatever the input carries, and the forward check reports where.
    fn extend(
        &mut self,
        a: &Variant,
        rule: &Rule<'_>,
        flow: &mut dyn FnMut(&mut Self, &Variant) -> Option<VSet>,
    ) -> Extension {
        let fits =
            |o: &Variant| !(rule.constrained)(o) || rule.targets.iter().any(|t| o.is_subtype_of(t));
        let mut found = VSet::new();
        let mut queue = std::collections::VecDeque::from([a.clone()]);
        let mut seen = HashSet::new();
        let mut partial = None;
        while let Some(c) = queue.pop_front() {
            if seen.len() >= MAX_EXTENSIONS || !seen.insert(c.clone()) {
                continue;
            }
            // A superset of a working candidate is never minimal.
            if found
                .iter()
                .any(|f| same_btags(f, &c) && c.is_subtype_of(f))
            {
                continue;
            }
            // More labels must not make the component reject the record
            // (a binding tag its pattern lacks, say).
            let Some(outs) = flow(self, &c) else {
                continue;
            };
            let Some(o) = outs.iter().find(|o| !fits(o)) else {
                found.insert(c);
                continue;
            };
            if c == *a && outs.iter().any(|o| (rule.constrained)(o) && fits(o)) {
                // Some of what `a` produces already fits: the extension
                // rescues the rest only for records that happen to carry it.
                partial = Some(o.clone());
            }
            for t in rule.targets {
                if o.btags().any(|b| !t.contains(b)) {
                    continue;
                }
                let missing = minus(t, o);
                if missing.is_empty() || missing.labels().iter().any(|l| c.contains(*l)) {
                    continue;
                }
                queue.push_back(c.union(&missing));
            }
        }
        if found.is_empty() {
            return Extension {
                types: vec![a.clone()],
                partial: None,
            };
        }
        let types = minimal(found);
        let partial = partial
            .filter(|_| !types.contains(a))
            .map(|o| (o, types.iter().map(|t| minus(t, a)).collect()));
        Extension { types, partial }
    }

    /// The flow of one variant through `h`, without reporting anything or
    /// marking anything as reached (a speculative question of the inference).
    fn probe(&mut self, h: HId, v: &Variant) -> VSet {
        let key = (h, v.clone());
        if let Some(out) = self.probes.get(&key) {
            return out.clone();
        }
        let mark = self.diags.mark();
        self.probing += 1;
        self.quiet += 1;
        // Probes are cached for the inference: they route as the checker
        // does, also when asked for inside a witness flow.
        let witness = std::mem::replace(&mut self.witness, false);
        let out = self.flow(h, &VSet::from([v.clone()]));
        self.witness = witness;
        self.quiet -= 1;
        self.probing -= 1;
        self.diags.rollback(mark);
        self.probes.insert(key, out.clone());
        out
    }

    /// Declared input variants, each extended by what the body `b` needs
    /// beyond it (a declared input reaches the body unchanged).
    fn extend_declared(&mut self, b: HId, declared: &[Variant]) -> VSet {
        let body = self.input_type(b);
        let all = |_: &Variant| true;
        let rule = Rule {
            targets: &body,
            constrained: &all,
            avoid: &[],
        };
        let mut out = VSet::new();
        for v in declared {
            // A binding tag the declaration lacks is no extension: a record
            // carrying it is not of the declared type.
            let flow =
                &mut |_: &mut Self, c: &Variant| same_btags(c, v).then(|| VSet::from([c.clone()]));
            out.extend(self.extend(v, &rule, flow).types);
        }
        out
    }

    /// A net's input type: its body's, or its declared inputs, each extended
    /// by what the body needs beyond the declaration (a warning says so).
    fn net_input(&mut self, n: NetIdx) -> Vec<Variant> {
        if let Some(t) = &self.net_input_cache[n] {
            return t.clone();
        }
        let net = &self.hir.nets[n];
        let t = match (net.declared_inputs(), net.body) {
            (Some(d), Some(b)) => self.extend_declared(b, &d).into_iter().collect(),
            (Some(d), None) => d,
            (None, Some(b)) => self.input_type(b),
            (None, None) => Vec::new(),
        };
        self.net_input_cache[n] = Some(t.clone());
        t
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
            HKind::Synchrocell { .. } | HKind::Error => true,
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

    /// Why flow inheritance cannot supply what `target` misses in `v`, which
    /// `upstream` emitted: the labels were consumed by `upstream`.
    fn consumed_note(&mut self, upstream: HId, target: HId, v: &Variant) -> Option<String> {
        let from = self.input_type(upstream);
        let wanted = self.input_type(target);
        let consumed: BTreeSet<Label> = wanted
            .iter()
            .filter(|t| v.btags().all(|b| t.contains(b)))
            .flat_map(|t| minus(t, v).labels().to_vec())
            .filter(|l| from.iter().all(|f| f.contains(*l)))
            .collect();
        let missing_btags: BTreeSet<Label> = wanted
            .iter()
            .filter(|t| v.btags().all(|b| t.contains(b)))
            .flat_map(|t| minus(t, v).btags().collect::<Vec<_>>())
            .filter(|l| !consumed.contains(l))
            .collect();
        if !missing_btags.is_empty() {
            let names: Vec<String> = missing_btags.iter().map(|l| l.to_string()).collect();
            return Some(format!(
                "binding tags cannot reach {} by flow inheritance: a record carrying {} would not match {}'s input type",
                self.describe(target),
                names.join(", "),
                self.describe(upstream),
            ));
        }
        if consumed.is_empty() {
            return None;
        }
        let names: Vec<String> = consumed.iter().map(|l| l.to_string()).collect();
        Some(format!(
            "{} cannot reach {} by flow inheritance: {} names {} in its input and does not emit {}",
            names.join(", "),
            self.describe(target),
            self.describe(upstream),
            if names.len() == 1 { "it" } else { "them" },
            if names.len() == 1 { "it" } else { "them" },
        ))
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
                        HKind::Synchrocell { .. } => "synchrocell",
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
    /// `upstream`, if given, emitted the variants: a label the target needs
    /// that every input of `upstream` names was consumed there, which a note says.
    fn admit(
        &mut self,
        target: HId,
        set: VSet,
        at: Span,
        why: Why<'_>,
        upstream: Option<HId>,
    ) -> VSet {
        let (kept, rejected) = self.admit_deferred(target, set, at, why, upstream);
        for d in rejected {
            self.diags.push(d);
        }
        kept
    }

    /// [`Self::admit`], returning the errors instead of reporting them (a
    /// loop decides at the end whether its re-entry failures are errors).
    fn admit_deferred(
        &mut self,
        target: HId,
        set: VSet,
        at: Span,
        why: Why<'_>,
        upstream: Option<HId>,
    ) -> (VSet, Vec<Diagnostic>) {
        let mut kept = VSet::new();
        let mut rejected = Vec::new();
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
            if let Some(note) = upstream.and_then(|u| self.consumed_note(u, target, &v)) {
                d = d.with_note(note);
            }
            rejected.push(d);
        }
        (kept, rejected)
    }

    /// Reports the re-entry failures of a loop (star or feedback): errors if
    /// nothing ever leaves the loop (no input can make it work), otherwise
    /// warnings naming the variants that fail, since records for which the
    /// body emits only what leaves (or what it accepts again) come out.
    fn report_reentry(&mut self, rejected: Vec<Diagnostic>, out: &VSet, what: &str) {
        for mut d in rejected {
            if !out.is_empty() {
                d.severity = crate::diag::Severity::Warning;
                let leaving: Vec<Variant> = out.iter().take(4).cloned().collect();
                d = d.with_note(format!(
                    "the {what} works for records whose path leaves it (as {}{}); a record that takes this path stops the run with a runtime type error",
                    fmt_type(&leaving),
                    if out.len() > 4 { " | ..." } else { "" }
                ));
            } else {
                d = d.with_note(format!(
                    "no record ever leaves this {what}, so no input can make it work"
                ));
            }
            self.diags.push(d);
        }
    }

    // ---- flow ----

    /// Pattern `i` of node `h` matched some variant (for warnings).
    fn hit(&mut self, h: HId, i: usize) {
        if self.probing == 0 {
            self.hits.insert((h, i));
        }
    }

    fn flow(&mut self, h: HId, input: &VSet) -> VSet {
        if input.is_empty() {
            return VSet::new();
        }
        if self.probing == 0 {
            self.reached[h] = true;
        }
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
            HKind::Synchrocell { def, .. } => {
                let mut all = true;
                for (i, p) in def.patterns.iter().enumerate() {
                    if input.iter().any(|v| v.is_subtype_of(&p.variant)) {
                        self.hit(h, i);
                    } else {
                        all = false;
                    }
                }
                let stored = |v: &Variant| def.patterns.iter().any(|p| v.is_subtype_of(&p.variant));
                let mut out: VSet = input
                    .iter()
                    .filter(|v| !(self.firm && all && stored(v)))
                    .cloned()
                    .collect();
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
                    cur = self.admit(next, cur, ops[i - 1].clone(), &why, Some(prev));
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
                                if self.witness {
                                    break;
                                }
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
                    let set = self.admit(b, set, hir.node(b).span.clone(), &why, None);
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
        if self.probing == 0 && self.outputs[h].len() < MAX_VARIANTS {
            self.outputs[h].extend(out.iter().cloned());
        }
        out
    }

    fn flow_net(&mut self, n: NetIdx, input: &VSet) -> VSet {
        let key = (n, input.iter().cloned().collect::<Vec<_>>());
        if let Some(out) = self.memo.get(&key).filter(|_| !self.witness) {
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
                    if !self.nesting_reported && self.probing == 0 {
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
        let mut rejected = Vec::new();
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
                    self.hit(h, i);
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
            // A record from outside that the body rejects is a composition
            // error, as in `A .. B`; a re-entering one fails only on the
            // paths that go round again (see `report_reentry`).
            let mut admitted = if from_outside {
                self.admit(body, to_body, op.clone(), &why, Some(body))
            } else {
                let (kept, bad) = self.admit_deferred(body, to_body, op.clone(), &why, Some(body));
                rejected.extend(bad);
                kept
            };
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
        self.report_reentry(rejected, &out, "star");
        out
    }

    fn flow_feedback(&mut self, h: HId, body: HId, back: &[Pattern], input: &VSet) -> VSet {
        let op = self.hir.node(h).op.clone();
        let body_desc = self.describe(body);
        let mut entered = input.clone();
        let mut out = VSet::new();
        let mut rejected = Vec::new();
        loop {
            let produced = self.flow(body, &entered);
            let mut again = VSet::new();
            for o in produced {
                let matched: Vec<usize> = (0..back.len())
                    .filter(|&i| o.is_subtype_of(&back[i].variant))
                    .collect();
                for &i in &matched {
                    self.hit(h, i);
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
            let (again, bad) = self.admit_deferred(body, again, op.clone(), &why, Some(body));
            rejected.extend(bad);
            if again.is_empty() {
                break;
            }
            entered.extend(again);
            if entered.len() > MAX_VARIANTS {
                self.gave_up(op, "feedback loop");
                break;
            }
        }
        self.report_reentry(rejected, &out, "feedback loop");
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
            self.admit(body, declared, net.name_span.clone(), &why, None);
            self.declared_requirement_warnings(n, body);
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
                let inputs = self.extend_declared(body, &m.inputs);
                let inferred = self.flow_net(n, &inputs);
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
                        None => {
                            let inputs = self.extend_declared(body, &m.inputs);
                            out.extend(self.flow_net(n, &inputs))
                        }
                    }
                }
                // What only records of several mappings produce together (a
                // synchrocell's merge) is not declared: it is inferred.
                if sig.len() > 1 && sig.iter().any(|m| m.outputs.is_none()) {
                    let closed: Vec<&Variant> = sig
                        .iter()
                        .filter_map(|m| m.outputs.as_ref())
                        .flatten()
                        .collect();
                    let all = self.flow_net(n, &input.iter().cloned().collect());
                    out.extend(
                        all.into_iter()
                            .filter(|o| !closed.iter().any(|d| o.is_subtype_of(d))),
                    );
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

    /// A declared input that lacks labels the body needs (they can only
    /// arrive by flow inheritance) works for some records only: a warning.
    fn declared_requirement_warnings(&mut self, n: NetIdx, body: HId) {
        let net = &self.hir.nets[n];
        let Some(declared) = net.declared_inputs() else {
            return;
        };
        for d in &declared {
            let ext = self.extend_declared(body, std::slice::from_ref(d));
            if ext.contains(d) {
                continue;
            }
            let needs: Vec<String> = ext.iter().map(|e| fmt_variant(&minus(e, d))).collect();
            let span = net.sig_span.clone().unwrap_or(net.name_span.clone());
            self.diags.push(
                Diagnostic::warning(
                    span,
                    format!(
                        "net `{}` declares input {}, but its body also needs {}",
                        net.name,
                        fmt_variant(d),
                        needs.join(" or ")
                    ),
                )
                .with_label(format!(
                    "records of type {} alone fail at run time",
                    fmt_variant(d)
                ))
                .with_secondary(
                    self.hir.node(body).span.clone(),
                    "these labels reach the body only by flow inheritance",
                )
                .with_note(format!(
                    "the net's input type is taken as {}",
                    fmt_type(&ext.iter().cloned().collect::<Vec<_>>())
                )),
            );
        }
    }

    /// The body's outputs `inferred` must be covered by the declared ones.
    /// If none is, no input can make the net behave as declared: an error per
    /// variant. If only some are, the records of the others still leave the
    /// net at run time (net signatures are not enforced there, and what
    /// follows the net is checked against what the body really emits): one
    /// warning naming the undeclared variants.
    fn check_declared_outputs(
        &mut self,
        n: NetIdx,
        inferred: &VSet,
        declared: &[Variant],
        decl: Span,
    ) {
        let net = &self.hir.nets[n];
        let undeclared: Vec<Variant> = inferred
            .iter()
            .filter(|o| !declared.iter().any(|d| o.is_subtype_of(d)))
            .cloned()
            .collect();
        if undeclared.is_empty() {
            return;
        }
        let body = net.body.map(|b| self.hir.node(b).span.clone());
        if undeclared.len() < inferred.len() {
            let mut d = Diagnostic::warning(
                net.name_span.clone(),
                format!(
                    "net `{}` can also emit {}, which its signature does not declare",
                    net.name,
                    fmt_type(&undeclared)
                ),
            )
            .with_label(format!("also emits {}", fmt_type(&undeclared)))
            .with_secondary(
                decl.clone(),
                format!("declared output: {}", fmt_type(declared)),
            );
            if let Some(b) = body {
                d = d.with_secondary(b, "inferred from this expression");
            }
            d = d.with_note(
                "records of these types leave the net at run time; what follows the net is checked with them",
            );
            self.diags.push(d);
            return;
        }
        for o in &undeclared {
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
            if let Some(b) = &body {
                d = d.with_secondary(b.clone(), "inferred from this expression");
            }
            self.diags.push(d);
        }
    }

    // ---- warnings ----

    fn warnings(&mut self) {
        let hir = self.hir;
        for (h, start, end, msg) in std::mem::take(&mut self.partial) {
            if self.reached[h] {
                self.diags.push(
                    Diagnostic::warning(start..end, msg)
                        .with_label("works only for records that carry these labels")
                        .with_note("the labels are added to the input type; records without them fail at run time"),
                );
            }
        }
        for (h, node) in hir.nodes.iter().enumerate() {
            if !self.reached[h] {
                continue;
            }
            match &node.kind {
                HKind::Parallel { branches, .. } => {
                    for &b in branches {
                        let t = self.input_type(b);
                        if !self.reached[b] && !self.witnessed(&t, &|c| c.reached[b]) {
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
                HKind::Synchrocell { def, spans } => {
                    self.pattern_warnings(h, &def.patterns, spans, "the synchrocell pattern")
                }
                _ => {}
            }
        }
    }

    /// Whether some run contradicts a "can never" warning: the forward check
    /// flows only the variants of the input types, but a record may carry
    /// more labels, and those flow around every component that does not
    /// name them. So each input variant of the entry net (and of each net
    /// with a declared signature) is flowed again with the labels of each of
    /// `extra` added (what the construct in question would need), routing
    /// as the engine does, and `happened` says whether the construct was
    /// then reached. Nothing of these flows is kept.
    fn witnessed(&mut self, extra: &[Variant], happened: &dyn Fn(&Self) -> bool) -> bool {
        let roots: Vec<NetIdx> = (0..self.hir.nets.len())
            .filter(|&i| {
                let net = &self.hir.nets[i];
                net.body.is_some() && (self.hir.entry == Some(i) || net.sig.is_some())
            })
            .collect();
        let (reached, hits) = (self.reached.clone(), self.hits.clone());
        let outputs = self.outputs.clone();
        let quiet_memo = std::mem::take(&mut self.quiet_memo);
        let mark = self.diags.mark();
        self.quiet += 1;
        self.witness = true;
        let mut found = false;
        'roots: for n in roots {
            for e in self.net_input(n) {
                for x in extra {
                    let cand = e.union(x);
                    if cand == e {
                        continue;
                    }
                    self.flow_net(n, &VSet::from([cand]));
                    if happened(self) {
                        found = true;
                        break 'roots;
                    }
                }
            }
        }
        self.witness = false;
        self.quiet -= 1;
        self.diags.rollback(mark);
        self.quiet_memo = quiet_memo;
        (self.reached, self.hits, self.outputs) = (reached, hits, outputs);
        found
    }

    fn pattern_warnings(&mut self, h: HId, pats: &[Pattern], spans: &[Span], what: &str) {
        for (i, p) in pats.iter().enumerate() {
            if !self.hits.contains(&(h, i))
                && !self.witnessed(std::slice::from_ref(&p.variant), &|c| {
                    c.hits.contains(&(h, i))
                })
            {
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
        // No record reaching the cell can carry b: the filter consumes it.
        assert_eq!(
            warnings("net n connect [{a, b} -> {a}] .. [| {a}, {b} |];").len(),
            1
        );
        // Records that carry b from the input fill the second slot: no warning.
        assert!(warnings("net n connect [{a} -> {a}] .. [| {a}, {b} |];").is_empty());
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
        // An exit pattern no record can match (the filter consumes `never`).
        let w = warnings("net n connect [{a, never} -> {a}] .. ([{a} -> {a, <x>}] * {never});");
        assert!(w.iter().any(|m| m.contains("can never match")), "{w:?}");
        // A record carrying `never` from the input leaves at once: no warning.
        let w = warnings("net n connect [{a} -> {a, <x>}] * {never};");
        assert!(w.is_empty(), "{w:?}");
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
    fn inherited_requirements() {
        // Serial: <B> flows around a into b.
        assert_eq!(
            sig("box a((<A>) -> (<A>)); box b((<B>) -> (<B>)); net n connect a .. b;"),
            "{<A>, <B>} -> {<A>, <B>}"
        );
        // A box with the empty input list lets everything flow.
        assert_eq!(
            sig("box t(() -> (time)); box r((a) -> (b)); net n connect t .. r;"),
            "{a} -> {b, time}"
        );
        // A consumed label cannot be supplied: an error, not an extension.
        assert!(
            sig("box a((x, <k>) -> (y)); box b((y, <k>) -> (z)); net n connect a .. b;")
                .starts_with("error:")
        );
        // Nor can a binding tag the earlier pattern lacks.
        assert!(
            sig("box f((a) -> (b)); box g((b, <#k>) -> (c)); net n connect f .. g;")
                .starts_with("error:")
        );
        // A star never extends its entry into an unguarded exit; {stuck}
        // fails only on the path that goes round again, {b} leaves: a warning.
        let src = "box f((a) -> (b) | (stuck)); net n connect f * {b};";
        assert_eq!(sig(src), "{a} -> {b}");
        assert!(warnings(src)
            .iter()
            .any(|w| w.contains("enters the next replica, which cannot accept it")));
        // Nothing ever leaves: no input can make it work, an error.
        assert!(sig("box f((a) -> (stuck)); net n connect f * {b};").starts_with("error:"));
        // Requirements only some outputs need: accepted, with a warning.
        let src = "box s((raw) -> (c) | (bad)); box c((c) -> (d)); net n connect s .. c;";
        assert_eq!(sig(src), "{c, raw} -> {bad, d} | {d}");
        assert!(warnings(src)
            .iter()
            .any(|w| w.contains("only if it inherits {c}")));
    }

    #[test]
    fn parallel_branches_route_by_inherited_input_types() {
        let c = compile(
            "t.snet",
            "box d((D) -> (D)); box l((B) -> (B)); box r((C) -> (C)); net n connect (d .. l) | (d .. r);",
            None,
        );
        let g = c.graph.expect("graph");
        let mut types: Vec<String> = Vec::new();
        for node in &g.nodes {
            if let snet_core::NodeKind::Parallel { branches, .. } = &node.kind {
                for b in branches {
                    for v in &g.node(*b).input.0 {
                        let mut names: Vec<String> =
                            v.labels().iter().map(|l| l.to_string()).collect();
                        names.sort();
                        types.push(names.join(","));
                    }
                }
            }
        }
        assert_eq!(types, ["B,D", "C,D"]);
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

    #[test]
    fn only_minimal_extensions_are_kept() {
        // {x} reaches g2 with {p, q, s} in one step, but {p, q} (two steps:
        // {x, p} goes to f2, whose {w} needs q) is enough.
        assert_eq!(
            sig(
                "box f1((x) -> (y)); box f2((x, p) -> (w)); box g1((y, p) -> (z)); \
                 box g2((y, p, q, s) -> (z)); box g3((w, q) -> (z)); \
                 net n connect (f1 | f2) .. (g1 | g2 | g3);"
            ),
            "{p, q, x} | {q, w, x} -> {y, z} | {z}"
        );
    }

    #[test]
    fn sub_chains_of_a_serial_chain_keep_their_suffix_types() {
        // The lowering splits `a .. b .. c` into `a .. (b .. c)`: the inner
        // node needs what `b .. c` needs, the outer one what the whole needs.
        let c = compile(
            "t.snet",
            "box a((<A>) -> (<A>)); box b((<B>) -> (<B>)); box c((C) -> (C)); net n connect a .. b .. c;",
            None,
        );
        let g = c.graph.expect("graph");
        let mut types: Vec<String> = Vec::new();
        for node in &g.nodes {
            if let snet_core::NodeKind::Serial(..) = node.kind {
                for v in &node.input.0 {
                    let mut names: Vec<String> = v.labels().iter().map(|l| l.to_string()).collect();
                    names.sort();
                    types.push(names.join(","));
                }
            }
        }
        types.sort();
        assert_eq!(types, ["<A>,<B>,C", "<B>,C"]);
    }

    #[test]
    fn no_extension_through_a_wrapped_star_exit_or_synchrocell() {
        // Inheriting `done` would make the record leave the loop before it
        // enters f, also when the star sits at the head of a net or chain.
        let src = "box f((a) -> (a) | (done) | (fail)); box g((done) -> (out)); \
                   net loop connect f * {done}, {fail}; net n connect loop .. g;";
        assert!(
            sig(src).starts_with("error: net `loop` can emit {fail}"),
            "{}",
            sig(src)
        );
        let src = "box f((a) -> (a) | (done) | (fail)); box g((done) -> (out)); \
                   net n connect (f * {done}, {fail} .. []) .. g;";
        assert!(sig(src).starts_with("error:"), "{}", sig(src));
        // b is what the cell's second record brings, also when the cell is
        // wrapped in a chain or a net: {a} is not extended to {a, b}. The
        // {a} the cell passes on unmerged (a second {a}) matches no branch,
        // a warning: one {a} and one {b} make the program work.
        let src = "box f((a, b) -> (c)); net n connect ([| {a}, {b} |] .. []) .. (f | [{b} -> ]);";
        assert_eq!(sig(src), "{a} | {b} -> {c}");
        assert_eq!(warnings(src).len(), 1, "{:?}", warnings(src));
        let src = "box f((a, b) -> (c)); net cell connect [| {a}, {b} |]; \
                   net n connect cell .. (f | [{b} -> ]);";
        assert_eq!(sig(src), "{a} | {b} -> {c}");
    }

    #[test]
    fn what_only_a_synchrocells_leftovers_break_is_a_warning() {
        // The cell passes on a record matching a pattern only when that
        // slot is already filled: with one {<a>} and one {<b>}, only the
        // merged record reaches the filter (issue 37), also through a chain
        // and a net around the cell.
        for src in [
            "net n connect [| {<a>}, {<b>} |] .. [{<a>, <b>} -> {<s = a + b>}];",
            "net n connect ([| {<a>}, {<b>} |] .. []) .. [{<a>, <b>} -> {<s>}];",
            "net c connect [| {<a>}, {<b>} |]; net n connect c .. [{<a>, <b>} -> {<s>}];",
        ] {
            assert_eq!(sig(src), "{<a>} | {<b>} -> {<s>}", "{src}");
            let w = warnings(src);
            assert_eq!(w.len(), 2, "{src}: {w:?}");
        }
        // A record no pattern matches always passes on: still an error.
        // (The binding tag keeps the inference from extending it.)
        let src = "net n connect [| {<a>}, {<b>} |] .. [{<a>, <b>} -> {<s>}]; \
                   net m connect [{<x>} -> {<a>}; {<b>}; {<z>, <#t>}] .. n;";
        assert_eq!(
            sig(src),
            "error: `[| {<a>}, {<b>} |]` can emit {<z>, <#t>}, which `[{<a>, <b>} -> {<s>}]` does not accept"
        );
        // Nor does a cell that can never fire hide what it passes on.
        let src = "net n connect [{<a>} -> {<a>}] .. [| {<a>}, {<b>} |] .. [{<a>, <b>} -> {<s>}];";
        assert!(sig(src).starts_with("error: "), "{}", sig(src));
    }

    /// Known gap, not fixed: extensions are verified by flowing one variant
    /// at a time, so a synchrocell never fires inside the inference and what
    /// its merged record needs from the first pattern's record is never
    /// found. With inputs {a, <k>} and {b} this program works (the merged
    /// record takes <k> from the {a, <k>} record); the checker rejects it.
    #[test]
    #[ignore = "known gap: requirements of a synchrocell's merged record are not inferred"]
    fn requirements_through_a_synchrocell_merge() {
        assert_eq!(
            sig("box f((a, b, <k>) -> (c)); net n connect [| {a}, {b} |] * {a, b} .. f;"),
            "{a, <k>} | {b} -> {c}"
        );
    }

    /// Known bug, not fixed: a speculative flow drops the records a
    /// component rejects inside (the errors are rolled back), so an
    /// extension that routes a record into a dead end "fits" because nothing
    /// comes out. Here {x, z} is taken for the star (q's {zz} dies at r),
    /// next to the working {x, y}, and the forward check then rejects the
    /// program; without {x, z} it checks cleanly.
    #[test]
    #[ignore = "known bug: an extension may fit by losing records inside the component"]
    fn an_extension_never_fits_by_losing_records() {
        let src = "box p((x) -> (x2)); box q((x, z) -> (zz)); box r((x2) -> (x) | (w)); \
                   net n connect ((p | q) .. r) * {w, z}, {w, y};";
        assert!(!sig(src).starts_with("error:"), "{}", sig(src));
    }

    #[test]
    fn star_and_feedback_requirements_take_several_rounds() {
        // Every input variant must carry z.
        let all_carry_z = |s: &str| {
            let input = s.split(" -> ").next().unwrap_or("");
            !s.starts_with("error:") && input.split(" | ").all(|v| v.contains('z'))
        };
        // Round 1 extends g's {c}: its {b} leaves only with z. Then f's {c}
        // no longer fits the next replica, which now needs z: round 2.
        let s = sig("box f((a) -> (c)); box g((c) -> (c) | (b)); net n connect (f | g) * {b, z};");
        assert!(all_carry_z(&s), "{s}");
        // The same for what a feedback loop sends back.
        let s = sig(
            "box f((a) -> (c)); box g((c) -> (e)); box h((e, z) -> (out)); \
                     net n connect (f | g | h) \\ {c}, {e};",
        );
        assert!(all_carry_z(&s), "{s}");
    }

    #[test]
    fn speculative_flows_report_nothing() {
        // Looking for u1's z, the inference tries {x, z}, which q takes and
        // whose {v} r rejects; that try must leave no error behind.
        let src = "box p((x) -> (y)); box q((x, z) -> (v) | (y)); box r((y) -> (y)); \
                   box u1((y, z) -> (out)); box u2((y, w) -> (out)); \
                   net n connect ((p | q) .. r) .. (u1 | u2);";
        assert_eq!(sig(src), "{w, x, y, z} | {w, x} -> {out, v} | {out}");
    }

    #[test]
    fn extensions_with_and_without_a_binding_tag_are_both_kept() {
        // {m} and {m, <#k>} are incomparable: neither matches the other.
        assert_eq!(
            sig("box g1((m) -> (x)); box g2((m, <#k>) -> (y)); net n connect [] .. (g1 | g2);"),
            "{m, <#k>} | {m} -> {x} | {y}"
        );
    }
}
