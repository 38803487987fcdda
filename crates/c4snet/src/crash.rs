//! Naming the box a crash happens in.
//!
//! [`install`] (once per process) installs a `sigaction` handler for
//! SIGSEGV, SIGBUS, SIGFPE, SIGILL and SIGABRT. While a box runs, the
//! invoking thread's invocation slot (a C thread-local, `current` in
//! `csrc/out.c`, which the glue fills around every box call and clears
//! while a call is suspended; other interfaces' boxes use [`enter`] /
//! [`leave`]) points at its name and the place of its declaration, and
//! holds the origin of the call's input record. The handler reads the slot
//! (plain TLS loads), and if a box is running writes
//!
//! ```text
//! snet: box `NAME` crashed (signal SIGSEGV), declared at FILE:LINE:COL, caused by input record N (line L)
//! ```
//!
//! (under a distributed run with one process per node `snet: node K: box
//! ...`, see [`set_node`]; the declaration and the record when known) with
//! `write(2)` (async-signal safe, digits formatted by hand), runs the hook
//! set with [`set_crash_hook`], if any, and leaves with `_exit(1)`
//! ([`end_process`]). Outside boxes it restores the previous disposition
//! and returns, so the fault recurs and is handled as before (Rust's
//! stack-overflow report, the default core dump).
//!
//! [`install`] also registers an `atexit(3)` handler: a box that calls
//! `exit()` (with any status, 0 too) would otherwise end its process as if
//! the run had ended normally, with records lost (and, on a node of a
//! distributed run, before the run's protocol said it was done). If a box
//! is running on the thread that calls `exit`, the handler writes `snet:
//! box `NAME` called exit()` (with the declaration and the input record, as
//! above) and leaves the same way.

use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicI64, AtomicUsize, Ordering};
use std::sync::OnceLock;

/// The node this process is in a distributed run with one process per
/// node (MPI), named in crash reports; -1: not set.
static NODE: AtomicI64 = AtomicI64::new(-1);

/// Names node `node` in crash reports of this process (`snet: node 2: box
/// ...`): for runs with one process per node.
pub fn set_node(node: u32) {
    NODE.store(i64::from(node), Ordering::Relaxed);
}

const SIGNALS: [(c_int, &str); 5] = [
    (libc::SIGSEGV, "SIGSEGV"),
    (libc::SIGBUS, "SIGBUS"),
    (libc::SIGFPE, "SIGFPE"),
    (libc::SIGILL, "SIGILL"),
    (libc::SIGABRT, "SIGABRT"),
];

struct Old([libc::sigaction; 5]);
// SAFETY: plain data (handler addresses and masks), written once before use.
unsafe impl Sync for Old {}
// SAFETY: as above.
unsafe impl Send for Old {}

static OLD: OnceLock<Old> = OnceLock::new();

pub use crate::invoke::Running;

/// Marks `name` as running on this thread (a box of another interface:
/// C4SNet's calls set the slot themselves); returns what was running for
/// [`leave`].
pub fn enter(name: &str) -> Running {
    crate::invoke::swap_running(Running {
        name: (name.as_ptr(), name.len()),
        ..Running::NONE
    })
}

/// Marks no box as running on this thread (a suspended call); returns
/// what was running for [`leave`].
pub fn clear() -> Running {
    crate::invoke::swap_running(Running::NONE)
}

/// Restores what [`enter`] or [`clear`] returned.
pub fn leave(prev: Running) {
    crate::invoke::swap_running(prev);
}

/// A function the crash handler calls after its report, before the
/// process ends ([`set_crash_hook`]); 0: none.
static HOOK: AtomicUsize = AtomicUsize::new(0);

/// Sets a function that the crash and `exit()` handlers call after
/// writing their report and before ending the process with `_exit(1)`
/// (e.g. to write out what a run has finished). It runs inside a signal
/// handler, on the thread of the crashed box, with that box's state
/// broken: it must be async-signal-safe (no locks, no allocation; `write(2)`
/// of memory it owns is fine) and must not return into the box (it may
/// end the process itself).
pub fn set_crash_hook(hook: extern "C" fn()) {
    HOOK.store(hook as usize, Ordering::Release);
}

/// Ends the process after a crash report: the [`set_crash_hook`] hook,
/// then [`crate::rescue::exit`] (a live thread writes the records that
/// finished, then `_exit(1)`: no exit handlers, no unwinding: the crashed
/// box's thread cannot go on). Async-signal-safe.
fn end_process() -> ! {
    let hook = HOOK.load(Ordering::Acquire);
    if hook != 0 {
        // SAFETY: only `set_crash_hook` stores a value: an `extern "C" fn()`.
        let f: extern "C" fn() = unsafe { std::mem::transmute::<usize, extern "C" fn()>(hook) };
        f();
    }
    // The records that finished are written first (`rescue`), then _exit.
    crate::rescue::exit(1)
}

fn write_all(bytes: &[u8]) {
    let mut b = bytes;
    while !b.is_empty() {
        // SAFETY: write(2) on stderr from a valid buffer; async-signal-safe.
        let n = unsafe { libc::write(2, b.as_ptr() as *const c_void, b.len()) };
        if n <= 0 {
            return;
        }
        b = &b[n as usize..];
    }
}

/// The decimal digits of `v` in `buf` (async-signal-safe: formatting
/// machinery is not).
fn digits(v: u64, buf: &mut [u8; 20]) -> &[u8] {
    let mut i = buf.len();
    let mut v = v;
    loop {
        i -= 1;
        buf[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    &buf[i..]
}

/// Writes `snet: [node K: ]box `NAME` (async-signal-safe).
fn write_box_prefix(r: &Running) {
    write_all(b"snet: ");
    let node = NODE.load(Ordering::Relaxed);
    if node >= 0 {
        write_all(b"node ");
        write_all(digits(node as u64, &mut [0; 20]));
        write_all(b": ");
    }
    write_all(b"box `");
    // SAFETY: the slot points at the running box's name, alive during the invocation.
    write_all(unsafe { std::slice::from_raw_parts(r.name.0, r.name.1) });
}

/// Writes `, declared at FILE:LINE:COL, caused by input record N (line
/// L)` (the parts known) and the end of the line (async-signal-safe); as
/// `snet_engine::Origin` shows an origin.
fn write_box_suffix(r: &Running) {
    if !r.loc.0.is_null() {
        write_all(b", declared at ");
        // SAFETY: the slot points at the running box's location, alive during the invocation.
        write_all(unsafe { std::slice::from_raw_parts(r.loc.0, r.loc.1) });
    }
    let origin = snet_engine::Origin::from_bits(r.origin);
    if let Some(n) = origin.number() {
        let beyond = |v: u64| v >= u64::from(u32::MAX);
        write_all(b", caused by input record ");
        if beyond(n) {
            write_all(b"beyond 4294967294");
        } else {
            write_all(digits(n, &mut [0; 20]));
        }
        if let Some(l) = origin.line() {
            write_all(b" (line ");
            if beyond(l) {
                write_all(b"beyond 4294967294");
            } else {
                write_all(digits(l, &mut [0; 20]));
            }
            write_all(b")");
        }
    }
    write_all(b"\n");
}

extern "C" fn on_signal(sig: c_int, info: *mut libc::siginfo_t, _ctx: *mut c_void) {
    let r = crate::invoke::running();
    let idx = SIGNALS.iter().position(|(s, _)| *s == sig).unwrap_or(0);
    if r.name.0.is_null() {
        if let Some(old) = OLD.get() {
            // SAFETY: re-installing the disposition saved by `install`.
            unsafe { libc::sigaction(sig, &old.0[idx], std::ptr::null_mut()) };
        }
        return;
    }
    write_box_prefix(&r);
    // SAFETY: the kernel passes a valid siginfo to an SA_SIGINFO handler.
    let addr = unsafe { (*info).si_addr() } as usize;
    if sig == libc::SIGSEGV && snet_engine::in_box_stack_guard(addr) {
        write_all(b"` overflowed its stack (run with a larger --box-stack)");
    } else {
        write_all(b"` crashed (signal ");
        write_all(SIGNALS[idx].1.as_bytes());
        write_all(b")");
    }
    write_box_suffix(&r);
    end_process();
}

/// At `exit()`: a box running on this thread called it (the run is not
/// over): a failure naming the box, not the normal end it would look like.
extern "C" fn on_exit() {
    let r = crate::invoke::running();
    if r.name.0.is_null() {
        return;
    }
    write_box_prefix(&r);
    write_all(b"` called exit() (a box must return; the run is stopped)");
    write_box_suffix(&r);
    end_process();
}

/// Installs the handlers (idempotent).
pub fn install() {
    OLD.get_or_init(|| {
        // SAFETY: registering a plain extern "C" function without arguments.
        unsafe { libc::atexit(on_exit) };
        // SAFETY: zeroed sigaction structs are valid "no handler" values.
        let mut old: [libc::sigaction; 5] = unsafe { std::mem::zeroed() };
        for (i, (sig, _)) in SIGNALS.iter().enumerate() {
            // SAFETY: a zeroed sigaction with our handler, SA_SIGINFO and an empty mask.
            unsafe {
                let mut sa: libc::sigaction = std::mem::zeroed();
                sa.sa_sigaction =
                    on_signal as extern "C" fn(c_int, *mut libc::siginfo_t, *mut c_void) as usize;
                sa.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
                libc::sigemptyset(&mut sa.sa_mask);
                libc::sigaction(*sig, &sa, &mut old[i]);
            }
        }
        Old(old)
    });
}
