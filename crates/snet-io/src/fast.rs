//! The reader's fast path: a hand-written scanner for the common shapes of
//! records, working on the input's buffered bytes.
//!
//! [`scan`] reads one item from the start of a byte slice if it has one of
//! the shapes programs and the writer produce: blanks, optional
//! `<?xml ...?>` declarations, then a `<record ...>` start tag whose
//! attributes hold no references, followed by `<tag>`, `<btag>` and
//! `<field>` children separated by blanks, each with plain (reference-free)
//! attribute values and text, and `</record>`; or an empty
//! `<record .../>`; or a `terminate` record. Anything else — comments,
//! processing instructions, CDATA, entity or character references, a
//! record not wholly inside the slice, and *every* error — makes it return
//! `None` having decided nothing, and the caller reads the item through
//! quick-xml (the fallback), which accepts all that `records.md` allows
//! and reports errors with their positions. So the fast path never changes
//! what is read or what an error says: it only skips the tokeniser for
//! input that is certainly well-formed. The differential tests below and
//! in `reader.rs` read the same input both ways.

use snet_core::{Label, LabelKind, Record, Value};

use crate::codec::TextCodecs;
use crate::reader::{field_value, parse_tag, LabelCache, StreamItem, DEFAULT_INTERFACE};

/// What the scanner needs besides the bytes.
pub(crate) struct ScanCtx<'a> {
    pub labels: &'a mut LabelCache,
    pub memo: &'a mut Memo,
    pub codecs: &'a TextCodecs,
    pub verbatim: bool,
}

#[inline]
fn is_blank(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\r' | b'\n')
}

#[inline]
fn is_name(c: u8) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, b'_' | b':' | b'.' | b'-')
}

/// A cursor over the buffered input.
struct Cur<'a> {
    b: &'a [u8],
    i: usize,
}

/// How a start tag ended.
#[derive(PartialEq)]
enum Close {
    /// `>`: content follows.
    Open,
    /// `/>`: an empty element.
    Empty,
}

impl<'a> Cur<'a> {
    #[inline]
    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    /// Skips blanks; whether there were any.
    #[inline]
    fn blanks(&mut self) -> bool {
        let s = self.i;
        while self.i < self.b.len() && is_blank(self.b[self.i]) {
            self.i += 1;
        }
        self.i > s
    }

    #[inline]
    fn eat(&mut self, lit: &[u8]) -> bool {
        if self.b[self.i..].starts_with(lit) {
            self.i += lit.len();
            true
        } else {
            false
        }
    }

    /// After an element name: the next byte must end the name.
    #[inline]
    fn name_ends(&self) -> bool {
        matches!(
            self.peek(),
            Some(b' ' | b'\t' | b'\r' | b'\n' | b'>' | b'/')
        )
    }

    /// The attributes of a start tag up to and including its `>` or `/>`,
    /// each handed to `f(name, value)` in order (raw values: none holds
    /// `&` or `<`). `None` for anything unusual, or if `f` says so.
    #[inline]
    fn attributes(&mut self, mut f: impl FnMut(&'a [u8], &'a [u8]) -> Option<()>) -> Option<Close> {
        loop {
            let blank = self.blanks();
            match self.peek()? {
                b'>' => {
                    self.i += 1;
                    return Some(Close::Open);
                }
                b'/' => {
                    self.i += 1;
                    return (self.peek()? == b'>').then(|| {
                        self.i += 1;
                        Close::Empty
                    });
                }
                _ if !blank => return None,
                _ => {}
            }
            let s = self.i;
            while self.i < self.b.len() && is_name(self.b[self.i]) {
                self.i += 1;
            }
            let name = &self.b[s..self.i];
            if name.is_empty() {
                return None;
            }
            self.blanks();
            if self.peek()? != b'=' {
                return None;
            }
            self.i += 1;
            self.blanks();
            let q = self.peek()?;
            if q != b'"' && q != b'\'' {
                return None;
            }
            let rest = &self.b[self.i + 1..];
            let len = until(rest, q, b'<')?;
            let value = &rest[..len];
            self.i += len + 2;
            f(name, value)?;
        }
    }

    /// `</NAME` blanks `>`.
    #[inline]
    fn end_tag(&mut self, name: &[u8]) -> Option<()> {
        if !(self.eat(b"</") && self.eat(name)) {
            return None;
        }
        self.blanks();
        (self.peek()? == b'>').then(|| self.i += 1)
    }
}

/// The index of the first `stop` in `b`; `None` if there is none or an
/// `&` or `bad` comes first. A plain loop: the values and texts of records
/// are short, and memchr's set-up costs more than it saves on them.
#[inline]
fn until(b: &[u8], stop: u8, bad: u8) -> Option<usize> {
    for (i, &c) in b.iter().enumerate() {
        if c == stop {
            return Some(i);
        }
        if c == b'&' || c == bad {
            return None;
        }
    }
    None
}

/// A tag value as the fallback's [`parse_tag`] reads it, without its UTF-8
/// check and trimming for the common case; `None` where that fails.
#[inline]
fn int_value(t: &[u8]) -> Option<i64> {
    let mut s = 0;
    let mut e = t.len();
    while s < e && is_blank(t[s]) {
        s += 1;
    }
    while e > s && is_blank(t[e - 1]) {
        e -= 1;
    }
    let t = &t[s..e];
    let (neg, digits) = match t.first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    if digits.is_empty() || digits.len() > 18 {
        // No digits (an error) or possibly out of range: as the fallback does.
        return parse_tag(t);
    }
    let mut v: i64 = 0;
    for &d in digits {
        let x = d.wrapping_sub(b'0');
        if x > 9 {
            return None;
        }
        v = v * 10 + x as i64;
    }
    Some(if neg { -v } else { v })
}

/// Start tags seen before and what they said: streams repeat the same
/// `<record ...>` and `<tag label="X">` tags over and over, so a start tag
/// that equals a remembered one byte for byte is skipped with one
/// comparison instead of being parsed again (parsing a start tag depends on
/// its bytes alone).
#[derive(Default)]
pub(crate) struct Memo {
    /// The last data record start tag that has content (through its `>`;
    /// empty: none yet), its mode and interface.
    record: Vec<u8>,
    binary: bool,
    interface: String,
    /// Recent child start tags, most useful first.
    children: Vec<ChildTag>,
    /// The entry replaced next when `children` is full.
    next: usize,
}

const CHILD_MEMO: usize = 8;

/// A child start tag and what it says.
struct ChildTag {
    bytes: Box<[u8]>,
    kind: LabelKind,
    label: Label,
    /// The field's own `interface`.
    interface: Option<Box<str>>,
    empty: bool,
}

/// `b` if it is UTF-8; `None` (the fallback reports it) if not.
fn utf8(b: &[u8]) -> Option<&[u8]> {
    std::str::from_utf8(b).ok().map(|_| b)
}

/// Parses a child start tag at `c` (after its name); `None` for anything
/// unusual or wrong.
fn child_tag(
    c: &mut Cur<'_>,
    start: usize,
    kind: LabelKind,
    labels: &mut LabelCache,
) -> Option<ChildTag> {
    if !c.name_ends() {
        return None;
    }
    let mut label: Option<&[u8]> = None;
    let mut interface: Option<&[u8]> = None;
    let field = kind == LabelKind::Field;
    let close = c.attributes(|name, value| {
        // Every value is checked, a repeated one too (the fallback checks
        // each before the last one wins).
        match name {
            b"label" => label = Some(utf8(value)?),
            b"interface" if field => interface = Some(utf8(value)?),
            _ => {}
        }
        Some(())
    })?;
    let label = label.filter(|l| !l.is_empty())?;
    let label = labels.get(kind, std::str::from_utf8(label).ok()?);
    let interface = match interface {
        Some(i) => Some(Box::from(std::str::from_utf8(i).ok()?)),
        None => None,
    };
    Some(ChildTag {
        bytes: Box::from(&c.b[start..c.i]),
        kind,
        label,
        interface,
        empty: close == Close::Empty,
    })
}

/// Reads one item from the start of `b`; the item and the bytes it took,
/// or `None` (nothing decided: read it through the fallback).
pub(crate) fn scan(b: &[u8], cx: &mut ScanCtx<'_>) -> Option<(StreamItem, usize)> {
    let mut c = Cur { b, i: 0 };
    // Blanks and XML declarations before the record.
    loop {
        c.blanks();
        if c.b.len() - c.i < 6 {
            return None;
        }
        if c.eat(b"<?xml") {
            if !c.blanks() {
                return None;
            }
            // Up to the first `>`, which must end `?>`, with no markup inside.
            let rest = &c.b[c.i..];
            let gt = until(rest, b'>', b'<')?;
            if gt == 0 || rest[gt - 1] != b'?' {
                return None;
            }
            c.i += gt + 1;
            continue;
        }
        break;
    }
    let Memo {
        record: memo_record,
        binary: memo_binary,
        interface: memo_interface,
        children,
        next,
    } = &mut *cx.memo;
    if !memo_record.is_empty() && c.b[c.i..].starts_with(memo_record) {
        c.i += memo_record.len();
    } else {
        let start = c.i;
        if !(c.eat(b"<record") && c.name_ends()) {
            return None;
        }
        let (mut terminate, mut binary) = (false, false);
        let mut interface: &[u8] = DEFAULT_INTERFACE.as_bytes();
        let close = c.attributes(|name, value| {
            match name {
                b"type" => match value {
                    b"data" => terminate = false,
                    b"terminate" => terminate = true,
                    _ => return None, // an error: the fallback reports it
                },
                b"mode" => match value {
                    b"textual" => binary = false,
                    b"binary" => binary = true,
                    _ => return None,
                },
                // Checked even where unused, and each of a repeated
                // attribute's values, as the fallback does.
                b"interface" => interface = utf8(value)?,
                _ => {}
            }
            Some(())
        })?;
        let interface = std::str::from_utf8(interface).ok()?;
        if terminate {
            return Some((StreamItem::Terminate, c.i));
        }
        if close == Close::Empty {
            return Some((StreamItem::Data(Record::new()), c.i));
        }
        memo_record.clear();
        memo_record.extend_from_slice(&c.b[start..c.i]);
        *memo_binary = binary;
        memo_interface.clear();
        memo_interface.push_str(interface);
    }
    let binary = *memo_binary;
    let interface: &str = memo_interface;
    let mut rec = Record::new();
    loop {
        c.blanks();
        let rest = &c.b[c.i..];
        if rest.first() != Some(&b'<') {
            return None;
        }
        let k = match children.iter().position(|m| rest.starts_with(&m.bytes)) {
            Some(k) => {
                c.i += children[k].bytes.len();
                k
            }
            None => {
                let start = c.i;
                c.i += 1;
                let kind = match c.peek()? {
                    b't' if c.eat(b"tag") => LabelKind::Tag,
                    b'b' if c.eat(b"btag") => LabelKind::BTag,
                    b'f' if c.eat(b"field") => LabelKind::Field,
                    b'/' => {
                        c.i -= 1;
                        c.end_tag(b"record")?;
                        return Some((StreamItem::Data(rec), c.i));
                    }
                    _ => return None,
                };
                let tag = child_tag(&mut c, start, kind, cx.labels)?;
                if children.len() < CHILD_MEMO {
                    children.push(tag);
                    children.len() - 1
                } else {
                    let k = *next;
                    *next = (k + 1) % CHILD_MEMO;
                    children[k] = tag;
                    k
                }
            }
        };
        let tag = &children[k];
        let text: &[u8] = if tag.empty {
            b""
        } else {
            let rest = &c.b[c.i..];
            let len = until(rest, b'<', b'<')?;
            let text = &rest[..len];
            c.i += len;
            c.end_tag(match tag.kind {
                LabelKind::Tag => b"tag",
                LabelKind::BTag => b"btag",
                LabelKind::Field => b"field",
            })?;
            text
        };
        let value = if tag.kind == LabelKind::Field {
            let text = std::str::from_utf8(text).ok()?;
            let interface = tag.interface.as_deref().unwrap_or(interface);
            field_value(cx.codecs, cx.verbatim, interface, binary, text).ok()?
        } else {
            Value::Int(int_value(text)?)
        };
        if rec.has(tag.label) {
            return None;
        }
        rec.set(tag.label, value);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scan_str(s: &str) -> Option<(StreamItem, usize)> {
        let mut labels = LabelCache::default();
        let mut memo = Memo::default();
        let codecs = TextCodecs::new();
        let mut cx = ScanCtx {
            labels: &mut labels,
            memo: &mut memo,
            codecs: &codecs,
            verbatim: false,
        };
        scan(s.as_bytes(), &mut cx)
    }

    #[test]
    fn takes_exactly_one_item() {
        let one = "\n<?xml version=\"1.0\" ?><record xmlns=\"snet-home.org\" type=\"data\" mode=\"textual\" ><tag label=\"N\">3</tag></record>";
        let (item, n) = scan_str(&format!("{one}\n<record")).expect("common shape");
        assert_eq!(n, one.len());
        let StreamItem::Data(r) = item else {
            panic!("data")
        };
        assert_eq!(r.int(Label::tag("N")), Some(3));
        let (item, n) = scan_str("<record type='terminate'/>rest").expect("terminate");
        assert!(matches!(item, StreamItem::Terminate));
        assert_eq!(n, 26);
        let (item, n) = scan_str("<record type=\"terminate\">anything").expect("terminate");
        assert!(matches!(item, StreamItem::Terminate));
        assert_eq!(n, 25);
    }

    #[test]
    fn leaves_the_unusual_and_the_unfinished_to_the_fallback() {
        for s in [
            "<record><tag label='a'>1</tag>",              // not complete
            "<record><tag label='a'>1</tag></record",      // not complete
            "<!-- c --><record/>",                         // comment
            "<record><tag label='a'>&#49;</tag></record>", // reference
            "<record><tag label='a'><![CDATA[1]]></tag></record>",
            "<record><tag label='a'>x</tag></record>", // error
            "<record><tag label='a'>1</tag><tag label='a'>1</tag></record>",
            "<record><tag>1</tag></record>",
            "<record><tag label=''>1</tag></record>",
            "<record type='x'/>",
            "<record mode='x'/>",
            "<record type='data'type='data'/>",
            "<record label=a/>",
            "<record><tag label='a'>1</tags></record>",
            "<record><tag label='a'>1</tag>x</record>",
            "<recordx/>",
            "<record><tagx label='a'>1</tagx></record>",
            "<record a='&amp;'/>",
            "<?xml?><record/>",
            "<?xml version='1.0'><record/>",
        ] {
            assert!(scan_str(s).is_none(), "{s}");
        }
    }

    #[test]
    fn integers_read_as_the_fallback_reads_them() {
        for t in [
            "0",
            "-0",
            "+7",
            " \t12\r\n",
            "-9223372036854775808",
            "9223372036854775807",
            "9223372036854775808",
            "123456789012345678",
            "1234567890123456789",
            "",
            "-",
            "+",
            "+-1",
            "1 2",
            "\u{c}1",
            "0x10",
            "007",
        ] {
            assert_eq!(int_value(t.as_bytes()), parse_tag(t.as_bytes()), "{t:?}");
        }
    }
}
