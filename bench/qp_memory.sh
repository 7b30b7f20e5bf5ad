# shellcheck shell=bash
# bench/qp_memory.sh: the NIC daemon's memory per idle RC QP: bench/idle_qps.c creates
# $idle_qps QPs on host 1 and connects them in pairs, reading host 1's daemon RSS and PSS
# before and after. Runs first, on fresh daemons, so that no earlier QP's freed memory hides
# the growth. Sourced by run.sh. Output: qpmem.out.

measure_qp_memory() {
    local pid
    pid=$("$rdmaemu" status --json | python3 -c \
        'import json, sys; print(json.load(sys.stdin)["hosts"][0]["daemon_pid"])') || {
        log "qp memory: no daemon pid from rdmaemu status"
        return 0
    }
    log "qp memory: $idle_qps idle RC QPs on host 1 (daemon pid $pid)"
    timeout "$run_timeout" "$rdmaemu" run --host 1 -- "$work/idle_qps" "$idle_qps" "$pid" \
        >"$work/qpmem.out" 2>&1 || log "idle_qps failed: $(tail -n 1 "$work/qpmem.out")"
}
