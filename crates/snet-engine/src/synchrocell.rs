//! Synchrocells: `[| p1 if <g1>, p2, ... |]`.
//!
//! One storage slot per pattern. An arriving record is stored in the first
//! pattern it matches whose slot is empty and whose guard holds; otherwise it
//! passes straight through. When every slot is full the stored records merge
//! into one output (labels each pattern names come from its record, all other
//! labels from the first pattern's record) and the cell becomes the identity.
//! The merged record carries the ordering stamps of the record that fired it.

use snet_core::{NodeId, Pattern, Record, SynchrocellDef};

use crate::entity::{Entity, Item, Rec};
use crate::error::EvalContext;
use crate::runtime::Ctx;
use crate::sync::Arc;
use crate::EngineError;

pub(crate) struct SynchrocellEntity {
    node: NodeId,
    def: Arc<SynchrocellDef>,
    /// Boxed: a cell keeps its slots inline, and entity states stay small
    /// (see `runtime::size_tests`).
    cell: Box<Cell>,
    next: Arc<Entity>,
    /// In the node's list of entities holding records ([`Runtime::note_holding`](crate::runtime::Runtime::note_holding)).
    listed: bool,
}

/// The state of one synchrocell, shared by the plain and the fused entity.
pub(crate) struct Cell {
    /// Inline for the usual two or three patterns: a cell costs no
    /// allocation.
    slots: smallvec::SmallVec<[Option<Record>; 2]>,
    filled: usize,
    fired: bool,
}

/// What a cell did with a record.
pub(crate) enum Stored {
    /// Kept in a slot; nothing to emit.
    Kept,
    /// Filled the last slot: here is the merged record.
    Fired(Record),
    /// Not taken: pass the record on unchanged.
    Passed(Record),
}

impl Cell {
    pub(crate) fn new(n: usize) -> Cell {
        Cell {
            slots: (0..n).map(|_| None).collect(),
            filled: 0,
            fired: false,
        }
    }

    pub(crate) fn offer(
        &mut self,
        patterns: &[Pattern],
        rec: Record,
    ) -> Result<Stored, snet_core::EvalError> {
        if self.fired {
            return Ok(Stored::Passed(rec));
        }
        let mut slot = None;
        for (i, p) in patterns.iter().enumerate() {
            if self.slots[i].is_none() && rec.matches(&p.variant) {
                let ok = match &p.guard {
                    Some(g) => g.holds(&rec)?,
                    None => true,
                };
                if ok {
                    slot = Some(i);
                    break;
                }
            }
        }
        let Some(i) = slot else {
            return Ok(Stored::Passed(rec));
        };
        Ok(match self.store(i, patterns, rec) {
            None => Stored::Kept,
            Some(merged) => Stored::Fired(merged),
        })
    }

    /// The records the cell holds, waiting for their partners.
    pub(crate) fn held(&self) -> impl Iterator<Item = &Record> {
        self.slots.iter().flatten()
    }

    /// Is slot `i` still empty?
    pub(crate) fn open(&self, i: usize) -> bool {
        !self.fired && self.slots[i].is_none()
    }

    /// Stores `rec` in the empty slot `i`; returns the merged record when that
    /// filled the last slot (the cell has then fired).
    pub(crate) fn store(&mut self, i: usize, patterns: &[Pattern], rec: Record) -> Option<Record> {
        debug_assert!(self.open(i));
        self.slots[i] = Some(rec);
        self.filled += 1;
        if self.filled < patterns.len() {
            return None;
        }
        self.fired = true;
        let mut merged = self.slots[0].take().unwrap_or_default();
        for (slot, p) in self.slots[1..].iter_mut().zip(&patterns[1..]) {
            let Some(r) = slot.take() else { continue };
            for l in p.variant.labels() {
                if let Some(v) = r.get(*l) {
                    merged.set(*l, v.clone());
                }
            }
        }
        // A fired cell stores nothing again: no need to keep its slots.
        self.slots = smallvec::SmallVec::new();
        Some(merged)
    }
}

impl SynchrocellEntity {
    pub(crate) fn new(
        node: NodeId,
        def: Arc<SynchrocellDef>,
        next: Arc<Entity>,
    ) -> SynchrocellEntity {
        SynchrocellEntity {
            node,
            cell: Box::new(Cell::new(def.patterns.len())),
            def,
            next,
            listed: false,
        }
    }

    /// The template node and the records held (for the end-of-run report).
    pub(crate) fn held(&self) -> (NodeId, Vec<&Record>) {
        (self.node, self.cell.held().collect())
    }

    pub(crate) fn process(
        &mut self,
        item: Item,
        ctx: &mut Ctx,
        me: &Arc<Entity>,
    ) -> Result<(), EngineError> {
        let Item::Rec(Rec { rec, det, origin }) = item else {
            ctx.send(&self.next, item);
            return Ok(());
        };
        let t0 = if ctx.log.is_some() {
            crate::instrument::now_ns()
        } else {
            0
        };
        let stored =
            self.cell
                .offer(&self.def.patterns, rec)
                .map_err(|error| EngineError::Eval {
                    error,
                    context: EvalContext::Synchrocell,
                    loc: ctx.rt.loc(self.node),
                })?;
        match stored {
            Stored::Kept => {
                ctx.rt
                    .note_holding(me, &mut self.listed, self.node, ctx.stacks.worker())
            }
            Stored::Fired(rec) => {
                ctx.rt
                    .released(self.node, self.def.patterns.len() - 1, ctx.stacks.worker());
                if let Some(log) = ctx.log.as_deref_mut() {
                    log.fire(self.node, t0, crate::instrument::now_ns());
                }
                ctx.send(&self.next, Item::Rec(Rec { rec, det, origin }))
            }
            Stored::Passed(rec) => ctx.send(&self.next, Item::Rec(Rec { rec, det, origin })),
        }
        Ok(())
    }
}
