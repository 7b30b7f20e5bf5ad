#!/usr/bin/env bash
# `make demo`: two emulated hosts in a fresh runtime directory, their devices as unmodified
# rdma-core tools see them, real verbs programs between them, and a clean shutdown.
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
    if [ "$rc" -eq 0 ]; then
        rm -rf "$RDMAEMU_RUNTIME_DIR"
    else
        echo "demo failed; daemon logs kept in $RDMAEMU_RUNTIME_DIR/host*/nicsimd.log" >&2
    fi
}
trap finish EXIT

bold="" plain=""
if [ -t 1 ]; then bold=$'\033[1m' plain=$'\033[0m'; fi
step() { printf '\n%s$ %s%s\n' "$bold" "$*" "$plain"; "$@"; }

step rdmaemu up --hosts 2
step rdmaemu status
for host in 1 2; do
    step rdmaemu run --host "$host" -- ibv_devices
    step rdmaemu run --host "$host" -- ibv_devinfo
done

# A server on host 1 in the background, its client on host 2. The programs swap their QP
# numbers and GIDs over TCP; any loopback address reaches the server's side channel.
pair() {
    printf '\n%s$ rdmaemu run --host 1 -- %s &%s\n' "$bold" "$*" "$plain"
    rdmaemu run --host 1 -- "$@" &
    local server=$!
    sleep 0.5
    step rdmaemu run --host 2 -- "$@" 127.0.0.1
    wait "$server"
}

pair ibv_rc_pingpong -g 0 -n 1000
pair ib_write_bw -n 2000
step rdmaemu status
step rdmaemu down
