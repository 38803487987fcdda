//! The network's output stream: writes records in arrival order.

use crate::entity::Item;
use crate::runtime::Ctx;
use crate::sync::Ordering;
use crate::EngineError;

pub(crate) struct OutputEntity {
    pub sink: Box<dyn crate::Sink>,
    /// Records parked while their fields are fetched from other nodes.
    parked: crate::dist::fields::Parked,
}

impl OutputEntity {
    pub(crate) fn new(sink: Box<dyn crate::Sink>) -> OutputEntity {
        OutputEntity {
            sink,
            parked: Default::default(),
        }
    }

    /// Writes a record once every field of it is on this node (in a
    /// distributed run, fields still on other nodes are fetched first; the
    /// output keeps its order meanwhile).
    pub(crate) fn process(
        &mut self,
        item: Item,
        ctx: &mut Ctx,
        me: &crate::sync::Arc<crate::entity::Entity>,
    ) -> Result<(), EngineError> {
        if !ctx.rt.net.distributed() {
            return self.write(item, ctx);
        }
        let ready = |rec: &snet_core::Record| {
            let fields = rec.labels().filter(|l| l.is_field());
            crate::dist::fields::ensure_local(rec, fields, me, ctx)
        };
        for it in self.parked.admit(item, ready) {
            self.write(it, ctx)?;
        }
        Ok(())
    }

    /// After a failed run (every worker stopped): writes the records that
    /// reached the output but were not written yet, `pending` in stream
    /// order behind the parked ones, skipping any whose fields are still
    /// on another node (they cannot be fetched any more). Returns how many
    /// were written; stops at the sink's first error.
    pub(crate) fn write_finished(&mut self, pending: impl IntoIterator<Item = Item>) -> usize {
        let mut written = 0;
        for item in self.parked.resume().into_iter().chain(pending) {
            let Item::Rec(r) = item else { continue };
            if r.rec
                .labels()
                .any(|l| l.is_field() && r.rec.field(l).is_some_and(|f| f.get().is_none()))
            {
                continue;
            }
            if self.sink.write(&r.rec).is_err() {
                break;
            }
            written += 1;
        }
        written
    }

    fn write(&mut self, item: Item, ctx: &mut Ctx) -> Result<(), EngineError> {
        match item {
            Item::Rec(r) => {
                debug_assert!(
                    r.det.is_empty(),
                    "record left the network with ordering stamps"
                );
                self.sink
                    .write(&r.rec)
                    .map_err(|e| EngineError::Output(std::sync::Arc::new(e)))?;
                // Release: pairs with the Acquire load in the scheduler's admission check.
                ctx.rt.outputs.fetch_add(1, Ordering::Release);
                Ok(())
            }
            // Markers never reach the output: their owners sit inside the network.
            Item::Marker(_) | Item::Resume | Item::Wake => Ok(()),
        }
    }
}
