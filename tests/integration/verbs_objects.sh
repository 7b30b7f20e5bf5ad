#!/usr/bin/env bash
# verbs_objects: runs tests/integration/verbs_objects.c (built against the system verbs.h and
# -libverbs) on hosts 1 and 2 through LD_LIBRARY_PATH, and on host 1 through LD_PRELOAD. It
# creates and destroys every object and expects rdma-core/kernel errnos on the error paths. After
# each run the daemon must hold no session for it.
#
# usage: verbs_objects.sh RDMAEMU VERBS_OBJECTS
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
VO=$2
emu_setup "$1"
emu_up 2

run_vo() {
    local h=$1 label=$2
    shift 2
    local addr out=$EMU_WORK/vo.$h.$label.out rc=0
    addr=$(emu_host "$h" address)
    step "host $h ($label): verbs_objects --expect-gid ::ffff:$addr"
    emu_run "$h" "$@" -- "$VO" --expect-gid "::ffff:$addr" >"$out" 2>&1 &
    local pid=$!
    emu_bg_register "$pid"
    wait "$pid" || rc=$?
    cat "$out"
    ((rc == 0)) || fail "host $h ($label): verbs_objects exited $rc; first failure: $(grep -m1 '^FAIL' "$out" || tail -n 3 "$out")"
    grep -q '^PASS: all [0-9]* checks passed$' "$out" || fail "host $h ($label): no PASS line"
    ok "host $h ($label): $(grep '^PASS' "$out")"

    # The daemon must have torn the session down: no context session with objects remains.
    emu_expect_no_context_session "$h" "verbs_objects ($label)"
    ok "host $h ($label): no session left behind"
}

run_vo 1 libpath
run_vo 2 libpath
run_vo 1 preload --preload
