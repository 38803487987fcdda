//! Parallel composition: `A | B | ...` and the deterministic `A || B || ...`.
//!
//! The dispatcher sends each record to the branch whose input type it matches
//! best (largest matching variant; ties go to the earlier branch). Branches
//! are instantiated on first use. Nondeterministic branches write straight
//! into the downstream entity; deterministic ones into a collector.

use snet_core::NodeId;

use crate::collector::DetOwner;
use crate::entity::{Entity, Item, Marker};
use crate::instantiate::{instantiate, Ctx};
use crate::sync::Arc;
use crate::EngineError;

pub struct ParallelEntity {
    node: NodeId,
    branches: Vec<Option<Arc<Entity>>>,
    next: Arc<Entity>,
    det: Option<DetOwner>,
}

impl ParallelEntity {
    pub fn new(node: NodeId, n: usize, next: Arc<Entity>, det: Option<DetOwner>) -> ParallelEntity {
        ParallelEntity {
            node,
            branches: vec![None; n],
            next,
            det,
        }
    }

    fn branch(&mut self, i: usize, ctx: &Ctx) -> Arc<Entity> {
        if let Some(b) = &self.branches[i] {
            return b.clone();
        }
        let snet_core::NodeKind::Parallel { branches, .. } = &ctx.rt.graph().node(self.node).kind
        else {
            unreachable!("parallel entity on a non-parallel node")
        };
        let e = instantiate(ctx, branches[i], self.next.clone());
        self.branches[i] = Some(e.clone());
        e
    }

    pub fn process(&mut self, item: Item, ctx: &mut Ctx) -> Result<(), EngineError> {
        match item {
            Item::Rec(r) => {
                let routes = &ctx.rt.prog.routes[self.node as usize];
                let Some(i) = routes
                    .iter()
                    .find(|(v, _)| r.rec.matches(v))
                    .map(|(_, i)| *i)
                else {
                    let accepted: Vec<String> = routes.iter().map(|(v, _)| v.to_string()).collect();
                    return Err(EngineError::Type {
                        what: format!(
                            "record {} matches no branch of the parallel composition (branches accept {})",
                            r.rec.type_string(),
                            accepted.join(", ")
                        ),
                        loc: ctx.rt.loc(self.node),
                    });
                };
                let target = self.branch(i, ctx);
                crate::collector::send_in(self.det.as_mut(), &target, r, ctx);
            }
            Item::Marker(m) => crate::collector::pass_marker(
                self.det.as_mut(),
                m,
                self.branches.iter().flatten(),
                &self.next,
                ctx,
            ),
            Item::Resume => ctx.send(&self.next, Item::Resume),
        }
        Ok(())
    }
}

/// Sends copies of an enclosing owner's marker down every instantiated path
/// (or to `fallback` when there is none): each may hold records it must follow.
pub fn broadcast<'a>(
    m: Marker,
    paths: impl Iterator<Item = &'a Arc<Entity>> + Clone,
    fallback: &Arc<Entity>,
    ctx: &mut Ctx,
) {
    let n = paths.clone().count();
    if n == 0 {
        ctx.send(fallback, Item::Marker(m));
        return;
    }
    for (copy, p) in m.split(n).zip(paths) {
        ctx.send(p, Item::Marker(copy));
    }
}
