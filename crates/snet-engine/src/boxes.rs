//! Boxes: the engine side of the language interfaces.
//!
//! A language interface (C4SNet, ...) resolves each box declaration to a
//! [`BoxImpl`]. The box entity checks the input record against the box's
//! input labels, invokes the implementation, checks every emitted record
//! (variant number in range), adds the flow-inherited labels, and passes the
//! outputs on in the order the box emitted them.
//!
//! # Calls that emit many records
//!
//! Each call runs on a call stack of its own ([`crate::callstack`]). After
//! every [`YIELD_AFTER`] outputs the call is suspended: the entity sends
//! that batch on and yields *pinned* ([`Ctx::yield_pinned`]): it keeps its
//! licence (nothing overtakes the rest of the call's outputs), and the
//! worker that ran it resumes it with [`Item::Wake`] — at once while the
//! node's backlog is small and other workers could take what it fed,
//! otherwise once it has nothing else to do — and
//! then only if [`Ctx::backlog_elsewhere`] is below [`BACKLOG_LIMIT`]. A
//! call whose entity was suspended is listed in the node's suspended
//! entities until it returns. `ARCHITECTURE.md` gives the argument that
//! this cannot deadlock.
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
//!    and delivers the outputs under `s`: each batch when the call is
//!    suspended, the rest with "finished" when it returns.
//! 3. Delivering for `s` locks the reorder buffer. If `s` is `next_seq`, the
//!    items go to the box's successor at once; otherwise they are appended
//!    to the list stored under `s`. When `next_seq` finishes, `next_seq`
//!    advances, and the stored list of each following number is sent, as
//!    far as the first one that is not finished (its later batches then go
//!    out directly) — all under the lock (sends the worker held back, see
//!    `Ctx::hold_sends`, are flushed before it is released), so the
//!    successor's inbox receives the outputs of `0, 1, 2, ...` in order and
//!    a marker stays behind the outputs of every earlier record.
//!
//! Lock order: reorder lock, then (inside `Ctx::send`) an inbox lock; an
//! inbox lock is never held while taking another lock, so this cannot
//! deadlock. Nothing is stranded: the buffer holds lists only for numbers
//! above `next_seq`, and `next_seq`'s list is stored by a running lane or
//! the dispatcher itself; the workers running lanes keep the network from
//! looking quiescent until they finish. With N = 1 the entity invokes the
//! box inline (no lanes, no buffer).

use std::collections::{BTreeMap, VecDeque};

use smallvec::SmallVec;
use snet_core::{BoxDef, Label, NodeKind, Record, Variant};

use crate::callstack::{CallIo, CallStack, Emitter, Event};
use crate::entity::{Entity, Item, Origin, Rec, Stamps};
use crate::error::{record_type, BoxError, ResolveError, ResolveReason};
use crate::program::BoxTemplate;
use crate::runtime::{Ctx, Kind, Runtime, BACKLOG_LIMIT, YIELD_AFTER};
use crate::sync::{lock, Arc, Mutex, Ordering};
use crate::EngineError;

/// Receives a box's outputs.
pub trait Emit {
    /// `variant` is 1-based, as in `C4SNetOut`; `rec` holds exactly that variant's labels.
    ///
    /// This call may suspend the box call (the engine's call stacks): the
    /// worker's thread runs other boxes before it returns. The call goes on
    /// on the same thread, but a language interface that keeps per-thread
    /// state about the running call must not let the other calls see it,
    /// and must restore it when `emit` returns.
    fn emit(&mut self, variant: usize, rec: Record) -> Result<(), BoxError>;

    /// Whether the next [`Emit::emit`] may suspend the call (a language
    /// interface need only save and restore its per-thread state then).
    fn may_suspend(&self) -> bool {
        true
    }

    /// A fast path for interfaces that build records themselves: a place
    /// for variant `variant`'s next output record, *with* its
    /// flow-inherited labels, and how to fill it, entry by entry in label
    /// order ([`Record::push_sorted`], into the empty [`Slot::rec`]). The
    /// record is built where it waits to be sent (it is not moved again
    /// before it goes downstream). The interface then calls
    /// [`Emit::commit_slot`] (which may suspend the call, as
    /// [`Emit::emit`] may) or, if the output turned out wrong,
    /// [`Emit::discard_slot`]; nothing else in between. `None`: build the
    /// variant's labels only and call [`Emit::emit`].
    fn slot(&mut self, variant: usize) -> Option<Slot<'_>> {
        let _ = variant;
        None
    }

    /// Emits the record built in the [`Emit::slot`] just taken.
    fn commit_slot(&mut self) {}

    /// Drops the record of the [`Emit::slot`] just taken (with the field
    /// references it holds) instead of emitting it.
    fn discard_slot(&mut self) {}

    /// The engine's own collector behind this `Emit`, if it is one: an
    /// interface may then call its [`Emitter::slot`],
    /// [`Emitter::commit_slot`] and [`Emitter::discard_slot`] directly
    /// (same contract as the trait's), saving a dynamic call per output.
    fn emitter(&mut self) -> Option<&mut Emitter> {
        None
    }
}

/// Where and how to build one output record, inheritance included ([`Emit::slot`]).
pub struct Slot<'a> {
    /// The record to fill (empty).
    pub rec: &'a mut Record,
    /// Its entries in label order: each one's label and where its value
    /// comes from.
    pub steps: &'a [(Label, Src)],
    /// The call's input record (for [`Src::Input`]).
    pub input: &'a Record,
    /// Whether [`Emit::commit_slot`] may suspend the call (a language
    /// interface need only save and restore its per-thread state then).
    pub may_suspend: bool,
}

/// An output record built as a copy of the call's input with some of
/// its values overwritten ([`Emitter::slot_over`]): what a variant's
/// outputs are when they carry exactly the input's labels (what the
/// steps of its [`Slot`] would build, each `Src::Input(i)` at position
/// `i`, with fewer stores).
pub struct Over<'a> {
    /// The record: a copy of the input, tags alone, inline.
    pub rec: &'a mut Record,
    /// The entries to overwrite: each one's position in `rec` and the
    /// position of its value among the box's values for the variant (in
    /// signature order); the value is an int (the labels are tags). See
    /// [`Record::set_int_at_unchecked`].
    pub args: &'a [(u32, u32)],
    /// As [`Slot::may_suspend`].
    pub may_suspend: bool,
}

/// An output of tags alone as [`Emitter::tag_output`] found it.
pub enum TagOutput<'a> {
    /// Placed and emitted at once, as a copy of the call's input (an
    /// [`Over`] whose commit cannot suspend the call: nothing to commit
    /// or discard): each value is written over its entry with
    /// [`OverNow::set`].
    Now(OverNow<'a>),
    /// Built by the plan's steps: [`Emitter::slot_steps`] gives the slot.
    Steps(Steps),
    /// Anything else (an [`Over`] whose commit may suspend the call or
    /// that needs more than stores, a variant out of range, one that
    /// names a label twice): the general way ([`Emitter::slot_over`],
    /// [`Emitter::slot`], [`Emit::emit`]).
    Other,
}

/// The record of a [`TagOutput::Now`]: where its entries are and which
/// to write the box's values over.
pub struct OverNow<'a> {
    pub(crate) entries: *mut (Label, snet_core::Value),
    /// The plan of [`OverNow::args`] (looked at only once the record is
    /// written: fewer values are live while it is).
    pub(crate) plan: &'a OverPlan,
}

impl<'a> OverNow<'a> {
    /// As [`Over::args`].
    #[inline(always)]
    pub fn args(&self) -> &'a [(u32, u32)] {
        self.plan
    }

    /// Writes `v` as the value of the record's entry at position `i` (an
    /// `args` position).
    ///
    /// # Safety
    /// `i` is one of the positions of `args`.
    #[inline(always)]
    pub unsafe fn set(&mut self, i: u32, v: i64) {
        // SAFETY: `entries` are the placed record's (inline, tags alone:
        // `Emitter::tag_output`), and `i` is one of its positions
        // (contract), whose value is a tag's, an int.
        unsafe { Record::set_int_in(self.entries, i as usize, v) }
    }
}

/// The steps of a [`TagOutput::Steps`], for [`Emitter::slot_steps`]
/// (a pointer into the call's plan, which the call does not change).
#[derive(Clone, Copy)]
pub struct Steps(pub(crate) *const [(Label, Src)]);

impl Steps {
    /// The pointer and count (to pass through a call of a function of
    /// the interface's own, [`Steps::from_raw_parts`] back).
    #[inline(always)]
    pub fn into_raw_parts(self) -> (*const (Label, Src), usize) {
        (self.0.cast(), self.0.len())
    }

    /// What [`Steps::into_raw_parts`] gave.
    ///
    /// # Safety
    /// `ptr` and `len` came from [`Steps::into_raw_parts`].
    #[inline(always)]
    pub unsafe fn from_raw_parts(ptr: *const (Label, Src), len: usize) -> Steps {
        Steps(std::ptr::slice_from_raw_parts(ptr, len))
    }
}

/// Where one entry of an output record comes from.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Src {
    /// The box's value for the variant's label at this position (in
    /// signature order).
    Arg(u32),
    /// The input record's entry at this position (inherited).
    Input(u32),
}

/// One box's implementation. May be called from any worker, concurrently.
pub trait BoxImpl: Send + Sync {
    /// Runs the box on the input record (which matches the box's input labels).
    fn invoke(&self, input: &Record, out: &mut dyn Emit) -> Result<(), BoxError>;

    /// Runs a *run* of calls (see [`crate::callstack`]): a call on
    /// `run`'s input ([`Emitter::input`]), then, while [`Emitter::next_input`]
    /// moves a further input into place, a call on that one; stops at the
    /// first error, which it returns. An implementation may set up what
    /// all calls of a run share once (the C4SNet interface's thread slot);
    /// the default calls [`BoxImpl::invoke`] per input ([`invoke_each`]).
    fn invoke_run(&self, run: &mut Emitter) -> Result<(), BoxError> {
        invoke_each(self, run)
    }
}

/// [`BoxImpl::invoke_run`] by [`BoxImpl::invoke`], one input at a time.
pub fn invoke_each<B: BoxImpl + ?Sized>(b: &B, run: &mut Emitter) -> Result<(), BoxError> {
    loop {
        let input = run.own_input();
        // SAFETY: the input stays in place, unchanged, until `next_input` (below):
        // the call only reads it, and `run` never writes or moves it meanwhile.
        b.invoke(unsafe { &*input }, run)?;
        if !run.next_input() {
            return Ok(());
        }
    }
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
pub(crate) struct Reorder {
    next: Arc<Entity>,
    state: Mutex<ReorderState>,
}

struct ReorderState {
    next_seq: u64,
    /// Outputs of numbers above `next_seq` (and of `next_seq` itself while
    /// they wait to be sent), with whether their call has returned.
    done: BTreeMap<u64, (VecDeque<Item>, bool)>,
}

impl Reorder {
    /// Step 3 of the protocol, also for part of a call's outputs: `s`
    /// produced `items`, and `finished` says its call returned. The outputs
    /// of the oldest unfinished number are sent as they come (a suspended
    /// call's batches flow on); those of later numbers wait for it.
    fn deliver(&self, s: u64, mut items: VecDeque<Item>, finished: bool, ctx: &mut Ctx) {
        let mut st = lock(&self.state);
        if s != st.next_seq {
            let e = st.done.entry(s).or_default();
            e.0.append(&mut items);
            e.1 |= finished;
            return;
        }
        for it in items {
            ctx.send(&self.next, it);
        }
        if finished {
            st.next_seq += 1;
            loop {
                let n = st.next_seq;
                let Some((items, finished)) = st.done.get_mut(&n) else {
                    break;
                };
                for it in items.drain(..) {
                    ctx.send(&self.next, it);
                }
                if !*finished {
                    break;
                }
                st.done.remove(&n);
                st.next_seq += 1;
            }
        }
        // The successor's stream has several senders (the lanes' workers):
        // what this one held back must reach the inbox before the lock goes.
        ctx.flush_sends();
    }
}

/// An [`Over`]'s plan: (position in the record, argument) per value.
pub(crate) type OverPlan = Box<[(u32, u32)]>;

/// A [`Slot`]'s plan: its steps.
type StepsPlan = Box<[(Label, Src)]>;

/// What the outputs of one variant are built by (planned for one input
/// label set): both plans in one entry, so that an output looks up its
/// variant once, whichever it is built by.
#[derive(Default)]
pub(crate) struct OutPlan {
    /// Its [`Slot`] steps; `None` for a variant that names a label twice.
    pub(crate) steps: Option<StepsPlan>,
    /// When its outputs have exactly the planned label set, which holds
    /// no field and fits a record inline: the positions of its values in
    /// such a record, with their argument (the steps' `Src::Arg`), for
    /// [`Emitter::slot_over`]; `None` otherwise.
    pub(crate) over: Option<OverPlan>,
}

/// Flow inheritance planned for one input label set: per output variant,
/// the positions of the input entries its outputs inherit (the labels the
/// box's input pattern does not name and the variant does not carry).
pub(crate) struct Inherit {
    /// The label set planned for; empty with `take` empty: none yet.
    labels: Box<[Label]>,
    /// The same set when it has at most [`Record::INLINE`] labels (padded
    /// with [`Label::PAD`]), and how many (`usize::MAX`: more, or no
    /// plan), for [`Inherit::same_set`]'s unrolled check.
    few: [Label; Record::INLINE],
    nfew: usize,
    take: Vec<SmallVec<[u32; 4]>>,
    /// Per variant, how its outputs are built.
    outs: Vec<OutPlan>,
    /// Whether a label of the set is a field (a record of the set may then
    /// need a drop; otherwise only if its entries are on the heap).
    fields: bool,
    /// The position in a record of the set of each of the box's input
    /// labels, in signature order ([`Emitter::arg_positions`]).
    args: SmallVec<[u32; 8]>,
}

impl Default for Inherit {
    fn default() -> Inherit {
        Inherit {
            labels: Box::default(),
            few: [Label::PAD; Record::INLINE],
            nfew: usize::MAX,
            take: Vec::new(),
            outs: Vec::new(),
            fields: false,
            args: SmallVec::new(),
        }
    }
}

impl Inherit {
    /// Whether dropping `rec`, a record of the planned label set, does
    /// anything ([`Record::needs_drop`], without a look at each entry
    /// when the set has no field).
    #[inline]
    pub(crate) fn needs_drop(&self, rec: &Record) -> bool {
        rec.spilled() || (self.fields && rec.needs_drop())
    }

    /// Whether the plan is for `rec`'s label set.
    #[inline]
    pub(crate) fn fits(&self, rec: &Record) -> bool {
        !self.take.is_empty() && rec.has_labels(&self.labels)
    }

    /// [`Inherit::fits`] once a plan is made (a run of calls has one):
    /// whether `rec` has the planned label set.
    /// (`CallIo::pull` makes the two checks itself, to know which one
    /// passed.)
    #[cfg(test)]
    pub(crate) fn same_set(&self, rec: &Record) -> bool {
        // A set of at most four labels (pipe10's two, most records): the
        // length and each label compared without a loop; entries on the
        // heap (a record that once grew) are looked at the general way.
        self.same_inline_set(rec) || self.same_set_slow(rec)
    }

    /// [`Inherit::same_set`]'s unrolled check alone: whether `rec` has the
    /// planned label set of at most four labels and is inline (`false`:
    /// ask [`Inherit::same_set_slow`]).
    #[inline(always)]
    pub(crate) fn same_inline_set(&self, rec: &Record) -> bool {
        debug_assert!(!self.take.is_empty(), "a plan is made");
        rec.has_inline_labels(&self.few, self.nfew)
    }

    /// [`Inherit::same_inline_set`] for a plan of `L` labels (1 to
    /// [`Record::INLINE`], [`Inherit::few`]): the count known to the
    /// compiler. A plan of another count gives `false` (no record of
    /// its set has `L` labels): ask [`Inherit::same_set_slow`] then.
    #[inline(always)]
    pub(crate) fn same_inline_set_of<const L: usize>(&self, rec: &Record) -> bool {
        debug_assert!(!self.take.is_empty(), "a plan is made");
        rec.has_inline_labels_of::<L>(&self.few)
    }

    /// The count of labels of the planned set when it has at most
    /// [`Record::INLINE`] (the count [`Inherit::same_inline_set_of`] is
    /// made for); `None`: more, or no plan.
    #[inline]
    pub(crate) fn few(&self) -> Option<usize> {
        (self.nfew <= Record::INLINE).then_some(self.nfew)
    }

    #[cold]
    #[inline(never)]
    pub(crate) fn same_set_slow(&self, rec: &Record) -> bool {
        rec.has_labels(&self.labels)
    }

    /// Whether a label of the planned set is a field (a record of the set
    /// inline may then need a drop).
    #[inline(always)]
    pub(crate) fn has_fields(&self) -> bool {
        self.fields
    }

    /// Plans for `rec`'s label set: `pattern` is the box's input labels,
    /// `outputs` its variants.
    /// `inputs` its input labels in signature order.
    pub(crate) fn plan(
        &mut self,
        rec: &Record,
        pattern: &Variant,
        inputs: &[Label],
        outputs: &[Vec<Label>],
    ) {
        self.labels = rec.labels().collect();
        (self.few, self.nfew) = ([Label::PAD; Record::INLINE], usize::MAX);
        if self.labels.len() <= Record::INLINE {
            self.few[..self.labels.len()].copy_from_slice(&self.labels);
            self.nfew = self.labels.len();
        }
        self.fields = self.labels.iter().any(|l| l.is_field());
        // A label the record lacks (the input check refuses such a record
        // before any call) gets a position past its end.
        self.args = inputs
            .iter()
            .map(|l| {
                self.labels
                    .iter()
                    .position(|m| m == l)
                    .map_or(u32::MAX, |i| i as u32)
            })
            .collect();
        self.take = outputs
            .iter()
            .map(|out| {
                (0u32..)
                    .zip(rec.labels())
                    .filter(|(_, l)| !pattern.contains(*l) && !out.contains(l))
                    .map(|(i, _)| i)
                    .collect()
            })
            .collect();
        let steps: Vec<Option<StepsPlan>> = outputs
            .iter()
            .zip(&self.take)
            .map(|(out, take)| {
                let mut steps: Vec<(Label, Src)> = (0u32..)
                    .zip(out)
                    .map(|(j, l)| (*l, Src::Arg(j)))
                    .chain(
                        take.iter()
                            .map(|&i| (self.labels[i as usize], Src::Input(i))),
                    )
                    .collect();
                steps.sort_by_key(|(l, _)| *l);
                let repeats = steps.windows(2).any(|w| w[0].0 == w[1].0);
                (!repeats).then(|| steps.into_boxed_slice())
            })
            .collect();
        let small = !self.fields && self.labels.len() <= Record::INLINE;
        self.outs = steps
            .into_iter()
            .map(|steps| {
                let over = steps.as_deref().filter(|_| small).and_then(|steps| {
                    let same = steps.len() == self.labels.len()
                        && steps.iter().zip(&*self.labels).all(|((l, _), m)| l == m);
                    same.then(|| {
                        (0u32..)
                            .zip(steps)
                            .filter_map(|(i, &(_, src))| match src {
                                Src::Arg(j) => Some((i, j)),
                                Src::Input(_) => None,
                            })
                            .collect()
                    })
                });
                OutPlan { steps, over }
            })
            .collect();
        if self.take.is_empty() {
            // A box with no output variant: nothing is inherited, but the
            // plan must still tell itself from none.
            self.take.push(SmallVec::new());
        }
    }

    /// The [`Slot`] steps of variant `variant` (1-based; `None` out of
    /// range, or for a variant that names a label twice).
    #[inline]
    pub(crate) fn steps(&self, variant: usize) -> Option<&[(Label, Src)]> {
        self.out(variant)?.steps.as_deref()
    }

    /// Variant `variant`'s outputs as the input with values overwritten
    /// (1-based; `None` out of range or when they are not): the
    /// positions in the record and the arguments of the values written.
    #[inline(always)]
    pub(crate) fn over(&self, variant: usize) -> Option<&[(u32, u32)]> {
        self.out(variant)?.over.as_deref()
    }

    /// How variant `variant`'s outputs are built (1-based; `None` out of
    /// range).
    #[inline(always)]
    pub(crate) fn out(&self, variant: usize) -> Option<&OutPlan> {
        self.outs.get(variant.wrapping_sub(1))
    }

    /// [`Inherit::out`] of a variant in range.
    ///
    /// # Safety
    /// The plan is made, and `variant` is at least 1 and at most the
    /// count of output variants it was made for.
    #[inline(always)]
    pub(crate) unsafe fn out_declared(&self, variant: usize) -> &OutPlan {
        debug_assert!(variant >= 1 && variant <= self.outs.len());
        // SAFETY: see the contract.
        unsafe { self.outs.get_unchecked(variant - 1) }
    }

    /// The positions variant `variant` (1-based, in range) inherits.
    #[inline]
    pub(crate) fn take(&self, variant: usize) -> &[u32] {
        &self.take[variant - 1]
    }

    /// The positions of the box's input labels, in signature order.
    #[inline]
    pub(crate) fn args(&self) -> &[u32] {
        &self.args
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

pub(crate) struct BoxEntity {
    t: Arc<BoxTemplate>,
    next: Arc<Entity>,
    mode: Mode,
    /// The state of calls, behind one pointer (entities move by value
    /// through `Kind`, which stays small) and at a stable address.
    c: Box<Calls>,
}

/// A box entity's calls.
struct Calls {
    /// Input parked while a field argument is fetched from another node.
    parked: crate::dist::fields::Parked,
    /// The call in progress: the box, its input record and the outputs not
    /// sent yet (see [`crate::callstack`]).
    io: CallIo,
    /// In a lane, the call's sequence number.
    seq: u64,
    /// The stack of the call in progress while it is suspended.
    suspended: Option<Box<CallStack>>,
    /// Whether the call in progress was ever suspended (it is then in the
    /// node's list of suspended entities until it returns).
    listed: bool,
    /// Distributed runs: items ready to be processed that came after the
    /// record whose call is suspended (they go on once it returns).
    deferred: VecDeque<Item>,
}

impl BoxEntity {
    pub(crate) fn new(rt: &Runtime, t: Arc<BoxTemplate>, next: Arc<Entity>) -> BoxEntity {
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
        BoxEntity::with_mode(t, imp, next, mode)
    }

    fn with_mode(
        t: Arc<BoxTemplate>,
        imp: Arc<dyn BoxImpl>,
        next: Arc<Entity>,
        mode: Mode,
    ) -> BoxEntity {
        BoxEntity {
            c: Box::new(Calls {
                io: CallIo {
                    imp,
                    def: t.def.clone(),
                    input: Record::new(),
                    input_at: std::ptr::null_mut(),
                    inherit: Inherit::default(),
                    det: Stamps::new(),
                    origin: Origin::NONE,
                    outs: Vec::new(),
                    call_outs: 0,
                    error: None,
                    more: std::ptr::null_mut(),
                    pulled: 0,
                    taken: 0,
                    drop_last: true,
                    next: std::ptr::null_mut(),
                    end: std::ptr::null_mut(),
                    now: &crate::stuck::NOBODY,
                    ended: false,
                },
                parked: Default::default(),
                seq: 0,
                suspended: None,
                listed: false,
                deferred: VecDeque::new(),
            }),
            t,
            next,
            mode,
        }
    }

    /// The box's name.
    pub(crate) fn name(&self) -> &str {
        &self.t.def.name
    }

    fn error(&self, error: BoxError, ctx: &Ctx) -> EngineError {
        EngineError::Box {
            name: self.t.def.name.clone(),
            error,
            loc: ctx.rt.loc(self.t.node),
        }
    }

    /// Refuses a record that lacks one of the box's input labels.
    #[inline]
    fn check_input(&self, rec: &Record, ctx: &Ctx) -> Result<(), EngineError> {
        if rec.matches(&self.t.input) {
            return Ok(());
        }
        Err(self.error(
            BoxError::WrongInput {
                record: record_type(rec),
                takes: self.t.input.clone(),
            },
            ctx,
        ))
    }

    /// Starts a call on `rec`, after checking it against the box's input
    /// labels (once per label set: consecutive records of one set, the
    /// common case, reuse the inheritance plan and its check).
    #[inline(always)]
    fn start(&mut self, rec: Rec, ctx: &mut Ctx, me: &Arc<Entity>) -> Result<(), EngineError> {
        debug_assert!(
            self.c.suspended.is_none(),
            "a call while another is suspended"
        );
        if !self.c.io.inherit.fits(&rec.rec) {
            self.replan(&rec.rec, ctx)?;
        }
        self.c.io.input = rec.rec;
        self.c.io.det = rec.det;
        self.c.io.origin = rec.origin;
        self.c.io.call_outs = self.c.io.outs.len();
        let stack = match ctx.stacks.take() {
            Ok(s) => s,
            Err(e) => return Err(self.no_stack(e, ctx)),
        };
        self.run(stack, ctx, me)
    }

    #[cold]
    #[inline(never)]
    fn replan(&mut self, rec: &Record, ctx: &Ctx) -> Result<(), EngineError> {
        self.check_input(rec, ctx)?;
        self.c
            .io
            .inherit
            .plan(rec, &self.t.input, &self.t.def.inputs, &self.t.def.outputs);
        Ok(())
    }

    #[cold]
    fn no_stack(&mut self, e: std::io::Error, ctx: &Ctx) -> EngineError {
        self.c.io.input = Record::new();
        let os_error = e.raw_os_error();
        self.error(BoxError::NoCallStack { os_error }, ctx)
    }

    /// A suspended call goes on, if the node's backlog allows.
    fn wake(&mut self, ctx: &mut Ctx, me: &Arc<Entity>) -> Result<(), EngineError> {
        let Some(stack) = self.c.suspended.take() else {
            return Ok(());
        };
        // Back-pressure: while entities of this node that can run have a
        // backlog (another worker producing faster than the rest drains),
        // do not add to it. Items waiting at suspended entities (this one's
        // included) do not count: they cannot drain before those go on.
        if ctx.backlog_elsewhere() >= BACKLOG_LIMIT {
            self.c.suspended = Some(stack);
            ctx.yield_pinned();
            return Ok(());
        }
        self.run(stack, ctx, me)
    }

    /// Runs the call on `stack` until it is suspended (after a batch of
    /// outputs, which are sent) or returns.
    #[inline(always)]
    fn run(
        &mut self,
        mut stack: Box<CallStack>,
        ctx: &mut Ctx,
        me: &Arc<Entity>,
    ) -> Result<(), EngineError> {
        // The live dump sees the call (stuck.rs).
        let now = ctx.now;
        if let Some(now) = now {
            let held = if ctx.taken_from(me) {
                ctx.taken.len()
            } else {
                0
            };
            now.enter(self.t.node, me, ctx.unflushed_queued(), held);
        }
        // Instrumented: when the call (or its continuation: it was
        // suspended) started (traced runs only), and whether it was.
        let traced = ctx.log.as_ref().map(|l| {
            let t0 = if l.trace {
                crate::instrument::now_ns()
            } else {
                0
            };
            (t0, self.c.listed)
        });
        // Runs of calls (see `crate::callstack`): the call stack may take
        // further inputs from the items the worker took from this entity's
        // inbox — for a box called inline, in a run on one node (a distributed
        // run's box checks each input's fields first), not traced or
        // profiled (each call is logged on its own).
        let worker = ctx.stacks.worker();
        let runs = matches!(self.mode, Mode::Inline)
            && ctx.taken_from(me)
            && !ctx.rt.net.distributed()
            && traced.is_none();
        self.c.io.more = if runs {
            &mut ctx.taken
        } else {
            std::ptr::null_mut()
        };
        self.c.io.now = now.unwrap_or(&crate::stuck::NOBODY);
        // SAFETY: `self.c.io` stays in place (the entity's state) and is only
        // touched between resumes, until the call returns; `ctx.taken` is
        // not touched until `resume` returns.
        let ev = unsafe { stack.resume(&mut self.c.io, worker) };
        ctx.pulled += self.c.io.end_pulls();
        if let Some(now) = now {
            now.leave();
        }
        if let Some((t0, resumed)) = traced {
            self.log_call(ctx, t0, resumed, matches!(ev, Event::Batch));
        }
        match ev {
            Event::Batch => {
                self.send_outs(false, ctx);
                self.c.io.call_outs = 0;
                self.c.suspended = Some(stack);
                ctx.rt.set_suspended(me, &mut self.c.listed, true);
                ctx.rt.suspensions.fetch_add(1, Ordering::Relaxed);
                // Downstream runs first, front first; the call goes on with `Wake`.
                ctx.yield_pinned();
                Ok(())
            }
            Event::Done => {
                ctx.stacks.give(stack);
                ctx.rt.set_suspended(me, &mut self.c.listed, false);
                let r = match self.c.io.error.take() {
                    None => {
                        self.send_outs(true, ctx);
                        Ok(())
                    }
                    Some(e) => {
                        // The calls of the run before the failing one
                        // finished: their outputs go on (nothing lost);
                        // the failing call's do not.
                        let done = std::mem::take(&mut self.c.io.call_outs);
                        self.c.io.outs.truncate(done);
                        if done > 0 {
                            self.send_outs(true, ctx);
                        }
                        self.c.io.outs.clear();
                        Err(self.error(e, ctx).caused_by(self.c.io.origin))
                    }
                };
                // The input's fields are released when the call returns,
                // and its custody token (the outputs hold their own).
                self.c.io.input = Record::new();
                drop(self.c.io.det.take_custody());
                if self.c.io.outs.capacity() > 2 * YIELD_AFTER {
                    self.c.io.outs = Vec::new();
                }
                r
            }
        }
    }

    #[cold]
    #[inline(never)]
    fn log_call(&self, ctx: &mut Ctx, t0: u64, resumed: bool, suspended: bool) {
        if let Some(log) = ctx.log.as_deref_mut() {
            let t1 = if log.trace {
                crate::instrument::now_ns()
            } else {
                0
            };
            log.call(self.t.node, resumed, t0, t1, suspended);
        }
    }

    /// Sends the outputs the call emitted so far (inheritance was added
    /// as they were emitted);
    /// `finished`: the call returned.
    #[inline(always)]
    fn send_outs(&mut self, finished: bool, ctx: &mut Ctx) {
        // A `Vec` and a `VecDeque` trade buffers in O(1) (the deque
        // comes back empty, so it needs no rotation either).
        let outs = VecDeque::from(std::mem::take(&mut self.c.io.outs));
        if let Mode::Lane { order } = &self.mode {
            order.deliver(self.c.seq, outs, finished, ctx);
            return;
        }
        let mut outs = outs;
        ctx.send_all(&self.next, &mut outs);
        self.c.io.outs = Vec::from(outs);
    }

    /// Processes one item. In a distributed run a record whose field
    /// arguments are not all on this node yet is parked (with everything
    /// behind it, to keep the stream's order) until they arrive: the
    /// worker goes on with other work, and [`Item::Wake`] resumes the box.
    pub(crate) fn process(
        &mut self,
        item: Item,
        ctx: &mut Ctx,
        me: &Arc<Entity>,
    ) -> Result<(), EngineError> {
        if !ctx.rt.net.distributed() || matches!(self.mode, Mode::Lane { .. }) {
            return self.step(item, ctx, me);
        }
        if self.c.suspended.is_some() {
            // Only the scheduler's `Wake` reaches an entity whose call is
            // suspended (it keeps its licence meanwhile).
            debug_assert!(matches!(item, Item::Wake));
            self.step(item, ctx, me)?;
        } else {
            let inputs = &self.t.def.inputs;
            let ready = |rec: &Record| {
                let fields = inputs.iter().copied().filter(|l| l.is_field());
                crate::dist::fields::ensure_local(rec, fields, me, ctx)
            };
            let now = self.c.parked.admit(item, ready);
            self.c.deferred.extend(now);
        }
        while self.c.suspended.is_none() {
            let Some(it) = self.c.deferred.pop_front() else {
                break;
            };
            // Parked records are stepped later, for another item: each
            // names its own input record.
            let origin = it.origin();
            self.step(it, ctx, me).map_err(|e| e.caused_by(origin))?;
        }
        Ok(())
    }

    fn step(&mut self, item: Item, ctx: &mut Ctx, me: &Arc<Entity>) -> Result<(), EngineError> {
        match &mut self.mode {
            Mode::Inline => match item {
                Item::Rec(r) => self.start(r, ctx, me),
                Item::Wake => self.wake(ctx, me),
                other => {
                    ctx.send(&self.next, other);
                    Ok(())
                }
            },
            Mode::Lane { .. } => match item {
                Item::Rec(mut r) => {
                    self.c.seq = r.det.pop().expect("the dispatcher stamps every record");
                    self.start(r, ctx, me)
                }
                Item::Wake => self.wake(ctx, me),
                _ => unreachable!("a box lane receives only records from its dispatcher"),
            },
            Mode::Dispatch { .. } => self.dispatch(item, ctx),
        }
    }

    /// Concurrency above 1: numbers the item and hands a record to the
    /// next lane (step 1 of the protocol in the module docs).
    fn dispatch(&mut self, item: Item, ctx: &mut Ctx) -> Result<(), EngineError> {
        if let Item::Rec(r) = &item {
            self.check_input(&r.rec, ctx)?;
        }
        let Mode::Dispatch {
            lanes,
            width,
            rr,
            seq,
            order,
        } = &mut self.mode
        else {
            unreachable!("only the dispatcher dispatches")
        };
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
        let Item::Rec(Rec {
            rec,
            mut det,
            origin,
        }) = item
        else {
            order.deliver(s, VecDeque::from([item]), true, ctx);
            return Ok(());
        };
        // Round robin over the lanes, counting records only.
        let k = *rr % *width;
        *rr += 1;
        if k == lanes.len() {
            let lane = BoxEntity::with_mode(
                self.t.clone(),
                self.c.io.imp.clone(),
                self.next.clone(),
                Mode::Lane { order },
            );
            let lane = ctx.entity(Kind::Box(lane));
            lane.tag(self.t.node);
            lanes.push(lane);
        }
        det.push(s);
        let lane = lanes[k].clone();
        ctx.send(&lane, Item::Rec(Rec { rec, det, origin }));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use snet_core::Value;

    fn rec(labels: &[Label]) -> Record {
        let mut r = Record::new();
        for (i, l) in labels.iter().enumerate() {
            r.set(*l, Value::Int(i as i64));
        }
        r
    }

    /// The plan gives each input label's position in records of the
    /// planned set, in signature order (not label order), and a position
    /// past the end for a label the record lacks; the steps of an output
    /// variant take its values and the inherited entries in label order.
    #[test]
    fn a_plan_places_the_arguments_and_the_outputs() {
        let (a, b, c, z) = (
            Label::tag("pa"),
            Label::tag("pb"),
            Label::tag("pc"),
            Label::tag("pz"),
        );
        let r = rec(&[a, b, c]);
        let pos = |l: Label| r.labels().position(|m| m == l).map(|i| i as u32);
        let mut p = Inherit::default();
        assert!(!p.fits(&r));
        let pattern = Variant::new([c, a]);
        p.plan(&r, &pattern, &[c, a, z], &[vec![a], vec![]]);
        assert!(p.fits(&r));
        assert_eq!(p.args(), &[pos(c).unwrap(), pos(a).unwrap(), u32::MAX][..]);
        // Variant 1 carries `a` (argument 0) and inherits `b`, in label order.
        let mut want = [(a, Src::Arg(0)), (b, Src::Input(pos(b).unwrap()))];
        want.sort_by_key(|(l, _)| *l);
        assert_eq!(p.steps(1), Some(&want[..]));
        assert_eq!(p.steps(2), Some(&[(b, Src::Input(pos(b).unwrap()))][..]));
        assert_eq!(p.steps(0), None);
        assert_eq!(p.steps(3), None);
        assert!(!p.fits(&rec(&[a, b])));
    }

    /// The check of a run's next input (`same_set`): exactly the planned
    /// labels, for sets that take the unrolled check (up to four labels,
    /// entries inline) and for the rest (more labels, entries on the heap).
    #[test]
    fn a_runs_next_input_has_exactly_the_planned_labels() {
        let l: Vec<Label> = (0..6).map(|i| Label::tag(&format!("ss{i}"))).collect();
        let plan = |labels: &[Label]| {
            let mut p = Inherit::default();
            p.plan(&rec(labels), &Variant::new([]), &[], &[]);
            p
        };
        for n in 0..=6 {
            let p = plan(&l[..n]);
            assert!(p.same_set(&rec(&l[..n])), "{n} labels");
            // On the heap, with the same labels.
            let mut heap = Record::with_capacity(8);
            for (i, m) in l[..n].iter().enumerate() {
                heap.set(*m, Value::Int(i as i64));
            }
            assert!(heap.spilled());
            assert!(p.same_set(&heap), "{n} labels on the heap");
            // One label fewer, one more.
            if n > 0 {
                assert!(!p.same_set(&rec(&l[..n - 1])), "{n} labels, one fewer");
            }
            if n < 6 {
                assert!(!p.same_set(&rec(&l[..n + 1])), "{n} labels, one more");
            }
            // As many labels, one of them another.
            for k in 0..n {
                let mut other = l[..n].to_vec();
                other[k] = Label::tag("ss-other");
                other.sort();
                assert!(!p.same_set(&rec(&other)), "{n} labels, {k} another");
            }
        }
    }

    /// The unrolled check made for a plan's count of labels
    /// (`same_inline_set_of`, one to four): exactly the planned labels,
    /// inline; a record on the heap is left to the general check.
    #[test]
    fn a_runs_next_input_checked_for_its_count_of_labels() {
        let l: Vec<Label> = (0..6).map(|i| Label::tag(&format!("sf{i}"))).collect();
        fn check<const L: usize>(l: &[Label]) {
            let mut p = Inherit::default();
            p.plan(&rec(&l[..L]), &Variant::new([]), &[], &[]);
            assert_eq!(p.few(), Some(L));
            assert!(p.same_inline_set_of::<L>(&rec(&l[..L])), "{L} labels");
            let mut heap = Record::with_capacity(8);
            for (i, m) in l[..L].iter().enumerate() {
                heap.set(*m, Value::Int(i as i64));
            }
            assert!(!p.same_inline_set_of::<L>(&heap), "{L} labels on the heap");
            assert!(p.same_set(&heap), "{L} labels on the heap");
            assert!(
                !p.same_inline_set_of::<L>(&rec(&l[..L - 1])),
                "{L}, one fewer"
            );
            assert!(
                !p.same_inline_set_of::<L>(&rec(&l[..L + 1])),
                "{L}, one more"
            );
            for k in 0..L {
                let mut other = l[..L].to_vec();
                other[k] = Label::tag("sf-other");
                other.sort();
                assert!(!p.same_inline_set_of::<L>(&rec(&other)), "{L}, {k} another");
            }
        }
        check::<1>(&l);
        check::<2>(&l);
        check::<3>(&l);
        check::<4>(&l);
        let mut p = Inherit::default();
        p.plan(&rec(&l[..5]), &Variant::new([]), &[], &[]);
        assert_eq!(p.few(), None, "five labels");
    }

    /// A variant whose outputs carry exactly the input's labels (tags,
    /// inline) is planned as the input with its values written over:
    /// the positions and arguments are its steps' `Src::Arg`s; any other
    /// variant, a set with a field and a set too big to be inline have
    /// no such plan.
    #[test]
    fn outputs_with_the_inputs_labels_are_planned_as_overwrites() {
        let (x, y, k) = (Label::tag("ox"), Label::tag("oy"), Label::btag("ok"));
        let r = rec(&[x, y, k]);
        let pos = |l: Label| r.labels().position(|m| m == l).unwrap() as u32;
        let mut p = Inherit::default();
        // box ((ox, oy) -> (oy, ox) | (ox) | (ox, oy, <ok>) | (ox, ox)).
        let pattern = Variant::new([x, y]);
        let outs = [vec![y, x], vec![x], vec![x, y, k], vec![x, x]];
        p.plan(&r, &pattern, &[x, y], &outs);
        let mut want = [(pos(y), 0), (pos(x), 1)];
        want.sort();
        assert_eq!(p.over(1), Some(&want[..]));
        assert_eq!(p.over(2), None, "ox alone lacks oy");
        let mut want = [(pos(x), 0), (pos(y), 1), (pos(k), 2)];
        want.sort();
        assert_eq!(
            p.over(3),
            Some(&want[..]),
            "<ok> overwritten, not inherited"
        );
        assert_eq!(p.over(4), None, "a label named twice has no steps");
        assert_eq!((p.over(0), p.over(5)), (None, None));
        // A field among the labels, or more than fit inline: none.
        let f = Label::field("of");
        let rf = rec(&[f, x]);
        p.plan(&rf, &Variant::new([x]), &[x], &[vec![x]]);
        assert_eq!(p.over(1), None);
        let wide: Vec<Label> = (0..=Record::INLINE)
            .map(|i| Label::tag(&format!("ow{i}")))
            .collect();
        p.plan(
            &rec(&wide),
            &Variant::new([wide[0]]),
            &wide[..1],
            &[wide[..1].to_vec()],
        );
        assert_eq!(p.over(1), None);
    }
}
