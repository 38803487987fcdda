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
//! A field whose interface has a [`TextCodec`](crate::TextCodec)
//! registered ([`RecordWriter::with_codecs`]) is written in the codec's
//! form, whether it is a value a box made or a value read from a stream
//! that no box touched (C4SNet: C's `printf` formats, `(double)0.5` read is
//! written `(double)5.00000000000000000000000000000000e-01`, as the
//! original runtime does); such a field held as text (a reader in
//! [`crate::RecordReader::verbatim_fields`] mode, or built with
//! [`Field::text`]) is parsed and written again, or written as it is if it
//! is not a valid value. Fields of other interfaces are written back
//! exactly as read (XML-escaped again); a value that is not text and has
//! no codec cannot be written (an `InvalidData` error). A
//! [`RecordWriter::binary`] writer emits `mode="binary"` records, the
//! codecs' binary forms. A text field of an interface without a codec read
//! in the other mode cannot be converted, so a record carrying one is
//! written in that field's mode (the others converted to it).
//!
//! The writer buffers internally (no `BufWriter` needed) and reuses its
//! buffers, so writing does not allocate in the steady state; call
//! [`RecordWriter::flush`] to push output out (dropping the writer flushes
//! too, ignoring errors).

use std::io::{self, Write};

use snet_core::{Field, LabelKind, Record, TextField, Value};

use crate::codec::TextCodecs;

const FLUSH_AT: usize = 32 * 1024;

/// Writes records as XML.
pub struct RecordWriter<W: Write> {
    out: Option<W>,
    buf: Vec<u8>,
    /// A field value before escaping.
    scratch: Vec<u8>,
    binary: bool,
    codecs: TextCodecs,
    /// Bytes buffered before they go to `out` (0: every record at once).
    flush_at: usize,
}

impl<W: Write> RecordWriter<W> {
    /// A writer of `mode="textual"` records.
    pub fn new(out: W) -> RecordWriter<W> {
        RecordWriter {
            out: Some(out),
            buf: Vec::with_capacity(FLUSH_AT + 4096),
            scratch: Vec::new(),
            binary: false,
            codecs: TextCodecs::default(),
            flush_at: FLUSH_AT,
        }
    }

    /// Hands every record to `out` as soon as it is written (one
    /// `write_all` per record), for an `out` that buffers and writes on its
    /// own schedule, such as [`crate::BackgroundWriter`].
    pub fn unbuffered(mut self) -> RecordWriter<W> {
        self.flush_at = 0;
        self
    }

    /// A writer of `mode="binary"` records.
    pub fn binary(out: W) -> RecordWriter<W> {
        let mut w = RecordWriter::new(out);
        w.binary = true;
        w
    }

    /// Writes the values of the interfaces `codecs` has a codec for in
    /// their codecs' forms.
    pub fn with_codecs(mut self, codecs: TextCodecs) -> RecordWriter<W> {
        self.codecs = codecs;
        self
    }

    /// The mode to write `rec` in: the writer's, unless the record carries
    /// a text field of an interface without a codec read in the other
    /// mode, which cannot be converted; then that field's (the other
    /// fields are converted to it).
    fn record_mode(&self, rec: &Record) -> bool {
        for (_, v) in rec.entries() {
            if let Value::Field(f) = v {
                if let Some(t) = f.downcast_ref::<TextField>() {
                    if t.binary() != self.binary && self.codecs.get(t.interface()).is_none() {
                        return t.binary();
                    }
                }
            }
        }
        self.binary
    }

    /// Writes one data record.
    ///
    /// Fails with `InvalidData` (writing nothing) if a field has no text
    /// form: it is not on this node, or its interface has no codec.
    pub fn write(&mut self, rec: &Record) -> io::Result<()> {
        let start = self.buf.len();
        let r = self.write_record(rec);
        if r.is_err() {
            self.buf.truncate(start);
        }
        r?;
        self.maybe_flush()
    }

    fn write_record(&mut self, rec: &Record) -> io::Result<()> {
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
                    escape_attr_into(f.interface().as_bytes(), &mut self.buf);
                    self.buf.extend_from_slice(b"\">");
                    self.scratch.clear();
                    field_text(f, binary, &self.codecs, &mut self.scratch)
                        .map_err(|e| no_text(label.name(), e))?;
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
                            field_text(f, binary, &self.codecs, &mut self.scratch)
                                .map_err(|e| no_text(label.name(), e))?;
                            escape_into(&self.scratch, &mut self.buf);
                        }
                    }
                    self.buf.extend_from_slice(close);
                }
            }
        }
        self.buf.extend_from_slice(b"</record>\n");
        Ok(())
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

    /// The underlying writer.
    pub fn get_ref(&self) -> &W {
        self.out.as_ref().expect("present until into_inner")
    }

    fn maybe_flush(&mut self) -> io::Result<()> {
        if self.buf.len() >= self.flush_at {
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

fn no_text(label: &str, why: NoTextForm) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!("cannot write field `{label}`: {why}"),
    )
}

/// Why a field has no text form ([`field_text`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NoTextForm {
    /// Its value is not on this node (the field, as `Debug` shows it).
    NotLocal(String),
    /// The text codec of its interface (named) does not know its value.
    UnknownValue(String),
    /// No text codec of its interface (named) is registered.
    NoCodec(String),
}

impl std::fmt::Display for NoTextForm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NoTextForm::NotLocal(field) => write!(f, "its value is not on this node ({field})"),
            NoTextForm::UnknownValue(i) => {
                write!(
                    f,
                    "the text codec of interface `{i}` does not know its value"
                )
            }
            NoTextForm::NoCodec(i) => write!(f, "no text codec of interface `{i}` is registered"),
        }
    }
}

impl std::error::Error for NoTextForm {}

/// Appends the (unescaped) text a field is written as: a value of an
/// interface with a codec in `codecs` in the codec's form for the mode
/// (text is parsed first; text that is not a valid value is kept), other
/// text as read. `Err` (with why) when the field has no text form: its
/// value is not on this node, or is not text and has no codec.
pub fn field_text(
    f: &Field,
    binary: bool,
    codecs: &TextCodecs,
    out: &mut Vec<u8>,
) -> Result<(), NoTextForm> {
    let Some(v) = f.get() else {
        return Err(NoTextForm::NotLocal(format!("{f:?}")));
    };
    if let Some(t) = v.as_any().downcast_ref::<TextField>() {
        if let Some(c) = codecs.get(t.interface()) {
            if let Ok(parsed) = c.parse(t.text(), t.binary()) {
                if let Some(p) = parsed.get() {
                    if c.format(&**p, binary, out) {
                        return Ok(());
                    }
                }
            }
        }
        out.extend_from_slice(t.text().as_bytes());
        return Ok(());
    }
    match codecs.get(v.interface()) {
        Some(c) if c.format(&**v, binary, out) => Ok(()),
        Some(_) => Err(NoTextForm::UnknownValue(v.interface().to_string())),
        None => Err(NoTextForm::NoCodec(v.interface().to_string())),
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

/// Whether a byte may need escaping: a control character, `&`, `<`, `>`
/// or `"` (tab and newline, which never do, are looked at again below).
#[inline]
fn suspect(b: u8) -> bool {
    b < 0x20 || b == b'&' || b == b'<' || b == b'>' || b == b'"'
}

fn escape_with(text: &[u8], attr: bool, out: &mut Vec<u8>) {
    // Most values need no escaping: find out in one pass without early
    // exit (the compiler vectorises it), then copy them whole.
    if !text.iter().fold(false, |any, &b| any | suspect(b)) {
        out.extend_from_slice(text);
        return;
    }
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
    use crate::codec::toy;
    use snet_core::Label;
    use std::sync::Arc;

    fn written(recs: &[Record], binary: bool) -> String {
        written_with(recs, binary, TextCodecs::new())
    }

    fn written_with(recs: &[Record], binary: bool, codecs: TextCodecs) -> String {
        let mut w = if binary {
            RecordWriter::binary(Vec::new())
        } else {
            RecordWriter::new(Vec::new())
        }
        .with_codecs(codecs);
        for r in recs {
            w.write(r).expect("in-memory write");
        }
        w.write_terminate().expect("in-memory write");
        String::from_utf8(w.into_inner().expect("in-memory flush")).expect("UTF-8 output")
    }

    fn word(w: &str) -> Value {
        Value::Field(Field::new(Arc::new(toy::Word(w.into()))))
    }

    #[test]
    fn writes_the_spec_format() {
        let mut r = Record::new();
        r.set_int(Label::tag("N"), 3);
        r.set(
            Label::field("B"),
            Value::Field(Field::text("C4SNet", false, "(int)0")),
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
    fn values_and_text_of_codec_interfaces_are_written_in_the_codec_form() {
        let mut r = Record::new();
        r.set(Label::field("w"), word("ABC"));
        r.set(
            Label::field("t"),
            Value::Field(Field::text("Up", false, " xyz")),
        );
        r.set(
            Label::field("bad"),
            Value::Field(Field::text("Up", false, "x1")),
        );
        r.set(
            Label::field("o"),
            Value::Field(Field::text("Other", false, " xyz")),
        );
        let t = written_with(std::slice::from_ref(&r), false, toy::codecs());
        assert!(t.contains("interface=\"Up\">ABC</field>"), "{t}");
        assert!(t.contains(">XYZ</field>"), "{t}");
        assert!(
            t.contains(">x1</field>"),
            "not a valid value: kept as it is: {t}"
        );
        assert!(
            t.contains("interface=\"Other\"> xyz</field>"),
            "other interfaces verbatim: {t}"
        );
        r.remove(Label::field("o"));
        let b = written_with(&[r], true, toy::codecs());
        assert!(b.contains("mode=\"binary\""), "{b}");
        assert!(
            b.contains(">CBA</field>") && b.contains(">ZYX</field>"),
            "{b}"
        );
        // Text read in binary mode is converted to textual.
        let mut r = Record::new();
        r.set(
            Label::field("t"),
            Value::Field(Field::text("Up", true, "cba")),
        );
        let t = written_with(&[r], false, toy::codecs());
        assert!(
            t.contains("mode=\"textual\"") && t.contains(">ABC</field>"),
            "{t}"
        );
    }

    #[test]
    fn foreign_binary_fields_keep_their_mode() {
        let mut r = Record::new();
        r.set(
            Label::field("sac"),
            Value::Field(Field::text("SAC", true, "opaque")),
        );
        r.set(Label::field("c"), word("ABC"));
        let t = written_with(&[r], false, toy::codecs());
        assert!(t.contains("mode=\"binary\""), "{t}");
        assert!(
            t.contains(">opaque</field>") && t.contains(">CBA</field>"),
            "{t}"
        );
    }

    #[test]
    fn escaping_copies_clean_text_whole_and_escapes_the_rest() {
        fn naive(text: &[u8], attr: bool) -> Vec<u8> {
            let mut out = Vec::new();
            for &b in text {
                match escape(b, attr) {
                    Some(rep) => out.extend_from_slice(rep),
                    None => out.push(b),
                }
            }
            out
        }
        let mut cases: Vec<Vec<u8>> = (0..=255u8).map(|b| vec![b'a', b, b'z']).collect();
        cases.push(b"(double[2])1.5,2.5".to_vec());
        cases.push(b"tab\tand\nnewline".to_vec());
        cases.push("\u{e9}<&>\"'\r".as_bytes().to_vec());
        cases.push(Vec::new());
        for c in &cases {
            for attr in [false, true] {
                let mut out = b"x".to_vec();
                escape_with(c, attr, &mut out);
                assert_eq!(out[1..], naive(c, attr)[..], "{c:?}");
            }
        }
    }

    #[test]
    fn values_without_a_text_form_are_errors() {
        let mut ok = Record::new();
        ok.set_int(Label::tag("n"), 1);
        let mut bad = Record::new();
        bad.set(Label::field("w"), word("ABC"));
        let mut w = RecordWriter::new(Vec::new());
        w.write(&ok).expect("fine");
        let e = w.write(&bad).expect_err("no codec for Up");
        assert_eq!(e.kind(), io::ErrorKind::InvalidData);
        assert_eq!(
            e.to_string(),
            "cannot write field `w`: no text codec of interface `Up` is registered"
        );
        w.write_terminate().expect("fine");
        let out = String::from_utf8(w.into_inner().expect("flush")).expect("UTF-8");
        assert_eq!(out.lines().count(), 2, "nothing of the bad record: {out}");
        assert!(!out.contains("field"), "{out}");
    }
}
