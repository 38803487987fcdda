//! The input and output managers of one node (see [`super`]).

use std::collections::BTreeMap;
use std::time::Duration;

use snet_core::{Codecs, Rank};

use std::borrow::Cow;

use super::wire::{Decoder, Encoder, Frame, FrameRef, Frames, MessageReader};
use super::{Channel, FieldBytes, Out, Payload, Received, Settle, Transport, TransportError};
use crate::entity::{Entity, Item};
use crate::instantiate::instantiate;
use crate::remote::RemoteEntity;
use crate::runtime::{Ctx, Kind, Runtime};
use crate::sync::{lock, Arc, Ordering};
use crate::weight::Dyadic;
use crate::{DistributionError, EngineError, ProtocolError};

/// What the managers need from the node's scheduler.
pub(crate) trait Host: Sync {
    fn rt(&self) -> &Runtime;
    fn codecs(&self) -> &Codecs;
    /// Hands licences the input manager obtained to the workers.
    fn deliver(&self, ready: Vec<(Arc<Entity>, Item)>);
    /// Ends the run with an error (`remote`: it came from another node,
    /// which has told everyone already).
    fn fail(&self, e: EngineError, remote: bool);
    /// Ends the run normally (node 0 said so).
    fn shutdown(&self);
    /// Has the run ended, normally or not?
    fn over(&self) -> bool;
    /// The termination rule ([`super::Net::settle`]) with the workers' state.
    fn settle(&self) -> Settle;
    /// Items this node sent were acknowledged: a worker waiting to admit
    /// input may go on.
    fn acked(&self);
}

/// Sends everything workers and the input manager queue, until stopped.
pub(crate) fn output_manager(host: &dyn Host, t: &dyn Transport) {
    let net = &host.rt().net;
    loop {
        {
            let (m, cv) = &*net.state;
            let mut st = lock(m);
            while st.out.is_empty() && !st.stop {
                st = cv.wait(st).unwrap_or_else(|e| e.into_inner());
            }
        }
        // The encoder first, then the batch: a lost node's replacement
        // (which holds the encoder) sees no batch taken and not sent.
        let enc = lock(&net.enc);
        let mut bufs = lock(&net.sending);
        match take_batch(net, &mut bufs) {
            Taken::Nothing { stop: true } => return,
            Taken::Nothing { stop: false } => continue,
            Taken::Batch { .. } => {}
        }
        // (What the batch's drops queue, the releases of fields by
        // reference, this loop sends next: no wake-up.)
        send_taken(host, t, enc, bufs);
        host.settle();
    }
}

/// A worker sends what is queued itself, after a task that queued
/// something (or when it found the node quiet and queued acknowledgements
/// or its credit: [`super::Settle::Queued`]), instead of waking the output
/// manager: if no one holds the encoder, it takes it, then the queue (as
/// the output manager does: encoder first, so a replacement that holds
/// the encoder sees no batch taken and not sent) and sends the batch. If
/// someone holds the encoder, the worker wakes the output manager (the
/// holder may be another worker, which does not look at the queue again).
///
/// Counted busy while it sends, as the output manager is; it does not
/// settle afterwards: the worker is awake, so no one can have found the
/// node quiet meanwhile, and it settles when it next goes to sleep last.
pub(crate) fn send_queued(host: &dyn Host, t: &dyn Transport) {
    let net = &host.rt().net;
    let Some(enc) = crate::sync::try_lock(&net.enc) else {
        net.notify();
        return;
    };
    let mut bufs = lock(&net.sending);
    let Taken::Batch { more } = take_batch(net, &mut bufs) else {
        return;
    };
    if more {
        net.notify();
    }
    // The batch's items are dropped once encoded: the release of each
    // field by reference among them is queued quietly, and the output
    // manager woken once for them all (a wake-up a field was a system
    // call a record on `bench/soak`'s nodes other than 0).
    if send_taken(host, t, enc, bufs) {
        net.notify();
    }
}

/// What [`take_batch`] found in the node's queue.
enum Taken {
    /// Nothing (`stop`: the output manager was told to stop).
    Nothing { stop: bool },
    /// A batch, now in the send buffers (`more`: items are left).
    Batch { more: bool },
}

/// Moves up to 4,096 queued items into `bufs`' batch, counting the caller
/// busy until [`send_taken`]. The caller holds the encoder.
fn take_batch(net: &super::Net, bufs: &mut SendBufs) -> Taken {
    let mut st = lock(&net.state.0);
    if st.out.is_empty() {
        return Taken::Nothing { stop: st.stop };
    }
    st.busy += 1;
    let n = st.out.len().min(4096);
    bufs.batch.extend(st.out.drain(..n));
    Taken::Batch {
        more: !st.out.is_empty(),
    }
}

/// Sends the batch [`take_batch`] took, in [`super::custody::quietly`],
/// then lets go of the buffers and the encoder and counts the caller no
/// longer busy. A send error ends the run. Returns whether the batch
/// queued something (a field's release) that nobody was woken for.
fn send_taken(
    host: &dyn Host,
    t: &dyn Transport,
    mut enc: crate::sync::MutexGuard<'_, super::wire::Encoder>,
    mut bufs: crate::sync::MutexGuard<'_, SendBufs>,
) -> bool {
    let mut r = Ok(());
    let queued = super::custody::quietly(|| r = send_batch(host, t, &mut enc, &mut bufs));
    drop(bufs);
    drop(enc);
    if let Err(e) = r {
        host.fail(e, false);
    }
    host.rt().net.end();
    queued
}

/// What messages are built in, kept by the node from batch to batch
/// ([`super::Net::sending`], taken by whoever holds the encoder: the output
/// manager or a worker sending its own batch). Made afresh for each batch,
/// they went back to the system at once (the allocator's purge delay is 0)
/// and faulted their pages in again the next time; and a message's frames
/// grew from nothing by doubling, about 700 instructions a message, more
/// than a commit's `Fired` frame costs to write (under `respawn`, a
/// worker's batch is often one commit).
#[derive(Default)]
pub(crate) struct SendBufs {
    /// The batch taken from the node's queue.
    batch: Vec<Out>,
    /// Messages sent, emptied, for the next batch's messages.
    spare: Vec<Building>,
    /// A message's header (its credit, then its frames) as sent.
    header: Vec<u8>,
    /// Node 0 with a log: the batch's items in the order they are sent,
    /// each in its log slot, for the log to number and keep
    /// ([`super::Net::logged`]).
    logging: super::custody::Sending,
}

/// The batch's messages, a [`Building`] per node and channel.
struct Messages<'s> {
    map: BTreeMap<(Rank, u8), Building>,
    spare: &'s mut Vec<Building>,
}

impl Messages<'_> {
    /// The message for node `to` on channel `ch`, started (from a spare
    /// one's buffers) if it is the batch's first for them.
    fn at(&mut self, to: Rank, ch: u8) -> &mut Building {
        let spare = &mut *self.spare;
        self.map
            .entry((to, ch))
            .or_insert_with(|| spare.pop().unwrap_or_default())
    }
}

/// A message being built for one node and channel.
#[derive(Default)]
struct Building {
    frames: Frames,
    credit: Dyadic,
    /// Holds a frame other than credit being returned (needs a share of credit).
    needs_credit: bool,
    /// The items whose commits the message carries: their `Done`s go
    /// last, so that the commits' records join one `Items` frame per
    /// connection (a `Done` between them would start a new one).
    dones: Vec<u64>,
    /// The tombstones of the cells the commits' groups fired
    /// ([`super::wire::Tomb`]): their frames go after the records, before
    /// the `Done`s, for the same reason.
    fired: Vec<super::wire::Tomb>,
}

impl Building {
    /// Empties the message for reuse, keeping its buffers.
    fn clear(&mut self) {
        self.frames.clear();
        self.credit = Dyadic::zero();
        self.needs_credit = false;
        self.dones.clear();
        self.fired.clear();
    }
}

/// The frames of a message carrying one field value (a message has one
/// payload): its meta part goes in the header, its body is sent from the
/// value's own memory (the payload keeps the value until sent). `id` is
/// the export a `Bytes` answers; `None`, a field given ahead of the
/// record holding it (wire.rs, "Given fields").
fn field_frames(id: Option<u64>, value: &dyn snet_core::FieldData) -> Frames {
    let mut meta = Vec::new();
    value.encode_meta(&mut meta);
    let (codec, meta) = (Cow::Borrowed(value.codec()), Cow::Owned(meta));
    let mut frames = Frames::default();
    frames.push(&match id {
        Some(id) => Frame::Bytes { id, codec, meta },
        None => Frame::Given { codec, meta },
    });
    frames
}

fn send_batch(
    host: &dyn Host,
    t: &dyn Transport,
    enc: &mut Encoder,
    bufs: &mut SendBufs,
) -> Result<(), EngineError> {
    let net = &host.rt().net;
    let me = net.me;
    let SendBufs {
        batch,
        spare,
        header,
        logging,
    } = bufs;
    let mut msgs = Messages {
        map: BTreeMap::new(),
        spare,
    };
    let mut payloads: Vec<(Rank, u64, Arc<dyn snet_core::FieldData>)> = Vec::new();
    let peers = Rank::all(net.nodes).filter(|&n| n != me);
    // Records of commits: outstanding until acknowledged (counted once
    // for the batch, before any is sent).
    let mut committed = 0u64;
    // Node 0 with a log: the items sent go to `logging`, in the order
    // they are sent, each in its log slot, for the log to number and
    // keep (moved there once encoded, before any is sent: a node may
    // report one done at once). Buffers grown afresh for each of the
    // workers' batches cost about 100 instructions an item.
    logging.clear();
    for out in batch.drain(..) {
        let ch = out.channel() as u8;
        match out {
            Out::Bytes { to, id, value } => payloads.push((to, id, value)),
            Out::Fail(m) => {
                for p in peers.clone() {
                    msgs.at(p, ch).frames.push(&Frame::Fail {
                        message: Cow::Borrowed(&m),
                    });
                }
            }
            Out::Shutdown => {
                for p in peers.clone() {
                    // No credit: the run is over, nothing may answer.
                    msgs.at(p, ch).frames.push(&Frame::Shutdown);
                }
            }
            Out::Credit(c) => msgs.at(Rank::ROOT, ch).credit.add_all(&c),
            Out::Open {
                to,
                conn,
                template,
                back,
                start,
            } => {
                let b = msgs.at(to, ch);
                b.needs_credit = true;
                b.frames.push(&Frame::Open {
                    conn,
                    template,
                    back,
                    start: Cow::Borrowed(&start),
                });
            }
            Out::Item { to, conn, item } => {
                let b = msgs.at(to, ch);
                b.needs_credit = true;
                b.frames
                    .item(conn, enc, to, &item, &net.store)
                    .map_err(|error| {
                        EngineError::Distribution(DistributionError::Field { node: me, error })
                    })?;
                if net.respawn_root {
                    // (Not kept: dropped here, outside any lock.)
                    drop(logging.push(to, conn, item));
                }
            }
            Out::Commit {
                to,
                id,
                more,
                items,
                fired,
                parked,
            } => {
                // The records, the tombstones and the `Done`s in one
                // message (custody.rs): a message is delivered whole or
                // not at all, so several commits in one keep "all or
                // none" each.
                committed += items.len() as u64;
                let b = msgs.at(to, ch);
                b.needs_credit = true;
                for (conn, item) in &items {
                    b.frames
                        .item(*conn, enc, to, item, &net.store)
                        .map_err(|error| {
                            EngineError::Distribution(DistributionError::Field { node: me, error })
                        })?;
                }
                super::custody::recycle(items);
                // A parked record: not an item of its connection (no
                // acknowledgement counts it), its own Items frame; the
                // tombstones of the commits before go ahead of it, as
                // node 0 files them (a tombstone takes its cell's parked
                // records out).
                if !parked.is_empty() {
                    b.frames.fired_tombs(&b.fired);
                    b.fired.clear();
                }
                for (cell, slot, rec) in parked {
                    b.frames
                        .parked(cell, slot, rec, enc, to, &net.store)
                        .map_err(|error| {
                            EngineError::Distribution(DistributionError::Field { node: me, error })
                        })?;
                }
                b.fired.extend(fired);
                // A pair (a fired cell's group of two) lowest first, so
                // that consecutive commits' items make one run of
                // `Done`s (`wire::done_runs`).
                match more.as_slice() {
                    [m] if *m < id => b.dones.extend([*m, id]),
                    _ => {
                        b.dones.push(id);
                        b.dones.extend(more);
                    }
                }
            }
            Out::Tombstones { to, cells } => {
                let b = msgs.at(to, ch);
                b.needs_credit = true;
                b.frames.fired_cells(&cells);
            }
            Out::Parked {
                to,
                cell,
                slot,
                rec,
            } => {
                let b = msgs.at(to, ch);
                b.needs_credit = true;
                b.frames
                    .parked(cell, slot, rec, enc, to, &net.store)
                    .map_err(|error| {
                        EngineError::Distribution(DistributionError::Field { node: me, error })
                    })?;
            }
            Out::Drain { to } => {
                let b = msgs.at(to, ch);
                b.needs_credit = true;
                b.frames.push(&Frame::Drain);
            }
            Out::Replay { to, conn, id, item } => {
                let b = msgs.at(to, ch);
                b.needs_credit = true;
                b.frames.push(&Frame::Seq { next: id });
                b.frames
                    .item(conn, enc, to, &item, &net.store)
                    .map_err(|error| {
                        EngineError::Distribution(DistributionError::Field { node: me, error })
                    })?;
            }
            Out::Seq { to, next } => {
                let b = msgs.at(to, ch);
                b.needs_credit = true;
                b.frames.push(&Frame::Seq { next });
            }
            Out::Fetch { to, id } => {
                let b = msgs.at(to, ch);
                b.needs_credit = true;
                b.frames.push(&Frame::Fetch { id });
            }
            Out::Release { to, id, weight } => {
                let b = msgs.at(to, ch);
                b.needs_credit = true;
                b.frames.push(&Frame::Release { id, weight });
            }
            Out::Ack { to, count } => {
                // With a share of credit: a run is not over while an
                // acknowledgement is on its way, so a quiescent run has
                // nothing outstanding.
                let b = msgs.at(to, ch);
                b.needs_credit = true;
                b.frames.push(&Frame::Ack { count });
            }
        }
    }
    net.sending(committed);
    net.logged(logging);
    let mut send = |to: Rank,
                    ch: Channel,
                    mut credit: Dyadic,
                    share: bool,
                    frames: &Frames,
                    payload: Payload| {
        net.credit_to(to, &mut credit, share);
        header.clear();
        frames.message(&credit, header);
        net.traffic.messages_sent.fetch_add(1, Ordering::Relaxed);
        net.traffic
            .bytes_sent
            .fetch_add((header.len() + payload.len()) as u64, Ordering::Relaxed);
        match t.send(to, ch, header, payload) {
            // A lost node's messages are replayed to its replacement.
            Err(TransportError::PeerGone { node, .. })
                if net.respawn_root && node != Rank::ROOT =>
            {
                Ok(())
            }
            r => r.map_err(|error| {
                EngineError::Distribution(DistributionError::Send {
                    from: me,
                    to,
                    error,
                })
            }),
        }
    };
    // Every message is attempted even if one fails (a failure notice must
    // reach the nodes still running when another has gone); the first
    // error is reported.
    let mut first = Ok(());
    // The fields given (wire.rs, "Given fields") before the messages of
    // the records holding them, on their channel, each in a message of
    // its own (a message has one payload), in the order the records were
    // written: the transport passes each body as a reference to its
    // block, the message owning a reference of its own.
    for (to, value) in enc.take_given() {
        net.traffic.fields_given.fetch_add(1, Ordering::Relaxed);
        let frames = field_frames(None, &*value);
        let r = send(
            to,
            Channel::Records,
            Dyadic::zero(),
            true,
            &frames,
            Payload::field_body(value),
        );
        if first.is_ok() {
            first = r;
        }
    }
    for ((to, ch), mut b) in std::mem::take(&mut msgs.map) {
        b.frames.fired_tombs(&b.fired);
        // Runs of consecutive identities, a frame each.
        super::wire::done_runs(&b.dones, |id, more| {
            b.frames.push(&Frame::Done { id, more });
        });
        // A message that only returns credit takes no new share.
        let ch = Channel::from_raw(ch).expect("channel");
        let credit = std::mem::take(&mut b.credit);
        let r = send(to, ch, credit, b.needs_credit, &b.frames, Payload::none());
        if first.is_ok() {
            first = r;
        }
        b.clear();
        msgs.spare.push(b);
    }
    for (to, id, value) in payloads {
        let frames = field_frames(Some(id), &*value);
        let r = send(
            to,
            Channel::Field,
            Dyadic::zero(),
            true,
            &frames,
            Payload::field_body(value),
        );
        if first.is_ok() {
            first = r;
        }
    }
    first
}

/// Receives, decodes and delivers, until the run is over.
pub(crate) fn input_manager(host: &dyn Host, t: &dyn Transport) {
    let rt = host.rt();
    let net = &rt.net;
    let mut dec = Decoder::new(net.me, net.nodes);
    let mut got = Got::default();
    loop {
        if host.over() {
            return;
        }
        let msg = match t.recv(Duration::from_millis(20)) {
            Ok(Some(m)) => m,
            Ok(None) => continue,
            Err(TransportError::Closed) => return,
            // A run that survives a lost node: node 0 replaces it; the
            // other nodes go on.
            Err(TransportError::PeerGone { node, why })
                if net.custody_on() && node != Rank::ROOT =>
            {
                if net.me == Rank::ROOT {
                    if let Err(e) = replace(host, t, &mut dec, node, &why) {
                        host.fail(e, false);
                        return;
                    }
                } else {
                    // A transport may report the loss until node 0 has
                    // replaced the node (shm: its node word says dead).
                    std::thread::sleep(Duration::from_millis(5));
                }
                continue;
            }
            Err(TransportError::PeerGone { node, why }) => {
                host.fail(
                    EngineError::Node {
                        node,
                        message: format!("node {node} stopped unexpectedly ({why})"),
                    },
                    false,
                );
                return;
            }
            Err(e) => {
                host.fail(
                    EngineError::Distribution(DistributionError::Transport(e)),
                    false,
                );
                return;
            }
        };
        net.traffic
            .messages_received
            .fetch_add(1, Ordering::Relaxed);
        net.traffic.bytes_received.fetch_add(
            (msg.header.len() + msg.payload.len()) as u64,
            Ordering::Relaxed,
        );
        let Received {
            from,
            header,
            payload,
            ..
        } = msg;
        let (credit, mut r) = match MessageReader::new(&header) {
            Ok(m) => m,
            Err(error) => {
                host.fail(
                    EngineError::Distribution(DistributionError::Protocol(
                        ProtocolError::Malformed { from, error },
                    )),
                    false,
                );
                return;
            }
        };
        net.begin(from, &credit);
        let mut ctx = Ctx::new(rt);
        got.items = 0;
        got.acked = false;
        let mut res = handle(host, &mut ctx, &mut dec, from, &mut r, payload, &mut got);
        if let (Ok(()), Some(e)) = (&res, ctx.take_error()) {
            res = Err(Handled::Error(e));
        }
        ctx.flush_queued();
        let ready = std::mem::take(&mut ctx.ready);
        if !ready.is_empty() {
            host.deliver(ready);
        }
        // Back-pressure across nodes: the items are acknowledged by a
        // worker after the task that takes them in (or after any task
        // that follows, once this node's backlog is small), with what
        // that task sends (`Shared::send_own`), or when the node goes
        // passive (`Net::settle`); never depending on what this node has
        // outstanding itself. Not here: an acknowledgement of its own
        // woke the output manager and the sender's input manager once
        // for every message that brought a record.
        net.received(from, got.items);
        if got.acked {
            host.acked();
        }
        net.end();
        match res {
            Ok(()) => {}
            Err(Handled::Error(e)) => host.fail(e, false),
            Err(Handled::Remote(e)) => host.fail(e, true),
        }
        host.settle();
    }
}

/// Node 0 of a run that survives a lost node: node `k` is gone. Ends
/// the run if `k` may have held what replay cannot restore, or held the
/// same record in three losses (a poison record); else starts a
/// replacement and sends it again what the log holds for it.
fn replace(
    host: &dyn Host,
    t: &dyn Transport,
    dec: &mut Decoder,
    k: Rank,
    why: &super::Gone,
) -> Result<(), EngineError> {
    let rt = host.rt();
    let net = &rt.net;
    let gone = |message: String| EngineError::Node { node: k, message };
    if let Some(held) = rt.graph().replay_boundary(k, rt.nodes) {
        return Err(gone(format!(
            "node {k} stopped unexpectedly ({why}); it may have held the {} at {}, which replaying its records cannot restore yet (--on-node-loss respawn covers placed boxes, filters, splits, farms, stars, feedback loops, deterministic combinators, synchrocells and placements inside placements, static or dynamic)",
            held.what, held.loc
        )));
    }
    // Nothing is sent while the old incarnation's traffic is dropped and
    // the new one's dictionaries start empty.
    let mut enc = lock(&net.enc);
    if lock(&net.state.0).finished {
        // Lost after the end (in the shutdown exchange): it held nothing.
        return Ok(());
    }
    match net.replay(k) {
        Ok(()) => {}
        Err(super::custody::GiveUp::Barren) => {
            return Err(gone(format!(
                "node {k} stopped unexpectedly ({why}), for the {} time without finishing a record in between: its replacement fails whatever it is sent, or before it is sent anything; the run stops",
                ordinal(super::custody::REPLAY_TRIES)
            )));
        }
        Err(super::custody::GiveUp::Poison(origin, n)) => {
            let others = match n {
                0 | 1 => String::new(),
                2 => " and 1 more record".to_string(),
                n => format!(" and {} more records", n - 1),
            };
            return Err(gone(format!(
                "node {k} stopped unexpectedly ({why}), for the {} time with {origin}{others} in its care: a record that makes the node fail each time it is replayed (a poison record; the node's own message names the box and the record); the run stops",
                ordinal(super::custody::REPLAY_TRIES)
            )));
        }
    }
    match t.replace(k) {
        Ok(true) => {}
        Ok(false) => {
            return Err(gone(format!(
                "node {k} stopped unexpectedly ({why}), and the {} transport cannot start a replacement",
                t.name()
            )))
        }
        Err(e) => {
            return Err(gone(format!(
                "node {k} stopped unexpectedly ({why}), and its replacement cannot start: {e}"
            )))
        }
    }
    enc.forget(k);
    let dropped = dec.forget(k);
    net.traffic
        .given_dropped
        .fetch_add(dropped as u64, Ordering::Relaxed);
    drop(enc);
    Ok(())
}

fn ordinal(n: u32) -> String {
    match n {
        1 => "first".into(),
        2 => "second".into(),
        3 => "third".into(),
        n => format!("{n}th"),
    }
}

enum Handled {
    Error(EngineError),
    Remote(EngineError),
}

/// What a message brought besides its frames' effects.
#[derive(Default)]
struct Got {
    /// Items (to be acknowledged).
    items: u64,
    /// An acknowledgement of items this node sent.
    acked: bool,
    /// The `Done` frames' runs of identities (the first, and how many
    /// after it), taken from the log together at the end of the message;
    /// and the records they take from it, dropped outside the lock.
    /// (Kept from message to message: buffers of thousands freed each
    /// time went back to the system and faulted their pages in again.)
    dones: Vec<(u64, u64)>,
    left: super::custody::Dead,
}

fn handle(
    host: &dyn Host,
    ctx: &mut Ctx,
    dec: &mut Decoder,
    from: Rank,
    r: &mut MessageReader,
    payload: FieldBytes,
    got: &mut Got,
) -> Result<(), Handled> {
    // The payload belongs to the message's one Bytes frame (if any).
    let mut payload = Some(payload);
    let rt = host.rt();
    let net = &rt.net;
    let proto = |e: ProtocolError| Handled::Error(EngineError::Distribution(e.into()));
    got.dones.clear();
    // Node 0: the `Fired` and `Fired keys` frames' tombstones not yet in
    // the log, as read (taken in under one lock at the message's end:
    // [`super::Net::retire`]; a message carries a few frames).
    let mut fired: smallvec::SmallVec<[super::wire::CellRun<'_>; 8]> = smallvec::SmallVec::new();
    // A `Parked` frame's cell and slot: the next Items frame holds its
    // record.
    let mut park: Option<(super::wire::CellId, u64)> = None;
    // The entry and arrivals of the last `Items` frame's connection: a
    // commit's records come in one frame each (its `Fired` frame comes
    // between two), mostly on one connection. (Valid for the message: an
    // entry, once bound, is never replaced; an `Open` clears it.)
    let mut last: Option<(super::ConnId, Arc<Entity>, super::Arrivals)> = None;
    while let Some(frame) = r
        .next_frame()
        .map_err(|error| proto(ProtocolError::Malformed { from, error }))?
    {
        match frame {
            FrameRef::Open {
                conn,
                template,
                back,
                start,
            } => {
                if template.index() >= rt.graph().nodes.len() {
                    return Err(proto(ProtocolError::UnknownTemplate { from, template }));
                }
                let next = ctx.entity(Kind::Remote(RemoteEntity::new(from, back)));
                let entry = instantiate(ctx, template, next, &start);
                ctx.start();
                lock(&net.inbound).insert(conn, entry);
                last = None;
                let g = rt.graph();
                let markers = net.receives_custody() && has_markers(g);
                net.opened(from, conn, g.replayable(template), markers);
            }
            FrameRef::Items { conn, .. } => {
                if let Some((cell, slot)) = park.take() {
                    while let Some(item) = r
                        .next_item(dec, from, &net.store, host.codecs())
                        .map_err(|error| proto(ProtocolError::Item { from, error }))?
                    {
                        net.parked_frame(from, cell.clone(), slot, item);
                    }
                    continue;
                }
                if last.as_ref().is_some_and(|(c, ..)| *c != conn) {
                    last = None;
                }
                let (_, to, arrivals) = match last {
                    Some(ref l) => l,
                    None => {
                        let to = lock(&net.inbound).get(&conn).cloned().ok_or_else(|| {
                            proto(ProtocolError::UnknownConnection { from, conn })
                        })?;
                        last.insert((conn, to, net.arrivals(from, conn)))
                    }
                };
                while let Some(mut item) = r
                    .next_item(dec, from, &net.store, host.codecs())
                    .map_err(|error| proto(ProtocolError::Item { from, error }))?
                {
                    got.items += 1;
                    net.arrived_on(*arrivals, &mut item);
                    ctx.send(to, item);
                }
            }
            FrameRef::Fetch { id } => {
                if let Some(s) = net
                    .store
                    .fetch(from, id)
                    .map_err(|e| proto(ProtocolError::FieldStore(e)))?
                {
                    net.push_store(s);
                }
            }
            FrameRef::Release { id, weight } => net
                .store
                .released(id, weight)
                .map_err(|e| proto(ProtocolError::FieldStore(e)))?,
            FrameRef::Bytes { id, codec, meta } => {
                let body = payload
                    .take()
                    .ok_or_else(|| proto(ProtocolError::TwoFieldValues { from }))?;
                let (wake, sends) = net
                    .store
                    .arrived(from, id, codec, meta, body, host.codecs())
                    .map_err(|e| proto(ProtocolError::FieldStore(e)))?;
                for e in wake {
                    ctx.send(&e, Item::Wake);
                }
                for s in sends {
                    net.push_store(s);
                }
            }
            FrameRef::Fail { message } => {
                return Err(Handled::Remote(EngineError::Node {
                    node: from,
                    message: message.to_string(),
                }));
            }
            FrameRef::Shutdown => host.shutdown(),
            FrameRef::Ack { count } => {
                if !net.acked(from, count) {
                    return Err(proto(ProtocolError::OverAcknowledged { from, count }));
                }
                got.acked = true;
            }
            FrameRef::Seq { next } => net.set_next(from, next),
            // Node 0 takes a message's tombstones into its log together
            // (before a parked record, which a tombstone takes out).
            FrameRef::Fired { cell } if net.me == Rank::ROOT => {
                fired.push(super::wire::CellRun::one(cell))
            }
            FrameRef::Fired { cell } => net.fired_frame(from, cell.id()),
            FrameRef::FiredKeys { cells } if net.me == Rank::ROOT => fired.push(cells),
            FrameRef::FiredKeys { cells } => {
                for cell in cells.cells() {
                    net.fired_frame(from, cell.id());
                }
            }
            FrameRef::Drain => net.drain_frame(from, ctx),
            FrameRef::Parked { cell, slot } => {
                net.fired_all(from, &fired);
                fired.clear();
                park = Some((cell, slot));
            }
            // A field given ahead of the record holding it: the record's
            // given value takes it (wire.rs, "Given fields").
            FrameRef::Given { codec, meta } => {
                let body = payload
                    .take()
                    .ok_or_else(|| proto(ProtocolError::TwoFieldValues { from }))?;
                let v = host.codecs().decode(codec, meta, body).map_err(|e| {
                    proto(ProtocolError::FieldStore(
                        super::fields::StoreError::Decode(e),
                    ))
                })?;
                dec.give(from, snet_core::Field::new(v));
            }
            // Taken from the log together, at the end of the message.
            FrameRef::Done { id, more } => got.dones.push((id, more)),
        }
    }
    if fired.is_empty() && got.dones.is_empty() {
        return Ok(());
    }
    if let Some(id) = net.retire(from, &fired, &got.dones, &mut got.left) {
        return Err(proto(ProtocolError::UnknownDone { from, id }));
    }
    Ok(())
}

/// Whether a program may send ordering markers between nodes: it has a
/// deterministic combinator (whose markers, and those of the feedback
/// loops inside one, travel with its records).
fn has_markers(g: &snet_core::Graph) -> bool {
    use snet_core::NodeKind;
    g.nodes.iter().any(|n| {
        matches!(
            n.kind,
            NodeKind::Parallel { det: true, .. }
                | NodeKind::Split { det: true, .. }
                | NodeKind::Star { det: true, .. }
                | NodeKind::DynPlace { det: true, .. }
        )
    })
}
