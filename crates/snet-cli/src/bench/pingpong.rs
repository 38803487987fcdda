//! The communication benchmark's measuring end (`snet pingpong`, thesis
//! 5.2): a ping-pong between node 0 and node 1 of a transport, message
//! sizes from 8 bytes up, reporting per size the median round-trip time
//! and the *busy time* per round trip: the CPU time that the threads doing
//! the communication spent in both processes over the timed round trips,
//! waiting included when waiting spins (that is what polling costs),
//! sleeping excluded (thesis 5.1.2's "overhead").
//!
//! * Over a transport (`shm` in any notify × fields mode, `mpi`), the
//!   message is a field payload on the `Field` channel, echoed back by
//!   node 1 as the very buffer it received. Payloads are allocated as
//!   field values (`FieldBytes::for_field`), so in zero-copy mode they live
//!   in the arena and every transfer passes an offset; in single-copy mode
//!   every transfer copies once; chunked, twice. Size 0 stands for *the
//!   message alone*: an 8-byte message (the transport's header, the size
//!   of the raw ping-pongs' data word) on the `Control` channel, no field
//!   payload -- the transport's own cost, what the raw ping-pongs compare
//!   with.
//! * `raw-spin` and `raw-futex` are the comparison written by hand: two
//!   processes (a fork) and one shared page, an 8-byte message and a
//!   sequence word per direction; the receiver spins on the word, or sleeps
//!   on it with `futex(2)` and is woken by the sender.
//!
//! Busy time is read from per-thread CPU clocks ([`busy_now`]): the
//! calling thread (which sends and receives) plus the transport's own
//! communication threads (`snet-mpi`, the MPI backend's thread; the shm
//! transport has none), nanosecond resolution. The whole process's CPU
//! time (`getrusage(RUSAGE_SELF)`, which also counts threads that merely
//! exist, such as Open MPI's, and has a coarser clock) is reported beside
//! it as `proc_busy_ns`, for comparison.
//!
//! Each process is pinned to a CPU of its own (node 0 to the first, node
//! 1 to the second), as MPI benchmarks bind ranks (`SNET_PINGPONG_PIN=0`:
//! not pinned).
//!
//! Node 0 prints one JSON object per size on standard output:
//! `{"transport":..,"notify":..,"fields":..,"bytes":..,"reps":..,"rtt_ns":..,"mean_ns":..,"busy_ns":..,"proc_busy_ns":..}`.
//! `bench/comm` runs it for every transport and mode and writes the tables.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use snet_core::{FieldBytes, Rank};
use snet_engine::dist::{Channel, Payload, Transport};

use snet_shm::{FieldMode, Notify};

use snet_runner::say_raw;

use super::pin::pin;

/// One line on standard error in one write (as the runner's `say!`).
macro_rules! say {
    ($($arg:tt)*) => {
        say_raw(&format!("{}\n", format_args!($($arg)*)))
    };
}

/// CPU time (user + system) of this whole process so far.
fn proc_cpu_now() -> u64 {
    // SAFETY: an all-zero rusage is valid; getrusage fills it.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: a valid out pointer.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) };
    let tv = |t: libc::timeval| t.tv_sec as u64 * 1_000_000_000 + t.tv_usec as u64 * 1000;
    tv(u.ru_utime) + tv(u.ru_stime)
}

/// A CPU clock in nanoseconds, 0 if it cannot be read.
fn clock_ns(id: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid out pointer.
    if unsafe { libc::clock_gettime(id, &mut ts) } != 0 {
        return 0;
    }
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// The CPU-time clock of thread `tid` of this process: Linux encodes a
/// per-thread CPU clock as `(~tid << 3) | CPUCLOCK_PERTHREAD (4) |
/// CPUCLOCK_SCHED (2)` — what glibc's `pthread_getcpuclockid` returns —
/// readable by any thread of the same process.
fn thread_clock(tid: i32) -> libc::clockid_t {
    ((!tid) << 3) | 6
}

/// Whether a thread of the given name (`/proc/self/task/*/comm`) is one of
/// the transport's communication threads, whose CPU time is busy time.
fn is_comm_thread(name: &str) -> bool {
    name.trim_end() == "snet-mpi"
}

/// CPU time so far of the threads that communicate: the calling thread
/// (`CLOCK_THREAD_CPUTIME_ID`) and the transport's communication threads
/// (found by name under `/proc/self/task`, read through their per-thread
/// CPU clocks). Differences of two readings are busy time.
fn busy_now() -> u64 {
    let mut ns = clock_ns(libc::CLOCK_THREAD_CPUTIME_ID);
    // SAFETY: gettid has no preconditions.
    let me = unsafe { libc::gettid() };
    if let Ok(tasks) = std::fs::read_dir("/proc/self/task") {
        for t in tasks.flatten() {
            let Some(tid) = t.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else {
                continue;
            };
            if tid == me {
                continue;
            }
            let name = std::fs::read_to_string(t.path().join("comm")).unwrap_or_default();
            if is_comm_thread(&name) {
                ns += clock_ns(thread_clock(tid));
            }
        }
    }
    ns
}

/// Both CPU counts at one moment: (busy threads, whole process), ns.
#[derive(Clone, Copy)]
struct Cpu {
    busy: u64,
    proc: u64,
}

impl Cpu {
    fn now() -> Cpu {
        Cpu {
            busy: busy_now(),
            proc: proc_cpu_now(),
        }
    }

    /// CPU used since `self`.
    fn since(self) -> Cpu {
        let n = Cpu::now();
        Cpu {
            busy: n.busy.saturating_sub(self.busy),
            proc: n.proc.saturating_sub(self.proc),
        }
    }

    fn to_bytes(self) -> [u8; 16] {
        let mut b = [0; 16];
        b[..8].copy_from_slice(&self.busy.to_le_bytes());
        b[8..].copy_from_slice(&self.proc.to_le_bytes());
        b
    }

    fn from_bytes(b: &[u8]) -> Option<Cpu> {
        Some(Cpu {
            busy: u64::from_le_bytes(b.get(..8)?.try_into().ok()?),
            proc: u64::from_le_bytes(b.get(8..16)?.try_into().ok()?),
        })
    }
}

/// Round trips timed per size: enough for a stable median, a few seconds at most.
fn reps_for(bytes: usize) -> usize {
    match bytes {
        0..=65536 => 2000,
        65537..=1048576 => 300,
        1048577..=16777216 => 40,
        _ => 8,
    }
}

fn median(v: &mut [u64]) -> u64 {
    v.sort_unstable();
    v[v.len() / 2]
}

fn mean(v: &[u64]) -> u64 {
    v.iter().sum::<u64>() / v.len().max(1) as u64
}

const PING: u8 = 1;
const REPORT: u8 = 2;
const END: u8 = 3;

/// One measured size, as printed: the median round trip, the mean one
/// (comparable with the busy time, which is a mean: CPU time over the
/// timed round trips) and the busy time per round trip, from the
/// communicating threads' clocks and from the whole processes'.
fn line(what: (&str, &str, &str), bytes: usize, times: &mut [u64], cpu: Cpu) -> String {
    let (reps, avg, rtt) = (times.len(), mean(times), median(times));
    let n = reps.max(1) as u64;
    let (busy, proc) = (cpu.busy / n, cpu.proc / n);
    format!(
        "{{\"transport\":\"{}\",\"notify\":\"{}\",\"fields\":\"{}\",\"bytes\":{bytes},\"reps\":{reps},\"rtt_ns\":{rtt},\"mean_ns\":{avg},\"busy_ns\":{busy},\"proc_busy_ns\":{proc}}}",
        what.0, what.1, what.2
    )
}

/// The ping-pong over `t` (node 0 measures, node 1 echoes); `what` names
/// the configuration in the output. Returns an error message if a
/// payload came back damaged or the transport failed.
pub fn over_transport(
    t: &dyn Transport,
    sizes: &[usize],
    what: (&str, &str, &str),
) -> Result<(), String> {
    let err = |e: snet_engine::dist::TransportError| e.to_string();
    let recv = |t: &dyn Transport| -> Result<snet_engine::dist::Received, String> {
        loop {
            if let Some(m) = t.recv(Duration::from_secs(60)).map_err(err)? {
                return Ok(m);
            }
        }
    };
    pin(t.node().0);
    if t.node() == Rank(1) {
        let mut cpu = Cpu::now();
        loop {
            let m = recv(t)?;
            match m.header.first() {
                Some(&PING) if m.payload.is_empty() => {
                    t.send(Rank(0), Channel::Control, &m.header, Payload::none())
                        .map_err(err)?;
                }
                Some(&PING) => {
                    t.send(
                        Rank(0),
                        Channel::Field,
                        &m.header,
                        Payload::shared(Arc::new(m.payload)),
                    )
                    .map_err(err)?;
                }
                Some(&REPORT) => {
                    let used = cpu.since();
                    cpu = Cpu::now();
                    t.send(Rank(0), Channel::Control, &used.to_bytes(), Payload::none())
                        .map_err(err)?;
                }
                _ => return Ok(()),
            }
        }
    }
    if t.node() != Rank(0) {
        return Ok(());
    }
    for &bytes in sizes {
        let mut buf = FieldBytes::for_field(bytes);
        for (i, b) in buf.iter_mut().enumerate().step_by(4096) {
            *b = (i / 4096) as u8 ^ 0x5a;
        }
        let reps = reps_for(bytes);
        let warm = (reps / 10).max(2);
        let mut times = Vec::with_capacity(reps);
        let mut cpu0 = Cpu::now();
        for r in 0..warm + reps {
            if r == warm {
                // The timed part starts: restart node 1's CPU count
                // (its report of the warm-up is dropped), then ours.
                t.send(Rank(1), Channel::Control, &[REPORT], Payload::none())
                    .map_err(err)?;
                recv(t)?;
                cpu0 = Cpu::now();
            }
            let start = Instant::now();
            if bytes == 0 {
                // The message alone: 8 bytes (the size of the raw
                // ping-pongs' data word), no field payload.
                let mut h = (r as u64).to_le_bytes();
                h[0] = PING;
                t.send(Rank(1), Channel::Control, &h, Payload::none())
                    .map_err(err)?;
                let m = recv(t)?;
                if r >= warm {
                    times.push(start.elapsed().as_nanos() as u64);
                }
                if m.header[..] != h {
                    return Err("an 8-byte message came back damaged".into());
                }
                continue;
            }
            t.send(
                Rank(1),
                Channel::Field,
                &[PING],
                Payload::shared(Arc::new(buf)),
            )
            .map_err(err)?;
            let m = recv(t)?;
            if r >= warm {
                times.push(start.elapsed().as_nanos() as u64);
            }
            buf = m.payload;
        }
        let mine = cpu0.since();
        t.send(Rank(1), Channel::Control, &[REPORT], Payload::none())
            .map_err(err)?;
        let theirs = recv(t)?;
        let theirs = Cpu::from_bytes(&theirs.header).ok_or("bad CPU report")?;
        if buf.len() != bytes
            || buf
                .iter()
                .enumerate()
                .step_by(4096)
                .any(|(i, &b)| b != (i / 4096) as u8 ^ 0x5a)
        {
            return Err(format!("a {bytes}-byte payload came back damaged"));
        }
        println!(
            "{}",
            line(
                what,
                bytes,
                &mut times,
                Cpu {
                    busy: mine.busy + theirs.busy,
                    proc: mine.proc + theirs.proc,
                }
            )
        );
    }
    t.send(Rank(1), Channel::Control, &[END], Payload::none())
        .map_err(err)?;
    Ok(())
}

/// The hand-written comparison: an 8-byte ping-pong between this process
/// and a fork of it over one shared page, spinning (`futex == false`) or
/// sleeping on a futex.
pub fn raw(futex: bool, reps: usize) -> Result<(), String> {
    #[repr(C, align(64))]
    struct Line {
        seq: AtomicU32,
        _pad: u32,
        data: AtomicU64,
    }
    #[repr(C)]
    struct Page {
        ping: Line,
        pong: Line,
        /// The fork's CPU time over the timed round trips (thread clock),
        /// posted once at the end.
        report: Line,
        /// The same from `getrusage` (whole process), posted just before.
        report_proc: Line,
    }
    let len = std::mem::size_of::<Page>();
    // SAFETY: a fresh shared anonymous mapping, shared with the fork below.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        return Err(std::io::Error::last_os_error().to_string());
    }
    // SAFETY: zeroed memory is a valid Page (atomics), mapped for `len`.
    let page: &Page = unsafe { &*p.cast::<Page>() };
    let wait = |l: &Line, want: u32| loop {
        let v = l.seq.load(Ordering::Acquire);
        if v == want {
            return;
        }
        if futex {
            // SAFETY: futex wait on a word of the shared mapping.
            unsafe {
                libc::syscall(
                    libc::SYS_futex,
                    l.seq.as_ptr(),
                    libc::FUTEX_WAIT,
                    v,
                    std::ptr::null::<libc::timespec>(),
                )
            };
        } else {
            std::hint::spin_loop();
        }
    };
    let post = |l: &Line, seq: u32, data: u64| {
        l.data.store(data, Ordering::Relaxed);
        l.seq.store(seq, Ordering::Release);
        if futex {
            // SAFETY: futex wake on a word of the shared mapping.
            unsafe { libc::syscall(libc::SYS_futex, l.seq.as_ptr(), libc::FUTEX_WAKE, 1) };
        }
    };
    let warm = reps / 10;
    let total = (warm + reps) as u32;
    // SAFETY: single-threaded here (the command runs this first); the
    // child only touches the shared page and exits.
    let child = unsafe { libc::fork() };
    if child < 0 {
        return Err(std::io::Error::last_os_error().to_string());
    }
    if child == 0 {
        pin(1);
        let mut cpu = Cpu::now();
        for i in 1..=total {
            if i == warm as u32 + 1 {
                // The timed part starts with this ping.
                cpu = Cpu::now();
            }
            wait(&page.ping, i);
            let d = page.ping.data.load(Ordering::Relaxed);
            post(&page.pong, i, d.wrapping_add(1));
        }
        let used = cpu.since();
        post(&page.report_proc, 1, used.proc);
        post(&page.report, 1, used.busy);
        // SAFETY: ends the fork at once, running nothing of the parent's.
        unsafe { libc::_exit(0) };
    }
    pin(0);
    let mut times = Vec::with_capacity(reps);
    let mut cpu = Cpu::now();
    for i in 1..=total {
        if i == warm as u32 + 1 {
            cpu = Cpu::now();
        }
        let start = Instant::now();
        post(&page.ping, i, u64::from(i));
        wait(&page.pong, i);
        if page.pong.data.load(Ordering::Relaxed) != u64::from(i) + 1 {
            // SAFETY: killing and reaping our own fork.
            unsafe {
                libc::kill(child, libc::SIGKILL);
                libc::waitpid(child, std::ptr::null_mut(), 0);
            }
            return Err("raw ping-pong: wrong reply".into());
        }
        if i > warm as u32 {
            times.push(start.elapsed().as_nanos() as u64);
        }
    }
    let mine = cpu.since();
    wait(&page.report, 1);
    let theirs = Cpu {
        busy: page.report.data.load(Ordering::Relaxed),
        proc: page.report_proc.data.load(Ordering::Relaxed),
    };
    let mut status = 0;
    // SAFETY: reaping our own child.
    unsafe { libc::waitpid(child, &mut status, 0) };
    // Both CPU counts cover the timed round trips only (from ping
    // `warm + 1` on); `line` divides them by their number.
    let name = if futex { "raw-futex" } else { "raw-spin" };
    let cpu = Cpu {
        busy: mine.busy + theirs.busy,
        proc: mine.proc + theirs.proc,
    };
    println!("{}", line((name, "-", "-"), 8, &mut times, cpu));
    Ok(())
}

/// What `snet pingpong` measures (`--transport`): a transport between
/// nodes, or a hand-written ping-pong over a shared page.
#[derive(clap::ValueEnum, Copy, Clone, Debug, PartialEq, Eq)]
pub enum PingpongTarget {
    // No doc comments on the variants (see `TransportKind`).
    Shm,
    Mpi,
    RawSpin,
    RawFutex,
}

/// The communication benchmark's ping-pong (`snet pingpong`, see
/// the module doc): over `transport` (`shm`, `mpi` under mpirun, or the
/// hand-written `raw-spin` / `raw-futex`), for each of `sizes`.
pub fn pingpong_command(
    target: PingpongTarget,
    notify: Notify,
    fields: FieldMode,
    sizes: &[usize],
) -> u8 {
    use snet_engine::dist::Transport;
    let result = match target {
        PingpongTarget::RawSpin | PingpongTarget::RawFutex => {
            raw(target == PingpongTarget::RawFutex, 20000)
        }
        PingpongTarget::Shm => {
            let how = snet_shm::launch::Launch {
                geometry: snet_shm::Geometry::new(2, notify, fields),
                command: snet_shm::launch::NodeCommand::ThisProgram,
                env: &[],
            };
            let ran = snet_shm::launch::run(&how, |t| {
                t.install_field_allocator();
                let g = t.geometry();
                let r = over_transport(&**t, sizes, ("shm", g.notify.name(), g.fields.name()));
                t.close();
                let ok = r.is_ok();
                (r, ok)
            });
            let ran = match ran {
                Ok(r) => r,
                Err(e) => {
                    say!("error: shm: {e}");
                    return 2;
                }
            };
            for e in &ran.ended {
                if !e.clean() {
                    say!("error: node {} {}", e.node, e.describe());
                    return 1;
                }
            }
            ran.output
        }
        PingpongTarget::Mpi => pingpong_mpi(sizes),
    };
    match result {
        Ok(()) => 0,
        Err(e) => {
            say!("error: pingpong: {e}");
            1
        }
    }
}

#[cfg(feature = "mpi")]
fn pingpong_mpi(sizes: &[usize]) -> Result<(), String> {
    use snet_engine::dist::Transport;
    let t = snet_mpi::MpiTransport::start().map_err(|e| format!("cannot start MPI: {e}"))?;
    let r = if t.nodes() == 2 {
        over_transport(&t, sizes, ("mpi", "-", "-"))
    } else {
        Err("the MPI ping-pong needs exactly 2 ranks (mpirun -np 2)".into())
    };
    t.finish();
    r
}

#[cfg(not(feature = "mpi"))]
fn pingpong_mpi(_: &[usize]) -> Result<(), String> {
    Err("this snet was built without MPI (cargo feature `mpi`)".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The tests below look at every thread of the test process: one at a
    /// time.
    static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

    /// Spins on a thread named `name` until that thread has used `ms`
    /// milliseconds of CPU (its own clock), and returns how much
    /// [`busy_now`] of the calling thread grew meanwhile (read while the
    /// spinning thread still exists: a finished thread's clock is gone).
    fn busy_while_a_thread_spins(name: &str, ms: u64) -> u64 {
        let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
        let (ready_tx, ready) = std::sync::mpsc::channel();
        let (go_tx, go) = std::sync::mpsc::channel::<()>();
        let (done_tx, done) = std::sync::mpsc::channel();
        let (quit_tx, quit) = std::sync::mpsc::channel::<()>();
        let h = std::thread::Builder::new()
            .name(name.into())
            .spawn(move || {
                ready_tx.send(()).unwrap();
                go.recv().unwrap();
                let start = clock_ns(libc::CLOCK_THREAD_CPUTIME_ID);
                while clock_ns(libc::CLOCK_THREAD_CPUTIME_ID) - start < ms * 1_000_000 {
                    std::hint::spin_loop();
                }
                done_tx.send(()).unwrap();
                let _ = quit.recv();
            })
            .unwrap();
        ready.recv().unwrap();
        let before = busy_now();
        go_tx.send(()).unwrap();
        done.recv().unwrap();
        let after = busy_now();
        quit_tx.send(()).unwrap();
        h.join().unwrap();
        after - before
    }

    #[test]
    fn busy_time_counts_the_communication_thread() {
        // The snet-mpi thread's CPU time is counted.
        let got = busy_while_a_thread_spins("snet-mpi", 30);
        assert!(got >= 25_000_000, "counted only {got} ns of a 30 ms spin");
    }

    #[test]
    fn busy_time_leaves_out_other_threads() {
        // Another thread's is not (the calling thread only sleeps).
        let got = busy_while_a_thread_spins("someone-else", 30);
        assert!(
            got < 15_000_000,
            "counted {got} ns of another thread's spin"
        );
    }

    #[test]
    fn thread_clock_reads_this_thread() {
        // SAFETY: gettid has no preconditions.
        let tid = unsafe { libc::gettid() };
        let a = clock_ns(thread_clock(tid));
        assert!(a > 0, "the per-thread clock of this thread reads 0");
        let b = clock_ns(libc::CLOCK_THREAD_CPUTIME_ID);
        assert!(b >= a);
    }
}
