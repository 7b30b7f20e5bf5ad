#!/usr/bin/env bash
# transports: the other unmodified rdma-core example programs and perftest transports between
# hosts 1 and 2: ibv_uc_pingpong, ibv_ud_pingpong, ibv_srq_pingpong; ibv_rc_pingpong with the
# new post-send API (-N) and with completion timestamps from an extended CQ (-t);
# ibv_xsrq_pingpong (XRC) at several message sizes; perftest over UC (send, write) and UD (send
# bw and latency). Both ends must exit 0 and report their results.
# usage: transports.sh RDMAEMU
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
emu_setup "$1"
ITERS=200
emu_up 2

# pingpong LABEL PROGRAM [ARGS...]: both ends exit 0 and print "ITERS iters in".
pingpong() {
    local label=$1
    shift
    local port
    port=$(free_tcp_port)
    local cmd=("$@" -g 0 -p "$port" -n "$ITERS")
    emu_pair "$label" 1 2 60 -- "${cmd[@]}"
    if ((PAIR_SERVER_RC != 0 || PAIR_CLIENT_RC != 0)); then
        emu_pair_dump "$label"
        fail "${cmd[*]}: server exited $PAIR_SERVER_RC, client $PAIR_CLIENT_RC"
    fi
    grep -qE "^$ITERS iters in [0-9.]+ seconds" "$EMU_WORK/$label.client" || {
        emu_pair_dump "$label"
        fail "${cmd[*]}: the client printed no '$ITERS iters in' line"
    }
    ok "${cmd[*]}: ${PAIR_SECS}s; $(grep -E 'iters in' "$EMU_WORK/$label.client")"
}

step "rdma-core's example programs"
pingpong uc ibv_uc_pingpong
pingpong ud ibv_ud_pingpong
pingpong srq ibv_srq_pingpong
pingpong rc_new_post_send ibv_rc_pingpong -N
pingpong rc_timestamps ibv_rc_pingpong -t
grep -q "completion clock cycles" "$EMU_WORK/rc_timestamps.client" ||
    fail "ibv_rc_pingpong -t printed no completion timestamps"
ok "ibv_rc_pingpong -t: $(grep -m1 'Average receive completion clock cycles' "$EMU_WORK/rc_timestamps.client")"

# xsrq LABEL [ARGS...]: ibv_xsrq_pingpong (XRC domain, XRC SRQ, XRC_SEND/XRC_RECV QPs): both
# ends exit 0 and print "success" (it prints no "iters in" line).
xsrq() {
    local label=$1
    shift
    local port
    port=$(free_tcp_port)
    local cmd=(ibv_xsrq_pingpong -g 0 -p "$port" "$@")
    emu_pair "$label" 1 2 60 -- "${cmd[@]}"
    if ((PAIR_SERVER_RC != 0 || PAIR_CLIENT_RC != 0)) ||
        ! grep -qx success "$EMU_WORK/$label.server" ||
        ! grep -qx success "$EMU_WORK/$label.client"; then
        emu_pair_dump "$label"
        fail "${cmd[*]}: server exited $PAIR_SERVER_RC, client $PAIR_CLIENT_RC (both must print success)"
    fi
    ok "${cmd[*]}: ${PAIR_SECS}s"
}

step "XRC: ibv_xsrq_pingpong"
xsrq xsrq_4k -n "$ITERS"            # 4096 bytes: FIRST, MIDDLE, LAST at path MTU 1024
xsrq xsrq_1 -s 1 -n "$ITERS"        # one byte: SEND_ONLY with pad
xsrq xsrq_64k_mtu4096 -s 65536 -m 4096 -n 50
xsrq xsrq_events -e -s 3000 -n 50   # sleeping on completion events of the XRC SRQ's CQ

step "perftest over UC and UD"
emu_perftest 1 60 ib_send_bw -c UC -n 200
emu_perftest 1 60 ib_write_bw -c UC -n 200
emu_perftest 1 60 ib_send_bw -c UD -n 200
emu_perftest 1 60 ib_send_lat -c UD -n 200
