#!/usr/bin/env bash
# passthrough: the hardware backend without hardware. standin_libibverbs.so plays rdma-core's
# library (RDMAEMU_REAL_LIBIBVERBS); passthrough_check runs through our library in hardware,
# mixed and emulated mode and checks which calls reach the stand-in and what comes back. The
# verbs trace of the hardware run must show the stand-in's objects, its work requests and
# completions, and the argument-check warnings (also on stderr). A bad RDMAEMU_MODE and a
# missing real library give clear messages.
#
# usage: passthrough.sh RDMAEMU CHECK STANDIN_SO
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
CHECK=$2
STANDIN=$3
emu_setup "$1"
emu_up 1

run_mode() { # MODE: runs the check in that mode, trace and stderr in $EMU_WORK/MODE.*
    local mode=$1 rc=0
    emu_run 1 -- env RDMAEMU_MODE="$mode" RDMAEMU_REAL_LIBIBVERBS="$STANDIN" \
        RDMAEMU_TRACE="$EMU_WORK/$mode.trace" "$CHECK" "$mode" "$STANDIN" \
        >"$EMU_WORK/$mode.out" 2>"$EMU_WORK/$mode.err" || rc=$?
    cat "$EMU_WORK/$mode.out"
    ((rc == 0)) || { cat "$EMU_WORK/$mode.err"; fail "passthrough_check $mode exited $rc"; }
    ok "$(tail -1 "$EMU_WORK/$mode.out")"
}

expect_line() { # FILE REGEX WHAT
    grep -Eq -- "$2" "$1" || { cat "$1"; fail "$3: no line matching '$2' in $1"; }
    ok "$3"
}

for mode in hardware mixed emulated; do
    step "RDMAEMU_MODE=$mode"
    run_mode "$mode"
done

step "the hardware run's trace and warnings"
T=$EMU_WORK/hardware.trace
expect_line "$T" ' verb ibv_open_device\(dev\(standin0\)\) = ctx\(standin0\)$' "trace: open_device"
expect_line "$T" ' verb ibv_alloc_pd\(ctx\(standin0\)\) = pd\(93\)$' "trace: the stand-in's PD"
expect_line "$T" ' verb ibv_alloc_pd\(ctx\(standin0\)\) = NULL errno=EMFILE$' "trace: errno"
expect_line "$T" ' warn ibv_reg_mr: remote write and remote atomic need IBV_ACCESS_LOCAL_WRITE too \(ibv_reg_mr\(3\)\): access is IBV_ACCESS_REMOTE_WRITE; the emulator fails this with EINVAL$' \
    "trace: reg_mr warning"
expect_line "$T" ' warn ibv_modify_qp\(qp 0x4d\): IBV_QP_ACCESS_FLAGS\|IBV_QP_PKEY_INDEX\|IBV_QP_PORT missing for RESET->INIT on RC; the emulator fails this with EINVAL$' \
    "trace: modify_qp warning names the missing attributes"
expect_line "$T" ' wr send qp=0x4d wr_id=5 opcode=IBV_WR_SEND flags=IBV_SEND_SIGNALED sge=1 len=8 sg_list\[0\]=\{addr=0x[0-9a-f]+ length=8 lkey=0x1111\}$' \
    "trace: work request"
expect_line "$T" ' wr recv qp=0x4d wr_id=6 sge=1 len=8 sg_list\[0\]=\{addr=0x[0-9a-f]+ length=8 lkey=0x1111\}$' \
    "trace: receive request"
expect_line "$T" ' wc IBV_WC_SUCCESS opcode=IBV_WC_SEND qp=0x4d wr_id=9 len=0$' "trace: completion"
expect_line "$EMU_WORK/hardware.err" '^rdmaemu: warning: ibv_modify_qp\(qp 0x4d\)' "stderr: warning"
M=$EMU_WORK/mixed.trace
expect_line "$M" ' verb ibv_alloc_pd\(ctx\(emu0\)\) = pd\([0-9]+\)$' "mixed trace: emu0's PD"
expect_line "$M" ' verb ibv_alloc_pd\(ctx\(standin0\)\) = pd\(93\)$' "mixed trace: standin0's PD"
if grep -q ' warn ' "$EMU_WORK/emulated.trace"; then
    fail "emulated run has warnings: $(grep ' warn ' "$EMU_WORK/emulated.trace")"
fi
ok "no warnings in front of the emulated NIC (it answers for itself)"

step "rdmaemu status shows the mode programs get"
RDMAEMU_MODE=mixed RDMAEMU_REAL_LIBIBVERBS="$STANDIN" "$RDMAEMU" status >"$EMU_WORK/status.txt"
expect_line "$EMU_WORK/status.txt" "^mode mixed \(RDMAEMU_MODE\): rdma-core's devices from $STANDIN\$" "status: mixed mode"
"$RDMAEMU" status --json >"$EMU_WORK/status.json"
expect_line "$EMU_WORK/status.json" '"mode":"emulated"' "status --json: emulated by default"

step "bad settings give clear messages"
rc=0
emu_run 1 -- env RDMAEMU_MODE=bogus ibv_devices >"$EMU_WORK/bogus.out" 2>&1 || rc=$?
cat "$EMU_WORK/bogus.out"
expect_line "$EMU_WORK/bogus.out" 'RDMAEMU_MODE=bogus is not emulated, hardware or mixed; using emulated' "bad mode named"
expect_line "$EMU_WORK/bogus.out" '^ +emu0 ' "bad mode falls back to emulated"
rc=0
emu_run 1 -- env RDMAEMU_MODE=hardware RDMAEMU_REAL_LIBIBVERBS=/nonexistent/libibverbs.so.1 \
    ibv_devices >"$EMU_WORK/missing.out" 2>&1 || rc=$?
cat "$EMU_WORK/missing.out"
((rc != 0)) || fail "ibv_devices without a real library exited 0"
expect_line "$EMU_WORK/missing.out" "cannot load rdma-core's libibverbs" "missing real library named"
echo "passthrough: all checks passed"
