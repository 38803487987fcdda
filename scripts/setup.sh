#!/usr/bin/env bash
# Installs what a fresh machine of this kind lacks, idempotently.
# Rust comes from rustup; Debian packages from apt. Safe to run repeatedly.
set -euo pipefail

need_apt=()
want_pkg() { dpkg -s "$1" >/dev/null 2>&1 || need_apt+=("$1"); }

# C toolchain for C boxes and the long double helper; valgrind for leak checks.
want_pkg gcc
want_pkg valgrind
# MPI (Distributed S-Net across processes and machines): Open MPI's mpirun,
# library and mpicc (the MPI transport is built against it).
want_pkg openmpi-bin
want_pkg libopenmpi-dev

if [ ${#need_apt[@]} -gt 0 ]; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need_apt[@]}"
fi

if ! command -v cargo >/dev/null 2>&1; then
  curl -sSf https://sh.rustup.rs | sh -s -- -y --profile minimal
  # shellcheck disable=SC1091
  . "$HOME/.cargo/env"
fi

# rustfmt and clippy: the test command's hygiene gates.
for comp in rustfmt clippy; do
  rustup component list --installed 2>/dev/null | grep -q "^$comp" || rustup component add "$comp"
done

# The minimum supported Rust (rust-version in Cargo.toml), checked by the test command.
MSRV=$(sed -n 's/^rust-version = "\(.*\)"/\1/p' "$(dirname "$0")/../Cargo.toml")
if ! rustup toolchain list | grep -q "^$MSRV"; then
  rustup toolchain install "$MSRV" --profile minimal
fi

# Nightly with Miri: the engine's unsafe code is checked under Miri in CI.
if ! cargo +nightly miri --version >/dev/null 2>&1; then
  rustup toolchain install nightly --profile minimal --component miri
fi
