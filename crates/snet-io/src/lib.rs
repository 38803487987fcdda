//! Record streams: reading and writing S-Net's XML record format.
//!
//! The format (`shared/spec/records.md`) is a sequence of `<record>`
//! elements holding `<tag>`, `<btag>` and `<field>` children, ended by
//! `<record type="terminate" />`. This crate provides:
//! - [`reader`]: [`RecordReader`], a streaming reader with positioned errors;
//! - [`writer`]: [`RecordWriter`], the byte-exact writer;
//! - [`codec`]: [`TextCodec`], the text forms of one interface's field
//!   values, and [`TextCodecs`], the registry the reader, the writer and
//!   the comparison take;
//! - [`compare`]: stream equivalence for tests ([`equivalent_multiset`]);
//! - [`position`] and [`error`]: where and what went wrong.
//!
//! This crate knows no box language: a field value is text to it unless
//! the interface's language crate registers a [`TextCodec`] (the `c4snet`
//! crate's `c4snet::text_codecs()` for C4SNet, the default interface).
//! Without one, every field is kept as the exact text it was read as
//! ([`snet_core::TextField`]) and written back verbatim; with one, its
//! values are parsed when read (malformed values are positioned read
//! errors) and written in the codec's canonical form.
//!
//! The XML is parsed by quick-xml: streaming, well-kept, and it reports
//! byte offsets, which [`position::LineCounter`] turns into lines and
//! columns. The common record shapes are read by a hand-written scanner
//! over the buffered bytes first (`fast.rs`, ~7x fewer instructions); it
//! leaves anything unusual, and every error, to quick-xml.

#![warn(missing_docs)]

pub mod background;
pub mod codec;
pub mod compare;
pub mod error;
mod fast;
pub mod position;
pub mod reader;
pub mod writer;

pub use background::{BackgroundWriter, FlushSoon};
pub use codec::{FieldTextError, TextCodec, TextCodecs};
pub use compare::{
    canonical, equivalent_multiset, field_string, read_all, read_all_verbatim, StreamDiff,
};
pub use error::{ReadError, ReadErrorKind, Unclosed};
pub use position::Position;
pub use reader::{RecordReader, StreamItem, DEFAULT_INTERFACE};
pub use writer::{NoTextForm, RecordWriter};
