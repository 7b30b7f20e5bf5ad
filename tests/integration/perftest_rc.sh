#!/usr/bin/env bash
# perftest_rc: the 8 unmodified perftest RC programs (ib_{send,write,read,atomic}_{lat,bw})
# between hosts 1 and 2: server on host 1 started first, client on host 2 connecting to
# 127.0.0.1 (perftest's TCP side channel; any loopback address reaches it) on a free port.
# Then the three bandwidth programs with -a (every size from 2 B to 8 MiB), and send_bw and
# send_lat with completion events (-e). Both ends must exit 0 and the client must print its
# results table with one row per size. Last, 100 QPs at once (-q 100): the host's window keeps
# what they have in flight within the receiver's socket buffer, so not one packet is lost.
#
# usage: perftest_rc.sh RDMAEMU
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
emu_setup "$1"
command -v ib_send_bw >/dev/null || fail "perftest not installed"

emu_up 2

step "the 8 RC programs, default size, -n 100"
for prog in ib_send_lat ib_send_bw ib_write_lat ib_write_bw ib_read_lat ib_read_bw \
    ib_atomic_lat ib_atomic_bw; do
    emu_perftest 1 60 "$prog" -n 100
done

# -a: sizes 2^1 .. 2^23, one row each.
step "bandwidth programs with -a (2 B .. 8 MiB), -n 20"
for prog in ib_send_bw ib_write_bw ib_read_bw; do
    emu_perftest 23 100 "$prog" -a -n 20
done

step "completion events (-e)"
emu_perftest 1 60 ib_send_bw -e -n 100
emu_perftest 1 60 ib_send_lat -e -n 100

step "100 QPs at once (-q 100): the receiver's socket loses no packet"
emu_status >/dev/null
sent0=$(emu_json "host(2)['hw_counters']['sent_pkts']")
rcvd0=$(emu_json "host(1)['hw_counters']['rcvd_pkts']")
emu_perftest 1 120 ib_write_bw -q 100 -n 50
emu_status >/dev/null
sent=$(($(emu_json "host(2)['hw_counters']['sent_pkts']") - sent0))
rcvd=$(($(emu_json "host(1)['hw_counters']['rcvd_pkts']") - rcvd0))
((sent >= 100 * 50 * 65536 / $(emu_host 1 mtu))) || fail "host 2 sent only $sent packets"
((rcvd == sent)) || fail "host 2 sent $sent packets, host 1 received $rcvd: $((sent - rcvd)) lost"
ok "host 2 sent $sent packets, host 1 received every one"
