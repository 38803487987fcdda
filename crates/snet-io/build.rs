//! Compiles the tiny C helper that formats and parses `long double`, which
//! Rust cannot name (x87 80-bit extended precision on x86_64, IEEE quad on
//! aarch64): `printf("%.32Le")` and `strtold` must be C's own.

fn main() {
    println!("cargo:rerun-if-changed=csrc/ldouble.c");
    cc::Build::new()
        .file("csrc/ldouble.c")
        .warnings(true)
        .compile("snet_io_ldouble");
}
