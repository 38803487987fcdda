//! Where records got stuck: the end-of-run report of records that never
//! left (those still held in synchrocells whose partner never came), and
//! the live dump of what a node is doing (`SIGUSR1`, `--watchdog`).
//!
//! Records are never dropped silently elsewhere: a record no parallel
//! branch, star exit or split accepts is a runtime type error that stops
//! the run naming the component, so synchrocells are the only place a
//! record can stay behind in a run that ends normally.
//!
//! The synchrocell entities list themselves when they first store a record
//! ([`crate::runtime::Runtime::note_holding`]: one branch on the store
//! path, nothing on any other); after the run the node reads their cells.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use snet_core::{Graph, Loc, NodeId, NodeKind, Rank, Record, Variant};

use crate::entity::Entity;
use crate::runtime::Runtime;

/// The records one synchrocell (template) of a node still held at the end.
#[derive(Clone, Debug)]
pub struct Held {
    /// `[| {a}, {b} |]`.
    pub what: String,
    /// Where the synchrocell is written.
    pub loc: Loc,
    /// The records held, by label set (sorted), with their counts.
    pub by_labels: Vec<(Variant, u64)>,
}

impl Held {
    /// How many records it held, of every label set together.
    pub fn count(&self) -> u64 {
        self.by_labels.iter().map(|(_, n)| n).sum()
    }
}

impl fmt::Display for Held {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.count();
        write!(
            f,
            "{}: synchrocell {} still holds {n} record{} whose partner never came:",
            self.loc,
            self.what,
            if n == 1 { "" } else { "s" }
        )?;
        for (i, (v, n)) in self.by_labels.iter().enumerate() {
            let sep = if i == 0 { " " } else { ", " };
            write!(f, "{sep}{n} x {v}")?;
        }
        Ok(())
    }
}

/// Gathers held records by template.
#[derive(Default)]
pub(crate) struct HeldBy(BTreeMap<NodeId, BTreeMap<Variant, u64>>);

impl HeldBy {
    pub(crate) fn add(&mut self, node: NodeId, recs: Vec<&Record>) {
        for r in recs {
            *self
                .0
                .entry(node)
                .or_default()
                .entry(Variant::new(r.labels()))
                .or_default() += 1;
        }
    }

    pub(crate) fn finish(self, graph: &Graph) -> Vec<Held> {
        self.0
            .into_iter()
            .filter(|(_, m)| !m.is_empty())
            .map(|(node, m)| {
                let n = graph.node(node);
                let what = match &n.kind {
                    NodeKind::Synchrocell(s) => {
                        let pats: Vec<String> =
                            s.patterns.iter().map(|p| p.variant.to_string()).collect();
                        format!("[| {} |]", pats.join(", "))
                    }
                    _ => n.describe().to_string(),
                };
                Held {
                    what,
                    loc: n.loc.clone(),
                    by_labels: m.into_iter().collect(),
                }
            })
            .collect()
    }
}

/// Asks a run for live dumps of what its nodes are doing
/// ([`crate::Config::watch`]): a dump whenever `requests` changes (the
/// runner adds one on `SIGUSR1`), and one whenever nothing moved on a node
/// for `quiet` (`--watchdog`).
#[derive(Clone, Default)]
pub struct Watch {
    /// A counter of dump requests: each change asks every node of the run
    /// for one dump.
    pub requests: std::sync::Arc<std::sync::atomic::AtomicU64>,
    /// Dump a node that has made no progress for this long (`None`: never).
    pub quiet: Option<std::time::Duration>,
    /// Called by node 0's monitor every 100 ms with the records admitted
    /// and written so far, and once more at the end (`true`).
    pub progress: Option<Progress>,
}

/// See [`Watch::progress`]: (records in, records out, the run is over).
pub type Progress = std::sync::Arc<dyn Fn(u64, u64, bool) + Send + Sync>;

impl fmt::Debug for Watch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Watch")
            .field("quiet", &self.quiet)
            .field("progress", &self.progress.is_some())
            .finish()
    }
}

/// What one worker is doing, written by the worker at the start and end of
/// each box call and read by the node's monitor thread. Its own cache line:
/// workers never write each other's.
#[repr(align(64))]
#[derive(Default)]
pub(crate) struct WorkerNow {
    /// 0 between box calls; else the box's template node + 1 in the low 32
    /// bits and the call's number on this worker above.
    token: AtomicU64,
    /// The box entity of the call in progress (valid only while `token`
    /// stays the same: the worker holds the entity for the whole call).
    ent: AtomicPtr<Entity>,
    /// Box calls started by this worker, up to the first call of the
    /// run in progress (set by `enter`; `leave` adds the run's further
    /// calls, which only `token` counts while it runs: [`WorkerNow::calls`]).
    calls: AtomicU64,
    /// The worker's own count of items it queued minus items it took, not
    /// yet added to the node's ([`crate::runtime::Ctx::count_queued`]), as
    /// of the call's start: the dump adds it to the node's count while the
    /// call runs (a worker blocked in a call adds nothing meanwhile), so
    /// that the node's total and the inbox of the call agree.
    unflushed: std::sync::atomic::AtomicIsize,
    /// Items the worker took from the call's entity's inbox for the calls
    /// after the run's first (a run of calls, [`crate::callstack`]), as of
    /// that call: those not yet taken by a call of the run are still
    /// waiting for the box, counted as in its inbox ([`WorkerNow::held`]).
    held: std::sync::atomic::AtomicUsize,
}

/// The live-dump slot of a call stack's calls on a thread that has none
/// (no worker's): written, never read, so that the calls need not test
/// for one ([`crate::callstack::CallIo::now`]).
pub(crate) static NOBODY: WorkerNow = WorkerNow {
    token: AtomicU64::new(0),
    ent: AtomicPtr::new(std::ptr::null_mut()),
    calls: AtomicU64::new(0),
    unflushed: std::sync::atomic::AtomicIsize::new(0),
    held: std::sync::atomic::AtomicUsize::new(0),
};

impl WorkerNow {
    /// A box call of template `node` at `ent` starts (or resumes).
    #[inline(always)]
    pub(crate) fn enter(
        &self,
        node: NodeId,
        ent: &std::sync::Arc<Entity>,
        unflushed: isize,
        held: usize,
    ) {
        self.start(
            node,
            std::sync::Arc::as_ptr(ent) as *mut Entity,
            unflushed,
            held,
        );
    }

    /// [`WorkerNow::enter`] with the entity's address.
    #[inline(always)]
    fn start(&self, node: NodeId, ent: *mut Entity, unflushed: isize, held: usize) {
        self.unflushed.store(unflushed, Ordering::Relaxed);
        self.held.store(held, Ordering::Relaxed);
        let n = self.calls.load(Ordering::Relaxed).wrapping_add(1);
        self.calls.store(n, Ordering::Relaxed);
        self.ent.store(ent, Ordering::Relaxed);
        self.token
            .store((n << 32) | u64::from(node.0 + 1), Ordering::Release);
    }

    /// The next call of a run of calls at the same entity starts
    /// ([`crate::callstack`]), taking one of the items held: a new call
    /// number, the same box and entity. Only the token changes (one
    /// add): the calls and the items held follow from it
    /// ([`WorkerNow::calls`], [`WorkerNow::held`]).
    #[inline(always)]
    pub(crate) fn again(&self) {
        // Only this worker writes its token, which `enter` set to the
        // number of the run's first call above the node: the next number
        // is one more in the high half (modulo 2^32, as `n << 32` is), the
        // node stays.
        let t = self.token.load(Ordering::Relaxed);
        self.token.store(t.wrapping_add(1 << 32), Ordering::Release);
    }

    /// The calls of the run in progress after its first (`again`'s),
    /// from a token `t` read while it runs.
    #[inline]
    fn further(&self, t: u64) -> u64 {
        let first = self.calls.load(Ordering::Relaxed) as u32;
        u64::from(((t >> 32) as u32).wrapping_sub(first))
    }

    /// Box calls started by this worker: `calls`, plus the further calls
    /// of the run in progress.
    fn calls(&self) -> u64 {
        let t = self.token.load(Ordering::Acquire);
        let n = self.calls.load(Ordering::Relaxed);
        if t == 0 {
            return n;
        }
        n.wrapping_add(self.further(t))
    }

    /// The items held for the run in progress (token `t`) that no call
    /// of it took yet.
    fn held(&self, t: u64) -> usize {
        let further = usize::try_from(self.further(t)).unwrap_or(usize::MAX);
        self.held.load(Ordering::Relaxed).saturating_sub(further)
    }

    /// The call returned or was suspended.
    #[inline(always)]
    pub(crate) fn leave(&self) {
        // The run's further calls into `calls`, then the token cleared:
        // the count `calls()` gives does not go back.
        let t = self.token.load(Ordering::Relaxed);
        if t != 0 {
            let n = self.calls.load(Ordering::Relaxed);
            self.calls
                .store(n.wrapping_add(self.further(t)), Ordering::Relaxed);
        }
        self.token.store(0, Ordering::Release);
    }
}

/// A node's monitor thread: samples the workers every 100 ms and prints a
/// dump when asked ([`Watch`]).
pub(crate) fn monitor(
    rt: &Runtime,
    watch: &Watch,
    done: &AtomicBool,
    start: Instant,
    admitted: &crate::sync::AtomicU64,
) {
    const TICK: Duration = Duration::from_millis(100);
    let mut seen = watch.requests.load(Ordering::Relaxed);
    // Per worker: the token last seen and since when.
    let mut since: Vec<(u64, Instant)> = rt.now.iter().map(|_| (0, Instant::now())).collect();
    let mut moved_at = Instant::now();
    let mut last_progress = (u64::MAX, 0, 0);
    let mut barked = false;
    while !done.load(Ordering::Acquire) {
        // Woken early when the run ends (`done`, then an unpark).
        std::thread::park_timeout(TICK);
        if done.load(Ordering::Acquire) {
            break;
        }
        let now = Instant::now();
        for (w, s) in rt.now.iter().zip(since.iter_mut()) {
            let t = w.token.load(Ordering::Acquire);
            if t != s.0 {
                *s = (t, now);
            }
        }
        let calls: u64 = rt.now.iter().map(WorkerNow::calls).sum();
        let progress = (
            calls,
            rt.outputs.load(Ordering::Relaxed),
            admitted.load(Ordering::Relaxed)
                + rt.net.traffic.messages_received.load(Ordering::Relaxed),
        );
        if progress != last_progress {
            last_progress = progress;
            moved_at = now;
            barked = false;
        }
        if let (Some(p), Rank::ROOT) = (&watch.progress, rt.node) {
            p(
                admitted.load(Ordering::Relaxed),
                rt.outputs.load(Ordering::Relaxed),
                false,
            );
        }
        let asked = watch.requests.load(Ordering::Relaxed);
        let quiet = watch
            .quiet
            .is_some_and(|q| !barked && now.duration_since(moved_at) >= q);
        if asked != seen || quiet {
            seen = asked;
            if quiet {
                barked = true;
            }
            let why = if quiet {
                format!(
                    "nothing moved for {:.1} s",
                    now.duration_since(moved_at).as_secs_f64()
                )
            } else {
                "asked by SIGUSR1".to_string()
            };
            eprint!("{}", dump(rt, &since, now, start, admitted, &why));
        }
    }
    if let (Some(p), Rank::ROOT) = (&watch.progress, rt.node) {
        p(
            admitted.load(Ordering::Relaxed),
            rt.outputs.load(Ordering::Relaxed),
            true,
        );
    }
}

/// The text of one dump.
fn dump(
    rt: &Runtime,
    since: &[(u64, Instant)],
    now: Instant,
    start: Instant,
    admitted: &crate::sync::AtomicU64,
    why: &str,
) -> String {
    use std::fmt::Write;
    let g = rt.graph();
    let mut lines = String::new();
    // The node's count of waiting items, plus what the workers in a call
    // counted and had not added to it yet (see `WorkerNow::unflushed`).
    let mut queued = rt.queued_now();
    for (i, (w, (tok, at))) in rt.now.iter().zip(since).enumerate() {
        let t = w.token.load(Ordering::Acquire);
        let mut held = 0;
        if t != 0 {
            let unflushed = w.unflushed.load(Ordering::Relaxed);
            held = w.held(t);
            if w.token.load(Ordering::Acquire) == t {
                queued += unflushed + held as isize;
            } else {
                held = 0;
            }
        }
        let s = &mut lines;
        if t == 0 || t != *tok {
            let _ = writeln!(s, "snet:   worker {i}: not in a box call");
            continue;
        }
        let ptr = w.ent.load(Ordering::Relaxed);
        let node = NodeId(((t & 0xffff_ffff) - 1) as u32);
        let n = g.node(node);
        let name = match &n.kind {
            NodeKind::Box(b) => g.box_def(*b).name.clone(),
            _ => n.describe().to_string(),
        };
        // SAFETY: the token is the same as when `ptr` was stored before it
        // (Release/Acquire) and is read again below: the call was in
        // progress throughout, and its worker holds the entity meanwhile.
        let backlog = unsafe { (*ptr).backlog() } + held;
        if w.token.load(Ordering::Acquire) != t {
            let _ = writeln!(s, "snet:   worker {i}: not in a box call");
            continue;
        }
        let _ = writeln!(
            s,
            "snet:   worker {i}: box `{name}` ({}) for {:.1} s, {backlog} items waiting in its inbox",
            n.loc,
            now.duration_since(*at).as_secs_f64()
        );
    }
    let mut s = String::new();
    let _ = writeln!(
        s,
        "snet: node {} at {:.1} s ({why}): {} records in, {} out, about {} items waiting in inboxes",
        rt.node,
        now.duration_since(start).as_secs_f64(),
        admitted.load(Ordering::Relaxed),
        rt.outputs.load(Ordering::Relaxed),
        queued.max(0),
    );
    s.push_str(&lines);
    for (node, n) in rt.held_now() {
        let g = g.node(node);
        let what = match &g.kind {
            NodeKind::Synchrocell(sc) => {
                let pats: Vec<String> = sc.patterns.iter().map(|p| p.variant.to_string()).collect();
                format!("[| {} |]", pats.join(", "))
            }
            _ => g.describe().to_string(),
        };
        let _ = writeln!(
            s,
            "snet:   synchrocell {what} ({}) holds {n} records",
            g.loc
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A run's further calls change only the token; the calls counted
    /// and the items still held follow from it while the run goes on,
    /// and the calls stay counted once it left, across the wrap of the
    /// token's 32 bits of call number.
    #[test]
    fn a_runs_calls_and_items_held_follow_from_its_token() {
        for first in [0, 7, u64::from(u32::MAX) - 2] {
            let w = WorkerNow::default();
            w.calls.store(first, Ordering::Relaxed);
            w.start(NodeId(3), std::ptr::null_mut(), 0, 5);
            let t = w.token.load(Ordering::Relaxed);
            assert_eq!((w.calls(), w.held(t)), (first + 1, 5));
            for k in 1..=7u64 {
                w.again();
                let t = w.token.load(Ordering::Relaxed);
                assert_eq!(t & 0xffff_ffff, 4, "the node stays");
                assert_eq!(w.calls(), first + 1 + k);
                assert_eq!(w.held(t), 5usize.saturating_sub(k as usize));
            }
            w.leave();
            assert_eq!(w.token.load(Ordering::Relaxed), 0);
            assert_eq!(w.calls(), first + 8);
            w.start(NodeId(0), std::ptr::null_mut(), 0, 0);
            assert_eq!(w.calls(), first + 9);
        }
    }
}
