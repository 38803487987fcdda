//! The record I/O benchmark (`snet iobench FILE`): the XML record reader
//! and writer measured alone, against a plain read of the same file.
//!
//! Each round, in this order:
//! * **plain**: the file read through a 64 KiB `BufReader` (as `snet run`
//!   opens its input), every byte handed out and dropped: the ceiling;
//! * **read**: [`RecordReader`] with the C4SNet text codecs over the same
//!   kind of `BufReader`, every record built and dropped (what the reader
//!   thread of `snet run` does before handing records to the engine);
//! * **write**: the records read (kept in memory, not timed) written by a
//!   [`RecordWriter`] with the C4SNet text codecs into a sink (formatting
//!   only; `--output FILE` writes a file instead).
//!
//! `--fallback` reads through quick-xml only (the reader's fast path off),
//! for comparing the two.
//!
//! Rates are MB/s (10^6 bytes per second) of input bytes for plain and
//! read, of output bytes for write, from the median wall time of the
//! rounds; CPU time of the measuring thread is reported too (on a shared
//! machine it is the steadier figure). One JSON object on standard output;
//! `bench/run --only io` runs it.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Write};
use std::path::Path;
use std::time::{Duration, Instant};

use snet_core::Record;
use snet_io::{RecordReader, RecordWriter, StreamItem};

/// This thread's CPU time.
fn cpu_time() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; the clock id is a constant.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    if rc != 0 {
        return Duration::ZERO;
    }
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// Wall and CPU seconds of `f`, and its result.
fn timed<T>(f: impl FnOnce() -> T) -> (T, f64, f64) {
    let (w, c) = (Instant::now(), cpu_time());
    let r = f();
    let cpu = (cpu_time() - c).as_secs_f64();
    (r, w.elapsed().as_secs_f64(), cpu)
}

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    match xs.len() {
        0 => 0.0,
        n if n % 2 == 1 => xs[n / 2],
        n => (xs[n / 2 - 1] + xs[n / 2]) / 2.0,
    }
}

fn plain_read(path: &Path) -> io::Result<u64> {
    let mut r = BufReader::with_capacity(1 << 16, File::open(path)?);
    let mut n = 0u64;
    loop {
        let len = {
            let buf = r.fill_buf()?;
            // Look at the bytes (the reader must too): the last of each chunk.
            std::hint::black_box(buf.last());
            buf.len()
        };
        if len == 0 {
            return Ok(n);
        }
        n += len as u64;
        r.consume(len);
    }
}

/// Reads every record of `path`; keeps them if `keep`; only through
/// quick-xml if `fallback` (the reader's fast path off).
fn read_records(path: &Path, keep: bool, fallback: bool) -> Result<(usize, Vec<Record>), String> {
    let f = File::open(path).map_err(|e| format!("cannot open {}: {e}", path.display()))?;
    let mut r = RecordReader::with_name(
        BufReader::with_capacity(1 << 16, f),
        &path.display().to_string(),
    )
    .with_codecs(c4snet::text_codecs());
    if fallback {
        r = r.without_fast_path();
    }
    let mut n = 0;
    let mut kept = Vec::new();
    loop {
        match r.next() {
            Ok(Some(StreamItem::Data(rec))) => {
                n += 1;
                if keep {
                    kept.push(rec);
                } else {
                    drop(std::hint::black_box(rec));
                }
            }
            Ok(Some(StreamItem::Terminate)) | Ok(None) => return Ok((n, kept)),
            Err(e) => return Err(e.to_string()),
        }
    }
}

/// Counts the bytes written through it.
struct Counting<W>(W, u64);

impl<W: Write> Write for Counting<W> {
    fn write(&mut self, b: &[u8]) -> io::Result<usize> {
        let n = self.0.write(b)?;
        self.1 += n as u64;
        Ok(n)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.0.flush()
    }
}

fn write_records<W: Write>(out: W, recs: &[Record]) -> io::Result<u64> {
    let mut w = RecordWriter::new(Counting(out, 0)).with_codecs(c4snet::text_codecs());
    for r in recs {
        w.write(r)?;
    }
    w.write_terminate()?;
    Ok(w.into_inner()?.1)
}

/// `snet iobench`: returns the exit status (0 ok, 2 unreadable input or
/// unwritable output).
pub fn iobench_command(path: &Path, rounds: usize, output: Option<&Path>, fallback: bool) -> u8 {
    match iobench(path, rounds.max(1), output, fallback) {
        Ok(json) => {
            println!("{json}");
            0
        }
        Err(e) => {
            snet_runner::say_raw(&format!("error: iobench: {e}\n"));
            2
        }
    }
}

fn iobench(
    path: &Path,
    rounds: usize,
    output: Option<&Path>,
    fallback: bool,
) -> Result<String, String> {
    let (_, recs) = read_records(path, true, fallback)?;
    let (mut plain, mut read, mut write) = (Vec::new(), Vec::new(), Vec::new());
    let (mut bytes, mut records, mut out_bytes) = (0u64, 0usize, 0u64);
    for _ in 0..rounds {
        let (n, w, c) = timed(|| plain_read(path));
        bytes = n.map_err(|e| format!("{}: {e}", path.display()))?;
        plain.push((w, c));
        let (n, w, c) = timed(|| read_records(path, false, fallback));
        records = n?.0;
        read.push((w, c));
        let (n, w, c) = timed(|| match output {
            Some(p) => write_records(File::create(p)?, &recs),
            None => write_records(io::sink(), &recs),
        });
        out_bytes = n.map_err(|e| format!("writing: {e}"))?;
        write.push((w, c));
    }
    let rate = |b: u64, xs: &[(f64, f64)], cpu: bool| {
        let t = median(xs.iter().map(|x| if cpu { x.1 } else { x.0 }).collect());
        if t > 0.0 {
            b as f64 / t / 1e6
        } else {
            0.0
        }
    };
    let med = |xs: &[(f64, f64)]| median(xs.iter().map(|x| x.0).collect());
    Ok(format!(
        "{{\"file\":{:?},\"bytes\":{bytes},\"records\":{records},\"out_bytes\":{out_bytes},\"rounds\":{rounds},\
         \"plain_s\":{:.6},\"read_s\":{:.6},\"write_s\":{:.6},\
         \"plain_mb_s\":{:.1},\"read_mb_s\":{:.1},\"write_mb_s\":{:.1},\
         \"plain_cpu_mb_s\":{:.1},\"read_cpu_mb_s\":{:.1},\"write_cpu_mb_s\":{:.1}}}",
        path.display().to_string(),
        med(&plain),
        med(&read),
        med(&write),
        rate(bytes, &plain, false),
        rate(bytes, &read, false),
        rate(out_bytes, &write, false),
        rate(bytes, &plain, true),
        rate(bytes, &read, true),
        rate(out_bytes, &write, true),
    ))
}
