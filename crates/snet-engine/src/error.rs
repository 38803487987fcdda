//! The engine's error types.
//!
//! Every failure of a run is an [`EngineError`] whose payload says what went
//! wrong in typed form (the record's type, the label, the evaluation error,
//! the underlying I/O or reader error, ...), so that embedders can inspect
//! it; `Display` renders the message users see (and the conformance corpus
//! and the CLI tests check). The parts:
//!
//! - [`SourceError`]: a [`crate::Source`]'s own error, kept as it is (the
//!   record reader's `snet_io::ReadError` can be downcast from it);
//! - [`BoxError`]: why a box invocation failed;
//! - [`ResolveError`]: why a language interface could not resolve a box;
//! - [`RuntimeTypeError`]: a record that does not fit a component;
//! - [`EvalContext`]: which tag expression failed to evaluate;
//! - [`DistributionError`]: nodes that could not talk;
//! - [`InternalError`]: an engine bug that stopped the run.

use std::error::Error;
use std::fmt;
use std::sync::Arc;

use snet_core::{BoxDef, EvalError, Label, Loc, Rank, Variant};

use crate::dist::wire::{ItemError, WireError};
use crate::dist::{ConnId, TransportError};

/// What went wrong during a run. The message names the component and its source location.
#[derive(Clone, Debug)]
pub enum EngineError {
    /// A record did not fit a component's type (no parallel branch, missing split tag, ...).
    Type {
        /// What did not fit.
        error: RuntimeTypeError,
        /// The component's source location, when known.
        loc: Option<Loc>,
    },
    /// A tag expression failed (division by zero, ...) in the given context.
    Eval {
        /// Why the expression has no value.
        error: EvalError,
        /// Which kind of expression it was.
        context: EvalContext,
        /// The component's source location, when known.
        loc: Option<Loc>,
    },
    /// A box misbehaved (bad variant number, missing input, ...).
    Box {
        /// The box's name.
        name: String,
        /// What it did wrong, or what went wrong calling it.
        error: BoxError,
        /// Where the box is declared, when known.
        loc: Option<Loc>,
    },
    /// The input stream was malformed.
    Input(SourceError),
    /// Writing the output failed.
    Output(Arc<std::io::Error>),
    /// Setting up the network failed: boxes the language interface could
    /// not resolve (every one, in box order; never empty).
    Setup(Vec<ResolveError>),
    /// A static placement `@ node` names a node the run does not have.
    Placement {
        /// The node the placement names.
        node: Rank,
        /// The run's number of nodes.
        nodes: u32,
        /// Where the placement is written, when known.
        loc: Option<Loc>,
    },
    /// A dynamic placement (`!@ <tag>`, `!!@ <tag>`) got a record whose
    /// tag `tag` has value `value`, which is not a node of the run (which
    /// has `nodes` nodes): a placement error, not a type error (the
    /// record's type is right; the run is too small for it).
    DynamicPlacement {
        /// The tag's value.
        value: i64,
        /// The tag the placement reads.
        tag: Label,
        /// The run's number of nodes.
        nodes: u32,
        /// Where the placement is written, when known.
        loc: Option<Loc>,
    },
    /// Another node failed; `message` is its error (as text: it crossed
    /// processes).
    Node {
        /// The node that failed first.
        node: Rank,
        /// Its error's message.
        message: String,
    },
    /// Nodes could not talk (a transport failure or a protocol error).
    Distribution(DistributionError),
    /// An engine bug stopped the run.
    Internal(InternalError),
    /// An observer could not report (its file or listener failed).
    Observer(crate::ObserverError),
    /// A component's error ([`EngineError::Type`], [`EngineError::Eval`]
    /// or [`EngineError::Box`]) on a record that came from an input record
    /// (see [`EngineError::caused_by`]).
    FromInput {
        /// The component's error.
        error: Box<EngineError>,
        /// The input record (and line) the failing record came from.
        origin: crate::Origin,
    },
}

impl EngineError {
    /// Names the input record behind a component's error: `origin` is the
    /// origin of the record the component was working on. Other errors,
    /// and records of no input record (an initialiser's), stay as they are.
    pub fn caused_by(self, origin: crate::Origin) -> EngineError {
        match self {
            EngineError::Type { .. }
            | EngineError::Eval { .. }
            | EngineError::Box { .. }
            | EngineError::DynamicPlacement { .. }
                if origin.number().is_some() =>
            {
                EngineError::FromInput {
                    error: Box::new(self),
                    origin,
                }
            }
            other => other,
        }
    }

    /// The error itself, without the input record behind it
    /// ([`EngineError::FromInput`]'s inner error; any other as it is).
    pub fn component_error(&self) -> &EngineError {
        match self {
            EngineError::FromInput { error, .. } => error,
            other => other,
        }
    }
}

impl fmt::Display for EngineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let at = |f: &mut fmt::Formatter<'_>, loc: &Option<Loc>| match loc {
            Some(l) => write!(f, "{l}: "),
            None => Ok(()),
        };
        match self {
            EngineError::Type { error, loc } => {
                at(f, loc)?;
                write!(f, "runtime type error: {error}")
            }
            EngineError::Eval {
                error,
                context,
                loc,
            } => {
                at(f, loc)?;
                write!(f, "{context}: {error}")
            }
            EngineError::Box { name, error, loc } => {
                at(f, loc)?;
                write!(f, "box `{name}`: {error}")
            }
            EngineError::Input(e) => write!(f, "malformed input: {e}"),
            EngineError::Output(e) => write!(f, "cannot write output: {e}"),
            EngineError::Observer(e) => write!(f, "{e}"),
            EngineError::Setup(unresolved) => {
                for (i, e) in unresolved.iter().enumerate() {
                    if i > 0 {
                        f.write_str("\n")?;
                    }
                    write!(f, "{e}")?;
                }
                Ok(())
            }
            EngineError::Placement { node, nodes, loc } => {
                at(f, loc)?;
                write!(
                    f,
                    "placement error: `@ {node}` places a component on node {node}, but the run has {nodes} node(s): 0..{}",
                    nodes.saturating_sub(1)
                )
            }
            EngineError::DynamicPlacement {
                value,
                tag,
                nodes,
                loc,
            } => {
                at(f, loc)?;
                write!(
                    f,
                    "placement error: dynamic placement to node {value} (tag {tag}), but the run has {nodes} node(s): 0..{}",
                    nodes.saturating_sub(1)
                )
            }
            EngineError::Node { node, message } => write!(f, "node {node}: {message}"),
            EngineError::Distribution(e) => write!(f, "distribution: {e}"),
            EngineError::Internal(e) => write!(f, "internal error: {e}"),
            EngineError::FromInput { error, origin } => {
                write!(f, "{error}, caused by {origin}")
            }
        }
    }
}

impl Error for EngineError {}

/// A [`crate::Source`]'s failure: the source's own error, kept whole (so
/// that, e.g., the record reader's `snet_io::ReadError` and its position
/// can be recovered with [`SourceError::downcast_ref`]). Displays exactly
/// as the wrapped error does; cheap to clone (shared).
#[derive(Clone)]
pub struct SourceError(Arc<dyn Error + Send + Sync>);

impl SourceError {
    /// Wraps a source's error (any error type, or a message: `String` and
    /// `&str` convert).
    pub fn new(error: impl Into<Box<dyn Error + Send + Sync>>) -> SourceError {
        SourceError(Arc::from(error.into()))
    }

    /// The wrapped error.
    pub fn get_ref(&self) -> &(dyn Error + Send + Sync + 'static) {
        &*self.0
    }

    /// The wrapped error, if it is a `T`.
    pub fn downcast_ref<T: Error + 'static>(&self) -> Option<&T> {
        self.0.downcast_ref::<T>()
    }
}

impl fmt::Display for SourceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&*self.0, f)
    }
}

impl fmt::Debug for SourceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("SourceError").field(&self.0).finish()
    }
}

/// Transparent: the wrapped error's source is this error's source.
impl Error for SourceError {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        self.0.source()
    }
}

/// A box failure, reported with the box's name by the engine
/// ([`EngineError::Box`]). Built by the box entity and by language
/// interfaces.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum BoxError {
    /// The box was called with a record that does not match its input
    /// variant (the record's type, the box's input).
    WrongInput {
        /// The record's labels.
        record: Variant,
        /// The box's input labels.
        takes: Variant,
    },
    /// The box emitted an output variant its signature does not declare
    /// (variants are numbered from 1). `call` names the interface function
    /// that was given the number, when the interface caught it (e.g.
    /// `C4SNetOut`); `None` when the engine did.
    VariantOutOfRange {
        /// The number the box gave.
        variant: i64,
        /// How many output variants the signature declares.
        declared: usize,
        /// The interface function given the number, if the interface caught it.
        call: Option<&'static str>,
    },
    /// `call` (e.g. `C4SNetOut`) was given a null value for field `label`
    /// of output variant `variant`.
    NullField {
        /// The field.
        label: Label,
        /// The output variant (from 1).
        variant: usize,
        /// The interface function that was given the null value.
        call: &'static str,
    },
    /// The input record lacks a label the box takes.
    MissingInput {
        /// The label the record lacks.
        label: Label,
    },
    /// The value of tag (or binding tag) `label` does not fit the box
    /// parameter it is passed in: a C `int` (`ty`), `min..=max`.
    TagOutOfRange {
        /// The tag.
        label: Label,
        /// Its value in the record.
        value: i64,
        /// The parameter's type in the box's language.
        ty: &'static str,
        /// The smallest value the type holds.
        min: i64,
        /// The largest value the type holds.
        max: i64,
    },
    /// The value of field `label` is not on this node.
    NotLocal {
        /// The field.
        label: Label,
    },
    /// The value of field `label` cannot be handed to the box's language
    /// (`language`, e.g. `C`) for the interface's `reason`.
    Unconvertible {
        /// The field.
        label: Label,
        /// The box's language.
        language: &'static str,
        /// Why, as the interface says it.
        reason: String,
    },
    /// Box code misused its language interface's API (a stale handle, an
    /// invalid argument), as the interface describes it.
    Misuse(String),
    /// The call stack for the box's call could not be made (the
    /// operating system's error number, when it gave one).
    NoCallStack {
        /// The operating system's error number (`errno`), if it gave one.
        os_error: Option<i32>,
    },
    /// An exception of the box's language (`language`, e.g. `C++`) escaped
    /// the box; `what` is its message when the language gives one (a C++
    /// `std::exception`'s `what()`).
    Threw {
        /// The box's language.
        language: &'static str,
        /// The exception's message, when the language gives one.
        what: Option<String>,
    },
    /// The box (a Rust function) panicked; `message` is the panic's
    /// message when it was a string.
    Panicked {
        /// The panic's message, when it was a string.
        message: Option<String>,
    },
    /// The box (a Rust function) returned an error; `message` is its text.
    Failed {
        /// The error's text.
        message: String,
    },
}

impl fmt::Display for BoxError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BoxError::WrongInput { record, takes } => write!(
                f,
                "called with record {}, but it takes {takes}",
                RecordType(record)
            ),
            BoxError::VariantOutOfRange {
                variant,
                declared,
                call: None,
            } => write!(
                f,
                "emitted output variant {variant}, but its signature declares {declared} variant(s) (numbered from 1)"
            ),
            BoxError::VariantOutOfRange {
                variant,
                declared,
                call: Some(call),
            } => write!(
                f,
                "{call} called with output variant {variant}, but the signature declares {declared} variant(s) (numbered from 1)"
            ),
            BoxError::NullField {
                label,
                variant,
                call,
            } => write!(
                f,
                "{call} (variant {variant}) was given NULL for field `{}`",
                label.name()
            ),
            BoxError::MissingInput { label } => write!(
                f,
                "input lacks {} `{}`",
                if label.is_field() { "field" } else { "tag" },
                label.name()
            ),
            BoxError::TagOutOfRange {
                label,
                value,
                ty,
                min,
                max,
            } => write!(
                f,
                "{} `{label}` has the value {value}, which does not fit the box's parameter of type `{ty}` ({min} to {max})",
                if label.kind() == snet_core::LabelKind::BTag {
                    "binding tag"
                } else {
                    "tag"
                },
            ),
            BoxError::NotLocal { label } => {
                write!(f, "field `{}` is not on this node", label.name())
            }
            BoxError::Unconvertible {
                label,
                language,
                reason,
            } => write!(
                f,
                "field `{}` cannot be passed to {language}: {reason}",
                label.name()
            ),
            BoxError::Misuse(m) => f.write_str(m),
            BoxError::NoCallStack { os_error: Some(e) } => write!(
                f,
                "cannot allocate its call stack: {}",
                std::io::Error::from_raw_os_error(*e)
            ),
            BoxError::NoCallStack { os_error: None } => {
                f.write_str("cannot allocate its call stack")
            }
            BoxError::Threw {
                language,
                what: Some(what),
            } => write!(f, "threw a {language} exception: {what}"),
            BoxError::Threw {
                language,
                what: None,
            } => write!(f, "threw a {language} exception (of an unknown type)"),
            BoxError::Panicked {
                message: Some(message),
            } => write!(f, "panicked: {message}"),
            BoxError::Panicked { message: None } => f.write_str("panicked"),
            BoxError::Failed { message } => write!(f, "failed: {message}"),
        }
    }
}

impl Error for BoxError {}

/// Why a language interface could not resolve a box declaration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResolveError {
    /// The box's name.
    pub name: String,
    /// Where the box is declared.
    pub loc: Loc,
    /// Why it could not be resolved.
    pub reason: ResolveReason,
}

impl ResolveError {
    /// An error about box `def`.
    pub fn new(def: &BoxDef, reason: ResolveReason) -> ResolveError {
        ResolveError {
            name: def.name.clone(),
            loc: def.loc.clone(),
            reason,
        }
    }
}

/// What [`ResolveError`] found.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ResolveReason {
    /// No language interface is available: the program was run without
    /// its box code.
    NoImplementation,
    /// The executable has no implementation (symbol) for the box.
    MissingSymbol,
    /// The box is declared with a language interface this one is not.
    UnknownInterface(String),
    /// Anything else, as the interface describes it.
    Other(String),
}

impl fmt::Display for ResolveError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ResolveError { name, loc, reason } = self;
        match reason {
            ResolveReason::NoImplementation => write!(
                f,
                "box `{name}` ({loc}) has no implementation: build the program with its box code (`snet build`)"
            ),
            ResolveReason::MissingSymbol => write!(
                f,
                "box `{name}` ({loc}) has no implementation in this executable: rebuild it with `snet build`"
            ),
            ResolveReason::UnknownInterface(i) => write!(
                f,
                "box `{name}` ({loc}): unknown box language interface `{i}`"
            ),
            ResolveReason::Other(m) => write!(f, "box `{name}` ({loc}): {m}"),
        }
    }
}

impl Error for ResolveError {}

/// A record that does not fit a component ([`EngineError::Type`]). Record
/// types are the record's labels as a [`Variant`].
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum RuntimeTypeError {
    /// A record no branch of a parallel composition accepts (`accepted`:
    /// the branches' input variants, in routing order).
    NoBranch {
        /// The record's labels.
        record: Variant,
        /// The branches' input variants, in routing order.
        accepted: Vec<Variant>,
    },
    /// A record lacks the tag a parallel replication (`placement` false)
    /// or a dynamic placement (`placement` true) splits on.
    MissingSplitTag {
        /// The record's labels.
        record: Variant,
        /// The tag the combinator splits on.
        tag: Label,
        /// Whether the combinator is a dynamic placement.
        placement: bool,
    },
    /// A record that reaches a repeated synchronisation matches neither an
    /// exit pattern nor a synchrocell pattern.
    EndlessSynchronisation {
        /// The record's labels.
        record: Variant,
    },
    /// A filter received a record that does not match its pattern.
    FilterPattern {
        /// The filter's pattern.
        pattern: Variant,
        /// The record's labels.
        record: Variant,
    },
    /// A filter's outspec copies field `field`, which the record lacks.
    FilterMissingField {
        /// The field the outspec copies.
        field: Label,
        /// The record's labels.
        record: Variant,
    },
}

impl fmt::Display for RuntimeTypeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RuntimeTypeError::NoBranch { record, accepted } => {
                write!(
                    f,
                    "record {} matches no branch of the parallel composition (branches accept ",
                    RecordType(record)
                )?;
                for (i, v) in accepted.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{v}")?;
                }
                f.write_str(")")
            }
            RuntimeTypeError::MissingSplitTag {
                record,
                tag,
                placement,
            } => write!(
                f,
                "record {} lacks the tag {tag} that the {} splits on",
                RecordType(record),
                if *placement {
                    "dynamic placement"
                } else {
                    "parallel replication"
                }
            ),
            RuntimeTypeError::EndlessSynchronisation { record } => write!(
                f,
                "record {} matches neither an exit pattern nor a synchrocell pattern: it would pass an endless chain of replicas",
                RecordType(record)
            ),
            RuntimeTypeError::FilterPattern { pattern, record } => write!(
                f,
                "filter for {pattern} received record {}",
                RecordType(record)
            ),
            RuntimeTypeError::FilterMissingField { field, record } => write!(
                f,
                "filter needs field {field}, record {} has none",
                RecordType(record)
            ),
        }
    }
}

impl Error for RuntimeTypeError {}

/// Where a tag expression failed ([`EngineError::Eval`]).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum EvalContext {
    /// A filter's guard or tag expression.
    Filter,
    /// A star's exit guard.
    StarExit,
    /// A guard of a repeated synchronisation (exit or synchrocell pattern).
    RepeatedSynchronisation,
    /// A feedback loop's guard.
    Feedback,
    /// A synchrocell pattern's guard.
    Synchrocell,
}

impl fmt::Display for EvalContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            EvalContext::Filter => "filter",
            EvalContext::StarExit => "star exit guard",
            EvalContext::RepeatedSynchronisation => "repeated synchronisation",
            EvalContext::Feedback => "feedback guard",
            EvalContext::Synchrocell => "synchrocell guard",
        })
    }
}

/// Nodes that could not talk ([`EngineError::Distribution`]).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum DistributionError {
    /// Node `from` could not send to node `to`.
    Send {
        /// The sending node.
        from: Rank,
        /// The node it sent to.
        to: Rank,
        /// The transport's error.
        error: TransportError,
    },
    /// Receiving failed.
    Transport(TransportError),
    /// A message this node cannot make sense of.
    Protocol(ProtocolError),
    /// A field that cannot leave node `node`.
    Field {
        /// The node the field is on.
        node: Rank,
        /// Which field, where it was going, and why it cannot.
        error: crate::dist::wire::FieldStays,
    },
}

impl fmt::Display for DistributionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DistributionError::Send { from, to, error } => {
                write!(f, "node {from} cannot send to node {to}: {error}")
            }
            DistributionError::Transport(e) => write!(f, "{e}"),
            DistributionError::Protocol(e) => write!(f, "{e}"),
            DistributionError::Field { node, error } => write!(f, "node {node}: {error}"),
        }
    }
}

impl Error for DistributionError {}

/// A message this node cannot make sense of
/// ([`DistributionError::Protocol`]): a protocol bug or a corrupted
/// transport.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ProtocolError {
    /// Node `from`'s message is malformed (the wire decoder's error).
    Malformed {
        /// The sender.
        from: Rank,
        /// Where the message is malformed and how.
        error: WireError,
    },
    /// An item from node `from` is well-formed but makes no sense here.
    Item {
        /// The sender.
        from: Rank,
        /// What is wrong with the item.
        error: ItemError,
    },
    /// Node `from` opened a template the program does not have.
    UnknownTemplate {
        /// The sender.
        from: Rank,
        /// The template it named.
        template: snet_core::NodeId,
    },
    /// Node `from` sent items for a connection this node does not have.
    UnknownConnection {
        /// The sender.
        from: Rank,
        /// The connection it named.
        conn: ConnId,
    },
    /// Node `from` sent a message with two `Bytes` frames.
    TwoFieldValues {
        /// The sender.
        from: Rank,
    },
    /// Node `from` acknowledged more items than this node has outstanding.
    OverAcknowledged {
        /// The sender.
        from: Rank,
        /// The items it acknowledged.
        count: u64,
    },
    /// Node `from` reported done an item this node does not hold in its
    /// custody log (or has no log).
    UnknownDone {
        /// The sender.
        from: Rank,
        /// The item's number it reported.
        id: u64,
    },
    /// The field store refused a request or an answer.
    FieldStore(crate::dist::fields::StoreError),
}

impl fmt::Display for ProtocolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ProtocolError::Malformed { from, error } => write!(f, "from node {from}: {error}"),
            ProtocolError::Item { from, error } => write!(f, "from node {from}: {error}"),
            ProtocolError::UnknownTemplate { from, template } => {
                write!(f, "node {from} opened unknown template {template}")
            }
            ProtocolError::UnknownConnection { from, conn } => {
                write!(f, "items for unknown connection {conn:?} from node {from}")
            }
            ProtocolError::TwoFieldValues { from } => {
                write!(f, "two field values in one message from node {from}")
            }
            ProtocolError::OverAcknowledged { from, count } => write!(
                f,
                "node {from} acknowledged {count} items, more than this node sent"
            ),
            ProtocolError::UnknownDone { from, id } => write!(
                f,
                "node {from} reported done item {id}, which this node does not hold"
            ),
            ProtocolError::FieldStore(e) => write!(f, "{e}"),
        }
    }
}

impl Error for ProtocolError {}

impl From<ProtocolError> for DistributionError {
    fn from(e: ProtocolError) -> DistributionError {
        DistributionError::Protocol(e)
    }
}

/// An engine bug that stopped the run ([`EngineError::Internal`]).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum InternalError {
    /// The thread running node `node` of a loopback run panicked.
    NodePanicked {
        /// The node.
        node: Rank,
    },
    /// A worker panicked.
    WorkerPanicked,
    /// Another thread of node `node` (the reader, a manager, a worker's
    /// loop) panicked.
    ThreadPanicked {
        /// The node.
        node: Rank,
    },
    /// The run of node `node` ended while `count` entities still had
    /// suspended work (their remaining outputs would be lost); `what`
    /// names the first (a box's name, or the kind of entity).
    StillSuspended {
        /// The node.
        node: Rank,
        /// How many entities had suspended work.
        count: usize,
        /// The first of them: a box's name, or the kind of entity.
        what: String,
    },
}

impl fmt::Display for InternalError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            InternalError::NodePanicked { node } => write!(f, "node {node} panicked"),
            InternalError::WorkerPanicked => f.write_str("a worker panicked"),
            InternalError::ThreadPanicked { node } => {
                write!(f, "a thread of node {node} panicked")
            }
            InternalError::StillSuspended { node, count, what } => write!(
                f,
                "node {node} stopped with {count} suspended entities (the first: {what}); their remaining outputs were not produced"
            ),
        }
    }
}

impl Error for InternalError {}

/// A record's type as every message writes it (`Display` of [`Variant`]).
struct RecordType<'a>(&'a Variant);

impl fmt::Display for RecordType<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// The type of `rec`, for the payloads above.
pub(crate) fn record_type(rec: &snet_core::Record) -> Variant {
    Variant::new(rec.labels())
}

#[cfg(test)]
mod tests {
    //! The messages are the ones the engine wrote before its errors were
    //! typed, byte for byte (the conformance corpus and the CLI tests check
    //! substrings of them).

    use super::*;

    fn loc() -> Option<Loc> {
        Some(Loc {
            file: "p.snet".into(),
            line: 3,
            col: 7,
        })
    }

    fn rec(labels: &[Label]) -> Variant {
        Variant::new(labels.iter().copied())
    }

    /// A dynamic placement out of range is a placement error (the record's
    /// type is right), and names the input record behind it.
    #[test]
    fn a_dynamic_placement_out_of_range_is_a_placement_error() {
        let e = EngineError::DynamicPlacement {
            value: -1,
            tag: Label::tag("t"),
            nodes: 2,
            loc: loc(),
        };
        assert_eq!(
            e.to_string(),
            "p.snet:3:7: placement error: dynamic placement to node -1 (tag <t>), but the run has 2 node(s): 0..1"
        );
        let from = e.caused_by(crate::Origin::input(3, Some(4)));
        assert!(matches!(from, EngineError::FromInput { .. }), "{from:?}");
    }

    #[test]
    fn runtime_type_errors() {
        let (a, t, b) = (Label::field("a"), Label::tag("t"), Label::btag("b"));
        let e = |error| EngineError::Type { error, loc: loc() }.to_string();
        assert_eq!(
            e(RuntimeTypeError::NoBranch {
                record: rec(&[a, t]),
                accepted: vec![rec(&[a]), rec(&[t, b])],
            }),
            "p.snet:3:7: runtime type error: record {a, <t>} matches no branch of the parallel composition (branches accept {a}, {<t>, <#b>})"
        );
        assert_eq!(
            e(RuntimeTypeError::MissingSplitTag {
                record: rec(&[a]),
                tag: t,
                placement: false,
            }),
            "p.snet:3:7: runtime type error: record {a} lacks the tag <t> that the parallel replication splits on"
        );
        assert_eq!(
            e(RuntimeTypeError::MissingSplitTag {
                record: rec(&[]),
                tag: t,
                placement: true,
            }),
            "p.snet:3:7: runtime type error: record {} lacks the tag <t> that the dynamic placement splits on"
        );
        assert_eq!(
            e(RuntimeTypeError::EndlessSynchronisation { record: rec(&[t]) }),
            "p.snet:3:7: runtime type error: record {<t>} matches neither an exit pattern nor a synchrocell pattern: it would pass an endless chain of replicas"
        );
        assert_eq!(
            e(RuntimeTypeError::FilterPattern {
                pattern: rec(&[a, t]),
                record: rec(&[a]),
            }),
            "p.snet:3:7: runtime type error: filter for {a, <t>} received record {a}"
        );
        assert_eq!(
            EngineError::Type {
                error: RuntimeTypeError::FilterMissingField {
                    field: a,
                    record: rec(&[t]),
                },
                loc: None,
            }
            .to_string(),
            "runtime type error: filter needs field a, record {<t>} has none"
        );
    }

    #[test]
    fn eval_errors() {
        let e = |context| {
            EngineError::Eval {
                error: EvalError::DivisionByZero,
                context,
                loc: loc(),
            }
            .to_string()
        };
        let div = "division by zero in tag expression";
        assert_eq!(e(EvalContext::Filter), format!("p.snet:3:7: filter: {div}"));
        assert_eq!(
            e(EvalContext::StarExit),
            format!("p.snet:3:7: star exit guard: {div}")
        );
        assert_eq!(
            e(EvalContext::RepeatedSynchronisation),
            format!("p.snet:3:7: repeated synchronisation: {div}")
        );
        assert_eq!(
            e(EvalContext::Feedback),
            format!("p.snet:3:7: feedback guard: {div}")
        );
        assert_eq!(
            e(EvalContext::Synchrocell),
            format!("p.snet:3:7: synchrocell guard: {div}")
        );
    }

    #[test]
    fn box_errors() {
        let (x, n) = (Label::field("x"), Label::tag("n"));
        let e = |error| {
            EngineError::Box {
                name: "f".into(),
                error,
                loc: loc(),
            }
            .to_string()
        };
        assert_eq!(
            e(BoxError::WrongInput {
                record: rec(&[n]),
                takes: rec(&[x, n]),
            }),
            "p.snet:3:7: box `f`: called with record {<n>}, but it takes {x, <n>}"
        );
        assert_eq!(
            e(BoxError::VariantOutOfRange {
                variant: 0,
                declared: 2,
                call: None,
            }),
            "p.snet:3:7: box `f`: emitted output variant 0, but its signature declares 2 variant(s) (numbered from 1)"
        );
        assert_eq!(
            BoxError::VariantOutOfRange {
                variant: -3,
                declared: 1,
                call: Some("C4SNetOut"),
            }
            .to_string(),
            "C4SNetOut called with output variant -3, but the signature declares 1 variant(s) (numbered from 1)"
        );
        assert_eq!(
            BoxError::NullField {
                label: x,
                variant: 2,
                call: "C4SNetOut",
            }
            .to_string(),
            "C4SNetOut (variant 2) was given NULL for field `x`"
        );
        assert_eq!(
            BoxError::MissingInput { label: x }.to_string(),
            "input lacks field `x`"
        );
        assert_eq!(
            BoxError::MissingInput { label: n }.to_string(),
            "input lacks tag `n`"
        );
        assert_eq!(
            BoxError::NotLocal { label: x }.to_string(),
            "field `x` is not on this node"
        );
        assert_eq!(
            BoxError::Unconvertible {
                label: x,
                language: "C",
                reason: "bad".into(),
            }
            .to_string(),
            "field `x` cannot be passed to C: bad"
        );
        assert_eq!(
            BoxError::NoCallStack {
                os_error: Some(libc::ENOMEM)
            }
            .to_string(),
            format!(
                "cannot allocate its call stack: {}",
                std::io::Error::from_raw_os_error(libc::ENOMEM)
            )
        );
        let threw = |what: Option<&str>| BoxError::Threw {
            language: "C++",
            what: what.map(str::to_string),
        };
        assert_eq!(
            threw(Some("vector::at")).to_string(),
            "threw a C++ exception: vector::at"
        );
        assert_eq!(
            threw(None).to_string(),
            "threw a C++ exception (of an unknown type)"
        );
        assert_eq!(
            BoxError::Panicked {
                message: Some("no".into())
            }
            .to_string(),
            "panicked: no"
        );
        assert_eq!(BoxError::Panicked { message: None }.to_string(), "panicked");
        assert_eq!(
            BoxError::Failed {
                message: "bad".into()
            }
            .to_string(),
            "failed: bad"
        );
    }

    #[test]
    fn setup_and_placement_errors() {
        let def = BoxDef::declared("f", "SAC", vec![], vec![], loc().unwrap());
        let err = EngineError::Setup(vec![
            ResolveError::new(&def, ResolveReason::NoImplementation),
            ResolveError::new(&def, ResolveReason::MissingSymbol),
            ResolveError::new(&def, ResolveReason::UnknownInterface("SAC".into())),
            ResolveError::new(&def, ResolveReason::Other("why".into())),
        ]);
        assert_eq!(
            err.to_string(),
            "box `f` (p.snet:3:7) has no implementation: build the program with its box code (`snet build`)\n\
             box `f` (p.snet:3:7) has no implementation in this executable: rebuild it with `snet build`\n\
             box `f` (p.snet:3:7): unknown box language interface `SAC`\n\
             box `f` (p.snet:3:7): why"
        );
        assert_eq!(
            EngineError::Placement {
                node: Rank(4),
                nodes: 2,
                loc: loc(),
            }
            .to_string(),
            "p.snet:3:7: placement error: `@ 4` places a component on node 4, but the run has 2 node(s): 0..1"
        );
        assert_eq!(
            EngineError::Internal(InternalError::NodePanicked { node: Rank(1) }).to_string(),
            "internal error: node 1 panicked"
        );
        assert_eq!(
            EngineError::Internal(InternalError::WorkerPanicked).to_string(),
            "internal error: a worker panicked"
        );
        assert_eq!(
            EngineError::Internal(InternalError::ThreadPanicked { node: Rank(0) }).to_string(),
            "internal error: a thread of node 0 panicked"
        );
    }

    #[test]
    fn io_and_distribution_errors() {
        #[derive(Debug)]
        struct Mine(u32);
        impl fmt::Display for Mine {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "line {}: bad", self.0)
            }
        }
        impl Error for Mine {}
        let err = EngineError::Input(SourceError::new(Mine(9)));
        assert_eq!(err.to_string(), "malformed input: line 9: bad");
        let EngineError::Input(e) = &err else {
            unreachable!()
        };
        assert_eq!(e.downcast_ref::<Mine>().map(|m| m.0), Some(9));
        assert_eq!(
            EngineError::Input(SourceError::new("plain text")).to_string(),
            "malformed input: plain text"
        );
        let io = std::io::Error::new(std::io::ErrorKind::BrokenPipe, "pipe closed");
        let err = EngineError::Output(Arc::new(io));
        assert_eq!(err.to_string(), "cannot write output: pipe closed");
        let d = |e| EngineError::Distribution(e).to_string();
        assert_eq!(
            d(DistributionError::Send {
                from: Rank(0),
                to: Rank(2),
                error: TransportError::Closed,
            }),
            "distribution: node 0 cannot send to node 2: the transport was closed"
        );
        assert_eq!(
            d(DistributionError::Transport(TransportError::backend(
                std::io::Error::other("x")
            ))),
            "distribution: x"
        );
        assert_eq!(
            d(DistributionError::Protocol(ProtocolError::Malformed {
                from: Rank(1),
                error: WireError {
                    at: 3,
                    what: crate::dist::wire::Malformed::UnknownFrame(9)
                }
            })),
            "distribution: from node 1: malformed message at byte 3: unknown frame kind 9"
        );
        assert_eq!(
            d(DistributionError::Field {
                node: Rank(1),
                error: crate::dist::wire::FieldStays {
                    label: snet_core::Label::field("p"),
                    to: Rank(0),
                    error: snet_core::NotPortable {
                        holds: "pointers",
                        made_by: None
                    },
                },
            }),
            "distribution: node 1: field `p` cannot go to node 0: field holds pointers, which cannot be sent to another node"
        );
        assert_eq!(
            EngineError::Node {
                node: Rank(1),
                message: "m".into()
            }
            .to_string(),
            "node 1: m"
        );
    }
}
