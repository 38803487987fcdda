//! Fuzz target: arbitrary bytes through the wire decoder (a transport
//! message's header: credit and frames, `snet_engine::dist::wire`).
//!
//! The decoder must never panic: every input is a message or a
//! positioned `WireError`. A message that decodes is encoded again, and
//! that must decode to the same message and encode to the same bytes.

#![no_main]

use libfuzzer_sys::fuzz_target;
use snet_engine::dist::wire::{Frame, Message};

fuzz_target!(|data: &[u8]| {
    let first = Message::decode(data);
    // One frame at a time agrees with the whole message.
    if let Some(b) = data.get(1..) {
        let _ = Frame::decode(b);
    }
    let Ok(m) = first else { return };
    let mut out = Vec::new();
    m.encode(&mut out);
    let again = Message::decode(&out).expect("an encoded message must decode");
    let mut out2 = Vec::new();
    again.encode(&mut out2);
    assert_eq!(out, out2, "encoding is not stable");
    assert_eq!(again.into_owned(), m.into_owned(), "round trip changed the message");
});
