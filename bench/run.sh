#!/usr/bin/env bash
# bench/run.sh: rdmaemu next to what the same machine does without it, in one run.
#   table     perftest latency (ib_send/write/read_lat) and bandwidth (ib_send/write/read_bw)
#             between two emulated hosts, next to TCP loopback (sockperf ping-pong, iperf3) at
#             the same sizes and a single-thread memcpy (bench/memcpy_bw.c)      table.sh
#   sweep     ib_write_bw 2 B .. 8 MiB next to iperf3 -l SIZE, ib_write_lat 2 B .. 32 KiB next
#             to sockperf                                                        sweep.sh
#   qps       ib_write_bw 64 KiB over 1, 10, 100, 1000 QPs                      qps.sh
#   samehost  ib_write_bw 64 KiB with both ends on one emulated host, next to memcpy
#                                                                                same_host.sh
#   syscalls  the application's syscalls per message, perftest against TCP     syscalls.sh
#   qpmem     the NIC daemon's memory per idle RC QP (bench/idle_qps.c)         qp_memory.sh
#   stacks    UCX tag_lat/tag_bw and NetPIPE over Open MPI between the hosts    stacks.sh
# Prints the issue's targets and the tables (bench/report.py) and draws the plots
# (bench/plot.py, matplotlib). See bench/README.md.
#
# usage: bench/run.sh [--build DIR] [--quick] [--only PARTS] [--plots DIR] [--mtu M]
#                     [--poll-us US] [--scheduling POLICY] [--keep]
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bench=$repo/bench
build=$repo/build
quick=0
keep=0
mtu=""
poll_us=""
scheduling=""
only=""
plots=""
all_parts=(qpmem table samehost syscalls qps sweep stacks)

usage() {
    cat <<EOF
usage: bench/run.sh [--build DIR] [--quick] [--only PARTS] [--plots DIR] [--mtu M]
                    [--poll-us US] [--scheduling POLICY] [--keep]
  --build DIR   rdmaemu build directory (default: $repo/build)
  --quick       the table at one size each, shorter runs, and the cheap parts (samehost,
                qpmem): about 30 s instead of about 5 minutes
  --only PARTS  comma-separated parts to run: ${all_parts[*]}
                (default: all; with --quick: table,samehost,qpmem)
  --plots DIR   write the plots (PNG and SVG) to DIR (default: the work directory, then kept)
  --mtu M       path MTU of the emulated hosts (256|512|1024|2048|4096; default: rdmaemu's)
  --poll-us US  how long the NICs poll after work before they sleep (default: rdmaemu's)
  --scheduling POLICY
                the NICs' share of the CPU: auto (default), normal or realtime (rdmaemu up --help)
  --keep        keep the work directory (raw outputs of every program) after a good run
EOF
}

source "$bench/lib.sh"

while (($#)); do
    case $1 in
    --build | --only | --plots | --mtu | --poll-us | --scheduling)
        (($# >= 2)) || die "$1 needs a value"
        case $1 in
        --build) build=$2 ;;
        --only) only=$2 ;;
        --plots) plots=$2 ;;
        --mtu) mtu=$2 ;;
        --poll-us) poll_us=$2 ;;
        --scheduling) scheduling=$2 ;;
        esac
        shift 2
        ;;
    --build=*) build=${1#--build=} && shift ;;
    --only=*) only=${1#--only=} && shift ;;
    --plots=*) plots=${1#--plots=} && shift ;;
    --quick) quick=1 && shift ;;
    --keep) keep=1 && shift ;;
    -h | --help) usage && exit 0 ;;
    *) usage >&2 && die "unknown argument: $1" ;;
    esac
done

if [[ -n $only ]]; then
    IFS=, read -ra parts <<<"$only"
elif ((quick)); then
    parts=(qpmem table samehost)
else
    parts=("${all_parts[@]}")
fi
for p in "${parts[@]}"; do
    [[ " ${all_parts[*]} " == *" $p "* ]] || die "unknown part '$p' (parts: ${all_parts[*]})"
done
wants() { [[ " ${parts[*]} " == *" $1 "* ]]; }

# The build comes first: nothing else is worth doing without it.
[[ -d $build ]] || die "build directory $build not found; build first: make build" \
    "(or cmake -S $repo -B $build && cmake --build $build)"
build=$(cd "$build" && pwd)
for f in bin/rdmaemu bin/nicsimd lib/libibverbs.so.1; do
    [[ -e $build/$f ]] || die "$build/$f is missing: the build is incomplete; build first:" \
        "make build (or cmake --build $build)"
done
rdmaemu=$build/bin/rdmaemu

# Packages: perftest, sockperf, iperf3, strace, perf and matplotlib are in the project's list.
"$repo/tools/install-deps.sh" || die "tools/install-deps.sh failed: install perftest, sockperf" \
    "and iperf3 by hand"
for c in ib_send_lat ib_write_lat ib_read_lat ib_send_bw ib_write_bw ib_read_bw sockperf iperf3 \
    cc python3 ss timeout; do
    command -v "$c" >/dev/null || die "$c not found (tools/install-deps.sh installs it)"
done

if ((quick)); then
    lat_sizes=(2) bw_sizes=(65536)
    lat_iters=1000 bw_iters_big=5000 bw_iters_small=20000
    tcp_secs=1 memcpy_secs=0.5 run_timeout=30 retries_left=2
else
    lat_sizes=(2 4096) bw_sizes=(65536 4096)
    # About half a second of each bandwidth run here: 2000 messages of 64 KiB took 50 ms at
    # MTU 4096, 15 ms on one host, which measured mostly how the run started.
    lat_iters=2000 bw_iters_big=20000 bw_iters_small=100000
    tcp_secs=3 memcpy_secs=1 run_timeout=60 retries_left=6
fi
# The sweep: powers of 4 from 2 B, and 8 MiB; 1 s of TCP per size.
sweep_bw_sizes=(2 8 32 128 512 2048 8192 32768 131072 524288 2097152 8388608)
sweep_lat_sizes=(2 8 32 128 512 2048 8192 32768)
sweep_lat_iters=1000 sweep_tcp_secs=1 sweep_tcp_max_write=1048576
# Three rounds: one run of each count moves by 2x between runs (bench/README.md, 2026-12-06 14:39).
qp_counts=(1 10 100 1000) qps_messages=5000 qps_rounds=3
# The second run long: a run's kicks of a sleeping NIC come in episodes (38-467 doorbell writes in
# ib_send_lat -n 2000 and -n 10000 alike), which 8000 messages more did not average out.
syscall_runs=(2000 50000) syscall_iperf3_blocks=(20000 100000) syscall_sockperf_secs=(1 3)
idle_qps=1000

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

for f in table sweep qps same_host syscalls qp_memory stacks; do source "$bench/$f.sh"; done
pick_syscall_counter

# --- what the machine is --------------------------------------------------------------------
load() { cut -d' ' -f1-3 /proc/loadavg; }
build_type=$(sed -n 's/^CMAKE_BUILD_TYPE:STRING=//p' "$build/CMakeCache.txt" 2>/dev/null || true)
# An empty cache entry means the project's default (CMakeLists.txt: RelWithDebInfo).
[[ -n $build_type ]] || build_type="RelWithDebInfo (default)"
{
    echo "date=$(date -u '+%Y-%m-%d %H:%M UTC')"
    echo "cpu=$(sed -n 's/^model name\s*:\s*//p' /proc/cpuinfo | head -n 1)"
    echo "nproc=$(nproc)"
    echo "load_before=$(load)"
    echo "build=$build"
    echo "build_type=$build_type"
    echo "git=$(git -C "$repo" describe --always --dirty 2>/dev/null || echo '?')"
    echo "mode=$( ((quick)) && echo quick || echo default)"
    echo "parts=${parts[*]}"
    echo "perftest=$(dpkg-query -W -f='${Version}' perftest 2>/dev/null || echo '?')"
    echo "lat_sizes=${lat_sizes[*]}"
    echo "bw_sizes=${bw_sizes[*]}"
    echo "sweep_bw_sizes=${sweep_bw_sizes[*]}"
    echo "sweep_lat_sizes=${sweep_lat_sizes[*]}"
    echo "sweep_tcp_max_write=$sweep_tcp_max_write"
    echo "qp_counts=${qp_counts[*]}"
    echo "qps_rounds=$qps_rounds"
    echo "syscall_counter=${syscall_counter:-none}"
    echo "syscall_runs=${syscall_runs[*]}"
    echo "syscall_iperf3_blocks=${syscall_iperf3_blocks[*]}"
    echo "syscall_sockperf_secs=${syscall_sockperf_secs[*]}"
    echo "idle_qps=$idle_qps"
    echo "poll_us=${poll_us:-default}"
    echo "scheduling=${scheduling:-auto}"
} >"$work/meta.txt"
log "work directory $work; load average $(load) on $(nproc) CPUs; parts: ${parts[*]}"
awk -v n="$(nproc)" '{ exit !($1 >= n / 2) }' /proc/loadavg &&
    log "warning: the machine is busy (load average $(load) on $(nproc) CPUs); expect noisy" \
        "numbers, the tails most"
start_s=$SECONDS

cc -O2 -o "$work/memcpy_bw" "$bench/memcpy_bw.c" || die "cc failed on bench/memcpy_bw.c"
if wants qpmem; then
    cc -O2 -o "$work/idle_qps" "$bench/idle_qps.c" -libverbs ||
        die "cc failed on bench/idle_qps.c (libibverbs-dev installed?)"
fi

up_args=(--hosts 2)
[[ -z $mtu ]] || up_args+=(--mtu "$mtu")
[[ -z $poll_us ]] || up_args+=(--poll-us "$poll_us")
[[ -z $scheduling ]] || up_args+=(--scheduling "$scheduling")
"$rdmaemu" up "${up_args[@]}" >"$work/up.out" 2>&1 || {
    cat "$work/up.out" >&2
    die "rdmaemu up failed"
}
# What the hosts got: the MTU, and the scheduling (auto is real-time where allowed).
"$rdmaemu" status --json | python3 -c '
import json, sys
host = json.load(sys.stdin)["hosts"][0]
print("mtu=" + str(host.get("mtu", "?")))
print("scheduling_got=" + host.get("scheduling", "?"))' >>"$work/meta.txt"

failed=0
for part in "${all_parts[@]}"; do
    wants "$part" || continue
    echo "load.$part=$(load)" >>"$work/meta.txt"
    part_s=$SECONDS
    case $part in
    table) measure_table ;;
    sweep) measure_sweep ;;
    qps) measure_qps ;;
    samehost) measure_same_host ;;
    syscalls) measure_syscalls ;;
    qpmem) measure_qp_memory ;;
    stacks) measure_stacks ;;
    esac
    echo "seconds.$part=$((SECONDS - part_s))" >>"$work/meta.txt"
done
"$rdmaemu" status >"$work/status.out" 2>&1 || true

echo "load_after=$(load)" >>"$work/meta.txt"
echo "seconds=$((SECONDS - start_s))" >>"$work/meta.txt"
log "measured in $((SECONDS - start_s)) s"
# Outputs of failed tries are worth a look: keep them.
compgen -G "$work/*.try*" >/dev/null && keep=1

# Plots need matplotlib, which Debian installs for its own python3.
if wants sweep || wants table; then
    if [[ -z $plots ]]; then
        plots=$work/plots
        keep=1
    fi
    mkdir -p "$plots"
    /usr/bin/python3 "$bench/plot.py" "$work" "$plots" ||
        log "plot.py failed (python3-matplotlib installed?); the table stands without plots"
fi
echo
python3 "$bench/report.py" "$work"
if ((failed)); then
    log "$failed perftest run(s) failed three times; their outputs are in $work (*.cli, *.srv)"
    exit 1
fi
