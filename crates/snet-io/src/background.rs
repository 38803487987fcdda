//! An output that writes on a thread of its own.
//!
//! The engine formats output records on a worker; the `write` system calls
//! (for a file, copying every byte into the page cache, which costs about
//! as much as formatting it) then run beside the workers instead of on
//! them. [`BackgroundWriter`] collects bytes into chunks and hands each full
//! chunk to its thread; emptied chunks come back for reuse, so a run
//! allocates only the few chunks in flight.
//!
//! * Order: chunks are written in the order they were filled, each whole.
//! * Memory: at most [`IN_FLIGHT`] chunks wait for the thread; a writer
//!   that gets ahead of its output blocks (the output's back-pressure).
//! * `flush` hands over what is buffered and waits until the thread has
//!   written and flushed everything before it: after `Ok`, all bytes so far
//!   reached the inner writer.
//! * Errors: the inner writer's first error is kept; every later `write`
//!   and `flush` returns it (same kind and message), and nothing more is
//!   written.

use std::io::{self, Write};
use std::sync::mpsc::{self, Receiver, SyncSender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

/// Bytes per chunk.
pub const CHUNK: usize = 1 << 16;
/// Full chunks that may wait for the thread.
pub const IN_FLIGHT: usize = 4;

enum Msg {
    Data(Vec<u8>),
    /// Flush the inner writer, then answer.
    Flush(SyncSender<()>),
}

/// The first error of the inner writer (kind and message).
type Failed = Arc<Mutex<Option<(io::ErrorKind, String)>>>;

/// Writes to `W` on a background thread (see the module docs).
pub struct BackgroundWriter {
    buf: Vec<u8>,
    to_thread: Option<SyncSender<Msg>>,
    spare: Receiver<Vec<u8>>,
    failed: Failed,
    thread: Option<JoinHandle<()>>,
}

impl BackgroundWriter {
    /// Starts the thread (named `name`) that writes to `out`.
    pub fn new<W: Write + Send + 'static>(out: W, name: &str) -> io::Result<BackgroundWriter> {
        let (to_thread, from_writer) = mpsc::sync_channel::<Msg>(IN_FLIGHT);
        // Spare chunks travel back without bound: there are never more than
        // IN_FLIGHT + 2 of them.
        let (give_back, spare) = mpsc::channel::<Vec<u8>>();
        let failed: Failed = Arc::default();
        let thread_failed = failed.clone();
        let thread = std::thread::Builder::new()
            .name(name.into())
            .spawn(move || write_loop(out, from_writer, give_back, thread_failed))?;
        Ok(BackgroundWriter {
            buf: Vec::with_capacity(CHUNK),
            to_thread: Some(to_thread),
            spare,
            failed,
            thread: Some(thread),
        })
    }

    /// The inner writer's error, if it failed.
    fn error(&self) -> Option<io::Error> {
        let failed = self.failed.lock().unwrap_or_else(|e| e.into_inner());
        failed
            .as_ref()
            .map(|(kind, msg)| io::Error::new(*kind, msg.clone()))
    }

    fn send(&self, msg: Msg) -> io::Result<()> {
        self.to_thread
            .as_ref()
            .ok_or_else(stopped)?
            .send(msg)
            .map_err(|_| self.error().unwrap_or_else(stopped))
    }

    /// Hands the buffered bytes to the thread (if any).
    fn hand_over(&mut self) -> io::Result<()> {
        if let Some(e) = self.error() {
            return Err(e);
        }
        if self.buf.is_empty() {
            return Ok(());
        }
        let next = self
            .spare
            .try_recv()
            .unwrap_or_else(|_| Vec::with_capacity(CHUNK));
        let full = std::mem::replace(&mut self.buf, next);
        self.send(Msg::Data(full))
    }
}

impl Write for BackgroundWriter {
    #[inline]
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.write_all(bytes)?;
        Ok(bytes.len())
    }

    #[inline]
    fn write_all(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.buf.extend_from_slice(bytes);
        if self.buf.len() >= CHUNK {
            self.hand_over()?;
        }
        Ok(())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.hand_over()?;
        let (ack, done) = mpsc::sync_channel(1);
        self.send(Msg::Flush(ack))?;
        // The thread answers after writing everything sent before; it
        // drops `ack` unanswered only if it has stopped.
        let answered = done.recv().is_ok();
        match self.error() {
            Some(e) => Err(e),
            None if answered => Ok(()),
            None => Err(stopped()),
        }
    }
}

impl Drop for BackgroundWriter {
    /// Writes what is buffered (errors are lost: flush first to see them)
    /// and waits for the thread.
    fn drop(&mut self) {
        let _ = self.hand_over();
        self.to_thread = None;
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

fn write_loop<W: Write>(
    mut out: W,
    chunks: Receiver<Msg>,
    give_back: mpsc::Sender<Vec<u8>>,
    failed: Failed,
) {
    let mut ok = true;
    let fail = |e: io::Error| {
        *failed.lock().unwrap_or_else(|e| e.into_inner()) = Some((e.kind(), e.to_string()));
        false
    };
    for msg in chunks {
        match msg {
            Msg::Data(mut chunk) => {
                if ok {
                    if let Err(e) = out.write_all(&chunk) {
                        ok = fail(e);
                    }
                }
                chunk.clear();
                let _ = give_back.send(chunk);
            }
            Msg::Flush(ack) => {
                if ok {
                    if let Err(e) = out.flush() {
                        ok = fail(e);
                    }
                }
                let _ = ack.send(());
            }
        }
    }
    if ok {
        let _ = out.flush();
    }
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
        // Writes of many sizes, some larger than a chunk.
        let mut at = 0;
        for size in [1, 17, CHUNK - 3, 5, 3 * CHUNK, 999].iter().cycle() {
            let end = (at + size).min(data.len());
            w.write_all(&data[at..end]).unwrap();
            at = end;
            if at == data.len() {
                break;
            }
        }
        w.flush().unwrap();
        assert_eq!(*out.bytes.lock().unwrap(), data);
        assert_eq!(*out.flushes.lock().unwrap(), 1);
        // More after a flush, then drop: drop writes the rest.
        w.write_all(b"tail").unwrap();
        drop(w);
        let got = out.bytes.lock().unwrap();
        assert_eq!(&got[data.len()..], b"tail");
    }

    #[test]
    fn flush_with_nothing_written() {
        let out = Shared::new(usize::MAX);
        let mut w = BackgroundWriter::new(out.clone(), "test-out").unwrap();
        w.flush().unwrap();
        w.flush().unwrap();
        assert!(out.bytes.lock().unwrap().is_empty());
        assert_eq!(*out.flushes.lock().unwrap(), 2);
    }

    #[test]
    fn the_first_error_is_reported_by_every_later_call() {
        let out = Shared::new(CHUNK + 10);
        let mut w = BackgroundWriter::new(out.clone(), "test-out").unwrap();
        w.write_all(&pattern(CHUNK)).unwrap(); // the first chunk fits
        w.write_all(&pattern(CHUNK)).unwrap(); // handed over; fails on the thread
        let e = w.flush().unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::StorageFull);
        assert_eq!(e.to_string(), "full up");
        let e = w.write_all(&pattern(2 * CHUNK)).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::StorageFull);
        assert_eq!(w.flush().unwrap_err().kind(), io::ErrorKind::StorageFull);
        assert_eq!(out.bytes.lock().unwrap().len(), CHUNK);
    }
}
