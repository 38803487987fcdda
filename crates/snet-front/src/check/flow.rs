//! Flow: the set of variants each construct passes on for an incoming
//! set ([`Checker::flow`]), with the fixpoints of star and feedback and
//! the errors of variants a component cannot accept.

use super::*;

impl Checker<'_, '_> {
    /// Pattern `i` of node `h` matched some variant (for warnings).
    pub(super) fn hit(&mut self, h: HId, i: usize) {
        if self.probing == 0 {
            self.hits.insert((h, i));
        }
    }

    pub(super) fn flow(&mut self, h: HId, input: &VSet) -> VSet {
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

    pub(super) fn flow_net(&mut self, n: NetIdx, input: &VSet) -> VSet {
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

    pub(super) fn flow_star(&mut self, h: HId, body: HId, exits: &[Pattern], input: &VSet) -> VSet {
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

    pub(super) fn flow_feedback(
        &mut self,
        h: HId,
        body: HId,
        back: &[Pattern],
        input: &VSet,
    ) -> VSet {
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

    pub(super) fn gave_up(&mut self, at: Span, what: &str) {
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
}
