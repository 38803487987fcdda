//! One input of a merge whose order matters to a lost node's replay
//! (issue 40): a stateless entity in front of the merge's downstream
//! entity that links each record's custody token after the last one
//! that left this input ([`PathLast`]), then sends the record on.
//!
//! Made only on a node other than 0 of a run that survives a lost node,
//! for the merges [`snet_core::Graph::merges_to_link`] names (a
//! placement with several synchrocell instances behind a race): no other
//! network has one, so no other record pays for it.

use crate::dist::custody::PathLast;
use crate::entity::{Entity, Item};
use crate::runtime::Ctx;
use crate::sync::Arc;
use crate::EngineError;

pub(crate) struct PathLink {
    last: PathLast,
    next: Arc<Entity>,
}

impl PathLink {
    pub(crate) fn new(next: Arc<Entity>) -> PathLink {
        PathLink {
            last: PathLast::default(),
            next,
        }
    }

    /// The merge's downstream entity this input goes to.
    pub(crate) fn next(&self) -> &Arc<Entity> {
        &self.next
    }

    /// Runs under the sender's licence ([`crate::runtime::Stateless`]):
    /// the records of one sender are linked in the order it sends them.
    pub(crate) fn process(&self, item: Item, ctx: &mut Ctx) -> Result<(), EngineError> {
        if let Item::Rec(r) = &item {
            self.last.pass(r.det.custody());
        }
        ctx.send(&self.next, item);
        Ok(())
    }
}
