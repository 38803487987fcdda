//! A bounded multi-producer, single-consumer ring of fixed-size slots in a
//! region of shared memory (one per receiving node: the other nodes' output
//! managers push, the node's input manager pops).
//!
//! # Layout
//!
//! The region holds offsets and numbers only, never pointers: every process
//! maps it where it likes and computes addresses from its own base. All
//! structures are `#[repr(C)]`; the base must be 64-byte aligned (a mapping
//! is page-aligned).
//!
//! ```text
//! offset   0  meta line: magic+version, slots, payload, stride, mode, consumer claim
//! offset  64  tail  (next position to reserve; producers)      own cache line
//! offset 128  head  (next position to take; consumer)          own cache line
//! offset 192  notification words (event, sleeping, kicked)     own cache line
//! offset 256  slot 0, slot 1, ... slot S-1, each `stride` bytes (a multiple of 64):
//!               seq: u64 (atomic) | len: u32 (plain) | pad | payload bytes
//! ```
//!
//! `S` (`slots`) is a power of two, at least 2; a position `p` (a `u64`
//! counter that never wraps in practice: 2^64 messages) lives in slot
//! `p mod S`. [`Ring::layout`] gives the bytes needed.
//!
//! # Protocol (a bounded MPSC queue: Vyukov's publication, one consumer,
//! room known from the consumer's `head`)
//!
//! Each slot has a sequence number `seq`, written only by producers: `seq =
//! p + 1` publishes message `p` in the slot of position `p`. Room is not
//! marked per slot: position `p` may be written once the consumer's `head`
//! passed `p - S` (it took the slot's previous message). For the slot of
//! position `p`:
//!
//! | condition | state |
//! |---|---|
//! | `head > p - S`, `tail <= p` | **free** for position `p` |
//! | `tail > p`, `seq != p + 1` | **reserved**: the producer that moved `tail` past `p` owns the slot and is writing |
//! | `seq == p + 1` | **published**: message `p` is ready (`len = u32::MAX`: **abandoned**, skipped) |
//! | `head > p` | taken; free for position `p + S` |
//!
//! (Initially `seq = i` for slot `i`, which is never `p + 1` for a
//! position `p` of that slot; a slot's stale `seq`, `p - S + 1` from the
//! last lap, is not `p + 1` either.)
//!
//! A producer (`try_push*`):
//! 1. `pos = tail` (Relaxed). Room: `pos - h < S` for a known consumer
//!    position `h`. The handle keeps the last `head` any of its producers
//!    read (`head_hint`, process-local: loaded Acquire **(A1h)**, stored
//!    Release **(R1h)** after a refresh); only when the hint says the ring
//!    is full does the producer read the shared `head` again, with
//!    `head.load(Acquire)` **(A1)**, and store it as the new hint. Still no
//!    room: the ring is **full** (`Err(Full)`). (A `pos` older than the hint
//!    is stale: reload `tail`.) So a producer touches the consumer's cache
//!    line about once a lap, not once a message.
//! 2. Claim the position with `CAS tail: pos -> pos + 1` (Relaxed: the CAS
//!    only decides *which* producer owns `pos`; the data's visibility is
//!    carried by `seq`, the room's by `head`). On failure retry from 1 with
//!    the value read.
//! 3. Write `len` and the payload (plain writes, the slot is exclusively ours).
//! 4. `slot.seq.store(pos + 1, Release)` **(R1)**: publish.
//!
//! The consumer (`try_pop`), at its private position `head`:
//! 1. `seq = slot(head).seq.load(Acquire)` **(A2)**; `seq != head + 1`:
//!    nothing to take (empty, or the head slot is reserved and not yet
//!    published; later slots may be published already, they wait their turn).
//! 2. Read `len` and the payload (plain reads, the slot is ours until 3).
//! 3. `head += 1`, stored in the header's `head` word with Release **(R2)**:
//!    the slot is free for the producer of position `head + S - 1`. The
//!    consumer never writes the slot itself, so the slot's cache line goes
//!    one way per message (producer to consumer).
//!
//! Release/Acquire pairs (every cross-thread or cross-process hand-over):
//! * **R1 → A2** (producer publishes, consumer takes): the payload and `len`
//!   written in producer step 3 are visible to the consumer's reads in its
//!   step 2.
//! * **R2 → A1** (consumer frees, the next lap's producer reserves): the
//!   consumer's reads of the old message (its step 2) happen before the new
//!   producer's writes (its step 3), so a slot is never overwritten while
//!   it is read. A producer that found room through the hint instead has
//!   **R2 → A1 → R1h → A1h**: the thread that read `head` and stored the
//!   hint passes the consumer's history on (the hint only ever holds values
//!   read from `head`, which never exceed the true `head`).
//! * **init's `magic` store (Release) → attach's `magic` load (Acquire)**:
//!   the geometry and initial `seq`s written by [`Ring::init`] are visible to
//!   every handle made by [`Ring::attach`] (processes started after `init`
//!   are ordered by `fork`/`exec` anyway).
//! * **consumer claim (Acquire CAS) ← consumer release (Release store)**:
//!   a new [`Consumer`] handle continues at the `head` the previous one left.
//!
//! The tail CAS carries no data: Relaxed would do for the protocol above.
//! It is Release on success for the recovery of a dead producer (below):
//! a producer that was given a *reservation word*
//! ([`Ring::set_reservation_word`]) stores there which position it is
//! about to claim before its CAS, so whoever reads `tail` past the
//! position (Acquire, [`Ring::tail`]) sees the word. (The notification words
//! have their own protocol, in `notify.rs`.)
//!
//! Why it holds:
//! * **Nothing lost or duplicated**: the tail CAS gives every position to
//!   exactly one producer; the consumer takes positions one by one, each
//!   exactly once, and a slot is reused only after the consumer took its
//!   message (`head > p` before a producer may own `p + S`), so `seq` moves
//!   `p + 1 → p + S + 1` and only the owner of the moment writes it.
//! * **Per-producer FIFO**: one producer's pushes reserve increasing
//!   positions (its CASes are ordered by its program order on `tail`'s
//!   modification order), and the consumer takes positions in order.
//! * A message is `len` bytes (up to the slot's payload size) in one slot;
//!   a larger message is the caller's business (it chunks it).
//!
//! # Failures
//!
//! * A producer whose closure panics (in [`Ring::try_push_with`]) publishes
//!   its slot as **abandoned** (`len = u32::MAX`) on unwinding and notifies:
//!   the consumer skips it, the ring goes on.
//! * A producer *process* that dies between reserving and publishing leaves
//!   its slot **reserved** forever. Nothing else is corrupted: messages
//!   published before it are delivered; later producers keep reserving and
//!   publishing their own slots (never this one: `head` stays at `p`, so
//!   position `p + S` never has room and the ring reports full), but the consumer
//!   cannot get past the stuck slot, so the ring stalls there and fills up.
//!   The consumer sees it as [`Head::Pending`] that never resolves; detecting
//!   the dead process is the transport's node-death path, which either
//!   fails the run or, to go on without the dead producer, tells its slot
//!   apart with the reservation words: a head position that is reserved,
//!   unpublished, named by the dead producer's last word and by no live
//!   producer's (a live owner's word names its slot until it publishes;
//!   one word per producing *node*, so a node's pushes into rings must come
//!   from one thread at a time for this to hold) is the dead one's, and
//!   the consumer publishes it as abandoned itself
//!   ([`Consumer::abandon_head`]). A process that dies *after* publishing
//!   leaves nothing behind.
//! * A consumer process that dies holds its claim; the process that
//!   replaces it ends the claim with [`Ring::force_release_consumer`] and
//!   continues at the dead one's `head`.
//! * A consumer that dies leaves the ring full; producers see `Full`.
//!
//! The whole protocol is model-checked by loom (`loom_tests/`), exercised
//! under Miri (`tests` below) and stress-tested with threads and processes
//! (`tests/stress.rs`).

use std::fmt;
use std::mem::{align_of, size_of};
use std::ptr::NonNull;
use std::time::Duration;

use crate::notify::{self, Notify, NotifyWords};
use crate::sync::{self, AtomicU32, AtomicU64, Futex, Ordering, Shadow};

/// `"snetshm"` and the layout version in the low byte.
const MAGIC: u64 = 0x736e_6574_7368_6d02;

/// `len` of a slot whose producer panicked while writing it.
const ABANDONED: u32 = u32::MAX;

/// The bits of a reservation tag that hold the position (plus one).
const POS_MASK: u64 = (1 << 48) - 1;

/// What a producer records before it reserves position `pos` of ring
/// `index` ([`Ring::set_reservation_word`]): the ring's index plus one in
/// the top 16 bits, the position plus one in the low 48 (0 is no tag).
pub fn reservation_tag(index: u32, pos: u64) -> u64 {
    (u64::from(index) + 1) << 48 | (pos.wrapping_add(1) & POS_MASK)
}

/// The largest payload of a slot (1 GiB; a slot this large is silly anyway).
pub const MAX_PAYLOAD: usize = 1 << 30;

/// The most slots a ring may have.
pub const MAX_SLOTS: usize = 1 << 30;

/// Alignment the region's base must have.
pub const ALIGN: usize = 64;

/// A cache line of its own (no false sharing between producers' `tail`,
/// the consumer's `head` and the notification words).
#[repr(C, align(64))]
struct Line<T>(T);

#[repr(C)]
struct Meta {
    /// [`MAGIC`] once initialised (stored last, Release).
    magic: AtomicU64,
    slots: AtomicU64,
    payload: AtomicU64,
    stride: AtomicU64,
    /// The [`Notify`], so that every process agrees.
    mode: AtomicU32,
    /// 1 while a [`Consumer`] handle exists.
    consumer: AtomicU32,
}

#[repr(C)]
struct Header {
    meta: Line<Meta>,
    tail: Line<AtomicU64>,
    head: Line<AtomicU64>,
    notify: Line<NotifyWords>,
}

/// Offset of a slot's `len` (after its `seq`).
fn len_offset() -> usize {
    size_of::<AtomicU64>().next_multiple_of(align_of::<u32>())
}

/// Offset of a slot's payload (16-byte aligned).
fn payload_offset() -> usize {
    (len_offset() + size_of::<u32>()).next_multiple_of(16)
}

/// Why a region cannot hold or be attached as a ring.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RingError {
    /// `slots` is not a power of two in `2..=MAX_SLOTS`, or `payload` is not
    /// in `1..=MAX_PAYLOAD`.
    Geometry {
        /// Slots asked for.
        slots: usize,
        /// Payload bytes per slot asked for.
        payload: usize,
    },
    /// The region is smaller than the ring needs.
    TooSmall {
        /// Bytes needed.
        needed: usize,
        /// Bytes the region has.
        len: usize,
    },
    /// The base is not [`ALIGN`]-aligned.
    Misaligned,
    /// `attach`: the region holds no initialised ring (yet), or one of
    /// another layout version.
    NotInitialised,
    /// `attach`: the header's geometry or mode is inconsistent.
    Corrupt,
}

impl fmt::Display for RingError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RingError::Geometry { slots, payload } => write!(
                f,
                "bad ring geometry: {slots} slots (a power of two, 2 to {MAX_SLOTS}) of {payload} bytes (1 to {MAX_PAYLOAD})"
            ),
            RingError::TooSmall { needed, len } => {
                write!(f, "shared region too small for the ring: {len} bytes, {needed} needed")
            }
            RingError::Misaligned => write!(f, "shared region not {ALIGN}-byte aligned"),
            RingError::NotInitialised => write!(f, "shared region holds no initialised ring"),
            RingError::Corrupt => write!(f, "shared ring header is corrupt"),
        }
    }
}

impl std::error::Error for RingError {}

/// Why a push failed (nothing was written).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PushError {
    /// Every slot is taken: retry after the consumer made room.
    Full,
    /// The message is longer than a slot's payload: chunk it.
    TooLarge {
        /// The message's length.
        len: usize,
        /// A slot's payload.
        max: usize,
    },
}

impl fmt::Display for PushError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PushError::Full => write!(f, "ring full"),
            PushError::TooLarge { len, max } => {
                write!(
                    f,
                    "message of {len} bytes exceeds the slot payload of {max}"
                )
            }
        }
    }
}

impl std::error::Error for PushError {}

/// Another [`Consumer`] handle exists for this ring (in this process or
/// another).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Claimed;

impl fmt::Display for Claimed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "the ring already has a consumer")
    }
}

impl std::error::Error for Claimed {}

/// What is at the consumer's head position.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Head {
    /// Nothing reserved beyond the head.
    Empty,
    /// The head message is published (`try_pop` takes it).
    Ready,
    /// `n` positions are reserved but the head one is not published yet: a
    /// producer is writing it (or died doing so; see "Failures").
    Pending(u64),
}

/// A handle on a ring in a shared region: the producer side (`&self`,
/// any number of threads and processes) and the way to the single
/// [`Consumer`]. Cheap to make per process with [`Ring::attach`]; it owns
/// nothing in the region.
pub struct Ring {
    base: NonNull<u8>,
    slots: u64,
    payload: usize,
    stride: usize,
    mode: Notify,
    futex: Futex,
    shadow: Shadow,
    /// The last consumer `head` this handle's producers read (step 1).
    head_hint: AtomicU64,
    /// Where this process's producers record the position they are about
    /// to reserve, and the ring's tag bits ([`Ring::set_reservation_word`]).
    resv: Option<(NonNull<AtomicU64>, u64)>,
}

// SAFETY: the handle is a base pointer and constants; everything it reaches
// in the region is accessed through atomics or under the slot protocol,
// which is designed for concurrent use by threads and processes.
unsafe impl Send for Ring {}
// SAFETY: as above; the producer side takes `&self` by design.
unsafe impl Sync for Ring {}

impl fmt::Debug for Ring {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Ring")
            .field("slots", &self.slots)
            .field("payload", &self.payload)
            .field("mode", &self.mode)
            .finish_non_exhaustive()
    }
}

impl Ring {
    /// Bytes a ring of `slots` slots of `payload` bytes each needs (its
    /// header included), or `None` for a bad geometry.
    pub fn layout(slots: usize, payload: usize) -> Option<usize> {
        if !Self::geometry_ok(slots, payload) {
            return None;
        }
        Self::stride(payload)
            .checked_mul(slots)?
            .checked_add(size_of::<Header>())
    }

    /// The bytes one slot of `payload` bytes takes in the region (its
    /// `seq` and `len` included, rounded up to whole cache lines): a caller
    /// may pick `payload` so that nothing is wasted.
    pub fn stride(payload: usize) -> usize {
        (payload_offset() + payload).next_multiple_of(ALIGN)
    }

    fn geometry_ok(slots: usize, payload: usize) -> bool {
        slots.is_power_of_two()
            && (2..=MAX_SLOTS).contains(&slots)
            && (1..=MAX_PAYLOAD).contains(&payload)
    }

    /// Initialises a ring of `slots` slots of `payload` bytes each in the
    /// region, notified in `mode`. Done once, by the region's creator,
    /// before any other handle attaches (the region may be zero or hold an
    /// old ring; nobody may use it meanwhile).
    ///
    /// # Safety
    /// `base` is valid for reads and writes of `len` bytes for as long as
    /// this handle, any handle attached later and their consumers are used
    /// (a mapping that stays mapped), and the region is accessed only
    /// through this module's handles (in any number of processes).
    pub unsafe fn init(
        base: *mut u8,
        len: usize,
        slots: usize,
        payload: usize,
        mode: Notify,
    ) -> Result<Ring, RingError> {
        let needed = Self::layout(slots, payload).ok_or(RingError::Geometry { slots, payload })?;
        let base = NonNull::new(base).ok_or(RingError::Misaligned)?;
        if !(base.as_ptr() as usize).is_multiple_of(ALIGN) {
            return Err(RingError::Misaligned);
        }
        if len < needed {
            return Err(RingError::TooSmall { needed, len });
        }
        let stride = Self::stride(payload);
        let h = base.as_ptr().cast::<Header>();
        // SAFETY: the region is ours alone during `init` (the contract), the
        // fields are aligned (`base` is, the header is `repr(C)`) and in
        // bounds (`len >= needed`).
        unsafe {
            let meta = &raw mut (*h).meta.0;
            let magic = sync::place_u64(&raw mut (*meta).magic, 0);
            sync::place_u64(&raw mut (*meta).slots, slots as u64);
            sync::place_u64(&raw mut (*meta).payload, payload as u64);
            sync::place_u64(&raw mut (*meta).stride, stride as u64);
            sync::place_u32(&raw mut (*meta).mode, mode.to_word());
            sync::place_u32(&raw mut (*meta).consumer, 0);
            sync::place_u64(&raw mut (*h).tail.0, 0);
            sync::place_u64(&raw mut (*h).head.0, 0);
            NotifyWords::place(&raw mut (*h).notify.0);
            for i in 0..slots {
                let slot = base.as_ptr().add(size_of::<Header>() + i * stride);
                sync::place_u64(slot.cast::<AtomicU64>(), i as u64);
                slot.add(len_offset()).cast::<u32>().write(0);
            }
            // Pairs with the Acquire load in `attach`.
            magic.store(MAGIC, Ordering::Release);
        }
        Ok(Ring::handle(base, slots, payload, stride, mode))
    }

    /// A handle on the ring another handle initialised in this region.
    /// `Err(NotInitialised)` if `init` has not finished (yet): retry.
    ///
    /// # Safety
    /// As [`Ring::init`]: `base` is valid for `len` bytes for as long as the
    /// handle and its consumer are used, and the region is used only through
    /// this module.
    pub unsafe fn attach(base: *mut u8, len: usize) -> Result<Ring, RingError> {
        let base = NonNull::new(base).ok_or(RingError::Misaligned)?;
        if !(base.as_ptr() as usize).is_multiple_of(ALIGN) {
            return Err(RingError::Misaligned);
        }
        if len < size_of::<Header>() {
            return Err(RingError::TooSmall {
                needed: size_of::<Header>(),
                len,
            });
        }
        // SAFETY: aligned, in bounds, and every field is an atomic (valid
        // for any bytes; under loom, constructed by `init` before the
        // models share the region).
        let meta = unsafe { &(*base.as_ptr().cast::<Header>()).meta.0 };
        // Pairs with the Release store at the end of `init`.
        if meta.magic.load(Ordering::Acquire) != MAGIC {
            return Err(RingError::NotInitialised);
        }
        let slots =
            usize::try_from(meta.slots.load(Ordering::Relaxed)).map_err(|_| RingError::Corrupt)?;
        let payload = usize::try_from(meta.payload.load(Ordering::Relaxed))
            .map_err(|_| RingError::Corrupt)?;
        let stride = meta.stride.load(Ordering::Relaxed);
        let mode =
            Notify::from_word(meta.mode.load(Ordering::Relaxed)).ok_or(RingError::Corrupt)?;
        let needed = Self::layout(slots, payload).ok_or(RingError::Corrupt)?;
        if stride != Self::stride(payload) as u64 {
            return Err(RingError::Corrupt);
        }
        if len < needed {
            return Err(RingError::TooSmall { needed, len });
        }
        Ok(Ring::handle(base, slots, payload, stride as usize, mode))
    }

    fn handle(
        base: NonNull<u8>,
        slots: usize,
        payload: usize,
        stride: usize,
        mode: Notify,
    ) -> Ring {
        Ring {
            base,
            slots: slots as u64,
            payload,
            stride,
            mode,
            futex: Futex::new(),
            shadow: Shadow::new(slots),
            head_hint: AtomicU64::new(0),
            resv: None,
        }
    }

    /// Makes this handle's producers record, before each reservation,
    /// which position of ring `index` they are about to claim
    /// ([`reservation_tag`]) in `word`: the word of the producing node, so
    /// that the ring's consumer can tell a slot whose producer process
    /// died between reserving and publishing (see "Failures").
    ///
    /// # Safety
    /// `word` stays valid (mapped) as long as this handle is used.
    #[cfg(not(loom))]
    pub unsafe fn set_reservation_word(&mut self, word: NonNull<AtomicU64>, index: u32) {
        self.resv = Some((word, reservation_tag(index, u64::MAX) & !POS_MASK));
    }

    /// The next position a producer will reserve (Acquire: the
    /// reservation word its producer wrote before moving `tail` past a
    /// position is visible).
    pub fn tail(&self) -> u64 {
        self.header().tail.0.load(Ordering::Acquire)
    }

    /// Ends the claim of a consumer whose process died (a new
    /// [`Ring::consumer`] continues at the head the dead one left).
    ///
    /// # Safety
    /// The consumer handle that holds the claim is in a process that is
    /// gone (no longer maps the ring).
    pub unsafe fn force_release_consumer(&self) {
        self.header().meta.0.consumer.store(0, Ordering::Release);
    }

    /// The number of slots.
    pub fn capacity(&self) -> usize {
        self.slots as usize
    }

    /// The largest message a slot holds.
    pub fn max_message(&self) -> usize {
        self.payload
    }

    /// How the consumer is notified (fixed by `init`, the same for every
    /// handle).
    pub fn mode(&self) -> Notify {
        self.mode
    }

    /// Positions reserved and not yet taken (approximate while others run).
    pub fn len(&self) -> u64 {
        let h = self.header();
        let tail = h.tail.0.load(Ordering::Relaxed);
        let head = h.head.0.load(Ordering::Relaxed);
        tail.saturating_sub(head)
    }

    /// Whether [`Ring::len`] is 0.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn header(&self) -> &Header {
        // SAFETY: the region starts with the header (init/attach checked the
        // size and alignment); it is only accessed through atomics.
        unsafe { &*self.base.as_ptr().cast::<Header>() }
    }

    pub(crate) fn notify_words(&self) -> &NotifyWords {
        &self.header().notify.0
    }

    pub(crate) fn futex(&self) -> &Futex {
        &self.futex
    }

    /// The slot of position `pos`: its index and start.
    fn slot(&self, pos: u64) -> (usize, *mut u8) {
        let i = (pos & (self.slots - 1)) as usize;
        // SAFETY: `i < slots`, so the slot lies within the `layout` bytes
        // the region was checked to have.
        let p = unsafe {
            self.base
                .as_ptr()
                .add(size_of::<Header>() + i * self.stride)
        };
        (i, p)
    }

    fn seq(&self, slot: *mut u8) -> &AtomicU64 {
        // SAFETY: a slot starts with its aligned atomic `seq` (the stride is
        // a multiple of 64).
        unsafe { &*slot.cast::<AtomicU64>() }
    }

    /// Pushes `msg` (at most [`Ring::max_message`] bytes) if a slot is free.
    /// Does not notify: call [`Ring::after_push`] (once for a batch).
    pub fn try_push(&self, msg: &[u8]) -> Result<(), PushError> {
        self.try_push_with(msg.len(), |buf| buf.copy_from_slice(msg))
    }

    /// Pushes the concatenation of `parts` as one message (a header and a
    /// body without an intermediate buffer). Does not notify.
    pub fn try_push_parts(&self, parts: &[&[u8]]) -> Result<(), PushError> {
        let len = parts.iter().map(|p| p.len()).sum();
        self.try_push_with(len, |buf| {
            let mut at = 0;
            for p in parts {
                buf[at..at + p.len()].copy_from_slice(p);
                at += p.len();
            }
        })
    }

    /// Reserves a slot for a message of `len` bytes and lets `write` fill
    /// them in place (the slice is exactly `len` bytes, holding old bytes),
    /// then publishes it. If `write` panics, the slot is published as
    /// abandoned (the consumer skips it) and the consumer notified. Does not
    /// notify otherwise.
    pub fn try_push_with(
        &self,
        len: usize,
        write: impl FnOnce(&mut [u8]),
    ) -> Result<(), PushError> {
        if len > self.payload {
            return Err(PushError::TooLarge {
                len,
                max: self.payload,
            });
        }
        let pos = self.reserve()?;
        let mut guard = Reserved {
            ring: self,
            pos,
            done: false,
        };
        let (i, slot) = self.slot(pos);
        self.shadow.write(i, || {
            // SAFETY: position `pos` is ours (step 2 of the protocol) until
            // we publish it: nobody else reads or writes this slot's `len`
            // and payload, which lie inside the slot (`len <= payload`).
            unsafe {
                slot.add(len_offset()).cast::<u32>().write(len as u32);
                write(std::slice::from_raw_parts_mut(
                    slot.add(payload_offset()),
                    len,
                ));
            }
        });
        guard.done = true;
        // R1: publish; pairs with the consumer's A2.
        self.seq(slot).store(pos.wrapping_add(1), Ordering::Release);
        Ok(())
    }

    /// Pushes the message `word ++ a ++ b` (an 8-byte little-endian word
    /// and two slices: a small message's fixed part, header and payload)
    /// without a closure and without a guard (nothing here can panic
    /// between reserving and publishing): the lean path of a small message,
    /// whose every instruction is on a round trip's latency path. Does not
    /// notify.
    pub fn try_push_small(&self, word: u64, a: &[u8], b: &[u8]) -> Result<(), PushError> {
        let len = 8 + a.len() + b.len();
        if len > self.payload {
            return Err(PushError::TooLarge {
                len,
                max: self.payload,
            });
        }
        let pos = self.reserve()?;
        let (i, slot) = self.slot(pos);
        self.shadow.write(i, || {
            // SAFETY: position `pos` is ours until we publish it (as in
            // `try_push_with`); the `len <= payload` bytes written lie inside
            // the slot's payload, which is 16-aligned (so is its first word).
            unsafe {
                slot.add(len_offset()).cast::<u32>().write(len as u32);
                let d = slot.add(payload_offset());
                d.cast::<u64>().write(word.to_le());
                copy_small(d.add(8), a.as_ptr(), a.len());
                copy_small(d.add(8 + a.len()), b.as_ptr(), b.len());
            }
        });
        // R1: publish; pairs with the consumer's A2.
        self.seq(slot).store(pos.wrapping_add(1), Ordering::Release);
        Ok(())
    }

    /// Protocol steps 1-2 of a producer: the position whose slot is now ours.
    fn reserve(&self) -> Result<u64, PushError> {
        let tail = &self.header().tail.0;
        let mut pos = tail.load(Ordering::Relaxed);
        loop {
            // A1h: pairs with R1h below (of this or another thread of ours).
            let mut head = self.head_hint.load(Ordering::Acquire);
            let mut used = pos.wrapping_sub(head) as i64;
            if used >= self.slots as i64 {
                // A1: pairs with the consumer's R2 (the old messages were read).
                head = self.header().head.0.load(Ordering::Acquire);
                // R1h: passes what A1 acquired on to A1h.
                self.head_hint.store(head, Ordering::Release);
                used = pos.wrapping_sub(head) as i64;
                if used >= self.slots as i64 {
                    return Err(PushError::Full);
                }
            }
            if used < 0 {
                // `pos` is older than a head we know of: stale.
                pos = tail.load(Ordering::Relaxed);
                continue;
            }
            if let Some((word, tag)) = self.resv {
                // SAFETY: `set_reservation_word`'s contract: still mapped.
                let word = unsafe { word.as_ref() };
                word.store(tag | (pos.wrapping_add(1) & POS_MASK), Ordering::Relaxed);
            }
            // Release on success: whoever sees `tail` past `pos` sees the
            // reservation word written above (`Ring::tail`).
            match tail.compare_exchange_weak(
                pos,
                pos.wrapping_add(1),
                Ordering::Release,
                Ordering::Relaxed,
            ) {
                Ok(_) => return Ok(pos),
                Err(now) => pos = now,
            }
        }
    }

    /// Notifies the consumer after one or more pushes, as the ring's
    /// [`Notify`] says (see `notify.rs`): nothing when polling, a futex wake
    /// when interrupt-driven, a wake only if the consumer sleeps when sparse.
    ///
    /// Every successful push must be followed by an `after_push` of the same
    /// producer before it waits for anything (for instance for room in a
    /// full ring): a sleeping consumer may otherwise never look.
    pub fn after_push(&self) {
        notify::after_push(self.mode, self.notify_words(), &self.futex);
    }

    /// Wakes the consumer without a message: its current [`Consumer::wait`]
    /// returns, or its next one returns at once (the flag is consumed by
    /// that wait). For shutdown: set your own stop flag, then kick.
    pub fn kick(&self) {
        notify::kick(self.mode, self.notify_words(), &self.futex);
    }

    /// The consumer handle; `Err(Claimed)` while another one exists (in any
    /// process). Dropping it releases the claim; a new handle continues
    /// where it left off.
    pub fn consumer(&self) -> Result<Consumer<'_>, Claimed> {
        let meta = &self.header().meta.0;
        // Acquire: pairs with the Release in `Consumer::drop` (the previous
        // consumer's `head` and frees are visible).
        meta.consumer
            .compare_exchange(0, 1, Ordering::Acquire, Ordering::Relaxed)
            .map_err(|_| Claimed)?;
        Ok(Consumer {
            ring: self,
            head: self.header().head.0.load(Ordering::Relaxed),
            spin: notify::Spin::new(notify::DEFAULT_SPINS),
        })
    }
}

/// Copies `n` bytes from `s` to `d` (distinct), without a call to `memcpy`
/// for the few bytes of a small message (the call costs more than the
/// copy); longer copies go to `memcpy` as usual.
///
/// # Safety
/// `s` is valid for reads and `d` for writes of `n` bytes; they do not overlap.
#[inline(always)]
pub(crate) unsafe fn copy_small(d: *mut u8, s: *const u8, n: usize) {
    // SAFETY: (the caller's contract) each branch reads and writes only
    // within the `n` bytes; the two words of a branch may overlap each
    // other, which is fine for a copy between distinct ranges.
    unsafe {
        match n {
            0 => {}
            8..=16 => {
                let (x, y) = (
                    s.cast::<u64>().read_unaligned(),
                    s.add(n - 8).cast::<u64>().read_unaligned(),
                );
                d.cast::<u64>().write_unaligned(x);
                d.add(n - 8).cast::<u64>().write_unaligned(y);
            }
            17..=32 => {
                let (x, y) = (
                    s.cast::<u128>().read_unaligned(),
                    s.add(n - 16).cast::<u128>().read_unaligned(),
                );
                d.cast::<u128>().write_unaligned(x);
                d.add(n - 16).cast::<u128>().write_unaligned(y);
            }
            4..=7 => {
                let (x, y) = (
                    s.cast::<u32>().read_unaligned(),
                    s.add(n - 4).cast::<u32>().read_unaligned(),
                );
                d.cast::<u32>().write_unaligned(x);
                d.add(n - 4).cast::<u32>().write_unaligned(y);
            }
            1..=3 => {
                *d = *s;
                *d.add(n / 2) = *s.add(n / 2);
                *d.add(n - 1) = *s.add(n - 1);
            }
            _ => std::ptr::copy_nonoverlapping(s, d, n),
        }
    }
}

/// A reserved position not yet published: published as abandoned if the
/// writer unwinds.
struct Reserved<'r> {
    ring: &'r Ring,
    pos: u64,
    done: bool,
}

impl Drop for Reserved<'_> {
    fn drop(&mut self) {
        if self.done || sync::unwinding_in_model() {
            return;
        }
        let (_, slot) = self.ring.slot(self.pos);
        // SAFETY: the position is still ours (not published).
        unsafe { slot.add(len_offset()).cast::<u32>().write(ABANDONED) };
        // R1 (as in `try_push_with`).
        self.ring
            .seq(slot)
            .store(self.pos.wrapping_add(1), Ordering::Release);
        self.ring.after_push();
    }
}

/// The single consumer of a ring (see [`Ring::consumer`]).
pub struct Consumer<'r> {
    ring: &'r Ring,
    /// The next position to take (private: only this handle moves it).
    head: u64,
    spin: notify::Spin,
}

impl fmt::Debug for Consumer<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Consumer")
            .field("head", &self.head)
            .finish_non_exhaustive()
    }
}

impl Consumer<'_> {
    /// Takes the next message, if published, and hands it to `f` (the
    /// slice is valid during the call only; the slot is freed afterwards,
    /// also if `f` panics). Abandoned slots are skipped.
    pub fn try_pop<R>(&mut self, f: impl FnOnce(&[u8]) -> R) -> Option<R> {
        let mut f = Some(f);
        loop {
            let (i, slot) = self.ring.slot(self.head);
            // A2: pairs with the producer's R1 (the payload is written).
            let seq = self.ring.seq(slot).load(Ordering::Acquire);
            if seq != self.head.wrapping_add(1) {
                return None;
            }
            let free = Free { c: self };
            let ring = free.c.ring;
            let r = ring.shadow.read(i, || {
                // SAFETY: the slot is published for our position and no
                // producer touches it until we free it (after this call).
                let len = unsafe { slot.add(len_offset()).cast::<u32>().read() };
                if len == ABANDONED {
                    return None;
                }
                // Only a foreign bug could write more; stay in the slot.
                let len = (len as usize).min(ring.payload);
                // SAFETY: as above; `len` bytes lie within the slot.
                let msg = unsafe { std::slice::from_raw_parts(slot.add(payload_offset()), len) };
                Some(f.take().expect("called once")(msg))
            });
            drop(free);
            if r.is_some() {
                return r;
            }
        }
    }

    /// Takes the next message into `buf` (replacing its contents); `false`
    /// if there was none.
    pub fn pop_into(&mut self, buf: &mut Vec<u8>) -> bool {
        self.try_pop(|m| {
            buf.clear();
            buf.extend_from_slice(m);
        })
        .is_some()
    }

    /// Whether the head message is published (an abandoned slot counts).
    pub fn is_ready(&self) -> bool {
        let (_, slot) = self.ring.slot(self.head);
        // A2 (as in `try_pop`).
        self.ring.seq(slot).load(Ordering::Acquire) == self.head.wrapping_add(1)
    }

    /// What is at the head: nothing, a message, or reserved positions whose
    /// first is not published yet (see "Failures").
    pub fn head(&self) -> Head {
        if self.is_ready() {
            return Head::Ready;
        }
        let tail = self.ring.header().tail.0.load(Ordering::Relaxed);
        match tail.wrapping_sub(self.head) as i64 {
            n if n > 0 => Head::Pending(n as u64),
            _ => Head::Empty,
        }
    }

    /// Waits until a message may be ready, the timeout passed, or a
    /// [`Ring::kick`]; may return early (spuriously). Returns whether the
    /// head message is ready (or a kick arrived). Poll mode spins and
    /// yields; interrupt and sparse modes sleep on a futex (sparse polls
    /// [`Consumer::set_spins`] times first). `None` waits without limit.
    ///
    /// Use: `loop { while c.try_pop(..).is_some() {} ; c.wait(t); }`.
    pub fn wait(&mut self, timeout: Option<Duration>) -> bool {
        let ring = self.ring;
        let mut spin = self.spin;
        let ready = notify::wait(
            ring.mode,
            ring.notify_words(),
            ring.futex(),
            &mut spin,
            || self.is_ready(),
            timeout,
        );
        self.spin = spin;
        ready
    }

    /// The position of the head message (taken next).
    pub fn position(&self) -> u64 {
        self.head
    }

    /// Publishes the head position as abandoned (the next `try_pop` skips
    /// it) if it is reserved and not published; returns whether it did.
    ///
    /// # Safety
    /// The producer that reserved the head position is gone: its process
    /// died between reserving and publishing ("Failures").
    pub unsafe fn abandon_head(&mut self) -> bool {
        if self.is_ready() || self.ring.tail().wrapping_sub(self.head) as i64 <= 0 {
            return false;
        }
        let (_, slot) = self.ring.slot(self.head);
        // SAFETY: the slot's owner is gone (the caller's contract) and
        // nobody else writes a reserved slot.
        unsafe { slot.add(len_offset()).cast::<u32>().write(ABANDONED) };
        // R1, on the dead producer's behalf.
        self.ring
            .seq(slot)
            .store(self.head.wrapping_add(1), Ordering::Release);
        true
    }

    /// How many times at most a sparse-mode wait looks at the ring before it
    /// goes to sleep (default [`notify::DEFAULT_SPINS`]); 0 sleeps at once.
    /// Fewer while the consumer's sleeps are long (`notify::Spin`).
    pub fn set_spins(&mut self, spins: u32) {
        self.spin = notify::Spin::new(spins);
    }

    /// The ring this consumer takes from.
    pub fn ring(&self) -> &Ring {
        self.ring
    }
}

/// Frees the slot at the consumer's head and advances (protocol step 3),
/// also when the consumer's closure unwinds.
struct Free<'a, 'r> {
    c: &'a mut Consumer<'r>,
}

impl Drop for Free<'_, '_> {
    fn drop(&mut self) {
        if sync::unwinding_in_model() {
            return;
        }
        let c = &mut *self.c;
        c.head = c.head.wrapping_add(1);
        // R2: pairs with A1 of the producer of position head + S - 1.
        c.ring.header().head.0.store(c.head, Ordering::Release);
    }
}

impl Drop for Consumer<'_> {
    fn drop(&mut self) {
        if sync::unwinding_in_model() {
            return;
        }
        // Release: pairs with the Acquire claim in `Ring::consumer`.
        self.ring
            .header()
            .meta
            .0
            .consumer
            .store(0, Ordering::Release);
    }
}

/// A zeroed, [`ALIGN`]-aligned heap allocation standing in for a shared
/// segment (one process; tests and Miri).
pub struct HeapRegion {
    ptr: NonNull<u8>,
    len: usize,
}

// SAFETY: it owns its bytes; users share them through `Ring`, which is.
unsafe impl Send for HeapRegion {}
// SAFETY: as above (`&HeapRegion` only hands out the raw pointer).
unsafe impl Sync for HeapRegion {}

impl HeapRegion {
    /// `len` zero bytes (at least one).
    pub fn new(len: usize) -> HeapRegion {
        let layout = std::alloc::Layout::from_size_align(len.max(1), ALIGN).expect("region size");
        // SAFETY: the layout's size is not zero.
        let ptr = unsafe { std::alloc::alloc_zeroed(layout) };
        let ptr = NonNull::new(ptr).unwrap_or_else(|| std::alloc::handle_alloc_error(layout));
        HeapRegion {
            ptr,
            len: len.max(1),
        }
    }

    /// The region's base (valid for `len` bytes while `self` lives).
    pub fn as_ptr(&self) -> *mut u8 {
        self.ptr.as_ptr()
    }

    /// Its size.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether it is empty (never: at least one byte).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl Drop for HeapRegion {
    fn drop(&mut self) {
        let layout = std::alloc::Layout::from_size_align(self.len, ALIGN).expect("region size");
        // SAFETY: allocated in `new` with this layout.
        unsafe { std::alloc::dealloc(self.ptr.as_ptr(), layout) };
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    //! Unit tests, small enough for Miri (`cargo +"$SNET_NIGHTLY" miri test
    //! -p snet-shm --lib`, the nightly of `scripts/toolchains.sh`), which checks the unsafe code and, with threads, the
    //! protocol's orderings (its data-race detector sees the plain payload
    //! accesses).

    use super::*;
    use std::sync::Arc;

    fn ring(slots: usize, payload: usize, mode: Notify) -> (Arc<HeapRegion>, Ring) {
        let len = Ring::layout(slots, payload).unwrap();
        let region = Arc::new(HeapRegion::new(len));
        // SAFETY: the region outlives the ring in every test (held alongside).
        let r = unsafe { Ring::init(region.as_ptr(), region.len(), slots, payload, mode) }.unwrap();
        (region, r)
    }

    #[test]
    fn layout_and_geometry() {
        assert_eq!(Ring::stride(1) % ALIGN, 0);
        assert_eq!(size_of::<Header>(), 256);
        assert_eq!(payload_offset(), 16);
        assert_eq!(Ring::stride(48), 64);
        assert_eq!(Ring::stride(49), 128);
        assert_eq!(Ring::layout(4, 48), Some(256 + 4 * 64));
        assert_eq!(Ring::layout(3, 48), None);
        assert_eq!(Ring::layout(1, 48), None);
        assert_eq!(Ring::layout(4, 0), None);
        let region = HeapRegion::new(512);
        // SAFETY: the region outlives the (failed) attempts.
        unsafe {
            assert_eq!(
                Ring::init(region.as_ptr(), 511, 4, 48, Notify::Poll).unwrap_err(),
                RingError::TooSmall {
                    needed: 512,
                    len: 511
                }
            );
            assert_eq!(
                Ring::init(region.as_ptr().add(8), 504, 4, 48, Notify::Poll).unwrap_err(),
                RingError::Misaligned
            );
            assert_eq!(
                Ring::attach(region.as_ptr(), 512).unwrap_err(),
                RingError::NotInitialised
            );
            Ring::init(region.as_ptr(), 512, 4, 48, Notify::Sparse).unwrap();
            let a = Ring::attach(region.as_ptr(), 512).unwrap();
            assert_eq!(
                (a.capacity(), a.max_message(), a.mode()),
                (4, 48, Notify::Sparse)
            );
            assert_eq!(
                Ring::attach(region.as_ptr(), 300).unwrap_err(),
                RingError::TooSmall {
                    needed: 512,
                    len: 300
                }
            );
        }
    }

    #[test]
    fn push_pop_wraps_and_fills() {
        let (_region, r) = ring(4, 20, Notify::Poll);
        let mut c = r.consumer().unwrap();
        assert_eq!(c.head(), Head::Empty);
        assert!(c.try_pop(|_| ()).is_none());
        let mut buf = Vec::new();
        for lap in 0..5u8 {
            for i in 0..4u8 {
                r.try_push(&[lap, i, 7]).unwrap();
            }
            assert_eq!(r.try_push(b"x"), Err(PushError::Full));
            assert_eq!(r.len(), 4);
            assert_eq!(c.head(), Head::Ready);
            for i in 0..4u8 {
                assert!(c.pop_into(&mut buf));
                assert_eq!(buf, [lap, i, 7]);
            }
            assert!(!c.pop_into(&mut buf));
        }
        // Exactly a slot's payload; one byte more is refused.
        r.try_push(&[9; 20]).unwrap();
        assert_eq!(
            r.try_push(&[9; 21]),
            Err(PushError::TooLarge { len: 21, max: 20 })
        );
        assert_eq!(c.try_pop(|m| m.to_vec()).unwrap(), vec![9; 20]);
        // Empty messages are messages.
        r.try_push(&[]).unwrap();
        assert_eq!(c.try_pop(|m| m.len()), Some(0));
        r.after_push();
    }

    #[test]
    fn small_pushes_and_short_copies() {
        let (_region, r) = ring(4, 80, Notify::Poll);
        let mut c = r.consumer().unwrap();
        let src: Vec<u8> = (1..=72).collect();
        // Every split of up to 72 bytes into two parts behind the word.
        for n in 0..=72 {
            for k in [0, n / 3, n / 2, n] {
                let word = 0x0807_0605_0403_0201u64 ^ n as u64;
                r.try_push_small(word, &src[..k], &src[k..n]).unwrap();
                let mut want = word.to_le_bytes().to_vec();
                want.extend_from_slice(&src[..n]);
                assert_eq!(
                    c.try_pop(|m| m.to_vec()).unwrap(),
                    want,
                    "{n} bytes split at {k}"
                );
            }
        }
        assert_eq!(
            r.try_push_small(0, &[0; 70], &[0; 3]),
            Err(PushError::TooLarge { len: 81, max: 80 })
        );
        for n in 0..=100 {
            let mut d = vec![0u8; n + 2];
            let s: Vec<u8> = (0..n).map(|i| i as u8 ^ 0xa5).collect();
            // SAFETY: `s` and `d[1..]` hold `n` bytes and are distinct.
            unsafe { copy_small(d.as_mut_ptr().add(1), s.as_ptr(), n) };
            assert_eq!(&d[1..=n], &s[..], "copy of {n} bytes");
            assert_eq!((d[0], d[n + 1]), (0, 0), "copy of {n} bytes wrote outside");
        }
    }

    #[test]
    fn parts_and_in_place() {
        let (_region, r) = ring(2, 16, Notify::Interrupt);
        let mut c = r.consumer().unwrap();
        r.try_push_parts(&[b"head", b"", b"body!"]).unwrap();
        r.try_push_with(3, |b| b.copy_from_slice(b"abc")).unwrap();
        assert_eq!(
            r.try_push_parts(&[&[0; 10], &[0; 7]]),
            Err(PushError::TooLarge { len: 17, max: 16 })
        );
        r.after_push();
        assert_eq!(c.try_pop(|m| m.to_vec()).unwrap(), b"headbody!");
        assert_eq!(c.try_pop(|m| m.to_vec()).unwrap(), b"abc");
    }

    #[test]
    fn one_consumer_at_a_time() {
        let (region, r) = ring(2, 8, Notify::Poll);
        // SAFETY: the region outlives `other`.
        let other = unsafe { Ring::attach(region.as_ptr(), region.len()) }.unwrap();
        let mut c = r.consumer().unwrap();
        assert_eq!(other.consumer().unwrap_err(), Claimed);
        other.try_push(b"1").unwrap();
        other.try_push(b"2").unwrap();
        assert_eq!(c.try_pop(|m| m.to_vec()).unwrap(), b"1");
        drop(c);
        // A new handle (another "process") continues at the head.
        let mut c = other.consumer().unwrap();
        assert_eq!(c.try_pop(|m| m.to_vec()).unwrap(), b"2");
        assert!(r.is_empty());
    }

    #[test]
    fn panicking_writer_abandons_its_slot() {
        let (_region, r) = ring(2, 8, Notify::Sparse);
        let mut c = r.consumer().unwrap();
        let r = std::panic::AssertUnwindSafe(&r);
        let res = std::panic::catch_unwind(|| {
            r.try_push_with(4, |_| panic!("box failed")).unwrap();
        });
        assert!(res.is_err());
        r.try_push(b"next").unwrap();
        assert_eq!(c.head(), Head::Ready);
        assert_eq!(c.try_pop(|m| m.to_vec()).unwrap(), b"next");
        assert_eq!(c.head(), Head::Empty);
        // A panicking reader frees its slot too (the message is consumed).
        r.try_push(b"a").unwrap();
        r.try_push(b"b").unwrap();
        let res = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            c.try_pop(|_| panic!("reader"))
        }));
        assert!(res.is_err());
        assert_eq!(c.try_pop(|m| m.to_vec()).unwrap(), b"b");
    }

    #[test]
    fn reserved_slot_is_pending() {
        let (_region, r) = ring(2, 8, Notify::Poll);
        let mut c = r.consumer().unwrap();
        // A producer that reserved and never published (a dead process):
        // simulated by reserving by hand.
        let pos = r.reserve().unwrap();
        assert_eq!(pos, 0);
        r.try_push(b"later").unwrap();
        assert_eq!(c.head(), Head::Pending(2));
        assert!(c.try_pop(|_| ()).is_none());
        // The ring fills up behind the stuck slot; nothing is overwritten.
        assert_eq!(r.try_push(b"x"), Err(PushError::Full));
        assert_eq!(c.head(), Head::Pending(2));
    }

    /// A dead producer's slot, recovered: its reservation word named the
    /// position it claimed; the consumer publishes it as abandoned and the
    /// ring goes on, losing nothing else.
    #[test]
    fn a_dead_producers_slot_is_abandoned_and_the_ring_goes_on() {
        let (_region, mut dead) = ring(2, 8, Notify::Poll);
        let word = Box::new(AtomicU64::new(0));
        // SAFETY: the word outlives the handle (dropped at the end).
        unsafe { dead.set_reservation_word(NonNull::from(&*word), 5) };
        let mut c = dead.consumer().unwrap();
        let pos = dead.reserve().unwrap();
        assert_eq!(word.load(Ordering::Relaxed), reservation_tag(5, pos));
        assert_eq!(dead.tail(), 1);
        dead.try_push(b"later").unwrap();
        assert_eq!(c.head(), Head::Pending(2));
        assert_eq!(c.position(), pos);
        // SAFETY: the producer of position 0 is "dead" (never publishes).
        assert!(unsafe { c.abandon_head() });
        assert_eq!(c.try_pop(|m| m.to_vec()).unwrap(), b"later");
        assert_eq!(c.head(), Head::Empty);
        // SAFETY: nothing is reserved: there is nothing to abandon.
        assert!(!unsafe { c.abandon_head() });
        dead.try_push(b"again").unwrap();
        assert_eq!(c.try_pop(|m| m.to_vec()).unwrap(), b"again");
        // A consumer whose process died: its claim is ended, and the next
        // one continues where it stopped.
        std::mem::forget(c);
        assert!(dead.consumer().is_err());
        // SAFETY: the forgotten consumer is never used again.
        unsafe { dead.force_release_consumer() };
        dead.try_push(b"next").unwrap();
        let mut c = dead.consumer().unwrap();
        assert_eq!(c.try_pop(|m| m.to_vec()).unwrap(), b"next");
    }

    /// Producer threads and a consumer thread: every message once, in order
    /// per producer. Small counts under Miri.
    fn threads(mode: Notify, producers: u32, per: u32, slots: usize) {
        let (_region, r) = ring(slots, 8, mode);
        let r = Arc::new(r);
        let handles: Vec<_> = (0..producers)
            .map(|p| {
                let r = r.clone();
                std::thread::spawn(move || {
                    for i in 0..per {
                        let mut msg = [0u8; 8];
                        msg[..4].copy_from_slice(&p.to_le_bytes());
                        msg[4..].copy_from_slice(&i.to_le_bytes());
                        while r.try_push(&msg).is_err() {
                            r.after_push();
                            std::thread::yield_now();
                        }
                        r.after_push();
                    }
                })
            })
            .collect();
        let mut c = r.consumer().unwrap();
        let mut next = vec![0u32; producers as usize];
        let mut got = 0;
        while got < producers * per {
            let popped = c.try_pop(|m| {
                let p = u32::from_le_bytes(m[..4].try_into().unwrap()) as usize;
                let i = u32::from_le_bytes(m[4..].try_into().unwrap());
                assert_eq!(i, next[p], "producer {p}: lost, duplicated or reordered");
                next[p] += 1;
            });
            if popped.is_some() {
                got += 1;
            } else {
                c.wait(Some(Duration::from_millis(50)));
            }
        }
        for h in handles {
            h.join().unwrap();
        }
        assert!(c.try_pop(|_| ()).is_none());
        assert!(next.iter().all(|&n| n == per));
    }

    const PER: u32 = if cfg!(miri) { 20 } else { 20_000 };

    #[test]
    fn threads_poll() {
        threads(Notify::Poll, 3, PER, 4);
    }

    #[test]
    fn threads_interrupt() {
        threads(Notify::Interrupt, 3, PER, 2);
    }

    #[test]
    fn threads_sparse() {
        threads(Notify::Sparse, 3, PER, 8);
    }
}
