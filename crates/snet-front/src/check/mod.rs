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

mod flow;
mod input;
mod nets;
mod warnings;

#[cfg(test)]
mod tests;

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
