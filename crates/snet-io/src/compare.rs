//! Comparing record streams the way `records.md` defines equivalence.
//!
//! Two streams are equivalent when they hold the same multiset of records, a
//! record being its type plus its sets of (kind, label, value). [`canonical`]
//! turns a record into a string that is equal for equal records whatever the
//! entry order or label interning order; [`equivalent_multiset`] compares two
//! streams through it and explains any difference.
//!
//! Field values compare as text, as `records.md` says. What that text is
//! depends on the text codecs given and on how the streams were read:
//! - [`read_all`] parses the values of interfaces with a codec, as the
//!   runtime does, so they compare in the codec's canonical form
//!   ([`TextCodec::canonical`](crate::TextCodec::canonical); C4SNet: the
//!   writer's textual form, so `(int[1]) 5` equals `(int)5`, `(double)1.5`
//!   equals `(double)1.50000000000000000000000000000000e+00`, binary equals
//!   textual). This is equivalence of *values*.
//! - [`read_all_verbatim`] keeps values as written, so textual-mode values
//!   compare by their exact text (after XML unescaping): `(double)1.5`
//!   differs from its canonical form. The conformance corpus compares output
//!   and expected files this way, so an output written in anything but the
//!   canonical form fails. (Binary-mode values of an interface with a codec
//!   are still compared in canonical form: base64 is another encoding, not
//!   another text.)
//!
//! Fields of interfaces without a codec compare by interface, mode and
//! exact text.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::BufRead;

use snet_core::{Field, LabelKind, Record, TextField, Value};

use crate::codec::TextCodecs;
use crate::error::ReadError;
use crate::reader::{RecordReader, StreamItem};
use crate::writer::{self, NoTextForm};

/// Reads a whole stream (up to `terminate`, which is included, or the end),
/// parsing the values of interfaces with a codec as the runtime does.
pub fn read_all<R: BufRead>(input: R, codecs: &TextCodecs) -> Result<Vec<StreamItem>, ReadError> {
    collect(RecordReader::new(input).with_codecs(codecs.clone()))
}

/// Reads a whole stream keeping values as written (validated by their
/// codecs; see the module docs).
pub fn read_all_verbatim<R: BufRead>(
    input: R,
    codecs: &TextCodecs,
) -> Result<Vec<StreamItem>, ReadError> {
    collect(
        RecordReader::new(input)
            .with_codecs(codecs.clone())
            .verbatim_fields(),
    )
}

fn collect<R: BufRead>(mut reader: RecordReader<R>) -> Result<Vec<StreamItem>, ReadError> {
    let mut items = Vec::new();
    while let Some(item) = reader.next()? {
        items.push(item);
    }
    Ok(items)
}

/// The text a field value compares as (see the module docs).
fn field_canonical(f: &Field, codecs: &TextCodecs) -> String {
    let Some(v) = f.get() else {
        return format!("{f:?}");
    };
    let mut out = Vec::new();
    if let Some(t) = v.as_any().downcast_ref::<TextField>() {
        match codecs.get(t.interface()) {
            None => {
                let mode = if t.binary() { " binary" } else { "" };
                return format!("[{}{mode}]{}", t.interface(), t.text());
            }
            Some(_) if !t.binary() => return t.text().to_owned(),
            Some(c) => match c.parse(t.text(), true) {
                Ok(p) if p.get().is_some_and(|p| c.canonical(&**p, &mut out)) => {}
                _ => return t.text().to_owned(),
            },
        }
    } else {
        match codecs.get(v.interface()) {
            Some(c) if c.canonical(&**v, &mut out) => {}
            _ => return format!("[{}]{f:?}", v.interface()),
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// An order-independent text form of a record:
/// `data {field "A"="(int)5", tag "N"=3, btag "K"=1}` with entries sorted by
/// kind, name and value, and names and field values quoted with Rust escapes.
pub fn canonical(rec: &Record, codecs: &TextCodecs) -> String {
    let mut entries: Vec<(LabelKind, &str, String)> = rec
        .entries()
        .iter()
        .map(|(l, v)| {
            let value = match v {
                Value::Int(i) => i.to_string(),
                Value::Field(f) => format!("{:?}", field_canonical(f, codecs)),
            };
            (l.kind(), l.name(), value)
        })
        .collect();
    entries.sort();
    let mut s = String::from("data {");
    for (i, (kind, name, value)) in entries.iter().enumerate() {
        if i > 0 {
            s.push_str(", ");
        }
        let kind = match kind {
            LabelKind::Field => "field",
            LabelKind::Tag => "tag",
            LabelKind::BTag => "btag",
        };
        let _ = write!(s, "{kind} {name:?}={value}");
    }
    s.push('}');
    s
}

fn item_canonical(item: &StreamItem, codecs: &TextCodecs) -> String {
    match item {
        StreamItem::Data(r) => canonical(r, codecs),
        StreamItem::Terminate => "terminate".to_owned(),
    }
}

/// Two record streams that differ ([`equivalent_multiset`]): its text
/// lists the records only in one of them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StreamDiff(pub String);

impl std::fmt::Display for StreamDiff {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for StreamDiff {}

/// How many differing records a diff lists before summarising.
const SHOWN: usize = 20;

/// `Ok` when `a` and `b` hold the same multiset of items; otherwise a
/// readable account of the records only in `a` (missing from `b`) and only
/// in `b` (extra). Field values compare as the module docs say.
pub fn equivalent_multiset(
    a: &[StreamItem],
    b: &[StreamItem],
    codecs: &TextCodecs,
) -> Result<(), StreamDiff> {
    let mut counts: BTreeMap<String, i64> = BTreeMap::new();
    for item in a {
        *counts.entry(item_canonical(item, codecs)).or_default() += 1;
    }
    for item in b {
        *counts.entry(item_canonical(item, codecs)).or_default() -= 1;
    }
    let missing: Vec<(&String, i64)> = counts
        .iter()
        .filter(|(_, &n)| n > 0)
        .map(|(k, &n)| (k, n))
        .collect();
    let extra: Vec<(&String, i64)> = counts
        .iter()
        .filter(|(_, &n)| n < 0)
        .map(|(k, &n)| (k, -n))
        .collect();
    if missing.is_empty() && extra.is_empty() {
        return Ok(());
    }
    let mut msg = format!("record streams differ ({} vs {} items)\n", a.len(), b.len());
    for (title, list) in [
        ("only in the first (missing from the second)", &missing),
        ("only in the second (extra)", &extra),
    ] {
        if list.is_empty() {
            continue;
        }
        let total: i64 = list.iter().map(|(_, n)| n).sum();
        let _ = writeln!(msg, "{title}: {total} record(s)");
        for (k, n) in list.iter().take(SHOWN) {
            if *n > 1 {
                let _ = writeln!(msg, "  {n} x {k}");
            } else {
                let _ = writeln!(msg, "  {k}");
            }
        }
        if list.len() > SHOWN {
            let _ = writeln!(
                msg,
                "  ... and {} more distinct record(s)",
                list.len() - SHOWN
            );
        }
    }
    Err(StreamDiff(msg))
}

/// The text a field is written as in a textual stream (unescaped), or why
/// it has none.
pub fn field_string(f: &Field, codecs: &TextCodecs) -> Result<String, NoTextForm> {
    let mut out = Vec::new();
    writer::field_text(f, false, codecs, &mut out)?;
    Ok(String::from_utf8_lossy(&out).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::toy;

    fn items(s: &str) -> Vec<StreamItem> {
        read_all(s.as_bytes(), &toy::codecs()).expect("valid input")
    }

    fn same(a: &[StreamItem], b: &[StreamItem]) -> Result<(), StreamDiff> {
        equivalent_multiset(a, b, &toy::codecs())
    }

    #[test]
    fn order_and_notation_do_not_matter() {
        let a = items(
            "<record type='data'><tag label='x'>1</tag><field label='f' interface='Up'> abc</field><btag label='b'>2</btag></record>\
             <record type='data'><tag label='y'>2</tag></record><record type='terminate'/>",
        );
        let b = items(
            "<record><tag label='y'> 2 </tag></record>\
             <record type='data' mode='binary'><btag label='b'>2</btag><field label='f' interface='Up'>cba</field><tag label='x'>1</tag></record>\
             <record type='terminate'/>",
        );
        assert_eq!(same(&a, &b), Ok(()));
        assert_eq!(
            canonical(
                match &a[0] {
                    StreamItem::Data(r) => r,
                    StreamItem::Terminate => unreachable!(),
                },
                &toy::codecs()
            ),
            r#"data {field "f"="ABC", tag "x"=1, btag "b"=2}"#
        );
    }

    #[test]
    fn verbatim_reads_compare_the_written_text() {
        let short = "<record type='data'><field label='d' interface='Up'>abc</field></record>";
        let long = "<record type='data'><field label='d' interface='Up'>ABC</field></record>";
        let verbatim =
            |s: &str| read_all_verbatim(s.as_bytes(), &toy::codecs()).expect("valid input");
        let msg = same(&verbatim(short), &verbatim(long))
            .expect_err("different texts")
            .to_string();
        assert!(msg.contains(r#"field "d"="abc""#), "{msg}");
        assert_eq!(
            same(&verbatim(long), &items(short)),
            Ok(()),
            "parsed is the canonical text"
        );
        let binary =
            "<record type='data' mode='binary'><field label='d' interface='Up'>CBA</field></record>";
        assert_eq!(same(&verbatim(binary), &verbatim(long)), Ok(()));
        assert!(read_all_verbatim(
            "<record><field label='d' interface='Up'>a b</field></record>".as_bytes(),
            &toy::codecs()
        )
        .is_err());
    }

    #[test]
    fn without_a_codec_values_compare_by_interface_mode_and_text() {
        let none = TextCodecs::new();
        let read = |s: &str| read_all(s.as_bytes(), &none).expect("valid input");
        let textual = read("<record><field label='d' interface='Up'>abc</field></record>");
        let binary =
            read("<record mode='binary'><field label='d' interface='Up'>abc</field></record>");
        let msg = equivalent_multiset(&textual, &binary, &none)
            .expect_err("modes differ")
            .to_string();
        assert!(msg.contains(r#"field "d"="[Up]abc""#), "{msg}");
        assert!(msg.contains(r#"field "d"="[Up binary]abc""#), "{msg}");
        let StreamItem::Data(r) = &textual[0] else {
            panic!("data")
        };
        let f = r.field(snet_core::Label::field("d")).expect("field");
        assert_eq!(field_string(f, &none).as_deref(), Ok("abc"));
        let StreamItem::Data(r) =
            &items("<record><field label='d' interface='Up'>abc</field></record>")[0]
        else {
            panic!("data")
        };
        let f = r.field(snet_core::Label::field("d")).expect("field");
        assert_eq!(field_string(f, &toy::codecs()).as_deref(), Ok("ABC"));
        assert!(field_string(f, &none).is_err());
    }

    #[test]
    fn differences_are_listed() {
        let a = items("<record><tag label='x'>1</tag></record><record><tag label='x'>1</tag></record><record><tag label='z'>0</tag></record>");
        let b =
            items("<record><tag label='x'>1</tag></record><record><tag label='y'>1</tag></record>");
        let msg = same(&a, &b).expect_err("different").to_string();
        assert!(
            msg.contains("only in the first (missing from the second): 2 record(s)"),
            "{msg}"
        );
        assert!(msg.contains("  data {tag \"x\"=1}"), "{msg}");
        assert!(
            msg.contains("only in the second (extra): 1 record(s)\n  data {tag \"y\"=1}"),
            "{msg}"
        );
    }

    #[test]
    fn multiplicity_counts() {
        let a =
            items("<record><tag label='x'>1</tag></record><record><tag label='x'>1</tag></record>");
        let b = items("<record><tag label='x'>1</tag></record>");
        assert!(same(&a, &b).is_err());
        assert!(same(&a, &a).is_ok());
    }
}
