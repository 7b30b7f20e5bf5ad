# shellcheck shell=bash
# bench/qps.sh: ib_write_bw 64 KiB over 1, 10, 100 and 1000 QPs, the total bandwidth of all of
# them, in rounds (every count once per round), so that the report compares medians. Sourced by
# run.sh (uses qp_counts, qps_messages, qps_rounds). Outputs: qps.Q.ROUND.cli.

measure_qps() {
    local q n round
    for ((round = 1; round <= qps_rounds; round++)); do
        for q in "${qp_counts[@]}"; do
            # About the same number of messages in every run: perftest's -n is per QP (at
            # least 5), and its TX depth (default 128) shrinks to -n, its CQ to TX depth x -q.
            n=$((qps_messages / q))
            ((n >= 5)) || n=5
            log "qps: ib_write_bw -s 65536 -q $q -n $n (round $round of $qps_rounds)"
            perftest_pair "qps.$q.$round" ib_write_bw -s 65536 -q "$q" -n "$n" ||
                failed=$((failed + 1))
        done
    done
}
