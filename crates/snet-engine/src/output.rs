//! The network's output stream: writes records in arrival order.

use crate::entity::Item;
use crate::instantiate::Ctx;
use crate::sync::Ordering;
use crate::EngineError;

pub struct OutputEntity {
    pub sink: Box<dyn crate::Sink>,
}

impl OutputEntity {
    pub fn new(sink: Box<dyn crate::Sink>) -> OutputEntity {
        OutputEntity { sink }
    }

    pub fn process(&mut self, item: Item, ctx: &mut Ctx) -> Result<(), EngineError> {
        match item {
            Item::Rec(r) => {
                debug_assert!(
                    r.det.is_empty(),
                    "record left the network with ordering stamps"
                );
                self.sink
                    .write(&r.rec)
                    .map_err(|e| EngineError::Output(e.to_string()))?;
                // Release: pairs with the Acquire load in the scheduler's admission check.
                ctx.rt.outputs.fetch_add(1, Ordering::Release);
                Ok(())
            }
            // Markers never reach the output: their owners sit inside the network.
            Item::Marker(_) | Item::Resume => Ok(()),
        }
    }
}
