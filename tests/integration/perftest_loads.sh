#!/usr/bin/env bash
# perftest_loads: perftest binaries load with our libibverbs.so.1 in place of the system one.
# They NEED libmlx5.so.1 and libefa.so.1 (and librdmacm.so.1), whose IBVERBS_PRIVATE_34 imports
# (ibv_cmd_*, verbs_*) must bind to our library's private symbols; a missing one is an
# "undefined symbol" / "symbol lookup error" at load (the binaries are BIND_NOW).
#
# usage: perftest_loads.sh RDMAEMU LIBDIR
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
LIBDIR=$(realpath "$2")
emu_setup "$1"
emu_up 1

BINARIES=(ib_send_bw ib_send_lat ib_write_bw ib_write_lat ib_read_bw ib_read_lat ib_atomic_bw
    ib_atomic_lat)
# shellcheck disable=SC2016 # backquotes are literal: the loader's "version `X' not found"
LOAD_ERRORS='undefined symbol|symbol lookup error|no version information available|error while loading shared libraries|version `[^`]*'"'"' not found|cannot open shared object'

step "ldd through rdmaemu run resolves libibverbs.so.1 to our library"
rc=0
emu_run 1 -- ldd "$(command -v ib_send_bw)" >"$EMU_WORK/ldd.out" 2>&1 || rc=$?
cat "$EMU_WORK/ldd.out"
((rc == 0)) || fail "rdmaemu run --host 1 -- ldd ib_send_bw exited $rc"
resolved=$(awk '$1 == "libibverbs.so.1" { print $3 }' "$EMU_WORK/ldd.out")
[[ -n $resolved && -e $LIBDIR/libibverbs.so.1 &&
    $(realpath "$resolved") == $(realpath "$LIBDIR/libibverbs.so.1") ]] ||
    fail "libibverbs.so.1 resolves to '$resolved', expected our $LIBDIR/libibverbs.so.1"
ok "libibverbs.so.1 => $resolved"
for lib in libmlx5.so.1 libefa.so.1 librdmacm.so.1; do
    grep -qE "^[[:space:]]+$lib => /" "$EMU_WORK/ldd.out" || fail "ldd: $lib not resolved"
done
ok "libmlx5.so.1, libefa.so.1, librdmacm.so.1 are NEEDED and found"

check_load() {
    local label=$1 bin=$2
    shift 2
    local out=$EMU_WORK/$bin.$label.out rc=0
    emu_run 1 "$@" -- env LD_BIND_NOW=1 "$bin" -h >"$out" 2>&1 || rc=$?
    if grep -qE "$LOAD_ERRORS" "$out" || ((rc >= 127)); then
        echo "# rdmaemu run --host 1 $* -- env LD_BIND_NOW=1 $bin -h (exit $rc):"
        head -n 20 "$out"
        fail "$label: $bin -h did not load with our library (exit $rc): $(grep -E "$LOAD_ERRORS" "$out" | head -n 3)"
    fi
    grep -q '^Usage:' "$out" || {
        head -n 20 "$out"
        fail "$label: $bin -h (exit $rc) printed no usage text"
    }
    ok "$label: $bin -h loads (exit $rc, usage printed, no symbol errors)"
}

step "through LD_LIBRARY_PATH"
for b in "${BINARIES[@]}"; do check_load libpath "$b"; done
step "through LD_PRELOAD over the system library"
for b in ib_send_bw ib_write_bw; do check_load preload "$b" --preload; done
