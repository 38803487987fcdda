//! Fuzz target: arbitrary bytes through the wire reader (a transport
//! message's header: credit and frames, `snet_engine::dist::wire`).
//!
//! The reader must never panic: every input is a message or a
//! positioned `WireError`. A message that decodes is encoded again, and
//! that must decode to the same message and encode to the same bytes.
//! (`Message::decode` runs the one parser, `MessageReader`, that the
//! input manager streams items through.)

#![no_main]

use libfuzzer_sys::fuzz_target;
use snet_engine::dist::wire::{Message, MessageReader};

fuzz_target!(|data: &[u8]| {
    // Frame by frame, skipping the items, agrees with the whole message.
    let mut frames = 0;
    let streamed = MessageReader::new(data).and_then(|(_, mut r)| {
        while r.next_frame()?.is_some() {
            frames += 1;
        }
        Ok(())
    });
    let first = Message::decode(data);
    assert_eq!(streamed.is_ok(), first.is_ok(), "streaming and whole disagree");
    let Ok(m) = first else { return };
    assert_eq!(frames, m.frames.len());
    let mut out = Vec::new();
    m.encode(&mut out);
    let again = Message::decode(&out).expect("an encoded message must decode");
    let mut out2 = Vec::new();
    again.encode(&mut out2);
    assert_eq!(out, out2, "encoding is not stable");
    assert_eq!(again.into_owned(), m.into_owned(), "round trip changed the message");
});
