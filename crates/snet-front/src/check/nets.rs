//! Nets: their order, each net's inferred signature, and the check of a
//! declared signature against its body.

use super::*;

impl Checker<'_, '_> {
    /// Nets in dependency order (a net after the nets its body uses), so that
    /// uses mostly find their callee's flow memoised.
    pub(super) fn net_order(&self) -> Vec<NetIdx> {
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
    pub(super) fn check_net(&mut self, n: NetIdx) -> (Vec<Variant>, Vec<Variant>) {
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
    pub(super) fn declared_requirement_warnings(&mut self, n: NetIdx, body: HId) {
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
    pub(super) fn check_declared_outputs(
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
}
