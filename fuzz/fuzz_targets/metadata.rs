//! Fuzz target: the `<metadata>` reader of the front end
//! (`snet_front::metadata`), on any text after `<metadata`. It must never
//! panic; a block it reads ends inside the text, and the questions the
//! compiler asks of it (which interface a box has, which boxes it names)
//! have answers.

#![no_main]

use libfuzzer_sys::fuzz_target;
use snet_front::diag::Diagnostics;
use snet_front::metadata::{self, Metadata, ScopedBlock};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let src = if text.starts_with("<metadata") {
        text.to_string()
    } else {
        format!("<metadata>{text}")
    };
    let mut diags = Diagnostics::default();
    if let Some((block, end)) = metadata::parse(&src, 0, &mut diags) {
        assert!(end <= src.len() && src.is_char_boundary(end), "end {end}");
        let m = Metadata {
            blocks: vec![
                ScopedBlock {
                    scope: vec![],
                    block: block.clone(),
                },
                ScopedBlock {
                    scope: vec!["a".into()],
                    block,
                },
            ],
        };
        let _ = m.box_interface(&["a", "b"], "f");
        let _ = m.box_interface(&[], "g");
        for b in m.box_mentions() {
            assert!(b.span.end <= src.len(), "a mention outside the text");
        }
    }
});
