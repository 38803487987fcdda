//! Fuzz target: C4SNet's text codec, textual (`(int[2])1,2`) and binary
//! (`(int[2])AQAAAAIAAAA=`) mode, as a record file's `<field>` values reach
//! it. Any text is a value or a `FieldError`, never a panic. A value that
//! parses is written and read again: the text it writes is a fixed point,
//! and in binary mode (and for integers in textual mode) the bytes survive.

#![no_main]

use c4snet::text::{format_binary, format_textual, parse_binary, parse_textual};
use c4snet::CType;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let Ok(text) = std::str::from_utf8(rest) else {
        return;
    };
    let binary = mode & 1 == 1;
    let (parse, format): (fn(&str) -> _, fn(&_, &mut Vec<u8>)) = if binary {
        (parse_binary, format_binary)
    } else {
        (parse_textual, format_textual)
    };
    let Ok(d) = parse(text) else { return };
    let mut out = Vec::new();
    format(&d, &mut out);
    let t1 = String::from_utf8(out).expect("the codec writes UTF-8");
    let again = parse(&t1).expect("the codec's own text must parse");
    assert_eq!((again.ctype(), again.len()), (d.ctype(), d.len()));
    let floats = matches!(d.ctype(), CType::Float | CType::Double | CType::LDouble);
    if binary || !floats {
        assert_eq!(again.bytes(), d.bytes(), "{text:?} -> {t1:?}");
    }
    let mut out2 = Vec::new();
    format(&again, &mut out2);
    assert_eq!(t1.as_bytes(), &out2[..], "writing is not a fixed point");
});
