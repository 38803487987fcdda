//! Tests of the wire format (`wire.rs`): items through the encoder and
//! decoder, malformed messages, and the round-trip and no-panic properties.

use super::*;
use crate::dist::fields::StoreError;
use std::sync::Arc;

struct NoRelease;
impl snet_core::ReleaseRemote for NoRelease {
    fn release(&self, _: Rank, _: u64, _: u64) {}
}

#[test]
fn records_markers_and_labels_round_trip() {
    let store0 = FieldStore::new(Rank(0), Arc::new(NoRelease));
    let store1 = FieldStore::new(Rank(1), Arc::new(NoRelease));
    let mut enc = Encoder::new(Rank(0), 2, 16);
    let mut dec = Decoder::new(Rank(1), 2);
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
            custody: Default::default(),
        }),
        Item::Resume,
    ];
    let conn = ConnId {
        origin: Rank(0),
        seq: 4,
    };
    // Written straight from the engine's items, as the output manager does.
    let mut frames = Frames::default();
    for it in items.iter().chain(items.iter()) {
        frames.item(conn, &mut enc, Rank(1), it, &store0).unwrap();
    }
    frames.push(&Frame::Shutdown);
    let mut out = Vec::new();
    frames.message(&Dyadic::one(), &mut out);
    // The syntax reads them back, and writes the same bytes again.
    let m = Message::decode(&out).unwrap();
    assert_eq!(m.credit, Dyadic::one());
    assert!(
        matches!(&m.frames[..], [Frame::Items { conn: c, items }, Frame::Shutdown]
        if *c == conn && items.len() == 6)
    );
    let mut again = Vec::new();
    m.encode(&mut again);
    assert_eq!(again, out);
    // The meaning reads them straight into engine items.
    let codecs = Codecs::default();
    let (credit, mut r) = MessageReader::new(&out).unwrap();
    assert_eq!(credit, Dyadic::one());
    assert_eq!(
        r.next_frame().unwrap(),
        Some(FrameRef::Items { conn, count: 6 })
    );
    for want in items.iter().chain(items.iter()) {
        let got = r
            .next_item(&mut dec, Rank(0), &store1, &codecs)
            .unwrap()
            .unwrap();
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
                assert_eq!((p.home, p.id), (Rank(0), 0));
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
    assert!(r
        .next_item(&mut dec, Rank(0), &store1, &codecs)
        .unwrap()
        .is_none());
    assert_eq!(r.next_frame().unwrap(), Some(FrameRef::Shutdown));
    assert_eq!(r.next_frame().unwrap(), None);
    // Both references share one export and one proxy.
    assert_eq!(store0.counts().0, 1);
    assert_eq!(
        store1.counts().1,
        0,
        "proxies died with the decoded records"
    );
}

/// A varint reads back as written whatever its length (one and two
/// bytes inline, longer ones out of line), takes exactly its bytes, and
/// a two-byte one that is not the shortest form still reads as its
/// value; one cut short is a truncated frame.
#[test]
fn varints_of_every_length_read_back_and_cut_short_are_truncated() {
    let edges = [
        0u64, 1, 0x7f, 0x80, 300, 0x3fff, 0x4000, 0x1f_ffff, 0x20_0000,
    ];
    let values = edges
        .into_iter()
        .chain((0..64).map(|s| 1u64 << s))
        .chain([u64::MAX]);
    for v in values {
        let mut b = Vec::new();
        put_u(&mut b, v);
        let n = b.len();
        b.push(0x55);
        let mut r = Reader { b: &b, at: 0 };
        assert_eq!(r.u().unwrap(), v);
        assert_eq!(r.at, n, "{v} takes {n} bytes");
        for cut in 0..n {
            let mut r = Reader {
                b: &b[..cut],
                at: 0,
            };
            assert_eq!(
                r.u().unwrap_err().what,
                Malformed::Truncated,
                "{v} cut at {cut}"
            );
        }
    }
    let mut r = Reader {
        b: &[0x85, 0x00, 0x81, 0x01],
        at: 0,
    };
    assert_eq!((r.u().unwrap(), r.u().unwrap()), (5, 129));
}

/// How many bytes `put_u` writes for `v`.
fn varint_len(v: u64) -> usize {
    let mut b = Vec::new();
    put_u(&mut b, v);
    b.len()
}

/// A cell's name (`Fired` and `Parked` frames) is the frame's kind, the
/// connection's node and number, the template node, the path's length
/// and steps, and the key, each a varint: the same bytes whether `put_cell` writes them
/// through its buffer on the stack (paths of up to `CELL_STEPS` steps)
/// or one by one, for the smallest and largest values of each, and read
/// back whole.
#[test]
fn a_cells_name_is_its_varints_in_order_for_every_path_length() {
    for len in 0..=CELL_STEPS + 2 {
        for v in [0u64, 1, 0x7f, 0x80, 300, u64::from(u32::MAX), u64::MAX] {
            let cell = CellId {
                conn: ConnId {
                    origin: Rank(u32::try_from(v).unwrap_or(u32::MAX)),
                    seq: v,
                },
                cell: snet_core::NodeId(u32::try_from(v).unwrap_or(u32::MAX)),
                path: (0..len as u64).map(|i| v.wrapping_sub(i)).collect(),
                key: v,
            };
            let mut want = vec![FIRED];
            put_u(&mut want, u64::from(cell.conn.origin.0));
            put_u(&mut want, cell.conn.seq);
            put_u(&mut want, u64::from(cell.cell.0));
            put_u(&mut want, len as u64);
            for &s in &cell.path {
                put_u(&mut want, s);
            }
            put_u(&mut want, cell.key);
            let mut got = Vec::new();
            put_cell(&mut got, FIRED, &cell);
            assert_eq!(got, want, "path of {len} steps, value {v}");
            // `Frames::fired` writes what `push` writes, and it reads back.
            let (mut f, mut g) = (Frames::default(), Frames::default());
            f.fired(&cell);
            g.push(&Frame::Fired { cell: cell.clone() });
            let (mut b, mut c) = (Vec::new(), Vec::new());
            f.message(&Dyadic::zero(), &mut b);
            g.message(&Dyadic::zero(), &mut c);
            assert_eq!(b, c);
            let (_, mut r) = MessageReader::new(&b).unwrap();
            // Read as the bytes of its instance (all but the kind and the
            // key) and its key, which build the name back.
            let Some(FrameRef::Fired { cell: got }) = r.next_frame().unwrap() else {
                panic!("a Fired frame");
            };
            assert_eq!(got.place(), &want[1..want.len() - varint_len(cell.key)]);
            assert_eq!(got.key(), cell.key);
            assert_eq!(got.id(), cell);
            assert_eq!(r.next_frame().unwrap(), None);
            // A commit's tombstone (`Tomb`, written from its instance's
            // prefix and the key) is the same frame, and so is each of
            // them written alone after other frames (`Frames::fired_tombs`).
            let tomb = Tomb::new(&Tomb::prefix_inline(&cell), cell.key);
            assert_eq!(tomb.bytes(), &want[..], "path of {len} steps, value {v}");
            assert_eq!(Tomb::new(&Tomb::prefix(&cell), cell.key).bytes(), &want[..]);
            assert_eq!(
                matches!(tomb, Tomb::Inline(..)),
                want.len() + 10 - varint_len(cell.key) <= TOMB_INLINE
            );
            assert_eq!(tomb.key(), cell.key);
            let mut f = Frames::default();
            f.push(&Frame::Ack { count: 2 });
            f.fired_tombs(std::slice::from_ref(&tomb));
            f.fired_tombs(std::slice::from_ref(&tomb));
            f.push(&Frame::Ack { count: 3 });
            let mut b = Vec::new();
            f.message(&Dyadic::zero(), &mut b);
            let (_, mut r) = MessageReader::new(&b).unwrap();
            assert_eq!(r.next_frame().unwrap(), Some(FrameRef::Ack { count: 2 }));
            for _ in 0..2 {
                let Some(FrameRef::Fired { cell: got }) = r.next_frame().unwrap() else {
                    panic!("a Fired frame");
                };
                assert_eq!(got.id(), cell);
            }
            assert_eq!(r.next_frame().unwrap(), Some(FrameRef::Ack { count: 3 }));
            assert_eq!(r.next_frame().unwrap(), None);
        }
    }
}

/// A message's tombstones (`Frames::fired_cells`): each run of
/// consecutive cells of one instance is one `Fired keys` frame (kind 15:
/// the first cell as in `Fired`, a count, each next key as its wrapping
/// difference from the one before, zigzagged), a cell alone one `Fired`
/// frame; read back, the frames name the same cells in the same order,
/// with the instance's bytes as `Fired` has them; and the frame as
/// `Frame::FiredKeys` writes the same bytes.
#[test]
fn a_run_of_one_instances_tombstones_is_one_frame_of_its_keys() {
    let cell = |seq: u64, path: &[u64], key: u64| CellId {
        conn: ConnId {
            origin: Rank(2),
            seq,
        },
        cell: snet_core::NodeId(5),
        path: path.iter().copied().collect(),
        key,
    };
    let cells = vec![
        cell(1, &[3], 8),
        cell(1, &[3], 12),
        cell(1, &[3], 4),
        cell(1, &[3], u64::MAX),
        cell(1, &[3], 0),
        cell(1, &[3], 0),
        // Another path, then another connection: new frames.
        cell(1, &[4], 16),
        cell(2, &[4], 16),
        cell(2, &[4], 300),
        cell(1, &[3], 20),
    ];
    let mut f = Frames::default();
    f.fired_cells(&cells);
    let mut b = Vec::new();
    f.message(&Dyadic::zero(), &mut b);
    let (_, mut r) = MessageReader::new(&b).unwrap();
    let mut read = Vec::new();
    let mut kinds = Vec::new();
    while let Some(frame) = r.next_frame().unwrap() {
        let run = match frame {
            FrameRef::Fired { cell } => {
                kinds.push((FIRED, 1));
                CellRun::one(cell)
            }
            FrameRef::FiredKeys { cells } => {
                kinds.push((FIRED_KEYS, cells.keys().count()));
                cells
            }
            f => panic!("a tombstone frame, not {f:?}"),
        };
        let mut name = Vec::new();
        put_cell(&mut name, FIRED, &run.cells().next().unwrap().id());
        let key = run.keys().next().unwrap();
        assert_eq!(run.place(), &name[1..name.len() - varint_len(key)]);
        read.extend(run.cells().map(|c| c.id()));
    }
    assert_eq!(read, cells);
    assert_eq!(
        kinds,
        vec![(FIRED_KEYS, 6), (FIRED, 1), (FIRED_KEYS, 2), (FIRED, 1)]
    );
    // The first frame's bytes: the first cell as `Fired` writes it (but
    // the kind), five more keys, and their differences.
    let mut want = Vec::new();
    put_cell(&mut want, FIRED_KEYS, &cells[0]);
    put_u(&mut want, 5);
    for d in [4i64, -8, -5, 1, 0] {
        put_i(&mut want, d);
    }
    assert_eq!(&b[1..1 + want.len()], &want[..], "after the credit's count");
    // The same cells as commits' tombstones (`Tomb`, each its `Fired`
    // frame's bytes) make the same frames (`Frames::fired_tombs`).
    let tombs: Vec<Tomb> = cells
        .iter()
        .map(|c| Tomb::new(&Tomb::prefix_inline(c), c.key))
        .collect();
    let mut h = Frames::default();
    h.fired_tombs(&tombs);
    let mut hb = Vec::new();
    h.message(&Dyadic::zero(), &mut hb);
    assert_eq!(hb, b, "tombstones written from their frames' bytes");
    let mut g = Frames::default();
    g.push(&Frame::FiredKeys {
        cell: cells[0].clone(),
        more: cells[1..6].iter().map(|c| c.key).collect(),
    });
    let mut c = Vec::new();
    g.message(&Dyadic::zero(), &mut c);
    assert_eq!(c, b[..c.len()]);
    // A count past the bytes left is a truncated frame, not a long loop.
    let mut bad = vec![0];
    put_cell(&mut bad, FIRED_KEYS, &cells[0]);
    put_u(&mut bad, 1000);
    bad.push(2);
    let (_, mut r) = MessageReader::new(&bad).unwrap();
    assert_eq!(r.next_frame().unwrap_err().what, Malformed::Truncated);
}

/// Custody's `Parked` frame: kind 13, the cell's name as in `Fired`
/// and the slot, then an `Items` frame of the one parked record, which
/// `Frames::parked` ends there (`Frames::end_items`) so that a record
/// after it on the same connection starts an `Items` frame of its own;
/// through the encoder and decoder both ways.
#[test]
fn parked_frames_round_trip_with_their_record() {
    let store0 = FieldStore::new(Rank(0), Arc::new(NoRelease));
    let store1 = FieldStore::new(Rank(1), Arc::new(NoRelease));
    let codecs = Codecs::default();
    let conn = ConnId {
        origin: Rank(0),
        seq: 3,
    };
    let cell = CellId {
        conn,
        cell: snet_core::NodeId(12),
        path: smallvec::smallvec![2, 300],
        key: 7,
    };
    let rec = |k: i64| {
        let mut r = Record::new();
        r.set_int(Label::tag("wire-parked"), k);
        Item::Rec(Rec {
            rec: r,
            det: Stamps::new(),
            origin: Origin::default(),
        })
    };
    let mut enc = Encoder::new(Rank(1), 2, 16);
    let mut dec = Decoder::new(Rank(0), 2);
    let mut f = Frames::default();
    let Item::Rec(parked) = rec(5) else {
        unreachable!()
    };
    f.parked(cell.clone(), 1, parked, &mut enc, Rank(0), &store1)
        .unwrap();
    f.item(conn, &mut enc, Rank(0), &rec(6), &store1).unwrap();
    let mut b = Vec::new();
    f.message(&Dyadic::zero(), &mut b);
    let (_, mut r) = MessageReader::new(&b).unwrap();
    assert_eq!(
        r.next_frame().unwrap(),
        Some(FrameRef::Parked {
            cell: cell.clone(),
            slot: 1
        })
    );
    let got = |r: &mut MessageReader, dec: &mut Decoder| {
        assert_eq!(
            r.next_frame().unwrap(),
            Some(FrameRef::Items { conn, count: 1 })
        );
        let Some(Item::Rec(x)) = r.next_item(dec, Rank(1), &store0, &codecs).unwrap() else {
            panic!("a record")
        };
        assert!(r
            .next_item(dec, Rank(1), &store0, &codecs)
            .unwrap()
            .is_none());
        match x.rec.get(Label::tag("wire-parked")) {
            Some(Value::Int(k)) => Some(*k),
            _ => None,
        }
    };
    assert_eq!(got(&mut r, &mut dec), Some(5));
    assert_eq!(got(&mut r, &mut dec), Some(6));
    assert_eq!(r.next_frame().unwrap(), None);
    // The owned syntax, both ways.
    let m = Message {
        credit: Dyadic::zero(),
        frames: vec![Frame::Parked { cell, slot: 300 }, Frame::Drain],
    };
    let mut b = Vec::new();
    m.encode(&mut b);
    assert_eq!(b[1], PARKED);
    assert_eq!(Message::decode(&b).unwrap(), m);
}

/// Custody's `Done` frame: kind 9, the item's identity and how many
/// items after it are done too, as varints, after the items of the same
/// message (a commit is one message).
#[test]
fn done_frames_round_trip_after_their_items() {
    let conn = ConnId {
        origin: Rank(0),
        seq: 3,
    };
    let m = Message {
        credit: Dyadic::zero(),
        frames: vec![
            Frame::Items {
                conn,
                items: vec![WireItem::Resume],
            },
            Frame::Done { id: 0, more: 0 },
            Frame::Done { id: 300, more: 2 },
            Frame::Seq { next: 5 },
        ],
    };
    let mut b = Vec::new();
    m.encode(&mut b);
    assert_eq!(
        &b[b.len() - 9..],
        &[DONE, 0, 0, DONE, 0xac, 0x02, 2, SEQ, 5]
    );
    assert_eq!(Message::decode(&b).unwrap(), m);
    let (_, mut r) = MessageReader::new(&b).unwrap();
    assert_eq!(
        r.next_frame().unwrap(),
        Some(FrameRef::Items { conn, count: 1 })
    );
    assert_eq!(
        r.next_frame().unwrap(),
        Some(FrameRef::Done { id: 0, more: 0 })
    );
    assert_eq!(
        r.next_frame().unwrap(),
        Some(FrameRef::Done { id: 300, more: 2 })
    );
    assert_eq!(r.next_frame().unwrap(), Some(FrameRef::Seq { next: 5 }));
    assert_eq!(r.next_frame().unwrap(), None);
}

/// A message's `Done`s go as runs of consecutive items, grown at either
/// end (a group's items come in either order), each item named exactly
/// once, in as many frames as the items have gaps.
#[test]
fn dones_go_as_runs_of_consecutive_items() {
    let runs = |ids: &[u64]| {
        let mut v = Vec::new();
        done_runs(ids, |id, more| v.push((id, more)));
        v
    };
    assert_eq!(runs(&[]), []);
    assert_eq!(runs(&[7]), [(7, 0)]);
    // A run grows at either end; an item next to an earlier run starts
    // a new one.
    assert_eq!(runs(&[1, 0, 2, 3, 4, 5]), [(0, 5)]);
    assert_eq!(runs(&[1, 0, 2, 3, 5, 4]), [(0, 3), (4, 1)]);
    assert_eq!(
        runs(&[10, 11, 20, 12, 19]),
        [(10, 1), (20, 0), (12, 0), (19, 0)]
    );
    assert_eq!(
        runs(&[u64::MAX - 1, u64::MAX, 0]),
        [(u64::MAX - 1, 1), (0, 0)]
    );
    // Every item exactly once, a frame per gap.
    let mut ids: Vec<u64> = (0..1000u64).collect();
    ids.swap(100, 500);
    let mut named: Vec<u64> = runs(&ids)
        .into_iter()
        .flat_map(|(id, more)| id..=id + more)
        .collect();
    assert!(runs(&ids).len() <= 5, "{:?}", runs(&ids));
    named.sort_unstable();
    assert_eq!(named, (0..1000).collect::<Vec<_>>());
}

#[test]
fn malformed_messages_are_errors_that_say_where() {
    let err = |b: &[u8]| Message::decode(b).unwrap_err();
    // Credit counted twice (was a panic in `Dyadic::add`), or more than one.
    assert_eq!(err(&[2, 1, 1]).what, Malformed::BadCredit);
    assert_eq!(err(&[2, 0, 3]).what, Malformed::BadCredit);
    assert_eq!(err(&[2, 3, 1]).what, Malformed::BadCredit);
    assert_eq!(
        err(&[0, 16]),
        WireError {
            at: 1,
            what: Malformed::UnknownFrame(16)
        }
    );
    assert_eq!(
        err(&[0, 16]).to_string(),
        "malformed message at byte 1: unknown frame kind 16"
    );
    // A given field's frame cut short before its meta part.
    assert_eq!(err(&[0, GIVEN, 1, b'X']).what, Malformed::Truncated);
    // A parked record's frame cut short before its slot.
    assert_eq!(err(&[0, PARKED, 0, 3, 4, 0, 0]).what, Malformed::Truncated);
    // A tombstone cut short after its connection.
    assert_eq!(err(&[0, 11, 0, 3]).what, Malformed::Truncated);
    // A tombstone whose instance path counts more steps than bytes left.
    let mut path = vec![0, 11, 0, 3, 4];
    path.extend([0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f, 1, 2]);
    assert_eq!(err(&path).what, Malformed::Truncated);
    assert_eq!(err(&[0, DONE]).what, Malformed::Truncated);
    // A run of `Done`s cut short, or past the last identity.
    assert_eq!(err(&[0, DONE, 5]).what, Malformed::Truncated);
    let mut past = vec![0, DONE, 2];
    past.extend([0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]);
    assert_eq!(err(&past).what, Malformed::TooLarge("Done run"));
    assert_eq!(err(&[0, SEQ, 0x80]).what, Malformed::Truncated);
    assert_eq!(err(&[0, FETCH]).what, Malformed::Truncated);
    assert_eq!(err(&[0, FETCH, 0x80]).what, Malformed::Truncated);
    let mut long = vec![0, FETCH];
    long.extend([0xff; 11]);
    assert_eq!(err(&long).what, Malformed::VarintTooLong);
    // A string longer than the message; a count of items far beyond it.
    assert_eq!(
        err(&[0, FAIL, 0xff, 0xff, 0xff, 0xff, 0x0f]).what,
        Malformed::TruncatedBytes
    );
    assert_eq!(err(&[0, FAIL, 1, 0xff]).what, Malformed::NotUtf8);
    let mut many = vec![0, ITEMS, 0, 0];
    many.extend([0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f]);
    assert_eq!(err(&many).what, Malformed::Truncated);
    // A connection's node beyond 32 bits.
    assert_eq!(
        err(&[0, ITEMS, 0x80, 0x80, 0x80, 0x80, 0x10, 0, 0]).what,
        Malformed::TooLarge("node")
    );
    // Markers nested without end.
    let mut deep = vec![0, ITEMS, 0, 0, 1, 1];
    for _ in 0..=MAX_MARKER_DEPTH {
        deep.extend([0, 0, 0, 1]);
    }
    assert_eq!(err(&deep).what, Malformed::MarkerTooDeep);
    let mut ok = vec![0, ITEMS, 0, 0, 1, 1];
    for _ in 1..MAX_MARKER_DEPTH {
        ok.extend([0, 0, 0, 1]);
    }
    ok.extend([0, 0, 0, 0]);
    assert!(Message::decode(&ok).is_ok());
    for (b, what) in [
        (vec![0, ITEMS, 0, 0, 1, 7], Malformed::BadItemKind(7)),
        (
            vec![0, ITEMS, 0, 0, 1, 0, 0, 0x80, 0x80, 0x80, 0x80, 0x10, 0, 0],
            Malformed::BadOrigin,
        ),
        (
            vec![0, ITEMS, 0, 0, 1, 0, 0, 0, 0, 1, 1, 3],
            Malformed::BadLabelKind(3),
        ),
        (
            vec![0, ITEMS, 0, 0, 1, 0, 0, 0, 0, 1, 0, 4],
            Malformed::BadValueKind(4),
        ),
    ] {
        assert_eq!(err(&b).what, what, "{b:?}");
    }
}

#[test]
fn an_items_count_in_any_varint_width_decodes() {
    // Written as four bytes patched in place (2: 0x82 0x80 0x80 0x00);
    // a minimal varint reads the same.
    let four = [0, ITEMS, 3, 5, 0x82, 0x80, 0x80, 0x00, 2, 2, SHUTDOWN];
    let short = [0, ITEMS, 3, 5, 2, 2, 2, SHUTDOWN];
    let want = vec![
        Frame::Items {
            conn: ConnId {
                origin: Rank(3),
                seq: 5,
            },
            items: vec![WireItem::Resume, WireItem::Resume],
        },
        Frame::Shutdown,
    ];
    assert_eq!(Message::decode(&four).unwrap().frames, want);
    assert_eq!(Message::decode(&short).unwrap().frames, want);
    let mut out = Vec::new();
    Message::decode(&short).unwrap().encode(&mut out);
    assert_eq!(out, four);
}

#[test]
fn labels_that_do_not_fit_the_dictionary_are_malformed() {
    let store = FieldStore::new(Rank(1), Arc::new(NoRelease));
    let codecs = Codecs::default();
    // A record with one entry: label 5, defined / used, then an integer.
    for (label, what) in [
        (vec![11, 1, 1, b'q'], Malformed::LabelOutOfOrder),
        (vec![10], Malformed::UnknownLabel),
    ] {
        let mut b = vec![0, ITEMS, 0, 0, 1, 0, 0, 0, 0, 1];
        b.extend(label);
        b.extend([0, 2]);
        let mut dec = Decoder::new(Rank(1), 2);
        let (_, mut r) = MessageReader::new(&b).unwrap();
        r.next_frame().unwrap();
        let e = r.next_item(&mut dec, Rank(0), &store, &codecs).unwrap_err();
        assert_eq!(e, ItemError::Malformed(WireError { at: 10, what }));
    }
}

/// A peer's garbage in field references is an error, never a panic: a
/// reference to a node the run does not have, weight this node never
/// issued (an unknown export, more than is out), a release of either.
#[test]
fn garbage_field_references_are_errors() {
    let store = FieldStore::new(Rank(1), Arc::new(NoRelease));
    let codecs = Codecs::default();
    let (id, weight) = store.export(&Field::text("X", false, "value"));
    let with_ref = |home: Rank, id: u64, weight: u64| {
        let m = Message {
            credit: Dyadic::one(),
            frames: vec![Frame::Items {
                conn: ConnId {
                    origin: Rank(0),
                    seq: 1,
                },
                items: vec![WireItem::Rec {
                    det: Stamps::new(),
                    origin: Origin::input(1, None),
                    entries: vec![(
                        WireLabel::New {
                            index: 0,
                            kind: LabelKind::Field,
                            name: "garbage-f".into(),
                        },
                        WireValue::Ref {
                            home,
                            id,
                            weight,
                            interface: "X".into(),
                            len: 5,
                        },
                    )],
                }],
            }],
        };
        let mut b = Vec::new();
        m.encode(&mut b);
        let mut dec = Decoder::new(Rank(1), 2);
        let (_, mut r) = MessageReader::new(&b).unwrap();
        r.next_frame().unwrap();
        r.next_item(&mut dec, Rank(0), &store, &codecs).map(|_| ())
    };
    let f = Label::field("garbage-f");
    assert_eq!(
        with_ref(Rank(9), 1, 1),
        Err(ItemError::NoSuchNode {
            label: f,
            home: Rank(9)
        })
    );
    assert_eq!(
        with_ref(Rank(1), id + 100, 1),
        Err(ItemError::Returned(StoreError::NoSuchField {
            id: id + 100,
            home: Rank(1)
        }))
    );
    assert_eq!(
        with_ref(Rank(1), id, weight + 1),
        Err(ItemError::Returned(StoreError::TooMuchWeight {
            id,
            home: Rank(1)
        }))
    );
    assert_eq!(
        store.released(id + 100, 1),
        Err(StoreError::NoSuchField {
            id: id + 100,
            home: Rank(1)
        })
    );
    assert_eq!(
        store.released(id, weight + 1),
        Err(StoreError::TooMuchWeight { id, home: Rank(1) })
    );
    // The weight that is out comes back without complaint.
    assert_eq!(store.released(id, weight), Ok(()));
}

mod props {
    use super::*;
    use proptest::collection::{btree_set, vec};
    use proptest::prelude::*;
    use proptest::sample::Index;

    fn text() -> impl Strategy<Value = Cow<'static, str>> {
        vec(any::<char>(), 0..8).prop_map(|c| Cow::Owned(c.into_iter().collect()))
    }

    fn bytes() -> impl Strategy<Value = Cow<'static, [u8]>> {
        vec(any::<u8>(), 0..24).prop_map(Cow::Owned)
    }

    fn stamps() -> impl Strategy<Value = Stamps> {
        vec(any::<u64>(), 0..4).prop_map(|v| {
            let mut s = Stamps::new();
            for x in v {
                s.push(x);
            }
            s
        })
    }

    fn conn() -> impl Strategy<Value = ConnId> {
        (any::<u32>(), any::<u64>()).prop_map(|(origin, seq)| ConnId {
            origin: Rank(origin),
            seq,
        })
    }

    fn marker() -> impl Strategy<Value = Marker> {
        vec((any::<u64>(), any::<u64>(), any::<u64>()), 1..4).prop_map(|chain| {
            let mut m = None;
            for (owner, seq, weight) in chain {
                m = Some(Marker {
                    owner,
                    seq,
                    weight,
                    payload: m.map(Box::new),
                    custody: Default::default(),
                });
            }
            m.unwrap()
        })
    }

    fn label() -> impl Strategy<Value = WireLabel<'static>> {
        prop_oneof![
            any::<u32>().prop_map(WireLabel::Known),
            (any::<u32>(), 0..3u8, text()).prop_map(|(index, k, name)| WireLabel::New {
                index,
                kind: [LabelKind::Field, LabelKind::Tag, LabelKind::BTag][k as usize],
                name,
            }),
        ]
    }

    fn value() -> impl Strategy<Value = WireValue<'static>> {
        prop_oneof![
            any::<i64>().prop_map(WireValue::Int),
            (text(), bytes(), bytes()).prop_map(|(codec, meta, body)| WireValue::Inline {
                codec,
                meta,
                body
            }),
            (
                any::<u32>(),
                any::<u64>(),
                any::<u64>(),
                text(),
                any::<u64>()
            )
                .prop_map(|(home, id, weight, interface, len)| {
                    WireValue::Ref {
                        home: Rank(home),
                        id,
                        weight,
                        interface,
                        len,
                    }
                }),
            Just(WireValue::Given),
        ]
    }

    fn item() -> impl Strategy<Value = WireItem<'static>> {
        prop_oneof![
            (
                stamps(),
                any::<u32>(),
                any::<u32>(),
                vec((label(), value()), 0..5)
            )
                .prop_map(|(det, number, line, entries)| WireItem::Rec {
                    det,
                    origin: Origin::from_bits(u64::from(number) << 32 | u64::from(line)),
                    entries: entries.into_iter().collect(),
                }),
            marker().prop_map(WireItem::Marker),
            Just(WireItem::Resume),
        ]
    }

    fn frame() -> impl Strategy<Value = Frame<'static>> {
        prop_oneof![
            (conn(), any::<u32>(), conn(), stamps()).prop_map(|(conn, template, back, start)| {
                Frame::Open {
                    conn,
                    template: snet_core::NodeId(template),
                    back,
                    start: Cow::Owned(start),
                }
            }),
            (conn(), vec(item(), 0..5)).prop_map(|(conn, items)| Frame::Items { conn, items }),
            any::<u64>().prop_map(|id| Frame::Fetch { id }),
            (any::<u64>(), any::<u64>()).prop_map(|(id, weight)| Frame::Release { id, weight }),
            text().prop_map(|message| Frame::Fail { message }),
            Just(Frame::Shutdown),
            any::<u64>().prop_map(|count| Frame::Ack { count }),
            (any::<u64>(), any::<u64>()).prop_map(|(id, more)| Frame::Done {
                id,
                more: more.min(u64::MAX - id)
            }),
            any::<u64>().prop_map(|next| Frame::Seq { next }),
            // (Paths past `CELL_STEPS`, which `put_cell` writes another way.)
            (conn(), any::<u32>(), vec(any::<u64>(), 0..9), any::<u64>()).prop_map(
                |(conn, cell, path, key)| Frame::Fired {
                    cell: super::CellId {
                        conn,
                        cell: snet_core::NodeId(cell),
                        path: path.into(),
                        key,
                    },
                }
            ),
            (
                conn(),
                any::<u32>(),
                vec(any::<u64>(), 0..3),
                any::<u64>(),
                vec(any::<u64>(), 0..5)
            )
                .prop_map(|(conn, cell, path, key, more)| Frame::FiredKeys {
                    cell: super::CellId {
                        conn,
                        cell: snet_core::NodeId(cell),
                        path: path.into(),
                        key,
                    },
                    more,
                }),
            Just(Frame::Drain),
            (
                conn(),
                any::<u32>(),
                vec(any::<u64>(), 0..4),
                any::<u64>(),
                any::<u64>()
            )
                .prop_map(|(conn, cell, path, key, slot)| Frame::Parked {
                    cell: super::CellId {
                        conn,
                        cell: snet_core::NodeId(cell),
                        path: path.into(),
                        key,
                    },
                    slot,
                }),
            (any::<u64>(), text(), bytes()).prop_map(|(id, codec, meta)| Frame::Bytes {
                id,
                codec,
                meta
            }),
            (text(), bytes()).prop_map(|(codec, meta)| Frame::Given { codec, meta }),
        ]
    }

    fn credit() -> impl Strategy<Value = Dyadic> {
        btree_set(0u64..200, 0..5).prop_map(|mut s| {
            if s.len() > 1 {
                s.remove(&0);
            }
            Dyadic::from_canonical(&s.into_iter().collect::<Vec<_>>()).unwrap()
        })
    }

    fn message() -> impl Strategy<Value = Message<'static>> {
        (credit(), vec(frame(), 0..6)).prop_map(|(credit, frames)| Message { credit, frames })
    }

    proptest! {
        #[test]
        fn every_message_round_trips(m in message()) {
            let mut b = Vec::new();
            m.encode(&mut b);
            prop_assert_eq!(Message::decode(&b).map(Message::into_owned), Ok(m.clone()));
        }

        #[test]
        fn any_bytes_decode_to_a_message_or_an_error(b in vec(any::<u8>(), 0..256)) {
            if let Ok(m) = Message::decode(&b) {
                let mut again = Vec::new();
                m.encode(&mut again);
                let m = m.into_owned();
                prop_assert_eq!(Message::decode(&again).map(Message::into_owned), Ok(m));
            }
        }

        #[test]
        fn damaged_messages_decode_to_a_message_or_an_error(
            m in message(),
            flips in vec((any::<Index>(), any::<u8>()), 1..4),
            cut in any::<Index>(),
        ) {
            let mut b = Vec::new();
            m.encode(&mut b);
            for (at, x) in flips {
                let i = at.index(b.len());
                b[i] ^= x;
            }
            for b in [&b[..], &b[..cut.index(b.len() + 1)]] {
                if let Ok(m) = Message::decode(b) {
                    let mut again = Vec::new();
                    m.encode(&mut again);
                    let m = m.into_owned();
                    prop_assert_eq!(Message::decode(&again).map(Message::into_owned), Ok(m));
                }
            }
        }

        #[test]
        fn any_bytes_read_into_engine_items_or_an_error(b in vec(any::<u8>(), 0..256)) {
            let store = FieldStore::new(Rank(1), Arc::new(NoRelease));
            let codecs = Codecs::default();
            let mut dec = Decoder::new(Rank(1), 2);
            if let Ok((_, mut r)) = MessageReader::new(&b) {
                while let Ok(Some(f)) = r.next_frame() {
                    if let FrameRef::Items { .. } = f {
                        while let Ok(Some(_)) = r.next_item(&mut dec, Rank(0), &store, &codecs) {}
                    }
                }
            }
        }
    }
}

/// A record followed in a traced run carries its flow id to the next node
/// (the flag bit of the record's kind byte); an unfollowed record's bytes
/// have no trace of it (kind 0, as before flows existed).
#[test]
fn followed_records_carry_their_flow_id() {
    let store0 = FieldStore::new(Rank(0), Arc::new(NoRelease));
    let store1 = FieldStore::new(Rank(1), Arc::new(NoRelease));
    let mut enc = Encoder::new(Rank(0), 2, 16);
    let mut dec = Decoder::new(Rank(1), 2);
    let conn = ConnId {
        origin: Rank(0),
        seq: 1,
    };
    let mut stamped = Stamps::new();
    stamped.push(5);
    stamped.set_flow((17 << 28) | (1 << 12) | 2);
    let mut followed = Stamps::new();
    followed.set_flow(8);
    let origins = [
        (Origin::input(8, Some(3)), Stamps::new()),
        (Origin::input(8, Some(3)), followed),
        (Origin::input(1, None), stamped),
    ];
    let mut frames = Frames::default();
    let mut heads = Vec::new();
    for (o, det) in origins.clone() {
        let mut rec = Record::new();
        rec.set_int(Label::tag("wire-flow"), 1);
        let item = Item::Rec(Rec {
            rec,
            det,
            origin: o,
        });
        // Each alone (an encoder of its own: the label is new to each).
        let mut one = Vec::new();
        Encoder::new(Rank(0), 2, 16)
            .item(Rank(1), &item, &store0, &mut one)
            .unwrap();
        heads.push(one[0]);
        frames
            .item(conn, &mut enc, Rank(1), &item, &store0)
            .unwrap();
    }
    assert_eq!(heads, [0, ITEM_FLOW, ITEM_FLOW]);
    let mut out = Vec::new();
    frames.message(&Dyadic::one(), &mut out);
    // The syntax keeps the id (the bytes written again are the same).
    let m = Message::decode(&out).unwrap();
    let mut again = Vec::new();
    m.encode(&mut again);
    assert_eq!(again, out);
    let codecs = Codecs::default();
    let (_, mut r) = MessageReader::new(&out).unwrap();
    assert_eq!(
        r.next_frame().unwrap(),
        Some(FrameRef::Items { conn, count: 3 })
    );
    for (origin, det) in origins {
        match r.next_item(&mut dec, Rank(0), &store1, &codecs).unwrap() {
            Some(Item::Rec(got)) => {
                assert_eq!(got.origin, origin);
                assert_eq!(got.det.as_slice(), det.as_slice());
                assert_eq!(got.det.flow(), det.flow());
            }
            _ => panic!("not a record"),
        }
    }
    // The flag with a zero id is malformed: kind, no stamps, number 2,
    // line 0, flow 0, no entries.
    let bad = [0, ITEMS, 0, 0, 1, ITEM_FLOW, 0, 2, 0, 0, 0];
    assert_eq!(
        Message::decode(&bad).unwrap_err().what,
        Malformed::BadOrigin
    );
    let good = [0, ITEMS, 0, 0, 1, ITEM_FLOW, 0, 2, 0, 9, 0];
    assert!(Message::decode(&good).is_ok());
}

/// `item` (a record) encoded by `enc` for node 0 in a message of its own
/// and decoded again: `f` of the record's entries as they went.
fn one_record<R>(
    enc: &mut Encoder,
    conn: ConnId,
    item: &Item,
    store: &FieldStore,
    f: impl FnOnce(&[(WireLabel<'_>, WireValue<'_>)]) -> R,
) -> R {
    let mut frames = Frames::default();
    frames.item(conn, enc, Rank(0), item, store).unwrap();
    let mut out = Vec::new();
    frames.message(&Dyadic::one(), &mut out);
    let m = Message::decode(&out).unwrap();
    let [Frame::Items { items, .. }] = &m.frames[..] else {
        panic!("one Items frame: {:?}", m.frames)
    };
    let [WireItem::Rec { entries, .. }] = &items[..] else {
        panic!("one record")
    };
    f(entries)
}

/// A node that may be lost (`--on-node-loss respawn`, not node 0) sends
/// every field by value whatever the inline limit, except a reference
/// to a field node 0 is home to: that goes on as a reference, as it
/// would without custody (node 0 is never lost, and a copy by value
/// cost node 0 a decoded value and a `Release` per record).
#[test]
fn a_node_that_may_be_lost_keeps_no_field_but_passes_node_0s_references_on() {
    let store = FieldStore::new(Rank(1), Arc::new(NoRelease));
    let long = "y".repeat(100);
    let proxy = |home: u32| {
        let r = snet_core::RemoteField::new(Rank(home), 5, "X", 100, 1 << 20, Arc::new(NoRelease));
        r.fill(Arc::new(snet_core::TextField::new("X", false, &long)));
        Field::remote(Arc::new(r))
    };
    let mut rec = Record::new();
    rec.set(Label::field("keep-a"), Value::Field(proxy(0)));
    rec.set(Label::field("keep-b"), Value::Field(proxy(2)));
    rec.set(
        Label::field("keep-c"),
        Value::Field(Field::text("X", false, &long)),
    );
    let item = Item::Rec(Rec {
        rec,
        det: Stamps::new(),
        origin: Origin::input(1, None),
    });
    let conn = ConnId {
        origin: Rank(0),
        seq: 1,
    };
    let kinds = |keep_nothing: bool| -> Vec<String> {
        let enc = Encoder::new(Rank(1), 3, 16);
        let mut enc = if keep_nothing {
            enc.keeping_nothing()
        } else {
            enc
        };
        one_record(&mut enc, conn, &item, &store, |entries| {
            entries
                .iter()
                .map(|(_, v)| match v {
                    WireValue::Ref { home, .. } => format!("reference home {home}"),
                    WireValue::Inline { .. } => "value".to_string(),
                    WireValue::Int(_) => "int".to_string(),
                    WireValue::Given => "given".to_string(),
                })
                .collect()
        })
    };
    assert_eq!(
        kinds(false),
        ["reference home 0", "reference home 2", "reference home 1"]
    );
    assert_eq!(kinds(true), ["reference home 0", "value", "value"]);
}

/// A node keeping nothing (`respawn`, not node 0) whose transport has
/// memory outliving the node (shm's arena in zero-copy mode) *gives* a
/// big field whose body lies there (value kind 3, the value handed to the
/// output manager to send ahead in a `Given` message), copies one whose
/// body does not (kind 1, as before), and keeps small fields inline and
/// node 0's references as references. The receiver's records take the
/// given values in order; a given value with nothing given is an error
/// naming the field, never a panic; a replaced sender's untaken values
/// are dropped (`Decoder::forget`), so its replacement's records never
/// take them.
#[test]
fn a_node_keeping_nothing_gives_fields_that_lie_in_shared_memory() {
    let store = FieldStore::new(Rank(1), Arc::new(NoRelease));
    let store0 = FieldStore::new(Rank(0), Arc::new(NoRelease));
    let codecs = Codecs::default();
    let text = |s: &str| Field::text("X", false, s);
    let (shared_a, shared_b) = (text(&"a".repeat(64)), text(&"b".repeat(64)));
    let body = |f: &Field| f.get().unwrap().body().as_ptr() as usize;
    // The "shared region": from the body of `shared_a` to that of
    // `shared_b`; a field on the heap outside it plays the private one
    // (those that land inside are kept alive, so the next lands elsewhere).
    let (lo, hi) = (
        body(&shared_a).min(body(&shared_b)),
        body(&shared_a).max(body(&shared_b)),
    );
    let mut inside = Vec::new();
    let private = loop {
        let p = text(&"p".repeat(64));
        if !(lo..hi + 1).contains(&body(&p)) {
            break p;
        }
        inside.push(p);
        assert!(inside.len() < 10_000, "no heap address outside the region");
    };
    let mut enc = Encoder::new(Rank(1), 2, 16).keeping_nothing();
    enc.set_shared(Some(lo..hi + 1));
    let rec = |fields: &[(&str, &Field)]| {
        let mut r = Record::new();
        for (l, f) in fields {
            r.set(Label::field(l), Value::Field((*f).clone()));
        }
        r.set(Label::field("give-small"), Value::Field(text("s")));
        Item::Rec(Rec {
            rec: r,
            det: Stamps::new(),
            origin: Origin::input(1, None),
        })
    };
    let conn = ConnId {
        origin: Rank(0),
        seq: 1,
    };
    let mut frames = Frames::default();
    let first = rec(&[("give-a", &shared_a), ("give-p", &private)]);
    let second = rec(&[("give-b", &shared_b)]);
    frames
        .item(conn, &mut enc, Rank(0), &first, &store)
        .unwrap();
    frames
        .item(conn, &mut enc, Rank(0), &second, &store)
        .unwrap();
    let given: Vec<_> = enc.take_given().collect();
    assert_eq!(given.len(), 2, "the two fields in the shared region");
    assert!(given.iter().all(|(to, _)| *to == Rank(0)));
    assert_eq!(given[0].1.body(), shared_a.get().unwrap().body());
    assert_eq!(given[1].1.body(), shared_b.get().unwrap().body());
    let mut out = Vec::new();
    frames.message(&Dyadic::one(), &mut out);
    // The syntax: a, p, small / b, small; given, copied, inline.
    let m = Message::decode(&out).unwrap();
    let [Frame::Items { items, .. }] = &m.frames[..] else {
        panic!("one Items frame: {:?}", m.frames)
    };
    let kinds: Vec<Vec<&str>> = items
        .iter()
        .map(|it| match it {
            WireItem::Rec { entries, .. } => entries
                .iter()
                .map(|(_, v)| match v {
                    WireValue::Given => "given",
                    WireValue::Inline { .. } => "value",
                    _ => "other",
                })
                .collect(),
            _ => panic!("records"),
        })
        .collect();
    let mut sorted = kinds.clone();
    sorted.iter_mut().for_each(|k| k.sort());
    assert_eq!(
        sorted,
        [vec!["given", "value", "value"], vec!["given", "value"]]
    );
    // The receiver: given values taken in order.
    let receive = |dec: &mut Decoder| {
        let (_, mut r) = MessageReader::new(&out).unwrap();
        r.next_frame().unwrap();
        let mut recs = Vec::new();
        loop {
            match r.next_item(dec, Rank(1), &store0, &codecs) {
                Ok(Some(Item::Rec(rec))) => recs.push(rec.rec),
                Ok(_) => return Ok(recs),
                Err(e) => return Err(e),
            }
        }
    };
    let mut dec = Decoder::new(Rank(0), 2);
    for (_, v) in &given {
        dec.give(Rank(1), Field::new(v.clone()));
    }
    let recs = receive(&mut dec).unwrap();
    let field = |r: &Record, l: &str| {
        r.field(Label::field(l))
            .unwrap()
            .get()
            .unwrap()
            .body()
            .to_vec()
    };
    assert_eq!(field(&recs[0], "give-a"), b"a".repeat(64));
    assert_eq!(field(&recs[0], "give-p"), b"p".repeat(64));
    assert_eq!(field(&recs[1], "give-b"), b"b".repeat(64));
    assert_eq!(dec.given(Rank(1)), 0);
    // Nothing given: an error naming the field.
    let mut dec = Decoder::new(Rank(0), 2);
    match receive(&mut dec) {
        Err(e @ ItemError::NotGiven { .. }) => {
            assert!(
                e.to_string().contains("field `give-a` is a given field"),
                "{e}"
            )
        }
        other => panic!("{other:?}"),
    }
    // A lost sender's untaken value (its record never came) is dropped
    // when the sender is replaced: the replacement's records take their
    // own. (Without `forget` clearing it, the first record would take the
    // lost incarnation's `b` as its `a`.)
    let mut dec = Decoder::new(Rank(0), 2);
    dec.give(Rank(1), Field::new(given[1].1.clone()));
    assert_eq!(dec.forget(Rank(1)), 1);
    assert_eq!(dec.given(Rank(1)), 0);
    for (_, v) in &given {
        dec.give(Rank(1), Field::new(v.clone()));
    }
    let recs = receive(&mut dec).unwrap();
    assert_eq!(field(&recs[0], "give-a"), b"a".repeat(64));
    assert_eq!(field(&recs[1], "give-b"), b"b".repeat(64));
    // Node 0 and a node that does not keep nothing never give.
    let mut enc = Encoder::new(Rank(1), 2, 16);
    enc.set_shared(Some(lo..hi + 1));
    Frames::default()
        .item(conn, &mut enc, Rank(0), &first, &store)
        .unwrap();
    assert_eq!(enc.take_given().count(), 0);
}

/// An encoder whose items are dropped once sent (`consuming`) sends a
/// reference to another node's field with all its weight when the record
/// holds the last handle on it, so the handle's drop gives nothing back;
/// with another handle alive, or without `consuming` (node 0 of a run
/// that logs what it sends), half, as before.
#[test]
fn a_last_handle_on_a_reference_goes_with_all_its_weight() {
    use std::sync::atomic::{AtomicU64, Ordering};
    /// Counts the weight released.
    struct Counted(AtomicU64);
    impl snet_core::ReleaseRemote for Counted {
        fn release(&self, _home: Rank, _id: u64, weight: u64) {
            self.0.fetch_add(weight, Ordering::Relaxed);
        }
    }
    let store = FieldStore::new(Rank(1), Arc::new(NoRelease));
    let conn = ConnId {
        origin: Rank(0),
        seq: 1,
    };
    // (weight sent, weight released when every handle is gone)
    let send = |consuming: bool, other_handle: bool| -> (u64, u64) {
        let released = Arc::new(Counted(AtomicU64::new(0)));
        let r = snet_core::RemoteField::new(Rank(0), 5, "X", 100, 1 << 20, released.clone());
        let f = Field::remote(Arc::new(r));
        let other = other_handle.then(|| f.clone());
        let mut rec = Record::new();
        rec.set(Label::field("x"), Value::Field(f));
        let item = Item::Rec(Rec {
            rec,
            det: Stamps::new(),
            origin: Origin::input(1, None),
        });
        let enc = Encoder::new(Rank(1), 2, 16);
        let mut enc = if consuming { enc.consuming() } else { enc };
        let weight = one_record(&mut enc, conn, &item, &store, |entries| {
            let [(_, WireValue::Ref { weight, .. })] = entries else {
                panic!("one reference: {entries:?}")
            };
            *weight
        });
        drop((item, other));
        (weight, released.0.load(Ordering::Relaxed))
    };
    assert_eq!(send(true, false), (1 << 20, 0));
    assert_eq!(send(true, true), (1 << 19, 1 << 19));
    assert_eq!(send(false, false), (1 << 19, 1 << 19));
}
