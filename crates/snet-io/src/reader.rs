//! The streaming record reader.
//!
//! [`RecordReader`] pulls XML events from quick-xml one at a time and builds
//! one [`Record`] per `<record>` element, so memory stays bounded by the
//! largest single element whatever the length of the stream. Everything
//! `records.md` allows is accepted: repeated `<?xml ...?>` prologs, comments,
//! processing instructions and a document type between records, CDATA and
//! character references in values, attributes in any order and quotes,
//! `xmlns` and unknown attributes (ignored). A record without `type` is a
//! data record.
//!
//! A field value of an interface whose [`TextCodec`](crate::TextCodec) is
//! registered ([`RecordReader::with_codecs`]) is parsed on the way in into
//! the interface's own value (C4SNet: a typed array, parsed once), so a
//! malformed value is reported here with its position rather than later
//! inside a box, boxes receive the value without another parse, and the
//! writer prints it in the codec's canonical form whether or not a box
//! touched it. Fields of other interfaces are kept as the text they were
//! read as ([`Field::text`]). [`RecordReader::verbatim_fields`] keeps every
//! value as text (still validated by its codec), for tools that compare
//! streams as written.
//!
//! After an error or a `terminate` record the reader is finished: `next`
//! returns `Ok(None)` from then on.
//!
//! Between records (once quick-xml has read the first one, and so past any
//! byte order mark), the reader first offers the buffered input to the fast
//! scanner ([`crate::fast`]), which takes a whole record of the common
//! shapes or nothing; what it takes is consumed through quick-xml's
//! stream, so offsets and line numbers stay right for the fallback.

use std::io::BufRead;
use std::sync::Arc;

use quick_xml::events::{BytesStart, Event};
use snet_core::{Field, Label, LabelKind, Record, Value};

use crate::codec::TextCodecs;
use crate::error::{ReadError, ReadErrorKind};
use crate::position::{LineCounter, Position};

/// One element of a record stream.
#[derive(Clone, Debug)]
pub enum StreamItem {
    /// A `type="data"` record.
    Data(Record),
    /// The `type="terminate"` record that ends the input.
    Terminate,
}

/// The interface fields have unless the record or field names another.
pub const DEFAULT_INTERFACE: &str = "C4SNet";

/// Reads records one at a time from XML input.
pub struct RecordReader<R: BufRead> {
    p: Parser<R>,
    /// quick-xml's event buffer, reused across events.
    buf: Vec<u8>,
    done: bool,
    /// Try the fast scanner ([`crate::fast`]) before quick-xml.
    fast: bool,
    /// quick-xml stands between items with nothing of the next one read
    /// (it has returned a data record; before that it may still have to
    /// look for a byte order mark), so the fast scanner may take bytes.
    between: bool,
    /// Items the fast scanner read.
    fast_items: u64,
}

/// The reader's state apart from the event buffer, so that an event
/// borrowing the buffer and the parser can be used together.
struct Parser<R: BufRead> {
    xml: quick_xml::Reader<LineCounter<R>>,
    source_name: Arc<str>,
    /// The current element's text, unescaped.
    text: Vec<u8>,
    /// Scratch for unescaping an attribute value.
    attr: Vec<u8>,
    /// The current record's `interface`.
    interface: String,
    /// The current field's `interface`, when it has one.
    field_interface: String,
    /// Recently seen labels, to skip the global interner on the hot path.
    labels: LabelCache,
    /// The fast scanner's remembered start tags.
    memo: crate::fast::Memo,
    /// The text codecs of the interfaces whose values are parsed.
    codecs: TextCodecs,
    /// Keep values as text instead of parsing them.
    verbatim: bool,
}

/// A tiny most-recently-added cache of labels by kind and name. Streams use
/// few distinct labels; a linear scan over short byte strings beats the
/// interner's lock and hash.
#[derive(Default)]
pub(crate) struct LabelCache {
    entries: Vec<(LabelKind, Box<[u8]>, Label)>,
    next: usize,
}

const LABEL_CACHE: usize = 16;

impl LabelCache {
    pub(crate) fn get(&mut self, kind: LabelKind, name: &str) -> Label {
        if let Some((_, _, l)) = self
            .entries
            .iter()
            .find(|(k, n, _)| *k == kind && **n == *name.as_bytes())
        {
            return *l;
        }
        let label = Label::new(kind, name);
        let entry = (kind, Box::from(name.as_bytes()), label);
        if self.entries.len() < LABEL_CACHE {
            self.entries.push(entry);
        } else {
            self.entries[self.next] = entry;
            self.next = (self.next + 1) % LABEL_CACHE;
        }
        label
    }
}

/// The attributes of a `<record>` start tag.
struct RecordHead {
    terminate: bool,
    binary: bool,
}

impl<R: BufRead> RecordReader<R> {
    /// A reader whose errors name the input `input`.
    pub fn new(input: R) -> RecordReader<R> {
        RecordReader::with_name(input, "input")
    }

    /// A reader whose errors name the input `name` (typically a file name).
    pub fn with_name(input: R, name: &str) -> RecordReader<R> {
        let mut xml = quick_xml::Reader::from_reader(LineCounter::new(input));
        let config = xml.config_mut();
        config.trim_text(false);
        config.check_end_names = true;
        config.expand_empty_elements = false;
        RecordReader {
            p: Parser {
                xml,
                source_name: Arc::from(name),
                text: Vec::new(),
                attr: Vec::new(),
                interface: String::new(),
                field_interface: String::new(),
                labels: LabelCache::default(),
                memo: crate::fast::Memo::default(),
                codecs: TextCodecs::default(),
                verbatim: false,
            },
            buf: Vec::new(),
            done: false,
            fast: true,
            between: false,
            fast_items: 0,
        }
    }

    /// Reads everything through quick-xml, never the fast scanner: for
    /// testing that both read the same.
    #[doc(hidden)]
    pub fn without_fast_path(mut self) -> RecordReader<R> {
        self.fast = false;
        self
    }

    /// How many items the fast scanner read (the others went through
    /// quick-xml).
    #[doc(hidden)]
    pub fn fast_items(&self) -> u64 {
        self.fast_items
    }

    /// The next item by the fast scanner, if it can take it from the
    /// buffered input (then consumed); `None` having consumed nothing.
    #[inline]
    fn read_fast(&mut self) -> Option<StreamItem> {
        let p = &mut self.p;
        let mut stream = p.xml.stream();
        let buf = stream.fill_buf().ok()?;
        let mut cx = crate::fast::ScanCtx {
            labels: &mut p.labels,
            memo: &mut p.memo,
            codecs: &p.codecs,
            verbatim: p.verbatim,
        };
        let (item, n) = crate::fast::scan(buf, &mut cx)?;
        // Through quick-xml's stream: its offset (error positions) and the
        // line counter follow.
        stream.consume(n);
        Some(item)
    }

    /// Parses the values of the interfaces `codecs` has a codec for (the
    /// fields of other interfaces are kept as text).
    pub fn with_codecs(mut self, codecs: TextCodecs) -> RecordReader<R> {
        self.p.codecs = codecs;
        self
    }

    /// Keeps field values as the text they were read as (validated by
    /// their codecs, not parsed): for comparing streams as written, not
    /// for running.
    pub fn verbatim_fields(mut self) -> RecordReader<R> {
        self.p.verbatim = true;
        self
    }

    /// The next record, `Ok(None)` at the end of the input or after
    /// `terminate`.
    #[allow(clippy::should_implement_trait)] // fallible; see `iter` for an Iterator
    pub fn next(&mut self) -> Result<Option<StreamItem>, ReadError> {
        if self.done {
            return Ok(None);
        }
        if self.fast && self.between {
            if let Some(item) = self.take_fast() {
                return Ok(Some(item));
            }
        }
        let r = self.read_item();
        if matches!(r, Ok(Some(StreamItem::Data(_)))) {
            self.between = true;
        } else {
            self.done = true;
        }
        r
    }

    /// The next item if it can be had from input already buffered, without
    /// reading (and so without waiting for the input's producer); `None`
    /// when that is not known to be possible: then [`Self::next`] takes it.
    ///
    /// Lets a consumer gather the records that have already arrived and
    /// hand them on together, without holding back one it has while the
    /// next is still being written.
    pub fn next_buffered(&mut self) -> Option<StreamItem> {
        if self.done || !self.fast || !self.between || !self.p.xml.get_ref().has_buffered() {
            return None;
        }
        self.take_fast()
    }

    /// [`Self::read_fast`], counted, and the end noted.
    fn take_fast(&mut self) -> Option<StreamItem> {
        let item = self.read_fast()?;
        self.fast_items += 1;
        if matches!(item, StreamItem::Terminate) {
            self.done = true;
        }
        Some(item)
    }

    /// The remaining items as an iterator of results (ends after the first error).
    pub fn iter(&mut self) -> impl Iterator<Item = Result<StreamItem, ReadError>> + '_ {
        std::iter::from_fn(move || self.next().transpose())
    }

    /// The line of the last byte read so far: for a record just returned,
    /// the line it ended on (a line break read after it belongs to the
    /// same line). 1 before anything was read.
    #[inline]
    pub fn line(&self) -> u64 {
        self.p.xml.get_ref().last_line()
    }

    /// Position just after what has been read so far.
    pub fn position(&self) -> Position {
        self.p.pos(self.p.xml.buffer_position())
    }

    fn read_item(&mut self) -> Result<Option<StreamItem>, ReadError> {
        loop {
            let start = self.p.xml.buffer_position();
            self.buf.clear();
            let ev = match self.p.xml.read_event_into(&mut self.buf) {
                Ok(ev) => ev,
                Err(e) => return Err(self.p.xml_error(e)),
            };
            match ev {
                Event::Decl(_) | Event::PI(_) | Event::DocType(_) | Event::Comment(_) => {}
                Event::Text(t) => self.p.expect_blank(&t, start)?,
                Event::CData(t) => self.p.expect_blank(&t, start)?,
                Event::GeneralRef(r) => return Err(self.p.unexpected_ref(&r, start)),
                Event::Start(ref s) | Event::Empty(ref s) => {
                    let empty = matches!(ev, Event::Empty(_));
                    let pos = self.p.pos(start);
                    if s.name().as_ref() != b"record" {
                        return Err(self.p.err(
                            ReadErrorKind::UnknownElement {
                                name: lossy(s.name().as_ref()),
                            },
                            pos,
                        ));
                    }
                    let head = self.p.record_head(s, pos)?;
                    if head.terminate {
                        return Ok(Some(StreamItem::Terminate));
                    }
                    if empty {
                        return Ok(Some(StreamItem::Data(Record::new())));
                    }
                    return self
                        .p
                        .record_body(&mut self.buf, head, pos)
                        .map(|r| Some(StreamItem::Data(r)));
                }
                Event::End(e) => {
                    let kind = ReadErrorKind::Syntax {
                        message: format!("unmatched </{}>", lossy(e.name().as_ref())),
                    };
                    return Err(self.p.err(kind, self.p.pos(start)));
                }
                Event::Eof => return Ok(None),
            }
        }
    }
}

/// Which child element of a record.
#[derive(Copy, Clone)]
enum Child {
    Tag,
    BTag,
    Field,
}

impl Child {
    fn from_name(name: &[u8]) -> Option<Child> {
        match name {
            b"tag" => Some(Child::Tag),
            b"btag" => Some(Child::BTag),
            b"field" => Some(Child::Field),
            _ => None,
        }
    }

    fn kind(self) -> LabelKind {
        match self {
            Child::Tag => LabelKind::Tag,
            Child::BTag => LabelKind::BTag,
            Child::Field => LabelKind::Field,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Child::Tag => "tag",
            Child::BTag => "btag",
            Child::Field => "field",
        }
    }
}

/// `b` as text for an error message: lossy UTF-8, shortened, with control
/// characters and quotes escaped.
fn lossy(b: &[u8]) -> String {
    crate::error::shown(&String::from_utf8_lossy(b))
}

fn is_blank(b: &[u8]) -> bool {
    b.iter().all(|c| matches!(c, b' ' | b'\t' | b'\r' | b'\n'))
}

/// The character an entity or character reference (without `&` `;`) stands for.
fn resolve_entity(name: &[u8]) -> Option<char> {
    match name {
        b"lt" => Some('<'),
        b"gt" => Some('>'),
        b"amp" => Some('&'),
        b"quot" => Some('"'),
        b"apos" => Some('\''),
        [b'#', b'x' | b'X', hex @ ..]
            if !hex.is_empty() && hex.iter().all(u8::is_ascii_hexdigit) =>
        {
            u32::from_str_radix(std::str::from_utf8(hex).ok()?, 16)
                .ok()
                .and_then(char::from_u32)
        }
        [b'#', dec @ ..] if !dec.is_empty() && dec.iter().all(u8::is_ascii_digit) => {
            std::str::from_utf8(dec)
                .ok()?
                .parse::<u32>()
                .ok()
                .and_then(char::from_u32)
        }
        _ => None,
    }
}

fn push_char(out: &mut Vec<u8>, c: char) {
    let mut utf8 = [0u8; 4];
    out.extend_from_slice(c.encode_utf8(&mut utf8).as_bytes());
}

/// An entity reference that is unknown or unterminated: its text.
struct BadEntity(String);

/// Appends `raw` to `out`, replacing entity references; on an unknown or
/// unterminated reference returns its text.
fn unescape_into(raw: &[u8], out: &mut Vec<u8>) -> Result<(), BadEntity> {
    let mut rest = raw;
    while let Some(amp) = memchr::memchr(b'&', rest) {
        out.extend_from_slice(&rest[..amp]);
        let after = &rest[amp + 1..];
        let semi = memchr::memchr(b';', after).ok_or_else(|| BadEntity(lossy(after)))?;
        let c = resolve_entity(&after[..semi]).ok_or_else(|| BadEntity(lossy(&after[..semi])))?;
        push_char(out, c);
        rest = &after[semi + 1..];
    }
    out.extend_from_slice(rest);
    Ok(())
}

/// Parses a tag value: a decimal `i64`, optionally signed, surrounded by blanks.
pub(crate) fn parse_tag(text: &[u8]) -> Option<i64> {
    let s = std::str::from_utf8(text)
        .ok()?
        .trim_matches(|c| matches!(c, ' ' | '\t' | '\r' | '\n'));
    s.parse::<i64>().ok()
}

/// Whether `text` is a decimal integer (an optional sign, then digits):
/// one that [`parse_tag`] refuses is out of range.
fn is_decimal(text: &[u8]) -> bool {
    let digits = match text.first() {
        Some(b'-' | b'+') => &text[1..],
        _ => text,
    };
    !digits.is_empty() && digits.iter().all(u8::is_ascii_digit)
}

impl<R: BufRead> Parser<R> {
    fn pos(&self, offset: u64) -> Position {
        self.xml.get_ref().position(offset)
    }

    /// A malformed attribute, as a syntax error at `pos`.
    fn attr_err(&self, e: quick_xml::events::attributes::AttrError, pos: Position) -> ReadError {
        self.err(
            ReadErrorKind::Syntax {
                message: e.to_string(),
            },
            pos,
        )
    }

    fn err(&self, kind: ReadErrorKind, pos: Position) -> ReadError {
        ReadError::new(kind, pos, self.source_name.clone())
    }

    /// [`Self::xml_error`] inside element `name` (start tag shown as
    /// `opening`, at `opened`): an end tag of another name means this one
    /// was not closed.
    fn xml_error_in(
        &self,
        e: quick_xml::Error,
        name: &str,
        opening: &dyn Fn() -> String,
        opened: Position,
    ) -> ReadError {
        match e {
            quick_xml::Error::IllFormed(quick_xml::errors::IllFormedError::MismatchedEndTag {
                found,
                ..
            }) => self.err(
                ReadErrorKind::UnclosedElement(Box::new(crate::error::Unclosed {
                    name: name.into(),
                    opening: opening(),
                    opened,
                    found: Some(format!("</{}>", crate::error::shown(&found))),
                })),
                self.pos(self.xml.error_position()),
            ),
            other => self.xml_error(other),
        }
    }

    /// Element `name` (start tag shown as `opening`, at `opened`) is not
    /// closed: `found` came instead (`None`: the end of the input), at `at`.
    fn unclosed(
        &self,
        name: &str,
        opening: String,
        opened: Position,
        found: Option<String>,
        at: u64,
    ) -> ReadError {
        let kind = ReadErrorKind::UnclosedElement(Box::new(crate::error::Unclosed {
            name: name.into(),
            opening,
            opened,
            found,
        }));
        self.err(kind, self.pos(at))
    }

    fn xml_error(&self, e: quick_xml::Error) -> ReadError {
        let pos = self.pos(self.xml.error_position());
        let kind = match e {
            quick_xml::Error::Io(io) => ReadErrorKind::Io(io),
            other => ReadErrorKind::Syntax {
                message: other.to_string(),
            },
        };
        self.err(kind, pos)
    }

    fn expect_blank(&self, text: &[u8], start: u64) -> Result<(), ReadError> {
        let t = text
            .strip_prefix(b"\xEF\xBB\xBF".as_slice())
            .unwrap_or(text);
        if is_blank(t) {
            return Ok(());
        }
        let first = t
            .iter()
            .position(|c| !matches!(c, b' ' | b'\t' | b'\r' | b'\n'))
            .unwrap_or(0);
        let pos = self.pos(start + (text.len() - t.len() + first) as u64);
        Err(self.err(
            ReadErrorKind::UnexpectedText {
                text: lossy(t.trim_ascii()),
            },
            pos,
        ))
    }

    fn unexpected_ref(&self, r: &[u8], start: u64) -> ReadError {
        let text = format!("&{};", lossy(r));
        self.err(ReadErrorKind::UnexpectedText { text }, self.pos(start))
    }

    /// Unescapes an attribute value into `self.attr` and returns it as text.
    fn attr_value(&mut self, raw: &[u8], pos: Position) -> Result<&str, ReadError> {
        self.attr.clear();
        if let Err(BadEntity(name)) = unescape_into(raw, &mut self.attr) {
            return Err(self.err(ReadErrorKind::UnknownEntity { name }, pos));
        }
        match std::str::from_utf8(&self.attr) {
            Ok(s) => Ok(s),
            Err(_) => Err(ReadError::new(
                ReadErrorKind::InvalidUtf8,
                pos,
                self.source_name.clone(),
            )),
        }
    }

    fn record_head(&mut self, s: &BytesStart<'_>, pos: Position) -> Result<RecordHead, ReadError> {
        let mut head = RecordHead {
            terminate: false,
            binary: false,
        };
        self.interface.clear();
        self.interface.push_str(DEFAULT_INTERFACE);
        // Without quick-xml's duplicate-attribute check (an allocation per
        // element): a repeated attribute simply takes its last value.
        for a in s.attributes().with_checks(false) {
            let a = a.map_err(|e| self.attr_err(e, pos))?;
            match a.key.as_ref() {
                // The common spellings are matched on the raw bytes first.
                b"type" if &*a.value == b"data" => head.terminate = false,
                b"type" if &*a.value == b"terminate" => head.terminate = true,
                b"mode" if &*a.value == b"textual" => head.binary = false,
                b"mode" if &*a.value == b"binary" => head.binary = true,
                b"xmlns" => {}
                b"type" => match self.attr_value(&a.value, pos)? {
                    "data" => head.terminate = false,
                    "terminate" => head.terminate = true,
                    other => {
                        let ty = lossy(other.as_bytes());
                        return Err(self.err(ReadErrorKind::UnknownRecordType { ty }, pos));
                    }
                },
                b"mode" => match self.attr_value(&a.value, pos)? {
                    "textual" => head.binary = false,
                    "binary" => head.binary = true,
                    other => {
                        let mode = lossy(other.as_bytes());
                        return Err(self.err(ReadErrorKind::UnknownMode { mode }, pos));
                    }
                },
                b"interface" => {
                    self.attr_value(&a.value, pos)?;
                    self.interface.clear();
                    // The value is in `self.attr` (checked UTF-8 just above).
                    self.interface
                        .push_str(std::str::from_utf8(&self.attr).unwrap_or(DEFAULT_INTERFACE));
                }
                _ => {} // xmlns and anything else
            }
        }
        Ok(head)
    }

    /// Reads the children of a `<record>` up to its end tag.
    fn record_body(
        &mut self,
        buf: &mut Vec<u8>,
        head: RecordHead,
        rec_pos: Position,
    ) -> Result<Record, ReadError> {
        let mut rec = Record::new();
        let opening = || "record".to_string();
        loop {
            let start = self.xml.buffer_position();
            buf.clear();
            let ev = self
                .xml
                .read_event_into(buf)
                .map_err(|e| self.xml_error_in(e, "record", &opening, rec_pos))?;
            match ev {
                Event::Comment(_) | Event::PI(_) => {}
                Event::Decl(_) => {
                    return Err(self.err(
                        ReadErrorKind::Misplaced {
                            what: "XML declaration",
                        },
                        self.pos(start),
                    ))
                }
                Event::DocType(_) => {
                    return Err(self.err(
                        ReadErrorKind::Misplaced {
                            what: "document type",
                        },
                        self.pos(start),
                    ))
                }
                Event::Text(t) => self.expect_blank(&t, start)?,
                Event::CData(t) => self.expect_blank(&t, start)?,
                Event::GeneralRef(r) => return Err(self.unexpected_ref(&r, start)),
                Event::Start(ref s) | Event::Empty(ref s) => {
                    let empty = matches!(ev, Event::Empty(_));
                    let pos = self.pos(start);
                    if s.name().as_ref() == b"record" {
                        let found = Some("<record>".to_string());
                        return Err(self.unclosed("record", opening(), rec_pos, found, start));
                    }
                    let Some(child) = Child::from_name(s.name().as_ref()) else {
                        return Err(self.err(
                            ReadErrorKind::UnknownElement {
                                name: lossy(s.name().as_ref()),
                            },
                            pos,
                        ));
                    };
                    let (label, has_interface) = self.child_head(s, child, pos)?;
                    self.text.clear();
                    if !empty {
                        self.child_text(buf, child, label, pos)?;
                    }
                    let value = self.child_value(child, label, has_interface, head.binary, pos)?;
                    if rec.has(label) {
                        return Err(self.err(ReadErrorKind::DuplicateLabel { label }, pos));
                    }
                    rec.set(label, value);
                }
                Event::End(_) => return Ok(rec), // quick-xml checked it is </record>
                Event::Eof => return Err(self.unclosed("record", opening(), rec_pos, None, start)),
            }
        }
    }

    /// The label of a child element, and whether it names an interface
    /// (then in `self.field_interface`).
    fn child_head(
        &mut self,
        s: &BytesStart<'_>,
        child: Child,
        pos: Position,
    ) -> Result<(Label, bool), ReadError> {
        let mut label = None;
        let mut has_interface = false;
        for a in s.attributes().with_checks(false) {
            let a = a.map_err(|e| self.attr_err(e, pos))?;
            match a.key.as_ref() {
                b"label" => {
                    self.attr_value(&a.value, pos)?;
                    // The name is now in `self.attr`, checked UTF-8.
                    let name = std::str::from_utf8(&self.attr).unwrap_or_default();
                    label = (!name.is_empty()).then(|| self.labels.get(child.kind(), name));
                }
                b"interface" if matches!(child, Child::Field) => {
                    self.attr_value(&a.value, pos)?;
                    self.field_interface.clear();
                    self.field_interface
                        .push_str(std::str::from_utf8(&self.attr).unwrap_or_default());
                    has_interface = true;
                }
                _ => {}
            }
        }
        let label = label.ok_or_else(|| {
            self.err(
                ReadErrorKind::MissingLabel {
                    element: child.name(),
                },
                pos,
            )
        })?;
        Ok((label, has_interface))
    }

    /// Collects the text of a child element up to its end tag into `self.text`.
    fn child_text(
        &mut self,
        buf: &mut Vec<u8>,
        child: Child,
        label: Label,
        child_pos: Position,
    ) -> Result<(), ReadError> {
        // Only for error messages: the start tag, rebuilt from what was read.
        let opening = || {
            format!(
                "{} label=\"{}\"",
                child.name(),
                lossy(label.name().as_bytes())
            )
        };
        loop {
            let start = self.xml.buffer_position();
            buf.clear();
            let ev = self
                .xml
                .read_event_into(buf)
                .map_err(|e| self.xml_error_in(e, child.name(), &opening, child_pos))?;
            match ev {
                Event::Text(t) => {
                    if let Err(BadEntity(name)) = unescape_into(&t, &mut self.text) {
                        return Err(
                            self.err(ReadErrorKind::UnknownEntity { name }, self.pos(start))
                        );
                    }
                }
                Event::CData(t) => self.text.extend_from_slice(&t),
                Event::GeneralRef(r) => match resolve_entity(&r) {
                    Some(c) => push_char(&mut self.text, c),
                    None => {
                        let name = lossy(&r);
                        return Err(
                            self.err(ReadErrorKind::UnknownEntity { name }, self.pos(start))
                        );
                    }
                },
                Event::Comment(_) | Event::PI(_) => {}
                Event::Decl(_) => {
                    return Err(self.err(
                        ReadErrorKind::Misplaced {
                            what: "XML declaration",
                        },
                        self.pos(start),
                    ))
                }
                Event::DocType(_) => {
                    return Err(self.err(
                        ReadErrorKind::Misplaced {
                            what: "document type",
                        },
                        self.pos(start),
                    ))
                }
                Event::Start(s) | Event::Empty(s) => {
                    let name = lossy(s.name().as_ref());
                    // A record or another child starting here means this
                    // one was left open; anything else is out of place.
                    if s.name().as_ref() == b"record"
                        || Child::from_name(s.name().as_ref()).is_some()
                    {
                        let found = Some(format!("<{name}>"));
                        return Err(self.unclosed(
                            child.name(),
                            opening(),
                            child_pos,
                            found,
                            start,
                        ));
                    }
                    return Err(self.err(ReadErrorKind::UnknownElement { name }, self.pos(start)));
                }
                Event::End(_) => return Ok(()),
                Event::Eof => {
                    return Err(self.unclosed(child.name(), opening(), child_pos, None, start));
                }
            }
        }
    }

    /// The value of a child element from its text in `self.text`.
    fn child_value(
        &self,
        child: Child,
        label: Label,
        has_interface: bool,
        binary: bool,
        pos: Position,
    ) -> Result<Value, ReadError> {
        if let Child::Tag | Child::BTag = child {
            return match parse_tag(&self.text) {
                Some(v) => Ok(Value::Int(v)),
                None => {
                    let value = lossy(self.text.trim_ascii());
                    let kind = if is_decimal(value.as_bytes()) {
                        ReadErrorKind::TagOutOfRange { label, value }
                    } else {
                        ReadErrorKind::NonIntegerTag { label, value }
                    };
                    Err(self.err(kind, pos))
                }
            };
        }
        debug_assert_eq!(label.kind(), LabelKind::Field);
        let text = std::str::from_utf8(&self.text)
            .map_err(|_| self.err(ReadErrorKind::InvalidUtf8, pos))?;
        let interface = if has_interface {
            &self.field_interface
        } else {
            &self.interface
        };
        field_value(&self.codecs, self.verbatim, interface, binary, text)
            .map_err(|error| self.err(ReadErrorKind::BadField { label, error }, pos))
    }
}

/// The value of a field of `interface` written `text`: parsed by the
/// interface's codec in `codecs` (validated and kept as text if
/// `verbatim`), or kept as text if it has none.
pub(crate) fn field_value(
    codecs: &TextCodecs,
    verbatim: bool,
    interface: &str,
    binary: bool,
    text: &str,
) -> Result<Value, crate::codec::FieldTextError> {
    let Some(codec) = codecs.get(interface) else {
        return Ok(Value::Field(Field::text(interface, binary, text)));
    };
    if verbatim {
        codec.validate(text, binary)?;
        return Ok(Value::Field(Field::text(interface, binary, text)));
    }
    codec.parse(text, binary).map(Value::Field)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::toy;
    use snet_core::TextField;

    fn read(input: &str) -> Result<Vec<StreamItem>, ReadError> {
        read_with(input, TextCodecs::new())
    }

    fn read_with(input: &str, codecs: TextCodecs) -> Result<Vec<StreamItem>, ReadError> {
        let mut r = RecordReader::new(input.as_bytes()).with_codecs(codecs);
        let mut out = Vec::new();
        while let Some(item) = r.next()? {
            out.push(item);
        }
        Ok(out)
    }

    /// Input that arrives in pieces: each `read` hands out the next piece,
    /// and counts the calls (a call is what would wait for a producer).
    struct Pieces {
        pieces: std::collections::VecDeque<Vec<u8>>,
        reads: std::rc::Rc<std::cell::Cell<usize>>,
    }

    impl std::io::Read for Pieces {
        fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
            self.reads.set(self.reads.get() + 1);
            let Some(mut p) = self.pieces.pop_front() else {
                return Ok(0);
            };
            let n = p.len().min(out.len());
            out[..n].copy_from_slice(&p[..n]);
            if n < p.len() {
                self.pieces.push_front(p.split_off(n));
            }
            Ok(n)
        }
    }

    #[test]
    fn next_buffered_takes_only_what_has_arrived() {
        let rec = |x: i64| {
            format!(
                "<record xmlns=\"snet-home.org\" type=\"data\" mode=\"textual\"><tag label=\"X\">{x}</tag></record>\n"
            )
        };
        let head = "<?xml version=\"1.0\" ?>\n".to_string();
        let fourth = rec(4);
        let (fourth_a, fourth_b) = fourth.split_at(30);
        // Piece 1 ends right after a record, piece 2 inside the fourth record.
        let pieces = [
            format!("{head}{}{}", rec(1), rec(2).trim_end()),
            format!("\n{}{fourth_a}", rec(3)),
            format!("{fourth_b}{}<record type=\"terminate\" />\n", rec(5)),
        ];
        let reads = std::rc::Rc::new(std::cell::Cell::new(0));
        let input = std::io::BufReader::with_capacity(
            1 << 16,
            Pieces {
                pieces: pieces.into_iter().map(String::into_bytes).collect(),
                reads: reads.clone(),
            },
        );
        let mut r = RecordReader::new(input);
        let x = |item: Option<StreamItem>| match item {
            Some(StreamItem::Data(rec)) => rec.int(Label::tag("X")),
            other => panic!("expected a record, got {other:?}"),
        };
        // Nothing has been read yet: nothing is known to be buffered.
        assert!(r.next_buffered().is_none());
        assert_eq!(reads.get(), 0, "next_buffered must not read");
        assert_eq!(x(r.next().expect("valid")), Some(1));
        assert_eq!(x(r.next_buffered()), Some(2));
        // The buffer is empty: the next record would need a read.
        let reads_so_far = reads.get();
        assert!(r.next_buffered().is_none());
        assert_eq!(reads.get(), reads_so_far, "next_buffered must not read");
        assert_eq!(x(r.next().expect("valid")), Some(3));
        // The fourth record is incomplete: not taken, and no read attempted.
        let reads_so_far = reads.get();
        assert!(r.next_buffered().is_none());
        assert_eq!(reads.get(), reads_so_far, "next_buffered must not read");
        assert_eq!(x(r.next().expect("valid")), Some(4));
        assert_eq!(x(r.next_buffered()), Some(5));
        assert!(matches!(r.next_buffered(), Some(StreamItem::Terminate)));
        assert!(r.next_buffered().is_none());
        assert!(r.next().expect("ended").is_none());
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
        error_with(input, TextCodecs::new())
    }

    fn error_with(input: &str, codecs: TextCodecs) -> String {
        match read_with(input, codecs) {
            Ok(items) => panic!("expected an error, read {items:?}"),
            // Without the "(byte B)" suffix, checked separately.
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
        let t = f.downcast_ref::<TextField>().expect("a text field");
        (t.interface().into(), t.binary(), t.text().into())
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
<record type="data"><tag label="ignored">1</tag></record>
"#;
        let items = read(input).expect("valid");
        assert_eq!(items.len(), 2);
        assert!(matches!(items[1], StreamItem::Terminate));
        let StreamItem::Data(r) = &items[0] else {
            panic!("data first")
        };
        assert_eq!(r.len(), 4);
        assert_eq!(r.int(Label::tag("N")), Some(10));
        assert_eq!(r.int(Label::btag("K")), Some(3));
        // No text codec registered: values are kept as written.
        assert_eq!(text_of(r, "A"), ("C4SNet".into(), false, "(int)5".into()));
        assert_eq!(text_of(r, "V").2, "(double[3])1.5,2.5,3.5");
    }

    #[test]
    fn values_of_registered_interfaces_are_parsed_once_read() {
        let input = "<record type='data'><field label='a' interface='Up'> abc </field>\
             <field label='o' interface='Other'>abc</field><field label='c'>(int)5</field></record>\
             <record type='data' mode='binary' interface='Up'><field label='b'>cbA</field></record>";
        let recs: Vec<Record> = read_with(input, toy::codecs())
            .expect("valid")
            .into_iter()
            .filter_map(|i| match i {
                StreamItem::Data(r) => Some(r),
                StreamItem::Terminate => None,
            })
            .collect();
        fn word<'a>(r: &'a Record, n: &str) -> Option<&'a str> {
            toy::word(r.field(Label::field(n)).expect("field"))
        }
        assert_eq!(word(&recs[0], "a"), Some("ABC"));
        assert_eq!(
            text_of(&recs[0], "o"),
            ("Other".into(), false, "abc".into())
        );
        assert_eq!(
            text_of(&recs[0], "c"),
            ("C4SNet".into(), false, "(int)5".into())
        );
        assert_eq!(word(&recs[1], "b"), Some("ABC"));
        // Verbatim: kept as text, but still checked.
        let mut v = RecordReader::new(input.as_bytes())
            .with_codecs(toy::codecs())
            .verbatim_fields();
        let Ok(Some(StreamItem::Data(r))) = v.next() else {
            panic!("data first")
        };
        assert_eq!(text_of(&r, "a"), ("Up".into(), false, " abc ".into()));
        let bad = "<record type='data'>\n <tag label='t'>1</tag><field label='A' interface='Up'>a1</field></record>";
        assert_eq!(
            error_with(bad, toy::codecs()),
            "input:2:24: field \"A\": \"a1\" is not a word"
        );
        let mut v = RecordReader::new(bad.as_bytes())
            .with_codecs(toy::codecs())
            .verbatim_fields();
        let e = v.next().expect_err("checked when verbatim too");
        assert!(matches!(e.kind(), ReadErrorKind::BadField { .. }));
        assert!(std::error::Error::source(&e).is_some());
        assert!(read(bad).is_ok(), "no codec: kept as text");
    }

    #[test]
    fn accepts_the_format_variations() {
        let input = "\u{feff}<?xml version='1.0' encoding='UTF-8'?>\n<!-- a comment -->\n\
            <record mode='textual' type='data' xmlns='snet-home.org'><tag label='a'>  -7\n</tag><!-- x --></record>\
            <?xml version=\"1.0\" encoding=\"ISO-8859-1\"?><?xml version=\"1.0\"?>\
            <record type=\"data\"><tag label=\"b\">+3</tag><field label=\"s\">(char[3])&lt;,&amp;,&#62;</field></record>\
            <record type='data'/><record><btag label='c'>0</btag></record>";
        let recs = records(input);
        assert_eq!(recs.len(), 4);
        assert_eq!(recs[0].int(Label::tag("a")), Some(-7));
        assert_eq!(recs[1].int(Label::tag("b")), Some(3));
        assert_eq!(text_of(&recs[1], "s").2, "(char[3])<,&,>");
        assert!(recs[2].is_empty());
        assert_eq!(recs[3].int(Label::btag("c")), Some(0));
    }

    #[test]
    fn escapes_cdata_and_char_refs_are_unescaped() {
        let recs = records(
            "<record type='data'><field label='x'>(char[5])&quot;,&apos;,&#x41;,&#66;,<![CDATA[<]]></field>\
             <field label='y' interface='Other'>&lt;raw &amp; free&gt;</field></record>",
        );
        assert_eq!(text_of(&recs[0], "x").2, "(char[5])\",',A,B,<");
        assert_eq!(
            text_of(&recs[0], "y"),
            ("Other".into(), false, "<raw & free>".into())
        );
    }

    #[test]
    fn interface_and_mode() {
        let recs = records(
            "<record type='data' interface='SAC' mode='binary'><field label='a'>anything</field>\
             <field label='b' interface='C4SNet'>(int[2])AQAAAAIAAAA=</field></record>",
        );
        assert_eq!(
            text_of(&recs[0], "a"),
            ("SAC".into(), true, "anything".into())
        );
        assert_eq!(
            text_of(&recs[0], "b"),
            ("C4SNet".into(), true, "(int[2])AQAAAAIAAAA=".into())
        );
    }

    #[test]
    fn labels_of_different_kinds_may_share_a_name() {
        let recs = records("<record type='data'><tag label='x'>1</tag><btag label='x'>2</btag><field label='x'>(int)3</field></record>");
        assert_eq!(recs[0].len(), 3);
    }

    #[test]
    fn end_of_input_without_terminate_ends_the_stream() {
        let items = read("<record type='data'><tag label='t'>1</tag></record>\n  ").expect("valid");
        assert_eq!(items.len(), 1);
        assert!(read("").expect("empty is valid").is_empty());
    }

    #[test]
    fn unclosed_elements_name_the_missing_end_tag() {
        // Another end tag where the child's belongs.
        assert_eq!(
            error("<record type='data'>\n    <tag label=\"x\">1</record>"),
            "input:2:21: expected </tag> to close <tag label=\"x\"> opened at line 2, column 5, found </record>"
        );
        // The next child starts inside an unclosed one.
        assert_eq!(
            error("<record type='data'><field label='f'>(int)1<tag label='t'>2</tag></record>"),
            "input:1:44: expected </field> to close <field label=\"f\"> opened at line 1, column 21, found <tag>"
        );
        // The next record starts inside an unclosed one.
        assert_eq!(
            error("<record type='data'><tag label='t'>2</tag>\n<record type='data'/>"),
            "input:2:1: expected </record> to close <record> opened at line 1, column 1, found <record>"
        );
        // A stray end tag inside a record.
        assert_eq!(
            error("<record type='data'><tag label='t'>2</tag></tag>"),
            "input:1:43: expected </record> to close <record> opened at line 1, column 1, found </tag>"
        );
        // The position is given once, then the byte offset.
        let e = read("<record type='data'>\n <tag label='N'>1").expect_err("unclosed");
        assert_eq!(
            e.to_string(),
            "input:2:18: expected </tag> to close <tag label=\"N\"> opened at line 2, column 2, but the input ends (byte 38)"
        );
        // The same through the fast path's reader (it leaves errors to quick-xml's).
        let input = "<record type='data'><tag label='a'>1</tag></record>\n<record type='data'>\n    <tag label=\"x\">1</record>";
        let mut r = RecordReader::new(input.as_bytes());
        assert!(matches!(r.next(), Ok(Some(StreamItem::Data(_)))));
        let e = r.next().expect_err("second record unclosed");
        assert!(
            e.to_string().starts_with("input:3:21: expected </tag> to close <tag label=\"x\"> opened at line 3, column 5, found </record>"),
            "{e}"
        );
    }

    #[test]
    fn errors_name_line_and_column() {
        assert_eq!(
            error("<record type=\"data\">\n  <tag label=\"N\">x</tag>\n</record>"),
            "input:2:3: tag \"N\" has a non-integer value \"x\""
        );
        assert_eq!(
            error("<record type='data'><btag label='B'>99999999999999999999</btag></record>"),
            "input:1:21: binding tag \"B\" has the value 99999999999999999999, outside the range of tags (-9223372036854775808 to 9223372036854775807, 64-bit signed)"
        );
        assert_eq!(
            error("<record type='data'><tag label='t'> -9223372036854775809 </tag></record>"),
            "input:1:21: tag \"t\" has the value -9223372036854775809, outside the range of tags (-9223372036854775808 to 9223372036854775807, 64-bit signed)"
        );
        assert_eq!(
            error("<record type='data'><tag label='t'>9223372036854775807</tag><btag label='b'>-9223372036854775808</btag><tag label='u'>1-2</tag></record>"),
            "input:1:104: tag \"u\" has a non-integer value \"1-2\""
        );
        assert_eq!(
            error("\n\n  <record type='data'>\n<tag label='N'>1</tag>"),
            "input:4:23: expected </record> to close <record> opened at line 3, column 3, but the input ends"
        );
        assert_eq!(
            error("<record type='data'>\n <tag label='N'>1"),
            "input:2:18: expected </tag> to close <tag label=\"N\"> opened at line 2, column 2, but the input ends"
        );
        assert_eq!(
            error("<record type='data'><foo/></record>"),
            "input:1:21: unknown element <foo>"
        );
        assert_eq!(
            error("<rec type='data'></rec>"),
            "input:1:1: unknown element <rec>"
        );
        assert_eq!(
            error("<record type='data'/>\n<record type='dat'/>"),
            "input:2:1: unknown record type \"dat\" (expected \"data\" or \"terminate\")"
        );
        assert_eq!(
            error("<record type='data' mode='x'/>"),
            "input:1:1: unknown record mode \"x\" (expected \"textual\" or \"binary\")"
        );
        assert_eq!(
            error("<record type='data'><tag>1</tag></record>"),
            "input:1:21: <tag> without a label"
        );
        assert_eq!(
            error("<record type='data'><tag label='a'>1</tag><tag label='a'>2</tag></record>"),
            "input:1:43: tag \"a\" appears twice in the record"
        );
        assert_eq!(
            error("<record type='data'><tag label='a'>&foo;</tag></record>"),
            "input:1:36: unknown entity \"&foo;\""
        );
        assert_eq!(
            error("hello <record/>"),
            "input:1:1: unexpected text \"hello\""
        );
        assert_eq!(
            error("<record type='data'><tag label='a'><b/></tag></record>"),
            "input:1:36: unknown element <b>"
        );
        assert!(error("<record type='data'><tag label='a'>1</record>").starts_with("input:1:"));
        assert!(
            error("<record type='data'><tag label='a'>1</tag></record></record>").contains("1:52")
        );
    }

    #[test]
    fn tiny_input_buffers_and_crlf_keep_positions_right() {
        let input = "<?xml version='1.0'?>\r\n<record type='data'>\r\n  <tag label='a'>1</tag>\r\n</record>\r\n\
                     <record type='data'>\r\n  <!-- multi\r\nline -->  <tag label='N'>x</tag></record>";
        let mut r = RecordReader::new(std::io::BufReader::with_capacity(1, input.as_bytes()));
        let Ok(Some(StreamItem::Data(first))) = r.next() else {
            panic!("first record reads")
        };
        assert_eq!(first.int(Label::tag("a")), Some(1));
        let e = r.next().expect_err("second record is bad");
        assert!(
            e.to_string()
                .starts_with("input:7:11: tag \"N\" has a non-integer value \"x\" (byte "),
            "{e}"
        );
    }

    #[test]
    fn error_offsets_are_bytes() {
        let mut r = RecordReader::with_name(
            "<record type='data'/>\n<record type='x'/>".as_bytes(),
            "in.xml",
        );
        assert!(r.next().expect("first is fine").is_some());
        let e = r.next().expect_err("second is bad");
        assert_eq!(
            e.position(),
            Position {
                offset: 22,
                line: 2,
                column: 1
            }
        );
        assert_eq!(e.source_name(), "in.xml");
        assert!(matches!(e.kind(), ReadErrorKind::UnknownRecordType { .. }));
        assert!(r.next().expect("fused").is_none());
    }

    /// What a read gave, as text: each item (entries with their kinds,
    /// values, and for text fields the interface and mode), then the error
    /// with its position, if any.
    fn outcome(mut r: RecordReader<impl BufRead>) -> Vec<String> {
        let mut out = Vec::new();
        loop {
            match r.next() {
                Ok(Some(StreamItem::Terminate)) => out.push("terminate".into()),
                Ok(Some(StreamItem::Data(rec))) => {
                    let mut d = String::from("data");
                    for (l, v) in rec.entries() {
                        let v = match v {
                            Value::Int(i) => i.to_string(),
                            Value::Field(f) => match f.downcast_ref::<TextField>() {
                                Some(t) => {
                                    format!("{}/{}/{:?}", t.interface(), t.binary(), t.text())
                                }
                                None => format!("{:?}", toy::word(f)),
                            },
                        };
                        d.push_str(&format!(" {:?}:{}={v}", l.kind(), l.name()));
                    }
                    out.push(d);
                }
                Ok(None) => return out,
                Err(e) => {
                    out.push(format!("error {e}"));
                    return out;
                }
            }
        }
    }

    /// Reads `input` with and without the fast path (and with a one-byte
    /// buffer, which leaves the fast path nothing whole to read) and
    /// requires the same items and the same error at the same place.
    fn same_both_ways(input: &[u8]) -> Vec<String> {
        let fast = outcome(RecordReader::new(input).with_codecs(toy::codecs()));
        let slow = outcome(
            RecordReader::new(input)
                .with_codecs(toy::codecs())
                .without_fast_path(),
        );
        assert_eq!(fast, slow, "input {:?}", String::from_utf8_lossy(input));
        let tiny = outcome(
            RecordReader::new(std::io::BufReader::with_capacity(1, input))
                .with_codecs(toy::codecs()),
        );
        assert_eq!(fast, tiny, "input {:?}", String::from_utf8_lossy(input));
        fast
    }

    /// Records of every shape the fast path takes or leaves, valid or not.
    const SHAPES: &[&str] = &[
        "<record type=\"data\"><tag label=\"a\">1</tag></record>",
        "<record type='data'><tag label='a'>-12</tag><btag label='b'> +3 </btag></record>",
        "<record mode='textual' xmlns='snet-home.org' type='data' interface='C4SNet'><tag label='a'>1</tag></record>",
        "<record type = 'data' ><tag label = \"a\" >1</tag ></record >",
        "<record\n\ttype=\"data\"\r\n>\r\n  <tag\tlabel='a'>\n7\n</tag>\n</record>",
        "<?xml version=\"1.0\" ?><record xmlns=\"snet-home.org\" type=\"data\" mode=\"textual\" ><tag label=\"N\">3</tag></record>",
        "<?xml version='1.0'?>\n<?xml version='1.0' encoding='UTF-8'?><record><tag label='a'>1</tag></record>",
        "<?xml-stylesheet href='x'?><record><tag label='a'>1</tag></record>",
        "<record/>",
        "<record type='data' />",
        "<record type='data'></record>",
        "<record type='data'><field label='w' interface='Up'>abc</field><field label='o' interface='Other'> x y </field></record>",
        "<record interface='Up'><field label='w'>abc</field><field label='o' interface='Other'>&lt;x&gt;</field></record>",
        "<record mode='binary' interface='Up'><field label='w'>cba</field></record>",
        "<record mode='binary'><field label='s' interface='SAC'>opaque&amp;</field></record>",
        "<record><field label='o' interface='Other'/></record>",
        "<record><field label='o' interface='Other'><![CDATA[<x>]]></field></record>",
        "<record><field label='o' interface='Other'>a&#x41;b</field></record>",
        "<record><field label='o' interface='Other'>1 &gt; 0 > -1</field></record>",
        "<record><tag label='a>b'>1</tag><tag label=\"it's\">2</tag></record>",
        "<record><!-- c --><tag label='a'>1</tag><?pi x?></record>",
        "<record><tag label='a'>1<!-- c --></tag></record>",
        "<record><tag label='a' interface='Up' other='x'>1</tag></record>",
        "<record><tag label='a' label='b'>1</tag></record>",
        "<record type='terminate' type='data'><tag label='a'>1</tag></record>",
        "<record type='data' type='terminate'/>",
        "<record><tag label='a'>007</tag><tag label='b'>-9223372036854775808</tag></record>",
        "<record><tag label='a'>1</tag><btag label='a'>2</btag><field label='a' interface='Other'>3</field></record>",
        // Errors.
        "<record><tag label='a'>x</tag></record>",
        "<record><tag label='a'>9223372036854775808</tag></record>",
        "<record><tag label='a'></tag></record>",
        "<record><tag label='a'/></record>",
        "<record><tag label='a'>1</tag><tag label='a'>2</tag></record>",
        "<record><tag>1</tag></record>",
        "<record><tag label=''>1</tag></record>",
        "<record><tags label='a'>1</tags></record>",
        "<record><tag label='a'>1</tags></record>",
        "<record><tag label='a'>1</tag>x</record>",
        "<record><tag label='a'>1</tag></recor>",
        "<record><tag label='a'>1</tag>",
        "<record type='dat'/>",
        "<record mode='text'/>",
        "<record type='data'type='data'/>",
        "<record type=data/>",
        "<record><tag label='a'interface='b'>1</tag></record>",
        "<record><field label='w' interface='Up'>a1</field></record>",
        "<record><field label='w' interface='Up'></field></record>",
        "<record><field label='x' interface='Other'>\u{e9}</field></record>",
        "<recordx/>",
        "<record><tag label='a'>&bogus;</tag></record>",
        "<record/ >",
        "hello",
        "</record>",
        "<record type='terminate'/>",
        "<record type=\"terminate\"><tag label='a'>x</tag>",
    ];

    #[test]
    fn fast_path_and_fallback_read_the_same() {
        // Each shape after a first record (before which the fast path does
        // not start), once and twice (the second time from remembered
        // start tags), with blanks and line breaks around.
        for shape in SHAPES {
            for sep in ["", "\n", " \r\n\t"] {
                let input =
                    format!("<record><tag label='t'>0</tag></record>{sep}{shape}{sep}{shape}{sep}");
                same_both_ways(input.as_bytes());
            }
        }
        // All of them in one stream, and every prefix of it.
        let all: String = SHAPES
            .iter()
            .filter(|s| !s.contains("terminate"))
            .map(|s| format!("<record/>\n{s}\n"))
            .collect();
        let items = same_both_ways(all.as_bytes());
        assert!(items.len() > 5, "{items:?}");
        let mut r = RecordReader::new(all.as_bytes()).with_codecs(toy::codecs());
        while let Ok(Some(_)) = r.next() {}
        assert!(r.fast_items() > 20, "the fast path took {}", r.fast_items());
        for end in 0..all.len() {
            if all.is_char_boundary(end) {
                same_both_ways(&all.as_bytes()[..end]);
            }
        }
    }

    #[test]
    fn fast_path_checks_what_the_fallback_checks() {
        // Bytes that are not UTF-8 where the reader needs text.
        for bad in [
            &b"<record/><record interface='\xff'/>"[..],
            b"<record/><record type='terminate' interface='\xff'/>",
            b"<record/><record><tag label='\xff'>1</tag></record>",
            b"<record/><record><field label='f' interface='\xff'>1</field></record>",
            b"<record/><record><field label='f' interface='Other'>\xff</field></record>",
            b"<record/>\xef\xbb\xbf<record/>",
            // Found by the `records` fuzz target: a bad byte in the first
            // of two values of one attribute.
            b"<record></record><record interface=\"\xe1\" interface=\"\"></record>",
            b"<record/><record><tag label='\xff' label='a'>1</tag></record>",
            b"<record/><record><field label='f' interface='\xff' interface='Other'>1</field></record>",
        ] {
            same_both_ways(bad);
        }
        // Positions after many records read by the fast path.
        let mut input = String::from("<?xml version='1.0'?>\n");
        for i in 0..200 {
            input.push_str(&format!(
                "<record type='data'>\n  <tag label='N'>{i}</tag>\n</record>\n"
            ));
        }
        input.push_str("<record type='data'>\n  <tag label='N'>x</tag>\n</record>\n");
        let out = same_both_ways(input.as_bytes());
        let mut r = RecordReader::new(input.as_bytes());
        while let Ok(Some(_)) = r.next() {}
        assert_eq!(
            r.fast_items(),
            199,
            "all but the first record and the error"
        );
        assert_eq!(out.len(), 201);
        assert!(
            out[200].starts_with("error input:603:3: tag \"N\" has a non-integer value \"x\""),
            "{}",
            out[200]
        );
    }

    #[test]
    fn never_panics_on_prefixes_of_valid_input() {
        let input = "<?xml version='1.0'?><record type='data' mode='binary'><tag label='a'>1</tag>\
            <field label='f'>(int[2])AQAAAAIAAAA=</field><!-- c --><field label='g' interface='X'>&amp;<![CDATA[x]]></field>\
            </record><record type='terminate'/>";
        for end in 0..input.len() {
            let _ = read(&input[..end]);
            let _ = read_with(&input[..end], toy::codecs());
        }
    }
}
