//! Calling boxes and taking their outputs.
//!
//! # Handles
//!
//! Every invocation gets a fresh, never reused 64-bit handle value,
//! `id << 16 | box index`, passed to the box as its `void *hnd`. While the
//! box runs, the invoking thread's [`Current`] slot (a C thread-local, see
//! `csrc/out.c`) holds the handle, a pointer to the invocation's state and
//! the argument kinds of its box's output variants. `C4SNetOut` (via [`snet_c4snet_out_begin`] /
//! [`snet_c4snet_out_end`]) accepts a handle only if it equals the current
//! thread's slot; so the state pointer is only dereferenced on the thread
//! that owns it and while it is alive. Any other handle value is misuse:
//! a *stale* handle (the box kept it and called `C4SNetOut` after it
//! returned) or a call from another thread. Because the box index is in the
//! handle, the error names the box that issued it: if another invocation is
//! running on this thread the error fails that invocation, otherwise the
//! process reports it and exits with status 1.
//!
//! # Outputs
//!
//! `C4SNetOut(hnd, k, ...)` takes the argument kinds of variant `k` from
//! the thread's slot when `hnd` is the running invocation's and `k` is
//! declared (otherwise it asks [`snet_c4snet_out_begin`], which reports the
//! misuse), reads the values, and passes them back (end), which turns them
//! into a record and hands it to the engine's [`Emit`] (the box entity
//! checks the variant again, adds flow-inherited labels and sends it on).
//! Errors are remembered in the invocation and returned by
//! [`BoxImpl::invoke`] once the box returns: the first one wins; outputs
//! after an error are dropped (their field references released).
//!
//! `C4SNetOutValues(hnd, k, values, n)`, the call `C4SNet.h`'s macro
//! `C4SNetOut` makes in C99 and later, has the values already in an array
//! of 64-bit words with their count: its common case checks the handle,
//! the variant and the count against the same slot and hands the array on
//! as it is (tags alone to [`snet_c4snet_out_tags`]); the rest goes to
//! [`snet_c4snet_out_values`], which also reports a count other than the
//! variant's.

use std::cell::Cell;
use std::collections::HashMap;
use std::ffi::{c_char, c_int, c_void, CStr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use snet_core::{BoxDef, Field, Label, Record, Value};
use snet_engine::{
    BoxError, BoxImpl, Emit, Emitter, LanguageInterface, ResolveError, ResolveReason, Slot, Src,
    Steps, TagOutput,
};

use crate::abi::{into_c_value, CField};
use crate::data::C4Data;

/// One argument of a trampoline call, one value of `C4SNetOut`
/// (`typedef union { c4snet_data_t *field; int tag; } snet_arg_t;`).
#[repr(C)]
#[derive(Copy, Clone)]
pub union SnetArg {
    /// A field: an owned C reference.
    pub field: *mut CField,
    /// A tag.
    pub tag: c_int,
}

/// Arguments a call passes on the stack (more go in a vector).
const ARGS_INLINE: usize = 8;

/// A box trampoline: `void call(void *hnd, const snet_arg_t *args)`.
pub type BoxFn = unsafe extern "C" fn(hnd: *mut c_void, args: *const SnetArg);

/// An entry of the box table `snet build` generates.
#[repr(C)]
#[derive(Copy, Clone)]
pub struct BoxEntry {
    /// The box's name, NUL-terminated.
    pub name: *const c_char,
    /// Its trampoline.
    pub call: BoxFn,
}

/// Box names by index (the low 16 bits of a handle), for messages about stale handles.
static NAMES: Mutex<Vec<String>> = Mutex::new(Vec::new());
/// The next invocation id not yet handed to a thread (never reused;
/// starts at 1 so no handle is null).
static NEXT_ID: AtomicU64 = AtomicU64::new(1);
/// Ids a thread takes from [`NEXT_ID`] at a time: one atomic add per
/// block of calls rather than per call (with two workers the counter's
/// cache line moved between them on every box call).
const ID_BLOCK: u64 = 1 << 10;

thread_local! {
    /// This thread's block of ids: the next one and the end.
    static IDS: Cell<(u64, u64)> = const { Cell::new((0, 0)) };
}

/// A run's own block of ids (see [`CBox::invoke_run`]): taken from the
/// thread's block when the run starts, the thread's left empty meanwhile
/// (anything else on the thread, a call of another box while this run is
/// suspended, takes a fresh block), and handed back when the run ends.
/// Either way an id is handed out once: a block is held by one owner at a
/// time, and a block dropped is only ids never used.
struct RunIds {
    next: u64,
    end: u64,
}

impl RunIds {
    fn take() -> RunIds {
        let (next, end) = IDS.with(|c| c.replace((0, 0)));
        RunIds { next, end }
    }

    /// A fresh invocation id.
    #[cfg(test)]
    fn next(&mut self) -> u64 {
        if self.next >= self.end {
            (self.next, self.end) = RunIds::block();
        }
        self.next += 1;
        self.next - 1
    }

    /// A fresh block of ids: the first and the end.
    #[cold]
    #[inline(never)]
    fn block() -> (u64, u64) {
        let first = NEXT_ID.fetch_add(ID_BLOCK, Ordering::Relaxed);
        (first, first + ID_BLOCK)
    }
}

impl Drop for RunIds {
    fn drop(&mut self) {
        let left = (self.next, self.end);
        // `try_with`: a thread's locals may be gone while it exits.
        let _ = IDS.try_with(|c| c.set(left));
    }
}

/// A fresh invocation id.
#[inline]
fn next_id() -> u64 {
    IDS.with(|c| {
        let (next, end) = c.get();
        if next < end {
            c.set((next + 1, end));
            return next;
        }
        let first = NEXT_ID.fetch_add(ID_BLOCK, Ordering::Relaxed);
        c.set((first + 1, first + ID_BLOCK));
        first
    })
}

/// The state of an invocation (its handle is the thread's slot's,
/// [`Current::hnd`]).
struct Invocation {
    /// The box (its name, output kinds and variants), which outlives the invocation.
    cbox: *const CBox,
    emit: *mut (dyn Emit + 'static),
    /// The engine's collector behind `emit`, if it is one (null
    /// otherwise): outputs then reach it without dynamic dispatch.
    /// Null also once `error` is set ([`Invocation::fail`]): the output
    /// path's one test covers both.
    direct: *mut Emitter,
    error: Option<BoxError>,
}

impl Invocation {
    /// Fails the invocation with the error `e` makes, unless it failed
    /// already (the first error wins). Its further outputs are dropped:
    /// none takes the direct way to the collector any more (`direct`
    /// null), and the general way drops them once it sees the error. A
    /// run of calls ends with this one ([`Emitter::end_run`]: the run
    /// looks for the error once it ended, not after each call).
    #[inline]
    fn fail(&mut self, e: impl FnOnce() -> BoxError) {
        self.error.get_or_insert_with(e);
        if !self.direct.is_null() {
            // SAFETY: `direct`, not null, is the engine's collector,
            // alive during the invocation.
            unsafe { (*self.direct).end_run() };
        }
        self.direct = std::ptr::null_mut();
    }
}

/// The argument kinds of one output variant, as `C4SNetOut` reads them
/// (`struct snet_c4snet_variant` in `csrc/out.c`).
#[repr(C)]
struct VariantKinds {
    kinds: *const c_int,
    n: std::ffi::c_long,
    /// `n` when every value is an int and there are at most
    /// [`TAGS_FAST`] of them (`C4SNetOut` then reads them without a look
    /// at `kinds`); -1 otherwise.
    tags: std::ffi::c_long,
    /// `n` when every value is an int, whatever their count
    /// (`C4SNetOutValues` then hands them to [`snet_c4snet_out_tags`]);
    /// [`INTS_NONE`] otherwise.
    ints: std::ffi::c_long,
}

/// [`VariantKinds::ints`] of a variant with a field: a value no count
/// of values (a C `int`) equals where `C4SNetOutValues` reads it, a
/// 64-bit `long` (`INTS_NONE` in `csrc/out.c`).
const INTS_NONE: std::ffi::c_long = std::ffi::c_long::MIN;

/// The most values of a variant of ints alone that `C4SNetOut` reads
/// without its loop over the kinds (`TAGS_FAST` in `csrc/out.c`).
const TAGS_FAST: usize = 4;

/// The invocation running on a thread (`struct snet_c4snet_current` in
/// `csrc/out.c`, a C thread-local, so that `C4SNetOut` finds a valid
/// handle's argument kinds without calling [`snet_c4snet_out_begin`]).
#[repr(C)]
#[derive(Copy, Clone)]
struct Current {
    /// The handle (0: no invocation runs).
    hnd: usize,
    /// Its state, an [`Invocation`] (null when none).
    inv: *mut c_void,
    /// Its box's output variants.
    variants: *const VariantKinds,
    nvariants: std::ffi::c_long,
    /// Its box's name (null when none runs), for the crash handler
    /// ([`crate::crash`]), which reads it from a signal handler.
    name: *const u8,
    name_len: usize,
    /// Where the box is declared (`FILE:LINE:COL`; null: not known), and
    /// the input record behind the call ([`snet_engine::Origin`]'s bits),
    /// for the crash handler.
    loc: *const u8,
    loc_len: usize,
    origin: u64,
    /// Where the origin is, when not null (then `origin` is not used): a
    /// run's, the collector's ([`Emitter::origin_place`]), which follows
    /// the input of each call without a store here per call.
    origin_at: *const snet_engine::Origin,
}

impl Current {
    const NONE: Current = Current {
        hnd: 0,
        inv: std::ptr::null_mut(),
        variants: std::ptr::null(),
        nvariants: 0,
        name: std::ptr::null(),
        name_len: 0,
        loc: std::ptr::null(),
        loc_len: 0,
        origin: 0,
        origin_at: std::ptr::null(),
    };
}

/// What the crash handler knows about the box running on a thread: its
/// name, the place of its declaration and the input record behind the
/// call (see [`crate::crash`]).
#[derive(Copy, Clone)]
pub struct Running {
    pub(crate) name: (*const u8, usize),
    pub(crate) loc: (*const u8, usize),
    pub(crate) origin: u64,
}

impl Running {
    pub(crate) const NONE: Running = Running {
        name: (std::ptr::null(), 0),
        loc: (std::ptr::null(), 0),
        origin: 0,
    };
}

extern "C" {
    /// This thread's [`Current`] slot (in `csrc/out.c`).
    fn snet_c4snet_current() -> *mut Current;
}

/// This thread's [`Current`] slot: valid for reads and writes on this
/// thread for as long as it lives (async-signal safe: a thread-local's
/// address).
#[inline(always)]
fn current() -> *mut Current {
    // SAFETY: no preconditions; it returns the address of a C thread-local.
    unsafe { snet_c4snet_current() }
}

/// The box running on this thread (a null name when none runs, or its
/// call is suspended). Async-signal safe: loads from a thread-local.
#[inline]
pub(crate) fn running() -> Running {
    // SAFETY: this thread's slot (see `current`), read only.
    unsafe {
        let c = current();
        let at = (*c).origin_at;
        Running {
            name: ((*c).name, (*c).name_len),
            loc: ((*c).loc, (*c).loc_len),
            // SAFETY: a run's collector's origin, alive while the slot
            // names the run (a plain load).
            origin: if at.is_null() {
                (*c).origin
            } else {
                (*at).to_bits()
            },
        }
    }
}

/// Sets what the crash handler is told about the box running on this
/// thread (the rest of the slot is left as it is); returns the previous
/// value.
#[inline]
pub(crate) fn swap_running(r: Running) -> Running {
    let prev = running();
    // SAFETY: this thread's slot (see `current`).
    unsafe {
        let c = current();
        (*c).name = r.name.0;
        (*c).name_len = r.name.1;
        (*c).loc = r.loc.0;
        (*c).loc_len = r.loc.1;
        (*c).origin = r.origin;
        (*c).origin_at = std::ptr::null();
    }
    prev
}

fn box_name(index: usize) -> String {
    crate::invoke::NAMES
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get(index)
        .cloned()
        .unwrap_or_else(|| "?".into())
}

/// The name of the box running on this thread, if one is.
pub(crate) fn running_box() -> Option<Arc<str>> {
    // SAFETY: this thread's slot (see `current`).
    let cur = unsafe { (*current()).inv }.cast::<Invocation>();
    if cur.is_null() {
        return None;
    }
    // SAFETY: `cur` is this thread's live invocation (see the module docs),
    // and its `name` points into the box implementation that runs it.
    Some(unsafe { (*(*cur).cbox).name.clone() })
}

/// Reports misuse of the interface ([`BoxError::Misuse`]): it fails the
/// invocation running on this thread, if there is one; otherwise no running
/// invocation can be blamed for it, and the process ends (exit status 1).
pub fn report_misuse(what: String) {
    // SAFETY: this thread's slot (see `current`).
    let Current { hnd: h, inv, .. } = unsafe { *current() };
    let cur = inv.cast::<Invocation>();
    if !cur.is_null() {
        // SAFETY: `cur` is this thread's live invocation (see the module docs).
        let inv = unsafe { &mut *cur };
        inv.fail(|| BoxError::Misuse(what));
        let _ = h;
        return;
    }
    eprintln!("error: {what}");
    std::process::exit(1);
}

/// The invocation state for `hnd`, or `None` after reporting misuse.
#[inline(always)]
fn check_handle(hnd: *mut c_void) -> Option<*mut Invocation> {
    // SAFETY: this thread's slot (see `current`).
    let Current { hnd: h, inv, .. } = unsafe { *current() };
    let cur = inv.cast::<Invocation>();
    let hnd = hnd as usize;
    if hnd != 0 && hnd == h && !cur.is_null() {
        return Some(cur);
    }
    bad_handle(hnd);
    None
}

/// Reports a handle that is not the running invocation's.
#[cold]
#[inline(never)]
fn bad_handle(hnd: usize) {
    let issued = (hnd >> 16) as u64;
    let what = if hnd != 0 && issued < NEXT_ID.load(Ordering::Relaxed) {
        format!(
            "box `{}`: C4SNetOut called with a stale handle (after the box returned, or from another thread)",
            box_name(hnd & 0xffff)
        )
    } else {
        "C4SNetOut called with an invalid handle".to_string()
    };
    report_misuse(what);
}

/// One output variant of a C box.
struct OutVariant {
    /// Its labels in signature (argument) order.
    labels: Vec<Label>,
    /// The argument positions in label order (records keep their entries
    /// sorted: the record is built front to back); `None` when a label
    /// repeats (each value then replaces the one before, as written).
    sorted: Option<Vec<usize>>,
    /// Whether a label is a field (a value may then be null).
    fields: bool,
}

impl OutVariant {
    fn new(labels: &[Label]) -> OutVariant {
        let mut order: Vec<usize> = (0..labels.len()).collect();
        order.sort_by_key(|&i| labels[i]);
        let repeats = order.windows(2).any(|w| labels[w[0]] == labels[w[1]]);
        OutVariant {
            labels: labels.to_vec(),
            sorted: (!repeats).then_some(order),
            fields: labels.iter().any(|l| l.is_field()),
        }
    }
}

/// First half of `C4SNetOut`: the argument kinds of variant `variant`
/// (1 = int, 0 = field) in `*kinds`, and the invocation to hand to
/// [`snet_c4snet_out_end`] in `*inv`; returns their count, or -1 after an
/// error.
///
/// # Safety
/// `kinds` and `inv` are valid for writing one pointer.
#[no_mangle]
pub unsafe extern "C" fn snet_c4snet_out_begin(
    hnd: *mut c_void,
    variant: c_int,
    kinds: *mut *const c_int,
    inv_out: *mut *mut c_void,
) -> c_int {
    let Some(inv_ptr) = check_handle(hnd) else {
        return -1;
    };
    // SAFETY: `check_handle` returns only this thread's live invocation.
    let inv = unsafe { &mut *inv_ptr };
    // SAFETY: `kinds` points into the box implementation, alive during the invocation.
    let all = unsafe { &(*inv.cbox).kinds };
    if variant < 1 || variant as usize > all.len() {
        inv.fail(|| BoxError::VariantOutOfRange {
            variant: i64::from(variant),
            declared: all.len(),
            call: Some("C4SNetOut"),
        });
        return -1;
    }
    let k = &all[variant as usize - 1];
    // SAFETY: `kinds` and `inv_out` are writable (contract).
    unsafe {
        *kinds = k.as_ptr();
        *inv_out = inv_ptr.cast();
    }
    k.len() as c_int
}

/// Second half of `C4SNetOut`: builds the record and emits it. Takes
/// ownership of the field references in `values`.
///
/// # Safety
/// `inv` is what `begin` returned for this variant just before, on this
/// thread (nothing ran in between but reading the values: the invocation
/// is still this thread's live one); `values` holds `n` values read
/// according to the kinds `begin` returned; field values are owned
/// references or null.
#[no_mangle]
pub unsafe extern "C" fn snet_c4snet_out_end(
    inv: *mut c_void,
    variant: c_int,
    values: *const SnetArg,
    n: c_int,
) {
    let invp = inv.cast::<Invocation>();
    {
        // SAFETY: see the contract; `begin` checked the handle and the variant.
        let inv = unsafe { &*invp };
        // SAFETY: the box implementation outlives the invocation; the
        // variant is in range (`begin`, or `C4SNetOut`'s test against the
        // slot's `nvariants`, the box's count of variants, checked it).
        let out = unsafe {
            let cbox = &*inv.cbox;
            cbox.outputs.get_unchecked(variant as usize - 1)
        };
        // SAFETY: as for this function; every label is a tag when
        // `fields` is false.
        if !out.fields && unsafe { out_tags(invp, variant, values, n) } {
            return;
        }
    }
    // SAFETY: as for this function.
    unsafe { out_end(invp, variant, values, n) }
}

/// [`snet_c4snet_out_end`] for a variant whose values are all ints
/// (`C4SNetOut`'s common case, at most `TAGS_FAST` of them, and
/// `C4SNetOutValues`', any count: both know it from the variant's table;
/// no look at the variant's kinds here).
///
/// Its common case, an output that is a copy of the input with the
/// box's values written over it and that cannot suspend the call
/// ([`TagOutput::Now`]), takes loads, tests and stores only, and no
/// call: the function then needs no frame and saves no register. Every
/// other case goes on in a function of its own (called last, so that
/// the call is a jump): a variant built by its steps in
/// [`out_tags_steps`], the rest in [`out_tags_other`].
///
/// # Safety
/// As for [`snet_c4snet_out_end`]; every label of the variant is a tag.
#[no_mangle]
pub unsafe extern "C" fn snet_c4snet_out_tags(
    inv: *mut c_void,
    variant: c_int,
    values: *const SnetArg,
    n: c_int,
) {
    let invp = inv.cast::<Invocation>();
    // SAFETY: see the contract.
    let direct = unsafe { (*invp).direct };
    // Not null: the engine's collector, and no error so far.
    if !direct.is_null() {
        // SAFETY: `direct` is the engine's collector, alive and
        // exclusively ours during the invocation; the variant is one
        // the box declares (checked by the caller, see the contract).
        match unsafe { (*direct).tag_output_declared(variant as usize) } {
            TagOutput::Now(mut over) => {
                let value = |j: u32| {
                    debug_assert!((j as usize) < n as usize);
                    // SAFETY: the values were read as ints, one per label
                    // of the variant (contract), and `j` is one of its
                    // labels' places.
                    i64::from(unsafe { (*values.add(j as usize)).tag })
                };
                // One value or two (pipe10's `inc`, most boxes) without
                // a loop.
                match *over.args() {
                    // SAFETY: `i` is a position of `args`.
                    [(i, j)] => unsafe { over.set(i, value(j)) },
                    // SAFETY: `i` and `k` are positions of `args`.
                    [(i, j), (k, l)] => unsafe {
                        over.set(i, value(j));
                        over.set(k, value(l));
                    },
                    _ => {
                        for &(i, j) in over.args() {
                            // SAFETY: as above.
                            unsafe { over.set(i, value(j)) };
                        }
                    }
                }
                return;
            }
            TagOutput::Steps(steps) => {
                let (steps, len) = steps.into_raw_parts();
                // SAFETY: as for this function; the steps are this call's.
                return unsafe { out_tags_steps(invp, values, n, steps, len) };
            }
            TagOutput::Other => {}
        }
    }
    // SAFETY: as for this function.
    unsafe { out_tags_other(invp, variant, values, n) }
}

/// `C4SNetOutValues` for everything but its common case (the running
/// invocation's handle, a declared variant, as many values as it
/// declares, on a little-endian machine of 64-bit pointers: `csrc/out.c`
/// hands those on itself): checks the handle, the variant and the count
/// of values, reports what is wrong (a count other than the variant's
/// fails the call, naming the box, the variant and both counts; none of
/// the values is taken), and otherwise converts each 64-bit word by the
/// variant's kinds (an int tag: its low 32 bits; a field: its address)
/// and goes on as [`snet_c4snet_out_end`].
///
/// # Safety
/// `values` points to `count` readable words (or `count` is at most 0);
/// the words of fields are owned references or null, as for
/// `C4SNetOut`.
#[no_mangle]
pub unsafe extern "C" fn snet_c4snet_out_values(
    hnd: *mut c_void,
    variant: c_int,
    values: *const u64,
    count: c_int,
) {
    let mut kinds: *const c_int = std::ptr::null();
    let mut inv: *mut c_void = std::ptr::null_mut();
    // SAFETY: both are writable locals.
    let n = unsafe { snet_c4snet_out_begin(hnd, variant, &mut kinds, &mut inv) };
    if n < 0 {
        return; // reported by `begin`
    }
    if count != n {
        // SAFETY: `begin` returned this thread's live invocation.
        let inv = unsafe { &mut *inv.cast::<Invocation>() };
        inv.fail(|| {
            BoxError::Misuse(format!(
                "C4SNetOut called with {count} value{} for output variant {variant}, which declares {n}",
                if count == 1 { "" } else { "s" }
            ))
        });
        return;
    }
    let n = n as usize;
    // SAFETY: `begin` gave the variant's `n` kinds; `values` holds
    // `count` == `n` words (contract).
    let (kinds, words) = unsafe {
        (
            std::slice::from_raw_parts(kinds, n),
            std::slice::from_raw_parts(values, n),
        )
    };
    let mut inline = [SnetArg { tag: 0 }; ARGS_INLINE];
    let mut heap = Vec::new();
    let args = if n <= ARGS_INLINE {
        &mut inline[..n]
    } else {
        heap.resize(n, SnetArg { tag: 0 });
        &mut heap[..]
    };
    for ((a, &k), &w) in args.iter_mut().zip(kinds).zip(words) {
        *a = if k != 0 {
            SnetArg {
                tag: w as u32 as c_int,
            }
        } else {
            SnetArg {
                field: w as usize as *mut CField,
            }
        };
    }
    // SAFETY: `inv` is what `begin` returned for this variant, just now;
    // the values were converted by the variant's kinds.
    unsafe { snet_c4snet_out_end(inv, variant, args.as_ptr(), n as c_int) }
}

/// [`snet_c4snet_out_tags`] for a variant built by its steps.
///
/// # Safety
/// As for [`snet_c4snet_out_tags`], whose collector (the invocation's
/// `direct`, not null, with no error so far) gave the steps
/// ([`Steps::into_raw_parts`]) during this call.
#[inline(never)]
unsafe fn out_tags_steps(
    invp: *mut Invocation,
    values: *const SnetArg,
    n: c_int,
    steps: *const (Label, Src),
    len: usize,
) {
    // SAFETY: see the contract.
    let (values, direct, steps) = unsafe {
        (
            std::slice::from_raw_parts(values, n as usize),
            &mut *(*invp).direct,
            Steps::from_raw_parts(steps, len),
        )
    };
    // SAFETY: see the contract.
    let slot = unsafe { direct.slot_steps(steps) };
    let may_suspend = slot.may_suspend;
    // SAFETY: every label is a tag: the values were read as ints.
    unsafe { fill_tags(slot, values) };
    commit(direct, may_suspend);
}

/// [`snet_c4snet_out_tags`] for everything but its two common cases.
///
/// # Safety
/// As for [`snet_c4snet_out_tags`].
#[inline(never)]
unsafe fn out_tags_other(invp: *mut Invocation, variant: c_int, values: *const SnetArg, n: c_int) {
    // SAFETY: as for this function.
    if unsafe { !out_tags(invp, variant, values, n) } {
        // SAFETY: as for this function.
        unsafe { out_end(invp, variant, values, n) }
    }
}

/// The common case of an output of tags alone: the engine's own
/// collector, no error so far; the record built in its slot and
/// committed. `false`: not the common case, nothing done.
///
/// # Safety
/// As for [`snet_c4snet_out_end`]; every label of the variant is a tag.
#[inline(always)]
unsafe fn out_tags(
    invp: *mut Invocation,
    variant: c_int,
    values: *const SnetArg,
    n: c_int,
) -> bool {
    // SAFETY: see the contract.
    let inv = unsafe { &*invp };
    let direct = inv.direct;
    // Null also after an error (`Invocation::fail`).
    if direct.is_null() {
        return false;
    }
    debug_assert!(inv.error.is_none());
    // SAFETY: `values` holds `n` initialised values (contract);
    // `direct` is the engine's collector, alive and exclusively ours
    // during the invocation.
    let (values, direct) =
        unsafe { (std::slice::from_raw_parts(values, n as usize), &mut *direct) };
    // Outputs with exactly the input's labels (pipe10's `{x, <k>}` in
    // and out): the input's copy with the box's values written over it.
    if let Some(over) = direct.slot_over(variant as usize) {
        let may_suspend = over.may_suspend;
        for &(i, j) in over.args {
            // SAFETY: the values were read as ints (contract); `i` is a
            // position of the record, whose value there is a tag's, an
            // int (`Over::args`).
            unsafe {
                over.rec
                    .set_int_at_unchecked(i as usize, i64::from(values[j as usize].tag))
            };
        }
        commit(direct, may_suspend);
        return true;
    }
    let Some(slot) = direct.slot(variant as usize) else {
        return false;
    };
    let may_suspend = slot.may_suspend;
    // SAFETY: every label is a tag: the values were read as ints.
    unsafe { fill_tags(slot, values) };
    commit(direct, may_suspend);
    true
}

/// [`snet_c4snet_out_end`] for everything but its common case (a field
/// among the labels, an error so far, or an `Emit` that is not the
/// engine's collector): through the [`Emit`] trait, which the engine's
/// collector implements with the same contract as its direct calls.
///
/// # Safety
/// As for [`snet_c4snet_out_end`].
#[inline(never)]
unsafe fn out_end(inv: *mut Invocation, variant: c_int, values: *const SnetArg, n: c_int) {
    // SAFETY: see the contract; `begin` checked the handle and the variant.
    let inv = unsafe { &mut *inv };
    // SAFETY: the box implementation outlives the invocation.
    let out = unsafe { &(&(*inv.cbox).outputs)[variant as usize - 1] };
    // SAFETY: `values` holds `n` initialised values (contract).
    let values = unsafe { std::slice::from_raw_parts(values, n as usize) };
    // SAFETY: `emit` is the engine's collector, alive and exclusively ours during the invocation.
    let emit = unsafe { &mut *inv.emit };
    let mut null = None;
    // The output with its inherited labels, built where it waits to be
    // sent (no error so far: after one, outputs are only dropped).
    if inv.error.is_none() {
        if let Some(slot) = emit.slot(variant as usize) {
            let may_suspend = slot.may_suspend;
            // SAFETY: the values were read by the kinds of the variant's labels (contract).
            if let Some(l) = unsafe { fill(slot, out, values) } {
                emit.discard_slot(); // releases the fields
                inv.fail(|| null_field(l, variant));
                return;
            }
            if may_suspend {
                suspending(|| emit.commit_slot());
            } else {
                emit.commit_slot();
            }
            return;
        }
    }
    let mut rec = Record::with_capacity(out.labels.len());
    match &out.sorted {
        Some(order) => {
            for &i in order {
                let l = out.labels[i];
                // SAFETY: as above.
                if let Some(v) = unsafe { value(l, &values[i], &mut null) } {
                    rec.push_sorted(l, v);
                }
            }
        }
        None => {
            for (l, v) in out.labels.iter().zip(values) {
                // SAFETY: as above.
                if let Some(v) = unsafe { value(*l, v, &mut null) } {
                    rec.set(*l, v);
                }
            }
        }
    }
    if inv.error.is_some() {
        return; // dropping `rec` releases the fields
    }
    if let Some(l) = null {
        inv.fail(|| null_field(l, variant));
        return;
    }
    let r = if emit.may_suspend() {
        suspending(|| emit.emit(variant as usize, rec))
    } else {
        emit.emit(variant as usize, rec)
    };
    if let Err(e) = r {
        inv.fail(|| e);
    }
}

/// Fills an output's slot from the values of a `C4SNetOut` call whose
/// labels are all tags and the call's input.
///
/// # Safety
/// `values` were read as ints.
#[inline(always)]
unsafe fn fill_tags(slot: Slot<'_>, values: &[SnetArg]) {
    let input = slot.input.entries();
    slot.rec
        .fill_empty_sorted(slot.steps.iter().map(|&(l, step)| match step {
            Src::Arg(j) => (
                l,
                // SAFETY: the values were read as ints (contract).
                Value::Int(i64::from(unsafe { values[j as usize].tag })),
            ),
            Src::Input(i) => (l, input[i as usize].1.clone()),
        }));
}

/// Fills an output's slot from the values of a `C4SNetOut` call and the
/// call's input; returns the first null field's label, if one is (the
/// slot then holds the other values, to be discarded).
///
/// # Safety
/// `values` were read by the kinds of `out`'s labels; field values are
/// owned references (they move into the record) or null.
#[inline(always)]
unsafe fn fill(slot: Slot<'_>, out: &OutVariant, values: &[SnetArg]) -> Option<Label> {
    if !out.fields {
        // Tags alone: no value can be null.
        // SAFETY: the values were read as ints (contract).
        unsafe { fill_tags(slot, values) };
        return None;
    }
    let input = slot.input.entries();
    let mut null = None;
    for &(l, step) in slot.steps {
        match step {
            Src::Arg(j) => {
                let v = &values[j as usize];
                // SAFETY: `v` was read by the kind of `l` (contract).
                if let Some(v) = unsafe { value(l, v, &mut null) } {
                    slot.rec.push_sorted(l, v);
                }
            }
            Src::Input(i) => slot.rec.push_sorted(l, input[i as usize].1.clone()),
        }
    }
    null
}

/// The value of label `l` in a `C4SNetOut` call; a null field is noted in
/// `null` (the first one) and gives `None`.
///
/// # Safety
/// `v` was read by the kind of `l` (a field pointer for a field, an int
/// otherwise); a field pointer is an owned reference, which moves into
/// the value.
#[inline(always)]
unsafe fn value(l: Label, v: &SnetArg, null: &mut Option<Label>) -> Option<Value> {
    if l.is_field() {
        // SAFETY: kind 0 values were read as field pointers.
        let p = unsafe { v.field };
        if p.is_null() {
            null.get_or_insert(l);
            return None;
        }
        // SAFETY: an owned reference from `Arc::into_raw`; ownership moves into the record.
        let arc = unsafe { Arc::from_raw(p as *const C4Data) };
        Some(Value::Field(Field::new(arc)))
    } else {
        // SAFETY: kind 1 values were read as ints.
        Some(Value::Int(i64::from(unsafe { v.tag })))
    }
}

/// A tag value that does not fit the box's `int` parameter: an error,
/// not a wrapped value (tags are 64-bit, a C box takes `int`).
#[cold]
fn tag_out_of_range(label: Label, value: i64) -> BoxError {
    BoxError::TagOutOfRange {
        label,
        value,
        ty: "int",
        min: i64::from(c_int::MIN),
        max: i64::from(c_int::MAX),
    }
}

#[cold]
fn null_field(label: Label, variant: c_int) -> BoxError {
    BoxError::NullField {
        label,
        variant: variant as usize,
        call: "C4SNetOut",
    }
}

/// Commits the output slot `direct` filled: with the thread's slot set
/// aside ([`suspending`]) when the commit `may_suspend` the call.
#[inline(always)]
fn commit(direct: &mut Emitter, may_suspend: bool) {
    if may_suspend {
        suspending(|| direct.commit_slot());
    } else {
        direct.commit_slot();
    }
}

/// Runs `f`, which may suspend this invocation (the engine then runs
/// other boxes on this thread before it goes on): the thread's slots name
/// no box meanwhile, and name this one again afterwards.
#[inline(always)]
fn suspending<R>(f: impl FnOnce() -> R) -> R {
    // SAFETY: this thread's slot (see `current`); the call goes on on
    // the same thread (see `Emit::emit`).
    let saved = unsafe { std::ptr::replace(current(), Current::NONE) };
    let r = f();
    // SAFETY: as above.
    unsafe { current().write(saved) };
    r
}

/// Called by a C++ trampoline ([`crate::codegen::trampoline_source_cxx`]) when an exception
/// escaped box code: fails the invocation with [`BoxError::Threw`], whose
/// message is `what` (a `std::exception`'s `what()`, copied here) or, when
/// null, says the exception's type is unknown. The first error of an
/// invocation wins, as for every other error.
///
/// # Safety
/// `what` is null or a NUL-terminated string; called from the trampoline
/// of the invocation `hnd` names, on its thread, before it returns.
#[no_mangle]
pub unsafe extern "C" fn snet_c4snet_box_threw(hnd: *mut c_void, what: *const c_char) {
    let what = (!what.is_null()).then(|| {
        // SAFETY: a NUL-terminated string (contract).
        unsafe { CStr::from_ptr(what) }
            .to_string_lossy()
            .into_owned()
    });
    let Some(inv) = check_handle(hnd) else {
        return;
    };
    // SAFETY: `check_handle` returns only this thread's live invocation.
    let inv = unsafe { &mut *inv };
    inv.fail(|| BoxError::Threw {
        language: "C++",
        what,
    });
}

/// One resolved C box.
pub struct CBox {
    name: Arc<str>,
    /// Where the box is declared (`FILE:LINE:COL`), for crash reports.
    loc: Box<str>,
    index: usize,
    call: BoxFn,
    inputs: Vec<Label>,
    outputs: Vec<OutVariant>,
    kinds: Vec<Vec<c_int>>,
    /// `kinds` as `C4SNetOut` reads them (pointers into `kinds`).
    variants: Vec<VariantKinds>,
}

// SAFETY: `variants` only points into the box's own `kinds`, which are
// never changed after it is made; the rest is `Send + Sync`.
unsafe impl Send for CBox {}
// SAFETY: as above.
unsafe impl Sync for CBox {}

impl CBox {
    /// The box's arguments, in signature order, into `args` (as long as
    /// the inputs): field values as owned C references, tags as ints. On
    /// an error, the field references made so far are released. `at`:
    /// the inputs' positions in `input`, planned for its label set
    /// ([`Emitter::arg_positions`]; empty: not known): a tag is read
    /// there when it is there, found by its label otherwise.
    #[inline(always)]
    fn arguments(&self, input: &Record, at: &[u32], args: &mut [SnetArg]) -> Result<(), BoxError> {
        let inputs = &self.inputs[..args.len()];
        let entries = input.entries();
        for k in 0..inputs.len() {
            let l = inputs[k];
            if !l.is_field() {
                let v = match at.get(k).and_then(|&p| entries.get(p as usize)) {
                    Some((m, Value::Int(v))) if *m == l => Some(*v),
                    _ => input.int(l),
                };
                if let Some(v) = v {
                    match c_int::try_from(v) {
                        Ok(t) => {
                            args[k] = SnetArg { tag: t };
                            continue;
                        }
                        Err(_) => {
                            self.release(&args[..k]);
                            return Err(tag_out_of_range(l, v));
                        }
                    }
                }
            }
            match self.field_argument(input, l) {
                Ok(p) => args[k] = SnetArg { field: p },
                Err(e) => {
                    self.release(&args[..k]);
                    return Err(e);
                }
            }
        }
        Ok(())
    }

    /// [`CBox::arguments`] for a run whose inputs are all tags at planned
    /// positions (`at`, checked when the run started: every input label a
    /// tag with a position in the planned label set, which every input of
    /// the run has): each value read where the plan put it, without a
    /// look at its label. `false` (nothing to release: no field was
    /// made): a value is not an int or does not fit one; the caller then
    /// reads the arguments by [`CBox::arguments`], which reports it. `N`,
    /// the count, is known to the compiler: no loop.
    #[inline(always)]
    fn tag_arguments<const N: usize>(
        input: &Record,
        at: &[usize; N],
        args: &mut [SnetArg; ARGS_INLINE],
    ) -> bool {
        // SAFETY: a run of tag arguments is planned for a set of at most
        // four labels (`CBox::invoke_run`, `calls`), whose inputs are
        // inline (`Emitter::input`).
        let entries = unsafe { input.inline_entries_ptr() };
        for (a, &p) in args.iter_mut().zip(at) {
            debug_assert!(p < input.len());
            // SAFETY: every input of a run has the run's planned label set
            // (its first was planned for, each next one checked by
            // `Emitter::next_input`), and `p` is a position in that set
            // (`CBox::invoke_run`).
            match unsafe { &*entries.add(p) } {
                (_, Value::Int(v)) => {
                    let t = *v as c_int;
                    if i64::from(t) != *v {
                        return false;
                    }
                    *a = SnetArg { tag: t };
                }
                _ => return false,
            }
        }
        true
    }

    /// Releases the field references among the first arguments.
    #[cold]
    fn release(&self, args: &[SnetArg]) {
        for (l, a) in self.inputs.iter().zip(args) {
            if l.is_field() {
                // SAFETY: field arguments made so far are owned references.
                unsafe { crate::abi::C4SNetFree(a.field) };
            }
        }
    }

    /// A field argument: an owned C reference to the value of `l` (a tag
    /// that is missing: the error).
    #[inline(never)]
    fn field_argument(&self, input: &Record, l: Label) -> Result<*mut CField, BoxError> {
        if !l.is_field() {
            return Err(BoxError::MissingInput { label: l });
        }
        let f = input.field(l).ok_or(BoxError::MissingInput { label: l })?;
        // The engine fetches a remote field's value before the box runs.
        let value = f.get().ok_or(BoxError::NotLocal { label: l })?;
        // The C reference is the field's own allocation (one more count).
        Ok(match value.clone().into_any().downcast::<C4Data>() {
            Ok(arc) => Arc::into_raw(arc) as *mut CField,
            // C4SNet text (a reader without the C4SNet text codec).
            Err(_) => {
                let d = crate::text::decode_field(f).map_err(|e| BoxError::Unconvertible {
                    label: l,
                    language: "C",
                    reason: e.to_string(),
                })?;
                into_c_value(C4Data::new(d))
            }
        })
    }
}

impl BoxImpl for CBox {
    fn invoke(&self, input: &Record, out: &mut dyn Emit) -> Result<(), BoxError> {
        let n = self.inputs.len();
        if n > ARGS_INLINE {
            return self.invoke_spilled(input, out);
        }
        // On the stack (no allocation per call).
        let mut args = [SnetArg { tag: 0 }; ARGS_INLINE];
        self.invoke_with(input, &mut args[..n], out)
    }

    /// A run of calls with what they share set up once: the engine's
    /// collector, the invocation's state, the parts of the thread's slot
    /// that are the same for every call (the state's pointer, the box's
    /// variants, name and place, where the origin of each call is), the
    /// arguments' positions. Per call only the handle and the name's
    /// pointer are written into the slot, and the name cleared again when
    /// the box returns. Between two calls no box code runs on the thread,
    /// and whoever else may look at the slot then sees no box running:
    /// the crash handler looks at the name; `C4SNetOut`,
    /// `snet_c4snet_box_threw` and a nested call (from box code only),
    /// which would see the last call's handle, are not reached. The slot
    /// is left as the run found it, [`Current::NONE`]. Anything else
    /// running on the thread (a call of another interface marked by
    /// `crash::enter`), or more arguments than fit on the stack: one call
    /// at a time.
    fn invoke_run(&self, run: &mut Emitter) -> Result<(), BoxError> {
        let n = self.inputs.len();
        let slot = current();
        // SAFETY: this thread's slot (see `current`), read only.
        let idle = unsafe { (*slot).hnd == 0 && (*slot).name.is_null() };
        if n > ARGS_INLINE || !idle {
            return snet_engine::invoke_each(self, run);
        }
        let direct: *mut Emitter = run;
        let emit: *mut (dyn Emit + 'static) = direct;
        let mut inv = Invocation {
            cbox: self,
            emit,
            direct,
            error: None,
        };
        // Every access to the state below goes through this pointer, as
        // the C side's do.
        let invp: *mut Invocation = &mut inv;
        /// Leaves the slot as the run found it, `Current::NONE`, however
        /// the run ends.
        struct Restore(*mut Current);
        impl Drop for Restore {
            fn drop(&mut self) {
                // SAFETY: this thread's slot (see `current`).
                unsafe { self.0.write(Current::NONE) };
            }
        }
        // SAFETY: this thread's slot; with the handle 0 and the name null
        // it names no running box (see above). The collector's origin
        // is each call's (the collector outlives the run).
        unsafe {
            slot.write(Current {
                inv: invp.cast(),
                variants: self.variants.as_ptr(),
                nvariants: self.variants.len() as std::ffi::c_long,
                name_len: self.name.len(),
                loc: self.loc.as_ptr(),
                loc_len: self.loc.len(),
                origin_at: (*direct).origin_place(),
                ..Current::NONE
            });
        }
        let _restore = Restore(slot);
        let mut ids = RunIds::take();
        // The plan is the run's (it changes only between runs): whether
        // every argument is a tag at a position of the planned label set,
        // so that each call reads them there without a look at the label.
        // SAFETY: `direct` is `run`, which outlives the run; no call runs yet.
        let at = unsafe { (*direct).arg_positions() };
        let tags = at.len() == n
            && self
                .inputs
                .iter()
                .zip(at)
                .all(|(l, &p)| !l.is_field() && p != u32::MAX);
        // SAFETY: as above.
        let few = unsafe { (*direct).planned_few() };
        let run = RunState { direct, invp, slot };
        // The calls' loop made for the count of tag arguments (up to
        // three: their positions in registers or on the stack, read
        // without a loop) and the count of labels of the run's set (up
        // to four: each next input's labels compared without a loop or a
        // test of the count), and once for the rest (fields, more tags,
        // more labels).
        macro_rules! tag_runs {
            ($($n:literal: $($l:literal)*;)*) => {
                match (tags, n, few) {
                    $($((true, $n, Some($l)) => {
                        let mut p = [0usize; $n];
                        for (p, &a) in p.iter_mut().zip(at) {
                            *p = a as usize;
                        }
                        self.calls::<$n, $l>(run, &mut ids, p)
                    })*)*
                    _ => self.calls::<0, 0>(run, &mut ids, []),
                }
            };
        }
        tag_runs! {
            1: 1 2 3 4;
            2: 2 3 4;
            3: 3 4;
        }
    }
}

/// What the calls of a run share ([`CBox::calls`]).
#[derive(Clone, Copy)]
struct RunState {
    /// The engine's collector, which outlives the run.
    direct: *mut Emitter,
    /// The run's invocation state, alive for the whole run.
    invp: *mut Invocation,
    /// This thread's slot.
    slot: *mut Current,
}

impl CBox {
    /// The calls of a run ([`BoxImpl::invoke_run`], which set up `run`):
    /// with `N` tag arguments (`N > 0`), each read at its position `at`
    /// in the run's label set ([`CBox::tag_arguments`]); with `N == 0`,
    /// the arguments are read by [`CBox::arguments`]. `L`: the count of
    /// labels of the run's set ([`Emitter::planned_few`]; 0: any).
    #[inline(always)]
    fn calls<const N: usize, const L: usize>(
        &self,
        run: RunState,
        ids: &mut RunIds,
        at: [usize; N],
    ) -> Result<(), BoxError> {
        // Tag arguments are read where a plan of at most four labels puts
        // them (`tag_arguments`).
        debug_assert!(N == 0 || L > 0);
        let RunState { direct, invp, slot } = run;
        let n = self.inputs.len();
        let mut args = [SnetArg { tag: 0 }; ARGS_INLINE];
        let (name, call, index) = (self.name.as_ptr(), self.call, self.index);
        // The run's block of ids as the next handle and the end of the
        // block, in the handle's form (`id << 16 | index`): a handle a
        // call, one addition. The block is the loop's meanwhile: `ids`
        // holds none (a run that unwinds loses the rest of it, never
        // hands an id out twice), and gets the rest back at the end.
        let mut hnd = ((ids.next << 16) as usize) | index;
        let mut hnd_end = (ids.end << 16) as usize;
        ids.next = ids.end;
        // The call's input: the run's first, then each that
        // `next_input_of` gives (read before the call, which may move it).
        // SAFETY: `direct` is the run's collector, which outlives the
        // run; no call is running (nothing else uses it now).
        let mut input: *const Record = unsafe { (*direct).input() };
        let r = loop {
            {
                // SAFETY: as above; `input` is the call's, unchanged
                // since `next_input_of` gave it.
                let (r, input) = unsafe { (&*direct, &*input) };
                if !(N > 0 && Self::tag_arguments(input, &at, &mut args)) {
                    if let Err(e) = self.arguments(input, r.arg_positions(), &mut args[..n]) {
                        break Err(e);
                    }
                }
            }
            if hnd >= hnd_end {
                let (next, end) = RunIds::block();
                (hnd, hnd_end) = (((next << 16) as usize) | index, (end << 16) as usize);
            }
            let handle = hnd;
            hnd += 1 << 16;
            // SAFETY: `invp` is the run's state, alive for the whole run;
            // this thread's slot names it only while the box runs (its
            // name cleared once it returned; the handle is left, as no
            // box code runs until the next call's replaces it, and the
            // run's end clears it); the trampoline was generated for this
            // box's signature and reads exactly `inputs.len()` arguments;
            // field arguments are owned references handed to the box.
            unsafe {
                (*slot).hnd = handle;
                (*slot).name = name;
                call(handle as *mut c_void, args.as_ptr());
                (*slot).name = std::ptr::null();
            }
            // SAFETY: as above, the box returned; `L` is 0 or the plan's
            // count of labels (`invoke_run`). A call that failed ended
            // the run (`Invocation::fail`): no next input then.
            match unsafe { (*direct).next_input_of::<L>() } {
                Some(next) => input = next,
                None => break Ok(()),
            }
        };
        (ids.next, ids.end) = ((hnd >> 16) as u64, (hnd_end >> 16) as u64);
        // SAFETY: as above; no call runs.
        match unsafe { (*invp).error.take() } {
            Some(e) => Err(e),
            None => r,
        }
    }

    /// [`BoxImpl::invoke`] with more arguments than fit on the stack.
    #[cold]
    fn invoke_spilled(&self, input: &Record, out: &mut dyn Emit) -> Result<(), BoxError> {
        let mut args = vec![SnetArg { tag: 0 }; self.inputs.len()];
        self.invoke_with(input, &mut args, out)
    }

    /// [`BoxImpl::invoke`], with room for the arguments.
    #[inline(always)]
    fn invoke_with(
        &self,
        input: &Record,
        args: &mut [SnetArg],
        out: &mut dyn Emit,
    ) -> Result<(), BoxError> {
        self.arguments(input, &[], args)?;
        let id = next_id();
        let handle = ((id << 16) as usize) | self.index;
        let (direct, origin) = match out.emitter() {
            Some(e) => (e as *mut Emitter, e.origin().to_bits()),
            None => (std::ptr::null_mut(), 0),
        };
        // SAFETY: only the lifetime is erased; the pointer is dropped from
        // this thread's `Current` before `out` goes out of scope (below).
        let emit: *mut (dyn Emit + 'static) =
            unsafe { std::mem::transmute::<*mut dyn Emit, *mut (dyn Emit + 'static)>(out) };
        let mut inv = Invocation {
            cbox: self,
            emit,
            direct,
            error: None,
        };
        let slot = current();
        let running = Current {
            hnd: handle,
            inv: (&mut inv as *mut Invocation).cast(),
            variants: self.variants.as_ptr(),
            nvariants: self.variants.len() as std::ffi::c_long,
            name: self.name.as_ptr(),
            name_len: self.name.len(),
            loc: self.loc.as_ptr(),
            loc_len: self.loc.len(),
            origin,
            origin_at: std::ptr::null(),
        };
        // The common case: nothing runs on this thread, the slot is
        // `Current::NONE`, so it is set, and cleared again, without saving
        // the old one first. A zero handle and no name mean exactly that:
        // the handle, `inv` and the variants are only ever written
        // together (here and in `suspending`, a zero handle always with
        // null and 0 beside it), and the crash handler's part (`name`,
        // `loc`, `origin`, which `crash::enter` sets for boxes of other
        // interfaces) is `Running::NONE` whenever its name is null.
        // SAFETY: this thread's slot (see `current`), read only.
        let idle = unsafe { (*slot).hnd == 0 && (*slot).name.is_null() };
        if idle {
            // SAFETY: this thread's slot, cleared once the box returned
            // (`inv` is alive until then); the trampoline was generated
            // for this box's signature and reads exactly `inputs.len()`
            // arguments; field arguments are owned references handed to
            // the box.
            unsafe {
                slot.write(running);
                (self.call)(handle as *mut c_void, args.as_ptr());
                slot.write(Current::NONE);
            }
        } else {
            // SAFETY: as above, with the slot restored as it was.
            unsafe {
                let prev = std::ptr::replace(slot, running);
                (self.call)(handle as *mut c_void, args.as_ptr());
                slot.write(prev);
            }
        }
        match inv.error.take() {
            None => Ok(()),
            Some(e) => Err(e),
        }
    }
}

/// The C4SNet language interface over a table of trampolines.
pub struct C4SNet {
    table: HashMap<String, BoxFn>,
}

impl C4SNet {
    /// # Safety
    /// `entries` points to `n` entries whose names are NUL-terminated strings
    /// and whose trampolines match the program's box signatures.
    pub unsafe fn from_raw_table(entries: *const BoxEntry, n: usize) -> C4SNet {
        let entries = if n == 0 {
            &[][..]
        } else {
            // SAFETY: `n` valid entries (contract).
            unsafe { std::slice::from_raw_parts(entries, n) }
        };
        let table = entries
            .iter()
            .map(|e| {
                (
                    // SAFETY: names are NUL-terminated (contract).
                    unsafe { CStr::from_ptr(e.name) }
                        .to_string_lossy()
                        .into_owned(),
                    e.call,
                )
            })
            .collect();
        C4SNet::from_table(table)
    }

    /// The interface over trampolines by box name (and the crash handler
    /// installed).
    pub fn from_table(table: HashMap<String, BoxFn>) -> C4SNet {
        crate::crash::install();
        C4SNet { table }
    }

    /// As [`C4SNet::from_table`], without installing the crash handlers
    /// (for C box libraries loaded into a process that keeps its own).
    pub(crate) fn without_crash_handlers(table: HashMap<String, BoxFn>) -> C4SNet {
        C4SNet { table }
    }
}

impl LanguageInterface for C4SNet {
    fn resolve(&self, def: &BoxDef) -> Result<Arc<dyn BoxImpl>, ResolveError> {
        if def.interface != "C4SNet" {
            return Err(ResolveError::new(
                def,
                ResolveReason::UnknownInterface(def.interface.clone()),
            ));
        }
        let call = *self
            .table
            .get(&def.name)
            .ok_or_else(|| ResolveError::new(def, ResolveReason::MissingSymbol))?;
        let index = {
            let mut names = NAMES.lock().unwrap_or_else(|e| e.into_inner());
            match names.iter().position(|n| *n == def.name) {
                Some(i) => i,
                None => {
                    names.push(def.name.clone());
                    names.len() - 1
                }
            }
        } & 0xffff;
        let kinds: Vec<Vec<c_int>> = def
            .outputs
            .iter()
            .map(|v| v.iter().map(|l| c_int::from(!l.is_field())).collect())
            .collect();
        // The inner vectors' buffers do not move when `kinds` does.
        let variants = kinds
            .iter()
            .map(|k| VariantKinds {
                kinds: k.as_ptr(),
                n: k.len() as std::ffi::c_long,
                tags: if k.len() <= TAGS_FAST && k.iter().all(|&t| t == 1) {
                    k.len() as std::ffi::c_long
                } else {
                    -1
                },
                ints: if k.iter().all(|&t| t == 1) {
                    k.len() as std::ffi::c_long
                } else {
                    INTS_NONE
                },
            })
            .collect();
        Ok(Arc::new(CBox {
            name: Arc::from(def.name.as_str()),
            loc: def.loc.to_string().into_boxed_str(),
            index,
            call,
            inputs: def.inputs.clone(),
            outputs: def.outputs.iter().map(|v| OutVariant::new(v)).collect(),
            kinds,
            variants,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `void *quiet(void *hnd)`: emits nothing.
    unsafe extern "C" fn quiet(_hnd: *mut c_void, _args: *const SnetArg) {}

    struct Nothing;

    impl Emit for Nothing {
        fn emit(&mut self, _variant: usize, _rec: Record) -> Result<(), BoxError> {
            Ok(())
        }
    }

    fn name_of(r: Running) -> Option<String> {
        (!r.name.0.is_null()).then(|| {
            // SAFETY: a name the slot was given: a live `str`'s bytes.
            let bytes = unsafe { std::slice::from_raw_parts(r.name.0, r.name.1) };
            String::from_utf8_lossy(bytes).into_owned()
        })
    }

    /// A run's block of ids is its own: ids taken on the thread while the
    /// run holds its block (another box's call while the run is
    /// suspended) and after it ended, across refills of both blocks,
    /// never repeat one of the run's.
    #[test]
    fn a_runs_ids_are_never_handed_out_twice() {
        let mut seen = std::collections::HashSet::new();
        for _ in 0..3 {
            assert!(seen.insert(next_id()));
        }
        let mut run = RunIds::take();
        for k in 0..3 * ID_BLOCK {
            assert!(seen.insert(run.next()), "run id repeated");
            if k % 7 == 0 {
                assert!(seen.insert(next_id()), "thread id repeated");
            }
        }
        drop(run);
        for _ in 0..2 * ID_BLOCK {
            assert!(seen.insert(next_id()), "id repeated after the run");
        }
    }

    /// A C box called while a box of another interface is marked as
    /// running on the thread (`crash::enter`: a zero handle, but a name)
    /// leaves that mark as it found it, and a call with nothing running
    /// leaves nothing running.
    #[test]
    fn a_call_restores_what_ran_on_the_thread_before_it() {
        let lang = C4SNet::from_table(HashMap::from([("quiet".to_string(), quiet as BoxFn)]));
        let b = lang
            .resolve(&BoxDef::declared(
                "quiet",
                "C4SNet",
                vec![],
                vec![],
                snet_core::Loc::start_of("test.snet"),
            ))
            .expect("resolves");
        let prev = crate::crash::enter("outer");
        b.invoke(&Record::new(), &mut Nothing).expect("runs");
        assert_eq!(name_of(running()).as_deref(), Some("outer"));
        crate::crash::leave(prev);
        assert_eq!(name_of(running()), None);
        b.invoke(&Record::new(), &mut Nothing).expect("runs");
        assert_eq!(name_of(running()), None);
        // SAFETY: this thread's slot, read only.
        assert_eq!(unsafe { (*current()).hnd }, 0);
    }
}
