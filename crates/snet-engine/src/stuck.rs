//! Where records got stuck: the end-of-run report of records that never
//! left (those still held in synchrocells whose partner never came), and
//! the live dump of what a node is doing (`SIGUSR1`, `--watchdog`).
//!
//! Records are never dropped silently elsewhere: a record no parallel
//! branch, star exit or split accepts is a runtime type error that stops
//! the run naming the component, so synchrocells are the only place a
//! record can stay behind in a run that ends normally.
//!
//! The synchrocell entities list themselves when they first store a record
//! ([`crate::runtime::Runtime::note_holding`]: one branch on the store
//! path, nothing on any other); after the run the node reads their cells.

use std::collections::BTreeMap;
use std::fmt;

use snet_core::{Graph, Loc, NodeId, NodeKind, Record, Variant};

/// The records one synchrocell (template) of a node still held at the end.
#[derive(Clone, Debug)]
pub struct Held {
    /// `[| {a}, {b} |]`.
    pub what: String,
    pub loc: Loc,
    /// The records held, by label set (sorted), with their counts.
    pub by_labels: Vec<(Variant, u64)>,
}

impl Held {
    pub fn count(&self) -> u64 {
        self.by_labels.iter().map(|(_, n)| n).sum()
    }
}

impl fmt::Display for Held {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.count();
        write!(
            f,
            "{}: synchrocell {} still holds {n} record{} whose partner never came:",
            self.loc,
            self.what,
            if n == 1 { "" } else { "s" }
        )?;
        for (i, (v, n)) in self.by_labels.iter().enumerate() {
            let sep = if i == 0 { " " } else { ", " };
            write!(f, "{sep}{n} x {v}")?;
        }
        Ok(())
    }
}

/// Gathers held records by template.
#[derive(Default)]
pub(crate) struct HeldBy(BTreeMap<NodeId, BTreeMap<Variant, u64>>);

impl HeldBy {
    pub fn add(&mut self, node: NodeId, recs: Vec<&Record>) {
        for r in recs {
            *self
                .0
                .entry(node)
                .or_default()
                .entry(Variant::new(r.labels()))
                .or_default() += 1;
        }
    }

    pub fn finish(self, graph: &Graph) -> Vec<Held> {
        self.0
            .into_iter()
            .filter(|(_, m)| !m.is_empty())
            .map(|(node, m)| {
                let n = graph.node(node);
                let what = match &n.kind {
                    NodeKind::Synchrocell(s) => {
                        let pats: Vec<String> =
                            s.patterns.iter().map(|p| p.variant.to_string()).collect();
                        format!("[| {} |]", pats.join(", "))
                    }
                    _ => n.describe().to_string(),
                };
                Held {
                    what,
                    loc: n.loc.clone(),
                    by_labels: m.into_iter().collect(),
                }
            })
            .collect()
    }
}
