#!/usr/bin/env bash
# Runs every C-box conformance program (tests/conformance/c/*) under valgrind
# memcheck (one node, and two loopback nodes) and fails if any run has a memory error or a *definite* leak
# (field references a box or the runtime forgot to release).
#
# Usage: .ci/leakcheck.sh [case-substring]
# Needs: valgrind, a C compiler, and `cargo build --release` (done here).
# Error cases (expected-error.txt / expected-build-error.txt) are skipped:
# they exit early on purpose (crash, misuse) and are not about leaks; so
# are cases with a `leakcheck-skip` file (it says why).
set -euo pipefail
shopt -s nullglob   # a case whose boxes are all inline C has no .c file, most no .cpp
cd "$(dirname "$0")/.."
command -v valgrind >/dev/null || { echo "leakcheck: valgrind is not installed (scripts/setup.sh)" >&2; exit 2; }
cargo build --release --quiet
SNET=target/release/snet
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# read_lines FILE ARRAY: appends FILE's non-empty lines, trimmed, to ARRAY
# (nothing if FILE does not exist).
read_lines() {
    local -n into=$2
    [[ -f "$1" ]] || return 0
    local line
    while IFS= read -r line || [[ -n "$line" ]]; do
        line="${line#"${line%%[![:space:]]*}"}"
        line="${line%"${line##*[![:space:]]}"}"
        [[ -n "$line" ]] && into+=("$line")
    done < "$1"
}
# check_case DIR: builds one case and runs its setups under valgrind; prints
# one line per run ("ok CASE (SETUP)" or "LEAK/ERROR: CASE (SETUP)" and
# valgrind's log), exits nonzero if any run failed. Cases run in parallel
# (one per core: valgrind runs a program's threads one at a time), each in
# a scratch directory of its own.
check_case() {
    shopt -s nullglob
    local dir=${1%/} case work
    case=$(basename "$dir")
    work="$tmp/$case"
    mkdir -p "$work"
    "$SNET" build "$dir/prog.snet" "$dir"/*.c "$dir"/*.cpp "$dir"/*.cc "$dir"/*.cxx -o "$work/prog" || {
        echo "LEAK/ERROR: $case (build failed)"; return 1; }
    # Extra arguments: one per line (as the conformance runner reads them).
    local args=() vgargs=()
    read_lines "$dir/args" args
    # Extra valgrind options (same format), e.g. `--max-stackframe=N` for a
    # box with a frame of more than 2 MB, which valgrind would otherwise
    # take for a stack switch (and report its accesses as invalid).
    read_lines "$dir/valgrind-args" vgargs
    # One node at 1 worker, and two loopback nodes at 2 workers with random
    # placements and every field by reference (the distribution layer's
    # field store, proxies and managers; cases with pointer fields stay on
    # one node, as in the conformance runner). Valgrind runs one thread at a
    # time, so more workers on one node would find nothing these miss.
    local dist=(--nodes 2 --transport loopback --scatter 3 --inline-fields 0)
    local setups=("-w 1") setup s extra failed=0
    [[ -f "$dir/nodes" ]] || setups+=("-w 2 dist")
    for setup in "${setups[@]}"; do
        read -r -a s <<< "$setup"
        extra=("${s[0]}" "${s[1]}")
        [[ "${s[2]:-}" == dist ]] && extra+=("${dist[@]}")
        if SNET_SYSTEM_ALLOC=1 valgrind -q "${vgargs[@]}" --leak-check=full --show-leak-kinds=definite --errors-for-leak-kinds=definite \
                --error-exitcode=99 "$work/prog" -i "$dir/input.xml" -o "$work/out.xml" "${extra[@]}" "${args[@]}" \
                2> "$work/log"; then
            echo "ok $case ($setup)"
        else
            echo "LEAK/ERROR: $case ($setup)"
            cat "$work/log"
            failed=1
        fi
    done
    return $failed
}
export -f read_lines check_case
export SNET tmp
cases=()
for dir in tests/conformance/c/*/; do
    case=$(basename "$dir")
    [[ -f "$dir/prog.snet" ]] || continue
    [[ -n "${1:-}" && "$case" != *"$1"* ]] && continue
    [[ -f "$dir/expected-error.txt" || -f "$dir/expected-build-error.txt" ]] && continue
    # A case whose `leakcheck-skip` file says why (e.g. hundreds of
    # thousands of records through code the other cases cover already).
    [[ -f "$dir/leakcheck-skip" ]] && continue
    cases+=("$dir")
done
fail=0
touch "$tmp/results"
if [[ ${#cases[@]} -gt 0 ]]; then
    printf '%s\0' "${cases[@]}" | xargs -0 -n 1 -P "$(nproc)" bash -c 'check_case "$1"' _ > "$tmp/results" || fail=1
fi
grep -v '^ok ' "$tmp/results" || true
n=$(grep -c -E '^(ok |LEAK/ERROR: )' "$tmp/results" || true)
echo "leakcheck: ${#cases[@]} cases, $n runs, $([[ $fail == 0 ]] && echo clean || echo FAILED)"
exit $fail
