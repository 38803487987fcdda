//! Box calls on stacks of their own, so that a call can be suspended.
//!
//! A box may emit any number of records in one call. Rather than hold them
//! all until it returns, the engine runs every box call on a *call stack*
//! (a stackful coroutine, `corosensei`, on an `mmap`ed stack with a guard
//! page): the box's emits are collected in the call's [`CallIo`], and after
//! [`YIELD_AFTER`] of them the call is suspended — control comes back to
//! the worker, which sends that batch downstream and lets the network
//! consume it before it resumes the call (the protocol is in
//! [`crate::boxes`]). A call that emits fewer records costs one switch onto
//! its stack and one back.
//!
//! **Runs of calls.** When the call returns, the coroutine does not switch
//! back at once if the worker has more records for the same entity in hand
//! (the items it took from the entity's inbox, [`CallIo::more`]): it takes
//! the next one, if it is a record of the label set the call's inheritance
//! was planned for, and calls the box again, on the same stack, while
//! fewer than [`YIELD_AFTER`] outputs wait. The outputs of the whole run
//! go downstream together when it comes back ([`Event::Done`]). So a box
//! that emits one record per call switches stacks about twice per batch of
//! inputs instead of twice per call. The run is the box implementation's
//! to drive ([`BoxImpl::invoke_run`], taking each further input with
//! [`Emitter::next_input`]), so that a language interface sets up what the
//! calls of a run share once (C4SNet: its thread slot, the collector,
//! the arguments' positions in the run's label set). A call in a run is suspended exactly
//! as a lone one is: after [`YIELD_AFTER`] outputs of its own (at most
//! `2 * YIELD_AFTER - 1` wait then).
//!
//! Each worker keeps a few free stacks ([`Stacks`]); a call that is
//! suspended keeps its stack until it returns, and the worker takes
//! another one for its next call.
//!
//! **A suspended call is resumed on the worker that started it.** Box code
//! (C in particular) may keep the address of thread-local data (`errno`,
//! `__thread` variables, the C4SNet interface's own slot) across a call to
//! `C4SNetOut`; moving the call to another thread would make it use that
//! thread's copy. [`CallStack`] records its worker and is only resumed there
//! (the scheduler keeps such a box's `Wake` in the worker's own list of
//! pinned tasks, which other workers never take).
//!
//! **Stack overflow.** The stack's guard page turns an overflow into
//! `SIGSEGV` at an address just below the stack. [`in_guard`] tells a
//! signal handler (the C4SNet crash report) that the fault was an
//! overflow of the running call's stack: while a call runs, the worker's
//! thread-local [`GUARD`] slot holds its guard page's range.

use std::cell::Cell;
use std::ptr::NonNull;

#[cfg(not(miri))]
use corosensei::stack::{DefaultStack, Stack};
use corosensei::Yielder;
#[cfg(not(miri))]
use corosensei::{Coroutine, CoroutineResult};
use snet_core::{BoxDef, Record};

use crate::boxes::{BoxImpl, Emit, Over, OverNow, Slot, Steps, TagOutput};
use crate::entity::{Item, Origin, Rec, Stamps};
use crate::error::BoxError;

pub(crate) use crate::runtime::YIELD_AFTER;

/// A box call is also suspended (its outputs so far go downstream) once
/// they hold this many bytes of field values made during the call (see
/// [`Emitter`]'s `batch_full`): 16 MiB, a few big arrays.
pub(crate) const YIELD_AFTER_BYTES: usize = 16 << 20;

/// The default size of a box's call stack ([`crate::Config::box_stack`]).
pub const DEFAULT_STACK: usize = 8 << 20;

/// Free stacks a worker keeps for its next calls.
const KEEP_FREE: usize = 2;

/// What one box call reads and writes. Owned by the box entity, whose
/// state has a stable address while a call is in progress; the call sees it
/// only through the raw pointer each resume passes in.
pub(crate) struct CallIo {
    pub imp: std::sync::Arc<dyn BoxImpl>,
    pub def: std::sync::Arc<BoxDef>,
    /// The input record (the box reads it during the whole call), where
    /// [`CallIo::input_at`] is not elsewhere. Every input of a run whose
    /// planned label set has at most [`Record::INLINE`] labels is inline
    /// (one on the heap is moved inline as the run takes it: [`calls`],
    /// [`CallIo::pull`]), so that the interface and the output path read
    /// its entries without a look at where they are.
    pub input: Record,
    /// Where the input of the call in progress is, while the call stack
    /// runs: [`CallIo::input`], or a record in the worker's buffer
    /// ([`CallIo::more`]) whose item was taken and forgotten (a run's
    /// further input, read where it is instead of moved into the call:
    /// nothing writes a taken item's place in the buffer until the stack
    /// switches back). Before every switch back ([`CallIo::settle`]) the
    /// record is moved into `input`, so that the worker only ever sees
    /// it there. While it is elsewhere, `input` owns nothing (the run's
    /// first input once it needed no drop, or an empty record).
    pub(crate) input_at: *mut Record,
    /// What the outputs inherit from `input` (planned for its label set).
    pub inherit: crate::boxes::Inherit,
    /// The stamps and origin of the input, which every output carries.
    pub det: Stamps,
    pub origin: Origin,
    /// Outputs emitted since the worker last took them (at most
    /// `2 * YIELD_AFTER - 1`, in a run of calls), inheritance added, ready
    /// to send.
    pub outs: Vec<Item>,
    /// How many of [`CallIo::outs`] were waiting when the call in
    /// progress started or last went on (none then: the worker took a
    /// suspended call's batch), emitted by calls before it (a run of
    /// calls): if the current call fails, those calls finished, and their
    /// outputs are still sent (nothing lost). The call's batch is full
    /// [`YIELD_AFTER`] outputs later ([`Emitter::yield_at`]).
    pub call_outs: usize,
    /// The error the call returned, set with [`Event::Done`].
    pub error: Option<BoxError>,
    /// During one resume: the worker's items taken from this entity's
    /// inbox and not processed yet, from which the call stack takes the
    /// inputs of further calls (see the module docs); null: none are taken.
    pub(crate) more: *mut std::collections::VecDeque<Item>,
    /// Calls started from [`CallIo::more`] since the worker last looked
    /// (it counts them as items processed), those of items still in
    /// `more` ([`CallIo::taken`]) not included.
    pub(crate) pulled: usize,
    /// Items at the front of [`CallIo::more`] whose inputs calls took and
    /// that are still there: each stays a valid item (its record dropped
    /// and left empty, or one that needs no drop, or the input of the
    /// call in progress; its stamps taken, bare ones left), and all are
    /// removed at once, without a drop, before the stack switches back
    /// ([`CallIo::settle`]), instead of one `pop_front` per call.
    pub(crate) taken: usize,
    /// Whether the call's input may need a drop when the next input of
    /// the run replaces it (`false`: a record of tags alone, inline, as
    /// the plan's unrolled label check found it); `true` at a run's start.
    pub(crate) drop_last: bool,
    /// The front item of `more` and the end of the contiguous part of its
    /// buffer it is in (`next == end`: found from `more` again, at the
    /// first pull of a resume and where the buffer wraps around): each
    /// pull looks at its item there, without working out the front's
    /// place in the ring buffer (`pop_front` still does, to take it).
    /// Both null while `more` is.
    pub(crate) next: *mut Item,
    pub(crate) end: *mut Item,
    /// The worker's live-dump slot while the calls run ([`crate::stuck::NOBODY`]:
    /// none; never null).
    pub(crate) now: *const crate::stuck::WorkerNow,
    /// The run ends with the call in progress ([`Emitter::end_run`]: it
    /// failed); set `false` when a run starts.
    pub(crate) ended: bool,
}

impl CallIo {
    /// Takes the next input from [`CallIo::more`] into the call, if there
    /// is one that may run at once: a record of the planned label set,
    /// fewer than [`YIELD_AFTER`] outputs waiting (a run has no error so
    /// far: it ends at its first). Gives the input (where
    /// [`CallIo::input_at`] now is); `None`: the run ends here.
    ///
    /// `L`: the count of labels of the planned set, when the caller
    /// knows it ([`Emitter::next_input_of`]; 0: not known): 0 or the
    /// plan's [`Inherit::few`](crate::boxes::Inherit::few), else a record
    /// of fewer labels would pass.
    #[inline(always)]
    fn pull<const L: usize>(&mut self) -> Option<NonNull<Record>> {
        // No error here: a call's error is only stored once the run
        // returned (`calls`), and a run stops at its first one.
        debug_assert!(self.error.is_none());
        let base = self.outs.len();
        if base >= YIELD_AFTER {
            return None;
        }
        // Without items to take (`more` null) or once the run ended,
        // `next == end` (`find_next` then says there is none).
        if self.next == self.end && !self.find_next() {
            return None;
        }
        // SAFETY: `next` is an item of `more`, the worker's buffer for the
        // duration of this resume (see `CallStack::resume`), which nothing
        // else touches while the call stack runs (`find_next`).
        let item = unsafe { &mut *self.next };
        let Item::Rec(r) = item else {
            return None;
        };
        // The run's first input was planned for (`BoxEntity::start`). A
        // set of at most four labels (pipe10's two, most records) is
        // compared without a loop, and such a record is inline; with
        // bare stamps (the last input's and this one's, one test: most
        // records) that is all. Any other is taken the general way.
        let inline = if L == 0 {
            self.inherit.same_inline_set(&r.rec)
        } else {
            self.inherit.same_inline_set_of::<L>(&r.rec)
        };
        if !(inline && Stamps::both_bare(&self.det, &r.det)) {
            return self.pull_other(base, r);
        }
        self.call_outs = base;
        // The call reads the record where it is, in the worker's buffer
        // (`input_at`): the last input is dropped where it is (when it
        // may need a drop at all), and the buffer's item left there,
        // taken (below). Bare stamps are neither dropped nor taken out
        // of the item (which drops them as nothing if it is ever
        // dropped).
        if self.drop_last {
            self.drop_last_input();
        }
        self.input_at = &mut r.rec;
        self.taken_one(r.origin);
        Some(NonNull::from(&mut r.rec))
    }

    /// [`CallIo::pull`] for an input not inline or with stamps (or after
    /// one with stamps): its label set compared the general way, the
    /// record moved inline when it fits there (every input of a run
    /// whose set fits is inline: see [`CallIo::input`]), its stamps
    /// taken into the call.
    #[cold]
    #[inline(never)]
    fn pull_other(&mut self, base: usize, r: &mut Rec) -> Option<NonNull<Record>> {
        if !self.inherit.same_inline_set(&r.rec) {
            if !self.inherit.same_set_slow(&r.rec) {
                return None;
            }
            if self.inherit.few().is_some() {
                r.rec.shrink_to_fit();
            }
        }
        self.call_outs = base;
        if self.drop_last {
            self.drop_last_input();
        }
        if r.rec.spilled() {
            self.drop_last = true;
        }
        self.input_at = &mut r.rec;
        // The stamps move into the call.
        if !self.det.is_bare() {
            drop(std::mem::take(&mut self.det));
        }
        if !r.det.is_bare() {
            // `self.det` is bare now: the item is left a bare one.
            std::mem::swap(&mut self.det, &mut r.det);
        }
        self.taken_one(r.origin);
        Some(NonNull::from(&mut r.rec))
    }

    /// The rest of taking the next input (its record in place, its
    /// stamps in the call): its origin, the item counted as taken, the
    /// live dump told.
    #[inline(always)]
    fn taken_one(&mut self, origin: Origin) {
        self.origin = origin;
        // SAFETY: `next < end`, the end of its part of the buffer: the
        // item after it in `more`, if any, is there.
        self.next = unsafe { self.next.add(1) };
        self.taken += 1;
        // SAFETY: the slot lives as long as the run (`Runtime::now`, or
        // the static `stuck::NOBODY`).
        unsafe { (*self.now).again() };
    }

    /// Drops the call's input where it is, if it needs a drop (before the
    /// next input of the run replaces it), and leaves an empty record
    /// there (also if dropping it unwinds): `input` then owns nothing
    /// (see `input_at`), and an item of the buffer a valid one.
    #[cold]
    #[inline(never)]
    fn drop_last_input(&mut self) {
        struct Refill(*mut Record);
        impl Drop for Refill {
            fn drop(&mut self) {
                // SAFETY: the record was dropped: overwritten, not dropped again.
                unsafe { std::ptr::write(self.0, Record::new()) }
            }
        }
        let last = self.input_at;
        self.drop_last = self.inherit.has_fields();
        // SAFETY: `input_at` is the call's input, valid while the call
        // stack runs; it is overwritten right after by the guard, without
        // being dropped again.
        if self.inherit.needs_drop(unsafe { &*last }) {
            let _refill = Refill(last);
            // SAFETY: as above.
            unsafe { std::ptr::drop_in_place(last) };
        }
    }

    /// Moves the call's input into [`CallIo::input`] if it is in the
    /// worker's buffer (see [`CallIo::input_at`]): before the call stack
    /// switches back to the worker.
    #[inline(always)]
    fn settle(&mut self) {
        let own: *mut Record = &mut self.input;
        if self.input_at != own {
            // SAFETY: the record at `input_at` was taken from the buffer
            // (its item forgotten): it moves into `input`, which owns
            // nothing while the input is elsewhere (overwritten without
            // a drop).
            unsafe { std::ptr::copy_nonoverlapping(self.input_at, own, 1) };
            self.input_at = own;
        }
        self.forget_taken();
    }

    /// Removes the items whose inputs calls took from the front of
    /// [`CallIo::more`] without dropping them (their records and stamps
    /// are the calls', or nothing), and counts them in
    /// [`CallIo::pulled`].
    #[inline(always)]
    fn forget_taken(&mut self) {
        let k = std::mem::take(&mut self.taken);
        if k > 0 {
            self.pulled += k;
            // SAFETY: as in `pull`; `more` holds at least the `k` items.
            let more = unsafe { &mut *self.more };
            let len = more.len();
            if k == len {
                // All of them (a run that took every item the worker
                // had): a drain of the whole, leaked, loses them all
                // without a drop, in one step.
                std::mem::forget(more.drain(..));
            }
            // Those still there (a run that stopped before the end, or
            // a drain that left some behind when leaked), one by one.
            for _ in 0..more.len() - (len - k) {
                std::mem::forget(more.pop_front());
            }
        }
    }

    /// Points `next` and `end` at the front item of `more` and the end
    /// of its contiguous part; `false`: `more` is empty, or null (no
    /// items to take: `next` and `end` are null then), or the run ended
    /// ([`CallIo::ended`]).
    #[cold]
    #[inline(never)]
    fn find_next(&mut self) -> bool {
        if self.more.is_null() || self.ended {
            return false;
        }
        // SAFETY: as in `pull`.
        let more = unsafe { &mut *self.more };
        // The first item not taken: the first part is empty only when the
        // whole is.
        let (a, b) = more.as_mut_slices();
        let t = self.taken;
        let part = if t < a.len() {
            &mut a[t..]
        } else {
            &mut b[t - a.len()..]
        };
        let range = part.as_mut_ptr_range();
        (self.next, self.end) = (range.start, range.end);
        self.next != self.end
    }

    /// After a resume: forgets `more` (and the place in it), and returns
    /// how many calls took their input from it ([`CallIo::pulled`]).
    pub(crate) fn end_pulls(&mut self) -> usize {
        // `settle` removed them before the stack switched back.
        debug_assert_eq!(self.taken, 0);
        self.more = std::ptr::null_mut();
        (self.next, self.end) = (std::ptr::null_mut(), std::ptr::null_mut());
        std::mem::take(&mut self.pulled)
    }
}

/// Why a call came back to the worker.
pub(crate) enum Event {
    /// [`YIELD_AFTER`] outputs are waiting in [`CallIo::outs`]; the call is suspended.
    Batch,
    /// The call returned (its last outputs are in [`CallIo::outs`], its
    /// error, if any, in [`CallIo::error`]).
    Done,
}

#[cfg(not(miri))]
type Co = Coroutine<*mut CallIo, Event, (), DefaultStack>;

/// A stack with a coroutine on it that runs box calls one after another.
pub(crate) struct CallStack {
    #[cfg(not(miri))]
    co: Co,
    /// The worker that may resume it (see the module docs).
    worker: usize,
    /// The guard page below the stack: `[lo, hi)`.
    guard: (usize, usize),
}

// SAFETY: a `CallStack` is moved between threads only while it is not
// running, and a suspended one is resumed only on the thread of its worker
// (`resume` checks the worker). The coroutine's frames (box code, the
// `Yielder`) therefore only ever run on the thread that created them.
unsafe impl Send for CallStack {}

thread_local! {
    /// The guard page of the call running on this thread (0, 0: none).
    static GUARD: Cell<(usize, usize)> = const { Cell::new((0, 0)) };
}

/// Whether `addr` is in the guard page of the call stack that runs on this
/// thread: a fault there is that call overflowing its stack. Async-signal
/// safe (a plain thread-local load).
pub fn in_guard(addr: usize) -> bool {
    let (lo, hi) = GUARD.with(Cell::get);
    lo <= addr && addr < hi
}

/// Collects a call's outputs; suspends the call when a batch is full
/// (never under Miri, which cannot switch stacks: calls run to the end).
///
/// Public so that a language interface can reach it without dynamic
/// dispatch per output ([`Emit::emitter`]): its [`Emitter::slot`] and
/// [`Emitter::commit_slot`] inline into the interface's output path.
pub struct Emitter {
    /// The call stack's yielder (null: the call cannot be suspended). It
    /// lives as long as the coroutine, which outlives every call on it.
    y: *const Yielder<*mut CallIo, Event>,
    io: *mut CallIo,
    /// Whether the output in the slot just taken fills the batch: its
    /// commit suspends the call ([`Slot::may_suspend`], worked out once
    /// by [`Emitter::slot`] for the interface and the commit alike).
    full: bool,
}

impl Emit for Emitter {
    #[inline]
    fn may_suspend(&self) -> bool {
        // SAFETY: as in `push`.
        let outs = unsafe { &*std::ptr::addr_of!((*self.io).outs) };
        !self.y.is_null()
            && (outs.len() >= self.yield_at() || snet_core::new_field_bytes() >= YIELD_AFTER_BYTES)
    }

    fn emit(&mut self, variant: usize, rec: Record) -> Result<(), BoxError> {
        self.check(variant)?;
        let mut rec = rec;
        // SAFETY: as in `push`.
        let (input, inherit) = unsafe {
            (
                &*(*self.io).input_at,
                &*std::ptr::addr_of!((*self.io).inherit),
            )
        };
        rec.inherit_at(input, inherit.take(variant));
        self.push(rec);
        Ok(())
    }

    #[inline]
    fn slot(&mut self, variant: usize) -> Option<Slot<'_>> {
        Emitter::slot(self, variant)
    }

    #[inline]
    fn commit_slot(&mut self) {
        Emitter::commit_slot(self);
    }

    #[inline]
    fn discard_slot(&mut self) {
        Emitter::discard_slot(self);
    }

    #[inline]
    fn emitter(&mut self) -> Option<&mut Emitter> {
        Some(self)
    }
}

impl Emitter {
    /// The input record of the call in progress (or about to start) in a
    /// run ([`BoxImpl::invoke_run`]). It stays unchanged until
    /// [`Emitter::next_input`], but may move when the call is suspended
    /// (an output may suspend it): a caller that keeps its address
    /// across outputs takes [`Emitter::own_input`]. In a run whose
    /// planned label set has at most four labels
    /// ([`Emitter::planned_few`]) it is inline, not
    /// [`Record::spilled`] (so [`Record::inline_entries_ptr`] may read it).
    #[inline(always)]
    pub fn input(&self) -> &Record {
        // SAFETY: as in `push`; the record is only written or moved by
        // `next_input` and the outputs, which take `self` mutably.
        unsafe { &*(*self.io).input_at }
    }

    /// [`Emitter::input`], moved where it stays until
    /// [`Emitter::next_input`] (the call's own place, not the worker's
    /// buffer): its address may be kept across outputs.
    #[inline]
    pub fn own_input(&mut self) -> *const Record {
        // SAFETY: as in `push`.
        unsafe {
            (*self.io).settle();
            std::ptr::addr_of!((*self.io).input)
        }
    }

    /// The positions of the box's input labels (signature order) in
    /// [`Emitter::input`]: planned once per label set, and the same for
    /// every input of a run. A position past the record's end: the label
    /// is missing.
    #[inline(always)]
    pub fn arg_positions(&self) -> &[u32] {
        // SAFETY: as in `push`; the plan only changes between runs.
        unsafe { (*std::ptr::addr_of!((*self.io).inherit)).args() }
    }

    /// Between two calls of a run ([`BoxImpl::invoke_run`]): moves the
    /// next input of the run into place, if there is one that may run at
    /// once (a record of the same label set, fewer than [`YIELD_AFTER`]
    /// outputs waiting); `false`: the run ends here.
    #[inline]
    pub fn next_input(&mut self) -> bool {
        // SAFETY: 0 is any plan's.
        unsafe { self.next_input_of::<0>() }.is_some()
    }

    /// The count of labels of the run's planned label set when it has at
    /// most four (`None`: more): what [`Emitter::next_input_of`] may be
    /// made for. The same for every call of a run.
    #[inline]
    pub fn planned_few(&self) -> Option<usize> {
        // SAFETY: as in `push`; the plan only changes between runs.
        unsafe { (*std::ptr::addr_of!((*self.io).inherit)).few() }
    }

    /// [`Emitter::next_input`] for a run whose planned label set has `L`
    /// labels ([`Emitter::planned_few`]; 0: not known, any count), known
    /// to the compiler: the next input's labels are then compared without
    /// a test of the count between them. Gives the next input, as
    /// [`Emitter::input`] would (so that the interface need not ask);
    /// `None`: the run ends here.
    ///
    /// # Safety
    /// `L` is 0 or the run's [`Emitter::planned_few`] (a record of fewer
    /// labels could pass for one of the set otherwise).
    #[inline(always)]
    pub unsafe fn next_input_of<const L: usize>(&mut self) -> Option<&Record> {
        debug_assert!(L == 0 || self.planned_few() == Some(L));
        // SAFETY: no call runs between two calls: the `CallIo` is this
        // stack's alone until it switches back; the record is the
        // call's input, as `input` gives it.
        unsafe { (*self.io).pull::<L>().map(|r| &*r.as_ptr()) }
    }

    /// Where [`Emitter::origin`] is: the origin of each call of the run
    /// in turn, there until the run ends (the collector's state does not
    /// move while a call is in progress, suspended or not). For reports
    /// that read it while a call runs (a signal handler's: a plain load).
    #[inline]
    pub fn origin_place(&self) -> *const Origin {
        // SAFETY: as in `push`; only the address is taken.
        unsafe { std::ptr::addr_of!((*self.io).origin) }
    }

    /// Ends the run with the call in progress (it failed): the next
    /// [`Emitter::next_input`] gives `false`, so that the interface need
    /// not look for an error after each call of a run, only once it
    /// ended.
    #[inline]
    pub fn end_run(&mut self) {
        // SAFETY: as in `push`.
        unsafe {
            (*self.io).ended = true;
            (*self.io).next = (*self.io).end;
        }
    }

    /// The origin of the call's input record (which input record it came
    /// from), for a language interface's reports about the call (a crash).
    #[inline]
    pub fn origin(&self) -> Origin {
        // SAFETY: as in `push`.
        unsafe { *std::ptr::addr_of!((*self.io).origin) }
    }

    /// [`Emit::slot`], without dynamic dispatch.
    #[inline(always)]
    pub fn slot(&mut self, variant: usize) -> Option<Slot<'_>> {
        // SAFETY: as in `push`; the plan only changes between runs.
        let (input, inherit) = unsafe {
            (
                &*(*self.io).input_at,
                &*std::ptr::addr_of!((*self.io).inherit),
            )
        };
        // Out of range (the plan has steps for each declared variant), or
        // a variant that names a label twice: `None`.
        let steps = inherit.steps(variant)?;
        // The record is empty (the filling makes room if its entries do
        // not fit inline).
        let (rec, may_suspend) = self.place();
        Some(Slot {
            rec,
            steps,
            input,
            may_suspend,
        })
    }

    /// A slot for variant `variant`'s next output whose record is already
    /// built as a copy of the call's input, for the interface to
    /// overwrite the box's values in: when the variant's outputs carry
    /// exactly the input's labels (tags alone, inline), as planned once
    /// per label set; `None` otherwise (take an [`Emitter::slot`]). It
    /// is committed or discarded as a slot is.
    #[inline(always)]
    pub fn slot_over(&mut self, variant: usize) -> Option<Over<'_>> {
        // SAFETY: as in `slot`.
        let (input, inherit) = unsafe {
            (
                &*(*self.io).input_at,
                &*std::ptr::addr_of!((*self.io).inherit),
            )
        };
        let args = inherit.over(variant)?;
        if input.spilled() {
            return None;
        }
        let (rec, may_suspend) = self.place();
        // SAFETY: the planned label set has no field (`Inherit::over`)
        // and the input is inline: it owns nothing, and its bytes copied
        // over the empty record (which owns nothing either) make a record
        // of their own. (Copied in place: a record made apart and moved
        // is copied twice, the compiler cannot tell `outs` from `input`.)
        unsafe { input.copy_inline_tags_to(rec) };
        Some(Over {
            rec,
            args,
            may_suspend,
        })
    }

    /// An output of variant `variant` whose values are all ints (the
    /// interface read them as such), with one look at the plan:
    /// [`TagOutput::Now`] when the variant's outputs are copies of the
    /// input with the box's values written over them (what
    /// [`Emitter::slot_over`] places) and placing this one takes nothing
    /// but stores: the input is inline, the stamps are none, `outs` has
    /// room and the output does not fill the call's batch (its commit
    /// could not suspend the call: a record of tags alone holds none of
    /// the field bytes the call may have made, which count only for
    /// outputs placed otherwise). It is then placed and emitted at once: the caller writes
    /// the values, and neither commits nor discards it. Otherwise
    /// nothing is placed: [`TagOutput::Steps`] for a variant built by
    /// its steps ([`Emitter::slot_steps`]), [`TagOutput::Other`] for the
    /// rest ([`Emitter::slot_over`], [`Emitter::slot`] or
    /// [`Emit::emit`]).
    #[inline(always)]
    pub fn tag_output(&mut self, variant: usize) -> TagOutput<'_> {
        // SAFETY: as in `push`.
        let def = unsafe { &*std::ptr::addr_of!((*self.io).def) };
        if variant == 0 || variant > def.outputs.len() {
            return TagOutput::Other;
        }
        // SAFETY: just checked.
        unsafe { self.tag_output_declared(variant) }
    }

    /// [`Emitter::tag_output`] for a variant the interface checked.
    ///
    /// # Safety
    /// `variant` is one of the box's: at least 1, at most its count of
    /// output variants.
    #[inline(always)]
    pub unsafe fn tag_output_declared(&mut self, variant: usize) -> TagOutput<'_> {
        // SAFETY: as in `slot`.
        let (input, inherit) = unsafe {
            (
                &*(*self.io).input_at,
                &*std::ptr::addr_of!((*self.io).inherit),
            )
        };
        // SAFETY: the plan has an entry per output variant of the box
        // (a call runs only with a plan), and `variant` is one (contract).
        let out = unsafe { inherit.out_declared(variant) };
        let Some(plan) = out.over.as_ref() else {
            return match out.steps.as_deref() {
                Some(steps) => TagOutput::Steps(Steps(steps)),
                None => TagOutput::Other,
            };
        };
        // SAFETY: as in `place`.
        let (det, outs) = unsafe {
            (
                &*std::ptr::addr_of!((*self.io).det),
                &mut *std::ptr::addr_of_mut!((*self.io).outs),
            )
        };
        let len = outs.len();
        // The input is inline: its set fits, it has no field (`Inherit::over`),
        // and every input of such a run is (`CallIo::input`).
        // SAFETY: so its entries' length is its length.
        let n = unsafe { input.inline_len() };
        // Bare stamps, room in `outs`, not the output that fills the
        // call's batch. (`place`'s condition of a commit that suspends
        // also counts the field bytes the thread made: none is in an
        // output of tags alone.)
        if !det.is_bare() || len == outs.capacity() || len >= self.yield_at() {
            return TagOutput::Other;
        }
        debug_assert!(!self.full, "no slot is open");
        // SAFETY: as in `place`.
        let origin = unsafe { *std::ptr::addr_of!((*self.io).origin) };
        // SAFETY: there is room for one more item at `len`; it is
        // written whole (its record a copy of the input, which has no
        // field and is inline: `Inherit::over`, and tested above) before
        // the length covers it.
        let entries = unsafe {
            let item = outs.as_mut_ptr().add(len);
            std::ptr::write(
                item,
                Item::Rec(Rec {
                    rec: Record::new(),
                    det: Stamps::new(),
                    origin,
                }),
            );
            let Item::Rec(r) = &mut *item else {
                std::hint::unreachable_unchecked()
            };
            let entries = input.copy_inline_tags_into(n, &mut r.rec);
            outs.set_len(len + 1);
            entries
        };
        TagOutput::Now(OverNow { entries, plan })
    }

    /// The slot of a [`TagOutput::Steps`]: [`Emitter::slot`] without a
    /// second look at the plan.
    ///
    /// # Safety
    /// `steps` came from [`Emitter::tag_output`] during this call.
    #[inline(always)]
    pub unsafe fn slot_steps(&mut self, steps: Steps) -> Slot<'_> {
        // SAFETY: as in `slot`; the plan, which `steps` points into, only
        // changes between runs.
        let (input, steps) = unsafe { (&*(*self.io).input_at, &*steps.0) };
        let (rec, may_suspend) = self.place();
        Slot {
            rec,
            steps,
            input,
            may_suspend,
        }
    }

    /// Writes an output item with an empty record where it will wait
    /// (the slot's record, to fill before the commit) and works out
    /// whether committing it suspends the call.
    #[inline(always)]
    fn place(&mut self) -> (&mut Record, bool) {
        // SAFETY: as in `push`; `outs` is not borrowed elsewhere while the
        // slot lives (the interface only fills it, then commits or
        // discards it).
        let (det, origin, outs) = unsafe {
            (
                &*std::ptr::addr_of!((*self.io).det),
                *std::ptr::addr_of!((*self.io).origin),
                &mut *std::ptr::addr_of_mut!((*self.io).outs),
            )
        };
        let det = det.clone();
        // The item is written where it will wait, in the spare room of
        // `outs` (a `Vec`, which has room to spare; a `VecDeque` has not):
        // only its fields are stored (an item pushed whole is built apart
        // and copied, 128 bytes).
        outs.reserve(1);
        let len = outs.len();
        // The condition of `batch_full` once this output is committed:
        // nothing between the slot and its commit makes field values (the
        // interface only fills the slot with values it already has).
        let may_suspend = len >= self.yield_at()
            || (!self.y.is_null() && snet_core::new_field_bytes() >= YIELD_AFTER_BYTES);
        self.full = may_suspend;
        // SAFETY: `reserve` made room for one more item at `len`; it is
        // written whole before the length covers it.
        let item = unsafe {
            let item = outs.as_mut_ptr().add(len);
            std::ptr::write(
                item,
                Item::Rec(Rec {
                    rec: Record::new(),
                    det,
                    origin,
                }),
            );
            outs.set_len(len + 1);
            &mut *item
        };
        let Item::Rec(r) = item else {
            // SAFETY: the item was written as `Item::Rec` just above.
            unsafe { std::hint::unreachable_unchecked() }
        };
        (&mut r.rec, may_suspend)
    }

    /// [`Emit::commit_slot`], without dynamic dispatch.
    #[inline(always)]
    pub fn commit_slot(&mut self) {
        if std::mem::take(&mut self.full) {
            self.suspend();
        }
    }

    /// [`Emit::discard_slot`], without dynamic dispatch.
    #[inline]
    pub fn discard_slot(&mut self) {
        self.full = false;
        // SAFETY: as in `push`.
        let outs = unsafe { &mut *std::ptr::addr_of_mut!((*self.io).outs) };
        outs.pop();
    }

    #[inline]
    fn check(&self, variant: usize) -> Result<(), BoxError> {
        // SAFETY: as in `push`.
        let def = unsafe { &*std::ptr::addr_of!((*self.io).def) };
        let declared = def.outputs.len();
        if variant == 0 || variant > declared {
            return Err(BoxError::VariantOutOfRange {
                variant: i64::try_from(variant).unwrap_or(i64::MAX),
                declared,
                call: None,
            });
        }
        Ok(())
    }

    /// Adds an output (inheritance added); suspends the call when a batch is full.
    #[inline]
    fn push(&mut self, rec: Record) {
        // SAFETY: `io` is the pointer the last resume passed in; the worker
        // does not touch the `CallIo` while the call runs. Only the fields
        // used are borrowed: the box holds a reference to `input`.
        let (det, origin, outs) = unsafe {
            (
                &*std::ptr::addr_of!((*self.io).det),
                *std::ptr::addr_of!((*self.io).origin),
                &mut *std::ptr::addr_of_mut!((*self.io).outs),
            )
        };
        outs.push(Item::Rec(Rec {
            rec,
            det: det.clone(),
            origin,
        }));
        self.batch_full();
    }

    /// Suspends the call if a batch of its outputs is full: [`YIELD_AFTER`]
    /// of them, or fewer that hold [`YIELD_AFTER_BYTES`] of new field
    /// values (a box making a 16 MiB array per output would otherwise hold
    /// 64 of them, all live at once, before the first goes downstream: the
    /// memory of each is fresh, none can be freed and reused meanwhile).
    #[inline(always)]
    fn batch_full(&mut self) {
        // SAFETY: as in `push`.
        let n = unsafe { (*self.io).outs.len() };
        if (n > self.yield_at() || snet_core::new_field_bytes() >= YIELD_AFTER_BYTES)
            && !self.y.is_null()
        {
            self.suspend();
        }
    }

    /// Suspends the call (a batch is full) until the worker took the batch.
    #[cold]
    #[inline(never)]
    fn suspend(&mut self) {
        // SAFETY: `y` (not null) is the yielder of the coroutine this call
        // runs on, which outlives the call.
        let y = unsafe { &*self.y };
        // SAFETY: as in `push`; the worker sees the input only in the
        // `CallIo`'s own place.
        unsafe { (*self.io).settle() };
        self.io = y.suspend(Event::Batch);
        snet_core::take_new_field_bytes();
        // The worker took the batch: the call goes on with the outputs
        // waiting now (none) as its own start.
        // SAFETY: as in `push`, with the pointer this resume passed in.
        unsafe { (*self.io).call_outs = (*self.io).outs.len() };
    }

    /// Where the call's batch is full: an output placed at this index of
    /// `outs` is the [`YIELD_AFTER`]th of the call's own since it started
    /// or last went on (the outputs waiting then, [`CallIo::call_outs`],
    /// plus `YIELD_AFTER - 1`; `usize::MAX` when the call cannot be
    /// suspended). Worked out where an output asks, from what a call's
    /// start writes anyway: nothing more to write per call.
    #[inline(always)]
    fn yield_at(&self) -> usize {
        // Every call runs on a call stack (a yielder), except under Miri,
        // which runs calls to their end (`CallStack::resume`).
        if cfg!(miri) {
            usize::MAX
        } else {
            debug_assert!(!self.y.is_null());
            // SAFETY: as in `push`.
            unsafe { (*self.io).call_outs + YIELD_AFTER - 1 }
        }
    }
}

/// Runs the call in `io`, then the calls of the inputs it can take from
/// [`CallIo::more`] (see the module docs), to their end or to the first
/// error (through [`BoxImpl::invoke_run`], which takes the further inputs
/// with [`Emitter::next_input`]); returns the `CallIo` pointer of the last
/// resume.
fn calls(y: Option<&Yielder<*mut CallIo, Event>>, io: *mut CallIo) -> *mut CallIo {
    // SAFETY: the box stays put while the calls run (the worker only takes
    // `outs` between resumes, which the box never sees).
    let (imp, base) = unsafe { (&*(*io).imp as *const dyn BoxImpl, (*io).outs.len()) };
    // SAFETY: as above; the input of the run's first call is the
    // entity's (`BoxEntity::start`).
    unsafe {
        (*io).input_at = std::ptr::addr_of_mut!((*io).input);
        (*io).drop_last = true;
        (*io).ended = false;
        (*io).call_outs = base;
        if (*io).input.spilled() && (*io).inherit.few().is_some() {
            (*io).input.shrink_to_fit();
        }
    }
    let mut out = Emitter {
        y: y.map_or(std::ptr::null(), |y| y as *const _),
        io,
        full: false,
    };
    // Field values made before this call (decoding, other calls) do not
    // count towards its batch.
    snet_core::take_new_field_bytes();
    // SAFETY: see above.
    let r = unsafe { (*imp).invoke_run(&mut out) };
    let io = out.io;
    // SAFETY: the calls returned; the worker sees the last input only in
    // the `CallIo`'s own place.
    unsafe { (*io).settle() };
    if let Err(e) = r {
        // SAFETY: the call returned; the worker reads it after `Done`.
        unsafe { (*io).error = Some(e) };
    }
    io
}

#[cfg(not(miri))]
fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions.
    let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    usize::try_from(p).unwrap_or(4096)
}

impl CallStack {
    #[cfg(not(miri))]
    fn new(size: usize, worker: usize) -> std::io::Result<CallStack> {
        let stack = DefaultStack::new(size)?;
        // The mapping is [guard page][usable]; `limit` is its lowest
        // address (the guard page's), the stack grows down towards it.
        let limit = stack.limit().get();
        let guard = (limit, limit + page_size());
        let co = Coroutine::with_stack(stack, |y: &Yielder<*mut CallIo, Event>, mut io| loop {
            calls(Some(y), io);
            io = y.suspend(Event::Done);
        });
        Ok(CallStack { co, worker, guard })
    }

    #[cfg(miri)]
    fn new(_size: usize, worker: usize) -> std::io::Result<CallStack> {
        Ok(CallStack {
            worker,
            guard: (0, 0),
        })
    }

    /// Runs (or goes on with) the call described by `io` until it
    /// suspends or returns.
    ///
    /// # Safety
    /// `io` stays valid, and is not touched by anyone else, until the next
    /// `resume` of this stack or until it returns [`Event::Done`]; so does
    /// its [`CallIo::more`] (if not null) until this `resume` returns.
    pub(crate) unsafe fn resume(&mut self, io: *mut CallIo, worker: usize) -> Event {
        assert_eq!(
            self.worker, worker,
            "a suspended box call is resumed on the worker that started it"
        );
        let prev = GUARD.with(|g| g.replace(self.guard));
        #[cfg(not(miri))]
        let r = match self.co.resume(io) {
            CoroutineResult::Yield(e) => e,
            CoroutineResult::Return(()) => unreachable!("a call stack's loop never returns"),
        };
        #[cfg(miri)]
        let r = {
            calls(None, io);
            Event::Done
        };
        GUARD.with(|g| g.set(prev));
        r
    }
}

impl Drop for CallStack {
    fn drop(&mut self) {
        #[cfg(not(miri))]
        if self.co.started() && !self.co.done() {
            // A call still suspended when the run is torn down (it failed).
            // Its frames include box code that cannot be unwound: the stack
            // is freed without running them (whatever they hold is leaked).
            // SAFETY: nothing on the stack is used again.
            unsafe { self.co.force_reset() };
        }
    }
}

/// A worker's free call stacks.
pub(crate) struct Stacks {
    // Boxed: a stack moves between this list and a box entity as one
    // pointer (the coroutine is several words).
    #[allow(clippy::vec_box)]
    free: Vec<Box<CallStack>>,
    size: usize,
    worker: usize,
    /// The worker thread's alternate signal stack, if this set installed it.
    _alt: Option<AltStack>,
}

/// An alternate signal stack for a worker thread. A signal handler runs on
/// the faulting thread's stack unless one is set, and a call that
/// overflowed its stack has none left: without this, the crash report of
/// an overflow could not run and the process would die silently.
struct AltStack {
    base: *mut libc::c_void,
    len: usize,
}

impl AltStack {
    #[cfg(not(miri))]
    const LEN: usize = 64 << 10;

    /// Installs one on this thread unless the thread has one already.
    #[cfg(not(miri))]
    fn ensure() -> Option<AltStack> {
        // SAFETY: sigaltstack with a null new stack only reads the current one.
        unsafe {
            let mut old: libc::stack_t = std::mem::zeroed();
            if libc::sigaltstack(std::ptr::null(), &mut old) != 0
                || old.ss_flags & libc::SS_DISABLE == 0
            {
                return None;
            }
            let base = libc::mmap(
                std::ptr::null_mut(),
                Self::LEN,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            );
            if base == libc::MAP_FAILED {
                return None;
            }
            let st = libc::stack_t {
                ss_sp: base,
                ss_flags: 0,
                ss_size: Self::LEN,
            };
            if libc::sigaltstack(&st, std::ptr::null_mut()) != 0 {
                libc::munmap(base, Self::LEN);
                return None;
            }
            Some(AltStack {
                base,
                len: Self::LEN,
            })
        }
    }

    #[cfg(miri)]
    fn ensure() -> Option<AltStack> {
        None
    }
}

impl Drop for AltStack {
    fn drop(&mut self) {
        // SAFETY: dropped on the thread that installed it (the worker's
        // `Ctx` ends with its thread); disabled before it is unmapped.
        unsafe {
            let off = libc::stack_t {
                ss_sp: std::ptr::null_mut(),
                ss_flags: libc::SS_DISABLE,
                ss_size: 0,
            };
            libc::sigaltstack(&off, std::ptr::null_mut());
            libc::munmap(self.base, self.len);
        }
    }
}

impl Stacks {
    /// A set of stacks for code that runs no box (no worker thread).
    pub(crate) fn new(size: usize, worker: usize) -> Stacks {
        Stacks {
            free: Vec::new(),
            size,
            worker,
            _alt: None,
        }
    }

    /// The set of worker `worker`, on its own thread (it also gives the
    /// thread an alternate signal stack, see [`AltStack`]).
    pub(crate) fn for_worker_thread(size: usize, worker: usize) -> Stacks {
        Stacks {
            _alt: AltStack::ensure(),
            ..Stacks::new(size, worker)
        }
    }

    pub(crate) fn worker(&self) -> usize {
        self.worker
    }

    /// A free stack (a new one if none is kept).
    #[inline]
    pub(crate) fn take(&mut self) -> std::io::Result<Box<CallStack>> {
        match self.free.pop() {
            Some(s) => Ok(s),
            None => CallStack::new(self.size, self.worker).map(Box::new),
        }
    }

    /// Gives back a stack whose call returned.
    #[inline]
    pub(crate) fn give(&mut self, s: Box<CallStack>) {
        debug_assert_eq!(s.worker, self.worker);
        if self.free.len() < KEEP_FREE {
            self.free.push(s);
        }
    }
}
