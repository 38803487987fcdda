//! The shared segment of one shared-memory run: its layout, its creation
//! and mapping, and the per-node state words through which nodes learn
//! that a peer closed, exited or died.
//!
//! # Where the segment lives
//!
//! Node 0 creates the segment with `memfd_create(2)`: an anonymous file that
//! no directory names, mode 0600, and passes it to the node processes it
//! starts as an inherited file descriptor (its number in `SNET_SHM_FD`).
//! Nothing is ever created in `/dev/shm`, so nothing can be left there: the
//! memory goes away with the last process that maps it or holds the
//! descriptor, after a normal end, a crash or `kill -9` alike. (Other
//! processes of the same user could reach it only through
//! `/proc/<pid>/fd`, which needs the right to trace the process.)
//!
//! # Layout (offsets, never pointers: every process maps it elsewhere)
//!
//! ```text
//! 0                 header: magic, version, nodes, ring geometry, notify mode, field mode, arena place
//! 4096              node words, 64 bytes per node (MAX_NODES): state, exit status, pid, incarnation, lost reservation
//! 4096 + 64*MAX     reservation words, 64 bytes per node (the ring protocol's, see `ring.rs`)
//! HEADER            ring of node 0, ring of node 1, ... (each RING bytes, a page multiple)
//! HEADER + n*RING   the field arena (single-copy and zero-copy modes), ARENA bytes
//! ```
//!
//! Node states only move forward: `UP` (set by the creator for every
//! node) → `CLOSED` (the node's transport closed in order) → `EXITED` (its
//! process ended with status 0), or → `DEAD` from any state (its process
//! died, ended with an error, or ended with status 0 before it closed; the
//! status word says how: an exit status, or minus the signal number). The creator's process watches its
//! children and writes `EXITED`/`DEAD` (see `launch.rs`); tests write
//! `DEAD` to simulate a death. Every store is Release and every load
//! Acquire, pairing the status word (written first) with the state.
//!
//! # Replacing a node (`--on-node-loss respawn`)
//!
//! A `DEAD` node goes back to `UP` only through [`Segment::revive`], which
//! node 0 calls before it starts the node's replacement process: the node
//! word's *incarnation* counts up (the replacement's frames carry it, so
//! receivers drop what the dead incarnation sent), and the dead process's
//! last reservation word is kept as its *lost reservation*, which tells
//! every ring's consumer the slot it may have reserved and never
//! published ([`Segment::orphaned`]).

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicI32, AtomicU32, AtomicU64, Ordering};

use crate::arena::Arena;
use crate::notify::{Notify, UnknownMode};
use crate::ring::Ring;

/// The most nodes a segment has words for.
pub const MAX_NODES: u32 = 256;

const MAGIC: u64 = 0x736e_6574_7365_6701; // "snetseg" + version 1
const PAGE: usize = 4096;
const NODE_WORDS: usize = 4096;
const NODE_STRIDE: usize = 64;
const RESV_WORDS: usize = NODE_WORDS + MAX_NODES as usize * NODE_STRIDE;
const HEADER: usize = RESV_WORDS + MAX_NODES as usize * NODE_STRIDE;

/// A node's state word values.
pub mod state {
    /// The node joined and runs.
    pub const UP: u32 = 1;
    /// The node finished its part of the run.
    pub const CLOSED: u32 = 2;
    /// The node's process ended normally, after closing.
    pub const EXITED: u32 = 3;
    /// The node's process died: killed, a nonzero status, or an end
    /// without closing (the status is beside the state).
    pub const DEAD: u32 = 4;
}

/// How field bytes cross nodes (thesis 5.2.4 and 6.2).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum FieldMode {
    /// Through the rings in slot-sized pieces, copied in and out again:
    /// two copies (the thesis's "naive" shared memory; the baseline).
    Chunked,
    /// The sender copies the bytes once into the shared arena; the
    /// receiver uses them where they are.
    SingleCopy,
    /// Fields live in the shared arena (language interfaces allocate them
    /// there): a transfer passes an offset, whatever the size.
    ZeroCopy,
}

impl FieldMode {
    /// Every mode, in the order benchmarks report them.
    pub const ALL: [FieldMode; 3] = [
        FieldMode::Chunked,
        FieldMode::SingleCopy,
        FieldMode::ZeroCopy,
    ];

    /// The mode's name on the command line (`--fields`).
    pub fn name(self) -> &'static str {
        match self {
            FieldMode::Chunked => "chunked",
            FieldMode::SingleCopy => "single-copy",
            FieldMode::ZeroCopy => "zero-copy",
        }
    }

    fn word(self) -> u32 {
        self as u32
    }

    fn from_word(w: u32) -> Option<FieldMode> {
        FieldMode::ALL.get(w as usize).copied()
    }
}

/// The mode named `s` (see [`FieldMode::name`]): `--fields`'s parser.
impl std::str::FromStr for FieldMode {
    type Err = UnknownMode;
    fn from_str(s: &str) -> Result<FieldMode, UnknownMode> {
        FieldMode::ALL
            .into_iter()
            .find(|m| m.name() == s)
            .ok_or_else(|| UnknownMode::new("field", s))
    }
}

impl std::fmt::Display for FieldMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The shape of a run's segment.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Geometry {
    /// Nodes of the run (each has a ring).
    pub nodes: u32,
    /// Slots per ring (a power of two).
    pub slots: usize,
    /// Bytes a slot holds.
    pub slot_bytes: usize,
    /// How a waiting receiver is woken.
    pub notify: Notify,
    /// How field bytes cross nodes.
    pub fields: FieldMode,
    /// Bytes of field arena (single-copy and zero-copy; 0 for chunked).
    pub arena: usize,
}

impl Geometry {
    /// Slots per ring by default: with [`Geometry::DEFAULT_SLOT_BYTES`], 1 MiB per node.
    pub const DEFAULT_SLOTS: usize = 256;
    /// A slot's bytes by default: one page per slot with its 16-byte head.
    pub const DEFAULT_SLOT_BYTES: usize = 4096 - 16;
    /// The field arena by default (virtual: a memfd's untouched pages cost nothing).
    pub const DEFAULT_ARENA: usize = 2 << 30;

    /// The default geometry for `nodes` nodes, with the tuning variables
    /// `SNET_SHM_SLOTS`, `SNET_SHM_SLOT_BYTES` and `SNET_SHM_ARENA` (bytes)
    /// applied when set.
    pub fn new(nodes: u32, notify: Notify, fields: FieldMode) -> Geometry {
        let var = |name: &str, default: usize| {
            std::env::var(name)
                .ok()
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or(default)
        };
        Geometry {
            nodes,
            slots: var("SNET_SHM_SLOTS", Self::DEFAULT_SLOTS),
            slot_bytes: var("SNET_SHM_SLOT_BYTES", Self::DEFAULT_SLOT_BYTES),
            notify,
            fields,
            arena: match fields {
                FieldMode::Chunked => 0,
                _ => var("SNET_SHM_ARENA", Self::DEFAULT_ARENA),
            },
        }
    }

    fn ring_len(&self) -> Option<usize> {
        Some(Ring::layout(self.slots, self.slot_bytes)?.next_multiple_of(PAGE))
    }

    fn arena_len(&self) -> usize {
        if self.arena == 0 {
            0
        } else {
            Arena::layout(self.arena).next_multiple_of(PAGE)
        }
    }

    fn check(&self) -> io::Result<usize> {
        let bad = |what: String| io::Error::new(io::ErrorKind::InvalidInput, what);
        if !(1..=MAX_NODES).contains(&self.nodes) {
            return Err(bad(format!(
                "{} nodes: the shared-memory transport takes 1 to {MAX_NODES}",
                self.nodes
            )));
        }
        if self.slot_bytes < 64 {
            return Err(bad(format!(
                "slots of {} bytes: at least 64",
                self.slot_bytes
            )));
        }
        let ring = self.ring_len().ok_or_else(|| {
            bad(format!(
                "rings of {} slots of {} bytes (slots: a power of two, at least 2)",
                self.slots, self.slot_bytes
            ))
        })?;
        Ok(HEADER + ring * self.nodes as usize + self.arena_len())
    }
}

#[repr(C)]
struct Header {
    magic: AtomicU64,
    nodes: AtomicU32,
    notify: AtomicU32,
    slots: AtomicU64,
    slot_bytes: AtomicU64,
    fields: AtomicU32,
    /// Nodes replaced so far ([`Segment::revive`]).
    replaced: AtomicU32,
    arena: AtomicU64,
}

#[repr(C)]
struct NodeWords {
    state: AtomicU32,
    status: AtomicI32,
    pid: AtomicU32,
    /// The node's incarnation: 0, then one more per replacement.
    gen: AtomicU32,
    /// The last reservation word of its last lost incarnation.
    lost: AtomicU64,
}

/// One process's mapping of a run's segment.
pub struct Segment {
    base: NonNull<u8>,
    len: usize,
    fd: OwnedFd,
    geometry: Geometry,
    rings: Vec<Ring>,
    arena: Option<Arena>,
}

// SAFETY: the mapping is shared memory accessed only through atomics, the
// ring protocol and the arena's protocol, all made for concurrent use.
unsafe impl Send for Segment {}
// SAFETY: as above.
unsafe impl Sync for Segment {}

impl Segment {
    /// Creates and lays out a fresh segment (the run's node 0 does this,
    /// before it starts the other nodes). Every node starts `UP`.
    pub fn create(g: Geometry) -> io::Result<Segment> {
        let len = g.check()?;
        // SAFETY: a valid NUL-terminated name; the flags are memfd's.
        let fd = unsafe { libc::memfd_create(c"snet-shm".as_ptr(), libc::MFD_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: memfd_create returned a fresh descriptor that we own.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        // SAFETY: plain system calls on our descriptor.
        unsafe {
            if libc::fchmod(fd.as_raw_fd(), 0o600) != 0
                || libc::ftruncate(fd.as_raw_fd(), len as libc::off_t) != 0
            {
                return Err(io::Error::last_os_error());
            }
        }
        let base = map(&fd, len)?;
        let h = base.as_ptr().cast::<Header>();
        // SAFETY: the mapping is fresh (zero), aligned and at least HEADER
        // bytes; nobody else has it yet.
        let header = unsafe { &*h };
        header.nodes.store(g.nodes, Ordering::Relaxed);
        header.notify.store(g.notify.to_word(), Ordering::Relaxed);
        header.slots.store(g.slots as u64, Ordering::Relaxed);
        header
            .slot_bytes
            .store(g.slot_bytes as u64, Ordering::Relaxed);
        header.fields.store(g.fields.word(), Ordering::Relaxed);
        header.arena.store(g.arena as u64, Ordering::Relaxed);
        let ring_len = g.ring_len().expect("checked");
        let mut rings = Vec::with_capacity(g.nodes as usize);
        for k in 0..g.nodes as usize {
            // SAFETY: the ring's bytes lie inside the mapping, which stays
            // mapped as long as the segment (the rings live in it).
            let ring = unsafe {
                Ring::init(
                    base.as_ptr().add(HEADER + k * ring_len),
                    ring_len,
                    g.slots,
                    g.slot_bytes,
                    g.notify,
                )
            }
            .map_err(|e| io::Error::other(format!("ring {k}: {e}")))?;
            rings.push(ring);
        }
        let arena = if g.arena > 0 {
            let at = HEADER + ring_len * g.nodes as usize;
            // SAFETY: the arena's bytes lie inside the fresh mapping.
            let a = unsafe { Arena::init_with(base.as_ptr().add(at), g.arena_len(), give_back()) }
                .map_err(|e| io::Error::other(format!("arena: {e}")))?;
            a.set_prefault(prefault());
            a.set_reuse(reuse());
            Some(a)
        } else {
            None
        };
        let seg = Segment {
            base,
            len,
            fd,
            geometry: g,
            rings,
            arena,
        };
        for k in 0..g.nodes {
            seg.node(k).state.store(state::UP, Ordering::Release);
        }
        // Pairs with the Acquire load in `attach`: the layout is visible.
        header.magic.store(MAGIC, Ordering::Release);
        Ok(seg)
    }

    /// Maps the segment whose descriptor this process inherited (`fd`).
    pub fn attach(fd: RawFd) -> io::Result<Segment> {
        let bad = |what: &str| io::Error::new(io::ErrorKind::InvalidData, what.to_string());
        // SAFETY: fstat on a descriptor number (an invalid one fails).
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: as above, with a valid out pointer.
        if unsafe { libc::fstat(fd, &mut st) } != 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: the caller hands us the inherited descriptor; we own it now.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        let len = st.st_size as usize;
        if len < HEADER {
            return Err(bad("the shared segment is too small"));
        }
        let base = map(&fd, len)?;
        // SAFETY: aligned and in bounds; the header's words are atomics.
        let header = unsafe { &*base.as_ptr().cast::<Header>() };
        if header.magic.load(Ordering::Acquire) != MAGIC {
            // SAFETY: our own mapping, not used after this.
            unsafe { libc::munmap(base.as_ptr().cast(), len) };
            return Err(bad("not a snet shared-memory segment"));
        }
        let g = Geometry {
            nodes: header.nodes.load(Ordering::Relaxed),
            slots: header.slots.load(Ordering::Relaxed) as usize,
            slot_bytes: header.slot_bytes.load(Ordering::Relaxed) as usize,
            notify: Notify::from_word(header.notify.load(Ordering::Relaxed))
                .ok_or_else(|| bad("bad notify mode"))?,
            fields: FieldMode::from_word(header.fields.load(Ordering::Relaxed))
                .ok_or_else(|| bad("bad field mode"))?,
            arena: header.arena.load(Ordering::Relaxed) as usize,
        };
        if g.check().ok() != Some(len) {
            return Err(bad("the shared segment's size disagrees with its header"));
        }
        let ring_len = g.ring_len().expect("checked");
        let mut rings = Vec::with_capacity(g.nodes as usize);
        for k in 0..g.nodes as usize {
            // SAFETY: inside the mapping, which lives as long as the segment.
            let ring = unsafe { Ring::attach(base.as_ptr().add(HEADER + k * ring_len), ring_len) }
                .map_err(|e| io::Error::other(format!("ring {k}: {e}")))?;
            rings.push(ring);
        }
        let arena = if g.arena > 0 {
            let at = HEADER + ring_len * g.nodes as usize;
            // SAFETY: inside the mapping.
            let a = unsafe { Arena::attach(base.as_ptr().add(at), g.arena_len()) }
                .map_err(|e| io::Error::other(format!("arena: {e}")))?;
            a.set_prefault(prefault());
            a.set_reuse(reuse());
            Some(a)
        } else {
            None
        };
        Ok(Segment {
            base,
            len,
            fd,
            geometry: g,
            rings,
            arena,
        })
    }

    /// The segment's shape.
    pub fn geometry(&self) -> Geometry {
        self.geometry
    }

    /// The descriptor (for the node processes to inherit).
    pub fn fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    /// Node `k`'s receive ring.
    pub fn ring(&self, k: u32) -> &Ring {
        &self.rings[k as usize]
    }

    /// The field arena (single-copy and zero-copy modes).
    pub fn arena(&self) -> Option<&Arena> {
        self.arena.as_ref()
    }

    fn node(&self, k: u32) -> &NodeWords {
        assert!(k < self.geometry.nodes);
        // SAFETY: inside the header's node words; all atomics.
        unsafe {
            &*self
                .base
                .as_ptr()
                .add(NODE_WORDS + k as usize * NODE_STRIDE)
                .cast::<NodeWords>()
        }
    }

    /// Node `k`'s state and status.
    pub fn state(&self, k: u32) -> (u32, i32) {
        let w = self.node(k);
        // Acquire: pairs with the Release in `set_state` (status first).
        let s = w.state.load(Ordering::Acquire);
        (s, w.status.load(Ordering::Relaxed))
    }

    /// Moves node `k` to `to` (states only move forward; `DEAD` always
    /// wins) with `status`; wakes every node's input manager if the node
    /// is now gone, so that it notices. Returns whether the state changed.
    pub fn set_state(&self, k: u32, to: u32, status: i32) -> bool {
        let w = self.node(k);
        let mut cur = w.state.load(Ordering::Acquire);
        loop {
            if cur >= to {
                return false;
            }
            w.status.store(status, Ordering::Relaxed);
            // Release: the status is visible with the state.
            match w
                .state
                .compare_exchange(cur, to, Ordering::Release, Ordering::Acquire)
            {
                Ok(_) => break,
                Err(now) => cur = now,
            }
        }
        if to >= state::EXITED {
            for r in &self.rings {
                r.kick();
            }
        }
        true
    }

    fn header(&self) -> &Header {
        // SAFETY: the mapping starts with the header; all atomics.
        unsafe { &*self.base.as_ptr().cast::<Header>() }
    }

    /// Node `k`'s reservation word (its own cache line: written before
    /// every push of the node, read only to recover a dead producer).
    fn resv(&self, k: u32) -> &AtomicU64 {
        assert!(k < self.geometry.nodes);
        // SAFETY: inside the header's reservation words; an atomic.
        unsafe {
            &*self
                .base
                .as_ptr()
                .add(RESV_WORDS + k as usize * NODE_STRIDE)
                .cast::<AtomicU64>()
        }
    }

    /// Makes this mapping's ring handles record node `me`'s reservations
    /// (a node's endpoint does this once, before it sends).
    pub fn set_producer(&mut self, me: u32) {
        let word = NonNull::from(self.resv(me));
        for (i, r) in self.rings.iter_mut().enumerate() {
            // SAFETY: the word lies in this mapping, which outlives the
            // ring handles (they are dropped with the segment).
            unsafe { r.set_reservation_word(word, i as u32) };
        }
    }

    /// Node `k`'s incarnation (0 for the process node 0 started first).
    pub fn incarnation(&self, k: u32) -> u32 {
        self.node(k).gen.load(Ordering::Acquire)
    }

    /// Nodes replaced in this run so far.
    pub fn replaced(&self) -> u32 {
        self.header().replaced.load(Ordering::Acquire)
    }

    /// Node `k`, `DEAD`, gets a new incarnation and is `UP` again (node 0
    /// does this before it starts the replacement process); its last
    /// reservation becomes its lost one. Returns the new incarnation, or
    /// `None` if the node is not `DEAD`.
    pub fn revive(&self, k: u32) -> Option<u32> {
        let w = self.node(k);
        if w.state.load(Ordering::Acquire) != state::DEAD {
            return None;
        }
        w.lost
            .store(self.resv(k).swap(0, Ordering::AcqRel), Ordering::Release);
        let gen = w.gen.load(Ordering::Relaxed) + 1;
        w.gen.store(gen, Ordering::Release);
        w.status.store(0, Ordering::Relaxed);
        w.pid.store(0, Ordering::Relaxed);
        self.header().replaced.fetch_add(1, Ordering::AcqRel);
        // Release: the incarnation and the lost word come with the state.
        w.state.store(state::UP, Ordering::Release);
        Some(gen)
    }

    /// Whether position `pos` of ring `ring` was reserved by a producer
    /// that is gone: some node's lost reservation (or, for a `DEAD` node,
    /// its last one) names it and no other node's current one does (a
    /// live owner's word names its slot until it publishes). The caller
    /// saw the position reserved and not published.
    pub fn orphaned(&self, ring: u32, pos: u64) -> bool {
        let tag = crate::ring::reservation_tag(ring, pos);
        let mut dead = false;
        for k in 0..self.geometry.nodes {
            let w = self.node(k);
            let gone = w.state.load(Ordering::Acquire) == state::DEAD;
            let now = self.resv(k).load(Ordering::Acquire) == tag;
            if w.lost.load(Ordering::Acquire) == tag || (gone && now) {
                dead = true;
            } else if now {
                return false;
            }
        }
        dead
    }

    /// Records node `k`'s process id (for messages and diagnostics).
    pub fn set_pid(&self, k: u32, pid: u32) {
        self.node(k).pid.store(pid, Ordering::Relaxed);
    }

    /// Node `k`'s process id as recorded by [`Segment::set_pid`] (for
    /// messages and diagnostics).
    pub fn pid(&self, k: u32) -> u32 {
        self.node(k).pid.load(Ordering::Relaxed)
    }
}

impl Drop for Segment {
    fn drop(&mut self) {
        // The rings and the arena are handles into the mapping; they are
        // plain data and dropped after this, never used again.
        // SAFETY: our own mapping; nothing refers to it any more (field
        // bytes in the arena keep the segment alive through an Arc).
        unsafe { libc::munmap(self.base.as_ptr().cast(), self.len) };
    }
}

fn map(fd: &OwnedFd, len: usize) -> io::Result<NonNull<u8>> {
    // SAFETY: a fresh shared mapping of our descriptor.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED,
            fd.as_raw_fd(),
            0,
        )
    };
    if p == libc::MAP_FAILED {
        return Err(io::Error::last_os_error());
    }
    Ok(NonNull::new(p.cast()).expect("mmap never returns null"))
}

/// Freed arena blocks of at least this many bytes give their pages back to
/// the kernel (`SNET_SHM_GIVE_BACK`); by default none do: a freed block
/// keeps its pages for the next field (as a heap keeps freed memory), so a
/// transfer that reuses it does not fault every page in again. The memory
/// goes when the run ends.
fn give_back() -> usize {
    std::env::var("SNET_SHM_GIVE_BACK")
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(usize::MAX)
}

/// Whether big arena blocks get their pages mapped in one system call per
/// process ([`Arena::prefault`]); `SNET_SHM_PREFAULT=0` turns it off.
fn prefault() -> bool {
    std::env::var("SNET_SHM_PREFAULT").map_or(true, |v| v.trim() != "0")
}

/// Whether big arena allocations prefer blocks whose pages this process
/// mapped already ([`Arena::set_reuse`]); `SNET_SHM_REUSE=0` turns it off,
/// to measure it.
fn reuse() -> bool {
    std::env::var("SNET_SHM_REUSE").map_or(true, |v| v.trim() != "0")
}

/// What a node's status word says, in words.
pub fn describe_status(status: i32) -> String {
    if status < 0 {
        let sig = -status;
        // SAFETY: strsignal returns a static or thread-local string.
        let name = unsafe { std::ffi::CStr::from_ptr(libc::strsignal(sig)) };
        format!("killed by signal {sig} ({})", name.to_string_lossy())
    } else if status == 0 {
        // Only a `DEAD` node has status 0 in words: it ended before its
        // transport closed (see `launch.rs`).
        "exited with status 0 before its run ended".to_string()
    } else {
        format!("exited with status {status}")
    }
}

#[cfg(test)]
mod tests {
    use super::FieldMode;

    #[test]
    fn field_mode_names() {
        for m in FieldMode::ALL {
            assert_eq!(m.name().parse(), Ok(m));
            assert_eq!(m.to_string(), m.name());
            assert_eq!(FieldMode::from_word(m.word()), Some(m));
        }
        assert_eq!(
            "copy".parse::<FieldMode>().unwrap_err().to_string(),
            "no field mode `copy`"
        );
    }
}
