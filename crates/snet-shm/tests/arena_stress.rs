//! Stress test of the field arena with real processes: children re-exec'd
//! from this test binary map one memfd segment (each at its own address)
//! holding a ring per child and an arena. Each child allocates blocks of
//! assorted sizes (bytes to MiB: the big ones take the pages-given-back
//! path), checks they arrive zeroed, fills them, and passes their offsets
//! through the rings to the next child (sometimes, with a second
//! reference, to the one after too); receivers check the contents and
//! release, so the last reference is dropped by another process than the
//! allocating one. The arena is small enough to run out (a child then
//! drains its ring and retries). At the end the arena must be empty: no
//! live block, one free block of the largest order.
//!
//! No timed assertions (a stall detector only, at 60 s without progress).
//! Counts are sized for a 2-core machine; `SNET_SHM_STRESS=N` multiplies
//! them.

#![cfg(not(loom))]

use std::process::{Child, Command};
use std::time::{Duration, Instant};

use snet_shm::{Arena, Notify, PushError, Ring};

const CHILDREN: usize = 4;
const SLOTS: usize = 16;
const PAYLOAD: usize = 48;
const ARENA: usize = 16 << 20;
/// The largest block a child asks for.
const MAX_LEN: usize = 3 << 20;

fn scale(n: u64) -> u64 {
    let k: u64 = std::env::var("SNET_SHM_STRESS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1);
    n * k
}

/// Where the rings and the arena lie in the segment.
struct Plan {
    ring_len: usize,
    arena_off: usize,
    len: usize,
}

fn plan() -> Plan {
    let ring_len = Ring::layout(SLOTS, PAYLOAD).unwrap().next_multiple_of(64);
    let arena_off = (CHILDREN * ring_len).next_multiple_of(4096);
    Plan {
        ring_len,
        arena_off,
        len: arena_off + Arena::layout(ARENA),
    }
}

/// A mapping of the memfd (shared, read-write), unmapped on drop.
struct Mapping {
    base: *mut u8,
    len: usize,
}

impl Mapping {
    fn new(fd: i32, len: usize) -> Mapping {
        // SAFETY: a fresh shared mapping of an fd we hold; checked below.
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
        Mapping {
            base: p.cast(),
            len,
        }
    }

    fn ring(&self, plan: &Plan, i: usize) -> Ring {
        // SAFETY: ring `i`'s bytes lie in the mapping, which outlives the
        // handle (every test drops its handles first).
        unsafe { Ring::attach(self.base.add(i * plan.ring_len), plan.ring_len) }.unwrap()
    }

    fn arena(&self, plan: &Plan) -> Arena {
        // SAFETY: as for the rings; the arena's bytes lie in the mapping.
        unsafe { Arena::attach(self.base.add(plan.arena_off), plan.len - plan.arena_off) }.unwrap()
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: our mapping; no handle uses it any more.
        unsafe { libc::munmap(self.base.cast(), self.len) };
    }
}

/// A message between children.
#[derive(Clone, Copy)]
struct Msg {
    /// Done (the sender sends nothing more to this ring) or a block.
    done: bool,
    sender: u32,
    /// Per sender and destination: 0, 1, 2, ... (rings are FIFO per
    /// producer).
    seq: u64,
    /// The block's stamp (per sender; a block sent to two children has
    /// one stamp and two sequence numbers).
    id: u64,
    off: u64,
    len: u64,
}

impl Msg {
    fn encode(&self) -> [u8; 37] {
        let mut m = [0u8; 37];
        m[0] = self.done as u8;
        m[1..5].copy_from_slice(&self.sender.to_le_bytes());
        m[5..13].copy_from_slice(&self.seq.to_le_bytes());
        m[13..21].copy_from_slice(&self.id.to_le_bytes());
        m[21..29].copy_from_slice(&self.off.to_le_bytes());
        m[29..37].copy_from_slice(&self.len.to_le_bytes());
        m
    }

    fn decode(m: &[u8]) -> Msg {
        assert_eq!(m.len(), 37, "torn message");
        let word = |r: std::ops::Range<usize>| u64::from_le_bytes(m[r].try_into().unwrap());
        Msg {
            done: m[0] == 1,
            sender: u32::from_le_bytes(m[1..5].try_into().unwrap()),
            seq: word(5..13),
            id: word(13..21),
            off: word(21..29),
            len: word(29..37),
        }
    }
}

/// One child's state: its rings and arena handles, and the buffers that
/// make checking whole blocks cheap (slice comparison is a `memcmp`, also
/// in a debug build).
struct Node {
    me: usize,
    rings: Vec<Ring>,
    arena: Arena,
    zeroes: Vec<u8>,
    /// The fill of each sender's blocks (its index + 1), after the
    /// 16-byte stamp.
    fills: Vec<Vec<u8>>,
    dones: usize,
    /// Per sender, the next sequence number expected (FIFO per ring).
    next: Vec<u64>,
    received: u64,
    progress: Instant,
}

impl Node {
    /// The block's expected contents: the sequence number and sender, then
    /// the sender's fill, up to `len`.
    fn fill(&self, sender: usize, seq: u64, d: &mut [u8]) {
        let n = d.len().min(16);
        let mut stamp = [0u8; 16];
        stamp[..8].copy_from_slice(&seq.to_le_bytes());
        stamp[8..].copy_from_slice(&(sender as u64).to_le_bytes());
        d[..n].copy_from_slice(&stamp[..n]);
        if d.len() > 16 {
            let len = d.len();
            d[16..].copy_from_slice(&self.fills[sender][16..len]);
        }
    }

    /// Takes every message waiting in this child's ring.
    fn drain(&mut self) {
        let mut c = self.rings[self.me].consumer().unwrap();
        while let Some(m) = c.try_pop(Msg::decode) {
            self.progress = Instant::now();
            let sender = m.sender as usize;
            assert_eq!(m.seq, self.next[sender], "from {sender}: lost or reordered");
            self.next[sender] += 1;
            if m.done {
                self.dones += 1;
                continue;
            }
            let (seq, off, len) = (m.id, m.off, m.len as usize);
            let a = &self.arena;
            assert!(a.capacity(off) >= len);
            let p = a.data(off);
            assert_eq!(
                a.offset_of(p, len),
                Some(off),
                "a live block not recognised"
            );
            // SAFETY: we hold a reference to the live block (handed over
            // through the ring); its holders only read it now.
            let d = unsafe { std::slice::from_raw_parts(p, len) };
            let mut want = vec![0u8; len.min(16)];
            self.fill(sender, seq, &mut want);
            assert_eq!(
                &d[..want.len()],
                &want[..],
                "block {seq} of {sender}: bad stamp"
            );
            if len > 16 {
                assert!(
                    d[16..] == self.fills[sender][16..len],
                    "block {seq} of {sender}: bad data"
                );
            }
            // SAFETY: the reference the sender handed us; not used after.
            unsafe { a.release(off) };
            self.received += 1;
        }
    }

    /// Pushes a message to child `to`'s ring, draining ours while it is
    /// full.
    fn send(&mut self, to: usize, msg: &[u8]) {
        loop {
            match self.rings[to].try_push(msg) {
                Ok(()) => {
                    self.rings[to].after_push();
                    return;
                }
                Err(PushError::Full) => self.idle(),
                Err(e) => panic!("{e}"),
            }
        }
    }

    /// Nothing to do but wait: drain, nap briefly, check for a stall.
    fn idle(&mut self) {
        self.drain();
        std::thread::sleep(Duration::from_micros(200));
        assert!(
            self.progress.elapsed() < Duration::from_secs(60),
            "child {}: no progress for 60 s ({} received, {} dones, arena {:?})",
            self.me,
            self.received,
            self.dones,
            self.arena.stats()
        );
    }
}

/// A child: `SNET_ARENA_CHILD="<memfd path> <index> <messages>"`. Without
/// the variable (a normal test run) it does nothing.
#[test]
fn arena_child() {
    let Ok(spec) = std::env::var("SNET_ARENA_CHILD") else {
        return;
    };
    let mut it = spec.split(' ');
    let (path, me, count) = (
        it.next().unwrap(),
        it.next().unwrap().parse::<usize>().unwrap(),
        it.next().unwrap().parse::<u64>().unwrap(),
    );
    let plan = plan();
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
        .unwrap();
    let map = Mapping::new(std::os::fd::AsRawFd::as_raw_fd(&file), plan.len);
    eprintln!("child {me}: segment mapped at {:p}", map.base);
    let mut node = Node {
        me,
        rings: (0..CHILDREN).map(|i| map.ring(&plan, i)).collect(),
        arena: map.arena(&plan),
        zeroes: vec![0; 4 << 20],
        fills: (0..CHILDREN).map(|s| vec![s as u8 + 1; MAX_LEN]).collect(),
        dones: 0,
        next: vec![0; CHILDREN],
        received: 0,
        progress: Instant::now(),
    };
    let (next, after) = ((me + 1) % CHILDREN, (me + 2) % CHILDREN);
    let mut rng = 0x2545_f491_4f6c_dd1d_u64 ^ ((me as u64 + 1) * 0x9e37_79b9);
    let mut rand = move || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    let mut refused = 0u64;
    // Sequence numbers per destination (the receiver checks FIFO order).
    let mut seqs = [0u64; CHILDREN];
    for id in 0..count {
        let r = rand();
        let len = match r % 100 {
            0..=69 => (r >> 8) as usize % 8192,
            70..=94 => 8192 + (r >> 8) as usize % (256 << 10),
            _ => (1 << 20) + (r >> 8) as usize % (MAX_LEN - (1 << 20)),
        };
        let off = loop {
            match node.arena.alloc(len) {
                Some(off) => break off,
                None => {
                    refused += 1;
                    node.idle();
                }
            }
        };
        node.progress = Instant::now();
        let cap = node.arena.capacity(off);
        assert!(cap >= len);
        // SAFETY: our block, live, one reference: nobody else touches it
        // until we send it.
        let d = unsafe { std::slice::from_raw_parts_mut(node.arena.data(off), cap) };
        assert!(
            d[..len] == node.zeroes[..len],
            "child {me}: a block not zeroed"
        );
        node.fill(me, id, &mut d[..len]);
        let mut msg = Msg {
            done: false,
            sender: me as u32,
            seq: 0,
            id,
            off,
            len: len as u64,
        };
        // Now and then the block goes to two children (two references).
        let mut to = vec![next];
        if rand() % 8 == 0 {
            node.arena.retain(off);
            to.push(after);
        }
        for t in to {
            msg.seq = seqs[t];
            seqs[t] += 1;
            node.send(t, &msg.encode());
        }
        node.drain();
    }
    for t in [next, after] {
        let done = Msg {
            done: true,
            sender: me as u32,
            seq: seqs[t],
            id: 0,
            off: 0,
            len: 0,
        };
        node.send(t, &done.encode());
    }
    while node.dones < 2 {
        node.idle();
    }
    node.drain();
    eprintln!(
        "child {me}: sent {count} blocks, received {}, arena full {refused} times",
        node.received
    );
}

fn spawn_child(path: &str, i: usize, count: u64) -> Child {
    Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "arena_child",
            "--test-threads",
            "1",
            "--nocapture",
            "-q",
        ])
        .env("SNET_ARENA_CHILD", format!("{path} {i} {count}"))
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap()
}

#[test]
fn processes_pass_blocks_and_free_everything() {
    let plan = plan();
    // SAFETY: a fresh memfd (closed on exec: the children open it by path).
    let fd = unsafe { libc::memfd_create(c"snet-arena-stress".as_ptr(), libc::MFD_CLOEXEC) };
    assert!(fd >= 0, "memfd_create: {}", std::io::Error::last_os_error());
    // SAFETY: sizes our memfd.
    assert_eq!(unsafe { libc::ftruncate(fd, plan.len as libc::off_t) }, 0);
    let path = format!("/proc/{}/fd/{fd}", std::process::id());
    let count = scale(4000);
    {
        // Two mappings in this process, at different addresses: one lays
        // the segment out, the other checks it at the end.
        let a = Mapping::new(fd, plan.len);
        let b = Mapping::new(fd, plan.len);
        assert_ne!(a.base, b.base);
        for i in 0..CHILDREN {
            // SAFETY: ring `i`'s bytes lie in the zeroed mapping `a`, which
            // outlives the handle.
            unsafe {
                Ring::init(
                    a.base.add(i * plan.ring_len),
                    plan.ring_len,
                    SLOTS,
                    PAYLOAD,
                    Notify::Sparse,
                )
            }
            .unwrap();
        }
        // SAFETY: the arena's bytes lie in `a` (zeroed, page-aligned).
        let arena =
            unsafe { Arena::init(a.base.add(plan.arena_off), plan.len - plan.arena_off) }.unwrap();
        let start = Instant::now();
        let children: Vec<_> = (0..CHILDREN)
            .map(|i| spawn_child(&path, i, count))
            .collect();
        for mut c in children {
            assert!(c.wait().unwrap().success(), "a child failed");
        }
        let s = b.arena(&plan).stats();
        eprintln!(
            "{CHILDREN} processes, {} blocks each, arena of {} MiB: {:.2?}; at the end {s:?}",
            count,
            ARENA >> 20,
            start.elapsed()
        );
        assert_eq!(s, arena.stats());
        assert!(!s.poisoned);
        assert_eq!((s.live_blocks, s.live_bytes), (0, 0), "blocks leaked");
        assert_eq!(
            (s.free_blocks, s.free_bytes),
            (1, ARENA as u64),
            "not coalesced"
        );
        // The one free block takes the whole arena again.
        let x = arena.alloc(arena.max_alloc()).unwrap();
        // SAFETY: our reference.
        unsafe { arena.release(x) };
        for i in 0..CHILDREN {
            assert!(b.ring(&plan, i).is_empty(), "ring {i} not drained");
        }
    }
    // SAFETY: our fd.
    unsafe { libc::close(fd) };
}
