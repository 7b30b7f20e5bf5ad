#!/usr/bin/env bash
# `make demo`: two emulated hosts in a fresh runtime directory, their devices as unmodified
# rdma-core tools see them, real verbs programs between them with what each shows, a capture
# decoded, the same pingpong on a lossy wire with its recovery counted; the logs are kept.
# Usage: tools/demo.sh <build dir>
set -euo pipefail

build=$(cd "${1:-build}" && pwd)
if [ ! -x "$build/bin/rdmaemu" ]; then
    echo "demo: $build/bin/rdmaemu not found; build first" >&2
    exit 1
fi
export PATH="$build/bin:$PATH"

# A set of its own: the demo never touches hosts the user already runs.
RDMAEMU_RUNTIME_DIR=$(mktemp -d /tmp/rdmaemu-demo.XXXXXX)
export RDMAEMU_RUNTIME_DIR
finish() {
    local rc=$?
    rdmaemu down >/dev/null 2>&1 || true
    if [ "$rc" -ne 0 ]; then
        echo "demo failed; daemon logs kept in $RDMAEMU_RUNTIME_DIR/host*/nicsimd.log" >&2
    fi
}
trap finish EXIT

bold="" plain="" dim=""
if [ -t 1 ]; then bold=$'\033[1m' plain=$'\033[0m' dim=$'\033[2m'; fi
# A paragraph of narration: a blank line, then each argument as a comment line.
say() {
    echo
    local line
    for line in "$@"; do printf '%s# %s%s\n' "$dim" "$line" "$plain"; done
}
step() { printf '%s$ %s%s\n' "$bold" "$*" "$plain"; "$@"; }

# A server on host 1 in the background, its client on host 2. The programs swap their QP
# numbers and GIDs over TCP; any loopback address reaches the server's side channel.
pair() {
    printf '%s$ rdmaemu run --host 1 -- %s &%s\n' "$bold" "$*" "$plain"
    rdmaemu run --host 1 -- "$@" >"$RDMAEMU_RUNTIME_DIR/server.out" 2>&1 &
    local server=$!
    sleep 0.5
    step rdmaemu run --host 2 -- "$@" 127.0.0.1
    wait "$server"
}

# Sums a counter over the hosts of `rdmaemu status --json`.
counter() {
    rdmaemu status --json | python3 -c '
import json, sys
d = json.load(sys.stdin)
total = 0
def walk(o):
    global total
    if isinstance(o, dict):
        for k, v in o.items():
            if k == sys.argv[1] and isinstance(v, int): total += v
            else: walk(v)
    elif isinstance(o, list):
        for v in o: walk(v)
walk(d)
print(total)' "$1"
}

say "Two emulated hosts: each is a nicsimd daemon, a simulated NIC with one RoCE v2 device" \
    "(emu0) on its own loopback address. Their packets are real RoCE v2 in UDP, captured here."
step rdmaemu up --hosts 2 --pcap "$RDMAEMU_RUNTIME_DIR/capture"
say "Unmodified rdma-core tools see the device through the emulator's libibverbs.so.1:"
step rdmaemu run --host 1 -- ibv_devices
step rdmaemu run --host 2 -- ibv_devinfo

say "ibv_rc_pingpong: an RC queue pair on each host, 1000 SENDs each way. The data never" \
    "passes through a socket the program owns: it posts work requests into a ring the NIC" \
    "reads, and polls completions from another (kernel bypass)."
pair ibv_rc_pingpong -g 0 -n 1000

say "ib_write_bw: one-sided RDMA WRITEs into the other host's registered memory; the remote" \
    "program's CPU does nothing for them."
pair ib_write_bw -n 2000

say "What the first pingpong exchange looked like on the wire (tshark decodes RoCE v2):"
cap1=$RDMAEMU_RUNTIME_DIR/capture/host1.pcap
step rdmaemu status >/dev/null
if command -v tshark >/dev/null; then
    tshark -r "$cap1" -Y infiniband -c 8 2>/dev/null | sed 's/^/    /' || true
else
    echo "    (tshark is not installed; the capture is $cap1)"
fi
step rdmaemu down

say "ib_write_bw again on a lossy wire: 1% of the packets dropped. RC still delivers every" \
    "byte in order: the receiver NAKs a gap, or the requester times out, and sends again from" \
    "the lost packet (go-back-N)."
step rdmaemu up --hosts 2 --drop 0.01 --seed 7
pair ib_write_bw -n 500
printf '    %s packets dropped by the fault injector; %s packets the receivers discarded behind\n    a gap and got again (go-back-N); %s retransmit timeouts. Every WRITE completed, in order.\n' \
    "$(counter fault_drops)" "$(counter out_of_seq_request)" "$(counter timeouts)"
step rdmaemu status
step rdmaemu down
say "Logs of both runs: $RDMAEMU_RUNTIME_DIR/host*/nicsimd.log (kept); the capture of the first:" \
    "$RDMAEMU_RUNTIME_DIR/capture/. Next: README.md, docs/troubleshooting.md."
