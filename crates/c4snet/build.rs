//! Compiles the C side of the crate:
//! - `csrc/out.c`: `C4SNetOut` is variadic, and stable Rust cannot define a
//!   C variadic function, so the C side reads the `va_list` using the
//!   per-variant argument kinds the Rust side hands it; beside it
//!   `C4SNetOutValues` (the header's macro's call), whose common case
//!   reads the same per-thread slot, a C thread-local;
//! - `csrc/ldouble.c`: formats and parses `long double`, which Rust cannot
//!   name (x87 80-bit extended precision on x86_64, IEEE quad on aarch64):
//!   `printf("%.32Le")` and `strtold` must be C's own.

fn main() {
    println!("cargo:rerun-if-changed=csrc/out.c");
    println!("cargo:rerun-if-changed=csrc/ldouble.c");
    println!("cargo:rerun-if-changed=include/C4SNet.h");
    let mut build = cc::Build::new();
    build
        .file("csrc/out.c")
        .file("csrc/ldouble.c")
        .include("include")
        .warnings(true)
        // A box's output is a call of `C4SNetOutValues` or `C4SNetOut`:
        // no frame pointer (which `cc` adds with debug information), and
        // on x86-64 the thread-local slot reached by a TLS descriptor,
        // whose call saves every register but one (the default
        // `__tls_get_addr` call makes the functions save four, even where
        // the link turns the call into a plain load, as in an executable).
        .force_frame_pointer(false);
    if std::env::var("CARGO_CFG_TARGET_ARCH").as_deref() == Ok("x86_64") {
        build.flag_if_supported("-mtls-dialect=gnu2");
    }
    build.compile("c4snet_out");
}
