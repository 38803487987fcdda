//! Input types and acceptance: each node's input type with its inherited
//! requirements ([`Checker::input_type`]), the extensions that make a
//! component's outputs fit what follows ([`Checker::extend`]), and whether
//! a node accepts a variant, with the notes that explain a rejection.

use super::*;

impl Checker<'_, '_> {
    /// The input type of `h` with its inherited requirements (see the module
    /// header): what a record must carry to get through `h` *and* whatever
    /// follows `h` inside the same construct. Context-free, so cached per node.
    pub(super) fn input_type(&mut self, h: HId) -> Vec<Variant> {
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
    pub(super) fn serial_suffix(&mut self, parts: &[HId], ops: &[Span]) -> Vec<Vec<Variant>> {
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
    pub(super) fn extend_all(
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
    pub(super) fn head(&self, h: HId) -> (Vec<Variant>, Vec<Label>) {
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
    pub(super) fn extend(
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
    pub(super) fn probe(&mut self, h: HId, v: &Variant) -> VSet {
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
    pub(super) fn extend_declared(&mut self, b: HId, declared: &[Variant]) -> VSet {
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
    pub(super) fn net_input(&mut self, n: NetIdx) -> Vec<Variant> {
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

    pub(super) fn accepts(&mut self, h: HId, v: &Variant) -> bool {
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
    pub(super) fn reject_note(&mut self, h: HId, v: &Variant) -> Option<String> {
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
    pub(super) fn consumed_note(
        &mut self,
        upstream: HId,
        target: HId,
        v: &Variant,
    ) -> Option<String> {
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
    pub(super) fn describe(&self, h: HId) -> String {
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
    pub(super) fn admit(
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
    pub(super) fn admit_deferred(
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
    pub(super) fn report_reentry(&mut self, rejected: Vec<Diagnostic>, out: &VSet, what: &str) {
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
}
