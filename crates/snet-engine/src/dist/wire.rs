//! The encoding of messages between nodes.
//!
//! A transport message's header is
//!
//! ```text
//! credit: count, exponents...        (the termination credit it carries)
//! frame*                             (until the end of the header)
//! ```
//!
//! and a frame is a kind byte and its fields. Integers are LEB128 varints
//! (signed ones zigzagged), strings a length and UTF-8 bytes.
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
//! An item is a record (stamps, entries), a marker (owner, sequence,
//! weight, optional payload marker) or `Resume`. A record entry is a
//! label and a value: an integer, an inline field (codec name, meta bytes
//! and body bytes, copied into the frame) or a field reference (home node,
//! id, weight, interface, size).
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

use rustc_hash::FxHashMap;
use snet_core::{Codecs, Field, FieldBytes, Label, LabelKind, Record, Value};

use super::fields::FieldStore;
use super::ConnId;
use crate::entity::{Item, Marker, Origin, Rec, Stamps};
use crate::weight::Dyadic;

/// A malformed message (a protocol bug or a corrupted transport).
#[derive(Debug)]
pub struct WireError(pub String);

pub(crate) fn put_u(out: &mut Vec<u8>, mut v: u64) {
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

pub(crate) fn put_bytes(out: &mut Vec<u8>, b: &[u8]) {
    put_u(out, b.len() as u64);
    out.extend_from_slice(b);
}

pub(crate) fn put_s(out: &mut Vec<u8>, s: &str) {
    put_bytes(out, s.as_bytes());
}

/// Reads a header.
pub(crate) struct Reader<'a> {
    b: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    pub fn new(b: &'a [u8]) -> Reader<'a> {
        Reader { b, at: 0 }
    }

    pub fn done(&self) -> bool {
        self.at >= self.b.len()
    }

    fn err<T>(&self, what: &str) -> Result<T, WireError> {
        Err(WireError(format!(
            "malformed message at byte {}: {what}",
            self.at
        )))
    }

    pub fn byte(&mut self) -> Result<u8, WireError> {
        match self.b.get(self.at) {
            Some(&v) => {
                self.at += 1;
                Ok(v)
            }
            None => self.err("truncated"),
        }
    }

    pub fn u(&mut self) -> Result<u64, WireError> {
        let mut v = 0u64;
        let mut shift = 0;
        loop {
            let b = self.byte()?;
            if shift >= 64 {
                return self.err("varint too long");
            }
            v |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
            shift += 7;
        }
    }

    fn i(&mut self) -> Result<i64, WireError> {
        let u = self.u()?;
        Ok(((u >> 1) as i64) ^ -((u & 1) as i64))
    }

    pub fn bytes(&mut self) -> Result<&'a [u8], WireError> {
        let n = self.u()? as usize;
        match self.b.get(self.at..self.at.saturating_add(n)) {
            Some(s) => {
                self.at += n;
                Ok(s)
            }
            None => self.err("truncated bytes"),
        }
    }

    pub fn s(&mut self) -> Result<&'a str, WireError> {
        let b = self.bytes()?;
        std::str::from_utf8(b).or_else(|_| self.err("string is not UTF-8"))
    }

    pub fn conn(&mut self) -> Result<ConnId, WireError> {
        Ok(ConnId {
            origin: self.u()? as u32,
            seq: self.u()?,
        })
    }

    pub fn stamps(&mut self) -> Result<Stamps, WireError> {
        let n = self.u()?;
        let mut s = Stamps::new();
        for _ in 0..n {
            s.push(self.u()?);
        }
        Ok(s)
    }

    pub fn credit(&mut self) -> Result<Dyadic, WireError> {
        let n = self.u()?;
        let mut d = Dyadic::zero();
        for _ in 0..n {
            d.add(self.u()?);
        }
        Ok(d)
    }
}

pub(crate) const OPEN: u8 = 0;
pub(crate) const ITEMS: u8 = 1;
pub(crate) const FETCH: u8 = 2;
pub(crate) const RELEASE: u8 = 3;
pub(crate) const FAIL: u8 = 5;
pub(crate) const SHUTDOWN: u8 = 6;
pub(crate) const BYTES: u8 = 7;

pub(crate) fn put_conn(out: &mut Vec<u8>, c: ConnId) {
    put_u(out, u64::from(c.origin));
    put_u(out, c.seq);
}

pub(crate) fn put_stamps(out: &mut Vec<u8>, s: &Stamps) {
    let v = s.as_slice();
    put_u(out, v.len() as u64);
    for &x in v {
        put_u(out, x);
    }
}

pub(crate) fn put_credit(out: &mut Vec<u8>, d: &Dyadic) {
    put_u(out, d.pieces().count() as u64);
    for e in d.pieces() {
        put_u(out, e);
    }
}

/// The sending side of the label dictionaries and field references.
pub(crate) struct Encoder {
    me: u32,
    dicts: Vec<FxHashMap<Label, u32>>,
    inline_limit: usize,
    /// Scratch space for a field's meta part.
    meta: Vec<u8>,
}

impl Encoder {
    pub fn new(me: u32, nodes: u32, inline_limit: usize) -> Encoder {
        Encoder {
            me,
            dicts: (0..nodes).map(|_| FxHashMap::default()).collect(),
            inline_limit,
            meta: Vec::new(),
        }
    }

    fn label(&mut self, to: u32, l: Label, out: &mut Vec<u8>) {
        let dict = &mut self.dicts[to as usize];
        match dict.get(&l) {
            Some(&i) => put_u(out, u64::from(i) << 1),
            None => {
                let i = dict.len() as u32;
                dict.insert(l, i);
                put_u(out, (u64::from(i) << 1) | 1);
                out.push(l.kind() as u8);
                put_s(out, l.name());
            }
        }
    }

    fn field(&mut self, f: &Field, store: &FieldStore, out: &mut Vec<u8>) -> Result<(), String> {
        if let Some(v) = f.get() {
            v.portable().map_err(|e| e.to_string())?;
            if v.encoded_len() <= self.inline_limit {
                // Small: meta part and body are copied into the frame.
                out.push(1);
                put_s(out, v.codec());
                self.meta.clear();
                v.encode_meta(&mut self.meta);
                put_bytes(out, &self.meta);
                put_bytes(out, v.body());
                return Ok(());
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
        out.push(2);
        put_u(out, u64::from(home));
        put_u(out, id);
        put_u(out, weight);
        put_s(out, interface);
        put_u(out, len);
        Ok(())
    }

    fn marker(out: &mut Vec<u8>, m: &Marker) {
        put_u(out, m.owner);
        put_u(out, m.seq);
        put_u(out, m.weight);
        match &m.payload {
            None => out.push(0),
            Some(p) => {
                out.push(1);
                Encoder::marker(out, p);
            }
        }
    }

    /// Appends one item for node `to`. Errors name the field that cannot travel.
    pub fn item(
        &mut self,
        to: u32,
        item: &Item,
        store: &FieldStore,
        out: &mut Vec<u8>,
    ) -> Result<(), String> {
        match item {
            Item::Rec(r) => {
                out.push(0);
                put_stamps(out, &r.det);
                // The origin as two small numbers (most are short varints).
                put_u(out, r.origin.to_bits() >> 32);
                put_u(out, r.origin.to_bits() & u64::from(u32::MAX));
                put_u(out, r.rec.len() as u64);
                for (l, v) in r.rec.entries() {
                    self.label(to, *l, out);
                    match v {
                        Value::Int(i) => {
                            out.push(0);
                            put_i(out, *i);
                        }
                        Value::Field(f) => self
                            .field(f, store, out)
                            .map_err(|e| format!("field `{}` cannot go to node {to}: {e}", l))?,
                    }
                }
            }
            Item::Marker(m) => {
                out.push(1);
                Encoder::marker(out, m);
            }
            Item::Resume => out.push(2),
            Item::Wake => unreachable!("Wake never travels"),
        }
        Ok(())
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

    fn label(&mut self, from: u32, r: &mut Reader) -> Result<Label, WireError> {
        let v = r.u()?;
        let dict = &mut self.dicts[from as usize];
        let i = (v >> 1) as usize;
        if v & 1 == 1 {
            let kind = match r.byte()? {
                0 => LabelKind::Field,
                1 => LabelKind::Tag,
                2 => LabelKind::BTag,
                _ => return r.err("bad label kind"),
            };
            let l = Label::new(kind, r.s()?);
            if i != dict.len() {
                return r.err("label defined out of order");
            }
            dict.push(l);
            Ok(l)
        } else {
            match dict.get(i) {
                Some(&l) => Ok(l),
                None => r.err("unknown label"),
            }
        }
    }

    fn marker(r: &mut Reader) -> Result<Marker, WireError> {
        let owner = r.u()?;
        let seq = r.u()?;
        let weight = r.u()?;
        let payload = match r.byte()? {
            0 => None,
            _ => Some(Box::new(Decoder::marker(r)?)),
        };
        Ok(Marker {
            owner,
            seq,
            weight,
            payload,
        })
    }

    /// Reads one item sent by node `from`.
    pub fn item(
        &mut self,
        from: u32,
        r: &mut Reader,
        store: &FieldStore,
        codecs: &Codecs,
    ) -> Result<Item, WireError> {
        match r.byte()? {
            0 => {
                let det = r.stamps()?;
                let (number, line) = (r.u()?, r.u()?);
                if number > u64::from(u32::MAX) || line > u64::from(u32::MAX) {
                    return r.err("bad record origin");
                }
                let origin = Origin::from_bits(number << 32 | line);
                let n = r.u()? as usize;
                let mut rec = Record::with_capacity(n.min(64));
                for _ in 0..n {
                    let l = self.label(from, r)?;
                    let v = match r.byte()? {
                        0 => Value::Int(r.i()?),
                        1 => {
                            let codec = r.s()?;
                            let meta = r.bytes()?;
                            let body = FieldBytes::copy_from(r.bytes()?);
                            let v = codecs
                                .decode(codec, meta, body)
                                .map_err(|e| WireError(format!("field `{l}`: {e}")))?;
                            Value::Field(Field::new(v))
                        }
                        2 => {
                            let home = r.u()? as u32;
                            let id = r.u()?;
                            let weight = r.u()?;
                            let interface = r.s()?;
                            let len = r.u()?;
                            Value::Field(if home == self.me {
                                store
                                    .returned(id, weight)
                                    .map_err(|e| WireError(e.to_string()))?
                            } else {
                                store.proxy(home, id, weight, interface, len)
                            })
                        }
                        _ => return r.err("bad value kind"),
                    };
                    rec.set(l, v);
                }
                Ok(Item::Rec(Rec { rec, det, origin }))
            }
            1 => Ok(Item::Marker(Decoder::marker(r)?)),
            2 => Ok(Item::Resume),
            _ => r.err("bad item kind"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    struct NoRelease;
    impl snet_core::ReleaseRemote for NoRelease {
        fn release(&self, _: u32, _: u64, _: u64) {}
    }

    #[test]
    fn records_markers_and_labels_round_trip() {
        let store0 = FieldStore::new(0, Arc::new(NoRelease));
        let store1 = FieldStore::new(1, Arc::new(NoRelease));
        let mut enc = Encoder::new(0, 2, 16);
        let mut dec = Decoder::new(1, 2);
        let mut rec = Record::new();
        rec.set_int(Label::tag("wire-t"), -5);
        rec.set_int(Label::btag("wire-b"), i64::MAX);
        rec.set(
            Label::field("wire-small"),
            Value::Field(Field::text("X", false, "ab")),
        );
        let big = Field::text("X", false, &"z".repeat(100));
        rec.set(Label::field("wire-big"), Value::Field(big.clone()));
        let mut det = Stamps::new();
        det.push(3);
        det.push(u64::MAX);
        let items = [
            Item::Rec(Rec {
                rec,
                det,
                origin: Origin::input(7, Some(9)),
            }),
            Item::Marker(Marker {
                owner: 1 << 48,
                seq: 9,
                weight: 4,
                payload: Some(Box::new(Marker::new(2, 1, None))),
            }),
            Item::Resume,
        ];
        let mut out = Vec::new();
        for it in items.iter().chain(items.iter()) {
            enc.item(1, it, &store0, &mut out).unwrap();
        }
        let codecs = Codecs::default();
        let mut r = Reader::new(&out);
        for want in items.iter().chain(items.iter()) {
            let got = dec.item(0, &mut r, &store1, &codecs).unwrap();
            match (want, got) {
                (Item::Rec(a), Item::Rec(b)) => {
                    assert_eq!(a.det, b.det);
                    assert_eq!(
                        format!("{:?}", a.rec.labels().collect::<Vec<_>>()),
                        format!("{:?}", b.rec.labels().collect::<Vec<_>>())
                    );
                    assert_eq!(b.rec.int(Label::tag("wire-t")), Some(-5));
                    let f = b.rec.field(Label::field("wire-big")).unwrap();
                    let p = f.as_remote().expect("big fields travel by reference");
                    assert_eq!((p.home, p.id), (0, 0));
                    assert!(b
                        .rec
                        .field(Label::field("wire-small"))
                        .unwrap()
                        .as_local()
                        .is_some());
                }
                (Item::Marker(a), Item::Marker(b)) => assert_eq!(*a, b),
                (Item::Resume, Item::Resume) => {}
                _ => panic!("item kind changed"),
            }
        }
        assert!(r.done());
        // Both references share one export and one proxy.
        assert_eq!(store0.counts().0, 1);
        assert_eq!(
            store1.counts().1,
            0,
            "proxies died with the decoded records"
        );
    }
}
