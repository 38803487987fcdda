//! C4SNet: the C box interface.
//!
//! - [`abi`]: the functions of `C4SNet.h` (`include/C4SNet.h`), exported
//!   with C linkage under their C names; `C4SNetOut` is variadic and lives in
//!   `csrc/out.c`, which calls back into [`invoke`], as does
//!   `C4SNetOutValues` there (what the header's macro `C4SNetOut` calls in
//!   C99 and later: the values in an array of 64-bit words, and their count);
//! - [`invoke`]: the engine side: [`C4SNet`], a
//!   [`snet_engine::LanguageInterface`] over a table of box trampolines, and
//!   the per-invocation handle the box passes back to `C4SNetOut`;
//! - [`codegen`]: the C source generated for a program's boxes: their
//!   prototypes, the trampolines that call them, and the names generated
//!   code reserves (used by `snet build`);
//! - [`library`]: C box libraries, shared objects of C boxes loaded at
//!   run time next to boxes of another language;
//! - [`crash`]: the signal handler that names the box a crash happened in;
//! - [`rescue`]: before a crash ends the process, a live thread writes the
//!   records that finished;
//! - [`data`]: C4SNet values: [`CType`], [`CData`] (a typed array) and
//!   [`C4Data`], the value a C4SNet field holds, with the field store's
//!   hooks (serialise, copy, free) and its [`codec`] (deserialise);
//! - [`text`]: C4SNet values in the record format (textual and binary
//!   mode, C's own `printf`/`strto*` for numbers) and [`C4TextCodec`], the
//!   `snet_io::TextCodec` that plugs them into the record reader and writer.
//!
//! A program that runs C4SNet fields registers both codecs: [`text_codecs`]
//! with its `RecordReader`/`RecordWriter` (and the `snet_io::compare`
//! functions), [`codec`] in `snet_engine::Config::codecs`.
//!
//! # Fields across the boundary
//!
//! A C4SNet field is a [`snet_core::Field`] whose value is a [`C4Data`]. A
//! `c4snet_data_t *` is `Arc::into_raw` of that `Arc<C4Data>`: the same
//! allocation the field's `Arc<dyn FieldData>` shares (a box argument is
//! `into_any().downcast::<C4Data>()` of the field's value, fetched to this
//! node by the engine before the box runs). The C reference count *is* the
//! `Arc`'s strong count: `C4SNetShallowCopy` increments it, `C4SNetFree`
//! decrements it, a box's field arguments are fresh references (the box
//! owns them), and `C4SNetOut` takes the references it is given back into
//! `Field`s without touching the count. A field a box allocates, creates or
//! deep-copies records the box's name, so that a `CTYPE_pointer` field's
//! refusal to leave the node (`FieldData::portable`) names its maker. A
//! C4SNet field still held as text (read without [`text_codecs`]) is parsed
//! when passed to a box.
//!
//! # The box calling convention
//!
//! `void *name(void *hnd, args...)`, one argument per input label in
//! signature order (`c4snet_data_t *` for fields, `int` for tags). Rust cannot
//! call a C function whose arity is known only at run time, so every box is
//! reached through a *trampoline* `void call(void *hnd, const snet_arg_t *args)`
//! that `snet build` generates in C, one per box, from the program's box
//! declarations ([`trampoline_source`]). The table of (name, trampoline) pairs
//! is handed to [`C4SNet::from_table`].

#![warn(missing_docs)]

pub mod abi;
pub mod codegen;
pub mod crash;
pub mod data;
pub mod invoke;
pub mod library;
pub mod rescue;
pub mod text;

pub use codegen::{
    trampoline_source, trampoline_source_cxx, trampoline_source_extra, GENERATED_PREFIX,
};
pub use data::{codec, data_field, data_of, C4Data, CData, CType, CODEC, INTERFACE};
pub use invoke::{BoxEntry, BoxFn, C4SNet, SnetArg};
pub use text::{decode_field, encode_data, text_codecs, text_field, C4TextCodec, FieldError};

/// The checked-in header, for tools that write it next to generated code.
pub const HEADER: &str = include_str!("../include/C4SNet.h");

/// `bool.h` as the original toolchain installed it (`typedef int bool;`,
/// `true`, `false`; compatible with `<stdbool.h>` in either order), written
/// next to [`HEADER`] by `snet build` for box code that includes it.
pub const BOOL_HEADER: &str = include_str!("../include/bool.h");
