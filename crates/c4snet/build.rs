//! Compiles the C side of the crate:
//! - `csrc/out.c`: `C4SNetOut` is variadic, and stable Rust cannot define a
//!   C variadic function, so the C side reads the `va_list` using the
//!   per-variant argument kinds the Rust side hands it;
//! - `csrc/ldouble.c`: formats and parses `long double`, which Rust cannot
//!   name (x87 80-bit extended precision on x86_64, IEEE quad on aarch64):
//!   `printf("%.32Le")` and `strtold` must be C's own.

fn main() {
    println!("cargo:rerun-if-changed=csrc/out.c");
    println!("cargo:rerun-if-changed=csrc/ldouble.c");
    println!("cargo:rerun-if-changed=include/C4SNet.h");
    cc::Build::new()
        .file("csrc/out.c")
        .file("csrc/ldouble.c")
        .include("include")
        .warnings(true)
        .compile("c4snet_out");
}
