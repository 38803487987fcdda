//! Node 0's record streams: the input file or standard input as a
//! [`Source`], the output as a [`Sink`] written by a thread of its own, and
//! the stand-ins a multi-process run uses when they cannot be opened.

use std::fs::File;
use std::io::{self, BufReader, Write};
use std::sync::Arc;

use snet_core::Rank;
use snet_engine::{Sink, Source, SourceError};
use snet_io::{BackgroundWriter, RecordReader, RecordWriter, StreamItem};

use crate::RunOptions;

struct ReaderSource<R: io::BufRead>(RecordReader<R>);

/// A reader of C4SNet fields, named `name` in errors.
fn reader<R: io::BufRead>(input: R, name: &str) -> RecordReader<R> {
    RecordReader::with_name(input, name).with_codecs(c4snet::text_codecs())
}

/// A writer of C4SNet fields.
fn writer<W: Write>(out: W) -> RecordWriter<W> {
    RecordWriter::new(out).with_codecs(c4snet::text_codecs())
}

impl<R: io::BufRead + Send> Source for ReaderSource<R> {
    fn next_record(&mut self) -> Result<Option<snet_core::Record>, SourceError> {
        match self.0.next() {
            Ok(Some(StreamItem::Data(r))) => Ok(Some(r)),
            Ok(Some(StreamItem::Terminate)) | Ok(None) => Ok(None),
            Err(e) => Err(SourceError::new(e)),
        }
    }

    fn next_ready(&mut self) -> Option<Option<snet_core::Record>> {
        match self.0.next_buffered()? {
            StreamItem::Data(r) => Some(Some(r)),
            StreamItem::Terminate => Some(None),
        }
    }

    fn line(&self) -> Option<u64> {
        Some(self.0.line())
    }
}

/// Writes records to a [`RecordWriter`]; `flush` is the output thread's
/// handle for [`Sink::idle_flush`] (records then leave the writer one by
/// one, and the thread bounds their delay).
struct WriterSink<W: Write> {
    writer: RecordWriter<W>,
    flush: Option<snet_io::FlushSoon>,
}

impl<W: Write + Send> Sink for WriterSink<W> {
    fn idle_flush(&self) -> Option<snet_engine::IdleFlush> {
        self.flush.clone().map(|f| {
            let f: snet_engine::IdleFlush = Arc::new(move || f.flush_soon());
            f
        })
    }
    fn write(&mut self, rec: &snet_core::Record) -> io::Result<()> {
        self.writer.write(rec)
    }
    fn finish(&mut self) -> io::Result<()> {
        self.writer.write_terminate()?;
        self.writer.flush()
    }
    fn abort(&mut self) -> io::Result<()> {
        self.writer.flush()
    }
}
/// The input or output file could not be opened.
#[derive(Debug)]
pub(crate) struct OpenError(String);

impl std::fmt::Display for OpenError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for OpenError {}

/// Opens the input and output streams (node 0's).
/// Node 0's record streams.
pub(crate) type Streams = (Box<dyn Source>, Box<dyn Sink>);

pub(crate) fn open_io(opts: &RunOptions) -> Result<Streams, u8> {
    open_streams(opts).map_err(|e| {
        say!("error: {e}");
        2
    })
}

fn open_streams(opts: &RunOptions) -> Result<Streams, OpenError> {
    let source: Box<dyn Source> = match &opts.input {
        None => Box::new(ReaderSource(reader(
            BufReader::with_capacity(1 << 16, io::stdin()),
            "<stdin>",
        ))),
        Some(p) => match File::open(p) {
            Ok(f) => Box::new(ReaderSource(reader(
                BufReader::with_capacity(1 << 16, f),
                &p.display().to_string(),
            ))),
            Err(e) => return Err(OpenError(format!("cannot open input {}: {e}", p.display()))),
        },
    };
    // The output's `write` calls run on a thread of their own (beside the
    // workers, which only format records into its chunks).
    let background = |out: Box<dyn Write + Send>| {
        BackgroundWriter::new(out, "snet-writer")
            .map(|w| {
                // A crashing box ends the process from a signal handler:
                // the output thread first writes what finished (c4snet's
                // `rescue`; nothing lost).
                let rescue = w.flush_soon_handle();
                let _ = c4snet::rescue::on_crash(move || {
                    rescue.flush_wait(std::time::Duration::from_secs(4));
                });
                let flush = Some(w.flush_soon_handle());
                Box::new(WriterSink {
                    writer: writer(w).unbuffered(),
                    flush,
                }) as Box<dyn Sink>
            })
            .map_err(|e| OpenError(format!("cannot start the output thread: {e}")))
    };
    let sink = match &opts.output {
        None => background(Box::new(io::stdout()))?,
        Some(p) => match File::create(p) {
            Ok(f) => background(Box::new(f))?,
            Err(e) => {
                return Err(OpenError(format!(
                    "cannot create output {}: {e}",
                    p.display()
                )))
            }
        },
    };
    Ok((source, sink))
}

/// A source that fails at once: node 0 of an MPI run whose input or output
/// cannot be opened still runs, so that every node hears of the failure.
struct FailedSource(Option<OpenError>);

impl Source for FailedSource {
    fn next_record(&mut self) -> Result<Option<snet_core::Record>, SourceError> {
        let e = self
            .0
            .take()
            .unwrap_or_else(|| OpenError("input unavailable".into()));
        Err(SourceError::new(e))
    }
}

/// Node `me`'s record streams in a multi-process run: node 0's input and
/// output; if it cannot open them, a source that fails at once, so that
/// the run starts anyway and every node hears of the failure.
pub(crate) fn node_streams(me: Rank, opts: &RunOptions) -> Option<Streams> {
    (me == Rank::ROOT).then(|| match open_streams(opts) {
        Ok(io) => io,
        Err(e) => (
            Box::new(FailedSource(Some(e))) as Box<dyn Source>,
            Box::new(NullSink) as Box<dyn Sink>,
        ),
    })
}
struct NullSink;

impl Sink for NullSink {
    fn write(&mut self, _: &snet_core::Record) -> io::Result<()> {
        Ok(())
    }
    fn finish(&mut self) -> io::Result<()> {
        Ok(())
    }
    fn abort(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use snet_engine::{Config, EngineError, SingleNode};

    const MALFORMED: &str = r#"<?xml version="1.0" ?>
<record xmlns="snet-home.org" type="data" mode="textual" interface="C4SNet"><tag label="a">1</tag></record>
<record xmlns="snet-home.org" type="data" mode="textual" interface="C4SNet"><tag label="a">12x</tag></record>
<record type="terminate" />
"#;

    fn source() -> ReaderSource<&'static [u8]> {
        ReaderSource(reader(MALFORMED.as_bytes(), "in.xml"))
    }

    /// The reader's `ReadError` survives the `Source` interface whole: its
    /// kind and position can be inspected, and the message is its own.
    #[test]
    fn a_source_error_is_the_readers_error() {
        let mut src = source();
        assert!(src.next_record().expect("first record").is_some());
        let e = src.next_record().expect_err("12x is not an integer");
        let read = e
            .downcast_ref::<snet_io::ReadError>()
            .expect("a snet_io::ReadError");
        assert!(
            matches!(read.kind(), snet_io::ReadErrorKind::NonIntegerTag { value, .. } if value == "12x"),
            "{read:?}"
        );
        assert_eq!(read.position().line, 3);
        assert_eq!(e.to_string(), read.to_string());
    }

    /// ... and so does the run's error: `EngineError::Input` holds it.
    #[test]
    fn a_runs_input_error_holds_the_readers_error() {
        let compiled = snet_front::compile("t.snet", "net idf connect [{<a>} -> {<a>}];", None);
        let graph = Arc::new(compiled.graph.expect("compiles"));
        let config = Config {
            workers: 1,
            ..Config::default()
        };
        let sink = WriterSink {
            writer: writer(Vec::new()),
            flush: None,
        };
        let err = snet_engine::run(
            graph,
            &config,
            Some((Box::new(source()), Box::new(sink))),
            &snet_engine::NoBoxes,
            &SingleNode,
        )
        .expect_err("malformed input");
        let EngineError::Input(e) = &err else {
            panic!("not an input error: {err:?}")
        };
        let read = e.downcast_ref::<snet_io::ReadError>().expect("ReadError");
        assert_eq!(read.position().line, 3);
        assert_eq!(err.to_string(), format!("malformed input: {read}"));
        assert!(
            err.to_string().starts_with("malformed input: in.xml:3:"),
            "{err}"
        );
    }
}
