//! The record writer.
//!
//! Output is exactly what `records.md` shows, one record a line:
//!
//! ```text
//! <?xml version="1.0" ?><record xmlns="snet-home.org" type="data" mode="textual" ><field label="B" interface="C4SNet">(int)0</field><tag label="N">3</tag></record>
//! <record type="terminate" />
//! ```
//!
//! Entries come in record order: fields, then tags, then binding tags.
//! Every C4SNet field is written in the canonical form of [`crate::ctext`]
//! (C's `printf` formats: `(double)0.5` read is written
//! `(double)5.00000000000000000000000000000000e-01`), whether it is data a
//! box made or a value read from a stream that no box touched, as the
//! original runtime does; a C4SNet field held as text (a reader in
//! [`crate::RecordReader::verbatim_fields`] mode, or built with
//! [`Field::text`]) is decoded and re-encoded, or written as it is if it is
//! not a valid value. Fields of other interfaces are written back exactly
//! as read (XML-escaped again). A [`RecordWriter::binary`] writer emits
//! `mode="binary"` records with base64 field values instead. A field of
//! another interface read in the other mode cannot be converted, so a
//! record carrying one is written in that field's mode (its C4SNet fields
//! converted to it).
//!
//! The writer buffers internally (no `BufWriter` needed) and reuses its
//! buffers, so writing does not allocate in the steady state; call
//! [`RecordWriter::flush`] to push output out (dropping the writer flushes
//! too, ignoring errors).

use std::io::{self, Write};

use snet_core::{CData, Field, FieldValue, LabelKind, Record, Value};

use crate::ctext;
use crate::reader::DEFAULT_INTERFACE;

const FLUSH_AT: usize = 32 * 1024;

/// Writes records as XML.
pub struct RecordWriter<W: Write> {
    out: Option<W>,
    buf: Vec<u8>,
    /// A field value before escaping.
    scratch: Vec<u8>,
    binary: bool,
}

impl<W: Write> RecordWriter<W> {
    /// A writer of `mode="textual"` records.
    pub fn new(out: W) -> RecordWriter<W> {
        RecordWriter {
            out: Some(out),
            buf: Vec::with_capacity(FLUSH_AT + 4096),
            scratch: Vec::new(),
            binary: false,
        }
    }

    /// A writer of `mode="binary"` records.
    pub fn binary(out: W) -> RecordWriter<W> {
        let mut w = RecordWriter::new(out);
        w.binary = true;
        w
    }

    /// The mode to write `rec` in: the writer's, unless the record carries
    /// a field of another interface read in the other mode, which cannot be
    /// converted; then that field's (C4SNet fields are converted to it).
    fn record_mode(&self, rec: &Record) -> bool {
        for (_, v) in rec.entries() {
            if let Value::Field(f) = v {
                if let FieldValue::Text {
                    interface, binary, ..
                } = f.value()
                {
                    if *binary != self.binary && &**interface != DEFAULT_INTERFACE {
                        return *binary;
                    }
                }
            }
        }
        self.binary
    }

    /// Writes one data record.
    pub fn write(&mut self, rec: &Record) -> io::Result<()> {
        let binary = self.record_mode(rec);
        self.buf.extend_from_slice(if binary {
            b"<?xml version=\"1.0\" ?><record xmlns=\"snet-home.org\" type=\"data\" mode=\"binary\" >"
        } else {
            b"<?xml version=\"1.0\" ?><record xmlns=\"snet-home.org\" type=\"data\" mode=\"textual\" >"
        });
        let mut num = itoa::Buffer::new();
        for (label, value) in rec.entries() {
            match (label.kind(), value) {
                (LabelKind::Field, Value::Field(f)) => {
                    self.buf.extend_from_slice(b"<field label=\"");
                    escape_attr_into(label.name().as_bytes(), &mut self.buf);
                    self.buf.extend_from_slice(b"\" interface=\"");
                    let interface = match f.value() {
                        FieldValue::Text { interface, .. } => interface,
                        FieldValue::Data(_) => DEFAULT_INTERFACE,
                    };
                    escape_attr_into(interface.as_bytes(), &mut self.buf);
                    self.buf.extend_from_slice(b"\">");
                    self.scratch.clear();
                    field_text(f, binary, &mut self.scratch);
                    escape_into(&self.scratch, &mut self.buf);
                    self.buf.extend_from_slice(b"</field>");
                }
                (kind, value) => {
                    let (open, close): (&[u8], &[u8]) = match kind {
                        LabelKind::BTag => (b"<btag label=\"", b"</btag>"),
                        _ => (b"<tag label=\"", b"</tag>"),
                    };
                    self.buf.extend_from_slice(open);
                    escape_attr_into(label.name().as_bytes(), &mut self.buf);
                    self.buf.extend_from_slice(b"\">");
                    match value {
                        Value::Int(v) => self.buf.extend_from_slice(num.format(*v).as_bytes()),
                        // A field value under a tag label: not produced by
                        // the runtime; write its text rather than fail.
                        Value::Field(f) => {
                            self.scratch.clear();
                            field_text(f, binary, &mut self.scratch);
                            escape_into(&self.scratch, &mut self.buf);
                        }
                    }
                    self.buf.extend_from_slice(close);
                }
            }
        }
        self.buf.extend_from_slice(b"</record>\n");
        self.maybe_flush()
    }

    /// Writes the `terminate` record that ends a stream.
    pub fn write_terminate(&mut self) -> io::Result<()> {
        self.buf
            .extend_from_slice(b"<record type=\"terminate\" />\n");
        self.maybe_flush()
    }

    /// Writes out everything buffered and flushes the underlying writer.
    pub fn flush(&mut self) -> io::Result<()> {
        self.drain()?;
        match self.out.as_mut() {
            Some(out) => out.flush(),
            None => Ok(()),
        }
    }

    /// Flushes and returns the underlying writer.
    pub fn into_inner(mut self) -> io::Result<W> {
        self.flush()?;
        Ok(self.out.take().expect("present until into_inner"))
    }

    pub fn get_ref(&self) -> &W {
        self.out.as_ref().expect("present until into_inner")
    }

    fn maybe_flush(&mut self) -> io::Result<()> {
        if self.buf.len() >= FLUSH_AT {
            self.drain()?;
        }
        Ok(())
    }

    fn drain(&mut self) -> io::Result<()> {
        if let Some(out) = self.out.as_mut() {
            if !self.buf.is_empty() {
                let r = out.write_all(&self.buf);
                self.buf.clear();
                r?;
            }
        }
        Ok(())
    }
}

impl<W: Write> Drop for RecordWriter<W> {
    fn drop(&mut self) {
        let _ = self.flush();
    }
}

/// Appends the (unescaped) text a field is written as: C4SNet fields in
/// the canonical form of the mode (text is decoded first; text that is not
/// a valid value is kept), other fields as read.
pub fn field_text(f: &Field, binary: bool, out: &mut Vec<u8>) {
    match f.value() {
        FieldValue::Data(d) => format_data(d, binary, out),
        FieldValue::Text {
            interface,
            binary: b,
            text,
        } => {
            if &**interface == DEFAULT_INTERFACE {
                let decoded = if *b {
                    ctext::parse_binary(text)
                } else {
                    ctext::parse_textual(text)
                };
                if let Ok(d) = decoded {
                    return format_data(&d, binary, out);
                }
            }
            out.extend_from_slice(text.as_bytes());
        }
    }
}

fn format_data(d: &CData, binary: bool, out: &mut Vec<u8>) {
    if binary {
        ctext::format_binary(d, out)
    } else {
        ctext::format_textual(d, out)
    }
}

/// What a byte needs in XML text (`attr`: or in a double-quoted attribute).
fn escape(b: u8, attr: bool) -> Option<&'static [u8]> {
    match b {
        b'&' => Some(b"&amp;"),
        b'<' => Some(b"&lt;"),
        b'>' => Some(b"&gt;"),
        b'"' if attr => Some(b"&quot;"),
        // Control characters (and CR, which XML parsers normalise away) as
        // character references so that they survive; tab and newline stay.
        b'\t' | b'\n' => None,
        0..=0x1f => Some(CONTROL_REFS[b as usize]),
        _ => None,
    }
}

const CONTROL_REFS: [&[u8]; 32] = [
    b"&#0;", b"&#1;", b"&#2;", b"&#3;", b"&#4;", b"&#5;", b"&#6;", b"&#7;", b"&#8;", b"&#9;",
    b"&#10;", b"&#11;", b"&#12;", b"&#13;", b"&#14;", b"&#15;", b"&#16;", b"&#17;", b"&#18;",
    b"&#19;", b"&#20;", b"&#21;", b"&#22;", b"&#23;", b"&#24;", b"&#25;", b"&#26;", b"&#27;",
    b"&#28;", b"&#29;", b"&#30;", b"&#31;",
];

/// Appends `text` to `out`, escaped for XML element text.
pub fn escape_into(text: &[u8], out: &mut Vec<u8>) {
    escape_with(text, false, out)
}

/// Appends `text` to `out`, escaped for a double-quoted XML attribute.
pub fn escape_attr_into(text: &[u8], out: &mut Vec<u8>) {
    escape_with(text, true, out)
}

fn escape_with(text: &[u8], attr: bool, out: &mut Vec<u8>) {
    let mut start = 0;
    for (i, &b) in text.iter().enumerate() {
        if let Some(rep) = escape(b, attr) {
            out.extend_from_slice(&text[start..i]);
            out.extend_from_slice(rep);
            start = i + 1;
        }
    }
    out.extend_from_slice(&text[start..]);
}

#[cfg(test)]
mod tests {
    use super::*;
    use snet_core::{CType, Label};

    fn written(recs: &[Record], binary: bool) -> String {
        let mut w = if binary {
            RecordWriter::binary(Vec::new())
        } else {
            RecordWriter::new(Vec::new())
        };
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
            Value::Field(Field::data(CData::from_bytes(
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
    fn text_fields_are_written_as_read_and_escaped() {
        let mut r = Record::new();
        r.set(
            Label::field("s"),
            Value::Field(Field::text("C4SNet", false, "(char[4])<,&,>,\u{1}")),
        );
        r.set(
            Label::field("o"),
            Value::Field(Field::text("O\"&", false, " a\"b\r\n")),
        );
        let out = written(&[r], false);
        assert!(
            out.contains(
                "<field label=\"s\" interface=\"C4SNet\">(char[4])&lt;,&amp;,&gt;,&#1;</field>"
            ),
            "{out}"
        );
        assert!(
            out.contains("<field label=\"o\" interface=\"O&quot;&amp;\"> a\"b&#13;\n</field>"),
            "{out}"
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
}
