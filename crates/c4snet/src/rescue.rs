//! Writing the records that finished before a box's crash ends the process.
//!
//! The crash handler ([`crate::crash`]) runs on the crashing thread, in a
//! signal handler: it may only call async-signal-safe functions, and the
//! thread may hold any lock (it stopped inside box code). So it does not
//! write records itself: it hands the job to a thread that is alive.
//!
//! # Protocol
//!
//! * [`on_crash`] (the runner, once it opened the output) registers the
//!   rescue: a closure that writes what finished (the output thread's
//!   pending bytes) and returns within a bounded time. The first call
//!   starts the rescue thread, which blocks in `read(2)` on a pipe.
//! * [`exit`] (the crash handler and the `exit()` check, instead of a bare
//!   `_exit`) writes one byte to that pipe (`write(2)`: async-signal-safe),
//!   then waits in `poll(2)` (async-signal-safe) until the rescue thread
//!   has written a byte to a second pipe, at most [`WAIT_MS`], and leaves
//!   with `_exit`. Nobody reads the second pipe, so every thread that
//!   crashes at the same time sees it readable.
//! * The rescue thread runs the closure and writes the byte. Without a
//!   registered rescue (no output of this process, or a node process
//!   whose output is node 0's) `exit` is `_exit` at once.

use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::Mutex;

/// The longest a crashed process waits for its finished records to be
/// written before it ends anyway (a stuck pipe must not hang it).
pub const WAIT_MS: c_int = 5000;

/// The write end of the pipe that wakes the rescue thread (-1: none).
static WAKE: AtomicI32 = AtomicI32::new(-1);
/// The read end of the pipe the rescue thread writes when done (-1: none).
static DONE: AtomicI32 = AtomicI32::new(-1);

type Rescue = Box<dyn Fn() + Send>;
static RESCUE: Mutex<Option<Rescue>> = Mutex::new(None);

fn pipe() -> std::io::Result<[c_int; 2]> {
    let mut fds = [0 as c_int; 2];
    // SAFETY: pipe2 writes two descriptors into the array we own.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(fds)
}

/// Registers `rescue`, run on a thread of its own if a box crashes (or
/// calls `exit()`) before the process ends; replaces an earlier one.
/// `rescue` must return within a few seconds (the process waits at most
/// [`WAIT_MS`] for it).
pub fn on_crash(rescue: impl Fn() + Send + 'static) -> std::io::Result<()> {
    *RESCUE.lock().unwrap_or_else(|e| e.into_inner()) = Some(Box::new(rescue));
    if WAKE.load(Ordering::Acquire) >= 0 {
        return Ok(());
    }
    let [wake_r, wake_w] = pipe()?;
    let [done_r, done_w] = pipe()?;
    std::thread::Builder::new()
        .name("snet-rescue".into())
        .spawn(move || {
            let mut b = 0u8;
            // SAFETY: reading one byte into a local from our own pipe.
            while unsafe { libc::read(wake_r, (&mut b as *mut u8).cast::<c_void>(), 1) } != 1 {}
            if let Some(r) = RESCUE.lock().unwrap_or_else(|e| e.into_inner()).as_ref() {
                r();
            }
            // SAFETY: writing one byte from a local to our own pipe.
            unsafe { libc::write(done_w, (&b as *const u8).cast::<c_void>(), 1) };
        })?;
    DONE.store(done_r, Ordering::Release);
    WAKE.store(wake_w, Ordering::Release);
    Ok(())
}

/// Ends the process with `status` after the registered rescue ran (or
/// [`WAIT_MS`] passed). Async-signal-safe.
pub fn exit(status: c_int) -> ! {
    let (wake, done) = (WAKE.load(Ordering::Acquire), DONE.load(Ordering::Acquire));
    if wake >= 0 && done >= 0 {
        let b = 1u8;
        // SAFETY: write(2) of one byte from a local; async-signal-safe.
        unsafe { libc::write(wake, (&b as *const u8).cast::<c_void>(), 1) };
        let mut p = libc::pollfd {
            fd: done,
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: poll(2) on one descriptor we own; async-signal-safe.
        // (errno is read directly: no formatting, no allocation.)
        while unsafe { libc::poll(&mut p, 1, WAIT_MS) } < 0
            // SAFETY: errno of this thread.
            && unsafe { *libc::__errno_location() } == libc::EINTR
        {}
    }
    // SAFETY: _exit is async-signal-safe and ends the process at once.
    unsafe { libc::_exit(status) }
}
