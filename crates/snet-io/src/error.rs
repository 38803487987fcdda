//! Errors of reading a record stream.

use std::fmt;
use std::io;
use std::sync::Arc;

use snet_core::{Label, LabelKind};

use crate::codec::FieldTextError;
use crate::position::Position;

/// A malformed or unreadable record stream, with the place it went wrong.
#[derive(Debug)]
pub struct ReadError {
    kind: ReadErrorKind,
    position: Position,
    source_name: Arc<str>,
}

/// An element that is not closed where it must be: the input ends inside
/// it (`found` is `None`), or another element starts or ends where its end
/// tag belongs (`found` is that tag, e.g. `</record>`).
#[derive(Debug)]
pub struct Unclosed {
    /// The element's name (`tag`, `record`, ...).
    pub name: String,
    /// Its start tag as it is shown, without `<` `>` (`tag label="x"`).
    /// The tag it was opened with, as shown in messages.
    pub opening: String,
    /// Where its start tag is.
    pub opened: Position,
    /// The tag found where its end tag belongs (`None`: the input ended).
    pub found: Option<String>,
}

/// What went wrong.
#[derive(Debug)]
#[non_exhaustive]
pub enum ReadErrorKind {
    /// The input could not be read.
    Io(Arc<io::Error>),
    /// The input is not well-formed XML (the parser's message).
    Syntax {
        /// The parser's message.
        message: String,
    },
    /// An element that is not closed where it must be (boxed: errors
    /// stay small for the `Result`s of the reading path).
    UnclosedElement(Box<Unclosed>),
    /// An element other than `record` (top level) or `tag`, `btag`,
    /// `field` (inside a record), or any element inside those.
    UnknownElement {
        /// The element's name.
        name: String,
    },
    /// An XML declaration or document type inside a record.
    Misplaced {
        /// Which (`an XML declaration`, ...).
        what: &'static str,
    },
    /// Non-blank text between elements.
    UnexpectedText {
        /// The text.
        text: String,
    },
    /// A `type` other than `data` or `terminate`.
    UnknownRecordType {
        /// The type given.
        ty: String,
    },
    /// A `mode` other than `textual` or `binary`.
    UnknownMode {
        /// The mode given.
        mode: String,
    },
    /// A `tag`, `btag` or `field` without a (non-empty) `label`.
    MissingLabel {
        /// The element (`tag`, `btag` or `field`).
        element: &'static str,
    },
    /// The same label twice in one record.
    DuplicateLabel {
        /// The label.
        label: Label,
    },
    /// A tag or binding tag whose value is not a decimal integer.
    NonIntegerTag {
        /// The tag's label.
        label: Label,
        /// Its value as written.
        value: String,
    },
    /// A tag or binding tag whose value is a decimal integer outside the
    /// range of tags (64-bit signed: `i64::MIN..=i64::MAX`).
    TagOutOfRange {
        /// The tag's label.
        label: Label,
        /// Its value as written.
        value: String,
    },
    /// A field whose value the text codec of its interface rejects.
    BadField {
        /// The field's label.
        label: Label,
        /// What the codec says.
        error: FieldTextError,
    },
    /// Text or a name that is not UTF-8.
    InvalidUtf8,
    /// An entity reference other than the XML ones and character references.
    UnknownEntity {
        /// The reference's text (between `&` and `;`).
        name: String,
    },
}

impl ReadError {
    pub(crate) fn new(kind: ReadErrorKind, position: Position, source_name: Arc<str>) -> ReadError {
        ReadError {
            kind,
            position,
            source_name,
        }
    }

    /// What went wrong.
    pub fn kind(&self) -> &ReadErrorKind {
        &self.kind
    }

    /// Where the offending record or element starts (or, for XML syntax
    /// errors, where the parser stopped).
    pub fn position(&self) -> Position {
        self.position
    }

    /// The input's name, as given to [`RecordReader::with_name`](crate::RecordReader::with_name).
    pub fn source_name(&self) -> &str {
        &self.source_name
    }
}

fn kind_word(label: Label) -> &'static str {
    match label.kind() {
        LabelKind::Field => "field",
        LabelKind::Tag => "tag",
        LabelKind::BTag => "binding tag",
    }
}

impl fmt::Display for ReadErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReadErrorKind::Io(e) => write!(f, "read error: {e}"),
            ReadErrorKind::Syntax { message } => write!(f, "malformed XML: {message}"),
            ReadErrorKind::UnclosedElement(u) => {
                let Unclosed {
                    name,
                    opening,
                    opened,
                    found,
                } = &**u;
                write!(
                    f,
                    "expected </{name}> to close <{opening}> opened at line {}, column {}",
                    opened.line, opened.column
                )?;
                match found {
                    Some(tag) => write!(f, ", found {tag}"),
                    None => f.write_str(", but the input ends"),
                }
            }
            ReadErrorKind::UnknownElement { name } => write!(f, "unknown element <{name}>"),
            ReadErrorKind::Misplaced { what } => write!(f, "{what} inside a record"),
            ReadErrorKind::UnexpectedText { text } => write!(f, "unexpected text \"{text}\""),
            ReadErrorKind::UnknownRecordType { ty } => {
                write!(
                    f,
                    "unknown record type \"{ty}\" (expected \"data\" or \"terminate\")"
                )
            }
            ReadErrorKind::UnknownMode { mode } => {
                write!(
                    f,
                    "unknown record mode \"{mode}\" (expected \"textual\" or \"binary\")"
                )
            }
            ReadErrorKind::MissingLabel { element } => write!(f, "<{element}> without a label"),
            ReadErrorKind::DuplicateLabel { label } => {
                write!(
                    f,
                    "{} \"{}\" appears twice in the record",
                    kind_word(*label),
                    label.name()
                )
            }
            ReadErrorKind::NonIntegerTag { label, value } => {
                write!(
                    f,
                    "{} \"{}\" has a non-integer value \"{value}\"",
                    kind_word(*label),
                    label.name()
                )
            }
            ReadErrorKind::TagOutOfRange { label, value } => {
                write!(
                    f,
                    "{} \"{}\" has the value {value}, outside the range of tags ({} to {}, 64-bit signed)",
                    kind_word(*label),
                    label.name(),
                    i64::MIN,
                    i64::MAX
                )
            }
            ReadErrorKind::BadField { label, error } => {
                write!(f, "field \"{}\": {error}", label.name())
            }
            ReadErrorKind::InvalidUtf8 => f.write_str("text is not valid UTF-8"),
            ReadErrorKind::UnknownEntity { name } => write!(f, "unknown entity \"&{name};\""),
        }
    }
}

impl fmt::Display for ReadError {
    /// `input:LINE:COL: message (byte B)`: the position once, as a
    /// compiler gives it, and the byte offset for tools that seek.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let p = &self.position;
        write!(
            f,
            "{}:{}: {} (byte {})",
            self.source_name, p, self.kind, p.offset
        )
    }
}

impl std::error::Error for ReadError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match &self.kind {
            ReadErrorKind::Io(e) => Some(&**e),
            ReadErrorKind::BadField { error, .. } => Some(&**error),
            _ => None,
        }
    }
}

const MAX_SHOWN: usize = 40;

/// `s` for an error message: shortened to about 40 bytes, shown as it is
/// but for control characters ([`snet_core::shown_text`]; for text
/// codecs' errors too).
pub fn shown(s: &str) -> String {
    if s.len() <= MAX_SHOWN {
        return snet_core::shown_text(s);
    }
    let mut end = MAX_SHOWN;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}...", snet_core::shown_text(&s[..end]))
}
