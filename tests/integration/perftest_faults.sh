#!/usr/bin/env bash
# perftest_faults: `rdmaemu up --help` documents the fault and capture options and `up` rejects
# bad values (exit 2, a clear message, nothing started). Then the three perftest RC bandwidth programs (send, write, read) complete through
# lossy links: `rdmaemu up --hosts 2 --drop 0.05 --duplicate 0.01 --reorder 0.01 --seed 1`, so
# every host drops 5% of the packets it sends, duplicates 1% and swaps 1% with the next one. The
# transport must recover (NAK / retransmit timeout, go-back-N, duplicate detection). Afterwards
# `rdmaemu status --json` must show each host's injected faults in its wire counters, and no
# ICRC errors (the faults here never corrupt).
#
# usage: perftest_faults.sh RDMAEMU
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
emu_setup "$1"
command -v ib_send_bw >/dev/null || fail "perftest not installed"

step "rdmaemu up: the fault options are documented and checked"
"$RDMAEMU" up --help >"$EMU_WORK/help.out" || fail "rdmaemu up --help exited $?"
for opt in '--drop P' '--duplicate P' '--reorder P' '--corrupt P' '--delay-us D' '--seed S' \
    '--pcap DIR'; do
    grep -qE "^[[:space:]]+${opt}[[:space:]]+[a-z]" "$EMU_WORK/help.out" ||
        fail "rdmaemu up --help does not document '$opt': $(cat "$EMU_WORK/help.out")"
done
ok "rdmaemu up --help documents --drop --duplicate --reorder --corrupt --delay-us --seed --pcap"
for bad in '--drop 1.5' '--duplicate -0.1' '--reorder nan' '--corrupt 5%' '--delay-us -1' \
    '--seed 1.5'; do
    rc=0
    # shellcheck disable=SC2086 # split "--opt value"
    "$RDMAEMU" up --hosts 2 $bad >"$EMU_WORK/bad.out" 2>&1 || rc=$?
    ((rc == 2)) || fail "rdmaemu up --hosts 2 $bad exited $rc, expected 2 (usage error)"
    grep -qE "invalid value '[^']*' for ${bad%% *} \(wants a (probability from 0 to 1|whole number)" \
        "$EMU_WORK/bad.out" || fail "rdmaemu up $bad: unclear error: $(head -n 2 "$EMU_WORK/bad.out")"
    [[ ! -e $RDMAEMU_RUNTIME_DIR/hosts ]] || fail "rdmaemu up $bad started hosts"
    ok "rdmaemu up $bad: exit 2, $(head -n 1 "$EMU_WORK/bad.out")"
done

FAULTS=(--drop 0.05 --duplicate 0.01 --reorder 0.01 --seed 1)
emu_up 2 "${FAULTS[@]}"
grep -qE '^faults: +drop 0\.05, duplicate 0\.01, reorder 0\.01, seed 1$' "$EMU_WORK/up.out" ||
    fail "rdmaemu up ${FAULTS[*]} did not print the faults line 'faults:  drop 0.05, duplicate 0.01, reorder 0.01, seed 1'"
ok "rdmaemu up shows the faults"

# 64 KiB messages (64 packets at MTU 1024): with 5% loss nearly every message loses a packet;
# a lost last packet costs perftest's ~67 ms retransmit timeout.
step "bandwidth programs through the faults, -n 100"
for prog in ib_send_bw ib_write_bw ib_read_bw; do
    emu_perftest 1 90 "$prog" -n 100
done

step "rdmaemu status --json shows the injected faults"
emu_status >/dev/null
for h in 1 2; do
    echo "host $h counters: $(emu_json "host($h).get('counters')")"
    [[ $(emu_json "'counters' in host($h)") == True ]] ||
        fail "status --json: host $h has no 'counters' object"
    for c in tx_packets rx_packets fault_drops fault_duplicates fault_reorders; do
        v=$(emu_json "host($h)['counters'].get('$c')")
        [[ $v =~ ^[0-9]+$ ]] || fail "status --json: host $h counters.$c is '$v', expected a number"
        ((v > 0)) || fail "status --json: host $h counters.$c is 0 after lossy traffic"
    done
    for c in fault_corruptions icrc_errors; do
        v=$(emu_json "host($h)['counters'].get('$c')")
        [[ $v == 0 ]] || fail "status --json: host $h counters.$c is '$v', expected 0 (no --corrupt)"
    done
    # About 5% of what the host sent was dropped (tx_packets counts what went out).
    ratio=$(emu_json "round(host($h)['counters']['fault_drops'] / (host($h)['counters']['fault_drops'] + host($h)['counters']['tx_packets']), 4)")
    awk -v r="$ratio" 'BEGIN { exit !(r > 0.02 && r < 0.10) }' ||
        fail "host $h: dropped fraction $ratio, expected about 0.05"
    ok "host $h: faults counted (drops/(drops+tx) = $ratio), no ICRC errors"
done
