//! Deterministic collectors: the ordering guarantee of `||`, `**` and `!!`.
//!
//! # Protocol
//!
//! The dispatcher of a deterministic combinator owns a sequence counter
//! ([`DetOwner`]). For every input record it
//! 1. pushes the record's sequence number `s` onto the record's stamp stack,
//! 2. routes it into the combinator's (nondeterministic) inside, and
//! 3. sends a [`Marker`] `(owner, s)` down the same path right behind it.
//!
//! Every entity passes markers on in stream order, so a marker follows every
//! record that was ahead of it. Where a path forks (a parallel or split
//! dispatcher, a star stage), the marker is split into one copy per outgoing
//! path that may hold records of the same sequence number, adding tokens
//! before the copies leave ([`Marker::split`]). All copies end at the
//! collector; the copy that takes the last token *completes* `s`.
//!
//! The collector emits records stamped with the current sequence number at
//! once (popping the stamp), buffers records stamped later, and on completion
//! of the current number moves on to the next, flushing its buffer. Records
//! caused by input `i` therefore all leave before any caused by `j > i`.
//!
//! Markers of an *enclosing* owner that reach a deterministic dispatcher are
//! wrapped: they get the dispatcher's next sequence number and travel inside
//! an own marker's payload straight to the collector, which re-emits them
//! when that number completes (after everything that preceded them).

use std::collections::BTreeMap;

use crate::entity::{Arrivals, Entity, Item, Marker, Rec, Stamps};
use crate::runtime::Ctx;
use crate::sync::Arc;
use crate::EngineError;

/// The dispatcher side of a deterministic combinator.
pub(crate) struct DetOwner {
    pub owner: u64,
    next_seq: u64,
}

impl DetOwner {
    pub(crate) fn new(owner: u64) -> DetOwner {
        DetOwner { owner, next_seq: 0 }
    }

    /// Stamps a record entering the combinator; returns the marker that must follow it.
    pub(crate) fn stamp(&mut self, rec: &mut Rec) -> Marker {
        self.reserve(&mut rec.det)
    }

    /// Takes the next sequence number for what carries `stamps` (a record,
    /// or the start-up of the combinator's initialisers); returns the marker
    /// that must follow it.
    pub(crate) fn reserve(&mut self, stamps: &mut Stamps) -> Marker {
        let s = self.next_seq;
        self.next_seq += 1;
        stamps.push(s);
        Marker::new(self.owner, s, None)
    }

    /// Wraps an enclosing owner's marker: it goes straight to the collector.
    pub(crate) fn wrap(&mut self, foreign: Marker) -> Marker {
        let s = self.next_seq;
        self.next_seq += 1;
        Marker::new(self.owner, s, Some(foreign))
    }
}

/// Sends a record into a combinator's inside, followed down the same path
/// by its ordering marker if a deterministic owner stamped it
/// ([`DetOwner::stamp`]; stamping comes first so that an instance the record
/// creates starts with the record's stamps).
pub(crate) fn send_in(target: &Arc<Entity>, r: Rec, marker: Option<Marker>, ctx: &mut Ctx) {
    ctx.send(target, Item::Rec(r));
    if let Some(m) = marker {
        ctx.send(target, Item::Marker(m));
    }
}

/// A marker reaching a combinator's dispatcher: a deterministic owner wraps
/// it and sends it to its collector (`next`); otherwise copies go down every
/// instantiated path.
pub(crate) fn pass_marker<'a>(
    det: Option<&mut DetOwner>,
    m: Marker,
    paths: impl Iterator<Item = &'a Arc<Entity>> + Clone,
    next: &Arc<Entity>,
    ctx: &mut Ctx,
) {
    match det {
        Some(d) => {
            let w = d.wrap(m);
            ctx.send(next, Item::Marker(w));
        }
        None => crate::parallel::broadcast(m, paths, next, ctx),
    }
}

/// The collector side.
pub(crate) struct Collector {
    owner: u64,
    current: u64,
    /// Records stamped with a later number than `current`.
    buffered: BTreeMap<u64, Vec<Rec>>,
    /// Shares of own markers that arrived so far.
    arrivals: Arrivals,
    /// Numbers after `current` that completed already, with their payloads.
    completed: BTreeMap<u64, Option<Marker>>,
    next: Arc<Entity>,
}

impl Collector {
    /// Where this entity sends what it makes ([`crate::runtime::Kind::toward_remote`]).
    pub(crate) fn next(&self) -> &Arc<Entity> {
        &self.next
    }

    pub(crate) fn new(owner: u64, next: Arc<Entity>) -> Collector {
        Collector {
            owner,
            current: 0,
            buffered: BTreeMap::new(),
            arrivals: Arrivals::default(),
            completed: BTreeMap::new(),
            next,
        }
    }

    pub(crate) fn process(&mut self, item: Item, ctx: &mut Ctx) -> Result<(), EngineError> {
        match item {
            Item::Rec(mut r) => {
                let s = r.det.last().copied().unwrap_or(self.current);
                if s <= self.current {
                    debug_assert_eq!(
                        s, self.current,
                        "record older than the collector's position"
                    );
                    r.det.pop();
                    ctx.send(&self.next, Item::Rec(r));
                } else {
                    self.buffered.entry(s).or_default().push(r);
                }
            }
            Item::Marker(m) if m.owner == self.owner => {
                let seq = m.seq;
                if let Some(payload) = self.arrivals.arrive(m) {
                    if seq == self.current {
                        self.advance(payload, ctx);
                    } else {
                        self.completed.insert(seq, payload);
                    }
                }
            }
            other => ctx.send(&self.next, other),
        }
        Ok(())
    }

    /// `current` completed (its marker carried `payload`): move on while later numbers are complete.
    fn advance(&mut self, mut payload: Option<Marker>, ctx: &mut Ctx) {
        loop {
            if let Some(p) = payload.take() {
                ctx.send(&self.next, Item::Marker(p));
            }
            self.current += 1;
            if let Some(recs) = self.buffered.remove(&self.current) {
                for mut r in recs {
                    r.det.pop();
                    ctx.send(&self.next, Item::Rec(r));
                }
            }
            match self.completed.remove(&self.current) {
                Some(next) => payload = next,
                None => break,
            }
        }
    }
}
