//! Record streams: reading and writing S-Net's XML record format.
//!
//! The format (`shared/spec/records.md`) is a sequence of `<record>`
//! elements holding `<tag>`, `<btag>` and `<field>` children, ended by
//! `<record type="terminate" />`. This crate provides:
//! - [`reader`]: [`RecordReader`], a streaming reader with positioned errors;
//! - [`writer`]: [`RecordWriter`], the byte-exact writer;
//! - [`ctext`]: C4SNet field values as text (textual and binary mode), with
//!   C's own number formatting and parsing;
//! - [`compare`]: stream equivalence for tests ([`equivalent_multiset`]);
//! - [`position`] and [`error`]: where and what went wrong.
//!
//! The XML is parsed by quick-xml: streaming, well-kept, fast, and it
//! reports byte offsets, which [`position::LineCounter`] turns into lines
//! and columns. The binary mode layout is defined in [`ctext`] and in this
//! crate's README.

pub mod compare;
pub mod ctext;
pub mod error;
pub mod position;
pub mod reader;
pub mod writer;

pub use compare::{canonical, equivalent_multiset, field_string, read_all, read_all_verbatim};
pub use ctext::FieldError;
pub use error::{ReadError, ReadErrorKind};
pub use position::Position;
pub use reader::{Item, RecordReader, DEFAULT_INTERFACE};
pub use writer::RecordWriter;

use snet_core::{CData, Field, FieldValue};

/// The C4SNet data of a field: a data field (what the reader makes of a
/// C4SNet value) is copied, a C4SNet text field (textual or binary mode,
/// e.g. from a [`RecordReader::verbatim_fields`] reader) parsed.
pub fn decode_field(f: &Field) -> Result<CData, FieldError> {
    match f.value() {
        FieldValue::Data(d) => Ok(d.clone()),
        FieldValue::Text { interface, .. } if &**interface != DEFAULT_INTERFACE => {
            Err(FieldError::UnsupportedInterface {
                interface: interface.to_string(),
            })
        }
        FieldValue::Text {
            binary: true, text, ..
        } => ctext::parse_binary(text),
        FieldValue::Text {
            binary: false,
            text,
            ..
        } => ctext::parse_textual(text),
    }
}

/// The textual form of C4SNet data (`(int[2])1,2`), as the writer prints it
/// (before XML escaping).
pub fn encode_data(d: &CData) -> String {
    let mut out = Vec::new();
    ctext::format_textual(d, &mut out);
    // Textual values are ASCII plus Latin-1 characters encoded as UTF-8.
    String::from_utf8_lossy(&out).into_owned()
}

/// A text field holding `d` in textual mode, as a [`RecordReader::verbatim_fields`]
/// reader would read it.
pub fn text_field(d: &CData) -> Field {
    Field::text(DEFAULT_INTERFACE, false, &encode_data(d))
}

#[cfg(test)]
mod tests {
    use super::*;
    use snet_core::CType;

    #[test]
    fn decode_field_handles_every_form() {
        let t = Field::text("C4SNet", false, "(int[2])1,2");
        let b = Field::text("C4SNet", true, "(int[2])AQAAAAIAAAA=");
        let d = decode_field(&t).expect("textual");
        assert_eq!(d.ctype(), CType::Int);
        assert_eq!(decode_field(&b).expect("binary").bytes(), d.bytes());
        assert_eq!(
            decode_field(&Field::data(d.clone())).expect("data").bytes(),
            d.bytes()
        );
        assert_eq!(encode_data(&d), "(int[2])1,2");
        assert!(matches!(
            decode_field(&Field::text("SAC", false, "x")),
            Err(FieldError::UnsupportedInterface { .. })
        ));
        assert!(decode_field(&text_field(&d)).is_ok());
    }
}
