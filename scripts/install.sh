#!/usr/bin/env bash
# Installs snet for a user: builds the release (unless told where built
# artifacts already are) and copies
#   PREFIX/bin/snet                    the command
#   PREFIX/lib/snet/libsnet_runner.a   the runtime `snet build` links into programs
#   PREFIX/include/snet/C4SNet.h       the box interface, and the original
#   PREFIX/include/snet/bool.h         toolchain's bool.h, for compiling box
#                                      objects yourself (cc -I PREFIX/include/snet)
# The installed `snet build` finds the library relative to its own executable.
#
# usage: scripts/install.sh [--from DIR | --no-build] [PREFIX]
#   PREFIX      where to install (default: $HOME/.local; e.g. /usr/local)
#   --from DIR  install what is already built in DIR, a cargo profile
#               directory such as target/release, instead of building
#   --no-build  the same as --from "${CARGO_TARGET_DIR:-target}/release"
set -euo pipefail

usage() { sed -n 's/^# \{0,1\}//; 11,15p' "$0" >&2; exit 2; }

from=""
build=yes
prefix=""
while [ $# -gt 0 ]; do
  case "$1" in
    --from) [ $# -ge 2 ] || usage; from=$2; shift 2 ;;
    --from=*) from=${1#--from=}; shift ;;
    --no-build) build=no; shift ;;
    -h|--help) usage ;;
    -*) echo "install.sh: unknown option $1" >&2; usage ;;
    *) [ -z "$prefix" ] || usage; prefix=$1; shift ;;
  esac
done
prefix=${prefix:-$HOME/.local}
src=$(cd "$(dirname "$0")/.." && pwd)

if [ -z "$from" ]; then
  if [ "$build" = yes ]; then
    command -v cargo >/dev/null 2>&1 || . "$HOME/.cargo/env"
    echo "building snet (cargo build --release; a few minutes the first time)..."
    # Cargo's own progress (the crates it compiles, and a progress bar on
    # a terminal) goes to standard error.
    (cd "$src" && cargo build --release)
  fi
  # Cargo's target directory: $CARGO_TARGET_DIR, relative to the source tree.
  target=${CARGO_TARGET_DIR:-target}
  case "$target" in /*) ;; *) target=$src/$target ;; esac
  from=$target/release
fi

exe=$from/snet
[ -x "$exe" ] || { echo "install.sh: no snet executable in $from" >&2; exit 1; }
# The runtime library built with this snet: each compilation of the
# runtime gives it an identity (crates/snet-runner/build.rs), which the
# snet executable and that library both hold. Built as a workspace member
# it lies next to snet (and in deps/); built only as a dependency of
# snet-cli, in deps/ alone, with a hash in its name, maybe beside others
# (`cargo test`'s, another feature set's).
id=$(grep -a -o -m 1 'snet-runner-build:[0-9a-f]*' "$exe" | head -n 1 || true)
[ -n "$id" ] || { echo "install.sh: $exe holds no runtime build identity (not a snet built from this source?)" >&2; exit 1; }
lib=""
for f in "$from"/libsnet_runner.a "$from"/deps/libsnet_runner-*.a; do
  if [ -f "$f" ] && grep -a -q -F "$id" "$f"; then lib=$f; break; fi
done
[ -n "$lib" ] || {
  echo "install.sh: no libsnet_runner.a built with $exe in $from or $from/deps;" >&2
  echo "  build both with 'cargo build --release' (or run install.sh without --no-build)" >&2
  exit 1
}
headers=$src/crates/c4snet/include

install -d "$prefix/bin" "$prefix/lib/snet" "$prefix/include/snet"
install -m 755 "$exe" "$prefix/bin/snet"
install -m 644 "$lib" "$prefix/lib/snet/libsnet_runner.a"
install -m 644 "$headers/C4SNet.h" "$headers/bool.h" "$prefix/include/snet/"

echo "installed $("$prefix/bin/snet" --version) in $prefix"
case ":$PATH:" in
  *":$prefix/bin:"*) ;;
  *) echo "note: $prefix/bin is not on PATH; add it, e.g. export PATH=\"$prefix/bin:\$PATH\"" ;;
esac
