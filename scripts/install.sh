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
    (cd "$src" && cargo build --release --quiet)
  fi
  # Cargo's target directory: $CARGO_TARGET_DIR, relative to the source tree.
  target=${CARGO_TARGET_DIR:-target}
  case "$target" in /*) ;; *) target=$src/$target ;; esac
  from=$target/release
fi

exe=$from/snet
[ -x "$exe" ] || { echo "install.sh: no snet executable in $from" >&2; exit 1; }
# Built as a workspace member, the runtime library lies next to snet (and in
# deps/); built only as a dependency of snet-cli (cargo test), cargo leaves
# it in deps/ alone, with a hash in its name. The newest is the one built
# with this snet.
# shellcheck disable=SC2012
lib=$(ls -t "$from"/libsnet_runner.a "$from"/deps/libsnet_runner-*.a 2>/dev/null | head -n 1 || true)
[ -n "$lib" ] && [ -f "$lib" ] || { echo "install.sh: no libsnet_runner.a in $from or $from/deps" >&2; exit 1; }
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
