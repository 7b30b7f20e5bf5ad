#!/usr/bin/env bash
# raw_permission: ibv_create_qp(IBV_QPT_RAW_PACKET) needs CAP_NET_RAW, as with the kernel
# (raw_permission.py, with pyverbs). This shell's own capability decides what to expect; as
# root the program also runs once with CAP_NET_RAW dropped (setpriv), and must get EPERM.
# usage: raw_permission.sh RDMAEMU
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
emu_setup "$1"
PY=$(dirname "${BASH_SOURCE[0]}")/raw_permission.py
/usr/bin/python3 -c 'import pyverbs.qp' 2>/dev/null || fail "pyverbs not found (package python3-pyverbs)"
emu_up 1

run_py() {
    local label=$1 expect=$2 rc=0
    shift 2
    PYTHONWARNINGS=ignore timeout 60 "$@" "$RDMAEMU" run --host 1 -- /usr/bin/python3 "$PY" \
        "expect=$expect" >"$EMU_WORK/$label.out" 2>&1 || rc=$?
    cat "$EMU_WORK/$label.out"
    ((rc == 0)) || fail "$label: raw_permission.py expect=$expect exited $rc"
    ok "$label: $(tail -n 1 "$EMU_WORK/$label.out")"
}

# CAP_NET_RAW is bit 13 of CapEff.
capeff=$(awk '/^CapEff:/ {print $2}' /proc/self/status)
if (((16#$capeff >> 13) & 1)); then
    step "with CAP_NET_RAW"
    run_py with ok
    step "CAP_NET_RAW dropped (setpriv)"
    run_py without eperm setpriv --bounding-set -net_raw --inh-caps -net_raw --
else
    step "without CAP_NET_RAW (this shell has none)"
    run_py without eperm
fi
