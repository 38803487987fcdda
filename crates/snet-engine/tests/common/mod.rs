//! Set-up shared by the engine's distributed tests (`custody.rs`,
//! `zero_copy.rs`): record sources and sinks over vectors.
#![allow(dead_code)]

use std::sync::{Arc, Mutex};

use snet_core::Record;
use snet_engine::{Sink, Source, SourceError};

/// The records of a vector, in order.
pub struct VecSource(pub std::vec::IntoIter<Record>);

impl VecSource {
    /// A source of `records`.
    pub fn new(records: Vec<Record>) -> VecSource {
        VecSource(records.into_iter())
    }
}

impl Source for VecSource {
    fn next_record(&mut self) -> Result<Option<Record>, SourceError> {
        Ok(self.0.next())
    }
}

/// Collects the records written, for the test to look at.
pub struct Collect(pub Arc<Mutex<Vec<Record>>>);

impl Sink for Collect {
    fn write(&mut self, rec: &Record) -> std::io::Result<()> {
        self.0.lock().unwrap().push(rec.clone());
        Ok(())
    }
    fn finish(&mut self) -> std::io::Result<()> {
        Ok(())
    }
    fn abort(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// A run's record streams, as `snet_engine::run` takes them.
pub type Io = (Box<dyn Source>, Box<dyn Sink>);

/// Where [`Collect`] puts the records.
pub type Written = Arc<Mutex<Vec<Record>>>;

/// A source and a sink: `records` in, the output collected in the `Arc`.
pub fn vec_io(records: Vec<Record>) -> (Io, Written) {
    let out = Arc::new(Mutex::new(Vec::new()));
    (
        (
            Box::new(VecSource::new(records)) as Box<dyn Source>,
            Box::new(Collect(out.clone())) as Box<dyn Sink>,
        ),
        out,
    )
}
