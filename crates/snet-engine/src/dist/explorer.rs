//! The state-space explorer both protocol models run on
//! (`replay_model`, `group_model`): a depth-first search of every state
//! reachable from the start, and seeded random runs for spaces too large
//! to exhaust. A model says what its states are, which steps each
//! allows, and what is wrong with one; the explorer finds the first
//! violation and the steps that lead there.

use std::collections::{BTreeSet, HashSet};
use std::fmt::Debug;

/// A protocol model the explorer can search.
pub(crate) trait Space {
    /// One state of the whole system.
    type State;
    /// A record of the output.
    type Val: Ord + Clone + Debug;

    /// The state at the start.
    fn initial(&self) -> Self::State;
    /// Every step `st` allows: its label and the state after it.
    fn steps(&self, st: &Self::State) -> Vec<(String, Self::State)>;
    /// What tells states apart (a hash; states with one key are one).
    fn key(&self, st: &Self::State) -> u64;
    /// What is wrong with `st` (`good`: the outputs the network allows;
    /// `None` while they are computed), or, if the run has ended well,
    /// its output as a sorted multiset; `Ok(None)`: the run goes on.
    fn judge(
        &self,
        st: &Self::State,
        good: Option<&BTreeSet<Vec<Self::Val>>>,
    ) -> Result<Option<Vec<Self::Val>>, String>;
    /// Whether a step is a loss (taken rarely by random runs; and no way
    /// out of a stuck state unless [`Space::LOSS_MOVES_ON`]).
    fn is_loss(&self, label: &str) -> bool;
    /// Why a run that has not ended and can take no step (or, unless
    /// [`Space::LOSS_MOVES_ON`], only losses) is stuck.
    fn stuck(&self, st: &Self::State) -> String;
    /// Whether a state that only a loss could move on is a state the
    /// model accepts (the loss happens).
    const LOSS_MOVES_ON: bool;
    /// Random runs take a loss at one step in this many at most, so that
    /// they reach every stage of a run before it.
    const LOSS_ONE_IN: u64;
}

/// What the explorer found wrong, with the steps that lead there.
#[derive(Debug)]
pub(crate) struct Violation {
    pub what: String,
    pub trace: Vec<String>,
}

/// How an exploration went.
#[derive(Debug)]
pub(crate) struct Explored<V> {
    pub states: usize,
    pub ends: usize,
    pub outputs: BTreeSet<Vec<V>>,
    pub violation: Option<Violation>,
}

impl<V> Default for Explored<V> {
    fn default() -> Self {
        Explored {
            states: 0,
            ends: 0,
            outputs: BTreeSet::new(),
            violation: None,
        }
    }
}

/// A violation and its trace, for a test's message.
pub(crate) fn show(v: &Violation) -> String {
    format!("{}\n  after: {}", v.what, v.trace.join("\n         "))
}

/// A fixed 64-bit mix (splitmix64's finaliser over a combination): the
/// same on every machine and run, for random runs from a seed and for a
/// model's identities.
pub(crate) fn mix(a: u64, b: u64) -> u64 {
    let mut z = a.rotate_left(17) ^ b.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// One look at a state: `Some(true)` the run ended well (counted),
/// `Some(false)` a violation (recorded), `None` it goes on with `next`.
fn look<S: Space>(
    s: &S,
    st: &S::State,
    good: Option<&BTreeSet<Vec<S::Val>>>,
    next: &mut Vec<(String, S::State)>,
    found: &mut Explored<S::Val>,
    path: &[String],
) -> Option<bool> {
    let violation = |what| Violation {
        what,
        trace: path.to_vec(),
    };
    match s.judge(st, good) {
        Err(what) => {
            found.violation = Some(violation(what));
            Some(false)
        }
        Ok(Some(output)) => {
            found.ends += 1;
            found.outputs.insert(output);
            Some(true)
        }
        Ok(None) => {
            *next = s.steps(st);
            if next.is_empty() || !S::LOSS_MOVES_ON && next.iter().all(|(l, _)| s.is_loss(l)) {
                found.violation = Some(violation(s.stuck(st)));
                return Some(false);
            }
            None
        }
    }
}

/// Explores every state reachable from the start, depth first, up to
/// `limit` states.
pub(crate) fn explore<S: Space>(
    s: &S,
    good: Option<&BTreeSet<Vec<S::Val>>>,
    limit: usize,
) -> Explored<S::Val> {
    let mut seen: HashSet<u64> = HashSet::with_capacity(1 << 16);
    let mut found = Explored::default();
    let mut path = Vec::new();
    dfs(
        s,
        s.initial(),
        good,
        limit,
        &mut seen,
        &mut found,
        &mut path,
    );
    found.states = seen.len();
    found
}

fn dfs<S: Space>(
    s: &S,
    st: S::State,
    good: Option<&BTreeSet<Vec<S::Val>>>,
    limit: usize,
    seen: &mut HashSet<u64>,
    found: &mut Explored<S::Val>,
    path: &mut Vec<String>,
) {
    if found.violation.is_some() || seen.len() >= limit || !seen.insert(s.key(&st)) {
        return;
    }
    let mut next = Vec::new();
    if look(s, &st, good, &mut next, found, path).is_some() {
        return;
    }
    for (label, t) in next {
        path.push(label);
        dfs(s, t, good, limit, seen, found, path);
        path.pop();
        if found.violation.is_some() {
            return;
        }
    }
}

/// `runs` random runs from the start, each step chosen by a generator
/// seeded with `seed`, each state checked as in [`explore`].
pub(crate) fn walk<S: Space>(
    s: &S,
    good: &BTreeSet<Vec<S::Val>>,
    runs: usize,
    seed: u64,
) -> Explored<S::Val> {
    let mut found = Explored::default();
    let mut rng = seed;
    for _ in 0..runs {
        let mut st = s.initial();
        let mut path = Vec::new();
        loop {
            found.states += 1;
            let mut next = Vec::new();
            match look(s, &st, Some(good), &mut next, &mut found, &path) {
                Some(true) => break,
                Some(false) => return found,
                None => {}
            }
            rng = mix(rng, 0x5eed);
            if !rng.is_multiple_of(S::LOSS_ONE_IN) && next.iter().any(|(l, _)| !s.is_loss(l)) {
                next.retain(|(l, _)| !s.is_loss(l));
            }
            rng = mix(rng, 0x5eed);
            let (label, t) = next.swap_remove((rng % next.len() as u64) as usize);
            path.push(label);
            st = t;
        }
    }
    found
}
