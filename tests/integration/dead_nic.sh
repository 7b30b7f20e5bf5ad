#!/usr/bin/env bash
# dead_nic: the NIC of an RC program's own host dies (kill -9 of its daemon) while the program
# has WRs outstanding and only busy-polls its CQ (tests/integration/dead_nic.c). Within a second
# every outstanding WR must complete with IBV_WC_WR_FLUSH_ERR and a thread blocked in
# ibv_get_async_event must get IBV_EVENT_DEVICE_FATAL; setup verbs then fail with EIO. After
# `rdmaemu down; rdmaemu up` the same process opens a new context that works. Twice: destroy
# verbs fail with EIO, then, with RDMAV_ALLOW_DISASSOC_DESTROY, succeed.
#
# usage: dead_nic.sh RDMAEMU DEAD_NIC
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
PROG=$2
emu_setup "$1"
LIMIT_MS=1000

emu_up 1

# run_once LABEL [ENV=VALUE...]: the program with WRs outstanding, its daemon killed, the checks,
# then `rdmaemu down; rdmaemu up` and the same process on a new context.
run_once() {
    local label=$1
    shift
    local daemon ready=$EMU_WORK/$label.ready restarted=$EMU_WORK/$label.restarted
    local out=$EMU_WORK/$label.out
    daemon=$(emu_host 1 daemon_pid)
    step "$label: an RC program with WRs outstanding on host 1; then host 1's daemon is killed"
    env "$@" "$RDMAEMU" run --host 1 -- "$PROG" --ready-file "$ready" --restarted-file "$restarted" \
        >"$out" 2>&1 &
    local pid=$!
    emu_bg_register "$pid"
    wait_for_file "$ready" 30 "$pid" || fail "the program did not get ready: $(cat "$out")"
    local killed_at
    killed_at=$(date +%s%N)
    kill -KILL "$daemon"
    ok "daemon pid $daemon killed"

    for _ in $(seq 100); do
        grep -q '^FLUSHED_AT ' "$out" && grep -q '^FATAL_AT ' "$out" && break
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    grep -q '^FLUSHED_AT ' "$out" || fail "no flush completions within 10 s of the kill: $(cat "$out")"
    grep -q '^FATAL_AT ' "$out" || fail "no IBV_EVENT_DEVICE_FATAL within 10 s of the kill: $(cat "$out")"
    local what at ms
    for what in FLUSHED FATAL; do
        at=$(awk -v w="${what}_AT" '$1 == w { print $2 }' "$out")
        ms=$(((at - killed_at) / 1000000))
        ((ms <= LIMIT_MS)) || fail "$what ${ms} ms after the kill, more than $LIMIT_MS ms"
        ok "$what ${ms} ms after the kill"
    done

    step "$label: rdmaemu down; rdmaemu up: the same process opens a new context"
    timeout 20 "$RDMAEMU" down >"$EMU_WORK/down.out" 2>&1 || fail "rdmaemu down: $(cat "$EMU_WORK/down.out")"
    EMU_DAEMON_PIDS=()
    emu_up 1
    touch "$restarted"
    local rc=0
    for _ in $(seq 300); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$pid" 2>/dev/null && fail "the program still runs 30 s after the restart: $(tail -n 5 "$out")"
    wait "$pid" || rc=$?
    cat "$out"
    ((rc == 0)) || fail "the program exited $rc: $(grep -m1 '^FAIL' "$out" || tail -n 3 "$out")"
    grep -q '^PASS: ' "$out" || fail "no PASS line"
    ok "$label: a new context on the restarted host works"
}

run_once default
run_once disassoc-destroy RDMAV_ALLOW_DISASSOC_DESTROY=1
