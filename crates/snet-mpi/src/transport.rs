//! [`MpiTransport`]: the managers' side of the MPI transport. `send`
//! queues a message for the communication thread ([`crate::comm`]) and
//! waits for window credit; `recv` takes what the thread received.

use std::collections::VecDeque;
use std::ffi::c_int;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Condvar, Mutex, MutexGuard};
use std::thread::{self, JoinHandle, Thread};
use std::time::{Duration, Instant};

use snet_transport::{Channel, Payload, Rank, Received, Transport, TransportError};

use crate::comm::comm_thread;
use crate::{MpiError, DRAIN, FINALIZE, WINDOW};

pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// A message waiting for the communication thread.
pub(crate) struct Outgoing {
    pub(crate) to: u32,
    pub(crate) tag: c_int,
    /// Payload length (8 bytes, little endian), then the header.
    pub(crate) head: Vec<u8>,
    pub(crate) payload: Payload,
}

#[derive(Default)]
pub(crate) struct OutState {
    pub(crate) queue: Vec<Outgoing>,
    /// Per node: messages sent and not yet acknowledged.
    pub(crate) unacked: Vec<usize>,
    /// Credit to return: (node, messages taken).
    pub(crate) acks: Vec<(u32, u64)>,
    pub(crate) failed: Option<TransportError>,
    pub(crate) closing: bool,
    /// The outbound queue is empty and every send completed (or was
    /// abandoned) after `closing`.
    pub(crate) drained: bool,
    /// `finish` was called: finalize MPI.
    pub(crate) finishing: bool,
}

#[derive(Default)]
pub(crate) struct InState {
    pub(crate) queue: VecDeque<Received>,
    /// Per node: messages taken since the last acknowledgement.
    pub(crate) taken: Vec<u64>,
    pub(crate) failed: Option<TransportError>,
    pub(crate) closed: bool,
}

pub(crate) struct Shared {
    pub(crate) out: Mutex<OutState>,
    pub(crate) out_cv: Condvar,
    pub(crate) inbox: Mutex<InState>,
    pub(crate) in_cv: Condvar,
    pub(crate) window: usize,
    pub(crate) comm: Mutex<Option<Thread>>,
}

impl Shared {
    pub(crate) fn wake_comm(&self) {
        if let Some(t) = &*lock(&self.comm) {
            t.unpark();
        }
    }

    pub(crate) fn fail(&self, e: TransportError) {
        lock(&self.out).failed.get_or_insert(e.clone());
        lock(&self.inbox).failed.get_or_insert(e);
        self.out_cv.notify_all();
        self.in_cv.notify_all();
    }
}

/// This process's endpoint of an MPI run.
pub struct MpiTransport {
    rank: u32,
    size: u32,
    shared: Arc<Shared>,
    thread: Mutex<Option<(JoinHandle<()>, mpsc::Receiver<()>)>>,
}

static STARTED: AtomicBool = AtomicBool::new(false);

impl MpiTransport {
    /// Initialises MPI (once per process) and starts the communication thread.
    pub fn start() -> Result<MpiTransport, TransportError> {
        MpiTransport::with_window(WINDOW)
    }

    /// As [`MpiTransport::start`], with another flow-control window (rounded
    /// up to a multiple of 4; tests use small ones).
    pub fn with_window(window: usize) -> Result<MpiTransport, TransportError> {
        if STARTED.swap(true, Ordering::SeqCst) {
            return Err(TransportError::backend(MpiError::StartedTwice));
        }
        let window = window.max(4).div_ceil(4) * 4;
        let shared = Arc::new(Shared {
            out: Mutex::new(OutState::default()),
            out_cv: Condvar::new(),
            inbox: Mutex::new(InState::default()),
            in_cv: Condvar::new(),
            window,
            comm: Mutex::new(None),
        });
        let (tx, rx) = mpsc::channel();
        let (done_tx, done) = mpsc::channel();
        let sh = shared.clone();
        let handle = thread::Builder::new()
            .name("snet-mpi".into())
            .spawn(move || {
                comm_thread(sh, tx);
                let _ = done_tx.send(());
            })
            .map_err(|e| TransportError::backend(MpiError::Thread(e)))?;
        let (rank, size) = match rx.recv() {
            Ok(Ok(x)) => x,
            Ok(Err(e)) => {
                let _ = handle.join();
                return Err(e);
            }
            Err(_) => {
                let _ = handle.join();
                return Err(TransportError::backend(MpiError::ThreadDied));
            }
        };
        *lock(&shared.comm) = Some(handle.thread().clone());
        {
            lock(&shared.out).unacked = vec![0; size as usize];
            lock(&shared.inbox).taken = vec![0; size as usize];
        }
        Ok(MpiTransport {
            rank,
            size,
            shared,
            thread: Mutex::new(Some((handle, done))),
        })
    }
}

impl Transport for MpiTransport {
    fn node(&self) -> Rank {
        Rank(self.rank)
    }

    fn nodes(&self) -> u32 {
        self.size
    }

    fn send_to_peer(
        &self,
        to: Rank,
        channel: Channel,
        header: &[u8],
        payload: Payload,
    ) -> Result<(), TransportError> {
        let to = to.0;
        let mut head = Vec::with_capacity(8 + header.len());
        head.extend_from_slice(&(payload.len() as u64).to_le_bytes());
        head.extend_from_slice(header);
        let mut out = lock(&self.shared.out);
        loop {
            if let Some(e) = &out.failed {
                return Err(e.clone());
            }
            if out.closing {
                return Err(TransportError::Closed);
            }
            if out.unacked[to as usize] < self.shared.window {
                break;
            }
            out = self
                .shared
                .out_cv
                .wait(out)
                .unwrap_or_else(|e| e.into_inner());
        }
        out.unacked[to as usize] += 1;
        out.queue.push(Outgoing {
            to,
            tag: channel as c_int,
            head,
            payload,
        });
        drop(out);
        self.shared.wake_comm();
        Ok(())
    }

    fn recv(&self, timeout: Duration) -> Result<Option<Received>, TransportError> {
        let deadline = Instant::now() + timeout;
        let mut inbox = lock(&self.shared.inbox);
        loop {
            if let Some(m) = inbox.queue.pop_front() {
                let step = (self.shared.window / 4) as u64;
                let taken = &mut inbox.taken[m.from.index()];
                *taken += 1;
                if *taken >= step {
                    let n = std::mem::take(taken);
                    drop(inbox);
                    lock(&self.shared.out).acks.push((m.from.0, n));
                    self.shared.wake_comm();
                }
                return Ok(Some(m));
            }
            if let Some(e) = &inbox.failed {
                return Err(e.clone());
            }
            if inbox.closed {
                return Err(TransportError::Closed);
            }
            let now = Instant::now();
            if now >= deadline {
                return Ok(None);
            }
            inbox = self
                .shared
                .in_cv
                .wait_timeout(inbox, deadline - now)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }

    /// Stops sending and receiving once what was sent is on its way (at
    /// most [`DRAIN`]); MPI stays up until [`MpiTransport::finish`], so a
    /// node can still report before the ranks finalize together.
    fn close(&self) {
        let mut out = lock(&self.shared.out);
        out.closing = true;
        lock(&self.shared.inbox).closed = true;
        self.shared.out_cv.notify_all();
        self.shared.in_cv.notify_all();
        self.shared.wake_comm();
        let deadline = Instant::now() + DRAIN + Duration::from_secs(1);
        while !out.drained && out.failed.is_none() && lock(&self.thread).is_some() {
            let now = Instant::now();
            if now >= deadline {
                break;
            }
            out = self
                .shared
                .out_cv
                .wait_timeout(out, (deadline - now).min(Duration::from_millis(50)))
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }

    fn buffered(&self, to: Rank) -> Option<usize> {
        lock(&self.shared.out).unacked.get(to.index()).copied()
    }

    fn window(&self) -> Option<usize> {
        Some(self.shared.window)
    }

    fn name(&self) -> &str {
        "mpi"
    }
}

impl MpiTransport {
    /// Closes (if not yet closed) and finalizes MPI, which waits for every
    /// rank to finish too. A rank that never gets there (hung, or gone
    /// without the launcher noticing) must not hang this one: after
    /// [`FINALIZE`] the process exits with status 1.
    pub fn finish(&self) {
        self.close();
        lock(&self.shared.out).finishing = true;
        self.shared.out_cv.notify_all();
        self.shared.wake_comm();
        let Some((handle, done)) = lock(&self.thread).take() else {
            return;
        };
        if done.recv_timeout(FINALIZE).is_err() {
            eprintln!(
                "error: node {}: MPI did not shut down within {} s (another node stopped responding); exiting",
                self.rank,
                FINALIZE.as_secs()
            );
            // SAFETY: ends the process at once; nothing else runs after it.
            unsafe { libc::_exit(1) };
        }
        let _ = handle.join();
    }
}

impl Drop for MpiTransport {
    fn drop(&mut self) {
        self.finish();
    }
}
