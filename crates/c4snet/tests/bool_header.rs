//! `include/bool.h` (the original toolchain's `<bool.h>`) compiles with and
//! without `<stdbool.h>`, in either include order, in every C standard the
//! compiler knows, with no warnings: `bool` is `int` when it comes alone
//! before C23, and stays `<stdbool.h>`'s `_Bool` when that was included first.

use std::path::Path;
use std::process::Command;

const STDS: [&str; 6] = ["c89", "c99", "c11", "c17", "gnu11", "c2x"];

fn cc() -> String {
    std::env::var("CC").unwrap_or_else(|_| "cc".into())
}

/// Whether the compiler accepts `-std=std`.
fn supports(dir: &Path, std: &str) -> bool {
    let f = dir.join("empty.c");
    std::fs::write(&f, "int snet_empty;\n").unwrap();
    Command::new(cc())
        .args([&format!("-std={std}"), "-fsyntax-only"])
        .arg(&f)
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false)
}

#[test]
fn bool_header_works_alone_and_with_stdbool_in_either_order() {
    let dir = std::env::temp_dir().join(format!("c4snet-bool-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("bool.h"), c4snet::BOOL_HEADER).unwrap();
    let use_bool = "static int pick(bool b) { return b ? true : false; }\n\
                    int snet_check(void) { bool t = true; bool f = false; return pick(t) + (f == false) + (true == 1) + (false == 0); }\n";
    // (includes, the size `bool` must have before C23)
    let cases = [
        ("#include <bool.h>\n", "sizeof(int)"),
        ("#include <stdbool.h>\n#include <bool.h>\n", "sizeof(_Bool)"),
        ("#include <bool.h>\n#include <stdbool.h>\n", "sizeof(_Bool)"),
        ("#include <bool.h>\n#include <bool.h>\n", "sizeof(int)"),
    ];
    let mut tried = 0;
    for std in STDS {
        if !supports(&dir, std) {
            continue;
        }
        let c23 = std == "c2x";
        for (includes, size) in cases {
            let mut src = String::from(includes);
            src.push_str(use_bool);
            if !c23 && std != "c89" {
                src.push_str(&format!(
                    "typedef char snet_bool_size[sizeof(bool) == {size} ? 1 : -1];\n"
                ));
            }
            let file = dir.join("check.c");
            std::fs::write(&file, &src).unwrap();
            let out = Command::new(cc())
                .args([
                    &format!("-std={std}"),
                    "-Wall",
                    "-Wextra",
                    "-pedantic",
                    "-Werror",
                    "-fsyntax-only",
                    "-I",
                ])
                .arg(&dir)
                .arg(&file)
                .output()
                .expect("a C compiler (cc) is needed for this test");
            assert!(
                out.status.success(),
                "-std={std}:\n{src}\n{}",
                String::from_utf8_lossy(&out.stderr)
            );
            tried += 1;
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        tried >= 12,
        "the compiler should know at least c99, c11 and c17 ({tried} checks ran)"
    );
}

#[test]
fn embedded_bool_header_is_the_checked_in_one() {
    assert_eq!(c4snet::BOOL_HEADER, include_str!("../include/bool.h"));
}
