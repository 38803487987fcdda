//! C4SNet values in record streams: the record reader, writer and stream
//! comparison of `snet-io` with the C4SNet text codec registered, as a
//! program runs them. (`snet-io`'s own tests cover the same plumbing with
//! a toy codec; these pin the C4SNet forms.)

use c4snet::{data_field, data_of, encode_data, text_codecs, CData, CType};
use snet_core::{Field, Label, Record, TextField, Value};
use snet_io::{
    equivalent_multiset, read_all, read_all_verbatim, ReadError, ReadErrorKind, RecordReader,
    RecordWriter, StreamItem,
};

fn read(input: &str) -> Result<Vec<StreamItem>, ReadError> {
    let mut r = RecordReader::new(input.as_bytes()).with_codecs(text_codecs());
    let mut out = Vec::new();
    while let Some(item) = r.next()? {
        out.push(item);
    }
    Ok(out)
}

fn records(input: &str) -> Vec<Record> {
    read(input)
        .expect("valid input")
        .into_iter()
        .filter_map(|i| match i {
            StreamItem::Data(r) => Some(r),
            StreamItem::Terminate => None,
        })
        .collect()
}

fn error(input: &str) -> String {
    match read(input) {
        Ok(items) => panic!("expected an error, read {items:?}"),
        // Without the "(byte B)" suffix.
        Err(e) => e
            .to_string()
            .split(" (byte ")
            .next()
            .unwrap_or_default()
            .to_string(),
    }
}

/// A field kept as text: (interface, binary, text).
fn text_of(rec: &Record, name: &str) -> (String, bool, String) {
    let f = rec.field(Label::field(name)).expect("the field");
    let t = f
        .downcast_ref::<TextField>()
        .unwrap_or_else(|| panic!("field {name} was decoded"));
    (t.interface().into(), t.binary(), t.text().into())
}

/// A decoded C4SNet field, in its canonical textual form.
fn data_text(rec: &Record, name: &str) -> String {
    let f = rec.field(Label::field(name)).expect("the field");
    encode_data(data_of(f).unwrap_or_else(|| panic!("field {name} was kept as text")))
}

#[test]
fn reads_the_spec_example() {
    let input = r#"<?xml version="1.0" ?>
<record xmlns="snet-home.org" type="data" mode="textual" interface="C4SNet">
  <tag label="N">10</tag>
  <btag label="K">3</btag>
  <field label="A" interface="C4SNet">(int)5</field>
  <field label="V" interface="C4SNet">(double[3])1.5,2.5,3.5</field>
</record>
<record type="terminate" />
"#;
    let items = read(input).expect("valid");
    let StreamItem::Data(r) = &items[0] else {
        panic!("data first")
    };
    assert_eq!(data_text(r, "A"), "(int)5");
    assert_eq!(
        data_text(r, "V"),
        "(double[3])1.50000000000000000000000000000000e+00,2.50000000000000000000000000000000e+00,\
         3.50000000000000000000000000000000e+00"
    );
    // Kept as written when asked to.
    let mut v = RecordReader::new(input.as_bytes())
        .with_codecs(text_codecs())
        .verbatim_fields();
    let Ok(Some(StreamItem::Data(r))) = v.next() else {
        panic!("data first")
    };
    assert_eq!(text_of(&r, "A"), ("C4SNet".into(), false, "(int)5".into()));
    assert_eq!(text_of(&r, "V").2, "(double[3])1.5,2.5,3.5");
}

#[test]
fn c4snet_values_are_decoded_once_read() {
    let recs = records(
        "<record type='data'><field label='a'>(int)007</field><field label='b'>(int[3]) 1, 2 ,3</field>\
         <field label='c'>(float)0.5</field><field label='d'>(double)0.5</field><field label='e'>(int[1])-4</field>\
         <field label='f'>(unsigned char[2])x, </field><field label='g'>(long double[0])</field></record>",
    );
    assert_eq!(data_text(&recs[0], "a"), "(int)7");
    assert_eq!(data_text(&recs[0], "b"), "(int[3])1,2,3");
    assert_eq!(
        data_text(&recs[0], "c"),
        "(float)0.50000000000000000000000000000000"
    );
    assert_eq!(
        data_text(&recs[0], "d"),
        "(double)5.00000000000000000000000000000000e-01"
    );
    assert_eq!(data_text(&recs[0], "e"), "(int)-4");
    assert_eq!(data_text(&recs[0], "f"), "(unsigned char[2])x, ");
    assert_eq!(data_text(&recs[0], "g"), "(long double[0])");
}

#[test]
fn escapes_interfaces_and_modes() {
    let recs = records(
        "<record type=\"data\"><tag label=\"b\">+3</tag><field label=\"s\">(char[3])&lt;,&amp;,&#62;</field></record>\
         <record type='data'><field label='x'>(char[5])&quot;,&apos;,&#x41;,&#66;,<![CDATA[<]]></field>\
         <field label='y' interface='Other'>&lt;raw &amp; free&gt;</field></record>\
         <record type='data' interface='SAC' mode='binary'><field label='a'>anything</field>\
         <field label='b' interface='C4SNet'>(int[2])AQAAAAIAAAA=</field></record>",
    );
    assert_eq!(data_text(&recs[0], "s"), "(char[3])<,&,>");
    assert_eq!(data_text(&recs[1], "x"), "(char[5])\",',A,B,<");
    assert_eq!(
        text_of(&recs[1], "y"),
        ("Other".into(), false, "<raw & free>".into())
    );
    assert_eq!(
        text_of(&recs[2], "a"),
        ("SAC".into(), true, "anything".into())
    );
    assert_eq!(data_text(&recs[2], "b"), "(int[2])1,2");
}

#[test]
fn malformed_values_are_positioned_errors() {
    assert_eq!(
        error("<record type='data'><field label='A'>(bool)1</field></record>"),
        "input:1:21: field \"A\": unknown field type \"bool\""
    );
    assert_eq!(
        error("<record type='data'><field label='A'>(int[3])1,2</field></record>"),
        "input:1:21: field \"A\": wrong element count: the type announces 3, the value has 2"
    );
    assert_eq!(
        error("<record type='data'><field label='A'>(double[2])1,zz</field></record>"),
        "input:1:21: field \"A\": element 1 (\"zz\") is not a valid double"
    );
    let e = read("<record type='data'>\n<field label='A' mode='x'>(int)AQ==</field></record>")
        .expect_err("bad value");
    let ReadErrorKind::BadField { error, .. } = e.kind() else {
        panic!("{e}")
    };
    assert!(error.downcast_ref::<c4snet::FieldError>().is_some());
    assert_eq!(e.position().line, 2);
    // The verbatim reader checks values too.
    let mut v = RecordReader::new(
        "<record type='data'><field label='A'>(int)x</field></record>".as_bytes(),
    )
    .with_codecs(text_codecs())
    .verbatim_fields();
    assert!(v.next().is_err());
}

fn written(recs: &[Record], binary: bool) -> String {
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
    String::from_utf8(w.into_inner().expect("in-memory flush")).expect("UTF-8 output")
}

#[test]
fn writes_the_spec_format() {
    let mut r = Record::new();
    r.set_int(Label::tag("N"), 3);
    r.set(
        Label::field("B"),
        Value::Field(data_field(CData::from_bytes(
            CType::Int,
            1,
            &0i32.to_ne_bytes(),
        ))),
    );
    r.set_int(Label::btag("K"), -1);
    assert_eq!(
        written(&[r], false),
        "<?xml version=\"1.0\" ?><record xmlns=\"snet-home.org\" type=\"data\" mode=\"textual\" >\
         <field label=\"B\" interface=\"C4SNet\">(int)0</field><tag label=\"N\">3</tag><btag label=\"K\">-1</btag></record>\n\
         <record type=\"terminate\" />\n"
    );
}

#[test]
fn c4snet_text_fields_are_written_canonically() {
    let mut r = Record::new();
    r.set(
        Label::field("d"),
        Value::Field(Field::text("C4SNet", false, "(double)0.5")),
    );
    r.set(
        Label::field("i"),
        Value::Field(Field::text("C4SNet", false, "(int[3]) 1, 2 ,03")),
    );
    r.set(
        Label::field("bad"),
        Value::Field(Field::text("C4SNet", false, "(int)x")),
    );
    r.set(
        Label::field("o"),
        Value::Field(Field::text("Other", false, "(double)0.5")),
    );
    r.set(
        Label::field("s"),
        Value::Field(Field::text("C4SNet", false, "(char[4])<,&,>,\u{1}")),
    );
    let t = written(&[r], false);
    assert!(
        t.contains(">(double)5.00000000000000000000000000000000e-01</field>"),
        "{t}"
    );
    assert!(t.contains(">(int[3])1,2,3</field>"), "{t}");
    assert!(
        t.contains(">(int)x</field>"),
        "not a valid value: kept as it is: {t}"
    );
    assert!(
        t.contains("interface=\"Other\">(double)0.5</field>"),
        "other interfaces verbatim: {t}"
    );
    assert!(
        t.contains("<field label=\"s\" interface=\"C4SNet\">(char[4])&lt;,&amp;,&gt;,&#1;</field>"),
        "{t}"
    );
}

#[test]
fn modes_are_converted() {
    let mut r = Record::new();
    r.set(
        Label::field("a"),
        Value::Field(Field::text("C4SNet", true, "(int[2])AQAAAAIAAAA=")),
    );
    r.set(
        Label::field("b"),
        Value::Field(Field::text("C4SNet", false, "(short)-2")),
    );
    let t = written(std::slice::from_ref(&r), false);
    assert!(t.contains(">(int[2])1,2</field>"), "{t}");
    let b = written(&[r], true);
    assert!(b.contains("mode=\"binary\""), "{b}");
    assert!(b.contains(">(int[2])AQAAAAIAAAA=</field>"), "{b}");
    assert!(b.contains(">(short)/v8=</field>"), "{b}");
}

#[test]
fn foreign_binary_fields_keep_their_mode() {
    let mut r = Record::new();
    r.set(
        Label::field("sac"),
        Value::Field(Field::text("SAC", true, "opaque")),
    );
    r.set(
        Label::field("c"),
        Value::Field(Field::text("C4SNet", false, "(int)1")),
    );
    let t = written(&[r], false);
    assert!(t.contains("mode=\"binary\""), "{t}");
    assert!(
        t.contains(">opaque</field>") && t.contains(">(int)AQAAAA==</field>"),
        "{t}"
    );
}

#[test]
fn without_the_codec_c4snet_data_cannot_be_written() {
    let mut r = Record::new();
    r.set(
        Label::field("B"),
        Value::Field(data_field(CData::zeroed(CType::Int, 1))),
    );
    let e = RecordWriter::new(Vec::new())
        .write(&r)
        .expect_err("no text codec");
    assert!(e.to_string().contains("`C4SNet`"), "{e}");
}

fn items(s: &str) -> Vec<StreamItem> {
    read_all(s.as_bytes(), &text_codecs()).expect("valid input")
}

fn same(a: &[StreamItem], b: &[StreamItem]) -> Result<(), String> {
    equivalent_multiset(a, b, &text_codecs()).map_err(|d| d.to_string())
}

#[test]
fn order_and_notation_do_not_matter() {
    let a = items(
        "<record type='data'><tag label='x'>1</tag><field label='f'>(int[1]) 5</field><btag label='b'>2</btag></record>\
         <record type='data'><tag label='y'>2</tag></record><record type='terminate'/>",
    );
    let b = items(
        "<record><tag label='y'> 2 </tag></record>\
         <record type='data' mode='binary'><btag label='b'>2</btag><field label='f'>(int)BQAAAA==</field><tag label='x'>1</tag></record>\
         <record type='terminate'/>",
    );
    assert_eq!(same(&a, &b), Ok(()));
    let c = items("<record type='data'><field label='d'>(double)1.5</field></record>");
    let d = items(
        "<record type='data'><field label='d'>(double)1.50000000000000000000000000000000e+00</field></record>",
    );
    assert_eq!(same(&c, &d), Ok(()));
}

#[test]
fn verbatim_reads_compare_the_written_text() {
    let short = "<record type='data'><field label='d'>(double)1.5</field></record>";
    let long = "<record type='data'><field label='d'>(double)1.50000000000000000000000000000000e+00</field></record>";
    let verbatim = |s: &str| read_all_verbatim(s.as_bytes(), &text_codecs()).expect("valid input");
    let msg = same(&verbatim(short), &verbatim(long)).expect_err("different texts");
    assert!(msg.contains(r#"field "d"="(double)1.5""#), "{msg}");
    assert_eq!(
        same(&verbatim(long), &items(short)),
        Ok(()),
        "decoded is the canonical text"
    );
    let binary =
        "<record type='data' mode='binary'><field label='i'>(int)BQAAAA==</field></record>";
    let textual = "<record type='data'><field label='i'>(int)5</field></record>";
    assert_eq!(same(&verbatim(binary), &verbatim(textual)), Ok(()));
    assert!(same(
        &verbatim("<record><field label='i'>(int[1])5</field></record>"),
        &verbatim(textual)
    )
    .is_err());
}
