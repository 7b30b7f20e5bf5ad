#!/usr/bin/env bash
# soak: a randomized RC and UD workload across 4 hosts on a faulty wire (drop, duplicate, reorder,
# corrupt), with programs and daemons killed at random points, for DURATION seconds.
#
# Workers are pairs of rc_integrity (SEND, WRITE, READ, atomics) or ud_integrity (datagrams)
# processes on two random hosts, each pair bounded in time; a few run at once and a new one
# starts when one ends. Every few seconds something is killed with SIGKILL: a worker's client or
# server, or a host's daemon (restarted a moment later with the same command line). Checked:
#   - a pair nothing was killed under passes: every byte and atomic result verified;
#   - a pair something was killed under ends by itself within its bound (no hang) and reports no
#     wrong byte: whatever completed successfully before was verified;
#   - at the end every host is up (the restarted ones serve new pairs), holds no session and so
#     no object, and each daemon holds no more descriptors than after a warm-up pair, and at most
#     64 MiB more memory.
# The choices follow SEED (bash's RANDOM), so a failing schedule can be replayed.
#
# usage: soak.sh RDMAEMU RC_INTEGRITY UD_INTEGRITY [DURATION_S [SEED]]
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
RC_PROG=$2 UD_PROG=$3 DURATION=${4:-60} SEED=${5:-1}
HOSTS=4 CONCURRENT=3 PAIR_LIMIT=90 RSS_SLACK_KB=$((64 * 1024))
emu_setup "$1"
RANDOM=$SEED

emu_up "$HOSTS" --drop 0.02 --duplicate 0.01 --reorder 0.01 --corrupt 0.01 --seed "$SEED"
declare -A daemon_pid daemon_fds daemon_rss
daemon_cmd=()
for ((h = 1; h <= HOSTS; h++)); do
    daemon_pid[$h]=$(emu_host "$h" daemon_pid)
    daemon_cmd[$h]=$(tr '\0' '\n' <"/proc/${daemon_pid[$h]}/cmdline")
done

# Whether a daemon accepts connections on the socket at $1.
accepts() {
    python3 -c 'import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.connect(sys.argv[1])' "$1" 2>/dev/null
}

# Puts host $1's new daemon pid $2 in the set's record (tab-separated: host address device pid
# socket log), where `rdmaemu run`, `status` and `down` look for it.
record_pid() {
    local record=$RDMAEMU_RUNTIME_DIR/hosts
    awk -F'\t' -v OFS='\t' -v h="$1" -v pid="$2" '$1 == h { $4 = pid } { print }' "$record" \
        >"$record.new"
    chmod 600 "$record.new"
    mv "$record.new" "$record"
}

# Worker state, by worker number.
declare -A kind shost chost spid cpid affected started
workers=0
running=()
passed=0 interrupted=0 kills=0 daemon_kills=0

# Strings that only a wrong byte or result prints (rc_integrity, ud_integrity): never allowed.
CORRUPTION='is (0x[0-9a-f]+|0+), expected|returned original|ends at 0x|expected canary|whose header says|got wr_id [0-9]+, IBV_WC_SUCCESS|an extra (send|receive) completion'

start_worker() {
    local w=$((++workers)) s c
    s=$((RANDOM % HOSTS + 1))
    c=$(((s + RANDOM % (HOSTS - 1)) % HOSTS + 1))
    local out=$EMU_WORK/w$w pf=$EMU_WORK/w$w.port prog server_args client_args
    if ((RANDOM % 10 < 6)); then
        kind[$w]=RC prog=$RC_PROG
        client_args=(--mib $((1 + RANDOM % 3)) --round-mib 1 --atomics 64 --atomics-per-round 32
            --seed $RANDOM --stall-timeout 30)
    else
        kind[$w]=UD prog=$UD_PROG
        client_args=(--count $((500 + RANDOM % 2000)) --seed $RANDOM)
    fi
    shost[$w]=$s chost[$w]=$c affected[$w]="" started[$w]=$SECONDS
    timeout -k 5 $((PAIR_LIMIT + 30)) "$RDMAEMU" run --host "$s" -- "$prog" --server --port 0 \
        --port-file "$pf" >"$out.server" 2>&1 &
    spid[$w]=$!
    emu_bg_register "${spid[$w]}"
    wait_for_file "$pf" 20 "${spid[$w]}" ||
        fail "worker $w: the server on host $s did not start: $(tail -n 3 "$out.server")"
    timeout -k 5 "$PAIR_LIMIT" "$RDMAEMU" run --host "$c" -- "$prog" --client --port "$(cat "$pf")" \
        "${client_args[@]}" >"$out.client" 2>&1 &
    cpid[$w]=$!
    emu_bg_register "${cpid[$w]}"
    running+=("$w")
}

# Judges a worker whose two processes have ended; fails the soak on a hang or a wrong byte.
judge() {
    local w=$1 src=0 crc=0 out=$EMU_WORK/w$1
    wait "${spid[$w]}" 2>/dev/null || src=$?
    wait "${cpid[$w]}" 2>/dev/null || crc=$?
    local what="worker $w (${kind[$w]}, server host ${shost[$w]}, client host ${chost[$w]})"
    if grep -Eq "$CORRUPTION" "$out.server" "$out.client"; then
        grep -Eh "^FAIL" "$out.server" "$out.client" >&2
        fail "$what: a wrong byte or result"
    fi
    if [[ -z ${affected[$w]} ]]; then
        if ((src != 0 || crc != 0)) || ! grep -q '^PASS' "$out.client"; then
            tail -n 5 "$out.server" "$out.client" >&2
            fail "$what: nothing was killed under it, yet server exited $src, client $crc"
        fi
        passed=$((passed + 1))
        return
    fi
    # 124: ran into `timeout`, i.e. it hung after the kill. 137 is our own SIGKILL.
    if ((src == 124 || crc == 124)); then
        tail -n 5 "$out.server" "$out.client" >&2
        fail "$what: hung after ${affected[$w]} (server exited $src, client $crc)"
    fi
    interrupted=$((interrupted + 1))
}

reap() {
    local still=() w
    for w in "${running[@]}"; do
        if kill -0 "${spid[$w]}" 2>/dev/null || kill -0 "${cpid[$w]}" 2>/dev/null; then
            still+=("$w")
        else
            judge "$w"
        fi
    done
    running=(${still[@]+"${still[@]}"})
}

kill_worker_process() {
    local w=${running[RANDOM % ${#running[@]}]} side pid
    side=$([[ $((RANDOM % 2)) == 0 ]] && echo server || echo client)
    pid=$([[ $side == server ]] && echo "${spid[$w]}" || echo "${cpid[$w]}")
    # The program itself, under `timeout` and `rdmaemu run` (which execs it).
    local prog
    prog=$(pgrep -P "$pid" | head -n 1 || true)
    [[ -n $prog ]] || return 0
    kill -KILL "$prog" 2>/dev/null || return 0
    affected[$w]="its $side was killed at ${SECONDS}s"
    kills=$((kills + 1))
    echo "     t=${SECONDS}s: killed the $side of worker $w"
}

kill_daemon() {
    local h=$((RANDOM % HOSTS + 1)) w
    kill -KILL "${daemon_pid[$h]}"
    daemon_kills=$((daemon_kills + 1))
    for w in "${running[@]}"; do
        if [[ ${shost[$w]} == "$h" || ${chost[$w]} == "$h" ]]; then
            affected[$w]="host $h's daemon was killed at ${SECONDS}s"
        fi
    done
    echo "     t=${SECONDS}s: killed host $h's daemon (pid ${daemon_pid[$h]})"
    while kill -0 "${daemon_pid[$h]}" 2>/dev/null; do sleep 0.05; done
    sleep "0.$((RANDOM % 10))"
    local cmd
    mapfile -t cmd <<<"${daemon_cmd[$h]}"
    local log=$RDMAEMU_RUNTIME_DIR/host$h/nicsimd.log
    # Started as rdmaemu up starts it: stdio only, none of this shell's other descriptors (the
    # pipes, the build lock ctest may run under), so its descriptor count compares with the
    # first daemon's.
    setsid python3 -c 'import os, sys; os.closerange(3, 1 << 20); os.execv(sys.argv[1], sys.argv[1:])' \
        "${cmd[@]}" >>"$log" 2>&1 </dev/null &
    daemon_pid[$h]=$!
    EMU_DAEMON_PIDS+=("${daemon_pid[$h]}")
    record_pid "$h" "${daemon_pid[$h]}"
    for _ in $(seq 100); do
        accepts "$RDMAEMU_RUNTIME_DIR/host$h/nicsimd.sock" && break
        sleep 0.05
    done
    echo "     t=${SECONDS}s: host $h restarted (pid ${daemon_pid[$h]})"
}

# Descriptors and memory once every daemon has served a pair (what a NIC makes at its first QP
# is no leak), the bound they must keep.
step "warm-up: an RC pair from every host, at once"
warm_pids=()
for ((h = 1; h <= HOSTS; h++)); do
    pf=$EMU_WORK/warm$h.port
    "$RDMAEMU" run --host "$h" -- "$RC_PROG" --server --port 0 --port-file "$pf" \
        >"$EMU_WORK/warm$h.server" 2>&1 &
    emu_bg_register $!
    warm_pids+=($!)
    wait_for_file "$pf" 20 $! || fail "warm-up server on host $h: $(cat "$EMU_WORK/warm$h.server")"
    emu_run $((h % HOSTS + 1)) -- "$RC_PROG" --client --port "$(cat "$pf")" --mib 1 --round-mib 1 \
        --atomics 16 --atomics-per-round 16 >"$EMU_WORK/warm$h.client" 2>&1 &
    warm_pids+=($!)
done
for p in "${warm_pids[@]}"; do
    wait "$p" || fail "a warm-up pair failed: $(tail -qn 2 "$EMU_WORK"/warm*.client "$EMU_WORK"/warm*.server | grep FAIL)"
done
for ((h = 1; h <= HOSTS; h++)); do
    emu_expect_no_context_session "$h" "the warm-up pairs"
    daemon_fds[$h]=$(ls "/proc/${daemon_pid[$h]}/fd" | wc -l)
    daemon_rss[$h]=$(awk '/^VmRSS/ { print $2 }' "/proc/${daemon_pid[$h]}/status")
    ok "host $h's daemon: ${daemon_fds[$h]} descriptors, ${daemon_rss[$h]} kB"
done

step "the workload for ${DURATION}s (seed $SEED): $CONCURRENT pairs at a time, kills every few seconds"
end=$((SECONDS + DURATION)) next_event=$((SECONDS + 3))
while ((SECONDS < end)); do
    reap
    # Kills come before new pairs, so that a pair's client has had the loop's 0.2 s to start on
    # its host before a daemon dies: a client that finds its host down exits at once, and its
    # server would wait for it until its bound, a hang that no kill under the pair explains.
    if ((SECONDS >= next_event)); then
        case $((RANDOM % 4)) in
        0 | 1) kill_worker_process ;;
        2) kill_daemon ;;
        3) ;; # a quiet spell
        esac
        next_event=$((SECONDS + 2 + RANDOM % 4))
    fi
    while ((${#running[@]} < CONCURRENT)); do start_worker; done
    sleep 0.2
done
step "no new pairs: waiting for the running ones"
while ((${#running[@]})); do
    reap
    sleep 0.2
done
ok "$workers pairs: $passed passed with every byte checked, $interrupted interrupted by $kills process kills and $daemon_kills daemon kills ended without a hang or a wrong byte"
((passed > 0)) || fail "no pair ran to completion"

step "the hosts afterwards: up, no sessions, descriptors and memory as at the start"
for ((h = 1; h <= HOSTS; h++)); do
    [[ $(emu_host "$h" up) == True ]] || fail "host $h is not up"
    emu_expect_no_context_session "$h" "every pair"
    pid=${daemon_pid[$h]}
    for _ in $(seq 30); do # the last status request's session may still be closing
        fds=$(ls "/proc/$pid/fd" | wc -l)
        ((fds <= daemon_fds[$h])) && break
        sleep 0.1
    done
    rss=$(awk '/^VmRSS/ { print $2 }' "/proc/$pid/status")
    ((fds <= daemon_fds[$h])) ||
        fail "host $h's daemon holds $fds descriptors, ${daemon_fds[$h]} after the warm-up: $(ls -l "/proc/$pid/fd" | tail -n +2 | awk '{ print $NF }' | sort | uniq -c | sort -rn | head -n 5)"
    ((rss <= daemon_rss[$h] + RSS_SLACK_KB)) ||
        fail "host $h's daemon uses $rss kB, ${daemon_rss[$h]} kB after the warm-up (+ $RSS_SLACK_KB kB allowed)"
    ok "host $h: up, no sessions, $fds descriptors, $rss kB (${daemon_rss[$h]} kB after the warm-up)"
done
