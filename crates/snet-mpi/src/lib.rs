//! The MPI transport: Distributed S-Net across processes and machines.
//!
//! A run started by `mpirun -np N` is N nodes, node = rank in
//! `MPI_COMM_WORLD`. Each process makes one [`MpiTransport`]; the
//! distribution layer's output manager calls [`Transport::send`], its input
//! manager [`Transport::recv`], and neither ever calls MPI.
//!
//! # Threads
//! One *communication thread* per process owns MPI: it calls
//! `MPI_Init_thread` (level `MPI_THREAD_FUNNELED`: only this thread ever
//! calls MPI), every send, probe and receive, and `MPI_Finalize`. The
//! managers talk to it through two queues: `send` appends to the outbound
//! queue and wakes the thread; the thread appends what it receives to the
//! inbound queue, which `recv` drains. The thread never blocks in MPI: it
//! posts nonblocking sends, tests them, and polls with a matched probe
//! (`MPI_Improbe`); when nothing moves it backs off from yielding to short
//! sleeps (at most [`MAX_NAP`], `SNET_MPI_NAP_US` to change), and a local
//! send wakes it at once.
//!
//! # Messages and tags
//! A transport message is one MPI message with tag = its [`Channel`]
//! (0 control, 1 records, 2 field bytes) holding an 8-byte payload length
//! and the header, followed, if the payload is not empty, by the payload as
//! messages of at most [`CHUNK`] bytes with tag [`TAG_PAYLOAD`]. Payloads
//! are sent straight from the shared [`Payload`] (a field's own memory, kept
//! alive until `MPI_Test` says the send is done) and received straight into
//! the [`FieldBytes`] the field then keeps (`MPI_Imrecv` on the matched
//! message): no pack or unpack copy (thesis ch. 7.3's complaint about the
//! old MPI layer). Because one thread sends in order and MPI does not let
//! messages between two ranks overtake each other, a payload chunk always
//! belongs to the last header from the same rank.
//!
//! # Flow control
//! A window of [`WINDOW`] messages per pair of nodes: a sender blocks in
//! `send` when that many of its messages are not yet taken by the
//! receiver's input manager. The receiver's communication thread returns
//! credit with a small message, tag [`TAG_ACK`], every quarter window.
//! Acknowledgements are never held back, and `recv` never waits for sends,
//! so full windows cannot deadlock the managers.
//!
//! # Faults
//! Errors are returned (`MPI_ERRORS_RETURN`), not fatal: a failed call
//! involving a peer is [`TransportError::PeerGone`] for it, others are
//! [`TransportError::Failed`]; both reach `send` and `recv`. A rank killed
//! outright is seen by `mpirun`, which ends the job and names the rank.
//! `close` drains the outbound queue for at most [`DRAIN`];
//! [`MpiTransport::finish`] (or dropping the transport) finalizes, which
//! waits for every rank, so a node reports its errors before the ranks
//! finalize together and `mpirun` cannot cut the report short.

use std::collections::VecDeque;
use std::ffi::{c_char, c_int, c_void};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Condvar, Mutex, MutexGuard};
use std::thread::{self, JoinHandle, Thread};
use std::time::{Duration, Instant};

use snet_transport::{
    BackendError, Channel, FieldBytes, Gone, Header, Payload, Rank, Received, Transport,
    TransportError,
};

mod ffi {
    use super::*;
    extern "C" {
        pub fn snet_mpi_initialized() -> c_int;
        pub fn snet_mpi_init(rank: *mut c_int, size: *mut c_int, provided: *mut c_int) -> c_int;
        pub fn snet_mpi_thread_funneled() -> c_int;
        pub fn snet_mpi_finalize() -> c_int;
        pub fn snet_mpi_error_string(code: c_int, buf: *mut c_char, cap: usize);
        pub fn snet_mpi_isend(
            buf: *const c_void,
            len: usize,
            dest: c_int,
            tag: c_int,
            req: *mut *mut c_void,
        ) -> c_int;
        pub fn snet_mpi_test(req: *mut c_void, done: *mut c_int) -> c_int;
        pub fn snet_mpi_cancel(req: *mut c_void);
        pub fn snet_mpi_improbe(
            found: *mut c_int,
            source: *mut c_int,
            tag: *mut c_int,
            len: *mut usize,
            msg: *mut *mut c_void,
        ) -> c_int;
        pub fn snet_mpi_mrecv(buf: *mut c_void, len: usize, msg: *mut c_void) -> c_int;
        pub fn snet_mpi_imrecv(
            buf: *mut c_void,
            len: usize,
            msg: *mut c_void,
            req: *mut *mut c_void,
        ) -> c_int;
    }
}

/// The linker flags of the MPI library this crate was built against (for
/// `snet build`, which links executables with the same library).
pub const LINK_ARGS: &str = env!("SNET_MPI_LINK_ARGS");

/// Messages one node may have sent to another and not yet had taken there.
pub const WINDOW: usize = 256;
/// Largest MPI message a payload is cut into (MPI counts are `int`).
/// `SNET_MPI_CHUNK` (bytes) makes it smaller, so that tests can cut
/// payloads of a few MiB into many chunks.
pub const CHUNK: usize = 1 << 30;
/// Tag of payload chunks.
pub const TAG_PAYLOAD: c_int = 3;
/// Tag of flow-control credit (a u64 count of messages taken).
pub const TAG_ACK: c_int = 4;
/// Longest sleep of an idle communication thread.
pub const MAX_NAP: Duration = Duration::from_micros(500);
/// Longest `close` waits for the outbound queue to drain.
pub const DRAIN: Duration = Duration::from_secs(10);
/// Longest `close` waits for `MPI_Finalize` (which waits for every rank)
/// after the drain, before it gives up and ends the process.
pub const FINALIZE: Duration = Duration::from_secs(20);

/// Whether an MPI launcher (`mpirun`, `mpiexec`, `srun`) started this
/// process: Open MPI, PMIx and PMI (MPICH, Slurm) set these variables.
pub fn launched() -> bool {
    ["OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_SIZE", "PMI_RANK"]
        .iter()
        .any(|v| std::env::var_os(v).is_some())
}

/// What MPI says about error `code` (`MPI_Error_string`; on the
/// communication thread only).
fn mpi_error(code: c_int) -> MpiCallError {
    let mut buf = [0 as c_char; 512];
    // SAFETY: the shim writes at most buf.len() bytes, NUL-terminated.
    unsafe { ffi::snet_mpi_error_string(code, buf.as_mut_ptr(), buf.len()) };
    // SAFETY: NUL-terminated by the shim.
    let s = unsafe { std::ffi::CStr::from_ptr(buf.as_ptr()) };
    MpiCallError {
        code,
        text: s.to_string_lossy().into_owned(),
    }
}

/// A failed MPI call: its error code and MPI's own text for it (taken
/// when the call failed: only the communication thread may ask MPI).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MpiCallError {
    pub code: c_int,
    pub text: String,
}

impl std::fmt::Display for MpiCallError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "MPI error {}: {}", self.code, self.text)
    }
}

impl std::error::Error for MpiCallError {}

/// The MPI transport's own failures ([`TransportError::Failed`]).
#[derive(Debug)]
pub enum MpiError {
    /// [`MpiTransport::start`] was called before in this process.
    StartedTwice,
    /// The communication thread could not be started.
    Thread(std::io::Error),
    /// The communication thread ended before it said whether MPI started.
    ThreadDied,
    /// Something else in this process initialised MPI.
    InitialisedElsewhere,
    /// `MPI_Init_thread` failed.
    Init(MpiCallError),
    /// The library does not provide `MPI_THREAD_FUNNELED`.
    NotFunneled,
    /// An MPI call failed.
    Call(MpiCallError),
    /// Node `from` sent a message this node cannot read (`what`).
    Malformed { from: u32, what: &'static str },
}

impl std::fmt::Display for MpiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            MpiError::StartedTwice => f.write_str("MPI can be started only once in a process"),
            MpiError::Thread(e) => write!(f, "cannot start the MPI thread: {e}"),
            MpiError::ThreadDied => f.write_str("the MPI thread died"),
            MpiError::InitialisedElsewhere => {
                f.write_str("MPI was initialised by someone else in this process")
            }
            MpiError::Init(e) => write!(f, "MPI_Init_thread failed: {e}"),
            MpiError::NotFunneled => {
                f.write_str("this MPI library does not support MPI_THREAD_FUNNELED")
            }
            MpiError::Call(e) => write!(f, "{e}"),
            MpiError::Malformed { from, what } => {
                write!(f, "node {from} sent a malformed message: {what}")
            }
        }
    }
}

impl std::error::Error for MpiError {}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// A message waiting for the communication thread.
struct Outgoing {
    to: u32,
    tag: c_int,
    /// Payload length (8 bytes, little endian), then the header.
    head: Vec<u8>,
    payload: Payload,
}

#[derive(Default)]
struct OutState {
    queue: Vec<Outgoing>,
    /// Per node: messages sent and not yet acknowledged.
    unacked: Vec<usize>,
    /// Credit to return: (node, messages taken).
    acks: Vec<(u32, u64)>,
    failed: Option<TransportError>,
    closing: bool,
    /// The outbound queue is empty and every send completed (or was
    /// abandoned) after `closing`.
    drained: bool,
    /// `finish` was called: finalize MPI.
    finishing: bool,
}

#[derive(Default)]
struct InState {
    queue: VecDeque<Received>,
    /// Per node: messages taken since the last acknowledgement.
    taken: Vec<u64>,
    failed: Option<TransportError>,
    closed: bool,
}

struct Shared {
    out: Mutex<OutState>,
    out_cv: Condvar,
    inbox: Mutex<InState>,
    in_cv: Condvar,
    window: usize,
    comm: Mutex<Option<Thread>>,
}

impl Shared {
    fn wake_comm(&self) {
        if let Some(t) = &*lock(&self.comm) {
            t.unpark();
        }
    }

    fn fail(&self, e: TransportError) {
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

// ---------------------------------------------------------------------------
// The communication thread

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

fn comm_thread(shared: Arc<Shared>, started: mpsc::Sender<Result<(u32, u32), TransportError>>) {
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
