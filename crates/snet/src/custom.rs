//! Field values of another box language: values the embedding program
//! keeps as they are (a Python object, say) inside a record, with a codec
//! of its own for when they cross to another node.
//!
//! The engine moves a field without looking into it; only when a field
//! crosses between nodes does it need the value's bytes (and, on the other
//! side, a way back from bytes to a value). A [`CustomValue`] gives those
//! bytes ([`CustomValue::encode`], asked at most once per value), and the
//! [`CustomCodec`] of the same name, registered on the network
//! ([`Network::add_codec`](crate::Network::add_codec)) in every process of
//! the run, makes a value from them.

use std::any::Any;
use std::sync::{Arc, OnceLock};

use snet_core::{DecodeError, FieldBytes, FieldCodec, FieldData, NotPortable};

use crate::record::Field;

/// Why a custom value cannot be encoded, or bytes make no value: any
/// error of the value's own library (`?` converts it) or a message
/// (`Err("why".into())`). The run that needed the value fails and says
/// it, naming the field's interface.
pub type CustomError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// A field value that is not C4SNet data: kept as it is while it stays in
/// its process, encoded by itself when it crosses to another node.
///
/// ```
/// use std::sync::Arc;
/// use snet::{CustomCodec, CustomValue, Field};
///
/// struct Word(String);
/// impl CustomValue for Word {
///     fn interface(&self) -> &str { "Words" }
///     fn codec(&self) -> &str { "word" }
///     fn encode(&self) -> Result<Vec<u8>, snet::CustomError> { Ok(self.0.clone().into_bytes()) }
///     fn as_any(&self) -> &dyn std::any::Any { self }
/// }
/// let f = Field::custom(Arc::new(Word("hi".into())));
/// let w = f.custom_value().and_then(|v| v.as_any().downcast_ref::<Word>()).unwrap();
/// assert_eq!(w.0, "hi");
/// ```
pub trait CustomValue: Send + Sync + 'static {
    /// The box-language interface it belongs to (a name, e.g. `Python`).
    fn interface(&self) -> &str;
    /// The name of the [`CustomCodec`] that decodes what
    /// [`CustomValue::encode`] gives.
    fn codec(&self) -> &str;
    /// The value as bytes, for another node; `Err` with the reason if it
    /// cannot leave this process (the run then fails naming the field).
    /// Asked at most once per value, and only when it crosses.
    fn encode(&self) -> Result<Vec<u8>, CustomError>;
    /// The value itself, to downcast.
    fn as_any(&self) -> &dyn Any;
}

/// Makes a [`CustomValue`] from the bytes its `encode` gave, on the node
/// that received them.
pub trait CustomCodec: Send + Sync + 'static {
    /// The name values of this codec give as [`CustomValue::codec`].
    fn name(&self) -> &str;
    /// The value of `bytes`, or why they make none.
    fn decode(&self, bytes: &[u8]) -> Result<Arc<dyn CustomValue>, CustomError>;
}

/// A custom value as the engine's field store keeps it.
struct CustomField {
    value: Arc<dyn CustomValue>,
    encoded: OnceLock<Result<Vec<u8>, CustomError>>,
}

impl CustomField {
    fn encoded(&self) -> &Result<Vec<u8>, CustomError> {
        self.encoded.get_or_init(|| self.value.encode())
    }
}

impl FieldData for CustomField {
    fn interface(&self) -> &str {
        self.value.interface()
    }
    fn codec(&self) -> &str {
        self.value.codec()
    }
    fn encode_meta(&self, _out: &mut Vec<u8>) {}
    fn body(&self) -> &[u8] {
        match self.encoded() {
            Ok(b) => b,
            Err(_) => &[],
        }
    }
    fn portable(&self) -> Result<(), NotPortable> {
        match self.encoded() {
            Ok(_) => Ok(()),
            Err(e) => {
                // The reason goes to standard error: `NotPortable` holds a
                // static description only.
                eprintln!(
                    "snet: a {} field cannot be encoded: {e}",
                    self.value.interface()
                );
                Err(NotPortable {
                    holds: "a value its interface cannot encode",
                    made_by: None,
                })
            }
        }
    }
    /// Shares the value: a custom value is not copied in its process.
    fn deep_copy(&self) -> Arc<dyn FieldData> {
        Arc::new(CustomField {
            value: self.value.clone(),
            encoded: OnceLock::new(),
        })
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn into_any(self: Arc<Self>) -> Arc<dyn Any + Send + Sync> {
        self
    }
}

/// A [`CustomCodec`] as the engine's codec table holds it.
pub(crate) struct CodecAdapter(pub(crate) Arc<dyn CustomCodec>);

impl FieldCodec for CodecAdapter {
    fn name(&self) -> &str {
        self.0.name()
    }
    fn decode(&self, _meta: &[u8], body: FieldBytes) -> Result<Arc<dyn FieldData>, DecodeError> {
        let value = self
            .0
            .decode(&body)
            .map_err(|e| DecodeError::Invalid(Arc::from(e)))?;
        Ok(Arc::new(CustomField {
            value,
            encoded: OnceLock::new(),
        }))
    }
}

impl Field {
    /// A field holding `value`, a value of another box language (see
    /// [`CustomValue`]).
    pub fn custom(value: Arc<dyn CustomValue>) -> Field {
        Field(snet_core::Field::new(Arc::new(CustomField {
            value,
            encoded: OnceLock::new(),
        })))
    }

    /// The custom value this field holds, if it holds one.
    pub fn custom_value(&self) -> Option<&Arc<dyn CustomValue>> {
        self.0.downcast_ref::<CustomField>().map(|c| &c.value)
    }
}
