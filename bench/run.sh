#!/usr/bin/env bash
# bench/run.sh: rdmaemu next to what the same machine does without it, in one run.
#   - perftest latency (ib_send_lat, ib_write_lat, ib_read_lat) and bandwidth (ib_send_bw,
#     ib_write_bw, ib_read_bw) between two emulated hosts;
#   - the same machine over TCP loopback: sockperf ping-pong latency and iperf3 bandwidth, at the
#     same message sizes;
#   - single-thread memcpy bandwidth (bench/memcpy_bw.c, compiled here with cc).
# Prints one table (bench/report.py). See bench/README.md.
#
# usage: bench/run.sh [--build DIR] [--quick] [--mtu M] [--keep]
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=$repo/build
quick=0
keep=0
mtu=""

usage() {
    cat <<EOF
usage: bench/run.sh [--build DIR] [--quick] [--mtu M] [--keep]
  --build DIR   rdmaemu build directory (default: $repo/build)
  --quick       one size each and shorter runs: about 20 s instead of about a minute
  --mtu M       path MTU of the emulated hosts (256|512|1024|2048|4096; default: rdmaemu's)
  --keep        keep the work directory (raw outputs of every program) after a good run
EOF
}

die() {
    echo "bench: $*" >&2
    exit 1
}

while (($#)); do
    case $1 in
    --build)
        (($# >= 2)) || die "--build needs a directory"
        build=$2
        shift 2
        ;;
    --build=*)
        build=${1#--build=}
        shift
        ;;
    --quick) quick=1 && shift ;;
    --keep) keep=1 && shift ;;
    --mtu)
        (($# >= 2)) || die "--mtu needs a value"
        mtu=$2
        shift 2
        ;;
    -h | --help) usage && exit 0 ;;
    *) usage >&2 && die "unknown argument: $1" ;;
    esac
done

# The build comes first: nothing else is worth doing without it.
[[ -d $build ]] || die "build directory $build not found; build first: make build" \
    "(or cmake -S $repo -B $build && cmake --build $build)"
build=$(cd "$build" && pwd)
for f in bin/rdmaemu bin/nicsimd lib/libibverbs.so.1; do
    [[ -e $build/$f ]] || die "$build/$f is missing: the build is incomplete; build first:" \
        "make build (or cmake --build $build)"
done
rdmaemu=$build/bin/rdmaemu

# Packages: perftest, sockperf and iperf3 are in the project's list.
"$repo/tools/install-deps.sh" || die "tools/install-deps.sh failed: install perftest, sockperf" \
    "and iperf3 by hand"
for c in ib_send_lat ib_write_lat ib_read_lat ib_send_bw ib_write_bw ib_read_bw sockperf iperf3 \
    cc python3 ss timeout; do
    command -v "$c" >/dev/null || die "$c not found (tools/install-deps.sh installs it)"
done

if ((quick)); then
    lat_sizes=(2) bw_sizes=(65536)
    lat_iters=1000 bw_iters_big=1000 bw_iters_small=2000
    tcp_secs=1 memcpy_secs=0.5 run_timeout=30 retry_until=40
else
    lat_sizes=(2 4096) bw_sizes=(65536 4096)
    lat_iters=2000 bw_iters_big=2000 bw_iters_small=10000
    tcp_secs=3 memcpy_secs=1 run_timeout=60 retry_until=120
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/rdmaemu-bench.XXXXXX")
export RDMAEMU_RUNTIME_DIR=$work/runtime
unset RDMAEMU_HOST RDMAEMU_SOCKET
bg_pids=()

cleanup() {
    local rc=$?
    set +e
    # TERM first: `timeout` passes it on to the program it runs; KILL would orphan that.
    local p
    for p in "${bg_pids[@]}"; do kill -TERM "$p" 2>/dev/null; done
    for p in "${bg_pids[@]}"; do stop "$p"; done
    if [[ -d $RDMAEMU_RUNTIME_DIR ]]; then
        timeout 20 "$rdmaemu" down >/dev/null 2>&1 ||
            echo "bench: rdmaemu down failed; daemons may be left in $RDMAEMU_RUNTIME_DIR" >&2
    fi
    if ((rc == 0 && !keep)); then
        rm -rf "$work"
    else
        echo "bench: raw outputs and daemon logs kept in $work" >&2
    fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

log() { printf 'bench: %s\n' "$*" >&2; }

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])'
}

# wait_listen PORT PID: until something listens on TCP PORT (10 s at most, or PID exits).
wait_listen() {
    for _ in $(seq 100); do
        [[ -n $(ss -Htln "sport = :$1" 2>/dev/null) ]] && return 0
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

# perftest_pair NAME PROGRAM ARGS...: the server on host 1, the client on host 2 (perftest's
# TCP side channel over 127.0.0.1), on a port of their own. Output in $work/NAME.{srv,cli};
# up to two retries when the pair fails (the failed tries' outputs stay as NAME.*.tryN), none
# once the run has taken retry_until seconds, to keep its length bounded.
perftest_pair() {
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
            timeout "$run_timeout" "$rdmaemu" run --host 2 -- "$prog" -F -p "$port" "$@" \
                127.0.0.1 >"$work/$name.cli" 2>&1 || rc=$?
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
        if ((SECONDS - start_s >= retry_until)); then
            log "no retry: the run has already taken $((SECONDS - start_s)) s"
            break
        fi
        # The last try's outputs keep the plain names.
        cp "$work/$name.cli" "$work/$name.cli.try$attempt"
        cp "$work/$name.srv" "$work/$name.srv.try$attempt"
    done
    return 1
}

# sockperf_pp SIZE: TCP ping-pong latency over loopback, one-way like perftest's.
sockperf_pp() {
    local size=$1 port pid
    ((size >= 14)) || size=14 # sockperf's smallest message
    log "sockperf ping-pong TCP $size B, ${tcp_secs}s"
    port=$(free_port)
    sockperf server --tcp -i 127.0.0.1 -p "$port" >"$work/sockperf-server.$size.out" 2>&1 &
    pid=$!
    bg_pids+=("$pid")
    if wait_listen "$port" "$pid"; then
        timeout "$run_timeout" sockperf ping-pong --tcp -i 127.0.0.1 -p "$port" -m "$size" \
            -t "$tcp_secs" >"$work/sockperf.$size.out" 2>&1 || log "sockperf $size B failed"
    else
        log "sockperf server did not start: $(tail -n 2 "$work/sockperf-server.$size.out")"
    fi
    stop "$pid"
}

# iperf3_bw SIZE: one TCP stream over loopback, SIZE-byte writes.
iperf3_bw() {
    local size=$1 port pid
    log "iperf3 TCP -l $size, ${tcp_secs}s"
    port=$(free_port)
    iperf3 -s -1 -B 127.0.0.1 -p "$port" >"$work/iperf3-server.$size.out" 2>&1 &
    pid=$!
    bg_pids+=("$pid")
    if wait_listen "$port" "$pid"; then
        timeout "$run_timeout" iperf3 -c 127.0.0.1 -p "$port" -t "$tcp_secs" -l "$size" -J \
            >"$work/iperf3.$size.json" 2>&1 || log "iperf3 -l $size failed"
    else
        log "iperf3 server did not start: $(tail -n 2 "$work/iperf3-server.$size.out")"
    fi
    stop "$pid"
}

# --- what the machine is --------------------------------------------------------------------
load() { cut -d' ' -f1-3 /proc/loadavg; }
{
    echo "date=$(date -u '+%Y-%m-%d %H:%M UTC')"
    echo "cpu=$(sed -n 's/^model name\s*:\s*//p' /proc/cpuinfo | head -n 1)"
    echo "nproc=$(nproc)"
    echo "load_before=$(load)"
    echo "build=$build"
    echo "build_type=$(sed -n 's/^CMAKE_BUILD_TYPE:STRING=//p' "$build/CMakeCache.txt" 2>/dev/null)"
    echo "git=$(git -C "$repo" describe --always --dirty 2>/dev/null || echo '?')"
    echo "mode=$( ((quick)) && echo quick || echo default)"
    echo "lat_sizes=${lat_sizes[*]}"
    echo "bw_sizes=${bw_sizes[*]}"
} >"$work/meta.txt"
log "work directory $work; load average $(load) on $(nproc) CPUs"
awk -v n="$(nproc)" '{ exit !($1 >= n / 2) }' /proc/loadavg &&
    log "warning: the machine is busy (load average $(load) on $(nproc) CPUs); expect noisy" \
        "numbers, the tails most"
start_s=$SECONDS

# Each size's baselines run right before rdmaemu's runs of that size, so that both see the same
# load on a shared machine.
cc -O2 -o "$work/memcpy_bw" "$repo/bench/memcpy_bw.c" || die "cc failed on bench/memcpy_bw.c"

up_args=(--hosts 2)
[[ -z $mtu ]] || up_args+=(--mtu "$mtu")
"$rdmaemu" up "${up_args[@]}" >"$work/up.out" 2>&1 || {
    cat "$work/up.out" >&2
    die "rdmaemu up failed"
}
echo "mtu=$("$rdmaemu" status --json | python3 -c \
    'import json, sys; print(json.load(sys.stdin)["hosts"][0].get("mtu", "?"))')" >>"$work/meta.txt"

failed=0
for size in "${lat_sizes[@]}"; do
    sockperf_pp "$size"
    for op in send write read; do
        log "ib_${op}_lat -s $size -n $lat_iters"
        perftest_pair "lat.$op.$size" "ib_${op}_lat" -s "$size" -n "$lat_iters" ||
            failed=$((failed + 1))
    done
done
for size in "${bw_sizes[@]}"; do
    log "memcpy $size B blocks, ${memcpy_secs}s"
    "$work/memcpy_bw" "$size" "$memcpy_secs" >"$work/memcpy.$size.out" 2>&1 ||
        log "memcpy_bw $size failed"
    iperf3_bw "$size"
    iters=$bw_iters_small
    ((size < 65536)) || iters=$bw_iters_big
    for op in send write read; do
        log "ib_${op}_bw -s $size -n $iters"
        perftest_pair "bw.$op.$size" "ib_${op}_bw" -s "$size" -n "$iters" ||
            failed=$((failed + 1))
    done
done
"$rdmaemu" status >"$work/status.out" 2>&1 || true

echo "load_after=$(load)" >>"$work/meta.txt"
log "measured in $((SECONDS - start_s)) s"
# Outputs of failed tries are worth a look: keep them.
compgen -G "$work/*.try*" >/dev/null && keep=1
echo
python3 "$repo/bench/report.py" "$work"
if ((failed)); then
    log "$failed perftest run(s) failed three times; their outputs are in $work (*.cli, *.srv)"
    exit 1
fi
