//! Fuzz target: what a peer node sends, through the receiving side a node
//! runs (the `frames` target checks the syntax alone): messages from
//! several peers in turn, frame by frame, items through the per-peer label
//! dictionaries, inline C4SNet fields through the field codec, field
//! references through a field store. Any bytes from any peer must end in
//! items or an error, never a panic.

#![no_main]

use libfuzzer_sys::fuzz_target;
use snet_engine::dist::wire::fuzzing::receive;

fuzz_target!(|data: &[u8]| {
    // [nodes][me] then messages: [from][length: u16 LE][header bytes].
    let [nodes, me, rest @ ..] = data else {
        return;
    };
    let nodes = u32::from(nodes % 5) + 2;
    let me = u32::from(*me) % nodes;
    let mut messages = Vec::new();
    let mut b = rest;
    while let [from, l0, l1, tail @ ..] = b {
        let len = (usize::from(u16::from_le_bytes([*l0, *l1])) % 4096).min(tail.len());
        // A transport delivers only messages of the run's other nodes.
        let from = (me + 1 + u32::from(*from) % (nodes - 1)) % nodes;
        messages.push((from, &tail[..len]));
        b = &tail[len..];
    }
    let mut codecs = snet_core::Codecs::default();
    codecs.add(c4snet::codec());
    let _ = receive(me, nodes, &messages, &codecs);
});
