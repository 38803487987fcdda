//! Boxes: the engine side of the language interfaces.
//!
//! A language interface (C4SNet, ...) resolves each box declaration to a
//! [`BoxImpl`]. The box entity checks the input record against the box's
//! input labels, invokes the implementation, checks every emitted record
//! (variant number in range), adds the flow-inherited labels, and passes the
//! outputs on in the order the box emitted them.

use snet_core::{BoxDef, BoxId, NodeId, Record};

use crate::entity::{Entity, Item, Rec};
use crate::instantiate::{Ctx, Runtime};
use crate::sync::Arc;
use crate::EngineError;

/// A box failure, reported with the box's name by the engine.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BoxError(pub String);

/// Receives a box's outputs.
pub trait Emit {
    /// `variant` is 1-based, as in `C4SNetOut`; `rec` holds exactly that variant's labels.
    fn emit(&mut self, variant: usize, rec: Record) -> Result<(), BoxError>;
}

/// One box's implementation. May be called from any worker, concurrently.
pub trait BoxImpl: Send + Sync {
    /// Runs the box on the input record (which matches the box's input labels).
    fn invoke(&self, input: &Record, out: &mut dyn Emit) -> Result<(), BoxError>;
}

/// A box language: resolves declarations to implementations before the run.
pub trait LanguageInterface {
    fn resolve(&self, def: &BoxDef) -> Result<Arc<dyn BoxImpl>, String>;
}

/// The interface of pure S-Net runs: no box has an implementation.
pub struct NoBoxes;

impl LanguageInterface for NoBoxes {
    fn resolve(&self, def: &BoxDef) -> Result<Arc<dyn BoxImpl>, String> {
        Err(format!(
            "box `{}` ({}) has no implementation: build the program with its box code (`snet build`) or load it with `--boxes LIB.so`",
            def.name, def.loc
        ))
    }
}

pub struct BoxEntity {
    node: NodeId,
    id: BoxId,
    imp: Arc<dyn BoxImpl>,
    next: Arc<Entity>,
}

struct Collect<'a> {
    def: &'a BoxDef,
    outs: Vec<Record>,
}

impl Emit for Collect<'_> {
    fn emit(&mut self, variant: usize, rec: Record) -> Result<(), BoxError> {
        if variant == 0 || variant > self.def.outputs.len() {
            return Err(BoxError(format!(
                "emitted output variant {variant}, but its signature declares {} variant(s) (numbered from 1)",
                self.def.outputs.len()
            )));
        }
        self.outs.push(rec);
        Ok(())
    }
}

impl BoxEntity {
    pub fn new(rt: &Runtime, node: NodeId, id: BoxId, next: Arc<Entity>) -> BoxEntity {
        let imp = rt.boxes[id as usize].clone().expect("boxes of the entry network are resolved before the run");
        BoxEntity { node, id, imp, next }
    }

    pub fn process(&mut self, item: Item, ctx: &mut Ctx) -> Result<(), EngineError> {
        let Item::Rec(Rec { rec, det }) = item else {
            ctx.send(&self.next, item);
            return Ok(());
        };
        let def = ctx.rt.graph().box_def(self.id);
        let input = def.input_variant();
        let err = |what: String| EngineError::Box { name: def.name.clone(), what, loc: ctx.rt.loc(self.node) };
        if !rec.matches(&input) {
            return Err(err(format!("called with record {}, but it takes {}", rec.type_string(), input)));
        }
        let mut c = Collect { def, outs: Vec::new() };
        self.imp.invoke(&rec, &mut c).map_err(|e| err(e.0))?;
        for mut out in c.outs {
            out.inherit(&rec, &input);
            ctx.send(&self.next, Item::Rec(Rec { rec: out, det: det.clone() }));
        }
        Ok(())
    }
}
