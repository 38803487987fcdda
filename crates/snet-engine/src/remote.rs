//! The remote entity: the local end of a connection to another node.
//!
//! It stands where the entry of an instance placed on another node would
//! be (or, on that node, where the instance's successor would be) and puts
//! every item it receives on the node's outbound queue, addressed to the
//! connection; the output manager sends it (see [`crate::dist`]). Items
//! keep their order: one licence holder at a time pushes them, and the
//! output manager and the transport keep the order per connection.

use crate::dist::custody;
use crate::dist::ConnId;
use crate::entity::Item;
use crate::runtime::Ctx;
use crate::EngineError;
use snet_core::Rank;

pub(crate) struct RemoteEntity {
    to: Rank,
    conn: ConnId,
}

impl RemoteEntity {
    pub(crate) fn new(to: Rank, conn: ConnId) -> RemoteEntity {
        RemoteEntity { to, conn }
    }

    pub(crate) fn process(&mut self, mut item: Item, ctx: &mut Ctx) -> Result<(), EngineError> {
        if matches!(item, Item::Wake) {
            return Ok(());
        }
        // A record in custody for the node it goes to is held until every
        // record derived from the same item is (`dist::custody`).
        // So is a copy of a marker in custody (all its copies go together).
        match &mut item {
            Item::Rec(r) if r.det.custody().is_some_and(|t| t.from() == self.to) => {
                if let Some(t) = r.det.take_custody() {
                    t.hold(self.conn, item);
                    release(t, ctx);
                }
                return Ok(());
            }
            Item::Marker(m) if m.custody.0.as_ref().is_some_and(|t| t.from() == self.to) => {
                if let Some(t) = m.custody.0.take() {
                    t.hold(self.conn, item);
                    release(t, ctx);
                }
                return Ok(());
            }
            _ => {}
        }
        // A worker sends it itself after its task (with whatever else
        // the task queued): no output manager woken per item.
        ctx.rt
            .net
            .push_item(self.to, self.conn, item, !ctx.sends_itself);
        ctx.unsent |= ctx.sends_itself;
        Ok(())
    }
}

/// Drops a held record's token (often its last clone: its commit is
/// queued now). A worker that sends what its task queued sends the
/// commit too, with the task's other messages, instead of waking the
/// output manager for it ([`custody::quietly`]).
fn release(t: std::sync::Arc<custody::Token>, ctx: &mut Ctx) {
    if ctx.sends_itself {
        ctx.unsent |= custody::quietly(|| drop(t));
    }
}
