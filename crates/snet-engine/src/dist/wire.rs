//! The encoding of messages between nodes: every frame, written and read
//! here only.
//!
//! Two layers. The *syntax* is the bytes as values ([`Message`],
//! [`Frame`], [`WireItem`]; [`FrameRef`] while reading) and the one parser
//! of them ([`MessageReader`]): any malformed input is a [`WireError`]
//! (where, and what: [`Malformed`]), never a panic (the `frames` fuzz
//! target and property tests check it). The *meaning* (`Encoder`,
//! `Decoder`) turns the engine's items into bytes and back: labels
//! through the per-pair dictionaries, fields inline or as references into
//! the field store.
//!
//! Items, the bulk of the traffic, are streamed both ways: the output
//! manager's `Frames` writes each engine item straight into the message
//! (`Frames::item`), and the input manager reads an `Items` frame one
//! item at a time straight into the engine's records
//! (`MessageReader::next_item`); the owned [`Frame::Items`] (a
//! `Vec<WireItem>`) is for tests and fuzzing only.
//!
//! A transport message's header is
//!
//! ```text
//! credit: count, exponents...        (the termination credit it carries)
//! frame*                             (until the end of the header)
//! ```
//!
//! and a frame is a kind byte and its fields. Integers are LEB128 varints
//! (signed ones zigzagged), strings a length and UTF-8 bytes. The credit's
//! exponents are strictly increasing, and 0 (the whole) comes alone.
//!
//! | kind | frame | fields |
//! |---|---|---|
//! | 0 | Open | connection, template node, back connection, start stamps |
//! | 1 | Items | connection, count, items |
//! | 2 | Fetch | field id (at the receiver) |
//! | 3 | Release | field id, weight |
//! | 5 | Fail | message |
//! | 6 | Shutdown | |
//! | 7 | Bytes | field id (at the sender), codec name, meta bytes; the body is the payload |
//! | 8 | Ack | count (items received from the receiver, now acknowledged) |
//! | 9 | Done | item identity, and how many items after it are done too (everything derived from items `id` to `id + more` has left the sender) |
//! | 10 | Seq | the identity of the next item from the sender (a replay's) |
//! | 11 | Fired | a synchrocell's identity: connection, template node, instance path (a count and the steps), key (a tombstone) |
//! | 12 | Drain | |
//! | 13 | Parked | a synchrocell's identity (as in Fired), slot; the next frame is an Items frame of one record, the record parked in that slot |
//! | 14 | Given | codec name, meta bytes; the body is the payload: a field value the sender gives the receiver ahead of the record that holds it (a *given* field, below) |
//! | 15 | Fired keys | a synchrocell's identity as in Fired, a count of more keys, and each of those keys as its difference from the key before it (wrapping, zigzagged): tombstones of several cells of one instance |
//!
//! A connection is its creator node and counter; stamps are a count and
//! the numbers. The Items count is written as a four-byte varint (padded
//! with `0x80` continuation bytes) so it can be patched in place as items
//! are appended; a reader takes any varint. An item is a kind byte and
//!
//! | kind | item | fields |
//! |---|---|---|
//! | 0 | record | stamps, origin (input number, input line), entry count, entries |
//! | 4 | record followed in a trace | as kind 0, with the trace flow id after the origin |
//! | 1 | marker | owner, sequence, weight, 0 or 1 and the payload marker |
//! | 2 | `Resume` | |
//!
//! A record entry is a label and a value. A label is `n << 1` (the
//! dictionary's `n`th label) or `n << 1 | 1`, its kind byte and name (it
//! defines the `n`th). A value is a kind byte and: 0, an integer; 1, an
//! inline field (codec name, meta bytes and body bytes, copied into the
//! frame); 2, a field reference (home node, id, weight, interface, size);
//! 3, a given field (no bytes: the value is the oldest the sender gave
//! the receiver in a `Given` message and no record has taken yet).
//!
//! **Given fields** (`--on-node-loss respawn`, a node other than 0, whose
//! fields may not stay behind it): a field whose body lives in memory
//! every node of the run maps and that outlives any one node process (the
//! shared-memory transport's field arena in zero-copy mode,
//! [`super::Transport::shared_region`]) is sent in a `Given` message of
//! its own, the body as the payload (so the transport passes a reference
//! to the block, not the bytes), before the message of the record that
//! holds it, on the same channel (`Records`): the receiver queues the
//! decoded value per sender, and a record's value of kind 3 takes the
//! oldest. The value is then the receiver's own (it owns the reference
//! the message carried), as a field sent by value would be; a sender's
//! replacement starts with an empty queue ([`Decoder::forget`]).
//! Markers nest at most [`MAX_MARKER_DEPTH`] deep.
//!
//! A field's value travels in two parts ([`snet_core::FieldData`]): its
//! small meta part in the `Bytes` frame, its body as the message's payload,
//! sent from the value's own memory ([`super::Payload::field_body`]) and
//! received into the buffer the decoded value keeps (no copy either side).
//! A message holds at most one `Bytes` frame.
//!
//! **Labels** are interned per process, in an order that differs between
//! processes, so they travel by name: each (sender, receiver) pair keeps a
//! dictionary, and a label's first use on that pair carries its kind and
//! name along with the number later uses refer to. Labels that appear only
//! in the input (no program mentions them) travel the same way.

use std::borrow::Cow;
use std::fmt;

use rustc_hash::FxHashMap;
use smallvec::SmallVec;
use snet_core::{Codecs, Field, FieldBytes, Label, LabelKind, NodeId, Rank, Record, Value};

use super::fields::FieldStore;
use super::ConnId;
use crate::entity::{Item, Marker, Origin, Rec, Stamps};
use crate::weight::Dyadic;

/// Markers nest (a marker's payload marker) at most this deep: one level
/// per enclosing deterministic combinator, so a real program stays far
/// below; deeper is a malformed message (and would exhaust the stack).
pub const MAX_MARKER_DEPTH: usize = 1024;

// ---------------------------------------------------------------- errors

/// A malformed message (a protocol bug or a corrupted transport): where
/// the reader stopped and why.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct WireError {
    /// Byte offset in the header.
    pub at: usize,
    /// What is wrong there.
    pub what: Malformed,
}

/// What is wrong with a malformed message ([`WireError`]).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Malformed {
    /// It ends in the middle of a number or a kind byte.
    Truncated,
    /// A string or byte string runs past its end.
    TruncatedBytes,
    /// A varint of more than 64 bits.
    VarintTooLong,
    /// A number too large for what it counts (`u32` node, template, label).
    TooLarge(&'static str),
    /// A string that is not UTF-8.
    NotUtf8,
    /// Credit whose exponents are not strictly increasing, or more than one.
    BadCredit,
    /// A frame kind byte no frame has.
    UnknownFrame(u8),
    /// An item kind byte no item has.
    BadItemKind(u8),
    /// A value kind byte no value has.
    BadValueKind(u8),
    /// A label kind byte no label kind has.
    BadLabelKind(u8),
    /// A record origin whose number or line does not fit 32 bits.
    BadOrigin,
    /// Markers nested deeper than [`MAX_MARKER_DEPTH`].
    MarkerTooDeep,
    /// A label defined with a number other than its dictionary's next.
    LabelOutOfOrder,
    /// A label number its dictionary does not have.
    UnknownLabel,
}

impl fmt::Display for Malformed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Malformed::Truncated => f.write_str("truncated"),
            Malformed::TruncatedBytes => f.write_str("truncated bytes"),
            Malformed::VarintTooLong => f.write_str("varint too long"),
            Malformed::TooLarge(what) => write!(f, "{what} too large"),
            Malformed::NotUtf8 => f.write_str("string is not UTF-8"),
            Malformed::BadCredit => f.write_str("bad credit"),
            Malformed::UnknownFrame(k) => write!(f, "unknown frame kind {k}"),
            Malformed::BadItemKind(_) => f.write_str("bad item kind"),
            Malformed::BadValueKind(_) => f.write_str("bad value kind"),
            Malformed::BadLabelKind(_) => f.write_str("bad label kind"),
            Malformed::BadOrigin => f.write_str("bad record origin"),
            Malformed::MarkerTooDeep => f.write_str("markers nested too deep"),
            Malformed::LabelOutOfOrder => f.write_str("label defined out of order"),
            Malformed::UnknownLabel => f.write_str("unknown label"),
        }
    }
}

impl fmt::Display for WireError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "malformed message at byte {}: {}", self.at, self.what)
    }
}

impl std::error::Error for WireError {}

/// An item this node cannot turn into an engine item
/// (`MessageReader::next_item`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ItemError {
    /// The bytes are malformed (or a label does not fit the dictionary).
    Malformed(WireError),
    /// The codec could not decode the inline field `label`.
    Codec {
        /// The field's label.
        label: Label,
        /// The codec's reason.
        error: snet_core::DecodeError,
    },
    /// A reference to one of this node's exports that the field store
    /// does not know.
    Returned(super::fields::StoreError),
    /// Field `label` is a reference to a field of node `home`, which the
    /// run does not have.
    NoSuchNode {
        /// The field's label.
        label: Label,
        /// The node the reference names.
        home: Rank,
    },
    /// Field `label` is a given field (value kind 3) and the sender gave
    /// no value that a record has not taken yet.
    NotGiven {
        /// The field's label.
        label: Label,
    },
}

/// A field that cannot go to another node (the record's label, the
/// destination, why).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldStays {
    /// The field's label in the record.
    pub label: Label,
    /// The node the record was going to.
    pub to: Rank,
    /// Why the value cannot leave this process.
    pub error: snet_core::NotPortable,
}

impl fmt::Display for FieldStays {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "field `{}` cannot go to node {}: {}",
            self.label, self.to, self.error
        )
    }
}

impl std::error::Error for FieldStays {}

impl From<WireError> for ItemError {
    fn from(e: WireError) -> ItemError {
        ItemError::Malformed(e)
    }
}

impl fmt::Display for ItemError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ItemError::Malformed(e) => write!(f, "{e}"),
            ItemError::Codec { label, error } => write!(f, "field `{label}`: {error}"),
            ItemError::Returned(e) => write!(f, "{e}"),
            ItemError::NoSuchNode { label, home } => write!(
                f,
                "field `{label}` refers to node {home}, which this run does not have"
            ),
            ItemError::NotGiven { label } => write!(
                f,
                "field `{label}` is a given field, and its sender gave no value for it"
            ),
        }
    }
}

impl std::error::Error for ItemError {}

// ---------------------------------------------------------------- writing

const OPEN: u8 = 0;
const ITEMS: u8 = 1;
const FETCH: u8 = 2;
const RELEASE: u8 = 3;
const FAIL: u8 = 5;
const SHUTDOWN: u8 = 6;
const BYTES: u8 = 7;
const ACK: u8 = 8;
const DONE: u8 = 9;
const SEQ: u8 = 10;
const FIRED: u8 = 11;
const DRAIN: u8 = 12;
const PARKED: u8 = 13;
const GIVEN: u8 = 14;
const FIRED_KEYS: u8 = 15;

/// Items counts below this fit the four-byte form patched in place.
const COUNT4_LIMIT: u64 = 1 << 28;

#[inline(always)]
fn put_u(out: &mut Vec<u8>, mut v: u64) {
    if v < 0x80 {
        out.push(v as u8);
        return;
    }
    loop {
        let b = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            out.push(b);
            return;
        }
        out.push(b | 0x80);
    }
}

/// The steps of an instance path [`put_cell`] writes through its buffer
/// on the stack (a longer path goes byte by byte).
const CELL_STEPS: usize = 6;

/// [`put_u`] into `b` at `n` (which it moves on); `b` has room for it.
#[inline(always)]
fn put_u_at(b: &mut [u8], n: &mut usize, mut v: u64) {
    while v >= 0x80 {
        b[*n] = v as u8 | 0x80;
        v >>= 7;
        *n += 1;
    }
    b[*n] = v as u8;
    *n += 1;
}

fn put_i(out: &mut Vec<u8>, v: i64) {
    put_u(out, ((v << 1) ^ (v >> 63)) as u64)
}

fn put_bytes(out: &mut Vec<u8>, b: &[u8]) {
    put_u(out, b.len() as u64);
    out.extend_from_slice(b);
}

fn put_s(out: &mut Vec<u8>, s: &str) {
    put_bytes(out, s.as_bytes());
}

fn put_conn(out: &mut Vec<u8>, c: ConnId) {
    put_u(out, u64::from(c.origin.0));
    put_u(out, c.seq);
}

/// The [`Frame::Done`]s for items `ids` (a message's: their order means
/// nothing, node 0 takes them all at its end), as runs of consecutive
/// identities, `f(first, more)` for each. Not sorted (a sort cost more
/// than the frames it saved): a commit names its group's items in
/// either order and commits come in about the order node 0 sent the
/// items, so a run grows at either end.
pub(crate) fn done_runs(ids: &[u64], mut f: impl FnMut(u64, u64)) {
    let mut ids = ids.iter().copied();
    let Some(first) = ids.next() else { return };
    let (mut lo, mut hi) = (first, first);
    for id in ids {
        if hi.checked_add(1) == Some(id) {
            hi = id;
        } else if id.checked_add(1) == Some(lo) {
            lo = id;
        } else {
            f(lo, hi - lo);
            (lo, hi) = (id, id);
        }
    }
    f(lo, hi - lo);
}

/// The rest of a `Fired keys` frame after its first cell (whose key is
/// `first`): the count of `more` keys, then each as its wrapping
/// difference from the key before it.
#[inline]
fn put_key_run(out: &mut Vec<u8>, first: u64, more: impl ExactSizeIterator<Item = u64>) {
    put_u(out, more.len() as u64);
    let mut key = first;
    for k in more {
        put_i(out, k.wrapping_sub(key) as i64);
        key = k;
    }
}

/// A frame of kind `kind` that starts with a synchrocell's name
/// ([`CellId`]: connection, template node, path, key): the kind and the
/// name.
///
/// Written into a buffer on the stack and appended in one copy when the
/// path has at most [`CELL_STEPS`] steps (every instance path but a deeply
/// nested one): a push per byte, each checking the vector's capacity,
/// was about 220 instructions a `Fired` frame on `bench/soak`'s respawn
/// network.
fn put_cell(out: &mut Vec<u8>, kind: u8, cell: &CellId) {
    if cell.path.len() <= CELL_STEPS {
        let mut b = [0u8; 1 + (5 + CELL_STEPS) * 10];
        b[0] = kind;
        let mut n = 1;
        put_u_at(&mut b, &mut n, u64::from(cell.conn.origin.0));
        put_u_at(&mut b, &mut n, cell.conn.seq);
        put_u_at(&mut b, &mut n, u64::from(cell.cell.0));
        put_u_at(&mut b, &mut n, cell.path.len() as u64);
        for &step in &cell.path {
            put_u_at(&mut b, &mut n, step);
        }
        put_u_at(&mut b, &mut n, cell.key);
        out.extend_from_slice(&b[..n]);
        return;
    }
    out.push(kind);
    put_conn(out, cell.conn);
    put_u(out, u64::from(cell.cell.0));
    put_u(out, cell.path.len() as u64);
    for &step in &cell.path {
        put_u(out, step);
    }
    put_u(out, cell.key);
}

fn put_stamps(out: &mut Vec<u8>, s: &Stamps) {
    let v = s.as_slice();
    put_u(out, v.len() as u64);
    for &x in v {
        put_u(out, x);
    }
}

fn put_credit(out: &mut Vec<u8>, d: &Dyadic) {
    put_u(out, d.pieces().count() as u64);
    for e in d.pieces() {
        put_u(out, e);
    }
}

/// An Items count (below [`COUNT4_LIMIT`]) as four varint bytes.
fn count4(v: u64) -> [u8; 4] {
    [
        0x80 | (v & 0x7f) as u8,
        0x80 | ((v >> 7) & 0x7f) as u8,
        0x80 | ((v >> 14) & 0x7f) as u8,
        ((v >> 21) & 0x7f) as u8,
    ]
}

/// Bit of a record's kind byte: a trace flow id follows its origin (only
/// records followed in a traced run have one; see `crate::instrument`).
const ITEM_FLOW: u8 = 4;

#[inline(always)]
fn put_record_head(out: &mut Vec<u8>, det: &Stamps, origin: Origin, entries: usize) {
    let flow = det.flow();
    out.push(if flow == 0 { 0 } else { ITEM_FLOW });
    put_stamps(out, det);
    // The origin as two small numbers (most are short varints).
    put_u(out, origin.to_bits() >> 32);
    put_u(out, origin.to_bits() & u64::from(u32::MAX));
    if flow != 0 {
        put_u(out, flow);
    }
    put_u(out, entries as u64);
}

fn put_label_new(out: &mut Vec<u8>, index: u32, kind: LabelKind, name: &str) {
    put_u(out, (u64::from(index) << 1) | 1);
    out.push(kind as u8);
    put_s(out, name);
}

fn put_inline(out: &mut Vec<u8>, codec: &str, meta: &[u8], body: &[u8]) {
    out.push(1);
    put_s(out, codec);
    put_bytes(out, meta);
    put_bytes(out, body);
}

fn put_ref(out: &mut Vec<u8>, home: Rank, id: u64, weight: u64, interface: &str, len: u64) {
    out.push(2);
    put_u(out, u64::from(home.0));
    put_u(out, id);
    put_u(out, weight);
    put_s(out, interface);
    put_u(out, len);
}

fn put_marker(out: &mut Vec<u8>, mut m: &Marker) {
    out.push(1);
    loop {
        put_u(out, m.owner);
        put_u(out, m.seq);
        put_u(out, m.weight);
        match &m.payload {
            None => {
                out.push(0);
                return;
            }
            Some(p) => {
                out.push(1);
                m = p;
            }
        }
    }
}

/// The frames of one message being built (the output manager keeps one
/// per destination and channel). Consecutive items of one connection
/// share an `Items` frame, its count patched in place.
#[derive(Default)]
pub(crate) struct Frames {
    bytes: Vec<u8>,
    /// The open Items frame: connection, count position, count.
    items: Option<(ConnId, usize, u64)>,
}

impl Frames {
    /// Empties the frames, keeping the buffer.
    pub(crate) fn clear(&mut self) {
        self.bytes.clear();
        self.items = None;
    }

    /// Appends a frame.
    pub(crate) fn push(&mut self, f: &Frame) {
        self.items = None;
        f.encode(&mut self.bytes);
    }

    /// Appends the `Fired` frame of `cell` (a tombstone; as
    /// `push(&Frame::Fired { .. })`, without building the frame).
    #[cfg(test)]
    pub(crate) fn fired(&mut self, cell: &CellId) {
        self.items = None;
        put_cell(&mut self.bytes, FIRED, cell);
    }

    /// Appends the tombstones `tombs` (a message's commits', each its
    /// `Fired` frame's bytes: [`Tomb`]): each run of consecutive
    /// tombstones of one instance as a `Fired keys` frame (as
    /// [`Frames::fired_cells`] writes it), a tombstone alone as its
    /// frame, copied whole.
    pub(crate) fn fired_tombs(&mut self, tombs: &[Tomb]) {
        self.items = None;
        let mut rest = tombs;
        while let Some((first, more)) = rest.split_first() {
            let b = first.bytes();
            let at = first.key_at();
            let place = &b[..at];
            // A frame's instance is self-delimiting (its path is counted),
            // so equal bytes up to `at` leave the key after them.
            let same = more
                .iter()
                .take_while(|t| t.bytes().get(..at) == Some(place))
                .count();
            if same == 0 {
                self.bytes.extend_from_slice(b);
            } else {
                self.bytes.push(FIRED_KEYS);
                self.bytes.extend_from_slice(&b[1..]);
                put_key_run(
                    &mut self.bytes,
                    Tomb::key_from(b, at),
                    more[..same].iter().map(|t| Tomb::key_from(t.bytes(), at)),
                );
            }
            rest = &more[same..];
        }
    }

    /// Appends the tombstones of `cells`: each run of consecutive cells
    /// of one instance in a `Fired keys` frame (its keys after the first
    /// as differences), a cell alone in a `Fired` frame. A commit's group
    /// fires about one cell, but a message carries a batch's commits,
    /// mostly of one instance (a cell per tag value): a frame apiece cost
    /// the receiver, node 0, about 170 instructions a cell to read and
    /// 110 to file by its instance.
    pub(crate) fn fired_cells(&mut self, cells: &[CellId]) {
        self.items = None;
        let mut rest = cells;
        while let Some((first, more)) = rest.split_first() {
            let same = more
                .iter()
                .take_while(|c| {
                    c.conn == first.conn && c.cell == first.cell && c.path == first.path
                })
                .count();
            if same == 0 {
                put_cell(&mut self.bytes, FIRED, first);
            } else {
                put_cell(&mut self.bytes, FIRED_KEYS, first);
                put_key_run(
                    &mut self.bytes,
                    first.key,
                    more[..same].iter().map(|c| c.key),
                );
            }
            rest = &more[same..];
        }
    }

    /// Ends the open Items frame: the next item starts a new one (a
    /// parked record's Items frame holds that record only).
    pub(crate) fn end_items(&mut self) {
        self.items = None;
    }

    /// Appends a record parked in slot `slot` of cell `cell` for node `to`:
    /// the `Parked` frame, then an Items frame of that record only (not an
    /// item of its connection: no acknowledgement counts it).
    pub(crate) fn parked(
        &mut self,
        cell: CellId,
        slot: u64,
        rec: Rec,
        enc: &mut Encoder,
        to: Rank,
        store: &FieldStore,
    ) -> Result<(), FieldStays> {
        let conn = cell.conn;
        self.push(&Frame::Parked { cell, slot });
        self.item(conn, enc, to, &Item::Rec(rec), store)?;
        self.end_items();
        Ok(())
    }

    /// Appends engine item `item` for connection `conn` at node `to`,
    /// written straight into the frames (see [`Encoder::item`]).
    pub(crate) fn item(
        &mut self,
        conn: ConnId,
        enc: &mut Encoder,
        to: Rank,
        item: &Item,
        store: &FieldStore,
    ) -> Result<(), FieldStays> {
        let (at, n) = match self.items {
            Some((c, at, n)) if c == conn => (at, n),
            _ => {
                self.bytes.push(ITEMS);
                put_conn(&mut self.bytes, conn);
                let at = self.bytes.len();
                self.bytes.extend_from_slice(&count4(0));
                (at, 0)
            }
        };
        enc.item(to, item, store, &mut self.bytes)?;
        let n = n + 1;
        self.bytes[at..at + 4].copy_from_slice(&count4(n));
        // Start a new frame long before the four bytes are full.
        self.items = (n + 1 < COUNT4_LIMIT).then_some((conn, at, n));
        Ok(())
    }

    /// Writes the message's header: `credit`, then the frames.
    pub(crate) fn message(&self, credit: &Dyadic, out: &mut Vec<u8>) {
        put_credit(out, credit);
        out.extend_from_slice(&self.bytes);
    }
}

// ---------------------------------------------------------------- the syntax

/// One message's header: the credit it carries and its frames.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Message<'a> {
    /// The share of the termination credit the message carries (every
    /// message carries some: the termination rules in [`super`]).
    pub credit: Dyadic,
    /// The frames in the order they are written and acted on.
    pub frames: Vec<Frame<'a>>,
}

/// A frame (the table at the top).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Frame<'a> {
    /// Instantiate `template` here, bind connection `conn` to its entry,
    /// and send its output back on `back`.
    Open {
        /// The new connection that carries the instance's input.
        conn: ConnId,
        /// The component to instantiate (the same graph on every node).
        template: NodeId,
        /// The connection, already bound on the sender, that carries the
        /// instance's output back.
        back: ConnId,
        /// The ordering stamps the instance starts with.
        start: Cow<'a, Stamps>,
    },
    /// Items for connection `conn`, in order (owned: tests and fuzzing;
    /// the managers stream items, `Frames::item`, [`FrameRef::Items`]).
    Items {
        /// The connection the items travel on.
        conn: ConnId,
        /// The items, in stream order.
        items: Vec<WireItem<'a>>,
    },
    /// Asks for the value of this node's export `id` (field store).
    Fetch {
        /// The export's number at the receiver.
        id: u64,
    },
    /// Gives `weight` back to this node's export `id`.
    Release {
        /// The export's number at the receiver.
        id: u64,
        /// The weight given back (never zero).
        weight: u64,
    },
    /// The sender failed with `message`.
    Fail {
        /// The error as the sender's users would read it.
        message: Cow<'a, str>,
    },
    /// The run is over.
    Shutdown,
    /// The value of the sender's export `id` (its meta part; the body is
    /// the message's payload).
    Bytes {
        /// The export's number at the sender (what the `Fetch` asked for).
        id: u64,
        /// The codec that decodes the value ([`snet_core::FieldCodec`]).
        codec: Cow<'a, str>,
        /// The value's meta part ([`snet_core::FieldData::encode_meta`]).
        meta: Cow<'a, [u8]>,
    },
    /// The sender acknowledges `count` items the receiver sent it
    /// (back-pressure across nodes).
    Ack {
        /// How many items more than the acknowledgements so far.
        count: u64,
    },
    /// Custody (`--on-node-loss respawn`): every record derived on the
    /// sender from the item the receiver sent it as its `id`th item (from
    /// 0, counting every item the receiver sent the sender) has left the
    /// sender, in this message or an earlier one: the receiver drops the
    /// item from its log (`dist::custody`). So for the `more` items after
    /// it, `id + 1` to `id + more`: the sender writes a run of
    /// consecutive identities as one frame (a commit of a synchrocell's
    /// group names two or more items, mostly consecutive; a frame apiece
    /// cost both sides about a tenth of custody's instructions).
    Done {
        /// The item's number among those the receiver sent the sender.
        id: u64,
        /// How many items after `id` are done too (`id + more` does not
        /// overflow).
        more: u64,
    },
    /// Custody: the next item the sender sends the receiver is its `next`th
    /// (node 0 replaying its log to a replacement node).
    Seq {
        /// The number of the next item.
        next: u64,
    },
    /// Custody: the synchrocell named `cell` has fired (a *tombstone*).
    /// From a node other than 0, with the `Done`s of the records whose
    /// group fired it (node 0 keeps it for the run); from node 0 to a
    /// replacement, before the records replayed to it: the replacement's
    /// cell of that name starts fired (`dist::custody`).
    Fired {
        /// The cell's name across incarnations.
        cell: CellId,
    },
    /// Custody: the synchrocell named `cell` and those of its instance
    /// with keys `more` have fired (a [`Frame::Fired`] each, in this
    /// order).
    FiredKeys {
        /// The first cell's name.
        cell: CellId,
        /// The keys of the other cells, in `cell`'s instance.
        more: Vec<u64>,
    },
    /// Custody: the stream is over (node 0 is quiescent with no input
    /// left): the receiver's synchrocells stop protecting the records
    /// they store, whose groups then commit (`dist::custody`).
    Drain,
    /// Custody: the record in the next frame (an `Items` frame of one
    /// record) is the one stored in slot `slot` of the synchrocell named
    /// `cell`, *parked* by a drain: from a node other than 0, in the
    /// commit of its group (node 0 keeps it until the cell's tombstone);
    /// from node 0 to a replacement, after the tombstones and before the
    /// records replayed to it: the replacement's cell of that name starts
    /// with it in that slot (`dist::custody`).
    Parked {
        /// The cell's name across incarnations.
        cell: CellId,
        /// The slot (the pattern's position in the cell).
        slot: u64,
    },
    /// A field value given ahead of the record that holds it (its meta
    /// part; the body is the message's payload): the receiver queues it
    /// for the sender's next record value of kind 3 (a given field).
    Given {
        /// The codec that decodes the value ([`snet_core::FieldCodec`]).
        codec: Cow<'a, str>,
        /// The value's meta part ([`snet_core::FieldData::encode_meta`]).
        meta: Cow<'a, [u8]>,
    },
}

/// A synchrocell's name on a node other than 0, the same in every
/// incarnation of the node: the connection from node 0 its records come
/// on, the cell's template node, the path of its instance within the
/// connection's instance, and its key in the entity that runs it (0 for
/// a lone cell, the chain position in `[| .. |] * p`, the tag value in
/// `[| .. |] ! <t>`).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CellId {
    /// The connection its instance was opened for.
    pub conn: ConnId,
    /// The synchrocell's template node.
    pub cell: NodeId,
    /// Where the instance is, from the connection's template down: one
    /// step per choice on the way (a component's position in a serial
    /// composition, a parallel branch, a star's stage, a split's tag
    /// value), so that two instances of one template (a net used twice,
    /// a cell inside a star's or a split's replica) have two names.
    pub path: Path,
    /// Its key in the instance.
    pub key: u64,
}

/// An instance path ([`CellId::path`]): short ones inline.
pub type Path = smallvec::SmallVec<[u64; 2]>;

/// A synchrocell's tombstone as a commit carries it on a node other than
/// 0 (custody.rs): its `Fired` frame, written when the cell fires, from
/// the bytes its instance's frames start with ([`Tomb::prefix`], which a
/// cell entity's guard writes once) and the key. So a fire builds no
/// [`CellId`], and the commit's message takes the frame in one copy: the
/// name built, moved through the commit and written out a varint at a
/// time was about 150 instructions a fire on `bench/soak`'s respawn
/// network.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Tomb {
    /// A frame of up to [`TOMB_INLINE`] bytes (every instance but a
    /// deeply nested one with large numbers): its length and bytes.
    Inline(u8, [u8; TOMB_INLINE]),
    Long(Box<[u8]>),
}

/// The bytes a [`Tomb`] keeps in place.
const TOMB_INLINE: usize = 38;

impl Tomb {
    /// What the `Fired` frames of `cell`'s instance start with: the
    /// frame's kind and the name without its key (a [`Tomb`] to which
    /// [`Tomb::new`] adds the key).
    pub(crate) fn prefix(cell: &CellId) -> Tomb {
        let mut v = vec![FIRED];
        put_conn(&mut v, cell.conn);
        put_u(&mut v, u64::from(cell.cell.0));
        put_u(&mut v, cell.path.len() as u64);
        for &step in &cell.path {
            put_u(&mut v, step);
        }
        Tomb::Long(v.into_boxed_slice())
    }

    /// The `Fired` frame of key `key` in the instance whose frames start
    /// with `prefix` ([`Tomb::prefix`]).
    #[inline]
    pub(crate) fn new(prefix: &Tomb, key: u64) -> Tomb {
        match prefix {
            Tomb::Inline(n, b) if usize::from(*n) + 10 <= TOMB_INLINE => {
                let (mut b, mut n) = (*b, usize::from(*n));
                put_u_at(&mut b, &mut n, key);
                Tomb::Inline(n as u8, b)
            }
            _ => {
                let mut v = prefix.bytes().to_vec();
                put_u(&mut v, key);
                Tomb::Long(v.into_boxed_slice())
            }
        }
    }

    /// As [`Tomb::prefix`], kept in place if it leaves room for any key.
    pub(crate) fn prefix_inline(cell: &CellId) -> Tomb {
        let p = Tomb::prefix(cell);
        let b = p.bytes();
        if b.len() + 10 > TOMB_INLINE {
            return p;
        }
        let mut a = [0u8; TOMB_INLINE];
        a[..b.len()].copy_from_slice(b);
        Tomb::Inline(b.len() as u8, a)
    }

    /// The `Fired` frame of `cell`.
    #[cfg(all(test, not(loom)))]
    pub(crate) fn of(cell: &CellId) -> Tomb {
        Tomb::new(&Tomb::prefix_inline(cell), cell.key)
    }

    /// The frame's bytes.
    #[inline]
    pub(crate) fn bytes(&self) -> &[u8] {
        match self {
            Tomb::Inline(n, b) => &b[..usize::from(*n)],
            Tomb::Long(b) => b,
        }
    }

    /// Where the key, the frame's last varint, starts in
    /// [`Tomb::bytes`] (the instance's bytes before it).
    #[inline]
    fn key_at(&self) -> usize {
        let b = self.bytes();
        let mut i = b.len() - 1;
        while i > 0 && b[i - 1] & 0x80 != 0 {
            i -= 1;
        }
        i
    }

    /// The key a frame's bytes `b` hold from `at` on.
    #[inline]
    fn key_from(b: &[u8], at: usize) -> u64 {
        b[at..]
            .iter()
            .rev()
            .fold(0, |v, &x| v << 7 | u64::from(x & 0x7f))
    }

    /// The cell's key (the frame's last varint).
    #[cfg(test)]
    pub(crate) fn key(&self) -> u64 {
        Tomb::key_from(self.bytes(), self.key_at())
    }
}

/// A [`CellId`] as a `Fired` frame carries it, checked and not yet
/// built: its instance (connection, template node, path) as the bytes
/// that encode it, and its key. Node 0 files a tombstone by comparing
/// those bytes with its last instance's (`custody::Tombstones`), so that
/// a run of fires in one instance builds no path; [`CellRef::id`] builds
/// the name.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct CellRef<'a> {
    place: &'a [u8],
    key: u64,
}

impl<'a> CellRef<'a> {
    /// The bytes that encode the cell's instance (equal bytes, equal
    /// instances; the converse need not hold).
    pub fn place(&self) -> &'a [u8] {
        self.place
    }

    /// The cell's key in its instance.
    pub fn key(&self) -> u64 {
        self.key
    }

    /// The cell's name.
    pub fn id(&self) -> CellId {
        let mut r = Reader {
            b: self.place,
            at: 0,
        };
        let (conn, cell, path) = r
            .place()
            .expect("a cell's instance is checked when its frame is read");
        CellId {
            conn,
            cell,
            path,
            key: self.key,
        }
    }
}

/// The cells of a `Fired keys` frame as read ([`FrameRef::FiredKeys`]):
/// the first one, then more keys in its instance, kept as the checked
/// bytes that encode them (their differences).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct CellRun<'a> {
    first: CellRef<'a>,
    more: u64,
    deltas: &'a [u8],
}

impl<'a> CellRun<'a> {
    /// The run of `cell` alone (a `Fired` frame's).
    pub fn one(cell: CellRef<'a>) -> CellRun<'a> {
        CellRun {
            first: cell,
            more: 0,
            deltas: &[],
        }
    }

    /// The bytes that encode the cells' instance ([`CellRef::place`]).
    pub fn place(&self) -> &'a [u8] {
        self.first.place
    }

    /// Calls `f` with each of the cells' keys, in the frame's order (a
    /// loop: node 0 files a run's keys so, about 30 instructions a key
    /// where [`CellRun::keys`]'s iterator took 50).
    #[inline]
    pub fn for_each_key(&self, mut f: impl FnMut(u64)) {
        let mut key = self.first.key;
        f(key);
        let mut r = Reader {
            b: self.deltas,
            at: 0,
        };
        for _ in 0..self.more {
            // (Checked when the frame was read.)
            let Ok(d) = r.i() else { return };
            key = key.wrapping_add(d as u64);
            f(key);
        }
    }

    /// The cells' keys, in the frame's order.
    pub fn keys(&self) -> impl Iterator<Item = u64> + 'a {
        let mut r = Reader {
            b: self.deltas,
            at: 0,
        };
        let mut key = self.first.key;
        std::iter::once(key).chain((0..self.more).map(move |_| {
            let d = r
                .i()
                .expect("a run's keys are checked when its frame is read");
            key = key.wrapping_add(d as u64);
            key
        }))
    }

    /// The cells, in the frame's order.
    pub fn cells(&self) -> impl Iterator<Item = CellRef<'a>> + 'a {
        let place = self.first.place;
        self.keys().map(move |key| CellRef { place, key })
    }
}

/// A frame as [`MessageReader::next_frame`] reads it: an `Items` frame is
/// its connection and count, its items read next
/// (`MessageReader::next_item` or [`MessageReader::next_wire_item`]).
/// The fields are those of the [`Frame`] of the same name, borrowed from
/// the header where they can be.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FrameRef<'a> {
    /// [`Frame::Open`].
    Open {
        /// The new connection that carries the instance's input.
        conn: ConnId,
        /// The component to instantiate.
        template: NodeId,
        /// The connection that carries the instance's output back.
        back: ConnId,
        /// The ordering stamps the instance starts with.
        start: Stamps,
    },
    /// [`Frame::Items`]: the items follow in the reader.
    Items {
        /// The connection the items travel on.
        conn: ConnId,
        /// How many items follow.
        count: u64,
    },
    /// [`Frame::Fetch`].
    Fetch {
        /// The export's number at the receiver.
        id: u64,
    },
    /// [`Frame::Release`].
    Release {
        /// The export's number at the receiver.
        id: u64,
        /// The weight given back.
        weight: u64,
    },
    /// [`Frame::Fail`].
    Fail {
        /// The error as the sender's users would read it.
        message: &'a str,
    },
    /// [`Frame::Shutdown`].
    Shutdown,
    /// [`Frame::Bytes`].
    Bytes {
        /// The export's number at the sender.
        id: u64,
        /// The codec that decodes the value.
        codec: &'a str,
        /// The value's meta part.
        meta: &'a [u8],
    },
    /// [`Frame::Ack`].
    Ack {
        /// How many items more are acknowledged.
        count: u64,
    },
    /// [`Frame::Done`].
    Done {
        /// The item's number among those the receiver sent the sender.
        id: u64,
        /// How many items after `id` are done too.
        more: u64,
    },
    /// [`Frame::Seq`].
    Seq {
        /// The number of the next item.
        next: u64,
    },
    /// [`Frame::Fired`].
    Fired {
        /// The cell's name across incarnations, as read ([`CellRef::id`]
        /// is the [`CellId`]).
        cell: CellRef<'a>,
    },
    /// [`Frame::FiredKeys`].
    FiredKeys {
        /// The cells, as read ([`CellRun::cells`]).
        cells: CellRun<'a>,
    },
    /// [`Frame::Drain`].
    Drain,
    /// [`Frame::Parked`].
    Parked {
        /// The cell's name across incarnations.
        cell: CellId,
        /// The slot the record is parked in.
        slot: u64,
    },
    /// [`Frame::Given`].
    Given {
        /// The codec that decodes the value.
        codec: &'a str,
        /// The value's meta part.
        meta: &'a [u8],
    },
}

/// An item as it travels.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WireItem<'a> {
    /// A record.
    Rec {
        /// Its ordering stamps (deterministic combinators).
        det: Stamps,
        /// The input record it derives from (for error messages and traces).
        origin: Origin,
        /// Its entries, labels through the pair's dictionary.
        entries: Vec<(WireLabel<'a>, WireValue<'a>)>,
    },
    /// A sort marker of a deterministic combinator.
    Marker(Marker),
    /// Feedback: the loop drained; the entity releases the input it held
    /// back.
    Resume,
}

/// A label as it travels: a dictionary number, or a definition.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WireLabel<'a> {
    /// The dictionary's `n`th label.
    Known(u32),
    /// Defines the dictionary's `index`th label.
    New {
        /// The number later uses refer to (always the dictionary's next).
        index: u32,
        /// Field, tag or binding tag.
        kind: LabelKind,
        /// The label's name.
        name: Cow<'a, str>,
    },
}

/// A record entry's value as it travels.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WireValue<'a> {
    /// A tag's or binding tag's value.
    Int(i64),
    /// A field value copied into the frame.
    Inline {
        /// The codec that decodes it.
        codec: Cow<'a, str>,
        /// Its meta part.
        meta: Cow<'a, [u8]>,
        /// Its body.
        body: Cow<'a, [u8]>,
    },
    /// A weighted reference to the value of export `id` at node `home`.
    Ref {
        /// The node that holds the value.
        home: Rank,
        /// The export's number there.
        id: u64,
        /// The weight the reference carries (never zero).
        weight: u64,
        /// The value's interface (and codec).
        interface: Cow<'a, str>,
        /// The size of the value's encoding, in bytes.
        len: u64,
    },
    /// The oldest field value the sender gave the receiver ahead of this
    /// record ([`Frame::Given`]) and no record took yet.
    Given,
}

fn owned<T: ToOwned + ?Sized>(c: Cow<'_, T>) -> Cow<'static, T> {
    Cow::Owned(c.into_owned())
}

impl<'a> Message<'a> {
    /// Appends the header's bytes to `out`.
    pub fn encode(&self, out: &mut Vec<u8>) {
        put_credit(out, &self.credit);
        for f in &self.frames {
            f.encode(out);
        }
    }

    /// Reads a whole header (through [`MessageReader`]).
    pub fn decode(b: &'a [u8]) -> Result<Message<'a>, WireError> {
        let (credit, mut r) = MessageReader::new(b)?;
        let mut frames = Vec::new();
        while let Some(f) = r.next_frame()? {
            frames.push(match f {
                FrameRef::Open {
                    conn,
                    template,
                    back,
                    start,
                } => Frame::Open {
                    conn,
                    template,
                    back,
                    start: Cow::Owned(start),
                },
                FrameRef::Items { conn, count } => {
                    // Every item takes a byte at least: no more room than that.
                    let mut items = Vec::with_capacity((count as usize).min(r.r.left()));
                    while let Some(it) = r.next_wire_item()? {
                        items.push(it);
                    }
                    Frame::Items { conn, items }
                }
                FrameRef::Fetch { id } => Frame::Fetch { id },
                FrameRef::Release { id, weight } => Frame::Release { id, weight },
                FrameRef::Fail { message } => Frame::Fail {
                    message: Cow::Borrowed(message),
                },
                FrameRef::Shutdown => Frame::Shutdown,
                FrameRef::Bytes { id, codec, meta } => Frame::Bytes {
                    id,
                    codec: Cow::Borrowed(codec),
                    meta: Cow::Borrowed(meta),
                },
                FrameRef::Ack { count } => Frame::Ack { count },
                FrameRef::Done { id, more } => Frame::Done { id, more },
                FrameRef::Seq { next } => Frame::Seq { next },
                FrameRef::Fired { cell } => Frame::Fired { cell: cell.id() },
                FrameRef::FiredKeys { cells } => Frame::FiredKeys {
                    cell: cells.first.id(),
                    more: cells.keys().skip(1).collect(),
                },
                FrameRef::Drain => Frame::Drain,
                FrameRef::Parked { cell, slot } => Frame::Parked { cell, slot },
                FrameRef::Given { codec, meta } => Frame::Given {
                    codec: Cow::Borrowed(codec),
                    meta: Cow::Borrowed(meta),
                },
            });
        }
        Ok(Message { credit, frames })
    }

    /// The message with everything it borrows from its bytes copied
    /// (compare messages decoded from different buffers through this).
    pub fn into_owned(self) -> Message<'static> {
        Message {
            credit: self.credit,
            frames: self.frames.into_iter().map(Frame::into_owned).collect(),
        }
    }
}

impl Frame<'_> {
    /// Appends the frame's bytes to `out`.
    pub fn encode(&self, out: &mut Vec<u8>) {
        match self {
            Frame::Open {
                conn,
                template,
                back,
                start,
            } => {
                out.push(OPEN);
                put_conn(out, *conn);
                put_u(out, u64::from(template.0));
                put_conn(out, *back);
                put_stamps(out, start);
            }
            Frame::Items { conn, items } => {
                out.push(ITEMS);
                put_conn(out, *conn);
                let n = items.len() as u64;
                if n < COUNT4_LIMIT {
                    out.extend_from_slice(&count4(n));
                } else {
                    put_u(out, n);
                }
                for it in items {
                    it.encode(out);
                }
            }
            Frame::Fetch { id } => {
                out.push(FETCH);
                put_u(out, *id);
            }
            Frame::Release { id, weight } => {
                out.push(RELEASE);
                put_u(out, *id);
                put_u(out, *weight);
            }
            Frame::Fail { message } => {
                out.push(FAIL);
                put_s(out, message);
            }
            Frame::Shutdown => out.push(SHUTDOWN),
            Frame::Bytes { id, codec, meta } => {
                out.push(BYTES);
                put_u(out, *id);
                put_s(out, codec);
                put_bytes(out, meta);
            }
            Frame::Ack { count } => {
                out.push(ACK);
                put_u(out, *count);
            }
            Frame::Done { id, more } => {
                out.push(DONE);
                put_u(out, *id);
                put_u(out, *more);
            }
            Frame::Seq { next } => {
                out.push(SEQ);
                put_u(out, *next);
            }
            Frame::Fired { cell } => put_cell(out, FIRED, cell),
            Frame::FiredKeys { cell, more } => {
                put_cell(out, FIRED_KEYS, cell);
                put_key_run(out, cell.key, more.iter().copied());
            }
            Frame::Drain => out.push(DRAIN),
            Frame::Parked { cell, slot } => {
                put_cell(out, PARKED, cell);
                put_u(out, *slot);
            }
            Frame::Given { codec, meta } => {
                out.push(GIVEN);
                put_s(out, codec);
                put_bytes(out, meta);
            }
        }
    }

    /// As [`Message::into_owned`].
    pub fn into_owned(self) -> Frame<'static> {
        match self {
            Frame::Open {
                conn,
                template,
                back,
                start,
            } => Frame::Open {
                conn,
                template,
                back,
                start: owned(start),
            },
            Frame::Items { conn, items } => Frame::Items {
                conn,
                items: items.into_iter().map(WireItem::into_owned).collect(),
            },
            Frame::Fetch { id } => Frame::Fetch { id },
            Frame::Release { id, weight } => Frame::Release { id, weight },
            Frame::Fail { message } => Frame::Fail {
                message: owned(message),
            },
            Frame::Shutdown => Frame::Shutdown,
            Frame::Bytes { id, codec, meta } => Frame::Bytes {
                id,
                codec: owned(codec),
                meta: owned(meta),
            },
            Frame::Ack { count } => Frame::Ack { count },
            Frame::Done { id, more } => Frame::Done { id, more },
            Frame::Seq { next } => Frame::Seq { next },
            Frame::Fired { cell } => Frame::Fired { cell },
            Frame::FiredKeys { cell, more } => Frame::FiredKeys { cell, more },
            Frame::Drain => Frame::Drain,
            Frame::Parked { cell, slot } => Frame::Parked { cell, slot },
            Frame::Given { codec, meta } => Frame::Given {
                codec: owned(codec),
                meta: owned(meta),
            },
        }
    }
}

impl WireItem<'_> {
    /// Appends the item's bytes to `out`.
    pub fn encode(&self, out: &mut Vec<u8>) {
        match self {
            WireItem::Rec {
                det,
                origin,
                entries,
            } => {
                put_record_head(out, det, *origin, entries.len());
                for (l, v) in entries {
                    match l {
                        WireLabel::Known(i) => put_u(out, u64::from(*i) << 1),
                        WireLabel::New { index, kind, name } => {
                            put_label_new(out, *index, *kind, name)
                        }
                    }
                    match v {
                        WireValue::Int(i) => {
                            out.push(0);
                            put_i(out, *i);
                        }
                        WireValue::Inline { codec, meta, body } => {
                            put_inline(out, codec, meta, body)
                        }
                        WireValue::Ref {
                            home,
                            id,
                            weight,
                            interface,
                            len,
                        } => put_ref(out, *home, *id, *weight, interface, *len),
                        WireValue::Given => out.push(3),
                    }
                }
            }
            WireItem::Marker(m) => put_marker(out, m),
            WireItem::Resume => out.push(2),
        }
    }

    /// As [`Message::into_owned`].
    pub fn into_owned(self) -> WireItem<'static> {
        match self {
            WireItem::Rec {
                det,
                origin,
                entries,
            } => WireItem::Rec {
                det,
                origin,
                entries: entries
                    .into_iter()
                    .map(|(l, v)| (l.into_owned(), v.into_owned()))
                    .collect(),
            },
            WireItem::Marker(m) => WireItem::Marker(m),
            WireItem::Resume => WireItem::Resume,
        }
    }
}

impl WireLabel<'_> {
    /// As [`Message::into_owned`].
    pub fn into_owned(self) -> WireLabel<'static> {
        match self {
            WireLabel::Known(i) => WireLabel::Known(i),
            WireLabel::New { index, kind, name } => WireLabel::New {
                index,
                kind,
                name: owned(name),
            },
        }
    }
}

impl WireValue<'_> {
    /// As [`Message::into_owned`].
    pub fn into_owned(self) -> WireValue<'static> {
        match self {
            WireValue::Int(i) => WireValue::Int(i),
            WireValue::Inline { codec, meta, body } => WireValue::Inline {
                codec: owned(codec),
                meta: owned(meta),
                body: owned(body),
            },
            WireValue::Ref {
                home,
                id,
                weight,
                interface,
                len,
            } => WireValue::Ref {
                home,
                id,
                weight,
                interface: owned(interface),
                len,
            },
            WireValue::Given => WireValue::Given,
        }
    }
}

// ---------------------------------------------------------------- reading

/// Reads a header; every read checks its bounds.
struct Reader<'a> {
    b: &'a [u8],
    at: usize,
}

/// An item's kind and, for a record, everything before its entries.
enum ItemHead {
    Rec {
        det: Stamps,
        origin: Origin,
        entries: u64,
    },
    Marker(Marker),
    Resume,
}

impl<'a> Reader<'a> {
    fn done(&self) -> bool {
        self.at >= self.b.len()
    }

    fn left(&self) -> usize {
        self.b.len().saturating_sub(self.at)
    }

    fn err<T>(&self, what: Malformed) -> Result<T, WireError> {
        Err(WireError { at: self.at, what })
    }

    #[inline(always)]
    fn byte(&mut self) -> Result<u8, WireError> {
        match self.b.get(self.at) {
            Some(&v) => {
                self.at += 1;
                Ok(v)
            }
            None => self.err(Malformed::Truncated),
        }
    }

    /// A synchrocell's name, as [`put_cell`] writes it.
    fn cell(&mut self) -> Result<CellId, WireError> {
        let (conn, cell, path) = self.place()?;
        Ok(CellId {
            conn,
            cell,
            path,
            key: self.u()?,
        })
    }

    /// A synchrocell's instance (its name without the key).
    fn place(&mut self) -> Result<(ConnId, NodeId, Path), WireError> {
        Ok((
            self.conn()?,
            NodeId(self.u32("template node")?),
            self.path()?,
        ))
    }

    /// A synchrocell's name, checked as [`Reader::cell`] reads it, its
    /// instance left as bytes (a `Fired` frame's: [`CellRef`]).
    fn cell_ref(&mut self) -> Result<CellRef<'a>, WireError> {
        let start = self.at;
        self.u32("node")?;
        self.u()?;
        self.u32("template node")?;
        let n = self.u()?;
        if n > (self.b.len() - self.at) as u64 {
            return self.err(Malformed::Truncated);
        }
        for _ in 0..n {
            self.u()?;
        }
        let place = &self.b[start..self.at];
        Ok(CellRef {
            place,
            key: self.u()?,
        })
    }

    /// A `Fired keys` frame's cells: the first as [`Reader::cell_ref`]
    /// reads it, a count, and that many key differences, checked.
    fn cell_run(&mut self) -> Result<CellRun<'a>, WireError> {
        let first = self.cell_ref()?;
        let more = self.u()?;
        if more > self.left() as u64 {
            return self.err(Malformed::Truncated);
        }
        let start = self.at;
        for _ in 0..more {
            self.u()?;
        }
        Ok(CellRun {
            first,
            more,
            deltas: &self.b[start..self.at],
        })
    }

    /// An instance path: a count, then the steps (each at least a byte,
    /// so a count beyond the bytes left is a truncated frame).
    fn path(&mut self) -> Result<Path, WireError> {
        let n = self.u()?;
        if n > (self.b.len() - self.at) as u64 {
            return self.err(Malformed::Truncated);
        }
        // (A loop: `collect` into a `Result` costs a node 0 reading a
        // `Fired` frame per fire more than the varints.)
        let mut p = Path::new();
        for _ in 0..n {
            p.push(self.u()?);
        }
        Ok(p)
    }

    /// A varint: one or two bytes (most: a `Fired` frame's key, a `Done`
    /// frame's item below 16,384) inline, longer ones out of line (a
    /// two-byte one there was about 30 instructions, a tenth of node 0's
    /// reading and filing of a tombstone on `bench/soak`'s respawn
    /// network).
    #[inline(always)]
    fn u(&mut self) -> Result<u64, WireError> {
        match self.b.get(self.at) {
            Some(&b) if b & 0x80 == 0 => {
                self.at += 1;
                Ok(u64::from(b))
            }
            Some(&b) => match self.b.get(self.at + 1) {
                Some(&c) if c & 0x80 == 0 => {
                    self.at += 2;
                    Ok(u64::from(b & 0x7f) | u64::from(c) << 7)
                }
                _ => self.u_long(),
            },
            None => self.u_long(),
        }
    }

    #[inline(never)]
    fn u_long(&mut self) -> Result<u64, WireError> {
        let mut v = 0u64;
        let mut shift = 0;
        loop {
            let b = self.byte()?;
            if shift >= 64 {
                return self.err(Malformed::VarintTooLong);
            }
            v |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
            shift += 7;
        }
    }

    fn u32(&mut self, what: &'static str) -> Result<u32, WireError> {
        let v = self.u()?;
        u32::try_from(v).or_else(|_| self.err(Malformed::TooLarge(what)))
    }

    fn i(&mut self) -> Result<i64, WireError> {
        let u = self.u()?;
        Ok(((u >> 1) as i64) ^ -((u & 1) as i64))
    }

    fn bytes(&mut self) -> Result<&'a [u8], WireError> {
        let n = self.u()?;
        let end = usize::try_from(n)
            .ok()
            .and_then(|n| self.at.checked_add(n))
            .filter(|&end| end <= self.b.len());
        match end {
            Some(end) => {
                let s = &self.b[self.at..end];
                self.at = end;
                Ok(s)
            }
            None => self.err(Malformed::TruncatedBytes),
        }
    }

    fn s(&mut self) -> Result<&'a str, WireError> {
        let b = self.bytes()?;
        std::str::from_utf8(b).or_else(|_| self.err(Malformed::NotUtf8))
    }

    fn conn(&mut self) -> Result<ConnId, WireError> {
        Ok(ConnId {
            origin: Rank(self.u32("node")?),
            seq: self.u()?,
        })
    }

    fn stamps(&mut self) -> Result<Stamps, WireError> {
        let n = self.u()?;
        let mut s = Stamps::new();
        for _ in 0..n {
            s.push(self.u()?);
        }
        Ok(s)
    }

    fn credit(&mut self) -> Result<Dyadic, WireError> {
        let n = self.u()?;
        let mut pieces: SmallVec<[u64; 8]> = SmallVec::with_capacity((n as usize).min(self.left()));
        for _ in 0..n {
            pieces.push(self.u()?);
        }
        Dyadic::from_canonical(&pieces).map_or_else(|| self.err(Malformed::BadCredit), Ok)
    }

    fn marker(&mut self) -> Result<Marker, WireError> {
        // Iteratively (a malformed message may nest without end): the
        // chain outermost first, then built from the innermost.
        let mut chain: SmallVec<[(u64, u64, u64); 2]> = SmallVec::new();
        loop {
            if chain.len() == MAX_MARKER_DEPTH {
                return self.err(Malformed::MarkerTooDeep);
            }
            let (owner, seq, weight) = (self.u()?, self.u()?, self.u()?);
            chain.push((owner, seq, weight));
            if self.byte()? == 0 {
                break;
            }
        }
        let mut m: Option<Marker> = None;
        for (owner, seq, weight) in chain.into_iter().rev() {
            m = Some(Marker {
                owner,
                seq,
                weight,
                payload: m.map(Box::new),
                custody: Default::default(),
            });
        }
        Ok(m.expect("a chain of at least one marker"))
    }

    fn frame(&mut self) -> Result<FrameRef<'a>, WireError> {
        Ok(match self.byte()? {
            OPEN => FrameRef::Open {
                conn: self.conn()?,
                template: NodeId(self.u32("template")?),
                back: self.conn()?,
                start: self.stamps()?,
            },
            ITEMS => FrameRef::Items {
                conn: self.conn()?,
                count: self.u()?,
            },
            FETCH => FrameRef::Fetch { id: self.u()? },
            RELEASE => FrameRef::Release {
                id: self.u()?,
                weight: self.u()?,
            },
            FAIL => FrameRef::Fail { message: self.s()? },
            SHUTDOWN => FrameRef::Shutdown,
            BYTES => FrameRef::Bytes {
                id: self.u()?,
                codec: self.s()?,
                meta: self.bytes()?,
            },
            ACK => FrameRef::Ack { count: self.u()? },
            DONE => {
                let id = self.u()?;
                let more = self.u()?;
                if id.checked_add(more).is_none() {
                    return self.err(Malformed::TooLarge("Done run"));
                }
                FrameRef::Done { id, more }
            }
            SEQ => FrameRef::Seq { next: self.u()? },
            FIRED => FrameRef::Fired {
                cell: self.cell_ref()?,
            },
            FIRED_KEYS => FrameRef::FiredKeys {
                cells: self.cell_run()?,
            },
            DRAIN => FrameRef::Drain,
            PARKED => FrameRef::Parked {
                cell: self.cell()?,
                slot: self.u()?,
            },
            GIVEN => FrameRef::Given {
                codec: self.s()?,
                meta: self.bytes()?,
            },
            k => {
                self.at -= 1;
                return self.err(Malformed::UnknownFrame(k));
            }
        })
    }

    #[inline(always)]
    fn item_head(&mut self) -> Result<ItemHead, WireError> {
        match self.byte()? {
            kind @ (0 | ITEM_FLOW) => {
                let mut det = self.stamps()?;
                let (number, line) = (self.u()?, self.u()?);
                if number > u64::from(u32::MAX) || line > u64::from(u32::MAX) {
                    return self.err(Malformed::BadOrigin);
                }
                let origin = Origin::from_bits(number << 32 | line);
                if kind == ITEM_FLOW {
                    let flow = self.u()?;
                    if flow == 0 {
                        return self.err(Malformed::BadOrigin);
                    }
                    det.set_flow(flow);
                }
                let entries = self.u()?;
                Ok(ItemHead::Rec {
                    det,
                    origin,
                    entries,
                })
            }
            1 => Ok(ItemHead::Marker(self.marker()?)),
            2 => Ok(ItemHead::Resume),
            k => {
                self.at -= 1;
                self.err(Malformed::BadItemKind(k))
            }
        }
    }

    #[inline(always)]
    fn label(&mut self) -> Result<WireLabel<'a>, WireError> {
        let v = self.u()?;
        let index = u32::try_from(v >> 1).or_else(|_| self.err(Malformed::TooLarge("label")))?;
        if v & 1 == 0 {
            return Ok(WireLabel::Known(index));
        }
        let kind = match self.byte()? {
            0 => LabelKind::Field,
            1 => LabelKind::Tag,
            2 => LabelKind::BTag,
            k => {
                self.at -= 1;
                return self.err(Malformed::BadLabelKind(k));
            }
        };
        Ok(WireLabel::New {
            index,
            kind,
            name: Cow::Borrowed(self.s()?),
        })
    }

    #[inline(always)]
    fn value(&mut self) -> Result<WireValue<'a>, WireError> {
        match self.byte()? {
            0 => Ok(WireValue::Int(self.i()?)),
            1 => Ok(WireValue::Inline {
                codec: Cow::Borrowed(self.s()?),
                meta: Cow::Borrowed(self.bytes()?),
                body: Cow::Borrowed(self.bytes()?),
            }),
            2 => Ok(WireValue::Ref {
                home: Rank(self.u32("node")?),
                id: self.u()?,
                weight: self.u()?,
                interface: Cow::Borrowed(self.s()?),
                len: self.u()?,
            }),
            3 => Ok(WireValue::Given),
            k => {
                self.at -= 1;
                self.err(Malformed::BadValueKind(k))
            }
        }
    }

    fn wire_item(&mut self) -> Result<WireItem<'a>, WireError> {
        Ok(match self.item_head()? {
            ItemHead::Rec {
                det,
                origin,
                entries: n,
            } => {
                let mut entries = Vec::with_capacity((n as usize).min(self.left()));
                for _ in 0..n {
                    let l = self.label()?;
                    entries.push((l, self.value()?));
                }
                WireItem::Rec {
                    det,
                    origin,
                    entries,
                }
            }
            ItemHead::Marker(m) => WireItem::Marker(m),
            ItemHead::Resume => WireItem::Resume,
        })
    }
}

/// Reads one message's header frame by frame, and an `Items` frame item
/// by item: the one parser of the format.
pub struct MessageReader<'a> {
    r: Reader<'a>,
    /// Items of the current `Items` frame not read yet.
    items: u64,
}

impl<'a> MessageReader<'a> {
    /// Starts reading header `b`: the credit it carries, and the reader
    /// positioned at its first frame.
    pub fn new(b: &'a [u8]) -> Result<(Dyadic, MessageReader<'a>), WireError> {
        let mut r = Reader { b, at: 0 };
        let credit = r.credit()?;
        Ok((credit, MessageReader { r, items: 0 }))
    }

    /// The next frame, `None` at the end. The items of an `Items` frame
    /// not read when this is called are read and dropped.
    pub fn next_frame(&mut self) -> Result<Option<FrameRef<'a>>, WireError> {
        while self.next_wire_item()?.is_some() {}
        if self.r.done() {
            return Ok(None);
        }
        let f = self.r.frame()?;
        if let FrameRef::Items { count, .. } = f {
            self.items = count;
        }
        Ok(Some(f))
    }

    /// The next item of the current `Items` frame as it travels, `None`
    /// after its last.
    pub fn next_wire_item(&mut self) -> Result<Option<WireItem<'a>>, WireError> {
        if self.items == 0 {
            return Ok(None);
        }
        self.items -= 1;
        self.r.wire_item().map(Some)
    }

    /// The next item of the current `Items` frame, sent by node `from`,
    /// as the engine's item (straight from the bytes, see
    /// [`Decoder::item`]); `None` after its last.
    #[inline(always)]
    pub(crate) fn next_item(
        &mut self,
        dec: &mut Decoder,
        from: Rank,
        store: &FieldStore,
        codecs: &Codecs,
    ) -> Result<Option<Item>, ItemError> {
        if self.items == 0 {
            return Ok(None);
        }
        self.items -= 1;
        dec.item(from, &mut self.r, store, codecs).map(Some)
    }
}

// ---------------------------------------------------------------- the meaning

/// The sending side of the label dictionaries and field references.
pub(crate) struct Encoder {
    me: Rank,
    dicts: Vec<FxHashMap<Label, u32>>,
    inline_limit: usize,
    /// A node that may be lost (`--on-node-loss respawn`, not node 0):
    /// no field's only copy may stay here, so a field goes by value
    /// unless node 0 is its home ([`Encoder::keeping_nothing`]).
    keep_nothing: bool,
    /// The items encoded are dropped once sent (every node but node 0 of
    /// a run that replays a lost node, which logs them): a reference to
    /// another node's field held by nothing else goes with all its weight
    /// ([`Encoder::consuming`]).
    consume: bool,
    /// Where memory that outlives this process lies, if the transport has
    /// such ([`super::Transport::shared_region`]): with `keep_nothing`, a
    /// field whose body is there is *given* (the module docs), not copied.
    shared: Option<std::ops::Range<usize>>,
    /// Fields given since [`Encoder::take_given`]: (destination, value),
    /// in the order the records holding them were written.
    given: Vec<(Rank, std::sync::Arc<dyn snet_core::FieldData>)>,
    /// Scratch space for a field's meta part.
    meta: Vec<u8>,
}

impl Encoder {
    pub(crate) fn new(me: Rank, nodes: u32, inline_limit: usize) -> Encoder {
        Encoder {
            me,
            dicts: (0..nodes).map(|_| FxHashMap::default()).collect(),
            inline_limit,
            keep_nothing: false,
            consume: false,
            shared: None,
            given: Vec::new(),
            meta: Vec::new(),
        }
    }

    /// Memory in `region` outlives this process (the transport's
    /// [`super::Transport::shared_region`]): a node [`keeping
    /// nothing`](Encoder::keeping_nothing) gives the fields whose bodies
    /// lie there instead of copying them into the frame.
    pub(crate) fn set_shared(&mut self, region: Option<std::ops::Range<usize>>) {
        self.shared = region;
    }

    /// The fields given since the last call, each with its destination,
    /// in the order their records were written: each must be sent to its
    /// destination (a [`Frame::Given`] message, the body as payload)
    /// before the message holding those records, on the same channel.
    pub(crate) fn take_given(
        &mut self,
    ) -> std::vec::Drain<'_, (Rank, std::sync::Arc<dyn snet_core::FieldData>)> {
        self.given.drain(..)
    }

    /// This node may be lost with everything in its memory: a field it
    /// sends goes by value (whatever the inline limit), so that none is
    /// homed here, except a reference to a field node 0 is home to, which
    /// goes on as a reference (node 0 is never lost; sending such a field
    /// by value back to node 0 cost node 0 a decoded copy and a
    /// `Release` of the reference for each record: `bench/soak`'s
    /// respawn network).
    pub(crate) fn keeping_nothing(mut self) -> Encoder {
        self.keep_nothing = true;
        self
    }

    /// The caller drops every item once it is encoded and sent: a
    /// reference to another node's field that is the last handle on it
    /// here goes with all its weight ([`super::fields::FieldStore::take_last`]),
    /// so its drop gives nothing back (no `Release`), instead of half.
    pub(crate) fn consuming(mut self) -> Encoder {
        self.consume = true;
        self
    }

    /// Whether it is [`Encoder::consuming`].
    #[cfg(all(test, not(loom)))]
    pub(crate) fn consumes(&self) -> bool {
        self.consume
    }

    /// Node `to` was replaced: its dictionary starts again.
    pub(crate) fn forget(&mut self, to: Rank) {
        if let Some(d) = self.dicts.get_mut(to.index()) {
            d.clear();
        }
    }

    fn label(&mut self, to: Rank, l: Label, out: &mut Vec<u8>) {
        let dict = &mut self.dicts[to.index()];
        match dict.get(&l) {
            Some(&i) => put_u(out, u64::from(i) << 1),
            None => {
                let i = dict.len() as u32;
                dict.insert(l, i);
                put_label_new(out, i, l.kind(), l.name());
            }
        }
    }

    fn field(
        &mut self,
        to: Rank,
        f: &Field,
        store: &FieldStore,
        out: &mut Vec<u8>,
    ) -> Result<(), snet_core::NotPortable> {
        if let Some(v) = f.get() {
            v.portable()?;
            let small = v.encoded_len() <= self.inline_limit;
            let keep = self.keep_nothing
                && !small
                && !f
                    .as_remote()
                    .is_some_and(|r| r.home == Rank::ROOT && r.weight() >= 2);
            if keep
                && self
                    .shared
                    .as_ref()
                    .is_some_and(|s| s.contains(&(v.body().as_ptr() as usize)))
            {
                // In memory that outlives this process: given, so the
                // transport passes a reference to it (the module docs).
                self.given.push((to, v.clone()));
                out.push(3);
                return Ok(());
            }
            if small || keep {
                // Small: meta part and body are copied into the frame.
                self.meta.clear();
                v.encode_meta(&mut self.meta);
                put_inline(out, v.codec(), &self.meta, v.body());
                return Ok(());
            }
        }
        let (home, id, weight, interface, len) = match f.as_remote() {
            Some(r) => match (self.consume)
                .then(|| store.take_last(f))
                .flatten()
                .or_else(|| r.split_weight())
            {
                Some(w) => (r.home, r.id, w, &*r.interface, r.len),
                None => {
                    let (id, w) = store.export(f);
                    (self.me, id, w, &*r.interface, r.len)
                }
            },
            None => {
                let v = f.as_local().expect("a local field");
                let (id, w) = store.export(f);
                (self.me, id, w, v.interface(), v.encoded_len() as u64)
            }
        };
        put_ref(out, home, id, weight, interface, len);
        Ok(())
    }

    /// Appends one item for node `to` (the syntax of
    /// [`WireItem::encode`], written straight from the engine's item).
    /// Errors name the field that cannot travel.
    #[inline(always)]
    fn item(
        &mut self,
        to: Rank,
        item: &Item,
        store: &FieldStore,
        out: &mut Vec<u8>,
    ) -> Result<(), FieldStays> {
        match item {
            Item::Rec(r) => {
                put_record_head(out, &r.det, r.origin, r.rec.len());
                for (l, v) in r.rec.entries() {
                    self.label(to, *l, out);
                    match v {
                        Value::Int(i) => {
                            out.push(0);
                            put_i(out, *i);
                        }
                        Value::Field(f) => {
                            self.field(to, f, store, out).map_err(|error| FieldStays {
                                label: *l,
                                to,
                                error,
                            })?
                        }
                    }
                }
            }
            Item::Marker(m) => put_marker(out, m),
            Item::Resume => out.push(2),
            Item::Wake => unreachable!("Wake never travels"),
        }
        Ok(())
    }
}

/// The receiving side of the label dictionaries.
pub(crate) struct Decoder {
    me: Rank,
    dicts: Vec<Vec<Label>>,
    /// By sender: the fields it gave ([`Frame::Given`]) that no record
    /// took yet, oldest first.
    given: Vec<std::collections::VecDeque<Field>>,
}

impl Decoder {
    pub(crate) fn new(me: Rank, nodes: u32) -> Decoder {
        Decoder {
            me,
            dicts: (0..nodes).map(|_| Vec::new()).collect(),
            given: (0..nodes).map(|_| Default::default()).collect(),
        }
    }

    /// Node `from` was replaced: its dictionary starts again, and the
    /// fields its lost incarnation gave and no record took are dropped
    /// (the records that were to take them never came: they are made
    /// again, with their fields given again, by the replacement).
    /// Returns how many given fields it dropped.
    pub(crate) fn forget(&mut self, from: Rank) -> usize {
        if let Some(d) = self.dicts.get_mut(from.index()) {
            d.clear();
        }
        self.given.get_mut(from.index()).map_or(0, |g| {
            let n = g.len();
            g.clear();
            n
        })
    }

    /// Node `from` gave field `f` ([`Frame::Given`]): its next record
    /// value of kind 3 takes it.
    pub(crate) fn give(&mut self, from: Rank, f: Field) {
        if let Some(g) = self.given.get_mut(from.index()) {
            g.push_back(f);
        }
    }

    /// Fields node `from` gave that no record took yet.
    #[cfg(test)]
    pub(crate) fn given(&self, from: Rank) -> usize {
        self.given.get(from.index()).map_or(0, |g| g.len())
    }

    /// The label `l` (read at byte `at`) from node `from` stands for.
    #[inline(always)]
    fn label(&mut self, from: Rank, l: WireLabel, at: usize) -> Result<Label, WireError> {
        let dict = &mut self.dicts[from.index()];
        match l {
            WireLabel::Known(i) => match dict.get(i as usize) {
                Some(&l) => Ok(l),
                None => Err(WireError {
                    at,
                    what: Malformed::UnknownLabel,
                }),
            },
            WireLabel::New { index, kind, name } => {
                if index as usize != dict.len() {
                    return Err(WireError {
                        at,
                        what: Malformed::LabelOutOfOrder,
                    });
                }
                let l = Label::new(kind, &name);
                dict.push(l);
                Ok(l)
            }
        }
    }

    /// Reads one item sent by node `from` straight into the engine's item
    /// (the parser's label and value, no owned [`WireItem`]).
    #[inline(always)]
    fn item(
        &mut self,
        from: Rank,
        r: &mut Reader,
        store: &FieldStore,
        codecs: &Codecs,
    ) -> Result<Item, ItemError> {
        Ok(match r.item_head()? {
            ItemHead::Rec {
                det,
                origin,
                entries: n,
            } => {
                let mut rec = Record::with_capacity((n as usize).min(r.left()).min(64));
                for _ in 0..n {
                    let at = r.at;
                    let l = r.label()?;
                    let l = self.label(from, l, at)?;
                    let v = match r.value()? {
                        WireValue::Int(i) => Value::Int(i),
                        WireValue::Inline { codec, meta, body } => {
                            let body = FieldBytes::copy_from(&body);
                            let v = codecs
                                .decode(&codec, &meta, body)
                                .map_err(|error| ItemError::Codec { label: l, error })?;
                            Value::Field(Field::new(v))
                        }
                        WireValue::Ref {
                            home,
                            id,
                            weight,
                            interface,
                            len,
                        } => Value::Field(if home == self.me {
                            store.returned(id, weight).map_err(ItemError::Returned)?
                        } else if home.index() >= self.dicts.len() {
                            return Err(ItemError::NoSuchNode { label: l, home });
                        } else {
                            store.proxy(home, id, weight, &interface, len)
                        }),
                        WireValue::Given => Value::Field(
                            self.given
                                .get_mut(from.index())
                                .and_then(|g| g.pop_front())
                                .ok_or(ItemError::NotGiven { label: l })?,
                        ),
                    };
                    rec.set(l, v);
                }
                Item::Rec(Rec { rec, det, origin })
            }
            ItemHead::Marker(m) => Item::Marker(m),
            ItemHead::Resume => Item::Resume,
        })
    }
}

/// Entry points for the fuzz targets (`fuzz/`), built only with `--cfg
/// fuzzing` (which `cargo fuzz` sets): the receiving side's dictionaries,
/// field codecs and field store are crate-private.
#[cfg(fuzzing)]
pub mod fuzzing {
    use super::*;

    struct NoRelease;
    impl snet_core::ReleaseRemote for NoRelease {
        fn release(&self, _: Rank, _: u64, _: u64) {}
    }

    /// Receives `messages` (each: the sending node, a message's header) as
    /// node `me` of `nodes` does: frame by frame, the items of each
    /// `Items` frame through one node's label dictionaries, inline fields
    /// decoded by `codecs`, references through a field store. The number
    /// of items read, or the first error (a peer's garbage must end here,
    /// never in a panic).
    pub fn receive(
        me: u32,
        nodes: u32,
        messages: &[(u32, &[u8])],
        codecs: &Codecs,
    ) -> Result<usize, ItemError> {
        let store = FieldStore::new(Rank(me), std::sync::Arc::new(NoRelease));
        let mut dec = Decoder::new(Rank(me), nodes);
        let mut items = 0;
        for &(from, header) in messages {
            let (_, mut r) = MessageReader::new(header)?;
            while let Some(f) = r.next_frame()? {
                if let FrameRef::Items { .. } = f {
                    while r.next_item(&mut dec, Rank(from), &store, codecs)?.is_some() {
                        items += 1;
                    }
                }
            }
        }
        Ok(items)
    }
}

#[cfg(test)]
#[path = "wire_tests.rs"]
mod tests;
