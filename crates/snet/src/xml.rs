//! The XML record format (`docs/records.md`): the streams `snet run` and
//! built programs read and write, for a Rust program.
//!
//! A thin layer over the runner's own reader and writer (`snet-io`) with
//! C4SNet's text codec, so a stream means the same here as there: a
//! field `(double[3])1.5,2.5,3.5` becomes a [`Field`](crate::Field) of
//! three `f64`, and a record written here is written as `snet run` writes
//! it.

use std::fmt;
use std::io::{self, BufRead, Write};

use snet_io::{ReadError, RecordReader, RecordWriter, StreamItem};

use crate::record::Record;

/// Reads records in the XML record format: an iterator of records that
/// ends at the `terminate` record or at the end of the input, or with the
/// first error.
///
/// ```
/// use snet::XmlReader;
///
/// let xml = r#"<?xml version="1.0" ?>
/// <record type="data"><tag label="n">10</tag><field label="v">(double[2])1.5,2.5</field></record>
/// <record type="terminate" />"#;
/// let records: Vec<_> = XmlReader::new(xml.as_bytes()).collect::<Result<_, _>>()?;
/// assert_eq!(records[0].tag("n"), Some(10));
/// assert_eq!(records[0].field("v").unwrap().as_slice::<f64>(), Some(&[1.5, 2.5][..]));
///
/// let err = XmlReader::with_name("<record><tag label=\"n\">x</tag></record>".as_bytes(), "in.xml")
///     .next()
///     .unwrap()
///     .unwrap_err();
/// assert!(err.to_string().starts_with("in.xml:1:9: "), "{err}");
/// # Ok::<(), snet::XmlError>(())
/// ```
pub struct XmlReader<R: BufRead> {
    reader: RecordReader<R>,
    done: bool,
}

impl<R: BufRead> fmt::Debug for XmlReader<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("XmlReader")
            .field("line", &self.reader.line())
            .field("done", &self.done)
            .finish_non_exhaustive()
    }
}

impl<R: BufRead> XmlReader<R> {
    /// A reader of `input`, named `input` in errors.
    pub fn new(input: R) -> XmlReader<R> {
        XmlReader::with_name(input, "input")
    }

    /// A reader of `input`, named `name` in errors (a file name, say).
    pub fn with_name(input: R, name: &str) -> XmlReader<R> {
        XmlReader {
            reader: RecordReader::with_name(input, name).with_codecs(c4snet::text_codecs()),
            done: false,
        }
    }
}

impl<R: BufRead> Iterator for XmlReader<R> {
    type Item = Result<Record, XmlError>;

    fn next(&mut self) -> Option<Result<Record, XmlError>> {
        if self.done {
            return None;
        }
        match self.reader.next() {
            Ok(Some(StreamItem::Data(r))) => Some(Ok(Record(r))),
            Ok(Some(StreamItem::Terminate)) | Ok(None) => {
                self.done = true;
                None
            }
            Err(e) => {
                self.done = true;
                Some(Err(XmlError(e)))
            }
        }
    }
}

/// Why a stream could not be read: `Display` gives the input's name,
/// line and column and what is wrong, as `snet run` reports it.
#[derive(Debug)]
pub struct XmlError(ReadError);

impl fmt::Display for XmlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

impl std::error::Error for XmlError {}

/// Writes records in the XML record format, as `snet run` writes them.
///
/// ```
/// use snet::{Field, Record, XmlWriter};
///
/// let mut w = XmlWriter::new(Vec::new());
/// w.write(&Record::new().with_tag("n", 3).with_field("v", Field::from_slice(&[1i32, 2])))?;
/// let text = String::from_utf8(w.finish()?).unwrap();
/// assert!(text.contains(r#"<tag label="n">3</tag>"#), "{text}");
/// assert!(text.contains(r#"<field label="v" interface="C4SNet">(int[2])1,2</field>"#), "{text}");
/// assert!(text.trim_end().ends_with(r#"<record type="terminate" />"#), "{text}");
/// # Ok::<(), std::io::Error>(())
/// ```
pub struct XmlWriter<W: Write> {
    writer: RecordWriter<W>,
}

impl<W: Write> fmt::Debug for XmlWriter<W> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("XmlWriter").finish_non_exhaustive()
    }
}

impl<W: Write> XmlWriter<W> {
    /// A writer to `out` (it buffers: no `BufWriter` needed).
    pub fn new(out: W) -> XmlWriter<W> {
        XmlWriter {
            writer: RecordWriter::new(out).with_codecs(c4snet::text_codecs()),
        }
    }

    /// Writes one data record.
    pub fn write(&mut self, record: &Record) -> io::Result<()> {
        self.writer.write(&record.0)
    }

    /// Writes the `terminate` record that ends a stream, flushes, and
    /// returns the output.
    pub fn finish(mut self) -> io::Result<W> {
        self.writer.write_terminate()?;
        self.writer.into_inner()
    }
}
