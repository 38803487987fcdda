#!/usr/bin/env bash
# Installs what the test command (scripts/test) needs beyond the demo's
# set-up (scripts/setup.sh, run first), idempotently and silently when
# nothing is missing: valgrind, rustfmt and clippy, the minimum supported
# Rust, the pinned nightly with Miri, and the pinned cargo-fuzz (both in
# scripts/toolchains.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/toolchains.sh
# valgrind: the leak check of the C-box programs (.ci/leakcheck.sh).
scripts/setup.sh valgrind
command -v cargo >/dev/null 2>&1 || . "$HOME/.cargo/env"

# rustfmt and clippy: the test command's hygiene gates.
for comp in rustfmt clippy; do
  rustup component list --installed 2>/dev/null | grep -q "^$comp" || rustup component add "$comp"
done

# The minimum supported Rust (rust-version in Cargo.toml), checked by the test command.
MSRV=$(sed -n 's/^rust-version = "\(.*\)"/\1/p' Cargo.toml)
if ! rustup toolchain list | grep -q "^$MSRV"; then
  rustup toolchain install "$MSRV" --profile minimal
fi

# The pinned nightly with Miri (and rust-src, which Miri builds its standard
# library from): the engine's unsafe code is checked under Miri in CI.
if ! cargo +"$SNET_NIGHTLY" miri --version >/dev/null 2>&1 ||
   ! rustup +"$SNET_NIGHTLY" component list --installed 2>/dev/null | grep -q '^rust-src'; then
  rustup toolchain install "$SNET_NIGHTLY" --profile minimal --component miri,rust-src
fi

# The pinned cargo-fuzz (run on the pinned nightly): the test command runs
# every fuzz target for a bounded time (fuzz/run). Built with --debug: it
# only drives cargo and libFuzzer (the fuzz targets themselves are built
# optimised by `cargo fuzz build -O`), and an unoptimised build of it takes
# a fraction of the CPU time of an optimised one on a fresh CI machine.
if [ "$(cargo +"$SNET_NIGHTLY" fuzz --version 2>/dev/null)" != "cargo-fuzz $SNET_CARGO_FUZZ" ]; then
  cargo install cargo-fuzz --version "$SNET_CARGO_FUZZ" --locked --debug
fi

# The Python package's tests (scripts/python-test): a virtual environment
# with pytest. Not maturin: it builds the wheel (docs/python.md), which no
# test does; the tests load the extension cargo builds.
if [ "$(target/py-venv/bin/python -m pytest --version 2>/dev/null)" != "pytest 9.2.0" ]; then
  python3 -m venv target/py-venv
  target/py-venv/bin/pip install -q --disable-pip-version-check pytest==9.2.0
fi
