//! Input admission and the reader thread.
//!
//! The reader thread ([`reader_loop`]) parses records into the read-ahead
//! buffer ([`Input`]); workers take them into the entry network
//! (`Shared::admit`), in input order, as step 3 of the worker loop (see
//! [`super::work`]): only an idle worker admits, and only while the entry's
//! inbox holds less than a batch and the node's inboxes fewer than
//! [`ADMIT_QUEUED_MAX`] items, so input enters no faster than the network
//! drains it. The `--input-limit` bound (`Shared::admissible`) holds input
//! back further, except that the last worker to go to sleep admits a record
//! regardless (see the termination rule in [`super`]).

use std::collections::VecDeque;

use snet_core::Record;

use super::sleep::Sleep;
use super::work::{Shared, Task, BATCH};
use crate::entity::{Item, Rec, Stamps};
use crate::runtime::Ctx;
use crate::sync::{lock, AtomicBool, Condvar, Mutex, Ordering};
use crate::{EngineError, Source};

pub(super) struct InputState {
    /// Records read ahead, with the input line each ended on.
    pub(super) records: VecDeque<(Record, Option<u64>)>,
    pub(super) closed: bool,
    pub(super) error: Option<EngineError>,
}

/// The read-ahead buffer between the reader thread and the workers.
///
/// The reader thread holds it (and the [`Sleep`] it notifies) through an
/// `Arc`, not a borrow of the run: a reader blocked in a read of an open
/// but idle input (a pipe or a terminal nobody types into) is not waited
/// for when the run ends early (a box error, a node gone). The run
/// returns at once; the reader stops at its next record, or with the
/// process.
pub(super) struct Input {
    pub(super) state: Mutex<InputState>,
    pub(super) space: Condvar,
    pub(super) capacity: usize,
    /// The run failed: the reader stops.
    pub(super) stop: AtomicBool,
}

/// How a node's input is set up: what [`Shared::new`] needs besides the
/// runtime and the first tasks.
pub(super) struct InputConfig {
    /// No input comes (nodes other than 0, model checks).
    pub(super) closed: bool,
    /// Records read ahead at the most (at least 1).
    pub(super) capacity: usize,
    pub(super) limit: Option<crate::InputLimit>,
    pub(super) codecs: snet_core::Codecs,
}

/// Records the reader hands over at once, at most (and at most half the
/// read-ahead buffer).
const READ_BATCH: usize = 64;

/// Records an admitting worker takes from the read-ahead buffer at once, at
/// most: a task's batch ([`BATCH`]), so that the entry, and each box behind
/// it, runs as long a run of calls as in a generator's pipeline (with 16,
/// every run was a quarter of that, and each call paid a quarter of its
/// run's set-up: ~60 instructions a call more in pipe10's stream form).
const ADMIT_BATCH: usize = BATCH;
/// Idle workers admit input only while fewer items than this wait in the
/// node's inboxes (roughly: see [`Ctx::queued`]) plus those sent to other
/// nodes and not yet acknowledged ([`crate::dist::Net::outstanding`]);
/// when every worker is idle no item waits here, so input is admitted then
/// unless other nodes hold this many unacknowledged (their acknowledgements
/// wake a worker: `Host::acked`).
pub(super) const ADMIT_QUEUED_MAX: isize = 1024;

/// The reader thread: parses records and hands them to the workers through
/// the read-ahead buffer. Records that have already arrived (the source
/// holds them: [`Source::next_ready`]) go over together, up to
/// [`READ_BATCH`], under one lock; a record is never held back while the
/// reader waits for the next one's bytes. The buffer may exceed its
/// capacity by less than a batch.
pub(super) fn reader_loop(input: &Input, sleep: &Sleep, mut source: Box<dyn Source>) {
    let batch_max = (input.capacity / 2).clamp(1, READ_BATCH);
    let mut batch: Vec<(Record, Option<u64>)> = Vec::with_capacity(batch_max);
    loop {
        if input.stop.load(Ordering::Relaxed) {
            return;
        }
        // `Some`: the input ended (or failed) after the batch.
        let mut end: Option<Option<EngineError>> = None;
        match source.next_record() {
            Ok(Some(rec)) => batch.push((rec, source.line())),
            Ok(None) => end = Some(None),
            Err(e) => end = Some(Some(EngineError::Input(e))),
        }
        while end.is_none() && batch.len() < batch_max {
            match source.next_ready() {
                Some(Some(rec)) => batch.push((rec, source.line())),
                Some(None) => end = Some(None),
                None => break,
            }
        }
        let mut st = lock(&input.state);
        if !batch.is_empty() {
            while st.records.len() >= input.capacity && !st.closed {
                st = input.space.wait(st).unwrap_or_else(|e| e.into_inner());
            }
            if st.closed {
                return;
            }
            st.records.extend(batch.drain(..));
        }
        if let Some(error) = end {
            st.closed = true;
            st.error = error;
            drop(st);
            sleep.notify_one();
            return;
        }
        drop(st);
        sleep.notify_one();
    }
}

impl Shared {
    pub(super) fn admissible(&self) -> bool {
        self.admissible_after(self.admitted.load(Ordering::Relaxed))
    }

    /// Whether one more record may enter after `admitted` did.
    #[inline]
    fn admissible_after(&self, admitted: u64) -> bool {
        match &self.limit {
            None => true,
            Some(l) => {
                // Acquire: pairs with the Release increment in the output entity.
                let out = self.rt.outputs.load(Ordering::Acquire);
                (admitted as i64) < l.allowed(out)
            }
        }
    }

    /// Takes input records into the network (up to [`ADMIT_BATCH`], as
    /// many as the input bound allows; `force`: the first regardless);
    /// `None` if there were none, else a task if the entry was idle.
    pub(super) fn admit(&self, ctx: &mut Ctx, force: bool) -> Option<Option<Task>> {
        // Check, pop and offer under the input lock: two workers admitting
        // at once must neither reorder the input stream nor both pass the
        // bound for the last admissible record.
        // Only node 0 has the entry network (and input).
        let entry = self.entry.as_ref()?;
        // The entry still has a batch to work through: more input would
        // only queue behind it (and another worker taking it would only
        // contend with the entry's licence holder for its inbox).
        // The node's inboxes hold enough already: the input waits until
        // the network drains (this bounds the records in flight, so a slow
        // output stage does not let the whole input pile up in front of it).
        // Items sent to other nodes and not yet acknowledged wait in their
        // backlogs: they count as this node's (back-pressure across nodes).
        if !force
            && (entry.backlog() >= ADMIT_BATCH
                || ctx.queued() + self.rt.net.outstanding() as isize >= ADMIT_QUEUED_MAX)
        {
            return None;
        }
        let mut st = lock(&self.input.state);
        if st.records.is_empty() || (!force && !self.admissible()) {
            return None;
        }
        let before = st.records.len();
        // The count of admitted records is only written here, under the
        // input lock: counted locally and stored once per batch (one store
        // instead of an atomic add per record; readers outside the lock,
        // the live dump and the profile's counters, only sample it).
        let mut admitted = self.admitted.load(Ordering::Relaxed);
        // The batch goes to the entry in one offer (one lock of its inbox;
        // into an idle entry's empty inbox a trade of buffers), through
        // `ctx.taken`, which is empty between tasks and which the offer
        // leaves empty.
        let items = &mut ctx.taken;
        debug_assert!(items.is_empty());
        while items.len() < ADMIT_BATCH && (items.is_empty() || self.admissible_after(admitted)) {
            let Some((rec, line)) = st.records.pop_front() else {
                break;
            };
            // Admission happens in input order, under the input lock.
            admitted += 1;
            items.push_back(Item::Rec(Rec {
                rec,
                det: Stamps::new(),
                origin: crate::entity::Origin::input(admitted, line),
            }));
        }
        // If the entry was idle this worker now holds its licence and runs
        // the batch at once (the first item in hand, the rest in the
        // entry's inbox, taken with it: one run of calls for a box).
        let (first, queued) = entry.offer_many(items);
        ctx.count_queued(queued as isize);
        let task = first.map(|item| Task {
            ent: entry.clone(),
            item,
        });
        self.admitted.store(admitted, Ordering::Relaxed);
        // The reader sleeps only on a full buffer; wake it when the buffer
        // has drained to half (not as soon as one slot is free, which made
        // the reader and the workers take turns one record at a time, two
        // context switches a record, once the reader was ahead).
        let half = self.input.capacity / 2;
        if before > half && st.records.len() <= half {
            self.input.space.notify_one();
        }
        drop(st);
        Some(task)
    }
}
