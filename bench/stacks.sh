# shellcheck shell=bash
# bench/stacks.sh: the larger stacks between the two emulated hosts (docs/real-stacks.md):
# ucx_perftest tag_lat 8 B and tag_bw 64 KiB over rc_verbs, and NetPIPE over Open MPI with UCX
# (1 B latency, peak bandwidth to 1 MiB). Outputs: ucx.tag_lat.cli, ucx.tag_bw.cli (each
# client's Final line), netpipe.out (NPopenmpi's -o file). The report puts them next to the
# table's perftest and TCP figures of the same run.
measure_stacks() {
    export UCX_NET_DEVICES=emu0:1 UCX_TLS=rc_verbs,ud_verbs,self
    ucx_pair ucx.tag_lat tag_lat -s 8 -n 10000 || failed=$((failed + 1))
    ucx_pair ucx.tag_bw tag_bw -s 65536 -n 2000 || failed=$((failed + 1))
    log "NPopenmpi 1 B .. 1 MiB, a rank on each host"
    local root_ok=() ctx=(-x RDMAEMU_RUNTIME_DIR -x UCX_TLS -x UCX_NET_DEVICES -np 1)
    [[ $(id -u) != 0 ]] || root_ok=(--allow-run-as-root)
    # NetPIPE's sweep to 1 MiB takes about 40 s on 2 CPUs: longer than a perftest run may.
    timeout 300 "$rdmaemu" run --host 1 -- mpirun "${root_ok[@]}" --mca pml ucx \
        --mca btl self "${ctx[@]}" "$rdmaemu" run --host 1 -- NPopenmpi -u 1048576 \
        -o "$work/netpipe.out" : "${ctx[@]}" "$rdmaemu" run --host 2 -- NPopenmpi -u 1048576 \
        -o "$work/netpipe.out" >"$work/netpipe.log" 2>&1 || {
        log "NPopenmpi failed: $(tail -n 2 "$work/netpipe.log")"
        failed=$((failed + 1))
    }
    unset UCX_NET_DEVICES UCX_TLS
}

# ucx_pair NAME TEST ARGS...: ucx_perftest's server on host 1, its client on host 2.
ucx_pair() {
    local name=$1 test=$2 port spid rc=0
    shift 2
    log "ucx_perftest -t $test $*"
    port=$(free_port)
    "$rdmaemu" run --host 1 -- ucx_perftest -p "$port" >"$work/$name.srv" 2>&1 &
    spid=$!
    bg_pids+=("$spid")
    if ! wait_listen "$port" "$spid"; then
        log "ucx_perftest's server never listened: $(tail -n 2 "$work/$name.srv")"
        stop "$spid"
        return 1
    fi
    timeout "$run_timeout" "$rdmaemu" run --host 2 -- ucx_perftest -p "$port" -t "$test" "$@" \
        127.0.0.1 >"$work/$name.cli" 2>&1 || rc=$?
    stop "$spid"
    ((rc == 0)) || log "ucx_perftest -t $test failed (exit $rc): $(tail -n 2 "$work/$name.cli")"
    return "$rc"
}
