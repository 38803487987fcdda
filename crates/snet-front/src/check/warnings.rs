//! Warnings for constructs something reaches but that can never act: a
//! parallel branch no variant is routed to, a star exit or feedback pattern
//! nothing matches, a synchrocell that never fires; each only if no input
//! record could make it happen ([`Checker::witnessed`]).

use super::*;

impl Checker<'_, '_> {
    pub(super) fn warnings(&mut self) {
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
    pub(super) fn witnessed(
        &mut self,
        extra: &[Variant],
        happened: &dyn Fn(&Self) -> bool,
    ) -> bool {
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

    pub(super) fn pattern_warnings(
        &mut self,
        h: HId,
        pats: &[Pattern],
        spans: &[Span],
        what: &str,
    ) {
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
