//! Boxes: the engine side of the language interfaces.
//!
//! A language interface (C4SNet, ...) resolves each box declaration to a
//! [`BoxImpl`]. The box entity checks the input record against the box's
//! input labels, invokes the implementation, checks every emitted record
//! (variant number in range), adds the flow-inherited labels, and passes the
//! outputs on in the order the box emitted them.
//!
//! # Initialiser boxes
//!
//! A box with no input list at all (`box init(-> (A));`,
//! [`snet_core::BoxDef::is_init`]) is an *initialiser*. (A box with an empty
//! input list, `box t(() -> (A));`, is not: it is called once per record it
//! receives, and every label of that record flows past it.) Its
//! entity is called once with the empty record when the instance holding it
//! starts ([`crate::instantiate::instantiate`] queues that call in
//! `Ctx::startup`, and whoever created the instance sends it at once):
//!
//! * Every initialiser of the *static* network — the instance of the entry
//!   net created before the run, i.e. everything reachable from the entry
//!   without entering the body of a star, split or dynamic placement:
//!   serial compositions, parallel branches, feedback bodies, nested nets,
//!   placements — fires exactly once, at the start of the run, before any
//!   input record is admitted. Parallel branches are normally created by
//!   their dispatcher when the first record is routed to them; a branch that
//!   holds such an initialiser is created with the composition instead
//!   (`Program::init_branches`), so an initialiser in a branch no record
//!   ever enters still fires.
//! * An initialiser inside a star stage or a split replica fires when that
//!   replica is created, i.e. when the first record that needs it arrives;
//!   each replica's initialiser fires once.
//!
//! The outputs enter the network at the box's place and flow on like any
//! record. Like any box an initialiser also accepts records arriving from
//! upstream (every record matches the empty input pattern): each one causes
//! one more call whose outputs inherit all of the record's labels. This is
//! exactly the checker's flow rule (`O`, and `O ∪ v`).
//!
//! **Order.** The start-up of an instance behaves like a record that enters
//! it ahead of everything else. For deterministic combinators: a `||` whose
//! branches hold initialisers gives their start-up its sequence number 0 (the
//! calls carry that stamp and a marker copy follows them down each such
//! branch), so everything the initialisers emit leaves the `||` before the
//! outputs of its first input record, in the order of the branches' own
//! (possibly nondeterministic) merging otherwise. The start-up of a replica
//! created by record `r` carries `r`'s stamps and is sent before `r`: an
//! enclosing `**`/`!!`/`||` emits the initialiser outputs among `r`'s
//! outputs, and ahead of them where `r` passes through the initialiser.
//! Quiescence ends the run only after all of this has drained: the start-up
//! calls are the first tasks of the run, queued before the workers start.
//!
//! # Concurrent invocation (`box_concurrency` = N > 1)
//!
//! Boxes are stateless, so one box entity may run several invocations at
//! once; its outputs must still leave in input order. The entity then acts
//! as a *dispatcher* in front of N *lane* entities (created lazily, all of
//! kind [`BoxEntity`]) that share one [`Reorder`] buffer:
//!
//! 1. The dispatcher (licence holder of the box's entity) gives every item a
//!    sequence number `s` (consecutive, from 0). A record (after the input
//!    check) goes to the next lane in round-robin order with `s` pushed onto
//!    its stamp stack. An
//!    ordering marker or `Resume` item is *completed* at once: it is entered
//!    in the reorder buffer as the whole output of `s`.
//! 2. A lane is an ordinary entity: its licence holder pops `s`, invokes the
//!    box (lanes run on different workers, so up to N invocations of the box
//!    run at once), adds flow inheritance and the record's original stamps,
//!    and completes `s` with the list of outputs.
//! 3. Completing `s` locks the reorder buffer, stores the list under `s`,
//!    and while the list of `next_seq` is present sends its items to the
//!    box's successor and advances `next_seq` — all under the lock (sends
//!    the worker held back, see `Ctx::hold_sends`, are flushed before it is
//!    released), so the successor's inbox receives the outputs of `0, 1,
//!    2, ...` in order and a marker stays behind the outputs of every
//!    earlier record.
//!
//! Lock order: reorder lock, then (inside `Ctx::send`) an inbox lock; an
//! inbox lock is never held while taking another lock, so this cannot
//! deadlock. Nothing is stranded: the buffer holds lists only for numbers
//! above `next_seq`, and `next_seq`'s list is stored by a running lane or
//! the dispatcher itself; the workers running lanes keep the network from
//! looking quiescent until they finish. With N = 1 the entity invokes the
//! box inline (no lanes, no buffer).

use std::collections::BTreeMap;

use snet_core::{BoxDef, NodeKind, Record};

use crate::entity::{Entity, Item, Rec};
use crate::error::{record_type, BoxError, ResolveError, ResolveReason};
use crate::program::BoxTemplate;
use crate::runtime::{Ctx, Kind, Runtime};
use crate::sync::{lock, Arc, Mutex};
use crate::EngineError;

/// Receives a box's outputs.
pub trait Emit {
    /// `variant` is 1-based, as in `C4SNetOut`; `rec` holds exactly that variant's labels.
    fn emit(&mut self, variant: usize, rec: Record) -> Result<(), BoxError>;
}

/// One box's implementation. May be called from any worker, concurrently.
pub trait BoxImpl: Send + Sync {
    /// Runs the box on the input record (which matches the box's input labels).
    fn invoke(&self, input: &Record, out: &mut dyn Emit) -> Result<(), BoxError>;
}

/// A box language: resolves declarations to implementations before the run.
pub trait LanguageInterface {
    /// The implementation of `def`; the run reports every box that fails
    /// to resolve ([`EngineError::Setup`]).
    fn resolve(&self, def: &BoxDef) -> Result<Arc<dyn BoxImpl>, ResolveError>;
}

/// The interface of pure S-Net runs: no box has an implementation.
pub struct NoBoxes;

impl LanguageInterface for NoBoxes {
    fn resolve(&self, def: &BoxDef) -> Result<Arc<dyn BoxImpl>, ResolveError> {
        Err(ResolveError::new(def, ResolveReason::NoImplementation))
    }
}

/// The reorder buffer shared by a concurrent box's dispatcher and lanes (see the module docs).
pub struct Reorder {
    next: Arc<Entity>,
    state: Mutex<ReorderState>,
}

struct ReorderState {
    next_seq: u64,
    done: BTreeMap<u64, Vec<Item>>,
}

impl Reorder {
    /// Step 3 of the protocol: `s` produced `items`.
    fn complete(&self, s: u64, items: Vec<Item>, ctx: &mut Ctx) {
        let mut st = lock(&self.state);
        if s != st.next_seq {
            st.done.insert(s, items);
            return;
        }
        for it in items {
            ctx.send(&self.next, it);
        }
        st.next_seq += 1;
        loop {
            let n = st.next_seq;
            let Some(items) = st.done.remove(&n) else {
                break;
            };
            for it in items {
                ctx.send(&self.next, it);
            }
            st.next_seq += 1;
        }
        // The successor's stream has several senders (the lanes' workers):
        // what this one held back must reach the inbox before the lock goes.
        ctx.flush_sends();
    }
}

enum Mode {
    /// Concurrency 1: invoke while holding the entity's licence.
    Inline,
    /// The entity at the box's place when concurrency > 1.
    Dispatch {
        lanes: Vec<Arc<Entity>>,
        width: usize,
        rr: usize,
        seq: u64,
        order: Option<Arc<Reorder>>,
    },
    /// One of a dispatcher's lanes.
    Lane { order: Arc<Reorder> },
}

pub struct BoxEntity {
    t: Arc<BoxTemplate>,
    imp: Arc<dyn BoxImpl>,
    next: Arc<Entity>,
    mode: Mode,
    /// Input parked while a field argument is fetched from another node.
    parked: crate::dist::fields::Parked,
}

/// The most outputs a worker's reused box-output buffer keeps room for
/// between calls ([`Ctx::box_outs`]).
const KEEP_OUTS: usize = 64;

struct Collect<'a> {
    def: &'a BoxDef,
    outs: &'a mut Vec<Record>,
}

impl Emit for Collect<'_> {
    fn emit(&mut self, variant: usize, rec: Record) -> Result<(), BoxError> {
        if variant == 0 || variant > self.def.outputs.len() {
            return Err(BoxError::VariantOutOfRange {
                variant: i64::try_from(variant).unwrap_or(i64::MAX),
                declared: self.def.outputs.len(),
                call: None,
            });
        }
        self.outs.push(rec);
        Ok(())
    }
}

impl BoxEntity {
    pub fn new(rt: &Runtime, t: Arc<BoxTemplate>, next: Arc<Entity>) -> BoxEntity {
        let NodeKind::Box(id) = rt.graph().node(t.node).kind else {
            panic!("node {} is not a box", t.node)
        };
        let imp = rt.boxes[id as usize]
            .clone()
            .expect("boxes of the entry network are resolved before the run");
        let mode = if rt.box_concurrency > 1 {
            Mode::Dispatch {
                lanes: Vec::new(),
                width: rt.box_concurrency,
                rr: 0,
                seq: 0,
                order: None,
            }
        } else {
            Mode::Inline
        };
        BoxEntity {
            t,
            imp,
            next,
            mode,
            parked: Default::default(),
        }
    }

    /// Checks `rec` and runs the box on it; its outputs, inheritance
    /// added, are appended to `outs` (the worker's reused buffer, so a call
    /// allocates nothing for them).
    fn call(&self, rec: &Record, outs: &mut Vec<Record>, ctx: &Ctx) -> Result<(), EngineError> {
        let def = &*self.t.def;
        let input = &self.t.input;
        let err = |error: BoxError| EngineError::Box {
            name: def.name.clone(),
            error,
            loc: ctx.rt.loc(self.t.node),
        };
        if !rec.matches(input) {
            return Err(err(BoxError::WrongInput {
                record: record_type(rec),
                takes: input.clone(),
            }));
        }
        let first = outs.len();
        let mut c = Collect { def, outs };
        self.imp.invoke(rec, &mut c).map_err(err)?;
        for out in &mut outs[first..] {
            out.inherit(rec, input);
        }
        Ok(())
    }

    /// Processes one item. In a distributed run a record whose field
    /// arguments are not all on this node yet is parked (with everything
    /// behind it, to keep the stream's order) until they arrive: the
    /// worker goes on with other work, and [`Item::Wake`] resumes the box.
    pub fn process(
        &mut self,
        item: Item,
        ctx: &mut Ctx,
        me: &Arc<Entity>,
    ) -> Result<(), EngineError> {
        if !ctx.rt.net.distributed() || matches!(self.mode, Mode::Lane { .. }) {
            return self.step(item, ctx);
        }
        let inputs = &self.t.def.inputs;
        let ready = |rec: &Record| {
            let fields = inputs.iter().copied().filter(|l| l.is_field());
            crate::dist::fields::ensure_local(rec, fields, me, ctx)
        };
        for it in self.parked.admit(item, ready) {
            // Parked records are stepped later, for another item: each
            // names its own input record.
            let origin = it.origin();
            self.step(it, ctx).map_err(|e| e.caused_by(origin))?;
        }
        Ok(())
    }

    fn step(&mut self, item: Item, ctx: &mut Ctx) -> Result<(), EngineError> {
        match &mut self.mode {
            Mode::Inline => {
                let Item::Rec(Rec { rec, det, origin }) = item else {
                    ctx.send(&self.next, item);
                    return Ok(());
                };
                // Taken out of the context while the sends below borrow it
                // (a send never runs a box, so nothing else needs it).
                let mut outs = std::mem::take(&mut ctx.box_outs);
                let r = self.call(&rec, &mut outs, ctx);
                if r.is_ok() {
                    for out in outs.drain(..) {
                        let item = Item::Rec(Rec {
                            rec: out,
                            det: det.clone(),
                            origin,
                        });
                        ctx.send(&self.next, item);
                    }
                }
                outs.clear();
                // A call that emitted many records (a generator) does not
                // leave its buffer's memory behind.
                if outs.capacity() <= KEEP_OUTS {
                    ctx.box_outs = outs;
                }
                r
            }
            Mode::Lane { order } => {
                let order = order.clone();
                let Item::Rec(Rec {
                    rec,
                    mut det,
                    origin,
                }) = item
                else {
                    unreachable!("a box lane receives only records from its dispatcher")
                };
                let s = det.pop().expect("the dispatcher stamps every record");
                let mut outs = Vec::new();
                self.call(&rec, &mut outs, ctx)?;
                let outs = outs
                    .into_iter()
                    .map(|out| {
                        Item::Rec(Rec {
                            rec: out,
                            det: det.clone(),
                            origin,
                        })
                    })
                    .collect();
                order.complete(s, outs, ctx);
                Ok(())
            }
            Mode::Dispatch {
                lanes,
                width,
                rr,
                seq,
                order,
            } => {
                let order = order
                    .get_or_insert_with(|| {
                        Arc::new(Reorder {
                            next: self.next.clone(),
                            state: Mutex::new(ReorderState {
                                next_seq: 0,
                                done: BTreeMap::new(),
                            }),
                        })
                    })
                    .clone();
                let s = *seq;
                *seq += 1;
                match item {
                    Item::Rec(Rec {
                        rec,
                        mut det,
                        origin,
                    }) => {
                        let def = &*self.t.def;
                        let input = &self.t.input;
                        if !rec.matches(input) {
                            return Err(EngineError::Box {
                                name: def.name.clone(),
                                error: BoxError::WrongInput {
                                    record: record_type(&rec),
                                    takes: input.clone(),
                                },
                                loc: ctx.rt.loc(self.t.node),
                            });
                        }
                        // Round robin over the lanes, counting records only.
                        let k = *rr % *width;
                        *rr += 1;
                        if k == lanes.len() {
                            let lane = BoxEntity {
                                t: self.t.clone(),
                                imp: self.imp.clone(),
                                next: self.next.clone(),
                                mode: Mode::Lane {
                                    order: order.clone(),
                                },
                                parked: Default::default(),
                            };
                            lanes.push(ctx.entity(Kind::Box(lane)));
                        }
                        det.push(s);
                        let lane = lanes[k].clone();
                        ctx.send(&lane, Item::Rec(Rec { rec, det, origin }));
                    }
                    other => order.complete(s, vec![other], ctx),
                }
                Ok(())
            }
        }
    }
}
