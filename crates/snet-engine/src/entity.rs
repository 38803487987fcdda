//! Entities, their inboxes, and what travels on streams.
//!
//! # The licence protocol
//!
//! Every entity has one inbox (the merge of all streams into it; senders are
//! many, the reader is one) and a `scheduled` flag, both under the inbox lock.
//! The flag is the *read licence* of the FRONT paper: whoever sets it from
//! `false` to `true` owns the entity until it clears it again.
//!
//! 1. [`Entity::offer`] locks the inbox. If the entity is idle (not scheduled,
//!    inbox empty) it sets `scheduled` and hands the item straight back to the
//!    sender as [`Offer::Licensed`]: the sender's worker now owns the entity and
//!    will process that item itself ("walk the record") or queue the licence.
//!    Otherwise the item is appended and the offer returns [`Offer::Queued`].
//! 2. The licence holder processes items one by one; between items it takes
//!    the next one with [`Entity::next_or_release`], which — under the same
//!    lock — clears `scheduled` when the inbox is empty. After that call
//!    returns `None`, the holder must not touch the entity's state again.
//! 3. Entity state (`Entity::state`) is only accessed by the licence holder.
//!    The inbox lock orders successive holders: a release (step 2) happens
//!    before the next acquisition (step 1 of a later offer), so each holder
//!    sees all writes of the previous one.
//!
//! Items on one stream therefore never overtake each other: an entity's items
//! are processed in inbox order by exactly one worker at a time.

use smallvec::SmallVec;
use std::cell::UnsafeCell;
use std::collections::VecDeque;

use snet_core::Record;

use crate::sync::{lock, Arc, AtomicUsize, Mutex, Ordering};

/// Stamps of enclosing deterministic combinators, innermost last; and, in
/// a traced run, the trace flow the record is followed in; and, on a node
/// other than 0 of a run that survives a lost node, the record's custody
/// token.
///
/// One pointer wide: records outside deterministic combinators (the common
/// case) carry no stamps and move through the engine as small as possible
/// (a `Rec` of 120 bytes, an `Item` of 128: larger, every move of an item
/// became a call of `memcpy`). The flow id of a followed record (see
/// [`crate::instrument`]) lives beside the stamps, so it costs nothing
/// when tracing is off, and travels wherever the stamps do: every
/// component hands its input's stamps on to its outputs.
///
/// The word is null (nothing), a custody token alone (the `Arc` itself,
/// `Word::token`: the record of a node that receives custody, which has
/// no stamps and no flow), a custody token not made yet (`Word::bits`
/// ending in `0b10`: [`crate::dist::custody::Pending`], the item's
/// identity, which the input manager writes), or a box of the rest
/// (`StampsIn`, its address plus one, `Word::boxed`). A token alone
/// takes no box: the box made for each item from node 0 and dropped when
/// the record was held or stored, both on `bench/soak`'s respawn network,
/// were about 100 instructions an item on a node other than 0
/// (`Net::arrived` 221 to 175, taking the token at a synchrocell 78 to
/// 16).
///
/// A pending token is made an `Arc` by the first look at the record's
/// custody or clone of its stamps ([`Stamps::custody`], `clone`, both
/// through `&self`: the word is in an `UnsafeCell`, and `Stamps` is not
/// `Sync`), or committed without one when the stamps are dropped first.
pub struct Stamps(UnsafeCell<Word>);

/// [`Stamps`]' word (see there): which field is live is told by the
/// address ([`Stamps::kind`]).
union Word {
    /// Null: nothing; odd: `boxed`; else `token`.
    bits: usize,
    token: std::mem::ManuallyDrop<std::sync::Arc<crate::dist::custody::Token>>,
    /// A `Box<StampsIn>`'s pointer plus one byte (a box is aligned to 8).
    boxed: *mut StampsIn,
}

// SAFETY: the word owns a `Box<StampsIn>` or an `Arc<Token>`, both `Send`
// and `Sync`, or a pending token's numbers, and nothing else. (Not `Sync`:
// `&Stamps` may make a pending token, writing the word.)
unsafe impl Send for Stamps {}

#[derive(Clone, Default)]
struct StampsIn {
    v: SmallVec<[u64; 2]>,
    /// 0: not followed.
    flow: u64,
    /// The record's custody token (a run that survives a lost node:
    /// [`crate::dist::custody`]), here for the same reason as `flow`.
    custody: Custody,
}

/// What a [`Stamps`] word holds.
enum Kind<'a> {
    Bare,
    /// A token not made yet ([`Stamps::settle`] makes it).
    Pending,
    Token(&'a std::sync::Arc<crate::dist::custody::Token>),
    Boxed(&'a StampsIn),
}

impl Stamps {
    pub const fn new() -> Stamps {
        Stamps(UnsafeCell::new(Word { bits: 0 }))
    }

    /// Stamps whose word is `w`.
    #[inline]
    fn of(w: Word) -> Stamps {
        Stamps(UnsafeCell::new(w))
    }

    /// The word (shared).
    #[inline]
    fn w(&self) -> &Word {
        // SAFETY: the word is written through `&self` only by `settle`,
        // on a pending word, to which no reference is out (`kind` lends
        // none for it), and only on this thread (`Stamps` is not `Sync`).
        unsafe { &*self.0.get() }
    }

    /// The word (owned).
    #[inline]
    fn wm(&mut self) -> &mut Word {
        self.0.get_mut()
    }

    #[inline]
    fn bits(&self) -> usize {
        // SAFETY: every field is one word; reading it as an address is
        // reading what was written.
        unsafe { self.w().bits }
    }

    /// The word is a pending token.
    #[inline]
    fn pending(&self) -> bool {
        self.bits() & 3 == crate::dist::custody::Pending::TAG
    }

    #[inline]
    fn kind(&self) -> Kind<'_> {
        match self.bits() {
            0 => Kind::Bare,
            // SAFETY: an odd word is a box's pointer plus one (`boxed`).
            b if b & 1 == 1 => Kind::Boxed(unsafe { &*self.w().boxed.wrapping_byte_sub(1) }),
            b if b & 3 == crate::dist::custody::Pending::TAG => Kind::Pending,
            // SAFETY: an even, non-null word not pending is `token`.
            _ => Kind::Token(unsafe { &self.w().token }),
        }
    }

    /// Makes a pending token an `Arc` (on this thread), if the word is one.
    #[inline]
    fn settle(&self) {
        if self.pending() {
            let t = crate::dist::custody::Pending::from_bits(self.bits()).token();
            // SAFETY: the word is pending: no reference into it is out
            // (`kind` lends none for a pending word, and nothing else
            // borrows from it), and no other thread can reach it
            // (`Stamps` is not `Sync`). It owns nothing to drop: the
            // token replaces its numbers.
            unsafe {
                *self.0.get() = Word {
                    token: std::mem::ManuallyDrop::new(t),
                }
            };
        }
    }

    /// Gives the bare stamps of a record that just arrived the pending
    /// custody token `p`.
    #[inline]
    pub(crate) fn set_pending(&mut self, p: crate::dist::custody::Pending) {
        debug_assert!(self.is_bare());
        *self.wm() = Word { bits: p.bits() };
    }

    /// The pending token, if the word is one (for the tests).
    #[cfg(all(test, not(loom)))]
    pub(crate) fn pending_token(&self) -> Option<crate::dist::custody::Pending> {
        self.pending()
            .then(|| crate::dist::custody::Pending::from_bits(self.bits()))
    }

    /// The box, made from what the word holds if it holds no box.
    fn boxed(&mut self) -> &mut StampsIn {
        if self.bits() & 1 == 0 {
            let custody = self.take_token();
            let b = Box::into_raw(Box::new(StampsIn {
                custody,
                ..Default::default()
            }));
            *self.wm() = Word {
                boxed: b.wrapping_byte_add(1),
            };
        }
        // SAFETY: the word is a box's pointer plus one, owned by `self`.
        unsafe { &mut *self.wm().boxed.wrapping_byte_sub(1) }
    }

    /// The box, if the word holds one.
    fn boxed_mut(&mut self) -> Option<&mut StampsIn> {
        // SAFETY: an odd word is a box's pointer plus one, owned by `self`.
        (self.bits() & 1 == 1).then(|| unsafe { &mut *self.wm().boxed.wrapping_byte_sub(1) })
    }

    /// Takes the token if the word is one, made if pending (leaving the
    /// word bare).
    fn take_token(&mut self) -> Custody {
        let b = self.bits();
        if b == 0 || b & 1 == 1 {
            return None;
        }
        self.settle();
        // SAFETY: an even, non-null word not pending (settled above) is
        // `token`; the word is bare after, so it is taken once.
        let t = unsafe { std::mem::ManuallyDrop::take(&mut self.wm().token) };
        *self.wm() = Word { bits: 0 };
        Some(t)
    }

    /// Drops what the word holds, leaving it bare (a pending token
    /// commits its item without being made).
    fn clear(&mut self) {
        let b = self.bits();
        if b & 1 == 1 {
            // SAFETY: an odd word is a box's pointer plus one, owned by
            // `self`, which is bare after.
            drop(unsafe { Box::from_raw(self.wm().boxed.wrapping_byte_sub(1)) });
            *self.wm() = Word { bits: 0 };
        } else if self.pending() {
            *self.wm() = Word { bits: 0 };
            crate::dist::custody::Pending::from_bits(b).done();
        } else if b != 0 {
            drop(self.take_token());
        }
    }

    pub fn push(&mut self, s: u64) {
        self.boxed().v.push(s);
    }

    pub fn pop(&mut self) -> Option<u64> {
        let b = self.boxed_mut()?;
        let s = b.v.pop();
        if b.v.is_empty() && b.flow == 0 {
            let c = b.custody.take();
            self.clear();
            self.set_custody(c);
        }
        s
    }

    pub fn last(&self) -> Option<&u64> {
        match self.kind() {
            Kind::Boxed(b) => b.v.last(),
            _ => None,
        }
    }

    /// Whether there is nothing to drop (no stamps, flow or custody
    /// token were ever set): dropping it then does nothing.
    #[inline]
    pub(crate) fn is_bare(&self) -> bool {
        self.bits() == 0
    }

    /// Whether `a` and `b` are both bare: one test of their two words.
    #[inline(always)]
    pub(crate) fn both_bare(a: &Stamps, b: &Stamps) -> bool {
        (a.bits() | b.bits()) == 0
    }

    pub fn is_empty(&self) -> bool {
        self.as_slice().is_empty()
    }

    /// Outermost first.
    pub fn as_slice(&self) -> &[u64] {
        match self.kind() {
            Kind::Boxed(b) => b.v.as_slice(),
            _ => &[],
        }
    }

    /// The trace flow the record is followed in (0: not followed).
    #[inline]
    pub fn flow(&self) -> u64 {
        match self.kind() {
            Kind::Boxed(b) => b.flow,
            _ => 0,
        }
    }

    /// Follows the record in trace flow `flow` (0: no more).
    pub fn set_flow(&mut self, flow: u64) {
        if flow != 0 {
            self.boxed().flow = flow;
        } else if let Some(b) = self.boxed_mut() {
            b.flow = 0;
            if b.v.is_empty() {
                let c = b.custody.take();
                self.clear();
                self.set_custody(c);
            }
        }
    }

    /// The record's custody token, if it has one (made now if pending).
    #[inline]
    pub fn custody(&self) -> Option<&std::sync::Arc<crate::dist::custody::Token>> {
        self.settle();
        match self.kind() {
            Kind::Bare | Kind::Pending => None,
            Kind::Token(t) => Some(t),
            Kind::Boxed(b) => b.custody.as_ref(),
        }
    }

    /// Takes the record's custody token.
    pub fn take_custody(&mut self) -> Custody {
        let Some(b) = self.boxed_mut() else {
            return self.take_token();
        };
        let c = b.custody.take();
        if b.v.is_empty() && b.flow == 0 {
            self.clear();
        }
        c
    }

    /// Takes the record's custody as a synchrocell's guard keeps it: a
    /// pending token stays pending ([`crate::dist::custody::Kept`]).
    pub(crate) fn take_kept(&mut self) -> Option<crate::dist::custody::Kept> {
        if self.pending() {
            let p = crate::dist::custody::Pending::from_bits(self.bits());
            // (The word owns nothing but the numbers, now `p`'s.)
            *self.wm() = Word { bits: 0 };
            return Some(crate::dist::custody::Kept::Pending(p));
        }
        self.take_custody().map(crate::dist::custody::Kept::Token)
    }

    /// The connection of the item from node 0 the record derives from,
    /// if it has a custody token (not made if pending).
    pub(crate) fn custody_conn(&self) -> Option<crate::dist::ConnId> {
        if self.pending() {
            return Some(crate::dist::custody::Pending::from_bits(self.bits()).conn());
        }
        self.custody().map(|t| t.conn())
    }

    /// Gives the record custody token `c`.
    pub fn set_custody(&mut self, c: Custody) {
        match c {
            Some(t) if self.bits() & 1 == 0 => {
                if !self.is_bare() {
                    self.clear();
                }
                *self.wm() = Word {
                    token: std::mem::ManuallyDrop::new(t),
                };
            }
            Some(t) => self.boxed().custody = Some(t),
            None => drop(self.take_custody()),
        }
    }
}

impl Default for Stamps {
    fn default() -> Stamps {
        Stamps::new()
    }
}

impl Clone for Stamps {
    #[inline]
    fn clone(&self) -> Stamps {
        // (A pending token is made first: the clones share it.)
        self.settle();
        match self.kind() {
            Kind::Bare | Kind::Pending => Stamps::new(),
            Kind::Token(t) => Stamps::of(Word {
                token: std::mem::ManuallyDrop::new(t.clone()),
            }),
            Kind::Boxed(b) => Stamps::of(Word {
                boxed: Box::into_raw(Box::new(b.clone())).wrapping_byte_add(1),
            }),
        }
    }
}

impl Drop for Stamps {
    #[inline]
    fn drop(&mut self) {
        if !self.is_bare() {
            self.clear();
        }
    }
}

/// Stamps are equal when their stamps are (the flow is no part of the order).
impl PartialEq for Stamps {
    fn eq(&self, o: &Stamps) -> bool {
        self.as_slice() == o.as_slice()
    }
}

impl Eq for Stamps {}

impl std::fmt::Debug for Stamps {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.as_slice()).finish()?;
        match self.flow() {
            0 => Ok(()),
            flow => write!(f, " (flow {flow})"),
        }
    }
}

/// A record in flight, with its deterministic-order stamps and the input
/// record it came from.
#[derive(Clone, Debug)]
pub(crate) struct Rec {
    pub rec: Record,
    pub det: Stamps,
    pub origin: Origin,
}

/// A record's custody token ([`Stamps::custody`]): on a node other than 0
/// of a run that survives a lost node, the item from node 0 the record
/// derives from, whose `Done` waits for it ([`crate::dist::custody`]);
/// `None` everywhere else. It lives in the stamps' box, so it costs a
/// `Rec` nothing (a `Rec` of 128 bytes made `Item` move by `memcpy`:
/// pipe10 +24 %), and every derived record carries it, as its stamps.
pub(crate) type Custody = Option<std::sync::Arc<crate::dist::custody::Token>>;

impl Rec {
    /// A record of no input record (for the model checks).
    #[cfg(all(test, loom))]
    pub(crate) fn new(rec: Record) -> Rec {
        Rec {
            rec,
            det: Stamps::new(),
            origin: Origin::NONE,
        }
    }
}

/// The input record a record in flight came from: its number in the input
/// (1-based) and the line of the input it ended on. Every record a
/// component emits has the origin of the record that caused it (a
/// synchrocell's merged record: the one that completed the cell), so a
/// runtime error can name the input record behind it. Both halves
/// saturate at `u32::MAX` ("beyond"); zero means unknown.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
#[repr(transparent)]
pub struct Origin(u64);

impl Origin {
    /// Not from the input (or not known).
    pub const NONE: Origin = Origin(0);

    /// The origin of input record `number` (1-based), which ended on input
    /// line `line` if the source knows; both saturate at `u32::MAX`.
    pub fn input(number: u64, line: Option<u64>) -> Origin {
        let sat = |v: u64| v.min(u64::from(u32::MAX));
        Origin(sat(number) << 32 | sat(line.unwrap_or(0)))
    }

    /// Rebuilds an origin from [`Origin::to_bits`] (the wire).
    pub fn from_bits(bits: u64) -> Origin {
        Origin(bits)
    }

    /// The origin as one number, for the wire ([`Origin::from_bits`] reads it back).
    pub fn to_bits(self) -> u64 {
        self.0
    }

    /// The input record's number, if known.
    pub fn number(self) -> Option<u64> {
        Some(self.0 >> 32).filter(|&n| n != 0)
    }

    /// The line of the input the record ended on, if known.
    pub fn line(self) -> Option<u64> {
        Some(self.0 & u64::from(u32::MAX)).filter(|&l| l != 0)
    }
}

impl std::fmt::Display for Origin {
    /// `input record N (line L)`; `...` for a number or line beyond `u32::MAX`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let show = |v: u64| {
            if v >= u64::from(u32::MAX) {
                "beyond 4294967294".to_string()
            } else {
                v.to_string()
            }
        };
        match (self.number(), self.line()) {
            (Some(n), Some(l)) => write!(f, "input record {} (line {})", show(n), show(l)),
            (Some(n), None) => write!(f, "input record {}", show(n)),
            _ => f.write_str("no input record"),
        }
    }
}

/// An ordering marker ("sort record"): follows every record caused by the
/// input records that preceded it at its owner's dispatcher.
///
/// Where a path forks, a marker is split into copies that travel on
/// separately, possibly to other nodes; each copy carries its share of the
/// whole as a dyadic weight ([`crate::weight`]), and the owner knows the
/// marker is complete when the shares that arrived sum to one
/// ([`Arrivals`]). No state is shared between copies, so a copy can cross
/// nodes as a plain value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Marker {
    /// The owning deterministic collector or feedback instance (globally
    /// unique: the owner's node is in the top bits, see `Runtime::new_owner`).
    pub owner: u64,
    /// Sequence number at the owner.
    pub seq: u64,
    /// This copy's share: `2^-weight` (0: the whole marker).
    pub weight: u64,
    /// A marker of an enclosing owner, released when this one completes
    /// (travels with one of the copies).
    pub payload: Option<Box<Marker>>,
    /// The custody token of the item from node 0 this copy comes from
    /// (a run that survives a lost node; every copy has a clone): a copy
    /// on its way back to node 0 is held by it, and the copies go
    /// together, after the records sent before the marker
    /// ([`crate::dist::custody`]). Not sent, and no part of equality.
    pub custody: MarkerCustody,
}

/// A marker copy's custody token ([`Marker::custody`]).
#[derive(Clone, Default)]
pub struct MarkerCustody(pub(crate) Custody);

/// Copies are equal whatever their tokens (a token is no part of a
/// marker's value).
impl PartialEq for MarkerCustody {
    fn eq(&self, _: &MarkerCustody) -> bool {
        true
    }
}

impl Eq for MarkerCustody {}

impl std::fmt::Debug for MarkerCustody {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.0 {
            Some(t) => write!(f, "{t:?}"),
            None => f.write_str("-"),
        }
    }
}

impl Marker {
    pub fn new(owner: u64, seq: u64, payload: Option<Marker>) -> Marker {
        Marker {
            owner,
            seq,
            weight: 0,
            payload: payload.map(Box::new),
            custody: MarkerCustody::default(),
        }
    }

    /// Splits this copy into `n >= 1` copies whose shares sum to its own;
    /// the payload goes with the first.
    pub fn split(self, n: usize) -> impl Iterator<Item = Marker> {
        let Marker {
            owner,
            seq,
            weight,
            mut payload,
            custody,
        } = self;
        crate::weight::split_piece(weight, n.max(1))
            .into_iter()
            .map(move |w| Marker {
                owner,
                seq,
                weight: w,
                payload: payload.take(),
                custody: custody.clone(),
            })
    }
}

/// The owner's side of its markers: the shares that arrived so far, per sequence number.
#[derive(Default)]
pub(crate) struct Arrivals {
    partial: rustc_hash::FxHashMap<u64, (crate::weight::Dyadic, Option<Marker>)>,
}

impl Arrivals {
    /// One copy arrived. `Some(payload)` when it completes the marker.
    pub(crate) fn arrive(&mut self, m: Marker) -> Option<Option<Marker>> {
        if m.weight == 0 {
            // Never split: the common case, no bookkeeping.
            debug_assert!(!self.partial.contains_key(&m.seq));
            return Some(m.payload.map(|p| *p));
        }
        let entry = self.partial.entry(m.seq).or_default();
        entry.0.add(m.weight);
        if let Some(p) = m.payload {
            entry.1 = Some(*p);
        }
        if entry.0.is_one() {
            self.partial.remove(&m.seq).map(|(_, p)| p)
        } else {
            None
        }
    }
}

/// What travels on a stream.
#[derive(Debug)]
pub(crate) enum Item {
    Rec(Rec),
    Marker(Marker),
    /// Feedback: the loop drained; release held outside input.
    Resume,
    /// Offered to one entity only, never passed on a stream: a field a
    /// waiting entity asked for has arrived from another node; suspended
    /// work goes on (the scheduler's); the end of the stream asks a
    /// synchrocell entity to park its stored records (node 0's `Drain`,
    /// `Net::drain_frame`).
    Wake,
}

impl Item {
    /// The input record a record came from ([`Origin::NONE`] for the rest).
    #[inline]
    pub(crate) fn origin(&self) -> Origin {
        match self {
            Item::Rec(r) => r.origin,
            _ => Origin::NONE,
        }
    }
}

/// The result of offering an item to an entity.
pub(crate) enum Offer {
    /// The entity was idle: the caller now holds its licence and gets the item back.
    Licensed(Item),
    /// The item was queued behind others; the current licence holder will see it.
    Queued,
}

/// An entity's queued items: the senders' batches as they came, each in
/// its own buffer ("segments"), so that a batch offered behind others
/// and taken as a whole moves as a buffer, not item by item.
///
/// `head` is the front segment (the only one in the common case: a batch
/// into an empty inbox, or single items); `more` holds the segments behind
/// it, each non-empty. Invariant: `head` is empty only when `more` is.
struct Inbox {
    head: VecDeque<Item>,
    more: VecDeque<VecDeque<Item>>,
    /// Items in `head` and `more` together.
    len: usize,
    /// Empty buffers handed back by takers that traded a segment away,
    /// for senders that leave a batch as a segment (at most `SPARE_MAX`).
    spare: Vec<VecDeque<Item>>,
    scheduled: bool,
    /// Times the licence was released (saturating): tells long-lived,
    /// busy entities from one-shot ones (see `next_or_release`).
    releases: u8,
}

/// A batch offered to a non-empty inbox goes in as a segment of its own
/// (its buffer moved, no item copied) from this many items, a task's
/// whole batch (`scheduler::BATCH`); smaller ones are copied behind the
/// last segment (a segment of a few items would pin a buffer of a batch's
/// size, and split the consumer's runs of calls). From 32 items, fib
/// N=25 at 2 workers (nine entities, each inbox fed by both workers)
/// waited on inbox locks four times as often (futex calls from
/// `next_or_release`, `offer_many` and `take`: 630-760 a run against
/// 120-170) and took 1.08x the time; pipe10's generator, whose batches
/// of 64 are what segments are for, is the same either way
/// (docs/performance.md, "A chain at two workers: the inbox of
/// batches"). Two under loom, so that the models' pairs are segments.
const SEGMENT_MIN: usize = if cfg!(loom) { 2 } else { 64 };

/// Empty buffers an inbox keeps for the senders of segments.
const SPARE_MAX: usize = 8;

/// Releases after which an entity keeps its inbox buffer while idle.
const KEEP_AFTER: u8 = 8;
/// Buffers above this many items are dropped at every release (bursts).
const KEEP_MAX: usize = 256;

impl Inbox {
    /// The front segment went empty: the next one, if any, takes its place
    /// (its buffer kept as a spare).
    #[inline(always)]
    fn advance(&mut self) {
        debug_assert!(self.head.is_empty());
        if !self.more.is_empty() {
            self.next_segment();
        }
    }

    /// [`Inbox::advance`]'s rare half (a producer ran ahead).
    #[cold]
    #[inline(never)]
    fn next_segment(&mut self) {
        if let Some(next) = self.more.pop_front() {
            let empty = std::mem::replace(&mut self.head, next);
            self.keep_spare(empty);
        }
    }

    /// Keeps an empty buffer for a later sender, if there is room and it
    /// is not a burst's.
    #[inline]
    fn keep_spare(&mut self, buf: VecDeque<Item>) {
        debug_assert!(buf.is_empty());
        if self.spare.len() < SPARE_MAX && buf.capacity() > 0 && buf.capacity() <= KEEP_MAX {
            self.spare.push(buf);
        }
    }

    /// Appends one item behind everything queued.
    #[inline]
    fn push_back(&mut self, item: Item) {
        match self.more.back_mut() {
            Some(last) => last.push_back(item),
            None => self.head.push_back(item),
        }
        self.len += 1;
    }

    /// Appends a sender's batch (not empty) behind everything queued,
    /// leaving `items` empty: as a buffer where that moves no item (an
    /// empty inbox with room for it, or a batch of at least
    /// `SEGMENT_MIN`), else copied behind the last segment.
    #[inline]
    fn append(&mut self, items: &mut VecDeque<Item>) {
        let n = items.len();
        if self.len == 0 {
            if self.head.capacity() >= n {
                // Into an empty inbox: trade buffers (a box's batch of
                // outputs into the next box's inbox, a pipeline's every
                // hop). The sender gets the inbox's empty buffer, which
                // holds as many as it sent: its next batch of that size
                // needs no growth.
                std::mem::swap(&mut self.head, items);
            } else {
                self.head.append(items);
            }
        } else if n >= SEGMENT_MIN && n.saturating_mul(4) >= items.capacity() {
            // Behind others (a producer running ahead of its consumer on
            // another worker): the batch stays in its buffer, and the
            // sender gets a spare (or a new one).
            let buf = self.spare.pop().unwrap_or_default();
            self.more.push_back(std::mem::replace(items, buf));
        } else {
            match self.more.back_mut() {
                Some(last) => last.append(items),
                None => self.head.append(items),
            }
        }
        self.len += n;
    }

    /// Moves up to `max` (at least one) of the front segment's items to the
    /// end of `out`, and returns how many (0: the inbox is empty). A take
    /// stops at the end of the front segment, so that the next take finds
    /// a whole one; all of it into an empty `out` is a trade of buffers.
    #[inline(always)]
    fn take(&mut self, out: &mut VecDeque<Item>, max: usize) -> usize {
        let n = self.head.len().min(max);
        if n == 0 {
            return 0;
        }
        if n == self.head.len() && out.is_empty() {
            std::mem::swap(&mut self.head, out);
        } else {
            out.extend(self.head.drain(..n));
        }
        self.len -= n;
        if self.head.is_empty() {
            self.advance();
        }
        n
    }

    /// The next item.
    #[inline]
    fn pop_front(&mut self) -> Option<Item> {
        let item = self.head.pop_front()?;
        self.len -= 1;
        if self.head.is_empty() {
            self.advance();
        }
        Some(item)
    }

    /// Puts `items` (taken and not processed) back in front of everything
    /// queued, as a segment of their own, leaving `items` empty.
    fn unread(&mut self, items: &mut VecDeque<Item>) {
        let n = items.len();
        if self.len == 0 {
            std::mem::swap(&mut self.head, items);
        } else {
            let buf = self.spare.pop().unwrap_or_default();
            let front = std::mem::replace(items, buf);
            let old = std::mem::replace(&mut self.head, front);
            self.more.push_front(old);
        }
        self.len += n;
    }
}

/// A runtime entity: an inbox plus kind-specific state.
pub(crate) struct Entity {
    inbox: Mutex<Inbox>,
    body: Body,
    /// The inbox's length, mirrored after every change under the lock
    /// (`Relaxed`: a hint for the scheduler's decisions, nothing is
    /// published through it).
    backlog: AtomicUsize,
    /// The graph node this entity stands for ([`crate::instrument`]'s
    /// slot; `u32::MAX`: not known). Set once when instantiated.
    node: std::sync::atomic::AtomicU32,
    /// The first entity of a split's replica ([`Entity::mark_replica`]).
    replica: std::sync::atomic::AtomicBool,
    /// A box (fixed at construction, readable without the licence).
    is_box: bool,
    /// The local end of a connection to another node (fixed at
    /// construction, readable without the licence).
    is_remote: bool,
    /// What it makes reaches another node before any box
    /// ([`crate::runtime::Kind::toward_remote`], fixed at construction).
    toward_remote: bool,
}

/// What an entity is.
enum Body {
    /// State only its licence holder touches ([`Entity::state`]).
    State(UnsafeCell<crate::runtime::Kind>),
    /// State never changed after construction (filter chains): the entity
    /// is a function of each item, run by whoever sends to it
    /// ([`crate::runtime::Ctx::send`]) under the sender's licence, through
    /// shared references only ([`Entity::shared_state`]).
    Shared(crate::runtime::Stateless),
}

// SAFETY: `State` is only accessed by the licence holder (see the module
// protocol), `Shared` only through shared references; the inbox is behind
// a mutex. Kinds hold only Send data.
unsafe impl Sync for Entity {}
// SAFETY: as above; moving an Entity between threads moves owned Send data.
unsafe impl Send for Entity {}

impl Entity {
    pub(crate) fn new(kind: crate::runtime::Kind) -> Arc<Entity> {
        let is_box = matches!(kind, crate::runtime::Kind::Box(_));
        let is_remote = matches!(kind, crate::runtime::Kind::Remote(_));
        let toward = kind.toward_remote();
        Entity::with_body(
            Body::State(UnsafeCell::new(kind)),
            is_box,
            is_remote,
            toward,
        )
    }

    /// A stateless entity (see [`Body::Shared`]).
    pub(crate) fn new_stateless(s: crate::runtime::Stateless) -> Arc<Entity> {
        let toward = s.toward_remote();
        Entity::with_body(Body::Shared(s), false, false, toward)
    }

    fn with_body(body: Body, is_box: bool, is_remote: bool, toward_remote: bool) -> Arc<Entity> {
        Arc::new(Entity {
            body,
            backlog: AtomicUsize::new(0),
            node: std::sync::atomic::AtomicU32::new(u32::MAX),
            replica: std::sync::atomic::AtomicBool::new(false),
            is_box,
            is_remote,
            toward_remote,
            inbox: Mutex::new(Inbox {
                head: VecDeque::new(),
                more: VecDeque::new(),
                len: 0,
                spare: Vec::new(),
                scheduled: false,
                releases: 0,
            }),
        })
    }

    /// Step 1 of the protocol.
    pub(crate) fn offer(&self, item: Item) -> Offer {
        let mut inbox = lock(&self.inbox);
        if !inbox.scheduled {
            debug_assert!(inbox.len == 0);
            inbox.scheduled = true;
            Offer::Licensed(item)
        } else {
            inbox.push_back(item);
            self.backlog.store(inbox.len, Ordering::Relaxed);
            Offer::Queued
        }
    }

    /// Step 1 for several items from one sender, in order, under one lock
    /// (`items` is left empty: its buffer goes into the inbox where that
    /// saves copying its items, see `Inbox::append`, and the sender gets an
    /// empty one back; otherwise the items are copied in bulk and the
    /// buffer kept). Returns the first item when the caller now holds the
    /// licence, and how many items were queued.
    pub(crate) fn offer_many(&self, items: &mut VecDeque<Item>) -> (Option<Item>, usize) {
        let mut inbox = lock(&self.inbox);
        let first = if inbox.scheduled {
            None
        } else {
            debug_assert!(inbox.len == 0);
            inbox.scheduled = true;
            items.pop_front()
        };
        let queued = items.len();
        if queued > 0 {
            inbox.append(items);
        }
        self.backlog.store(inbox.len, Ordering::Relaxed);
        (first, queued)
    }

    /// Step 2: the next item, or `None` after releasing the licence.
    pub(crate) fn next_or_release(&self) -> Option<Item> {
        let mut inbox = lock(&self.inbox);
        let next = inbox.pop_front();
        if next.is_none() {
            Self::release(&mut inbox);
        } else {
            self.backlog.store(inbox.len, Ordering::Relaxed);
        }
        next
    }

    /// Step 2 in bulk: moves up to `max` (at least one) of the next items to
    /// the end of `out` and returns how many, or releases the licence and
    /// returns 0 when there are none. The items are the holder's to
    /// process, in order, before any still in the inbox (or to give back
    /// with [`Entity::unread`]). A take ends where a sender's batch did
    /// (`Inbox::take`), so it may move fewer than `max` while more wait.
    pub(crate) fn take_or_release(&self, out: &mut VecDeque<Item>, max: usize) -> usize {
        let mut inbox = lock(&self.inbox);
        let n = inbox.take(out, max.max(1));
        if n == 0 {
            Self::release(&mut inbox);
        } else {
            self.backlog.store(inbox.len, Ordering::Relaxed);
        }
        n
    }

    /// Like [`Entity::take_or_release`], but never releases the licence:
    /// moves up to `max` of the next items to the end of `out` and returns
    /// how many (0 when the inbox is empty). For a holder that still has an
    /// item in hand (a task's first item), so that the entity sees what
    /// waits behind it (a box's run of calls, [`crate::callstack`]).
    pub(crate) fn take(&self, out: &mut VecDeque<Item>, max: usize) -> usize {
        let mut inbox = lock(&self.inbox);
        let n = if max > 0 { inbox.take(out, max) } else { 0 };
        if n > 0 {
            self.backlog.store(inbox.len, Ordering::Relaxed);
        }
        n
    }

    /// Gives items taken with [`Entity::take_or_release`] and not processed
    /// back to the front of the inbox, in their order (the licence is kept).
    pub(crate) fn unread(&self, items: &mut VecDeque<Item>) {
        if items.is_empty() {
            return;
        }
        let mut inbox = lock(&self.inbox);
        inbox.unread(items);
        self.backlog.store(inbox.len, Ordering::Relaxed);
    }

    /// Clears `scheduled` (the inbox is empty).
    #[inline(always)]
    fn release(inbox: &mut Inbox) {
        debug_assert!(inbox.len == 0 && inbox.more.is_empty());
        inbox.scheduled = false;
        // Most entities (one per split value, per star stage) see a queue
        // only briefly; do not keep its buffers alive for the whole run.
        // Entities that went idle often are the network's long-lived ones,
        // which queue again soon: they keep a small buffer (else every busy
        // period would allocate and grow it anew), and their spares.
        let cap = inbox.head.capacity();
        let keep = inbox.releases >= KEEP_AFTER;
        if cap > 0 && (!keep || cap > KEEP_MAX) {
            inbox.head = VecDeque::new();
        }
        if !keep && !inbox.spare.is_empty() {
            Self::drop_spares(inbox);
        }
        inbox.releases = inbox.releases.saturating_add(1);
    }

    /// Drops an inbox's spare buffers ([`Entity::release`]'s rare case).
    #[cold]
    #[inline(never)]
    fn drop_spares(inbox: &mut Inbox) {
        inbox.spare = Vec::new();
    }

    /// Records that this entity stands for graph node `node`, unless an
    /// inner instantiation already said which (a serial composition's
    /// entry is its first component's).
    pub(crate) fn tag(&self, node: snet_core::NodeId) {
        let _ = self.node.compare_exchange(
            u32::MAX,
            node.0,
            std::sync::atomic::Ordering::Relaxed,
            std::sync::atomic::Ordering::Relaxed,
        );
    }

    /// Marks this entity as the first of a split's replica (set once, when
    /// the split creates it): the scheduler runs such replicas side by side
    /// before the entity they feed (`scheduler/work.rs`,
    /// `defer_below_siblings`).
    pub(crate) fn mark_replica(&self) {
        self.replica
            .store(true, std::sync::atomic::Ordering::Relaxed);
    }

    /// Whether this entity is a box.
    #[inline]
    pub(crate) fn is_box(&self) -> bool {
        self.is_box
    }

    /// Whether this entity is the local end of a connection to another
    /// node ([`crate::remote::RemoteEntity`]).
    #[inline]
    pub(crate) fn is_remote(&self) -> bool {
        self.is_remote
    }

    /// Whether what this entity makes reaches another node before any
    /// box ([`crate::runtime::Kind::toward_remote`]).
    #[inline]
    pub(crate) fn toward_remote(&self) -> bool {
        self.toward_remote
    }

    /// Whether [`Entity::mark_replica`] marked this entity.
    #[inline]
    pub(crate) fn is_replica(&self) -> bool {
        self.replica.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The graph node this entity stands for, if known ([`Entity::tag`]).
    pub(crate) fn node(&self) -> Option<u32> {
        Some(self.node.load(std::sync::atomic::Ordering::Relaxed)).filter(|&n| n != u32::MAX)
    }

    /// Items waiting in the inbox, as of a recent change (a hint: see the
    /// field).
    pub(crate) fn backlog(&self) -> usize {
        self.backlog.load(Ordering::Relaxed)
    }

    /// The state of a stateless entity, shared: it is never changed and no
    /// mutable reference to it is ever made ([`Entity::state`] refuses
    /// stateless entities), so any thread may read it at any time.
    #[inline]
    pub(crate) fn shared_state(&self) -> Option<&crate::runtime::Stateless> {
        match &self.body {
            Body::Shared(s) => Some(s),
            Body::State(_) => None,
        }
    }

    /// The entity's state.
    ///
    /// # Safety
    /// The caller holds the entity's licence (it received `Offer::Licensed`
    /// and has not yet seen `next_or_release` return `None`), or the entity is
    /// not yet reachable by any other thread (construction). No other
    /// reference from `state` may be alive.
    #[allow(clippy::mut_from_ref)]
    pub(crate) unsafe fn state(&self) -> &mut crate::runtime::Kind {
        match &self.body {
            // SAFETY: exclusive access is the caller's obligation (see above).
            Body::State(c) => unsafe { &mut *c.get() },
            Body::Shared(_) => panic!("a stateless entity's state is shared, never exclusive"),
        }
    }
}

#[cfg(all(test, not(loom)))]
mod inbox_tests {
    use super::{Entity, Item, Offer};
    use crate::dist::ConnId;
    use crate::runtime::Kind;
    use snet_core::Rank;
    use std::collections::VecDeque;

    fn entity() -> std::sync::Arc<Entity> {
        let conn = ConnId {
            origin: Rank(0),
            seq: 1,
        };
        Entity::new(Kind::Remote(crate::remote::RemoteEntity::new(
            Rank(1),
            conn,
        )))
    }

    fn markers(seqs: std::ops::Range<u64>, room: usize) -> VecDeque<Item> {
        let mut v = VecDeque::with_capacity(room);
        v.extend(seqs.map(|s| Item::Marker(super::Marker::new(7, s, None))));
        v
    }

    fn seqs(items: &VecDeque<Item>) -> Vec<u64> {
        items
            .iter()
            .map(|i| match i {
                Item::Marker(m) => m.seq,
                _ => unreachable!("markers only"),
            })
            .collect()
    }

    /// A batch sent into an empty inbox is handed over with its buffer
    /// (no item copied), and the sender gets a buffer with as much room;
    /// into a non-empty inbox it is appended. Order is kept either way.
    /// A marker's custody token (`Marker::custody`) does not make an
    /// item bigger: a `Rec` is the largest variant, and an `Item` of more
    /// than 128 bytes moved by `memcpy` (pipe10 +24 % instructions).
    #[test]
    fn an_item_stays_within_128_bytes() {
        assert!(std::mem::size_of::<super::Marker>() <= std::mem::size_of::<super::Rec>());
        assert!(std::mem::size_of::<Item>() <= 128);
    }

    #[test]
    fn a_batch_into_an_empty_inbox_trades_buffers() {
        let e = entity();
        // The licence is held (the entity is busy): later items queue.
        assert!(matches!(e.offer(Item::Wake), Offer::Licensed(_)));
        // An inbox that has held 64 items and was emptied keeps its room.
        let mut first = markers(0..64, 64);
        assert!(matches!(e.offer_many(&mut first), (None, 64)));
        let mut out = VecDeque::with_capacity(64);
        assert_eq!(e.take(&mut out, 64), 64);
        assert_eq!(seqs(&out), (0..64).collect::<Vec<_>>());

        // Room for the two appended behind it: the buffer stays put.
        let mut batch = markers(64..128, 128);
        let buffer = batch.as_slices().0.as_ptr();
        assert!(matches!(e.offer_many(&mut batch), (None, 64)));
        assert!(batch.is_empty());
        assert!(
            batch.capacity() >= 64,
            "the sender's new buffer holds a batch"
        );
        // Behind it, appended (the inbox is not empty now).
        let mut more = markers(128..130, 2);
        assert!(matches!(e.offer_many(&mut more), (None, 2)));
        let mut out = VecDeque::new();
        assert_eq!(e.take(&mut out, 100), 66);
        assert_eq!(out.as_slices().0.as_ptr(), buffer, "the batch's own buffer");
        assert_eq!(seqs(&out), (64..130).collect::<Vec<_>>());
        assert_eq!(e.take_or_release(&mut out, 1), 0);
    }
    /// Batches offered behind others (a producer running ahead of its
    /// consumer) stay in their own buffers: each is taken whole, as the
    /// buffer it was sent in (no item copied either way), takes stop where
    /// a batch ends, and the senders get the takers' empty buffers back.
    /// A small batch is copied behind the last one instead; a batch given
    /// back (`unread`) goes in front as a buffer of its own. Order is kept
    /// throughout.
    #[test]
    fn batches_behind_others_move_as_buffers() {
        let e = entity();
        assert!(matches!(e.offer(Item::Wake), Offer::Licensed(_)));
        let mut a = markers(0..40, 64);
        assert!(matches!(e.offer_many(&mut a), (None, 40)));
        let mut b = markers(40..104, 128);
        let b_buf = b.as_slices().0.as_ptr();
        assert!(matches!(e.offer_many(&mut b), (None, 64)));
        assert!(b.is_empty());
        // Small: copied behind `b`, into `b`'s room.
        let mut c = markers(104..108, 4);
        assert!(matches!(e.offer_many(&mut c), (None, 4)));
        let mut d = markers(108..172, 64);
        let d_buf = d.as_slices().0.as_ptr();
        assert!(matches!(e.offer_many(&mut d), (None, 64)));
        assert_eq!(e.backlog(), 172);

        // The first take stops at the end of the first batch.
        let mut out = VecDeque::new();
        assert_eq!(e.take(&mut out, 63), 40);
        assert_eq!(seqs(&out), (0..40).collect::<Vec<_>>());
        // The second batch (with `c` behind it) is taken whole, in the
        // buffer it was sent in; the taker's empty buffer stays behind.
        let mut out = VecDeque::with_capacity(40);
        let given = out.as_slices().0.as_ptr();
        assert_eq!(e.take_or_release(&mut out, 100), 68);
        assert_eq!(out.as_slices().0.as_ptr(), b_buf, "the batch's own buffer");
        assert_eq!(seqs(&out), (40..108).collect::<Vec<_>>());
        // A sender behind others gets the taker's empty buffer.
        let mut f = markers(172..236, 64);
        assert!(matches!(e.offer_many(&mut f), (None, 64)));
        assert_eq!(
            f.as_slices().0.as_ptr(),
            given,
            "the taker's buffer, handed on"
        );
        // Part of a batch, then the rest given back: in front, as a
        // buffer of its own.
        let mut out = VecDeque::new();
        assert_eq!(e.take_or_release(&mut out, 5), 5);
        assert_eq!(seqs(&out), (108..113).collect::<Vec<_>>());
        e.unread(&mut out);
        assert_eq!(e.backlog(), 64 + 64);
        let mut out = VecDeque::new();
        assert_eq!(e.take_or_release(&mut out, 64), 5);
        assert_eq!(seqs(&out), (108..113).collect::<Vec<_>>());
        let mut out = VecDeque::new();
        assert_eq!(e.take_or_release(&mut out, 64), 59);
        assert_eq!(seqs(&out), (113..172).collect::<Vec<_>>());
        let _ = d_buf;
        match e.next_or_release() {
            Some(Item::Marker(m)) => assert_eq!(m.seq, 172),
            _ => panic!("the next batch's first item"),
        }
        let mut out = VecDeque::new();
        assert_eq!(e.take_or_release(&mut out, 64), 63);
        assert_eq!(seqs(&out), (173..236).collect::<Vec<_>>());
        assert_eq!(e.backlog(), 0);
        assert_eq!(e.take_or_release(&mut out, 1), 0);
        assert!(matches!(e.offer(Item::Wake), Offer::Licensed(_)));
        // Fewer than a task's batch behind others: copied behind the last
        // segment, and the sender keeps its buffer (`SEGMENT_MIN`).
        let mut g = markers(236..300, 64);
        assert!(matches!(e.offer_many(&mut g), (None, 64)));
        let mut h = markers(300..363, 64);
        let h_buf = h.as_slices().0.as_ptr();
        assert!(matches!(e.offer_many(&mut h), (None, 63)));
        assert_eq!(h.as_slices().0.as_ptr(), h_buf, "copied, not moved");
        let mut out = VecDeque::new();
        assert_eq!(e.take_or_release(&mut out, 200), 127);
        assert_eq!(seqs(&out), (236..363).collect::<Vec<_>>());
    }
}

#[cfg(test)]
mod size_tests {
    #[test]
    fn the_flow_rides_beside_the_stamps() {
        let mut s = super::Stamps::new();
        s.set_flow(9);
        assert_eq!((s.flow(), s.is_empty()), (9, true));
        s.push(3);
        assert_eq!(s.pop(), Some(3));
        assert_eq!((s.flow(), s.is_empty()), (9, true));
        assert_eq!(s, super::Stamps::new());
        s.set_flow(0);
        assert!(s.is_bare());
    }

    /// A custody token alone is the word itself (no box); stamps or a
    /// flow beside it take the box, and it is the word again when they
    /// go; clones share the token, and it is dropped with its last.
    #[cfg(not(loom))]
    #[test]
    fn a_custody_token_alone_takes_no_box() {
        use std::sync::Arc;
        let conn = crate::dist::ConnId {
            origin: snet_core::Rank::ROOT,
            seq: 1,
        };
        let t = Arc::new(crate::dist::custody::Token::new(
            snet_core::Rank::ROOT,
            5,
            conn,
            std::sync::Weak::new(),
        ));
        let same = |s: &super::Stamps| s.custody().is_some_and(|c| Arc::ptr_eq(c, &t));
        let mut s = super::Stamps::new();
        s.set_custody(Some(t.clone()));
        assert!(same(&s) && s.bits() & 1 == 0 && s.is_empty() && s.flow() == 0);
        let c = s.clone();
        assert!(same(&c) && Arc::strong_count(&t) == 3);
        drop(c);
        s.push(4);
        assert!(same(&s) && s.bits() & 1 == 1 && s.as_slice() == [4]);
        s.set_flow(2);
        assert_eq!(s.pop(), Some(4));
        assert!(same(&s) && s.flow() == 2 && s.bits() & 1 == 1);
        s.set_flow(0);
        assert!(same(&s) && s.bits() & 1 == 0);
        s.set_flow(3);
        let c = s.clone();
        assert!(same(&c) && c.flow() == 3 && Arc::strong_count(&t) == 3);
        drop(c);
        assert!(s.take_custody().is_some_and(|c| Arc::ptr_eq(&c, &t)));
        assert!(s.custody().is_none() && s.flow() == 3);
        s.set_flow(0);
        assert!(s.is_bare());
        s.set_custody(Some(t.clone()));
        s.set_custody(None);
        assert!(s.is_bare() && Arc::strong_count(&t) == 1);
        s.set_custody(Some(t.clone()));
        assert!(s.take_custody().is_some() && s.is_bare());
        s.set_custody(Some(t.clone()));
        drop(s);
        assert_eq!(Arc::strong_count(&t), 1);
    }
}
