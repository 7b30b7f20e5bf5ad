# shellcheck shell=bash
# bench/lib.sh: helpers the measurements share; sourced by bench/run.sh, which sets $work,
# $rdmaemu, $run_timeout, $retries_left and the bg_pids array before calling any of them.

log() { printf 'bench: %s\n' "$*" >&2; }

die() {
    echo "bench: $*" >&2
    exit 1
}

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])'
}

# listening_near PORT PID: something listens on TCP PORT here, or in the network namespace of PID
# or of a child of it (`timeout rdmaemu run ...`: programs under rdmaemu run are in their set's
# namespace, where ss(8) run here does not look).
listening_near() {
    [[ -n $(ss -Htln "sport = :$1" 2>/dev/null) ]] && return 0
    local hex p
    hex=$(printf ':%04X' "$1")
    for p in "$2" $(pgrep -P "$2" 2>/dev/null); do
        awk -v p="$hex" '$4 == "0A" && substr($2, length($2) - 4) == p { found = 1 }
            END { exit !found }' "/proc/$p/net/tcp" "/proc/$p/net/tcp6" 2>/dev/null && return 0
    done
    return 1
}

# wait_listen PORT PID: until something listens on TCP PORT (10 s at most, or PID exits).
wait_listen() {
    for _ in $(seq 100); do
        listening_near "$1" "$2" && return 0
        kill -0 "$2" 2>/dev/null || return 1
        sleep 0.1
    done
    return 1
}

# stop PID: SIGTERM, then SIGKILL after 3 s.
stop() {
    kill -TERM "$1" 2>/dev/null || return 0
    for _ in $(seq 30); do
        kill -0 "$1" 2>/dev/null || break
        sleep 0.1
    done
    kill -KILL "$1" 2>/dev/null || true
    wait "$1" 2>/dev/null || true
}

# The syscall counter, chosen once (run.sh calls pick_syscall_counter): perf's syscall
# tracepoints count in the kernel without stopping the program; strace -f -c stops it at every
# syscall, which slows a program that spins on sched_yield so much that it yields far less
# (measured: 0.7 instead of 115 syscalls per ib_write_bw WR), so it is only the fallback.
syscall_counter=""
pick_syscall_counter() {
    if command -v perf >/dev/null &&
        perf stat -x, -e raw_syscalls:sys_enter -o /dev/null true >/dev/null 2>&1; then
        syscall_counter=perf
    elif command -v strace >/dev/null; then
        syscall_counter=strace
    fi
}

# The syscalls named in perf's count; the rest shows as "other". Those a polling verbs app or
# a TCP client can make in its loop.
counted_syscalls=(sched_yield write read sendto recvfrom sendmsg recvmsg epoll_wait epoll_pwait
    poll ppoll select pselect6 futex nanosleep clock_nanosleep ioctl)

# count_prefix FILE: the words to put before a command so that its syscalls (all its threads)
# are counted into FILE. Empty when no counter works.
count_prefix() {
    case $syscall_counter in
    perf)
        local events=(-e raw_syscalls:sys_enter) s
        for s in "${counted_syscalls[@]}"; do
            [[ -e /sys/kernel/tracing/events/syscalls/sys_enter_$s ||
                -e /sys/kernel/debug/tracing/events/syscalls/sys_enter_$s ]] &&
                events+=(-e "syscalls:sys_enter_$s")
        done
        echo perf stat -x, -o "$1" "${events[@]}" --
        ;;
    strace) echo strace -f -c -o "$1" ;;
    esac
}

# perftest_pair [--client-host H] [--count-syscalls FILE] NAME PROGRAM ARGS...: the server on
# host 1, the client on host 2 (or H), perftest's TCP side channel over 127.0.0.1 on a port of
# their own. Output in $work/NAME.{srv,cli}, the client's seconds in NAME.secs. A failed pair
# is tried again while the run's retry budget lasts (failed tries' outputs stay as NAME.*.tryN).
perftest_pair() {
    local client_host=2 prefix=()
    while (($#)); do
        case $1 in
        --client-host) client_host=$2 && shift 2 ;;
        --count-syscalls) read -ra prefix <<<"$(count_prefix "$2")" && shift 2 ;;
        *) break ;;
        esac
    done
    local name=$1 prog=$2 attempt rc port spid
    shift 2
    for attempt in 1 2 3; do
        port=$(free_port)
        timeout "$run_timeout" "$rdmaemu" run --host 1 -- "$prog" -F -p "$port" "$@" \
            >"$work/$name.srv" 2>&1 &
        spid=$!
        bg_pids+=("$spid")
        rc=0
        if wait_listen "$port" "$spid"; then
            local t0=$EPOCHREALTIME
            timeout "$run_timeout" "$rdmaemu" run --host "$client_host" -- "${prefix[@]}" \
                "$prog" -F -p "$port" "$@" 127.0.0.1 >"$work/$name.cli" 2>&1 || rc=$?
            # The client's wall time, setup included (1000 QPs take a while to connect).
            echo "$t0 $EPOCHREALTIME" | awk '{ printf "%.2f\n", $2 - $1 }' >"$work/$name.secs"
        else
            rc=1
            echo "bench: the $prog server never listened on port $port" >"$work/$name.cli"
        fi
        if ((rc == 0)); then
            wait "$spid" || true
            return 0
        fi
        stop "$spid"
        ((rc != 124)) || echo "bench: timed out after ${run_timeout}s" >>"$work/$name.cli"
        log "$prog $* failed (exit $rc, try $attempt):" \
            "$(grep -m 1 -iE "couldn|fail|unable|error|timed out" "$work/$name.cli" ||
                tail -n 1 "$work/$name.cli")"
        ((attempt < 3)) || break
        if ((retries_left <= 0)); then
            log "no retry: the run's retries are used up"
            break
        fi
        retries_left=$((retries_left - 1))
        # The last try's outputs keep the plain names.
        cp "$work/$name.cli" "$work/$name.cli.try$attempt"
        cp "$work/$name.srv" "$work/$name.srv.try$attempt"
    done
    return 1
}

# tcp_pair NAME SERVER_CMD -- CLIENT_CMD: a TCP baseline on a free port: the server runs in the
# background, the client in the foreground; "{port}" in either is replaced by the port. Output
# in $work/NAME.out (client) and NAME.server.out. Returns the client's status.
tcp_pair() {
    local name=$1 port pid rc=0 srv=() cli=() w
    shift
    port=$(free_port)
    while (($#)) && [[ $1 != -- ]]; do srv+=("${1//\{port\}/$port}") && shift; done
    shift
    for w in "$@"; do cli+=("${w//\{port\}/$port}"); done
    "${srv[@]}" >"$work/$name.server.out" 2>&1 &
    pid=$!
    bg_pids+=("$pid")
    if wait_listen "$port" "$pid"; then
        timeout "$run_timeout" "${cli[@]}" >"$work/$name.out" 2>&1 || rc=$?
    else
        rc=1
        log "${srv[0]} server did not start: $(tail -n 2 "$work/$name.server.out")"
    fi
    stop "$pid"
    return "$rc"
}

# sockperf_pp SIZE [SECONDS [NAME]]: TCP ping-pong latency over loopback, one-way like
# perftest's, for SECONDS (default $tcp_secs); output in NAME.out (default sockperf.SIZE), every
# sample in NAME.csv. SIZE is raised to sockperf's smallest message, 14 bytes.
sockperf_pp() {
    local size=$1 secs=${2:-$tcp_secs}
    ((size >= 14)) || size=14
    local name=${3:-sockperf.$size}
    log "sockperf ping-pong TCP $size B, ${secs}s"
    tcp_pair "$name" sockperf server --tcp -i 127.0.0.1 -p "{port}" -- \
        sockperf ping-pong --tcp -i 127.0.0.1 -p "{port}" -m "$size" -t "$secs" \
        --full-log "$work/$name.csv" || log "sockperf $size B failed"
}

# iperf3_bw SIZE [NAME [ARGS...]]: one TCP stream over loopback, SIZE-byte writes, for
# $tcp_secs (or as ARGS say); iperf3's -J output in NAME.json (default iperf3.SIZE).
iperf3_bw() {
    local size=$1 name=${2:-iperf3.$1}
    shift $(($# < 2 ? $# : 2))
    (($#)) || set -- -t "$tcp_secs"
    log "iperf3 TCP -l $size $*"
    tcp_pair "$name" iperf3 -s -1 -B 127.0.0.1 -p "{port}" -- \
        iperf3 -c 127.0.0.1 -p "{port}" -l "$size" -J "$@" || log "iperf3 -l $size failed"
    mv -f "$work/$name.out" "$work/$name.json" 2>/dev/null || true
}

# memcpy_bw SIZE: the single-thread memcpy ceiling for SIZE-byte blocks.
memcpy_bw() {
    log "memcpy $1 B blocks, ${memcpy_secs}s"
    "$work/memcpy_bw" "$1" "$memcpy_secs" >"$work/memcpy.$1.out" 2>&1 ||
        log "memcpy_bw $1 failed"
}
