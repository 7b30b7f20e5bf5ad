#!/usr/bin/env bash
# examples: the learners' programs of examples/ (docs/learn/) between two hosts: server on host
# 1, client on host 2, QP info over a TCP side channel on loopback (cm_send_recv: rdma_cm to host
# 1's address instead). Each end must exit 0 and print what it checked: the bytes the WRITE put
# in the server's buffer, the SEND's RECV completion and bytes, the READ's bytes, each atomic's
# old value and the counter it left, and "PASS".
# usage: examples.sh RDMAEMU EXAMPLES_DIR
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
emu_setup "$1"
EX=$2
emu_up 2

# expect FILE REGEX: FILE has a line matching REGEX (extended), else fail showing the outputs.
expect() {
    grep -qE -- "$2" "$1" || {
        emu_pair_dump "$label"
        fail "$label: no line matching '$2' in $(basename "$1")"
    }
}

# run_example NAME: server on host 1, client on host 2, both exit 0 within 60 s, both print PASS.
run_example() {
    label=$1
    [[ -x $EX/$label ]] || fail "$EX/$label not built"
    emu_pair "$label" 1 2 60 -- "$EX/$label" -p "$(free_tcp_port)"
    if ((PAIR_SERVER_RC != 0 || PAIR_CLIENT_RC != 0)); then
        emu_pair_dump "$label"
        fail "$label: server exited $PAIR_SERVER_RC, client $PAIR_CLIENT_RC (after ${PAIR_SECS}s; 124 = timed out)"
    fi
    expect "$EMU_WORK/$label.server" '^server: PASS$'
    expect "$EMU_WORK/$label.client" '^client: PASS$'
}

step "first_write: one RDMA WRITE into the server's MR"
run_example first_write
expect "$EMU_WORK/first_write.client" '^client: RDMA WRITE of 49 bytes to 0x[0-9a-f]+ rkey 0x[0-9a-f]{8} completed$'
expect "$EMU_WORK/first_write.server" '^server: my buffer now holds "Hello, RDMA! This was written by the peer.s NIC." \(49 bytes, byte for byte\)$'
ok "first_write: ${PAIR_SECS}s"
cat "$EMU_WORK/first_write.server" "$EMU_WORK/first_write.client"

step "send_recv: a SEND into a posted receive"
run_example send_recv
expect "$EMU_WORK/send_recv.client" '^client: SEND of 55 bytes completed'
expect "$EMU_WORK/send_recv.server" '^server: RECV completion \(wr_id 7\): 55 bytes: "Hello over SEND/RECV: the receiver picked this buffer." \(byte for byte\)$'
ok "send_recv: ${PAIR_SECS}s"

step "read: an RDMA READ of the server's 4096 bytes"
run_example read
expect "$EMU_WORK/read.client" '^client: RDMA READ of 4096 bytes from 0x[0-9a-f]+ rkey 0x[0-9a-f]{8}: every byte as the server holds it$'
ok "read: ${PAIR_SECS}s"

step "atomics: fetch-and-add and compare-and-swap on the server's counter"
run_example atomics
expect "$EMU_WORK/atomics.client" '^client: FETCH_AND_ADD\(\+5\) +-> old value 100 \(counter now 105\)$'
expect "$EMU_WORK/atomics.client" '^client: CMP_AND_SWP\(if 105 then 42\) -> old value 105: swapped'
expect "$EMU_WORK/atomics.client" '^client: CMP_AND_SWP\(if 105 then 7\) +-> old value 42: no match'
expect "$EMU_WORK/atomics.server" '^server: my counter went 100 -> 42 without my CPU touching it$'
ok "atomics: ${PAIR_SECS}s"

if [[ -x $EX/cm_send_recv ]]; then
    step "cm_send_recv: SEND/RECV connected through rdma_cm to host 1's address"
    label=cm_send_recv
    A1=$(emu_host 1 address)
    port=$(free_tcp_port)
    emu_cm_pair "$label" "$port" 60 "$EX/cm_send_recv" -s "$A1" -p "$port" -- \
        "$EX/cm_send_recv" -p "$port" "$A1"
    if ((PAIR_SERVER_RC != 0 || PAIR_CLIENT_RC != 0)); then
        emu_cm_pair_dump "$label"
        fail "$label: server exited $PAIR_SERVER_RC, client $PAIR_CLIENT_RC (after ${PAIR_SECS}s)"
    fi
    expect "$EMU_WORK/$label.server" '^server: PASS$'
    expect "$EMU_WORK/$label.client" '^client: PASS$'
    expect "$EMU_WORK/$label.server" '^server: received 47 bytes: "Hello through rdma_cm: no side channel needed." \(byte for byte\)$'
    expect "$EMU_WORK/$label.client" '^client: received the reply: "got it" \(byte for byte\)$'
    ok "cm_send_recv: ${PAIR_SECS}s"
fi

# A failing example must say so: the client of first_write against a port nobody serves.
step "an example's failure is an exit status and a FAIL line"
rc=0
timeout 30 "$RDMAEMU" run --host 2 -- "$EX/first_write" -p "$(free_tcp_port)" 127.0.0.1 \
    >"$EMU_WORK/nobody.out" 2>&1 || rc=$?
((rc == 1)) || fail "first_write with no server exited $rc, expected 1: $(cat "$EMU_WORK/nobody.out")"
grep -qE '^FAIL: connecting to 127.0.0.1:[0-9]+: Connection refused$' "$EMU_WORK/nobody.out" ||
    fail "first_write with no server did not say why: $(cat "$EMU_WORK/nobody.out")"
ok "no server: exit 1, $(cat "$EMU_WORK/nobody.out")"
