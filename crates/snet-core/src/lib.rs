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

pub mod bytes;
pub mod expr;
pub mod field;
pub mod graph;
pub mod label;
pub mod record;

pub use bytes::{set_field_allocator, FieldAllocator, FieldBytes};
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
