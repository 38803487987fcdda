//! Comparing record streams the way `records.md` defines equivalence.
//!
//! Two streams are equivalent when they hold the same multiset of records, a
//! record being its type plus its sets of (kind, label, value). [`canonical`]
//! turns a record into a string that is equal for equal records whatever the
//! entry order or label interning order; [`equivalent_multiset`] compares two
//! streams through it and explains any difference.
//!
//! Field values compare as text, as `records.md` says. What that text is
//! depends on how the streams were read:
//! - [`read_all`] decodes C4SNet values, as the runtime does, so they
//!   compare in the writer's canonical textual form: `(int[1]) 5` equals
//!   `(int)5`, `(double)1.5` equals `(double)1.50000000000000000000000000000000e+00`,
//!   binary equals textual. This is equivalence of *values*.
//! - [`read_all_verbatim`] keeps C4SNet values as written, so textual-mode
//!   values compare by their exact text (after XML unescaping): `(double)1.5`
//!   differs from its canonical form. The conformance corpus compares output
//!   and expected files this way, so an output written in anything but the
//!   canonical form fails. (Binary-mode values are still compared in
//!   canonical textual form: base64 is another encoding, not another text.)
//!
//! Fields of other interfaces compare by interface, mode and exact text.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::BufRead;

use snet_core::{FieldValue, LabelKind, Record, Value};

use crate::error::ReadError;
use crate::reader::{Item, RecordReader, DEFAULT_INTERFACE};
use crate::{ctext, writer};

/// Reads a whole stream (up to `terminate`, which is included, or the end),
/// decoding C4SNet values as the runtime does.
pub fn read_all<R: BufRead>(input: R) -> Result<Vec<Item>, ReadError> {
    collect(RecordReader::new(input))
}

/// Reads a whole stream keeping C4SNet values as written (see the module docs).
pub fn read_all_verbatim<R: BufRead>(input: R) -> Result<Vec<Item>, ReadError> {
    collect(RecordReader::new(input).verbatim_fields())
}

fn collect<R: BufRead>(mut reader: RecordReader<R>) -> Result<Vec<Item>, ReadError> {
    let mut items = Vec::new();
    while let Some(item) = reader.next()? {
        items.push(item);
    }
    Ok(items)
}

/// The text a field value compares as (see the module docs).
fn field_canonical(v: &FieldValue) -> String {
    let mut out = Vec::new();
    match v {
        FieldValue::Data(d) => ctext::format_textual(d, &mut out),
        FieldValue::Text {
            interface,
            binary: false,
            text,
        } if &**interface == DEFAULT_INTERFACE => out.extend_from_slice(text.as_bytes()),
        FieldValue::Text {
            interface,
            binary: true,
            text,
        } if &**interface == DEFAULT_INTERFACE => match ctext::parse_binary(text) {
            Ok(d) => ctext::format_textual(&d, &mut out),
            Err(_) => out.extend_from_slice(text.as_bytes()),
        },
        FieldValue::Text {
            interface,
            binary,
            text,
        } => {
            out.extend_from_slice(
                format!(
                    "[{interface}{}]{text}",
                    if *binary { " binary" } else { "" }
                )
                .as_bytes(),
            );
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// An order-independent text form of a record:
/// `data {field "A"="(int)5", tag "N"=3, btag "K"=1}` with entries sorted by
/// kind, name and value, and names and field values quoted with Rust escapes.
pub fn canonical(rec: &Record) -> String {
    let mut entries: Vec<(LabelKind, &str, String)> = rec
        .entries()
        .iter()
        .map(|(l, v)| {
            let value = match v {
                Value::Int(i) => i.to_string(),
                Value::Field(f) => format!("{:?}", field_canonical(f.value())),
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

fn item_canonical(item: &Item) -> String {
    match item {
        Item::Data(r) => canonical(r),
        Item::Terminate => "terminate".to_owned(),
    }
}

/// How many differing records a diff lists before summarising.
const SHOWN: usize = 20;

/// `Ok` when `a` and `b` hold the same multiset of items; otherwise a
/// readable account of the records only in `a` (missing from `b`) and only
/// in `b` (extra).
pub fn equivalent_multiset(a: &[Item], b: &[Item]) -> Result<(), String> {
    let mut counts: BTreeMap<String, i64> = BTreeMap::new();
    for item in a {
        *counts.entry(item_canonical(item)).or_default() += 1;
    }
    for item in b {
        *counts.entry(item_canonical(item)).or_default() -= 1;
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
    Err(msg)
}

/// The text a field is written as in a textual stream (unescaped).
pub fn field_string(f: &snet_core::Field) -> String {
    let mut out = Vec::new();
    writer::field_text(f, false, &mut out);
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn items(s: &str) -> Vec<Item> {
        read_all(s.as_bytes()).expect("valid input")
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
        assert_eq!(equivalent_multiset(&a, &b), Ok(()));
        let c = items("<record type='data'><field label='d'>(double)1.5</field></record>");
        let d = items(
            "<record type='data'><field label='d'>(double)1.50000000000000000000000000000000e+00</field></record>",
        );
        assert_eq!(equivalent_multiset(&c, &d), Ok(()));
    }

    #[test]
    fn verbatim_reads_compare_the_written_text() {
        let short = "<record type='data'><field label='d'>(double)1.5</field></record>";
        let long = "<record type='data'><field label='d'>(double)1.50000000000000000000000000000000e+00</field></record>";
        let verbatim = |s: &str| read_all_verbatim(s.as_bytes()).expect("valid input");
        let msg =
            equivalent_multiset(&verbatim(short), &verbatim(long)).expect_err("different texts");
        assert!(msg.contains(r#"field "d"="(double)1.5""#), "{msg}");
        assert_eq!(
            equivalent_multiset(&verbatim(long), &items(short)),
            Ok(()),
            "decoded is the canonical text"
        );
        let binary =
            "<record type='data' mode='binary'><field label='i'>(int)BQAAAA==</field></record>";
        let textual = "<record type='data'><field label='i'>(int)5</field></record>";
        assert_eq!(
            equivalent_multiset(&verbatim(binary), &verbatim(textual)),
            Ok(())
        );
        assert!(equivalent_multiset(
            &verbatim("<record><field label='i'>(int[1])5</field></record>"),
            &verbatim(textual)
        )
        .is_err());
    }

    #[test]
    fn differences_are_listed() {
        let a = items("<record><tag label='x'>1</tag></record><record><tag label='x'>1</tag></record><record><tag label='z'>0</tag></record>");
        let b =
            items("<record><tag label='x'>1</tag></record><record><tag label='y'>1</tag></record>");
        let msg = equivalent_multiset(&a, &b).expect_err("different");
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
        assert!(equivalent_multiset(&a, &b).is_err());
        assert!(equivalent_multiset(&a, &a).is_ok());
    }
}
