//! Parallel replication: `A ! <t>`, the deterministic `A !! <t>`, and
//! indexed dynamic placement `A !@ <t>` and its deterministic variant `A !!@ <t>`.
//!
//! One replica of `A` per distinct value of tag `t`, created when the first
//! record with that value arrives. Dynamic placement is a split whose value
//! also names the node the replica runs on; the distribution layer says which
//! nodes exist (on a single node only node 0).

use rustc_hash::FxHashMap;

use crate::collector::DetOwner;
use crate::entity::{Entity, Item};
use crate::error::{record_type, RuntimeTypeError};
use crate::instantiate::{instantiate, remote_instance};
use crate::program::SplitDef;
use crate::runtime::Ctx;
use crate::sync::Arc;
use crate::EngineError;

pub struct SplitEntity {
    def: Arc<SplitDef>,
    replicas: FxHashMap<i64, Arc<Entity>>,
    next: Arc<Entity>,
    det: Option<DetOwner>,
}

impl SplitEntity {
    pub fn new(def: Arc<SplitDef>, next: Arc<Entity>, det: Option<DetOwner>) -> SplitEntity {
        SplitEntity {
            def,
            replicas: FxHashMap::default(),
            next,
            det,
        }
    }

    pub fn process(&mut self, item: Item, ctx: &mut Ctx) -> Result<(), EngineError> {
        let def = &*self.def;
        match item {
            Item::Rec(mut r) => {
                let Some(v) = r.rec.int(def.tag) else {
                    return Err(EngineError::Type {
                        error: RuntimeTypeError::MissingSplitTag {
                            record: record_type(&r.rec),
                            tag: def.tag,
                            placement: def.placement,
                        },
                        loc: ctx.rt.loc(def.node),
                    });
                };
                if def.placement && !(0..i64::from(ctx.rt.nodes)).contains(&v) {
                    return Err(EngineError::Type {
                        error: RuntimeTypeError::NoSuchNode {
                            value: v,
                            tag: def.tag,
                            nodes: ctx.rt.nodes,
                        },
                        loc: ctx.rt.loc(def.node),
                    });
                }
                let marker = self.det.as_mut().map(|d| d.stamp(&mut r));
                let target = match self.replicas.get(&v) {
                    Some(t) => t.clone(),
                    None => {
                        let body = def.body;
                        // The replica's initialisers start as part of the record that creates it.
                        let t = if def.placement && v != i64::from(ctx.rt.node) {
                            remote_instance(ctx, v as u32, body, self.next.clone(), &r.det)
                        } else {
                            instantiate(ctx, body, self.next.clone(), &r.det)
                        };
                        ctx.start();
                        self.replicas.insert(v, t.clone());
                        t
                    }
                };
                crate::collector::send_in(&target, r, marker, ctx);
            }
            Item::Marker(m) => crate::collector::pass_marker(
                self.det.as_mut(),
                m,
                self.replicas.values(),
                &self.next,
                ctx,
            ),
            Item::Resume => ctx.send(&self.next, Item::Resume),
            Item::Wake => {}
        }
        Ok(())
    }
}
