//! The shared-memory transport: the distribution layer's [`Transport`]
//! over a [`Segment`] that the node processes of one machine share (the
//! SCC library's counterpart, thesis 6.2; `runtime.md` §4).
//!
//! # Messages through the rings
//!
//! Every node has one receive ring; a message to node `k` is pushed into
//! ring `k` as one or more *frames* (a frame fills one slot):
//!
//! ```text
//! ONE    kind=3 | channel | from: u16 | header length: u32 | header | payload
//! START  kind=1 | channel | from: u16 | header length: u32 | payload length: u64 | arena offset: u64 | stream bytes...
//! MORE   kind=2 | channel | from: u16 | stream bytes...
//! ```
//!
//! A message whose header and payload fit in one slot behind ONE's 8 fixed
//! bytes travels as one ONE frame (the payload's length is what is left of
//! the slot's length): the common, small case, whose every instruction is
//! on the latency path of a round trip. Anything else is a START frame and
//! MORE frames.
//!
//! The *stream* is the header followed by the payload, unless the payload
//! went through the arena (its offset is in the START frame; `u64::MAX`
//! when not), in which case the stream is the header alone. A message whose
//! stream does not fit in its START frame continues in MORE frames. A
//! node's threads push a message of several frames (or one through the
//! arena) under the node's lock for that destination, so its frames are
//! consecutive among that node's frames of such messages; frames of
//! different nodes interleave, and the receiver reassembles per sending
//! node. A ONE frame is pushed without the lock: it may fall between
//! another thread's frames of a long message, and the receiver delivers it
//! at once (sends from different threads have no order to keep). The ring
//! keeps each sender's frames in order, which gives the transport's
//! per-channel (in fact per-thread) order.
//!
//! # Field bytes ([`FieldMode`])
//!
//! * `chunked`: payloads always travel in the stream, copied into slots by
//!   the sender and out of them by the receiver (two copies: the baseline).
//! * `single-copy`: a payload that does not fit in the START frame is
//!   copied once into a block of the shared [`Arena`]; the receiver's
//!   [`FieldBytes`] *is* that block (no second copy). If the arena has no
//!   room, the payload goes chunked.
//! * `zero-copy`: as single-copy, but a payload that already lives in the
//!   arena (field values, which [`ShmTransport::install_field_allocator`]
//!   makes the language interfaces allocate there) is not copied at all:
//!   the sender takes one more reference on its block and passes the
//!   offset. Cost independent of size.
//!
//! An arena block is freed when its last reference, in any process, is
//! dropped: the receiver's [`FieldBytes`] owns one reference.
//!
//! # Flow control and waiting
//!
//! A ring is the window: a sender facing a full ring backs off (spins,
//! yields, naps up to a millisecond) until the receiver's input manager
//! frees slots, checking meanwhile that the receiver is alive. Receivers
//! wait as the ring's notification mode says (`poll`, `interrupt`,
//! `sparse`); waits are cut into 100 ms pieces so that a dead peer is
//! noticed even if nobody wakes the receiver.
//!
//! # Faults
//!
//! The segment's node words say which nodes are up, closed, exited or dead
//! (`segment.rs`). `recv` delivers what has arrived first, then reports a
//! dead peer as [`TransportError::PeerGone`]; `send` to a dead node fails at
//! once. Node 0's launcher (`launch.rs`) watches the processes and marks
//! the dead; a node process dies with node 0 (`PR_SET_PDEATHSIG`).
//!
//! # Replacing a lost node (`Transport::replace`, node 0)
//!
//! With `--on-node-loss respawn` the engine of node 0 asks the transport
//! to replace a dead node `k` (holding its own sends meanwhile). Then:
//!
//! * **What was sent to the dead process is dropped**: node 0 ends the
//!   dead consumer's claim on ring `k` and takes everything in it,
//!   giving back the arena reference of each message that went by the
//!   arena (a slot reserved and never published by a dead producer is
//!   skipped), so the replacement starts at an empty ring, with no
//!   partly received message.
//! * **What the dead process sent and was not taken is dropped**: every
//!   frame carries its sender's *incarnation* (mod 64, in the top six
//!   bits of the channel byte); a receiver that sees a frame of another
//!   incarnation than it expects looks at the sender's node word: the
//!   current incarnation's frame starts it afresh (a message half
//!   received from the old one is dropped with its arena reference),
//!   an old one's is dropped. So a message from a process that died is
//!   delivered whole or not at all (the engine's commit of held records
//!   and `Done` is one message, which may span many frames).
//! * **A slot the dead process reserved and never published** would stop
//!   a ring at that position for ever (`ring.rs`, "Failures"): every
//!   producer records in its node's reservation word the position it is
//!   about to claim; node 0 keeps the lost process's last word in the
//!   node word, and a receiver whose head is such a slot, named by no
//!   live producer's word, publishes it as abandoned and goes on.
//! * The node word goes back to `UP` with the next incarnation, and the
//!   launcher starts the process (`launch.rs`), which maps the segment
//!   and takes ring `k` as the first one did.

use std::fmt;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use snet_core::{FieldAllocator, FieldBytes};
use snet_transport::{Channel, Gone, Header, Payload, Rank, Received, Transport, TransportError};

use crate::arena::Arena;
use crate::ring::{Consumer, PushError, Ring};
use crate::segment::{describe_status, state, FieldMode, Geometry, Segment};
use crate::spin::SpinLock;

const START: u8 = 1;
const MORE: u8 = 2;
const ONE: u8 = 3;
const START_LEN: usize = 24;
const MORE_LEN: usize = 4;
const ONE_LEN: usize = 8;
const NO_ARENA: u64 = u64::MAX;

/// The shared-memory transport's own failures
/// ([`TransportError::Failed`], or why a peer is gone).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ShmError {
    /// An endpoint for a node the segment does not have.
    NoSuchNode {
        /// The node asked for.
        me: u32,
        /// The segment's node count.
        nodes: u32,
    },
    /// A second endpoint for one node.
    RingTaken {
        /// The node.
        me: u32,
    },
    /// A frame could not be pushed.
    Push(PushError),
    /// A malformed frame (`what` is wrong with it).
    BadFrame(&'static str),
    /// A header of 4 GiB or more.
    HeaderTooLong,
    /// A node process ended (`status` as in the segment's node word:
    /// an exit status, or minus a signal).
    Died {
        /// The exit status, or minus the signal.
        status: i32,
    },
}

impl fmt::Display for ShmError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ShmError::NoSuchNode { me, nodes } => write!(f, "node {me} of a {nodes}-node segment"),
            ShmError::RingTaken { me } => write!(f, "node {me}'s ring already has a receiver"),
            ShmError::Push(e) => write!(f, "{e}"),
            ShmError::BadFrame(what) => write!(f, "shm: bad frame: {what}"),
            ShmError::HeaderTooLong => f.write_str("shm: header over 4 GiB"),
            ShmError::Died { status } => f.write_str(&describe_status(*status)),
        }
    }
}

impl std::error::Error for ShmError {}

/// Node `node`'s process ended with `status` (the segment's node word).
fn peer_died(node: u32, status: i32) -> TransportError {
    TransportError::PeerGone {
        node: Rank(node),
        why: Gone::Backend(snet_transport::BackendError::new(ShmError::Died { status })),
    }
}

/// How many looks a `sparse` receiver takes before it sleeps: some tens
/// of microseconds, about a message's round trip between two busy nodes,
/// so a node that is exchanging messages keeps polling (the thesis's
/// "handling" state) and only a node with nothing coming sleeps.
const SPARSE_SPINS: u32 = 2000;

/// The longest a receiver sleeps before it looks at its peers' states.
const LOOK_EVERY: Duration = Duration::from_millis(100);

/// A message being reassembled.
struct Partial {
    channel: Channel,
    hlen: usize,
    header: Header,
    payload: FieldBytes,
    /// Stream bytes still to come.
    missing: usize,
    /// Stream bytes received.
    got: usize,
    /// The payload came through the arena (the stream is the header).
    by_arena: bool,
}

impl Partial {
    /// Appends stream bytes.
    fn take(&mut self, mut bytes: &[u8]) {
        let n = bytes.len().min(self.missing);
        bytes = &bytes[..n];
        if self.got < self.hlen {
            let h = (self.hlen - self.got).min(bytes.len());
            self.header.extend_from_slice(&bytes[..h]);
            self.got += h;
            self.missing -= h;
            bytes = &bytes[h..];
        }
        if !bytes.is_empty() && !self.by_arena {
            let at = self.got - self.hlen;
            self.payload[at..at + bytes.len()].copy_from_slice(bytes);
            self.got += bytes.len();
            self.missing -= bytes.len();
        }
    }
}

/// The receiving side: the ring's consumer and the reassembly state.
struct Inbox {
    /// Borrows `Shared::segment`'s ring of this node; declared first so it
    /// is dropped before the `Arc` that keeps the segment.
    consumer: Consumer<'static>,
    /// By sender: the message being reassembled.
    partial: Vec<Option<Partial>>,
    /// By sender: the incarnation whose frames are taken (mod [`GENS`]).
    gens: Vec<u8>,
}

/// Incarnations a frame tells apart (the channel byte's top 6 bits).
const GENS: u32 = 64;

/// A frame's channel byte: the channel and the sender's incarnation.
fn channel_byte(channel: Channel, gen: u8) -> u8 {
    channel as u8 | gen << 2
}

/// What the endpoint and the arena blocks it hands out share.
struct Shared {
    segment: Segment,
}

/// A reference to an arena block, owned by a [`FieldBytes`]: dropping it
/// releases the reference (the block is freed with the last one, in
/// whichever process).
struct ArenaRef {
    shared: Arc<Shared>,
    off: u64,
}

impl Drop for ArenaRef {
    fn drop(&mut self) {
        if let Some(a) = self.shared.segment.arena() {
            // SAFETY: this object owned one reference, and the bytes are
            // no longer used (their FieldBytes is being dropped).
            unsafe { a.release(self.off) };
        }
    }
}

/// `len` bytes of arena block `off` as field bytes owning one reference.
fn arena_bytes(shared: &Arc<Shared>, arena: &Arena, off: u64, len: usize) -> FieldBytes {
    let ptr = NonNull::new(arena.data(off)).expect("arena blocks are inside the mapping");
    // SAFETY: the block holds at least `len` bytes (the sender checked
    // against its capacity), is 64-aligned, and stays allocated while the
    // reference the owner holds lives; the mapping stays while `Shared`
    // does. Field values are written only before they are shared.
    unsafe {
        FieldBytes::from_external(
            ptr,
            len,
            Box::new(ArenaRef {
                shared: shared.clone(),
                off,
            }),
        )
    }
}

/// This process's field allocator in zero-copy mode: field values of more
/// than a slot's bytes live in the arena.
struct ArenaFields {
    shared: Arc<Shared>,
    min: usize,
}

impl FieldAllocator for ArenaFields {
    fn alloc_zeroed(&self, len: usize) -> Option<FieldBytes> {
        if len < self.min {
            return None;
        }
        let arena = self.shared.segment.arena()?;
        let off = arena.alloc(len)?;
        Some(arena_bytes(&self.shared, arena, off, len))
    }

    fn alloc_for_copy(&self, len: usize) -> Option<FieldBytes> {
        if len < self.min {
            return None;
        }
        let arena = self.shared.segment.arena()?;
        // Not zeroed: the caller overwrites every byte at once.
        let off = arena.alloc_uninit(len)?;
        Some(arena_bytes(&self.shared, arena, off, len))
    }
}

/// What one endpoint sent, by path (for `--stats` and tests).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    /// Frames pushed into rings.
    pub frames: u64,
    /// Payloads too big for one frame sent through the rings in pieces.
    pub chunked: u64,
    /// Payloads copied once into the arena (single-copy).
    pub copied: u64,
    /// Payloads that lived in the arena already: only the offset went.
    pub zero_copy: u64,
    /// Times a sender found a ring full and waited.
    pub full: u64,
}

impl fmt::Display for Counters {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} frames, payloads: {} chunked, {} single-copy, {} zero-copy; {} waits for a full ring",
            self.frames, self.chunked, self.copied, self.zero_copy, self.full
        )
    }
}

#[derive(Default)]
struct AtomicCounters {
    frames: AtomicU64,
    chunked: AtomicU64,
    copied: AtomicU64,
    zero_copy: AtomicU64,
    full: AtomicU64,
}

fn bump(c: &AtomicU64) {
    c.fetch_add(1, Ordering::Relaxed);
}

/// One node's endpoint of a shared-memory run.
pub struct ShmTransport {
    /// Declared before `shared`: the consumer borrows its segment.
    inbox: SpinLock<Inbox>,
    shared: Arc<Shared>,
    me: u32,
    /// The segment's node count (read on every send).
    nodes: u32,
    /// One lock per destination: a message's frames go out together.
    send_locks: Vec<Mutex<()>>,
    closed: AtomicBool,
    counters: AtomicCounters,
    /// This endpoint's incarnation (mod [`GENS`]), in every frame it sends.
    gen: u8,
    /// Node 0 of a run that replaces lost nodes: starts node `k`'s
    /// replacement process, incarnation `gen` ([`ShmTransport::on_replace`]).
    respawn: std::sync::OnceLock<Respawn>,
}

/// What [`ShmTransport::on_replace`] is given: starts a replacement
/// process for node `k` as incarnation `gen`.
pub type Respawn = Box<dyn Fn(u32, u32) -> std::io::Result<()> + Send + Sync>;

impl ShmTransport {
    /// Node `me`'s endpoint on `segment`.
    pub fn new(mut segment: Segment, me: u32) -> Result<ShmTransport, TransportError> {
        let nodes = segment.geometry().nodes;
        if me >= nodes {
            return Err(TransportError::backend(ShmError::NoSuchNode { me, nodes }));
        }
        segment.set_producer(me);
        let gens: Vec<u8> = (0..nodes)
            .map(|k| (segment.incarnation(k) % GENS) as u8)
            .collect();
        let gen = gens[me as usize];
        let shared = Arc::new(Shared { segment });
        let ring = shared.segment.ring(me);
        // SAFETY: the consumer borrows a ring handle inside `shared`, which
        // this endpoint keeps (in `shared`, dropped after `inbox`) and which
        // never moves (it is behind the Arc).
        let ring: &'static Ring = unsafe { &*(ring as *const Ring) };
        let mut consumer = ring
            .consumer()
            .map_err(|_| TransportError::backend(ShmError::RingTaken { me }))?;
        consumer.set_spins(SPARSE_SPINS);
        Ok(ShmTransport {
            inbox: SpinLock::new(Inbox {
                consumer,
                partial: (0..nodes).map(|_| None).collect(),
                gens,
            }),
            shared,
            me,
            nodes,
            send_locks: (0..nodes).map(|_| Mutex::new(())).collect(),
            closed: AtomicBool::new(false),
            counters: AtomicCounters::default(),
            gen,
            respawn: std::sync::OnceLock::new(),
        })
    }

    /// Node 0: how [`Transport::replace`] starts a replacement process
    /// (the launcher's, `launch.rs`; set once). Without it this endpoint
    /// cannot replace a node.
    pub fn on_replace(&self, f: Respawn) {
        let _ = self.respawn.set(f);
    }

    /// This endpoint's incarnation (0 for the first process of its node).
    pub fn incarnation(&self) -> u32 {
        self.segment().incarnation(self.me)
    }

    /// Node 0 replacing node `k`, whose process is gone: drops what was
    /// sent to it and not taken (ring `k`, giving back the arena blocks
    /// of the messages that went by the arena; a slot a dead producer
    /// reserved and never published is skipped), ends its dead consumer's
    /// claim so that the replacement can take the ring, and forgets the
    /// message it was sending this node, if any.
    fn clear_lost(&self, k: u32, gen: u32) {
        let seg = self.segment();
        let ring = seg.ring(k);
        // SAFETY: node `k`'s process is gone (its node word is `DEAD`,
        // written by the launcher after it reaped the process).
        unsafe { ring.force_release_consumer() };
        if let Ok(mut c) = ring.consumer() {
            let end = ring.tail();
            while (end.wrapping_sub(c.position()) as i64) > 0 {
                if c.try_pop(|f| self.release_frame(f)).is_some() {
                    continue;
                }
                if c.is_ready() {
                    continue;
                }
                if seg.orphaned(k, c.position()) {
                    // SAFETY: `orphaned`: its producer is gone.
                    unsafe { c.abandon_head() };
                } else {
                    // A live producer is writing it: it publishes soon.
                    std::thread::yield_now();
                }
            }
        }
        let mut inbox = self.inbox.lock();
        inbox.partial[k as usize] = None;
        inbox.gens[k as usize] = (gen % GENS) as u8;
    }

    /// Gives back the arena reference a dropped START frame owned.
    fn release_frame(&self, f: &[u8]) {
        if f.len() >= START_LEN && f[0] == START {
            let off = u64::from_le_bytes(f[16..24].try_into().expect("8"));
            if off != NO_ARENA {
                if let Some(a) = self.segment().arena() {
                    // SAFETY: the message owned one reference to the block,
                    // and nobody will read the message.
                    unsafe { a.release(off) };
                }
            }
        }
    }

    /// Every node's endpoint on one fresh segment in this process (tests,
    /// and the transport suite's in-process runs).
    pub fn in_process(g: Geometry) -> std::io::Result<Vec<ShmTransport>> {
        let nodes = g.nodes;
        let fd = Segment::create(g)?;
        let mut out = Vec::new();
        // The first endpoint keeps the creator's mapping; the others map
        // the same descriptor again (each at its own address, as processes do).
        let dup = |s: &Segment| {
            // SAFETY: duplicating a descriptor we hold.
            let d = unsafe { libc::dup(s.fd()) };
            if d < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Segment::attach(d)
        };
        let mut segs = Vec::new();
        for _ in 1..nodes {
            segs.push(dup(&fd)?);
        }
        out.push(ShmTransport::new(fd, 0).map_err(std::io::Error::other)?);
        for (k, s) in segs.into_iter().enumerate() {
            out.push(ShmTransport::new(s, k as u32 + 1).map_err(std::io::Error::other)?);
        }
        Ok(out)
    }

    /// The segment this endpoint runs on.
    pub fn segment(&self) -> &Segment {
        &self.shared.segment
    }

    /// The segment's shape.
    pub fn geometry(&self) -> Geometry {
        self.shared.segment.geometry()
    }

    /// Makes this process's language interfaces allocate field values in
    /// the arena (zero-copy mode; once per process). Values up to a slot's
    /// bytes stay on the heap: they travel inline anyway.
    pub fn install_field_allocator(&self) -> bool {
        if self.geometry().fields != FieldMode::ZeroCopy || self.segment().arena().is_none() {
            return false;
        }
        let a: &'static ArenaFields = Box::leak(Box::new(ArenaFields {
            shared: self.shared.clone(),
            min: self.geometry().slot_bytes,
        }));
        snet_core::set_field_allocator(a)
    }

    /// What this endpoint sent so far, by path.
    pub fn counters(&self) -> Counters {
        let c = &self.counters;
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        Counters {
            frames: get(&c.frames),
            chunked: get(&c.chunked),
            copied: get(&c.copied),
            zero_copy: get(&c.zero_copy),
            full: get(&c.full),
        }
    }

    /// Marks this node dead, as if its process had been killed (tests).
    pub fn kill(&self) {
        self.closed.store(true, Ordering::Release);
        self.segment()
            .set_state(self.me, state::DEAD, -libc::SIGKILL);
    }

    /// After a node was replaced: if this ring's head is a slot its lost
    /// incarnation reserved and never published, skips it; returns whether
    /// it did.
    fn unstick(&self, inbox: &mut Inbox) -> bool {
        let c = &mut inbox.consumer;
        if !matches!(c.head(), crate::ring::Head::Pending(_))
            || !self.segment().orphaned(self.me, c.position())
        {
            return false;
        }
        // SAFETY: `orphaned`: the slot's producer is gone.
        unsafe { c.abandon_head() }
    }

    /// The first dead peer, if any.
    fn dead_peer(&self) -> Option<(u32, i32)> {
        let seg = self.segment();
        (0..seg.geometry().nodes)
            .filter(|&k| k != self.me)
            .find_map(|k| match seg.state(k) {
                (state::DEAD, status) => Some((k, status)),
                _ => None,
            })
    }

    fn gone(&self, node: u32) -> Option<TransportError> {
        match self.segment().state(node) {
            (state::DEAD, status) => Some(peer_died(node, status)),
            _ => None,
        }
    }

    /// Puts the payload in the arena if it goes that way: its offset (the
    /// message owns one reference), or `None` to send it in the stream.
    fn to_arena(&self, bytes: &[u8]) -> Option<u64> {
        let fields = self.geometry().fields;
        if fields == FieldMode::Chunked {
            return None;
        }
        let arena = self.segment().arena()?;
        if fields == FieldMode::ZeroCopy {
            if let Some(off) = arena.offset_of(bytes.as_ptr(), bytes.len()) {
                arena.retain(off);
                bump(&self.counters.zero_copy);
                return Some(off);
            }
        }
        let off = arena.alloc_uninit(bytes.len())?;
        bump(&self.counters.copied);
        // SAFETY: a fresh block of at least `len` bytes, ours alone until sent.
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), arena.data(off), bytes.len()) };
        Some(off)
    }

    /// Pushes one frame to node `to` with `attempt` (one try at ring
    /// `to`), waiting for room.
    fn push(
        &self,
        to: u32,
        attempt: &dyn Fn(&Ring) -> Result<(), PushError>,
    ) -> Result<(), TransportError> {
        let ring = self.segment().ring(to);
        let mut naps = 0u32;
        loop {
            match attempt(ring) {
                Ok(()) => {
                    bump(&self.counters.frames);
                    return Ok(());
                }
                Err(PushError::Full) if naps == 0 => bump(&self.counters.full),
                Err(PushError::Full) => {}
                Err(e) => return Err(TransportError::backend(ShmError::Push(e))),
            }
            // Whatever we pushed must be looked at before we wait.
            ring.after_push();
            if let Some(e) = self.gone(to) {
                return Err(e);
            }
            if self.segment().state(to).0 == state::EXITED {
                return Err(TransportError::PeerGone {
                    node: Rank(to),
                    why: Gone::Exited,
                });
            }
            if self.closed.load(Ordering::Acquire) {
                return Err(TransportError::Closed);
            }
            naps += 1;
            if naps < 64 {
                std::hint::spin_loop();
            } else if naps < 128 {
                std::thread::yield_now();
            } else {
                let us = 1u64 << (naps - 128).min(10);
                std::thread::sleep(Duration::from_micros(us));
            }
        }
    }

    /// Takes frames until a message is complete (in `out`) or the ring is
    /// empty. (The message is built in place: a `Received` is about a
    /// hundred bytes, and moving it out through every layer cost more than
    /// the rest of a small message's receipt.)
    fn take_ready(
        &self,
        inbox: &mut Inbox,
        out: &mut Option<Received>,
    ) -> Result<(), TransportError> {
        let Inbox {
            consumer,
            partial,
            gens,
        } = inbox;
        while out.is_none() {
            match consumer.try_pop(|f| self.frame(f, partial, gens, out)) {
                None => return Ok(()),
                Some(r) => r?,
            }
        }
        Ok(())
    }

    /// Handles one frame; puts the message in `out` if this frame ends one.
    fn frame(
        &self,
        f: &[u8],
        partial: &mut [Option<Partial>],
        gens: &mut [u8],
        out: &mut Option<Received>,
    ) -> Result<(), TransportError> {
        let bad = |what: &'static str| Err(TransportError::backend(ShmError::BadFrame(what)));
        if f.len() < MORE_LEN {
            return bad("too short");
        }
        let Some(channel) = Channel::from_raw(f[1] & 3) else {
            return bad("channel");
        };
        let from = u32::from(u16::from_le_bytes([f[2], f[3]]));
        let gen = f[1] >> 2;
        if gens.get(from as usize).is_some_and(|&g| g != gen) {
            // Another incarnation of the sender: a replacement's first
            // frame (its incarnation is the node's now), or a frame of a
            // lost one, which is dropped with what it carried.
            let now = (self.segment().incarnation(from) % GENS) as u8;
            if gen != now {
                self.release_frame(f);
                return Ok(());
            }
            gens[from as usize] = now;
            partial[from as usize] = None;
        }
        if f[0] == ONE {
            // The whole message in this frame (the common case).
            let hlen = match f.get(4..ONE_LEN) {
                Some(h) => u32::from_le_bytes(h.try_into().expect("4")) as usize,
                None => return bad("short one-frame message"),
            };
            let Some((header, payload)) = f[ONE_LEN..].split_at_checked(hlen) else {
                return bad("header longer than its frame");
            };
            if from as usize >= partial.len() {
                return bad("sender");
            }
            // (`out` is empty here: written without dropping a value.)
            out.get_or_insert_with(|| Received {
                from: Rank(from),
                channel,
                header: small_header(header),
                payload: if payload.is_empty() {
                    FieldBytes::empty()
                } else {
                    FieldBytes::copy_from(payload)
                },
            });
            return Ok(());
        }
        let Some(slot) = partial.get_mut(from as usize) else {
            return bad("sender");
        };
        let p = match f[0] {
            START => {
                if f.len() < START_LEN {
                    return bad("short start");
                }
                let hlen = u32::from_le_bytes(f[4..8].try_into().expect("4")) as usize;
                let plen = u64::from_le_bytes(f[8..16].try_into().expect("8")) as usize;
                let off = u64::from_le_bytes(f[16..24].try_into().expect("8"));
                if slot.is_some() {
                    // (Only a ONE frame, handled above, may come between
                    // another thread's frames: see `send`.)
                    return bad("a new message before the last one ended");
                }
                let (payload, by_arena) = if off == NO_ARENA {
                    (FieldBytes::zeroed(plen), false)
                } else {
                    let Some(arena) = self.segment().arena() else {
                        return bad("arena offset without an arena");
                    };
                    let bytes = arena_bytes(&self.shared, arena, off, plen);
                    // The receiver reads the field: its pages, once per
                    // process, in one system call (a block reused later is
                    // mapped already).
                    arena.prefault(off, plen, false);
                    (bytes, true)
                };
                let missing = hlen + if by_arena { 0 } else { plen };
                let mut m = Partial {
                    channel,
                    hlen,
                    header: Header::with_capacity(hlen),
                    payload,
                    missing,
                    got: 0,
                    by_arena,
                };
                m.take(&f[START_LEN..]);
                m
            }
            MORE => {
                let Some(mut m) = slot.take() else {
                    return bad("a continuation without a start");
                };
                m.take(&f[MORE_LEN..]);
                m
            }
            _ => return bad("kind"),
        };
        if p.missing > 0 {
            *slot = Some(p);
            return Ok(());
        }
        *out = Some(Received {
            from: Rank(from),
            channel: p.channel,
            header: p.header,
            payload: p.payload,
        });
        Ok(())
    }
}

/// Writes a START frame's fixed part (the first [`START_LEN`] bytes of `b`).
fn write_start(b: &mut [u8], channel: u8, from: [u8; 2], hlen: u32, plen: usize, off: u64) {
    b[0] = START;
    b[1] = channel;
    b[2..4].copy_from_slice(&from);
    b[4..8].copy_from_slice(&hlen.to_le_bytes());
    b[8..16].copy_from_slice(&(plen as u64).to_le_bytes());
    b[16..24].copy_from_slice(&off.to_le_bytes());
}

/// A received header: inline (no allocation, no `memcpy` call) when short.
fn small_header(b: &[u8]) -> Header {
    const INLINE: usize = 48;
    if b.len() > INLINE {
        return Header::from_slice(b);
    }
    let mut buf = std::mem::MaybeUninit::<[u8; INLINE]>::uninit();
    // SAFETY: `b.len() <= INLINE`: the copy stays inside `buf`, and the
    // header's length says that exactly its first `b.len()` bytes are
    // initialised (a `SmallVec` never reads beyond its length).
    unsafe {
        crate::ring::copy_small(buf.as_mut_ptr().cast::<u8>(), b.as_ptr(), b.len());
        Header::from_buf_and_len_unchecked(buf, b.len())
    }
}

/// Copies stream bytes `[at, at + dst.len())` of `header ++ payload` into `dst`.
fn copy_stream(dst: &mut [u8], header: &[u8], payload: &[u8], at: usize) {
    let mut d = 0;
    if at < header.len() {
        let n = (header.len() - at).min(dst.len());
        dst[..n].copy_from_slice(&header[at..at + n]);
        d = n;
    }
    if d < dst.len() {
        let p = at + d - header.len();
        let n = dst.len() - d;
        dst[d..].copy_from_slice(&payload[p..p + n]);
    }
}

impl Transport for ShmTransport {
    fn node(&self) -> Rank {
        Rank(self.me)
    }

    fn nodes(&self) -> u32 {
        self.nodes
    }

    fn send_to_peer(
        &self,
        to: Rank,
        channel: Channel,
        header: &[u8],
        payload: Payload,
    ) -> Result<(), TransportError> {
        let to = to.0;
        if self.closed.load(Ordering::Acquire) {
            return Err(TransportError::Closed);
        }
        if let Some(e) = self.gone(to) {
            return Err(e);
        }
        let header_len = u32::try_from(header.len())
            .map_err(|_| TransportError::backend(ShmError::HeaderTooLong))?;
        let ring = self.segment().ring(to);
        let room = ring.max_message();
        let bytes = payload.bytes();
        let from = (self.me as u16).to_le_bytes();
        if ONE_LEN + header.len() + bytes.len() <= room {
            // The common case, kept lean: one ONE frame, written in place,
            // without the destination's lock (it may land between another
            // thread's frames of a long message: the receiver delivers it
            // at once; sends of different threads are not ordered anyway).
            let fixed = u64::from(ONE)
                | u64::from(channel_byte(channel, self.gen)) << 8
                | u64::from(self.me as u16) << 16
                | u64::from(header_len) << 32;
            match ring.try_push_small(fixed, header, bytes) {
                Ok(()) => {
                    // A plain load and store, not a read-modify-write: this
                    // is the path of every small message (a count may be
                    // lost if two threads send at the same instant;
                    // statistics only).
                    let c = &self.counters.frames;
                    c.store(c.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
                }
                // Full: wait for room as every frame does.
                Err(_) => self.push(to, &|r| r.try_push_small(fixed, header, bytes))?,
            }
            ring.after_push();
            return Ok(());
        }
        let _order = self.send_locks[to as usize].lock();
        // (A message that fits in one frame took the path above.)
        let arena = self.to_arena(bytes);
        let stream_payload: &[u8] = if arena.is_some() { &[] } else { bytes };
        let total = header.len() + stream_payload.len();
        if arena.is_none() && START_LEN + total > room && !bytes.is_empty() {
            bump(&self.counters.chunked);
        }
        let first = total.min(room - START_LEN);
        let start = |b: &mut [u8]| {
            let off = arena.unwrap_or(NO_ARENA);
            write_start(
                b,
                channel_byte(channel, self.gen),
                from,
                header_len,
                bytes.len(),
                off,
            );
            copy_stream(&mut b[START_LEN..], header, stream_payload, 0);
        };
        if let Err(e) = self.push(to, &|r| r.try_push_with(START_LEN + first, |b| start(b))) {
            if let (Some(off), Some(a)) = (arena, self.segment().arena()) {
                // SAFETY: the message owned this reference and was not sent.
                unsafe { a.release(off) };
            }
            return Err(e);
        }
        let mut at = first;
        let mut since_notify = 0;
        while at < total {
            let n = (total - at).min(room - MORE_LEN);
            let more = |b: &mut [u8]| {
                b[0] = MORE;
                b[1] = channel_byte(channel, self.gen);
                b[2..4].copy_from_slice(&from);
                copy_stream(&mut b[MORE_LEN..], header, stream_payload, at);
            };
            self.push(to, &|r| r.try_push_with(MORE_LEN + n, |b| more(b)))?;
            at += n;
            since_notify += 1;
            // Let the receiver start on a long message before it ends.
            if since_notify == 16 {
                ring.after_push();
                since_notify = 0;
            }
        }
        ring.after_push();
        Ok(())
    }

    fn recv(&self, timeout: Duration) -> Result<Option<Received>, TransportError> {
        let mut inbox = self.inbox.lock();
        let mut out = None;
        // The clock is read only when there is nothing to take at once.
        let mut deadline = None;
        loop {
            self.take_ready(&mut inbox, &mut out)?;
            if out.is_some() {
                return Ok(out);
            }
            if self.closed.load(Ordering::Acquire) {
                return Err(TransportError::Closed);
            }
            if let Some((node, status)) = self.dead_peer() {
                return Err(peer_died(node, status));
            }
            if self.segment().replaced() > 0 && self.unstick(&mut inbox) {
                continue;
            }
            let now = Instant::now();
            let end = *deadline.get_or_insert(now + timeout);
            if now >= end {
                return Ok(None);
            }
            inbox.consumer.wait(Some((end - now).min(LOOK_EVERY)));
        }
    }

    fn close(&self) {
        if !self.closed.swap(true, Ordering::AcqRel) {
            self.segment().set_state(self.me, state::CLOSED, 0);
            // Wake this node's own receiver, if it waits.
            self.segment().ring(self.me).kick();
        }
    }

    fn buffered(&self, to: Rank) -> Option<usize> {
        Some(self.segment().ring(to.0).len() as usize)
    }

    fn window(&self) -> Option<usize> {
        Some(self.geometry().slots)
    }

    fn name(&self) -> &str {
        "shm"
    }

    /// Node 0 (with a launcher, [`ShmTransport::on_replace`]): node `node`'s
    /// process is gone. Clears its ring of what was sent to it, gives
    /// the node a new incarnation (frames of the lost one still in any
    /// ring are dropped where they arrive; a message it was sending is
    /// never delivered in part; a slot it reserved and never published is
    /// skipped) and starts the replacement process. The caller sends
    /// nothing to `node` meanwhile.
    /// Zero-copy mode: the field arena's blocks (a field made there is
    /// sent as its block's offset, the message owning one reference of
    /// its own, and the segment outlives every node process but node 0).
    fn shared_region(&self) -> Option<std::ops::Range<usize>> {
        if self.geometry().fields != FieldMode::ZeroCopy {
            return None;
        }
        self.segment().arena().map(Arena::blocks_range)
    }

    fn replace(&self, node: Rank) -> Result<bool, TransportError> {
        let Some(respawn) = self.respawn.get() else {
            return Ok(false);
        };
        let k = node.0;
        if k == self.me || k >= self.nodes || self.segment().state(k).0 != state::DEAD {
            return Ok(false);
        }
        let gen = self.segment().incarnation(k) + 1;
        self.clear_lost(k, gen);
        if self.segment().revive(k) != Some(gen) {
            return Ok(false);
        }
        respawn(k, gen).map_err(TransportError::backend)?;
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::notify::Notify;
    use snet_transport::conformance;

    fn geometry(nodes: u32, notify: Notify, fields: FieldMode) -> Geometry {
        Geometry {
            nodes,
            slots: 16,
            slot_bytes: 240,
            notify,
            fields,
            arena: if fields == FieldMode::Chunked {
                0
            } else {
                256 << 20
            },
        }
    }

    #[test]
    fn stream_copies_cross_the_header_payload_boundary() {
        let (h, p) = (b"hdr".as_slice(), b"payload".as_slice());
        let mut all = Vec::new();
        for at in 0..10 {
            let mut d = [0u8; 1];
            copy_stream(&mut d, h, p, at);
            all.push(d[0]);
        }
        assert_eq!(&all, b"hdrpayload");
        let mut d = [0u8; 4];
        copy_stream(&mut d, h, p, 1);
        assert_eq!(&d, b"drpa");
    }

    /// Node 0 replaces a dead node 1 (in one process: the "process" is an
    /// endpoint): what was queued for the old incarnation is dropped, a
    /// frame the old one still sends is dropped where it arrives, a
    /// message it had half sent is never delivered, and the replacement's
    /// messages go both ways.
    #[test]
    fn a_replaced_node_starts_clean_and_its_old_incarnation_is_not_heard() {
        let g = geometry(2, Notify::Poll, FieldMode::SingleCopy);
        let mut ts = ShmTransport::in_process(g).expect("segment").into_iter();
        let (zero, old) = (ts.next().unwrap(), ts.next().unwrap());
        let wait = Duration::from_secs(5);
        assert_eq!(zero.replace(Rank(1)), Ok(false), "no launcher yet");
        let started = Arc::new(std::sync::Mutex::new(Vec::new()));
        let log = started.clone();
        zero.on_replace(Box::new(move |k, gen| {
            log.lock().unwrap().push((k, gen));
            Ok(())
        }));
        // Queued for node 1 and never taken; a big one goes by the arena.
        zero.send(Rank(1), Channel::Records, b"lost", Payload::none())
            .unwrap();
        zero.send(
            Rank(1),
            Channel::Field,
            b"big",
            Payload::owned(vec![7; 4096]),
        )
        .unwrap();
        // Node 1's first frame of a long message (chunked), then it dies.
        let ring0 = old.segment().ring(0);
        ring0
            .try_push_with(START_LEN + 4, |b| {
                write_start(
                    b,
                    channel_byte(Channel::Records, 0),
                    [1, 0],
                    4000,
                    0,
                    NO_ARENA,
                );
                b[START_LEN..].copy_from_slice(b"half");
            })
            .unwrap();
        old.kill();
        match zero.recv(wait) {
            Err(TransportError::PeerGone { node: Rank(1), .. }) => {}
            other => panic!("{other:?}"),
        }
        assert_eq!(zero.replace(Rank(1)), Ok(true));
        assert_eq!(*started.lock().unwrap(), vec![(1, 1)]);
        assert_eq!(zero.segment().state(1).0, state::UP);
        // The old incarnation still sends (a frame in flight at its death).
        old.closed.store(false, Ordering::Release);
        let _ = old.send(Rank(0), Channel::Records, b"stale", Payload::none());
        // The replacement takes ring 1 (the dead claim ended), sees only
        // what comes after, and is heard.
        // SAFETY: duplicating a descriptor we hold.
        let fd = unsafe { libc::dup(zero.segment().fd()) };
        let seg = Segment::attach(fd).expect("map");
        let new = ShmTransport::new(seg, 1).expect("ring 1 is free again");
        assert_eq!(new.incarnation(), 1);
        zero.send(Rank(1), Channel::Records, b"fresh", Payload::none())
            .unwrap();
        let m = new.recv(wait).unwrap().expect("a message");
        assert_eq!(&m.header[..], b"fresh");
        new.send(Rank(0), Channel::Records, b"hello", Payload::none())
            .unwrap();
        let m = zero.recv(wait).unwrap().expect("a message");
        assert_eq!((m.from, &m.header[..]), (Rank(1), &b"hello"[..]));
        assert_eq!(zero.recv(Duration::from_millis(50)), Ok(None));
        // Every arena block came back: the dropped one-by-arena message too.
        let a = zero.segment().arena().expect("arena");
        assert_eq!(a.stats().live_blocks, 0, "{:?}", a.stats());
    }

    /// Zero-copy under `--on-node-loss respawn` (issue 40): node 1 makes
    /// a field in the arena and *gives* it to node 0 (a payload that lies
    /// in [`Transport::shared_region`]: the message takes a reference of
    /// its own and passes the offset), and dies holding its own reference
    /// (a dead process never gives its references back). Node 0 replaces
    /// it. The block node 0 received stays live and intact while node 0
    /// holds it, whatever the dead process held; no allocation hands it
    /// out meanwhile; once node 0 drops it, the dead process's reference
    /// alone keeps it (leaked until the run ends: exactly that block, and
    /// what the dead process was sending and nobody took, which node 0
    /// gives back as it clears the ring). The arena is not poisoned: node
    /// 0 and the replacement allocate and free as before, and a field the
    /// dead process had allocated and not sent (half written) is never
    /// seen by anyone. A message that took no reference of its own (its
    /// receiver consuming the sender's) would free the block when node 0
    /// drops it, the dead process's reference with it: `live_blocks` 0.
    #[test]
    fn a_lost_nodes_references_never_free_a_block_another_holds() {
        let g = geometry(2, Notify::Poll, FieldMode::ZeroCopy);
        let mut ts = ShmTransport::in_process(g).expect("segment").into_iter();
        let (zero, old) = (ts.next().unwrap(), ts.next().unwrap());
        zero.on_replace(Box::new(|_, _| Ok(())));
        let wait = Duration::from_secs(5);
        let a1 = old.segment().arena().expect("arena");
        let region = old.shared_region().expect("zero-copy has a shared region");
        let len = 64 << 10;
        // Node 1's field (its own reference), filled, then given.
        let off = a1.alloc(len).expect("room");
        let mut field = arena_bytes(&old.shared, a1, off, len);
        field.iter_mut().enumerate().for_each(|(i, b)| *b = i as u8);
        assert!(region.contains(&(field.as_ptr() as usize)));
        let field = Arc::new(field);
        old.send(
            Rank(0),
            Channel::Records,
            b"given",
            Payload::shared(field.clone()),
        )
        .unwrap();
        // A second field allocated and half written, never sent.
        let half = a1.alloc(len).expect("room");
        // SAFETY: node 1's own block of `len` bytes.
        unsafe { a1.data(half).write_bytes(7, len / 2) };
        // Node 1 dies holding both (its references are never released).
        std::mem::forget(field);
        old.kill();
        let m = zero.recv(wait).unwrap().expect("the given field");
        assert_eq!(&m.header[..], b"given");
        assert!(m.payload.is_external(), "passed by reference");
        match zero.recv(wait) {
            Err(TransportError::PeerGone { node: Rank(1), .. }) => {}
            other => panic!("{other:?}"),
        }
        assert_eq!(zero.replace(Rank(1)), Ok(true));
        let a0 = zero.segment().arena().expect("arena");
        let check = |p: &FieldBytes| p.iter().enumerate().all(|(i, &b)| b == i as u8);
        assert!(check(&m.payload));
        // Allocations meanwhile never hand out a block someone holds.
        let mine: Vec<u64> = (0..8).map(|_| a0.alloc(len).expect("room")).collect();
        assert!(!mine.contains(&off) && !mine.contains(&half), "{mine:?}");
        for &o in &mine {
            // SAFETY: node 0's own blocks, written and given up.
            unsafe {
                a0.data(o).write_bytes(0xee, len);
                a0.release(o);
            }
        }
        assert!(check(&m.payload), "node 0's field was overwritten");
        drop(m);
        let s = a0.stats();
        assert!(!s.poisoned);
        assert_eq!(
            s.live_blocks, 2,
            "the dead process's two blocks, and no other: {s:?}"
        );
        // The replacement allocates and frees as the first did.
        // SAFETY: duplicating a descriptor we hold.
        let fd = unsafe { libc::dup(zero.segment().fd()) };
        let new = ShmTransport::new(Segment::attach(fd).expect("map"), 1).expect("ring 1");
        let an = new.segment().arena().expect("arena");
        let o = an.alloc(len).expect("room");
        assert!(o != off && o != half);
        // SAFETY: the replacement's own block, given up.
        unsafe { an.release(o) };
        assert_eq!(a0.stats().live_blocks, 2);
    }

    /// The transport conformance suite on every notify × fields
    /// combination, nodes as threads of this process over one segment
    /// (each mapping it at its own address), with tiny rings (16 slots of
    /// 240 bytes): every message of more than a few bytes is chunked or
    /// goes by the arena, and senders often find the ring full.
    #[test]
    fn the_transport_suite_passes_in_every_mode() {
        for notify in [Notify::Poll, Notify::Interrupt, Notify::Sparse] {
            for fields in FieldMode::ALL {
                for nodes in [2, 3] {
                    let g = geometry(nodes, notify, fields);
                    conformance::run_in_threads(
                        &|| ShmTransport::in_process(g).expect("segment"),
                        &|t: &ShmTransport| t.kill(),
                    )
                    .unwrap_or_else(|e| panic!("{notify:?} {fields:?} {nodes} nodes: {e}"));
                }
            }
        }
    }
}
