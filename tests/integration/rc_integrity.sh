#!/usr/bin/env bash
# rc_integrity: runs tests/integration/rc_integrity.c (built against the system verbs.h and
# -libverbs) with its server on host 1 and its client on host 2, twice:
#   1. clean hosts, >= 256 MiB of SEND/WRITE/READ data and 2048+ atomics, every byte verified;
#   2. hosts started with `--drop 0.05 --duplicate 0.01 --reorder 0.01 --seed 7`, a smaller
#      amount: go-back-N recovery makes this ~20x slower (measured: ~2 MB/s against ~45 MB/s).
# Each run must end with the client's PASS line and both processes exiting 0; the client's
# SUMMARY line (MiB per operation kind, MB/s) is printed.
#
# usage: rc_integrity.sh RDMAEMU RC_INTEGRITY [CLEAN_MIB [FAULT_MIB]]
# RC_INTEGRITY_ARGS in the environment: more client options for both runs (e.g. "--depth 30").
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
PROG=$2
CLEAN_MIB=${3:-256}
FAULT_MIB=${4:-32}
emu_setup "$1"

# run_pair LABEL LIMIT_S CLIENT_ARGS...: the server on host 1 (its side channel on a free port it
# writes to a file), the client on host 2; the client is bounded by LIMIT_S, the server by the
# client (it exits when the client closes the side channel) plus 20 s.
run_pair() {
    local label=$1 limit=$2
    shift 2
    local pf=$EMU_WORK/$label.port sout=$EMU_WORK/$label.server cout=$EMU_WORK/$label.client
    rm -f "$pf"
    # `rdmaemu run` execs the program: $! is the server itself.
    "$RDMAEMU" run --host 1 -- "$PROG" --server --port 0 --port-file "$pf" >"$sout" 2>&1 &
    local spid=$!
    emu_bg_register "$spid"
    if ! wait_for_file "$pf" 30 "$spid"; then
        cat "$sout"
        fail "$label: the server did not open its side channel within 30 s"
    fi
    local crc=0 src=0 t0 i
    t0=$(date +%s%N)
    # shellcheck disable=SC2086 # RC_INTEGRITY_ARGS: words on purpose
    timeout -k 5 "$limit" "$RDMAEMU" run --host 2 -- "$PROG" --client --port "$(cat "$pf")" "$@" \
        ${RC_INTEGRITY_ARGS:-} >"$cout" 2>&1 || crc=$?
    PAIR_SECS=$(awk -v a="$t0" -v b="$(date +%s%N)" 'BEGIN { printf "%.1f", (b - a) / 1e9 }')
    for ((i = 0; i < 200; i++)); do kill -0 "$spid" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$spid" 2>/dev/null; then
        kill -KILL "$spid" 2>/dev/null || true
        echo "(killed by the test: still running 20 s after the client ended)" >>"$sout"
    fi
    wait "$spid" || src=$?
    if ((crc != 0 || src != 0)) || ! grep -q '^PASS: ' "$cout"; then
        echo "==== $label server ($sout):"
        tail -n 30 "$sout"
        echo "==== $label client ($cout):"
        tail -n 40 "$cout"
        local why
        why=$(grep -m1 '^FAIL' "$cout" || grep -m1 '^FAIL' "$sout" || true)
        ((crc == 124 || crc == 137)) && why="client killed after ${limit}s; $why"
        fail "$label: client exited $crc, server $src after ${PAIR_SECS}s: ${why:-no PASS line}"
    fi
    grep -q '^ok   server: [0-9]* rounds' "$sout" || fail "$label: the server did not report its rounds"
    ok "$label: ${PAIR_SECS}s; $(grep '^PASS: ' "$cout")"
    grep '^SUMMARY: ' "$cout"
}

step "clean: $CLEAN_MIB MiB and 2048+ atomics, server on host 1, client on host 2"
emu_up 2
run_pair clean 100 --mib "$CLEAN_MIB" --seed 1 --atomics 2048 --stall-timeout 20

step "stop the clean hosts"
timeout 20 "$RDMAEMU" down >"$EMU_WORK/down.out" 2>&1 || fail "rdmaemu down: $(cat "$EMU_WORK/down.out")"
for p in "${EMU_DAEMON_PIDS[@]}"; do
    for i in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$p" 2>/dev/null && fail "daemon pid $p still alive 5 s after rdmaemu down"
done
EMU_DAEMON_PIDS=()
ok "hosts stopped"

step "faults: drop 5%, duplicate 1%, reorder 1% (seed 7); $FAULT_MIB MiB and 512+ atomics"
emu_up 2 --drop 0.05 --duplicate 0.01 --reorder 0.01 --seed 7
run_pair faults 75 --mib "$FAULT_MIB" --seed 7 --atomics 512 --stall-timeout 30
