//! The encoding of messages between nodes: every frame, encoded and
//! decoded here only.
//!
//! Two layers. The *syntax* ([`Message`], [`Frame`], [`WireItem`]) is the
//! bytes as values: [`Message::encode`] and [`Message::decode`] (and
//! [`Frame::encode`]/[`Frame::decode`]) are the only code that writes or
//! reads frame bytes. Decoding is a pure function of the bytes: any
//! malformed input is a [`WireError`] (where, and what: [`Malformed`]),
//! never a panic (the `frames` fuzz target and a property test check it).
//! The *meaning* ([`Encoder`], [`Decoder`]) turns the engine's items into
//! wire items and back: labels through the per-pair dictionaries, fields
//! inline or as references into the field store.
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
//!
//! A connection is its creator node and counter; stamps are a count and
//! the numbers. An item is a kind byte and
//!
//! | kind | item | fields |
//! |---|---|---|
//! | 0 | record | stamps, origin (input number, input line), entry count, entries |
//! | 1 | marker | owner, sequence, weight, 0 or 1 and the payload marker |
//! | 2 | `Resume` | |
//!
//! A record entry is a label and a value. A label is `n << 1` (the
//! dictionary's `n`th label) or `n << 1 | 1`, its kind byte and name (it
//! defines the `n`th). A value is a kind byte and: 0, an integer; 1, an
//! inline field (codec name, meta bytes and body bytes, copied into the
//! frame); 2, a field reference (home node, id, weight, interface, size).
//! Markers nest at most [`MAX_MARKER_DEPTH`] deep.
//!
//! (The Items count was a four-byte varint patched in place by the output
//! manager until the frames had a type; it is a plain varint now, which
//! every decoder read anyway.)
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
use snet_core::{Codecs, Field, FieldBytes, Label, LabelKind, NodeId, Record, Value};

use super::fields::FieldStore;
use super::ConnId;
use crate::entity::{Item, Marker, Origin, Rec, Stamps};
use crate::weight::Dyadic;

/// Markers nest (a marker's payload marker) at most this deep: one level
/// per enclosing deterministic combinator, so a real program stays far
/// below; deeper is a malformed message (and would exhaust the stack).
pub const MAX_MARKER_DEPTH: usize = 1024;

/// A malformed message (a protocol bug or a corrupted transport): where
/// the decoder stopped and why.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct WireError {
    /// Byte offset in the header.
    pub at: usize,
    pub what: Malformed,
}

/// What is wrong with a malformed message ([`WireError`]).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
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
        }
    }
}

impl fmt::Display for WireError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "malformed message at byte {}: {}", self.at, self.what)
    }
}

impl std::error::Error for WireError {}

fn put_u(out: &mut Vec<u8>, mut v: u64) {
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
    put_u(out, u64::from(c.origin));
    put_u(out, c.seq);
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

/// Reads a header; every read checks its bounds.
struct Reader<'a> {
    b: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn new(b: &'a [u8]) -> Reader<'a> {
        Reader { b, at: 0 }
    }

    fn done(&self) -> bool {
        self.at >= self.b.len()
    }

    fn left(&self) -> usize {
        self.b.len().saturating_sub(self.at)
    }

    fn err<T>(&self, what: Malformed) -> Result<T, WireError> {
        Err(WireError { at: self.at, what })
    }

    fn byte(&mut self) -> Result<u8, WireError> {
        match self.b.get(self.at) {
            Some(&v) => {
                self.at += 1;
                Ok(v)
            }
            None => self.err(Malformed::Truncated),
        }
    }

    fn u(&mut self) -> Result<u64, WireError> {
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
            origin: self.u32("node")?,
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
        let mut pieces = Vec::with_capacity((n as usize).min(self.left()));
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
            });
        }
        Ok(m.expect("a chain of at least one marker"))
    }
}

/// One message's header: the credit it carries and its frames.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Message<'a> {
    pub credit: Dyadic,
    pub frames: Vec<Frame<'a>>,
}

/// A frame (the table at the top).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Frame<'a> {
    /// Instantiate `template` here, bind connection `conn` to its entry,
    /// and send its output back on `back`.
    Open {
        conn: ConnId,
        template: NodeId,
        back: ConnId,
        start: Cow<'a, Stamps>,
    },
    /// Items for connection `conn`, in order.
    Items {
        conn: ConnId,
        items: Vec<WireItem<'a>>,
    },
    /// Asks for the value of this node's export `id` (field store).
    Fetch { id: u64 },
    /// Gives `weight` back to this node's export `id`.
    Release { id: u64, weight: u64 },
    /// The sender failed with `message`.
    Fail { message: Cow<'a, str> },
    /// The run is over.
    Shutdown,
    /// The value of the sender's export `id` (its meta part; the body is
    /// the message's payload).
    Bytes {
        id: u64,
        codec: Cow<'a, str>,
        meta: Cow<'a, [u8]>,
    },
}

/// An item as it travels.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WireItem<'a> {
    Rec {
        det: Cow<'a, Stamps>,
        origin: Origin,
        entries: SmallVec<[(WireLabel<'a>, WireValue<'a>); 2]>,
    },
    Marker(Cow<'a, Marker>),
    Resume,
}

/// A label as it travels: a dictionary number, or a definition.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WireLabel<'a> {
    /// The dictionary's `n`th label.
    Known(u32),
    /// Defines the dictionary's `index`th label.
    New {
        index: u32,
        kind: LabelKind,
        name: Cow<'a, str>,
    },
}

/// A record entry's value as it travels.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WireValue<'a> {
    Int(i64),
    /// A field value copied into the frame.
    Inline {
        codec: Cow<'a, str>,
        meta: Cow<'a, [u8]>,
        body: Cow<'a, [u8]>,
    },
    /// A weighted reference to the value of export `id` at node `home`.
    Ref {
        home: u32,
        id: u64,
        weight: u64,
        interface: Cow<'a, str>,
        len: u64,
    },
}

fn owned<T: ToOwned + ?Sized>(c: Cow<'_, T>) -> Cow<'static, T> {
    Cow::Owned(c.into_owned())
}

impl Message<'_> {
    /// The message with everything it borrows from its bytes copied (a
    /// wire item is invariant in its lifetime: compare messages decoded
    /// from different buffers through this).
    pub fn into_owned(self) -> Message<'static> {
        Message {
            credit: self.credit,
            frames: self.frames.into_iter().map(Frame::into_owned).collect(),
        }
    }
}

impl Frame<'_> {
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
        }
    }
}

impl WireItem<'_> {
    /// As [`Message::into_owned`].
    pub fn into_owned(self) -> WireItem<'static> {
        match self {
            WireItem::Rec {
                det,
                origin,
                entries,
            } => WireItem::Rec {
                det: owned(det),
                origin,
                entries: entries
                    .into_iter()
                    .map(|(l, v)| {
                        let l = match l {
                            WireLabel::Known(i) => WireLabel::Known(i),
                            WireLabel::New { index, kind, name } => WireLabel::New {
                                index,
                                kind,
                                name: owned(name),
                            },
                        };
                        let v = match v {
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
                        };
                        (l, v)
                    })
                    .collect(),
            },
            WireItem::Marker(m) => WireItem::Marker(owned(m)),
            WireItem::Resume => WireItem::Resume,
        }
    }
}

const OPEN: u8 = 0;
const ITEMS: u8 = 1;
const FETCH: u8 = 2;
const RELEASE: u8 = 3;
const FAIL: u8 = 5;
const SHUTDOWN: u8 = 6;
const BYTES: u8 = 7;

impl<'a> Message<'a> {
    /// Appends the header's bytes to `out`.
    pub fn encode(&self, out: &mut Vec<u8>) {
        put_credit(out, &self.credit);
        for f in &self.frames {
            f.encode(out);
        }
    }

    /// Reads a whole header.
    pub fn decode(b: &'a [u8]) -> Result<Message<'a>, WireError> {
        let mut r = Reader::new(b);
        let credit = r.credit()?;
        let mut frames = Vec::new();
        while !r.done() {
            frames.push(Frame::decode_from(&mut r)?);
        }
        Ok(Message { credit, frames })
    }
}

impl<'a> Frame<'a> {
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
                put_u(out, u64::from(*template));
                put_conn(out, *back);
                put_stamps(out, start);
            }
            Frame::Items { conn, items } => {
                out.push(ITEMS);
                put_conn(out, *conn);
                put_u(out, items.len() as u64);
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
        }
    }

    /// Reads one frame from the start of `b`, and what it took.
    pub fn decode(b: &'a [u8]) -> Result<(Frame<'a>, usize), WireError> {
        let mut r = Reader::new(b);
        let f = Frame::decode_from(&mut r)?;
        Ok((f, r.at))
    }

    fn decode_from(r: &mut Reader<'a>) -> Result<Frame<'a>, WireError> {
        Ok(match r.byte()? {
            OPEN => Frame::Open {
                conn: r.conn()?,
                template: r.u32("template")?,
                back: r.conn()?,
                start: Cow::Owned(r.stamps()?),
            },
            ITEMS => {
                let conn = r.conn()?;
                let n = r.u()?;
                // Every item takes a byte at least: no more room than that.
                let mut items = Vec::with_capacity((n as usize).min(r.left()));
                for _ in 0..n {
                    items.push(WireItem::decode_from(r)?);
                }
                Frame::Items { conn, items }
            }
            FETCH => Frame::Fetch { id: r.u()? },
            RELEASE => Frame::Release {
                id: r.u()?,
                weight: r.u()?,
            },
            FAIL => Frame::Fail {
                message: Cow::Borrowed(r.s()?),
            },
            SHUTDOWN => Frame::Shutdown,
            BYTES => Frame::Bytes {
                id: r.u()?,
                codec: Cow::Borrowed(r.s()?),
                meta: Cow::Borrowed(r.bytes()?),
            },
            k => {
                r.at -= 1;
                return r.err(Malformed::UnknownFrame(k));
            }
        })
    }
}

impl<'a> WireItem<'a> {
    fn encode(&self, out: &mut Vec<u8>) {
        match self {
            WireItem::Rec {
                det,
                origin,
                entries,
            } => {
                out.push(0);
                put_stamps(out, det);
                // The origin as two small numbers (most are short varints).
                put_u(out, origin.to_bits() >> 32);
                put_u(out, origin.to_bits() & u64::from(u32::MAX));
                put_u(out, entries.len() as u64);
                for (l, v) in entries {
                    match l {
                        WireLabel::Known(i) => put_u(out, u64::from(*i) << 1),
                        WireLabel::New { index, kind, name } => {
                            put_u(out, (u64::from(*index) << 1) | 1);
                            out.push(*kind as u8);
                            put_s(out, name);
                        }
                    }
                    match v {
                        WireValue::Int(i) => {
                            out.push(0);
                            put_i(out, *i);
                        }
                        WireValue::Inline { codec, meta, body } => {
                            out.push(1);
                            put_s(out, codec);
                            put_bytes(out, meta);
                            put_bytes(out, body);
                        }
                        WireValue::Ref {
                            home,
                            id,
                            weight,
                            interface,
                            len,
                        } => {
                            out.push(2);
                            put_u(out, u64::from(*home));
                            put_u(out, *id);
                            put_u(out, *weight);
                            put_s(out, interface);
                            put_u(out, *len);
                        }
                    }
                }
            }
            WireItem::Marker(m) => {
                out.push(1);
                let mut m: &Marker = m;
                loop {
                    put_u(out, m.owner);
                    put_u(out, m.seq);
                    put_u(out, m.weight);
                    match &m.payload {
                        None => {
                            out.push(0);
                            break;
                        }
                        Some(p) => {
                            out.push(1);
                            m = p;
                        }
                    }
                }
            }
            WireItem::Resume => out.push(2),
        }
    }

    fn decode_from(r: &mut Reader<'a>) -> Result<WireItem<'a>, WireError> {
        match r.byte()? {
            0 => {
                let det = r.stamps()?;
                let (number, line) = (r.u()?, r.u()?);
                if number > u64::from(u32::MAX) || line > u64::from(u32::MAX) {
                    return r.err(Malformed::BadOrigin);
                }
                let origin = Origin::from_bits(number << 32 | line);
                let n = r.u()?;
                let mut entries = SmallVec::with_capacity((n as usize).min(r.left()));
                for _ in 0..n {
                    let v = r.u()?;
                    let index = u32::try_from(v >> 1)
                        .or_else(|_| r.err(Malformed::TooLarge("label number")))?;
                    let label = if v & 1 == 1 {
                        let kind = match r.byte()? {
                            0 => LabelKind::Field,
                            1 => LabelKind::Tag,
                            2 => LabelKind::BTag,
                            k => return r.err(Malformed::BadLabelKind(k)),
                        };
                        WireLabel::New {
                            index,
                            kind,
                            name: Cow::Borrowed(r.s()?),
                        }
                    } else {
                        WireLabel::Known(index)
                    };
                    let value = match r.byte()? {
                        0 => WireValue::Int(r.i()?),
                        1 => WireValue::Inline {
                            codec: Cow::Borrowed(r.s()?),
                            meta: Cow::Borrowed(r.bytes()?),
                            body: Cow::Borrowed(r.bytes()?),
                        },
                        2 => WireValue::Ref {
                            home: r.u32("node")?,
                            id: r.u()?,
                            weight: r.u()?,
                            interface: Cow::Borrowed(r.s()?),
                            len: r.u()?,
                        },
                        k => return r.err(Malformed::BadValueKind(k)),
                    };
                    entries.push((label, value));
                }
                Ok(WireItem::Rec {
                    det: Cow::Owned(det),
                    origin,
                    entries,
                })
            }
            1 => Ok(WireItem::Marker(Cow::Owned(r.marker()?))),
            2 => Ok(WireItem::Resume),
            k => r.err(Malformed::BadItemKind(k)),
        }
    }
}

/// A well-formed item this node cannot make sense of ([`Decoder::item`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ItemError {
    /// A label defined with a number other than the dictionary's next.
    LabelOutOfOrder,
    /// A label number the dictionary does not have.
    UnknownLabel,
    /// The codec could not decode the inline field `label` (its message).
    Codec { label: Label, error: String },
    /// A reference to one of this node's exports that the field store
    /// does not know (its message).
    Returned(String),
}

impl fmt::Display for ItemError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ItemError::LabelOutOfOrder => {
                f.write_str("malformed message: label defined out of order")
            }
            ItemError::UnknownLabel => f.write_str("malformed message: unknown label"),
            ItemError::Codec { label, error } => write!(f, "field `{label}`: {error}"),
            ItemError::Returned(e) => f.write_str(e),
        }
    }
}

impl std::error::Error for ItemError {}

/// The sending side of the label dictionaries and field references.
pub(crate) struct Encoder {
    me: u32,
    dicts: Vec<FxHashMap<Label, u32>>,
    inline_limit: usize,
}

impl Encoder {
    pub fn new(me: u32, nodes: u32, inline_limit: usize) -> Encoder {
        Encoder {
            me,
            dicts: (0..nodes).map(|_| FxHashMap::default()).collect(),
            inline_limit,
        }
    }

    fn label(&mut self, to: u32, l: Label) -> WireLabel<'static> {
        let dict = &mut self.dicts[to as usize];
        match dict.get(&l) {
            Some(&i) => WireLabel::Known(i),
            None => {
                let i = dict.len() as u32;
                dict.insert(l, i);
                WireLabel::New {
                    index: i,
                    kind: l.kind(),
                    name: Cow::Borrowed(l.name()),
                }
            }
        }
    }

    fn field<'b>(&mut self, f: &'b Field, store: &FieldStore) -> Result<WireValue<'b>, String> {
        if let Some(v) = f.get() {
            v.portable()?;
            if v.encoded_len() <= self.inline_limit {
                // Small: meta part and body are copied into the frame.
                let mut meta = Vec::new();
                v.encode_meta(&mut meta);
                return Ok(WireValue::Inline {
                    codec: Cow::Borrowed(v.codec()),
                    meta: Cow::Owned(meta),
                    body: Cow::Borrowed(v.body()),
                });
            }
        }
        let (home, id, weight, interface, len) = match f.as_remote() {
            Some(r) => match r.split_weight() {
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
        Ok(WireValue::Ref {
            home,
            id,
            weight,
            interface: Cow::Borrowed(interface),
            len,
        })
    }

    /// One item for node `to`. Errors name the field that cannot travel.
    pub fn item<'b>(
        &mut self,
        to: u32,
        item: &'b Item,
        store: &FieldStore,
    ) -> Result<WireItem<'b>, String> {
        Ok(match item {
            Item::Rec(r) => {
                let mut entries = SmallVec::with_capacity(r.rec.len());
                for (l, v) in r.rec.entries() {
                    let label = self.label(to, *l);
                    let value = match v {
                        Value::Int(i) => WireValue::Int(*i),
                        Value::Field(f) => self
                            .field(f, store)
                            .map_err(|e| format!("field `{}` cannot go to node {to}: {e}", l))?,
                    };
                    entries.push((label, value));
                }
                WireItem::Rec {
                    det: Cow::Borrowed(&r.det),
                    origin: r.origin,
                    entries,
                }
            }
            Item::Marker(m) => WireItem::Marker(Cow::Borrowed(m)),
            Item::Resume => WireItem::Resume,
            Item::Wake => unreachable!("Wake never travels"),
        })
    }
}

/// The receiving side of the label dictionaries.
pub(crate) struct Decoder {
    me: u32,
    dicts: Vec<Vec<Label>>,
}

impl Decoder {
    pub fn new(me: u32, nodes: u32) -> Decoder {
        Decoder {
            me,
            dicts: (0..nodes).map(|_| Vec::new()).collect(),
        }
    }

    fn label(&mut self, from: u32, l: WireLabel) -> Result<Label, ItemError> {
        let dict = &mut self.dicts[from as usize];
        match l {
            WireLabel::New { index, kind, name } => {
                if index as usize != dict.len() {
                    return Err(ItemError::LabelOutOfOrder);
                }
                let l = Label::new(kind, &name);
                dict.push(l);
                Ok(l)
            }
            WireLabel::Known(i) => dict.get(i as usize).copied().ok_or(ItemError::UnknownLabel),
        }
    }

    /// The engine's item for one sent by node `from`.
    pub fn item(
        &mut self,
        from: u32,
        w: WireItem,
        store: &FieldStore,
        codecs: &Codecs,
    ) -> Result<Item, ItemError> {
        match w {
            WireItem::Rec {
                det,
                origin,
                entries,
            } => {
                let mut rec = Record::with_capacity(entries.len().min(64));
                for (l, v) in entries {
                    let l = self.label(from, l)?;
                    let v = match v {
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
                        } else {
                            store.proxy(home, id, weight, &interface, len)
                        }),
                    };
                    rec.set(l, v);
                }
                Ok(Item::Rec(Rec {
                    rec,
                    det: det.into_owned(),
                    origin,
                }))
            }
            WireItem::Marker(m) => Ok(Item::Marker(m.into_owned())),
            WireItem::Resume => Ok(Item::Resume),
        }
    }
}

#[cfg(test)]
#[path = "wire_tests.rs"]
mod tests;
