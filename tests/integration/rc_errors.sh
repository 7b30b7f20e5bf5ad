#!/usr/bin/env bash
# rc_errors: runs tests/integration/rc_errors.c (built against the system verbs.h and -libverbs):
# the responder (server) on host 2, the requester (client) on host 1. Cases a-f: access errors,
# a WRITE past the MR, a dead rkey, a READ without REMOTE_READ, misaligned atomics, RNR with
# rnr_retry 0 -- each with its exact completion status, the QP in ERR, a flushed WR after it and
# the responder's memory untouched. Case g: once the client's QP is connected, this script kills
# host 2's nicsimd with SIGKILL; the client's WRITE must end in IBV_WC_RETRY_EXC_ERR after about
# timeout x (retry_cnt + 1) and the three WRs behind it in IBV_WC_WR_FLUSH_ERR.
# The responder's async events and QP states are printed (notes), not enforced. Cases k, h, j, i
# (a wrong rkey, a wrong lkey, RNR NAKs with rnr_retry 7, ibv_modify_qp without IBV_QP_DEST_QPN)
# and every case above: both programs run with `rdmaemu run --explain`, and each "explain:" line
# they print must be on their stderr, word for word. Then ibv_rc_pingpong without -g must be
# told that RoCE needs a GRH; status must keep the responder's refusals after its process ended
# and count them in the host's counters.
#
# usage: rc_errors.sh RDMAEMU RC_ERRORS
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
PROG=$2
emu_setup "$1"
emu_up 2
D2=$(emu_host 2 daemon_pid)

step "responder (server) on host 2, requester (client) on host 1"
sout=$EMU_WORK/server.out cout=$EMU_WORK/client.out
"$RDMAEMU" run --host 2 --explain -- "$PROG" --server --port 0 --port-file "$EMU_WORK/port" \
    >"$sout" 2>"$sout.err" &
SERVER=$!
emu_bg_register "$SERVER"
if ! wait_for_file "$EMU_WORK/port" 30 "$SERVER"; then
    cat "$sout"
    fail "the server did not open its side channel within 30 s"
fi
"$RDMAEMU" run --host 1 --explain -- "$PROG" --client --port "$(cat "$EMU_WORK/port")" \
    --sync-dir "$EMU_WORK" >"$cout" 2>"$cout.err" &
CLIENT=$!
emu_bg_register "$CLIENT"

# Case g: the client writes g.connected (its pid) once its QP is connected and waits for g.killed.
killed=0
if wait_for_file "$EMU_WORK/g.connected" 90 "$CLIENT"; then
    kill -KILL "$D2"
    # Gone, or a zombie nobody reaps (PID 1 of a container may not).
    alive() { kill -0 "$1" 2>/dev/null && [ "$(ps -o stat= -p "$1" | cut -c1)" != Z ]; }
    for i in $(seq 50); do alive "$D2" || break; sleep 0.1; done
    alive "$D2" && fail "host 2's nicsimd (pid $D2) survived SIGKILL for 5 s"
    echo "$D2" >"$EMU_WORK/g.killed"
    killed=1
fi

# Bounded: the cases take ~10 s; give the client 90 s more.
crc=0
for i in $(seq 900); do kill -0 "$CLIENT" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$CLIENT" 2>/dev/null; then
    kill -KILL "$CLIENT" 2>/dev/null || true
    echo "(killed by the test: still running after 90 s)" >>"$cout"
fi
wait "$CLIENT" || crc=$?
src=0
for i in $(seq 100); do kill -0 "$SERVER" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$SERVER" 2>/dev/null; then
    kill -KILL "$SERVER" 2>/dev/null || true
    echo "(killed by the test: still running 10 s after the client ended)" >>"$sout"
fi
wait "$SERVER" || src=$?

echo "==== client (host 1, requester):"
cat "$cout"
echo "==== its stderr:"
cat "$cout.err"
echo "==== server (host 2, responder):"
cat "$sout"
echo "==== its stderr:"
cat "$sout.err"
echo "===="
if grep -q 'DIFFERS' "$cout"; then
    echo "note: the responder's async events/QP states differ from IBA's in these cases (not a failure):"
    grep 'DIFFERS' "$cout"
fi
((killed)) || fail "the client never reported case g's QP connected (exit $crc): $(grep -m1 '^FAIL' "$cout" || tail -n 1 "$cout")"
((crc == 0)) || fail "the client exited $crc; failed checks: $(grep '^FAIL' "$cout" | head -n 5 | tr '\n' ';')"
((src == 0)) || fail "the server exited $src: $(grep -m1 '^FAIL' "$sout" || tail -n 1 "$sout")"
grep -q '^PASS: ' "$cout" || fail "no PASS line from the client"
for c in a b c d e E f k h j g; do
    grep -q "^ok   client: case $c: .* -> IBV_WC_" "$cout" || fail "case $c did not run"
done
grep -q "^ok   client: case i: .* -> EINVAL" "$cout" || fail "case i did not run"
ok "$(grep -c '^ok   client' "$cout") checks passed in cases a-k"

step "--explain: each failure said why, word for word"
for side in client server; do
    out=$EMU_WORK/$side.out
    n=0
    while IFS= read -r line; do
        want="rdmaemu: ${line#explain: }"
        grep -qxF -- "$want" "$out.err" || fail "$side: not on stderr: '$want'"
        n=$((n + 1))
    done < <(grep '^explain: ' "$out")
    ok "$side: $n explanations as expected"
done
((n > 0)) || fail "the server expected no explanation"
n=$(grep -c '^explain: ' "$cout")
((n >= 12)) || fail "the client expected only $n explanations"

step "status keeps the reasons after the programs ended, and counts them"
# Host 2's daemon is gone (case g): status exits 3. Host 1 kept the requester's side of case k.
"$RDMAEMU" status --json >"$EMU_WORK/status.json" || true
k_line=$(grep '^explain: IBV_WC_REM_ACCESS_ERR .* rkey .* names no MR; the QP.s PD has rkeys' "$cout")
k_qp=$(sed -E 's/^explain: .* on qp (0x[0-9a-f]+): .*/\1/' <<<"$k_line")
k_why=${k_line#*on qp $k_qp: }
got=$(emu_json "'\n'.join(e['text'] for e in host(1)['errors']['recent'] if e['qpn'] == '$k_qp')")
grep -qxF -- "IBV_WC_REM_ACCESS_ERR for wr_id 1 (IBV_WR_RDMA_WRITE): $k_why" <<<"$got" ||
    fail "host 1's recent errors lack case k's reason for qp $k_qp: $got"
ok "host 1 kept case k's reason: $k_why"
emu_json "host(1)['hw_counters']"
for c in retry_rnr_exceeded_err retry_exceeded_err error_completions flushed_completions \
    naks_received rcvd_rnr_err completer_retry_err timeouts; do
    v=$(emu_json "host(1)['hw_counters']['$c']")
    ((v > 0)) || fail "host 1's $c is $v"
done
ok "host 1 counted the failures in rxe's hw_counters names"
"$RDMAEMU" status >"$EMU_WORK/status.txt" || true
grep -A3 '^  recent errors' "$EMU_WORK/status.txt" | head -n 4
grep -qF "qp $k_qp: IBV_WC_REM_ACCESS_ERR for wr_id 1 (IBV_WR_RDMA_WRITE): $k_why" \
    "$EMU_WORK/status.txt" || fail "rdmaemu status does not show host 1's recent errors"
grep -q '^  transport: sent_pkts=' "$EMU_WORK/status.txt" || fail "rdmaemu status shows no transport counters"
ok "rdmaemu status shows the recent errors and the counters"

step "ibv_rc_pingpong without -g: RoCE needs a GRH"
port=$(free_tcp_port)
"$RDMAEMU" run --host 1 --explain -- ibv_rc_pingpong -p "$port" >"$EMU_WORK/nog.server" 2>&1 &
spid=$!
emu_bg_register "$spid"
wait_tcp_listen "$port" 20 "$spid" || fail "ibv_rc_pingpong did not listen on $port"
timeout 20 "$RDMAEMU" run --host 1 --explain -- ibv_rc_pingpong -p "$port" 127.0.0.1 \
    >"$EMU_WORK/nog.client" 2>&1 || true
for i in $(seq 100); do kill -0 "$spid" 2>/dev/null || break; sleep 0.1; done
cat "$EMU_WORK/nog.server"
# The pingpongs print the QPN as 0x%06x; the NIC and status as %#x (0x559cc, not 0x0559cc).
qpn=$(sed -nE 's/.*local address: .*QPN (0x[0-9a-f]+),.*/\1/p' "$EMU_WORK/nog.server" | head -n 1)
[[ -n $qpn ]] || fail "ibv_rc_pingpong printed no local address"
qpn=$(printf '%#x' "$qpn")
want="rdmaemu: ibv_modify_qp refused (EINVAL): qp $qpn: RoCE needs a GRH (set ah_attr.is_global, -g in the pingpongs)"
grep -qxF -- "$want" "$EMU_WORK/nog.server" || fail "the server was not told: '$want'"
ok "told: $want"
"$RDMAEMU" status --json >"$EMU_WORK/status.json" || true
got=$(emu_json "'\n'.join(e['text'] for e in host(1)['errors']['recent'] if e['qpn'] == '$qpn')")
[[ $got == "ModifyQp refused (EINVAL): RoCE needs a GRH (set ah_attr.is_global, -g in the pingpongs)" ]] ||
    fail "host 1's status lacks the refusal of qp $qpn after ibv_rc_pingpong ended: $got"
ok "kept by host 1 after ibv_rc_pingpong ended"
