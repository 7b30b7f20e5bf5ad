#!/usr/bin/env bash
# dead_peer: the NIC of one end dies (kill -9 of host 1's daemon) under a running ib_write_bw.
# The other end's QP must give up as hardware does: retry_cnt 7 (perftest's) is seven retries,
# so the client fails with IBV_WC_RETRY_EXC_ERR (status 12) within timeout x (retry_cnt + 1)
# of the death, plus slack for a loaded machine; not before 7 timeouts, and never hangs.
#
# usage: dead_peer.sh RDMAEMU
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
emu_setup "$1"
command -v ib_write_bw >/dev/null || fail "perftest not installed"

TIMEOUT=17                    # 4.096 us x 2^17 = 537 ms per try
TRY_MS=$(((4096 << TIMEOUT) / 1000000))
SLACK_MS=2000

emu_up 2
daemon1=$(emu_host 1 daemon_pid)

step "ib_write_bw -u $TIMEOUT (timeout $TRY_MS ms), then host 1's daemon is killed"
tcp=$(free_tcp_port)
"$RDMAEMU" run --host 1 -- ib_write_bw -p "$tcp" -u "$TIMEOUT" -D 60 >"$EMU_WORK/bw.server" 2>&1 &
spid=$!
emu_bg_register "$spid"
wait_tcp_listen "$tcp" 20 "$spid" || fail "ib_write_bw server did not listen: $(cat "$EMU_WORK/bw.server")"
"$RDMAEMU" run --host 2 -- ib_write_bw -p "$tcp" -u "$TIMEOUT" -D 60 127.0.0.1 \
    >"$EMU_WORK/bw.client" 2>&1 &
cpid=$!
emu_bg_register "$cpid"

# Traffic flows: host 2's RC QP in RTS has sent a good number of packets.
flowing=0
for _ in $(seq 100); do
    emu_status >/dev/null
    flowing=$(emu_json "sum(q['tx_packets'] for s in host(2).get('sessions', []) for q in s['qps'] if q['type'] == 'RC' and q['state'] == 'RTS')")
    ((flowing > 1000)) && break
    kill -0 "$cpid" 2>/dev/null || break
    sleep 0.1
done
((flowing > 1000)) || fail "ib_write_bw did not get going (host 2 sent $flowing packets): $(cat "$EMU_WORK/bw.client")"
ok "ib_write_bw running: host 2 sent $flowing packets"

kill -KILL "$daemon1"
t0=$(date +%s%N)
limit_ms=$((TRY_MS * 8 + SLACK_MS))
while kill -0 "$cpid" 2>/dev/null && (($(date +%s%N) - t0 < (limit_ms + 10000) * 1000000)); do
    sleep 0.05
done
elapsed_ms=$((($(date +%s%N) - t0) / 1000000))
kill -0 "$cpid" 2>/dev/null && fail "the client still runs $elapsed_ms ms after its peer's NIC died"
rc=0
wait "$cpid" || rc=$?
cat "$EMU_WORK/bw.client"
((rc != 0)) || fail "the client exited 0 although its peer's NIC died"
grep -q "Failed status 12" "$EMU_WORK/bw.client" ||
    fail "the client did not fail with status 12 (IBV_WC_RETRY_EXC_ERR)"
((elapsed_ms <= limit_ms)) ||
    fail "RETRY_EXC_ERR after $elapsed_ms ms, more than timeout x 8 + slack = $limit_ms ms"
((elapsed_ms >= TRY_MS * 7)) ||
    fail "RETRY_EXC_ERR after $elapsed_ms ms, before 7 timeouts ($((TRY_MS * 7)) ms): retry_cnt not honoured"
ok "the client failed with IBV_WC_RETRY_EXC_ERR $elapsed_ms ms after the kill (timeout x 8 = $((TRY_MS * 8)) ms)"
# The server's NIC is gone: nothing will complete there.
kill -KILL "$spid" 2>/dev/null || true
