#!/usr/bin/env bash
# `make demo`: two emulated hosts in a fresh runtime directory, their devices as unmodified
# rdma-core tools see them, and a clean shutdown. Usage: tools/demo.sh <build dir>
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

# Data path (once it exists): ibv_rc_pingpong -g 0 between the hosts, the server on host 1
# in the background and the client on host 2 connecting to it:
#   rdmaemu run --host 1 -- ibv_rc_pingpong -g 0 &
#   rdmaemu run --host 2 -- ibv_rc_pingpong -g 0 127.0.0.1   (the address `up` printed)

step rdmaemu down
