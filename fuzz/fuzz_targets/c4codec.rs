//! Fuzz target: C4SNet's field codec (`c4snet::codec()`), which decodes the
//! field values another node sends (their meta part and body). Any bytes
//! are a field or a `DecodeError`, never a panic or a read past the body;
//! a field that decodes encodes to the same bytes.

#![no_main]

use libfuzzer_sys::fuzz_target;
use snet_core::FieldBytes;

fuzz_target!(|data: &[u8]| {
    // The first byte says how long the meta part is (the codec's own is 9).
    let Some((&n, rest)) = data.split_first() else {
        return;
    };
    let (meta, body) = rest.split_at((n as usize % 16).min(rest.len()));
    let codec = c4snet::codec();
    let Ok(v) = codec.decode(meta, FieldBytes::copy_from(body)) else {
        return;
    };
    let mut m = Vec::new();
    v.encode_meta(&mut m);
    assert_eq!(&m[..], meta, "meta changed");
    assert_eq!(v.body(), body, "body changed");
    assert_eq!(v.encoded_len(), meta.len() + body.len());
    let _ = v.portable();
});
