//! The shared vocabulary of snet.
//!
//! Every other crate speaks in these types:
//! - [`label`]: interned record labels (fields, tags, binding tags);
//! - [`bytes`]: the aligned byte buffers field bytes travel in between nodes;
//! - [`record`]: the record, a sorted set of label/value pairs;
//! - [`field`]: opaque, shared field handles over values a language interface keeps (local or remote), their hooks and codecs, and text carried verbatim;
//! - [`expr`]: compiled tag expressions (stack bytecode, evaluated on a record);
//! - [`graph`]: the immutable property graph the front end produces and the engine executes.
//!
//! This crate depends on nothing of the project; it must stay small and hot-path friendly.

#![warn(missing_docs)]

pub mod bytes;
pub mod expr;
pub mod field;
pub mod graph;
pub mod label;
pub mod record;

pub use bytes::{
    big_fields_made, new_field_bytes, set_field_allocator, take_new_field_bytes, FieldAllocator,
    FieldBytes,
};
pub use expr::{BinOp, EvalError, Expr, ExprTree, Func, Slots, UnOp};
pub use field::{
    Codecs, DecodeError, Field, FieldCodec, FieldData, NotPortable, ReleaseRemote, RemoteField,
    TextField, TEXT_CODEC,
};
pub use graph::{
    BoxCode, BoxDef, BoxId, FilterArm, FilterDef, Graph, Loc, Node, NodeId, NodeKind, ObserveData,
    ObserveDest, ObservePoint, Observer, OutItem, OutSpec, Pattern, Placement, Rank,
    SynchrocellDef, TagValue, Type, Variant,
};
pub use label::{Label, LabelKind};
pub use record::{Record, Value};

/// Input text as a message shows it: as it is (quotes, backslashes and
/// non-ASCII letters unchanged), only characters that would not show or
/// would break the line (controls, line breaks) escaped as Rust writes
/// them (`\n`, `\0`, `\u{1b}`).
pub fn shown_text(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if c.is_control() {
            out.extend(c.escape_debug());
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod shown_text_tests {
    #[test]
    fn quotes_and_backslashes_as_they_are_controls_escaped() {
        assert_eq!(super::shown_text(r#"a"b\c'é"#), r#"a"b\c'é"#);
        assert_eq!(super::shown_text("a\nb\0"), "a\\nb\\0");
    }
}
