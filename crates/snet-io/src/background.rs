//! An output that writes on a thread of its own, soon after bytes arrive.
//!
//! The engine formats output records on a worker; the `write` system calls
//! (for a file, copying every byte into the page cache, which costs about
//! as much as formatting it) then run beside the workers instead of on
//! them. A fast stream is written in large chunks; a slow one (a record a
//! second through a pipe) still reaches its reader within [`MAX_DELAY`].
//!
//! # Protocol
//!
//! * **The ring.** Bytes pass through a single-producer single-consumer
//!   byte ring ([`rtrb`]) of [`RING`] bytes: the producer is whoever holds
//!   the [`BackgroundWriter`] (`&mut`; in the engine, the worker holding the
//!   output entity's licence, whose hand-over orders successive holders),
//!   the consumer is the writer thread. Appending costs a copy and two
//!   plain atomic accesses: no lock, no fence.
//! * **When the thread writes.** It writes everything the ring holds, in
//!   order, once (a) [`CHUNK`] bytes or more wait, (b) [`MAX_DELAY`]`/2`
//!   has passed since it first saw bytes waiting, (c) a flush was asked for
//!   ([`Write::flush`], or [`FlushSoon::flush_soon`], which the engine calls
//!   when the node has nothing left to do), or (d) the writer is dropped.
//!   After (b)-(d) it also flushes the inner writer, so a pipe or a
//!   terminal sees the bytes at once.
//! * **Wake-ups.** The producer unparks the thread when its append found
//!   the ring empty or made the waiting bytes cross [`CHUNK`]. The
//!   producer's view of the ring can be stale (it may think bytes still
//!   wait that the thread just took), so such a wake-up can be missed; the
//!   thread therefore never sleeps longer than [`MAX_DELAY`]`/2`. Bytes are
//!   seen at most `MAX_DELAY/2` after they were appended and written at
//!   most `MAX_DELAY/2` after that: the bound holds without a fence per
//!   write. (An idle run's thread wakes 40 times a second to look; it does
//!   nothing else.)
//! * **Back-pressure.** A producer that finds the ring full waits (on a
//!   condition variable, rechecking every millisecond) until the thread
//!   has written some: memory stays bounded by [`RING`].
//! * **`flush`** waits until the thread has written and flushed everything
//!   appended before it: after `Ok`, all bytes so far reached the inner
//!   writer.
//! * **Errors.** The inner writer's first error is kept; every later
//!   `write` and `flush` returns it (same kind and message). The thread
//!   keeps emptying the ring (discarding) so that no producer waits for
//!   ever.

use std::io::{self, Write};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::thread::{JoinHandle, Thread};
use std::time::{Duration, Instant};

/// Waiting bytes that make the thread write at once.
pub const CHUNK: usize = 1 << 16;
/// Bytes the ring holds: the most that waits for the thread.
pub const RING: usize = 4 * CHUNK;
/// The longest a byte waits between being appended and being written
/// (give or take the scheduler's latency).
pub const MAX_DELAY: Duration = Duration::from_millis(50);

/// The first error of the inner writer (kind and message).
type Failed = Mutex<Option<(io::ErrorKind, String)>>;

/// What the producer side, the writer thread and [`FlushSoon`] handles share.
struct Shared {
    /// Set once the inner writer failed (pairs with the `failed` lock's data:
    /// set after it is stored).
    has_failed: AtomicBool,
    failed: Failed,
    /// Flushes asked for (`flush` tickets) and answered.
    flush_asked: AtomicU64,
    flush_done: Mutex<u64>,
    flushed: Condvar,
    /// A flush asked for by [`FlushSoon`] (no answer).
    soon: AtomicBool,
    /// The writer is gone: write the rest and stop.
    closed: AtomicBool,
    /// A producer waits for room.
    producer_waiting: AtomicBool,
    room_lock: Mutex<()>,
    room: Condvar,
    /// The writer thread, to unpark.
    thread: OnceLock<Thread>,
}

impl Shared {
    fn wake_thread(&self) {
        if let Some(t) = self.thread.get() {
            t.unpark();
        }
    }

    fn error(&self) -> Option<io::Error> {
        if !self.has_failed.load(Ordering::Acquire) {
            return None;
        }
        lock(&self.failed)
            .as_ref()
            .map(|(kind, msg)| io::Error::new(*kind, msg.clone()))
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Asks a [`BackgroundWriter`]'s thread, from any thread, to write and
/// flush what waits without delay (and without waiting for it).
#[derive(Clone)]
pub struct FlushSoon(Arc<Shared>);

impl FlushSoon {
    /// Asks the writer thread to flush what it has written so far soon.
    pub fn flush_soon(&self) {
        // Release: the thread's Acquire swap then sees the ring's tail as of now.
        self.0.soon.store(true, Ordering::Release);
        self.0.wake_thread();
    }

    /// Like [`Write::flush`] of the writer, from any thread (the producer
    /// may be stuck, e.g. in a crashed box's thread): waits, at most
    /// `limit`, until the thread has written and flushed every byte
    /// appended before the call. Returns whether it did.
    pub fn flush_wait(&self, limit: Duration) -> bool {
        let shared = &self.0;
        // AcqRel: as in `flush`.
        let ticket = shared.flush_asked.fetch_add(1, Ordering::AcqRel) + 1;
        shared.wake_thread();
        let end = Instant::now() + limit;
        let mut done = lock(&shared.flush_done);
        while *done < ticket {
            let left = end.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            done = shared
                .flushed
                .wait_timeout(done, left.min(MAX_DELAY))
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
        true
    }
}

/// Writes to `W` on a background thread (see the module docs).
pub struct BackgroundWriter {
    ring: rtrb::Producer<u8>,
    shared: Arc<Shared>,
    /// The waiting bytes crossed [`CHUNK`] and the thread was told.
    chunk_told: bool,
    thread: Option<JoinHandle<()>>,
}

impl BackgroundWriter {
    /// Starts the thread (named `name`) that writes to `out`.
    pub fn new<W: Write + Send + 'static>(out: W, name: &str) -> io::Result<BackgroundWriter> {
        let (producer, consumer) = rtrb::RingBuffer::new(RING);
        let shared = Arc::new(Shared {
            has_failed: AtomicBool::new(false),
            failed: Mutex::new(None),
            flush_asked: AtomicU64::new(0),
            flush_done: Mutex::new(0),
            flushed: Condvar::new(),
            soon: AtomicBool::new(false),
            closed: AtomicBool::new(false),
            producer_waiting: AtomicBool::new(false),
            room_lock: Mutex::new(()),
            room: Condvar::new(),
            thread: OnceLock::new(),
        });
        let for_thread = shared.clone();
        let thread = std::thread::Builder::new()
            .name(name.into())
            .spawn(move || write_loop(out, consumer, &for_thread))?;
        let _ = shared.thread.set(thread.thread().clone());
        Ok(BackgroundWriter {
            ring: producer,
            shared,
            chunk_told: false,
            thread: Some(thread),
        })
    }

    /// A handle that asks the thread to write what waits now.
    pub fn flush_soon_handle(&self) -> FlushSoon {
        FlushSoon(self.shared.clone())
    }

    /// After appending `pushed` bytes, `waiting` wait in all (as the
    /// producer sees it: perhaps more than really wait).
    #[inline]
    fn appended(&mut self, waiting: usize, pushed: usize) {
        if waiting == pushed && pushed > 0 {
            // The ring was empty: the thread may sleep without a deadline.
            self.shared.wake_thread();
        }
        if waiting >= CHUNK {
            if !self.chunk_told {
                self.chunk_told = true;
                self.shared.wake_thread();
            }
        } else {
            self.chunk_told = false;
        }
    }

    /// Appends what fits, waits for room, and so on (a full ring, or a
    /// write larger than it).
    #[cold]
    fn write_in_pieces(&mut self, mut bytes: &[u8]) -> io::Result<()> {
        if self.ring.is_abandoned() {
            return Err(stopped());
        }
        while !bytes.is_empty() {
            let free = self.ring.slots();
            let (_, rest) = self.ring.push_partial_slice(bytes);
            let pushed = bytes.len() - rest.len();
            bytes = rest;
            self.appended(RING - free + pushed, pushed);
            if !bytes.is_empty() {
                self.wait_for_room()?;
            }
        }
        Ok(())
    }

    /// Waits until the ring has room (or the thread failed or stopped).
    fn wait_for_room(&mut self) -> io::Result<()> {
        self.shared.wake_thread();
        let mut g = lock(&self.shared.room_lock);
        self.shared.producer_waiting.store(true, Ordering::SeqCst);
        while self.ring.slots() == 0 {
            if let Some(e) = self.shared.error() {
                self.shared.producer_waiting.store(false, Ordering::SeqCst);
                return Err(e);
            }
            if self.ring.is_abandoned() {
                self.shared.producer_waiting.store(false, Ordering::SeqCst);
                return Err(stopped());
            }
            g = self
                .shared
                .room
                .wait_timeout(g, Duration::from_millis(1))
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
        self.shared.producer_waiting.store(false, Ordering::SeqCst);
        Ok(())
    }
}

impl Write for BackgroundWriter {
    #[inline]
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.write_all(bytes)?;
        Ok(bytes.len())
    }

    /// Appends `bytes` (a record, typically): one look at the thread's
    /// progress, a copy, one release store; a wake-up only when the ring
    /// was empty or the waiting bytes crossed [`CHUNK`].
    #[inline]
    fn write_all(&mut self, bytes: &[u8]) -> io::Result<()> {
        if self.shared.has_failed.load(Ordering::Relaxed) {
            return Err(self.shared.error().unwrap_or_else(stopped));
        }
        let free = self.ring.slots();
        if bytes.len() > free {
            return self.write_in_pieces(bytes);
        }
        // `slots` refreshed the producer's view: this cannot fail.
        if self.ring.push_entire_slice(bytes).is_err() {
            return self.write_in_pieces(bytes);
        }
        self.appended(RING - free + bytes.len(), bytes.len());
        Ok(())
    }

    fn flush(&mut self) -> io::Result<()> {
        // AcqRel: the thread's Acquire load of `flush_asked` then sees every
        // byte appended before this ticket.
        let ticket = self.shared.flush_asked.fetch_add(1, Ordering::AcqRel) + 1;
        self.shared.wake_thread();
        let mut done = lock(&self.shared.flush_done);
        while *done < ticket {
            if self.ring.is_abandoned() {
                break;
            }
            done = self
                .shared
                .flushed
                .wait_timeout(done, MAX_DELAY)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
        let answered = *done >= ticket;
        drop(done);
        match self.shared.error() {
            Some(e) => Err(e),
            None if answered => Ok(()),
            None => Err(stopped()),
        }
    }
}

impl Drop for BackgroundWriter {
    /// Writes what waits (errors are lost: flush first to see them) and
    /// waits for the thread.
    fn drop(&mut self) {
        // Release: the thread's Acquire load sees every byte appended before.
        self.shared.closed.store(true, Ordering::Release);
        self.shared.wake_thread();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The error of a call made after the thread ended without an error of
/// the inner writer (it panicked).
fn stopped() -> io::Error {
    io::Error::other("the output thread has stopped")
}

fn write_loop<W: Write>(mut out: W, mut ring: rtrb::Consumer<u8>, shared: &Shared) {
    let half = MAX_DELAY / 2;
    let mut ok = true;
    let mut answered = 0u64;
    // When the thread first saw the bytes that wait now.
    let mut since: Option<Instant> = None;
    loop {
        let closed = shared.closed.load(Ordering::Acquire);
        let asked = shared.flush_asked.load(Ordering::Acquire);
        let soon = shared.soon.swap(false, Ordering::Acquire);
        let waiting = ring.slots();
        let due = since.is_some_and(|t| t.elapsed() >= half);
        let flush = closed || asked > answered || soon || due;
        if waiting >= CHUNK || (flush && waiting > 0) {
            if let Ok(chunk) = ring.read_chunk(waiting) {
                let (a, b) = chunk.as_slices();
                if ok {
                    if let Err(e) = out.write_all(a).and_then(|_| out.write_all(b)) {
                        ok = fail(shared, e);
                    }
                }
                chunk.commit_all();
            }
            since = None;
            if shared.producer_waiting.load(Ordering::SeqCst) {
                let _g = lock(&shared.room_lock);
                shared.room.notify_all();
            }
        }
        if flush {
            if ok {
                if let Err(e) = out.flush() {
                    ok = fail(shared, e);
                }
            }
            if asked > answered {
                answered = asked;
                *lock(&shared.flush_done) = answered;
                shared.flushed.notify_all();
            }
            if closed && ring.is_empty() {
                return;
            }
            if waiting > 0 || !ring.is_empty() {
                continue;
            }
        }
        if ring.is_empty() {
            since = None;
            std::thread::park_timeout(half);
        } else {
            let t = *since.get_or_insert_with(Instant::now);
            let left = half.saturating_sub(t.elapsed());
            if !left.is_zero() {
                std::thread::park_timeout(left);
            }
        }
    }
}

/// Records the inner writer's first error; returns `false` (not ok).
fn fail(shared: &Shared, e: io::Error) -> bool {
    *lock(&shared.failed) = Some((e.kind(), e.to_string()));
    // Release: pairs with the Acquire load in `Shared::error`.
    shared.has_failed.store(true, Ordering::Release);
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A writer into a shared vector that fails once it holds `limit` bytes.
    #[derive(Clone)]
    struct Shared {
        bytes: Arc<Mutex<Vec<u8>>>,
        limit: usize,
        flushes: Arc<Mutex<usize>>,
    }

    impl Shared {
        fn new(limit: usize) -> Shared {
            Shared {
                bytes: Arc::default(),
                limit,
                flushes: Arc::default(),
            }
        }
    }

    impl Write for Shared {
        fn write(&mut self, b: &[u8]) -> io::Result<usize> {
            let mut v = self.bytes.lock().unwrap();
            if v.len() + b.len() > self.limit {
                return Err(io::Error::new(io::ErrorKind::StorageFull, "full up"));
            }
            v.extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            *self.flushes.lock().unwrap() += 1;
            Ok(())
        }
    }

    fn pattern(n: usize) -> Vec<u8> {
        (0..n).map(|i| (i * 7 + i / 251) as u8).collect()
    }

    #[test]
    fn bytes_arrive_in_order_and_whole_after_flush() {
        let out = Shared::new(usize::MAX);
        let mut w = BackgroundWriter::new(out.clone(), "test-out").unwrap();
        let data = pattern(CHUNK * 9 + 1234);
        // Writes of many sizes, some larger than the ring.
        let mut at = 0;
        for size in [1, 17, CHUNK - 3, 5, 5 * CHUNK, 999].iter().cycle() {
            let end = (at + size).min(data.len());
            w.write_all(&data[at..end]).unwrap();
            at = end;
            if at == data.len() {
                break;
            }
        }
        w.flush().unwrap();
        assert_eq!(*out.bytes.lock().unwrap(), data);
        assert!(*out.flushes.lock().unwrap() >= 1);
        // More after a flush, then drop: drop writes the rest.
        w.write_all(b"tail").unwrap();
        drop(w);
        let got = out.bytes.lock().unwrap();
        assert_eq!(&got[data.len()..], b"tail");
    }

    /// `flush_wait` from another thread writes what the producer appended,
    /// while the producer (the writer) stays alive and untouched.
    #[test]
    fn flush_wait_writes_what_waits_without_the_producer() {
        let out = Shared::new(usize::MAX);
        let mut w = BackgroundWriter::new(out.clone(), "test-out").unwrap();
        let handle = w.flush_soon_handle();
        w.write_all(b"finished record\n").unwrap();
        let t = std::thread::spawn(move || handle.flush_wait(Duration::from_secs(10)));
        assert!(t.join().unwrap());
        assert_eq!(&out.bytes.lock().unwrap()[..], b"finished record\n");
        assert!(*out.flushes.lock().unwrap() >= 1);
        drop(w);
    }

    #[test]
    fn flush_with_nothing_written() {
        let out = Shared::new(usize::MAX);
        let mut w = BackgroundWriter::new(out.clone(), "test-out").unwrap();
        w.flush().unwrap();
        w.flush().unwrap();
        assert!(out.bytes.lock().unwrap().is_empty());
        assert!(*out.flushes.lock().unwrap() >= 2);
    }

    /// A few bytes are written and flushed without a flush call, by the
    /// thread's own timer and by a `FlushSoon` request (bounds of seconds,
    /// not of the delay: this catches "only at the end", not slowness).
    #[test]
    fn a_few_bytes_reach_the_output_without_a_flush() {
        let out = Shared::new(usize::MAX);
        let mut w = BackgroundWriter::new(out.clone(), "test-out").unwrap();
        let arrived = |n: usize| {
            let start = Instant::now();
            while start.elapsed() < Duration::from_secs(10) {
                if out.bytes.lock().unwrap().len() == n && *out.flushes.lock().unwrap() > 0 {
                    return true;
                }
                std::thread::sleep(Duration::from_millis(1));
            }
            false
        };
        w.write_all(b"one record\n").unwrap();
        assert!(arrived(11), "the timer writes and flushes a lone record");
        let soon = w.flush_soon_handle();
        w.write_all(b"two\n").unwrap();
        soon.flush_soon();
        assert!(arrived(15));
        assert_eq!(&out.bytes.lock().unwrap()[..], b"one record\ntwo\n");
    }

    #[test]
    fn the_first_error_is_reported_by_every_later_call() {
        let out = Shared::new(CHUNK + 10);
        let mut w = BackgroundWriter::new(out.clone(), "test-out").unwrap();
        w.write_all(&pattern(CHUNK)).unwrap(); // fits
        w.flush().unwrap();
        w.write_all(&pattern(CHUNK)).unwrap(); // fails on the thread
        let e = w.flush().unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::StorageFull);
        assert_eq!(e.to_string(), "full up");
        let e = w.write_all(&pattern(2 * CHUNK)).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::StorageFull);
        assert_eq!(w.flush().unwrap_err().kind(), io::ErrorKind::StorageFull);
        assert_eq!(out.bytes.lock().unwrap().len(), CHUNK);
    }

    /// A writer far slower than its producer: the producer waits for room
    /// (memory bounded by the ring) and every byte arrives in order.
    #[test]
    fn a_slow_output_holds_the_producer_back() {
        struct Slow(Arc<Mutex<Vec<u8>>>);
        impl Write for Slow {
            fn write(&mut self, b: &[u8]) -> io::Result<usize> {
                let n = b.len().min(4096);
                self.0.lock().unwrap().extend_from_slice(&b[..n]);
                std::thread::yield_now();
                Ok(n)
            }
            fn flush(&mut self) -> io::Result<()> {
                Ok(())
            }
        }
        let bytes = Arc::new(Mutex::new(Vec::new()));
        let mut w = BackgroundWriter::new(Slow(bytes.clone()), "test-out").unwrap();
        let data = pattern(RING * 5 + 77);
        for piece in data.chunks(1000) {
            w.write_all(piece).unwrap();
        }
        w.flush().unwrap();
        assert_eq!(*bytes.lock().unwrap(), data);
    }
}
