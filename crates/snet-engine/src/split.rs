//! Parallel replication: `A ! <t>`, the deterministic `A !! <t>`, and
//! indexed dynamic placement `A !@ <t>` and its deterministic variant `A !!@ <t>`.
//!
//! One replica of `A` per distinct value of tag `t`, created when the first
//! record with that value arrives. Dynamic placement is a split whose value
//! also names the node the replica runs on; the distribution layer says which
//! nodes exist (on a single node only node 0).

use rustc_hash::FxHashMap;
use std::collections::VecDeque;

use crate::collector::DetOwner;
use crate::entity::{Entity, Item, Rec};
use crate::error::{record_type, EvalContext, RuntimeTypeError};
use crate::instantiate::{instantiate_at, remote_instance};
use crate::program::SplitDef;
use crate::runtime::Ctx;
use crate::sync::Arc;
use crate::synchrocell::{Cell, Stored};
use crate::EngineError;
use snet_core::Rank;

pub(crate) struct SplitEntity {
    def: Arc<SplitDef>,
    /// Each tag value's replica: its index in `outlets`.
    replicas: FxHashMap<i64, usize>,
    /// The replicas, in the order they were created.
    outlets: Vec<Outlet>,
    /// Outlets holding records of the run being dispatched, in the order
    /// of their first record ([`SplitEntity::flush`]).
    touched: Vec<usize>,
    /// Runs of records are held per replica ([`SplitEntity::dispatch_run`]):
    /// the replicas start with a box or are another node's (set when the
    /// first is made).
    holds: bool,
    next: Arc<Entity>,
    /// Boxed with the instance path beside it: the entity's state stays
    /// within 128 bytes (`runtime::size_tests`); a deterministic split
    /// follows one pointer more a record.
    det: Option<Box<DetOwner>>,
    /// The instance path of the split (custody only): replica `v`'s is
    /// this and `v` ([`crate::instantiate::instantiate_at`]).
    at: Option<Box<crate::dist::wire::Path>>,
}

/// A replica, and the items of the current run held for it.
struct Outlet {
    ent: Arc<Entity>,
    /// Empty between the split's steps.
    held: VecDeque<Item>,
}

impl SplitEntity {
    /// Whether the split is a dynamic placement (`!@`): a replica per
    /// node ([`crate::runtime::Kind::toward_remote`]).
    pub(crate) fn places(&self) -> bool {
        self.def.placement
    }

    pub(crate) fn new(
        def: Arc<SplitDef>,
        next: Arc<Entity>,
        det: Option<DetOwner>,
        at: Option<Box<crate::dist::wire::Path>>,
    ) -> SplitEntity {
        SplitEntity {
            at,
            def,
            replicas: FxHashMap::default(),
            outlets: Vec::new(),
            touched: Vec::new(),
            holds: false,
            next,
            det: det.map(Box::new),
        }
    }

    pub(crate) fn process(
        &mut self,
        item: Item,
        ctx: &mut Ctx,
        me: &Arc<Entity>,
    ) -> Result<(), EngineError> {
        match item {
            Item::Rec(r) => {
                // The records right behind it that the worker took from
                // this entity's inbox are dispatched with it, as one run
                // (one step of the worker's loop). Not in an instrumented
                // run, which logs each item on its own.
                let run = ctx.taken_from(me)
                    && ctx.log.is_none()
                    && matches!(ctx.taken.front(), Some(Item::Rec(_)));
                if run && self.holds {
                    return self.dispatch_run(r, ctx);
                }
                self.dispatch(r, ctx)?;
                if !run {
                    return Ok(());
                }
                // Replicas of filters (run inside the send: nothing to
                // gain by holding their records, and two more moves of
                // each), of a star, a synchrocell or another combinator
                // (`holds` says why), or no replica yet: each record is
                // sent as it is routed.
                while matches!(ctx.taken.front(), Some(Item::Rec(_))) {
                    let Some(Item::Rec(r)) = ctx.taken.pop_front() else {
                        unreachable!("a record is in front")
                    };
                    ctx.pulled += 1;
                    let origin = r.origin;
                    // The run's first record names itself in an error (the
                    // worker adds it); a later one is named here.
                    self.dispatch(r, ctx).map_err(|e| e.caused_by(origin))?;
                }
            }
            Item::Marker(m) => crate::collector::pass_marker(
                self.det.as_deref_mut(),
                m,
                self.outlets.iter().map(|o| &o.ent),
                &self.next,
                ctx,
            ),
            Item::Resume => ctx.send(&self.next, Item::Resume),
            Item::Wake => {}
        }
        Ok(())
    }

    /// A run of records: `first` and the records right behind it in
    /// `ctx.taken`. Each is routed and held for its replica, and each
    /// replica then gets its records in one offer, in the order the split
    /// took them (a farm of 16 replicas fed 64 records at a time: 16
    /// offers, not 64, each handing a replica a run of calls). Records for
    /// different replicas are unordered anyway; a replica's own keep their
    /// order, and a deterministic split's markers stay right behind their
    /// records. Nothing stays held beyond this step, so the split's
    /// licence is never given up with records held (the same rule as
    /// [`Ctx::hold_sends`]). On an error, the records routed before the
    /// failing one are sent first, as one by one they would have been.
    fn dispatch_run(&mut self, first: Rec, ctx: &mut Ctx) -> Result<(), EngineError> {
        let mut result = self.hold(first, ctx);
        while result.is_ok() && matches!(ctx.taken.front(), Some(Item::Rec(_))) {
            let Some(Item::Rec(r)) = ctx.taken.pop_front() else {
                unreachable!("a record is in front")
            };
            ctx.pulled += 1;
            let origin = r.origin;
            // The run's first record names itself in an error (the worker
            // adds it); a later one is named here.
            result = self.hold(r, ctx).map_err(|e| e.caused_by(origin));
        }
        for &i in &self.touched {
            let o = &mut self.outlets[i];
            ctx.send_all(&o.ent, &mut o.held);
        }
        self.touched.clear();
        result
    }

    /// Routes a record and sends it (and its marker) to its replica.
    #[inline(always)]
    fn dispatch(&mut self, mut r: Rec, ctx: &mut Ctx) -> Result<(), EngineError> {
        let (i, marker) = self.route(&mut r, ctx)?;
        crate::collector::send_in(&self.outlets[i].ent, r, marker, ctx);
        Ok(())
    }

    /// Routes a record of a run and holds it (and its marker) for its replica.
    #[inline(always)]
    fn hold(&mut self, mut r: Rec, ctx: &mut Ctx) -> Result<(), EngineError> {
        let (i, marker) = self.route(&mut r, ctx)?;
        let held = &mut self.outlets[i].held;
        if held.is_empty() {
            self.touched.push(i);
        }
        held.push_back(Item::Rec(r));
        if let Some(m) = marker {
            held.push_back(Item::Marker(m));
        }
        Ok(())
    }

    /// A record's replica (its index in `outlets`; created if it is the
    /// first record of its value), and its ordering marker if the split is
    /// deterministic (the record is stamped).
    #[inline(always)]
    fn route(
        &mut self,
        r: &mut Rec,
        ctx: &mut Ctx,
    ) -> Result<(usize, Option<crate::entity::Marker>), EngineError> {
        let def = &*self.def;
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
            return Err(EngineError::DynamicPlacement {
                value: v,
                tag: def.tag,
                nodes: ctx.rt.nodes,
                loc: ctx.rt.loc(def.node),
            });
        }
        let marker = self.det.as_mut().map(|d| d.stamp(r));
        // A lookup, not `entry` (whose call the compiler may leave out of
        // line: +24 instructions a record in the light farm).
        let i = match self.replicas.get(&v) {
            Some(&i) => i,
            None => self.first_of(v, r, ctx),
        };
        Ok((i, marker))
    }

    /// The first record of value `v` (`r`): its replica is made.
    #[cold]
    #[inline(never)]
    fn first_of(&mut self, v: i64, r: &Rec, ctx: &mut Ctx) -> usize {
        let def = &*self.def;
        let body = def.body;
        // The replica's initialisers start as part of the record that creates it.
        // (A body that places something, in a run that survives a lost
        // node, is instantiated here with its other parts placed on `v`:
        // `Graph::placed_for_replay`.)
        let t = if let Some(&body) = def.per_node.get(v as usize) {
            let next = crate::instantiate::merge_input(ctx, def.node, &self.next);
            instantiate_at(ctx, self.at.as_deref(), v as u64, body, next, &r.det)
        } else if def.placement && v != i64::from(ctx.rt.node.0) {
            remote_instance(ctx, Rank(v as u32), body, self.next.clone(), &r.det)
        } else {
            let next = crate::instantiate::merge_input(ctx, def.node, &self.next);
            instantiate_at(ctx, self.at.as_deref(), v as u64, body, next, &r.det)
        };
        t.mark_replica();
        ctx.start();
        // Replicas are alike. Runs are held for replicas that start with
        // a box (a farm: each offer hands the box a run of calls) or that
        // are a connection to another node (one message part a run).
        // Not for any other stateful replica: sieve-feedback's split of
        // stars of synchrocells (`bench/run`, 2 workers, 11 interleaved
        // runs) took 0.170 s with its runs held, 0.150 s without (the
        // build before runs were held took 0.150 s), switching context
        // 4,200 times a run against 2,600 (docs/performance.md, *A
        // record in a farm*).
        self.holds = t.is_box() || t.is_remote();
        self.outlets.push(Outlet {
            ent: t,
            held: VecDeque::new(),
        });
        let i = self.outlets.len() - 1;
        self.replicas.insert(v, i);
        i
    }
}

/// `[| p1, p2, .. |] ! <t>` (and `!!`) run as one entity (as the fused
/// star runs `[| .. |] * pats`, FRONT §5.3).
///
/// The replica of value `v` would be one synchrocell entity whose output
/// goes to `next`; here it is a [`Cell`] in a map, and a record reaches
/// `next` without the extra hop. Each replica receives its records in the
/// order the split sends them, and so does the cell here, so every output
/// is one the split of entities could produce. The entity is FIFO, so a
/// deterministic split needs no collector: a merged record leaves when the
/// record that fired it arrives, which is where the collector would put it
/// (it carries that record's stamps). Markers and `Resume` follow every
/// record ahead of them by passing straight on.
///
/// A cell that fired is the identity: its value moves to `fired` (one
/// integer instead of a whole entity, which is what made `fib` and `po2`
/// create an entity per tree node), and later records with that value pass.
pub(crate) struct SplitSynchrocell {
    def: Arc<SplitDef>,
    /// The synchrocell's template node and definition.
    sync_node: snet_core::NodeId,
    sync: Arc<snet_core::SynchrocellDef>,
    open: FxHashMap<i64, Cell>,
    fired: rustc_hash::FxHashSet<i64>,
    next: Arc<Entity>,
    /// In the node's list of entities holding records.
    listed: bool,
    /// Custody of the cells' decisions, keyed by tag value (a node other
    /// than 0 of a run that survives a lost node: synchrocell.rs).
    guard: Option<Box<crate::synchrocell::Guard>>,
}

impl SplitSynchrocell {
    /// Where this entity sends what it makes ([`crate::runtime::Kind::toward_remote`]).
    pub(crate) fn next(&self) -> &Arc<Entity> {
        &self.next
    }

    pub(crate) fn new(
        def: Arc<SplitDef>,
        next: Arc<Entity>,
        net: &crate::dist::Net,
        at: &crate::dist::wire::Path,
    ) -> SplitSynchrocell {
        let (sync_node, sync) = def.fused.clone().expect("a fused split");
        SplitSynchrocell {
            guard: crate::synchrocell::Guard::new(net, sync_node, at),
            def,
            sync_node,
            sync,
            open: FxHashMap::default(),
            fired: Default::default(),
            next,
            listed: false,
        }
    }

    /// The synchrocell's template node and the records held (end-of-run report).
    pub(crate) fn held(&self) -> (snet_core::NodeId, Vec<&snet_core::Record>) {
        (
            self.sync_node,
            self.open.values().flat_map(Cell::held).collect(),
        )
    }

    pub(crate) fn process(
        &mut self,
        item: Item,
        ctx: &mut Ctx,
        me: &Arc<Entity>,
    ) -> Result<(), EngineError> {
        let Item::Rec(Rec {
            rec,
            mut det,
            origin,
        }) = item
        else {
            let open = &self.open;
            crate::synchrocell::not_a_record(item, &mut self.guard, ctx, &self.next, |key, i| {
                open.get(&(key as i64)).and_then(|c| c.slot(i))
            });
            return Ok(());
        };
        let def = &*self.def;
        let Some(v) = rec.int(def.tag) else {
            return Err(EngineError::Type {
                error: RuntimeTypeError::MissingSplitTag {
                    record: record_type(&rec),
                    tag: def.tag,
                    placement: def.placement,
                },
                loc: ctx.rt.loc(def.node),
            });
        };
        let pats = &self.sync.patterns;
        let t0 = if ctx.log.is_some() {
            crate::instrument::now_ns()
        } else {
            0
        };
        // The cell's key in the guard: the value's bits.
        let key = v as u64;
        let stored = match self.open.get_mut(&v) {
            Some(cell) => cell.offer(pats, rec),
            None if self.fired.contains(&v) => Ok(Stored::Passed(rec)),
            None if self
                .guard
                .as_mut()
                .is_some_and(|g| g.first(&ctx.rt.net, key, &det)) =>
            {
                // Fired in an earlier incarnation of this node.
                self.fired.insert(v);
                Ok(Stored::Passed(rec))
            }
            None => {
                let mut cell = Cell::new(pats.len());
                // Records an earlier incarnation's drain parked here.
                let mut restored = false;
                if let Some(g) = &mut self.guard {
                    for (i, r) in g.parked(&ctx.rt.net, key, &det) {
                        restored |= cell.restore(i as usize, r);
                    }
                }
                let r = cell.offer(pats, rec);
                if matches!(r, Ok(Stored::Kept(_)))
                    || (restored && matches!(r, Ok(Stored::Passed(_))))
                {
                    self.open.insert(v, cell);
                } else if matches!(r, Ok(Stored::Fired(_))) {
                    self.fired.insert(v);
                }
                r
            }
        }
        .map_err(|error| EngineError::Eval {
            error,
            context: EvalContext::Synchrocell,
            loc: ctx.rt.loc(self.sync_node),
        })?;
        match stored {
            Stored::Kept(i) => {
                if let Some(g) = &mut self.guard {
                    g.stored(key, i, det.take_kept());
                }
                ctx.rt
                    .note_holding(me, &mut self.listed, self.sync_node, ctx.stacks.worker())
            }
            Stored::Fired(rec) => {
                if let Some(g) = &mut self.guard {
                    g.fired(key, det.custody());
                }
                ctx.rt
                    .released(self.sync_node, pats.len() - 1, ctx.stacks.worker());
                // Only an open cell can fire here after a first `Kept`.
                if self.open.remove(&v).is_some() {
                    self.fired.insert(v);
                }
                if let Some(log) = ctx.log.as_deref_mut() {
                    log.fire(self.sync_node, t0, crate::instrument::now_ns());
                }
                ctx.send(&self.next, Item::Rec(Rec { rec, det, origin }));
            }
            Stored::Passed(rec) => {
                // A record no pattern takes passes whatever the cell did.
                let takes = crate::synchrocell::takes(pats, &rec);
                if let (Some(g), true) = (&mut self.guard, takes) {
                    g.passed(key..=key, det.custody());
                    g.passed_open(key..=key, det.custody());
                }
                ctx.send(&self.next, Item::Rec(Rec { rec, det, origin }))
            }
        }
        Ok(())
    }
}
