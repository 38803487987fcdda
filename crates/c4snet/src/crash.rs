//! Naming the box a crash happens in.
//!
//! [`install`] (once per process) installs a `sigaction` handler for
//! SIGSEGV, SIGBUS, SIGFPE, SIGILL and SIGABRT. While a box runs, the
//! invoking thread's invocation slot (a C thread-local, `current` in
//! `csrc/out.c`, which the glue fills around every box call and clears
//! while a call is suspended; other interfaces' boxes use [`enter`] /
//! [`leave`]) points at its name. The handler reads the slot (plain TLS
//! loads), and if a box is running writes `snet: box `NAME` crashed
//! (signal SIGSEGV)` (under MPI `snet: node K: box ...`, see
//! [`set_node`]) with `write(2)` (async-signal safe) and leaves with
//! `_exit(1)`. Outside boxes it restores the previous disposition and
//! returns, so the fault recurs and is handled as before
//! (Rust's stack-overflow report, the default core dump).
//!
//! [`install`] also registers an `atexit(3)` handler: a box that calls
//! `exit()` (with any status, 0 too) would otherwise end its process as if
//! the run had ended normally, with records lost (and, on a node of a
//! distributed run, before the run's protocol said it was done). If a box
//! is running on the thread that calls `exit`, the handler writes `snet:
//! box `NAME` called exit()` and leaves with `_exit(1)`: a failure.

use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicI64, Ordering};
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

/// Marks `name` as running on this thread (a box of another interface:
/// C4SNet's calls set the slot themselves); returns the previous name for
/// [`leave`].
pub fn enter(name: &str) -> (*const u8, usize) {
    crate::invoke::swap_running_name((name.as_ptr(), name.len()))
}

/// Marks no box as running on this thread (a suspended call); returns
/// the previous name for [`leave`].
pub fn clear() -> (*const u8, usize) {
    crate::invoke::swap_running_name((std::ptr::null(), 0))
}

/// Restores the name saved by [`enter`] or [`clear`].
pub fn leave(prev: (*const u8, usize)) {
    crate::invoke::swap_running_name(prev);
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

/// Writes `snet: [node K: ]box `NAME` (async-signal-safe).
fn write_box_prefix(p: *const u8, n: usize) {
    write_all(b"snet: ");
    let node = NODE.load(Ordering::Relaxed);
    if node >= 0 {
        // Digits by hand: formatting machinery is not async-signal-safe.
        let mut digits = [0u8; 20];
        let mut i = digits.len();
        let mut v = node as u64;
        loop {
            i -= 1;
            digits[i] = b'0' + (v % 10) as u8;
            v /= 10;
            if v == 0 {
                break;
            }
        }
        write_all(b"node ");
        write_all(&digits[i..]);
        write_all(b": ");
    }
    write_all(b"box `");
    // SAFETY: the slot points at the running box's name, alive during the invocation.
    write_all(unsafe { std::slice::from_raw_parts(p, n) });
}

extern "C" fn on_signal(sig: c_int, info: *mut libc::siginfo_t, _ctx: *mut c_void) {
    let (p, n) = crate::invoke::running_name();
    let idx = SIGNALS.iter().position(|(s, _)| *s == sig).unwrap_or(0);
    if p.is_null() {
        if let Some(old) = OLD.get() {
            // SAFETY: re-installing the disposition saved by `install`.
            unsafe { libc::sigaction(sig, &old.0[idx], std::ptr::null_mut()) };
        }
        return;
    }
    write_box_prefix(p, n);
    // SAFETY: the kernel passes a valid siginfo to an SA_SIGINFO handler.
    let addr = unsafe { (*info).si_addr() } as usize;
    if sig == libc::SIGSEGV && snet_engine::callstack::in_guard(addr) {
        write_all(b"` overflowed its stack (run with a larger --box-stack)\n");
    } else {
        write_all(b"` crashed (signal ");
        write_all(SIGNALS[idx].1.as_bytes());
        write_all(b")\n");
    }
    // The records that finished are written first (`rescue`).
    crate::rescue::exit(1);
}

/// At `exit()`: a box running on this thread called it (the run is not
/// over): a failure naming the box, not the normal end it would look like.
extern "C" fn on_exit() {
    let (p, n) = crate::invoke::running_name();
    if p.is_null() {
        return;
    }
    write_box_prefix(p, n);
    write_all(b"` called exit() (a box must return; the run is stopped)\n");
    // Ends the process at once (no further exit handlers), after the
    // records that finished are written (`rescue`).
    crate::rescue::exit(1);
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
