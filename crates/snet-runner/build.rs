//! Gives each compilation of this crate its own identity,
//! `SNET_RUNNER_BUILD_ID`: the static library and the rlib that `snet`
//! links are made by one compilation, so the `snet` executable and the
//! `libsnet_runner.a` built with it hold the same identity, and `snet
//! build` and `scripts/install.sh` use it to pick that library among
//! others a target directory holds (another profile's, `cargo test`'s).
//!
//! Cargo reruns this script whenever a file of the package changes, which
//! is when the crate is compiled again.

use std::time::{SystemTime, UNIX_EPOCH};

fn main() {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let id = format!("{:x}{:x}", nanos, std::process::id());
    println!("cargo:rustc-env=SNET_RUNNER_BUILD_ID={id}");
}
