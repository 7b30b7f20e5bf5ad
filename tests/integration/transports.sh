#!/usr/bin/env bash
# transports: the other unmodified rdma-core example programs and perftest transports between
# hosts 1 and 2: ibv_uc_pingpong, ibv_ud_pingpong, ibv_srq_pingpong; ibv_rc_pingpong with the
# new post-send API (-N) and with completion timestamps from an extended CQ (-t);
# ibv_xsrq_pingpong (XRC) at several message sizes; perftest over UC (send, write) and UD (send
# bw and latency), and UD multicast (-g: send bw and latency to a group, the multicast counters
# of status, malformed multicast packets thrown at a host). Both ends must exit 0 and report
# their results.
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

step "perftest over UD multicast (-g)"
# perftest (ctx_check_gid_compatibility) requires its GID and the peer's to be of one family; the
# server's "GID" is the group's MGID and our port's GID is IPv4-mapped, so the group must be an
# IPv4-mapped multicast GID given with -M (16 bytes, ':'-separated, strtoll base 0).
# ::ffff:224.0.0.7 and ::ffff:224.0.0.8:
MGID_A=0:0:0:0:0:0:0:0:0:0:255:255:224:0:0:7
MGID_B=0:0:0:0:0:0:0:0:0:0:255:255:224:0:0:8
mcast() { emu_json "host($1)['counters']['mcast_$2']"; }
emu_status >/dev/null
tx0=$(mcast 2 tx_packets) delivered0=$(mcast 1 rx_delivered)
# Only the server attaches its QP; the client sends to QPN 0xFFFFFF of an AH on the MGID.
emu_perftest 1 60 ib_send_bw -c UD -g -M "$MGID_A" -n 200
emu_status >/dev/null
tx=$(($(mcast 2 tx_packets) - tx0)) delivered=$(($(mcast 1 rx_delivered) - delivered0))
((tx >= 200 && delivered >= 200)) ||
    fail "ib_send_bw -g: host 2 sent $tx multicast packets, host 1 delivered $delivered (want >= 200)"
ok "ib_send_bw -g: host 2 sent $tx multicast packets, host 1 delivered $delivered to its QP"
# Latency: each side attaches to its own group and sends to the other's (the server -M A, the
# client -M B, as perftest does with its default MGIDs), so no side hears its own packets.
PAIR_CLIENT_EXTRA=(-M "$MGID_B")
emu_perftest 1 60 ib_send_lat -c UD -g -M "$MGID_A" -n 200
PAIR_CLIENT_EXTRA=()
emu_status >/dev/null
for h in 1 2; do
    ((($(mcast "$h" rx_delivered)) > 0)) || fail "ib_send_lat -g: host $h delivered no multicast packet"
done
ok "ib_send_lat -g: both hosts delivered multicast packets"

step "malformed multicast packets are counted and dropped"
addr=$(emu_host 1 address)
malformed0=$(mcast 1 malformed)
python3 - "$addr" <<'PY'
import os, socket, struct, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
dst = (sys.argv[1], 4791)
bth = bytes([0x64, 0, 0xff, 0xff, 0, 0xff, 0xff, 0xff, 0, 0, 0, 1])  # UD SEND ONLY to 0xFFFFFF
deth = struct.pack(">II", 0x11111111, 0x12)
s.sendto(bth + deth, dst)                                       # no trailer, shorter than one
s.sendto(bth + deth + os.urandom(8) + b"\0" * 4 + b"\x7f" * 16, dst) # last 16 bytes: no MGID
s.sendto(bth[:12], dst)                                         # a bare BTH
PY
sleep 0.5
emu_status >/dev/null
malformed=$(($(mcast 1 malformed) - malformed0))
((malformed == 3)) || fail "3 malformed multicast packets sent to host 1, it counted $malformed"
[[ $(emu_host 1 up) == True ]] || fail "host 1 is down after malformed multicast packets"
ok "host 1 counted 3 malformed multicast packets (mcast_malformed) and is still up"
