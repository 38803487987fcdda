# The test toolchains, pinned: sourced by scripts/setup-test.sh (which
# installs them), scripts/test (Miri) and fuzz/run (cargo-fuzz), and named
# by the docs as `. scripts/toolchains.sh; cargo +"$SNET_NIGHTLY" ...`.
# A newer nightly or cargo-fuzz can turn CI red with no change of ours, so
# these move forward on purpose, in a commit of their own: change the two
# lines, run scripts/setup-test.sh and scripts/test, fix what they find.
#
# SNET_NIGHTLY: a dated nightly from the rustup server, with the components
# miri and rust-src (Miri builds its standard library from rust-src).
SNET_NIGHTLY=nightly-2026-05-20
# SNET_CARGO_FUZZ: the cargo-fuzz release `cargo install --locked` builds.
SNET_CARGO_FUZZ=0.13.2
