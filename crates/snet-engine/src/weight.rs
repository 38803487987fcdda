//! Dyadic weights: exact shares of one that can be split without limit.
//!
//! Two protocols hand out shares of a whole and must know when every share
//! has come back: ordering markers (the copies of one marker, wherever
//! they travel, complete it when their weights sum to one) and distributed
//! termination (credit: a node may work only while it holds some; the run
//! is over when node 0 holds all of it again). Shares cross nodes, so they
//! cannot be a shared counter; they are values.
//!
//! A piece is `2^-e`, written as its exponent `e` (`0` is the whole). A
//! [`Dyadic`] is a sum of pieces kept in canonical form: a set of distinct
//! exponents, where adding a piece that is already present carries (two
//! `2^-e` make one `2^-(e-1)`), exactly like binary addition. Splitting
//! never runs out: a piece `e` becomes two pieces `e + 1`. The sum is one
//! exactly when the set is `{0}`.

use std::collections::BTreeSet;

/// A sum of pieces `2^-e`, in canonical form (distinct exponents).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Dyadic(BTreeSet<u64>);

impl Dyadic {
    /// Nothing.
    pub fn zero() -> Dyadic {
        Dyadic(BTreeSet::new())
    }

    /// The whole (one).
    pub fn one() -> Dyadic {
        Dyadic(std::iter::once(0).collect())
    }

    pub fn is_zero(&self) -> bool {
        self.0.is_empty()
    }

    pub fn is_one(&self) -> bool {
        self.0.len() == 1 && self.0.contains(&0)
    }

    /// Adds the piece `2^-e`, carrying.
    ///
    /// # Panics
    /// If the sum would exceed one (a piece was counted twice: a protocol bug).
    pub fn add(&mut self, mut e: u64) {
        while self.0.remove(&e) {
            assert!(e > 0, "dyadic weights sum to more than one");
            e -= 1;
        }
        // (A piece `0` is the whole: nothing may join it, whichever
        // comes first.)
        assert!(
            if e > 0 {
                self.0.first() != Some(&0)
            } else {
                self.0.is_empty()
            },
            "dyadic weights sum to more than one"
        );
        self.0.insert(e);
    }

    /// Adds every piece of `other`.
    pub fn add_all(&mut self, other: &Dyadic) {
        for &e in &other.0 {
            self.add(e);
        }
    }

    /// Gives away half of the largest piece: keeps `2^-(e+1)` of `2^-e`
    /// and returns the exponent of the half given away. `None` when empty.
    /// Node 0's share of a message (see [`Dyadic::split_off_rest`] for the
    /// other nodes').
    ///
    /// Halving the largest piece, not the smallest, keeps the pieces few:
    /// the smallest-piece rule hands out ever smaller pieces (one more
    /// exponent per message), and what node 0 holds, one minus what is
    /// out, then has about one piece per message sent for as long as any
    /// of them is out.
    pub fn split_off(&mut self) -> Option<u64> {
        let e = self.0.pop_first()?;
        // Keep the other half; it may carry with a piece `e + 1` already
        // held, but never beyond `e` (no piece is larger than `2^-e`).
        self.add(e + 1);
        Some(e + 1)
    }

    /// Gives away everything but half of the largest piece (the share of a
    /// message from a node other than 0): the sender keeps the one piece it
    /// needs to send again, and every other piece travels on, towards node
    /// 0, where pieces merge. A node that stays busy for the whole run
    /// (never passive, so never returning its credit) thus holds at most
    /// the pieces that arrived since it last sent, instead of one more
    /// piece per message. `None` when empty.
    pub fn split_off_rest(&mut self) -> Option<Dyadic> {
        let e = self.0.pop_first()?;
        let mut given = std::mem::take(self);
        // The rest is below `2^-e`, so this carries at most into `e`.
        given.add(e + 1);
        self.0.insert(e + 1);
        Some(given)
    }

    /// The share of credit a message takes from a node's pool (`from_root`:
    /// the sender is node 0): node 0 gives half of its largest piece
    /// ([`Dyadic::split_off`]), and every other node gives everything but
    /// half of its largest piece ([`Dyadic::split_off_rest`]), so pieces
    /// flow back to node 0 and merge there instead of piling up on a node
    /// that never becomes passive. Zero when the pool is empty.
    pub fn share(&mut self, from_root: bool) -> Dyadic {
        if from_root {
            let mut d = Dyadic::zero();
            if let Some(e) = self.split_off() {
                d.add(e);
            }
            d
        } else {
            self.split_off_rest().unwrap_or_default()
        }
    }

    /// Subtracts `other` (a node's credit that is known lost): false,
    /// and `self` unchanged, if `other` is more than `self`.
    ///
    /// In place, without a copy (node 0 of a `respawn` run subtracts
    /// every message's credit from its sender's balance): the comparison
    /// first, then the pieces taken away, which cannot fail then.
    pub fn sub(&mut self, other: &Dyadic) -> bool {
        if !self.at_least(other) {
            return false;
        }
        for &e in &other.0 {
            if self.0.remove(&e) {
                continue;
            }
            // Break the smallest piece larger than `2^-e`: `2^-f` is
            // `2^-(f+1) + ... + 2^-e + 2^-e`; no piece lies between. There
            // is one: what is left is at least the rest of `other`, so at
            // least `2^-e`, and without `e` itself its pieces smaller
            // than `2^-e` sum to less.
            let f = *self
                .0
                .range(..e)
                .next_back()
                .expect("a larger piece is left");
            self.0.remove(&f);
            self.0.extend(f + 1..=e);
        }
        true
    }

    /// `self` is at least `other`: as binary fractions, the larger one
    /// has the largest piece (smallest exponent) where they differ.
    pub fn at_least(&self, other: &Dyadic) -> bool {
        let (mut a, mut b) = (self.0.iter(), other.0.iter());
        loop {
            match (a.next(), b.next()) {
                (Some(x), Some(y)) if x == y => {}
                (Some(x), Some(y)) => return x < y,
                (_, None) => return true,
                (None, Some(_)) => return false,
            }
        }
    }

    /// Takes everything, leaving zero.
    pub fn take(&mut self) -> Dyadic {
        std::mem::take(self)
    }

    /// The exponents of the pieces, largest piece first.
    pub fn pieces(&self) -> impl Iterator<Item = u64> + '_ {
        self.0.iter().copied()
    }

    /// The sum of the pieces `2^-e` for `exps` if they are in the form
    /// [`Dyadic::pieces`] gives (strictly increasing, `0` only alone, so
    /// the sum is at most one), else `None`.
    pub fn from_canonical(exps: &[u64]) -> Option<Dyadic> {
        let increasing = exps.windows(2).all(|w| w[0] < w[1]);
        let whole_alone = exps.len() < 2 || exps[0] != 0;
        (increasing && whole_alone).then(|| Dyadic(exps.iter().copied().collect()))
    }

    #[cfg(test)]
    pub fn from_pieces(pieces: impl IntoIterator<Item = u64>) -> Dyadic {
        let mut d = Dyadic::zero();
        for e in pieces {
            d.add(e);
        }
        d
    }
}

/// A credit balance (node 0's count, in a `respawn` run, of the credit a
/// node holds: what was sent to it less what came back) as a binary
/// fraction: bit `e` is the piece `2^-e`, in 64-bit words, the largest
/// pieces first. Adding or subtracting a message's credit is a word
/// operation per piece with a carry or borrow, where a [`Dyadic`]'s set
/// took a search, a removal and an insertion per piece, and a copy of
/// the set per subtraction (node 0 does one for every message it sends
/// or receives). A piece smaller than `2^-BALANCE_BITS` (never seen:
/// pools stay a handful of pieces of small exponent) turns the balance
/// into a [`Dyadic`] for good, so that no exponent sizes the words.
#[derive(Clone, Debug, Default)]
pub(crate) struct Balance {
    words: Vec<u64>,
    big: Option<Dyadic>,
}

/// See [`Balance`].
const BALANCE_BITS: u64 = 4096;

impl Balance {
    /// Moves to a [`Dyadic`] if `d` has a piece too small for the words.
    fn widen_for(&mut self, d: &Dyadic) {
        if self.big.is_none() && d.0.last().is_some_and(|&e| e >= BALANCE_BITS) {
            self.big = Some(self.to_dyadic());
            self.words.clear();
        }
    }

    /// Adds `2^-e` (modulo 2: true if it carried past one).
    fn add_piece(&mut self, e: u64) -> bool {
        self.step_piece(e, u64::overflowing_add)
    }

    /// Subtracts `2^-e` (modulo 2: true if it went below zero).
    fn sub_piece(&mut self, e: u64) -> bool {
        self.step_piece(e, u64::overflowing_sub)
    }

    /// Adds or subtracts (`op`) `2^-e`, carrying or borrowing towards the
    /// first word: true if the carry or borrow went past it.
    #[inline]
    fn step_piece(&mut self, e: u64, op: fn(u64, u64) -> (u64, bool)) -> bool {
        let mut i = (e / 64) as usize;
        if i >= self.words.len() {
            self.words.resize(i + 1, 0);
        }
        let mut bit = 1u64 << (63 - e % 64);
        loop {
            let (w, over) = op(self.words[i], bit);
            self.words[i] = w;
            if !over {
                return false;
            }
            if i == 0 {
                return true;
            }
            i -= 1;
            bit = 1;
        }
    }

    /// Adds every piece of `d`.
    ///
    /// # Panics
    /// If the sum would exceed one (as [`Dyadic::add`]).
    pub(crate) fn add_all(&mut self, d: &Dyadic) {
        if self.big.is_none() && !self.add_words(d) {
            self.widen_for(d);
        }
        if let Some(big) = &mut self.big {
            big.add_all(d);
            return;
        }
        assert!(
            self.words.first().is_none_or(|&w| w <= 1 << 63)
                && (self.words.first() != Some(&(1 << 63))
                    || self.words[1..].iter().all(|&w| w == 0)),
            "dyadic weights sum to more than one"
        );
    }

    /// Subtracts `d`: false, and `self` unchanged, if `d` is more than
    /// `self` (as [`Dyadic::sub`]).
    pub(crate) fn sub(&mut self, d: &Dyadic) -> bool {
        if self.big.is_none() {
            if let Some(ok) = self.sub_words(d) {
                return ok;
            }
            self.widen_for(d);
        }
        self.big
            .as_mut()
            .expect("a piece beyond the words widens the balance")
            .sub(d)
    }

    /// Adds `d` in the words, in one pass over its pieces (node 0 of a
    /// `respawn` run does so for every message it sends, and subtracts
    /// for every one it receives: [`Balance::sub_words`]); false, and
    /// the words unchanged, if a piece is too small for them. A carry
    /// past one is asserted by the caller.
    fn add_words(&mut self, d: &Dyadic) -> bool {
        // (One piece, the usual case: node 0 gives one a message, and
        // the others mostly hold one; without the set's iterator.)
        if d.0.len() == 1 {
            let e = *d.0.first().expect("one piece");
            if e >= BALANCE_BITS {
                return false;
            }
            assert!(!self.add_piece(e), "dyadic weights sum to more than one");
            return true;
        }
        for (n, &e) in d.0.iter().enumerate() {
            if e >= BALANCE_BITS {
                for &e in d.0.iter().take(n) {
                    self.sub_piece(e);
                }
                return false;
            }
            assert!(!self.add_piece(e), "dyadic weights sum to more than one");
        }
        true
    }

    /// Subtracts `d` in the words, in one pass over its pieces (largest
    /// first: a piece too small for the words comes after the others):
    /// whether it was at most the balance (if not, the words are left
    /// unchanged), or `None`, the words unchanged, if a piece is too
    /// small for them.
    fn sub_words(&mut self, d: &Dyadic) -> Option<bool> {
        if d.0.len() == 1 {
            let e = *d.0.first().expect("one piece");
            if e >= BALANCE_BITS {
                return None;
            }
            if self.sub_piece(e) {
                self.add_piece(e);
                return Some(false);
            }
            return Some(true);
        }
        for (n, &e) in d.0.iter().enumerate() {
            let wide = e >= BALANCE_BITS;
            if wide || self.sub_piece(e) {
                // Every piece taken so far goes back (the arithmetic is
                // modulo 2, so this restores every word).
                for &e in d.0.iter().take(if wide { n } else { n + 1 }) {
                    self.add_piece(e);
                }
                return if wide { None } else { Some(false) };
            }
        }
        Some(true)
    }

    /// The balance as pieces (taking it, leaving zero).
    pub(crate) fn take(&mut self) -> Dyadic {
        let d = self.to_dyadic();
        *self = Balance::default();
        d
    }

    fn to_dyadic(&self) -> Dyadic {
        if let Some(big) = &self.big {
            return big.clone();
        }
        let mut exps = Vec::new();
        for (i, &w) in self.words.iter().enumerate() {
            let mut w = w;
            while w != 0 {
                let top = u64::from(w.leading_zeros());
                exps.push(i as u64 * 64 + top);
                w &= !(1u64 << (63 - top));
            }
        }
        Dyadic::from_canonical(&exps).expect("a balance of at most one")
    }
}

/// Splits the piece `2^-e` into `n >= 1` pieces that sum to it; the
/// exponents grow by at most `ceil(log2 n)`.
pub(crate) fn split_piece(e: u64, n: usize) -> smallvec::SmallVec<[u64; 4]> {
    let mut pieces: smallvec::SmallVec<[u64; 4]> = smallvec::smallvec![e];
    // Halve a largest piece (smallest exponent) until there are n.
    while pieces.len() < n {
        let (i, &x) = pieces
            .iter()
            .enumerate()
            .min_by_key(|(_, &x)| x)
            .expect("never empty");
        pieces[i] = x + 1;
        pieces.push(x + 1);
    }
    pieces
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subtraction_breaks_larger_pieces_and_refuses_too_much() {
        // 1 - 1/8 = 1/2 + 1/4 + 1/8.
        let mut d = Dyadic::one();
        assert!(d.sub(&Dyadic::from_pieces([3])));
        assert_eq!(d.pieces().collect::<Vec<_>>(), vec![1, 2, 3]);
        // Less 1/2 + 1/8 leaves 1/4.
        assert!(d.sub(&Dyadic::from_pieces([1, 3])));
        assert_eq!(d.pieces().collect::<Vec<_>>(), vec![2]);
        // 1/2 is more than 1/4: refused, unchanged.
        assert!(!d.sub(&Dyadic::from_pieces([1])));
        assert_eq!(d.pieces().collect::<Vec<_>>(), vec![2]);
        assert!(d.sub(&Dyadic::from_pieces([2])));
        assert!(d.is_zero());
    }

    /// The value of pieces of exponent at most 64, as a fixed-point
    /// number with 64 bits after the point.
    fn value(d: &Dyadic) -> u128 {
        d.pieces().map(|e| 1u128 << (64 - e)).sum()
    }

    proptest::proptest! {
        /// Subtraction agrees with arithmetic: it succeeds exactly when
        /// `b` is at most `a`, leaving `a - b` in canonical form, and
        /// leaves `a` unchanged when it refuses.
        #[test]
        fn subtraction_is_exact(
            a in proptest::collection::btree_set(1u64..20, 0..8),
            b in proptest::collection::btree_set(1u64..20, 0..8),
        ) {
            let (mut x, y) = (Dyadic(a), Dyadic(b));
            let (va, vb) = (value(&x), value(&y));
            proptest::prop_assert_eq!(x.at_least(&y), va >= vb);
            let before = x.clone();
            let ok = x.sub(&y);
            proptest::prop_assert_eq!(ok, va >= vb);
            if ok {
                proptest::prop_assert_eq!(value(&x), va - vb);
            } else {
                proptest::prop_assert_eq!(&x, &before);
            }
        }
    }

    proptest::proptest! {
        /// A [`Balance`] computes what a [`Dyadic`] computes: over a run
        /// of credit sent and received (pieces of every size, small ones
        /// beyond the words included), each subtraction succeeds or is
        /// refused as the set's does, and the balance taken is the set.
        #[test]
        fn a_balance_agrees_with_a_dyadic(
            steps in proptest::collection::vec(
                (proptest::bool::ANY, proptest::collection::btree_set(
                    proptest::prop_oneof![1u64..80, 4090u64..4100], 0..6)),
                0..40,
            ),
        ) {
            let (mut bal, mut dy) = (Balance::default(), Dyadic::zero());
            for (send, pieces) in steps {
                let d = Dyadic(pieces);
                if send {
                    // Only what keeps the sum at most one.
                    let mut sum = dy.clone();
                    sum.add_all_checked(&d).then(|| {
                        dy = sum;
                        bal.add_all(&d);
                    });
                } else {
                    proptest::prop_assert_eq!(bal.sub(&d), dy.sub(&d));
                }
                proptest::prop_assert_eq!(bal.to_dyadic(), dy.clone());
            }
            proptest::prop_assert_eq!(bal.take(), dy);
            proptest::prop_assert!(bal.to_dyadic().is_zero());
        }
    }

    impl Dyadic {
        /// Adds `other` if the sum stays at most one (the tests').
        fn add_all_checked(&mut self, other: &Dyadic) -> bool {
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                let mut d = self.clone();
                d.add_all(other);
                d
            }))
            .map(|d| *self = d)
            .is_ok()
        }
    }

    fn sum_is_one(pieces: &[u64]) -> bool {
        Dyadic::from_pieces(pieces.iter().copied()).is_one()
    }

    #[test]
    fn carrying_and_completion() {
        let mut d = Dyadic::zero();
        d.add(2);
        d.add(1);
        assert!(!d.is_one());
        d.add(2);
        assert!(d.is_one(), "{d:?}");
    }

    #[test]
    fn split_off_keeps_the_sum() {
        let mut pool = Dyadic::one();
        let mut given = Vec::new();
        for _ in 0..100 {
            given.push(pool.split_off().unwrap());
        }
        let mut back = pool.clone();
        for e in given {
            back.add(e);
        }
        assert!(back.is_one());
    }

    /// Node 0 and a node that never becomes passive (so credit only moves
    /// as shares of messages) trade messages for a long time, node 1 in
    /// bursts of up to eight, with up to eight messages in flight each
    /// way: both pools and every share stay a handful of pieces, whatever
    /// the number of messages. With shares cut from the smallest piece
    /// they grew by about one piece per message (issue 27's soak).
    #[test]
    fn pools_stay_small_on_nodes_that_never_rest() {
        use std::collections::VecDeque;
        let mut pools = [Dyadic::one(), Dyadic::zero()];
        let mut wires: [VecDeque<Dyadic>; 2] = [VecDeque::new(), VecDeque::new()];
        let (mut most, mut deepest) = (0, 0);
        for step in 0..100_000u64 {
            let sends = [1, (step * 7 % 9) as usize];
            for from in 0..2 {
                for _ in 0..sends[from] {
                    let d = pools[from].share(from == 0);
                    if !d.is_zero() {
                        most = most.max(d.pieces().count());
                        deepest = deepest.max(d.pieces().max().unwrap_or(0));
                        wires[from].push_back(d);
                    }
                }
            }
            for to in 0..2 {
                while wires[1 - to].len() > 8 {
                    let d = wires[1 - to].pop_front().unwrap();
                    pools[to].add_all(&d);
                }
            }
            for p in &pools {
                most = most.max(p.pieces().count());
                deepest = deepest.max(p.pieces().max().unwrap_or(0));
            }
        }
        assert!(most <= 64, "{most} pieces in one pool or share");
        assert!(deepest <= 64, "a piece as small as 2^-{deepest}");
        let mut all = pools[0].clone();
        all.add_all(&pools[1]);
        for d in wires.iter().flatten() {
            all.add_all(d);
        }
        assert!(all.is_one(), "credit lost or made: {all:?}");
    }

    #[test]
    fn split_off_rest_keeps_one_piece_and_the_sum() {
        let mut d = Dyadic::from_pieces([1, 3, 4, 9]);
        let given = d.split_off_rest().unwrap();
        assert_eq!(d.pieces().collect::<Vec<_>>(), vec![2]);
        let mut back = d.clone();
        back.add_all(&given);
        assert_eq!(back, Dyadic::from_pieces([1, 3, 4, 9]));
        let mut one = Dyadic::one();
        assert_eq!(one.split_off_rest(), Some(Dyadic::from_pieces([1])));
        assert_eq!(one, Dyadic::from_pieces([1]));
        assert_eq!(Dyadic::zero().split_off_rest(), None);
    }

    #[test]
    fn shares_follow_the_sender() {
        // Node 0 gives half of its largest piece and keeps the rest.
        let mut root = Dyadic::from_pieces([1, 3]);
        assert_eq!(root.share(true), Dyadic::from_pieces([2]));
        assert_eq!(root, Dyadic::from_pieces([2, 3]));
        // Another node keeps only half of its largest piece.
        let mut other = Dyadic::from_pieces([1, 3]);
        assert_eq!(other.share(false), Dyadic::from_pieces([2, 3]));
        assert_eq!(other, Dyadic::from_pieces([2]));
        // An empty pool gives nothing, on any node.
        assert!(Dyadic::zero().share(true).is_zero());
        assert!(Dyadic::zero().share(false).is_zero());
    }

    #[test]
    fn split_piece_sums_to_the_piece() {
        for n in 1..40 {
            let p = split_piece(0, n);
            assert_eq!(p.len(), n);
            assert!(sum_is_one(&p), "n={n}: {p:?}");
            let bound = 64 - (n as u64 - 1).leading_zeros() as u64;
            assert!(p.iter().all(|&e| e <= bound), "n={n}: {p:?}");
        }
        let p = split_piece(5, 3);
        let mut d = Dyadic::from_pieces(p);
        d.add(5);
        d.add(4);
        d.add(3);
        d.add(2);
        d.add(1);
        assert!(d.is_one());
    }

    #[test]
    #[should_panic(expected = "more than one")]
    fn counting_a_piece_twice_is_caught() {
        let mut d = Dyadic::one();
        d.add(1);
        d.add(1);
    }
}
