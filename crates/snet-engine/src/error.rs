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

use snet_core::{BoxDef, EvalError, Label, Loc, Variant};

use crate::dist::TransportError;

/// What went wrong during a run. The message names the component and its source location.
#[derive(Clone, Debug)]
pub enum EngineError {
    /// A record did not fit a component's type (no parallel branch, missing split tag, ...).
    Type {
        error: RuntimeTypeError,
        loc: Option<Loc>,
    },
    /// A tag expression failed (division by zero, ...) in the given context.
    Eval {
        error: EvalError,
        context: EvalContext,
        loc: Option<Loc>,
    },
    /// A box misbehaved (bad variant number, missing input, ...).
    Box {
        name: String,
        error: BoxError,
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
        node: u32,
        nodes: u32,
        loc: Option<Loc>,
    },
    /// Another node failed; `message` is its error (as text: it crossed
    /// processes).
    Node { node: u32, message: String },
    /// Nodes could not talk (a transport failure or a protocol error).
    Distribution(DistributionError),
    /// An engine bug stopped the run.
    Internal(InternalError),
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
            EngineError::Node { node, message } => write!(f, "node {node}: {message}"),
            EngineError::Distribution(e) => write!(f, "distribution: {e}"),
            EngineError::Internal(e) => write!(f, "internal error: {e}"),
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
    WrongInput { record: Variant, takes: Variant },
    /// The box emitted an output variant its signature does not declare
    /// (variants are numbered from 1). `call` names the interface function
    /// that was given the number, when the interface caught it (e.g.
    /// `C4SNetOut`); `None` when the engine did.
    VariantOutOfRange {
        variant: i64,
        declared: usize,
        call: Option<&'static str>,
    },
    /// `call` (e.g. `C4SNetOut`) was given a null value for field `label`
    /// of output variant `variant`.
    NullField {
        label: Label,
        variant: usize,
        call: &'static str,
    },
    /// The input record lacks a label the box takes.
    MissingInput { label: Label },
    /// The value of field `label` is not on this node.
    NotLocal { label: Label },
    /// The value of field `label` cannot be handed to the box's language
    /// (`language`, e.g. `C`) for the interface's `reason`.
    Unconvertible {
        label: Label,
        language: &'static str,
        reason: String,
    },
    /// Box code misused its language interface's API (a stale handle, an
    /// invalid argument), as the interface describes it.
    Misuse(String),
    /// Any other failure, as box code or a language interface describes it.
    Failed(String),
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
            BoxError::Misuse(m) | BoxError::Failed(m) => f.write_str(m),
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
        record: Variant,
        accepted: Vec<Variant>,
    },
    /// A record lacks the tag a parallel replication (`placement` false)
    /// or a dynamic placement (`placement` true) splits on.
    MissingSplitTag {
        record: Variant,
        tag: Label,
        placement: bool,
    },
    /// A dynamic placement's tag `tag` has value `value`, which is not a
    /// node of the run (which has `nodes` nodes).
    NoSuchNode { value: i64, tag: Label, nodes: u32 },
    /// A record that reaches a repeated synchronisation matches neither an
    /// exit pattern nor a synchrocell pattern.
    EndlessSynchronisation { record: Variant },
    /// A filter received a record that does not match its pattern.
    FilterPattern { pattern: Variant, record: Variant },
    /// A filter's outspec copies field `field`, which the record lacks.
    FilterMissingField { field: Label, record: Variant },
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
            RuntimeTypeError::NoSuchNode { value, tag, nodes } => write!(
                f,
                "dynamic placement to node {value} (tag {tag}), but the run has {nodes} node(s): 0..{}",
                nodes.saturating_sub(1)
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
        from: u32,
        to: u32,
        error: TransportError,
    },
    /// Receiving failed.
    Transport(TransportError),
    /// A message this node cannot make sense of (as the decoder describes it).
    Protocol(String),
    /// A field that cannot leave node `node` (`what` names the field, its
    /// destination and the reason).
    Field { node: u32, what: String },
}

impl fmt::Display for DistributionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DistributionError::Send { from, to, error } => {
                write!(f, "node {from} cannot send to node {to}: {error}")
            }
            DistributionError::Transport(e) => write!(f, "{e}"),
            DistributionError::Protocol(m) => f.write_str(m),
            DistributionError::Field { node, what } => write!(f, "node {node}: {what}"),
        }
    }
}

impl Error for DistributionError {}

/// An engine bug that stopped the run ([`EngineError::Internal`]).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum InternalError {
    /// The thread running node `node` of a loopback run panicked.
    NodePanicked { node: u32 },
    /// A worker panicked.
    WorkerPanicked,
    /// Another thread of node `node` (the reader, a manager, a worker's
    /// loop) panicked.
    ThreadPanicked { node: u32 },
}

impl fmt::Display for InternalError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            InternalError::NodePanicked { node } => write!(f, "node {node} panicked"),
            InternalError::WorkerPanicked => f.write_str("a worker panicked"),
            InternalError::ThreadPanicked { node } => {
                write!(f, "a thread of node {node} panicked")
            }
        }
    }
}

impl Error for InternalError {}

/// A record's type as `Record::type_string` writes it: `{a, <t>}`.
struct RecordType<'a>(&'a Variant);

impl fmt::Display for RecordType<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("{")?;
        for (i, l) in self.0.labels().iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{l}")?;
        }
        f.write_str("}")
    }
}

/// The type of `rec`, for the payloads above.
pub(crate) fn record_type(rec: &snet_core::Record) -> Variant {
    Variant::new(rec.labels())
}
