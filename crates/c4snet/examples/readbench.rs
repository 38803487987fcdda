//! Reader/writer throughput.
//!
//! `cargo run --release -p c4snet --example readbench [RECORDS]`
//!
//! Generates RECORDS (default 100,000) small records in memory — one tag
//! each, as the stress-test networks use — and times reading them, then
//! records with a tag, a binding tag and an int field, and records with a
//! `double[4]` field, then writing the last two.
//! Reading and writing use the C4SNet text codec, as a program does.
//! Rates are per second of this thread's CPU time (wall time is shown too:
//! on a shared machine the two differ).

use std::time::{Duration, Instant};

use snet_io::{RecordReader, RecordWriter, StreamItem};

/// This thread's CPU time.
fn cpu_time() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; the clock id is a constant.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    assert_eq!(rc, 0, "clock_gettime");
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

struct Timer(Instant, Duration);

impl Timer {
    fn start() -> Timer {
        Timer(Instant::now(), cpu_time())
    }
    /// (cpu seconds, wall seconds)
    fn stop(&self) -> (f64, f64) {
        (
            (cpu_time() - self.1).as_secs_f64(),
            self.0.elapsed().as_secs_f64(),
        )
    }
}

fn read(input: &[u8]) -> (usize, (f64, f64)) {
    let t = Timer::start();
    let mut r = RecordReader::new(input).with_codecs(c4snet::text_codecs());
    let mut n = 0;
    loop {
        match r.next() {
            Ok(Some(StreamItem::Data(_))) => n += 1,
            Ok(Some(StreamItem::Terminate)) | Ok(None) => break,
            Err(e) => panic!("benchmark input is valid: {e}"),
        }
    }
    (n, t.stop())
}

fn report(what: &str, n: usize, bytes: usize, (cpu, wall): (f64, f64)) {
    println!(
        "{what:<28} {n:>9} records in {:>8.2} ms CPU ({:>8.2} ms wall): {:>6.2} M records/s, {:>7.1} MB/s",
        cpu * 1e3,
        wall * 1e3,
        n as f64 / cpu / 1e6,
        bytes as f64 / cpu / 1e6
    );
}

fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(100_000);

    let mut one_tag = Vec::new();
    for i in 0..n {
        one_tag.extend_from_slice(
            format!("<?xml version=\"1.0\" ?><record xmlns=\"snet-home.org\" type=\"data\" mode=\"textual\" ><tag label=\"N\">{i}</tag></record>\n")
                .as_bytes(),
        );
    }
    one_tag.extend_from_slice(b"<record type=\"terminate\" />\n");

    let mut mixed = Vec::new();
    for i in 0..n {
        mixed.extend_from_slice(
            format!(
                "<record type=\"data\" mode=\"textual\"><field label=\"A\" interface=\"C4SNet\">(int){i}</field>\
                 <tag label=\"N\">{i}</tag><btag label=\"K\">1</btag></record>\n"
            )
            .as_bytes(),
        );
    }

    let mut doubles = Vec::new();
    for i in 0..n {
        doubles.extend_from_slice(
            format!(
                "<record type=\"data\" mode=\"textual\"><field label=\"D\" interface=\"C4SNet\">(double[4]){i}.5,0.25,-1e-3,{i}</field>\
                 <tag label=\"N\">{i}</tag></record>\n"
            )
            .as_bytes(),
        );
    }

    for round in 0..3 {
        let (k, secs) = read(&one_tag);
        report(
            &format!("read, one tag (run {round})"),
            k,
            one_tag.len(),
            secs,
        );
    }
    let (k, secs) = read(&mixed);
    report("read, field+tag+btag", k, mixed.len(), secs);

    let (k, secs) = read(&doubles);
    report("read, double[4]+tag", k, doubles.len(), secs);

    for (what, input) in [
        ("write, field+tag+btag", &mixed),
        ("write, double[4]+tag", &doubles),
    ] {
        let mut recs = Vec::with_capacity(n);
        let mut r = RecordReader::new(&input[..]).with_codecs(c4snet::text_codecs());
        while let Ok(Some(StreamItem::Data(rec))) = r.next() {
            recs.push(rec);
        }
        let t = Timer::start();
        let mut w = RecordWriter::new(std::io::sink()).with_codecs(c4snet::text_codecs());
        for rec in &recs {
            w.write(rec).expect("sink never fails");
        }
        w.flush().expect("sink never fails");
        report(what, recs.len(), input.len(), t.stop());
    }
}
