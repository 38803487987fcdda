//! Stress tests of the ring (release mode): many messages from several
//! producers into one ring, checking that nothing is lost, duplicated,
//! reordered per producer or torn; with threads standing in for processes,
//! and with real processes mapping a `/dev/shm` segment; in all three
//! notification modes. And the resource check: an idle consumer in
//! interrupt or sparse mode uses next to no CPU.
//!
//! Counts are sized for a 2-core machine (under 30 s together in release
//! mode); `SNET_SHM_STRESS=N` multiplies them. Debug builds run a tenth.

#![cfg(not(loom))]

use std::ffi::CString;
use std::process::{Child, Command};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use snet_shm::{HeapRegion, Notify, PushError, Ring};

/// Slot payload: one slot is a 64-byte cache line.
const PAYLOAD: usize = 48;

fn scale(n: u64) -> u64 {
    let k: u64 = std::env::var("SNET_SHM_STRESS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1);
    if cfg!(debug_assertions) {
        (n * k / 10).max(1000)
    } else {
        n * k
    }
}

/// Message `i` of producer `p`: `p` (4 bytes), `i` (8 bytes), then 0 to 36
/// bytes derived from both (a torn or misplaced write shows).
fn message(p: u32, i: u64, buf: &mut [u8; PAYLOAD]) -> usize {
    let extra = (i.wrapping_mul(7).wrapping_add(p as u64) % 37) as usize;
    buf[..4].copy_from_slice(&p.to_le_bytes());
    buf[4..12].copy_from_slice(&i.to_le_bytes());
    for (k, b) in buf[12..12 + extra].iter_mut().enumerate() {
        *b = (p as u64 * 31 + i + k as u64) as u8;
    }
    12 + extra
}

/// Checks a received message against the next expected one of its producer.
fn check(m: &[u8], next: &mut [u64]) {
    assert!(m.len() >= 12, "short message");
    let p = u32::from_le_bytes(m[..4].try_into().unwrap());
    let i = u64::from_le_bytes(m[4..12].try_into().unwrap());
    let want = next[p as usize];
    assert_eq!(
        i, want,
        "producer {p}: got message {i}, expected {want} (lost, duplicated or reordered)"
    );
    let mut buf = [0u8; PAYLOAD];
    let len = message(p, i, &mut buf);
    assert_eq!(m, &buf[..len], "producer {p} message {i}: torn payload");
    next[p as usize] += 1;
}

/// Pushes one message, backing off while the ring is full (spin, then
/// yield), and notifies.
fn push(ring: &Ring, msg: &[u8]) {
    let mut tries = 0u32;
    loop {
        match ring.try_push(msg) {
            Ok(()) => {
                ring.after_push();
                return;
            }
            Err(PushError::Full) => {
                tries += 1;
                if tries < 64 {
                    std::hint::spin_loop();
                } else {
                    std::thread::yield_now();
                }
            }
            Err(e) => panic!("{e}"),
        }
    }
}

fn produce(ring: &Ring, p: u32, count: u64) {
    let mut buf = [0u8; PAYLOAD];
    for i in 0..count {
        let len = message(p, i, &mut buf);
        push(ring, &buf[..len]);
    }
}

/// Takes `producers * per` messages and checks them; returns the time taken.
fn consume(ring: &Ring, producers: usize, per: u64) -> Duration {
    let start = Instant::now();
    let mut c = ring.consumer().unwrap();
    let mut next = vec![0u64; producers];
    let total = producers as u64 * per;
    let mut got = 0u64;
    let mut progress = Instant::now();
    while got < total {
        if c.try_pop(|m| check(m, &mut next)).is_some() {
            got += 1;
            progress = Instant::now();
        } else if !c.wait(Some(Duration::from_secs(1))) {
            // A wait may end without a message (a wake-up for a slot whose
            // producer is still writing it): count time, not wake-ups.
            assert!(
                progress.elapsed() < Duration::from_secs(30),
                "no message for 30 s: {got} of {total} received, head {:?}",
                c.head()
            );
        }
    }
    assert!(c.try_pop(|_| ()).is_none(), "a message too many");
    assert!(next.iter().all(|&n| n == per));
    start.elapsed()
}

/// `producers` threads push `per` messages each into one ring of `slots`
/// slots; the test thread consumes.
fn threads(mode: Notify, producers: u32, per: u64, slots: usize) {
    let len = Ring::layout(slots, PAYLOAD).unwrap();
    let region = HeapRegion::new(len);
    // SAFETY: the region outlives the ring (dropped after it, below).
    let ring = Arc::new(unsafe { Ring::init(region.as_ptr(), len, slots, PAYLOAD, mode) }.unwrap());
    let handles: Vec<_> = (0..producers)
        .map(|p| {
            let ring = ring.clone();
            std::thread::spawn(move || produce(&ring, p, per))
        })
        .collect();
    let took = consume(&ring, producers as usize, per);
    for h in handles {
        h.join().unwrap();
    }
    let total = producers as u64 * per;
    eprintln!(
        "{mode:?}, {producers} producer threads, {total} messages, {slots} slots: {took:.2?} ({:.0} ns/message)",
        took.as_nanos() as f64 / total as f64
    );
    drop(ring);
    drop(region);
}

#[test]
fn threads_sparse_ten_million() {
    threads(Notify::Sparse, 4, scale(2_500_000), 256);
}

#[test]
fn threads_poll() {
    threads(Notify::Poll, 4, scale(250_000), 64);
}

#[test]
fn threads_interrupt() {
    threads(Notify::Interrupt, 4, scale(100_000), 64);
}

/// Tiny rings: producers constantly meet a full ring and race for slots.
#[test]
fn threads_two_slots() {
    for mode in [Notify::Sparse, Notify::Interrupt, Notify::Poll] {
        threads(mode, 4, scale(20_000), 2);
    }
}

// ----- processes: a POSIX shared-memory segment ---------------------------

/// A `/dev/shm` segment, mode 0600, mapped; unlinked (by its creator) and
/// unmapped on drop, also when a test fails.
struct Segment {
    name: CString,
    base: *mut u8,
    len: usize,
    owner: bool,
}

impl Segment {
    fn create(len: usize) -> Segment {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let name = CString::new(format!(
            "/snet-shm-test-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ))
        .unwrap();
        // SAFETY: a valid C string; the flags create a new object or fail.
        let fd = unsafe {
            libc::shm_open(
                name.as_ptr(),
                libc::O_CREAT | libc::O_EXCL | libc::O_RDWR | libc::O_CLOEXEC,
                0o600 as libc::mode_t,
            )
        };
        assert!(fd >= 0, "shm_open: {}", std::io::Error::last_os_error());
        let mut seg = Segment {
            name,
            base: std::ptr::null_mut(),
            len,
            owner: true,
        };
        // SAFETY: `fd` is ours; `st` is written by fstat.
        unsafe {
            assert_eq!(libc::ftruncate(fd, len as libc::off_t), 0);
            let mut st: libc::stat = std::mem::zeroed();
            assert_eq!(libc::fstat(fd, &mut st), 0);
            assert_eq!(st.st_mode & 0o777, 0o600, "segment not private to the user");
            seg.base = Self::map(fd, len);
            libc::close(fd);
        }
        seg
    }

    fn open(name: &str) -> Segment {
        let name = CString::new(name).unwrap();
        // SAFETY: a valid C string; `st` is written by fstat.
        unsafe {
            let fd = libc::shm_open(name.as_ptr(), libc::O_RDWR | libc::O_CLOEXEC, 0);
            assert!(fd >= 0, "shm_open: {}", std::io::Error::last_os_error());
            let mut st: libc::stat = std::mem::zeroed();
            assert_eq!(libc::fstat(fd, &mut st), 0);
            let len = st.st_size as usize;
            let base = Self::map(fd, len);
            libc::close(fd);
            Segment {
                name,
                base,
                len,
                owner: false,
            }
        }
    }

    /// # Safety
    /// `fd` is an open shared-memory object of at least `len` bytes.
    unsafe fn map(fd: i32, len: usize) -> *mut u8 {
        // SAFETY: a fresh shared mapping of the object; checked below.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd,
                0,
            )
        };
        assert_ne!(
            p,
            libc::MAP_FAILED,
            "mmap: {}",
            std::io::Error::last_os_error()
        );
        p.cast()
    }

    fn name(&self) -> &str {
        self.name.to_str().unwrap()
    }
}

impl Drop for Segment {
    fn drop(&mut self) {
        // SAFETY: our mapping (nothing uses it any more: rings are dropped
        // first) and our name.
        unsafe {
            libc::munmap(self.base.cast(), self.len);
            if self.owner {
                libc::shm_unlink(self.name.as_ptr());
            }
        }
    }
}

/// The producer process: `SNET_SHM_CHILD="<segment> <producer> <count>"`.
/// Without the variable (a normal test run) it does nothing.
#[test]
fn child_producer() {
    let Ok(spec) = std::env::var("SNET_SHM_CHILD") else {
        return;
    };
    let mut it = spec.split(' ');
    let (name, p, count) = (
        it.next().unwrap(),
        it.next().unwrap().parse::<u32>().unwrap(),
        it.next().unwrap().parse::<u64>().unwrap(),
    );
    let seg = Segment::open(name);
    // SAFETY: the mapping lives until `seg` drops, after the ring.
    let ring = unsafe { Ring::attach(seg.base, seg.len) }.unwrap();
    produce(&ring, p, count);
}

fn spawn_producer(seg: &Segment, p: u32, count: u64) -> Child {
    Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "child_producer", "--test-threads", "1", "-q"])
        .env("SNET_SHM_CHILD", format!("{} {p} {count}", seg.name()))
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap()
}

/// `producers` processes push `per` messages each into a ring in a shared
/// segment (mapped at their own addresses); this process consumes.
fn processes(mode: Notify, producers: u32, per: u64, slots: usize) {
    let len = Ring::layout(slots, PAYLOAD).unwrap();
    let seg = Segment::create(len);
    let name = seg.name.clone();
    {
        // SAFETY: the mapping lives until `seg` drops, after this block.
        let ring = unsafe { Ring::init(seg.base, seg.len, slots, PAYLOAD, mode) }.unwrap();
        let children: Vec<_> = (0..producers)
            .map(|p| spawn_producer(&seg, p, per))
            .collect();
        let took = consume(&ring, producers as usize, per);
        for mut c in children {
            assert!(c.wait().unwrap().success(), "a producer process failed");
        }
        let total = producers as u64 * per;
        eprintln!(
            "{mode:?}, {producers} producer processes, {total} messages, {slots} slots: {took:.2?} ({:.0} ns/message, process start included)",
            took.as_nanos() as f64 / total as f64
        );
    }
    drop(seg);
    // Unlinked: the name is gone.
    // SAFETY: a valid C string.
    let fd = unsafe { libc::shm_open(name.as_ptr(), libc::O_RDWR, 0) };
    assert!(fd < 0, "segment not unlinked");
}

#[test]
fn processes_sparse() {
    processes(Notify::Sparse, 4, scale(250_000), 256);
}

#[test]
fn processes_poll() {
    processes(Notify::Poll, 3, scale(100_000), 64);
}

#[test]
fn processes_interrupt() {
    processes(Notify::Interrupt, 3, scale(50_000), 64);
}

// ----- idle consumers use no CPU -------------------------------------------

/// CPU time of the calling thread.
fn thread_cpu() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid out-pointer.
    let r = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    assert_eq!(r, 0);
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// A consumer thread waits on an empty ring for about a second (`timeout`:
/// in slices of that, or one untimed wait ended by a kick); returns the CPU
/// time it used.
fn idle_cpu(mode: Notify, timeout: Option<Duration>) -> Duration {
    let len = Ring::layout(64, PAYLOAD).unwrap();
    let region = HeapRegion::new(len);
    // SAFETY: the region outlives the ring (the thread is joined first).
    let ring = Arc::new(unsafe { Ring::init(region.as_ptr(), len, 64, PAYLOAD, mode) }.unwrap());
    let stop = Arc::new(AtomicBool::new(false));
    let t = {
        let (ring, stop) = (ring.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut c = ring.consumer().unwrap();
            let before = thread_cpu();
            while !stop.load(Ordering::Acquire) {
                assert!(c.try_pop(|_| ()).is_none());
                c.wait(timeout);
            }
            thread_cpu() - before
        })
    };
    std::thread::sleep(Duration::from_secs(1));
    stop.store(true, Ordering::Release);
    ring.kick();
    let cpu = t.join().unwrap();
    drop(ring);
    drop(region);
    cpu
}

#[test]
fn idle_consumer_uses_no_cpu() {
    let limit = Duration::from_millis(50);
    for mode in [Notify::Interrupt, Notify::Sparse] {
        for timeout in [Some(Duration::from_millis(100)), None] {
            let cpu = idle_cpu(mode, timeout);
            eprintln!("{mode:?}, idle for 1 s, waits of {timeout:?}: {cpu:?} CPU");
            assert!(
                cpu < limit,
                "{mode:?}: an idle consumer used {cpu:?} of CPU in 1 s"
            );
        }
    }
    // For contrast (not a requirement): polling keeps a core busy.
    let cpu = idle_cpu(Notify::Poll, Some(Duration::from_millis(100)));
    eprintln!("Poll, idle for 1 s: {cpu:?} CPU");
}
