//! Property test: random records survive write -> read unchanged, through
//! the record reader and writer with the C4SNet text codec.
//!
//! Records of tags, binding tags and C4SNet data fields of every type
//! (scalars and arrays, including characters that need XML escaping) are
//! written, read back, and compared: tags by value, fields by their bytes
//! after `decode_field`. Writing what was read again must give the same
//! bytes: the writer's form is canonical, so reading it and writing it again
//! is the identity. Float values stay within the range `%.32f` prints exactly
//! (|x| >= 2^-40); NaNs are left out (C prints every NaN as `nan`).

use c4snet::{data_field, decode_field, text_codecs, CData, CType};
use proptest::prelude::*;
use snet_core::{Label, Record, Value};
use snet_io::{read_all, RecordWriter, StreamItem};

fn element(ctype: CType) -> BoxedStrategy<Vec<u8>> {
    match ctype {
        CType::Float => prop_oneof![
            Just(0.0f32),
            (-1e30f32..1e30f32).prop_filter("printable by %.32f", |x| x.abs() >= 2f32.powi(-40)),
        ]
        .prop_map(|x| x.to_ne_bytes().to_vec())
        .boxed(),
        CType::Double => any::<f64>()
            .prop_filter("not NaN", |x| !x.is_nan())
            .prop_map(|x| x.to_ne_bytes().to_vec())
            .boxed(),
        CType::LDouble => (any::<u64>(), 1u16..0x7fff, any::<bool>())
            .prop_map(|(m, e, neg)| {
                let mut slot = vec![0u8; 16];
                slot[..8].copy_from_slice(&(m | 1 << 63).to_le_bytes());
                slot[8..10].copy_from_slice(&(e | if neg { 0x8000 } else { 0 }).to_le_bytes());
                slot
            })
            .boxed(),
        other => proptest::collection::vec(any::<u8>(), other.size()).boxed(),
    }
}

/// A field's data as (type, length, bytes): `CData` itself is not `Debug`.
type DataSpec = (CType, usize, Vec<u8>);

fn cdata() -> impl Strategy<Value = DataSpec> {
    (0..CType::ALL.len(), 0usize..5).prop_flat_map(|(t, len)| {
        let ctype = CType::ALL[t];
        proptest::collection::vec(element(ctype), len)
            .prop_map(move |els| (ctype, len, els.concat()))
    })
}

#[derive(Debug, Clone)]
enum Entry {
    Tag(String, i64),
    BTag(String, i64),
    Field(String, usize),
}

fn name() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("a".to_owned()),
        Just("B".to_owned()),
        Just("x_1".to_owned()),
        "[a-z]{1,6}"
    ]
}

fn records() -> impl Strategy<Value = Vec<(Vec<Entry>, Vec<DataSpec>)>> {
    let entry = prop_oneof![
        (name(), any::<i64>()).prop_map(|(n, v)| Entry::Tag(n, v)),
        (name(), any::<i64>()).prop_map(|(n, v)| Entry::BTag(n, v)),
        (name(), 0usize..4).prop_map(|(n, i)| Entry::Field(n, i)),
    ];
    proptest::collection::vec(
        (
            proptest::collection::vec(entry, 0..6),
            proptest::collection::vec(cdata(), 4),
        ),
        0..6,
    )
}

fn build(entries: &[Entry], data: &[DataSpec]) -> Record {
    let mut r = Record::new();
    for e in entries {
        match e {
            Entry::Tag(n, v) => r.set_int(Label::tag(n), *v),
            Entry::BTag(n, v) => r.set_int(Label::btag(n), *v),
            Entry::Field(n, i) => r.set(Label::field(n), {
                let (ctype, len, bytes) = &data[*i];
                Value::Field(data_field(CData::from_bytes(*ctype, *len, bytes)))
            }),
        }
    }
    r
}

fn write(recs: &[Record], binary: bool) -> Vec<u8> {
    let mut w = if binary {
        RecordWriter::binary(Vec::new())
    } else {
        RecordWriter::new(Vec::new())
    }
    .with_codecs(text_codecs());
    for r in recs {
        w.write(r).expect("in-memory write");
    }
    w.write_terminate().expect("in-memory write");
    w.into_inner().expect("in-memory flush")
}

fn same(a: &Record, b: &Record) -> Result<(), TestCaseError> {
    prop_assert_eq!(a.len(), b.len());
    for ((la, va), (lb, vb)) in a.entries().iter().zip(b.entries()) {
        prop_assert_eq!(la, lb);
        match (va, vb) {
            (Value::Int(x), Value::Int(y)) => prop_assert_eq!(x, y),
            (Value::Field(x), Value::Field(y)) => {
                let (x, y) = (
                    decode_field(x).expect("written data"),
                    decode_field(y).expect("read data"),
                );
                prop_assert_eq!(x.ctype(), y.ctype());
                prop_assert_eq!(x.len(), y.len());
                prop_assert_eq!(x.bytes(), y.bytes());
            }
            _ => prop_assert!(false, "value kinds differ for {:?}", la),
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn write_then_read_is_identity(specs in records(), binary in any::<bool>()) {
        let recs: Vec<Record> = specs.iter().map(|(e, d)| build(e, d)).collect();
        let bytes = write(&recs, binary);
        let items = read_all(&bytes[..], &text_codecs()).map_err(|e| TestCaseError::fail(format!("{e}\n{}", String::from_utf8_lossy(&bytes))))?;
        prop_assert_eq!(items.len(), recs.len() + 1);
        prop_assert!(matches!(items.last(), Some(StreamItem::Terminate)));
        let back: Vec<Record> = items.into_iter().filter_map(|i| match i { StreamItem::Data(r) => Some(r), StreamItem::Terminate => None }).collect();
        for (a, b) in recs.iter().zip(&back) {
            same(a, b)?;
        }
        // The canonical form survives reading and writing unchanged.
        prop_assert_eq!(write(&back, binary), bytes);
    }
}
