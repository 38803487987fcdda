#!/usr/bin/env bash
# Installs what the demo (scripts/demo) and a user's `snet` need on a fresh
# machine of this kind, idempotently and silently when nothing is missing:
# a C and a C++ compiler, Open MPI, Graphviz and Rust. The test command's extra tools
# (valgrind, rustfmt, clippy, the minimum supported Rust, the pinned nightly
# with Miri, cargo-fuzz)
# are scripts/setup-test.sh's job; it names its Debian packages as this
# script's arguments, so that one apt-get run installs everything missing.
#
# usage: scripts/setup.sh [MORE-DEBIAN-PACKAGES...]
set -euo pipefail

need_apt=()
want_pkg() { dpkg -s "$1" >/dev/null 2>&1 || need_apt+=("$1"); }

# C compiler: `snet build` compiles C boxes with it; c4snet's helpers and the
# MPI shim are C too.
want_pkg gcc
# C++ compiler: `snet build` compiles C++ box sources (.cpp, .cc, .cxx) with it.
want_pkg g++
# Open MPI: mpirun for distributed runs, and mpicc and mpi.h, which building
# the workspace needs (the MPI transport's shim is compiled against them).
want_pkg openmpi-bin
want_pkg libopenmpi-dev
# Graphviz: `snet graph --svg` lays the network out with its `dot`.
want_pkg graphviz
# rustup's installer is fetched with curl (only when Rust is missing).
command -v cargo >/dev/null 2>&1 || [ -x "$HOME/.cargo/bin/cargo" ] || want_pkg curl
for pkg in "$@"; do want_pkg "$pkg"; done

if [ ${#need_apt[@]} -gt 0 ]; then
  echo "setup: installing ${need_apt[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  # apt's chatter is shown only if it fails.
  log=$(mktemp)
  if ! { $SUDO apt-get update -qq &&
         DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need_apt[@]}"; } >"$log" 2>&1; then
    cat "$log" >&2
    rm -f "$log"
    echo "setup: installing ${need_apt[*]} failed" >&2
    exit 1
  fi
  rm -f "$log"
fi

# Rust (stable) through rustup, unless cargo is already there. Scripts that
# build afterwards put ~/.cargo/bin on PATH themselves.
if ! command -v cargo >/dev/null 2>&1 && [ ! -x "$HOME/.cargo/bin/cargo" ]; then
  echo "setup: installing Rust (stable) with rustup"
  curl -sSf https://sh.rustup.rs | sh -s -- -y -q --profile minimal
fi
