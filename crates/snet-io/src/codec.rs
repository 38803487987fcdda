//! Text codecs: the record format's text forms of one interface's values.
//!
//! The record format carries every field as text (`records.md`), but only
//! the language interface that owns a kind of value knows its text: C4SNet
//! writes `(int[2])1,2` in textual mode and base64 in binary mode. This
//! crate knows no box language, so the text of each interface is a
//! [`TextCodec`] registered in a [`TextCodecs`] and handed to the
//! [`RecordReader`](crate::RecordReader),
//! [`RecordWriter`](crate::RecordWriter) and the [`compare`](crate::compare)
//! functions. A field of an interface with no codec registered is kept as
//! the exact text it was read as ([`TextField`](snet_core::TextField)) and
//! written back verbatim; a field of an interface with one is parsed into
//! the interface's own value when read (so a malformed value is reported
//! with its position) and written in the codec's form.

use std::error::Error;
use std::fmt;
use std::sync::Arc;

use snet_core::{Field, FieldData};

/// Why a text is not a valid value of an interface (the reader reports it
/// as `field "A": <error>` with the field's position).
pub type FieldTextError = Box<dyn Error + Send + Sync>;

/// Reads and writes the values of one interface in the record format.
pub trait TextCodec: Send + Sync {
    /// The interface whose values this codec reads and writes (`C4SNet`).
    fn interface(&self) -> &str;

    /// Reads a value written in textual mode, or binary mode if `binary`
    /// (the text is XML-unescaped already).
    fn parse(&self, text: &str, binary: bool) -> Result<Field, FieldTextError>;

    /// Checks a value without keeping it (for a reader that keeps values
    /// as text, [`RecordReader::verbatim_fields`](crate::RecordReader::verbatim_fields)).
    fn validate(&self, text: &str, binary: bool) -> Result<(), FieldTextError> {
        self.parse(text, binary).map(drop)
    }

    /// Appends the text of `value` in textual or binary mode (not
    /// XML-escaped); `false`, having appended nothing, if `value` is not a
    /// value of this codec's.
    fn format(&self, value: &dyn FieldData, binary: bool, out: &mut Vec<u8>) -> bool;

    /// Appends the text `value` compares as in [`crate::compare`] (default:
    /// its textual form); `false` as for [`TextCodec::format`].
    fn canonical(&self, value: &dyn FieldData, out: &mut Vec<u8>) -> bool {
        self.format(value, false, out)
    }
}

/// The text codecs of a reader, a writer or a comparison, by interface.
/// Empty by default: every field is then kept and written verbatim.
#[derive(Clone, Default)]
pub struct TextCodecs(Vec<Arc<dyn TextCodec>>);

impl TextCodecs {
    /// No codecs.
    pub fn new() -> TextCodecs {
        TextCodecs::default()
    }

    /// Adds (or replaces) the codec of `codec.interface()`.
    pub fn add(&mut self, codec: Arc<dyn TextCodec>) {
        self.0.retain(|c| c.interface() != codec.interface());
        self.0.push(codec);
    }

    /// These codecs and `codec`.
    pub fn with(mut self, codec: Arc<dyn TextCodec>) -> TextCodecs {
        self.add(codec);
        self
    }

    /// The codec of `interface`, if one is registered.
    pub fn get(&self, interface: &str) -> Option<&dyn TextCodec> {
        self.0
            .iter()
            .find(|c| c.interface() == interface)
            .map(|c| &**c)
    }

    /// Whether no codec is registered.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl fmt::Debug for TextCodecs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(self.0.iter().map(|c| c.interface()))
            .finish()
    }
}

/// A toy codec for this crate's tests: interface `Up`, values are words
/// of ASCII letters kept in upper case; the binary form is the word
/// reversed.
#[cfg(test)]
pub(crate) mod toy {
    use std::any::Any;
    use std::sync::Arc;

    use snet_core::{Field, FieldData};

    use super::{FieldTextError, TextCodec, TextCodecs};

    pub struct Word(pub String);

    impl FieldData for Word {
        fn interface(&self) -> &str {
            "Up"
        }
        fn codec(&self) -> &str {
            "up"
        }
        fn encode_meta(&self, _out: &mut Vec<u8>) {}
        fn body(&self) -> &[u8] {
            self.0.as_bytes()
        }
        fn deep_copy(&self) -> Arc<dyn FieldData> {
            Arc::new(Word(self.0.clone()))
        }
        fn as_any(&self) -> &dyn Any {
            self
        }
        fn into_any(self: Arc<Self>) -> Arc<dyn Any + Send + Sync> {
            self
        }
    }

    pub struct Up;

    impl TextCodec for Up {
        fn interface(&self) -> &str {
            "Up"
        }
        fn parse(&self, text: &str, binary: bool) -> Result<Field, FieldTextError> {
            let t = text.trim();
            if t.is_empty() || !t.bytes().all(|b| b.is_ascii_alphabetic()) {
                return Err(format!("\"{}\" is not a word", crate::error::shown(t)).into());
            }
            let mut w = t.to_ascii_uppercase();
            if binary {
                w = w.chars().rev().collect();
            }
            Ok(Field::new(Arc::new(Word(w))))
        }
        fn format(&self, value: &dyn FieldData, binary: bool, out: &mut Vec<u8>) -> bool {
            let Some(Word(w)) = value.as_any().downcast_ref::<Word>() else {
                return false;
            };
            if binary {
                out.extend(w.bytes().rev());
            } else {
                out.extend_from_slice(w.as_bytes());
            }
            true
        }
    }

    pub fn codecs() -> TextCodecs {
        TextCodecs::new().with(Arc::new(Up))
    }

    /// The word a field holds, if it holds one.
    pub fn word(f: &Field) -> Option<&str> {
        f.downcast_ref::<Word>().map(|w| w.0.as_str())
    }
}
