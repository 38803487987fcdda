//! Fuzz target: the front end must never panic (or overflow its stack) on
//! any text. Run: `cargo +"$SNET_NIGHTLY" fuzz run parse -- -max_len=4096` (after `. scripts/toolchains.sh`)
//! (seed the corpus with `tests/front/*/*.snet` for faster coverage).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(src) = std::str::from_utf8(data) {
        let c = snet_front::compile("fuzz.snet", src, None);
        // Rendering must not panic either.
        let _ = snet_front::render(&c.diagnostics, "fuzz.snet", src, false);
        if let Some(g) = &c.graph {
            let _ = snet_front::dot::to_dot(g);
        }
    }
});
