#!/usr/bin/env bash
# rc_pingpong: the unmodified ibv_rc_pingpong -g 0 (rdma-core's RC SEND/RECV ping-pong) between
# hosts 1 and 2 at message sizes 1, 4096, 64 KiB and 1 MiB (one packet, one MTU-sized message
# ... 1024 packets), each polling and with completion events (-e); then both ends on host 1
# (loopback through one daemon); and path MTUs 256 and 4096 (-m) at 64 KiB. Server on the first host, client on the second, connecting over
# TCP to 127.0.0.1 on a free port. Both ends must exit 0 and print "N iters in ... seconds".
# (Payload contents are rc_integrity's job: rc_pingpong does not check them.)
#
# usage: rc_pingpong.sh RDMAEMU
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
emu_setup "$1"
command -v ibv_rc_pingpong >/dev/null || fail "ibv_rc_pingpong not installed (Debian ibverbs-utils)"

ITERS=50
emu_up 2

# pingpong SERVER_HOST CLIENT_HOST SIZE [EXTRA...]
pingpong() {
    local sh=$1 ch=$2 size=$3
    shift 3
    local label="pp.$sh-$ch.s$size${1:+.${1#-}}" port
    port=$(free_tcp_port)
    local cmd=(ibv_rc_pingpong -g 0 -p "$port" -s "$size" -n "$ITERS" "$@")
    emu_pair "$label" "$sh" "$ch" 60 -- "${cmd[@]}"
    local side rc
    for side in server client; do
        rc=$PAIR_SERVER_RC
        [[ $side == client ]] && rc=$PAIR_CLIENT_RC
        if ((rc != 0)); then
            emu_pair_dump "$label"
            fail "${cmd[*]} (host $sh server, host $ch client): $side exited $rc"
        fi
        if ! grep -qE "^$ITERS iters in [0-9.]+ seconds = [0-9.]+ usec/iter$" "$EMU_WORK/$label.$side"; then
            emu_pair_dump "$label"
            fail "${cmd[*]} (host $sh server, host $ch client): $side printed no '$ITERS iters in' line"
        fi
    done
    ok "host $sh <-> host $ch: ${cmd[*]}: ${PAIR_SECS}s; client: $(grep -E 'iters in' "$EMU_WORK/$label.client")"
}

step "host 1 (server) <-> host 2 (client)"
for size in 1 4096 65536 1048576; do
    pingpong 1 2 "$size"
    pingpong 1 2 "$size" -e
done

step "path MTU 256 and 4096 (segmentation at every size the port allows)"
pingpong 1 2 65536 -m 256
pingpong 1 2 65536 -m 4096

step "both ends on host 1"
emu_status >/dev/null
looped_before=$(emu_json 'host(1)["counters"]["loopback_packets"]')
datagrams_before=$(emu_json 'host(1)["counters"]["tx_datagrams"]')
pingpong 1 1 4096
pingpong 1 1 1048576
pingpong 1 1 65536 -e
# The NIC turned them around inside: every packet counted as looped back, none sent to the
# socket (ibv_rc_pingpong's TCP side channel is the kernel's, not the NIC's).
emu_status >/dev/null
looped=$(($(emu_json 'host(1)["counters"]["loopback_packets"]') - looped_before))
datagrams=$(($(emu_json 'host(1)["counters"]["tx_datagrams"]') - datagrams_before))
# 50 iterations each way of 4 KiB (4 packets + ACK), 1 MiB (1024 + ACKs), 64 KiB (64 + ACKs).
((looped >= 2 * ITERS * (5 + 1025 + 65))) ||
    fail "host 1 looped back only $looped packets of the same-host pingpongs"
((datagrams == 0)) || fail "host 1 sent $datagrams datagrams to the socket for same-host traffic"
ok "same-host traffic turned around inside the NIC: $looped packets, no datagram"
