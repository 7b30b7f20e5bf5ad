#!/usr/bin/env bash
# small_buffer: NICs whose link socket got the receive buffer net.core.rmem_max allows (no
# CAP_NET_ADMIN, as for any user but root) keep the bytes in flight within half of it, however
# many QPs send, so bulk transfers lose no packet. A window of 4 MiB into a buffer of 208 KiB
# (the default rmem_max) lost packets at every burst and resent each loss's window: ib_write_bw
# sent three times its data.
#
# usage: small_buffer.sh RDMAEMU
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
emu_setup "$1"

# As root, the daemons run without CAP_NET_ADMIN, as a user's would; SO_RCVBUFFORCE then fails.
if ((EUID == 0)); then
    command -v setpriv >/dev/null || fail "setpriv is missing (util-linux)"
    # shellcheck disable=SC2034 # read by emu_up (lib.sh)
    EMU_UP_PREFIX=(setpriv --bounding-set=-net_admin --inh-caps=-net_admin)
fi
echo "net.core.rmem_max = $(cat /proc/sys/net/core/rmem_max)"

step "each host's window is half its link's receive buffer, at most 4 MiB"
emu_up 2
emu_status >/dev/null
for h in 1 2; do
    buffer=$(emu_json "host($h).get('link_receive_buffer_bytes', 0)")
    window=$(emu_json "host($h)['host_window_bytes']")
    echo "host $h: link receive buffer $buffer bytes, window $window bytes"
    ((buffer > 0)) || fail "host $h: status --json has no link_receive_buffer_bytes"
    expect=$((buffer / 2 < 4194304 ? buffer / 2 : 4194304))
    ((window == expect)) || fail "host $h: window $window, expected $expect (half of $buffer)"
done
"$RDMAEMU" status >"$EMU_WORK/status.txt"
grep -q "window: $((window / 1024)) KiB in flight at most" "$EMU_WORK/status.txt" ||
    fail "rdmaemu status does not show the window: $(grep -m 1 window "$EMU_WORK/status.txt")"
ok "windows within the receive buffers"

# bulk LABEL PROG [args]: the transfer completes and no packet was sent twice, either way.
bulk() {
    local label=$1
    shift
    emu_pair "$label" 1 2 120 -- "$@" -F -p "$(free_tcp_port)"
    ((PAIR_CLIENT_RC == 0)) || { emu_pair_dump "$label"; fail "$label: the client failed"; }
}
step "ib_write_bw 64 KiB over 1, 10 and 200 QPs, ib_read_bw, ib_send_bw: no loss, no resend"
bulk write_1 ib_write_bw -s 65536 -n 3000
bulk write_10 ib_write_bw -s 65536 -q 10 -n 300
# 200 QPs each sending its first 8 KiB past the window put 1.6 MB into a buffer of 208 KiB;
# in turns they wait for room instead (engines.h wait_for_turn).
bulk write_200 ib_write_bw -s 65536 -q 200 -n 10
bulk read_1 ib_read_bw -s 65536 -n 2000
bulk send_1 ib_send_bw -s 65536 -n 2000
emu_status >/dev/null
for h in 1 2; do
    # A lost request shows on the responder (out of sequence, or a timeout when it was the last);
    # a lost ACK as a duplicate. Not counted: requests behind an RNR NAK (ib_send_bw's client
    # may send before its server posted its receives), and the sequence NAK that follows one.
    resent=$(emu_json "host($h)['counters']['duplicate_requests'] + host($h)['counters']['out_of_sequence'] + host($h)['hw_counters']['timeouts']")
    echo "host $h: duplicate requests + out-of-sequence packets + timeouts: $resent" \
        "(behind an RNR NAK: $(emu_json "host($h)['counters']['behind_rnr_nak']"))"
    ((resent == 0)) || fail "host $h: packets were lost or resent ($resent)"
done
ok "no packet lost or resent"
