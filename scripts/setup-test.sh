#!/usr/bin/env bash
# Installs what the test command (scripts/test) needs beyond the demo's
# set-up (scripts/setup.sh, run first), idempotently and silently when
# nothing is missing: valgrind, rustfmt and clippy, the minimum supported
# Rust, nightly with Miri, and cargo-fuzz.
set -euo pipefail
cd "$(dirname "$0")/.."
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

# Nightly with Miri: the engine's unsafe code is checked under Miri in CI.
if ! cargo +nightly miri --version >/dev/null 2>&1; then
  rustup toolchain install nightly --profile minimal --component miri
fi

# cargo-fuzz (on nightly): the test command runs every fuzz target for a
# bounded time (fuzz/run).
if ! cargo +nightly fuzz --version >/dev/null 2>&1; then
  cargo install cargo-fuzz --locked
fi

# The Python package's tests (scripts/python-test): a virtual environment
# with pytest and maturin (maturin builds the wheel; the tests themselves
# load the extension cargo builds).
if ! target/py-venv/bin/python -c "import pytest" >/dev/null 2>&1 \
   || [ ! -x target/py-venv/bin/maturin ]; then
  python3 -m venv target/py-venv
  target/py-venv/bin/pip install -q --disable-pip-version-check pytest "maturin>=1.7,<2"
fi
