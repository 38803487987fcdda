//! A shared-memory field arena: a buddy allocator in a region of the
//! segment, so that a field value (a C array a box made, from bytes to
//! hundreds of MiB) passes between the processes of a run as an offset.
//! Zero-copy mode allocates fields here from the start; single-copy mode
//! copies a field here once. Any process may allocate, any process may drop
//! the last reference.
//!
//! ```
//! use snet_shm::{Arena, HeapRegion};
//! let len = Arena::layout(1 << 20);
//! let region = HeapRegion::new(len); // a shared mapping in the transport
//! // SAFETY: zeroed, aligned, and it outlives the arena.
//! let arena = unsafe { Arena::init(region.as_ptr(), len) }.unwrap();
//! let off = arena.alloc(1000).unwrap(); // zeroed, one reference
//! // SAFETY: our block, 1000 bytes at least.
//! unsafe { arena.data(off).write_bytes(7, 1000) };
//! assert_eq!(arena.offset_of(arena.data(off), 1000), Some(off));
//! arena.retain(off); // a second holder: pass `off` on (through a ring)
//! // SAFETY: both references given up, the data not used afterwards.
//! unsafe {
//!     arena.release(off);
//!     arena.release(off); // the last one frees the block
//! }
//! assert_eq!(arena.stats().live_blocks, 0);
//! ```
//!
//! # Layout
//!
//! The region holds offsets and numbers only, never pointers (every process
//! maps it where it likes). All structures are `#[repr(C)]`; the base must
//! be 64-byte aligned (a mapping is page-aligned). With `C = 2^max_order`
//! the arena's capacity (one block of the largest order when empty):
//!
//! ```text
//! offset    0  meta line: magic+version, capacity, min/max order, map and blocks offsets
//! offset   64  lock line: lock word (owner pid | waiters bit), poison flag,
//!              stats counters (live blocks, live bytes, free blocks, free bytes)
//! offset  128  free-list heads, one u64 per order 0..64 (block offsets; NIL = u64::MAX)
//! offset  640  block map: one byte per 4 KiB of the blocks area (C / 4096 bytes)
//!              0 = no block starts here; 0x40 | k = a free block of order k
//!              starts here; 0x80 | k = a live block of order k starts here
//! offset    B  blocks area (B a multiple of 4096): C bytes of blocks; a block of
//!              order k is 2^k bytes at a block offset b (relative to B) with
//!              b mod 2^k = 0:
//!                header (64 bytes): tag (magic | clean | state | order), refs,
//!                                   next, prev (free-list links), 4 spare words
//!                data   (2^k - 64 bytes, 64-byte aligned)
//! ```
//!
//! [`Arena::layout`] gives the bytes for a capacity (rounded up to a power
//! of two, at least 4 KiB). The offsets handed out ([`Arena::alloc`]) are
//! those of a block's *data*, relative to the region's base: `B + b + 64`.
//! Buddy arithmetic works on block offsets `b`: the buddy of block `b` of
//! order `k` is `b ^ 2^k` (the blocks area need not be aligned in memory to
//! anything but a page for this: the offsets are relative to its start).
//!
//! **Block sizes.** The smallest block is 4 KiB (a page: 4032 bytes of
//! data), the largest the whole arena. Smaller blocks (1 KiB) would waste
//! less on tiny fields, but a field of a few hundred bytes is cheaper to
//! copy through the ring than to allocate (a lock round-trip and a refcount
//! per hand-over), so the transport should keep small fields inline; page
//! blocks make the "give back the pages" path simple and keep the map
//! small (one byte per page). A request of `len` bytes takes the smallest
//! block of at least `len + 64` bytes: up to twice the size. That waste is
//! *virtual* for big blocks: the pages of a memfd (or `/dev/shm`) segment
//! that nobody touched cost nothing, so a 65 MiB field in a 128 MiB block
//! uses 65 MiB of memory. Size the arena generously (a sparse segment).
//!
//! # Protocol
//!
//! **The lock.** The free lists, the block map's free/live entries, the
//! headers' `tag`, `next` and `prev` words and the stats counters are
//! changed only under a cross-process mutex in the lock line: a futex word
//! (`FUTEX_WAIT`/`FUTEX_WAKE` without `FUTEX_PRIVATE_FLAG`, the processes
//! share the word) holding 0 when free, else the owner's pid, with bit 31
//! set when a waiter may sleep (Drepper's "mutex 2"). `lock`: CAS 0 → pid
//! **(Acquire, LA)**; on contention spin a little, then set the waiters bit
//! and sleep on the word (in slices of 50 ms); a thread that slept takes the
//! lock with the waiters bit set. `unlock`: swap 0 **(Release, LR)**; if the
//! waiters bit was set, wake one. LR → LA orders every critical section
//! after the previous one, across processes: all free-list words can be
//! accessed Relaxed inside.
//!
//! **Allocation** (`alloc(len)`), under the lock: take the first block of
//! the smallest non-empty free list of order ≥ the wanted order `k` (but
//! see *Reuse*); split it down to `k` (at each split the half not handed
//! out becomes a free block: header written, map entry `0x40 | j`, pushed
//! on its list); mark the block live (map `0x80 | k`, `refs = 1`). After
//! unlocking, map the pages of a big request in one system call
//! ([`Arena::prefault`]), and zero the `len` bytes asked for unless the
//! block is *clean* (see below; the rest of the block is never handed out,
//! so it is not written). The caller owns the one reference.
//!
//! **Reuse.** A page of the segment costs a fault (or a share of a
//! populate call) the first time each process touches it, however often
//! its block is reused; a block of fresh pages costs one per page in every
//! process the field passes through. So an allocation of a field big enough
//! to be prefaulted ([`PREFAULT_MIN`]) prefers a free block whose pages
//! *this* process has mapped already (its page bitmap, see
//! [`Arena::prefault`]): among the first [`REUSE_SCAN`] candidate blocks of
//! order `k`, taken from the free lists of order `k` upwards (every
//! `k`-aligned part of a larger free block is a candidate), the first one
//! mapped for the `len` bytes asked for; failing that, the usual first
//! block. A field sent from node A to node B and freed by B therefore
//! comes back as A's next field of that size: no fault in A (its pages are
//! mapped) nor in B (it mapped them when it received the last one). The
//! bitmap is a hint (pages given back since fault again); the choice is
//! still a buddy split, so the free-list invariants are those above.
//!
//! **References.** `refs` is an atomic count, changed without the lock, as
//! `Arc` does:
//! * [`Arena::retain`]: `fetch_add(1, Relaxed)`. Requires a reference the
//!   caller holds (the block is live and stays so during the call); a new
//!   reference is only ever made from an existing one, so no ordering is
//!   needed. Handing a reference (an offset) to another thread or process
//!   needs its own Release/Acquire (the ring's publication does it), which
//!   also makes the data written before the hand-over visible.
//! * [`Arena::release`]: `fetch_sub(1, Release)` **(RR)**; the thread that
//!   takes the count from 1 to 0 runs `fence(Acquire)` **(RA)** and frees
//!   the block. RR → RA: every holder's accesses to the data happen before
//!   the free, hence (through LR → LA) before the next allocation's zeroing
//!   and use of those bytes.
//!
//! **Freeing**, under the lock: while the buddy of the block (order `k`) is
//! free with order `k` (its map entry says `0x40 | k`), unlink the buddy
//! from its list, clear the upper block's map entry, and continue with the
//! merged block of order `k + 1`; then write the header of the result, set
//! its map entry free, push it on its list. A freed block therefore merges
//! at once: no two free buddies of one order ever coexist.
//!
//! **Zeroed memory without O(n) cost.** A free block is *clean* (a bit in
//! its tag) when its data bytes are all zero. The initial block is (the
//! region must be zeroed). Splitting a clean block gives clean halves (the
//! upper half's header is written over zero data, its own data stays zero).
//! A freed live block is dirty, unless it has at least 1 MiB
//! ([`BIG_BLOCK`]): then, before taking the lock (the block is ours alone),
//! its whole pages are given back with `madvise(MADV_REMOVE)`, which punches
//! a hole in the segment's file (every mapping reads zeros, and the memory
//! is returned), and the partial pages at the ends are zeroed by hand; if
//! that worked the block is clean. A merged block is clean only if both
//! parts were; then the upper part's header (inside the merged data) is
//! zeroed. When a merge reaches 1 MiB with a dirty part (small blocks that
//! were written), that part (at most 512 KiB) is scrubbed the same way
//! under the lock, so every free block of 1 MiB or more is clean whenever
//! `MADV_REMOVE` works. Allocation zeroes (memset) only dirty blocks: small
//! ones, and big ones where `MADV_REMOVE` failed. If it fails (a private
//! mapping such as the tests' heap region: `EINVAL`; a file system without
//! hole punching: `EOPNOTSUPP`) the handle stops trying it and uses
//! `MADV_DONTNEED` instead, which gives back private anonymous pages but
//! does *not* zero a shared mapping (the page cache keeps the data), so the
//! block stays dirty. Every failure is tolerated.
//!
//! **Validation.** [`Arena::offset_of`] accepts an arbitrary pointer: it
//! checks that it lies in the blocks area at a block's data start (`B + 64`
//! plus a multiple of 4 KiB), that the map says a live block starts there
//! (the map is out of band: user data can never pass for it), that the
//! block's header tag carries the block magic with the same order (a cheap
//! check against a header clobbered by a buffer underrun), and that the
//! block holds `len` bytes. [`Arena::data`], [`Arena::capacity`],
//! [`Arena::retain`] and [`Arena::release`] check the offset's range and
//! alignment (a panic, never an access out of bounds, for a garbage
//! offset) and that the block is live.
//!
//! Release/Acquire pairs:
//! * **LR → LA**: one critical section to the next (all free-list state).
//! * **RR → RA**: every holder's last accesses to the data before the free.
//! * **init's `magic` store (Release) → attach's `magic` load (Acquire)**:
//!   the geometry and the initial free block are visible to an attaching
//!   handle.
//!
//! Everything else (map entries read by `offset_of`, `retain`, the stats
//! counters, the poison flag) is Relaxed: none of it publishes data.
//!
//! # Failures
//!
//! * **A process dies holding the lock.** Its pid stays in the lock word. A
//!   waiter that has waited more than 100 ms checks whether the owner lives
//!   (`kill(pid, 0)` fails with `ESRCH`, or `/proc/<pid>/stat` says it is a
//!   zombie, which an unreaped dead child is). If it is dead, the free
//!   lists may be half-changed: the waiter **poisons** the arena (a flag in
//!   the lock line) and wakes all waiters. From then on [`Arena::alloc`]
//!   returns `None` (callers fall back to the heap) and [`Arena::release`]
//!   does nothing; nothing hangs, nothing is corrupted further, and the run
//!   is failing anyway (the transport's node-death path). A pid reused by a
//!   new process within the run would look alive (a hang, not corruption);
//!   with 4 M pids that is unlikely, and processes sharing a segment must
//!   be in one pid namespace.
//! * **A process dies holding references.** Its blocks are never freed:
//!   leaked until the segment goes away at the end of the run. Acceptable,
//!   the run is failing; nothing else is affected.
//! * **A process dies between its last release and the free.** The block is
//!   leaked (as above); if it dies inside the free, the lock is held: see
//!   the first point.
//!
//! Checks: unit tests below (also under Miri), loom models
//! (`loom_tests/arena.rs`), and `tests/arena_stress.rs` (processes sharing
//! a memfd, passing offsets through rings).

use std::fmt;
use std::mem::size_of;
use std::ptr::NonNull;
use std::time::Duration;

use crate::sync::{self, fence, AtomicU32, AtomicU64, AtomicU8, Futex, Ordering};

/// `"snetarn"` and the layout version in the low byte.
const MAGIC: u64 = 0x736e_6574_6172_6e01;

/// The high half of every block header's tag.
const BLOCK_MAGIC: u64 = 0xb10c_a4e7 << 32;
/// Tag bit: a free block's data is all zero.
const TAG_CLEAN: u64 = 1 << 16;

/// The order of the smallest block (4 KiB).
pub const MIN_ORDER: u32 = 12;
/// The order of the largest arena (1 TiB).
pub const MAX_ORDER: u32 = 40;
/// The smallest block, in bytes.
pub const MIN_BLOCK: usize = 1 << MIN_ORDER;
/// Blocks of at least this many bytes get their pages back when freed and
/// are then clean (their data reads as zero without a memset).
pub const BIG_BLOCK: usize = 1 << BIG_ORDER;
const BIG_ORDER: u32 = 20;

/// Alignment the region's base must have (and that data pointers have).
pub const ALIGN: usize = 64;

/// Offset of the blocks area: a multiple of this (a page, so that whole
/// pages of a block can be given back).
const AREA_ALIGN: usize = 4096;

/// Free-list heads (indexed by order, only `MIN_ORDER..=max_order` used).
const ORDERS: usize = 64;

/// "No block" in the free-list links.
const NIL: u64 = u64::MAX;

/// Map entries: state bits and the order in the low six bits.
const MAP_FREE: u8 = 0x40;
const MAP_LIVE: u8 = 0x80;
const MAP_ORDER: u8 = 0x3f;

/// Lock word: bit 31 set while a waiter may sleep (pids are below 2^22).
const WAITERS: u32 = 1 << 31;

/// How long a lock waiter sleeps between looks at the owner's liveness.
const WAIT_SLICE: Duration = Duration::from_millis(50);

/// How long a lock waiter waits before it asks whether the owner lives.
const PATIENCE: Duration = Duration::from_millis(100);

/// Fields of at least this many bytes have their pages mapped in one system
/// call ([`Arena::prefault`]); below it the kernel's fault-around (16 pages
/// a read fault) does about as well.
pub const PREFAULT_MIN: usize = 64 << 10;

/// How many candidate blocks an allocation of a prefaulted field looks at
/// for one whose pages this process mapped already ([`Arena::alloc`]):
/// bounds the time under the lock (a look is a few bitmap words; it stops
/// at the first page not mapped).
const REUSE_SCAN: u32 = 64;

/// The largest page bitmap (in words) a handle keeps for
/// [`Arena::prefault`]: 8 MiB, for arenas up to 256 GiB of 4 KiB pages;
/// beyond that the hint is off.
#[cfg_attr(any(miri, loom), allow(dead_code))]
const MAX_MAP_WORDS: usize = 1 << 20;

/// The system's page size (4 KiB if it cannot be read).
#[cfg_attr(any(miri, loom), allow(dead_code))]
fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions.
    usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) })
        .ok()
        .filter(|p| p.is_power_of_two())
        .unwrap_or(AREA_ALIGN)
}

/// Spins before a contended `lock` sleeps (critical sections are short).
const SPINS: u32 = if cfg!(loom) { 0 } else { 100 };

/// A cache line of its own.
#[repr(C, align(64))]
struct Line<T>(T);

#[repr(C)]
struct Meta {
    /// [`MAGIC`] once initialised (stored last, Release).
    magic: AtomicU64,
    /// Bytes of the blocks area: `2^max_order`.
    capacity: AtomicU64,
    max_order: AtomicU32,
    min_order: AtomicU32,
    map_off: AtomicU64,
    blocks_off: AtomicU64,
    /// Freed blocks of at least `2^big_order` bytes give their pages back.
    big_order: AtomicU32,
    _pad: AtomicU32,
}

#[repr(C)]
struct LockLine {
    /// 0, or the owner's pid, `| WAITERS`.
    word: AtomicU32,
    /// Non-zero once a process died holding the lock.
    poisoned: AtomicU32,
    live_blocks: AtomicU64,
    live_bytes: AtomicU64,
    free_blocks: AtomicU64,
    free_bytes: AtomicU64,
}

#[repr(C)]
struct Header {
    meta: Line<Meta>,
    lock: Line<LockLine>,
    heads: [AtomicU64; ORDERS],
}

/// A block's header (64 bytes outside loom: eight words, no padding, so a
/// merged-away header is zeroed by eight atomic stores).
#[repr(C, align(64))]
struct Block {
    /// `BLOCK_MAGIC | clean | state << 8 | order` (state: the map's bits).
    tag: AtomicU64,
    /// References (live blocks; 0 when free).
    refs: AtomicU64,
    /// Free-list links (block offsets, [`NIL`]).
    next: AtomicU64,
    prev: AtomicU64,
    /// Unused (keeps the header a full line of atomics).
    spare: [AtomicU64; 4],
}

/// Bytes of a block header: data starts this far into the block.
const HDR: usize = size_of::<Block>();

#[cfg(not(loom))]
const _: () = assert!(HDR == ALIGN && size_of::<Header>() == 640);

/// A block header's tag.
fn tag(state: u8, order: u32, clean: bool) -> u64 {
    let clean = if clean { TAG_CLEAN } else { 0 };
    BLOCK_MAGIC | clean | (state as u64) << 8 | order as u64
}

/// Where the map and the blocks area start, and the bytes needed, for an
/// arena of `2^max_order` bytes.
fn geometry(max_order: u32) -> (usize, usize, usize) {
    let map_off = size_of::<Header>().next_multiple_of(ALIGN);
    let entries = 1usize << (max_order - MIN_ORDER);
    let blocks_off = (map_off + entries * size_of::<AtomicU8>()).next_multiple_of(AREA_ALIGN);
    (map_off, blocks_off, blocks_off + (1usize << max_order))
}

/// Why a region cannot hold or be attached as an arena.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ArenaError {
    /// The region is smaller than the smallest arena (or, `attach`, than the
    /// arena in it).
    TooSmall {
        /// Bytes needed.
        needed: usize,
        /// Bytes the region has.
        len: usize,
    },
    /// The base is not [`ALIGN`]-aligned (or null).
    Misaligned,
    /// `attach`: the region holds no initialised arena (yet), or one of
    /// another layout version: retry later.
    NotInitialised,
    /// `attach`: the header's geometry is inconsistent.
    Corrupt,
}

impl fmt::Display for ArenaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ArenaError::TooSmall { needed, len } => {
                write!(
                    f,
                    "shared region too small for the arena: {len} bytes, {needed} needed"
                )
            }
            ArenaError::Misaligned => write!(f, "shared region not {ALIGN}-byte aligned"),
            ArenaError::NotInitialised => write!(f, "shared region holds no initialised arena"),
            ArenaError::Corrupt => write!(f, "shared arena header is corrupt"),
        }
    }
}

impl std::error::Error for ArenaError {}

/// A snapshot of an arena's counters ([`Arena::stats`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ArenaStats {
    /// Bytes of the blocks area (a power of two).
    pub capacity: u64,
    /// Blocks allocated and not yet freed.
    pub live_blocks: u64,
    /// Bytes of those blocks (headers and rounding up included).
    pub live_bytes: u64,
    /// Free blocks (after coalescing: 1 for an empty arena).
    pub free_blocks: u64,
    /// Bytes of the free blocks (`capacity - live_bytes`).
    pub free_bytes: u64,
    /// A process died holding the lock: the arena is out of service.
    pub poisoned: bool,
}

/// A handle on an arena in a shared region (see the module docs). Shared by
/// `&` between threads (it is `Send + Sync`); each process makes its own
/// with [`Arena::init`] or [`Arena::attach`]. It owns nothing in the region.
pub struct Arena {
    base: NonNull<u8>,
    max_order: u32,
    /// Freed blocks of this order or more give their pages back (scrub).
    big_order: u32,
    map_off: usize,
    blocks_off: usize,
    futex: Futex,
    /// Whether `MADV_REMOVE` may still work on this mapping (a per-handle
    /// hint that orders nothing, hence not from `sync`).
    #[cfg_attr(any(miri, loom), allow(dead_code))]
    can_remove: std::sync::atomic::AtomicBool,
    /// This process's populated pages of the blocks area, one bit per 4 KiB
    /// (made on first use): a hint for [`Arena::prefault`] that orders
    /// nothing and that correctness never depends on.
    #[cfg(not(any(miri, loom)))]
    mapped: std::sync::OnceLock<Box<[std::sync::atomic::AtomicU64]>>,
    /// Whether big allocations prefer blocks this process mapped already
    /// ([`Arena::set_reuse`]; a setting that orders nothing).
    #[cfg_attr(any(miri, loom), allow(dead_code))]
    reuse: std::sync::atomic::AtomicBool,
    /// Whether `MADV_POPULATE_READ`/`_WRITE` may still work (Linux 5.14+).
    #[cfg(not(any(miri, loom)))]
    can_populate: std::sync::atomic::AtomicBool,
    /// Whether the process with this pid lives (tests inject their own).
    #[cfg_attr(loom, allow(dead_code))]
    owner_alive: fn(u32) -> bool,
    /// How long a lock waiter waits before it asks `owner_alive`.
    #[cfg_attr(loom, allow(dead_code))]
    patience: Duration,
    /// Loom's view of the data bytes (one cell per 4 KiB).
    #[cfg(loom)]
    shadow: sync::Shadow,
}

// SAFETY: the handle is a base pointer and constants; everything it reaches
// in the region is accessed through atomics, under the lock, or (a block's
// data) by whoever holds the block, as the protocol says; it is designed
// for concurrent use by threads and processes.
unsafe impl Send for Arena {}
// SAFETY: as above; every operation takes `&self` by design.
unsafe impl Sync for Arena {}

impl fmt::Debug for Arena {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Arena")
            .field("capacity", &(1u64 << self.max_order))
            .field("blocks_off", &self.blocks_off)
            .finish_non_exhaustive()
    }
}

/// Proof that the arena's lock is held; unlocks on drop.
struct Locked<'a> {
    arena: &'a Arena,
}

impl Drop for Locked<'_> {
    fn drop(&mut self) {
        if sync::unwinding_in_model() {
            return;
        }
        let word = &self.arena.lock_line().word;
        // LR: pairs with the Acquire CAS (LA) in `Arena::lock`.
        if word.swap(0, Ordering::Release) & WAITERS != 0 {
            self.arena.futex.wake(word);
        }
    }
}

impl Arena {
    /// Bytes of region needed for an arena able to hold `capacity` bytes of
    /// blocks (headers included), rounded up to a power of two of at least
    /// [`MIN_BLOCK`]. Panics above 2^[`MAX_ORDER`] bytes.
    pub fn layout(capacity: usize) -> usize {
        let order = capacity
            .max(MIN_BLOCK)
            .checked_next_power_of_two()
            .map_or(u32::MAX, |c| c.trailing_zeros());
        assert!(order <= MAX_ORDER, "arena capacity {capacity} too large");
        geometry(order).2
    }

    /// The largest order whose arena fits in `len` bytes.
    fn order_fitting(len: usize) -> Option<u32> {
        (MIN_ORDER..=MAX_ORDER)
            .take_while(|&k| k < usize::BITS - 1 && geometry(k).2 <= len)
            .last()
    }

    /// Lays out a fresh, empty arena in the region: the largest one that
    /// fits in `len` bytes (see [`Arena::layout`]). Done once, by the
    /// region's creator, before any other handle attaches.
    ///
    /// # Safety
    /// `base` is valid for reads and writes of `len` bytes, [`ALIGN`]-aligned
    /// (page-aligned in practice), **zeroed**, and stays mapped for as long
    /// as this handle, any handle attached later and any pointer from
    /// [`Arena::data`] are used; nobody else uses the region yet, and later
    /// it is accessed only through this module's handles and the data of
    /// blocks one holds (in any number of processes).
    pub unsafe fn init(base: *mut u8, len: usize) -> Result<Arena, ArenaError> {
        // SAFETY: the caller's contract.
        unsafe { Self::init_with(base, len, BIG_BLOCK) }
    }

    /// As [`Arena::init`], with freed blocks of at least `give_back` bytes
    /// (rounded up to a power of two) giving their pages back instead of
    /// [`BIG_BLOCK`]: a transport that moves big fields over and over
    /// (single-copy) keeps their pages, so that reusing a block does not
    /// fault every page in again; `usize::MAX` never gives back (freed
    /// blocks then keep their pages until the region goes, like a heap).
    ///
    /// # Safety
    /// As [`Arena::init`].
    pub unsafe fn init_with(
        base: *mut u8,
        len: usize,
        give_back: usize,
    ) -> Result<Arena, ArenaError> {
        let big_order = give_back
            .max(MIN_BLOCK)
            .checked_next_power_of_two()
            .map_or(usize::BITS - 1, |c| c.trailing_zeros());
        let base = Self::check_base(base)?;
        let max_order = Self::order_fitting(len).ok_or(ArenaError::TooSmall {
            needed: geometry(MIN_ORDER).2,
            len,
        })?;
        let (map_off, blocks_off, _) = geometry(max_order);
        let h = base.as_ptr().cast::<Header>();
        let arena = Arena::handle(base, max_order, big_order, map_off, blocks_off);
        // SAFETY: the region is ours alone during `init` (the contract), the
        // fields are aligned (`base` is, the header is `repr(C)`, the map
        // and blocks offsets are multiples of 64) and in bounds (`len` holds
        // `geometry(max_order)`).
        unsafe {
            let meta = &raw mut (*h).meta.0;
            let magic = sync::place_u64(&raw mut (*meta).magic, 0);
            sync::place_u64(&raw mut (*meta).capacity, 1 << max_order);
            sync::place_u32(&raw mut (*meta).max_order, max_order);
            sync::place_u32(&raw mut (*meta).min_order, MIN_ORDER);
            sync::place_u32(&raw mut (*meta).big_order, big_order);
            sync::place_u32(&raw mut (*meta)._pad, 0);
            sync::place_u64(&raw mut (*meta).map_off, map_off as u64);
            sync::place_u64(&raw mut (*meta).blocks_off, blocks_off as u64);
            let lock = &raw mut (*h).lock.0;
            sync::place_u32(&raw mut (*lock).word, 0);
            sync::place_u32(&raw mut (*lock).poisoned, 0);
            sync::place_u64(&raw mut (*lock).live_blocks, 0);
            sync::place_u64(&raw mut (*lock).live_bytes, 0);
            sync::place_u64(&raw mut (*lock).free_blocks, 1);
            sync::place_u64(&raw mut (*lock).free_bytes, 1 << max_order);
            for k in 0..ORDERS {
                let v = if k == max_order as usize { 0 } else { NIL };
                sync::place_u64(&raw mut (*h).heads[k], v);
            }
            // The map: zero bytes are "no block" (the region is zeroed);
            // loom's atomics must be constructed.
            #[cfg(loom)]
            for i in 0..1usize << (max_order - MIN_ORDER) {
                sync::place_u8(base.as_ptr().add(map_off).cast::<AtomicU8>().add(i), 0);
            }
            sync::place_u8(
                base.as_ptr().add(map_off).cast::<AtomicU8>(),
                MAP_FREE | max_order as u8,
            );
            // The one free block; its data is zero (the region is).
            arena.place_block(0, tag(MAP_FREE, max_order, true));
            // Pairs with the Acquire load in `attach`.
            magic.store(MAGIC, Ordering::Release);
        }
        Ok(arena)
    }

    /// A handle on the arena another handle (in this process or another)
    /// initialised in this region. `Err(NotInitialised)` if `init` has not
    /// finished (yet): retry.
    ///
    /// # Safety
    /// As [`Arena::init`], except that the region is initialised already
    /// (and in use).
    pub unsafe fn attach(base: *mut u8, len: usize) -> Result<Arena, ArenaError> {
        let base = Self::check_base(base)?;
        if len < size_of::<Header>() {
            return Err(ArenaError::TooSmall {
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
            return Err(ArenaError::NotInitialised);
        }
        let max_order = meta.max_order.load(Ordering::Relaxed);
        if !(MIN_ORDER..=MAX_ORDER).contains(&max_order)
            || max_order >= usize::BITS - 1
            || meta.min_order.load(Ordering::Relaxed) != MIN_ORDER
            || meta.capacity.load(Ordering::Relaxed) != 1 << max_order
        {
            return Err(ArenaError::Corrupt);
        }
        let (map_off, blocks_off, needed) = geometry(max_order);
        if meta.map_off.load(Ordering::Relaxed) != map_off as u64
            || meta.blocks_off.load(Ordering::Relaxed) != blocks_off as u64
        {
            return Err(ArenaError::Corrupt);
        }
        if len < needed {
            return Err(ArenaError::TooSmall { needed, len });
        }
        let big_order = meta.big_order.load(Ordering::Relaxed);
        if !(MIN_ORDER..usize::BITS).contains(&big_order) {
            return Err(ArenaError::Corrupt);
        }
        Ok(Arena::handle(
            base, max_order, big_order, map_off, blocks_off,
        ))
    }

    fn check_base(base: *mut u8) -> Result<NonNull<u8>, ArenaError> {
        let base = NonNull::new(base).ok_or(ArenaError::Misaligned)?;
        if !base.as_ptr().addr().is_multiple_of(ALIGN) {
            return Err(ArenaError::Misaligned);
        }
        Ok(base)
    }

    fn handle(
        base: NonNull<u8>,
        max_order: u32,
        big_order: u32,
        map_off: usize,
        blocks_off: usize,
    ) -> Arena {
        Arena {
            base,
            max_order,
            big_order,
            map_off,
            blocks_off,
            futex: Futex::new(),
            can_remove: std::sync::atomic::AtomicBool::new(true),
            reuse: std::sync::atomic::AtomicBool::new(true),
            #[cfg(not(any(miri, loom)))]
            mapped: std::sync::OnceLock::new(),
            #[cfg(not(any(miri, loom)))]
            can_populate: std::sync::atomic::AtomicBool::new(true),
            owner_alive: process_alive,
            patience: PATIENCE,
            #[cfg(loom)]
            shadow: sync::Shadow::new(1 << (max_order - MIN_ORDER)),
        }
    }

    /// The largest request [`Arena::alloc`] can ever satisfy.
    pub fn max_alloc(&self) -> usize {
        (1usize << self.max_order) - HDR
    }

    /// Whether a process died holding the lock (see "Failures").
    pub fn is_poisoned(&self) -> bool {
        self.lock_line().poisoned.load(Ordering::Relaxed) != 0
    }

    // ----- the region's words ------------------------------------------

    fn header(&self) -> &Header {
        // SAFETY: the region starts with the header (init/attach checked the
        // size and alignment); it is only accessed through atomics.
        unsafe { &*self.base.as_ptr().cast::<Header>() }
    }

    fn lock_line(&self) -> &LockLine {
        &self.header().lock.0
    }

    fn head(&self, order: u32) -> &AtomicU64 {
        &self.header().heads[order as usize]
    }

    /// The map entry of the 4 KiB unit at block offset `b` (< capacity).
    fn entry(&self, b: u64) -> &AtomicU8 {
        debug_assert!(b < 1 << self.max_order && b.is_multiple_of(MIN_BLOCK as u64));
        // SAFETY: the map has `capacity / 4096` entries from `map_off`
        // (within the checked region), `b / 4096` is below that; entries
        // are atomics (every byte is one; constructed under loom).
        unsafe {
            &*self
                .base
                .as_ptr()
                .add(self.map_off)
                .cast::<AtomicU8>()
                .add((b >> MIN_ORDER) as usize)
        }
    }

    /// The start of block `b` in this process's mapping.
    fn block_ptr(&self, b: u64) -> *mut u8 {
        debug_assert!(b < 1 << self.max_order);
        // SAFETY: `b` is below the capacity: in the blocks area, which lies
        // in the region.
        unsafe { self.base.as_ptr().add(self.blocks_off + b as usize) }
    }

    /// The header of the block starting at `b`. Only called for a block
    /// start (the map or the lock says so), so its header words are
    /// atomics placed by `place_block` (under loom: constructed).
    fn block(&self, b: u64) -> &Block {
        // SAFETY: `block_ptr` is in bounds and 64-aligned (`b` is a multiple
        // of 4 KiB, the area's offset of 64); a header fits before the end
        // of the smallest block.
        unsafe { &*self.block_ptr(b).cast::<Block>() }
    }

    /// Writes a fresh header at block start `b` (under the lock, or in
    /// `init`): `tag`, no references, no links.
    fn place_block(&self, b: u64, tag: u64) {
        let p = self.block_ptr(b).cast::<Block>();
        // SAFETY: `b` is becoming a block start; nobody else reads this
        // header before the lock is released (under loom the atomics are
        // constructed anew, as the bytes may have been data).
        unsafe {
            sync::place_u64(&raw mut (*p).tag, tag);
            sync::place_u64(&raw mut (*p).refs, 0);
            sync::place_u64(&raw mut (*p).next, NIL);
            sync::place_u64(&raw mut (*p).prev, NIL);
        }
    }

    /// The block offset of a data offset, if it is the plausible data offset
    /// of some block (range and alignment only).
    fn block_of(&self, off: u64) -> Option<u64> {
        let b = off.checked_sub((self.blocks_off + HDR) as u64)?;
        (b < 1 << self.max_order && b.is_multiple_of(MIN_BLOCK as u64)).then_some(b)
    }

    /// The block offset and order of a live block's data offset; panics for
    /// anything else (a caller's bug: never an access out of bounds).
    fn live(&self, off: u64) -> (u64, u32) {
        let e = self
            .block_of(off)
            .map(|b| (b, self.entry(b).load(Ordering::Relaxed)));
        match e {
            Some((b, e)) if e & MAP_LIVE != 0 => (b, (e & MAP_ORDER) as u32),
            _ => panic!("arena: offset {off:#x} is not a live block"),
        }
    }

    // ----- public operations -------------------------------------------

    /// A block of at least `len` bytes (`len` may be 0), its data
    /// [`ALIGN`]-aligned and its first `len` bytes zero (the rest of
    /// [`Arena::capacity`] holds whatever it held: a 16 MiB field takes a
    /// 32 MiB block, and zeroing what nobody reads would cost a memset and
    /// the faults of pages nobody uses), with one reference (the caller's). `None` if no free block is large
    /// enough (fall back to the heap) or the arena is poisoned. Returns the
    /// data's offset from the region's base (the same in every process).
    pub fn alloc(&self, len: usize) -> Option<u64> {
        self.alloc_inner(len, true)
    }

    /// As [`Arena::alloc`], but the data holds whatever it held (for a
    /// caller that overwrites the first `len` bytes at once: a transfer's
    /// copy), so a dirty block is not zeroed first.
    pub fn alloc_uninit(&self, len: usize) -> Option<u64> {
        self.alloc_inner(len, false)
    }

    fn alloc_inner(&self, len: usize, zeroed: bool) -> Option<u64> {
        let order = len
            .checked_add(HDR)?
            .max(MIN_BLOCK)
            .checked_next_power_of_two()?
            .trailing_zeros();
        if order > self.max_order {
            return None;
        }
        let g = self.lock()?;
        // The free block to take (order `k`) and, inside it, the block of
        // the wanted order to hand out: preferably one whose pages this
        // process has mapped already (see "Reuse" in the module docs).
        let (taken, mut k, b) = self.choose(&g, order, len)?;
        self.unlink(&g, taken, k);
        let clean = self.block(taken).tag.load(Ordering::Relaxed) & TAG_CLEAN != 0;
        let mut at = taken;
        while k > order {
            k -= 1;
            // Split `at` (order k + 1): the half holding `b` goes on, the
            // other half is free.
            let upper = at + (1 << k);
            let (mine, other) = if b >= upper { (upper, at) } else { (at, upper) };
            self.place_block(other, tag(MAP_FREE, k, clean));
            self.entry(other)
                .store(MAP_FREE | k as u8, Ordering::Relaxed);
            self.push(&g, other, k);
            at = mine;
        }
        debug_assert_eq!(at, b);
        if b != taken {
            // A block start inside the taken block: its header is new (the
            // taken block's header, at `taken`, now heads a free block).
            self.place_block(b, tag(MAP_LIVE, order, false));
        }
        let blk = self.block(b);
        blk.tag
            .store(tag(MAP_LIVE, order, false), Ordering::Relaxed);
        blk.refs.store(1, Ordering::Relaxed);
        self.entry(b)
            .store(MAP_LIVE | order as u8, Ordering::Relaxed);
        let l = self.lock_line();
        let size = 1u64 << order;
        l.live_blocks.fetch_add(1, Ordering::Relaxed);
        l.live_bytes.fetch_add(size, Ordering::Relaxed);
        l.free_bytes.fetch_sub(size, Ordering::Relaxed);
        drop(g);
        let data = self.block_ptr(b).wrapping_add(HDR);
        self.shadow_write(b, order);
        if len >= PREFAULT_MIN {
            // The caller is about to write the bytes (or we zero them): map
            // their pages in one system call rather than a fault each.
            self.prefault((self.blocks_off + HDR) as u64 + b, len, true);
        }
        if zeroed && !clean {
            // SAFETY: the block is ours (live, one reference, not yet handed
            // out); its data is `2^order - HDR >= len` bytes inside the region.
            unsafe { data.write_bytes(0, len) };
        }
        Some((self.blocks_off + HDR) as u64 + b)
    }

    /// Which free block an allocation of `order` (for `len` bytes) takes,
    /// and which block of that order inside it: `(free block, its order,
    /// the block handed out)`. Without a preference, the first block of the
    /// smallest non-empty free list, and its lowest part. For a field big
    /// enough to be prefaulted ([`PREFAULT_MIN`]), the first block (of the
    /// smallest order, among at most [`REUSE_SCAN`] looked at) whose first
    /// `len` data bytes this process has mapped already: a block freed by
    /// any process after this one used it (or received it) costs no page
    /// fault here again. `None` if no free block is large enough.
    fn choose(&self, _: &Locked<'_>, order: u32, len: usize) -> Option<(u64, u32, u64)> {
        let mut first = None;
        let mut budget = if self.tracks_mapped(len) {
            REUSE_SCAN
        } else {
            0
        };
        for k in order..=self.max_order {
            let mut c = self.head(k).load(Ordering::Relaxed);
            if c == NIL {
                continue;
            }
            first.get_or_insert((c, k, c));
            while c != NIL && budget > 0 {
                for part in (c..c + (1 << k)).step_by(1 << order) {
                    if budget == 0 {
                        break;
                    }
                    budget -= 1;
                    if self.is_mapped(part, len) {
                        return Some((c, k, part));
                    }
                }
                c = self.block(c).next.load(Ordering::Relaxed);
            }
            if budget == 0 {
                break;
            }
        }
        first
    }

    /// Whether this handle keeps track of its mapped pages for a field of
    /// `len` bytes (prefault is on and the field big enough for it).
    fn tracks_mapped(&self, len: usize) -> bool {
        #[cfg(any(miri, loom))]
        {
            let _ = len;
            false
        }
        #[cfg(not(any(miri, loom)))]
        {
            len >= PREFAULT_MIN
                && self.reuse.load(std::sync::atomic::Ordering::Relaxed)
                && self.can_populate.load(std::sync::atomic::Ordering::Relaxed)
                && self.mapped.get().is_some()
        }
    }

    /// Whether this process has mapped every page of the header and first
    /// `len` data bytes of a block starting at `b` (its bitmap says so).
    fn is_mapped(&self, b: u64, len: usize) -> bool {
        #[cfg(any(miri, loom))]
        {
            let _ = (b, len);
            false
        }
        #[cfg(not(any(miri, loom)))]
        {
            use std::sync::atomic::Ordering::Relaxed;
            let Some(bits) = self.mapped.get() else {
                return false;
            };
            let cap = 1usize << self.max_order;
            let start = b as usize;
            let end = (start + HDR).saturating_add(len).min(cap);
            (start / MIN_BLOCK..end.div_ceil(MIN_BLOCK))
                .all(|p| bits[p / 64].load(Relaxed) & (1 << (p % 64)) != 0)
        }
    }

    /// The data pointer of the block at `off` in this process's mapping.
    /// Panics if `off` is not a block's data offset of this arena.
    pub fn data(&self, off: u64) -> *mut u8 {
        let Some(b) = self.block_of(off) else {
            panic!("arena: offset {off:#x} is not a block's data");
        };
        self.block_ptr(b).wrapping_add(HDR)
    }

    /// Maps the pages of the first `len` data bytes of block `off` into
    /// this process's page tables, once per page per process: the first time
    /// with one `madvise(MADV_POPULATE_WRITE)` (`write`) or
    /// `MADV_POPULATE_READ` for the lot instead of a page fault per page (or
    /// per 16 pages, the kernel's fault-around for reads), afterwards
    /// nothing (a bit per page of this process says it was done). Blocks
    /// keep their pages when freed (unless the arena gives big blocks back),
    /// so a block reused for the next field costs no fault in a process that
    /// mapped it once. A hint: pages given back since (here or in another
    /// process) fault again as usual; failures are ignored (before Linux
    /// 5.14 the advice does not exist, and the handle stops asking).
    /// Fields below [`PREFAULT_MIN`] bytes are left to the faults.
    pub fn prefault(&self, off: u64, len: usize, write: bool) {
        #[cfg(any(miri, loom))]
        let _ = (off, len, write);
        #[cfg(not(any(miri, loom)))]
        {
            use std::sync::atomic::AtomicU64 as Bits;
            use std::sync::atomic::Ordering::Relaxed;
            const MADV_POPULATE_READ: libc::c_int = 22;
            const MADV_POPULATE_WRITE: libc::c_int = 23;
            if len < PREFAULT_MIN || !self.can_populate.load(Relaxed) {
                return;
            }
            let Some(b) = self.block_of(off) else {
                return;
            };
            let cap = 1usize << self.max_order;
            let (start, end) = (b as usize, (b as usize + HDR).saturating_add(len).min(cap));
            let pages = cap / MIN_BLOCK;
            if pages / 64 > MAX_MAP_WORDS || page_size() != MIN_BLOCK {
                self.can_populate.store(false, Relaxed);
                return;
            }
            let bits = self
                .mapped
                .get_or_init(|| (0..pages.div_ceil(64)).map(|_| Bits::new(0)).collect());
            let is_set = |p: usize| bits[p / 64].load(Relaxed) & (1 << (p % 64)) != 0;
            let (mut p, last) = (start / MIN_BLOCK, end.div_ceil(MIN_BLOCK));
            while p < last {
                if is_set(p) {
                    p += 1;
                    continue;
                }
                let run = p;
                while p < last && !is_set(p) {
                    p += 1;
                }
                let at = self.block_ptr((run * MIN_BLOCK) as u64);
                let advice = if write {
                    MADV_POPULATE_WRITE
                } else {
                    MADV_POPULATE_READ
                };
                // SAFETY: whole pages of the blocks area, inside the mapping;
                // populating page tables changes no byte of them.
                if unsafe { libc::madvise(at.cast(), (p - run) * MIN_BLOCK, advice) } != 0 {
                    if std::io::Error::last_os_error().raw_os_error() == Some(libc::EINVAL) {
                        self.can_populate.store(false, Relaxed);
                    }
                    return;
                }
                for q in run..p {
                    bits[q / 64].fetch_or(1 << (q % 64), Relaxed);
                }
            }
        }
    }

    /// Turns [`Arena::prefault`] off or on for this handle (the transport's
    /// `SNET_SHM_PREFAULT=0` turns it off, to measure it).
    pub fn set_prefault(&self, on: bool) {
        #[cfg(not(any(miri, loom)))]
        self.can_populate
            .store(on, std::sync::atomic::Ordering::Relaxed);
        #[cfg(any(miri, loom))]
        let _ = on;
    }

    /// Turns the preference for blocks this process mapped already off or
    /// on for this handle (see "Reuse" in the module docs; the transport's
    /// `SNET_SHM_REUSE=0` turns it off, to measure it).
    pub fn set_reuse(&self, on: bool) {
        self.reuse.store(on, std::sync::atomic::Ordering::Relaxed);
    }

    /// Forgets that this process mapped the pages of `[start, end)` (block
    /// area offsets, whole pages): they were given back.
    #[cfg(not(any(miri, loom)))]
    fn unmapped(&self, start: usize, end: usize) {
        use std::sync::atomic::Ordering::Relaxed;
        if let Some(bits) = self.mapped.get() {
            for q in start / MIN_BLOCK..end / MIN_BLOCK {
                bits[q / 64].fetch_and(!(1 << (q % 64)), Relaxed);
            }
        }
    }

    /// Usable bytes of the live block at `off` (at least what was asked
    /// for). Panics if it is not a live block.
    pub fn capacity(&self, off: u64) -> usize {
        let (_, order) = self.live(off);
        (1usize << order) - HDR
    }

    /// The addresses of the blocks area in this process's mapping: every
    /// block's data lies there.
    pub fn blocks_range(&self) -> std::ops::Range<usize> {
        let start = self.base.as_ptr().addr() + self.blocks_off;
        start..start + (1usize << self.max_order)
    }

    /// If `ptr` is the data start of a live block of this arena (allocated
    /// by any process) holding at least `len` bytes: its offset. `None` for
    /// any other pointer (outside the arena, inside a block, a free block);
    /// never reads outside the region. The answer is exact for a block the
    /// caller holds a reference to; for one it does not hold, it may be
    /// stale by the time it returns.
    pub fn offset_of(&self, ptr: *const u8, len: usize) -> Option<u64> {
        let area = self.base.as_ptr().addr() + self.blocks_off + HDR;
        let b = ptr.addr().checked_sub(area)? as u64;
        if b >= 1 << self.max_order || !b.is_multiple_of(MIN_BLOCK as u64) {
            return None;
        }
        let e = self.entry(b).load(Ordering::Relaxed);
        let order = (e & MAP_ORDER) as u32;
        if e & MAP_LIVE == 0
            || !(MIN_ORDER..=self.max_order).contains(&order)
            || !b.is_multiple_of(1 << order)
        {
            return None;
        }
        // The map says a live block starts at `b`: its header is a header.
        if self.block(b).tag.load(Ordering::Relaxed) != tag(MAP_LIVE, order, false) {
            return None;
        }
        (len <= (1usize << order) - HDR).then_some((self.blocks_off + HDR) as u64 + b)
    }

    /// One more reference to the live block at `off`. The caller holds a
    /// reference (so the block stays live meanwhile); Relaxed, as
    /// `Arc::clone`. Panics if `off` is not a live block.
    pub fn retain(&self, off: u64) {
        let (b, _) = self.live(off);
        let old = self.block(b).refs.fetch_add(1, Ordering::Relaxed);
        assert!(old != 0, "arena: retain of a block without references");
        if old > u64::MAX / 2 {
            // As `Arc`: a count this high is a leak loop; never wrap.
            std::process::abort();
        }
    }

    /// One reference less to the live block at `off`; the last one frees
    /// the block (merging it with its free buddies). Does nothing once the
    /// arena is poisoned. Panics if `off` is not a live block.
    ///
    /// # Safety
    /// The caller gives up a reference it held (one from `alloc`, `retain`,
    /// or handed over by another holder), and does not touch the block's
    /// data after the last release (nor does anyone: it may be reused at
    /// once, by any process).
    pub unsafe fn release(&self, off: u64) {
        let (b, order) = self.live(off);
        if self.is_poisoned() {
            return;
        }
        // RR: pairs with the Acquire fence (RA) of the thread that frees.
        let old = self.block(b).refs.fetch_sub(1, Ordering::Release);
        assert!(old != 0, "arena: release of a block without references");
        if old != 1 {
            return;
        }
        // RA: pairs with every holder's RR; their data accesses happen
        // before the free and the block's reuse.
        fence(Ordering::Acquire);
        // The block is ours alone: give back a big one's pages unlocked.
        let clean = order >= self.big_order && self.scrub(b, order);
        let Some(g) = self.lock() else {
            return; // poisoned: leaked
        };
        self.free(&g, b, order, clean);
    }

    /// The counters (consistent: read under the lock, unless poisoned).
    pub fn stats(&self) -> ArenaStats {
        let g = self.lock();
        let l = self.lock_line();
        let s = ArenaStats {
            capacity: 1 << self.max_order,
            live_blocks: l.live_blocks.load(Ordering::Relaxed),
            live_bytes: l.live_bytes.load(Ordering::Relaxed),
            free_blocks: l.free_blocks.load(Ordering::Relaxed),
            free_bytes: l.free_bytes.load(Ordering::Relaxed),
            poisoned: self.is_poisoned(),
        };
        drop(g);
        s
    }

    // ----- the lock ----------------------------------------------------

    /// Takes the lock; `None` if the arena is (or becomes, because its
    /// owner died) poisoned.
    fn lock(&self) -> Option<Locked<'_>> {
        let l = self.lock_line();
        let me = std::process::id();
        debug_assert!(me != 0 && me & WAITERS == 0);
        let mut spins = SPINS;
        #[cfg(not(loom))]
        let mut since: Option<std::time::Instant> = None;
        // Whether this thread slept: it then takes the lock with the
        // waiters bit set (others may still sleep).
        let mut slept = false;
        loop {
            if l.poisoned.load(Ordering::Relaxed) != 0 {
                return None;
            }
            let v = l.word.load(Ordering::Relaxed);
            if v == 0 {
                let new = if slept { me | WAITERS } else { me };
                // LA: pairs with the Release swap (LR) in `Locked::drop`.
                if l.word
                    .compare_exchange(0, new, Ordering::Acquire, Ordering::Relaxed)
                    .is_ok()
                {
                    return Some(Locked { arena: self });
                }
                continue;
            }
            if spins > 0 {
                spins -= 1;
                sync::spin_hint();
                continue;
            }
            if v & WAITERS == 0
                && l.word
                    .compare_exchange(v, v | WAITERS, Ordering::Relaxed, Ordering::Relaxed)
                    .is_err()
            {
                continue;
            }
            #[cfg(not(loom))]
            let start = *since.get_or_insert_with(std::time::Instant::now);
            self.futex.wait(&l.word, v | WAITERS, Some(WAIT_SLICE));
            slept = true;
            #[cfg(not(loom))]
            if start.elapsed() >= self.patience {
                let owner = l.word.load(Ordering::Relaxed) & !WAITERS;
                if owner != 0 && !(self.owner_alive)(owner) {
                    l.poisoned.store(1, Ordering::Relaxed);
                    self.futex.wake_all(&l.word);
                    return None;
                }
            }
        }
    }

    // ----- free lists (under the lock) ---------------------------------

    /// Puts free block `b` at the front of its list (and counts it).
    fn push(&self, _: &Locked<'_>, b: u64, order: u32) {
        let head = self.head(order);
        let first = head.load(Ordering::Relaxed);
        let blk = self.block(b);
        blk.next.store(first, Ordering::Relaxed);
        blk.prev.store(NIL, Ordering::Relaxed);
        if first != NIL {
            self.block(first).prev.store(b, Ordering::Relaxed);
        }
        head.store(b, Ordering::Relaxed);
        self.lock_line().free_blocks.fetch_add(1, Ordering::Relaxed);
    }

    /// Takes free block `b` off its list (and uncounts it).
    fn unlink(&self, _: &Locked<'_>, b: u64, order: u32) {
        let blk = self.block(b);
        let next = blk.next.load(Ordering::Relaxed);
        let prev = blk.prev.load(Ordering::Relaxed);
        if prev == NIL {
            self.head(order).store(next, Ordering::Relaxed);
        } else {
            self.block(prev).next.store(next, Ordering::Relaxed);
        }
        if next != NIL {
            self.block(next).prev.store(prev, Ordering::Relaxed);
        }
        self.lock_line().free_blocks.fetch_sub(1, Ordering::Relaxed);
    }

    /// Frees the live block `b` of `order` (its data zero if `clean`),
    /// merging it with its free buddies.
    fn free(&self, g: &Locked<'_>, mut b: u64, order: u32, mut clean: bool) {
        let l = self.lock_line();
        let size = 1u64 << order;
        l.live_blocks.fetch_sub(1, Ordering::Relaxed);
        l.live_bytes.fetch_sub(size, Ordering::Relaxed);
        l.free_bytes.fetch_add(size, Ordering::Relaxed);
        let mut k = order;
        while k < self.max_order {
            let buddy = b ^ (1 << k);
            if self.entry(buddy).load(Ordering::Relaxed) != MAP_FREE | k as u8 {
                break;
            }
            let buddy_clean = self.block(buddy).tag.load(Ordering::Relaxed) & TAG_CLEAN != 0;
            self.unlink(g, buddy, k);
            let mut merged_clean = clean && buddy_clean;
            if !merged_clean && k + 1 >= self.big_order {
                // Keep big free blocks clean: scrub the dirty part(s).
                let a = clean || self.scrub(b, k);
                let c = buddy_clean || self.scrub(buddy, k);
                merged_clean = a && c;
            }
            let (lo, hi) = (b.min(buddy), b.max(buddy));
            self.entry(hi).store(0, Ordering::Relaxed);
            if merged_clean {
                self.zero_header(hi);
            }
            b = lo;
            k += 1;
            clean = merged_clean;
        }
        // Merged with nothing: the header is the live block's; otherwise the
        // lower buddy's. Either way a block start.
        let blk = self.block(b);
        blk.tag.store(tag(MAP_FREE, k, clean), Ordering::Relaxed);
        blk.refs.store(0, Ordering::Relaxed);
        self.entry(b).store(MAP_FREE | k as u8, Ordering::Relaxed);
        self.push(g, b, k);
    }

    /// Zeroes the header of block `hi`, which became data of a clean merged
    /// block (atomic stores: a stale `offset_of` may read it). Under loom
    /// the header keeps loom's atomics (the models do not check zeroes).
    fn zero_header(&self, hi: u64) {
        #[cfg(not(loom))]
        {
            let blk = self.block(hi);
            for w in [&blk.tag, &blk.refs, &blk.next, &blk.prev]
                .into_iter()
                .chain(&blk.spare)
            {
                w.store(0, Ordering::Relaxed);
            }
        }
        #[cfg(loom)]
        let _ = hi;
    }

    /// Makes the data of block `b` (order `order`, ours: freed or free and
    /// under the lock) read as zero by giving its pages back; whether that
    /// worked. See "Zeroed memory" in the module docs.
    fn scrub(&self, b: u64, order: u32) -> bool {
        #[cfg(any(miri, loom))]
        {
            let _ = (b, order);
            false
        }
        #[cfg(not(any(miri, loom)))]
        {
            use std::sync::atomic::Ordering::Relaxed;
            let start = self.block_ptr(b).wrapping_add(HDR);
            let end = self.block_ptr(b).wrapping_add(1 << order);
            let page = page_size();
            let a = start.addr().next_multiple_of(page);
            let e = end.addr() & !(page - 1);
            if e <= a {
                return false;
            }
            let (pa, pe) = (
                start.wrapping_add(a - start.addr()),
                start.wrapping_add(e - start.addr()),
            );
            let area = self.block_ptr(0).addr();
            self.unmapped(a - area, e - area);
            if self.can_remove.load(Relaxed) {
                // SAFETY: `[pa, pe)` is whole pages inside block `b`, which
                // is ours: nobody reads or writes its data meanwhile, and
                // punching them out only zeroes them (in every mapping).
                if unsafe { libc::madvise(pa.cast(), e - a, libc::MADV_REMOVE) } == 0 {
                    // SAFETY: the partial pages at both ends, inside the
                    // block's data (ours, as above).
                    unsafe {
                        start.write_bytes(0, a - start.addr());
                        pe.write_bytes(0, end.addr() - e);
                    }
                    return true;
                }
                self.can_remove.store(false, Relaxed);
            }
            // SAFETY: as above; DONTNEED gives back private pages (zeroing
            // them) and merely unmaps shared ones: either way the bytes stay
            // valid, and we do not count on zeroes.
            unsafe { libc::madvise(pa.cast(), e - a, libc::MADV_DONTNEED) };
            false
        }
    }

    /// Loom: the block's data is written (the allocation's zeroing, a
    /// model's use), for the race detector. Nothing outside loom.
    #[inline]
    fn shadow_write(&self, b: u64, order: u32) {
        #[cfg(loom)]
        {
            let first = (b >> MIN_ORDER) as usize;
            for i in first..first + (1 << (order - MIN_ORDER)) {
                self.shadow.write(i, || ());
            }
        }
        #[cfg(not(loom))]
        let _ = (b, order);
    }

    /// Loom models: the caller writes the data of its live block `off`
    /// (it must be the only holder).
    #[cfg(all(test, loom))]
    pub(crate) fn touch_write(&self, off: u64) {
        let (b, order) = self.live(off);
        self.shadow_write(b, order);
    }

    /// Loom models: the caller reads the data of its live block `off`.
    #[cfg(all(test, loom))]
    pub(crate) fn touch_read(&self, off: u64) {
        let (b, order) = self.live(off);
        let first = (b >> MIN_ORDER) as usize;
        for i in first..first + (1 << (order - MIN_ORDER)) {
            self.shadow.read(i, || ());
        }
    }

    /// Tests: inject the owner liveness check and the patience.
    #[cfg(all(test, not(loom)))]
    pub(crate) fn set_liveness(&mut self, alive: fn(u32) -> bool, patience: Duration) {
        self.owner_alive = alive;
        self.patience = patience;
    }

    /// Tests: checks every invariant of the block structure (under the
    /// lock) and returns the free blocks per order. Panics on a violation.
    #[cfg(test)]
    pub(crate) fn verify(&self) -> Vec<(u32, u64)> {
        let g = self.lock().expect("not poisoned");
        let mut free = Vec::new();
        let (mut live, mut live_bytes) = (0, 0);
        let mut b = 0u64;
        while b < 1 << self.max_order {
            let e = self.entry(b).load(Ordering::Relaxed);
            let k = (e & MAP_ORDER) as u32;
            assert!(e & (MAP_FREE | MAP_LIVE) != 0, "no block at {b:#x}");
            assert!((MIN_ORDER..=self.max_order).contains(&k) && b.is_multiple_of(1 << k));
            for i in (b + MIN_BLOCK as u64..b + (1 << k)).step_by(MIN_BLOCK) {
                assert_eq!(self.entry(i).load(Ordering::Relaxed), 0, "inside {b:#x}");
            }
            let t = self.block(b).tag.load(Ordering::Relaxed);
            if e & MAP_FREE != 0 {
                assert_eq!(
                    t & !TAG_CLEAN,
                    tag(MAP_FREE, k, false),
                    "free tag at {b:#x}"
                );
                if k < self.max_order {
                    let buddy = b ^ (1 << k);
                    assert_ne!(
                        self.entry(buddy).load(Ordering::Relaxed),
                        MAP_FREE | k as u8,
                        "free buddies {b:#x}, {buddy:#x} of order {k} not merged"
                    );
                }
                free.push((k, b));
            } else {
                assert_eq!(t, tag(MAP_LIVE, k, false), "live tag at {b:#x}");
                assert!(self.block(b).refs.load(Ordering::Relaxed) > 0);
                live += 1;
                live_bytes += 1u64 << k;
            }
            b += 1 << k;
        }
        // The free lists hold exactly the free blocks, doubly linked.
        let mut listed = Vec::new();
        for k in MIN_ORDER..=self.max_order {
            let (mut prev, mut cur) = (NIL, self.head(k).load(Ordering::Relaxed));
            while cur != NIL {
                assert_eq!(self.block(cur).prev.load(Ordering::Relaxed), prev);
                listed.push((k, cur));
                prev = cur;
                cur = self.block(cur).next.load(Ordering::Relaxed);
            }
        }
        listed.sort_unstable();
        let mut sorted = free.clone();
        sorted.sort_unstable();
        assert_eq!(listed, sorted, "free lists differ from the map");
        let l = self.lock_line();
        assert_eq!(l.live_blocks.load(Ordering::Relaxed), live);
        assert_eq!(l.live_bytes.load(Ordering::Relaxed), live_bytes);
        assert_eq!(l.free_blocks.load(Ordering::Relaxed), free.len() as u64);
        assert_eq!(
            l.free_bytes.load(Ordering::Relaxed),
            (1u64 << self.max_order) - live_bytes
        );
        drop(g);
        free
    }
}

/// Whether process `pid` lives: `kill(pid, 0)` does not fail with `ESRCH`
/// and it is not a zombie (a dead child its parent has not reaped, for
/// which `kill` succeeds). Unknown counts as alive.
fn process_alive(pid: u32) -> bool {
    #[cfg(any(miri, loom))]
    {
        let _ = pid;
        true
    }
    #[cfg(not(any(miri, loom)))]
    {
        let Ok(p) = libc::pid_t::try_from(pid) else {
            return false;
        };
        // SAFETY: signal 0 only checks existence and permission.
        if unsafe { libc::kill(p, 0) } != 0
            && std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH)
        {
            return false;
        }
        // "<pid> (<comm>) <state> ...": the state follows the last ')'.
        match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            Ok(stat) => !matches!(
                stat.rsplit_once(')')
                    .and_then(|(_, r)| r.trim_start().chars().next()),
                Some('Z' | 'X')
            ),
            Err(e) => e.kind() != std::io::ErrorKind::NotFound,
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    //! Unit tests, small enough for Miri (`cargo +"$SNET_NIGHTLY" miri test
    //! -p snet-shm --lib arena`, the nightly of `scripts/toolchains.sh`), which checks the unsafe code and, with
    //! threads, the refcount orderings (its data-race detector sees the
    //! plain data accesses). The tests that need system calls (madvise,
    //! kill, fork, memfd) are skipped under Miri.

    use super::*;
    use crate::HeapRegion;
    use std::sync::Arc;

    /// 16 blocks of 4 KiB (orders 12 to 16).
    const CAP: usize = 64 * 1024;

    fn arena(capacity: usize) -> (Arc<HeapRegion>, Arena) {
        let len = Arena::layout(capacity);
        let region = Arc::new(HeapRegion::new(len));
        // SAFETY: the region is zeroed, aligned, and outlives the arena in
        // every test (held alongside).
        let a = unsafe { Arena::init(region.as_ptr(), region.len()) }.unwrap();
        (region, a)
    }

    /// A tiny deterministic generator (xorshift64).
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }

        fn below(&mut self, n: u64) -> u64 {
            self.next() % n
        }
    }

    // The data is not borrowed from the handle (it is the region's).
    #[allow(clippy::mut_from_ref)]
    fn bytes(a: &Arena, off: u64) -> &mut [u8] {
        // SAFETY: the tests only call this for a live block they hold and
        // do not let two such slices of one block coexist.
        unsafe { std::slice::from_raw_parts_mut(a.data(off), a.capacity(off)) }
    }

    /// Whether every byte of `d` is `v` (a `memcmp`: fast under Miri too).
    fn is_all(d: &[u8], v: u8) -> bool {
        d == vec![v; d.len()].as_slice()
    }

    fn empty(a: &Arena) -> bool {
        a.verify() == [(a.max_order, 0)]
    }

    #[test]
    fn layout_and_geometry() {
        assert_eq!(Arena::layout(0), Arena::layout(MIN_BLOCK));
        assert_eq!(Arena::layout(4097), Arena::layout(8192));
        // Header 640 bytes, a 16-byte map, the area at 4096.
        assert_eq!(Arena::layout(CAP), 4096 + CAP);
        assert_eq!(Arena::layout(CAP - 1), 4096 + CAP);
        let len = Arena::layout(CAP);
        let region = HeapRegion::new(len + 4096);
        // SAFETY: the region outlives every handle below and is zeroed.
        unsafe {
            assert_eq!(
                Arena::init(region.as_ptr(), 100).unwrap_err(),
                ArenaError::TooSmall {
                    needed: Arena::layout(0),
                    len: 100
                }
            );
            assert_eq!(
                Arena::init(region.as_ptr().add(8), len).unwrap_err(),
                ArenaError::Misaligned
            );
            assert_eq!(
                Arena::attach(region.as_ptr(), len).unwrap_err(),
                ArenaError::NotInitialised
            );
            // The largest arena that fits: 64 KiB (128 KiB would not).
            let a = Arena::init(region.as_ptr(), len + 4096).unwrap();
            assert_eq!(a.max_alloc(), CAP - HDR);
            let b = Arena::attach(region.as_ptr(), len).unwrap();
            assert_eq!(
                Arena::attach(region.as_ptr(), len - 1).unwrap_err(),
                ArenaError::TooSmall {
                    needed: len,
                    len: len - 1
                }
            );
            let empty = ArenaStats {
                capacity: CAP as u64,
                live_blocks: 0,
                live_bytes: 0,
                free_blocks: 1,
                free_bytes: CAP as u64,
                poisoned: false,
            };
            assert_eq!(a.stats(), empty);
            // Blocks of one handle are the other's.
            let x = b.alloc(10).unwrap();
            assert_eq!(a.offset_of(b.data(x), 10), Some(x));
            a.release(x);
            assert_eq!(b.stats(), empty);
        }
    }

    #[test]
    fn sizes_alignment_and_zeroes() {
        let (_r, a) = arena(CAP);
        let cases = [
            (0, MIN_BLOCK),
            (1, MIN_BLOCK),
            (MIN_BLOCK - HDR, MIN_BLOCK),
            (MIN_BLOCK - HDR + 1, 2 * MIN_BLOCK),
            (3 * MIN_BLOCK, 4 * MIN_BLOCK),
        ];
        let mut held = Vec::new();
        let mut bytes_live = 0;
        for (len, block) in cases {
            let x = a.alloc(len).unwrap();
            assert_eq!(a.capacity(x), block - HDR);
            assert!(a.data(x).addr().is_multiple_of(ALIGN));
            assert!(is_all(bytes(&a, x), 0));
            bytes(&a, x).fill(0xa5);
            bytes_live += block as u64;
            held.push(x);
            a.verify();
        }
        let s = a.stats();
        assert_eq!((s.live_blocks, s.live_bytes), (5, bytes_live));
        assert_eq!(a.alloc(CAP - HDR + 1), None);
        assert_eq!(a.alloc(usize::MAX), None);
        for x in held {
            // SAFETY: our reference; not used afterwards.
            unsafe { a.release(x) };
            a.verify();
        }
        assert!(empty(&a));
        // The whole arena in one block, zeroed although all of it was
        // written (merged dirty blocks are cleared on allocation).
        let x = a.alloc(CAP - HDR).unwrap();
        assert!(is_all(bytes(&a, x), 0));
        assert_eq!(a.alloc(0), None);
        // SAFETY: our reference.
        unsafe { a.release(x) };
        assert!(empty(&a));
    }

    #[test]
    fn random_patterns_coalesce_back_to_one_block() {
        let (_r, a) = arena(CAP);
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        let rounds = if cfg!(miri) { 20 } else { 200 };
        for _ in 0..rounds {
            let mut held: Vec<(u64, u8)> = Vec::new();
            // Allocate until the arena refuses three times, freeing now and
            // then, checking each block's contents on release.
            let mut refused = 0;
            while refused < 3 {
                let len = match rng.below(4) {
                    0 => rng.below(64),
                    1 | 2 => rng.below(2 * MIN_BLOCK as u64),
                    _ => rng.below(CAP as u64 / 2),
                } as usize;
                match a.alloc(len) {
                    Some(x) => {
                        let fill = rng.next() as u8 | 1;
                        let d = bytes(&a, x);
                        assert!(is_all(&d[..len], 0), "reused block not zeroed");
                        d.fill(fill);
                        held.push((x, fill));
                    }
                    None => refused += 1,
                }
                if !held.is_empty() && rng.below(3) == 0 {
                    let (x, fill) = held.swap_remove(rng.below(held.len() as u64) as usize);
                    assert!(is_all(bytes(&a, x), fill), "block overwritten");
                    // SAFETY: our reference.
                    unsafe { a.release(x) };
                }
                a.verify();
            }
            while !held.is_empty() {
                let (x, fill) = held.swap_remove(rng.below(held.len() as u64) as usize);
                assert!(is_all(bytes(&a, x), fill), "block overwritten");
                // SAFETY: our reference.
                unsafe { a.release(x) };
            }
            assert!(empty(&a));
        }
    }

    #[test]
    fn exhaustion_then_room_again() {
        let (_r, a) = arena(CAP);
        let held: Vec<u64> = std::iter::from_fn(|| a.alloc(0)).collect();
        assert_eq!(held.len(), CAP / MIN_BLOCK);
        let s = a.stats();
        assert_eq!((s.free_blocks, s.free_bytes), (0, 0));
        assert_eq!(a.alloc(0), None);
        // Two free 4 KiB blocks that are not buddies: still no 8 KiB one.
        // SAFETY: our references, released once each.
        unsafe {
            a.release(held[0]);
            a.release(held[3]);
        }
        assert_eq!(a.alloc(MIN_BLOCK), None);
        let x = a.alloc(1).unwrap();
        assert!(x == held[0] || x == held[3]);
        // Its buddy too: they merge into an 8 KiB block.
        let first = held[0]; // block offset 0: the first split's lower half
        let buddy = first + ((x - first) ^ MIN_BLOCK as u64);
        let mut live: Vec<u64> = held
            .iter()
            .copied()
            .filter(|&o| o != held[0] && o != held[3] && o != buddy)
            .collect();
        // SAFETY: our references, released once each.
        unsafe {
            a.release(buddy);
            a.release(x);
        }
        let y = a.alloc(MIN_BLOCK).unwrap();
        assert_eq!(a.capacity(y), 2 * MIN_BLOCK - HDR);
        assert_eq!(y, x.min(buddy));
        live.push(y);
        a.verify();
        for o in live {
            // SAFETY: as above.
            unsafe { a.release(o) };
        }
        assert!(empty(&a));
    }

    #[test]
    fn offset_of_accepts_only_live_block_starts() {
        let (r, a) = arena(CAP);
        let x = a.alloc(100).unwrap();
        let y = a.alloc(5000).unwrap(); // an 8 KiB block
        let px = a.data(x);
        let py = a.data(y);
        assert_eq!(a.offset_of(px, 0), Some(x));
        assert_eq!(a.offset_of(px, MIN_BLOCK - HDR), Some(x));
        assert_eq!(a.offset_of(px, MIN_BLOCK - HDR + 1), None);
        assert_eq!(a.offset_of(py, 8000), Some(y));
        // Inside blocks: off by one, the header, a 4 KiB step into y (the
        // shape of a block start, but no block starts there).
        assert_eq!(a.offset_of(px.wrapping_add(1), 0), None);
        assert_eq!(a.offset_of(px.wrapping_add(ALIGN), 0), None);
        assert_eq!(a.offset_of(px.wrapping_sub(HDR), 0), None);
        assert_eq!(a.offset_of(py.wrapping_add(MIN_BLOCK), 0), None);
        // Even if the data there forges a live block's header (a copy of
        // x's): the out-of-band map says no block starts there.
        // SAFETY: both headers' bytes are in the region; y's data is ours
        // (only this thread uses the arena).
        unsafe {
            std::ptr::copy_nonoverlapping(px.sub(HDR), py.add(MIN_BLOCK - HDR), HDR);
        }
        assert_eq!(a.offset_of(py.wrapping_add(MIN_BLOCK), 0), None);
        // A free block's data start.
        let free_start = a.data(y + 2 * MIN_BLOCK as u64);
        assert_eq!(a.offset_of(free_start, 0), None);
        // Outside the blocks area: the header, the map, before, after.
        let base = r.as_ptr();
        for p in [
            base,
            base.wrapping_add(700),
            base.wrapping_sub(MIN_BLOCK),
            base.wrapping_add(r.len()),
            base.wrapping_add(r.len() + HDR),
            base.wrapping_add(Arena::layout(CAP) + MIN_BLOCK + HDR),
        ] {
            assert_eq!(a.offset_of(p, 0), None);
        }
        for addr in [0, 1, 64, usize::MAX, usize::MAX - 63] {
            assert_eq!(a.offset_of(std::ptr::without_provenance(addr), 0), None);
        }
        // A heap pointer.
        let v = [0u8; 100];
        assert_eq!(a.offset_of(v.as_ptr(), 0), None);
        // A released block is no block.
        // SAFETY: our references.
        unsafe {
            a.release(x);
            assert_eq!(a.offset_of(px, 0), None);
            a.release(y);
        }
        assert!(empty(&a));
    }

    #[test]
    #[should_panic(expected = "not a live block")]
    fn capacity_of_garbage_panics() {
        let (_r, a) = arena(CAP);
        a.capacity(12345);
    }

    #[test]
    #[should_panic(expected = "not a live block")]
    fn retain_of_a_free_block_panics() {
        let (_r, a) = arena(CAP);
        let x = a.alloc(0).unwrap();
        // SAFETY: our reference.
        unsafe { a.release(x) };
        a.retain(x);
    }

    /// Threads retain and release one block concurrently; the main thread
    /// drops its reference first, so the last release (and the free) is a
    /// worker's. Each worker reads the block before its last release; once
    /// all have released (a Relaxed counter says so: it orders nothing),
    /// each allocates a block of the same size and writes it: the first
    /// gets the freed block back and zeroes it, so a free that is not
    /// ordered after every holder's read (the refcount's Release and
    /// Acquire) is a data race Miri reports. Freed exactly once: `verify`
    /// and the counters agree, and a double free would trip the "without
    /// references" assertion.
    #[test]
    fn refcounts_across_threads() {
        let (_r, a) = arena(CAP);
        let a = Arc::new(a);
        let rounds = if cfg!(miri) { 10 } else { 200 };
        let threads = if cfg!(miri) { 3 } else { 4 };
        for round in 0..rounds {
            let released = Arc::new(std::sync::atomic::AtomicUsize::new(0));
            let x = a.alloc(256).unwrap();
            bytes(&a, x)[..256].fill(round as u8);
            for _ in 0..threads {
                a.retain(x);
            }
            let hs: Vec<_> = (0..threads)
                .map(|_| {
                    let (a, released) = (a.clone(), released.clone());
                    std::thread::spawn(move || {
                        for _ in 0..if cfg!(miri) { 2 } else { 50 } {
                            a.retain(x);
                            // SAFETY: the reference just taken.
                            unsafe { a.release(x) };
                        }
                        // SAFETY: the block is live (we hold a reference);
                        // only read.
                        let d = unsafe { std::slice::from_raw_parts(a.data(x), 256) };
                        assert!(is_all(d, round as u8));
                        // SAFETY: the reference the main thread gave us.
                        unsafe { a.release(x) };
                        released.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        while released.load(std::sync::atomic::Ordering::Relaxed) < threads {
                            std::thread::yield_now();
                        }
                        let y = a.alloc(256).unwrap();
                        bytes(&a, y).fill(0xff);
                        // SAFETY: our reference.
                        unsafe { a.release(y) };
                    })
                })
                .collect();
            // SAFETY: the allocation's reference.
            unsafe { a.release(x) };
            for h in hs {
                h.join().unwrap();
            }
            assert!(empty(&a));
        }
    }

    /// Threads allocating, writing, handing over and freeing at once: the
    /// lock keeps the free lists consistent.
    #[test]
    fn concurrent_alloc_and_free() {
        let (_r, a) = arena(CAP);
        let a = Arc::new(a);
        let per = if cfg!(miri) { 60 } else { 3000 };
        let hs: Vec<_> = (0..3u64)
            .map(|t| {
                let a = a.clone();
                std::thread::spawn(move || {
                    let mut rng = Rng(t * 7919 + 1);
                    let mut held = Vec::new();
                    for _ in 0..per {
                        let len = rng.below(3 * MIN_BLOCK as u64) as usize;
                        if let Some(x) = a.alloc(len) {
                            let d = bytes(&a, x);
                            assert!(is_all(&d[..len], 0));
                            d.fill(t as u8 + 1);
                            held.push(x);
                        }
                        if held.len() > 2 || (!held.is_empty() && rng.below(2) == 0) {
                            let x = held.swap_remove(0);
                            assert!(is_all(bytes(&a, x), t as u8 + 1));
                            // SAFETY: our reference.
                            unsafe { a.release(x) };
                        }
                    }
                    for x in held {
                        // SAFETY: our reference.
                        unsafe { a.release(x) };
                    }
                })
            })
            .collect();
        for h in hs {
            h.join().unwrap();
        }
        assert!(empty(&a));
    }

    /// A dead owner, simulated: a pid in the lock word that the (injected)
    /// liveness check calls dead.
    #[test]
    fn dead_owner_poisons() {
        use std::sync::atomic::AtomicUsize;
        static ASKED: AtomicUsize = AtomicUsize::new(0);
        let (_r, mut a) = arena(CAP);
        a.set_liveness(
            |pid| {
                ASKED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                pid != 4_000_001
            },
            Duration::ZERO,
        );
        let x = a.alloc(0).unwrap();
        a.lock_line().word.store(4_000_001, Ordering::Relaxed);
        assert_eq!(a.alloc(0), None);
        assert!(a.is_poisoned());
        assert_eq!(ASKED.load(std::sync::atomic::Ordering::Relaxed), 1);
        let s = a.stats();
        assert!(s.poisoned);
        assert_eq!(s.live_blocks, 1);
        // Release does nothing (no lock to take, nothing to corrupt), and
        // nothing waits for the dead owner again.
        // SAFETY: our reference.
        unsafe { a.release(x) };
        assert_eq!(a.alloc(0), None);
        assert_eq!(a.stats(), s);
        assert_eq!(ASKED.load(std::sync::atomic::Ordering::Relaxed), 1);
        assert_eq!(a.offset_of(a.data(x), 0), Some(x));
    }

    /// A live owner holding the lock long is waited for, not poisoned.
    #[test]
    fn live_owner_is_waited_for() {
        let (_r, mut a) = arena(CAP);
        a.set_liveness(|_| true, Duration::ZERO);
        let a = Arc::new(a);
        let g = a.lock().unwrap();
        let t = {
            let a = a.clone();
            std::thread::spawn(move || a.alloc(0))
        };
        std::thread::sleep(Duration::from_millis(if cfg!(miri) { 5 } else { 150 }));
        drop(g);
        let x = t.join().unwrap().unwrap();
        assert!(!a.is_poisoned());
        // SAFETY: our reference.
        unsafe { a.release(x) };
        assert!(empty(&a));
    }

    /// A zeroed shared anonymous mapping (shmem: survives `fork` as shared
    /// memory, supports `MADV_REMOVE`), unmapped on drop.
    #[cfg(not(miri))]
    struct Shared(*mut u8, usize);

    #[cfg(not(miri))]
    impl Shared {
        fn new(len: usize) -> Shared {
            // SAFETY: a fresh mapping; checked below.
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
            assert_ne!(p, libc::MAP_FAILED);
            Shared(p.cast(), len)
        }

        fn arena(&self) -> Arena {
            // SAFETY: zeroed, page-aligned, unmapped only when `self` drops,
            // after the arena in every test.
            unsafe { Arena::init(self.0, self.1) }.unwrap()
        }
    }

    #[cfg(not(miri))]
    impl Drop for Shared {
        fn drop(&mut self) {
            // SAFETY: our mapping, no longer used.
            unsafe { libc::munmap(self.0.cast(), self.1) };
        }
    }

    /// A pid no process has (`kill` says `ESRCH`).
    #[cfg(not(miri))]
    fn dead_pid() -> u32 {
        (1..4_000_000u32)
            .rev()
            .find(|&p| {
                // SAFETY: signal 0 only checks existence.
                let r = unsafe { libc::kill(p as i32, 0) };
                r != 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH)
            })
            .unwrap()
    }

    /// The real liveness check: a pid that does not exist holds the lock.
    #[cfg(not(miri))]
    #[test]
    fn nonexistent_owner_poisons() {
        let (_r, a) = arena(CAP);
        assert!(process_alive(std::process::id()));
        let pid = dead_pid();
        assert!(!process_alive(pid));
        a.lock_line().word.store(pid, Ordering::Relaxed);
        assert_eq!(a.alloc(0), None);
        assert!(a.is_poisoned());
    }

    /// A child process takes the lock and exits without releasing it; the
    /// parent does not reap it (a zombie, for which `kill` succeeds) until
    /// the arena is poisoned.
    #[cfg(not(miri))]
    #[test]
    fn zombie_owner_poisons() {
        let region = Shared::new(Arena::layout(CAP));
        let a = region.arena();
        let x = a.alloc(0).unwrap();
        // SAFETY: the child only uses atomics, getpid and `_exit`
        // (async-signal-safe after a fork of a threaded process).
        let child = unsafe { libc::fork() };
        assert!(child >= 0);
        if child == 0 {
            std::mem::forget(a.lock());
            // SAFETY: ends the child without running anything of the parent.
            unsafe { libc::_exit(0) };
        }
        // Wait for its death without reaping it.
        // SAFETY: `info` is written by waitid.
        unsafe {
            let mut info: libc::siginfo_t = std::mem::zeroed();
            let r = libc::waitid(
                libc::P_PID,
                child as libc::id_t,
                &mut info,
                libc::WEXITED | libc::WNOWAIT,
            );
            assert_eq!(r, 0);
        }
        assert_eq!(a.lock_line().word.load(Ordering::Relaxed), child as u32);
        assert!(!process_alive(child as u32), "a zombie counts as dead");
        assert_eq!(a.alloc(0), None);
        assert!(a.is_poisoned());
        // SAFETY: our reference; a no-op now.
        unsafe { a.release(x) };
        assert_eq!(a.stats().live_blocks, 1);
        // SAFETY: reaps our child.
        unsafe { libc::waitpid(child, std::ptr::null_mut(), 0) };
    }

    /// Big blocks in a shared memfd mapping: freed pages go back to the
    /// system (`mincore` shows them gone), free blocks of 1 MiB and more
    /// are clean, reuse reads zeroes.
    #[cfg(not(miri))]
    #[test]
    fn big_blocks_give_pages_back() {
        let len = Arena::layout(8 << 20);
        // SAFETY: a fresh memfd, sized, mapped shared; unmapped at the end.
        let base = unsafe {
            let fd = libc::memfd_create(c"snet-arena-test".as_ptr(), libc::MFD_CLOEXEC);
            assert!(fd >= 0);
            assert_eq!(libc::ftruncate(fd, len as libc::off_t), 0);
            let p = libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd,
                0,
            );
            libc::close(fd);
            assert_ne!(p, libc::MAP_FAILED);
            p.cast::<u8>()
        };
        // SAFETY: the mapping is zeroed, page-aligned, and unmapped only
        // after the last use of the arena.
        let a = unsafe { Arena::init(base, len) }.unwrap();
        let resident = |off: u64, n: usize| -> usize {
            let p = a.data(off).wrapping_add(4096 - HDR);
            let pages = n / 4096;
            let mut v = vec![0u8; pages];
            // SAFETY: whole pages inside the mapping; `v` has one byte each.
            let r = unsafe { libc::mincore(p.cast(), pages * 4096, v.as_mut_ptr()) };
            assert_eq!(r, 0);
            v.iter().filter(|&&b| b & 1 != 0).count()
        };
        let clean_free_blocks = |a: &Arena| {
            a.verify()
                .iter()
                .filter(|&&(k, _)| k >= BIG_ORDER)
                .all(|&(_, b)| a.block(b).tag.load(Ordering::Relaxed) & TAG_CLEAN != 0)
        };
        let x = a.alloc(3 << 20).unwrap(); // a 4 MiB block
        bytes(&a, x).fill(0x5a);
        assert_eq!(resident(x, 3 << 20), 3 << 20 >> 12);
        // SAFETY: our reference.
        unsafe { a.release(x) };
        assert_eq!(resident(x, 3 << 20), 0, "pages not given back");
        assert!(empty(&a) && clean_free_blocks(&a));
        let y = a.alloc(3 << 20).unwrap();
        assert_eq!(y, x);
        assert!(is_all(bytes(&a, y), 0));
        // SAFETY: our reference.
        unsafe { a.release(y) };
        // Small dirty blocks merging up to 1 MiB and beyond are scrubbed.
        let small: Vec<u64> = (0..300).map(|_| a.alloc(5000).unwrap()).collect();
        for &s in &small {
            bytes(&a, s).fill(0xee);
        }
        for s in small {
            // SAFETY: our references.
            unsafe { a.release(s) };
        }
        assert!(empty(&a) && clean_free_blocks(&a));
        let z = a.alloc(a.max_alloc()).unwrap();
        assert!(is_all(bytes(&a, z), 0));
        // SAFETY: our reference; then the mapping goes.
        unsafe {
            a.release(z);
            libc::munmap(base.cast(), len);
        }
    }

    /// In a private mapping (`MADV_REMOVE` fails) big blocks stay dirty and
    /// allocation zeroes them.
    #[cfg(not(miri))]
    #[test]
    fn big_blocks_in_private_memory_are_zeroed_on_allocation() {
        let (_r, a) = arena(4 << 20);
        let x = a.alloc(3 << 20).unwrap();
        bytes(&a, x).fill(0x77);
        // SAFETY: our reference.
        unsafe { a.release(x) };
        assert!(!a.can_remove.load(std::sync::atomic::Ordering::Relaxed));
        let y = a.alloc(2 << 20).unwrap();
        assert!(is_all(&bytes(&a, y)[..2 << 20], 0));
        // SAFETY: our reference.
        unsafe { a.release(y) };
        assert!(empty(&a));
    }

    /// A dirty block reused for a smaller request: what was asked for is
    /// zero, the rest of the block is not written (a memset of bytes nobody
    /// reads, and for big blocks the faults of their pages).
    #[test]
    fn allocation_zeroes_what_was_asked_for() {
        let (_r, a) = arena(CAP);
        let x = a.alloc(7000).unwrap(); // an 8 KiB block
        bytes(&a, x).fill(0xee);
        // SAFETY: our reference.
        unsafe { a.release(x) };
        let y = a.alloc(5000).unwrap();
        assert_eq!(y, x);
        assert!(is_all(&bytes(&a, y)[..5000], 0));
        assert!(is_all(&bytes(&a, y)[5000..], 0xee));
        // SAFETY: our reference.
        unsafe { a.release(y) };
        assert!(empty(&a));
    }

    /// This thread's minor page faults so far.
    #[cfg(not(miri))]
    fn minor_faults() -> i64 {
        // SAFETY: getrusage writes the struct it is given.
        unsafe {
            let mut u: libc::rusage = std::mem::zeroed();
            assert_eq!(libc::getrusage(libc::RUSAGE_THREAD, &mut u), 0);
            u.ru_minflt
        }
    }

    /// A fresh memfd of `len` bytes (zeroed) mapped shared twice: two
    /// mappings stand for two processes. The caller unmaps both.
    #[cfg(not(miri))]
    fn memfd_mapped_twice(len: usize) -> (*mut u8, *mut u8) {
        // SAFETY: a fresh memfd, sized, mapped shared twice; closing the fd
        // keeps the mappings.
        unsafe {
            let fd = libc::memfd_create(c"snet-arena-test".as_ptr(), libc::MFD_CLOEXEC);
            assert!(fd >= 0);
            assert_eq!(libc::ftruncate(fd, len as libc::off_t), 0);
            let map = || {
                let p = libc::mmap(
                    std::ptr::null_mut(),
                    len,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_SHARED,
                    fd,
                    0,
                );
                assert_ne!(p, libc::MAP_FAILED);
                p.cast::<u8>()
            };
            let v = (map(), map());
            libc::close(fd);
            v
        }
    }

    /// A memfd of `len` bytes mapped shared twice (two mappings stand for
    /// two processes), with a fresh arena in it that never gives pages back
    /// (as the transport's): `(init handle, attached handle, unmap)`.
    #[cfg(not(miri))]
    fn two_mappings(len: usize) -> (Arena, Arena, impl FnOnce()) {
        // The closure unmaps both, after the handles' last use (the
        // callers' order).
        let (one, two) = memfd_mapped_twice(len);
        // SAFETY: zeroed, page-aligned, unmapped only by the closure. Freed
        // blocks keep their pages (the transport's default).
        let a = unsafe { Arena::init_with(one, len, usize::MAX) }.unwrap();
        // SAFETY: as above; `a` initialised it.
        let b = unsafe { Arena::attach(two, len) }.unwrap();
        let unmap = move || {
            // SAFETY: the callers call this after their last use.
            unsafe {
                libc::munmap(one.cast(), len);
                libc::munmap(two.cast(), len);
            }
        };
        (a, b, unmap)
    }

    /// Big blocks freed (by any process) go back to a process that mapped
    /// them before: its next allocation of that size takes one of them, not
    /// the first free block, and costs no page fault. Two mappings of one
    /// memfd stand for two processes; "b" uses the three lower blocks of
    /// 1 MiB, "a" the fourth; after all are freed (and merged into one
    /// free block), "a" gets the fourth again and "b" one of its own.
    #[cfg(not(miri))]
    #[test]
    fn freed_blocks_go_back_where_they_are_mapped() {
        let (a, b, unmap) = two_mappings(Arena::layout(8 << 20));
        let n = (1 << 20) - HDR;
        let ys: Vec<u64> = (0..3).map(|_| b.alloc(n).unwrap()).collect();
        let x = a.alloc(n).unwrap();
        if !a.can_populate.load(std::sync::atomic::Ordering::Relaxed) {
            eprintln!("MADV_POPULATE_WRITE not supported here: nothing to check");
            for o in ys.into_iter().chain([x]) {
                // SAFETY: our references.
                unsafe { b.release(o) };
            }
            unmap();
            return;
        }
        bytes(&a, x).fill(1);
        for &y in &ys {
            // SAFETY: `y` is b's; this mapping writes it.
            unsafe { std::slice::from_raw_parts_mut(b.data(y), n) }.fill(2);
        }
        // Freed by the other side (a receiver drops the last reference).
        for o in ys.iter().copied().chain([x]) {
            // SAFETY: our references, not used afterwards.
            unsafe { b.release(o) };
        }
        assert!(empty(&a), "all merged into one free block");
        let before = minor_faults();
        let x2 = a.alloc(n).unwrap();
        let d = bytes(&a, x2);
        let zeroed = d[..n].iter().all(|&v| v == 0);
        d.fill(3);
        let faults = minor_faults() - before;
        assert!(zeroed);
        assert_eq!(x2, x, "a's block again");
        // The data's 256 pages fault none; the allocator's own writes to
        // the headers of the free blocks it splits off (pages "b" used) may.
        assert!(faults < 8, "reusing a mapped block faulted {faults} times");
        let y2 = b.alloc(n).unwrap();
        assert!(ys.contains(&y2), "b gets a block it mapped");
        a.verify();
        // SAFETY: our references; then the mappings go.
        unsafe {
            a.release(x2);
            b.release(y2);
        }
        assert!(empty(&a));
        unmap();
    }

    /// A big block's pages are mapped in one system call, by the process
    /// that allocates it and by one that receives it (two mappings of one
    /// memfd stand for two processes): neither then faults on its bytes.
    #[cfg(not(miri))]
    #[test]
    fn prefault_maps_big_blocks_without_faults() {
        let len = Arena::layout(16 << 20);
        // Unmapped at the end.
        let (one, two) = memfd_mapped_twice(len);
        // SAFETY: zeroed, page-aligned, unmapped only after the last use.
        let a = unsafe { Arena::init(one, len) }.unwrap();
        // SAFETY: as above; `a` initialised it.
        let b = unsafe { Arena::attach(two, len) }.unwrap();
        let n = 4 << 20;
        let x = a.alloc(n).unwrap();
        if !a.can_populate.load(std::sync::atomic::Ordering::Relaxed) {
            eprintln!("MADV_POPULATE_WRITE not supported here: nothing to check");
            return;
        }
        let allocated = minor_faults();
        bytes(&a, x)[..n].fill(3);
        let written = minor_faults();
        b.prefault(x, n, false);
        let mapped = minor_faults();
        // SAFETY: `x` is live (a holds it); the other mapping reads it.
        let seen = unsafe { std::slice::from_raw_parts(b.data(x), n) };
        assert_eq!(
            std::hint::black_box(seen)
                .iter()
                .map(|&v| v as u64)
                .sum::<u64>(),
            3 * n as u64
        );
        let read = minor_faults();
        assert_eq!(written - allocated, 0, "the allocating side faulted");
        assert_eq!(read - mapped, 0, "the receiving side faulted");
        // SAFETY: our reference; then the mappings go.
        unsafe {
            a.release(x);
            libc::munmap(one.cast(), len);
            libc::munmap(two.cast(), len);
        }
    }
}
