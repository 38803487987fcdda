//! The input and output managers of one node (see [`super`]).

use std::collections::BTreeMap;
use std::time::Duration;

use snet_core::{Codecs, NodeId};

use super::wire::{self, Decoder, Encoder, Reader, WireError};
use super::{Channel, FieldBytes, Out, Payload, Received, Settle, Transport, TransportError};
use crate::entity::{Entity, Item};
use crate::instantiate::instantiate;
use crate::remote::RemoteEntity;
use crate::runtime::{Ctx, Kind, Runtime};
use crate::sync::{lock, Arc, Ordering};
use crate::weight::Dyadic;
use crate::{DistributionError, EngineError};

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
}

/// Sends everything workers and the input manager queue, until stopped.
pub(crate) fn output_manager(host: &dyn Host, t: &dyn Transport) {
    let net = &host.rt().net;
    let me = net.me;
    let mut enc = Encoder::new(me, net.nodes, net.inline_limit);
    loop {
        let batch: Vec<Out> = {
            let (m, cv) = &*net.state;
            let mut st = lock(m);
            while st.out.is_empty() && !st.stop {
                st = cv.wait(st).unwrap_or_else(|e| e.into_inner());
            }
            if st.out.is_empty() {
                return;
            }
            st.busy += 1;
            let n = st.out.len().min(4096);
            st.out.drain(..n).collect()
        };
        if let Err(e) = send_batch(host, t, &mut enc, batch) {
            host.fail(e, false);
        }
        net.end();
        host.settle();
    }
}

/// A message being built for one node and channel.
#[derive(Default)]
struct Building {
    frames: Vec<u8>,
    credit: Dyadic,
    /// Holds a frame other than credit being returned (needs a share of credit).
    needs_credit: bool,
    /// Open items frame: (connection, count position, count).
    items: Option<(super::ConnId, usize, u64)>,
}

fn send_batch(
    host: &dyn Host,
    t: &dyn Transport,
    enc: &mut Encoder,
    batch: Vec<Out>,
) -> Result<(), EngineError> {
    let net = &host.rt().net;
    let me = net.me;
    let mut msgs: BTreeMap<(u32, u8), Building> = BTreeMap::new();
    let mut payloads: Vec<(u32, u64, Arc<dyn snet_core::FieldData>)> = Vec::new();
    let peers = (0..net.nodes).filter(|&n| n != me);
    for out in batch {
        let ch = out.channel() as u8;
        match out {
            Out::Bytes { to, id, value } => payloads.push((to, id, value)),
            Out::Fail(m) => {
                for p in peers.clone() {
                    let b = msgs.entry((p, ch)).or_default();
                    b.items = None;
                    b.frames.push(wire::FAIL);
                    wire::put_s(&mut b.frames, &m);
                }
            }
            Out::Shutdown => {
                for p in peers.clone() {
                    // No credit: the run is over, nothing may answer.
                    let b = msgs.entry((p, ch)).or_default();
                    b.items = None;
                    b.frames.push(wire::SHUTDOWN);
                }
            }
            Out::Credit(c) => msgs.entry((0, ch)).or_default().credit.add_all(&c),
            Out::Open {
                to,
                conn,
                template,
                back,
                start,
            } => {
                let b = msgs.entry((to, ch)).or_default();
                b.items = None;
                b.needs_credit = true;
                b.frames.push(wire::OPEN);
                wire::put_conn(&mut b.frames, conn);
                wire::put_u(&mut b.frames, u64::from(template.0));
                wire::put_conn(&mut b.frames, back);
                wire::put_stamps(&mut b.frames, &start);
            }
            Out::Item { to, conn, item } => {
                let b = msgs.entry((to, ch)).or_default();
                b.needs_credit = true;
                // Consecutive items of one connection share a frame; the
                // count is patched in place (a fixed-width varint).
                let same = matches!(b.items, Some((c, _, _)) if c == conn);
                if !same {
                    b.frames.push(wire::ITEMS);
                    wire::put_conn(&mut b.frames, conn);
                    let at = b.frames.len();
                    b.frames.extend_from_slice(&[0x80, 0x80, 0x80, 0x00]);
                    b.items = Some((conn, at, 0));
                }
                enc.item(to, &item, &net.store, &mut b.frames)
                    .map_err(|what| {
                        EngineError::Distribution(DistributionError::Field { node: me, what })
                    })?;
                if let Some((c, at, n)) = b.items {
                    let v = n + 1;
                    b.frames[at] = 0x80 | (v & 0x7f) as u8;
                    b.frames[at + 1] = 0x80 | ((v >> 7) & 0x7f) as u8;
                    b.frames[at + 2] = 0x80 | ((v >> 14) & 0x7f) as u8;
                    b.frames[at + 3] = ((v >> 21) & 0x7f) as u8;
                    // Four varint bytes hold 28 bits; start a new frame long before.
                    b.items = (v < 1 << 27).then_some((c, at, v));
                }
            }
            Out::Fetch { to, id } => {
                let b = msgs.entry((to, ch)).or_default();
                b.items = None;
                b.needs_credit = true;
                b.frames.push(wire::FETCH);
                wire::put_u(&mut b.frames, id);
            }
            Out::Release { to, id, weight } => {
                let b = msgs.entry((to, ch)).or_default();
                b.items = None;
                b.needs_credit = true;
                b.frames.push(wire::RELEASE);
                wire::put_u(&mut b.frames, id);
                wire::put_u(&mut b.frames, weight);
            }
        }
    }
    let mut header = Vec::new();
    let mut send =
        |to: u32, ch: Channel, mut credit: Dyadic, share: bool, frames: &[u8], payload: Payload| {
            if share {
                if let Some(e) = lock(&net.state.0).pool.split_off() {
                    credit.add(e);
                }
            }
            header.clear();
            wire::put_credit(&mut header, &credit);
            header.extend_from_slice(frames);
            net.traffic.messages_sent.fetch_add(1, Ordering::Relaxed);
            net.traffic
                .bytes_sent
                .fetch_add((header.len() + payload.len()) as u64, Ordering::Relaxed);
            t.send(to, ch, &header, payload).map_err(|error| {
                EngineError::Distribution(DistributionError::Send {
                    from: me,
                    to,
                    error,
                })
            })
        };
    // Every message is attempted even if one fails (a failure notice must
    // reach the nodes still running when another has gone); the first
    // error is reported.
    let mut first = Ok(());
    for ((to, ch), b) in msgs {
        // A message that only returns credit takes no new share.
        let ch = Channel::from_raw(ch).expect("channel");
        let r = send(to, ch, b.credit, b.needs_credit, &b.frames, Payload::none());
        if first.is_ok() {
            first = r;
        }
    }
    for (to, id, value) in payloads {
        // The meta part goes in the header; the body is sent from the
        // value's own memory (the payload keeps the value until sent).
        let mut frames = vec![wire::BYTES];
        wire::put_u(&mut frames, id);
        wire::put_s(&mut frames, value.codec());
        let mut meta = Vec::new();
        value.encode_meta(&mut meta);
        wire::put_bytes(&mut frames, &meta);
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
    loop {
        if host.over() {
            return;
        }
        let msg = match t.recv(Duration::from_millis(20)) {
            Ok(Some(m)) => m,
            Ok(None) => continue,
            Err(TransportError::Closed) => return,
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
        let mut r = Reader::new(&header);
        let credit = match r.credit() {
            Ok(c) => c,
            Err(e) => {
                host.fail(
                    EngineError::Distribution(DistributionError::Protocol(e.0)),
                    false,
                );
                return;
            }
        };
        net.begin(&credit);
        let mut ctx = Ctx::new(rt);
        let mut res = handle(host, &mut ctx, &mut dec, from, &mut r, payload);
        if let (Ok(()), Some(e)) = (&res, ctx.take_error()) {
            res = Err(Handled::Error(e));
        }
        ctx.flush_queued();
        let ready = std::mem::take(&mut ctx.ready);
        if !ready.is_empty() {
            host.deliver(ready);
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

enum Handled {
    Error(EngineError),
    Remote(EngineError),
}

impl From<WireError> for Handled {
    fn from(e: WireError) -> Handled {
        Handled::Error(EngineError::Distribution(DistributionError::Protocol(e.0)))
    }
}

fn handle(
    host: &dyn Host,
    ctx: &mut Ctx,
    dec: &mut Decoder,
    from: u32,
    r: &mut Reader,
    payload: FieldBytes,
) -> Result<(), Handled> {
    // The payload belongs to the message's one Bytes frame (if any).
    let mut payload = Some(payload);
    let rt = host.rt();
    let net = &rt.net;
    let proto =
        |what: String| Handled::Error(EngineError::Distribution(DistributionError::Protocol(what)));
    while !r.done() {
        match r.byte()? {
            wire::OPEN => {
                let conn = r.conn()?;
                let template = NodeId(r.u()? as u32);
                let back = r.conn()?;
                let start = r.stamps()?;
                if template.index() >= rt.graph().nodes.len() {
                    return Err(proto(format!(
                        "node {from} opened unknown template {template}"
                    )));
                }
                let next = ctx.entity(Kind::Remote(RemoteEntity::new(from, back)));
                let entry = instantiate(ctx, template, next, &start);
                ctx.start();
                lock(&net.inbound).insert(conn, entry);
            }
            wire::ITEMS => {
                let conn = r.conn()?;
                let n = r.u()?;
                let to = lock(&net.inbound).get(&conn).cloned().ok_or_else(|| {
                    proto(format!(
                        "items for unknown connection {conn:?} from node {from}"
                    ))
                })?;
                for _ in 0..n {
                    let item = dec.item(from, r, &net.store, host.codecs())?;
                    ctx.send(&to, item);
                }
            }
            wire::FETCH => {
                let id = r.u()?;
                if let Some(s) = net
                    .store
                    .fetch(from, id)
                    .map_err(|e| proto(e.to_string()))?
                {
                    net.push_store(s);
                }
            }
            wire::RELEASE => {
                let id = r.u()?;
                let w = r.u()?;
                net.store.released(id, w);
            }
            wire::BYTES => {
                let id = r.u()?;
                let codec = r.s()?;
                let meta = r.bytes()?;
                let body = payload.take().ok_or_else(|| {
                    proto(format!("two field values in one message from node {from}"))
                })?;
                let (wake, sends) = net
                    .store
                    .arrived(from, id, codec, meta, body, host.codecs())
                    .map_err(|e| proto(e.to_string()))?;
                for e in wake {
                    ctx.send(&e, Item::Wake);
                }
                for s in sends {
                    net.push_store(s);
                }
            }
            wire::FAIL => {
                let message = r.s()?.to_string();
                return Err(Handled::Remote(EngineError::Node {
                    node: from,
                    message,
                }));
            }
            wire::SHUTDOWN => host.shutdown(),
            k => return Err(proto(format!("unknown frame kind {k} from node {from}"))),
        }
    }
    Ok(())
}
