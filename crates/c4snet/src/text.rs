//! C4SNet field values as text: the record format's forms, and
//! [`C4TextCodec`], the [`snet_io::TextCodec`] that makes the record
//! reader parse C4SNet values into [`C4Data`] and the writer print them
//! canonically ([`text_codecs`]).
//!
//! A C4SNet field value in a record stream starts with a header naming the
//! element type and, for arrays, the element count: `(int)5` is a scalar,
//! `(double[3])1.5,2.5,3.5` an array of three. What follows the header
//! depends on the record's `mode`:
//!
//! * **textual** — the elements separated by commas, numbers as C's `printf`
//!   prints them (`%hd %hu %d %u %ld %lu`, `%.32f` for `float`, `%.32le` for
//!   `double`, `%.32Le` for `long double`; a `pointer` as its address in
//!   decimal, `%lu`). `char` and `unsigned char` elements are single raw
//!   characters, still comma separated: `(char[3])a,,,b` holds `a`, `,`, `b`.
//!   A char element is one byte; bytes above 0x7f are written as the Unicode
//!   character with that code point (Latin-1), so the stream stays UTF-8.
//! * **binary** — standard, padded base64 (RFC 4648 §4; whitespace inside is
//!   ignored, missing padding is accepted) of the elements' bytes, each
//!   element little-endian in its C4SNet slot size ([`CType::size`]):
//!   `(int[2])AQAAAAIAAAA=` is `{1, 2}`. `long double` is the platform's
//!   16-byte slot (x86_64: the 10-byte x87 value then 6 zero bytes).
//!
//! A count of `[1]` is accepted and means a scalar; `[0]` an empty array.
//! Whitespace around the header, the count and each number is ignored.
//!
//! Reading is strict where C4SNet's `sscanf` would silently misread: an
//! unknown type, a wrong element count, an element that is not a number of
//! the type or does not fit it, and text after the last element are errors
//! ([`FieldError`]). Numbers are parsed by C's own `strtof`/`strtod`/
//! `strtold` (decimal, hex floats, `inf`, `nan`) and printed by C's own
//! `snprintf`, so values are bit-for-bit what a C program reads and writes.
//! (Both follow the C locale, which Rust programs keep unless C code calls
//! `setlocale`.)

use std::ffi::{c_char, CStr};
use std::fmt;

use base64::engine::general_purpose::{GeneralPurpose, GeneralPurposeConfig};
use base64::engine::DecodePaddingMode;
use base64::Engine as _;
use snet_core::{Field, FieldData, TextField};
use snet_io::error::shown;
use snet_io::{FieldTextError, TextCodec, TextCodecs};

use crate::data::{C4Data, CData, CType, INTERFACE};

/// Why a field value is not a valid C4SNet value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FieldError {
    /// The value does not start with `(TYPE)` or `(TYPE[N])`.
    MissingType,
    /// The type name is not a C4SNet type.
    UnknownType {
        /// The name given.
        name: String,
    },
    /// The `[N]` element count is not a non-negative decimal number.
    BadCount {
        /// The count as written.
        text: String,
    },
    /// The header announces `expected` elements but the value holds `found`.
    WrongCount {
        /// The count the header announces.
        expected: usize,
        /// The count of elements given.
        found: usize,
    },
    /// Element `index` (0-based) is not a valid value of `ctype`.
    BadElement {
        /// The element's index (0-based).
        index: usize,
        /// The element type.
        ctype: CType,
        /// The element as written.
        text: String,
    },
    /// A binary value is not valid base64.
    BadBase64,
    /// A binary value decodes to the wrong number of bytes.
    WrongByteCount {
        /// The bytes the header's type and count need.
        expected: usize,
        /// The bytes decoded.
        found: usize,
    },
    /// The field belongs to another box language than C4SNet.
    UnsupportedInterface {
        /// The field's interface.
        interface: String,
    },
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FieldError::MissingType => {
                f.write_str("value does not start with \"(TYPE)\" or \"(TYPE[N])\"")
            }
            FieldError::UnknownType { name } => write!(f, "unknown field type \"{name}\""),
            FieldError::BadCount { text } => write!(f, "array size \"{text}\" is not a number"),
            FieldError::WrongCount { expected, found } => {
                write!(
                    f,
                    "wrong element count: the type announces {expected}, the value has {found}"
                )
            }
            FieldError::BadElement { index, ctype, text } => {
                write!(
                    f,
                    "element {index} (\"{text}\") is not a valid {}",
                    ctype.c_name()
                )
            }
            FieldError::BadBase64 => f.write_str("binary value is not valid base64"),
            FieldError::WrongByteCount { expected, found } => {
                write!(
                    f,
                    "binary value has {found} bytes, the type announces {expected}"
                )
            }
            FieldError::UnsupportedInterface { interface } => {
                write!(
                    f,
                    "field of interface \"{interface}\" is not a C4SNet field"
                )
            }
        }
    }
}

impl std::error::Error for FieldError {}

/// The `(TYPE)` / `(TYPE[N])` header of a field value.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Header {
    /// The element type.
    pub ctype: CType,
    /// Element count (1 for the scalar form).
    pub len: usize,
    /// Byte offset of the first byte after `)`.
    pub body: usize,
}

/// Looks up a C type name, tolerating extra whitespace (`unsigned  int`).
fn lookup_type(name: &str) -> Option<CType> {
    if let Some(t) = CType::from_c_name(name) {
        return Some(t);
    }
    CType::ALL
        .iter()
        .copied()
        .find(|t| t.c_name().split(' ').eq(name.split_ascii_whitespace()))
}

/// Parses the header of a C4SNet value.
pub fn parse_header(text: &str) -> Result<Header, FieldError> {
    let start = text.len() - text.trim_start().len();
    let rest = &text[start..];
    if !rest.starts_with('(') {
        return Err(FieldError::MissingType);
    }
    let close = rest.find(')').ok_or(FieldError::MissingType)?;
    let inner = &rest[1..close];
    let (name, len) = match inner.find('[') {
        None => (inner, 1),
        Some(open) => {
            let after = &inner[open + 1..];
            let end = after
                .find(']')
                .ok_or_else(|| FieldError::BadCount { text: shown(after) })?;
            if !after[end + 1..].trim().is_empty() {
                return Err(FieldError::MissingType);
            }
            let count = after[..end].trim();
            let len = match count.bytes().all(|b| b.is_ascii_digit()) {
                true => count.parse::<usize>().ok(),
                false => None,
            };
            (
                &inner[..open],
                len.ok_or_else(|| FieldError::BadCount { text: shown(count) })?,
            )
        }
    };
    let ctype = lookup_type(name).ok_or_else(|| FieldError::UnknownType {
        name: shown(name.trim()),
    })?;
    Ok(Header {
        ctype,
        len,
        body: start + close + 1,
    })
}

// ---------------------------------------------------------------------------
// C number conversions

extern "C" {
    fn c4snet_ldouble_format(buf: *mut c_char, cap: usize, src: *const u8) -> libc::c_int;
    fn c4snet_ldouble_parse(s: *const c_char, dst: *mut u8) -> usize;
}

/// Runs `f` on a NUL-terminated copy of `s` (on the stack when short).
fn with_cstr<T>(s: &str, f: impl FnOnce(*const c_char) -> T) -> T {
    let mut stack = [0u8; 96];
    if s.len() < stack.len() {
        stack[..s.len()].copy_from_slice(s.as_bytes());
        f(stack.as_ptr().cast())
    } else {
        let mut heap = Vec::with_capacity(s.len() + 1);
        heap.extend_from_slice(s.as_bytes());
        heap.push(0);
        f(heap.as_ptr().cast())
    }
}

/// Parses all of `s` (already trimmed, non-empty) with a C `strto*`
/// function; `None` unless it consumed every byte.
fn c_parse<T>(s: &str, parse: impl FnOnce(*const c_char, *mut *mut c_char) -> T) -> Option<T> {
    if s.is_empty() {
        return None;
    }
    with_cstr(s, |p| {
        let mut end: *mut c_char = std::ptr::null_mut();
        let v = parse(p, &mut end);
        // `end` points into the buffer `p` points to (strto* contract).
        (end as usize - p as usize == s.len()).then_some(v)
    })
}

fn parse_f32(s: &str) -> Option<f32> {
    // SAFETY: `p` is a valid NUL-terminated string, `end` a valid out-pointer.
    c_parse(s, |p, end| unsafe { libc::strtof(p, end) })
}

fn parse_f64(s: &str) -> Option<f64> {
    // SAFETY: as in `parse_f32`.
    c_parse(s, |p, end| unsafe { libc::strtod(p, end) })
}

fn parse_ldouble(s: &str) -> Option<[u8; 16]> {
    if s.is_empty() {
        return None;
    }
    let mut out = [0u8; 16];
    // SAFETY: `p` is NUL-terminated; `out` has the 16 bytes the helper writes.
    let used = with_cstr(s, |p| unsafe { c4snet_ldouble_parse(p, out.as_mut_ptr()) });
    (used == s.len()).then_some(out)
}

/// Appends C's `snprintf(fmt, v)` to `out`.
fn c_format(out: &mut Vec<u8>, fmt: &CStr, v: f64) {
    let mut buf = [0u8; 128];
    // SAFETY: `buf` has the capacity passed; `fmt` is a NUL-terminated format
    // taking exactly one `double` argument.
    let n = unsafe { libc::snprintf(buf.as_mut_ptr().cast(), buf.len(), fmt.as_ptr(), v) };
    let n = usize::try_from(n).unwrap_or(0);
    if n < buf.len() {
        out.extend_from_slice(&buf[..n]);
    } else {
        let mut big = vec![0u8; n + 1];
        // SAFETY: as above, with a buffer of the size snprintf asked for.
        let m = unsafe { libc::snprintf(big.as_mut_ptr().cast(), big.len(), fmt.as_ptr(), v) };
        out.extend_from_slice(&big[..usize::try_from(m).unwrap_or(0).min(n)]);
    }
}

fn format_ldouble(out: &mut Vec<u8>, slot: &[u8]) {
    debug_assert_eq!(slot.len(), 16);
    let mut buf = [0u8; 128];
    // SAFETY: `buf` has the capacity passed; `slot` is a 16-byte long double slot.
    let n = unsafe { c4snet_ldouble_format(buf.as_mut_ptr().cast(), buf.len(), slot.as_ptr()) };
    let n = usize::try_from(n).unwrap_or(0);
    if n < buf.len() {
        out.extend_from_slice(&buf[..n]);
    } else {
        let mut big = vec![0u8; n + 1];
        // SAFETY: as above, with a buffer of the size snprintf asked for.
        let m = unsafe { c4snet_ldouble_format(big.as_mut_ptr().cast(), big.len(), slot.as_ptr()) };
        out.extend_from_slice(&big[..usize::try_from(m).unwrap_or(0).min(n)]);
    }
}

// ---------------------------------------------------------------------------
// Textual mode

/// Parses one textual element of a numeric type into its native bytes.
fn parse_number(ctype: CType, s: &str, out: &mut [u8]) -> bool {
    let s = s.trim();
    macro_rules! int {
        ($t:ty, $via:ty) => {
            match s.parse::<$via>().ok().and_then(|v| <$t>::try_from(v).ok()) {
                Some(v) => {
                    out.copy_from_slice(&v.to_ne_bytes());
                    true
                }
                None => false,
            }
        };
    }
    match ctype {
        CType::Short => int!(i16, i64),
        CType::UShort => int!(u16, u64),
        CType::Int => int!(i32, i64),
        CType::UInt => int!(u32, u64),
        CType::Long => int!(i64, i64),
        CType::ULong => int!(u64, u64),
        CType::Pointer => {
            let v = match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
                Some(hex) if !hex.starts_with('+') => u64::from_str_radix(hex, 16).ok(),
                _ => s.parse::<u64>().ok(),
            };
            match v {
                Some(v) => {
                    out.copy_from_slice(&v.to_ne_bytes());
                    true
                }
                None => false,
            }
        }
        CType::Float => match parse_f32(s) {
            Some(v) => {
                out.copy_from_slice(&v.to_ne_bytes());
                true
            }
            None => false,
        },
        CType::Double => match parse_f64(s) {
            Some(v) => {
                out.copy_from_slice(&v.to_ne_bytes());
                true
            }
            None => false,
        },
        CType::LDouble => match parse_ldouble(s) {
            Some(v) => {
                out.copy_from_slice(&v);
                true
            }
            None => false,
        },
        CType::Char | CType::UChar => unreachable!("char elements are parsed positionally"),
    }
}

/// Parses the elements of a textual value, handing each element's native
/// bytes to `sink(index, bytes)`. Counts before converting, so `sink` is
/// called only when the count matches.
fn parse_body(
    h: &Header,
    body: &str,
    mut sink: impl FnMut(usize, &[u8]),
) -> Result<(), FieldError> {
    let ctype = h.ctype;
    if matches!(ctype, CType::Char | CType::UChar) {
        // Positional: N characters with a comma between each two; the
        // separators are not searched for, so `,` is a valid element.
        let mut chars = body.chars();
        for i in 0..h.len {
            if i > 0 && chars.next() != Some(',') {
                return Err(FieldError::WrongCount {
                    expected: h.len,
                    found: i,
                });
            }
            let c = chars.next().ok_or(FieldError::WrongCount {
                expected: h.len,
                found: i,
            })?;
            let b = u8::try_from(u32::from(c)).map_err(|_| FieldError::BadElement {
                index: i,
                ctype,
                text: c.to_string(),
            })?;
            sink(i, &[b]);
        }
        let rest = chars.as_str();
        if !rest.trim().is_empty() {
            let found = h.len + rest.trim_end().chars().count().div_ceil(2);
            return Err(FieldError::WrongCount {
                expected: h.len,
                found,
            });
        }
        return Ok(());
    }
    let found = if body.trim().is_empty() {
        0
    } else {
        memchr::memchr_iter(b',', body.as_bytes()).count() + 1
    };
    if found != h.len {
        return Err(FieldError::WrongCount {
            expected: h.len,
            found,
        });
    }
    if found == 0 {
        return Ok(());
    }
    let mut bytes = [0u8; 16];
    let slot = &mut bytes[..ctype.size()];
    for (i, piece) in body.split(',').enumerate() {
        if !parse_number(ctype, piece, slot) {
            return Err(FieldError::BadElement {
                index: i,
                ctype,
                text: shown(piece.trim()),
            });
        }
        sink(i, slot);
    }
    Ok(())
}

/// Checks that `text` is a valid textual C4SNet value without building it.
pub fn validate_textual(text: &str) -> Result<Header, FieldError> {
    let h = parse_header(text)?;
    parse_body(&h, &text[h.body..], |_, _| {})?;
    Ok(h)
}

/// Parses a textual C4SNet value (`(int[2])1,2`), in one pass.
pub fn parse_textual(text: &str) -> Result<CData, FieldError> {
    let h = parse_header(text)?;
    let body = &text[h.body..];
    if h.len > body.len() {
        // Every element takes at least one byte, so the count is wrong; do
        // not let it size an allocation. `parse_body` says how it is wrong.
        parse_body(&h, body, |_, _| {})?;
        return Err(FieldError::WrongCount {
            expected: h.len,
            found: body.len(),
        });
    }
    let mut d = CData::zeroed(h.ctype, h.len);
    let size = h.ctype.size();
    let bytes = d.bytes_mut();
    parse_body(&h, body, |i, b| {
        bytes[i * size..(i + 1) * size].copy_from_slice(b)
    })?;
    Ok(d)
}

fn push_header(out: &mut Vec<u8>, ctype: CType, len: usize) {
    out.push(b'(');
    out.extend_from_slice(ctype.c_name().as_bytes());
    if len != 1 {
        out.push(b'[');
        out.extend_from_slice(itoa::Buffer::new().format(len).as_bytes());
        out.push(b']');
    }
    out.push(b')');
}

/// Appends the textual form of `d` (not XML-escaped) to `out`.
pub fn format_textual(d: &CData, out: &mut Vec<u8>) {
    let ctype = d.ctype();
    push_header(out, ctype, d.len());
    let mut num = itoa::Buffer::new();
    for (i, e) in d.bytes().chunks_exact(ctype.size()).enumerate() {
        if i > 0 {
            out.push(b',');
        }
        macro_rules! int {
            ($t:ty) => {{
                let v = <$t>::from_ne_bytes(e.try_into().expect("element slot size"));
                out.extend_from_slice(num.format(v).as_bytes());
            }};
        }
        match ctype {
            CType::Char | CType::UChar => {
                let mut utf8 = [0u8; 2];
                out.extend_from_slice(char::from(e[0]).encode_utf8(&mut utf8).as_bytes());
            }
            CType::Short => int!(i16),
            CType::UShort => int!(u16),
            CType::Int => int!(i32),
            CType::UInt => int!(u32),
            CType::Long => int!(i64),
            CType::ULong | CType::Pointer => int!(u64),
            CType::Float => {
                let v = f32::from_ne_bytes(e.try_into().expect("element slot size"));
                c_format(out, c"%.32f", f64::from(v));
            }
            CType::Double => {
                let v = f64::from_ne_bytes(e.try_into().expect("element slot size"));
                c_format(out, c"%.32le", v);
            }
            CType::LDouble => format_ldouble(out, e),
        }
    }
}

// ---------------------------------------------------------------------------
// Binary mode

const BASE64: GeneralPurpose = GeneralPurpose::new(
    &base64::alphabet::STANDARD,
    GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent),
);

/// Swaps each element between native and little-endian byte order (a no-op
/// on little-endian hosts).
fn swap_to_le(ctype: CType, bytes: &mut [u8]) {
    if cfg!(target_endian = "big") && ctype.size() > 1 {
        for e in bytes.chunks_exact_mut(ctype.size()) {
            e.reverse();
        }
    }
}

/// Decodes the base64 body of a binary value into little-endian bytes.
fn decode_binary_body(h: &Header, body: &str) -> Result<Vec<u8>, FieldError> {
    let decoded = if body.bytes().any(|b| b.is_ascii_whitespace()) {
        let compact: Vec<u8> = body.bytes().filter(|b| !b.is_ascii_whitespace()).collect();
        BASE64.decode(compact)
    } else {
        BASE64.decode(body)
    }
    .map_err(|_| FieldError::BadBase64)?;
    let expected = h.len.saturating_mul(h.ctype.size());
    if decoded.len() != expected {
        return Err(FieldError::WrongByteCount {
            expected,
            found: decoded.len(),
        });
    }
    Ok(decoded)
}

/// Checks that `text` is a valid binary C4SNet value.
pub fn validate_binary(text: &str) -> Result<Header, FieldError> {
    let h = parse_header(text)?;
    decode_binary_body(&h, &text[h.body..])?;
    Ok(h)
}

/// Parses a binary C4SNet value (`(int[2])AQAAAAIAAAA=`).
pub fn parse_binary(text: &str) -> Result<CData, FieldError> {
    let h = parse_header(text)?;
    let mut bytes = decode_binary_body(&h, &text[h.body..])?;
    swap_to_le(h.ctype, &mut bytes);
    Ok(CData::from_bytes(h.ctype, h.len, &bytes))
}

/// Appends the binary form of `d` to `out`.
pub fn format_binary(d: &CData, out: &mut Vec<u8>) {
    push_header(out, d.ctype(), d.len());
    if cfg!(target_endian = "big") {
        let mut le = d.bytes().to_vec();
        swap_to_le(d.ctype(), &mut le);
        encode_base64(&le, out);
    } else {
        encode_base64(d.bytes(), out);
    }
}

fn encode_base64(bytes: &[u8], out: &mut Vec<u8>) {
    let start = out.len();
    out.resize(start + bytes.len().div_ceil(3) * 4, 0);
    let n = BASE64
        .encode_slice(bytes, &mut out[start..])
        .expect("buffer sized for base64");
    out.truncate(start + n);
}

// ---------------------------------------------------------------------------
// The record format's codec

/// The text codec of C4SNet values (interface `C4SNet`): parses textual and
/// binary values into [`C4Data`], writes a [`C4Data`] in the canonical form
/// of the mode.
pub struct C4TextCodec;

impl TextCodec for C4TextCodec {
    fn interface(&self) -> &str {
        INTERFACE
    }
    fn parse(&self, text: &str, binary: bool) -> Result<Field, FieldTextError> {
        let d = if binary {
            parse_binary(text)
        } else {
            parse_textual(text)
        };
        Ok(C4Data::new(d?).into_field())
    }
    fn validate(&self, text: &str, binary: bool) -> Result<(), FieldTextError> {
        if binary {
            validate_binary(text)?;
        } else {
            validate_textual(text)?;
        }
        Ok(())
    }
    fn format(&self, value: &dyn FieldData, binary: bool, out: &mut Vec<u8>) -> bool {
        let Some(d) = value.as_any().downcast_ref::<C4Data>() else {
            return false;
        };
        if binary {
            format_binary(d, out)
        } else {
            format_textual(d, out)
        }
        true
    }
}

/// The text codecs of a program whose fields are C4SNet's: for
/// `RecordReader::with_codecs`, `RecordWriter::with_codecs` and the
/// `snet_io::compare` functions.
pub fn text_codecs() -> TextCodecs {
    TextCodecs::new().with(std::sync::Arc::new(C4TextCodec))
}

/// The C4SNet data of a field: a [`C4Data`] (what a reader with
/// [`text_codecs`] makes of a C4SNet value) is copied, a C4SNet text field
/// (textual or binary mode, e.g. from a verbatim reader or one without the
/// codec) parsed.
pub fn decode_field(f: &Field) -> Result<CData, FieldError> {
    if let Some(d) = f.downcast_ref::<C4Data>() {
        return Ok(d.data().clone());
    }
    match f.downcast_ref::<TextField>() {
        Some(t) if t.interface() == INTERFACE && t.binary() => parse_binary(t.text()),
        Some(t) if t.interface() == INTERFACE => parse_textual(t.text()),
        _ => Err(FieldError::UnsupportedInterface {
            interface: f.interface().to_string(),
        }),
    }
}

/// The textual form of C4SNet data (`(int[2])1,2`), as the writer prints it
/// (before XML escaping).
pub fn encode_data(d: &CData) -> String {
    let mut out = Vec::new();
    format_textual(d, &mut out);
    // Textual values are ASCII plus Latin-1 characters encoded as UTF-8.
    String::from_utf8_lossy(&out).into_owned()
}

/// A text field holding `d` in textual mode, as a verbatim reader would
/// read it.
pub fn text_field(d: &CData) -> Field {
    Field::text(INTERFACE, false, &encode_data(d))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(d: &CData) -> String {
        let mut v = Vec::new();
        format_textual(d, &mut v);
        String::from_utf8(v).expect("textual form is UTF-8")
    }

    fn bin(d: &CData) -> String {
        let mut v = Vec::new();
        format_binary(d, &mut v);
        String::from_utf8(v).expect("binary form is ASCII")
    }

    fn data<T: Copy, const N: usize>(ctype: CType, xs: [T; N], to: impl Fn(T) -> Vec<u8>) -> CData {
        let bytes: Vec<u8> = xs.iter().flat_map(|&x| to(x)).collect();
        CData::from_bytes(ctype, N, &bytes)
    }

    #[test]
    fn headers() {
        assert_eq!(
            parse_header("(int)5"),
            Ok(Header {
                ctype: CType::Int,
                len: 1,
                body: 5
            })
        );
        assert_eq!(
            parse_header("  ( unsigned   long [ 3 ] )1,2,3").map(|h| (h.ctype, h.len)),
            Ok((CType::ULong, 3))
        );
        assert_eq!(parse_header("(long double[0])").map(|h| h.len), Ok(0));
        assert_eq!(parse_header("int)5"), Err(FieldError::MissingType));
        assert_eq!(parse_header("(int"), Err(FieldError::MissingType));
        assert_eq!(
            parse_header("(bool)1"),
            Err(FieldError::UnknownType {
                name: "bool".into()
            })
        );
        assert_eq!(
            parse_header("(int[x])1"),
            Err(FieldError::BadCount { text: "x".into() })
        );
        assert_eq!(
            parse_header("(int[-1])1"),
            Err(FieldError::BadCount { text: "-1".into() })
        );
        assert_eq!(
            parse_header("(int[99999999999999999999999])1"),
            Err(FieldError::BadCount {
                text: "99999999999999999999999".into()
            })
        );
    }

    #[test]
    fn integers_round_trip_and_check_range() {
        let d = parse_textual("(int[4]) 1, -2 ,+3,2147483647").expect("valid");
        assert_eq!(text(&d), "(int[4])1,-2,3,2147483647");
        assert_eq!(
            text(&parse_textual("(short)-32768").expect("valid")),
            "(short)-32768"
        );
        assert_eq!(
            text(&parse_textual("(unsigned short)65535").expect("valid")),
            "(unsigned short)65535"
        );
        assert_eq!(
            text(&parse_textual("(unsigned int)4294967295").expect("valid")),
            "(unsigned int)4294967295"
        );
        assert_eq!(
            text(&parse_textual("(long)-9223372036854775808").expect("valid")),
            "(long)-9223372036854775808"
        );
        assert_eq!(
            text(&parse_textual("(unsigned long)18446744073709551615").expect("valid")),
            "(unsigned long)18446744073709551615"
        );
        assert_eq!(
            text(&parse_textual("(pointer)0x10").expect("valid")),
            "(pointer)16"
        );
        assert_eq!(text(&parse_textual("(int[1])7").expect("valid")), "(int)7");
        assert_eq!(text(&parse_textual("(int[0])").expect("valid")), "(int[0])");
        assert_eq!(
            validate_textual("(int)").err(),
            Some(FieldError::WrongCount {
                expected: 1,
                found: 0
            })
        );
        for bad in [
            "(short)32768",
            "(unsigned int)-1",
            "(int)1.5",
            "(int)+",
            "(int)0x10",
            "(int) 1 2",
        ] {
            assert!(
                matches!(
                    parse_textual(bad),
                    Err(FieldError::BadElement { index: 0, .. })
                ),
                "{bad}"
            );
        }
    }

    #[test]
    fn element_counts_are_checked() {
        assert_eq!(
            validate_textual("(int[3])1,2").err(),
            Some(FieldError::WrongCount {
                expected: 3,
                found: 2
            })
        );
        assert_eq!(
            validate_textual("(int)1,2").err(),
            Some(FieldError::WrongCount {
                expected: 1,
                found: 2
            })
        );
        assert_eq!(
            validate_textual("(int[2])").err(),
            Some(FieldError::WrongCount {
                expected: 2,
                found: 0
            })
        );
        assert_eq!(
            validate_textual("(char[3])a,b").err(),
            Some(FieldError::WrongCount {
                expected: 3,
                found: 2
            })
        );
        assert_eq!(
            validate_textual("(char[2])a,b,c,d").err(),
            Some(FieldError::WrongCount {
                expected: 2,
                found: 4
            })
        );
        assert!(matches!(
            validate_textual("(double[2])1.0,x"),
            Err(FieldError::BadElement { index: 1, .. })
        ));
    }

    #[test]
    fn counts_larger_than_the_text_are_rejected_before_allocating() {
        assert_eq!(
            parse_textual("(int[5])1").err(),
            Some(FieldError::WrongCount {
                expected: 5,
                found: 1
            })
        );
        assert_eq!(
            parse_textual("(char[99999999999])a").err(),
            Some(FieldError::WrongCount {
                expected: 99999999999,
                found: 1
            })
        );
        assert_eq!(
            parse_textual("(double)").err(),
            Some(FieldError::WrongCount {
                expected: 1,
                found: 0
            })
        );
    }

    #[test]
    fn chars_are_positional_and_latin1() {
        let d = parse_textual("(char[5])a,,,<,é,\u{1}").expect("valid");
        assert_eq!(d.bytes(), b"a,<\xe9\x01");
        assert_eq!(text(&d), "(char[5])a,,,<,é,\u{1}");
        assert_eq!(
            parse_textual("(unsigned char) ").expect("valid").bytes(),
            b" "
        );
        assert_eq!(parse_textual("(char)x \n").expect("valid").bytes(), b"x");
        assert!(matches!(
            parse_textual("(char)€"),
            Err(FieldError::BadElement { .. })
        ));
    }

    #[test]
    fn floats_print_like_printf() {
        let d = data(CType::Double, [1.5f64, -0.0, 1e300], |x| {
            x.to_ne_bytes().to_vec()
        });
        assert_eq!(
            text(&d),
            "(double[3])1.50000000000000000000000000000000e+00,-0.00000000000000000000000000000000e+00,\
             1.00000000000000005250476025520442e+300"
        );
        let f = data(CType::Float, [0.1f32], |x| x.to_ne_bytes().to_vec());
        assert_eq!(text(&f), "(float)0.10000000149011611938476562500000");
        let l = parse_textual("(long double)1.5").expect("valid");
        assert_eq!(
            text(&l),
            "(long double)1.50000000000000000000000000000000e+00"
        );
        let inf = parse_textual("(double[3])inf,-INFINITY,0x1p-2").expect("valid");
        assert_eq!(
            text(&inf),
            "(double[3])inf,-inf,2.50000000000000000000000000000000e-01"
        );
    }

    #[test]
    fn every_type_round_trips_textually() {
        let samples: [(&str, CType); 12] = [
            ("(char[3])a,b,&", CType::Char),
            ("(unsigned char[2])\u{ff},\u{0}", CType::UChar),
            ("(short[2])-1,2", CType::Short),
            ("(unsigned short)9", CType::UShort),
            ("(int)-7", CType::Int),
            ("(unsigned int[2])0,1", CType::UInt),
            ("(long)5", CType::Long),
            ("(unsigned long)5", CType::ULong),
            ("(float[2])1.25,-3", CType::Float),
            ("(double)3.14159", CType::Double),
            ("(long double[2])1e-4000,2.5", CType::LDouble),
            ("(pointer)12345", CType::Pointer),
        ];
        for (src, ctype) in samples {
            let d = parse_textual(src).expect(src);
            assert_eq!(d.ctype(), ctype);
            let t = text(&d);
            let again = parse_textual(&t).expect(&t);
            assert_eq!(again.bytes(), d.bytes(), "{src} -> {t}");
            assert_eq!(text(&again), t);
        }
    }

    #[test]
    fn binary_mode_round_trips() {
        let d = data(CType::Int, [1i32, 2], |x| x.to_le_bytes().to_vec());
        assert_eq!(bin(&d), "(int[2])AQAAAAIAAAA=");
        assert_eq!(
            parse_binary("(int[2]) AQAA\nAAIAAAA")
                .expect("valid")
                .bytes(),
            d.bytes()
        );
        assert_eq!(
            parse_binary("(int[2])AQAAAA==").err(),
            Some(FieldError::WrongByteCount {
                expected: 8,
                found: 4
            })
        );
        assert_eq!(parse_binary("(int)!!!!").err(), Some(FieldError::BadBase64));
        for ctype in CType::ALL {
            let bytes: Vec<u8> = (0..ctype.size() * 3).map(|i| i as u8).collect();
            let d = CData::from_bytes(ctype, 3, &bytes);
            assert_eq!(parse_binary(&bin(&d)).expect("valid").bytes(), &bytes[..]);
        }
    }

    #[test]
    fn decode_field_handles_every_form() {
        let t = Field::text("C4SNet", false, "(int[2])1,2");
        let b = Field::text("C4SNet", true, "(int[2])AQAAAAIAAAA=");
        let d = decode_field(&t).expect("textual");
        assert_eq!(d.ctype(), CType::Int);
        assert_eq!(decode_field(&b).expect("binary").bytes(), d.bytes());
        assert_eq!(
            decode_field(&crate::data_field(d.clone()))
                .expect("data")
                .bytes(),
            d.bytes()
        );
        assert_eq!(encode_data(&d), "(int[2])1,2");
        assert!(matches!(
            decode_field(&Field::text("SAC", false, "x")),
            Err(FieldError::UnsupportedInterface { .. })
        ));
        assert!(decode_field(&text_field(&d)).is_ok());
    }

    #[test]
    fn the_codec_parses_validates_and_formats() {
        let c = C4TextCodec;
        let f = c.parse("(int[2]) 1, 2", false).expect("valid");
        let v = f.get().expect("local");
        let mut out = Vec::new();
        assert!(c.format(&**v, false, &mut out));
        assert_eq!(out, b"(int[2])1,2");
        out.clear();
        assert!(c.format(&**v, true, &mut out));
        assert_eq!(out, b"(int[2])AQAAAAIAAAA=");
        assert!(c.parse("(int[2])AQAAAAIAAAA=", true).is_ok());
        assert!(c.validate("(int[2])1", false).is_err());
        assert!(c.validate("(int[2])AQAAAA==", true).is_err());
        let e = c.parse("(bool)1", false).expect_err("bad type");
        assert_eq!(e.to_string(), "unknown field type \"bool\"");
        assert!(e.downcast_ref::<FieldError>().is_some());
        let text = Field::text("C4SNet", false, "(int)1");
        out.clear();
        assert!(!c.format(&**text.get().expect("local"), false, &mut out));
        assert!(out.is_empty());
    }
}
