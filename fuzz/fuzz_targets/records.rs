//! Fuzz target: arbitrary bytes through the record reader.
//!
//! The reader must never panic: every input either yields records or a
//! positioned error. Records that were read are also written back and
//! re-read, which must succeed and give an equivalent stream. C4SNet values
//! are parsed and written by the C4SNet text codec, as a program does.

#![no_main]

use libfuzzer_sys::fuzz_target;
use snet_io::{equivalent_multiset, read_all, StreamItem, RecordReader, RecordWriter};

/// Every item the reader gives, and its error if it stops on one.
fn drain(mut reader: RecordReader<&[u8]>) -> (Vec<StreamItem>, Option<String>) {
    let mut items = Vec::new();
    loop {
        match reader.next() {
            Ok(Some(item)) => items.push(item),
            Ok(None) => return (items, None),
            Err(e) => return (items, Some(e.to_string())),
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let codecs = c4snet::text_codecs();
    let (items, fast_err) = drain(RecordReader::new(data).with_codecs(codecs.clone()));
    // The reader's fast path and its quick-xml fallback must agree on
    // every input: the same records, the same error at the same place.
    let (slow_items, slow_err) = drain(
        RecordReader::new(data)
            .with_codecs(codecs.clone())
            .without_fast_path(),
    );
    assert_eq!(fast_err, slow_err, "fast path and fallback disagree");
    if let Err(diff) = equivalent_multiset(&items, &slow_items, &codecs) {
        panic!("fast path and fallback read different records:\n{diff}");
    }
    let mut writer = RecordWriter::new(Vec::new()).with_codecs(codecs.clone());
    for item in &items {
        match item {
            StreamItem::Data(r) => writer.write(r).expect("in-memory write"),
            StreamItem::Terminate => writer.write_terminate().expect("in-memory write"),
        }
    }
    let out = writer.into_inner().expect("in-memory flush");
    let again = read_all(&out[..], &codecs).expect("the writer's output must read back");
    if let Err(diff) = equivalent_multiset(&items, &again, &codecs) {
        panic!("round trip changed the stream:\n{diff}");
    }
});
