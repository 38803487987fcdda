//! Serial replication: `A * pats` and the deterministic `A ** pats`, and the
//! fused repeated synchronisation `[| .. |] * pats`.
//!
//! A star instance is a chain of stage entities created on demand. Stage `k`
//! checks the exit patterns (and their guards) *before* replica `k`: a
//! matching record leaves to the exit (the downstream entity, or the
//! collector of a deterministic star); any other record enters replica `k`,
//! whose output goes to stage `k + 1`. Creating replica `k` creates stage
//! `k + 1` (an allocation) but not its replica.
//!
//! Ordering markers: a deterministic star stamps records at stage 0 with
//! its sequence number `s`, and the marker of `s` follows them. Each stage
//! remembers, per path (exit, replica), the numbers of the records it sent
//! down that path whose marker has not passed yet, and sends a copy of the
//! marker of `s` down exactly the paths still pending for `s` (to the exit
//! if none is). Tracking numbers, not just "records since the last marker",
//! matters when a replica merges several paths (a `|` or `!` inside): its
//! outputs then reach the next stage with markers of different numbers out
//! of order relative to the records, and several copies of one marker
//! arrive. The copy that arrives after a record (there is one on the
//! record's own path) finds the record's number pending, or an earlier copy
//! that also arrived after the record already took that path. Markers of an
//! enclosing owner are sent down both paths.

use snet_core::{Pattern, Record, SynchrocellDef};

use crate::collector::DetOwner;
use crate::entity::{Entity, Item, Marker, Rec, Stamps};
use crate::error::{record_type, EvalContext, RuntimeTypeError};
use crate::instantiate::instantiate_at;
use crate::program::StarDef;
use crate::runtime::{Ctx, Kind, BACKLOG_LIMIT, YIELD_AFTER};
use crate::sync::Arc;
use crate::synchrocell::Cell;
use crate::EngineError;

pub(crate) struct StarEntity {
    def: Arc<StarDef>,
    level: u32,
    exit: Arc<Entity>,
    body: Option<Arc<Entity>>,
    /// Stage 0 of a deterministic star stamps records.
    det: Option<DetOwner>,
    /// The owner id of this star's own markers (deterministic stars), at every stage.
    owner: Option<u64>,
    /// Deterministic stars: numbers of records sent to the exit / into the
    /// replica whose marker has not followed them yet (usually zero or one).
    pending_exit: Pending,
    pending_body: Pending,
    /// The instance path of the star (custody only): replica `level`'s
    /// is this and `level` ([`crate::instantiate::instantiate_at`]).
    at: Option<Box<crate::dist::wire::Path>>,
}

type Pending = smallvec::SmallVec<[u64; 2]>;

fn note(p: &mut Pending, s: u64) {
    if !p.contains(&s) {
        p.push(s);
    }
}

fn take(p: &mut Pending, s: u64) -> bool {
    match p.iter().position(|&x| x == s) {
        Some(i) => {
            p.swap_remove(i);
            true
        }
        None => false,
    }
}

/// Does `rec` match one of the patterns (variant and guard)?
pub(crate) fn matches_any(pats: &[Pattern], rec: &Record) -> Result<bool, snet_core::EvalError> {
    for p in pats {
        if rec.matches(&p.variant) {
            match &p.guard {
                None => return Ok(true),
                Some(g) => {
                    if g.holds(rec)? {
                        return Ok(true);
                    }
                }
            }
        }
    }
    Ok(false)
}

impl StarEntity {
    /// Where a record leaving the star goes ([`crate::runtime::Kind::toward_remote`]).
    pub(crate) fn exit(&self) -> &Arc<Entity> {
        &self.exit
    }

    pub(crate) fn new(
        def: Arc<StarDef>,
        level: u32,
        exit: Arc<Entity>,
        det: Option<DetOwner>,
        at: Option<Box<crate::dist::wire::Path>>,
    ) -> StarEntity {
        let owner = det.as_ref().map(|d| d.owner);
        StarEntity {
            at,
            def,
            level,
            exit,
            body: None,
            det,
            owner,
            pending_exit: Pending::new(),
            pending_body: Pending::new(),
        }
    }

    /// Replica `level`, created (and started with the stamps `start` of the
    /// record that needs it) on first use.
    fn body(&mut self, start: &Stamps, ctx: &mut Ctx) -> Arc<Entity> {
        if let Some(b) = &self.body {
            return b.clone();
        }
        // Each stage's exit is an input of the merge into the exit: with
        // linked inputs (a lost node's replay), a link of its own in
        // front of the exit (`self.exit` is stage 0's).
        let exit = match self.exit.shared_state() {
            Some(crate::runtime::Stateless::Path(p))
                if crate::instantiate::links_inputs(ctx, self.def.node) =>
            {
                crate::instantiate::merge_input(ctx, self.def.node, p.next())
            }
            _ => self.exit.clone(),
        };
        let at = self.at.clone();
        let mut stage = StarEntity::new(self.def.clone(), self.level + 1, exit, None, at);
        stage.owner = self.owner;
        let next = ctx.entity(Kind::Star(stage));
        next.tag(self.def.node);
        let at = self.at.as_deref();
        let b = instantiate_at(ctx, at, u64::from(self.level), self.def.body, next, start);
        ctx.start();
        self.body = Some(b.clone());
        b
    }

    pub(crate) fn process(&mut self, item: Item, ctx: &mut Ctx) -> Result<(), EngineError> {
        match item {
            Item::Rec(mut r) => {
                let marker = self.det.as_mut().map(|d| d.stamp(&mut r));
                let leave =
                    matches_any(&self.def.exits, &r.rec).map_err(|error| EngineError::Eval {
                        error,
                        context: EvalContext::StarExit,
                        loc: ctx.rt.loc(self.def.node),
                    })?;
                // This star's number of the record (outer collectors' stamps
                // are below it, inner ones were popped on the way out).
                let seq = if self.owner.is_some() {
                    r.det.last().copied()
                } else {
                    None
                };
                if leave {
                    if let Some(s) = seq {
                        note(&mut self.pending_exit, s);
                    }
                    ctx.send(&self.exit, Item::Rec(r));
                } else {
                    if let Some(s) = seq {
                        note(&mut self.pending_body, s);
                    }
                    let b = self.body(&r.det, ctx);
                    ctx.send(&b, Item::Rec(r));
                }
                if let Some(m) = marker {
                    self.own_marker(m, ctx);
                }
            }
            Item::Marker(m) => {
                if Some(m.owner) == self.owner {
                    self.own_marker(m, ctx);
                } else if let Some(d) = &mut self.det {
                    let w = d.wrap(m);
                    ctx.send(&self.exit, Item::Marker(w));
                } else {
                    let paths: Vec<Arc<Entity>> = std::iter::once(self.exit.clone())
                        .chain(self.body.clone())
                        .collect();
                    crate::parallel::broadcast(m, paths.iter(), &self.exit, ctx);
                }
            }
            Item::Resume => ctx.send(&self.exit, Item::Resume),
            Item::Wake => {}
        }
        Ok(())
    }

    /// An own marker: down the paths still pending for its number.
    fn own_marker(&mut self, m: Marker, ctx: &mut Ctx) {
        let body = if take(&mut self.pending_body, m.seq) {
            self.body.clone()
        } else {
            None
        };
        let to_exit = take(&mut self.pending_exit, m.seq) || body.is_none();
        let n = to_exit as usize + body.is_some() as usize;
        let mut copies = m.split(n);
        if to_exit {
            ctx.send(
                &self.exit,
                Item::Marker(copies.next().expect("one copy per path")),
            );
        }
        if let Some(b) = body {
            ctx.send(&b, Item::Marker(copies.next().expect("one copy per path")));
        }
    }
}

/// `[| p1, p2 |] * exits` run as one entity (FRONT §5.3).
///
/// The chain of one-shot cells is kept as the cells that have not fired yet
/// (fired cells are identities and vanish), keyed by their position in the
/// chain, plus, per pattern, the ordered set of positions whose slot for that
/// pattern is still empty. A record that matches an exit pattern leaves;
/// otherwise it goes to the earliest cell (after the position it comes from)
/// with an empty slot for a pattern that accepts it — exactly the cell it
/// would reach walking the chain, found in O(patterns · log cells) instead of
/// by visiting every cell — or to a fresh cell at the end. A merged record
/// continues from the position of the cell that produced it.
///
/// On a replacement node (custody), positions are made in chain order as
/// records need them, each started as node 0 says: fired (a tombstone) or
/// with the records the lost incarnation's end-of-stream drain parked
/// there (a placement inside a feedback loop on node 0). So the chain a
/// replayed record walks is the lost incarnation's at its last drain plus
/// what the replayed records stored again (ARCHITECTURE.md, "Surviving a
/// lost node", the drain).
pub(crate) struct FusedSynchrocell {
    def: Arc<StarDef>,
    sync: Arc<SynchrocellDef>,
    cells: std::collections::BTreeMap<u64, Cell>,
    /// Per pattern: positions of open cells whose slot for it is empty.
    empty: Vec<std::collections::BTreeSet<u64>>,
    next_pos: u64,
    next: Arc<Entity>,
    /// In the node's list of entities holding records.
    listed: bool,
    /// The synchrocell's template node.
    sync_node: snet_core::NodeId,
    /// Custody of the cells' decisions, keyed by chain position (a node
    /// other than 0 of a run that survives a lost node: synchrocell.rs).
    guard: Option<Box<crate::synchrocell::Guard>>,
}

impl FusedSynchrocell {
    /// Where this entity sends what it makes ([`crate::runtime::Kind::toward_remote`]).
    pub(crate) fn next(&self) -> &Arc<Entity> {
        &self.next
    }

    pub(crate) fn new(
        def: Arc<StarDef>,
        next: Arc<Entity>,
        graph: &snet_core::Graph,
        net: &crate::dist::Net,
        at: &crate::dist::wire::Path,
    ) -> FusedSynchrocell {
        let sync = def.fused.clone().expect("a fused star");
        let mut sync_node = def.body;
        while let snet_core::NodeKind::Net { body, .. } = &graph.node(sync_node).kind {
            sync_node = *body;
        }
        FusedSynchrocell {
            guard: crate::synchrocell::Guard::new(net, sync_node, at),
            sync_node,
            def,
            cells: std::collections::BTreeMap::new(),
            empty: vec![std::collections::BTreeSet::new(); sync.patterns.len()],
            sync,
            next_pos: 0,
            next,
            listed: false,
        }
    }

    /// The synchrocell's template node and the records held (end-of-run report).
    pub(crate) fn held(&self) -> (snet_core::NodeId, Vec<&snet_core::Record>) {
        (
            self.sync_node,
            self.cells.values().flat_map(Cell::held).collect(),
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
            let cells = &self.cells;
            crate::synchrocell::not_a_record(item, &mut self.guard, ctx, &self.next, |pos, i| {
                cells.get(&pos).and_then(|c| c.slot(i))
            });
            return Ok(());
        };
        let exits = &self.def.exits;
        let pats = &self.sync.patterns;
        let loc = || ctx.rt.loc(self.def.node);
        let eval_err = |error: snet_core::EvalError| EngineError::Eval {
            error,
            context: EvalContext::RepeatedSynchronisation,
            loc: loc(),
        };
        let mut rec = rec;
        let mut from = 0u64; // the first position the record may still reach
        loop {
            if matches_any(exits, &rec).map_err(eval_err)? {
                ctx.send(&self.next, Item::Rec(Rec { rec, det, origin }));
                return Ok(());
            }
            // Patterns that accept the record (guards evaluated on the record alone).
            let mut accepts = smallvec::SmallVec::<[bool; 4]>::new();
            for p in pats {
                let ok = rec.matches(&p.variant)
                    && match &p.guard {
                        Some(g) => g.holds(&rec).map_err(eval_err)?,
                        None => true,
                    };
                accepts.push(ok);
            }
            if !accepts.contains(&true) {
                return Err(EngineError::Type {
                    error: RuntimeTypeError::EndlessSynchronisation {
                        record: record_type(&rec),
                    },
                    loc: loc(),
                });
            }
            let found = (0..pats.len())
                .filter(|&i| accepts[i])
                .filter_map(|i| self.empty[i].range(from..).next().copied())
                .min();
            let pos = match found {
                Some(pos) => pos,
                // The first position no record has reached yet (every
                // one before `next_pos` exists or has fired).
                None => loop {
                    let mut pos = self.next_pos.max(from);
                    let mut cell = Cell::new(pats.len());
                    let mut restored = false;
                    if let Some(g) = &mut self.guard {
                        // Positions an earlier incarnation of this node
                        // fired are passed (node 0 holds their tombstones).
                        while g.first(&ctx.rt.net, pos, &det) {
                            pos += 1;
                        }
                        // Where its drain parked records (node 0 holds
                        // them until the position's tombstone, and gave
                        // them back before any replayed record), the
                        // position starts with them in their slots,
                        // keeping no token.
                        for (i, r) in g.parked(&ctx.rt.net, pos, &det) {
                            restored |= cell.restore(i as usize, r);
                        }
                        if restored {
                            ctx.rt.note_holding(
                                me,
                                &mut self.listed,
                                self.sync_node,
                                ctx.stacks.worker(),
                            );
                        }
                    }
                    // (An empty cell has a slot for the record: some
                    // pattern accepts it.)
                    let fits = !restored || (0..pats.len()).any(|i| accepts[i] && cell.open(i));
                    for (i, set) in self.empty.iter_mut().enumerate() {
                        if !restored || cell.open(i) {
                            set.insert(pos);
                        }
                    }
                    self.cells.insert(pos, cell);
                    self.next_pos = pos + 1;
                    if fits {
                        break pos;
                    }
                    // A restored position whose slots for the record
                    // are taken is passed (joining no group: its parked
                    // records have none), as in the lost incarnation.
                },
            };
            if let (Some(g), true) = (&mut self.guard, pos > from) {
                // The record passes the cells before `pos`: fired ones,
                // and open ones whose slots for it are taken.
                g.passed(from..=pos - 1, det.custody());
                g.passed_open(from..=pos - 1, det.custody());
            }
            let cell = self.cells.get_mut(&pos).expect("open cell");
            let i = (0..pats.len())
                .find(|&i| accepts[i] && cell.open(i))
                .expect("the chosen cell has a slot for the record");
            self.empty[i].remove(&pos);
            match cell.store(i, pats, rec) {
                None => {
                    if let Some(g) = &mut self.guard {
                        g.stored(pos, i, det.take_kept());
                    }
                    ctx.rt
                        .note_holding(me, &mut self.listed, self.sync_node, ctx.stacks.worker());
                    return Ok(());
                }
                Some(merged) => {
                    if let Some(g) = &mut self.guard {
                        g.fired(pos, det.custody());
                    }
                    ctx.rt
                        .released(self.sync_node, pats.len() - 1, ctx.stacks.worker());
                    self.cells.remove(&pos);
                    rec = merged;
                    from = pos + 1;
                }
            }
        }
    }
}

/// `A * pats` (and `A ** pats`) whose body `A` is a filter or a serial
/// chain of filters, run as one entity: stateless replicas need no
/// entities of their own.
///
/// A record is checked against the exit patterns; if it does not leave, the
/// body's filters are applied to it and each output goes through the same
/// check again, depth first (a work stack, not recursion: a record may
/// circle many times). Every output of one input record leaves within the
/// processing of that record, so the entity is FIFO per input and a
/// deterministic star needs no collector: outputs keep the input's stamps,
/// which is what stamping and the collector's popping would leave. Markers
/// and `Resume` follow everything ahead of them by passing straight on.
///
/// Unlike a chain of stage entities, a record that never reaches an exit
/// keeps this entity (and its worker) busy; such a network never ends
/// either way.
pub(crate) struct FilterStar {
    def: Arc<StarDef>,
    filters: Vec<(snet_core::NodeId, Arc<crate::filter::Filter>)>,
    next: Arc<Entity>,
    /// Records still to check, the next on top (non-empty between calls
    /// only while the input's expansion is suspended).
    work: Vec<Record>,
    /// The stamps of the input being expanded.
    det: Stamps,
    /// The origin of the input being expanded.
    origin: crate::entity::Origin,
    /// Outputs of the filter being applied.
    outs: Vec<Record>,
    /// In the node's list of suspended entities (an expansion is suspended).
    listed: bool,
}

impl FilterStar {
    /// Where this entity sends what it makes ([`crate::runtime::Kind::toward_remote`]).
    pub(crate) fn next(&self) -> &Arc<Entity> {
        &self.next
    }

    pub(crate) fn new(
        rt: &crate::runtime::Runtime,
        def: Arc<StarDef>,
        next: Arc<Entity>,
    ) -> FilterStar {
        let filters = def
            .filters
            .as_ref()
            .expect("a star of filters")
            .iter()
            .map(|&n| (n, rt.prog.filter(n).clone()))
            .collect();
        FilterStar {
            def,
            filters,
            next,
            work: Vec::new(),
            det: Stamps::new(),
            origin: crate::entity::Origin::NONE,
            outs: Vec::new(),
            listed: false,
        }
    }

    /// Expands one input depth first. An input that expands into many
    /// outputs (a recursion's whole tree) is not expanded in one go: after
    /// [`YIELD_AFTER`] outputs the star keeps the rest of its work stack,
    /// yields its worker ([`Ctx::yield_entity`]) so that the entities
    /// downstream consume what it sent (front first: memory stays bounded
    /// by the depth of the expansion, not its breadth), and goes on when
    /// the scheduler hands it [`Item::Wake`]. The licence is kept
    /// meanwhile, so nothing overtakes the rest of the input's outputs.
    pub(crate) fn process(
        &mut self,
        item: Item,
        ctx: &mut Ctx,
        me: &Arc<Entity>,
    ) -> Result<(), EngineError> {
        match item {
            Item::Rec(Rec { rec, det, origin }) => {
                debug_assert!(self.work.is_empty(), "an input while another is suspended");
                self.work.push(rec);
                self.det = det;
                self.origin = origin;
            }
            Item::Wake if self.work.is_empty() => return Ok(()),
            Item::Wake => {
                // Back-pressure: while the entities of this node have a
                // backlog (another worker expanding faster than the rest
                // drains), do not add to it. Items waiting for this star
                // itself, or any other suspended entity, cannot drain
                // before it goes on: they do not count.
                if ctx.backlog_elsewhere() >= BACKLOG_LIMIT {
                    ctx.yield_entity();
                    return Ok(());
                }
            }
            other => {
                debug_assert!(self.work.is_empty(), "an item while an input is suspended");
                ctx.send(&self.next, other);
                return Ok(());
            }
        }
        let r = self.run(ctx);
        let suspended = r.is_ok() && !self.work.is_empty();
        ctx.rt.set_suspended(me, &mut self.listed, suspended);
        if r.is_err() || self.work.is_empty() {
            self.work.clear();
            self.outs.clear();
            self.det = Stamps::new();
        }
        r
    }

    fn run(&mut self, ctx: &mut Ctx) -> Result<(), EngineError> {
        let mut sent = 0;
        while let Some(rec) = self.work.pop() {
            let leave = matches_any(&self.def.exits, &rec).map_err(|error| EngineError::Eval {
                error,
                context: EvalContext::StarExit,
                loc: ctx.rt.loc(self.def.node),
            })?;
            if leave {
                // The input's last output takes its stamps: a clone is a
                // box (and, in a run that survives a lost node, the
                // custody token's count) made here and the original's
                // dropped at the end, about 390 instructions an input on
                // `bench/soak`'s respawn network, whose stars have one
                // output each.
                let det = if self.work.is_empty() {
                    std::mem::take(&mut self.det)
                } else {
                    self.det.clone()
                };
                ctx.send(
                    &self.next,
                    Item::Rec(Rec {
                        rec,
                        det,
                        origin: self.origin,
                    }),
                );
                sent += 1;
                if sent >= YIELD_AFTER && !self.work.is_empty() {
                    ctx.yield_entity();
                    return Ok(());
                }
                continue;
            }
            // The body: each filter applied to every output of the one before.
            let base = self.work.len();
            self.work.push(rec);
            for (node, filter) in &self.filters {
                let outs = &mut self.outs;
                for r in self.work.drain(base..) {
                    filter
                        .apply_owned(r, |o| outs.push(o))
                        .map_err(|what| crate::filter::filter_error(what, *node, ctx))?;
                }
                self.work.append(&mut self.outs);
            }
            // First output on top: it is checked first.
            self.work[base..].reverse();
        }
        Ok(())
    }
}
