//! Boxes written in Rust: the language interface that plugs them into the
//! engine.
//!
//! A registered function becomes a [`snet_engine::BoxImpl`], resolved by
//! name like a C4SNet box's trampoline, so the engine runs it exactly as it
//! runs C boxes: on a call stack of its own, with its outputs' flow
//! inheritance, ordering, `--box-concurrency` and placement on nodes done
//! by the engine. This module adds only what Rust needs: the typed views
//! of the call ([`BoxInput`], [`Emitter`]), a check that each output
//! record holds exactly its variant's labels, and `catch_unwind`, so that
//! a panic is a runtime error naming the box.

use std::collections::HashMap;
use std::fmt;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

use snet_core::{BoxDef, Label, LabelKind};
use snet_engine::{BoxError, BoxImpl, Emit, LanguageInterface, ResolveError, ResolveReason};

use crate::record::{Field, Record};

/// Why a box function failed: any error (`?` converts it) or a message
/// (`Err("why".into())`).
pub type BoxFailure = Box<dyn std::error::Error + Send + Sync>;

/// What a box function returns: `Ok(())`, or an error that ends the run
/// with a message naming the box (`box `NAME`: failed: ERROR`).
pub type BoxResult = Result<(), BoxFailure>;

/// A box function, as registered ([`crate::Network::add_box`]).
pub(crate) type BoxFn = dyn Fn(&BoxInput<'_>, &mut Emitter<'_>) -> BoxResult + Send + Sync;

/// The input record of one box call: the labels of the box's input type
/// (and, behind them, whatever flows around the box, which it does not
/// see).
///
/// ```
/// use snet::{Network, Record};
///
/// let mut net = Network::from_source("t.snet", "box f((<n>) -> (<m>)); net t connect f;")?;
/// net.add_box("f", |input, out| {
///     let n = input.tag("n")?; // an error if the box's input lacks it
///     out.emit(1, snet::Record::new().with_tag("m", n * 10))?;
///     Ok(())
/// });
/// let outputs = net.run([Record::new().with_tag("n", 4)])?;
/// assert_eq!(outputs[0].tag("m"), Some(40));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct BoxInput<'a> {
    rec: &'a snet_core::Record,
    name: &'a str,
}

/// A label the box asked its input for and did not find.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MissingLabel {
    /// The label as S-Net writes it (`x`, `<t>`).
    pub label: String,
    /// The box's name.
    pub box_name: String,
}

impl fmt::Display for MissingLabel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "its input has no {}", self.label)
    }
}

impl std::error::Error for MissingLabel {}

impl BoxInput<'_> {
    /// The value of tag `<name>` (or binding tag `<#name>`).
    pub fn tag(&self, name: &str) -> Result<i64, MissingLabel> {
        Record::view(self.rec)
            .tag(name)
            .ok_or_else(|| MissingLabel {
                label: format!("<{name}>"),
                box_name: self.name.to_string(),
            })
    }

    /// Field `name`.
    pub fn field(&self, name: &str) -> Result<&Field, MissingLabel> {
        Record::view(self.rec)
            .field(name)
            .ok_or_else(|| MissingLabel {
                label: name.to_string(),
                box_name: self.name.to_string(),
            })
    }

    /// The whole input record.
    pub fn record(&self) -> &Record {
        Record::view(self.rec)
    }

    /// The box's name (as declared in the program).
    pub fn box_name(&self) -> &str {
        self.name
    }
}

/// Emits the output records of one box call.
pub struct Emitter<'a> {
    out: &'a mut dyn Emit,
    outputs: &'a [Vec<Label>],
    error: Option<BoxError>,
}

/// Why [`Emitter::emit`] refused a record; the run then fails with this
/// error, naming the box, even if the box goes on.
#[derive(Debug, Clone)]
pub struct EmitError(String);

impl fmt::Display for EmitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for EmitError {}

fn type_text(labels: &mut dyn Iterator<Item = Label>) -> String {
    let mut names: Vec<String> = labels
        .map(|l| match l.kind() {
            LabelKind::Field => l.name().to_string(),
            LabelKind::Tag => format!("<{}>", l.name()),
            LabelKind::BTag => format!("<#{}>", l.name()),
        })
        .collect();
    names.sort();
    format!("({})", names.join(", "))
}

impl Emitter<'_> {
    /// Emits `record` as output variant `variant` (numbered from 1, in
    /// the order of the box's signature). The record must hold exactly
    /// that variant's labels; the engine adds the labels that flow around
    /// the box. The call may pause here while the records downstream are
    /// consumed (a box that emits many records holds only a batch).
    pub fn emit(&mut self, variant: usize, record: Record) -> Result<(), EmitError> {
        if let Some(e) = &self.error {
            return Err(EmitError(e.to_string()));
        }
        let Some(labels) = variant.checked_sub(1).and_then(|i| self.outputs.get(i)) else {
            return self.fail(BoxError::VariantOutOfRange {
                variant: i64::try_from(variant).unwrap_or(i64::MAX),
                declared: self.outputs.len(),
                call: Some("Emitter::emit"),
            });
        };
        let rec = record.0;
        // A set comparison: the record keeps its labels in its own order,
        // which need not be the signature's.
        if rec.len() != labels.len() || !labels.iter().all(|l| rec.get(*l).is_some()) {
            return self.fail(BoxError::Misuse(format!(
                "output variant {variant} is {}, but the record emitted holds {}",
                type_text(&mut labels.iter().copied()),
                type_text(&mut rec.labels())
            )));
        }
        // The call may pause here and the thread run other work meanwhile:
        // no box of ours is running on it then (crash reports, see `invoke`).
        let running = c4snet::crash::clear();
        let in_box = IN_BOX.with(|b| b.replace(false));
        let sent = self.out.emit(variant, rec);
        IN_BOX.with(|b| b.set(in_box));
        c4snet::crash::leave(running);
        match sent {
            Ok(()) => Ok(()),
            Err(e) => self.fail(e),
        }
    }

    fn fail(&mut self, e: BoxError) -> Result<(), EmitError> {
        let text = e.to_string();
        self.error.get_or_insert(e);
        Err(EmitError(text))
    }
}

/// One registered Rust box, resolved against its declaration.
struct RustBox {
    name: Arc<str>,
    f: Arc<BoxFn>,
    outputs: Vec<Vec<Label>>,
}

/// The panic's message, when it is a string.
fn panic_message(p: &(dyn std::any::Any + Send)) -> Option<String> {
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
}

thread_local! {
    /// A Rust box runs on this thread (under `catch_unwind`).
    static IN_BOX: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    /// Where the last panic in a box on this thread happened (`file:line:col`).
    static PANICKED_AT: std::cell::RefCell<Option<String>> = const { std::cell::RefCell::new(None) };
}

/// Installs (once per process) a panic hook that prints nothing for a
/// panic inside a Rust box (the run's error reports it: box, message and
/// place) and passes every other panic to the hook installed before.
pub(crate) fn quiet_panics() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let before = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if IN_BOX.with(std::cell::Cell::get) {
                let at = info
                    .location()
                    .map(|l| format!("{}:{}:{}", l.file(), l.line(), l.column()));
                PANICKED_AT.with(|p| *p.borrow_mut() = at);
                return;
            }
            before(info)
        }));
    });
}

impl BoxImpl for RustBox {
    fn invoke(&self, input: &snet_core::Record, out: &mut dyn Emit) -> Result<(), BoxError> {
        let view = BoxInput {
            rec: input,
            name: &self.name,
        };
        let mut em = Emitter {
            out,
            outputs: &self.outputs,
            error: None,
        };
        // The box's state is its own: a panic leaves nothing of the
        // engine's half-changed (outputs already emitted are whole).
        // Names the box if it crashes or calls `exit` (reported where the
        // handlers are installed: in the node processes of a shm run).
        let outer = c4snet::crash::enter(&self.name);
        // (Saved and restored: a box's call may pause in `emit` and the
        // thread run another box's call meanwhile.)
        let was_in_box = IN_BOX.with(|b| b.replace(true));
        let r = catch_unwind(AssertUnwindSafe(|| (self.f)(&view, &mut em)));
        IN_BOX.with(|b| b.set(was_in_box));
        c4snet::crash::leave(outer);
        if let Some(e) = em.error {
            return Err(e);
        }
        match r {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => Err(BoxError::Failed {
                message: e.to_string(),
            }),
            Err(p) => {
                let at = PANICKED_AT.with(|a| a.borrow_mut().take());
                let message = match (panic_message(&*p), at) {
                    (Some(m), Some(at)) => Some(format!("{m} (at {at})")),
                    (None, Some(at)) => Some(format!("(at {at})")),
                    (m, None) => m,
                };
                Err(BoxError::Panicked { message })
            }
        }
    }
}

/// The language interface of a network's boxes: Rust functions by box
/// name, then the C boxes of the C box libraries loaded
/// ([`crate::Network::add_c_library`]), in the order they were added.
#[derive(Clone, Default)]
pub(crate) struct RustBoxes {
    pub(crate) table: HashMap<String, Arc<BoxFn>>,
    pub(crate) c_libraries: Vec<Arc<c4snet::library::Library>>,
}

impl RustBoxes {
    /// The names of every box with an implementation: functions and the
    /// boxes of the C libraries.
    pub(crate) fn names(&self) -> Vec<&str> {
        let mut names: Vec<&str> = self.table.keys().map(String::as_str).collect();
        for l in &self.c_libraries {
            names.extend(l.names());
        }
        names.sort_unstable();
        names.dedup();
        names
    }
}

impl LanguageInterface for RustBoxes {
    fn resolve(&self, def: &BoxDef) -> Result<Arc<dyn BoxImpl>, ResolveError> {
        if !self.table.contains_key(&def.name) {
            for l in &self.c_libraries {
                let found = l
                    .find(def)
                    .map_err(|e| ResolveError::new(def, ResolveReason::Other(e.to_string())))?;
                if let Some(call) = found {
                    let table = HashMap::from([(def.name.clone(), call)]);
                    return c4snet::library::interface(table).resolve(def);
                }
            }
        }
        let f = self.table.get(&def.name).ok_or_else(|| {
            ResolveError::new(
                def,
                ResolveReason::Other(
                    "no Rust function is registered for it (Network::add_box), nor does a C box library define it (Network::add_c_library)".into(),
                ),
            )
        })?;
        Ok(Arc::new(RustBox {
            name: Arc::from(def.name.as_str()),
            f: f.clone(),
            outputs: def.outputs.clone(),
        }))
    }
}
