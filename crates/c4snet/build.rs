//! Compiles `csrc/out.c`: `C4SNetOut` is variadic, and stable Rust cannot
//! define a C variadic function, so the C side reads the `va_list` using the
//! per-variant argument kinds the Rust side hands it.

fn main() {
    println!("cargo:rerun-if-changed=csrc/out.c");
    println!("cargo:rerun-if-changed=include/C4SNet.h");
    cc::Build::new()
        .file("csrc/out.c")
        .include("include")
        .warnings(true)
        .compile("c4snet_out");
}
