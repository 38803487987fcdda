//! Records: sorted sets of label/value pairs.
//!
//! A record keeps its entries sorted by [`Label`] (fields, then tags, then
//! binding tags), at most one entry per label. Small records — the common
//! case in stress-test networks — live inline without a heap allocation.

use smallvec::SmallVec;
use std::fmt;

use crate::field::Field;
use crate::graph::Variant;
use crate::label::{Label, LabelKind};

/// The value of one record entry.
#[derive(Clone)]
pub enum Value {
    /// A tag or binding tag.
    Int(i64),
    /// A field (shared by reference count).
    Field(Field),
}

impl fmt::Debug for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Int(v) => write!(f, "{v}"),
            Value::Field(x) => write!(f, "{x:?}"),
        }
    }
}

/// A record: a set of labels with values.
#[derive(Clone, Default)]
pub struct Record {
    entries: SmallVec<[(Label, Value); 4]>,
}

impl Record {
    /// Entries a record holds without a heap allocation.
    pub const INLINE: usize = 4;

    /// The empty record (no allocation).
    #[inline]
    pub fn new() -> Record {
        Record {
            entries: SmallVec::new(),
        }
    }

    /// An empty record with room for `n` entries (on the heap only when `n`
    /// exceeds [`Record::INLINE`]).
    #[inline]
    pub fn with_capacity(n: usize) -> Record {
        if n <= Record::INLINE {
            // Inline: `SmallVec::with_capacity` would still go through its
            // reserve path.
            return Record::new();
        }
        Record {
            entries: SmallVec::with_capacity(n),
        }
    }

    /// The number of labels (fields, tags and binding tags together).
    #[inline]
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the record has no label at all.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Whether dropping the record does anything: it holds a field (a
    /// reference to release) or its entries are on the heap. Records of
    /// tags alone, kept inline, need no drop at all.
    #[inline]
    pub fn needs_drop(&self) -> bool {
        self.entries.spilled()
            || self
                .entries
                .iter()
                .any(|(_, v)| matches!(v, Value::Field(_)))
    }

    /// Whether the entries are on the heap (dropping the record frees them).
    #[inline]
    pub fn spilled(&self) -> bool {
        self.entries.spilled()
    }

    /// Entries in label order.
    #[inline]
    pub fn entries(&self) -> &[(Label, Value)] {
        &self.entries
    }

    /// Where the entries of a record known to be inline (not
    /// [`Record::spilled`]) are: a constant offset from the record, with
    /// no look at where they are.
    ///
    /// # Safety
    /// The record is not spilled.
    #[inline(always)]
    pub unsafe fn inline_entries_ptr(&self) -> *const (Label, Value) {
        debug_assert!(!self.spilled());
        let at = Record::inline_room();
        // SAFETY: the record is inline (contract): its entries are there.
        unsafe { (self as *const Record).cast::<u8>().add(at).cast() }
    }

    /// The offset of the inline room in a record: where an empty record's
    /// entries are (it is inline), a constant the compiler works out
    /// (and, not dropped, makes no record at all).
    #[inline(always)]
    fn inline_room() -> usize {
        let probe = std::mem::ManuallyDrop::new(Record::new());
        // SAFETY: both pointers are into (or at the start of) `probe`.
        unsafe {
            probe
                .entries
                .as_ptr()
                .cast::<u8>()
                .offset_from((&*probe as *const Record).cast::<u8>())
        }
        .unsigned_abs()
    }

    /// [`Record::len`] of a record known to be inline.
    ///
    /// # Safety
    /// As for [`Record::inline_entries_ptr`].
    #[inline(always)]
    pub unsafe fn inline_len(&self) -> usize {
        if self.entries.spilled() {
            // SAFETY: see the contract.
            unsafe { std::hint::unreachable_unchecked() }
        }
        self.entries.len()
    }

    /// Moves the entries inline when they are on the heap and fit there
    /// (freeing the heap buffer); otherwise nothing changes.
    #[inline]
    pub fn shrink_to_fit(&mut self) {
        if self.entries.spilled() && self.entries.len() <= Record::INLINE {
            self.entries.shrink_to_fit();
        }
    }

    /// The labels in label order (the order of [`Record::entries`]).
    pub fn labels(&self) -> impl Iterator<Item = Label> + '_ {
        self.entries.iter().map(|(l, _)| *l)
    }

    #[inline]
    fn find(&self, label: Label) -> Result<usize, usize> {
        // Records are small: a linear scan beats binary search up to a dozen entries.
        if self.entries.len() <= 8 {
            for (i, (l, _)) in self.entries.iter().enumerate() {
                if *l == label {
                    return Ok(i);
                }
                if *l > label {
                    return Err(i);
                }
            }
            Err(self.entries.len())
        } else {
            self.entries.binary_search_by(|(l, _)| l.cmp(&label))
        }
    }

    /// Whether the record carries `label`, whatever its value.
    #[inline]
    pub fn has(&self, label: Label) -> bool {
        self.find(label).is_ok()
    }

    /// The value of `label`, if the record carries it.
    #[inline]
    pub fn get(&self, label: Label) -> Option<&Value> {
        self.find(label).ok().map(|i| &self.entries[i].1)
    }

    /// The integer value of a tag or binding tag.
    #[inline]
    pub fn int(&self, label: Label) -> Option<i64> {
        match self.get(label) {
            Some(Value::Int(v)) => Some(*v),
            _ => None,
        }
    }

    /// Whether every binding tag of the record is `allowed` (binding tags
    /// sort last: only the tail is looked at).
    #[inline]
    pub fn btags_within(&self, allowed: Label) -> bool {
        self.entries
            .iter()
            .rev()
            .take_while(|(l, _)| l.kind() == LabelKind::BTag)
            .all(|(l, _)| *l == allowed)
    }

    /// The integer of a tag or binding tag, to change in place.
    #[inline]
    pub fn int_mut(&mut self, label: Label) -> Option<&mut i64> {
        match self.find(label) {
            Ok(i) => match &mut self.entries[i].1 {
                Value::Int(v) => Some(v),
                Value::Field(_) => None,
            },
            Err(_) => None,
        }
    }

    /// The value of field `label`; `None` if it is absent or an integer.
    pub fn field(&self, label: Label) -> Option<&Field> {
        match self.get(label) {
            Some(Value::Field(f)) => Some(f),
            _ => None,
        }
    }

    /// Sets (or replaces) the value of `label`.
    #[inline]
    pub fn set(&mut self, label: Label, value: Value) {
        match self.find(label) {
            Ok(i) => self.entries[i].1 = value,
            Err(i) => self.entries.insert(i, (label, value)),
        }
    }

    /// Sets (or replaces) tag or binding tag `label` to `v`.
    #[inline]
    pub fn set_int(&mut self, label: Label, v: i64) {
        self.set(label, Value::Int(v))
    }

    /// Inserts `label` only if absent (the flow-inheritance rule: emitted labels win).
    #[inline]
    pub fn set_if_absent(&mut self, label: Label, value: &Value) {
        if let Err(i) = self.find(label) {
            self.entries.insert(i, (label, value.clone()));
        }
    }

    /// Removes `label`, returning its value if it was there.
    #[inline]
    pub fn remove(&mut self, label: Label) -> Option<Value> {
        self.find(label).ok().map(|i| self.entries.remove(i).1)
    }

    /// Gives the entry at position `i` (of [`Record::entries`]) a new
    /// value; its label stays.
    #[inline]
    pub fn set_value_at(&mut self, i: usize, value: Value) {
        self.entries[i].1 = value;
    }

    /// The entries, by value, in label order (the record is used up).
    #[inline]
    pub fn into_entries(self) -> impl Iterator<Item = (Label, Value)> {
        self.entries.into_iter()
    }

    /// A record of `entries`, which are sorted by label, each label once.
    #[inline]
    pub fn from_sorted(entries: impl ExactSizeIterator<Item = (Label, Value)>) -> Record {
        let n = entries.len();
        let entries: SmallVec<[(Label, Value); 4]> = if n <= 4 {
            // Built in place: the padding beyond `n` is never read, and
            // integers need no drop.
            let mut it = entries;
            let buf: [(Label, Value); 4] =
                std::array::from_fn(|_| it.next().unwrap_or((Label::PAD, Value::Int(0))));
            SmallVec::from_buf_and_len(buf, n)
        } else {
            entries.collect()
        };
        debug_assert!(entries.windows(2).all(|w| w[0].0 < w[1].0));
        Record { entries }
    }

    /// Replaces every entry with `entries`, sorted by label, each label
    /// once (built where the record is: no second record moved in).
    #[inline]
    pub fn refill_sorted(&mut self, entries: impl Iterator<Item = (Label, Value)>) {
        self.entries.clear();
        for e in entries {
            self.entries.push(e);
        }
        debug_assert!(self.entries.windows(2).all(|w| w[0].0 < w[1].0));
    }

    /// Removes `label`'s entry, if any, without handing its value back
    /// (the entries behind it move down one place).
    #[inline]
    pub fn discard(&mut self, label: Label) {
        if let Ok(i) = self.find(label) {
            let n = self.entries.len();
            for j in i..n - 1 {
                self.entries.swap(j, j + 1);
            }
            self.entries.truncate(n - 1);
        }
    }

    /// Appends an entry known to sort after every present label (builders that go in order).
    #[inline]
    pub fn push_sorted(&mut self, label: Label, value: Value) {
        debug_assert!(self.entries.last().is_none_or(|(l, _)| *l < label));
        self.entries.push((label, value));
    }

    /// Appends entries in label order, each sorting after every present
    /// label (builders that go in order): room is made once, and each
    /// entry is written without a check of its own.
    #[inline(always)]
    pub fn extend_sorted(&mut self, entries: impl ExactSizeIterator<Item = (Label, Value)>) {
        let n = entries.len();
        let len = self.entries.len();
        if self.entries.capacity() - len < n {
            self.entries.reserve(n);
        }
        let base = self.entries.as_mut_ptr();
        let mut k = 0;
        let mut entries = entries;
        while k < n {
            let Some(e) = entries.next() else { break };
            // SAFETY: there is room for `n` entries from `len` on, and `k < n`.
            unsafe { base.add(len + k).write(e) };
            k += 1;
        }
        // SAFETY: the entries up to `len + k` were written just above. (If
        // the iterator panics, those written are leaked, not dropped twice.)
        unsafe { self.entries.set_len(len + k) };
        debug_assert!(self.entries[len.saturating_sub(1)..]
            .windows(2)
            .all(|w| w[0].0 < w[1].0));
    }

    /// Fills an empty record with `entries`, in label order, each label
    /// once (an output built where it waits: [`Record::extend_sorted`]
    /// on an empty record, cheaper). When they fit inline and the record
    /// holds no heap buffer, the record is written whole from a buffer
    /// of its entries, with no look at its capacity per entry or at the
    /// end; otherwise they are appended by [`Record::extend_sorted`].
    #[inline(always)]
    pub fn fill_empty_sorted(&mut self, entries: impl ExactSizeIterator<Item = (Label, Value)>) {
        debug_assert!(self.is_empty());
        let n = entries.len();
        if n > Record::INLINE || self.entries.spilled() || !self.entries.is_empty() {
            return self.extend_sorted(entries);
        }
        let mut buf = std::mem::MaybeUninit::<[(Label, Value); 4]>::uninit();
        let base = buf.as_mut_ptr().cast::<(Label, Value)>();
        let mut k = 0;
        let mut entries = entries;
        while k < n {
            let Some(e) = entries.next() else { break };
            // SAFETY: `k < n <= 4`, inside the buffer.
            unsafe { base.add(k).write(e) };
            k += 1;
        }
        let filled = Record {
            // SAFETY: the first `k` entries of the buffer were written
            // just above (`k <= 4`); the rest is never read. (If the
            // iterator panics, those written are leaked, not dropped twice.)
            entries: unsafe { SmallVec::from_buf_and_len_unchecked(buf, k) },
        };
        debug_assert!(filled.entries.windows(2).all(|w| w[0].0 < w[1].0));
        // SAFETY: `self` is empty and inline: it owns nothing, so it is
        // overwritten without a drop.
        unsafe { std::ptr::write(self, filled) };
    }

    /// Copies a record that holds no field value and keeps its entries
    /// inline over `to`, bitwise in one go (no look at each entry): such
    /// a record owns nothing, so the copy and the original are
    /// independent.
    ///
    /// # Safety
    /// No value of `self` is a field and `self` is not spilled
    /// ([`Record::spilled`]), i.e. `self` does not [`Record::needs_drop`];
    /// nor does `to`, which is overwritten without a drop.
    #[inline(always)]
    pub unsafe fn copy_inline_tags_to(&self, to: &mut Record) {
        debug_assert!(!self.needs_drop() && !to.needs_drop());
        // SAFETY: the record owns no heap buffer and no field reference
        // (contract): its bytes are the whole of its value; `to` owns
        // nothing to drop; two references do not overlap.
        unsafe { std::ptr::copy_nonoverlapping(self, to, 1) }
    }

    /// [`Record::copy_inline_tags_to`] for a record of `n` entries,
    /// handing back where the copy's entries are (inline, in `to`), to
    /// write ints over them with [`Record::set_int_in`] without a look
    /// at `to`'s length or place of entries.
    ///
    /// Only as much of the inline room as the entries in use need is
    /// copied: two entries' worth for up to two (pipe10's record of two
    /// tags: 56 bytes of its 104, the length included), all four
    /// otherwise. `n` is read by the caller (before it writes anything
    /// the compiler cannot tell from `self`, which would make it read
    /// the record's length again).
    ///
    /// # Safety
    /// As for [`Record::copy_inline_tags_to`]; `n` is [`Record::len`].
    #[inline(always)]
    pub unsafe fn copy_inline_tags_into(&self, n: usize, to: &mut Record) -> *mut (Label, Value) {
        debug_assert!(!self.needs_drop() && !to.needs_drop() && n == self.len());
        type E = (Label, Value);
        const ROOM: usize = Record::INLINE * std::mem::size_of::<E>();
        let (from, to): (*const u8, *mut u8) =
            ((self as *const Record).cast(), (to as *mut Record).cast());
        // Where the inline room is in a record: an empty one is inline, so
        // the compiler works this out as a constant (and, not dropped,
        // makes no record at all).
        let probe = std::mem::ManuallyDrop::new(Record::new());
        // SAFETY: both pointers are into (or at the start of) `probe`.
        let at = unsafe {
            probe
                .entries
                .as_ptr()
                .cast::<u8>()
                .offset_from((&*probe as *const Record).cast::<u8>())
        } as usize;
        // SAFETY: the record owns no heap buffer and no field reference
        // (contract): its bytes are the whole of its value, of which the
        // inline room behind its `n` entries is never read (copied or
        // not); `to` owns nothing to drop; the two do not overlap.
        unsafe {
            if at + ROOM > std::mem::size_of::<Record>() {
                // Not the layout of inline room and a length beside it.
                std::ptr::copy_nonoverlapping(self, to.cast::<Record>(), 1);
            } else {
                // What is not the inline room: the length (before or
                // behind it), copies of sizes known to the compiler.
                std::ptr::copy_nonoverlapping(from, to, at);
                std::ptr::copy_nonoverlapping(
                    from.add(at + ROOM),
                    to.add(at + ROOM),
                    std::mem::size_of::<Record>() - at - ROOM,
                );
                let (f, t) = (from.add(at), to.add(at));
                if n <= 2 {
                    std::ptr::copy_nonoverlapping(f, t, 2 * std::mem::size_of::<E>());
                } else {
                    std::ptr::copy_nonoverlapping(f, t, ROOM);
                }
            }
            to.add(at).cast()
        }
    }

    /// Writes the tag value `v` over the value of entry `i` of the
    /// entries at `entries` (from [`Record::copy_inline_tags_into`]);
    /// its label stays. One store: the entry's value is an int already.
    ///
    /// # Safety
    /// `entries` came from [`Record::copy_inline_tags_into`] for a record
    /// that is still alive and unchanged in length; `i` is below its
    /// length and the value there is an int.
    #[inline(always)]
    pub unsafe fn set_int_in(entries: *mut (Label, Value), i: usize, v: i64) {
        // SAFETY: see the contract.
        let e = unsafe { &mut (*entries.add(i)).1 };
        let Value::Int(x) = e else {
            // SAFETY: an int (contract).
            unsafe { std::hint::unreachable_unchecked() }
        };
        *x = v;
    }

    /// Writes the tag value `v` over the value of the entry at position
    /// `i` (its label stays), without dropping the old value.
    ///
    /// # Safety
    /// `i` is below [`Record::len`], and the value there is an int (it
    /// needs no drop).
    #[inline(always)]
    pub unsafe fn set_int_at_unchecked(&mut self, i: usize, v: i64) {
        debug_assert!(i < self.len() && matches!(self.entries[i].1, Value::Int(_)));
        // SAFETY: `i` is in bounds (contract); the old value is an int,
        // which owns nothing: overwritten without a drop.
        unsafe {
            std::ptr::write(
                std::ptr::addr_of_mut!((*self.entries.as_mut_ptr().add(i)).1),
                Value::Int(v),
            )
        }
    }

    /// Flow inheritance: copies into `self` every entry of `from` whose label
    /// `pattern` does not name and `self` does not already carry.
    pub fn inherit(&mut self, from: &Record, pattern: &Variant) {
        for (l, v) in from.entries.iter() {
            if !pattern.contains(*l) {
                self.set_if_absent(*l, v);
            }
        }
    }

    /// Flow inheritance by plan: adds the entries of `from` at positions
    /// `take` (ascending), whose labels `self` does not carry (what
    /// [`Record::inherit`] would add, worked out once per input label set).
    /// One merge of two sorted lists from the back, in place: no search,
    /// and every entry moves at most once.
    #[inline]
    pub fn inherit_at(&mut self, from: &Record, take: &[u32]) {
        if take.is_empty() {
            return;
        }
        let mut i = self.entries.len();
        for _ in take {
            self.entries.push((Label::PAD, Value::Int(0)));
        }
        let mut k = self.entries.len();
        for &t in take.iter().rev() {
            let (l, v) = &from.entries[t as usize];
            while i > 0 && self.entries[i - 1].0 > *l {
                i -= 1;
                k -= 1;
                self.entries.swap(i, k);
            }
            // An emitted label wins (a language interface that emits more
            // than its variant's labels still gets the rule right).
            if i == 0 || self.entries[i - 1].0 != *l {
                k -= 1;
                self.entries[k] = (*l, v.clone());
            }
        }
        // `[i, k)` is what labels the record already had left unused.
        if k > i {
            self.entries.drain(i..k);
        }
    }

    /// [`Record::has_labels`] for the first `n` of `labels`, with `n` at
    /// most [`Record::INLINE`], where the record's entries are inline:
    /// the length and the labels compared without a loop (the compiler
    /// unrolls it). `false` for entries on the heap, whatever their labels
    /// (a caller that must know asks [`Record::has_labels`] then).
    #[inline(always)]
    pub fn has_inline_labels(&self, labels: &[Label; Record::INLINE], n: usize) -> bool {
        if self.entries.spilled() || self.entries.len() != n {
            return false;
        }
        let e = self.entries.as_slice();
        for (i, m) in labels.iter().enumerate() {
            if i == n {
                return true;
            }
            // `i < n`, the length.
            if e[i].0 != *m {
                return false;
            }
        }
        true
    }

    /// [`Record::has_inline_labels`] for a count `L` known to the
    /// compiler (1 to [`Record::INLINE`]): the length is then one
    /// comparison (a length of `L` or less is inline; the test of the
    /// entries' place folds into it), and each of the `L` labels one
    /// more, with no test of the count between them.
    #[inline(always)]
    pub fn has_inline_labels_of<const L: usize>(&self, labels: &[Label; Record::INLINE]) -> bool {
        debug_assert!(L >= 1 && L <= Record::INLINE);
        if self.entries.spilled() || self.entries.len() != L {
            return false;
        }
        let e = self.entries.as_slice();
        (0..L).all(|i| e[i].0 == labels[i])
    }

    /// Whether the record's labels are exactly `labels` (in order).
    #[inline]
    pub fn has_labels(&self, labels: &[Label]) -> bool {
        self.entries.len() == labels.len()
            && self.entries.iter().zip(labels).all(|((l, _), m)| l == m)
    }

    /// Does this record match `v` (language.md §1): it carries every label of
    /// `v`, and exactly the binding tags `v` names.
    #[inline]
    pub fn matches(&self, v: &Variant) -> bool {
        let want = v.labels();
        let mut j = 0;
        for (l, _) in self.entries.iter() {
            if j < want.len() && want[j] < *l {
                return false; // a wanted label below `l` is missing
            }
            if j < want.len() && want[j] == *l {
                j += 1;
            } else if l.kind() == LabelKind::BTag {
                return false; // a binding tag the pattern does not name
            }
        }
        j == want.len()
    }

    /// Routing score: number of labels of `v` when the record matches it.
    pub fn score(&self, v: &Variant) -> Option<usize> {
        self.matches(v).then(|| v.len())
    }

    /// The labels as S-Net would write the record's type: `{a, <t>, <#b>}`
    /// (the `Display` of [`crate::Variant`], which every message uses).
    pub fn type_string(&self) -> String {
        crate::Variant::new(self.labels()).to_string()
    }
}

impl fmt::Debug for Record {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("{")?;
        for (i, (l, v)) in self.entries.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{l}={v:?}")?;
        }
        f.write_str("}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(labels: &[Label]) -> Variant {
        Variant::new(labels.iter().copied())
    }

    #[test]
    fn matching_follows_subtyping_rules() {
        let (a, t, b) = (Label::field("ra"), Label::tag("rt"), Label::btag("rb"));
        let mut r = Record::new();
        r.set_int(t, 1);
        r.set(a, Value::Int(0));
        assert!(r.matches(&v(&[a])));
        assert!(r.matches(&v(&[a, t])));
        assert!(r.matches(&v(&[])));
        assert!(!r.matches(&v(&[b])));
        r.set_int(b, 2);
        assert!(!r.matches(&v(&[a])), "binding tag blocks subtyping");
        assert!(r.matches(&v(&[a, b])));
        assert_eq!(r.score(&v(&[a, t, b])), Some(3));
    }

    #[test]
    fn inherit_at_agrees_with_inherit() {
        // Every subset of six labels as input, pattern and output, with a
        // seeded walk over the combinations (the plan is what `Inherit`
        // in the engine computes: input positions outside pattern and output).
        let all = [
            Label::field("ia"),
            Label::field("ib"),
            Label::tag("ic"),
            Label::tag("id"),
            Label::btag("ie"),
            Label::tag("if"),
        ];
        let pick = |bits: u32| -> Vec<Label> {
            let mut v: Vec<Label> = (0..6)
                .filter(|i| bits >> i & 1 == 1)
                .map(|i| all[i])
                .collect();
            v.sort();
            v
        };
        let mut seed = 0x9e37_79b9_u32;
        for _ in 0..4000 {
            seed ^= seed << 13;
            seed ^= seed >> 17;
            seed ^= seed << 5;
            let (inp, pat, out) = (pick(seed & 63), pick(seed >> 6 & 63), pick(seed >> 12 & 63));
            let mut input = Record::new();
            for (n, l) in inp.iter().enumerate() {
                input.set_int(*l, n as i64 + 1);
            }
            let mut emitted = Record::new();
            for (n, l) in out.iter().enumerate() {
                emitted.set_int(*l, -(n as i64) - 1);
            }
            let pattern = v(&pat);
            let mut want = emitted.clone();
            want.inherit(&input, &pattern);
            // Positions outside the pattern; the emitted labels are left in
            // on purpose for some: the merge must let the emitted value win.
            let take: Vec<u32> = (0u32..)
                .zip(input.labels())
                .filter(|(_, l)| !pattern.contains(*l) && (seed & 1 << 20 == 0 || !out.contains(l)))
                .map(|(i, _)| i)
                .collect();
            let mut got = emitted.clone();
            got.inherit_at(&input, &take);
            assert_eq!(
                format!("{got:?}"),
                format!("{want:?}"),
                "{inp:?} {pat:?} {out:?}"
            );
        }
    }

    /// Filling an empty record gives what appending to it gives, inline
    /// (written whole) or not (more than fit inline, or an empty record
    /// that keeps a heap buffer), fields included.
    #[test]
    fn fill_empty_sorted_agrees_with_extend_sorted() {
        let labels: Vec<Label> = std::iter::once(Label::field("fe0"))
            .chain(
                ["fe1", "fe2", "fe3", "fe4", "fe5"]
                    .iter()
                    .map(|n| Label::tag(n)),
            )
            .collect();
        for n in 0..=labels.len() {
            let entries = || {
                labels[..n].iter().enumerate().map(|(i, l)| {
                    let v = if l.is_field() {
                        Value::Field(Field::text("C4SNet", false, "7"))
                    } else {
                        Value::Int(i as i64 * 10 - 25)
                    };
                    (*l, v)
                })
            };
            let mut want = Record::new();
            want.extend_sorted(entries());
            let mut got = Record::new();
            got.fill_empty_sorted(entries());
            assert_eq!(format!("{got:?}"), format!("{want:?}"), "{n} entries");
            assert_eq!(got.spilled(), n > Record::INLINE);
            // An empty record with a heap buffer keeps it (not overwritten).
            let mut heap = Record::with_capacity(8);
            heap.set_int(labels[1], 1);
            heap.discard(labels[1]);
            assert!(heap.spilled() && heap.is_empty());
            heap.fill_empty_sorted(entries());
            assert_eq!(
                format!("{heap:?}"),
                format!("{want:?}"),
                "{n} entries, heap"
            );
            assert!(heap.spilled());
        }
    }

    #[test]
    fn needs_drop_only_for_fields_or_heap_entries() {
        let tags: Vec<Label> = ["nd1", "nd2", "nd3", "nd4", "nd5"]
            .iter()
            .map(|n| Label::tag(n))
            .collect();
        let mut r = Record::new();
        assert!(!r.needs_drop());
        for (i, l) in tags[..4].iter().enumerate() {
            r.set_int(*l, i as i64);
        }
        assert!(!r.needs_drop(), "four tags stay inline");
        r.set_int(tags[4], 4);
        assert!(r.needs_drop(), "a fifth entry moves them to the heap");
        let mut f = Record::new();
        f.set_int(tags[0], 1);
        f.set(
            Label::field("ndf"),
            Value::Field(Field::text("C4SNet", false, "1")),
        );
        assert!(f.needs_drop(), "a field is a reference to release");
    }

    #[test]
    fn inherit_keeps_emitted_labels() {
        let (x, y, z) = (Label::tag("ix"), Label::tag("iy"), Label::tag("iz"));
        let mut input = Record::new();
        input.set_int(x, 1);
        input.set_int(y, 2);
        input.set_int(z, 3);
        let mut out = Record::new();
        out.set_int(y, 20);
        out.inherit(&input, &v(&[x]));
        assert_eq!(out.int(x), None);
        assert_eq!(out.int(y), Some(20));
        assert_eq!(out.int(z), Some(3));
    }
}
