#!/usr/bin/env bash
# rdmacm_errors: rdma_cm's failures with their exact events, between hosts whose CM answers
# within 4.096 us * 2^12 and retries twice (rdmaemu up --cm-response-timeout 12 --cm-retries 2):
#  - a port nobody listens on: REJECTED, status 8 (invalid service ID), at once; the QP in ERR;
#  - an address no host has: ADDR_ERROR, status -110 (ETIMEDOUT), after rping's 2 s, not later;
#    binding to another host's address: EADDRNOTAVAIL;
#  - a server that rejects with private data: REJECTED, status 28, the client reads the data;
#  - a server killed after taking the request, before answering: REJECTED, status 28;
#  - a server killed while connected: the client gets DISCONNECTED;
#  - bad CM input (truncated, foreign, unknown, unsupported and unmatched MADs, a REQ flood) is
#    counted and dropped while an rping between the hosts goes on;
#  - the API call by call (cm_api.c);
#  - the app's own NIC killed: rdma_get_cm_event fails with ENODEV instead of hanging; a peer
#    NIC killed: UNREACHABLE, status -110, after the CM's retries.
# usage: rdmacm_errors.sh RDMAEMU CM_EVENTS CM_API
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
emu_setup "$1"
CM_EVENTS=$2
CM_API=$3
GARBAGE=$(dirname "${BASH_SOURCE[0]}")/cm_garbage.py
emu_up 2 --cm-response-timeout 12 --cm-retries 2
A1=$(emu_host 1 address)
PREFIX=${A1%.*}
NOBODY=$PREFIX.99

# elapsed T0: seconds since T0 (from date +%s%N), one decimal.
elapsed() { awk -v a="$1" -v b="$(date +%s%N)" 'BEGIN { printf "%.1f", (b - a) / 1e9 }'; }

# expect FILE LINE: FILE has exactly LINE.
expect() { grep -qxF -- "$2" "$1" || fail "$(basename "$1"): no line '$2' in: $(cat "$1")"; }

step "a port nobody listens on"
t0=$(date +%s%N)
rc=0
timeout 20 "$RDMAEMU" run --host 2 -- rping -c -a "$A1" -p 9999 -C 1 >"$EMU_WORK/nolisten" 2>&1 || rc=$?
secs=$(elapsed "$t0")
expect "$EMU_WORK/nolisten" "cma event RDMA_CM_EVENT_REJECTED, error 8"
((rc != 0 && rc != 124)) || fail "rping to a port nobody listens on exited $rc"
awk -v s="$secs" 'BEGIN { exit !(s < 5) }' || fail "the REJ took ${secs}s"
timeout 20 "$RDMAEMU" run --host 2 -- "$CM_EVENTS" client "$A1" 9999 hi >"$EMU_WORK/nolisten2" 2>&1 ||
    fail "cm_events client exited $?: $(cat "$EMU_WORK/nolisten2")"
expect "$EMU_WORK/nolisten2" "no event yet: EAGAIN"
expect "$EMU_WORK/nolisten2" "event RDMA_CM_EVENT_REJECTED status 8"
expect "$EMU_WORK/nolisten2" "qp state ERR"
emu_status >/dev/null
[[ $(emu_json "host(1)['cm']['cm_req_no_listener']") -ge 2 ]] || fail "host 1 counted no REQ without a listener"
ok "REJECTED, error 8 (invalid service ID) in ${secs}s; the QP is in ERR"

step "an address no host has"
t0=$(date +%s%N)
rc=0
timeout 20 "$RDMAEMU" run --host 2 -- rping -c -a "$NOBODY" -C 1 >"$EMU_WORK/nobody" 2>&1 || rc=$?
secs=$(elapsed "$t0")
expect "$EMU_WORK/nobody" "cma event RDMA_CM_EVENT_ADDR_ERROR, error -110"
((rc != 124)) || fail "rping to $NOBODY hung"
awk -v s="$secs" 'BEGIN { exit !(s >= 1.9 && s < 6) }' || fail "ADDR_ERROR after ${secs}s, not rping's 2 s"
rc=0
timeout 20 "$RDMAEMU" run --host 2 -- rping -s -a "$A1" -C 1 >"$EMU_WORK/foreign" 2>&1 || rc=$?
expect "$EMU_WORK/foreign" "rdma_bind_addr: Cannot assign requested address"
ok "ADDR_ERROR, error -110 after ${secs}s; binding to host 1's address on host 2: EADDRNOTAVAIL"

step "a reject with private data"
emu_cm_pair reject 7000 30 "$CM_EVENTS" server "$A1" 7000 reject "not today" -- \
    "$CM_EVENTS" client "$A1" 7000 "hello there"
((PAIR_CLIENT_RC == 0)) || { emu_cm_pair_dump reject; fail "cm_events client exited $PAIR_CLIENT_RC"; }
expect "$EMU_WORK/reject.server" "event RDMA_CM_EVENT_CONNECT_REQUEST status 0 private 'hello there'"
expect "$EMU_WORK/reject.server" "rejected"
expect "$EMU_WORK/reject.client" "event RDMA_CM_EVENT_REJECTED status 28 private 'not today'"
expect "$EMU_WORK/reject.client" "qp state ERR"
ok "REJECTED, status 28 (consumer defined), with the server's private data"

step "a server killed after taking the request, before answering"
"$RDMAEMU" run --host 1 -- "$CM_EVENTS" server "$A1" 7001 hold >"$EMU_WORK/hold.server" 2>&1 &
hold=$!
emu_bg_register "$hold"
wait_cm_listen 1 7001 20 "$hold" || fail "cm_events server did not listen"
timeout 30 "$RDMAEMU" run --host 2 -- "$CM_EVENTS" client "$A1" 7001 knock >"$EMU_WORK/hold.client" 2>&1 &
client=$!
for _ in $(seq 100); do grep -q holding "$EMU_WORK/hold.server" && break; sleep 0.1; done
expect "$EMU_WORK/hold.server" "holding"
kill -KILL "$hold"
wait "$client" || fail "cm_events client exited $?: $(cat "$EMU_WORK/hold.client")"
expect "$EMU_WORK/hold.client" "event RDMA_CM_EVENT_REJECTED status 28"
ok "the killed server's NIC rejected the request: REJECTED, status 28"

step "a server killed while connected"
"$RDMAEMU" run --host 1 -- "$CM_EVENTS" server "$A1" 7003 accept >"$EMU_WORK/kill.server" 2>&1 &
server=$!
emu_bg_register "$server"
wait_cm_listen 1 7003 20 "$server" || fail "cm_events server did not listen"
timeout 30 "$RDMAEMU" run --host 2 -- "$CM_EVENTS" client "$A1" 7003 stay >"$EMU_WORK/kill.client" 2>&1 &
client=$!
for _ in $(seq 100); do grep -q ESTABLISHED "$EMU_WORK/kill.client" && break; sleep 0.1; done
expect "$EMU_WORK/kill.client" "event RDMA_CM_EVENT_ESTABLISHED status 0"
kill -KILL "$server"
wait "$client" || fail "cm_events client exited $?: $(cat "$EMU_WORK/kill.client")"
expect "$EMU_WORK/kill.client" "event RDMA_CM_EVENT_DISCONNECTED status 0"
ok "the killed server's NIC disconnected the client: DISCONNECTED"

step "bad CM input while rping runs"
"$RDMAEMU" run --host 1 -- "$CM_EVENTS" server "$A1" 7002 hold >"$EMU_WORK/flood.server" 2>&1 &
flooded=$!
emu_bg_register "$flooded"
wait_cm_listen 1 7002 20 "$flooded" || fail "cm_events server did not listen"
# From an address no host has, on the RoCE port: the link takes the packets, the CM judges them.
python3 "$GARBAGE" "$PREFIX.77" "$A1" 4791 7002 4 >"$EMU_WORK/garbage" 2>&1 &
forger=$!
emu_bg_register "$forger"
emu_cm_pair busy 7174 60 rping -s -a "$A1" -C 2000 -- rping -c -a "$A1" -C 2000
wait "$forger" || fail "cm_garbage.py exited $?: $(cat "$EMU_WORK/garbage")"
cat "$EMU_WORK/garbage"
((PAIR_SERVER_RC == 0 && PAIR_CLIENT_RC == 0)) ||
    { emu_cm_pair_dump busy; fail "rping during the garbage: server $PAIR_SERVER_RC, client $PAIR_CLIENT_RC"; }
emu_status >/dev/null
echo "host 1 cm counters: $(emu_json "host(1)['cm']")"
# Everything sent was counted as what it is (a REQ or two took the listener's backlog).
sent() { awk -v k="$1" '$2 == k { print $3 }' "$EMU_WORK/garbage"; }
for c in "cm_rx_malformed truncated" "cm_rx_not_cm not_cm" "cm_rx_unknown_attr unknown_attr" \
    "cm_rx_unsupported unsupported" "cm_rx_unmatched unmatched"; do
    v=$(emu_json "host(1)['cm']['${c% *}']")
    n=$(sent "${c#* }")
    ((n > 100 && v >= n)) || fail "host 1: ${c% *} is $v for $n ${c#* } MADs sent"
done
v=$(emu_json "host(1)['cm']['cm_req_backlog_drops']")
n=$(sent req_flood)
((v >= n - 2)) || fail "host 1: $v of $n flooded REQs dropped for the backlog"
kill -KILL "$flooded"
ok "rping went on; bad MADs counted and dropped, the REQ flood held to the listener's backlog"

step "the API call by call"
timeout 60 "$RDMAEMU" run --host 1 -- "$CM_API" "$A1" >"$EMU_WORK/api" 2>&1 ||
    fail "cm_api exited $?: $(cat "$EMU_WORK/api")"
cat "$EMU_WORK/api"
expect "$EMU_WORK/api" "all ok"

step "the app's own NIC killed; then a peer NIC"
"$RDMAEMU" run --host 1 -- rping -s -a "$A1" >"$EMU_WORK/deadnic" 2>&1 &
orphan=$!
emu_bg_register "$orphan"
wait_cm_listen 1 7174 20 "$orphan" || fail "rping server on host 1 did not listen"
kill -KILL "$(emu_host 1 daemon_pid)"
for _ in $(seq 50); do kill -0 "$orphan" 2>/dev/null || break; sleep 0.1; done
kill -0 "$orphan" 2>/dev/null && fail "rping still waits for events of a dead NIC"
expect "$EMU_WORK/deadnic" "rdma_get_cm_event: No such device"
ok "rdma_get_cm_event: No such device, at once"
t0=$(date +%s%N)
rc=0
timeout 30 "$RDMAEMU" run --host 2 -- rping -c -a "$A1" -C 1 >"$EMU_WORK/deadpeer" 2>&1 || rc=$?
secs=$(elapsed "$t0")
expect "$EMU_WORK/deadpeer" "cma event RDMA_CM_EVENT_UNREACHABLE, error -110"
((rc != 124)) || fail "rping to a dead host hung"
ok "UNREACHABLE, error -110 after ${secs}s (3 REQs, 2 x 4.096 us x 2^16 + 4.096 us x 2^12 apart)"
