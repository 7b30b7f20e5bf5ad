#!/bin/sh
# Checks that one of our libraries (libibverbs.so.1, librdmacm.so.1) exports exactly what
# rdma-core's does: every defined dynamic symbol with its binding, type (function/object) and
# version, the non-default name@IBVERBS_1.0 compat ones and the version-node symbols included,
# and the version definitions with their inheritance chain. Prints a diff (system on the left,
# ours on the right) on mismatch.
#
# usage: exported_symbols.sh OUR_LIBRARY [SYSTEM_LIBRARY]
# Exits 77 (skipped) when the system library or objdump is missing.
set -eu

ours=${1:?usage: $0 OUR_LIBRARY [SYSTEM_LIBRARY]}
system=${2:-/usr/lib/x86_64-linux-gnu/libibverbs.so.1}

if ! command -v objdump >/dev/null 2>&1; then
    echo "SKIP: objdump not found"
    exit 77
fi
if [ ! -e "$system" ]; then
    echo "SKIP: no system library at $system"
    exit 77
fi
if [ ! -e "$ours" ]; then
    echo "FAIL: $ours does not exist"
    exit 1
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# One line per defined dynamic symbol: "<binding> <type> <version> <name>". objdump -T prints
#   ADDR BIND TYPE SECTION SIZE VERSION NAME
# with the version in parentheses when it is not the default one, e.g. "(IBVERBS_1.0)".
exports() {
    objdump -T "$1" | awk '
        NF >= 7 && $4 != "*UND*" && ($2 == "g" || $2 == "w" || $2 == "u") {
            print $2, $3, $(NF - 1), $NF
        }' | LC_ALL=C sort
}

# The "Version definitions" block of objdump -p: index, flags, hash, name, then parents.
verdefs() {
    objdump -p "$1" | awk '
        /^Version definitions:/ { on = 1; next }
        on && /^Version References:/ { exit }
        on && NF > 0 { $1 = $1; print }'
}

exports "$system" >"$work/system.syms"
exports "$ours" >"$work/ours.syms"
verdefs "$system" >"$work/system.verdefs"
verdefs "$ours" >"$work/ours.verdefs"

status=0
if ! diff -u "$work/system.syms" "$work/ours.syms" >"$work/syms.diff"; then
    echo "FAIL: dynamic symbols differ (- only in $system, + only in $ours):"
    cat "$work/syms.diff"
    status=1
fi
if ! diff -u "$work/system.verdefs" "$work/ours.verdefs" >"$work/verdefs.diff"; then
    echo "FAIL: version definitions differ (- $system, + $ours):"
    cat "$work/verdefs.diff"
    status=1
fi
if [ "$status" -eq 0 ]; then
    echo "OK: $(wc -l <"$work/ours.syms") exported symbols and $(grep -c . "$work/ours.verdefs") version-definition lines match $system"
fi
exit "$status"
