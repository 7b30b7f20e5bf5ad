# shellcheck shell=bash
# bench/qps.sh: ib_write_bw 64 KiB over 1, 10, 100 and 1000 QPs, the total bandwidth of all of
# them. Sourced by run.sh (uses qp_counts, qps_messages). Outputs: qps.Q.cli.

measure_qps() {
    local q n
    for q in "${qp_counts[@]}"; do
        # About the same number of messages in every run: perftest's -n is per QP (at least
        # 5), and its TX depth (default 128) shrinks to -n, its CQ to TX depth x -q entries.
        n=$((qps_messages / q))
        ((n >= 5)) || n=5
        log "qps: ib_write_bw -s 65536 -q $q -n $n"
        perftest_pair "qps.$q" ib_write_bw -s 65536 -q "$q" -n "$n" || failed=$((failed + 1))
    done
}
