//! Feedback: `A \ pats`.
//!
//! One instance of `A`. Records from outside enter `A` through the entry
//! entity; the router behind `A` sends outputs that match a feedback pattern
//! (and its guard) back into `A` and lets the others leave.
//!
//! # Ordering markers through the loop
//!
//! A marker of an enclosing deterministic owner must leave only after every
//! record that entered before it has left the loop, however often those
//! records circulate. The protocol:
//! 1. The entry receives the marker `M`. It stops admitting outside input
//!    (holds it, in order) and forwards `M` to the router.
//! 2. The router starts a *round*: it sends an own marker `R(n)` into `A`
//!    (behind everything it has sent back so far), where `n` counts the
//!    records it has sent back, and keeps `M` as `R`'s payload.
//! 3. When all copies of `R(n)` have come out of `A`, every record that was in
//!    the loop when the round began has passed `A` once. If the router sent
//!    nothing back since (its count is still `n`), the loop holds no record
//!    from before `M`: it emits `M` and sends `Resume` to the entry, which
//!    releases the held input. Otherwise it starts another round.

use std::collections::VecDeque;

use crate::entity::{Entity, Item, Marker};
use crate::error::EvalContext;
use crate::program::FeedbackDef;
use crate::runtime::Ctx;
use crate::star::matches_any;
use crate::sync::Arc;
use crate::EngineError;

pub(crate) struct FeedbackEntry {
    body: Arc<Entity>,
    router: Arc<Entity>,
    draining: bool,
    held: VecDeque<Item>,
}

impl FeedbackEntry {
    /// The loop's body ([`crate::runtime::Kind::toward_remote`]).
    pub(crate) fn body(&self) -> &Arc<Entity> {
        &self.body
    }

    pub(crate) fn new(body: Arc<Entity>, router: Arc<Entity>) -> FeedbackEntry {
        FeedbackEntry {
            body,
            router,
            draining: false,
            held: VecDeque::new(),
        }
    }

    pub(crate) fn process(&mut self, item: Item, ctx: &mut Ctx) -> Result<(), EngineError> {
        match item {
            Item::Resume => {
                self.draining = false;
                while let Some(it) = self.held.pop_front() {
                    self.admit(it, ctx);
                    if self.draining {
                        break;
                    }
                }
            }
            other if self.draining => self.held.push_back(other),
            other => self.admit(other, ctx),
        }
        Ok(())
    }

    fn admit(&mut self, item: Item, ctx: &mut Ctx) {
        match item {
            Item::Rec(_) => ctx.send(&self.body, item),
            Item::Marker(_) => {
                self.draining = true;
                ctx.send(&self.router, item);
            }
            Item::Resume | Item::Wake => {}
        }
    }
}

pub(crate) struct FeedbackRouter {
    def: Arc<FeedbackDef>,
    owner: u64,
    /// The loop body's entry (weak: the body holds the router strongly).
    pub body: std::sync::Weak<Entity>,
    /// The entry, for `Resume` (weak for the same reason).
    pub entry: std::sync::Weak<Entity>,
    next: Arc<Entity>,
    /// Records sent back so far.
    looped: u64,
    /// The back edge's link, where the loop's inputs are linked (a lost
    /// node's replay: [`crate::pathlink`]); the outside input has its
    /// own in front of the body.
    pub back: Option<Box<crate::dist::custody::PathLast>>,
    /// Shares of the round markers that came out of the body so far.
    arrivals: crate::entity::Arrivals,
}

impl FeedbackRouter {
    /// Where this entity sends what it makes ([`crate::runtime::Kind::toward_remote`]).
    pub(crate) fn next(&self) -> &Arc<Entity> {
        &self.next
    }

    pub(crate) fn new(def: Arc<FeedbackDef>, owner: u64, next: Arc<Entity>) -> FeedbackRouter {
        FeedbackRouter {
            def,
            owner,
            body: std::sync::Weak::new(),
            entry: std::sync::Weak::new(),
            next,
            looped: 0,
            back: None,
            arrivals: Default::default(),
        }
    }

    fn body(&self) -> Arc<Entity> {
        self.body
            .upgrade()
            .expect("feedback body outlives its router while records flow")
    }

    pub(crate) fn process(&mut self, item: Item, ctx: &mut Ctx) -> Result<(), EngineError> {
        match item {
            Item::Rec(r) => {
                let again =
                    matches_any(&self.def.back, &r.rec).map_err(|error| EngineError::Eval {
                        error,
                        context: EvalContext::Feedback,
                        loc: ctx.rt.loc(self.def.node),
                    })?;
                if again {
                    if let Some(p) = &self.back {
                        p.pass(r.det.custody());
                    }
                    let b = self.body();
                    ctx.send(&b, Item::Rec(r));
                    self.looped += 1;
                } else {
                    ctx.send(&self.next, Item::Rec(r));
                }
            }
            Item::Marker(m) if m.owner == self.owner => {
                let seq = m.seq;
                if let Some(payload) = self.arrivals.arrive(m) {
                    if self.looped != seq {
                        self.start_round(payload, ctx);
                    } else {
                        if let Some(p) = payload {
                            ctx.send(&self.next, Item::Marker(p));
                        }
                        if let Some(e) = self.entry.upgrade() {
                            ctx.send(&e, Item::Resume);
                        }
                    }
                }
            }
            // An enclosing owner's marker handed over by the entry: step 2.
            Item::Marker(m) => self.start_round(Some(m), ctx),
            Item::Resume | Item::Wake => {}
        }
        Ok(())
    }

    fn start_round(&mut self, payload: Option<Marker>, ctx: &mut Ctx) {
        let r = Marker::new(self.owner, self.looped, payload);
        let b = self.body();
        ctx.send(&b, Item::Marker(r));
    }
}
