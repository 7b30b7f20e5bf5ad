#!/usr/bin/env bash
# Regenerates the captured exchanges in docs/pictures/ with `rdmaemu timeline` from real runs:
# send-recv.svg (examples/send_recv between two hosts, lesson 3) and lossy-pingpong.svg (an
# ibv_rc_pingpong on a wire dropping 20% of the packets, lesson 5). qp-states.svg is drawn by hand.
#
# usage: tools/docs-pictures.sh [BUILD_DIR]   (default build)
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
build=$(realpath "${1:-$repo/build}")
rdmaemu=$build/bin/rdmaemu
work=$(mktemp -d "${TMPDIR:-/tmp}/rdmaemu-pictures.XXXXXX")
export RDMAEMU_RUNTIME_DIR=$work/rt
trap '"$rdmaemu" down >/dev/null 2>&1 || true; rm -rf "$work"' EXIT

wait_port() { for _ in $(seq 100); do ss -Hltn "sport = :$1" | grep -q . && return 0; sleep 0.1; done; return 1; }

picture() { # NAME PORT UP_OPTIONS -- PROGRAM...
    local name=$1 port=$2 up=$3
    shift 4
    local dir=$work/$name
    "$rdmaemu" up --hosts 2 --pcap "$dir" $up >/dev/null
    RDMAEMU_TRACE=$dir/%p.trace "$rdmaemu" run --host 1 -- "$@" -p "$port" >"$work/$name.server" 2>&1 &
    wait_port "$port"
    RDMAEMU_TRACE=$dir/%p.trace "$rdmaemu" run --host 2 -- "$@" -p "$port" 127.0.0.1 >"$work/$name.client" 2>&1
    wait
    "$rdmaemu" down >/dev/null
    "$rdmaemu" timeline --brief --svg "$repo/docs/pictures/$name.svg" "$dir"
}

picture send-recv 18790 "" -- "$build/bin/examples/send_recv"
picture lossy-pingpong 18791 "--drop 0.2 --seed 4" -- ibv_rc_pingpong -g 0 -n 4 -s 64
