//! Synchrocells: `[| p1 if <g1>, p2, ... |]`.
//!
//! One storage slot per pattern. An arriving record is stored in the first
//! pattern it matches whose slot is empty and whose guard holds; otherwise it
//! passes straight through. When every slot is full the stored records merge
//! into one output (labels each pattern names come from its record, all other
//! labels from the first pattern's record) and the cell becomes the identity.
//! The merged record carries the ordering stamps of the record that fired it.
//!
//! On a node other than 0 of a run that survives a lost node, a cell's
//! decisions are guarded ([`Guard`]): which record a cell stores, and
//! that it fired, depend on the order records arrive in, which replay may
//! change; so nothing that shows a decision may reach node 0 before the
//! records it was about (custody groups, `dist::custody`).

use std::collections::VecDeque;

use snet_core::{NodeId, Pattern, Record, SynchrocellDef};

use crate::entity::{Entity, Item, Rec};
use crate::error::EvalContext;
use crate::runtime::Ctx;
use crate::sync::Arc;
use crate::EngineError;

pub(crate) struct SynchrocellEntity {
    node: NodeId,
    def: Arc<SynchrocellDef>,
    /// Boxed: a cell keeps its slots inline, and entity states stay small
    /// (see `runtime::size_tests`).
    cell: Box<Cell>,
    next: Arc<Entity>,
    /// In the node's list of entities holding records ([`Runtime::note_holding`](crate::runtime::Runtime::note_holding)).
    listed: bool,
    /// Custody of the cell's decisions (a node other than 0 of a run
    /// that survives a lost node).
    guard: Option<Box<Guard>>,
}

/// The state of one synchrocell, shared by the plain and the fused entity.
pub(crate) struct Cell {
    /// Inline for the usual two or three patterns: a cell costs no
    /// allocation.
    slots: smallvec::SmallVec<[Option<Record>; 2]>,
    filled: usize,
    fired: bool,
}

/// What a cell did with a record.
pub(crate) enum Stored {
    /// Kept in slot `i`; nothing to emit.
    Kept(usize),
    /// Filled the last slot: here is the merged record.
    Fired(Record),
    /// Not taken: pass the record on unchanged.
    Passed(Record),
}

impl Cell {
    pub(crate) fn new(n: usize) -> Cell {
        Cell {
            slots: (0..n).map(|_| None).collect(),
            filled: 0,
            fired: false,
        }
    }

    pub(crate) fn offer(
        &mut self,
        patterns: &[Pattern],
        rec: Record,
    ) -> Result<Stored, snet_core::EvalError> {
        if self.fired {
            return Ok(Stored::Passed(rec));
        }
        let mut slot = None;
        for (i, p) in patterns.iter().enumerate() {
            if self.slots[i].is_none() && rec.matches(&p.variant) {
                let ok = match &p.guard {
                    Some(g) => g.holds(&rec)?,
                    None => true,
                };
                if ok {
                    slot = Some(i);
                    break;
                }
            }
        }
        let Some(i) = slot else {
            return Ok(Stored::Passed(rec));
        };
        Ok(match self.store(i, patterns, rec) {
            None => Stored::Kept(i),
            Some(merged) => Stored::Fired(merged),
        })
    }

    /// An earlier incarnation of its node parked `rec` in slot `i` (the
    /// drain handed it to node 0, which gives it back to a replacement):
    /// the cell starts with it there. False if the slot is not an empty
    /// one of this cell (a parked record never fills the last slot).
    pub(crate) fn restore(&mut self, i: usize, rec: Record) -> bool {
        if self.fired || self.slots.get(i).is_none_or(|s| s.is_some()) {
            return false;
        }
        if self.filled + 1 >= self.slots.len() {
            return false;
        }
        self.slots[i] = Some(rec);
        self.filled += 1;
        true
    }

    /// The record stored in slot `i`, if any.
    pub(crate) fn slot(&self, i: usize) -> Option<&Record> {
        self.slots.get(i).and_then(|s| s.as_ref())
    }

    /// The cell fired in an earlier incarnation of its node.
    pub(crate) fn set_fired(&mut self) {
        self.fired = true;
        self.slots = smallvec::SmallVec::new();
    }

    /// The records the cell holds, waiting for their partners.
    pub(crate) fn held(&self) -> impl Iterator<Item = &Record> {
        self.slots.iter().flatten()
    }

    /// Is slot `i` still empty?
    pub(crate) fn open(&self, i: usize) -> bool {
        !self.fired && self.slots[i].is_none()
    }

    /// Stores `rec` in the empty slot `i`; returns the merged record when that
    /// filled the last slot (the cell has then fired).
    pub(crate) fn store(&mut self, i: usize, patterns: &[Pattern], rec: Record) -> Option<Record> {
        debug_assert!(self.open(i));
        self.slots[i] = Some(rec);
        self.filled += 1;
        if self.filled < patterns.len() {
            return None;
        }
        self.fired = true;
        let mut merged = self.slots[0].take().unwrap_or_default();
        for (slot, p) in self.slots[1..].iter_mut().zip(&patterns[1..]) {
            let Some(r) = slot.take() else { continue };
            for l in p.variant.labels() {
                if let Some(v) = r.get(*l) {
                    merged.set(*l, v.clone());
                }
            }
        }
        // A fired cell stores nothing again: no need to keep its slots.
        self.slots = smallvec::SmallVec::new();
        Some(merged)
    }
}

/// What a cell entity (a lone cell, a star's fused cells, a cell per tag
/// value) does with an item that is not a record: on [`Item::Wake`] (node
/// 0's drain) its guard parks the records it still stores, which `slot`
/// finds by key and slot; anything else goes on to `next`.
pub(crate) fn not_a_record<'a>(
    item: Item,
    guard: &mut Option<Box<Guard>>,
    ctx: &mut Ctx,
    next: &Arc<Entity>,
    slot: impl Fn(u64, usize) -> Option<&'a Record>,
) {
    if let Item::Wake = item {
        if let Some(g) = guard {
            g.drain(slot);
        }
    } else {
        ctx.send(next, item);
    }
}

impl SynchrocellEntity {
    /// Where this entity sends what it makes ([`crate::runtime::Kind::toward_remote`]).
    pub(crate) fn next(&self) -> &Arc<Entity> {
        &self.next
    }

    pub(crate) fn new(
        node: NodeId,
        def: Arc<SynchrocellDef>,
        next: Arc<Entity>,
        net: &crate::dist::Net,
        at: &crate::dist::wire::Path,
    ) -> SynchrocellEntity {
        SynchrocellEntity {
            node,
            cell: Box::new(Cell::new(def.patterns.len())),
            def,
            next,
            listed: false,
            guard: Guard::new(net, node, at),
        }
    }

    /// The template node and the records held (for the end-of-run report).
    pub(crate) fn held(&self) -> (NodeId, Vec<&Record>) {
        (self.node, self.cell.held().collect())
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
            let cell = &self.cell;
            not_a_record(item, &mut self.guard, ctx, &self.next, |_, i| cell.slot(i));
            return Ok(());
        };
        let t0 = if ctx.log.is_some() {
            crate::instrument::now_ns()
        } else {
            0
        };
        if let Some(g) = &mut self.guard {
            if std::mem::take(&mut g.fresh) {
                if g.first(&ctx.rt.net, 0, &det) {
                    self.cell.set_fired();
                } else {
                    // Records an earlier incarnation's drain parked here.
                    let mut restored = false;
                    for (i, r) in g.parked(&ctx.rt.net, 0, &det) {
                        restored |= self.cell.restore(i as usize, r);
                    }
                    if restored {
                        ctx.rt
                            .note_holding(me, &mut self.listed, self.node, ctx.stacks.worker());
                    }
                }
            }
        }
        let stored =
            self.cell
                .offer(&self.def.patterns, rec)
                .map_err(|error| EngineError::Eval {
                    error,
                    context: EvalContext::Synchrocell,
                    loc: ctx.rt.loc(self.node),
                })?;
        match stored {
            Stored::Kept(i) => {
                if let Some(g) = &mut self.guard {
                    g.stored(0, i, det.take_kept());
                }
                ctx.rt
                    .note_holding(me, &mut self.listed, self.node, ctx.stacks.worker())
            }
            Stored::Fired(rec) => {
                if let Some(g) = &mut self.guard {
                    g.fired(0, det.custody());
                }
                ctx.rt
                    .released(self.node, self.def.patterns.len() - 1, ctx.stacks.worker());
                if let Some(log) = ctx.log.as_deref_mut() {
                    log.fire(self.node, t0, crate::instrument::now_ns());
                }
                ctx.send(&self.next, Item::Rec(Rec { rec, det, origin }))
            }
            Stored::Passed(rec) => {
                // A record no pattern takes passes whatever the cell did.
                if let (Some(g), true) = (&mut self.guard, takes(&self.def.patterns, &rec)) {
                    g.passed(0..=0, det.custody());
                    g.passed_open(0..=0, det.custody());
                }
                ctx.send(&self.next, Item::Rec(Rec { rec, det, origin }))
            }
        }
        Ok(())
    }
}

/// Whether a pattern of the cell could take `rec` (its guard aside).
pub(crate) fn takes(patterns: &[Pattern], rec: &Record) -> bool {
    patterns.iter().any(|p| rec.matches(&p.variant))
}

/// Custody of a synchrocell's decisions (ARCHITECTURE.md, "Surviving a
/// lost node"), for a cell entity on a node other than 0 of a run that
/// survives a lost node; its cells are named by the path of the entity's
/// instance ([`CellId::path`](crate::dist::wire::CellId::path)) and told
/// apart in the entity by a key (0 for a lone cell, the chain position of
/// `[| .. |] * p`, the tag value of `[| .. |] ! <t>`). A record's custody
/// token
/// * joins the groups of the records in the other slots of the cell it
///   fires (the merged record derives from them all), and the group gets
///   the cell's tombstone;
/// * joins the groups of the records stored in an open cell it passes
///   (it passed because their slots are taken: the order it leaves the
///   cell in is fixed by the decision their group will take, so that
///   group's tombstone must not commit before it, ARCHITECTURE.md);
/// * commits with or after ([`Token::after`]) the group that fired a
///   cell it passes, until that one committed (after, node 0 holds the
///   tombstone).
///
/// A stored record's token is kept here, beside the record in the cell,
/// until the cell fires or the end of the stream parks the record
/// ([`Guard::drain`]: node 0's `Drain` hands the cell entity
/// [`Item::Wake`], and the cell, under its licence, hands node 0 a copy
/// of each stored record in its token's group and drops the token).
///
/// [`Token::after`]: crate::dist::custody::Token::after
pub(crate) struct Guard {
    /// The cell's template node.
    cell: NodeId,
    /// The path of the entity's instance in the connection's.
    path: crate::dist::wire::Path,
    /// The connection its records come on (the first token's).
    conn: Option<crate::dist::ConnId>,
    /// Per open cell, per slot: the stored record's token (none once the
    /// drain parked the record).
    slots: OpenCells,
    /// Per fired cell whose group may not have committed: its link.
    firings: Firings,
    /// A lone cell that has seen no record yet.
    pub(crate) fresh: bool,
    /// What the `Fired` frames of the entity's cells start with
    /// ([`Tomb::prefix`]; none until the first fire).
    fired_prefix: Option<Tomb>,
}

use crate::dist::custody::{Kept, Link};
use crate::dist::wire::Tomb;

/// A guard's cells by key. Hashed, not ordered: a cell per tag value
/// fires once per value, and a `BTreeMap`'s insert and removal per fire
/// were about a sixth of [`Guard::fired`] on `bench/soak`'s respawn
/// network. The ranges a star's record passes are visited by whichever
/// is shorter, the range or the map ([`in_range`]).
type KeyMap<V> = rustc_hash::FxHashMap<u64, V>;

/// The keys of `map` in `keys` (in no particular order).
fn in_range<V>(
    map: &KeyMap<V>,
    keys: std::ops::RangeInclusive<u64>,
) -> smallvec::SmallVec<[u64; 4]> {
    let (lo, hi) = (*keys.start(), *keys.end());
    if lo > hi || map.is_empty() {
        return smallvec::SmallVec::new();
    }
    if hi - lo < map.len() as u64 {
        keys.filter(|k| map.contains_key(k)).collect()
    } else {
        map.keys()
            .copied()
            .filter(|k| (lo..=hi).contains(k))
            .collect()
    }
}

/// The links of a guard's fired cells whose groups may not have
/// committed, by key: the newest per key counts.
///
/// Keys mostly fire in increasing order (a star's chain positions, a tag
/// value that counts up): such a fire goes at the back of `ring`, whose
/// keys then increase from front to back and are found by binary search,
/// and committed links leave from its front. A key at or below the
/// highest one `ring` has taken (out of order, or fired again) goes to
/// `late`, a map swept of committed links whenever it has doubled since
/// the last sweep. A key is in one of them at most (`ring` takes only
/// keys above every earlier one, and a key that fires again leaves
/// `ring`). On `bench/soak`'s
/// respawn network the hash map insert and removal and the queue of fire
/// order this replaces were about 100 instructions a fire.
#[derive(Default)]
struct Firings {
    ring: VecDeque<(u64, Arc<Link>)>,
    /// The highest key `ring` has taken (kept when it empties).
    top: Option<u64>,
    late: KeyMap<Arc<Link>>,
    /// `late`'s length after its last sweep.
    swept: usize,
    /// Committed links nobody else holds, for the next fires
    /// ([`Firings::reclaim`]).
    spare: Vec<Arc<Link>>,
}

/// Committed links a guard keeps for its next fires ([`Firings::reclaim`]):
/// a worker's task chain fires several cells of an entity before their
/// groups commit (the merged records wait in the next entity's inbox),
/// so the ring's front holds a run of committed links at a fire.
const SPARE_LINKS: usize = 16;

impl Firings {
    /// Forgets the links of groups that committed, oldest first, before
    /// a fire, keeping up to [`SPARE_LINKS`] that nobody else holds
    /// ([`Link::reusable`]) for the next fires' links; gives one back
    /// for this fire's.
    fn reclaim(&mut self) -> Option<Arc<Link>> {
        while let Some((_, l)) = self.ring.front_mut() {
            if self.spare.len() < SPARE_LINKS && Link::reusable(l) {
                if let Some((_, l)) = self.ring.pop_front() {
                    self.spare.push(l);
                }
            } else if l.committed() {
                self.ring.pop_front();
            } else {
                break;
            }
        }
        self.spare.pop()
    }

    /// Cell `key` fired; `l` is the firing group's link (after
    /// [`Firings::reclaim`]).
    fn insert(&mut self, key: u64, l: Arc<Link>) {
        if self.top.is_none_or(|top| key > top) {
            self.top = Some(key);
            self.ring.push_back((key, l));
        } else {
            // (A key fired again: the newer link replaces the older.)
            if let Ok(i) = find(&self.ring, key) {
                self.ring.remove(i);
            }
            self.late.insert(key, l);
            if self.late.len() > 2 * self.swept.max(8) {
                self.late.retain(|_, l| !l.committed());
                self.swept = self.late.len();
            }
        }
    }

    /// Whether cell `key` fired and its link is still here.
    fn contains(&self, key: u64) -> bool {
        self.late.contains_key(&key) || find(&self.ring, key).is_ok()
    }

    /// The newest link of each key in `keys` (`f` may tell that the
    /// link's group has committed: a link in `late` is then forgotten).
    fn each(&mut self, keys: std::ops::RangeInclusive<u64>, mut f: impl FnMut(&Arc<Link>) -> bool) {
        if keys.is_empty() {
            return;
        }
        for (_, l) in ring_range(&self.ring, &keys) {
            f(l);
        }
        for k in in_range(&self.late, keys) {
            if let Some(l) = self.late.get(&k) {
                if f(l) {
                    self.late.remove(&k);
                }
            }
        }
    }
}

/// The entries of `ring` (keys increasing) whose keys are in `keys`.
fn ring_range<'r, V>(
    ring: &'r VecDeque<(u64, V)>,
    keys: &std::ops::RangeInclusive<u64>,
) -> impl Iterator<Item = &'r (u64, V)> {
    let from = ring.partition_point(|&(k, _)| k < *keys.start());
    let hi = *keys.end();
    ring.range(from..).take_while(move |&&(k, _)| k <= hi)
}

/// Where `key` is in `ring` (keys increasing), as
/// `VecDeque::binary_search_by_key` tells it: a fire is usually of the
/// oldest or the newest cell, looked at first (the search, which splits
/// the ring in two slices, was about 60 instructions a fire).
fn find<V>(ring: &VecDeque<(u64, V)>, key: u64) -> Result<usize, usize> {
    match (ring.front(), ring.back()) {
        (Some((k, _)), _) if *k == key => Ok(0),
        (_, Some((k, _))) if *k == key => Ok(ring.len() - 1),
        (_, Some((k, _))) if *k < key => Err(ring.len()),
        _ => ring.binary_search_by_key(&key, |&(k, _)| k),
    }
}

/// The stored records' tokens of a guard's open cells, by key (a cell
/// with none is not here).
///
/// As [`Firings`]: a cell first stored in with a key above every earlier
/// one goes at the back of `ring` (keys increasing, found by binary
/// search), any other in `late`. A fire empties its cell's entry in
/// `ring`, which leaves once it reaches the front, or when such holes
/// are more than half of `ring` (a cell that stays open while later ones
/// fire keeps no more than as many holes as live cells). On
/// `bench/soak`'s respawn network the hash map's entry at the store and
/// removal at the fire this replaces were about 90 instructions a fire.
#[derive(Default)]
struct OpenCells {
    ring: VecDeque<(u64, Slots)>,
    /// The highest key `ring` has taken (kept when it empties).
    top: Option<u64>,
    /// The entries of `ring` emptied by a fire.
    holes: usize,
    late: KeyMap<Slots>,
}

impl OpenCells {
    /// Cell `key`'s slots, made if it has none (the caller stores in it).
    fn slots(&mut self, key: u64) -> &mut Slots {
        if self.top.is_none_or(|top| key > top) {
            self.top = Some(key);
            self.ring.push_back((key, Slots::new()));
            let Some((_, s)) = self.ring.back_mut() else {
                unreachable!("just pushed")
            };
            return s;
        }
        match find(&self.ring, key) {
            Ok(i) => {
                let s = &mut self.ring[i].1;
                if s.is_empty() {
                    // (A hole filled again.)
                    self.holes -= 1;
                }
                s
            }
            Err(_) => self.late.entry(key).or_default(),
        }
    }

    /// Takes cell `key`'s slots out (none if it has none).
    fn take(&mut self, key: u64) -> Slots {
        let Ok(i) = find(&self.ring, key) else {
            return self.late.remove(&key).unwrap_or_default();
        };
        let s = std::mem::take(&mut self.ring[i].1);
        if !s.is_empty() {
            self.holes += 1;
        }
        while self.ring.front().is_some_and(|(_, s)| s.is_empty()) {
            self.ring.pop_front();
            self.holes -= 1;
        }
        if self.holes > 8 && 2 * self.holes > self.ring.len() {
            self.ring.retain(|(_, s)| !s.is_empty());
            self.holes = 0;
        }
        s
    }

    /// Entries kept (holes included).
    #[cfg(all(test, not(loom)))]
    fn len(&self) -> usize {
        self.ring.len() + self.late.len()
    }

    /// Whether cell `key` has stored tokens.
    fn contains(&self, key: u64) -> bool {
        match find(&self.ring, key) {
            Ok(i) => !self.ring[i].1.is_empty(),
            Err(_) => self.late.contains_key(&key),
        }
    }

    /// `f` on the slots of each cell in `keys` that has some.
    fn each(&mut self, keys: std::ops::RangeInclusive<u64>, mut f: impl FnMut(&mut Slots)) {
        if keys.is_empty() {
            return;
        }
        let from = self.ring.partition_point(|&(k, _)| k < *keys.start());
        let hi = *keys.end();
        for (k, s) in self.ring.range_mut(from..) {
            if *k > hi {
                break;
            }
            if !s.is_empty() {
                f(s);
            }
        }
        for k in in_range(&self.late, keys) {
            if let Some(s) = self.late.get_mut(&k) {
                f(s);
            }
        }
    }

    /// Every cell with its slots (holes included, empty).
    fn into_entries(self) -> impl Iterator<Item = (u64, Slots)> {
        self.ring.into_iter().chain(self.late)
    }
}

/// A cell's slots as its guard sees them: per slot, the stored record's
/// custody (its token, or its pending token: [`Kept`]).
type Slots = smallvec::SmallVec<[Option<Kept>; 2]>;

type Tok<'a> = Option<&'a std::sync::Arc<crate::dist::custody::Token>>;

impl Guard {
    /// A guard for cells of template `cell`, if `net` is a node other
    /// than 0 of a run that survives a lost node.
    pub(crate) fn new(
        net: &crate::dist::Net,
        cell: NodeId,
        at: &crate::dist::wire::Path,
    ) -> Option<Box<Guard>> {
        net.receives_custody().then(|| {
            Box::new(Guard {
                cell,
                path: at.clone(),
                conn: None,
                slots: OpenCells::default(),
                firings: Firings::default(),
                fresh: true,
                fired_prefix: None,
            })
        })
    }

    /// Cell `key`'s name; `conn`, the connection of a record reaching it
    /// (asked only if the guard has not seen one yet).
    fn id(
        &mut self,
        key: u64,
        conn: impl FnOnce() -> Option<crate::dist::ConnId>,
    ) -> Option<crate::dist::wire::CellId> {
        if self.conn.is_none() {
            self.conn = conn();
        }
        Some(crate::dist::wire::CellId {
            conn: self.conn?,
            cell: self.cell,
            // (A copy of the words: `clone` went item by item through
            // `SmallVec::extend`, a tenth of the guard's cost.)
            path: crate::dist::wire::Path::from_slice(&self.path),
            key,
        })
    }

    /// Cell `key`'s tombstone, its `Fired` frame (`conn`: a firing
    /// record's, if the guard has seen none yet).
    fn tomb(&mut self, key: u64, conn: crate::dist::ConnId) -> Option<Tomb> {
        if self.fired_prefix.is_none() {
            let id = self.id(key, || Some(conn))?;
            self.fired_prefix = Some(Tomb::prefix_inline(&id));
        }
        Some(Tomb::new(self.fired_prefix.as_ref()?, key))
    }

    /// The open cells' entries the guard keeps (a fired cell's hole
    /// included until it is cleared).
    #[cfg(all(test, not(loom)))]
    pub(crate) fn open_entries(&self) -> usize {
        self.slots.len()
    }

    /// The link of cell `key`'s firing, while the guard keeps it (its
    /// address: which link it is).
    #[cfg(all(test, not(loom)))]
    pub(crate) fn firing_link(&self, key: u64) -> Option<*const Link> {
        match find(&self.firings.ring, key) {
            Ok(i) => Some(Arc::as_ptr(&self.firings.ring[i].1)),
            Err(_) => self.firings.late.get(&key).map(Arc::as_ptr),
        }
    }

    /// The first record (with stamps `det`) reaches cell `key`, which is
    /// created: whether an earlier incarnation of the node fired it (it
    /// then starts fired). (A pending token stays pending.)
    pub(crate) fn first(
        &mut self,
        net: &crate::dist::Net,
        key: u64,
        det: &crate::entity::Stamps,
    ) -> bool {
        if !net.any_tombstones() {
            // (The first incarnation, or one sent no tombstones: nothing
            // to name the cell for.)
            return false;
        }
        if self.slots.contains(key) || self.firings.contains(key) {
            return false;
        }
        match self.id(key, || det.custody_conn()) {
            Some(id) => net.tombstoned(&id),
            None => false,
        }
    }

    /// Records an earlier incarnation's drain parked in cell `key`, just
    /// created (slot, record): it starts with them (no token: node 0 holds
    /// them until the cell's tombstone comes).
    pub(crate) fn parked(
        &mut self,
        net: &crate::dist::Net,
        key: u64,
        det: &crate::entity::Stamps,
    ) -> Vec<(u64, snet_core::Record)> {
        if !net.any_parked() {
            // (No earlier incarnation's drain parked anything here.)
            return Vec::new();
        }
        match self.id(key, || det.custody_conn()) {
            Some(id) => net.parked_in(&id),
            None => Vec::new(),
        }
    }

    /// Cell `key` stored a record with custody `t` in slot `i`: it
    /// stays here (keeping its group open) until the cell fires or the
    /// drain parks the record. Nothing of the record is copied, and a
    /// pending token is not made ([`Kept`]).
    pub(crate) fn stored(&mut self, key: u64, i: usize, t: Option<Kept>) {
        let Some(t) = t else { return };
        if self.conn.is_none() {
            self.conn = Some(t.conn());
        }
        let slots = self.slots.slots(key);
        // (A push per missing slot: `resize` was about 70 instructions
        // a store.)
        while slots.len() <= i {
            slots.push(None);
        }
        slots[i] = Some(t);
    }

    /// A record with token `t` passes the open cells of `keys` (their
    /// slots for it are taken): it joins their stored records' groups.
    pub(crate) fn passed_open(&mut self, keys: std::ops::RangeInclusive<u64>, t: Tok) {
        let Some(t) = t else { return };
        self.slots.each(keys, |slots| {
            for s in slots.iter_mut().flatten() {
                crate::dist::custody::union(t, s.token());
            }
        });
    }

    /// The end of the stream (node 0's `Drain`, delivered to the cell
    /// entity as [`Item::Wake`]): each record stored with a token (`slot`
    /// gives the record in slot `i` of cell `key`) is *parked*, a copy
    /// handed to node 0 in its token's group with the cell's name and the
    /// slot, and the token is dropped, so that the group commits. The
    /// record stays in its slot, with no token: a record that passes or
    /// fires the cell joins no group of it (node 0 holds it until the
    /// cell's tombstone). Records stored later keep their tokens, and a
    /// later drain parks them.
    pub(crate) fn drain<'a>(&mut self, slot: impl Fn(u64, usize) -> Option<&'a snet_core::Record>) {
        let open = std::mem::take(&mut self.slots);
        for (key, tokens) in open.into_entries() {
            for (i, t) in tokens.into_iter().enumerate() {
                let Some(t) = t else { continue };
                let t = t.into_token();
                let (Some(rec), Some(id)) = (slot(key, i), self.id(key, || Some(t.conn()))) else {
                    debug_assert!(false, "a stored token without its record");
                    continue;
                };
                t.park(
                    id,
                    i as u64,
                    Rec {
                        rec: rec.clone(),
                        det: Default::default(),
                        origin: Default::default(),
                    },
                );
                // Dropping the token commits its group once its last
                // member is gone.
                drop(t);
            }
        }
    }

    /// A record with token `t` passes the fired cells of `keys`: it
    /// commits with or after the groups that fired them.
    pub(crate) fn passed(&mut self, keys: std::ops::RangeInclusive<u64>, t: Tok) {
        let Some(t) = t else { return };
        self.firings.each(keys, |l| {
            let committed = l.committed();
            if !committed {
                t.after(l);
            }
            committed
        });
    }

    /// The record with token `t` fired cell `key`: it joins the groups of
    /// the records stored there, which get the cell's tombstone.
    pub(crate) fn fired(&mut self, key: u64, t: Tok) {
        let mut slots = self.slots.take(key);
        let Some(t) = t else { return };
        let tomb = self.tomb(key, t.conn());
        let spare = self.firings.reclaim();
        self.firings.insert(key, t.fire(&mut slots, tomb, spare));
    }
}
