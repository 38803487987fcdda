//! The communication thread: the one thread of a process that calls MPI
//! (`MPI_THREAD_FUNNELED`). It posts the queued sends, tests them, probes
//! for arrivals (`MPI_Improbe`) and receives payloads straight into field
//! memory, returns flow-control credit, and backs off when nothing moves.

use std::collections::VecDeque;
use std::ffi::{c_int, c_void};
use std::sync::{mpsc, Arc};
use std::thread;
use std::time::{Duration, Instant};

use snet_transport::{
    BackendError, Channel, FieldBytes, Gone, Header, Payload, Rank, Received, TransportError,
};

use crate::error::mpi_error;
use crate::ffi;
use crate::transport::{lock, Shared};
use crate::{MpiError, CHUNK, DRAIN, MAX_NAP, TAG_ACK, TAG_PAYLOAD};

/// What keeps a posted send's bytes alive until MPI is done with them
/// (held, never read).
#[allow(dead_code)]
enum Keep {
    Head(Vec<u8>),
    Payload(Payload),
    Ack(Box<u64>),
}

struct PostedSend {
    req: *mut c_void,
    to: u32,
    _keep: Keep,
}

/// A message from one node whose payload is still arriving.
struct Arriving {
    channel: Channel,
    header: Vec<u8>,
    payload: FieldBytes,
    /// Bytes of the payload whose receive is posted.
    posted: usize,
    reqs: Vec<*mut c_void>,
}

impl Arriving {
    fn complete(&self) -> bool {
        self.posted == self.payload.len() && self.reqs.is_empty()
    }
}

fn check(rc: c_int, peer: Option<u32>) -> Result<(), TransportError> {
    if rc == 0 {
        return Ok(());
    }
    Err(match peer {
        Some(node) => TransportError::PeerGone {
            node: Rank(node),
            why: Gone::Backend(BackendError::new(MpiError::Call(mpi_error(rc)))),
        },
        None => TransportError::backend(MpiError::Call(mpi_error(rc))),
    })
}

fn isend(buf: &[u8], to: u32, tag: c_int) -> Result<*mut c_void, TransportError> {
    let mut req = std::ptr::null_mut();
    // SAFETY: buf stays alive (in the PostedSend's Keep) until the request completes.
    let rc =
        unsafe { ffi::snet_mpi_isend(buf.as_ptr().cast(), buf.len(), to as c_int, tag, &mut req) };
    check(rc, Some(to))?;
    Ok(req)
}

/// Tests a request; true once it completed (and was freed).
fn test(req: *mut c_void, peer: Option<u32>) -> Result<bool, TransportError> {
    let mut done = 0;
    // SAFETY: req came from isend/imrecv and has not completed yet.
    let rc = unsafe { ffi::snet_mpi_test(req, &mut done) };
    check(rc, peer)?;
    Ok(done != 0)
}

struct Comm {
    shared: Arc<Shared>,
    size: usize,
    /// Largest payload chunk ([`CHUNK`], or less for tests).
    chunk: usize,
    sends: Vec<PostedSend>,
    arriving: Vec<VecDeque<Arriving>>,
}

pub(crate) fn comm_thread(
    shared: Arc<Shared>,
    started: mpsc::Sender<Result<(u32, u32), TransportError>>,
) {
    let (mut rank, mut size, mut provided) = (0, 0, 0);
    // SAFETY: plain out-parameters; this thread is MPI's only caller.
    let rc = unsafe {
        if ffi::snet_mpi_initialized() != 0 {
            let _ = started.send(Err(TransportError::backend(MpiError::InitialisedElsewhere)));
            return;
        }
        ffi::snet_mpi_init(&mut rank, &mut size, &mut provided)
    };
    if rc != 0 {
        let _ = started.send(Err(TransportError::backend(MpiError::Init(mpi_error(rc)))));
        return;
    }
    // SAFETY: a constant.
    if provided < unsafe { ffi::snet_mpi_thread_funneled() } {
        let _ = started.send(Err(TransportError::backend(MpiError::NotFunneled)));
        return;
    }
    let _ = started.send(Ok((rank as u32, size as u32)));
    let mut c = Comm {
        shared: shared.clone(),
        size: size as usize,
        chunk: std::env::var("SNET_MPI_CHUNK")
            .ok()
            .and_then(|s| s.parse().ok())
            .map_or(CHUNK, |c: usize| c.clamp(1, CHUNK)),
        sends: Vec::new(),
        arriving: (0..size).map(|_| VecDeque::new()).collect(),
    };
    let nap_max = std::env::var("SNET_MPI_NAP_US")
        .ok()
        .and_then(|s| s.parse().ok())
        .map_or(MAX_NAP, Duration::from_micros);
    let mut idle = 0u32;
    let mut drain_deadline = None;
    loop {
        let step = c.step();
        match step {
            Ok(moved) => {
                if moved {
                    idle = 0;
                } else {
                    idle = idle.saturating_add(1);
                }
            }
            Err(e) => {
                // A failed peer's requests are left unfinished.
                shared.fail(e);
                c.abandon();
                break;
            }
        }
        let closing = lock(&shared.out).closing;
        if closing {
            let deadline = *drain_deadline.get_or_insert_with(|| Instant::now() + DRAIN);
            if (c.sends.is_empty() && lock(&shared.out).queue.is_empty())
                || Instant::now() > deadline
            {
                c.abandon();
                break;
            }
        }
        if idle > 0 {
            if idle < 100 {
                thread::yield_now();
            } else {
                let nap = Duration::from_micros(5u64 << ((idle - 100) / 20).min(10));
                thread::park_timeout(nap.min(nap_max));
            }
        }
    }
    // Drained (or failed): wait for `finish`, then finalize with the others.
    let mut out = lock(&shared.out);
    out.drained = true;
    shared.out_cv.notify_all();
    while !out.finishing {
        out = shared
            .out_cv
            .wait_timeout(out, Duration::from_millis(100))
            .unwrap_or_else(|e| e.into_inner())
            .0;
    }
    drop(out);
    // SAFETY: this thread initialised MPI; nothing calls it afterwards.
    unsafe { ffi::snet_mpi_finalize() };
}

impl Comm {
    /// One round: post queued sends and credit, complete sends, receive.
    /// True if anything moved.
    fn step(&mut self) -> Result<bool, TransportError> {
        let mut moved = false;
        let (queue, acks) = {
            let mut out = lock(&self.shared.out);
            (
                std::mem::take(&mut out.queue),
                std::mem::take(&mut out.acks),
            )
        };
        for m in queue {
            moved = true;
            let req = isend(&m.head, m.to, m.tag)?;
            self.sends.push(PostedSend {
                req,
                to: m.to,
                _keep: Keep::Head(m.head),
            });
            let bytes = m.payload.bytes();
            for chunk in bytes.chunks(self.chunk) {
                let req = isend(chunk, m.to, TAG_PAYLOAD)?;
                self.sends.push(PostedSend {
                    req,
                    to: m.to,
                    _keep: Keep::Payload(m.payload.clone()),
                });
            }
        }
        for (to, n) in acks {
            moved = true;
            let n = Box::new(n);
            // SAFETY: the box lives in the PostedSend until the send completes.
            let bytes = unsafe { std::slice::from_raw_parts((&*n as *const u64).cast::<u8>(), 8) };
            let req = isend(bytes, to, TAG_ACK)?;
            self.sends.push(PostedSend {
                req,
                to,
                _keep: Keep::Ack(n),
            });
        }
        let mut i = 0;
        while i < self.sends.len() {
            let s = &self.sends[i];
            if test(s.req, Some(s.to))? {
                self.sends.swap_remove(i);
                moved = true;
            } else {
                i += 1;
            }
        }
        while self.probe()? {
            moved = true;
        }
        for from in 0..self.size {
            if self.arriving[from].is_empty() {
                continue;
            }
            let mut delivered = Vec::new();
            let q = &mut self.arriving[from];
            if let Some(a) = q.front_mut() {
                let mut j = 0;
                while j < a.reqs.len() {
                    if test(a.reqs[j], Some(from as u32))? {
                        a.reqs.swap_remove(j);
                    } else {
                        j += 1;
                    }
                }
            }
            while q.front().is_some_and(Arriving::complete) {
                let a = q.pop_front().expect("front");
                delivered.push(Received {
                    from: Rank(from as u32),
                    channel: a.channel,
                    header: Header::from_vec(a.header),
                    payload: a.payload,
                });
            }
            if !delivered.is_empty() {
                moved = true;
                self.deliver(delivered);
            }
        }
        Ok(moved)
    }

    fn deliver(&self, msgs: Vec<Received>) {
        lock(&self.shared.inbox).queue.extend(msgs);
        self.shared.in_cv.notify_all();
    }

    /// Takes one message if there is one; true if it did.
    fn probe(&mut self) -> Result<bool, TransportError> {
        let (mut found, mut source, mut tag, mut len) = (0, 0, 0, 0usize);
        let mut msg = std::ptr::null_mut();
        // SAFETY: out-parameters only.
        let rc =
            unsafe { ffi::snet_mpi_improbe(&mut found, &mut source, &mut tag, &mut len, &mut msg) };
        check(rc, None)?;
        if found == 0 {
            return Ok(false);
        }
        let from = source as u32;
        let bad = |what: &'static str| TransportError::backend(MpiError::Malformed { from, what });
        if tag == TAG_PAYLOAD {
            let a = self.arriving[from as usize]
                .back_mut()
                .filter(|a| a.posted < a.payload.len())
                .ok_or_else(|| bad("payload without a header"))?;
            if len > a.payload.len() - a.posted {
                return Err(bad("payload longer than announced"));
            }
            let mut req = std::ptr::null_mut();
            // SAFETY: the range lies inside the FieldBytes allocation, which
            // stays put (it is on the heap) until the request completes.
            let rc = unsafe {
                ffi::snet_mpi_imrecv(
                    a.payload.as_mut_ptr().add(a.posted).cast(),
                    len,
                    msg,
                    &mut req,
                )
            };
            check(rc, Some(from))?;
            a.posted += len;
            a.reqs.push(req);
            return Ok(true);
        }
        let mut buf = vec![0u8; len];
        // SAFETY: buf holds len bytes; msg is the matched message.
        let rc = unsafe { ffi::snet_mpi_mrecv(buf.as_mut_ptr().cast(), len, msg) };
        check(rc, Some(from))?;
        if tag == TAG_ACK {
            let n = u64::from_le_bytes(
                buf.get(..8)
                    .and_then(|b| b.try_into().ok())
                    .ok_or_else(|| bad("short credit"))?,
            );
            let mut out = lock(&self.shared.out);
            let u = &mut out.unacked[from as usize];
            *u = u.saturating_sub(n as usize);
            drop(out);
            self.shared.out_cv.notify_all();
            return Ok(true);
        }
        let channel = u8::try_from(tag)
            .ok()
            .and_then(Channel::from_raw)
            .ok_or_else(|| bad("unknown tag"))?;
        if buf.len() < 8 {
            return Err(bad("short header"));
        }
        let plen = u64::from_le_bytes(buf[..8].try_into().expect("8 bytes"));
        let plen = usize::try_from(plen).map_err(|_| bad("payload too large"))?;
        buf.drain(..8);
        let a = Arriving {
            channel,
            header: buf,
            payload: FieldBytes::zeroed(plen),
            posted: 0,
            reqs: Vec::new(),
        };
        let q = &mut self.arriving[from as usize];
        if q.is_empty() && a.complete() {
            self.deliver(vec![Received {
                from: Rank(from),
                channel: a.channel,
                header: Header::from_vec(a.header),
                payload: a.payload,
            }]);
        } else {
            q.push_back(a);
        }
        Ok(true)
    }

    /// Gives up on unfinished requests (a failure, or a drain that timed out).
    fn abandon(&mut self) {
        for s in self.sends.drain(..) {
            // SAFETY: an unfinished request from isend; its bytes stay alive
            // until after the cancel (the Keep drops after this call).
            unsafe { ffi::snet_mpi_cancel(s.req) };
        }
        for q in &mut self.arriving {
            for a in q.drain(..) {
                for r in &a.reqs {
                    // SAFETY: unfinished receive requests into a.payload.
                    unsafe { ffi::snet_mpi_cancel(*r) };
                }
                if !a.reqs.is_empty() {
                    // MPI may still write into the buffer: never free it.
                    std::mem::forget(a.payload);
                }
            }
        }
    }
}
